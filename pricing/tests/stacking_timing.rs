//! Evaluator timings (ignored by default). Run in release:
//! `cargo test -p pricing --release --test stacking_timing -- --ignored --nocapture`
//!
//! Two program mixes, each at 10, 20 and 40 applicable programs, evaluated
//! for one payment mode (cash) and for `unknown` (three branches):
//!
//! * **realistic**: mostly stackable programs in groups (OEM cash, bonus,
//!   loyalty/conquest `best_one`, finance- and lease-only programs, dealer
//!   discounts, affinity `always_stackable`), a few `exclusive` programs and
//!   two `rule_defined` ones (one declared `rule_monotone`, one not, as in
//!   the demo programs);
//! * **oem sheet**: the demo's sheet grown to n programs, its dealer rule
//!   written in rhai and as the equivalent declarative limit;
//! * **every program ruled**: each program carries `stack.len() <= 1`, not
//!   declared monotone (the whole-evaluation budget ends it, `bounded`);
//! * **hard synthetic**: the adversarial worst case (2 random exclusions per
//!   program, 3 `best_one` groups, some exclusive programs, one rule
//!   `stack.len() <= 6` not declared monotone), plus the same at 40 with the
//!   rule declared monotone.
//!
//! Every evaluation is timed on its own; the report gives p50/p99/max per
//! evaluation and the optimality reached (`proven`, or `bounded` when any
//! branch hit the node budget), as markdown table rows.
//!
//! On a shared machine the wall-clock tail is mostly time spent waiting for
//! a CPU (preempted by other processes). Where Linux exposes it, the time
//! this thread spent runnable but waiting on the run queue during each
//! evaluation (`/proc/thread-self/schedstat`, second field, accounted at
//! every context switch) is subtracted too, giving an "on-CPU" column: the
//! evaluation's cost without scheduler noise (cache and SMT interference
//! from neighbours remain in it).

#![allow(
    clippy::float_arithmetic,
    reason = "statistics of a benchmark, never money"
)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use pricing::Currency;
use pricing::stacking::{Evaluation, Optimality, ProfilePaymentMode, SearchBudget};
use serde_json::json;

