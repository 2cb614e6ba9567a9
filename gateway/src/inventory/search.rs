//! Search semantics of `dealeragent.inventory.search` over snapshot
//! indexes: filters, free-text query, sort, facets and keyset pages.
//!
//! Pure: no I/O and no clock (the caller passes `now`).
//!
//! # Rules (copied to the docs)
//!
//! * **Filters** combine with AND; a list filter matches any listed value;
//!   an empty list is the same as an absent filter.
//!   - `make`, `model`: case-insensitive exact match.
//!   - `price_min`/`price_max`: match ONLY vehicles priced in the filter's
//!     currency; amounts are never converted. Both bounds must use the same
//!     currency.
//!   - `odometer_min`/`odometer_max`: compared exactly in millimetres
//!     (1 mi = 1,609,344 mm, 1 km = 1,000,000 mm), so a bound in km
//!     matches readings in mi and vice versa. A vehicle whose odometer is
//!     unknown never matches an odometer filter.
//!   - `inventory_age_min_days`/`inventory_age_max_days`: the age is the
//!     number of complete elapsed 24-hour periods from the basis
//!     (`stocked_at`, else `first_public_listing_at`) to `now`. A vehicle
//!     with no basis, or a basis in the future, never matches.
//!   - `history_report_status`, `certification_type`: a vehicle whose value
//!     is unknown matches the value `unknown`.
//!   - `availability`: the status asserted by the source, unless an
//!     [`AvailabilityOverlay`] (the newer outcome of an availability check,
//!     see docs/availability.md) replaces it for that vehicle; facets count
//!     the same effective status.
//!   - `vin`, `stock_number`: exact (case-sensitive) match.
//!   - Bounds are inclusive; a minimum above its maximum is a validation
//!     error, as are price bounds in two currencies.
//! * **Query**: lower-cased, split on whitespace; every token must be a
//!   substring of the vehicle's searchable text (year, make, model, trim,
//!   body style, exterior and interior colors, condition, stock number,
//!   VIN). Tokens never span two fields or two words.
//! * **Sort**: a TOTAL order — the sort key, then `vehicle_id` ascending,
//!   then `rooftop_id` ascending — so pages never overlap or skip on ties.
//!   Without `sort` the order is `vehicle_id` ascending.
//!   - `advertised_price`: currencies are never interleaved: vehicles are
//!     grouped by currency code in ascending order (CAD before USD) in
//!     BOTH directions, and ordered by amount in the requested direction
//!     within each currency.
//!   - `odometer`: by exact millimetres (mi and km compare correctly).
//!   - `inventory_age_days`: by the age basis timestamp (older basis =
//!     greater age), which orders by age in days and stays stable while
//!     pages are fetched across a day boundary.
//!   - `observed_at`, `year`: as named.
//!   - Vehicles MISSING the sort key (unknown odometer, unknown or future
//!     inventory-age basis) come LAST in both directions, by `vehicle_id`.
//! * **Pages** are keyset pages: the page after a [`PageKey`] holds the
//!   first `limit` vehicles strictly after it in the total order. `limit`
//!   defaults to [`DEFAULT_LIMIT`] (10), at most [`MAX_LIMIT`] (100). It is
//!   a maximum: the tool may end a page sooner to keep its result within
//!   the budget ([`SearchPage::key_of`] gives the cursor position after any
//!   vehicle of the page; docs/inventory.md "Detail and the result
//!   budget").
//! * **Facets** (`make`, `model`, `condition`, `year`, `vehicle_type`,
//!   `availability`) count the WHOLE filtered set, not the page; each
//!   facet's counts sum to `total`; a missing value counts as `"unknown"`;
//!   values are ordered by count descending, then value ascending. Makes
//!   and models are grouped case-insensitively and shown in their most
//!   frequent spelling.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::index::{
    AVAILABILITY, CONDITIONS, NO_BASIS, NO_ODOMETER, Row, SnapshotIndex, VEHICLE_TYPES,
};

