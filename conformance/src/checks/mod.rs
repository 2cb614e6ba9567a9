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
pub mod manifest;
pub mod mcp;
pub mod pricing;
pub mod redaction;
pub mod schema;

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
        let missing = self.roles.iter().find(|r| !cx.client.has_role(r));
        let outcome = match missing {
            Some(role) => Outcome::new().skip(format!("needs role {role}")),
            None => match (self.run)(cx).await {
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
            required: self.required,
            outcome,
        }
    }
}

/// Every check in run order. The schema group runs last: it validates
/// every tool output the other groups obtained.
pub fn all() -> Vec<&'static Check> {
    let groups: [&'static [Check]; 9] = [
        mcp::CHECKS,
        manifest::CHECKS,
        isolation::CHECKS,
        cursor::CHECKS,
        freshness::CHECKS,
        pricing::CHECKS,
        availability::CHECKS,
        redaction::CHECKS,
        schema::CHECKS,
    ];
    groups.iter().flat_map(|g| g.iter()).collect()
}
