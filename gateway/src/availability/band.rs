//! The DAP availability bands (spec section 7), computed — never asserted —
//! from one observation (its authority and observation time) and `now`.
//!
//! | band | rule |
//! |---|---|
//! | `verified_current` | authority `authoritative_dealer_system`, age ≤ 120 s |
//! | `recent_authoritative` | authority `authoritative_dealer_system`, age ≤ 15 min |
//! | `asserted` | any other authority (or an authoritative observation past 15 min), age ≤ 24 h |
//! | `stale` | older than 24 h |
//! | `unknown` | no observation |
//!
//! An observation dated in the future (clock skew) counts as age 0.
//!
//! The ONE rule for insufficient authority or freshness (DAP-CORE-036,
//! docs/availability.md): `available` is reported only in the
//! `verified_current` and `recent_authoritative` bands. In the `asserted`
//! band an asserted `available` is reported as status `unknown` with a
//! reason naming what was asserted and when; other asserted statuses
//! (sold, on_hold, ...) pass through, since they promise nothing. In the
//! `stale` band every status is reported as `unknown` with the reason.
//! Never an error: the caller gets an explicit result it must not upgrade.

use crate::dap::{Availability, Freshness, FreshnessState};
use chrono::{DateTime, Duration, Utc};

/// Authority of the dealer's system of record (DAP `sourceAuthority`).
pub const AUTHORITATIVE: &str = "authoritative_dealer_system";

/// Upper age limits of the bands, in seconds.
pub const VERIFIED_CURRENT_SECONDS: i64 = 120;
pub const RECENT_AUTHORITATIVE_SECONDS: i64 = 15 * 60;
pub const ASSERTED_SECONDS: i64 = 24 * 60 * 60;

/// One DAP availability band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Band {
    VerifiedCurrent,
    RecentAuthoritative,
    Asserted,
    Stale,
    Unknown,
}

impl Band {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::VerifiedCurrent => "verified_current",
            Self::RecentAuthoritative => "recent_authoritative",
            Self::Asserted => "asserted",
            Self::Stale => "stale",
            Self::Unknown => "unknown",
        }
    }

    /// Whether the band is backed by an authoritative check.
    pub fn is_authoritative(self) -> bool {
        matches!(self, Self::VerifiedCurrent | Self::RecentAuthoritative)
    }

    /// The longest age of an observation in this band (seconds); `None`
    /// for `stale` and `unknown`.
    pub fn max_age_seconds(self) -> Option<i64> {
        match self {
            Self::VerifiedCurrent => Some(VERIFIED_CURRENT_SECONDS),
            Self::RecentAuthoritative => Some(RECENT_AUTHORITATIVE_SECONDS),
            Self::Asserted => Some(ASSERTED_SECONDS),
            Self::Stale | Self::Unknown => None,
        }
    }
}

/// What a band is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observed<'a> {
    /// DAP availability status observed.
    pub status: &'a str,
    /// DAP source authority of the observation.
    pub authority: &'a str,
    pub observed_at: DateTime<Utc>,
}

/// The band of `observation` at `now` (`Unknown` without one).
pub fn band(observation: Option<&Observed<'_>>, now: DateTime<Utc>) -> Band {
    let Some(o) = observation else {
        return Band::Unknown;
    };
    let age = (now - o.observed_at).num_milliseconds().max(0);
    let authoritative = o.authority == AUTHORITATIVE;
    if authoritative && age <= VERIFIED_CURRENT_SECONDS * 1000 {
        Band::VerifiedCurrent
    } else if authoritative && age <= RECENT_AUTHORITATIVE_SECONDS * 1000 {
        Band::RecentAuthoritative
    } else if age <= ASSERTED_SECONDS * 1000 {
        Band::Asserted
    } else {
        Band::Stale
    }
}

/// When the band of an observation made at `observed_at` ends: the
/// instant after which it must be treated as the next band. `None` for
/// `stale` and `unknown`.
pub fn band_end(band: Band, observed_at: DateTime<Utc>) -> Option<DateTime<Utc>> {
    band.max_age_seconds()
        .and_then(|s| observed_at.checked_add_signed(Duration::seconds(s)))
}

/// The DAP `availability` object and `freshness` object of an observation
/// at `now`, by the one rule above. `what` names the source in reasons
/// ("the dealer's feed", "the dealer system").
#[derive(Debug, Clone, PartialEq)]
pub struct Reported {
    pub band: Band,
    pub availability: Availability,
    pub freshness: Freshness,
}

