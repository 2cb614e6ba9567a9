//! The rooftop manager's console at `/console/` (docs/console.md): server-rendered
//! HTML (maud), read-only, no script, everything in the binary.
//!
//! How a page is answered, in this order:
//! 1. Host allowlist (403, the same DNS-rebinding rule as `/mcp`).
//! 2. The session cookie names a live entry of this replica's session table
//!    ([`session`]); an API token's revocation and expiry are re-read from
//!    the store on every request. No session: 303 to the sign-in page.
//! 3. Authorization before lookup: the rooftop in the URL must be one the
//!    grant covers ([`Grant::covers`]), else the one 404 page every absent
//!    rooftop or vehicle gets too (DAP-CORE-029..031: no existence leak).
//!    A rooftop published for anonymous reads is still not the manager's.
//! 4. The data come from the gateway's own code paths: the tools through
//!    [`crate::tools::invoke`] with the manager's principal (so policy,
//!    scopes, isolation, validation and audit are the tools' own), the
//!    store for snapshots and programs, the inventory view for counts.
//!
//! Sign-in and sign-out are POST forms; the cookie is `HttpOnly`,
//! `SameSite=Strict`, `Secure` when the public URL is https, and lives at
//! most [`session::SESSION_LIFETIME`]. A POST must carry an `Origin` equal
//! to the gateway's own (CSRF defence on top of SameSite). The token is read
//! from the form body only, verified by [`crate::auth::verify`] exactly as
//! on `/mcp`, and never stored, logged, echoed or put in a URL.

mod aggregate;
mod html;
mod lint;
mod overview;
mod records;
pub mod session;
mod vehicles;
mod what_if;
mod words;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::rejection::FormRejection;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Extension, Form, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use chrono::Utc;
use maud::{Markup, html};
use serde_json::{Value, json};

use crate::auth::{Credential, Grant, Principal, verify};
use crate::directory::DirectorySnapshot;
use crate::mcp::headers::host_without_port;
use crate::state::AppState;
use crate::store::{OrganizationRecord, RooftopRecord, StoreError};
use html::{NavLink, Viewer};

/// The scope a grant needs to sign in (catalog `gateway_scopes`,
/// `capabilities.yaml`).
pub const SCOPE: &str = "dealergateway:console:read";
/// The session cookie. Its value is a random handle, never the token.
pub const COOKIE: &str = "dgw_console";
/// Where the console lives (the catalog names its scope by this surface).
pub const SURFACE: &str = "/console/";

/// What the console keeps besides [`AppState`].
pub struct Console {
    sessions: session::Sessions,
    scores: aggregate::ScoreCache,
}

/// Failures of a console request. Each maps to one page.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// Absent, or not covered by the grant: the same page either way.
    #[error("not found")]
    NotFound,
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error(transparent)]
    Session(#[from] session::SessionError),
    /// Every offer evaluation thread is busy (docs/pricing.md section 4,
    /// "Where evaluations run"): retry after the given seconds.
    #[error("every offer evaluation thread is busy")]
    Busy { retry_after_seconds: u64 },
}

