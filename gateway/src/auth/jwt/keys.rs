//! The verification keys: a JWKS file (RFC 7517) read into EC P-256
//! (ES256) and RSA (RS256) public keys, each allowing exactly one
//! algorithm, and the key a token header selects (docs/jwt.md).

use std::collections::HashSet;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

use super::{JwtConfigError, MAX_RSA_BITS, MIN_RSA_BITS};

/// JWK members that only a private key has; a JWKS holding one is refused.
const PRIVATE_MEMBERS: [&str; 8] = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

/// Why one key of a JWKS was refused: RFC 7517 and RFC 7518 rules, and
/// ours (public keys only, EC P-256 or RSA of 2048 to 8192 bits, unique
/// kids; docs/jwt.md). The start-up error names the key's index with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyRule {
    #[error("is not a JSON object")]
    NotAnObject,
    #[error("has no {0:?}")]
    Missing(&'static str),
    #[error("{0:?} is not a string")]
    NotAString(&'static str),
    #[error("contains private key material ({0:?}); the JWKS file must hold public keys only")]
    PrivateMaterial(&'static str),
    #[error("\"kid\" must be a non-empty string")]
    EmptyKid,
    #[error(
        "has no \"kid\"; every key of a set of more than one needs a kid, since tokens select their key by kid"
    )]
    KidNeeded,
    #[error("kid {kid:?} is already used by key {first}; kids must be unique")]
    DuplicateKid { kid: String, first: usize },
    #[error("\"use\" must be \"sig\" (signature verification)")]
    UseNotSig,
    #[error("\"key_ops\" must include \"verify\"")]
    NoVerifyOp,
    #[error("key type {0:?} is not supported (only \"EC\" with curve P-256, and \"RSA\")")]
    KeyType(String),
    #[error("\"alg\" {alg:?} is not supported for kty {kty:?} (only {expected})")]
    Algorithm {
        alg: String,
        kty: String,
        expected: JwsAlgorithm,
    },
    #[error("{0:?} is not unpadded base64url (RFC 7515 section 2)")]
    NotBase64Url(&'static str),
    #[error("curve {0:?} is not supported (only \"P-256\")")]
    Curve(String),
    #[error("has no \"crv\" string")]
    NoCurve,
    #[error("\"x\" and \"y\" must each be 32 bytes for P-256 (RFC 7518 section 6.2.1)")]
    CoordinateLength,
    #[error("\"x\" and \"y\" are not a point on P-256")]
    OffCurve,
    #[error("\"x\" and \"y\" are not unpadded base64url")]
    EcComponents,
    #[error("RSA modulus has {0} bits; at least {min} are required", min = MIN_RSA_BITS)]
    RsaTooShort(usize),
    #[error("RSA modulus has {0} bits; at most {max} are accepted", max = MAX_RSA_BITS)]
    RsaTooLong(usize),
    #[error("RSA exponent \"e\" is out of range")]
    RsaExponentRange,
    #[error("RSA {0} cannot be decoded")]
    RsaUndecodable(&'static str),
    #[error("RSA public key is invalid: {0}")]
    RsaInvalid(String),
}

/// The JWS algorithms this gateway verifies. Each key type allows exactly
/// one, so a token can never choose how its key is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JwsAlgorithm {
    /// ECDSA over P-256 with SHA-256 (RFC 7518 section 3.4).
    Es256,
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 section 3.3).
    Rs256,
}

impl JwsAlgorithm {
    pub fn as_str(self) -> &'static str {
        match self {
            JwsAlgorithm::Es256 => "ES256",
            JwsAlgorithm::Rs256 => "RS256",
        }
    }

    pub(super) fn from_name(name: &str) -> Option<Self> {
        match name {
            "ES256" => Some(JwsAlgorithm::Es256),
            "RS256" => Some(JwsAlgorithm::Rs256),
            _ => None,
        }
    }

    pub(super) fn to_jose(self) -> jsonwebtoken::Algorithm {
        match self {
            JwsAlgorithm::Es256 => jsonwebtoken::Algorithm::ES256,
            JwsAlgorithm::Rs256 => jsonwebtoken::Algorithm::RS256,
        }
    }
}

impl fmt::Display for JwsAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a key is, for [`Jwks`]'s `Debug` and the algorithm it allows.
#[derive(Debug, Clone, Copy)]
pub(super) enum KeyKind {
    Ec,
    Rsa { bits: usize },
}

impl KeyKind {
    /// Each key type allows exactly one algorithm (algorithm-confusion
    /// defence: a token never chooses how its key is used).
    pub(super) fn algorithm(self) -> JwsAlgorithm {
        match self {
            KeyKind::Ec => JwsAlgorithm::Es256,
            KeyKind::Rsa { .. } => JwsAlgorithm::Rs256,
        }
    }
}