/// Render `observation` (or its absence) at `now`.
pub fn report(observation: Option<&Observed<'_>>, what: &str, now: DateTime<Utc>) -> Reported {
    let band = band(observation, now);
    let Some(o) = observation else {
        let at = crate::inventory::render::timestamp(now);
        return Reported {
            band,
            availability: Availability {
                status: "unknown".to_owned(),
                authority_status: "unknown".to_owned(),
                observed_at: at.clone(),
                human_verification_required: Some(true),
                reason: Some(format!(
                    "No availability observation exists for this vehicle from {what}; availability is unknown."
                )),
                valid_until: None,
            },
            freshness: Freshness {
                observed_at: at,
                state: FreshnessState::Unknown,
                valid_until: None,
                max_age_seconds: None,
            },
        };
    };
    let observed_at = crate::inventory::render::timestamp(o.observed_at);
    let age = describe_age((now - o.observed_at).num_seconds().max(0));
    let (status, authority_status, reason) = match band {
        Band::VerifiedCurrent | Band::RecentAuthoritative => (
            o.status,
            "authoritative",
            format!(
                "{what} reported {} at {observed_at} ({}, {age} old).",
                o.status,
                band.as_str()
            ),
        ),
        Band::Asserted if o.status == "available" => (
            "unknown",
            "asserted",
            format!(
                "{what} asserted available at {observed_at} (asserted, {age} old); not verified by an authoritative check, so availability is unknown."
            ),
        ),
        Band::Asserted => (
            o.status,
            "asserted",
            format!(
                "{what} asserted {} at {observed_at} (asserted, {age} old); not verified by an authoritative check.",
                o.status
            ),
        ),
        Band::Stale | Band::Unknown => (
            "unknown",
            "asserted",
            format!(
                "{what} last reported {} at {observed_at} (stale, {age} old); too old to rely on, so availability is unknown.",
                o.status
            ),
        ),
    };
    // A stale observation stopped being usable when its last band ended.
    let valid_until = band_end(band, o.observed_at)
        .or_else(|| {
            o.observed_at
                .checked_add_signed(Duration::seconds(ASSERTED_SECONDS))
        })
        .map(crate::inventory::render::timestamp);
    let availability = Availability {
        status: status.to_owned(),
        authority_status: authority_status.to_owned(),
        observed_at: observed_at.clone(),
        human_verification_required: Some(band != Band::VerifiedCurrent),
        reason: Some(crate::dap::truncate(&reason, 500).to_owned()),
        valid_until: valid_until.clone(),
    };
    let freshness = Freshness {
        observed_at,
        state: if band == Band::Stale {
            FreshnessState::Stale
        } else {
            FreshnessState::Current
        },
        valid_until,
        max_age_seconds: band.max_age_seconds().and_then(|m| u32::try_from(m).ok()),
    };
    Reported {
        band,
        availability,
        freshness,
    }
}

/// Bound the `freshness` of a [`Reported`] availability by the rooftop's
/// advertised availability SLA and by any other limit the same record is
/// already held to (for a feed answer: the record's inventory freshness,
/// which `search` and `get_vehicle` report).
///
/// DAP 6.4: a stale record MUST remain explicitly stale — one record has
/// one freshness state in every tool. The band (DAP's normative age
/// classes) is left as computed; only `freshness` is bounded: its
/// `valid_until` becomes the earliest limit, its `max_age_seconds` the
/// smallest, and a `current` state past that instant becomes `stale`.
/// `unknown` and `withdrawn` states are never changed.
pub fn bound_freshness(
    reported: &mut Reported,
    observed_at: DateTime<Utc>,
    sla_seconds: u32,
    other_limit: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) {
    let f = &mut reported.freshness;
    if !matches!(f.state, FreshnessState::Current | FreshnessState::Stale) {
        return;
    }
    let sla_until = observed_at
        .checked_add_signed(Duration::seconds(i64::from(sla_seconds)))
        .unwrap_or(observed_at);
    // The band's own end, computed (not re-read from the rendered string);
    // a stale band ended when the asserted band did.
    let band_until = band_end(reported.band, observed_at)
        .or_else(|| observed_at.checked_add_signed(Duration::seconds(ASSERTED_SECONDS)));
    let until = [Some(sla_until), band_until, other_limit]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(sla_until);
    f.valid_until = Some(crate::inventory::render::timestamp(until));
    f.max_age_seconds = Some(
        f.max_age_seconds
            .map_or(sla_seconds, |m| m.min(sla_seconds)),
    );
    if now > until {
        f.state = FreshnessState::Stale;
    }
}

