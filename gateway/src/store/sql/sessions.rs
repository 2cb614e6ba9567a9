//! Legacy (2025-11-25) MCP sessions: creation within the capacity bound.
//! Part of [`SqlStore`]; the statements are shared by both backends (`super`).

use super::*;

shared_sql! {
impl {
    pub(super) async fn create_legacy_session(
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
}
}
