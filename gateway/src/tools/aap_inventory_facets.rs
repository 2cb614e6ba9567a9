//! `aap_inventory_facets` (profile `dealergateway.aap-compat/0.1`): AAP's
//! `inventory.facets` skill as a compatibility adapter over
//! `dealeragent.inventory.search` (docs/compatibility.md).
//!
//! One DAP search with the mapped filters gives the facets over the whole
//! filtered set (the DAP tool applies its policy first, DAP-CORE-030/031);
//! the rooftop facet is one DAP search per rooftop the caller may read
//! among those asked for. Facets DAP does not count (price, mileage,
//! bodies, fuels, colors, ...) are absent, never estimated.

use serde::Serialize;

use super::aap_map::{AapFacets, FacetValue};
use super::args::{AapFacetsArgs, PageRequest, SearchArgs};
use super::output::ToolOutput;
use super::{ToolContext, ToolError, aap_map, inventory_search, policy};

pub const NAME: &str = "aap_inventory_facets";

/// The tool (see [`super::Tool`]).
pub struct AapInventoryFacets;

impl super::Tool for AapInventoryFacets {
    const NAME: &'static str = NAME;
    type Args = AapFacetsArgs;
    type Output = FacetsResponse;

    async fn call(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let (directory, organization_id) = aap_map::dealer(ctx, args.dealer_id.as_deref()).await?;
        let filters = args.filters.unwrap_or_default();
        let mut search: SearchArgs = super::args::parse(&aap_map::search_args(
            &directory,
            &ctx.principal,
            &organization_id,
            &filters,
        )?)?;
        // The facets count the whole filtered set whatever the page size:
        // one vehicle is the least a page may ask for.
        search.page = Some(PageRequest {
            cursor: None,
            limit: Some(1.into()),
        });
        let whole = inventory_search::InventorySearch::call(ctx, search.clone())
            .await?
            .into_value();
        let mut data = aap_map::facets(&whole);

        // Which rooftops the set spans: those asked for, else every rooftop
        // the caller may read (the DAP search's own default).
        let rooftop_ids: Vec<String> = match &search.rooftop_ids {
            Some(ids) => ids.clone(),
            None => policy::authorize_rooftops(&directory, &ctx.principal, &organization_id, None)?
                .1
                .into_iter()
                .map(|r| r.rooftop_id.clone())
                .collect(),
        };
        let names = aap_map::rooftop_names(&directory, &organization_id);
        let mut per_rooftop = Vec::with_capacity(rooftop_ids.len());
        for rooftop_id in rooftop_ids {
            let one = SearchArgs {
                rooftop_ids: Some(vec![rooftop_id.clone()]),
                ..search.clone()
            };
            let page = inventory_search::InventorySearch::call(ctx, one)
                .await?
                .into_value();
            let name = names.get(&rooftop_id).cloned().unwrap_or(rooftop_id);
            per_rooftop.push((FacetValue::Text(name), aap_map::total(&page)));
        }
        data.rooftops = aap_map::merged(per_rooftop);
        Ok(FacetsResponse {
            kind: FACETS_RESPONSE,
            data,
            message: MESSAGE,
        })
    }
}

/// AAP `inventory.facets.response` (`aapFacetsResponse`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FacetsResponse {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub data: AapFacets,
    pub message: &'static str,
}

impl ToolOutput for FacetsResponse {
    const OUTPUT: &'static str = "aap-inventory.schema.json#/$defs/aapFacetsResponse";
}

const FACETS_RESPONSE: &str = "inventory.facets.response";

/// What every facets response says (AAP `message`).
const MESSAGE: &str = "Compatibility view of dealeragent.inventory.search facets over in-stock units, not native DAP; facets this gateway does not count are absent.";

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::aap_map::{RangeFacet, TermBucket};
    use crate::tools::output::drift;

    /// `FacetsResponse` against `aapFacetsResponse`, with and without a
    /// year range, from DAP facets as a search returns them.
    #[test]
    fn facets_responses_match_their_definition() {
        let dap = json!({"facets": {
            "make": [{"value": "Honda", "count": 3}, {"value": "Ford", "count": 1}],
            "model": [{"value": "Civic", "count": 3}, {"value": "F-150", "count": 1}],
            "year": [{"value": 2024, "count": 1}, {"value": 2026, "count": 3}],
            "condition": [{"value": "new", "count": 3}, {"value": "used", "count": 1}],
            "vehicle_type": [{"value": "car", "count": 3}, {"value": "truck", "count": 1}],
            "availability": [{"value": "available", "count": 3}, {"value": "sold", "count": 1}]
        }});
        let mut data = aap_map::facets(&dap);
        assert_eq!(
            data.year_range,
            Some(RangeFacet {
                min: 2024,
                max: 2026
            })
        );
        data.rooftops = aap_map::merged([
            (FacetValue::Text("North".into()), 3),
            (FacetValue::Text("South".into()), 1),
            (FacetValue::Text("Empty".into()), 0),
        ]);
        assert_eq!(
            data.rooftops,
            [
                TermBucket {
                    value: FacetValue::Text("North".into()),
                    count: 3
                },
                TermBucket {
                    value: FacetValue::Text("South".into()),
                    count: 1
                }
            ]
        );
        let response = |data| FacetsResponse {
            kind: FACETS_RESPONSE,
            data,
            message: MESSAGE,
        };
        let empty = aap_map::facets(&json!({"facets": {}}));
        assert_eq!(empty.year_range, None);
        drift::check_output(&[response(data), response(empty)]);
    }

    /// The members keep the order they were sent in before this type:
    /// DAP's facets, the year range, then the rooftops.
    #[test]
    fn the_wire_order_is_kept() {
        let data = AapFacets {
            year_range: Some(RangeFacet { min: 1, max: 2 }),
            ..AapFacets::default()
        };
        let text = serde_json::to_string(&FacetsResponse {
            kind: FACETS_RESPONSE,
            data,
            message: MESSAGE,
        })
        .unwrap();
        assert!(text.starts_with(
            r#"{"type":"inventory.facets.response","data":{"makes":[],"models":[],"years":[],"conditions":[],"vehicle_types":[],"statuses":[],"year_range":{"min":1,"max":2},"rooftops":[]},"message":"#
        ));
    }
}
