//! Tenant policy shared by every tool: decided from the caller's principal
//! and the dealer directory BEFORE any inventory lookup (DAP-CORE-029..031).
//!
//! A caller-supplied rooftop id is a request, never proof of authority: the
//! requested set is intersected with what the caller may read, and an
//! organization or rooftop the caller may not see answers exactly like an
//! absent one.

use crate::auth::Principal;
use crate::directory::DirectorySnapshot;
use crate::store::{OrganizationRecord, RooftopRecord};
use crate::tools::ToolError;

/// The organization and the rooftops of it the caller may read, narrowed to
/// `requested` when given. `NotFound` when the organization, or any
/// requested rooftop, is absent or invisible.
pub fn authorize_rooftops<'a>(
    directory: &'a DirectorySnapshot,
    principal: &Principal,
    organization_id: &str,
    requested: Option<&[String]>,
) -> Result<(&'a OrganizationRecord, Vec<&'a RooftopRecord>), ToolError> {
    let org = directory
        .organization(organization_id)
        .ok_or(ToolError::NotFound)?;
    let visible = principal.visible_rooftops(org);
    if visible.is_empty() {
        return Err(ToolError::NotFound);
    }
    let rooftops = match requested {
        None => visible,
        Some([]) => visible,
        Some(ids) => {
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                let r = visible
                    .iter()
                    .find(|r| r.rooftop_id == *id)
                    .ok_or(ToolError::NotFound)?;
                out.push(*r);
            }
            out
        }
    };
    Ok((org, rooftops))
}

/// One rooftop of one organization, if the caller may read it.
pub fn authorize_rooftop<'a>(
    directory: &'a DirectorySnapshot,
    principal: &Principal,
    organization_id: &str,
    rooftop_id: &str,
) -> Result<&'a RooftopRecord, ToolError> {
    let requested = [rooftop_id.to_owned()];
    let (_, rooftops) =
        authorize_rooftops(directory, principal, organization_id, Some(&requested))?;
    rooftops.into_iter().next().ok_or(ToolError::NotFound)
}

/// The one organization visible to `principal`: `Ok(None)` when several
/// are (the caller must name one), not found when none is. Shared with
/// the AAP adapter, whose requests name no dealer.
pub fn single_visible_organization(
    snapshot: &DirectorySnapshot,
    principal: &Principal,
) -> Result<Option<String>, ToolError> {
    let mut visible = snapshot
        .organizations
        .iter()
        .filter(|o| !principal.visible_rooftops(o).is_empty());
    match (visible.next(), visible.next()) {
        (Some(one), None) => Ok(Some(one.organization_id.clone())),
        (None, _) => Err(ToolError::NotFound),
        (Some(_), Some(_)) => Ok(None),
    }
}
