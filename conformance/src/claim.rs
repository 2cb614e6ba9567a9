//! Signed DAP conformance claims (DAP 0.1 section 14): issue one from a
//! passing suite report, verify one against the issuer's JWKS, and compare a
//! verified claim with what a gateway serves now.
//!
//! Wire rules (the public DAP 0.1 conformance rules): the claim validates
//! against `conformance/claim.schema.json`; `signer.signature` is a compact
//! JWS with `alg: ES256` whose (embedded) payload is the RFC 8785 (JCS)
//! canonical form of the claim without `signer.signature`; a verifier
//! rejects any other algorithm, an unknown key, a changed payload, an
//! expired claim and a report whose bytes do not match the pinned digest.
//! Failed, skipped or untested required checks prohibit the claim, so
//! [`issue`] refuses a report that is not a pass.
//!
//! [`issue`] and [`verify`] are pure (time and the claim id are inputs, and
//! ES256 signing is deterministic per RFC 6979), so the tamper tests need no
//! server.

mod cli;
mod deviations;
mod live;

pub use cli::{
    ClaimArgs, JwksArgs, KeygenArgs, VerifyArgs, cmd_claim, cmd_jwks, cmd_keygen, cmd_verify,
};
pub use deviations::SCHEMA_DEVIATIONS;
pub use live::verify_against_live;

use std::collections::BTreeSet;
use std::sync::LazyLock;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// Our claim schema (shaped like the public DAP 0.1 claim schema, plus
/// `implementation.scopes`; see its description).
pub const CLAIM_SCHEMA: &str = include_str!("../claim.schema.json");

/// sha256 of the DAP 0.1 specification text this suite was built against:
/// the bytes of the DAP seed document `004_182e17468c301a41.txt`
/// ("Dealer Agent Protocol Specification 0.1, Version 0.1.0-draft.1"), as
/// computed with `sha256sum` when the suite was written. The spec file is not
/// part of this repository, so the digest is pinned here (DAP 14: a claim
/// pins the specification's immutable digest).
pub const DAP_SPEC_DIGEST: &str =
    "sha256:eaa3be64249f0755ddfdf6454f8bf9e6133f92f079d021557316a3385bb49105";

/// The specification reference pinned next to the digest.
pub const DAP_SPEC_URI: &str = "https://dealeragentprotocol.com/spec/v0.1/";

/// The JWS `typ` of a claim signature. The payload is a DAP claim, not a JWT
/// claims set, so we do not call it "JWT" (RFC 7515 4.1.9, RFC 8725 3.11:
/// explicit typing). Verifiers also accept "JWT", which the public example
/// claim's header uses, and an absent `typ`: the payload must equal the
/// claim itself, so a token of another kind can never pass anyway.
pub const JWS_TYPE: &str = "dap-claim+jws";

/// The only algorithm a claim may be signed with (DAP conformance rules).
pub const ALGORITHM: &str = "ES256";

/// Bounds on a claim's lifetime accepted by `issue` (and `--valid-for`).
pub const MIN_VALIDITY: Duration = Duration::hours(1);
pub const MAX_VALIDITY: Duration = Duration::days(366);

/// Clock skew tolerated when checking that a claim is not issued in the
/// future.
pub const CLOCK_SKEW: Duration = Duration::seconds(120);

/// The MCP revision every DAP 0.1 gateway must serve (DAP 4.1).
const MODERN_REVISION: &str = "2026-07-28";

/// Prefix of DAP tool and profile identifiers; anything else is an extension.
const DAP_PREFIX: &str = "dealeragent.";

/// At most this many exceptions (the claim schema's `maxItems`).
const MAX_EXCEPTIONS: usize = 32;