/// Page size when the request gives none: ten concise vehicles and the
/// facets stay well within a result budget of 25,000 characters
/// (docs/benchmarks.md "Result sizes and the token budget").
pub const DEFAULT_LIMIT: usize = 10;
/// Largest page size (the schema's `pageRequest.limit` maximum).
pub const MAX_LIMIT: usize = 100;

use super::pieces::DAY_US;

mod facets;
mod plans;
mod query;
mod ranged;
mod texted;

pub use facets::facets_json;
use facets::{coded_facet, ordered, spelled_facet};
use plans::{candidate_rows, first_after, sorted_rows};

pub use query::{
    DistanceBound, DistanceUnit, Filters, MoneyBound, PageRequest, PriceRange, SearchArgs,
    SearchError, SearchFilters, SearchQuery, SearchSort, SearchSortField, Sort, SortField,
    SortOrder, query_fingerprint,
};

/// The position of a vehicle in a search's total order, normalized so that
/// ascending `(missing, major, minor)` IS the requested order: `minor` is
/// negated for descending sorts, `major` is the packed currency code for
/// price sorts (0 otherwise), and `missing` puts vehicles without the key
/// last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SortKey {
    pub missing: bool,
    pub major: u32,
    pub minor: i128,
}

/// Where a page ends: the last vehicle's sort key and identity. The next
/// page starts strictly after it. Serialized into cursors by
/// `cursor::seal`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageKey {
    pub sort: SortKey,
    pub vehicle_id: String,
    pub rooftop_id: String,
}

/// A facet bucket value: a string, or an integer for years.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(untagged)]
pub enum FacetKey {
    Int(i64),
    Str(String),
}

/// DAP `facetValue`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FacetValue {
    pub value: FacetKey,
    pub count: u64,
}

/// One page of results.
#[derive(Debug, Clone)]
pub struct SearchPage {
    /// The page's vehicles in order: the snapshot and the row in it
    /// (`index.record(row)`).
    pub vehicles: Vec<(Arc<SnapshotIndex>, usize)>,
    /// Size of the whole filtered set (every page).
    pub total: usize,
    /// Facets over the whole filtered set.
    pub facets: BTreeMap<&'static str, Vec<FacetValue>>,
    /// Key of the page's last vehicle when more follow; `None` at the end.
    pub next: Option<PageKey>,
    /// The position of each vehicle of the page in the total order, for a
    /// page the tool ends sooner ([`SearchPage::key_of`]).
    pub sort_keys: Vec<SortKey>,
    /// Per searched snapshot with at least one match (its position in
    /// `indexes`): the oldest `observed_at` among ALL its matches, in
    /// microseconds. The response's freshness is judged on these, so a
    /// page never reads fresher than the result set it pages through.
    pub oldest_match_us: Vec<(usize, i64)>,
}

/// Facet names, in response order.
pub const FACETS: [&str; 6] = [
    "availability",
    "condition",
    "make",
    "model",
    "vehicle_type",
    "year",
];

fn sort_key(sort: Option<Sort>, row: &Row, now_us: i64) -> SortKey {
    let Some(sort) = sort else {
        return SortKey::default();
    };
    let sign = |v: i128| if sort.descending { -v } else { v };
    let missing = SortKey {
        missing: true,
        major: 0,
        minor: 0,
    };
    let present = |major: u32, minor: i128| SortKey {
        missing: false,
        major,
        minor,
    };
    match sort.field {
        SortField::AdvertisedPrice => present(row.currency, sign(i128::from(row.price_minor))),
        SortField::Year => present(0, sign(i128::from(row.year))),
        SortField::Odometer => {
            if row.odometer_mm == NO_ODOMETER {
                missing
            } else {
                present(0, sign(row.odometer_mm))
            }
        }
        SortField::InventoryAgeDays => {
            if row.basis_us == NO_BASIS || row.basis_us > now_us {
                missing
            } else {
                // Greater age = earlier basis: ascending age is descending basis.
                present(0, -sign(i128::from(row.basis_us)))
            }
        }
        SortField::ObservedAt => present(0, sign(i128::from(row.observed_us))),
    }
}

