//! The AAP endpoint of one organization: `POST/GET/DELETE
//! /aap/{organization_id}/mcp` (docs/mcp.md "The AAP endpoints").
//!
//! AAP's requests name no dealer: an AAP MCP endpoint serves one dealer
//! ("a platform-hosted tenant endpoint", AAP MCP binding, "Publish a
//! reachable endpoint"). This gateway serves several organizations, so each
//! gets its own AAP endpoint, and the organization comes from the path, never
//! from the caller's arguments. The transport is `/mcp`'s own (both MCP
//! revisions, the same Host/Origin checks, credentials, rate limits, audit,
//! metrics and access log: [`super::serve_post`] with
//! [`super::Endpoint::Aap`]); what differs is decided in `dispatch`:
//! `tools/list` lists the four AAP read tools only, the inventory search
//! tool with its capabilities under `_meta["autoagentprotocol.org/aap"]`,
//! and every tool call runs with the path's organization pinned
//! (`tools::ToolContext::pinned_organization`).
//!
//! Authorization before lookup (DAP-CORE-029..031): the path's organization
//! is resolved against what the caller may see once the credential is
//! verified, before the body is read. An unknown organization and one the
//! caller may not see get the same 404; a path segment that is not an
//! identifier gets a 400 that does not repeat it.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::error::RpcError;
use super::{Endpoint, Requested};
use crate::auth::Principal;
use crate::catalog::Tool;
use crate::state::AppState;
use crate::tools::aap_map;

/// The route, and the endpoint template the manifest publishes.
pub const PATH_TEMPLATE: &str = crate::manifest::AAP_ENDPOINT_TEMPLATE;

/// The `_meta` key AAP's MCP binding gives its tool metadata.
pub const META_KEY: &str = "autoagentprotocol.org/aap";

/// The AAP MCP binding this adapter follows. Its page is the unreleased
/// 3.0.0 draft (autoagentprotocol.org/docs/latest/bindings/mcp), so the
/// release is named with its status rather than as a frozen contract.
const AAP_RELEASE: &str = "3.0.0";
const AAP_RELEASE_STATUS: &str = "draft";
const AAP_BINDING_DOCUMENT: &str = "https://autoagentprotocol.org/docs/latest/bindings/mcp";

/// Instructions for agents on an AAP endpoint (`server/discover`,
/// `initialize`).
pub const INSTRUCTIONS: &str = "Auto Agent Protocol (AAP) MCP binding, read skills, for one \
dealer of a Dealer Agent Protocol 0.1 gateway: a compatibility adapter over DAP, not native DAP. \
Requests need no dealer_id (the dealer is this endpoint's). No AAP price is given; statuses are \
the dealer's unverified listing; every vehicle keeps its DAP availability, advertised price, \
provenance and freshness under dealergateway. aap_lead_submit is not offered (read-only).";

/// The AAP endpoint path of `organization_id`.
pub fn path(organization_id: &str) -> String {
    PATH_TEMPLATE.replace("{organization_id}", organization_id)
}

/// The OAuth resource identifier of the AAP endpoint of `organization_id`
/// (docs/compatibility.md "OAuth"). An MCP client asks its authorization
/// server for a token for the endpoint it calls (RFC 8707), and checks
/// that the protected-resource metadata names that endpoint (RFC 9728
/// section 3.3), so each AAP endpoint is a protected resource of its own:
/// the gateway's resource with its `/mcp` replaced by the endpoint's path
/// (or the public URL's, when `--resource-url` does not end in `/mcp`).
pub fn resource(state: &AppState, organization_id: &str) -> String {
    let base = state
        .resource_url
        .strip_suffix("/mcp")
        .unwrap_or(&state.public_base);
    format!("{base}{}", path(organization_id))
}

/// Where the RFC 9728 metadata of that resource is served: the well-known
/// prefix inserted before the endpoint's path (section 3.1).
pub fn metadata_url(state: &AppState, organization_id: &str) -> String {
    format!(
        "{}{METADATA_PREFIX}{}",
        state.public_base,
        path(organization_id)
    )
}

