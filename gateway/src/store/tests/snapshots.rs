//! Snapshots: versions, history, streamed writes, pruning and throughput.

use super::*;

pub(super) fn query_message(err: StoreError) -> String {
    match err {
        StoreError::Query(message) => message,
        other => panic!("expected StoreError::Query, got {other:?}"),
    }
}

pub(super) async fn snapshot_of_a_rooftop_not_of_the_organization_fails(store: &dyn Store) {
    seed_dealers(store).await;
    let src = inventory_source("x");
    // Unknown rooftop.
    let message = query_message(
        store
            .create_snapshot("org-a", "a-9", &src, &vehicles("org-a", "a-9", 0..3))
            .await
            .unwrap_err(),
    );
    assert!(
        message.contains("rooftop 'a-9' is not a rooftop of organization 'org-a'"),
        "{message}"
    );
    assert!(
        message.contains("import the dealers file first"),
        "{message}"
    );
    // Another organization's rooftop.
    let message = query_message(
        store
            .create_snapshot("org-a", "b-1", &src, &vehicles("org-a", "b-1", 0..3))
            .await
            .unwrap_err(),
    );
    assert!(
        message.contains("rooftop 'b-1' is not a rooftop of organization 'org-a'"),
        "{message}"
    );
    assert!(message.contains("'org-b'"), "{message}");
    // Unknown organization.
    let message = query_message(
        store
            .create_snapshot("org-z", "a-1", &src, &[])
            .await
            .unwrap_err(),
    );
    assert!(
        message.contains("rooftop 'a-1' is not a rooftop of organization 'org-z'"),
        "{message}"
    );
    assert_eq!(store.latest_snapshots().await.unwrap(), vec![]);
    assert_eq!(
        store.snapshot_history("org-b", "b-1", 10).await.unwrap(),
        vec![]
    );
    assert_eq!(
        store.snapshot_history("org-a", "a-9", 10).await.unwrap(),
        vec![]
    );
}

/// Feed `vehicles` to [`Store::write_snapshots`] interleaved as given;
/// `end` sends the closing [`snapshot_write::SnapshotFeed::End`].
pub(super) async fn stream_snapshots(
    store: &dyn Store,
    rooftops: &[&str],
    vehicles: Vec<VehicleRecord>,
    end: bool,
    dry_run: bool,
) -> Result<Vec<SnapshotRecord>, StoreError> {
    use snapshot_write::{FEED_CHANNEL_CAPACITY, SnapshotFeed, SnapshotPlan};
    let rooftops: Vec<String> = rooftops.iter().map(|r| (*r).to_owned()).collect();
    let src = inventory_source("stream");
    let plan = SnapshotPlan {
        organization_id: "org-a",
        rooftops: &rooftops,
        source: &src,
        dry_run,
    };
    let (sender, receiver) = tokio::sync::mpsc::channel(FEED_CHANNEL_CAPACITY);
    let feed = async move {
        for v in vehicles {
            if sender
                .send(SnapshotFeed::Vehicle(Box::new(v)))
                .await
                .is_err()
            {
                return;
            }
        }
        if end {
            let _ = sender.send(SnapshotFeed::End).await;
        }
    };
    let ((), written) = tokio::join!(feed, store.write_snapshots(plan, receiver));
    written
}

/// One change a checked write reported.
pub(super) struct Collected {
    pub(super) rooftop: String,
    pub(super) kind: &'static str,
    pub(super) vehicle_id: String,
    pub(super) stock_number: Option<String>,
    pub(super) fields: Vec<String>,
}

/// Every change a checked write reports.
#[derive(Default)]
pub(super) struct CollectedChanges(pub(super) Vec<Collected>);

impl snapshot_write::ChangeSink for CollectedChanges {
    fn change(&mut self, c: &snapshot_write::VehicleChange<'_>) {
        self.0.push(Collected {
            rooftop: c.rooftop_id.to_owned(),
            kind: c.kind.as_str(),
            vehicle_id: c.vehicle_id.to_owned(),
            stock_number: c.stock_number.map(str::to_owned),
            fields: c.fields.clone(),
        });
    }
}

