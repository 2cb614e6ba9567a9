//! Discovery documents for an agent that knows only the hostname
//! (docs/operations.md "The static publication"), all generated from the
//! directory, the catalog and the anonymous manifest, so they cannot drift
//! from what the gateway serves:
//!
//! - `/.well-known/dealer-agent.json`: DAP's static publication (DAP 0.1
//!   discovery section 4, spec/v0.1/schemas/well-known.schema.json;
//!   ours: schemas/well-known.schema.json, no looser) for ONE organization:
//!   its public rooftops, this gateway's MCP endpoint, the organization's
//!   published inventory feed ([`crate::feed_export`]), its disclosure
//!   defaults and no handoff (the gateway is read-only). DAP's schema is
//!   closed, so nothing of ours goes in it;
//! - `/.well-known/dealer-agent-gateway.json`: this gateway's own discovery
//!   document (schemas/dealer-agent-gateway.schema.json): the MCP endpoint
//!   and revisions, the manifest, the protocols (DAP native, AAP only as a
//!   compatibility adapter, DAP section 15), every profile and tool, auth,
//!   policy, schemas, the conformance claim, the static publication and
//!   every published feed;
//! - `/llms.txt`: the same in plain language, with the rules an agent must
//!   follow;
//! - `/feeds/{organization_id}/inventory.csv`: the feeds
//!   ([`crate::feed_export`]).
//!
//! Everything here is what the anonymous manifest shows: only rooftops
//! published to anonymous callers, never a partner-only rooftop or an
//! organization without a public one (DAP-CORE-031), whatever is
//! configured. The documents are the same for every caller (credentials
//! are not read), hence `Cache-Control: public`, with an ETag (DAP
//! discovery section 4: a publisher SHOULD use one).

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::auth::Principal;
use crate::directory::DirectorySnapshot;
use crate::feed_export::{self, Export};
use crate::mcp::revision::{LEGACY_REVISION, MODERN_REVISION};
use crate::state::AppState;
use crate::store::OrganizationRecord;

/// Path of DAP's static publication.
pub const DEALER_AGENT_JSON: &str = "/.well-known/dealer-agent.json";
/// Path of this gateway's own discovery document.
pub const GATEWAY_JSON: &str = "/.well-known/dealer-agent-gateway.json";
/// Path of the plain-language document for agents.
pub const LLMS_TXT: &str = "/llms.txt";
/// How long a client may reuse a discovery document: they change only when
/// the directory or the catalog does, and the manifest they point to
/// carries its own validity.
const MAX_AGE_SECONDS: u32 = 300;
/// How long a client may reuse a feed: DAP's shortest declarable freshness
/// SLA ([`FEED_SLA_SECONDS_MIN`]), so a cached copy never outlives the
/// declared one; the ETag makes revalidation cheap.
const FEED_MAX_AGE_SECONDS: u32 = 60;
/// The bounds of `published_feed.freshness_sla_seconds` in DAP's
/// well-known schema.
const FEED_SLA_SECONDS_MIN: u32 = 60;
const FEED_SLA_SECONDS_MAX: u32 = 86_400;
/// DAP's handoff and consent surface is an extension this read-only
/// gateway does not serve (DAP section 10): no ADF endpoint, no policy.
const PROBLEM_TYPE_BASE: &str = "urn:dealer-agent-gateway:problem:";

/// The discovery routes and the feeds, merged into the app's router.
pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route(DEALER_AGENT_JSON, get(static_publication))
        .route(GATEWAY_JSON, get(gateway_json))
        .route(LLMS_TXT, get(llms_txt))
        .route(feed_export::ROUTE, get(feed))
}

/// Why a document or feed is not served. Every text is safe to show
/// anyone: it never names an organization without a public rooftop.
#[derive(Debug, thiserror::Error)]
enum Unavailable {
    #[error("the dealer directory is unavailable: {0}")]
    Directory(String),
    #[error("the inventory is unavailable: {0}")]
    Inventory(String),
    /// Nothing at all is published to anonymous callers.
    #[error("no organization is published to anonymous callers")]
    NothingPublished,
    /// `--publication-organization` names an organization that does not
    /// exist or has no public rooftop (the two look the same).
    #[error("the configured publication organization is not published to anonymous callers")]
    ConfiguredNotPublished,
    /// Several public organizations and none configured.
    #[error("{} organizations are published; none is configured", .0.len())]
    Ambiguous(Vec<String>),
    /// A feed path naming no organization with a public rooftop.
    #[error("no published feed at this path")]
    NoFeed,
}

