//! The running gateway: routes, start-up and shutdown. The shared state is
//! [`crate::state::AppState`].

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::config::ServeSettings;
use crate::mcp;

/// Bundled demo dealers (lives with the demo; named here for callers of
/// the app seam).
pub use crate::demo::DEMO_DEALERS;

pub use crate::state::AppState;

/// Request headers a browser MCP client may send (MCP 2026-07-28
/// streamable HTTP: the standard mirror headers; 2025-11-25: the session
/// and resumption headers; bearer credentials; `Mcp-Param-Organization`,
/// which the tenant-scoped tools declare with `x-mcp-header`).
/// `Content-Type: application/json` and these custom headers force a CORS
/// preflight.
const CORS_REQUEST_HEADERS: [HeaderName; 9] = [
    header::CONTENT_TYPE,
    header::ACCEPT,
    header::AUTHORIZATION,
    HeaderName::from_static(mcp::headers::PROTOCOL_VERSION),
    HeaderName::from_static(mcp::headers::SESSION_ID),
    HeaderName::from_static(mcp::headers::METHOD),
    HeaderName::from_static(mcp::headers::NAME),
    HeaderName::from_static(mcp::headers::PARAM_ORGANIZATION),
    HeaderName::from_static("last-event-id"),
];

/// Response headers a browser client must be able to read: the legacy
/// session id (issued on `initialize`), the protocol version, the OAuth
/// challenge of a 401 (RFC 9728 discovery) and the 429/503 retry delay.
/// `Content-Type` and `Cache-Control` are CORS-safelisted already.
const CORS_EXPOSED_HEADERS: [HeaderName; 5] = [
    HeaderName::from_static(mcp::headers::SESSION_ID),
    HeaderName::from_static(mcp::headers::PROTOCOL_VERSION),
    header::WWW_AUTHENTICATE,
    header::RETRY_AFTER,
    // The validator of the Server Cards (SEP-2127 "CORS Requirements")
    // and of the discovery documents and feeds.
    header::ETAG,
];

/// How long a browser may cache a preflight answer, so a browser client
/// does not pay one OPTIONS round trip per POST.
const CORS_MAX_AGE: Duration = Duration::from_secs(600);

/// CORS for exactly the configured origins (MCP streamable HTTP: browser
/// clients; the Origin check still answers every other origin with 403).
/// No credentials mode: bearer tokens travel in `Authorization`, never in
/// cookies.
fn cors_layer(state: &Arc<AppState>) -> tower_http::cors::CorsLayer {
    use tower_http::cors::{AllowOrigin, CorsLayer};
    let allow = state.clone();
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(move |origin, _| {
            origin.to_str().is_ok_and(|o| allow.cors_origin_allowed(o))
        }))
        .allow_methods([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS])
        .allow_headers(CORS_REQUEST_HEADERS)
        .expose_headers(CORS_EXPOSED_HEADERS)
        .max_age(CORS_MAX_AGE)
}

/// In front of the CORS layer, which answers every OPTIONS itself:
/// - a preflight gets the same Host and Origin checks as a POST (403 with
///   a JSON-RPC body for a foreign origin: DNS-rebinding defence, MCP
///   streamable HTTP "Origin MUST be validated");
/// - a served preflight is 204 No Content (an empty OPTIONS answer);
/// - a response that does not grant an origin carries no CORS header at
///   all (tower-http adds `Access-Control-Expose-Headers` and, on
///   preflights, the allowed methods and headers whatever the origin), so
///   nothing about the policy is disclosed to an origin it does not cover.
async fn cors_guard(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let preflight = req.method() == Method::OPTIONS;
    if preflight && let Err(refusal) = mcp::check_host_and_origin(&state, req.headers()) {
        return *refusal;
    }
    let mut response = next.run(req).await;
    if preflight && response.status() == StatusCode::OK {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    let headers = response.headers_mut();
    if !headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN) {
        for name in [
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            header::ACCESS_CONTROL_ALLOW_METHODS,
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            header::ACCESS_CONTROL_MAX_AGE,
        ] {
            headers.remove(name);
        }
    }
    response
}

