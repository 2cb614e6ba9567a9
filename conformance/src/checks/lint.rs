//! DAPC-LINT: the disclosure lint a gateway may publish in a disclosure's
//! extension bag, `extensions["dealergateway.disclosure-lint"]` (DAP 13
//! lets a gateway add extensions; docs/lint.md and docs/pricing.md "The
//! disclosure lint" define this one). Optional: skipped, with its reason,
//! when no sampled disclosure carries the block.
//!
//! The block is checked against the pure engine this suite is built with
//! (`pricing::lint`): the full form reports the facts the verdicts were
//! drawn from, so the suite parses them, runs the engine again and compares
//! every rule's verdict. Whatever the catalogue, a rule never says `pass`
//! with an unknown fact among the facts it used, the overall `result`
//! follows its documented rule, and the notice (a check of published data,
//! not legal advice) is present. A gateway on another catalogue version
//! than this suite's is held to those invariants only, and the reason says
//! so.

use pricing::lint::{Facts, Report, RuleResult, Verdict};
use serde_json::{Value, json};

use super::Check;
use crate::client::{ClientError, Exchange};
use crate::context::{Ctx, DISCLOSURE};
use crate::report::Outcome;

const G: &str = "lint";

/// The extension member holding the block.
pub const EXTENSION: &str = "dealergateway.disclosure-lint";

/// Most disclosures read in full per run.
pub const MAX_DISCLOSURES: usize = 8;

/// A buyer jurisdiction asked for once, away from where the sampled
/// rooftop is: the block must then say the request decided the place.
const ELSEWHERE: [&str; 2] = ["GB", "DE"];

pub const CHECKS: &[Check] = &[Check {
    id: "DAPC-LINT-001",
    group: G,
    title: "a published disclosure lint agrees with the engine on its own facts",
    section: "DAP 0.1 extensions (13); gateway docs/lint.md",
    keyword: "MUST",
    text: "where get_disclosure carries extensions[\"dealergateway.disclosure-lint\"], its full form reports facts on which the engine gives the same verdict for every rule; no rule passes with an unknown fact; the result follows from the rules; the notice is present",
    required: false,
    roles: &[],
    run: |cx| Box::pin(lint_agrees(cx)),
}];

/// The documented overall result of `rules` (pricing::lint `Report::result`):
/// `fail` when a confirmed rule fails; else `cannot_determine` when any
/// rule cannot determine, or an unconfirmed one fails, or none applied;
/// else `pass`.
pub fn documented_result(rules: &[RuleResult]) -> Verdict {
    if rules
        .iter()
        .any(|r| r.confirmed && r.verdict == Verdict::Fail)
    {
        Verdict::Fail
    } else if rules.is_empty() || rules.iter().any(|r| r.verdict != Verdict::Pass) {
        Verdict::CannotDetermine
    } else {
        Verdict::Pass
    }
}

/// Whether `value` (a fact as the block reports it) is unknown.
fn unknown(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s == pricing::lint::UNKNOWN,
        Value::Array(items) => items.iter().any(unknown),
        Value::Object(map) => map.values().any(unknown),
        _ => false,
    }
}