impl Unavailable {
    fn response(&self, base: &str) -> Response {
        let (status, slug, title, detail) = match self {
            Self::Directory(e) | Self::Inventory(e) => {
                tracing::warn!(error = %e, "discovery document or feed unavailable");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store-unavailable",
                    "Temporarily unavailable",
                    "The dealer directory or inventory is unavailable; retry shortly.".to_owned(),
                )
            }
            Self::NothingPublished => (
                StatusCode::NOT_FOUND,
                "nothing-published",
                "No static publication",
                "This gateway publishes no organization to anonymous callers, so there is no DAP static publication.".to_owned(),
            ),
            Self::ConfiguredNotPublished => (
                StatusCode::NOT_FOUND,
                "publication-organization-not-published",
                "No static publication",
                "The organization this gateway is configured to publish (--publication-organization) has no rooftop published to anonymous callers, so there is no DAP static publication.".to_owned(),
            ),
            Self::Ambiguous(ids) => (
                StatusCode::NOT_FOUND,
                "publication-organization-ambiguous",
                "No static publication",
                format!(
                    "{} organizations are published to anonymous callers ({}) and a DAP static publication describes exactly one; the operator names it with --publication-organization. Every organization is served on the MCP endpoint, and each has an inventory feed: see {base}{GATEWAY_JSON}.",
                    ids.len(),
                    ids.join(", ")
                ),
            ),
            Self::NoFeed => (
                StatusCode::NOT_FOUND,
                "feed-not-found",
                "No published feed",
                format!(
                    "No organization publishes an inventory feed at this path; the published feeds are listed in {base}{GATEWAY_JSON}."
                ),
            ),
        };
        let body = json!({
            "type": format!("{PROBLEM_TYPE_BASE}{slug}"),
            "title": title,
            "status": status.as_u16(),
            "detail": detail,
        });
        let mut r = (status, serde_json::to_vec(&body).unwrap_or_default()).into_response();
        let headers = r.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if status == StatusCode::SERVICE_UNAVAILABLE {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        }
        r
    }
}

async fn directory(state: &AppState) -> Result<Arc<DirectorySnapshot>, Unavailable> {
    state
        .directory
        .snapshot()
        .await
        .map_err(|e| Unavailable::Directory(e.to_string()))
}

/// The anonymous manifest, the one the gateway documents derive from.
fn anonymous_manifest(
    state: &AppState,
    snapshot: &DirectorySnapshot,
) -> Result<Value, Unavailable> {
    crate::manifest::build(state, snapshot, &Principal::Anonymous, None)
        .map_err(|_| Unavailable::NothingPublished)
}

fn is_public(org: &OrganizationRecord) -> bool {
    !Principal::Anonymous.visible_rooftops(org).is_empty()
}

/// The organization of the static publication: the configured one when it
/// has a public rooftop; without configuration, the only organization
/// with one. A configured organization that is absent or private answers
/// the same (its existence is not revealed) and tells the operator why.
fn publication_organization<'a>(
    state: &AppState,
    snapshot: &'a DirectorySnapshot,
) -> Result<&'a OrganizationRecord, Unavailable> {
    if let Some(id) = &state.settings.publication_organization {
        return match snapshot.organization(id) {
            Some(org) if is_public(org) => Ok(org),
            found => {
                tracing::warn!(
                    publication_organization = %id,
                    exists = found.is_some(),
                    "--publication-organization names an organization with no rooftop published to anonymous callers; {DEALER_AGENT_JSON} answers 404 until it has one (a private organization is never published)"
                );
                Err(Unavailable::ConfiguredNotPublished)
            }
        };
    }
    let public: Vec<&OrganizationRecord> = snapshot
        .organizations
        .iter()
        .filter(|o| is_public(o))
        .collect();
    match public.as_slice() {
        [] => Err(Unavailable::NothingPublished),
        [one] => Ok(one),
        several => Err(Unavailable::Ambiguous(
            several.iter().map(|o| o.organization_id.clone()).collect(),
        )),
    }
}

/// A strong ETag of a document's bytes.
pub(crate) fn etag_of(bytes: &[u8]) -> String {
    format!("\"{}\"", hex::encode(&Sha256::digest(bytes)[..16]))
}

