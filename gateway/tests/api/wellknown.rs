//! Issue 16 items 4 and 5: the discovery documents over real HTTP.
//!
//! `/.well-known/dealer-agent.json` agrees with the manifest (the same MCP
//! endpoint, profiles, tools and organizations) and validates against this
//! gateway's schema of it, written from DAP's published well-known schema
//! (spec/v0.1/schemas/well-known.schema.json; the conformance crate pins
//! no copy of it). `/llms.txt` names every served tool and the rules an
//! agent must follow. Both follow the configured public URL, are cacheable
//! publicly, and show nothing the anonymous manifest does not.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::common::{self, TestApp};
use crate::security::FLEET;

/// This gateway's `/.well-known/dealer-agent.json`, as a schema. From DAP's
/// well-known schema it keeps `dealer_agent_protocol` (const "0.1"),
/// `gateway` (the MCP endpoint URI), `organization_id` and `handoff`
/// (`adf_endpoint`, `policy_url`, each a URI or null); DAP's
/// `published_feed` and `disclosure_defaults` describe a dealer without a
/// gateway and are absent (gateway/src/wellknown.rs says why). The rest is
/// the gateway's own discovery: closed objects throughout.
fn schema() -> Value {
    let uri = json!({"type": "string", "format": "uri"});
    let uri_or_null = json!({"type": ["string", "null"], "format": "uri"});
    let identifier =
        json!({"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:-]*$", "maxLength": 128});
    let ids = json!({"type": "array", "minItems": 1, "uniqueItems": true, "items": identifier});
    let names =
        json!({"type": "array", "uniqueItems": true, "items": {"type": "string", "minLength": 1}});
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": false,
        "required": ["dealer_agent_protocol", "gateway", "organization_ids", "rooftop_ids", "mcp",
                     "manifest", "protocols", "profiles", "tools", "handoff", "llms_txt"],
        "properties": {
            "dealer_agent_protocol": {"const": "0.1"},
            "gateway": uri,
            "gateway_id": identifier,
            "organization_id": identifier,
            "operator": {"type": "object", "required": ["name"]},
            "organization_ids": ids,
            "rooftop_ids": ids,
            "mcp": {
                "type": "object", "additionalProperties": false,
                "required": ["endpoint", "transport", "revisions"],
                "properties": {
                    "endpoint": uri,
                    "transport": {"const": "streamable-http"},
                    "revisions": {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}$"}}
                }
            },
            "manifest": {
                "type": "object", "additionalProperties": false, "required": ["resource", "tool"],
                "properties": {"resource": {"const": "dealeragent://manifest"}, "tool": {"type": "string"}}
            },
            "protocols": {
                "type": "array", "minItems": 1,
                "items": {
                    "type": "object", "additionalProperties": false,
                    "required": ["protocol", "native", "profiles"],
                    "properties": {
                        "protocol": {"enum": ["dealer-agent-protocol", "auto-agent-protocol"]},
                        "version": {"type": "string"},
                        "binding": {"type": "string"},
                        "native": {"type": "boolean"},
                        "kind": {"const": "compatibility_adapter"},
                        "profiles": names,
                        "tools": names,
                        "not_offered": {"type": "array", "items": {
                            "type": "object", "additionalProperties": false, "required": ["tool", "reason"],
                            "properties": {"tool": {"type": "string"}, "reason": {"type": "string"}}
                        }}
                    }
                }
            },
            "profiles": {"type": "array", "items": {
                "type": "object", "additionalProperties": false,
                "required": ["profile", "status", "tools", "scopes"],
                "properties": {"profile": {"type": "string"}, "status": {"type": "string"}, "tools": names, "scopes": names}
            }},
            "tools": names,
            "auth_modes": names,
            "protected_resource_metadata": uri,
            "schema_base_uri": uri,
            "policy_uri": uri,
            "conformance": {"type": "object", "required": ["claim_uri", "claim_digest"]},
            "llms_txt": uri,
            "handoff": {
                "type": "object", "additionalProperties": false,
                "required": ["adf_endpoint", "policy_url"],
                "properties": {"adf_endpoint": uri_or_null, "policy_url": uri_or_null}
            }
        }
    })
}

async fn get(app: &TestApp, path: &str) -> (reqwest::header::HeaderMap, String) {
    let resp = app
        .http
        .get(format!("{}{path}", app.base()))
        .send()
        .await
        .expect("request sent");
    assert_eq!(resp.status(), 200, "{path}");
    let headers = resp.headers().clone();
    (headers, resp.text().await.expect("body"))
}

fn header<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