/// What is wrong with one full block, each problem prefixed by `at`; and
/// whether the engine was re-run (same catalogue version).
pub fn problems_of(block: &Value, at: &str) -> (Vec<String>, bool) {
    let mut problems = Vec::new();
    if block
        .get("notice")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        problems.push(format!("{at}: no notice"));
    }
    let facts: Facts = match serde_json::from_value(block.get("facts").cloned().unwrap_or_default())
    {
        Ok(f) => f,
        Err(_) => {
            problems.push(format!("{at}: the full block's facts do not parse"));
            return (problems, false);
        }
    };
    let report: Report = match serde_json::from_value(block.clone()) {
        Ok(r) => r,
        Err(_) => {
            problems.push(format!("{at}: the block is not a lint report"));
            return (problems, false);
        }
    };
    if report.place != facts.place {
        problems.push(format!("{at}: the report's place is not the facts' place"));
    }
    for r in &report.rules {
        if r.verdict == Verdict::Pass
            && let Some(f) = r.facts.iter().find(|f| unknown(&f.value))
        {
            problems.push(format!(
                "{at}: rule {} passes on the unknown fact {}",
                r.rule_id, f.fact
            ));
        }
    }
    let documented = documented_result(&report.rules);
    if report.result != documented {
        problems.push(format!(
            "{at}: result {} where its rules give {}",
            word(report.result),
            word(documented)
        ));
    }
    let catalogue = pricing::lint::catalogue();
    let same_catalogue = report.catalogue_version == catalogue.version;
    if same_catalogue {
        let engine = pricing::lint::lint(catalogue, &facts);
        for e in &engine.rules {
            match report.rules.iter().find(|r| r.rule_id == e.rule_id) {
                None => problems.push(format!("{at}: rule {} missing", e.rule_id)),
                Some(r) if r.verdict != e.verdict => problems.push(format!(
                    "{at}: rule {} says {} where the engine says {} on the same facts",
                    e.rule_id,
                    word(r.verdict),
                    word(e.verdict)
                )),
                Some(_) => {}
            }
        }
        for r in &report.rules {
            if !engine.rules.iter().any(|e| e.rule_id == r.rule_id) {
                problems.push(format!("{at}: rule {} does not apply there", r.rule_id));
            }
        }
        if report.result != engine.result {
            problems.push(format!(
                "{at}: result {} where the engine says {}",
                word(report.result),
                word(engine.result)
            ));
        }
    }
    (problems, same_catalogue)
}

fn word(v: Verdict) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|w| w.as_str().map(str::to_owned))
        .unwrap_or_default()
}

