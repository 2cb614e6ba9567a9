//! Availability checks (docs/availability.md): the service behind
//! `dealeragent.inventory.verify_availability`, held in `AppState`.
//!
//! * Sources per rooftop (dealers file `gateway_settings.availability_source`):
//!   `feed` answers from the latest imported record; `http` asks the dealer
//!   system live ([`source`]).
//! * Bands and the one rule for insufficient authority or freshness:
//!   [`band`].
//! * Reuse: a live observation answers later checks of the same vehicle
//!   until `min(checked_at + 120 s, end of its band)`; checks after that go
//!   upstream again.
//! * Coalescing: concurrent checks of one vehicle that miss the cache share
//!   ONE upstream call (a per-vehicle `OnceCell` flight).
//! * Circuit breaker per source (its URL template): after
//!   [`BREAKER_THRESHOLD`] consecutive failed checks it opens for
//!   [`BREAKER_OPEN`]; while open every check of that source answers
//!   `dealeragent.upstream.unavailable` with the remaining open time as
//!   `retry_after_ms` and makes no upstream call. After that it is
//!   half-open: exactly ONE check (the probe) is let through, every other
//!   check meanwhile answers unavailable (retry after
//!   [`RETRY_AFTER_FAILURE_MS`]); the probe's success closes it, its
//!   failure reopens it, and a probe that never finishes (its caller went
//!   away) frees the slot for the next one.
//! * Every live observation is stored (`availability_observations`) with
//!   its provenance. This replica keeps the newest observation per vehicle
//!   in memory: the overlay that `get_vehicle` and `search` show when it is
//!   newer than the feed record. Another replica's observations are read
//!   from the store on a miss (verify and get_vehicle); search uses this
//!   replica's overlay only.

pub mod band;
pub mod source;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::OnceCell;

use crate::inventory::search::AvailabilityOverlay;
use crate::store::{
    AvailabilityObservation, HttpAvailabilitySource, ObservationSource, RooftopRecord, Store,
};

pub use band::{Band, Observed};

/// Consecutive failures that open a source's breaker.
pub const BREAKER_THRESHOLD: u32 = 5;
/// How long an open breaker refuses checks.
pub const BREAKER_OPEN: Duration = Duration::from_secs(30);
/// `retry_after_ms` of a failed check while the breaker is closed.
pub const RETRY_AFTER_FAILURE_MS: u64 = 1000;
/// Longest reuse of a live observation after its check.
pub const REUSE_SECONDS: i64 = band::VERIFIED_CURRENT_SECONDS;
/// Overlay entries kept per rooftop before old ones are pruned.
const MAX_OVERLAY_PER_ROOFTOP: usize = 50_000;

/// A check that produced no usable answer: the dealer system is down,
/// slow, or answered something untrustworthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unavailable {
    pub retry_after_ms: u64,
}

/// The outcome of a live (http) check.
#[derive(Debug, Clone)]
pub struct LiveCheck {
    /// `None` when the dealer system has no record of the unit (404).
    pub observation: Option<AvailabilityObservation>,
    /// An upstream call was made for this check (or for a concurrent one
    /// it joined); false when a reused observation answered.
    pub checked_live: bool,
}

type Key = (String, String);
type Flight = Arc<OnceCell<Result<LiveCheck, Unavailable>>>;

#[derive(Debug, Default)]
struct Breaker {
    failures: u32,
    open_until: Option<Instant>,
    /// Half-open and a probe is in flight.
    probing: bool,
}

/// What a source's circuit breaker is doing on this replica (for the
/// console's availability page, docs/console.md "Plain words").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Checks go upstream; `failures` consecutive failures so far.
    Closed { failures: u32 },
    /// Checks are refused for `remaining` more.
    Open { remaining: Duration },
    /// The open period is over: the next check is the one probe (or it is
    /// in flight).
    HalfOpen { probing: bool },
}

/// Whether a check may go upstream now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Admission {
    /// Closed: any number of checks.
    Closed,
    /// Half-open: this check is the one probe.
    Probe,
}