/// [`Store::write_snapshots_checked`] of `vehicles` (then `End`) with a
/// collecting sink and `guard`.
pub(super) async fn checked_write(
    store: &dyn Store,
    rooftops: &[&str],
    vehicles: Vec<VehicleRecord>,
    guard: Option<snapshot_write::RemovalGuard>,
    dry_run: bool,
) -> (snapshot_write::SnapshotWrite, CollectedChanges) {
    use snapshot_write::{FEED_CHANNEL_CAPACITY, SnapshotPlan, WriteChecks};
    let rooftops: Vec<String> = rooftops.iter().map(|r| (*r).to_owned()).collect();
    let src = inventory_source("checked");
    let plan = SnapshotPlan {
        organization_id: "org-a",
        rooftops: &rooftops,
        source: &src,
        dry_run,
    };
    let mut sink = CollectedChanges::default();
    let (sender, receiver) = tokio::sync::mpsc::channel(FEED_CHANNEL_CAPACITY);
    let checks = WriteChecks {
        removal_guard: guard,
        changes: Some(&mut sink),
        planned_rooftops: &[],
    };
    let ((), written) = tokio::join!(
        snapshot_write::feed_slice(&vehicles, sender),
        store.write_snapshots_checked(plan, receiver, checks)
    );
    (written.unwrap(), sink)
}

/// docs/inventory-feeds.md "Commands" and "The removal guard": a checked
/// write names every added, changed and removed vehicle (the removed ones
/// read back page by page from the previous snapshot, more than one page
/// here), and a rooftop losing more than the guard's share refuses the
/// whole write (every rooftop of it), dry run or not.
pub(super) async fn streamed_write_names_each_change_and_the_removal_guard_refuses_whole(
    store: &dyn Store,
) {
    seed_dealers(store).await;
    let src = inventory_source("first");
    store
        .create_snapshot("org-a", "a-1", &src, &vehicles("org-a", "a-1", 0..2_600))
        .await
        .unwrap();
    store
        .create_snapshot("org-a", "a-2", &src, &vehicles("org-a", "a-2", 0..10))
        .await
        .unwrap();
    let before = store.latest_snapshots().await.unwrap();

    // a-1 keeps 0..1000 (every 100th repriced) and gains 5; 1,600 removed.
    let mut next = vehicles("org-a", "a-1", 0..1_000);
    for v in next.iter_mut().step_by(100) {
        v.advertised_price = pricing::Money::from_minor(1, pricing::Currency::USD);
    }
    next.extend(vehicles("org-a", "a-1", 5_000..5_005));
    // a-2 loses 3 of 10 (30 %, within the default 50 %).
    next.extend(vehicles("org-a", "a-2", 3..10));
    let guard = snapshot_write::RemovalGuard::default();

    for dry_run in [true, false] {
        let (written, changes) =
            checked_write(store, &["a-1", "a-2"], next.clone(), Some(guard), dry_run).await;
        assert_eq!(
            written.refused,
            vec![snapshot_write::RemovalRefusal {
                rooftop_id: "a-1".into(),
                removed: 1_600,
                previous: 2_600,
                max_percent: 50,
            }],
            "dry run {dry_run}"
        );
        assert_eq!(store.latest_snapshots().await.unwrap(), before);
        let of = |kind: &str, rooftop: &str| -> Vec<&str> {
            changes
                .0
                .iter()
                .filter(|c| c.kind == kind && c.rooftop == rooftop)
                .map(|c| c.vehicle_id.as_str())
                .collect()
        };
        assert_eq!(of("added", "a-1").len(), 5);
        assert_eq!(of("changed", "a-1").len(), 10);
        let removed = of("removed", "a-1");
        assert_eq!(removed.len(), 1_600);
        let expected: Vec<String> = vehicles("org-a", "a-1", 1_000..2_600)
            .into_iter()
            .map(|v| v.vehicle_id)
            .collect();
        assert_eq!(
            removed,
            expected.iter().map(String::as_str).collect::<Vec<_>>()
        );
        assert_eq!(of("removed", "a-2").len(), 3);
        assert!(of("added", "a-2").is_empty() && of("changed", "a-2").is_empty());
        // A changed vehicle names the fields that changed, never provenance.
        let changed = changes.0.iter().find(|c| c.kind == "changed").unwrap();
        assert_eq!(changed.fields, vec!["advertised_price".to_owned()]);
        assert_eq!(changed.stock_number.as_deref(), Some("STK-0"));
        // Vehicles without a stock number are named by id (and VIN).
        assert!(
            changes
                .0
                .iter()
                .any(|c| c.kind == "removed" && c.stock_number.is_none())
        );
    }

    // A share of 70 % lets a-1 (61.5 %) through: both snapshots written.
    let lenient = snapshot_write::RemovalGuard {
        max_percent: 70,
        ..guard
    };
    let (written, changes) =
        checked_write(store, &["a-1", "a-2"], next.clone(), Some(lenient), false).await;
    assert!(written.refused.is_empty());
    assert_eq!(changes.0.len(), 5 + 10 + 1_600 + 3);
    assert_eq!(store.latest_snapshots().await.unwrap(), written.snapshots);
    assert_eq!(written.snapshots[0].summary.vehicles_removed, 1_600);

    // Rooftops under the minimum are never guarded; a share of 0 % refuses
    // any removal from a guarded rooftop.
    assert!(!guard.refuses(4, 4));
    assert!(guard.refuses(5, 3) && !guard.refuses(5, 2));
    let strict = snapshot_write::RemovalGuard {
        max_percent: 0,
        ..guard
    };
    assert!(strict.refuses(5, 1) && !strict.refuses(5, 0));
    let keep_a2 = vehicles("org-a", "a-2", 4..10);
    let (written, _) = checked_write(store, &["a-2"], keep_a2.clone(), Some(strict), false).await;
    assert_eq!(written.refused.len(), 1);
    assert_eq!(written.refused[0].previous, 7);
    let (written, _) = checked_write(store, &["a-2"], keep_a2, None, false).await;
    assert!(written.refused.is_empty());
    assert_eq!(written.snapshots[0].vehicle_count, 6);
}

