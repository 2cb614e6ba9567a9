//! `dealeragent.inventory.get_vehicle` (profile `dealeragent.inventory.read/0.1`):
//! one vehicle by exactly one of `vehicle_id`, `vin`, `stock_number`
//! (the schema's `oneOf`), within one organization and rooftop.
//!
//! Policy first (DAP-CORE-031): the rooftop must be readable by the caller
//! before the vehicle is looked up; otherwise the answer is the same
//! not-found as for an absent vehicle. A vehicle dropped by the rooftop's
//! newest snapshot is still answered for a grace period, with freshness
//! `withdrawn` and availability never `available`; then it is not found.
//! A live availability check newer than the feed record replaces the
//! rendered `availability` (docs/availability.md, "Overlay").

use chrono::Utc;
use serde_json::Value;

use super::target::{self, VehicleTarget};
use super::{ToolContext, ToolError};
use crate::inventory::model::VehicleRecord;
use crate::inventory::render::{self, RenderContext};

// Selection lives with the shared prologue; re-exported for the vehicle
// resource (`resources.rs`), which answers the same lookup.
pub use super::target::{Found, Selector, lookup};

pub const NAME: &str = "dealeragent.inventory.get_vehicle";

/// Render a found vehicle for the wire.
pub fn render_found(found: &Found) -> Value {
    render_record(found, found.index.record(found.row))
}

/// Render `record`, the record of `found`, for the wire.
fn render_record(found: &Found, record: VehicleRecord) -> Value {
    let ctx = RenderContext {
        now: Utc::now(),
        inventory_sla_seconds: found.index.inventory_sla_seconds(),
        withdrawn: found.withdrawn,
    };
    render::vehicle_owned(record, &ctx)
}

pub async fn call(ctx: &ToolContext, args: &Value) -> Result<Value, ToolError> {
    let VehicleTarget {
        tenant,
        found,
        record,
    } = target::resolve_vehicle(ctx, args).await?;
    let rooftop = tenant.rooftop();
    let mut vehicle = render_record(&found, record);
    if !found.withdrawn {
        // A newer availability check overrides the feed's assertion
        // (docs/availability.md, "Overlay").
        let vehicle_id = found.index.vehicle_id(found.row).to_owned();
        let observation = ctx
            .state
            .availability
            .overlay_or_store(ctx.state.store.as_ref(), rooftop, &vehicle_id)
            .await;
        crate::availability::apply_overlay(
            &mut vehicle,
            observation.as_ref(),
            chrono::DateTime::from_timestamp_micros(found.index.rows[found.row].observed_us)
                .unwrap_or_default(),
            Utc::now(),
        );
    }
    Ok(vehicle)
}
