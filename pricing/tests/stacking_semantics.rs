//! One test per stacking semantic the offer engine must express (class-based
//! combinability, tag compatibility, exclusivity, best one within a group,
//! cash-or-rate branches, caps and floors, validity windows, currency-bound
//! amounts, deterministic tie-break, greedy versus optimal, ...), named after it.

mod common;

use common::*;
use pricing::Currency;
use pricing::incentives::Criterion;
use pricing::stacking::{
    Applicability, ClaimValue, Eligibility, Optimality, ProfilePaymentMode, ResolvedAmount,
};
use serde_json::json;

#[test]
fn class_based_combinability() {
    // Class = stacking group; `group:<name>` references a whole class.
    let a = set(
        prog("oem_cash", 200_000),
        "/stacking/not_combinable_with",
        json!(["group:dealer"]),
    );
    let b = set(prog("dealer_a", 80_000), "/stacking/group", json!("dealer"));
    let c = set(prog("dealer_b", 80_000), "/stacking/group", json!("dealer"));
    let d = set(prog("loyalty", 50_000), "/stacking/group", json!("loyalty"));
    let e = eval(vec![a.clone(), b.clone(), c.clone(), d.clone()]);
    assert_eq!(best_ids(&e), ["loyalty", "oem_cash"]);
    assert_eq!(e.best_stack.total_discount.amount_minor(), 250_000);
    // Dealer class worth more: the class pair wins and never joins oem_cash.
    let b = set(b, "/amount/amount/amount_minor", json!(130_000));
    let e = eval(vec![a, b, c, d]);
    assert_eq!(best_ids(&e), ["dealer_a", "dealer_b", "loyalty"]);
}

#[test]
fn mutual_tag_compatibility() {
    let rule = r#"stack.all(|p| "spring" in p.tags)"#;
    let x = set(
        set(
            set(prog("x", 100_000), "/tags", json!(["spring"])),
            "/stacking/combinability",
            json!("rule_defined"),
        ),
        "/stacking/rule",
        json!(rule),
    );
    let y = set(prog("y", 80_000), "/tags", json!(["spring", "retail"]));
    let z = set(prog("z", 90_000), "/tags", json!(["winter"]));
    let e = eval(vec![x, y, z]);
    assert_eq!(best_ids(&e), ["x", "y"]);
    assert!(
        e.trace.iter().any(|t| t.contains("[x, y, z] rejected")),
        "{:#?}",
        e.trace
    );
}

#[test]
fn explicit_not_combinable_is_symmetric() {
    // Only A names B; B names nothing. Either way round they never stack.
    let a = set(
        prog("a", 100_000),
        "/stacking/not_combinable_with",
        json!(["b"]),
    );
    let b = prog("b", 120_000);
    for order in [vec![a.clone(), b.clone()], vec![b.clone(), a.clone()]] {
        let e = eval(order);
        assert_eq!(best_ids(&e), ["b"]);
    }
    let b_first = set(
        prog("b", 90_000),
        "/stacking/not_combinable_with",
        json!(["a"]),
    );
    let e = eval(vec![prog("a", 100_000), b_first]);
    assert_eq!(best_ids(&e), ["a"]);
}

#[test]
fn always_stackable() {
    let ex = set(
        prog("ex", 300_000),
        "/stacking/combinability",
        json!("exclusive"),
    );
    let s = set(prog("s", 50_000), "/stacking/always_stackable", json!(true));
    let t = prog("t", 40_000);
    let e = eval(vec![ex.clone(), s.clone(), t.clone()]);
    assert_eq!(best_ids(&e), ["ex", "s"]);
    // ...unless an exclusion names it.
    let ex2 = set(ex, "/stacking/not_combinable_with", json!(["s"]));
    let e = eval(vec![ex2, s, t]);
    assert_eq!(best_ids(&e), ["ex"]);
}

#[test]
fn anchor_top_of_deal_selection() {
    let a = set(prog("a", 200_000), "/stacking/top_of_deal", json!(true));
    let b = set(prog("b", 150_000), "/stacking/top_of_deal", json!(true));
    let c = set(
        prog("c", 100_000),
        "/stacking/not_combinable_with",
        json!(["a"]),
    );
    let e = eval(vec![a, b, c]);
    // a+b is two anchors; a+c is excluded; b+c (2,500.00) beats a (2,000.00).
    assert_eq!(best_ids(&e), ["b", "c"]);
}

