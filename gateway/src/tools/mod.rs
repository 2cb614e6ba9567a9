//! The tools: one module per MCP tool, and the only registry.
//!
//! `invoke` runs the fixed pipeline for every tool: input schema check
//! (`isError` + `field_errors`, values never echoed), the tool itself (which
//! applies policy before any lookup), then the output schema check (a
//! failure is logged with an error id and answered `dealeragent.internal`).
//! A tool may instead return JSON assembled from parts that were each
//! checked where they were made ([`Produced::Assembled`]: pre-rendered
//! vehicles, the cached manifest, the disclosure around a reused
//! evaluation; docs/benchmarks.md "Where output is validated"). Arguments
//! are read once into each tool's type ([`args`]) after the input check.

pub mod aap_dealer_information;
pub mod aap_inventory_facets;
pub mod aap_inventory_search;
pub mod aap_inventory_vehicle;
pub mod aap_map;
pub mod args;
pub mod budget;
pub mod dealer_get;
pub mod error;
pub mod get_disclosure;
pub mod get_manifest;
pub mod get_used_vehicle_details;
pub mod get_vehicle;
pub mod inventory_search;
pub mod offers_evaluate;
pub mod output;
pub mod policy;
pub mod target;
pub mod verify_availability;

use std::sync::Arc;

use chrono::Utc;
use serde_json::Value;

use crate::auth::Principal;
use crate::state::AppState;

pub use error::{ErrorCode, ToolError};

/// Everything a tool may use for one call (a narrow context, not the
/// whole `AppState`).
///
/// A tool reaches the shared state only through the accessors below: the
/// read models it answers from (directory, inventory, availability, offers),
/// the caches it fills (evaluations, manifests), the store (audit,
/// availability observations, programs) and the catalog. What belongs to
/// the transport (legacy sessions, the edge rate limits, host and origin
/// policy, credential verification) is not reachable from a tool, so a
/// tool cannot bypass or depend on it.
pub struct ToolContext {
    state: Arc<AppState>,
    pub principal: Principal,
    /// The client's address (per-tool quotas for anonymous callers).
    pub client_ip: std::net::IpAddr,
    /// Correlates logs and error objects for this request.
    pub trace_id: String,
    /// The organization of the AAP endpoint the call came through
    /// (`/aap/{organization_id}/mcp`, docs/mcp.md "The AAP endpoints"), or
    /// `None` on `/mcp` and for in-process callers. Part of the call's own
    /// context, so it holds wherever the call runs; the caller's arguments
    /// can never widen it (`aap_map::dealer`).
    pub pinned_organization: Option<String>,
}

impl ToolContext {
    /// The context of one call by `principal` from `client_ip`.
    pub fn new(
        state: &Arc<AppState>,
        principal: Principal,
        client_ip: std::net::IpAddr,
        trace_id: String,
    ) -> Self {
        ToolContext {
            state: Arc::clone(state),
            principal,
            client_ip,
            trace_id,
            pinned_organization: None,
        }
    }

    /// This context, answering for the AAP endpoint of `organization_id`
    /// only (DAP-CORE-031: no call there reaches another organization).
    pub fn pinned_to(mut self, organization_id: String) -> Self {
        self.pinned_organization = Some(organization_id);
        self
    }

    /// The tool catalog and its compiled schemas.
    pub fn catalog(&self) -> &crate::catalog::Catalog {
        &self.state.catalog
    }

    /// The store (audit writes, availability observations, programs).
    pub fn store(&self) -> &dyn crate::store::Store {
        self.state.store.as_ref()
    }

    /// The dealer directory.
    pub fn directory(&self) -> &crate::directory::Directory {
        &self.state.directory
    }

    /// The inventory indexes this replica serves.
    pub fn inventory(&self) -> &crate::inventory::live::LiveInventory {
        &self.state.inventory
    }

    /// Availability checks and this replica's overlay.
    pub fn availability(&self) -> &crate::availability::AvailabilityService {
        &self.state.availability
    }

    /// Incentive programs per organization.
    pub fn offers(&self) -> &crate::offers::OffersService {
        &self.state.offers
    }

    /// Reused offer evaluations and disclosure documents.
    pub fn evaluations(&self) -> &crate::disclosure::cache::EvaluationCache {
        &self.state.evaluations
    }

