//! SQLite backend: the embedded default, one file in WAL mode.
//!
//! Schema: `migrations/sqlite/`. Timestamps are RFC 3339 text (UTC,
//! microseconds), JSON documents are text (see the migration's header).

use std::collections::BTreeSet;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, Row as _};

use super::audit::OVERFLOW_NETWORK;
use super::snapshot_write::{
    PreviousSnapshot, SnapshotFeed, SnapshotPlan, SnapshotTx, write_snapshots,
};
use super::{
    AUDIT_PRUNE_BATCH, ApiTokenRecord, AuditCount, AuditEvent, AuditFootprint, AuditPruneSummary,
    AvailabilityObservation, Change, DealersImportSummary, ObservationSource, OrganizationPlan,
    OrganizationRecord, RooftopRecord, RooftopSettings, SnapshotRecord, SourceRecord, Store,
    StoreError, check_api_token, embedded_migrator, json_text, map_sqlx_error, plan_organization,
    rooftop_not_of_organization, rooftop_taken, summarize, validate_import,
};
use super::{LegacySessionRecord, StoreChange};
use super::{
    ProgramRecord, ProgramSetCheck, ProgramsChange, ProgramsImportSummary, StoredProgram,
    plan_programs_change, programs_audit_event, programs_organization_missing,
};
use crate::domain::grant::{Credential, RooftopScope};
use crate::inventory::model::{InventoryImportSummary, VehicleRecord};

/// Migrations of this backend, embedded by `build.rs`.
const MIGRATIONS: &[(i64, &str, &str)] =
    include!(concat!(env!("OUT_DIR"), "/migrations_sqlite.rs"));

/// How long a statement waits for another writer's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a caller waits for a pooled connection.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);
/// WAL allows concurrent readers beside the single writer.
const MAX_CONNECTIONS: u32 = 8;
/// `vehicles` rows per multi-row insert: 1 + 4 × 500 bound parameters, far
/// below SQLite's limit of 32766.
const VEHICLE_INSERT_BATCH: usize = 500;
/// The columns of a `SnapshotRecord`, for `snapshot_from_row`.
const SNAPSHOT_COLUMNS: &str = "snapshot_id, organization_id, rooftop_id, version, created_at, \
                                source, vehicle_count, summary";

/// The columns of an `ApiTokenRecord`, for `api_token_from_row`.
const API_TOKEN_COLUMNS: &str = "token_id, secret_hash, subject, organization_id, rooftops, \
                                 scopes, purpose, created_at, expires_at, revoked_at";
/// The columns of an `AuditEvent`, for `audit_from_row`.
const AUDIT_COLUMNS: &str = "event_id, occurred_at, trace_id, subject, credential, \
                             organization_id, rooftop_ids, tool, profile, policy_decision, \
                             resource_ids, outcome, delegation";

/// The columns of an `AuditCount`, for `audit_count_from_row`.
const AUDIT_COUNTER_COLUMNS: &str = "window_start, client_network, tool, outcome, profile, \
                                     policy_decision, count, first_trace_id, last_at";

/// The SQLite store.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pub(super) pool: SqlitePool,
}

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
        let pool = pool_options
            .connect_with(options)
            .await
            .map_err(|e| StoreError::Unavailable(format!("cannot open SQLite database: {e}")))?;
        embedded_migrator(MIGRATIONS)
            .run(&pool)
            .await
            .map_err(|e| StoreError::Migration(e.to_string()))?;
        Ok(Self { pool })
    }
}

#[async_trait::async_trait]
impl Store for SqliteStore {
    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("select 1")
            .execute(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
        Ok(())
    }

    async fn is_empty(&self) -> Result<bool, StoreError> {
        let any: i64 = sqlx::query_scalar("select exists (select 1 from organizations)")
            .fetch_one(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
        Ok(any == 0)
    }

    async fn upsert_organizations(
        &self,
        orgs: &[OrganizationRecord],
    ) -> Result<DealersImportSummary, StoreError> {
        validate_import(orgs)?;
        let now = timestamp(Utc::now());
        // `begin immediate` takes the write lock up front: a deferred
        // transaction that reads first could fail to upgrade (SQLITE_BUSY)
        // when another writer commits in between.
        let mut tx = self
            .pool
            .begin_with("begin immediate")
            .await
            .map_err(map_sqlx_error)?;

        let mut plans = Vec::with_capacity(orgs.len());
        for org in orgs {
            let stored = load_organization(&mut tx, &org.organization_id).await?;
            plans.push(plan_organization(stored.as_ref(), org)?);
        }
        // Removals first, so a rooftop may move to another organization of
        // the same batch whatever the order of the two.
        for plan in &plans {
            for rooftop_id in &plan.removed {
                sqlx::query("delete from rooftops where organization_id = ? and rooftop_id = ?")
                    .bind(&plan.org.organization_id)
                    .bind(rooftop_id)
                    .execute(&mut *tx)
                    .await
                    .map_err(map_sqlx_error)?;
            }
        }
        for plan in &plans {
            check_rooftops_free(&mut tx, plan).await?;
        }
        for plan in &plans {
            write_organization(&mut tx, plan, &now).await?;
        }
        tx.commit().await.map_err(map_sqlx_error)?;
        Ok(summarize(&plans))
    }

    async fn list_organizations(&self) -> Result<Vec<OrganizationRecord>, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(map_sqlx_error)?;
        let org_rows = sqlx::query(
            "select organization_id, name, legal_name, extensions, source
             from organizations order by organization_id",
        )
        .fetch_all(&mut *conn)
        .await
        .map_err(map_sqlx_error)?;
        let rooftop_rows = sqlx::query(
            "select organization_id, rooftop_id, dap, settings
             from rooftops order by organization_id, position",
        )
        .fetch_all(&mut *conn)
        .await
        .map_err(map_sqlx_error)?;

        let mut orgs = org_rows
            .iter()
            .map(organization_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        // Both lists are sorted by organization_id: merge them in one pass.
        let mut next = 0;
        for row in &rooftop_rows {
            let organization_id: String = row.try_get("organization_id").map_err(map_sqlx_error)?;
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
            org.rooftops.push(rooftop_from_row(row)?);
        }
        Ok(orgs)
    }

    async fn get_organization(
        &self,
        organization_id: &str,
    ) -> Result<Option<OrganizationRecord>, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(map_sqlx_error)?;
        load_organization(&mut conn, organization_id).await
    }

