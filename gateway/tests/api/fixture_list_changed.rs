//! The conformance fixture's tools/prompts list-changed notices on a
//! `subscriptions/listen` stream (SEP-2575; docs/conformance.md "The MCP
//! conformance fixture"), over real HTTP on the gateway's own MCP stack.
//! Compiled only with the `conformance-fixture` feature:
//! `cargo nextest run -p gateway --features conformance-fixture --test api fixture_list_changed::`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{TestApp, meta, spawn};
use crate::listen_client::{Listen, listen};

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
const WAIT: Duration = Duration::from_secs(5);

async fn open(app: &TestApp, id: i64, notifications: Value) -> Listen {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {"_meta": meta(), "notifications": notifications}});
    listen(&app.http, &app.base(), None, &body)
        .await
        .expect("an event stream")
}

async fn trigger(app: &TestApp, tool: &str) {
    let reply = app
        .modern("tools/call", json!({"name": tool, "arguments": {}}))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    assert_eq!(reply.result()["isError"], false, "{}", reply.raw);
}

#[tokio::test]
async fn trigger_tools_reach_the_listen_streams_that_asked_and_no_other() {
    gateway::fixture::install();
    let app = spawn().await;

    let discover = app.modern("server/discover", json!({})).await;
    let capabilities = &discover.result()["capabilities"];
    assert_eq!(capabilities["tools"]["listChanged"], true);
    assert_eq!(capabilities["prompts"]["listChanged"], true);
    let tools = app.modern("tools/list", json!({})).await;
    let names: Vec<&str> = tools.result()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"test_trigger_tool_change"), "{names:?}");
    assert!(names.contains(&"test_trigger_prompt_change"), "{names:?}");

    let mut tools_stream = open(&app, 51, json!({"toolsListChanged": true})).await;
    let mut prompts_stream = open(&app, 52, json!({"promptsListChanged": true})).await;
    for (stream, id, honored) in [
        (&mut tools_stream, 51, "toolsListChanged"),
        (&mut prompts_stream, 52, "promptsListChanged"),
    ] {
        let (_, ack) = stream.next(WAIT).await.expect("the acknowledgement");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(ack["params"]["notifications"], json!({honored: true}));
        assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], id);
    }

    // The prompt change first: a tools-only stream that leaked it would
    // show it before the tool change.
    trigger(&app, "test_trigger_prompt_change").await;
    trigger(&app, "test_trigger_tool_change").await;

    let (_, first) = tools_stream.next(WAIT).await.expect("a notice");
    assert_eq!(first["method"], "notifications/tools/list_changed");
    assert_eq!(first["params"]["_meta"][SUBSCRIPTION_ID], 51);
    let (_, first) = prompts_stream.next(WAIT).await.expect("a notice");
    assert_eq!(first["method"], "notifications/prompts/list_changed");
    assert_eq!(first["params"]["_meta"][SUBSCRIPTION_ID], 52);
    let leaked = prompts_stream.next(Duration::from_millis(500)).await;
    assert!(leaked.is_none(), "a prompts-only stream got {leaked:?}");
}