impl Breaker {
    /// Admit a check at `now`, or refuse it with the time to wait.
    fn admit(&mut self, now: Instant) -> Result<Admission, Duration> {
        match self.open_until {
            None => Ok(Admission::Closed),
            Some(until) if now < until => Err(until - now),
            Some(_) if self.probing => Err(Duration::from_millis(RETRY_AFTER_FAILURE_MS)),
            Some(_) => {
                self.probing = true;
                Ok(Admission::Probe)
            }
        }
    }

    /// Count a failure at `now`; `Some(open time)` when it (re)opens.
    fn fail(&mut self, now: Instant) -> Option<Duration> {
        self.probing = false;
        self.failures = self.failures.saturating_add(1);
        if self.failures >= BREAKER_THRESHOLD {
            self.open_until = Some(now + BREAKER_OPEN);
            Some(BREAKER_OPEN)
        } else {
            None
        }
    }
}

/// Frees the half-open probe slot if the probe ends without an outcome
/// (its future was dropped), so the breaker cannot stay refused forever.
struct ProbeSlot<'a> {
    service: &'a AvailabilityService,
    key: &'a str,
    armed: bool,
}

impl Drop for ProbeSlot<'_> {
    fn drop(&mut self) {
        if self.armed
            && let Some(b) = lock(&self.service.breakers).get_mut(self.key)
        {
            b.probing = false;
        }
    }
}

/// The availability service (one per replica).
pub struct AvailabilityService {
    client: source::SourceClient,
    /// rooftop id → vehicle id → newest live observation known here.
    latest: Mutex<HashMap<String, HashMap<String, AvailabilityObservation>>>,
    flights: Mutex<HashMap<Key, Flight>>,
    breakers: Mutex<HashMap<String, Breaker>>,
    upstream_calls: AtomicU64,
    /// Each stored live observation whose band or status differs from the
    /// vehicle's previous one known here (`None`: none was, the feed's
    /// status is the previous), for the change hub (`crate::watch`).
    changes: tokio::sync::broadcast::Sender<ObservedChange>,
}

/// A live observation that may change what a caller is shown: the
/// vehicle's previous live observation known to this replica, if any, and
/// the new one.
pub type ObservedChange = (Option<AvailabilityObservation>, AvailabilityObservation);