#[derive(Clone)]
pub(super) struct VerificationKey {
    pub(super) kid: Option<String>,
    pub(super) kind: KeyKind,
    /// The crate's form of the key, built once at start-up from the
    /// components our JWKS rules have already checked.
    pub(super) decoding: jsonwebtoken::DecodingKey,
    /// The crate's checks for this key: only this key's algorithm, and
    /// none of its claim checks (ours run instead, against the `now` the
    /// caller passes, with the comparisons of docs/jwt.md).
    pub(super) validation: jsonwebtoken::Validation,
}

impl VerificationKey {
    pub(super) fn new(
        kid: Option<String>,
        kind: KeyKind,
        decoding: jsonwebtoken::DecodingKey,
    ) -> Self {
        let mut validation = jsonwebtoken::Validation::new(kind.algorithm().to_jose());
        validation.required_spec_claims = HashSet::new();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        VerificationKey {
            kid,
            kind,
            decoding,
            validation,
        }
    }

    pub(super) fn algorithm(&self) -> JwsAlgorithm {
        self.kind.algorithm()
    }
}

/// A parsed, validated JSON Web Key Set (RFC 7517) of public verification
/// keys: EC P-256 (ES256) and RSA of at least 2048 bits (RS256).
#[derive(Clone)]
pub struct Jwks {
    pub(super) keys: Vec<VerificationKey>,
}

impl fmt::Debug for Jwks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        for key in &self.keys {
            match key.kind {
                KeyKind::Ec => list.entry(&format_args!("{:?} EC P-256", key.kid)),
                KeyKind::Rsa { bits } => list.entry(&format_args!("{:?} RSA {bits}", key.kid)),
            };
        }
        list.finish()
    }
}

impl Jwks {
    /// Parses and validates a JWKS document. Refuses: anything but
    /// `{"keys": [...]}`, an empty set, keys other than EC P-256 and RSA,
    /// RSA moduli under 2048 bits, private key material, keys not for
    /// signatures, a JWK `alg` other than the key type's, duplicate kids,
    /// and a key without kid in a set of more than one.
    pub fn parse(text: &str) -> Result<Jwks, JwtConfigError> {
        let document: Value =
            serde_json::from_str(text).map_err(|e| JwtConfigError::Json(e.to_string()))?;
        Jwks::from_value(&document)
    }

    /// As [`Jwks::parse`], from an already parsed document.
    pub fn from_value(document: &Value) -> Result<Jwks, JwtConfigError> {
        let keys = document
            .as_object()
            .and_then(|o| o.get("keys"))
            .and_then(Value::as_array)
            .ok_or(JwtConfigError::NotAKeySet)?;
        if keys.is_empty() {
            return Err(JwtConfigError::Empty);
        }
        let mut parsed: Vec<VerificationKey> = Vec::with_capacity(keys.len());
        for (index, jwk) in keys.iter().enumerate() {
            let key = parse_jwk(jwk).map_err(|rule| JwtConfigError::Key { index, rule })?;
            if let Some(kid) = &key.kid
                && let Some(first) = parsed.iter().position(|k| k.kid.as_ref() == Some(kid))
            {
                return Err(JwtConfigError::Key {
                    index,
                    rule: KeyRule::DuplicateKid {
                        kid: kid.clone(),
                        first,
                    },
                });
            }
            parsed.push(key);
        }
        if parsed.len() > 1
            && let Some(index) = parsed.iter().position(|k| k.kid.is_none())
        {
            return Err(JwtConfigError::Key {
                index,
                rule: KeyRule::KidNeeded,
            });
        }
        Ok(Jwks { keys: parsed })
    }

    /// Number of keys (never zero).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Always false: an empty set is refused when parsing.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key ids with their algorithms, in file order (for start-up logs).
    pub fn describe(&self) -> Vec<(Option<&str>, JwsAlgorithm)> {
        self.keys
            .iter()
            .map(|k| (k.kid.as_deref(), k.algorithm()))
            .collect()
    }

    /// The key a token header selects: by `kid`; without one only when the
    /// set holds exactly one key.
    pub(super) fn select(&self, kid: Option<&str>) -> Option<&VerificationKey> {
        match kid {
            Some(kid) => self.keys.iter().find(|k| k.kid.as_deref() == Some(kid)),
            None if self.keys.len() == 1 => self.keys.first(),
            None => None,
        }
    }
}