/// The HTTP routes.
pub fn router(state: Arc<AppState>) -> Router {
    let timeout = Duration::from_secs(state.settings.request_timeout_seconds.max(1));
    let cors = cors_layer(&state);
    Router::new()
        .route("/mcp", post(mcp::post).get(mcp::get).delete(mcp::delete))
        // The AAP MCP binding, one endpoint per organization
        // (docs/compatibility.md, docs/mcp.md "The AAP endpoints").
        .route(
            mcp::aap::PATH_TEMPLATE,
            post(mcp::aap::post)
                .get(mcp::aap::get)
                .delete(mcp::aap::delete),
        )
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_public))
        .route("/schemas/{file}", get(schema_file))
        .route("/policy", get(policy))
        .route("/conformance/claim.json", get(claim))
        .route(
            "/.well-known/oauth-protected-resource",
            get(protected_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(protected_resource),
        )
        // Each AAP endpoint is a protected resource of its own (RFC 9728
        // section 3.1: the well-known prefix before the resource's path).
        .route(
            "/.well-known/oauth-protected-resource/aap/{organization_id}/mcp",
            get(aap_protected_resource),
        )
        // The rooftop manager's console (docs/console.md), under /console/.
        .merge(crate::console::router())
        // Discovery documents for agents (`wellknown`).
        .merge(crate::wellknown::router())
        // Server Cards and the AI Catalog (`server_card`).
        .merge(crate::server_card::router())
        .layer(axum::middleware::from_fn_with_state(
            timeout,
            request_deadline,
        ))
        .layer(cors)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            cors_guard,
        ))
        // Outermost, so the line covers every answer the router gives,
        // refusals of the layers above included (docs/operations.md "Logs").
        .layer(axum::middleware::from_fn(access_log))
        .layer(axum::middleware::map_response(no_sniff))
        .with_state(state)
}

/// `X-Content-Type-Options: nosniff` on every answer of the router, the
/// layers' refusals and the framework's own included (docs/security.md
/// "Hardening"): a browser must take each body for the media type it is
/// sent with, never guess. The published CSV feed, the discovery documents
/// and every JSON error are fetched by browsers too, and a body a dealer
/// wrote into (a vehicle's text) must never be sniffed into HTML or
/// script. The transport's own refusals, written before the router runs
/// (`mcp::connections`), carry the header too.
async fn no_sniff(mut response: Response) -> Response {
    response
        .headers_mut()
        .entry(header::X_CONTENT_TYPE_OPTIONS)
        .or_insert(HeaderValue::from_static("nosniff"));
    response
}

/// Paths probed by load balancers and scrapers every few seconds: their
/// access lines are written at `debug`, so `info` shows the traffic that
/// agents and people make.
const PROBE_PATHS: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// One structured line per request (docs/operations.md "Logs"): method, path
/// (never the query, which could carry a credential), status, duration,
/// and what the MCP layers noted: the JSON-RPC method, the tool, the
/// outcome code, the principal (`anonymous` or the grant's subject id;
/// never a token), the trace id the caller's error objects carry and the
/// caller's span id when it sent a W3C Trace Context.
async fn access_log(req: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let http_method = req.method().clone();
    let path = req.uri().path().to_owned();
    let (response, facts) = crate::metrics::with_facts(next.run(req)).await;
    let status = response.status().as_u16();
    let duration_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let outcome = match (&facts.method, &facts.outcome) {
        (_, Some(outcome)) => outcome.clone(),
        // Answered by the transport without the dispatcher (the legacy
        // handshake, notifications, session and header refusals): the
        // outcome is the HTTP status, and it is counted here.
        (Some(method), None) => {
            let outcome = if status < 400 {
                "ok".to_owned()
            } else {
                format!("http.{status}")
            };
            crate::metrics::count_method(method, None, &outcome, started);
            outcome
        }
        (None, None) if status >= 400 && (path == "/mcp" || path.starts_with("/aap/")) => {
            // Refused before the body was read (host, origin, credential,
            // rate limit, size): no method ran.
            metrics::counter!(crate::metrics::HTTP_REFUSALS, "status" => status.to_string())
                .increment(1);
            format!("http.{status}")
        }
        (None, None) => format!("http.{status}"),
    };
    let dash = || "-".to_owned();
    macro_rules! line {
        ($level:expr) => {
            tracing::event!(
                target: "dealer_gateway::access",
                $level,
                http.method = %http_method,
                http.path = %path,
                http.status = status,
                duration_us,
                rpc.method = facts.method.as_deref().unwrap_or("-"),
                tool.name = facts.tool.as_deref().unwrap_or("-"),
                outcome = %outcome,
                principal = %facts.principal.clone().unwrap_or_else(dash),
                trace.id = %facts.trace_id.clone().unwrap_or_else(dash),
                trace.parent_id = %facts.parent_id.clone().unwrap_or_else(dash),
                "request"
            )
        };
    }
    if PROBE_PATHS.contains(&path.as_str()) {
        line!(tracing::Level::DEBUG);
    } else {
        line!(tracing::Level::INFO);
    }
    response
}

