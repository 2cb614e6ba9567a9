//! The gauge `dealer_gateway_disclosure_lint_failing_vehicles`
//! (docs/operations.md "Metrics", docs/lint.md): per rooftop and confirmed
//! rule, the vehicles whose disclosure fails it, for a buyer in the
//! rooftop's own jurisdiction (the console's fix list says the same).
//!
//! Computed on scrape, and only for a rooftop whose inputs changed since
//! the last one: its snapshot version, its settings from the dealers file
//! (address, pricing, the file's provenance) or the catalogue version. The lint runs
//! on a blocking thread (`spawn_blocking`), never on the async workers;
//! one refresh at a time (a second scrape waits, then finds the cache
//! fresh). Memory: one entry per rooftop of the directory, one count per
//! rule that applies there.
//!
//! Zero series are kept, consistently: every confirmed rule that applies
//! at the rooftop has a series, 0 when no vehicle fails it, so a fix shows
//! as a drop to 0 rather than a series that vanishes; a rule that stops
//! applying (a rooftop moved, a catalogue change) and a rooftop that leaves
//! the directory are set to 0, then forgotten.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

use chrono::Utc;

use super::LINT_FAILING;
use crate::directory::DirectorySnapshot;
use crate::inventory::live::InventoryView;
use crate::lint::rooftop as roof;
use crate::state::AppState;

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

type Cache = HashMap<(String, String), Entry>;

static CACHE: LazyLock<tokio::sync::Mutex<Cache>> =
    LazyLock::new(|| tokio::sync::Mutex::new(HashMap::new()));

fn set(organization: &str, rooftop: &str, rule: &str, value: usize) {
    metrics::gauge!(
        LINT_FAILING,
        "organization_id" => organization.to_owned(),
        "rooftop_id" => rooftop.to_owned(),
        "rule" => rule.to_owned()
    )
    .set(value as f64);
}

/// Brings the gauge up to date for every rooftop of `directory` with a
/// snapshot in `view`.
pub async fn observe(state: &AppState, directory: &Arc<DirectorySnapshot>, view: &InventoryView) {
    let mut cache = CACHE.lock().await;
    let mut seen: Vec<(String, String)> = Vec::new();
    let catalogue_version = pricing::lint::catalogue().version.clone();
    for organization in &directory.organizations {
        for rooftop in &organization.rooftops {
            let Some(inventory) = view.rooftop(&rooftop.rooftop_id) else {
                continue;
            };
            let id = (
                organization.organization_id.clone(),
                rooftop.rooftop_id.clone(),
            );
            seen.push(id.clone());
            let key = Key {
                snapshot_version: inventory.latest.version(),
                settings: fingerprint(organization, rooftop),
                catalogue_version: catalogue_version.clone(),
            };
            if cache.get(&id).is_some_and(|e| e.key == key) {
                continue;
            }
            let index = inventory.latest.clone();
            let (org, roof_record) = (organization.clone(), rooftop.clone());
            let store = state.store.clone();
            let handle = tokio::runtime::Handle::current();
            let started = std::time::Instant::now();
            let computed = tokio::task::spawn_blocking(move || {
                let jurisdiction = crate::preview::rooftop_jurisdiction(&roof_record.dap);
                let at = roof::Rooftop {
                    organization: &org,
                    rooftop: &roof_record,
                    snapshot_version: index.version(),
                    jurisdiction: jurisdiction.as_ref(),
                    now: Utc::now(),
                };
                // One vehicle at a time: memory does not grow with the
                // inventory (no examples are kept for a gauge).
                let mut aggregator = roof::Aggregator::new(0);
                for row in 0..index.len() {
                    let record = index.record(row);
                    // Only a vehicle that announces a reduction reads its
                    // history; this blocking thread may wait for the store.
                    let history = handle
                        .block_on(crate::lint::history(store.as_ref(), &record, at.now))
                        .ok()
                        .flatten();
                    let doc = roof::document(&at, &record);
                    if let Some((_, report, _)) =
                        roof::vehicle(&at, &record, &doc, history.as_ref())
                    {
                        aggregator.add(&roof::VehicleRef::of(&record), &report);
                    }
                }
                aggregator.finish().confirmed_failing_by_rule()
            })
            .await;
            let Ok(failing) = computed else {
                tracing::error!("disclosure lint for the metric failed to run");
                continue;
            };
            tracing::debug!(
                rooftop = %id.1,
                vehicles = index_len(view, &id.1),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "disclosure lint metric recomputed"
            );
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
    }
    cache.retain(|id, entry| {
        let keep = seen.contains(id);
        if !keep {
            for rule in entry.failing.keys() {
                set(&id.0, &id.1, rule, 0);
            }
        }
        keep
    });
}

fn fingerprint(
    organization: &crate::domain::dealer::OrganizationRecord,
    rooftop: &crate::domain::dealer::RooftopRecord,
) -> u64 {
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

fn index_len(view: &InventoryView, rooftop: &str) -> usize {
    view.rooftop(rooftop).map_or(0, |i| i.latest.len())
}
