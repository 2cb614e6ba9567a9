//! The MCP endpoint (`POST /mcp`, plus GET/DELETE), both eras on one path.
//!
//! Check order for a POST (docs/mcp.md "How a POST is handled"):
//! 1. Host allowlist, then Origin allowlist (403): DNS-rebinding defence.
//! 2. Content-Type (415), Accept (406 only when JSON is excluded), body size
//!    (413), JSON parse (-32700), single JSON-RPC object (-32600; batches
//!    are refused).
//! 3. Notifications and client responses: 202, empty body.
//! 4. Era, body first: per-request `_meta` with a protocol version, or a
//!    non-handshake `MCP-Protocol-Version` header, selects 2026-07-28;
//!    `initialize` selects the 2025-11-25 handshake; otherwise the request
//!    must belong to a legacy session.
//! 5. Modern ladder: `_meta` (-32602), then header/body agreement (-32020),
//!    then version support (-32022) — so a mismatch wins over an unsupported
//!    version, as the conformance suite requires — then dispatch
//!    (404/-32601 for unknown and removed methods).

pub mod aap;
mod completion;
pub mod connections;
pub(crate) mod dispatch;
pub mod error;
pub(crate) mod extension;
pub mod headers;
mod legacy_watch;
pub(crate) mod listen;
pub mod prompts;
pub mod rendered;
pub mod revision;
pub mod session;
pub mod stdio;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::auth::{Principal, verify};
use crate::state::AppState;
use crate::trace_context::{Carrier, TraceContext};
use error::RpcError;

pub use dispatch::{capabilities, capabilities_of, server_info, tool_list};
pub use headers::host_without_port;
pub use revision::{
    INITIALIZE_REVISIONS, LEGACY_REVISION, MODERN_REVISION, PER_REQUEST_REVISIONS,
    SUPPORTED_REVISIONS,
};

/// Revisions that use the initialize handshake; a header naming one of
/// these does not by itself select the modern path.
const HANDSHAKE_REVISIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// Largest total size of request header names and values (hardening: an
/// MCP request needs a few hundred bytes; a JWT a few kilobytes).
const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Which revision's rules a request follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    Modern,
    Legacy,
}

/// Which MCP endpoint a request reached: `/mcp`, which serves
/// the DAP tools, or the AAP endpoint of one organization
/// (`/aap/{organization_id}/mcp`, [`aap`]), which serves the AAP binding's
/// tools for that organization only. Both speak the same transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Dap,
    /// `organization_id` is resolved and visible to the caller.
    Aap {
        organization_id: String,
    },
}

/// The endpoint a POST asked for, before its organization is resolved.
pub(crate) enum Requested<'a> {
    Dap,
    /// The raw organization segment of the path.
    Aap(&'a str),
}

/// `POST /mcp`.
pub async fn post(
    State(state): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    serve_post(&state, peer, &uri, &headers, body, Requested::Dap).await
}

