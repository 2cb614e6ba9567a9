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

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::{Map, Value, json};

use super::index::SnapshotIndex;
use super::model::VehicleRecord;
use super::search::inventory_age_days;

/// Longest `max_age_seconds` the schema allows (30 days).
const MAX_AGE_LIMIT: u32 = 2_592_000;
const MAX_TRANSFORMATIONS: usize = 32;

const ASSERTED_REASON: &str = "Status asserted by the dealer's inventory feed and not verified; \
call dealeragent.inventory.verify_availability before presenting this vehicle as available.";
const WITHDRAWN_REASON: &str = "The vehicle was withdrawn from the dealer's latest inventory feed; \
call dealeragent.inventory.verify_availability before presenting it as available.";

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

/// RFC 3339 with `Z`, seconds plus fraction only when present.
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

fn valid_until(observed_at: DateTime<Utc>, sla_seconds: u32) -> DateTime<Utc> {
    observed_at
        .checked_add_signed(Duration::seconds(i64::from(sla_seconds)))
        .unwrap_or(observed_at)
}

/// `current` within the SLA, `stale` after it.
fn state(observed_at: DateTime<Utc>, sla_seconds: u32, now: DateTime<Utc>) -> &'static str {
    if now <= valid_until(observed_at, sla_seconds) {
        "current"
    } else {
        "stale"
    }
}

fn freshness(record: &VehicleRecord, ctx: &RenderContext) -> Value {
    let observed = record.source.observed_at;
    let state = if ctx.withdrawn {
        "withdrawn"
    } else {
        state(observed, ctx.inventory_sla_seconds, ctx.now)
    };
    json!({
        "observed_at": timestamp(observed),
        "state": state,
        "valid_until": timestamp(valid_until(observed, ctx.inventory_sla_seconds)),
        "max_age_seconds": ctx.inventory_sla_seconds.min(MAX_AGE_LIMIT),
    })
}

