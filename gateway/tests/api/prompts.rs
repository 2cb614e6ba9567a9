//! MCP prompts and completions (docs/mcp.md "Prompts and completions"),
//! in both eras, over real HTTP on the demo data: the prompts are listed
//! with their cache hints and rendered from checked arguments; completion
//! offers only the organizations, rooftops and makes the caller may see.

use serde_json::{Value, json};

use crate::common::{LEGACY, MODERN, TestApp, meta, spawn};
use crate::security::{create_token, rooftops};

const LAKESHORE: &str = "org.lakeshore-auto-group";
const MAPLECREST: &str = "org.maplecrest-motor-group";
/// The demo's partner-only rooftop: never offered to an anonymous caller.
const WHOLESALE: &str = "roof.lakeshore-fleet-wholesale";
const ROOFTOP_TEMPLATE: &str = "dealeragent://organization/{organization_id}/rooftop/{rooftop_id}";

/// A modern request, with a bearer token when given.
async fn call(app: &TestApp, token: Option<&str>, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", MODERN),
        ("mcp-method", method),
    ];
    let name = body["params"]["name"].as_str().map(str::to_owned);
    if method == "prompts/get"
        && let Some(n) = name.as_deref()
    {
        headers.push(("mcp-name", n));
    }
    if let Some(b) = bearer.as_deref() {
        headers.push(("authorization", b));
    }
    app.post_raw(&headers, body.to_string()).await.body
}

async fn complete(
    app: &TestApp,
    token: Option<&str>,
    reference: Value,
    argument: &str,
    value: &str,
    context: Value,
) -> Vec<String> {
    let r = call(
        app,
        token,
        "completion/complete",
        json!({"ref": reference, "argument": {"name": argument, "value": value}, "context": {"arguments": context}}),
    )
    .await;
    let c = &r["result"]["completion"];
    assert_eq!(
        c["total"].as_u64(),
        c["values"].as_array().map(|v| v.len() as u64),
        "{r}"
    );
    assert_eq!(c["hasMore"], false, "{r}");
    c["values"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

fn prompt(name: &str) -> Value {
    json!({"type": "ref/prompt", "name": name})
}

fn template(uri: &str) -> Value {
    json!({"type": "ref/resource", "uri": uri})
}

#[tokio::test]
async fn prompts_are_listed_with_cache_hints_and_rendered_from_checked_arguments() {
    let app = spawn().await;
    let discover = call(&app, None, "server/discover", json!({})).await;
    let caps = &discover["result"]["capabilities"];
    assert!(
        caps.get("prompts").is_some() && caps.get("completions").is_some(),
        "{discover}"
    );

    let list = call(&app, None, "prompts/list", json!({})).await;
    let r = &list["result"];
    assert_eq!(r["cacheScope"], "public", "{list}");
    assert!(r["ttlMs"].as_u64().is_some(), "{list}");
    let names: Vec<&str> = r["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "find_vehicles",
            "compare_vehicles",
            "explain_disclosure",
            "check_availability"
        ]
    );
    for p in r["prompts"].as_array().unwrap() {
        assert!(p["description"].as_str().is_some_and(|d| !d.is_empty()));
        for a in p["arguments"].as_array().unwrap() {
            assert!(
                a["description"].as_str().unwrap().contains("Must be"),
                "{a}"
            );
        }
    }

    let got = call(
        &app,
        None,
        "prompts/get",
        json!({"name": "check_availability", "arguments": {"organization_id": LAKESHORE, "rooftop_id": "roof.lakeshore-chicago", "vehicle_id": "veh.1"}}),
    )
    .await;
    let text = got["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{got}"));
    assert!(
        text.contains("dealeragent.inventory.verify_availability"),
        "{text}"
    );
    assert!(text.contains("verified_current"), "{text}");
    assert_eq!(
        got["result"]["messages"][1]["content"]["type"], "resource_link",
        "{got}"
    );

    // A wrong argument: -32602, the argument and its rule named, the
    // value never repeated.
    let bad = call(
        &app,
        None,
        "prompts/get",
        json!({"name": "explain_disclosure", "arguments": {"organization_id": LAKESHORE, "rooftop_id": "r", "vehicle_id": "v", "jurisdiction": "washington"}}),
    )
    .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let message = bad["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("argument jurisdiction must be"),
        "{message}"
    );
    assert!(message.contains("such as US-IL"), "{message}");
    assert!(!message.contains("washington"), "{message}");
}

