//! The Auto Agent Protocol (AAP) compatibility adapter: what the four AAP
//! read tools share (every field's class is in docs/compatibility.md).
//!
//! The AAP tools are adapters, never a second implementation: each one
//! calls the DAP tool's own `call` (so tenancy is decided before any lookup,
//! DAP-CORE-029..031, and the pipeline in [`super::invoke`] applies the
//! scope, the rate limits and the audit to the AAP call itself) and maps the
//! DAP result here. Nothing is invented (DAP section 15): AAP's `price` is an
//! out-the-door total this gateway cannot state, so it is never written;
//! `list_price` is the advertised price only when that price excludes the
//! required dealer charges and is in whole US dollars; every AAP vehicle
//! keeps its DAP availability, advertised price, provenance and freshness
//! under `dealergateway`, so a compatibility answer drops none of them.
//!
//! AAP lists only in-stock units (`available`, `intransit`, `pending`):
//! sold, unavailable, withdrawn and unknown-status vehicles are never
//! returned to AAP clients, and one asked for by identifier is not found.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value, json};

use super::output::{AapVehicle, AapVehicleEvidence, Odometer};
use super::{ToolContext, ToolError};
use crate::auth::Principal;
use crate::catalog::FieldError;
use crate::dap::disclosure::AdvertisedPrice;
use crate::directory::DirectorySnapshot;

/// The catalog profile of the AAP tools.
pub const PROFILE: &str = "dealergateway.aap-compat/0.1";

/// The name of `aap_inventory_vehicle`, whose refusals read differently;
/// defined here (that module takes it from here) so the mapping below the
/// tools imports none of them.
pub const VEHICLE_TOOL: &str = "aap_inventory_vehicle";
/// AAP's ProtoJSON type tag of `aap.error` (AAP error.schema.json `@type`).
pub const AAP_ERROR_TYPE: &str = "https://autoagentprotocol.org/extensions/aap/error";
/// AAP's tool name of a skill this read-only gateway does not serve.
pub const LEAD_SUBMIT: &str = "aap_lead_submit";
/// Page size when an AAP search gives no `pagination.limit` (AAP: dealer
/// defined, at most 50 recommended): ten AAP vehicles (about 2 KB each on
/// the demo) fit the result budget (`tools::budget`; docs/benchmarks.md
/// "Result sizes and the token budget").
pub const DEFAULT_LIMIT: usize = 10;
/// The largest AAP page served: DAP's page limit (AAP recommends a cap of
/// 100; the effective limit is echoed in `data.limit`).
pub const MAX_LIMIT: usize = 100;
/// DAP statuses of in-stock units, the only ones AAP lists.
pub const IN_STOCK: [&str; 4] = ["available", "in_transit", "on_hold", "pending_sale"];
/// Millimetres per statute mile (exact) and per kilometre.
const MM_PER_MILE: u128 = 1_609_344;
const MM_PER_KM: u128 = 1_000_000;

/// AAP's filter block as this gateway applies it (aap-common.schema.json
/// `aapFilters`; any other AAP filter fails the input schema, so it is
/// refused, never silently ignored).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filters {
    pub make: Option<Vec<String>>,
    pub model: Option<Vec<String>>,
    pub condition: Option<Vec<String>>,
    pub vehicle_type: Option<Vec<String>>,
    pub status: Option<Vec<String>>,
    pub rooftops: Option<Vec<String>>,
    pub year_min: Option<i64>,
    pub year_max: Option<i64>,
    pub mileage_max: Option<u64>,
    pub vin: Option<String>,
    pub stock: Option<String>,
    pub query: Option<String>,
}

/// AAP `pagination`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pagination {
    pub skip: Option<usize>,
    pub limit: Option<usize>,
}

/// AAP `sort` (only the fields this gateway can order by exactly).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sort {
    pub field: String,
    pub order: String,
}

/// AAP `privacy`: a hint; these reads take no identity either way.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Privacy {
    pub anonymous: Option<bool>,
}

// ---------------------------------------------------------------------------
// The dealer
// ---------------------------------------------------------------------------

