//! `dealeragent.dealer.get` (profile `dealeragent.discovery/0.1`): one
//! dealer organization and the rooftops the caller may see.
//!
//! Policy first (DAP-CORE-029..031): the requested rooftops are intersected
//! with what the caller may read before anything is returned, and an
//! invisible organization or rooftop answers exactly like an absent one.

use chrono::{Duration, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::{ToolContext, ToolError};
use crate::auth::Principal;
use crate::catalog::FieldError;
use crate::directory::DirectorySnapshot;

pub const NAME: &str = "dealeragent.dealer.get";

/// Dealer directory data older than this is reported `stale`: a dealer
/// group is expected to re-publish its directory at least monthly.
pub const DEALER_DATA_MAX_AGE_SECONDS: i64 = 2_592_000;

pub async fn call(ctx: &ToolContext, args: &Value) -> Result<Value, ToolError> {
    let snapshot = ctx
        .state
        .directory
        .snapshot()
        .await
        .map_err(ToolError::internal)?;
    let args: super::args::DealerArgs = super::args::parse(args)?;
    let organization_id = match args.organization_id {
        Some(id) => id,
        None => only_visible_organization(&snapshot, &ctx.principal)?,
    };
    let requested: Option<Vec<&str>> = args
        .rooftop_ids
        .as_ref()
        .map(|ids| ids.iter().map(String::as_str).collect());
    organization_view(
        &snapshot,
        &ctx.principal,
        &organization_id,
        requested.as_deref(),
    )
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
/// see it, optionally narrowed to `rooftop_ids`. Shared by the tool and the
/// organization/rooftop resources.
pub fn organization_view(
    snapshot: &DirectorySnapshot,
    principal: &Principal,
    organization_id: &str,
    rooftop_ids: Option<&[&str]>,
) -> Result<Value, ToolError> {
    let org = snapshot
        .organization(organization_id)
        .ok_or(ToolError::NotFound)?;
    let visible = principal.visible_rooftops(org);
    if visible.is_empty() {
        return Err(ToolError::NotFound);
    }
    let rooftops: Vec<Value> = match rooftop_ids {
        // Only contacts marked `public: true` leave the gateway, whoever
        // asks (pii_output: public_business_contact_only; issue 11 item 3).
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
    let observed_at = org.source.observed_at;
    let valid_until = observed_at + Duration::seconds(DEALER_DATA_MAX_AGE_SECONDS);
    let state = if Utc::now() > valid_until {
        "stale"
    } else {
        "current"
    };
    let observed = observed_at.to_rfc3339_opts(SecondsFormat::Secs, true);
    let mut source = json!({
        "source_name": org.source.source_name,
        "authority": org.source.authority,
        "observed_at": observed,
        "source_record_id": org.organization_id,
    });
    if org.source.content_digest.starts_with("sha256:") {
        source["content_digest"] = json!(org.source.content_digest);
    }
    let mut out = json!({
        "organization_id": org.organization_id,
        "name": org.name,
        "rooftops": rooftops,
        "provenance": {
            "sources": [source],
            "authority_status": "asserted",
            "transformations": ["dealers file imported and validated against dealers-file.schema.json"]
        },
        "freshness": {
            "observed_at": observed,
            "state": state,
            "valid_until": valid_until.to_rfc3339_opts(SecondsFormat::Secs, true),
            "max_age_seconds": DEALER_DATA_MAX_AGE_SECONDS
        }
    });
    if let Some(legal) = &org.legal_name {
        out["legal_name"] = json!(legal);
    }
    if let Some(ext) = &org.extensions {
        out["extensions"] = ext.clone();
    }
    Ok(out)
}
