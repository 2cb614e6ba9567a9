//! The live inventory: the immutable per-snapshot indexes this replica
//! serves, kept in step with the store.
//!
//! The store is the system of record. Readers never wait for it
//! (docs/inventory.md "Snapshots"): [`LiveInventory::view`] returns the
//! current view at once, and when that view is older than the refresh
//! interval (or a change notification on PostgreSQL marked it stale,
//! [`LiveInventory::mark_stale`]) it starts one reload in a background task
//! and still answers from the view it has (stale-while-revalidate). The
//! reload asks the store for the newest snapshot of each rooftop (one cheap
//! query), builds the index of each rooftop whose version changed off the
//! async workers (`spawn_blocking`), and swaps each rooftop in as soon as
//! its index is built, so one organization's import never delays another
//! organization's reads, nor the rooftops already rebuilt. Only the very
//! first load (start-up, before traffic is taken) is waited for.
//!
//! An index that a newer snapshot replaced is kept only while a cursor can
//! still use it (docs/inventory.md "Cursors"): a search that issues a
//! cursor pins the indexes it read until that cursor expires
//! ([`LiveInventory::pin`]); an index nobody pinned is dropped as soon as
//! the requests reading it finish, and its memory goes back to the
//! allocator. A cursor whose index is no longer held (dropped because the
//! per-rooftop bound was reached, another replica, a restart) is served by
//! loading that snapshot from the store, which keeps superseded snapshots
//! until they are pruned.
//!
//! Vehicles dropped by the newest snapshot stay answerable as `withdrawn`
//! for [`WITHDRAWN_GRACE`] after that snapshot landed, then they are not
//! found.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex, RwLock as StdRwLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::index::{ImageCache, SnapshotIndex, SnapshotMeta};
use super::model::VehicleRecord;
use super::pieces::{Pieces, check_rendering, json_string, timestamp};
use crate::directory::DirectorySnapshot;
use crate::store::{SnapshotRecord, Store, StoreError};

/// How long a vehicle dropped by a newer snapshot is still reported, as
/// `withdrawn` (availability never `available`), before it is not found.
pub const WITHDRAWN_GRACE: chrono::Duration = chrono::Duration::hours(24);

/// Superseded snapshots older than this are pruned from the store: longer
/// than both the cursor lifetime and the withdrawn grace period.
pub const PRUNE_AFTER: chrono::Duration = chrono::Duration::hours(25);

/// Pinned indexes kept per rooftop: the newest versions that cursors still
/// use (normally the current one and the one it replaced). A cursor on an
/// older version still works: its snapshot is loaded from the store.
pub const MAX_PINNED_PER_ROOFTOP: usize = 2;

/// Decoded vehicles waiting for the index builder while a snapshot loads
/// ([`build_streamed`]): enough to keep both sides busy,
/// a few megabytes at most.
const STREAM_QUEUE: usize = 256;

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

/// Validates one rendered vehicle against the DAP vehicle schema (the
/// catalog's; this layer does not know schemas). The error is for the log.
pub type VehicleCheck = Arc<dyn Fn(&serde_json::Value) -> Result<(), String> + Send + Sync>;

/// Which organizations' snapshots this replica loads (a sharded replica's,
/// docs/operations.md "Shards"); without one, every organization's.
pub type OrganizationFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// What readers are handed: replaced whole by a reload, never changed.
#[derive(Clone)]
struct Current {
    view: Arc<InventoryView>,
    /// When the last complete reload finished (`None`: never).
    loaded: Option<Instant>,
    /// The staleness generation read before that reload began.
    generation: u64,
}

/// Indexes pinned by issued cursors, by (rooftop_id, version), with the
/// latest expiry of a cursor that reads them.
type Pins = HashMap<(String, i64), (Arc<SnapshotIndex>, DateTime<Utc>)>;

