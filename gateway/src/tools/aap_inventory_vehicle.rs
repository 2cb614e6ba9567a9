//! `aap_inventory_vehicle` (profile `dealergateway.aap-compat/0.1`): AAP's
//! `inventory.vehicle` skill as a compatibility adapter over
//! `dealeragent.inventory.get_vehicle` (docs/compatibility.md).
//!
//! AAP names no rooftop, so the DAP tool is asked for each rooftop of the
//! dealer that the caller may read (policy first, DAP-CORE-031: a rooftop
//! the caller may not read is never asked). A VIN or stock number listed at
//! two rooftops is refused rather than answered with an arbitrary one (AAP
//! conformance, "Aggregate identity"). Every identifier given must match the
//! unit; a unit AAP does not list (sold, unavailable, withdrawn, unknown
//! status) is not found.

use serde_json::json;

use super::args::AapVehicleArgs;
use super::output::{AapVehicle, AapVehicleResponse};
use super::{Produced, ToolContext, ToolError, aap_map, get_vehicle, policy};
use crate::catalog::FieldError;

pub const NAME: &str = super::aap_map::VEHICLE_TOOL;

/// The tool (see [`super::Tool`]).
pub struct AapInventoryVehicle;

impl super::Tool for AapInventoryVehicle {
    const NAME: &'static str = NAME;
    type Args = AapVehicleArgs;
    type Output = Produced;

    async fn call(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let (directory, organization_id) = aap_map::dealer(ctx, args.dealer_id.as_deref()).await?;
        let (_, rooftops) =
            policy::authorize_rooftops(&directory, &ctx.principal, &organization_id, None)?;
        // The most specific identifier selects; the others must agree.
        let (member, selector) = match (&args.vehicle_id, &args.vin, &args.stock) {
            (Some(id), _, _) => ("vehicle_id", id),
            (None, Some(vin), _) => ("vin", vin),
            (None, None, Some(stock)) => ("stock_number", stock),
            (None, None, None) => return Err(ToolError::NotFound),
        };
        let names = aap_map::rooftop_names(&directory, &organization_id);
        let mut found: Vec<AapVehicle> = Vec::new();
        for rooftop in rooftops {
            let dap_args = json!({
                "organization_id": organization_id,
                "rooftop_id": rooftop.rooftop_id,
                member: selector,
            });
            let dap = match get_vehicle::GetVehicle::call(ctx, super::args::parse(&dap_args)?).await
            {
                Ok(produced) => produced.into_value(),
                Err(ToolError::NotFound) => continue,
                Err(other) => return Err(other),
            };
            let agrees = |dap_member: &str, given: &Option<String>| {
                given
                    .as_ref()
                    .is_none_or(|g| dap[dap_member].as_str() == Some(g.as_str()))
            };
            if !(agrees("vin", &args.vin) && agrees("stock_number", &args.stock)) {
                continue;
            }
            if let Some(vehicle) = aap_map::vehicle(&dap, &names)? {
                found.push(vehicle);
            }
        }
        match found.len() {
            0 => Err(ToolError::NotFound),
            1 => {
                let vehicle = found.remove(0);
                let resource_ids = vec![vehicle.vehicle_id.clone()];
                let response = super::output::tree(&AapVehicleResponse::of(vehicle))?;
                // Checked here, against the AAP response schema, because the
                // result is returned with its resource id for the audit record.
                super::check_part(ctx, NAME, "AAP vehicle response", &response)?;
                Ok(Produced::Assembled {
                    json: super::JsonText::of(&response),
                    resource_ids,
                    links: String::new(),
                })
            }
            _ => {
                let pointer = if member == "vin" { "/vin" } else { "/stock" };
                let message = "This identifier is listed at more than one rooftop of the dealer; ask again with the vehicle_id of the unit (aap_inventory_search lists it).";
                Err(ToolError::Invalid {
                    message: message.into(),
                    field_errors: vec![FieldError::new(pointer, "ambiguous", message)],
                })
            }
        }
    }
}
