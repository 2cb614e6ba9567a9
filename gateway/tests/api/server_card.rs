//! MCP Server Cards (docs/mcp.md "Server Cards and server.json"): the card
//! of `/mcp` and of each AAP endpoint at `<endpoint>/server-card`, over
//! real HTTP. The card's shape is the extension's v1 schema; its tool
//! names equal the endpoint's `tools/list`; an AAP card is authorized like
//! its endpoint (an organization the caller may not see answers exactly
//! like an absent one); the AI Catalog lists only public endpoints; and
//! `registry server-json` prints the Registry's `server.json`.

use serde_json::{Value, json};

use crate::aap::{PRIVATE_DEALERS, PRIVATE_ORG};
use crate::common::{self, Reply, TestApp};

const PUBLIC_ORG: &str = "org.open-street-motors";
const CARD_TYPE: &str = "application/mcp-server-card+json";

async fn get(app: &TestApp, path: &str, token: Option<&str>) -> Reply {
    let mut req = app.http.get(format!("{}{path}", app.base()));
    if let Some(token) = token {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    common::send(req).await
}

fn header<'a>(reply: &'a Reply, name: &str) -> &'a str {
    reply
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("no {name}: {:?}", reply.headers))
}

/// The tool names of a `tools/list` on `client`'s endpoint.
async fn listed(client: &TestApp) -> Vec<Value> {
    let reply = client.modern("tools/list", json!({})).await;
    reply.result()["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].clone())
        .collect()
}

/// The fields every card has, as the v1 schema requires them.
fn assert_card_shape(card: &Value, endpoint_url: &str) {
    assert_eq!(
        card["$schema"],
        json!("https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json")
    );
    let name = card["name"].as_str().expect("name");
    let (namespace, server) = name.split_once('/').expect("namespace/server");
    assert!(
        !namespace.is_empty() && !server.is_empty() && !server.contains('/'),
        "{name}"
    );
    assert_eq!(card["version"], json!(env!("CARGO_PKG_VERSION")));
    let description = card["description"].as_str().expect("description");
    assert!(
        (1..=100).contains(&description.chars().count()),
        "{description}"
    );
    let remotes = card["remotes"].as_array().expect("remotes");
    assert_eq!(remotes.len(), 1, "{card}");
    assert_eq!(remotes[0]["type"], json!("streamable-http"));
    assert_eq!(remotes[0]["url"], json!(endpoint_url));
    assert_eq!(
        remotes[0]["supportedProtocolVersions"],
        json!(["2026-07-28", "2025-11-25"])
    );
}

#[tokio::test]
async fn the_mcp_card_names_the_endpoint_and_its_tools_list() {
    let app = common::spawn().await;
    let reply = get(&app, "/mcp/server-card", None).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    assert_eq!(header(&reply, "content-type"), CARD_TYPE);
    assert_eq!(header(&reply, "cache-control"), "public, max-age=3600");
    assert_eq!(header(&reply, "access-control-allow-origin"), "*");
    let card = &reply.body;
    assert_card_shape(card, &app.url);
    let ours = &card["_meta"]["dealergateway.card"];
    assert_eq!(ours["endpoint"], json!("dap"));
    assert_eq!(ours["tools"], Value::Array(listed(&app).await), "{card}");
    let discover = app.modern("server/discover", json!({})).await;
    assert_eq!(ours["capabilities"], discover.result()["capabilities"]);
    // Any origin may read it, and the ETag too (SEP-2127 "CORS
    // Requirements"), however the gateway's CORS list is configured.
    let browser = common::send(
        app.http
            .get(format!("{}/mcp/server-card", app.base()))
            .header("origin", "https://agents.elsewhere.example"),
    )
    .await;
    assert_eq!(browser.status, 200, "{}", browser.raw);
    assert_eq!(header(&browser, "access-control-allow-origin"), "*");
    assert!(
        header(&browser, "access-control-expose-headers")
            .to_ascii_lowercase()
            .contains("etag")
    );
    // Revalidation with the ETag: 304, no body.
    let etag = header(&reply, "etag").to_owned();
    let again = common::send(
        app.http
            .get(format!("{}/mcp/server-card", app.base()))
            .header("if-none-match", &etag),
    )
    .await;
    assert_eq!(again.status, 304, "{}", again.raw);
    assert!(again.raw.is_empty());
}

#[tokio::test]
async fn an_aap_card_is_served_like_its_endpoint_and_hidden_organizations_are_404() {
    let (dir, url) = common::fresh_database().await;
    let store = gateway::store::open(&url).await.expect("store opens");
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let orgs = gateway::dealers::parse(
        &catalog,
        "private-dealers.yaml",
        PRIVATE_DEALERS.as_bytes(),
        "dealers-file:test",
        chrono::Utc::now(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    store.upsert_organizations(&orgs).await.expect("imported");
    let inventory = [gateway::auth::api_token::SCOPE_INVENTORY_READ];
    let private_grant = crate::security::create_token(
        store.as_ref(),
        "partner:quiet",
        PRIVATE_ORG,
        gateway::auth::RooftopScope::Group,
        &inventory,
    )
    .await;
    let other_grant = crate::security::create_token(
        store.as_ref(),
        "partner:open",
        PUBLIC_ORG,
        gateway::auth::RooftopScope::Group,
        &inventory,
    )
    .await;
    let app = common::spawn_on(dir, url, |s| s.no_demo = true).await;

    // A public organization's card, anonymously: public, its endpoint's
    // tools/list.
    let path = format!("/aap/{PUBLIC_ORG}/mcp/server-card");
    let reply = get(&app, &path, None).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    assert_eq!(header(&reply, "content-type"), CARD_TYPE);
    assert_eq!(header(&reply, "cache-control"), "public, max-age=3600");
    let endpoint_url = format!("{}/aap/{PUBLIC_ORG}/mcp", app.base());
    assert_card_shape(&reply.body, &endpoint_url);
    let ours = &reply.body["_meta"]["dealergateway.card"];
    assert_eq!(ours["endpoint"], json!("aap"));
    assert_eq!(ours["organization_id"], json!(PUBLIC_ORG));
    assert_eq!(ours["capabilities"], json!({"tools": {}}));
    let mut client = TestApp::attach(&app.base());
    client.url = endpoint_url;
    assert_eq!(ours["tools"], Value::Array(listed(&client).await));
    assert_ne!(
        reply.body["name"],
        get(&app, "/mcp/server-card", None).await.body["name"],
        "each endpoint is a server of its own"
    );

    // A private organization: anonymously and under another
    // organization's grant, the very answer of an absent organization.
    let absent = get(&app, "/aap/org.never-was-motors/mcp/server-card", None).await;
    assert_eq!(absent.status, 404, "{}", absent.raw);
    assert!(!absent.raw.contains("never-was"), "{}", absent.raw);
    let private_path = format!("/aap/{PRIVATE_ORG}/mcp/server-card");
    for token in [None, Some(other_grant.as_str())] {
        let r = get(&app, &private_path, token).await;
        assert_eq!(r.status, absent.status, "{token:?}: {}", r.raw);
        assert_eq!(r.raw, absent.raw, "{token:?}: an existence oracle");
    }
    // Its own grant sees it; that card is not for shared caches.
    let r = get(&app, &private_path, Some(&private_grant)).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(header(&r, "cache-control"), "private, max-age=3600");
    assert!(r.headers.get("access-control-allow-origin").is_none());
    assert_eq!(
        r.body["_meta"]["dealergateway.card"]["organization_id"],
        json!(PRIVATE_ORG)
    );
    // A bad credential is refused as on the endpoint; a segment that is no
    // identifier is a 400 that does not repeat it.
    let r = get(&app, &private_path, Some("dgw_not-a-real-token")).await;
    assert_eq!(r.status, 401, "{}", r.raw);
    let r = get(&app, "/aap/%3Cscript%3E/mcp/server-card", None).await;
    assert!(r.status == 400 || r.status == 404, "{}", r.raw);
    assert!(!r.raw.contains("script"), "{}", r.raw);

    // The AI Catalog lists /mcp and the public AAP endpoint only.
    let catalog = get(&app, "/.well-known/ai-catalog.json", None).await;
    assert_eq!(catalog.status, 200, "{}", catalog.raw);
    assert_eq!(
        catalog.body["entries"][0]["identifier"],
        json!("urn:air:127.0.0.1:mcp:dealer-agent-gateway")
    );
    let urls: Vec<&str> = catalog.body["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            assert_eq!(e["type"], json!(CARD_TYPE));
            e["url"].as_str().expect("url")
        })
        .collect();
    assert_eq!(
        urls,
        [
            format!("{}/mcp/server-card", app.base()),
            format!("{}{path}", app.base()),
        ]
    );
    assert!(!catalog.raw.contains(PRIVATE_ORG), "{}", catalog.raw);
}

#[test]
fn registry_server_json_is_generated_from_the_catalog() {
    let out = common::run_cli(
        "sqlite://unused",
        &[
            "registry",
            "server-json",
            "--public-url",
            "https://dealers.example.com/mcp",
        ],
    );
    assert!(out.status.success(), "{}", common::text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(
        doc["$schema"],
        json!("https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json")
    );
    assert_eq!(
        doc["name"],
        json!("com.example.dealers/dealer-agent-gateway")
    );
    assert_eq!(doc["version"], json!(env!("CARGO_PKG_VERSION")));
    assert!(doc["description"].as_str().unwrap().chars().count() <= 100);
    assert_eq!(
        doc["remotes"],
        json!([{"type": "streamable-http", "url": "https://dealers.example.com/mcp"}])
    );
    assert!(doc.get("packages").is_none());
    let ours =
        &doc["_meta"]["io.modelcontextprotocol.registry/publisher-provided"]["dealergateway.card"];
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let dap: Vec<&str> = catalog
        .tools
        .iter()
        .filter(|t| gateway::tools::registered(&t.name).is_some())
        .filter(|t| !gateway::mcp::aap::is_aap_tool(t))
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(ours["tools"], json!(dap));
    assert_eq!(
        ours["aap_endpoint_template"],
        json!("https://dealers.example.com/aap/{organization_id}/mcp")
    );
    // A chosen name; bad input exits 2 without a document.
    let named = common::run_cli(
        "sqlite://unused",
        &[
            "registry",
            "server-json",
            "--public-url",
            "https://dealers.example.com",
            "--name",
            "io.github.example/dealers",
        ],
    );
    let doc: Value = serde_json::from_slice(&named.stdout).expect("JSON on stdout");
    assert_eq!(doc["name"], json!("io.github.example/dealers"));
    for args in [
        ["--public-url", "ftp://dealers.example.com"],
        ["--name", "no-slash"],
    ] {
        let mut all = vec!["registry", "server-json"];
        if args[0] == "--name" {
            all.extend(["--public-url", "https://dealers.example.com"]);
        }
        all.extend(args);
        let refused = common::run_cli("sqlite://unused", &all);
        assert_eq!(refused.status.code(), Some(2), "{}", common::text(&refused));
        assert!(refused.stdout.is_empty());
    }
}