pub(super) fn attempt(
    organization: Option<&str>,
    outcome: ImportOutcome,
    rooftops: &[&str],
    n: usize,
) -> ImportAttempt {
    let mut a = ImportAttempt::new(
        ImportKind::Inventory,
        outcome,
        &format!("feeds/{n}.csv"),
        &format!("reason {n}"),
    );
    a.organization_ids = organization.map(str::to_owned).into_iter().collect();
    a.rooftop_ids = rooftops.iter().map(|r| (*r).to_owned()).collect();
    a.problems = u32::try_from(n).unwrap();
    a
}

/// docs/console.md "Imports": every refused import is kept for its
/// organization, newest first, the newest 100 per organization (and 100
/// naming none), apart from every other organization; every import is
/// counted by kind and outcome, `imported` ones only counted.
pub(super) async fn refused_imports_are_kept_within_their_bound_and_every_import_is_counted(
    store: &dyn Store,
) {
    use import_log::MAX_ATTEMPTS_PER_ORGANIZATION as MAX;
    let first = attempt(Some("org-a"), ImportOutcome::RemovalGuard, &["a-1"], 0);
    store.record_import(&first).await.unwrap();
    let kept = store.import_attempts("org-a", 10).await.unwrap();
    assert_eq!(kept, vec![first.bounded()]);
    assert!(kept[0].concerns("a-1") && !kept[0].concerns("a-2"));
    for n in 1..=(MAX as usize + 20) {
        store
            .record_import(&attempt(Some("org-a"), ImportOutcome::Invalid, &[], n))
            .await
            .unwrap();
    }
    store
        .record_import(&attempt(Some("org-b"), ImportOutcome::Refused, &["b-1"], 7))
        .await
        .unwrap();
    // A file of two organizations: kept for each, counted once, and each
    // row names its own organization only.
    let mut both = attempt(Some("org-b"), ImportOutcome::Invalid, &[], 8);
    both.kind = ImportKind::Dealers;
    both.organization_ids.push("org-c".into());
    store.record_import(&both).await.unwrap();
    let c = store.import_attempts("org-c", 10).await.unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].organization_ids, ["org-c"]);
    assert_eq!((c[0].kind, c[0].problems), (ImportKind::Dealers, 8));
    for n in 0..3 {
        store
            .record_import(&attempt(None, ImportOutcome::Refused, &[], n))
            .await
            .unwrap();
        store
            .record_import(&attempt(Some("org-a"), ImportOutcome::Imported, &[], n))
            .await
            .unwrap();
    }
    let a = store.import_attempts("org-a", 1_000).await.unwrap();
    assert_eq!(a.len(), MAX as usize);
    // Newest first; the oldest (the guard refusal among them) are gone.
    assert_eq!(a[0].file, format!("feeds/{}.csv", MAX + 20));
    assert_eq!(a[a.len() - 1].file, "feeds/21.csv");
    assert!(a.iter().all(|x| x.outcome == ImportOutcome::Invalid));
    assert!(a.windows(2).all(|w| w[0].attempt_id > w[1].attempt_id));
    let b = store.import_attempts("org-b", 10).await.unwrap();
    assert_eq!(b.len(), 2);
    assert_eq!(b[0].organization_ids, ["org-b"]);
    assert_eq!(b[1].problems, 7);
    assert_eq!(b[1].rooftop_ids, ["b-1"]);
    assert_eq!(store.import_attempts("org-a", 5).await.unwrap().len(), 5);
    assert!(store.import_attempts("org-d", 5).await.unwrap().is_empty());

    let counts: Vec<(&str, &str, u64)> = store
        .import_counts()
        .await
        .unwrap()
        .iter()
        .map(|c| (c.kind.as_str(), c.outcome.as_str(), c.count))
        .collect();
    assert_eq!(
        counts,
        vec![
            ("dealers", "invalid", 1),
            ("inventory", "imported", 3),
            ("inventory", "invalid", u64::from(MAX) + 20),
            ("inventory", "refused", 4),
            ("inventory", "removal_guard", 1),
        ]
    );
}

