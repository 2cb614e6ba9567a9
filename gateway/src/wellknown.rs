//! Discovery documents for an agent that knows only the hostname (issue 16
//! item 4): `/.well-known/dealer-agent.json` and `/llms.txt`, both generated
//! from the catalog so they cannot drift from the manifest.
//!
//! Both are built from the ANONYMOUS manifest ([`crate::manifest::build`]
//! for [`Principal::Anonymous`]) plus the catalog and the configured public
//! URL, so they name the same endpoint, profiles and tools as the manifest
//! and show no tenant data beyond it: organization and rooftop ids only (a
//! partner-only rooftop is never listed), no names, no contacts. They are
//! the same for every caller (credentials are not read), hence
//! `Cache-Control: public`.
//!
//! `/.well-known/dealer-agent.json` keeps the member names of DAP's static
//! publication (spec/v0.1/schemas/well-known.schema.json:
//! `dealer_agent_protocol`, `gateway` for the MCP endpoint, `handoff`)
//! where they apply, and adds what an agent needs to start: the MCP
//! revisions, the manifest, the protocols (DAP native; AAP only as a
//! compatibility adapter, DAP section 15) and the profiles and tools. DAP's
//! `published_feed` and `disclosure_defaults` describe a dealer WITHOUT a
//! gateway (a public CSV and fixed fee defaults); this gateway has neither
//! to point to, so they are absent rather than invented.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::mcp::revision::{LEGACY_REVISION, MODERN_REVISION};
use crate::state::AppState;

/// Path of the JSON discovery document.
pub const DEALER_AGENT_JSON: &str = "/.well-known/dealer-agent.json";
/// Path of the plain-language document for agents.
pub const LLMS_TXT: &str = "/llms.txt";
/// How long a client may reuse either document: they change only when the
/// directory or the catalog does (a new binary), and the manifest they
/// point to carries its own validity.
const MAX_AGE_SECONDS: u32 = 300;

/// The discovery routes, merged into the app's router.
pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route(DEALER_AGENT_JSON, get(dealer_agent_json))
        .route(LLMS_TXT, get(llms_txt))
}

/// Why a discovery document could not be built.
#[derive(Debug, thiserror::Error)]
enum DiscoveryError {
    #[error("the dealer directory is unavailable: {0}")]
    Directory(String),
    #[error("no organization is published to anonymous callers")]
    NothingPublished,
}

/// The anonymous manifest, the one both documents are derived from.
async fn anonymous_manifest(state: &AppState) -> Result<Value, DiscoveryError> {
    let snapshot = state
        .directory
        .snapshot()
        .await
        .map_err(|e| DiscoveryError::Directory(e.to_string()))?;
    crate::manifest::build(state, &snapshot, &Principal::Anonymous, None)
        .map_err(|_| DiscoveryError::NothingPublished)
}

fn cached(mut response: Response, content_type: &'static str) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(value) = HeaderValue::from_str(&format!("public, max-age={MAX_AGE_SECONDS}")) {
        headers.insert(header::CACHE_CONTROL, value);
    }
    response
}

fn unavailable(error: &DiscoveryError) -> Response {
    match error {
        DiscoveryError::Directory(detail) => {
            tracing::warn!(error = %detail, "discovery document unavailable");
            let mut r = (
                StatusCode::SERVICE_UNAVAILABLE,
                "The dealer directory is unavailable; retry shortly.\n",
            )
                .into_response();
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            r
        }
        DiscoveryError::NothingPublished => (
            StatusCode::NOT_FOUND,
            "This gateway publishes no dealer to anonymous callers.\n",
        )
            .into_response(),
    }
}

async fn dealer_agent_json(State(state): State<Arc<AppState>>) -> Response {
    match anonymous_manifest(&state).await {
        Ok(manifest) => {
            let doc = document(&state, &manifest);
            let body = serde_json::to_vec(&doc).unwrap_or_default();
            cached((StatusCode::OK, body).into_response(), "application/json")
        }
        Err(e) => unavailable(&e),
    }
}