    /// Serialized manifests per directory snapshot and caller view.
    pub fn manifests(&self) -> &crate::directory::ViewCache {
        &self.state.manifests
    }

    /// The key sealing pagination cursors.
    pub fn cursor_key(&self) -> &[u8] {
        &self.state.cursor_key
    }

    /// Public base URL without a trailing slash.
    pub fn public_base(&self) -> &str {
        &self.state.public_base
    }

    /// The anonymous per-tool quota (decided in [`invoke`] before the tool).
    fn anonymous_tool_limiter(
        &self,
    ) -> &crate::ratelimit::KeyedLimiter<(String, std::net::IpAddr)> {
        &self.state.anonymous_tool_limiter
    }

    /// The whole state, for the manifest only: it describes the gateway
    /// itself (settings, the published claim, the token issuer), which no
    /// other tool reads.
    pub(crate) fn manifest_state(&self) -> &AppState {
        &self.state
    }
}

/// Every tool of this gateway (in any order: `tools/list` lists them by
/// name, as the catalog holds them). The one list: dispatch ([`invoke`]),
/// listing (`mcp::dispatch::tool_list`), the isolation matrix and the
/// catalogue check all read it, and tests hold it equal to the catalog in
/// both directions. Adding a tool is one module and one line here.
pub static REGISTRY: &[Registration] = &[
    Registration::of::<get_manifest::GetManifest>(),
    Registration::of::<dealer_get::DealerGet>(),
    Registration::of::<inventory_search::InventorySearch>(),
    Registration::of::<get_vehicle::GetVehicle>(),
    Registration::of::<get_used_vehicle_details::GetUsedVehicleDetails>(),
    Registration::of::<verify_availability::VerifyAvailability>(),
    Registration::of::<get_disclosure::GetDisclosure>(),
    Registration::of::<offers_evaluate::OffersEvaluate>(),
    Registration::of::<aap_dealer_information::AapDealerInformation>(),
    Registration::of::<aap_inventory_facets::AapInventoryFacets>(),
    Registration::of::<aap_inventory_search::AapInventorySearch>(),
    Registration::of::<aap_inventory_vehicle::AapInventoryVehicle>(),
];

/// The registered tool named `name`, if any.
pub fn registered(name: &str) -> Option<&'static Registration> {
    REGISTRY.iter().find(|r| r.name == name)
}

/// A call through the registry: the tool's arguments read into its type,
/// then the tool, as one boxed future (the registry holds one function
/// pointer per tool, as a router of MCP tools does).
type BoxedCall<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Output, ToolError>> + Send + 'a>>;

/// One entry of [`REGISTRY`], built from the tool's own [`Tool`] impl so
/// that its name, its input and output definitions and its call cannot
/// drift apart.
pub struct Registration {
    /// The wire name ([`Tool::NAME`]).
    pub name: &'static str,
    /// The input definition its arguments mirror ([`args::ToolArgs::INPUT`]).
    pub input: &'static str,
    /// The output definition its typed output mirrors
    /// ([`IntoOutput::OUTPUT`]); `None` for a tool that still answers with
    /// an untyped tree.
    pub output: Option<&'static str>,
    call: for<'a> fn(&'a ToolContext, &'a Value) -> BoxedCall<'a>,
}

impl Registration {
    /// The registration of tool `T`.
    pub const fn of<T: Tool + 'static>() -> Registration {
        Registration {
            name: T::NAME,
            input: <T::Args as args::ToolArgs>::INPUT,
            output: <T::Output as IntoOutput>::OUTPUT,
            call: boxed_run::<T>,
        }
    }

    /// This tool's entry in the catalog (its description, schemas and
    /// safety metadata).
    pub fn catalog_entry<'c>(
        &self,
        catalog: &'c crate::catalog::Catalog,
    ) -> Option<&'c crate::catalog::Tool> {
        catalog.tool(self.name)
    }
}

fn boxed_run<'a, T: Tool + 'static>(ctx: &'a ToolContext, args: &'a Value) -> BoxedCall<'a> {
    Box::pin(run::<T>(ctx, args))
}