/// The dealer an AAP call is about, and the directory snapshot it was
/// decided on. AAP's requests name no dealer: an AAP endpoint serves one.
/// Through an AAP endpoint the dealer is that endpoint's organization, and
/// a `dealer_id` naming any other is `NotFound`, exactly like an unknown
/// dealer (DAP-CORE-031), so no call there reaches another organization.
/// Without an endpoint (in-process callers) `dealer_id` (a DAP
/// organization_id) names it, and must when the caller can see more than
/// one. An absent or invisible dealer is `NotFound`, from the DAP tool's
/// own policy check, which every caller of this runs next.
pub async fn dealer(
    ctx: &ToolContext,
    dealer_id: Option<&str>,
) -> Result<(Arc<DirectorySnapshot>, String), ToolError> {
    let pinned = ctx.pinned_organization.clone();
    if let (Some(pinned), Some(given)) = (&pinned, dealer_id)
        && pinned != given
    {
        return Err(ToolError::NotFound);
    }
    let directory = ctx.directory().snapshot().await?;
    let id = match (pinned, dealer_id) {
        (Some(pinned), _) => pinned,
        (None, Some(id)) => id.to_owned(),
        (None, None) => only_visible(&directory, &ctx.principal)?,
    };
    Ok((directory, id))
}

fn only_visible(directory: &DirectorySnapshot, principal: &Principal) -> Result<String, ToolError> {
    super::policy::single_visible_organization(directory, principal)?.ok_or_else(|| {
        ToolError::Invalid {
            message: "dealer_id is required: this gateway serves several dealers. Give one of the organization_ids of the manifest (dealeragent.discovery.get_manifest or /.well-known/dealer-agent-gateway.json).".into(),
            field_errors: vec![FieldError::new(
                "/dealer_id",
                "required",
                "Required property 'dealer_id' is missing.",
            )],
        }
    })
}

/// Rooftop id to name of every rooftop of `organization_id` (AAP names a
/// vehicle's rooftop by name, `Vehicle.rooftop`).
pub fn rooftop_names(
    directory: &DirectorySnapshot,
    organization_id: &str,
) -> HashMap<String, String> {
    directory
        .organization(organization_id)
        .map(|org| {
            org.rooftops
                .iter()
                .map(|r| {
                    let name = r.dap.name.clone();
                    (r.rooftop_id.clone(), name)
                })
                .collect()
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Requests: AAP filters to DAP search arguments
// ---------------------------------------------------------------------------

fn invalid(pointer: &str, keyword: &str, message: &str) -> ToolError {
    ToolError::Invalid {
        message: message.to_owned(),
        field_errors: vec![FieldError::new(pointer, keyword, message)],
    }
}

fn push_unique(out: &mut Vec<Value>, value: &str) {
    let value = json!(value);
    if !out.contains(&value) {
        out.push(value);
    }
}

/// The DAP `dealeragent.inventory.search` arguments of AAP `filters` for
/// `organization_id`. Rooftop names resolve among the rooftops the caller
/// may see (an invisible rooftop is refused exactly like an absent one).
/// Without a status filter only in-stock units match (AAP: other units are
/// out of stock and never listed).
pub fn search_args(
    directory: &DirectorySnapshot,
    principal: &Principal,
    organization_id: &str,
    filters: &Filters,
) -> Result<Value, ToolError> {
    let mut args = Map::new();
    args.insert("organization_id".into(), json!(organization_id));
    let mut dap = Map::new();
    let nonempty = |list: &Option<Vec<String>>| list.as_ref().filter(|l| !l.is_empty()).cloned();
    if let Some(makes) = nonempty(&filters.make) {
        dap.insert("make".into(), unique(&makes));
    }
    if let Some(models) = nonempty(&filters.model) {
        dap.insert("model".into(), unique(&models));
    }
    if let Some(conditions) = nonempty(&filters.condition) {
        let mut out = Vec::new();
        for c in &conditions {
            // AAP cpo is DAP certified; DAP demo has no AAP value.
            push_unique(&mut out, if c == "cpo" { "certified" } else { c });
        }
        dap.insert("condition".into(), Value::Array(out));
    }
    if let Some(types) = nonempty(&filters.vehicle_type) {
        let mut out = Vec::new();
        for t in &types {
            if t == "car" {
                // AAP's car is any car, truck or SUV (AAP Vehicle.vehicle_type).
                for dap_type in ["car", "truck", "suv", "van"] {
                    push_unique(&mut out, dap_type);
                }
            } else {
                push_unique(&mut out, t);
            }
        }
        dap.insert("vehicle_type".into(), Value::Array(out));
    }
    let mut statuses = Vec::new();
    match nonempty(&filters.status) {
        None => IN_STOCK.iter().for_each(|s| push_unique(&mut statuses, s)),
        Some(list) => {
            for s in &list {
                match s.as_str() {
                    "intransit" => push_unique(&mut statuses, "in_transit"),
                    "pending" => {
                        push_unique(&mut statuses, "on_hold");
                        push_unique(&mut statuses, "pending_sale");
                    }
                    other => push_unique(&mut statuses, other),
                }
            }
        }
    }
    dap.insert("availability".into(), Value::Array(statuses));
    if let Some(year) = filters.year_min {
        dap.insert("year_min".into(), json!(year));
    }
    if let Some(year) = filters.year_max {
        dap.insert("year_max".into(), json!(year));
    }
    if let Some(miles) = filters.mileage_max {
        dap.insert("odometer_max".into(), json!({"value": miles, "unit": "mi"}));
    }
    if let Some(vin) = &filters.vin {
        dap.insert("vin".into(), json!(vin));
    }
    if let Some(stock) = &filters.stock {
        dap.insert("stock_number".into(), json!(stock));
    }
    args.insert("filters".into(), Value::Object(dap));
    if let Some(query) = filters
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
    {
        args.insert("query".into(), json!(query));
    }
    if let Some(names) = nonempty(&filters.rooftops) {
        let org = directory
            .organization(organization_id)
            .ok_or(ToolError::NotFound)?;
        let visible = principal.visible_rooftops(org);
        let mut ids = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let rooftop = visible
                .iter()
                .find(|r| r.dap.name == *name)
                .ok_or_else(|| {
                    invalid(
                        &format!("/filters/rooftops/{i}"),
                        "enum",
                        "A name in filters.rooftops is not a rooftop of this dealer; aap_dealer_information lists the rooftop names.",
                    )
                })?;
            push_unique(&mut ids, &rooftop.rooftop_id);
        }
        args.insert("rooftop_ids".into(), Value::Array(ids));
    }
    Ok(Value::Object(args))
}

fn unique(list: &[String]) -> Value {
    let mut out = Vec::new();
    for item in list {
        push_unique(&mut out, item);
    }
    Value::Array(out)
}

/// DAP `searchSort` of an AAP sort (the schema admits only these fields).
pub fn sort(sort: &Sort) -> Value {
    let field = match sort.field.as_str() {
        "mileage" => "odometer",
        "updated_at" => "observed_at",
        other => other,
    };
    json!({"field": field, "order": sort.order})
}

// ---------------------------------------------------------------------------
// Responses: DAP to AAP
// ---------------------------------------------------------------------------

/// AAP status of a DAP availability status; `None` for a unit AAP never
/// lists (sold, unavailable, unknown).
pub fn status(dap: &str) -> Option<&'static str> {
    match dap {
        "available" => Some("available"),
        "in_transit" => Some("intransit"),
        "on_hold" | "pending_sale" => Some("pending"),
        _ => None,
    }
}

/// AAP condition of a DAP condition; `None` for `demo` (no AAP value).
pub fn condition(dap: &str) -> Option<&'static str> {
    match dap {
        "new" => Some("new"),
        "used" => Some("used"),
        "certified" => Some("cpo"),
        _ => None,
    }
}

