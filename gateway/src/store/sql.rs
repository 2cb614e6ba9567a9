//! The SQL of both store backends, written once (issue 13 item 6).
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
    AvailabilityObservation, Change, DealersImportSummary, LegacySessionRecord, OrganizationPlan,
    OrganizationRecord, ProgramRecord, ProgramRevisionRecord, ProgramSetCheck, ProgramsChange,
    ProgramsImportSummary, RooftopRecord, SnapshotRecord, Store, StoreChange, StoreError,
    StoredProgram, check_api_token, json_text, plan_organization, plan_programs_change,
    programs_audit_event, programs_organization_missing, rooftop_not_of_organization,
    rooftop_taken, summarize, validate_import,
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
        batch: &[(VehicleRecord, String)],
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

// The bounds below say, once per impl block, that the dialect's database
// binds and decodes the plain types every shared statement uses; both
// sqlx drivers meet them.

impl<D: Dialect> SqlStore<D>
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
    /// Run `delete` (of at most `$2` rows from before `$1`) until it
    /// deletes fewer than [`AUDIT_PRUNE_BATCH`] rows, each statement its own
    /// transaction, so writers wait at most one batch; returns how many.
    async fn expire_audit(
        &self,
        delete: &'static str,
        cutoff: &D::Time,
    ) -> Result<u64, StoreError> {
        let batch = i64::try_from(AUDIT_PRUNE_BATCH).unwrap_or(i64::MAX);
        let mut expired = 0;
        loop {
            let n = sqlx::query(delete)
                .bind(cutoff)
                .bind(batch)
                .execute(&self.pool)
                .await?
                .rows_affected();
            expired += n;
            if n < AUDIT_PRUNE_BATCH {
                return Ok(expired);
            }
        }
    }

    /// While `count` says more than `max` rows remain, delete the oldest:
    /// `last` selects the key (a timestamp, then text columns) of the
    /// `$1`-th oldest row, and `delete` every row up to that key, at most
    /// [`AUDIT_PRUNE_BATCH`] per transaction. Returns how many rows were
    /// deleted, and the time of the last key.
    async fn bound_audit(
        &self,
        max: u64,
        count: &'static str,
        last: &'static str,
        delete: &'static str,
    ) -> Result<(u64, Option<DateTime<Utc>>), StoreError> {
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        let batch = i64::try_from(AUDIT_PRUNE_BATCH).unwrap_or(i64::MAX);
        let mut deleted = 0;
        let mut through = None;
        loop {
            let mut tx = D::begin_write(&self.pool).await?;
            // Two replicas pruning at once must not both delete the excess.
            D::serialize(&mut tx, Writers::Audit).await?;
            let total: i64 = sqlx::query_scalar(count).fetch_one(&mut *tx).await?;
            let excess = (total - max).min(batch);
            if excess <= 0 {
                tx.commit().await?;
                return Ok((deleted, through));
            }
            // The newest of the `excess` oldest rows: delete up to it.
            let key = sqlx::query(last)
                .bind(excess - 1)
                .fetch_one(&mut *tx)
                .await?;
            let at: D::Time = key.try_get(0)?;
            let mut query = sqlx::query(delete).bind(&at);
            for column in 1..key.len() {
                let text: String = key.try_get(column)?;
                query = query.bind(text);
            }
            let n = query.execute(&mut *tx).await?.rows_affected();
            tx.commit().await?;
            deleted += n;
            through = Some(D::parse_time(at)?);
        }
    }

    /// While `subject` has more than `max` events, delete its oldest, at
    /// most [`AUDIT_PRUNE_BATCH`] per transaction (the principal's share of
    /// the size bound, docs/tokens-and-audit.md "Retention and size").
    /// Returns how many were deleted, and the time of the newest of them.
    async fn bound_audit_share(
        &self,
        subject: &str,
        max: u64,
    ) -> Result<(u64, Option<DateTime<Utc>>), StoreError> {
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        let batch = i64::try_from(AUDIT_PRUNE_BATCH).unwrap_or(i64::MAX);
        let mut deleted = 0;
        let mut through = None;
        loop {
            let mut tx = D::begin_write(&self.pool).await?;
            // Two replicas pruning at once must not both delete the excess.
            D::serialize(&mut tx, Writers::Audit).await?;
            let total: i64 =
                sqlx::query_scalar("select count(*) from audit_events where subject = $1")
                    .bind(subject)
                    .fetch_one(&mut *tx)
                    .await?;
            let excess = (total - max).min(batch);
            if excess <= 0 {
                tx.commit().await?;
                return Ok((deleted, through));
            }
            // The newest of the principal's `excess` oldest events.
            let key = sqlx::query(
                "select occurred_at, event_id from audit_events where subject = $1
                 order by occurred_at, event_id limit 1 offset $2",
            )
            .bind(subject)
            .bind(excess - 1)
            .fetch_one(&mut *tx)
            .await?;
            let at: D::Time = key.try_get(0)?;
            let event_id: String = key.try_get(1)?;
            let n = sqlx::query(
                "delete from audit_events
                 where subject = $1 and (occurred_at, event_id) <= ($2, $3)",
            )
            .bind(subject)
            .bind(&at)
            .bind(&event_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            tx.commit().await?;
            deleted += n;
            through = Some(D::parse_time(at)?);
        }
    }

    /// A timestamp column.
    fn time(row: &Row<D>, column: &str) -> Result<DateTime<Utc>, StoreError> {
        D::parse_time(row.try_get(column)?)
    }

    async fn read_secret(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        sqlx::query_scalar("select value from gateway_secrets where name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::from)
    }

    async fn load_organization(
        conn: &mut Conn<D>,
        organization_id: &str,
    ) -> Result<Option<OrganizationRecord>, StoreError> {
        let Some(row) = sqlx::query(
            "select organization_id, name, legal_name, extensions, source
             from organizations where organization_id = $1",
        )
        .bind(organization_id)
        .fetch_optional(&mut *conn)
        .await?
        else {
            return Ok(None);
        };
        let mut org = Self::organization_from_row(&row)?;
        let rooftop_rows = sqlx::query(
            "select rooftop_id, dap, settings
             from rooftops where organization_id = $1 order by position",
        )
        .bind(organization_id)
        .fetch_all(&mut *conn)
        .await?;
        org.rooftops = rooftop_rows
            .iter()
            .map(Self::rooftop_from_row)
            .collect::<Result<_, _>>()?;
        Ok(Some(org))
    }

    /// An organization row, without its rooftops.
    fn organization_from_row(row: &Row<D>) -> Result<OrganizationRecord, StoreError> {
        Ok(OrganizationRecord {
            organization_id: row.try_get("organization_id")?,
            name: row.try_get("name")?,
            legal_name: row.try_get("legal_name")?,
            extensions: D::read_json(row, "extensions")?,
            rooftops: Vec::new(),
            source: json::<D, _>(row, "source")?,
        })
    }

    fn rooftop_from_row(row: &Row<D>) -> Result<RooftopRecord, StoreError> {
        Ok(RooftopRecord {
            rooftop_id: row.try_get("rooftop_id")?,
            dap: json::<D, _>(row, "dap")?,
            settings: json::<D, _>(row, "settings")?,
        })
    }

    /// Fail with a readable error when a rooftop this organization adds is
    /// kept by another organization (after this import's removals).
    async fn check_rooftops_free(
        conn: &mut Conn<D>,
        plan: &OrganizationPlan<'_>,
    ) -> Result<(), StoreError> {
        for rooftop in plan.rooftops.iter().filter(|r| r.change == Change::Added) {
            let owner: Option<String> =
                sqlx::query_scalar("select organization_id from rooftops where rooftop_id = $1")
                    .bind(&rooftop.rooftop.rooftop_id)
                    .fetch_optional(&mut *conn)
                    .await?;
            if let Some(owner) = owner {
                return Err(rooftop_taken(
                    &rooftop.rooftop.rooftop_id,
                    &plan.org.organization_id,
                    &owner,
                ));
            }
        }
        Ok(())
    }

    async fn write_organization(
        conn: &mut Conn<D>,
        plan: &OrganizationPlan<'_>,
        now: &D::Time,
    ) -> Result<(), StoreError> {
        let org = plan.org;
        let extensions = org.extensions.as_ref().map(json_text).transpose()?;
        let source = json_text(&org.source)?;
        // `updated_at` moves only when the content changed; `source` always
        // records the latest import.
        let updated_at = (plan.change != Change::Unchanged).then(|| now.clone());
        sqlx::query(AssertSqlSafe(format!(
            "insert into organizations
                 (organization_id, name, legal_name, extensions, source, created_at, updated_at)
             values ($1, $2, $3, $4{json}, $5{json}, $6, $6)
             on conflict (organization_id) do update set
                 name = excluded.name,
                 legal_name = excluded.legal_name,
                 extensions = excluded.extensions,
                 source = excluded.source,
                 updated_at = coalesce($7, organizations.updated_at)",
            json = D::JSON
        )))
        .bind(&org.organization_id)
        .bind(&org.name)
        .bind(&org.legal_name)
        .bind(extensions)
        .bind(source)
        .bind(now)
        .bind(updated_at)
        .execute(&mut *conn)
        .await?;

        for rooftop in plan.rooftops.iter().filter(|r| r.rewrite) {
            sqlx::query(AssertSqlSafe(format!(
                "insert into rooftops (organization_id, rooftop_id, position, dap, settings)
                 values ($1, $2, $3, $4{json}, $5{json})
                 on conflict (organization_id, rooftop_id) do update set
                     position = excluded.position,
                     dap = excluded.dap,
                     settings = excluded.settings",
                json = D::JSON
            )))
            .bind(&org.organization_id)
            .bind(&rooftop.rooftop.rooftop_id)
            .bind(rooftop.position)
            .bind(json_text(&rooftop.rooftop.dap)?)
            .bind(json_text(&rooftop.rooftop.settings)?)
            .execute(&mut *conn)
            .await?;
        }
        Ok(())
    }

    /// Insert one audit event ([`AuditEvent::bounded`]) through `executor`
    /// (the pool, or a transaction that writes together with it).
    async fn insert_audit<'e, E>(executor: E, event: &AuditEvent) -> Result<(), StoreError>
    where
        E: Executor<'e, Database = D::Db>,
    {
        let event = &event.bounded();
        sqlx::query(AssertSqlSafe(format!(
            "insert into audit_events (event_id, occurred_at, trace_id, subject, credential,
                 organization_id, rooftop_ids, tool, profile, policy_decision, resource_ids,
                 outcome, delegation, unresolved_rooftops)
             values ($1, $2, $3, $4, $5{json}, $6, $7{json}, $8, $9, $10, $11{json}, $12,
                 $13{json}, $14)",
            json = D::JSON
        )))
        .bind(&event.event_id)
        .bind(D::time(event.occurred_at))
        .bind(&event.trace_id)
        .bind(&event.subject)
        .bind(event.credential.as_ref().map(json_text).transpose()?)
        .bind(&event.organization_id)
        .bind(json_text(&event.rooftop_ids)?)
        .bind(&event.tool)
        .bind(&event.profile)
        .bind(&event.policy_decision)
        .bind(json_text(&event.resource_ids)?)
        .bind(&event.outcome)
        .bind(json_text(&event.delegation)?)
        .bind(i64::from(event.unresolved_rooftops))
        .execute(executor)
        .await?;
        Ok(())
    }

    async fn read_vehicles(
        conn: &mut Conn<D>,
        snapshot_id: &str,
    ) -> Result<Vec<VehicleRecord>, StoreError> {
        // PostgreSQL's `vehicle_id` is `collate "C"`: byte order, as on
        // SQLite, from the primary key index.
        let rows =
            sqlx::query("select doc from vehicles where snapshot_id = $1 order by vehicle_id")
                .bind(snapshot_id)
                .fetch_all(&mut *conn)
                .await?;
        rows.iter().map(|row| json::<D, _>(row, "doc")).collect()
    }

    /// A row of [`SNAPSHOT_COLUMNS`].
    fn snapshot_from_row(row: &Row<D>) -> Result<SnapshotRecord, StoreError> {
        let vehicle_count: i64 = row.try_get("vehicle_count")?;
        Ok(SnapshotRecord {
            snapshot_id: row.try_get("snapshot_id")?,
            organization_id: row.try_get("organization_id")?,
            rooftop_id: row.try_get("rooftop_id")?,
            version: row.try_get("version")?,
            created_at: Self::time(row, "created_at")?,
            source: json::<D, _>(row, "source")?,
            vehicle_count: u32::try_from(vehicle_count).map_err(|_| {
                StoreError::Corrupt(format!(
                    "stored vehicle_count {vehicle_count} is out of range"
                ))
            })?,
            summary: json::<D, _>(row, "summary")?,
        })
    }

    /// A row of [`API_TOKEN_COLUMNS`].
    fn api_token_from_row(row: &Row<D>) -> Result<ApiTokenRecord, StoreError> {
        let revoked_at: Option<D::Time> = row.try_get("revoked_at")?;
        Ok(ApiTokenRecord {
            token_id: row.try_get("token_id")?,
            secret_hash: row.try_get("secret_hash")?,
            subject: row.try_get("subject")?,
            organization_id: row.try_get("organization_id")?,
            rooftops: json::<D, RooftopScope>(row, "rooftops")?,
            scopes: json::<D, BTreeSet<String>>(row, "scopes")?,
            purpose: row.try_get("purpose")?,
            created_at: Self::time(row, "created_at")?,
            expires_at: Self::time(row, "expires_at")?,
            revoked_at: revoked_at.map(D::parse_time).transpose()?,
        })
    }

    /// A row of [`AUDIT_COUNTER_COLUMNS`].
    fn audit_count_from_row(row: &Row<D>) -> Result<AuditCount, StoreError> {
        let count: i64 = row.try_get("count")?;
        Ok(AuditCount {
            window_start: Self::time(row, "window_start")?,
            client_network: row.try_get("client_network")?,
            tool: row.try_get("tool")?,
            outcome: row.try_get("outcome")?,
            profile: row.try_get("profile")?,
            policy_decision: row.try_get("policy_decision")?,
            count: u64::try_from(count)
                .map_err(|_| StoreError::Corrupt(format!("audit counter count {count}")))?,
            first_trace_id: row.try_get("first_trace_id")?,
            last_at: Self::time(row, "last_at")?,
        })
    }

    /// A row of [`AUDIT_COLUMNS`].
    fn audit_from_row(row: &Row<D>) -> Result<AuditEvent, StoreError> {
        Ok(AuditEvent {
            event_id: row.try_get("event_id")?,
            occurred_at: Self::time(row, "occurred_at")?,
            trace_id: row.try_get("trace_id")?,
            subject: row.try_get("subject")?,
            credential: D::read_json(row, "credential")?,
            organization_id: row.try_get("organization_id")?,
            rooftop_ids: json::<D, _>(row, "rooftop_ids")?,
            unresolved_rooftops: {
                let n: i64 = row.try_get("unresolved_rooftops")?;
                u32::try_from(n)
                    .map_err(|_| StoreError::Corrupt(format!("audit unresolved_rooftops {n}")))?
            },
            tool: row.try_get("tool")?,
            profile: row.try_get("profile")?,
            policy_decision: row.try_get("policy_decision")?,
            resource_ids: json::<D, _>(row, "resource_ids")?,
            outcome: row.try_get("outcome")?,
            delegation: json::<D, _>(row, "delegation")?,
        })
    }

    /// A row of [`PROGRAM_COLUMNS`].
    fn program_from_row(row: &Row<D>) -> Result<ProgramRecord, StoreError> {
        let revision: i64 = row.try_get("revision")?;
        Ok(ProgramRecord {
            program_id: row.try_get("program_id")?,
            revision: u32::try_from(revision)
                .map_err(|_| StoreError::Corrupt(format!("revision {revision}")))?,
            doc: json::<D, _>(row, "doc")?,
            rule_hash: row.try_get("rule_hash")?,
            imported_at: Self::time(row, "imported_at")?,
            source: json::<D, _>(row, "source")?,
        })
    }
}

