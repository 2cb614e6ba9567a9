//! `aap_inventory_search` (profile `dealergateway.aap-compat/0.1`): AAP's
//! `inventory.search` skill as a compatibility adapter over
//! `dealeragent.inventory.search` (docs/compatibility.md).
//!
//! The AAP filters become DAP search arguments (`aap_map::search_args`),
//! and the DAP tool runs them with its own policy (the requested rooftops
//! are intersected with what the caller may read before any index is
//! touched, DAP-CORE-030/031). AAP pages by skip/limit with a total; DAP by
//! sealed cursors. The adapter follows the cursors of ONE DAP pagination
//! (bound to this query and caller, pinned to the first page's snapshots,
//! DAP-CORE-026..028) until it holds `skip + limit` vehicles, so every AAP
//! page is cut from one consistent result set; `total` is the DAP result
//! set's size (its facet counts).

use serde::Serialize;
use serde_json::json;

use super::args::AapSearchArgs;
use super::output::{AapVehicle, ToolOutput};
use super::{Produced, ToolContext, ToolError, aap_map, budget, inventory_search};

pub const NAME: &str = "aap_inventory_search";

/// DAP's largest page (`pageRequest.limit` maximum).
const DAP_PAGE: usize = 100;

/// The tool (see [`super::Tool`]).
pub struct AapInventorySearch;

impl super::Tool for AapInventorySearch {
    const NAME: &'static str = NAME;
    type Args = AapSearchArgs;
    type Output = Produced;

    async fn call(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let (directory, organization_id) = aap_map::dealer(ctx, args.dealer_id.as_deref()).await?;
        let filters = args.filters.unwrap_or_default();
        let mut dap_args =
            aap_map::search_args(&directory, &ctx.principal, &organization_id, &filters)?;
        if let Some(sort) = &args.sort {
            dap_args["sort"] = aap_map::sort(sort);
        }
        let pagination = args.pagination.unwrap_or_default();
        let skip = pagination.skip.unwrap_or(0);
        let limit = pagination
            .limit
            .unwrap_or(aap_map::DEFAULT_LIMIT)
            .min(aap_map::MAX_LIMIT);
        let wanted = skip + limit;
        let names = aap_map::rooftop_names(&directory, &organization_id);

        let mut collected: Vec<AapVehicle> = Vec::with_capacity(limit);
        let mut seen = 0usize;
        let mut total = None;
        let mut cursor: Option<String> = None;
        loop {
            let mut page_args = dap_args.clone();
            page_args["page"] = match &cursor {
                None => json!({"limit": wanted.clamp(1, DAP_PAGE)}),
                Some(c) => json!({"limit": (wanted - seen).clamp(1, DAP_PAGE), "cursor": c}),
            };
            // Every member the AAP vehicle maps from, in pages the adapter
            // assembles itself (its own answer is held to the budget below).
            page_args["detail"] = json!("full");
            let page = inventory_search::search(ctx, super::args::parse(&page_args)?, None)
                .await?
                .into_value();
            if total.is_none() {
                total = Some(aap_map::total(&page));
            }
            for dap in page["vehicles"].as_array().into_iter().flatten() {
                seen += 1;
                if seen <= skip {
                    continue;
                }
                if let Some(vehicle) = aap_map::vehicle(dap, &names)? {
                    collected.push(vehicle);
                }
            }
            cursor = page["page"]["next_cursor"].as_str().map(str::to_owned);
            if seen >= wanted || cursor.is_none() {
                break;
            }
        }
        // The result budget (tools::budget): a page whose vehicles would
        // pass it keeps the first that fit (at least one), and `data.limit`
        // is that effective size, so a client paging by `skip + limit` skips
        // nothing; the message says so.
        let mut kept = collected.len();
        let vehicles_bytes: Vec<usize> = collected
            .iter()
            .map(|v| serde_json::to_string(v).map_or(0, |t| t.len() + 1))
            .collect();
        while kept > 1
            && AAP_ENVELOPE_BYTES + vehicles_bytes[..kept].iter().sum::<usize>()
                > budget::RESULT_BYTES
        {
            kept -= 1;
        }
        let mut message = MESSAGE.to_owned();
        let effective_limit = if kept < collected.len() {
            collected.truncate(kept);
            message.push_str(&format!(
                " This page holds {kept} of the {limit} vehicles asked for, to stay within the {}-byte result budget; data.limit is that effective size: ask again with pagination.skip {} for the next.",
                budget::RESULT_BYTES,
                skip + kept
            ));
            kept
        } else {
            limit
        };
        let resource_ids: Vec<String> = collected.iter().map(|v| v.vehicle_id.clone()).collect();
        let response = super::output::tree(&SearchResponse {
            kind: SEARCH_RESPONSE,
            data: SearchData {
                total: total.unwrap_or(0),
                skip,
                limit: effective_limit,
                vehicles: collected,
            },
            message,
        })?;
        // Checked here, against the AAP response schema, because the result is
        // returned with its resource ids for the audit record.
        super::check_part(ctx, NAME, "AAP search response", &response)?;
        Ok(Produced::Assembled {
            json: super::JsonText::of(&response),
            resource_ids,
            links: String::new(),
        })
    }
}

/// AAP `inventory.search.response` (`aapSearchResponse`). Its vehicles
/// are the typed `aapVehicle`s `aap_map::vehicle` maps from DAP vehicles
/// (`output::AapVehicle`, drift-tested on the demo in `aap_map`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResponse {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub data: SearchData,
    pub message: String,
}

impl ToolOutput for SearchResponse {
    const OUTPUT: &'static str = "aap-inventory.schema.json#/$defs/aapSearchResponse";
}

/// `aapSearchResponse.data`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchData {
    pub total: u64,
    pub skip: usize,
    pub limit: usize,
    pub vehicles: Vec<AapVehicle>,
}

const SEARCH_RESPONSE: &str = "inventory.search.response";

/// What every search response says (AAP `message`).
const MESSAGE: &str = "Compatibility view of dealeragent.inventory.search, not native DAP. Statuses are the dealer's listing, not verified: call dealeragent.inventory.verify_availability before presenting a unit as available. No vehicle carries an AAP price; dealergateway.advertised_price is the advertised price and dealeragent.pricing.get_disclosure its full disclosure.";

/// The response around its vehicles: type, totals, the message with a
/// budget sentence, keys and punctuation.
const AAP_ENVELOPE_BYTES: usize = MESSAGE.len() + 512;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::output::drift;

    /// `SearchResponse` against `aapSearchResponse` (the vehicles are
    /// checked with each response the tool sends).
    #[test]
    fn search_responses_match_their_definition() {
        let response = |total, skip, limit| SearchResponse {
            kind: SEARCH_RESPONSE,
            data: SearchData {
                total,
                skip,
                limit,
                vehicles: Vec::new(),
            },
            message: MESSAGE.to_owned(),
        };
        drift::check_output(&[response(0, 0, 10), response(500, 40, 3)]);
    }
}