/// Every way issuing or verifying a claim can fail. Messages name the member
/// and the rule; none contains key material.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error(
        "the report does not permit a claim: result is {result:?} with {required_failed} required check(s) failed and {required_skipped} required check(s) skipped (DAP conformance rules: failed, skipped or untested required cases prohibit the claim)"
    )]
    NotClaimable {
        result: String,
        required_failed: u64,
        required_skipped: u64,
    },
    #[error("the report member `{member}` {rule}")]
    Report { member: String, rule: String },
    #[error("{option}: {rule}")]
    InvalidInput { option: &'static str, rule: String },
    #[error("the claim is not JSON: {0}")]
    NotJson(String),
    #[error("the claim fails conformance/claim.schema.json: {}", .errors.join("; "))]
    Schema { errors: Vec<String> },
    #[error("signer.signature is not a compact JWS: {0}")]
    JwsMalformed(String),
    #[error("JWS header alg {alg:?} is refused: only \"ES256\" is accepted")]
    Algorithm { alg: String },
    #[error("JWS header typ {typ:?} is refused: expected \"dap-claim+jws\" (or \"JWT\")")]
    Type { typ: String },
    #[error("JWS header names critical extensions ({0}); none are understood (RFC 7515 4.1.11)")]
    Critical(String),
    #[error("JWS header kid {header_kid:?} differs from signer.key_id {key_id:?}")]
    KidMismatch { header_kid: String, key_id: String },
    #[error("no key with kid {kid:?} in the JWKS")]
    UnknownKey { kid: String },
    #[error("the JWKS is unusable: {0}")]
    Jwks(String),
    #[error("the ES256 signature does not verify with the JWKS key {kid:?}")]
    BadSignature { kid: String },
    #[error(
        "the JWS payload is not the canonical claim without signer.signature; changed: {}",
        if .members.is_empty() { "no member differs, but the payload is not RFC 8785 canonical".to_owned() } else { .members.join(", ") }
    )]
    PayloadMismatch { members: Vec<String> },
    #[error("{member} {value:?} is not an RFC 3339 timestamp")]
    Timestamp { member: &'static str, value: String },
    #[error("the claim expired at {expires_at} (now {now})")]
    Expired { expires_at: String, now: String },
    #[error("the claim is issued at {issued_at}, in the future (now {now})")]
    NotYetValid { issued_at: String, now: String },
    #[error("expires_at {expires_at} is not after issued_at {issued_at}")]
    EmptyValidity {
        issued_at: String,
        expires_at: String,
    },
    #[error("status is {0:?}; only an \"active\" claim is a claim")]
    Status(String),
    #[error(
        "the report's bytes do not match test_run.report_digest: pinned {pinned}, actual {actual}"
    )]
    ReportDigest { pinned: String, actual: String },
    #[error("the claim does not match its report: {}", .0.join("; "))]
    ReportMismatch(Vec<String>),
    #[error("key: {0}")]
    Key(String),
    #[error("live gateway {url}: {reason}")]
    Live { url: String, reason: String },
    #[error("the claim does not match what {url} serves now: {}", .differences.join("; "))]
    LiveMismatch {
        url: String,
        differences: Vec<String>,
    },
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
    #[error("internal: {0}")]
    Internal(String),
}

impl ClaimError {
    /// The process exit code for this error: 1 when a claim is refused (the
    /// run does not permit one, or the claim fails verification), 2 for
    /// usage, file, key, connection and internal errors.
    pub fn exit_code(&self) -> i32 {
        match self {
            ClaimError::NotClaimable { .. }
            | ClaimError::Report { .. }
            | ClaimError::NotJson(_)
            | ClaimError::Schema { .. }
            | ClaimError::JwsMalformed(_)
            | ClaimError::Algorithm { .. }
            | ClaimError::Type { .. }
            | ClaimError::Critical(_)
            | ClaimError::KidMismatch { .. }
            | ClaimError::UnknownKey { .. }
            | ClaimError::Jwks(_)
            | ClaimError::BadSignature { .. }
            | ClaimError::PayloadMismatch { .. }
            | ClaimError::Timestamp { .. }
            | ClaimError::Expired { .. }
            | ClaimError::NotYetValid { .. }
            | ClaimError::EmptyValidity { .. }
            | ClaimError::Status(_)
            | ClaimError::ReportDigest { .. }
            | ClaimError::ReportMismatch(_)
            | ClaimError::LiveMismatch { .. } => 1,
            ClaimError::InvalidInput { .. }
            | ClaimError::Key(_)
            | ClaimError::Live { .. }
            | ClaimError::Io { .. }
            | ClaimError::Internal(_) => 2,
        }
    }
}

/// Everything `issue` needs. Time and the claim id come from the caller so
/// issuing is deterministic.
pub struct IssueInput<'a> {
    /// The suite report (`RunOutput::report`).
    pub report: &'a Value,
    /// The exact report bytes written to disk (`RunOutput::report_bytes`);
    /// `test_run.report_digest` pins sha256 over them.
    pub report_bytes: &'a [u8],
    /// Where the report is published (`test_run.report_uri`).
    pub report_uri: String,
    pub claim_id: String,
    pub now: DateTime<Utc>,
    pub valid_for: Duration,
    /// `signer.organization`: who issues and signs the claim.
    pub issuer: String,
    /// `implementation.operator`; the issuer when not given.
    pub operator: Option<String>,
    /// `implementation.source_revision`, e.g. the git commit of the build.
    pub source_revision: String,
    /// Documented deviations (listed in the claim, never hidden).
    pub exceptions: Vec<String>,
    pub key: &'a SigningKey,
    /// `signer.key_id` and the JWS header `kid`.
    pub key_id: String,
}

