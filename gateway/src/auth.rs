//! Who is calling, and what they may see.
//!
//! Every tool runs with the caller's principal from day one: policy is
//! decided here, before any lookup that could reveal a foreign record
//! (DAP-CORE-029..031). The foundation serves anonymous callers only; bearer
//! tokens and grants arrive with the security issue and extend `Principal`.
//! `_meta` keys from the caller never confer anything (DAP reference test
//! `test_caller_metadata_cannot_forge_transport_authorization`).

use crate::store::{OrganizationRecord, RooftopRecord};

/// The authenticated identity behind a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// No credentials: sees only what dealers publish to anyone.
    Anonymous,
}

impl Principal {
    /// May this principal read this rooftop's published data? Anonymous
    /// callers see a rooftop only when its publication policy allows
    /// anonymous reads.
    pub fn may_read_rooftop(&self, _org: &OrganizationRecord, rooftop: &RooftopRecord) -> bool {
        match self {
            Principal::Anonymous => rooftop.settings.anonymous_reads,
        }
    }

    /// The rooftops of `org` this principal may read, in file order.
    pub fn visible_rooftops<'a>(&self, org: &'a OrganizationRecord) -> Vec<&'a RooftopRecord> {
        org.rooftops
            .iter()
            .filter(|r| self.may_read_rooftop(org, r))
            .collect()
    }

    /// Whether results for this principal may be cached publicly (MCP
    /// `cacheScope`; DAP spec 4.2: caller-specific views are private).
    pub fn cache_scope(&self) -> &'static str {
        match self {
            Principal::Anonymous => "public",
        }
    }

    /// What a pagination cursor is bound to: a cursor issued to one caller
    /// is refused for any other (DAP-CORE-026..028). Hashed inside the
    /// sealed cursor, so it never appears in it.
    pub fn grant_fingerprint(&self) -> String {
        match self {
            Principal::Anonymous => "anonymous".to_owned(),
        }
    }

    /// The audit/log subject; never a token.
    pub fn subject(&self) -> &str {
        match self {
            Principal::Anonymous => "anonymous",
        }
    }
}
