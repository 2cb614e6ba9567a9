//! Organizations, rooftops and gateway secrets: the reads and writes of a dealers import.
//! Part of [`SqlStore`]; the statements are shared by both backends (`super`).

use super::*;

shared_sql! {
impl {
    pub(super) async fn read_secret(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        sqlx::query_scalar("select value from gateway_secrets where name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::from)
    }

    pub(super) async fn load_organization(
        conn: &mut Conn<D>,
        organization_id: &str,
    ) -> Result<Option<OrganizationRecord>, StoreError> {
        let Some(row) = sqlx::query(
            "select organization_id, name, legal_name, extensions, source
             from organizations where organization_id = $1",
        )
        .bind(organization_id)
        .fetch_optional(&mut *conn)
        .await?
        else {
            return Ok(None);
        };
        let mut org = Self::organization_from_row(&row)?;
        let rooftop_rows = sqlx::query(
            "select rooftop_id, dap, settings
             from rooftops where organization_id = $1 order by position",
        )
        .bind(organization_id)
        .fetch_all(&mut *conn)
        .await?;
        org.rooftops = rooftop_rows
            .iter()
            .map(Self::rooftop_from_row)
            .collect::<Result<_, _>>()?;
        Ok(Some(org))
    }

    /// An organization row, without its rooftops.
    pub(super) fn organization_from_row(row: &Row<D>) -> Result<OrganizationRecord, StoreError> {
        Ok(OrganizationRecord {
            organization_id: row.try_get("organization_id")?,
            name: row.try_get("name")?,
            legal_name: row.try_get("legal_name")?,
            extensions: D::read_json(row, "extensions")?,
            rooftops: Vec::new(),
            source: json::<D, _>(row, "source")?,
        })
    }

    /// A rooftop row. Its `dap` document is read as the DAP rooftop it
    /// was written from; one that does not read (edited by hand, or
    /// written by a gateway whose rooftop differs) is corrupt, named with
    /// its rooftop and what does not read, never a panic.
    pub(super) fn rooftop_from_row(row: &Row<D>) -> Result<RooftopRecord, StoreError> {
        let rooftop_id: String = row.try_get("rooftop_id")?;
        let dap = serde_json::from_value(json::<D, serde_json::Value>(row, "dap")?).map_err(|e| {
            StoreError::Corrupt(format!(
                "stored rooftop '{rooftop_id}': its dap document is not a DAP rooftop: {e}"
            ))
        })?;
        Ok(RooftopRecord {
            rooftop_id,
            dap,
            settings: json::<D, _>(row, "settings")?,
        })
    }

    /// Fail with a readable error when a rooftop this organization adds is
    /// kept by another organization (after this import's removals).
    pub(super) async fn check_rooftops_free(
        conn: &mut Conn<D>,
        plan: &OrganizationPlan<'_>,
    ) -> Result<(), StoreError> {
        for rooftop in plan.rooftops.iter().filter(|r| r.change == Change::Added) {
            let owner: Option<String> =
                sqlx::query_scalar("select organization_id from rooftops where rooftop_id = $1")
                    .bind(&rooftop.rooftop.rooftop_id)
                    .fetch_optional(&mut *conn)
                    .await?;
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

    pub(super) async fn write_organization(
        conn: &mut Conn<D>,
        plan: &OrganizationPlan<'_>,
        now: &D::Time,
    ) -> Result<(), StoreError> {
        let org = plan.org;
        let extensions = org.extensions.as_ref().map(json_text).transpose()?;
        let source = json_text(&org.source)?;
        // `updated_at` moves only when the content changed; `source` always
        // records the latest import.
        let updated_at = (plan.change != Change::Unchanged).then(|| now.clone());
        sqlx::query(AssertSqlSafe(format!(
            "insert into organizations
                 (organization_id, name, legal_name, extensions, source, created_at, updated_at)
             values ($1, $2, $3, $4{json}, $5{json}, $6, $6)
             on conflict (organization_id) do update set
                 name = excluded.name,
                 legal_name = excluded.legal_name,
                 extensions = excluded.extensions,
                 source = excluded.source,
                 updated_at = coalesce($7, organizations.updated_at)",
            json = D::JSON
        )))
        .bind(&org.organization_id)
        .bind(&org.name)
        .bind(&org.legal_name)
        .bind(extensions)
        .bind(source)
        .bind(now)
        .bind(updated_at)
        .execute(&mut *conn)
        .await?;

        for rooftop in plan.rooftops.iter().filter(|r| r.rewrite) {
            sqlx::query(AssertSqlSafe(format!(
                "insert into rooftops (organization_id, rooftop_id, position, dap, settings)
                 values ($1, $2, $3, $4{json}, $5{json})
                 on conflict (organization_id, rooftop_id) do update set
                     position = excluded.position,
                     dap = excluded.dap,
                     settings = excluded.settings",
                json = D::JSON
            )))
            .bind(&org.organization_id)
            .bind(&rooftop.rooftop.rooftop_id)
            .bind(rooftop.position)
            .bind(json_text(&rooftop.rooftop.dap)?)
            .bind(json_text(&rooftop.rooftop.settings)?)
            .execute(&mut *conn)
            .await?;
        }
        Ok(())
    }
}
}
