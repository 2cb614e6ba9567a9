//! MCP 2025-11-25 ("legacy", initialize handshake and transport sessions)
//! rows of docs/mcp.md over real HTTP.

use crate::common::{LEGACY, MODERN, Reply, TestApp, send, spawn, spawn_with};
use serde_json::{Value, json};

const MANIFEST_TOOL: &str = "dealeragent.discovery.get_manifest";

fn initialize_body(version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "legacy-test", "version": "0"}}})
}

async fn initialize(app: &TestApp, body: &Value) -> Reply {
    app.post_raw(
        &[("accept", "application/json, text/event-stream")],
        body.to_string(),
    )
    .await
}

fn assert_no_modern_fields(result: &Value) {
    for field in ["resultType", "ttlMs", "cacheScope", "_meta"] {
        assert!(
            result.get(field).is_none(),
            "{field} in legacy result {result}"
        );
    }
}

/// A tool result or resource read of either era carries its content
/// version in `_meta` (docs/agents.md "Conditional re-reads"), and in
/// 2025-11-25 nothing else there: no server identity, no cache hints.
fn assert_no_modern_fields_but_the_content_version(result: &Value) {
    let mut result = result.clone();
    let meta = result
        .as_object_mut()
        .and_then(|r| r.remove("_meta"))
        .unwrap_or_else(|| panic!("no _meta in legacy result {result}"));
    let keys: Vec<&String> = meta
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(
        keys,
        ["dealergateway/contentVersion"],
        "legacy _meta {meta}"
    );
    assert_no_modern_fields(&result);
}

#[tokio::test]
async fn initialize_returns_the_legacy_result_and_a_session_id() {
    let app = spawn().await;
    let r = initialize(&app, &initialize_body(LEGACY)).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.headers.get("content-type").unwrap(), "application/json");
    let result = r.result();
    assert_eq!(result["protocolVersion"], LEGACY);
    assert!(result["serverInfo"]["name"].is_string());
    assert!(result["serverInfo"]["version"].is_string());
    assert!(result["capabilities"]["tools"].is_object());
    assert_eq!(
        result["capabilities"]["resources"],
        json!({"subscribe": true, "listChanged": true})
    );
    assert_no_modern_fields(result);
    let session = r.headers.get("mcp-session-id").expect("session id");
    let session = session.to_str().unwrap();
    assert!(session.len() >= 16);
    assert!(
        session.bytes().all(|b| (0x21..=0x7e).contains(&b)),
        "{session}"
    );
    // Each initialize starts a distinct session.
    let again = initialize(&app, &initialize_body(LEGACY)).await;
    assert_ne!(again.headers.get("mcp-session-id").unwrap(), session);
}

#[tokio::test]
async fn initialize_with_an_unknown_version_is_answered_with_2025_11_25() {
    let app = spawn().await;
    let r = initialize(&app, &initialize_body("1999-01-01")).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.result()["protocolVersion"], LEGACY);
}

/// MCP 2025-11-25 lifecycle: a requested version the server does not
/// support is not an error; the server answers with one it supports (the
/// latest handshake revision) and the session then works with it.
#[tokio::test]
async fn initialize_with_an_unserved_version_negotiates_2025_11_25_and_the_session_works() {
    let app = spawn().await;
    for requested in ["1999-01-01", "2025-06-18", "2024-11-05"] {
        let r = initialize(&app, &initialize_body(requested)).await;
        assert_eq!(r.status, 200, "{requested}: {}", r.raw);
        assert!(r.body.get("error").is_none(), "{}", r.raw);
        assert_eq!(r.result()["protocolVersion"], LEGACY);
        let session = r.headers.get("mcp-session-id").unwrap().to_str().unwrap();
        let listed = app.legacy(session, "tools/list", json!({})).await;
        assert_eq!(listed.status, 200, "{}", listed.raw);
        assert!(listed.result()["tools"].is_array());
    }
}

#[tokio::test]
async fn initialize_requesting_2026_07_28_without_meta_is_answered_with_2025_11_25() {
    let app = spawn().await;
    let r = initialize(&app, &initialize_body(MODERN)).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.result()["protocolVersion"], LEGACY);
    assert!(r.headers.get("mcp-session-id").is_some());
}

