//! JWT access tokens from an external OAuth 2.1 authorization server
//! (DAP SEC-001..005: exact audience, no token passthrough).
//!
//! The gateway is an OAuth protected resource (RFC 9728): it never issues
//! these tokens, only verifies them against a JWKS file the operator
//! configures (no key is ever fetched from a URL named in a token), and
//! turns the verified claims into a [`Grant`]. The token itself is never
//! stored, logged, forwarded or put into an error message: a rejection is a
//! closed [`JwtRejection`] whose text carries no token or claim value.
//!
//! Claim set and the order of the checks: `docs/jwt.md`.
//!
//! Who does what: the JWS itself (the second parse of
//! the header, the `b64` rule, the allowed algorithm, the key family, the
//! signature encoding and the ES256/RS256 cryptography) is the maintained
//! `jsonwebtoken` crate with its pure-Rust RustCrypto backend. Ours stay
//! the rules the crate cannot express or expresses differently: the
//! JWKS file rules, the size and shape limits, refusing duplicate member
//! names, the header checks that pick the rejection (`alg` missing vs
//! not accepted, `crit`, `typ`, `kid`), key selection, the opt-in low-S
//! rule, and every claim check (the crate's own `exp`/`nbf`/`aud`/`iss`
//! checks are switched off: they read the system clock and compare
//! differently from `docs/jwt.md`).

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, TimeZone as _, Utc};
use jsonwebtoken::errors::ErrorKind as JoseErrorKind;
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value, json};

use super::{Credential, Grant, RooftopScope};

mod keys;

pub use keys::{Jwks, JwsAlgorithm, KeyRule};

/// Clock skew tolerated on `exp` and `nbf` unless configured otherwise.
pub const DEFAULT_LEEWAY_SECONDS: u64 = 60;
/// The largest configurable skew: more would keep expired tokens alive.
pub const MAX_LEEWAY_SECONDS: u64 = 300;
/// Longer tokens are refused before any decoding.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Deepest accepted RFC 8693 `act` nesting.
pub const MAX_DELEGATION_DEPTH: usize = 8;
/// Longest accepted `purpose`, in characters.
pub const MAX_PURPOSE_CHARS: usize = 128;
/// Smallest accepted RSA modulus.
pub const MIN_RSA_BITS: usize = 2048;
/// Largest accepted RSA modulus (verification cost is bounded).
pub const MAX_RSA_BITS: usize = 8192;

/// The organization the grant is for (string, required).
pub const ORGANIZATION_CLAIM: &str = "dealeragent_organization";
/// The rooftops the grant covers (non-empty array of strings).
pub const ROOFTOPS_CLAIM: &str = "dealeragent_rooftops";
/// `true`: every rooftop of the organization (an explicit group grant).
pub const GROUP_CLAIM: &str = "dealeragent_group";
/// Why the caller reads (string, required, at most 128 characters).
pub const PURPOSE_CLAIM: &str = "purpose";
/// Named by [`JwtRejection::MissingClaim`] when neither rooftops nor group
/// is granted.
pub const ROOFTOPS_OR_GROUP: &str = "dealeragent_rooftops or dealeragent_group";
/// Named by [`JwtRejection::InvalidClaim`] when both are present.
pub const ROOFTOPS_AND_GROUP: &str = "dealeragent_rooftops together with dealeragent_group";

const MAX_SUBJECT_BYTES: usize = 256;
const MAX_IDENTIFIER_CHARS: usize = 128;
const MAX_ROOFTOPS: usize = 1024;
const MAX_SCOPES: usize = 256;
const MAX_JTI_BYTES: usize = 256;
/// Why a JWT configuration was refused at start-up.
#[derive(Debug, thiserror::Error)]
pub enum JwtConfigError {
    #[error("cannot read JWKS file {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("JWKS is not valid JSON: {0}")]
    Json(String),
    #[error("JWKS must be a JSON object with a \"keys\" array (RFC 7517 section 5)")]
    NotAKeySet,
    #[error("JWKS has no keys: at least one EC P-256 or RSA (2048 bits or more) key is required")]
    Empty,
    /// `index` counts from 0 in the `keys` array.
    #[error("JWKS key {index}: {rule}")]
    Key { index: usize, rule: KeyRule },
    #[error("JWT configuration: {0}")]
    Invalid(String),
}

