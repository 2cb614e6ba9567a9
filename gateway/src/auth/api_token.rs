//! Gateway API tokens: `dgw_<token_id>_<secret>` (docs/tokens-and-audit.md).
//!
//! - `token_id`: 16 lowercase hex characters (64 random bits). Public: it
//!   names the token in `token list`, `token revoke` and audit events.
//! - `secret`: 32 bytes from the operating system's CSPRNG, base64url
//!   without padding (43 characters).
//!
//! The store keeps only `sha256:<hex>` of the secret text. A fast hash is
//! right here: the secret is 256 uniformly random bits, so unlike a password
//! it cannot be guessed from its hash by trying candidates, however fast the
//! hash; a slow KDF would only slow down every request. The token is shown
//! once, when created, and never again.
//!
//! A verified token resolves to a [`Grant`] (DAP-CORE-029): subject,
//! audience (this gateway), organization, rooftops or an explicit group
//! grant, scopes, purpose and expiry; no delegation.

use std::collections::BTreeSet;
use std::fmt;

use base64::Engine as _;
use chrono::{DateTime, SubsecRound as _, TimeDelta, Utc};
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use super::{Credential, Grant, RooftopScope};
use crate::catalog::Catalog;
use crate::store::{ApiTokenRecord, Store, StoreError};

/// Every gateway API token starts with this.
pub const TOKEN_PREFIX: &str = "dgw_";
/// Scope of the inventory profile.
pub const SCOPE_INVENTORY_READ: &str = "dealeragent:inventory:read";
/// Scope of the pricing profile.
pub const SCOPE_PRICING_READ: &str = "dealeragent:pricing:read";
/// The longest purpose accepted, in characters.
pub const MAX_PURPOSE_CHARS: usize = 128;
/// The longest subject accepted, in characters.
pub const MAX_SUBJECT_CHARS: usize = 256;
/// The longest lifetime of a token, in days.
pub const MAX_LIFETIME_DAYS: i64 = 365;

/// Random bytes of a token id (16 hex characters).
const TOKEN_ID_BYTES: usize = 8;
/// Random bytes of a secret.
const SECRET_BYTES: usize = 32;
/// base64url characters of a 32-byte secret, without padding.
const SECRET_CHARS: usize = 43;

/// A freshly generated token. `token` is the only copy of the secret: show
/// it once and drop it. Its `Debug` output leaves the token out.
#[derive(Clone, PartialEq, Eq)]
pub struct NewToken {
    pub token_id: String,
    /// `dgw_<token_id>_<secret>`.
    pub token: String,
}

impl NewToken {
    /// `sha256:<hex>` of the secret: what the store keeps.
    pub fn secret_hash(&self) -> String {
        let (_, secret) = parse(&self.token).expect("a generated token parses");
        hash_secret(secret)
    }
}

impl fmt::Debug for NewToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewToken")
            .field("token_id", &self.token_id)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// A new random token.
///
/// # Panics
/// When the operating system's random source fails (as the standard
/// library's hash map seeding would).
pub fn generate() -> NewToken {
    let mut id = [0u8; TOKEN_ID_BYTES];
    let mut secret = [0u8; SECRET_BYTES];
    getrandom::fill(&mut id).expect("the OS random number generator works");
    getrandom::fill(&mut secret).expect("the OS random number generator works");
    let token_id = hex::encode(id);
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret);
    NewToken {
        token: format!("{TOKEN_PREFIX}{token_id}_{secret}"),
        token_id,
    }
}

/// Split a token into (`token_id`, `secret`); `None` unless it has exactly
/// the generated shape. The secret may itself contain `_` (base64url).
pub fn parse(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix(TOKEN_PREFIX)?;
    let token_id = rest.get(..2 * TOKEN_ID_BYTES)?;
    let secret = rest.get(2 * TOKEN_ID_BYTES..)?.strip_prefix('_')?;
    let lower_hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
    if !token_id.bytes().all(lower_hex) || secret.len() != SECRET_CHARS {
        return None;
    }
    // Canonical base64url of exactly 32 bytes (the decoder rejects padding
    // and nonzero trailing bits, so each secret has one spelling).
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(secret)
        .ok()?;
    (decoded.len() == SECRET_BYTES).then_some((token_id, secret))
}

