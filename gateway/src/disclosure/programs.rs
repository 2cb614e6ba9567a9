//! The programs part of a disclosure: the organization's published
//! incentive programs as DAP `conditionalAdjustment`s for one vehicle, and
//! the offer evaluation for the default profile (docs/pricing.md).

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{
    OffersOutcome, ProgramAdjustment, ProgramsInput, bounded_sentence, evaluation_failure, str_of,
};
use crate::dap::{
    ConditionalAdjustment, CriterionValue, EligibilityCriterion, Jurisdiction, Provenance, Scalar,
    Source, Stacking, truncate,
};
use crate::inventory::model::VehicleRecord;
use crate::inventory::render::timestamp;

/// The offer evaluation of a disclosure: the engine's evaluation, member
/// for member as the engine serializes it, then the members the gateway
/// adds (docs/pricing.md "Revisions"): the same text `ProgramsAt::annotate`
/// makes of a tree, written without one.
#[derive(Debug, serde::Serialize)]
pub struct AnnotatedEvaluation {
    #[serde(flatten)]
    pub evaluation: pricing::Evaluation,
    pub revisions: Vec<crate::offers::RevisionChoice>,
    pub unusable_programs: Vec<crate::offers::UnusableProgram>,
}

/// A DAP jurisdiction from a program's `"US"` / `"US-IL"` code.
fn jurisdiction_of_code(code: &str) -> Jurisdiction {
    Jurisdiction {
        country: code.chars().take(2).collect(),
        subdivision: code.contains('-').then(|| code.to_owned()),
        locality: None,
        postal_code: None,
    }
}

/// A criterion the gateway states itself (`value` true, or a list).
fn criterion(
    criterion: &str,
    operator: &str,
    value: CriterionValue,
    evidence_status: &str,
    description: String,
) -> EligibilityCriterion {
    EligibilityCriterion {
        criterion: criterion.to_owned(),
        operator: operator.to_owned(),
        value,
        evidence_status: evidence_status.to_owned(),
        description: Some(description),
    }
}

