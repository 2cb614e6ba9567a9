//! `aap_inventory_facets` (profile `dealergateway.aap-compat/0.1`): AAP's
//! `inventory.facets` skill as a compatibility adapter over
//! `dealeragent.inventory.search` (docs/compatibility.md).
//!
//! One DAP search with the mapped filters gives the facets over the whole
//! filtered set (the DAP tool applies its policy first, DAP-CORE-030/031);
//! the rooftop facet is one DAP search per rooftop the caller may read
//! among those asked for. Facets DAP does not count (price, mileage,
//! bodies, fuels, colors, ...) are absent, never estimated.

use serde_json::{Value, json};

use super::args::AapFacetsArgs;
use super::{ToolContext, ToolError, aap_map, inventory_search, policy};

pub const NAME: &str = "aap_inventory_facets";

/// The tool (see [`super::Tool`]).
pub struct AapInventoryFacets;

impl super::Tool for AapInventoryFacets {
    const NAME: &'static str = NAME;
    type Args = AapFacetsArgs;
    type Output = Value;

    async fn call(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let (directory, organization_id) = aap_map::dealer(ctx, args.dealer_id.as_deref()).await?;
        let filters = args.filters.unwrap_or_default();
        let mut dap_args =
            aap_map::search_args(&directory, &ctx.principal, &organization_id, &filters)?;
        dap_args["page"] = json!({"limit": 1});
        let whole = inventory_search::InventorySearch::call(ctx, super::args::parse(&dap_args)?)
            .await?
            .into_value();
        let mut data = aap_map::facets(&whole);

        // Which rooftops the set spans: those asked for, else every rooftop
        // the caller may read (the DAP search's own default).
        let rooftop_ids: Vec<String> = match dap_args.get("rooftop_ids").and_then(Value::as_array) {
            Some(ids) => ids
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            None => policy::authorize_rooftops(&directory, &ctx.principal, &organization_id, None)?
                .1
                .into_iter()
                .map(|r| r.rooftop_id.clone())
                .collect(),
        };
        let names = aap_map::rooftop_names(&directory, &organization_id);
        let mut per_rooftop = Vec::with_capacity(rooftop_ids.len());
        for rooftop_id in rooftop_ids {
            let mut one = dap_args.clone();
            one["rooftop_ids"] = json!([rooftop_id]);
            let page = inventory_search::InventorySearch::call(ctx, super::args::parse(&one)?)
                .await?
                .into_value();
            let name = names.get(&rooftop_id).cloned().unwrap_or(rooftop_id);
            per_rooftop.push(json!({"value": name, "count": aap_map::total(&page)}));
        }
        data.insert(
            "rooftops".into(),
            aap_map::term_facet(&Value::Array(per_rooftop), |v| Some(v.clone())),
        );
        Ok(json!({
            "type": "inventory.facets.response",
            "data": data,
            "message": "Compatibility view of dealeragent.inventory.search facets over in-stock units, not native DAP; facets this gateway does not count are absent.",
        }))
    }
}