fn parse_jwk(jwk: &Value) -> Result<VerificationKey, KeyRule> {
    let Some(jwk) = jwk.as_object() else {
        return Err(KeyRule::NotAnObject);
    };
    let kty = match jwk.get("kty") {
        Some(Value::String(kty)) => kty.as_str(),
        Some(_) => return Err(KeyRule::NotAString("kty")),
        None => return Err(KeyRule::Missing("kty")),
    };
    if let Some(member) = PRIVATE_MEMBERS.iter().find(|m| jwk.contains_key(**m)) {
        return Err(KeyRule::PrivateMaterial(member));
    }
    let kid = match jwk.get("kid") {
        None => None,
        Some(Value::String(kid)) if !kid.is_empty() => Some(kid.clone()),
        Some(_) => return Err(KeyRule::EmptyKid),
    };
    match jwk.get("use") {
        None => {}
        Some(Value::String(u)) if u == "sig" => {}
        Some(_) => return Err(KeyRule::UseNotSig),
    }
    if let Some(ops) = jwk.get("key_ops") {
        let verifies = ops
            .as_array()
            .is_some_and(|ops| ops.iter().any(|op| op.as_str() == Some("verify")));
        if !verifies {
            return Err(KeyRule::NoVerifyOp);
        }
    }
    let (expected_alg, (kind, decoding)) = match kty {
        "EC" => (JwsAlgorithm::Es256, parse_ec(jwk)?),
        "RSA" => (JwsAlgorithm::Rs256, parse_rsa(jwk)?),
        other => {
            return Err(KeyRule::KeyType(other.to_owned()));
        }
    };
    match jwk.get("alg") {
        None => {}
        Some(Value::String(alg)) if alg == expected_alg.as_str() => {}
        Some(Value::String(alg)) => {
            return Err(KeyRule::Algorithm {
                alg: alg.clone(),
                kty: kty.to_owned(),
                expected: expected_alg,
            });
        }
        Some(_) => return Err(KeyRule::NotAString("alg")),
    }
    Ok(VerificationKey::new(kid, kind, decoding))
}

fn jwk_text<'a>(jwk: &'a Map<String, Value>, member: &'static str) -> Result<&'a str, KeyRule> {
    let Some(value) = jwk.get(member) else {
        return Err(KeyRule::Missing(member));
    };
    value.as_str().ok_or(KeyRule::NotAString(member))
}

fn jwk_bytes(jwk: &Map<String, Value>, member: &'static str) -> Result<Vec<u8>, KeyRule> {
    let text = jwk_text(jwk, member)?;
    URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| KeyRule::NotBase64Url(member))
}

type ParsedKey = (KeyKind, jsonwebtoken::DecodingKey);

fn parse_ec(jwk: &Map<String, Value>) -> Result<ParsedKey, KeyRule> {
    match jwk.get("crv").and_then(Value::as_str) {
        Some("P-256") => {}
        Some(other) => {
            return Err(KeyRule::Curve(other.to_owned()));
        }
        None => return Err(KeyRule::NoCurve),
    }
    let x = jwk_bytes(jwk, "x")?;
    let y = jwk_bytes(jwk, "y")?;
    if x.len() != 32 || y.len() != 32 {
        return Err(KeyRule::CoordinateLength);
    }
    let mut sec1 = Vec::with_capacity(65);
    sec1.push(0x04);
    sec1.extend_from_slice(&x);
    sec1.extend_from_slice(&y);
    // Checked here so that a key off the curve stops the start; the crate
    // would only refuse it when a token arrives.
    p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1).map_err(|_| KeyRule::OffCurve)?;
    let decoding =
        jsonwebtoken::DecodingKey::from_ec_components(jwk_text(jwk, "x")?, jwk_text(jwk, "y")?)
            .map_err(|_| KeyRule::EcComponents)?;
    Ok((KeyKind::Ec, decoding))
}

fn parse_rsa(jwk: &Map<String, Value>) -> Result<ParsedKey, KeyRule> {
    let n = jwk_bytes(jwk, "n")?;
    let e = jwk_bytes(jwk, "e")?;
    let n = strip_leading_zeros(&n);
    let e = strip_leading_zeros(&e);
    let bits = match n.first() {
        Some(first) => (n.len() - 1) * 8 + (8 - first.leading_zeros() as usize),
        None => 0,
    };
    if bits < MIN_RSA_BITS {
        return Err(KeyRule::RsaTooShort(bits));
    }
    if bits > MAX_RSA_BITS {
        return Err(KeyRule::RsaTooLong(bits));
    }
    if e.is_empty() || e.len() > 8 {
        return Err(KeyRule::RsaExponentRange);
    }
    let n_precision = u32::try_from(n.len() * 8).map_err(|_| KeyRule::RsaTooLong(bits))?;
    let n_uint = rsa::BoxedUint::from_be_slice(n, n_precision)
        .map_err(|_| KeyRule::RsaUndecodable("modulus"))?;
    let e_uint =
        rsa::BoxedUint::from_be_slice(e, 64).map_err(|_| KeyRule::RsaUndecodable("exponent"))?;
    // The same constructor the crate calls for each token; called here so
    // that a key it would refuse stops the start instead.
    rsa::PublicKey::new(n_uint, e_uint).map_err(|err| KeyRule::RsaInvalid(err.to_string()))?;
    Ok((
        KeyKind::Rsa { bits },
        jsonwebtoken::DecodingKey::from_rsa_raw_components(n, e),
    ))
}

fn strip_leading_zeros(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    &bytes[start..]
}
