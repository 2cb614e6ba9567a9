//! Signed conformance claims (DAP 0.1 section 14, docs/conformance.md): issue a
//! claim from a synthetic passing report, verify it, and prove that every
//! tampering the DAP conformance rules name is rejected with its own error.
//! Pure, except the stand-in server for the live comparison and one
//! end-to-end test against the real gateway.

mod common;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Duration, Utc};
use conformance::claim::{
    self, ClaimError, IssueInput, KeygenArgs, VerifiedClaim, canonical_bytes, issue, sign_compact,
    signing_payload, validate_schema, verify, verify_report,
};
use p256::ecdsa::SigningKey;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const KID: &str = "conformance-2026";

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-12-01T10:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

/// A passing report in the suite's report shape (run.rs): what a run
/// observed, its summary and result.
fn passing_report() -> Value {
    json!({
        "suite": "dap-conformance",
        "suite_version": "0.1.0",
        "target": {"endpoint": "http://127.0.0.1:8080/mcp"},
        "started_at": "2026-12-01T09:58:00Z",
        "completed_at": "2026-12-01T09:59:30Z",
        "roles": ["inventory", "partner"],
        "summary": {"passed": 41, "failed": 0, "skipped": 1, "required_failed": 0, "required_skipped": 0},
        "result": "pass",
        "observed": {
            "endpoint": "http://127.0.0.1:8080/mcp",
            "mcp_revisions": ["2026-07-28", "2025-11-25"],
            "server_info": {"name": "dealer-agent-gateway", "version": "0.1.0"},
            "profiles": [
                "dealeragent.discovery/0.1",
                "dealeragent.inventory.read/0.1",
                "dealeragent.inventory.availability/0.1",
                "dealeragent.pricing.disclosure/0.1"
            ],
            "extensions": ["dealergateway.offers/0.1"],
            "tools": [
                "dealeragent.discovery.get_manifest",
                "dealeragent.dealer.get",
                "dealeragent.inventory.search",
                "dealeragent.inventory.get_vehicle",
                "dealeragent.inventory.verify_availability",
                "dealeragent.pricing.get_disclosure",
                "dealergateway.offers.evaluate"
            ],
            "resources": [
                "dealeragent://manifest",
                "dealeragent://organization/{organization_id}"
            ],
            "auth_modes": ["public", "workload_identity"],
            "scopes": ["dealeragent:inventory:read", "dealeragent:pricing:read"],
            "organization_ids": ["org.maplecrest-motor-group"],
            "rooftop_ids": ["roof.maplecrest-north", "roof.maplecrest-fleet"],
            "manifest_digest": format!("sha256:{}", "ab".repeat(32))
        },
        "checks": [
            {"id": "DAPC-MAN-001", "group": "manifest", "title": "manifest", "required": true,
             "result": "passed", "reason": "", "evidence": []}
        ]
    })
}

fn bytes_of(report: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(report).unwrap();
    b.push(b'\n');
    b
}

fn input<'a>(report: &'a Value, bytes: &'a [u8], key: &'a SigningKey) -> IssueInput<'a> {
    IssueInput {
        report,
        report_bytes: bytes,
        report_uri: "https://dealer.example/conformance/report.json".into(),
        claim_id: "urn:uuid:5d0b4b8e-7c1f-4d0e-9a53-1f6f3c2f1a11".into(),
        now: now(),
        valid_for: Duration::days(30),
        issuer: "Maplecrest Motor Group".into(),
        operator: None,
        source_revision: "0123456789abcdef0123456789abcdef01234567".into(),
        exceptions: vec!["Legacy 2025-11-25 sessions are served in memory only.".into()],
        key,
        key_id: KID.into(),
    }
}

fn jwks(key: &SigningKey, kid: &str) -> Value {
    json!({"keys": [claim::public_jwk(key.verifying_key(), kid)]})
}

struct Fixture {
    key: SigningKey,
    report_bytes: Vec<u8>,
    claim: Value,
}

fn fixture() -> Fixture {
    let key = claim::generate_key().unwrap();
    let report = passing_report();
    let report_bytes = bytes_of(&report);
    let claim = issue(&input(&report, &report_bytes, &key)).unwrap();
    Fixture {
        key,
        report_bytes,
        claim,
    }
}

