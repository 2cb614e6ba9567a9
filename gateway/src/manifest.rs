//! The DAP manifest: what this gateway serves, for whom, how fresh.
//!
//! One builder feeds both the `dealeragent.discovery.get_manifest` tool and
//! the `dealeragent://manifest` resource (DAP-CORE-006). For one directory
//! snapshot and one caller view the object is identical: its times derive
//! from the snapshot, not from the request.

use chrono::{Duration, SecondsFormat};
use serde::{Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::auth::Principal;
use crate::directory::DirectorySnapshot;
use crate::mcp::revision::{LEGACY_REVISION, MODERN_REVISION};
use crate::state::AppState;
use crate::store::FreshnessSla;
use crate::tools::error::ToolError;

/// DAP's `standard` and `standard_version` (manifest.schema.json consts).
const STANDARD: &str = "dealer-agent-protocol";
const STANDARD_VERSION: &str = "0.1";

/// The prefix of the profiles DAP's manifest `capabilities` may name.
const DAP_PROFILE_PREFIX: &str = "dealeragent.";

/// How long a manifest stays valid after its directory snapshot was read.
const MANIFEST_VALIDITY: Duration = Duration::hours(1);

/// Where the AAP adapter is served: an endpoint per organization (AAP
/// requests name no dealer). The manifest names it and `mcp::aap` serves it;
/// defined here, below the transport, so the manifest need not import it.
pub const AAP_ENDPOINT_TEMPLATE: &str = "/aap/{organization_id}/mcp";

/// Build the manifest for `principal`, optionally narrowed to one
/// organization, as the tree callers that read it as JSON use (the
/// `dealeragent://manifest` resource, the well-known documents): the
/// serialization of [`document`].
pub fn build(
    state: &AppState,
    snapshot: &DirectorySnapshot,
    principal: &Principal,
    organization_id: Option<&str>,
) -> Result<Value, ToolError> {
    crate::tools::output::tree(&document(state, snapshot, principal, organization_id)?)
}

/// The manifest for `principal`, optionally narrowed to one organization.
/// `NotFound` when nothing is visible: a manifest must list at least one
/// organization and rooftop, and an invisible organization looks exactly
/// like an absent one (DAP-CORE-031).
pub fn document(
    state: &AppState,
    snapshot: &DirectorySnapshot,
    principal: &Principal,
    organization_id: Option<&str>,
) -> Result<Manifest, ToolError> {
    let mut organization_ids = Vec::new();
    let mut rooftop_ids = Vec::new();
    let mut sla = SlaByRooftop::default();
    let mut inventory_max_age = 0u32;
    for org in &snapshot.organizations {
        if organization_id.is_some_and(|id| id != org.organization_id) {
            continue;
        }
        let visible = principal.visible_rooftops(org);
        if visible.is_empty() {
            continue;
        }
        organization_ids.push(org.organization_id.clone());
        for rooftop in visible {
            rooftop_ids.push(rooftop.rooftop_id.clone());
            let s = rooftop.settings.freshness_sla_seconds;
            inventory_max_age = inventory_max_age.max(s.inventory);
            sla.insert(&rooftop.rooftop_id, s);
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
    let issued_at = snapshot.loaded_at;
    let expires_at = issued_at + MANIFEST_VALIDITY;
    let settings = &state.settings;
    Ok(Manifest {
        standard: STANDARD,
        standard_version: STANDARD_VERSION,
        mcp_revision: MODERN_REVISION,
        gateway_id: settings.gateway_id.clone(),
        operator: Operator {
            name: settings.operator_name.clone(),
            uri: settings.operator_uri.clone(),
        },
        organization_ids,
        rooftop_ids,
        capabilities: dap_profiles.into_iter().map(Capability::of).collect(),
        resources: catalog.resources(),
        // Gateway API tokens are partner workload credentials; JWTs from
        // the configured authorization server are OAuth 2.1 access tokens.
        auth_modes: if state.jwt.is_some() {
            vec!["public", "workload_identity", "oauth_2_1"]
        } else {
            vec!["public", "workload_identity"]
        },
        tenant_routing: TenantRouting::GUARANTEED,
        schema_base_uri: format!("{base}/schemas/"),
        policy_uri: format!("{base}/policy"),
        authority_policy: AuthorityPolicy {
            uri: format!("{base}/policy#authority"),
            inventory_max_age_seconds: inventory_max_age,
            authoritative_availability_required_for_actions: true,
        },
        freshness_sla_seconds: sla,
        // DAP's manifest requires `conformance`; without a configured claim
        // the URI serves a 404 notice whose digest is pinned here, and the
        // extension below says plainly that no claim is published.
        conformance: ConformanceEvidence {
            claim_uri: format!("{base}/conformance/claim.json"),
            claim_digest: state.claim.digest().to_owned(),
        },
        jwks_uri: None,
        a2a_agent_card_uri: None,
        issued_at: issued_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        expires_at: expires_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        extensions: Extensions {
            mcp: McpRevisions {
                revisions: vec![MODERN_REVISION, LEGACY_REVISION],
                header_policy: if settings.strict_mcp_headers {
                    "strict"
                } else {
                    "tolerate_omission"
                },
            },
            rate_limits: RateLimits {
                http_requests_per_minute_per_client_address: settings.rate_limit_ip_per_minute,
                http_requests_per_minute_per_principal: settings.rate_limit_principal_per_minute,
                anonymous_tool_quota_per_minute_per_client_address: settings
                    .anonymous_quota_per_minute,
                anonymous_quota_tools: catalog
                    .tools
                    .iter()
                    .filter(|t| {
                        t.safety.public_access
                            == crate::catalog::PublicAccess::RateLimitedOrAuthenticated
                    })
                    .map(|t| t.name.clone())
                    .collect(),
                over_limit: OVER_LIMIT,
            },
            conformance: ClaimPublished {
                claim_published: state.claim.is_published(),
            },
            extensions: ExtensionProfiles {
                profiles: extension_profiles.into_iter().map(Capability::of).collect(),
            },
            catalog: CatalogExtension {
                bundle: catalog.bundle.clone(),
                tools: catalog.tools.iter().map(|t| t.name.clone()).collect(),
            },
            compatibility: compatibility_extension(catalog),
        },
    })
}

/// What the Auto Agent Protocol (AAP) MCP binding is served by, as the
/// tree the well-known documents read: the serialization of
/// [`compatibility_extension`].
pub fn compatibility(catalog: &crate::catalog::Catalog) -> Value {
    serde_json::to_value(compatibility_extension(catalog)).unwrap_or(Value::Null)
}

/// What the Auto Agent Protocol (AAP) MCP binding is served by: a
/// COMPATIBILITY ADAPTER over DAP, never native DAP (DAP section 15: an
/// adapter that drops provenance, pricing conditions, freshness or tenant
/// scope must not be advertised as native). `native: false` and the losses
/// below say so; docs/compatibility.md classifies every field. Built from
/// the catalog profile, so it lists exactly what is served and what is not.
pub fn compatibility_extension(catalog: &crate::catalog::Catalog) -> Compatibility {
    let adapters = catalog
        .profiles
        .iter()
        .filter(|p| p.id == crate::tools::aap_map::PROFILE)
        .map(|p| Adapter {
            protocol: "auto-agent-protocol",
            binding: "mcp",
            // Where the AAP tools are served: one MCP endpoint per
            // organization (AAP requests name no dealer), relative to the
            // gateway's base URL; /mcp serves the DAP tools only.
            endpoint: AAP_ENDPOINT_TEMPLATE,
            kind: "compatibility_adapter",
            native: false,
            profile: p.id.clone(),
            status: p.status.clone(),
            adapts: p.depends_on.clone(),
            skills: p
                .tools
                .iter()
                .map(|tool| Skill {
                    skill: aap_skill(tool),
                    tool: tool.clone(),
                })
                .collect(),
            not_offered: p.not_offered.clone(),
            error_model: "aap.error (details.dap_code keeps the DAP code)",
            losses: AAP_LOSSES.to_vec(),
            mapping_document: "docs/compatibility.md",
        })
        .collect();
    Compatibility { adapters }
}

/// What an AAP answer cannot carry of DAP's (docs/compatibility.md).
const AAP_LOSSES: [&str; 5] = [
    "AAP price (an out-the-door total) is never given; list_price only when the advertised price excludes required dealer charges and is in whole US dollars",
    "availability is the dealer's unverified listing; DAP availability, provenance and freshness are kept per vehicle under dealergateway",
    "only in-stock units (available, intransit, pending) are listed; sold, unavailable, withdrawn and unknown-status units are not",
    "dealer data carries no AAP provenance or freshness members; they are stated in the response message",
    "AAP filters and sort fields without a DAP source are refused, never ignored",
];

/// How a caller over a limit is answered (the rate-limits extension).
const OVER_LIMIT: &str = "HTTP 429 with Retry-After at the edge; dealeragent.rate_limited with retry_after_ms for tool quotas";

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

// ---------------------------------------------------------------------------
// The manifest's types (manifest.schema.json), members in the wire order
// ---------------------------------------------------------------------------

/// `manifest`: the output of `dealeragent.discovery.get_manifest` and the
/// `dealeragent://manifest` resource (DAP-CORE-006).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Manifest {
    /// Always `dealer-agent-protocol`.
    pub standard: &'static str,
    /// Always `0.1`.
    pub standard_version: &'static str,
    /// DAP's one revision (a const of the schema); every served revision
    /// is in `extensions."dealergateway.mcp"`.
    pub mcp_revision: &'static str,
    pub gateway_id: String,
    pub operator: Operator,
    pub organization_ids: Vec<String>,
    pub rooftop_ids: Vec<String>,
    pub capabilities: Vec<Capability>,
    pub resources: Vec<String>,
    pub auth_modes: Vec<&'static str>,
    pub tenant_routing: TenantRouting,
    pub schema_base_uri: String,
    pub policy_uri: String,
    pub authority_policy: AuthorityPolicy,
    pub freshness_sla_seconds: SlaByRooftop,
    pub conformance: ConformanceEvidence,
    /// This gateway serves no key set of its own (it verifies tokens
    /// against the authorization server's keys, docs/jwt.md): never sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// This gateway offers no A2A binding: never sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a2a_agent_card_uri: Option<String>,
    pub issued_at: String,
    pub expires_at: String,
    pub extensions: Extensions,
}

impl crate::tools::output::ToolOutput for Manifest {
    const OUTPUT: &'static str = "manifest.schema.json#/$defs/manifest";
}

/// `gatewayOperator`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Operator {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
}

/// `capability`: one catalog profile, its tools and scopes. The same shape
/// describes this gateway's own extension profiles (under
/// `extensions."dealergateway.extensions"`), whose ids are not DAP's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Capability {
    pub profile: String,
    pub status: String,
    pub tools: Vec<String>,
    pub scopes: Vec<String>,
}