/// AAP vehicle type of a DAP vehicle type (AAP's car covers trucks, SUVs
/// and vans).
pub fn vehicle_type(dap: &str) -> Option<&'static str> {
    match dap {
        "car" | "truck" | "suv" | "van" => Some("car"),
        "motorcycle" => Some("motorcycle"),
        "trailer" => Some("trailer"),
        "rv" => Some("rv"),
        "other" => Some("other"),
        _ => None,
    }
}

fn fuel(dap: &str) -> Option<&'static str> {
    match dap {
        "gasoline" => Some("gas"),
        "diesel" => Some("diesel"),
        "hybrid" => Some("hybrid"),
        "plug_in_hybrid" => Some("phev"),
        "battery_electric" => Some("bev"),
        "hydrogen" => Some("hydrogen"),
        _ => None,
    }
}

fn driveline(dap: &str) -> Option<&'static str> {
    match dap {
        "fwd" => Some("fwd"),
        "rwd" => Some("rwd"),
        "awd" => Some("awd"),
        "four_wd" => Some("4wd"),
        _ => None,
    }
}

/// Whole miles of a DAP distance (`{value, unit}`): exact for miles,
/// rounded to the nearest mile for kilometres (integer arithmetic in
/// millimetres, 1 mi = 1,609,344 mm, as DAP's odometer filter compares).
fn miles(distance: &Value) -> Option<u64> {
    let value = distance["value"].as_u64()?;
    match distance["unit"].as_str()? {
        "mi" => Some(value),
        "km" => {
            let mm = u128::from(value) * MM_PER_KM;
            u64::try_from((mm + MM_PER_MILE / 2) / MM_PER_MILE).ok()
        }
        _ => None,
    }
}

/// AAP's `electric_range_mi` of a DAP electric range: miles as given;
/// whole kilometres converted to tenths of a mile (a fractional kilometre
/// figure is left out rather than converted in floating point).
fn electric_range_miles(range: &Value) -> Option<Number> {
    match range["unit"].as_str()? {
        "mi" => range["value"].as_number().cloned(),
        "km" => {
            let km = range["value"].as_u64()?;
            let tenths = (u128::from(km) * MM_PER_KM * 10 + MM_PER_MILE / 2) / MM_PER_MILE;
            serde_json::from_str(&format!("{}.{}", tenths / 10, tenths % 10)).ok()
        }
        _ => None,
    }
}

