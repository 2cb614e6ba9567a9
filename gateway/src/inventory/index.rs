//! The immutable in-memory index of one rooftop snapshot.
//!
//! A [`SnapshotIndex`] is built once from the vehicles of one snapshot and
//! never changes afterwards; readers share it through an `Arc`, so a search
//! never sees two imports mixed and needs no lock. Everything a search
//! filters or sorts on is precomputed into one 64-byte row per vehicle
//! (one cache line), enumerations are small integer codes, repeated
//! strings (make, model) are interned per snapshot, and the free-text
//! query runs against a deduplicated vocabulary of lower-cased words
//! instead of per-vehicle strings.
//!
//! Memory: each record is kept as one LZ4-compressed compact JSON string (a
//! decoded record, with its media, charges and evidence, costs several times
//! its text),
//! and is decoded only for the few vehicles a page renders
//! ([`SnapshotIndex::record`]). Identifiers live in contiguous arenas.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::model::VehicleRecord;
use super::pieces::{Detail, Pieces};

mod checkpoints;
mod image;
mod payload;
pub(crate) mod ranges;
mod rendered;
mod text;
pub(crate) use image::ImageCache;
use payload::PayloadWriter;
use ranges::MakePriceOrder;
pub use rendered::RowPieces;
use rendered::{PieceArena, PieceNumbers, pieces_payload, read_pieces};
pub(crate) use text::TextIndex;

/// The identity of one snapshot, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotMeta {
    pub snapshot_id: String,
    pub organization_id: String,
    pub rooftop_id: String,
    /// Monotonic per rooftop (the store's snapshot version).
    pub version: i64,
    /// When the snapshot was imported.
    pub created_at: DateTime<Utc>,
}

/// `condition` codes (DAP `vehicleCondition`), in wire order.
pub(crate) const CONDITIONS: [&str; 4] = ["new", "used", "certified", "demo"];
/// `vehicle_type` codes; code 0 means unknown (absent).
pub(crate) const VEHICLE_TYPES: [&str; 9] = [
    "unknown",
    "car",
    "truck",
    "suv",
    "van",
    "motorcycle",
    "rv",
    "trailer",
    "other",
];
/// Availability status codes (DAP `availability.status`).
pub(crate) const AVAILABILITY: [&str; 7] = [
    "available",
    "in_transit",
    "on_hold",
    "pending_sale",
    "sold",
    "unavailable",
    "unknown",
];
/// History-report status codes; `None` on the record is `unknown`.
pub(crate) const HISTORY: [&str; 5] = [
    "available",
    "not_available",
    "restricted",
    "unknown",
    "conflicting",
];
/// Certification type codes; `None` on the record is `unknown`.
pub(crate) const CERTIFICATION: [&str; 5] = [
    "manufacturer_cpo",
    "dealer_certified",
    "third_party_certified",
    "not_certified",
    "unknown",
];

/// Position of `value` in `table`, or `fallback` for a value outside it
/// (ingest validated the enums; the fallback only keeps a bad row visible
/// as "unknown" instead of failing the whole snapshot).
pub(crate) fn code_of(table: &[&str], value: &str, fallback: u8) -> u8 {
    table
        .iter()
        .position(|t| *t == value)
        .and_then(|p| u8::try_from(p).ok())
        .unwrap_or(fallback)
}

/// Sentinel for an unknown odometer in [`Row::odometer_mm`].
pub(crate) const NO_ODOMETER: i128 = i128::MIN;
/// Sentinel for an unknown inventory-age basis in [`Row::basis_us`].
pub(crate) const NO_BASIS: i64 = i64::MIN;

/// Packs an ISO 4217 code into an integer whose order is the code's
/// byte order (`"CAD" < "USD"` as strings and as packed integers).
pub(crate) fn pack_currency(code: &str) -> u32 {
    code.bytes()
        .take(3)
        .fold(0u32, |acc, b| (acc << 8) | u32::from(b))
}

