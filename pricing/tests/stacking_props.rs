//! Property tests for the stacking search: it equals a brute-force optimum
//! (the oracle below enumerates every subset), net price is never negative,
//! and the result does not depend on program order.

mod common;

use std::collections::BTreeSet;

use common::*;
use pricing::Currency;
use pricing::stacking::{Optimality, ProfilePaymentMode};
use proptest::prelude::*;
use serde_json::{Value, json};

#[derive(Clone, Debug)]
struct Spec {
    amount: Option<i64>, // None = unknown amount
    combinability: u8,   // 0 stackable, 1 exclusive, 2 rule_defined (stack.len() <= 3)
    group: u8,
    top: bool,
    always: bool,
    not_with: Vec<usize>,
    with: Vec<usize>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        prop_oneof![1 => Just(None), 9 => (0_i64..5_000).prop_map(Some)],
        prop_oneof![6 => Just(0_u8), 3 => Just(1_u8), 1 => Just(2_u8)],
        0_u8..4,
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.2),
        prop::collection::vec(0_usize..12, 0..3),
        prop::collection::vec(0_usize..12, 0..4),
    )
        .prop_map(
            |(amount, combinability, group, top, always, not_with, with)| Spec {
                amount,
                combinability,
                group,
                top,
                always,
                not_with,
                with,
            },
        )
}

fn id(i: usize) -> String {
    format!("p{i:02}")
}

/// Groups 0 and 1 are `best_one`, 2 and 3 `all`.
fn best_one(group: u8) -> bool {
    group < 2
}

fn to_json(specs: &[Spec]) -> Vec<Value> {
    let n = specs.len();
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let refs = |l: &[usize]| -> Vec<String> {
                l.iter()
                    .filter(|&&j| j < n && j != i)
                    .map(|&j| id(j))
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect()
            };
            let mut v = prog(&id(i), s.amount.unwrap_or(0));
            if s.amount.is_none() {
                v = set(
                    v,
                    "/amount",
                    json!({"status": "unknown", "reason": "not published"}),
                );
            }
            let comb = ["stackable", "exclusive", "rule_defined"][usize::from(s.combinability)];
            v = set(
                v,
                "/stacking",
                json!({
                    "group": format!("g{}", s.group),
                    "combinability": comb,
                    "combinable_with": refs(&s.with),
                    "not_combinable_with": refs(&s.not_with),
                    "always_stackable": s.always,
                    "top_of_deal": s.top,
                    "group_resolution": if best_one(s.group) { "best_one" } else { "all" },
                }),
            );
            if s.combinability == 2 {
                v = set(v, "/stacking/rule", json!("stack.len() <= 3"));
                // The rule is monotone; declaring it or not must not change the optimum.
                v = set(v, "/stacking/rule_monotone", json!(s.always));
            }
            v
        })
        .collect()
}

/// Independent restatement of docs/pricing.md "Stack validity" for the oracle.
fn pair_ok(specs: &[Spec], a: usize, b: usize) -> bool {
    let (sa, sb) = (&specs[a], &specs[b]);
    let excl = |x: &Spec, y: usize| x.not_with.contains(&y);
    if excl(sa, b) || excl(sb, a) {
        return false;
    }
    if sa.top && sb.top {
        return false;
    }
    if sa.group == sb.group && best_one(sa.group) {
        return false;
    }
    let side =
        |x: &Spec, y: &Spec, yi: usize| x.combinability != 1 || x.with.contains(&yi) || y.always;
    side(sa, sb, b) && side(sb, sa, a)
}

