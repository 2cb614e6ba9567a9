//! `dap-conformance audit` against the real gateway (the bundled demo, on
//! SQLite, or PostgreSQL when `DEALER_GATEWAY_TEST_POSTGRES_URL` is set):
//! it answers all twenty questions and scores 100. Then through a small
//! proxy that rewrites the gateway's answers, each broken variant loses
//! points in the dimension it breaks and only there; and a gateway without
//! this family's extensions loses nothing DAP does not require.

mod common;

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{Duration, SecondsFormat, Utc};
use conformance::audit::grade::{Dimension, Verdict};
use conformance::audit::{AuditOptions, AuditOutput, run_audit};
use serde_json::{Value, json};

/// A gateway with the bundled demo data (dealers, inventory with stale,
/// in-transit and held units, incentive programs), quotas raised for a
/// burst of calls from one address.
async fn demo_gateway() -> common::TestApp {
    let dir = common::temp_dir();
    let url = common::test_database_url(&dir).await;
    common::spawn_on(dir, url, |s| {
        s.rate_limit_ip_per_minute = 100_000;
        s.rate_limit_principal_per_minute = 100_000;
        s.anonymous_quota_per_minute = 100_000;
    })
    .await
}

fn options(url: &str) -> AuditOptions {
    AuditOptions {
        url: url.to_owned(),
        token: None,
        organization: None,
        budget_tokens: None,
    }
}

/// What a proxy changes in the gateway's answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rewrite {
    /// A unit whose availability was last observed long ago is reported
    /// available and verified just now: band, status and freshness
    /// rewritten (the provenance is left as the gateway gave it).
    StaleCalledAvailable,
    /// The first required charge outside the advertised price is left out
    /// of every disclosure.
    FeeLeftOut,
    /// Unknown government charges are given a total.
    UnknownTotalled,
    /// `get_vehicle` gives a price 5% below the one search and the
    /// disclosure give for the same unit.
    PriceMismatch,
    /// A plain DAP gateway: no `dealergateway.offers.evaluate`, no
    /// optional used-vehicle profile.
    NoExtensions,
    /// Not a fault: a gateway whose rooftops have a live dealer system
    /// (DAP availability sources of authority `authoritative_dealer_system`)
    /// that confirms every unit available as it is asked, consistently in
    /// status, authority, time, freshness, provenance and band label.
    VerifiedByDealerSystem,
}