async fn lint_agrees(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let carrying: Vec<_> = cx
        .samples
        .iter()
        .filter(|s| {
            s.disclosure
                .as_ref()
                .and_then(Exchange::tool_ok)
                .is_some_and(|d| d["extensions"].get(EXTENSION).is_some())
        })
        .take(MAX_DISCLOSURES)
        .collect();
    let Some(first) = carrying.first() else {
        return Ok(o.skip(format!(
            "no sampled disclosure carries extensions[\"{EXTENSION}\"]"
        )));
    };
    let mut problems = Vec::new();
    let mut checked = 0usize;
    let mut rerun = 0usize;
    let call = |s: &crate::context::Sample, jurisdiction: Option<Value>| {
        let mut args = json!({"organization_id": s.organization_id, "rooftop_id": s.rooftop_id,
                              "vehicle_id": s.vehicle_id, "detail": "full"});
        if let Some(j) = jurisdiction {
            args["jurisdiction"] = j;
        }
        let caller = s.caller.clone();
        async move { cx.call(&caller, DISCLOSURE, args).await }
    };
    for s in &carrying {
        let ex = call(s, None).await?;
        let at = format!("vehicle {}", s.vehicle_id);
        let Some(block) = ex.tool_ok().and_then(|d| d["extensions"].get(EXTENSION)) else {
            o.saw_first(&ex);
            problems.push(format!("{at}: the full disclosure has no lint block"));
            continue;
        };
        let (found, same) = problems_of(block, &at);
        if !found.is_empty() {
            o.saw_first(&ex);
        }
        problems.extend(found);
        checked += 1;
        rerun += usize::from(same);
    }
    // One buyer jurisdiction away from the rooftop: the request decides.
    let country = cx
        .samples
        .iter()
        .find(|s| s.vehicle_id == first.vehicle_id)
        .and_then(|s| s.disclosure.as_ref())
        .and_then(Exchange::tool_ok)
        .and_then(|d| d["extensions"][EXTENSION]["place"]["country"].as_str())
        .unwrap_or_default()
        .to_owned();
    let elsewhere = ELSEWHERE
        .iter()
        .find(|c| **c != country)
        .copied()
        .unwrap_or("GB");
    let ex = call(first, Some(json!({"country": elsewhere}))).await?;
    let at = format!("vehicle {} for a buyer in {elsewhere}", first.vehicle_id);
    match ex.tool_ok().and_then(|d| d["extensions"].get(EXTENSION)) {
        None => {
            o.saw_first(&ex);
            problems.push(format!("{at}: no lint block"));
        }
        Some(block) => {
            if block["jurisdiction_source"] != "request" || block["place"]["country"] != elsewhere {
                o.saw_first(&ex);
                problems.push(format!(
                    "{at}: the block is not for the requested jurisdiction"
                ));
            }
            let (found, same) = problems_of(block, &at);
            if !found.is_empty() {
                o.saw_first(&ex);
            }
            problems.extend(found);
            checked += 1;
            rerun += usize::from(same);
        }
    }
    let note = if rerun == checked {
        String::new()
    } else {
        format!(
            "; {} on another catalogue version than this suite's ({}), held to the invariants only",
            checked - rerun,
            pricing::lint::catalogue().version
        )
    };
    Ok(o.conclude(
        &problems,
        format!("{checked} lint blocks checked, {rerun} re-run on the engine{note}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pricing::lint::FactUsed;

    fn rule(verdict: Verdict, confirmed: bool, value: Value) -> RuleResult {
        RuleResult {
            rule_id: "R".into(),
            verdict,
            confirmed,
            citation: "C".into(),
            reason: "r".into(),
            fix: None,
            facts: vec![FactUsed {
                fact: "charges".into(),
                value,
                source: "s".into(),
            }],
        }
    }

    #[test]
    fn the_result_follows_the_documented_rule() {
        use Verdict::*;
        assert_eq!(documented_result(&[]), CannotDetermine);
        assert_eq!(documented_result(&[rule(Pass, true, json!(1))]), Pass);
        assert_eq!(
            documented_result(&[rule(Pass, true, json!(1)), rule(Fail, true, json!(1))]),
            Fail
        );
        // An unconfirmed failure alone never fails the disclosure.
        assert_eq!(
            documented_result(&[rule(Fail, false, json!(1))]),
            CannotDetermine
        );
        assert_eq!(
            documented_result(&[
                rule(CannotDetermine, true, json!(1)),
                rule(Fail, true, json!(1))
            ]),
            Fail
        );
    }

    fn block(rules: Vec<RuleResult>, result: Verdict) -> Value {
        let facts = json!({
            "place": {"country": "GB"}, "as_of": "2026-12-04", "condition": "used",
            "advertised_price": {"amount_minor": 1_000_000, "currency": "GBP"},
            "charges": "unknown", "government_charges": "unknown",
            "price_includes_vat": "unknown", "vin_published": true,
            "odometer_published": true, "reduction": {"announced": "no"}, "sources": {},
        });
        let mut b = serde_json::to_value(Report {
            catalogue_version: "another".into(),
            place: pricing::lint::Place {
                country: "GB".into(),
                subdivision: None,
            },
            result,
            rules,
        })
        .unwrap();
        b["facts"] = facts;
        b["notice"] = json!("A check of the published data, not legal advice.");
        b
    }

    #[test]
    fn a_pass_on_an_unknown_fact_and_a_wrong_result_are_problems() {
        let good = block(
            vec![rule(Verdict::CannotDetermine, true, json!("unknown"))],
            Verdict::CannotDetermine,
        );
        assert_eq!(problems_of(&good, "x").0, Vec::<String>::new());
        let bad = block(
            vec![rule(Verdict::Pass, true, json!({"class": null}))],
            Verdict::Pass,
        );
        let (p, _) = problems_of(&bad, "x");
        assert!(p.iter().any(|p| p.contains("unknown fact")), "{p:?}");
        let wrong = block(vec![], Verdict::Pass);
        let (p, _) = problems_of(&wrong, "x");
        assert!(p.iter().any(|p| p.contains("result pass")), "{p:?}");
        let mut silent = good.clone();
        silent.as_object_mut().unwrap().remove("notice");
        assert!(
            problems_of(&silent, "x")
                .0
                .iter()
                .any(|p| p.contains("notice"))
        );
    }
}
