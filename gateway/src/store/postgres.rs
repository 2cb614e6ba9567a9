//! PostgreSQL backend: the shared store for several gateway replicas.
//!
//! Schema: `migrations/postgres/`. Timestamps are `timestamptz`. JSON
//! documents are `json`, not `jsonb`, to keep their key order (see the
//! migration's header), so they are bound as text and cast with `::json`:
//! binding `sqlx::types::Json` would declare the parameter `jsonb` and
//! reorder the keys on the way in. The statements are shared with SQLite
//! (`sql/`); this file holds the connection setup, the change listener
//! and [`PostgresDialect`], what differs.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use sqlx::Row as _;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions, PgRow};
use sqlx::types::Json;

use super::sql::{Dialect, RowLock, RowsAffected, SqlStore, Writers};
use super::{CHANGE_CHANNEL, OBSERVATION_CHANNEL, StoreChange, StoreError, embedded_migrator};
use crate::inventory::model::VehicleRecord;

/// Migrations of this backend, embedded by `build.rs`.
const MIGRATIONS: &[(i64, &str, &str)] =
    include!(concat!(env!("OUT_DIR"), "/migrations_postgres.rs"));

/// How long a caller waits for a pooled connection, which includes
/// connecting: an unreachable server fails within this bound.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);
/// Per replica; the gateway is read-mostly and queries are short.
const MAX_CONNECTIONS: u32 = 10;
/// `vehicles` rows per insert. Each insert binds four arrays whatever their
/// length; this only bounds the size of one message.
const VEHICLE_INSERT_BATCH: usize = 2000;

/// Advisory-lock key serialising dealer imports and program changes across
/// replicas ("DAPDEALR" in ASCII).
const IMPORT_LOCK_KEY: i64 = 0x4441_5044_4541_4c52;
/// Advisory-lock key serialising new audit counter keys and audit pruning
/// across replicas ("DAPAUDIT" in ASCII).
const AUDIT_LOCK_KEY: i64 = 0x4441_5041_5544_4954;
/// Advisory-lock key serialising legacy session creation (the capacity
/// bound) across replicas ("DAPSESSN" in ASCII).
const SESSION_LOCK_KEY: i64 = 0x4441_5053_4553_534e;

/// The PostgreSQL store.
pub type PostgresStore = SqlStore<PostgresDialect>;

/// What PostgreSQL does differently (see `sql/`), and where the change
/// listener connects (its own connection, outside the pool, so `LISTEN`
/// never takes one of the pool's).
#[derive(Debug, Clone)]
pub struct PostgresDialect {
    listen: ListenOptions,
}

/// The connection options of the change listener. Its `Debug` names no
/// credentials.
#[derive(Clone)]
struct ListenOptions(PgConnectOptions);

impl std::fmt::Debug for ListenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ListenOptions(..)")
    }
}

/// Notifications buffered for the follower before the listener waits.
const CHANGE_BUFFER: usize = 256;
/// The first and the longest wait before the listener reconnects.
const LISTEN_BACKOFF_START: Duration = Duration::from_millis(100);
const LISTEN_BACKOFF_MAX: Duration = Duration::from_secs(5);

impl PostgresStore {
    /// Connect to `database_url` (`postgres://user@host:port/db`) and apply
    /// the migrations (serialised across replicas by sqlx's advisory lock).
    pub async fn open(database_url: &str) -> Result<Self, StoreError> {
        let options = PgConnectOptions::from_str(database_url).map_err(|e| {
            StoreError::Unavailable(format!("invalid PostgreSQL database URL: {e}"))
        })?;
        let listen = ListenOptions(options.clone());
        let pool = PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| StoreError::Unavailable(format!("cannot connect to PostgreSQL: {e}")))?;
        embedded_migrator(MIGRATIONS)
            .run(&pool)
            .await
            .map_err(|e| StoreError::Migration(e.to_string()))?;
        Ok(Self {
            pool,
            dialect: PostgresDialect { listen },
        })
    }
}

impl RowsAffected for sqlx::postgres::PgQueryResult {
    fn rows_affected(&self) -> u64 {
        sqlx::postgres::PgQueryResult::rows_affected(self)
    }
}

#[async_trait::async_trait]
impl Dialect for PostgresDialect {
    type Db = sqlx::Postgres;
    type Time = DateTime<Utc>;