/// Each rooftop's inventory SLA by (organization_id, rooftop_id), read from
/// the directory a reader had when it asked for a reload.
#[derive(Debug, Default, Clone)]
pub struct Slas(HashMap<(String, String), u32>);

impl Slas {
    pub fn of(directory: &DirectorySnapshot) -> Self {
        Slas(
            directory
                .organizations
                .iter()
                .flat_map(|o| {
                    o.rooftops.iter().map(|r| {
                        (
                            (o.organization_id.clone(), r.rooftop_id.clone()),
                            r.settings.freshness_sla_seconds.inventory,
                        )
                    })
                })
                .collect(),
        )
    }

    /// The rooftop's configured inventory SLA (the default when the
    /// directory does not know the rooftop yet).
    fn of_snapshot(&self, s: &SnapshotRecord) -> u32 {
        self.0
            .get(&(s.organization_id.clone(), s.rooftop_id.clone()))
            .copied()
            .unwrap_or(crate::dealers::DEFAULT_SLA.inventory)
    }
}

/// What the background task and every reader share.
struct Shared {
    store: Arc<dyn Store>,
    refresh: Duration,
    /// Every index built here validates its pre-rendered vehicles once.
    vehicle_check: VehicleCheck,
    /// `None`: every organization is loaded.
    organizations: Option<OrganizationFilter>,
    /// Held only to clone or replace the `Current` (never across an await).
    current: StdRwLock<Current>,
    /// Held by the one reload in progress: the background task, the change
    /// follower or the first load.
    reload: tokio::sync::Mutex<()>,
    /// A background reload was started and has not finished.
    reload_pending: AtomicBool,
    /// Bumped by [`LiveInventory::mark_stale`]; a view loaded under an
    /// older generation is reloaded.
    generation: AtomicU64,
    pins: StdMutex<Pins>,
    last_prune: StdMutex<Option<Instant>>,
    /// `--index-cache` (docs/operations.md "Index images"): where each
    /// snapshot's index image is read from at load and written after a
    /// build; `None` builds every index from the store.
    images: Option<ImageCache>,
    /// Whether images of superseded snapshots were swept since start.
    swept: AtomicBool,
    /// Every view swapped in, for the change hub (`crate::watch`), which
    /// compares the view it saw last with the newest one.
    views: tokio::sync::watch::Sender<Arc<InventoryView>>,
}

/// The manager shared by every request.
pub struct LiveInventory {
    shared: Arc<Shared>,
}

impl LiveInventory {
    pub fn new(store: Arc<dyn Store>, refresh: Duration, vehicle_check: VehicleCheck) -> Self {
        Self {
            shared: Arc::new(Shared {
                store,
                refresh,
                vehicle_check,
                organizations: None,
                current: StdRwLock::new(Current {
                    view: Arc::new(InventoryView::default()),
                    loaded: None,
                    generation: 0,
                }),
                reload: tokio::sync::Mutex::new(()),
                reload_pending: AtomicBool::new(false),
                generation: AtomicU64::new(0),
                pins: StdMutex::new(HashMap::new()),
                last_prune: StdMutex::new(None),
                images: None,
                swept: AtomicBool::new(false),
                views: tokio::sync::watch::Sender::new(Arc::new(InventoryView::default())),
            }),
        }
    }

