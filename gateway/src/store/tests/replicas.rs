//! Replicas that agree (docs/operations.md "Replicas"): shared sessions and change notifications.

use super::*;

// ---------------------------------------------------------------------------
// Replicas that agree (docs/operations.md "Replicas")
// ---------------------------------------------------------------------------

pub(super) fn session(key: &str, at_text: &str) -> LegacySessionRecord {
    LegacySessionRecord {
        key: key.to_owned(),
        protocol_version: "2025-11-25".into(),
        initialized: false,
        created_at: at(at_text),
        last_seen: at(at_text),
    }
}

/// Legacy sessions written through one store are read, touched and
/// deleted through another; the bound keeps the most recently seen; idle
/// ones go at the next creation.
pub(super) async fn legacy_sessions_are_shared_bounded_and_expire(db: &TestDb) {
    let (one, two) = (db.open().await, db.open().await);
    let long_ago = at("2026-01-01T00:00:00Z");
    for (i, key) in ["k1", "k2", "k3"].iter().enumerate() {
        let t = format!("2026-12-01T00:00:0{i}.000001Z");
        let n = one
            .create_legacy_session(&session(key, &t), 3, long_ago)
            .await
            .unwrap();
        assert_eq!(n, i as u64 + 1);
    }
    // Seen on the other replica: k1 becomes the most recent.
    assert!(
        two.touch_legacy_session("k1", at("2026-12-01T00:00:05Z"))
            .await
            .unwrap()
    );
    // Never moved back.
    assert!(
        two.touch_legacy_session("k1", at("2026-12-01T00:00:04Z"))
            .await
            .unwrap()
    );
    let k1 = one.legacy_session("k1").await.unwrap().unwrap();
    assert_eq!(k1.last_seen, at("2026-12-01T00:00:05Z"));
    assert!(!k1.initialized);
    // Full: the least recently seen (k2) goes, the new one is kept.
    let n = two
        .create_legacy_session(&session("k4", "2026-12-01T00:00:06Z"), 3, long_ago)
        .await
        .unwrap();
    assert_eq!(n, 3);
    assert!(one.legacy_session("k2").await.unwrap().is_none());
    for key in ["k1", "k3", "k4"] {
        assert!(one.legacy_session(key).await.unwrap().is_some(), "{key}");
    }
    assert_eq!(one.count_legacy_sessions().await.unwrap(), 3);
    assert!(
        one.initialize_legacy_session("k3", at("2026-12-01T00:00:07Z"))
            .await
            .unwrap()
    );
    let k3 = two.legacy_session("k3").await.unwrap().unwrap();
    assert!(k3.initialized);
    assert_eq!(k3.last_seen, at("2026-12-01T00:00:07Z"));
    // Deleted on one, gone on both.
    assert!(two.delete_legacy_session("k3").await.unwrap());
    assert!(!one.delete_legacy_session("k3").await.unwrap());
    assert!(one.legacy_session("k3").await.unwrap().is_none());
    assert!(
        !one.touch_legacy_session("k3", at("2026-12-01T00:00:08Z"))
            .await
            .unwrap()
    );
    assert!(
        !one.initialize_legacy_session("k3", at("2026-12-01T00:00:08Z"))
            .await
            .unwrap()
    );
    // Idle before 00:00:05.5: k4 (seen at :06) and the new k5 remain, k1 (:05) goes.
    let n = one
        .create_legacy_session(
            &session("k5", "2026-12-01T00:00:09Z"),
            3,
            at("2026-12-01T00:00:05.5Z"),
        )
        .await
        .unwrap();
    assert_eq!(n, 2);
    assert!(two.legacy_session("k1").await.unwrap().is_none());
    assert_eq!(two.count_legacy_sessions().await.unwrap(), 2);
    drop((one, two));
}

/// Receive the next change within `within`, skipping nothing.
pub(super) async fn next_change(
    changes: &mut tokio::sync::mpsc::Receiver<StoreChange>,
    within: Duration,
) -> Option<StoreChange> {
    tokio::time::timeout(within, changes.recv())
        .await
        .ok()
        .flatten()
}

