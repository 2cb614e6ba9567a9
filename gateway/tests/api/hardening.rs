//! Hardening of what the gateway publishes and to whom (docs/security.md),
//! over real HTTP:
//!
//! - every answer that is not a console page carries
//!   `X-Content-Type-Options: nosniff`: the MCP endpoints, the feeds, the
//!   discovery documents, the schemas, the policy, the metrics, the probes,
//!   the framework's refusals and the transport's own;
//! - a metrics grant minted for one organization reads the series of the
//!   rooftops it covers and the gateway-wide totals, never another
//!   organization's ids; the `--metrics-listen` address (the operator's)
//!   reads everything;
//! - why a stored incentive rule fails (the rhai engine's message, which
//!   quotes the operator's script, with its line and position) reaches the
//!   organization's own credentials only: anonymous callers, other
//!   organizations' grants and every disclosure get what the rule did,
//!   never how.

use chrono::{TimeDelta, Utc};
use gateway::auth::RooftopScope;
use gateway::auth::api_token::{self, SCOPE_INVENTORY_READ, SCOPE_PRICING_READ, TokenRequest};
use serde_json::{Value, json};

use crate::common::{self, TestApp, test_source, tool_error_code};

const ORG: &str = "org.lakeshore-auto-group";
const CHICAGO: &str = "roof.lakeshore-chicago";
const OTHER_ORG: &str = "org.maplecrest-motor-group";
const METRICS: &str = "dealergateway:metrics:read";
const OFFERS: &str = "dealergateway.offers.evaluate";
const DISCLOSURE: &str = "dealeragent.pricing.get_disclosure";

/// A gateway API token made by the function `token create` calls, with the
/// catalog's gateway scopes known.
async fn token(
    app: &TestApp,
    organization: &str,
    rooftops: RooftopScope,
    scopes: &[&str],
) -> String {
    let store = gateway::store::open(&app.database_url)
        .await
        .expect("store");
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let mut known = api_token::known_scopes(&catalog);
    known.extend(catalog.gateway_scopes.iter().map(|s| s.scope.clone()));
    let now = Utc::now();
    let request = TokenRequest {
        subject: format!("test:{organization}"),
        organization_id: organization.to_owned(),
        rooftops,
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        purpose: "hardening test".to_owned(),
        expires_at: now + TimeDelta::days(1),
    };
    api_token::create(store.as_ref(), &request, &known, now)
        .await
        .expect("token created")
        .token
}

fn nosniff(headers: &reqwest::header::HeaderMap) -> bool {
    headers
        .get("x-content-type-options")
        .is_some_and(|v| v == "nosniff")
}

