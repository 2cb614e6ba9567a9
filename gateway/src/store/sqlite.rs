//! SQLite backend: the embedded default, one file in WAL mode.
//!
//! Schema: `migrations/sqlite/`. Timestamps are RFC 3339 text (UTC,
//! microseconds), JSON documents are text (see the migration's header).
//! The statements are shared with PostgreSQL (`sql/`); this file holds the
//! connection setup and [`SqliteDialect`], what differs.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::de::DeserializeOwned;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, Row as _};

use super::sql::{Dialect, RowLock, RowsAffected, SqlStore, Writers};
use super::{StoreChange, StoreError, embedded_migrator, json_text};
use crate::inventory::model::VehicleRecord;

/// Migrations of this backend, embedded by `build.rs`.
const MIGRATIONS: &[(i64, &str, &str)] =
    include!(concat!(env!("OUT_DIR"), "/migrations_sqlite.rs"));

/// How long a statement waits for another writer's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a caller waits for a pooled connection.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);
/// How many times opening the database waits [`ACQUIRE_TIMEOUT`] for its
/// first connection before giving up (30 s in all).
const OPEN_ATTEMPTS: u32 = 6;
/// WAL allows concurrent readers beside the single writer.
const MAX_CONNECTIONS: u32 = 8;
/// `vehicles` rows per multi-row insert: 5 × 500 bound parameters, far
/// below SQLite's limit of 32766.
const VEHICLE_INSERT_BATCH: usize = 500;

/// Page cache, in KiB, of a connection that has written a snapshot's
/// vehicles (SQLite's default is 2 MiB). A snapshot is written in one
/// transaction, and its rows go into three indexes (vehicle id, VIN, stock
/// number) in an order unrelated to the feed's: with the default cache,
/// SQLite kept writing changed pages of the open transaction out to the
/// log and reading them back, a sixth of an import's time
/// (docs/benchmarks.md "Start-up at a million"). 256 MiB holds the three
/// indexes of a million-vehicle snapshot (about 200 MB), which 64 MiB did
/// not: a 1M import took 151 s with 64 MiB and 128 s with 256 MiB, for 67 MB
/// more peak memory (docs/benchmarks.md "Import: checked once"). The cache
/// grows only as pages are used, and its connection is closed when idle.
const IMPORT_CACHE_KIB: u32 = 256 * 1024;

/// The SQLite store.
pub type SqliteStore = SqlStore<SqliteDialect>;

/// Bytes of write-ahead log kept after a checkpoint (64 MiB).
const JOURNAL_SIZE_LIMIT: u64 = 64 * 1024 * 1024;

/// What SQLite does differently (see `sql/`).
#[derive(Debug, Clone, Copy)]
pub struct SqliteDialect;

impl SqliteStore {
    /// Open (creating when missing) the database at `database_url`
    /// (`sqlite://./data/gateway.sqlite`, `sqlite:///abs/path.sqlite`, or
    /// `sqlite::memory:`), create the file's directory when missing, and
    /// apply the migrations.
    pub async fn open(database_url: &str) -> Result<Self, StoreError> {
        let in_memory = database_url.contains(":memory:") || database_url.contains("mode=memory");
        let options = SqliteConnectOptions::from_str(database_url)
            .map_err(|e| StoreError::Unavailable(format!("invalid SQLite database URL: {e}")))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // The usual pairing with WAL: durable at checkpoints, no fsync per commit.
            .synchronous(SqliteSynchronous::Normal)
            // After a checkpoint the log is cut back to this size instead of
            // keeping the size of the largest transaction it ever held (a
            // whole snapshot import).
            .pragma("journal_size_limit", JOURNAL_SIZE_LIMIT.to_string())
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let pool_options = SqlitePoolOptions::new().acquire_timeout(ACQUIRE_TIMEOUT);
        let pool_options = if in_memory {
            // A private in-memory database lives as long as one connection
            // holds it; keep exactly one, forever.
            pool_options
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
        } else {
            if let Some(parent) = options.get_filename().parent()
                && !parent.as_os_str().is_empty()
            {
                tokio::fs::create_dir_all(parent).await.map_err(|e| {
                    StoreError::Unavailable(format!(
                        "cannot create the database directory {}: {e}",
                        parent.display()
                    ))
                })?;
            }
            pool_options.max_connections(MAX_CONNECTIONS)
        };
        // Opening is not a request: on a host busy enough that the first
        // connection takes longer than a request may wait for one
        // (ACQUIRE_TIMEOUT), try again rather than fail the start-up.
        let mut attempts = 0;
        let pool = loop {
            attempts += 1;
            match pool_options.clone().connect_with(options.clone()).await {
                Ok(pool) => break pool,
                Err(sqlx::Error::PoolTimedOut) if attempts < OPEN_ATTEMPTS => {
                    tracing::warn!(
                        attempts,
                        "opening the SQLite database timed out; trying again"
                    );
                }
                Err(e) => {
                    return Err(StoreError::Unavailable(format!(
                        "cannot open SQLite database: {e}"
                    )));
                }
            }
        };
        embedded_migrator(MIGRATIONS)
            .run(&pool)
            .await
            .map_err(|e| StoreError::Migration(e.to_string()))?;
        Ok(Self {
            pool,
            dialect: SqliteDialect,
        })
    }
}

