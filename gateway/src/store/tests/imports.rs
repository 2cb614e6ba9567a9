//! Imports: upserts, re-imports and the all-or-nothing rules of one batch.

use super::*;

// ---------------------------------------------------------------------------
// The suite
// ---------------------------------------------------------------------------

pub(super) async fn fresh_store_is_empty_and_answers_ping(store: &dyn Store) {
    store.ping().await.expect("ping");
    assert!(store.is_empty().await.unwrap());
    assert_eq!(store.list_organizations().await.unwrap(), vec![]);
    assert_eq!(store.get_organization("nobody").await.unwrap(), None);
}

pub(super) async fn upsert_then_list_and_get_round_trip(store: &dyn Store) {
    let mut beta = org(
        "org-beta",
        "Beta Motors",
        vec![
            rooftop("beta-2", "Beta North"),
            rooftop("beta-1", "Beta South"),
        ],
    );
    beta.legal_name = None;
    beta.extensions = None;
    let alpha = org("org-alpha", "Alpha Auto", vec![rooftop("alpha-1", "Alpha")]);

    let done = store
        .upsert_organizations(&[beta.clone(), alpha.clone()])
        .await
        .unwrap();
    assert_eq!(done, summary([2, 0], [3, 0, 0]));
    assert!(!store.is_empty().await.unwrap());
    // Ordered by organization_id; rooftops in file order, not id order.
    assert_eq!(
        store.list_organizations().await.unwrap(),
        vec![alpha.clone(), beta.clone()]
    );
    assert_eq!(
        store.get_organization("org-beta").await.unwrap(),
        Some(beta)
    );
    assert_eq!(
        store.get_organization("org-alpha").await.unwrap(),
        Some(alpha)
    );
    assert_eq!(store.get_organization("org-gamma").await.unwrap(), None);
}

pub(super) async fn reimport_updates_in_place(store: &dyn Store) {
    let first = org(
        "org-a",
        "A Motors",
        vec![
            rooftop("a-1", "A One"),
            rooftop("a-2", "A Two"),
            rooftop("a-3", "A Three"),
        ],
    );
    store.upsert_organizations(&[first]).await.unwrap();

    // Renamed, a-2 removed, a-3 changed, a-4 added, a-1 unchanged.
    let mut second = org(
        "org-a",
        "A Motors Group",
        vec![
            rooftop("a-1", "A One"),
            rooftop("a-3", "A Three (renovated)"),
            rooftop("a-4", "A Four"),
        ],
    );
    second.source = source("bbbb");
    let done = store
        .upsert_organizations(std::slice::from_ref(&second))
        .await
        .unwrap();
    assert_eq!(done, summary([0, 1], [1, 1, 1]));
    assert_eq!(store.list_organizations().await.unwrap(), vec![second]);

    // Settings alone are a rooftop change too.
    let mut third = store.get_organization("org-a").await.unwrap().unwrap();
    third.rooftops[0].settings.anonymous_reads = false;
    let done = store
        .upsert_organizations(std::slice::from_ref(&third))
        .await
        .unwrap();
    assert_eq!(done, summary([0, 1], [0, 1, 0]));
    assert_eq!(store.get_organization("org-a").await.unwrap(), Some(third));
}

pub(super) async fn reimport_of_identical_content_counts_nothing(store: &dyn Store) {
    let first = org("org-a", "A Motors", vec![rooftop("a-1", "A One")]);
    store
        .upsert_organizations(std::slice::from_ref(&first))
        .await
        .unwrap();
    // Same content from a later import: provenance is refreshed, nothing counted.
    let mut again = first.clone();
    again.source = SourceRecord {
        content_digest: "sha256:cccc".into(),
        observed_at: "2026-11-30T08:00:00Z".parse().unwrap(),
        ..first.source.clone()
    };
    let done = store
        .upsert_organizations(std::slice::from_ref(&again))
        .await
        .unwrap();
    assert_eq!(done, DealersImportSummary::default());
    assert_eq!(store.get_organization("org-a").await.unwrap(), Some(again));
}

