//! The gauge `dealer_gateway_disclosure_lint_failing_vehicles`
//! (docs/operations.md "The disclosure lint metric", docs/lint.md): per
//! rooftop and confirmed rule, the vehicles whose disclosure fails it, for
//! a buyer in the rooftop's own jurisdiction (the console's fix list says
//! the same).
//!
//! A scrape never waits for a lint. It notes which rooftops' inputs
//! changed since their counts were computed (the snapshot version, the
//! rooftop's settings from the dealers file, the catalogue version) and,
//! when no refresh is running, starts one background task that lints
//! those rooftops one after the other on a blocking thread
//! (`spawn_blocking`), never on the async workers that answer agents, and
//! sets the gauges as each rooftop is done. Until then a scrape reports
//! the previous counts (a rooftop linted for the first time has no series
//! yet). Memory: one entry per rooftop of the directory, one count per
//! rule that applies there; the vehicles are read one at a time.
//!
//! Zero series are kept, consistently: every confirmed rule that applies
//! at the rooftop has a series, 0 when no vehicle fails it, so a fix shows
//! as a drop to 0 rather than a series that vanishes; a rule that stops
//! applying (a rooftop moved, a catalogue change) and a rooftop that leaves
//! the directory are set to 0, then forgotten.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use chrono::Utc;

use super::LINT_FAILING;
use crate::directory::DirectorySnapshot;
use crate::domain::dealer::{OrganizationRecord, RooftopRecord};
use crate::inventory::index::SnapshotIndex;
use crate::inventory::live::InventoryView;
use crate::lint::rooftop as roof;
use crate::state::AppState;
use crate::store::Store;

/// What a rooftop's counts were computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    snapshot_version: i64,
    /// Of what the facts read from the dealers file: the rooftop's
    /// address (its place) and pricing settings, and the organization's
    /// source (provenance).
    settings: u64,
    catalogue_version: String,
}

struct Entry {
    key: Key,
    /// Confirmed rule -> failing vehicles.
    failing: BTreeMap<String, usize>,
}

/// (organization id, rooftop id).
type Id = (String, String);

static CACHE: LazyLock<Mutex<HashMap<Id, Entry>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// One refresh task at a time (single flight).
static REFRESHING: AtomicBool = AtomicBool::new(false);

/// A rooftop whose counts are out of date, with what to lint it from.
struct Stale {
    id: Id,
    key: Key,
    organization: OrganizationRecord,
    rooftop: RooftopRecord,
    index: Arc<SnapshotIndex>,
}

fn cache() -> std::sync::MutexGuard<'static, HashMap<Id, Entry>> {
    CACHE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn set(organization: &str, rooftop: &str, rule: &str, value: usize) {
    metrics::gauge!(
        LINT_FAILING,
        "organization_id" => organization.to_owned(),
        "rooftop_id" => rooftop.to_owned(),
        "rule" => rule.to_owned()
    )
    .set(value as f64);
}

/// Notes the rooftops of `directory` with a snapshot in `view` whose
/// counts are out of date and starts their refresh unless one runs;
/// zeroes and forgets the rooftops that left the directory.
pub fn observe(state: &AppState, directory: &Arc<DirectorySnapshot>, view: &InventoryView) {
    let catalogue_version = pricing::lint::catalogue().version.clone();
    let mut stale = Vec::new();
    let mut present: Vec<Id> = Vec::new();
    {
        let cache = cache();
        for organization in &directory.organizations {
            for rooftop in &organization.rooftops {
                let Some(inventory) = view.rooftop(&rooftop.rooftop_id) else {
                    continue;
                };
                let id = (
                    organization.organization_id.clone(),
                    rooftop.rooftop_id.clone(),
                );
                present.push(id.clone());
                let key = Key {
                    snapshot_version: inventory.latest.version(),
                    settings: fingerprint(organization, rooftop),
                    catalogue_version: catalogue_version.clone(),
                };
                if cache.get(&id).is_none_or(|e| e.key != key) {
                    stale.push(Stale {
                        id,
                        key,
                        organization: organization.clone(),
                        rooftop: rooftop.clone(),
                        index: inventory.latest.clone(),
                    });
                }
            }
        }
    }
    cache().retain(|id, entry| {
        let keep = present.contains(id);
        if !keep {
            for rule in entry.failing.keys() {
                set(&id.0, &id.1, rule, 0);
            }
        }
        keep
    });
    if stale.is_empty() || REFRESHING.swap(true, Ordering::AcqRel) {
        return;
    }
    let store = state.store.clone();
    tokio::spawn(async move {
        for rooftop in stale {
            refresh(store.clone(), rooftop).await;
        }
        REFRESHING.store(false, Ordering::Release);
    });
}

/// Lints one rooftop off the async workers and sets its gauges.
async fn refresh(store: Arc<dyn Store>, stale: Stale) {
    let Stale {
        id,
        key,
        organization,
        rooftop,
        index,
    } = stale;
    let handle = tokio::runtime::Handle::current();
    let started = std::time::Instant::now();
    let vehicles = index.len();
    let computed = tokio::task::spawn_blocking(move || {
        let jurisdiction = crate::preview::rooftop_jurisdiction(&rooftop.dap);
        let at = roof::Rooftop {
            organization: &organization,
            rooftop: &rooftop,
            snapshot_version: index.version(),
            jurisdiction: jurisdiction.as_ref(),
            now: Utc::now(),
        };
        // One vehicle at a time: memory does not grow with the inventory
        // (no examples are kept for a gauge).
        let mut aggregator = roof::Aggregator::new(0);
        for row in 0..index.len() {
            let record = index.record(row);
            // Only a vehicle that announces a reduction reads its history;
            // this blocking thread may wait for the store. A history that
            // cannot be read is none: those rules then cannot determine.
            let history = handle
                .block_on(crate::lint::history(store.as_ref(), &record, at.now))
                .ok()
                .flatten();
            let doc = roof::document(&at, &record);
            if let Some((_, report, _)) = roof::vehicle(&at, &record, &doc, history.as_ref()) {
                aggregator.add(&roof::VehicleRef::of(&record), &report);
            }
        }
        aggregator.finish().confirmed_failing_by_rule()
    })
    .await;
    let Ok(failing) = computed else {
        tracing::error!(rooftop = %id.1, "the disclosure lint for the metric did not run");
        return;
    };
    tracing::debug!(
        rooftop = %id.1,
        vehicles,
        elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "disclosure lint metric recomputed"
    );
    let mut cache = cache();
    if let Some(old) = cache.get(&id) {
        for rule in old.failing.keys().filter(|r| !failing.contains_key(*r)) {
            set(&id.0, &id.1, rule, 0);
        }
    }
    for (rule, n) in &failing {
        set(&id.0, &id.1, rule, *n);
    }
    cache.insert(id, Entry { key, failing });
}

fn fingerprint(organization: &OrganizationRecord, rooftop: &RooftopRecord) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(&(
        &rooftop.dap.address,
        &rooftop.settings.pricing,
        &organization.source,
    ))
    .unwrap_or_default()
    .hash(&mut hasher);
    hasher.finish()
}
