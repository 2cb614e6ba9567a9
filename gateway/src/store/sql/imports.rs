//! The import log: recorded attempts and counts.
//! Part of [`SqlStore`]; the statements are shared by both backends (`super`).

use super::*;

shared_sql! {
impl {
    pub(super) async fn record_import(&self, attempt: &ImportAttempt) -> Result<(), StoreError> {
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

    pub(super) async fn import_attempts(
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
}
}
