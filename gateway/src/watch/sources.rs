//! The detection task of one replica (docs/mcp.md "Subscriptions"): fed by
//! the inventory swaps ([`crate::inventory::live::LiveInventory::watch_views`]),
//! the directory reloads, the live availability observations and the
//! program reloads, it tells the hub what changed for each subscribed URI,
//! and only to the streams whose principal may read it.
//!
//! On PostgreSQL the change follower (`state::changes`) reloads the
//! directory and the inventory on every NOTIFY, so a swap reaches this task
//! within about a second of the import's commit on any replica. SQLite has
//! no feed: while any stream listens, this task asks for the reloads itself
//! every [`POLL`], so an import by another process (the CLI) is noticed, and
//! it has the streams re-verify their credentials every [`REVERIFY`] (a
//! revocation by the CLI sends no notification there).

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::authorize::may_read;
use super::detect::{self, Detected};
use super::uri::{Target, parse};
use super::{Hub, Notice};
use crate::auth::Principal;
use crate::availability::ObservedChange;
use crate::directory::DirectorySnapshot;
use crate::inventory::live::InventoryView;
use crate::state::AppState;

/// How often the task looks for changes without a feed (and, with one,
/// how often it checks that the gateway still runs).
pub const POLL: Duration = Duration::from_secs(1);
/// How often streams re-verify their credentials without a feed.
pub const REVERIFY: Duration = Duration::from_secs(5);

/// What the task saw last.
struct Seen {
    view: Arc<InventoryView>,
    directory: Option<Arc<DirectorySnapshot>>,
    /// The programs of each subscribed organization, by identity.
    programs: BTreeMap<String, Arc<crate::offers::OrgPrograms>>,
}

/// Start the detection task; `poll`: the store has no change feed
/// (SQLite). It ends when the state is dropped. What it compares with first
/// is read here, before the gateway takes a request, so nothing that
/// changes after a first subscription is taken for the baseline.
pub async fn spawn(state: &Arc<AppState>, poll: bool) -> tokio::task::JoinHandle<()> {
    let mut views = state.inventory.watch_views();
    let observations = state.availability.watch_changes();
    let seen = Seen {
        view: views.borrow_and_update().clone(),
        directory: state.directory.snapshot().await.ok(),
        programs: BTreeMap::new(),
    };
    let weak = Arc::downgrade(state);
    tokio::spawn(run(weak, views, observations, seen, poll))
}

/// What woke the task.
enum Wake {
    /// A swap, or the tick: look at every source.
    Look,
    /// A live availability observation changed what a caller is shown.
    Observed(Box<ObservedChange>),
}