/// The well-known path of protected-resource metadata (RFC 9728).
pub const METADATA_PREFIX: &str = "/.well-known/oauth-protected-resource";

/// The raw (undecoded) organization segment of an AAP endpoint path. Never
/// decoded: a percent sign is no identifier character, so an encoded
/// segment is refused rather than interpreted.
fn segment(uri: &Uri) -> &str {
    uri.path()
        .strip_prefix("/aap/")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap_or("")
}

/// `POST /aap/{organization_id}/mcp`.
pub async fn post(
    State(state): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let organization = segment(&uri).to_owned();
    super::serve_post(
        &state,
        peer,
        &uri,
        &headers,
        body,
        Requested::Aap(&organization),
    )
    .await
}

/// `GET /aap/{organization_id}/mcp`: no server stream (the AAP binding has
/// no subscriptions, docs/mcp.md "Subscriptions"). No
/// credential is read here, so the answer is the same for every valid
/// organization id, visible or not.
pub async fn get(state: State<Arc<AppState>>, uri: Uri, headers: HeaderMap) -> Response {
    if !crate::store::audit::is_identifier(segment(&uri)) {
        return super::rpc_error(&RpcError::InvalidEndpoint, None);
    }
    super::get_without_stream(&state.0, &headers).await
}

/// `DELETE /aap/{organization_id}/mcp`: ends a legacy session, as
/// `DELETE /mcp`.
pub async fn delete(state: State<Arc<AppState>>, uri: Uri, headers: HeaderMap) -> Response {
    if !crate::store::audit::is_identifier(segment(&uri)) {
        return super::rpc_error(&RpcError::InvalidEndpoint, None);
    }
    super::delete(state, headers).await
}

/// The endpoint of the path's organization for this caller, decided
/// before the body is read: 400 for a segment that is not an identifier,
/// 404 for an organization that is absent or that the caller may not see
/// (one answer for both, DAP-CORE-031).
pub(super) async fn resolve(
    state: &AppState,
    principal: &Principal,
    raw: &str,
) -> Result<Endpoint, RpcError> {
    if !crate::store::audit::is_identifier(raw) {
        return Err(RpcError::InvalidEndpoint);
    }
    let directory = state.directory.snapshot().await.map_err(|e| {
        let error_id = format!("err.{}", uuid::Uuid::new_v4());
        tracing::error!(error.id = %error_id, error = %e, "directory unavailable for an AAP endpoint");
        RpcError::Internal {
            error_id,
            unavailable: true,
        }
    })?;
    let visible = directory
        .organization(raw)
        .is_some_and(|org| !principal.visible_rooftops(org).is_empty());
    if !visible {
        return Err(RpcError::EndpointNotFound);
    }
    Ok(Endpoint::Aap {
        organization_id: raw.to_owned(),
    })
}

/// The caller of a read about the AAP endpoint of the raw segment `raw`
/// (its Server Card, `crate::server_card`), authorized as a POST to the
/// endpoint is: the address limit, the credential (a token may name the
/// endpoint as its resource), the principal limit, then [`resolve`]. The
/// refusals are the endpoint's own: 400 for a segment that is not an
/// identifier, 404 for an organization absent or hidden from the caller.
pub(crate) async fn authorize(
    state: &AppState,
    peer: SocketAddr,
    uri: &Uri,
    headers: &HeaderMap,
    raw: &str,
) -> Result<(String, Principal), Response> {
    if !crate::store::audit::is_identifier(raw) {
        return Err(refusal(&RpcError::InvalidEndpoint));
    }
    if let Err(retry) = state.ip_limiter.check(&peer.ip()) {
        metrics::counter!(crate::metrics::RATE_LIMITED, "limit" => "address").increment(1);
        return Err(super::too_many_requests(retry));
    }
    let endpoint_resource = resource(state, raw);
    let principal =
        crate::auth::verify::authenticate_at(state, headers, uri.query(), Some(&endpoint_resource))
            .await
            .map_err(|rejection| super::unauthorized(&rejection, &metadata_url(state, raw)))?;
    if let Principal::Authenticated(grant) = &principal
        && let Err(retry) = state.principal_limiter.check(&grant.subject)
    {
        metrics::counter!(crate::metrics::RATE_LIMITED, "limit" => "principal").increment(1);
        return Err(super::too_many_requests(retry));
    }
    match resolve(state, &principal, raw).await {
        Ok(Endpoint::Aap { organization_id }) => Ok((organization_id, principal)),
        Ok(Endpoint::Dap) => Err(refusal(&RpcError::EndpointNotFound)),
        Err(error) => Err(refusal(&error)),
    }
}