/// The source a program's provenance names.
fn program_source(pv: &pricing::incentives::ProgramProvenance) -> Source {
    Source {
        source_name: truncate(&pv.source_name, 128).to_owned(),
        authority: dap_authority(&pv.authority).to_owned(),
        observed_at: timestamp(pv.observed_at.with_timezone(&Utc)),
        source_record_id: None,
        content_digest: None,
        source_uri: None,
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    !s.is_empty()
        && s.len() <= 128
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
}

/// The source authorities DAP knows; anything else is `unknown`.
fn dap_authority(a: &str) -> &str {
    match a {
        "authoritative_dealer_system"
        | "dealer_asserted"
        | "oem"
        | "government"
        | "third_party"
        | "derived" => a,
        _ => "unknown",
    }
}

/// The DAP `conditionalAdjustment` of one validated program, with the
/// amount resolved for this vehicle by the evaluation (`report`).
fn program_adjustment(
    vp: &pricing::incentives::ValidatedProgram,
    report: &pricing::stacking::ProgramReport,
) -> ConditionalAdjustment {
    use pricing::stacking::ResolvedAmount;
    let p = &vp.program;
    // The program's own criteria are DAP criteria already (the programs
    // file is checked against the schema when it is imported).
    let mut criteria: Vec<EligibilityCriterion> = p
        .criteria
        .iter()
        .filter_map(|c| {
            serde_json::to_value(c)
                .and_then(serde_json::from_value)
                .ok()
        })
        .collect();
    if let Some(modes) = &p.payment_modes {
        let names: Vec<&str> = modes.iter().map(|m| m.name()).collect();
        if !criteria.iter().any(|c| c.criterion == "payment_mode") {
            criteria.push(criterion(
                "payment_mode",
                "in",
                CriterionValue::List(
                    names
                        .iter()
                        .map(|n| Scalar::Text((*n).to_owned()))
                        .collect(),
                ),
                "not_required",
                format!("Only for {} purchases.", names.join(", ")),
            ));
        }
    }
    // A program whose residency the default profile cannot decide (a
    // subdivision-only program without a requested subdivision, or postal
    // exclusions without a requested postal code) is listed with the
    // residency need as a criterion: its eligibility is unknown, never
    // guessed from the rooftop's own address (docs/pricing.md section 2).
    if let pricing::stacking::Eligibility::Unknown { needs } = &report.eligibility {
        for need in needs.iter().filter(|n| n.criterion == "residency") {
            criteria.push(criterion(
                "residency",
                "verified",
                CriterionValue::Scalar(Scalar::Flag(true)),
                "required",
                truncate(
                    &format!("Buyer's residence decides eligibility: {}.", need.evidence),
                    500,
                )
                .to_owned(),
            ));
        }
    }
    if criteria.is_empty() {
        criteria.push(criterion(
            "other",
            "present",
            CriterionValue::Scalar(Scalar::Flag(true)),
            "not_required",
            "No buyer criteria: applies within the program's vehicle scope, jurisdictions, validity and payment modes.".to_owned(),
        ));
    }
    let combinable: Vec<String> = p
        .stacking
        .combinable_with
        .iter()
        .map(String::as_str)
        .filter(|s| is_identifier(s))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let amount = match &report.amount {
        ResolvedAmount::Known { amount, .. } | ResolvedAmount::Percent { amount, .. }
            if !amount.is_negative() =>
        {
            Some(*amount)
        }
        _ => None,
    };
    let provenance = p.provenance.as_ref().map(|pv| {
        let source = Source {
            source_record_id: pv
                .record_id
                .as_deref()
                .filter(|i| !i.is_empty())
                .map(|id| truncate(id, 256).to_owned()),
            ..program_source(pv)
        };
        let mut transformations = vec![format!("program {} revision {}", p.program_id, p.revision)];
        // Rhai and declarative limits alike: the hash names the combination rule.
        if let Some(hash) = vp.rule_hash() {
            transformations.push(format!("stacking rule {hash}"));
        }
        Provenance {
            sources: vec![source],
            authority_status: "asserted".to_owned(),
            transformed_at: None,
            transformations: transformations
                .iter()
                .map(|t| truncate(t, 160).to_owned())
                .collect(),
        }
    });
    ConditionalAdjustment {
        adjustment_id: p.program_id.clone(),
        name: truncate(&p.name, 160).to_owned(),
        direction: p.direction.name().to_owned(),
        amount_status: if amount.is_some() { "known" } else { "unknown" }.to_owned(),
        amount,
        criteria,
        criteria_mode: Some(p.criteria_mode.name().to_owned()),
        jurisdictions: p
            .jurisdictions
            .as_ref()
            .map(|js| js.iter().map(|j| jurisdiction_of_code(j)).collect()),
        valid_from: p.valid_from.map(|t| timestamp(t.with_timezone(&Utc))),
        valid_until: p.valid_until.map(|t| timestamp(t.with_timezone(&Utc))),
        stacking: Stacking {
            group: truncate(&p.stacking.group, 80).to_owned(),
            combinability: p.stacking.combinability.name().to_owned(),
            combinable_with: (!combinable.is_empty()).then_some(combinable),
        },
        provenance,
    }
}

/// The programs part of a disclosure: every program applicable to the
/// vehicle (in some payment-mode branch allowed by `payment_mode`) as a
/// conditional adjustment, and the evaluation for the default profile
/// (payment mode unknown, no claims, `jurisdiction` — the requested one,
/// else the rooftop's — as of `now`). `None` when the organization
/// publishes no programs.
pub fn programs_input(
    record: &VehicleRecord,
    programs: &crate::offers::ProgramsAt,
    loaded_at: DateTime<Utc>,
    jurisdiction: pricing::stacking::ProfileJurisdiction,
    payment_mode: Option<&str>,
    now: DateTime<Utc>,
) -> Option<ProgramsInput> {
    use pricing::stacking::{Applicability, Profile, ProfilePaymentMode, SearchBudget};
    let validated = programs.validated();
    if programs.is_empty() {
        return None;
    }
    let profile = Profile {
        payment_mode: ProfilePaymentMode::Unknown,
        jurisdiction,
        claims: std::collections::BTreeMap::new(),
        as_of: now.fixed_offset(),
    };
    let vehicle = crate::offers::vehicle_for_pricing(record);
    let evaluation = programs.evaluate(&vehicle, &profile, SearchBudget::default());
    let mut adjustments = Vec::new();
    let mut sources: Vec<Source> = Vec::new();
    let evaluation_value = match &evaluation {
        Ok(e) => {
            for vp in validated.programs() {
                let p = &vp.program;
                let report = e
                    .branches
                    .iter()
                    .filter(|b| {
                        payment_mode
                            .filter(|m| *m != "unknown")
                            .is_none_or(|m| b.payment_mode.name() == m)
                    })
                    .flat_map(|b| b.programs.iter())
                    .find(|r| {
                        r.program_id == p.program_id
                            && r.revision == p.revision
                            && r.applicability == Applicability::Applicable
                    });
                let Some(report) = report else {
                    continue;
                };
                if !is_identifier(&p.program_id) {
                    continue;
                }
                if let Some(pv) = &p.provenance
                    && !sources.iter().any(|s| s.source_name == pv.source_name)
                {
                    sources.push(program_source(pv));
                }
                adjustments.push(ProgramAdjustment {
                    adjustment: program_adjustment(vp, report),
                    program_id: p.program_id.clone(),
                    revision: p.revision,
                    rule_hash: vp.rule_hash().map(str::to_owned),
                    valid_until: p.valid_until.map(|t| t.with_timezone(&Utc)),
                });
            }
            None
        }
        Err(err) => Some(OffersOutcome::Failed(evaluation_failure(err))),
    };
    let evaluation_error = evaluation.as_ref().err().map(evaluation_failure);
    if sources.is_empty() {
        sources.push(Source {
            source_name: "dealer-agent-gateway incentive programs".to_owned(),
            authority: "dealer_asserted".to_owned(),
            observed_at: timestamp(loaded_at),
            source_record_id: None,
            content_digest: None,
            source_uri: None,
        });
    }
    let evaluation_bounded = evaluation
        .as_ref()
        .ok()
        .and_then(|e| e.cost.stopped)
        .map(bounded_sentence);
    let evaluation_valid_until = evaluation
        .as_ref()
        .ok()
        .and_then(|e| e.valid_until)
        .map(|t| t.with_timezone(&Utc));
    // Which revision of each program was used and why the others were
    // not; unusable programs (the members `ProgramsAt::annotate` adds to
    // a tree, in the same order).
    let evaluation_value = match evaluation {
        Ok(evaluation) => Some(OffersOutcome::Evaluated(std::sync::Arc::new(
            AnnotatedEvaluation {
                evaluation,
                revisions: programs.selection.revisions.clone(),
                unusable_programs: programs.unusable(),
            },
        ))),
        Err(_) => evaluation_value,
    };
    Some(ProgramsInput {
        adjustments,
        sources,
        loaded_at,
        evaluation: evaluation_value,
        evaluation_error,
        evaluation_valid_until,
        unusable: programs.unusable_sentences(),
        evaluation_bounded,
    })
}

/// The default profile's jurisdiction: the requested one, else the
/// rooftop's address (`country`, `region` as an ISO 3166-2 subdivision).
/// Only the requested jurisdiction supplies a postal code: the rooftop's
/// postal code says where the dealer is, not where the buyer lives, so a
/// program with postal exclusions stays applicable with a `residency` need
/// instead of being hidden by a guess (docs/pricing.md section 5).
pub fn profile_jurisdiction(
    requested: Option<&Value>,
    rooftop: &crate::dap::Rooftop,
) -> Option<pricing::stacking::ProfileJurisdiction> {
    let from = |v: &Value, sub_key: &str, postal: bool| {
        let country = str_of(v, "country")?.to_owned();
        let subdivision = str_of(v, sub_key).map(|s| {
            if s.contains('-') {
                s.to_owned()
            } else {
                format!("{country}-{s}")
            }
        });
        Some(pricing::stacking::ProfileJurisdiction {
            country,
            subdivision,
            postal_code: str_of(v, "postal_code")
                .filter(|_| postal)
                .map(str::to_owned),
        })
    };
    match requested {
        Some(j) => from(j, "subdivision", true),
        None => Some(pricing::stacking::ProfileJurisdiction {
            country: rooftop.address.country.clone(),
            subdivision: rooftop.address.subdivision(),
            postal_code: None,
        }),
    }
}