fn oracle(specs: &[Spec]) -> (i64, Vec<String>) {
    let n = specs.len();
    let mut best: Option<(i64, usize, Vec<String>)> = None;
    for mask in 0_u32..(1 << n) {
        let members: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
        let valid = members
            .iter()
            .all(|&a| members.iter().all(|&b| a == b || pair_ok(specs, a, b)))
            && members
                .iter()
                .all(|&m| specs[m].combinability != 2 || members.len() <= 3);
        if !valid {
            continue;
        }
        let total: i64 = members.iter().map(|&m| specs[m].amount.unwrap_or(0)).sum();
        let ids: Vec<String> = members.iter().map(|&m| id(m)).collect();
        let better = match &best {
            None => true,
            Some((bt, bc, bi)) => {
                total > *bt
                    || (total == *bt
                        && (members.len() < *bc || (members.len() == *bc && ids < *bi)))
            }
        };
        if better {
            best = Some((total, members.len(), ids));
        }
    }
    let (t, _, ids) = best.expect("the empty stack is valid");
    (t, ids)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn search_equals_brute_force_optimum(specs in prop::collection::vec(spec(), 0..=12)) {
        let e = eval(to_json(&specs));
        let (total, ids) = oracle(&specs);
        prop_assert_eq!(e.best_stack.optimality, Optimality::Proven);
        prop_assert_eq!(e.best_stack.total_discount.amount_minor(), total);
        prop_assert_eq!(best_ids(&e), ids);
    }

    #[test]
    fn net_price_is_never_negative(
        specs in prop::collection::vec(spec(), 0..=8),
        price in 0_i64..2_000,
        surcharge in prop::option::of(0_i64..1_000),
    ) {
        let mut ps = to_json(&specs);
        if let Some(s) = surcharge {
            ps.push(set(set(prog("zz_sur", s), "/direction", json!("surcharge")), "/kind", json!("surcharge")));
        }
        let e = eval_with(ps, &vehicle(price, Currency::USD), &profile(ProfilePaymentMode::Unknown));
        for b in &e.branches {
            prop_assert!(!b.best_stack.net_price.is_negative());
            prop_assert!(!b.guaranteed_floor.net_price.is_negative());
        }
        prop_assert!(!e.best_stack.net_price.is_negative());
    }

    #[test]
    fn result_is_independent_of_program_order(
        specs in prop::collection::vec(spec(), 0..=10),
        seed in any::<u64>(),
    ) {
        let ps = to_json(&specs);
        let mut shuffled = ps.clone();
        // Deterministic Fisher-Yates from the seed.
        let mut x = seed | 1;
        for i in (1..shuffled.len()).rev() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            let j = usize::try_from(x % (i as u64 + 1)).unwrap();
            shuffled.swap(i, j);
        }
        let a = serde_json::to_string(&eval(ps)).unwrap();
        let b = serde_json::to_string(&eval(shuffled)).unwrap();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn rules_never_escape_their_budget(n in 0_i64..1_000_000) {
        // Arbitrary loop bounds: either a verdict or a budget failure, never a hang or panic.
        let src = format!("let x = 0; for i in 0..{n} {{ x += 1; }} x >= 0");
        let engine = pricing::rules::engine();
        let ast = pricing::rules::compile(&engine, &src).unwrap();
        let ps = programs(vec![prog("a", 1)]);
        let stack: Vec<_> = ps.programs().iter().collect();
        let ctx = pricing::rules::RuleContext::new(
            &pricing::rules::RuleVehicle { make: "m", model: "m", year: 2026, trim: None, condition: "new", price_minor: 1, currency: "USD" },
            &pricing::rules::RuleProfile { payment_mode: "cash", country: "US", subdivision: None, claims: vec![] },
            "2026-06-01T00:00:00+00:00",
        );
        let r = pricing::rules::evaluate_rule(&engine, &ast, &stack, &ctx);
        prop_assert!(matches!(r, Ok(true) | Err(pricing::rules::RuleFailure::Budget { .. })), "{:?}", r);
    }
}

// ---------------------------------------------------------------------------
// Declarative rules (docs/pricing.md "Declarative rules"): `stacking.limits` and `tag:` exclusions
// choose exactly the stack their rhai equivalents choose, and both equal a
// brute-force optimum.

/// A limit: selector 0 = every program, 1 = a group, 2 = a tag.
#[derive(Clone, Debug)]
struct LimitSpec {
    selector: u8,
    which: u8,
    max_programs: Option<u32>,
    max_amount: Option<i64>,
}

#[derive(Clone, Debug)]
struct DeclSpec {
    amount: Option<i64>,
    group: u8,
    tags: Vec<u8>,
    limits: Vec<LimitSpec>,
    /// Tags this program never stacks with (`not_combinable_with: tag:tN`).
    excluded_tags: Vec<u8>,
    /// Declare the rhai equivalent `rule_monotone` (it is monotone).
    monotone: bool,
}

