//! `dealergateway.offers.evaluate` (extension profile
//! `dealergateway.offers/0.1`, docs/pricing.md): the incentive evaluation of
//! one vehicle of a rooftop for a hypothetical, PII-free buyer profile.
//!
//! Policy first (DAP-CORE-031): the rooftop must be readable by the caller
//! before the vehicle or the programs are looked up; otherwise not found.
//! The programs are the organization's revisions live at the profile's
//! `as_of` ([`crate::offers::OrgPrograms::at`], named with the reasons in
//! `revisions`; unusable ones in `unusable_programs`); the engine is
//! `pricing::stacking::evaluate`. The output is the evaluation plus the
//! organization, rooftop, freshness (valid until the earliest of the
//! evaluation's `valid_until` and the inventory record's validity) and the
//! trace id. The input schema rejects every field that could carry personal
//! data (`schemas/offers.schema.json`).

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, SubsecRound as _, Utc};
use pricing::SearchBudget;
use pricing::incentives::Criterion;
use pricing::stacking::{ClaimValue, Profile, ProfileJurisdiction, ProfilePaymentMode};

use serde_json::Value;

use super::args::{Detail, OffersArgs, OffersClaim, OffersPaymentMode, OffersProfile, UnknownWord};
use super::output::{Additions, Freshness, FreshnessState, OffersEvaluation, Omitted};
use super::target;
use super::{ToolContext, ToolError};
use crate::catalog::FieldError;
use crate::dap::MAX_AGE_LIMIT;
use crate::inventory::render::timestamp;
use crate::offers::vehicle_for_pricing;

pub const NAME: &str = "dealergateway.offers.evaluate";

/// The tool (see [`super::Tool`]).
pub struct OffersEvaluate;

impl super::Tool for OffersEvaluate {
    const NAME: &'static str = NAME;
    type Args = OffersArgs;
    type Output = OffersEvaluation;

    async fn call(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        // Tenancy first (DAP-CORE-031), then the profile, then the lookup: a
        // caller who may not read the rooftop learns nothing from its profile
        // being checked.
        let authorized = target::authorize(ctx, args.target()).await?;
        let profile = profile(&args.profile)?;
        let target = authorized.locate(ctx).await?;
        let (found, record) = (&target.found, &target.record);
        let programs = ctx
            .offers()
            .programs(ctx.store(), &target.tenant.organization().organization_id)
            .await?;
        let vehicle = vehicle_for_pricing(record);
        // On the bounded evaluation pool, within the evaluation's budget and
        // deadline (docs/pricing.md section 4): never on this async worker.
        // The revision of each program live at the profile's `as_of`
        // (docs/pricing.md); the evaluation is valid at most until another one takes over.
        let job_profile = profile;
        // Why a stored rule fails is the organization's own business
        // (docs/security.md "Who reads why a rule failed").
        let detail = crate::offers::Detail::for_caller(
            &ctx.principal,
            &target.tenant.organization().organization_id,
        );
        let (selected, evaluation) = ctx
            .offers()
            .pool()
            .run(move |deadline| {
                let selected = programs
                    .at(job_profile.as_of)
                    .with_deadline(deadline)
                    .with_detail(detail);
                let evaluation = selected.evaluate(&vehicle, &job_profile, SearchBudget::default());
                (selected, evaluation)
            })
            .await
            .map_err(pool_error)?;
        let evaluation = evaluation.map_err(|e| evaluation_error(&e))?;

        let sla = found.index.inventory_sla_seconds();
        let observed = record.source.observed_at;
        let inventory_until = observed
            .checked_add_signed(Duration::seconds(i64::from(sla)))
            .unwrap_or(observed);
        let valid_until = evaluation
            .valid_until
            .map(|t| t.with_timezone(&Utc))
            .map_or(inventory_until, |t| t.min(inventory_until));
        let now = Utc::now();
        // DAP 6.4: a withdrawn or expired record is never current.
        let freshness_state = if found.withdrawn {
            FreshnessState::Withdrawn
        } else if now <= valid_until {
            FreshnessState::Current
        } else {
            FreshnessState::Stale
        };

        let mut output = OffersEvaluation::new(
            evaluation,
            Additions {
                revisions: selected.selection.revisions.clone(),
                unusable_programs: selected.unusable(),
                organization_id: record.organization_id.clone(),
                rooftop_id: record.rooftop_id.clone(),
                freshness: Freshness {
                    observed_at: timestamp(observed),
                    state: freshness_state,
                    valid_until: Some(timestamp(valid_until)),
                    // common.schema.json's limit (DAP 6.4).
                    max_age_seconds: Some(sla.min(MAX_AGE_LIMIT)),
                },
                trace_id: ctx.trace_id.clone(),
            },
        );
        if args.detail.unwrap_or_default() == Detail::Concise {
            concise(&mut output);
        }
        Ok(output)
    }
}

