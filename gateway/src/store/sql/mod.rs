//! The SQL of both store backends, written once.
//!
//! [`SqlStore`] implements [`Store`] (and the snapshot writer's
//! [`SnapshotTx`]) over any database a [`Dialect`] describes. Every
//! statement text below is shared: `$N` placeholders mean the N-th bound
//! value on PostgreSQL and on SQLite alike (sqlx binds SQLite's `$N`
//! parameters by number). The dialect carries only what really differs
//! between the two schemas and engines (`migrations/{sqlite,postgres}/`):
//! - how a timestamp is stored (RFC 3339 text vs `timestamptz`);
//! - how a JSON document is bound and read (text vs `json`, cast with
//!   `::json` so PostgreSQL keeps the key order);
//! - the spelling of the two-argument maximum and of byte-order collation;
//! - how writers are serialised: SQLite takes the database write lock up
//!   front (`begin immediate`), PostgreSQL takes advisory and row locks;
//! - change notifications (`pg_notify`; SQLite readers poll);
//! - the batch statements of the snapshot writer (vehicle documents by id
//!   and multi-row vehicle inserts), and the audit footprint's byte count.
//!
//! What is not SQL text (connection setup, SQLite's pragmas and WAL, the
//! PostgreSQL change listener) stays in `sqlite.rs` and `postgres.rs`.
//!
//! This file holds the dialect contract and the [`Store`] impl; the longer
//! statements of each table family live beside it, as inherent methods of
//! [`SqlStore`] that the impl calls: `organizations.rs` (organizations,
//! rooftops, secrets), `snapshots.rs` (inventory snapshots and the snapshot
//! writer's transaction), `tokens.rs`, `audit_log.rs` (audit events and
//! counters), `programs.rs`, `imports.rs` (the import log) and
//! `sessions.rs` (legacy MCP sessions).

/// An impl block of [`SqlStore`] over every dialect, with the bounds
/// written once: the dialect's database binds and decodes the plain types
/// every shared statement uses (both sqlx drivers meet them).
/// `shared_sql! { impl { .. } }` is an inherent block; `shared_sql! {
/// #[attr] impl Trait { .. } }` implements `Trait`. Defined before the
/// submodules so that each table family's file can use it.
macro_rules! shared_sql {
    ($(#[$attr:meta])* impl $($trait_:ident)? { $($body:tt)* }) => {
        $(#[$attr])*
        impl<D: Dialect> $($trait_ for)? SqlStore<D>
        where
            for<'c> &'c mut Conn<D>: Executor<'c, Database = D::Db>,
            <D::Db as Database>::Arguments: IntoArguments<D::Db>,
            for<'a> &'a str: ColumnIndex<Row<D>> + Encode<'a, D::Db> + Type<D::Db>,
            usize: ColumnIndex<Row<D>>,
            String: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
            Option<String>: for<'q> Encode<'q, D::Db>,
            Option<D::Time>: for<'q> Encode<'q, D::Db>,
            i64: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
            i32: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
            bool: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
            Vec<u8>: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
        {
            $($body)*
        }
    };
}

mod audit_log;
mod imports;
mod organizations;
mod price_history;
mod programs;
mod sessions;
mod snapshots;
mod tokens;

use std::collections::BTreeSet;

use chrono::{DateTime, SubsecRound as _, Utc};
use serde::de::DeserializeOwned;
use sqlx::{
    AssertSqlSafe, ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Row as _,
    Transaction, Type,
};

use super::audit::OVERFLOW_NETWORK;
use super::import_log::{self, ImportAttempt, ImportCount, ImportOutcome};
use super::snapshot_write::{
    PreviousSnapshot, SnapshotFeed, SnapshotPlan, SnapshotTx, SnapshotWrite, StoredIdentity,
    WriteChecks, write_snapshots,
};
use super::{
    AUDIT_PRUNE_BATCH, ApiTokenRecord, AuditCount, AuditEvent, AuditFootprint, AuditPruneSummary,
    AvailabilityObservation, Change, DealersImportSummary, LegacySessionRecord,
    LegacySubscriptions, OrganizationPlan, OrganizationRecord, ProgramRecord,
    ProgramRevisionRecord, ProgramSetCheck, ProgramsChange, ProgramsImportSummary, RooftopRecord,
    SnapshotRecord, Store, StoreChange, StoreError, StoredProgram, check_api_token, json_text,
    plan_organization, plan_programs_change, programs_audit_event, programs_organization_missing,
    rooftop_not_of_organization, rooftop_taken, summarize, validate_import,
};
use crate::domain::grant::RooftopScope;
use crate::inventory::model::VehicleRecord;

/// A row of the dialect's database.
pub type Row<D> = <<D as Dialect>::Db as Database>::Row;
/// A connection of the dialect's database.
pub type Conn<D> = <<D as Dialect>::Db as Database>::Connection;

/// A class of writers that must run one at a time across every process on
/// the store (the plan each computes from what it read must still hold at
/// commit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writers {
    /// Dealer imports and program changes.
    Dealers,
    /// New audit counter keys (the per-window cap) and audit pruning.
    Audit,
    /// Legacy session creation (the capacity bound).
    Sessions,
}

/// A row lock a statement takes on PostgreSQL. SQLite needs none: its
/// writers hold the database write lock for the whole transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowLock {
    /// The row's key cannot change or vanish before commit.
    KeyShare,
    /// The row cannot change or vanish before commit.
    Share,
    /// Other writers of the row wait (without blocking foreign keys to it).
    NoKeyUpdate,
}