#[async_trait::async_trait]
impl<D: Dialect> Store for SqlStore<D>
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
        let mut tx = SqlSnapshotTx::<D>(tx);
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
        tx.commit().await?;
        Ok(deleted)
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
        let count = count.bounded();
        let window = D::time(count.window_start);
        let last_at = D::time(count.last_at);
        let increment = i64::try_from(count.count).unwrap_or(i64::MAX);
        let mut tx = D::begin_write(&self.pool).await?;
        let updated = sqlx::query(AssertSqlSafe(format!(
            "update audit_counters set count = count + $1, last_at = {greatest}(last_at, $2)
             where window_start = $3 and client_network = $4 and tool = $5 and outcome = $6",
            greatest = D::GREATEST
        )))
        .bind(increment)
        .bind(&last_at)
        .bind(&window)
        .bind(&count.client_network)
        .bind(&count.tool)
        .bind(&count.outcome)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if updated == 0 {
            // A new key: serialised with every other writer's new keys, so
            // the per-window cap counted below still holds at insert.
            D::serialize(&mut tx, Writers::Audit).await?;
            let keys: i64 =
                sqlx::query_scalar("select count(*) from audit_counters where window_start = $1")
                    .bind(&window)
                    .fetch_one(&mut *tx)
                    .await?;
            let network = if keys >= i64::from(max_keys_per_window) {
                OVERFLOW_NETWORK
            } else {
                count.client_network.as_str()
            };
            sqlx::query(AssertSqlSafe(format!(
                "insert into audit_counters (window_start, client_network, tool, outcome,
                     profile, policy_decision, count, first_trace_id, last_at)
                 values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 on conflict (window_start, client_network, tool, outcome) do update set
                     count = audit_counters.count + excluded.count,
                     last_at = {greatest}(audit_counters.last_at, excluded.last_at)",
                greatest = D::GREATEST
            )))
            .bind(&window)
            .bind(network)
            .bind(&count.tool)
            .bind(&count.outcome)
            .bind(&count.profile)
            .bind(&count.policy_decision)
            .bind(increment)
            .bind(&count.first_trace_id)
            .bind(&last_at)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await.map_err(StoreError::from)
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
        let cutoff = D::time(older_than);
        let events_expired = self
            .expire_audit(
                "delete from audit_events where event_id in
                     (select event_id from audit_events where occurred_at < $1
                      order by occurred_at, event_id limit $2)",
                &cutoff,
            )
            .await?;
        let counters_expired = self
            .expire_audit(
                "delete from audit_counters where (window_start, client_network, tool, outcome) in
                     (select window_start, client_network, tool, outcome from audit_counters
                      where window_start < $1 order by window_start limit $2)",
                &cutoff,
            )
            .await?;
        // Each principal's share first (docs/tokens-and-audit.md "Retention
        // and size"): a principal past its share loses its own oldest
        // events, so no principal can push out another's.
        let per_subject: Vec<(String, i64)> =
            sqlx::query_as("select subject, count(*) from audit_events group by subject")
                .fetch_all(&self.pool)
                .await?;
        let counts: Vec<u64> = per_subject
            .iter()
            .map(|(_, n)| u64::try_from(*n).unwrap_or(0))
            .collect();
        let mut events_over_share = 0;
        let mut share_through: Option<DateTime<Utc>> = None;
        if let Some(share) = super::audit::share_of(&counts, max_events) {
            for ((subject, _), count) in per_subject.iter().zip(&counts) {
                if *count > share {
                    let (n, through) = self.bound_audit_share(subject, share).await?;
                    events_over_share += n;
                    share_through = share_through.max(through);
                }
            }
        }
        let (events_over_limit, events_pruned_through) = self
            .bound_audit(
                max_events,
                "select count(*) from audit_events",
                "select occurred_at, event_id from audit_events
                 order by occurred_at, event_id limit 1 offset $1",
                "delete from audit_events where (occurred_at, event_id) <= ($1, $2)",
            )
            .await?;
        let (counters_over_limit, counters_pruned_through) = self
            .bound_audit(
                max_counters,
                "select count(*) from audit_counters",
                "select window_start, client_network, tool, outcome from audit_counters
                 order by window_start, client_network, tool, outcome limit 1 offset $1",
                "delete from audit_counters
                 where (window_start, client_network, tool, outcome) <= ($1, $2, $3, $4)",
            )
            .await?;
        Ok(AuditPruneSummary {
            events_expired,
            counters_expired,
            events_over_limit: events_over_share + events_over_limit,
            events_over_share,
            counters_over_limit,
            events_pruned_through: events_pruned_through.max(share_through),
            counters_pruned_through,
        })
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
        // One change at a time across replicas (with dealer imports): the
        // rows read below stay as read until commit, so the set `check`
        // judged is the set written. The organization row is locked too, so
        // it cannot vanish meanwhile.
        let mut tx = D::begin_write(&self.pool).await?;
        D::serialize(&mut tx, Writers::Dealers).await?;
        let known: Option<String> = sqlx::query_scalar(AssertSqlSafe(format!(
            "select organization_id from organizations where organization_id = $1{lock}",
            lock = D::row_lock(RowLock::Share)
        )))
        .bind(organization_id)
        .fetch_optional(&mut *tx)
        .await?;
        if known.is_none() {
            return Err(programs_organization_missing(organization_id));
        }
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {PROGRAM_COLUMNS}, withdrawn_at
             from incentive_programs where organization_id = $1
             order by program_id, revision"
        )))
        .bind(organization_id)
        .fetch_all(&mut *tx)
        .await?;
        let stored = rows
            .iter()
            .map(|row| {
                let withdrawn: Option<D::Time> = row.try_get("withdrawn_at")?;
                Ok(StoredProgram {
                    record: Self::program_from_row(row)?,
                    withdrawn: withdrawn.is_some(),
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let plan = plan_programs_change(organization_id, &stored, change, check)?;
        if dry_run {
            return Ok(plan.summary);
        }
        for record in &plan.inserts {
            sqlx::query(AssertSqlSafe(format!(
                "insert into incentive_programs (organization_id, program_id, revision,
                     doc, rule_hash, imported_at, source)
                 values ($1, $2, $3, $4{json}, $5, $6, $7{json})",
                json = D::JSON
            )))
            .bind(organization_id)
            .bind(&record.program_id)
            .bind(i64::from(record.revision))
            .bind(json_text(&record.doc)?)
            .bind(&record.rule_hash)
            .bind(D::time(record.imported_at))
            .bind(json_text(&record.source)?)
            .execute(&mut *tx)
            .await?;
        }
        let now = D::time(Utc::now().trunc_subsecs(6));
        for w in &plan.withdraw {
            sqlx::query(
                "update incentive_programs set withdrawn_at = $1
                 where organization_id = $2 and program_id = $3 and revision = $4
                   and withdrawn_at is null",
            )
            .bind(&now)
            .bind(organization_id)
            .bind(&w.program_id)
            .bind(i64::from(w.revision))
            .execute(&mut *tx)
            .await?;
        }
        if let Some(audit) = audit {
            Self::insert_audit(&mut *tx, &programs_audit_event(audit, &plan)).await?;
        }
        let change = StoreChange::Programs {
            organization_id: organization_id.to_owned(),
        };
        D::notify(&mut tx, &change).await?;
        tx.commit().await?;
        Ok(plan.summary)
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
        let attempt = attempt.bounded();
        let mut tx = D::begin_write(&self.pool).await?;
        sqlx::query(
            "insert into import_counts (kind, outcome, count) values ($1, $2, 1)
             on conflict (kind, outcome) do update set count = import_counts.count + 1",
        )
        .bind(attempt.kind.as_str())
        .bind(attempt.outcome.as_str())
        .execute(&mut *tx)
        .await?;
        if attempt.outcome != ImportOutcome::Imported {
            // One row per organization (or one naming none), so a manager
            // reads the attempt without the other organizations' ids.
            let organizations: Vec<Option<String>> = if attempt.organization_ids.is_empty() {
                vec![None]
            } else {
                attempt.organization_ids.iter().cloned().map(Some).collect()
            };
            let rooftop_ids = json_text(&attempt.rooftop_ids)?;
            let keep = i64::from(import_log::MAX_ATTEMPTS_PER_ORGANIZATION);
            for (i, organization) in organizations.into_iter().enumerate() {
                let row_id = if i == 0 {
                    attempt.attempt_id.clone()
                } else {
                    uuid::Uuid::now_v7().to_string()
                };
                sqlx::query(AssertSqlSafe(format!(
                    "insert into import_attempts (attempt_id, attempted_at, kind, outcome,
                         organization_id, rooftop_ids, file, reason, problems)
                     values ($1, $2, $3, $4, $5, $6{json}, $7, $8, $9)",
                    json = D::JSON
                )))
                .bind(row_id)
                .bind(D::time(attempt.attempted_at))
                .bind(attempt.kind.as_str())
                .bind(attempt.outcome.as_str())
                .bind(organization.clone())
                .bind(&rooftop_ids)
                .bind(&attempt.file)
                .bind(&attempt.reason)
                .bind(i64::from(attempt.problems))
                .execute(&mut *tx)
                .await?;
                // The bound: the newest attempts of the organization (or of
                // those naming none) stay, the older ones go.
                match &organization {
                    Some(org) => sqlx::query(
                        "delete from import_attempts where organization_id = $1
                           and attempt_id not in (
                               select attempt_id from import_attempts where organization_id = $1
                               order by attempt_id desc limit $2)",
                    )
                    .bind(org)
                    .bind(keep),
                    None => sqlx::query(
                        "delete from import_attempts where organization_id is null
                           and attempt_id not in (
                               select attempt_id from import_attempts
                               where organization_id is null
                               order by attempt_id desc limit $1)",
                    )
                    .bind(keep),
                }
                .execute(&mut *tx)
                .await?;
            }
        }
        tx.commit().await.map_err(StoreError::from)
    }

    async fn import_attempts(
        &self,
        organization_id: &str,
        limit: u32,
    ) -> Result<Vec<ImportAttempt>, StoreError> {
        let rows = sqlx::query(
            "select attempt_id, attempted_at, kind, outcome, organization_id, rooftop_ids,
                    file, reason, problems
             from import_attempts where organization_id = $1
             order by attempt_id desc limit $2",
        )
        .bind(organization_id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let kind: String = row.try_get("kind")?;
                let outcome: String = row.try_get("outcome")?;
                let (kind, outcome) = import_log::parse_labels(&kind, &outcome)?;
                let problems: i64 = row.try_get("problems")?;
                Ok(ImportAttempt {
                    attempt_id: row.try_get("attempt_id")?,
                    attempted_at: Self::time(row, "attempted_at")?,
                    kind,
                    outcome,
                    organization_ids: vec![row.try_get("organization_id")?],
                    rooftop_ids: json::<D, _>(row, "rooftop_ids")?,
                    file: row.try_get("file")?,
                    reason: row.try_get("reason")?,
                    problems: u32::try_from(problems).unwrap_or(u32::MAX),
                })
            })
            .collect()
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
        .execute(&self.pool)
        .await?;
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
        // One creation at a time (from every process on the store), so the
        // bound counted below still holds at commit.
        let mut tx = D::begin_write(&self.pool).await?;
        D::serialize(&mut tx, Writers::Sessions).await?;
        sqlx::query("delete from legacy_sessions where last_seen < $1")
            .bind(D::time(idle_before))
            .execute(&mut *tx)
            .await?;
        let stored: i64 = sqlx::query_scalar("select count(*) from legacy_sessions")
            .fetch_one(&mut *tx)
            .await?;
        let max = i64::from(max_sessions.max(1));
        let excess = stored - max + 1;
        if excess > 0 {
            sqlx::query(
                "delete from legacy_sessions where session_key in (
                     select session_key from legacy_sessions
                     order by last_seen, created_at, session_key limit $1)",
            )
            .bind(excess)
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query(
            "insert into legacy_sessions (session_key, protocol_version, initialized,
                 created_at, last_seen)
             values ($1, $2, $3, $4, $5)",
        )
        .bind(&session.key)
        .bind(&session.protocol_version)
        .bind(session.initialized)
        .bind(D::time(session.created_at))
        .bind(D::time(session.last_seen))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(u64::try_from(stored.min(max - 1) + 1).unwrap_or(0))
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

    async fn count_legacy_sessions(&self) -> Result<u64, StoreError> {
        let stored: i64 = sqlx::query_scalar("select count(*) from legacy_sessions")
            .fetch_one(&self.pool)
            .await?;
        Ok(u64::try_from(stored).unwrap_or(0))
    }
}

