//! The pre-rendered parts of a vehicle's DAP JSON and the rules they are
//! written by (see `render` for the rules in full).
//! The ground floor of `inventory`: it imports only the vehicle record, so
//! the index (which stores pieces) and the renderer (which reads them back)
//! both build on it.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::Value;
#[cfg(test)]
use serde_json::{Map, json};

use super::model::VehicleRecord;
use crate::dap::{MAX_AGE_LIMIT, Provenance, Source, truncate};

/// Microseconds in a day.
pub(crate) const DAY_US: i128 = 86_400_000_000;

/// RFC 3339 with `Z`, seconds plus fraction only when present.
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

pub(crate) fn valid_until(observed_at: DateTime<Utc>, sla_seconds: u32) -> DateTime<Utc> {
    observed_at
        .checked_add_signed(Duration::seconds(i64::from(sla_seconds)))
        .unwrap_or(observed_at)
}

/// The DAP `source` of a record's feed.
pub(crate) fn feed_source(record: &VehicleRecord) -> Source {
    let s = &record.source;
    Source {
        source_name: truncate(&s.source_name, 128).to_owned(),
        authority: s.authority.clone(),
        observed_at: timestamp(s.observed_at),
        source_record_id: s
            .source_record_id
            .as_deref()
            .filter(|id| !id.is_empty())
            .map(|id| truncate(id, 256).to_owned()),
        content_digest: Some(s.content_digest.clone()),
        source_uri: None,
    }
}

#[cfg(test)]
pub(crate) fn provenance(record: &VehicleRecord) -> Value {
    let provenance = Provenance::asserted(
        vec![feed_source(record)],
        None,
        &record.source.transformations,
    );
    serde_json::to_value(provenance).unwrap_or(Value::Null)
}

/// [`provenance`] as JSON text, written straight from the typed value (the
/// same text as serializing the tree [`provenance`] returns).
pub(crate) fn provenance_text(record: &VehicleRecord) -> String {
    let provenance = Provenance::asserted(
        vec![feed_source(record)],
        None,
        &record.source.transformations,
    );
    serde_json::to_string(&provenance).unwrap_or_else(|_| "null".to_owned())
}

/// True only when the required dealer charges are known and each one is
/// included in the advertised amount (see the module rules).
pub fn includes_required_dealer_charges(record: &VehicleRecord) -> bool {
    record
        .required_dealer_charges
        .as_ref()
        .is_some_and(|charges| charges.iter().all(|c| c.included_in_advertised_price))
}

/// Inventory age in complete elapsed 24-hour periods from `basis` to
/// `now`; `None` for a basis in the future.
pub fn inventory_age_days(basis: DateTime<Utc>, now: DateTime<Utc>) -> Option<u64> {
    let elapsed = i128::from(now.timestamp_micros()) - i128::from(basis.timestamp_micros());
    if elapsed < 0 {
        return None;
    }
    u64::try_from(elapsed / DAY_US).ok()
}

/// How much of a vehicle a result carries (the `detail` argument of the
/// vehicle tools; docs/inventory.md "Detail and the result budget").
///
/// Both forms are DAP `vehicle` objects: the concise one leaves out
/// [`FULL_ONLY`], every one of which is optional in the vehicle
/// definition, and keeps identity, price, availability, provenance and
/// freshness (DAP 6.4: every record says where it came from and how old
/// it is).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Detail {
    /// Identity, what a buyer compares first, the advertised price,
    /// availability, provenance and freshness.
    #[default]
    Concise,
    /// Every member the gateway knows.
    Full,
}

impl Detail {
    pub fn as_str(self) -> &'static str {
        match self {
            Detail::Concise => "concise",
            Detail::Full => "full",
        }
    }
}

/// The members of the DAP vehicle only the full form carries, in wire
/// order (all optional in `vehicle.schema.json#/$defs/vehicle`).
pub const FULL_ONLY: [&str; 7] = [
    "body_style",
    "interior_color",
    "powertrain",
    "features",
    "media",
    "window_sticker_url",
    "used_vehicle",
];

/// Separates, in [`Pieces::head`], the members of the concise form from
/// those only the full form carries. serde_json never writes a raw NUL
/// (control characters in strings are escaped), so the byte cannot occur
/// in the JSON around it.
const DETAIL_MARK: char = '\0';

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

/// `s` as a JSON string literal (quotes included).
pub fn json_string(s: &str) -> String {
    // Serializing a `str` cannot fail.
    serde_json::to_string(s).unwrap_or_default()
}

