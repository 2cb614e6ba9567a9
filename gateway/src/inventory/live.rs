//! The live inventory: the immutable per-snapshot indexes this replica
//! serves, kept in step with the store.
//!
//! The store is the system of record. Every `refresh` interval (or at
//! once after a change notification on PostgreSQL, [`LiveInventory::mark_stale`];
//! issue 15 item 4) a reader asks the store for the newest snapshot of
//! each rooftop (one cheap query); a rooftop whose version changed gets a freshly built
//! [`SnapshotIndex`], swapped in atomically, and the index it replaces is
//! *retired* but kept for the cursor lifetime so a pagination that began on
//! it finishes on it. A cursor pinned to a version this replica never held
//! (another replica, a restart) is served by loading that snapshot from the
//! store, which keeps superseded snapshots until they are pruned.
//!
//! Vehicles dropped by the newest snapshot stay answerable as `withdrawn`
//! for [`WITHDRAWN_GRACE`] after that snapshot landed (issue 4 item 3), then
//! they are not found.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::Mutex;

use super::index::{SnapshotIndex, SnapshotMeta};
use super::model::VehicleRecord;
use crate::directory::DirectorySnapshot;
use crate::store::{SnapshotRecord, Store, StoreError};

/// How long a vehicle dropped by a newer snapshot is still reported, as
/// `withdrawn` (availability never `available`), before it is not found.
pub const WITHDRAWN_GRACE: chrono::Duration = chrono::Duration::hours(24);

/// How long a retired index stays in memory for cursors that began on it.
/// Matches the cursor lifetime.
pub const RETIRED_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// Superseded snapshots older than this are pruned from the store: longer
/// than both the cursor lifetime and the withdrawn grace period.
pub const PRUNE_AFTER: chrono::Duration = chrono::Duration::hours(25);

/// One rooftop's current inventory.
#[derive(Debug, Clone)]
pub struct RooftopInventory {
    /// The newest snapshot.
    pub latest: Arc<SnapshotIndex>,
    /// Vehicles of the previous snapshot that the newest one dropped, while
    /// within the grace period (an index over just those records).
    pub withdrawn: Option<Arc<SnapshotIndex>>,
}

/// Everything this replica serves at one moment. Immutable.
#[derive(Debug, Default)]
pub struct InventoryView {
    /// By `rooftop_id` (unique across the gateway).
    pub rooftops: HashMap<String, RooftopInventory>,
}

impl InventoryView {
    pub fn rooftop(&self, rooftop_id: &str) -> Option<&RooftopInventory> {
        self.rooftops.get(rooftop_id)
    }
}

/// Retired indexes by (rooftop_id, version), with when they retired.
type RetiredMap = HashMap<(String, i64), (Arc<SnapshotIndex>, Instant)>;

struct Current {
    view: Arc<InventoryView>,
    loaded: Option<Instant>,
    /// The staleness generation read before `view` was loaded.
    generation: u64,
}

/// Validates one rendered vehicle against the DAP vehicle schema (the
/// catalog's; this layer does not know schemas). The error is for the log.
pub type VehicleCheck = Arc<dyn Fn(&serde_json::Value) -> Result<(), String> + Send + Sync>;

/// The manager shared by every request.
pub struct LiveInventory {
    store: Arc<dyn Store>,
    refresh: Duration,
    /// Every index built here validates its pre-rendered vehicles once
    /// with this (issue 13 item 3).
    vehicle_check: VehicleCheck,
    current: Mutex<Current>,
    /// Replaced indexes by (rooftop_id, version), with when they retired.
    retired: StdMutex<RetiredMap>,
    last_prune: StdMutex<Option<Instant>>,
    /// Bumped by [`LiveInventory::mark_stale`]; a view loaded under an
    /// older generation is reloaded by the next reader.
    generation: AtomicU64,
}

impl LiveInventory {
    pub fn new(store: Arc<dyn Store>, refresh: Duration, vehicle_check: VehicleCheck) -> Self {
        Self {
            store,
            refresh,
            vehicle_check,
            current: Mutex::new(Current {
                view: Arc::new(InventoryView::default()),
                loaded: None,
                generation: 0,
            }),
            retired: StdMutex::new(HashMap::new()),
            last_prune: StdMutex::new(None),
            generation: AtomicU64::new(0),
        }
    }