/// [`SnapshotTx`] over a dialect's open transaction.
struct SqlSnapshotTx<D: Dialect>(Transaction<'static, D::Db>);

#[async_trait::async_trait]
impl<D: Dialect> SnapshotTx for SqlSnapshotTx<D>
where
    for<'c> &'c mut Conn<D>: Executor<'c, Database = D::Db>,
    <D::Db as Database>::Arguments: IntoArguments<D::Db>,
    for<'a> &'a str: ColumnIndex<Row<D>> + Encode<'a, D::Db> + Type<D::Db>,
    usize: ColumnIndex<Row<D>>,
    String: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
    i64: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
    i32: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
{
    async fn lock_rooftop(
        &mut self,
        organization_id: &str,
        rooftop_id: &str,
    ) -> Result<(), StoreError> {
        // SQLite already holds the write lock (`begin immediate`), so only
        // the ownership check is left; PostgreSQL locks the rooftop row.
        let kept: Option<i32> = sqlx::query_scalar(AssertSqlSafe(format!(
            "select 1 from rooftops where organization_id = $1 and rooftop_id = $2{lock}",
            lock = D::row_lock(RowLock::NoKeyUpdate)
        )))
        .bind(organization_id)
        .bind(rooftop_id)
        .fetch_optional(&mut *self.0)
        .await?;
        if kept.is_some() {
            return Ok(());
        }
        let owner: Option<String> =
            sqlx::query_scalar("select organization_id from rooftops where rooftop_id = $1")
                .bind(rooftop_id)
                .fetch_optional(&mut *self.0)
                .await?;
        Err(rooftop_not_of_organization(
            rooftop_id,
            organization_id,
            owner.as_deref(),
        ))
    }

    async fn previous(
        &mut self,
        organization_id: &str,
        rooftop_id: &str,
    ) -> Result<Option<PreviousSnapshot>, StoreError> {
        let row: Option<(String, i64, i64)> = sqlx::query_as(
            "select snapshot_id, version, vehicle_count from inventory_snapshots
             where organization_id = $1 and rooftop_id = $2
             order by version desc limit 1",
        )
        .bind(organization_id)
        .bind(rooftop_id)
        .fetch_optional(&mut *self.0)
        .await?;
        Ok(row.map(|(snapshot_id, version, count)| PreviousSnapshot {
            snapshot_id,
            version,
            vehicle_count: u32::try_from(count).unwrap_or(u32::MAX),
        }))
    }

    async fn insert_snapshot(
        &mut self,
        snapshot: &SnapshotRecord,
        source_text: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(AssertSqlSafe(format!(
            "insert into inventory_snapshots (snapshot_id, organization_id, rooftop_id, version,
                 created_at, source, vehicle_count, summary)
             values ($1, $2, $3, $4, $5, $6{json}, 0, '{{}}'{json})",
            json = D::JSON
        )))
        .bind(&snapshot.snapshot_id)
        .bind(&snapshot.organization_id)
        .bind(&snapshot.rooftop_id)
        .bind(snapshot.version)
        .bind(D::time(snapshot.created_at))
        .bind(source_text)
        .execute(&mut *self.0)
        .await?;
        Ok(())
    }

    async fn documents(
        &mut self,
        snapshot_id: &str,
        ids: &[&str],
    ) -> Result<Vec<VehicleRecord>, StoreError> {
        D::vehicle_documents(&mut self.0, snapshot_id, ids).await
    }

    async fn identities_after(
        &mut self,
        snapshot_id: &str,
        after: &str,
        limit: u32,
    ) -> Result<Vec<StoredIdentity>, StoreError> {
        // The primary key (snapshot_id, vehicle_id) serves the range and
        // the order; PostgreSQL's vehicle_id is byte-ordered ("C") like
        // SQLite's.
        let rows: Vec<(String, Option<String>, Option<String>)> = sqlx::query_as(
            "select vehicle_id, vin, stock_number from vehicles
             where snapshot_id = $1 and vehicle_id > $2
             order by vehicle_id limit $3",
        )
        .bind(snapshot_id)
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(&mut *self.0)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(vehicle_id, vin, stock_number)| StoredIdentity {
                vehicle_id,
                vin,
                stock_number,
            })
            .collect())
    }

    async fn insert_vehicles(
        &mut self,
        snapshot_id: &str,
        batch: &[(VehicleRecord, String)],
    ) -> Result<(), StoreError> {
        D::insert_vehicles(&mut self.0, snapshot_id, batch).await
    }

    async fn finish_snapshot(
        &mut self,
        snapshot_id: &str,
        vehicle_count: u32,
        summary_text: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(AssertSqlSafe(format!(
            "update inventory_snapshots set vehicle_count = $1, summary = $2{json}
             where snapshot_id = $3",
            json = D::JSON
        )))
        .bind(i64::from(vehicle_count))
        .bind(summary_text)
        .bind(snapshot_id)
        .execute(&mut *self.0)
        .await?;
        Ok(())
    }
}