/// "43 s", "12 min", "5 h", "3 d".
fn describe_age(seconds: i64) -> String {
    match seconds {
        s if s < 120 => format!("{s} s"),
        s if s < 2 * 3600 => format!("{} min", s / 60),
        s if s < 2 * 86_400 => format!("{} h", s / 3600),
        s => format!("{} d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v<T: serde::Serialize>(t: &T) -> serde_json::Value {
        serde_json::to_value(t).expect("serializes")
    }

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn obs<'a>(status: &'a str, authority: &'a str, observed_at: &str) -> Observed<'a> {
        Observed {
            status,
            authority,
            observed_at: at(observed_at),
        }
    }

    const NOW: &str = "2026-12-01T12:00:00Z";

    #[test]
    fn authoritative_bands_by_age_with_inclusive_edges() {
        let now = at(NOW);
        let cases = [
            ("2026-12-01T12:00:00Z", Band::VerifiedCurrent),
            ("2026-12-01T11:58:00Z", Band::VerifiedCurrent), // exactly 120 s
            ("2026-12-01T11:57:59.999Z", Band::RecentAuthoritative),
            ("2026-12-01T11:45:00Z", Band::RecentAuthoritative), // exactly 15 min
            ("2026-12-01T11:44:59Z", Band::Asserted),
            ("2026-11-30T12:00:00Z", Band::Asserted), // exactly 24 h
            ("2026-11-30T11:59:59Z", Band::Stale),
            ("2026-12-01T12:05:00Z", Band::VerifiedCurrent), // future: age 0
        ];
        for (t, expected) in cases {
            let o = obs("available", AUTHORITATIVE, t);
            assert_eq!(band(Some(&o), now), expected, "{t}");
        }
    }

    #[test]
    fn asserted_sources_never_reach_an_authoritative_band() {
        let now = at(NOW);
        for authority in ["dealer_asserted", "third_party", "derived", "unknown"] {
            let fresh = obs("available", authority, NOW);
            assert_eq!(band(Some(&fresh), now), Band::Asserted);
            let old = obs("available", authority, "2026-11-29T12:00:00Z");
            assert_eq!(band(Some(&old), now), Band::Stale);
        }
        assert_eq!(band(None, now), Band::Unknown);
    }

    #[test]
    fn band_ends() {
        let t = at(NOW);
        assert_eq!(
            band_end(Band::VerifiedCurrent, t),
            Some(at("2026-12-01T12:02:00Z"))
        );
        assert_eq!(
            band_end(Band::RecentAuthoritative, t),
            Some(at("2026-12-01T12:15:00Z"))
        );
        assert_eq!(
            band_end(Band::Asserted, t),
            Some(at("2026-12-02T12:00:00Z"))
        );
        assert_eq!(band_end(Band::Stale, t), None);
        assert_eq!(band_end(Band::Unknown, t), None);
    }

    #[test]
    fn available_only_inside_an_authoritative_band() {
        let now = at(NOW);
        let statuses = [
            "available",
            "in_transit",
            "on_hold",
            "pending_sale",
            "sold",
            "unavailable",
            "unknown",
        ];
        let times = [
            "2026-12-01T12:00:00Z",
            "2026-12-01T11:50:00Z",
            "2026-12-01T09:00:00Z",
            "2026-11-20T09:00:00Z",
        ];
        for authority in [AUTHORITATIVE, "dealer_asserted"] {
            for status in statuses {
                for t in times {
                    let o = obs(status, authority, t);
                    let r = report(Some(&o), "the source", now);
                    let shown = r.availability.status.as_str();
                    if shown == "available" {
                        assert!(r.band.is_authoritative(), "{authority} {status} {t}");
                        assert_eq!(v(&r.availability)["authority_status"], "authoritative");
                    }
                    if !r.band.is_authoritative() {
                        assert_ne!(shown, "available");
                        assert_ne!(v(&r.availability)["authority_status"], "authoritative");
                    }
                    assert_eq!(
                        v(&r.availability)["human_verification_required"],
                        r.band != Band::VerifiedCurrent
                    );
                }
            }
        }
    }

    #[test]
    fn reports_by_band() {
        let now = at(NOW);
        let vc = report(
            Some(&obs("available", AUTHORITATIVE, "2026-12-01T11:59:30Z")),
            "The dealer system",
            now,
        );
        assert_eq!(vc.band, Band::VerifiedCurrent);
        assert_eq!(v(&vc.availability)["status"], "available");
        assert_eq!(v(&vc.availability)["valid_until"], "2026-12-01T12:01:30Z");
        assert_eq!(v(&vc.freshness)["state"], "current");
        assert_eq!(v(&vc.freshness)["max_age_seconds"], 120);

        let asserted = report(
            Some(&obs("available", "dealer_asserted", "2026-12-01T11:17:00Z")),
            "The dealer's feed",
            now,
        );
        assert_eq!(asserted.band, Band::Asserted);
        assert_eq!(v(&asserted.availability)["status"], "unknown");
        assert_eq!(v(&asserted.availability)["authority_status"], "asserted");
        let reason = asserted.availability.reason.as_deref().unwrap();
        assert!(
            reason.contains("asserted available at 2026-12-01T11:17:00Z (asserted, 43 min old)"),
            "{reason}"
        );

        let sold = report(
            Some(&obs("sold", "dealer_asserted", "2026-12-01T11:17:00Z")),
            "The dealer's feed",
            now,
        );
        assert_eq!(v(&sold.availability)["status"], "sold");

        let stale = report(
            Some(&obs("sold", AUTHORITATIVE, "2026-11-28T12:00:00Z")),
            "The dealer system",
            now,
        );
        assert_eq!(stale.band, Band::Stale);
        assert_eq!(v(&stale.availability)["status"], "unknown");
        assert_eq!(v(&stale.freshness)["state"], "stale");
        assert_eq!(
            v(&stale.availability)["valid_until"],
            "2026-11-29T12:00:00Z"
        );

        let none = report(None, "the dealer system", now);
        assert_eq!(none.band, Band::Unknown);
        assert_eq!(v(&none.availability)["status"], "unknown");
        assert_eq!(v(&none.availability)["authority_status"], "unknown");
        assert_eq!(v(&none.freshness)["state"], "unknown");
    }
}