/// The engine's profile from the typed `profile`, with the rule the schema
/// cannot express (a subdivision of the given country) and the RFC 3339
/// check of `as_of`; errors name the field, never its value (DAP-ERR-002).
fn profile(profile: &OffersProfile) -> Result<Profile, ToolError> {
    let payment_mode = match profile.payment_mode {
        OffersPaymentMode::Cash => ProfilePaymentMode::Cash,
        OffersPaymentMode::Finance => ProfilePaymentMode::Finance,
        OffersPaymentMode::Lease => ProfilePaymentMode::Lease,
        OffersPaymentMode::Unknown => ProfilePaymentMode::Unknown,
    };
    let jurisdiction = &profile.jurisdiction;
    let country = jurisdiction.country.clone();
    let subdivision = jurisdiction.subdivision.clone();
    if let Some(sub) = &subdivision
        && !sub.starts_with(&format!("{country}-"))
    {
        return Err(invalid(
            "/profile/jurisdiction/subdivision",
            "The subdivision must be a subdivision of the given country.",
        ));
    }
    let claims: BTreeMap<Criterion, ClaimValue> = profile
        .claims
        .iter()
        .flatten()
        .map(|(criterion, claim)| {
            let value = match claim {
                OffersClaim::Known(true) => ClaimValue::True,
                OffersClaim::Known(false) => ClaimValue::False,
                OffersClaim::Unknown(UnknownWord::Unknown) => ClaimValue::Unknown,
            };
            (*criterion, value)
        })
        .collect();
    let as_of = match &profile.as_of {
        Some(t) => DateTime::parse_from_rfc3339(t)
            .map_err(|_| invalid("/profile/as_of", "Not an RFC 3339 date-time."))?,
        None => Utc::now().trunc_subsecs(0).fixed_offset(),
    };
    Ok(Profile {
        payment_mode,
        jurisdiction: ProfileJurisdiction {
            country,
            subdivision,
            postal_code: jurisdiction.postal_code.clone(),
        },
        claims,
        as_of,
    })
}

/// An evaluation that cannot complete is a deterministic property of the
/// stored inputs (programs amounts that overflow when summed with the
/// price, a negative price): retrying cannot help, so it is answered as a
/// non-retryable input error, never `dealeragent.internal` with
/// `retryable: true` (DAP-ERR-001). The message is the
/// disclosure's value-free sentence for the same failure.
fn evaluation_error(err: &pricing::stacking::EvaluationError) -> ToolError {
    ToolError::Invalid {
        message: crate::disclosure::evaluation_failure(err),
        field_errors: Vec::new(),
    }
}

/// A refusal of the evaluation pool as the tool's error: saturated is the
/// retryable `dealeragent.upstream.unavailable` with `retry_after_ms`
/// (docs/pricing.md section 4); a panicked evaluation is a defect.
pub(super) fn pool_error(err: crate::offers::pool::PoolError) -> ToolError {
    use crate::offers::pool::PoolError;
    match err {
        PoolError::Saturated { retry_after } => ToolError::EvaluationsBusy {
            retry_after_ms: u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX),
        },
        PoolError::Failed(detail) => ToolError::internal(detail),
    }
}

