//! The other HTTP routes of docs/mcp.md: health, readiness, schemas,
//! policy and the conformance self-description with its digest.

mod common;

use common::{send, spawn};
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

#[tokio::test]
async fn conformance_claim_is_served_and_matches_the_manifest_digest() {
    let app = spawn().await;
    let resp = app
        .http
        .get(format!("{}/conformance/claim.json", app.base()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let bytes = resp.bytes().await.unwrap();
    let claim: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(claim["status"], "self_declared_unsigned");

    let manifest = app
        .call_tool("dealeragent.discovery.get_manifest", json!({}))
        .await["structuredContent"]
        .clone();
    let conformance = &manifest["conformance"];
    assert_eq!(
        conformance["claim_uri"],
        format!("{}/conformance/claim.json", app.base())
    );
    let digest = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
    assert_eq!(
        conformance["claim_digest"], digest,
        "the digest covers the exact bytes served"
    );
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
