//! `dealeragent.inventory.verify_availability` (profile
//! `dealeragent.inventory.availability/0.1`): the authoritative
//! availability check of one vehicle, selected like `get_vehicle`.
//!
//! Policy first (DAP-CORE-031): the rooftop must be readable by the caller
//! before anything is looked up; otherwise not found. Then the rooftop's
//! source answers (docs/availability.md): `feed` → the imported record;
//! `http` → the dealer system, live or reused within its band. The band is
//! computed ([`crate::availability::band`]) and reported in the MCP
//! result's `_meta."dealergateway.availability"` (DAP 0.1's
//! `availabilityResult` allows no other member, so our additions stay out
//! of `structuredContent`); `available` is never reported outside an
//! authoritative band (DAP-CORE-036). `freshness` is bounded by the
//! rooftop's advertised availability SLA and, for a feed answer, by the
//! record's own inventory freshness: a record `search` and `get_vehicle`
//! call stale is stale here too (DAP 6.4). Sold and withdrawn units
//! answer with their status, not an error. A failed live check is
//! `dealeragent.upstream.unavailable` (retryable, `retry_after_ms`).
//! `purpose` is accepted and does not change the answer.

use std::borrow::Cow;

use crate::dap::{Availability, Freshness, FreshnessState};
use chrono::Utc;

use super::args::AvailabilityArgs;
use super::output::{AvailabilityBand, AvailabilityMeta, AvailabilityResult, Provenance, Source};
use super::target;
use super::{ToolContext, ToolError};
use crate::availability::{self, Band, band, source};
use crate::inventory::render::timestamp;

pub const NAME: &str = "dealeragent.inventory.verify_availability";

const WITHDRAWN_REASON: &str = "The vehicle was withdrawn from the dealer's latest inventory feed; \
its availability is unknown and it must not be presented as available.";

/// The availability result and the members of its MCP result `_meta`.
/// The tool (see [`super::Tool`]).
pub struct VerifyAvailability;

impl super::Tool for VerifyAvailability {
    const NAME: &'static str = NAME;
    type Args = AvailabilityArgs;
    type Output = (AvailabilityResult, AvailabilityMeta);

    async fn call(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        // Tenancy before the lookup (DAP-CORE-031), shared with get_vehicle.
        // Only the eight members read below are parsed from the record
        // (docs/benchmarks.md "verify_availability under 4x").
        let target = target::resolve_vehicle_text(ctx, args.target()).await?;
        let rooftop = target.tenant.rooftop();
        let found = &target.found;
        let record = &target.availability_facts();
        let http = availability::http_source(rooftop);
        let source_kind = if http.is_some() { "http" } else { "feed" };

        if found.withdrawn {
            let now = Utc::now();
            let observed = timestamp(record.source.observed_at);
            return Ok(typed_result(
                &record.vehicle_id,
                &record.organization_id,
                &record.rooftop_id,
                Availability {
                    status: "unknown".to_owned(),
                    authority_status: "asserted".to_owned(),
                    observed_at: observed.clone(),
                    human_verification_required: Some(true),
                    reason: Some(WITHDRAWN_REASON.to_owned()),
                    valid_until: None,
                },
                provenance(
                    &record.source.source_name,
                    &record.source.authority,
                    record.source.observed_at,
                    "asserted",
                    now,
                ),
                withdrawn_freshness(observed),
                Band::Unknown,
                false,
                source_kind,
                &ctx.trace_id,
            ));
        }

        let (observation, checked_live, what, source_name) = match http {
            None => (
                Some(availability::AvailabilityObservationView {
                    status: record.availability_status.clone().into_owned(),
                    authority: record.source.authority.clone().into_owned(),
                    observed_at: record.source.observed_at,
                }),
                false,
                availability::FEED_SOURCE,
                Cow::Borrowed(&*record.source.source_name),
            ),
            Some(http) => {
                let target = source::Target {
                    vehicle_id: &record.vehicle_id,
                    vin: record.vin.as_deref(),
                    stock_number: record.stock_number.as_deref(),
                };
                let check = ctx
                    .availability()
                    .check_http(ctx.store(), rooftop, http, &record.organization_id, &target)
                    .await
                    .map_err(|u| ToolError::UpstreamUnavailable {
                        retry_after_ms: u.retry_after_ms,
                    })?;
                (
                    check
                        .observation
                        .map(|o| availability::AvailabilityObservationView {
                            status: o.status,
                            authority: o.authority,
                            observed_at: o.observed_at,
                        }),
                    check.checked_live,
                    availability::LIVE_SOURCE,
                    Cow::Owned(source::source_name(http)),
                )
            }
        };
        let now = Utc::now();
        let observed = observation.as_ref().map(|o| band::Observed {
            status: &o.status,
            authority: &o.authority,
            observed_at: o.observed_at,
        });
        let mut reported = band::report(observed.as_ref(), what, now);
        if let Some(o) = observation.as_ref() {
            // A feed answer IS the imported record: it can be no fresher than
            // that record is in search and get_vehicle.
            let record_limit = http.is_none().then(|| {
                o.observed_at
                    .checked_add_signed(chrono::Duration::seconds(i64::from(
                        found.index.inventory_sla_seconds(),
                    )))
                    .unwrap_or(o.observed_at)
            });
            band::bound_freshness(
                &mut reported,
                o.observed_at,
                rooftop.settings.freshness_sla_seconds.availability,
                record_limit,
                now,
            );
        }
        let authority_status = reported.availability.authority_status.clone();
        Ok(typed_result(
            &record.vehicle_id,
            &record.organization_id,
            &record.rooftop_id,
            reported.availability,
            provenance(
                &source_name,
                observation.as_ref().map_or_else(
                    || http.map_or("unknown", |h| h.authority.as_str()),
                    |o| o.authority.as_str(),
                ),
                observation.as_ref().map_or(now, |o| o.observed_at),
                &authority_status,
                now,
            ),
            reported.freshness,
            reported.band,
            checked_live,
            source_kind,
            &ctx.trace_id,
        ))
    }
}