/// Outcome of one tool call: the structured content and whether it is an
/// error object (MCP `isError`).
pub struct ToolOutcome {
    /// Serialized once; the MCP layer sends these bytes
    /// as `structuredContent` and, as a string, as the text content.
    pub structured: JsonText,
    pub is_error: bool,
    /// Content blocks after the text block, serialized, each after its
    /// comma (`resource_link`s to the records a client may fetch in full;
    /// docs/mcp.md "Content blocks"); empty for none.
    pub links: String,
    /// Members for the MCP result's `_meta`: this gateway's additions that
    /// the DAP output schema has no room for (e.g. the availability band).
    pub meta: Option<Value>,
    /// The DAP error code when the tool refused or failed, for metrics and
    /// the access log (docs/operations.md); `None` on success.
    pub code: Option<ErrorCode>,
}

/// What a tool produced.
pub enum Produced {
    /// A JSON tree: [`invoke`] validates it against the tool's output
    /// schema, then serializes it.
    Tree(Value),
    /// JSON assembled from pieces that were each validated where they were
    /// produced (docs/benchmarks.md "Where output is validated"), with the ids of the resources it returns, for the audit
    /// record.
    Assembled {
        json: JsonText,
        resource_ids: Vec<String>,
        /// Content blocks for the MCP result after its text block
        /// ([`ToolOutcome::links`]).
        links: String,
    },
}

impl Produced {
    /// The output as a tree (parses assembled bytes; for in-process
    /// callers such as the console, not for the wire).
    pub fn into_value(self) -> Value {
        match self {
            Produced::Tree(tree) => tree,
            Produced::Assembled { json, .. } => {
                serde_json::from_str(json.get()).unwrap_or(Value::Null)
            }
        }
    }

    /// Resource ids of a successful result (from what was returned, not
    /// from what was asked).
    fn resource_ids(&self) -> Vec<String> {
        match self {
            Produced::Assembled { resource_ids, .. } => resource_ids.clone(),
            Produced::Tree(output) => {
                let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
                let mut ids: Vec<String> = text(output, "vehicle_id").into_iter().collect();
                if let Some(vehicles) = output.get("vehicles").and_then(Value::as_array) {
                    ids.extend(vehicles.iter().filter_map(|v| text(v, "vehicle_id")));
                }
                ids
            }
        }
    }
}

/// What the audit log keeps of one call (docs/security.md "Audit
/// retention").
enum AuditRecord {
    /// Nothing: an anonymous call of an `access_log` tool.
    None,
    /// One event: every call by an authenticated principal (the only reads
    /// that can reach nonpublic data, DAP spec 11, CORE-039/040), and every
    /// anonymous authoritative check that was carried out (it passed the
    /// quota, the input schema and tenancy, so these are bounded by the
    /// per-address quota).
    OneByOne,
    /// A counter per (minute, client network, tool, outcome): an anonymous
    /// authoritative check that was refused, invalid or rate limited. These
    /// cost an attacker nothing, so one row each would let anyone fill the
    /// disk; the count still shows the refusals and where they came from.
    Counted,
}

fn audit_record<T>(
    principal: &Principal,
    tool: &crate::catalog::Tool,
    result: &Result<T, ToolError>,
) -> AuditRecord {
    if matches!(principal, Principal::Authenticated(_)) {
        return AuditRecord::OneByOne;
    }
    if tool.safety.audit != "authoritative_read_event" {
        return AuditRecord::None;
    }
    match result {
        Ok(_) => AuditRecord::OneByOne,
        Err(error) => match error {
            // The check ran against the dealer's system or the gateway
            // failed: the caller was served, and the quota bounds these.
            ToolError::UpstreamUnavailable { .. }
            | ToolError::EvaluationsBusy { .. }
            | ToolError::AuditUnavailable { .. }
            | ToolError::StoreUnavailable { .. }
            | ToolError::OrganizationNotServedHere { .. }
            | ToolError::Internal { .. } => AuditRecord::OneByOne,
            ToolError::AuthRequired { .. }
            | ToolError::ScopeInsufficient { .. }
            | ToolError::NotFound
            | ToolError::RateLimited { .. }
            | ToolError::Validation { .. }
            | ToolError::Invalid { .. } => AuditRecord::Counted,
        },
    }
}

