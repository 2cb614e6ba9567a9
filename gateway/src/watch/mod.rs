//! The per-replica change hub: who is subscribed to which `dealeragent://`
//! URI, and the bounded queue of notices of each subscriber's stream
//! (docs/mcp.md "Subscriptions"; docs/operations.md "Metrics").
//!
//! The transports (`subscriptions/listen` and the legacy GET stream) hold a
//! [`Stream`] each; the detection task ([`sources`]) learns what changed
//! from the inventory swaps, the program reloads, the availability
//! observations and the directory reloads, and hands each subscribed URI's
//! change to the streams that may read it ([`Hub::deliver`]).
//!
//! Bounds: URIs per stream, subscriptions per principal, streams per
//! principal and a fixed queue per stream. A stream whose queue is full is
//! ended as a slow consumer and its queue freed at once, so memory never
//! grows with notices nobody reads. The per-principal caps key on the grant
//! subject; an anonymous caller has no identity here (the client address
//! is not known below the transport), so anonymous streams are bounded per
//! stream only (and by the transport's per-address rate limits).
//!
//! This file imports nothing above the inventory layer (the state holds the
//! hub); authorization, which needs the state, is in [`authorize`] and the
//! detection task in [`sources`].

pub mod authorize;
pub mod detect;
pub mod registry;
pub mod sources;
pub mod uri;

use std::sync::Arc;
use std::time::Duration;

use crate::auth::Principal;

use registry::Registry;
pub use registry::Stream;

/// The bounds of the hub (docs/operations.md "Metrics" lists what they
/// count).
#[derive(Debug, Clone)]
pub struct Limits {
    /// URIs one stream may hold.
    pub uris_per_stream: usize,
    /// URIs all streams of one grant subject may hold together.
    pub subscriptions_per_principal: usize,
    /// Streams one grant subject may hold open.
    pub streams_per_principal: usize,
    /// Notices waiting per stream; one more ends the stream.
    pub queue: usize,
    /// How long a transport lets a stream idle before a keep-alive.
    pub keep_alive: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            uris_per_stream: 256,
            subscriptions_per_principal: 1000,
            streams_per_principal: 8,
            queue: 256,
            keep_alive: Duration::from_secs(15),
        }
    }
}

/// Why a subscription or a stream was refused. Closed; its words never
/// echo the request.
#[derive(Debug)]
pub enum WatchError {
    /// Not a `dealeragent://` URI this gateway serves, absent, or not
    /// visible to the caller: the same words for all three, so a refusal
    /// never reveals a foreign record (DAP-CORE-029..031).
    NotReadable,
    TooManySubscriptions {
        limit: usize,
    },
    TooManyStreams {
        limit: usize,
    },
}

impl WatchError {
    /// The `error.data.reason` of a cap (`None` for [`Self::NotReadable`]).
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            WatchError::NotReadable => None,
            WatchError::TooManySubscriptions { .. } => Some("too_many_subscriptions"),
            WatchError::TooManyStreams { .. } => Some("too_many_streams"),
        }
    }
}

impl std::fmt::Display for WatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WatchError::NotReadable => f.write_str(
                "this resource does not exist or is not visible to you; subscribe to a dealeragent:// URI you may read",
            ),
            WatchError::TooManySubscriptions { limit } => write!(
                f,
                "too many subscriptions: at most {limit} are allowed; unsubscribe from some first"
            ),
            WatchError::TooManyStreams { limit } => write!(
                f,
                "too many open notification streams: at most {limit} per credential; close one first"
            ),
        }
    }
}

impl std::error::Error for WatchError {}

/// What a stream is told.
#[derive(Debug, Clone)]
pub enum Notice {
    /// The resource at `uri` changed in these ways (the wire contract's
    /// kinds: `added`, `removed`, `price_changed`, ...).
    Updated {
        uri: String,
        kinds: Vec<&'static str>,
        snapshot_version: String,
    },
    /// The set of resources the principal sees changed.
    ListChanged,
}

impl Notice {
    /// The metric label of this notice.
    fn kind(&self) -> &'static str {
        match self {
            Notice::Updated { .. } => "updated",
            Notice::ListChanged => "list_changed",
        }
    }
}