fn invalid(pointer: &str, explanation: &str) -> ToolError {
    ToolError::Invalid {
        message: "The profile is invalid.".into(),
        field_errors: vec![FieldError::new(pointer, "semantic", explanation)],
    }
}

/// How a caller gets what a concise evaluation leaves out.
const FULL_EVALUATION: &str =
    "call dealergateway.offers.evaluate again with the same arguments and detail \"full\"";

/// The concise form of an evaluation (docs/pricing.md section 2,
/// "Output"): what decides the answer stays whole (every branch's best
/// stack, guaranteed floor, potential extra and unknown-amount programs,
/// the winning mode and its per-program reports in `programs`, revisions,
/// provenance, unusable programs, freshness); each branch's own
/// per-program reports and the trace are left out, counted in `omitted`.
/// Should that still pass the result budget (dozens of programs), the
/// winning branch's reports of programs in none of its stacks and extras
/// go too.
pub fn concise(evaluation: &mut OffersEvaluation) {
    let mut left_out = Vec::new();
    if !evaluation.trace.is_empty() {
        left_out.push(format!(
            "the trace of the evaluation's decisions ({} entries)",
            evaluation.trace.len()
        ));
        evaluation.trace.clear();
    }
    let mut dropped = Vec::new();
    for branch in &mut evaluation.branches {
        if !branch.programs.is_empty() {
            dropped.push(format!(
                "{} {}",
                branch.payment_mode.name(),
                branch.programs.len()
            ));
            branch.programs.clear();
        }
    }
    if !dropped.is_empty() {
        left_out.push(format!(
            "each payment-mode branch's per-program reports ({}); the winning branch's ({}) are in programs",
            dropped.join(", "),
            evaluation.winning_payment_mode.name()
        ));
    }
    // The size of the answer as sent so far (`omitted` is still absent).
    let size = serde_json::to_string(&*evaluation).map_or(usize::MAX, |t| t.len());
    if size > super::budget::RESULT_BYTES {
        let named = stack_members(evaluation);
        let before = evaluation.programs.len();
        evaluation
            .programs
            .retain(|r| named.contains(&r.program_id));
        left_out.push(format!(
            "the winning branch's reports of {} programs in none of its stacks or extras, to stay within the {}-byte result budget",
            before - evaluation.programs.len(),
            super::budget::RESULT_BYTES
        ));
    }
    if !left_out.is_empty() {
        evaluation.omitted = Some(Omitted::concise(left_out, FULL_EVALUATION));
    }
}

/// The program ids the winning branch's best stack, guaranteed floor and
/// potential extra name.
fn stack_members(evaluation: &OffersEvaluation) -> Vec<String> {
    let mut out = Vec::new();
    for stack in [&evaluation.best_stack, &evaluation.guaranteed_floor] {
        for list in [
            &stack.program_ids,
            &stack.surcharge_ids,
            &stack.subject_to_evidence,
            &stack.unknown_amounts,
        ] {
            out.extend(list.iter().map(|r| r.program_id.clone()));
        }
    }
    out.extend(
        evaluation
            .potential_extra
            .iter()
            .map(|extra| extra.program.program_id.clone()),
    );
    out.extend(
        evaluation
            .unknown_amount_programs
            .iter()
            .map(|r| r.program_id.clone()),
    );
    out
}

/// The members of an evaluation a disclosure's concise offers extension
/// keeps (docs/pricing.md section 5): what decides the answer.
#[cfg(test)]
pub(crate) const DECISIVE_KEYS: &[&str] = &DECISIVE;

const DECISIVE: [&str; 9] = [
    "as_of",
    "payment_mode",
    "winning_payment_mode",
    "best_stack",
    "guaranteed_floor",
    "potential_extra",
    "unknown_amount_programs",
    "unusable_programs",
    "valid_until",
];