    /// Load only the organizations `filter` accepts (a sharded replica).
    /// Called once, before the first load.
    #[must_use]
    pub fn serving_only(mut self, filter: OrganizationFilter) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.organizations = Some(filter);
        }
        self
    }

    /// Keep index images in `dir` (docs/operations.md "Index images"):
    /// renderings checked against `vehicle_schema`. Called once, before the
    /// first load.
    pub fn use_image_cache(&mut self, dir: std::path::PathBuf, vehicle_schema: &serde_json::Value) {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            tracing::info!(index_cache = %dir.display(), "index images are kept");
            shared.images = Some(ImageCache::new(dir, vehicle_schema));
        }
    }

    /// Each view as it is swapped in (the change hub compares the one it
    /// saw last with the newest; intermediate views may be skipped).
    pub fn watch_views(&self) -> tokio::sync::watch::Receiver<Arc<InventoryView>> {
        self.shared.views.subscribe()
    }

    /// Make the next reader start a reload (a change notification). Does
    /// not wait for a reload in progress: that one's result is stale and is
    /// reloaded again.
    pub fn mark_stale(&self) {
        self.shared.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// The current view, at once. When it is older than the refresh
    /// interval or was marked stale, one background reload is started
    /// (unless one runs) and this reader is still answered from the view it
    /// has. Only before the first load completes does a reader wait.
    pub async fn view(
        &self,
        directory: &DirectorySnapshot,
    ) -> Result<Arc<InventoryView>, StoreError> {
        let current = self.shared.current();
        if current.loaded.is_none() {
            return self.shared.reload(&Slas::of(directory)).await;
        }
        if self.shared.is_stale(&current) {
            self.revalidate(directory);
        }
        Ok(current.view)
    }

    /// Reload now if the view is stale, and wait for it (the change
    /// follower, which is no reader; start-up). Shares a reload in
    /// progress.
    pub async fn reload(
        &self,
        directory: &DirectorySnapshot,
    ) -> Result<Arc<InventoryView>, StoreError> {
        off_workers(self.shared.clone(), Slas::of(directory)).await
    }

    /// Start one background reload unless one is pending.
    fn revalidate(&self, directory: &DirectorySnapshot) {
        if self.shared.reload_pending.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = self.shared.clone();
        let slas = Slas::of(directory);
        tokio::spawn(async move {
            let reloaded = off_workers(shared.clone(), slas).await;
            shared.reload_pending.store(false, Ordering::Release);
            if let Err(e) = reloaded {
                tracing::warn!(error = %e, "reloading the inventory failed; the current view is served and the next reader retries");
            }
        });
    }

    /// Keep `indexes` in memory until `expires_at` (Unix seconds): a cursor
    /// that reads them was just issued (docs/inventory.md "Cursors"). At
    /// most [`MAX_PINNED_PER_ROOFTOP`] versions per rooftop are held, the
    /// newest; a cursor on an older one loads its snapshot from the store.
    pub fn pin(&self, indexes: &[Arc<SnapshotIndex>], expires_at: i64) {
        let Some(until) = DateTime::from_timestamp(expires_at, 0) else {
            return;
        };
        let now = Utc::now();
        let mut pins = self.shared.pins();
        for index in indexes {
            let key = (index.rooftop_id().to_owned(), index.version());
            let entry = pins.entry(key).or_insert_with(|| (index.clone(), until));
            entry.1 = entry.1.max(until);
        }
        expire_pins(&mut pins, now);
    }

    /// How many indexes are pinned (and how many vehicles they hold), for
    /// tests and the log.
    pub fn pinned(&self) -> (usize, usize) {
        let pins = self.shared.pins();
        (pins.len(), pins.values().map(|(i, _)| i.len()).sum())
    }

    /// The index of `rooftop_id` at `version`: the current one, a pinned
    /// one, or (for a cursor from another replica, before a restart, or on
    /// a version no longer held) the snapshot loaded from the store, held
    /// only while the caller uses it. `None` when it no longer exists.
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
        if let Some((index, _)) = self.shared.pins().get(&(rooftop_id.to_owned(), version)) {
            return Ok(Some(index.clone()));
        }
        if let Some(r) = self.shared.current().view.rooftop(rooftop_id)
            && r.latest.version() == version
        {
            return Ok(Some(r.latest.clone()));
        }
        let history = self
            .shared
            .store
            .snapshot_history(organization_id, rooftop_id, 16)
            .await?;
        let Some(meta) = history.into_iter().find(|s| s.version == version) else {
            return Ok(None);
        };
        let sla = Slas::of(directory).of_snapshot(&meta);
        let index = build_streamed(
            self.shared.store.as_ref(),
            self.shared.vehicle_check.clone(),
            &meta,
            sla,
            Keep::All,
            None,
        )
        .await?;
        Ok(Some(Arc::new(index)))
    }
}