/// AAP `list_price` of a DAP advertised price: whole US dollars, and only
/// when the price does NOT already include required dealer charges (AAP:
/// the base price before fees). Otherwise `None`: the AAP shape has no
/// honest member for it (it stays under `dealergateway.advertised_price`).
pub fn list_price(advertised: &Value) -> Option<i64> {
    let amount = &advertised["amount"];
    let minor = amount["amount_minor"].as_i64()?;
    let whole_usd = amount["currency"] == json!("USD") && minor >= 0 && minor % 100 == 0;
    (whole_usd && advertised["includes_required_dealer_charges"] == json!(false))
        .then_some(minor / 100)
}

/// A non-empty DAP text member.
fn text(value: &Value) -> Option<String> {
    value.as_str().filter(|t| !t.is_empty()).map(str::to_owned)
}

/// The typed DAP `advertisedPrice` of a rendered DAP vehicle (money never
/// travels as a JSON tree past this point); `None` when it is malformed.
fn advertised_price(value: &Value) -> Option<AdvertisedPrice> {
    let optional = |member: &str| value[member].as_str().map(str::to_owned);
    Some(AdvertisedPrice {
        amount: serde_json::from_value(value["amount"].clone()).ok()?,
        availability: value["availability"].as_str()?.to_owned(),
        includes_required_dealer_charges: value["includes_required_dealer_charges"].as_bool()?,
        label: optional("label"),
        valid_from: optional("valid_from"),
        valid_until: optional("valid_until"),
    })
}

/// A DAP `odometer` (`{value, unit, status?}`).
fn odometer(value: &Value) -> Option<Odometer> {
    Some(Odometer {
        value: value["value"].as_u64()?,
        unit: value["unit"].as_str()?.to_owned(),
        status: value["status"].as_str().map(str::to_owned),
    })
}

/// The AAP vehicle of one DAP vehicle, or `None` when AAP may not list it
/// (not in stock, or withdrawn from the dealer's feed). A DAP vehicle
/// without the members every one has (identifiers, advertised price,
/// provenance, freshness; vehicle.schema.json) is a defect of the DAP
/// tool, answered `dealeragent.internal` like any output that fails its
/// schema (DAP 6.4), never a vehicle quietly left out.
pub fn vehicle(
    dap: &Value,
    rooftops: &HashMap<String, String>,
) -> Result<Option<AapVehicle>, ToolError> {
    let Some(aap_status) = dap["availability"]["status"].as_str().and_then(status) else {
        return Ok(None);
    };
    if dap["freshness"]["state"] == json!("withdrawn") {
        return Ok(None);
    }
    let malformed = |member: &str| {
        ToolError::internal(format!(
            "the DAP vehicle has no valid {member} for its AAP vehicle"
        ))
    };
    let id = |member: &str| {
        dap[member]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| malformed(member))
    };
    let rooftop_id = id("rooftop_id")?;
    let powertrain = &dap["powertrain"];
    let photos = dap["media"].as_array().and_then(|media| {
        let mut images: Vec<(i64, &str)> = media
            .iter()
            .filter(|m| m["type"] == json!("image"))
            .filter_map(|m| {
                Some((
                    m["position"].as_i64().unwrap_or(i64::MAX),
                    m["url"].as_str()?,
                ))
            })
            .collect();
        images.sort_by_key(|(position, _)| *position);
        let photos: Vec<String> = images.into_iter().map(|(_, url)| url.to_owned()).collect();
        (!photos.is_empty()).then_some(photos)
    });
    let evidence = AapVehicleEvidence {
        rooftop_id: rooftop_id.clone(),
        condition: dap["condition"].as_str().map(str::to_owned),
        vehicle_type: dap["vehicle_type"].as_str().map(str::to_owned),
        odometer: odometer(&dap["odometer"]),
        availability: dap["availability"].clone(),
        advertised_price: advertised_price(&dap["advertised_price"])
            .ok_or_else(|| malformed("advertised_price"))?,
        provenance: serde_json::from_value(dap["provenance"].clone())
            .map_err(|_| malformed("provenance"))?,
        freshness: serde_json::from_value(dap["freshness"].clone())
            .map_err(|_| malformed("freshness"))?,
    };
    Ok(Some(AapVehicle {
        vehicle_id: id("vehicle_id")?,
        dealer_id: id("organization_id")?,
        rooftop: rooftops.get(&rooftop_id).cloned(),
        vehicle_type: dap["vehicle_type"].as_str().and_then(vehicle_type),
        vin: text(&dap["vin"]),
        stock: text(&dap["stock_number"]),
        year: dap["year"].as_i64(),
        make: text(&dap["make"]),
        model: text(&dap["model"]),
        trim: text(&dap["trim"]),
        condition: dap["condition"].as_str().and_then(condition),
        status: aap_status,
        list_price: list_price(&dap["advertised_price"]),
        mileage: miles(&dap["odometer"]),
        body: text(&dap["body_style"]).map(|b| b.to_lowercase()),
        transmission: text(&powertrain["transmission"]),
        driveline: powertrain["drivetrain"].as_str().and_then(driveline),
        fuel: powertrain["fuel_type"].as_str().and_then(fuel),
        electric_range_mi: electric_range_miles(&powertrain["electric_range"]),
        exterior_color: text(&dap["exterior_color"]),
        interior_color: text(&dap["interior_color"]),
        features: dap["features"].as_array().map(|f| {
            f.iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect()
        }),
        photos,
        vdp_url: text(&dap["listing_url"]),
        inventory_date: dap["used_vehicle"]["inventory_tenure"]["stocked_at"]
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|stocked| stocked.with_timezone(&Utc).format("%Y-%m-%d").to_string()),
        updated_at: text(&dap["availability"]["observed_at"]),
        dealergateway: evidence,
    }))
}