/// The concise `extensions."dealergateway.offers"` of a disclosure, from
/// the full evaluation for the default profile: the winning branch's best
/// stack (with its optimality), guaranteed floor, potential extra and
/// unknown-amount programs, the unusable programs, `as_of` and validity,
/// and `omitted` naming the rest and the call that returns it. An
/// evaluation that could not complete (`{"error": …}`) is kept whole.
pub fn decisive(evaluation: &Value) -> Value {
    let Value::Object(members) = evaluation else {
        return evaluation.clone();
    };
    if members.contains_key("error") {
        return evaluation.clone();
    }
    let mut out = serde_json::Map::new();
    for key in DECISIVE {
        if let Some(v) = members.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    let count = |key: &str| {
        members
            .get(key)
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    out.insert(
        "omitted".into(),
        decisive_omitted(
            count("branches"),
            count("programs"),
            count("trace"),
            count("revisions"),
        ),
    );
    Value::Object(out)
}

/// [`decisive`] of the typed evaluation a disclosure carries, written
/// straight to text from the decisive members (never the whole evaluation
/// first; a test holds the two equal on real evaluations).
pub fn decisive_outcome(
    outcome: &crate::disclosure::OffersOutcome,
) -> serde_json::Result<Box<serde_json::value::RawValue>> {
    use crate::disclosure::OffersOutcome;
    /// The members of [`DECISIVE`], in its order, then `omitted`.
    #[derive(serde::Serialize)]
    struct Decisive<'a> {
        as_of: &'a pricing::incentives::Timestamp,
        payment_mode: &'a pricing::stacking::ProfilePaymentMode,
        winning_payment_mode: &'a pricing::incentives::PaymentMode,
        best_stack: &'a pricing::stacking::StackReport,
        guaranteed_floor: &'a pricing::stacking::StackReport,
        potential_extra: &'a [pricing::stacking::PotentialExtra],
        unknown_amount_programs: &'a [pricing::stacking::ProgramRef],
        unusable_programs: &'a [crate::offers::UnusableProgram],
        valid_until: &'a Option<pricing::incentives::Timestamp>,
        omitted: Value,
    }
    let annotated = match outcome {
        OffersOutcome::Evaluated(annotated) => annotated,
        other => return serde_json::value::to_raw_value(other),
    };
    let e = &annotated.evaluation;
    serde_json::value::to_raw_value(&Decisive {
        as_of: &e.as_of,
        payment_mode: &e.payment_mode,
        winning_payment_mode: &e.winning_payment_mode,
        best_stack: &e.best_stack,
        guaranteed_floor: &e.guaranteed_floor,
        potential_extra: &e.potential_extra,
        unknown_amount_programs: &e.unknown_amount_programs,
        unusable_programs: &annotated.unusable_programs,
        valid_until: &e.valid_until,
        omitted: decisive_omitted(
            e.branches.len(),
            e.programs.len(),
            e.trace.len(),
            annotated.revisions.len(),
        ),
    })
}

/// The `omitted` member of a concise evaluation: what it leaves out, with
/// the counts, and the calls that return it.
fn decisive_omitted(branches: usize, programs: usize, trace: usize, revisions: usize) -> Value {
    let left_out = vec![
        format!(
            "the {branches} payment-mode branches, each with its own best stack and per-program reports"
        ),
        format!(
            "the winning branch's per-program reports ({programs}), with applicability, eligibility and amount"
        ),
        format!("the trace of the evaluation's decisions ({trace} entries)"),
        format!(
            "the revision chosen for each program ({revisions}) and the rule hashes (also in provenance.transformations)"
        ),
    ];
    super::budget::omitted(
        &left_out,
        "call dealeragent.pricing.get_disclosure again with detail \"full\", or dealergateway.offers.evaluate for this vehicle with payment_mode \"unknown\", no claims and this disclosure's jurisdiction (the one asked for, else the rooftop's)",
    )
}
