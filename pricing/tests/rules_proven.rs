//! Rules proven at import (docs/pricing.md section 3, "Rules are proven at
//! import") and the program values a rule sees (`stack[i]`).
//!
//! `ProgramSet::validate` runs every rhai rule on synthetic stacks and
//! refuses a file whose rule returns a non-boolean, raises an error or needs
//! more than `rules::RULE_CALL_OPERATIONS` operations on any of them, naming
//! the program, the JSON pointer of the rule and what happened on which
//! stack.

mod common;

use common::*;
use pricing::incentives::{Program, ProgramProblem, ProgramSet};
use pricing::stacking::ProfilePaymentMode;
use serde_json::{Value, json};

fn ruled(id: &str, minor: i64, src: &str) -> Value {
    set(
        set(
            prog(id, minor),
            "/stacking/combinability",
            json!("rule_defined"),
        ),
        "/stacking/rule",
        json!(src),
    )
}

fn problems(values: Vec<Value>) -> Vec<ProgramProblem> {
    let ps: Vec<Program> = values
        .into_iter()
        .map(|v| serde_json::from_value(v).expect("parses"))
        .collect();
    ProgramSet::validate(ps).expect_err("the file is refused")
}

#[test]
fn a_rule_returning_an_integer_is_refused_with_program_pointer_and_stack() {
    let found = problems(vec![
        prog("a", 10_000),
        ruled("plus-one", 20_000, "stack.len() + 1"),
    ]);
    assert_eq!(found.len(), 1, "{found:#?}");
    let p = &found[0];
    assert_eq!(p.program_id.as_deref(), Some("plus-one"));
    assert_eq!(p.pointer, "/programs/1/stacking/rule");
    assert!(
        p.rule
            .contains("returned an integer, not a boolean, for the stack [plus-one]"),
        "{}",
        p.rule
    );
    // Unit and strings are named in words too.
    let unit = problems(vec![ruled("u", 1, "if false { true }")]);
    assert!(unit[0].rule.contains("returned nothing"), "{unit:#?}");
    let text = problems(vec![ruled("t", 1, "\"yes\"")]);
    assert!(text[0].rule.contains("returned a string"), "{text:#?}");
}

#[test]
fn a_rule_raising_an_error_on_a_pair_is_refused_naming_the_pair() {
    // Fine alone; indexes past the end of any larger stack.
    let found = problems(vec![
        prog("a", 10_000),
        ruled("r", 20_000, "stack.len() == 1 || stack[5].amount_minor > 0"),
    ]);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].pointer, "/programs/1/stacking/rule");
    assert!(
        found[0].rule.contains("raised an error") && found[0].rule.contains("[a, r]"),
        "{}",
        found[0].rule
    );
}

#[test]
fn a_rule_over_its_operation_budget_is_refused_and_the_budget_is_stated() {
    let found = problems(vec![ruled(
        "slow",
        1,
        "let s = 0; for i in 0..20000 { s += i; } s > 0",
    )]);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].rule.contains("ran out of its budget")
            && found[0].rule.contains("10,000 rhai operations")
            && found[0].rule.contains("[slow]"),
        "{}",
        found[0].rule
    );
    // Operations inside closures count: each `map` closure is cheap on its
    // own (rhai restarts its count per closure), the call is not.
    let mut sheet: Vec<Value> = (0..6).map(|i| prog(&format!("p{i}"), 1_000)).collect();
    sheet.push(ruled(
        "closures",
        1,
        "stack.map(|p| { let s = 0; for i in 0..1000 { s += i; } s }).len() > 0",
    ));
    let found = problems(sheet);
    assert!(
        found[0].rule.contains("ran out of its budget") && found[0].rule.contains("programs)]"),
        "the whole set of seven programs is over the budget: {found:#?}"
    );
}