#[test]
fn ordered_application_with_stop() {
    // `stop` ends the application order: nothing applied after it may stack.
    let rule = r#"stack.all(|p| p.program_id == "stop" || "before_stop" in p.tags)"#;
    let stop = set(
        set(
            prog("stop", 150_000),
            "/stacking/combinability",
            json!("rule_defined"),
        ),
        "/stacking/rule",
        json!(rule),
    );
    let a = set(prog("a", 100_000), "/tags", json!(["before_stop"]));
    let b = prog("b", 100_000);
    let e = eval(vec![stop, a, b]);
    assert_eq!(best_ids(&e), ["a", "stop"]);
    assert!(
        e.trace
            .iter()
            .any(|t| t.contains("[a, b, stop] rejected: rule of stop returned false"))
    );
}

#[test]
fn exclusivity_tiers() {
    let t1 = set(
        set(
            prog("tier1", 500_000),
            "/stacking/combinability",
            json!("exclusive"),
        ),
        "/stacking/combinable_with",
        json!(["tier2"]),
    );
    let t2 = prog("tier2", 100_000);
    let t3 = prog("tier3", 100_000);
    let e = eval(vec![t1, t2, t3]);
    assert_eq!(best_ids(&e), ["tier1", "tier2"]);
}

#[test]
fn best_one_within_a_group() {
    let g = |id: &str, m: i64| {
        set(
            set(prog(id, m), "/stacking/group", json!("conquest")),
            "/stacking/group_resolution",
            json!("best_one"),
        )
    };
    let e = eval(vec![g("g1", 70_000), g("g2", 90_000), prog("h", 30_000)]);
    assert_eq!(best_ids(&e), ["g2", "h"]);
}

#[test]
fn cash_or_rate_either_or_across_payment_modes() {
    let cash = set(prog("cash", 300_000), "/payment_modes", json!(["cash"]));
    let rate = set(
        set(prog("apr", 350_000), "/payment_modes", json!(["finance"])),
        "/kind",
        json!("finance_rate"),
    );
    let e = eval_with(
        vec![cash, rate],
        &vehicle(3_000_000, Currency::USD),
        &profile(ProfilePaymentMode::Unknown),
    );
    let modes: Vec<&str> = e.branches.iter().map(|b| b.payment_mode.name()).collect();
    assert_eq!(modes, ["cash", "finance", "lease"]);
    assert_eq!(
        e.branches[0].best_stack.total_discount.amount_minor(),
        300_000
    );
    assert_eq!(
        e.branches[1].best_stack.total_discount.amount_minor(),
        350_000
    );
    assert_eq!(e.branches[2].best_stack.total_discount.amount_minor(), 0);
    assert_eq!(e.winning_payment_mode.name(), "finance");
    assert_eq!(best_ids(&e), ["apr"]);
    assert!(
        e.trace
            .iter()
            .any(|t| t == "branches: finance wins with net price 26,500.00 USD")
    );
}

#[test]
fn exclusive_only_if_better_than_best_compatible_stack() {
    let ex = |m: i64| set(prog("ex", m), "/stacking/combinability", json!("exclusive"));
    let others = || vec![prog("a", 80_000), prog("b", 80_000), prog("c", 80_000)];
    let mut v = others();
    v.push(ex(200_000));
    assert_eq!(best_ids(&eval(v)), ["a", "b", "c"]);
    let mut v = others();
    v.push(ex(300_000));
    assert_eq!(best_ids(&eval(v)), ["ex"]);
}

