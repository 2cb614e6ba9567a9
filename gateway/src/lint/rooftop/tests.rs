//! The rooftop fold: counts, examples, fixes and the ranking, on reports
//! built by hand (the engine's verdicts are its own tests' business).

use pricing::lint::{Place, Report, RuleResult, Verdict};

use super::*;

fn result(id: &str, verdict: Verdict, confirmed: bool) -> RuleResult {
    RuleResult {
        rule_id: id.to_owned(),
        verdict,
        confirmed,
        citation: format!("cite {id}"),
        reason: format!("{id} said {verdict:?}"),
        fix: (verdict != Verdict::Pass).then(|| format!("fix {id}")),
        facts: vec![],
    }
}

fn report(rules: Vec<RuleResult>) -> Report {
    let result = if rules
        .iter()
        .any(|r| r.confirmed && r.verdict == Verdict::Fail)
    {
        Verdict::Fail
    } else if rules.iter().all(|r| r.verdict == Verdict::Pass) && !rules.is_empty() {
        Verdict::Pass
    } else {
        Verdict::CannotDetermine
    };
    Report {
        catalogue_version: "2026-12-01".to_owned(),
        place: Place {
            country: "CA".to_owned(),
            subdivision: Some("CA-ON".to_owned()),
        },
        result,
        rules,
    }
}

fn car(n: usize) -> VehicleRef {
    VehicleRef {
        vehicle_id: format!("veh.{n}"),
        stock_number: Some(format!("S{n}")),
        vin: None,
    }
}

#[test]
fn counts_examples_and_fixes_per_rule() {
    use Verdict::{CannotDetermine as Cd, Fail, Pass};
    let mut agg = Aggregator::new(2);
    for n in 0..5 {
        agg.add(
            &car(n),
            &report(vec![
                result("ON-ALL-IN", if n < 3 { Fail } else { Pass }, true),
                result("ON-VIN", if n == 4 { Cd } else { Pass }, true),
            ]),
        );
    }
    let lint = agg.finish();
    assert_eq!(lint.vehicles, 5);
    assert_eq!(lint.failing_vehicles, 3);
    assert_eq!(lint.undetermined_vehicles, 1);
    assert_eq!(lint.catalogue_version, "2026-12-01");
    assert_eq!(
        lint.place.as_ref().and_then(|p| p.subdivision.as_deref()),
        Some("CA-ON")
    );
    let all_in = &lint.rules[0];
    assert_eq!(all_in.rule_id, "ON-ALL-IN");
    assert_eq!(
        (all_in.failing, all_in.cannot_determine, all_in.passing),
        (3, 0, 2)
    );
    // Bounded: two examples kept of three failures, the first two linted.
    let kept: Vec<&str> = all_in
        .failing_examples
        .iter()
        .map(|e| e.vehicle.vehicle_id.as_str())
        .collect();
    assert_eq!(kept, ["veh.0", "veh.1"]);
    assert_eq!(all_in.failing_examples[0].reason, "ON-ALL-IN said Fail");
    assert_eq!(all_in.fix.as_deref(), Some("fix ON-ALL-IN"));
    assert_eq!(all_in.citation, "cite ON-ALL-IN");
    let vin = &lint.rules[1];
    assert_eq!((vin.failing, vin.cannot_determine, vin.passing), (0, 1, 4));
    assert_eq!(vin.undetermined_examples[0].vehicle.vehicle_id, "veh.4");
    assert!(lint.any_confirmed_failure());
    assert_eq!(
        lint.confirmed_failing_by_rule(),
        [("ON-ALL-IN".to_owned(), 3), ("ON-VIN".to_owned(), 0)].into()
    );
}

#[test]
fn confirmed_failures_rank_first_by_vehicles_then_unconfirmed_then_unknown() {
    use Verdict::{CannotDetermine as Cd, Fail, Pass};
    let mut agg = Aggregator::new(EXAMPLES);
    // A: confirmed, fails 1. B: confirmed, fails 2. U: unconfirmed, fails 3.
    // C: cannot determine 3. P: passes.
    let rows = [
        [Fail, Fail, Fail, Cd, Pass],
        [Pass, Fail, Fail, Cd, Pass],
        [Pass, Pass, Fail, Cd, Pass],
    ];
    for (n, row) in rows.iter().enumerate() {
        let ids = ["A", "B", "U", "C", "P"];
        agg.add(
            &car(n),
            &report(
                ids.iter()
                    .zip(row)
                    .map(|(id, v)| result(id, *v, *id != "U"))
                    .collect(),
            ),
        );
    }
    let lint = agg.finish();
    let order: Vec<&str> = lint.rules.iter().map(|r| r.rule_id.as_str()).collect();
    assert_eq!(order, ["B", "A", "U", "C", "P"]);
    // An unconfirmed failure alone fails no vehicle.
    assert_eq!(lint.failing_vehicles, 2);
    assert!(!lint.rules[2].confirmed_failure());
    // The metric reads the confirmed rules only.
    assert!(!lint.confirmed_failing_by_rule().contains_key("U"));
}

#[test]
fn nothing_failing_confirmed_is_no_failure() {
    let mut agg = Aggregator::new(EXAMPLES);
    agg.add(
        &car(0),
        &report(vec![
            result("U", Verdict::Fail, false),
            result("C", Verdict::CannotDetermine, true),
        ]),
    );
    let lint = agg.finish();
    assert!(!lint.any_confirmed_failure());
    assert_eq!(lint.failing_vehicles, 0);
    assert_eq!(lint.undetermined_vehicles, 1);
    // No vehicle at all: nothing linted, no place, no failure.
    let empty = Aggregator::new(EXAMPLES).finish();
    assert_eq!(empty, RooftopLint::default());
}

#[test]
fn a_place_becomes_the_jurisdiction_a_request_passes() {
    let on = Place {
        country: "CA".into(),
        subdivision: Some("CA-ON".into()),
    };
    assert_eq!(
        jurisdiction_of(&on),
        serde_json::json!({"country": "CA", "subdivision": "CA-ON"})
    );
}
