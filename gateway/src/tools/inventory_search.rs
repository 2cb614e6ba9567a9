//! `dealeragent.inventory.search` (profile `dealeragent.inventory.read/0.1`).
//!
//! Policy first: the requested rooftops are intersected with what the
//! caller may read before any index is touched (DAP-CORE-030/031). Results
//! are discovery snapshots, not availability promises (DAP spec 8): every
//! vehicle keeps its rooftop, provenance and freshness, and the response's
//! freshness is never better than its stalest record.
//! A vehicle's availability check newer than its feed record (made by this
//! replica) overrides the feed's assertion in the `availability` filter,
//! facet and rendering (docs/availability.md, "Overlay").
//!
//! Pagination is keyset-based with sealed cursors bound to the query, the
//! caller, the rooftop set and the snapshot versions of the first page
//! (DAP-CORE-026..028). A pagination pins those snapshots: pages keep
//! coming from them even after a new import lands, until the cursor
//! expires (15 minutes after the first page).

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;
use serde::Serialize;
use serde_json::Value;

use super::{Produced, ToolContext, ToolError, budget, policy};
use crate::catalog::FieldError;
use crate::inventory::cursor::{self, CursorBinding, CursorPayload};
use crate::inventory::index::SnapshotIndex;
use crate::inventory::render::{self, Detail, FreshnessBasis, Mode, RenderContext};
use crate::inventory::search::{self, SearchQuery};

pub const NAME: &str = "dealeragent.inventory.search";

fn invalid_cursor() -> ToolError {
    ToolError::Invalid {
        message: cursor::INVALID_CURSOR_MESSAGE.to_owned(),
        field_errors: vec![FieldError::new(
            "/page/cursor",
            "cursor",
            cursor::INVALID_CURSOR_MESSAGE,
        )],
    }
}

/// The tool (see [`super::Tool`]).
pub struct InventorySearch;

impl super::Tool for InventorySearch {
    const NAME: &'static str = NAME;
    type Args = super::args::SearchArgs;
    type Output = Produced;

    async fn call(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        search(ctx, args, Some(budget::RESULT_BYTES)).await
    }
}