/// Observed changes waiting for the change hub; a hub that falls further
/// behind skips them (it is told it lagged).
const CHANGES_QUEUE: usize = 256;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl AvailabilityService {
    pub fn new() -> Result<Self, String> {
        Ok(Self {
            client: source::SourceClient::new()?,
            latest: Mutex::new(HashMap::new()),
            flights: Mutex::new(HashMap::new()),
            breakers: Mutex::new(HashMap::new()),
            upstream_calls: AtomicU64::new(0),
            changes: tokio::sync::broadcast::channel(CHANGES_QUEUE).0,
        })
    }

    /// Live observations whose band or status changed ([`ObservedChange`]).
    pub fn watch_changes(&self) -> tokio::sync::broadcast::Receiver<ObservedChange> {
        self.changes.subscribe()
    }

    /// Upstream calls made so far by this replica (metrics, tests).
    pub fn upstream_calls(&self) -> u64 {
        self.upstream_calls.load(Ordering::Relaxed)
    }

    /// Check one vehicle against an http source: a reusable observation
    /// (memory, then the store), else one coalesced upstream call guarded
    /// by the source's breaker.
    pub async fn check_http(
        &self,
        store: &dyn Store,
        rooftop: &RooftopRecord,
        source: &HttpAvailabilitySource,
        organization_id: &str,
        target: &source::Target<'_>,
    ) -> Result<LiveCheck, Unavailable> {
        let key: Key = (rooftop.rooftop_id.clone(), target.vehicle_id.to_owned());
        if let Some(observation) = self.reusable(&key, Utc::now()) {
            return Ok(LiveCheck {
                observation: Some(observation),
                checked_live: false,
            });
        }
        let flight = lock(&self.flights).entry(key.clone()).or_default().clone();
        let result = flight
            .get_or_init(|| self.fly(store, &key, source, organization_id, target))
            .await
            .clone();
        {
            let mut flights = lock(&self.flights);
            if flights.get(&key).is_some_and(|f| Arc::ptr_eq(f, &flight)) {
                flights.remove(&key);
            }
        }
        result
    }

    /// The body of one flight.
    async fn fly(
        &self,
        store: &dyn Store,
        key: &Key,
        source: &HttpAvailabilitySource,
        organization_id: &str,
        target: &source::Target<'_>,
    ) -> Result<LiveCheck, Unavailable> {
        let now = Utc::now();
        if let Some(observation) = self.reusable(key, now) {
            return Ok(LiveCheck {
                observation: Some(observation),
                checked_live: false,
            });
        }
        // Another replica may have checked it moments ago.
        match store.latest_availability(&key.0, &key.1).await {
            Ok(Some(o)) => {
                self.remember(o.clone());
                if reusable_at(&o, now) {
                    return Ok(LiveCheck {
                        observation: Some(o),
                        checked_live: false,
                    });
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "reading availability observations failed"),
        }
        let breaker_key = &source.url_template;
        // Metrics label the source by its rooftop id (docs/operations.md
        // "Metrics": no tenant data beyond organization and rooftop ids; the
        // URL is the dealer's).
        let label = key.0.clone();
        let admission = self.breaker_admit(breaker_key).map_err(|wait| {
            count_upstream(&label, "breaker_open");
            Unavailable {
                retry_after_ms: millis(wait),
            }
        })?;
        let mut probe = ProbeSlot {
            service: self,
            key: breaker_key,
            armed: admission == Admission::Probe,
        };
        self.upstream_calls.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let answer = self.client.check(source, target, now).await;
        // An outcome is recorded below either way: the slot is no longer
        // the drop guard's to free.
        probe.armed = false;
        metrics::histogram!(
            "dealer_gateway_availability_upstream_duration_seconds",
            "source" => label.clone()
        )
        .record(started.elapsed().as_secs_f64());
        count_upstream(
            &label,
            match &answer {
                // A 404 is an answer (nothing known about the unit).
                Ok(_) | Err(source::CheckFailure::NoRecord) => "ok",
                Err(source::CheckFailure::Timeout) => "timeout",
                Err(
                    source::CheckFailure::MissingIdentifier(_)
                    | source::CheckFailure::Transport(_)
                    | source::CheckFailure::Status(_)
                    | source::CheckFailure::TooLarge
                    | source::CheckFailure::MalformedJson
                    | source::CheckFailure::Schema(_)
                    | source::CheckFailure::WrongVehicle
                    | source::CheckFailure::FutureObservation,
                ) => "error",
            },
        );
        match answer {
            Ok(answer) => {
                self.breaker_success(breaker_key);
                let observation = AvailabilityObservation {
                    organization_id: organization_id.to_owned(),
                    rooftop_id: key.0.clone(),
                    vehicle_id: key.1.clone(),
                    status: answer.status,
                    authority: source.authority.clone(),
                    observed_at: trunc_micros(answer.observed_at),
                    source: ObservationSource {
                        kind: "http".into(),
                        source_name: source::source_name(source),
                    },
                    checked_at: trunc_micros(Utc::now()),
                };
                if let Err(e) = store.record_availability(&observation).await {
                    tracing::error!(error = %e, "storing an availability observation failed");
                }
                self.learn(observation.clone());
                Ok(LiveCheck {
                    observation: Some(observation),
                    checked_live: true,
                })
            }
            Err(source::CheckFailure::NoRecord) => {
                // An answer, not a failure: nothing is known about the unit.
                self.breaker_success(breaker_key);
                Ok(LiveCheck {
                    observation: None,
                    checked_live: true,
                })
            }
            Err(failure) => {
                let opened = self.breaker_failure(breaker_key);
                tracing::warn!(
                    rooftop.id = %key.0,
                    vehicle.id = %key.1,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    breaker.opened = opened.is_some(),
                    %failure,
                    "availability check failed"
                );
                Err(Unavailable {
                    retry_after_ms: opened.map_or(RETRY_AFTER_FAILURE_MS, millis),
                })
            }
        }
    }

    fn reusable(&self, key: &Key, now: DateTime<Utc>) -> Option<AvailabilityObservation> {
        lock(&self.latest)
            .get(&key.0)
            .and_then(|m| m.get(&key.1))
            .filter(|o| reusable_at(o, now))
            .cloned()
    }

    /// Keep `o` as the vehicle's newest observation unless a newer one is
    /// already known.
    /// A live observation made here or, through the store's change
    /// notifications, by another replica (docs/operations.md "Replicas"):
    /// kept as the vehicle's newest, and handed to the change hub when it
    /// changes the band or status this replica showed. The replica that made
    /// it hears its own notification too; by then it holds the observation,
    /// so nothing is told twice.
    pub fn learn(&self, observation: AvailabilityObservation) {
        let previous = self.overlay(&observation.rooftop_id, &observation.vehicle_id);
        if previous.as_ref().is_some_and(|p| {
            (p.observed_at, p.checked_at) >= (observation.observed_at, observation.checked_at)
        }) {
            return;
        }
        let now = Utc::now();
        let shown =
            |o: &AvailabilityObservation| (band::band(Some(&observed(o)), now), o.status.clone());
        if previous.as_ref().map(shown) != Some(shown(&observation)) {
            // Nobody listening is no error.
            let _ = self.changes.send((previous, observation.clone()));
        }
        self.remember(observation);
    }

    fn remember(&self, o: AvailabilityObservation) {
        let mut latest = lock(&self.latest);
        let rooftop = latest.entry(o.rooftop_id.clone()).or_default();
        if rooftop.len() >= MAX_OVERLAY_PER_ROOFTOP {
            let cutoff = Utc::now() - chrono::Duration::seconds(band::ASSERTED_SECONDS);
            rooftop.retain(|_, v| v.observed_at >= cutoff);
            if rooftop.len() >= MAX_OVERLAY_PER_ROOFTOP {
                rooftop.clear();
            }
        }
        match rooftop.get(&o.vehicle_id) {
            Some(old) if (old.observed_at, old.checked_at) > (o.observed_at, o.checked_at) => {}
            _ => {
                rooftop.insert(o.vehicle_id.clone(), o);
            }
        }
    }

    /// The newest live observation of a vehicle known to this replica.
    pub fn overlay(&self, rooftop_id: &str, vehicle_id: &str) -> Option<AvailabilityObservation> {
        lock(&self.latest)
            .get(rooftop_id)
            .and_then(|m| m.get(vehicle_id))
            .cloned()
    }

    /// [`Self::overlay`], falling back to the store (another replica's
    /// checks) for rooftops with an http source.
    pub async fn overlay_or_store(
        &self,
        store: &dyn Store,
        rooftop: &RooftopRecord,
        vehicle_id: &str,
    ) -> Option<AvailabilityObservation> {
        if let Some(o) = self.overlay(&rooftop.rooftop_id, vehicle_id) {
            return Some(o);
        }
        if !matches!(
            rooftop.settings.availability_source,
            crate::store::AvailabilitySource::Http(_)
        ) {
            return None;
        }
        match store
            .latest_availability(&rooftop.rooftop_id, vehicle_id)
            .await
        {
            Ok(Some(o)) => {
                self.remember(o.clone());
                Some(o)
            }
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(error = %e, "reading availability observations failed");
                None
            }
        }
    }

    /// The search overlay of `rooftop_ids`: each checked vehicle's status as
    /// it would be reported at `now` (by the band rule).
    pub fn search_overlay(
        &self,
        rooftop_ids: &[String],
        now: DateTime<Utc>,
    ) -> AvailabilityOverlay {
        let latest = lock(&self.latest);
        let mut out = AvailabilityOverlay::new();
        for id in rooftop_ids {
            let Some(vehicles) = latest.get(id) else {
                continue;
            };
            let entries = vehicles
                .values()
                .map(|o| {
                    (
                        o.vehicle_id.clone(),
                        reported_status(o, now).to_owned(),
                        o.observed_at,
                    )
                })
                .collect();
            out.insert(id.clone(), entries);
        }
        out
    }

    /// The breaker of `source` on this replica, read without changing it.
    pub fn breaker_state(&self, source: &HttpAvailabilitySource) -> BreakerState {
        self.breaker_state_of(&source.url_template)
    }

    fn breaker_state_of(&self, key: &str) -> BreakerState {
        match lock(&self.breakers).get(key) {
            None => BreakerState::Closed { failures: 0 },
            Some(b) => match b.open_until {
                None => BreakerState::Closed {
                    failures: b.failures,
                },
                Some(until) => match until.checked_duration_since(Instant::now()) {
                    Some(remaining) if !remaining.is_zero() => BreakerState::Open { remaining },
                    Some(_) | None => BreakerState::HalfOpen { probing: b.probing },
                },
            },
        }
    }

    fn breaker_admit(&self, key: &str) -> Result<Admission, Duration> {
        match lock(&self.breakers).get_mut(key) {
            None => Ok(Admission::Closed),
            Some(b) => b.admit(Instant::now()),
        }
    }

    fn breaker_success(&self, key: &str) {
        lock(&self.breakers).remove(key);
    }

    /// Count a failure; `Some(open time)` when it opens the breaker.
    fn breaker_failure(&self, key: &str) -> Option<Duration> {
        lock(&self.breakers)
            .entry(key.to_owned())
            .or_default()
            .fail(Instant::now())
    }
}

