//! PostgreSQL backend: the shared store for several gateway replicas.
//!
//! Schema: `migrations/postgres/`. Timestamps are `timestamptz`. JSON
//! documents are `json`, not `jsonb`, to keep their key order (see the
//! migration's header), so they are bound as text and cast with `::json`:
//! binding `sqlx::types::Json` would declare the parameter `jsonb` and
//! reorder the keys on the way in.

use std::collections::BTreeSet;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions, PgRow};
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, Row as _};

use super::audit::OVERFLOW_NETWORK;
use super::snapshot_write::{
    PreviousSnapshot, SnapshotFeed, SnapshotPlan, SnapshotTx, write_snapshots,
};
use super::{
    AUDIT_LOCK_KEY, AUDIT_PRUNE_BATCH, ApiTokenRecord, AuditCount, AuditEvent, AuditFootprint,
    AuditPruneSummary, AvailabilityObservation, Change, DealersImportSummary, IMPORT_LOCK_KEY,
    ObservationSource, OrganizationPlan, OrganizationRecord, RooftopRecord, RooftopSettings,
    SnapshotRecord, SourceRecord, Store, StoreError, check_api_token, embedded_migrator, json_text,
    map_sqlx_error, plan_organization, rooftop_not_of_organization, rooftop_taken, summarize,
    validate_import,
};
use super::{CHANGE_CHANNEL, LegacySessionRecord, SESSION_LOCK_KEY, StoreChange};
use super::{
    ProgramRecord, ProgramSetCheck, ProgramsChange, ProgramsImportSummary, StoredProgram,
    plan_programs_change, programs_audit_event, programs_organization_missing,
};
use crate::domain::grant::{Credential, RooftopScope};
use crate::inventory::model::{InventoryImportSummary, VehicleRecord};

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

/// The PostgreSQL store.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pub(super) pool: PgPool,
    /// Where the change listener connects (its own connection, outside the
    /// pool, so `LISTEN` never takes one of the pool's).
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
        Ok(Self { pool, listen })
    }
}

/// Send `change` to every listening replica when the current transaction
/// of `executor` commits (`NOTIFY` is transactional: a rolled-back write
/// notifies nobody; issue 15 item 4).
async fn notify<'e, E>(executor: E, change: &StoreChange) -> Result<(), StoreError>
where
    E: sqlx::Executor<'e, Database = sqlx::Postgres>,
{
    sqlx::query("select pg_notify($1, $2)")
        .bind(CHANGE_CHANNEL)
        .bind(change.payload())
        .execute(executor)
        .await
        .map_err(map_sqlx_error)?;
    Ok(())
}

/// A `LISTEN` on [`CHANGE_CHANNEL`] over a connection of its own (a pool of
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
    listener.listen(CHANGE_CHANNEL).await?;
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

#[async_trait::async_trait]
impl Store for PostgresStore {
    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("select 1")
            .execute(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
        Ok(())
    }

    async fn is_empty(&self) -> Result<bool, StoreError> {
        let any: bool = sqlx::query_scalar("select exists (select 1 from organizations)")
            .fetch_one(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
        Ok(!any)
    }

    async fn upsert_organizations(
        &self,
        orgs: &[OrganizationRecord],
    ) -> Result<DealersImportSummary, StoreError> {
        validate_import(orgs)?;
        let now = Utc::now();
        let mut tx = self.pool.begin().await.map_err(map_sqlx_error)?;
        // One import at a time across replicas: the plan below is computed
        // from what this transaction reads.
        sqlx::query("select pg_advisory_xact_lock($1)")
            .bind(IMPORT_LOCK_KEY)
            .execute(&mut *tx)
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
                sqlx::query("delete from rooftops where organization_id = $1 and rooftop_id = $2")
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
            write_organization(&mut tx, plan, now).await?;
        }
        notify(&mut *tx, &StoreChange::Dealers).await?;
        tx.commit().await.map_err(map_sqlx_error)?;
        Ok(summarize(&plans))
    }

