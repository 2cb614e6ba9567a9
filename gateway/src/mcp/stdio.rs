//! MCP over stdio (docs/mcp.md "stdio"): `dealer-gateway stdio` for a local
//! client (a desktop assistant or an IDE) that starts the gateway as its
//! subprocess.
//!
//! MCP stdio transport: newline-delimited JSON-RPC messages on stdin and
//! stdout, one message per line, no embedded newlines; stdout carries
//! nothing but protocol messages, logs go to stderr. EOF on stdin ends the
//! process (exit 0).
//!
//! The same pipeline as `POST /mcp` serves every request:
//! [`super::dispatch::dispatch`] and [`super::dispatch::decorate`] with the
//! same principal rules, validation, tenant isolation, rate limits and audit.
//! What differs is only what the transport establishes:
//! - The credential is an explicit grant made when the process starts
//!   (`--token`, or `DEALER_GATEWAY_STDIO_TOKEN`), verified exactly like a
//!   Bearer header on /mcp; without one the client is anonymous. A token
//!   that is refused stops the start-up (never an anonymous fallback,
//!   SEC-001..005) and is checked again on every request, so a token revoked
//!   or expired while the process runs is refused from then on.
//! - The client address is 127.0.0.1: the client is on this machine. The
//!   per-address and anonymous per-tool limits apply to it as to one
//!   loopback HTTP client (each stdio process has its own counters).
//! - Era: per-request `_meta` with a protocol version selects 2026-07-28
//!   (no handshake); `initialize` selects 2025-11-25, and the connection
//!   itself is the session (stdio has no session ids). Any other request
//!   before `initialize` (except `ping`) is -32600.
//! - There are no headers, so the header/body agreement checks of the HTTP
//!   transport (-32020) have nothing to compare; the `_meta` checks (-32602)
//!   and version support (-32022) apply unchanged.
//! - A line longer than `--max-body-bytes` (the HTTP body limit) is refused
//!   with -32600 and skipped without being buffered.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, header};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncWrite, AsyncWriteExt as _};

use super::error::RpcError;
use super::{
    Caller, Era, LEGACY_REVISION, META_CAPABILITIES, META_CLIENT_INFO, META_VERSION,
    PER_REQUEST_REVISIONS, dispatch, server_info, valid_id,
};
use crate::auth::{Principal, verify};
use crate::config::ServeSettings;
use crate::state::AppState;

/// The client address of every stdio request: the client runs on this
/// machine, so it is treated as one loopback client.
pub const CLIENT_IP: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// Why `dealer-gateway stdio` could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    /// The token given with `--token` / `DEALER_GATEWAY_STDIO_TOKEN` was
    /// refused (exit 2: input the user must fix). Never echoes the token.
    #[error("the stdio token was refused ({error}): {description}")]
    TokenRefused {
        error: &'static str,
        description: &'static str,
    },
    /// The token could not be checked (the store is unavailable).
    #[error("the stdio token cannot be checked: {0}")]
    TokenUnchecked(&'static str),
    #[error(transparent)]
    Gateway(#[from] crate::Error),
    /// Reading stdin or writing stdout failed.
    #[error("stdio: {0}")]
    Io(#[from] std::io::Error),
}

/// Open the store and build the state like `serve` does (`app::prepare`:
/// the claim is checked first, the demo or `--seed-dealers` is loaded into
/// an empty store, the audit log is pruned, the inventory is indexed), but
/// without binding a TCP port. `--listen` is not bound: it (or
/// `--public-url` / `--resource-url`) only names this gateway's resource
/// URL, which JWT audiences are checked against, so a JWT issued for the
/// HTTP gateway on the same settings works here too.
///
/// # Errors
/// The claim, the store, the seed or the JWT configuration failed.
pub async fn prepare(
    settings: ServeSettings,
    database_url: &str,
) -> Result<Arc<AppState>, crate::Error> {
    let opened = crate::state::start::open(&settings, database_url).await?;
    let named = settings.listen;
    crate::state::start::state(opened, settings, named).await
}

/// The explicit grant of one stdio process: anonymous, or a token that is
/// verified like `Authorization: Bearer TOKEN` on /mcp.
pub struct Credential {
    headers: HeaderMap,
    anonymous: bool,
}

impl Credential {
    /// Check `token` (if any) now. A refused token is an error: the process
    /// must not start (and never falls back to anonymous).
    ///
    /// # Errors
    /// [`StdioError::TokenRefused`] or [`StdioError::TokenUnchecked`].
    pub async fn establish(state: &AppState, token: Option<&str>) -> Result<Self, StdioError> {
        let Some(token) = token else {
            return Ok(Self {
                headers: HeaderMap::new(),
                anonymous: true,
            });
        };
        let refused = StdioError::TokenRefused {
            error: "invalid_request",
            description: "the token is empty or not printable ASCII",
        };
        let token = token.trim();
        if token.is_empty() {
            return Err(refused);
        }
        let value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| refused)?;
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, value);
        let credential = Self {
            headers,
            anonymous: false,
        };
        match credential.principal(state).await {
            Ok(Principal::Authenticated(grant)) => {
                tracing::info!(principal.subject = %grant.subject, "stdio: authenticated");
                Ok(credential)
            }
            // `authenticate` returns anonymous only without a header.
            Ok(Principal::Anonymous) => Err(StdioError::TokenRefused {
                error: "invalid_token",
                description: "the token was not recognised",
            }),
            Err(rejection) if rejection.unavailable => {
                Err(StdioError::TokenUnchecked(rejection.description))
            }
            Err(rejection) => Err(StdioError::TokenRefused {
                error: rejection.error,
                description: rejection.description,
            }),
        }
    }

    /// The principal of one request, verified again each time like a
    /// Bearer header (a token revoked meanwhile is refused).
    async fn principal(&self, state: &AppState) -> Result<Principal, verify::AuthRejection> {
        if self.anonymous {
            return Ok(Principal::Anonymous);
        }
        verify::authenticate(state, &self.headers, None).await
    }
}