/// One page of the search `args`, ended before `page.limit` when its result
/// would pass `budget` bytes (structured content plus resource links;
/// `None` for in-process callers that assemble their own answer from the
/// pages, such as the AAP adapter). Every page holds at least one vehicle
/// when any follows, so a pagination always advances.
pub async fn search(
    ctx: &ToolContext,
    args: super::args::SearchArgs,
    budget: Option<usize>,
) -> Result<Produced, ToolError> {
    // Typed once (`args::SearchArgs`), then compiled with the cross-field
    // rules the schema cannot express (docs/inventory.md "Search rules").
    let query = SearchQuery::compile(&args).map_err(|e| ToolError::Invalid {
        message: e.message.to_string(),
        // `FieldError::new` writes the parser's root pointer `""` as `/`
        // (DAP 0.1 requires a leading `/`).
        field_errors: vec![FieldError::new(
            e.pointer.clone(),
            "semantic",
            e.message.to_string(),
        )],
    })?;
    let directory = ctx.directory().snapshot().await?;
    let requested = query.rooftop_ids.as_deref();
    let (org, rooftops) = policy::authorize_rooftops(
        &directory,
        &ctx.principal,
        &query.organization_id,
        requested,
    )?;
    let rooftop_ids: Vec<String> = rooftops.iter().map(|r| r.rooftop_id.clone()).collect();
    let view = ctx.inventory().view(&directory).await?;
    let binding = CursorBinding::new(
        &query.fingerprint,
        &ctx.principal.grant_fingerprint(),
        &rooftop_ids,
    );
    let now = Utc::now();

    // Which snapshots to read, and where to start.
    let (indexes, versions, after, issued_at): (
        Vec<Arc<SnapshotIndex>>,
        BTreeMap<String, i64>,
        _,
        _,
    ) = match query.cursor.as_deref() {
        None => {
            let indexes: Vec<Arc<SnapshotIndex>> = rooftop_ids
                .iter()
                .filter_map(|id| view.rooftop(id).map(|r| r.latest.clone()))
                .collect();
            let versions = indexes
                .iter()
                .map(|i| (i.rooftop_id().to_owned(), i.version()))
                .collect();
            // The cursor stores its issue time in whole seconds; the first
            // page is searched at that same instant so every page of a
            // pagination judges inventory ages identically.
            let issued = chrono::DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now);
            (indexes, versions, None, issued)
        }
        Some(token) => {
            let payload = cursor::open(ctx.cursor_key(), token, &binding, now).map_err(|e| {
                tracing::info!(trace.id = %ctx.trace_id, cursor.error = ?e, "cursor refused");
                invalid_cursor()
            })?;
            let versions = match payload.snapshot_versions(&binding) {
                Some(v) => v,
                None => {
                    // Too many rooftops to list versions: the cursor holds a
                    // digest, so it continues only on unchanged snapshots.
                    let current: BTreeMap<String, i64> = rooftop_ids
                        .iter()
                        .filter_map(|id| view.rooftop(id).map(|r| (id.clone(), r.latest.version())))
                        .collect();
                    if !payload.snapshots_unchanged(&binding, &current) {
                        return Err(invalid_cursor());
                    }
                    current
                }
            };
            let mut indexes = Vec::with_capacity(versions.len());
            for (rooftop_id, version) in &versions {
                let index = ctx
                    .inventory()
                    .index_at(
                        &view,
                        &directory,
                        &org.organization_id,
                        rooftop_id,
                        *version,
                    )
                    .await?
                    .ok_or_else(invalid_cursor)?;
                indexes.push(index);
            }
            let issued_at = payload.issued_at();
            (indexes, versions, Some(payload), issued_at)
        }
    };

    // Age filters are evaluated at the first page's instant on every page,
    // so a pagination sees one consistent result set.
    // Newer availability checks made by this replica override the feed's
    // assertion, in the filter and facets as on the page (docs/availability.md).
    let overlay = ctx.availability().search_overlay(&rooftop_ids, now);
    let page = search::search_with_overlay(
        &indexes,
        &query,
        after.as_ref().map(|p: &CursorPayload| &p.key),
        issued_at,
        &overlay,
    );

    // Render once, serve many (docs/benchmarks.md "After render-once"):
    // each vehicle's JSON was rendered and validated against the vehicle
    // schema when its snapshot was indexed; the response appends those bytes plus the few members
    // that depend on the clock. A vehicle with a newer availability check
    // of this replica, or whose pieces failed the schema, is built as a
    // tree and validated against the vehicle schema here.
    let mut body = PageBody::with_capacity(page.vehicles.len(), query.detail);
    let now_text = render::json_string(&render::timestamp(now));
    let searched: Vec<FreshnessBasis> = indexes
        .iter()
        .map(|i| FreshnessBasis::of_snapshot(i))
        .collect();
    // The response's freshness covers the whole result set, not just this
    // page (DAP 6.4: never better than what the cursor pages through): the
    // oldest match of every snapshot joins the page's own vehicles.
    let oldest: Vec<FreshnessBasis> = page
        .oldest_match_us
        .iter()
        .filter_map(|(position, oldest_us)| {
            Some(FreshnessBasis {
                observed_at: chrono::DateTime::from_timestamp_micros(*oldest_us)?,
                sla_seconds: indexes.get(*position)?.inventory_sla_seconds(),
                withdrawn: false,
            })
        })
        .collect();
    let provenance = render::search_provenance(&indexes, now);
    // The facets are not part of the checked envelope tree (as a `Value`
    // they were about a third of a search; docs/benchmarks.md
    // "Instruction counts"): they are
    // written straight from their type (`facets_json`, as serde_json
    // writes them), whose shape is the schema's
    // `facetValue` by construction (an integer or string value, an
    // unsigned count; the values are makes and models of vehicles
    // validated at indexing), as `facets_follow_the_schema_by_type`
    // checks.
    let facets = crate::inventory::search::facets_json(&page.facets);
    // What the page may take besides its vehicles (the envelope with the
    // largest cursor and notes, the facets): the vehicles fill the rest of
    // the budget, and `finish` below has the final word.
    let reserve = facets.len()
        + serde_json::to_string(&provenance).map_or(0, |p| p.len())
        + ENVELOPE_RESERVE
        + ctx.trace_id.len();
    for (i, (index, row)) in page.vehicles.iter().enumerate() {
        if let Some(budget) = budget
            && i > 0
            && reserve + body.json.len() + body.links.len() >= budget
        {
            break;
        }
        let feed_observed_at =
            chrono::DateTime::from_timestamp_micros(index.rows[*row].observed_us)
                .unwrap_or_default();
        let vehicle_id = index.vehicle_id(*row);
        let observation = ctx.availability().overlay(index.rooftop_id(), vehicle_id);
        let overlaid = observation
            .as_ref()
            .is_some_and(|o| o.observed_at > feed_observed_at);
        let pieces = if overlaid || !index.piece_checked(*row) {
            None
        } else {
            index.pieces_in(*row, query.detail)
        };
        let vehicle = match pieces {
            Some(pieces) => VehicleText::Pieces(pieces),
            None => {
                let rctx = RenderContext {
                    now,
                    inventory_sla_seconds: index.inventory_sla_seconds(),
                    withdrawn: false,
                };
                let mut vehicle = render::vehicle(&index.record(*row), &rctx);
                crate::availability::apply_overlay(
                    &mut vehicle,
                    observation.as_ref(),
                    feed_observed_at,
                    now,
                );
                super::check_part(
                    ctx,
                    super::get_vehicle::NAME,
                    "a vehicle of a search page",
                    &vehicle,
                )?;
                VehicleText::Tree(render::with_detail(vehicle, query.detail))
            }
        };
        body.push(
            &vehicle,
            (now, &now_text),
            (&org.organization_id, index.rooftop_id(), vehicle_id),
            FreshnessBasis {
                observed_at: feed_observed_at,
                sla_seconds: index.inventory_sla_seconds(),
                withdrawn: false,
            },
        )?;
        if let Some(budget) = budget
            && i > 0
            && reserve + body.json.len() + body.links.len() > budget
        {
            body.pop();
            break;
        }
    }

    // Ends the page after its first `kept` vehicles: the cursor continues
    // after the last one shown (a page the budget ends early is never a
    // silent loss: it says so in `provenance.transformations`, and the
    // cursor yields the rest).
    let finish = |kept: usize, body: &PageBody| -> Result<(String, usize), ToolError> {
        let next = if kept < page.vehicles.len() {
            page.key_of(kept - 1)
        } else {
            page.next.clone()
        };
        let mut page_info = PageInfo {
            has_more: next.is_some(),
            next_cursor: None,
        };
        if let Some(key) = next {
            let payload = match &after {
                // Continuations keep the first page's issue time and expiry.
                Some(first) => CursorPayload::with_lifetime(
                    &binding,
                    &versions,
                    key,
                    first.issued_at(),
                    first.expires_at - first.issued_at,
                ),
                None => CursorPayload::new(&binding, &versions, key, now),
            };
            // The cursor's snapshots stay in memory while it can be used
            // (docs/inventory.md "Cursors").
            ctx.inventory().pin(&indexes, payload.expires_at);
            page_info.next_cursor = Some(cursor::seal(ctx.cursor_key(), &payload));
        }
        let mut provenance = provenance.clone();
        let notes = notes(query.detail, kept, page.vehicles.len(), query.limit, budget);
        if let Some(Value::Array(list)) = provenance.get_mut("transformations") {
            list.extend(notes.into_iter().map(Value::String));
        }
        let mut bases = body.bases[..kept].to_vec();
        bases.extend_from_slice(&oldest);
        // The envelope is small and built per request: it is validated
        // here, against the tool's output schema with an empty vehicle
        // list (each vehicle was validated where it was produced, above
        // or at indexing).
        let envelope = SearchResponse {
            vehicles: Vec::new(),
            facets: None,
            page: page_info,
            provenance,
            freshness: render::aggregate_freshness(&bases, &searched, now),
            trace_id: ctx.trace_id.clone(),
        };
        let mut envelope = envelope.into_tree()?;
        super::check_part(ctx, NAME, "search envelope", &envelope)?;
        if let Value::Object(members) = &mut envelope {
            members.shift_remove("vehicles");
        }
        let rest = serde_json::to_string(&envelope).map_err(ToolError::internal)?;
        let vehicles = &body.json[..body.ends.get(kept.wrapping_sub(1)).copied().unwrap_or(0)];
        let mut json = String::with_capacity(vehicles.len() + facets.len() + rest.len() + 32);
        json.push_str("{\"vehicles\":[");
        json.push_str(vehicles);
        // `"facets":{…},"page":…` continues the object after the vehicle list.
        json.push_str("],\"facets\":");
        json.push_str(&facets);
        json.push(',');
        json.push_str(rest.strip_prefix('{').unwrap_or(&rest));
        let links = body
            .link_ends
            .get(kept.wrapping_sub(1))
            .copied()
            .unwrap_or(0);
        Ok((json, links))
    };
    let mut kept = body.ends.len();
    let (json, links) = loop {
        let (json, links) = finish(kept, &body)?;
        match budget {
            Some(budget) if kept > 1 && json.len() + links > budget => kept -= 1,
            _ => break (json, links),
        }
    };
    body.resource_ids.truncate(kept);
    body.links.truncate(links);
    Ok(Produced::Assembled {
        json: super::JsonText::trusted(json),
        resource_ids: body.resource_ids,
        links: body.links,
    })
}

