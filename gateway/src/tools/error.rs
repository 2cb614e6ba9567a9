//! Tool-level failures and the DAP error object (DAP 0.1 "Errors";
//! error.schema.json). A tool that ran and failed answers with MCP `isError: true`
//! and this object as `structuredContent`; only protocol failures become
//! JSON-RPC errors (DAP spec section 11). Where each failure belongs and
//! how it maps outward: the error guide, `crate::errors`.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::output::{Freshness, ToolOutput};
use crate::catalog::FieldError;
use crate::dap::truncate;
use crate::store::StoreError;

/// error.schema.json `message` `maxLength` (characters).
pub(crate) const MESSAGE_MAX_CHARS: usize = 500;

/// Every DAP error code, closed (error.schema.json `code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    ValidationInvalid,
    ProtocolUnsupportedRevision,
    CapabilityUnsupported,
    AuthRequired,
    AuthInvalid,
    ScopeInsufficient,
    TenantForbidden,
    ResourceNotFound,
    VehicleUnavailable,
    VehicleStale,
    PricingIncomplete,
    PricingEligibilityUnverified,
    StateConflict,
    RateLimited,
    UpstreamUnavailable,
    Internal,
}

impl ErrorCode {
    /// Every code, for tests that must cover them all.
    pub const ALL: [ErrorCode; 16] = [
        Self::ValidationInvalid,
        Self::ProtocolUnsupportedRevision,
        Self::CapabilityUnsupported,
        Self::AuthRequired,
        Self::AuthInvalid,
        Self::ScopeInsufficient,
        Self::TenantForbidden,
        Self::ResourceNotFound,
        Self::VehicleUnavailable,
        Self::VehicleStale,
        Self::PricingIncomplete,
        Self::PricingEligibilityUnverified,
        Self::StateConflict,
        Self::RateLimited,
        Self::UpstreamUnavailable,
        Self::Internal,
    ];

    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ValidationInvalid => "dealeragent.validation.invalid",
            Self::ProtocolUnsupportedRevision => "dealeragent.protocol.unsupported_revision",
            Self::CapabilityUnsupported => "dealeragent.capability.unsupported",
            Self::AuthRequired => "dealeragent.auth.required",
            Self::AuthInvalid => "dealeragent.auth.invalid",
            Self::ScopeInsufficient => "dealeragent.scope.insufficient",
            Self::TenantForbidden => "dealeragent.tenant.forbidden",
            Self::ResourceNotFound => "dealeragent.resource.not_found",
            Self::VehicleUnavailable => "dealeragent.vehicle.unavailable",
            Self::VehicleStale => "dealeragent.vehicle.stale",
            Self::PricingIncomplete => "dealeragent.pricing.incomplete",
            Self::PricingEligibilityUnverified => "dealeragent.pricing.eligibility_unverified",
            Self::StateConflict => "dealeragent.state.conflict",
            Self::RateLimited => "dealeragent.rate_limited",
            Self::UpstreamUnavailable => "dealeragent.upstream.unavailable",
            Self::Internal => "dealeragent.internal",
        }
    }

    /// `retryable` is derived from the code alone (DAP-ERR-001).
    pub fn retryable(self) -> bool {
        match self {
            Self::VehicleStale
            | Self::StateConflict
            | Self::RateLimited
            | Self::UpstreamUnavailable
            | Self::Internal => true,
            Self::ValidationInvalid
            | Self::ProtocolUnsupportedRevision
            | Self::CapabilityUnsupported
            | Self::AuthRequired
            | Self::AuthInvalid
            | Self::ScopeInsufficient
            | Self::TenantForbidden
            | Self::ResourceNotFound
            | Self::VehicleUnavailable
            | Self::PricingIncomplete
            | Self::PricingEligibilityUnverified => false,
        }
    }
}