/// The hot, precomputed facts of one vehicle: exactly one cache line.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub(crate) struct Row {
    /// Odometer in millimetres (exact), or [`NO_ODOMETER`].
    pub odometer_mm: i128,
    pub price_minor: i64,
    /// Inventory-age basis (stocked_at, else first_public_listing_at) in
    /// microseconds since the epoch, or [`NO_BASIS`].
    pub basis_us: i64,
    /// `source.observed_at` in microseconds since the epoch.
    pub observed_us: i64,
    /// Interned exact make spelling (index into `makes`).
    pub make: u32,
    /// Interned exact model spelling (index into `models`).
    pub model: u32,
    /// [`pack_currency`] of the advertised price's currency.
    pub currency: u32,
    pub year: i32,
    pub condition: u8,
    pub vehicle_type: u8,
    pub availability: u8,
    pub history: u8,
    pub certification: u8,
}

/// Facet counts and the oldest observation of the whole snapshot,
/// computed once when it is indexed: a search without filters reads these
/// instead of visiting every row.
#[derive(Debug, Default)]
pub(crate) struct Totals {
    /// By interned make id.
    pub make: Vec<u64>,
    /// By interned model id.
    pub model: Vec<u64>,
    pub year: std::collections::BTreeMap<i32, u64>,
    pub condition: [u64; 4],
    pub vehicle_type: [u64; 9],
    /// By the feed's availability code (no overlay).
    pub availability: [u64; 7],
    /// Smallest `observed_us` of any row; `i64::MAX` when empty.
    pub oldest_observed_us: i64,
}

impl Totals {
    fn of(rows: &[Row], makes: usize, models: usize) -> Totals {
        let mut t = Totals {
            make: vec![0; makes],
            model: vec![0; models],
            oldest_observed_us: i64::MAX,
            ..Totals::default()
        };
        for r in rows {
            t.make[r.make as usize] += 1;
            t.model[r.model as usize] += 1;
            *t.year.entry(r.year).or_insert(0) += 1;
            t.condition[usize::from(r.condition)] += 1;
            t.vehicle_type[usize::from(r.vehicle_type)] += 1;
            t.availability[usize::from(r.availability)] += 1;
            t.oldest_observed_us = t.oldest_observed_us.min(r.observed_us);
        }
        t
    }
}

/// Interned strings of one snapshot with their lower-cased forms.
#[derive(Debug, Default)]
pub(crate) struct Interner {
    /// Exact spellings, by id.
    pub exact: Vec<Box<str>>,
    /// Lower-cased spelling of each id.
    pub lower: Vec<Box<str>>,
    ids: HashMap<Box<str>, u32>,
}

impl Interner {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(id) = self.ids.get(s) {
            return *id;
        }
        let id = u32::try_from(self.exact.len()).unwrap_or(u32::MAX);
        self.exact.push(s.into());
        self.lower.push(s.to_lowercase().into());
        self.ids.insert(s.into(), id);
        id
    }

    fn finish(&mut self) {
        // The map is only needed while building.
        self.ids = HashMap::new();
    }

    /// Ids whose lower-cased spelling equals one of `wanted` (already
    /// lower-cased), as a dense membership table.
    pub fn matching(&self, wanted: &[String]) -> Vec<bool> {
        self.lower
            .iter()
            .map(|l| wanted.iter().any(|w| **w == **l))
            .collect()
    }
}

/// The rows of each interned id (make or model), ascending: a filter on
/// a few makes or models visits their rows instead of every row of the
/// snapshot (docs/benchmarks.md "Search complexity").
#[derive(Debug, Default)]
pub(crate) struct Postings {
    /// `rows[ends[id - 1]..ends[id]]` are the rows of `id`.
    ends: Vec<u32>,
    rows: Vec<u32>,
}