/// A claim whose schema, signature, payload, status and validity window
/// checked out.
#[derive(Debug, Clone)]
pub struct VerifiedClaim {
    /// The claim document as read (including `signer.signature`).
    pub claim: Value,
    pub key_id: String,
    pub issued_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

impl VerifiedClaim {
    pub fn claim_id(&self) -> &str {
        self.claim["claim_id"].as_str().unwrap_or_default()
    }
    pub fn endpoint(&self) -> &str {
        self.claim["implementation"]["endpoint"]
            .as_str()
            .unwrap_or_default()
    }
    pub fn tools(&self) -> BTreeSet<String> {
        strings(&self.claim["implementation"]["tools"])
    }
    pub fn resources(&self) -> BTreeSet<String> {
        strings(&self.claim["implementation"]["resources"])
    }
    pub fn profiles(&self) -> BTreeSet<String> {
        strings(&self.claim["profiles"])
    }
    pub fn report_digest(&self) -> &str {
        self.claim["test_run"]["report_digest"]
            .as_str()
            .unwrap_or_default()
    }
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `sha256:<hex>` of `bytes`, the digest form DAP uses everywhere.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// RFC 8785 (JCS) canonical bytes of `value`: members sorted by UTF-16 code
/// units, no insignificant whitespace, ECMAScript number formatting.
pub fn canonical_bytes(value: &Value) -> Result<Vec<u8>, ClaimError> {
    serde_json_canonicalizer::to_vec(value).map_err(|e| ClaimError::Internal(e.to_string()))
}

/// The JWS payload of a claim: its canonical form without
/// `signer.signature` (the signature cannot sign itself).
pub fn signing_payload(claim: &Value) -> Result<Vec<u8>, ClaimError> {
    let mut unsigned = claim.clone();
    if let Some(signer) = unsigned.get_mut("signer").and_then(Value::as_object_mut) {
        signer.remove("signature");
    }
    canonical_bytes(&unsigned)
}

static VALIDATOR: LazyLock<Result<jsonschema::Validator, String>> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(CLAIM_SCHEMA).map_err(|e| e.to_string())?;
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .map_err(|e| e.to_string())
});

/// Validate `claim` against `conformance/claim.schema.json` (DAP 14: a claim
/// MUST validate against the claim schema). Errors name the instance pointer
/// and the failed rule; claims are public documents, so values may appear.
pub fn validate_schema(claim: &Value) -> Result<(), ClaimError> {
    let validator = VALIDATOR
        .as_ref()
        .map_err(|e| ClaimError::Internal(format!("claim schema does not compile: {e}")))?;
    let errors: Vec<String> = validator
        .iter_errors(claim)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_owned() } else { at };
            format!("{at}: {e} (keyword {})", e.kind().keyword())
        })
        .take(50)
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ClaimError::Schema { errors })
    }
}

fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// What a claim pins from a report. Shared by `issue` and `verify_report`,
/// so a verifier holding the report re-derives exactly what the issuer did.
struct FromReport {
    implementation: Map<String, Value>,
    profiles: Vec<Value>,
    mcp_revisions: Vec<Value>,
    suite_version: String,
    completed_at: String,
}

fn report_member<'a>(report: &'a Value, pointer: &str) -> Result<&'a Value, ClaimError> {
    report.pointer(pointer).ok_or_else(|| ClaimError::Report {
        member: pointer.to_owned(),
        rule: "is missing".to_owned(),
    })
}

fn report_str(report: &Value, pointer: &str) -> Result<String, ClaimError> {
    report_member(report, pointer)?
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| ClaimError::Report {
            member: pointer.to_owned(),
            rule: "is not a string".to_owned(),
        })
}

fn report_strings(report: &Value, pointer: &str) -> Result<Vec<String>, ClaimError> {
    let not_strings = || ClaimError::Report {
        member: pointer.to_owned(),
        rule: "is not an array of strings".to_owned(),
    };
    let items = report_member(report, pointer)?
        .as_array()
        .ok_or_else(not_strings)?;
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let s = item.as_str().ok_or_else(not_strings)?;
        // Pinned inventories are sets; keep first-seen order, drop repeats.
        if !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    }
    Ok(out)
}

