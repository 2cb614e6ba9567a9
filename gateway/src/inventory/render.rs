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

/// The DAP `vehicle` object of `record`: its [`Pieces`] written at
/// `ctx.now` and read back, so the tree and the pre-rendered bytes a search
/// serves are one rendering, not two (issue 13 item 3).
pub fn vehicle(record: &VehicleRecord, ctx: &RenderContext) -> Value {
    let pieces = Pieces::of(record, ctx.inventory_sla_seconds);
    let mut out = String::with_capacity(pieces.len_hint());
    let now_text = json_string(&timestamp(ctx.now));
    pieces
        .as_ref()
        .write(&mut out, ctx.now, &now_text, Mode::of(ctx));
    // The text was written from serde_json pieces and fixed punctuation
    // (tests parse every shape); a parse failure would be a bug here, and
    // the output schema check would then refuse the empty object.
    serde_json::from_str(&out).unwrap_or_default()
}

/// Like [`vehicle`]; kept for callers that own the record.
pub fn vehicle_owned(record: VehicleRecord, ctx: &RenderContext) -> Value {
    vehicle(&record, ctx)
}

/// Which availability and freshness a vehicle is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// In its rooftop's latest snapshot: the feed's status, `current` or
    /// `stale` by the SLA.
    Live,
    /// Dropped by the latest snapshot (grace period): status `unknown`,
    /// freshness `withdrawn`.
    Withdrawn,
}

impl Mode {
    fn of(ctx: &RenderContext) -> Mode {
        if ctx.withdrawn {
            Mode::Withdrawn
        } else {
            Mode::Live
        }
    }
}

/// `s` as a JSON string literal (quotes included).
pub fn json_string(s: &str) -> String {
    // Serializing a `str` cannot fail.
    serde_json::to_string(s).unwrap_or_default()
}

/// Serialize `v` (a tree built here, so it cannot fail).
fn json_text(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// The parts of one vehicle's DAP JSON that do not depend on when it is
/// asked for, serialized once when its snapshot is indexed (issue 13
/// item 3). A request only adds what depends on the clock (freshness
/// `state`, the used-vehicle tenure's `age_days` and `age_as_of`) or on the
/// vehicle's standing (withdrawn). [`PiecesRef::write`] joins them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pieces {
    /// `{` and every member except `used_vehicle`, `availability`,
    /// `provenance` and `freshness`, comma-separated, without a closing
    /// brace.
    pub head: String,
    /// The `provenance` object.
    pub provenance: String,
    /// `source.observed_at` as a JSON string.
    pub observed_at: String,
    /// `observed_at + SLA` as a JSON string.
    pub valid_until: String,
    /// `"stocked_at":…[,"first_public_listing_at":…]` of a vehicle that
    /// can carry a used-vehicle summary (used, certified or demo with a
    /// known `stocked_at`); empty otherwise.
    pub tenure: String,
    /// `"history_report_status":…,"certification_type":…` of that summary.
    pub used_tail: String,
    /// The feed's availability status (a DAP enum value).
    pub status: String,
    /// `valid_until` in microseconds since the epoch.
    pub valid_until_us: i64,
    /// `stocked_at` in microseconds since the epoch, when `tenure` is set.
    pub stocked_us: Option<i64>,
    /// `max_age_seconds` of the freshness.
    pub max_age_seconds: u32,
}

/// Borrowed [`Pieces`] (the index keeps them in one arena).
#[derive(Debug, Clone, Copy)]
pub struct PiecesRef<'a> {
    pub head: &'a str,
    pub provenance: &'a str,
    pub observed_at: &'a str,
    pub valid_until: &'a str,
    pub tenure: &'a str,
    pub used_tail: &'a str,
    pub status: &'a str,
    pub valid_until_us: i64,
    pub stocked_us: Option<i64>,
    pub max_age_seconds: u32,
}

impl Pieces {
    /// Render the request-independent parts of `record` under a rooftop
    /// SLA of `sla_seconds`.
    pub fn of(record: &VehicleRecord, sla_seconds: u32) -> Pieces {
        let observed = record.source.observed_at;
        let until = valid_until(observed, sla_seconds);
        let mut head = json_text(&Value::Object(static_members(record)));
        // `{…}` → `{…` (the request appends the rest and the brace).
        head.pop();
        let used = matches!(record.condition.as_str(), "used" | "certified" | "demo");
        let (tenure, used_tail, stocked_us) = match record.stocked_at.filter(|_| used) {
            None => (String::new(), String::new(), None),
            Some(stocked_at) => {
                let mut tenure = format!("\"stocked_at\":{}", json_string(&timestamp(stocked_at)));
                if let Some(first) = record.first_public_listing_at {
                    tenure.push_str(",\"first_public_listing_at\":");
                    tenure.push_str(&json_string(&timestamp(first)));
                }
                let tail = format!(
                    "\"history_report_status\":{},\"certification_type\":{}",
                    json_string(record.history_report_status.as_deref().unwrap_or("unknown")),
                    json_string(record.certification_type.as_deref().unwrap_or("unknown")),
                );
                (tenure, tail, Some(stocked_at.timestamp_micros()))
            }
        };
        Pieces {
            head,
            provenance: json_text(&provenance(record)),
            observed_at: json_string(&timestamp(observed)),
            valid_until: json_string(&timestamp(until)),
            tenure,
            used_tail,
            status: record.availability_status.clone(),
            valid_until_us: until.timestamp_micros(),
            stocked_us,
            max_age_seconds: sla_seconds.min(MAX_AGE_LIMIT),
        }
    }