impl Postings {
    /// Counting sort of the rows by `id_of`, for ids below `ids`.
    fn build(n: usize, ids: usize, id_of: impl Fn(usize) -> u32) -> Postings {
        let mut ends = vec![0u32; ids];
        for i in 0..n {
            ends[id_of(i) as usize] += 1;
        }
        let mut acc = 0u32;
        for e in &mut ends {
            acc += *e;
            *e = acc;
        }
        let mut fill: Vec<u32> = ends.clone();
        let mut rows = vec![0u32; n];
        // Filling from the back keeps each id's rows ascending.
        for i in (0..n).rev() {
            let slot = &mut fill[id_of(i) as usize];
            *slot -= 1;
            rows[*slot as usize] = row_u32(i);
        }
        Postings { ends, rows }
    }

    /// The rows of `id`, ascending.
    pub fn rows(&self, id: usize) -> &[u32] {
        let a = if id == 0 {
            0
        } else {
            self.ends[id - 1] as usize
        };
        &self.rows[a..self.ends[id] as usize]
    }

    fn heap_bytes(&self) -> usize {
        (self.ends.len() + self.rows.len()) * 4
    }
}

/// How many row orders a snapshot can hold: one per sort field and
/// direction (`search::order_slot`).
pub(crate) const SORT_ORDERS: usize = 10;

/// Strings of one field for every row, stored contiguously; an empty
/// string means absent (none of the fields kept here can be empty).
#[derive(Debug, Default)]
struct Arena {
    text: String,
    ends: Vec<u32>,
}

impl Arena {
    fn push(&mut self, s: Option<&str>) {
        self.text.push_str(s.unwrap_or(""));
        self.ends.push(row_u32(self.text.len()));
    }

    fn get(&self, row: usize) -> &str {
        let a = if row == 0 {
            0
        } else {
            self.ends[row - 1] as usize
        };
        &self.text[a..self.ends[row] as usize]
    }

    fn shrink(&mut self) {
        self.text.shrink_to_fit();
    }
}

/// One rooftop snapshot, indexed for search and unit lookups. Immutable;
/// share it with `Arc<SnapshotIndex>`.
#[derive(Debug)]
pub struct SnapshotIndex {
    meta: SnapshotMeta,
    inventory_sla_seconds: u32,
    /// Per row, the record as LZ4-compressed compact JSON (entry `2 *
    /// row`, see the module doc) and its LZ4 pieces (entry `2 * row + 1`):
    /// on the heap, or in the snapshot's index image (docs/operations.md
    /// "Index images").
    payloads: payload::Payloads,
    pub(crate) rows: Vec<Row>,
    pub(crate) makes: Interner,
    pub(crate) models: Interner,
    /// Rows by interned make id and by interned model id.
    pub(crate) make_rows: Postings,
    pub(crate) model_rows: Postings,
    /// The rows in the total order of each sort (field and direction),
    /// built on the first search that needs it: a sorted search without
    /// filters then reads a page from its cursor position instead of
    /// ranking every row (docs/benchmarks.md "Search complexity"). Built
    /// lazily so that loading a snapshot costs nothing for sorts nobody
    /// asks for.
    pub(crate) orders: [std::sync::OnceLock<Box<[u32]>>; SORT_ORDERS],
    /// The latest inventory-age basis of any row ([`NO_BASIS`] when none):
    /// while `now` is past it, no row's basis lies in the future, so the
    /// inventory-age order does not depend on `now`.
    pub(crate) max_basis_us: i64,
    /// The rows grouped by make then price with prefix facet counts, built
    /// on the first make or price filter ([`SnapshotIndex::make_price`]).
    make_price: std::sync::OnceLock<MakePriceOrder>,
    pub(crate) text: TextIndex,
    vehicle_ids: Arena,
    vins: Arena,
    stock_numbers: Arena,
    /// Row numbers sorted by `vehicle_id`.
    pub(crate) by_vehicle_id: Vec<u32>,
    /// Each row's position in `by_vehicle_id`: the default order compared
    /// as integers, not strings, when a search visits a subset of rows.
    pub(crate) vehicle_id_rank: Vec<u32>,
    /// Rows with a VIN, sorted by VIN.
    by_vin: Vec<u32>,
    /// Rows with a stock number, sorted by stock number.
    by_stock: Vec<u32>,
    sources: Vec<SourceSummary>,
    /// Each row's pre-rendered DAP JSON.
    pieces: PieceArena,
    pub(crate) totals: Totals,
    /// Rows whose rendering failed the vehicle schema when the snapshot
    /// was indexed ([`SnapshotIndex::check_pieces`]); sorted.
    failed: Vec<u32>,
    /// Why each of `failed` failed (kept for the image, which logs them
    /// again when it is read).
    failed_reasons: Vec<Box<str>>,
}