/// A facet value: text, or an integer for years (vehicle.schema.json
/// `facetValue`, aap-common.schema.json `aapTermFacet`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum FacetValue {
    Text(String),
    Integer(i64),
}

impl FacetValue {
    /// A DAP facet value as given; `None` for anything the DAP schema
    /// does not allow there.
    pub fn of(value: &Value) -> Option<FacetValue> {
        match value {
            Value::String(s) => Some(FacetValue::Text(s.clone())),
            other => other.as_i64().map(FacetValue::Integer),
        }
    }

    /// Its JSON text: what equal values are merged by and what ties are
    /// ordered by, as DAP orders its own buckets.
    fn key(&self) -> String {
        match self {
            FacetValue::Text(s) => Value::String(s.clone()).to_string(),
            FacetValue::Integer(n) => n.to_string(),
        }
    }
}

/// One bucket of an AAP term facet (`aapTermFacet` item).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TermBucket {
    pub value: FacetValue,
    pub count: u64,
}

/// `aapRangeFacet`: the smallest and largest value counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RangeFacet {
    pub min: i64,
    pub max: i64,
}

/// `aapFacets`. Every facet this gateway counts; those it does not (price,
/// mileage, bodies, fuels, colors, ...) are not members, so they are never
/// estimated (docs/compatibility.md). The order is the wire order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AapFacets {
    pub makes: Vec<TermBucket>,
    pub models: Vec<TermBucket>,
    pub years: Vec<TermBucket>,
    pub conditions: Vec<TermBucket>,
    pub vehicle_types: Vec<TermBucket>,
    pub statuses: Vec<TermBucket>,
    /// Absent when no year is counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub year_range: Option<RangeFacet>,
    /// One bucket per rooftop name (`aap_inventory_facets` counts them).
    pub rooftops: Vec<TermBucket>,
}

/// A DAP facet (`[{value, count}]`) with its values mapped by `map` (a
/// value mapped to `None` is dropped) and equal values merged, ordered
/// like DAP's: count descending, then value ascending.
pub fn term_facet(dap: &Value, map: impl Fn(&Value) -> Option<FacetValue>) -> Vec<TermBucket> {
    merged(
        dap.as_array()
            .into_iter()
            .flatten()
            .filter_map(|bucket| Some((map(&bucket["value"])?, bucket["count"].as_u64()?))),
    )
}

/// `buckets` with equal values merged (their counts summed) and empty ones
/// dropped, ordered like DAP's facets: count descending, then value
/// ascending.
pub fn merged(buckets: impl IntoIterator<Item = (FacetValue, u64)>) -> Vec<TermBucket> {
    let mut merged: BTreeMap<String, TermBucket> = BTreeMap::new();
    for (value, count) in buckets {
        merged
            .entry(value.key())
            .or_insert(TermBucket { value, count: 0 })
            .count += count;
    }
    let mut buckets: Vec<(String, TermBucket)> =
        merged.into_iter().filter(|(_, b)| b.count > 0).collect();
    buckets.sort_by(|(a_key, a), (b_key, b)| b.count.cmp(&a.count).then_with(|| a_key.cmp(b_key)));
    buckets.into_iter().map(|(_, bucket)| bucket).collect()
}

