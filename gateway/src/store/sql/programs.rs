//! Incentive programs: row decoding and the one writer of a program set.
//! Part of [`SqlStore`]; the statements are shared by both backends (`super`).

use super::*;

shared_sql! {
impl {
    /// A row of [`PROGRAM_COLUMNS`].
    pub(super) fn program_from_row(row: &Row<D>) -> Result<ProgramRecord, StoreError> {
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

    pub(super) async fn change_programs(
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
}
}