    async fn get_or_create_secret(
        &self,
        name: &str,
        generate: &(dyn Fn() -> Vec<u8> + Send + Sync),
    ) -> Result<Vec<u8>, StoreError> {
        if let Some(value) = read_secret(&self.pool, name).await? {
            return Ok(value);
        }
        // Whoever inserts first wins; everyone then reads the winner's value.
        sqlx::query(
            "insert into gateway_secrets (name, value, created_at) values (?, ?, ?)
             on conflict (name) do nothing",
        )
        .bind(name)
        .bind(generate())
        .bind(timestamp(Utc::now()))
        .execute(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        read_secret(&self.pool, name).await?.ok_or_else(|| {
            StoreError::Query(format!("secret '{name}' vanished right after its insert"))
        })
    }

    async fn write_snapshots(
        &self,
        plan: SnapshotPlan<'_>,
        feed: tokio::sync::mpsc::Receiver<SnapshotFeed>,
    ) -> Result<Vec<SnapshotRecord>, StoreError> {
        // `begin immediate`: the write lock up front serialises concurrent
        // imports, so the versions read are still the newest at commit. A
        // dry run only reads: a deferred transaction gives it one
        // consistent view without blocking writers.
        let tx = if plan.dry_run {
            self.pool.begin().await
        } else {
            self.pool.begin_with("begin immediate").await
        }
        .map_err(map_sqlx_error)?;
        let mut tx = SqliteSnapshotTx(tx);
        let written = write_snapshots(&mut tx, plan, feed).await?;
        if !plan.dry_run {
            tx.0.commit().await.map_err(map_sqlx_error)?;
        }
        Ok(written)
    }

    async fn latest_snapshots(&self) -> Result<Vec<SnapshotRecord>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {SNAPSHOT_COLUMNS} from inventory_snapshots as s
             where version = (select max(m.version) from inventory_snapshots as m
                              where m.organization_id = s.organization_id
                                and m.rooftop_id = s.rooftop_id)
             order by organization_id, rooftop_id"
        )))
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        rows.iter().map(snapshot_from_row).collect()
    }

    async fn snapshot_history(
        &self,
        organization_id: &str,
        rooftop_id: &str,
        limit: u32,
    ) -> Result<Vec<SnapshotRecord>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {SNAPSHOT_COLUMNS} from inventory_snapshots
             where organization_id = ? and rooftop_id = ?
             order by version desc limit ?"
        )))
        .bind(organization_id)
        .bind(rooftop_id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        rows.iter().map(snapshot_from_row).collect()
    }

    async fn snapshot_vehicles(&self, snapshot_id: &str) -> Result<Vec<VehicleRecord>, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(map_sqlx_error)?;
        read_vehicles(&mut conn, snapshot_id).await
    }

    async fn prune_snapshots(&self, superseded_before: DateTime<Utc>) -> Result<u64, StoreError> {
        // `begin immediate`: a deferred write could fail to upgrade its read
        // lock when another writer commits in between.
        let mut tx = self
            .pool
            .begin_with("begin immediate")
            .await
            .map_err(map_sqlx_error)?;
        // A snapshot's successor is the next version of its rooftop; the
        // newest has none, the subquery is null and the comparison false.
        let deleted = sqlx::query(
            "delete from inventory_snapshots
             where (select n.created_at from inventory_snapshots as n
                    where n.organization_id = inventory_snapshots.organization_id
                      and n.rooftop_id = inventory_snapshots.rooftop_id
                      and n.version > inventory_snapshots.version
                    order by n.version limit 1) < ?",
        )
        .bind(timestamp(superseded_before))
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?
        .rows_affected();
        tx.commit().await.map_err(map_sqlx_error)?;
        Ok(deleted)
    }

    async fn create_api_token(&self, token: &ApiTokenRecord) -> Result<(), StoreError> {
        let rooftops = json_text(&token.rooftops)?;
        let scopes = json_text(&token.scopes)?;
        let mut tx = self
            .pool
            .begin_with("begin immediate")
            .await
            .map_err(map_sqlx_error)?;
        let org: Option<i64> =
            sqlx::query_scalar("select 1 from organizations where organization_id = ?")
                .bind(&token.organization_id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
        let kept: Vec<String> =
            sqlx::query_scalar("select rooftop_id from rooftops where organization_id = ?")
                .bind(&token.organization_id)
                .fetch_all(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
        check_api_token(token, org.map(|_| kept.as_slice()))?;
        sqlx::query(
            "insert into api_tokens (token_id, secret_hash, subject, organization_id, rooftops,
                 scopes, purpose, created_at, expires_at, revoked_at)
             values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&token.token_id)
        .bind(&token.secret_hash)
        .bind(&token.subject)
        .bind(&token.organization_id)
        .bind(rooftops)
        .bind(scopes)
        .bind(&token.purpose)
        .bind(timestamp(token.created_at))
        .bind(timestamp(token.expires_at))
        .bind(token.revoked_at.map(timestamp))
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        tx.commit().await.map_err(map_sqlx_error)
    }

    async fn get_api_token(&self, token_id: &str) -> Result<Option<ApiTokenRecord>, StoreError> {
        sqlx::query(AssertSqlSafe(format!(
            "select {API_TOKEN_COLUMNS} from api_tokens where token_id = ?"
        )))
        .bind(token_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(map_sqlx_error)?
        .as_ref()
        .map(api_token_from_row)
        .transpose()
    }

    async fn list_api_tokens(&self) -> Result<Vec<ApiTokenRecord>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {API_TOKEN_COLUMNS} from api_tokens order by created_at, token_id"
        )))
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        rows.iter().map(api_token_from_row).collect()
    }

    async fn revoke_api_token(
        &self,
        token_id: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let matched = sqlx::query(
            "update api_tokens set revoked_at = coalesce(revoked_at, ?) where token_id = ?",
        )
        .bind(timestamp(at))
        .bind(token_id)
        .execute(&self.pool)
        .await
        .map_err(map_sqlx_error)?
        .rows_affected();
        Ok(matched > 0)
    }

    async fn append_audit(&self, event: &AuditEvent) -> Result<(), StoreError> {
        insert_audit(&self.pool, event).await
    }

    async fn count_audit(
        &self,
        count: &AuditCount,
        max_keys_per_window: u32,
    ) -> Result<(), StoreError> {
        let count = count.bounded();
        let window = timestamp(count.window_start);
        let last_at = timestamp(count.last_at);
        let increment = i64::try_from(count.count).unwrap_or(i64::MAX);
        // `begin immediate`: the key count below must still hold at insert.
        let mut tx = self
            .pool
            .begin_with("begin immediate")
            .await
            .map_err(map_sqlx_error)?;
        let updated = sqlx::query(
            "update audit_counters set count = count + ?, last_at = max(last_at, ?)
             where window_start = ? and client_network = ? and tool = ? and outcome = ?",
        )
        .bind(increment)
        .bind(&last_at)
        .bind(&window)
        .bind(&count.client_network)
        .bind(&count.tool)
        .bind(&count.outcome)
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?
        .rows_affected();
        if updated == 0 {
            let keys: i64 =
                sqlx::query_scalar("select count(*) from audit_counters where window_start = ?")
                    .bind(&window)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(map_sqlx_error)?;
            let network = if keys >= i64::from(max_keys_per_window) {
                OVERFLOW_NETWORK
            } else {
                count.client_network.as_str()
            };
            sqlx::query(
                "insert into audit_counters (window_start, client_network, tool, outcome,
                     profile, policy_decision, count, first_trace_id, last_at)
                 values (?, ?, ?, ?, ?, ?, ?, ?, ?)
                 on conflict (window_start, client_network, tool, outcome) do update set
                     count = audit_counters.count + excluded.count,
                     last_at = max(audit_counters.last_at, excluded.last_at)",
            )
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
            .await
            .map_err(map_sqlx_error)?;
        }
        tx.commit().await.map_err(map_sqlx_error)
    }

    async fn audit_counts_since(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<AuditCount>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {AUDIT_COUNTER_COLUMNS} from audit_counters where window_start >= ?
             order by window_start, client_network, tool, outcome limit ?"
        )))
        .bind(timestamp(since))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        rows.iter().map(audit_count_from_row).collect()
    }

    async fn audit_counts_after(
        &self,
        last: &AuditCount,
        limit: u32,
    ) -> Result<Vec<AuditCount>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {AUDIT_COUNTER_COLUMNS} from audit_counters
             where (window_start, client_network, tool, outcome) > (?, ?, ?, ?)
             order by window_start, client_network, tool, outcome limit ?"
        )))
        .bind(timestamp(last.window_start))
        .bind(&last.client_network)
        .bind(&last.tool)
        .bind(&last.outcome)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        rows.iter().map(audit_count_from_row).collect()
    }

    async fn audit_footprint(&self) -> Result<AuditFootprint, StoreError> {
        // `length(cast(x as blob))` is the byte length of text.
        let (events, event_bytes): (i64, i64) = sqlx::query_as(
            "select count(*), coalesce(sum(
                 length(cast(event_id as blob)) + length(cast(occurred_at as blob))
                 + length(cast(trace_id as blob)) + length(cast(subject as blob))
                 + coalesce(length(cast(credential as blob)), 0)
                 + coalesce(length(cast(organization_id as blob)), 0)
                 + length(cast(rooftop_ids as blob)) + length(cast(tool as blob))
                 + length(cast(profile as blob)) + length(cast(policy_decision as blob))
                 + length(cast(resource_ids as blob)) + length(cast(outcome as blob))
                 + length(cast(delegation as blob))), 0)
             from audit_events",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        let (counters, counter_bytes): (i64, i64) = sqlx::query_as(
            "select count(*), coalesce(sum(
                 length(cast(window_start as blob)) + length(cast(client_network as blob))
                 + length(cast(tool as blob)) + length(cast(outcome as blob))
                 + length(cast(profile as blob)) + length(cast(policy_decision as blob))
                 + 8 + length(cast(first_trace_id as blob)) + length(cast(last_at as blob))), 0)
             from audit_counters",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
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
        let cutoff = timestamp(older_than);
        let batch = i64::try_from(AUDIT_PRUNE_BATCH).unwrap_or(i64::MAX);
        let mut summary = AuditPruneSummary::default();
        loop {
            let n = sqlx::query(
                "delete from audit_events where event_id in
                     (select event_id from audit_events where occurred_at < ?
                      order by occurred_at, event_id limit ?)",
            )
            .bind(&cutoff)
            .bind(batch)
            .execute(&self.pool)
            .await
            .map_err(map_sqlx_error)?
            .rows_affected();
            summary.events_expired += n;
            if n < AUDIT_PRUNE_BATCH {
                break;
            }
        }
        loop {
            let n = sqlx::query(
                "delete from audit_counters where (window_start, client_network, tool, outcome) in
                     (select window_start, client_network, tool, outcome from audit_counters
                      where window_start < ? order by window_start limit ?)",
            )
            .bind(&cutoff)
            .bind(batch)
            .execute(&self.pool)
            .await
            .map_err(map_sqlx_error)?
            .rows_affected();
            summary.counters_expired += n;
            if n < AUDIT_PRUNE_BATCH {
                break;
            }
        }
        let max_events = i64::try_from(max_events).unwrap_or(i64::MAX);
        loop {
            let mut tx = self
                .pool
                .begin_with("begin immediate")
                .await
                .map_err(map_sqlx_error)?;
            let total: i64 = sqlx::query_scalar("select count(*) from audit_events")
                .fetch_one(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
            let excess = (total - max_events).min(batch);
            if excess <= 0 {
                tx.commit().await.map_err(map_sqlx_error)?;
                break;
            }
            // The newest of the `excess` oldest events: delete up to it.
            let (at, id): (String, String) = sqlx::query_as(
                "select occurred_at, event_id from audit_events
                 order by occurred_at, event_id limit 1 offset ?",
            )
            .bind(excess - 1)
            .fetch_one(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            let n = sqlx::query("delete from audit_events where (occurred_at, event_id) <= (?, ?)")
                .bind(&at)
                .bind(&id)
                .execute(&mut *tx)
                .await
                .map_err(map_sqlx_error)?
                .rows_affected();
            tx.commit().await.map_err(map_sqlx_error)?;
            summary.events_over_limit += n;
            summary.events_pruned_through = Some(parse_timestamp(&at)?);
        }
        let max_counters = i64::try_from(max_counters).unwrap_or(i64::MAX);
        loop {
            let mut tx = self
                .pool
                .begin_with("begin immediate")
                .await
                .map_err(map_sqlx_error)?;
            let total: i64 = sqlx::query_scalar("select count(*) from audit_counters")
                .fetch_one(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
            let excess = (total - max_counters).min(batch);
            if excess <= 0 {
                tx.commit().await.map_err(map_sqlx_error)?;
                break;
            }
            let (window, network, tool, outcome): (String, String, String, String) =
                sqlx::query_as(
                    "select window_start, client_network, tool, outcome from audit_counters
                     order by window_start, client_network, tool, outcome limit 1 offset ?",
                )
                .bind(excess - 1)
                .fetch_one(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
            let n = sqlx::query(
                "delete from audit_counters
                 where (window_start, client_network, tool, outcome) <= (?, ?, ?, ?)",
            )
            .bind(&window)
            .bind(&network)
            .bind(&tool)
            .bind(&outcome)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?
            .rows_affected();
            tx.commit().await.map_err(map_sqlx_error)?;
            summary.counters_over_limit += n;
            summary.counters_pruned_through = Some(parse_timestamp(&window)?);
        }
        Ok(summary)
    }

    async fn audit_since(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<AuditEvent>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {AUDIT_COLUMNS} from audit_events where occurred_at >= ?
             order by occurred_at, event_id limit ?"
        )))
        .bind(timestamp(since))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        rows.iter().map(audit_from_row).collect()
    }

    async fn audit_after(
        &self,
        occurred_at: DateTime<Utc>,
        event_id: &str,
        limit: u32,
    ) -> Result<Vec<AuditEvent>, StoreError> {
        // Row-value comparison: one range scan of the (occurred_at, event_id) index.
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {AUDIT_COLUMNS} from audit_events where (occurred_at, event_id) > (?, ?)
             order by occurred_at, event_id limit ?"
        )))
        .bind(timestamp(occurred_at))
        .bind(event_id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        rows.iter().map(audit_from_row).collect()
    }

    async fn change_programs(
        &self,
        organization_id: &str,
        change: ProgramsChange<'_>,
        check: ProgramSetCheck<'_>,
        audit: Option<&AuditEvent>,
        dry_run: bool,
    ) -> Result<ProgramsImportSummary, StoreError> {
        // `begin immediate`: the rows read below stay as read until commit,
        // so the set `check` judged is the set written.
        let mut tx = self
            .pool
            .begin_with("begin immediate")
            .await
            .map_err(map_sqlx_error)?;
        let known: i64 =
            sqlx::query_scalar("select count(*) from organizations where organization_id = ?")
                .bind(organization_id)
                .fetch_one(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
        if known == 0 {
            return Err(programs_organization_missing(organization_id));
        }
        let rows = sqlx::query(
            "select program_id, revision, doc, rule_hash, imported_at, source, withdrawn_at
             from incentive_programs where organization_id = ?
             order by program_id, revision",
        )
        .bind(organization_id)
        .fetch_all(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        let stored = rows
            .iter()
            .map(|row| {
                let withdrawn: Option<String> =
                    row.try_get("withdrawn_at").map_err(map_sqlx_error)?;
                Ok(StoredProgram {
                    record: program_from_row(row)?,
                    withdrawn: withdrawn.is_some(),
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let plan = plan_programs_change(organization_id, &stored, change, check)?;
        if dry_run {
            return Ok(plan.summary);
        }
        for record in &plan.inserts {
            sqlx::query(
                "insert into incentive_programs (organization_id, program_id, revision,
                     doc, rule_hash, imported_at, source)
                 values (?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(organization_id)
            .bind(&record.program_id)
            .bind(i64::from(record.revision))
            .bind(json_text(&record.doc)?)
            .bind(&record.rule_hash)
            .bind(timestamp(record.imported_at))
            .bind(json_text(&record.source)?)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
        }
        let now = timestamp(Utc::now());
        for w in &plan.withdraw {
            sqlx::query(
                "update incentive_programs set withdrawn_at = ?
                 where organization_id = ? and program_id = ? and revision = ?
                   and withdrawn_at is null",
            )
            .bind(&now)
            .bind(organization_id)
            .bind(&w.program_id)
            .bind(i64::from(w.revision))
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
        }
        if let Some(audit) = audit {
            insert_audit(&mut *tx, &programs_audit_event(audit, &plan)).await?;
        }
        tx.commit().await.map_err(map_sqlx_error)?;
        Ok(plan.summary)
    }

    async fn current_programs(
        &self,
        organization_id: &str,
    ) -> Result<Vec<ProgramRecord>, StoreError> {
        let rows = sqlx::query(
            "select program_id, revision, doc, rule_hash, imported_at, source
             from incentive_programs
             where organization_id = ? and withdrawn_at is null
             order by program_id, revision",
        )
        .bind(organization_id)
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        rows.iter().map(program_from_row).collect()
    }

    async fn record_availability(
        &self,
        observation: &AvailabilityObservation,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "insert into availability_observations (observation_id, organization_id,
                 rooftop_id, vehicle_id, status, authority, observed_at, source, checked_at)
             values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(uuid::Uuid::now_v7().to_string())
        .bind(&observation.organization_id)
        .bind(&observation.rooftop_id)
        .bind(&observation.vehicle_id)
        .bind(&observation.status)
        .bind(&observation.authority)
        .bind(timestamp(observation.observed_at))
        .bind(json_text(&observation.source)?)
        .bind(timestamp(observation.checked_at))
        .execute(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
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
             from availability_observations where rooftop_id = ? and vehicle_id = ?
             order by observed_at desc, checked_at desc limit 1",
        )
        .bind(rooftop_id)
        .bind(vehicle_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let observed_at: String = row.try_get("observed_at").map_err(map_sqlx_error)?;
        let checked_at: String = row.try_get("checked_at").map_err(map_sqlx_error)?;
        let source: Json<ObservationSource> = row.try_get("source").map_err(map_sqlx_error)?;
        Ok(Some(AvailabilityObservation {
            organization_id: row.try_get("organization_id").map_err(map_sqlx_error)?,
            rooftop_id: row.try_get("rooftop_id").map_err(map_sqlx_error)?,
            vehicle_id: row.try_get("vehicle_id").map_err(map_sqlx_error)?,
            status: row.try_get("status").map_err(map_sqlx_error)?,
            authority: row.try_get("authority").map_err(map_sqlx_error)?,
            observed_at: parse_timestamp(&observed_at)?,
            source: source.0,
            checked_at: parse_timestamp(&checked_at)?,
        }))
    }

    /// SQLite has no notification channel: every reader polls (its
    /// refresh intervals) — the fallback PostgreSQL replicas keep too.
    fn subscribe_changes(&self) -> Option<tokio::sync::mpsc::Receiver<StoreChange>> {
        None
    }

    async fn create_legacy_session(
        &self,
        session: &LegacySessionRecord,
        max_sessions: u32,
        idle_before: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        // The write lock up front: creations (from every process on this
        // file) are serialised, so the bound counted below holds at commit.
        let mut tx = self
            .pool
            .begin_with("begin immediate")
            .await
            .map_err(map_sqlx_error)?;
        sqlx::query("delete from legacy_sessions where last_seen < ?")
            .bind(timestamp(idle_before))
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
        let stored: i64 = sqlx::query_scalar("select count(*) from legacy_sessions")
            .fetch_one(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
        let max = i64::from(max_sessions.max(1));
        let excess = stored - max + 1;
        if excess > 0 {
            sqlx::query(
                "delete from legacy_sessions where session_key in (
                     select session_key from legacy_sessions
                     order by last_seen, created_at, session_key limit ?)",
            )
            .bind(excess)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
        }
        sqlx::query(
            "insert into legacy_sessions (session_key, protocol_version, initialized,
                 created_at, last_seen)
             values (?, ?, ?, ?, ?)",
        )
        .bind(&session.key)
        .bind(&session.protocol_version)
        .bind(i64::from(session.initialized))
        .bind(timestamp(session.created_at))
        .bind(timestamp(session.last_seen))
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        tx.commit().await.map_err(map_sqlx_error)?;
        Ok(u64::try_from(stored.min(max - 1) + 1).unwrap_or(0))
    }

    async fn legacy_session(&self, key: &str) -> Result<Option<LegacySessionRecord>, StoreError> {
        let row = sqlx::query(
            "select session_key, protocol_version, initialized, created_at, last_seen
             from legacy_sessions where session_key = ?",
        )
        .bind(key)
        .fetch_optional(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let initialized: i64 = row.try_get("initialized").map_err(map_sqlx_error)?;
        let created_at: String = row.try_get("created_at").map_err(map_sqlx_error)?;
        let last_seen: String = row.try_get("last_seen").map_err(map_sqlx_error)?;
        Ok(Some(LegacySessionRecord {
            key: row.try_get("session_key").map_err(map_sqlx_error)?,
            protocol_version: row.try_get("protocol_version").map_err(map_sqlx_error)?,
            initialized: initialized != 0,
            created_at: parse_timestamp(&created_at)?,
            last_seen: parse_timestamp(&last_seen)?,
        }))
    }

    async fn touch_legacy_session(&self, key: &str, at: DateTime<Utc>) -> Result<bool, StoreError> {
        // Fixed-width RFC 3339 text compares as the times do.
        let matched = sqlx::query(
            "update legacy_sessions set last_seen = max(last_seen, ?) where session_key = ?",
        )
        .bind(timestamp(at))
        .bind(key)
        .execute(&self.pool)
        .await
        .map_err(map_sqlx_error)?
        .rows_affected();
        Ok(matched > 0)
    }

    async fn initialize_legacy_session(
        &self,
        key: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let matched = sqlx::query(
            "update legacy_sessions set initialized = 1, last_seen = max(last_seen, ?)
             where session_key = ?",
        )
        .bind(timestamp(at))
        .bind(key)
        .execute(&self.pool)
        .await
        .map_err(map_sqlx_error)?
        .rows_affected();
        Ok(matched > 0)
    }

    async fn delete_legacy_session(&self, key: &str) -> Result<bool, StoreError> {
        let deleted = sqlx::query("delete from legacy_sessions where session_key = ?")
            .bind(key)
            .execute(&self.pool)
            .await
            .map_err(map_sqlx_error)?
            .rows_affected();
        Ok(deleted > 0)
    }

    async fn count_legacy_sessions(&self) -> Result<u64, StoreError> {
        let stored: i64 = sqlx::query_scalar("select count(*) from legacy_sessions")
            .fetch_one(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
        Ok(u64::try_from(stored).unwrap_or(0))
    }
}

/// A row of [`API_TOKEN_COLUMNS`].
fn api_token_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<ApiTokenRecord, StoreError> {
    let rooftops: Json<RooftopScope> = row.try_get("rooftops").map_err(map_sqlx_error)?;
    let scopes: Json<BTreeSet<String>> = row.try_get("scopes").map_err(map_sqlx_error)?;
    let created_at: String = row.try_get("created_at").map_err(map_sqlx_error)?;
    let expires_at: String = row.try_get("expires_at").map_err(map_sqlx_error)?;
    let revoked_at: Option<String> = row.try_get("revoked_at").map_err(map_sqlx_error)?;
    Ok(ApiTokenRecord {
        token_id: row.try_get("token_id").map_err(map_sqlx_error)?,
        secret_hash: row.try_get("secret_hash").map_err(map_sqlx_error)?,
        subject: row.try_get("subject").map_err(map_sqlx_error)?,
        organization_id: row.try_get("organization_id").map_err(map_sqlx_error)?,
        rooftops: rooftops.0,
        scopes: scopes.0,
        purpose: row.try_get("purpose").map_err(map_sqlx_error)?,
        created_at: parse_timestamp(&created_at)?,
        expires_at: parse_timestamp(&expires_at)?,
        revoked_at: revoked_at.as_deref().map(parse_timestamp).transpose()?,
    })
}

/// A row of [`AUDIT_COUNTER_COLUMNS`].
fn audit_count_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<AuditCount, StoreError> {
    let window_start: String = row.try_get("window_start").map_err(map_sqlx_error)?;
    let last_at: String = row.try_get("last_at").map_err(map_sqlx_error)?;
    let count: i64 = row.try_get("count").map_err(map_sqlx_error)?;
    Ok(AuditCount {
        window_start: parse_timestamp(&window_start)?,
        client_network: row.try_get("client_network").map_err(map_sqlx_error)?,
        tool: row.try_get("tool").map_err(map_sqlx_error)?,
        outcome: row.try_get("outcome").map_err(map_sqlx_error)?,
        profile: row.try_get("profile").map_err(map_sqlx_error)?,
        policy_decision: row.try_get("policy_decision").map_err(map_sqlx_error)?,
        count: u64::try_from(count)
            .map_err(|_| StoreError::Corrupt(format!("audit counter count {count}")))?,
        first_trace_id: row.try_get("first_trace_id").map_err(map_sqlx_error)?,
        last_at: parse_timestamp(&last_at)?,
    })
}

/// A row of [`AUDIT_COLUMNS`].
fn audit_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<AuditEvent, StoreError> {
    let occurred_at: String = row.try_get("occurred_at").map_err(map_sqlx_error)?;
    let credential: Option<Json<Credential>> = row.try_get("credential").map_err(map_sqlx_error)?;
    let rooftop_ids: Json<Vec<String>> = row.try_get("rooftop_ids").map_err(map_sqlx_error)?;
    let resource_ids: Json<Vec<String>> = row.try_get("resource_ids").map_err(map_sqlx_error)?;
    let delegation: Json<Vec<String>> = row.try_get("delegation").map_err(map_sqlx_error)?;
    Ok(AuditEvent {
        event_id: row.try_get("event_id").map_err(map_sqlx_error)?,
        occurred_at: parse_timestamp(&occurred_at)?,
        trace_id: row.try_get("trace_id").map_err(map_sqlx_error)?,
        subject: row.try_get("subject").map_err(map_sqlx_error)?,
        credential: credential.map(|Json(c)| c),
        organization_id: row.try_get("organization_id").map_err(map_sqlx_error)?,
        rooftop_ids: rooftop_ids.0,
        tool: row.try_get("tool").map_err(map_sqlx_error)?,
        profile: row.try_get("profile").map_err(map_sqlx_error)?,
        policy_decision: row.try_get("policy_decision").map_err(map_sqlx_error)?,
        resource_ids: resource_ids.0,
        outcome: row.try_get("outcome").map_err(map_sqlx_error)?,
        delegation: delegation.0,
    })
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

/// `insert into vehicles` of `rows` rows; `?1` is the snapshot id.
fn vehicle_insert_sql(rows: usize) -> String {
    use std::fmt::Write as _;
    let mut sql = String::with_capacity(80 + rows * 24);
    sql.push_str("insert into vehicles (snapshot_id, vehicle_id, vin, stock_number, doc) values ");
    for row in 0..rows {
        let first = 2 + 4 * row;
        if row > 0 {
            sql.push_str(", ");
        }
        write!(
            sql,
            "(?1, ?{}, ?{}, ?{}, ?{})",
            first,
            first + 1,
            first + 2,
            first + 3
        )
        .expect("write to a String");
    }
    sql
}

async fn read_vehicles(
    conn: &mut SqliteConnection,
    snapshot_id: &str,
) -> Result<Vec<VehicleRecord>, StoreError> {
    let docs: Vec<Json<VehicleRecord>> =
        sqlx::query_scalar("select doc from vehicles where snapshot_id = ? order by vehicle_id")
            .bind(snapshot_id)
            .fetch_all(&mut *conn)
            .await
            .map_err(map_sqlx_error)?;
    Ok(docs.into_iter().map(|Json(vehicle)| vehicle).collect())
}

/// A row of [`SNAPSHOT_COLUMNS`].
fn snapshot_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<SnapshotRecord, StoreError> {
    let created_at: String = row.try_get("created_at").map_err(map_sqlx_error)?;
    let source: Json<SourceRecord> = row.try_get("source").map_err(map_sqlx_error)?;
    let summary: Json<InventoryImportSummary> = row.try_get("summary").map_err(map_sqlx_error)?;
    let vehicle_count: i64 = row.try_get("vehicle_count").map_err(map_sqlx_error)?;
    Ok(SnapshotRecord {
        snapshot_id: row.try_get("snapshot_id").map_err(map_sqlx_error)?,
        organization_id: row.try_get("organization_id").map_err(map_sqlx_error)?,
        rooftop_id: row.try_get("rooftop_id").map_err(map_sqlx_error)?,
        version: row.try_get("version").map_err(map_sqlx_error)?,
        created_at: parse_timestamp(&created_at)?,
        source: source.0,
        vehicle_count: u32::try_from(vehicle_count).map_err(|_| {
            StoreError::Corrupt(format!(
                "stored vehicle_count {vehicle_count} is out of range"
            ))
        })?,
        summary: summary.0,
    })
}

async fn read_secret(pool: &SqlitePool, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
    sqlx::query_scalar("select value from gateway_secrets where name = ?")
        .bind(name)
        .fetch_optional(pool)
        .await
        .map_err(map_sqlx_error)
}

async fn load_organization(
    conn: &mut SqliteConnection,
    organization_id: &str,
) -> Result<Option<OrganizationRecord>, StoreError> {
    let Some(row) = sqlx::query(
        "select organization_id, name, legal_name, extensions, source
         from organizations where organization_id = ?",
    )
    .bind(organization_id)
    .fetch_optional(&mut *conn)
    .await
    .map_err(map_sqlx_error)?
    else {
        return Ok(None);
    };
    let mut org = organization_from_row(&row)?;
    let rooftop_rows = sqlx::query(
        "select rooftop_id, dap, settings
         from rooftops where organization_id = ? order by position",
    )
    .bind(organization_id)
    .fetch_all(&mut *conn)
    .await
    .map_err(map_sqlx_error)?;
    org.rooftops = rooftop_rows
        .iter()
        .map(rooftop_from_row)
        .collect::<Result<_, _>>()?;
    Ok(Some(org))
}

/// An organization row, without its rooftops.
fn organization_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<OrganizationRecord, StoreError> {
    let extensions: Option<Json<serde_json::Value>> =
        row.try_get("extensions").map_err(map_sqlx_error)?;
    let source: Json<SourceRecord> = row.try_get("source").map_err(map_sqlx_error)?;
    Ok(OrganizationRecord {
        organization_id: row.try_get("organization_id").map_err(map_sqlx_error)?,
        name: row.try_get("name").map_err(map_sqlx_error)?,
        legal_name: row.try_get("legal_name").map_err(map_sqlx_error)?,
        extensions: extensions.map(|Json(value)| value),
        rooftops: Vec::new(),
        source: source.0,
    })
}

fn rooftop_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<RooftopRecord, StoreError> {
    let dap: Json<serde_json::Value> = row.try_get("dap").map_err(map_sqlx_error)?;
    let settings: Json<RooftopSettings> = row.try_get("settings").map_err(map_sqlx_error)?;
    Ok(RooftopRecord {
        rooftop_id: row.try_get("rooftop_id").map_err(map_sqlx_error)?,
        dap: dap.0,
        settings: settings.0,
    })
}

/// Fail with a readable error when a rooftop this organization adds is kept
/// by another organization (after this import's removals).
async fn check_rooftops_free(
    conn: &mut SqliteConnection,
    plan: &OrganizationPlan<'_>,
) -> Result<(), StoreError> {
    for rooftop in plan.rooftops.iter().filter(|r| r.change == Change::Added) {
        let owner: Option<String> =
            sqlx::query_scalar("select organization_id from rooftops where rooftop_id = ?")
                .bind(&rooftop.rooftop.rooftop_id)
                .fetch_optional(&mut *conn)
                .await
                .map_err(map_sqlx_error)?;
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
    conn: &mut SqliteConnection,
    plan: &OrganizationPlan<'_>,
    now: &str,
) -> Result<(), StoreError> {
    let org = plan.org;
    let extensions = org.extensions.as_ref().map(json_text).transpose()?;
    let source = json_text(&org.source)?;
    // `updated_at` moves only when the content changed; `source` always
    // records the latest import.
    let updated_at = (plan.change != Change::Unchanged).then_some(now);
    sqlx::query(
        "insert into organizations
             (organization_id, name, legal_name, extensions, source, created_at, updated_at)
         values (?1, ?2, ?3, ?4, ?5, ?6, ?6)
         on conflict (organization_id) do update set
             name = excluded.name,
             legal_name = excluded.legal_name,
             extensions = excluded.extensions,
             source = excluded.source,
             updated_at = coalesce(?7, organizations.updated_at)",
    )
    .bind(&org.organization_id)
    .bind(&org.name)
    .bind(&org.legal_name)
    .bind(extensions)
    .bind(source)
    .bind(now)
    .bind(updated_at)
    .execute(&mut *conn)
    .await
    .map_err(map_sqlx_error)?;

    for rooftop in plan.rooftops.iter().filter(|r| r.rewrite) {
        sqlx::query(
            "insert into rooftops (organization_id, rooftop_id, position, dap, settings)
             values (?, ?, ?, ?, ?)
             on conflict (organization_id, rooftop_id) do update set
                 position = excluded.position,
                 dap = excluded.dap,
                 settings = excluded.settings",
        )
        .bind(&org.organization_id)
        .bind(&rooftop.rooftop.rooftop_id)
        .bind(rooftop.position)
        .bind(json_text(&rooftop.rooftop.dap)?)
        .bind(json_text(&rooftop.rooftop.settings)?)
        .execute(&mut *conn)
        .await
        .map_err(map_sqlx_error)?;
    }
    Ok(())
}

/// Insert one audit event ([`AuditEvent::bounded`]) through `executor` (the
/// pool, or a transaction that writes together with it).
async fn insert_audit<'e, E>(executor: E, event: &AuditEvent) -> Result<(), StoreError>
where
    E: sqlx::Executor<'e, Database = sqlx::Sqlite>,
{
    let event = &event.bounded();
    sqlx::query(
        "insert into audit_events (event_id, occurred_at, trace_id, subject, credential,
             organization_id, rooftop_ids, tool, profile, policy_decision, resource_ids,
             outcome, delegation)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&event.event_id)
    .bind(timestamp(event.occurred_at))
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
    .execute(executor)
    .await
    .map_err(map_sqlx_error)?;
    Ok(())
}

/// One `incentive_programs` row.
fn program_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<ProgramRecord, StoreError> {
    let revision: i64 = row.try_get("revision").map_err(map_sqlx_error)?;
    let imported_at: String = row.try_get("imported_at").map_err(map_sqlx_error)?;
    let doc: Json<serde_json::Value> = row.try_get("doc").map_err(map_sqlx_error)?;
    let source: Json<SourceRecord> = row.try_get("source").map_err(map_sqlx_error)?;
    Ok(ProgramRecord {
        program_id: row.try_get("program_id").map_err(map_sqlx_error)?,
        revision: u32::try_from(revision)
            .map_err(|_| StoreError::Corrupt(format!("revision {revision}")))?,
        doc: doc.0,
        rule_hash: row.try_get("rule_hash").map_err(map_sqlx_error)?,
        imported_at: parse_timestamp(&imported_at)?,
        source: source.0,
    })
}

/// [`SnapshotTx`] in SQLite's dialect.
struct SqliteSnapshotTx(sqlx::Transaction<'static, sqlx::Sqlite>);

#[async_trait::async_trait]
impl SnapshotTx for SqliteSnapshotTx {
    async fn lock_rooftop(
        &mut self,
        organization_id: &str,
        rooftop_id: &str,
    ) -> Result<(), StoreError> {
        // The write lock is already held (`begin immediate`); only the
        // ownership check remains.
        let kept: Option<i64> = sqlx::query_scalar(
            "select 1 from rooftops where organization_id = ? and rooftop_id = ?",
        )
        .bind(organization_id)
        .bind(rooftop_id)
        .fetch_optional(&mut *self.0)
        .await
        .map_err(map_sqlx_error)?;
        if kept.is_some() {
            return Ok(());
        }
        let owner: Option<String> =
            sqlx::query_scalar("select organization_id from rooftops where rooftop_id = ?")
                .bind(rooftop_id)
                .fetch_optional(&mut *self.0)
                .await
                .map_err(map_sqlx_error)?;
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
             where organization_id = ? and rooftop_id = ?
             order by version desc limit 1",
        )
        .bind(organization_id)
        .bind(rooftop_id)
        .fetch_optional(&mut *self.0)
        .await
        .map_err(map_sqlx_error)?;
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
        sqlx::query(
            "insert into inventory_snapshots (snapshot_id, organization_id, rooftop_id, version,
                 created_at, source, vehicle_count, summary)
             values (?, ?, ?, ?, ?, ?, 0, '{}')",
        )
        .bind(&snapshot.snapshot_id)
        .bind(&snapshot.organization_id)
        .bind(&snapshot.rooftop_id)
        .bind(snapshot.version)
        .bind(timestamp(snapshot.created_at))
        .bind(source_text)
        .execute(&mut *self.0)
        .await
        .map_err(map_sqlx_error)?;
        Ok(())
    }

    async fn documents(
        &mut self,
        snapshot_id: &str,
        ids: &[&str],
    ) -> Result<Vec<VehicleRecord>, StoreError> {
        // One statement text for every batch: the ids travel as one JSON
        // array, unpacked by `json_each`.
        let docs: Vec<Json<VehicleRecord>> = sqlx::query_scalar(
            "select doc from vehicles
             where snapshot_id = ? and vehicle_id in (select value from json_each(?))",
        )
        .bind(snapshot_id)
        .bind(json_text(ids)?)
        .fetch_all(&mut *self.0)
        .await
        .map_err(map_sqlx_error)?;
        Ok(docs.into_iter().map(|Json(v)| v).collect())
    }

    async fn insert_vehicles(
        &mut self,
        snapshot_id: &str,
        batch: &[(VehicleRecord, String)],
    ) -> Result<(), StoreError> {
        for rows in batch.chunks(VEHICLE_INSERT_BATCH) {
            // Full batches share one SQL text, hence one cached prepared statement.
            let mut query =
                sqlx::query(AssertSqlSafe(vehicle_insert_sql(rows.len()))).bind(snapshot_id);
            for (vehicle, doc) in rows {
                query = query
                    .bind(&vehicle.vehicle_id)
                    .bind(&vehicle.vin)
                    .bind(&vehicle.stock_number)
                    .bind(doc);
            }
            query.execute(&mut *self.0).await.map_err(map_sqlx_error)?;
        }
        Ok(())
    }

    async fn finish_snapshot(
        &mut self,
        snapshot_id: &str,
        vehicle_count: u32,
        summary_text: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "update inventory_snapshots set vehicle_count = ?, summary = ? where snapshot_id = ?",
        )
        .bind(i64::from(vehicle_count))
        .bind(summary_text)
        .bind(snapshot_id)
        .execute(&mut *self.0)
        .await
        .map_err(map_sqlx_error)?;
        Ok(())
    }
}
