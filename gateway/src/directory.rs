//! The dealer directory: organizations and rooftops, cached in memory.
//!
//! The store is the system of record; every replica reloads the directory
//! when its copy is older than `directory_refresh_seconds`, so a dealers
//! import by the CLI (or on another replica) is served within that bound.
//! On PostgreSQL the import's notification marks the copy stale at once
//! ([`Directory::mark_stale`], issue 15 item 4); the interval stays as the
//! fallback and as the only mechanism on SQLite.
//! Readers get an immutable `Arc` snapshot: one request sees one consistent
//! directory, and the manifest tool and resource share one object
//! (DAP-CORE-006).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::Mutex;

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
    store: Arc<dyn Store>,
    refresh: Duration,
    current: Mutex<Option<Arc<DirectorySnapshot>>>,
    /// Bumped by every [`Directory::mark_stale`]. A snapshot loaded under
    /// an older generation is stale even if it was loaded after the
    /// notification's write committed but read before it (the reload that
    /// raced the change loads again).
    generation: AtomicU64,
}

impl Directory {
    pub fn new(store: Arc<dyn Store>, refresh: Duration) -> Self {
        Self {
            store,
            refresh,
            current: Mutex::new(None),
            generation: AtomicU64::new(0),
        }
    }

    pub fn refresh_interval(&self) -> Duration {
        self.refresh
    }

    /// The current snapshot, reloading it from the store when it is older
    /// than the refresh interval. Concurrent callers share one reload.
    pub async fn snapshot(&self) -> Result<Arc<DirectorySnapshot>, StoreError> {
        let mut guard = self.current.lock().await;
        // Read before the store is: a change marked after this point makes
        // the snapshot loaded below stale again.
        let generation = self.generation.load(Ordering::Acquire);
        if let Some(snap) = guard.as_ref()
            && snap.loaded_instant.elapsed() < self.refresh
            && snap.generation == generation
        {
            return Ok(snap.clone());
        }
        let organizations = self.store.list_organizations().await?;
        let snap = Arc::new(DirectorySnapshot {
            organizations,
            loaded_at: Utc::now(),
            loaded_instant: Instant::now(),
            generation,
        });
        *guard = Some(snap.clone());
        Ok(snap)
    }

    /// Drop the cached snapshot so the next read reloads (after an import
    /// performed by this process).
    pub async fn invalidate(&self) {
        self.mark_stale();
        *self.current.lock().await = None;
    }

    /// Make the next read reload, without waiting for a reload in progress
    /// (a change notification from the store; issue 15 item 4).
    pub fn mark_stale(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

/// At most this many caller views are kept per directory snapshot; a
/// full cache starts over (views are few: anonymous plus one per grant).
const MAX_CACHED_VIEWS: usize = 1024;

/// Documents rendered once per directory snapshot and caller view (issue 13
/// item 3: the manifest is serialized once per directory version; see
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