fn provenance(
    source_name: &str,
    authority: &str,
    observed_at: chrono::DateTime<Utc>,
    authority_status: &str,
    now: chrono::DateTime<Utc>,
) -> Provenance {
    Provenance {
        sources: vec![Source {
            // The schema's `source_name` bound.
            source_name: crate::dap::truncate(source_name, 128).to_owned(),
            authority: authority.to_owned(),
            observed_at: timestamp(observed_at),
            source_record_id: None,
            content_digest: None,
            source_uri: None,
        }],
        authority_status: authority_status.to_owned(),
        transformed_at: Some(timestamp(now)),
        transformations: vec![
            "availability band computed by the gateway from the observation's authority and age"
                .to_owned(),
        ],
    }
}

/// A withdrawn unit's freshness: the state says it, with the time its
/// record was last observed (DAP 6.4).
fn withdrawn_freshness(observed_at: String) -> Freshness {
    Freshness {
        observed_at,
        state: FreshnessState::Withdrawn,
        valid_until: None,
        max_age_seconds: None,
    }
}

#[allow(clippy::too_many_arguments, reason = "one flat result object")]
fn typed_result(
    vehicle_id: &str,
    organization_id: &str,
    rooftop_id: &str,
    availability: Availability,
    provenance: Provenance,
    freshness: Freshness,
    band: Band,
    checked_live: bool,
    source_kind: &'static str,
    trace_id: &str,
) -> (AvailabilityResult, AvailabilityMeta) {
    (
        AvailabilityResult {
            vehicle_id: vehicle_id.to_owned(),
            organization_id: organization_id.to_owned(),
            rooftop_id: rooftop_id.to_owned(),
            availability,
            provenance,
            freshness,
            trace_id: trace_id.to_owned(),
        },
        AvailabilityMeta {
            availability: AvailabilityBand {
                band: band.as_str(),
                checked_live,
                source: source_kind,
            },
        },
    )
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone, Utc};

    use super::{WITHDRAWN_REASON, provenance, typed_result};
    use crate::availability::{Band, band};
    use crate::tools::output::{AvailabilityResult, drift};

    /// `AvailabilityResult` against `availabilityResult`: the withdrawn
    /// answer, and the band's report of every kind of observation (none,
    /// authoritative fresh and old, asserted, each status) as the tool
    /// builds them.
    #[test]
    fn availability_results_match_their_definition() {
        let now = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        let trace = "0123456789abcdef0123456789abcdef";
        let mut instances: Vec<AvailabilityResult> = Vec::new();
        let observed = now - Duration::minutes(3);
        let stamp = crate::inventory::render::timestamp(observed);
        instances.push(
            typed_result(
                "veh.1",
                "org.a",
                "roof.a",
                crate::dap::Availability {
                    status: "unknown".into(),
                    authority_status: "asserted".into(),
                    observed_at: stamp.clone(),
                    human_verification_required: Some(true),
                    reason: Some(WITHDRAWN_REASON.into()),
                    valid_until: None,
                },
                provenance("feed.csv", "dealer_asserted", observed, "asserted", now),
                super::withdrawn_freshness(stamp),
                Band::Unknown,
                false,
                "feed",
                trace,
            )
            .0,
        );
        let mut reports = vec![band::report(None, crate::availability::LIVE_SOURCE, now)];
        for status in ["available", "on_hold", "sold", "unknown"] {
            for authority in ["authoritative_dealer_system", "dealer_asserted"] {
                for age in [Duration::seconds(5), Duration::days(3)] {
                    let o = band::Observed {
                        status,
                        authority,
                        observed_at: now - age,
                    };
                    reports.push(band::report(
                        Some(&o),
                        crate::availability::FEED_SOURCE,
                        now,
                    ));
                }
            }
        }
        for reported in reports {
            let authority_status = reported.availability.authority_status.clone();
            instances.push(
                typed_result(
                    "veh.1",
                    "org.a",
                    "roof.a",
                    reported.availability,
                    provenance(
                        &"x".repeat(300),
                        "authoritative_dealer_system",
                        observed,
                        &authority_status,
                        now,
                    ),
                    reported.freshness,
                    reported.band,
                    true,
                    "http",
                    trace,
                )
                .0,
            );
        }
        drift::check_output(&instances);
    }
}
