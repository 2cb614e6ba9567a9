//! A demo that stays alive: the bundled demo's feeds are
//! observed once, when the store is seeded, and the inventory SLA is 15
//! minutes, so without this every demo vehicle turned stale a quarter of an
//! hour after the first start and lost the score's advertised-price points.
//!
//! While `serve` runs, every [`CHECK_EVERY`] each rooftop of the bundled
//! demo whose oldest fresh row is half its inventory SLA old gets a new
//! snapshot: the same vehicles (their facts unchanged, so the import
//! summary shows them unchanged), the rows the demo generated as fresh
//! observed now, the rows it generated as deliberately stale left as they
//! were. Provenance says what happened: the snapshot and the refreshed rows
//! name the source [`SOURCE_PREFIX`]`<rooftop_id>.csv`, and each refreshed
//! row carries a transformation saying the time was set by the demo
//! refresh, not observed by a dealer.
//!
//! Only the bundled demo is touched: an organization loaded from the
//! bundled dealers file (source `bundled-demo`), a rooftop whose newest
//! snapshot is the demo's own feed or an earlier refresh. `--no-demo`,
//! `--seed-dealers` and every imported dealers file or feed are left alone.
//! Superseded snapshots are pruned by the inventory's own retention
//! (`inventory::live::PRUNE_AFTER`).

use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};
use sha2::{Digest, Sha256};

use crate::store::{SnapshotRecord, SourceRecord, Store, StoreError};

/// How often the refresh looks at the demo's rooftops.
pub const CHECK_EVERY: StdDuration = StdDuration::from_secs(60);
/// The source name prefix of refreshed snapshots and rows.
pub const SOURCE_PREFIX: &str = "bundled-demo-refresh:";
/// The organization source of the bundled dealers file (`state::start::seed_if_empty`).
pub const DEMO_ORGANIZATION_SOURCE: &str = "bundled-demo";
/// Rows observed within this long before their snapshot's import were
/// generated fresh; older ones (3 to 20 hours) are the demo's deliberately
/// stale units and stay stale.
const FRESH_WINDOW: Duration = Duration::hours(1);
/// The transformation a refreshed row carries.
pub const TRANSFORMATION: &str = "demo refresh: observed_at set to the refresh time (bundled demo data, not observed by a dealer system)";

/// Refresh every demo rooftop that is due at `now`; returns the new
/// snapshots (none when nothing is due or the store holds no demo).
pub async fn refresh_due(
    store: &dyn Store,
    now: DateTime<Utc>,
) -> Result<Vec<SnapshotRecord>, StoreError> {
    // Both backends keep microseconds: the refreshed times read back equal.
    let now = {
        use chrono::SubsecRound as _;
        now.trunc_subsecs(6)
    };
    let organizations = store.list_organizations().await?;
    let mut written = Vec::new();
    for snapshot in store.latest_snapshots().await? {
        let Some(org) = organizations.iter().find(|o| {
            o.organization_id == snapshot.organization_id
                && o.source.source_name == DEMO_ORGANIZATION_SOURCE
        }) else {
            continue;
        };
        let Some(rooftop) = org
            .rooftops
            .iter()
            .find(|r| r.rooftop_id == snapshot.rooftop_id)
        else {
            continue;
        };
        let feed = format!("{}.csv", rooftop.rooftop_id);
        let name = &snapshot.source.source_name;
        let demo_feed =
            *name == format!("dap-csv:{feed}") || *name == format!("{SOURCE_PREFIX}{feed}");
        if !demo_feed {
            continue;
        }
        let half_sla = Duration::seconds(i64::from(
            rooftop.settings.freshness_sla_seconds.inventory / 2,
        ));
        let fresh_since = snapshot.source.observed_at - FRESH_WINDOW;
        let mut vehicles = store.snapshot_vehicles(&snapshot.snapshot_id).await?;
        // Due when the oldest row generated fresh is half its SLA old: the
        // seeded feed's rows are already up to 15 minutes old, so a first
        // start is refreshed on the first pass, before any row turns stale.
        let oldest_fresh = vehicles
            .iter()
            .map(|v| v.source.observed_at)
            .filter(|t| *t >= fresh_since)
            .min();
        if oldest_fresh.is_none_or(|t| now - t < half_sla) {
            continue;
        }
        let source_name = format!("{SOURCE_PREFIX}{feed}");
        let mut digest = Sha256::new();
        for v in &mut vehicles {
            if v.source.observed_at >= fresh_since {
                v.source.observed_at = now;
                v.source.source_name.clone_from(&source_name);
                if !v.source.transformations.iter().any(|t| t == TRANSFORMATION) {
                    v.source.transformations.push(TRANSFORMATION.to_owned());
                }
            }
            digest.update(v.vehicle_id.as_bytes());
            digest.update(v.source.observed_at.to_rfc3339().as_bytes());
        }
        let source = SourceRecord {
            source_name,
            authority: snapshot.source.authority.clone(),
            content_digest: format!("sha256:{}", hex::encode(digest.finalize())),
            observed_at: now,
        };
        written.push(
            store
                .create_snapshot(
                    &org.organization_id,
                    &rooftop.rooftop_id,
                    &source,
                    &vehicles,
                )
                .await?,
        );
    }
    Ok(written)
}

