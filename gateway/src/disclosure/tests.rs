//! Disclosures built by [`build`] from real records, held to the
//! published `pricingDisclosure` definition (the drift test of the typed
//! answer, from data rather than hand-made instances).

use chrono::TimeZone;
use pricing::Currency;
use serde_json::json;

use super::*;
use crate::dap::disclosure::AdjustmentOrigin;
use crate::dap::{EligibilityCriterion, GovernmentChargeLine, Stacking};
use crate::domain::vehicle::VehicleSource;
use crate::store::GovernmentChargeEstimate;
use crate::tools::output::drift::check;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 9, 1, 12, 0, 0).unwrap()
}

fn usd(minor: i64) -> Money {
    Money::from_minor(minor, Currency::USD)
}

fn digest() -> String {
    format!("sha256:{}", "ab".repeat(32))
}

fn charge(id: &str, minor: i64, included: bool) -> DealerCharge {
    DealerCharge {
        charge_id: id.into(),
        name: format!("Charge {id}"),
        amount: usd(minor),
        payee: "dealer".into(),
        included_in_advertised_price: included,
        taxable_status: None,
        required: true,
        provenance: None,
    }
}

fn adjustment(id: &str, provenance: Option<Provenance>) -> ConditionalAdjustment {
    ConditionalAdjustment {
        adjustment_id: id.into(),
        name: format!("Offer {id}"),
        direction: "discount".into(),
        amount_status: "known".into(),
        amount: Some(usd(100_000)),
        criteria: vec![EligibilityCriterion {
            criterion: "military".into(),
            operator: "verified".into(),
            value: CriterionValue::Scalar(Scalar::Flag(true)),
            evidence_status: "required".into(),
            description: None,
        }],
        criteria_mode: None,
        jurisdictions: None,
        valid_from: None,
        valid_until: Some("2026-09-30T00:00:00Z".into()),
        stacking: Stacking {
            group: "military".into(),
            combinability: "stackable".into(),
            combinable_with: None,
        },
        provenance,
    }
}

fn record(known: bool) -> VehicleRecord {
    serde_json::from_value::<VehicleRecord>(json!({
        "vehicle_id": "veh.north.00001",
        "organization_id": "org.north",
        "rooftop_id": "roof.north",
        "vin": "1FTFW1E50000000001",
        "stock_number": "S0001",
        "year": 2024,
        "make": "Ford",
        "model": "F-150",
        "trim": null,
        "condition": "new",
        "vehicle_type": null,
        "body_style": null,
        "exterior_color": null,
        "interior_color": null,
        "odometer": null,
        "powertrain": null,
        "features": [],
        "media": [],
        "listing_url": null,
        "window_sticker_url": null,
        "advertised_price": usd(4_287_500),
        "required_dealer_charges": null,
        "conditional_adjustments": null,
        "government_charges_status": null,
        "availability_status": "available",
        "stocked_at": null,
        "first_public_listing_at": null,
        "history_report_status": null,
        "history_reports": [],
        "certification_type": null,
        "source": VehicleSource {
            source_name: "dap-csv:north.csv".into(),
            source_record_id: Some("S0001".into()),
            authority: "dealer_asserted".into(),
            content_digest: digest(),
            observed_at: now() - Duration::minutes(5),
            transformations: vec![],
        },
    }))
    .map(|mut r: VehicleRecord| {
        if known {
            r.required_dealer_charges = Some(vec![charge("doc", 49_900, false)]);
            r.conditional_adjustments = Some(vec![
                adjustment("feed.military", None),
                adjustment(
                    "feed.loyalty",
                    Some(Provenance::asserted(
                        vec![config_source(&config())],
                        None,
                        ["published by the dealer"],
                    )),
                ),
            ]);
        }
        r
    })
    .expect("a vehicle record")
}

fn config() -> SourceRecord {
    SourceRecord {
        source_name: "dealers-file:dealers.yaml".into(),
        authority: "dealer_asserted".into(),
        content_digest: digest(),
        observed_at: now() - Duration::days(1),
    }
}

