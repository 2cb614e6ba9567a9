//! Who is calling and what their grant covers (DAP spec 7). Built only by
//! the credential verifiers in `crate::auth`, never from request data.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::dealer::{OrganizationRecord, RooftopRecord};

/// Which rooftops of its organization a grant covers (DAP spec 7:
/// "allowed rooftop identifiers or an explicit group-level grant").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RooftopScope {
    /// Exactly these rooftops.
    Rooftops(BTreeSet<String>),
    /// Every rooftop of the organization, present and future: an explicit
    /// group grant, never implied by listing rooftops.
    Group,
}

/// What kind of credential produced a grant (for audit; never the secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Credential {
    /// A gateway API token; `token_id` is its public identifier.
    ApiToken { token_id: String },
    /// A JWT access token from an external OAuth 2.1 authorization server.
    Jwt {
        issuer: String,
        token_id: Option<String>,
    },
}

/// One authorization grant: everything DAP spec 7 requires a grant to
/// carry. Built only by the credential verifiers, never from request data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub subject: String,
    /// The resource this grant is for (this gateway's resource URL).
    pub audience: String,
    pub organization_id: String,
    pub rooftops: RooftopScope,
    /// e.g. `dealeragent:inventory:read`.
    pub scopes: BTreeSet<String>,
    pub purpose: String,
    pub expires_at: DateTime<Utc>,
    /// Delegation chain (RFC 8693 `act`), outermost actor first; empty
    /// when the subject acts for itself.
    pub delegation: Vec<String>,
    pub credential: Credential,
}

impl Grant {
    /// Does this grant cover `rooftop_id` of `organization_id`?
    pub fn covers(&self, organization_id: &str, rooftop_id: &str) -> bool {
        self.organization_id == organization_id
            && match &self.rooftops {
                RooftopScope::Group => true,
                RooftopScope::Rooftops(ids) => ids.contains(rooftop_id),
            }
    }

    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }
}

/// The identity behind a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// No credentials: sees only what dealers publish to anyone.
    Anonymous,
    /// A verified credential and its grant.
    Authenticated(Arc<Grant>),
}

impl Principal {
    /// May this principal read this rooftop's data? Anyone may read a
    /// rooftop published for anonymous reads; otherwise only a grant that
    /// covers the rooftop. (Scopes are checked per tool, before this.)
    pub fn may_read_rooftop(&self, org: &OrganizationRecord, rooftop: &RooftopRecord) -> bool {
        rooftop.settings.anonymous_reads
            || match self {
                Principal::Anonymous => false,
                Principal::Authenticated(g) => g.covers(&org.organization_id, &rooftop.rooftop_id),
            }
    }

    /// The rooftops of `org` this principal may read, in file order.
    pub fn visible_rooftops<'a>(&self, org: &'a OrganizationRecord) -> Vec<&'a RooftopRecord> {
        org.rooftops
            .iter()
            .filter(|r| self.may_read_rooftop(org, r))
            .collect()
    }

    /// MCP `cacheScope` of a caller-specific view (DAP spec 4.2: a
    /// caller-specific manifest or resource MUST be private).
    pub fn cache_scope(&self) -> &'static str {
        match self {
            Principal::Anonymous => "public",
            Principal::Authenticated(_) => "private",
        }
    }

    /// What a pagination cursor is bound to: a cursor issued to one caller
    /// is refused for any other (DAP-CORE-026..028). It is hashed again,
    /// keyed, inside the sealed cursor, so it never appears in it.
    pub fn grant_fingerprint(&self) -> String {
        match self {
            Principal::Anonymous => "anonymous".to_owned(),
            Principal::Authenticated(g) => {
                let canonical = serde_json::to_vec(g.as_ref()).unwrap_or_default();
                format!("grant:{}", hex::encode(Sha256::digest(&canonical)))
            }
        }
    }

    /// The audit/log subject; never a token.
    pub fn subject(&self) -> &str {
        match self {
            Principal::Anonymous => "anonymous",
            Principal::Authenticated(g) => &g.subject,
        }
    }

    /// The grant, when authenticated.
    pub fn grant(&self) -> Option<&Grant> {
        match self {
            Principal::Anonymous => None,
            Principal::Authenticated(g) => Some(g),
        }
    }
}
