//! The rhai sandbox (docs/pricing.md section 4) and program validation.

mod common;

use std::time::{Duration, Instant};

use common::*;
use pricing::incentives::{Program, ProgramSet};
use pricing::rules::{self, RuleContext, RuleFailure, RuleProfile, RuleVehicle};
use serde_json::json;

fn ctx() -> RuleContext {
    RuleContext::new(
        &RuleVehicle {
            make: "Toyota",
            model: "Camry",
            year: 2026,
            trim: None,
            condition: "new",
            price_minor: 3_000_000,
            currency: "USD",
        },
        &RuleProfile {
            payment_mode: "cash",
            country: "US",
            subdivision: Some("US-IL"),
            claims: vec![("military", Some(true)), ("loyalty", None)],
        },
        "2026-06-01T12:00:00+00:00",
    )
}

fn run(src: &str) -> Result<bool, RuleFailure> {
    let engine = rules::engine();
    let ast = rules::compile(&engine, src).expect("compiles");
    let ps = programs(vec![prog("a", 100_000), prog("b", 50_000)]);
    let stack: Vec<_> = ps.programs().iter().collect();
    rules::evaluate_rule(&engine, &ast, &stack, &ctx())
}

#[test]
fn loop_fails_fast() {
    let started = Instant::now();
    let r = run("loop {}");
    let elapsed = started.elapsed();
    println!("loop {{}} stopped after {elapsed:?}");
    assert!(matches!(r, Err(RuleFailure::Budget { .. })), "{r:?}");
    // Generous bound (debug builds, loaded CI); the point is "not forever".
    assert!(elapsed < Duration::from_secs(5));
}

#[test]
fn deep_recursion_fails() {
    let r = run("fn f(n) { f(n + 1) } f(0)");
    assert!(matches!(r, Err(RuleFailure::Budget { .. })), "{r:?}");
}