    /// Make the next reader ask the store for the newest snapshots (a
    /// change notification; issue 15 item 4). Does not wait for a refresh
    /// in progress: that one's result is stale and is refreshed again.
    pub fn mark_stale(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    fn retired(&self) -> std::sync::MutexGuard<'_, RetiredMap> {
        // The map stays consistent even if a holder panicked.
        self.retired
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The current view, refreshed from the store when older than the
    /// refresh interval. Concurrent callers share one refresh.
    pub async fn view(
        &self,
        directory: &DirectorySnapshot,
    ) -> Result<Arc<InventoryView>, StoreError> {
        let mut current = self.current.lock().await;
        // Read before the store is: a snapshot committed after this read
        // notifies a newer generation, so the view below is reloaded again.
        let generation = self.generation.load(Ordering::Acquire);
        if current.loaded.is_some_and(|t| t.elapsed() < self.refresh)
            && current.generation == generation
        {
            return Ok(current.view.clone());
        }
        let latest = self.store.latest_snapshots().await?;
        let now = Utc::now();
        let mut rooftops = HashMap::with_capacity(latest.len());
        for meta in latest {
            let sla = inventory_sla(directory, &meta);
            let reuse = current
                .view
                .rooftops
                .get(&meta.rooftop_id)
                .filter(|r| {
                    r.latest.version() == meta.version && r.latest.inventory_sla_seconds() == sla
                })
                .cloned();
            let entry = match reuse {
                Some(mut entry) => {
                    // Drop the withdrawn set once its grace period is over.
                    if meta.created_at + WITHDRAWN_GRACE <= now {
                        entry.withdrawn = None;
                    }
                    entry
                }
                None => self.load_rooftop(&meta, sla, now).await?,
            };
            rooftops.insert(meta.rooftop_id.clone(), entry);
        }
        // Retire replaced indexes so in-flight cursors can finish on them.
        {
            let mut retired = self.retired();
            for (rooftop_id, old) in &current.view.rooftops {
                let replaced = rooftops
                    .get(rooftop_id)
                    .is_none_or(|new| new.latest.version() != old.latest.version());
                if replaced {
                    retired.insert(
                        (rooftop_id.clone(), old.latest.version()),
                        (old.latest.clone(), Instant::now()),
                    );
                }
            }
            retired.retain(|_, (_, at)| at.elapsed() < RETIRED_LIFETIME);
        }
        current.view = Arc::new(InventoryView { rooftops });
        current.loaded = Some(Instant::now());
        current.generation = generation;
        let view = current.view.clone();
        drop(current);
        self.maybe_prune(now).await;
        Ok(view)
    }

    async fn load_rooftop(
        &self,
        meta: &SnapshotRecord,
        sla: u32,
        now: DateTime<Utc>,
    ) -> Result<RooftopInventory, StoreError> {
        let vehicles = self.store.snapshot_vehicles(&meta.snapshot_id).await?;
        let latest = Arc::new(self.build(index_meta(meta), sla, vehicles));
        let mut withdrawn = None;
        if meta.version > 1 && meta.created_at + WITHDRAWN_GRACE > now {
            let history = self
                .store
                .snapshot_history(&meta.organization_id, &meta.rooftop_id, 2)
                .await?;
            if let Some(previous) = history.iter().find(|s| s.version < meta.version) {
                let dropped: Vec<VehicleRecord> = self
                    .store
                    .snapshot_vehicles(&previous.snapshot_id)
                    .await?
                    .into_iter()
                    .filter(|v| latest.find_vehicle_id(&v.vehicle_id).is_none())
                    .collect();
                if !dropped.is_empty() {
                    withdrawn = Some(Arc::new(self.build(index_meta(previous), sla, dropped)));
                }
            }
        }
        Ok(RooftopInventory { latest, withdrawn })
    }

    /// Index a snapshot and validate its pre-rendered vehicles once.
    fn build(&self, meta: SnapshotMeta, sla: u32, vehicles: Vec<VehicleRecord>) -> SnapshotIndex {
        let mut index = SnapshotIndex::build(meta, sla, vehicles);
        index.check_pieces(Utc::now(), self.vehicle_check.as_ref());
        index
    }

    /// The index of `rooftop_id` at `version`: the current one, a retired
    /// one, or (for a cursor from another replica or before a restart) the
    /// snapshot loaded from the store. `None` when it no longer exists.
    pub async fn index_at(
        &self,
        view: &InventoryView,
        directory: &DirectorySnapshot,
        organization_id: &str,
        rooftop_id: &str,
        version: i64,
    ) -> Result<Option<Arc<SnapshotIndex>>, StoreError> {
        if let Some(r) = view.rooftop(rooftop_id)
            && r.latest.version() == version
        {
            return Ok(Some(r.latest.clone()));
        }
        if let Some((index, _)) = self.retired().get(&(rooftop_id.to_owned(), version)) {
            return Ok(Some(index.clone()));
        }
        let history = self
            .store
            .snapshot_history(organization_id, rooftop_id, 16)
            .await?;
        let Some(meta) = history.into_iter().find(|s| s.version == version) else {
            return Ok(None);
        };
        let sla = inventory_sla(directory, &meta);
        let vehicles = self.store.snapshot_vehicles(&meta.snapshot_id).await?;
        let index = Arc::new(self.build(index_meta(&meta), sla, vehicles));
        self.retired().insert(
            (rooftop_id.to_owned(), version),
            (index.clone(), Instant::now()),
        );
        Ok(Some(index))
    }

    /// Prune superseded snapshots at most hourly (cheap, idempotent, safe
    /// with several replicas).
    async fn maybe_prune(&self, now: DateTime<Utc>) {
        {
            let mut last = self
                .last_prune
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.is_some_and(|t| t.elapsed() < Duration::from_secs(3600)) {
                return;
            }
            *last = Some(Instant::now());
        }
        match self.store.prune_snapshots(now - PRUNE_AFTER).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                snapshots.pruned = n,
                "pruned superseded inventory snapshots"
            ),
            Err(e) => tracing::warn!(error = %e, "pruning inventory snapshots failed"),
        }
    }
}

fn index_meta(s: &SnapshotRecord) -> SnapshotMeta {
    SnapshotMeta {
        snapshot_id: s.snapshot_id.clone(),
        organization_id: s.organization_id.clone(),
        rooftop_id: s.rooftop_id.clone(),
        version: s.version,
        created_at: s.created_at,
    }
}

/// The rooftop's configured inventory SLA (the default when the directory
/// does not know the rooftop yet).
fn inventory_sla(directory: &DirectorySnapshot, s: &SnapshotRecord) -> u32 {
    directory
        .organization(&s.organization_id)
        .and_then(|o| o.rooftops.iter().find(|r| r.rooftop_id == s.rooftop_id))
        .map_or(crate::dealers::DEFAULT_SLA.inventory, |r| {
            r.settings.freshness_sla_seconds.inventory
        })
}
