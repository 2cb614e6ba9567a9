//! W3C Trace Context from a client (docs/mcp.md "Trace context",
//! docs/operations.md "Tracing"): a valid `traceparent` in `params._meta`
//! (or the HTTP header) names the request's trace. Its trace-id is the
//! `trace_id` of the access log line, the audit event and every error
//! object, and the upstream availability call carries it in its own
//! `traceparent` (a new span id of ours) with the caller's `tracestate`
//! untouched. An invalid value is ignored: the request keeps a trace of
//! its own and the value is never echoed or logged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use chrono::{Duration, SubsecRound as _, Utc};
use gateway::inventory::model::VehicleRecord;
use gateway::store::Store;
use serde_json::{Value, json};

use crate::common::{
    TestApp, fresh_database, meta, spawn_on, test_source, test_vehicle, tool_error_code,
};

const ORG: &str = "org.avail-motors";
const LIVE: &str = "roof.avail-live";
const VERIFY: &str = "dealeragent.inventory.verify_availability";

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";
const STATE: &str = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";
/// Upper-case hex: not a valid traceparent (W3C Trace Context).
const INVALID: &str = "00-4BF92F3577B34DA6A3CE929D0E0E4799-00F067AA0BA902B7-01";

fn traceparent(trace: &str) -> String {
    format!("00-{trace}-{PARENT}-01")
}

/// The `traceparent` and `tracestate` of one upstream call.
type TraceHeaders = (Option<String>, Option<String>);

/// The trace headers the fake dealer system saw, by VIN.
#[derive(Default)]
struct Seen(Mutex<HashMap<String, TraceHeaders>>);

impl Seen {
    fn of(&self, vin: &str) -> TraceHeaders {
        self.0
            .lock()
            .unwrap()
            .get(vin)
            .cloned()
            .unwrap_or_else(|| panic!("no upstream call for {vin}"))
    }
}

async fn answer(
    State(seen): State<Arc<Seen>>,
    Path(vin): Path<String>,
    headers: HeaderMap,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    seen.0
        .lock()
        .unwrap()
        .insert(vin.clone(), (header("traceparent"), header("tracestate")));
    axum::Json(json!({"vin": vin, "status": "available", "observed_at": Utc::now().to_rfc3339()}))
        .into_response()
}

/// A store with the availability fixture's dealers (their live rooftop
/// asks the fake dealer system this test starts) and eight vehicles on
/// the live rooftop.
async fn fixture() -> (
    Arc<Seen>,
    std::path::PathBuf,
    String,
    Arc<dyn Store>,
    Vec<VehicleRecord>,
) {
    let seen = Arc::new(Seen::default());
    let app = axum::Router::new()
        .route("/avail/{vin}", axum::routing::get(answer))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    let now = Utc::now().trunc_subsecs(0);
    let (dir, url) = fresh_database().await;
    let store = gateway::store::open(&url).await.expect("store opens");
    crate::availability::upsert_fixture_dealers(&*store, port, now).await;
    let live: Vec<VehicleRecord> = (0..8)
        .map(|i| test_vehicle(ORG, LIVE, &format!("veh.{i:03}.t"), "1TRCE", i, now))
        .collect();
    store
        .create_snapshot(ORG, LIVE, &test_source("live.csv", now), &live)
        .await
        .unwrap();
    (seen, dir, url, store, live)
}

fn vin(v: &VehicleRecord) -> &str {
    v.vin.as_deref().unwrap()
}