/// `policy_decision` and `outcome` of a call.
fn decision_of<T>(result: &Result<T, ToolError>) -> (&'static str, &'static str) {
    match result {
        Ok(_) => ("allow", "ok"),
        Err(error) => (
            match error {
                ToolError::AuthRequired { .. }
                | ToolError::ScopeInsufficient { .. }
                | ToolError::NotFound
                | ToolError::RateLimited { .. } => "deny",
                ToolError::Validation { .. }
                | ToolError::Invalid { .. }
                | ToolError::UpstreamUnavailable { .. }
                | ToolError::EvaluationsBusy { .. }
                | ToolError::AuditUnavailable { .. }
                | ToolError::StoreUnavailable { .. }
                | ToolError::OrganizationNotServedHere { .. }
                | ToolError::Internal { .. } => "allow",
            },
            error.code().as_str(),
        ),
    }
}

/// How long a caller refused for an unwritable audit log waits to retry.
const AUDIT_RETRY_AFTER_MS: u64 = 5_000;

/// Write the audit record of one call (see [`AuditRecord`]). Ids only:
/// never tokens, secrets or raw arguments. The organization argument is
/// recorded only when it satisfies the identifier schema (otherwise
/// [`crate::store::audit::INVALID_MARKER`]: the call may have been refused
/// before its arguments were validated, e.g. over the quota); of the
/// rooftop arguments only those that name a rooftop of the directory are
/// recorded, the others counted (docs/tokens-and-audit.md "Audit events").
/// Returns false when a record was due and could not be written: [`invoke`]
/// then withholds the answer.
async fn audit(
    ctx: &ToolContext,
    tool: &crate::catalog::Tool,
    args: &Value,
    result: &Result<Produced, ToolError>,
) -> bool {
    use crate::store::audit::{
        AuditCount, INVALID_MARKER, MAX_COUNTER_KEYS_PER_WINDOW, identifier_or_marker,
        resolve_rooftops,
    };
    let (decision, outcome) = decision_of(result);
    let record = audit_record(&ctx.principal, tool, result);
    let kind = match record {
        AuditRecord::None => return true,
        AuditRecord::Counted => "counter",
        AuditRecord::OneByOne => "event",
    };
    let written = match record {
        AuditRecord::None => return true,
        AuditRecord::Counted => {
            let count = AuditCount::one(
                Utc::now(),
                ctx.client_ip,
                &ctx.trace_id,
                &tool.name,
                &tool.profile,
                decision,
                outcome,
            );
            ctx.store()
                .count_audit(&count, MAX_COUNTER_KEYS_PER_WINDOW)
                .await
        }
        AuditRecord::OneByOne => {
            let mut event = crate::store::AuditEvent::for_principal(
                &ctx.principal,
                &ctx.trace_id,
                &tool.name,
                &tool.profile,
            );
            let identifier = |v: &Value| {
                v.as_str()
                    .map_or_else(|| INVALID_MARKER.to_owned(), identifier_or_marker)
            };
            // The AAP tools name the organization `dealer_id` (aap_map::dealer).
            event.organization_id = args
                .get("organization_id")
                .or_else(|| args.get("dealer_id"))
                .map(identifier);
            let named: &[Value] = match (args.get("rooftop_id"), args.get("rooftop_ids")) {
                (Some(one), _) => std::slice::from_ref(one),
                (None, Some(Value::Array(many))) => many,
                (None, Some(other)) => std::slice::from_ref(other),
                (None, None) => &[],
            };
            // Only what identifies the decision: rooftops of the directory
            // (read or refused); ids that name no rooftop are counted, so a
            // caller cannot grow the log with ids of its own making.
            let directory = if named.is_empty() {
                None
            } else {
                ctx.directory().snapshot().await.ok()
            };
            (event.rooftop_ids, event.unresolved_rooftops) = resolve_rooftops(named, |id| {
                directory.as_deref().is_some_and(|d| {
                    d.organizations
                        .iter()
                        .any(|o| o.rooftops.iter().any(|r| r.rooftop_id == id))
                })
            });
            if let Ok(output) = result {
                event.resource_ids = output.resource_ids();
            }
            event.policy_decision = decision.to_owned();
            event.outcome = outcome.to_owned();
            ctx.store().append_audit(&event).await
        }
    };
    crate::store::audit::count_write(kind, &written);
    match written {
        Ok(()) => true,
        Err(e) => {
            tracing::error!(error = %e, trace.id = %ctx.trace_id, "audit write failed");
            false
        }
    }
}