/// `dealeragent.inventory.search`: `searchResponse`, as the envelope of a
/// page. The page is assembled from pieces (render once, serve many;
/// docs/benchmarks.md "Where output is validated"): this envelope is built
/// and checked per request with no vehicles and no facets, and the page's
/// pre-rendered vehicles and its facets (serialized from their own type,
/// `facets_follow_the_schema_by_type`) are then written into its
/// serialization in the places these members hold. `provenance` and
/// `freshness` are the trees `inventory::render` builds for a result set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResponse {
    /// Always empty here: the page's vehicles are written in afterwards.
    pub vehicles: Vec<Value>,
    /// Always `None` here: the facets are written in afterwards.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facets: Option<Value>,
    pub page: PageInfo,
    pub provenance: Value,
    pub freshness: Value,
    pub trace_id: String,
}

impl super::output::ToolOutput for SearchResponse {
    const OUTPUT: &'static str = "vehicle.schema.json#/$defs/searchResponse";
}

impl SearchResponse {
    /// The envelope as the tree the per-request check reads, with its
    /// trees moved in rather than copied through the serializer (that copy
    /// cost a search of 20 about 5% of its instructions; docs/benchmarks.md
    /// "Instruction counts"). The same members in the same order as its
    /// `Serialize` (`into_tree_is_its_serialization` holds them equal).
    fn into_tree(self) -> Result<Value, ToolError> {
        let mut out = serde_json::Map::with_capacity(6);
        out.insert("vehicles".into(), Value::Array(self.vehicles));
        if let Some(facets) = self.facets {
            out.insert("facets".into(), facets);
        }
        out.insert("page".into(), super::output::tree(&self.page)?);
        out.insert("provenance".into(), self.provenance);
        out.insert("freshness".into(), self.freshness);
        out.insert("trace_id".into(), Value::String(self.trace_id));
        Ok(Value::Object(out))
    }
}

