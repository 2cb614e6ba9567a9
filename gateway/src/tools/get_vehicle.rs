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

use super::args::VehicleArgs;
use super::target;
use super::{Produced, ToolContext, ToolError};
use crate::inventory::render::{self, Mode, RenderContext};

// Selection lives with the shared prologue; re-exported for the vehicle
// resource (`resources.rs`), which answers the same lookup.
pub use super::target::{Found, Selector, lookup};

pub const NAME: &str = "dealeragent.inventory.get_vehicle";

/// Render a found vehicle for the wire, as a tree.
pub fn render_found(found: &Found) -> Value {
    let ctx = RenderContext {
        now: Utc::now(),
        inventory_sla_seconds: found.index.inventory_sla_seconds(),
        withdrawn: found.withdrawn,
    };
    render::vehicle(&found.index.record(found.row), &ctx)
}

/// The common case is served from the vehicle's pre-rendered pieces,
/// validated when its snapshot was indexed (issue 13 item 3). A withdrawn
/// vehicle, one with a newer availability check, and one whose pieces
/// failed the schema are built as trees and validated by the pipeline.
/// The tool (see [`super::Tool`]).
pub struct GetVehicle;

impl super::Tool for GetVehicle {
    const NAME: &'static str = NAME;
    type Args = VehicleArgs;
    type Output = Produced;

    async fn call(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let (tenant, found) = target::authorize(ctx, args.target())
            .await?
            .find(ctx)
            .await?;
        let now = Utc::now();
        let vehicle_id = found.index.vehicle_id(found.row).to_owned();
        if found.withdrawn {
            return Ok(Produced::Tree(render_found(&found)));
        }
        // A newer availability check overrides the feed's assertion
        // (docs/availability.md, "Overlay").
        let observation = ctx
            .availability()
            .overlay_or_store(ctx.store(), tenant.rooftop(), &vehicle_id)
            .await;
        let feed_observed_at =
            chrono::DateTime::from_timestamp_micros(found.index.rows[found.row].observed_us)
                .unwrap_or_default();
        let overlaid = observation
            .as_ref()
            .is_some_and(|o| o.observed_at > feed_observed_at);
        let pieces = if overlaid || !found.index.piece_checked(found.row) {
            None
        } else {
            found.index.pieces(found.row)
        };
        let Some(pieces) = pieces else {
            let mut vehicle = render_found(&found);
            crate::availability::apply_overlay(
                &mut vehicle,
                observation.as_ref(),
                feed_observed_at,
                now,
            );
            return Ok(Produced::Tree(vehicle));
        };
        let now_text = render::json_string(&render::timestamp(now));
        let mut json = String::with_capacity(4096);
        pieces.get().write(&mut json, now, &now_text, Mode::Live);
        Ok(Produced::Assembled {
            json: super::JsonText::trusted(json),
            resource_ids: vec![vehicle_id],
        })
    }
}
