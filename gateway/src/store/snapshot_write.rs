//! The streamed inventory snapshot writer, shared by both backends.
//!
//! An import hands the store its vehicles one at a time through a bounded
//! channel (a 134 MB feed must not be held in memory; docs/benchmarks.md
//! "Feed import memory").
//! Everything happens inside one transaction: every rooftop of the file gets
//! its next snapshot, or none does. The summary against the previous
//! snapshot is computed batch by batch, reading only the previous documents
//! of the vehicle ids in the batch, so the previous snapshot is never held
//! whole either. What stays in memory grows only with the number of
//! vehicles (their ids, VINs and stock numbers, for the uniqueness rules),
//! never with their content.
//!
//! The backends differ only in SQL dialect, so each implements the small
//! [`SnapshotTx`] trait and this module owns the logic once.
//!
//! An import may also ask for the identity of every vehicle it adds,
//! changes or removes ([`ChangeSink`], handed each one as it is found, so
//! the writer keeps none) and for the removal guard ([`RemovalGuard`]):
//! both are docs/inventory-feeds.md "Commands".

use std::collections::{BTreeMap, HashMap, HashSet};

use tokio::sync::mpsc;

use super::{
    SnapshotRecord, SourceRecord, StoreError, duplicate_in_snapshot, json_text,
    new_snapshot_identity,
};
use crate::inventory::model::{InventoryImportSummary, VehicleRecord};

/// Vehicles per batch: the documents of one batch (new and previous) are
/// all the vehicle content the writer holds at once.
pub(super) const WRITE_BATCH: usize = 500;

/// Channel capacity between the feed reader and the writer: enough to keep
/// both busy, small enough to bound memory (a few hundred records).
pub const FEED_CHANNEL_CAPACITY: usize = 256;

/// One message of a streamed snapshot write.
#[derive(Debug)]
pub enum SnapshotFeed {
    /// The next vehicle, in file order.
    Vehicle(Box<VehicleRecord>),
    /// The next vehicle, in file order, already written as the text the
    /// store keeps (an import's checked vehicles, docs/benchmarks.md
    /// "Import: checked once"): stored as it is, never serialized again.
    Stored(Box<StoredVehicle>),
    /// Every vehicle was sent and every rule passed: commit. A channel that
    /// closes without `End` means the reader failed, and nothing is written.
    End,
}

/// A vehicle with the text the store keeps of it: its ids, and `doc`, the
/// record's JSON text exactly as [`StoredVehicle::of`] writes it (what the
/// writer would write of the record itself, so a vehicle fed either way is
/// stored byte for byte alike).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredVehicle {
    pub organization_id: String,
    pub rooftop_id: String,
    pub vehicle_id: String,
    pub vin: Option<String>,
    pub stock_number: Option<String>,
    /// The record's advertised price, carried beside its text so that the
    /// price history point of an added vehicle never reads the text back
    /// (docs/operations.md "Price history").
    pub advertised_price: pricing::Money,
    pub doc: String,
}

impl StoredVehicle {
    /// The record's ids and its stored text.
    pub fn of(record: &VehicleRecord) -> Result<Self, StoreError> {
        Ok(Self {
            organization_id: record.organization_id.clone(),
            rooftop_id: record.rooftop_id.clone(),
            vehicle_id: record.vehicle_id.clone(),
            vin: record.vin.clone(),
            stock_number: record.stock_number.clone(),
            advertised_price: record.advertised_price,
            doc: json_text(record)?,
        })
    }

    /// [`StoredVehicle::of`] taking the record (its ids are moved, not copied).
    pub fn from_record(record: VehicleRecord) -> Result<Self, StoreError> {
        let doc = json_text(&record)?;
        Ok(Self {
            organization_id: record.organization_id,
            rooftop_id: record.rooftop_id,
            vehicle_id: record.vehicle_id,
            vin: record.vin,
            stock_number: record.stock_number,
            advertised_price: record.advertised_price,
            doc,
        })
    }