    const JSON: &'static str = "::json";
    const GREATEST: &'static str = "greatest";
    /// Byte order whatever the database's collation, as on SQLite.
    const BYTE_ORDER: &'static str = " collate \"C\"";
    // Timestamps count as their RFC 3339 text (27 bytes), as on SQLite;
    // json documents as their stored text.
    const AUDIT_EVENTS_FOOTPRINT: &'static str = "select count(*), coalesce(sum(
             octet_length(event_id) + 27 + octet_length(trace_id) + octet_length(subject)
             + coalesce(octet_length(credential::text), 0)
             + coalesce(octet_length(organization_id), 0)
             + octet_length(rooftop_ids::text) + octet_length(tool) + octet_length(profile)
             + octet_length(policy_decision) + octet_length(resource_ids::text)
             + octet_length(outcome) + octet_length(delegation::text)), 0)::bigint
         from audit_events";
    const AUDIT_COUNTERS_FOOTPRINT: &'static str = "select count(*), coalesce(sum(
             27 + octet_length(client_network) + octet_length(tool) + octet_length(outcome)
             + octet_length(profile) + octet_length(policy_decision) + 8
             + octet_length(first_trace_id) + 27), 0)::bigint
         from audit_counters";

    fn row_lock(lock: RowLock) -> &'static str {
        match lock {
            RowLock::KeyShare => " for key share",
            RowLock::Share => " for share",
            RowLock::NoKeyUpdate => " for no key update",
        }
    }

    /// sqlx binds microseconds, the precision of `timestamptz`.
    fn time(at: DateTime<Utc>) -> DateTime<Utc> {
        at
    }

    fn parse_time(stored: DateTime<Utc>) -> Result<DateTime<Utc>, StoreError> {
        Ok(stored)
    }

    fn read_json<T: DeserializeOwned>(row: &PgRow, column: &str) -> Result<Option<T>, StoreError> {
        let value: Option<Json<T>> = row.try_get(column)?;
        Ok(value.map(|Json(value)| value))
    }

    async fn begin_write(
        pool: &PgPool,
    ) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, StoreError> {
        // Read committed: what must not interleave takes an advisory lock
        // (`serialize`) or row locks (`row_lock`).
        pool.begin().await.map_err(StoreError::from)
    }

    async fn begin_read(
        pool: &PgPool,
    ) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, StoreError> {
        // One snapshot for every read (read committed would let a write
        // land between two of them).
        pool.begin_with("begin isolation level repeatable read read only")
            .await
            .map_err(StoreError::from)
    }

    async fn serialize(conn: &mut PgConnection, writers: Writers) -> Result<(), StoreError> {
        let key = match writers {
            Writers::Dealers => IMPORT_LOCK_KEY,
            Writers::Audit => AUDIT_LOCK_KEY,
            Writers::Sessions => SESSION_LOCK_KEY,
        };
        // Held until the transaction ends.
        sqlx::query("select pg_advisory_xact_lock($1)")
            .bind(key)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// Send `change` to every listening replica when the current
    /// transaction commits (`NOTIFY` is transactional: a rolled-back write
    /// notifies nobody; docs/operations.md "Replicas").
    async fn notify(conn: &mut PgConnection, change: &StoreChange) -> Result<(), StoreError> {
        sqlx::query("select pg_notify($1, $2)")
            .bind(change.channel())
            .bind(change.payload())
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    async fn vehicle_documents(
        conn: &mut PgConnection,
        snapshot_id: &str,
        ids: &[&str],
    ) -> Result<Vec<VehicleRecord>, StoreError> {
        let docs: Vec<Json<VehicleRecord>> = sqlx::query_scalar(
            "select doc from vehicles where snapshot_id = $1 and vehicle_id = any($2::text[])",
        )
        .bind(snapshot_id)
        .bind(ids)
        .fetch_all(&mut *conn)
        .await?;
        Ok(docs.into_iter().map(|Json(v)| v).collect())
    }

    async fn insert_vehicles(
        conn: &mut PgConnection,
        snapshot_id: &str,
        batch: &[crate::store::snapshot_write::StoredVehicle],
    ) -> Result<(), StoreError> {
        for rows in batch.chunks(VEHICLE_INSERT_BATCH) {
            let ids: Vec<&str> = rows.iter().map(|v| v.vehicle_id.as_str()).collect();
            let vins: Vec<Option<&str>> = rows.iter().map(|v| v.vin.as_deref()).collect();
            let stock_numbers: Vec<Option<&str>> =
                rows.iter().map(|v| v.stock_number.as_deref()).collect();
            let docs: Vec<&str> = rows.iter().map(|v| v.doc.as_str()).collect();
            // One statement per batch: four text arrays, unnested into rows.
            sqlx::query(
                "insert into vehicles (snapshot_id, vehicle_id, vin, stock_number, doc)
                 select $1, t.vehicle_id, t.vin, t.stock_number, t.doc::json
                 from unnest($2::text[], $3::text[], $4::text[], $5::text[])
                      as t (vehicle_id, vin, stock_number, doc)",
            )
            .bind(snapshot_id)
            .bind(ids)
            .bind(vins)
            .bind(stock_numbers)
            .bind(docs)
            .execute(&mut *conn)
            .await?;
        }
        Ok(())
    }

    async fn insert_price_points(
        conn: &mut PgConnection,
        organization_id: &str,
        rooftop_id: &str,
        valid_from: DateTime<Utc>,
        points: &[crate::store::snapshot_write::NewPricePoint],
    ) -> Result<(), StoreError> {
        let ids: Vec<&str> = points.iter().map(|p| p.vehicle_id.as_str()).collect();
        let amounts: Vec<i64> = points.iter().map(|p| p.amount_minor).collect();
        let currencies: Vec<&str> = points.iter().map(|p| p.currency).collect();
        // One statement per batch: three arrays, unnested into rows. A
        // second import within the same microsecond (never in practice)
        // keeps the later price.
        sqlx::query(
            "insert into price_history (organization_id, rooftop_id, vehicle_id, valid_from,
                 amount_minor, currency)
             select $1, $2, t.vehicle_id, $3, t.amount_minor, t.currency
             from unnest($4::text[], $5::bigint[], $6::text[]) as t (vehicle_id, amount_minor, currency)
             on conflict (organization_id, rooftop_id, vehicle_id, valid_from)
             do update set amount_minor = excluded.amount_minor, currency = excluded.currency",
        )
        .bind(organization_id)
        .bind(rooftop_id)
        .bind(valid_from)
        .bind(ids)
        .bind(amounts)
        .bind(currencies)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    /// A task holding its own `LISTEN` connection feeds the channel until
    /// the receiver is dropped.
    fn subscribe_changes(&self) -> Option<tokio::sync::mpsc::Receiver<StoreChange>> {
        let (sender, receiver) = tokio::sync::mpsc::channel(CHANGE_BUFFER);
        tokio::spawn(follow_changes(self.listen.0.clone(), sender));
        Some(receiver)
    }
}

/// A `LISTEN` on [`CHANGE_CHANNEL`] and [`OBSERVATION_CHANNEL`] over a
/// connection of its own (a pool of
/// one, as `PgListener::connect` makes, without naming the URL again).
async fn change_listener(
    options: &PgConnectOptions,
) -> Result<sqlx::postgres::PgListener, sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .max_lifetime(None)
        .idle_timeout(None)
        .connect_with(options.clone())
        .await?;
    let mut listener = sqlx::postgres::PgListener::connect_with(&pool).await?;
    listener.ignore_pool_close_event(true);
    listener
        .listen_all([CHANGE_CHANNEL, OBSERVATION_CHANNEL])
        .await?;
    Ok(listener)
}