/// xorshift64: deterministic program mixes.
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// The adversarial mix.
fn hard_synthetic(n: usize, monotone: bool) -> Vec<serde_json::Value> {
    let mut next = rng(0x9E37_79B9_7F4A_7C15);
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

/// A mix shaped like real OEM and dealer program sheets.
fn realistic(n: usize) -> Vec<serde_json::Value> {
    let mut next = rng(0x2545_F491_4F6C_DD1D);
    (0..n)
        .map(|i| {
            let id = format!("r{i:02}");
            // 250.00 .. 3,000.00 USD in steps of 50.00.
            let amount = 25_000 + i64::try_from(next() % 56).unwrap() * 5_000;
            let mut v = prog(&id, amount);
            let (group, kind) = match i % 8 {
                0 | 4 => ("oem", "cash"),
                1 => ("bonus", "bonus_cash"),
                2 => ("loyalty-conquest", "cash"),
                3 => ("finance", "finance_rate"),
                5 => ("lease", "lease_cash"),
                6 => ("dealer", "dealer_discount"),
                _ => ("affinity", "cash"),
            };
            v = set(v, "/kind", json!(kind));
            v = set(v, "/stacking/group", json!(group));
            match group {
                "loyalty-conquest" | "finance" | "lease" => {
                    v = set(v, "/stacking/group_resolution", json!("best_one"));
                }
                "affinity" => v = set(v, "/stacking/always_stackable", json!(true)),
                _ => {}
            }
            if group == "finance" {
                v = set(v, "/payment_modes", json!(["finance"]));
            }
            if group == "lease" {
                v = set(v, "/payment_modes", json!(["lease"]));
            }
            if group == "oem" && i % 3 == 0 {
                v = set(v, "/payment_modes", json!(["cash", "lease"]));
            }
            // A clearance program now and then: exclusive, combines only
            // with dealer discounts.
            if i % 10 == 9 {
                v = set(v, "/stacking/combinability", json!("exclusive"));
                v = set(v, "/stacking/combinable_with", json!(["group:dealer"]));
                v = set(v, "/stacking/group", json!("clearance"));
                v = set(v, "/stacking/group_resolution", json!("all"));
                v = set(v, "/stacking/always_stackable", json!(false));
            }
            // Conquest programs do not stack with bonus cash.
            if group == "loyalty-conquest" && i % 16 == 2 {
                v = set(v, "/stacking/not_combinable_with", json!(["group:bonus"]));
            }
            if i == 1 {
                // "At most one bonus program": monotone, declared.
                v = set(v, "/stacking/combinability", json!("rule_defined"));
                v = set(
                    v,
                    "/stacking/rule",
                    json!("stack.filter(|p| p.group == \"bonus\").len() <= 1"),
                );
                v = set(v, "/stacking/rule_monotone", json!(true));
            }
            if i == 6 {
                // The demo's dealer rule, not declared monotone.
                v = set(v, "/stacking/combinability", json!("rule_defined"));
                v = set(
                    v,
                    "/stacking/rule",
                    json!("stack.filter(|p| p.group == \"oem\").len() <= 1"),
                );
            }
            v
        })
        .collect()
}

/// How the "oem sheet" mix states its dealer rule "with me, at most one
/// OEM program" (docs/benchmarks.md "Offers: declarative rules and rhai").
#[derive(Clone, Copy, Debug)]
enum DealerRule {
    /// rhai, not declared monotone (as the audit ran it).
    Rhai,
    /// The declarative limit `{group: oem, max_programs: 1}`.
    Declarative,
}

/// A sheet shaped like the demo's, grown to `n` programs: half of them OEM
/// cash and bonus programs in one stackable `oem` group (some finance- or
/// lease-only), a percent-off dealer discount (the largest single program,
/// 4 % capped at 2,000.00) that stacks with at most one OEM program, loyalty/conquest `best_one`, an always-stackable affinity
/// program, a state program and dealer add-on discounts. This is the case
/// an earlier audit measured (55-120 ms p50 with the rule in rhai).
fn oem_sheet(n: usize, rule: DealerRule) -> Vec<serde_json::Value> {
    let mut next = rng(0x51AF_D7ED_558C_CD11);
    (0..n)
        .map(|i| {
            let id = format!("s{i:02}");
            // 300.00 .. 1,800.00 USD in steps of 50.00.
            let amount = 30_000 + i64::try_from(next() % 31).unwrap() * 5_000;
            let mut v = prog(&id, amount);
            let oem = i < n / 2;
            if oem {
                v = set(v, "/stacking/group", json!("oem"));
                v = set(
                    v,
                    "/kind",
                    json!(if i % 2 == 0 { "cash" } else { "bonus_cash" }),
                );
                match i % 5 {
                    2 => v = set(v, "/payment_modes", json!(["finance"])),
                    3 => v = set(v, "/payment_modes", json!(["lease"])),
                    4 => v = set(v, "/payment_modes", json!(["cash", "lease"])),
                    _ => {}
                }
                return v;
            }
            match i - n / 2 {
                0 => {
                    v = set(v, "/kind", json!("dealer_discount"));
                    v = set(
                        v,
                        "/amount",
                        json!({"status": "percent_off", "percent": "2.5", "rounding": "half_up"}),
                    );
                    v = set(
                        v,
                        "/cap",
                        json!({"amount_minor": 80_000, "currency": "USD"}),
                    );
                    v = set(v, "/stacking/group", json!("dealer"));
                    v = set(v, "/stacking/combinability", json!("rule_defined"));
                    match rule {
                        DealerRule::Rhai => {
                            v = set(
                                v,
                                "/stacking/rule",
                                json!("stack.filter(|p| p.group == \"oem\").len() <= 1"),
                            );
                        }
                        DealerRule::Declarative => {
                            v = set(
                                v,
                                "/stacking/limits",
                                json!([{"group": "oem", "max_programs": 1}]),
                            );
                        }
                    }
                }
                1 | 2 => {
                    v = set(v, "/stacking/group", json!("loyalty-conquest"));
                    v = set(v, "/stacking/group_resolution", json!("best_one"));
                }
                3 => v = set(v, "/stacking/always_stackable", json!(true)),
                4 => v = set(v, "/stacking/group", json!("state")),
                _ => v = set(v, "/stacking/group", json!("dealer-addons")),
            }
            v
        })
        .collect()
}

/// The worst case of docs/benchmarks.md ("Offers: rules proven, the
/// evaluation budget and rhai speed"): every program carries the rule
/// `stack.len() <= 1`, not declared monotone, so no rejection prunes and
/// every stack that beats the best single program is judged. Before the
/// whole-evaluation budget, 20 programs cost about 4 s per call; now the
/// evaluation stops at its budget (`bounded`).
fn every_program_ruled(n: usize) -> Vec<serde_json::Value> {
    (0..n)
        .map(|i| {
            let mut v = prog(&format!("e{i:02}"), 10_000 + i64::try_from(i).unwrap());
            v = set(v, "/stacking/combinability", json!("rule_defined"));
            set(v, "/stacking/rule", json!("stack.len() <= 1"))
        })
        .collect()
}

/// `proven`, or `bounded (n nodes)` when any branch hit the budget.
fn optimality(e: &Evaluation) -> String {
    let bounded: Vec<u64> = e
        .branches
        .iter()
        .filter_map(|b| match b.best_stack.optimality {
            Optimality::Bounded { nodes_explored } => Some(nodes_explored),
            Optimality::Proven => None,
        })
        .collect();
    if bounded.is_empty() {
        "proven".to_owned()
    } else {
        format!("bounded ({bounded:?} nodes)")
    }
}

/// Nanoseconds this thread has waited on a run queue (Linux), if known.
fn run_queue_wait_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Nearest-rank percentile of sorted durations.
fn pct(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[idx]
}

#[test]
#[ignore = "timing; run in release with --ignored --nocapture"]
fn evaluator_timings() {
    let mut cases: Vec<(String, usize, Vec<serde_json::Value>)> = Vec::new();
    for n in [10, 20, 40] {
        cases.push(("realistic".into(), n, realistic(n)));
    }
    for n in [10, 20, 40] {
        cases.push((
            "oem sheet, rhai rule".into(),
            n,
            oem_sheet(n, DealerRule::Rhai),
        ));
    }
    for n in [10, 20, 40] {
        cases.push((
            "oem sheet, declarative limit".into(),
            n,
            oem_sheet(n, DealerRule::Declarative),
        ));
    }
    for n in [10, 20] {
        cases.push((
            "every program ruled `stack.len() <= 1`".into(),
            n,
            every_program_ruled(n),
        ));
    }
    for (n, monotone) in [(10, false), (20, false), (40, false), (40, true)] {
        let name = if monotone {
            "hard synthetic, rule_monotone".to_owned()
        } else {
            "hard synthetic".to_owned()
        };
        cases.push((name, n, hard_synthetic(n, monotone)));
    }
    // PRICING_TIMING_FILTER=<text>: only the mixes whose name contains it.
    let filter = std::env::var("PRICING_TIMING_FILTER").unwrap_or_default();
    cases.retain(|(mix, _, _)| mix.contains(filter.as_str()));
    let mut rows = Vec::new();
    for (mix, n, values) in cases {
        let ps = programs(values);
        let v = vehicle(5_000_000, Currency::USD);
        for mode in [ProfilePaymentMode::Cash, ProfilePaymentMode::Unknown] {
            let p = profile(mode);
            let eval = || pricing::evaluate(&v, &ps, &p, SearchBudget::default()).unwrap();
            // Warm-up, then at least 10 and at most 2,000 timed evaluations
            // (stop adding after 3 s).
            for _ in 0..3 {
                std::hint::black_box(eval());
            }
            let mut times = Vec::new();
            let mut on_cpu = Vec::new();
            let started = Instant::now();
            let mut last = None;
            while times.len() < 2_000
                && (times.len() < 10 || started.elapsed() < Duration::from_secs(3))
            {
                let w0 = run_queue_wait_ns();
                let t = Instant::now();
                let e = eval();
                let wall = t.elapsed();
                times.push(wall);
                if let (Some(w0), Some(w1)) = (w0, run_queue_wait_ns()) {
                    on_cpu.push(wall.saturating_sub(Duration::from_nanos(w1.saturating_sub(w0))));
                }
                last = Some(e);
            }
            let e = last.unwrap();
            times.sort_unstable();
            on_cpu.sort_unstable();
            let cpu_col = |p: f64| {
                if on_cpu.is_empty() {
                    "–".to_owned()
                } else {
                    format!("{:.3}", ms(pct(&on_cpu, p)))
                }
            };
            let nodes: Vec<String> = e
                .trace
                .iter()
                .filter(|t| {
                    t.contains("nodes)")
                        || t.contains("more stacks")
                        || t.starts_with("rules:")
                        || t.contains("declarative limits")
                })
                .cloned()
                .collect();
            let row = format!(
                "| {mix} | {n} | {mode:?} | {} | {:.3} | {:.3} | {:.3} | {} | {} | {} | {} | {} | {} | {} |",
                times.len(),
                ms(pct(&times, 0.50)),
                ms(pct(&times, 0.99)),
                ms(times[times.len() - 1]),
                cpu_col(0.50),
                cpu_col(0.99),
                cpu_col(1.0),
                optimality(&e),
                e.best_stack.program_ids.len(),
                e.cost.nodes,
                e.cost.rule_operations,
            );
            println!("{row}");
            for t in &nodes {
                println!("    {t}");
            }
            rows.push(row);
        }
    }
    println!(
        "\n| mix | programs | payment_mode | evaluations | p50 ms | p99 ms | max ms | on-CPU p50 ms | on-CPU p99 ms | on-CPU max ms | optimality | best stack size | nodes | rhai operations |"
    );
    println!(
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |"
    );
    for r in rows {
        println!("{r}");
    }
}
