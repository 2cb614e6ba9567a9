//! The checks, one module per group. A check is an id, the requirement it
//! proves (section, keyword, paraphrase), whether a claim needs it, the
//! roles it needs, and an async function over the shared [`Ctx`].

use std::future::Future;
use std::pin::Pin;

use crate::client::ClientError;
use crate::context::Ctx;
use crate::report::{CheckRecord, Outcome};

pub mod availability;
pub mod cursor;
pub mod freshness;
pub mod isolation;
pub mod lint;
pub mod manifest;
pub mod mcp;
pub mod pricing;
pub mod redaction;
pub mod schema;
pub mod used_vehicle;

/// A check's future: its outcome, or the transport failure that stopped it.
pub type CheckFuture<'a> = Pin<Box<dyn Future<Output = Result<Outcome, ClientError>> + Send + 'a>>;

/// One conformance check.
pub struct Check {
    /// Stable id, e.g. `DAPC-ISO-002`.
    pub id: &'static str,
    pub group: &'static str,
    pub title: &'static str,
    /// The DAP (or MCP) section the requirement comes from.
    pub section: &'static str,
    /// MUST, MUST NOT, SHOULD, ...
    pub keyword: &'static str,
    /// A short paraphrase of the requirement.
    pub text: &'static str,
    /// Whether a claim needs it to pass.
    pub required: bool,
    /// Roles (operator grants) it needs; without one it is skipped.
    pub roles: &'static [&'static str],
    pub run: for<'a> fn(&'a Ctx) -> CheckFuture<'a>,
}

impl Check {
    /// Run the check (or skip it for a missing role) and record it.
    pub async fn execute(&self, cx: &Ctx) -> CheckRecord {
        // The checks of an optional profile bind only a gateway that
        // advertises it: otherwise they are skipped and not required.
        let unadvertised = optional_profile(self.group).filter(|p| !advertises(cx, p));
        let missing = self.roles.iter().find(|r| !cx.client.has_role(r));
        let outcome = match (unadvertised, missing) {
            (Some(profile), _) => {
                Outcome::new().skip(format!("the manifest does not advertise {profile}"))
            }
            (None, Some(role)) => Outcome::new().skip(format!("needs role {role}")),
            (None, None) => match (self.run)(cx).await {
                Ok(outcome) => outcome,
                Err(e) => Outcome::new().fail(format!("the gateway stopped answering: {e}")),
            },
        };
        CheckRecord {
            id: self.id,
            group: self.group,
            title: self.title,
            section: self.section,
            keyword: self.keyword,
            text: self.text,
            required: self.required && unadvertised.is_none(),
            outcome,
        }
    }
}

/// The optional DAP profile a group of checks belongs to, if any.
fn optional_profile(group: &str) -> Option<&'static str> {
    (group == used_vehicle::CHECKS[0].group).then_some(used_vehicle::PROFILE)
}

/// Whether the anonymous manifest lists `profile` among its capabilities.
fn advertises(cx: &Ctx, profile: &str) -> bool {
    cx.manifest
        .get("capabilities")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|caps| {
            caps.iter()
                .any(|c| c.get("profile").and_then(serde_json::Value::as_str) == Some(profile))
        })
}

/// Every check in run order. The schema group runs last: it validates
/// every tool output the other groups obtained.
pub fn all() -> Vec<&'static Check> {
    let groups: [&'static [Check]; 11] = [
        mcp::CHECKS,
        manifest::CHECKS,
        isolation::CHECKS,
        cursor::CHECKS,
        freshness::CHECKS,
        pricing::CHECKS,
        availability::CHECKS,
        redaction::CHECKS,
        used_vehicle::CHECKS,
        lint::CHECKS,
        schema::CHECKS,
    ];
    groups.iter().flat_map(|g| g.iter()).collect()
}
