//! The registry behind [`super::Hub`]: streams, the URIs each holds, the
//! per-principal counts and each stream's bounded queue.
//!
//! One lock guards it all; nothing under it awaits or allocates beyond the
//! bounded queues. A stream's queue is its own (`Shared`), so a stream
//! reads its notices without the registry lock.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use super::{EndReason, Hub, Limits, Notice, WatchError};
use crate::auth::Principal;

/// The queue of one stream, shared by the registry (producer) and the
/// [`Stream`] (the one consumer).
#[derive(Default)]
pub(crate) struct Shared {
    queue: Mutex<Queue>,
    ready: tokio::sync::Notify,
}

#[derive(Default)]
struct Queue {
    notices: VecDeque<Notice>,
    ended: Option<EndReason>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queue `notice`, or end the stream as a slow consumer when `capacity`
    /// notices already wait. `Ok(false)`: already ended, nothing queued.
    fn push(&self, notice: Notice, capacity: usize) -> Result<bool, ()> {
        let mut queue = self.lock();
        if queue.ended.is_some() {
            return Ok(false);
        }
        if queue.notices.len() >= capacity {
            return Err(());
        }
        queue.notices.push_back(notice);
        drop(queue);
        self.ready.notify_one();
        Ok(true)
    }

    /// End with `reason` (the first reason stays) and free the queue at
    /// once: what was not delivered is dropped, never kept. Returns whether
    /// this call ended it.
    fn end(&self, reason: EndReason) -> bool {
        let mut queue = self.lock();
        if queue.ended.is_some() {
            return false;
        }
        queue.ended = Some(reason);
        let dropped = queue.notices.len();
        // A new deque: the old one's buffer goes back to the allocator now.
        queue.notices = VecDeque::new();
        drop(queue);
        if dropped > 0 {
            metrics::counter!(super::metric::NOTIFICATIONS_DROPPED, "reason" => reason.as_str())
                .increment(dropped as u64);
        }
        metrics::counter!(super::metric::STREAMS_ENDED, "reason" => reason.as_str()).increment(1);
        self.ready.notify_one();
        true
    }

    /// Notices waiting (tests).
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.lock().notices.len()
    }
}

/// What the registry knows of one stream.
struct Entry {
    principal: Principal,
    /// The per-principal key (the grant subject); `None`: anonymous.
    key: Option<String>,
    uris: HashSet<String>,
    list_changed: bool,
    shared: Arc<Shared>,
}

/// Streams and subscriptions of one replica.
#[derive(Default)]
pub(crate) struct Registry {
    next_id: u64,
    streams: HashMap<u64, Entry>,
    by_uri: HashMap<String, HashSet<u64>>,
    streams_of: HashMap<String, usize>,
    subscriptions_of: HashMap<String, usize>,
    subscriptions: usize,
    shut_down: bool,
}

/// The per-principal key: the grant subject. Anonymous callers have none
/// (module docs).
fn key_of(principal: &Principal) -> Option<String> {
    principal.grant().map(|g| g.subject.clone())
}

impl Registry {
    pub(crate) fn open(
        &mut self,
        principal: &Principal,
        limits: &Limits,
    ) -> Result<(u64, Arc<Shared>), WatchError> {
        let key = key_of(principal);
        if let Some(key) = &key
            && self.streams_of.get(key).copied().unwrap_or(0) >= limits.streams_per_principal
        {
            return Err(WatchError::TooManyStreams {
                limit: limits.streams_per_principal,
            });
        }
        self.next_id += 1;
        let id = self.next_id;
        let shared = Arc::new(Shared::default());
        if self.shut_down {
            // A stream opened during shutdown ends at once, cleanly.
            shared.end(EndReason::Shutdown);
        }
        if let Some(key) = &key {
            *self.streams_of.entry(key.clone()).or_default() += 1;
        }
        self.streams.insert(
            id,
            Entry {
                principal: principal.clone(),
                key,
                uris: HashSet::new(),
                list_changed: false,
                shared: shared.clone(),
            },
        );
        self.gauges();
        Ok((id, shared))
    }

    fn gauges(&self) {
        metrics::gauge!(super::metric::SUBSCRIPTIONS).set(self.subscriptions as f64);
        metrics::gauge!(super::metric::SUBSCRIPTION_STREAMS).set(self.streams.len() as f64);
    }

    /// Hold `uri` for stream `id` (already authorized). Idempotent.
    pub(crate) fn subscribe(
        &mut self,
        id: u64,
        uri: &str,
        limits: &Limits,
    ) -> Result<bool, WatchError> {
        let Some(entry) = self.streams.get(&id) else {
            return Ok(false);
        };
        if entry.uris.contains(uri) {
            return Ok(false);
        }
        if entry.uris.len() >= limits.uris_per_stream {
            return Err(WatchError::TooManySubscriptions {
                limit: limits.uris_per_stream,
            });
        }
        if let Some(key) = &entry.key
            && self.subscriptions_of.get(key).copied().unwrap_or(0)
                >= limits.subscriptions_per_principal
        {
            return Err(WatchError::TooManySubscriptions {
                limit: limits.subscriptions_per_principal,
            });
        }
        let key = entry.key.clone();
        if let Some(entry) = self.streams.get_mut(&id) {
            entry.uris.insert(uri.to_owned());
        }
        if let Some(key) = key {
            *self.subscriptions_of.entry(key).or_default() += 1;
        }
        self.by_uri.entry(uri.to_owned()).or_default().insert(id);
        self.subscriptions += 1;
        self.gauges();
        Ok(true)
    }

