//! The typed disclosure against its published definitions, and the wire
//! order its serializers keep.

use pricing::Currency;
use serde_json::json;

use super::*;
use crate::dap::pricing::{CriterionValue, EligibilityCriterion, Scalar, Stacking};
use crate::dap::provenance::FreshnessState;
use crate::tools::output::drift::check;

fn usd(minor: i64) -> Money {
    Money::from_minor(minor, Currency::USD)
}

fn source(name: &str, record_id: Option<&str>, digest: Option<&str>) -> Source {
    Source {
        source_name: name.into(),
        authority: "dealer_asserted".into(),
        observed_at: "2026-01-02T03:04:05Z".into(),
        source_record_id: record_id.map(Into::into),
        content_digest: digest.map(Into::into),
        source_uri: None,
    }
}

const DIGEST: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

fn feed() -> Provenance {
    Provenance {
        sources: vec![source("dap-csv:lot.csv", Some("STK1"), Some(DIGEST))],
        authority_status: "asserted".into(),
        transformed_at: None,
        transformations: Vec::new(),
    }
}

fn illinois() -> Jurisdiction {
    Jurisdiction {
        country: "US".into(),
        subdivision: Some("US-IL".into()),
        locality: None,
        postal_code: None,
    }
}

fn charge(feed_provenance: bool) -> ListedCharge {
    ListedCharge {
        charge: DealerCharge {
            charge_id: "doc-fee".into(),
            name: "Documentation fee".into(),
            amount: usd(35_000),
            payee: "dealer".into(),
            included_in_advertised_price: false,
            taxable_status: feed_provenance.then(|| "taxable".into()),
            required: true,
            provenance: feed_provenance.then(feed),
        },
        feed_provenance,
    }
}

fn adjustment(origin: AdjustmentOrigin, known: bool) -> ListedAdjustment {
    ListedAdjustment {
        adjustment: ConditionalAdjustment {
            adjustment_id: "loyalty".into(),
            name: "Loyalty bonus".into(),
            direction: "discount".into(),
            amount_status: if known { "known" } else { "unknown" }.into(),
            amount: known.then(|| usd(50_000)),
            criteria: vec![EligibilityCriterion {
                criterion: "payment_mode".into(),
                operator: "in".into(),
                value: CriterionValue::List(vec![Scalar::Text("finance".into())]),
                evidence_status: "not_required".into(),
                description: Some("Only for finance purchases.".into()),
            }],
            criteria_mode: known.then(|| "all".into()),
            jurisdictions: known.then(|| vec![illinois()]),
            valid_from: known.then(|| "2026-01-01T00:00:00Z".into()),
            valid_until: known.then(|| "2026-02-01T00:00:00Z".into()),
            stacking: Stacking {
                group: "brand".into(),
                combinability: "stackable".into(),
                combinable_with: known.then(|| vec!["other".into()]),
            },
            provenance: match origin {
                AdjustmentOrigin::FeedAttributed => Some(feed()),
                AdjustmentOrigin::Program | AdjustmentOrigin::Feed => known.then(|| Provenance {
                    sources: vec![source("programs.yaml", Some("loyalty"), None)],
                    authority_status: "asserted".into(),
                    transformed_at: None,
                    transformations: vec!["program loyalty revision 2".into()],
                }),
            },
        },
        origin,
    }
}

fn government(estimated: bool) -> GovernmentCharges {
    if !estimated {
        return GovernmentCharges {
            status: "unknown".into(),
            jurisdiction: None,
            lines: None,
            total: None,
            assumptions: None,
            provenance: None,
        };
    }
    GovernmentCharges {
        status: "estimated".into(),
        jurisdiction: Some(illinois()),
        lines: Some(vec![GovernmentChargeLine {
            name: "Title".into(),
            amount: usd(16_500),
            payee: "government".into(),
            basis: None,
        }]),
        total: Some(usd(16_500)),
        assumptions: Some(vec!["Registered in Illinois.".into()]),
        provenance: Some(Provenance::asserted(
            vec![source("dealers-file:dealers.yaml", None, Some(DIGEST))],
            None,
            Vec::<String>::new(),
        )),
    }
}