/// Every route of the main listener, answered well and refused, and the
/// refusals the transport writes before the router runs: each answer says
/// `nosniff`. (Before, only the console's pages and its stylesheet did; a
/// browser could sniff the public CSV feed, written from dealer text.)
#[tokio::test]
async fn every_answer_of_every_route_says_nosniff() {
    let app = common::spawn().await;
    let base = app.base();
    let metrics = token(&app, ORG, RooftopScope::Group, &[METRICS]).await;
    let scopeless = token(&app, ORG, RooftopScope::Group, &[SCOPE_INVENTORY_READ]).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let tools_list = common::modern_body(1, "tools/list", json!({})).to_string();
    let mcp = |path: &str, accept: &str, content_type: &str, body: String| {
        http.post(format!("{base}{path}"))
            .header("accept", accept)
            .header("content-type", content_type)
            .header("mcp-protocol-version", common::MODERN)
            .body(body)
    };
    let json_accept = "application/json, text/event-stream";
    let cases: Vec<(&str, reqwest::RequestBuilder, u16)> = vec![
        ("healthz", http.get(format!("{base}/healthz")), 200),
        ("readyz", http.get(format!("{base}/readyz")), 200),
        ("policy", http.get(format!("{base}/policy")), 200),
        (
            "schema",
            http.get(format!("{base}/schemas/common.schema.json")),
            200,
        ),
        (
            "absent schema",
            http.get(format!("{base}/schemas/none.json")),
            404,
        ),
        (
            "claim (none published)",
            http.get(format!("{base}/conformance/claim.json")),
            404,
        ),
        (
            "protected resource",
            http.get(format!("{base}/.well-known/oauth-protected-resource")),
            200,
        ),
        (
            "AAP protected resource",
            http.get(format!(
                "{base}/.well-known/oauth-protected-resource/aap/{ORG}/mcp"
            )),
            200,
        ),
        (
            "gateway document",
            http.get(format!("{base}/.well-known/dealer-agent-gateway.json")),
            200,
        ),
        (
            "static publication (ambiguous in the demo)",
            http.get(format!("{base}/.well-known/dealer-agent.json")),
            404,
        ),
        ("llms.txt", http.get(format!("{base}/llms.txt")), 200),
        (
            "CSV feed",
            http.get(format!("{base}/feeds/{ORG}/inventory.csv")),
            200,
        ),
        (
            "absent feed",
            http.get(format!("{base}/feeds/org.nobody/inventory.csv")),
            404,
        ),
        (
            "metrics anonymous",
            http.get(format!("{base}/metrics")),
            401,
        ),
        (
            "metrics without the scope",
            http.get(format!("{base}/metrics")).bearer_auth(&scopeless),
            403,
        ),
        (
            "metrics",
            http.get(format!("{base}/metrics")).bearer_auth(&metrics),
            200,
        ),
        ("unknown path", http.get(format!("{base}/nope")), 404),
        ("wrong method", http.put(format!("{base}/healthz")), 405),
        ("GET /mcp", http.get(format!("{base}/mcp")), 405),
        (
            "MCP JSON",
            mcp("/mcp", json_accept, "application/json", tools_list.clone()),
            200,
        ),
        (
            "MCP with SSE only accepted",
            mcp(
                "/mcp",
                "text/event-stream",
                "application/json",
                tools_list.clone(),
            ),
            406,
        ),
        (
            "MCP wrong content type",
            mcp("/mcp", json_accept, "text/plain", tools_list.clone()),
            415,
        ),
        (
            "MCP body too large",
            mcp(
                "/mcp",
                json_accept,
                "application/json",
                "x".repeat(1_100_000),
            ),
            413,
        ),
        (
            "MCP refused credential",
            mcp("/mcp", json_accept, "application/json", tools_list.clone())
                .bearer_auth("dgw_not-a-token"),
            401,
        ),
        (
            "AAP endpoint",
            mcp(
                &format!("/aap/{ORG}/mcp"),
                json_accept,
                "application/json",
                tools_list.clone(),
            ),
            200,
        ),
        (
            "preflight from a foreign origin",
            http.request(reqwest::Method::OPTIONS, format!("{base}/mcp"))
                .header("origin", "https://evil.example")
                .header("access-control-request-method", "POST"),
            403,
        ),
        (
            "console stylesheet",
            http.get(format!("{base}/console/console.css")),
            200,
        ),
        ("console page", http.get(format!("{base}/console/")), 200),
    ];
    for (what, request, status) in cases {
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(response.status().as_u16(), status, "{what}");
        assert!(
            nosniff(response.headers()),
            "{what}: no nosniff in {:?}",
            response.headers()
        );
    }
    // The transport's own refusals: a foreign Host (the router's), then
    // heads refused before any router runs.
    let foreign = app
        .raw_http(
            "GET /mcp HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
            b"",
        )
        .await;
    let many_fields = format!(
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n{}Connection: close\r\n\r\n",
        (0..120)
            .map(|i| format!("x-f{i}: v\r\n"))
            .collect::<String>()
    );
    let refused = app.raw_http(&many_fields, b"").await;
    let malformed = app
        .raw_http(
            "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX A: b\r\nConnection: close\r\n\r\n",
            b"",
        )
        .await;
    for (what, reply, status) in [
        ("foreign host", foreign, 403),
        ("more than 100 fields", refused, 431),
        ("malformed head", malformed, 400),
    ] {
        assert_eq!(reply.status, status, "{what}");
        assert!(
            reply
                .headers
                .iter()
                .any(|(k, v)| k == "x-content-type-options" && v == "nosniff"),
            "{what}: {:?}",
            reply.headers
        );
    }
}