/// One distinct source of a snapshot: `(source_name, authority,
/// content_digest)` with the latest `observed_at` of its records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSummary {
    pub source_name: String,
    pub authority: String,
    pub content_digest: String,
    pub observed_at: DateTime<Utc>,
}

/// Counts `s` into the snapshot's distinct sources.
fn add_source(out: &mut Vec<SourceSummary>, s: &super::model::VehicleSource) {
    match out.iter_mut().find(|e| {
        e.source_name == s.source_name
            && e.authority == s.authority
            && e.content_digest == s.content_digest
    }) {
        Some(e) => e.observed_at = e.observed_at.max(s.observed_at),
        None => out.push(SourceSummary {
            source_name: s.source_name.clone(),
            authority: s.authority.clone(),
            content_digest: s.content_digest.clone(),
            observed_at: s.observed_at,
        }),
    }
}

fn micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

fn row_u32(i: usize) -> u32 {
    // A snapshot never holds 4 billion vehicles; saturate rather than wrap.
    u32::try_from(i).unwrap_or(u32::MAX)
}

impl SnapshotIndex {
    /// Builds the index. `records` are the snapshot's vehicles (any order;
    /// `vehicle_id` unique within the snapshot); `inventory_sla_seconds` is
    /// the rooftop's inventory freshness SLA.
    pub fn build(
        meta: SnapshotMeta,
        inventory_sla_seconds: u32,
        records: Vec<VehicleRecord>,
    ) -> SnapshotIndex {
        let n = records.len();
        Self::build_from(meta, inventory_sla_seconds, n, records)
    }

    /// [`SnapshotIndex::build`] from records as they come (e.g. from the
    /// store while it reads them): each record is indexed and dropped
    /// before the next, so the records of a large snapshot are never all
    /// in memory at once. `expected` is how many to reserve room for.
    pub fn build_from(
        meta: SnapshotMeta,
        inventory_sla_seconds: u32,
        expected: usize,
        records: impl IntoIterator<Item = VehicleRecord>,
    ) -> SnapshotIndex {
        let writer = PayloadWriter::heap(expected.min(1 << 22) * 2);
        match Self::build_into(meta, inventory_sla_seconds, expected, records, writer) {
            Ok((index, _)) => index,
            // A heap writer has no I/O to fail.
            Err(e) => unreachable!("payloads on the heap cannot fail: {e}"),
        }
    }