fn rooftop_pricing() -> RooftopPricing {
    RooftopPricing {
        required_dealer_charges: vec![charge("prep", 29_500, true)],
        government_charge_estimates: vec![GovernmentChargeEstimate {
            jurisdiction: Jurisdiction {
                country: "US".into(),
                subdivision: Some("US-IL".into()),
                locality: None,
                postal_code: None,
            },
            lines: vec![GovernmentChargeLine {
                name: "Title".into(),
                amount: usd(15_100),
                payee: "government_agent".into(),
                basis: None,
            }],
            assumptions: vec![],
        }],
        ..RooftopPricing::default()
    }
}

fn programs() -> ProgramsInput {
    let mut program = adjustment("program.conquest", None);
    program.criteria_mode = Some("all".into());
    ProgramsInput {
        adjustments: vec![ProgramAdjustment {
            adjustment: program,
            program_id: "program.conquest".into(),
            revision: 3,
            rule_hash: None,
            valid_until: None,
        }],
        sources: vec![Source {
            source_name: "programs-file:programs.yaml".into(),
            authority: "dealer_asserted".into(),
            observed_at: timestamp(now() - Duration::hours(1)),
            source_record_id: None,
            content_digest: None,
            source_uri: None,
        }],
        loaded_at: now() - Duration::hours(1),
        evaluation: Some(OffersOutcome::Held),
        evaluation_valid_until: None,
        evaluation_error: None,
        unusable: vec![],
        evaluation_bounded: None,
    }
}

fn built(known: bool, withdrawn: bool) -> Disclosure {
    let record = record(known);
    let pricing = if known {
        rooftop_pricing()
    } else {
        RooftopPricing::default()
    };
    let config = config();
    let illinois = json!({"country": "US", "subdivision": "US-IL"});
    let programs = known.then(programs);
    build(&Inputs {
        record: &record,
        pricing: &pricing,
        config_source: known.then_some(&config),
        inventory_sla_seconds: 900,
        withdrawn,
        snapshot_version: 7,
        band: if withdrawn {
            Band::Unknown
        } else {
            Band::Asserted
        },
        jurisdiction: known.then_some(&illinois),
        payment_mode: None,
        programs: programs.as_ref(),
        now: now(),
    })
}

#[test]
fn built_disclosures_match_their_published_definition() {
    let full = built(true, false);
    let bare = built(false, true);
    check(
        "pricing.schema.json#/$defs/pricingDisclosure",
        &[full.document.clone(), bare.document.clone()],
    );
    check(
        "pricing.schema.json#/$defs/dealerCharge",
        &full.document.required_dealer_charges,
    );
    check(
        "pricing.schema.json#/$defs/conditionalAdjustment",
        &full.document.conditional_adjustments,
    );
    check(
        "pricing.schema.json#/$defs/governmentCharges",
        &[
            full.document.government_charges.clone(),
            bare.document.government_charges.clone(),
        ],
    );
    // Every origin was built from the records above.
    let origins: Vec<AdjustmentOrigin> = full
        .document
        .conditional_adjustments
        .iter()
        .map(|a| a.origin)
        .collect();
    assert_eq!(
        origins,
        [
            AdjustmentOrigin::FeedAttributed,
            AdjustmentOrigin::Feed,
            AdjustmentOrigin::Program
        ]
    );
    // The rooftop's default (dealers file) first, then the vehicle's own
    // (given the feed as its source).
    let feed: Vec<bool> = full
        .document
        .required_dealer_charges
        .iter()
        .map(|c| c.feed_provenance)
        .collect();
    assert_eq!(feed, [false, true]);
}

/// The typed answer holds what the score says: unknown is never zero.
#[test]
fn the_typed_answer_keeps_unknown_apart_from_zero() {
    let full = built(true, false);
    let d = &full.document;
    assert_eq!(d.government_charges.status, "estimated");
    assert_eq!(d.government_charges.total, Some(usd(15_100)));
    assert_eq!(d.disclosure_completeness.score, full.score);
    assert!(
        d.disclosure_completeness
            .components
            .government_charges_classified
    );
    let bare = built(false, true);
    let d = &bare.document;
    assert_eq!(d.government_charges.status, "unknown");
    assert_eq!(d.government_charges.total, None);
    assert!(d.required_dealer_charges.is_empty());
    assert!(
        !d.disclosure_completeness
            .components
            .required_dealer_charges_itemized
    );
    assert_eq!(d.freshness.state, FreshnessState::Withdrawn);
    assert_eq!(d.uncertainty.status, "unknown");
    assert_eq!(
        bare.score + bare.gaps.iter().map(|g| g.points_lost).sum::<u32>(),
        100
    );
}