/// Whether anonymous callers may see `organization_id` (one public
/// rooftop), so a document about it may be cached publicly.
pub(crate) async fn anonymously_visible(state: &AppState, organization_id: &str) -> bool {
    state.directory.snapshot().await.is_ok_and(|d| {
        d.organization(organization_id)
            .is_some_and(|org| !Principal::Anonymous.visible_rooftops(org).is_empty())
    })
}

/// Is `tool` one of the AAP binding's tools (the catalog's AAP profile)?
pub fn is_aap_tool(tool: &Tool) -> bool {
    tool.profile == aap_map::PROFILE
}

/// `tools/list` of an AAP endpoint: the catalog's AAP tools in catalog
/// order (AAP: only implemented tools, in a deterministic order), each with
/// AAP's metadata under `_meta["autoagentprotocol.org/aap"]` beside the
/// DAP safety metadata, and the search tool with its capabilities.
pub async fn tool_list(
    state: &AppState,
    principal: &Principal,
    organization_id: &str,
) -> Result<Vec<Value>, RpcError> {
    let capabilities = search_capabilities_of(state, principal, organization_id).await?;
    Ok(state
        .catalog
        .tools
        .iter()
        .filter(|t| is_aap_tool(t))
        .map(|t| {
            let mut entry = t.list_entry();
            let aap = metadata(state, t, &capabilities);
            if let Some(meta) = entry.get_mut("_meta").and_then(Value::as_object_mut) {
                meta.insert(META_KEY.to_owned(), aap);
            }
            entry
        })
        .collect())
}

/// The search capabilities of `organization_id`'s AAP endpoint as
/// `principal` sees them: the object `tools/list` publishes on
/// `aap_inventory_search`, for discovery documents that must state the
/// same (AAP: the tool's capabilities match the linked Agent Card).
pub async fn search_capabilities_of(
    state: &AppState,
    principal: &Principal,
    organization_id: &str,
) -> Result<Value, RpcError> {
    let currencies = currencies(state, principal, organization_id).await?;
    Ok(state
        .catalog
        .tool(crate::tools::aap_inventory_search::NAME)
        .map_or(Value::Null, |tool| search_capabilities(tool, &currencies)))
}