impl Capability {
    fn of(p: &crate::catalog::Profile) -> Self {
        Capability {
            profile: p.id.clone(),
            status: p.status.clone(),
            tools: p.tools.clone(),
            scopes: p.scopes.clone(),
        }
    }
}

/// `tenantRouting`: each guarantee is always true (a const of the schema).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TenantRouting {
    pub organization_id_required: bool,
    pub rooftop_id_required_for_unit_reads: bool,
    pub group_delegation_explicit: bool,
}

impl TenantRouting {
    /// What every tool enforces (DAP-CORE-029..031).
    pub const GUARANTEED: TenantRouting = TenantRouting {
        organization_id_required: true,
        rooftop_id_required_for_unit_reads: true,
        group_delegation_explicit: true,
    };
}

/// `authorityPolicy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuthorityPolicy {
    pub uri: String,
    /// The largest inventory SLA of the rooftops listed.
    pub inventory_max_age_seconds: u32,
    /// Always true (a const of the schema).
    pub authoritative_availability_required_for_actions: bool,
}

/// `freshness_sla_seconds`: each listed rooftop's `freshnessSla`, keyed by
/// rooftop id, in the order the rooftops are listed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlaByRooftop(Vec<(String, FreshnessSla)>);

impl SlaByRooftop {
    /// Set `rooftop_id`'s targets: a rooftop listed again keeps its place
    /// and takes the later targets (an object has one member per key).
    pub fn insert(&mut self, rooftop_id: &str, sla: FreshnessSla) {
        match self.0.iter_mut().find(|(id, _)| id == rooftop_id) {
            Some((_, existing)) => *existing = sla,
            None => self.0.push((rooftop_id.to_owned(), sla)),
        }
    }
}

