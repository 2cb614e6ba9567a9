//! The arguments of `dealeragent.inventory.search`: their typed form
//! ([`SearchArgs`], the tool's input schema), the cross-field rules the
//! schema cannot express ([`SearchError`]), the compiled [`SearchQuery`]
//! the search runs, and the fingerprint a cursor is bound to. The rules
//! themselves are listed in `inventory/search.rs`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};
use sha2::{Digest, Sha256};

use super::super::index::{
    AVAILABILITY, CERTIFICATION, CONDITIONS, HISTORY, VEHICLE_TYPES, pack_currency,
};
use super::super::pieces::Detail;
use super::{DEFAULT_LIMIT, MAX_LIMIT};

/// A cross-field rule the schema cannot express. The message never echoes
/// a value (DAP-ERR-002); it names the member by its path and says what
/// would be accepted, as the schema errors do (docs/security.md "What a
/// tool error says"); `pointer` is the JSON pointer of the offending field
/// in the request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SearchError {
    pub pointer: String,
    pub message: Cow<'static, str>,
}

fn err(pointer: &str, message: impl Into<Cow<'static, str>>) -> SearchError {
    SearchError {
        pointer: pointer.to_owned(),
        message: message.into(),
    }
}

/// `/filters/year_min` as a model reads it: `filters.year_min`.
fn path(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

/// A minimum above its maximum (docs/inventory.md "Search rules": bounds
/// are inclusive, and the error points at the `_min` field).
fn reversed(min: &str, max: &str, how: &str) -> SearchError {
    err(
        min,
        format!(
            "{} must not be greater than {}{how}: give a minimum at most the maximum (swap the \
             two if they are reversed), or leave one out.",
            path(min),
            path(max)
        ),
    )
}

/// The sort field of a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortField {
    AdvertisedPrice,
    Year,
    Odometer,
    InventoryAgeDays,
    ObservedAt,
}

/// Sort field and direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sort {
    pub field: SortField,
    pub descending: bool,
}

/// Inclusive price bounds in one currency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriceRange {
    /// Packed currency code (see `index::pack_currency`).
    pub(super) currency: u32,
    pub min_minor: Option<i64>,
    pub max_minor: Option<i64>,
}

/// Parsed filters. Enumerated list filters are bit masks over the codes of
/// `index`; `None` means "no constraint".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    pub(super) vehicle_type: Option<u16>,
    /// Lower-cased.
    pub(super) make: Option<Vec<String>>,
    /// Lower-cased.
    pub(super) model: Option<Vec<String>>,
    pub(super) condition: Option<u16>,
    pub year_min: Option<i64>,
    pub year_max: Option<i64>,
    pub price: Option<PriceRange>,
    /// Millimetres.
    pub odometer_min_mm: Option<i128>,
    /// Millimetres.
    pub odometer_max_mm: Option<i128>,
    pub inventory_age_min_days: Option<u64>,
    pub inventory_age_max_days: Option<u64>,
    pub(super) history: Option<u16>,
    pub(super) certification: Option<u16>,
    pub(super) availability: Option<u16>,
    pub vin: Option<String>,
    pub stock_number: Option<String>,
}

impl Filters {
    /// Whether every filter other than `make` and the price range is
    /// absent: such a filter selects whole ranges of the make and price
    /// order (`index::ranges`). Destructured so that a new filter must be
    /// considered here.
    pub(crate) fn only_make_and_price(&self) -> bool {
        let Filters {
            vehicle_type,
            make: _,
            model,
            condition,
            year_min,
            year_max,
            price: _,
            odometer_min_mm,
            odometer_max_mm,
            inventory_age_min_days,
            inventory_age_max_days,
            history,
            certification,
            availability,
            vin,
            stock_number,
        } = self;
        vehicle_type.is_none()
            && model.is_none()
            && condition.is_none()
            && year_min.is_none()
            && year_max.is_none()
            && odometer_min_mm.is_none()
            && odometer_max_mm.is_none()
            && inventory_age_min_days.is_none()
            && inventory_age_max_days.is_none()
            && history.is_none()
            && certification.is_none()
            && availability.is_none()
            && vin.is_none()
            && stock_number.is_none()
    }
}

/// `dealeragent.inventory.search`: `searchRequest`, compiled by
/// `inventory::search::SearchQuery::compile`, which applies the
/// cross-field rules the schema cannot express.
///
/// `Serialize` gives back the members as given (absent stays absent), so
/// the cursor's query fingerprint is computed from this type exactly as
/// from the request (`search::query_fingerprint`, DAP-CORE-027).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    pub organization_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rooftop_ids: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filters: Option<SearchFilters>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sort: Option<SearchSort>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<PageRequest>,
    /// How much of each vehicle to return (default concise); it selects
    /// nothing, so it is not part of the cursor's query fingerprint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<Detail>,
}

