//! The audit event record (DAP-CORE-039/040).

use chrono::{DateTime, SubsecRound as _, Utc};
use serde::{Deserialize, Serialize};

use super::grant::{Credential, Principal};

/// One audit event (DAP-CORE-039/040): written for every nonpublic read and
/// every availability verification. Never holds a token, a secret or raw
/// tool arguments. Serialized as one JSON line by `audit export`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// UUID v7 text ([`AuditEvent::for_principal`] makes one).
    pub event_id: String,
    /// Microsecond precision (what both backends keep).
    pub occurred_at: DateTime<Utc>,
    pub trace_id: String,
    /// The grant's subject, or `anonymous`.
    pub subject: String,
    /// Which credential (token id or issuer, never a secret); `None` for an
    /// anonymous caller.
    pub credential: Option<Credential>,
    /// The organization the call addressed, when it named one.
    pub organization_id: Option<String>,
    /// The rooftops the call read or was refused, among those that exist in
    /// the directory (docs/tokens-and-audit.md "Audit events").
    pub rooftop_ids: Vec<String>,
    /// How many further rooftop ids the call named that name no rooftop of
    /// the directory: counted, never stored, so a caller cannot grow the log
    /// with ids of its own making.
    #[serde(default)]
    pub unresolved_rooftops: u32,
    /// e.g. `dealeragent.inventory.search`.
    pub tool: String,
    /// e.g. `dealeragent.inventory/0.1`.
    pub profile: String,
    /// `allow` or `deny`.
    pub policy_decision: String,
    /// Ids of the records returned or asked for (vehicle ids, ...).
    pub resource_ids: Vec<String>,
    /// `ok`, or the DAP error code of the call.
    pub outcome: String,
    /// The grant's delegation chain (outermost actor first).
    pub delegation: Vec<String>,
}

impl AuditEvent {
    /// A new event for `principal` (fresh UUID v7 id, now): subject,
    /// credential and delegation come from the grant; the decision starts as
    /// `allow`, the outcome as `ok`, and the lists empty.
    pub fn for_principal(principal: &Principal, trace_id: &str, tool: &str, profile: &str) -> Self {
        let grant = principal.grant();
        Self {
            event_id: uuid::Uuid::now_v7().to_string(),
            occurred_at: Utc::now().trunc_subsecs(6),
            trace_id: trace_id.to_owned(),
            subject: principal.subject().to_owned(),
            credential: grant.map(|g| g.credential.clone()),
            organization_id: None,
            rooftop_ids: Vec::new(),
            unresolved_rooftops: 0,
            tool: tool.to_owned(),
            profile: profile.to_owned(),
            policy_decision: "allow".to_owned(),
            resource_ids: Vec::new(),
            outcome: "ok".to_owned(),
            delegation: grant.map(|g| g.delegation.clone()).unwrap_or_default(),
        }
    }
}