/// `sha256:<hex>` of a secret's text.
pub fn hash_secret(secret: &str) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(secret.as_bytes())))
}

/// Why a presented token grants nothing. Closed; every variant maps to
/// `dealeragent.auth.invalid`. A wrong secret for a known id is `Unknown`,
/// so a caller cannot tell which token ids exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenRejection {
    #[error("the token is malformed")]
    Malformed,
    #[error("the token is not known")]
    Unknown,
    #[error("the token has expired")]
    Expired,
    #[error("the token has been revoked")]
    Revoked,
}

/// A failed verification: a rejected token, or a store that could not be
/// asked (which must not look like a bad credential to the caller).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Rejected(#[from] TokenRejection),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Verify a presented token at `now` and build its grant for `audience`
/// (this gateway's resource URL). Malformed tokens never reach the store.
pub async fn verify(
    store: &dyn Store,
    token: &str,
    audience: &str,
    now: DateTime<Utc>,
) -> Result<Grant, VerifyError> {
    let (token_id, secret) = parse(token).ok_or(TokenRejection::Malformed)?;
    let record = store
        .get_api_token(token_id)
        .await?
        .ok_or(TokenRejection::Unknown)?;
    if !constant_time_eq(
        hash_secret(secret).as_bytes(),
        record.secret_hash.as_bytes(),
    ) {
        return Err(TokenRejection::Unknown.into());
    }
    if record.revoked_at.is_some() {
        return Err(TokenRejection::Revoked.into());
    }
    if now >= record.expires_at {
        return Err(TokenRejection::Expired.into());
    }
    Ok(Grant {
        subject: record.subject,
        audience: audience.to_owned(),
        organization_id: record.organization_id,
        rooftops: record.rooftops,
        scopes: record.scopes,
        purpose: record.purpose,
        expires_at: record.expires_at,
        delegation: Vec::new(),
        credential: Credential::ApiToken {
            token_id: record.token_id,
        },
    })
}

/// Equality without an early exit: the time taken does not depend on where
/// the inputs first differ.
///
/// The inputs are SHA-256 digests, not secrets, so even a leaky comparison
/// would tell an attacker only how much of a digest matched, which is
/// useless without preimages; this is defence in depth, and a manual
/// xor-fold (kept opaque to the optimiser with `black_box`) does it without
/// another dependency. Lengths are public (both are `sha256:` + 64 hex).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a
        .iter()
        .zip(b)
        .fold(0u8, |acc, (x, y)| acc | std::hint::black_box(x ^ y));
    std::hint::black_box(diff) == 0
}

/// Is a stored token usable at `now`?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenStatus {
    Active,
    Expired,
    Revoked,
}

impl TokenStatus {
    /// Revoked wins over expired, as in [`verify`].
    pub fn of(record: &ApiTokenRecord, now: DateTime<Utc>) -> Self {
        if record.revoked_at.is_some() {
            Self::Revoked
        } else if now >= record.expires_at {
            Self::Expired
        } else {
            Self::Active
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Expired => "expired",
            Self::Revoked => "revoked",
        }
    }
}

/// The scopes a token may carry: every scope a catalog profile declares,
/// plus the inventory and pricing read scopes.
pub fn known_scopes(catalog: &Catalog) -> BTreeSet<String> {
    catalog
        .profiles
        .iter()
        .flat_map(|p| p.scopes.iter().cloned())
        .chain([
            SCOPE_INVENTORY_READ.to_owned(),
            SCOPE_PRICING_READ.to_owned(),
        ])
        // Scopes of gateway surfaces such as the console (docs/console.md),
        // so `token create --scopes dealergateway:console:read` is accepted.
        .chain(catalog.gateway_scopes.iter().map(|s| s.scope.clone()))
        .collect()
}