/// A modern `tools/call` with extra `_meta` members and extra headers.
async fn call(
    app: &TestApp,
    name: &str,
    args: Value,
    extra_meta: &[(&str, &str)],
    extra_headers: &[(&str, &str)],
) -> Value {
    let mut m = meta();
    for (k, v) in extra_meta {
        m[*k] = json!(v);
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": args, "_meta": m}});
    let mut headers = TestApp::modern_headers("tools/call", Some(name));
    headers.extend_from_slice(extra_headers);
    let reply = app.post_raw(&headers, body.to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    reply.result().clone()
}

fn verify_args(v: &VehicleRecord) -> Value {
    json!({"organization_id": ORG, "rooftop_id": LIVE, "vehicle_id": v.vehicle_id})
}

/// `(trace-id, parent-id)` of a traceparent the gateway sent upstream.
fn sent(traceparent: Option<&str>) -> (String, String) {
    let t = traceparent.expect("the upstream call carries a traceparent");
    let parts: Vec<&str> = t.split('-').collect();
    assert_eq!(parts.len(), 4, "{t}");
    assert_eq!(parts[0], "00", "{t}");
    assert_eq!(parts[1].len(), 32, "{t}");
    assert_eq!(parts[2].len(), 16, "{t}");
    (parts[1].to_owned(), parts[2].to_owned())
}

/// The real binary: the client's trace-id in the access log line, the
/// audit event, a tool error and the upstream call; an invalid one is
/// ignored and never logged.
#[tokio::test]
async fn a_client_trace_reaches_the_access_log_the_audit_event_errors_and_the_upstream_call() {
    let (seen, _dir, db, store, live) = fixture().await;
    let since = Utc::now() - Duration::seconds(1);
    let served = crate::cli_ops::serve(
        &db,
        &["--listen", "127.0.0.1:0"],
        &[
            ("DEALER_GATEWAY_LOG", "info"),
            ("DEALER_GATEWAY_LOG_FORMAT", "json"),
        ],
    )
    .await
    .unwrap_or_else(|_| panic!("serve starts"));
    let app = TestApp::attach(&served.base);

    // 1. A valid context in `_meta`.
    let tp = traceparent(TRACE);
    let ok = call(
        &app,
        VERIFY,
        verify_args(&live[0]),
        &[("traceparent", &tp), ("tracestate", STATE)],
        &[],
    )
    .await;
    assert_eq!(ok["isError"], json!(false), "{ok}");
    assert_eq!(ok["structuredContent"]["trace_id"], json!(TRACE), "{ok}");
    let (upstream_tp, upstream_ts) = seen.of(vin(&live[0]));
    let (trace, span) = sent(upstream_tp.as_deref());
    assert_eq!(trace, TRACE);
    assert_ne!(span, PARENT, "the upstream call is a span of ours");
    assert!(span.bytes().any(|b| b != b'0'));
    assert!(upstream_tp.unwrap().ends_with("-01"), "flags kept");
    assert_eq!(upstream_ts.as_deref(), Some(STATE), "tracestate untouched");

    // 2. A tool error names the client's trace.
    let other = "4bf92f3577b34da6a3ce929d0e0e4737";
    let missing = call(
        &app,
        VERIFY,
        json!({"organization_id": ORG, "rooftop_id": LIVE, "vehicle_id": "veh.absent"}),
        &[("traceparent", &traceparent(other))],
        &[],
    )
    .await;
    assert_eq!(
        tool_error_code(&missing).as_deref(),
        Some("dealeragent.resource.not_found"),
        "{missing}"
    );
    assert_eq!(missing["structuredContent"]["trace_id"], json!(other));

    // 3. An invalid context is ignored: a trace of our own, sent upstream
    // without the caller's tracestate.
    let ignored = call(
        &app,
        VERIFY,
        verify_args(&live[1]),
        &[("traceparent", INVALID), ("tracestate", STATE)],
        &[],
    )
    .await;
    let own = ignored["structuredContent"]["trace_id"]
        .as_str()
        .expect("a trace id")
        .to_owned();
    assert!(own.starts_with("trace."), "{ignored}");
    let (upstream_tp, upstream_ts) = seen.of(vin(&live[1]));
    let (trace, _) = sent(upstream_tp.as_deref());
    assert_eq!(trace, own.trim_start_matches("trace.").replace('-', ""));
    assert_eq!(upstream_ts, None);

    // The audit events of the checks carry the same trace ids (an
    // anonymous not-found is counted, not logged one by one).
    let events = store.audit_since(since, 100).await.unwrap();
    let checks: Vec<_> = events.iter().filter(|e| e.tool == VERIFY).collect();
    assert!(
        checks
            .iter()
            .any(|e| e.trace_id == TRACE && e.outcome == "ok"),
        "{events:?}"
    );
    assert!(checks.iter().any(|e| e.trace_id == own), "{events:?}");

    // The access log lines too, with the caller's span id.
    let logged = crate::common::poll_until(StdDuration::from_secs(10), || {
        let logs = served.logs.clone();
        async move {
            let text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
            text.lines()
                .filter(|l| l.contains("dealer_gateway::access"))
                .count()
                >= 3
        }
    })
    .await;
    assert!(logged, "no access lines");
    let text = String::from_utf8_lossy(&served.logs.lock().unwrap()).into_owned();
    let access: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == json!("dealer_gateway::access"))
        .collect();
    let line = |trace: &str| {
        access
            .iter()
            .find(|v| v["fields"]["trace.id"] == json!(trace))
            .unwrap_or_else(|| panic!("no access line for {trace}:\n{text}"))
            .clone()
    };
    assert_eq!(line(TRACE)["fields"]["trace.parent_id"], json!(PARENT));
    assert_eq!(line(TRACE)["fields"]["tool.name"], json!(VERIFY));
    assert_eq!(line(other)["fields"]["trace.parent_id"], json!(PARENT));
    assert_eq!(line(&own)["fields"]["trace.parent_id"], json!("-"));
    let lower_invalid = INVALID.to_ascii_lowercase();
    assert!(
        !text.contains(INVALID)
            && !text.contains(&INVALID[3..35])
            && !text.contains(&lower_invalid[3..35]),
        "an invalid traceparent reached the log:\n{text}"
    );
}

/// The legacy era, the HTTP headers, and `_meta` over the headers.
#[tokio::test]
async fn legacy_sessions_and_http_headers_carry_the_trace_and_meta_wins() {
    let (seen, dir, db, _store, live) = fixture().await;
    let app = spawn_on(dir, db, |_| {}).await;

    // The HTTP headers alone (no `_meta` context).
    let header_trace = "0af7651916cd43dd8448eb211c80319c";
    let by_header = call(
        &app,
        VERIFY,
        verify_args(&live[2]),
        &[],
        &[
            ("traceparent", &traceparent(header_trace)),
            ("tracestate", "congo=t61rcWkgMzE"),
        ],
    )
    .await;
    assert_eq!(
        by_header["structuredContent"]["trace_id"],
        json!(header_trace)
    );
    let (tp, ts) = seen.of(vin(&live[2]));
    assert_eq!(sent(tp.as_deref()).0, header_trace);
    assert_eq!(ts.as_deref(), Some("congo=t61rcWkgMzE"));

    // `_meta` wins over the headers, and its tracestate goes with it.
    let both = call(
        &app,
        VERIFY,
        verify_args(&live[3]),
        &[("traceparent", &traceparent(TRACE))],
        &[
            ("traceparent", &traceparent(header_trace)),
            ("tracestate", "congo=t61rcWkgMzE"),
        ],
    )
    .await;
    assert_eq!(both["structuredContent"]["trace_id"], json!(TRACE));
    let (tp, ts) = seen.of(vin(&live[3]));
    assert_eq!(sent(tp.as_deref()).0, TRACE);
    assert_eq!(ts, None);

    // An invalid `_meta` value falls through to a valid header.
    let fallback = call(
        &app,
        VERIFY,
        verify_args(&live[4]),
        &[(
            "traceparent",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        )],
        &[("traceparent", &traceparent(header_trace))],
    )
    .await;
    assert_eq!(
        fallback["structuredContent"]["trace_id"],
        json!(header_trace)
    );

    // 2025-11-25: `_meta` of a request inside a session.
    let legacy_trace = "11111111111111111111111111111111";
    let session = app.initialize_legacy().await;
    let reply = app
        .legacy(
            &session,
            "tools/call",
            json!({"name": VERIFY, "arguments": verify_args(&live[5]),
                   "_meta": {"traceparent": traceparent(legacy_trace), "tracestate": STATE}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    assert_eq!(
        reply.result()["structuredContent"]["trace_id"],
        json!(legacy_trace),
        "{}",
        reply.raw
    );
    let (tp, ts) = seen.of(vin(&live[5]));
    assert_eq!(sent(tp.as_deref()).0, legacy_trace);
    assert_eq!(ts.as_deref(), Some(STATE));
}

/// The stdio transport: `_meta` is the only carrier there.
#[tokio::test]
async fn stdio_takes_the_trace_from_meta() {
    use std::io::Write as _;
    let db = crate::common::test_database_url(&crate::common::temp_dir()).await;
    let request = |id: i64, traceparent: &str| {
        let mut m = meta();
        m["traceparent"] = json!(traceparent);
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "dealeragent.inventory.get_vehicle",
            "arguments": {"organization_id": crate::security::ORG,
                          "rooftop_id": crate::security::CHICAGO, "vehicle_id": "veh.absent"},
            "_meta": m}})
    };
    let input = format!(
        "{}\n{}\n",
        request(1, &traceparent(TRACE)),
        request(2, INVALID)
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dealer-gateway"))
        .arg("stdio")
        .env("DEALER_GATEWAY_DATABASE_URL", &db)
        .env("DEALER_GATEWAY_LOG", "warn")
        .env_remove("DEALER_GATEWAY_STDIO_TOKEN")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("binary starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().expect("binary runs");
    writer.join().expect("writer");
    assert!(out.status.success(), "{}", crate::common::text(&out));
    let replies: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let trace_of = |id: i64| {
        replies
            .iter()
            .find(|r| r["id"] == json!(id))
            .and_then(|r| r["result"]["structuredContent"]["trace_id"].as_str())
            .unwrap_or_else(|| panic!("no error for {id}: {replies:?}"))
            .to_owned()
    };
    assert_eq!(trace_of(1), TRACE);
    assert!(trace_of(2).starts_with("trace."), "{replies:?}");
}