/// Whether a call whose audit record could not be written is refused: an
/// authenticated call always (the only calls that can read non-public
/// data; DAP 0.1 section 11), an anonymous one with
/// `--audit-refuse-public-reads` (docs/tokens-and-audit.md "When the audit
/// log cannot be written").
fn refuse_unaudited(ctx: &ToolContext) -> bool {
    matches!(ctx.principal, Principal::Authenticated(_))
        || ctx.state.settings.audit_refuse_public_reads
}

/// Tool-level policy from the catalog, decided before anything is looked
/// up: `public_access: authenticated` refuses anonymous callers
/// (`dealeragent.auth.required`, saying how to authenticate), and an
/// authenticated caller must hold the tool's scope
/// (`dealeragent.scope.insufficient`). Tenant policy (which rooftops) is
/// applied by each tool through [`policy`], also before any lookup.
fn authorize_tool(ctx: &ToolContext, tool: &crate::catalog::Tool) -> Result<(), ToolError> {
    use crate::catalog::PublicAccess;
    match &ctx.principal {
        Principal::Anonymous => match tool.safety.public_access {
            PublicAccess::Authenticated => Err(ToolError::AuthRequired {
                how: format!(
                    "Send an Authorization: Bearer header with a gateway API token or an OAuth 2.1 access token for this gateway (see {}/.well-known/oauth-protected-resource).",
                    ctx.public_base()
                ),
            }),
            // Anonymous callers of an authoritative check are held to a
            // per-address quota (30 per minute by default; docs/security.md).
            PublicAccess::RateLimitedOrAuthenticated => ctx
                .anonymous_tool_limiter()
                .check(&(tool.name.clone(), ctx.client_ip))
                .map_err(|retry| ToolError::RateLimited {
                    retry_after_ms: retry.millis,
                }),
            PublicAccess::Allowed | PublicAccess::AllowedByDealerPolicy => Ok(()),
        },
        Principal::Authenticated(grant) => match &tool.scope {
            Some(scope) if !grant.has_scope(scope) => Err(ToolError::ScopeInsufficient {
                scope: scope.clone(),
            }),
            _ => Ok(()),
        },
    }
}

/// What every call passes before its tool runs: the tool's access policy
/// (scope, or the anonymous quota) and its input schema. [`invoke`] and
/// in-process readers of a typed answer (the console's disclosure) share
/// it, so neither can skip a check the other makes; tenancy is each tool's
/// own, before its lookup ([`policy`]).
pub fn admit(ctx: &ToolContext, name: &str, args: &Value) -> Result<(), ToolError> {
    let tool = registered(name)
        .and_then(|registration| registration.catalog_entry(ctx.catalog()))
        .ok_or_else(|| ToolError::internal(format!("{name} is not served")))?;
    admit_to(ctx, tool, args)
}

fn admit_to(ctx: &ToolContext, tool: &crate::catalog::Tool, args: &Value) -> Result<(), ToolError> {
    authorize_tool(ctx, tool)?;
    tool.validate_input(args)
        .map_err(|field_errors| ToolError::Validation { field_errors })?;
    organization_served_here(ctx, tool, args)
}

/// How soon a call refused by the wrong shard may be retried: routing is
/// fixed by the client or the balancer, not by waiting, so a short delay.
pub const SHARD_RETRY_AFTER_MS: u64 = 500;

/// Tools answered from the directory alone, which every replica holds
/// whole: a sharded replica answers them for any organization
/// (docs/operations.md "Shards": the manifest and dealer listings stay
/// global).
const DIRECTORY_TOOLS: [&str; 2] = [
    "dealeragent.discovery.get_manifest",
    "dealeragent.dealer.get",
];