impl Serialize for SlaByRooftop {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(id, sla)| (id, sla)))
    }
}

/// `conformanceEvidence`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConformanceEvidence {
    pub claim_uri: String,
    pub claim_digest: String,
}

/// The manifest's `extensions`, in the wire order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Extensions {
    /// `mcpRevisionsExtension`.
    #[serde(rename = "dealergateway.mcp")]
    pub mcp: McpRevisions,
    #[serde(rename = "dealergateway.rate-limits")]
    pub rate_limits: RateLimits,
    #[serde(rename = "dealergateway.conformance")]
    pub conformance: ClaimPublished,
    #[serde(rename = "dealergateway.extensions")]
    pub extensions: ExtensionProfiles,
    #[serde(rename = "dealergateway.catalog")]
    pub catalog: CatalogExtension,
    #[serde(rename = "dealergateway.compatibility")]
    pub compatibility: Compatibility,
}

/// `mcpRevisionsExtension`: every MCP revision served, newest first, and
/// how omitted mirror headers are treated (docs/mcp.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpRevisions {
    pub revisions: Vec<&'static str>,
    /// `strict` or `tolerate_omission`.
    pub header_policy: &'static str,
}

/// `extensions."dealergateway.rate-limits"` (docs/security.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RateLimits {
    pub http_requests_per_minute_per_client_address: u32,
    pub http_requests_per_minute_per_principal: u32,
    pub anonymous_tool_quota_per_minute_per_client_address: u32,
    pub anonymous_quota_tools: Vec<String>,
    pub over_limit: &'static str,
}

