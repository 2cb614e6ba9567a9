//! PostgreSQL backend: the shared store for several gateway replicas.
//!
//! Schema: `migrations/postgres/`. Timestamps are `timestamptz`. JSON
//! documents are `json`, not `jsonb`, to keep their key order (see the
//! migration's header), so they are bound as text and cast with `::json`:
//! binding `sqlx::types::Json` would declare the parameter `jsonb` and
//! reorder the keys on the way in.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::Row as _;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions, PgRow};
use sqlx::types::Json;

use super::{
    Change, DealersImportSummary, IMPORT_LOCK_KEY, OrganizationPlan, OrganizationRecord,
    RooftopRecord, RooftopSettings, SourceRecord, Store, StoreError, embedded_migrator, json_text,
    map_sqlx_error, plan_organization, rooftop_taken, summarize, validate_import,
};

/// Migrations of this backend, embedded by `build.rs`.
const MIGRATIONS: &[(i64, &str, &str)] =
    include!(concat!(env!("OUT_DIR"), "/migrations_postgres.rs"));

/// How long a caller waits for a pooled connection, which includes
/// connecting: an unreachable server fails within this bound.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);
/// Per replica; the gateway is read-mostly and queries are short.
const MAX_CONNECTIONS: u32 = 10;

/// The PostgreSQL store.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pub(super) pool: PgPool,
}

impl PostgresStore {
    /// Connect to `database_url` (`postgres://user@host:port/db`) and apply
    /// the migrations (serialised across replicas by sqlx's advisory lock).
    pub async fn open(database_url: &str) -> Result<Self, StoreError> {
        let options = PgConnectOptions::from_str(database_url).map_err(|e| {
            StoreError::Unavailable(format!("invalid PostgreSQL database URL: {e}"))
        })?;
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
        Ok(Self { pool })
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