/// docs/inventory-feeds.md: a file's vehicles arrive one at a time, interleaved
/// across rooftops, in batches larger than one write batch; every rooftop
/// gets its snapshot in one transaction or none does, the summary equals
/// `diff_vehicles` over whole snapshots, and a dry run writes nothing.
pub(super) async fn streamed_write_covers_every_rooftop_or_none(store: &dyn Store) {
    seed_dealers(store).await;
    let src = inventory_source("first");
    let first_a1 = vehicles("org-a", "a-1", 0..1_200);
    store
        .create_snapshot("org-a", "a-1", &src, &first_a1)
        .await
        .unwrap();
    let before = store.latest_snapshots().await.unwrap();

    // The next file: a-1 keeps 300..1500 with every 4th vehicle changed,
    // a-2 is new; rows alternate between the rooftops.
    let mut next_a1 = vehicles("org-a", "a-1", 300..1_500);
    for v in next_a1.iter_mut().step_by(4) {
        v.year += 1;
    }
    let next_a2 = vehicles("org-a", "a-2", 0..700);
    let mut interleaved = Vec::new();
    let (mut x, mut y) = (next_a1.clone().into_iter(), next_a2.clone().into_iter());
    loop {
        match (x.next(), y.next()) {
            (None, None) => break,
            (a, b) => interleaved.extend(a.into_iter().chain(b)),
        }
    }
    let expected_a1 = diff_vehicles(&first_a1, &next_a1);
    let expected_a2 = diff_vehicles(&[], &next_a2);
    assert_eq!(expected_a1.vehicles_removed, 300);

    // A feed that stops without `End` (the reader failed) writes nothing.
    let message = query_message(
        stream_snapshots(store, &["a-1", "a-2"], interleaved.clone(), false, false)
            .await
            .unwrap_err(),
    );
    assert!(message.contains("nothing was imported"), "{message}");
    assert_eq!(store.latest_snapshots().await.unwrap(), before);

    // A repeated VIN in the last rooftop's rows fails both rooftops.
    let mut bad = interleaved.clone();
    let last = bad
        .iter()
        .rposition(|v| v.rooftop_id == "a-2" && v.vin.is_some())
        .unwrap();
    bad[last].vin.clone_from(&next_a2[4].vin);
    assert!(bad[last].vin.is_some() && last > 2 * 500);
    let message = query_message(
        stream_snapshots(store, &["a-1", "a-2"], bad, true, false)
            .await
            .unwrap_err(),
    );
    assert!(message.contains("appears more than once"), "{message}");
    assert_eq!(store.latest_snapshots().await.unwrap(), before);

    // A vehicle of a rooftop the plan does not name fails the write.
    let mut stray = interleaved.clone();
    stray.push(vehicle("org-a", "a-2", 9_999));
    let message = query_message(
        stream_snapshots(store, &["a-1"], stray, true, false)
            .await
            .unwrap_err(),
    );
    assert!(message.contains("not to rooftop 'a-1'"), "{message}");
    assert_eq!(store.latest_snapshots().await.unwrap(), before);

    // A dry run: the summaries of the real write, and nothing written.
    let planned = stream_snapshots(store, &["a-1", "a-2"], interleaved.clone(), true, true)
        .await
        .unwrap();
    assert_eq!(store.latest_snapshots().await.unwrap(), before);
    assert_eq!(planned.len(), 2);
    assert_eq!((planned[0].version, planned[1].version), (2, 1));
    assert_eq!(planned[0].summary, expected_a1);
    assert_eq!(planned[1].summary, expected_a2);

    let written = stream_snapshots(store, &["a-1", "a-2"], interleaved, true, false)
        .await
        .unwrap();
    assert_eq!(written.len(), 2);
    assert_eq!(written[0].summary, expected_a1);
    assert_eq!(written[1].summary, expected_a2);
    assert_eq!(written[0].vehicle_count, 1_200);
    assert_eq!(written[1].vehicle_count, 700);
    assert_eq!(store.latest_snapshots().await.unwrap(), written);
    let mut stored = store
        .snapshot_vehicles(&written[0].snapshot_id)
        .await
        .unwrap();
    let mut sent = next_a1;
    stored.sort_by(|a, b| a.vehicle_id.cmp(&b.vehicle_id));
    sent.sort_by(|a, b| a.vehicle_id.cmp(&b.vehicle_id));
    assert_eq!(stored, sent);
}