/// The console's routes, merged into [`crate::app::router`]. Every path
/// is under `/console`.
pub fn router() -> Router<Arc<AppState>> {
    let console = Arc::new(Console {
        sessions: session::Sessions::default(),
        scores: aggregate::ScoreCache::default(),
    });
    Router::new()
        .route("/console", get(|| async { Redirect::permanent(SURFACE) }))
        .route("/console/", get(home))
        .route("/console/console.css", get(stylesheet))
        .route(
            "/console/sign-in",
            post(sign_in).layer(DefaultBodyLimit::max(FORM_BODY_LIMIT)),
        )
        .route(
            "/console/sign-out",
            post(sign_out).layer(DefaultBodyLimit::max(FORM_BODY_LIMIT)),
        )
        .route("/console/programs", get(records::programs))
        .route("/console/rooftop/{rooftop_id}/", get(overview::handler))
        .route(
            "/console/rooftop/{rooftop_id}",
            get(
                |axum::extract::Path(id): axum::extract::Path<String>| async move {
                    Redirect::permanent(&format!("/console/rooftop/{}/", encode(&id)))
                },
            ),
        )
        .route(
            "/console/rooftop/{rooftop_id}/vehicles",
            get(vehicles::list),
        )
        .route(
            "/console/rooftop/{rooftop_id}/vehicle/{vehicle_id}",
            get(vehicles::vehicle),
        )
        .route(
            "/console/rooftop/{rooftop_id}/vehicle/{vehicle_id}/what-if",
            get(what_if::what_if),
        )
        .route(
            "/console/rooftop/{rooftop_id}/imports",
            get(records::imports),
        )
        .route(
            "/console/rooftop/{rooftop_id}/availability",
            get(records::availability),
        )
        .route("/console/{*rest}", get(unknown_page))
        .layer(Extension(console))
        .layer(axum::middleware::map_response(html::framework_refusal))
}

/// The largest sign-in or sign-out form body: a token is at most 16 KiB
/// (`auth::verify`), three times that when form-encoded, with room to
/// spare. A larger body is refused (413) before it is read whole.
const FORM_BODY_LIMIT: usize = 64 * 1024;

/// A signed-in request: the session's handle and grant.
pub struct Signed {
    pub grant: Arc<Grant>,
    pub client_ip: IpAddr,
}

impl Signed {
    pub fn principal(&self) -> Principal {
        Principal::Authenticated(self.grant.clone())
    }

    fn viewer(&self) -> Viewer<'_> {
        Viewer {
            subject: &self.grant.subject,
            organization: &self.grant.organization_id,
        }
    }

    /// Run tool `name` exactly as an agent holding this grant would:
    /// `Ok(structuredContent)` or `Err(the DAP error object)`.
    pub async fn tool(
        &self,
        state: &Arc<AppState>,
        name: &str,
        args: &Value,
    ) -> Result<Value, Value> {
        let ctx = self.context(state);
        let internal =
            || json!({"code": "dealeragent.internal", "message": "The tool is not served."});
        let Some(outcome) = crate::tools::invoke(&ctx, name, args).await else {
            return Err(internal());
        };
        // The exact bytes an agent receives as structuredContent, read back.
        let structured: Value =
            serde_json::from_str(outcome.structured.get()).map_err(|_| internal())?;
        if outcome.is_error {
            Err(structured)
        } else {
            Ok(structured)
        }
    }

    /// The disclosure an agent holding this grant gets for `args`, typed
    /// ([`crate::tools::get_disclosure::disclosure`]: the same tenancy,
    /// inputs and builder), read without serializing and parsing it, or the
    /// DAP error object. The pipeline's own admission check
    /// ([`crate::tools::admit`]: scope, input schema) runs first; the page
    /// that reads it writes its own audit event (DAP-CORE-039), as the
    /// overview does.
    pub async fn disclosure(
        &self,
        state: &Arc<AppState>,
        args: &Value,
    ) -> Result<crate::disclosure::Disclosure, Value> {
        use crate::tools::{ToolError, get_disclosure};
        let ctx = self.context(state);
        let checked = crate::tools::admit(&ctx, get_disclosure::NAME, args).and_then(|()| {
            serde_json::from_value::<crate::tools::args::DisclosureArgs>(args.clone())
                .map_err(ToolError::internal)
        });
        let result = match checked {
            Ok(args) => get_disclosure::disclosure(&ctx, &args).await,
            Err(e) => Err(e),
        };
        result.map_err(|e| {
            let error_id = format!("err.{}", uuid::Uuid::new_v4());
            e.to_dap(&error_id, &ctx.trace_id, Utc::now())
        })
    }

    pub fn context(&self, state: &Arc<AppState>) -> crate::tools::ToolContext {
        crate::tools::ToolContext::new(
            state,
            self.principal(),
            self.client_ip,
            format!("trace.{}", uuid::Uuid::new_v4()),
        )
    }

    /// One audit event for a console page that reads more than one tool
    /// call shows (the overview's per-vehicle scores): the manager's read
    /// is recorded like any authenticated read (DAP-CORE-039).
    pub async fn audit(&self, state: &AppState, page: &str, rooftop_ids: Vec<String>) {
        let mut event = crate::store::AuditEvent::for_principal(
            &self.principal(),
            &format!("trace.{}", uuid::Uuid::new_v4()),
            page,
            "dealergateway.console",
        );
        event.organization_id = Some(self.grant.organization_id.clone());
        event.rooftop_ids = rooftop_ids;
        event.policy_decision = "allow".to_owned();
        event.outcome = "ok".to_owned();
        let written = state.store.append_audit(&event).await;
        crate::store::audit::count_write("event", &written);
        if let Err(e) = written {
            tracing::error!(error = %e, "console audit write failed");
        }
    }
}

