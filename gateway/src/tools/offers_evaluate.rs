//! `dealergateway.offers.evaluate` (extension profile
//! `dealergateway.offers/0.1`, issue 7 item 5): the incentive evaluation of
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

use super::args::{OffersArgs, OffersClaim, OffersPaymentMode, OffersProfile, UnknownWord};
use super::output::{Freshness, FreshnessState, OffersEvaluation};
use super::target;
use super::{ToolContext, ToolError};
use crate::catalog::FieldError;
use crate::inventory::render::timestamp;
use crate::offers::vehicle_for_pricing;

pub const NAME: &str = "dealergateway.offers.evaluate";

/// DAP `freshness.max_age_seconds` limit.
const MAX_AGE_LIMIT: u32 = 2_592_000;

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
            .await
            .map_err(ToolError::internal)?;
        let vehicle = vehicle_for_pricing(record);
        // On the bounded evaluation pool, within the evaluation's budget and
        // deadline (docs/pricing.md section 4): never on this async worker.
        // The revision of each program live at the profile's `as_of` (issue 12
        // item 1); the evaluation is valid at most until another one takes over.
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

        Ok(OffersEvaluation {
            evaluation,
            revisions: selected.selection.revisions.clone(),
            unusable_programs: selected.unusable(),
            organization_id: record.organization_id.clone(),
            rooftop_id: record.rooftop_id.clone(),
            freshness: Freshness {
                observed_at: timestamp(observed),
                state: freshness_state,
                valid_until: Some(timestamp(valid_until)),
                max_age_seconds: Some(sla.min(MAX_AGE_LIMIT)),
            },
            trace_id: ctx.trace_id.clone(),
        })
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
/// `retryable: true` (DAP-ERR-001, issue 12 item 6). The message is the
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