/// DAP `pageInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PageInfo {
    pub has_more: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Room for the envelope members whose size depends on where the page
/// ends: the cursor (at most [`cursor::MAX_CURSOR_CHARS`], a few hundred in
/// practice: the reserve covers a typical one and the page is re-checked
/// when it is assembled), the freshness, the notes, keys and punctuation.
const ENVELOPE_RESERVE: usize = 1_200;

/// The sentences `provenance.transformations` of a page gains (each at
/// most 160 characters, DAP's bound): the concise form's omissions, and a
/// page the budget ended before `limit` (docs/inventory.md "Detail and
/// the result budget").
fn notes(
    detail: Detail,
    kept: usize,
    found: usize,
    limit: usize,
    budget: Option<usize>,
) -> Vec<String> {
    let mut out = Vec::new();
    if detail == Detail::Concise {
        out.push(CONCISE_NOTE.to_owned());
    }
    if kept < found {
        out.push(format!(
            "page ended after {kept} of the {limit} vehicles asked for, to stay within the {}-byte result budget; page.next_cursor continues after it",
            budget.unwrap_or(budget::RESULT_BYTES)
        ));
    }
    out
}

/// What a concise vehicle of a page leaves out, and where it is.
pub const CONCISE_NOTE: &str = "concise vehicles: body_style, interior_color, powertrain, features, media, window_sticker_url, used_vehicle left out; get_vehicle or detail full has them";

/// One vehicle of a page, as pre-rendered pieces or as a checked tree.
enum VehicleText<'a> {
    Pieces(crate::inventory::index::RowPieces<'a>),
    Tree(Value),
}

/// The vehicles of a page as they are written, with where each one ends
/// (so the page can end sooner) and its resource link.
struct PageBody {
    detail: Detail,
    json: String,
    ends: Vec<usize>,
    links: String,
    link_ends: Vec<usize>,
    bases: Vec<FreshnessBasis>,
    resource_ids: Vec<String>,
}

impl PageBody {
    fn with_capacity(n: usize, detail: Detail) -> PageBody {
        let per_vehicle = match detail {
            Detail::Concise => 1536,
            Detail::Full => 3072,
        };
        PageBody {
            detail,
            json: String::with_capacity(n * per_vehicle),
            ends: Vec::with_capacity(n),
            links: String::with_capacity(n * 160),
            link_ends: Vec::with_capacity(n),
            bases: Vec::with_capacity(n),
            resource_ids: Vec::with_capacity(n),
        }
    }

