//! The advertised-price history (migration 0012; docs/lint.md,
//! docs/operations.md "Price history"): a point when a vehicle first
//! appears or its price changes, nothing when it is unchanged, the point in
//! force at `since` then every later one, and at least 90 days of
//! superseded points kept.

use chrono::{SecondsFormat, SubsecRound as _};
use pricing::{Currency, Money};

use super::*;
use snapshot_write::{FEED_CHANNEL_CAPACITY, SnapshotFeed, SnapshotPlan, StoredVehicle};

fn usd(minor: i64) -> Money {
    Money::from_minor(minor, Currency::USD)
}

fn priced(n: u32, minor: i64) -> VehicleRecord {
    let mut v = vehicle("org-a", "a-1", n);
    v.advertised_price = usd(minor);
    v
}

/// `(amount_minor, from)` of each point of vehicle `n` of a-1 since `since`.
async fn points(store: &dyn Store, n: u32, since: DateTime<Utc>) -> Vec<(i64, DateTime<Utc>)> {
    let id = vehicle("org-a", "a-1", n).vehicle_id;
    store
        .price_history("org-a", "a-1", &id, since)
        .await
        .unwrap()
        .points
        .into_iter()
        .map(|p| (p.amount.amount_minor(), p.from))
        .collect()
}

/// Write a-1 from vehicles fed as stored text (an import's checked
/// vehicles), as a dry run or for real.
async fn write_stored(store: &dyn Store, vehicles: &[VehicleRecord], dry_run: bool) {
    let rooftops = vec!["a-1".to_owned()];
    let src = inventory_source("stored");
    let plan = SnapshotPlan {
        organization_id: "org-a",
        rooftops: &rooftops,
        source: &src,
        dry_run,
    };
    let (sender, receiver) = tokio::sync::mpsc::channel(FEED_CHANNEL_CAPACITY);
    let feed = async move {
        for v in vehicles {
            let stored = StoredVehicle::of(v).unwrap();
            if sender
                .send(SnapshotFeed::Stored(Box::new(stored)))
                .await
                .is_err()
            {
                return;
            }
        }
        let _ = sender.send(SnapshotFeed::End).await;
    };
    let ((), written) = tokio::join!(feed, store.write_snapshots(plan, receiver));
    written.unwrap();
}

pub(super) async fn price_history_records_first_prices_and_changes_only(store: &dyn Store) {
    seed_dealers(store).await;
    let src = inventory_source("h");
    let long_ago = Utc::now() - chrono::Duration::days(400);
    // Unknown vehicle, or no import yet: no history at all.
    assert_eq!(
        store
            .price_history("org-a", "a-1", "veh-none", long_ago)
            .await
            .unwrap(),
        PriceHistory::default()
    );

    let first = [priced(0, 100), priced(1, 200), priced(2, 300)];
    let t1 = store
        .create_snapshot("org-a", "a-1", &src, &first)
        .await
        .unwrap()
        .created_at;
    let h = store
        .price_history("org-a", "a-1", &first[0].vehicle_id, long_ago)
        .await
        .unwrap();
    assert_eq!(
        h.points,
        vec![PricePoint {
            amount: usd(100),
            from: t1
        }]
    );
    assert_eq!(h.begins_at, Some(t1));

    // Unchanged prices (another fact changed) write nothing.
    tokio::time::sleep(Duration::from_millis(3)).await;
    let mut same = first.clone();
    same[0].exterior_color = Some("Red".into());
    store
        .create_snapshot("org-a", "a-1", &src, &same)
        .await
        .unwrap();
    assert_eq!(points(store, 0, long_ago).await, [(100, t1)]);

    // Vehicle 0 repriced, vehicle 1 gone, vehicle 3 new.
    tokio::time::sleep(Duration::from_millis(3)).await;
    let t3 = store
        .create_snapshot(
            "org-a",
            "a-1",
            &src,
            &[priced(0, 90), priced(2, 300), priced(3, 400)],
        )
        .await
        .unwrap()
        .created_at;
    assert_eq!(points(store, 0, long_ago).await, [(100, t1), (90, t3)]);
    // The point in force at `since`, then every later one.
    assert_eq!(points(store, 0, t1).await, [(100, t1), (90, t3)]);
    let between = t1 + (t3 - t1) / 2;
    assert_eq!(points(store, 0, between).await, [(100, t1), (90, t3)]);
    assert_eq!(points(store, 0, t3).await, [(90, t3)]);
    assert_eq!(points(store, 0, Utc::now()).await, [(90, t3)]);
    assert_eq!(points(store, 2, long_ago).await, [(300, t1)]);
    assert_eq!(points(store, 3, long_ago).await, [(400, t3)]);
    // The history begins with its first point whatever `since` asks.
    let h = store
        .price_history("org-a", "a-1", &first[0].vehicle_id, Utc::now())
        .await
        .unwrap();
    assert_eq!(h.begins_at, Some(t1));

    // Vehicle 1 comes back at its old price: its price is in force again
    // from this snapshot (it was not advertised in between).
    tokio::time::sleep(Duration::from_millis(3)).await;
    let t4 = store
        .create_snapshot(
            "org-a",
            "a-1",
            &src,
            &[
                priced(0, 90),
                priced(1, 200),
                priced(2, 300),
                priced(3, 400),
            ],
        )
        .await
        .unwrap()
        .created_at;
    assert_eq!(points(store, 1, long_ago).await, [(200, t1), (200, t4)]);
    assert_eq!(points(store, 0, long_ago).await, [(100, t1), (90, t3)]);

    // Vehicles fed as stored text: the same points; a dry run writes none.
    let stored = [
        priced(0, 80),
        priced(1, 200),
        priced(2, 300),
        priced(3, 400),
    ];
    write_stored(store, &stored, true).await;
    assert_eq!(points(store, 0, long_ago).await, [(100, t1), (90, t3)]);
    tokio::time::sleep(Duration::from_millis(3)).await;
    write_stored(store, &stored, false).await;
    let t5 = store.latest_snapshots().await.unwrap()[0].created_at;
    assert_eq!(
        points(store, 0, long_ago).await,
        [(100, t1), (90, t3), (80, t5)]
    );
    assert_eq!(points(store, 3, long_ago).await, [(400, t3)]);

    // Another rooftop's vehicle of the same id is another history.
    assert_eq!(
        store
            .price_history("org-a", "a-2", &first[0].vehicle_id, long_ago)
            .await
            .unwrap(),
        PriceHistory::default()
    );
    // Pruning the snapshots keeps the recent history whole.
    store
        .prune_snapshots(Utc::now() + chrono::Duration::days(365))
        .await
        .unwrap();
    assert_eq!(
        points(store, 0, long_ago).await,
        [(100, t1), (90, t3), (80, t5)]
    );
}