fn limit_spec() -> impl Strategy<Value = LimitSpec> {
    (
        0_u8..3,
        0_u8..3,
        prop::option::of(0_u32..4),
        prop::option::of(0_i64..9_000),
    )
        .prop_filter("a limit needs a maximum", |(_, _, c, a)| {
            c.is_some() || a.is_some()
        })
        .prop_map(|(selector, which, max_programs, max_amount)| LimitSpec {
            selector,
            which,
            max_programs,
            max_amount,
        })
}

fn decl_spec() -> impl Strategy<Value = DeclSpec> {
    (
        prop_oneof![1 => Just(None), 9 => (0_i64..5_000).prop_map(Some)],
        0_u8..3,
        prop::collection::btree_set(0_u8..3, 0..3),
        prop_oneof![3 => Just(vec![]), 2 => prop::collection::vec(limit_spec(), 1..3)],
        prop_oneof![4 => Just(vec![]), 1 => prop::collection::vec(0_u8..3, 1..2)],
        any::<bool>(),
    )
        .prop_map(
            |(amount, group, tags, limits, excluded_tags, monotone)| DeclSpec {
                amount,
                group,
                tags: tags.into_iter().collect(),
                limits,
                excluded_tags,
                monotone,
            },
        )
}

/// Tags some program carries (a `tag:` reference or limit must name one).
fn carried(specs: &[DeclSpec]) -> BTreeSet<u8> {
    specs.iter().flat_map(|s| s.tags.iter().copied()).collect()
}

/// The limits and exclusions that can be written for this file (a limit
/// or exclusion naming a group or tag nobody has is an import error, so the
/// generator drops it; a group always exists when its index is in use).
fn effective(specs: &[DeclSpec]) -> Vec<(Vec<LimitSpec>, Vec<u8>)> {
    let tags = carried(specs);
    let groups: BTreeSet<u8> = specs.iter().map(|s| s.group).collect();
    specs
        .iter()
        .map(|s| {
            let limits = s
                .limits
                .iter()
                .filter(|l| match l.selector {
                    1 => groups.contains(&l.which),
                    2 => tags.contains(&l.which),
                    _ => true,
                })
                .cloned()
                .collect();
            let excl = s
                .excluded_tags
                .iter()
                .copied()
                .filter(|t| tags.contains(t))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            (limits, excl)
        })
        .collect()
}

fn base_program(i: usize, s: &DeclSpec) -> Value {
    let mut v = prog(&id(i), s.amount.unwrap_or(0));
    if s.amount.is_none() {
        v = set(
            v,
            "/amount",
            json!({"status": "unknown", "reason": "not published"}),
        );
    }
    v = set(v, "/stacking/group", json!(format!("g{}", s.group)));
    let tags: Vec<String> = s.tags.iter().map(|t| format!("t{t}")).collect();
    if !tags.is_empty() {
        v = set(v, "/tags", json!(tags));
    }
    v
}

fn declarative_json(specs: &[DeclSpec]) -> Vec<Value> {
    let eff = effective(specs);
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (limits, excl) = &eff[i];
            let mut v = base_program(i, s);
            if !excl.is_empty() {
                let refs: Vec<String> = excl.iter().map(|t| format!("tag:t{t}")).collect();
                v = set(v, "/stacking/not_combinable_with", json!(refs));
            }
            if !limits.is_empty() {
                let ls: Vec<Value> = limits
                    .iter()
                    .map(|l| {
                        let mut o = json!({});
                        match l.selector {
                            1 => o["group"] = json!(format!("g{}", l.which)),
                            2 => o["tag"] = json!(format!("t{}", l.which)),
                            _ => {}
                        }
                        if let Some(c) = l.max_programs {
                            o["max_programs"] = json!(c);
                        }
                        if let Some(a) = l.max_amount {
                            o["max_amount"] = json!({"amount_minor": a, "currency": "USD"});
                        }
                        o
                    })
                    .collect();
                v = set(v, "/stacking/combinability", json!("rule_defined"));
                v = set(v, "/stacking/limits", json!(ls));
            }
            v
        })
        .collect()
}

