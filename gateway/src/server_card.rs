//! MCP Server Cards and the MCP Registry's `server.json`, generated from
//! the catalog and the revisions served, so they cannot drift from what
//! the endpoints answer (docs/mcp.md "Server Cards and server.json").
//!
//! A Server Card (the MCP Server Card extension, SEP-2127; its v1 JSON
//! schema) describes one remote MCP server before a client connects: its
//! reverse-DNS `name`, `version`, `description`, and `remotes` (transport,
//! URL, supported protocol versions). The extension reserves
//! `GET <streamable-http-url>/server-card` for it, so:
//!
//! - `GET /mcp/server-card`: the card of `/mcp`;
//! - `GET /aap/{organization_id}/mcp/server-card`: the card of one AAP
//!   endpoint, authorized like the endpoint (DAP-CORE-029..031): 400 for a
//!   segment that is not an identifier, 404 for an organization that is
//!   absent or that the caller may not see, one answer for both;
//! - `GET /.well-known/ai-catalog.json`: the domain's AI Catalog, whose
//!   entries point at the cards of `/mcp` and of every AAP endpoint
//!   published to anonymous callers (the extension's discovery flow).
//!
//! Cards do not enumerate primitives (the extension leaves that to the
//! list operations); this gateway adds, under its own `_meta` key, the
//! endpoint's capabilities and the names of its tools, so an operator can
//! see what an endpoint serves. They are advisory: `tools/list` is the
//! authority, and a test keeps the two equal.
//!
//! `dealer-gateway registry server-json` prints the same description as
//! the Registry's `server.json` (schema 2025-12-11) for publishing.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::catalog::Catalog;
use crate::mcp::revision::SUPPORTED_REVISIONS;
use crate::state::AppState;

/// The schema every card names (the extension's v1 family).
pub const CARD_SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json";
/// The Registry's `server.json` schema this gateway writes.
pub const REGISTRY_SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";
/// The card media type (SEP-2127 discovery).
pub const CARD_MEDIA_TYPE: &str = "application/mcp-server-card+json";
/// The AI Catalog media type.
const CATALOG_MEDIA_TYPE: &str = "application/ai-catalog+json";
/// The card suffix of a streamable-HTTP URL.
pub const CARD_SUFFIX: &str = "/server-card";
/// The AI Catalog's well-known path.
pub const AI_CATALOG: &str = "/.well-known/ai-catalog.json";
/// This gateway's `_meta` key on cards and `server.json`: the endpoint's
/// capabilities and tool names (advisory; `tools/list` is the authority).
pub const META_KEY: &str = "dealergateway.card";
/// The Registry's key for publisher-provided metadata.
const REGISTRY_META_KEY: &str = "io.modelcontextprotocol.registry/publisher-provided";
/// The extension asks for an hour of caching; cards change only with a
/// new release or catalog.
const MAX_AGE_SECONDS: u32 = 3600;

const TITLE: &str = "Dealer Agent Gateway";
/// At most 100 characters (the card schema's `description`).
const DAP_DESCRIPTION: &str = "Read-only car-dealer inventory, pricing disclosures and availability (Dealer Agent Protocol 0.1)";
const AAP_TITLE: &str = "Dealer Agent Gateway, AAP endpoint";
const AAP_DESCRIPTION: &str =
    "Auto Agent Protocol read skills for one dealer: a compatibility adapter over DAP 0.1";

/// The card routes, merged into the app's router.
pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route("/mcp/server-card", get(serve_dap_card))
        .route(
            "/aap/{organization_id}/mcp/server-card",
            get(serve_aap_card),
        )
        .route(AI_CATALOG, get(ai_catalog))
}

/// The reverse-DNS namespace of a public URL: its host's labels reversed
/// (`https://dealers.example.com` is `com.example.dealers`); an IP address
/// is kept as written. Characters a card name cannot hold become `-`.
pub fn namespace_of(public_url: &str) -> String {
    let host = host_of(public_url);
    if host.parse::<std::net::IpAddr>().is_ok() {
        host
    } else {
        host.split('.').rev().collect::<Vec<_>>().join(".")
    }
}

