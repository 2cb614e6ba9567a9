//! DAP wire rendering of a vehicle (`vehicle.schema.json#/$defs/vehicle`)
//! with its provenance and freshness, and the freshness and provenance of a
//! search response as a whole.
//!
//! Rules:
//! * No generic `price` field; `advertised_price` is classified
//!   (`generally_available`). `includes_required_dealer_charges` is true
//!   only when the required charges are KNOWN and every one is included in
//!   the amount (a known empty list counts as true). Unknown charges render
//!   `false`: claiming the amount includes charges nobody has listed would
//!   understate the real price, so the gateway never asserts it; the full
//!   disclosure comes from `dealeragent.pricing.get_disclosure`.
//! * Availability is always `asserted` (a published file is never
//!   authoritative; the authoritative check is
//!   `dealeragent.inventory.verify_availability`), with
//!   `human_verification_required: true`. A withdrawn vehicle renders
//!   status `unknown`, never `available`.
//! * Freshness: `withdrawn` for a withdrawn vehicle; else `current` while
//!   `now - observed_at <= SLA`, `stale` afterwards; `valid_until =
//!   observed_at + SLA`; `max_age_seconds = SLA`.
//! * `used_vehicle` only for used, certified and demo vehicles whose
//!   `stocked_at` is known and not in the future (the schema requires
//!   `stocked_at`); otherwise the summary is omitted, never invented.
//! * Timestamps are RFC 3339 in UTC with `Z`.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::index::SnapshotIndex;
use super::model::VehicleRecord;
pub use super::pieces::{
    Detail, FULL_ONLY, Mode, Pieces, PiecesRef, includes_required_dealer_charges, json_string,
    timestamp,
};
use super::pieces::{feed_source, valid_until};
use crate::dap::used_details::{
    Certification, Discrepancy, Distance, HistoryReportDisclosure, InventoryTenure,
    OdometerDisclosure, ProviderSource, RelayProvenance, RelaySource,
};
use crate::dap::{
    Freshness, FreshnessState, Inspection, MAX_AGE_LIMIT, Provenance, Reconditioning, Title,
    UsedVehicleDetails, truncate,
};

/// What rendering needs beyond the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderContext {
    pub now: DateTime<Utc>,
    /// The rooftop's inventory freshness SLA.
    pub inventory_sla_seconds: u32,
    /// The vehicle is absent from its rooftop's latest snapshot (grace
    /// period after removal).
    pub withdrawn: bool,
}

/// The DAP `vehicle` object of `record`: its [`Pieces`] written at
/// `ctx.now` and read back, so the tree and the pre-rendered bytes a search
/// serves are one rendering, not two.
pub fn vehicle(record: &VehicleRecord, ctx: &RenderContext) -> Value {
    let pieces = Pieces::of(record, ctx.inventory_sla_seconds);
    let mut out = String::with_capacity(pieces.len_hint());
    let now_text = json_string(&timestamp(ctx.now));
    pieces.as_ref().write(
        &mut out,
        ctx.now,
        &now_text,
        if ctx.withdrawn {
            Mode::Withdrawn
        } else {
            Mode::Live
        },
    );
    // The text was written from serde_json pieces and fixed punctuation
    // (tests parse every shape); a parse failure would be a bug here, and
    // the output schema check would then refuse the empty object.
    serde_json::from_str(&out).unwrap_or_default()
}

/// A rendered vehicle tree in the form `detail` asks for: the concise form
/// drops [`FULL_ONLY`] (the members [`PiecesRef::write_detail`] leaves out
/// of the pre-rendered concise form), for the vehicles built as trees (a
/// newer availability check, a withdrawn vehicle).
pub fn with_detail(mut vehicle: Value, detail: Detail) -> Value {
    if detail == Detail::Concise
        && let Value::Object(members) = &mut vehicle
    {
        members.retain(|key, _| !FULL_ONLY.contains(&key.as_str()));
    }
    vehicle
}

/// Like [`vehicle`]; kept for callers that own the record.
pub fn vehicle_owned(record: VehicleRecord, ctx: &RenderContext) -> Value {
    vehicle(&record, ctx)
}

/// One input of [`aggregate_freshness`]: when something was observed, the
/// SLA it is judged by, and whether it is withdrawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreshnessBasis {
    pub observed_at: DateTime<Utc>,
    pub sla_seconds: u32,
    pub withdrawn: bool,
}