fn verify_value(
    claim: &Value,
    jwks: &Value,
    at: DateTime<Utc>,
) -> Result<VerifiedClaim, ClaimError> {
    verify(&serde_json::to_vec_pretty(claim).unwrap(), jwks, at)
}

fn jws_parts(claim: &Value) -> Vec<String> {
    claim["signer"]["signature"]
        .as_str()
        .unwrap()
        .split('.')
        .map(str::to_owned)
        .collect()
}

/// Re-sign `claim` as it stands now with `header` and `key` (a forger who
/// controls the document but not the issuer's key).
fn resign(claim: &mut Value, header: &Value, key: &SigningKey) {
    let payload = signing_payload(claim).unwrap();
    claim["signer"]["signature"] = json!(sign_compact(header, &payload, key).unwrap());
}

#[test]
fn an_issued_claim_validates_and_pins_the_run() {
    let f = fixture();
    validate_schema(&f.claim).unwrap();
    let c = &f.claim;
    assert_eq!(c["claim_version"], "1");
    assert_eq!(c["status"], "active");
    assert_eq!(c["specification"]["version"], "0.1");
    assert_eq!(c["specification"]["digest"], claim::DAP_SPEC_DIGEST);
    assert_eq!(
        c["specification"]["uri"],
        "https://dealeragentprotocol.com/spec/v0.1/"
    );
    assert_eq!(
        c["test_run"]["report_digest"],
        format!("sha256:{}", hex::encode(Sha256::digest(&f.report_bytes)))
    );
    assert_eq!(c["test_run"]["result"], "pass");
    assert_eq!(c["test_run"]["suite_version"], "0.1.0");
    assert_eq!(c["test_run"]["completed_at"], "2026-12-01T09:59:30Z");
    assert_eq!(c["issued_at"], "2026-12-01T10:00:00Z");
    assert_eq!(c["expires_at"], "2026-12-31T10:00:00Z");
    // The DAP tool inventory only; the extension tool is covered by its
    // extension profile.
    let tools = c["implementation"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 6);
    assert!(!tools.contains(&json!("dealergateway.offers.evaluate")));
    assert_eq!(
        c["implementation"]["extensions"],
        json!(["dealergateway.offers/0.1"])
    );
    assert_eq!(
        c["implementation"]["scopes"],
        json!(["dealeragent:inventory:read", "dealeragent:pricing:read"])
    );
    assert_eq!(
        c["implementation"]["rooftop_ids"],
        json!(["roof.maplecrest-fleet", "roof.maplecrest-north"])
    );
    assert_eq!(c["implementation"]["operator"], "Maplecrest Motor Group");
    assert_eq!(c["mcp_revisions"], json!(["2025-11-25", "2026-07-28"]));
    assert_eq!(c["profiles"].as_array().unwrap().len(), 4);
    // Our deviations from the public claim schema first, then the
    // issuer's own.
    let mut exceptions: Vec<Value> = claim::SCHEMA_DEVIATIONS.iter().map(|d| json!(d)).collect();
    exceptions.push(json!(
        "Legacy 2025-11-25 sessions are served in memory only."
    ));
    assert_eq!(c["exceptions"], Value::Array(exceptions));
    assert_eq!(c["signer"]["key_id"], KID);
    assert_eq!(c["signer"]["algorithm"], "ES256");

    // Header {"alg":"ES256","kid":..,"typ":"dap-claim+jws"}, payload the
    // canonical claim without the signature, signature 64 bytes r||s.
    let parts = jws_parts(c);
    assert_eq!(parts.len(), 3);
    let header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&parts[0]).unwrap()).unwrap();
    assert_eq!(
        header,
        json!({"alg": "ES256", "kid": KID, "typ": "dap-claim+jws"})
    );
    assert_eq!(
        URL_SAFE_NO_PAD.decode(&parts[1]).unwrap(),
        signing_payload(c).unwrap()
    );
    assert_eq!(URL_SAFE_NO_PAD.decode(&parts[2]).unwrap().len(), 64);
}

