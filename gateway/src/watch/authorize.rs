//! Authorizing a subscription like a read, BEFORE anything is looked up
//! (DAP-CORE-029..031; docs/mcp.md "Subscriptions"): the URI names its
//! organization and rooftop, the rooftop must be visible to the principal
//! in the current directory, and a vehicle URI needs the scope of the
//! profile that declares the vehicle resource (as `resources/read`). The
//! vehicle itself is never looked up: a vehicle id that does not exist in a
//! visible rooftop is accepted and simply never notified, so a
//! subscription reveals nothing a read would not.

use super::uri::{Target, parse};
use super::{Stream, WatchError};
use crate::auth::Principal;
use crate::directory::DirectorySnapshot;
use crate::state::AppState;

use crate::resources::{VEHICLE_TEMPLATE, has_profile_scope};

impl Stream {
    /// Authorize `uri` for this stream's principal like a read, then hold
    /// it. Idempotent for a URI already held.
    ///
    /// # Errors
    /// [`WatchError::NotReadable`] (one answer for malformed, absent and
    /// invisible) or a cap.
    pub async fn subscribe(&mut self, state: &AppState, uri: &str) -> Result<(), WatchError> {
        let target = parse(uri).ok_or(WatchError::NotReadable)?;
        if matches!(target, Target::Vehicle(..))
            && !has_profile_scope(state, self.principal(), VEHICLE_TEMPLATE)
        {
            return Err(WatchError::NotReadable);
        }
        let directory = match state.directory.snapshot().await {
            Ok(d) => d,
            Err(e) => {
                // Not a caller's fault, but nothing may be promised without
                // the directory; the caller retries.
                tracing::warn!(error = %e, "directory unavailable while authorizing a subscription");
                return Err(WatchError::NotReadable);
            }
        };
        if !may_read(&directory, self.principal(), &target) {
            return Err(WatchError::NotReadable);
        }
        self.hold(uri)
    }
}

/// May `principal` read what `target` names in `directory`? The manifest:
/// always. An organization: when any rooftop of it is visible. A rooftop or
/// a vehicle of it: when that rooftop is visible.
pub fn may_read(directory: &DirectorySnapshot, principal: &Principal, target: &Target) -> bool {
    match target {
        Target::Manifest => true,
        Target::Organization(org) => directory
            .organization(org)
            .is_some_and(|o| !principal.visible_rooftops(o).is_empty()),
        Target::Rooftop(org, rooftop) | Target::Vehicle(org, rooftop, _) => {
            directory.organization(org).is_some_and(|o| {
                o.rooftops
                    .iter()
                    .any(|r| r.rooftop_id == *rooftop && principal.may_read_rooftop(o, r))
            })
        }
    }
}