/// A sharded replica answers only its own organizations (docs/operations.md
/// "Shards"): a call naming another one (its `organization_id`, or the
/// organization of the AAP endpoint it came through) is refused before its
/// tool looks anything up, so it never answers from an inventory it does
/// not hold. Decided after the tool's access policy and input check.
fn organization_served_here(
    ctx: &ToolContext,
    tool: &crate::catalog::Tool,
    args: &Value,
) -> Result<(), ToolError> {
    let organization = match &ctx.pinned_organization {
        Some(pinned) => Some(pinned.as_str()),
        None if DIRECTORY_TOOLS.contains(&tool.name.as_str()) => None,
        None => args.get("organization_id").and_then(Value::as_str),
    };
    match organization {
        Some(org) if !ctx.state.serves_organization(org) => {
            Err(ToolError::OrganizationNotServedHere {
                retry_after_ms: SHARD_RETRY_AFTER_MS,
            })
        }
        _ => Ok(()),
    }
}

/// A tool's structured output and, for some tools, its result `_meta`.
type Output = (Produced, Option<Value>);

/// One MCP tool: its wire
/// name, the type its arguments are read into once the input schema
/// check has passed, and the type it answers with. The pipeline
/// ([`invoke`]) owns everything around the call (tool policy, the input
/// check, reading [`Tool::Args`], the output check of trees, audit), so a
/// tool's `call` holds only what is its own.
pub trait Tool {
    /// The tool's name in `tools/list` and the catalog.
    const NAME: &'static str;
    /// Arguments, mirrored from the published input definition
    /// ([`args::ToolArgs`] diffs the two).
    type Args: args::ToolArgs;
    /// What a successful call answers.
    type Output: IntoOutput;
    /// The call itself, with arguments that passed the input schema.
    fn call(
        ctx: &ToolContext,
        args: Self::Args,
    ) -> impl std::future::Future<Output = Result<Self::Output, ToolError>> + Send;
}

/// How a tool's answer reaches the pipeline: a tree (checked against the
/// output schema by [`invoke`]), JSON assembled from checked parts, or a
/// typed output ([`output::ToolOutput`]) with its `_meta`.
pub trait IntoOutput {
    /// The output definition a typed output mirrors (`None` for a tree).
    const OUTPUT: Option<&'static str> = None;
    fn into_output(self) -> Result<Output, ToolError>;
}

impl IntoOutput for Value {
    fn into_output(self) -> Result<Output, ToolError> {
        Ok((Produced::Tree(self), None))
    }
}

impl IntoOutput for Produced {
    fn into_output(self) -> Result<Output, ToolError> {
        Ok((self, None))
    }
}

/// A typed output is sent as a tree, so [`invoke`] checks it against the
/// output schema like any other.
impl<T: output::ToolOutput> IntoOutput for T {
    const OUTPUT: Option<&'static str> = Some(T::OUTPUT);
    fn into_output(self) -> Result<Output, ToolError> {
        Ok((Produced::Tree(output::tree(&self)?), None))
    }
}

/// The availability result and what goes in the MCP result's `_meta`.
impl IntoOutput for (output::AvailabilityResult, output::AvailabilityMeta) {
    const OUTPUT: Option<&'static str> =
        Some(<output::AvailabilityResult as output::ToolOutput>::OUTPUT);
    fn into_output(self) -> Result<Output, ToolError> {
        let (result, meta) = self;
        Ok((
            Produced::Tree(output::tree(&result)?),
            Some(output::tree(&meta)?),
        ))
    }
}

/// Read `args` into `T::Args` and call `T`.
async fn run<T: Tool>(ctx: &ToolContext, args: &Value) -> Result<Output, ToolError> {
    let args = args::parse::<T::Args>(args)?;
    T::call(ctx, args).await?.into_output()
}