/// A rooftop the signed-in grant covers, held with its directory snapshot.
pub struct Rooftop {
    directory: Arc<DirectorySnapshot>,
    organization: usize,
    rooftop: usize,
}

impl Rooftop {
    pub fn organization(&self) -> &OrganizationRecord {
        &self.directory.organizations[self.organization]
    }

    pub fn record(&self) -> &RooftopRecord {
        &self.organization().rooftops[self.rooftop]
    }

    pub fn id(&self) -> &str {
        &self.record().rooftop_id
    }

    pub fn name(&self) -> &str {
        &self.record().dap.name
    }

    pub fn directory(&self) -> &Arc<DirectorySnapshot> {
        &self.directory
    }
}

/// The rooftop `rooftop_id` if the grant covers it, decided on the
/// directory alone before anything about its inventory is read. Absent
/// and foreign rooftops are both [`ConsoleError::NotFound`].
pub async fn covered_rooftop(
    state: &AppState,
    grant: &Grant,
    rooftop_id: &str,
) -> Result<Rooftop, ConsoleError> {
    let directory = state.directory.snapshot().await?;
    let organization = directory
        .organizations
        .iter()
        .position(|o| o.organization_id == grant.organization_id)
        .ok_or(ConsoleError::NotFound)?;
    let rooftop = directory.organizations[organization]
        .rooftops
        .iter()
        .position(|r| {
            r.rooftop_id == rooftop_id && grant.covers(&grant.organization_id, rooftop_id)
        })
        .ok_or(ConsoleError::NotFound)?;
    Ok(Rooftop {
        directory,
        organization,
        rooftop,
    })
}

/// Every rooftop of the grant's organization the grant covers.
pub async fn covered_rooftops(
    state: &AppState,
    grant: &Grant,
) -> Result<Vec<Rooftop>, ConsoleError> {
    let directory = state.directory.snapshot().await?;
    let Some(organization) = directory
        .organizations
        .iter()
        .position(|o| o.organization_id == grant.organization_id)
    else {
        return Ok(Vec::new());
    };
    let count = directory.organizations[organization].rooftops.len();
    Ok((0..count)
        .filter(|&i| {
            grant.covers(
                &grant.organization_id,
                &directory.organizations[organization].rooftops[i].rooftop_id,
            )
        })
        .map(|rooftop| Rooftop {
            directory: directory.clone(),
            organization,
            rooftop,
        })
        .collect())
}

/// The section links of a rooftop's pages.
pub fn nav(rooftop_id: &str, current: &str) -> Vec<NavLink> {
    let base = format!("/console/rooftop/{}", encode(rooftop_id));
    [
        (format!("{base}/"), "Overview"),
        (format!("{base}/vehicles"), "Vehicles"),
        (format!("{base}/imports"), "Imports"),
        (format!("{base}/availability"), "Availability sources"),
        ("/console/programs".to_owned(), "Programs"),
        ("/console/".to_owned(), "All rooftops"),
    ]
    .into_iter()
    .map(|(href, label)| NavLink {
        current: label == current,
        href,
        label,
    })
    .collect()
}