/// One line of input, bounded by the body limit.
enum Line {
    Message(Vec<u8>),
    /// Longer than the limit: skipped up to its newline, never buffered.
    TooLong,
    Eof,
}

/// Read one newline-terminated line of at most `limit` bytes (without the
/// newline). A final line without a newline counts as a line.
async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R, limit: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if line.is_empty() {
                Line::Eof
            } else {
                Line::Message(line)
            });
        }
        let (chunk, used, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..i], i + 1, true),
            None => (available, available.len(), false),
        };
        if !too_long {
            if line.len() + chunk.len() > limit {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        reader.consume(used);
        if done {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Message(line)
            });
        }
    }
}

/// How [`serve`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// EOF on the input: the client closed our stdin (MCP stdio shutdown).
    Eof,
    /// The client stopped reading our output.
    OutputClosed,
    /// The shutdown future resolved (SIGTERM, ctrl-c) before EOF.
    Shutdown,
}

/// Per-connection state: stdio has no session ids, so the connection is
/// the legacy session.
#[derive(Default)]
struct Connection {
    /// `initialize` was answered (2025-11-25 requests may follow).
    initialized: bool,
}

/// Serve MCP on `reader`/`writer` until EOF (or `shutdown` resolves).
/// Requests are answered in order, one at a time.
///
/// # Errors
/// Reading or writing failed (a closed output ends the loop as
/// [`Ended::OutputClosed`] instead).
pub async fn serve<R, W>(
    state: &Arc<AppState>,
    credential: &Credential,
    mut reader: R,
    mut writer: W,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<Ended, StdioError>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let limit = state.settings.max_body_bytes;
    let mut connection = Connection::default();
    tokio::pin!(shutdown);
    loop {
        let line = tokio::select! {
            line = read_line(&mut reader, limit) => line?,
            () = &mut shutdown => return Ok(Ended::Shutdown),
        };
        let reply = match line {
            Line::Eof => return Ok(Ended::Eof),
            Line::TooLong => Some(error_line(
                &RpcError::InvalidRequest(format!("request body exceeds {limit} bytes")),
                None,
            )),
            Line::Message(bytes) => {
                let bytes = bytes.strip_suffix(b"\r").unwrap_or(&bytes);
                // Blank lines carry no message (some clients send a
                // trailing newline twice).
                if bytes.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                handle(state, credential, &mut connection, bytes).await
            }
        };
        if let Some(mut reply) = reply {
            reply.push(b'\n');
            let written = async {
                writer.write_all(&reply).await?;
                writer.flush().await
            }
            .await;
            match written {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                    tracing::info!("stdio: the client closed stdout; stopping");
                    return Ok(Ended::OutputClosed);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// A JSON-RPC error as one line (the same body the HTTP transport sends).
fn error_line(error: &RpcError, id: Option<&Value>) -> Vec<u8> {
    let (_, body) = error.to_response_body(id);
    serde_json::to_vec(&body).unwrap_or_default()
}

/// One message: the reply to write, or `None` (notifications and client
/// responses get no reply). The envelope checks and their errors are the
/// HTTP transport's (`mcp::handle_message`).
async fn handle(
    state: &Arc<AppState>,
    credential: &Credential,
    connection: &mut Connection,
    bytes: &[u8],
) -> Option<Vec<u8>> {
    let Ok(message) = serde_json::from_slice::<Value>(bytes) else {
        return Some(error_line(&RpcError::Parse, None));
    };
    let Value::Object(message) = message else {
        let why = if message.is_array() {
            "batch requests are not supported; send one JSON-RPC object per line"
        } else {
            "the message must be a JSON-RPC 2.0 object"
        };
        return Some(error_line(&RpcError::InvalidRequest(why.into()), None));
    };
    let id = match message.get("id") {
        None => None,
        Some(id) if valid_id(id) => Some(id.clone()),
        Some(_) => {
            return Some(error_line(
                &RpcError::InvalidRequest("id must be a string or an integer".into()),
                None,
            ));
        }
    };
    if message.get("jsonrpc") != Some(&json!("2.0")) {
        return Some(error_line(
            &RpcError::InvalidRequest("jsonrpc must be \"2.0\"".into()),
            id.as_ref(),
        ));
    }
    let method = match message.get("method") {
        Some(Value::String(m)) => m.clone(),
        Some(_) => {
            return Some(error_line(
                &RpcError::InvalidRequest("method must be a string".into()),
                id.as_ref(),
            ));
        }
        // A client's response to a server request: this server sends none.
        None if id.is_some()
            && (message.contains_key("result") || message.contains_key("error")) =>
        {
            return None;
        }
        None => {
            return Some(error_line(
                &RpcError::InvalidRequest("method is required".into()),
                id.as_ref(),
            ));
        }
    };
    let Some(id) = id else {
        // Notifications never get a reply (JSON-RPC 2.0), not even an error.
        if method == "notifications/initialized" && connection.initialized {
            tracing::debug!("stdio: client initialized");
        }
        return None;
    };
    let params = match message.get("params") {
        None => Value::Object(Map::new()),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(_) => {
            let error = RpcError::InvalidMeta("params must be an object".into());
            return Some(error_line(&error, Some(&id)));
        }
    };
    Some(
        request(state, credential, connection, &id, &method, &params)
            .await
            .unwrap_or_else(|e| error_line(&e, Some(&id))),
    )
}

/// A request with an id: limits, credential, era, then the shared dispatch.
async fn request(
    state: &Arc<AppState>,
    credential: &Credential,
    connection: &mut Connection,
    id: &Value,
    method: &str,
    params: &Value,
) -> Result<Vec<u8>, RpcError> {
    // Like /mcp: the per-address limit first, then the credential, then the
    // per-principal limit. The id is echoed so the client can match the
    // refusal to its request (HTTP has the status and Retry-After for that).
    if let Err(retry) = state.ip_limiter.check(&CLIENT_IP) {
        return Err(rate_limited(retry));
    }
    let principal = credential.principal(state).await.map_err(|rejection| {
        if rejection.unavailable {
            RpcError::Internal {
                error_id: format!("err.{}", uuid::Uuid::new_v4()),
                unavailable: true,
            }
        } else {
            RpcError::InvalidRequest(format!(
                "the stdio token is no longer accepted ({}): {}; restart with a valid token",
                rejection.error, rejection.description
            ))
        }
    })?;
    if let Principal::Authenticated(grant) = &principal
        && let Err(retry) = state.principal_limiter.check(&grant.subject)
    {
        return Err(rate_limited(retry));
    }
    let meta_has_version = params
        .get("_meta")
        .and_then(Value::as_object)
        .is_some_and(|m| m.contains_key(META_VERSION));
    let era = if meta_has_version {
        check_modern_meta(params)?;
        Era::Modern
    } else if method == "initialize" {
        let reply = initialize(id, params)?;
        connection.initialized = true;
        return Ok(reply);
    } else if connection.initialized || method == "ping" {
        // MCP 2025-11-25 lifecycle: pings may precede the handshake.
        Era::Legacy
    } else {
        return Err(RpcError::InvalidRequest(
            "send initialize first (2025-11-25) or per-request _meta (2026-07-28)".into(),
        ));
    };
    let caller = Caller {
        principal,
        client_ip: CLIENT_IP,
    };
    // Over stdio the trace context can only come in `_meta` (docs/mcp.md
    // "Trace context").
    let trace = crate::trace_context::TraceContext::of_request(
        crate::trace_context::Carrier::of_meta(params),
        crate::trace_context::Carrier::default(),
    );
    let trace_id = trace.id().to_owned();
    let limit = Duration::from_secs(state.settings.request_timeout_seconds.max(1));
    // The stdio transport is the operator's `/mcp`: the DAP tools (the AAP
    // binding is served per organization over HTTP, `mcp::aap`).
    let call = dispatch::Call {
        era,
        endpoint: &super::Endpoint::Dap,
        method,
        params,
        trace_id: &trace_id,
    };
    let dispatched = crate::trace_context::scope(trace, dispatch::dispatch(state, &call, &caller));
    let outcome = tokio::time::timeout(limit, dispatched)
        .await
        .map_err(|_| {
            RpcError::Unavailable(format!(
                "the request did not complete within {} s; retry",
                limit.as_secs()
            ))
        })??;
    let mut outcome = outcome;
    if method == "server/discover" {
        // stdio serves no subscriptions (docs/mcp.md "Subscriptions"), so
        // it does not advertise them.
        outcome.body.insert(
            "capabilities".into(),
            dispatch::capabilities_without_subscriptions(),
        );
    }
    Ok(one_line(dispatch::decorate(era, outcome).into_envelope(id)))
}

fn rate_limited(retry: crate::ratelimit::RetryAfter) -> RpcError {
    RpcError::InvalidRequest(format!(
        "rate limit exceeded; retry after {} s",
        retry.seconds()
    ))
}

/// The 2026-07-28 per-request `_meta` ladder without headers: `_meta`
/// (-32602), then version support (-32022), as on /mcp.
fn check_modern_meta(params: &Value) -> Result<(), RpcError> {
    let meta = params.get("_meta").and_then(Value::as_object);
    let Some(version) = meta
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str)
    else {
        return Err(RpcError::InvalidMeta(format!(
            "_meta[\"{META_VERSION}\"] is required and must be a string"
        )));
    };
    if !meta
        .and_then(|m| m.get(META_CAPABILITIES))
        .is_some_and(Value::is_object)
    {
        return Err(RpcError::InvalidMeta(format!(
            "_meta[\"{META_CAPABILITIES}\"] is required and must be an object"
        )));
    }
    if meta
        .and_then(|m| m.get(META_CLIENT_INFO))
        .is_some_and(|v| !v.is_object())
    {
        return Err(RpcError::InvalidMeta(format!(
            "_meta[\"{META_CLIENT_INFO}\"] must be an object when present"
        )));
    }
    if !PER_REQUEST_REVISIONS.contains(&version) {
        return Err(RpcError::UnsupportedVersion {
            requested: version.to_owned(),
        });
    }
    Ok(())
}

/// The 2025-11-25 handshake, answered like /mcp (the legacy revision we
/// serve whatever the client asked for), without a session id.
fn initialize(id: &Value, params: &Value) -> Result<Vec<u8>, RpcError> {
    let (Some(_), Some(Value::Object(_)), Some(Value::Object(_))) = (
        params.get("protocolVersion").and_then(Value::as_str),
        params.get("capabilities"),
        params.get("clientInfo"),
    ) else {
        return Err(RpcError::InvalidParams(
            "initialize needs protocolVersion, capabilities and clientInfo".into(),
        ));
    };
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {
            "protocolVersion": LEGACY_REVISION,
            "capabilities": dispatch::capabilities_without_subscriptions(),
            "serverInfo": server_info(),
            "instructions": dispatch::INSTRUCTIONS,
        }
    });
    Ok(serde_json::to_vec(&body).unwrap_or_default())
}

/// The stdio transport forbids newlines inside a message. The envelope is
/// compact JSON (newlines inside strings are escaped), so this never
/// rewrites anything today; should a pre-serialized piece ever carry
/// whitespace, the message is re-serialized compactly instead of breaking
/// the framing.
fn one_line(envelope: Vec<u8>) -> Vec<u8> {
    if !envelope.contains(&b'\n') && !envelope.contains(&b'\r') {
        return envelope;
    }
    serde_json::from_slice::<Value>(&envelope)
        .and_then(|v| serde_json::to_vec(&v))
        .unwrap_or(envelope)
}

#[cfg(test)]
mod unit {
    use super::*;

    async fn lines(input: &[u8], limit: usize) -> Vec<Option<Vec<u8>>> {
        let mut reader = tokio::io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            match read_line(&mut reader, limit).await.unwrap() {
                Line::Eof => return out,
                Line::TooLong => out.push(None),
                Line::Message(m) => out.push(Some(m)),
            }
        }
    }

    /// Lines split across reads are joined; one over the limit is refused
    /// and skipped to its newline; the next line is read normally; a final
    /// line without a newline still counts.
    #[tokio::test]
    async fn lines_are_bounded_and_framed_by_newlines() {
        let got = lines(b"abcdefgh\n0123456789ABCDEF\nxy\n\nlast", 10).await;
        assert_eq!(
            got,
            vec![
                Some(b"abcdefgh".to_vec()),
                None,
                Some(b"xy".to_vec()),
                Some(Vec::new()),
                Some(b"last".to_vec()),
            ]
        );
        assert_eq!(lines(b"0123456789A", 10).await, vec![None]);
        assert_eq!(
            lines(b"0123456789\n", 10).await,
            vec![Some(b"0123456789".to_vec())]
        );
    }

    #[test]
    fn envelopes_stay_on_one_line() {
        let pretty = b"{\n  \"a\": \"x\\ny\"\n}".to_vec();
        assert_eq!(one_line(pretty), br#"{"a":"x\ny"}"#.to_vec());
        let compact = br#"{"a":1}"#.to_vec();
        assert_eq!(one_line(compact.clone()), compact);
    }
}