/// Run tool `name`. `None` when no such tool exists (a protocol error for
/// the caller: MCP -32602).
pub async fn invoke(ctx: &ToolContext, name: &str, args: &Value) -> Option<ToolOutcome> {
    let registration = registered(name)?;
    let tool = registration.catalog_entry(ctx.catalog())?;
    let result = match admit_to(ctx, tool, args) {
        Err(e) => Err(e),
        Ok(()) => match (registration.call)(ctx, args).await {
            Ok((Produced::Tree(output), meta)) => match tool.validate_output(&output) {
                Ok(()) => Ok((Produced::Tree(output), meta)),
                Err(errors) => Err(ToolError::internal(format!(
                    "output of {name} failed its schema: {}",
                    serde_json::to_string(&errors).unwrap_or_default()
                ))),
            },
            Ok((assembled @ Produced::Assembled { .. }, meta)) => Ok((assembled, meta)),
            Err(e) => Err(e),
        },
    };
    let (result, meta) = match result {
        Ok((output, meta)) => (Ok(output), meta),
        Err(e) => (Err(e), None),
    };
    // The record is written before anything is sent; an answer whose record
    // could not be written is withheld (retryable), never sent unaudited.
    let (result, meta) = if !audit(ctx, tool, args, &result).await && refuse_unaudited(ctx) {
        (
            Err(ToolError::AuditUnavailable {
                retry_after_ms: AUDIT_RETRY_AFTER_MS,
            }),
            None,
        )
    } else {
        (result, meta)
    };
    Some(match result {
        Ok(produced) => {
            let (structured, links) = match produced {
                Produced::Assembled { json, links, .. } => (json, links),
                Produced::Tree(tree) => (JsonText::of(&tree), String::new()),
            };
            let meta = budget_checked(ctx, name, &structured, meta);
            ToolOutcome {
                structured,
                is_error: false,
                links,
                meta,
                code: None,
            }
        }
        Err(error) => {
            let error_id = format!("err.{}", uuid::Uuid::new_v4());
            if let ToolError::Internal { detail } = &error {
                tracing::error!(error.id = %error_id, trace.id = %ctx.trace_id, tool.name = name, %detail, "tool failed");
            } else {
                tracing::info!(error.id = %error_id, trace.id = %ctx.trace_id, tool.name = name, error.code = error.code().as_str(), "tool refused");
            }
            // The error model is the tool's (catalog `error_model`): the AAP
            // compatibility tools answer with AAP's aap.error (docs/compatibility.md).
            let object = match tool.error_model {
                crate::catalog::ErrorModel::Dap => {
                    error.to_dap(&error_id, &ctx.trace_id, Utc::now())
                }
                crate::catalog::ErrorModel::Aap => {
                    aap_map::error_object(&error, name, &error_id, &ctx.trace_id, Utc::now())
                }
            };
            ToolOutcome {
                structured: JsonText::of(&object),
                is_error: true,
                links: String::new(),
                meta: None,
                code: Some(error.code()),
            }
        }
    })
}

/// `meta`, plus [`budget::over_budget_meta`] when a successful result is
/// larger than the result budget anyway (every tool keeps its default
/// answer within it; this marks what no rule of the tool could shorten,
/// such as the manifest of several hundred rooftops), which is logged.
fn budget_checked(
    ctx: &ToolContext,
    name: &str,
    structured: &JsonText,
    meta: Option<Value>,
) -> Option<Value> {
    let bytes = structured.get().len();
    if bytes <= budget::STRUCTURED_BYTES {
        return meta;
    }
    tracing::warn!(trace.id = %ctx.trace_id, tool.name = name, result.bytes = bytes, "tool result exceeds the result budget");
    let mut meta = match meta {
        Some(Value::Object(members)) => members,
        _ => serde_json::Map::new(),
    };
    meta.insert(
        budget::OVER_BUDGET_META.into(),
        budget::over_budget_meta(bytes),
    );
    Some(Value::Object(meta))
}

/// Check `part`, produced per request by tool `tool`, against that tool's
/// output schema (`what` names the part in the log): the check `invoke`
/// makes for trees, for the parts of assembled results.
pub fn check_part(
    ctx: &ToolContext,
    tool: &str,
    what: &str,
    part: &Value,
) -> Result<(), ToolError> {
    ctx.catalog()
        .tool(tool)
        .ok_or_else(|| ToolError::internal(format!("the catalog has no tool {tool}")))?
        .validate_output(part)
        .map_err(|errors| {
            ToolError::internal(format!(
                "{what} failed its schema: {}",
                serde_json::to_string(&errors).unwrap_or_default()
            ))
        })
}

/// JSON text this gateway wrote itself: serde_json output, or pieces of
/// serde_json output joined by fixed punctuation. It is
/// trusted rather than parsed again (a re-parse of a search page cost a
/// fifth of the request); tests parse every shape, and debug builds check
/// each one as it is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonText(String);