pub(super) async fn reordering_rooftops_updates_only_the_organization(store: &dyn Store) {
    let first = org(
        "org-a",
        "A",
        vec![rooftop("a-1", "One"), rooftop("a-2", "Two")],
    );
    store.upsert_organizations(&[first]).await.unwrap();
    let swapped = org(
        "org-a",
        "A",
        vec![rooftop("a-2", "Two"), rooftop("a-1", "One")],
    );
    let done = store
        .upsert_organizations(std::slice::from_ref(&swapped))
        .await
        .unwrap();
    assert_eq!(done, summary([0, 1], [0, 0, 0]));
    assert_eq!(
        store.get_organization("org-a").await.unwrap(),
        Some(swapped)
    );
}

pub(super) async fn organizations_not_named_are_untouched(store: &dyn Store) {
    let a = org("org-a", "A", vec![rooftop("a-1", "One")]);
    let b = org("org-b", "B", vec![rooftop("b-1", "One")]);
    store
        .upsert_organizations(&[a.clone(), b.clone()])
        .await
        .unwrap();
    let a2 = org("org-a", "A renamed", vec![]);
    let done = store
        .upsert_organizations(std::slice::from_ref(&a2))
        .await
        .unwrap();
    assert_eq!(done, summary([0, 1], [0, 0, 1]));
    assert_eq!(store.list_organizations().await.unwrap(), vec![a2, b]);
}

pub(super) async fn json_documents_keep_their_key_order(store: &dyn Store) {
    // The rooftop is typed (schema member order); its open extension bag
    // keeps the key order it was imported with, at every depth.
    let text = r#"{"rooftop_id":"k-1","name":"Keys","address":{"lines":["1 Main St"],"locality":"Springfield","country":"US"},"timezone":"America/Chicago","departments":["sales"],"extensions":{"x.zeta":1,"x.alpha":{"y":true,"b":null},"x.mid":[3,1,2]}}"#;
    let mut r = rooftop("k-1", "Keys");
    r.dap = serde_json::from_str(text).unwrap();
    let mut o = org("org-k", "Keys", vec![r]);
    o.extensions = Some(serde_json::from_str(r#"{"x-z":1,"x-a":2}"#).unwrap());
    store.upsert_organizations(&[o]).await.unwrap();

    let stored = store.get_organization("org-k").await.unwrap().unwrap();
    assert_eq!(
        serde_json::to_string(&stored.rooftops[0].dap).unwrap(),
        text
    );
    assert_eq!(
        serde_json::to_string(&stored.extensions).unwrap(),
        r#"{"x-z":1,"x-a":2}"#
    );

    // The same document with its keys reordered is not a change to count,
    // but the new text is what is stored.
    let reordered = r#"{"rooftop_id":"k-1","name":"Keys","address":{"lines":["1 Main St"],"locality":"Springfield","country":"US"},"timezone":"America/Chicago","departments":["sales"],"extensions":{"x.alpha":{"b":null,"y":true},"x.mid":[3,1,2],"x.zeta":1}}"#;
    let mut again = stored.clone();
    again.rooftops[0].dap = serde_json::from_str(reordered).unwrap();
    let done = store.upsert_organizations(&[again]).await.unwrap();
    assert_eq!(done, DealersImportSummary::default());
    let stored = store.get_organization("org-k").await.unwrap().unwrap();
    assert_eq!(
        serde_json::to_string(&stored.rooftops[0].dap).unwrap(),
        reordered
    );
}

pub(super) async fn stolen_rooftop_fails_the_whole_import(store: &dyn Store) {
    let a = org("org-a", "A", vec![rooftop("a-1", "One")]);
    let z = org("org-z", "Z", vec![rooftop("z-1", "Zed")]);
    store.upsert_organizations(&[a, z]).await.unwrap();
    let before = store.list_organizations().await.unwrap();

    // The first organization's changes are valid and written before the
    // second one, which lists org-z's rooftop, fails the transaction.
    let a_renamed = org(
        "org-a",
        "A renamed",
        vec![rooftop("a-1", "One"), rooftop("a-2", "Two")],
    );
    let thief = org(
        "org-b",
        "B",
        vec![rooftop("b-1", "Bee"), rooftop("z-1", "Mine")],
    );
    let err = store
        .upsert_organizations(&[a_renamed, thief])
        .await
        .unwrap_err();
    let StoreError::Query(message) = &err else {
        panic!("expected StoreError::Query, got {err:?}");
    };
    assert!(
        message.contains("rooftop_id 'z-1' already belongs to another organization"),
        "{message}"
    );
    assert!(message.contains("'org-z'"), "{message}");
    assert!(message.contains("rooftops_rooftop_id_unique"), "{message}");
    assert_eq!(store.list_organizations().await.unwrap(), before);
    assert_eq!(store.get_organization("org-b").await.unwrap(), None);
}

pub(super) async fn duplicate_ids_in_one_batch_fail_the_whole_import(store: &dyn Store) {
    // The second organization steals the first one's rooftop id.
    let first = org("org-a", "A", vec![rooftop("shared", "One")]);
    let second = org("org-b", "B", vec![rooftop("shared", "Two")]);
    let err = store
        .upsert_organizations(&[first.clone(), second])
        .await
        .unwrap_err();
    let StoreError::Query(message) = &err else {
        panic!("expected StoreError::Query, got {err:?}");
    };
    assert!(
        message.contains("rooftop_id 'shared' already belongs to another organization"),
        "{message}"
    );
    assert!(message.contains("rooftops_rooftop_id_unique"), "{message}");
    assert!(store.is_empty().await.unwrap());

    // The same organization twice.
    let err = store
        .upsert_organizations(&[first.clone(), first])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Query(m) if m.contains("organization_id 'org-a' appears twice")),
        "{err:?}"
    );
    assert!(store.is_empty().await.unwrap());
}