pub(super) async fn snapshot_with_repeated_or_foreign_vehicles_fails(store: &dyn Store) {
    seed_dealers(store).await;
    let src = inventory_source("d");
    let good = store
        .create_snapshot("org-a", "a-1", &src, &vehicles("org-a", "a-1", 0..5))
        .await
        .unwrap();
    let base = vehicles("org-a", "a-1", 10..20);

    let mut dup_id = base.clone();
    dup_id[7].vehicle_id = dup_id[2].vehicle_id.clone();
    let mut dup_vin = base.clone();
    dup_vin[9].vin = dup_vin[1].vin.clone();
    let mut dup_stock = base.clone();
    dup_stock[5].stock_number = Some("STK-10".into());
    let mut foreign_rooftop = base.clone();
    foreign_rooftop[3].rooftop_id = "a-2".into();
    let mut foreign_org = base.clone();
    foreign_org[4].organization_id = "org-b".into();
    let cases = [
        (dup_id, "vehicle_id 'veh-a-1-000012' appears more than once"),
        (dup_vin, "vin '1HGCMa-100000011' appears more than once"),
        (dup_stock, "stock_number 'STK-10' appears more than once"),
        (
            foreign_rooftop,
            "vehicle 'veh-a-1-000013' belongs to rooftop 'a-2' of organization 'org-a'",
        ),
        (
            foreign_org,
            "vehicle 'veh-a-1-000014' belongs to rooftop 'a-1' of organization 'org-b'",
        ),
    ];
    for (batch, expected) in cases {
        let message = query_message(
            store
                .create_snapshot("org-a", "a-1", &src, &batch)
                .await
                .unwrap_err(),
        );
        assert!(message.contains(expected), "{message}");
        assert!(message.contains("nothing was imported"), "{message}");
        assert_eq!(store.latest_snapshots().await.unwrap(), vec![good.clone()]);
        assert_eq!(
            store.snapshot_history("org-a", "a-1", 10).await.unwrap(),
            vec![good.clone()]
        );
    }
    // Unknown VINs and stock numbers may repeat.
    let mut unknowns = base;
    for v in &mut unknowns {
        v.vin = None;
        v.stock_number = None;
    }
    let next = store
        .create_snapshot("org-a", "a-1", &src, &unknowns)
        .await
        .unwrap();
    assert_eq!(next.version, 2);
}