async fn run(
    state: Weak<AppState>,
    mut views: tokio::sync::watch::Receiver<Arc<InventoryView>>,
    mut observations: tokio::sync::broadcast::Receiver<ObservedChange>,
    mut seen: Seen,
    poll: bool,
) {
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut reverified = Instant::now();
    loop {
        let wake = tokio::select! {
            changed = views.changed() => match changed {
                Ok(()) => Wake::Look,
                Err(_) => return,
            },
            _ = tick.tick() => Wake::Look,
            observed = observations.recv() => match observed {
                Ok(change) => Wake::Observed(Box::new(change)),
                // Skipped observations: at-least-once holds for the next.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => Wake::Look,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
        };
        let Some(state) = state.upgrade() else {
            return;
        };
        let hub = state.watch.clone();
        if let Wake::Observed(change) = wake {
            if hub.is_active() {
                observed(&state, &hub, &seen.view, &change).await;
            }
            continue;
        }
        if !hub.is_active() {
            // Nobody listens: only keep the baseline, so the first
            // subscriber is not told of what happened before it came.
            seen.view = views.borrow_and_update().clone();
            seen.directory = state.directory.snapshot().await.ok();
            seen.programs.clear();
            continue;
        }
        if poll {
            reload(&state).await;
            if reverified.elapsed() >= REVERIFY {
                reverified = Instant::now();
                hub.revoked();
            }
        }
        let Ok(directory) = state.directory.snapshot().await else {
            continue;
        };
        let targets: Vec<Target> = hub.subscribed().iter().filter_map(|u| parse(u)).collect();
        let view = views.borrow_and_update().clone();
        let before = seen.directory.clone().unwrap_or_else(|| directory.clone());
        if !Arc::ptr_eq(&seen.view, &view) {
            for change in detect::inventory_changes(&seen.view, &view, &targets) {
                deliver(&hub, &before, &directory, &change);
            }
            seen.view = view.clone();
        }
        if !Arc::ptr_eq(&before, &directory) {
            directory_changes(&hub, &before, &directory, &targets);
        }
        seen.directory = Some(directory.clone());
        programs(&state, &hub, &mut seen, &directory, &targets).await;
    }
}

/// A live availability observation (this replica's check, or on
/// PostgreSQL another replica's, learned through the store's notifications:
/// `AvailabilityService::learn`) whose band or status differs from the
/// previous one: `availability_changed` for the vehicle's URI. With no previous live observation, the feed's status in
/// the current view is the previous one.
async fn observed(state: &AppState, hub: &Hub, view: &InventoryView, change: &ObservedChange) {
    let (previous, now) = change;
    if previous.is_none() {
        let shown = crate::availability::reported_status(now, chrono::Utc::now());
        let feed = view.rooftop(&now.rooftop_id).and_then(|r| {
            r.latest
                .find_vehicle_id(&now.vehicle_id)
                .map(|row| r.latest.record(row).availability_status)
        });
        if feed.as_deref() == Some(shown) {
            return;
        }
    }
    let Ok(directory) = state.directory.snapshot().await else {
        return;
    };
    let detected = Detected {
        uri: Target::Vehicle(
            now.organization_id.clone(),
            now.rooftop_id.clone(),
            now.vehicle_id.clone(),
        )
        .uri(),
        kinds: vec![detect::AVAILABILITY_CHANGED],
        snapshot_version: format!("availability:{}", now.checked_at.timestamp_micros()),
        organization_id: now.organization_id.clone(),
        rooftops: vec![now.rooftop_id.clone()],
        before: false,
    };
    deliver(hub, &directory, &directory, &detected);
}

/// SQLite: the reloads the change follower makes on PostgreSQL.
async fn reload(state: &AppState) {
    state.directory.mark_stale();
    state.inventory.mark_stale();
    state.offers.mark_stale();
    let reloaded = async {
        let directory = state.directory.reload().await?;
        state.inventory.reload(&directory).await?;
        Ok::<(), crate::store::StoreError>(())
    };
    if let Err(e) = reloaded.await {
        tracing::warn!(error = %e, "reloading for subscribers failed; retried in a second");
    }
}

/// May `principal` be told of `change`: it may read one of the change's
/// rooftops now (or, for `removed`, could before).
fn may_know(
    principal: &Principal,
    before: &DirectorySnapshot,
    now: &DirectorySnapshot,
    change: &Detected,
) -> bool {
    let directory = if change.before { before } else { now };
    change.rooftops.iter().any(|rooftop| {
        may_read(
            directory,
            principal,
            &Target::Rooftop(change.organization_id.clone(), rooftop.clone()),
        )
    })
}

fn deliver(hub: &Hub, before: &DirectorySnapshot, now: &DirectorySnapshot, change: &Detected) {
    let notice = Notice::Updated {
        uri: change.uri.clone(),
        kinds: change.kinds.clone(),
        snapshot_version: change.snapshot_version.clone(),
    };
    hub.deliver(&change.uri, &notice, &|principal| {
        may_know(principal, before, now, change)
    });
}

/// A dealers-file reload: `dealer_changed` for the organization, rooftop and
/// manifest URIs whose record changed, and the list change for every
/// principal whose visible organizations or rooftops changed.
fn directory_changes(
    hub: &Hub,
    before: &DirectorySnapshot,
    now: &DirectorySnapshot,
    targets: &[Target],
) {
    // The newest import among the organizations (stored, so the same on
    // every replica), not when this replica read them.
    let version = format!(
        "dealers:{}",
        now.organizations
            .iter()
            .map(|o| o.source.observed_at)
            .max()
            .unwrap_or(now.loaded_at)
            .timestamp_millis()
    );
    for change in detect::directory_changes(before, now, targets, &version) {
        deliver(hub, before, now, &change);
    }
    // The manifest: any organization the principal sees changed.
    let changed_orgs = detect::changed_organizations(before, now);
    if !changed_orgs.is_empty() {
        let notice = Notice::Updated {
            uri: super::uri::MANIFEST_URI.to_owned(),
            kinds: vec![detect::DEALER_CHANGED],
            snapshot_version: version.clone(),
        };
        hub.deliver(super::uri::MANIFEST_URI, &notice, &|principal| {
            changed_orgs.iter().any(|org| {
                let target = Target::Organization(org.clone());
                may_read(before, principal, &target) || may_read(now, principal, &target)
            })
        });
    }
    hub.deliver_list_changed(&|principal| {
        detect::visible_set(before, principal) != detect::visible_set(now, principal)
    });
}

/// Program reloads: for each subscribed organization with subscribed
/// vehicles, the programs this replica holds (loaded again when stale);
/// when they are a new load, the vehicles whose applicable revisions
/// changed are told `programs_changed`, and the organization URI too.
async fn programs(
    state: &AppState,
    hub: &Hub,
    seen: &mut Seen,
    directory: &Arc<DirectorySnapshot>,
    targets: &[Target],
) {
    let orgs: std::collections::BTreeSet<&str> =
        targets.iter().filter_map(Target::organization).collect();
    seen.programs.retain(|org, _| orgs.contains(org.as_str()));
    for org in orgs {
        let Ok(now) = state.offers.programs(state.store.as_ref(), org).await else {
            continue;
        };
        let Some(old) = seen.programs.insert(org.to_owned(), now.clone()) else {
            continue;
        };
        if Arc::ptr_eq(&old, &now) {
            continue;
        }
        let view = seen.view.clone();
        for change in detect::program_changes(&old, &now, &view, org, targets) {
            deliver(hub, directory, directory, &change);
        }
    }
}