/// `If-None-Match` names `etag` (or `*`): answer 304.
pub(crate) fn not_modified(request: &HeaderMap, etag: &str) -> bool {
    request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || tag == etag || tag.strip_prefix("W/") == Some(etag))
}

/// The response for a cacheable public body with its validator.
fn cacheable(
    request: &HeaderMap,
    etag: &str,
    max_age: u32,
    content_type: &'static str,
    body: impl FnOnce() -> axum::body::Body,
) -> Response {
    let mut r = if not_modified(request, etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = (StatusCode::OK, body()).into_response();
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        r
    };
    let headers = r.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&format!("public, max-age={max_age}")) {
        headers.insert(header::CACHE_CONTROL, value);
    }
    if let Ok(value) = HeaderValue::from_str(etag) {
        headers.insert(header::ETAG, value);
    }
    r
}

fn document_response(request: &HeaderMap, bytes: Vec<u8>, content_type: &'static str) -> Response {
    let etag = etag_of(&bytes);
    cacheable(request, &etag, MAX_AGE_SECONDS, content_type, || {
        bytes.into()
    })
}

/// A JSON discovery document, or the problem that kept it from being built.
fn json_answer(
    state: &AppState,
    request: &HeaderMap,
    built: Result<Value, Unavailable>,
) -> Response {
    match built {
        Ok(doc) => document_response(
            request,
            serde_json::to_vec(&doc).unwrap_or_default(),
            "application/json",
        ),
        Err(e) => e.response(&state.public_base),
    }
}

async fn static_publication(State(state): State<Arc<AppState>>, request: HeaderMap) -> Response {
    let built = async {
        let snapshot = directory(&state).await?;
        let org = publication_organization(&state, &snapshot)?;
        Ok::<Value, Unavailable>(publication(&state, org))
    };
    json_answer(&state, &request, built.await)
}

async fn gateway_json(State(state): State<Arc<AppState>>, request: HeaderMap) -> Response {
    let built = async {
        let snapshot = directory(&state).await?;
        let manifest = anonymous_manifest(&state, &snapshot)?;
        Ok::<Value, Unavailable>(gateway_document(&state, &snapshot, &manifest))
    };
    json_answer(&state, &request, built.await)
}

async fn llms_txt(State(state): State<Arc<AppState>>, request: HeaderMap) -> Response {
    let built = async {
        let snapshot = directory(&state).await?;
        let manifest = anonymous_manifest(&state, &snapshot)?;
        Ok::<String, Unavailable>(llms(&state, &snapshot, &manifest))
    };
    match built.await {
        Ok(text) => document_response(&request, text.into_bytes(), "text/plain; charset=utf-8"),
        Err(e) => e.response(&state.public_base),
    }
}

async fn feed(
    State(state): State<Arc<AppState>>,
    Path(organization_id): Path<String>,
    request: HeaderMap,
) -> Response {
    let built = async {
        let snapshot = directory(&state).await?;
        // The same rule as every read: an organization without a public
        // rooftop does not exist here (DAP-CORE-031); the path id is never
        // echoed.
        let org = feed_export::public_organization(&snapshot, &organization_id)
            .ok_or(Unavailable::NoFeed)?;
        let view = state
            .inventory
            .view(&snapshot)
            .await
            .map_err(|e| Unavailable::Inventory(e.to_string()))?;
        Ok::<Export, Unavailable>(Export::new(org, &view))
    };
    match built.await {
        Ok(export) => {
            let etag = export.etag().to_owned();
            cacheable(
                &request,
                &etag,
                FEED_MAX_AGE_SECONDS,
                feed_export::CONTENT_TYPE,
                || export.body(),
            )
        }
        Err(e) => e.response(&state.public_base),
    }
}

/// A required dealer charge as DAP's static publication states a default
/// (`label`, `amount_minor`, `currency`, `included_in_advertised_price`;
/// DAP's shape has no payee). `None` for a charge missing one of them
/// (the dealers file validates charges, so only a corrupt store).
fn default_charge(charge: &crate::dap::DealerCharge) -> Option<Value> {
    Some(json!({
        "label": charge.name,
        "amount_minor": charge.amount.amount_minor(),
        "currency": charge.amount.currency().code(),
        "included_in_advertised_price": charge.included_in_advertised_price,
    }))
}

