//! The conformance claim this gateway publishes at `/conformance/claim.json`
//! and names in the manifest's `conformance {claim_uri, claim_digest}`.
//!
//! A claim is issued and signed by `dap-conformance claim` after a passing
//! run of the black-box suite (docs/conformance.md); the operator hands the
//! file to `serve --conformance-claim FILE`. The gateway serves its bytes
//! unchanged (the digest and the JWS cover exactly those bytes) after
//! checking, at start-up, that it is a claim at all and that it describes
//! this build: it validates against `conformance/claim.schema.json`, is
//! `active` and unexpired, its signed payload is the claim it is attached
//! to, and it pins exactly the DAP tools, resources and profiles this
//! gateway serves (DAP 14: a claim pins the exact inventory). A claim that
//! does not is refused with the reason, so a stale claim is never published
//! after an upgrade. Whether the signature verifies is the verifier's
//! business (`dap-conformance verify claim.json --jwks FILE`): the gateway
//! holds no trusted key for it. But the payload needs no key: the JWS in
//! `signer.signature` embeds the canonical claim without
//! `signer.signature` (docs/conformance.md), so a claim edited after
//! signing (an inventory patched by hand to pass the check below) is
//! refused at start-up, naming the members that differ, instead of being
//! published with a signature that can never verify.
//!
//! Without a configured claim the gateway says so plainly: the claim URI
//! answers 404 with a notice that no claim is published, and the manifest
//! (whose `conformance` member DAP's schema requires) pins the digest of
//! that notice, and says `claim_published: false` in its extensions.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::catalog::Catalog;

/// The claim schema, shared with the `dap-conformance` crate.
const CLAIM_SCHEMA: &str = include_str!("../../conformance/claim.schema.json");

/// Largest claim file accepted (the schema bounds every member; a claim is
/// a few KiB).
const MAX_CLAIM_BYTES: u64 = 256 * 1024;

static VALIDATOR: LazyLock<Result<jsonschema::Validator, String>> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(CLAIM_SCHEMA).map_err(|e| e.to_string())?;
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .map_err(|e| e.to_string())
});

/// What `/conformance/claim.json` serves.
#[derive(Debug, Clone)]
pub enum PublishedClaim {
    /// No claim configured: a 404 notice.
    None { notice: Vec<u8>, digest: String },
    /// The operator's signed claim, served byte for byte.
    Configured {
        bytes: Vec<u8>,
        digest: String,
        expires_at: DateTime<Utc>,
    },
}

impl PublishedClaim {
    /// The notice served when no claim is configured.
    pub fn none() -> Self {
        let notice = serde_json::to_vec(&json!({
            "claim_published": false,
            "message": "This gateway publishes no DAP conformance claim. A claim is issued by running the dap-conformance suite against the gateway and signing the passing result (docs/conformance.md); the operator then serves it with --conformance-claim.",
        }))
        .unwrap_or_default();
        let digest = digest(&notice);
        Self::None { notice, digest }
    }

    /// `sha256:<hex>` of what the claim URI serves.
    pub fn digest(&self) -> &str {
        match self {
            Self::None { digest, .. } | Self::Configured { digest, .. } => digest,
        }
    }

    pub fn is_published(&self) -> bool {
        matches!(self, Self::Configured { .. })
    }
}

/// Why a configured claim file is refused at start-up.
#[derive(Debug, thiserror::Error)]
pub enum ClaimFileError {
    #[error("conformance claim {path}: cannot read it: {reason}")]
    Read { path: String, reason: String },
    #[error("conformance claim {path}: larger than {MAX_CLAIM_BYTES} bytes")]
    TooLarge { path: String },
    #[error("conformance claim {path}: not JSON: {reason}")]
    NotJson { path: String, reason: String },
    #[error(
        "conformance claim {path}: does not validate against conformance/claim.schema.json: {problems}"
    )]
    Schema { path: String, problems: String },
    #[error(
        "conformance claim {path}: the payload signed in signer.signature is not this claim: {differences}"
    )]
    Payload { path: String, differences: String },
    #[error("conformance claim {path}: expired at {expires_at}")]
    Expired { path: String, expires_at: String },
    #[error("conformance claim {path}: it does not describe this gateway: {differences}")]
    Mismatch { path: String, differences: String },
    #[error("conformance claim schema does not compile: {0}")]
    SchemaBroken(String),
}

/// `sha256:<hex>` of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Read and check the claim file at `path` against this build's catalog.
pub fn load(
    path: &Path,
    catalog: &Catalog,
    now: DateTime<Utc>,
) -> Result<PublishedClaim, ClaimFileError> {
    let shown = path.display().to_string();
    let read_err = |e: std::io::Error| ClaimFileError::Read {
        path: shown.clone(),
        reason: e.to_string(),
    };
    if std::fs::metadata(path).map_err(read_err)?.len() > MAX_CLAIM_BYTES {
        return Err(ClaimFileError::TooLarge { path: shown });
    }
    let bytes = std::fs::read(path).map_err(read_err)?;
    let claim: Value = serde_json::from_slice(&bytes).map_err(|e| ClaimFileError::NotJson {
        path: shown.clone(),
        reason: e.to_string(),
    })?;
    check(&claim, catalog, now).map_err(|e| e.at(&shown))?;
    let expires_at = expires_at(&claim).unwrap_or(now);
    Ok(PublishedClaim::Configured {
        digest: digest(&bytes),
        bytes,
        expires_at,
    })
}

