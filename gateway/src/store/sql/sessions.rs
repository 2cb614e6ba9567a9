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

    pub(super) async fn legacy_session_subscriptions(
        &self,
        key: &str,
    ) -> Result<Option<LegacySubscriptions>, StoreError> {
        let row = sqlx::query(
            "select subscriptions, stream from legacy_sessions where session_key = $1",
        )
        .bind(key)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let text: String = row.try_get("subscriptions")?;
        Ok(Some(LegacySubscriptions {
            uris: uris_of(&text),
            stream: row.try_get("stream")?,
        }))
    }

    pub(super) async fn claim_legacy_session_stream(
        &self,
        key: &str,
        stream: &str,
    ) -> Result<bool, StoreError> {
        let matched = sqlx::query("update legacy_sessions set stream = $1 where session_key = $2")
            .bind(stream)
            .bind(key)
            .execute(&self.pool)
            .await?
            .rows_affected();
        Ok(matched > 0)
    }

    pub(super) async fn change_legacy_session_subscription(
        &self,
        key: &str,
        uri: &str,
        subscribe: bool,
        max: u32,
    ) -> Result<Option<Vec<String>>, StoreError> {
        // Read, change and write in one serialized transaction, so two
        // replicas changing one session at once both count.
        let mut tx = D::begin_write(&self.pool).await?;
        D::serialize(&mut tx, Writers::Sessions).await?;
        let stored: Option<String> =
            sqlx::query_scalar("select subscriptions from legacy_sessions where session_key = $1")
                .bind(key)
                .fetch_optional(&mut *tx)
                .await?;
        let Some(stored) = stored else {
            return Ok(None);
        };
        let mut uris = uris_of(&stored);
        let held = uris.iter().any(|u| u == uri);
        let changed = if subscribe {
            let room = uris.len() < usize::try_from(max).unwrap_or(usize::MAX);
            if !held && room {
                uris.push(uri.to_owned());
            }
            !held && room
        } else {
            uris.retain(|u| u != uri);
            held
        };
        if changed {
            let text = serde_json::to_string(&uris).unwrap_or_else(|_| "[]".to_owned());
            sqlx::query("update legacy_sessions set subscriptions = $1 where session_key = $2")
                .bind(text)
                .bind(key)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(Some(uris))
    }
}
}

/// The stored JSON array of URIs (anything else reads as none: the column
/// is written only here).
fn uris_of(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_default()
}
