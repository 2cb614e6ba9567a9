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
use super::pieces::{MAX_AGE_LIMIT, truncate, valid_until};
pub use super::pieces::{
    Mode, Pieces, PiecesRef, includes_required_dealer_charges, json_string, timestamp,
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
/// serves are one rendering, not two (issue 13 item 3).
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
