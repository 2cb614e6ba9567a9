//! Metrics and the access log (docs/operations.md "Metrics" and "Logs"),
//! over real HTTP.
//!
//! `/metrics` is scraped and parsed as Prometheus text exposition (every
//! line must parse; a malformed one fails the test), then checked against
//! the calls the test made: counts by method, tool and outcome, the
//! latency histogram, snapshot age against the SLA per rooftop, cursor
//! refusals, build info. The credential rules of the main listener and
//! the separate `--metrics-listen` address are checked too. The access log
//! is read from the real binary's stderr, one JSON line per request.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use gateway::auth::api_token::{self, TokenRequest};
use gateway::store::RooftopScope;
use serde_json::{Value, json};

use crate::common::{TestApp, spawn, spawn_with, temp_dir, test_database_url};

const ORG: &str = "org.lakeshore-auto-group";
const CHICAGO: &str = "roof.lakeshore-chicago";
const METRICS_SCOPE: &str = "dealergateway:metrics:read";
const SEARCH: &str = "dealeragent.inventory.search";

/// One sample: metric name, labels, value.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parses the Prometheus text format strictly: `# HELP`/`# TYPE` comments,
/// blank lines, and `name{label="value",...} value` samples. Any other
/// line is an error naming it.
fn parse_exposition(text: &str) -> Result<Vec<Sample>, String> {
    let mut samples = Vec::new();
    let mut typed = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let bad = |why: &str| format!("line {}: {why}: {line:?}", n + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut words = rest.splitn(3, ' ');
            match (words.next(), words.next(), words.next()) {
                (Some("HELP"), Some(_), _) => {}
                (Some("TYPE"), Some(name), Some(kind)) => {
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                        return Err(bad("unknown TYPE"));
                    }
                    typed.insert(name.to_owned(), kind.to_owned());
                }
                _ => return Err(bad("a comment that is neither HELP nor TYPE")),
            }
            continue;
        }
        let name_end = line
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .ok_or_else(|| bad("no value"))?;
        let name = &line[..name_end];
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(bad("bad metric name"));
        }
        let mut rest = &line[name_end..];
        let mut labels = BTreeMap::new();
        if let Some(inner) = rest.strip_prefix('{') {
            let mut chars = inner.char_indices().peekable();
            let end;
            loop {
                // label name
                let start = match chars.peek() {
                    Some((_, '}')) => {
                        end = chars.next().map(|(i, _)| i);
                        break;
                    }
                    Some((i, _)) => *i,
                    None => return Err(bad("unterminated labels")),
                };
                let eq = inner[start..]
                    .find('=')
                    .ok_or_else(|| bad("label without ="))?
                    + start;
                let label = &inner[start..eq];
                if label.is_empty() || !label.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    return Err(bad("bad label name"));
                }
                while chars.peek().is_some_and(|(i, _)| *i <= eq) {
                    chars.next();
                }
                if chars.next().map(|(_, c)| c) != Some('"') {
                    return Err(bad("label value not quoted"));
                }
                let mut value = String::new();
                loop {
                    match chars.next() {
                        Some((_, '\\')) => match chars.next() {
                            Some((_, 'n')) => value.push('\n'),
                            Some((_, '\\')) => value.push('\\'),
                            Some((_, '"')) => value.push('"'),
                            _ => return Err(bad("bad escape in a label value")),
                        },
                        Some((_, '"')) => break,
                        Some((_, c)) => value.push(c),
                        None => return Err(bad("unterminated label value")),
                    }
                }
                labels.insert(label.to_owned(), value);
                match chars.next() {
                    Some((_, ',')) => {}
                    Some((i, '}')) => {
                        end = Some(i);
                        break;
                    }
                    _ => return Err(bad("expected , or } after a label")),
                }
            }
            let end = end.ok_or_else(|| bad("unterminated labels"))?;
            rest = &inner[end + 1..];
        }
        let value_text = rest
            .strip_prefix(' ')
            .ok_or_else(|| bad("no space before the value"))?;
        let value_text = value_text.split(' ').next().unwrap_or("");
        let value = match value_text {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            v => v.parse::<f64>().map_err(|_| bad("value is not a number"))?,
        };
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .filter(|f| typed.contains_key(*f))
            .unwrap_or(name);
        if !typed.contains_key(family) {
            return Err(bad("a sample without a TYPE line"));
        }
        samples.push(Sample {
            name: name.to_owned(),
            labels,
            value,
        });
    }
    Ok(samples)
}