/// Percent-encode one path segment or query value (identifiers are
/// `[A-Za-z0-9._:-]`, so this mostly passes them through).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A full page for a signed-in manager.
pub fn page(signed: &Signed, title: &str, nav: &[NavLink], body: &Markup) -> Response {
    html::respond(
        StatusCode::OK,
        &html::page(title, Some(&signed.viewer()), nav, body),
    )
}

/// A pool refusal as a console page error; a panicked job is logged and
/// shown as the store-unavailable page.
pub fn busy(e: crate::offers::pool::PoolError) -> ConsoleError {
    match e {
        crate::offers::pool::PoolError::Saturated { retry_after } => ConsoleError::Busy {
            retry_after_seconds: retry_after.as_secs().max(1),
        },
        crate::offers::pool::PoolError::Failed(detail) => {
            ConsoleError::Store(StoreError::Query(detail))
        }
    }
}

impl ConsoleError {
    /// The page of a failure. The not-found page is the same bytes for
    /// every absent or foreign id: nothing from the request is echoed.
    pub fn page(&self, signed: Option<&Signed>) -> Response {
        let viewer = signed.map(Signed::viewer);
        match self {
            ConsoleError::NotFound => html::respond(
                StatusCode::NOT_FOUND,
                &html::page(
                    "Not found",
                    viewer.as_ref(),
                    &[],
                    &html! {
                        h1 { "Not found" }
                        p { "There is no such page among the rooftops you can see." }
                        p { a href="/console/" { "Back to your rooftops" } }
                    },
                ),
            ),
            ConsoleError::Busy {
                retry_after_seconds,
            } => {
                let mut r = html::respond(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &html::page(
                        "Busy",
                        viewer.as_ref(),
                        &[],
                        &html! {
                            h1 { "Busy" }
                            p { "Every offer evaluation thread is busy. Try again in a few seconds." }
                        },
                    ),
                );
                if let Ok(v) = HeaderValue::from_str(&retry_after_seconds.to_string()) {
                    r.headers_mut().insert(header::RETRY_AFTER, v);
                }
                r
            }
            ConsoleError::Store(_) | ConsoleError::Session(_) => {
                let error_id = format!("err.{}", uuid::Uuid::new_v4());
                tracing::error!(error.id = %error_id, error = %self, "console page failed");
                let mut r = html::respond(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &html::page(
                        "Temporarily unavailable",
                        viewer.as_ref(),
                        &[],
                        &html! {
                            h1 { "Temporarily unavailable" }
                            p { "The gateway could not read its store. Try again shortly." }
                            p { "Error id: " code { (error_id) } }
                        },
                    ),
                );
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                r
            }
        }
    }
}

/// DNS-rebinding defence, as on `/mcp`: the Host must be one we serve.
fn host_refused(state: &AppState, headers: &HeaderMap) -> Option<Response> {
    let host = headers.get(header::HOST)?;
    let ok = host
        .to_str()
        .ok()
        .map(host_without_port)
        .is_some_and(|h| state.host_allowed(&h));
    (!ok).then(|| {
        html::respond(
            StatusCode::FORBIDDEN,
            &html::page(
                "Forbidden",
                None,
                &[],
                &html! { h1 { "Forbidden" } p { "This host name is not served by this gateway." } },
            ),
        )
    })
}