    /// [`SnapshotIndex::build_from`] with the payloads written by `writer`
    /// (on the heap, or into a new image file whose temporary path is
    /// returned); an error only when writing that file failed.
    pub(crate) fn build_into(
        meta: SnapshotMeta,
        inventory_sla_seconds: u32,
        expected: usize,
        records: impl IntoIterator<Item = VehicleRecord>,
        mut payloads: PayloadWriter,
    ) -> std::io::Result<(SnapshotIndex, Option<std::path::PathBuf>)> {
        // A reservation only: a stored count that is wrong costs a
        // reallocation, never an oversized allocation.
        let n = expected.min(1 << 22);
        let mut makes = Interner::default();
        let mut models = Interner::default();
        let mut rows = Vec::with_capacity(n);
        let mut vocab_ids: HashMap<String, u32> = HashMap::new();
        let mut vocab = String::new();
        let mut starts: Vec<u32> = Vec::new();
        let mut per_row: Vec<Vec<u32>> = Vec::with_capacity(n);
        let mut vehicle_ids = Arena::default();
        let mut vins = Arena::default();
        let mut stock_numbers = Arena::default();
        let mut sources: Vec<SourceSummary> = Vec::new();
        let mut pieces = PieceArena::default();

        for r in records {
            add_source(&mut sources, &r.source);
            let basis = r.stocked_at.or(r.first_public_listing_at);
            rows.push(Row {
                odometer_mm: r.odometer.map_or(NO_ODOMETER, |o| o.millimetres()),
                price_minor: r.advertised_price.amount_minor(),
                basis_us: basis.map_or(NO_BASIS, micros),
                observed_us: micros(r.source.observed_at),
                make: makes.intern(&r.make),
                model: models.intern(&r.model),
                currency: pack_currency(r.advertised_price.currency().code()),
                year: r.year,
                condition: code_of(&CONDITIONS, &r.condition, 1),
                vehicle_type: r
                    .vehicle_type
                    .as_deref()
                    .map_or(0, |t| code_of(&VEHICLE_TYPES, t, 0)),
                availability: code_of(&AVAILABILITY, &r.availability_status, 6),
                history: code_of(
                    &HISTORY,
                    r.history_report_status.as_deref().unwrap_or(""),
                    3,
                ),
                certification: code_of(
                    &CERTIFICATION,
                    r.certification_type.as_deref().unwrap_or(""),
                    4,
                ),
            });
            vehicle_ids.push(Some(&r.vehicle_id));
            vins.push(r.vin.as_deref());
            stock_numbers.push(r.stock_number.as_deref());

            let mut mine: Vec<u32> = Vec::with_capacity(16);
            let year = r.year.to_string();
            let fields = [
                Some(year.as_str()),
                Some(r.make.as_str()),
                Some(r.model.as_str()),
                r.trim.as_deref(),
                r.body_style.as_deref(),
                r.exterior_color.as_deref(),
                r.interior_color.as_deref(),
                Some(r.condition.as_str()),
                r.stock_number.as_deref(),
                r.vin.as_deref(),
            ];
            for field in fields.into_iter().flatten() {
                let lower = field.to_lowercase();
                for word in lower.split_whitespace() {
                    let id = match vocab_ids.get(word) {
                        Some(id) => *id,
                        None => {
                            let id = row_u32(starts.len());
                            starts.push(row_u32(vocab.len()));
                            vocab.push_str(word);
                            vocab.push('\n');
                            vocab_ids.insert(word.to_owned(), id);
                            id
                        }
                    };
                    if !mine.contains(&id) {
                        mine.push(id);
                    }
                }
            }
            per_row.push(mine);
            let rendered = Pieces::of(&r, inventory_sla_seconds);
            pieces.push(&rendered);
            // Serializing a record of this crate's own type cannot fail
            // (every map key is a string).
            // LZ4 keeps the record at about a third of its JSON (it is
            // decoded only for a unit read: disclosure, verify, offers).
            payloads.push(&lz4_flex::compress_prepend_size(
                &serde_json::to_vec(&r).unwrap_or_default(),
            ));
            payloads.push(&pieces_payload(&rendered));
        }
        let n = rows.len();
        rows.shrink_to_fit();
        pieces.numbers.shrink_to_fit();
        let (payloads, temporary) = payloads.finish()?;
        makes.finish();
        models.finish();
        vocab.shrink_to_fit();
        let text = TextIndex::build(&per_row, vocab, starts);
        drop(per_row);
        vehicle_ids.shrink();
        vins.shrink();
        stock_numbers.shrink();

        let mut by_vehicle_id: Vec<u32> = (0..n).map(row_u32).collect();
        by_vehicle_id.sort_by(|a, b| {
            vehicle_ids
                .get(*a as usize)
                .cmp(vehicle_ids.get(*b as usize))
        });
        let mut vehicle_id_rank = vec![0u32; n];
        for (position, row) in by_vehicle_id.iter().enumerate() {
            vehicle_id_rank[*row as usize] = row_u32(position);
        }
        let sorted_present = |arena: &Arena| {
            let mut v: Vec<u32> = (0..n)
                .filter(|i| !arena.get(*i).is_empty())
                .map(row_u32)
                .collect();
            v.sort_by(|a, b| arena.get(*a as usize).cmp(arena.get(*b as usize)));
            v
        };
        let by_vin = sorted_present(&vins);
        let by_stock = sorted_present(&stock_numbers);

        let totals = Totals::of(&rows, makes.exact.len(), models.exact.len());
        let make_rows = Postings::build(n, makes.exact.len(), |i| rows[i].make);
        let model_rows = Postings::build(n, models.exact.len(), |i| rows[i].model);
        let max_basis_us = rows.iter().map(|r| r.basis_us).max().unwrap_or(NO_BASIS);
        let index = SnapshotIndex {
            make_rows,
            model_rows,
            orders: Default::default(),
            make_price: std::sync::OnceLock::new(),
            max_basis_us,
            sources,
            meta,
            inventory_sla_seconds,
            payloads,
            rows,
            makes,
            models,
            text,
            vehicle_ids,
            vins,
            stock_numbers,
            by_vehicle_id,
            vehicle_id_rank,
            by_vin,
            by_stock,
            totals,
            pieces,
            failed: Vec::new(),
            failed_reasons: Vec::new(),
        };
        Ok((index, temporary))
    }