/// `searchFilters`. The enumerated list filters stay strings: their
/// vocabularies are the code tables of `inventory::index`, which turn them
/// into bit masks. Integers are JSON numbers: the schema's `integer`
/// admits `2020.0` and `1e20`, which an `i64` cannot always hold, and
/// `SearchQuery::compile` answers those with its precise, pointed error.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SearchFilters {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vehicle_type: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub make: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub year_min: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub year_max: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_min: Option<MoneyBound>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_max: Option<MoneyBound>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub odometer_min: Option<DistanceBound>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub odometer_max: Option<DistanceBound>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inventory_age_min_days: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inventory_age_max_days: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_report_status: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certification_type: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stock_number: Option<String>,
}

/// `nonNegativeMoney`, a price bound.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MoneyBound {
    pub amount_minor: Number,
    pub currency: String,
}

/// `distance`, an odometer bound.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DistanceBound {
    pub value: Number,
    pub unit: DistanceUnit,
}

/// `distanceUnit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DistanceUnit {
    Mi,
    Km,
}

/// `searchSort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SearchSort {
    pub field: SearchSortField,
    pub order: SortOrder,
}

/// `searchSort.field`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchSortField {
    AdvertisedPrice,
    Year,
    Odometer,
    InventoryAgeDays,
    ObservedAt,
}

/// `searchSort.order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SortOrder {
    Asc,
    Desc,
}

/// `pageRequest`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PageRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<Number>,
}

impl SearchArgs {
    /// [`query_fingerprint`] of the request these arguments were read
    /// from: they serialize back to the same members (absent stays
    /// absent), so the fingerprint is the request's.
    pub fn fingerprint(&self) -> [u8; 32] {
        query_fingerprint(&serde_json::to_value(self).unwrap_or(Value::Null))
    }
}

/// A parsed, checked `searchRequest`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    pub organization_id: String,
    /// Requested rooftops, sorted and deduplicated; `None` = every rooftop
    /// the caller may read (the caller resolves that set).
    pub rooftop_ids: Option<Vec<String>>,
    /// Lower-cased, deduplicated query tokens (empty = no text query).
    pub tokens: Vec<String>,
    pub filters: Filters,
    pub sort: Option<Sort>,
    pub limit: usize,
    /// The form of the page's vehicles (`detail`, default concise).
    pub detail: Detail,
    /// `page.cursor` as given (open it with `cursor::open`).
    pub cursor: Option<String>,
    /// SHA-256 of the canonical request without `page` (see
    /// [`query_fingerprint`]); binds cursors to this query.
    pub fingerprint: [u8; 32],
}

/// SHA-256 of the canonical form of a search request: object keys sorted
/// recursively, compact JSON, with the whole `page` member and `detail`
/// removed.
///
/// `page.limit` and `detail` are deliberately NOT part of the fingerprint:
/// a keyset position depends on neither the page size nor how much of each
/// vehicle is shown, so a client may change them between pages without
/// skipping or repeating vehicles. Everything
/// that selects or orders vehicles (organization, rooftops, query,
/// filters, sort) is included, so a cursor from any other query is
/// rejected. Array order is kept as given (a reordered filter list is a
/// different query: conservative, never unsafe).
///
/// The canonical text is written straight from `args`, without the copy
/// and the sorted tree it was first built from (2% of a broad search,
/// docs/benchmarks.md "Page reads from an index image"); a property test
/// holds it to that first form.
pub fn query_fingerprint(args: &Value) -> [u8; 32] {
    let mut out = Vec::with_capacity(256);
    let Value::Object(map) = args else {
        write_canonical(&mut out, args);
        return Sha256::digest(&out).into();
    };
    // An empty list filter is the same query as an absent one
    // (docs/inventory.md), and so is an empty `filters` object: they must
    // fingerprint alike, or a cursor breaks when a client sends `make: []`
    // on one page and omits it on the next.
    let filters: Option<Vec<(&String, &Value)>> = match map.get("filters") {
        Some(Value::Object(filters)) => Some(
            filters
                .iter()
                .filter(|(_, v)| !matches!(v, Value::Array(items) if items.is_empty()))
                .collect(),
        ),
        _ => None,
    };
    let members = map.iter().filter(|(k, _)| match k.as_str() {
        "page" | "detail" => false,
        "filters" => filters.as_ref().is_none_or(|f| !f.is_empty()),
        _ => true,
    });
    write_members(&mut out, members.collect(), |out, key, value| {
        match (key, &filters) {
            ("filters", Some(f)) => write_members(out, f.clone(), write_member),
            _ => write_canonical(out, value),
        }
    });
    Sha256::digest(&out).into()
}