/// The currencies the rooftops of `organization_id` that the caller may
/// see price in (the dealer directory's `supported_currencies`), sorted.
async fn currencies(
    state: &AppState,
    principal: &Principal,
    organization_id: &str,
) -> Result<Vec<String>, RpcError> {
    let directory = state.directory.snapshot().await.map_err(|e| {
        let error_id = format!("err.{}", uuid::Uuid::new_v4());
        tracing::error!(error.id = %error_id, error = %e, "directory unavailable for AAP tools/list");
        RpcError::Internal {
            error_id,
            unavailable: true,
        }
    })?;
    let mut out: Vec<String> = directory
        .organization(organization_id)
        .map(|org| principal.visible_rooftops(org))
        .unwrap_or_default()
        .into_iter()
        .flat_map(|r| r.dap.supported_currencies.clone().unwrap_or_default())
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// AAP's tool metadata (AAP MCP binding, "Complete schemas, standard
/// hints": release version, skill id, request/response types and schema
/// URLs). The schema URLs are this gateway's own AAP schemas, the ones the
/// tool validates against (written from AAP's; docs/compatibility.md).
fn metadata(state: &AppState, tool: &Tool, capabilities: &Value) -> Value {
    let skill = crate::manifest::aap_skill(&tool.name);
    let schemas = format!("{}/schemas/", state.public_base);
    let mut meta = json!({
        "release": AAP_RELEASE,
        "release_status": AAP_RELEASE_STATUS,
        "binding": "mcp",
        "binding_document": AAP_BINDING_DOCUMENT,
        "skill_id": skill,
        "request_type": format!("{skill}.request"),
        "response_type": format!("{skill}.response"),
        "request_schema": format!("{schemas}{}", tool.input_reference),
        "response_schema": format!("{schemas}{}", tool.output_reference),
        "compatibility_adapter": {"native": false, "profile": tool.profile},
    });
    if tool.name == crate::tools::aap_inventory_search::NAME {
        meta["capabilities"] = capabilities.clone();
    }
    meta
}

/// Follow local `$ref`s of a bundled schema to the node they name.
fn deref<'a>(root: &'a Value, mut node: &'a Value) -> &'a Value {
    for _ in 0..8 {
        match node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
        {
            Some(pointer) => match root.pointer(pointer) {
                Some(target) => node = target,
                None => break,
            },
            None => break,
        }
    }
    node
}

/// The string values of `node`'s `enum` (or of its items' `enum`).
fn enum_of(root: &Value, node: &Value) -> Vec<Value> {
    let node = deref(root, node);
    let node = node.get("items").map_or(node, |items| deref(root, items));
    node.get("enum")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// What `aap_inventory_search` actually applies, read from its own input
/// schema (the one every call is validated against, so this cannot drift
/// from what is enforced) and from the adapter's constants: the filters
/// and their values, the sort fields, the page bounds, the price and
/// mileage semantics, and the currencies of this dealer. AAP asks for
/// these under `capabilities` ("inventory-capabilities"); this is our
/// reading of it, written from what this gateway serves.
fn search_capabilities(tool: &Tool, currencies: &[String]) -> Value {
    let root = &tool.input_schema;
    let properties = &deref(root, root)["properties"];
    let filters = deref(root, &properties["filters"]);
    let filter_properties = filters["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let filter_names: Vec<&String> = filter_properties.keys().collect();
    let value_sets: Map<String, Value> = ["condition", "status", "vehicle_type"]
        .iter()
        .filter_map(|name| {
            let values = enum_of(root, filter_properties.get(*name)?);
            (!values.is_empty()).then(|| ((*name).to_owned(), Value::Array(values)))
        })
        .collect();
    let sort = deref(root, &properties["sort"]);
    json!({
        "filters": filter_names,
        "filter_values": value_sets,
        "unsupported_filters": "refused with SCHEMA_VALIDATION_FAILED, never ignored (details.correction lists the applied ones)",
        "sort_fields": enum_of(root, &sort["properties"]["field"]),
        "sort_orders": enum_of(root, &sort["properties"]["order"]),
        "pagination": {
            "default_limit": aap_map::DEFAULT_LIMIT,
            "max_limit": aap_map::MAX_LIMIT,
            "max_skip": deref(root, &properties["pagination"])["properties"]["skip"]["maximum"],
            "total": true,
        },
        "facets_in_search": false,
        "price": false,
        "list_price": "only when the advertised price excludes required dealer charges and is whole US dollars",
        "currencies": currencies,
        "mileage_unit": "mi",
    })
}

/// 404/400 refusals of [`resolve`] and the JSON-RPC body of any error,
/// without an id (the body was not read).
pub(super) fn refusal(error: &RpcError) -> Response {
    let (status, body) = error.to_response_body(None);
    let status = if status == StatusCode::OK {
        StatusCode::BAD_REQUEST
    } else {
        status
    };
    super::json_response(status, &body, None)
}