#[test]
fn a_rule_that_fails_only_on_the_whole_set_or_in_one_payment_mode_is_refused() {
    let mut sheet: Vec<Value> = (0..4).map(|i| prog(&format!("p{i}"), 1_000)).collect();
    sheet.push(ruled("big", 1, "if stack.len() > 3 { 42 } else { true }"));
    let found = problems(sheet);
    assert_eq!(found[0].pointer, "/programs/4/stacking/rule");
    assert!(
        found[0].rule.contains("[big, p0, p1, p2, p3]"),
        "{}",
        found[0].rule
    );
    let found = problems(vec![ruled(
        "lease",
        1,
        "if ctx.profile.payment_mode == \"lease\" { () } else { true }",
    )]);
    assert!(
        found[0].rule.contains("with payment mode lease"),
        "{}",
        found[0].rule
    );
}

#[test]
fn proof_problems_come_with_every_other_problem_in_program_order() {
    let found = problems(vec![
        ruled("first", 1, "1"),
        prog("second", -5),
        ruled("third", 1, "stack.len() < 5"),
    ]);
    let pointers: Vec<&str> = found.iter().map(|p| p.pointer.as_str()).collect();
    assert_eq!(
        pointers,
        [
            "/programs/0/stacking/rule",
            "/programs/1/amount/amount/amount_minor"
        ]
    );
}

#[test]
fn realistic_rules_pass_the_proof() {
    // The rules of the documentation and of the demo's history.
    for src in [
        "stack.all(|p| \"spring\" in p.tags)",
        "stack.filter(|p| p.group == \"bonus\").len() <= 1",
        "let s = 0; for p in stack { if p.group == \"bonus\" { s += p.amount_minor; } } s <= 60000",
        "ctx.profile.payment_mode == \"lease\" || stack.len() <= 1",
        "type_of(stack[0].amount_minor) == \"i64\"",
    ] {
        let mut sheet: Vec<Value> = (0..40)
            .map(|i| set(prog(&format!("p{i:02}"), 1_000), "/tags", json!(["spring"])))
            .collect();
        sheet.push(set(ruled("r", 1, src), "/tags", json!(["spring"])));
        let ps: Vec<Program> = sheet
            .into_iter()
            .map(|v| serde_json::from_value(v).unwrap())
            .collect();
        if let Err(found) = ProgramSet::validate(ps) {
            panic!("{src}: {found:#?}");
        }
    }
}

#[test]
fn a_program_reads_like_the_map_it_replaced() {
    let src = r#"
        let p = stack[0];
        type_of(p) == "program"
            && p.program_id == "r" && p["program_id"] == "r"
            && p.group == "r" && p.kind == "cash" && p.direction == "discount"
            && p.amount_minor == 1000 && p.currency == "USD" && p.revision == 1
            && p.combinability == "rule_defined" && !p.top_of_deal && !p.always_stackable
            && "bonus" in p.tags && "group" in p && !("nope" in p)
            && p.nope == () && p["nope"] == () && p.keys().len() == 12 && p.len() == 12
    "#;
    let e = eval(vec![set(ruled("r", 1_000, src), "/tags", json!(["bonus"]))]);
    assert_eq!(best_ids(&e), ["r"], "{:#?}", e.trace);
}

#[test]
fn a_rule_over_a_twenty_program_stack_is_judged_not_refused_as_too_large() {
    // Each program was an object map of 12 entries, and rhai counts every
    // entry of every map in the stack against its map-size limit (200): a
    // stack of 17 or more programs made every rule fail with "Size of
    // object map too large", whatever it said.
    let mut sheet: Vec<Value> = (0..19).map(|i| prog(&format!("p{i:02}"), 1_000)).collect();
    sheet.push(ruled("all-of-them", 5_000, "stack.len() <= 20"));
    let e = eval_with(
        sheet,
        &vehicle(3_000_000, pricing::Currency::USD),
        &profile(ProfilePaymentMode::Cash),
    );
    assert_eq!(e.best_stack.program_ids.len(), 20, "{:#?}", e.trace);
    assert!(!e.trace.iter().any(|t| t.contains("too large")));
}
