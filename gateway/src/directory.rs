//! The dealer directory: organizations and rooftops, cached in memory.
//!
//! The store is the system of record; every replica reloads the directory
//! when its copy is older than `directory_refresh_seconds`, so a dealers
//! import by the CLI (or on another replica) is served within that bound
//! plus the reload itself. On PostgreSQL the import's notification marks
//! the copy stale at once ([`Directory::mark_stale`]) and the change
//! follower reloads it (`state::changes`); the interval stays as the
//! fallback and as the only mechanism on SQLite.
//! Readers never wait for a reload (docs/inventory.md "Snapshots"): a
//! reader that finds the copy stale starts one reload in a background task
//! and is answered from the copy it has; only the very first load, before
//! traffic is taken, is waited for.
//! Readers get an immutable `Arc` snapshot: one request sees one consistent
//! directory, and the manifest tool and resource share one object
//! (DAP-CORE-006).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::store::{OrganizationRecord, Store, StoreError};

/// One immutable view of every organization.
#[derive(Debug)]
pub struct DirectorySnapshot {
    pub organizations: Vec<OrganizationRecord>,
    /// When this snapshot was read from the store.
    pub loaded_at: DateTime<Utc>,
    loaded_instant: Instant,
    /// The staleness generation read before this snapshot was loaded.
    generation: u64,
}

impl DirectorySnapshot {
    pub fn organization(&self, organization_id: &str) -> Option<&OrganizationRecord> {
        self.organizations
            .iter()
            .find(|o| o.organization_id == organization_id)
    }

    /// Seconds until this snapshot is refreshed (for MCP `ttlMs`).
    pub fn remaining(&self, refresh: Duration) -> Duration {
        refresh.saturating_sub(self.loaded_instant.elapsed())
    }
}

/// The cache around the store.
pub struct Directory {
    shared: Arc<Shared>,
}

/// What the background reload and every reader share.
struct Shared {
    store: Arc<dyn Store>,
    refresh: Duration,
    /// Held only to clone or replace the `Arc` (never across an await).
    current: RwLock<Option<Arc<DirectorySnapshot>>>,
    /// Held by the one reload in progress.
    reload: tokio::sync::Mutex<()>,
    /// A background reload was started and has not finished.
    reload_pending: AtomicBool,
    /// Bumped by every [`Directory::mark_stale`]. A snapshot loaded under
    /// an older generation is stale even if it was loaded after the
    /// notification's write committed but read before it (the reload that
    /// raced the change loads again).
    generation: AtomicU64,
}

impl Shared {
    fn current(&self) -> Option<Arc<DirectorySnapshot>> {
        // Replaced whole; a panicked writer left a valid value.
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn is_fresh(&self, snap: &DirectorySnapshot) -> bool {
        snap.loaded_instant.elapsed() < self.refresh
            && snap.generation == self.generation.load(Ordering::Acquire)
    }

    /// Load from the store unless the copy is fresh (a reload that just
    /// finished is shared).
    async fn reload(&self) -> Result<Arc<DirectorySnapshot>, StoreError> {
        let _one = self.reload.lock().await;
        // Read before the store is: a change marked after this point makes
        // the snapshot loaded below stale again.
        let generation = self.generation.load(Ordering::Acquire);
        if let Some(snap) = self.current()
            && self.is_fresh(&snap)
        {
            return Ok(snap);
        }
        let organizations = self.store.list_organizations().await?;
        let snap = Arc::new(DirectorySnapshot {
            organizations,
            loaded_at: Utc::now(),
            loaded_instant: Instant::now(),
            generation,
        });
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(snap.clone());
        Ok(snap)
    }
}

impl Directory {
    pub fn new(store: Arc<dyn Store>, refresh: Duration) -> Self {
        Self {
            shared: Arc::new(Shared {
                store,
                refresh,
                current: RwLock::new(None),
                reload: tokio::sync::Mutex::new(()),
                reload_pending: AtomicBool::new(false),
                generation: AtomicU64::new(0),
            }),
        }
    }

    pub fn refresh_interval(&self) -> Duration {
        self.shared.refresh
    }

    /// The current snapshot, at once. When it is older than the refresh
    /// interval or was marked stale, one background reload is started
    /// (unless one runs) and this reader still gets the snapshot it has.
    /// Only before the first load completes does a reader wait.
    pub async fn snapshot(&self) -> Result<Arc<DirectorySnapshot>, StoreError> {
        let Some(snap) = self.shared.current() else {
            return self.shared.reload().await;
        };
        if !self.shared.is_fresh(&snap) && !self.shared.reload_pending.swap(true, Ordering::AcqRel)
        {
            let shared = self.shared.clone();
            tokio::spawn(async move {
                let reloaded = shared.reload().await;
                shared.reload_pending.store(false, Ordering::Release);
                if let Err(e) = reloaded {
                    tracing::warn!(error = %e, "reloading the directory failed; the current copy is served and the next reader retries");
                }
            });
        }
        Ok(snap)
    }

    /// Reload now unless the copy is fresh, and wait for it (the change
    /// follower and start-up; never a request).
    pub async fn reload(&self) -> Result<Arc<DirectorySnapshot>, StoreError> {
        self.shared.reload().await
    }

    /// Make the next read start a reload, without waiting for a reload in
    /// progress (a change notification from the store).
    pub fn mark_stale(&self) {
        self.shared.generation.fetch_add(1, Ordering::AcqRel);
    }
}

/// At most this many caller views are kept per directory snapshot; a
/// full cache starts over (views are few: anonymous plus one per grant).
const MAX_CACHED_VIEWS: usize = 1024;

/// Documents rendered once per directory snapshot and caller view (the
/// manifest is serialized once per directory version; see
/// `manifest::view_key`). Entries belong to one snapshot: a new snapshot
/// drops every entry.
#[derive(Default)]
pub struct ViewCache {
    inner: std::sync::Mutex<CachedViews>,
}

#[derive(Default)]
struct CachedViews {
    snapshot: Option<Arc<DirectorySnapshot>>,
    views: std::collections::HashMap<Vec<String>, Arc<str>>,
}

impl ViewCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, CachedViews> {
        // Entries are whole values; a panicked holder leaves them valid.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The cached manifest of `key` on `snapshot`, if any.
    pub fn get(&self, snapshot: &Arc<DirectorySnapshot>, key: &[String]) -> Option<Arc<str>> {
        let cached = self.lock();
        match &cached.snapshot {
            Some(s) if Arc::ptr_eq(s, snapshot) => cached.views.get(key).cloned(),
            Some(_) | None => None,
        }
    }

    /// Remember `json`, the validated manifest of `key` on `snapshot`.
    pub fn put(&self, snapshot: &Arc<DirectorySnapshot>, key: Vec<String>, json: Arc<str>) {
        let mut cached = self.lock();
        let same = cached
            .snapshot
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(s, snapshot));
        if !same || cached.views.len() >= MAX_CACHED_VIEWS {
            cached.views.clear();
            cached.snapshot = Some(snapshot.clone());
        }
        cached.views.insert(key, json);
    }
}