/// A matching vehicle competing for a place on the page. Its
/// `vehicle_id` is read (from the index's arena) only to break a tie.
struct Cand<'a> {
    key: SortKey,
    index: &'a SnapshotIndex,
    slot: u32,
    row: u32,
}

impl Cand<'_> {
    fn vehicle_id(&self) -> &str {
        self.index.vehicle_id(self.row as usize)
    }

    fn cmp_key(&self, key: &SortKey, vehicle_id: &str, rooftop_id: &str) -> Ordering {
        self.key
            .cmp(key)
            .then_with(|| self.vehicle_id().cmp(vehicle_id))
            .then_with(|| self.index.rooftop_id().cmp(rooftop_id))
    }
}

impl PartialEq for Cand<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Cand<'_> {}
impl PartialOrd for Cand<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Cand<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key).then_with(|| {
            self.vehicle_id()
                .cmp(other.vehicle_id())
                .then_with(|| self.index.rooftop_id().cmp(other.index.rooftop_id()))
        })
    }
}

/// The filter of one query specialized to one snapshot.
struct Prepared {
    make: Option<Vec<bool>>,
    model: Option<Vec<bool>>,
    /// Rows matching every text token (bitmap), when there is a query.
    text: Option<Vec<u64>>,
    /// Inclusive upper bound on the basis for `inventory_age_min_days`.
    basis_max_us: Option<i128>,
    /// Exclusive lower bound on the basis for `inventory_age_max_days`.
    basis_min_us: Option<i128>,
    /// Availability codes replacing the feed's, by row (overlay).
    availability: std::collections::HashMap<usize, u8>,
}

impl Prepared {
    /// The effective availability code of row `i`.
    fn availability(&self, i: usize, r: &Row) -> u8 {
        if self.availability.is_empty() {
            return r.availability;
        }
        self.availability.get(&i).copied().unwrap_or(r.availability)
    }
}

/// Availability statuses that replace the feed's asserted status for some
/// vehicles: rooftop id → (vehicle id, DAP status, observation time). An
/// entry applies only when observed after the vehicle's feed record;
/// statuses outside the DAP vocabulary count as `unknown`.
pub type AvailabilityOverlay =
    std::collections::HashMap<String, Vec<(String, String, DateTime<Utc>)>>;

const FIRST_YEAR: i32 = 1886;
const YEARS: usize = 315; // 1886..=2200, the schema's range

struct Counts {
    make: Vec<u64>,
    model: Vec<u64>,
    year: Vec<u64>,
    /// Years outside the schema range (never produced by ingest).
    other_years: BTreeMap<i32, u64>,
    condition: [u64; 4],
    vehicle_type: [u64; 9],
    availability: [u64; 7],
}

impl Counts {
    fn add_year(&mut self, year: i32, n: u64) {
        match usize::try_from(year - FIRST_YEAR) {
            Ok(y) if y < YEARS => self.year[y] += n,
            _ => *self.other_years.entry(year).or_insert(0) += n,
        }
    }

    fn add(&mut self, r: &Row, availability: u8) {
        self.make[r.make as usize] += 1;
        self.model[r.model as usize] += 1;
        self.add_year(r.year, 1);
        self.condition[usize::from(r.condition)] += 1;
        self.vehicle_type[usize::from(r.vehicle_type)] += 1;
        self.availability[usize::from(availability)] += 1;
    }
}

