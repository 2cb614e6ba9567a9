//! Inventory snapshots: vehicle reads, row decoding, and the snapshot writer's
//! transaction ([`SnapshotTx`]).
//! Part of [`SqlStore`]; the statements are shared by both backends (`super`).

use super::*;

shared_sql! {
impl {
    pub(super) async fn read_vehicles(
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

    /// [`Self::read_vehicles`], each vehicle sent into `out` as its row
    /// arrives (see [`Store::stream_snapshot_vehicles`]).
    pub(super) async fn stream_vehicles(
        conn: &mut Conn<D>,
        snapshot_id: &str,
        out: tokio::sync::mpsc::Sender<VehicleRecord>,
    ) -> Result<usize, StoreError> {
        use futures_util::TryStreamExt as _;
        let mut rows =
            sqlx::query("select doc from vehicles where snapshot_id = $1 order by vehicle_id")
                .bind(snapshot_id)
                .fetch(&mut *conn);
        let mut sent = 0;
        while let Some(row) = rows.try_next().await? {
            let vehicle = json::<D, _>(&row, "doc")?;
            if out.send(vehicle).await.is_err() {
                break;
            }
            sent += 1;
        }
        Ok(sent)
    }

    /// A row of [`SNAPSHOT_COLUMNS`].
    pub(super) fn snapshot_from_row(row: &Row<D>) -> Result<SnapshotRecord, StoreError> {
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
}
}

/// [`SnapshotTx`] over a dialect's open transaction.
pub(super) struct SqlSnapshotTx<D: Dialect>(pub(super) Transaction<'static, D::Db>);

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
        batch: &[crate::store::snapshot_write::StoredVehicle],
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

    async fn insert_price_points(
        &mut self,
        organization_id: &str,
        rooftop_id: &str,
        valid_from: DateTime<Utc>,
        points: &[crate::store::snapshot_write::NewPricePoint],
    ) -> Result<(), StoreError> {
        D::insert_price_points(&mut self.0, organization_id, rooftop_id, valid_from, points).await
    }
}