/// DAP's static publication of `org` (which has public rooftops).
pub fn publication(state: &AppState, org: &OrganizationRecord) -> Value {
    let base = &state.public_base;
    let public = Principal::Anonymous.visible_rooftops(org);
    let rooftops: Vec<Value> = public
        .iter()
        .map(|r| json!({"rooftop_id": r.rooftop_id, "name": r.dap.name}))
        .collect();
    // The feed is written from the live snapshots on every request, so it
    // is exactly as fresh as each rooftop's newest import, which is within
    // that rooftop's inventory SLA. DAP: the declared SLA SHOULD be no
    // shorter than the real schedule, so the largest SLA of the rooftops.
    // DAP's schema bounds it to 60..=86400: a shorter SLA is declared as
    // 60 (longer than the real one, which DAP allows); a longer one can
    // only be declared as 86400, the most the schema can say.
    let sla = public
        .iter()
        .map(|r| r.settings.freshness_sla_seconds.inventory)
        .max()
        .unwrap_or(FEED_SLA_SECONDS_MIN)
        .clamp(FEED_SLA_SECONDS_MIN, FEED_SLA_SECONDS_MAX);
    // Disclosure defaults speak for the whole organization. A default
    // charge is one every public rooftop configures identically (label,
    // amount, currency, inclusion); when the rooftops disagree, the charges
    // they do not share are no organization default and are not invented
    // as one: every row of the feed carries its own rooftop's charges in
    // required_dealer_charges_json instead (feed_export). A rooftop with no
    // configured charges shares none. Government charges: the gateway has
    // estimates only per buyer jurisdiction a rooftop configured, and a
    // buyer elsewhere gets `unknown`; no other status is true of every
    // buyer, so the default is `unknown`, never a zero.
    let mut shared: Vec<Value> = Vec::new();
    if let Some((first, rest)) = public.split_first() {
        let of = |r: &crate::store::RooftopRecord| -> Vec<Value> {
            r.settings
                .pricing
                .required_dealer_charges
                .iter()
                .filter_map(default_charge)
                .collect()
        };
        let others: Vec<Vec<Value>> = rest.iter().map(|r| of(r)).collect();
        for charge in of(first) {
            if others.iter().all(|o| o.contains(&charge)) && !shared.contains(&charge) {
                shared.push(charge);
            }
        }
    }
    json!({
        "dealer_agent_protocol": "0.1",
        "organization_id": org.organization_id,
        "rooftops": rooftops,
        "gateway": format!("{base}/mcp"),
        "published_feed": {
            "format": feed_export::FORMAT,
            "url": format!("{base}{}", feed_export::path(&org.organization_id)),
            "freshness_sla_seconds": sla,
            // DAP-CSV-001, DAP-DISC-003: a file is always asserted.
            "authority": "asserted",
        },
        "disclosure_defaults": {
            "required_dealer_charges": shared,
            "government_charges": "unknown",
        },
        // Read-only: no lead handoff, so no ADF endpoint and no handoff
        // policy (DAP section 10).
        "handoff": {"adf_endpoint": null, "policy_url": null},
    })
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

/// The published feed of every organization of `manifest` (the anonymous
/// one lists exactly the organizations with a public rooftop).
fn feeds(state: &AppState, manifest: &Value) -> Vec<Value> {
    manifest["organization_ids"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|id| {
            json!({
                "organization_id": id,
                "format": feed_export::FORMAT,
                "url": format!("{}{}", state.public_base, feed_export::path(id)),
                "authority": "asserted",
            })
        })
        .collect()
}

/// `/.well-known/dealer-agent-gateway.json` for `manifest` (the anonymous
/// one).
pub fn gateway_document(state: &AppState, snapshot: &DirectorySnapshot, manifest: &Value) -> Value {
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
        "endpoint": endpoint,
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
        // An adapter served per organization (the AAP binding: requests
        // name no dealer, so the endpoint does) names its template and the
        // endpoint of every organization the anonymous manifest lists.
        if let (Some(template), Some(entry)) = (adapter["endpoint"].as_str(), protocols.last_mut())
        {
            entry["endpoint_template"] = json!(template);
            entry["endpoints"] = json!(
                per_organization_endpoints(base, template, manifest)
                    .into_iter()
                    .map(|(organization_id, endpoint)| json!({
                        // Each AAP endpoint is a protected resource of its
                        // own (docs/jwt.md "MCP authorization").
                        "protected_resource_metadata":
                            crate::mcp::aap::metadata_url(state, &organization_id),
                        "organization_id": organization_id,
                        "endpoint": endpoint,
                    }))
                    .collect::<Vec<_>>()
            );
        }
    }
    let publication = publication_organization(state, snapshot)
        .ok()
        .map(|o| o.organization_id.clone());
    json!({
        "dealer_agent_protocol": manifest["standard_version"],
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
        "static_publication": {
            "uri": format!("{base}{DEALER_AGENT_JSON}"),
            "organization_id": publication,
        },
        "feeds": feeds(state, manifest),
        "llms_txt": format!("{base}{LLMS_TXT}"),
    })
}