/// How this gateway verifies JWT access tokens.
#[derive(Debug, Clone)]
pub struct JwtConfig {
    /// The authorization server's issuer identifier, compared exactly with
    /// `iss`.
    pub issuer: String,
    /// This gateway's resource URL (RFC 8707/9728), which `aud` must
    /// contain exactly.
    pub audience: String,
    pub jwks: Jwks,
    /// Skew tolerated on `exp` and `nbf`.
    pub leeway_seconds: u64,
    /// Refuse ES256 signatures with a high S (`--jwt-require-low-s`). Off by
    /// default: common issuers (OpenSSL, Go, Java, cloud KMS) do not
    /// normalise S, so about half of their valid tokens are high-S, and the
    /// gateway keys nothing on signature bytes (docs/jwt.md).
    pub require_low_s: bool,
}

impl JwtConfig {
    /// Reads and validates the JWKS file at `jwks_path`.
    pub fn load(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        jwks_path: &Path,
        leeway_seconds: u64,
    ) -> Result<JwtConfig, JwtConfigError> {
        let text = std::fs::read_to_string(jwks_path).map_err(|error| JwtConfigError::Read {
            path: jwks_path.display().to_string(),
            error,
        })?;
        JwtConfig::new(issuer, audience, Jwks::parse(&text)?, leeway_seconds)
    }