impl FreshnessBasis {
    /// A vehicle on the page.
    pub fn of_record(record: &VehicleRecord, ctx: &RenderContext) -> FreshnessBasis {
        FreshnessBasis {
            observed_at: record.source.observed_at,
            sla_seconds: ctx.inventory_sla_seconds,
            withdrawn: ctx.withdrawn,
        }
    }

    /// A searched snapshot (its import time and its rooftop's SLA).
    pub fn of_snapshot(index: &SnapshotIndex) -> FreshnessBasis {
        FreshnessBasis {
            observed_at: index.created_at(),
            sla_seconds: index.inventory_sla_seconds(),
            withdrawn: false,
        }
    }
}

/// The freshness of a search response: never better than its stalest
/// part. With vehicles on the page it describes them (`observed_at` and
/// `valid_until` of the oldest, `stale` if any is stale or withdrawn,
/// the smallest SLA); with an EMPTY page it describes the searched
/// snapshots the same way (an empty result is only as fresh as the data
/// searched); with neither it is `unknown` as of `now`.
pub fn aggregate_freshness(
    page: &[FreshnessBasis],
    searched: &[FreshnessBasis],
    now: DateTime<Utc>,
) -> Value {
    let parts = if page.is_empty() { searched } else { page };
    let Some(oldest) = parts.iter().map(|p| p.observed_at).min() else {
        return json!({ "observed_at": timestamp(now), "state": "unknown" });
    };
    let until = parts
        .iter()
        .map(|p| valid_until(p.observed_at, p.sla_seconds))
        .min()
        .unwrap_or(oldest);
    let sla = parts.iter().map(|p| p.sla_seconds).min().unwrap_or(0);
    let stale = parts.iter().any(|p| p.withdrawn) || now > until;
    json!({
        "observed_at": timestamp(oldest),
        "state": if stale { "stale" } else { "current" },
        "valid_until": timestamp(until),
        "max_age_seconds": sla.min(MAX_AGE_LIMIT),
    })
}

/// Provenance of a search response: the distinct sources of the searched
/// snapshots, `derived` (the result set is computed by the gateway). With
/// no snapshot, the gateway's index itself is named as the source.
pub fn search_provenance(searched: &[std::sync::Arc<SnapshotIndex>], now: DateTime<Utc>) -> Value {
    let mut sources: Vec<Value> = Vec::new();
    for index in searched {
        for s in index.sources() {
            sources.push(json!({
                "source_name": truncate(&s.source_name, 128),
                "authority": s.authority,
                "observed_at": timestamp(s.observed_at),
                "content_digest": s.content_digest,
            }));
        }
    }
    if sources.is_empty() {
        sources.push(json!({
            "source_name": "dealer-agent-gateway inventory index",
            "authority": "derived",
            "observed_at": timestamp(now),
        }));
    }
    json!({
        "sources": sources,
        "authority_status": "derived",
        "transformed_at": timestamp(now),
        "transformations": ["filtered, sorted and paged from published inventory snapshots"],
    })
}

/// How long a relayed history report counts as current: 30 days from when
/// the dealer's source observed it, the longest validity the schema allows.
/// A report describes the vehicle's past, not the listing, so it is not
/// held to the rooftop's inventory SLA; it keeps its own freshness
/// (DAP-UV-018).
pub const HISTORY_REPORT_VALIDITY_SECONDS: u32 = MAX_AGE_LIMIT;

