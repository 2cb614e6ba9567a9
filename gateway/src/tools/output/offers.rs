//! `dealergateway.offers.evaluate`'s output (`offersEvaluation`,
//! docs/pricing.md section 2 "Output") and the `omitted` note of a concise
//! answer (`offersOmitted`).

use pricing::incentives::{PaymentMode, Timestamp};
use pricing::stacking::{
    Branch, EvaluationProvenance, PotentialExtra, ProfilePaymentMode, ProgramRef, ProgramReport,
    StackReport,
};
use serde::Serialize;

use super::{Freshness, ToolOutput};
use crate::offers::{RevisionChoice, UnusableProgram};
use crate::tools::budget::Detail;

/// `offersEvaluation`: the engine's evaluation (`pricing::Evaluation`,
/// member for member as the engine serializes it), then what the gateway
/// adds: which revision of each program was used and which could not be
/// evaluated (docs/pricing.md "Revisions"), the tenancy, freshness bounded
/// by both the programs and the inventory record, the trace id, and
/// `omitted` when the answer is concise.
///
/// Each member is named here, not flattened from the engine's type, so the
/// drift test diffs the whole member list against the definition. The
/// order is the wire order: the engine's members first, as they always
/// were.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OffersEvaluation {
    pub vehicle_id: String,
    pub advertised_price: pricing::Money,
    pub as_of: Timestamp,
    pub payment_mode: ProfilePaymentMode,
    pub winning_payment_mode: PaymentMode,
    pub best_stack: StackReport,
    pub branches: Vec<Branch>,
    pub programs: Vec<ProgramReport>,
    pub guaranteed_floor: StackReport,
    pub potential_extra: Vec<PotentialExtra>,
    pub unknown_amount_programs: Vec<ProgramRef>,
    pub trace: Vec<String>,
    pub provenance: EvaluationProvenance,
    /// `null` when nothing bounds the evaluation (the schema requires the
    /// member).
    pub valid_until: Option<Timestamp>,
    pub revisions: Vec<RevisionChoice>,
    pub unusable_programs: Vec<UnusableProgram>,
    pub organization_id: String,
    pub rooftop_id: String,
    pub freshness: Freshness,
    pub trace_id: String,
    /// Only in the concise form (detail `concise`, the default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted: Option<Omitted>,
}

impl ToolOutput for OffersEvaluation {
    const OUTPUT: &'static str = "offers.schema.json#/$defs/offersEvaluation";
}

/// What the gateway adds to the engine's evaluation.
pub struct Additions {
    pub revisions: Vec<RevisionChoice>,
    pub unusable_programs: Vec<UnusableProgram>,
    pub organization_id: String,
    pub rooftop_id: String,
    pub freshness: Freshness,
    pub trace_id: String,
}

impl OffersEvaluation {
    /// The full form of `evaluation` with the gateway's `additions`. What
    /// the engine does not serialize (its cost, the rules that failed) is
    /// dropped here: failed rules reach the caller through
    /// `unusable_programs`.
    pub fn new(evaluation: pricing::Evaluation, additions: Additions) -> Self {
        let pricing::Evaluation {
            vehicle_id,
            advertised_price,
            as_of,
            payment_mode,
            winning_payment_mode,
            best_stack,
            branches,
            programs,
            guaranteed_floor,
            potential_extra,
            unknown_amount_programs,
            trace,
            provenance,
            valid_until,
            cost: _,
            unusable_rules: _,
        } = evaluation;
        let Additions {
            revisions,
            unusable_programs,
            organization_id,
            rooftop_id,
            freshness,
            trace_id,
        } = additions;
        OffersEvaluation {
            vehicle_id,
            advertised_price,
            as_of,
            payment_mode,
            winning_payment_mode,
            best_stack,
            branches,
            programs,
            guaranteed_floor,
            potential_extra,
            unknown_amount_programs,
            trace,
            provenance,
            valid_until,
            revisions,
            unusable_programs,
            organization_id,
            rooftop_id,
            freshness,
            trace_id,
            omitted: None,
        }
    }
}

