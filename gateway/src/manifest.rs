//! The DAP manifest: what this gateway serves, for whom, how fresh.
//!
//! One builder feeds both the `dealeragent.discovery.get_manifest` tool and
//! the `dealeragent://manifest` resource (DAP-CORE-006). For one directory
//! snapshot and one caller view the object is identical: its times derive
//! from the snapshot, not from the request.

use chrono::{Duration, SecondsFormat};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::auth::Principal;
use crate::directory::DirectorySnapshot;
use crate::mcp::revision::{LEGACY_REVISION, MODERN_REVISION};
use crate::state::AppState;
use crate::tools::error::ToolError;

/// The prefix of the profiles DAP's manifest `capabilities` may name.
const DAP_PROFILE_PREFIX: &str = "dealeragent.";

/// How long a manifest stays valid after its directory snapshot was read.
const MANIFEST_VALIDITY: Duration = Duration::hours(1);

/// Where the AAP adapter is served: an endpoint per organization (AAP
/// requests name no dealer). The manifest names it and `mcp::aap` serves it;
/// defined here, below the transport, so the manifest need not import it.
pub const AAP_ENDPOINT_TEMPLATE: &str = "/aap/{organization_id}/mcp";

/// Build the manifest for `principal`, optionally narrowed to one
/// organization. `NotFound` when nothing is visible: a manifest must list at
/// least one organization and rooftop, and an invisible organization looks
/// exactly like an absent one (DAP-CORE-031).
pub fn build(
    state: &AppState,
    snapshot: &DirectorySnapshot,
    principal: &Principal,
    organization_id: Option<&str>,
) -> Result<Value, ToolError> {
    let mut organization_ids = Vec::new();
    let mut rooftop_ids = Vec::new();
    let mut sla = Map::new();
    let mut inventory_max_age = 0u32;
    for org in &snapshot.organizations {
        if organization_id.is_some_and(|id| id != org.organization_id) {
            continue;
        }
        let visible = principal.visible_rooftops(org);
        if visible.is_empty() {
            continue;
        }
        organization_ids.push(json!(org.organization_id));
        for rooftop in visible {
            rooftop_ids.push(json!(rooftop.rooftop_id));
            let s = rooftop.settings.freshness_sla_seconds;
            inventory_max_age = inventory_max_age.max(s.inventory);
            sla.insert(
                rooftop.rooftop_id.clone(),
                json!({"inventory": s.inventory, "availability": s.availability, "pricing": s.pricing}),
            );
        }
    }
    if organization_ids.is_empty() {
        return Err(ToolError::NotFound);
    }

    let base = &state.public_base;
    let catalog = &state.catalog;
    // DAP's `capability.profile` names only `dealeragent.*` profiles; this
    // gateway's own extension profiles (`dealergateway.*`) are published
    // under `extensions."dealergateway.extensions"` instead.
    let (dap_profiles, extension_profiles): (Vec<_>, Vec<_>) = catalog
        .profiles
        .iter()
        .partition(|p| p.id.starts_with(DAP_PROFILE_PREFIX));
    let describe = |p: &crate::catalog::Profile| json!({"profile": p.id, "status": p.status, "tools": p.tools, "scopes": p.scopes});
    let capabilities: Vec<Value> = dap_profiles.into_iter().map(describe).collect();
    let extension_profiles: Vec<Value> = extension_profiles.into_iter().map(describe).collect();
    let mut operator = json!({"name": state.settings.operator_name});
    if let Some(uri) = &state.settings.operator_uri {
        operator["uri"] = json!(uri);
    }
    let issued_at = snapshot.loaded_at;
    let expires_at = issued_at + MANIFEST_VALIDITY;
    Ok(json!({
        "standard": "dealer-agent-protocol",
        "standard_version": "0.1",
        "mcp_revision": MODERN_REVISION,
        "gateway_id": state.settings.gateway_id,
        "operator": operator,
        "organization_ids": organization_ids,
        "rooftop_ids": rooftop_ids,
        "capabilities": capabilities,
        "resources": catalog.resources(),
        // Gateway API tokens are partner workload credentials; JWTs from
        // the configured authorization server are OAuth 2.1 access tokens.
        "auth_modes": if state.jwt.is_some() {
            json!(["public", "workload_identity", "oauth_2_1"])
        } else {
            json!(["public", "workload_identity"])
        },
        "tenant_routing": {
            "organization_id_required": true,
            "rooftop_id_required_for_unit_reads": true,
            "group_delegation_explicit": true
        },
        "schema_base_uri": format!("{base}/schemas/"),
        "policy_uri": format!("{base}/policy"),
        "authority_policy": {
            "uri": format!("{base}/policy#authority"),
            "inventory_max_age_seconds": inventory_max_age,
            "authoritative_availability_required_for_actions": true
        },
        "freshness_sla_seconds": sla,
        // DAP's manifest requires `conformance`; without a configured claim
        // the URI serves a 404 notice whose digest is pinned here, and the
        // extension below says plainly that no claim is published.
        "conformance": {
            "claim_uri": format!("{base}/conformance/claim.json"),
            "claim_digest": state.claim.digest(),
        },
        "issued_at": issued_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        "expires_at": expires_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        "extensions": {
            "dealergateway.mcp": {
                "revisions": [MODERN_REVISION, LEGACY_REVISION],
                "header_policy": if state.settings.strict_mcp_headers { "strict" } else { "tolerate_omission" }
            },
            "dealergateway.rate-limits": {
                "http_requests_per_minute_per_client_address": state.settings.rate_limit_ip_per_minute,
                "http_requests_per_minute_per_principal": state.settings.rate_limit_principal_per_minute,
                "anonymous_tool_quota_per_minute_per_client_address": state.settings.anonymous_quota_per_minute,
                "anonymous_quota_tools": catalog
                    .tools
                    .iter()
                    .filter(|t| t.safety.public_access == crate::catalog::PublicAccess::RateLimitedOrAuthenticated)
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>(),
                "over_limit": "HTTP 429 with Retry-After at the edge; dealeragent.rate_limited with retry_after_ms for tool quotas"
            },
            "dealergateway.conformance": {
                "claim_published": state.claim.is_published(),
            },
            "dealergateway.extensions": {
                "profiles": extension_profiles
            },
            "dealergateway.catalog": {
                "bundle": catalog.bundle,
                "tools": catalog.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>()
            },
            "dealergateway.compatibility": compatibility(catalog)
        }
    }))
}

