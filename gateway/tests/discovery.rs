//! Discovery profile over real HTTP: manifest tool and resource, dealer.get,
//! organization and rooftop resources.

mod common;

use common::spawn;
use serde_json::{Value, json};

#[tokio::test]
async fn manifest_tool_and_resource_are_the_same_object() {
    let app = spawn().await;
    let tool = app
        .call_tool("dealeragent.discovery.get_manifest", json!({}))
        .await;
    assert_eq!(tool["isError"], json!(false));
    let manifest = &tool["structuredContent"];
    assert_eq!(manifest["standard"], "dealer-agent-protocol");
    assert_eq!(manifest["standard_version"], "0.1");
    assert_eq!(manifest["mcp_revision"], "2026-07-28");
    let text: Value = serde_json::from_str(tool["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, manifest, "text block must equal structuredContent");

    let read = app
        .modern("resources/read", json!({"uri": "dealeragent://manifest"}))
        .await;
    let result = read.result();
    assert_eq!(result["cacheScope"], "public");
    assert!(result["ttlMs"].as_u64().is_some());
    let contents = &result["contents"][0];
    assert_eq!(contents["mimeType"], "application/json");
    let resource: Value = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        &resource, manifest,
        "DAP-CORE-006: one object for tool and resource"
    );
}

#[tokio::test]
async fn manifest_lists_demo_coverage_and_served_revisions() {
    let app = spawn().await;
    let m = app
        .call_tool("dealeragent.discovery.get_manifest", json!({}))
        .await["structuredContent"]
        .clone();
    assert!(m["organization_ids"].as_array().unwrap().len() >= 2);
    let rooftops = m["rooftop_ids"].as_array().unwrap();
    assert!(rooftops.len() >= 5);
    for r in rooftops {
        let sla = &m["freshness_sla_seconds"][r.as_str().unwrap()];
        assert!(sla["inventory"].as_u64().unwrap() > 0, "SLA per rooftop");
    }
    assert_eq!(
        m["extensions"]["dealergateway.mcp"]["revisions"],
        json!(["2026-07-28", "2025-11-25"])
    );
    assert_eq!(m["capabilities"][0]["profile"], "dealeragent.discovery/0.1");
}

#[tokio::test]
async fn dealer_get_returns_rooftops_with_provenance_and_freshness() {
    let app = spawn().await;
    let r = app
        .call_tool(
            "dealeragent.dealer.get",
            json!({"organization_id": "org.maplecrest-motor-group"}),
        )
        .await;
    assert_eq!(r["isError"], json!(false), "{r}");
    let org = &r["structuredContent"];
    assert!(!org["rooftops"].as_array().unwrap().is_empty());
    assert!(
        org["rooftops"][0].get("gateway_settings").is_none(),
        "settings never leak to the wire"
    );
    assert_eq!(org["provenance"]["authority_status"], "asserted");
    assert!(
        org["provenance"]["sources"][0]["content_digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(org["freshness"]["state"], "current");
}

#[tokio::test]
async fn foreign_or_absent_organization_is_not_found_without_leaking_the_id() {
    let app = spawn().await;
    let r = app
        .call_tool(
            "dealeragent.dealer.get",
            json!({"organization_id": "org.secret-foreign"}),
        )
        .await;
    assert_eq!(r["isError"], json!(true));
    assert_eq!(
        r["structuredContent"]["code"],
        "dealeragent.resource.not_found"
    );
    assert!(!r.to_string().contains("secret-foreign"));
}