#[tokio::test]
async fn completion_offers_only_what_the_caller_may_see() {
    let app = spawn().await;
    // Anonymous: both published organizations, never the partner-only
    // rooftop.
    let orgs = complete(
        &app,
        None,
        prompt("find_vehicles"),
        "organization_id",
        "",
        json!({}),
    )
    .await;
    assert_eq!(orgs, [LAKESHORE, MAPLECREST, "org.northsea-motor-group"]);
    let roofs = complete(
        &app,
        None,
        template(ROOFTOP_TEMPLATE),
        "rooftop_id",
        "",
        json!({"organization_id": LAKESHORE}),
    )
    .await;
    assert!(
        roofs.contains(&"roof.lakeshore-chicago".to_owned()),
        "{roofs:?}"
    );
    assert!(!roofs.contains(&WHOLESALE.to_owned()), "{roofs:?}");
    assert!(
        roofs.iter().all(|r| r.starts_with("roof.lakeshore-")),
        "{roofs:?}"
    );
    // The prefix narrows, case-insensitively.
    let maple = complete(
        &app,
        None,
        template(ROOFTOP_TEMPLATE),
        "rooftop_id",
        "ROOF.MAPLE",
        json!({}),
    )
    .await;
    assert_eq!(
        maple,
        [
            "roof.maplecrest-burnaby",
            "roof.maplecrest-montreal",
            "roof.maplecrest-toronto"
        ]
    );
    // Makes in stock at the visible rooftops of the chosen organization.
    let makes = complete(
        &app,
        None,
        prompt("find_vehicles"),
        "make",
        "",
        json!({"organization_id": LAKESHORE}),
    )
    .await;
    assert!(!makes.is_empty(), "no makes");
    let first = makes[0].chars().next().unwrap().to_string();
    let narrowed = complete(
        &app,
        None,
        prompt("find_vehicles"),
        "make",
        &first.to_lowercase(),
        json!({"organization_id": LAKESHORE}),
    )
    .await;
    assert!(narrowed.contains(&makes[0]) && narrowed.len() <= makes.len());
    // Nothing for what we do not complete: an unknown prompt, a free-text
    // argument, a foreign template. An empty list, never an error.
    for (reference, argument) in [
        (prompt("test_prompt_with_arguments"), "arg1"),
        (prompt("find_vehicles"), "request"),
        (template("file:///{path}"), "path"),
    ] {
        assert!(
            complete(&app, None, reference, argument, "", json!({}))
                .await
                .is_empty()
        );
    }
    let bad = call(
        &app,
        None,
        "completion/complete",
        json!({"ref": {"type": "ref/other"}, "argument": {"name": "x", "value": ""}}),
    )
    .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");

    // A partner token for the wholesale rooftop adds that rooftop (public
    // rooftops stay visible to every caller, as in the manifest); a token
    // of the other organization never sees it.
    let store = gateway::store::open(&app.database_url)
        .await
        .expect("store");
    let partner = create_token(
        store.as_ref(),
        "agent:wholesale",
        LAKESHORE,
        rooftops(&[WHOLESALE]),
        &["dealeragent:inventory:read"],
    )
    .await;
    let roofs = complete(
        &app,
        Some(&partner),
        template(ROOFTOP_TEMPLATE),
        "rooftop_id",
        "roof.lakeshore-f",
        json!({}),
    )
    .await;
    assert_eq!(roofs, [WHOLESALE]);
    let other = create_token(
        store.as_ref(),
        "agent:maplecrest",
        MAPLECREST,
        rooftops(&["roof.maplecrest-toronto"]),
        &["dealeragent:inventory:read"],
    )
    .await;
    let roofs = complete(
        &app,
        Some(&other),
        template(ROOFTOP_TEMPLATE),
        "rooftop_id",
        "",
        json!({"organization_id": LAKESHORE}),
    )
    .await;
    assert!(
        !roofs.is_empty() && !roofs.contains(&WHOLESALE.to_owned()),
        "{roofs:?}"
    );
}

#[tokio::test]
async fn legacy_sessions_get_prompts_and_completions_and_aap_endpoints_do_not() {
    let app = spawn().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let init = app
        .post_raw(
            &[("accept", "application/json, text/event-stream")],
            body.to_string(),
        )
        .await;
    let caps = &init.body["result"]["capabilities"];
    assert!(
        caps.get("prompts").is_some() && caps.get("completions").is_some(),
        "{}",
        init.raw
    );

    let session = app.initialize_legacy().await;
    let list = app.legacy(&session, "prompts/list", json!({})).await;
    assert_eq!(list.result()["prompts"].as_array().unwrap().len(), 4);
    assert!(
        list.result().get("ttlMs").is_none(),
        "legacy results carry no cache hints"
    );
    let got = app
        .legacy(&session, "prompts/get", json!({"name": "compare_vehicles", "arguments": {"organization_id": LAKESHORE, "vins": "KM855JRX6SG174710,1HGCM82633A004352"}}))
        .await;
    assert!(
        got.result()["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("1HGCM82633A004352")
    );
    let c = app
        .legacy(&session, "completion/complete", json!({"ref": prompt("compare_vehicles"), "argument": {"name": "organization_id", "value": "org.m"}}))
        .await;
    assert_eq!(c.result()["completion"]["values"], json!([MAPLECREST]));

    // An AAP endpoint is tools only.
    let aap = format!("{}/aap/{LAKESHORE}/mcp", app.base());
    let body = crate::common::modern_body(1, "prompts/list", json!({}));
    let r = crate::common::send(
        app.http
            .post(&aap)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", "prompts/list")
            .body(body.to_string()),
    )
    .await;
    assert_eq!(r.error_code(), -32601, "{}", r.raw);
}