/// The change follower's loop: listen, forward each notification, and on
/// any loss reconnect with backoff. Every (re)connection is followed by a
/// [`StoreChange::Resync`]: what was committed while nobody listened
/// (before the first `LISTEN`, or during an outage) is then reloaded, so a
/// lost notification never leaves a replica stale past its next reload.
/// Ends when the receiver is dropped.
async fn follow_changes(options: PgConnectOptions, sender: tokio::sync::mpsc::Sender<StoreChange>) {
    let mut backoff = LISTEN_BACKOFF_START;
    loop {
        let connected = tokio::select! {
            () = sender.closed() => return,
            listener = change_listener(&options) => listener,
        };
        match connected {
            Ok(mut listener) => {
                backoff = LISTEN_BACKOFF_START;
                if sender.send(StoreChange::Resync).await.is_err() {
                    return;
                }
                loop {
                    let next = tokio::select! {
                        () = sender.closed() => return,
                        next = listener.try_recv() => next,
                    };
                    let change = match next {
                        Ok(Some(notification)) => StoreChange::parse(notification.payload()),
                        // Lost and already re-established (eager
                        // reconnect re-listens): whatever was sent in
                        // between is gone.
                        Ok(None) => {
                            tracing::warn!(
                                "the change listener's connection was lost and re-established; reloading everything"
                            );
                            StoreChange::Resync
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "the change listener failed; reconnecting");
                            break;
                        }
                    };
                    if sender.send(change).await.is_err() {
                        return;
                    }
                }
            }
            Err(e) => tracing::warn!(
                error = %e,
                retry_in_ms = u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX),
                "cannot listen for store changes; polling only until it can"
            ),
        }
        tokio::select! {
            () = sender.closed() => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(LISTEN_BACKOFF_MAX);
    }
}