    pub(crate) fn unsubscribe(&mut self, id: u64, uri: &str) -> bool {
        let Some(entry) = self.streams.get_mut(&id) else {
            return false;
        };
        if !entry.uris.remove(uri) {
            return false;
        }
        let key = entry.key.clone();
        self.forget(id, uri, key.as_deref());
        self.gauges();
        true
    }

    /// Drop one subscription from the indexes and counts.
    fn forget(&mut self, id: u64, uri: &str, key: Option<&str>) {
        if let Some(ids) = self.by_uri.get_mut(uri) {
            ids.remove(&id);
            if ids.is_empty() {
                self.by_uri.remove(uri);
            }
        }
        if let Some(key) = key
            && let Some(n) = self.subscriptions_of.get_mut(key)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.subscriptions_of.remove(key);
            }
        }
        self.subscriptions = self.subscriptions.saturating_sub(1);
    }

    pub(crate) fn want_list_changed(&mut self, id: u64, on: bool) {
        if let Some(entry) = self.streams.get_mut(&id) {
            entry.list_changed = on;
        }
    }

    pub(crate) fn uris(&self, id: u64) -> Vec<String> {
        let mut uris: Vec<String> = self
            .streams
            .get(&id)
            .map(|e| e.uris.iter().cloned().collect())
            .unwrap_or_default();
        uris.sort();
        uris
    }

    /// Forget stream `id` and every subscription it holds (its drop).
    pub(crate) fn close(&mut self, id: u64) {
        let Some(entry) = self.streams.remove(&id) else {
            return;
        };
        for uri in &entry.uris {
            self.forget(id, uri, entry.key.as_deref());
        }
        if let Some(key) = &entry.key
            && let Some(n) = self.streams_of.get_mut(key)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.streams_of.remove(key);
            }
        }
        self.gauges();
    }

    pub(crate) fn end_all(&mut self, reason: EndReason) {
        self.shut_down = reason == EndReason::Shutdown || self.shut_down;
        for entry in self.streams.values() {
            entry.shared.end(reason);
        }
    }

    pub(crate) fn subscribed(&self) -> Vec<String> {
        self.by_uri.keys().cloned().collect()
    }

    pub(crate) fn is_active(&self) -> bool {
        !self.by_uri.is_empty() || self.streams.values().any(|e| e.list_changed)
    }

    /// Queue `notice` for the streams holding `uri` (`None`: the streams
    /// that want list changes) whose principal passes `may_read`.
    pub(crate) fn deliver(
        &self,
        uri: Option<&str>,
        notice: &Notice,
        may_read: &dyn Fn(&Principal) -> bool,
        capacity: usize,
    ) -> usize {
        let targets: Vec<&Entry> = match uri {
            Some(uri) => self
                .by_uri
                .get(uri)
                .into_iter()
                .flatten()
                .filter_map(|id| self.streams.get(id))
                .collect(),
            None => self.streams.values().filter(|e| e.list_changed).collect(),
        };
        let mut queued = 0;
        for entry in targets {
            if !may_read(&entry.principal) {
                continue;
            }
            match entry.shared.push(notice.clone(), capacity) {
                Ok(true) => {
                    queued += 1;
                    metrics::counter!(super::metric::NOTIFICATIONS_QUEUED, "kind" => notice.kind())
                        .increment(1);
                }
                Ok(false) => {}
                Err(()) => {
                    metrics::counter!(super::metric::NOTIFICATIONS_DROPPED, "reason" => EndReason::SlowConsumer.as_str())
                        .increment(1);
                    entry.shared.end(EndReason::SlowConsumer);
                }
            }
        }
        queued
    }
}

/// One subscriber's stream: its subscriptions and its queue. Dropping it
/// unregisters every subscription it holds.
pub struct Stream {
    hub: Arc<Hub>,
    id: u64,
    shared: Arc<Shared>,
    principal: Principal,
}

impl Stream {
    pub(crate) fn new(hub: Arc<Hub>, id: u64, shared: Arc<Shared>, principal: Principal) -> Self {
        Self {
            hub,
            id,
            shared,
            principal,
        }
    }

    /// The principal this stream runs with.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// Hold `uri`, already authorized for this stream's principal
    /// ([`Self::subscribe`] authorizes first).
    pub(crate) fn hold(&mut self, uri: &str) -> Result<(), WatchError> {
        let added = self
            .hub
            .registry()
            .subscribe(self.id, uri, &self.hub.limits)?;
        if added {
            self.hub.active.notify_waiters();
        }
        Ok(())
    }

    pub fn unsubscribe(&mut self, uri: &str) -> bool {
        self.hub.registry().unsubscribe(self.id, uri)
    }

    pub fn want_list_changed(&mut self, on: bool) {
        self.hub.registry().want_list_changed(self.id, on);
        if on {
            self.hub.active.notify_waiters();
        }
    }

    pub fn uris(&self) -> Vec<String> {
        self.hub.registry().uris(self.id)
    }

    /// The next notice, or why the stream ended (then every later call
    /// returns the same reason). An ended stream's undelivered notices are
    /// dropped: the end is reported at once.
    pub async fn next(&mut self) -> Result<Notice, EndReason> {
        loop {
            {
                let mut queue = self.shared.lock();
                if let Some(reason) = queue.ended {
                    return Err(reason);
                }
                if let Some(notice) = queue.notices.pop_front() {
                    return Ok(notice);
                }
            }
            // One consumer: a notify before this wait leaves a permit.
            self.shared.ready.notified().await;
        }
    }

    /// End this stream for `reason` (its holder found the credential
    /// revoked or expired).
    pub fn end(&mut self, reason: EndReason) {
        self.shared.end(reason);
    }

    /// Notices waiting (tests).
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.shared.queued()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.hub.registry().close(self.id);
    }
}