/// The `dealeragent.inventory.get_used_vehicle_details` document of
/// `record` (`used-vehicle.schema.json#/$defs/usedVehicleDetails`), or
/// `None` when the vehicle has no used-vehicle disclosure: a `new` vehicle
/// (DAP-UV-001), or a used one without a VIN, an odometer reading or a
/// known `stocked_at`, which the profile requires and which are never
/// invented. The caller answers `None` with the same not-found as for an
/// absent vehicle (DAP-UV-002).
///
/// Every part carries its own provenance and freshness (DAP 6.4,
/// DAP-UV-011); evidence the feed does not state is `unknown`, with
/// freshness `unknown` and provenance `unknown` saying so, never a
/// favorable value (DAP-UV-016/017); history summaries appear only where
/// the provider agreement authorizes sharing (DAP-UV-012); disagreeing
/// sources are listed as discrepancies (DAP-UV-019/020).
pub fn used_vehicle_details(
    record: &VehicleRecord,
    ctx: &RenderContext,
    trace_id: &str,
) -> Option<UsedVehicleDetails> {
    if !matches!(record.condition.as_str(), "used" | "certified" | "demo") {
        return None;
    }
    let vin = record.vin.as_deref()?;
    let odometer = record.odometer.filter(|o| o.value >= 0)?;
    // The vehicle's own rendering (the pre-rendered speed path) gives the
    // tenure and the freshness, read back into their types: one rendering
    // of them, not two. A vehicle without a dated tenure has no
    // disclosure (the profile requires one, DAP-UV-006).
    let mut doc = vehicle(record, ctx);
    let tenure: InventoryTenure =
        serde_json::from_value(doc["used_vehicle"]["inventory_tenure"].take()).ok()?;
    let freshness: Freshness = serde_json::from_value(doc["freshness"].take()).ok()?;
    let feed_source = feed_source(record);
    let observed_at = timestamp(record.source.observed_at);
    let evidence = &record.used_evidence;

    // A part the feed states: the feed's source, asserted, the vehicle's
    // freshness. A part it does not state: unknown, saying why.
    let known = || {
        (
            Provenance::asserted(vec![feed_source.clone()], None, Vec::<String>::new()),
            freshness.clone(),
        )
    };
    let unknown = |why: &str| -> (Provenance, Freshness) {
        (
            Provenance {
                sources: vec![feed_source.clone()],
                authority_status: "unknown".into(),
                transformed_at: None,
                transformations: vec![why.to_owned()],
            },
            Freshness {
                observed_at: observed_at.clone(),
                state: FreshnessState::Unknown,
                valid_until: None,
                max_age_seconds: None,
            },
        )
    };

    let (provenance, odometer_freshness) = known();
    let odometer = OdometerDisclosure {
        reading: Distance {
            value: u64::try_from(odometer.value).ok()?,
            unit: odometer.unit.as_str(),
        },
        status: evidence
            .odometer_status
            .clone()
            .or_else(|| odometer.status.map(|s| s.as_str().to_owned()))
            .unwrap_or_else(|| "unknown".to_owned()),
        observed_at: observed_at.clone(),
        provenance,
        freshness: odometer_freshness,
    };

    let mut sources = vec![RelaySource::Feed(feed_source.clone())];
    let history_reports: Vec<HistoryReportDisclosure> = record
        .history_reports
        .iter()
        .take(20)
        .map(|r| {
            let report_observed = r.observed_at.clone().unwrap_or_else(|| observed_at.clone());
            let provider = RelaySource::Provider(ProviderSource {
                source_name: truncate(&r.provider_name, 128).to_owned(),
                source_record_id: r
                    .report_id
                    .as_deref()
                    .map(|id| truncate(id, 256).to_owned()),
                authority: "third_party".into(),
                observed_at: report_observed.clone(),
                content_digest: None,
                source_uri: None,
            });
            if !sources.contains(&provider) {
                sources.push(provider.clone());
            }
            let authorized = r.summary_sharing_authorized;
            HistoryReportDisclosure {
                provider_id: r.provider_id.clone(),
                provider_name: r.provider_name.clone(),
                report_id: r.report_id.clone(),
                status: r.status.clone(),
                access: r.access.clone(),
                report_url: r.report_url.clone(),
                report_generated_at: r.report_generated_at.clone(),
                observed_at: report_observed.clone(),
                summary_sharing_authorized: authorized,
                summary: r.summary.clone().filter(|_| authorized),
                provenance: RelayProvenance {
                    sources: vec![provider, RelaySource::Feed(feed_source.clone())],
                    authority_status: "asserted".into(),
                    transformed_at: None,
                    transformations: vec![
                        "relayed by the dealer's inventory feed; not fetched from the provider"
                            .into(),
                    ],
                },
                freshness: report_freshness(&report_observed, ctx),
            }
        })
        .collect();

    let title = match &evidence.title {
        Some(t) => {
            let (p, f) = known();
            t.clone().disclosed(p, f)
        }
        None => {
            let (p, f) = unknown(
                "the dealer's feed states no title: status unknown, brands not known to be none",
            );
            Title {
                status: "unknown".into(),
                brands: Vec::new(),
                jurisdiction: None,
            }
            .disclosed(p, f)
        }
    };
    let condition_report = match &evidence.inspection {
        Some(i) => {
            let (p, f) = known();
            i.clone().disclosed(p, f)
        }
        None => {
            let (p, f) = unknown("the dealer's feed states no inspection: status unknown");
            Inspection {
                status: "unknown".into(),
                inspection_authority: "unknown".into(),
                inspector_name: None,
                inspected_at: None,
                report_url: None,
                inspection_point_count: None,
                grade: None,
                components: None,
                disclosed_damage: None,
            }
            .disclosed(p, f)
        }
    };
    let certification = certification(record, known(), &unknown);
    let reconditioning = match &evidence.reconditioning {
        Some(r) => {
            let (p, f) = known();
            r.clone().disclosed(p, f)
        }
        None => {
            let (p, f) = unknown("the dealer's feed states no reconditioning: status unknown");
            Reconditioning {
                status: "unknown".into(),
                completed_at: None,
                items: Vec::new(),
            }
            .disclosed(p, f)
        }
    };
    let discrepancies: Vec<Discrepancy> = super::model::discrepancies(record)
        .into_iter()
        .take(100)
        .map(|d| Discrepancy {
            field: truncate(&d.field, 120).to_owned(),
            source_names: d
                .source_names
                .iter()
                .map(|n| truncate(n, 200).to_owned())
                .collect(),
            description: truncate(&d.description, 1000).to_owned(),
            status: "unresolved".into(),
        })
        .collect();

    Some(UsedVehicleDetails {
        vehicle_id: record.vehicle_id.clone(),
        organization_id: record.organization_id.clone(),
        rooftop_id: record.rooftop_id.clone(),
        vin: vin.to_owned(),
        condition: record.condition.clone(),
        odometer,
        inventory_tenure: tenure,
        history_reports,
        title,
        condition_report,
        certification,
        reconditioning,
        discrepancies,
        provenance: RelayProvenance {
            sources,
            authority_status: "asserted".into(),
            transformed_at: Some(timestamp(ctx.now)),
            transformations: vec![
                "assembled from the dealer's inventory feed and the history-report facts it relays"
                    .into(),
            ],
        },
        freshness,
        trace_id: trace_id.to_owned(),
        extensions: None,
    })
}