/// The refresh loop `serve` runs (stopped by aborting the handle). A
/// failed pass is logged and retried at the next check.
pub fn spawn(store: Arc<dyn Store>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // The first pass a minute after start, not at once: a freshly
        // seeded demo is not stale yet, and a short run (a test, a quick
        // look) sees the snapshots it started with.
        let mut tick =
            tokio::time::interval_at(tokio::time::Instant::now() + CHECK_EVERY, CHECK_EVERY);
        loop {
            tick.tick().await;
            match refresh_due(store.as_ref(), Utc::now()).await {
                Ok(written) if !written.is_empty() => tracing::info!(
                    demo.refreshed_rooftops = written.len(),
                    "refreshed the bundled demo's observations"
                ),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "demo refresh failed; retrying"),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    async fn store_with_demo(
        organization_source: &str,
        seeded_at: DateTime<Utc>,
    ) -> (std::path::PathBuf, Arc<dyn Store>) {
        let dir = std::env::temp_dir().join(format!("dgw-demo-refresh-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = crate::store::open(&format!("sqlite://{}", dir.join("gw.sqlite").display()))
            .await
            .unwrap();
        let catalog = Catalog::load().unwrap();
        let records = crate::dealers::parse(
            &catalog,
            "demo/dealers.yaml",
            crate::demo::DEMO_DEALERS.as_bytes(),
            organization_source,
            seeded_at,
        )
        .unwrap();
        let seed = crate::demo::seed::DemoSeed::prepare(&catalog, &records, seeded_at).unwrap();
        store.upsert_organizations(&records).await.unwrap();
        seed.write(store.as_ref()).await.unwrap();
        (dir, store)
    }

    #[tokio::test]
    async fn a_stale_demo_gets_new_snapshots_observed_now_with_unchanged_facts() {
        let seeded = Utc::now() - Duration::minutes(20);
        let (dir, store) = store_with_demo(DEMO_ORGANIZATION_SOURCE, seeded).await;
        let before = store.latest_snapshots().await.unwrap();
        let now = Utc::now();
        let written = refresh_due(store.as_ref(), now).await.unwrap();
        // Every demo rooftop is past half its SLA (7.5 or 15 minutes).
        assert_eq!(written.len(), before.len());
        for (old, new) in before.iter().zip(&written) {
            assert_eq!(new.version, old.version + 1);
            assert!(new.source.source_name.starts_with(SOURCE_PREFIX));
            assert_eq!(new.summary.vehicles_changed, 0, "facts unchanged");
            assert_eq!(new.summary.vehicles_added + new.summary.vehicles_removed, 0);
            let old_rows = store.snapshot_vehicles(&old.snapshot_id).await.unwrap();
            let new_rows = store.snapshot_vehicles(&new.snapshot_id).await.unwrap();
            let mut kept_stale = 0;
            for (a, b) in old_rows.iter().zip(&new_rows) {
                assert_eq!(a.vehicle_id, b.vehicle_id);
                if now - a.source.observed_at > Duration::hours(2) {
                    // The demo's deliberately stale units stay stale.
                    assert_eq!(a.source.observed_at, b.source.observed_at);
                    kept_stale += 1;
                } else {
                    assert_eq!(b.source.observed_at, now.trunc_subsecs_micros());
                    assert!(b.source.transformations.iter().any(|t| t == TRANSFORMATION));
                    assert!(b.source.source_name.starts_with(SOURCE_PREFIX));
                }
            }
            assert!(kept_stale >= 2, "the demo keeps its stale examples");
        }
        // Nothing is due right after a refresh.
        assert!(
            refresh_due(store.as_ref(), now + Duration::minutes(1))
                .await
                .unwrap()
                .is_empty()
        );
        // Due again after half the SLA.
        assert!(
            !refresh_due(store.as_ref(), now + Duration::minutes(8))
                .await
                .unwrap()
                .is_empty()
        );
        std::fs::remove_dir_all(dir).ok();
    }

    #[tokio::test]
    async fn a_just_seeded_demo_is_refreshed_before_its_rows_turn_stale() {
        // The seeded rows are 1 to 15 minutes old: the rooftops with a
        // 15-minute SLA are due at once, not 7.5 minutes later.
        let now = Utc::now();
        let (dir, store) = store_with_demo(DEMO_ORGANIZATION_SOURCE, now).await;
        let written = refresh_due(store.as_ref(), now).await.unwrap();
        let organizations = store.list_organizations().await.unwrap();
        let short_sla: Vec<&str> = organizations
            .iter()
            .flat_map(|o| &o.rooftops)
            .filter(|r| r.settings.freshness_sla_seconds.inventory == 900)
            .map(|r| r.rooftop_id.as_str())
            .collect();
        assert!(!short_sla.is_empty());
        for rooftop in short_sla {
            assert!(
                written.iter().any(|s| s.rooftop_id == rooftop),
                "{rooftop} refreshed on the first pass"
            );
        }
        std::fs::remove_dir_all(dir).ok();
    }

    #[tokio::test]
    async fn dealers_loaded_from_a_file_are_never_refreshed() {
        let seeded = Utc::now() - Duration::hours(3);
        let (dir, store) = store_with_demo("dealers-file:dealers.yaml", seeded).await;
        assert!(
            refresh_due(store.as_ref(), Utc::now())
                .await
                .unwrap()
                .is_empty()
        );
        std::fs::remove_dir_all(dir).ok();
    }

    trait Micros {
        fn trunc_subsecs_micros(self) -> Self;
    }
    impl Micros for DateTime<Utc> {
        /// Both backends keep microseconds.
        fn trunc_subsecs_micros(self) -> Self {
            use chrono::SubsecRound as _;
            self.trunc_subsecs(6)
        }
    }
}