    /// The record back from its text (only a vehicle the previous snapshot
    /// also holds is read back, to compare their facts).
    fn record(&self) -> Result<VehicleRecord, StoreError> {
        serde_json::from_str(&self.doc).map_err(|e| {
            StoreError::Query(format!(
                "vehicle '{}': its checked record cannot be read back ({e}); nothing was \
                 imported",
                self.vehicle_id
            ))
        })
    }
}

/// A vehicle waiting in a batch: as its record, or already as stored text.
enum Pending {
    Record(Box<VehicleRecord>),
    Stored(StoredVehicle),
}

impl Pending {
    fn organization_id(&self) -> &str {
        match self {
            Self::Record(v) => &v.organization_id,
            Self::Stored(v) => &v.organization_id,
        }
    }

    fn rooftop_id(&self) -> &str {
        match self {
            Self::Record(v) => &v.rooftop_id,
            Self::Stored(v) => &v.rooftop_id,
        }
    }

    fn vehicle_id(&self) -> &str {
        match self {
            Self::Record(v) => &v.vehicle_id,
            Self::Stored(v) => &v.vehicle_id,
        }
    }

    fn vin(&self) -> Option<&str> {
        match self {
            Self::Record(v) => v.vin.as_deref(),
            Self::Stored(v) => v.vin.as_deref(),
        }
    }

    fn stock_number(&self) -> Option<&str> {
        match self {
            Self::Record(v) => v.stock_number.as_deref(),
            Self::Stored(v) => v.stock_number.as_deref(),
        }
    }

    /// The advertised price (a stored vehicle carries it beside its text).
    fn advertised_price(&self) -> pricing::Money {
        match self {
            Self::Record(v) => v.advertised_price,
            Self::Stored(v) => v.advertised_price,
        }
    }

    /// The record, borrowed or read back from its text.
    fn record(&self) -> Result<std::borrow::Cow<'_, VehicleRecord>, StoreError> {
        match self {
            Self::Record(v) => Ok(std::borrow::Cow::Borrowed(&**v)),
            Self::Stored(v) => v.record().map(std::borrow::Cow::Owned),
        }
    }

    fn into_stored(self) -> Result<StoredVehicle, StoreError> {
        match self {
            Self::Record(v) => StoredVehicle::from_record(*v),
            Self::Stored(v) => Ok(v),
        }
    }
}

/// What a streamed write covers.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotPlan<'a> {
    pub organization_id: &'a str,
    /// Every rooftop that gets a new snapshot, even one no vehicle names
    /// (an empty inventory).
    pub rooftops: &'a [String],
    pub source: &'a SourceRecord,
    /// Compute the summaries, write nothing.
    pub dry_run: bool,
}

/// What an import does to one vehicle of a rooftop against the rooftop's
/// previous snapshot (docs/inventory-feeds.md "Commands").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Its vehicle id is not in the previous snapshot.
    Added,
    /// Its facts differ from the previous snapshot's (provenance is not a
    /// fact).
    Changed,
    /// It is in the previous snapshot and not in the new one.
    Removed,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Changed => "changed",
            Self::Removed => "removed",
        }
    }
}

/// One vehicle an import adds, changes or removes, named the ways an
/// operator knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VehicleChange<'a> {
    pub rooftop_id: &'a str,
    pub kind: ChangeKind,
    pub vehicle_id: &'a str,
    pub stock_number: Option<&'a str>,
    pub vin: Option<&'a str>,
    /// For [`ChangeKind::Changed`]: the top-level fields of the vehicle
    /// record whose values differ, by name; empty otherwise.
    pub fields: Vec<String>,
}