/// An object's members, keys sorted, each value written by `value`.
fn write_members(
    out: &mut Vec<u8>,
    mut members: Vec<(&String, &Value)>,
    value: impl Fn(&mut Vec<u8>, &str, &Value),
) {
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push(b'{');
    for (i, (k, v)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // Serializing a string or a `Value` cannot fail.
        let _ = serde_json::to_writer(&mut *out, k);
        out.push(b':');
        value(out, k, v);
    }
    out.push(b'}');
}

fn write_member(out: &mut Vec<u8>, _key: &str, value: &Value) {
    write_canonical(out, value);
}

/// `v` as compact JSON with the keys of every object sorted.
fn write_canonical(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Object(map) => write_members(out, map.iter().collect(), write_member),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(out, item);
            }
            out.push(b']');
        }
        leaf => {
            let _ = serde_json::to_writer(&mut *out, leaf);
        }
    }
}

fn mask(
    values: Option<&[String]>,
    pointer: &str,
    table: &[&str],
) -> Result<Option<u16>, SearchError> {
    // An empty list is the same as an absent filter (module doc).
    let Some(values) = values.filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let mut m = 0u16;
    for value in values {
        let code = table.iter().position(|t| t == value).ok_or_else(|| {
            err(
                pointer,
                format!(
                    "{} lists a value this filter does not take: only the values of its \
                         enum in the input schema.",
                    path(pointer)
                ),
            )
        })?;
        m |= 1 << code;
    }
    Ok(Some(m))
}

fn int(n: Option<&Number>, pointer: &str) -> Result<Option<i64>, SearchError> {
    n.map(|n| {
        n.as_i64().ok_or_else(|| {
            err(
                pointer,
                format!(
                    "{} must be a whole number written without a decimal point or \
                         exponent, within the signed 64-bit range.",
                    path(pointer)
                ),
            )
        })
    })
    .transpose()
}

fn uint(n: Option<&Number>, pointer: &str) -> Result<Option<u64>, SearchError> {
    n.map(|n| {
        n.as_u64().ok_or_else(|| {
            err(
                pointer,
                format!(
                    "{} must be a whole number of at least 0, written without a decimal \
                         point or exponent.",
                    path(pointer)
                ),
            )
        })
    })
    .transpose()
}

fn money(m: Option<&MoneyBound>, pointer: &str) -> Result<Option<(String, i64)>, SearchError> {
    let Some(m) = m else { return Ok(None) };
    let amount = m.amount_minor.as_i64().ok_or_else(|| {
        err(
            pointer,
            format!(
                "{}.amount_minor must be a whole number of minor units of at most \
                 9223372036854775807 (the signed 64-bit range), written without a decimal point \
                 or exponent.",
                path(pointer)
            ),
        )
    })?;
    Ok(Some((m.currency.clone(), amount)))
}

fn distance_mm(d: Option<&DistanceBound>, pointer: &str) -> Result<Option<i128>, SearchError> {
    let Some(d) = d else { return Ok(None) };
    let value = d.value.as_i64().ok_or_else(|| {
        err(
            pointer,
            format!(
                "{}.value must be a whole number of at most 9223372036854775807 (the signed \
                     64-bit range), written without a decimal point or exponent.",
                path(pointer)
            ),
        )
    })?;
    // Exact conversion to millimetres (module doc: 1 mi = 1,609,344 mm).
    let unit: i128 = match d.unit {
        DistanceUnit::Mi => 1_609_344,
        DistanceUnit::Km => 1_000_000,
    };
    Ok(Some(i128::from(value) * unit))
}

/// Lower-cased, sorted and deduplicated (makes and models match
/// case-insensitively); an empty list is no constraint.
fn lowered(values: Option<&[String]>) -> Option<Vec<String>> {
    let values = values.filter(|v| !v.is_empty())?;
    let mut out: Vec<String> = values.iter().map(|x| x.to_lowercase()).collect();
    out.sort();
    out.dedup();
    Some(out)
}