/// CSRF defence for the two POST forms (sign-in, sign-out), on top of the
/// `SameSite=Strict` cookie: the browser's `Origin` must be this gateway's
/// own, i.e. the scheme of `--public-url` and the request's (allowlisted)
/// Host, or `--public-url` itself. A POST without `Origin` is refused:
/// every browser sends one on a form POST.
fn same_origin(state: &AppState, headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) else {
        return false;
    };
    let origin = origin.trim_end_matches('/').to_ascii_lowercase();
    let public = state.public_base.trim_end_matches('/').to_ascii_lowercase();
    let public_origin = public
        .split_once("://")
        .map(|(scheme, rest)| format!("{scheme}://{}", rest.split('/').next().unwrap_or("")));
    if public_origin.as_deref() == Some(origin.as_str()) {
        return true;
    }
    let scheme = if public.starts_with("https://") {
        "https"
    } else {
        "http"
    };
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|host| origin == format!("{scheme}://{}", host.to_ascii_lowercase()))
}

/// What the `Cookie` header(s) say of the session.
#[derive(Debug, PartialEq, Eq)]
enum SessionCookie {
    /// No `dgw_console` cookie, or an empty one.
    None,
    /// Exactly one, with this handle.
    One(String),
    /// More than one `dgw_console` cookie. A browser sends two when a page
    /// of a sibling host, or an earlier insecure response, planted one of
    /// its own with another `Domain` or `Path`: whichever came first would
    /// be somebody else's session (login CSRF by cookie planting). So
    /// none of them counts, and sign-in is refused until they are cleared.
    Several(Vec<String>),
}

impl SessionCookie {
    fn of(headers: &HeaderMap) -> Self {
        let mut values: Vec<String> = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .filter(|(name, _)| *name == COOKIE)
            .map(|(_, value)| value.trim().to_owned())
            .collect();
        match values.len() {
            0 => SessionCookie::None,
            1 => match values.pop() {
                Some(v) if !v.is_empty() => SessionCookie::One(v),
                _ => SessionCookie::None,
            },
            _ => SessionCookie::Several(values),
        }
    }
}

/// The session handle, when the request names exactly one.
fn cookie_handle(headers: &HeaderMap) -> Option<String> {
    match SessionCookie::of(headers) {
        SessionCookie::One(handle) => Some(handle),
        SessionCookie::None | SessionCookie::Several(_) => None,
    }
}

/// What the sign-in page says to a browser sending several session cookies.
const SEVERAL_COOKIES: &str = "Your browser sent more than one console session cookie (dgw_console) \
     for this site, so the console accepts none of them: another site may have set one. Delete \
     this site's cookies in your browser, then sign in again.";

/// `Secure` when the gateway's public URL is https (behind a TLS proxy).
fn secure(state: &AppState) -> bool {
    state.public_base.starts_with("https://")
}