/// Receives every [`VehicleChange`] of a write as it is found: added and
/// changed vehicles batch by batch in feed order, then each rooftop's
/// removed vehicles in vehicle id order. The writer keeps none of them, so
/// the sink decides what to hold.
pub trait ChangeSink: Send {
    fn change(&mut self, change: &VehicleChange<'_>);
}

/// The removal guard (docs/inventory-feeds.md "The removal guard"): an
/// import that would remove more than `max_percent` % of the vehicles of a
/// rooftop whose current snapshot holds at least `min_vehicles` is refused
/// whole (a truncated feed must not unpublish a rooftop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemovalGuard {
    /// 0 to 100: the largest share of a rooftop's current vehicles one
    /// import may remove (100 never refuses).
    pub max_percent: u8,
    /// Rooftops with fewer current vehicles are not guarded: a small
    /// rooftop that sells most of its stock is no sign of a broken feed.
    pub min_vehicles: u32,
}

impl RemovalGuard {
    /// The default share: more than half of a rooftop.
    pub const DEFAULT_MAX_PERCENT: u8 = 50;
    /// The default minimum: rooftops of 5 vehicles or more.
    pub const DEFAULT_MIN_VEHICLES: u32 = 5;

    /// Would removing `removed` of `previous` vehicles be refused?
    pub fn refuses(&self, previous: u32, removed: u32) -> bool {
        previous >= self.min_vehicles
            && u64::from(removed) * 100 > u64::from(self.max_percent) * u64::from(previous)
    }
}

impl Default for RemovalGuard {
    fn default() -> Self {
        Self {
            max_percent: Self::DEFAULT_MAX_PERCENT,
            min_vehicles: Self::DEFAULT_MIN_VEHICLES,
        }
    }
}

/// A rooftop the removal guard refused.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RemovalRefusal {
    pub rooftop_id: String,
    /// Vehicles the import would remove.
    pub removed: u32,
    /// Vehicles of the rooftop's current snapshot.
    pub previous: u32,
    /// The guard's share, in percent.
    pub max_percent: u8,
}

/// What an import asks of a streamed write besides its plan.
#[derive(Default)]
pub struct WriteChecks<'a> {
    /// Refuse the whole write when a rooftop would lose too many vehicles.
    pub removal_guard: Option<RemovalGuard>,
    /// Where each added, changed and removed vehicle is reported.
    pub changes: Option<&'a mut dyn ChangeSink>,
    /// Rooftops of the organization that a dry run may find missing from
    /// the store, because the dealers file of the same run adds them
    /// (`import bundle --dry-run` into a new store): planned as first
    /// snapshots instead of refused. A real write never uses it.
    pub planned_rooftops: &'a [String],
}

impl std::fmt::Debug for WriteChecks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteChecks")
            .field("removal_guard", &self.removal_guard)
            .field("changes", &self.changes.is_some())
            .field("planned_rooftops", &self.planned_rooftops)
            .finish()
    }
}

/// The outcome of a streamed write.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotWrite {
    /// One record per rooftop of the plan, in plan order: the snapshots
    /// written, or (dry run, refusal) that would have been.
    pub snapshots: Vec<SnapshotRecord>,
    /// The rooftops the removal guard refused; when there is any, nothing
    /// was written.
    pub refused: Vec<RemovalRefusal>,
}

/// One vehicle of a stored snapshot, by the ids an operator knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StoredIdentity {
    pub vehicle_id: String,
    pub vin: Option<String>,
    pub stock_number: Option<String>,
}

/// Vehicle identities read per query when listing removed vehicles.
const IDENTITY_PAGE: u32 = 1000;

/// The previous snapshot of a rooftop, as the writer needs it.
pub(super) struct PreviousSnapshot {
    pub snapshot_id: String,
    pub version: i64,
    pub vehicle_count: u32,
}