/// Why a tool call failed. Closed: [`ToolError::to_dap`] maps every variant.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// Arguments broke the input schema or a cross-field rule.
    #[error("the arguments are invalid")]
    Validation { field_errors: Vec<FieldError> },
    /// A semantic rule the schema cannot express; the message must not echo
    /// input values.
    #[error("{message}")]
    Invalid {
        message: String,
        field_errors: Vec<FieldError>,
    },
    /// The tool needs credentials and the caller sent none.
    #[error("authentication required")]
    AuthRequired { how: String },
    /// The caller's grant lacks the tool's scope.
    #[error("scope {scope} required")]
    ScopeInsufficient { scope: String },
    /// The caller exceeded a per-tool quota.
    #[error("rate limited")]
    RateLimited { retry_after_ms: u64 },
    /// Absent, or present but not visible to this caller: one message for
    /// both so foreign existence never leaks (DAP-CORE-031).
    #[error("The requested resource was not found.")]
    NotFound,
    /// The authoritative source (a dealer system) is down, slow or answered
    /// something untrustworthy; retryable after `retry_after_ms`.
    #[error("upstream unavailable")]
    UpstreamUnavailable { retry_after_ms: u64 },
    /// Every offer evaluation thread is busy and the queue is full (or the
    /// wait outlasted the evaluation deadline; docs/pricing.md section 4):
    /// nothing was evaluated; retryable after `retry_after_ms`.
    #[error("offer evaluations saturated")]
    EvaluationsBusy { retry_after_ms: u64 },
    /// The call's audit event could not be written, so its answer was
    /// withheld (DAP 0.1 section 11: reads of non-public data emit audit
    /// events; docs/tokens-and-audit.md "When the audit log cannot be
    /// written"); retryable after `retry_after_ms`.
    #[error("audit log unavailable")]
    AuditUnavailable { retry_after_ms: u64 },
    /// The gateway's own store is down or refused to work for now
    /// ([`StoreError::Unavailable`]): nothing was answered; retryable after
    /// `retry_after_ms`. An outage is never [`ToolError::Internal`].
    #[error("store unavailable: {detail}")]
    StoreUnavailable { detail: String, retry_after_ms: u64 },
    /// An organization-sharded replica was asked about an organization of
    /// another shard (docs/operations.md "Shards"): nothing of it was looked
    /// up, so no foreign or empty answer is given; retryable, routed by
    /// `Mcp-Param-Organization` or the AAP path.
    #[error("organization not served by this replica")]
    OrganizationNotServedHere { retry_after_ms: u64 },
    /// Anything unexpected (a defect). The detail is logged with
    /// `error_id`, never sent.
    #[error("internal error: {detail}")]
    Internal { detail: String },
}

/// How long a caller refused for a store outage waits to retry: long enough
/// for a pool to reconnect or a restarted database to accept connections,
/// short enough for an agent to keep its turn.
pub const STORE_RETRY_AFTER_MS: u64 = 2_000;

impl From<StoreError> for ToolError {
    /// A store outage is the retryable `dealeragent.upstream.unavailable`
    /// with a retry hint; any other store failure (a corrupt record, a
    /// refused statement) is a defect: `dealeragent.internal`.
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(detail) => Self::StoreUnavailable {
                detail,
                retry_after_ms: STORE_RETRY_AFTER_MS,
            },
            other => Self::internal(other),
        }
    }
}