/// `extensions."dealergateway.conformance"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClaimPublished {
    pub claim_published: bool,
}

/// `extensions."dealergateway.extensions"`: this gateway's own profiles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtensionProfiles {
    pub profiles: Vec<Capability>,
}

/// `extensions."dealergateway.catalog"`: the catalog bundle and every tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogExtension {
    pub bundle: String,
    pub tools: Vec<String>,
}

/// `extensions."dealergateway.compatibility"` ([`compatibility_extension`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Compatibility {
    pub adapters: Vec<Adapter>,
}

/// One compatibility adapter (AAP over DAP).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Adapter {
    pub protocol: &'static str,
    pub binding: &'static str,
    pub endpoint: &'static str,
    pub kind: &'static str,
    /// Always false (DAP section 15).
    pub native: bool,
    pub profile: String,
    pub status: String,
    pub adapts: Vec<String>,
    pub skills: Vec<Skill>,
    pub not_offered: Vec<crate::catalog::NotOffered>,
    pub error_model: &'static str,
    pub losses: Vec<&'static str>,
    pub mapping_document: &'static str,
}

/// An AAP skill and the tool that serves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skill {
    pub skill: String,
    pub tool: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::output::drift;

    /// A manifest as `document` assembles it, from the real catalog, with
    /// and without the optional members (operator URI, OAuth, strict
    /// headers).
    fn manifest(catalog: &crate::catalog::Catalog, full: bool) -> Manifest {
        let (dap, own): (Vec<_>, Vec<_>) = catalog
            .profiles
            .iter()
            .partition(|p| p.id.starts_with(DAP_PROFILE_PREFIX));
        let sla = FreshnessSla {
            inventory: 900,
            availability: 300,
            pricing: 86_400,
        };
        let mut freshness_sla_seconds = SlaByRooftop::default();
        freshness_sla_seconds.insert("roof.a", sla);
        if full {
            freshness_sla_seconds.insert(
                "roof.b",
                FreshnessSla {
                    inventory: 1,
                    ..sla
                },
            );
        }
        let base = "https://gateway.example";
        Manifest {
            standard: STANDARD,
            standard_version: STANDARD_VERSION,
            mcp_revision: MODERN_REVISION,
            gateway_id: "gw.example".into(),
            operator: Operator {
                name: "Example Operator".into(),
                uri: full.then(|| "https://operator.example".into()),
            },
            organization_ids: vec!["org.a".into()],
            rooftop_ids: if full {
                vec!["roof.a".into(), "roof.b".into()]
            } else {
                vec!["roof.a".into()]
            },
            capabilities: dap.into_iter().map(Capability::of).collect(),
            resources: catalog.resources(),
            auth_modes: if full {
                vec!["public", "workload_identity", "oauth_2_1"]
            } else {
                vec!["public", "workload_identity"]
            },
            tenant_routing: TenantRouting::GUARANTEED,
            schema_base_uri: format!("{base}/schemas/"),
            policy_uri: format!("{base}/policy"),
            authority_policy: AuthorityPolicy {
                uri: format!("{base}/policy#authority"),
                inventory_max_age_seconds: 900,
                authoritative_availability_required_for_actions: true,
            },
            freshness_sla_seconds,
            conformance: ConformanceEvidence {
                claim_uri: format!("{base}/conformance/claim.json"),
                claim_digest: crate::claim::digest(b"no claim"),
            },
            jwks_uri: None,
            a2a_agent_card_uri: None,
            issued_at: "2026-01-02T03:04:05Z".into(),
            expires_at: "2026-01-02T04:04:05Z".into(),
            extensions: Extensions {
                mcp: McpRevisions {
                    revisions: vec![MODERN_REVISION, LEGACY_REVISION],
                    header_policy: if full { "strict" } else { "tolerate_omission" },
                },
                rate_limits: RateLimits {
                    http_requests_per_minute_per_client_address: 600,
                    http_requests_per_minute_per_principal: 1_200,
                    anonymous_tool_quota_per_minute_per_client_address: 30,
                    anonymous_quota_tools: vec!["dealeragent.inventory.verify_availability".into()],
                    over_limit: OVER_LIMIT,
                },
                conformance: ClaimPublished {
                    claim_published: full,
                },
                extensions: ExtensionProfiles {
                    profiles: own.into_iter().map(Capability::of).collect(),
                },
                catalog: CatalogExtension {
                    bundle: catalog.bundle.clone(),
                    tools: catalog.tools.iter().map(|t| t.name.clone()).collect(),
                },
                compatibility: compatibility_extension(catalog),
            },
        }
    }

    /// The manifest and its records against their definitions in
    /// manifest.schema.json (members both ways, validation of the whole).
    #[test]
    fn manifests_match_their_definitions() {
        let catalog = crate::catalog::Catalog::load().expect("catalog");
        let manifests = [manifest(&catalog, false), manifest(&catalog, true)];
        drift::check_output(&manifests);
        let m = &manifests[1];
        drift::check("manifest.schema.json#/$defs/capability", &m.capabilities);
        drift::check(
            "manifest.schema.json#/$defs/gatewayOperator",
            &[&manifests[0].operator, &m.operator],
        );
        drift::check(
            "manifest.schema.json#/$defs/tenantRouting",
            &[&m.tenant_routing],
        );
        drift::check(
            "manifest.schema.json#/$defs/authorityPolicy",
            &[&m.authority_policy],
        );
        drift::check(
            "manifest.schema.json#/$defs/freshnessSla",
            &[m.freshness_sla_seconds.0[0].1],
        );
        drift::check(
            "manifest.schema.json#/$defs/conformanceEvidence",
            &[&m.conformance],
        );
        drift::check(
            "manifest.schema.json#/$defs/mcpRevisionsExtension",
            &[&manifests[0].extensions.mcp, &m.extensions.mcp],
        );
        assert!(!m.extensions.compatibility.adapters.is_empty());
    }

    /// The members keep the order the manifest was sent in before it was
    /// typed, absent members stay absent, and a rooftop listed twice keeps
    /// its first place.
    #[test]
    fn the_wire_order_is_kept() {
        let catalog = crate::catalog::Catalog::load().expect("catalog");
        let mut m = manifest(&catalog, false);
        m.freshness_sla_seconds.insert(
            "roof.0",
            FreshnessSla {
                inventory: 1,
                availability: 2,
                pricing: 3,
            },
        );
        m.freshness_sla_seconds.insert(
            "roof.a",
            FreshnessSla {
                inventory: 4,
                availability: 5,
                pricing: 6,
            },
        );
        let tree = crate::tools::output::tree(&m).expect("tree");
        let keys =
            |v: &Value| -> Vec<String> { v.as_object().expect("object").keys().cloned().collect() };
        assert_eq!(
            keys(&tree),
            [
                "standard",
                "standard_version",
                "mcp_revision",
                "gateway_id",
                "operator",
                "organization_ids",
                "rooftop_ids",
                "capabilities",
                "resources",
                "auth_modes",
                "tenant_routing",
                "schema_base_uri",
                "policy_uri",
                "authority_policy",
                "freshness_sla_seconds",
                "conformance",
                "issued_at",
                "expires_at",
                "extensions"
            ]
        );
        assert_eq!(
            serde_json::to_string(&tree["freshness_sla_seconds"]).unwrap(),
            r#"{"roof.a":{"inventory":4,"availability":5,"pricing":6},"roof.0":{"inventory":1,"availability":2,"pricing":3}}"#
        );
        assert_eq!(keys(&tree["operator"]), ["name"]);
        assert_eq!(
            keys(&tree["extensions"]),
            [
                "dealergateway.mcp",
                "dealergateway.rate-limits",
                "dealergateway.conformance",
                "dealergateway.extensions",
                "dealergateway.catalog",
                "dealergateway.compatibility"
            ]
        );
        let adapter = &tree["extensions"]["dealergateway.compatibility"]["adapters"][0];
        assert_eq!(
            keys(adapter),
            [
                "protocol",
                "binding",
                "endpoint",
                "kind",
                "native",
                "profile",
                "status",
                "adapts",
                "skills",
                "not_offered",
                "error_model",
                "losses",
                "mapping_document"
            ]
        );
        assert_eq!(
            compatibility(&catalog),
            tree["extensions"]["dealergateway.compatibility"]
        );
    }
}
