//! `dealeragent.pricing.get_disclosure` (profile
//! `dealeragent.pricing.disclosure/0.1`): the pricing disclosure of one
//! vehicle, built by [`crate::disclosure::build`] (docs/pricing.md,
//! sections 5 and 6).
//!
//! Policy first (DAP-CORE-031): the rooftop must be readable by the caller
//! before the vehicle is looked up. The availability band comes from stored
//! observations only (the feed record, or a newer check already made);
//! a disclosure never triggers a live availability check.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::target;
use super::{ToolContext, ToolError};
use crate::availability::{self, Band, Observed, band};
use crate::disclosure::{self, Inputs};
use crate::inventory::model::VehicleRecord;

pub const NAME: &str = "dealeragent.pricing.get_disclosure";

/// The band of a vehicle at `now` from what is already known: a stored
/// live observation newer than the feed record, else the feed record
/// itself. Withdrawn vehicles are `unknown`.
pub fn stored_band(
    record: &VehicleRecord,
    withdrawn: bool,
    overlay: Option<&crate::store::AvailabilityObservation>,
    now: DateTime<Utc>,
) -> Band {
    if withdrawn {
        return Band::Unknown;
    }
    match overlay.filter(|o| o.observed_at > record.source.observed_at) {
        Some(o) => band::band(Some(&availability::observed(o)), now),
        None => band::band(
            Some(&Observed {
                status: &record.availability_status,
                authority: &record.source.authority,
                observed_at: record.source.observed_at,
            }),
            now,
        ),
    }
}

pub async fn call(ctx: &ToolContext, args: &Value) -> Result<Value, ToolError> {
    // Tenancy before the lookup (DAP-CORE-031); `vehicle_id` is the only
    // selector the input schema allows here.
    let target = target::resolve_vehicle(ctx, args).await?;
    let (org, rooftop) = (target.tenant.organization(), target.tenant.rooftop());
    let (found, record) = (&target.found, &target.record);
    let now = Utc::now();
    let overlay = if found.withdrawn {
        None
    } else {
        ctx.state
            .availability
            .overlay_or_store(ctx.state.store.as_ref(), rooftop, &record.vehicle_id)
            .await
    };
    let band = stored_band(record, found.withdrawn, overlay.as_ref(), now);
    let jurisdiction = args.get("jurisdiction");
    let payment_mode = args.get("payment_mode").and_then(Value::as_str);
    let org_programs = ctx
        .state
        .offers
        .programs(ctx.state.store.as_ref(), &org.organization_id)
        .await
        .map_err(ToolError::internal)?;
    let programs = disclosure::profile_jurisdiction(jurisdiction, &rooftop.dap).and_then(|j| {
        disclosure::programs_input(
            record,
            &org_programs.at(now.fixed_offset()),
            org_programs.loaded_at,
            j,
            payment_mode,
            now,
        )
    });
    let inputs = Inputs {
        record,
        pricing: &rooftop.settings.pricing,
        config_source: Some(&org.source),
        inventory_sla_seconds: found.index.inventory_sla_seconds(),
        withdrawn: found.withdrawn,
        snapshot_version: found.index.version(),
        band,
        jurisdiction,
        payment_mode,
        programs,
        now,
    };
    Ok(disclosure::build(&inputs).document)
}