    /// As [`JwtConfig::load`], with an already parsed key set.
    pub fn new(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        jwks: Jwks,
        leeway_seconds: u64,
    ) -> Result<JwtConfig, JwtConfigError> {
        let issuer = issuer.into();
        let audience = audience.into();
        if issuer.is_empty() || issuer.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(JwtConfigError::Invalid(
                "the issuer must be a non-empty identifier without spaces".to_owned(),
            ));
        }
        if audience.is_empty()
            || audience
                .chars()
                .any(|c| c.is_whitespace() || c.is_control())
            || !audience.contains("://")
            || audience.contains('#')
        {
            return Err(JwtConfigError::Invalid(format!(
                "the audience {audience:?} must be this gateway's absolute resource URL, without fragment (RFC 8707)"
            )));
        }
        if leeway_seconds > MAX_LEEWAY_SECONDS {
            return Err(JwtConfigError::Invalid(format!(
                "the leeway of {leeway_seconds} s exceeds {MAX_LEEWAY_SECONDS} s"
            )));
        }
        install_crypto_provider()?;
        Ok(JwtConfig {
            issuer,
            audience,
            jwks,
            leeway_seconds,
            require_low_s: false,
        })
    }

    /// Refuse (`true`) or accept (`false`, the default) high-S ES256
    /// signatures.
    #[must_use]
    pub fn with_require_low_s(mut self, require_low_s: bool) -> Self {
        self.require_low_s = require_low_s;
        self
    }

    /// Verifies a JWT access token and builds its [`Grant`]. The checks run
    /// in the order of `docs/jwt.md`; the first failure is returned.
    pub fn verify(&self, token: &str, now: DateTime<Utc>) -> Result<Grant, JwtRejection> {
        self.verify_at(token, now, None)
    }

    /// [`JwtConfig::verify`] for a token presented at an endpoint that is a
    /// protected resource of its own (an AAP endpoint,
    /// docs/compatibility.md "OAuth"): `aud` must name this gateway's
    /// resource or exactly `endpoint_resource`, the identifier of the
    /// endpoint the token was sent to (RFC 8707: a client asks for a token
    /// for the resource it calls). A token for one AAP endpoint is thus
    /// refused at another and at `/mcp`.
    pub fn verify_at(
        &self,
        token: &str,
        now: DateTime<Utc>,
        endpoint_resource: Option<&str>,
    ) -> Result<Grant, JwtRejection> {
        if token.is_empty() || token.len() > MAX_TOKEN_BYTES {
            return Err(JwtRejection::Malformed);
        }
        let mut parts = token.split('.');
        let (Some(header_b64), Some(payload_b64), Some(signature_b64), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(JwtRejection::Malformed);
        };

        // 1. Header: algorithm and key, decided by configuration only. The
        // crate parses the header too, but it cannot tell a missing `alg`
        // from one we do not accept, and knows neither our `crit` and `typ`
        // rules nor key selection, so these stay ours.
        let header = decode_object(header_b64)?;
        let algorithm = match header.get("alg") {
            Some(Value::String(name)) => {
                JwsAlgorithm::from_name(name).ok_or(JwtRejection::UnsupportedAlgorithm)?
            }
            _ => return Err(JwtRejection::Malformed),
        };
        if header.contains_key("crit") {
            // No JWS extension is understood (RFC 7515 section 4.1.11).
            return Err(JwtRejection::InvalidClaim("crit (header)"));
        }
        if let Some(typ) = header.get("typ") {
            let accepted = typ.as_str().is_some_and(|t| {
                ["at+jwt", "application/at+jwt", "jwt"]
                    .iter()
                    .any(|ok| t.eq_ignore_ascii_case(ok))
            });
            if !accepted {
                return Err(JwtRejection::InvalidClaim("typ (header)"));
            }
        }
        let kid = match header.get("kid") {
            None => None,
            Some(Value::String(kid)) => Some(kid.as_str()),
            Some(_) => return Err(JwtRejection::Malformed),
        };
        let key = self.jwks.select(kid).ok_or(JwtRejection::UnknownKey)?;
        if key.algorithm() != algorithm {
            // e.g. RS256 or HS256 against an EC key: algorithm confusion.
            return Err(JwtRejection::UnsupportedAlgorithm);
        }

        // 2. Signature, before any claim is looked at.
        if payload_b64.is_empty() || signature_b64.is_empty() {
            return Err(JwtRejection::Malformed);
        }
        if self.require_low_s && algorithm == JwsAlgorithm::Es256 {
            refuse_high_s(signature_b64)?;
        }
        // The crate parses the header again (refusing `b64: false` and
        // mistyped registered members), checks `alg` against this key's
        // one algorithm and family, verifies the signature and only then
        // decodes the claims, refusing duplicate claim names
        // ([`UniqueObject`]).
        let verified = jsonwebtoken::decode::<UniqueObject>(token, &key.decoding, &key.validation)
            .map_err(|error| rejection(error.kind()))?;

        // 3. Claims.
        self.check_claims(&verified.claims.0, now, endpoint_resource)
    }

    fn check_claims(
        &self,
        claims: &Map<String, Value>,
        now: DateTime<Utc>,
        endpoint_resource: Option<&str>,
    ) -> Result<Grant, JwtRejection> {
        match claims.get("iss") {
            None => return Err(JwtRejection::MissingClaim("iss")),
            Some(Value::String(iss)) if *iss == self.issuer => {}
            Some(Value::String(_)) => return Err(JwtRejection::WrongIssuer),
            Some(_) => return Err(JwtRejection::InvalidClaim("iss")),
        }

        // Exact comparison (SEC-001..005): the gateway's resource first,
        // then the endpoint's own; the grant names the one that matched.
        let names = |wanted: &str| match claims.get("aud") {
            Some(Value::String(aud)) => aud == wanted,
            Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(wanted)),
            _ => false,
        };
        match claims.get("aud") {
            None => return Err(JwtRejection::MissingClaim("aud")),
            Some(Value::String(_)) => {}
            Some(Value::Array(auds)) => {
                if auds.is_empty() || !auds.iter().all(Value::is_string) {
                    return Err(JwtRejection::InvalidClaim("aud"));
                }
            }
            Some(_) => return Err(JwtRejection::InvalidClaim("aud")),
        }
        let audience = if names(&self.audience) {
            self.audience.clone()
        } else {
            match endpoint_resource {
                Some(endpoint) if names(endpoint) => endpoint.to_owned(),
                _ => return Err(JwtRejection::WrongAudience),
            }
        };

        let now = now.timestamp();
        let leeway = i64::try_from(self.leeway_seconds).unwrap_or(i64::MAX);
        let exp = match claims.get("exp") {
            None => return Err(JwtRejection::MissingClaim("exp")),
            Some(v) => numeric_date(v).ok_or(JwtRejection::InvalidClaim("exp"))?,
        };
        if now >= exp.saturating_add(leeway) {
            return Err(JwtRejection::Expired);
        }
        if let Some(v) = claims.get("nbf") {
            let nbf = numeric_date(v).ok_or(JwtRejection::InvalidClaim("nbf"))?;
            if now < nbf.saturating_sub(leeway) {
                return Err(JwtRejection::NotYetValid);
            }
        }
        if let Some(v) = claims.get("iat") {
            numeric_date(v).ok_or(JwtRejection::InvalidClaim("iat"))?;
        }
        let expires_at = Utc
            .timestamp_opt(exp, 0)
            .single()
            .ok_or(JwtRejection::InvalidClaim("exp"))?;

        let subject = match claims.get("sub") {
            None => return Err(JwtRejection::MissingClaim("sub")),
            Some(Value::String(sub)) if valid_text(sub, MAX_SUBJECT_BYTES) => sub.clone(),
            Some(_) => return Err(JwtRejection::InvalidClaim("sub")),
        };

        let scopes = match claims.get("scope") {
            None => BTreeSet::new(),
            Some(Value::String(scope)) => {
                parse_scope(scope).ok_or(JwtRejection::InvalidClaim("scope"))?
            }
            Some(_) => return Err(JwtRejection::InvalidClaim("scope")),
        };

        let organization_id = match claims.get(ORGANIZATION_CLAIM) {
            None => return Err(JwtRejection::MissingClaim(ORGANIZATION_CLAIM)),
            Some(Value::String(org)) if valid_identifier(org) => org.clone(),
            Some(_) => return Err(JwtRejection::InvalidClaim(ORGANIZATION_CLAIM)),
        };

        let rooftops = match claims.get(ROOFTOPS_CLAIM) {
            None => None,
            Some(Value::Array(items)) => {
                if items.is_empty() || items.len() > MAX_ROOFTOPS {
                    return Err(JwtRejection::InvalidClaim(ROOFTOPS_CLAIM));
                }
                let mut ids = BTreeSet::new();
                for item in items {
                    match item {
                        Value::String(id) if valid_identifier(id) => {
                            ids.insert(id.clone());
                        }
                        _ => return Err(JwtRejection::InvalidClaim(ROOFTOPS_CLAIM)),
                    }
                }
                Some(ids)
            }
            Some(_) => return Err(JwtRejection::InvalidClaim(ROOFTOPS_CLAIM)),
        };
        let group = match claims.get(GROUP_CLAIM) {
            None | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(_) => return Err(JwtRejection::InvalidClaim(GROUP_CLAIM)),
        };
        let rooftops = match (rooftops, group) {
            (Some(ids), false) => RooftopScope::Rooftops(ids),
            (None, true) => RooftopScope::Group,
            (Some(_), true) => return Err(JwtRejection::InvalidClaim(ROOFTOPS_AND_GROUP)),
            (None, false) => return Err(JwtRejection::MissingClaim(ROOFTOPS_OR_GROUP)),
        };

        let purpose = match claims.get(PURPOSE_CLAIM) {
            None => return Err(JwtRejection::MissingClaim(PURPOSE_CLAIM)),
            Some(Value::String(p))
                if !p.trim().is_empty()
                    && p.chars().count() <= MAX_PURPOSE_CHARS
                    && !p.chars().any(char::is_control) =>
            {
                p.clone()
            }
            Some(_) => return Err(JwtRejection::InvalidClaim(PURPOSE_CLAIM)),
        };

        let delegation = delegation_chain(claims.get("act"))?;

        let token_id = match claims.get("jti") {
            None => None,
            Some(Value::String(jti)) if valid_text(jti, MAX_JTI_BYTES) => Some(jti.clone()),
            Some(_) => return Err(JwtRejection::InvalidClaim("jti")),
        };

        Ok(Grant {
            subject,
            audience,
            organization_id,
            rooftops,
            scopes,
            purpose,
            expires_at,
            delegation,
            credential: Credential::Jwt {
                issuer: self.issuer.clone(),
                token_id,
            },
        })
    }
}