/// `offersOmitted`: what a concise answer leaves out and the call that
/// returns it (docs/benchmarks.md "Result sizes and the token budget").
/// The same members, in the same order, as `budget::omitted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Omitted {
    /// Always `concise`.
    pub detail: &'static str,
    /// This gateway's own sentences, never an echo of the caller's input.
    pub left_out: Vec<String>,
    pub how_to_get: String,
}

impl Omitted {
    pub fn concise(left_out: Vec<String>, how_to_get: &str) -> Self {
        Omitted {
            detail: Detail::Concise.as_str(),
            left_out,
            how_to_get: how_to_get.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use serde_json::{Value, json};

    use super::super::drift;
    use super::*;
    use crate::offers::OrgPrograms;
    use crate::store::{ProgramRecord, SourceRecord};

    fn record(id: &str, doc: Value) -> ProgramRecord {
        ProgramRecord {
            program_id: id.to_owned(),
            revision: 1,
            doc,
            rule_hash: None,
            imported_at: Utc::now(),
            source: SourceRecord {
                source_name: "programs.yaml".into(),
                authority: "dealer_asserted".into(),
                content_digest: format!("sha256:{}", "0".repeat(64)),
                observed_at: Utc::now(),
            },
        }
    }

    /// A known-amount discount of `minor` cents, with `extra` members.
    fn program(id: &str, minor: i64, extra: Value) -> Value {
        let mut p = json!({
            "program_id": id, "revision": 1, "name": id, "kind": "cash",
            "direction": "discount",
            "amount": {"status": "known", "amount": {"amount_minor": minor, "currency": "USD"}},
            "stacking": {"group": id, "combinability": "stackable"}
        });
        for (k, v) in extra.as_object().expect("members") {
            p[k] = v.clone();
        }
        p
    }

    /// Programs that exercise every member: a stackable discount, one
    /// that needs an unknown claim (a potential extra), a rule-defined one
    /// (a rule hash), a finance-only one (branches differ), a surcharge, a
    /// program of unknown amount, `padding` more discounts, and a stored
    /// document that no longer decodes (unusable).
    fn records(padding: usize) -> Vec<ProgramRecord> {
        let mut records = vec![
            record("cash", program("cash", 100_000, json!({}))),
            record(
                "military",
                program(
                    "military",
                    50_000,
                    json!({"criteria": [{"criterion": "military", "operator": "equals",
                        "value": true, "evidence_status": "claimed"}]}),
                ),
            ),
            record(
                "dealer",
                program(
                    "dealer",
                    20_000,
                    json!({"stacking": {"group": "dealer", "combinability": "rule_defined",
                        "rule": "stack.len() <= 3"}}),
                ),
            ),
            record(
                "apr",
                program("apr", 30_000, json!({"payment_modes": ["finance"]})),
            ),
            record(
                "market",
                program(
                    "market",
                    10_000,
                    json!({"kind": "surcharge", "direction": "surcharge"}),
                ),
            ),
            record(
                "tbd",
                program("tbd", 0, json!({"amount": {"status": "unknown"}})),
            ),
            record("corrupt", json!({"program_id": "corrupt"})),
        ];
        records.extend((0..padding).map(|i| {
            let id = format!("pad-{i:03}");
            let p = program(&id, 1_000 + i as i64, json!({"name": "x".repeat(120)}));
            record(&id, p)
        }));
        records
    }

    fn evaluation(padding: usize, payment_mode: ProfilePaymentMode) -> OffersEvaluation {
        let org = OrgPrograms::from_records(&records(padding), Utc::now());
        let as_of = DateTime::parse_from_rfc3339("2026-11-21T12:00:00Z").expect("as_of");
        let selected = org.at(as_of);
        let vehicle = pricing::Vehicle {
            vehicle_id: "veh.1".into(),
            make: "Honda".into(),
            model: "Civic".into(),
            year: 2026,
            trim: None,
            condition: "new".into(),
            vin: None,
            rooftop_id: "roof.1".into(),
            advertised_price: pricing::Money::try_new(3_000_000, "USD").expect("money"),
            price_valid_until: None,
        };
        let profile = pricing::Profile {
            payment_mode,
            jurisdiction: pricing::stacking::ProfileJurisdiction {
                country: "US".into(),
                subdivision: Some("US-IL".into()),
                postal_code: None,
            },
            claims: Default::default(),
            as_of,
        };
        let evaluation = selected
            .evaluate(&vehicle, &profile, pricing::SearchBudget::default())
            .expect("evaluates");
        OffersEvaluation::new(
            evaluation,
            Additions {
                revisions: selected.selection.revisions.clone(),
                unusable_programs: selected.unusable(),
                organization_id: "org.1".into(),
                rooftop_id: "roof.1".into(),
                freshness: drift::freshness(true),
                trace_id: "0123456789abcdef0123456789abcdef".into(),
            },
        )
    }

    /// Full and concise evaluations, small and past the result budget,
    /// against `offersEvaluation`; `Omitted` against `offersOmitted`.
    #[test]
    fn evaluations_match_their_definition() {
        let full = evaluation(0, ProfilePaymentMode::Unknown);
        assert!(!full.potential_extra.is_empty(), "{full:?}");
        assert!(!full.unusable_programs.is_empty());
        assert!(
            full.provenance
                .programs
                .iter()
                .any(|p| p.rule_hash.is_some())
        );
        let mut concise = full.clone();
        crate::tools::offers_evaluate::concise(&mut concise);
        assert!(concise.trace.is_empty() && concise.omitted.is_some());
        let mut large = evaluation(200, ProfilePaymentMode::Cash);
        let before = large.programs.len();
        crate::tools::offers_evaluate::concise(&mut large);
        assert!(
            large.programs.len() < before,
            "the budget rule did not apply"
        );
        let cash_only = evaluation(0, ProfilePaymentMode::Cash);
        drift::check_output(&[full, concise.clone(), large, cash_only]);
        drift::check(
            "offers.schema.json#/$defs/offersOmitted",
            &[concise.omitted.expect("omitted")],
        );
    }

    /// The full form is, byte for byte, the engine's evaluation followed
    /// by the gateway's members (the wire order before this type named
    /// them one by one).
    #[test]
    fn the_full_form_is_the_engines_members_then_the_gateways() {
        let org = OrgPrograms::from_records(&records(0), Utc::now());
        let as_of = DateTime::parse_from_rfc3339("2026-11-21T12:00:00Z").expect("as_of");
        let typed = evaluation(0, ProfilePaymentMode::Unknown);
        let selected = org.at(as_of);
        let engine = selected
            .evaluate(
                &pricing::Vehicle {
                    vehicle_id: typed.vehicle_id.clone(),
                    make: "Honda".into(),
                    model: "Civic".into(),
                    year: 2026,
                    trim: None,
                    condition: "new".into(),
                    vin: None,
                    rooftop_id: "roof.1".into(),
                    advertised_price: typed.advertised_price,
                    price_valid_until: None,
                },
                &pricing::Profile {
                    payment_mode: ProfilePaymentMode::Unknown,
                    jurisdiction: pricing::stacking::ProfileJurisdiction {
                        country: "US".into(),
                        subdivision: Some("US-IL".into()),
                        postal_code: None,
                    },
                    claims: Default::default(),
                    as_of,
                },
                pricing::SearchBudget::default(),
            )
            .expect("evaluates");
        let Value::Object(mut expected) = serde_json::to_value(&engine).expect("engine") else {
            panic!("the engine's evaluation is an object");
        };
        for (key, value) in [
            ("revisions", json!(typed.revisions)),
            ("unusable_programs", json!(typed.unusable_programs)),
            ("organization_id", json!(typed.organization_id)),
            ("rooftop_id", json!(typed.rooftop_id)),
            ("freshness", json!(typed.freshness)),
            ("trace_id", json!(typed.trace_id)),
        ] {
            expected.insert(key.into(), value);
        }
        assert_eq!(
            serde_json::to_string(&typed).expect("typed"),
            serde_json::to_string(&expected).expect("expected")
        );
    }
}