fn set_cookie(state: &AppState, value: &str, max_age_seconds: i64) -> HeaderValue {
    let secure = if secure(state) { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{COOKIE}={value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={max_age_seconds}{secure}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("dgw_console=; Path=/console; Max-Age=0"))
}

/// Why a request has no usable session.
pub enum NotSigned {
    /// Refused before the session was looked at (Host) or the store failed.
    Refused(Response),
    /// No (live) session: go to the sign-in page.
    SignIn,
}

impl NotSigned {
    pub fn into_response(self) -> Response {
        match self {
            NotSigned::Refused(r) => r,
            NotSigned::SignIn => {
                let mut r = Redirect::to(SURFACE).into_response();
                html::secure_headers(r.headers_mut());
                r
            }
        }
    }
}

/// The signed-in manager of a request, or why there is none. An API
/// token revoked or expired since sign-in ends the session here.
pub async fn signed_in(
    state: &AppState,
    console: &Console,
    headers: &HeaderMap,
    peer: SocketAddr,
) -> Result<Signed, NotSigned> {
    if let Some(refusal) = host_refused(state, headers) {
        return Err(NotSigned::Refused(refusal));
    }
    // The same HTTP limits as /mcp: per client address, then per subject.
    if let Err(retry) = state.ip_limiter.check(&peer.ip()) {
        return Err(NotSigned::Refused(too_many_requests(retry)));
    }
    let handle = cookie_handle(headers).ok_or(NotSigned::SignIn)?;
    let now = Utc::now();
    let session = console
        .sessions
        .get(&handle, now)
        .ok_or(NotSigned::SignIn)?;
    if let Credential::ApiToken { token_id } = &session.grant.credential {
        match state.store.get_api_token(token_id).await {
            Ok(Some(t)) if t.revoked_at.is_none() && t.expires_at > now => {}
            Ok(_) => {
                console.sessions.close(&handle);
                return Err(NotSigned::SignIn);
            }
            Err(e) => return Err(NotSigned::Refused(ConsoleError::Store(e).page(None))),
        }
    }
    if let Err(retry) = state.principal_limiter.check(&session.grant.subject) {
        return Err(NotSigned::Refused(too_many_requests(retry)));
    }
    Ok(Signed {
        grant: session.grant,
        client_ip: peer.ip(),
    })
}

/// 429 with `Retry-After`, as a page.
fn too_many_requests(retry: crate::ratelimit::RetryAfter) -> Response {
    let mut r = html::respond(
        StatusCode::TOO_MANY_REQUESTS,
        &html::page(
            "Too many requests",
            None,
            &[],
            &html! { h1 { "Too many requests" } p { "Wait a moment and reload the page." } },
        ),
    );
    if let Ok(v) = HeaderValue::from_str(&retry.seconds().to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

async fn stylesheet() -> Response {
    let mut r = html::CSS.into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/css; charset=utf-8"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// Any other path under `/console/`: the not-found page (signed in or not,
/// so a path says nothing about what exists).
async fn unknown_page(
    State(state): State<Arc<AppState>>,
    Extension(console): Extension<Arc<Console>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    match signed_in(&state, &console, &headers, peer).await {
        Ok(signed) => ConsoleError::NotFound.page(Some(&signed)),
        Err(NotSigned::Refused(r)) => r,
        Err(NotSigned::SignIn) => ConsoleError::NotFound.page(None),
    }
}

/// `/console/`: the sign-in form, or the manager's rooftops.
async fn home(
    State(state): State<Arc<AppState>>,
    Extension(console): Extension<Arc<Console>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let signed = match signed_in(&state, &console, &headers, peer).await {
        Ok(s) => s,
        Err(NotSigned::SignIn) => {
            let several = matches!(SessionCookie::of(&headers), SessionCookie::Several(_));
            return sign_in_page(StatusCode::OK, several.then_some(SEVERAL_COOKIES));
        }
        Err(NotSigned::Refused(r)) => return r,
    };
    let rooftops = match covered_rooftops(&state, &signed.grant).await {
        Ok(r) => r,
        Err(e) => return e.page(Some(&signed)),
    };
    let body = html! {
        h1 { "Your rooftops" }
        @if rooftops.is_empty() {
            p.notice { "Your grant covers no rooftop this gateway serves." }
        } @else {
            p { "Organization " strong { (rooftops[0].organization().name) } " (" code { (signed.grant.organization_id) } "). "
                "Pick a rooftop to see what agents are told about its vehicles, or see the "
                a href="/console/programs" { "incentive programs" } "." }
            div.scroll tabindex="0" {
                table {
                    caption.sr { "Rooftops your grant covers" }
                    thead { tr { th scope="col" { "Rooftop" } th scope="col" { "Rooftop id" } th scope="col" { "Sections" } } }
                    tbody {
                        @for r in &rooftops {
                            @let base = format!("/console/rooftop/{}", encode(r.id()));
                            tr {
                                td { a href={(base) "/"} { (r.name()) } }
                                td { code { (r.id()) } }
                                td {
                                    a href={(base) "/vehicles"} { "Vehicles" } " · "
                                    a href={(base) "/imports"} { "Imports" } " · "
                                    a href={(base) "/availability"} { "Availability sources" }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    page(&signed, "Your rooftops", &[], &body)
}

fn sign_in_page(status: StatusCode, problem: Option<&str>) -> Response {
    let body = html! {
        h1 { "Sign in to the rooftop console" }
        p { "See what buyers' AI agents are told about your vehicles: prices, charges, offers, "
            "availability and how complete each disclosure is." }
        @if let Some(problem) = problem {
            div.error role="alert" id="sign-in-problem" { p { (problem) } }
        }
        form.stack method="post" action="/console/sign-in" {
            fieldset {
                legend { "Credential" }
                div.row {
                    label for="token" {
                        "Gateway API token or JWT access token"
                        input id="token" name="token" type="password" autocomplete="off" required
                            spellcheck="false" size="48" aria-describedby="token-help";
                    }
                }
                p id="token-help" {
                    "The token needs the scope " code { (SCOPE) } " and covers the rooftops you may see. "
                    "It is checked once and never stored: the console keeps a session for at most 8 hours."
                }
                button type="submit" { "Sign in" }
            }
        }
    };
    html::respond(status, &html::page("Sign in", None, &[], &body))
}

/// The sign-in form. Deliberately no `Debug`: the token must never reach
/// a log line.
#[derive(serde::Deserialize)]
pub struct SignInForm {
    token: String,
}

/// `POST /console/sign-in`: verify the token as `/mcp` would, require the
/// console scope, open a session, 303 to `/console/`.
async fn sign_in(
    State(state): State<Arc<AppState>>,
    Extension(console): Extension<Arc<Console>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    form: Result<Form<SignInForm>, FormRejection>,
) -> Response {
    if let Some(refusal) = host_refused(&state, &headers) {
        return refusal;
    }
    if !same_origin(&state, &headers) {
        return sign_in_page(
            StatusCode::FORBIDDEN,
            Some("This form can only be sent from the gateway's own console page."),
        );
    }
    // Guessing tokens is throttled like any other flood (the per-address
    // limit of /mcp), with the delay the limiter computed.
    if let Err(retry) = state.ip_limiter.check(&peer.ip()) {
        let mut r = sign_in_page(
            StatusCode::TOO_MANY_REQUESTS,
            Some(
                "Too many attempts from your address; wait for the time your browser was given (Retry-After) and try again.",
            ),
        );
        with_retry_after(&mut r, retry.seconds());
        return r;
    }
    if matches!(SessionCookie::of(&headers), SessionCookie::Several(_)) {
        return sign_in_page(StatusCode::BAD_REQUEST, Some(SEVERAL_COOKIES));
    }
    let Form(form) = match form {
        Ok(form) => form,
        Err(rejection) => return form_refused(&rejection),
    };
    let mut bearer = HeaderMap::new();
    let Ok(value) = HeaderValue::from_str(&format!("Bearer {}", form.token.trim())) else {
        return sign_in_page(StatusCode::UNAUTHORIZED, Some(REFUSED));
    };
    bearer.insert(header::AUTHORIZATION, value);
    let grant = match verify::authenticate(&state, &bearer, None).await {
        Ok(Principal::Authenticated(grant)) => grant,
        Ok(Principal::Anonymous) => return sign_in_page(StatusCode::UNAUTHORIZED, Some(REFUSED)),
        Err(rejection) if rejection.unavailable => {
            return sign_in_page(
                StatusCode::SERVICE_UNAVAILABLE,
                Some("Credentials cannot be checked right now; try again shortly."),
            );
        }
        Err(_) => return sign_in_page(StatusCode::UNAUTHORIZED, Some(REFUSED)),
    };
    if !grant.has_scope(SCOPE) {
        tracing::info!(auth.subject = %grant.subject, "console sign-in without the console scope");
        return sign_in_page(
            StatusCode::FORBIDDEN,
            Some(
                "This credential is valid but does not carry the console scope dealergateway:console:read.",
            ),
        );
    }
    // A new sign-in replaces the browser's previous session (no session
    // fixation, no orphaned entries).
    if let Some(previous) = cookie_handle(&headers) {
        console.sessions.close(&previous);
    }
    let now = Utc::now();
    let (handle, session) = match console.sessions.open(grant, now) {
        Ok(opened) => opened,
        Err(e) => match e.retry_after_seconds() {
            // Full: refused rather than making room by signing somebody
            // else out (console::session).
            Some(seconds) => {
                tracing::warn!(error = %e, "console sign-in refused: the session table is full");
                let mut r = sign_in_page(
                    StatusCode::SERVICE_UNAVAILABLE,
                    Some(match e {
                        session::SessionError::OrganizationFull { .. } => {
                            "Your organization has as many console sessions open as this gateway keeps for one organization; try again after the time your browser was given (Retry-After), or ask a colleague to sign out."
                        }
                        _ => {
                            "This gateway has as many console sessions open as it keeps; try again after the time your browser was given (Retry-After)."
                        }
                    }),
                );
                with_retry_after(&mut r, seconds);
                return r;
            }
            None => return ConsoleError::from(e).page(None),
        },
    };
    tracing::info!(auth.subject = %session.grant.subject, "console sign-in");
    let mut r = Redirect::to(SURFACE).into_response();
    let max_age = (session.expires_at - now).num_seconds().max(1);
    r.headers_mut()
        .insert(header::SET_COOKIE, set_cookie(&state, &handle, max_age));
    html::secure_headers(r.headers_mut());
    r
}

const REFUSED: &str = "The token was not accepted: it is invalid, expired or revoked.";

/// `Retry-After: seconds` on a refusal.
fn with_retry_after(r: &mut Response, seconds: u64) {
    if let Ok(v) = HeaderValue::from_str(&seconds.to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
}

/// A sign-in form the framework could not read, as the sign-in page with
/// the rule it breaks, in the console's headers (never the framework's
/// bare text, never an echo of the body).
fn form_refused(rejection: &FormRejection) -> Response {
    let (status, problem) = match rejection {
        FormRejection::InvalidFormContentType(_) => (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "The sign-in form must be sent as application/x-www-form-urlencoded, as the console's own form is.",
        ),
        FormRejection::FailedToDeserializeForm(_)
        | FormRejection::FailedToDeserializeFormBody(_) => (
            StatusCode::BAD_REQUEST,
            "The sign-in form must carry one field, token, holding the credential as text.",
        ),
        FormRejection::BytesRejection(_) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            (
                StatusCode::PAYLOAD_TOO_LARGE,
                "The sign-in form is larger than 64 KiB; a token is at most 16 KiB.",
            )
        }
        _ => (
            StatusCode::BAD_REQUEST,
            "The sign-in form could not be read; send it again from the console's own page.",
        ),
    };
    sign_in_page(status, Some(problem))
}

/// `POST /console/sign-out`: forget the session and expire the cookie.
async fn sign_out(
    State(state): State<Arc<AppState>>,
    Extension(console): Extension<Arc<Console>>,
    headers: HeaderMap,
) -> Response {
    if let Some(refusal) = host_refused(&state, &headers) {
        return refusal;
    }
    if !same_origin(&state, &headers) {
        return sign_in_page(
            StatusCode::FORBIDDEN,
            Some("This form can only be sent from the gateway's own console page."),
        );
    }
    // Every session the browser names ends, a planted one included: the
    // browser is to hold none afterwards.
    match SessionCookie::of(&headers) {
        SessionCookie::None => {}
        SessionCookie::One(handle) => console.sessions.close(&handle),
        SessionCookie::Several(handles) => {
            for handle in handles.iter().filter(|h| !h.is_empty()) {
                console.sessions.close(handle);
            }
        }
    }
    let mut r = Redirect::to(SURFACE).into_response();
    r.headers_mut()
        .insert(header::SET_COOKIE, set_cookie(&state, "", 0));
    html::secure_headers(r.headers_mut());
    r
}