/// How many rows a statement changed (each driver's query result says it
/// in its own type).
pub trait RowsAffected {
    fn rows_affected(&self) -> u64;
}

/// What differs between the two backends, and nothing else.
#[async_trait::async_trait]
pub trait Dialect: std::fmt::Debug + Clone + Send + Sync + 'static {
    type Db: Database<QueryResult: RowsAffected>;
    /// How a timestamp is bound and stored.
    type Time: for<'q> Encode<'q, Self::Db>
        + for<'r> Decode<'r, Self::Db>
        + Type<Self::Db>
        + Clone
        + Send
        + Sync
        + 'static;

    /// Appended to a placeholder bound with a JSON document's text.
    const JSON: &'static str;
    /// The two-argument maximum (`greatest` / SQLite's scalar `max`).
    const GREATEST: &'static str;
    /// Appended to a text column in `order by` for byte order (SQLite's
    /// default collation already is).
    const BYTE_ORDER: &'static str;
    /// `(rows, bytes)` of `audit_events` ([`Store::audit_footprint`]).
    const AUDIT_EVENTS_FOOTPRINT: &'static str;
    /// `(rows, bytes)` of `audit_counters`.
    const AUDIT_COUNTERS_FOOTPRINT: &'static str;

    /// Appended to a `select` to take `lock` on the rows it reads.
    fn row_lock(lock: RowLock) -> &'static str;
    /// The stored form of a timestamp (microsecond precision on both).
    fn time(at: DateTime<Utc>) -> Self::Time;
    /// Read back a timestamp written by [`Dialect::time`].
    fn parse_time(stored: Self::Time) -> Result<DateTime<Utc>, StoreError>;
    /// A nullable JSON document column, decoded.
    fn read_json<T: DeserializeOwned>(
        row: &Row<Self>,
        column: &str,
    ) -> Result<Option<T>, StoreError>;

    /// A transaction that writes: serialised with every other writer that
    /// calls [`Dialect::serialize`] or, on SQLite, with every writer.
    async fn begin_write(
        pool: &Pool<Self::Db>,
    ) -> Result<Transaction<'static, Self::Db>, StoreError>;
    /// A transaction that only reads, seeing one consistent state.
    async fn begin_read(
        pool: &Pool<Self::Db>,
    ) -> Result<Transaction<'static, Self::Db>, StoreError>;
    /// Wait, inside a [`Dialect::begin_write`] transaction, until no other
    /// writer of this class runs.
    async fn serialize(conn: &mut Conn<Self>, writers: Writers) -> Result<(), StoreError>;
    /// Tell every replica about `change` when the transaction commits.
    async fn notify(conn: &mut Conn<Self>, change: &StoreChange) -> Result<(), StoreError>;
    /// The documents of those of `ids` that the snapshot holds.
    async fn vehicle_documents(
        conn: &mut Conn<Self>,
        snapshot_id: &str,
        ids: &[&str],
    ) -> Result<Vec<VehicleRecord>, StoreError>;
    /// Insert vehicles with their document texts, in as few statements as
    /// the engine's limits allow.
    async fn insert_vehicles(
        conn: &mut Conn<Self>,
        snapshot_id: &str,
        batch: &[crate::store::snapshot_write::StoredVehicle],
    ) -> Result<(), StoreError>;
    /// Insert a batch's price history points, each in force from
    /// `valid_from` ([`SnapshotTx::insert_price_points`]).
    async fn insert_price_points(
        conn: &mut Conn<Self>,
        organization_id: &str,
        rooftop_id: &str,
        valid_from: DateTime<Utc>,
        points: &[crate::store::snapshot_write::NewPricePoint],
    ) -> Result<(), StoreError>;
    /// [`Store::subscribe_changes`].
    fn subscribe_changes(&self) -> Option<tokio::sync::mpsc::Receiver<StoreChange>>;
}