fn report_count(report: &Value, pointer: &str) -> Result<u64, ClaimError> {
    report_member(report, pointer)?
        .as_u64()
        .ok_or_else(|| ClaimError::Report {
            member: pointer.to_owned(),
            rule: "is not a non-negative integer".to_owned(),
        })
}

fn sorted(mut v: Vec<String>) -> Vec<Value> {
    v.sort();
    v.into_iter().map(Value::String).collect()
}

fn from_report(
    report: &Value,
    operator: &str,
    source_revision: &str,
) -> Result<FromReport, ClaimError> {
    let mut tools = report_strings(report, "/observed/tools")?;
    // The claim's `tools` pins the DAP tool inventory (the schema admits only
    // `dealeragent.*` names); extension tools are covered by the extension
    // profiles pinned in `implementation.extensions`.
    tools.retain(|t| t.starts_with(DAP_PREFIX));
    let mut profiles = report_strings(report, "/observed/profiles")?;
    let mut extensions = report_strings(report, "/observed/extensions")?;
    // A non-DAP profile in `profiles` is an extension profile: pin it there
    // rather than drop it.
    for p in profiles.iter().filter(|p| !p.starts_with(DAP_PREFIX)) {
        if !extensions.contains(p) {
            extensions.push(p.clone());
        }
    }
    profiles.retain(|p| p.starts_with(DAP_PREFIX));

    let mut implementation = Map::new();
    implementation.insert(
        "name".into(),
        json!(report_str(report, "/observed/server_info/name")?),
    );
    implementation.insert(
        "version".into(),
        json!(report_str(report, "/observed/server_info/version")?),
    );
    implementation.insert(
        "endpoint".into(),
        json!(report_str(report, "/observed/endpoint")?),
    );
    implementation.insert("source_revision".into(), json!(source_revision));
    implementation.insert("operator".into(), json!(operator));
    for (member, pointer) in [
        ("organization_ids", "/observed/organization_ids"),
        ("rooftop_ids", "/observed/rooftop_ids"),
    ] {
        implementation.insert(
            member.into(),
            Value::Array(sorted(report_strings(report, pointer)?)),
        );
    }
    implementation.insert("tools".into(), Value::Array(sorted(tools)));
    implementation.insert(
        "resources".into(),
        Value::Array(sorted(report_strings(report, "/observed/resources")?)),
    );
    implementation.insert(
        "auth_modes".into(),
        Value::Array(sorted(report_strings(report, "/observed/auth_modes")?)),
    );
    implementation.insert(
        "scopes".into(),
        Value::Array(sorted(report_strings(report, "/observed/scopes")?)),
    );
    implementation.insert("extensions".into(), Value::Array(sorted(extensions)));
    Ok(FromReport {
        implementation,
        profiles: sorted(profiles),
        mcp_revisions: sorted(report_strings(report, "/observed/mcp_revisions")?),
        suite_version: report_str(report, "/suite_version")?,
        completed_at: report_str(report, "/completed_at")?,
    })
}

/// Refuse a report that does not permit a claim: the result must be `pass`
/// and no required check may have failed or been skipped.
fn ensure_claimable(report: &Value) -> Result<(), ClaimError> {
    let result = report_str(report, "/result")?;
    let required_failed = report_count(report, "/summary/required_failed")?;
    let required_skipped = report_count(report, "/summary/required_skipped")?;
    if result == "pass" && required_failed == 0 && required_skipped == 0 {
        Ok(())
    } else {
        Err(ClaimError::NotClaimable {
            result,
            required_failed,
            required_skipped,
        })
    }
}

fn check_text(option: &'static str, value: &str, min: usize, max: usize) -> Result<(), ClaimError> {
    let n = value.chars().count();
    if value.trim().is_empty() || n < min || n > max {
        return Err(ClaimError::InvalidInput {
            option,
            rule: format!("must be {min} to {max} characters and not blank (it has {n})"),
        });
    }
    Ok(())
}