/// Decodes one base64url JWS segment holding a JSON object.
fn decode_object(segment: &str) -> Result<Map<String, Value>, JwtRejection> {
    let bytes = URL_SAFE_NO_PAD
        .decode(segment)
        .map_err(|_| JwtRejection::Malformed)?;
    serde_json::from_slice::<UniqueObject>(&bytes)
        .map(|object| object.0)
        .map_err(|_| JwtRejection::Malformed)
}

/// A JSON object whose member names are all different. RFC 7515 section 4
/// (header) and RFC 7519 section 4 (claims) let a parser either refuse a
/// repeated name or keep its last value; we refuse, so that no two readers
/// of one token (ours, the crate's, a proxy's) can see different values.
/// Only the top level is checked: names repeated inside a claim's value
/// (an `act` level) are kept last-wins by serde_json.
struct UniqueObject(Map<String, Value>);

impl<'de> Deserialize<'de> for UniqueObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = UniqueObject;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object with unique member names")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<UniqueObject, A::Error> {
                let mut map = Map::new();
                while let Some((name, value)) = access.next_entry::<String, Value>()? {
                    if map.contains_key(&name) {
                        return Err(de::Error::custom("duplicate member name"));
                    }
                    map.insert(name, value);
                }
                Ok(UniqueObject(map))
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}

