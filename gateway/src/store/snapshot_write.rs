//! The streamed inventory snapshot writer, shared by both backends.
//!
//! An import hands the store its vehicles one at a time through a bounded
//! channel (issue 11 item 6: a 134 MB feed must not be held in memory).
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
    /// Every vehicle was sent and every rule passed: commit. A channel that
    /// closes without `End` means the reader failed, and nothing is written.
    End,
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

    /// Insert a batch: each vehicle with its document text.
    async fn insert_vehicles(
        &mut self,
        snapshot_id: &str,
        batch: &[(VehicleRecord, String)],
    ) -> Result<(), StoreError>;

    async fn finish_snapshot(
        &mut self,
        snapshot_id: &str,
        vehicle_count: u32,
        summary_text: &str,
    ) -> Result<(), StoreError>;
}

/// One rooftop's part of the write.
struct RooftopWrite {
    snapshot: SnapshotRecord,
    previous: Option<PreviousSnapshot>,
    pending: Vec<VehicleRecord>,
    ids: HashSet<String>,
    vins: HashSet<String>,
    stock_numbers: HashSet<String>,
    /// Vehicles of the previous snapshot seen again.
    seen_before: u32,
}

/// Write (or, for a dry run, plan) the next snapshot of every rooftop of
/// `plan` from the vehicles arriving on `feed`. Returns one record per
/// rooftop in `plan.rooftops` order; for a dry run the records describe the
/// snapshots that would be written (nothing is).
pub(super) async fn write_snapshots(
    tx: &mut dyn SnapshotTx,
    plan: SnapshotPlan<'_>,
    mut feed: mpsc::Receiver<SnapshotFeed>,
) -> Result<Vec<SnapshotRecord>, StoreError> {
    let organization_id = plan.organization_id;
    let source_text = json_text(plan.source)?;
    // Locks in one order (byte order of the ids), so two imports naming
    // the same rooftops cannot deadlock on PostgreSQL.
    let mut order: Vec<&String> = plan.rooftops.iter().collect();
    order.sort();
    order.dedup();
    let mut rooftops: BTreeMap<String, RooftopWrite> = BTreeMap::new();
    for rooftop_id in order {
        tx.lock_rooftop(organization_id, rooftop_id).await?;
        let previous = tx.previous(organization_id, rooftop_id).await?;
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
            Some(SnapshotFeed::Vehicle(vehicle)) => {
                let vehicle = *vehicle;
                let Some(write) = rooftops
                    .get_mut(&vehicle.rooftop_id)
                    .filter(|_| vehicle.organization_id == organization_id)
                else {
                    return Err(foreign_vehicle(&vehicle, organization_id, plan.rooftops));
                };
                admit(write, &vehicle)?;
                write.pending.push(vehicle);
                if write.pending.len() >= WRITE_BATCH {
                    flush(tx, write, plan.dry_run).await?;
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

    let mut done: HashMap<String, SnapshotRecord> = HashMap::with_capacity(rooftops.len());
    for (rooftop_id, mut write) in rooftops {
        flush(tx, &mut write, plan.dry_run).await?;
        let summary = &mut write.snapshot.summary;
        summary.rows_read = write.snapshot.vehicle_count;
        summary.vehicles_removed = write
            .previous
            .as_ref()
            .map_or(0, |p| p.vehicle_count.saturating_sub(write.seen_before));
        if !plan.dry_run {
            tx.finish_snapshot(
                &write.snapshot.snapshot_id,
                write.snapshot.vehicle_count,
                &json_text(&write.snapshot.summary)?,
            )
            .await?;
        }
        done.insert(rooftop_id, write.snapshot);
    }
    Ok(plan
        .rooftops
        .iter()
        .filter_map(|r| done.remove(r))
        .collect())
}

/// The uniqueness rules of one snapshot (the database's unique indexes say
/// the same; checking here gives the readable error, and covers dry runs).
fn admit(write: &mut RooftopWrite, v: &VehicleRecord) -> Result<(), StoreError> {
    let rooftop_id = &write.snapshot.rooftop_id;
    if !write.ids.insert(v.vehicle_id.clone()) {
        return Err(duplicate_in_snapshot(
            "vehicle_id",
            &v.vehicle_id,
            rooftop_id,
        ));
    }
    if let Some(vin) = &v.vin
        && !write.vins.insert(vin.clone())
    {
        return Err(duplicate_in_snapshot("vin", vin, rooftop_id));
    }
    if let Some(stock_number) = &v.stock_number
        && !write.stock_numbers.insert(stock_number.clone())
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

/// Diff the pending batch against the previous snapshot and insert it.
async fn flush(
    tx: &mut dyn SnapshotTx,
    write: &mut RooftopWrite,
    dry_run: bool,
) -> Result<(), StoreError> {
    if write.pending.is_empty() {
        return Ok(());
    }
    let batch = std::mem::take(&mut write.pending);
    let before: HashMap<String, VehicleRecord> = match &write.previous {
        None => HashMap::new(),
        Some(p) => {
            let ids: Vec<&str> = batch.iter().map(|v| v.vehicle_id.as_str()).collect();
            tx.documents(&p.snapshot_id, &ids)
                .await?
                .into_iter()
                .map(|v| (v.vehicle_id.clone(), v))
                .collect()
        }
    };
    let summary = &mut write.snapshot.summary;
    for v in &batch {
        match before.get(&v.vehicle_id) {
            None => summary.vehicles_added += 1,
            Some(old) => {
                write.seen_before += 1;
                if old.facts_differ(v) {
                    summary.vehicles_changed += 1;
                } else {
                    summary.vehicles_unchanged += 1;
                }
            }
        }
    }
    if !dry_run {
        let rows = batch
            .into_iter()
            .map(|v| json_text(&v).map(|doc| (v, doc)))
            .collect::<Result<Vec<_>, _>>()?;
        tx.insert_vehicles(&write.snapshot.snapshot_id, &rows)
            .await?;
    }
    write.pending = Vec::with_capacity(WRITE_BATCH);
    Ok(())
}

fn foreign_vehicle(v: &VehicleRecord, organization_id: &str, rooftops: &[String]) -> StoreError {
    let expected = match rooftops {
        [one] => format!("rooftop '{one}'"),
        many => format!("one of the rooftops {}", many.join(", ")),
    };
    StoreError::Query(format!(
        "vehicle '{}' belongs to rooftop '{}' of organization '{}', not to {expected} of \
         organization '{organization_id}' being imported; nothing was imported",
        v.vehicle_id, v.rooftop_id, v.organization_id
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