impl JsonText {
    /// Text assembled by this crate's writers.
    pub fn trusted(text: String) -> JsonText {
        debug_assert!(
            serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok(),
            "assembled JSON does not parse"
        );
        JsonText(text)
    }

    /// Serialize a tree. A `Value` always serializes (its keys are
    /// strings); the `null` fallback is unreachable in practice.
    pub fn of(tree: &Value) -> JsonText {
        JsonText(serde_json::to_string(tree).unwrap_or_else(|_| "null".to_owned()))
    }

    pub fn get(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The catalog entry of `registration` declares the input its
    /// arguments are read as, and the output its typed output mirrors.
    fn declared(
        registration: &Registration,
        catalog: &crate::catalog::Catalog,
    ) -> Result<(), String> {
        let tool = registration
            .catalog_entry(catalog)
            .ok_or_else(|| format!("{} is not in the catalog", registration.name))?;
        if tool.input_reference != registration.input {
            return Err(format!(
                "{} reads its arguments as {} but the catalog declares {}",
                registration.name, registration.input, tool.input_reference
            ));
        }
        match registration.output {
            Some(output) if output != tool.output_reference => Err(format!(
                "{} answers with {output} but the catalog declares {}",
                registration.name, tool.output_reference
            )),
            _ => Ok(()),
        }
    }

    /// The registry and `capabilities.yaml` name the same tools, each
    /// once, and every tool
    /// reads the arguments and answers with the output its catalog entry
    /// declares.
    #[test]
    fn the_registry_is_the_catalog() {
        let catalog = crate::catalog::Catalog::load().expect("catalog");
        let registered: Vec<&str> = REGISTRY.iter().map(|r| r.name).collect();
        let listed: Vec<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
        let unlisted: Vec<&&str> = registered.iter().filter(|n| !listed.contains(n)).collect();
        let unregistered: Vec<&&str> = listed.iter().filter(|n| !registered.contains(n)).collect();
        assert!(
            unlisted.is_empty(),
            "registered but not in capabilities.yaml: {unlisted:?}"
        );
        assert!(
            unregistered.is_empty(),
            "in capabilities.yaml but not registered: {unregistered:?}"
        );
        assert_eq!(registered.len(), listed.len(), "a tool registered twice");
        let wrong: Vec<String> = REGISTRY
            .iter()
            .filter_map(|r| declared(r, &catalog).err())
            .collect();
        assert!(wrong.is_empty(), "{wrong:#?}");
        // Every name finds its own entry (no entry shadows another).
        for registration in REGISTRY {
            assert!(std::ptr::eq(
                super::registered(registration.name).expect("registered"),
                registration
            ));
        }
        assert!(super::registered("dealeragent.no_such_tool").is_none());
    }

    /// The check can fail: a tool reading another tool's arguments, and
    /// one answering with another tool's output.
    #[test]
    fn a_misdeclared_tool_is_caught() {
        let catalog = crate::catalog::Catalog::load().expect("catalog");
        struct Misdeclared;
        impl Tool for Misdeclared {
            const NAME: &'static str = get_vehicle::NAME;
            type Args = args::ManifestArgs;
            type Output = Value;
            async fn call(_: &ToolContext, _: Self::Args) -> Result<Value, ToolError> {
                Ok(Value::Null)
            }
        }
        assert!(declared(&Registration::of::<Misdeclared>(), &catalog).is_err());
        struct WrongOutput;
        impl Tool for WrongOutput {
            const NAME: &'static str = get_vehicle::NAME;
            type Args = args::VehicleArgs;
            type Output = output::DealerOrganization;
            async fn call(_: &ToolContext, _: Self::Args) -> Result<Self::Output, ToolError> {
                Err(ToolError::NotFound)
            }
        }
        assert!(declared(&Registration::of::<WrongOutput>(), &catalog).is_err());
        struct Unlisted;
        impl Tool for Unlisted {
            const NAME: &'static str = "dealeragent.no_such_tool";
            type Args = args::ManifestArgs;
            type Output = Value;
            async fn call(_: &ToolContext, _: Self::Args) -> Result<Value, ToolError> {
                Ok(Value::Null)
            }
        }
        assert!(declared(&Registration::of::<Unlisted>(), &catalog).is_err());
    }
}
