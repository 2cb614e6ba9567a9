//! The other HTTP routes of docs/mcp.md: health, readiness, schemas,
//! policy, and the conformance claim (or the notice that none is published)
//! with its digest.

use crate::common;

use crate::common::{send, spawn};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn assert_json(r: &common::Reply) {
    assert_eq!(
        r.headers.get("content-type").unwrap(),
        "application/json",
        "{}",
        r.raw
    );
    assert!(r.body.is_object(), "{}", r.raw);
}

#[tokio::test]
async fn healthz_is_200() {
    let app = spawn().await;
    let r = send(app.http.get(format!("{}/healthz", app.base()))).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_json(&r);
    assert_eq!(r.body["status"], "ok");
}

#[tokio::test]
async fn readyz_is_200_when_the_store_answers() {
    let app = spawn().await;
    let r = send(app.http.get(format!("{}/readyz", app.base()))).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_json(&r);
    assert_eq!(r.body["status"], "ready");
}

#[tokio::test]
async fn schema_file_is_served_as_json() {
    let app = spawn().await;
    let r = send(
        app.http
            .get(format!("{}/schemas/common.schema.json", app.base())),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_json(&r);
    assert!(r.body.get("$defs").is_some() || r.body.get("$schema").is_some());
}

#[tokio::test]
async fn unknown_schema_file_is_404() {
    let app = spawn().await;
    for file in ["nope.json", "..%2Fcapabilities.yaml", "common.schema.JSON"] {
        let r = send(app.http.get(format!("{}/schemas/{file}", app.base()))).await;
        assert_eq!(r.status, 404, "{file}: {}", r.raw);
    }
}

#[tokio::test]
async fn policy_lists_the_tools_with_their_safety_metadata() {
    let app = spawn().await;
    let r = send(app.http.get(format!("{}/policy", app.base()))).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_json(&r);
    let tools = r.body["tools"].as_array().unwrap();
    assert!(!tools.is_empty());
    for t in tools {
        assert!(t["name"].is_string() && t["safety"].is_object(), "{t}");
    }
    assert!(!r.body["published_rooftops"].as_array().unwrap().is_empty());
}

/// Without a configured claim the gateway says so plainly
/// (docs/conformance.md "Publishing a claim from this gateway"): the claim
/// URI answers 404 with a notice, never a document that
/// looks like a claim, and the manifest pins that notice's digest and says
/// `claim_published: false`.
#[tokio::test]
async fn without_a_claim_the_claim_uri_says_none_is_published() {
    let app = spawn().await;
    let resp = app
        .http
        .get(format!("{}/conformance/claim.json", app.base()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let bytes = resp.bytes().await.unwrap();
    let notice: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(notice["claim_published"], false);
    assert!(notice.get("signer").is_none() && notice.get("claim_version").is_none());

    let manifest = manifest(&app).await;
    let conformance = &manifest["conformance"];
    assert_eq!(
        conformance["claim_uri"],
        format!("{}/conformance/claim.json", app.base())
    );
    assert_eq!(conformance["claim_digest"], digest(&bytes));
    assert_eq!(
        manifest["extensions"]["dealergateway.conformance"]["claim_published"],
        false
    );
}

async fn manifest(app: &common::TestApp) -> Value {
    app.call_tool("dealeragent.discovery.get_manifest", json!({}))
        .await["structuredContent"]
        .clone()
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// A claim for what `manifest` serves, valid against
/// conformance/claim.schema.json. The gateway checks shape, the signed
/// payload, expiry and inventory, not the signature (it holds no key for
/// it: `dap-conformance verify` does), so a compact JWS whose payload is
/// the claim and whose signature part is a stand-in is used here.
fn claim_for(manifest: &Value, expires_at: &str) -> Value {
    signed(unsigned_claim_for(manifest, expires_at))
}

/// `claim` with `signer.signature` set to a compact JWS whose payload is
/// the claim without `signer.signature` (what `dap-conformance claim`
/// signs) and whose signature part is a stand-in.
fn signed(mut claim: Value) -> Value {
    use base64::Engine as _;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    if let Some(signer) = claim["signer"].as_object_mut() {
        signer.remove("signature");
    }
    let payload = b64(&serde_json::to_vec(&claim).unwrap());
    claim["signer"]["signature"] = json!(format!(
        "{}.{payload}.{}",
        b64(br#"{"alg":"ES256","kid":"k1"}"#),
        b64(b"stand-in")
    ));
    claim
}

fn unsigned_claim_for(manifest: &Value, expires_at: &str) -> Value {
    let profiles: Vec<&Value> = manifest["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["profile"])
        .collect();
    let tools: Vec<&Value> = manifest["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["tools"].as_array().unwrap())
        .collect();
    let scopes: std::collections::BTreeSet<&str> = manifest["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["scopes"].as_array().unwrap())
        .filter_map(Value::as_str)
        .collect();
    json!({
        "claim_version": "1",
        "claim_id": "claim.test.1",
        "status": "active",
        "specification": {"version": "0.1", "uri": "https://dealeragentprotocol.com/spec/v0.1/",
                          "digest": format!("sha256:{}", "a".repeat(64))},
        "implementation": {
            "name": "dealer-agent-gateway", "version": "0.1.0",
            "endpoint": "http://127.0.0.1:1/mcp", "source_revision": "0123456789abcdef",
            "operator": "Test operator",
            "organization_ids": manifest["organization_ids"],
            "rooftop_ids": manifest["rooftop_ids"],
            "tools": tools, "resources": manifest["resources"],
            "auth_modes": manifest["auth_modes"], "scopes": scopes, "extensions": []
        },
        "profiles": profiles,
        "mcp_revisions": ["2026-07-28", "2025-11-25"],
        "test_run": {"suite_version": "0.1.0", "result": "pass",
                     "completed_at": "2026-01-01T00:00:00Z",
                     "report_digest": format!("sha256:{}", "b".repeat(64)),
                     "report_uri": "file:///tmp/report.json"},
        "exceptions": [],
        "issued_at": "2026-01-01T00:00:00Z",
        "expires_at": expires_at,
        "signer": {"organization": "Test operator", "key_id": "k1", "algorithm": "ES256"}
    })
}

/// `--conformance-claim FILE`: the file is served byte for byte and the
/// manifest pins the digest of exactly those bytes.
#[tokio::test]
async fn a_configured_claim_is_served_byte_for_byte_and_pinned_by_the_manifest() {
    let probe = spawn().await;
    let served = manifest(&probe).await;
    let dir = common::temp_dir();
    let path = dir.join("claim.json");
    let bytes = serde_json::to_vec_pretty(&claim_for(&served, "2999-01-01T00:00:00Z")).unwrap();
    std::fs::write(&path, &bytes).unwrap();
    let app = common::spawn_with(|s| s.conformance_claim = Some(path.clone())).await;
    let resp = app
        .http
        .get(format!("{}/conformance/claim.json", app.base()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.bytes().await.unwrap().as_ref(), bytes.as_slice());
    let m = manifest(&app).await;
    assert_eq!(m["conformance"]["claim_digest"], digest(&bytes));
    assert_eq!(
        m["extensions"]["dealergateway.conformance"]["claim_published"],
        true
    );
}

/// A claim that is not one, has expired, or does not describe this build
/// is refused at start-up with the reason, never published.
#[tokio::test]
async fn a_claim_that_does_not_describe_this_gateway_is_refused_at_start_up() {
    let probe = spawn().await;
    let served = manifest(&probe).await;
    let dir = common::temp_dir();
    let mut missing_tool = claim_for(&served, "2999-01-01T00:00:00Z");
    missing_tool["implementation"]["tools"]
        .as_array_mut()
        .unwrap()
        .retain(|t| t != "dealeragent.pricing.get_disclosure");
    let missing_tool = signed(missing_tool);
    // A real DAP profile this read-only gateway never serves (the consented
    // handoff writes leads); the used-vehicle profile played this part
    // until the gateway served it.
    let mut extra_profile = claim_for(&served, "2999-01-01T00:00:00Z");
    extra_profile["profiles"]
        .as_array_mut()
        .unwrap()
        .push(json!("dealeragent.handoff/0.1"));
    let extra_profile = signed(extra_profile);
    let mut unsigned = claim_for(&served, "2999-01-01T00:00:00Z");
    unsigned["signer"]
        .as_object_mut()
        .unwrap()
        .remove("signature");
    let cases = [
        (
            "expired",
            claim_for(&served, "2020-01-01T00:00:00Z"),
            "expired",
        ),
        ("missing-tool", missing_tool, "served but not claimed"),
        ("extra-profile", extra_profile, "claimed but not served"),
        ("unsigned", unsigned, "does not validate"),
        (
            "self-description",
            json!({"status": "self_declared_unsigned"}),
            "does not validate",
        ),
    ];
    for (name, claim, expected) in cases {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_vec(&claim).unwrap()).unwrap();
        let mut settings =
            gateway::config::ServeSettings::with_listen("127.0.0.1:0".parse().unwrap());
        settings.conformance_claim = Some(path);
        let url = common::test_database_url(&dir.join(name)).await;
        std::fs::create_dir_all(dir.join(name)).unwrap();
        let err = match gateway::app::spawn(settings, &url, std::future::pending()).await {
            Ok(_) => panic!("{name}: a bad claim was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(expected), "{name}: {err}");
        assert!(err.contains("conformance claim"), "{name}: {err}");
    }
}

/// `serve --conformance-claim`: a claim edited after it was signed (its
/// body no longer the payload its JWS carries) is refused at start-up,
/// without any key, by an error naming each member that differs; even
/// when the edit makes the inventory match this build.
#[tokio::test]
async fn a_claim_whose_signed_payload_differs_from_its_body_is_refused_at_start_up() {
    let probe = spawn().await;
    let served = manifest(&probe).await;
    let dir = common::temp_dir();
    // Signed for an older build without get_disclosure, then patched by
    // hand to list it (and to extend its life) without re-signing.
    let mut older = unsigned_claim_for(&served, "2999-01-01T00:00:00Z");
    older["implementation"]["tools"]
        .as_array_mut()
        .unwrap()
        .retain(|t| t != "dealeragent.pricing.get_disclosure");
    older["expires_at"] = json!("2027-01-01T00:00:00Z");
    let mut patched = signed(older);
    patched["implementation"]["tools"] =
        claim_for(&served, "2999-01-01T00:00:00Z")["implementation"]["tools"].clone();
    patched["expires_at"] = json!("2999-01-01T00:00:00Z");
    // A JWS whose payload is no JSON at all.
    let mut garbled = claim_for(&served, "2999-01-01T00:00:00Z");
    garbled["signer"]["signature"] = json!("eyJhbGciOiJFUzI1NiJ9.bm90LWpzb24.c2ln");
    let cases = [
        (
            "patched",
            patched,
            vec!["implementation.tools", "expires_at"],
        ),
        ("garbled", garbled, vec!["not base64url-encoded JSON"]),
    ];
    for (name, claim, expected) in cases {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_vec_pretty(&claim).unwrap()).unwrap();
        let mut settings =
            gateway::config::ServeSettings::with_listen("127.0.0.1:0".parse().unwrap());
        settings.conformance_claim = Some(path);
        std::fs::create_dir_all(dir.join(name)).unwrap();
        let url = common::test_database_url(&dir.join(name)).await;
        let err = match gateway::app::spawn(settings, &url, std::future::pending()).await {
            Ok(_) => panic!("{name}: a claim whose signed payload differs was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("conformance claim"), "{name}: {err}");
        assert!(
            err.contains("the payload signed in signer.signature is not this claim"),
            "{name}: {err}"
        );
        for member in expected {
            assert!(err.contains(member), "{name}: {member} not named in {err}");
        }
        // Only the edited members are named.
        assert!(!err.contains("claim_id"), "{name}: {err}");
    }
}

#[tokio::test]
async fn unknown_path_is_404() {
    let app = spawn().await;
    let r = send(app.http.get(format!("{}/mcp/extra", app.base()))).await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn put_on_the_mcp_endpoint_is_405() {
    let app = spawn().await;
    let r = send(app.http.put(&app.url).body("{}")).await;
    assert_eq!(r.status, 405);
}