/// `/llms.txt` for `manifest` (the anonymous one): Markdown in plain
/// language (the llms.txt convention; AAP's MCP binding asks for a link to
/// the exact endpoint, its access requirements and the contract version).
pub fn llms(state: &AppState, snapshot: &DirectorySnapshot, manifest: &Value) -> String {
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
    let compatibility = crate::manifest::compatibility(&state.catalog);
    for adapter in compatibility["adapters"].as_array().into_iter().flatten() {
        let Some(template) = adapter["endpoint"].as_str() else {
            continue;
        };
        let links: Vec<String> = per_organization_endpoints(base, template, manifest)
            .into_iter()
            .map(|(org, url)| format!("[{org}]({url})"))
            .collect();
        if !links.is_empty() {
            let _ = writeln!(
                out,
                "- Auto Agent Protocol clients (MCP binding, a compatibility adapter, not native DAP): one endpoint per dealer, which serves only the AAP read tools and needs no `dealer_id`: {}. The DAP endpoint above does not list them.",
                links.join(", ")
            );
        }
    }
    let _ = writeln!(
        out,
        "- Access: public reads need no credentials. Partner-only rooftops need `Authorization: Bearer <token>`; see [{base}/.well-known/oauth-protected-resource]({base}/.well-known/oauth-protected-resource)."
    );
    let _ = writeln!(
        out,
        "- Machine-readable discovery of this gateway: [{base}{GATEWAY_JSON}]({base}{GATEWAY_JSON}). Manifest: the `dealeragent://manifest` resource or the `{}` tool.",
        crate::tools::get_manifest::NAME
    );
    match publication_organization(state, snapshot) {
        Ok(org) => {
            let _ = writeln!(
                out,
                "- DAP static publication (organization `{}`): [{base}{DEALER_AGENT_JSON}]({base}{DEALER_AGENT_JSON}).",
                org.organization_id
            );
        }
        Err(_) => {
            let _ = writeln!(
                out,
                "- DAP static publication: none at {base}{DEALER_AGENT_JSON} (it describes one organization and none is chosen); use the MCP endpoint."
            );
        }
    }
    let _ = writeln!(
        out,
        "- Dealers published to anyone: organization_ids {}; rooftop_ids {}.",
        ids("organization_ids"),
        ids("rooftop_ids")
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "## Inventory feeds");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Each published organization's vehicles as a DAP Inventory CSV 0.1 file (`{}`), regenerated from the live inventory. A file is the dealer's assertion: its availability_status is a listing, never verified availability, and an empty cell is unknown, never zero.",
        feed_export::FORMAT
    );
    let _ = writeln!(out);
    for f in feeds(state, manifest) {
        let (Some(id), Some(url)) = (f["organization_id"].as_str(), f["url"].as_str()) else {
            continue;
        };
        let _ = writeln!(out, "- `{id}`: [{url}]({url})");
    }
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
    "Verify availability before presenting a unit as available: call dealeragent.inventory.verify_availability; search results, vehicle reads, inventory feeds and AAP statuses are the dealer's listing, not a promise.",
    "Never present a conditional offer as the price: rebates, incentives and offer evaluations apply only to eligible buyers and are never part of the advertised price, which is not an out-the-door total.",
    "Never call an unknown charge zero: a government charge or fee whose status is unknown is unknown; say so.",
    "Treat a stale, withdrawn or unknown freshness state as not current, and show the disclosure_text with any price you present.",
    "Use only the ids the manifest and the tools return; an organization, rooftop or vehicle you cannot see answers not found.",
];

/// `(organization_id, endpoint URL)` of `template` (a path with
/// `{organization_id}`) for every organization the anonymous manifest lists.
fn per_organization_endpoints(
    base: &str,
    template: &str,
    manifest: &Value,
) -> Vec<(String, String)> {
    manifest["organization_ids"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|org| {
            (
                org.to_owned(),
                format!("{base}{}", template.replace("{organization_id}", org)),
            )
        })
        .collect()
}