/// The same constraints written as rhai rules.
fn rhai_json(specs: &[DeclSpec]) -> Vec<Value> {
    let eff = effective(specs);
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (limits, excl) = &eff[i];
            let mut v = base_program(i, s);
            let mut clauses: Vec<String> = Vec::new();
            for t in excl {
                clauses.push(format!(
                    "!stack.some(|p| p.program_id != \"{}\" && \"t{t}\" in p.tags)",
                    id(i)
                ));
            }
            for l in limits {
                let sel = match l.selector {
                    1 => format!("p.group == \"g{}\"", l.which),
                    2 => format!("\"t{}\" in p.tags", l.which),
                    _ => "true".to_owned(),
                };
                if let Some(c) = l.max_programs {
                    clauses.push(format!("stack.filter(|p| {sel}).len() <= {c}"));
                }
                if let Some(a) = l.max_amount {
                    clauses.push(format!(
                        "stack.filter(|p| ({sel}) && type_of(p.amount_minor) == \"i64\").reduce(|s, p| s + p.amount_minor, 0) <= {a}"
                    ));
                }
            }
            if !clauses.is_empty() {
                v = set(v, "/stacking/combinability", json!("rule_defined"));
                v = set(v, "/stacking/rule", json!(clauses.join(" && ")));
                v = set(v, "/stacking/rule_monotone", json!(s.monotone));
            }
            v
        })
        .collect()
}

/// Brute force over every subset with the declarative semantics restated.
fn decl_oracle(specs: &[DeclSpec]) -> (i64, Vec<String>) {
    let eff = effective(specs);
    let n = specs.len();
    let selects = |l: &LimitSpec, m: usize| match l.selector {
        1 => specs[m].group == l.which,
        2 => specs[m].tags.contains(&l.which),
        _ => true,
    };
    let mut best: Option<(i64, usize, Vec<String>)> = None;
    for mask in 0_u32..(1 << n) {
        let members: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
        let excl_ok = members.iter().all(|&a| {
            members.iter().all(|&b| {
                a == b
                    || !(eff[a].1.iter().any(|t| specs[b].tags.contains(t))
                        || eff[b].1.iter().any(|t| specs[a].tags.contains(t)))
            })
        });
        let limits_ok = members.iter().all(|&o| {
            eff[o].0.iter().all(|l| {
                let sel: Vec<usize> = members.iter().copied().filter(|&m| selects(l, m)).collect();
                let sum: i64 = sel.iter().map(|&m| specs[m].amount.unwrap_or(0)).sum();
                l.max_programs.is_none_or(|c| sel.len() <= c as usize)
                    && l.max_amount.is_none_or(|a| sum <= a)
            })
        });
        if !excl_ok || !limits_ok {
            continue;
        }
        let total: i64 = members.iter().map(|&m| specs[m].amount.unwrap_or(0)).sum();
        let ids: Vec<String> = members.iter().map(|&m| id(m)).collect();
        let better = match &best {
            None => true,
            Some((bt, bc, bi)) => {
                total > *bt
                    || (total == *bt
                        && (members.len() < *bc || (members.len() == *bc && ids < *bi)))
            }
        };
        if better {
            best = Some((total, members.len(), ids));
        }
    }
    let (t, _, ids) = best.expect("the empty stack is valid");
    (t, ids)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn declarative_rules_choose_the_same_stack_as_their_rhai_equivalents(
        specs in prop::collection::vec(decl_spec(), 0..=10),
    ) {
        let p = profile(ProfilePaymentMode::Unknown);
        let v = vehicle(3_000_000, Currency::USD);
        let d = eval_with(declarative_json(&specs), &v, &p);
        let r = eval_with(rhai_json(&specs), &v, &p);
        let (total, ids) = decl_oracle(&specs);
        prop_assert_eq!(d.branches.len(), r.branches.len());
        for (bd, br) in d.branches.iter().zip(&r.branches) {
            prop_assert_eq!(bd.best_stack.optimality, Optimality::Proven);
            prop_assert_eq!(br.best_stack.optimality, Optimality::Proven);
            prop_assert_eq!(&bd.best_stack.program_ids, &br.best_stack.program_ids);
            prop_assert_eq!(bd.best_stack.total_discount, br.best_stack.total_discount);
            prop_assert_eq!(&bd.guaranteed_floor.program_ids, &br.guaranteed_floor.program_ids);
            prop_assert_eq!(bd.best_stack.total_discount.amount_minor(), total);
            let got: Vec<String> = bd.best_stack.program_ids.iter().map(|r| r.program_id.clone()).collect();
            prop_assert_eq!(&got, &ids);
        }
    }
}