/// `--jwt-require-low-s` (docs/jwt.md "Signature malleability"): refuse an
/// ES256 signature whose S is above n/2. The crate accepts both twins and
/// has no such option, so this stays ours, before the crate verifies.
/// Anything that is not 64 bytes of (r, s) is left for the crate to refuse.
fn refuse_high_s(signature_b64: &str) -> Result<(), JwtRejection> {
    let bytes = URL_SAFE_NO_PAD
        .decode(signature_b64)
        .map_err(|_| JwtRejection::Malformed)?;
    match p256::ecdsa::Signature::from_slice(&bytes) {
        // (r, s) and (r, n - s) both verify; `normalize_s` maps a high S to
        // n - s and leaves a low one unchanged, so inequality means high.
        Ok(signature) if signature.normalize_s() != signature => Err(JwtRejection::BadSignature),
        Ok(_) | Err(_) => Ok(()),
    }
}

/// Maps the crate's refusal to ours. Our checks before the call leave only
/// a few kinds reachable: the encoding (`Malformed`) and the signature.
fn rejection(kind: &JoseErrorKind) -> JwtRejection {
    match kind {
        JoseErrorKind::InvalidToken
        | JoseErrorKind::Base64(_)
        | JoseErrorKind::Json(_)
        | JoseErrorKind::Utf8(_) => JwtRejection::Malformed,
        JoseErrorKind::InvalidAlgorithm
        | JoseErrorKind::InvalidAlgorithmName
        | JoseErrorKind::UnsupportedAlgorithm
        | JoseErrorKind::MissingAlgorithm => JwtRejection::UnsupportedAlgorithm,
        JoseErrorKind::InvalidSignature => JwtRejection::BadSignature,
        // Key errors (our JWKS rules ran the same constructors at
        // start-up), switched-off claim checks, and kinds a later crate
        // version may add (the enum is non-exhaustive): the token is not
        // verified, so it is refused as not verifying.
        _ => JwtRejection::BadSignature,
    }
}

