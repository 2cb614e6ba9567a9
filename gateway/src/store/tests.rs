//! One behaviour suite, run against every backend.
//!
//! Each suite function below is backend-agnostic. `backend_suite!` turns it
//! into one `#[tokio::test]` per backend, each on a fresh database:
//! - SQLite: a new file in a new directory under the system temp dir;
//! - PostgreSQL: `create database test_<uuid>` on the server named by
//!   `DEALER_GATEWAY_TEST_POSTGRES_URL` (dropped afterwards), so tests run in
//!   parallel. Without that variable the PostgreSQL tests print that they were
//!   skipped and pass, unless `REQUIRE_POSTGRES=1`, which makes them fail.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::json;
use sqlx::{AssertSqlSafe, Connection as _, Executor as _};

use super::*;
use crate::domain::grant::{Credential, RooftopScope};
use crate::inventory::model::{InventoryImportSummary, VehicleRecord, diff_vehicles};

/// Typed rooftops as stored and read back.
mod rooftops;
/// Vehicles fed as stored text are written as their records.
mod stored;
use stored::stored_vehicles_are_written_and_compared_as_their_records;

const POSTGRES_URL_VAR: &str = "DEALER_GATEWAY_TEST_POSTGRES_URL";

// ---------------------------------------------------------------------------
// Fresh databases
// ---------------------------------------------------------------------------

/// A fresh, empty database for one test.
struct TestDb {
    url: String,
    kind: TestDbKind,
}

enum TestDbKind {
    /// Removed (with the database file) on drop.
    Sqlite { dir: PathBuf },
    /// Dropped by `TestDb::finish`; a failed test leaves it behind in the
    /// throwaway test cluster.
    Postgres { admin_url: String, name: String },
}

