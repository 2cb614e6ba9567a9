//! MCP 2026-07-28 ("modern", stateless) rows of docs/mcp.md over real
//! HTTP: the `_meta` / header / version ladder, dispatch, tools and
//! resources.

use std::collections::BTreeSet;

use crate::common::{LEGACY, MODERN, Reply, TestApp, meta, modern_body, spawn, spawn_with};
use base64::Engine as _;
use serde_json::{Value, json};

const MANIFEST_TOOL: &str = "dealeragent.discovery.get_manifest";
const DEALER_TOOL: &str = "dealeragent.dealer.get";
const ORG: &str = "org.maplecrest-motor-group";
const ROOFTOP: &str = "roof.maplecrest-toronto";

/// POST `body` with the standard headers of `method` (and `Mcp-Name`).
async fn post(app: &TestApp, method: &str, name: Option<&str>, body: &Value) -> Reply {
    app.post_raw(&TestApp::modern_headers(method, name), body.to_string())
        .await
}

/// POST `body` with exactly `headers` (plus Content-Type).
async fn post_with(app: &TestApp, headers: &[(&str, &str)], body: &Value) -> Reply {
    app.post_raw(headers, body.to_string()).await
}

fn assert_rpc_error(r: &Reply, status: u16, code: i64) {
    assert_eq!(r.status, status, "{}", r.raw);
    assert_eq!(r.error_code(), code, "{}", r.raw);
    assert_eq!(r.body["jsonrpc"], "2.0");
    assert!(r.body["error"]["message"].is_string(), "{}", r.raw);
}

fn manifest_call_body() -> Value {
    modern_body(
        1,
        "tools/call",
        json!({"name": MANIFEST_TOOL, "arguments": {}}),
    )
}

fn manifest_read_body() -> Value {
    modern_body(
        1,
        "resources/read",
        json!({"uri": "dealeragent://manifest"}),
    )
}

// ---- server/discover ----