impl Shared {
    fn current(&self) -> Current {
        // The value is replaced whole; a panicked writer left a valid one.
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn pins(&self) -> std::sync::MutexGuard<'_, Pins> {
        self.pins
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn is_stale(&self, current: &Current) -> bool {
        current.loaded.is_none_or(|t| t.elapsed() >= self.refresh)
            || current.generation != self.generation.load(Ordering::Acquire)
    }

    /// Swap in `view`; `done` marks a complete reload begun under that
    /// generation (a partial swap keeps the view stale).
    fn publish(&self, view: Arc<InventoryView>, done: Option<u64>) {
        let mut current = self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        current.view = view.clone();
        if let Some(generation) = done {
            current.loaded = Some(Instant::now());
            current.generation = generation;
        }
        drop(current);
        self.views.send_if_modified(|seen| {
            let changed = !Arc::ptr_eq(seen, &view);
            *seen = view;
            changed
        });
    }

    /// One reload: the newest snapshot of every rooftop; each rooftop whose
    /// version (or SLA) changed is indexed off the async workers and
    /// swapped in on its own, the others carry over. A reload that finds
    /// the view fresh (another one just finished) does nothing.
    async fn reload(&self, slas: &Slas) -> Result<Arc<InventoryView>, StoreError> {
        let _one = self.reload.lock().await;
        // Read before the store is: a snapshot committed after this read
        // notifies a newer generation, so the view below is reloaded again.
        let generation = self.generation.load(Ordering::Acquire);
        let base = self.current();
        if !self.is_stale(&base) {
            return Ok(base.view);
        }
        let mut latest = self.store.latest_snapshots().await?;
        let latest_ids: Vec<String> = if self.images.is_some() {
            latest.iter().map(|s| s.snapshot_id.clone()).collect()
        } else {
            Vec::new()
        };
        if let Some(serves) = &self.organizations {
            latest.retain(|s| serves(&s.organization_id));
        }
        let now = Utc::now();
        let mut rooftops = HashMap::with_capacity(latest.len());
        let mut changed = Vec::new();
        for meta in latest {
            let sla = slas.of_snapshot(&meta);
            let old = base.view.rooftops.get(&meta.rooftop_id);
            let same = old.filter(|r| {
                r.latest.version() == meta.version && r.latest.inventory_sla_seconds() == sla
            });
            match same {
                Some(entry) => {
                    let mut entry = entry.clone();
                    // Drop the withdrawn set once its grace period is over.
                    if meta.created_at + WITHDRAWN_GRACE <= now {
                        entry.withdrawn = None;
                    }
                    rooftops.insert(meta.rooftop_id.clone(), entry);
                }
                None => {
                    // Served as it was until its new index is built.
                    if let Some(old) = old {
                        rooftops.insert(meta.rooftop_id.clone(), old.clone());
                    }
                    changed.push((meta, sla));
                }
            }
        }
        let replaced = !changed.is_empty() || rooftops.len() != base.view.rooftops.len();
        if let Some(images) = &self.images
            && !self.swept.swap(true, Ordering::AcqRel)
        {
            // Every snapshot current in the store, served here or not:
            // replicas of other shards may share the directory.
            let current: Vec<&str> = latest_ids.iter().map(String::as_str).collect();
            images.remove_all_but(&current);
        }
        for (meta, sla) in changed {
            let replacing = rooftops.get(&meta.rooftop_id).map(|old| {
                let old = old.latest.meta();
                (old.snapshot_id.clone(), old.version)
            });
            let entry = self.load_rooftop(&meta, sla, now).await?;
            if let (Some(images), Some((old_id, _))) = (&self.images, replacing) {
                // The swapped-out snapshot's image (a replaced SLA's too);
                // pinned readers of it keep their open handle.
                let keep = images.path(&meta.snapshot_id, sla);
                images.remove_snapshot(&old_id, Some(&keep));
            }
            rooftops.insert(meta.rooftop_id.clone(), entry);
            // This rooftop's swap; the others are untouched.
            self.publish(
                Arc::new(InventoryView {
                    rooftops: rooftops.clone(),
                }),
                None,
            );
        }
        let view = Arc::new(InventoryView { rooftops });
        self.publish(view.clone(), Some(generation));
        drop(_one);
        drop(base);
        if replaced {
            expire_pins(&mut self.pins(), now);
        }
        self.maybe_prune(now).await;
        Ok(view)
    }

    async fn load_rooftop(
        &self,
        meta: &SnapshotRecord,
        sla: u32,
        now: DateTime<Utc>,
    ) -> Result<RooftopInventory, StoreError> {
        let latest = Arc::new(self.latest_index(meta, sla).await?);
        let mut withdrawn = None;
        if meta.version > 1 && meta.created_at + WITHDRAWN_GRACE > now {
            let history = self
                .store
                .snapshot_history(&meta.organization_id, &meta.rooftop_id, 2)
                .await?;
            if let Some(previous) = history.iter().find(|s| s.version < meta.version) {
                // Only the vehicles the new snapshot dropped, picked as the
                // previous snapshot streams by (never all of it in memory).
                let current = latest.clone();
                let dropped = build_streamed(
                    self.store.as_ref(),
                    self.vehicle_check.clone(),
                    previous,
                    sla,
                    Keep::NotIn(current),
                    None,
                )
                .await?;
                if !dropped.is_empty() {
                    withdrawn = Some(Arc::new(dropped));
                }
            }
        }
        Ok(RooftopInventory { latest, withdrawn })
    }

    /// The index of `meta`'s snapshot: read from its image when there is a
    /// usable one, else built from the store (and its image written).
    async fn latest_index(
        &self,
        meta: &SnapshotRecord,
        sla: u32,
    ) -> Result<SnapshotIndex, StoreError> {
        let Some(images) = self.images.clone() else {
            return build_streamed(
                self.store.as_ref(),
                self.vehicle_check.clone(),
                meta,
                sla,
                Keep::All,
                None,
            )
            .await;
        };
        let index_meta = index_meta(meta);
        let reader = images.clone();
        let loaded = tokio::task::spawn_blocking(move || reader.load(index_meta, sla))
            .await
            .map_err(|e| e.to_string())
            .and_then(|loaded| loaded);
        match loaded {
            Ok(Some(index)) => {
                tracing::info!(
                    rooftop.id = %meta.rooftop_id,
                    snapshot.version = meta.version,
                    vehicles = index.len(),
                    "inventory index read from its image"
                );
                return Ok(index);
            }
            Ok(None) => {}
            Err(reason) => {
                // Built again below, and its image written anew.
                tracing::warn!(rooftop.id = %meta.rooftop_id, %reason, "index image refused; building the index from the store");
                let _ = std::fs::remove_file(images.path(&meta.snapshot_id, sla));
            }
        }
        match build_streamed(
            self.store.as_ref(),
            self.vehicle_check.clone(),
            meta,
            sla,
            Keep::All,
            Some(images),
        )
        .await
        {
            Ok(index) => Ok(index),
            Err(e) => {
                // Writing the image may be what failed (a full disk):
                // the index does not need it.
                tracing::warn!(rooftop.id = %meta.rooftop_id, error = %e, "building with an index image failed; building without");
                build_streamed(
                    self.store.as_ref(),
                    self.vehicle_check.clone(),
                    meta,
                    sla,
                    Keep::All,
                    None,
                )
                .await
            }
        }
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

/// Run one reload on the blocking pool, not on an async worker: decoding a
/// large rooftop's rows from the store takes long enough (hundreds of
/// milliseconds in a debug build) that on one of the few async workers it
/// would hold up the requests scheduled there (docs/inventory.md
/// "Snapshots": readers never wait for a reload).
async fn off_workers(shared: Arc<Shared>, slas: Slas) -> Result<Arc<InventoryView>, StoreError> {
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || runtime.block_on(shared.reload(&slas)))
        .await
        .map_err(|e| StoreError::Corrupt(format!("reloading the inventory failed: {e}")))?
}

/// Drop pins whose cursors have expired, then keep at most
/// [`MAX_PINNED_PER_ROOFTOP`] versions per rooftop (the newest).
fn expire_pins(pins: &mut Pins, now: DateTime<Utc>) {
    pins.retain(|_, (_, until)| *until > now);
    let mut versions: HashMap<&str, Vec<i64>> = HashMap::new();
    for (rooftop_id, version) in pins.keys() {
        versions.entry(rooftop_id).or_default().push(*version);
    }
    let mut over: Vec<(String, i64)> = Vec::new();
    for (rooftop_id, mut held) in versions {
        if held.len() > MAX_PINNED_PER_ROOFTOP {
            held.sort_unstable_by(|a, b| b.cmp(a));
            over.extend(
                held[MAX_PINNED_PER_ROOFTOP..]
                    .iter()
                    .map(|v| (rooftop_id.to_owned(), *v)),
            );
        }
    }
    for key in over {
        pins.remove(&key);
    }
}

/// Which vehicles of a stored snapshot [`build_streamed`] indexes.
pub(super) enum Keep {
    All,
    /// Those missing from this (newer) snapshot: the withdrawn ones.
    NotIn(Arc<SnapshotIndex>),
}

/// Index a stored snapshot while the store reads it, keeping the vehicles
/// `keep` accepts (room is reserved for all of them only when `keep`
/// takes every one): the store decodes one vehicle at a time into a short
/// channel and the index, built on the blocking pool (never on an async
/// worker: docs/inventory.md "Snapshots", readers never wait for a
/// reload), takes each as it comes. Reading every row first held a
/// rooftop's stored rows and all its decoded records at once, about twice
/// the finished index, and the allocator kept most of that after loading
/// (docs/benchmarks.md "Memory at a million").
async fn build_streamed(
    store: &dyn Store,
    check: VehicleCheck,
    meta: &SnapshotRecord,
    sla: u32,
    keep: Keep,
    images: Option<ImageCache>,
) -> Result<SnapshotIndex, StoreError> {
    let (tx, rx) = tokio::sync::mpsc::channel(STREAM_QUEUE);
    let expected = match keep {
        Keep::All => usize::try_from(meta.vehicle_count).unwrap_or(0),
        Keep::NotIn(_) => 0,
    };
    let builder = tokio::spawn(index_received_into(
        rx,
        index_meta(meta),
        sla,
        expected,
        keep,
        check,
        images,
    ));
    // When the read fails part way, the channel closes, the builder
    // finishes what it has and that partial index is discarded.
    let read = store.stream_snapshot_vehicles(&meta.snapshot_id, tx).await;
    let index = builder
        .await
        .map_err(|e| e.to_string())
        .and_then(|built| built)
        .map_err(|e| {
            StoreError::Corrupt(format!(
                "indexing a snapshot of {} failed: {e}",
                meta.rooftop_id
            ))
        })?;
    read?;
    Ok(index)
}

/// The index of the vehicles received on `rx` that `keep` accepts, each
/// rendering checked with `check` (the DAP vehicle schema) as
/// [`SnapshotIndex::check_pieces`] checks it.
///
/// Checking every row after the index was built took a quarter of the
/// start-up on the one thread that also builds the index, while the
/// thread decoding the stored rows waited on it (docs/benchmarks.md
/// "Start-up at a million"). So each kept vehicle is rendered and checked
/// by a second thread between the store and the builder: the pieces
/// checked are [`Pieces::of`] of the same record under the same SLA, which
/// is exactly what the builder stores for that row (`Pieces::of` depends on
/// nothing else). When every vehicle passes, the index holds no failed row,
/// which is what `check_pieces` would have found; when any fails, the
/// built index is checked again in full with `check_pieces`, which marks
/// and logs each failing row as before, so responses that include one are
/// still built as trees and refused by the output schema check.
#[cfg(test)]
pub(super) async fn index_received(
    rx: tokio::sync::mpsc::Receiver<VehicleRecord>,
    meta: SnapshotMeta,
    sla: u32,
    expected: usize,
    keep: Keep,
    check: VehicleCheck,
) -> Result<SnapshotIndex, String> {
    index_received_into(rx, meta, sla, expected, keep, check, None).await
}

/// [`index_received`], writing the index's image into `images` when given
/// (docs/operations.md "Index images"): the payloads as they are built,
/// the rest once the index is checked. Failing to start the image leaves
/// the payloads on the heap; failing to write it part way is an error (the
/// caller builds again without an image).
pub(super) async fn index_received_into(
    mut rx: tokio::sync::mpsc::Receiver<VehicleRecord>,
    meta: SnapshotMeta,
    sla: u32,
    expected: usize,
    keep: Keep,
    check: VehicleCheck,
    images: Option<ImageCache>,
) -> Result<SnapshotIndex, String> {
    let (checked_tx, mut checked_rx) = tokio::sync::mpsc::channel(STREAM_QUEUE);
    let early = check.clone();
    let checker = tokio::task::spawn_blocking(move || {
        let now = Utc::now();
        let now_text = json_string(&timestamp(now));
        let mut out = String::new();
        let mut passed = true;
        while let Some(vehicle) = rx.blocking_recv() {
            if let Keep::NotIn(current) = &keep
                && current.find_vehicle_id(&vehicle.vehicle_id).is_some()
            {
                continue;
            }
            // After a failure every row is checked again below.
            if passed {
                let pieces = Pieces::of(&vehicle, sla);
                passed = check_rendering(pieces.as_ref(), now, &now_text, &mut out, early.as_ref())
                    .is_ok();
            }
            if checked_tx.blocking_send(vehicle).is_err() {
                break;
            }
        }
        passed
    });
    let image_writer = images.as_ref().and_then(|cache| {
        cache
            .writer(&meta.snapshot_id, sla, expected)
            .inspect_err(|e| tracing::warn!(index_cache = %cache.dir().display(), error = %e, "cannot write an index image; the payloads stay on the heap"))
            .ok()
    });
    let builder = tokio::task::spawn_blocking(move || {
        let records = std::iter::from_fn(|| checked_rx.blocking_recv());
        match image_writer {
            Some(writer) => SnapshotIndex::build_into(meta, sla, expected, records, writer),
            None => Ok((
                SnapshotIndex::build_from(meta, sla, expected, records),
                None,
            )),
        }
    });
    let passed = checker.await.map_err(|e| e.to_string())?;
    let (mut index, temporary) = builder
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("writing the index image: {e}"))?;
    index = tokio::task::spawn_blocking(move || {
        if !passed {
            index.check_pieces(Utc::now(), check.as_ref());
        }
        // With the verdict known, the image is completed and named; the
        // index serves from it either way.
        if let (Some(cache), Some(temporary)) = (images, temporary) {
            match cache.store(&index, &temporary) {
                Ok(path) => tracing::info!(image = %path.display(), "index image written"),
                Err(e) => tracing::warn!(error = %e, "the index image was not written"),
            }
        }
        index
    })
    .await
    .map_err(|e| e.to_string())?;
    Ok(index)
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
