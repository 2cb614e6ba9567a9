//! The whole-evaluation budget (docs/pricing.md sections 2 and 4): search
//! nodes and rhai operations counted over every search and every branch of
//! one evaluation, the caller's interrupt, and rules failing on real
//! stacks. Deterministic: the same inputs stop at the same point.

mod common;

use std::cell::Cell;

use common::*;
use pricing::Currency;
use pricing::stacking::{
    Applicability, BudgetStop, Evaluation, Optimality, ProfilePaymentMode, SearchBudget,
    evaluate_with,
};
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

/// `n` programs of similar amounts, each with a rule that costs about
/// `cost` operations per program of the stack it judges, not declared
/// monotone: the search must judge many stacks.
fn costly_sheet(n: usize, cost: u32) -> Vec<Value> {
    (0..n)
        .map(|i| {
            ruled(
                &format!("c{i:02}"),
                10_000 + i64::try_from(i).unwrap(),
                &format!(
                    "let s = 0; for p in stack {{ for i in 0..{cost} {{ s += 1; }} }} stack.len() <= 2 || s < 0"
                ),
            )
        })
        .collect()
}

fn run(values: Vec<Value>, mode: ProfilePaymentMode, budget: SearchBudget) -> Evaluation {
    pricing::evaluate(
        &vehicle(3_000_000, Currency::USD),
        &programs(values),
        &profile(mode),
        budget,
    )
    .expect("evaluates")
}

fn bounded(e: &Evaluation) -> bool {
    e.branches.iter().any(|b| {
        matches!(b.best_stack.optimality, Optimality::Bounded { .. })
            || matches!(b.guaranteed_floor.optimality, Optimality::Bounded { .. })
    })
}

#[test]
fn a_small_sheet_is_proven_within_the_default_budget() {
    let e = run(
        costly_sheet(4, 10),
        ProfilePaymentMode::Unknown,
        SearchBudget::default(),
    );
    assert!(!bounded(&e), "{:#?}", e.trace);
    assert_eq!(e.cost.stopped, None);
    assert!(e.cost.rule_calls > 0 && e.cost.rule_operations > 0);
    assert!(!e.trace.iter().any(|t| t.starts_with("budget:")));
    // At most two programs stack (the rules say so).
    assert_eq!(e.best_stack.program_ids.len(), 2);
}

#[test]
fn the_rule_operation_budget_covers_every_call_of_the_evaluation_and_bounds_it() {
    let budget = SearchBudget {
        max_rule_operations: 50_000,
        ..SearchBudget::default()
    };
    let e = run(costly_sheet(16, 40), ProfilePaymentMode::Unknown, budget);
    assert!(bounded(&e), "{:#?}", e.trace);
    assert_eq!(e.cost.stopped, Some(BudgetStop::RuleOperations));
    assert!(
        e.cost.rule_operations <= 50_000,
        "charged {} of 50,000",
        e.cost.rule_operations
    );
    // Every branch got its part of the budget and found a real stack.
    for b in &e.branches {
        assert!(!b.best_stack.program_ids.is_empty(), "{:#?}", e.trace);
    }
    let line = e
        .trace
        .iter()
        .find(|t| t.starts_with("budget:"))
        .expect("the trace says why");
    assert!(
        line.contains("50000 rhai operations") && line.contains("optimality bounded"),
        "{line}"
    );
    // Counted, not timed: the same inputs stop at exactly the same point.
    let again = run(costly_sheet(16, 40), ProfilePaymentMode::Unknown, budget);
    assert_eq!(again.cost, e.cost);
    assert_eq!(
        serde_json::to_string(&again).unwrap(),
        serde_json::to_string(&e).unwrap()
    );
}