/// A claim names every deliberate deviation from the public DAP claim
/// schema in `exceptions`, whatever the issuer adds, and each member that
/// deviates is one the claim really carries.
#[test]
fn a_claim_lists_every_deviation_from_the_public_claim_schema() {
    let key = claim::generate_key().unwrap();
    let report = passing_report();
    let bytes = bytes_of(&report);
    let mut no_exceptions = input(&report, &bytes, &key);
    no_exceptions.exceptions = vec![];
    let mut repeated = input(&report, &bytes, &key);
    repeated.exceptions = vec![claim::SCHEMA_DEVIATIONS[0].to_owned()];
    for given in [no_exceptions, repeated] {
        let c = issue(&given).unwrap();
        let listed: Vec<&str> = c["exceptions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        assert_eq!(listed, claim::SCHEMA_DEVIATIONS);
        assert!(
            listed
                .iter()
                .any(|e| e.starts_with("implementation.scopes:"))
        );
        assert!(c["implementation"]["scopes"].is_array());
        assert!(c["implementation"]["extensions"].is_array());
        validate_schema(&c).unwrap();
    }
    // The deviations count against the schema's 32 exceptions.
    let mut too_many = input(&report, &bytes, &key);
    too_many.exceptions = (0..=32 - claim::SCHEMA_DEVIATIONS.len())
        .map(|i| format!("deviation {i}"))
        .collect();
    assert!(matches!(
        issue(&too_many),
        Err(ClaimError::InvalidInput {
            option: "--exception",
            ..
        })
    ));
}

#[test]
fn a_claim_verifies_with_its_jwks_and_its_report() {
    let f = fixture();
    let verified = verify_value(&f.claim, &jwks(&f.key, KID), now()).unwrap();
    assert_eq!(verified.key_id, KID);
    assert_eq!(verified.claim, f.claim);
    assert_eq!(verified.tools().len(), 6);
    verify_report(&verified, &f.report_bytes).unwrap();
    // The same document serialized compactly verifies too: the signature
    // covers the canonical form, not the file's formatting.
    verify(
        &serde_json::to_vec(&f.claim).unwrap(),
        &jwks(&f.key, KID),
        now(),
    )
    .unwrap();
}

#[test]
fn a_changed_member_fails_by_name() {
    let f = fixture();
    let keys = jwks(&f.key, KID);

    let mut more_tools = f.claim.clone();
    more_tools["implementation"]["tools"]
        .as_array_mut()
        .unwrap()
        .push(json!("dealeragent.inventory.get_used_vehicle_details"));
    match verify_value(&more_tools, &keys, now()) {
        Err(ClaimError::PayloadMismatch { members }) => {
            assert_eq!(members, vec!["implementation.tools".to_owned()]);
        }
        other => panic!("an added tool was accepted or misreported: {other:?}"),
    }

    let mut longer = f.claim.clone();
    longer["expires_at"] = json!("2027-12-31T10:00:00Z");
    match verify_value(&longer, &keys, now()) {
        Err(e @ ClaimError::PayloadMismatch { .. }) => {
            assert!(e.to_string().contains("expires_at"), "{e}");
        }
        other => panic!("a later expires_at was accepted or misreported: {other:?}"),
    }

    let mut fewer_exceptions = f.claim.clone();
    fewer_exceptions
        .as_object_mut()
        .unwrap()
        .remove("exceptions");
    match verify_value(&fewer_exceptions, &keys, now()) {
        Err(ClaimError::PayloadMismatch { members }) => {
            assert_eq!(members, vec!["exceptions".to_owned()]);
        }
        other => panic!("a hidden exception was accepted or misreported: {other:?}"),
    }
}

#[test]
fn a_signature_by_another_key_fails() {
    let f = fixture();
    let mut forged = f.claim.clone();
    forged["implementation"]["rooftop_ids"] = json!(["roof.somebody-else"]);
    let forger = SigningKey::from_slice(&[0x42; 32]).unwrap();
    resign(
        &mut forged,
        &json!({"alg": "ES256", "kid": KID, "typ": "dap-claim+jws"}),
        &forger,
    );
    // The document is self-consistent (payload = claim); only the key is wrong.
    match verify_value(&forged, &jwks(&f.key, KID), now()) {
        Err(ClaimError::BadSignature { kid }) => assert_eq!(kid, KID),
        other => panic!("a forged signature was accepted or misreported: {other:?}"),
    }
    // And the forger's own key verifies it, so the check is the key, not
    // something else about the document.
    verify_value(&forged, &jwks(&forger, KID), now()).unwrap();
}

#[test]
fn a_kid_outside_the_jwks_or_differing_from_signer_key_id_fails() {
    let f = fixture();
    match verify_value(&f.claim, &jwks(&f.key, "another-kid"), now()) {
        Err(ClaimError::UnknownKey { kid }) => assert_eq!(kid, KID),
        other => panic!("an unknown kid was accepted or misreported: {other:?}"),
    }

    let mut mismatched = f.claim.clone();
    resign(
        &mut mismatched,
        &json!({"alg": "ES256", "kid": "another-kid", "typ": "dap-claim+jws"}),
        &f.key,
    );
    let both = json!({"keys": [
        claim::public_jwk(f.key.verifying_key(), KID),
        claim::public_jwk(f.key.verifying_key(), "another-kid"),
    ]});
    match verify_value(&mismatched, &both, now()) {
        Err(ClaimError::KidMismatch { header_kid, key_id }) => {
            assert_eq!((header_kid.as_str(), key_id.as_str()), ("another-kid", KID));
        }
        other => panic!("a header kid differing from signer.key_id was accepted: {other:?}"),
    }

    // A non-P-256 key under the right kid is refused, not tried.
    let rsa = json!({"keys": [{"kty": "RSA", "kid": KID, "n": "AQAB", "e": "AQAB"}]});
    assert!(matches!(
        verify_value(&f.claim, &rsa, now()),
        Err(ClaimError::Jwks(_))
    ));
}

#[test]
fn alg_none_and_hs256_are_refused() {
    let f = fixture();
    let keys = jwks(&f.key, KID);
    let parts = jws_parts(&f.claim);
    for alg in ["none", "HS256", "ES384", "RS256"] {
        let header = URL_SAFE_NO_PAD.encode(
            serde_json::to_vec(&json!({"alg": alg, "kid": KID, "typ": "dap-claim+jws"})).unwrap(),
        );
        let mut tampered = f.claim.clone();
        // A non-empty third part so the schema admits the shape and the
        // algorithm rule is what refuses it.
        tampered["signer"]["signature"] = json!(format!("{header}.{}.{}", parts[1], parts[2]));
        match verify_value(&tampered, &keys, now()) {
            Err(ClaimError::Algorithm { alg: got }) => assert_eq!(got, alg),
            other => panic!("alg {alg} was accepted or misreported: {other:?}"),
        }
    }
    // The classic unsecured JWS (empty signature) is not even a claim.
    let none = URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
    let mut unsecured = f.claim.clone();
    unsecured["signer"]["signature"] = json!(format!("{none}.{}.", parts[1]));
    match verify_value(&unsecured, &keys, now()) {
        Err(ClaimError::Schema { errors }) => {
            assert!(
                errors.iter().any(|e| e.starts_with("/signer/signature")),
                "{errors:?}"
            );
        }
        other => panic!("an unsecured JWS was accepted or misreported: {other:?}"),
    }
}

#[test]
fn a_der_encoded_signature_is_refused() {
    let f = fixture();
    let parts = jws_parts(&f.claim);
    let raw = URL_SAFE_NO_PAD.decode(&parts[2]).unwrap();
    let signature = p256::ecdsa::Signature::from_slice(&raw).unwrap();
    let der = URL_SAFE_NO_PAD.encode(signature.to_der().as_bytes());
    let mut tampered = f.claim.clone();
    tampered["signer"]["signature"] = json!(format!("{}.{}.{der}", parts[0], parts[1]));
    assert!(matches!(
        verify_value(&tampered, &jwks(&f.key, KID), now()),
        Err(ClaimError::JwsMalformed(_))
    ));
}

#[test]
fn an_expired_or_future_claim_fails() {
    let f = fixture();
    let keys = jwks(&f.key, KID);
    let expires = now() + Duration::days(30);
    // Valid one second before expiry, refused at expiry.
    verify_value(&f.claim, &keys, expires - Duration::seconds(1)).unwrap();
    match verify_value(&f.claim, &keys, expires) {
        Err(ClaimError::Expired { expires_at, .. }) => {
            assert_eq!(expires_at, "2026-12-31T10:00:00Z");
        }
        other => panic!("an expired claim was accepted or misreported: {other:?}"),
    }
    match verify_value(&f.claim, &keys, now() - Duration::hours(1)) {
        Err(ClaimError::NotYetValid { .. }) => {}
        other => panic!("a claim from the future was accepted: {other:?}"),
    }
}

#[test]
fn a_failing_report_is_refused_at_issue_time() {
    let key = SigningKey::from_slice(&[0x11; 32]).unwrap();
    let mut failing = passing_report();
    failing["result"] = json!("fail");
    failing["summary"]["failed"] = json!(2);
    failing["summary"]["required_failed"] = json!(2);
    let bytes = bytes_of(&failing);
    match issue(&input(&failing, &bytes, &key)) {
        Err(e @ ClaimError::NotClaimable { .. }) => {
            let text = e.to_string();
            assert!(text.contains("2 required check(s) failed"), "{text}");
            assert!(text.contains("0 required check(s) skipped"), "{text}");
        }
        other => panic!("a failing report was claimed: {other:?}"),
    }

    // A "pass" that skipped a required check is no pass (skipped or
    // untested required cases prohibit the claim).
    let mut skipped = passing_report();
    skipped["summary"]["required_skipped"] = json!(1);
    let bytes = bytes_of(&skipped);
    match issue(&input(&skipped, &bytes, &key)) {
        Err(e @ ClaimError::NotClaimable { .. }) => {
            assert!(e.to_string().contains("1 required check(s) skipped"), "{e}");
        }
        other => panic!("a report with a skipped required check was claimed: {other:?}"),
    }

    // Bytes that are not the report the claim describes are refused too.
    let report = passing_report();
    let other_bytes = bytes_of(&failing);
    assert!(matches!(
        issue(&input(&report, &other_bytes, &key)),
        Err(ClaimError::Report { .. })
    ));
}

#[test]
fn issue_input_is_checked() {
    let key = SigningKey::from_slice(&[0x11; 32]).unwrap();
    let report = passing_report();
    let bytes = bytes_of(&report);
    let mut short = input(&report, &bytes, &key);
    short.source_revision = "abc".into();
    assert!(matches!(
        issue(&short),
        Err(ClaimError::InvalidInput {
            option: "--source-revision",
            ..
        })
    ));
    let mut forever = input(&report, &bytes, &key);
    forever.valid_for = Duration::days(400);
    assert!(matches!(
        issue(&forever),
        Err(ClaimError::InvalidInput {
            option: "--valid-for",
            ..
        })
    ));
    let mut blank = input(&report, &bytes, &key);
    blank.exceptions = vec!["  ".into()];
    assert!(matches!(
        issue(&blank),
        Err(ClaimError::InvalidInput {
            option: "--exception",
            ..
        })
    ));
    // A report missing an observed member names it.
    let mut partial = passing_report();
    partial["observed"]
        .as_object_mut()
        .unwrap()
        .remove("scopes");
    let partial_bytes = bytes_of(&partial);
    match issue(&input(&partial, &partial_bytes, &key)) {
        Err(ClaimError::Report { member, .. }) => assert_eq!(member, "/observed/scopes"),
        other => panic!("a report without scopes was claimed: {other:?}"),
    }
}

#[test]
fn a_report_whose_bytes_differ_from_the_pinned_digest_fails() {
    let f = fixture();
    let verified = verify_value(&f.claim, &jwks(&f.key, KID), now()).unwrap();
    let mut edited: Value = serde_json::from_slice(&f.report_bytes).unwrap();
    edited["summary"]["skipped"] = json!(0);
    match verify_report(&verified, &bytes_of(&edited)) {
        Err(ClaimError::ReportDigest { pinned, actual }) => {
            assert_eq!(pinned, f.claim["test_run"]["report_digest"]);
            assert_ne!(pinned, actual);
        }
        other => panic!("a different report was accepted: {other:?}"),
    }
    // Even a formatting change is a different report: the digest pins bytes.
    let compact = serde_json::to_vec(&passing_report()).unwrap();
    assert!(matches!(
        verify_report(&verified, &compact),
        Err(ClaimError::ReportDigest { .. })
    ));
}

#[test]
fn the_payload_is_exactly_the_rfc8785_canonical_form() {
    // Member order by UTF-16 code units, no whitespace, ECMAScript numbers
    // (RFC 8785 3.2.2.3 and 3.2.3 examples).
    let value: Value = serde_json::from_str(
        r#"{
            "\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
            "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis",
            "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
            "literals": [null, true, false]
        }"#,
    )
    .unwrap();
    let expected = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"literals\":[null,true,false],\
\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\
\"\u{80}\":\"Control\",\"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\
\"\u{20ac}\":\"Euro Sign\",\"\u{1f600}\":\"Emoji: Grinning Face\",\
\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}";
    assert_eq!(
        String::from_utf8(canonical_bytes(&value).unwrap()).unwrap(),
        expected
    );

    // The signing payload drops signer.signature and nothing else.
    let small = json!({
        "status": "active",
        "signer": {"signature": "a.b.c", "key_id": "k", "algorithm": "ES256"},
        "claim_id": "x"
    });
    assert_eq!(
        String::from_utf8(signing_payload(&small).unwrap()).unwrap(),
        r#"{"claim_id":"x","signer":{"algorithm":"ES256","key_id":"k"},"status":"active"}"#
    );
}