/// One POST to an MCP endpoint, `/mcp` or an AAP endpoint: every
/// transport check below applies to both, in the same order.
pub(crate) async fn serve_post(
    state: &Arc<AppState>,
    peer: SocketAddr,
    uri: &Uri,
    headers: &HeaderMap,
    body: Body,
    requested: Requested<'_>,
) -> Response {
    if let Err(response) = check_host_and_origin(state, headers) {
        return *response;
    }
    let header_bytes: usize = headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len())
        .sum();
    if header_bytes > MAX_HEADER_BYTES {
        return plain_error(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            RpcError::InvalidRequest(format!("request headers exceed {MAX_HEADER_BYTES} bytes")),
        );
    }
    // The per-address limit comes first, so refused credentials count too:
    // guessing tokens is throttled like any other flood.
    if let Err(retry) = state.ip_limiter.check(&peer.ip()) {
        metrics::counter!(crate::metrics::RATE_LIMITED, "limit" => "address").increment(1);
        return too_many_requests(retry);
    }
    // Credentials before anything executes: a bad credential is a 401,
    // never an anonymous request.
    // An AAP endpoint is a protected resource of its own (its tokens may
    // name it, and its challenge names its metadata); the segment is
    // checked before it is put into either.
    let aap_organization = match requested {
        Requested::Aap(raw) if crate::store::audit::is_identifier(raw) => Some(raw),
        _ => None,
    };
    let endpoint_resource = aap_organization.map(|org| aap::resource(state, org));
    let principal =
        match verify::authenticate_at(state, headers, uri.query(), endpoint_resource.as_deref())
            .await
        {
            Ok(p) => p,
            Err(rejection) => {
                let metadata = aap_organization.map_or_else(
                    || format!("{}{}", state.public_base, aap::METADATA_PREFIX),
                    |org| aap::metadata_url(state, org),
                );
                return unauthorized(&rejection, &metadata);
            }
        };
    if let Principal::Authenticated(grant) = &principal
        && let Err(retry) = state.principal_limiter.check(&grant.subject)
    {
        metrics::counter!(crate::metrics::RATE_LIMITED, "limit" => "principal").increment(1);
        return too_many_requests(retry);
    }
    // The AAP endpoint's organization is authorized here, once the caller
    // is known and before the body is read (DAP-CORE-029..031).
    let endpoint = match requested {
        Requested::Dap => Endpoint::Dap,
        Requested::Aap(raw) => match aap::resolve(state, &principal, raw).await {
            Ok(endpoint) => endpoint,
            Err(error) => return aap::refusal(&error),
        },
    };
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        let is_json = ct
            .to_str()
            .ok()
            .and_then(|v| v.split(';').next())
            .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"));
        if !is_json {
            return plain_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                RpcError::InvalidRequest("Content-Type must be application/json".into()),
            );
        }
    }
    if !accepts_json(headers) {
        return plain_error(
            StatusCode::NOT_ACCEPTABLE,
            RpcError::InvalidRequest(
                "Accept excludes application/json, the only response type served".into(),
            ),
        );
    }
    let limit = state.settings.max_body_bytes;
    let declared_too_large = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|n| n > limit);
    if declared_too_large {
        return too_large(limit);
    }
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        return too_large(limit);
    };
    let caller = Caller {
        principal,
        client_ip: peer.ip(),
    };
    handle_message(state, headers, &bytes, &caller, &endpoint).await
}

/// Who sent a request, as established by the transport.
pub struct Caller {
    pub principal: Principal,
    pub client_ip: IpAddr,
}

/// 401 with an RFC 6750/9728 challenge naming the protected-resource
/// metadata. The body is the OAuth error object; it never echoes the token.
fn unauthorized(rejection: &verify::AuthRejection, metadata: &str) -> Response {
    if rejection.unavailable {
        let error = RpcError::Internal {
            error_id: format!("err.{}", uuid::Uuid::new_v4()),
            unavailable: true,
        };
        let (_, body) = error.to_response_body(None);
        let mut r = json_response(StatusCode::SERVICE_UNAVAILABLE, &body, None);
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return r;
    }
    let challenge = crate::auth::jwt::www_authenticate(
        metadata,
        Some((rejection.error, rejection.description)),
    );
    let body = json!({"error": rejection.error, "error_description": rejection.description});
    let mut r = json_response(StatusCode::UNAUTHORIZED, &body, None);
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    r
}