    /// Validate every row's rendering once, as written at `now`, with
    /// `check` (the DAP vehicle schema: each piece is validated where it is
    /// produced). A row that fails is remembered:
    /// responses that would include it are built as trees and go through
    /// the output schema check at request time, which refuses them as the
    /// gateway did before pre-rendering, and each failure is logged here
    /// with the vehicle id, so an operator learns of it when the snapshot
    /// loads rather than from a caller. Returns the number of failures.
    pub fn check_pieces(
        &mut self,
        now: DateTime<Utc>,
        check: &dyn Fn(&serde_json::Value) -> Result<(), String>,
    ) -> usize {
        let now_text = super::pieces::json_string(&super::pieces::timestamp(now));
        let mut out = String::new();
        let mut failed = Vec::new();
        let mut reasons = Vec::new();
        for row in 0..self.len() {
            let Some(buffer) = self.pieces(row) else {
                self.log_failure(row, "");
                failed.push(row_u32(row));
                reasons.push("".into());
                continue;
            };
            let pieces = buffer.get();
            // A used vehicle stocked "in the future" gains its tenure
            // summary only later: check that shape too, a day after.
            let later = pieces
                .stocked_us
                .and_then(DateTime::from_timestamp_micros)
                .filter(|stocked_at| *stocked_at > now)
                .map(|stocked_at| stocked_at + chrono::Duration::days(1));
            let mut verdict = Ok(());
            for at in std::iter::once(now).chain(later) {
                out.clear();
                let at_text = if at == now {
                    now_text.clone()
                } else {
                    super::pieces::json_string(&super::pieces::timestamp(at))
                };
                pieces.write(&mut out, at, &at_text, super::pieces::Mode::Live);
                verdict = verdict.and_then(|()| {
                    serde_json::from_str::<serde_json::Value>(&out)
                        .map_err(|e| format!("not JSON: {e}"))
                        .and_then(|v| check(&v))
                });
            }
            if let Err(reason) = verdict {
                self.log_failure(row, &reason);
                failed.push(row_u32(row));
                reasons.push(reason.into());
            }
        }
        self.failed = failed;
        self.failed_reasons = reasons;
        self.failed.len()
    }