/// The lower-cased host of a public URL (no port, no brackets), with
/// characters a card name cannot hold written `-`; `localhost` when
/// nothing is left.
fn host_of(public_url: &str) -> String {
    let rest = public_url
        .split_once("://")
        .map_or(public_url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host.starts_with('[') {
        host.split(']')
            .next()
            .unwrap_or(host)
            .trim_start_matches('[')
    } else {
        host.split(':').next().unwrap_or(host)
    };
    let clean: String = host
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if clean.trim_matches(['.', '-']).is_empty() {
        "localhost".to_owned()
    } else {
        clean
    }
}

/// The card of `/mcp` at `public_base`.
pub fn dap_card(catalog: &Catalog, public_base: &str) -> Value {
    let endpoint = format!("{public_base}/mcp");
    card(
        &format!("{}/dealer-agent-gateway", namespace_of(public_base)),
        TITLE,
        DAP_DESCRIPTION,
        &endpoint,
        json!({
            "endpoint": "dap",
            "capabilities": crate::mcp::capabilities(),
            "tools": tool_names(catalog, false),
        }),
    )
}

/// The card of the AAP endpoint of `organization_id` at `public_base`.
pub fn aap_card(catalog: &Catalog, public_base: &str, organization_id: &str) -> Value {
    let endpoint = format!("{public_base}{}", crate::mcp::aap::path(organization_id));
    // Identifiers may hold `:`, which a card name may not.
    let server = organization_id.replace(':', "_");
    card(
        &format!("{}/aap.{server}", namespace_of(public_base)),
        AAP_TITLE,
        AAP_DESCRIPTION,
        &endpoint,
        json!({
            "endpoint": "aap",
            "organization_id": organization_id,
            "capabilities": crate::mcp::capabilities_of(&crate::mcp::Endpoint::Aap {
                organization_id: organization_id.to_owned(),
            }),
            "tools": tool_names(catalog, true),
        }),
    )
}

fn card(name: &str, title: &str, description: &str, endpoint: &str, ours: Value) -> Value {
    json!({
        "$schema": CARD_SCHEMA,
        "name": name,
        "version": env!("CARGO_PKG_VERSION"),
        "title": title,
        "description": description,
        "remotes": [{
            "type": "streamable-http",
            "url": endpoint,
            "supportedProtocolVersions": SUPPORTED_REVISIONS,
        }],
        "_meta": {META_KEY: ours},
    })
}

/// The tools an endpoint lists, in `tools/list` order: the DAP tools of
/// `/mcp` or the AAP binding's tools.
fn tool_names(catalog: &Catalog, aap: bool) -> Vec<String> {
    catalog
        .tools
        .iter()
        .filter(|t| crate::tools::registered(&t.name).is_some())
        .filter(|t| crate::mcp::aap::is_aap_tool(t) == aap)
        .map(|t| t.name.clone())
        .collect()
}

/// The Registry's `server.json` of a gateway published at `public_url`
/// (the MCP Registry, schema 2025-12-11): `name` (the caller's, or the
/// URL's reverse-DNS namespace with `/dealer-agent-gateway`), `title`,
/// `description` (at most 100 characters), `version`, `websiteUrl`, one
/// streamable-HTTP remote (`/mcp`), no `packages` (the gateway is a
/// remote service, not an installable package), and under the
/// publisher-provided `_meta` key what the card adds: the capabilities,
/// the tools, the revisions, the AAP endpoint template.
pub fn registry_server_json(catalog: &Catalog, public_url: &str, name: Option<&str>) -> Value {
    let base = public_url.trim_end_matches('/');
    let base = base.strip_suffix("/mcp").unwrap_or(base);
    let name = name.map_or_else(
        || format!("{}/dealer-agent-gateway", namespace_of(base)),
        str::to_owned,
    );
    json!({
        "$schema": REGISTRY_SCHEMA,
        "name": name,
        "title": TITLE,
        "description": DAP_DESCRIPTION,
        "version": env!("CARGO_PKG_VERSION"),
        "websiteUrl": base,
        "remotes": [{"type": "streamable-http", "url": format!("{base}/mcp")}],
        "_meta": {REGISTRY_META_KEY: {
            META_KEY: {
                "endpoint": "dap",
                "supportedProtocolVersions": SUPPORTED_REVISIONS,
                "capabilities": crate::mcp::capabilities(),
                "tools": tool_names(catalog, false),
                "aap_endpoint_template": format!("{base}{}", crate::mcp::aap::PATH_TEMPLATE),
                "aap_tools": tool_names(catalog, true),
            }
        }},
    })
}

/// A card with the extension's caching and CORS headers: public with an
/// ETag (304 on a match) when anyone may read it; `private` when only
/// the caller's credential shows it.
fn card_response(
    request: &HeaderMap,
    doc: &Value,
    media_type: &'static str,
    public: bool,
) -> Response {
    let bytes = serde_json::to_vec(doc).unwrap_or_default();
    let etag = crate::wellknown::etag_of(&bytes);
    let mut r = if crate::wellknown::not_modified(request, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = (StatusCode::OK, bytes).into_response();
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
        r
    };
    let headers = r.headers_mut();
    let cache = if public {
        format!("public, max-age={MAX_AGE_SECONDS}")
    } else {
        format!("private, max-age={MAX_AGE_SECONDS}")
    };
    if let Ok(value) = HeaderValue::from_str(&cache) {
        headers.insert(header::CACHE_CONTROL, value);
    }
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    headers.insert(header::VARY, HeaderValue::from_static("Authorization"));
    if public {
        // SEP-2127 "CORS Requirements": public read-only metadata, readable
        // from any origin. The app's CORS layer names the exposed headers
        // (ETag among them) and grants a listed origin by name.
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
    }
    r
}

async fn serve_dap_card(State(state): State<Arc<AppState>>, request: HeaderMap) -> Response {
    let doc = dap_card(&state.catalog, &state.public_base);
    card_response(&request, &doc, CARD_MEDIA_TYPE, true)
}

/// The raw organization segment of a card path (never decoded, as the
/// endpoint's own).
fn segment(uri: &Uri) -> &str {
    uri.path()
        .strip_prefix("/aap/")
        .and_then(|rest| rest.strip_suffix("/mcp/server-card"))
        .unwrap_or("")
}

/// The card of an AAP endpoint, for a caller who may reach the endpoint:
/// the same credential check, the same 400/404 refusals (no body differs
/// between an absent organization and a hidden one).
async fn serve_aap_card(
    State(state): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
    request: HeaderMap,
) -> Response {
    let raw = segment(&uri).to_owned();
    match crate::mcp::aap::authorize(&state, peer, &uri, &request, &raw).await {
        Ok((organization_id, principal)) => {
            let doc = aap_card(&state.catalog, &state.public_base, &organization_id);
            // A card anyone may see is public; one only this credential
            // shows must not be cached for others.
            let public = match principal {
                Principal::Anonymous => true,
                Principal::Authenticated(_) => {
                    crate::mcp::aap::anonymously_visible(&state, &organization_id).await
                }
            };
            card_response(&request, &doc, CARD_MEDIA_TYPE, public)
        }
        Err(refusal) => refusal,
    }
}

/// The AI Catalog of this gateway: `/mcp`'s card and the card of every AAP
/// endpoint published to anonymous callers (the same organizations the
/// anonymous manifest names; a partner-only organization is never listed).
async fn ai_catalog(State(state): State<Arc<AppState>>, request: HeaderMap) -> Response {
    // AI Catalog identifiers are anchored on the publisher's domain:
    // `urn:air:{publisher}:{namespace}:{name}`.
    let publisher = host_of(&state.public_base);
    let mut entries = vec![json!({
        "identifier": format!("urn:air:{publisher}:mcp:dealer-agent-gateway"),
        "type": CARD_MEDIA_TYPE,
        "url": format!("{}/mcp{CARD_SUFFIX}", state.public_base),
    })];
    match state.directory.snapshot().await {
        Ok(snapshot) => {
            for org in &snapshot.organizations {
                if !Principal::Anonymous.visible_rooftops(org).is_empty() {
                    let id = &org.organization_id;
                    entries.push(json!({
                        "identifier": format!("urn:air:{publisher}:mcp:aap.{}", id.replace(':', "_")),
                        "type": CARD_MEDIA_TYPE,
                        "url": format!("{}{}{CARD_SUFFIX}", state.public_base, crate::mcp::aap::path(id)),
                    }));
                }
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "AI Catalog unavailable: the directory is unavailable");
            let body = json!({
                "type": "urn:dealer-agent-gateway:problem:store-unavailable",
                "title": "Temporarily unavailable",
                "status": 503,
                "detail": "The dealer directory is unavailable; retry shortly.",
            });
            let mut r = (
                StatusCode::SERVICE_UNAVAILABLE,
                serde_json::to_vec(&body).unwrap_or_default(),
            )
                .into_response();
            let headers = r.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/problem+json"),
            );
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            return r;
        }
    }
    let doc = json!({"specVersion": "1.0", "entries": entries});
    card_response(&request, &doc, CATALOG_MEDIA_TYPE, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_reverse_the_host() {
        assert_eq!(
            namespace_of("https://dealers.example.com"),
            "com.example.dealers"
        );
        assert_eq!(
            namespace_of("https://Dealers.Example.com:8443/x"),
            "com.example.dealers"
        );
        assert_eq!(namespace_of("http://127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(namespace_of("http://[::1]:8080"), "--1");
        assert_eq!(namespace_of("http://localhost:1"), "localhost");
        assert_eq!(namespace_of(""), "localhost");
    }

    #[test]
    fn descriptions_fit_the_card_schema() {
        for d in [DAP_DESCRIPTION, AAP_DESCRIPTION, TITLE, AAP_TITLE] {
            assert!(!d.is_empty() && d.chars().count() <= 100, "{d}");
        }
    }

    #[test]
    fn card_names_match_the_schema_pattern() {
        let catalog = Catalog::load().expect("catalog");
        let ok = |n: &str| {
            let (ns, server) = n.split_once('/').expect("one slash");
            !ns.is_empty()
                && !server.contains('/')
                && ns
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
                && server
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
                && (3..=200).contains(&n.len())
        };
        for base in [
            "https://dealers.example.com",
            "http://127.0.0.1:9",
            "http://[::1]:9",
        ] {
            assert!(ok(dap_card(&catalog, base)["name"].as_str().unwrap()));
            let aap = aap_card(&catalog, base, "org.a:b");
            assert!(ok(aap["name"].as_str().unwrap()), "{aap}");
        }
    }
}