/// Why a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    SlowConsumer,
    CredentialRevoked,
    CredentialExpired,
    Shutdown,
}

impl EndReason {
    /// The wire contract's `error.data.reason` (and the metric label).
    pub fn as_str(&self) -> &'static str {
        match self {
            EndReason::SlowConsumer => "slow_consumer",
            EndReason::CredentialRevoked => "credential_revoked",
            EndReason::CredentialExpired => "credential_expired",
            EndReason::Shutdown => "shutdown",
        }
    }
}

/// The hub of one replica, shared by every transport through the state.
pub struct Hub {
    limits: Limits,
    registry: std::sync::Mutex<Registry>,
    revocations: tokio::sync::watch::Sender<u64>,
    /// Signalled when the first subscription appears, so the detection
    /// task on SQLite starts asking for reloads only while someone listens.
    active: tokio::sync::Notify,
}

impl Hub {
    pub fn new(limits: Limits) -> Self {
        let (revocations, _) = tokio::sync::watch::channel(0);
        Self {
            limits,
            registry: std::sync::Mutex::new(Registry::default()),
            revocations,
            active: tokio::sync::Notify::new(),
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        // Every mutation leaves the registry consistent before it can
        // panic; a poisoned lock still holds a valid registry.
        self.registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new stream for `principal` (counted against
    /// `streams_per_principal` until dropped).
    ///
    /// # Errors
    /// [`WatchError::TooManyStreams`] past the cap.
    pub fn open(self: &Arc<Self>, principal: &Principal) -> Result<Stream, WatchError> {
        let (id, shared) = self.registry().open(principal, &self.limits)?;
        Ok(Stream::new(self.clone(), id, shared, principal.clone()))
    }

    /// End every stream with [`EndReason::Shutdown`] (graceful shutdown).
    pub fn shutdown(&self) {
        self.registry().end_all(EndReason::Shutdown);
    }

    /// Bumped whenever a token revocation arrives (`StoreChange::TokenRevoked`
    /// or a local revoke): a stream holder re-verifies its credential when
    /// it changes.
    pub fn revocations(&self) -> tokio::sync::watch::Receiver<u64> {
        self.revocations.subscribe()
    }

    /// A token was revoked somewhere: every stream holder re-verifies.
    pub fn revoked(&self) {
        self.revocations.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Every URI some stream holds, once each (the detection task's work
    /// list: work proportional to subscriptions, not to inventory).
    pub fn subscribed(&self) -> Vec<String> {
        self.registry().subscribed()
    }

    /// Whether any stream holds a subscription or wants list changes.
    pub fn is_active(&self) -> bool {
        self.registry().is_active()
    }

    /// Wait until some stream subscribes (returns at once when one has).
    pub async fn until_active(&self) {
        loop {
            let notified = self.active.notified();
            if self.is_active() {
                return;
            }
            notified.await;
        }
    }

    /// Queue `notice` for every stream holding `uri` whose principal
    /// `may_read` passes; returns how many were queued.
    pub fn deliver(
        &self,
        uri: &str,
        notice: &Notice,
        may_read: &dyn Fn(&Principal) -> bool,
    ) -> usize {
        self.registry()
            .deliver(Some(uri), notice, may_read, self.limits.queue)
    }

    /// Queue [`Notice::ListChanged`] for every stream that wants it and
    /// whose principal's list `changed`.
    pub fn deliver_list_changed(&self, changed: &dyn Fn(&Principal) -> bool) -> usize {
        self.registry()
            .deliver(None, &Notice::ListChanged, changed, self.limits.queue)
    }
}

/// The names of the hub's metrics (described in `crate::metrics`, listed in
/// docs/operations.md "Metrics").
pub mod metric {
    pub const SUBSCRIPTIONS: &str = "dealer_gateway_subscriptions";
    pub const SUBSCRIPTION_STREAMS: &str = "dealer_gateway_subscription_streams";
    pub const NOTIFICATIONS_QUEUED: &str = "dealer_gateway_notifications_queued_total";
    pub const NOTIFICATIONS_DROPPED: &str = "dealer_gateway_notifications_dropped_total";
    pub const STREAMS_ENDED: &str = "dealer_gateway_subscription_streams_ended_total";
}

#[cfg(test)]
mod tests;