/// Pins the crate's pure-Rust RustCrypto backend. The crate panics on a
/// decode when it cannot pick a backend (both or neither feature enabled
/// in the build), so the choice is made and checked here, at start-up,
/// never on a request.
fn install_crypto_provider() -> Result<(), JwtConfigError> {
    use jsonwebtoken::crypto::{CryptoProvider, rust_crypto};
    // Refused only when a provider is already installed, which is as good.
    let _already = CryptoProvider::install_default(&rust_crypto::DEFAULT_PROVIDER);
    match CryptoProvider::try_get_default() {
        Some(_) => Ok(()),
        None => Err(JwtConfigError::Invalid(
            "no jsonwebtoken crypto provider is available".to_owned(),
        )),
    }
}

/// An RFC 7519 NumericDate: seconds since the epoch, fractions truncated.
fn numeric_date(value: &Value) -> Option<i64> {
    const LIMIT: i64 = 253_402_300_799; // 9999-12-31T23:59:59Z
    let seconds = if let Some(i) = value.as_i64() {
        i
    } else {
        let f = value.as_f64()?;
        if !f.is_finite() || f.abs() > 1e12 {
            return None;
        }
        f.floor() as i64
    };
    (0..=LIMIT).contains(&seconds).then_some(seconds)
}

/// Non-empty, at most `max_bytes`, no control characters.
fn valid_text(text: &str, max_bytes: usize) -> bool {
    !text.is_empty() && text.len() <= max_bytes && !text.chars().any(char::is_control)
}

fn valid_identifier(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= MAX_IDENTIFIER_CHARS
        && !id.chars().any(|c| c.is_control() || c.is_whitespace())
}

/// RFC 6749 section 3.3 scope: space-delimited scope-tokens of
/// `%x21 / %x23-5B / %x5D-7E`. Repeated spaces are tolerated.
fn parse_scope(scope: &str) -> Option<BTreeSet<String>> {
    let mut scopes = BTreeSet::new();
    for token in scope.split(' ').filter(|t| !t.is_empty()) {
        let valid = token
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b));
        if !valid || scopes.len() >= MAX_SCOPES {
            return None;
        }
        scopes.insert(token.to_owned());
    }
    Some(scopes)
}

/// RFC 8693 section 4.1 `act`: `{"sub": actor, "act": {prior actor}}`.
/// Returns the actors' subjects, the current (outermost) actor first.
fn delegation_chain(act: Option<&Value>) -> Result<Vec<String>, JwtRejection> {
    let mut chain = Vec::new();
    let mut current = act;
    while let Some(value) = current {
        let Some(actor) = value.as_object() else {
            return Err(JwtRejection::InvalidClaim("act"));
        };
        if chain.len() == MAX_DELEGATION_DEPTH {
            return Err(JwtRejection::InvalidClaim("act"));
        }
        match actor.get("sub") {
            Some(Value::String(sub)) if valid_text(sub, MAX_SUBJECT_BYTES) => {
                chain.push(sub.clone());
            }
            _ => return Err(JwtRejection::InvalidClaim("act")),
        }
        current = actor.get("act");
    }
    Ok(chain)
}