impl SearchQuery {
    /// [`SearchQuery::compile`] of a request tree. A tree that is not a
    /// `searchRequest` at all is refused at the root without repeating
    /// serde's message (it can quote a value, DAP-ERR-002); the tool reads
    /// its schema-checked arguments with `tools::args::parse` instead.
    ///
    /// # Errors
    /// As [`SearchQuery::compile`], or the root pointer `""`.
    pub fn parse(args: &Value) -> Result<SearchQuery, SearchError> {
        let args = SearchArgs::deserialize(args)
            .map_err(|_| err("", "The request is not a search request."))?;
        SearchQuery::compile(&args)
    }

    /// Compiles a schema-valid `searchRequest` and applies the cross-field
    /// rules the schema cannot express.
    ///
    /// # Errors
    /// A [`SearchError`] naming the offending field; its message never
    /// contains a value from the request.
    pub fn compile(args: &SearchArgs) -> Result<SearchQuery, SearchError> {
        let organization_id = args.organization_id.clone();
        let rooftop_ids = args
            .rooftop_ids
            .as_ref()
            .filter(|ids| !ids.is_empty())
            .map(|ids| {
                let mut ids = ids.clone();
                ids.sort();
                ids.dedup();
                ids
            });
        let mut tokens: Vec<String> = Vec::new();
        if let Some(q) = &args.query {
            for t in q.to_lowercase().split_whitespace() {
                if !tokens.iter().any(|x| x == t) {
                    tokens.push(t.to_owned());
                }
            }
        }

        let none = SearchFilters::default();
        let f = args.filters.as_ref().unwrap_or(&none);
        let mut filters = Filters {
            vehicle_type: mask(
                f.vehicle_type.as_deref(),
                "/filters/vehicle_type",
                &VEHICLE_TYPES[1..],
            )?
            .map(|m| m << 1),
            make: lowered(f.make.as_deref()),
            model: lowered(f.model.as_deref()),
            condition: mask(f.condition.as_deref(), "/filters/condition", &CONDITIONS)?,
            year_min: int(f.year_min.as_ref(), "/filters/year_min")?,
            year_max: int(f.year_max.as_ref(), "/filters/year_max")?,
            price: None,
            odometer_min_mm: distance_mm(f.odometer_min.as_ref(), "/filters/odometer_min")?,
            odometer_max_mm: distance_mm(f.odometer_max.as_ref(), "/filters/odometer_max")?,
            inventory_age_min_days: uint(
                f.inventory_age_min_days.as_ref(),
                "/filters/inventory_age_min_days",
            )?,
            inventory_age_max_days: uint(
                f.inventory_age_max_days.as_ref(),
                "/filters/inventory_age_max_days",
            )?,
            history: mask(
                f.history_report_status.as_deref(),
                "/filters/history_report_status",
                &HISTORY,
            )?,
            certification: mask(
                f.certification_type.as_deref(),
                "/filters/certification_type",
                &CERTIFICATION,
            )?,
            availability: mask(
                f.availability.as_deref(),
                "/filters/availability",
                &AVAILABILITY,
            )?,
            vin: f.vin.clone(),
            stock_number: f.stock_number.clone(),
        };

        let price_min = money(f.price_min.as_ref(), "/filters/price_min")?;
        let price_max = money(f.price_max.as_ref(), "/filters/price_max")?;
        filters.price = match (price_min, price_max) {
            (None, None) => None,
            (Some((c, a)), None) => Some(PriceRange {
                currency: pack_currency(&c),
                min_minor: Some(a),
                max_minor: None,
            }),
            (None, Some((c, a))) => Some(PriceRange {
                currency: pack_currency(&c),
                min_minor: None,
                max_minor: Some(a),
            }),
            (Some((c1, a1)), Some((c2, a2))) => {
                if c1 != c2 {
                    return Err(err(
                        "/filters/price_max/currency",
                        "filters.price_max.currency must be the currency of filters.price_min: a \
                         price filter matches only vehicles priced in its currency and amounts \
                         are never converted, so both bounds use one ISO 4217 code.",
                    ));
                }
                if a1 > a2 {
                    return Err(reversed("/filters/price_min", "/filters/price_max", ""));
                }
                Some(PriceRange {
                    currency: pack_currency(&c1),
                    min_minor: Some(a1),
                    max_minor: Some(a2),
                })
            }
        };
        if let (Some(a), Some(b)) = (filters.year_min, filters.year_max)
            && a > b
        {
            return Err(reversed("/filters/year_min", "/filters/year_max", ""));
        }
        if let (Some(a), Some(b)) = (filters.odometer_min_mm, filters.odometer_max_mm)
            && a > b
        {
            return Err(reversed(
                "/filters/odometer_min",
                "/filters/odometer_max",
                " (compared exactly, a mile being 1.609344 km)",
            ));
        }
        if let (Some(a), Some(b)) = (
            filters.inventory_age_min_days,
            filters.inventory_age_max_days,
        ) && a > b
        {
            return Err(reversed(
                "/filters/inventory_age_min_days",
                "/filters/inventory_age_max_days",
                "",
            ));
        }

        let sort = args.sort.map(|s| Sort {
            field: match s.field {
                SearchSortField::AdvertisedPrice => SortField::AdvertisedPrice,
                SearchSortField::Year => SortField::Year,
                SearchSortField::Odometer => SortField::Odometer,
                SearchSortField::InventoryAgeDays => SortField::InventoryAgeDays,
                SearchSortField::ObservedAt => SortField::ObservedAt,
            },
            descending: match s.order {
                SortOrder::Asc => false,
                SortOrder::Desc => true,
            },
        });

        let page = args.page.as_ref();
        let limit = match page.and_then(|p| p.limit.as_ref()) {
            None => DEFAULT_LIMIT,
            Some(l) => l
                .as_u64()
                .and_then(|l| usize::try_from(l).ok())
                .filter(|l| (1..=MAX_LIMIT).contains(l))
                .ok_or_else(|| {
                    err(
                        "/page/limit",
                        format!(
                            "page.limit must be a whole number from 1 to {MAX_LIMIT}, written \
                             without a decimal point or exponent."
                        ),
                    )
                })?,
        };
        let cursor = page.and_then(|p| p.cursor.clone());

        Ok(SearchQuery {
            organization_id,
            rooftop_ids,
            tokens,
            filters,
            sort,
            limit,
            detail: args.detail.unwrap_or_default(),
            cursor,
            fingerprint: args.fingerprint(),
        })
    }
}