#[tokio::test]
async fn initialize_with_missing_fields_is_invalid_params() {
    let app = spawn().await;
    for missing in ["clientInfo", "capabilities", "protocolVersion"] {
        let mut body = initialize_body(LEGACY);
        body["params"].as_object_mut().unwrap().remove(missing);
        let r = initialize(&app, &body).await;
        assert_eq!(r.status, 400, "{missing}: {}", r.raw);
        assert_eq!(r.error_code(), -32602);
        assert_eq!(r.body["id"], 1);
        assert!(r.headers.get("mcp-session-id").is_none());
    }
}

#[tokio::test]
async fn initialized_notification_with_session_is_202() {
    let app = spawn().await;
    let r = initialize(&app, &initialize_body(LEGACY)).await;
    let session = r.headers.get("mcp-session-id").unwrap().to_str().unwrap();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = app
        .post_raw(
            &[
                ("mcp-session-id", session),
                ("mcp-protocol-version", LEGACY),
            ],
            note.to_string(),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.raw);
    assert!(r.raw.is_empty());
}

#[tokio::test]
async fn notification_with_an_unknown_session_is_404() {
    let app = spawn().await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = app
        .post_raw(&[("mcp-session-id", "no-such-session")], note.to_string())
        .await;
    assert_eq!(r.status, 404, "{}", r.raw);
}

#[tokio::test]
async fn ping_in_session_returns_an_empty_object() {
    let app = spawn().await;
    let session = app.initialize_legacy().await;
    let r = app.legacy(&session, "ping", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.body["id"], 7);
    assert_eq!(r.result(), &json!({}));
    // params may be omitted entirely.
    let body = json!({"jsonrpc": "2.0", "id": "p", "method": "ping"});
    let r = app
        .post_raw(&[("mcp-session-id", &session)], body.to_string())
        .await;
    assert_eq!(r.result(), &json!({}));
}

