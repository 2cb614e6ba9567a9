//! The audit event record (DAP-CORE-039/040).

use chrono::{DateTime, SubsecRound as _, Utc};
use serde::{Deserialize, Serialize};

use super::grant::{Credential, Principal};

/// One audit event (DAP-CORE-039/040): written for every nonpublic read and
/// every availability verification. Never holds a token, a secret or raw
/// tool arguments. Serialized as one JSON line by `audit export`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// UUID v7 text (the constructors below make one).
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

/// Every audit event is made here, by one of the constructors below: a
/// fresh UUID v7 id, the time now (microseconds), the decision `allow`, the
/// outcome `ok`, and empty lists. A site then fills in what only it knows
/// (organization, rooftops, resource ids) and, for a refusal, the decision
/// and outcome ([`AuditEvent::decided`]).
impl AuditEvent {
    /// The one struct literal of a new event: who acted (subject, credential,
    /// delegation) and through what (tool, profile); everything else at its
    /// starting value.
    fn new(
        trace_id: String,
        subject: String,
        credential: Option<Credential>,
        delegation: Vec<String>,
        tool: &str,
        profile: &str,
    ) -> Self {
        Self {
            event_id: uuid::Uuid::now_v7().to_string(),
            occurred_at: Utc::now().trunc_subsecs(6),
            trace_id,
            subject,
            credential,
            organization_id: None,
            rooftop_ids: Vec::new(),
            unresolved_rooftops: 0,
            tool: tool.to_owned(),
            profile: profile.to_owned(),
            policy_decision: "allow".to_owned(),
            resource_ids: Vec::new(),
            outcome: "ok".to_owned(),
            delegation,
        }
    }

    /// A new event for `principal` (a tool call, a resource read, a console
    /// page): subject, credential and delegation come from the grant.
    pub fn for_principal(principal: &Principal, trace_id: &str, tool: &str, profile: &str) -> Self {
        let grant = principal.grant();
        Self::new(
            trace_id.to_owned(),
            principal.subject().to_owned(),
            grant.map(|g| g.credential.clone()),
            grant.map(|g| g.delegation.clone()).unwrap_or_default(),
            tool,
            profile,
        )
    }

    /// A new event for an operator's command that changes `organization`'s
    /// data (e.g. `import programs`): `subject` names the operator (e.g.
    /// `cli:alice`), there is no credential and no delegation, and the
    /// command is its own trace (a fresh id).
    pub fn for_operator(subject: String, organization: &str, tool: &str, profile: &str) -> Self {
        let mut event = Self::new(
            uuid::Uuid::now_v7().simple().to_string(),
            subject,
            None,
            Vec::new(),
            tool,
            profile,
        );
        event.organization_id = Some(organization.to_owned());
        event
    }

    /// This event with `resource_ids` as the records it names.
    #[must_use]
    pub fn with_resource_ids(mut self, resource_ids: Vec<String>) -> Self {
        self.resource_ids = resource_ids;
        self
    }

    /// This event with its policy decision (`allow` or `deny`) and outcome
    /// (`ok`, or the DAP error code or refusal).
    #[must_use]
    pub fn decided(mut self, policy_decision: &str, outcome: &str) -> Self {
        policy_decision.clone_into(&mut self.policy_decision);
        outcome.clone_into(&mut self.outcome);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operator_event_names_its_organization_and_starts_allowed() {
        let event = AuditEvent::for_operator(
            "cli:alice".to_owned(),
            "org-1",
            "cli.import_programs",
            "dealergateway.programs/0.1",
        );
        assert_eq!(event.subject, "cli:alice");
        assert_eq!(event.organization_id.as_deref(), Some("org-1"));
        assert_eq!(event.credential, None);
        assert!(event.delegation.is_empty() && event.resource_ids.is_empty());
        assert_eq!(
            (event.policy_decision.as_str(), event.outcome.as_str()),
            ("allow", "ok")
        );
        // A fresh trace of its own, distinct from the event id.
        assert_eq!(event.trace_id.len(), 32);
        assert_ne!(event.trace_id, event.event_id);
        assert_eq!(event.occurred_at, event.occurred_at.trunc_subsecs(6));
    }

    #[test]
    fn an_anonymous_principal_event_has_no_credential() {
        let event = AuditEvent::for_principal(&Principal::Anonymous, "trace.1", "t", "p")
            .decided("deny", "not_found")
            .with_resource_ids(vec!["v1".to_owned()]);
        assert_eq!(event.subject, "anonymous");
        assert_eq!(event.credential, None);
        assert_eq!(event.trace_id, "trace.1");
        assert_eq!(event.policy_decision, "deny");
        assert_eq!(event.outcome, "not_found");
        assert_eq!(event.resource_ids, ["v1"]);
    }
}