impl ToolError {
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        Self::Internal {
            detail: detail.to_string(),
        }
    }

    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Validation { .. } | Self::Invalid { .. } => ErrorCode::ValidationInvalid,
            Self::NotFound => ErrorCode::ResourceNotFound,
            Self::AuthRequired { .. } => ErrorCode::AuthRequired,
            Self::RateLimited { .. } => ErrorCode::RateLimited,
            Self::ScopeInsufficient { .. } => ErrorCode::ScopeInsufficient,
            Self::UpstreamUnavailable { .. }
            | Self::EvaluationsBusy { .. }
            | Self::AuditUnavailable { .. }
            | Self::StoreUnavailable { .. }
            | Self::OrganizationNotServedHere { .. } => ErrorCode::UpstreamUnavailable,
            Self::Internal { .. } => ErrorCode::Internal,
        }
    }

    /// The DAP error object (error.schema.json), as the tree the pipeline
    /// sends. The type holds only strings, numbers and booleans, which
    /// always serialize; the `null` fallback is unreachable in practice.
    pub fn to_dap(&self, error_id: &str, trace_id: &str, now: DateTime<Utc>) -> Value {
        serde_json::to_value(self.dap_error(error_id, trace_id, now)).unwrap_or(Value::Null)
    }

    /// The DAP error object, typed ([`DapError`], checked against its
    /// definition by `output::drift`).
    pub fn dap_error(&self, error_id: &str, trace_id: &str, now: DateTime<Utc>) -> DapError {
        let code = self.code();
        let (message, field_errors): (String, Option<&Vec<FieldError>>) = match self {
            Self::Validation { field_errors } => (
                "The arguments do not satisfy the tool's input schema.".to_owned(),
                Some(field_errors),
            ),
            Self::Invalid {
                message,
                field_errors,
            } => (message.clone(), Some(field_errors)),
            Self::NotFound => (self.to_string(), None),
            Self::AuthRequired { how } => (
                format!("This tool requires authentication. {how}"),
                None,
            ),
            Self::RateLimited { .. } => (
                "Too many requests for this tool from your address; retry after retry_after_ms, or authenticate.".to_owned(),
                None,
            ),
            Self::ScopeInsufficient { scope } => (
                format!("Your credential does not grant the scope {scope} that this tool requires; ask the gateway operator for a credential with it."),
                None,
            ),
            Self::UpstreamUnavailable { .. } => (
                "The dealer's availability system did not give a usable answer; availability was not verified. Retry after retry_after_ms.".to_owned(),
                None,
            ),
            Self::EvaluationsBusy { .. } => (
                "The gateway's offer evaluations are all busy; nothing was evaluated. Retry after retry_after_ms.".to_owned(),
                None,
            ),
            Self::AuditUnavailable { .. } => (
                "The gateway could not record this read in its audit log, so it was not answered. Retry after retry_after_ms.".to_owned(),
                None,
            ),
            Self::StoreUnavailable { .. } => (
                "The gateway's data store is unavailable for the moment; nothing was answered. Retry after retry_after_ms.".to_owned(),
                None,
            ),
            Self::OrganizationNotServedHere { .. } => (
                "This gateway replica does not serve that organization (the gateway is sharded by organization); nothing was looked up. Send tools/call with the Mcp-Param-Organization header (the organization_id argument) so the load balancer routes it to the replica that serves it, then retry after retry_after_ms.".to_owned(),
                None,
            ),
            Self::Internal { .. } => (
                format!(
                    "The gateway failed unexpectedly; quote error id {error_id} to the operator."
                ),
                None,
            ),
        };
        let retry_after_ms = match self {
            // The schema's bound: at most a day.
            Self::RateLimited { retry_after_ms }
            | Self::UpstreamUnavailable { retry_after_ms }
            | Self::EvaluationsBusy { retry_after_ms }
            | Self::AuditUnavailable { retry_after_ms }
            | Self::StoreUnavailable { retry_after_ms, .. }
            | Self::OrganizationNotServedHere { retry_after_ms } => {
                Some((*retry_after_ms).min(86_400_000))
            }
            Self::Validation { .. }
            | Self::Invalid { .. }
            | Self::AuthRequired { .. }
            | Self::ScopeInsufficient { .. }
            | Self::NotFound
            | Self::Internal { .. } => None,
        };
        DapError {
            error_id: error_id.to_owned(),
            code,
            // error.schema.json `message` `maxLength`, cut with the one
            // wire `truncate` (never inside a character).
            message: truncate(&message, MESSAGE_MAX_CHARS).to_owned(),
            retryable: code.retryable(),
            trace_id: trace_id.to_owned(),
            created_at: now.to_rfc3339_opts(SecondsFormat::Millis, true),
            retry_after_ms,
            details: field_errors
                .filter(|e| !e.is_empty())
                .map(|errors| ErrorDetails {
                    field_errors: errors.clone(),
                    current_freshness: None,
                }),
        }
    }
}

/// The DAP error object (error.schema.json `error`; DAP 0.1 "Errors"): the
/// `structuredContent` of every failed DAP tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DapError {
    pub error_id: String,
    #[serde(serialize_with = "code_text")]
    pub code: ErrorCode,
    pub message: String,
    /// Derived from `code` alone (DAP-ERR-001).
    pub retryable: bool,
    pub trace_id: String,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<ErrorDetails>,
}

impl ToolOutput for DapError {
    const OUTPUT: &'static str = "error.schema.json#/$defs/error";
}

/// DAP `errorDetails`: field errors (values never echoed, DAP-ERR-002) or
/// the current freshness of a stale record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorDetails {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub field_errors: Vec<FieldError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_freshness: Option<Freshness>,
}

fn code_text<S: Serializer>(code: &ErrorCode, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(code.as_str())
}
