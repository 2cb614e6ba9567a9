//! Evaluator timings (ignored by default). Run in release:
//! `cargo test -p pricing --release --test stacking_timing -- --ignored --nocapture`

mod common;

use std::time::Instant;

use common::*;
use pricing::Currency;
use pricing::stacking::{ProfilePaymentMode, SearchBudget};
use serde_json::json;

fn programs_n(n: usize, monotone: bool) -> Vec<serde_json::Value> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n)
        .map(|i| {
            let amount = i64::try_from(next() % 300_000).unwrap();
            let mut v = prog(&format!("p{i:02}"), amount);
            let others: Vec<String> = (0..2)
                .map(|_| format!("p{:02}", next() % n as u64))
                .filter(|o| *o != format!("p{i:02}"))
                .collect();
            v = set(v, "/stacking/not_combinable_with", json!(others));
            v = set(v, "/stacking/group", json!(format!("g{}", i % 8)));
            if i % 8 < 3 {
                v = set(v, "/stacking/group_resolution", json!("best_one"));
            }
            if i % 7 == 3 {
                v = set(v, "/stacking/combinability", json!("exclusive"));
            }
            if i == 5 {
                v = set(v, "/stacking/combinability", json!("rule_defined"));
                v = set(v, "/stacking/rule", json!("stack.len() <= 6"));
                v = set(v, "/stacking/rule_monotone", json!(monotone));
            }
            v
        })
        .collect()
}

#[test]
#[ignore = "timing; run in release with --ignored --nocapture"]
fn evaluator_timings() {
    for (n, monotone) in [(10, false), (20, false), (40, false), (40, true)] {
        let ps = programs(programs_n(n, monotone));
        let v = vehicle(5_000_000, Currency::USD);
        for mode in [ProfilePaymentMode::Cash, ProfilePaymentMode::Unknown] {
            let p = profile(mode);
            let runs = 20;
            let started = Instant::now();
            let mut e = None;
            for _ in 0..runs {
                e = Some(pricing::evaluate(&v, &ps, &p, SearchBudget::default()).unwrap());
            }
            let e = e.unwrap();
            println!(
                "{n} programs (rule_monotone {monotone}), payment_mode {mode:?}: {:?} per evaluation; best {} programs, {:?}",
                started.elapsed() / runs,
                e.best_stack.program_ids.len(),
                e.best_stack.optimality
            );
            for t in e
                .trace
                .iter()
                .filter(|t| t.contains("nodes)") || t.contains("more stacks"))
            {
                println!("  {t}");
            }
        }
    }
}
