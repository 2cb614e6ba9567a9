//! The conformance fixture's MRTR (SEP-2322) and tasks-extension (SEP-2663)
//! surfaces over real HTTP, on the gateway's own MCP stack
//! (docs/conformance.md "The MCP conformance fixture"). Compiled only with
//! the `conformance-fixture` feature:
//! `cargo nextest run -p gateway --features conformance-fixture --test api fixture_mrtr::`.

use serde_json::{Value, json};

use crate::common::{MODERN, Reply, TestApp, meta, spawn};

/// A gateway with the fixture installed, as the fixture binary serves it.
async fn spawn_fixture() -> TestApp {
    gateway::fixture::install();
    spawn().await
}

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A modern request declaring `capabilities`, with the standard headers
/// (`Mcp-Name` = `name` when given).
async fn post(
    app: &TestApp,
    method: &str,
    name: Option<&str>,
    mut params: Value,
    capabilities: Value,
) -> Reply {
    params["_meta"] = meta();
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut headers = vec![
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", MODERN),
        ("mcp-method", method),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    app.post_raw(&headers, body.to_string()).await
}

fn with_tasks() -> Value {
    json!({"elicitation": {}, "extensions": {TASKS: {}}})
}

#[tokio::test]
async fn an_input_required_round_trip_keeps_its_result_type_and_refuses_altered_state() {
    let app = spawn_fixture().await;
    let tool = "test_input_required_result_request_state";
    let caps = json!({"elicitation": {}});
    let r1 = post(
        &app,
        "tools/call",
        Some(tool),
        json!({"name": tool, "arguments": {}}),
        caps.clone(),
    )
    .await;
    assert_eq!(r1.status, 200, "{}", r1.raw);
    let first = r1.result();
    assert_eq!(first["resultType"], "input_required");
    assert_eq!(
        first["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    assert!(first["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());
    let state = first["requestState"].as_str().unwrap().to_owned();
    let answer = json!({"confirm": {"action": "accept", "content": {"ok": true}}});

    let altered = json!({"name": tool, "arguments": {}, "inputResponses": answer, "requestState": format!("{state}-TAMPERED")});
    let refused = post(&app, "tools/call", Some(tool), altered, caps.clone()).await;
    assert_eq!(refused.error_code(), -32602, "{}", refused.raw);
    assert!(!refused.raw.contains("TAMPERED"), "the state is not echoed");

    let retry =
        json!({"name": tool, "arguments": {}, "inputResponses": answer, "requestState": state});
    let done = post(&app, "tools/call", Some(tool), retry, caps.clone()).await;
    assert_eq!(done.result()["resultType"], "complete");
    assert!(
        done.result()["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("state-ok")
    );

    // Without the elicitation capability the tool refuses with -32021.
    let bare = post(
        &app,
        "tools/call",
        Some(tool),
        json!({"name": tool, "arguments": {}}),
        json!({}),
    )
    .await;
    assert_eq!(bare.error_code(), -32021, "{}", bare.raw);
    assert_eq!(bare.status, 400);
    assert_eq!(
        bare.body["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
}

#[tokio::test]
async fn a_task_is_negotiated_per_request_and_routed_by_its_task_id() {
    let app = spawn_fixture().await;
    let discover = post(&app, "server/discover", None, json!({}), json!({})).await;
    let capabilities = &discover.result()["capabilities"];
    assert!(
        capabilities["extensions"][TASKS].is_object(),
        "{}",
        discover.raw
    );
    assert!(capabilities.get("tasks").is_none());

    // Not negotiated: the tasks methods are refused with -32021.
    let gated = post(
        &app,
        "tasks/get",
        Some("t"),
        json!({"taskId": "t"}),
        json!({}),
    )
    .await;
    assert_eq!(gated.error_code(), -32021, "{}", gated.raw);
    assert_eq!(gated.status, 400);
    assert!(gated.body["error"]["data"]["requiredCapabilities"]["extensions"][TASKS].is_object());

    let call = json!({"name": "slow_compute", "arguments": {"seconds": 60}});
    let created = post(&app, "tools/call", Some("slow_compute"), call, with_tasks()).await;
    let created = created.result().clone();
    assert_eq!(created["resultType"], "task");
    assert_eq!(created["status"], "working");
    let id = created["taskId"].as_str().unwrap().to_owned();

    // Mcp-Name must mirror params.taskId on the tasks methods (-32020).
    let mismatch = post(
        &app,
        "tasks/get",
        Some("another-task"),
        json!({"taskId": id}),
        with_tasks(),
    )
    .await;
    assert_eq!(mismatch.status, 400, "{}", mismatch.raw);
    assert_eq!(mismatch.error_code(), -32020);

    let got = post(
        &app,
        "tasks/get",
        Some(&id),
        json!({"taskId": id}),
        with_tasks(),
    )
    .await;
    assert_eq!(got.result()["taskId"], id.as_str());
    assert_eq!(got.result()["resultType"], "complete");

    let ack = post(
        &app,
        "tasks/cancel",
        Some(&id),
        json!({"taskId": id}),
        with_tasks(),
    )
    .await;
    assert_eq!(ack.result()["resultType"], "complete");
    assert!(ack.result().get("status").is_none());
    let after = post(
        &app,
        "tasks/get",
        Some(&id),
        json!({"taskId": id}),
        with_tasks(),
    )
    .await;
    assert_eq!(after.result()["status"], "cancelled");

    // Removed in v2: still unknown methods.
    let removed = post(&app, "tasks/list", None, json!({}), with_tasks()).await;
    assert_eq!(removed.error_code(), -32601, "{}", removed.raw);
}

/// The tool names of a `tools/list` reply.
fn tool_names(listed: &Reply) -> Vec<&str> {
    listed.result()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect()
}

#[tokio::test]
async fn the_2025_11_25_era_neither_lists_nor_serves_them() {
    let app = spawn_fixture().await;
    // 2026-07-28 lists them (and the prompt) ...
    let modern = app.modern("tools/list", json!({})).await;
    let modern_names = tool_names(&modern);
    for present in [
        "test_input_required_result_elicitation",
        "slow_compute",
        "greet",
        "test_tool_with_task",
    ] {
        assert!(
            modern_names.contains(&present),
            "{present} missing on 2026-07-28"
        );
    }
    let prompts = app.modern("prompts/list", json!({})).await;
    assert!(
        prompts.raw.contains("test_input_required_result_prompt"),
        "{}",
        prompts.raw
    );
    // ... 2025-11-25 does not.
    let session = app.initialize_legacy().await;
    let listed = app.legacy(&session, "tools/list", json!({})).await;
    let names = tool_names(&listed);
    for absent in [
        "test_input_required_result_elicitation",
        "slow_compute",
        "greet",
    ] {
        assert!(!names.contains(&absent), "{absent} listed on 2025-11-25");
    }
    let call = app
        .legacy(
            &session,
            "tools/call",
            json!({"name": "test_input_required_result_elicitation", "arguments": {}}),
        )
        .await;
    assert!(!call.raw.contains("input_required"), "{}", call.raw);
}
