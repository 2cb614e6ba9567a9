//! The suite must be able to fail: a small proxy in front of the real
//! gateway breaks exactly one requirement per variant, and the suite fails
//! by the named check, which passes against the gateway without the fault.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use conformance::run::run_suite;
use serde_json::{Value, json};

const USED_DETAILS: &str = "dealeragent.inventory.get_used_vehicle_details";
const VERIFY: &str = "dealeragent.inventory.verify_availability";
const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The request headers the redaction check puts canaries in.
const CANARY_HEADERS: [&str; 4] = [
    "authorization",
    "mcp-name",
    "mcp-method",
    "mcp-protocol-version",
];

/// The one requirement a proxy breaks.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Anonymous calls about the partner rooftop are sent with the partner
    /// token: a foreign vehicle leaks.
    LeakPartner,
    /// get_vehicle answers that say stale are rewritten to current.
    UpgradeStale,
    /// Unknown government charges gain a zero total.
    UnknownAsZero,
    /// Error messages repeat the raw arguments.
    EchoArguments,
    /// Requests carrying a cursor lose their Authorization header, so a
    /// cursor is accepted under another caller.
    CursorAnyCaller,
    /// A search page's aggregate freshness describes only its own
    /// vehicles (a defect the gateway once had; DAP 6.4).
    PageOnlyFreshness,
    /// Used-vehicle disclosures lose their discrepancies: conflicting
    /// history collapsed to whatever the reports say.
    CollapseConflict,
    /// A history report that may not be shared gains a favorable summary.
    UnauthorizedSummary,
    /// A real vehicle without a used-vehicle disclosure (a new one) answers
    /// another error than an absent one: its existence shows.
    RevealExisting,
    /// The disclosure lint says `pass` overall and for every rule, whatever
    /// the engine says on the facts it reports.
    LintSaysPass,
    /// verify_availability results lose `availability.valid_until`.
    VerifyWithoutValidUntil,
    /// Permitted: every verify_availability result becomes the structured
    /// error `dealeragent.vehicle.stale` (DAP 0.1 section 8).
    VerifyStale,
    /// Permitted: the first this-many verify_availability results become
    /// `dealeragent.vehicle.stale`; later ones are answered.
    VerifyStaleFirst(usize),
    /// Permitted: error results' text block is prose, not the JSON of
    /// structuredContent (a SHOULD of MCP, a MAY of DAP).
    ProseErrorText,
    /// Tool results lose structuredContent.
    NoStructuredContent,
    /// Permitted: a response that issues no Mcp-Session-Id does not expose
    /// it to browsers.
    StatelessExposesNoSession,
    /// No response exposes Mcp-Session-Id, also the legacy initialize
    /// that issues one.
    SessionIdHidden,
    /// A 2026-07-28 request whose `_meta` lacks clientInfo is refused
    /// (-32602), as if clientInfo were required.
    RequireClientInfo,
    /// Responses repeat the request's MCP and Authorization headers in a
    /// debugging header.
    EchoHeaders,
    /// Permitted: canary header values are replaced with working ones
    /// before the gateway sees them, so the gateway serves the request.
    AcceptCanaryHeaders,
}

struct Proxy {
    fault: Fault,
    /// verify_availability results seen so far.
    verifications: AtomicUsize,
    upstream: String,
    partner_rooftop: String,
    partner_token: String,
    http: reqwest::Client,
}

/// Apply `edit` to a tool result's structuredContent and keep its text
/// block equal to it.
fn edit_tool_result(body: &mut Value, edit: impl FnOnce(&mut Value)) {
    let Some(result) = body.get_mut("result") else {
        return;
    };
    let Some(sc) = result.get_mut("structuredContent") else {
        return;
    };
    edit(sc);
    let text = sc.to_string();
    if let Some(block) = result
        .get_mut("content")
        .and_then(Value::as_array_mut)
        .and_then(|c| c.first_mut())
    {
        block["text"] = Value::String(text);
    }
}

