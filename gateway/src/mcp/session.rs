//! Legacy (2025-11-25) transport sessions.
//!
//! A session id is issued on `initialize`, required afterwards, and answered
//! 404 once terminated (DELETE) or forgotten (idle timeout, capacity). It is
//! transport state only: never identity or authorization (AAP MCP binding).
//!
//! Sessions live in the store (docs/operations.md "Replicas"), so any replica serves any
//! session and a load balancer needs no sticky routing: a session opened on
//! one replica is used on another, and one terminated on any replica is 404
//! on every replica from the next request on (each use reads the row; there
//! is no per-replica copy to fall out of step). The store keeps the SHA-256
//! of the id, never the id. Writes are few: `initialize` inserts (and keeps
//! the capacity bound), and a use refreshes `last_seen` only when the stored
//! one is older than [`TOUCH_INTERVAL`] (or a quarter of the idle timeout,
//! if shorter), so most requests only read.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::store::{LegacySessionRecord, Store, StoreError};

/// At most one `last_seen` write per session in this interval.
pub const TOUCH_INTERVAL: Duration = Duration::from_secs(5);

/// One negotiated legacy session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub protocol_version: String,
    pub initialized: bool,
}

/// Why a session operation failed: the store did. Closed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("legacy session store: {0}")]
    Store(#[from] StoreError),
}

/// The session table, in the store.
pub struct Sessions {
    store: Arc<dyn Store>,
    max: u32,
    idle: Duration,
    touch_interval: Duration,
}

/// The stored key of a session id: lowercase hex SHA-256.
fn key_of(id: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(id.as_bytes());
    let mut key = String::with_capacity(64);
    for byte in digest {
        use std::fmt::Write as _;
        let _ = write!(key, "{byte:02x}");
    }
    key
}

fn chrono_of(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

impl Sessions {
    /// At most `max` sessions (the least recently used goes beyond it); a
    /// session idle for `idle` is forgotten.
    pub fn new(store: Arc<dyn Store>, max: usize, idle: Duration) -> Self {
        let touch_interval = TOUCH_INTERVAL.min(idle / 4);
        Self::with_touch_interval(store, max, idle, touch_interval)
    }

    /// [`Self::new`] with an explicit `last_seen` refresh interval (zero:
    /// every use writes, which makes recency exact; tests).
    pub fn with_touch_interval(
        store: Arc<dyn Store>,
        max: usize,
        idle: Duration,
        touch_interval: Duration,
    ) -> Self {
        Self {
            store,
            max: u32::try_from(max.max(1)).unwrap_or(u32::MAX),
            idle,
            touch_interval,
        }
    }

    fn idle_before(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        now - chrono_of(self.idle)
    }

    /// Start a session and return its id: 128 random bits (UUID v4 from the
    /// OS CSPRNG), visible ASCII as the transport requires. Idle sessions
    /// are forgotten first; at capacity the least recently used goes.
    ///
    /// # Errors
    /// The store failed; no session was started.
    pub async fn create(&self, protocol_version: &str) -> Result<String, SessionError> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let now = now_micros();
        let record = LegacySessionRecord {
            key: key_of(&id),
            protocol_version: protocol_version.to_owned(),
            initialized: false,
            created_at: now,
            last_seen: now,
        };
        let stored = self
            .store
            .create_legacy_session(&record, self.max, self.idle_before(now))
            .await?;
        // The gauge of docs/operations.md "Metrics": the count is known here
        // (sessions of every replica: the table is shared).
        #[expect(clippy::cast_precision_loss, reason = "a gauge; at most u32::MAX")]
        metrics::gauge!("dealer_gateway_legacy_sessions").set(stored as f64);
        Ok(id)
    }

    /// Look up a live session and mark it used. An idle one is deleted
    /// (then `None` on every replica).
    ///
    /// # Errors
    /// The store failed.
    pub async fn touch(&self, id: &str) -> Result<Option<Session>, SessionError> {
        let key = key_of(id);
        let Some(record) = self.store.legacy_session(&key).await? else {
            return Ok(None);
        };
        let now = now_micros();
        if record.last_seen <= self.idle_before(now) {
            self.store.delete_legacy_session(&key).await?;
            return Ok(None);
        }
        if now - record.last_seen >= chrono_of(self.touch_interval)
            && !self.store.touch_legacy_session(&key, now).await?
        {
            // Terminated between the read and the write.
            return Ok(None);
        }
        Ok(Some(Session {
            protocol_version: record.protocol_version,
            initialized: record.initialized,
        }))
    }

    /// Record `notifications/initialized`; false when the session is gone.
    ///
    /// # Errors
    /// The store failed.
    pub async fn mark_initialized(&self, id: &str) -> Result<bool, SessionError> {
        Ok(self
            .store
            .initialize_legacy_session(&key_of(id), now_micros())
            .await?)
    }

    /// End a session; true when it existed.
    ///
    /// # Errors
    /// The store failed.
    pub async fn terminate(&self, id: &str) -> Result<bool, SessionError> {
        Ok(self.store.delete_legacy_session(&key_of(id)).await?)
    }

    /// The session's resource subscriptions and the token of its GET stream
    /// (docs/mcp.md "Subscriptions"); `None` when the session is gone.
    ///
    /// # Errors
    /// The store failed.
    pub async fn subscriptions(
        &self,
        id: &str,
    ) -> Result<Option<crate::store::LegacySubscriptions>, SessionError> {
        Ok(self.store.legacy_session_subscriptions(&key_of(id)).await?)
    }

    /// Add or remove `uri` (at most `max` URIs); the set afterwards, `None`
    /// when the session is gone.
    ///
    /// # Errors
    /// The store failed.
    pub async fn change_subscription(
        &self,
        id: &str,
        uri: &str,
        subscribe: bool,
        max: usize,
    ) -> Result<Option<Vec<String>>, SessionError> {
        let max = u32::try_from(max).unwrap_or(u32::MAX);
        Ok(self
            .store
            .change_legacy_session_subscription(&key_of(id), uri, subscribe, max)
            .await?)
    }

    /// Make `stream` the session's one GET stream; false when it is gone.
    ///
    /// # Errors
    /// The store failed.
    pub async fn claim_stream(&self, id: &str, stream: &str) -> Result<bool, SessionError> {
        Ok(self
            .store
            .claim_legacy_session_stream(&key_of(id), stream)
            .await?)
    }

    /// Sessions currently stored (live or not yet found idle), on every
    /// replica.
    ///
    /// # Errors
    /// The store failed.
    pub async fn len(&self) -> Result<u64, SessionError> {
        Ok(self.store.count_legacy_sessions().await?)
    }

    /// True when no session is stored.
    ///
    /// # Errors
    /// The store failed.
    pub async fn is_empty(&self) -> Result<bool, SessionError> {
        Ok(self.len().await? == 0)
    }
}