pub(super) async fn rooftop_may_move_between_organizations_of_one_batch(store: &dyn Store) {
    let a = org(
        "org-a",
        "A",
        vec![rooftop("r-1", "One"), rooftop("a-2", "Two")],
    );
    let b = org("org-b", "B", vec![rooftop("b-1", "Bee")]);
    store.upsert_organizations(&[a, b]).await.unwrap();
    // The new owner is listed before the old one gives it up.
    let b2 = org(
        "org-b",
        "B",
        vec![rooftop("b-1", "Bee"), rooftop("r-1", "One")],
    );
    let a2 = org("org-a", "A", vec![rooftop("a-2", "Two")]);
    let done = store
        .upsert_organizations(&[b2.clone(), a2.clone()])
        .await
        .unwrap();
    assert_eq!(done, summary([0, 2], [1, 0, 1]));
    assert_eq!(store.list_organizations().await.unwrap(), vec![a2, b2]);
}

pub(super) async fn secrets_are_created_once(store: &dyn Store) {
    let first = store
        .get_or_create_secret("cursor-key", &|| vec![1; 32])
        .await
        .unwrap();
    assert_eq!(first, vec![1; 32]);
    let again = store
        .get_or_create_secret("cursor-key", &|| panic!("must not regenerate"))
        .await
        .unwrap();
    assert_eq!(again, first);
    let other = store
        .get_or_create_secret("other-key", &|| vec![2; 16])
        .await
        .unwrap();
    assert_eq!(other, vec![2; 16]);
}

pub(super) async fn first_snapshot_is_version_1_with_everything_added(store: &dyn Store) {
    seed_dealers(store).await;
    let batch = vehicles("org-a", "a-1", 0..10);
    let before = Utc::now();
    let snapshot = store
        .create_snapshot("org-a", "a-1", &inventory_source("s1"), &batch)
        .await
        .unwrap();
    assert_eq!(snapshot.version, 1);
    assert_eq!(snapshot.organization_id, "org-a");
    assert_eq!(snapshot.rooftop_id, "a-1");
    assert_eq!(snapshot.vehicle_count, 10);
    assert_eq!(snapshot.source, inventory_source("s1"));
    assert_eq!(snapshot.summary, inventory_summary(10, [10, 0, 0, 0]));
    assert!(snapshot.created_at >= before - chrono::Duration::milliseconds(1));
    let id = uuid::Uuid::parse_str(&snapshot.snapshot_id).expect("a UUID");
    assert_eq!(id.get_version_num(), 7);
    // What was returned is exactly what is stored.
    assert_eq!(
        store.latest_snapshots().await.unwrap(),
        vec![snapshot.clone()]
    );
    assert_eq!(
        store
            .snapshot_vehicles(&snapshot.snapshot_id)
            .await
            .unwrap(),
        sorted(batch)
    );
}