fn row_matches(f: &Filters, p: &Prepared, index: &SnapshotIndex, i: usize, now_us: i64) -> bool {
    if let Some(bits) = &p.text
        && bits[i >> 6] & (1u64 << (i & 63)) == 0
    {
        return false;
    }
    let r = &index.rows[i];
    let bit = |m: Option<u16>, code: u8| m.is_none_or(|m| m & (1u16 << code) != 0);
    if !(bit(f.condition, r.condition)
        && bit(f.vehicle_type, r.vehicle_type)
        && bit(f.availability, p.availability(i, r))
        && bit(f.history, r.history)
        && bit(f.certification, r.certification))
    {
        return false;
    }
    let year = i64::from(r.year);
    if f.year_min.is_some_and(|m| year < m) || f.year_max.is_some_and(|m| year > m) {
        return false;
    }
    if let Some(pr) = &f.price
        && (r.currency != pr.currency
            || pr.min_minor.is_some_and(|m| r.price_minor < m)
            || pr.max_minor.is_some_and(|m| r.price_minor > m))
    {
        return false;
    }
    if (f.odometer_min_mm.is_some() || f.odometer_max_mm.is_some())
        && (r.odometer_mm == NO_ODOMETER
            || f.odometer_min_mm.is_some_and(|m| r.odometer_mm < m)
            || f.odometer_max_mm.is_some_and(|m| r.odometer_mm > m))
    {
        return false;
    }
    if p.basis_max_us.is_some() || p.basis_min_us.is_some() {
        let b = i128::from(r.basis_us);
        if r.basis_us == NO_BASIS
            || b > i128::from(now_us)
            || p.basis_max_us.is_some_and(|m| b > m)
            || p.basis_min_us.is_some_and(|m| b <= m)
        {
            return false;
        }
    }
    if let Some(m) = &p.make
        && !m[r.make as usize]
    {
        return false;
    }
    if let Some(m) = &p.model
        && !m[r.model as usize]
    {
        return false;
    }
    true
}

/// Prepares the filter for one snapshot; `None` when no row can match.
fn prepare(
    query: &SearchQuery,
    index: &SnapshotIndex,
    basis_max_us: Option<i128>,
    basis_min_us: Option<i128>,
    overlay: &AvailabilityOverlay,
    with_text: bool,
) -> Option<Prepared> {
    if index.organization_id() != query.organization_id {
        return None;
    }
    if let Some(ids) = &query.rooftop_ids
        && ids
            .binary_search_by(|r| r.as_str().cmp(index.rooftop_id()))
            .is_err()
    {
        return None;
    }
    let f = &query.filters;
    let make = f.make.as_deref().map(|m| index.makes.matching(m));
    let model = f.model.as_deref().map(|m| index.models.matching(m));
    if make.as_ref().is_some_and(|m| !m.contains(&true))
        || model.as_ref().is_some_and(|m| !m.contains(&true))
    {
        return None;
    }
    let text = if with_text {
        text_bits(query, index)?
    } else {
        None
    };
    let availability = overlay
        .get(index.rooftop_id())
        .into_iter()
        .flatten()
        .filter_map(|(vehicle_id, status, observed_at)| {
            let row = index.find_vehicle_id(vehicle_id)?;
            if observed_at.timestamp_micros() <= index.rows[row].observed_us {
                return None;
            }
            let code = AVAILABILITY
                .iter()
                .position(|a| a == status)
                .unwrap_or(AVAILABILITY.len() - 1);
            Some((row, u8::try_from(code).unwrap_or(6)))
        })
        .collect();
    Some(Prepared {
        make,
        model,
        text,
        basis_max_us,
        basis_min_us,
        availability,
    })
}

/// The rows matching every token of the query, as a bitmap (`None`
/// without tokens); `None` outside when no row can match.
fn text_bits(query: &SearchQuery, index: &SnapshotIndex) -> Option<Option<Vec<u64>>> {
    let mut text: Option<Vec<u64>> = None;
    for t in &query.tokens {
        let bits = index.text.rows_containing(t, index.len())?;
        text = Some(match text {
            None => bits,
            Some(mut acc) => {
                let mut any = 0u64;
                for (a, b) in acc.iter_mut().zip(&bits) {
                    *a &= *b;
                    any |= *a;
                }
                if any == 0 {
                    return None;
                }
                acc
            }
        });
    }
    Some(text)
}