/// Build, sign and schema-check a claim from a passing report.
pub fn issue(input: &IssueInput<'_>) -> Result<Value, ClaimError> {
    ensure_claimable(input.report)?;
    // The digest pins the bytes; they must be the report the claim is built
    // from, or the claim would pin a different run than it describes.
    let parsed: Value =
        serde_json::from_slice(input.report_bytes).map_err(|e| ClaimError::Report {
            member: "report bytes".to_owned(),
            rule: format!("are not JSON: {e}"),
        })?;
    if &parsed != input.report {
        return Err(ClaimError::Report {
            member: "report bytes".to_owned(),
            rule: "do not encode the report the claim is built from".to_owned(),
        });
    }
    if input.valid_for < MIN_VALIDITY || input.valid_for > MAX_VALIDITY {
        return Err(ClaimError::InvalidInput {
            option: "--valid-for",
            rule: "must be between 1h and 366d".to_owned(),
        });
    }
    check_text("--issuer", &input.issuer, 1, 200)?;
    check_text("--key-id", &input.key_id, 1, 500)?;
    check_text("--source-revision", &input.source_revision, 7, 128)?;
    check_text("claim id", &input.claim_id, 1, 200)?;
    let operator = input.operator.as_deref().unwrap_or(&input.issuer);
    check_text("--operator", operator, 1, 200)?;
    // Our own deviations from the public claim schema come first; the
    // issuer's follow (an issuer repeating one does not list it twice).
    let mut exceptions: Vec<&str> = SCHEMA_DEVIATIONS.to_vec();
    for e in &input.exceptions {
        check_text("--exception", e, 1, 500)?;
        if !exceptions.contains(&e.as_str()) {
            exceptions.push(e);
        }
    }
    if exceptions.len() > MAX_EXCEPTIONS {
        return Err(ClaimError::InvalidInput {
            option: "--exception",
            rule: format!(
                "at most {} exceptions besides the {} schema deviations every claim lists",
                MAX_EXCEPTIONS - SCHEMA_DEVIATIONS.len(),
                SCHEMA_DEVIATIONS.len()
            ),
        });
    }

    let derived = from_report(input.report, operator, &input.source_revision)?;
    // Seconds precision: RFC 3339 with an explicit offset (DAP 6.3).
    let now = DateTime::from_timestamp(input.now.timestamp(), 0).unwrap_or(input.now);
    let mut claim = json!({
        "claim_version": "1",
        "claim_id": input.claim_id,
        "status": "active",
        "specification": {
            "version": "0.1",
            "uri": DAP_SPEC_URI,
            "digest": DAP_SPEC_DIGEST,
        },
        "implementation": derived.implementation,
        "profiles": derived.profiles,
        "mcp_revisions": derived.mcp_revisions,
        "test_run": {
            "suite_version": derived.suite_version,
            "result": "pass",
            "completed_at": derived.completed_at,
            "report_digest": sha256_digest(input.report_bytes),
            "report_uri": input.report_uri,
        },
        "exceptions": exceptions,
        "issued_at": timestamp(now),
        "expires_at": timestamp(now + input.valid_for),
        "signer": {
            "organization": input.issuer,
            "key_id": input.key_id,
            "algorithm": ALGORITHM,
        },
    });
    let jws = sign_compact(
        &json!({"alg": ALGORITHM, "kid": input.key_id, "typ": JWS_TYPE}),
        &signing_payload(&claim)?,
        input.key,
    )?;
    claim["signer"]["signature"] = Value::String(jws);
    validate_schema(&claim)?;
    Ok(claim)
}

/// A compact JWS (RFC 7515 7.1) over `payload` with `header`, signed
/// ES256: P-256 ECDSA over SHA-256, the signature as r||s (64 bytes, RFC
/// 7518 3.4), not DER.
pub fn sign_compact(
    header: &Value,
    payload: &[u8],
    key: &SigningKey,
) -> Result<String, ClaimError> {
    let header = serde_json::to_vec(header).map_err(|e| ClaimError::Internal(e.to_string()))?;
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header),
        URL_SAFE_NO_PAD.encode(payload)
    );
    let signature: Signature = key.sign(signing_input.as_bytes());
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature.to_bytes())
    ))
}

fn parse_time(member: &'static str, claim: &Value) -> Result<DateTime<Utc>, ClaimError> {
    let value = claim[member].as_str().unwrap_or_default();
    DateTime::parse_from_rfc3339(value)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| ClaimError::Timestamp {
            member,
            value: value.to_owned(),
        })
}

fn b64_part(part: &str, what: &str) -> Result<Vec<u8>, ClaimError> {
    URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| ClaimError::JwsMalformed(format!("the {what} is not unpadded base64url")))
}

