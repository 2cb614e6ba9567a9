//! Vehicles fed as stored text (an import's checked vehicles,
//! docs/benchmarks.md "Import: checked once") are written, compared and
//! reported exactly as the same vehicles fed as records.

use super::*;
use snapshot_write::{
    FEED_CHANNEL_CAPACITY, SnapshotFeed, SnapshotPlan, StoredVehicle, WriteChecks,
};

/// A checked write of `vehicles` to a-1 and a-2, fed as records or as
/// stored text; `end: false` stops the feed before its end (a reader that
/// failed). Returns the outcome and every change as `(kind, rooftop, id,
/// fields)`.
async fn write(
    store: &dyn Store,
    vehicles: &[VehicleRecord],
    stored: bool,
    end: bool,
    dry_run: bool,
) -> (
    Result<snapshot_write::SnapshotWrite, StoreError>,
    Vec<(String, String, String, Vec<String>)>,
) {
    let rooftops = vec!["a-1".to_owned(), "a-2".to_owned()];
    let src = inventory_source("stored");
    let plan = SnapshotPlan {
        organization_id: "org-a",
        rooftops: &rooftops,
        source: &src,
        dry_run,
    };
    let mut sink = CollectedChanges::default();
    let (sender, receiver) = tokio::sync::mpsc::channel(FEED_CHANNEL_CAPACITY);
    let feed = async move {
        for v in vehicles {
            let message = if stored {
                SnapshotFeed::Stored(Box::new(StoredVehicle::of(v).unwrap()))
            } else {
                SnapshotFeed::Vehicle(Box::new(v.clone()))
            };
            if sender.send(message).await.is_err() {
                return;
            }
        }
        if end {
            let _ = sender.send(SnapshotFeed::End).await;
        }
    };
    let checks = WriteChecks {
        removal_guard: None,
        changes: Some(&mut sink),
        planned_rooftops: &[],
    };
    let ((), written) = tokio::join!(feed, store.write_snapshots_checked(plan, receiver, checks));
    let changes = sink
        .0
        .into_iter()
        .map(|c| (c.kind.to_owned(), c.rooftop, c.vehicle_id, c.fields))
        .collect();
    (written, changes)
}

pub(super) async fn stored_vehicles_are_written_and_compared_as_their_records(store: &dyn Store) {
    seed_dealers(store).await;
    let src = inventory_source("first");
    store
        .create_snapshot("org-a", "a-1", &src, &vehicles("org-a", "a-1", 0..1_200))
        .await
        .unwrap();
    let before = store.latest_snapshots().await.unwrap();
    // a-1 keeps 0..1000 (every 100th repriced, more than one batch), gains 5
    // and loses 200; a-2 is new.
    let mut next = vehicles("org-a", "a-1", 0..1_000);
    for v in next.iter_mut().step_by(100) {
        v.advertised_price = pricing::Money::from_minor(1, pricing::Currency::USD);
    }
    next.extend(vehicles("org-a", "a-1", 5_000..5_005));
    next.extend(vehicles("org-a", "a-2", 0..7));

    // A feed that stops before its end writes nothing, either way.
    for stored in [false, true] {
        let (written, _) = write(store, &next, stored, false, false).await;
        assert!(written.is_err(), "stored {stored}");
        assert_eq!(store.latest_snapshots().await.unwrap(), before);
    }
    // A dry run reports the same changes and summaries either way.
    let (records, record_changes) = write(store, &next, false, true, true).await;
    let (texts, text_changes) = write(store, &next, true, true, true).await;
    let summaries = |w: &snapshot_write::SnapshotWrite| -> Vec<InventoryImportSummary> {
        w.snapshots.iter().map(|s| s.summary).collect()
    };
    assert_eq!(summaries(&records.unwrap()), summaries(&texts.unwrap()));
    assert_eq!(record_changes, text_changes);
    assert_eq!(text_changes.iter().filter(|c| c.0 == "changed").count(), 10);
    assert_eq!(store.latest_snapshots().await.unwrap(), before);

    // Written as text: the snapshots hold the records, and a later write of
    // the same records as records finds nothing changed.
    let (written, _) = write(store, &next, true, true, false).await;
    let written = written.unwrap();
    for snapshot in &written.snapshots {
        let mut stored = store
            .snapshot_vehicles(&snapshot.snapshot_id)
            .await
            .unwrap();
        let mut expected: Vec<VehicleRecord> = next
            .iter()
            .filter(|v| v.rooftop_id == snapshot.rooftop_id)
            .cloned()
            .collect();
        stored.sort_by(|a, b| a.vehicle_id.cmp(&b.vehicle_id));
        expected.sort_by(|a, b| a.vehicle_id.cmp(&b.vehicle_id));
        assert_eq!(stored, expected, "{}", snapshot.rooftop_id);
    }
    let (again, changes) = write(store, &next, false, true, true).await;
    assert!(changes.is_empty(), "{changes:?}");
    assert!(
        again
            .unwrap()
            .snapshots
            .iter()
            .all(|s| s.summary.vehicles_unchanged == s.vehicle_count)
    );
}