/// `GET /metrics` on the main listener. It needs a credential with
/// `dealergateway:metrics:read`, and a grant is bound to its organization:
/// the scrape shows the series of the rooftops it covers and the
/// gateway-wide totals, never another organization's ids
/// ([`crate::metrics::Audience`], docs/operations.md "Metrics"). With
/// `--metrics-listen` (the operator's every-series view) this path is 404.
async fn metrics_public(State(state): State<Arc<AppState>>, req: Request) -> Response {
    if state.settings.metrics_listen.is_some() {
        return StatusCode::NOT_FOUND.into_response();
    }
    let principal =
        match crate::auth::verify::authenticate(&state, req.headers(), req.uri().query()).await {
            Ok(p) => p,
            Err(rejection) if rejection.unavailable => {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(header::RETRY_AFTER, "1")],
                )
                    .into_response();
            }
            Err(_) => return metrics_challenge(&state, StatusCode::UNAUTHORIZED, "invalid_token"),
        };
    match principal {
        crate::auth::Principal::Authenticated(grant) if grant.has_scope(METRICS_SCOPE) => {
            metrics_text(&state, crate::metrics::Audience::Grant(&grant)).await
        }
        crate::auth::Principal::Authenticated(_) => {
            metrics_challenge(&state, StatusCode::FORBIDDEN, "insufficient_scope")
        }
        crate::auth::Principal::Anonymous => {
            metrics_challenge(&state, StatusCode::UNAUTHORIZED, "invalid_request")
        }
    }
}

/// The scope `/metrics` needs on the main listener (capabilities.yaml
/// `gateway_scopes`).
pub const METRICS_SCOPE: &str = "dealergateway:metrics:read";

/// 401/403 with an RFC 6750 challenge naming the scope; the body says in
/// words what is missing.
fn metrics_challenge(state: &AppState, status: StatusCode, error: &'static str) -> Response {
    let metadata = format!("{}/.well-known/oauth-protected-resource", state.public_base);
    let challenge = format!(
        "Bearer resource_metadata=\"{metadata}\", error=\"{error}\", scope=\"{METRICS_SCOPE}\""
    );
    let body = format!(
        "/metrics needs a credential carrying the scope {METRICS_SCOPE} \
         (or run with --metrics-listen to serve it on a private address)\n"
    );
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The Prometheus text exposition (format 0.0.4) for `audience`, never
/// cached.
async fn metrics_text(state: &AppState, audience: crate::metrics::Audience<'_>) -> Response {
    match crate::metrics::render_for(state, audience).await {
        Some(text) => (
            [
                (
                    header::CONTENT_TYPE,
                    "text/plain; version=0.0.4; charset=utf-8",
                ),
                (header::CACHE_CONTROL, "no-store"),
            ],
            text,
        )
            .into_response(),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "metrics are not available: another metrics recorder was installed in this process\n",
        )
            .into_response(),
    }
}

/// `--metrics-listen`: a listener of its own serving only `GET /metrics`,
/// without a credential (the operator binds it to a private network).
pub async fn bind_metrics(settings: &ServeSettings) -> Result<Option<TcpListener>, crate::Error> {
    let Some(addr) = settings.metrics_listen else {
        return Ok(None);
    };
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| crate::Error::Io(format!("cannot listen on --metrics-listen {addr}: {e}")))?;
    Ok(Some(listener))
}

/// Serves the metrics listener until the task is aborted.
fn spawn_metrics(listener: TcpListener, state: Arc<AppState>) -> tokio::task::JoinHandle<()> {
    async fn scrape(State(state): State<Arc<AppState>>) -> Response {
        metrics_text(&state, crate::metrics::Audience::Operator).await
    }
    let router = Router::new()
        .route("/metrics", get(scrape))
        .layer(axum::middleware::map_response(no_sniff))
        .with_state(state);
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::error!(%error, "the metrics listener stopped");
        }
    })
}

/// `Retry-After` on a request that ran out of time, in seconds.
const TIMEOUT_RETRY_AFTER_SECONDS: u64 = 1;

