//! The `tools/list` of `/mcp` is rendered once (`mcp::rendered::ToolListCache`); these
//! tests hold the cached reply to the per-request construction it replaced,
//! byte for byte in both eras, and to the shape of a `tools/list` result.

use std::net::{IpAddr, Ipv4Addr};

use serde_json::{Value, json};

use super::*;
use crate::auth::Principal;
use crate::config::ServeSettings;

/// A gateway state on the bundled demo in a fresh SQLite store, built as
/// `serve` and `stdio` build theirs.
async fn demo_state() -> Arc<AppState> {
    let dir = std::env::temp_dir().join(format!("dealer-gw-toollist-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("gateway.sqlite").display());
    let settings = ServeSettings::with_listen("127.0.0.1:0".parse().unwrap());
    crate::mcp::stdio::prepare(settings, &url).await.unwrap()
}

/// The reply `tools/list` gets on `/mcp` in `era`, through the dispatcher.
async fn served(state: &Arc<AppState>, era: Era, params: &Value, id: &Value) -> Vec<u8> {
    let call = Call {
        era,
        endpoint: &Endpoint::Dap,
        method: "tools/list",
        params,
        trace_id: "trace.tool-list-test",
    };
    let caller = Caller {
        principal: Principal::Anonymous,
        client_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
    };
    let result = dispatch(state, &call, &caller).await.unwrap();
    decorate(era, result).into_envelope(id)
}

/// The reply as it was built before the cache: the catalog's entries
/// copied into a tree, decorated and serialized for this request.
fn built_per_request(state: &AppState, era: Era, id: &Value) -> Vec<u8> {
    let result = MethodResult {
        body: obj(json!({"tools": tool_list(state)})),
        cache: Some((3_600_000, "public")),
        structured: None,
        code: None,
        rendered: None,
    };
    decorate(era, result).into_envelope(id)
}

#[tokio::test]
async fn cached_tool_list_is_byte_identical_to_the_per_request_one() {
    let state = demo_state().await;
    for era in [Era::Modern, Era::Legacy] {
        for id in [
            json!(1),
            json!("req-\u{e9}\"x"),
            json!(null),
            json!(9_007_199_254_740_993_u64),
        ] {
            for params in [
                json!({}),
                json!({"cursor": null}),
                json!({"_meta": {"a": 1}}),
            ] {
                // Twice: the first renders the cache, the second reads it.
                for _ in 0..2 {
                    let served = served(&state, era, &params, &id).await;
                    let slow = built_per_request(&state, era, &id);
                    assert!(
                        served == slow,
                        "{era:?} {id}: cached tools/list differs from the per-request construction\n{}\n{}",
                        String::from_utf8_lossy(&served),
                        String::from_utf8_lossy(&slow)
                    );
                }
            }
        }
    }
    // One rendering serves every request of the process.
    let first = state.tool_lists.get(&state);
    assert!(Arc::ptr_eq(&first, &state.tool_lists.get(&state)));
}

#[tokio::test]
async fn cached_tool_list_is_a_tools_list_result() {
    let state = demo_state().await;
    let expected: Vec<&str> = state
        .catalog
        .tools
        .iter()
        .filter(|t| tools::registered(&t.name).is_some())
        .filter(|t| !super::super::aap::is_aap_tool(t))
        .map(|t| t.name.as_str())
        .collect();
    assert!(!expected.is_empty());
    for era in [Era::Modern, Era::Legacy] {
        let reply: Value =
            serde_json::from_slice(&served(&state, era, &json!({}), &json!(7)).await).unwrap();
        assert_eq!(reply["jsonrpc"], "2.0");
        assert_eq!(reply["id"], 7);
        let result = reply["result"].as_object().unwrap();
        let tools = result["tools"].as_array().unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, expected, "{era:?}: catalog order, DAP tools only");
        for tool in tools {
            let name = tool["name"].as_str().unwrap();
            assert!(crate::catalog::valid_tool_name(name), "{name}");
            assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
            assert!(tool["outputSchema"].is_object(), "{name}");
            assert!(tool["title"].is_string() && tool["description"].is_string());
            assert!(tool["annotations"].is_object(), "{name}");
            // DAP-CORE-012: the catalog's safety metadata in `_meta`.
            assert!(
                tool["_meta"]["com.dealeragentprotocol/catalog"]["safety"].is_object(),
                "{name}"
            );
        }
        match era {
            Era::Modern => {
                assert_eq!(result["resultType"], "complete");
                assert_eq!(result["ttlMs"], 3_600_000);
                assert_eq!(result["cacheScope"], "public");
                assert_eq!(
                    result["_meta"]["io.modelcontextprotocol/serverInfo"],
                    server_info()
                );
            }
            Era::Legacy => {
                let keys: Vec<&String> = result.keys().collect();
                assert_eq!(keys, ["tools"], "2025-11-25 carries no modern member");
            }
        }
    }
}

/// A cursor is still refused (we never issue one) before the cache is read.
#[tokio::test]
async fn cached_tool_list_still_refuses_a_cursor() {
    let state = demo_state().await;
    let call = Call {
        era: Era::Modern,
        endpoint: &Endpoint::Dap,
        method: "tools/list",
        params: &json!({"cursor": "abc"}),
        trace_id: "trace.tool-list-test",
    };
    let caller = Caller {
        principal: Principal::Anonymous,
        client_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
    };
    assert!(matches!(
        dispatch(&state, &call, &caller).await,
        Err(RpcError::InvalidParams(_))
    ));
}