/// How a search visits a snapshot: through its orders and posting lists
/// where they apply, or by visiting every row (the reference the indexed
/// plan is tested against).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Indexed,
    #[cfg(test)]
    Scan,
}

/// Offers a matching row that lies after the cursor to the page; false
/// when the page (full, and every member better) rejects it.
fn offer<'a>(heap: &mut BinaryHeap<Cand<'a>>, cand: Cand<'a>, limit: usize) -> bool {
    if heap.len() < limit {
        heap.push(cand);
        return true;
    }
    match heap.peek_mut() {
        Some(mut worst) if cand < *worst => {
            *worst = cand;
            true
        }
        _ => false,
    }
}

/// Runs `query` over the snapshots `indexes` (one per rooftop of the
/// resolved rooftop set; snapshots of another organization or outside
/// `query.rooftop_ids` are skipped) and returns the page after `after`
/// (the first page when `None`).
///
/// `now` is the instant inventory ages are computed for. For a
/// continuation page pass the first page's instant (the cursor's
/// `issued_at`) so the age filters select the same set on every page.
pub fn search(
    indexes: &[Arc<SnapshotIndex>],
    query: &SearchQuery,
    after: Option<&PageKey>,
    now: DateTime<Utc>,
) -> SearchPage {
    search_with_overlay(indexes, query, after, now, &AvailabilityOverlay::new())
}

/// [`search`] with the availability of some vehicles replaced by
/// `overlay` for the `availability` filter and facet.
pub fn search_with_overlay(
    indexes: &[Arc<SnapshotIndex>],
    query: &SearchQuery,
    after: Option<&PageKey>,
    now: DateTime<Utc>,
    overlay: &AvailabilityOverlay,
) -> SearchPage {
    run(indexes, query, after, now, overlay, Plan::Indexed)
}

/// [`search_with_overlay`] visiting every row of every snapshot: the
/// reference the indexed plan must equal.
#[cfg(test)]
pub(crate) fn search_by_scan(
    indexes: &[Arc<SnapshotIndex>],
    query: &SearchQuery,
    after: Option<&PageKey>,
    now: DateTime<Utc>,
    overlay: &AvailabilityOverlay,
) -> SearchPage {
    run(indexes, query, after, now, overlay, Plan::Scan)
}