/// PostgreSQL: a write on one replica reaches another's change feed when
/// (and only if) its transaction commits; the feed opens with a resync.
/// SQLite has no feed (its replicas poll).
pub(super) async fn changes_reach_other_replicas_when_they_commit(db: &TestDb) {
    let (listener, writer) = (db.open().await, db.open().await);
    let Some(mut changes) = listener.subscribe_changes() else {
        assert!(
            matches!(db.kind, TestDbKind::Sqlite { .. }),
            "PostgreSQL offers a change feed"
        );
        return;
    };
    let wait = Duration::from_secs(10);
    assert_eq!(
        next_change(&mut changes, wait).await,
        Some(StoreChange::Resync)
    );
    seed_dealers(&*writer).await;
    assert_eq!(
        next_change(&mut changes, wait).await,
        Some(StoreChange::Dealers)
    );

    let started = Instant::now();
    writer
        .create_snapshot(
            "org-a",
            "a-1",
            &inventory_source("s1"),
            &vehicles("org-a", "a-1", 0..3),
        )
        .await
        .unwrap();
    let change = next_change(&mut changes, wait).await;
    let latency = started.elapsed();
    assert_eq!(
        change,
        Some(StoreChange::Inventory {
            organization_id: "org-a".into()
        })
    );
    println!("inventory change delivered {latency:?} after the write began");

    // A failed write (unknown organization) and a dry run notify nobody:
    // the next change is the programs import after them.
    assert!(
        writer
            .import_programs("org-x", &[program("cash", 1, 5)])
            .await
            .is_err()
    );
    let rooftops = ["a-1".to_owned()];
    let plan = snapshot_write::SnapshotPlan {
        organization_id: "org-a",
        rooftops: &rooftops,
        source: &inventory_source("dry"),
        dry_run: true,
    };
    let (sender, receiver) = tokio::sync::mpsc::channel(snapshot_write::FEED_CHANNEL_CAPACITY);
    let batch = vehicles("org-a", "a-1", 0..2);
    let ((), dry) = tokio::join!(
        snapshot_write::feed_slice(&batch, sender),
        writer.write_snapshots(plan, receiver)
    );
    dry.unwrap();
    writer
        .import_programs("org-b", &[program("cash", 1, 5)])
        .await
        .unwrap();
    assert_eq!(
        next_change(&mut changes, wait).await,
        Some(StoreChange::Programs {
            organization_id: "org-b".into()
        })
    );

    use crate::auth::api_token::generate;
    let new = generate();
    writer
        .create_api_token(&token_record(
            &new,
            RooftopScope::Group,
            "2026-12-01T00:00:00Z",
        ))
        .await
        .unwrap();
    assert!(
        !writer
            .revoke_api_token("ffffffffffffffff", at("2026-12-02T00:00:00Z"))
            .await
            .unwrap()
    );
    assert!(
        writer
            .revoke_api_token(&new.token_id, at("2026-12-02T00:00:00Z"))
            .await
            .unwrap()
    );
    assert_eq!(
        next_change(&mut changes, wait).await,
        Some(StoreChange::TokenRevoked)
    );
    // Nothing else was sent.
    assert_eq!(
        next_change(&mut changes, Duration::from_millis(300)).await,
        None
    );
    drop((listener, writer, changes));
}

#[test]
pub(super) fn change_payloads_round_trip_and_unknown_ones_resync() {
    let org = "org.lakeshore-auto-group".to_owned();
    for change in [
        StoreChange::Dealers,
        StoreChange::Inventory {
            organization_id: org.clone(),
        },
        StoreChange::Programs {
            organization_id: org.clone(),
        },
        StoreChange::TokenRevoked,
        StoreChange::Availability {
            organization_id: org.clone(),
            rooftop_id: "roof.lakeshore-chicago".into(),
            vehicle_id: "veh.000fabd0645956feca90ba2d".into(),
        },
        StoreChange::Resync,
    ] {
        assert_eq!(StoreChange::parse(&change.payload()), change);
    }
    assert_eq!(
        StoreChange::parse("availability:org.a roof.b"),
        StoreChange::Resync
    );
    assert_eq!(
        StoreChange::parse("availability:org.a  veh.c"),
        StoreChange::Resync
    );
    assert_eq!(StoreChange::parse("inventory:"), StoreChange::Resync);
    assert_eq!(StoreChange::parse("pricing:org.a"), StoreChange::Resync);
    assert_eq!(StoreChange::parse(""), StoreChange::Resync);
}
