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
use serde_json::{Value, json};

use super::args::OffersArgs;
use super::target;
use super::{ToolContext, ToolError};
use crate::catalog::FieldError;
use crate::inventory::render::timestamp;
use crate::offers::vehicle_for_pricing;

pub const NAME: &str = "dealergateway.offers.evaluate";

/// DAP `freshness.max_age_seconds` limit.
const MAX_AGE_LIMIT: u32 = 2_592_000;

pub async fn call(ctx: &ToolContext, args: &Value) -> Result<Value, ToolError> {
    // Tenancy first (DAP-CORE-031), then the profile, then the lookup: a
    // caller who may not read the rooftop learns nothing from its profile
    // being checked.
    let args: OffersArgs = super::args::parse(args)?;
    let authorized = target::authorize(ctx, args.target()).await?;
    let profile = profile(&args.profile)?;
    let target = authorized.locate(ctx).await?;
    let state = &ctx.state;
    let (found, record) = (&target.found, &target.record);
    let programs = state
        .offers
        .programs(
            state.store.as_ref(),
            &target.tenant.organization().organization_id,
        )
        .await
        .map_err(ToolError::internal)?;
    let vehicle = vehicle_for_pricing(record);
    // The revision of each program live at the profile's `as_of` (issue 12
    // item 1); the evaluation is valid at most until another one takes over.
    let selected = programs.at(profile.as_of);
    let evaluation = selected
        .evaluate(&vehicle, &profile, SearchBudget::default())
        .map_err(|e| evaluation_error(&e))?;

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
    let freshness_state = if found.withdrawn {
        "withdrawn"
    } else if now <= valid_until {
        "current"
    } else {
        "stale"
    };

    let mut out = serde_json::to_value(&evaluation).map_err(ToolError::internal)?;
    // Which revision was used and why the others were not; programs that
    // cannot be evaluated (issue 12 items 1-2).
    selected.annotate(&mut out);
    let map = out
        .as_object_mut()
        .ok_or_else(|| ToolError::internal("evaluation is not an object"))?;
    map.insert("organization_id".into(), json!(record.organization_id));
    map.insert("rooftop_id".into(), json!(record.rooftop_id));
    map.insert(
        "freshness".into(),
        json!({
            "observed_at": timestamp(observed),
            "state": freshness_state,
            "valid_until": timestamp(valid_until),
            "max_age_seconds": sla.min(MAX_AGE_LIMIT),
        }),
    );
    map.insert("trace_id".into(), json!(ctx.trace_id));
    Ok(out)
}

/// The engine's profile from a schema-valid `profile` object.
fn profile(value: &Value) -> Result<Profile, ToolError> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let payment_mode = match value["payment_mode"].as_str() {
        Some("cash") => ProfilePaymentMode::Cash,
        Some("finance") => ProfilePaymentMode::Finance,
        Some("lease") => ProfilePaymentMode::Lease,
        _ => ProfilePaymentMode::Unknown,
    };
    let jurisdiction = &value["jurisdiction"];
    let country = text(jurisdiction, "country").unwrap_or_default();
    let subdivision = text(jurisdiction, "subdivision");
    if let Some(sub) = &subdivision
        && !sub.starts_with(&format!("{country}-"))
    {
        return Err(invalid(
            "/profile/jurisdiction/subdivision",
            "The subdivision must be a subdivision of the given country.",
        ));
    }
    let mut claims = BTreeMap::new();
    if let Some(map) = value.get("claims").and_then(Value::as_object) {
        for (key, claim) in map {
            // `key` passed the closed offersClaims schema, so it is a
            // schema-defined name, not free caller input (docs/security.md).
            let criterion: Criterion = serde_json::from_value(json!(key)).map_err(|_| {
                invalid(
                    &format!("/profile/claims/{key}"),
                    "Not a supported criterion.",
                )
            })?;
            let claim = match claim {
                Value::Bool(true) => ClaimValue::True,
                Value::Bool(false) => ClaimValue::False,
                _ => ClaimValue::Unknown,
            };
            claims.insert(criterion, claim);
        }
    }
    let as_of = match value.get("as_of").and_then(Value::as_str) {
        Some(t) => DateTime::parse_from_rfc3339(t)
            .map_err(|_| invalid("/profile/as_of", "Not an RFC 3339 date-time."))?,
        None => Utc::now().trunc_subsecs(0).fixed_offset(),
    };
    Ok(Profile {
        payment_mode,
        jurisdiction: ProfileJurisdiction {
            country,
            subdivision,
            postal_code: text(jurisdiction, "postal_code"),
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

fn invalid(pointer: &str, explanation: &str) -> ToolError {
    ToolError::Invalid {
        message: "The profile is invalid.".into(),
        field_errors: vec![FieldError::new(pointer, "semantic", explanation)],
    }
}
