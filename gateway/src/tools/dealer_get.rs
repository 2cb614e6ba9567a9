//! `dealeragent.dealer.get` (profile `dealeragent.discovery/0.1`): one
//! dealer organization and the rooftops the caller may see.
//!
//! Policy first (DAP-CORE-029..031): the requested rooftops are intersected
//! with what the caller may read before anything is returned, and an
//! invisible organization or rooftop answers exactly like an absent one.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::Value;

use super::output::{DealerOrganization, Freshness, FreshnessState, Provenance, Source};
use super::{ToolContext, ToolError};
use crate::auth::Principal;
use crate::catalog::FieldError;
use crate::dap::Rooftop;
use crate::directory::DirectorySnapshot;
use crate::domain::dealer::OrganizationRecord;

pub const NAME: &str = "dealeragent.dealer.get";

/// Dealer directory data older than this is reported `stale`: a dealer
/// group is expected to re-publish its directory at least monthly.
pub const DEALER_DATA_MAX_AGE_SECONDS: u32 = 2_592_000;

/// The tool (see [`super::Tool`]).
pub struct DealerGet;

impl super::Tool for DealerGet {
    const NAME: &'static str = NAME;
    type Args = super::args::DealerArgs;
    type Output = DealerOrganization;

    async fn call(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let snapshot = ctx.directory().snapshot().await?;
        let organization_id = match args.organization_id {
            Some(id) => id,
            None => only_visible_organization(&snapshot, &ctx.principal)?,
        };
        let requested: Option<Vec<&str>> = args
            .rooftop_ids
            .as_ref()
            .map(|ids| ids.iter().map(String::as_str).collect());
        organization(
            &snapshot,
            &ctx.principal,
            &organization_id,
            requested.as_deref(),
        )
    }
}

/// DAP's `dealerRequest` requires nothing, yet the manifest asserts
/// `organization_id_required`. We resolve the gap: the id may be omitted
/// only when exactly one organization is visible to the caller.
fn only_visible_organization(
    snapshot: &DirectorySnapshot,
    principal: &Principal,
) -> Result<String, ToolError> {
    super::policy::single_visible_organization(snapshot, principal)?.ok_or_else(|| ToolError::Invalid {
        message: "organization_id is required: this gateway serves several organizations (see the manifest's organization_ids).".into(),
        // DAP 0.1: a `required` failure points at the missing member.
        field_errors: vec![FieldError::new(
            "/organization_id",
            "required",
            "Required property 'organization_id' is missing.",
        )],
    })
}

/// The DAP `dealerOrganization` for `organization_id` as `principal` may
/// see it, optionally narrowed to `rooftop_ids`, as the tree the pipeline
/// checks. Shared by the tool and the organization/rooftop resources.
pub fn organization_view(
    snapshot: &DirectorySnapshot,
    principal: &Principal,
    organization_id: &str,
    rooftop_ids: Option<&[&str]>,
) -> Result<Value, ToolError> {
    super::output::tree(&organization(
        snapshot,
        principal,
        organization_id,
        rooftop_ids,
    )?)
}

/// [`organization_view`], typed.
pub fn organization(
    snapshot: &DirectorySnapshot,
    principal: &Principal,
    organization_id: &str,
    rooftop_ids: Option<&[&str]>,
) -> Result<DealerOrganization, ToolError> {
    let org = snapshot
        .organization(organization_id)
        .ok_or(ToolError::NotFound)?;
    let visible = principal.visible_rooftops(org);
    if visible.is_empty() {
        return Err(ToolError::NotFound);
    }
    let rooftops: Vec<Rooftop> = match rooftop_ids {
        // Only contacts marked `public: true` leave the gateway, whoever
        // asks (pii_output: public_business_contact_only in capabilities.yaml).
        None => visible
            .iter()
            .map(|r| crate::dealers::published_rooftop(&r.dap))
            .collect(),
        Some(ids) => {
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                // A rooftop of another organization, an invisible one and a
                // missing one all get the same answer (DAP-CORE-031).
                let rooftop = visible
                    .iter()
                    .find(|r| r.rooftop_id == *id)
                    .ok_or(ToolError::NotFound)?;
                out.push(crate::dealers::published_rooftop(&rooftop.dap));
            }
            out
        }
    };
    Ok(record(org, rooftops, Utc::now()))
}