/// Verify a claim document against the issuer's JWKS at time `now`:
/// schema, ES256 only, the key named by `kid` (equal to `signer.key_id`),
/// the signature, the payload equal to the canonical claim without
/// `signer.signature`, status and validity window.
pub fn verify(
    claim_bytes: &[u8],
    jwks: &Value,
    now: DateTime<Utc>,
) -> Result<VerifiedClaim, ClaimError> {
    let claim: Value =
        serde_json::from_slice(claim_bytes).map_err(|e| ClaimError::NotJson(e.to_string()))?;
    validate_schema(&claim)?;

    let jws = claim["signer"]["signature"].as_str().unwrap_or_default();
    let parts: Vec<&str> = jws.split('.').collect();
    let [header_b64, payload_b64, signature_b64] = parts.as_slice() else {
        return Err(ClaimError::JwsMalformed(format!(
            "{} parts instead of 3",
            parts.len()
        )));
    };
    let header: Value = serde_json::from_slice(&b64_part(header_b64, "header")?)
        .map_err(|_| ClaimError::JwsMalformed("the header is not JSON".to_owned()))?;
    let Some(header) = header.as_object() else {
        return Err(ClaimError::JwsMalformed(
            "the header is not a JSON object".to_owned(),
        ));
    };
    // The algorithm is fixed, never taken from the token (RFC 8725 3.1):
    // `none`, HS256 (a public key used as an HMAC secret) and everything
    // else are refused before any key is touched.
    match header.get("alg").and_then(Value::as_str) {
        Some(ALGORITHM) => {}
        Some(other) => {
            return Err(ClaimError::Algorithm {
                alg: other.to_owned(),
            });
        }
        None => {
            return Err(ClaimError::Algorithm {
                alg: "(missing)".to_owned(),
            });
        }
    }
    if let Some(typ) = header.get("typ") {
        match typ.as_str() {
            Some(JWS_TYPE | "JWT") => {}
            Some(other) => {
                return Err(ClaimError::Type {
                    typ: other.to_owned(),
                });
            }
            None => {
                return Err(ClaimError::Type {
                    typ: typ.to_string(),
                });
            }
        }
    }
    if let Some(crit) = header.get("crit") {
        return Err(ClaimError::Critical(crit.to_string()));
    }
    let key_id = claim["signer"]["key_id"].as_str().unwrap_or_default();
    let header_kid = header
        .get("kid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if header_kid != key_id {
        return Err(ClaimError::KidMismatch {
            header_kid: header_kid.to_owned(),
            key_id: key_id.to_owned(),
        });
    }
    let key = find_key(jwks, key_id)?;
    let signature_bytes = b64_part(signature_b64, "signature")?;
    // Exactly r||s, 64 bytes (RFC 7518 3.4); a DER signature is malformed.
    let signature = Signature::from_slice(&signature_bytes).map_err(|_| {
        ClaimError::JwsMalformed(format!(
            "the ES256 signature must be 64 bytes r||s, it has {}",
            signature_bytes.len()
        ))
    })?;
    let signing_input = format!("{header_b64}.{payload_b64}");
    if key.verify(signing_input.as_bytes(), &signature).is_err() {
        return Err(ClaimError::BadSignature {
            kid: key_id.to_owned(),
        });
    }
    // The signature covers the payload; the payload must be the claim.
    let payload = b64_part(payload_b64, "payload")?;
    let expected = signing_payload(&claim)?;
    if payload != expected {
        let signed: Value =
            serde_json::from_slice(&payload).map_err(|_| ClaimError::PayloadMismatch {
                members: vec!["(the signed payload is not JSON)".to_owned()],
            })?;
        let mut unsigned = claim.clone();
        if let Some(signer) = unsigned.get_mut("signer").and_then(Value::as_object_mut) {
            signer.remove("signature");
        }
        let mut members = Vec::new();
        diff("", &signed, &unsigned, &mut members);
        return Err(ClaimError::PayloadMismatch { members });
    }

    let status = claim["status"].as_str().unwrap_or_default();
    if status != "active" {
        return Err(ClaimError::Status(status.to_owned()));
    }
    let issued_at = parse_time("issued_at", &claim)?;
    let expires_at = parse_time("expires_at", &claim)?;
    if expires_at <= issued_at {
        return Err(ClaimError::EmptyValidity {
            issued_at: timestamp(issued_at),
            expires_at: timestamp(expires_at),
        });
    }
    if now >= expires_at {
        return Err(ClaimError::Expired {
            expires_at: timestamp(expires_at),
            now: timestamp(now),
        });
    }
    if issued_at > now + CLOCK_SKEW {
        return Err(ClaimError::NotYetValid {
            issued_at: timestamp(issued_at),
            now: timestamp(now),
        });
    }
    Ok(VerifiedClaim {
        key_id: key_id.to_owned(),
        claim,
        issued_at,
        expires_at,
    })
}

