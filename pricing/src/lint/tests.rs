//! The catalogue's validation, the golden vectors (`pricing/lint/vectors.json`)
//! and the engine's invariants (docs/lint.md "Golden vectors").

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::Value;

use super::places::CONDITIONS;
use super::*;

const VECTORS_JSON: &str = include_str!("../../lint/vectors.json");

/// One golden vector: a base disclosure of `vectors.json` changed by an
/// RFC 7386 merge patch, and the verdict `rule` must give it.
#[derive(Debug, Deserialize)]
struct Vector {
    rule: String,
    expect: Verdict,
    base: String,
    patch: Value,
    why: String,
}

#[derive(Debug, Deserialize)]
struct VectorFile {
    bases: BTreeMap<String, Value>,
    vectors: Vec<Vector>,
}

fn vector_file() -> VectorFile {
    serde_json::from_str(VECTORS_JSON).expect("vectors.json parses")
}

/// RFC 7386: objects merge member by member, `null` removes, anything
/// else replaces.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(members) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    let Value::Object(object) = target else {
        return;
    };
    for (key, value) in members {
        if value.is_null() {
            object.remove(key);
        } else {
            merge_patch(object.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

fn facts_of(file: &VectorFile, vector: &Vector) -> Facts {
    let mut value = file
        .bases
        .get(&vector.base)
        .unwrap_or_else(|| panic!("vector {:?} names unknown base {}", vector.why, vector.base))
        .clone();
    merge_patch(&mut value, &vector.patch);
    serde_json::from_value(value).unwrap_or_else(|e| {
        panic!(
            "vector {} / {}: facts do not parse: {e}",
            vector.rule, vector.why
        )
    })
}

fn rule(id: &str) -> Rule {
    catalogue()
        .rules
        .iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("no rule {id}"))
        .clone()
}

/// The `Facts` members a rule may name in `needs`: the keys of the
/// serialized struct, so a renamed member breaks this test.
fn fact_members() -> BTreeSet<String> {
    let file = vector_file();
    let any = file.vectors.first().expect("at least one vector");
    let Value::Object(members) = serde_json::to_value(facts_of(&file, any)).expect("serializes")
    else {
        panic!("facts serialize as an object");
    };
    members.keys().cloned().collect()
}

/// The facts each check reads; `needs` must name exactly these.
fn reads(check: &Check) -> &'static [&'static str] {
    match check {
        Check::IncludedExcept { .. } | Check::MaxAmount { .. } => &["charges"],
        Check::VatIncluded => &["price_includes_vat"],
        Check::VinPublished => &["vin_published"],
        Check::OdometerPublished => &["odometer_published"],
        Check::GovernmentChargesStated => &["government_charges"],
        Check::PriorPriceIsLowest { .. } => &["reduction"],
    }
}

#[test]
fn catalogue_embedded_text_parses_and_is_the_shipped_catalogue() {
    let parsed: Catalogue = serde_json::from_str(CATALOGUE_JSON).expect("catalogue.json parses");
    assert_eq!(&parsed, catalogue());
    assert!(!parsed.version.is_empty());
}

#[test]
fn catalogue_has_twenty_rules_over_seven_jurisdictions_and_no_us_federal_rule() {
    let rules = &catalogue().rules;
    assert!(rules.len() >= 20, "{} rules", rules.len());
    let places: BTreeSet<&str> = rules.iter().map(|r| r.jurisdiction.as_str()).collect();
    assert!(places.len() >= 7, "{places:?}");
    // The FTC CARS Rule was vacated (Fifth Circuit, January 2025).
    assert!(!places.contains("US"));
    assert!(rules.iter().filter(|r| r.confirmed).count() >= 7);
}

#[test]
fn catalogue_rules_are_well_formed() {
    let members = fact_members();
    let mut ids = BTreeSet::new();
    for rule in &catalogue().rules {
        let id = &rule.id;
        assert!(ids.insert(id.clone()), "duplicate rule id {id}");
        assert!(
            JURISDICTIONS.contains(&rule.jurisdiction.as_str()),
            "{id}: unknown jurisdiction {}",
            rule.jurisdiction
        );
        assert!(
            id.starts_with(&rule.jurisdiction),
            "{id}: id does not start with its jurisdiction"
        );
        for need in &rule.needs {
            assert!(members.contains(need), "{id}: needs unknown fact {need}");
        }
        let needs: BTreeSet<&str> = rule.needs.iter().map(String::as_str).collect();
        let read: BTreeSet<&str> = reads(&rule.check).iter().copied().collect();
        assert_eq!(needs, read, "{id}: needs do not match what its check reads");
        if let Some(until) = rule.effective_until {
            assert!(rule.effective_from <= until, "{id}: ends before it starts");
        }
        for condition in &rule.conditions {
            assert!(
                CONDITIONS.contains(&condition.as_str()),
                "{id}: condition {condition}"
            );
        }
        for (what, text) in [
            ("citation", &rule.citation),
            ("statement", &rule.statement),
            ("fix", &rule.fix),
        ] {
            assert!(!text.trim().is_empty(), "{id}: empty {what}");
        }
        // One plain sentence.
        assert!(
            rule.statement.ends_with('.'),
            "{id}: statement is not a sentence"
        );
        assert!(
            !rule.statement.trim_end_matches('.').contains(". "),
            "{id}: statement is more than one sentence"
        );
        assert!(!rule.sources.is_empty(), "{id}: no source");
        match &rule.check {
            Check::IncludedExcept {
                excluded,
                uncertain,
            } => {
                for class in uncertain {
                    assert!(
                        !excluded.contains(class),
                        "{id}: {class:?} both excluded and uncertain"
                    );
                }
            }
            Check::MaxAmount {
                currency,
                max_minor,
                ..
            } => {
                assert!(
                    Money::try_new(*max_minor, currency).is_ok(),
                    "{id}: cap currency"
                );
                assert!(*max_minor >= 0, "{id}: negative cap");
            }
            Check::PriorPriceIsLowest { days } => assert!(*days > 0, "{id}: zero-day window"),
            _ => {}
        }
    }
}

#[test]
fn golden_vectors_give_their_expected_verdicts() {
    let file = vector_file();
    let mut wrong = Vec::new();
    for vector in &file.vectors {
        let report = lint(catalogue(), &facts_of(&file, vector));
        let Some(result) = report.rules.iter().find(|r| r.rule_id == vector.rule) else {
            wrong.push(format!(
                "{} ({}): rule does not apply",
                vector.rule, vector.why
            ));
            continue;
        };
        if result.verdict != vector.expect {
            wrong.push(format!(
                "{} ({}): expected {:?}, got {:?}: {}",
                vector.rule, vector.why, vector.expect, result.verdict, result.reason
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "golden vectors failed:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_rule_has_a_pass_a_fail_and_a_cannot_determine_vector() {
    let file = vector_file();
    for rule in &catalogue().rules {
        let verdicts: BTreeSet<String> = file
            .vectors
            .iter()
            .filter(|v| v.rule == rule.id)
            .map(|v| format!("{:?}", v.expect))
            .collect();
        for verdict in ["Pass", "Fail", "CannotDetermine"] {
            assert!(
                verdicts.contains(verdict),
                "{}: no {verdict} vector",
                rule.id
            );
        }
    }
    for vector in &file.vectors {
        assert!(
            catalogue().rules.iter().any(|r| r.id == vector.rule),
            "vector for unknown rule {}",
            vector.rule
        );
    }
}

#[test]
fn an_unconfirmed_rule_failing_alone_never_fails_the_disclosure() {
    let file = vector_file();
    for vector in file.vectors.iter().filter(|v| v.expect == Verdict::Fail) {
        let only = Catalogue {
            version: "test".to_owned(),
            rules: vec![rule(&vector.rule)],
        };
        let report = lint(&only, &facts_of(&file, vector));
        let expected = if only.rules[0].confirmed {
            Verdict::Fail
        } else {
            Verdict::CannotDetermine
        };
        assert_eq!(report.result, expected, "{} ({})", vector.rule, vector.why);
    }
}

#[test]
fn overall_result_follows_the_documented_order() {
    let r = |verdict, confirmed| RuleResult {
        rule_id: "X".to_owned(),
        verdict,
        confirmed,
        citation: String::new(),
        reason: String::new(),
        fix: None,
        facts: Vec::new(),
    };
    assert_eq!(overall(&[]), Verdict::CannotDetermine);
    assert_eq!(overall(&[r(Verdict::Pass, true)]), Verdict::Pass);
    assert_eq!(
        overall(&[r(Verdict::Pass, true), r(Verdict::Fail, false)]),
        Verdict::CannotDetermine
    );
    assert_eq!(
        overall(&[r(Verdict::CannotDetermine, true), r(Verdict::Fail, true)]),
        Verdict::Fail
    );
    assert_eq!(
        overall(&[r(Verdict::Pass, false), r(Verdict::CannotDetermine, true)]),
        Verdict::CannotDetermine
    );
}

fn base_facts(name: &str) -> Facts {
    let file = vector_file();
    serde_json::from_value(file.bases[name].clone()).expect("base parses")
}

fn applicable(facts: &Facts) -> BTreeSet<String> {
    lint(catalogue(), facts)
        .rules
        .into_iter()
        .map(|r| r.rule_id)
        .collect()
}

#[test]
fn jurisdictions_cover_their_places_only() {
    let de = applicable(&base_facts("de"));
    assert!(de.iter().any(|id| id.starts_with("DE-")));
    assert!(
        de.iter().any(|id| id.starts_with("EU-")),
        "Germany is an EU member"
    );
    assert!(
        de.iter()
            .all(|id| id.starts_with("DE-") || id.starts_with("EU-"))
    );

    let gb = applicable(&base_facts("gb"));
    assert!(!gb.is_empty());
    assert!(
        gb.iter().all(|id| id.starts_with("GB-")),
        "the UK is not in the EU: {gb:?}"
    );

    let ca = applicable(&base_facts("us-ca"));
    assert!(ca.iter().all(|id| id.starts_with("US-CA-")));
    let mut us_elsewhere = base_facts("us-ca");
    us_elsewhere.place.subdivision = Some("US-TX".to_owned());
    let report = lint(catalogue(), &us_elsewhere);
    assert!(
        report.rules.is_empty(),
        "no US federal rule, none for Texas"
    );
    assert_eq!(
        report.result,
        Verdict::CannotDetermine,
        "nothing checked is no pass"
    );
}

#[test]
fn rules_apply_only_while_in_force_and_to_their_conditions() {
    let mut facts = base_facts("us-ca");
    facts.as_of = chrono::NaiveDate::from_ymd_opt(2026, 9, 30).expect("date");
    assert!(
        !applicable(&facts).contains("US-CA-CARS-ACT-ADD-ON"),
        "operative 2026-10-01"
    );
    facts.as_of = chrono::NaiveDate::from_ymd_opt(2026, 10, 1).expect("date");
    assert!(applicable(&facts).contains("US-CA-CARS-ACT-ADD-ON"));

    let mut qc = base_facts("ca-qc");
    assert!(applicable(&qc).contains("CA-QC-P-40.1-R4-SCHEDULE-3"));
    qc.condition = "new".to_owned();
    assert!(
        !applicable(&qc).contains("CA-QC-P-40.1-R4-SCHEDULE-3"),
        "used automobiles only"
    );
    assert!(applicable(&qc).contains("CA-QC-CPA-224-C"));
}

#[test]
fn reasons_name_the_charge_and_its_amount_and_facts_carry_their_source() {
    let file = vector_file();
    let vector = file
        .vectors
        .iter()
        .find(|v| v.rule == "US-CA-VC-11713.1-B" && v.expect == Verdict::Fail)
        .expect("fail vector");
    let report = lint(catalogue(), &facts_of(&file, vector));
    let result = report
        .rules
        .iter()
        .find(|r| r.rule_id == vector.rule)
        .expect("applies");
    assert!(
        result
            .reason
            .contains("\"Nitrogen tire fill\" (199.00 USD)"),
        "{}",
        result.reason
    );
    assert!(result.reason.contains("dealer add-on"), "{}", result.reason);
    assert_eq!(result.fix.as_deref(), Some(rule(&vector.rule).fix.as_str()));
    let class = result
        .facts
        .iter()
        .find(|f| f.fact == "charges.nitrogen.class")
        .expect("class fact listed");
    assert_eq!(class.value, serde_json::json!("dealer_add_on"));
    assert_eq!(
        class.source,
        "feed:inventory.csv#required_dealer_charges_json"
    );
    assert_eq!(
        report.result,
        Verdict::Fail,
        "a confirmed rule fails the disclosure"
    );
}

#[test]
fn cannot_determine_names_the_unknown_and_a_specific_fix() {
    let file = vector_file();
    for (rule_id, needle, fix) in [
        (
            "US-CA-VC-11713.1-B",
            "\"Protection package\" (895.00 USD)",
            "`protect`",
        ),
        (
            "EU-PID-98-6-2A-VAT",
            "VAT is unknown",
            "advertised_prices_include_vat",
        ),
        ("DE-PANGV-11-PRIOR-PRICE", "unknown", "price history"),
    ] {
        let vector = file
            .vectors
            .iter()
            .find(|v| v.rule == rule_id && v.expect == Verdict::CannotDetermine)
            .expect("vector");
        let report = lint(catalogue(), &facts_of(&file, vector));
        let result = report
            .rules
            .iter()
            .find(|r| r.rule_id == rule_id)
            .expect("applies");
        assert!(
            result.reason.contains(needle),
            "{rule_id}: {}",
            result.reason
        );
        let given = result.fix.as_deref().unwrap_or_default();
        assert!(given.contains(fix), "{rule_id}: {given}");
        assert!(
            result
                .facts
                .iter()
                .any(|f| f.value == serde_json::json!(UNKNOWN))
        );
    }
}

#[test]
fn report_round_trips_through_its_wire_form() {
    let file = vector_file();
    for vector in &file.vectors {
        let report = lint(catalogue(), &facts_of(&file, vector));
        let wire = serde_json::to_string(&report).expect("serializes");
        let back: Report = serde_json::from_str(&wire).expect("parses");
        assert_eq!(back, report);
    }
}

#[test]
fn docs_explain_every_rule_and_count_them() {
    let docs = include_str!("../../../docs/lint.md");
    assert!(
        docs.contains("not legal advice"),
        "docs/lint.md says plainly it is not legal advice"
    );
    let rules = &catalogue().rules;
    for rule in rules {
        assert!(
            docs.contains(&format!("**{}**", rule.id)),
            "docs/lint.md does not explain {}",
            rule.id
        );
    }
    let places: BTreeSet<&str> = rules.iter().map(|r| r.jurisdiction.as_str()).collect();
    let summary = format!(
        "Catalogue version `{}`: {} rules, {} jurisdictions, {} confirmed.",
        catalogue().version,
        rules.len(),
        places.len(),
        rules.iter().filter(|r| r.confirmed).count()
    );
    assert!(
        docs.contains(&summary),
        "docs/lint.md should say: {summary}"
    );
}

#[test]
fn all_classes_lists_every_class_once_and_the_docs_name_each() {
    let docs = include_str!("../../../docs/lint.md");
    let words: BTreeSet<String> = ALL_CLASSES
        .iter()
        .map(|c| {
            serde_json::to_value(c)
                .expect("serializes")
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(words.len(), ALL_CLASSES.len());
    // An exhaustive match: a new class added without a place here breaks the build.
    for class in ALL_CLASSES {
        match class {
            ChargeClass::DocumentationFee
            | ChargeClass::DealerAddOn
            | ChargeClass::DeliveryTransfer
            | ChargeClass::DealerPreparation
            | ChargeClass::EmissionTest
            | ChargeClass::Registration
            | ChargeClass::ElectronicFiling
            | ChargeClass::Tax
            | ChargeClass::TireFee
            | ChargeClass::Finance
            | ChargeClass::Other => {}
        }
    }
    assert_eq!(ALL_CLASSES.len(), 11);
    for word in &words {
        assert!(
            docs.contains(&format!("| `{word}` |")),
            "docs/lint.md has no row for {word}"
        );
    }
}

#[test]
fn a_single_required_class_is_named_as_what_the_price_must_include() {
    let file = vector_file();
    let vector = file
        .vectors
        .iter()
        .find(|v| v.rule == "EU-CJEU-C-476-14-TRANSFER" && v.expect == Verdict::Fail)
        .expect("fail vector");
    let report = lint(catalogue(), &facts_of(&file, vector));
    let result = report
        .rules
        .iter()
        .find(|r| r.rule_id == vector.rule)
        .expect("applies");
    assert_eq!(
        result.reason,
        "The delivery or transfer charge \"Frais de mise à la route\" (890.00 EUR) is left out of the advertised price, which must include every delivery or transfer charge."
    );
}

#[test]
fn no_rule_passes_any_golden_vector_on_an_unknown_fact() {
    let file = vector_file();
    for vector in &file.vectors {
        let facts = facts_of(&file, vector);
        for result in lint(catalogue(), &facts).rules {
            if result.verdict != Verdict::Pass {
                continue;
            }
            let rule = rule(&result.rule_id);
            for need in &rule.needs {
                let unknown = match need.as_str() {
                    "charges" => facts.charges == Known::Unknown,
                    "price_includes_vat" => facts.price_includes_vat == Known::Unknown,
                    "government_charges" => facts.government_charges == Known::Unknown,
                    "reduction" => matches!(
                        facts.reduction,
                        Reduction::Announced {
                            lowest_prior: Known::Unknown,
                            ..
                        }
                    ),
                    _ => false,
                };
                assert!(
                    !unknown,
                    "{} passed {} with {need} unknown",
                    rule.id, vector.why
                );
            }
            for used in &result.facts {
                assert_ne!(
                    used.value,
                    serde_json::json!(UNKNOWN),
                    "{}: {}",
                    rule.id,
                    used.fact
                );
            }
        }
    }
}