fn truncate(s: &str, max_chars: usize) -> &str {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

fn provenance(record: &VehicleRecord) -> Value {
    let s = &record.source;
    let mut source = Map::new();
    source.insert("source_name".into(), truncate(&s.source_name, 128).into());
    source.insert("authority".into(), s.authority.clone().into());
    source.insert("observed_at".into(), timestamp(s.observed_at).into());
    if let Some(id) = s.source_record_id.as_deref().filter(|id| !id.is_empty()) {
        source.insert("source_record_id".into(), truncate(id, 256).into());
    }
    source.insert("content_digest".into(), s.content_digest.clone().into());
    let transformations: Vec<Value> = s
        .transformations
        .iter()
        .filter(|t| !t.is_empty())
        .take(MAX_TRANSFORMATIONS)
        .map(|t| Value::from(truncate(t, 160)))
        .collect();
    let mut out = Map::new();
    out.insert("sources".into(), Value::Array(vec![Value::Object(source)]));
    out.insert("authority_status".into(), "asserted".into());
    if !transformations.is_empty() {
        out.insert("transformations".into(), Value::Array(transformations));
    }
    Value::Object(out)
}

/// True only when the required dealer charges are known and each one is
/// included in the advertised amount (see the module rules).
pub fn includes_required_dealer_charges(record: &VehicleRecord) -> bool {
    record
        .required_dealer_charges
        .as_ref()
        .is_some_and(|charges| {
            charges
                .iter()
                .all(|c| c.get("included_in_advertised_price") == Some(&Value::Bool(true)))
        })
}

/// The DAP `vehicle` object of `record`.
pub fn vehicle(record: &VehicleRecord, ctx: &RenderContext) -> Value {
    render(
        record,
        ctx,
        record.powertrain.clone(),
        record.features.clone(),
        record.media.clone(),
    )
}

/// Like [`vehicle`], consuming the record so media, features and
/// powertrain are moved instead of deep-copied (use it with
/// `SnapshotIndex::record`, which decodes a fresh record anyway).
pub fn vehicle_owned(mut record: VehicleRecord, ctx: &RenderContext) -> Value {
    let powertrain = record.powertrain.take();
    let features = std::mem::take(&mut record.features);
    let media = std::mem::take(&mut record.media);
    render(&record, ctx, powertrain, features, media)
}

fn render(
    record: &VehicleRecord,
    ctx: &RenderContext,
    powertrain: Option<Value>,
    features: Vec<String>,
    media: Vec<Value>,
) -> Value {
    let mut v = Map::new();
    let mut put = |k: &str, val: Value| {
        v.insert(k.to_owned(), val);
    };
    put("vehicle_id", record.vehicle_id.clone().into());
    put("organization_id", record.organization_id.clone().into());
    put("rooftop_id", record.rooftop_id.clone().into());
    if let Some(vin) = &record.vin {
        put("vin", vin.clone().into());
    }
    if let Some(stock) = record.stock_number.as_deref().filter(|s| !s.is_empty()) {
        put("stock_number", truncate(stock, 80).into());
    }
    if let Some(t) = &record.vehicle_type {
        put("vehicle_type", t.clone().into());
    }
    put("year", record.year.into());
    put("make", truncate(&record.make, 100).into());
    put("model", truncate(&record.model, 120).into());
    if let Some(t) = &record.trim {
        put("trim", truncate(t, 120).into());
    }
    put("condition", record.condition.clone().into());
    for (key, value) in [
        ("body_style", &record.body_style),
        ("exterior_color", &record.exterior_color),
        ("interior_color", &record.interior_color),
    ] {
        if let Some(s) = value {
            put(key, truncate(s, 80).into());
        }
    }
    if let Some(o) = record.odometer.filter(|o| o.value >= 0) {
        let mut odo = Map::new();
        odo.insert("value".into(), o.value.into());
        odo.insert("unit".into(), o.unit.as_str().into());
        if let Some(status) = o.status {
            odo.insert(
                "status".into(),
                serde_json::to_value(status).unwrap_or(Value::Null),
            );
        }
        put("odometer", Value::Object(odo));
    }
    if let Some(p) = powertrain {
        put("powertrain", p);
    }
    if !features.is_empty() {
        put(
            "features",
            Value::Array(
                features
                    .into_iter()
                    .filter(|f| !f.is_empty())
                    .take(500)
                    .map(|f| match f.char_indices().nth(200) {
                        Some((i, _)) => Value::from(&f[..i]),
                        None => Value::from(f),
                    })
                    .collect(),
            ),
        );
    }
    if !media.is_empty() {
        put("media", Value::Array(media.into_iter().take(500).collect()));
    }
    if let Some(u) = &record.listing_url {
        put("listing_url", u.clone().into());
    }
    if let Some(u) = &record.window_sticker_url {
        put("window_sticker_url", u.clone().into());
    }

    let provenance = provenance(record);
    let freshness = freshness(record, ctx);
    if let Some(summary) = used_vehicle(record, ctx, &provenance, &freshness) {
        put("used_vehicle", summary);
    }

    put(
        "advertised_price",
        json!({
            "amount": record.advertised_price,
            "availability": "generally_available",
            "includes_required_dealer_charges": includes_required_dealer_charges(record),
        }),
    );

    let observed = record.source.observed_at;
    let (status, reason) = if ctx.withdrawn {
        ("unknown", WITHDRAWN_REASON)
    } else {
        (record.availability_status.as_str(), ASSERTED_REASON)
    };
    put(
        "availability",
        json!({
            "status": status,
            "authority_status": "asserted",
            "observed_at": timestamp(observed),
            "valid_until": timestamp(valid_until(observed, ctx.inventory_sla_seconds)),
            "human_verification_required": true,
            "reason": reason,
        }),
    );
    put("provenance", provenance);
    put("freshness", freshness);
    Value::Object(v)
}

fn used_vehicle(
    record: &VehicleRecord,
    ctx: &RenderContext,
    provenance: &Value,
    freshness: &Value,
) -> Option<Value> {
    if !matches!(record.condition.as_str(), "used" | "certified" | "demo") {
        return None;
    }
    let stocked_at = record.stocked_at?;
    let age_days = inventory_age_days(stocked_at, ctx.now)?;
    let mut tenure = Map::new();
    tenure.insert("stocked_at".into(), timestamp(stocked_at).into());
    if let Some(first) = record.first_public_listing_at {
        tenure.insert("first_public_listing_at".into(), timestamp(first).into());
    }
    tenure.insert("age_days".into(), age_days.into());
    tenure.insert("age_as_of".into(), timestamp(ctx.now).into());
    tenure.insert("age_basis".into(), "stocked_at".into());
    tenure.insert("provenance".into(), provenance.clone());
    tenure.insert("freshness".into(), freshness.clone());
    Some(json!({
        "inventory_tenure": Value::Object(tenure),
        "history_report_status": record.history_report_status.as_deref().unwrap_or("unknown"),
        "certification_type": record.certification_type.as_deref().unwrap_or("unknown"),
    }))
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