/// Dotted member paths where `signed` and `claim` differ (arrays and
/// scalars compared whole), at most 20.
fn diff(path: &str, signed: &Value, claim: &Value, out: &mut Vec<String>) {
    if out.len() >= 20 || signed == claim {
        return;
    }
    match (signed, claim) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let child = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => diff(&child, x, y, out),
                    (Some(_), None) | (None, Some(_)) => out.push(child),
                    (None, None) => {}
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

/// The P-256 verifying key with `kid` in a JWKS (RFC 7517).
fn find_key(jwks: &Value, kid: &str) -> Result<VerifyingKey, ClaimError> {
    let Some(keys) = jwks.get("keys").and_then(Value::as_array) else {
        return Err(ClaimError::Jwks("it has no \"keys\" array".to_owned()));
    };
    let matching: Vec<&Value> = keys
        .iter()
        .filter(|k| k.get("kid").and_then(Value::as_str) == Some(kid))
        .collect();
    let jwk = match matching.as_slice() {
        [] => {
            return Err(ClaimError::UnknownKey {
                kid: kid.to_owned(),
            });
        }
        [one] => *one,
        [_, _, ..] => {
            return Err(ClaimError::Jwks(format!(
                "{} keys share kid {kid:?}",
                matching.len()
            )));
        }
    };
    let field = |name: &str| jwk.get(name).and_then(Value::as_str);
    if field("kty") != Some("EC") || field("crv") != Some("P-256") {
        return Err(ClaimError::Jwks(format!(
            "key {kid:?} is not an EC P-256 key (kty {:?}, crv {:?})",
            field("kty").unwrap_or("(missing)"),
            field("crv").unwrap_or("(missing)")
        )));
    }
    if let Some(alg) = jwk.get("alg")
        && alg.as_str() != Some(ALGORITHM)
    {
        return Err(ClaimError::Jwks(format!(
            "key {kid:?} is for alg {alg}, not ES256"
        )));
    }
    if let Some(usage) = jwk.get("use")
        && usage.as_str() != Some("sig")
    {
        return Err(ClaimError::Jwks(format!(
            "key {kid:?} has use {usage}, not \"sig\""
        )));
    }
    let coordinate = |name: &str| -> Result<Vec<u8>, ClaimError> {
        let bytes = field(name)
            .and_then(|s| URL_SAFE_NO_PAD.decode(s).ok())
            .ok_or_else(|| {
                ClaimError::Jwks(format!(
                    "key {kid:?} member {name:?} is not unpadded base64url"
                ))
            })?;
        if bytes.len() == 32 {
            Ok(bytes)
        } else {
            Err(ClaimError::Jwks(format!(
                "key {kid:?} member {name:?} is {} bytes, P-256 needs 32 (RFC 7518 6.2.1)",
                bytes.len()
            )))
        }
    };
    let mut sec1 = vec![0x04];
    sec1.extend(coordinate("x")?);
    sec1.extend(coordinate("y")?);
    VerifyingKey::from_sec1_bytes(&sec1)
        .map_err(|_| ClaimError::Jwks(format!("key {kid:?} is not a point on P-256")))
}

/// Check a report against a verified claim: its bytes hash to the pinned
/// digest, and what a claim derives from it (inventory, scope, suite
/// version, completion time) is what the claim says.
pub fn verify_report(claim: &VerifiedClaim, report_bytes: &[u8]) -> Result<(), ClaimError> {
    let actual = sha256_digest(report_bytes);
    let pinned = claim.report_digest();
    if actual != pinned {
        return Err(ClaimError::ReportDigest {
            pinned: pinned.to_owned(),
            actual,
        });
    }
    let report: Value = serde_json::from_slice(report_bytes).map_err(|e| ClaimError::Report {
        member: "report bytes".to_owned(),
        rule: format!("are not JSON: {e}"),
    })?;
    ensure_claimable(&report)?;
    let c = &claim.claim;
    let derived = from_report(
        &report,
        c["implementation"]["operator"].as_str().unwrap_or_default(),
        c["implementation"]["source_revision"]
            .as_str()
            .unwrap_or_default(),
    )?;
    let mut mismatches = Vec::new();
    for (member, value) in &derived.implementation {
        if &c["implementation"][member] != value {
            mismatches.push(format!("implementation.{member} differs from the report"));
        }
    }
    let pairs = [
        ("profiles", Value::Array(derived.profiles)),
        ("mcp_revisions", Value::Array(derived.mcp_revisions)),
    ];
    for (member, value) in pairs {
        if c[member] != value {
            mismatches.push(format!("{member} differs from the report"));
        }
    }
    for (member, value) in [
        ("suite_version", derived.suite_version),
        ("completed_at", derived.completed_at),
    ] {
        if c["test_run"][member].as_str() != Some(value.as_str()) {
            mismatches.push(format!("test_run.{member} differs from the report"));
        }
    }
    if mismatches.is_empty() {
        Ok(())
    } else {
        Err(ClaimError::ReportMismatch(mismatches))
    }
}

/// Generate a fresh P-256 signing key from the operating system's RNG.
pub fn generate_key() -> Result<SigningKey, ClaimError> {
    use p256::elliptic_curve::Generate as _;
    SigningKey::try_generate()
        .map_err(|_| ClaimError::Key("the system random number generator failed".to_owned()))
}

/// PKCS#8 PEM ("PRIVATE KEY") of `key`.
pub fn key_to_pem(key: &SigningKey) -> Result<String, ClaimError> {
    use p256::pkcs8::EncodePrivateKey as _;
    key.to_pkcs8_pem(p256::pkcs8::LineEnding::LF)
        .map(|pem| pem.to_string())
        .map_err(|_| ClaimError::Key("cannot encode the key as PKCS#8 PEM".to_owned()))
}

/// Read a P-256 private key from PEM: PKCS#8 ("PRIVATE KEY"), or SEC1
/// ("EC PRIVATE KEY", what `openssl ecparam -genkey` writes).
pub fn key_from_pem(pem: &str) -> Result<SigningKey, ClaimError> {
    use p256::pkcs8::DecodePrivateKey as _;
    if let Ok(key) = SigningKey::from_pkcs8_pem(pem) {
        return Ok(key);
    }
    if let Ok(secret) = p256::SecretKey::from_sec1_pem(pem) {
        return Ok(SigningKey::from(&secret));
    }
    // Never echo the PEM: it is key material.
    Err(ClaimError::Key(
        "not a P-256 private key in PKCS#8 (\"PRIVATE KEY\") or SEC1 (\"EC PRIVATE KEY\") PEM"
            .to_owned(),
    ))
}

/// The public JWK (RFC 7517, RFC 7518 6.2) of `key` with `kid`.
pub fn public_jwk(key: &VerifyingKey, kid: &str) -> Value {
    let point = key.to_sec1_point(false);
    let bytes = point.as_bytes();
    // An uncompressed SEC1 point is 0x04 || x (32) || y (32).
    let (x, y) = bytes
        .get(1..33)
        .zip(bytes.get(33..65))
        .unwrap_or((&[][..], &[][..]));
    json!({
        "kty": "EC",
        "crv": "P-256",
        "x": URL_SAFE_NO_PAD.encode(x),
        "y": URL_SAFE_NO_PAD.encode(y),
        "kid": kid,
        "alg": ALGORITHM,
        "use": "sig",
    })
}

/// RFC 7638 JWK thumbprint (SHA-256, base64url) of `key`: a default key id
/// that names the key itself.
pub fn jwk_thumbprint(key: &VerifyingKey) -> String {
    let jwk = public_jwk(key, "");
    // RFC 7638 3.2: only the required members, lexicographic order, no
    // whitespace; JCS produces exactly that for these string members.
    let required = json!({"crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"], "y": jwk["y"]});
    let bytes = serde_json_canonicalizer::to_vec(&required).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(Sha256::digest(bytes))
}