fn disclosure(full: bool) -> PricingDisclosure {
    PricingDisclosure {
        disclosure_id: "pricing.veh-1.v3".into(),
        vehicle_id: "veh-1".into(),
        organization_id: "org".into(),
        rooftop_id: "roof".into(),
        advertised_price: AdvertisedPrice {
            label: full.then(|| "Internet Price".into()),
            valid_from: full.then(|| "2026-01-01T00:00:00Z".into()),
            valid_until: full.then(|| "2026-03-01T00:00:00Z".into()),
            ..AdvertisedPrice::generally_available(usd(3_249_500), false)
        },
        required_dealer_charges: if full {
            vec![charge(true), charge(false)]
        } else {
            Vec::new()
        },
        conditional_adjustments: if full {
            vec![
                adjustment(AdjustmentOrigin::Feed, true),
                adjustment(AdjustmentOrigin::FeedAttributed, false),
                adjustment(AdjustmentOrigin::Program, true),
                adjustment(AdjustmentOrigin::Program, false),
            ]
        } else {
            Vec::new()
        },
        government_charges: government(full),
        disclosure_completeness: DisclosureCompleteness {
            score: 75,
            components: CompletenessComponents {
                advertised_price_present_and_authoritative: true,
                required_dealer_charges_itemized: full,
                conditional_adjustments_have_eligibility_and_stacking: true,
                government_charges_classified: full,
                availability_band: "asserted".into(),
            },
        },
        disclosure_text: "Advertised price: 32,495.00 USD.".into(),
        uncertainty: Uncertainty {
            status: if full { "estimated" } else { "exact" }.into(),
            reason: full.then(|| "Government charges are an estimate.".into()),
            assumptions: if full {
                vec!["Registered in Illinois.".into()]
            } else {
                Vec::new()
            },
        },
        provenance: Provenance {
            sources: vec![
                source("dap-csv:lot.csv", Some("STK1"), Some(DIGEST)),
                source("programs.yaml", None, None),
            ],
            authority_status: "asserted".into(),
            transformed_at: Some("2026-01-02T03:04:06Z".into()),
            transformations: vec!["government charges classified estimated".into()],
        },
        freshness: Freshness {
            observed_at: "2026-01-02T03:04:05Z".into(),
            state: FreshnessState::Current,
            valid_until: Some("2026-01-03T03:04:05Z".into()),
            max_age_seconds: Some(86_400),
        },
        extensions: full.then(|| DisclosureExtensions {
            offers: Some(OffersExtension::Tree(json!({}))),
            provenance: Some(ProvenanceExtension {
                transformations: vec!["program loyalty revision 2".into()],
            }),
            // The extension bag admits the lint block as it admits the
            // offers evaluation (DAP 13).
            lint: Some(json!({
                "catalogue_version": "2026-12-01",
                "place": {"country": "US", "subdivision": "US-CA"},
                "result": "cannot_determine",
                "rules": [],
                "notice": crate::lint::NOTICE,
                "jurisdiction_source": "rooftop",
            })),
        }),
    }
}

#[test]
fn the_disclosure_matches_its_definitions() {
    check(
        "pricing.schema.json#/$defs/pricingDisclosure",
        &[disclosure(false), disclosure(true)],
    );
    check(
        "pricing.schema.json#/$defs/advertisedPrice",
        &[
            disclosure(false).advertised_price,
            disclosure(true).advertised_price,
        ],
    );
    check(
        "pricing.schema.json#/$defs/dealerCharge",
        &[charge(false), charge(true)],
    );
    let adjustments: Vec<ListedAdjustment> = [
        AdjustmentOrigin::Feed,
        AdjustmentOrigin::FeedAttributed,
        AdjustmentOrigin::Program,
    ]
    .into_iter()
    .flat_map(|o| [adjustment(o, false), adjustment(o, true)])
    .collect();
    check(
        "pricing.schema.json#/$defs/conditionalAdjustment",
        &adjustments,
    );
    check(
        "pricing.schema.json#/$defs/governmentCharges",
        &[government(false), government(true)],
    );
    check(
        "pricing.schema.json#/$defs/disclosureCompleteness",
        &[disclosure(true).disclosure_completeness],
    );
    check(
        "pricing.schema.json#/$defs/disclosureCompletenessComponents",
        &[disclosure(true).disclosure_completeness.components],
    );
    check(
        "common.schema.json#/$defs/uncertainty",
        &[disclosure(false).uncertainty, disclosure(true).uncertainty],
    );
}