/// Now, at the microseconds both backends keep.
fn now_micros() -> DateTime<Utc> {
    use chrono::SubsecRound as _;
    Utc::now().trunc_subsecs(6)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    async fn store() -> Arc<dyn Store> {
        crate::store::open("sqlite::memory:")
            .await
            .expect("in-memory store")
    }

    /// Every use writes `last_seen`, so recency is exact.
    fn exact(store: &Arc<dyn Store>, max: usize, idle: Duration) -> Sessions {
        Sessions::with_touch_interval(store.clone(), max, idle, Duration::ZERO)
    }

    async fn live(sessions: &Sessions, id: &str) -> bool {
        sessions.touch(id).await.unwrap().is_some()
    }

    #[tokio::test]
    async fn capacity_drops_the_least_recently_used_session() {
        let store = store().await;
        let sessions = exact(&store, 3, HOUR);
        let a = sessions.create("2025-11-25").await.unwrap();
        let b = sessions.create("2025-11-25").await.unwrap();
        let c = sessions.create("2025-11-25").await.unwrap();
        // Using `a` makes `b` the least recently used.
        assert!(live(&sessions, &a).await);
        let d = sessions.create("2025-11-25").await.unwrap();
        assert_eq!(sessions.len().await.unwrap(), 3);
        assert!(!live(&sessions, &b).await, "b was the LRU and is gone");
        for kept in [&a, &c, &d] {
            assert!(live(&sessions, kept).await);
        }
        // Now the order is a, c, d (c touched after a): `a` goes next.
        let e = sessions.create("2025-11-25").await.unwrap();
        assert!(!live(&sessions, &a).await);
        for kept in [&c, &d, &e] {
            assert!(live(&sessions, kept).await);
        }
    }

    #[tokio::test]
    async fn idle_sessions_expire_on_touch_and_on_create() {
        let store = store().await;
        let sessions = Sessions::new(store, 100, Duration::from_millis(40));
        let old = sessions.create("2025-11-25").await.unwrap();
        let other = sessions.create("2025-11-25").await.unwrap();
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(!live(&sessions, &old).await, "idle beyond the limit");
        // `other` is expired too and is dropped by the next create.
        let fresh = sessions.create("2025-11-25").await.unwrap();
        assert_eq!(sessions.len().await.unwrap(), 1);
        assert!(!live(&sessions, &other).await);
        assert!(live(&sessions, &fresh).await);
    }

    #[tokio::test]
    async fn a_used_session_does_not_expire_and_terminate_ends_it() {
        let store = store().await;
        // The default refresh: a quarter of the idle time (20 ms) here.
        let sessions = Sessions::new(store, 100, Duration::from_millis(80));
        let id = sessions.create("2025-11-25").await.unwrap();
        for _ in 0..4 {
            tokio::time::sleep(Duration::from_millis(30)).await;
            assert!(live(&sessions, &id).await, "use resets the idle clock");
        }
        assert!(sessions.mark_initialized(&id).await.unwrap());
        let s = sessions.touch(&id).await.unwrap().unwrap();
        assert!(s.initialized);
        assert_eq!(s.protocol_version, "2025-11-25");
        assert!(sessions.terminate(&id).await.unwrap());
        assert!(!sessions.terminate(&id).await.unwrap());
        assert!(!live(&sessions, &id).await);
        assert!(!sessions.mark_initialized(&id).await.unwrap());
        assert_eq!(sessions.len().await.unwrap(), 0);
    }

    /// Repeated use keeps one row per session and, within the touch
    /// interval, writes nothing (not a write per request).
    #[tokio::test]
    async fn repeated_use_does_not_write_within_the_touch_interval() {
        let store = store().await;
        let sessions = Sessions::new(store.clone(), 10, HOUR);
        let ids: Vec<String> = {
            let mut ids = Vec::new();
            for _ in 0..10 {
                ids.push(sessions.create("2025-11-25").await.unwrap());
            }
            ids
        };
        let before = store.legacy_session(&key_of(&ids[0])).await.unwrap();
        for _ in 0..20 {
            for id in &ids {
                assert!(live(&sessions, id).await);
            }
        }
        assert_eq!(sessions.len().await.unwrap(), 10);
        let after = store.legacy_session(&key_of(&ids[0])).await.unwrap();
        assert_eq!(
            before, after,
            "last_seen unchanged within {TOUCH_INTERVAL:?}"
        );
        // With a zero interval every use writes: the same check can fail.
        let eager = exact(&store, 10, HOUR);
        assert!(live(&eager, &ids[0]).await);
        let written = store.legacy_session(&key_of(&ids[0])).await.unwrap();
        assert!(written.unwrap().last_seen > after.unwrap().last_seen);
    }

    #[tokio::test]
    async fn terminated_sessions_free_their_place() {
        let store = store().await;
        let sessions = exact(&store, 2, HOUR);
        let a = sessions.create("2025-11-25").await.unwrap();
        let b = sessions.create("2025-11-25").await.unwrap();
        assert!(sessions.terminate(&a).await.unwrap());
        // Room for one: nothing live is dropped.
        let c = sessions.create("2025-11-25").await.unwrap();
        assert!(live(&sessions, &b).await);
        assert!(live(&sessions, &c).await);
        // Full: the LRU (b, touched before c) goes.
        let d = sessions.create("2025-11-25").await.unwrap();
        assert!(!live(&sessions, &b).await);
        assert!(live(&sessions, &c).await);
        assert!(live(&sessions, &d).await);
    }

    /// Two replicas on one store: a session opened on one is used on the
    /// other, and terminated on either it is gone on both.
    #[tokio::test]
    async fn any_replica_serves_and_ends_a_session() {
        let store = store().await;
        let one = Sessions::new(store.clone(), 100, HOUR);
        let two = Sessions::new(store.clone(), 100, HOUR);
        let id = one.create("2025-11-25").await.unwrap();
        assert!(two.mark_initialized(&id).await.unwrap());
        assert!(one.touch(&id).await.unwrap().unwrap().initialized);
        assert!(two.terminate(&id).await.unwrap());
        assert!(!live(&one, &id).await, "404 on the replica that opened it");
        // The store holds the hash, not the id.
        assert!(store.legacy_session(&id).await.unwrap().is_none());
    }

    #[test]
    fn the_key_is_the_sha256_of_the_id() {
        assert_eq!(
            key_of("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}

#[cfg(test)]
mod bench {
    use super::*;

    /// `initialize` cost with a full table, now a store
    /// transaction. A measurement, not a check: run with
    /// `cargo test -p gateway --lib session::bench -- --ignored --nocapture`.
    #[tokio::test]
    #[ignore = "measurement; prints timings"]
    async fn create_with_10000_sessions() {
        for filled in [0_usize, 10_000] {
            let dir =
                std::env::temp_dir().join(format!("dgw-session-bench-{}", uuid::Uuid::new_v4()));
            let store = crate::store::open(&format!("sqlite://{}/s.sqlite", dir.display()))
                .await
                .unwrap();
            let sessions = Sessions::new(store, 10_000, Duration::from_secs(3600));
            for _ in 0..filled {
                sessions.create("2025-11-25").await.unwrap();
            }
            let mut samples = Vec::with_capacity(500);
            for _ in 0..500 {
                let started = std::time::Instant::now();
                sessions.create("2025-11-25").await.unwrap();
                samples.push(started.elapsed());
            }
            samples.sort();
            println!(
                "{filled} sessions: create median {:?}, p99 {:?}",
                samples[samples.len() / 2],
                samples[samples.len() * 99 / 100]
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
