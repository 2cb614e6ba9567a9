//! The advertised-price history (`price_history`, migration 0012): a
//! vehicle's history for the disclosure lint (docs/lint.md) and its
//! pruning (docs/operations.md "Price history"). The snapshot writer
//! records the points ([`SnapshotTx::insert_price_points`]).
//! Part of [`SqlStore`]; the statements are shared by both backends (`super`).

use super::*;
use crate::store::{PriceHistory, PricePoint};

/// The most points one history answer holds (the newest): a vehicle whose
/// price changed at every import for the whole retention could otherwise
/// make one answer unbounded.
pub(super) const MAX_PRICE_POINTS: i64 = 10_000;

/// How long a superseded point is kept at least (docs/operations.md "Price
/// history"): the price-reduction rules look back 30 days, and a
/// disclosure may be checked against the history for some time after.
pub(super) const PRICE_HISTORY_DAYS: i64 = 90;

shared_sql! {
impl {
    /// [`Store::price_history`]: the point in force at `since`, then every
    /// later point, oldest first; `begins_at` is the oldest point kept.
    pub(super) async fn read_price_history(
        &self,
        organization_id: &str,
        rooftop_id: &str,
        vehicle_id: &str,
        since: DateTime<Utc>,
    ) -> Result<PriceHistory, StoreError> {
        // One consistent view for both reads (an import must not land
        // between them).
        let mut tx = D::begin_read(&self.pool).await?;
        let first = sqlx::query(
            "select valid_from from price_history
             where organization_id = $1 and rooftop_id = $2 and vehicle_id = $3
             order by valid_from limit 1",
        )
        .bind(organization_id)
        .bind(rooftop_id)
        .bind(vehicle_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(first) = first else {
            tx.commit().await?;
            return Ok(PriceHistory::default());
        };
        let begins_at = Self::time(&first, "valid_from")?;
        // Newest first, at most MAX_PRICE_POINTS, from the point in force at
        // `since` (the latest at or before it) on; the primary key serves
        // both the subquery and the range.
        let rows = sqlx::query(
            "select valid_from, amount_minor, currency from price_history
             where organization_id = $1 and rooftop_id = $2 and vehicle_id = $3
               and valid_from >= coalesce(
                   (select max(p.valid_from) from price_history as p
                    where p.organization_id = $1 and p.rooftop_id = $2 and p.vehicle_id = $3
                      and p.valid_from <= $4),
                   $4)
             order by valid_from desc limit $5",
        )
        .bind(organization_id)
        .bind(rooftop_id)
        .bind(vehicle_id)
        .bind(D::time(since))
        .bind(MAX_PRICE_POINTS)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        let mut points = rows
            .iter()
            .map(|row| {
                let currency: String = row.try_get("currency")?;
                let currency = pricing::Currency::from_code(&currency).map_err(|_| {
                    StoreError::Corrupt("stored price history currency is not ISO 4217".into())
                })?;
                Ok(PricePoint {
                    amount: pricing::Money::from_minor(row.try_get("amount_minor")?, currency),
                    from: Self::time(row, "valid_from")?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        points.reverse();
        Ok(PriceHistory {
            points,
            begins_at: Some(begins_at),
        })
    }

    /// Delete the points superseded before `superseded_before` (the next
    /// point of the same vehicle began before it); a vehicle's newest point
    /// has no next point and is never deleted.
    pub(super) async fn prune_price_history(
        conn: &mut Conn<D>,
        superseded_before: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        Ok(sqlx::query(
            "delete from price_history
             where (select min(n.valid_from) from price_history as n
                    where n.organization_id = price_history.organization_id
                      and n.rooftop_id = price_history.rooftop_id
                      and n.vehicle_id = price_history.vehicle_id
                      and n.valid_from > price_history.valid_from) < $1",
        )
        .bind(D::time(superseded_before))
        .execute(&mut *conn)
        .await?
        .rows_affected())
    }
}
}
