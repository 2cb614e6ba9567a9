//! Property: for any rule and any facts, making any fact the rule needs
//! unknown never yields `pass` (docs/lint.md "Why unknown never passes").

use proptest::prelude::*;

use super::*;

const CLASSES: &[ChargeClass] = ALL_CLASSES;

const CURRENCIES: &[&str] = &["USD", "CAD", "EUR", "GBP"];

/// A place the jurisdiction covers.
fn place_for(jurisdiction: &str, pick: usize) -> Place {
    match jurisdiction {
        "EU" => Place {
            country: EU_MEMBER_STATES[pick % EU_MEMBER_STATES.len()].to_owned(),
            subdivision: None,
        },
        j if j.contains('-') => Place {
            country: j[..2].to_owned(),
            subdivision: Some(j.to_owned()),
        },
        j => Place {
            country: j.to_owned(),
            subdivision: None,
        },
    }
}

fn money(minor: i64, currency: usize) -> Money {
    Money::try_new(minor, CURRENCIES[currency % CURRENCIES.len()]).expect("known currency")
}

fn charge_strategy() -> impl Strategy<Value = Charge> {
    (
        0usize..1000,
        0i64..300_000,
        0usize..4,
        any::<bool>(),
        prop::option::of(0usize..CLASSES.len()),
    )
        .prop_map(|(id, minor, currency, included, class)| Charge {
            charge_id: format!("c{id}"),
            name: format!("Charge {id}"),
            amount: money(minor, currency),
            included_in_advertised_price: included,
            class: class.map(|i| CLASSES[i]),
            source: "proptest".to_owned(),
        })
}

fn status_strategy() -> impl Strategy<Value = Known<GovernmentStatus>> {
    prop_oneof![
        Just(Known::Unknown),
        Just(Known::Known(GovernmentStatus::Estimated)),
        Just(Known::Known(GovernmentStatus::Calculated)),
        Just(Known::Known(GovernmentStatus::NotApplicable)),
    ]
}

fn reduction_strategy() -> impl Strategy<Value = Reduction> {
    prop_oneof![
        Just(Reduction::NotAnnounced),
        (0i64..100, 0i64..100, 0usize..4, 1u32..90, any::<bool>()).prop_map(
            |(reference, lowest, currency, days, known)| Reduction::Announced {
                reference_price: money(reference, currency),
                lowest_prior: if known {
                    Known::Known(money(lowest, currency))
                } else {
                    Known::Unknown
                },
                days,
            }
        ),
    ]
}

/// Facts at a place, date and condition where rule `index` applies.
fn facts_strategy() -> impl Strategy<Value = (usize, Facts)> {
    let rules = catalogue().rules.len();
    (
        0usize..rules,
        0usize..100,
        prop::collection::vec(charge_strategy(), 0..5),
        any::<bool>(),
        status_strategy(),
        prop::option::of(any::<bool>()),
        (any::<bool>(), any::<bool>()),
        reduction_strategy(),
        0usize..4,
    )
        .prop_map(
            |(index, pick, charges, charges_known, gov, vat, (vin, odo), reduction, cond)| {
                let rule = &catalogue().rules[index];
                let condition = rule
                    .conditions
                    .get(cond % rule.conditions.len().max(1))
                    .cloned()
                    .unwrap_or_else(|| CONDITIONS[cond % CONDITIONS.len()].to_owned());
                let facts = Facts {
                    place: place_for(&rule.jurisdiction, pick),
                    as_of: rule.effective_from,
                    condition,
                    advertised_price: money(2_500_000, pick),
                    charges: if charges_known {
                        Known::Known(charges)
                    } else {
                        Known::Unknown
                    },
                    government_charges: gov,
                    price_includes_vat: vat.map_or(Known::Unknown, Known::Known),
                    vin_published: Known::Known(vin),
                    odometer_published: Known::Known(odo),
                    reduction,
                    sources: BTreeMap::new(),
                };
                (index, facts)
            },
        )
}

fn verdict(index: usize, facts: &Facts) -> Verdict {
    let rule = &catalogue().rules[index];
    let report = lint(catalogue(), facts);
    report
        .rules
        .iter()
        .find(|r| r.rule_id == rule.id)
        .unwrap_or_else(|| panic!("{} does not apply to {facts:?}", rule.id))
        .verdict
}

/// Every way the rule's needed facts can be unknown: the whole fact, or
/// (for charges) the class of every charge left out of the price.
fn unknown_variants(rule: &Rule, facts: &Facts) -> Vec<(String, Facts)> {
    let mut out = Vec::new();
    for need in &rule.needs {
        let mut f = facts.clone();
        match need.as_str() {
            "charges" => {
                f.charges = Known::Unknown;
                out.push(("charges unknown".to_owned(), f));
                if let Known::Known(charges) = &facts.charges {
                    let mut unclassified = charges.clone();
                    let mut any = false;
                    for charge in &mut unclassified {
                        if !charge.included_in_advertised_price {
                            charge.class = None;
                            any = true;
                        }
                    }
                    if any {
                        let mut g = facts.clone();
                        g.charges = Known::Known(unclassified);
                        out.push(("charges left out unclassified".to_owned(), g));
                    }
                }
            }
            "price_includes_vat" => {
                f.price_includes_vat = Known::Unknown;
                out.push(("VAT unknown".to_owned(), f));
            }
            "government_charges" => {
                f.government_charges = Known::Unknown;
                out.push(("government charges unknown".to_owned(), f));
            }
            "reduction" => {
                let reference_price = match &facts.reduction {
                    Reduction::Announced {
                        reference_price, ..
                    } => *reference_price,
                    Reduction::NotAnnounced => facts.advertised_price,
                };
                f.reduction = Reduction::Announced {
                    reference_price,
                    lowest_prior: Known::Unknown,
                    days: 30,
                };
                out.push(("lowest prior price unknown".to_owned(), f));
            }
            "vin_published" => {
                let mut f = facts.clone();
                f.vin_published = Known::Unknown;
                out.push(("VIN publication unknown".to_owned(), f));
            }
            "odometer_published" => {
                let mut f = facts.clone();
                f.odometer_published = Known::Unknown;
                out.push(("odometer publication unknown".to_owned(), f));
            }
            other => panic!("{}: a need the property does not know: {other}", rule.id),
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn an_unknown_needed_fact_never_passes((index, facts) in facts_strategy()) {
        let rule = &catalogue().rules[index];
        for (what, variant) in unknown_variants(rule, &facts) {
            let got = verdict(index, &variant);
            prop_assert_ne!(got, Verdict::Pass, "{} passed with {}", rule.id, what);
        }
    }

    #[test]
    fn a_rule_never_passes_a_fact_it_could_not_read((index, facts) in facts_strategy()) {
        // The facts a passing rule lists are all known values.
        let rule = &catalogue().rules[index];
        let report = lint(catalogue(), &facts);
        let result = report.rules.iter().find(|r| r.rule_id == rule.id).expect("applies");
        if result.verdict == Verdict::Pass {
            for used in &result.facts {
                prop_assert_ne!(&used.value, &serde_json::json!(UNKNOWN), "{}: {}", rule.id, used.fact);
            }
        }
        prop_assert!(!result.reason.is_empty());
        prop_assert_eq!(result.fix.is_none(), result.verdict == Verdict::Pass);
    }
}