/// A program record as the store holds it (docs/pricing.md's format).
fn stored_program(doc: serde_json::Value) -> crate::store::ProgramRecord {
    crate::store::ProgramRecord {
        program_id: doc["program_id"].as_str().unwrap_or("corrupt").to_owned(),
        revision: 1,
        doc,
        rule_hash: None,
        imported_at: now() - Duration::hours(2),
        source: SourceRecord {
            source_name: "programs-file:programs.yaml".into(),
            authority: "dealer_asserted".into(),
            content_digest: digest(),
            observed_at: now() - Duration::hours(2),
        },
    }
}

/// The evaluation a disclosure carries is written straight from its typed
/// form; its text and its concise form must be byte for byte what the tree
/// route made (`to_value` of the engine's evaluation, then
/// `ProgramsAt::annotate`, then `decisive` of that tree), over programs
/// that exercise every member: payment-mode branches, a rule, a percent
/// amount, a residency need, unusable programs.
#[test]
fn the_evaluation_written_without_a_tree_is_the_trees_text() {
    use crate::tools::offers_evaluate::{decisive, decisive_outcome};
    let base = |id: &str, extra: serde_json::Value| {
        let mut p = json!({
            "program_id": id, "revision": 1, "name": format!("Program {id}"), "kind": "cash",
            "direction": "discount",
            "amount": {"status": "known", "amount": {"amount_minor": 100_000, "currency": "USD"}},
            "stacking": {"group": "oem", "combinability": "stackable"}
        });
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        p
    };
    let records = [
        stored_program(base("cash", json!({}))),
        stored_program(base(
            "finance-bonus",
            json!({"payment_modes": ["finance"], "kind": "bonus_cash",
                   "amount": {"status": "known", "amount": {"amount_minor": 40_000, "currency": "USD"}},
                   "stacking": {"group": "dealer", "combinability": "rule_defined",
                                "rule": "stack.len() <= 2"},
                   "provenance": {"source_name": "OEM sheet", "authority": "oem",
                                  "observed_at": "2026-08-01T00:00:00Z"}}),
        )),
        stored_program(base(
            "dealer-percent",
            json!({"kind": "dealer_discount",
                   "amount": {"status": "percent_off", "percent": "1.5", "rounding": "half_up"},
                   "stacking": {"group": "dealer", "combinability": "stackable"}}),
        )),
        stored_program(base("illinois", json!({"jurisdictions": ["US-IL"]}))),
        stored_program(base(
            "bad-rule",
            json!({"stacking": {"group": "d", "combinability": "rule_defined", "rule": "stack.len( <"}}),
        )),
        stored_program(json!({"program_id": "corrupt"})),
    ];
    let org = crate::offers::OrgPrograms::from_records(&records, now() - Duration::hours(1));
    let record = record(true);
    for jurisdiction in [None, Some("US-IL")] {
        let at = org.at(now().fixed_offset());
        let profile = pricing::stacking::ProfileJurisdiction {
            country: "US".into(),
            subdivision: jurisdiction.map(str::to_owned),
            postal_code: None,
        };
        let input = programs_input(&record, &at, org.loaded_at, profile, None, now()).unwrap();
        let Some(outcome @ OffersOutcome::Evaluated(annotated)) = &input.evaluation else {
            panic!("not evaluated: {:?}", input.evaluation);
        };
        assert!(annotated.evaluation.branches.len() > 1);
        assert_eq!(annotated.unusable_programs.len(), 2);
        let mut tree = serde_json::to_value(&annotated.evaluation).unwrap();
        at.annotate(&mut tree);
        assert_eq!(
            serde_json::to_string(outcome).unwrap(),
            serde_json::to_string(&tree).unwrap()
        );
        assert_eq!(
            decisive_outcome(outcome).unwrap().get(),
            serde_json::to_string(&decisive(&tree)).unwrap()
        );
    }
    let failed = OffersOutcome::Failed("the evaluation stopped".into());
    assert_eq!(
        decisive_outcome(&failed).unwrap().get(),
        serde_json::to_string(&decisive(&json!({"error": "the evaluation stopped"}))).unwrap()
    );
}