#[tokio::test]
async fn session_results_have_no_modern_fields() {
    let app = spawn().await;
    let session = app.initialize_legacy().await;

    let r = app.legacy(&session, "tools/list", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_no_modern_fields(r.result());
    assert!(!r.result()["tools"].as_array().unwrap().is_empty());

    let r = app
        .legacy(
            &session,
            "tools/call",
            json!({"name": MANIFEST_TOOL, "arguments": {}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let result = r.result();
    assert_no_modern_fields_but_the_content_version(result);
    assert_eq!(result["isError"], false);
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, result["structuredContent"]);

    let r = app
        .legacy(
            &session,
            "resources/read",
            json!({"uri": "dealeragent://manifest"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_no_modern_fields_but_the_content_version(r.result());
    for (method, params) in [
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
    ] {
        let r = app.legacy(&session, method, params).await;
        assert_eq!(r.status, 200, "{method}: {}", r.raw);
        assert_no_modern_fields(r.result());
    }
}

#[tokio::test]
async fn legacy_and_modern_tool_lists_are_identical() {
    let app = spawn().await;
    let session = app.initialize_legacy().await;
    let legacy = app.legacy(&session, "tools/list", json!({})).await;
    let modern = app.modern("tools/list", json!({})).await;
    assert_eq!(legacy.result()["tools"], modern.result()["tools"]);
}

#[tokio::test]
async fn unknown_resource_in_session_is_32002_with_the_uri() {
    let app = spawn().await;
    let session = app.initialize_legacy().await;
    let uri = "dealeragent://organization/org.nope";
    let r = app
        .legacy(&session, "resources/read", json!({"uri": uri}))
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.error_code(), -32002);
    assert_eq!(r.body["error"]["data"]["uri"], uri);
    assert_eq!(r.body["id"], 7);
}

#[tokio::test]
async fn unknown_tool_in_session_is_invalid_params() {
    let app = spawn().await;
    let session = app.initialize_legacy().await;
    let r = app
        .legacy(&session, "tools/call", json!({"name": "no.such.tool"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.error_code(), -32602);
}

#[tokio::test]
async fn unknown_method_in_session_is_method_not_found() {
    let app = spawn().await;
    let session = app.initialize_legacy().await;
    for method in ["tools/frobnicate", "server/discover", "prompts/frobnicate"] {
        let r = app.legacy(&session, method, json!({})).await;
        assert_eq!(r.status, 200, "{method}: {}", r.raw);
        assert_eq!(r.error_code(), -32601);
        assert_eq!(r.body["id"], 7);
    }
}

#[tokio::test]
async fn request_without_session_is_400_invalid_request() {
    let app = spawn().await;
    for headers in [vec![], vec![("mcp-protocol-version", LEGACY)]] {
        let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
        let r = app.post_raw(&headers, body.to_string()).await;
        assert_eq!(r.status, 400, "{}", r.raw);
        assert_eq!(r.error_code(), -32600);
        assert_eq!(r.body["id"], 3);
    }
}

#[tokio::test]
async fn unknown_session_is_404() {
    let app = spawn().await;
    let r = app
        .legacy("0123456789abcdef", "tools/list", json!({}))
        .await;
    assert_eq!(r.status, 404, "{}", r.raw);
    assert_eq!(r.error_code(), -32600);
    assert_eq!(r.body["id"], 7);
}

#[tokio::test]
async fn mismatched_protocol_version_header_in_session_is_header_mismatch() {
    let app = spawn().await;
    let session = app.initialize_legacy().await;
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"});
    let r = app
        .post_raw(
            &[
                ("mcp-session-id", &session),
                ("mcp-protocol-version", "2025-06-18"),
            ],
            body.to_string(),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.raw);
    assert_eq!(r.error_code(), -32020);
    assert_eq!(r.body["id"], 4);
}

#[tokio::test]
async fn modern_protocol_version_header_in_session_follows_the_modern_ladder() {
    // A 2026-07-28 header selects the modern rules even inside a legacy
    // session; without `_meta` that is -32602, a modern error.
    let app = spawn().await;
    let session = app.initialize_legacy().await;
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"});
    let r = app
        .post_raw(
            &[
                ("mcp-session-id", &session),
                ("mcp-protocol-version", MODERN),
            ],
            body.to_string(),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.raw);
    assert_eq!(r.error_code(), -32602);
}

#[tokio::test]
async fn omitted_protocol_version_in_session_is_served_in_both_modes() {
    for app in [
        spawn().await,
        spawn_with(|s| s.strict_mcp_headers = true).await,
    ] {
        let session = app.initialize_legacy().await;
        let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"});
        let r = app
            .post_raw(&[("mcp-session-id", &session)], body.to_string())
            .await;
        assert_eq!(r.status, 200, "{}", r.raw);
        assert!(r.result()["tools"].is_array());
    }
}

/// A live session's GET is its notification stream (docs/mcp.md
/// "Subscriptions"): SSE, open at once (a first comment) and never cached.
#[tokio::test]
async fn get_with_session_opens_its_notification_stream() {
    let app = spawn().await;
    let session = app.initialize_legacy().await;
    let mut r = app
        .http
        .get(&app.url)
        .header("mcp-session-id", &session)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let header = |name: &str| r.headers()[name].to_str().unwrap().to_owned();
    assert_eq!(header("content-type"), "text/event-stream");
    assert_eq!(header("cache-control"), "no-store");
    let first = tokio::time::timeout(std::time::Duration::from_secs(5), r.chunk())
        .await
        .expect("the stream opens at once")
        .unwrap()
        .unwrap();
    assert!(first.starts_with(b":"), "{first:?}");
}

#[tokio::test]
async fn delete_with_session_ends_it() {
    let app = spawn().await;
    let session = app.initialize_legacy().await;
    let delete = || send(app.http.delete(&app.url).header("mcp-session-id", &session));
    let r = delete().await;
    assert_eq!(r.status, 200, "{}", r.raw);

    let r = app.legacy(&session, "tools/list", json!({})).await;
    assert_eq!(r.status, 404, "POST after DELETE: {}", r.raw);
    let r = delete().await;
    assert_eq!(r.status, 404, "DELETE after DELETE: {}", r.raw);
    let r = send(app.http.get(&app.url).header("mcp-session-id", &session)).await;
    assert_eq!(r.status, 404, "GET after DELETE: {}", r.raw);
}

#[tokio::test]
async fn delete_with_an_unknown_session_is_404() {
    let app = spawn().await;
    let r = send(app.http.delete(&app.url).header("mcp-session-id", "nope")).await;
    assert_eq!(r.status, 404, "{}", r.raw);
}

#[tokio::test]
async fn initialize_with_a_session_header_starts_a_new_session() {
    let app = spawn().await;
    let old = app.initialize_legacy().await;
    let r = app
        .post_raw(
            &[("mcp-session-id", &old)],
            initialize_body(LEGACY).to_string(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_ne!(r.headers.get("mcp-session-id").unwrap(), old.as_str());
}