/// The store over a dialect's database.
#[derive(Debug, Clone)]
pub struct SqlStore<D: Dialect> {
    pub(super) pool: Pool<D::Db>,
    pub(super) dialect: D,
}

/// The columns of a `SnapshotRecord`, for `snapshot_from_row`.
const SNAPSHOT_COLUMNS: &str = "snapshot_id, organization_id, rooftop_id, version, created_at, \
                                source, vehicle_count, summary";
/// The columns of an `ApiTokenRecord`, for `api_token_from_row`.
const API_TOKEN_COLUMNS: &str = "token_id, secret_hash, subject, organization_id, rooftops, \
                                 scopes, purpose, created_at, expires_at, revoked_at";
/// The columns of an `AuditEvent`, for `audit_from_row`.
const AUDIT_COLUMNS: &str = "event_id, occurred_at, trace_id, subject, credential, \
                             organization_id, rooftop_ids, unresolved_rooftops, tool, profile, \
                             policy_decision, resource_ids, outcome, delegation";
/// The columns of an `AuditCount`, for `audit_count_from_row`.
const AUDIT_COUNTER_COLUMNS: &str = "window_start, client_network, tool, outcome, profile, \
                                     policy_decision, count, first_trace_id, last_at";
/// The columns of a `ProgramRecord`, for `program_from_row`.
const PROGRAM_COLUMNS: &str = "program_id, revision, doc, rule_hash, imported_at, source";

/// A not-null JSON document column, decoded.
fn json<D: Dialect, T: DeserializeOwned>(row: &Row<D>, column: &str) -> Result<T, StoreError> {
    D::read_json(row, column)?
        .ok_or_else(|| StoreError::Corrupt(format!("stored {column} is null")))
}

shared_sql! {
impl {
    /// A timestamp column.
    fn time(row: &Row<D>, column: &str) -> Result<DateTime<Utc>, StoreError> {
        D::parse_time(row.try_get(column)?)
    }
}
}