pub(super) async fn prune_deletes_only_snapshots_superseded_before_the_cutoff(store: &dyn Store) {
    seed_dealers(store).await;
    let src = inventory_source("p");
    let mut made = Vec::new();
    for n in 1..=3 {
        made.push(
            store
                .create_snapshot("org-a", "a-1", &src, &vehicles("org-a", "a-1", 0..n))
                .await
                .unwrap(),
        );
        // Distinct creation times, microsecond precision.
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let lone = store
        .create_snapshot("org-b", "b-1", &src, &vehicles("org-b", "b-1", 0..2))
        .await
        .unwrap();
    let [v1, v2, v3] = <[SnapshotRecord; 3]>::try_from(made).unwrap();
    assert!(v1.created_at < v2.created_at && v2.created_at < v3.created_at);

    // Nothing was superseded before v2 was created.
    assert_eq!(store.prune_snapshots(v2.created_at).await.unwrap(), 0);
    // v1 was superseded by v2 before the cutoff; v2's successor v3 was
    // created at the cutoff, not before it.
    assert_eq!(store.prune_snapshots(v3.created_at).await.unwrap(), 1);
    assert_eq!(
        store.snapshot_history("org-a", "a-1", 10).await.unwrap(),
        vec![v3.clone(), v2.clone()]
    );
    assert_eq!(
        store.snapshot_vehicles(&v1.snapshot_id).await.unwrap(),
        vec![]
    );
    assert_eq!(
        store
            .snapshot_vehicles(&v2.snapshot_id)
            .await
            .unwrap()
            .len(),
        2
    );
    // Far in the future: every superseded snapshot goes, never the newest.
    let future = Utc::now() + chrono::Duration::days(365);
    assert_eq!(store.prune_snapshots(future).await.unwrap(), 1);
    assert_eq!(store.prune_snapshots(future).await.unwrap(), 0);
    assert_eq!(
        store.snapshot_history("org-a", "a-1", 10).await.unwrap(),
        vec![v3.clone()]
    );
    assert_eq!(
        store.snapshot_vehicles(&v2.snapshot_id).await.unwrap(),
        vec![]
    );
    assert_eq!(
        store
            .snapshot_vehicles(&v3.snapshot_id)
            .await
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        store.latest_snapshots().await.unwrap(),
        vec![v3.clone(), lone]
    );
    // Versions keep counting after a prune.
    let v4 = store
        .create_snapshot("org-a", "a-1", &src, &vehicles("org-a", "a-1", 0..4))
        .await
        .unwrap();
    assert_eq!(v4.version, 4);
    assert_eq!(v4.summary, inventory_summary(4, [1, 0, 3, 0]));
}

pub(super) async fn dropping_a_rooftop_deletes_its_snapshots(store: &dyn Store) {
    seed_dealers(store).await;
    let src = inventory_source("c");
    let a1 = store
        .create_snapshot("org-a", "a-1", &src, &vehicles("org-a", "a-1", 0..3))
        .await
        .unwrap();
    let a2 = store
        .create_snapshot("org-a", "a-2", &src, &vehicles("org-a", "a-2", 0..3))
        .await
        .unwrap();
    let b1 = store
        .create_snapshot("org-b", "b-1", &src, &vehicles("org-b", "b-1", 0..3))
        .await
        .unwrap();

    // Re-importing the dealers with a-1 changed (rewritten in place) and its
    // order swapped keeps every snapshot.
    let mut changed = rooftop("a-1", "One, renovated");
    changed.settings.anonymous_reads = false;
    let done = store
        .upsert_organizations(&[org(
            "org-a",
            "A",
            vec![rooftop("a-2", "Two"), changed.clone()],
        )])
        .await
        .unwrap();
    assert_eq!(done, summary([0, 1], [0, 1, 0]));
    assert_eq!(
        store.latest_snapshots().await.unwrap(),
        vec![a1.clone(), a2.clone(), b1.clone()]
    );

    // Dropping a-2 from org-a deletes its snapshots and their vehicles.
    let done = store
        .upsert_organizations(&[org("org-a", "A", vec![changed])])
        .await
        .unwrap();
    assert_eq!(done, summary([0, 1], [0, 0, 1]));
    assert_eq!(
        store.latest_snapshots().await.unwrap(),
        vec![a1.clone(), b1.clone()]
    );
    assert_eq!(
        store.snapshot_history("org-a", "a-2", 10).await.unwrap(),
        vec![]
    );
    assert_eq!(
        store.snapshot_vehicles(&a2.snapshot_id).await.unwrap(),
        vec![]
    );

    // A rooftop moving to another organization leaves its snapshots behind
    // (they name the old owner); the new owner starts again at version 1.
    let done = store
        .upsert_organizations(&[
            org("org-a", "A", vec![]),
            org(
                "org-b",
                "B",
                vec![rooftop("b-1", "Bee"), rooftop("a-1", "One")],
            ),
        ])
        .await
        .unwrap();
    assert_eq!(done, summary([0, 2], [1, 0, 1]));
    assert_eq!(store.latest_snapshots().await.unwrap(), vec![b1]);
    assert_eq!(
        store.snapshot_vehicles(&a1.snapshot_id).await.unwrap(),
        vec![]
    );
    let moved = store
        .create_snapshot("org-b", "a-1", &src, &vehicles("org-b", "a-1", 0..1))
        .await
        .unwrap();
    assert_eq!(moved.version, 1);
    assert_eq!(moved.summary, inventory_summary(1, [1, 0, 0, 0]));
}

pub(super) async fn concurrent_imports_of_one_rooftop_get_distinct_versions(store: &dyn Store) {
    seed_dealers(store).await;
    let src = inventory_source("race");
    let batches: Vec<Vec<VehicleRecord>> = (1..=6)
        .map(|n| vehicles("org-a", "a-1", 0..n * 50))
        .collect();
    let results = futures_join_all(
        batches
            .iter()
            .map(|batch| store.create_snapshot("org-a", "a-1", &src, batch)),
    )
    .await;
    let mut versions: Vec<i64> = results.into_iter().map(|r| r.unwrap().version).collect();
    versions.sort_unstable();
    assert_eq!(versions, vec![1, 2, 3, 4, 5, 6]);
    // Each summary was computed against the snapshot committed just before it.
    let history = store.snapshot_history("org-a", "a-1", 10).await.unwrap();
    for pair in history.windows(2) {
        let (newer, older) = (&pair[0], &pair[1]);
        let expected = diff_vehicles(
            &store.snapshot_vehicles(&older.snapshot_id).await.unwrap(),
            &store.snapshot_vehicles(&newer.snapshot_id).await.unwrap(),
        );
        assert_eq!(newer.summary, expected, "version {}", newer.version);
    }
}

/// Poll every future to completion concurrently (no `futures` dependency).
pub(super) async fn futures_join_all<F: std::future::Future>(
    futures: impl IntoIterator<Item = F>,
) -> Vec<F::Output> {
    let handles: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = handles.iter().map(|_| None).collect();
    let mut handles: Vec<Option<_>> = handles.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, output) in handles.iter_mut().zip(outputs.iter_mut()) {
            if let Some(future) = slot {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => {
                        *output = Some(value);
                        *slot = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs
        .into_iter()
        .map(|o| o.expect("polled to completion"))
        .collect()
}

pub(super) async fn large_snapshot_round_trip(store: &dyn Store) {
    const COUNT: u32 = 20_000;
    seed_dealers(store).await;
    let batch = vehicles("org-a", "a-1", 0..COUNT);
    let started = Instant::now();
    let snapshot = store
        .create_snapshot("org-a", "a-1", &inventory_source("big"), &batch)
        .await
        .unwrap();
    let written = started.elapsed();
    assert_eq!(snapshot.vehicle_count, COUNT);
    let started = Instant::now();
    let stored = store
        .snapshot_vehicles(&snapshot.snapshot_id)
        .await
        .unwrap();
    let read = started.elapsed();
    assert_eq!(stored.len(), COUNT as usize);
    for n in [0, 1, 9_999, 12_345, COUNT - 1] {
        assert_eq!(stored[n as usize], batch[n as usize], "vehicle {n}");
    }
    // A second import of the same 20k diffs against the first inside the transaction.
    let started = Instant::now();
    let again = store
        .create_snapshot("org-a", "a-1", &inventory_source("big2"), &batch)
        .await
        .unwrap();
    let rewritten = started.elapsed();
    assert_eq!(again.summary, inventory_summary(COUNT, [0, 0, COUNT, 0]));
    println!("20k vehicles: create {written:?}, read {read:?}, create with diff {rewritten:?}");
}

/// 100,000 vehicles over 200 rooftops, timed; only with
/// `DEALER_GATEWAY_STORE_BENCH=1` (it takes a while in debug builds).
pub(super) async fn bulk_import_throughput(store: &dyn Store) {
    if std::env::var("DEALER_GATEWAY_STORE_BENCH").as_deref() != Ok("1") {
        println!("skipped bulk_import_throughput: DEALER_GATEWAY_STORE_BENCH is not 1");
        return;
    }
    const ROOFTOPS: u32 = 200;
    const PER_ROOFTOP: u32 = 500;
    let orgs: Vec<OrganizationRecord> = (0..20)
        .map(|o| {
            org(
                &format!("org-{o:02}"),
                "Bench",
                (0..ROOFTOPS / 20)
                    .map(|r| rooftop(&format!("r-{o:02}-{r:02}"), "Bench rooftop"))
                    .collect(),
            )
        })
        .collect();
    store.upsert_organizations(&orgs).await.unwrap();
    let batches: Vec<(String, String, Vec<VehicleRecord>)> = orgs
        .iter()
        .flat_map(|o| {
            o.rooftops.iter().map(|r| {
                (
                    o.organization_id.clone(),
                    r.rooftop_id.clone(),
                    vehicles(&o.organization_id, &r.rooftop_id, 0..PER_ROOFTOP),
                )
            })
        })
        .collect();
    let total = ROOFTOPS * PER_ROOFTOP;
    // The JSON work alone, for comparison (the store encodes every vehicle
    // once and decodes the previous snapshot's vehicles for the diff).
    let started = Instant::now();
    let docs: Vec<String> = batches
        .iter()
        .flat_map(|(_, _, batch)| batch.iter().map(|v| serde_json::to_string(v).unwrap()))
        .collect();
    let encoded = started.elapsed();
    let started = Instant::now();
    for doc in &docs {
        let _: VehicleRecord = serde_json::from_str(doc).unwrap();
    }
    println!(
        "bench serde_json alone: encode {encoded:?}, decode {:?} ({} bytes per vehicle)",
        started.elapsed(),
        docs.iter().map(String::len).sum::<usize>() / docs.len()
    );
    drop(docs);
    for round in ["first import", "re-import (diff against previous)"] {
        let started = Instant::now();
        for (organization_id, rooftop_id, batch) in &batches {
            store
                .create_snapshot(
                    organization_id,
                    rooftop_id,
                    &inventory_source("bench"),
                    batch,
                )
                .await
                .unwrap();
        }
        let elapsed = started.elapsed();
        println!(
            "bench {round}: {total} vehicles in {elapsed:?} = {} rows/s",
            rows_per_second(total, elapsed)
        );
    }
    let started = Instant::now();
    let mut read = 0usize;
    for snapshot in store.latest_snapshots().await.unwrap() {
        read += store
            .snapshot_vehicles(&snapshot.snapshot_id)
            .await
            .unwrap()
            .len();
    }
    let elapsed = started.elapsed();
    assert_eq!(read, total as usize);
    println!(
        "bench read all latest: {read} vehicles in {elapsed:?} = {} rows/s",
        rows_per_second(total, elapsed)
    );
}

pub(super) fn rows_per_second(rows: u32, elapsed: Duration) -> u128 {
    u128::from(rows) * 1000 / elapsed.as_millis().max(1)
}

pub(super) async fn migrations_apply_and_reapply(db: &TestDb) {
    let store = db.open().await;
    let a = org("org-a", "A", vec![rooftop("a-1", "One")]);
    store
        .upsert_organizations(std::slice::from_ref(&a))
        .await
        .unwrap();
    drop(store);
    // Opening again re-runs the migrator: already applied, nothing to do.
    let store = db.open().await;
    let again = db.open().await;
    assert_eq!(store.list_organizations().await.unwrap(), vec![a.clone()]);
    assert_eq!(again.list_organizations().await.unwrap(), vec![a]);
}

pub(super) async fn secrets_are_stable_across_opens_and_racing_replicas(db: &TestDb) {
    // Two "replicas" race for the same new secret: both get the winner's.
    let (one, two) = (db.open().await, db.open().await);
    let (x, y) = tokio::join!(
        one.get_or_create_secret("cursor-key", &|| vec![1; 32]),
        two.get_or_create_secret("cursor-key", &|| vec![2; 32]),
    );
    let (x, y) = (x.unwrap(), y.unwrap());
    assert_eq!(x, y);
    assert!(x == vec![1; 32] || x == vec![2; 32]);
    drop((one, two));

    let reopened = db.open().await;
    let z = reopened
        .get_or_create_secret("cursor-key", &|| vec![3; 32])
        .await
        .unwrap();
    assert_eq!(z, x);
}