/// The freshness of a relayed report observed at `observed` (an RFC 3339
/// text written by ingest): current for [`HISTORY_REPORT_VALIDITY_SECONDS`],
/// then stale; `withdrawn` with the vehicle.
fn report_freshness(observed: &str, ctx: &RenderContext) -> Freshness {
    let Some(at) = DateTime::parse_from_rfc3339(observed)
        .ok()
        .map(|t| t.with_timezone(&Utc))
    else {
        return Freshness {
            observed_at: observed.to_owned(),
            state: FreshnessState::Unknown,
            valid_until: None,
            max_age_seconds: None,
        };
    };
    let until = valid_until(at, HISTORY_REPORT_VALIDITY_SECONDS);
    let state = if ctx.withdrawn {
        FreshnessState::Withdrawn
    } else if ctx.now <= until {
        FreshnessState::Current
    } else {
        FreshnessState::Stale
    };
    Freshness {
        observed_at: timestamp(at),
        state,
        valid_until: Some(timestamp(until)),
        max_age_seconds: Some(HISTORY_REPORT_VALIDITY_SECONDS),
    }
}

/// The certification part. A manufacturer-CPO claim without a program name
/// is not one the gateway can make (DAP-UV-024): it is shown as `unknown`
/// with the reason, never as a lesser certification.
fn certification(
    record: &VehicleRecord,
    known: (Provenance, Freshness),
    unknown: &dyn Fn(&str) -> (Provenance, Freshness),
) -> Certification {
    let program = record.used_evidence.certification_program.as_deref();
    let (kind, (provenance, freshness)) = match (record.certification_type.as_deref(), program) {
        (None | Some("unknown"), _) => (
            "unknown",
            unknown("the dealer's feed states no certification: type unknown"),
        ),
        (Some("manufacturer_cpo"), None) => (
            "unknown",
            unknown(
                "the feed states manufacturer_cpo without a program name; a manufacturer CPO \
                 claim must name its program (DAP-UV-024), so the type is shown as unknown",
            ),
        ),
        (Some(kind), _) => (kind, known),
    };
    let certified = matches!(
        kind,
        "manufacturer_cpo" | "dealer_certified" | "third_party_certified"
    );
    Certification {
        kind: kind.to_owned(),
        program_name: program
            .filter(|_| certified)
            .map(|p| truncate(p, 200).to_owned()),
        certified_at: None,
        inspection_point_count: None,
        warranty: None,
        provenance,
        freshness,
    }
}