/// Why a JWT access token was refused. The text never includes the token
/// or any claim value: it is safe for logs and for `error_description`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum JwtRejection {
    #[error("the access token is not a well-formed signed JWT")]
    Malformed,
    #[error("the access token's algorithm is not accepted for its key (ES256 or RS256 only)")]
    UnsupportedAlgorithm,
    #[error("no configured key matches the access token's key id")]
    UnknownKey,
    #[error("the access token's signature does not verify")]
    BadSignature,
    #[error("the access token was not issued by the configured authorization server")]
    WrongIssuer,
    #[error("the access token is not issued for this resource")]
    WrongAudience,
    #[error("the access token has expired")]
    Expired,
    #[error("the access token is not valid yet")]
    NotYetValid,
    #[error("the access token lacks a required claim ({0})")]
    MissingClaim(&'static str),
    #[error("the access token has an invalid claim ({0})")]
    InvalidClaim(&'static str),
}

impl JwtRejection {
    /// A stable machine-readable name, for logs and metrics.
    pub fn code(&self) -> &'static str {
        match self {
            JwtRejection::Malformed => "malformed",
            JwtRejection::UnsupportedAlgorithm => "unsupported_algorithm",
            JwtRejection::UnknownKey => "unknown_key",
            JwtRejection::BadSignature => "bad_signature",
            JwtRejection::WrongIssuer => "wrong_issuer",
            JwtRejection::WrongAudience => "wrong_audience",
            JwtRejection::Expired => "expired",
            JwtRejection::NotYetValid => "not_yet_valid",
            JwtRejection::MissingClaim(_) => "missing_claim",
            JwtRejection::InvalidClaim(_) => "invalid_claim",
        }
    }
}

/// RFC 9728 OAuth 2.0 protected-resource metadata for this gateway, served
/// at `/.well-known/oauth-protected-resource`. `scopes_supported` is left
/// out when `scopes` is empty.
pub fn well_known_metadata(
    resource: &str,
    authorization_servers: &[String],
    scopes: &[String],
) -> Value {
    let mut doc = Map::new();
    doc.insert("resource".to_owned(), json!(resource));
    doc.insert(
        "authorization_servers".to_owned(),
        json!(authorization_servers),
    );
    if !scopes.is_empty() {
        doc.insert("scopes_supported".to_owned(), json!(scopes));
    }
    doc.insert("bearer_methods_supported".to_owned(), json!(["header"]));
    doc.insert("resource_name".to_owned(), json!("Dealer Agent Gateway"));
    Value::Object(doc)
}

/// An RFC 6750 section 3 / RFC 9728 section 5.1 `WWW-Authenticate`
/// challenge: `Bearer resource_metadata="…"`, plus `error` and
/// `error_description` when a token was presented and refused.
pub fn www_authenticate(resource_metadata_url: &str, error: Option<(&str, &str)>) -> String {
    challenge(resource_metadata_url, error, None)
}

/// As [`www_authenticate`] for `insufficient_scope`, naming the scopes the
/// request needs (RFC 6750 section 3 `scope`; the MCP step-up flow).
pub fn www_authenticate_insufficient_scope(
    resource_metadata_url: &str,
    required_scopes: &[String],
    description: &str,
) -> String {
    challenge(
        resource_metadata_url,
        Some(("insufficient_scope", description)),
        Some(&required_scopes.join(" ")),
    )
}

fn challenge(url: &str, error: Option<(&str, &str)>, scope: Option<&str>) -> String {
    let mut out = format!("Bearer resource_metadata=\"{}\"", quoted(url));
    if let Some((code, description)) = error {
        // RFC 6750: error is a token; error_description excludes '"' and
        // '\' altogether (%x20-21 / %x23-5B / %x5D-7E).
        let code: String = code
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let description: String = description
            .chars()
            .map(|c| match c {
                '"' => '\'',
                '\\' => '/',
                c => c,
            })
            .collect();
        out.push_str(&format!(", error=\"{code}\""));
        if let Some(scope) = scope {
            out.push_str(&format!(", scope=\"{}\"", quoted(scope)));
        }
        if !description.is_empty() {
            out.push_str(&format!(", error_description=\"{}\"", quoted(&description)));
        }
    }
    out
}

/// The inside of an RFC 9110 quoted-string: `"` and `\` escaped, anything
/// outside visible ASCII and space (controls, CR/LF, non-ASCII) replaced by
/// `?`, so a header can never be split.
fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push('?'),
        }
    }
    out
}

#[cfg(test)]
mod tests;
