//! `dealeragent.inventory.get_used_vehicle_details` (profile
//! `dealeragent.used-vehicle.read/0.1`): the used-vehicle disclosure of one
//! published used, certified or demo vehicle, selected by exactly one of
//! `vehicle_id`, `vin`, `stock_number` within one organization and rooftop.
//!
//! The shared prologue ([`target`]) decides tenancy before anything is
//! looked up (DAP-CORE-031). A foreign, absent or unpublished vehicle, and
//! one without a used-vehicle disclosure (a `new` vehicle, DAP-UV-001),
//! all answer the same `dealeragent.resource.not_found`, so the answer
//! never reveals whether a VIN exists elsewhere (DAP-UV-002). The document
//! is rendered by `inventory::render::used_vehicle_details` as the typed
//! [`UsedVehicleDetails`] (drift-tested against its definition below) and
//! checked against the tool's output schema by the pipeline (DAP 6.4).

use chrono::Utc;

use super::args::UsedVehicleArgs;
use super::output::ToolOutput;
use super::target;
use super::{ToolContext, ToolError};
use crate::dap::UsedVehicleDetails;
use crate::inventory::render::{self, RenderContext};

pub const NAME: &str = "dealeragent.inventory.get_used_vehicle_details";

/// The tool (see [`super::Tool`]).
pub struct GetUsedVehicleDetails;

impl ToolOutput for UsedVehicleDetails {
    const OUTPUT: &'static str = "used-vehicle.schema.json#/$defs/usedVehicleDetails";
}

impl super::Tool for GetUsedVehicleDetails {
    const NAME: &'static str = NAME;
    type Args = UsedVehicleArgs;
    type Output = UsedVehicleDetails;

    async fn call(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let found = target::resolve_vehicle(ctx, args.target()).await?;
        let render_ctx = RenderContext {
            now: Utc::now(),
            inventory_sla_seconds: found.found.index.inventory_sla_seconds(),
            withdrawn: found.found.withdrawn,
        };
        render::used_vehicle_details(&found.record, &render_ctx, &ctx.trace_id)
            .ok_or(ToolError::NotFound)
    }
}

#[cfg(test)]
mod tests;