/// The number of vehicles a DAP search matched: every vehicle has exactly
/// one condition, and DAP's facets count the whole filtered set
/// (inventory::search, "each facet's counts sum to total").
pub fn total(dap_search: &Value) -> u64 {
    dap_search["facets"]["condition"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["count"].as_u64())
        .sum()
}

/// AAP facets of a DAP search's facets (without `rooftops`, which DAP
/// does not count: `aap_inventory_facets` adds them).
pub fn facets(dap_search: &Value) -> AapFacets {
    let f = &dap_search["facets"];
    let mapped = |table: fn(&str) -> Option<&'static str>| {
        move |v: &Value| {
            v.as_str()
                .and_then(table)
                .map(|s| FacetValue::Text(s.to_owned()))
        }
    };
    let years: Vec<i64> = f["year"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["count"].as_u64().is_some_and(|c| c > 0))
        .filter_map(|b| b["value"].as_i64())
        .collect();
    AapFacets {
        makes: term_facet(&f["make"], FacetValue::of),
        models: term_facet(&f["model"], FacetValue::of),
        years: term_facet(&f["year"], FacetValue::of),
        conditions: term_facet(&f["condition"], mapped(condition)),
        vehicle_types: term_facet(&f["vehicle_type"], mapped(vehicle_type)),
        statuses: term_facet(&f["availability"], mapped(status)),
        year_range: match (years.iter().min(), years.iter().max()) {
            (Some(&min), Some(&max)) => Some(RangeFacet { min, max }),
            _ => None,
        },
        rooftops: Vec::new(),
    }
}

// ---------------------------------------------------------------------------
// Errors: AAP's error model
// ---------------------------------------------------------------------------