    async fn list_organizations(&self) -> Result<Vec<OrganizationRecord>, StoreError> {
        // One snapshot for both reads (read committed would allow an import
        // to land between them).
        let mut tx = self
            .pool
            .begin_with("begin isolation level repeatable read read only")
            .await
            .map_err(map_sqlx_error)?;
        let org_rows = sqlx::query(
            "select organization_id, name, legal_name, extensions, source
             from organizations order by organization_id",
        )
        .fetch_all(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        let rooftop_rows = sqlx::query(
            "select organization_id, rooftop_id, dap, settings
             from rooftops order by organization_id, position",
        )
        .fetch_all(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        tx.commit().await.map_err(map_sqlx_error)?;

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
        let mut tx = self
            .pool
            .begin_with("begin isolation level repeatable read read only")
            .await
            .map_err(map_sqlx_error)?;
        let org = load_organization(&mut tx, organization_id).await?;
        tx.commit().await.map_err(map_sqlx_error)?;
        Ok(org)
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
            "insert into gateway_secrets (name, value, created_at) values ($1, $2, $3)
             on conflict (name) do nothing",
        )
        .bind(name)
        .bind(generate())
        .bind(Utc::now())
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
        // Read committed; the rooftop row locks taken in `lock_rooftop`
        // serialise imports of those rooftops across replicas (others
        // proceed in parallel), and every later statement sees what the
        // previous holder committed, so the versions read are still the
        // newest at commit. A dry run takes the same locks, for the same
        // consistent view, and rolls back.
        let tx = self.pool.begin().await.map_err(map_sqlx_error)?;
        let mut tx = PgSnapshotTx(tx);
        let written = write_snapshots(&mut tx, plan, feed).await?;
        if !plan.dry_run {
            let change = StoreChange::Inventory {
                organization_id: plan.organization_id.to_owned(),
            };
            notify(&mut *tx.0, &change).await?;
            tx.0.commit().await.map_err(map_sqlx_error)?;
        }
        Ok(written)
    }

    async fn latest_snapshots(&self) -> Result<Vec<SnapshotRecord>, StoreError> {
        // `collate "C"`: byte order, as on SQLite.
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {SNAPSHOT_COLUMNS} from inventory_snapshots as s
             where version = (select max(m.version) from inventory_snapshots as m
                              where m.organization_id = s.organization_id
                                and m.rooftop_id = s.rooftop_id)
             order by organization_id collate \"C\", rooftop_id collate \"C\""
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
             where organization_id = $1 and rooftop_id = $2
             order by version desc limit $3"
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
        .bind(superseded_before)
        .execute(&self.pool)
        .await
        .map_err(map_sqlx_error)?
        .rows_affected();
        Ok(deleted)
    }

    async fn create_api_token(&self, token: &ApiTokenRecord) -> Result<(), StoreError> {
        let rooftops = json_text(&token.rooftops)?;
        let scopes = json_text(&token.scopes)?;
        let mut tx = self.pool.begin().await.map_err(map_sqlx_error)?;
        // `for key share`: the organization cannot be deleted before the
        // insert (the foreign key would catch it too, less readably).
        let org: Option<i32> = sqlx::query_scalar(
            "select 1 from organizations where organization_id = $1 for key share",
        )
        .bind(&token.organization_id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        let kept: Vec<String> =
            sqlx::query_scalar("select rooftop_id from rooftops where organization_id = $1")
                .bind(&token.organization_id)
                .fetch_all(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
        check_api_token(token, org.map(|_| kept.as_slice()))?;
        sqlx::query(
            "insert into api_tokens (token_id, secret_hash, subject, organization_id, rooftops,
                 scopes, purpose, created_at, expires_at, revoked_at)
             values ($1, $2, $3, $4, $5::json, $6::json, $7, $8, $9, $10)",
        )
        .bind(&token.token_id)
        .bind(&token.secret_hash)
        .bind(&token.subject)
        .bind(&token.organization_id)
        .bind(rooftops)
        .bind(scopes)
        .bind(&token.purpose)
        .bind(token.created_at)
        .bind(token.expires_at)
        .bind(token.revoked_at)
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        tx.commit().await.map_err(map_sqlx_error)
    }

    async fn get_api_token(&self, token_id: &str) -> Result<Option<ApiTokenRecord>, StoreError> {
        sqlx::query(AssertSqlSafe(format!(
            "select {API_TOKEN_COLUMNS} from api_tokens where token_id = $1"
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
        let mut tx = self.pool.begin().await.map_err(map_sqlx_error)?;
        let matched = sqlx::query(
            "update api_tokens set revoked_at = coalesce(revoked_at, $1) where token_id = $2",
        )
        .bind(at)
        .bind(token_id)
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?
        .rows_affected();
        if matched > 0 {
            notify(&mut *tx, &StoreChange::TokenRevoked).await?;
        }
        tx.commit().await.map_err(map_sqlx_error)?;
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
        let increment = i64::try_from(count.count).unwrap_or(i64::MAX);
        let mut tx = self.pool.begin().await.map_err(map_sqlx_error)?;
        let updated = sqlx::query(
            "update audit_counters set count = count + $1, last_at = greatest(last_at, $2)
             where window_start = $3 and client_network = $4 and tool = $5 and outcome = $6",
        )
        .bind(increment)
        .bind(count.last_at)
        .bind(count.window_start)
        .bind(&count.client_network)
        .bind(&count.tool)
        .bind(&count.outcome)
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?
        .rows_affected();
        if updated == 0 {
            // A new key: serialise with other replicas' new keys, so the
            // per-window cap counted below still holds at insert.
            sqlx::query("select pg_advisory_xact_lock($1)")
                .bind(AUDIT_LOCK_KEY)
                .execute(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
            let keys: i64 =
                sqlx::query_scalar("select count(*) from audit_counters where window_start = $1")
                    .bind(count.window_start)
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
                 values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 on conflict (window_start, client_network, tool, outcome) do update set
                     count = audit_counters.count + excluded.count,
                     last_at = greatest(audit_counters.last_at, excluded.last_at)",
            )
            .bind(count.window_start)
            .bind(network)
            .bind(&count.tool)
            .bind(&count.outcome)
            .bind(&count.profile)
            .bind(&count.policy_decision)
            .bind(increment)
            .bind(&count.first_trace_id)
            .bind(count.last_at)
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
            "select {AUDIT_COUNTER_COLUMNS} from audit_counters where window_start >= $1
             order by window_start, client_network, tool, outcome limit $2"
        )))
        .bind(since)
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
             where (window_start, client_network, tool, outcome) > ($1, $2, $3, $4)
             order by window_start, client_network, tool, outcome limit $5"
        )))
        .bind(last.window_start)
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
        // Timestamps count as their RFC 3339 text (27 bytes), as on SQLite;
        // json documents as their stored text.
        let (events, event_bytes): (i64, i64) = sqlx::query_as(
            "select count(*), coalesce(sum(
                 octet_length(event_id) + 27 + octet_length(trace_id) + octet_length(subject)
                 + coalesce(octet_length(credential::text), 0)
                 + coalesce(octet_length(organization_id), 0)
                 + octet_length(rooftop_ids::text) + octet_length(tool) + octet_length(profile)
                 + octet_length(policy_decision) + octet_length(resource_ids::text)
                 + octet_length(outcome) + octet_length(delegation::text)), 0)::bigint
             from audit_events",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        let (counters, counter_bytes): (i64, i64) = sqlx::query_as(
            "select count(*), coalesce(sum(
                 27 + octet_length(client_network) + octet_length(tool) + octet_length(outcome)
                 + octet_length(profile) + octet_length(policy_decision) + 8
                 + octet_length(first_trace_id) + 27), 0)::bigint
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
        let batch = i64::try_from(AUDIT_PRUNE_BATCH).unwrap_or(i64::MAX);
        let mut summary = AuditPruneSummary::default();
        loop {
            let n = sqlx::query(
                "delete from audit_events where event_id in
                     (select event_id from audit_events where occurred_at < $1
                      order by occurred_at, event_id limit $2)",
            )
            .bind(older_than)
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
                      where window_start < $1 order by window_start limit $2)",
            )
            .bind(older_than)
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
            let mut tx = self.pool.begin().await.map_err(map_sqlx_error)?;
            // Two replicas pruning at once must not both delete the excess.
            sqlx::query("select pg_advisory_xact_lock($1)")
                .bind(AUDIT_LOCK_KEY)
                .execute(&mut *tx)
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
            let (at, id): (DateTime<Utc>, String) = sqlx::query_as(
                "select occurred_at, event_id from audit_events
                 order by occurred_at, event_id limit 1 offset $1",
            )
            .bind(excess - 1)
            .fetch_one(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            let n =
                sqlx::query("delete from audit_events where (occurred_at, event_id) <= ($1, $2)")
                    .bind(at)
                    .bind(&id)
                    .execute(&mut *tx)
                    .await
                    .map_err(map_sqlx_error)?
                    .rows_affected();
            tx.commit().await.map_err(map_sqlx_error)?;
            summary.events_over_limit += n;
            summary.events_pruned_through = Some(at);
        }
        let max_counters = i64::try_from(max_counters).unwrap_or(i64::MAX);
        loop {
            let mut tx = self.pool.begin().await.map_err(map_sqlx_error)?;
            sqlx::query("select pg_advisory_xact_lock($1)")
                .bind(AUDIT_LOCK_KEY)
                .execute(&mut *tx)
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
            let (window, network, tool, outcome): (DateTime<Utc>, String, String, String) =
                sqlx::query_as(
                    "select window_start, client_network, tool, outcome from audit_counters
                     order by window_start, client_network, tool, outcome limit 1 offset $1",
                )
                .bind(excess - 1)
                .fetch_one(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
            let n = sqlx::query(
                "delete from audit_counters
                 where (window_start, client_network, tool, outcome) <= ($1, $2, $3, $4)",
            )
            .bind(window)
            .bind(&network)
            .bind(&tool)
            .bind(&outcome)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?
            .rows_affected();
            tx.commit().await.map_err(map_sqlx_error)?;
            summary.counters_over_limit += n;
            summary.counters_pruned_through = Some(window);
        }
        Ok(summary)
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
        .bind(since)
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
        // Row-value comparison: one range scan of the (occurred_at, event_id)
        // index; `event_id` is `collate "C"`, byte order as on SQLite.
        let rows = sqlx::query(AssertSqlSafe(format!(
            "select {AUDIT_COLUMNS} from audit_events where (occurred_at, event_id) > ($1, $2)
             order by occurred_at, event_id limit $3"
        )))
        .bind(occurred_at)
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
        let mut tx = self.pool.begin().await.map_err(map_sqlx_error)?;
        // One change at a time across replicas (the dealer import lock): the
        // rows read below stay as read until commit, so the set `check`
        // judged is the set written. The organization row is locked too, so
        // it cannot vanish meanwhile.
        sqlx::query("select pg_advisory_xact_lock($1)")
            .bind(IMPORT_LOCK_KEY)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
        let known: Option<String> = sqlx::query_scalar(
            "select organization_id from organizations where organization_id = $1 for share",
        )
        .bind(organization_id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        if known.is_none() {
            return Err(programs_organization_missing(organization_id));
        }
        let rows = sqlx::query(
            "select program_id, revision, doc, rule_hash, imported_at, source, withdrawn_at
             from incentive_programs where organization_id = $1
             order by program_id, revision",
        )
        .bind(organization_id)
        .fetch_all(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        let stored = rows
            .iter()
            .map(|row| {
                let withdrawn: Option<DateTime<Utc>> =
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
                 values ($1, $2, $3, $4::json, $5, $6, $7::json)",
            )
            .bind(organization_id)
            .bind(&record.program_id)
            .bind(i64::from(record.revision))
            .bind(json_text(&record.doc)?)
            .bind(&record.rule_hash)
            .bind(record.imported_at)
            .bind(json_text(&record.source)?)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
        }
        let now = chrono::SubsecRound::trunc_subsecs(Utc::now(), 6);
        for w in &plan.withdraw {
            sqlx::query(
                "update incentive_programs set withdrawn_at = $1
                 where organization_id = $2 and program_id = $3 and revision = $4
                   and withdrawn_at is null",
            )
            .bind(now)
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
        let change = StoreChange::Programs {
            organization_id: organization_id.to_owned(),
        };
        notify(&mut *tx, &change).await?;
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
             where organization_id = $1 and withdrawn_at is null
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
             values ($1, $2, $3, $4, $5, $6, $7, $8::json, $9)",
        )
        .bind(uuid::Uuid::now_v7().to_string())
        .bind(&observation.organization_id)
        .bind(&observation.rooftop_id)
        .bind(&observation.vehicle_id)
        .bind(&observation.status)
        .bind(&observation.authority)
        .bind(observation.observed_at)
        .bind(json_text(&observation.source)?)
        .bind(observation.checked_at)
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
             from availability_observations where rooftop_id = $1 and vehicle_id = $2
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
        let source: Json<ObservationSource> = row.try_get("source").map_err(map_sqlx_error)?;
        Ok(Some(AvailabilityObservation {
            organization_id: row.try_get("organization_id").map_err(map_sqlx_error)?,
            rooftop_id: row.try_get("rooftop_id").map_err(map_sqlx_error)?,
            vehicle_id: row.try_get("vehicle_id").map_err(map_sqlx_error)?,
            status: row.try_get("status").map_err(map_sqlx_error)?,
            authority: row.try_get("authority").map_err(map_sqlx_error)?,
            observed_at: row.try_get("observed_at").map_err(map_sqlx_error)?,
            source: source.0,
            checked_at: row.try_get("checked_at").map_err(map_sqlx_error)?,
        }))
    }

    fn subscribe_changes(&self) -> Option<tokio::sync::mpsc::Receiver<StoreChange>> {
        let (sender, receiver) = tokio::sync::mpsc::channel(CHANGE_BUFFER);
        tokio::spawn(follow_changes(self.listen.0.clone(), sender));
        Some(receiver)
    }

    async fn create_legacy_session(
        &self,
        session: &LegacySessionRecord,
        max_sessions: u32,
        idle_before: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let mut tx = self.pool.begin().await.map_err(map_sqlx_error)?;
        // One creation at a time across replicas, so the bound counted
        // below still holds at commit.
        sqlx::query("select pg_advisory_xact_lock($1)")
            .bind(SESSION_LOCK_KEY)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
        sqlx::query("delete from legacy_sessions where last_seen < $1")
            .bind(idle_before)
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
                     order by last_seen, created_at, session_key limit $1)",
            )
            .bind(excess)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
        }
        sqlx::query(
            "insert into legacy_sessions (session_key, protocol_version, initialized,
                 created_at, last_seen)
             values ($1, $2, $3, $4, $5)",
        )
        .bind(&session.key)
        .bind(&session.protocol_version)
        .bind(session.initialized)
        .bind(session.created_at)
        .bind(session.last_seen)
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        tx.commit().await.map_err(map_sqlx_error)?;
        Ok(u64::try_from(stored.min(max - 1) + 1).unwrap_or(0))
    }

    async fn legacy_session(&self, key: &str) -> Result<Option<LegacySessionRecord>, StoreError> {
        let row = sqlx::query(
            "select session_key, protocol_version, initialized, created_at, last_seen
             from legacy_sessions where session_key = $1",
        )
        .bind(key)
        .fetch_optional(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        let Some(row) = row else {
            return Ok(None);
        };
        Ok(Some(LegacySessionRecord {
            key: row.try_get("session_key").map_err(map_sqlx_error)?,
            protocol_version: row.try_get("protocol_version").map_err(map_sqlx_error)?,
            initialized: row.try_get("initialized").map_err(map_sqlx_error)?,
            created_at: row.try_get("created_at").map_err(map_sqlx_error)?,
            last_seen: row.try_get("last_seen").map_err(map_sqlx_error)?,
        }))
    }

    async fn touch_legacy_session(&self, key: &str, at: DateTime<Utc>) -> Result<bool, StoreError> {
        let matched = sqlx::query(
            "update legacy_sessions set last_seen = greatest(last_seen, $1)
             where session_key = $2",
        )
        .bind(at)
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
            "update legacy_sessions set initialized = true,
                 last_seen = greatest(last_seen, $1)
             where session_key = $2",
        )
        .bind(at)
        .bind(key)
        .execute(&self.pool)
        .await
        .map_err(map_sqlx_error)?
        .rows_affected();
        Ok(matched > 0)
    }

    async fn delete_legacy_session(&self, key: &str) -> Result<bool, StoreError> {
        let deleted = sqlx::query("delete from legacy_sessions where session_key = $1")
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
fn api_token_from_row(row: &PgRow) -> Result<ApiTokenRecord, StoreError> {
    let rooftops: Json<RooftopScope> = row.try_get("rooftops").map_err(map_sqlx_error)?;
    let scopes: Json<BTreeSet<String>> = row.try_get("scopes").map_err(map_sqlx_error)?;
    Ok(ApiTokenRecord {
        token_id: row.try_get("token_id").map_err(map_sqlx_error)?,
        secret_hash: row.try_get("secret_hash").map_err(map_sqlx_error)?,
        subject: row.try_get("subject").map_err(map_sqlx_error)?,
        organization_id: row.try_get("organization_id").map_err(map_sqlx_error)?,
        rooftops: rooftops.0,
        scopes: scopes.0,
        purpose: row.try_get("purpose").map_err(map_sqlx_error)?,
        created_at: row.try_get("created_at").map_err(map_sqlx_error)?,
        expires_at: row.try_get("expires_at").map_err(map_sqlx_error)?,
        revoked_at: row.try_get("revoked_at").map_err(map_sqlx_error)?,
    })
}

/// A row of [`AUDIT_COUNTER_COLUMNS`].
fn audit_count_from_row(row: &PgRow) -> Result<AuditCount, StoreError> {
    let count: i64 = row.try_get("count").map_err(map_sqlx_error)?;
    Ok(AuditCount {
        window_start: row.try_get("window_start").map_err(map_sqlx_error)?,
        client_network: row.try_get("client_network").map_err(map_sqlx_error)?,
        tool: row.try_get("tool").map_err(map_sqlx_error)?,
        outcome: row.try_get("outcome").map_err(map_sqlx_error)?,
        profile: row.try_get("profile").map_err(map_sqlx_error)?,
        policy_decision: row.try_get("policy_decision").map_err(map_sqlx_error)?,
        count: u64::try_from(count)
            .map_err(|_| StoreError::Corrupt(format!("audit counter count {count}")))?,
        first_trace_id: row.try_get("first_trace_id").map_err(map_sqlx_error)?,
        last_at: row.try_get("last_at").map_err(map_sqlx_error)?,
    })
}

/// A row of [`AUDIT_COLUMNS`].
fn audit_from_row(row: &PgRow) -> Result<AuditEvent, StoreError> {
    let credential: Option<Json<Credential>> = row.try_get("credential").map_err(map_sqlx_error)?;
    let rooftop_ids: Json<Vec<String>> = row.try_get("rooftop_ids").map_err(map_sqlx_error)?;
    let resource_ids: Json<Vec<String>> = row.try_get("resource_ids").map_err(map_sqlx_error)?;
    let delegation: Json<Vec<String>> = row.try_get("delegation").map_err(map_sqlx_error)?;
    Ok(AuditEvent {
        event_id: row.try_get("event_id").map_err(map_sqlx_error)?,
        occurred_at: row.try_get("occurred_at").map_err(map_sqlx_error)?,
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

async fn read_vehicles(
    conn: &mut PgConnection,
    snapshot_id: &str,
) -> Result<Vec<VehicleRecord>, StoreError> {
    // `vehicle_id` is `collate "C"`: byte order, as on SQLite, from the
    // primary key index.
    let docs: Vec<Json<VehicleRecord>> =
        sqlx::query_scalar("select doc from vehicles where snapshot_id = $1 order by vehicle_id")
            .bind(snapshot_id)
            .fetch_all(&mut *conn)
            .await
            .map_err(map_sqlx_error)?;
    Ok(docs.into_iter().map(|Json(vehicle)| vehicle).collect())
}

/// A row of [`SNAPSHOT_COLUMNS`].
fn snapshot_from_row(row: &PgRow) -> Result<SnapshotRecord, StoreError> {
    let source: Json<SourceRecord> = row.try_get("source").map_err(map_sqlx_error)?;
    let summary: Json<InventoryImportSummary> = row.try_get("summary").map_err(map_sqlx_error)?;
    let vehicle_count: i64 = row.try_get("vehicle_count").map_err(map_sqlx_error)?;
    Ok(SnapshotRecord {
        snapshot_id: row.try_get("snapshot_id").map_err(map_sqlx_error)?,
        organization_id: row.try_get("organization_id").map_err(map_sqlx_error)?,
        rooftop_id: row.try_get("rooftop_id").map_err(map_sqlx_error)?,
        version: row.try_get("version").map_err(map_sqlx_error)?,
        created_at: row.try_get("created_at").map_err(map_sqlx_error)?,
        source: source.0,
        vehicle_count: u32::try_from(vehicle_count).map_err(|_| {
            StoreError::Corrupt(format!(
                "stored vehicle_count {vehicle_count} is out of range"
            ))
        })?,
        summary: summary.0,
    })
}

async fn read_secret(pool: &PgPool, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
    sqlx::query_scalar("select value from gateway_secrets where name = $1")
        .bind(name)
        .fetch_optional(pool)
        .await
        .map_err(map_sqlx_error)
}

async fn load_organization(
    conn: &mut PgConnection,
    organization_id: &str,
) -> Result<Option<OrganizationRecord>, StoreError> {
    let Some(row) = sqlx::query(
        "select organization_id, name, legal_name, extensions, source
         from organizations where organization_id = $1",
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
         from rooftops where organization_id = $1 order by position",
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
fn organization_from_row(row: &PgRow) -> Result<OrganizationRecord, StoreError> {
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

fn rooftop_from_row(row: &PgRow) -> Result<RooftopRecord, StoreError> {
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
    conn: &mut PgConnection,
    plan: &OrganizationPlan<'_>,
) -> Result<(), StoreError> {
    for rooftop in plan.rooftops.iter().filter(|r| r.change == Change::Added) {
        let owner: Option<String> =
            sqlx::query_scalar("select organization_id from rooftops where rooftop_id = $1")
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
    conn: &mut PgConnection,
    plan: &OrganizationPlan<'_>,
    now: DateTime<Utc>,
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
         values ($1, $2, $3, $4::json, $5::json, $6, $6)
         on conflict (organization_id) do update set
             name = excluded.name,
             legal_name = excluded.legal_name,
             extensions = excluded.extensions,
             source = excluded.source,
             updated_at = coalesce($7, organizations.updated_at)",
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
             values ($1, $2, $3, $4::json, $5::json)
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
    E: sqlx::Executor<'e, Database = sqlx::Postgres>,
{
    let event = &event.bounded();
    sqlx::query(
        "insert into audit_events (event_id, occurred_at, trace_id, subject, credential,
             organization_id, rooftop_ids, tool, profile, policy_decision, resource_ids,
             outcome, delegation)
         values ($1, $2, $3, $4, $5::json, $6, $7::json, $8, $9, $10, $11::json, $12,
             $13::json)",
    )
    .bind(&event.event_id)
    .bind(event.occurred_at)
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
fn program_from_row(row: &sqlx::postgres::PgRow) -> Result<ProgramRecord, StoreError> {
    let revision: i64 = row.try_get("revision").map_err(map_sqlx_error)?;
    let doc: Json<serde_json::Value> = row.try_get("doc").map_err(map_sqlx_error)?;
    let source: Json<SourceRecord> = row.try_get("source").map_err(map_sqlx_error)?;
    Ok(ProgramRecord {
        program_id: row.try_get("program_id").map_err(map_sqlx_error)?,
        revision: u32::try_from(revision)
            .map_err(|_| StoreError::Corrupt(format!("revision {revision}")))?,
        doc: doc.0,
        rule_hash: row.try_get("rule_hash").map_err(map_sqlx_error)?,
        imported_at: row.try_get("imported_at").map_err(map_sqlx_error)?,
        source: source.0,
    })
}

/// [`SnapshotTx`] in PostgreSQL's dialect.
struct PgSnapshotTx(sqlx::Transaction<'static, sqlx::Postgres>);

#[async_trait::async_trait]
impl SnapshotTx for PgSnapshotTx {
    async fn lock_rooftop(
        &mut self,
        organization_id: &str,
        rooftop_id: &str,
    ) -> Result<(), StoreError> {
        let kept: Option<i32> = sqlx::query_scalar(
            "select 1 from rooftops where organization_id = $1 and rooftop_id = $2
             for no key update",
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
            sqlx::query_scalar("select organization_id from rooftops where rooftop_id = $1")
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
             where organization_id = $1 and rooftop_id = $2
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
             values ($1, $2, $3, $4, $5, $6::json, 0, '{}'::json)",
        )
        .bind(&snapshot.snapshot_id)
        .bind(&snapshot.organization_id)
        .bind(&snapshot.rooftop_id)
        .bind(snapshot.version)
        .bind(snapshot.created_at)
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
        let docs: Vec<Json<VehicleRecord>> = sqlx::query_scalar(
            "select doc from vehicles where snapshot_id = $1 and vehicle_id = any($2::text[])",
        )
        .bind(snapshot_id)
        .bind(ids)
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
            let ids: Vec<&str> = rows.iter().map(|(v, _)| v.vehicle_id.as_str()).collect();
            let vins: Vec<Option<&str>> = rows.iter().map(|(v, _)| v.vin.as_deref()).collect();
            let stock_numbers: Vec<Option<&str>> = rows
                .iter()
                .map(|(v, _)| v.stock_number.as_deref())
                .collect();
            let docs: Vec<&str> = rows.iter().map(|(_, d)| d.as_str()).collect();
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
            .execute(&mut *self.0)
            .await
            .map_err(map_sqlx_error)?;
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
            "update inventory_snapshots set vehicle_count = $1, summary = $2::json
             where snapshot_id = $3",
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