/// Parse a lifetime like `30d`, `12h`, `90m` or `3600s`: a positive whole
/// number and one unit, at most [`MAX_LIFETIME_DAYS`] days.
pub fn parse_lifetime(text: &str) -> Result<TimeDelta, String> {
    let bad = || {
        format!(
            "--expires-in {text:?} is not a lifetime: give a positive whole number and a unit, \
             d, h, m or s (e.g. 30d, 12h, 90m, 3600s), at most {MAX_LIFETIME_DAYS}d"
        )
    };
    let unit = text.chars().last().ok_or_else(bad)?;
    let digits = &text[..text.len() - unit.len_utf8()];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: i64 = digits.parse().map_err(|_| bad())?;
    let seconds_per_unit = match unit {
        'd' => 86_400,
        'h' => 3_600,
        'm' => 60,
        's' => 1,
        _ => return Err(bad()),
    };
    let seconds = n.checked_mul(seconds_per_unit).ok_or_else(bad)?;
    if seconds == 0 || seconds > MAX_LIFETIME_DAYS * 86_400 {
        return Err(bad());
    }
    Ok(TimeDelta::seconds(seconds))
}

/// What a new token grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequest {
    pub subject: String,
    pub organization_id: String,
    pub rooftops: RooftopScope,
    pub scopes: BTreeSet<String>,
    pub purpose: String,
    pub expires_at: DateTime<Utc>,
}

/// A created token: printed once (`--json` prints exactly these fields).
/// Its `Debug` output leaves the token out.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct IssuedToken {
    pub token_id: String,
    pub token: String,
    pub expires_at: DateTime<Utc>,
}

