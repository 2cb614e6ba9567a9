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

use std::sync::Arc;

use chrono::Utc;
use serde_json::Value;

use super::{ToolContext, ToolError, policy};
use crate::inventory::index::SnapshotIndex;
use crate::inventory::live::InventoryView;
use crate::inventory::render::{self, RenderContext};

pub const NAME: &str = "dealeragent.inventory.get_vehicle";

/// How a vehicle is selected.
#[derive(Debug, Clone, Copy)]
pub enum Selector<'a> {
    VehicleId(&'a str),
    Vin(&'a str),
    StockNumber(&'a str),
}

impl<'a> Selector<'a> {
    /// From schema-valid arguments (exactly one selector present).
    pub fn from_args(args: &'a Value) -> Option<Self> {
        let get = |k: &str| args.get(k).and_then(Value::as_str);
        get("vehicle_id")
            .map(Selector::VehicleId)
            .or_else(|| get("vin").map(Selector::Vin))
            .or_else(|| get("stock_number").map(Selector::StockNumber))
    }

    fn find(self, index: &SnapshotIndex) -> Option<usize> {
        match self {
            Selector::VehicleId(id) => index.find_vehicle_id(id),
            Selector::Vin(vin) => index.find_vin(vin).first().map(|r| *r as usize),
            Selector::StockNumber(s) => index.find_stock_number(s).first().map(|r| *r as usize),
        }
    }
}

/// Where a selected vehicle was found.
pub struct Found {
    pub index: Arc<SnapshotIndex>,
    pub row: usize,
    pub withdrawn: bool,
}

/// Look a vehicle up in a rooftop's current inventory, then among the
/// vehicles its newest snapshot withdrew.
pub fn lookup(view: &InventoryView, rooftop_id: &str, selector: Selector<'_>) -> Option<Found> {
    let rooftop = view.rooftop(rooftop_id)?;
    if let Some(row) = selector.find(&rooftop.latest) {
        return Some(Found {
            index: rooftop.latest.clone(),
            row,
            withdrawn: false,
        });
    }
    let withdrawn = rooftop.withdrawn.as_ref()?;
    selector.find(withdrawn).map(|row| Found {
        index: withdrawn.clone(),
        row,
        withdrawn: true,
    })
}

/// Render a found vehicle for the wire.
pub fn render_found(found: &Found) -> Value {
    let ctx = RenderContext {
        now: Utc::now(),
        inventory_sla_seconds: found.index.inventory_sla_seconds(),
        withdrawn: found.withdrawn,
    };
    render::vehicle_owned(found.index.record(found.row), &ctx)
}

pub async fn call(ctx: &ToolContext, args: &Value) -> Result<Value, ToolError> {
    let organization_id = args
        .get("organization_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let rooftop_id = args
        .get("rooftop_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let selector = Selector::from_args(args).ok_or(ToolError::NotFound)?;
    let directory = ctx
        .state
        .directory
        .snapshot()
        .await
        .map_err(ToolError::internal)?;
    let rooftop =
        policy::authorize_rooftop(&directory, &ctx.principal, organization_id, rooftop_id)?;
    let view = ctx
        .state
        .inventory
        .view(&directory)
        .await
        .map_err(ToolError::internal)?;
    let found = lookup(&view, &rooftop.rooftop_id, selector).ok_or(ToolError::NotFound)?;
    let mut vehicle = render_found(&found);
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
