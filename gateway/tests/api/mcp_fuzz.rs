//! Robustness over real HTTP: random bytes, random JSON and random
//! JSON-RPC-shaped messages with random headers never get a 5xx (nor a
//! panic), and every body is JSON or empty.

use crate::common;

use crate::common::{MODERN, TestApp, spawn};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};

/// One runtime and one server for all cases of a test; the server keeps
/// running between `block_on` calls on the multi-threaded runtime.
struct Harness {
    rt: tokio::runtime::Runtime,
    app: TestApp,
}

impl Harness {
    fn new() -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let app = rt.block_on(spawn());
        Self { rt, app }
    }

    fn check(&self, headers: &[(String, String)], body: Vec<u8>) -> Result<(), TestCaseError> {
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let r = self.rt.block_on(self.app.post_raw(&headers, body));
        prop_assert!(r.status < 500, "status {} for body {}", r.status, r.raw);
        if r.raw.is_empty() {
            prop_assert!(
                matches!(r.status, 202 | 405),
                "empty body with status {}",
                r.status
            );
        } else {
            prop_assert!(
                serde_json::from_str::<Value>(&r.raw).is_ok(),
                "not JSON ({}): {}",
                r.status,
                r.raw
            );
        }
        Ok(())
    }
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        (-1.0e6..1.0e6f64).prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("dealeragent://manifest"),
            Just("dealeragent.discovery.get_manifest"),
            Just("dealeragent.dealer.get"),
            Just("org.maplecrest-motor-group"),
            Just(MODERN),
            Just("2025-11-25"),
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_$]{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        prop_oneof![
            Just("server/discover"),
            Just("tools/list"),
            Just("tools/call"),
            Just("resources/list"),
            Just("resources/read"),
            Just("resources/templates/list"),
            Just("initialize"),
            Just("ping"),
            Just("notifications/initialized"),
            Just("logging/setLevel"),
        ]
        .prop_map(str::to_owned),
        ".{0,16}",
    ]
}

fn meta() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(common::meta())),
        json_value().prop_map(Some),
        (".{0,10}", json_value()).prop_map(|(v, caps)| Some(json!({
            "io.modelcontextprotocol/protocolVersion": v,
            "io.modelcontextprotocol/clientCapabilities": caps,
        }))),
    ]
}

fn params() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        json_value().prop_map(Some),
        (
            prop::option::of(json_value()),
            prop::option::of(json_value()),
            prop::option::of(json_value()),
            meta()
        )
            .prop_map(|(name, uri, arguments, meta)| {
                let mut p = Map::new();
                for (k, v) in [
                    ("name", name),
                    ("uri", uri),
                    ("arguments", arguments),
                    ("_meta", meta),
                ] {
                    if let Some(v) = v {
                        p.insert(k.into(), v);
                    }
                }
                Some(Value::Object(p))
            }),
    ]
}

fn id() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        any::<i64>().prop_map(|n| Some(json!(n))),
        ".{0,8}".prop_map(|s| Some(json!(s))),
        json_value().prop_map(Some),
    ]
}

fn header_value() -> impl Strategy<Value = String> {
    // Visible ASCII and spaces only: what an HTTP client will send.
    prop_oneof![
        Just(MODERN.to_owned()),
        Just("2025-11-25".to_owned()),
        Just("tools/call".to_owned()),
        Just("=?base64?ZGVhbGVyYWdlbnQ=?=".to_owned()),
        "[ -~]{0,20}".prop_map(|s| s.trim().to_owned()),
    ]
}

fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
    let name = prop_oneof![
        Just("mcp-protocol-version"),
        Just("mcp-method"),
        Just("mcp-name"),
        Just("mcp-session-id"),
        Just("accept"),
        Just("content-type"),
        Just("origin"),
    ];
    prop::collection::vec((name, header_value()), 0..4)
        .prop_map(|v| v.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

fn rpc_message() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            Just(Some(json!("2.0"))),
            Just(None),
            json_value().prop_map(Some)
        ],
        id(),
        prop::option::of(method()),
        params(),
        prop::option::of(json_value()),
    )
        .prop_map(|(jsonrpc, id, method, params, result)| {
            let mut m = Map::new();
            for (k, v) in [
                ("jsonrpc", jsonrpc),
                ("id", id),
                ("method", method.map(Value::String)),
                ("params", params),
                ("result", result),
            ] {
                if let Some(v) = v {
                    m.insert(k.into(), v);
                }
            }
            Value::Object(m)
        })
}

#[test]
fn random_bytes_never_get_a_server_error() {
    let h = Harness::new();
    runner(64)
        .run(
            &(headers(), prop::collection::vec(any::<u8>(), 0..256)),
            |(headers, body)| h.check(&headers, body),
        )
        .unwrap();
}

#[test]
fn random_json_values_never_get_a_server_error() {
    let h = Harness::new();
    runner(64)
        .run(&(headers(), json_value()), |(headers, body)| {
            h.check(&headers, body.to_string().into_bytes())
        })
        .unwrap();
}

#[test]
fn random_json_rpc_messages_never_get_a_server_error() {
    let h = Harness::new();
    runner(160)
        .run(&(headers(), rpc_message()), |(headers, body)| {
            h.check(&headers, body.to_string().into_bytes())
        })
        .unwrap();
}

#[test]
fn random_well_formed_modern_requests_never_get_a_server_error() {
    // Valid envelope and `_meta`, correct headers: only method and params
    // vary, so the calls reach dispatch, tools and resources.
    let h = Harness::new();
    let strategy = (method(), params(), json_value());
    runner(120)
        .run(&strategy, |(method, params, arguments)| {
            let mut p = match params {
                Some(Value::Object(m)) => Value::Object(m),
                _ => json!({}),
            };
            if method == "tools/call" && p.get("arguments").is_none() {
                p["arguments"] = arguments;
            }
            let body = common::modern_body(1, &method, p);
            let headers = vec![
                ("accept".to_owned(), "application/json".to_owned()),
                ("mcp-protocol-version".to_owned(), MODERN.to_owned()),
            ];
            h.check(&headers, body.to_string().into_bytes())
        })
        .unwrap();
}
