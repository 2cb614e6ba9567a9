//! Audit events and counters: bounded writes, counting, pruning and row decoding.
//! Part of [`SqlStore`]; the statements are shared by both backends (`super`).

use super::*;

shared_sql! {
impl {
    /// Run `delete` (of at most `$2` rows from before `$1`) until it
    /// deletes fewer than [`AUDIT_PRUNE_BATCH`] rows, each statement its own
    /// transaction, so writers wait at most one batch; returns how many.
    pub(super) async fn expire_audit(
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
    pub(super) async fn bound_audit(
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
    pub(super) async fn bound_audit_share(
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

    /// Insert one audit event ([`AuditEvent::bounded`]) through `executor`
    /// (the pool, or a transaction that writes together with it).
    pub(super) async fn insert_audit<'e, E>(
        executor: E,
        event: &AuditEvent,
    ) -> Result<(), StoreError>
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

    /// A row of [`AUDIT_COUNTER_COLUMNS`].
    pub(super) fn audit_count_from_row(row: &Row<D>) -> Result<AuditCount, StoreError> {
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
    pub(super) fn audit_from_row(row: &Row<D>) -> Result<AuditEvent, StoreError> {
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

    pub(super) async fn count_audit(
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

    pub(super) async fn prune_audit(
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
        if let Some(share) = crate::store::audit::share_of(&counts, max_events) {
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
}
}