/// Count one upstream check of the source of rooftop `source` by outcome
/// (`ok`, `timeout`, `error`, or `breaker_open` when none was made).
fn count_upstream(source: &str, outcome: &'static str) {
    metrics::counter!(
        "dealer_gateway_availability_upstream_total",
        "source" => source.to_owned(),
        "outcome" => outcome
    )
    .increment(1);
}

/// An observation answers a check without going upstream until
/// `min(checked_at + 120 s, end of the band it has at check time)`.
fn reusable_at(o: &AvailabilityObservation, now: DateTime<Utc>) -> bool {
    let observed = observed(o);
    let at_check = band::band(Some(&observed), o.checked_at);
    let band_end = band::band_end(at_check, o.observed_at);
    let reuse_end = o.checked_at + chrono::Duration::seconds(REUSE_SECONDS);
    now >= o.checked_at && band_end.is_some_and(|end| now <= end.min(reuse_end))
}

/// The band view of a stored observation.
pub fn observed(o: &AvailabilityObservation) -> Observed<'_> {
    Observed {
        status: &o.status,
        authority: &o.authority,
        observed_at: o.observed_at,
    }
}

/// The status a caller is shown for `o` at `now` (the band rule).
pub fn reported_status(o: &AvailabilityObservation, now: DateTime<Utc>) -> &str {
    match band::band(Some(&observed(o)), now) {
        Band::VerifiedCurrent | Band::RecentAuthoritative => &o.status,
        Band::Asserted if o.status != "available" => &o.status,
        Band::Asserted | Band::Stale | Band::Unknown => "unknown",
    }
}