impl RowsAffected for sqlx::sqlite::SqliteQueryResult {
    fn rows_affected(&self) -> u64 {
        sqlx::sqlite::SqliteQueryResult::rows_affected(self)
    }
}

#[async_trait::async_trait]
impl Dialect for SqliteDialect {
    type Db = sqlx::Sqlite;
    /// RFC 3339 text (`timestamp`).
    type Time = String;

    /// JSON documents are plain text, checked by `json_valid()`.
    const JSON: &'static str = "";
    /// SQLite's scalar `max` of several arguments.
    const GREATEST: &'static str = "max";
    /// The default collation (`binary`) compares bytes.
    const BYTE_ORDER: &'static str = "";
    // `length(cast(x as blob))` is the byte length of text.
    const AUDIT_EVENTS_FOOTPRINT: &'static str = "select count(*), coalesce(sum(
             length(cast(event_id as blob)) + length(cast(occurred_at as blob))
             + length(cast(trace_id as blob)) + length(cast(subject as blob))
             + coalesce(length(cast(credential as blob)), 0)
             + coalesce(length(cast(organization_id as blob)), 0)
             + length(cast(rooftop_ids as blob)) + length(cast(tool as blob))
             + length(cast(profile as blob)) + length(cast(policy_decision as blob))
             + length(cast(resource_ids as blob)) + length(cast(outcome as blob))
             + length(cast(delegation as blob))), 0)
         from audit_events";
    const AUDIT_COUNTERS_FOOTPRINT: &'static str = "select count(*), coalesce(sum(
             length(cast(window_start as blob)) + length(cast(client_network as blob))
             + length(cast(tool as blob)) + length(cast(outcome as blob))
             + length(cast(profile as blob)) + length(cast(policy_decision as blob))
             + 8 + length(cast(first_trace_id as blob)) + length(cast(last_at as blob))), 0)
         from audit_counters";

    fn row_lock(lock: RowLock) -> &'static str {
        // No row locks: every writer holds the database write lock
        // (`begin immediate`) until it commits.
        match lock {
            RowLock::KeyShare | RowLock::Share | RowLock::NoKeyUpdate => "",
        }
    }

    fn time(at: DateTime<Utc>) -> String {
        timestamp(at)
    }

    fn parse_time(stored: String) -> Result<DateTime<Utc>, StoreError> {
        parse_timestamp(&stored)
    }

    fn read_json<T: DeserializeOwned>(
        row: &sqlx::sqlite::SqliteRow,
        column: &str,
    ) -> Result<Option<T>, StoreError> {
        let value: Option<Json<T>> = row.try_get(column)?;
        Ok(value.map(|Json(value)| value))
    }

    async fn begin_write(
        pool: &SqlitePool,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, StoreError> {
        // `begin immediate` takes the write lock up front: a deferred
        // transaction that reads first could fail to upgrade (SQLITE_BUSY)
        // when another writer commits in between, and every writer of this
        // file (any process) is serialised behind it.
        pool.begin_with("begin immediate")
            .await
            .map_err(StoreError::from)
    }

    async fn begin_read(
        pool: &SqlitePool,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, StoreError> {
        // Deferred: one WAL snapshot for every read, blocking no writer.
        pool.begin().await.map_err(StoreError::from)
    }

    async fn serialize(_conn: &mut SqliteConnection, writers: Writers) -> Result<(), StoreError> {
        // Already serialised: `begin_write` holds the write lock.
        match writers {
            Writers::Dealers | Writers::Audit | Writers::Sessions => Ok(()),
        }
    }

    async fn notify(_conn: &mut SqliteConnection, _change: &StoreChange) -> Result<(), StoreError> {
        // No notification channel: every reader polls (see
        // `subscribe_changes`).
        Ok(())
    }

    async fn vehicle_documents(
        conn: &mut SqliteConnection,
        snapshot_id: &str,
        ids: &[&str],
    ) -> Result<Vec<VehicleRecord>, StoreError> {
        // One statement text for every batch: the ids travel as one JSON
        // array, unpacked by `json_each`.
        let docs: Vec<Json<VehicleRecord>> = sqlx::query_scalar(
            "select doc from vehicles
             where snapshot_id = $1 and vehicle_id in (select value from json_each($2))",
        )
        .bind(snapshot_id)
        .bind(json_text(ids)?)
        .fetch_all(&mut *conn)
        .await?;
        Ok(docs.into_iter().map(|Json(v)| v).collect())
    }

    async fn insert_vehicles(
        conn: &mut SqliteConnection,
        snapshot_id: &str,
        batch: &[crate::store::snapshot_write::StoredVehicle],
    ) -> Result<(), StoreError> {
        // Idempotent, and cheap next to a batch: see IMPORT_CACHE_KIB.
        sqlx::query(AssertSqlSafe(format!(
            "pragma cache_size = -{IMPORT_CACHE_KIB}"
        )))
        .execute(&mut *conn)
        .await?;
        for rows in batch.chunks(VEHICLE_INSERT_BATCH) {
            // Full batches share one SQL text, hence one cached prepared statement.
            let mut query = sqlx::query(AssertSqlSafe(vehicle_insert_sql(rows.len())));
            for vehicle in rows {
                query = query
                    .bind(snapshot_id)
                    .bind(&vehicle.vehicle_id)
                    .bind(&vehicle.vin)
                    .bind(&vehicle.stock_number)
                    .bind(&vehicle.doc);
            }
            query.execute(&mut *conn).await?;
        }
        Ok(())
    }

    async fn insert_price_points(
        conn: &mut SqliteConnection,
        organization_id: &str,
        rooftop_id: &str,
        valid_from: DateTime<Utc>,
        points: &[crate::store::snapshot_write::NewPricePoint],
    ) -> Result<(), StoreError> {
        // One statement per batch: the points travel as one JSON array of
        // [vehicle_id, amount_minor, currency], unpacked by `json_each`. A
        // second import within the same microsecond (never in practice)
        // keeps the later price.
        let rows: Vec<(&str, i64, &str)> = points
            .iter()
            .map(|p| (p.vehicle_id.as_str(), p.amount_minor, p.currency))
            .collect();
        sqlx::query(
            "insert into price_history (organization_id, rooftop_id, vehicle_id, valid_from,
                 amount_minor, currency)
             select $1, $2, value ->> 0, $3, value ->> 1, value ->> 2 from json_each($4) where true
             on conflict (organization_id, rooftop_id, vehicle_id, valid_from)
             do update set amount_minor = excluded.amount_minor, currency = excluded.currency",
        )
        .bind(organization_id)
        .bind(rooftop_id)
        .bind(timestamp(valid_from))
        .bind(json_text(&rows)?)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    /// SQLite has no notification channel: every reader polls (its
    /// refresh intervals) — the fallback PostgreSQL replicas keep too.
    fn subscribe_changes(&self) -> Option<tokio::sync::mpsc::Receiver<StoreChange>> {
        None
    }
}

/// RFC 3339, UTC, microseconds: fixed width, so stored values sort as text.
fn timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Parse a timestamp written by [`timestamp`].
fn parse_timestamp(text: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::parse_from_rfc3339(text)
        .map(|at| at.with_timezone(&Utc))
        .map_err(|e| StoreError::Corrupt(format!("stored timestamp {text:?}: {e}")))
}

/// `insert into vehicles` of `rows` rows, five anonymous parameters a row
/// (the snapshot id repeated). SQLite binds at most 32766 values per
/// statement, so a batch is a multi-row `values` list (PostgreSQL binds
/// arrays instead). Anonymous, not numbered (`?1`, `?2`, …): sqlx asks
/// SQLite the name of every parameter it binds, and SQLite finds a
/// numbered parameter's name by walking the statement's list of names, so
/// binding a batch of 2,001 numbered parameters walked that list two
/// million times, 7% of an import (docs/benchmarks.md "Start-up at a
/// million"); an anonymous parameter has no name to look up.
fn vehicle_insert_sql(rows: usize) -> String {
    let mut sql = String::with_capacity(80 + rows * 18);
    sql.push_str("insert into vehicles (snapshot_id, vehicle_id, vin, stock_number, doc) values ");
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push_str("(?, ?, ?, ?, ?)");
    }
    sql
}