pub(super) async fn next_snapshot_counts_changes_against_the_previous_one(store: &dyn Store) {
    seed_dealers(store).await;
    let first = vehicles("org-a", "a-1", 0..6);
    let one = store
        .create_snapshot("org-a", "a-1", &inventory_source("s1"), &first)
        .await
        .unwrap();
    // 0..=3 kept (1 with a new price), 4 and 5 kept but re-observed from a
    // new file (provenance is not a fact), 2 removed, 6 added.
    let mut second: Vec<VehicleRecord> = first.clone();
    second[1].advertised_price = pricing::Money::from_minor(1_999_900, pricing::Currency::USD);
    second[4].source.content_digest = "sha256:other-file".into();
    second[5].source.observed_at = "2026-12-02T00:00:00Z".parse().unwrap();
    second.remove(2);
    second.push(vehicle("org-a", "a-1", 6));
    let two = store
        .create_snapshot("org-a", "a-1", &inventory_source("s2"), &second)
        .await
        .unwrap();
    assert_eq!(two.version, 2);
    assert_eq!(two.vehicle_count, 6);
    assert_eq!(two.summary, inventory_summary(6, [1, 1, 4, 1]));
    assert_ne!(two.snapshot_id, one.snapshot_id);
    // The first snapshot is immutable and still readable.
    assert_eq!(
        store.snapshot_vehicles(&one.snapshot_id).await.unwrap(),
        sorted(first)
    );
    assert_eq!(
        store.snapshot_vehicles(&two.snapshot_id).await.unwrap(),
        sorted(second.clone())
    );
    // Identical content again: all unchanged. An empty import removes all.
    let three = store
        .create_snapshot("org-a", "a-1", &inventory_source("s3"), &second)
        .await
        .unwrap();
    assert_eq!(three.version, 3);
    assert_eq!(three.summary, inventory_summary(6, [0, 0, 6, 0]));
    let four = store
        .create_snapshot("org-a", "a-1", &inventory_source("s4"), &[])
        .await
        .unwrap();
    assert_eq!(four.version, 4);
    assert_eq!(four.vehicle_count, 0);
    assert_eq!(four.summary, inventory_summary(0, [0, 0, 0, 6]));
    assert_eq!(
        store.snapshot_vehicles(&four.snapshot_id).await.unwrap(),
        vec![]
    );
    // Versions are per rooftop.
    let other = store
        .create_snapshot(
            "org-a",
            "a-2",
            &inventory_source("s5"),
            &vehicles("org-a", "a-2", 0..1),
        )
        .await
        .unwrap();
    assert_eq!(other.version, 1);
}

