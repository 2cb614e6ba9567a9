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

use serde_json::json;
use sqlx::{AssertSqlSafe, Connection as _, Executor as _};

use super::*;

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
    ],
    db: [
        migrations_apply_and_reapply,
        secrets_are_stable_across_opens_and_racing_replicas,
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
    }
}

fn rooftop(id: &str, name: &str) -> RooftopRecord {
    RooftopRecord {
        rooftop_id: id.into(),
        dap: json!({
            "rooftop_id": id,
            "name": name,
            "address": {"line1": "1 Main St", "city": "Springfield", "region": "IL",
                        "postal_code": "62701", "country": "US"},
            "timezone": "America/Chicago",
            "departments": ["sales", "service"],
        }),
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
    let text = r#"{"zeta":1,"rooftop_id":"k-1","alpha":{"y":true,"b":null},"mid":[3,1,2]}"#;
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
    let reordered = r#"{"rooftop_id":"k-1","alpha":{"b":null,"y":true},"mid":[3,1,2],"zeta":1}"#;
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