fn run(
    indexes: &[Arc<SnapshotIndex>],
    query: &SearchQuery,
    after: Option<&PageKey>,
    now: DateTime<Utc>,
    overlay: &AvailabilityOverlay,
    plan: Plan,
) -> SearchPage {
    let now_us = now.timestamp_micros();
    let f = &query.filters;
    let limit = query.limit.clamp(1, MAX_LIMIT);
    let basis_max_us = f
        .inventory_age_min_days
        .map(|d| i128::from(now_us) - i128::from(d) * DAY_US);
    let basis_min_us = f
        .inventory_age_max_days
        .map(|d| i128::from(now_us) - (i128::from(d) + 1) * DAY_US);

    let mut heap: BinaryHeap<Cand<'_>> = BinaryHeap::with_capacity(limit + 1);
    let mut oldest_match_us: Vec<(usize, i64)> = Vec::new();
    let mut total = 0usize;
    let mut after_count = 0usize;
    let mut make_counts: Vec<(&str, &str, u64)> = Vec::new();
    let mut model_counts: Vec<(&str, &str, u64)> = Vec::new();
    let mut counts = Counts {
        make: Vec::new(),
        model: Vec::new(),
        year: vec![0; YEARS],
        other_years: BTreeMap::new(),
        condition: [0; 4],
        vehicle_type: [0; 9],
        availability: [0; 7],
    };

    for (slot, index) in indexes.iter().enumerate() {
        // A text query without filters is first tried as runs of the
        // facet order (`texted`), which needs no bitmap of its rows.
        let as_runs = plan == Plan::Indexed && texted::applies(query);
        let Some(mut prepared) =
            prepare(query, index, basis_max_us, basis_min_us, overlay, !as_runs)
        else {
            continue;
        };
        let index: &SnapshotIndex = index;
        counts.make.clear();
        counts.make.resize(index.makes.exact.len(), 0);
        counts.model.clear();
        counts.model.resize(index.models.exact.len(), 0);
        let position = slot;
        let mut oldest_us = i64::MAX;
        let slot = u32::try_from(slot).unwrap_or(u32::MAX);
        let row32 = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);

        // No filter and no text: every row matches, so the snapshot's
        // precomputed totals are the facets (an availability overlay moves
        // its few vehicles between availability buckets), and the page is
        // the next `limit` rows of the requested order after the cursor —
        // O(limit + log n) instead of a visit of every row
        // (docs/benchmarks.md "Search complexity").
        let bare = plan == Plan::Indexed && query.tokens.is_empty() && *f == Filters::default();
        let mut handled = false;
        if plan == Plan::Indexed && ranged::applies(query) {
            let ask = ranged::Ask {
                query,
                sort: query.sort,
                after,
                now_us,
                limit,
            };
            let sink = ranged::Sink {
                heap: &mut heap,
                counts: &mut counts,
                total: &mut total,
                after_count: &mut after_count,
            };
            oldest_us = ranged::search_snapshot(index, slot, &prepared, &ask, sink);
            handled = true;
        } else if as_runs {
            let sink = ranged::Sink {
                heap: &mut heap,
                counts: &mut counts,
                total: &mut total,
                after_count: &mut after_count,
            };
            match texted::search_snapshot(
                index,
                slot,
                &prepared,
                query,
                after,
                (limit, now_us),
                sink,
            ) {
                Some(oldest) => {
                    oldest_us = oldest;
                    handled = true;
                }
                None => match text_bits(query, index) {
                    Some(bits) => prepared.text = bits,
                    None => continue,
                },
            }
        }
        if !handled {
            let order: Option<&[u32]> = match query.sort {
                _ if !bare => None,
                None => Some(&index.by_vehicle_id),
                Some(sort) => sorted_rows(index, sort, now_us),
            };
            if let Some(order) = order {
                let key = |row: u32| sort_key(query.sort, &index.rows[row as usize], now_us);
                let start = after.map_or(0, |a| {
                    order.partition_point(|&row| {
                        let cand = Cand {
                            key: key(row),
                            index,
                            slot,
                            row,
                        };
                        cand.cmp_key(&a.sort, &a.vehicle_id, &a.rooftop_id) != Ordering::Greater
                    })
                });
                let t = &index.totals;
                total += index.len();
                after_count += index.len() - start;
                oldest_us = oldest_us.min(t.oldest_observed_us);
                for (c, n) in counts.make.iter_mut().zip(&t.make) {
                    *c += n;
                }
                for (c, n) in counts.model.iter_mut().zip(&t.model) {
                    *c += n;
                }
                for (year, n) in &t.year {
                    match usize::try_from(year - FIRST_YEAR) {
                        Ok(y) if y < YEARS => counts.year[y] += n,
                        _ => *counts.other_years.entry(*year).or_insert(0) += n,
                    }
                }
                for (c, n) in counts.condition.iter_mut().zip(&t.condition) {
                    *c += n;
                }
                for (c, n) in counts.vehicle_type.iter_mut().zip(&t.vehicle_type) {
                    *c += n;
                }
                for (c, n) in counts.availability.iter_mut().zip(&t.availability) {
                    *c += n;
                }
                for (&row, &code) in &prepared.availability {
                    counts.availability[usize::from(index.rows[row].availability)] -= 1;
                    counts.availability[usize::from(code)] += 1;
                }
                for &row in &order[start..] {
                    let cand = Cand {
                        key: key(row),
                        index,
                        slot,
                        row,
                    };
                    if !offer(&mut heap, cand, limit) {
                        break;
                    }
                }
            } else {
                // A make or model filter visits the rows of the matching
                // spellings only.
                let candidates = match (&f.vin, &f.stock_number, plan) {
                    (None, None, Plan::Indexed) => candidate_rows(index, &prepared),
                    _ => None,
                };
                match (&f.vin, &f.stock_number, query.sort, candidates) {
                    (None, None, None, None) => {
                        // Default order: walk rows in vehicle_id order, so rows before
                        // the cursor are found by position and, once the page rejects a
                        // row, every later row of this snapshot is rejected too.
                        let start = after.map_or(0, |a| first_after(index, a));
                        let mut saturated = false;
                        for (pos, &row) in index.by_vehicle_id.iter().enumerate() {
                            let i = row as usize;
                            if !row_matches(f, &prepared, index, i, now_us) {
                                continue;
                            }
                            total += 1;
                            oldest_us = oldest_us.min(index.rows[i].observed_us);
                            counts.add(&index.rows[i], prepared.availability(i, &index.rows[i]));
                            if pos < start {
                                continue;
                            }
                            after_count += 1;
                            if !saturated {
                                let cand = Cand {
                                    key: SortKey::default(),
                                    index,
                                    slot,
                                    row,
                                };
                                saturated = !offer(&mut heap, cand, limit);
                            }
                        }
                    }
                    (vin, stock, sort, candidates) => {
                        let subset: Option<Vec<u32>> = match (vin, stock) {
                            (Some(vin), stock) => Some(
                                index
                                    .find_vin(vin)
                                    .iter()
                                    .copied()
                                    .filter(|i| {
                                        stock.as_deref().is_none_or(|s| {
                                            index.stock_number(*i as usize) == Some(s)
                                        })
                                    })
                                    .collect(),
                            ),
                            (None, Some(stock)) => Some(index.find_stock_number(stock).to_vec()),
                            (None, None) => candidates,
                        };
                        // Default order over a subset: the cursor and the page
                        // compare each row's rank in vehicle_id order (integers);
                        // only this snapshot's best `limit` meet the other
                        // snapshots' rows (and their strings) in the page.
                        let start = match (sort, after) {
                            (None, Some(a)) => first_after(index, a),
                            _ => 0,
                        };
                        let mut best: BinaryHeap<u32> = BinaryHeap::new();
                        // Without any filter, the subset is the rows of
                        // the text query's bitmap: every one matches.
                        let exact = subset.is_some() && *f == Filters::default();
                        let mut visit = |i: usize| {
                            if !exact && !row_matches(f, &prepared, index, i, now_us) {
                                return;
                            }
                            let r = &index.rows[i];
                            total += 1;
                            oldest_us = oldest_us.min(r.observed_us);
                            counts.add(r, prepared.availability(i, r));
                            if sort.is_none() {
                                let rank = index.vehicle_id_rank[i];
                                if (rank as usize) < start {
                                    return;
                                }
                                after_count += 1;
                                if best.len() < limit {
                                    best.push(rank);
                                } else if best.peek().is_some_and(|worst| rank < *worst) {
                                    best.pop();
                                    best.push(rank);
                                }
                                return;
                            }
                            let cand = Cand {
                                key: sort_key(sort, r, now_us),
                                index,
                                slot,
                                row: row32(i),
                            };
                            if let Some(a) = after
                                && cand.cmp_key(&a.sort, &a.vehicle_id, &a.rooftop_id)
                                    != Ordering::Greater
                            {
                                return;
                            }
                            after_count += 1;
                            offer(&mut heap, cand, limit);
                        };
                        match subset {
                            Some(rows) => rows.iter().for_each(|i| visit(*i as usize)),
                            None => (0..index.len()).for_each(visit),
                        }
                        for rank in best {
                            let cand = Cand {
                                key: SortKey::default(),
                                index,
                                slot,
                                row: index.by_vehicle_id[rank as usize],
                            };
                            offer(&mut heap, cand, limit);
                        }
                    }
                }
            }
        }
        if oldest_us != i64::MAX {
            oldest_match_us.push((position, oldest_us));
        }
        for (id, c) in counts.make.iter().enumerate() {
            if *c > 0 {
                make_counts.push((&index.makes.lower[id], &index.makes.exact[id], *c));
            }
        }
        for (id, c) in counts.model.iter().enumerate() {
            if *c > 0 {
                model_counts.push((&index.models.lower[id], &index.models.exact[id], *c));
            }
        }
    }

    // In `Cand`'s order, each vehicle id read once rather than in each of
    // the hundred-odd comparisons of a page of 20 (3% of a broad search:
    // docs/benchmarks.md "Page reads from an index image").
    let mut page: Vec<(Cand<'_>, &str)> = heap
        .into_vec()
        .into_iter()
        .map(|c| {
            let id = c.index.vehicle_id(c.row as usize);
            (c, id)
        })
        .collect();
    page.sort_unstable_by(|(a, a_id), (b, b_id)| {
        a.key.cmp(&b.key).then_with(|| {
            a_id.cmp(b_id)
                .then_with(|| a.index.rooftop_id().cmp(b.index.rooftop_id()))
        })
    });
    let page: Vec<Cand<'_>> = page.into_iter().map(|(c, _)| c).collect();
    let next = if after_count > page.len() {
        page.last().map(|c| PageKey {
            sort: c.key,
            vehicle_id: c.vehicle_id().to_owned(),
            rooftop_id: c.index.rooftop_id().to_owned(),
        })
    } else {
        None
    };
    let vehicles = page
        .iter()
        .map(|c| (Arc::clone(&indexes[c.slot as usize]), c.row as usize))
        .collect();
    let sort_keys = page.iter().map(|c| c.key).collect();

    let mut years: Vec<(FacetKey, u64)> = counts
        .year
        .iter()
        .enumerate()
        .map(|(y, c)| (FacetKey::Int(i64::try_from(y).unwrap_or(0) + 1886), *c))
        .collect();
    years.extend(
        counts
            .other_years
            .iter()
            .map(|(y, c)| (FacetKey::Int(i64::from(*y)), *c)),
    );
    let mut facets = BTreeMap::new();
    facets.insert("make", spelled_facet(make_counts));
    facets.insert("model", spelled_facet(model_counts));
    facets.insert("year", ordered(years));
    facets.insert("condition", coded_facet(&CONDITIONS, &counts.condition));
    facets.insert(
        "vehicle_type",
        coded_facet(&VEHICLE_TYPES, &counts.vehicle_type),
    );
    facets.insert(
        "availability",
        coded_facet(&AVAILABILITY, &counts.availability),
    );

    SearchPage {
        vehicles,
        total,
        facets,
        next,
        sort_keys,
        oldest_match_us,
    }
}

impl SearchPage {
    /// The keyset position just after the page's vehicle `k`: where the
    /// next page starts when this one ends after `k` (a page cut short by
    /// the result budget continues there, skipping and repeating nothing).
    pub fn key_of(&self, k: usize) -> Option<PageKey> {
        let (index, row) = self.vehicles.get(k)?;
        Some(PageKey {
            sort: *self.sort_keys.get(k)?,
            vehicle_id: index.vehicle_id(*row).to_owned(),
            rooftop_id: index.rooftop_id().to_owned(),
        })
    }
}

pub use super::pieces::inventory_age_days;

#[cfg(test)]
mod typed;