/// The samples of one exposition, one per line, without comments.
fn samples(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

async fn scrape(app: &TestApp, token: &str) -> String {
    let response = app
        .http
        .get(format!("{}/metrics", app.base()))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.text().await.unwrap()
}

/// Before, a metrics token minted for Lake Shore read Maplecrest's
/// organization and rooftop ids (and Lake Shore's private rooftop to a
/// grant not covering it) in the labels.
#[tokio::test]
async fn a_metrics_grant_reads_its_own_rooftops_and_never_another_organizations() {
    let app = common::spawn().await;
    // Traffic, so the gateway-wide totals have samples.
    let r = app
        .call_tool(
            "dealeragent.inventory.search",
            json!({"organization_id": OTHER_ORG, "page": {"limit": 1}}),
        )
        .await;
    assert_eq!(tool_error_code(&r), None, "{r}");

    let group = token(&app, ORG, RooftopScope::Group, &[METRICS]).await;
    let text = scrape(&app, &group).await;
    for rooftop in [
        CHICAGO,
        "roof.lakeshore-grand-rapids",
        "roof.lakeshore-fleet-wholesale",
    ] {
        assert!(
            text.contains(&format!(
                "dealer_gateway_snapshot_age_seconds{{organization_id=\"{ORG}\",rooftop_id=\"{rooftop}\"}}"
            )),
            "{rooftop}: {text}"
        );
    }
    assert!(!text.contains("maplecrest"), "{text}");
    // Totals over every organization name none, and stay readable.
    assert!(
        samples(&text)
            .iter()
            .any(|l| l.starts_with("dealer_gateway_requests_total{")),
        "{text}"
    );
    assert!(text.contains("dealer_gateway_build_info{"), "{text}");
    // Every sample names the grant's organization or no tenant at all.
    for line in samples(&text) {
        assert!(
            !line.contains("organization_id=")
                || line.contains(&format!("organization_id=\"{ORG}\"")),
            "{line}"
        );
    }

    let chicago_only = token(
        &app,
        ORG,
        RooftopScope::Rooftops([CHICAGO.to_owned()].into()),
        &[METRICS],
    )
    .await;
    let text = scrape(&app, &chicago_only).await;
    assert!(
        text.contains(&format!("rooftop_id=\"{CHICAGO}\"")),
        "{text}"
    );
    for hidden in [
        "roof.lakeshore-grand-rapids",
        "roof.lakeshore-fleet-wholesale",
        "maplecrest",
    ] {
        assert!(!text.contains(hidden), "{hidden}: {text}");
    }

    let other = token(&app, OTHER_ORG, RooftopScope::Group, &[METRICS]).await;
    let text = scrape(&app, &other).await;
    assert!(text.contains("roof.maplecrest-toronto"), "{text}");
    assert!(!text.contains("lakeshore"), "{text}");

    // The operator's listener reads every organization.
    let operator =
        common::spawn_with(|s| s.metrics_listen = Some("127.0.0.1:0".parse().unwrap())).await;
    let text = reqwest::get(format!(
        "http://{}/metrics",
        operator.metrics_addr.expect("a metrics address")
    ))
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    assert!(
        text.contains(CHICAGO) && text.contains("roof.maplecrest-toronto"),
        "{text}"
    );
}

fn program(id: &str, minor: i64, stacking: Value) -> Value {
    json!({
        "program_id": id, "revision": 1, "name": format!("Program {id}"), "kind": "cash",
        "direction": "discount",
        "amount": {"status": "known", "amount": {"amount_minor": minor, "currency": "USD"}},
        "stacking": stacking
    })
}

fn ruled(id: &str, minor: i64, rule: &str) -> Value {
    program(
        id,
        minor,
        json!({"group": id, "combinability": "rule_defined", "rule": rule}),
    )
}

/// Stores Lake Shore programs directly, as if before the import-time
/// checks existed: one whose rule fails only on a real stack of three (the
/// proof passes it), one whose rule fails the proof, one whose document no
/// longer decodes. Each failure text quotes the operator's secret.
async fn store_failing_programs(db: &str) {
    let now = Utc::now();
    let mut corrupt = program(
        "zz-corrupt",
        100,
        json!({"group": "zz-corrupt", "combinability": "stackable"}),
    );
    corrupt["kind"] = json!("SECRET-KIND");
    let docs = [
        ruled(
            "zz-three",
            800_000,
            "if stack.len() == 3 { throw \"SECRET-RULE-TEXT\" } else { true }",
        ),
        ruled("zz-proof", 900_000, "throw \"SECRET-PROOF-TEXT\""),
        corrupt,
    ];
    let records: Vec<gateway::store::ProgramRecord> = docs
        .iter()
        .map(|doc| gateway::store::ProgramRecord {
            program_id: doc["program_id"].as_str().unwrap().to_owned(),
            revision: 1,
            doc: doc.clone(),
            rule_hash: None,
            imported_at: now,
            source: test_source("programs.json", now),
        })
        .collect();
    gateway::store::open(db)
        .await
        .unwrap()
        .import_programs(ORG, &records)
        .await
        .expect("stored");
}

/// A tools/call with `token` (anonymous without); the whole result, text
/// content included.
async fn call(app: &TestApp, token: Option<&str>, name: &str, args: Value) -> Value {
    let body = common::modern_body(1, "tools/call", json!({"name": name, "arguments": args}));
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = TestApp::modern_headers("tools/call", Some(name));
    if let Some(auth) = auth.as_deref() {
        headers.push(("authorization", auth));
    }
    let reply = app.post_raw(&headers, body.to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    let result = reply.result().clone();
    assert_eq!(tool_error_code(&result), None, "{result}");
    result
}

fn assert_no_rule_text(what: &str, result: &Value) {
    let text = result.to_string();
    for secret in [
        "SECRET",
        "Runtime error",
        "line 1,",
        ", position ",
        "unknown variant",
    ] {
        assert!(!text.contains(secret), "{what} carries {secret:?}: {text}");
    }
}

/// Before, the anonymous evaluation and disclosure carried the rhai
/// message of the operator's rule (its thrown text, "line 1, position
/// 34") in the trace, the programs' reasons and `unusable_programs`.
#[tokio::test]
async fn only_the_organizations_own_credentials_read_why_its_rules_fail() {
    let app = common::spawn().await;
    let found = app
        .call_tool(
            "dealeragent.inventory.search",
            json!({"organization_id": ORG, "rooftop_ids": [CHICAGO],
                   "filters": {"condition": ["new"]}}),
        )
        .await;
    let vehicle_id = found["structuredContent"]["vehicles"][0]["vehicle_id"]
        .as_str()
        .expect("a new demo vehicle at Chicago")
        .to_owned();
    store_failing_programs(&app.database_url).await;
    // `detail: "full"`: the trace is part of what must carry no rule text,
    // and the concise default leaves it out (docs/pricing.md section 2).
    let evaluate = json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": vehicle_id,
        "profile": {"payment_mode": "unknown", "jurisdiction": {"country": "US", "subdivision": "US-IL"}},
        "detail": "full"});
    let disclose = json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": vehicle_id});

    // The organization's own grant reads every word (its console's
    // what-if page calls the tool with it).
    let own = token(
        &app,
        ORG,
        RooftopScope::Group,
        &[SCOPE_INVENTORY_READ, SCOPE_PRICING_READ],
    )
    .await;
    let full = call(&app, Some(&own), OFFERS, evaluate.clone()).await;
    let text = full.to_string();
    for said in [
        "SECRET-RULE-TEXT",
        "SECRET-PROOF-TEXT",
        "SECRET-KIND",
        ", position ",
    ] {
        assert!(text.contains(said), "the owner misses {said}: {text}");
    }

    // Anybody else reads what each rule did, never how.
    let anonymous = call(&app, None, OFFERS, evaluate.clone()).await;
    assert_no_rule_text("anonymous evaluation", &anonymous);
    let ev = &anonymous["structuredContent"];
    let unusable = ev["unusable_programs"].to_string();
    for id in ["zz-three", "zz-proof", "zz-corrupt"] {
        assert!(unusable.contains(id), "{id} not reported: {unusable}");
    }
    assert!(
        unusable.contains("the rule raised an error, for the stack [zz-proof]"),
        "{unusable}"
    );
    assert!(
        unusable.contains("the rule raised an error, for the stack [")
            && unusable.contains("at evaluation"),
        "{unusable}"
    );
    assert!(
        ev["trace"].as_array().unwrap().iter().any(|l| l
            .as_str()
            .unwrap()
            .contains("rule of zz-three cannot be evaluated")),
        "{}",
        ev["trace"]
    );
    let foreign = token(
        &app,
        OTHER_ORG,
        RooftopScope::Group,
        &[SCOPE_INVENTORY_READ, SCOPE_PRICING_READ],
    )
    .await;
    assert_no_rule_text(
        "another organization's evaluation",
        &call(&app, Some(&foreign), OFFERS, evaluate).await,
    );
    // The disclosure is one document for every reader of the vehicle.
    for (who, t) in [("anonymous", None), ("owner", Some(own.as_str()))] {
        let doc = call(&app, t, DISCLOSURE, disclose.clone()).await;
        assert_no_rule_text(&format!("{who} disclosure"), &doc);
        let uncertainty = doc["structuredContent"]["uncertainty"].to_string();
        assert!(uncertainty.contains("zz-proof"), "{uncertainty}");
    }
}
