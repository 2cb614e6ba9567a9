//! API tokens: row decoding.
//! Part of [`SqlStore`]; the statements are shared by both backends (`super`).

use super::*;

shared_sql! {
impl {
    /// A row of [`API_TOKEN_COLUMNS`].
    pub(super) fn api_token_from_row(row: &Row<D>) -> Result<ApiTokenRecord, StoreError> {
        let revoked_at: Option<D::Time> = row.try_get("revoked_at")?;
        Ok(ApiTokenRecord {
            token_id: row.try_get("token_id")?,
            secret_hash: row.try_get("secret_hash")?,
            subject: row.try_get("subject")?,
            organization_id: row.try_get("organization_id")?,
            rooftops: json::<D, RooftopScope>(row, "rooftops")?,
            scopes: json::<D, BTreeSet<String>>(row, "scopes")?,
            purpose: row.try_get("purpose")?,
            created_at: Self::time(row, "created_at")?,
            expires_at: Self::time(row, "expires_at")?,
            revoked_at: revoked_at.map(D::parse_time).transpose()?,
        })
    }
}
}
