//! Legacy (2025-11-25) transport sessions.
//!
//! A session id is issued on `initialize`, required afterwards, and answered
//! 404 once terminated (DELETE) or forgotten (idle timeout, capacity). It is
//! transport state only: never identity or authorization (AAP MCP binding).
//! Sessions live in this process's memory, so several replicas need sticky
//! routing for legacy clients; modern clients are stateless and need none.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One negotiated legacy session.
#[derive(Debug, Clone)]
pub struct Session {
    pub protocol_version: String,
    pub initialized: bool,
    last_seen: Instant,
}

/// The session table.
pub struct Sessions {
    inner: Mutex<HashMap<String, Session>>,
    max: usize,
    idle: Duration,
}

impl Sessions {
    pub fn new(max: usize, idle: Duration) -> Self {
        Self {
            inner: Mutex::new(HashMap::new()),
            max: max.max(1),
            idle,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        // A poisoned lock only means another request panicked mid-update of
        // a plain map; the map itself is still consistent.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Start a session and return its id: 128 random bits (UUID v4 from the
    /// OS CSPRNG), visible ASCII as the transport requires.
    pub fn create(&self, protocol_version: &str) -> String {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let mut map = self.lock();
        let idle = self.idle;
        map.retain(|_, s| s.last_seen.elapsed() < idle);
        if map.len() >= self.max
            && let Some(oldest) = map
                .iter()
                .min_by_key(|(_, s)| s.last_seen)
                .map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
        map.insert(
            id.clone(),
            Session {
                protocol_version: protocol_version.to_owned(),
                initialized: false,
                last_seen: Instant::now(),
            },
        );
        id
    }

    /// Look up a live session and mark it used.
    pub fn touch(&self, id: &str) -> Option<Session> {
        let mut map = self.lock();
        let idle = self.idle;
        let session = map.get_mut(id)?;
        if session.last_seen.elapsed() >= idle {
            map.remove(id);
            return None;
        }
        session.last_seen = Instant::now();
        Some(session.clone())
    }

    /// Record `notifications/initialized`.
    pub fn mark_initialized(&self, id: &str) {
        if let Some(s) = self.lock().get_mut(id) {
            s.initialized = true;
        }
    }

    /// End a session; true when it existed.
    pub fn terminate(&self, id: &str) -> bool {
        self.lock().remove(id).is_some()
    }
}