/// A JWKS holding the public half of the PEM private key `pem`, with `kid`.
pub fn jwks_from_key(pem: &str, kid: &str) -> Result<Value, ClaimError> {
    let key = key_from_pem(pem)?;
    Ok(json!({"keys": [public_jwk(key.verifying_key(), kid)]}))
}

/// Parse a `--valid-for` value: a positive integer followed by `d`
/// (days), `h` (hours) or `m` (minutes), within 1h..366d.
pub fn parse_validity(text: &str) -> Result<Duration, ClaimError> {
    let invalid = |rule: String| ClaimError::InvalidInput {
        option: "--valid-for",
        rule,
    };
    let text = text.trim();
    let (number, unit) = text.split_at(text.len().saturating_sub(1));
    let n: i64 =
        number.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
            invalid("expected a positive number and a unit, e.g. 30d or 12h".into())
        })?;
    let duration = match unit {
        "d" => Duration::try_days(n),
        "h" => Duration::try_hours(n),
        "m" => Duration::try_minutes(n),
        _ => return Err(invalid("the unit must be d, h or m (e.g. 30d, 12h)".into())),
    }
    .ok_or_else(|| invalid("out of range".into()))?;
    if duration < MIN_VALIDITY || duration > MAX_VALIDITY {
        return Err(invalid("must be between 1h and 366d".into()));
    }
    Ok(duration)
}

#[cfg(test)]
mod tests;