/// A backend's statements for one streamed write, all inside one open
/// transaction (committed by the backend after [`write_snapshots`] returns
/// `Ok` and the plan is not a dry run; dropped, hence rolled back, otherwise).
#[async_trait::async_trait]
pub(super) trait SnapshotTx: Send {
    /// Serialise imports of this rooftop (SQLite: the write lock, already
    /// held; PostgreSQL: a row lock) and fail, naming the real owner, when it
    /// is not a rooftop of the organization.
    async fn lock_rooftop(
        &mut self,
        organization_id: &str,
        rooftop_id: &str,
    ) -> Result<(), StoreError>;

    async fn previous(
        &mut self,
        organization_id: &str,
        rooftop_id: &str,
    ) -> Result<Option<PreviousSnapshot>, StoreError>;

    /// Insert the snapshot row (its count and summary are set at the end by
    /// [`SnapshotTx::finish_snapshot`]; the vehicles need the row first).
    async fn insert_snapshot(
        &mut self,
        snapshot: &SnapshotRecord,
        source_text: &str,
    ) -> Result<(), StoreError>;

    /// The documents of those of `ids` that the snapshot holds.
    async fn documents(
        &mut self,
        snapshot_id: &str,
        ids: &[&str],
    ) -> Result<Vec<VehicleRecord>, StoreError>;

    /// The identities of the snapshot's vehicles whose id sorts after
    /// `after` (byte order), in that order, at most `limit`.
    async fn identities_after(
        &mut self,
        snapshot_id: &str,
        after: &str,
        limit: u32,
    ) -> Result<Vec<StoredIdentity>, StoreError>;

    /// Insert a batch: each vehicle with its document text.
    async fn insert_vehicles(
        &mut self,
        snapshot_id: &str,
        batch: &[StoredVehicle],
    ) -> Result<(), StoreError>;

    async fn finish_snapshot(
        &mut self,
        snapshot_id: &str,
        vehicle_count: u32,
        summary_text: &str,
    ) -> Result<(), StoreError>;

    /// Record the price history points of a batch (docs/lint.md; the
    /// `price_history` table of migration 0012): each vehicle's advertised
    /// price in force from `valid_from`, the new snapshot's `created_at`.
    /// In as few statements as the engine allows: never one per vehicle.
    async fn insert_price_points(
        &mut self,
        organization_id: &str,
        rooftop_id: &str,
        valid_from: chrono::DateTime<chrono::Utc>,
        points: &[NewPricePoint],
    ) -> Result<(), StoreError>;
}

/// One price history point the writer records: a vehicle that first
/// appears in (or comes back to) a rooftop's snapshots, or whose advertised
/// price differs from the previous snapshot's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPricePoint {
    pub vehicle_id: String,
    pub amount_minor: i64,
    pub currency: &'static str,
}

/// One rooftop's part of the write.
struct RooftopWrite {
    snapshot: SnapshotRecord,
    previous: Option<PreviousSnapshot>,
    pending: Vec<Pending>,
    ids: HashSet<String>,
    vins: HashSet<String>,
    stock_numbers: HashSet<String>,
    /// Vehicles of the previous snapshot seen again.
    seen_before: u32,
}