#[test]
fn caps_and_floors() {
    // Floor: net price never below zero, and the trace says so.
    let e = eval_with(
        vec![prog("big", 200_000)],
        &vehicle(100_000, Currency::USD),
        &profile(ProfilePaymentMode::Cash),
    );
    assert_eq!(e.best_stack.net_price.amount_minor(), 0);
    assert!(e.best_stack.floored_at_zero);
    assert!(e.trace.iter().any(|t| t.contains("floored at zero")));
    // Cap: 10 % of 30,000.00 is 3,000.00, capped at 1,500.00.
    let pct = set(
        set(
            prog("pct", 0),
            "/amount",
            json!({"status": "percent_off", "percent": "10", "rounding": "half_up"}),
        ),
        "/cap",
        json!({"amount_minor": 150_000, "currency": "USD"}),
    );
    let e = eval(vec![pct]);
    assert_eq!(e.best_stack.total_discount.amount_minor(), 150_000);
    match &e.programs[0].amount {
        ResolvedAmount::Percent {
            amount,
            capped_from,
            ..
        } => {
            assert_eq!(amount.amount_minor(), 150_000);
            assert_eq!(capped_from.map(|m| m.amount_minor()), Some(300_000));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn percent_off_additive_not_compounding() {
    let p = |id: &str, pct: &str| {
        set(
            prog(id, 0),
            "/amount",
            json!({"status": "percent_off", "percent": pct, "rounding": "half_up"}),
        )
    };
    let e = eval(vec![p("p1", "10"), p("p2", "10")]);
    // Additive on the advertised price: 3,000.00 + 3,000.00 (compounding would give 5,700.00).
    assert_eq!(e.best_stack.total_discount.amount_minor(), 600_000);
    let e = eval_with(
        vec![p("p3", "2.5")],
        &vehicle(29_999, Currency::USD),
        &profile(ProfilePaymentMode::Cash),
    );
    match &e.programs[0].amount {
        ResolvedAmount::Percent {
            amount,
            transformation,
            exact,
            ..
        } => {
            assert_eq!(amount.amount_minor(), 750); // 749.975 half_up
            assert!(!exact);
            assert_eq!(
                transformation,
                "percent 2.5% of 299.99 USD rounded half_up to 2 decimals"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn validity_windows_at_as_of() {
    // as_of is 2026-06-01T12:00:00Z; valid_from inclusive, valid_until exclusive.
    let expired = set(
        prog("expired", 100_000),
        "/valid_until",
        json!("2026-05-31T23:59:59Z"),
    );
    let ends_now = set(
        prog("ends_now", 100_000),
        "/valid_until",
        json!("2026-06-01T12:00:00Z"),
    );
    let future = set(
        prog("future", 100_000),
        "/valid_from",
        json!("2026-06-15T00:00:00Z"),
    );
    let starts_now = set(
        set(
            prog("starts_now", 50_000),
            "/valid_from",
            json!("2026-06-01T07:00:00-05:00"),
        ),
        "/valid_until",
        json!("2026-06-30T00:00:00Z"),
    );
    let e = eval(vec![expired, ends_now, future, starts_now]);
    assert_eq!(best_ids(&e), ["starts_now"]);
    let reason = |id: &str| match &e
        .programs
        .iter()
        .find(|p| p.program_id == id)
        .unwrap()
        .applicability
    {
        Applicability::NotApplicable { reason } => reason.clone(),
        Applicability::Applicable => "applicable".into(),
    };
    assert!(reason("expired").starts_with("validity: ended"));
    assert!(reason("ends_now").starts_with("validity: ended"));
    assert!(reason("future").starts_with("validity: starts"));
    // Freshness: the future program starts before starts_now ends.
    assert_eq!(e.valid_until, Some(ts("2026-06-15T00:00:00Z")));
}

#[test]
fn currency_bound_fixed_amounts() {
    let usd = prog("usd_cash", 100_000);
    let pct = set(
        prog("pct", 0),
        "/amount",
        json!({"status": "percent_off", "percent": "1", "rounding": "floor"}),
    );
    let e = eval_with(
        vec![usd, pct],
        &vehicle(4_000_000, Currency::CAD),
        &profile(ProfilePaymentMode::Cash),
    );
    assert_eq!(best_ids(&e), ["pct"]);
    assert_eq!(e.best_stack.total_discount.to_string(), "400.00 CAD");
    let usd = e
        .programs
        .iter()
        .find(|p| p.program_id == "usd_cash")
        .unwrap();
    assert_eq!(
        usd.applicability,
        Applicability::NotApplicable {
            reason: "currency: fixed amount in USD but the vehicle is priced in CAD".into()
        }
    );
}

#[test]
fn sub_rules_within_a_program() {
    let bonus = |id: &str, m: i64| set(prog(id, m), "/stacking/group", json!("bonus"));
    let host = |rule: &str| {
        set(
            set(
                prog("host", 100_000),
                "/stacking/combinability",
                json!("rule_defined"),
            ),
            "/stacking/rule",
            json!(rule),
        )
    };
    // "best": with host, only one bonus may count.
    let best_rule = r#"stack.filter(|p| p.group == "bonus").len() <= 1"#;
    // host + b2 (1,400.00) beats b1 + b2 (700.00); host + b1 + b2 is refused.
    let e = eval(vec![
        host(best_rule),
        bonus("b1", 30_000),
        bonus("b2", 40_000),
    ]);
    assert_eq!(best_ids(&e), ["b2", "host"]);
    // Without host the group is free to sum: b1 + b2 (2,300.00) beats host + b2 (2,200.00).
    let e = eval(vec![
        host(best_rule),
        bonus("b1", 110_000),
        bonus("b2", 120_000),
    ]);
    assert_eq!(best_ids(&e), ["b1", "b2"]);
    // "sum": with host, bonuses may stack up to a sum of 600.00.
    let sum_rule = r#"let s = 0; for p in stack { if p.group == "bonus" { s += p.amount_minor; } } s <= 60000"#;
    let e = eval(vec![
        host(sum_rule),
        bonus("b1", 30_000),
        bonus("b2", 30_000),
        bonus("b3", 40_000),
    ]);
    // Bonus sums under host: b1+b2 = 600.00 fits, b1+b3 = 700.00 does not;
    // b3 alone is 400.00, so host + b1 + b2 (1,600.00) wins over host + b3 (1,400.00).
    assert_eq!(best_ids(&e), ["b1", "b2", "host"]);
}

#[test]
fn deterministic_tie_break() {
    // Equal totals: ascending program ids.
    let a = set(
        prog("a", 50_000),
        "/stacking/not_combinable_with",
        json!(["b"]),
    );
    let b = prog("b", 50_000);
    assert_eq!(best_ids(&eval(vec![b.clone(), a.clone()])), ["a"]);
    assert_eq!(best_ids(&eval(vec![a, b])), ["a"]);
    // Equal totals: fewer programs first.
    let x = set(
        prog("x", 100_000),
        "/stacking/not_combinable_with",
        json!(["y", "z"]),
    );
    let e = eval(vec![prog("y", 50_000), prog("z", 50_000), x]);
    assert_eq!(best_ids(&e), ["x"]);
}

#[test]
fn greedy_vs_optimal() {
    let a = set(
        prog("a", 100_000),
        "/stacking/not_combinable_with",
        json!(["b", "c"]),
    );
    let e = eval(vec![a, prog("b", 70_000), prog("c", 70_000)]);
    assert_eq!(best_ids(&e), ["b", "c"]);
    assert_eq!(e.best_stack.total_discount.amount_minor(), 140_000);
    assert_eq!(e.best_stack.optimality, Optimality::Proven);
}

// ---- eligibility, outputs --------------------------------------------------

fn military(evidence: &str) -> serde_json::Value {
    set(
        set(
            prog("military", 50_000),
            "/name",
            json!("Military Appreciation"),
        ),
        "/criteria",
        json!([{"criterion": "military", "operator": "verified", "value": true, "evidence_status": evidence}]),
    )
}

#[test]
fn unknown_eligibility_is_potential_extra_not_in_the_stack() {
    let e = eval(vec![prog("cash", 100_000), military("required")]);
    assert_eq!(best_ids(&e), ["cash"]);
    assert_eq!(e.potential_extra.len(), 1);
    assert_eq!(
        e.potential_extra[0].summary,
        "Military Appreciation +500.00 USD if military verified"
    );
    assert_eq!(e.guaranteed_floor.total_discount.amount_minor(), 100_000);
}

#[test]
fn evidence_required_is_eligible_subject_to_evidence() {
    let v = vehicle(3_000_000, Currency::USD);
    let p = with_claim(
        profile(ProfilePaymentMode::Cash),
        Criterion::Military,
        ClaimValue::True,
    );
    let e = eval_with(vec![prog("cash", 100_000), military("required")], &v, &p);
    assert_eq!(best_ids(&e), ["cash", "military"]);
    let m = e
        .programs
        .iter()
        .find(|p| p.program_id == "military")
        .unwrap();
    assert_eq!(
        m.eligibility,
        Eligibility::EligibleSubjectToEvidence {
            criteria: vec!["military".into()]
        }
    );
    assert_eq!(e.best_stack.subject_to_evidence.len(), 1);
    // The floor never includes a program that needs a claim.
    assert_eq!(e.guaranteed_floor.total_discount.amount_minor(), 100_000);
    // A false claim makes it ineligible.
    let p = with_claim(
        profile(ProfilePaymentMode::Cash),
        Criterion::Military,
        ClaimValue::False,
    );
    let e = eval_with(vec![military("required")], &v, &p);
    assert!(matches!(
        e.programs[0].eligibility,
        Eligibility::Ineligible { .. }
    ));
    assert!(e.potential_extra.is_empty());
}

#[test]
fn criteria_mode_any() {
    let p = set(
        set(
            prog("lc", 75_000),
            "/criteria",
            json!([
                {"criterion": "loyalty", "operator": "present", "value": true, "evidence_status": "claimed"},
                {"criterion": "conquest", "operator": "present", "value": true, "evidence_status": "claimed"}
            ]),
        ),
        "/criteria_mode",
        json!("any"),
    );
    let v = vehicle(3_000_000, Currency::USD);
    let base = profile(ProfilePaymentMode::Cash);
    let e = eval_with(
        vec![p.clone()],
        &v,
        &with_claim(base.clone(), Criterion::Conquest, ClaimValue::True),
    );
    assert_eq!(e.programs[0].eligibility, Eligibility::Eligible);
    let e = eval_with(
        vec![p.clone()],
        &v,
        &with_claim(base.clone(), Criterion::Conquest, ClaimValue::False),
    );
    match &e.programs[0].eligibility {
        Eligibility::Unknown { needs } => assert_eq!(needs[0].criterion, "loyalty"),
        other => panic!("{other:?}"),
    }
    let both_false = with_claim(
        with_claim(base, Criterion::Conquest, ClaimValue::False),
        Criterion::Loyalty,
        ClaimValue::False,
    );
    let e = eval_with(vec![p], &v, &both_false);
    assert!(matches!(
        e.programs[0].eligibility,
        Eligibility::Ineligible { .. }
    ));
}

#[test]
fn unknown_amounts_are_listed_never_summed() {
    let u = set(
        prog("mystery", 0),
        "/amount",
        json!({"status": "unknown", "reason": "dealer did not publish"}),
    );
    let sur = set(
        set(
            set(prog("adm", 0), "/direction", json!("surcharge")),
            "/kind",
            json!("surcharge"),
        ),
        "/amount",
        json!({"status": "unknown", "reason": "market adjustment not published"}),
    );
    let e = eval(vec![prog("cash", 100_000), u, sur]);
    assert_eq!(best_ids(&e), ["cash"]);
    let listed: Vec<&str> = e
        .unknown_amount_programs
        .iter()
        .map(|r| r.program_id.as_str())
        .collect();
    assert_eq!(listed, ["adm", "mystery"]);
    assert_eq!(e.best_stack.surcharges.amount_minor(), 0);
    assert_eq!(e.best_stack.unknown_amounts.len(), 1);
    assert_eq!(e.best_stack.surcharge_ids.len(), 1);
}

#[test]
fn surcharges_are_always_included() {
    let sur = set(
        set(prog("adm", 200_000), "/direction", json!("surcharge")),
        "/kind",
        json!("surcharge"),
    );
    let e = eval(vec![prog("cash", 100_000), sur]);
    assert_eq!(best_ids(&e), ["cash"]);
    assert_eq!(e.best_stack.surcharges.amount_minor(), 200_000);
    assert_eq!(e.best_stack.net_price.amount_minor(), 3_100_000);
}

#[test]
fn jurisdiction_and_postal_prefix() {
    let il = set(prog("il", 100_000), "/jurisdictions", json!(["US-IL"]));
    let ca = set(prog("ca", 100_000), "/jurisdictions", json!(["CA"]));
    let chicago_out = set(
        prog("nochi", 100_000),
        "/excluded_postal_prefixes",
        json!(["606"]),
    );
    let e = eval(vec![il.clone(), ca, chicago_out.clone()]);
    assert_eq!(best_ids(&e), ["il"]);
    // No subdivision / no postal code: eligibility unknown with a residency need.
    let mut p = profile(ProfilePaymentMode::Cash);
    p.jurisdiction.subdivision = None;
    p.jurisdiction.postal_code = None;
    let e = eval_with(
        vec![il, chicago_out],
        &vehicle(3_000_000, Currency::USD),
        &p,
    );
    assert!(best_ids(&e).is_empty());
    assert_eq!(e.potential_extra.len(), 2);
    assert!(
        e.potential_extra
            .iter()
            .all(|x| x.needs[0].criterion == "residency")
    );
}

#[test]
fn bounded_search_reports_nodes() {
    let ps: Vec<_> = (0..12)
        .map(|i| prog(&format!("p{i:02}"), 1_000 + i))
        .collect();
    let e = pricing::evaluate(
        &vehicle(3_000_000, Currency::USD),
        &programs(ps),
        &profile(ProfilePaymentMode::Cash),
        pricing::SearchBudget {
            max_nodes: 5,
            ..pricing::SearchBudget::default()
        },
    )
    .unwrap();
    assert_eq!(
        e.best_stack.optimality,
        Optimality::Bounded { nodes_explored: 5 }
    );
}

#[test]
fn failing_rule_invalidates_the_stack_and_never_panics() {
    let ruled = |src: &str| {
        set(
            set(
                prog("bad", 500_000),
                "/stacking/combinability",
                json!("rule_defined"),
            ),
            "/stacking/rule",
            json!(src),
        )
    };
    // A rule that fails on every stack cannot be imported any more: the
    // proof at import (docs/pricing.md section 3) runs it on [bad] first.
    let parsed: Vec<pricing::Program> = [ruled("loop {}"), prog("ok", 10_000)]
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
    let problems = pricing::ProgramSet::validate(parsed).unwrap_err();
    assert_eq!(problems[0].pointer, "/programs/0/stacking/rule");
    assert!(
        problems[0].rule.contains("ran out of its budget"),
        "{problems:?}"
    );
    // One that fails only on a stack the proof does not build (three of
    // four programs) is imported, and fails at evaluation: the stack is
    // never chosen, nothing panics, and the program is left out of every
    // stack with the reason, never silently eligible.
    let e = eval(vec![
        ruled("if stack.len() == 3 { loop {} } true"),
        prog("ok", 10_000),
        prog("c", 9_000),
        prog("d", 8_000),
    ]);
    assert_eq!(best_ids(&e), ["c", "d", "ok"]);
    assert!(
        e.trace
            .iter()
            .any(|t| t.contains("bad@1 is left out of every stack")
                && t.contains("ran out of its budget")
                && t.contains("[bad, c, ok]")),
        "{:#?}",
        e.trace
    );
    let bad = e.programs.iter().find(|p| p.program_id == "bad").unwrap();
    assert!(
        matches!(&bad.applicability, Applicability::NotApplicable { reason } if reason.contains("stacking rule cannot be evaluated")),
        "{bad:?}"
    );
    assert_eq!(e.unusable_rules.len(), 1);
    assert_eq!(e.unusable_rules[0].program_id, "bad");
}

// ---------------------------------------------------------------------------
// Declarative rules (docs/pricing.md "Declarative rules").

fn limited(id: &str, minor: i64, limits: serde_json::Value) -> serde_json::Value {
    set(
        set(
            prog(id, minor),
            "/stacking/combinability",
            json!("rule_defined"),
        ),
        "/stacking/limits",
        limits,
    )
}

#[test]
fn declarative_cap_on_programs_from_a_group() {
    let oem = |id: &str, m: i64| set(prog(id, m), "/stacking/group", json!("oem"));
    let dealer = limited(
        "dealer",
        100_000,
        json!([{"group": "oem", "max_programs": 1}]),
    );
    // dealer + o2 (1,400.00) beats o1 + o2 (700.00); dealer + o1 + o2 breaks the limit.
    let e = eval(vec![dealer.clone(), oem("o1", 30_000), oem("o2", 40_000)]);
    assert_eq!(best_ids(&e), ["dealer", "o2"]);
    assert_eq!(e.best_stack.optimality, Optimality::Proven);
    assert!(
        e.trace
            .iter()
            .any(|t| t.contains("extensions refused by declarative limits")),
        "{:#?}",
        e.trace
    );
    // Without dealer the group sums freely: o1 + o2 (2,300.00) beats dealer + o2.
    let e = eval(vec![dealer, oem("o1", 110_000), oem("o2", 120_000)]);
    assert_eq!(best_ids(&e), ["o1", "o2"]);
    // No rhai ran: the limit is not a script.
    assert!(!e.trace.iter().any(|t| t.starts_with("rules:")));
}

#[test]
fn declarative_cap_by_tag_and_on_the_whole_stack() {
    let bonus = |id: &str, m: i64| set(prog(id, m), "/tags", json!(["bonus"]));
    // With host, at most one bonus-tagged program and at most 3 programs.
    let host = limited(
        "host",
        10_000,
        json!([{"tag": "bonus", "max_programs": 1}, {"max_programs": 3}]),
    );
    let e = eval(vec![
        host,
        bonus("b1", 50_000),
        bonus("b2", 40_000),
        prog("x", 30_000),
        prog("y", 20_000),
    ]);
    // b1 + b2 + x + y (1,400.00) beats any stack with host (at most host + b1 + x = 900.00).
    assert_eq!(best_ids(&e), ["b1", "b2", "x", "y"]);
    let host = limited(
        "host",
        200_000,
        json!([{"tag": "bonus", "max_programs": 1}, {"max_programs": 3}]),
    );
    let e = eval(vec![
        host,
        bonus("b1", 50_000),
        bonus("b2", 40_000),
        prog("x", 30_000),
        prog("y", 20_000),
    ]);
    assert_eq!(best_ids(&e), ["b1", "host", "x"]);
}

#[test]
fn declarative_amount_limit_is_currency_bound() {
    let host = limited(
        "host",
        100_000,
        json!([{"max_amount": {"amount_minor": 160_000, "currency": "USD"}}]),
    );
    let e = eval(vec![host.clone(), prog("a", 50_000), prog("b", 70_000)]);
    // host + a + b = 2,200.00 > 1,600.00; host + a = 1,500.00 fits; a + b = 1,200.00.
    assert_eq!(best_ids(&e), ["a", "host"]);
    // An amount limit in another currency makes its program not applicable,
    // like a cap in another currency.
    let cad = set(
        set(
            prog("host", 100_000),
            "/amount/amount/currency",
            json!("CAD"),
        ),
        "/stacking",
        json!({"group": "host", "combinability": "rule_defined",
               "limits": [{"max_amount": {"amount_minor": 160_000, "currency": "CAD"}}]}),
    );
    let a_cad = set(prog("a", 50_000), "/amount/amount/currency", json!("CAD"));
    let e = eval_with(
        vec![host, prog("a", 50_000)],
        &vehicle(3_000_000, Currency::CAD),
        &profile(ProfilePaymentMode::Cash),
    );
    let h = e.programs.iter().find(|p| p.program_id == "host").unwrap();
    match &h.applicability {
        Applicability::NotApplicable { reason } => assert!(reason.contains("currency"), "{reason}"),
        Applicability::Applicable => panic!("a USD limit applied to a CAD vehicle"),
    }
    let e = eval_with(
        vec![cad, a_cad],
        &vehicle(3_000_000, Currency::CAD),
        &profile(ProfilePaymentMode::Cash),
    );
    assert_eq!(best_ids(&e), ["a", "host"]);
}

#[test]
fn mutual_exclusion_by_tag() {
    let clearance = |id: &str, m: i64| set(prog(id, m), "/tags", json!(["clearance"]));
    let loyalty = set(
        prog("loyalty", 60_000),
        "/stacking/not_combinable_with",
        json!(["tag:clearance"]),
    );
    let e = eval(vec![
        loyalty.clone(),
        clearance("c1", 40_000),
        clearance("c2", 30_000),
        prog("x", 10_000),
    ]);
    // loyalty never with a clearance program (symmetric): c1 + c2 + x (800.00)
    // beats loyalty + x (700.00).
    assert_eq!(best_ids(&e), ["c1", "c2", "x"]);
    let e = eval(vec![loyalty, clearance("c1", 40_000), prog("x", 10_000)]);
    assert_eq!(best_ids(&e), ["loyalty", "x"]);
    // An exclusive program may name a tag it combines with.
    let exclusive = set(
        set(
            prog("exc", 100_000),
            "/stacking/combinability",
            json!("exclusive"),
        ),
        "/stacking/combinable_with",
        json!(["tag:partner"]),
    );
    let partner = set(prog("p", 10_000), "/tags", json!(["partner"]));
    let e = eval(vec![exclusive, partner, prog("z", 5_000)]);
    assert_eq!(best_ids(&e), ["exc", "p"]);
}

#[test]
fn rule_verdicts_are_reused_across_branches_unless_the_rule_reads_ctx() {
    // Not declared monotone, so rhai runs on the candidate stacks.
    let ruled = |src: &str| {
        set(
            set(
                prog("r", 50_000),
                "/stacking/combinability",
                json!("rule_defined"),
            ),
            "/stacking/rule",
            json!(src),
        )
    };
    let others = || vec![prog("a", 40_000), prog("b", 30_000)];
    let v = vehicle(3_000_000, Currency::USD);
    let p = profile(ProfilePaymentMode::Unknown);
    let mut ps = others();
    ps.push(ruled("stack.len() <= 2"));
    let e = eval_with(ps, &v, &p);
    let line = e.trace.iter().find(|t| t.starts_with("rules:")).unwrap();
    assert!(!line.contains(" 0 verdicts reused"), "{line}");
    for b in &e.branches {
        let ids: Vec<&str> = b
            .best_stack
            .program_ids
            .iter()
            .map(|r| r.program_id.as_str())
            .collect();
        assert_eq!(ids, ["a", "r"]);
    }
    // A rule that reads the branch's payment mode is judged per branch: the
    // same stack gets different verdicts in cash and lease.
    let mut ps = others();
    ps.push(ruled(
        "ctx.profile.payment_mode == \"lease\" || stack.len() <= 1",
    ));
    let e = eval_with(ps, &v, &p);
    let ids = |mode: usize| -> Vec<String> {
        e.branches[mode]
            .best_stack
            .program_ids
            .iter()
            .map(|r| r.program_id.clone())
            .collect()
    };
    assert_eq!(ids(0), ["a", "b"]); // cash: r only alone (500.00) < a + b (700.00)
    assert_eq!(ids(2), ["a", "b", "r"]); // lease: everything
}

#[test]
fn rule_scope_does_not_leak_between_evaluations() {
    // The scope is reused across rule calls: a variable a
    // script declares must not survive into the next call, and `ctx` stays
    // a constant.
    let ruled = |id: &str, m: i64, src: &str| {
        set(
            set(
                prog(id, m),
                "/stacking/combinability",
                json!("rule_defined"),
            ),
            "/stacking/rule",
            json!(src),
        )
    };
    // A rule that always writes `ctx` is refused at import (docs/pricing.md
    // section 3); one that writes it only on a three-program stack (which
    // the proof does not build from four programs) reaches the evaluation.
    let always: Vec<pricing::Program> = [ruled("ctxw", 40_000, "ctx.as_of = \"x\"; true")]
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
    let problems = pricing::ProgramSet::validate(always).unwrap_err();
    assert!(problems[0].rule.contains("constant"), "{problems:?}");
    let e = eval(vec![
        ruled(
            "leak",
            50_000,
            "if is_def_var(\"seen\") { false } else { let seen = 1; true }",
        ),
        ruled(
            "ctxw",
            40_000,
            "if stack.len() == 3 { ctx.as_of = \"x\"; } true",
        ),
        ruled("ctxr", 30_000, "ctx.as_of != \"x\""),
        prog("z", 10_000),
    ]);
    // Every stack with `leak` is judged with a fresh scope, so it always
    // accepts; `ctxw` fails on its first three-program stack (a constant),
    // so it is left out; `ctxr` always accepts (`ctx` was never changed).
    assert_eq!(best_ids(&e), ["ctxr", "leak", "z"]);
    assert!(
        e.trace
            .iter()
            .any(|t| t.contains("rule of ctxw") && t.contains("constant")),
        "{:#?}",
        e.trace
    );
}

// ---------------------------------------------------------------------------
// The guaranteed floor (docs/pricing.md "Output"): programs that need
// no claim from the buyer.

#[test]
fn floor_counts_programs_whose_criteria_the_profile_decides() {
    let by_mode = set(
        prog("finance-only", 80_000),
        "/criteria",
        json!([{"criterion": "payment_mode", "operator": "in", "value": ["finance"],
                "evidence_status": "not_required"}]),
    );
    let loyalty = set(
        prog("loyalty", 50_000),
        "/criteria",
        json!([{"criterion": "loyalty", "operator": "present", "value": true,
                "evidence_status": "claimed"}]),
    );
    let v = vehicle(3_000_000, Currency::USD);
    let p = with_claim(
        profile(ProfilePaymentMode::Unknown),
        Criterion::Loyalty,
        ClaimValue::True,
    );
    let e = eval_with(vec![prog("cash", 10_000), by_mode, loyalty], &v, &p);
    let finance = e
        .branches
        .iter()
        .find(|b| b.payment_mode == pricing::incentives::PaymentMode::Finance)
        .unwrap();
    let floor: Vec<&str> = finance
        .guaranteed_floor
        .program_ids
        .iter()
        .map(|r| r.program_id.as_str())
        .collect();
    // The payment-mode criterion is decided by the branch: no claim needed.
    // Loyalty is eligible only on the buyer's claim: not guaranteed.
    assert_eq!(floor, ["cash", "finance-only"]);
    let best: Vec<&str> = finance
        .best_stack
        .program_ids
        .iter()
        .map(|r| r.program_id.as_str())
        .collect();
    assert_eq!(best, ["cash", "finance-only", "loyalty"]);
    // In the cash branch the payment-mode program is ineligible, so out of both.
    let cash = &e.branches[0];
    assert_eq!(cash.guaranteed_floor.program_ids.len(), 1);
}