fn expires_at(claim: &Value) -> Option<DateTime<Utc>> {
    claim["expires_at"]
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// A problem found by [`check`], before the path is known.
#[derive(Debug)]
pub enum ClaimProblem {
    Schema(String),
    Payload(String),
    Expired(String),
    Mismatch(String),
    SchemaBroken(String),
}

impl ClaimProblem {
    fn at(self, path: &str) -> ClaimFileError {
        let path = path.to_owned();
        match self {
            Self::Schema(problems) => ClaimFileError::Schema { path, problems },
            Self::Payload(differences) => ClaimFileError::Payload { path, differences },
            Self::Expired(expires_at) => ClaimFileError::Expired { path, expires_at },
            Self::Mismatch(differences) => ClaimFileError::Mismatch { path, differences },
            Self::SchemaBroken(e) => ClaimFileError::SchemaBroken(e),
        }
    }
}

/// Check a parsed claim: schema, signed payload, expiry, and that its
/// tools, resources and profiles are exactly this build's DAP ones.
pub fn check(claim: &Value, catalog: &Catalog, now: DateTime<Utc>) -> Result<(), ClaimProblem> {
    let validator = VALIDATOR
        .as_ref()
        .map_err(|e| ClaimProblem::SchemaBroken(e.clone()))?;
    let problems: Vec<String> = validator
        .iter_errors(claim)
        .take(10)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_owned() } else { at };
            format!("at {at}: {}", e.kind().keyword())
        })
        .collect();
    if !problems.is_empty() {
        return Err(ClaimProblem::Schema(problems.join("; ")));
    }
    signed_payload_matches(claim)?;
    match expires_at(claim) {
        Some(t) if t > now => {}
        _ => {
            return Err(ClaimProblem::Expired(
                claim["expires_at"].as_str().unwrap_or("?").to_owned(),
            ));
        }
    }
    let set = |v: &Value| -> BTreeSet<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let dap = |s: &String| s.starts_with("dealeragent.");
    let served_tools: BTreeSet<String> = catalog
        .tools
        .iter()
        .map(|t| t.name.clone())
        .filter(dap)
        .collect();
    let served_profiles: BTreeSet<String> = catalog
        .profiles
        .iter()
        .map(|p| p.id.clone())
        .filter(dap)
        .collect();
    let served_resources: BTreeSet<String> = catalog.resources().into_iter().collect();
    let mut differences = Vec::new();
    for (what, claimed, served) in [
        (
            "tools",
            set(&claim["implementation"]["tools"]),
            served_tools,
        ),
        ("profiles", set(&claim["profiles"]), served_profiles),
        (
            "resources",
            set(&claim["implementation"]["resources"]),
            served_resources,
        ),
    ] {
        let missing: Vec<&String> = served.difference(&claimed).collect();
        let extra: Vec<&String> = claimed.difference(&served).collect();
        if !missing.is_empty() {
            differences.push(format!("{what} served but not claimed: {missing:?}"));
        }
        if !extra.is_empty() {
            differences.push(format!("{what} claimed but not served: {extra:?}"));
        }
    }
    if differences.is_empty() {
        Ok(())
    } else {
        Err(ClaimProblem::Mismatch(differences.join("; ")))
    }
}

/// Most differing members named in a payload error.
const MAX_NAMED_DIFFERENCES: usize = 10;

/// The claim's JWS payload (the middle part of `signer.signature`, which
/// the schema requires to be a compact JWS) equals the claim without
/// `signer.signature`. Compared as JSON values: the issuer signs the RFC
/// 8785 canonical bytes, and equal values have equal canonical forms, so
/// no canonicalizer is needed to find a difference.
fn signed_payload_matches(claim: &Value) -> Result<(), ClaimProblem> {
    use base64::Engine as _;
    let jws = claim["signer"]["signature"].as_str().unwrap_or_default();
    let payload = jws.split('.').nth(1).unwrap_or_default();
    let signed: Value = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| {
            ClaimProblem::Payload("its payload is not base64url-encoded JSON".to_owned())
        })?;
    let mut unsigned = claim.clone();
    if let Some(signer) = unsigned.get_mut("signer").and_then(Value::as_object_mut) {
        signer.remove("signature");
    }
    let mut differences = Vec::new();
    differing_members("", &signed, &unsigned, &mut differences);
    if differences.is_empty() {
        return Ok(());
    }
    let more = differences.len().saturating_sub(MAX_NAMED_DIFFERENCES);
    differences.truncate(MAX_NAMED_DIFFERENCES);
    let mut named = format!(
        "differing member(s) {} (signed value vs. claim body)",
        differences.join(", ")
    );
    if more > 0 {
        named.push_str(&format!(" and {more} more"));
    }
    Err(ClaimProblem::Payload(named))
}

/// Dotted paths of the members where `signed` and `claim` differ; arrays
/// and scalars are compared whole (a claim's arrays are sets of names).
fn differing_members(path: &str, signed: &Value, claim: &Value, out: &mut Vec<String>) {
    if signed == claim {
        return;
    }
    match (signed, claim) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => differing_members(&child, x, y, out),
                    _ => out.push(child),
                }
            }
        }
        _ => out.push(if path.is_empty() {
            "(the whole claim)".to_owned()
        } else {
            path.to_owned()
        }),
    }
}