/// The value of the one sample named `name` whose labels include `want`.
fn value(samples: &[Sample], name: &str, want: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.name == name
                && want
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
}

async fn metrics_token(app: &TestApp, scopes: &[&str]) -> String {
    let store = gateway::store::open(&app.database_url)
        .await
        .expect("store");
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let known = api_token::known_scopes(&catalog);
    let now = Utc::now();
    let request = TokenRequest {
        subject: "ops:prometheus".to_owned(),
        organization_id: ORG.to_owned(),
        rooftops: RooftopScope::Rooftops([CHICAGO.to_owned()].into()),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        purpose: "metrics test".to_owned(),
        expires_at: now + TimeDelta::days(1),
    };
    api_token::create(store.as_ref(), &request, &known, now)
        .await
        .expect("token created")
        .token
}

async fn scrape(app: &TestApp, token: &str) -> (String, Vec<Sample>) {
    let response = app
        .http
        .get(format!("{}/metrics", app.base()))
        .bearer_auth(token)
        .send()
        .await
        .expect("scrape");
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4"),
        "{:?}",
        response.headers()
    );
    let text = response.text().await.expect("body");
    let samples = parse_exposition(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    (text, samples)
}

#[tokio::test]
async fn the_main_listener_serves_metrics_only_to_a_grant_with_the_metrics_scope() {
    let app = spawn().await;
    let url = format!("{}/metrics", app.base());
    let anonymous = app.http.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let challenge = anonymous.headers()["www-authenticate"].to_str().unwrap();
    assert!(challenge.contains(METRICS_SCOPE), "{challenge}");
    assert!(anonymous.text().await.unwrap().contains(METRICS_SCOPE));

    let without = metrics_token(&app, &["dealeragent:inventory:read"]).await;
    let refused = app
        .http
        .get(&url)
        .bearer_auth(&without)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let forged = app
        .http
        .get(&url)
        .bearer_auth("dgw_not-a-real-token")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 401);

    let with = metrics_token(&app, &[METRICS_SCOPE]).await;
    let (text, samples) = scrape(&app, &with).await;
    assert_eq!(
        value(
            &samples,
            "dealer_gateway_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        Some(1.0),
        "{text}"
    );
    // Never a credential in the exposition.
    assert!(!text.contains(&with) && !text.contains(&without), "{text}");

    // An authenticated call without the tool's scope is refused, and
    // audited one by one like every authenticated call: counted as written.
    let bearer = format!("Bearer {with}");
    let body = crate::common::modern_body(
        7,
        "tools/call",
        json!({"name": SEARCH, "arguments": {"organization_id": ORG}}),
    );
    let mut headers = TestApp::modern_headers("tools/call", Some(SEARCH));
    headers.push(("authorization", bearer.as_str()));
    let refused = app.post_raw(&headers, body.to_string()).await;
    assert_eq!(
        refused.result()["structuredContent"]["code"],
        json!("dealeragent.scope.insufficient"),
        "{}",
        refused.raw
    );
    let (text, samples) = scrape(&app, &with).await;
    assert!(
        value(
            &samples,
            "dealer_gateway_audit_events_total",
            &[("kind", "event"), ("result", "written")]
        )
        .is_some_and(|v| v >= 1.0),
        "{text}"
    );
    assert_eq!(
        value(
            &samples,
            "dealer_gateway_audit_events_total",
            &[("result", "dropped")]
        ),
        None,
        "{text}"
    );
}