/// Write (or, for a dry run, plan) the next snapshot of every rooftop of
/// `plan` from the vehicles arriving on `feed`. Returns one record per
/// rooftop in `plan.rooftops` order; for a dry run the records describe the
/// snapshots that would be written (nothing is). Each change is reported to
/// `checks.changes`; when `checks.removal_guard` refuses a rooftop, the
/// refusals are returned and the caller must not commit (no snapshot is
/// finished).
pub(super) async fn write_snapshots(
    tx: &mut dyn SnapshotTx,
    plan: SnapshotPlan<'_>,
    mut feed: mpsc::Receiver<SnapshotFeed>,
    mut checks: WriteChecks<'_>,
) -> Result<SnapshotWrite, StoreError> {
    let organization_id = plan.organization_id;
    let source_text = json_text(plan.source)?;
    // Locks in one order (byte order of the ids), so two imports naming
    // the same rooftops cannot deadlock on PostgreSQL.
    let mut order: Vec<&String> = plan.rooftops.iter().collect();
    order.sort();
    order.dedup();
    let mut rooftops: BTreeMap<String, RooftopWrite> = BTreeMap::new();
    for rooftop_id in order {
        let previous = match tx.lock_rooftop(organization_id, rooftop_id).await {
            Ok(()) => tx.previous(organization_id, rooftop_id).await?,
            Err(_) if plan.dry_run && checks.planned_rooftops.contains(rooftop_id) => None,
            Err(e) => return Err(e),
        };
        let (snapshot_id, created_at) = new_snapshot_identity();
        let snapshot = SnapshotRecord {
            snapshot_id,
            organization_id: organization_id.to_owned(),
            rooftop_id: rooftop_id.clone(),
            version: previous.as_ref().map_or(1, |p| p.version + 1),
            created_at,
            source: plan.source.clone(),
            vehicle_count: 0,
            summary: InventoryImportSummary::default(),
        };
        if !plan.dry_run {
            tx.insert_snapshot(&snapshot, &source_text).await?;
        }
        rooftops.insert(
            rooftop_id.clone(),
            RooftopWrite {
                snapshot,
                previous,
                pending: Vec::with_capacity(WRITE_BATCH),
                ids: HashSet::new(),
                vins: HashSet::new(),
                stock_numbers: HashSet::new(),
                seen_before: 0,
            },
        );
    }

    loop {
        match feed.recv().await {
            Some(fed @ (SnapshotFeed::Vehicle(_) | SnapshotFeed::Stored(_))) => {
                let vehicle = match fed {
                    SnapshotFeed::Vehicle(v) => Pending::Record(v),
                    SnapshotFeed::Stored(v) => Pending::Stored(*v),
                    SnapshotFeed::End => unreachable!("matched above"),
                };
                let Some(write) = rooftops
                    .get_mut(vehicle.rooftop_id())
                    .filter(|_| vehicle.organization_id() == organization_id)
                else {
                    return Err(foreign_vehicle(&vehicle, organization_id, plan.rooftops));
                };
                admit(write, &vehicle)?;
                write.pending.push(vehicle);
                if write.pending.len() >= WRITE_BATCH {
                    flush(tx, write, plan.dry_run, checks.changes.as_deref_mut()).await?;
                }
            }
            Some(SnapshotFeed::End) => break,
            None => {
                return Err(StoreError::Query(
                    "the inventory feed stopped before its end; nothing was imported".into(),
                ));
            }
        }
    }

    let mut refused = Vec::new();
    for write in rooftops.values_mut() {
        flush(tx, write, plan.dry_run, checks.changes.as_deref_mut()).await?;
        let previous_count = write.previous.as_ref().map_or(0, |p| p.vehicle_count);
        let summary = &mut write.snapshot.summary;
        summary.rows_read = write.snapshot.vehicle_count;
        summary.vehicles_removed = previous_count.saturating_sub(write.seen_before);
        if let (Some(sink), Some(previous)) = (checks.changes.as_deref_mut(), &write.previous)
            && summary.vehicles_removed > 0
        {
            report_removed(tx, write, previous, sink).await?;
        }
        let removed = write.snapshot.summary.vehicles_removed;
        if let Some(guard) = checks.removal_guard
            && guard.refuses(previous_count, removed)
        {
            refused.push(RemovalRefusal {
                rooftop_id: write.snapshot.rooftop_id.clone(),
                removed,
                previous: previous_count,
                max_percent: guard.max_percent,
            });
        }
    }
    if refused.is_empty() && !plan.dry_run {
        for write in rooftops.values() {
            tx.finish_snapshot(
                &write.snapshot.snapshot_id,
                write.snapshot.vehicle_count,
                &json_text(&write.snapshot.summary)?,
            )
            .await?;
        }
    }
    let mut done: HashMap<String, SnapshotRecord> = rooftops
        .into_iter()
        .map(|(rooftop_id, write)| (rooftop_id, write.snapshot))
        .collect();
    Ok(SnapshotWrite {
        snapshots: plan
            .rooftops
            .iter()
            .filter_map(|r| done.remove(r))
            .collect(),
        refused,
    })
}