impl fmt::Debug for IssuedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuedToken")
            .field("token_id", &self.token_id)
            .field("token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// Why no token was created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// The request breaks a rule; the message says which.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Validate `request` and store a new token for it; the returned token is
/// the only copy of its secret.
///
/// Rules: a subject (at most [`MAX_SUBJECT_CHARS`] characters); a stored
/// organization; at least one rooftop, each a rooftop of that organization
/// (or the group grant); at least one scope, each in `known_scopes`; a
/// purpose of 1..=[`MAX_PURPOSE_CHARS`] characters; an expiry after `now`
/// and at most [`MAX_LIFETIME_DAYS`] days after it. Times are kept to the
/// microsecond, as the store keeps them.
pub async fn create(
    store: &dyn Store,
    request: &TokenRequest,
    known_scopes: &BTreeSet<String>,
    now: DateTime<Utc>,
) -> Result<IssuedToken, CreateError> {
    let invalid = |message: String| Err(CreateError::Invalid(message));
    let subject = request.subject.trim();
    if subject.is_empty() || subject.chars().count() > MAX_SUBJECT_CHARS {
        return invalid(format!(
            "--subject must be 1 to {MAX_SUBJECT_CHARS} characters"
        ));
    }
    let purpose = request.purpose.trim();
    if purpose.is_empty() || purpose.chars().count() > MAX_PURPOSE_CHARS {
        return invalid(format!(
            "--purpose must be 1 to {MAX_PURPOSE_CHARS} characters"
        ));
    }
    if request.scopes.is_empty() {
        return invalid("--scopes must name at least one scope".to_owned());
    }
    if let Some(unknown) = request.scopes.iter().find(|s| !known_scopes.contains(*s)) {
        let known: Vec<&str> = known_scopes.iter().map(String::as_str).collect();
        return invalid(format!(
            "unknown scope {unknown:?}; known scopes: {}",
            known.join(", ")
        ));
    }
    let now = now.trunc_subsecs(6);
    let expires_at = request.expires_at.trunc_subsecs(6);
    if expires_at <= now || expires_at - now > TimeDelta::days(MAX_LIFETIME_DAYS) {
        return invalid(format!(
            "the expiry must be after now and at most {MAX_LIFETIME_DAYS} days away"
        ));
    }
    let org_id = &request.organization_id;
    let Some(org) = store.get_organization(org_id).await? else {
        return invalid(format!(
            "organization {org_id:?} is not in the store (import its dealers file first)"
        ));
    };
    if let RooftopScope::Rooftops(ids) = &request.rooftops {
        if ids.is_empty() {
            return invalid("--rooftops must name at least one rooftop".to_owned());
        }
        if let Some(foreign) = ids
            .iter()
            .find(|id| !org.rooftops.iter().any(|r| &r.rooftop_id == *id))
        {
            let kept: Vec<&str> = org.rooftops.iter().map(|r| r.rooftop_id.as_str()).collect();
            return invalid(format!(
                "rooftop {foreign:?} is not a rooftop of organization {org_id:?}; its rooftops: {}",
                kept.join(", ")
            ));
        }
    }
    let new = generate();
    let record = ApiTokenRecord {
        token_id: new.token_id.clone(),
        secret_hash: new.secret_hash(),
        subject: subject.to_owned(),
        organization_id: org_id.clone(),
        rooftops: request.rooftops.clone(),
        scopes: request.scopes.clone(),
        purpose: purpose.to_owned(),
        created_at: now,
        expires_at,
        revoked_at: None,
    };
    store.create_api_token(&record).await?;
    Ok(IssuedToken {
        token_id: new.token_id,
        token: new.token,
        expires_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_parse_and_differ() {
        let a = generate();
        let b = generate();
        assert_ne!(a.token, b.token);
        assert_ne!(a.token_id, b.token_id);
        assert_eq!(a.token.len(), 4 + 16 + 1 + 43);
        let (id, secret) = parse(&a.token).expect("parses");
        assert_eq!(id, a.token_id);
        assert_eq!(secret.len(), 43);
        assert!(a.secret_hash().starts_with("sha256:"));
        assert_eq!(a.secret_hash().len(), 7 + 64);
        assert!(!a.secret_hash().contains(secret));
        assert!(!format!("{a:?}").contains(secret));
    }

    #[test]
    fn parse_rejects_anything_but_the_exact_shape() {
        let good = generate().token;
        let (id, secret) = parse(&good).unwrap();
        let cases = [
            String::new(),
            "dgw_".to_owned(),
            good.replacen("dgw_", "dgx_", 1),
            format!("dgw_{}_{secret}", id.to_uppercase()),
            format!("dgw_{}_{secret}", &id[..15]),
            format!("dgw_{id}{secret}"),
            format!("dgw_{id}_{secret}A"),
            format!("dgw_{id}_{}", &secret[..42]),
            format!("dgw_{id}_{}=", &secret[..42]),
            format!("dgw_{id}_{}+", &secret[..42]),
            format!("{good} "),
            format!("dgw_{}é_{secret}", &id[..14]),
        ];
        for case in cases {
            assert_eq!(parse(&case), None, "{case:?}");
        }
    }

    #[test]
    fn constant_time_eq_is_equality() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn lifetimes() {
        assert_eq!(parse_lifetime("30d"), Ok(TimeDelta::days(30)));
        assert_eq!(parse_lifetime("12h"), Ok(TimeDelta::hours(12)));
        assert_eq!(parse_lifetime("90m"), Ok(TimeDelta::minutes(90)));
        assert_eq!(parse_lifetime("3600s"), Ok(TimeDelta::seconds(3600)));
        assert_eq!(parse_lifetime("365d"), Ok(TimeDelta::days(365)));
        assert_eq!(parse_lifetime("8760h"), Ok(TimeDelta::days(365)));
        for bad in [
            "",
            "d",
            "0d",
            "366d",
            "8761h",
            "30",
            "30w",
            "-1d",
            "+1d",
            "1.5h",
            " 1d",
            "1d ",
            "99999999999999999999d",
            "1é",
        ] {
            assert!(parse_lifetime(bad).is_err(), "{bad:?}");
        }
    }
}
