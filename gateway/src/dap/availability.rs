//! DAP `availability` (vehicle.schema.json `availability`): the sale status
//! of one unit with its authority and validity, as the availability band
//! rule reports it (`availability::band`, DAP-CORE-036).
//!
//! Members are written in the order the band rule has always written them
//! (the status facts, then the verdict, then the validity), which the
//! schema permits: JSON members are unordered, and a byte-identical answer
//! keeps cached and recorded answers stable.

use serde::{Deserialize, Serialize};

/// DAP `availability`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Availability {
    /// `available|in_transit|on_hold|pending_sale|sold|unavailable|unknown`.
    pub status: String,
    /// `authoritative|asserted|unknown`.
    pub authority_status: String,
    /// RFC 3339, when the status was observed at its source.
    pub observed_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_verification_required: Option<bool>,
    /// Why the status is what it is, at most 500 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// After this instant the status must be treated as stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::output::drift::check;

    #[test]
    fn availability_matches_its_definition() {
        let bare = Availability {
            status: "unknown".into(),
            authority_status: "unknown".into(),
            observed_at: "2026-12-01T12:00:00Z".into(),
            human_verification_required: None,
            reason: None,
            valid_until: None,
        };
        let full = Availability {
            status: "available".into(),
            authority_status: "authoritative".into(),
            human_verification_required: Some(false),
            reason: Some("The dealer system reported available.".into()),
            valid_until: Some("2026-12-01T12:02:00Z".into()),
            ..bare.clone()
        };
        check("vehicle.schema.json#/$defs/availability", &[bare, full]);
    }
}