/// HTTP-level throttling: 429 with Retry-After (seconds) and a JSON-RPC
/// body, so modern clients see a protocol answer.
fn too_many_requests(retry: crate::ratelimit::RetryAfter) -> Response {
    let error =
        RpcError::InvalidRequest("rate limit exceeded; retry after the Retry-After delay".into());
    let (_, body) = error.to_response_body(None);
    let mut r = json_response(StatusCode::TOO_MANY_REQUESTS, &body, None);
    if let Ok(v) = HeaderValue::from_str(&retry.seconds().to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

fn too_large(limit: usize) -> Response {
    plain_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        RpcError::InvalidRequest(format!("request body exceeds {limit} bytes")),
    )
}

/// A transport refusal with a forced status and a JSON-RPC body without
/// `id` (the request was not read), for the connection layer and the HTTP
/// middleware (docs/mcp.md "Header policy": every refusal carries a body).
pub fn transport_refusal(status: StatusCode, error: RpcError) -> Response {
    plain_error(status, error)
}

/// 503 with a JSON-RPC body (-32603) and `Retry-After` in seconds.
pub fn unavailable(message: String, retry_after_seconds: u64) -> Response {
    let mut r = rpc_error(&RpcError::Unavailable(message), None);
    if let Ok(v) = HeaderValue::from_str(&retry_after_seconds.to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// An error with a forced status (transport-level refusals).
fn plain_error(status: StatusCode, error: RpcError) -> Response {
    let (_, body) = error.to_response_body(None);
    json_response(status, &body, None)
}

pub(crate) fn json_response(status: StatusCode, body: &Value, session: Option<&str>) -> Response {
    bytes_response(
        status,
        serde_json::to_vec(body).unwrap_or_default(),
        session,
    )
}

pub(crate) fn bytes_response(status: StatusCode, body: Vec<u8>, session: Option<&str>) -> Response {
    let mut response = (status, body).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some(id) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        h.insert(headers::SESSION_ID, id);
    }
    response
}

pub(crate) fn rpc_error(error: &RpcError, id: Option<&Value>) -> Response {
    let (status, body) = error.to_response_body(id);
    json_response(status, &body, None)
}

/// JSON is served unless the client's Accept explicitly excludes it. A
/// missing Accept, `*/*` or JSON-only Accept is fine (AAP ingress rule).
fn accepts_json(headers: &HeaderMap) -> bool {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    if accept.trim().is_empty() {
        return true;
    }
    accept.split(',').any(|range| {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let refused = parts.any(|p| {
            let p = p.trim().replace(' ', "");
            p == "q=0" || p == "q=0.0" || p == "q=0.00" || p == "q=0.000"
        });
        !refused && matches!(media.as_str(), "application/json" | "application/*" | "*/*")
    })
}

/// DNS-rebinding defence: the Host must be one we serve, and a browser
/// Origin must be allowed. Both refusals are 403 with a JSON-RPC body.
pub(crate) fn check_host_and_origin(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<(), Box<Response>> {
    if let Some(host) = headers.get(header::HOST) {
        let ok = host
            .to_str()
            .ok()
            .map(host_without_port)
            .is_some_and(|h| state.host_allowed(&h));
        if !ok {
            return Err(Box::new(plain_error(
                StatusCode::FORBIDDEN,
                RpcError::InvalidRequest("Host is not served by this gateway".into()),
            )));
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ok = origin
            .to_str()
            .ok()
            .is_some_and(|o| state.origin_allowed(o));
        if !ok {
            return Err(Box::new(plain_error(
                StatusCode::FORBIDDEN,
                RpcError::InvalidRequest("Origin is not allowed".into()),
            )));
        }
    }
    Ok(())
}

/// A JSON-RPC request id: a string or an integer (never null, never a
/// fraction, per the MCP schema).
fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

async fn handle_message(
    state: &Arc<AppState>,
    headers: &HeaderMap,
    bytes: &Bytes,
    caller: &Caller,
    endpoint: &Endpoint,
) -> Response {
    let Ok(message) = serde_json::from_slice::<Value>(bytes) else {
        return rpc_error(&RpcError::Parse, None);
    };
    let Value::Object(message) = message else {
        let why = if message.is_array() {
            "batch requests are not supported; send one JSON-RPC object per POST"
        } else {
            "the body must be a JSON-RPC 2.0 object"
        };
        return rpc_error(&RpcError::InvalidRequest(why.into()), None);
    };
    let id = match message.get("id") {
        None => None,
        Some(id) if valid_id(id) => Some(id.clone()),
        Some(_) => {
            return rpc_error(
                &RpcError::InvalidRequest("id must be a string or an integer".into()),
                None,
            );
        }
    };
    if message.get("jsonrpc") != Some(&json!("2.0")) {
        return rpc_error(
            &RpcError::InvalidRequest("jsonrpc must be \"2.0\"".into()),
            id.as_ref(),
        );
    }
    let method = match message.get("method") {
        Some(Value::String(m)) => m.clone(),
        Some(_) => {
            return rpc_error(
                &RpcError::InvalidRequest("method must be a string".into()),
                id.as_ref(),
            );
        }
        None if id.is_some()
            && (message.contains_key("result") || message.contains_key("error")) =>
        {
            // A client's response to a server request (legacy transport);
            // the product never sends requests, so there is nothing to match
            // (the conformance fixture does: docs/conformance.md).
            if let Some(extension) = extension::installed() {
                extension.client_response(headers, &message);
            }
            return accepted();
        }
        None => {
            return rpc_error(
                &RpcError::InvalidRequest("method is required".into()),
                id.as_ref(),
            );
        }
    };
    let params = match message.get("params") {
        None => Value::Object(Map::new()),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(_) => {
            let error = RpcError::InvalidMeta("params must be an object".into());
            return rpc_error(&error, id.as_ref());
        }
    };

    let header_version = match headers::text(headers, headers::PROTOCOL_VERSION) {
        Ok(v) => v.map(str::to_owned),
        Err(e) => return rpc_error(&e, id.as_ref()),
    };
    let meta_has_version = params
        .get("_meta")
        .and_then(Value::as_object)
        .is_some_and(|m| m.contains_key(META_VERSION));
    let header_is_modern = header_version
        .as_deref()
        .is_some_and(|v| !HANDSHAKE_REVISIONS.contains(&v));
    let is_modern = meta_has_version || header_is_modern;

    // For the access log (docs/operations.md "Logs"): a known method name (anything
    // else is `other`), and who asked: `anonymous` or the grant's subject.
    crate::metrics::note(|f| {
        f.method = Some(crate::metrics::known_method(&method).to_owned());
        f.principal = Some(match &caller.principal {
            Principal::Anonymous => "anonymous".to_owned(),
            Principal::Authenticated(grant) => grant.subject.clone(),
        });
    });
    let Some(id) = id else {
        // 2026-07-28 has no sessions: a stray Mcp-Session-Id is ignored there.
        return if is_modern {
            accepted()
        } else {
            notification(state, headers, &method).await
        };
    };

    // The caller's W3C Trace Context, when valid, names the trace
    // (docs/mcp.md "Trace context"); else a trace of our own.
    let trace = trace_of(&params, headers);
    let trace_id = trace.id().to_owned();
    crate::metrics::note(|f| {
        f.trace_id = Some(trace_id.clone());
        f.parent_id = trace.parent_id().map(str::to_owned);
    });
    // The principal comes from the transport's credential alone; nothing in
    // `_meta` changes it.

    if is_modern {
        let request = Request {
            id: &id,
            method: &method,
            params: &params,
            trace_id: &trace_id,
            trace: &trace,
        };
        return modern(state, headers, &request, caller, endpoint).await;
    }
    if method == "initialize" {
        return initialize(state, &id, &params, endpoint).await;
    }
    let session_header = match headers::text(headers, headers::SESSION_ID) {
        Ok(s) => s.map(str::to_owned),
        Err(e) => return rpc_error(&e, Some(&id)),
    };
    let Some(session_id) = session_header else {
        return rpc_error(&RpcError::SessionRequired, Some(&id));
    };
    let session = match state.sessions.touch(&session_id).await {
        Ok(Some(session)) => session,
        Ok(None) => return rpc_error(&RpcError::SessionNotFound, Some(&id)),
        Err(e) => return rpc_error(&session_store_failed(&e), Some(&id)),
    };
    if let Some(v) = header_version.as_deref()
        && v != session.protocol_version
    {
        let error = RpcError::HeaderMismatch(
            "MCP-Protocol-Version differs from the version negotiated for this session".into(),
        );
        return rpc_error(&error, Some(&id));
    }
    if let Some(extension) = extension::installed() {
        let incoming =
            extension::Incoming::legacy(&id, &method, &params, headers, &session_id, endpoint);
        if let Some(response) = extension.respond(state, &incoming).await {
            return response;
        }
    }
    // Subscriptions belong to the session (docs/mcp.md "Subscriptions"), so
    // they are served here, where the session is known.
    if let ("resources/subscribe" | "resources/unsubscribe", Endpoint::Dap) =
        (method.as_str(), endpoint)
    {
        let subscribe = method == "resources/subscribe";
        return legacy_watch::change(state, &id, &params, caller, &session_id, subscribe).await;
    }
    let request = dispatch::Call {
        era: Era::Legacy,
        endpoint,
        method: &method,
        params: &params,
        trace_id: &trace_id,
    };
    match dispatch_http(state, &request, caller, trace).await {
        Ok(result) => {
            let body = dispatch::decorate(Era::Legacy, result).into_envelope(&id);
            bytes_response(StatusCode::OK, body, None)
        }
        Err(RpcError::MethodNotFound) => {
            // Legacy clients expect JSON-RPC errors on HTTP 200.
            let (_, body) = RpcError::MethodNotFound.to_response_body(Some(&id));
            json_response(StatusCode::OK, &body, None)
        }
        Err(e) => rpc_error(&e, Some(&id)),
    }
}

/// The trace of a request: `_meta` first, then the HTTP `traceparent` and
/// `tracestate` headers (docs/mcp.md "Trace context"). A repeated
/// `traceparent` header is ambiguous and ignored; repeated `tracestate`
/// headers are one list (W3C Trace Context).
fn trace_of(params: &Value, headers: &HeaderMap) -> TraceContext {
    let mut parents = headers.get_all("traceparent").iter();
    let traceparent = match (parents.next(), parents.next()) {
        (Some(one), None) => one.to_str().ok(),
        _ => None,
    };
    let states: Option<Vec<&str>> = headers
        .get_all("tracestate")
        .iter()
        .map(|v| v.to_str().ok())
        .collect();
    let tracestate = states.filter(|s| !s.is_empty()).map(|s| s.join(","));
    let header = Carrier {
        traceparent,
        tracestate: tracestate.as_deref(),
    };
    TraceContext::of_request(Carrier::of_meta(params), header)
}

/// [`dispatch::dispatch`] for the HTTP transport, run in the request's
/// trace context (`crate::trace_context`); an installed extension may
/// amend its answers (the conformance fixture adds its tools, resources,
/// prompts and capabilities to the product's lists, docs/conformance.md;
/// the product installs none).
async fn dispatch_http(
    state: &Arc<AppState>,
    call: &dispatch::Call<'_>,
    caller: &Caller,
    trace: crate::trace_context::TraceContext,
) -> Result<dispatch::MethodResult, RpcError> {
    // The dispatch future (the tool and its store reads) is large; boxed,
    // the request's future stays small, and the service layers that move
    // it by value copy a pointer, not kilobytes (docs/benchmarks.md
    // "Protocol parity": about 13,000 instructions of memcpy a request).
    let result =
        crate::trace_context::scope(trace, Box::pin(dispatch::dispatch(state, call, caller))).await;
    match extension::installed() {
        Some(extension) => result.map(|r| extension.amend(state, call, r)),
        None => result,
    }
}

fn accepted() -> Response {
    let mut response = StatusCode::ACCEPTED.into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Notifications get 202 and no body. A legacy session id must still be
/// live (404 otherwise), and `notifications/initialized` completes the
/// handshake.
async fn notification(state: &AppState, headers: &HeaderMap, method: &str) -> Response {
    if let Ok(Some(session_id)) = headers::text(headers, headers::SESSION_ID) {
        let live = match state.sessions.touch(session_id).await {
            Ok(Some(session)) => {
                if method == "notifications/initialized" && !session.initialized {
                    state.sessions.mark_initialized(session_id).await
                } else {
                    Ok(true)
                }
            }
            Ok(None) => Ok(false),
            Err(e) => Err(e),
        };
        match live {
            Ok(true) => {}
            Ok(false) => return rpc_error(&RpcError::SessionNotFound, None),
            Err(e) => return rpc_error(&session_store_failed(&e), None),
        }
    }
    accepted()
}

/// Legacy sessions live in the store (docs/operations.md "Replicas"): when it fails, the
/// request cannot be placed in its session. 503 with an error id, as any
/// other store failure; the session is not declared gone.
fn session_store_failed(error: &session::SessionError) -> RpcError {
    let error_id = format!("err.{}", uuid::Uuid::new_v4());
    tracing::error!(error.id = %error_id, %error, "legacy session lookup failed");
    RpcError::Internal {
        error_id,
        unavailable: true,
    }
}

/// The 2025-11-25 handshake. An unknown requested version, or 2026-07-28
/// (which has no handshake), is answered with the legacy revision we serve.
async fn initialize(state: &AppState, id: &Value, params: &Value, endpoint: &Endpoint) -> Response {
    let requested = params.get("protocolVersion").and_then(Value::as_str);
    let (Some(_), Some(Value::Object(_)), Some(Value::Object(_))) = (
        requested,
        params.get("capabilities"),
        params.get("clientInfo"),
    ) else {
        let error = RpcError::InvalidParams(
            "initialize needs protocolVersion, capabilities and clientInfo".into(),
        );
        let (_, body) = error.to_response_body(Some(id));
        return json_response(StatusCode::BAD_REQUEST, &body, None);
    };
    let session_id = match state.sessions.create(LEGACY_REVISION).await {
        Ok(session_id) => session_id,
        Err(e) => {
            let (status, body) = session_store_failed(&e).to_response_body(Some(id));
            return json_response(status, &body, None);
        }
    };
    let mut capabilities = dispatch::capabilities_of(endpoint);
    if let Some(extension) = extension::installed() {
        capabilities = extension.session_opened(&session_id, params, endpoint, capabilities);
    }
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {
            "protocolVersion": LEGACY_REVISION,
            "capabilities": capabilities,
            "serverInfo": server_info(),
            "instructions": dispatch::instructions_of(endpoint),
        }
    });
    json_response(StatusCode::OK, &body, Some(&session_id))
}

/// A modern request's envelope members.
#[derive(Clone, Copy)]
struct Request<'a> {
    id: &'a Value,
    method: &'a str,
    params: &'a Value,
    trace_id: &'a str,
    trace: &'a TraceContext,
}

async fn modern(
    state: &Arc<AppState>,
    headers: &HeaderMap,
    request: &Request<'_>,
    caller: &Caller,
    endpoint: &Endpoint,
) -> Response {
    let Request {
        id,
        method,
        params,
        trace_id,
        trace,
    } = *request;
    let strict = state.settings.strict_mcp_headers;
    // 1. Required per-request _meta (-32602).
    let meta = params.get("_meta").and_then(Value::as_object);
    let version = meta
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str);
    let Some(version) = version else {
        let error = RpcError::InvalidMeta(format!(
            "_meta[\"{META_VERSION}\"] is required and must be a string"
        ));
        return rpc_error(&error, Some(id));
    };
    if !meta
        .and_then(|m| m.get(META_CAPABILITIES))
        .is_some_and(Value::is_object)
    {
        let error = RpcError::InvalidMeta(format!(
            "_meta[\"{META_CAPABILITIES}\"] is required and must be an object"
        ));
        return rpc_error(&error, Some(id));
    }
    if meta
        .and_then(|m| m.get(META_CLIENT_INFO))
        .is_some_and(|v| !v.is_object())
    {
        let error = RpcError::InvalidMeta(format!(
            "_meta[\"{META_CLIENT_INFO}\"] must be an object when present"
        ));
        return rpc_error(&error, Some(id));
    }
    // 2. Header/body agreement (-32020), before version support.
    let name = match method {
        "tools/call" | "prompts/get" => params.get("name").and_then(Value::as_str),
        "resources/read" => params.get("uri").and_then(Value::as_str),
        _ => None,
    };
    let name_applies = matches!(method, "tools/call" | "prompts/get" | "resources/read");
    // An extension's own methods name their target too (the fixture's
    // tasks: `taskId`).
    let (name, name_applies) = extension::installed()
        .and_then(|extension| extension.mcp_name(method, params))
        .map_or((name, name_applies), |n| (n, true));
    let checks = [
        headers::check(
            headers,
            headers::PROTOCOL_VERSION,
            "MCP-Protocol-Version",
            Some(version),
            strict,
        ),
        headers::check(headers, headers::METHOD, "Mcp-Method", Some(method), strict),
        if name_applies {
            headers::check(headers, headers::NAME, "Mcp-Name", name, strict)
        } else {
            Ok(())
        },
        // `Mcp-Param-*` of the tool's `x-mcp-header` arguments (docs/mcp.md
        // "Header policy"); an unknown tool is left to dispatch (-32602).
        match (method, name.and_then(|n| state.catalog.tool(n))) {
            ("tools/call", Some(tool)) if !tool.param_headers.is_empty() => headers::check_params(
                headers,
                &tool.param_headers,
                params.get("arguments"),
                strict,
            ),
            _ => Ok(()),
        },
    ];
    for check in checks {
        if let Err(e) = check {
            return rpc_error(&e, Some(id));
        }
    }
    // The `Mcp-Param-*` headers an extension's tool declares, under the
    // same policy.
    if let Some(extension) = extension::installed()
        && let Err(e) = extension.check_param_headers(headers, method, name, params, strict)
    {
        return rpc_error(&e, Some(id));
    }
    // 3. Version support (-32022).
    if !PER_REQUEST_REVISIONS.contains(&version) {
        return rpc_error(
            &RpcError::UnsupportedVersion {
                requested: version.to_owned(),
            },
            Some(id),
        );
    }
    if let Some(extension) = extension::installed() {
        let incoming = extension::Incoming::modern(id, method, params, headers, endpoint);
        if let Some(response) = extension.respond(state, &incoming).await {
            return response;
        }
    }
    // 4. Dispatch. A listen answers with a stream of its own (the AAP
    // endpoints serve tools only: -32601 there, docs/mcp.md "Subscriptions").
    if method == "subscriptions/listen" && matches!(endpoint, Endpoint::Dap) {
        return listen::listen(state, headers, id, params, caller).await;
    }
    let call = dispatch::Call {
        era: Era::Modern,
        endpoint,
        method,
        params,
        trace_id,
    };
    match dispatch_http(state, &call, caller, trace.clone()).await {
        Ok(result) => {
            let body = dispatch::decorate(Era::Modern, result).into_envelope(id);
            bytes_response(StatusCode::OK, body, None)
        }
        Err(e) => rpc_error(&e, Some(id)),
    }
}

/// `GET /mcp`: with a live legacy session, the SSE stream of its
/// subscriptions' notices (docs/mcp.md "Subscriptions"), run with the GET's
/// own credential; without a session there is no stream to offer (405; the
/// 2026-07-28 era listens with `subscriptions/listen`). A terminated
/// session is 404.
pub async fn get(
    State(state): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if let Err(response) = check_host_and_origin(&state, &headers) {
        return *response;
    }
    let Ok(Some(id)) = headers::text(&headers, headers::SESSION_ID) else {
        return method_not_allowed("POST");
    };
    if let Err(retry) = state.ip_limiter.check(&peer.ip()) {
        metrics::counter!(crate::metrics::RATE_LIMITED, "limit" => "address").increment(1);
        return too_many_requests(retry);
    }
    let principal = match verify::authenticate(&state, &headers, uri.query()).await {
        Ok(p) => p,
        Err(rejection) => {
            let metadata = format!("{}{}", state.public_base, aap::METADATA_PREFIX);
            return unauthorized(&rejection, &metadata);
        }
    };
    if let Principal::Authenticated(grant) = &principal
        && let Err(retry) = state.principal_limiter.check(&grant.subject)
    {
        metrics::counter!(crate::metrics::RATE_LIMITED, "limit" => "principal").increment(1);
        return too_many_requests(retry);
    }
    match state.sessions.touch(id).await {
        Ok(None) => rpc_error(&RpcError::SessionNotFound, None),
        Ok(Some(_)) => match extension::installed().and_then(|e| e.resume(&headers, id)) {
            Some(resumed) => resumed,
            None => legacy_watch::stream(&state, &headers, &principal, id).await,
        },
        Err(e) => rpc_error(&session_store_failed(&e), None),
    }
}

/// `GET` on an endpoint that offers no stream (the AAP endpoints serve
/// tools only, docs/mcp.md "Subscriptions"): 405, or 404 for a terminated
/// legacy session.
pub(crate) async fn get_without_stream(state: &AppState, headers: &HeaderMap) -> Response {
    if let Err(response) = check_host_and_origin(state, headers) {
        return *response;
    }
    match headers::text(headers, headers::SESSION_ID) {
        Ok(Some(id)) => match state.sessions.touch(id).await {
            Ok(None) => rpc_error(&RpcError::SessionNotFound, None),
            Ok(Some(_)) => method_not_allowed("POST, DELETE"),
            Err(e) => rpc_error(&session_store_failed(&e), None),
        },
        _ => method_not_allowed("POST"),
    }
}

/// `DELETE /mcp`: ends a legacy session (200); unknown session 404; without
/// a session there is nothing to delete (405).
pub async fn delete(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if let Err(response) = check_host_and_origin(&state, &headers) {
        return *response;
    }
    match headers::text(&headers, headers::SESSION_ID) {
        Ok(Some(id)) => match state.sessions.terminate(id).await {
            Ok(true) => {
                let mut r = StatusCode::OK.into_response();
                r.headers_mut()
                    .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                r
            }
            Ok(false) => rpc_error(&RpcError::SessionNotFound, None),
            Err(e) => rpc_error(&session_store_failed(&e), None),
        },
        _ => method_not_allowed("POST"),
    }
}

fn method_not_allowed(allow: &'static str) -> Response {
    let mut r = StatusCode::METHOD_NOT_ALLOWED.into_response();
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    r
}
