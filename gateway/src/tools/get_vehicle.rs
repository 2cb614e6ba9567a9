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
use super::{Produced, ToolContext, ToolError, budget};
use crate::inventory::render::{self, Detail, FULL_ONLY, Mode, RenderContext};

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

/// The extension member that says what a concise vehicle leaves out
/// (a vehicle's `extensions` bag admits it, DAP 13).
pub const DETAIL_EXTENSION: &str = "dealergateway.detail";

/// The note of a vehicle answered in its concise form: asked for
/// (`full_bytes` is `None`), or because the full record of `full_bytes`
/// would pass the result budget.
fn concise_note(
    organization_id: &str,
    rooftop_id: &str,
    vehicle_id: &str,
    full_bytes: Option<usize>,
) -> Value {
    let uri = format!(
        "dealeragent://organization/{organization_id}/rooftop/{rooftop_id}/vehicle/{vehicle_id}"
    );
    let mut left_out: Vec<String> = FULL_ONLY.iter().map(|m| (*m).to_owned()).collect();
    let how = match full_bytes {
        None => format!("call {NAME} with detail \"full\", or read the resource {uri}"),
        Some(bytes) => {
            left_out.push(format!(
                "the full record is {bytes} bytes, more than the {}-byte result budget",
                budget::RESULT_BYTES
            ));
            format!(
                "read the resource {uri} (resources/read), which is not held to the result budget"
            )
        }
    };
    budget::omitted(&left_out, &how)
}

/// `vehicle` (a DAP vehicle object, closing brace included) with the
/// concise form's note in its `extensions`: the pre-rendered vehicle has
/// no extensions of its own, so the member is appended.
fn with_note(mut vehicle: String, note: &Value) -> String {
    if vehicle.ends_with('}') {
        vehicle.pop();
        vehicle.push_str(",\"extensions\":{");
        vehicle.push_str(&render::json_string(DETAIL_EXTENSION));
        vehicle.push(':');
        vehicle.push_str(&note.to_string());
        vehicle.push_str("}}");
    }
    vehicle
}

/// The common case is served from the vehicle's pre-rendered pieces,
/// validated when its snapshot was indexed (docs/benchmarks.md "Where output is validated"). A withdrawn
/// vehicle, one with a newer availability check, and one whose pieces
/// failed the schema are built as trees and validated by the pipeline.
///
/// `detail` defaults to `full` here: one vehicle fits the result budget
/// (about 2.5 KB on the demo); a record that would not (hundreds of
/// photos) is answered in its concise form, saying so
/// (docs/inventory.md "Detail and the result budget").
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
        let detail = args.detail.unwrap_or(Detail::Full);
        let vehicle_id = found.index.vehicle_id(found.row).to_owned();
        let (organization_id, rooftop_id) = (
            tenant.organization().organization_id.clone(),
            tenant.rooftop().rooftop_id.clone(),
        );
        let note =
            |full_bytes| concise_note(&organization_id, &rooftop_id, &vehicle_id, full_bytes);
        // A tree (withdrawn, overlaid, or whose pieces failed) in the form
        // asked for; the full form when it fits the budget.
        let tree = |vehicle: Value| -> Value {
            let full_bytes = (detail == Detail::Full)
                .then(|| serde_json::to_string(&vehicle).map_or(0, |t| t.len()))
                .filter(|bytes| *bytes > budget::RESULT_BYTES);
            if detail == Detail::Full && full_bytes.is_none() {
                return vehicle;
            }
            let mut concise = render::with_detail(vehicle, Detail::Concise);
            if let Value::Object(members) = &mut concise {
                let extensions = members
                    .entry("extensions")
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
                if let Value::Object(bag) = extensions {
                    bag.insert(DETAIL_EXTENSION.into(), note(full_bytes));
                }
            }
            concise
        };
        if found.withdrawn {
            return Ok(Produced::Tree(tree(render_found(&found))));
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
            return Ok(Produced::Tree(tree(vehicle)));
        };
        let now_text = render::json_string(&render::timestamp(now));
        let mut json = String::with_capacity(4096);
        pieces
            .get()
            .write_detail(&mut json, now, &now_text, Mode::Live, detail);
        let full_bytes =
            (detail == Detail::Full && json.len() > budget::RESULT_BYTES).then_some(json.len());
        let mut links = String::new();
        if detail == Detail::Concise || full_bytes.is_some() {
            // The concise form is a prefix of the same pieces plus the same
            // availability, provenance and freshness (validated with them);
            // the note is this gateway's own extension member.
            json.clear();
            pieces
                .get()
                .write_detail(&mut json, now, &now_text, Mode::Live, Detail::Concise);
            json = with_note(json, &note(full_bytes));
            budget::push_vehicle_link(&mut links, &organization_id, &rooftop_id, &vehicle_id);
        }
        Ok(Produced::Assembled {
            json: super::JsonText::trusted(json),
            resource_ids: vec![vehicle_id],
            links,
        })
    }
}