async fn served_tools(app: &TestApp) -> BTreeSet<String> {
    let list = app.modern("tools/list", json!({})).await;
    list.result()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_discovery_document_agrees_with_the_manifest() {
    let app = common::spawn().await;
    let (headers, body) = get(&app, "/.well-known/dealer-agent.json").await;
    assert_eq!(header(&headers, "content-type"), "application/json");
    assert!(header(&headers, "cache-control").starts_with("public, max-age="));
    let doc: Value = serde_json::from_str(&body).expect("JSON");
    let validator = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema())
        .expect("schema compiles");
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}\n{doc}");

    let manifest = app
        .call_tool("dealeragent.discovery.get_manifest", json!({}))
        .await["structuredContent"]
        .clone();
    // The same endpoint the client is talking to.
    assert_eq!(doc["gateway"], json!(app.url));
    assert_eq!(doc["mcp"]["endpoint"], json!(app.url));
    assert_eq!(
        doc["mcp"]["revisions"],
        manifest["extensions"]["dealergateway.mcp"]["revisions"]
    );
    for member in [
        "organization_ids",
        "rooftop_ids",
        "auth_modes",
        "schema_base_uri",
        "policy_uri",
        "conformance",
    ] {
        assert_eq!(doc[member], manifest[member], "{member}");
    }
    // The same profiles: the manifest's DAP capabilities and extensions.
    let profiles = |v: &Value| -> BTreeSet<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(|p| p["profile"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut in_manifest = profiles(&manifest["capabilities"]);
    in_manifest.extend(profiles(
        &manifest["extensions"]["dealergateway.extensions"]["profiles"],
    ));
    assert_eq!(profiles(&doc["profiles"]), in_manifest);
    let native = &doc["protocols"][0];
    assert_eq!(native["native"], json!(true));
    let dap_profiles: BTreeSet<String> = native["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(dap_profiles, profiles(&manifest["capabilities"]));
    // AAP is named, and only as a compatibility adapter.
    let aap = doc["protocols"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["protocol"] == json!("auto-agent-protocol"))
        .expect("AAP listed");
    assert_eq!(aap["native"], json!(false));
    assert_eq!(aap["kind"], json!("compatibility_adapter"));
    assert_eq!(aap["not_offered"][0]["tool"], json!("aap_lead_submit"));
    // The same tools as tools/list and the manifest's catalog.
    let tools: BTreeSet<String> = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tools, served_tools(&app).await);
    let catalog: BTreeSet<String> = manifest["extensions"]["dealergateway.catalog"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tools, catalog);
    // Nothing the anonymous manifest does not show.
    assert!(!body.contains(FLEET), "{body}");
    assert!(!body.contains('@'), "no contact data: {body}");
}

#[tokio::test]
async fn llms_txt_names_every_served_tool_the_endpoint_and_the_rules() {
    let app = common::spawn().await;
    let (headers, text) = get(&app, "/llms.txt").await;
    assert_eq!(
        header(&headers, "content-type"),
        "text/plain; charset=utf-8"
    );
    assert!(header(&headers, "cache-control").starts_with("public, max-age="));
    assert!(text.starts_with("# "), "Markdown title");
    assert!(
        text.contains(&format!("[{url}]({url})", url = app.url)),
        "{text}"
    );
    for tool in served_tools(&app).await {
        assert!(text.contains(&format!("`{tool}`")), "{tool} is not named");
    }
    for rule in [
        "Verify availability before presenting a unit as available",
        "Never present a conditional offer as the price",
        "Never call an unknown charge zero",
    ] {
        assert!(text.contains(rule), "missing rule: {rule}");
    }
    assert!(text.contains("Not offered: `aap_lead_submit`"));
    assert!(text.contains("compatibility adapter"));
    assert!(!text.contains(FLEET), "the partner-only rooftop is named");
}

#[tokio::test]
async fn both_documents_follow_the_configured_public_url_and_ignore_credentials() {
    let app = common::spawn_with(|s| {
        s.public_url = Some("https://dealer.example.test/".to_owned());
    })
    .await;
    let (_, body) = get(&app, "/.well-known/dealer-agent.json").await;
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["gateway"], json!("https://dealer.example.test/mcp"));
    assert_eq!(
        doc["llms_txt"],
        json!("https://dealer.example.test/llms.txt")
    );
    let (_, text) = get(&app, "/llms.txt").await;
    assert!(text.contains("[https://dealer.example.test/mcp](https://dealer.example.test/mcp)"));
    // A credential changes nothing: the documents are public.
    let with_token = app
        .http
        .get(format!("{}/.well-known/dealer-agent.json", app.base()))
        .header("authorization", "Bearer not-a-credential")
        .send()
        .await
        .unwrap();
    assert_eq!(with_token.status(), 200);
    assert_eq!(with_token.text().await.unwrap(), body);
}