impl TestDb {
    /// A database file in a directory that does not exist yet (the store
    /// must create it).
    fn sqlite() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "dealer-gateway-store-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let url = format!("sqlite://{}/nested/gateway.sqlite", dir.display());
        Self {
            url,
            kind: TestDbKind::Sqlite { dir },
        }
    }

    /// A new database on the test server, or `None` (skip) without one.
    async fn postgres(test: &str) -> Option<Self> {
        let admin_url = match std::env::var(POSTGRES_URL_VAR) {
            Ok(url) if !url.is_empty() => url,
            _ => {
                assert!(
                    std::env::var("REQUIRE_POSTGRES").as_deref() != Ok("1"),
                    "REQUIRE_POSTGRES=1 but {POSTGRES_URL_VAR} is not set"
                );
                println!("skipped postgres test {test}: {POSTGRES_URL_VAR} is not set");
                return None;
            }
        };
        let name = format!("test_{}", uuid::Uuid::new_v4().simple());
        let mut admin = sqlx::PgConnection::connect(&admin_url)
            .await
            .unwrap_or_else(|e| panic!("connect to {POSTGRES_URL_VAR}: {e}"));
        admin
            .execute(AssertSqlSafe(format!("create database {name}")))
            .await
            .expect("create the test database");
        admin.close().await.expect("close the admin connection");
        Some(Self {
            url: with_database(&admin_url, &name),
            kind: TestDbKind::Postgres { admin_url, name },
        })
    }

    async fn open(&self) -> Arc<dyn Store> {
        open(&self.url)
            .await
            .unwrap_or_else(|e| panic!("open {}: {e}", self.url))
    }

    /// Drop a PostgreSQL test database (SQLite cleans up on drop).
    async fn finish(self) {
        if let TestDbKind::Postgres { admin_url, name } = &self.kind {
            let mut admin = sqlx::PgConnection::connect(admin_url)
                .await
                .expect("reconnect to the admin database");
            admin
                .execute(AssertSqlSafe(format!(
                    "drop database if exists {name} with (force)"
                )))
                .await
                .expect("drop the test database");
            admin.close().await.expect("close the admin connection");
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let TestDbKind::Sqlite { dir } = &self.kind {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// `postgres://user@host:port/anything?params` with the database replaced.
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let authority_end = base[authority_start..]
        .find('/')
        .map_or(base.len(), |i| authority_start + i);
    let mut out = format!("{}/{database}", &base[..authority_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

#[test]
fn with_database_replaces_only_the_path() {
    assert_eq!(
        with_database("postgres://postgres@127.0.0.1:55432/postgres", "t1"),
        "postgres://postgres@127.0.0.1:55432/t1"
    );
    assert_eq!(
        with_database("postgres://u:p@h:1?sslmode=disable", "t1"),
        "postgres://u:p@h:1/t1?sslmode=disable"
    );
}

/// One `#[tokio::test]` per backend for each suite function. `store:` suites
/// take a freshly opened `&dyn Store`; `db:` suites take the `TestDb` itself
/// because they open it more than once.
macro_rules! backend_suite {
    (store: [$($store_test:ident),* $(,)?], db: [$($db_test:ident),* $(,)?] $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $store_test() {
                    let db = super::TestDb::sqlite();
                    let store = db.open().await;
                    super::$store_test(&*store).await;
                }
            )*
            $(
                #[tokio::test]
                async fn $db_test() {
                    super::$db_test(&super::TestDb::sqlite()).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $store_test() {
                    let Some(db) = super::TestDb::postgres(stringify!($store_test)).await else {
                        return;
                    };
                    let store = db.open().await;
                    super::$store_test(&*store).await;
                    drop(store);
                    db.finish().await;
                }
            )*
            $(
                #[tokio::test]
                async fn $db_test() {
                    let Some(db) = super::TestDb::postgres(stringify!($db_test)).await else {
                        return;
                    };
                    super::$db_test(&db).await;
                    db.finish().await;
                }
            )*
        }
    };
}

backend_suite! {
    store: [
        fresh_store_is_empty_and_answers_ping,
        upsert_then_list_and_get_round_trip,
        reimport_updates_in_place,
        reimport_of_identical_content_counts_nothing,
        reordering_rooftops_updates_only_the_organization,
        organizations_not_named_are_untouched,
        json_documents_keep_their_key_order,
        stolen_rooftop_fails_the_whole_import,
        duplicate_ids_in_one_batch_fail_the_whole_import,
        rooftop_may_move_between_organizations_of_one_batch,
        secrets_are_created_once,
        first_snapshot_is_version_1_with_everything_added,
        next_snapshot_counts_changes_against_the_previous_one,
        snapshot_vehicles_round_trip_exactly,
        latest_snapshots_are_the_newest_per_rooftop,
        snapshot_history_is_newest_first,
        snapshot_of_a_rooftop_not_of_the_organization_fails,
        snapshot_with_repeated_or_foreign_vehicles_fails,
        streamed_write_covers_every_rooftop_or_none,
        prune_deletes_only_snapshots_superseded_before_the_cutoff,
        dropping_a_rooftop_deletes_its_snapshots,
        concurrent_imports_of_one_rooftop_get_distinct_versions,
        large_snapshot_round_trip,
        bulk_import_throughput,
        api_tokens_round_trip_in_creation_order,
        revoking_a_token_keeps_the_first_time,
        api_token_of_unknown_organization_or_foreign_rooftop_fails,
        api_token_verification_follows_the_store,
        audit_since_filters_and_orders,
        audit_pages_through_events_sharing_a_timestamp,
        audit_event_never_contains_the_token_secret,
        audit_events_are_stored_within_their_bounds,
        audit_counters_add_up_and_cap_the_keys_of_a_window,
        audit_retention_prunes_entries_older_than_the_cutoff,
        audit_size_bound_prunes_the_oldest_entries_first,
        audit_one_principal_flooding_keeps_every_other_principals_events,
        availability_observations_round_trip_newest_first,
        stored_settings_without_an_availability_source_decode_as_feed,
        programs_revisions_coexist_and_import_counts,
        programs_import_conflict_or_unknown_organization_writes_nothing,
        programs_change_refused_by_the_set_check_writes_nothing,
        programs_replace_withdraws_what_the_file_omits_with_an_audit_event,
        programs_withdraw_one_revision_or_all_and_withdrawal_is_final,
        streamed_write_names_each_change_and_the_removal_guard_refuses_whole,
        stored_vehicles_are_written_and_compared_as_their_records,
        refused_imports_are_kept_within_their_bound_and_every_import_is_counted,
    ],
    db: [
        migrations_apply_and_reapply,
        secrets_are_stable_across_opens_and_racing_replicas,
        legacy_sessions_are_shared_bounded_and_expire,
        changes_reach_other_replicas_when_they_commit,
    ],
}

// ---------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------

fn source(digest: &str) -> SourceRecord {
    SourceRecord {
        source_name: "dealers-file:dealers.yaml".into(),
        authority: "dealer_asserted".into(),
        content_digest: format!("sha256:{digest}"),
        // Nanoseconds on purpose: they must survive the round trip.
        observed_at: "2026-11-29T10:00:00.123456789Z".parse().unwrap(),
    }
}

fn settings() -> RooftopSettings {
    RooftopSettings {
        currency: "USD".into(),
        odometer_unit: "mi".into(),
        anonymous_reads: true,
        freshness_sla_seconds: FreshnessSla {
            inventory: 900,
            availability: 300,
            pricing: 3600,
        },
        availability_source: Default::default(),
        pricing: Default::default(),
    }
}

fn rooftop(id: &str, name: &str) -> RooftopRecord {
    RooftopRecord {
        rooftop_id: id.into(),
        dap: serde_json::from_value(json!({
            "rooftop_id": id,
            "name": name,
            "address": {"lines": ["1 Main St"], "locality": "Springfield", "region": "IL",
                        "postal_code": "62701", "country": "US"},
            "timezone": "America/Chicago",
            "departments": ["sales", "service"],
        }))
        .unwrap(),
        settings: settings(),
    }
}

fn org(id: &str, name: &str, rooftops: Vec<RooftopRecord>) -> OrganizationRecord {
    OrganizationRecord {
        organization_id: id.into(),
        name: name.into(),
        legal_name: Some(format!("{name} LLC")),
        extensions: Some(json!({"x-example": {"tier": 1}})),
        rooftops,
        source: source("aaaa"),
    }
}

fn summary(orgs: [u32; 2], rooftops: [u32; 3]) -> DealersImportSummary {
    DealersImportSummary {
        organizations_added: orgs[0],
        organizations_updated: orgs[1],
        rooftops_added: rooftops[0],
        rooftops_updated: rooftops[1],
        rooftops_removed: rooftops[2],
    }
}

fn inventory_source(digest: &str) -> SourceRecord {
    SourceRecord {
        source_name: "dap-csv:inventory.csv".into(),
        authority: "dealer_asserted".into(),
        content_digest: format!("sha256:{digest}"),
        observed_at: "2026-12-01T09:30:00.987654321Z".parse().unwrap(),
    }
}

/// Vehicle `n` of a rooftop: every optional fact filled or left unknown
/// depending on `n`, nested JSON, money and nanosecond timestamps.
fn vehicle(organization_id: &str, rooftop_id: &str, n: u32) -> VehicleRecord {
    use crate::inventory::model::{DistanceUnit, Odometer, OdometerStatus, VehicleSource};
    let even = n.is_multiple_of(2);
    VehicleRecord {
        vehicle_id: format!("veh-{rooftop_id}-{n:06}"),
        organization_id: organization_id.into(),
        rooftop_id: rooftop_id.into(),
        vin: (n % 7 != 3).then(|| format!("1HGCM{rooftop_id}{n:08}")),
        stock_number: (n % 5 != 4).then(|| format!("STK-{n}")),
        year: 2020 + i32::try_from(n % 6).unwrap(),
        make: "Honda".into(),
        model: if even { "Civic" } else { "Accord" }.into(),
        trim: even.then(|| "EX-L".into()),
        condition: if even { "used" } else { "new" }.into(),
        vehicle_type: Some("car".into()),
        body_style: (!even).then(|| "sedan".into()),
        exterior_color: Some("Platinum White Pearl".into()),
        interior_color: None,
        odometer: even.then_some(Odometer {
            value: i64::from(n) * 1000 + 7,
            unit: if n.is_multiple_of(4) {
                DistanceUnit::Mi
            } else {
                DistanceUnit::Km
            },
            status: n.is_multiple_of(3).then_some(OdometerStatus::Actual),
        }),
        powertrain: Some(crate::dap::Powertrain {
            fuel_type: Some("gasoline".into()),
            transmission: Some("cvt".into()),
            ..Default::default()
        }),
        features: vec!["Apple CarPlay".into(), "Heated seats".into()],
        media: vec![crate::dap::MediaAsset::image(
            format!("https://cdn.example.com/{n}.jpg"),
            0,
        )],
        listing_url: Some(format!("https://dealer.example.com/v/{n}")),
        window_sticker_url: None,
        advertised_price: pricing::Money::from_minor(
            2_499_500 + i64::from(n),
            pricing::Currency::USD,
        ),
        required_dealer_charges: even.then(|| {
            vec![
                serde_json::from_value(json!({
                    "charge_id": "doc", "name": "Doc fee",
                    "amount": {"amount_minor": 19900, "currency": "USD"}, "payee": "dealer",
                    "included_in_advertised_price": false, "required": true
                }))
                .unwrap(),
            ]
        }),
        conditional_adjustments: None,
        government_charges_status: Some("unknown".into()),
        availability_status: "available".into(),
        stocked_at: Some("2026-10-01T08:15:30.123456789Z".parse().unwrap()),
        first_public_listing_at: even.then(|| "2026-10-02T00:00:00.000001Z".parse().unwrap()),
        history_report_status: None,
        history_reports: vec![],
        certification_type: (!even).then(|| "not_certified".into()),
        used_evidence: Default::default(),
        source: VehicleSource {
            source_name: "dap-csv:inventory.csv".into(),
            source_record_id: Some(format!("STK-{n}")),
            authority: "dealer_asserted".into(),
            content_digest: "sha256:feed".into(),
            observed_at: "2026-12-01T09:00:00.000000999Z".parse().unwrap(),
            transformations: vec!["odometer_unit_from_rooftop_default".into()],
        },
    }
}

fn vehicles(
    organization_id: &str,
    rooftop_id: &str,
    range: std::ops::Range<u32>,
) -> Vec<VehicleRecord> {
    range
        .map(|n| vehicle(organization_id, rooftop_id, n))
        .collect()
}

/// org-a keeps a-1 and a-2, org-b keeps b-1.
async fn seed_dealers(store: &dyn Store) {
    store
        .upsert_organizations(&[
            org(
                "org-a",
                "A",
                vec![rooftop("a-1", "One"), rooftop("a-2", "Two")],
            ),
            org("org-b", "B", vec![rooftop("b-1", "Bee")]),
        ])
        .await
        .unwrap();
}

fn inventory_summary(rows_read: u32, counts: [u32; 4]) -> InventoryImportSummary {
    InventoryImportSummary {
        rows_read,
        vehicles_added: counts[0],
        vehicles_changed: counts[1],
        vehicles_unchanged: counts[2],
        vehicles_removed: counts[3],
    }
}

/// Sorted by vehicle_id, as `snapshot_vehicles` returns them.
fn sorted(mut vehicles: Vec<VehicleRecord>) -> Vec<VehicleRecord> {
    vehicles.sort_by(|a, b| a.vehicle_id.cmp(&b.vehicle_id));
    vehicles
}

// ---------------------------------------------------------------------------
// The suite
// ---------------------------------------------------------------------------

async fn fresh_store_is_empty_and_answers_ping(store: &dyn Store) {
    store.ping().await.expect("ping");
    assert!(store.is_empty().await.unwrap());
    assert_eq!(store.list_organizations().await.unwrap(), vec![]);
    assert_eq!(store.get_organization("nobody").await.unwrap(), None);
}

async fn upsert_then_list_and_get_round_trip(store: &dyn Store) {
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

async fn reimport_updates_in_place(store: &dyn Store) {
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

async fn reimport_of_identical_content_counts_nothing(store: &dyn Store) {
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

async fn reordering_rooftops_updates_only_the_organization(store: &dyn Store) {
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

async fn organizations_not_named_are_untouched(store: &dyn Store) {
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

async fn json_documents_keep_their_key_order(store: &dyn Store) {
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

async fn stolen_rooftop_fails_the_whole_import(store: &dyn Store) {
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

async fn duplicate_ids_in_one_batch_fail_the_whole_import(store: &dyn Store) {
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

async fn rooftop_may_move_between_organizations_of_one_batch(store: &dyn Store) {
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

async fn secrets_are_created_once(store: &dyn Store) {
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

async fn first_snapshot_is_version_1_with_everything_added(store: &dyn Store) {
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

async fn next_snapshot_counts_changes_against_the_previous_one(store: &dyn Store) {
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

async fn snapshot_vehicles_round_trip_exactly(store: &dyn Store) {
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

async fn latest_snapshots_are_the_newest_per_rooftop(store: &dyn Store) {
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

async fn snapshot_history_is_newest_first(store: &dyn Store) {
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

fn query_message(err: StoreError) -> String {
    match err {
        StoreError::Query(message) => message,
        other => panic!("expected StoreError::Query, got {other:?}"),
    }
}

async fn snapshot_of_a_rooftop_not_of_the_organization_fails(store: &dyn Store) {
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
async fn stream_snapshots(
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
struct Collected {
    rooftop: String,
    kind: &'static str,
    vehicle_id: String,
    stock_number: Option<String>,
    fields: Vec<String>,
}

/// Every change a checked write reports.
#[derive(Default)]
struct CollectedChanges(Vec<Collected>);

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
async fn checked_write(
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
async fn streamed_write_names_each_change_and_the_removal_guard_refuses_whole(store: &dyn Store) {
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

fn attempt(
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
async fn refused_imports_are_kept_within_their_bound_and_every_import_is_counted(
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
async fn streamed_write_covers_every_rooftop_or_none(store: &dyn Store) {
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

async fn snapshot_with_repeated_or_foreign_vehicles_fails(store: &dyn Store) {
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

async fn prune_deletes_only_snapshots_superseded_before_the_cutoff(store: &dyn Store) {
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

async fn dropping_a_rooftop_deletes_its_snapshots(store: &dyn Store) {
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

async fn concurrent_imports_of_one_rooftop_get_distinct_versions(store: &dyn Store) {
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
async fn futures_join_all<F: std::future::Future>(
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

async fn large_snapshot_round_trip(store: &dyn Store) {
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
async fn bulk_import_throughput(store: &dyn Store) {
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

fn rows_per_second(rows: u32, elapsed: Duration) -> u128 {
    u128::from(rows) * 1000 / elapsed.as_millis().max(1)
}

async fn migrations_apply_and_reapply(db: &TestDb) {
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

async fn secrets_are_stable_across_opens_and_racing_replicas(db: &TestDb) {
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

// ---------------------------------------------------------------------------
// API tokens and the audit log
// ---------------------------------------------------------------------------

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

fn token_record(
    new: &crate::auth::api_token::NewToken,
    rooftops: RooftopScope,
    created_at: &str,
) -> ApiTokenRecord {
    ApiTokenRecord {
        token_id: new.token_id.clone(),
        secret_hash: new.secret_hash(),
        subject: "agent:shopper".into(),
        organization_id: "org-a".into(),
        rooftops,
        scopes: ["dealeragent:inventory:read".to_owned()].into(),
        purpose: "price comparison".into(),
        created_at: at(created_at),
        expires_at: at("2027-01-01T00:00:00.000001Z"),
        revoked_at: None,
    }
}

fn audit_event(n: u32, occurred_at: &str) -> AuditEvent {
    AuditEvent {
        event_id: uuid::Uuid::now_v7().to_string(),
        occurred_at: at(occurred_at),
        trace_id: format!("trace.{n}"),
        subject: "agent:shopper".into(),
        credential: Some(Credential::ApiToken {
            token_id: "0123456789abcdef".into(),
        }),
        organization_id: Some("org-a".into()),
        rooftop_ids: vec!["a-1".into(), "a-2".into()],
        unresolved_rooftops: 0,
        tool: "dealeragent.inventory.search".into(),
        profile: "dealeragent.inventory/0.1".into(),
        policy_decision: "allow".into(),
        resource_ids: vec![format!("veh-{n}")],
        outcome: "ok".into(),
        delegation: vec![],
    }
}

async fn api_tokens_round_trip_in_creation_order(store: &dyn Store) {
    use crate::auth::api_token::generate;
    seed_dealers(store).await;
    let (x, y) = (generate(), generate());
    // Created out of order: the list follows created_at.
    let later = token_record(&x, RooftopScope::Group, "2026-12-02T00:00:00.000002Z");
    let mut earlier = token_record(
        &y,
        RooftopScope::Rooftops(["a-1".to_owned(), "a-2".to_owned()].into()),
        "2026-12-01T00:00:00.123456Z",
    );
    earlier.scopes.insert("dealeragent:pricing:read".into());
    earlier.revoked_at = Some(at("2026-12-01T01:00:00Z"));
    store.create_api_token(&later).await.unwrap();
    store.create_api_token(&earlier).await.unwrap();
    assert_eq!(
        store.get_api_token(&x.token_id).await.unwrap(),
        Some(later.clone())
    );
    assert_eq!(
        store.get_api_token(&y.token_id).await.unwrap(),
        Some(earlier.clone())
    );
    assert_eq!(store.get_api_token("ffffffffffffffff").await.unwrap(), None);
    assert_eq!(
        store.list_api_tokens().await.unwrap(),
        vec![earlier, later.clone()]
    );
    // A token id names one token.
    let err = store.create_api_token(&later).await.unwrap_err();
    assert!(matches!(err, StoreError::Query(_)), "{err:?}");
    assert_eq!(store.list_api_tokens().await.unwrap().len(), 2);
}

async fn revoking_a_token_keeps_the_first_time(store: &dyn Store) {
    use crate::auth::api_token::generate;
    seed_dealers(store).await;
    let new = generate();
    let record = token_record(&new, RooftopScope::Group, "2026-12-01T00:00:00Z");
    store.create_api_token(&record).await.unwrap();
    assert!(
        !store
            .revoke_api_token("ffffffffffffffff", at("2026-12-02T00:00:00Z"))
            .await
            .unwrap()
    );
    let first = at("2026-12-02T00:00:00.000007Z");
    assert!(store.revoke_api_token(&new.token_id, first).await.unwrap());
    assert!(
        store
            .revoke_api_token(&new.token_id, at("2026-12-03T00:00:00Z"))
            .await
            .unwrap()
    );
    let stored = store.get_api_token(&new.token_id).await.unwrap().unwrap();
    assert_eq!(stored.revoked_at, Some(first));
    assert_eq!(
        stored,
        ApiTokenRecord {
            revoked_at: Some(first),
            ..record
        }
    );
}

async fn api_token_of_unknown_organization_or_foreign_rooftop_fails(store: &dyn Store) {
    use crate::auth::api_token::generate;
    seed_dealers(store).await;
    let mut unknown_org = token_record(&generate(), RooftopScope::Group, "2026-12-01T00:00:00Z");
    unknown_org.organization_id = "org-z".into();
    let message = query_message(store.create_api_token(&unknown_org).await.unwrap_err());
    assert!(message.contains("org-z"), "{message}");
    // b-1 is org-b's.
    let foreign = token_record(
        &generate(),
        RooftopScope::Rooftops(["a-1".to_owned(), "b-1".to_owned()].into()),
        "2026-12-01T00:00:00Z",
    );
    let message = query_message(store.create_api_token(&foreign).await.unwrap_err());
    assert!(message.contains("'b-1'"), "{message}");
    assert_eq!(store.list_api_tokens().await.unwrap(), vec![]);
}

async fn api_token_verification_follows_the_store(store: &dyn Store) {
    use crate::auth::api_token::{TokenRejection, VerifyError, generate, verify};
    seed_dealers(store).await;
    let new = generate();
    let record = token_record(
        &new,
        RooftopScope::Rooftops(["a-2".to_owned()].into()),
        "2026-12-01T00:00:00Z",
    );
    store.create_api_token(&record).await.unwrap();
    let audience = "https://gateway.example.com/mcp";
    let now = at("2026-12-15T00:00:00Z");
    let grant = verify(store, &new.token, audience, now).await.unwrap();
    assert_eq!(grant.subject, "agent:shopper");
    assert_eq!(grant.audience, audience);
    assert_eq!(grant.organization_id, "org-a");
    assert!(grant.covers("org-a", "a-2") && !grant.covers("org-a", "a-1"));
    assert_eq!(grant.expires_at, record.expires_at);
    assert_eq!(grant.purpose, "price comparison");
    assert!(grant.delegation.is_empty());
    assert_eq!(
        grant.credential,
        Credential::ApiToken {
            token_id: new.token_id.clone()
        }
    );
    let rejected = |r: Result<crate::auth::Grant, VerifyError>| match r {
        Err(VerifyError::Rejected(why)) => why,
        other => panic!("not a rejection: {other:?}"),
    };
    // Same id, another secret: unknown, like an id never issued.
    let other = generate();
    let forged = format!(
        "dgw_{}_{}",
        new.token_id,
        crate::auth::api_token::parse(&other.token).unwrap().1
    );
    assert_eq!(
        rejected(verify(store, &forged, audience, now).await),
        TokenRejection::Unknown
    );
    assert_eq!(
        rejected(verify(store, &other.token, audience, now).await),
        TokenRejection::Unknown
    );
    assert_eq!(
        rejected(verify(store, "Bearer nonsense", audience, now).await),
        TokenRejection::Malformed
    );
    assert_eq!(
        rejected(verify(store, &new.token, audience, record.expires_at).await),
        TokenRejection::Expired
    );
    store.revoke_api_token(&new.token_id, now).await.unwrap();
    assert_eq!(
        rejected(verify(store, &new.token, audience, now).await),
        TokenRejection::Revoked
    );
}

async fn audit_since_filters_and_orders(store: &dyn Store) {
    let events = [
        audit_event(0, "2026-12-01T10:00:00.000003Z"),
        audit_event(1, "2026-12-01T09:00:00Z"),
        audit_event(2, "2026-12-01T10:00:00.000001Z"),
        audit_event(3, "2026-12-01T10:00:00.000001Z"),
    ];
    let mut anonymous = audit_event(4, "2026-12-01T11:00:00Z");
    anonymous.subject = "anonymous".into();
    anonymous.credential = None;
    anonymous.organization_id = None;
    anonymous.policy_decision = "deny".into();
    anonymous.outcome = "dealeragent.auth.required".into();
    anonymous.delegation = vec!["agent:outer".into(), "agent:inner".into()];
    for e in events.iter().chain([&anonymous]) {
        store.append_audit(e).await.unwrap();
    }
    // A repeated event id is refused.
    assert!(store.append_audit(&events[0]).await.is_err());

    let all = store
        .audit_since(at("2026-01-01T00:00:00Z"), 100)
        .await
        .unwrap();
    let mut tied = [events[2].clone(), events[3].clone()];
    tied.sort_by(|a, b| a.event_id.cmp(&b.event_id));
    let expected = vec![
        events[1].clone(),
        tied[0].clone(),
        tied[1].clone(),
        events[0].clone(),
        anonymous.clone(),
    ];
    assert_eq!(all, expected);
    // `since` is inclusive, to the microsecond.
    let since = store
        .audit_since(at("2026-12-01T10:00:00.000001Z"), 100)
        .await
        .unwrap();
    assert_eq!(since, expected[1..]);
    let limited = store
        .audit_since(at("2026-12-01T10:00:00.000002Z"), 1)
        .await
        .unwrap();
    assert_eq!(limited, vec![events[0].clone()]);
    assert_eq!(
        store
            .audit_since(at("2026-12-02T00:00:00Z"), 100)
            .await
            .unwrap(),
        vec![]
    );
    let after = store
        .audit_after(tied[0].occurred_at, &tied[0].event_id, 100)
        .await
        .unwrap();
    assert_eq!(after, expected[2..]);
}

async fn audit_pages_through_events_sharing_a_timestamp(store: &dyn Store) {
    let mut appended: Vec<AuditEvent> = (0..25)
        .map(|n| {
            let second = if n < 20 { 1 } else { 2 };
            audit_event(n, &format!("2026-12-01T10:00:0{second}Z"))
        })
        .collect();
    for e in &appended {
        store.append_audit(e).await.unwrap();
    }
    appended.sort_by(|a, b| (a.occurred_at, &a.event_id).cmp(&(b.occurred_at, &b.event_id)));
    let mut seen = store
        .audit_since(at("2026-12-01T00:00:00Z"), 7)
        .await
        .unwrap();
    let mut page = seen.clone();
    while page.len() == 7 {
        let last = page.last().unwrap();
        page = store
            .audit_after(last.occurred_at, &last.event_id, 7)
            .await
            .unwrap();
        seen.extend(page.iter().cloned());
    }
    assert_eq!(seen, appended);
}

async fn audit_event_never_contains_the_token_secret(store: &dyn Store) {
    use crate::auth::Principal;
    use crate::auth::api_token::{generate, parse, verify};
    seed_dealers(store).await;
    let new = generate();
    store
        .create_api_token(&token_record(
            &new,
            RooftopScope::Group,
            "2026-12-01T00:00:00Z",
        ))
        .await
        .unwrap();
    let grant = verify(
        store,
        &new.token,
        "https://gw.example/mcp",
        at("2026-12-02T00:00:00Z"),
    )
    .await
    .unwrap();
    let principal = Principal::Authenticated(Arc::new(grant));
    let mut event = AuditEvent::for_principal(
        &principal,
        "trace.1",
        "dealeragent.inventory.get_vehicle",
        "dealeragent.inventory/0.1",
    );
    event.organization_id = Some("org-a".into());
    event.rooftop_ids = vec!["a-1".into()];
    event.resource_ids = vec!["veh-1".into()];
    store.append_audit(&event).await.unwrap();
    let stored = store.audit_since(event.occurred_at, 10).await.unwrap();
    assert_eq!(stored, vec![event.clone()]);
    let line = serde_json::to_string(&stored[0]).unwrap();
    let secret = parse(&new.token).unwrap().1;
    assert!(!line.contains(secret), "{line}");
    assert!(!line.contains(&new.token), "{line}");
    assert!(!line.contains(&new.secret_hash()), "{line}");
    assert!(!line.contains(new.secret_hash().trim_start_matches("sha256:")));
    // It does name the token, by its public id.
    assert!(line.contains(&new.token_id), "{line}");
    let value: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(value["subject"], "agent:shopper");
    assert_eq!(
        value["credential"],
        json!({"kind": "api_token", "token_id": new.token_id})
    );
    assert_eq!(value["policy_decision"], "allow");
    assert_eq!(value["outcome"], "ok");
}

/// One refused anonymous call of `network`'s host `.7` at `at`.
fn audit_count(at_text: &str, network: &str, outcome: &str) -> AuditCount {
    let host = network.replace(".0/24", ".7");
    AuditCount::one(
        at(at_text),
        host.parse().unwrap(),
        &format!("trace.{at_text}"),
        "dealeragent.inventory.verify_availability",
        "dealeragent.inventory.availability/0.1",
        "deny",
        outcome,
    )
}

async fn audit_events_are_stored_within_their_bounds(store: &dyn Store) {
    let before = store.audit_footprint().await.unwrap();
    assert_eq!(before, AuditFootprint::default());
    // What a hostile request used to put in an event: a 900,000-character
    // organization id, ids that fail the identifier schema, an endless list.
    let mut hostile = audit_event(1, "2026-12-01T10:00:00Z");
    hostile.organization_id = Some("o".repeat(900_000));
    hostile.rooftop_ids = vec!["a-1".into(), "not an id".into(), "a".repeat(129)];
    hostile.resource_ids = vec!["veh-1".into(); 5_000];
    hostile.subject = "s".repeat(100_000);
    store.append_audit(&hostile).await.unwrap();
    let stored = store
        .audit_since(at("2026-12-01T00:00:00Z"), 10)
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    let e = &stored[0];
    assert_eq!(e.organization_id.as_deref(), Some(audit::INVALID_MARKER));
    assert_eq!(
        e.rooftop_ids,
        ["a-1", audit::INVALID_MARKER, audit::INVALID_MARKER]
    );
    assert_eq!(e.resource_ids.len(), audit::MAX_LIST_ENTRIES);
    assert_eq!(e.resource_ids.last().unwrap(), audit::TRUNCATED_MARKER);
    assert!(
        e.subject.len() <= audit::MAX_TEXT_BYTES,
        "{}",
        e.subject.len()
    );
    assert_eq!(*e, hostile.bounded());
    let line = serde_json::to_string(e).unwrap();
    assert!(line.len() <= audit::MAX_EVENT_BYTES, "{}", line.len());
    // The footprint counts the stored text, byte for byte on both backends.
    let after = store.audit_footprint().await.unwrap();
    assert_eq!((after.events, after.counters), (1, 0));
    assert!(after.bytes < 2_048, "{after:?}");
    let fields: usize = [
        e.event_id.len(),
        27,
        e.trace_id.len(),
        e.subject.len(),
        serde_json::to_string(&e.credential).unwrap().len(),
        e.organization_id.as_ref().map_or(0, String::len),
        serde_json::to_string(&e.rooftop_ids).unwrap().len(),
        e.tool.len(),
        e.profile.len(),
        e.policy_decision.len(),
        serde_json::to_string(&e.resource_ids).unwrap().len(),
        e.outcome.len(),
        serde_json::to_string(&e.delegation).unwrap().len(),
    ]
    .iter()
    .sum();
    assert_eq!(after.bytes, fields as u64);
}

async fn audit_counters_add_up_and_cap_the_keys_of_a_window(store: &dyn Store) {
    const LIMITED: &str = "dealeragent.rate_limited";
    const INVALID: &str = "dealeragent.validation.invalid";
    let first = audit_count("2026-12-01T10:00:05Z", "192.0.2.0/24", LIMITED);
    store.count_audit(&first, 3).await.unwrap();
    store
        .count_audit(
            &audit_count("2026-12-01T10:00:50.5Z", "192.0.2.0/24", LIMITED),
            3,
        )
        .await
        .unwrap();
    store
        .count_audit(
            &audit_count("2026-12-01T10:00:20Z", "192.0.2.0/24", LIMITED),
            3,
        )
        .await
        .unwrap();
    // Two more keys fill the window's cap of 3; the next networks overflow.
    for (network, outcome) in [
        ("192.0.2.0/24", INVALID),
        ("198.51.100.0/24", LIMITED),
        ("203.0.113.0/24", LIMITED),
        ("10.9.8.0/24", LIMITED),
    ] {
        store
            .count_audit(&audit_count("2026-12-01T10:00:30Z", network, outcome), 3)
            .await
            .unwrap();
    }
    // The next window starts afresh.
    store
        .count_audit(
            &audit_count("2026-12-01T10:01:00Z", "203.0.113.0/24", LIMITED),
            3,
        )
        .await
        .unwrap();
    let rows = store
        .audit_counts_since(at("2026-12-01T00:00:00Z"), 100)
        .await
        .unwrap();
    let keys: Vec<(String, &str, &str, u64)> = rows
        .iter()
        .map(|r| {
            (
                r.window_start.to_rfc3339(),
                r.client_network.as_str(),
                r.outcome.as_str(),
                r.count,
            )
        })
        .collect();
    let w0 = "2026-12-01T10:00:00+00:00".to_owned();
    let w1 = "2026-12-01T10:01:00+00:00".to_owned();
    assert_eq!(
        keys,
        vec![
            (w0.clone(), "192.0.2.0/24", LIMITED, 3),
            (w0.clone(), "192.0.2.0/24", INVALID, 1),
            (w0.clone(), "198.51.100.0/24", LIMITED, 1),
            (w0.clone(), audit::OVERFLOW_NETWORK, LIMITED, 2),
            (w1, "203.0.113.0/24", LIMITED, 1),
        ]
    );
    let limited = &rows[0];
    assert_eq!(limited.first_trace_id, first.first_trace_id);
    assert_eq!(limited.last_at, at("2026-12-01T10:00:50.5Z"));
    assert_eq!(limited.policy_decision, "deny");
    let since = store
        .audit_counts_since(at("2026-12-01T10:01:00Z"), 100)
        .await
        .unwrap();
    assert_eq!(since.len(), 1);
    let footprint = store.audit_footprint().await.unwrap();
    assert_eq!((footprint.events, footprint.counters), (0, 5));
    assert!(footprint.bytes < 5 * 300, "{footprint:?}");
}

async fn audit_retention_prunes_entries_older_than_the_cutoff(store: &dyn Store) {
    let old = audit_event(1, "2026-08-01T00:00:00Z");
    let at_cutoff = audit_event(2, "2026-09-02T00:00:00Z");
    let recent = audit_event(3, "2026-11-30T00:00:00Z");
    for e in [&old, &at_cutoff, &recent] {
        store.append_audit(e).await.unwrap();
    }
    for when in ["2026-08-01T00:00:10Z", "2026-11-30T00:00:10Z"] {
        store
            .count_audit(
                &audit_count(when, "192.0.2.0/24", "dealeragent.rate_limited"),
                256,
            )
            .await
            .unwrap();
    }
    // 90 days before 2026-12-01.
    let policy = AuditRetention {
        retention_days: 90,
        max_events: 1_000_000,
    };
    let now = at("2026-12-01T00:00:00Z");
    assert_eq!(policy.cutoff(now), at("2026-09-02T00:00:00Z"));
    let summary = audit::prune(store, policy, now).await.unwrap();
    assert_eq!(
        summary,
        AuditPruneSummary {
            events_expired: 1,
            counters_expired: 1,
            ..AuditPruneSummary::default()
        }
    );
    let kept = store
        .audit_since(at("2000-01-01T00:00:00Z"), 100)
        .await
        .unwrap();
    assert_eq!(kept, vec![at_cutoff, recent]);
    let counters = store
        .audit_counts_since(at("2000-01-01T00:00:00Z"), 100)
        .await
        .unwrap();
    assert_eq!(counters.len(), 1);
    assert_eq!(counters[0].window_start, at("2026-11-30T00:00:00Z"));
    // A second pass finds nothing to do.
    assert_eq!(
        audit::prune(store, policy, now).await.unwrap(),
        AuditPruneSummary::default()
    );
}

async fn audit_size_bound_prunes_the_oldest_entries_first(store: &dyn Store) {
    // 250 events, five sharing each second, appended newest first.
    let mut appended: Vec<AuditEvent> = (0..250)
        .rev()
        .map(|n| {
            let second = n / 5;
            audit_event(
                n,
                &format!("2026-12-01T10:{:02}:{:02}Z", second / 60, second % 60),
            )
        })
        .collect();
    for e in &appended {
        store.append_audit(e).await.unwrap();
    }
    for minute in 0..12 {
        let when = format!("2026-12-01T09:{minute:02}:00Z");
        store
            .count_audit(
                &audit_count(&when, "192.0.2.0/24", "dealeragent.rate_limited"),
                256,
            )
            .await
            .unwrap();
    }
    appended.sort_by(|a, b| (a.occurred_at, &a.event_id).cmp(&(b.occurred_at, &b.event_id)));
    let summary = store
        .prune_audit(at("2000-01-01T00:00:00Z"), 100, 5)
        .await
        .unwrap();
    assert_eq!(summary.events_expired + summary.counters_expired, 0);
    assert_eq!(summary.events_over_limit, 150);
    assert_eq!(summary.counters_over_limit, 7);
    assert_eq!(
        summary.events_pruned_through,
        Some(appended[149].occurred_at)
    );
    assert_eq!(
        summary.counters_pruned_through,
        Some(at("2026-12-01T09:06:00Z"))
    );
    let kept = store
        .audit_since(at("2000-01-01T00:00:00Z"), 1_000)
        .await
        .unwrap();
    assert_eq!(kept, appended[150..]);
    let counters = store
        .audit_counts_since(at("2000-01-01T00:00:00Z"), 100)
        .await
        .unwrap();
    assert_eq!(counters.len(), 5);
    assert_eq!(counters[0].window_start, at("2026-12-01T09:07:00Z"));
    let footprint = store.audit_footprint().await.unwrap();
    assert_eq!((footprint.events, footprint.counters), (100, 5));
    // Through the policy: 50 rows at most, of which 5 counter rows.
    let policy = AuditRetention {
        retention_days: 36_500,
        max_events: 50,
    };
    let summary = audit::prune(store, policy, at("2026-12-01T12:00:00Z"))
        .await
        .unwrap();
    assert_eq!(summary.events_over_limit, 55);
    assert_eq!(summary.counters_over_limit, 0);
    let footprint = store.audit_footprint().await.unwrap();
    assert_eq!((footprint.events, footprint.counters), (45, 5));
    assert!(footprint.events + footprint.counters <= policy.max_events);
}

/// Each principal has its own share of the size bound
/// (docs/tokens-and-audit.md "Retention and size"): a partner that floods
/// the log loses its own oldest events, never the (older) events of a
/// quiet partner, and the unresolved-rooftop count is kept.
async fn audit_one_principal_flooding_keeps_every_other_principals_events(store: &dyn Store) {
    let event = |subject: &str, n: u32, second: u32| {
        let mut e = audit_event(
            n,
            &format!("2026-12-01T10:{:02}:{:02}Z", second / 60, second % 60),
        );
        e.subject = subject.to_owned();
        e
    };
    // The quiet partner's events are the oldest of the log.
    let mut quiet: Vec<AuditEvent> = (0..10).map(|n| event("partner:quiet", n, n)).collect();
    quiet[0].unresolved_rooftops = 100;
    quiet[0].rooftop_ids = Vec::new();
    let mut anonymous: Vec<AuditEvent> = (0..20)
        .map(|n| event("anonymous", 100 + n, 20 + n))
        .collect();
    anonymous.iter_mut().for_each(|e| e.credential = None);
    let flood: Vec<AuditEvent> = (0..300)
        .map(|n| event("partner:flood", 1_000 + n, 60 + n))
        .collect();
    for e in quiet.iter().chain(&anonymous).chain(&flood) {
        store.append_audit(e).await.unwrap();
    }
    let summary = store
        .prune_audit(at("2000-01-01T00:00:00Z"), 100, 10)
        .await
        .unwrap();
    // 10 + 20 fit their share; the flooder keeps the other 70, its newest.
    assert_eq!(summary.events_over_limit, 230);
    assert_eq!(summary.events_over_share, 230);
    assert_eq!(summary.events_pruned_through, Some(flood[229].occurred_at));
    let kept = store
        .audit_since(at("2000-01-01T00:00:00Z"), 1_000)
        .await
        .unwrap();
    let of = |subject: &str| -> Vec<AuditEvent> {
        kept.iter()
            .filter(|e| e.subject == subject)
            .cloned()
            .collect()
    };
    assert_eq!(of("partner:quiet"), quiet);
    assert_eq!(of("anonymous"), anonymous);
    assert_eq!(of("partner:flood"), flood[230..]);
    assert_eq!(of("partner:quiet")[0].unresolved_rooftops, 100);
    // Within the bound now: a second pass deletes nothing.
    let again = store
        .prune_audit(at("2000-01-01T00:00:00Z"), 100, 10)
        .await
        .unwrap();
    assert_eq!(again, AuditPruneSummary::default());
}

// ---------------------------------------------------------------------------
// Opening
// ---------------------------------------------------------------------------

#[tokio::test]
async fn unsupported_url_is_rejected() {
    for url in ["mysql://root@localhost/db", "", "./data/gateway.sqlite"] {
        let err = open(url).await.err().expect("must fail");
        assert!(matches!(err, StoreError::UnsupportedUrl), "{url}: {err:?}");
    }
}

#[tokio::test]
async fn unreachable_postgres_is_unavailable_quickly() {
    // Port 1 on loopback: nothing listens, the connection is refused.
    let started = Instant::now();
    let err = open("postgres://postgres@127.0.0.1:1/dealer")
        .await
        .err()
        .expect("must fail");
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn sqlite_creates_the_directory_and_uses_wal() {
    let db = TestDb::sqlite();
    let store = SqliteStore::open(&db.url).await.unwrap();
    let TestDbKind::Sqlite { dir } = &db.kind else {
        unreachable!()
    };
    assert!(dir.join("nested/gateway.sqlite").is_file());
    let mode: String = sqlx::query_scalar("pragma journal_mode")
        .fetch_one(&store.pool)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn sqlite_in_memory_works() {
    let store = open("sqlite::memory:").await.unwrap();
    let a = org("org-a", "A", vec![rooftop("a-1", "One")]);
    store
        .upsert_organizations(std::slice::from_ref(&a))
        .await
        .unwrap();
    assert_eq!(store.list_organizations().await.unwrap(), vec![a]);
}

// ---------------------------------------------------------------------------
// Availability observations (docs/availability.md)
// ---------------------------------------------------------------------------

fn observation(
    vehicle: &str,
    status: &str,
    observed: &str,
    checked: &str,
) -> AvailabilityObservation {
    AvailabilityObservation {
        organization_id: "org-a".into(),
        rooftop_id: "a-1".into(),
        vehicle_id: vehicle.into(),
        status: status.into(),
        authority: "authoritative_dealer_system".into(),
        observed_at: at(observed),
        source: ObservationSource {
            kind: "http".into(),
            source_name: "dealer-system:https://dms.example".into(),
        },
        checked_at: at(checked),
    }
}

async fn availability_observations_round_trip_newest_first(store: &dyn Store) {
    assert_eq!(
        store.latest_availability("a-1", "veh-1").await.unwrap(),
        None
    );
    let first = observation(
        "veh-1",
        "available",
        "2026-12-01T10:00:00.000001Z",
        "2026-12-01T10:00:01.000002Z",
    );
    let newer = observation(
        "veh-1",
        "sold",
        "2026-12-01T10:05:00Z",
        "2026-12-01T10:05:00.5Z",
    );
    // Same observation time, checked later: the later check wins.
    let rechecked = observation(
        "veh-1",
        "pending_sale",
        "2026-12-01T10:05:00Z",
        "2026-12-01T10:06:00Z",
    );
    let older_late = observation(
        "veh-1",
        "on_hold",
        "2026-12-01T09:00:00Z",
        "2026-12-01T11:00:00Z",
    );
    let other = observation(
        "veh-2",
        "in_transit",
        "2026-12-01T12:00:00Z",
        "2026-12-01T12:00:00Z",
    );
    for o in [&first, &newer, &rechecked, &older_late, &other] {
        store.record_availability(o).await.unwrap();
    }
    assert_eq!(
        store.latest_availability("a-1", "veh-1").await.unwrap(),
        Some(rechecked)
    );
    assert_eq!(
        store.latest_availability("a-1", "veh-2").await.unwrap(),
        Some(other)
    );
    assert_eq!(
        store.latest_availability("a-2", "veh-1").await.unwrap(),
        None
    );
}

async fn stored_settings_without_an_availability_source_decode_as_feed(store: &dyn Store) {
    // Settings JSON written before rooftops had an availability source has
    // no availability_source.
    let old: RooftopSettings = serde_json::from_value(json!({
        "currency": "USD",
        "odometer_unit": "mi",
        "anonymous_reads": true,
        "freshness_sla_seconds": {"inventory": 900, "availability": 120, "pricing": 3600},
    }))
    .unwrap();
    assert_eq!(old.availability_source, AvailabilitySource::Feed);
    // An http source round-trips through the store.
    let mut org = org("org-a", "Org A", vec![rooftop("a-1", "A One")]);
    org.rooftops[0].settings.availability_source =
        AvailabilitySource::Http(HttpAvailabilitySource {
            url_template: "https://dms.example/v1/{vin}".into(),
            timeout_ms: 1500,
            authority: "authoritative_dealer_system".into(),
        });
    store.upsert_organizations(&[org.clone()]).await.unwrap();
    let back = store.get_organization("org-a").await.unwrap().unwrap();
    assert_eq!(back.rooftops[0].settings, org.rooftops[0].settings);
}

// ---------------------------------------------------------------------------
// Incentive programs
// ---------------------------------------------------------------------------

fn program(id: &str, revision: u32, amount: i64) -> ProgramRecord {
    ProgramRecord {
        program_id: id.to_owned(),
        revision,
        doc: json!({"program_id": id, "revision": revision, "amount": amount}),
        rule_hash: (amount == 7).then(|| "sha256:00".to_owned()),
        imported_at: DateTime::parse_from_rfc3339("2026-11-29T10:00:00.123456Z")
            .unwrap()
            .with_timezone(&Utc),
        source: source("sha256:programs"),
    }
}

fn program_pairs(records: &[ProgramRecord]) -> Vec<(String, u32)> {
    records
        .iter()
        .map(|r| (r.program_id.clone(), r.revision))
        .collect()
}

fn revision(id: &str, revision: u32) -> ProgramRevision {
    ProgramRevision {
        program_id: id.to_owned(),
        revision,
    }
}

// docs/pricing.md "Revisions": every revision coexists (an older one than the newest
// stored is stored too: X@1 for November must survive X@2 for December).
async fn programs_revisions_coexist_and_import_counts(store: &dyn Store) {
    seed_dealers(store).await;
    let first = store
        .import_programs(
            "org-a",
            &[
                program("cash", 2, 100),
                program("bonus", 1, 7),
                program("cash", 1, 50),
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        first,
        ProgramsImportSummary {
            added: 3,
            unchanged: 0,
            still_withdrawn: vec![],
            withdrawn: vec![],
            added_revisions: vec![
                revision("bonus", 1),
                revision("cash", 1),
                revision("cash", 2)
            ],
            unchanged_revisions: vec![],
        }
    );
    // Identical again: unchanged; an older revision than the newest: added.
    let again = store
        .import_programs(
            "org-a",
            &[
                program("cash", 2, 100),
                program("bonus", 1, 7),
                program("bonus", 0, 1),
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        again,
        ProgramsImportSummary {
            added: 1,
            unchanged: 2,
            still_withdrawn: vec![],
            withdrawn: vec![],
            added_revisions: vec![revision("bonus", 0)],
            unchanged_revisions: vec![revision("bonus", 1), revision("cash", 2)],
        }
    );
    let current = store.current_programs("org-a").await.unwrap();
    assert_eq!(
        current,
        vec![
            program("bonus", 0, 1),
            program("bonus", 1, 7),
            program("cash", 1, 50),
            program("cash", 2, 100),
        ]
    );
    assert!(store.current_programs("org-b").await.unwrap().is_empty());
    store
        .import_programs("org-a", &[program("cash", 3, 120)])
        .await
        .unwrap();
    let current = store.current_programs("org-a").await.unwrap();
    assert_eq!(current.len(), 5);
    assert_eq!(current[4], program("cash", 3, 120));
}

// docs/pricing.md "Validation": the check sees the whole resulting set (stored and
// new), and its refusal writes nothing (no row, no audit event).
async fn programs_change_refused_by_the_set_check_writes_nothing(store: &dyn Store) {
    seed_dealers(store).await;
    store
        .import_programs("org-a", &[program("cash", 1, 100)])
        .await
        .unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let check = |set: &[ProgramRecord]| {
        *seen.lock().unwrap() = program_pairs(set);
        Err(vec![
            "first conflict".to_owned(),
            "second conflict".to_owned(),
        ])
    };
    let audit = audit_event(1, "2026-11-30T10:00:00.000001Z");
    let err = store
        .change_programs(
            "org-a",
            ProgramsChange::Import {
                records: &[program("bonus", 1, 5)],
                replace: false,
            },
            &check,
            Some(&audit),
            false,
        )
        .await
        .unwrap_err();
    let message = query_message(err);
    assert!(message.contains("2 conflict(s)"), "{message}");
    assert!(message.contains("first conflict") && message.contains("second conflict"));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![("bonus".to_owned(), 1), ("cash".to_owned(), 1)]
    );
    assert_eq!(
        program_pairs(&store.current_programs("org-a").await.unwrap()),
        vec![("cash".to_owned(), 1)]
    );
    let since = at("2026-01-01T00:00:00Z");
    assert!(store.audit_since(since, 10).await.unwrap().is_empty());
}

// docs/pricing.md "Revisions": `--replace` withdraws every active revision the file
// omits, in one transaction with its audit event; a dry run writes nothing.
async fn programs_replace_withdraws_what_the_file_omits_with_an_audit_event(store: &dyn Store) {
    seed_dealers(store).await;
    store
        .import_programs(
            "org-a",
            &[
                program("cash", 1, 100),
                program("cash", 2, 100),
                program("bonus", 1, 7),
            ],
        )
        .await
        .unwrap();
    let audit = audit_event(2, "2026-11-30T10:00:00.000001Z");
    let file = [program("cash", 2, 100), program("new", 1, 3)];
    let change = ProgramsChange::Import {
        records: &file,
        replace: true,
    };
    let dry = store
        .change_programs("org-a", change, &|_| Ok(()), Some(&audit), true)
        .await
        .unwrap();
    assert_eq!(store.current_programs("org-a").await.unwrap().len(), 3);
    let since = at("2026-01-01T00:00:00Z");
    assert!(store.audit_since(since, 10).await.unwrap().is_empty());
    let done = store
        .change_programs("org-a", change, &|_| Ok(()), Some(&audit), false)
        .await
        .unwrap();
    assert_eq!(dry, done);
    assert_eq!(
        done,
        ProgramsImportSummary {
            added: 1,
            unchanged: 1,
            still_withdrawn: vec![],
            withdrawn: vec![revision("bonus", 1), revision("cash", 1)],
            added_revisions: vec![revision("new", 1)],
            unchanged_revisions: vec![revision("cash", 2)],
        }
    );
    assert_eq!(
        program_pairs(&store.current_programs("org-a").await.unwrap()),
        vec![("cash".to_owned(), 2), ("new".to_owned(), 1)]
    );
    let events = store.audit_since(since, 10).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event_id, audit.event_id);
    assert_eq!(events[0].resource_ids, ["new:1", "bonus:1", "cash:1"]);
}

// docs/pricing.md "Revisions": withdraw one revision or every active one; withdrawing
// nothing is an error; re-importing a withdrawn revision keeps it withdrawn.
async fn programs_withdraw_one_revision_or_all_and_withdrawal_is_final(store: &dyn Store) {
    seed_dealers(store).await;
    store
        .import_programs(
            "org-a",
            &[
                program("cash", 1, 100),
                program("cash", 2, 100),
                program("bonus", 1, 7),
            ],
        )
        .await
        .unwrap();
    let withdraw = |program_id, revision| ProgramsChange::Withdraw {
        program_id,
        revision,
    };
    let one = store
        .change_programs("org-a", withdraw("cash", Some(1)), &|_| Ok(()), None, false)
        .await
        .unwrap();
    assert_eq!(one.withdrawn, vec![revision("cash", 1)]);
    assert_eq!(
        program_pairs(&store.current_programs("org-a").await.unwrap()),
        vec![("bonus".to_owned(), 1), ("cash".to_owned(), 2)]
    );
    let err = store
        .change_programs("org-a", withdraw("cash", Some(1)), &|_| Ok(()), None, false)
        .await
        .unwrap_err();
    assert!(query_message(err).contains("already withdrawn"));
    let err = store
        .change_programs("org-a", withdraw("nope", None), &|_| Ok(()), None, false)
        .await
        .unwrap_err();
    assert!(query_message(err).contains("'nope' is not stored"));
    let all = store
        .change_programs("org-a", withdraw("cash", None), &|_| Ok(()), None, false)
        .await
        .unwrap();
    assert_eq!(all.withdrawn, vec![revision("cash", 2)]);
    let again = store
        .import_programs("org-a", &[program("cash", 2, 100), program("cash", 1, 100)])
        .await
        .unwrap();
    assert_eq!(again.added, 0);
    assert_eq!(
        again.still_withdrawn,
        vec![revision("cash", 1), revision("cash", 2)]
    );
    assert_eq!(
        program_pairs(&store.current_programs("org-a").await.unwrap()),
        vec![("bonus".to_owned(), 1)]
    );
    // A different document under a withdrawn pair is still a conflict.
    let err = store
        .import_programs("org-a", &[program("cash", 2, 999)])
        .await
        .unwrap_err();
    assert!(query_message(err).contains("'cash' revision 2"));
    // Every stored revision, the withdrawn ones with when (`programs list`).
    let all = store.program_revisions("org-a").await.unwrap();
    let listed: Vec<(String, u32, bool)> = all
        .iter()
        .map(|r| {
            (
                r.record.program_id.clone(),
                r.record.revision,
                r.withdrawn_at.is_some(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        vec![
            ("bonus".to_owned(), 1, false),
            ("cash".to_owned(), 1, true),
            ("cash".to_owned(), 2, true),
        ]
    );
    assert!(all[1].withdrawn_at <= all[2].withdrawn_at);
    assert_eq!(all[0].record, program("bonus", 1, 7));
    assert!(store.program_revisions("org-b").await.unwrap().is_empty());
}

async fn programs_import_conflict_or_unknown_organization_writes_nothing(store: &dyn Store) {
    seed_dealers(store).await;
    store
        .import_programs("org-a", &[program("cash", 1, 100)])
        .await
        .unwrap();
    let err = store
        .import_programs("org-a", &[program("new", 1, 5), program("cash", 1, 999)])
        .await
        .unwrap_err();
    let message = query_message(err);
    assert!(message.contains("'cash' revision 1"), "{message}");
    assert_eq!(store.current_programs("org-a").await.unwrap().len(), 1);
    let err = store
        .import_programs("org-missing", &[program("cash", 1, 100)])
        .await
        .unwrap_err();
    assert!(query_message(err).contains("org-missing"));
}

// ---------------------------------------------------------------------------
// Replicas that agree (docs/operations.md "Replicas")
// ---------------------------------------------------------------------------

fn session(key: &str, at_text: &str) -> LegacySessionRecord {
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
async fn legacy_sessions_are_shared_bounded_and_expire(db: &TestDb) {
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
async fn next_change(
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
async fn changes_reach_other_replicas_when_they_commit(db: &TestDb) {
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
fn change_payloads_round_trip_and_unknown_ones_resync() {
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
        StoreChange::Resync,
    ] {
        assert_eq!(StoreChange::parse(&change.payload()), change);
    }
    assert_eq!(StoreChange::parse("inventory:"), StoreChange::Resync);
    assert_eq!(StoreChange::parse("pricing:org.a"), StoreChange::Resync);
    assert_eq!(StoreChange::parse(""), StoreChange::Resync);
}