/// The organization record around its published rooftops, judged at `now`.
fn record(
    org: &OrganizationRecord,
    rooftops: Vec<Rooftop>,
    now: DateTime<Utc>,
) -> DealerOrganization {
    let observed_at = org.source.observed_at;
    let valid_until = observed_at + Duration::seconds(i64::from(DEALER_DATA_MAX_AGE_SECONDS));
    // DAP 6.4: past its validity the record is stale, never current.
    let state = if now > valid_until {
        FreshnessState::Stale
    } else {
        FreshnessState::Current
    };
    let observed = observed_at.to_rfc3339_opts(SecondsFormat::Secs, true);
    let source = Source {
        source_name: org.source.source_name.clone(),
        authority: org.source.authority.clone(),
        observed_at: observed.clone(),
        source_record_id: Some(org.organization_id.clone()),
        // Only a real digest is published (the schema's `sha256Digest`).
        content_digest: org
            .source
            .content_digest
            .starts_with("sha256:")
            .then(|| org.source.content_digest.clone()),
        source_uri: None,
    };
    DealerOrganization {
        organization_id: org.organization_id.clone(),
        name: org.name.clone(),
        rooftops,
        provenance: Provenance {
            sources: vec![source],
            authority_status: "asserted".to_owned(),
            transformed_at: None,
            transformations: vec![
                "dealers file imported and validated against dealers-file.schema.json".to_owned(),
            ],
        },
        freshness: Freshness {
            observed_at: observed,
            state,
            valid_until: Some(valid_until.to_rfc3339_opts(SecondsFormat::Secs, true)),
            max_age_seconds: Some(DEALER_DATA_MAX_AGE_SECONDS),
        },
        legal_name: org.legal_name.clone(),
        extensions: org.extensions.clone(),
    }
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone, Utc};

    use super::record;
    use crate::tools::output::{DealerOrganization, drift};

    /// `DealerOrganization` against `dealerOrganization`, for every
    /// organization of the demo dealers file with all its published
    /// rooftops, current and stale, with and without the optional members.
    #[test]
    fn dealer_organizations_match_their_definition() {
        let catalog = crate::catalog::Catalog::load().expect("catalog");
        let observed = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        let orgs = crate::dealers::parse(
            &catalog,
            "dealers.yaml",
            crate::demo::DEMO_DEALERS.as_bytes(),
            "demo dealers file",
            observed,
        )
        .expect("the demo dealers file parses");
        let mut instances: Vec<DealerOrganization> = Vec::new();
        for org in &orgs {
            let rooftops: Vec<_> = org
                .rooftops
                .iter()
                .map(|r| crate::dealers::published_rooftop(&r.dap))
                .collect();
            for now in [observed, observed + Duration::days(400)] {
                let mut bare = org.clone();
                bare.legal_name = None;
                bare.extensions = None;
                bare.source.content_digest = "none".into();
                let mut full = org.clone();
                full.legal_name = Some("Demo Motors LLC".into());
                full.extensions = Some(serde_json::json!({"dealergateway.example": {"a": 1}}));
                full.source.content_digest = format!("sha256:{}", "a".repeat(64));
                instances.push(record(&bare, rooftops.clone(), now));
                instances.push(record(&full, rooftops.clone(), now));
            }
        }
        assert!(
            instances
                .iter()
                .any(|o| o.freshness.state == crate::tools::output::FreshnessState::Stale)
        );
        drift::check_output(&instances);
    }
}