#[test]
fn huge_string_fails() {
    let r = run(r#"let s = "x"; loop { s += s; } true"#);
    assert!(matches!(r, Err(RuleFailure::Budget { .. })), "{r:?}");
}

#[test]
fn huge_array_fails() {
    let r = run("let a = []; for i in 0..100000 { a.push(i); } true");
    assert!(matches!(r, Err(RuleFailure::Budget { .. })), "{r:?}");
}

#[test]
fn eval_is_refused_at_compile_time() {
    let engine = rules::engine();
    let err = rules::compile(&engine, r#"eval("true")"#).unwrap_err();
    assert!(err.contains("eval"), "{err}");
}

#[test]
fn floats_are_not_in_the_language() {
    let engine = rules::engine();
    assert!(rules::compile(&engine, "1.5 > 1").is_err());
}

#[test]
fn non_bool_result_fails() {
    assert!(matches!(run("42"), Err(RuleFailure::NotBool { .. })));
    assert!(matches!(run("()"), Err(RuleFailure::NotBool { .. })));
}

#[test]
fn runtime_error_fails() {
    assert!(matches!(
        run("stack[99].program_id == 1"),
        Err(RuleFailure::Error { .. })
    ));
}

#[test]
fn valid_rule_sees_stack_and_ctx() {
    let src = r#"
        let total = 0;
        for p in stack { total += p.amount_minor; }
        total == 150000
            && stack[0].program_id == "a"
            && stack[0].currency == "USD"
            && ctx.vehicle.make == "Toyota"
            && ctx.vehicle.price_minor == 3000000
            && ctx.profile.payment_mode == "cash"
            && ctx.profile.jurisdiction.subdivision == "US-IL"
            && ctx.profile.claims.military == true
            && ctx.profile.claims.loyalty == "unknown"
            && ctx.as_of.starts_with("2026-06-01")
    "#;
    assert_eq!(run(src), Ok(true));
    assert_eq!(run("stack.len() > 5"), Ok(false));
}

#[test]
fn print_and_debug_are_silent() {
    assert_eq!(run(r#"print("x"); debug("y"); true"#), Ok(true));
}

// ---- validation -----------------------------------------------------------

fn parse(v: serde_json::Value) -> Program {
    serde_json::from_value(v).expect("parses")
}

#[test]
fn validation_reports_every_problem_at_once() {
    let ps = vec![
        parse(prog("a", -5)),
        parse(set(
            set(prog("a", 5), "/valid_from", json!("2026-02-01T00:00:00Z")),
            "/valid_until",
            json!("2026-01-01T00:00:00Z"),
        )),
        parse(set(
            prog("b", 0),
            "/amount",
            json!({"status": "percent_off", "percent": "2.5e1", "rounding": "half_up"}),
        )),
        parse(set(
            prog("c", 1),
            "/stacking/combinability",
            json!("rule_defined"),
        )),
        parse(set(
            set(
                prog("d", 1),
                "/stacking/combinability",
                json!("rule_defined"),
            ),
            "/stacking/rule",
            json!("stack.len( >"),
        )),
        parse(set(prog("e", 1), "/stacking/rule", json!("true"))),
        parse(set(
            prog("f", 1),
            "/stacking/not_combinable_with",
            json!(["nope", "group:nogroup"]),
        )),
    ];
    let problems = ProgramSet::validate(ps).unwrap_err();
    let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
    let has = |needle: &str| text.iter().any(|t| t.contains(needle));
    assert!(has("/programs/0/amount/amount/amount_minor"), "{text:#?}");
    assert!(
        has("/programs/1/revision (program a): duplicate"),
        "{text:#?}"
    );
    assert!(has("/programs/1/valid_until"), "{text:#?}");
    assert!(has("/programs/2/amount/percent"), "{text:#?}");
    assert!(has(
        "/programs/3/stacking/rule (program c): combinability rule_defined requires a rule"
    ));
    assert!(has(
        "/programs/4/stacking/rule (program d): rule of program d does not compile"
    ));
    assert!(has(
        "/programs/5/stacking/rule (program e): a rule is allowed only"
    ));
    assert!(has("/programs/6/stacking/not_combinable_with/0"));
    assert!(has("/programs/6/stacking/not_combinable_with/1"));
    assert_eq!(problems.len(), 9, "{text:#?}");
}

#[test]
fn percent_strings_are_exact() {
    use pricing::incentives::parse_percent;
    assert_eq!(parse_percent("2.5").unwrap().to_string(), "2.5");
    assert_eq!(parse_percent("100").unwrap().to_string(), "100");
    for bad in [
        "2.5e1", "", ".5", "5.", "-1", "0", "100.01", "1,5", " 1", "1/3",
    ] {
        assert!(parse_percent(bad).is_err(), "{bad}");
    }
}

#[test]
fn rule_hash_is_recorded() {
    let ps = programs(vec![set(
        set(
            prog("r", 1),
            "/stacking/combinability",
            json!("rule_defined"),
        ),
        "/stacking/rule",
        json!("true"),
    )]);
    let hash = &ps.programs()[0].rule.as_ref().unwrap().rule_hash;
    assert_eq!(
        hash,
        "sha256:b5bea41b6c623f7c09f1bf24dcae58ebab3c0cdd90ad966bc43a45b44867e12b"
    );
    let e = eval(vec![set(
        set(
            prog("r", 1),
            "/stacking/combinability",
            json!("rule_defined"),
        ),
        "/stacking/rule",
        json!("true"),
    )]);
    assert_eq!(
        e.provenance.programs[0].rule_hash.as_deref(),
        Some(hash.as_str())
    );
}

#[test]
fn unknown_fields_are_refused() {
    let v = set(prog("a", 1), "/bogus", json!(1));
    assert!(serde_json::from_value::<Program>(v).is_err());
    let v = set(prog("a", 1), "/stacking/bogus", json!(1));
    assert!(serde_json::from_value::<Program>(v).is_err());
}

#[test]
fn rule_monotone_needs_a_rule() {
    let p = parse(set(prog("a", 1), "/stacking/rule_monotone", json!(true)));
    let problems = ProgramSet::validate(vec![p]).unwrap_err();
    assert_eq!(problems[0].pointer, "/programs/0/stacking/rule_monotone");
}

#[test]
fn two_revisions_of_a_program_never_stack() {
    let r1 = prog("a", 100_000);
    let r2 = set(prog("a", 90_000), "/revision", json!(2));
    let e = eval(vec![r1, r2]);
    assert_eq!(e.best_stack.program_ids.len(), 1);
    assert_eq!(e.best_stack.program_ids[0].revision, 1);
}

#[test]
fn declarative_limits_and_tag_references_are_validated() {
    let parse = |v: serde_json::Value| -> Program { serde_json::from_value(v).unwrap() };
    let rd = |id: &str, limits: serde_json::Value| {
        set(
            set(
                prog(id, 1),
                "/stacking/combinability",
                json!("rule_defined"),
            ),
            "/stacking/limits",
            limits,
        )
    };
    // Valid: limits alone make a rule_defined program; a tag reference names a carried tag.
    let ok = vec![
        parse(set(prog("t", 1), "/tags", json!(["bonus"]))),
        parse(rd(
            "ok",
            json!([{"group": "t", "max_programs": 1}, {"tag": "bonus", "max_amount": {"amount_minor": 5, "currency": "USD"}}]),
        )),
        parse(set(
            prog("x", 1),
            "/stacking/not_combinable_with",
            json!(["tag:bonus"]),
        )),
    ];
    let validated = ProgramSet::validate(ok).expect("valid");
    let hashed = validated
        .programs()
        .iter()
        .find(|p| p.program.program_id == "ok")
        .unwrap();
    assert!(hashed.rule.is_none());
    assert!(hashed.rule_hash().unwrap().starts_with("sha256:"));

    let ps = vec![
        parse(set(prog("t", 1), "/tags", json!(["bonus"]))),
        parse(rd(
            "both",
            json!([{"group": "t", "tag": "bonus", "max_programs": 1}]),
        )),
        parse(rd("nomax", json!([{"group": "t"}]))),
        parse(rd(
            "badgroup",
            json!([{"group": "nogroup", "max_programs": 1}]),
        )),
        parse(rd("badtag", json!([{"tag": "notag", "max_programs": 1}]))),
        parse(rd(
            "negative",
            json!([{"max_amount": {"amount_minor": -1, "currency": "USD"}}]),
        )),
        parse(set(
            prog("stackable", 1),
            "/stacking/limits",
            json!([{"max_programs": 1}]),
        )),
        parse(set(
            prog("tagref", 1),
            "/stacking/not_combinable_with",
            json!(["tag:nosuchtag"]),
        )),
        parse(set(
            rd("mono", json!([{"max_programs": 1}])),
            "/stacking/rule_monotone",
            json!(true),
        )),
    ];
    let problems = ProgramSet::validate(ps).unwrap_err();
    let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
    let has = |needle: &str| text.iter().any(|t| t.contains(needle));
    assert!(
        has(
            "/programs/1/stacking/limits/0 (program both): a limit selects by group or by tag, not both"
        ),
        "{text:#?}"
    );
    assert!(
        has("/programs/2/stacking/limits/0 (program nomax): a limit needs max_programs"),
        "{text:#?}"
    );
    assert!(
        has("/programs/3/stacking/limits/0/group (program badgroup)"),
        "{text:#?}"
    );
    assert!(
        has("/programs/4/stacking/limits/0/tag (program badtag)"),
        "{text:#?}"
    );
    assert!(
        has("/programs/5/stacking/limits/0/max_amount/amount_minor (program negative)"),
        "{text:#?}"
    );
    assert!(
        has(
            "/programs/6/stacking/limits (program stackable): limits are allowed only with combinability rule_defined"
        ),
        "{text:#?}"
    );
    assert!(
        has("/programs/7/stacking/not_combinable_with/0 (program tagref)"),
        "{text:#?}"
    );
    assert!(
        has("/programs/8/stacking/rule_monotone (program mono)"),
        "{text:#?}"
    );
    assert_eq!(problems.len(), 8, "{text:#?}");
}