#[tokio::test]
async fn server_discover_has_the_required_shape() {
    let app = spawn().await;
    let r = app.modern("server/discover", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.body["id"], 1);
    let result = r.result();
    assert_eq!(result["resultType"], "complete");
    let versions = result["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!(MODERN)), "{result}");
    assert!(versions.contains(&json!(LEGACY)), "{result}");
    assert!(result["capabilities"]["tools"].is_object());
    assert_eq!(
        result["capabilities"]["resources"],
        json!({"subscribe": true, "listChanged": true})
    );
    assert!(result["ttlMs"].as_u64().is_some(), "{result}");
    assert!(
        matches!(result["cacheScope"].as_str(), Some("public" | "private")),
        "{result}"
    );
    let info = &result["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert!(
        info["name"].is_string() && info["version"].is_string(),
        "{result}"
    );
    assert!(
        result.get("serverInfo").is_none(),
        "no body serverInfo in 2026-07-28"
    );
    assert!(result.get("protocolVersion").is_none());
    assert!(r.headers.get("mcp-session-id").is_none(), "no sessions");
}

// ---- _meta ----

#[tokio::test]
async fn missing_meta_is_400_invalid_params() {
    let app = spawn().await;
    for params in [None, Some(json!({})), Some(json!({"_meta": "x"}))] {
        let mut body = json!({"jsonrpc": "2.0", "id": 5, "method": "server/discover"});
        if let Some(p) = &params {
            body["params"] = p.clone();
        }
        let r = post(&app, "server/discover", None, &body).await;
        assert_rpc_error(&r, 400, -32602);
        assert_eq!(r.body["id"], 5, "{params:?}");
    }
}

#[tokio::test]
async fn meta_without_protocol_version_is_400_invalid_params() {
    let app = spawn().await;
    let mut body = modern_body(5, "tools/list", json!({}));
    body["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/protocolVersion");
    let r = post(&app, "tools/list", None, &body).await;
    assert_rpc_error(&r, 400, -32602);
}

#[tokio::test]
async fn meta_without_client_capabilities_is_400_invalid_params() {
    let app = spawn().await;
    for caps in [None, Some(json!("all")), Some(json!(null))] {
        let mut body = modern_body(6, "server/discover", json!({}));
        let m = body["params"]["_meta"].as_object_mut().unwrap();
        match &caps {
            None => {
                m.remove("io.modelcontextprotocol/clientCapabilities");
            }
            Some(v) => {
                m.insert(
                    "io.modelcontextprotocol/clientCapabilities".into(),
                    v.clone(),
                );
            }
        }
        let r = post(&app, "server/discover", None, &body).await;
        assert_rpc_error(&r, 400, -32602);
    }
}

#[tokio::test]
async fn client_info_may_be_omitted() {
    let app = spawn().await;
    let body = json!({"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let r = post(&app, "server/discover", None, &body).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.result()["resultType"], "complete");
}

#[tokio::test]
async fn client_info_that_is_not_an_object_is_400_invalid_params() {
    let app = spawn().await;
    let mut body = modern_body(8, "server/discover", json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/clientInfo"] = json!("me");
    let r = post(&app, "server/discover", None, &body).await;
    assert_rpc_error(&r, 400, -32602);
}

#[tokio::test]
async fn modern_header_without_meta_selects_the_modern_ladder() {
    // No `_meta`, but a non-handshake MCP-Protocol-Version header: modern
    // rules apply (-32602), not the legacy "session required".
    let app = spawn().await;
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"});
    let r = post(&app, "tools/list", None, &body).await;
    assert_rpc_error(&r, 400, -32602);
}

// ---- Version and header agreement ----

#[tokio::test]
async fn header_version_differing_from_meta_version_is_header_mismatch() {
    let app = spawn().await;
    for header in [LEGACY, "2026-07-29"] {
        let headers = [
            ("mcp-protocol-version", header),
            ("mcp-method", "server/discover"),
        ];
        let r = post_with(
            &app,
            &headers,
            &modern_body(1, "server/discover", json!({})),
        )
        .await;
        assert_rpc_error(&r, 400, -32020);
        assert_eq!(r.body["id"], 1);
    }
}

#[tokio::test]
async fn unusable_body_version_with_a_modern_header_is_header_mismatch_not_unsupported() {
    let app = spawn().await;
    let mut body = modern_body(1, "server/discover", json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let r = post(&app, "server/discover", None, &body).await;
    assert_rpc_error(&r, 400, -32020);
}

#[tokio::test]
async fn unsupported_version_is_32022_with_supported_and_requested() {
    let app = spawn().await;
    let discover = app.modern("server/discover", json!({})).await;
    let advertised = discover.result()["supportedVersions"].clone();

    let mut body = modern_body(1, "server/discover", json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let headers = [
        ("mcp-protocol-version", "1900-01-01"),
        ("mcp-method", "server/discover"),
    ];
    let r = post_with(&app, &headers, &body).await;
    assert_rpc_error(&r, 400, -32022);
    let data = &r.body["error"]["data"];
    assert_eq!(data["requested"], "1900-01-01");
    let supported = data["supported"].as_array().unwrap();
    assert!(!supported.is_empty());
    for v in supported {
        assert!(
            advertised.as_array().unwrap().contains(v),
            "{v} not in discover"
        );
    }
}

#[tokio::test]
async fn legacy_version_in_meta_is_unsupported_on_the_modern_path() {
    // 2025-11-25 is served only through the initialize handshake.
    let app = spawn().await;
    let mut body = modern_body(1, "tools/list", json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(LEGACY);
    let headers = [
        ("mcp-protocol-version", LEGACY),
        ("mcp-method", "tools/list"),
    ];
    let r = post_with(&app, &headers, &body).await;
    assert_rpc_error(&r, 400, -32022);
    assert_eq!(r.body["error"]["data"]["requested"], LEGACY);
}

/// -32022 must list as `supported` only what the per-request
/// path accepts, and name the handshake revisions apart; a client that
/// retries with any `supported` entry is served instead of looping.
#[tokio::test]
async fn minus_32022_lists_only_per_request_revisions_and_names_the_handshake_ones() {
    let app = spawn().await;
    for requested in [LEGACY, "1900-01-01", "2025-06-18"] {
        let mut body = modern_body(1, "tools/list", json!({}));
        body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(requested);
        let headers = [
            ("mcp-protocol-version", requested),
            ("mcp-method", "tools/list"),
        ];
        let r = post_with(&app, &headers, &body).await;
        assert_rpc_error(&r, 400, -32022);
        let data = &r.body["error"]["data"];
        assert_eq!(data["requested"], requested, "{}", r.raw);
        assert_eq!(data["supported"], json!([MODERN]), "{}", r.raw);
        assert_eq!(data["requires_initialize"], json!([LEGACY]), "{}", r.raw);
        if requested == LEGACY {
            let message = r.body["error"]["message"].as_str().unwrap();
            assert!(message.contains("initialize"), "{message}");
        }
        // Retrying with every listed version is served: no loop.
        for retry in data["supported"].as_array().unwrap() {
            let retry = retry.as_str().unwrap();
            let mut body = modern_body(2, "tools/list", json!({}));
            body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(retry);
            let headers = [
                ("mcp-protocol-version", retry),
                ("mcp-method", "tools/list"),
            ];
            let r = post_with(&app, &headers, &body).await;
            assert_eq!(r.status, 200, "retry with {retry}: {}", r.raw);
            assert!(r.result()["tools"].is_array());
        }
    }
}

#[tokio::test]
async fn mcp_method_value_mismatch_is_header_mismatch() {
    let app = spawn().await;
    for value in ["TOOLS/LIST", "resources/list", "tools/list "] {
        let headers = [("mcp-protocol-version", MODERN), ("mcp-method", value)];
        let r = post_with(&app, &headers, &modern_body(2, "tools/list", json!({}))).await;
        if value == "tools/list " {
            // Surrounding whitespace is optional whitespace, not a mismatch.
            assert_eq!(r.status, 200, "{}", r.raw);
        } else {
            assert_rpc_error(&r, 400, -32020);
            assert!(!r.raw.contains(value), "header value echoed: {}", r.raw);
        }
    }
}

#[tokio::test]
async fn mcp_name_mismatch_on_tools_call_is_header_mismatch() {
    let app = spawn().await;
    let r = post(&app, "tools/call", Some(DEALER_TOOL), &manifest_call_body()).await;
    assert_rpc_error(&r, 400, -32020);
}

#[tokio::test]
async fn mcp_name_mismatch_on_resources_read_is_header_mismatch() {
    let app = spawn().await;
    let r = post(
        &app,
        "resources/read",
        Some("dealeragent://organization/org.x"),
        &manifest_read_body(),
    )
    .await;
    assert_rpc_error(&r, 400, -32020);
}

#[tokio::test]
async fn mcp_name_without_a_body_name_is_header_mismatch() {
    let app = spawn().await;
    let body = modern_body(1, "tools/call", json!({"arguments": {}}));
    let r = post(&app, "tools/call", Some(MANIFEST_TOOL), &body).await;
    assert_rpc_error(&r, 400, -32020);
}

#[tokio::test]
async fn mcp_name_base64_sentinel_is_decoded() {
    let app = spawn().await;
    let encode = |s: &str| {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(s)
        )
    };
    let tool = encode(MANIFEST_TOOL);
    let r = post(&app, "tools/call", Some(&tool), &manifest_call_body()).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.result()["isError"], false);

    let uri = encode("dealeragent://manifest");
    let r = post(&app, "resources/read", Some(&uri), &manifest_read_body()).await;
    assert_eq!(r.status, 200, "{}", r.raw);

    let wrong = encode(DEALER_TOOL);
    let r = post(&app, "tools/call", Some(&wrong), &manifest_call_body()).await;
    assert_rpc_error(&r, 400, -32020);

    let broken = "=?base64?***?=";
    let r = post(&app, "tools/call", Some(broken), &manifest_call_body()).await;
    assert_rpc_error(&r, 400, -32020);
}

#[tokio::test]
async fn mcp_name_with_surrounding_spaces_is_accepted() {
    let app = spawn().await;
    let padded = format!("   {MANIFEST_TOOL}  ");
    let r = post(&app, "tools/call", Some(&padded), &manifest_call_body()).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.result()["isError"], false);
}

#[tokio::test]
async fn header_names_are_case_insensitive() {
    let app = spawn().await;
    for (version, method, name) in [
        ("MCP-PROTOCOL-VERSION", "MCP-METHOD", "MCP-NAME"),
        ("mcp-protocol-version", "mcp-method", "mcp-name"),
        ("Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name"),
    ] {
        let body = manifest_call_body().to_string();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nCONTENT-TYPE: application/json\r\n\
             {version}: {MODERN}\r\n{method}: tools/call\r\n{name}: {MANIFEST_TOOL}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let r = app.raw_http(&head, body.as_bytes()).await;
        assert_eq!(r.status, 200, "{version}");
        assert_eq!(r.json()["result"]["isError"], false);
        // And a conflicting value under an odd-cased name is still caught.
        let head = head.replace(
            &format!("{method}: tools/call"),
            &format!("{method}: tools/list"),
        );
        let r = app.raw_http(&head, body.as_bytes()).await;
        assert_eq!(r.status, 400, "{version}");
        assert_eq!(r.json()["error"]["code"], -32020);
    }
}

// ---- Header omission: tolerated by default, -32020 in strict mode ----

async fn strict() -> TestApp {
    spawn_with(|s| s.strict_mcp_headers = true).await
}

fn without(
    headers: Vec<(&'static str, &'static str)>,
    name: &str,
) -> Vec<(&'static str, &'static str)> {
    headers.into_iter().filter(|(k, _)| *k != name).collect()
}

fn call_headers() -> Vec<(&'static str, &'static str)> {
    TestApp::modern_headers("tools/call", Some(MANIFEST_TOOL))
}

fn read_headers() -> Vec<(&'static str, &'static str)> {
    TestApp::modern_headers("resources/read", Some("dealeragent://manifest"))
}

#[tokio::test]
async fn omitted_protocol_version_header_is_accepted_by_default() {
    let app = spawn().await;
    let headers = without(call_headers(), "mcp-protocol-version");
    let r = post_with(&app, &headers, &manifest_call_body()).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.result()["resultType"], "complete");
}

#[tokio::test]
async fn omitted_protocol_version_header_is_rejected_in_strict_mode() {
    let app = strict().await;
    let headers = without(call_headers(), "mcp-protocol-version");
    let r = post_with(&app, &headers, &manifest_call_body()).await;
    assert_rpc_error(&r, 400, -32020);
}

#[tokio::test]
async fn omitted_mcp_method_header_is_accepted_by_default() {
    let app = spawn().await;
    let headers = without(call_headers(), "mcp-method");
    let r = post_with(&app, &headers, &manifest_call_body()).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let headers = without(TestApp::modern_headers("tools/list", None), "mcp-method");
    let r = post_with(&app, &headers, &modern_body(1, "tools/list", json!({}))).await;
    assert_eq!(r.status, 200, "{}", r.raw);
}

#[tokio::test]
async fn omitted_mcp_method_header_is_rejected_in_strict_mode() {
    let app = strict().await;
    let headers = without(call_headers(), "mcp-method");
    let r = post_with(&app, &headers, &manifest_call_body()).await;
    assert_rpc_error(&r, 400, -32020);
    let headers = without(TestApp::modern_headers("tools/list", None), "mcp-method");
    let r = post_with(&app, &headers, &modern_body(1, "tools/list", json!({}))).await;
    assert_rpc_error(&r, 400, -32020);
}

#[tokio::test]
async fn omitted_mcp_name_header_is_accepted_by_default() {
    let app = spawn().await;
    let r = post_with(
        &app,
        &without(call_headers(), "mcp-name"),
        &manifest_call_body(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.result()["isError"], false);
    let r = post_with(
        &app,
        &without(read_headers(), "mcp-name"),
        &manifest_read_body(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.raw);
}

#[tokio::test]
async fn omitted_mcp_name_header_is_rejected_in_strict_mode() {
    let app = strict().await;
    let r = post_with(
        &app,
        &without(call_headers(), "mcp-name"),
        &manifest_call_body(),
    )
    .await;
    assert_rpc_error(&r, 400, -32020);
    let r = post_with(
        &app,
        &without(read_headers(), "mcp-name"),
        &manifest_read_body(),
    )
    .await;
    assert_rpc_error(&r, 400, -32020);
}

#[tokio::test]
async fn strict_mode_serves_requests_with_every_header() {
    let app = strict().await;
    let r = post_with(&app, &call_headers(), &manifest_call_body()).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let r = post_with(&app, &read_headers(), &manifest_read_body()).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let r = app.modern("server/discover", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.raw);
}

#[tokio::test]
async fn supplied_conflicts_are_rejected_in_both_modes() {
    for app in [spawn().await, strict().await] {
        let headers = [
            ("mcp-protocol-version", LEGACY),
            ("mcp-method", "tools/list"),
        ];
        let r = post_with(&app, &headers, &modern_body(1, "tools/list", json!({}))).await;
        assert_rpc_error(&r, 400, -32020);
    }
}

// ---- Dispatch ----

#[tokio::test]
async fn unknown_method_is_404_method_not_found() {
    let app = spawn().await;
    // prompts/* and completion/complete are served (docs/mcp.md "Prompts
    // and completions"); their neighbours are not.
    for method in [
        "tools/frobnicate",
        "prompts/frobnicate",
        "completion/other",
        "",
    ] {
        let r = app.modern(method, json!({})).await;
        assert_rpc_error(&r, 404, -32601);
        assert_eq!(r.body["id"], 1);
    }
}

#[tokio::test]
async fn removed_methods_are_404_method_not_found() {
    let app = spawn().await;
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        let params = match method {
            "initialize" => json!({"protocolVersion": MODERN, "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"}}),
            "logging/setLevel" => json!({"level": "debug"}),
            "resources/subscribe" | "resources/unsubscribe" => {
                json!({"uri": "dealeragent://manifest"})
            }
            _ => json!({}),
        };
        let r = app.modern(method, params).await;
        assert_rpc_error(&r, 404, -32601);
        assert!(r.headers.get("mcp-session-id").is_none(), "{method}");
    }
}

#[tokio::test]
async fn error_id_echoes_string_and_integer_ids() {
    let app = spawn().await;
    for id in [
        json!("abc-1"),
        json!(42),
        json!(0),
        json!(-7),
        json!(""),
        json!(9_007_199_254_740_993_u64),
    ] {
        let mut body = modern_body(1, "no/such/method", json!({}));
        body["id"] = id.clone();
        let r = post(&app, "no/such/method", None, &body).await;
        assert_rpc_error(&r, 404, -32601);
        assert_eq!(r.body["id"], id);
        // Successful results echo it too.
        let mut body = modern_body(1, "server/discover", json!({}));
        body["id"] = id.clone();
        let r = post(&app, "server/discover", None, &body).await;
        assert_eq!(r.body["id"], id);
    }
}

#[tokio::test]
async fn stray_session_id_on_a_modern_request_is_ignored() {
    let app = spawn().await;
    let mut headers = TestApp::modern_headers("server/discover", None);
    headers.push(("mcp-session-id", "not-a-session"));
    let r = post_with(
        &app,
        &headers,
        &modern_body(1, "server/discover", json!({})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(r.headers.get("mcp-session-id").is_none());
}

// ---- tools/list ----

/// Every `$ref` in `schema` is local (`#/$defs/...`) and resolves inside
/// `root`.
fn assert_self_contained(root: &Value, schema: &Value, tool: &str) {
    match schema {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref" {
                    let r = v.as_str().unwrap();
                    assert!(r.starts_with("#/$defs/"), "{tool}: remote ref {r}");
                    assert!(
                        root.pointer(&r[1..]).is_some(),
                        "{tool}: ref {r} does not resolve"
                    );
                } else {
                    assert_self_contained(root, v, tool);
                }
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|v| assert_self_contained(root, v, tool)),
        _ => {}
    }
}

#[tokio::test]
async fn tools_list_has_complete_self_contained_tools_in_a_stable_order() {
    let app = spawn().await;
    let first = app.modern("tools/list", json!({})).await;
    assert_eq!(first.status, 200, "{}", first.raw);
    let result = first.result();
    assert_eq!(result["resultType"], "complete");
    assert!(result["ttlMs"].as_u64().is_some());
    assert!(matches!(
        result["cacheScope"].as_str(),
        Some("public" | "private")
    ));
    assert!(result.get("nextCursor").is_none());
    let tools = result["tools"].as_array().unwrap();
    assert!(!tools.is_empty());
    let names: BTreeSet<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), tools.len(), "unique names");
    assert!(names.contains(MANIFEST_TOOL) && names.contains(DEALER_TOOL));
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        for field in ["title", "description"] {
            assert!(
                tool[field].as_str().is_some_and(|s| !s.is_empty()),
                "{name}: {field}"
            );
        }
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
        assert!(tool["outputSchema"].is_object(), "{name}");
        let a = &tool["annotations"];
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert!(a[hint].is_boolean(), "{name}: {hint}");
        }
        assert!(
            tool["_meta"]["com.dealeragentprotocol/catalog"]["safety"].is_object(),
            "{name}: safety metadata"
        );
        for schema in ["inputSchema", "outputSchema"] {
            assert_self_contained(&tool[schema], &tool[schema], name);
        }
    }
    let second = app.modern("tools/list", json!({})).await;
    assert_eq!(
        first.body["result"]["tools"], second.body["result"]["tools"],
        "deterministic order and content"
    );
}