shared_sql! {
#[async_trait::async_trait]
impl Store {
    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("select 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn close(&self) {
        self.pool.close().await;
    }

    async fn is_empty(&self) -> Result<bool, StoreError> {
        let any: bool = sqlx::query_scalar("select exists (select 1 from organizations)")
            .fetch_one(&self.pool)
            .await?;
        Ok(!any)
    }

    async fn upsert_organizations(
        &self,
        orgs: &[OrganizationRecord],
    ) -> Result<DealersImportSummary, StoreError> {
        validate_import(orgs)?;
        let now = D::time(Utc::now());
        // One import at a time across replicas: the plan below is computed
        // from what this transaction reads (SQLite: the write lock taken up
        // front, so a read can never fail to upgrade with SQLITE_BUSY;
        // PostgreSQL: an advisory lock).
        let mut tx = D::begin_write(&self.pool).await?;
        D::serialize(&mut tx, Writers::Dealers).await?;

        let mut plans = Vec::with_capacity(orgs.len());
        for org in orgs {
            let stored = Self::load_organization(&mut tx, &org.organization_id).await?;
            plans.push(plan_organization(stored.as_ref(), org)?);
        }
        // Removals first, so a rooftop may move to another organization of
        // the same batch whatever the order of the two.
        for plan in &plans {
            for rooftop_id in &plan.removed {
                sqlx::query("delete from rooftops where organization_id = $1 and rooftop_id = $2")
                    .bind(&plan.org.organization_id)
                    .bind(rooftop_id)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        for plan in &plans {
            Self::check_rooftops_free(&mut tx, plan).await?;
        }
        for plan in &plans {
            Self::write_organization(&mut tx, plan, &now).await?;
        }
        D::notify(&mut tx, &StoreChange::Dealers).await?;
        tx.commit().await?;
        Ok(summarize(&plans))
    }

    async fn list_organizations(&self) -> Result<Vec<OrganizationRecord>, StoreError> {
        // One consistent view for both reads (an import must not land
        // between them).
        let mut tx = D::begin_read(&self.pool).await?;
        let org_rows = sqlx::query(
            "select organization_id, name, legal_name, extensions, source
             from organizations order by organization_id",
        )
        .fetch_all(&mut *tx)
        .await?;
        let rooftop_rows = sqlx::query(
            "select organization_id, rooftop_id, dap, settings
             from rooftops order by organization_id, position",
        )
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;

        let mut orgs = org_rows
            .iter()
            .map(Self::organization_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        // Both lists are sorted by organization_id: merge them in one pass.
        let mut next = 0;
        for row in &rooftop_rows {
            let organization_id: String = row.try_get("organization_id")?;
            while next < orgs.len() && orgs[next].organization_id < organization_id {
                next += 1;
            }
            let Some(org) = orgs
                .get_mut(next)
                .filter(|o| o.organization_id == organization_id)
            else {
                return Err(StoreError::Corrupt(format!(
                    "rooftop of unknown organization '{organization_id}'"
                )));
            };
            org.rooftops.push(Self::rooftop_from_row(row)?);
        }
        Ok(orgs)
    }

    async fn get_organization(
        &self,
        organization_id: &str,
    ) -> Result<Option<OrganizationRecord>, StoreError> {
        let mut tx = D::begin_read(&self.pool).await?;
        let org = Self::load_organization(&mut tx, organization_id).await?;
        tx.commit().await?;
        Ok(org)
    }

    async fn get_or_create_secret(
        &self,
        name: &str,
        generate: &(dyn Fn() -> Vec<u8> + Send + Sync),
    ) -> Result<Vec<u8>, StoreError> {
        if let Some(value) = self.read_secret(name).await? {
            return Ok(value);
        }
        // Whoever inserts first wins; everyone then reads the winner's value.
        sqlx::query(
            "insert into gateway_secrets (name, value, created_at) values ($1, $2, $3)
             on conflict (name) do nothing",
        )
        .bind(name)
        .bind(generate())
        .bind(D::time(Utc::now()))
        .execute(&self.pool)
        .await?;
        self.read_secret(name).await?.ok_or_else(|| {
            StoreError::Query(format!("secret '{name}' vanished right after its insert"))
        })
    }

    async fn write_snapshots_checked(
        &self,
        plan: SnapshotPlan<'_>,
        feed: tokio::sync::mpsc::Receiver<SnapshotFeed>,
        checks: WriteChecks<'_>,
    ) -> Result<SnapshotWrite, StoreError> {
        // Concurrent imports of a rooftop are serialised, so the versions
        // read are still the newest at commit: SQLite by the write lock
        // taken up front; PostgreSQL (read committed) by the rooftop row
        // locks of `lock_rooftop` (imports of other rooftops proceed in
        // parallel, and every later statement sees what the previous holder
        // committed). A dry run only reads: on SQLite a deferred
        // transaction gives it one consistent view without blocking
        // writers; on PostgreSQL it takes the same locks, for the same
        // view, and rolls back.
        let tx = if plan.dry_run {
            self.pool.begin().await?
        } else {
            D::begin_write(&self.pool).await?
        };
        let mut tx = snapshots::SqlSnapshotTx::<D>(tx);
        let written = write_snapshots(&mut tx, plan, feed, checks).await?;
        // A refusal of the removal guard rolls back (the transaction is
        // dropped), as a dry run does.
        if !plan.dry_run && written.refused.is_empty() {
            let change = StoreChange::Inventory {
                organization_id: plan.organization_id.to_owned(),
            };
            D::notify(&mut tx.0, &change).await?;
            tx.0.commit().await?;
        }
        Ok(written)
    }

    async fn latest_snapshots(&self) -> Result<Vec<SnapshotRecord>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {SNAPSHOT_COLUMNS} from inventory_snapshots as s
             where version = (select max(m.version) from inventory_snapshots as m
                              where m.organization_id = s.organization_id
                                and m.rooftop_id = s.rooftop_id)
             order by organization_id{bytes}, rooftop_id{bytes}",
            bytes = D::BYTE_ORDER
        )))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::snapshot_from_row).collect()
    }

    async fn snapshot_history(
        &self,
        organization_id: &str,
        rooftop_id: &str,
        limit: u32,
    ) -> Result<Vec<SnapshotRecord>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {SNAPSHOT_COLUMNS} from inventory_snapshots
             where organization_id = $1 and rooftop_id = $2
             order by version desc limit $3"
        )))
        .bind(organization_id)
        .bind(rooftop_id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::snapshot_from_row).collect()
    }

    async fn snapshot_vehicles(&self, snapshot_id: &str) -> Result<Vec<VehicleRecord>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        Self::read_vehicles(&mut conn, snapshot_id).await
    }

    async fn stream_snapshot_vehicles(
        &self,
        snapshot_id: &str,
        out: tokio::sync::mpsc::Sender<VehicleRecord>,
    ) -> Result<usize, StoreError> {
        let mut conn = self.pool.acquire().await?;
        Self::stream_vehicles(&mut conn, snapshot_id, out).await
    }

    async fn prune_snapshots(&self, superseded_before: DateTime<Utc>) -> Result<u64, StoreError> {
        // A writing transaction: on SQLite a deferred write could fail to
        // upgrade its read lock when another writer commits in between.
        let mut tx = D::begin_write(&self.pool).await?;
        // A snapshot's successor is the next version of its rooftop; the
        // newest has none, the subquery is null and the comparison false.
        let deleted = sqlx::query(
            "delete from inventory_snapshots
             where (select n.created_at from inventory_snapshots as n
                    where n.organization_id = inventory_snapshots.organization_id
                      and n.rooftop_id = inventory_snapshots.rooftop_id
                      and n.version > inventory_snapshots.version
                    order by n.version limit 1) < $1",
        )
        .bind(D::time(superseded_before))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        // Price history goes with the snapshots' pruning, but is kept at
        // least PRICE_HISTORY_DAYS after it was superseded whatever the
        // snapshots' retention (docs/operations.md "Price history").
        let history_before = superseded_before
            .min(Utc::now() - chrono::Duration::days(price_history::PRICE_HISTORY_DAYS));
        Self::prune_price_history(&mut tx, history_before).await?;
        tx.commit().await?;
        Ok(deleted)
    }

    async fn price_history(
        &self,
        organization_id: &str,
        rooftop_id: &str,
        vehicle_id: &str,
        since: DateTime<Utc>,
    ) -> Result<super::PriceHistory, StoreError> {
        self.read_price_history(organization_id, rooftop_id, vehicle_id, since)
            .await
    }

    async fn create_api_token(&self, token: &ApiTokenRecord) -> Result<(), StoreError> {
        let rooftops = json_text(&token.rooftops)?;
        let scopes = json_text(&token.scopes)?;
        let mut tx = D::begin_write(&self.pool).await?;
        // The organization cannot be deleted before the insert (the foreign
        // key would catch it too, less readably).
        let org: Option<i32> = sqlx::query_scalar(AssertSqlSafe(format!(
            "select 1 from organizations where organization_id = $1{lock}",
            lock = D::row_lock(RowLock::KeyShare)
        )))
        .bind(&token.organization_id)
        .fetch_optional(&mut *tx)
        .await?;
        let kept: Vec<String> =
            sqlx::query_scalar("select rooftop_id from rooftops where organization_id = $1")
                .bind(&token.organization_id)
                .fetch_all(&mut *tx)
                .await?;
        check_api_token(token, org.map(|_| kept.as_slice()))?;
        sqlx::query(AssertSqlSafe(format!(
            "insert into api_tokens (token_id, secret_hash, subject, organization_id, rooftops,
                 scopes, purpose, created_at, expires_at, revoked_at)
             values ($1, $2, $3, $4, $5{json}, $6{json}, $7, $8, $9, $10)",
            json = D::JSON
        )))
        .bind(&token.token_id)
        .bind(&token.secret_hash)
        .bind(&token.subject)
        .bind(&token.organization_id)
        .bind(rooftops)
        .bind(scopes)
        .bind(&token.purpose)
        .bind(D::time(token.created_at))
        .bind(D::time(token.expires_at))
        .bind(token.revoked_at.map(D::time))
        .execute(&mut *tx)
        .await?;
        tx.commit().await.map_err(StoreError::from)
    }

    async fn get_api_token(&self, token_id: &str) -> Result<Option<ApiTokenRecord>, StoreError> {
        sqlx::query(AssertSqlSafe(format!(
            "select {API_TOKEN_COLUMNS} from api_tokens where token_id = $1"
        )))
        .bind(token_id)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(Self::api_token_from_row)
        .transpose()
    }

    async fn list_api_tokens(&self) -> Result<Vec<ApiTokenRecord>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {API_TOKEN_COLUMNS} from api_tokens order by created_at, token_id"
        )))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::api_token_from_row).collect()
    }

    async fn revoke_api_token(
        &self,
        token_id: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let mut tx = D::begin_write(&self.pool).await?;
        let matched = sqlx::query(
            "update api_tokens set revoked_at = coalesce(revoked_at, $1) where token_id = $2",
        )
        .bind(D::time(at))
        .bind(token_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if matched > 0 {
            D::notify(&mut tx, &StoreChange::TokenRevoked).await?;
        }
        tx.commit().await?;
        Ok(matched > 0)
    }

    async fn append_audit(&self, event: &AuditEvent) -> Result<(), StoreError> {
        Self::insert_audit(&self.pool, event).await
    }

    async fn count_audit(
        &self,
        count: &AuditCount,
        max_keys_per_window: u32,
    ) -> Result<(), StoreError> {
        // The inherent method of the same name, in sql/audit_log.rs.
        self.count_audit(count, max_keys_per_window).await
    }

    async fn audit_counts_since(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<AuditCount>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {AUDIT_COUNTER_COLUMNS} from audit_counters where window_start >= $1
             order by window_start, client_network, tool, outcome limit $2"
        )))
        .bind(D::time(since))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::audit_count_from_row).collect()
    }

    async fn audit_counts_after(
        &self,
        last: &AuditCount,
        limit: u32,
    ) -> Result<Vec<AuditCount>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {AUDIT_COUNTER_COLUMNS} from audit_counters
             where (window_start, client_network, tool, outcome) > ($1, $2, $3, $4)
             order by window_start, client_network, tool, outcome limit $5"
        )))
        .bind(D::time(last.window_start))
        .bind(&last.client_network)
        .bind(&last.tool)
        .bind(&last.outcome)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::audit_count_from_row).collect()
    }

    async fn audit_footprint(&self) -> Result<AuditFootprint, StoreError> {
        let (events, event_bytes): (i64, i64) = sqlx::query_as(D::AUDIT_EVENTS_FOOTPRINT)
            .fetch_one(&self.pool)
            .await?;
        let (counters, counter_bytes): (i64, i64) = sqlx::query_as(D::AUDIT_COUNTERS_FOOTPRINT)
            .fetch_one(&self.pool)
            .await?;
        let unsigned = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(AuditFootprint {
            events: unsigned(events),
            counters: unsigned(counters),
            bytes: unsigned(event_bytes) + unsigned(counter_bytes),
        })
    }

    async fn prune_audit(
        &self,
        older_than: DateTime<Utc>,
        max_events: u64,
        max_counters: u64,
    ) -> Result<AuditPruneSummary, StoreError> {
        // The inherent method of the same name, in sql/audit_log.rs.
        self.prune_audit(older_than, max_events, max_counters).await
    }

    async fn audit_since(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<AuditEvent>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {AUDIT_COLUMNS} from audit_events where occurred_at >= $1
             order by occurred_at, event_id limit $2"
        )))
        .bind(D::time(since))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::audit_from_row).collect()
    }

    async fn audit_after(
        &self,
        occurred_at: DateTime<Utc>,
        event_id: &str,
        limit: u32,
    ) -> Result<Vec<AuditEvent>, StoreError> {
        // Row-value comparison: one range scan of the (occurred_at, event_id)
        // index; PostgreSQL's `event_id` is `collate "C"`, byte order as on
        // SQLite.
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {AUDIT_COLUMNS} from audit_events where (occurred_at, event_id) > ($1, $2)
             order by occurred_at, event_id limit $3"
        )))
        .bind(D::time(occurred_at))
        .bind(event_id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::audit_from_row).collect()
    }

    async fn change_programs(
        &self,
        organization_id: &str,
        change: ProgramsChange<'_>,
        check: ProgramSetCheck<'_>,
        audit: Option<&AuditEvent>,
        dry_run: bool,
    ) -> Result<ProgramsImportSummary, StoreError> {
        // The inherent method of the same name, in sql/programs.rs.
        self.change_programs(organization_id, change, check, audit, dry_run)
            .await
    }

    async fn current_programs(
        &self,
        organization_id: &str,
    ) -> Result<Vec<ProgramRecord>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {PROGRAM_COLUMNS} from incentive_programs
             where organization_id = $1 and withdrawn_at is null
             order by program_id, revision"
        )))
        .bind(organization_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::program_from_row).collect()
    }

    async fn program_revisions(
        &self,
        organization_id: &str,
    ) -> Result<Vec<ProgramRevisionRecord>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {PROGRAM_COLUMNS}, withdrawn_at from incentive_programs
             where organization_id = $1
             order by program_id{bytes}, revision",
            bytes = D::BYTE_ORDER
        )))
        .bind(organization_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let withdrawn: Option<D::Time> = row.try_get("withdrawn_at")?;
                Ok(ProgramRevisionRecord {
                    record: Self::program_from_row(row)?,
                    withdrawn_at: withdrawn.map(D::parse_time).transpose()?,
                })
            })
            .collect()
    }

    async fn record_import(&self, attempt: &ImportAttempt) -> Result<(), StoreError> {
        // The inherent method of the same name, in sql/imports.rs.
        self.record_import(attempt).await
    }

    async fn import_attempts(
        &self,
        organization_id: &str,
        limit: u32,
    ) -> Result<Vec<ImportAttempt>, StoreError> {
        // The inherent method of the same name, in sql/imports.rs.
        self.import_attempts(organization_id, limit).await
    }

    async fn import_counts(&self) -> Result<Vec<ImportCount>, StoreError> {
        let rows: Vec<(String, String, i64)> =
            sqlx::query_as("select kind, outcome, count from import_counts order by kind, outcome")
                .fetch_all(&self.pool)
                .await?;
        rows.into_iter()
            .map(|(kind, outcome, count)| {
                let (kind, outcome) = import_log::parse_labels(&kind, &outcome)?;
                Ok(ImportCount {
                    kind,
                    outcome,
                    count: u64::try_from(count).unwrap_or(0),
                })
            })
            .collect()
    }

    async fn record_availability(
        &self,
        observation: &AvailabilityObservation,
    ) -> Result<(), StoreError> {
        // Every replica hears of it (its subscribers' `availability_changed`,
        // docs/mcp.md "Subscriptions"), as of any other change.
        let mut tx = D::begin_write(&self.pool).await?;
        sqlx::query(AssertSqlSafe(format!(
            "insert into availability_observations (observation_id, organization_id,
                 rooftop_id, vehicle_id, status, authority, observed_at, source, checked_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8{json}, $9)",
            json = D::JSON
        )))
        .bind(uuid::Uuid::now_v7().to_string())
        .bind(&observation.organization_id)
        .bind(&observation.rooftop_id)
        .bind(&observation.vehicle_id)
        .bind(&observation.status)
        .bind(&observation.authority)
        .bind(D::time(observation.observed_at))
        .bind(json_text(&observation.source)?)
        .bind(D::time(observation.checked_at))
        .execute(&mut *tx)
        .await?;
        let change = StoreChange::Availability {
            organization_id: observation.organization_id.clone(),
            rooftop_id: observation.rooftop_id.clone(),
            vehicle_id: observation.vehicle_id.clone(),
        };
        D::notify(&mut tx, &change).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn latest_availability(
        &self,
        rooftop_id: &str,
        vehicle_id: &str,
    ) -> Result<Option<AvailabilityObservation>, StoreError> {
        let row = sqlx::query(
            "select organization_id, rooftop_id, vehicle_id, status, authority, observed_at,
                 source, checked_at
             from availability_observations where rooftop_id = $1 and vehicle_id = $2
             order by observed_at desc, checked_at desc limit 1",
        )
        .bind(rooftop_id)
        .bind(vehicle_id)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        Ok(Some(AvailabilityObservation {
            organization_id: row.try_get("organization_id")?,
            rooftop_id: row.try_get("rooftop_id")?,
            vehicle_id: row.try_get("vehicle_id")?,
            status: row.try_get("status")?,
            authority: row.try_get("authority")?,
            observed_at: Self::time(&row, "observed_at")?,
            source: json::<D, _>(&row, "source")?,
            checked_at: Self::time(&row, "checked_at")?,
        }))
    }

    fn subscribe_changes(&self) -> Option<tokio::sync::mpsc::Receiver<StoreChange>> {
        self.dialect.subscribe_changes()
    }

    async fn create_legacy_session(
        &self,
        session: &LegacySessionRecord,
        max_sessions: u32,
        idle_before: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        // The inherent method of the same name, in sql/sessions.rs.
        self.create_legacy_session(session, max_sessions, idle_before)
            .await
    }

    async fn legacy_session(&self, key: &str) -> Result<Option<LegacySessionRecord>, StoreError> {
        let row = sqlx::query(
            "select session_key, protocol_version, initialized, created_at, last_seen
             from legacy_sessions where session_key = $1",
        )
        .bind(key)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        Ok(Some(LegacySessionRecord {
            key: row.try_get("session_key")?,
            protocol_version: row.try_get("protocol_version")?,
            initialized: row.try_get("initialized")?,
            created_at: Self::time(&row, "created_at")?,
            last_seen: Self::time(&row, "last_seen")?,
        }))
    }

    async fn touch_legacy_session(&self, key: &str, at: DateTime<Utc>) -> Result<bool, StoreError> {
        // Never back: SQLite's fixed-width RFC 3339 text compares as the
        // times do.
        let matched = sqlx::query(AssertSqlSafe(format!(
            "update legacy_sessions set last_seen = {greatest}(last_seen, $1)
             where session_key = $2",
            greatest = D::GREATEST
        )))
        .bind(D::time(at))
        .bind(key)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(matched > 0)
    }

    async fn initialize_legacy_session(
        &self,
        key: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let matched = sqlx::query(AssertSqlSafe(format!(
            "update legacy_sessions set initialized = true,
                 last_seen = {greatest}(last_seen, $1)
             where session_key = $2",
            greatest = D::GREATEST
        )))
        .bind(D::time(at))
        .bind(key)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(matched > 0)
    }

    async fn delete_legacy_session(&self, key: &str) -> Result<bool, StoreError> {
        let deleted = sqlx::query("delete from legacy_sessions where session_key = $1")
            .bind(key)
            .execute(&self.pool)
            .await?
            .rows_affected();
        Ok(deleted > 0)
    }

    async fn legacy_session_subscriptions(
        &self,
        key: &str,
    ) -> Result<Option<LegacySubscriptions>, StoreError> {
        // The inherent methods of the same names, in sql/sessions.rs.
        self.legacy_session_subscriptions(key).await
    }

    async fn claim_legacy_session_stream(
        &self,
        key: &str,
        stream: &str,
    ) -> Result<bool, StoreError> {
        self.claim_legacy_session_stream(key, stream).await
    }

    async fn change_legacy_session_subscription(
        &self,
        key: &str,
        uri: &str,
        subscribe: bool,
        max: u32,
    ) -> Result<Option<Vec<String>>, StoreError> {
        self.change_legacy_session_subscription(key, uri, subscribe, max)
            .await
    }

    async fn count_legacy_sessions(&self) -> Result<u64, StoreError> {
        let stored: i64 = sqlx::query_scalar("select count(*) from legacy_sessions")
            .fetch_one(&self.pool)
            .await?;
        Ok(u64::try_from(stored).unwrap_or(0))
    }
}
}