/// `--request-timeout-seconds`: a request still running after it is
/// answered 503 with a JSON-RPC body (-32603) and `Retry-After`, like every
/// other refusal on /mcp (docs/security.md "Slow clients"; tower-http's timeout layer
/// answered with an empty body). Dropping the handler's future cancels it.
async fn request_deadline(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(response) => response,
        Err(_) => mcp::unavailable(
            format!(
                "the request did not complete within {} s; retry after the Retry-After delay",
                limit.as_secs()
            ),
            TIMEOUT_RETRY_AFTER_SECONDS,
        ),
    }
}

async fn healthz() -> Response {
    json_ok(
        &json!({"status": "ok", "service": "dealer-agent-gateway", "version": env!("CARGO_PKG_VERSION")}),
    )
}

async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    match state.store.ping().await {
        Ok(()) => json_ok(&json!({"status": "ready"})),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            let body = serde_json::to_vec(
                &json!({"status": "unavailable", "reason": "store unreachable"}),
            )
            .unwrap_or_default();
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response()
        }
    }
}

async fn schema_file(State(state): State<Arc<AppState>>, Path(file): Path<String>) -> Response {
    match state.catalog.schema_documents.get(&file) {
        Some(doc) => json_ok(doc),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The enforced policy in machine-readable form: the catalog's safety
/// metadata per tool and the publication policy per rooftop.
async fn policy(State(state): State<Arc<AppState>>) -> Response {
    let tools: Vec<Value> = state
        .catalog
        .tools
        .iter()
        .map(
            |t| json!({"name": t.name, "profile": t.profile, "scope": t.scope, "safety": t.safety}),
        )
        .collect();
    let rooftops: Vec<Value> = match state.directory.snapshot().await {
        Ok(snap) => snap
            .organizations
            .iter()
            .flat_map(|o| {
                o.rooftops.iter().filter(|r| r.settings.anonymous_reads).map(|r| {
                    json!({"organization_id": o.organization_id, "rooftop_id": r.rooftop_id, "anonymous_reads": true})
                })
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    json_ok(&json!({
        "tools": tools,
        "published_rooftops": rooftops,
        "authority": "Availability is authoritative only from a source the dealer designates; imported files are dealer_asserted and never verified_current."
    }))
}

/// RFC 9728 protected-resource metadata: where to get a token for this
/// gateway and which scopes exist.
async fn protected_resource(State(state): State<Arc<AppState>>) -> Response {
    protected_resource_metadata(&state, &state.resource_url)
}

/// The metadata of the AAP endpoint of one organization. Nothing is looked
/// up (the document is the same for any identifier, so it reveals no
/// organization); a segment that is not an identifier is 404, not echoed.
async fn aap_protected_resource(
    State(state): State<Arc<AppState>>,
    Path(organization_id): Path<String>,
) -> Response {
    if !crate::store::audit::is_identifier(&organization_id) {
        return StatusCode::NOT_FOUND.into_response();
    }
    protected_resource_metadata(&state, &crate::mcp::aap::resource(&state, &organization_id))
}

/// RFC 9728 metadata of `resource`: the authorization servers and the
/// scopes of every profile.
fn protected_resource_metadata(state: &AppState, resource: &str) -> Response {
    let mut servers = state.settings.authorization_servers.clone();
    if servers.is_empty()
        && let Some(issuer) = &state.settings.jwt_issuer
    {
        servers.push(issuer.clone());
    }
    let scopes: Vec<String> = {
        let set: std::collections::BTreeSet<&String> = state
            .catalog
            .profiles
            .iter()
            .flat_map(|p| &p.scopes)
            .collect();
        set.into_iter().cloned().collect()
    };
    json_ok(&crate::auth::jwt::well_known_metadata(
        resource, &servers, &scopes,
    ))
}

/// The configured claim byte for byte (its digest and signature cover
/// exactly these bytes), or 404 with the notice that none is published.
async fn claim(State(state): State<Arc<AppState>>) -> Response {
    let (status, bytes) = match &state.claim {
        crate::claim::PublishedClaim::Configured { bytes, .. } => (StatusCode::OK, bytes.clone()),
        crate::claim::PublishedClaim::None { notice, .. } => {
            (StatusCode::NOT_FOUND, notice.clone())
        }
    };
    let mut r = (status, bytes).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn json_ok(v: &Value) -> Response {
    let mut r = (StatusCode::OK, serde_json::to_vec(v).unwrap_or_default()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

pub use crate::state::start::seed_if_empty;

/// A started server (the seam integration tests use).
pub struct Running {
    pub addr: SocketAddr,
    /// The `--metrics-listen` address as bound, when one was asked for.
    pub metrics_addr: Option<SocketAddr>,
    pub state: Arc<AppState>,
}

/// Open the store, seed it, bind, and return the state plus the listener
/// (the start-up shared with `stdio` is `state::start`).
pub async fn prepare(
    settings: ServeSettings,
    database_url: &str,
) -> Result<(Arc<AppState>, TcpListener), crate::Error> {
    let opened = crate::state::start::open(&settings, database_url).await?;
    let listener = TcpListener::bind(settings.listen)
        .await
        .map_err(|e| crate::Error::Io(format!("cannot listen on {}: {e}", settings.listen)))?;
    let bound = listener
        .local_addr()
        .map_err(|e| crate::Error::Io(e.to_string()))?;
    let state = crate::state::start::state(opened, settings, bound).await?;
    Ok((state, listener))
}

/// Start a server in this process on the settings' listen address (use
/// port 0 for an ephemeral one) and return once the socket is bound. The
/// server stops when `shutdown` resolves. Integration tests use this.
pub async fn spawn(
    settings: ServeSettings,
    database_url: &str,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<Running, crate::Error> {
    let (state, listener) = prepare(settings, database_url).await?;
    let addr = listener
        .local_addr()
        .map_err(|e| crate::Error::Io(e.to_string()))?;
    let metrics = bind_metrics(&state.settings).await?;
    let metrics_addr = match &metrics {
        Some(l) => Some(
            l.local_addr()
                .map_err(|e| crate::Error::Io(e.to_string()))?,
        ),
        None => None,
    };
    let serve_state = state.clone();
    tokio::spawn(async move {
        if let Err(e) = serve_bound(listener, metrics, serve_state, shutdown).await {
            tracing::error!(error = %e, "server stopped with an error");
        }
    });
    Ok(Running {
        addr,
        metrics_addr,
        state,
    })
}

/// Serve until `shutdown` resolves, then finish in-flight requests for at
/// most `--shutdown-grace-seconds` and close what is left.
pub async fn serve(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), crate::Error> {
    let metrics = bind_metrics(&state.settings).await?;
    serve_bound(listener, metrics, state, shutdown).await
}

/// [`serve`] with the `--metrics-listen` listener already bound.
async fn serve_bound(
    listener: TcpListener,
    metrics: Option<TcpListener>,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), crate::Error> {
    // Installed before the first request, so nothing counted is lost.
    let _ = crate::metrics::handle();
    let metrics = metrics.map(|l| spawn_metrics(l, state.clone()));
    let retention =
        crate::store::audit::spawn_retention(state.store.clone(), state.settings.audit_retention());
    // The bundled demo stays within its SLAs (docs/console.md "The demo
    // stays fresh": the console and a newcomer's first look would otherwise
    // show every demo vehicle stale after 15 minutes). Only the bundled demo's rooftops are ever
    // touched; `--no-demo` and `--seed-dealers` start no refresh at all.
    let demo_refresh = (!state.settings.no_demo && state.settings.seed_dealers.is_none())
        .then(|| crate::demo::refresh::spawn(state.store.clone()));
    // Our own accept loop rather than `axum::serve`: header-read and idle
    // timeouts, connection caps, refusals with bodies and a shutdown
    // deadline (docs/security.md "Slow clients"; see `mcp::connections`).
    let limits = mcp::connections::Limits::from_settings(&state.settings);
    // Notification streams never finish by themselves: on shutdown the hub
    // ends each with its end frame first (docs/mcp.md "Subscriptions"), so
    // they close like any finished response instead of holding the grace
    // period.
    let hub = state.watch.clone();
    let shutdown = async move {
        shutdown.await;
        hub.shutdown();
    };
    mcp::connections::serve(listener, router(state), limits, shutdown).await;
    retention.abort();
    if let Some(task) = metrics {
        task.abort();
    }
    if let Some(task) = demo_refresh {
        task.abort();
    }
    Ok(())
}

/// Resolves on ctrl-c or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!(
        "shutdown requested; finishing in-flight requests (at most --shutdown-grace-seconds)"
    );
}
