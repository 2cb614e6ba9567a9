//! Gateway API token metadata (never the secret).

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use super::grant::RooftopScope;

/// One gateway API token as stored (docs/tokens-and-audit.md). The secret
/// itself is never stored: only `secret_hash`, `sha256:<hex>` of it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiTokenRecord {
    /// Public identifier: 16 lowercase hex characters.
    pub token_id: String,
    /// `sha256:<hex>` of the token's secret part.
    pub secret_hash: String,
    pub subject: String,
    pub organization_id: String,
    pub rooftops: RooftopScope,
    pub scopes: BTreeSet<String>,
    pub purpose: String,
    /// Microsecond precision (what both backends keep).
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// Set once by the first revocation.
    pub revoked_at: Option<DateTime<Utc>>,
}

impl std::fmt::Debug for ApiTokenRecord {
    // Leaves the hash out: nothing derived from the secret reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiTokenRecord")
            .field("token_id", &self.token_id)
            .field("secret_hash", &"<redacted>")
            .field("subject", &self.subject)
            .field("organization_id", &self.organization_id)
            .field("rooftops", &self.rooftops)
            .field("scopes", &self.scopes)
            .field("purpose", &self.purpose)
            .field("created_at", &self.created_at)
            .field("expires_at", &self.expires_at)
            .field("revoked_at", &self.revoked_at)
            .finish()
    }
}