    pub fn as_ref(&self) -> PiecesRef<'_> {
        PiecesRef {
            head: &self.head,
            provenance: &self.provenance,
            observed_at: &self.observed_at,
            valid_until: &self.valid_until,
            tenure: &self.tenure,
            used_tail: &self.used_tail,
            status: &self.status,
            valid_until_us: self.valid_until_us,
            stocked_us: self.stocked_us,
            max_age_seconds: self.max_age_seconds,
        }
    }

    /// Bytes a written vehicle takes, roughly (for buffer sizing).
    pub fn len_hint(&self) -> usize {
        self.head.len() + 2 * self.provenance.len() + 512
    }
}

impl PiecesRef<'_> {
    /// Append the vehicle's JSON object as of `now` (`now_text` is
    /// `json_string(&timestamp(now))`, formatted once per response).
    pub fn write(&self, out: &mut String, now: DateTime<Utc>, now_text: &str, mode: Mode) {
        let state = match mode {
            Mode::Withdrawn => "withdrawn",
            Mode::Live if now.timestamp_micros() <= self.valid_until_us => "current",
            Mode::Live => "stale",
        };
        out.push_str(self.head);
        if let Some(age_days) = self
            .stocked_us
            .and_then(DateTime::from_timestamp_micros)
            .and_then(|stocked_at| inventory_age_days(stocked_at, now))
        {
            out.push_str(",\"used_vehicle\":{\"inventory_tenure\":{");
            out.push_str(self.tenure);
            out.push_str(",\"age_days\":");
            out.push_str(&age_days.to_string());
            out.push_str(",\"age_as_of\":");
            out.push_str(now_text);
            out.push_str(",\"age_basis\":\"stocked_at\",\"provenance\":");
            out.push_str(self.provenance);
            out.push_str(",\"freshness\":");
            self.write_freshness(out, state);
            out.push_str("},");
            out.push_str(self.used_tail);
            out.push('}');
        }
        let (status, reason) = match mode {
            Mode::Live => (self.status, ASSERTED_REASON_JSON),
            Mode::Withdrawn => ("unknown", WITHDRAWN_REASON_JSON),
        };
        out.push_str(",\"availability\":{\"status\":\"");
        // A DAP enum value (ingest validated it): no escaping needed.
        out.push_str(status);
        out.push_str("\",\"authority_status\":\"asserted\",\"observed_at\":");
        out.push_str(self.observed_at);
        out.push_str(",\"valid_until\":");
        out.push_str(self.valid_until);
        out.push_str(",\"human_verification_required\":true,\"reason\":");
        out.push_str(reason);
        out.push_str("},\"provenance\":");
        out.push_str(self.provenance);
        out.push_str(",\"freshness\":");
        self.write_freshness(out, state);
        out.push('}');
    }

    fn write_freshness(&self, out: &mut String, state: &str) {
        out.push_str("{\"observed_at\":");
        out.push_str(self.observed_at);
        out.push_str(",\"state\":\"");
        out.push_str(state);
        out.push_str("\",\"valid_until\":");
        out.push_str(self.valid_until);
        out.push_str(",\"max_age_seconds\":");
        out.push_str(&self.max_age_seconds.to_string());
        out.push('}');
    }
}

/// The reasons as JSON string literals (plain ASCII without quotes or
/// backslashes, so the literal is the text in quotes; a unit test checks).
const ASSERTED_REASON_JSON: &str = concat!(
    "\"",
    "Status asserted by the dealer's inventory feed and not verified; \
call dealeragent.inventory.verify_availability before presenting this vehicle as available.",
    "\""
);
const WITHDRAWN_REASON_JSON: &str = concat!(
    "\"",
    "The vehicle was withdrawn from the dealer's latest inventory feed; \
call dealeragent.inventory.verify_availability before presenting it as available.",
    "\""
);

/// Every member of the vehicle object that depends on nothing but the
/// record, in wire order.
fn static_members(record: &VehicleRecord) -> Map<String, Value> {
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
    if let Some(p) = &record.powertrain {
        put("powertrain", p.clone());
    }
    if !record.features.is_empty() {
        put(
            "features",
            Value::Array(
                record
                    .features
                    .iter()
                    .filter(|f| !f.is_empty())
                    .take(500)
                    .map(|f| Value::from(truncate(f, 200)))
                    .collect(),
            ),
        );
    }
    if !record.media.is_empty() {
        put(
            "media",
            Value::Array(record.media.iter().take(500).cloned().collect()),
        );
    }
    if let Some(u) = &record.listing_url {
        put("listing_url", u.clone().into());
    }
    if let Some(u) = &record.window_sticker_url {
        put("window_sticker_url", u.clone().into());
    }
    put(
        "advertised_price",
        json!({
            "amount": record.advertised_price,
            "availability": "generally_available",
            "includes_required_dealer_charges": includes_required_dealer_charges(record),
        }),
    );
    v
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

#[cfg(test)]
mod unit {
    use super::*;

    /// The reason literals are written into responses unescaped.
    #[test]
    fn reason_literals_are_json_strings_of_plain_text() {
        for literal in [ASSERTED_REASON_JSON, WITHDRAWN_REASON_JSON] {
            let text: String = serde_json::from_str(literal).unwrap();
            assert_eq!(json_string(&text), literal);
            assert!(text.starts_with("Status") || text.starts_with("The vehicle"));
        }
    }
}
