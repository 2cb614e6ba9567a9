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
/// Imports: upserts, re-imports and the all-or-nothing rules of one batch.
mod imports;
use imports::*;
/// Snapshots: versions, history, streamed writes, pruning and throughput.
mod snapshots;
use snapshots::*;
/// API tokens and the audit log.
mod tokens_audit;
use tokens_audit::*;
/// Incentive programs: revisions, withdrawals and the set check.
mod programs;
use programs::*;
/// The advertised-price history read by the disclosure lint.
mod price_history;
use price_history::*;
/// Replicas that agree (docs/operations.md "Replicas"): shared sessions and change notifications.
mod replicas;
use replicas::*;

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

    /// Run one statement on the database itself, beside the store (to
    /// set up what the store's own methods cannot, e.g. old rows).
    async fn execute(&self, sql: &str) {
        match &self.kind {
            TestDbKind::Sqlite { .. } => {
                let mut conn = sqlx::SqliteConnection::connect(&self.url).await.unwrap();
                conn.execute(AssertSqlSafe(sql.to_owned())).await.unwrap();
            }
            TestDbKind::Postgres { .. } => {
                let mut conn = sqlx::PgConnection::connect(&self.url).await.unwrap();
                conn.execute(AssertSqlSafe(sql.to_owned())).await.unwrap();
            }
        }
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
        price_history_records_first_prices_and_changes_only,
    ],
    db: [
        migrations_apply_and_reapply,
        secrets_are_stable_across_opens_and_racing_replicas,
        legacy_sessions_are_shared_bounded_and_expire,
        changes_reach_other_replicas_when_they_commit,
        price_history_is_kept_90_days_after_it_was_superseded,
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
        claims: Default::default(),
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