#[tokio::test]
async fn a_scrape_counts_calls_by_tool_and_outcome_and_reports_each_rooftop_against_its_sla() {
    let app = spawn().await;
    let token = metrics_token(&app, &[METRICS_SCOPE]).await;
    let (_, before) = scrape(&app, &token).await;
    let ok_labels = [
        ("method", "tools/call"),
        ("tool", SEARCH),
        ("outcome", "ok"),
    ];
    let not_found_labels = [
        ("method", "tools/call"),
        ("tool", SEARCH),
        ("outcome", "dealeragent.resource.not_found"),
    ];
    let ok_before = value(&before, "dealer_gateway_requests_total", &ok_labels).unwrap_or(0.0);

    for _ in 0..3 {
        let r = app
            .call_tool(
                SEARCH,
                json!({"organization_id": ORG, "page": {"limit": 2}}),
            )
            .await;
        assert_eq!(r["isError"], json!(false), "{r}");
    }
    let absent = app
        .call_tool(
            SEARCH,
            json!({"organization_id": ORG, "rooftop_ids": ["roof.lakeshore-does-not-exist"]}),
        )
        .await;
    assert_eq!(absent["isError"], json!(true), "{absent}");
    // A tool name no catalog has is a protocol error and is not echoed.
    let unknown = app
        .modern(
            "tools/call",
            json!({"name": "evil.tool.\"name", "arguments": {}}),
        )
        .await;
    assert_eq!(unknown.error_code(), -32602, "{}", unknown.raw);
    // A forged cursor is refused and counted by reason.
    let forged = app
        .call_tool(
            SEARCH,
            json!({"organization_id": ORG, "page": {"cursor": "AAAA.BBBB"}}),
        )
        .await;
    assert_eq!(forged["isError"], json!(true), "{forged}");

    let (text, after) = scrape(&app, &token).await;
    let ok_after = value(&after, "dealer_gateway_requests_total", &ok_labels).unwrap_or(0.0);
    assert_eq!(ok_after - ok_before, 3.0, "{text}");
    assert_eq!(
        value(&after, "dealer_gateway_requests_total", &not_found_labels),
        Some(1.0),
        "{text}"
    );
    assert!(
        !text.contains("evil.tool"),
        "an unknown tool name was echoed:\n{text}"
    );
    assert_eq!(
        value(
            &after,
            "dealer_gateway_requests_total",
            &[
                ("method", "tools/call"),
                ("tool", ""),
                ("outcome", "jsonrpc.-32602")
            ]
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        value(
            &after,
            "dealer_gateway_cursor_refusals_total",
            &[("reason", "malformed")]
        )
        .or_else(|| value(
            &after,
            "dealer_gateway_cursor_refusals_total",
            &[("reason", "bad_signature")]
        ))
        .is_some_and(|v| v >= 1.0),
        "{text}"
    );
    // The latency histogram: every search (ok, not found, bad cursor) in
    // the +Inf bucket, and the count agrees.
    let inf = value(
        &after,
        "dealer_gateway_tool_duration_seconds_bucket",
        &[("tool", SEARCH), ("le", "+Inf")],
    )
    .expect("a +Inf bucket");
    let count = value(
        &after,
        "dealer_gateway_tool_duration_seconds_count",
        &[("tool", SEARCH)],
    )
    .expect("a count");
    assert_eq!(inf, count, "{text}");
    assert!(count >= 5.0, "{text}");

    // Every demo rooftop: its SLA and the age of its snapshot, with the
    // organization and rooftop ids as the only tenant labels.
    let rooftop = [("organization_id", ORG), ("rooftop_id", CHICAGO)];
    let sla = value(&after, "dealer_gateway_snapshot_sla_seconds", &rooftop).expect("sla");
    let age = value(&after, "dealer_gateway_snapshot_age_seconds", &rooftop).expect("age");
    assert!(sla > 0.0 && age >= 0.0, "{text}");
    assert!(
        value(&after, "dealer_gateway_snapshot_vehicles", &rooftop).is_some_and(|v| v > 0.0),
        "{text}"
    );
    let tenant_labels = ["organization_id", "rooftop_id"];
    for sample in &after {
        for label in sample.labels.keys() {
            assert!(
                [
                    "method", "tool", "outcome", "le", "version", "reason", "limit", "status",
                    "kind", "result", "source"
                ]
                .contains(&label.as_str())
                    || tenant_labels.contains(&label.as_str()),
                "unexpected label {label} on {}",
                sample.name
            );
        }
    }
    assert_eq!(
        value(&after, "dealer_gateway_scrape_error", &[]),
        Some(0.0),
        "{text}"
    );
}

#[tokio::test]
async fn metrics_listen_serves_metrics_without_a_credential_and_the_main_path_is_gone() {
    let app = spawn_with(|s| s.metrics_listen = Some("127.0.0.1:0".parse().unwrap())).await;
    let metrics = app.metrics_addr.expect("a metrics address");
    assert_ne!(metrics, app.addr);
    let main = app
        .http
        .get(format!("{}/metrics", app.base()))
        .send()
        .await
        .unwrap();
    assert_eq!(main.status(), 404);
    let r = app
        .call_tool(
            SEARCH,
            json!({"organization_id": ORG, "page": {"limit": 1}}),
        )
        .await;
    assert_eq!(r["isError"], json!(false), "{r}");
    let response = app
        .http
        .get(format!("http://{metrics}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    let samples = parse_exposition(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(
        value(
            &samples,
            "dealer_gateway_requests_total",
            &[("tool", SEARCH), ("outcome", "ok")]
        )
        .is_some_and(|v| v >= 1.0),
        "{text}"
    );
    // Only /metrics lives there.
    let other = app
        .http
        .get(format!("http://{metrics}/mcp"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);
}

#[test]
fn the_parser_refuses_malformed_exposition() {
    for bad in [
        "metric_without_type 1",
        "# TYPE m counter\nm{a=\"1\" 1",
        "# TYPE m counter\nm{a=1} 1",
        "# TYPE m counter\nm one",
        "# NOTE m x",
    ] {
        assert!(parse_exposition(bad).is_err(), "{bad:?} parsed");
    }
    let good = "# HELP m x\n# TYPE m counter\nm{a=\"q\\\"x\",b=\"\"} 2\n";
    let samples = parse_exposition(good).unwrap();
    assert_eq!(samples[0].labels["a"], "q\"x");
    assert_eq!(samples[0].value, 2.0);
}

/// The access log, from the real binary: one JSON line per request with
/// method, tool, outcome, status, duration, principal and trace id; never
/// the token or the query string.
#[tokio::test]
async fn every_request_writes_one_access_line_with_its_outcome_and_never_a_credential() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
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
    let r = app
        .call_tool(
            SEARCH,
            json!({"organization_id": ORG, "page": {"limit": 1}}),
        )
        .await;
    assert_eq!(r["isError"], json!(false), "{r}");
    let trace = r["structuredContent"]["trace_id"]
        .as_str()
        .map(str::to_owned);
    let absent = app
        .call_tool(
            "dealeragent.inventory.get_vehicle",
            json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": "veh.absent"}),
        )
        .await;
    assert_eq!(absent["isError"], json!(true), "{absent}");
    let absent_trace = absent["structuredContent"]["trace_id"]
        .as_str()
        .expect("an error names its trace")
        .to_owned();
    // A refused credential in the query string: 401, and the secret is
    // not logged.
    let secret = "dgw_secret-token-in-the-query";
    let refused = app
        .http
        .post(format!("{}/mcp?access_token={secret}", served.base))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert!(refused.status().is_client_error());

    let lines = crate::common::poll_until(Duration::from_secs(10), || {
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
    assert!(lines, "no access lines");
    let text = String::from_utf8_lossy(&served.logs.lock().unwrap()).into_owned();
    assert!(
        !text.contains(secret),
        "a credential reached the log:\n{text}"
    );
    let access: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == json!("dealer_gateway::access"))
        .collect();
    let field = |v: &Value, k: &str| v["fields"][k].clone();
    let search = access
        .iter()
        .find(|v| field(v, "tool.name") == json!(SEARCH))
        .unwrap_or_else(|| panic!("no search line:\n{text}"));
    assert_eq!(search["level"], json!("INFO"), "{search}");
    assert_eq!(field(search, "rpc.method"), json!("tools/call"), "{search}");
    assert_eq!(field(search, "outcome"), json!("ok"), "{search}");
    assert_eq!(field(search, "http.status"), json!(200), "{search}");
    assert_eq!(field(search, "principal"), json!("anonymous"), "{search}");
    assert!(
        field(search, "duration_us")
            .as_u64()
            .is_some_and(|d| d > 0 && d < 60_000_000),
        "{search}"
    );
    if let Some(trace) = trace {
        assert_eq!(field(search, "trace.id"), json!(trace), "{search}");
    }
    let not_found = access
        .iter()
        .find(|v| field(v, "trace.id") == json!(absent_trace))
        .unwrap_or_else(|| panic!("no line for trace {absent_trace}:\n{text}"));
    assert_eq!(
        field(not_found, "outcome"),
        json!("dealeragent.resource.not_found"),
        "{not_found}"
    );
    assert_eq!(
        field(not_found, "tool.name"),
        json!("dealeragent.inventory.get_vehicle")
    );
    let refusal = access
        .iter()
        .find(|v| field(v, "http.status").as_u64().is_some_and(|s| s >= 400))
        .unwrap_or_else(|| panic!("no refusal line:\n{text}"));
    assert_eq!(field(refusal, "http.path"), json!("/mcp"), "{refusal}");
    assert_eq!(field(refusal, "rpc.method"), json!("-"), "{refusal}");
}
