//! DAPC-FRS: stale data is never upgraded, in any tool (DAP 0.1 section
//! 6.4: a stale record MUST remain explicitly stale; one record has one
//! freshness state in every tool).

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::Check;
use crate::client::{ClientError, Exchange};
use crate::context::{Ctx, freshness_state, time_of};
use crate::report::Outcome;

const G: &str = "freshness";

/// Clock slack between the gateway and the suite, in seconds.
const SLACK_SECONDS: i64 = 2;

pub const CHECKS: &[Check] = &[
    Check {
        id: "DAPC-FRS-001",
        group: G,
        title: "a record search calls stale or unknown is never current elsewhere",
        section: "DAP 0.1 section 6.4 (freshness)",
        keyword: "MUST",
        text: "for every vehicle whose search freshness is stale or unknown, get_vehicle and verify_availability do not report it current",
        required: true,
        roles: &[],
        run: |cx| Box::pin(stale_stays_stale(cx)),
    },
    Check {
        id: "DAPC-FRS-002",
        group: G,
        title: "a record older than its rooftop's SLA is not current",
        section: "DAP 0.1 section 6.4; manifest freshness_sla_seconds",
        keyword: "MUST",
        text: "a record observed longer ago than the rooftop's freshness_sla_seconds (inventory for search and get_vehicle, availability for verify_availability) is not current",
        required: true,
        roles: &[],
        run: |cx| Box::pin(sla_respected(cx)),
    },
    Check {
        id: "DAPC-FRS-003",
        group: G,
        title: "a search page's freshness is never better than its result set",
        section: "DAP 0.1 section 6.4 (aggregate freshness)",
        keyword: "MUST",
        text: "every page's aggregate freshness is at least as bad as the worst record of the whole result set it pages through (stale/unknown worse than current)",
        required: true,
        roles: &[],
        run: |cx| Box::pin(aggregate_never_better(cx)),
    },
];

/// Order of badness: current, then stale or unknown (anything else, too).
fn rank(state: Option<&str>) -> u8 {
    match state {
        Some("current") => 0,
        _ => 1,
    }
}

fn tool_state(ex: &Option<Exchange>) -> Option<(String, &Exchange)> {
    let ex = ex.as_ref()?;
    let out = ex.tool_ok()?;
    Some((freshness_state(out)?.to_owned(), ex))
}

async fn stale_stays_stale(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let mut problems = Vec::new();
    let mut doubtful = 0usize;
    for s in &cx.samples {
        let state = freshness_state(&s.search_record);
        if !matches!(state, Some("stale" | "unknown")) {
            continue;
        }
        doubtful += 1;
        for (tool, ex) in [
            ("get_vehicle", &s.get_vehicle),
            ("verify_availability", &s.verify),
        ] {
            if let Some((later, ex)) = tool_state(ex)
                && later == "current"
            {
                o.saw_first(ex);
                problems.push(format!(
                    "{} is {} in search but current in {tool}",
                    s.vehicle_id,
                    state.unwrap_or("?")
                ));
            }
        }
    }
    if doubtful == 0 {
        let searched: usize = cx.walks.iter().map(|w| w.vehicles().count()).sum();
        return Ok(o.skip(format!(
            "no stale or unknown vehicle among {searched} searched (the gateway needs one for this check)"
        )));
    }
    Ok(o.conclude(
        &problems,
        format!("{doubtful} stale/unknown vehicles stay non-current"),
    ))
}

/// Whether `record` (with a `freshness` member) reads current although
/// it is older than `sla` seconds at `at`.
fn over_sla(record: &Value, sla: i64, at: DateTime<Utc>) -> Option<i64> {
    let f = record.get("freshness")?;
    let observed = time_of(f, "observed_at").or_else(|| {
        record
            .get("availability")
            .and_then(|a| time_of(a, "observed_at"))
    })?;
    let age = (at - observed).num_seconds();
    (f.get("state").and_then(Value::as_str) == Some("current") && age > sla + SLACK_SECONDS)
        .then_some(age)
}

async fn sla_respected(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let mut problems = Vec::new();
    let mut checked = 0usize;
    for w in &cx.walks {
        for (page, at) in w.pages.iter().zip(&w.page_times) {
            for v in page
                .get("vehicles")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let rooftop = v.get("rooftop_id").and_then(Value::as_str).unwrap_or("");
                let Some(sla) = cx.sla(rooftop, "inventory") else {
                    continue;
                };
                checked += 1;
                if let Some(age) = over_sla(v, sla, *at) {
                    problems.push(format!(
                        "search: {:?} is current at {age} s old, over the inventory SLA of {sla} s",
                        v.get("vehicle_id")
                    ));
                }
            }
        }
    }
    for s in &cx.samples {
        let checks = [
            ("get_vehicle", &s.get_vehicle, "inventory"),
            ("verify_availability", &s.verify, "availability"),
        ];
        for (tool, ex, kind) in checks {
            let Some(ex) = ex else { continue };
            let (Some(out), Some(sla)) = (ex.tool_ok(), cx.sla(&s.rooftop_id, kind)) else {
                continue;
            };
            checked += 1;
            if let Some(age) = over_sla(out, sla, ex.received_at) {
                o.saw_first(ex);
                problems.push(format!(
                    "{tool}: {} is current at {age} s old, over the {kind} SLA of {sla} s",
                    s.vehicle_id
                ));
            }
        }
    }
    if checked == 0 {
        return Ok(o.skip("no record with a manifest freshness SLA was obtained"));
    }
    Ok(o.conclude(
        &problems,
        format!("{checked} records within their SLA or not current"),
    ))
}

async fn aggregate_never_better(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let mut problems = Vec::new();
    let mut mixed = 0usize;
    for w in &cx.walks {
        let worst = w
            .vehicles()
            .map(|v| rank(freshness_state(v)))
            .max()
            .unwrap_or(0);
        if worst == 0 {
            continue;
        }
        mixed += 1;
        for (i, page) in w.pages.iter().enumerate() {
            if rank(freshness_state(page)) < worst {
                problems.push(format!(
                    "{} search of {}: page {} says {:?} while the result set holds stale or unknown records",
                    w.caller.label(),
                    w.organization_id,
                    i + 1,
                    freshness_state(page)
                ));
            }
        }
    }
    if mixed == 0 {
        return Ok(o.skip("no search result set holds a stale or unknown record"));
    }
    let truncated = cx.walks.iter().any(|w| w.truncated);
    let mut ok = format!("{mixed} result sets with stale records, every page honest");
    if truncated {
        ok.push_str(&format!(
            " (a walk stopped at the {}-page bound, so later pages were not seen)",
            crate::context::MAX_PAGES
        ));
        o.reason = ok.clone();
    }
    Ok(o.conclude(&problems, ok))
}