    /// Logs that `row` failed [`SnapshotIndex::check_pieces`] for `reason`
    /// (empty: its pieces do not decompress); an index read from its image
    /// logs its stored failures again the same way (docs/operations.md
    /// "Index images").
    fn log_failure(&self, row: usize, reason: &str) {
        if reason.is_empty() {
            tracing::error!(
                vehicle.id = %self.vehicle_id(row),
                "a pre-rendered vehicle does not decompress; responses that include it are built per request"
            );
        } else {
            tracing::error!(
                organization.id = %self.meta.organization_id,
                rooftop.id = %self.meta.rooftop_id,
                snapshot.version = self.meta.version,
                vehicle.id = %self.vehicle_id(row),
                %reason,
                "vehicle rendering fails the DAP vehicle schema; responses that include it are refused as dealeragent.internal"
            );
        }
    }

    /// The pre-rendered parts of the vehicle at `row`.
    ///
    /// # Panics
    /// When `row >= self.len()`.
    pub fn pieces(&self, row: usize) -> Option<RowPieces<'_>> {
        self.pieces_in(row, Detail::Full)
    }

    /// [`SnapshotIndex::pieces`] with only what `detail` writes (a concise
    /// page never decodes the media and features of its vehicles).
    ///
    /// # Panics
    /// When `row >= self.len()`.
    pub fn pieces_in(&self, row: usize, detail: Detail) -> Option<RowPieces<'_>> {
        let numbers = self.pieces.numbers[row];
        self.payloads
            .read(2 * row + 1, |bytes| read_pieces(bytes, numbers, detail))
            .ok()?
    }

    /// Whether the row's rendering passed [`SnapshotIndex::check_pieces`]
    /// (true when it was never checked, e.g. in unit tests).
    pub fn piece_checked(&self, row: usize) -> bool {
        self.failed.binary_search(&row_u32(row)).is_err()
    }

    /// The rows grouped by make and price with their prefix facet counts
    /// (built on first use: O(n log n), about 5 bytes a vehicle).
    pub(crate) fn make_price(&self) -> &MakePriceOrder {
        self.make_price.get_or_init(|| {
            MakePriceOrder::build(&self.rows, self.makes.exact.len(), self.models.exact.len())
        })
    }

    /// The makes of this snapshot's vehicles, as published (for
    /// completion of a make argument).
    pub fn makes_in_stock(&self) -> impl Iterator<Item = &str> {
        self.makes
            .exact
            .iter()
            .zip(&self.totals.make)
            .filter(|(_, n)| **n > 0)
            .map(|(m, _)| &**m)
    }

    pub fn meta(&self) -> &SnapshotMeta {
        &self.meta
    }

    pub fn rooftop_id(&self) -> &str {
        &self.meta.rooftop_id
    }

    pub fn organization_id(&self) -> &str {
        &self.meta.organization_id
    }

    pub fn version(&self) -> i64 {
        self.meta.version
    }

    pub fn created_at(&self) -> DateTime<Utc> {
        self.meta.created_at
    }

    /// The rooftop's inventory freshness SLA this index was built with.
    pub fn inventory_sla_seconds(&self) -> u32 {
        self.inventory_sla_seconds
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The vehicle at `row`, decoded from its compact form (rows are the
    /// positions of the records given to [`SnapshotIndex::build`]). Decode
    /// only what you render: a page, or one unit.
    ///
    /// # Panics
    /// When `row >= self.len()`.
    pub fn record(&self, row: usize) -> VehicleRecord {
        // The blob was written by serde_json from this very type in
        // `build`, so reading it back cannot fail.
        // An image file is immutable once named and its length was checked
        // when it was loaded (docs/operations.md "Index images").
        self.payloads
            .get(2 * row)
            .ok()
            .and_then(|blob| lz4_flex::decompress_size_prepended(&blob).ok())
            .and_then(|json| serde_json::from_slice(&json).ok())
            .expect("index blob is a compressed VehicleRecord")
    }

    /// The record at `row` as the JSON text [`SnapshotIndex::record`]
    /// decodes, decompressed and not parsed: a caller that reads a few
    /// members parses them alone from it (`verify_availability` reads eight
    /// of about sixty, docs/benchmarks.md "verify_availability under 4x").
    pub fn record_json(&self, row: usize) -> Vec<u8> {
        self.payloads
            .get(2 * row)
            .ok()
            .and_then(|blob| lz4_flex::decompress_size_prepended(&blob).ok())
            .expect("index blob is a compressed VehicleRecord")
    }

    /// The gateway vehicle id at `row` (no decoding).
    pub fn vehicle_id(&self, row: usize) -> &str {
        self.vehicle_ids.get(row)
    }

    /// The VIN at `row`, when published (no decoding).
    pub fn vin(&self, row: usize) -> Option<&str> {
        Some(self.vins.get(row)).filter(|s| !s.is_empty())
    }

    /// The stock number at `row`, when published (no decoding).
    pub fn stock_number(&self, row: usize) -> Option<&str> {
        Some(self.stock_numbers.get(row)).filter(|s| !s.is_empty())
    }

    /// Row of the vehicle with this gateway id.
    pub fn find_vehicle_id(&self, vehicle_id: &str) -> Option<usize> {
        let i = self
            .by_vehicle_id
            .partition_point(|r| self.vehicle_id(*r as usize) < vehicle_id);
        self.by_vehicle_id
            .get(i)
            .map(|r| *r as usize)
            .filter(|r| self.vehicle_id(*r) == vehicle_id)
    }

    /// Rows with exactly this VIN (one, unless the source repeated it).
    pub fn find_vin(&self, vin: &str) -> &[u32] {
        equal_range(&self.by_vin, vin, |r| self.vins.get(r as usize))
    }

    /// Rows with exactly this stock number.
    pub fn find_stock_number(&self, stock_number: &str) -> &[u32] {
        equal_range(&self.by_stock, stock_number, |r| {
            self.stock_numbers.get(r as usize)
        })
    }

    /// Distinct sources of the snapshot's records (for response-level
    /// provenance). Small: one entry per imported file.
    pub fn sources(&self) -> &[SourceSummary] {
        &self.sources
    }

    /// Approximate heap bytes held by this index (for capacity planning).
    pub fn heap_bytes(&self) -> usize {
        self.payloads.heap_bytes()
            + self.pieces.heap_bytes()
            + self.rows.len() * std::mem::size_of::<Row>()
            + self.text.heap_bytes()
            + self.vehicle_ids.text.len()
            + self.vins.text.len()
            + self.stock_numbers.text.len()
            + self.len() * 12
            + (self.by_vehicle_id.len()
                + self.vehicle_id_rank.len()
                + self.by_vin.len()
                + self.by_stock.len())
                * 4
            + self.make_rows.heap_bytes()
            + self.model_rows.heap_bytes()
            + self
                .orders
                .iter()
                .filter_map(|o| o.get())
                .map(|o| o.len() * 4)
                .sum::<usize>()
            + self.make_price.get().map_or(0, MakePriceOrder::heap_bytes)
    }
}

fn equal_range<'a>(sorted: &'a [u32], key: &str, get: impl Fn(u32) -> &'a str) -> &'a [u32] {
    let lo = sorted.partition_point(|r| get(*r) < key);
    let hi = lo + sorted[lo..].partition_point(|r| get(*r) == key);
    &sorted[lo..hi]
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn row_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Row>(), 64);
    }

    #[test]
    fn packed_currency_orders_like_the_code() {
        assert!(pack_currency("CAD") < pack_currency("EUR"));
        assert!(pack_currency("EUR") < pack_currency("USD"));
        assert!(pack_currency("JPY") < pack_currency("KWD"));
    }
}