/// Serialize `v` (a tree built here, so it cannot fail).
#[cfg(test)]
fn json_text(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// The parts of one vehicle's DAP JSON that do not depend on when it is
/// asked for, serialized once when its snapshot is indexed
/// (docs/benchmarks.md, "After render-once"). A request only adds what
/// depends on the clock (freshness `state`, the used-vehicle tenure's
/// `age_days` and `age_as_of`) or on the vehicle's standing (withdrawn).
/// [`PiecesRef::write`] joins them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pieces {
    /// `{` and every member except `used_vehicle`, `availability`,
    /// `provenance` and `freshness`, comma-separated, without a closing
    /// brace: first the members of the concise form, then [`DETAIL_MARK`],
    /// then those only the full form carries ([`FULL_ONLY`]), each after
    /// its comma.
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
        let head = static_head(record);
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
            provenance: provenance_text(record),
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
    /// Append the vehicle's full JSON object as of `now` (`now_text` is
    /// `json_string(&timestamp(now))`, formatted once per response).
    pub fn write(&self, out: &mut String, now: DateTime<Utc>, now_text: &str, mode: Mode) {
        self.write_detail(out, now, now_text, mode, Detail::Full);
    }

    /// Append the vehicle's JSON object in the form `detail` asks for: the
    /// concise form is a prefix of the head and the same availability,
    /// provenance and freshness, so it costs no more per vehicle than the
    /// full one (docs/benchmarks.md "Result sizes and the token budget").
    pub fn write_detail(
        &self,
        out: &mut String,
        now: DateTime<Utc>,
        now_text: &str,
        mode: Mode,
        detail: Detail,
    ) {
        let state = match mode {
            Mode::Withdrawn => "withdrawn",
            Mode::Live if now.timestamp_micros() <= self.valid_until_us => "current",
            Mode::Live => "stale",
        };
        let (concise, full_only) = self.head.split_once(DETAIL_MARK).unwrap_or((self.head, ""));
        out.push_str(concise);
        if detail == Detail::Concise {
            self.write_tail(out, state, mode);
            return;
        }
        out.push_str(full_only);
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
        self.write_tail(out, state, mode);
    }

    /// `availability`, `provenance`, `freshness` and the closing brace.
    fn write_tail(&self, out: &mut String, state: &str, mode: Mode) {
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

/// Check the vehicle `pieces` write against `check` (the DAP vehicle
/// schema) the way `SnapshotIndex::check_pieces` checks an indexed row: as
/// written at `now` in [`Mode::Live`], and, for a used vehicle stocked after
/// `now` (it gains its tenure summary only later), also as written a day
/// after it was stocked; the written text must parse as JSON first.
/// `now_text` is `json_string(&timestamp(now))`. Used to check a snapshot's
/// vehicles while it is read, on another thread than the index builder
/// (docs/benchmarks.md "Start-up at a million").
pub fn check_rendering(
    pieces: PiecesRef<'_>,
    now: DateTime<Utc>,
    now_text: &str,
    out: &mut String,
    check: &dyn Fn(&Value) -> Result<(), String>,
) -> Result<(), String> {
    let later = pieces
        .stocked_us
        .and_then(DateTime::from_timestamp_micros)
        .filter(|stocked_at| *stocked_at > now)
        .map(|stocked_at| stocked_at + Duration::days(1));
    for at in std::iter::once(now).chain(later) {
        out.clear();
        let at_text = if at == now {
            now_text.to_owned()
        } else {
            json_string(&timestamp(at))
        };
        pieces.write(out, at, &at_text, Mode::Live);
        let value = serde_json::from_str::<Value>(out).map_err(|e| format!("not JSON: {e}"))?;
        check(&value)?;
    }
    Ok(())
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

/// Members of a JSON object written one at a time (keys are this
/// module's literals, values typed: serializing cannot fail).
struct Members {
    out: String,
    /// Whether the next member needs a comma before it.
    comma: bool,
}

impl Members {
    /// The opening brace and the members after it.
    fn object(capacity: usize) -> Members {
        let mut out = String::with_capacity(capacity);
        out.push('{');
        Members { out, comma: false }
    }

    /// Members that continue an object written elsewhere: each after its
    /// comma.
    fn continued(capacity: usize) -> Members {
        Members {
            out: String::with_capacity(capacity),
            comma: true,
        }
    }

    fn key(&mut self, key: &str) -> &mut String {
        if self.comma {
            self.out.push(',');
        }
        self.comma = true;
        self.out.push('"');
        self.out.push_str(key);
        self.out.push_str("\":");
        &mut self.out
    }

    fn put(&mut self, key: &str, value: &(impl serde::Serialize + ?Sized)) {
        let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
        self.key(key).push_str(&text);
    }
}

/// [`Pieces::head`]: every member of the vehicle object that depends on
/// nothing but the record, in wire order, written straight from the typed
/// record: those of the concise form, [`DETAIL_MARK`], then each of those
/// only the full form carries ([`FULL_ONLY`]) after its comma. The same
/// text as serializing the trees of the reference in the unit tests
/// (built as `serde_json::Value` maps, which cost a fifth of a snapshot's
/// start-up: docs/benchmarks.md "Start-up at a million"); a test compares
/// the two.
fn static_head(record: &VehicleRecord) -> String {
    // Room for the usual sizes up front: growing the text a member at a
    // time was a quarter of writing it (docs/benchmarks.md "Start-up at a
    // million"). A guess only; an unusual record still fits by growing.
    let mut v = Members::object(640);
    let mut full = Members::continued(
        192 + 96 * record.media.len().min(500) + 24 * record.features.len().min(500),
    );
    v.put("vehicle_id", &record.vehicle_id);
    v.put("organization_id", &record.organization_id);
    v.put("rooftop_id", &record.rooftop_id);
    if let Some(vin) = &record.vin {
        v.put("vin", vin);
    }
    if let Some(stock) = record.stock_number.as_deref().filter(|s| !s.is_empty()) {
        v.put("stock_number", truncate(stock, 80));
    }
    if let Some(t) = &record.vehicle_type {
        v.put("vehicle_type", t);
    }
    v.put("year", &record.year);
    v.put("make", truncate(&record.make, 100));
    v.put("model", truncate(&record.model, 120));
    if let Some(t) = &record.trim {
        v.put("trim", truncate(t, 120));
    }
    v.put("condition", &record.condition);
    if let Some(s) = &record.body_style {
        full.put("body_style", truncate(s, 80));
    }
    if let Some(s) = &record.exterior_color {
        v.put("exterior_color", truncate(s, 80));
    }
    if let Some(s) = &record.interior_color {
        full.put("interior_color", truncate(s, 80));
    }
    if let Some(o) = record.odometer.filter(|o| o.value >= 0) {
        let out = v.key("odometer");
        out.push_str("{\"value\":");
        out.push_str(&o.value.to_string());
        out.push_str(",\"unit\":");
        out.push_str(&json_string(o.unit.as_str()));
        if let Some(status) = o.status {
            out.push_str(",\"status\":");
            out.push_str(&serde_json::to_string(&status).unwrap_or_else(|_| "null".to_owned()));
        }
        out.push('}');
    }
    if let Some(p) = &record.powertrain {
        full.put("powertrain", p);
    }
    if !record.features.is_empty() {
        let features: Vec<&str> = record
            .features
            .iter()
            .filter(|f| !f.is_empty())
            .take(500)
            .map(|f| truncate(f, 200))
            .collect();
        full.put("features", &features);
    }
    if !record.media.is_empty() {
        full.put("media", &record.media[..record.media.len().min(500)]);
    }
    if let Some(u) = &record.listing_url {
        v.put("listing_url", u);
    }
    if let Some(u) = &record.window_sticker_url {
        full.put("window_sticker_url", u);
    }
    let out = v.key("advertised_price");
    out.push_str("{\"amount\":");
    out.push_str(&serde_json::to_string(&record.advertised_price).unwrap_or_default());
    out.push_str(",\"availability\":\"generally_available\",\"includes_required_dealer_charges\":");
    out.push_str(if includes_required_dealer_charges(record) {
        "true"
    } else {
        "false"
    });
    out.push('}');
    let mut head = String::with_capacity(v.out.len() + 1 + full.out.len());
    head.push_str(&v.out);
    head.push(DETAIL_MARK);
    head.push_str(&full.out);
    head
}

/// The head as it was first written, from `serde_json::Value` trees: the
/// reference [`static_head`] is tested against.
#[cfg(test)]
pub(crate) fn reference_head(record: &VehicleRecord) -> String {
    let (concise, full_only) = static_members(record);
    let mut head = json_text(&Value::Object(concise));
    head.pop();
    head.push(DETAIL_MARK);
    if !full_only.is_empty() {
        let rest = json_text(&Value::Object(full_only));
        head.push(',');
        head.push_str(&rest[1..rest.len() - 1]);
    }
    head
}

/// Every member of the vehicle object that depends on nothing but the
/// record, in wire order: those of the concise form, then those only the
/// full form carries ([`FULL_ONLY`]).
#[cfg(test)]
fn static_members(record: &VehicleRecord) -> (Map<String, Value>, Map<String, Value>) {
    let mut v = Map::new();
    let mut full_only = Map::new();
    let mut put = |k: &str, val: Value| {
        if FULL_ONLY.contains(&k) {
            full_only.insert(k.to_owned(), val);
        } else {
            v.insert(k.to_owned(), val);
        }
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
        // A record of strings and JSON numbers: serializing cannot fail.
        put("powertrain", serde_json::to_value(p).unwrap_or(Value::Null));
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
            Value::Array(
                record
                    .media
                    .iter()
                    .take(500)
                    .map(|m| serde_json::to_value(m).unwrap_or(Value::Null))
                    .collect(),
            ),
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
    (v, full_only)
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