/// A DAP error object standing in for a tool result (valid against the
/// DAP error schema).
fn stale_error() -> Value {
    json!({
        "error_id": format!("err.proxy.{}", uuid::Uuid::new_v4().simple()),
        "code": "dealeragent.vehicle.stale",
        "message": "Fresh availability is required before this vehicle can be verified.",
        "retryable": true,
        "retry_after_ms": 1000,
        "trace_id": format!("trace.proxy.{}", uuid::Uuid::new_v4().simple()),
        "created_at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    })
}

/// A tool result that succeeded becomes the isError result `error`.
fn into_tool_error(body: &mut Value, error: Value) {
    let Some(result) = body.get_mut("result") else {
        return;
    };
    if result["isError"] == true || !result["structuredContent"].is_object() {
        return;
    }
    result["isError"] = json!(true);
    result["content"] = json!([{"type": "text", "text": error.to_string()}]);
    result["structuredContent"] = error;
}

/// Whether `name` lists `header` (a comma-separated header list).
fn lists(value: &str, header: &str) -> bool {
    value
        .split(',')
        .any(|h| h.trim().eq_ignore_ascii_case(header))
}

/// `value` without `header` (a comma-separated header list).
fn without(value: &str, header: &str) -> String {
    value
        .split(',')
        .map(str::trim)
        .filter(|h| !h.eq_ignore_ascii_case(header))
        .collect::<Vec<_>>()
        .join(", ")
}

async fn forward(
    State(p): State<Arc<Proxy>>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let tool = request["params"]["name"].as_str().unwrap_or("").to_owned();
    let args = request["params"]["arguments"].clone();
    let mut out = HeaderMap::new();
    for (k, v) in &headers {
        if !matches!(k.as_str(), "host" | "content-length") {
            out.insert(k.clone(), v.clone());
        }
    }
    match p.fault {
        Fault::LeakPartner => {
            let about_partner = args["rooftop_id"] == p.partner_rooftop.as_str()
                || args["rooftop_ids"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|x| x == p.partner_rooftop.as_str()));
            if about_partner && !out.contains_key("authorization") {
                let bearer = format!("Bearer {}", p.partner_token);
                out.insert(
                    "authorization",
                    HeaderValue::from_str(&bearer).expect("header"),
                );
            }
        }
        Fault::CursorAnyCaller => {
            if args["page"]["cursor"].is_string() {
                out.remove("authorization");
            }
        }
        Fault::RequireClientInfo => {
            let meta = &request["params"]["_meta"];
            if meta.is_object() && meta.get(CLIENT_INFO).is_none() {
                let refusal = json!({"jsonrpc": "2.0", "id": request["id"], "error": {
                    "code": -32602, "message": "clientInfo is required"}});
                return (
                    StatusCode::BAD_REQUEST,
                    [("content-type", "application/json")],
                    refusal.to_string(),
                )
                    .into_response();
            }
        }
        Fault::AcceptCanaryHeaders => {
            let canary = |name: &str| {
                headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|v| v.contains("canary-"))
            };
            if canary("authorization") {
                out.remove("authorization");
            }
            let body_method = request["method"].as_str().unwrap_or("").to_owned();
            for (name, value) in [
                ("mcp-name", tool.clone()),
                ("mcp-method", body_method),
                ("mcp-protocol-version", "2026-07-28".to_owned()),
            ] {
                if canary(name) {
                    out.insert(name, HeaderValue::from_str(&value).expect("header"));
                }
            }
        }
        Fault::UpgradeStale
        | Fault::UnknownAsZero
        | Fault::EchoArguments
        | Fault::PageOnlyFreshness
        | Fault::CollapseConflict
        | Fault::UnauthorizedSummary
        | Fault::RevealExisting
        | Fault::LintSaysPass
        | Fault::VerifyWithoutValidUntil
        | Fault::VerifyStale
        | Fault::VerifyStaleFirst(_)
        | Fault::ProseErrorText
        | Fault::NoStructuredContent
        | Fault::StatelessExposesNoSession
        | Fault::SessionIdHidden
        | Fault::EchoHeaders => {}
    }
    let answer = match p
        .http
        .request(method, &p.upstream)
        .headers(out)
        .body(body)
        .send()
        .await
    {
        Ok(a) => a,
        Err(e) => return (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut back = HeaderMap::new();
    for (k, v) in answer.headers() {
        if !matches!(k.as_str(), "content-length" | "transfer-encoding") {
            back.insert(k.clone(), v.clone());
        }
    }
    match p.fault {
        Fault::StatelessExposesNoSession | Fault::SessionIdHidden => {
            let issues_session = back.contains_key("mcp-session-id");
            let exposed = back
                .get("access-control-expose-headers")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            let hide = matches!(p.fault, Fault::SessionIdHidden) || !issues_session;
            if hide && lists(&exposed, "mcp-session-id") {
                back.insert(
                    "access-control-expose-headers",
                    HeaderValue::from_str(&without(&exposed, "mcp-session-id")).expect("header"),
                );
            }
        }
        Fault::EchoHeaders => {
            let sent: Vec<String> = CANARY_HEADERS
                .iter()
                .filter_map(|h| headers.get(*h).and_then(|v| v.to_str().ok()))
                .map(str::to_owned)
                .collect();
            if let Ok(v) = HeaderValue::from_str(&sent.join(" | ")) {
                back.insert("x-debug-request-headers", v);
            }
        }
        _ => {}
    }
    let bytes = answer.bytes().await.unwrap_or_default();
    let Ok(mut reply) = serde_json::from_slice::<Value>(&bytes) else {
        return (status, back, bytes).into_response();
    };
    match p.fault {
        Fault::UpgradeStale if tool == "dealeragent.inventory.get_vehicle" => {
            edit_tool_result(&mut reply, |sc| {
                if sc["freshness"]["state"] == "stale" {
                    sc["freshness"]["state"] = json!("current");
                }
            });
        }
        Fault::UnknownAsZero if tool == "dealeragent.pricing.get_disclosure" => {
            edit_tool_result(&mut reply, |sc| {
                let currency = sc["advertised_price"]["amount"]["currency"].clone();
                let g = &mut sc["government_charges"];
                if g["status"] == "unknown" {
                    g["total"] = json!({"amount_minor": 0, "currency": currency});
                }
            });
        }
        Fault::EchoArguments => {
            let is_error = reply["result"]["isError"] == true;
            if is_error {
                let raw = args.to_string();
                edit_tool_result(&mut reply, |sc| {
                    let message = sc["message"].as_str().unwrap_or("").to_owned();
                    sc["message"] = json!(format!("{message} (arguments: {raw})"));
                });
            }
        }
        Fault::PageOnlyFreshness if tool == "dealeragent.inventory.search" => {
            edit_tool_result(&mut reply, |sc| {
                let all_current = sc["vehicles"]
                    .as_array()
                    .is_some_and(|v| v.iter().all(|x| x["freshness"]["state"] == "current"));
                if all_current && sc["freshness"].is_object() {
                    sc["freshness"]["state"] = json!("current");
                }
            });
        }
        Fault::CollapseConflict if tool == USED_DETAILS => {
            edit_tool_result(&mut reply, |sc| {
                if sc["discrepancies"].is_array() {
                    sc["discrepancies"] = json!([]);
                }
            });
        }
        Fault::UnauthorizedSummary if tool == USED_DETAILS => {
            edit_tool_result(&mut reply, |sc| {
                for r in sc["history_reports"].as_array_mut().into_iter().flatten() {
                    if r["summary_sharing_authorized"] == false {
                        r["summary"] = json!({
                            "accident_status": "no_events_reported",
                            "damage_status": "no_damage_reported",
                            "title_brand_status": "no_brands_reported",
                            "odometer_consistency": "consistent",
                            "owner_count_status": "unknown"
                        });
                    }
                }
            });
        }
        Fault::RevealExisting if tool == USED_DETAILS => {
            let made_up = args.to_string().contains("dapc-absent");
            edit_tool_result(&mut reply, |sc| {
                if !made_up && sc["code"] == "dealeragent.resource.not_found" {
                    sc["code"] = json!("dealeragent.vehicle.unavailable");
                }
            });
        }
        Fault::LintSaysPass if tool == "dealeragent.pricing.get_disclosure" => {
            edit_tool_result(&mut reply, |sc| {
                if let Some(lint) = sc
                    .get_mut("extensions")
                    .and_then(|e| e.get_mut("dealergateway.disclosure-lint"))
                {
                    lint["result"] = json!("pass");
                    for r in lint["rules"].as_array_mut().into_iter().flatten() {
                        r["verdict"] = json!("pass");
                    }
                }
            });
        }
        Fault::VerifyWithoutValidUntil if tool == VERIFY => {
            edit_tool_result(&mut reply, |sc| {
                if let Some(a) = sc["availability"].as_object_mut() {
                    a.remove("valid_until");
                }
            });
        }
        Fault::VerifyStale if tool == VERIFY => into_tool_error(&mut reply, stale_error()),
        Fault::VerifyStaleFirst(n) if tool == VERIFY => {
            if p.verifications.fetch_add(1, Ordering::SeqCst) < n {
                into_tool_error(&mut reply, stale_error());
            }
        }
        Fault::ProseErrorText if reply["result"]["isError"] == true => {
            reply["result"]["content"] = json!([{"type": "text",
                "text": "The request could not be completed. See structuredContent for details."}]);
        }
        Fault::NoStructuredContent => {
            if let Some(result) = reply.get_mut("result").and_then(Value::as_object_mut) {
                result.remove("structuredContent");
            }
        }
        Fault::UpgradeStale
        | Fault::UnknownAsZero
        | Fault::LeakPartner
        | Fault::CursorAnyCaller
        | Fault::PageOnlyFreshness
        | Fault::CollapseConflict
        | Fault::UnauthorizedSummary
        | Fault::RevealExisting
        | Fault::LintSaysPass
        | Fault::VerifyWithoutValidUntil
        | Fault::VerifyStale
        | Fault::VerifyStaleFirst(_)
        | Fault::ProseErrorText
        | Fault::StatelessExposesNoSession
        | Fault::SessionIdHidden
        | Fault::RequireClientInfo
        | Fault::EchoHeaders
        | Fault::AcceptCanaryHeaders => {}
    }
    (status, back, reply.to_string()).into_response()
}

/// Start a proxy with `fault` in front of the fixture's gateway; returns
/// its MCP URL.
async fn proxy(fx: &common::Fixture, fault: Fault) -> String {
    let state = Arc::new(Proxy {
        fault,
        verifications: AtomicUsize::new(0),
        upstream: fx.app.url.clone(),
        partner_rooftop: common::FLEET.to_owned(),
        partner_token: fx.token("partner"),
        http: reqwest::Client::new(),
    });
    let app = Router::new().fallback(forward).with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}/mcp")
}

/// Run group `only` through a proxy with `fault` and straight against the
/// gateway: `check` fails through the proxy and passes without it.
async fn caught(fault: Fault, only: &str, check: &str) {
    let fx = common::setup().await;
    let clean = run_suite(&fx.options(&fx.app.url, Some(only)))
        .await
        .expect("the suite runs");
    let (result, reason) = common::result_of(&clean.report, check);
    assert_eq!(result, "passed", "{check} without the fault: {reason}");
    let url = proxy(&fx, fault).await;
    let broken = run_suite(&fx.options(&url, Some(only)))
        .await
        .expect("the suite runs through the proxy");
    let (result, reason) = common::result_of(&broken.report, check);
    assert_eq!(result, "failed", "{check} with {fault:?}: {reason}");
    assert!(!broken.claimable);
    assert!(broken.failed_required >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaked_foreign_vehicle_fails_isolation() {
    caught(Fault::LeakPartner, "DAPC-ISO", "DAPC-ISO-001").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgraded_stale_record_fails_freshness() {
    caught(Fault::UpgradeStale, "DAPC-FRS", "DAPC-FRS-001").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_amount_shown_as_zero_fails_pricing() {
    caught(Fault::UnknownAsZero, "DAPC-PRC", "DAPC-PRC-005").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echoed_input_fails_redaction() {
    caught(Fault::EchoArguments, "DAPC-RED", "DAPC-RED-001").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_accepted_under_another_caller_fails_cursor_scope() {
    caught(Fault::CursorAnyCaller, "DAPC-CUR", "DAPC-CUR-003").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_fresher_than_its_result_set_fails_freshness() {
    caught(Fault::PageOnlyFreshness, "DAPC-FRS", "DAPC-FRS-003").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collapsed_conflict_fails_the_used_vehicle_evidence_check() {
    caught(Fault::CollapseConflict, "DAPC-UVP", "DAPC-UVP-002").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthorized_history_summary_fails_the_used_vehicle_checks() {
    caught(Fault::UnauthorizedSummary, "DAPC-UVP", "DAPC-UVP-002").await;
    caught(Fault::UnauthorizedSummary, "DAPC-UVP", "DAPC-UVP-001").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaked_foreign_used_vehicle_fails_used_vehicle_isolation() {
    caught(Fault::LeakPartner, "DAPC-UVP", "DAPC-UVP-003").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_vehicle_told_apart_from_an_absent_one_fails_the_used_vehicle_checks() {
    caught(Fault::RevealExisting, "DAPC-UVP", "DAPC-UVP-004").await;
}

/// An optional check fails like a required one, without making the run
/// unclaimable on its own: the lint is the gateway's extension, not DAP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lint_that_says_pass_where_the_engine_does_not_fails_the_lint_check() {
    let fx = common::setup().await;
    let clean = run_suite(&fx.options(&fx.app.url, Some("DAPC-LINT")))
        .await
        .expect("the suite runs");
    let (result, reason) = common::result_of(&clean.report, "DAPC-LINT-001");
    assert_eq!(
        result, "passed",
        "DAPC-LINT-001 without the fault: {reason}"
    );
    let url = proxy(&fx, Fault::LintSaysPass).await;
    let broken = run_suite(&fx.options(&url, Some("DAPC-LINT")))
        .await
        .expect("the suite runs through the proxy");
    let (result, reason) = common::result_of(&broken.report, "DAPC-LINT-001");
    assert_eq!(
        result, "failed",
        "DAPC-LINT-001 with LintSaysPass: {reason}"
    );
    assert!(reason.contains("pass"), "{reason}");
}

/// Run only `check` through a proxy with `fault`: its result and reason,
/// and the whole report.
async fn through(fx: &common::Fixture, fault: Fault, check: &str) -> (String, String, Value) {
    let url = proxy(fx, fault).await;
    let run = run_suite(&fx.options(&url, Some(check)))
        .await
        .expect("the suite runs through the proxy");
    let (result, reason) = common::result_of(&run.report, check);
    (result.to_owned(), reason.to_owned(), run.report)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_availability_result_without_valid_until_fails_the_availability_check() {
    caught(Fault::VerifyWithoutValidUntil, "DAPC-AVL", "DAPC-AVL-001").await;
}

/// DAP 0.1 section 8 permits a structured error where freshness is
/// insufficient: a gateway that answers every verification with
/// `dealeragent.vehicle.stale` is not failed; with no result to judge, the
/// check skips and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verifications_answered_stale_are_permitted_and_skip_the_availability_check() {
    let fx = common::setup().await;
    let (result, reason, _) = through(&fx, Fault::VerifyStale, "DAPC-AVL-001").await;
    assert_eq!(result, "skipped", "{reason}");
    assert!(reason.contains("dealeragent.vehicle.stale"), "{reason}");
    let (result, reason, _) = through(&fx, Fault::VerifyStale, "DAPC-SCH-005").await;
    assert_eq!(result, "skipped", "{reason}");
    // It gave up only after verifying further vehicles, within its bound.
    assert!(
        reason.contains(&format!(
            "and {} further vehicles asked",
            conformance::context::MAX_FURTHER_VERIFICATIONS
        )),
        "{reason}"
    );
}

/// When the sampled vehicles all answer with a permitted error, the suite
/// verifies further vehicles until one answers, so the availability
/// result's completeness and schema are still judged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suite_samples_further_until_a_verification_answers() {
    let fx = common::setup().await;
    // More than the suite samples: every sample answers stale.
    let fault = Fault::VerifyStaleFirst(12);
    let (result, reason, _) = through(&fx, fault, "DAPC-SCH-005").await;
    assert_eq!(result, "passed", "{reason}");
    let (result, reason, _) = through(&fx, fault, "DAPC-AVL-001").await;
    assert_eq!(result, "passed", "{reason}");
    assert!(reason.contains("12 dealeragent.vehicle.stale"), "{reason}");
}

/// A text block is a SHOULD (MCP) and a MAY (DAP): prose in it is noted,
/// and the required check still passes; a result without
/// structuredContent still fails it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prose_text_block_passes_and_a_missing_structured_content_fails() {
    let fx = common::setup().await;
    let (result, reason, report) = through(&fx, Fault::ProseErrorText, "DAPC-MCP-006").await;
    assert_eq!(result, "passed", "{reason}");
    assert!(reason.contains("advisory"), "{reason}");
    assert!(reason.contains("not JSON"), "{reason}");
    assert_eq!(report["summary"]["required_failed"], 0);
    caught(Fault::NoStructuredContent, "DAPC-MCP-006", "DAPC-MCP-006").await;
}

/// Mcp-Session-Id matters to a browser only on an answer that issues one:
/// a stateless answer need not expose it, a legacy initialize must.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_id_must_be_exposed_only_where_one_is_issued() {
    let fx = common::setup().await;
    let (result, reason, _) = through(&fx, Fault::StatelessExposesNoSession, "DAPC-MCP-012").await;
    assert_eq!(result, "passed", "{reason}");
    let (result, reason, _) = through(&fx, Fault::SessionIdHidden, "DAPC-MCP-012").await;
    assert_eq!(result, "failed", "{reason}");
    assert!(reason.contains("Mcp-Session-Id"), "{reason}");
}

/// MCP 2026-07-28: a server MUST NOT require clientInfo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_that_requires_client_info_fails() {
    caught(Fault::RequireClientInfo, "DAPC-MCP-013", "DAPC-MCP-013").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echoed_canary_header_fails_redaction() {
    caught(Fault::EchoHeaders, "DAPC-RED-002", "DAPC-RED-002").await;
}

/// Redaction only: a gateway that serves a request whose canary header it
/// ignores passes, as long as nothing is echoed (accepting headers is
/// DAPC-MCP-004's business).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_canary_header_that_is_not_echoed_passes_redaction() {
    let fx = common::setup().await;
    let (result, reason, _) = through(&fx, Fault::AcceptCanaryHeaders, "DAPC-RED-002").await;
    assert_eq!(result, "passed", "{reason}");
    assert!(reason.contains("served"), "{reason}");
}