struct Proxy {
    fault: Rewrite,
    upstream: String,
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

fn rewrite(fault: Rewrite, method: &str, tool: &str, reply: &mut Value) {
    match (fault, method, tool) {
        (Rewrite::StaleCalledAvailable, _, "dealeragent.inventory.verify_availability") => {
            let now = Utc::now();
            let mut rewritten = false;
            edit_tool_result(reply, |sc| {
                let observed = sc["availability"]["observed_at"]
                    .as_str()
                    .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
                let old =
                    observed.is_some_and(|t| now - t.with_timezone(&Utc) > Duration::minutes(15));
                if !old {
                    return;
                }
                let at = now.to_rfc3339_opts(SecondsFormat::Secs, true);
                let until =
                    (now + Duration::seconds(120)).to_rfc3339_opts(SecondsFormat::Secs, true);
                sc["availability"] = json!({"status": "available", "authority_status": "authoritative",
                    "observed_at": at, "valid_until": until, "human_verification_required": false});
                sc["freshness"] = json!({"observed_at": at, "state": "current",
                    "valid_until": until, "max_age_seconds": 120});
                rewritten = true;
            });
            if rewritten && let Some(meta) = reply["result"].get_mut("_meta") {
                meta["dealergateway.availability"] = json!({"band": "verified_current",
                    "checked_live": true, "source": "http"});
            }
        }
        (Rewrite::FeeLeftOut, _, "dealeragent.pricing.get_disclosure") => {
            edit_tool_result(reply, |sc| {
                if let Some(charges) = sc["required_dealer_charges"].as_array_mut()
                    && let Some(at) = charges
                        .iter()
                        .position(|c| c["included_in_advertised_price"] == false)
                {
                    charges.remove(at);
                }
            });
        }
        (Rewrite::UnknownTotalled, _, "dealeragent.pricing.get_disclosure") => {
            edit_tool_result(reply, |sc| {
                let currency = sc["advertised_price"]["amount"]["currency"].clone();
                let g = &mut sc["government_charges"];
                if g["status"] == "unknown" {
                    g["total"] = json!({"amount_minor": 31_600, "currency": currency});
                }
            });
        }
        (Rewrite::PriceMismatch, _, "dealeragent.inventory.get_vehicle") => {
            edit_tool_result(reply, |sc| {
                if let Some(minor) = sc["advertised_price"]["amount"]["amount_minor"].as_i64() {
                    sc["advertised_price"]["amount"]["amount_minor"] = json!(minor / 100 * 95);
                }
            });
        }
        (Rewrite::VerifiedByDealerSystem, _, "dealeragent.inventory.verify_availability") => {
            let now = Utc::now();
            let at = now.to_rfc3339_opts(SecondsFormat::Secs, true);
            let until = (now + Duration::seconds(120)).to_rfc3339_opts(SecondsFormat::Secs, true);
            let mut rewritten = false;
            edit_tool_result(reply, |sc| {
                if sc.get("availability").is_none() {
                    return;
                }
                sc["availability"] = json!({"status": "available", "authority_status": "authoritative",
                    "observed_at": at, "valid_until": until, "human_verification_required": false,
                    "reason": "The dealer system reported available just now."});
                sc["provenance"] = json!({"sources": [{"source_name": "dealer-system:https://dms.example",
                    "authority": "authoritative_dealer_system", "observed_at": at}],
                    "authority_status": "authoritative"});
                sc["freshness"] = json!({"observed_at": at, "state": "current",
                    "valid_until": until, "max_age_seconds": 120});
                rewritten = true;
            });
            if rewritten && let Some(meta) = reply["result"].get_mut("_meta") {
                meta["dealergateway.availability"] = json!({"band": "verified_current",
                    "checked_live": true, "source": "http"});
            }
        }
        (Rewrite::NoExtensions, "tools/list", _) => {
            if let Some(tools) = reply["result"]["tools"].as_array_mut() {
                tools.retain(|t| {
                    let name = t["name"].as_str().unwrap_or("");
                    name.starts_with("dealeragent.")
                        && name != "dealeragent.inventory.get_used_vehicle_details"
                });
            }
        }
        (Rewrite::NoExtensions, _, "dealeragent.discovery.get_manifest") => {
            edit_tool_result(reply, |sc| {
                if let Some(caps) = sc["capabilities"].as_array_mut() {
                    caps.retain(|c| c["profile"] != "dealeragent.used-vehicle.read/0.1");
                }
                if let Some(ext) = sc.as_object_mut() {
                    ext.remove("extensions");
                }
            });
        }
        _ => {}
    }
}

async fn forward(State(p): State<Arc<Proxy>>, headers: HeaderMap, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let method = request["method"].as_str().unwrap_or("").to_owned();
    let tool = request["params"]["name"].as_str().unwrap_or("").to_owned();
    let mut out = HeaderMap::new();
    for (k, v) in &headers {
        if !matches!(k.as_str(), "host" | "content-length") {
            out.insert(k.clone(), v.clone());
        }
    }
    let answer = match p
        .http
        .post(&p.upstream)
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
    let bytes = answer.bytes().await.unwrap_or_default();
    let Ok(mut reply) = serde_json::from_slice::<Value>(&bytes) else {
        return (status, back, bytes).into_response();
    };
    rewrite(p.fault, &method, &tool, &mut reply);
    (status, back, reply.to_string()).into_response()
}

/// A proxy with `fault` in front of `upstream`; returns its MCP URL.
async fn proxy(upstream: &str, fault: Rewrite) -> String {
    let state = Arc::new(Proxy {
        fault,
        upstream: upstream.to_owned(),
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

fn score(out: &AuditOutput, d: Dimension) -> u64 {
    out.dimension_hundredths(d)
        .unwrap_or_else(|| panic!("{} is not covered:\n{}", d.name(), out.table))
}

/// The failed rules, as `AUD-NN RULE`.
fn lost(out: &AuditOutput) -> Vec<String> {
    out.graded
        .iter()
        .flat_map(|g| {
            g.checks
                .iter()
                .filter(|c| c.verdict == Verdict::Failed)
                .map(move |c| format!("{} {}", g.question.code, c.rule))
        })
        .collect()
}

/// Audit through a proxy with `fault`: the dimensions in `broken` lose
/// points, every other dimension keeps all of them, and `rule` is among the
/// failed rules.
async fn loses_points(fault: Rewrite, broken: &[Dimension], rule: &str) {
    let app = demo_gateway().await;
    let url = proxy(&app.url, fault).await;
    let out = run_audit(&options(&url)).await.expect("the audit runs");
    for d in Dimension::ALL {
        let s = score(&out, d);
        if broken.contains(&d) {
            assert!(
                s < 10_000,
                "{fault:?} should cost {} points:\n{}",
                d.name(),
                out.table
            );
        } else {
            assert_eq!(
                s,
                10_000,
                "{fault:?} should not cost {} points:\n{}",
                d.name(),
                out.table
            );
        }
    }
    assert!(out.score_hundredths < 10_000);
    let lost = lost(&out);
    assert!(
        lost.iter().any(|l| l.ends_with(rule)),
        "{rule} not among {lost:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_gateway_answers_all_twenty_and_scores_100() {
    let app = demo_gateway().await;
    let out = run_audit(&options(&app.url)).await.expect("the audit runs");
    assert_eq!(out.score_hundredths, 10_000, "{}", out.table);
    assert!(lost(&out).is_empty(), "{}", out.table);
    assert_eq!(out.graded.len(), 20);
    for g in &out.graded {
        assert!(
            matches!(
                g.answer.outcome,
                conformance::audit::answer::Outcome::Answered
                    | conformance::audit::answer::Outcome::NotComputable
            ),
            "{} was not answered: {:?}",
            g.question.code,
            g.answer.outcome
        );
        assert!(!g.checks.is_empty(), "{} was not graded", g.question.code);
        assert!(
            !g.answer.claims.is_empty(),
            "{} claims nothing",
            g.question.code
        );
    }
    for d in Dimension::ALL {
        assert_eq!(score(&out, d), 10_000);
    }
    // The out-the-door question is not computable while government charges
    // are unknown, and says so.
    let otd = out
        .graded
        .iter()
        .find(|g| g.question.code == "AUD-08")
        .expect("AUD-08");
    assert_eq!(
        otd.answer.outcome,
        conformance::audit::answer::Outcome::NotComputable
    );
    // AUD-14 asks about a stale listing the dealer still advertises (the
    // demo has stale units listed as available), not one already listed as
    // off sale: only the former tests phantom availability.
    let still = out
        .graded
        .iter()
        .find(|g| g.question.code == "AUD-14")
        .expect("AUD-14");
    assert!(
        still.answer.claims.iter().any(|c| matches!(
            &c.fact,
            conformance::audit::answer::Fact::AvailabilityStatus { status, .. }
                if !matches!(status.as_str(), "sold" | "unavailable")
        )),
        "AUD-14 asks about a unit listed as off sale: {}",
        still.answer.text
    );
    // The extension part ran: a best stack was stated and graded.
    let combined = out
        .graded
        .iter()
        .find(|g| g.question.code == "AUD-11")
        .expect("AUD-11");
    assert!(
        combined
            .checks
            .iter()
            .any(|c| c.rule == "FEE-STACK-VALID" && c.verdict == Verdict::Passed)
    );
    // The JSON report is the machine-readable form of the same result.
    let parsed: Value = serde_json::from_slice(&out.report_bytes).expect("JSON");
    assert_eq!(parsed, out.report);
    assert_eq!(parsed["score"], "100.00");
    assert_eq!(parsed["questions"].as_array().map(Vec::len), Some(20));
    assert_eq!(parsed["dimensions"].as_array().map(Vec::len), Some(6));
    // A budget no answer fits costs every question its citation points and
    // nothing else.
    let mut tight = options(&app.url);
    tight.budget_tokens = Some(1);
    let starved = run_audit(&tight).await.expect("the audit runs");
    assert_eq!(
        score(&starved, Dimension::CitationQuality),
        0,
        "{}",
        starved.table
    );
    assert_eq!(
        score(&starved, Dimension::PriceAccuracy),
        10_000,
        "{}",
        starved.table
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_unit_called_available_loses_phantom_availability_points() {
    loses_points(
        Rewrite::StaleCalledAvailable,
        &[Dimension::PhantomAvailability],
        "AVL-AVAILABLE-NOW-SUPPORTED",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_fee_left_out_loses_fee_disclosure_points() {
    loses_points(
        Rewrite::FeeLeftOut,
        &[Dimension::FeeAndConditionDisclosure],
        "FEE-RECORD-CONSISTENT",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_amount_totalled_loses_price_and_fee_points() {
    loses_points(
        Rewrite::UnknownTotalled,
        &[
            Dimension::PriceAccuracy,
            Dimension::FeeAndConditionDisclosure,
        ],
        "PRC-NO-UNKNOWN-TOTALLED",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_price_that_differs_between_tools_loses_price_points() {
    loses_points(
        Rewrite::PriceMismatch,
        &[Dimension::PriceAccuracy],
        "PRC-LISTED-PRICE",
    )
    .await;
}

/// A gateway with the DAP tools only: the extension part of the offers
/// questions and the optional used-vehicle question are skipped and said
/// to be, and the score stays 100.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_dap_gateway_loses_nothing_dap_does_not_require() {
    let app = demo_gateway().await;
    let url = proxy(&app.url, Rewrite::NoExtensions).await;
    let out = run_audit(&options(&url)).await.expect("the audit runs");
    assert_eq!(out.score_hundredths, 10_000, "{}", out.table);
    let of = |code: &str| {
        out.graded
            .iter()
            .find(|g| g.question.code == code)
            .expect(code)
    };
    for code in ["AUD-11", "AUD-12"] {
        let g = of(code);
        assert!(
            g.answer
                .notes
                .iter()
                .any(|n| n.contains("extension part skipped")),
            "{code}: {:?}",
            g.answer.notes
        );
        assert!(g.checks.iter().any(|c| c.verdict == Verdict::NotApplicable
            && matches!(c.rule, "FEE-STACK-VALID" | "PRC-NO-ELIGIBILITY-STACK")));
    }
    assert!(matches!(
        of("AUD-18").answer.outcome,
        conformance::audit::answer::Outcome::NotApplicable(_)
    ));
}

/// The positive path of "available now": where a dealer system verifies a
/// unit just before the answer, the agent says so and loses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_a_dealer_system_just_verified_is_called_available_now() {
    let app = demo_gateway().await;
    let url = proxy(&app.url, Rewrite::VerifiedByDealerSystem).await;
    let out = run_audit(&options(&url)).await.expect("the audit runs");
    assert_eq!(out.score_hundredths, 10_000, "{}", out.table);
    for code in ["AUD-03", "AUD-13", "AUD-14", "AUD-15"] {
        let g = out
            .graded
            .iter()
            .find(|g| g.question.code == code)
            .expect(code);
        assert!(
            g.answer.claims.iter().any(|c| matches!(
                c.fact,
                conformance::audit::answer::Fact::AvailableNow { .. }
            )),
            "{code}: {}",
            g.answer.text
        );
        assert!(
            g.checks
                .iter()
                .any(|c| c.rule == "AVL-AVAILABLE-NOW-SUPPORTED" && c.verdict == Verdict::Passed)
        );
    }
}

/// The binary's exit status: 0 when the audit ran, 1 below `--min-score`,
/// 2 when it could not run; `--json` prints the report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_exits_by_whether_it_ran_and_the_minimum_score() {
    let app = demo_gateway().await;
    let broken = proxy(&app.url, Rewrite::FeeLeftOut).await;
    let bin = env!("CARGO_BIN_EXE_dap-conformance");
    let run = |args: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(bin)
                .args(args)
                .output()
                .expect("the binary runs")
        })
    };
    let args = |url: &str, extra: &[&str]| {
        let mut a = vec!["audit".to_owned(), "--url".to_owned(), url.to_owned()];
        a.extend(extra.iter().map(|s| (*s).to_owned()));
        a
    };
    let clean = run(args(&app.url, &["--json", "--min-score", "100"]))
        .await
        .expect("join");
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    let report: Value = serde_json::from_slice(&clean.stdout).expect("--json prints JSON");
    assert_eq!(report["score"], "100.00");
    let low = run(args(&broken, &["--min-score", "100"]))
        .await
        .expect("join");
    assert_eq!(low.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&low.stdout).contains("weighted score:"));
    let ran = run(args(&broken, &[])).await.expect("join");
    assert_eq!(
        ran.status.code(),
        Some(0),
        "a low score is not a failure to run"
    );
    let nowhere = run(args("http://127.0.0.1:9/mcp", &[]))
        .await
        .expect("join");
    assert_eq!(nowhere.status.code(), Some(2));
    let unknown_org = run(args(&app.url, &["--organization", "org.nobody"]))
        .await
        .expect("join");
    assert_eq!(unknown_org.status.code(), Some(2));
}
