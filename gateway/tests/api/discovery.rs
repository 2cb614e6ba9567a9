//! Discovery profile over real HTTP: manifest tool and resource, dealer.get,
//! organization and rooftop resources.

use crate::common;

use crate::common::spawn;
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

/// A dealers file whose one rooftop lists a public contact, a contact
/// marked `public: false` and one with no flag (docs/dealers-file.md,
/// "Contact point").
const CONTACTS_FILE: &str = r#"organizations:
  - organization_id: org.contacts
    name: Contacts Motors
    rooftops:
      - rooftop_id: roof.contacts-main
        name: Contacts Motors Main
        address: {lines: [1 Main St], locality: Springfield, region: IL, country: US}
        timezone: America/Chicago
        departments: [sales, service]
        contacts:
          - {department: sales, channel: phone, value: "+12175550100", public: true}
          - {department: sales, channel: phone, value: "+12175550199", public: false}
          - {department: service, channel: email, value: owner-cell@contacts.example}
        gateway_settings:
          currency: USD
          odometer_unit: mi
          publication: {anonymous_reads: true}
"#;

const ORG: &str = "org.contacts";
const ROOFTOP: &str = "roof.contacts-main";

/// A JSON-RPC request with an optional bearer token; the `result`.
async fn request_as(
    app: &common::TestApp,
    token: Option<&str>,
    method: &str,
    params: Value,
) -> Value {
    let body = common::modern_body(1, method, params);
    let name = body["params"]
        .get("name")
        .or_else(|| body["params"].get("uri"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", common::MODERN),
        ("mcp-method", method),
        ("mcp-name", name.as_str()),
    ];
    if let Some(auth) = auth.as_deref() {
        headers.push(("authorization", auth));
    }
    let reply = app.post_raw(&headers, body.to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    reply.result().clone()
}

/// Every contact of every rooftop in a `dealerOrganization`.
fn contacts(org: &Value) -> Vec<Value> {
    org["rooftops"]
        .as_array()
        .expect("rooftops")
        .iter()
        .flat_map(|r| r["contacts"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn only_contacts_marked_public_are_published_to_anyone() {
    let dir = common::temp_dir();
    let file = dir.join("contacts.yaml");
    std::fs::write(&file, CONTACTS_FILE).unwrap();
    let app = common::spawn_with(|s| s.seed_dealers = Some(file)).await;

    // A grant for the whole organization does not unlock private contacts.
    let store = gateway::store::open(&app.database_url).await.unwrap();
    let catalog = gateway::catalog::Catalog::load().unwrap();
    let now = chrono::Utc::now();
    let token = gateway::auth::api_token::create(
        store.as_ref(),
        &gateway::auth::api_token::TokenRequest {
            subject: "partner:contacts-test".into(),
            organization_id: ORG.into(),
            rooftops: gateway::auth::RooftopScope::Group,
            scopes: ["dealeragent:inventory:read".to_owned()].into(),
            purpose: "contacts test".into(),
            expires_at: now + chrono::Duration::hours(1),
        },
        &gateway::auth::api_token::known_scopes(&catalog),
        now,
    )
    .await
    .expect("token created")
    .token;

    let public = json!([{"department": "sales", "channel": "phone", "value": "+12175550100", "public": true}]);
    for caller in [None, Some(token.as_str())] {
        let who = if caller.is_some() {
            "authenticated"
        } else {
            "anonymous"
        };
        let tool = request_as(
            &app,
            caller,
            "tools/call",
            json!({"name": "dealeragent.dealer.get", "arguments": {"organization_id": ORG}}),
        )
        .await;
        assert_eq!(tool["isError"], json!(false), "{who}: {tool}");
        let org = &tool["structuredContent"];
        assert_eq!(json!(contacts(org)), public, "{who}: dealer.get");
        let text: Value =
            serde_json::from_str(tool["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(&text, org, "{who}: the text block is the same object");

        for uri in [
            format!("dealeragent://organization/{ORG}"),
            format!("dealeragent://organization/{ORG}/rooftop/{ROOFTOP}"),
        ] {
            let read = request_as(&app, caller, "resources/read", json!({"uri": uri})).await;
            let doc: Value =
                serde_json::from_str(read["contents"][0]["text"].as_str().unwrap()).unwrap();
            assert_eq!(json!(contacts(&doc)), public, "{who}: {uri}");
            for private in ["+12175550199", "owner-cell@contacts.example"] {
                assert!(
                    !read.to_string().contains(private),
                    "{who}: {uri} leaks {private}"
                );
            }
        }
        for private in ["+12175550199", "owner-cell@contacts.example"] {
            assert!(
                !tool.to_string().contains(private),
                "{who}: dealer.get leaks {private}"
            );
        }
    }
}