/// The `aap.error` object of a failed AAP tool call (AAP error.schema.json;
/// the MCP binding's "Errors that an agent can act on"). The DAP code is
/// kept in `details.dap_code`, the failing request paths in
/// `details.field_errors` (names from the schema, never input values,
/// DAP-ERR-002), and a concrete correction in `details.correction`.
pub fn error_object(
    error: &ToolError,
    tool: &str,
    error_id: &str,
    trace_id: &str,
    now: DateTime<Utc>,
) -> Value {
    let dap_code = error.code();
    let mut details = Map::new();
    details.insert("dap_code".into(), json!(dap_code.as_str()));
    details.insert("trace_id".into(), json!(trace_id));
    let field_code = |errors: &[FieldError]| {
        if errors.iter().any(|e| e.keyword == "required") {
            "MISSING_REQUIRED_FIELD"
        } else {
            "SCHEMA_VALIDATION_FAILED"
        }
    };
    let (code, message): (&str, String) = match error {
        ToolError::Validation { field_errors } => {
            details.insert("field_errors".into(), json!(field_errors));
            details.insert(
                "correction".into(),
                json!(if tool == VEHICLE_TOOL {
                    "Send type inventory.vehicle.request with at least one of vin, stock or vehicle_id, each valid as the inputSchema of tools/list says."
                } else {
                    "Correct each member named in field_errors as the inputSchema of tools/list says. AAP filters this gateway applies: make, model, condition, vehicle_type, status, rooftops, year_min, year_max, mileage_max, vin, stock, query; sort fields: year, mileage, updated_at. Others (price, trim, fuel, colors, ...) are refused, never ignored."
                }),
            );
            (
                field_code(field_errors),
                "The arguments do not satisfy this tool's input schema.".to_owned(),
            )
        }
        ToolError::Invalid {
            message,
            field_errors,
        } => {
            details.insert("field_errors".into(), json!(field_errors));
            (field_code(field_errors), message.clone())
        }
        ToolError::NotFound => {
            if tool == VEHICLE_TOOL {
                (
                    "VEHICLE_NOT_FOUND",
                    "No in-stock vehicle of this dealer matches. Sold, withdrawn and unknown-status units are not listed to AAP clients.".to_owned(),
                )
            } else {
                details.insert(
                    "correction".into(),
                    json!("Omit dealer_id or give this AAP endpoint's own organization_id (/aap/{organization_id}/mcp); take rooftop names from aap_dealer_information."),
                );
                (
                    "SCHEMA_VALIDATION_FAILED",
                    "The requested dealer or rooftop was not found.".to_owned(),
                )
            }
        }
        ToolError::AuthRequired { how } => (
            "UNSUPPORTED_SKILL",
            format!("This skill requires authentication. {how}"),
        ),
        ToolError::ScopeInsufficient { scope } => {
            details.insert("required_scope".into(), json!(scope));
            (
                "UNSUPPORTED_SKILL",
                format!(
                    "Your credential does not grant the scope {scope} that this skill requires; ask the gateway operator for a credential with it."
                ),
            )
        }
        ToolError::RateLimited { retry_after_ms } => {
            details.insert(
                "retry_after_ms".into(),
                json!((*retry_after_ms).min(86_400_000)),
            );
            (
                "RATE_LIMITED",
                "Too many requests for this skill; retry after details.retry_after_ms.".to_owned(),
            )
        }
        ToolError::EvaluationsBusy { retry_after_ms } => {
            details.insert(
                "retry_after_ms".into(),
                json!((*retry_after_ms).min(86_400_000)),
            );
            (
                "INTERNAL_ERROR",
                "The gateway's offer evaluations are all busy; retry after details.retry_after_ms."
                    .to_owned(),
            )
        }
        ToolError::AuditUnavailable { retry_after_ms } => {
            details.insert(
                "retry_after_ms".into(),
                json!((*retry_after_ms).min(86_400_000)),
            );
            (
                "INTERNAL_ERROR",
                "The gateway could not record this read in its audit log; retry after details.retry_after_ms.".to_owned(),
            )
        }
        ToolError::StoreUnavailable { retry_after_ms, .. } => {
            details.insert(
                "retry_after_ms".into(),
                json!((*retry_after_ms).min(86_400_000)),
            );
            (
                "INTERNAL_ERROR",
                "The gateway's data store is unavailable for the moment; retry after details.retry_after_ms.".to_owned(),
            )
        }
        ToolError::OrganizationNotServedHere { retry_after_ms } => {
            details.insert(
                "retry_after_ms".into(),
                json!((*retry_after_ms).min(86_400_000)),
            );
            (
                "INTERNAL_ERROR",
                "This gateway replica does not serve this dealer (the gateway is sharded by organization); route /aap/{dealer}/ to the replica that serves it, then retry after details.retry_after_ms.".to_owned(),
            )
        }
        ToolError::UpstreamUnavailable { retry_after_ms } => {
            details.insert(
                "retry_after_ms".into(),
                json!((*retry_after_ms).min(86_400_000)),
            );
            (
                "INTERNAL_ERROR",
                "The dealer's system did not give a usable answer; retry after details.retry_after_ms.".to_owned(),
            )
        }
        ToolError::Internal { .. } => (
            "INTERNAL_ERROR",
            format!("The gateway failed unexpectedly; quote error id {error_id} to the operator."),
        ),
    };
    json!({
        "@type": AAP_ERROR_TYPE,
        "type": "aap.error",
        "error_id": error_id,
        "code": code,
        "message": message.chars().take(2000).collect::<String>(),
        "retryable": dap_code.retryable(),
        "details": details,
        "created_at": now.to_rfc3339_opts(SecondsFormat::Millis, true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kilometres_become_whole_miles_and_miles_stay_exact() {
        assert_eq!(miles(&json!({"value": 17279, "unit": "mi"})), Some(17279));
        assert_eq!(
            miles(&json!({"value": 160_934, "unit": "km"})),
            Some(100_000)
        );
        assert_eq!(miles(&json!({"value": 1, "unit": "km"})), Some(1));
        assert_eq!(miles(&json!({"unit": "km"})), None);
    }

    #[test]
    fn list_price_only_for_whole_us_dollars_before_dealer_charges() {
        let price = |minor: i64, currency: &str, includes: bool| {
            json!({"amount": {"amount_minor": minor, "currency": currency},
                   "availability": "generally_available",
                   "includes_required_dealer_charges": includes})
        };
        assert_eq!(list_price(&price(4_088_800, "USD", false)), Some(40_888));
        assert_eq!(list_price(&price(4_088_850, "USD", false)), None);
        assert_eq!(list_price(&price(4_088_800, "USD", true)), None);
        assert_eq!(list_price(&price(4_088_800, "CAD", false)), None);
    }

    /// The powertrain members (the demo feeds carry none, so the table walk
    /// of docs/compatibility.md cannot exercise them over HTTP).
    #[test]
    fn powertrain_members_map_as_docs_compatibility_classifies_them() {
        let dap = json!({
            "vehicle_id": "veh.1", "organization_id": "org.1", "rooftop_id": "roof.1",
            "year": 2024, "make": "Kia", "model": "EV6", "condition": "demo",
            "availability": {"status": "on_hold", "authority_status": "asserted", "observed_at": "2026-01-01T00:00:00Z"},
            "advertised_price": {"amount": {"amount_minor": 4_000_000, "currency": "USD"},
                                 "availability": "generally_available", "includes_required_dealer_charges": true},
            "powertrain": {"transmission": "1-speed automatic", "drivetrain": "four_wd",
                           "fuel_type": "battery_electric", "electric_range": {"value": 400, "unit": "km"}},
            "provenance": {"sources": [{"source_name": "feed.csv", "authority": "dealer_asserted",
                                        "observed_at": "2026-01-01T00:00:00Z"}],
                           "authority_status": "asserted"},
            "freshness": {"observed_at": "2026-01-01T00:00:00Z", "state": "current"}
        });
        let rooftops = HashMap::from([("roof.1".to_owned(), "Roof One".to_owned())]);
        let aap = vehicle(&dap, &rooftops).unwrap().expect("in stock");
        let aap = serde_json::to_value(aap).unwrap();
        // lossless
        assert_eq!(aap["transmission"], json!("1-speed automatic"));
        // lossy
        assert_eq!(aap["driveline"], json!("4wd"));
        assert_eq!(aap["fuel"], json!("bev"));
        assert_eq!(aap["electric_range_mi"], json!(248.5));
        assert_eq!(aap["status"], json!("pending"));
        assert_eq!(aap["rooftop"], json!("Roof One"));
        // conditional: a demo unit has no AAP condition; a price that
        // includes dealer charges is no list_price; never an AAP price
        assert!(aap.get("condition").is_none());
        assert!(aap.get("list_price").is_none());
        assert!(aap.get("price").is_none());
        assert_eq!(aap["dealergateway"]["condition"], json!("demo"));
        // withdrawn or out of stock: not listed
        let mut withdrawn = dap.clone();
        withdrawn["freshness"]["state"] = json!("withdrawn");
        assert!(vehicle(&withdrawn, &rooftops).unwrap().is_none());
        let mut sold = dap.clone();
        sold["availability"]["status"] = json!("sold");
        assert!(vehicle(&sold, &rooftops).unwrap().is_none());
        // A listed unit without DAP provenance is a defect, never quietly
        // left out of the AAP answer.
        let mut unsourced = dap;
        unsourced["provenance"] = json!({});
        assert!(matches!(
            vehicle(&unsourced, &rooftops),
            Err(ToolError::Internal { .. })
        ));
    }

    #[test]
    fn out_of_stock_units_have_no_aap_status() {
        for dap in ["sold", "unavailable", "unknown"] {
            assert_eq!(status(dap), None, "{dap}");
        }
        assert_eq!(status("on_hold"), Some("pending"));
        assert_eq!(status("in_transit"), Some("intransit"));
    }

    #[test]
    fn merged_facets_sum_and_order_like_dap() {
        let dap = json!([{"value": "suv", "count": 5}, {"value": "car", "count": 2},
                         {"value": "motorcycle", "count": 4}, {"value": "truck", "count": 1}]);
        let aap = term_facet(&dap, |v| {
            v.as_str()
                .and_then(vehicle_type)
                .map(|s| FacetValue::Text(s.to_owned()))
        });
        assert_eq!(
            serde_json::to_value(&aap).unwrap(),
            json!([{"value": "car", "count": 8}, {"value": "motorcycle", "count": 4}])
        );
    }

    #[test]
    fn every_tool_error_maps_to_a_valid_aap_code_and_keeps_the_dap_code() {
        let catalog = crate::catalog::Catalog::load().expect("catalog");
        let tool = catalog.tool(super::VEHICLE_TOOL).expect("AAP vehicle tool");
        let errors = [
            ToolError::Validation {
                field_errors: vec![FieldError::new("/vin", "pattern", "x")],
            },
            ToolError::Invalid {
                message: "m".into(),
                field_errors: vec![],
            },
            ToolError::AuthRequired { how: "h".into() },
            ToolError::ScopeInsufficient { scope: "s".into() },
            ToolError::RateLimited { retry_after_ms: 5 },
            ToolError::NotFound,
            ToolError::UpstreamUnavailable { retry_after_ms: 5 },
            ToolError::StoreUnavailable {
                detail: "d".into(),
                retry_after_ms: 5,
            },
            ToolError::internal("d"),
        ];
        let strict = crate::catalog::bundle_reference(
            &catalog.schema_documents,
            "aap-common.schema.json#/$defs/aapError",
        )
        .expect("bundle");
        let strict = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&strict)
            .expect("compiles");
        let published = jsonschema::validator_for(&tool.published_output_schema).unwrap();
        for error in &errors {
            let object = error_object(error, &tool.name, "err.1", "trace.1", Utc::now());
            assert_eq!(object["details"]["dap_code"], json!(error.code().as_str()));
            assert!(strict.is_valid(&object), "{object}");
            // The published outputSchema admits it (anyOf: response, aap.error).
            assert!(published.is_valid(&object), "{object}");
        }
    }
}

#[cfg(test)]
mod demo_drift;