#[cfg(test)]
mod fingerprint_tests {
    use super::*;
    use proptest::prelude::*;

    /// The fingerprint as first written (a pruned copy, a sorted tree,
    /// serialized): the reference [`query_fingerprint`] is tested against.
    fn by_tree(args: &Value) -> [u8; 32] {
        let mut copy = args.clone();
        if let Value::Object(map) = &mut copy {
            map.remove("page");
            map.remove("detail");
            if let Some(Value::Object(filters)) = map.get_mut("filters") {
                filters.retain(|_, v| !matches!(v, Value::Array(items) if items.is_empty()));
                if filters.is_empty() {
                    map.remove("filters");
                }
            }
        }
        let text = serde_json::to_string(&canonicalize(&copy)).unwrap_or_default();
        Sha256::digest(text.as_bytes()).into()
    }

    fn canonicalize(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut out = serde_json::Map::new();
                for k in keys {
                    out.insert(k.clone(), canonicalize(&map[k]));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(canonicalize).collect()),
            other => other.clone(),
        }
    }

    fn json() -> impl Strategy<Value = Value> {
        let key = prop_oneof![
            Just("page".to_owned()),
            Just("detail".to_owned()),
            Just("filters".to_owned()),
            Just("make".to_owned()),
            Just("query".to_owned()),
            "[a-z\"\\\\\u{e9}\u{1}]{0,4}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "\\PC{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 5, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec((key.clone(), inner), 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn written_as_the_sorted_tree_was(args in json()) {
            prop_assert_eq!(query_fingerprint(&args), by_tree(&args));
        }
    }

    #[test]
    fn pruned_members_fingerprint_as_the_sorted_tree_did() {
        for args in [
            serde_json::json!({"organization_id": "o", "page": {"limit": 5}, "detail": "full"}),
            serde_json::json!({"organization_id": "o", "filters": {}}),
            serde_json::json!({"organization_id": "o", "filters": {"make": [], "model": []}}),
            serde_json::json!({"organization_id": "o", "filters": {"make": [], "year_min": 2020}}),
            serde_json::json!({"organization_id": "o", "filters": {"make": ["Kia"], "b": {"z": 1, "a": [{"y": 2, "x": 1}]}}}),
            serde_json::json!({"filters": []}),
            serde_json::json!({"filters": null, "sort": {"order": "asc", "field": "year"}}),
            serde_json::json!([{"b": 1, "a": 2}]),
            serde_json::json!("text"),
        ] {
            assert_eq!(query_fingerprint(&args), by_tree(&args), "{args}");
        }
    }
}