/// The member order disclosures have always been written in (their JSON
/// text is cached and served as is): the feed's source with its digest
/// before its record id, freshness with its limit before its state, and a
/// program's adjustment with eligibility and stacking before its amount.
#[test]
fn the_wire_order_is_the_disclosures_own() {
    let text = serde_json::to_string(&disclosure(true)).unwrap();
    assert!(
        text.contains(r#""provenance":{"sources":[{"source_name":"dap-csv:lot.csv","authority":"dealer_asserted","observed_at":"2026-01-02T03:04:05Z","content_digest":"#),
        "{text}"
    );
    assert!(text.contains(
        r#""freshness":{"observed_at":"2026-01-02T03:04:05Z","valid_until":"2026-01-03T03:04:05Z","state":"current","max_age_seconds":86400}"#
    ));
    let program = serde_json::to_string(&adjustment(AdjustmentOrigin::Program, true)).unwrap();
    assert!(
        program.starts_with(
            r#"{"adjustment_id":"loyalty","name":"Loyalty bonus","direction":"discount","criteria":["#
        ),
        "{program}"
    );
    let stacking = program.find(r#""stacking""#).unwrap();
    assert!(stacking < program.find(r#""amount_status""#).unwrap());
    assert!(program.find(r#""amount""#).unwrap() < program.find(r#""jurisdictions""#).unwrap());
    // The feed's own adjustments keep the record's order; one given the
    // feed as its source ends with it, written in the feed's order.
    let feed = adjustment(AdjustmentOrigin::Feed, true);
    assert_eq!(
        serde_json::to_string(&feed).unwrap(),
        serde_json::to_string(&feed.adjustment).unwrap()
    );
    let attributed =
        serde_json::to_string(&adjustment(AdjustmentOrigin::FeedAttributed, true)).unwrap();
    assert!(
        attributed.ends_with(
            r#""stacking":{"group":"brand","combinability":"stackable","combinable_with":["other"]},"provenance":{"sources":[{"source_name":"dap-csv:lot.csv","authority":"dealer_asserted","observed_at":"2026-01-02T03:04:05Z","content_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","source_record_id":"STK1"}],"authority_status":"asserted"}}"#
        ),
        "{attributed}"
    );
    // A charge from the dealers file keeps the shared record's order.
    let config = charge(false);
    assert_eq!(
        serde_json::to_string(&config).unwrap(),
        serde_json::to_string(&config.charge).unwrap()
    );
}

/// The serialized evaluation is written in place of the tree, as is.
#[test]
fn the_offer_evaluation_is_written_as_serialized() {
    let mut d = disclosure(true);
    let raw: Arc<RawValue> = serde_json::value::to_raw_value(&json!({"b": 1, "a": [2]}))
        .unwrap()
        .into();
    d.extensions.as_mut().unwrap().offers = Some(OffersExtension::Text(raw));
    // The lint block is written last, after the members a document had
    // before it.
    let lint = d.extensions.as_mut().unwrap().lint.take();
    let text = serde_json::to_string(&d).unwrap();
    assert!(
        text.ends_with(r#""extensions":{"dealergateway.offers":{"b":1,"a":[2]},"dealergateway.provenance":{"transformations":["program loyalty revision 2"]}}}"#),
        "{text}"
    );
    d.extensions.as_mut().unwrap().lint = lint;
    let text = serde_json::to_string(&d).unwrap();
    assert!(
        text.contains(r#""dealergateway.provenance":{"transformations":["program loyalty revision 2"]},"dealergateway.disclosure-lint":{"#),
        "{text}"
    );
}