#[tokio::test]
async fn tools_list_with_a_cursor_is_invalid_params() {
    let app = spawn().await;
    for cursor in [json!("abc"), json!(""), json!(3)] {
        let r = app.modern("tools/list", json!({"cursor": cursor})).await;
        assert_rpc_error(&r, 200, -32602);
    }
}

// ---- tools/call ----

#[tokio::test]
async fn tools_call_unknown_tool_is_invalid_params() {
    let app = spawn().await;
    let r = app
        .modern(
            "tools/call",
            json!({"name": "no.such.tool", "arguments": {}}),
        )
        .await;
    assert_rpc_error(&r, 200, -32602);
    let r = app.modern("tools/call", json!({"arguments": {}})).await;
    assert_rpc_error(&r, 200, -32602);
}

#[tokio::test]
async fn tools_call_with_invalid_arguments_is_an_is_error_result_without_echoing_values() {
    let app = spawn().await;
    let r = app
        .modern(
            "tools/call",
            json!({"name": MANIFEST_TOOL, "arguments": {"bogus": "s3cr3t-value"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let result = r.result();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["isError"], true);
    let sc = &result["structuredContent"];
    assert_eq!(sc["code"], "dealeragent.validation.invalid");
    let errors = sc["details"]["field_errors"].as_array().unwrap();
    assert!(!errors.is_empty());
    for e in errors {
        assert!(e["instance_location"].is_string(), "{e}");
        assert!(e["keyword"].as_str().is_some_and(|s| !s.is_empty()), "{e}");
        assert!(
            e["explanation"].as_str().is_some_and(|s| !s.is_empty()),
            "{e}"
        );
    }
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, sc);
    assert!(!r.raw.contains("s3cr3t-value"), "value echoed: {}", r.raw);

    // A wrong type inside a known property: same shape, value not echoed.
    let r = app
        .modern(
            "tools/call",
            json!({"name": DEALER_TOOL, "arguments": {"organization_id": ["s3cr3t-value"]}}),
        )
        .await;
    assert_eq!(r.result()["isError"], true);
    assert!(!r.raw.contains("s3cr3t-value"), "value echoed: {}", r.raw);
}

/// The `field_errors` of a tool call expected to fail validation.
async fn field_errors(app: &TestApp, tool: &str, args: Value) -> (Vec<Value>, String) {
    let r = app
        .modern("tools/call", json!({"name": tool, "arguments": args}))
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let result = r.result();
    assert_eq!(result["isError"], true, "{}", r.raw);
    let sc = &result["structuredContent"];
    assert_eq!(sc["code"], "dealeragent.validation.invalid", "{}", r.raw);
    let errors = sc["details"]["field_errors"].as_array().unwrap().clone();
    assert!(!errors.is_empty(), "{}", r.raw);
    // DAP 0.1 error.schema.json: instance_location matches `^/`.
    for e in &errors {
        let at = e["instance_location"].as_str().unwrap();
        assert!(at.starts_with('/'), "pointer must start with '/': {e}");
    }
    (errors, r.raw.clone())
}

fn has(errors: &[Value], keyword: &str, at: &str) -> bool {
    errors
        .iter()
        .any(|e| e["keyword"] == keyword && e["instance_location"] == at)
}

/// Root-level validation errors once carried `instance_location: ""`
/// where DAP requires a JSON pointer starting with `/` at the member.
#[tokio::test]
async fn validation_errors_point_at_the_member_with_a_leading_slash() {
    let app = spawn().await;
    // `required` (schema): the missing member itself.
    let (errors, raw) = field_errors(&app, "dealeragent.inventory.search", json!({})).await;
    assert!(has(&errors, "required", "/organization_id"), "{raw}");
    // `required` (the gateway's own rule when several organizations exist).
    let (errors, raw) = field_errors(&app, DEALER_TOOL, json!({})).await;
    assert!(has(&errors, "required", "/organization_id"), "{raw}");
    // `required` below the root: parent pointer plus the member.
    let (errors, raw) = field_errors(
        &app,
        "dealergateway.offers.evaluate",
        json!({"organization_id": ORG, "rooftop_id": ROOFTOP, "vehicle_id": "veh.absent",
               "profile": {"payment_mode": "cash"}}),
    )
    .await;
    assert!(has(&errors, "required", "/profile/jurisdiction"), "{raw}");
    // A wrong type points at the value's member.
    let (errors, raw) = field_errors(&app, DEALER_TOOL, json!({"organization_id": 7})).await;
    assert!(has(&errors, "type", "/organization_id"), "{raw}");
    // A root-level rule with no single member (exactly one vehicle
    // selector) points at the arguments object, written "/".
    let (errors, raw) = field_errors(
        &app,
        "dealeragent.inventory.get_vehicle",
        json!({"organization_id": ORG, "rooftop_id": ROOFTOP}),
    )
    .await;
    assert!(has(&errors, "oneOf", "/"), "{raw}");
}

/// An unexpected member's name is caller input: the error points at the
/// object holding it and never repeats the name (docs/security.md).
#[tokio::test]
async fn unexpected_members_point_at_their_parent_without_echoing_the_name() {
    let app = spawn().await;
    let secret = "sk_live_s3cr3t_member_name";
    let (errors, raw) = field_errors(&app, MANIFEST_TOOL, json!({secret: 1})).await;
    assert!(has(&errors, "additionalProperties", "/"), "{raw}");
    assert!(!raw.contains(secret), "member name echoed: {raw}");

    let (errors, raw) = field_errors(
        &app,
        "dealeragent.inventory.search",
        json!({"organization_id": ORG, "filters": {secret: true}}),
    )
    .await;
    assert!(has(&errors, "additionalProperties", "/filters"), "{raw}");
    assert!(!raw.contains(secret), "member name echoed: {raw}");

    // Pointer-shaped names cannot smuggle a path either.
    let sneaky = "a/b~c";
    let (errors, raw) = field_errors(&app, MANIFEST_TOOL, json!({sneaky: 1})).await;
    assert!(has(&errors, "additionalProperties", "/"), "{raw}");
    assert!(!raw.contains("a/b~c") && !raw.contains("a~1b~0c"), "{raw}");
}

/// MCP clients that validate `structuredContent` against `outputSchema`
/// (TypeScript SDK, MCP Inspector) once rejected every tool error.
/// For every tool in `tools/list`, a real success result and real error
/// results must validate against the published `outputSchema`.
#[tokio::test]
async fn every_published_output_schema_accepts_the_tools_success_and_dap_error_results() {
    let app = spawn().await;
    let search = app
        .call_tool(
            "dealeragent.inventory.search",
            json!({"organization_id": ORG, "rooftop_ids": [ROOFTOP]}),
        )
        .await;
    let vehicle = search["structuredContent"]["vehicles"][0]["vehicle_id"]
        .as_str()
        .expect("a demo vehicle")
        .to_owned();
    let vehicle_args =
        json!({"organization_id": ORG, "rooftop_id": ROOFTOP, "vehicle_id": vehicle});
    let absent_args =
        json!({"organization_id": ORG, "rooftop_id": ROOFTOP, "vehicle_id": "veh.absent-0000"});
    // A used unit of the same rooftop (the used-vehicle profile serves
    // used, certified and demo vehicles only).
    let used = app
        .call_tool(
            "dealeragent.inventory.search",
            json!({"organization_id": ORG, "rooftop_ids": [ROOFTOP],
                   "filters": {"condition": ["used", "certified"]}}),
        )
        .await;
    let used_vehicle = used["structuredContent"]["vehicles"][0]["vehicle_id"]
        .as_str()
        .expect("a used demo vehicle")
        .to_owned();
    let listed = app.modern("tools/list", json!({})).await;
    let mut tools = listed.result()["tools"].as_array().unwrap().clone();
    assert!(!tools.is_empty());
    // The AAP binding's tools are listed and served on each organization's
    // AAP endpoint, not on /mcp: checked there.
    let mut aap = TestApp::attach(&app.base());
    aap.url = format!("{}/aap/{ORG}/mcp", app.base());
    let aap_tools = aap.modern("tools/list", json!({})).await.result()["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!aap_tools.is_empty());
    tools.extend(aap_tools);
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        let client = if name.starts_with("aap_") { &aap } else { &app };
        let schema = &tool["outputSchema"];
        assert_eq!(schema["type"], "object", "{name}: MCP root type object");
        let validator = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(schema)
            .unwrap_or_else(|e| panic!("{name}: outputSchema does not compile: {e}"));
        // Success and error arguments per tool; a new tool must be added here.
        let (success, mut failures) = match name {
            "dealeragent.discovery.get_manifest" => (json!({}), vec![]),
            "dealeragent.dealer.get" => (
                json!({"organization_id": ORG}),
                vec![json!({}), json!({"organization_id": "org.absent-group"})],
            ),
            "dealeragent.inventory.search" => (
                json!({"organization_id": ORG, "rooftop_ids": [ROOFTOP]}),
                vec![json!({"organization_id": ORG, "page": {"cursor": "not-a-cursor"}})],
            ),
            "dealeragent.inventory.get_vehicle"
            | "dealeragent.inventory.verify_availability"
            | "dealeragent.pricing.get_disclosure" => {
                (vehicle_args.clone(), vec![absent_args.clone()])
            }
            "dealergateway.offers.evaluate" => {
                let profile = json!({"payment_mode": "unknown", "jurisdiction": {"country": "CA"}, "claims": {}});
                let mut ok = vehicle_args.clone();
                ok["profile"] = profile.clone();
                let mut absent = absent_args.clone();
                absent["profile"] = profile;
                (ok, vec![absent])
            }
            "dealeragent.inventory.get_used_vehicle_details" => (
                json!({"organization_id": ORG, "rooftop_id": ROOFTOP, "vehicle_id": used_vehicle}),
                vec![absent_args.clone()],
            ),
            // The AAP adapter: its errors are AAP's aap.error,
            // which its published outputSchema admits instead of DAP's.
            "aap_dealer_information" => (
                json!({"type": "dealer.information.request", "dealer_id": ORG}),
                vec![
                    json!({"type": "dealer.information.request", "dealer_id": "org.absent-group"}),
                ],
            ),
            "aap_inventory_facets" => (
                json!({"type": "inventory.facets.request", "dealer_id": ORG}),
                vec![json!({"type": "inventory.facets.request", "dealer_id": "org.absent-group"})],
            ),
            "aap_inventory_search" => (
                json!({"type": "inventory.search.request", "dealer_id": ORG,
                       "pagination": {"skip": 0, "limit": 2}}),
                vec![json!({"type": "inventory.search.request", "dealer_id": "org.absent-group"})],
            ),
            "aap_inventory_vehicle" => (
                json!({"type": "inventory.vehicle.request", "dealer_id": ORG, "vehicle_id": vehicle}),
                vec![
                    json!({"type": "inventory.vehicle.request", "dealer_id": ORG,
                            "vehicle_id": "veh.absent-0000"}),
                ],
            ),
            other => panic!("no sample arguments for tool {other}; add them to this test"),
        };
        // Every tool: an unexpected member is a validation error.
        failures.push(json!({"unexpected_member": true}));

        let r = client.call_tool(name, success.clone()).await;
        assert_eq!(r["isError"], false, "{name} {success}: {r}");
        let sc = &r["structuredContent"];
        let problems: Vec<String> = validator.iter_errors(sc).map(|e| e.to_string()).collect();
        assert!(
            problems.is_empty(),
            "{name}: success result rejected by its outputSchema: {problems:?}"
        );

        for args in failures {
            let r = client.call_tool(name, args.clone()).await;
            assert_eq!(r["isError"], true, "{name} {args}: {r}");
            let sc = &r["structuredContent"];
            // DAP's error object, or for the AAP adapter AAP's, which
            // keeps the DAP code in details.
            let dap_code = if name.starts_with("aap_") {
                assert_eq!(sc["type"], "aap.error", "{sc}");
                &sc["details"]["dap_code"]
            } else {
                &sc["code"]
            };
            assert!(
                dap_code
                    .as_str()
                    .is_some_and(|c| c.starts_with("dealeragent.")),
                "{sc}"
            );
            let problems: Vec<String> = validator.iter_errors(sc).map(|e| e.to_string()).collect();
            assert!(
                problems.is_empty(),
                "{name} {args}: error result rejected by its outputSchema: {problems:?}\n{sc}"
            );
        }
    }
}

#[tokio::test]
async fn tools_call_success_has_structured_content_equal_to_its_text() {
    let app = spawn().await;
    let r = app
        .modern(
            "tools/call",
            json!({"name": DEALER_TOOL, "arguments": {"organization_id": ORG}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let result = r.result();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["isError"], false);
    assert!(result.get("ttlMs").is_none() && result.get("cacheScope").is_none());
    assert_eq!(result["content"][0]["type"], "text");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, result["structuredContent"]);
    assert_eq!(result["structuredContent"]["organization_id"], ORG);
    assert!(result["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());
}

#[tokio::test]
async fn caller_meta_keys_change_nothing() {
    let app = spawn().await;
    let plain = app
        .modern(
            "tools/call",
            json!({"name": MANIFEST_TOOL, "arguments": {}}),
        )
        .await;
    let mut body = manifest_call_body();
    body["params"]["_meta"]["com.attacker/grant"] = json!({"scopes": ["*"], "tenant": "all"});
    body["params"]["_meta"]["io.modelcontextprotocol/serverInfo"] = json!({"name": "x"});
    let spiked = post(&app, "tools/call", Some(MANIFEST_TOOL), &body).await;
    assert_eq!(spiked.status, 200, "{}", spiked.raw);
    assert_eq!(
        plain.result()["structuredContent"],
        spiked.result()["structuredContent"]
    );
    assert_eq!(plain.result()["_meta"], spiked.result()["_meta"]);
    assert!(!spiked.raw.contains("com.attacker"));

    let mut list = modern_body(1, "resources/list", json!({}));
    list["params"]["_meta"]["com.attacker/grant"] = json!({"scopes": ["*"]});
    let spiked = post(&app, "resources/list", None, &list).await;
    let plain = app.modern("resources/list", json!({})).await;
    assert_eq!(plain.body, spiked.body);
}

// ---- resources ----

#[tokio::test]
async fn resources_list_has_manifest_organizations_and_rooftops() {
    let app = spawn().await;
    let r = app.modern("resources/list", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let result = r.result();
    assert_eq!(result["resultType"], "complete");
    assert!(result["ttlMs"].as_u64().is_some());
    assert!(matches!(
        result["cacheScope"].as_str(),
        Some("public" | "private")
    ));
    let uris: Vec<&str> = result["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"dealeragent://manifest"));
    assert!(uris.contains(&format!("dealeragent://organization/{ORG}").as_str()));
    assert!(uris.contains(&format!("dealeragent://organization/{ORG}/rooftop/{ROOFTOP}").as_str()));
    for res in result["resources"].as_array().unwrap() {
        assert!(res["name"].is_string(), "{res}");
    }
}

#[tokio::test]
async fn resources_list_with_a_cursor_is_invalid_params() {
    let app = spawn().await;
    let r = app.modern("resources/list", json!({"cursor": "x"})).await;
    assert_rpc_error(&r, 200, -32602);
}

#[tokio::test]
async fn resources_templates_list_has_the_organization_rooftop_and_vehicle_templates() {
    let app = spawn().await;
    let r = app.modern("resources/templates/list", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let result = r.result();
    assert_eq!(result["resultType"], "complete");
    assert!(result["ttlMs"].as_u64().is_some());
    assert!(result["cacheScope"].is_string());
    let templates: Vec<&str> = result["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert_eq!(
        templates,
        [
            "dealeragent://organization/{organization_id}",
            "dealeragent://organization/{organization_id}/rooftop/{rooftop_id}",
            "dealeragent://organization/{organization_id}/rooftop/{rooftop_id}/vehicle/{vehicle_id}"
        ]
    );
}

async fn read(app: &TestApp, uri: &str) -> (Value, Value) {
    let r = app.modern("resources/read", json!({"uri": uri})).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let result = r.result().clone();
    assert_eq!(result["resultType"], "complete");
    assert!(result["ttlMs"].as_u64().is_some());
    assert!(result["cacheScope"].is_string());
    let contents = &result["contents"];
    assert_eq!(contents.as_array().unwrap().len(), 1);
    assert_eq!(contents[0]["uri"], uri);
    assert_eq!(contents[0]["mimeType"], "application/json");
    let doc = serde_json::from_str(contents[0]["text"].as_str().unwrap()).unwrap();
    (result, doc)
}

#[tokio::test]
async fn resources_read_serves_manifest_organization_and_rooftop() {
    let app = spawn().await;
    let (_, manifest) = read(&app, "dealeragent://manifest").await;
    assert_eq!(manifest["standard"], "dealer-agent-protocol");

    let (_, org) = read(&app, &format!("dealeragent://organization/{ORG}")).await;
    assert_eq!(org["organization_id"], ORG);
    assert!(org["rooftops"].as_array().unwrap().len() >= 2);

    let (_, one) = read(
        &app,
        &format!("dealeragent://organization/{ORG}/rooftop/{ROOFTOP}"),
    )
    .await;
    assert_eq!(one["organization_id"], ORG);
    let rooftops = one["rooftops"].as_array().unwrap();
    assert_eq!(rooftops.len(), 1, "narrowed to one rooftop");
    assert_eq!(rooftops[0]["rooftop_id"], ROOFTOP);
}

#[tokio::test]
async fn unknown_resource_is_invalid_params_with_the_uri() {
    let app = spawn().await;
    for uri in [
        "dealeragent://organization/org.nope",
        &format!("dealeragent://organization/{ORG}/rooftop/roof.nope"),
        "file:///etc/passwd",
        "",
    ] {
        let r = app.modern("resources/read", json!({"uri": uri})).await;
        assert_rpc_error(&r, 200, -32602);
        assert_eq!(r.body["error"]["data"]["uri"], uri);
    }
}

#[tokio::test]
async fn resources_read_without_a_uri_is_invalid_params() {
    let app = spawn().await;
    let r = app.modern("resources/read", json!({"uri": 5})).await;
    assert_rpc_error(&r, 200, -32602);
    let r = app.modern("resources/read", json!({})).await;
    assert_rpc_error(&r, 200, -32602);
}

#[tokio::test]
async fn meta_is_required_on_every_method_not_just_discover() {
    let app = spawn().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": MANIFEST_TOOL, "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN}}});
    let r = post(&app, "tools/call", Some(MANIFEST_TOOL), &body).await;
    assert_rpc_error(&r, 400, -32602);
}

/// The modern revision has no sessions and must ignore the header (MCP
/// 2026-07-28 streamable HTTP transport).
#[tokio::test]
async fn stray_session_id_on_a_modern_notification_is_ignored() {
    let app = spawn().await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "_meta": meta()}});
    let mut headers = TestApp::modern_headers("notifications/cancelled", None);
    headers.push(("mcp-session-id", "not-a-session"));
    let r = post_with(&app, &headers, &note).await;
    assert_eq!(r.status, 202, "{}", r.raw);
    assert!(r.raw.is_empty());
}