/// Reason prefix naming who observed a live observation.
pub const LIVE_SOURCE: &str = "The dealer system";
/// Reason prefix for feed observations.
pub const FEED_SOURCE: &str = "The dealer's feed";

/// The rooftop's http source, if it has one.
pub fn http_source(rooftop: &RooftopRecord) -> Option<&HttpAvailabilitySource> {
    match &rooftop.settings.availability_source {
        crate::store::AvailabilitySource::Http(s) => Some(s),
        crate::store::AvailabilitySource::Feed => None,
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// Both backends keep microseconds.
fn trunc_micros(t: DateTime<Utc>) -> DateTime<Utc> {
    use chrono::SubsecRound as _;
    t.trunc_subsecs(6)
}

/// The parts of an observation the tool reports (feed or live).
#[derive(Debug, Clone)]
pub struct AvailabilityObservationView {
    pub status: String,
    pub authority: String,
    pub observed_at: DateTime<Utc>,
}

/// Replace the `availability` of a rendered vehicle with `o` when `o` is
/// newer than the vehicle's feed record (`feed_observed_at`): status by the
/// band rule, authority, observation time and validity by its band.
pub fn apply_overlay(
    vehicle: &mut serde_json::Value,
    o: Option<&AvailabilityObservation>,
    feed_observed_at: DateTime<Utc>,
    now: DateTime<Utc>,
) {
    let Some(o) = o.filter(|o| o.observed_at > feed_observed_at) else {
        return;
    };
    let reported = band::report(Some(&observed(o)), OVERLAY_SOURCE, now);
    if let Ok(availability) = serde_json::to_value(&reported.availability) {
        vehicle["availability"] = availability;
    }
}

/// Reason prefix of an overlaid availability.
pub const OVERLAY_SOURCE: &str = "An availability check of the dealer system";

#[cfg(test)]
mod breaker_tests {
    use super::*;

    fn opened(now: Instant) -> Breaker {
        let mut b = Breaker::default();
        for _ in 0..BREAKER_THRESHOLD {
            b.fail(now);
        }
        b
    }

    #[test]
    fn open_refuses_with_the_remaining_time() {
        let t0 = Instant::now();
        let mut b = opened(t0);
        let wait = b.admit(t0 + Duration::from_secs(10)).unwrap_err();
        assert_eq!(wait, BREAKER_OPEN - Duration::from_secs(10));
    }

    /// After the open period exactly one probe goes upstream; every other
    /// concurrent check is refused meanwhile.
    #[test]
    fn half_open_admits_exactly_one_probe() {
        let t0 = Instant::now();
        let mut b = opened(t0);
        let later = t0 + BREAKER_OPEN + Duration::from_millis(1);
        assert_eq!(b.admit(later), Ok(Admission::Probe));
        for _ in 0..50 {
            assert_eq!(
                b.admit(later),
                Err(Duration::from_millis(RETRY_AFTER_FAILURE_MS))
            );
        }
    }

    /// The console reads the breaker without changing it (docs/console.md).
    #[test]
    fn the_breaker_state_is_read_as_it_is() {
        let service = AvailabilityService::new().unwrap();
        assert_eq!(
            service.breaker_state_of("src"),
            BreakerState::Closed { failures: 0 }
        );
        service.breaker_failure("src");
        service.breaker_failure("src");
        assert_eq!(
            service.breaker_state_of("src"),
            BreakerState::Closed { failures: 2 }
        );
        for _ in 2..BREAKER_THRESHOLD {
            service.breaker_failure("src");
        }
        match service.breaker_state_of("src") {
            BreakerState::Open { remaining } => assert!(remaining <= BREAKER_OPEN),
            other => panic!("expected open, got {other:?}"),
        }
        // Reading twice changes nothing (no probe is taken).
        assert!(matches!(
            service.breaker_state_of("src"),
            BreakerState::Open { .. }
        ));
        let Some(t0) = Instant::now().checked_sub(BREAKER_OPEN + Duration::from_secs(1)) else {
            return;
        };
        lock(&service.breakers).insert("src".into(), opened(t0));
        assert_eq!(
            service.breaker_state_of("src"),
            BreakerState::HalfOpen { probing: false }
        );
    }

    #[test]
    fn a_failed_probe_reopens() {
        let t0 = Instant::now();
        let mut b = opened(t0);
        let later = t0 + BREAKER_OPEN + Duration::from_millis(1);
        assert_eq!(b.admit(later), Ok(Admission::Probe));
        assert_eq!(b.fail(later), Some(BREAKER_OPEN));
        assert!(b.admit(later + Duration::from_secs(1)).is_err());
    }

    /// A probe whose caller went away (its future dropped before an
    /// outcome) frees the slot: the next check becomes the probe.
    #[test]
    fn a_dropped_probe_frees_the_slot() {
        let service = AvailabilityService::new().unwrap();
        let Some(t0) = Instant::now().checked_sub(BREAKER_OPEN + Duration::from_secs(1)) else {
            return; // the clock started less than 31 s ago; nothing to test
        };
        lock(&service.breakers).insert("src".into(), opened(t0));
        assert_eq!(service.breaker_admit("src"), Ok(Admission::Probe));
        assert!(service.breaker_admit("src").is_err());
        drop(ProbeSlot {
            service: &service,
            key: "src",
            armed: true,
        });
        assert_eq!(service.breaker_admit("src"), Ok(Admission::Probe));
    }
}