#[test]
fn the_node_budget_is_shared_by_every_search_of_the_evaluation() {
    // No rules: 18 stackable programs and 3 branches, 2^18 stacks each.
    let sheet: Vec<Value> = (0..18)
        .map(|i| {
            set(
                prog(&format!("p{i:02}"), 1_000),
                "/stacking/combinability",
                json!("stackable"),
            )
        })
        .collect();
    let proven = run(
        sheet.clone(),
        ProfilePaymentMode::Unknown,
        SearchBudget::default(),
    );
    assert!(!bounded(&proven), "plain stackable programs need few nodes");
    let budget = SearchBudget {
        max_nodes: 12,
        ..SearchBudget::default()
    };
    let e = run(sheet, ProfilePaymentMode::Unknown, budget);
    assert_eq!(e.cost.stopped, Some(BudgetStop::Nodes));
    assert!(e.cost.nodes <= 12, "{}", e.cost.nodes);
    // Four nodes per branch: each branch's best stack explored exactly its part.
    for b in &e.branches {
        assert_eq!(
            b.best_stack.optimality,
            Optimality::Bounded { nodes_explored: 4 },
            "{:#?}",
            e.trace
        );
    }
}

#[test]
fn an_interrupt_ends_the_evaluation_with_the_best_stacks_found_so_far() {
    let asked = Cell::new(0_u32);
    // Answers yes from the sixth question on (each rule call and every
    // 64 nodes ask).
    let interrupt = || {
        asked.set(asked.get() + 1);
        asked.get() > 5
    };
    let e = evaluate_with(
        &vehicle(3_000_000, Currency::USD),
        &programs(costly_sheet(14, 5)),
        &profile(ProfilePaymentMode::Unknown),
        SearchBudget::default(),
        &interrupt,
    )
    .unwrap();
    assert_eq!(e.cost.stopped, Some(BudgetStop::Interrupted));
    assert!(bounded(&e));
    // Once interrupted it is not asked again.
    assert_eq!(asked.get(), 6);
    assert!(
        e.trace
            .iter()
            .any(|t| t.starts_with("budget:") && t.contains("the caller's deadline")),
        "{:#?}",
        e.trace
    );
    // Whatever was found is a valid stack: at most two programs.
    assert!(e.best_stack.program_ids.len() <= 2);
}

#[test]
fn a_rule_failing_on_a_real_stack_leaves_its_program_out_with_the_reason() {
    // Returns an integer only on stacks of three: the import's synthetic
    // stacks (alone, pairs, the whole set of four) never see one.
    let e = run(
        vec![
            ruled("int", 900_000, "if stack.len() == 3 { 7 } else { true }"),
            prog("a", 10_000),
            prog("b", 9_000),
            prog("c", 8_000),
        ],
        ProfilePaymentMode::Unknown,
        SearchBudget::default(),
    );
    assert!(!bounded(&e));
    assert_eq!(best_ids(&e), ["a", "b", "c"]);
    for b in &e.branches {
        let report = b.programs.iter().find(|p| p.program_id == "int").unwrap();
        match &report.applicability {
            Applicability::NotApplicable { reason } => assert!(
                reason.contains("returned an integer, not a boolean")
                    && reason.contains("for the stack [a, b, int]"),
                "{reason}"
            ),
            Applicability::Applicable => panic!("a failing rule looks usable: {report:?}"),
        }
    }
    assert_eq!(e.unusable_rules.len(), 1);
    assert!(e.unusable_rules[0].reason.contains("payment mode cash"));
}

#[test]
fn closure_operations_are_charged_to_the_evaluation() {
    // Each `all` closure runs 200 loop iterations: rhai's own count starts
    // again in each closure; the evaluation's meter does not.
    let rule = "stack.all(|p| { let s = 0; for i in 0..200 { s += i; } s > 0 })";
    let e = run(
        vec![
            ruled("r", 50_000, rule),
            prog("a", 10_000),
            prog("b", 9_000),
        ],
        ProfilePaymentMode::Cash,
        SearchBudget::default(),
    );
    assert_eq!(best_ids(&e), ["a", "b", "r"]);
    // Three members × 200 iterations × at least 2 operations each.
    assert!(
        e.cost.rule_operations >= 1_200,
        "{} operations in {} calls",
        e.cost.rule_operations,
        e.cost.rule_calls
    );
}