/// Report the vehicles of the previous snapshot that the new one lacks:
/// the previous snapshot's identities are read a page at a time (never
/// whole) and compared with the ids the feed brought, until all
/// `vehicles_removed` are found.
async fn report_removed(
    tx: &mut dyn SnapshotTx,
    write: &RooftopWrite,
    previous: &PreviousSnapshot,
    sink: &mut (dyn ChangeSink + '_),
) -> Result<(), StoreError> {
    let mut left = write.snapshot.summary.vehicles_removed;
    let mut after = String::new();
    while left > 0 {
        let page = tx
            .identities_after(&previous.snapshot_id, &after, IDENTITY_PAGE)
            .await?;
        let Some(last) = page.last() else {
            break;
        };
        after.clone_from(&last.vehicle_id);
        for gone in page.iter().filter(|v| !write.ids.contains(&v.vehicle_id)) {
            sink.change(&VehicleChange {
                rooftop_id: &write.snapshot.rooftop_id,
                kind: ChangeKind::Removed,
                vehicle_id: &gone.vehicle_id,
                stock_number: gone.stock_number.as_deref(),
                vin: gone.vin.as_deref(),
                fields: Vec::new(),
            });
            left -= 1;
            if left == 0 {
                break;
            }
        }
        if page.len() < IDENTITY_PAGE as usize {
            break;
        }
    }
    Ok(())
}

/// The uniqueness rules of one snapshot (the database's unique indexes say
/// the same; checking here gives the readable error, and covers dry runs).
fn admit(write: &mut RooftopWrite, v: &Pending) -> Result<(), StoreError> {
    let rooftop_id = &write.snapshot.rooftop_id;
    if !write.ids.insert(v.vehicle_id().to_owned()) {
        return Err(duplicate_in_snapshot(
            "vehicle_id",
            v.vehicle_id(),
            rooftop_id,
        ));
    }
    if let Some(vin) = v.vin()
        && !write.vins.insert(vin.to_owned())
    {
        return Err(duplicate_in_snapshot("vin", vin, rooftop_id));
    }
    if let Some(stock_number) = v.stock_number()
        && !write.stock_numbers.insert(stock_number.to_owned())
    {
        return Err(duplicate_in_snapshot(
            "stock_number",
            stock_number,
            rooftop_id,
        ));
    }
    write.snapshot.vehicle_count =
        write.snapshot.vehicle_count.checked_add(1).ok_or_else(|| {
            StoreError::Query(format!(
                "too many vehicles in one snapshot of rooftop '{rooftop_id}'; nothing was imported"
            ))
        })?;
    Ok(())
}

/// Diff the pending batch against the previous snapshot (reporting each
/// added and changed vehicle to `changes`) and insert it.
async fn flush(
    tx: &mut dyn SnapshotTx,
    write: &mut RooftopWrite,
    dry_run: bool,
    mut changes: Option<&mut (dyn ChangeSink + '_)>,
) -> Result<(), StoreError> {
    if write.pending.is_empty() {
        return Ok(());
    }
    let batch = std::mem::take(&mut write.pending);
    let before: HashMap<String, VehicleRecord> = match &write.previous {
        None => HashMap::new(),
        Some(p) => {
            let ids: Vec<&str> = batch.iter().map(Pending::vehicle_id).collect();
            tx.documents(&p.snapshot_id, &ids)
                .await?
                .into_iter()
                .map(|v| (v.vehicle_id.clone(), v))
                .collect()
        }
    };
    let summary = &mut write.snapshot.summary;
    // Price history points (docs/lint.md): a new vehicle's price, and a
    // price that differs from the previous snapshot's; an unchanged price
    // writes nothing. Dry runs compute none.
    let mut points = Vec::new();
    let mut point = |vehicle_id: &str, price: pricing::Money| {
        if !dry_run {
            points.push(NewPricePoint {
                vehicle_id: vehicle_id.to_owned(),
                amount_minor: price.amount_minor(),
                currency: price.currency().code(),
            });
        }
    };
    for v in &batch {
        let change = match before.get(v.vehicle_id()) {
            None => {
                summary.vehicles_added += 1;
                point(v.vehicle_id(), v.advertised_price());
                Some((ChangeKind::Added, Vec::new()))
            }
            Some(old) => {
                write.seen_before += 1;
                let new = v.record()?;
                if old.advertised_price != new.advertised_price {
                    point(v.vehicle_id(), new.advertised_price);
                }
                if old.facts_differ(&new) {
                    summary.vehicles_changed += 1;
                    // Named only when someone listens: it costs two
                    // serializations per changed vehicle.
                    changes
                        .is_some()
                        .then(|| (ChangeKind::Changed, changed_fields(old, &new)))
                } else {
                    summary.vehicles_unchanged += 1;
                    None
                }
            }
        };
        if let (Some(sink), Some((kind, fields))) = (changes.as_deref_mut(), change) {
            sink.change(&VehicleChange {
                rooftop_id: &write.snapshot.rooftop_id,
                kind,
                vehicle_id: v.vehicle_id(),
                stock_number: v.stock_number(),
                vin: v.vin(),
                fields,
            });
        }
    }
    if !dry_run {
        let rows = batch
            .into_iter()
            .map(Pending::into_stored)
            .collect::<Result<Vec<_>, _>>()?;
        tx.insert_vehicles(&write.snapshot.snapshot_id, &rows)
            .await?;
        if !points.is_empty() {
            tx.insert_price_points(
                &write.snapshot.organization_id,
                &write.snapshot.rooftop_id,
                write.snapshot.created_at,
                &points,
            )
            .await?;
        }
    }
    write.pending = Vec::with_capacity(WRITE_BATCH);
    Ok(())
}

/// The top-level fields of two records of one vehicle whose values differ,
/// by their serialized names, provenance (`source`) excepted: it is not a
/// fact ([`VehicleRecord::facts_differ`]).
fn changed_fields(old: &VehicleRecord, new: &VehicleRecord) -> Vec<String> {
    let (Ok(serde_json::Value::Object(a)), Ok(serde_json::Value::Object(b))) =
        (serde_json::to_value(old), serde_json::to_value(new))
    else {
        return Vec::new();
    };
    let mut fields: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| k.as_str() != "source" && a.get(*k) != b.get(*k))
        .cloned()
        .collect();
    fields.sort();
    fields.dedup();
    fields
}

fn foreign_vehicle(v: &Pending, organization_id: &str, rooftops: &[String]) -> StoreError {
    let expected = match rooftops {
        [one] => format!("rooftop '{one}'"),
        many => format!("one of the rooftops {}", many.join(", ")),
    };
    StoreError::Query(format!(
        "vehicle '{}' belongs to rooftop '{}' of organization '{}', not to {expected} of \
         organization '{organization_id}' being imported; nothing was imported",
        v.vehicle_id(),
        v.rooftop_id(),
        v.organization_id()
    ))
}

/// Send `vehicles` then [`SnapshotFeed::End`]: the feed of an import
/// already held in memory (the demo seed, tests).
pub(super) async fn feed_slice(vehicles: &[VehicleRecord], feed: mpsc::Sender<SnapshotFeed>) {
    for v in vehicles {
        if feed
            .send(SnapshotFeed::Vehicle(Box::new(v.clone())))
            .await
            .is_err()
        {
            // The writer stopped (it failed): it reports why.
            return;
        }
    }
    // An error here means the writer already stopped, and it reports why.
    let _ = feed.send(SnapshotFeed::End).await;
}