/// What the Auto Agent Protocol (AAP) MCP binding is served by: a
/// COMPATIBILITY ADAPTER over DAP, never native DAP (DAP section 15: an
/// adapter that drops provenance, pricing conditions, freshness or tenant
/// scope must not be advertised as native). `native: false` and the losses
/// below say so; docs/compatibility.md classifies every field. Built from
/// the catalog profile, so it lists exactly what is served and what is not.
pub fn compatibility(catalog: &crate::catalog::Catalog) -> Value {
    let adapters: Vec<Value> = catalog
        .profiles
        .iter()
        .filter(|p| p.id == crate::tools::aap_map::PROFILE)
        .map(|p| {
            let skills: Vec<Value> = p
                .tools
                .iter()
                .map(|tool| json!({"skill": aap_skill(tool), "tool": tool}))
                .collect();
            json!({
                "protocol": "auto-agent-protocol",
                "binding": "mcp",
                // Where the AAP tools are served: one MCP endpoint per
                // organization (AAP requests name no dealer), relative to
                // the gateway's base URL; /mcp serves the DAP tools only.
                "endpoint": AAP_ENDPOINT_TEMPLATE,
                "kind": "compatibility_adapter",
                "native": false,
                "profile": p.id,
                "status": p.status,
                "adapts": p.depends_on,
                "skills": skills,
                "not_offered": p.not_offered,
                "error_model": "aap.error (details.dap_code keeps the DAP code)",
                "losses": [
                    "AAP price (an out-the-door total) is never given; list_price only when the advertised price excludes required dealer charges and is in whole US dollars",
                    "availability is the dealer's unverified listing; DAP availability, provenance and freshness are kept per vehicle under dealergateway",
                    "only in-stock units (available, intransit, pending) are listed; sold, unavailable, withdrawn and unknown-status units are not",
                    "dealer data carries no AAP provenance or freshness members; they are stated in the response message",
                    "AAP filters and sort fields without a DAP source are refused, never ignored"
                ],
                "mapping_document": "docs/compatibility.md"
            })
        })
        .collect();
    json!({ "adapters": adapters })
}

/// AAP's skill id of an `aap_<skill>` tool (AAP MCP binding: dots become
/// underscores; the first underscore is the skill's only dot).
pub fn aap_skill(tool: &str) -> String {
    let skill = tool.strip_prefix("aap_").unwrap_or(tool);
    skill.replacen('_', ".", 1)
}

/// The view key of `principal` on `snapshot` for `organization_id`: the
/// filter, then each visible organization followed by its visible rooftops.
pub fn view_key(
    snapshot: &DirectorySnapshot,
    principal: &Principal,
    organization_id: Option<&str>,
) -> Vec<String> {
    let mut key = vec![organization_id.unwrap_or("*").to_owned()];
    for org in &snapshot.organizations {
        if organization_id.is_some_and(|id| id != org.organization_id) {
            continue;
        }
        let visible = principal.visible_rooftops(org);
        if visible.is_empty() {
            continue;
        }
        key.push(format!("org:{}", org.organization_id));
        key.extend(visible.into_iter().map(|r| r.rooftop_id.clone()));
    }
    key
}

/// `sha256:<hex>` of a JSON document's compact serialization.
pub fn json_digest(doc: &Value) -> String {
    let bytes = serde_json::to_vec(doc).unwrap_or_default();
    format!("sha256:{}", hex::encode(Sha256::digest(&bytes)))
}