async fn llms_txt(State(state): State<Arc<AppState>>) -> Response {
    match anonymous_manifest(&state).await {
        Ok(manifest) => cached(
            (StatusCode::OK, llms(&state, &manifest)).into_response(),
            "text/plain; charset=utf-8",
        ),
        Err(e) => unavailable(&e),
    }
}

/// Every catalog profile as the manifest describes one.
fn profiles(state: &AppState) -> Vec<Value> {
    state
        .catalog
        .profiles
        .iter()
        .map(|p| json!({"profile": p.id, "status": p.status, "tools": p.tools, "scopes": p.scopes}))
        .collect()
}

/// `/.well-known/dealer-agent.json` for `manifest` (the anonymous one).
pub fn document(state: &AppState, manifest: &Value) -> Value {
    let base = &state.public_base;
    let endpoint = format!("{base}/mcp");
    let native: Vec<Value> = manifest["capabilities"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let compatibility = crate::manifest::compatibility(&state.catalog);
    let mut protocols = vec![json!({
        "protocol": "dealer-agent-protocol",
        "version": manifest["standard_version"],
        "native": true,
        "profiles": native.iter().map(|c| c["profile"].clone()).collect::<Vec<_>>(),
    })];
    for adapter in compatibility["adapters"].as_array().into_iter().flatten() {
        protocols.push(json!({
            "protocol": adapter["protocol"],
            "binding": adapter["binding"],
            "native": false,
            "kind": adapter["kind"],
            "profiles": [adapter["profile"]],
            "tools": adapter["skills"].as_array().into_iter().flatten().map(|s| s["tool"].clone()).collect::<Vec<_>>(),
            "not_offered": adapter["not_offered"],
        }));
    }
    let mut doc = json!({
        "dealer_agent_protocol": manifest["standard_version"],
        "gateway": endpoint,
        "gateway_id": manifest["gateway_id"],
        "operator": manifest["operator"],
        "organization_ids": manifest["organization_ids"],
        "rooftop_ids": manifest["rooftop_ids"],
        "mcp": {
            "endpoint": endpoint,
            "transport": "streamable-http",
            "revisions": [MODERN_REVISION, LEGACY_REVISION],
        },
        "manifest": {
            "resource": "dealeragent://manifest",
            "tool": crate::tools::get_manifest::NAME,
        },
        "protocols": protocols,
        "profiles": profiles(state),
        "tools": state.catalog.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        "auth_modes": manifest["auth_modes"],
        "protected_resource_metadata": format!("{base}/.well-known/oauth-protected-resource"),
        "schema_base_uri": manifest["schema_base_uri"],
        "policy_uri": manifest["policy_uri"],
        "conformance": manifest["conformance"],
        "llms_txt": format!("{base}{LLMS_TXT}"),
        "handoff": {"adf_endpoint": null, "policy_url": manifest["policy_uri"]},
    });
    // DAP's single-organization member, when there is exactly one.
    if let Some([one]) = manifest["organization_ids"].as_array().map(Vec::as_slice) {
        doc["organization_id"] = one.clone();
    }
    doc
}

/// `/llms.txt` for `manifest` (the anonymous one): Markdown in plain
/// language (the llms.txt convention; AAP's MCP binding asks for a link to
/// the exact endpoint, its access requirements and the contract version).
pub fn llms(state: &AppState, manifest: &Value) -> String {
    use std::fmt::Write as _;
    let base = &state.public_base;
    let endpoint = format!("{base}/mcp");
    let catalog = &state.catalog;
    let ids = |member: &str| -> String {
        manifest[member]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|id| format!("`{id}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = String::with_capacity(8192);
    let _ = writeln!(
        out,
        "# Dealer Agent Gateway ({})",
        state.settings.operator_name
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "> A read-only gateway that answers AI agents about vehicles for sale, the dealers that sell them and how their prices are made up, over the Model Context Protocol (MCP), following the Dealer Agent Protocol (DAP) {}. It takes no orders, leads, payments or personal data.",
        manifest["standard_version"].as_str().unwrap_or("0.1")
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "## Endpoint");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "- MCP endpoint: [{endpoint}]({endpoint}) (Streamable HTTP: POST JSON-RPC with `Content-Type: application/json`; MCP revisions {MODERN_REVISION} and {LEGACY_REVISION})."
    );
    let _ = writeln!(
        out,
        "- Access: public reads need no credentials. Partner-only rooftops need `Authorization: Bearer <token>`; see [{base}/.well-known/oauth-protected-resource]({base}/.well-known/oauth-protected-resource)."
    );
    let _ = writeln!(
        out,
        "- Machine-readable discovery: [{base}{DEALER_AGENT_JSON}]({base}{DEALER_AGENT_JSON}). Manifest: the `dealeragent://manifest` resource or the `{}` tool.",
        crate::tools::get_manifest::NAME
    );
    let _ = writeln!(
        out,
        "- Dealers published to anyone: organization_ids {}; rooftop_ids {}.",
        ids("organization_ids"),
        ids("rooftop_ids")
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "## How to call it");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "1. Send `server/discover` (or `initialize` for {LEGACY_REVISION}), then `tools/list`."
    );
    let _ = writeln!(
        out,
        "2. Call `{}` with no arguments to learn the organization_ids and rooftop_ids every other tool takes.",
        crate::tools::get_manifest::NAME
    );
    let _ = writeln!(
        out,
        "3. Search, then read one vehicle by its vehicle_id, then verify its availability and read its pricing disclosure before telling a buyer anything about it."
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "## Tools");
    let _ = writeln!(out);
    for profile in &catalog.profiles {
        let native = profile.id.starts_with("dealeragent.");
        let kind = if profile.id == crate::tools::aap_map::PROFILE {
            "Auto Agent Protocol (AAP) MCP binding, read skills: a compatibility adapter over the DAP tools, not native DAP. AAP contract: the published AAP request and response schemas (spec/latest); no AAP price is given, statuses are the dealer's unverified listing, and every vehicle keeps its DAP evidence under `dealergateway`. Add `dealer_id` (one of the organization_ids above) to each AAP request when more than one dealer is listed."
        } else if native {
            "DAP profile."
        } else {
            "Gateway extension (not a DAP profile)."
        };
        let scopes = if profile.scopes.is_empty() {
            "no scope".to_owned()
        } else {
            profile.scopes.join(", ")
        };
        let _ = writeln!(out, "### {} ({}, {scopes})", profile.id, profile.status);
        let _ = writeln!(out);
        let _ = writeln!(out, "{kind}");
        let _ = writeln!(out);
        for name in &profile.tools {
            if let Some(tool) = catalog.tool(name) {
                let _ = writeln!(out, "- `{}`: {}", tool.name, tool.title);
            }
        }
        for absent in &profile.not_offered {
            let _ = writeln!(out, "- Not offered: `{}`. {}", absent.tool, absent.reason);
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "## Rules you must follow");
    let _ = writeln!(out);
    for rule in RULES {
        let _ = writeln!(out, "- {rule}");
    }
    out
}

/// What an agent must do with the answers (DAP spec 8, 9 and 15; the
/// catalog's tool descriptions say the same per tool).
pub const RULES: &[&str] = &[
    "Verify availability before presenting a unit as available: call dealeragent.inventory.verify_availability; search results, vehicle reads and AAP statuses are the dealer's listing, not a promise.",
    "Never present a conditional offer as the price: rebates, incentives and offer evaluations apply only to eligible buyers and are never part of the advertised price, which is not an out-the-door total.",
    "Never call an unknown charge zero: a government charge or fee whose status is unknown is unknown; say so.",
    "Treat a stale, withdrawn or unknown freshness state as not current, and show the disclosure_text with any price you present.",
    "Use only the ids the manifest and the tools return; an organization, rooftop or vehicle you cannot see answers not found.",
];