pub(super) async fn snapshot_vehicles_round_trip_exactly(store: &dyn Store) {
    seed_dealers(store).await;
    // Inserted out of id order; every optional fact both known and unknown.
    let mut batch = vehicles("org-b", "b-1", 0..24);
    batch.reverse();
    let mut odd = vehicle("org-b", "b-1", 100);
    odd.vin = None;
    odd.stock_number = None;
    // Typed records with hard text and number forms: an exponent-written
    // range, escapes, a caption and the largest position.
    odd.powertrain = Some(
        serde_json::from_str(
            r#"{"drivetrain":"other","transmission":"ünïcødé \"quoted\" \\ \n","electric_range":{"value":1e300,"unit":"km"}}"#,
        )
        .unwrap(),
    );
    odd.media = vec![
        serde_json::from_str(
            r#"{"type":"spin","url":"https://cdn.example.com/ünï","caption":"\"quoted\" \\ \n","position":18446744073709551615}"#,
        )
        .unwrap(),
        serde_json::from_str(r#"{"type":"document","url":"https://cdn.example.com/2.5e-7"}"#)
            .unwrap(),
    ];
    odd.advertised_price = pricing::Money::from_minor(i64::MIN + 1, pricing::Currency::USD);
    odd.required_dealer_charges = Some(vec![]);
    odd.conditional_adjustments = Some(vec![
        serde_json::from_value(json!({
            "adjustment_id": "ünïcødé", "name": "\"quoted\" \\ \n", "direction": "discount",
            "amount_status": "known", "amount": {"amount_minor": -50000, "currency": "USD"},
            "criteria": [{"criterion": "other", "operator": "in", "value": [1, 2.5, -3e-7, "x"],
                          "evidence_status": "claimed"}],
            "stacking": {"group": "g", "combinability": "rule_defined", "combinable_with": []}
        }))
        .unwrap(),
    ]);
    odd.stocked_at = Some("1999-12-31T23:59:59.999999999Z".parse().unwrap());
    odd.first_public_listing_at = None;
    odd.features = vec![];
    odd.source.source_record_id = None;
    odd.source.transformations = vec![];
    batch.push(odd);
    let snapshot = store
        .create_snapshot("org-b", "b-1", &inventory_source("rt"), &batch)
        .await
        .unwrap();
    let stored = store
        .snapshot_vehicles(&snapshot.snapshot_id)
        .await
        .unwrap();
    assert_eq!(stored, sorted(batch.clone()));
    // Byte-identical JSON too (key order, number text).
    for (a, b) in stored.iter().zip(sorted(batch)) {
        assert_eq!(
            serde_json::to_string(a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
    }
    assert_eq!(
        store.snapshot_vehicles("no-such-snapshot").await.unwrap(),
        vec![]
    );
    // The stream sends the same vehicles in the same order, through a
    // queue shorter than the snapshot.
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        while let Some(v) = rx.recv().await {
            got.push(v);
        }
        got
    });
    let sent = store
        .stream_snapshot_vehicles(&snapshot.snapshot_id, tx)
        .await
        .unwrap();
    let streamed = reader.await.unwrap();
    assert_eq!(sent, stored.len());
    assert_eq!(streamed, stored);
    // A reader that stops early ends the stream without an error.
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    let first = tokio::spawn(async move { rx.recv().await });
    let sent = store
        .stream_snapshot_vehicles(&snapshot.snapshot_id, tx)
        .await
        .unwrap();
    assert!(first.await.unwrap().is_some());
    assert!(sent < stored.len());
    let (tx, _) = tokio::sync::mpsc::channel(1);
    assert_eq!(
        store
            .stream_snapshot_vehicles("no-such-snapshot", tx)
            .await
            .unwrap(),
        0
    );
}

pub(super) async fn latest_snapshots_are_the_newest_per_rooftop(store: &dyn Store) {
    seed_dealers(store).await;
    assert_eq!(store.latest_snapshots().await.unwrap(), vec![]);
    let src = inventory_source("l");
    let b1 = store
        .create_snapshot("org-b", "b-1", &src, &vehicles("org-b", "b-1", 0..2))
        .await
        .unwrap();
    let mut a1 = None;
    for n in 1..=3 {
        a1 = Some(
            store
                .create_snapshot("org-a", "a-1", &src, &vehicles("org-a", "a-1", 0..n))
                .await
                .unwrap(),
        );
    }
    // a-2 has no snapshot: it is not listed.
    let latest = store.latest_snapshots().await.unwrap();
    assert_eq!(latest, vec![a1.unwrap(), b1]);
    assert_eq!(latest[0].version, 3);
    assert_eq!(latest[0].vehicle_count, 3);
}

pub(super) async fn snapshot_history_is_newest_first(store: &dyn Store) {
    seed_dealers(store).await;
    let mut made = Vec::new();
    for n in 0..4 {
        made.push(
            store
                .create_snapshot(
                    "org-a",
                    "a-1",
                    &inventory_source(&format!("h{n}")),
                    &vehicles("org-a", "a-1", 0..n),
                )
                .await
                .unwrap(),
        );
    }
    made.reverse();
    assert_eq!(
        store.snapshot_history("org-a", "a-1", 10).await.unwrap(),
        made
    );
    assert_eq!(
        store.snapshot_history("org-a", "a-1", 2).await.unwrap(),
        made[..2].to_vec()
    );
    assert_eq!(
        store.snapshot_history("org-a", "a-1", 0).await.unwrap(),
        vec![]
    );
    assert_eq!(
        store.snapshot_history("org-a", "a-2", 10).await.unwrap(),
        vec![]
    );
    // The rooftop id alone does not match another organization's history.
    assert_eq!(
        store.snapshot_history("org-b", "a-1", 10).await.unwrap(),
        vec![]
    );
    let versions: Vec<i64> = made.iter().map(|s| s.version).collect();
    assert_eq!(versions, vec![4, 3, 2, 1]);
}