#[test]
fn keys_round_trip_through_pem_and_jwks() {
    let key = claim::generate_key().unwrap();
    let pem = claim::key_to_pem(&key).unwrap();
    assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"));
    assert_eq!(claim::key_from_pem(&pem).unwrap(), key);
    let jwks = claim::jwks_from_key(&pem, "k1").unwrap();
    assert_eq!(
        jwks,
        json!({"keys": [claim::public_jwk(key.verifying_key(), "k1")]})
    );
    let jwk = &jwks["keys"][0];
    assert_eq!(
        (jwk["kty"].as_str(), jwk["crv"].as_str()),
        (Some("EC"), Some("P-256"))
    );
    assert!(
        jwk.get("d").is_none(),
        "the JWKS must hold no private member"
    );
    // Garbage is refused without echoing it.
    let err =
        claim::key_from_pem("-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n")
            .unwrap_err()
            .to_string();
    assert!(!err.contains("c2VjcmV0"), "{err}");
}

#[test]
fn keygen_writes_a_private_key_with_mode_0600_and_never_overwrites() {
    let dir = std::env::temp_dir().join(format!("dap-claim-keygen-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let key_path = dir.join("key.pem");
    let jwks_path = dir.join("jwks.json");
    let args = KeygenArgs {
        out: key_path.clone(),
        key_id: Some(KID.into()),
        jwks: Some(jwks_path.clone()),
    };
    assert_eq!(claim::cmd_keygen(&args), 0);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key_path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let pem = std::fs::read_to_string(&key_path).unwrap();
    let jwks: Value = serde_json::from_slice(&std::fs::read(&jwks_path).unwrap()).unwrap();
    assert_eq!(jwks, claim::jwks_from_key(&pem, KID).unwrap());
    // A second keygen to the same path fails and leaves the key alone.
    assert_eq!(claim::cmd_keygen(&args), 2);
    assert_eq!(std::fs::read_to_string(&key_path).unwrap(), pem);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A stand-in MCP 2026-07-28 server for `verify_against_live`: it refuses
/// (as a JSON-RPC error) any request without the per-request `_meta` and
/// the mirror headers, and serves the given tools and manifest.
async fn fake_gateway(tools: Vec<&'static str>, manifest: Value) -> String {
    use axum::http::HeaderMap;
    use axum::{Json, Router, routing::post};
    let state = std::sync::Arc::new((tools, manifest));
    let app = Router::new().route(
        "/mcp",
        post(move |headers: HeaderMap, Json(body): Json<Value>| {
            let state = state.clone();
            async move {
                let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
                let method = body["method"].as_str().unwrap_or_default();
                let meta = &body["params"]["_meta"];
                let well_formed = header("mcp-protocol-version") == Some("2026-07-28")
                    && header("mcp-method") == Some(method)
                    && meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
                    && meta["io.modelcontextprotocol/clientCapabilities"].is_object();
                let result = match method {
                    _ if !well_formed => None,
                    "tools/list" => Some(json!({
                        "resultType": "complete",
                        "tools": state.0.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()
                    })),
                    "tools/call"
                        if body["params"]["name"] == "dealeragent.discovery.get_manifest"
                            && header("mcp-name") == Some("dealeragent.discovery.get_manifest") =>
                    {
                        Some(json!({"isError": false, "structuredContent": state.1}))
                    }
                    _ => None,
                };
                Json(match result {
                    Some(r) => json!({"jsonrpc": "2.0", "id": body["id"], "result": r}),
                    None => json!({"jsonrpc": "2.0", "id": body["id"],
                                   "error": {"code": -32602, "message": "malformed request"}}),
                })
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/mcp")
}

fn served_manifest(profiles: &[&str]) -> Value {
    json!({
        "capabilities": profiles.iter().map(|p| json!({"profile": p})).collect::<Vec<_>>(),
        "resources": ["dealeragent://manifest", "dealeragent://organization/{organization_id}"],
    })
}

const SERVED_TOOLS: [&str; 7] = [
    "dealeragent.discovery.get_manifest",
    "dealeragent.dealer.get",
    "dealeragent.inventory.search",
    "dealeragent.inventory.get_vehicle",
    "dealeragent.inventory.verify_availability",
    "dealeragent.pricing.get_disclosure",
    "dealergateway.offers.evaluate",
];

const CORE_PROFILES: [&str; 4] = [
    "dealeragent.discovery/0.1",
    "dealeragent.inventory.read/0.1",
    "dealeragent.inventory.availability/0.1",
    "dealeragent.pricing.disclosure/0.1",
];

#[tokio::test]
async fn a_claim_is_compared_with_what_the_url_serves_now() {
    let f = fixture();
    let verified = verify_value(&f.claim, &jwks(&f.key, KID), now()).unwrap();

    // Same inventory (the extension tool is covered by its profile).
    let url = fake_gateway(SERVED_TOOLS.to_vec(), served_manifest(&CORE_PROFILES)).await;
    claim::verify_against_live(&verified, &url).await.unwrap();

    // One more DAP tool, one profile gone: each difference by name.
    let mut tools = SERVED_TOOLS.to_vec();
    tools.push("dealeragent.inventory.get_used_vehicle_details");
    let url = fake_gateway(tools, served_manifest(&CORE_PROFILES[..3])).await;
    match claim::verify_against_live(&verified, &url).await {
        Err(ClaimError::LiveMismatch { differences, .. }) => assert_eq!(
            differences,
            vec![
                "tool dealeragent.inventory.get_used_vehicle_details is served but not claimed"
                    .to_owned(),
                "profile dealeragent.pricing.disclosure/0.1 is claimed but not served".to_owned(),
            ]
        ),
        other => panic!("a changed gateway matched the claim: {other:?}"),
    }

    // A URL that answers nothing is a connection failure, not a match.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/mcp", l.local_addr().unwrap())
    };
    assert!(matches!(
        claim::verify_against_live(&verified, &dead).await,
        Err(ClaimError::Live { .. })
    ));
}

#[tokio::test]
async fn the_verify_command_checks_files_and_exits_by_outcome() {
    // The command checks expiry against the real clock, so this claim is
    // issued now.
    let key = claim::generate_key().unwrap();
    let report = passing_report();
    let report_bytes = bytes_of(&report);
    let issued = issue(&IssueInput {
        now: Utc::now(),
        ..input(&report, &report_bytes, &key)
    })
    .unwrap();
    let dir = std::env::temp_dir().join(format!("dap-claim-verify-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let claim_path = dir.join("claim.json");
    let jwks_path = dir.join("jwks.json");
    let report_path = dir.join("claim.json.report.json");
    std::fs::write(&claim_path, serde_json::to_vec_pretty(&issued).unwrap()).unwrap();
    std::fs::write(&jwks_path, serde_json::to_vec(&jwks(&key, KID)).unwrap()).unwrap();
    std::fs::write(&report_path, &report_bytes).unwrap();
    let args = |report: Option<std::path::PathBuf>| claim::VerifyArgs {
        claim: claim_path.clone(),
        jwks: jwks_path.clone(),
        url: None,
        report,
    };
    assert_eq!(claim::cmd_verify(&args(None)).await, 0);
    assert_eq!(claim::cmd_verify(&args(Some(report_path.clone()))).await, 0);
    // A different report is refused.
    std::fs::write(&report_path, b"{}\n").unwrap();
    assert_eq!(claim::cmd_verify(&args(Some(report_path.clone()))).await, 1);
    // A claim under another issuer's JWKS is refused.
    std::fs::write(
        &jwks_path,
        serde_json::to_vec(&jwks(&SigningKey::from_slice(&[9; 32]).unwrap(), KID)).unwrap(),
    )
    .unwrap();
    assert_eq!(claim::cmd_verify(&args(None)).await, 1);
    // A missing file is a usage error.
    std::fs::remove_file(&jwks_path).unwrap();
    assert_eq!(claim::cmd_verify(&args(None)).await, 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// End to end against the real gateway (SQLite, or PostgreSQL under
/// `DEALER_GATEWAY_TEST_POSTGRES_URL`): `claim` runs the whole suite with
/// every role, writes the report and a claim; `verify` accepts the claim
/// with the issuer's JWKS, the report it pins and the live URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_for_the_real_gateway_verifies_against_it() {
    let fx = common::setup().await;
    let dir = common::temp_dir();
    let key_path = dir.join("key.pem");
    let jwks_path = dir.join("jwks.json");
    let claim_path = dir.join("claim.json");
    assert_eq!(
        claim::cmd_keygen(&KeygenArgs {
            out: key_path.clone(),
            key_id: Some(KID.into()),
            jwks: Some(jwks_path.clone()),
        }),
        0
    );
    // The gateway's own test knows its source revision: the checkout's
    // commit (a black-box suite cannot find it out).
    let source_revision = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| s.len() >= 7)
        .unwrap_or_else(|| "unknown-revision".to_owned());
    let args = claim::ClaimArgs {
        run: conformance::run::RunArgs {
            url: fx.app.url.clone(),
            token: fx.tokens.iter().map(|(r, t)| format!("{r}={t}")).collect(),
            report: None,
            dap_schemas: None,
            only: None,
        },
        key: key_path.clone(),
        key_id: KID.into(),
        issuer: "Dealer Agent Gateway maintainers".into(),
        operator: None,
        valid_for: "30d".into(),
        source_revision: source_revision.clone(),
        report_uri: None,
        exceptions: vec![],
        out: claim_path.clone(),
    };
    let code = claim::cmd_claim(&args).await;
    let report_path = dir.join("claim.json.report.json");
    let report_bytes = std::fs::read(&report_path).expect("the report is always written");
    let report: Value = serde_json::from_slice(&report_bytes).unwrap();
    assert_eq!(
        code,
        0,
        "not claimable:\n{}",
        common::not_passed(&report).join("\n")
    );

    let claim: Value = serde_json::from_slice(&std::fs::read(&claim_path).unwrap()).unwrap();
    validate_schema(&claim).unwrap();
    assert_eq!(claim["implementation"]["endpoint"], fx.app.url.as_str());
    assert_eq!(
        claim["implementation"]["source_revision"],
        source_revision.as_str()
    );
    assert_eq!(
        claim["test_run"]["report_digest"],
        format!("sha256:{}", hex::encode(Sha256::digest(&report_bytes)))
    );
    assert!(
        claim["test_run"]["report_uri"]
            .as_str()
            .unwrap()
            .starts_with("file:///")
    );
    let verify_args = claim::VerifyArgs {
        claim: claim_path.clone(),
        jwks: jwks_path.clone(),
        url: Some(fx.app.url.clone()),
        report: Some(report_path.clone()),
    };
    assert_eq!(claim::cmd_verify(&verify_args).await, 0);

    // The live comparison can fail: the same claim, its tools list edited
    // and re-signed by the issuer, no longer matches the gateway.
    let key = claim::key_from_pem(&std::fs::read_to_string(&key_path).unwrap()).unwrap();
    let mut edited = claim.clone();
    edited["implementation"]["tools"]
        .as_array_mut()
        .unwrap()
        .retain(|t| t != "dealeragent.dealer.get");
    resign(
        &mut edited,
        &json!({"alg": "ES256", "kid": KID, "typ": "dap-claim+jws"}),
        &key,
    );
    let jwks: Value = serde_json::from_slice(&std::fs::read(&jwks_path).unwrap()).unwrap();
    let verified = verify_value(&edited, &jwks, Utc::now()).unwrap();
    match claim::verify_against_live(&verified, &fx.app.url).await {
        Err(ClaimError::LiveMismatch { differences, .. }) => assert_eq!(
            differences,
            vec!["tool dealeragent.dealer.get is served but not claimed".to_owned()]
        ),
        other => panic!("an edited claim matched the live gateway: {other:?}"),
    }
    std::fs::remove_dir_all(&dir).ok();
}