    fn push(
        &mut self,
        vehicle: &VehicleText<'_>,
        (now, now_text): (chrono::DateTime<Utc>, &str),
        (organization_id, rooftop_id, vehicle_id): (&str, &str, &str),
        basis: FreshnessBasis,
    ) -> Result<(), ToolError> {
        if !self.ends.is_empty() {
            self.json.push(',');
        }
        match vehicle {
            VehicleText::Pieces(pieces) => {
                pieces
                    .get()
                    .write_detail(&mut self.json, now, now_text, Mode::Live, self.detail);
            }
            VehicleText::Tree(tree) => self
                .json
                .push_str(&serde_json::to_string(tree).map_err(ToolError::internal)?),
        }
        self.ends.push(self.json.len());
        budget::push_vehicle_link(&mut self.links, organization_id, rooftop_id, vehicle_id);
        self.link_ends.push(self.links.len());
        self.bases.push(basis);
        self.resource_ids.push(vehicle_id.to_owned());
        Ok(())
    }

    /// Take the last vehicle back off.
    fn pop(&mut self) {
        self.ends.pop();
        self.link_ends.pop();
        self.bases.pop();
        self.resource_ids.pop();
        self.json.truncate(self.ends.last().copied().unwrap_or(0));
        self.links
            .truncate(self.link_ends.last().copied().unwrap_or(0));
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{PageInfo, SearchResponse};
    use crate::tools::output::drift;

    /// The envelope against `searchResponse` and `pageInfo`: the last page
    /// and one with a cursor.
    #[test]
    fn search_envelopes_match_their_definition() {
        let pages = [
            PageInfo {
                has_more: false,
                next_cursor: None,
            },
            PageInfo {
                has_more: true,
                next_cursor: Some("c1.abc".into()),
            },
        ];
        drift::check("common.schema.json#/$defs/pageInfo", &pages);
        let envelopes: Vec<SearchResponse> = pages
            .into_iter()
            .map(|page| SearchResponse {
                vehicles: Vec::new(),
                facets: None,
                page,
                provenance: serde_json::to_value(drift::provenance(true)).unwrap(),
                freshness: serde_json::to_value(drift::freshness(true)).unwrap(),
                trace_id: "0123456789abcdef0123456789abcdef".into(),
            })
            .collect();
        for envelope in &envelopes {
            let mut with_facets = envelope.clone();
            with_facets.facets = Some(serde_json::json!({}));
            for e in [envelope.clone(), with_facets] {
                let serialized = serde_json::to_string(&e).unwrap();
                let tree = serde_json::to_string(&e.into_tree().unwrap()).unwrap();
                assert_eq!(tree, serialized, "into_tree is its serialization");
            }
        }
        drift::check_output(&envelopes);
    }

    use crate::inventory::search::{FacetKey, FacetValue};

    /// Facets skip the per-request schema check because their type is the
    /// schema's shape: every value the type can hold (strings with quotes,
    /// non-ASCII and control characters; years; zero and the largest count;
    /// empty facets) validates against `searchResponse/facets`.
    #[test]
    fn facets_follow_the_schema_by_type() {
        let catalog = crate::catalog::Catalog::load().expect("catalog");
        let schema = crate::catalog::bundle_reference(
            &catalog.schema_documents,
            "vehicle.schema.json#/$defs/facetValue",
        )
        .expect("the facet value definition");
        let validator = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&schema)
            .expect("compiles");
        let mut facets: BTreeMap<&'static str, Vec<FacetValue>> = BTreeMap::new();
        facets.insert("availability", Vec::new());
        facets.insert(
            "make",
            [
                "Ford",
                "Citro\u{eb}n \"Ltd\"",
                "back\\slash",
                "tab\there",
                "",
            ]
            .iter()
            .map(|s| FacetValue {
                value: FacetKey::Str((*s).to_owned()),
                count: 1,
            })
            .collect(),
        );
        facets.insert(
            "year",
            [i64::MIN, 0, 1886, 2027, i64::MAX]
                .iter()
                .zip([0, 1, u64::MAX, 7, 3])
                .map(|(y, count)| FacetValue {
                    value: FacetKey::Int(*y),
                    count,
                })
                .collect(),
        );
        let text = serde_json::to_string(&facets).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        // `facets` is an object of arrays of `facetValue` (the schema).
        let errors: Vec<String> = value
            .as_object()
            .expect("an object")
            .values()
            .flat_map(|bucket| bucket.as_array().expect("an array"))
            .flat_map(|item| {
                validator
                    .iter_errors(item)
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        assert!(errors.is_empty(), "{errors:?}\n{text}");
        assert_eq!(value, serde_json::to_value(&facets).unwrap());
    }
}