pub(super) async fn price_history_is_kept_90_days_after_it_was_superseded(db: &TestDb) {
    let store = db.open().await;
    seed_dealers(&*store).await;
    let now = Utc::now().trunc_subsecs(6);
    let at = |days: i64| now - chrono::Duration::days(days);
    // Points of vehicle 0 from 200, 100 and 10 days ago, and one of
    // vehicle 1 from 300 days ago (its newest).
    let mut sql = String::from(
        "insert into price_history (organization_id, rooftop_id, vehicle_id, valid_from, \
         amount_minor, currency) values ",
    );
    let rows: Vec<String> = [(0, 200, 500), (0, 100, 400), (0, 10, 300), (1, 300, 700)]
        .iter()
        .map(|(n, days, minor)| {
            format!(
                "('org-a', 'a-1', '{}', '{}', {minor}, 'USD')",
                vehicle("org-a", "a-1", *n).vehicle_id,
                at(*days).to_rfc3339_opts(SecondsFormat::Micros, true)
            )
        })
        .collect();
    sql.push_str(&rows.join(", "));
    db.execute(&sql).await;
    let all = at(1000);
    assert_eq!(
        points(&*store, 0, all).await,
        [(500, at(200)), (400, at(100)), (300, at(10))]
    );

    // Snapshots pruned up to 150 days ago: the point superseded 100 days
    // ago stays.
    store.prune_snapshots(at(150)).await.unwrap();
    assert_eq!(points(&*store, 0, all).await.len(), 3);
    // Snapshots pruned up to now (or later): points superseded 90 days ago
    // or more go; the newest point of a vehicle never does.
    store.prune_snapshots(now).await.unwrap();
    assert_eq!(
        points(&*store, 0, all).await,
        [(400, at(100)), (300, at(10))]
    );
    let h = store
        .price_history("org-a", "a-1", &vehicle("org-a", "a-1", 0).vehicle_id, all)
        .await
        .unwrap();
    assert_eq!(h.begins_at, Some(at(100)));
    assert_eq!(points(&*store, 1, all).await, [(700, at(300))]);

    // Dropping the rooftop drops its history.
    store
        .upsert_organizations(&[org("org-a", "A", vec![rooftop("a-2", "Two")])])
        .await
        .unwrap();
    assert_eq!(points(&*store, 1, all).await, []);
}
