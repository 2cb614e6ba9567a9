//! Validation rules shared by every feed format.
//!
//! Each check returns `Result<T, String>` where the error is the rule that
//! failed, written without the offending value ("not a valid VIN", not the
//! VIN); only a refused amount names the number written and the minor units
//! it would be (docs/inventory-feeds.md "Money"). [`Collector`] attaches the
//! row and column.
//!
//! JSON cells and JSON records are validated with the shared reporter's
//! schemas ([`crate::report::explain`]), compiled once per process
//! ([`validators`]) from the schema files shipped in the binary
//! (`catalog::SCHEMA_FILES`), so their problems are in words and name an
//! unexpected key.

use std::collections::HashMap;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use pricing::Currency;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{IngestContext, Progress, RowProblem};
use crate::dap::HistoryReport;
use crate::inventory::model::DistanceUnit;
use crate::report::explain::{Located, Schema};
use crate::report::{Target, money};
use crate::store::RooftopSettings;

/// DAP vehicle conditions. `demo` is in the DAP vehicle enum although the
/// DAP CSV column lists only `new|used|certified`; this gateway accepts it
/// (a spec gap, docs/inventory-feeds.md).
pub const CONDITIONS: &[&str] = &["new", "used", "certified", "demo"];
/// DAP `vehicleType`.
pub const VEHICLE_TYPES: &[&str] = &[
    "car",
    "truck",
    "suv",
    "van",
    "motorcycle",
    "rv",
    "trailer",
    "other",
];
/// DAP `certificationType`.
pub const CERTIFICATION_TYPES: &[&str] = &[
    "manufacturer_cpo",
    "dealer_certified",
    "third_party_certified",
    "not_certified",
    "unknown",
];
/// DAP used-vehicle odometer disclosure status (`exempt` included).
pub const ODOMETER_STATUSES: &[&str] = &[
    "actual",
    "not_actual",
    "exceeds_mechanical_limits",
    "exempt",
    "unknown",
];
/// Certification types that name a certification (and so may name its
/// program).
pub const CERTIFIED_TYPES: &[&str] = &[
    "manufacturer_cpo",
    "dealer_certified",
    "third_party_certified",
];
/// DAP `governmentCharges.status`.
pub const GOVERNMENT_CHARGES_STATUSES: &[&str] =
    &["unknown", "estimated", "calculated", "not_applicable"];
/// The DAP CSV `availability_status` column.
pub const CSV_AVAILABILITY: &[&str] = &[
    "available",
    "unavailable",
    "in_transit",
    "reserved",
    "unknown",
];

/// At most this many transformations per record, of at most this many
/// characters each (DAP `transformations`).
pub use crate::dap::wire::{MAX_TRANSFORMATION_CHARS, MAX_TRANSFORMATIONS};
/// How often (rows) progress is reported.
pub const PROGRESS_EVERY: usize = 2048;

/// Problems of one file, in the order found (sorted by row at the end).
#[derive(Debug, Default)]
pub(crate) struct Collector {
    problems: Vec<RowProblem>,
}

impl Collector {
    pub fn add(&mut self, row: usize, column: &str, rule: impl Into<String>) {
        self.problems.push(RowProblem {
            row,
            column: column.to_owned(),
            rule: rule.into(),
            position: None,
        });
    }

    /// A schema-valid JSON value as its typed DAP record (`crate::dap`).
    /// The drift tests hold those types to the same definitions, so this
    /// fails only if they drift apart; the row is then refused with the
    /// reason rather than imported with the value lost.
    pub fn typed<T: serde::de::DeserializeOwned>(
        &mut self,
        row: usize,
        column: &str,
        value: Option<Value>,
    ) -> Option<T> {
        match serde_json::from_value(value?) {
            Ok(t) => Some(t),
            Err(e) => {
                self.add(
                    row,
                    column,
                    format!("does not match its schema definition: {e}"),
                );
                None
            }
        }
    }

    /// Record the rule of an `Err` and turn the result into an `Option`.
    pub fn check<T>(&mut self, row: usize, column: &str, result: Result<T, String>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(rule) => {
                self.add(row, column, rule);
                None
            }
        }
    }

    pub fn len(&self) -> usize {
        self.problems.len()
    }

    pub fn is_empty(&self) -> bool {
        self.problems.is_empty()
    }

    pub fn into_problems(self) -> Vec<RowProblem> {
        self.problems
    }

    /// The problems recorded since the collector held `from` of them.
    pub fn since_mut(&mut self, from: usize) -> &mut [RowProblem] {
        let from = from.min(self.problems.len());
        &mut self.problems[from..]
    }

    /// Drop the problems recorded since `from` for which `drop` says so.
    pub fn drop_since(&mut self, from: usize, mut drop: impl FnMut(&RowProblem) -> bool) {
        let mut i = 0;
        self.problems.retain(|p| {
            i += 1;
            i <= from || !drop(p)
        });
    }
}

/// Transformations of one record, capped at the DAP limits.
#[derive(Debug, Default, Clone)]
pub(crate) struct Transformations(Vec<String>);

impl Transformations {
    pub fn push(&mut self, text: impl Into<String>) {
        let text: String = text.into();
        if self.0.len() < MAX_TRANSFORMATIONS && !self.0.contains(&text) {
            self.0
                .push(crate::dap::truncate(&text, MAX_TRANSFORMATION_CHARS).to_owned());
        }
    }

    pub fn into_vec(self) -> Vec<String> {
        self.0
    }
}

/// Throttled progress reporting.
pub(crate) fn report_progress(
    progress: &mut dyn FnMut(Progress),
    rows: usize,
    bytes_done: u64,
    bytes_total: u64,
) {
    if rows.is_multiple_of(PROGRESS_EVERY) {
        progress(Progress {
            rows,
            bytes_done,
            bytes_total,
        });
    }
}

// ---------------------------------------------------------------------------
// Scalar rules
// ---------------------------------------------------------------------------

/// `^[A-HJ-NPR-Z0-9]{17}$` (DAP `vin`): upper case, no I, O or Q.
pub fn is_vin(s: &str) -> bool {
    s.len() == 17
        && s.bytes().all(|b| {
            b.is_ascii_digit() || (b.is_ascii_uppercase() && !matches!(b, b'I' | b'O' | b'Q'))
        })
}

pub fn vin(s: &str) -> Result<(), String> {
    if is_vin(s) {
        Ok(())
    } else {
        Err(
            "not a valid VIN: 17 characters, digits and upper-case letters except I, O and Q"
                .into(),
        )
    }
}

/// The gateway's vehicle id for (organization, rooftop, VIN): stable across
/// imports, never the VIN itself (DAP 6.1): `veh.` + the first 24 hex digits
/// of SHA-256(organization NUL rooftop NUL VIN).
pub fn vehicle_id(organization_id: &str, rooftop_id: &str, vin: &str) -> String {
    let mut h = Sha256::new();
    h.update(organization_id.as_bytes());
    h.update([0u8]);
    h.update(rooftop_id.as_bytes());
    h.update([0u8]);
    h.update(vin.as_bytes());
    let hex = hex::encode(h.finalize());
    format!("veh.{}", &hex[..24])
}

/// A model year, 1886..=2200, digits only.
pub fn year(s: &str) -> Result<i32, String> {
    const RULE: &str = "not a model year: a whole number from 1886 to 2200";
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 4 {
        return Err(RULE.into());
    }
    match s.parse::<i32>() {
        Ok(y) if (1886..=2200).contains(&y) => Ok(y),
        _ => Err(RULE.into()),
    }
}

/// A whole number of at least 0, digits only.
pub fn non_negative_integer(s: &str) -> Result<i64, String> {
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = s.strip_prefix('-')
        && digits(rest)
    {
        return Err("must not be negative".into());
    }
    if !digits(s) {
        return Err("not a whole number: digits only, no sign, separator or decimals".into());
    }
    s.parse::<i64>()
        .map_err(|_| "too large: it does not fit in a signed 64-bit integer".into())
}

/// An amount in minor units of `currency` written in a CSV cell
/// (`advertised_price_minor`): digits only, at least 0, within the range
/// served exactly ([`money::MAX_SAFE_MINOR`]). A cell written as a decimal
/// (`299.00`) or with an exponent (`2.99e4`) is refused naming the minor
/// units it would be (docs/inventory-feeds.md "Money"); `currency` is the
/// rooftop's, when known.
pub fn minor_units(s: &str, currency: Option<Currency>) -> Result<i64, String> {
    minor_units_of(s, currency, "advertised_price_minor")
}

/// [`minor_units`] for the money column `column` (its name is in the
/// explanation of a decimal cell).
pub fn minor_units_of(s: &str, currency: Option<Currency>, column: &str) -> Result<i64, String> {
    if let Ok(minor) = non_negative_integer(s) {
        return match money::out_of_range(minor, currency, money::Range::Safe) {
            None => Ok(minor),
            Some(why) => Err(why),
        };
    }
    // Only a JSON number with a point or an exponent is explained here;
    // anything else keeps the digits-only rule's words.
    match serde_json::from_str::<serde_json::Number>(s) {
        Ok(n) if s.contains(['.', 'e', 'E']) => {
            if n.as_f64().is_some_and(f64::is_sign_negative) {
                Err("must not be negative".into())
            } else {
                Err(money::number_words(
                    &n,
                    currency,
                    money::Range::Safe,
                    column,
                ))
            }
        }
        _ => non_negative_integer(s),
    }
}

/// Free text of at most `max` characters, without control characters; an
/// empty string is refused (callers treat empty cells as unknown first).
pub fn text(s: &str, max: usize) -> Result<String, String> {
    if s.chars().any(char::is_control) {
        return Err("contains a control character (line break, tab, ...)".into());
    }
    let n = s.chars().count();
    if n == 0 || n > max {
        return Err(format!("must be 1 to {max} characters long"));
    }
    Ok(s.to_owned())
}

/// One of the allowed values, exactly.
pub fn one_of(s: &str, allowed: &[&str]) -> Result<String, String> {
    if allowed.contains(&s) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "not a known value: expected one of {}",
            allowed.join("|")
        ))
    }
}

/// An RFC 3339 date-time with an explicit offset, not later than `now` +
/// the clock skew (DAP-CORE-021, CSV-002, UV-008).
pub fn timestamp(s: &str, ctx: &IngestContext) -> Result<DateTime<Utc>, String> {
    let b = s.as_bytes();
    let shaped = b.len() >= 20 && matches!(b[10], b'T' | b't');
    let parsed = if shaped {
        DateTime::parse_from_rfc3339(s).ok()
    } else {
        None
    };
    let Some(at) = parsed else {
        let naive = chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").is_ok()
            || chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok();
        return Err(if naive {
            "has no UTC offset: timestamps must be RFC 3339 with Z or +hh:mm/-hh:mm \
             (e.g. 2026-09-01T14:00:00Z)"
                .into()
        } else {
            "not an RFC 3339 date-time with an explicit offset (e.g. 2026-09-01T14:00:00Z)".into()
        });
    };
    let at = at.with_timezone(&Utc);
    if at > ctx.now + ctx.clock_skew {
        return Err(format!(
            "is in the future beyond the allowed clock skew ({} s)",
            ctx.clock_skew.num_seconds()
        ));
    }
    Ok(at)
}

/// An absolute HTTPS URL: `https://`, a non-empty host, at most 2,048
/// characters, no whitespace, control or other characters RFC 3986 does not
/// allow, and well-formed percent escapes. (The JSON cells use the schema's
/// `format: uri` with `^https://`, `csvHttpsUrl`, which applies the same
/// rules.)
pub fn https_url(s: &str) -> Result<String, String> {
    const RULE: &str = "not an absolute https:// URL";
    let Some(rest) = s.strip_prefix("https://") else {
        return Err(RULE.into());
    };
    let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..host_end];
    let host = authority.rsplit('@').next().unwrap_or("");
    let host = host.split(':').next().unwrap_or("");
    if host.is_empty() || s.len() > 2048 {
        return Err(RULE.into());
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let allowed =
            b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=".contains(&b) || b >= 0x80;
        if b == b'%' {
            let hex = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_hexdigit);
            if !(hex(i + 1) && hex(i + 2)) {
                return Err(RULE.into());
            }
            i += 3;
            continue;
        }
        if !allowed {
            return Err(RULE.into());
        }
        i += 1;
    }
    if s.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(RULE.into());
    }
    Ok(s.to_owned())
}

/// `mi` or `km`, exactly.
pub fn distance_unit(s: &str) -> Result<DistanceUnit, String> {
    match s {
        "mi" => Ok(DistanceUnit::Mi),
        "km" => Ok(DistanceUnit::Km),
        _ => Err("not a known odometer unit: expected mi|km".into()),
    }
}

/// The rooftop's configured odometer unit, if it has a valid one.
pub fn configured_unit(settings: &RooftopSettings) -> Option<DistanceUnit> {
    distance_unit(&settings.odometer_unit).ok()
}

/// The rooftop's configured currency as a money-engine currency.
pub fn configured_currency(settings: &RooftopSettings) -> Result<Currency, String> {
    Currency::from_code(&settings.currency).map_err(|_| {
        "the rooftop's configured currency is not a usable ISO 4217 currency; fix gateway_settings.currency in the dealers file".into()
    })
}

/// A `currency` cell must name the rooftop's configured currency: prices
/// are never converted, and USD is used only when configured.
pub fn same_currency(cell: &str, configured: Currency) -> Result<(), String> {
    if cell == configured.code() {
        Ok(())
    } else {
        Err(format!(
            "differs from the rooftop's configured currency {}: prices are imported only in the \
             rooftop currency and never converted (USD only when explicitly configured)",
            configured.code()
        ))
    }
}

/// Summarize history reports into DAP `historyReportStatus`: providers
/// whose shared summaries contradict each other → `conflicting` (never the
/// more favorable one, DAP-UV-020); else any report available →
/// `available`; else any restricted → `restricted`; else all not available
/// (or no reports: `[]`) → `not_available`; else `unknown`.
pub fn history_report_status(reports: &[HistoryReport]) -> String {
    let statuses: Vec<&str> = reports.iter().map(|r| r.status.as_str()).collect();
    let s = if !crate::inventory::model::history_conflicts(reports).is_empty() {
        "conflicting"
    } else if statuses.contains(&"available") {
        "available"
    } else if statuses.contains(&"restricted") {
        "restricted"
    } else if statuses.iter().all(|s| *s == "not_available") {
        "not_available"
    } else {
        "unknown"
    };
    s.to_owned()
}

// ---------------------------------------------------------------------------
// Duplicates within one file
// ---------------------------------------------------------------------------

/// First occurrence of (rooftop, value) per key kind.
#[derive(Debug, Default)]
pub(crate) struct Duplicates {
    seen: HashMap<(u8, String, String), usize>,
}

/// What a duplicate is about.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Key {
    Vin,
    StockNumber,
}

impl Duplicates {
    /// `Some(first_row)` when (kind, rooftop, value) was already seen.
    pub fn first(&mut self, key: Key, rooftop: &str, value: &str, row: usize) -> Option<usize> {
        let k = (key as u8, rooftop.to_owned(), value.to_owned());
        match self.seen.get(&k) {
            Some(first) => Some(*first),
            None => {
                self.seen.insert(k, row);
                None
            }
        }
    }
}

/// The rule text for a duplicate; `where_first` is e.g. "line 4".
pub(crate) fn duplicate_rule(key: Key, where_first: &str) -> String {
    let what = match key {
        Key::Vin => "VIN",
        Key::StockNumber => "stock number",
    };
    format!(
        "duplicate {what} for this rooftop: already used on {where_first}; each vehicle appears once per rooftop"
    )
}

// ---------------------------------------------------------------------------
// JSON cells and JSON records
// ---------------------------------------------------------------------------

/// A JSON-valued cell of the DAP CSV.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cell {
    RequiredDealerCharges,
    ConditionalAdjustments,
    ImageUrls,
    Features,
    HistoryReports,
    Title,
    Inspection,
    Reconditioning,
    /// Not a CSV cell: the used-vehicle evidence extension of a JSON
    /// vehicle record.
    JsonUsedVehicleEvidence,
}

impl Cell {
    /// The definition in `schemas/inventory-cells.schema.json`.
    pub fn definition(self) -> &'static str {
        match self {
            Self::RequiredDealerCharges => "csvRequiredDealerCharges",
            Self::ConditionalAdjustments => "csvConditionalAdjustments",
            Self::ImageUrls => "csvImageUrls",
            Self::Features => "csvFeatures",
            Self::HistoryReports => "csvHistoryReports",
            Self::Title => "csvTitle",
            Self::Inspection => "csvInspection",
            Self::Reconditioning => "csvReconditioning",
            Self::JsonUsedVehicleEvidence => "jsonUsedVehicleEvidence",
        }
    }

    const ALL: [Cell; 9] = [
        Self::RequiredDealerCharges,
        Self::ConditionalAdjustments,
        Self::ImageUrls,
        Self::Features,
        Self::HistoryReports,
        Self::Title,
        Self::Inspection,
        Self::Reconditioning,
        Self::JsonUsedVehicleEvidence,
    ];
}

/// Schemas compiled once per process, each with the shared reporter's
/// words for its problems ([`crate::report::explain`]).
pub struct Validators {
    cells: Vec<(Cell, Schema)>,
    /// `vehicle.schema.json#/$defs/vehicle` with the gateway-computed parts
    /// (`vehicle_id`, `organization_id`, `rooftop_id`, `availability`,
    /// `provenance`, `freshness`) no longer required.
    pub(crate) json_vehicle: Schema,
}

impl std::fmt::Debug for Validators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validators").finish_non_exhaustive()
    }
}

static VALIDATORS: LazyLock<Result<Validators, String>> = LazyLock::new(compile_validators);

/// The shared validators, or why the shipped schemas do not compile.
pub fn validators() -> Result<&'static Validators, String> {
    VALIDATORS.as_ref().map_err(Clone::clone)
}

const INVENTORY_CELLS: &str = "inventory-cells.schema.json";

/// Where the feed formats are described, named by a rule without words of
/// its own.
const GUIDE: &str = "docs/inventory-feeds.md";

fn compile_validators() -> Result<Validators, String> {
    let mut cells = Vec::new();
    for cell in Cell::ALL {
        let reference = format!("{INVENTORY_CELLS}#/$defs/{}", cell.definition());
        cells.push((cell, Schema::compile(&reference, GUIDE, |_| {})?));
    }
    let json_vehicle = Schema::compile("vehicle.schema.json#/$defs/vehicle", GUIDE, |vehicle| {
        if let Some(required) = vehicle["$defs"]["vehicle"]["required"].as_array_mut() {
            required.retain(|r| {
                !matches!(
                    r.as_str(),
                    Some(
                        "vehicle_id"
                            | "organization_id"
                            | "rooftop_id"
                            | "availability"
                            | "provenance"
                            | "freshness"
                    )
                )
            });
        }
    })
    .map_err(|e| format!("vehicle (relaxed): {e}"))?;
    Ok(Validators {
        cells,
        json_vehicle,
    })
}

/// At most this many schema problems are reported per cell or record.
const MAX_SCHEMA_PROBLEMS: usize = 20;

/// Money in feeds: integers within the range served exactly; currencies
/// are tied to the rooftop's by [`same_currency`] and the cells' own rule.
pub(crate) const MONEY: money::Checks = money::Checks {
    range: money::Range::Safe,
    currencies: false,
};

/// The schema problems of `instance` in words, and the money problems
/// ([`crate::report::money`]), which replace the schema's at the same
/// pointer: each with its pointer relative to `instance` and what to
/// locate.
pub(crate) fn schema_problems(schema: &Schema, instance: &Value) -> Vec<Located> {
    let (mut out, money) = schema.problems_with_money(instance, MAX_SCHEMA_PROBLEMS, MONEY);
    out.extend(money.into_iter().map(|problem| Located {
        problem,
        target: Target::Value,
    }));
    out
}

/// A problem of a cell or record as one rule text: what was expected,
/// then the rule (`type`, `additionalProperties`, `amount_minor`, ...) and
/// the definition it belongs to.
pub(crate) fn rule_text(problem: &crate::report::Problem, definition: &str) -> String {
    format!("{} ({}, {definition})", problem.explanation, problem.rule)
}

/// Results of [`json_cell`] by (cell, text), for one file: feeds repeat the
/// same charges and adjustments on many rows. Bounded in entries and in
/// the size of the texts kept.
#[derive(Debug, Default)]
pub(crate) struct CellCache {
    entries: HashMap<(Cell, String), Result<Value, Vec<String>>>,
}

impl CellCache {
    const MAX_ENTRIES: usize = 20_000;
    const MAX_TEXT: usize = 16 * 1024;

    pub fn get(
        &mut self,
        cell: Cell,
        text: &str,
        currency: Option<Currency>,
    ) -> Result<Value, Vec<String>> {
        let cacheable = currency.is_some() && text.len() <= Self::MAX_TEXT;
        if !cacheable {
            return json_cell(cell, text, currency);
        }
        let key = (cell, text.to_owned());
        if let Some(hit) = self.entries.get(&key) {
            return hit.clone();
        }
        let result = json_cell(cell, text, currency);
        if self.entries.len() < Self::MAX_ENTRIES {
            self.entries.insert(key, result.clone());
        }
        result
    }
}

/// Parse and validate one JSON cell; money must be in `currency` (not
/// checked when the rooftop, hence its currency, is unknown). Returns the
/// value or the rules it breaks.
pub fn json_cell(cell: Cell, text: &str, currency: Option<Currency>) -> Result<Value, Vec<String>> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        vec![format!(
            "not valid JSON (line {}, column {} of the cell); an empty cell means unknown, [] means none",
            e.line(),
            e.column()
        )]
    })?;
    json_value(cell, value, currency)
}

/// [`json_cell`] for a value already parsed (a JSON record's member).
pub fn json_value(
    cell: Cell,
    value: Value,
    currency: Option<Currency>,
) -> Result<Value, Vec<String>> {
    let validators = validators().map_err(|e| vec![e])?;
    let validator = validators
        .cells
        .iter()
        .find(|(c, _)| *c == cell)
        .map(|(_, schema)| schema)
        .ok_or_else(|| vec![format!("no validator for {}", cell.definition())])?;
    let mut rules: Vec<String> = schema_problems(validator, &value)
        .into_iter()
        .map(|l| {
            let at = if l.problem.pointer.is_empty() {
                "/".to_owned()
            } else {
                l.problem.pointer.clone()
            };
            // The one key a false schema refuses in these cells: a history
            // summary without authorization (DAP-UV-012).
            let why = if at.ends_with("/summary") && l.problem.rule == "falseSchema" {
                ": summary_sharing_authorized is false, and a summary is published only where \
                 the provider agreement authorizes sharing it (DAP-UV-012)"
            } else {
                ""
            };
            format!(
                "at {at}: {}{why} ({}, {})",
                l.problem.explanation,
                l.problem.rule,
                cell.definition()
            )
        })
        .collect();
    if rules.is_empty() {
        let id_key = match cell {
            Cell::RequiredDealerCharges => Some("charge_id"),
            Cell::ConditionalAdjustments => Some("adjustment_id"),
            _ => None,
        };
        if let Some(id_key) = id_key {
            rules.extend(money_in_items(&value, currency, id_key));
        }
        rules.extend(evidence_rules(cell, &value));
    }
    if rules.is_empty() {
        Ok(value)
    } else {
        Err(rules)
    }
}

/// Each item's `amount.currency` must be the rooftop currency and each id
/// unique within the cell.
fn money_in_items(value: &Value, currency: Option<Currency>, id_key: &str) -> Vec<String> {
    let mut rules = Vec::new();
    let mut ids = std::collections::HashSet::new();
    for (i, item) in value.as_array().into_iter().flatten().enumerate() {
        if let (Some(c), Some(currency)) = (item["amount"]["currency"].as_str(), currency)
            && c != currency.code()
        {
            rules.push(format!(
                "at /{i}/amount/currency: differs from the rooftop's configured currency {}; \
                 money is never converted",
                currency.code()
            ));
        }
        if let Some(id) = item[id_key].as_str()
            && !ids.insert(id.to_owned())
        {
            rules.push(format!(
                "at /{i}/{id_key}: repeats an earlier {id_key} of this cell"
            ));
        }
    }
    rules
}

/// The rules of the used-vehicle evidence cells that JSON Schema does not
/// express, each naming where in the cell and why (value-free).
fn evidence_rules(cell: Cell, value: &Value) -> Vec<String> {
    let mut rules = Vec::new();
    match cell {
        Cell::HistoryReports => history_rules(value, "", &mut rules),
        Cell::Title => title_rules(value, "", &mut rules),
        Cell::Reconditioning => reconditioning_rules(value, "", &mut rules),
        Cell::JsonUsedVehicleEvidence => {
            history_rules(&value["history_reports"], "/history_reports", &mut rules);
            if value.get("title").is_some() {
                title_rules(&value["title"], "/title", &mut rules);
            }
            if value.get("reconditioning").is_some() {
                reconditioning_rules(&value["reconditioning"], "/reconditioning", &mut rules);
            }
        }
        Cell::RequiredDealerCharges
        | Cell::ConditionalAdjustments
        | Cell::ImageUrls
        | Cell::Features
        | Cell::Inspection => {}
    }
    rules
}

/// One report per provider (the schema refuses a summary that is not
/// authorized, DAP-UV-012).
fn history_rules(reports: &Value, at: &str, rules: &mut Vec<String>) {
    let mut providers = std::collections::HashSet::new();
    for (i, r) in reports.as_array().into_iter().flatten().enumerate() {
        if let Some(p) = r["provider_id"].as_str()
            && !providers.insert(p)
        {
            rules.push(format!(
                "at {at}/{i}/provider_id: repeats an earlier provider_id of this cell; give one \
                 report per provider"
            ));
        }
    }
}

/// `branded` names a brand; `clear` names none.
fn title_rules(title: &Value, at: &str, rules: &mut Vec<String>) {
    let brands = title["brands"].as_array().map_or(0, Vec::len);
    match title["status"].as_str() {
        Some("branded") if brands == 0 => rules.push(format!(
            "at {at}/brands: status branded needs at least one brand"
        )),
        Some("clear") if brands > 0 => rules.push(format!(
            "at {at}/brands: status clear allows no brands; use status branded"
        )),
        _ => {}
    }
}

/// `completed` only when nothing disclosed is still open and no safety or
/// recall item was declined (DAP-UV-027); `completed_at` only then.
fn reconditioning_rules(recon: &Value, at: &str, rules: &mut Vec<String>) {
    let completed = recon["status"].as_str() == Some("completed");
    if recon.get("completed_at").is_some() && !completed {
        rules.push(format!(
            "at {at}/completed_at: completed_at is given but status is not completed"
        ));
    }
    if !completed {
        return;
    }
    for (i, item) in recon["items"].as_array().into_iter().flatten().enumerate() {
        let status = item["status"].as_str().unwrap_or("unknown");
        let safety = matches!(item["category"].as_str(), Some("safety" | "recall"));
        if matches!(status, "planned" | "in_progress" | "unknown")
            || (safety && status == "declined")
        {
            rules.push(format!(
                "at {at}/items/{i}/status: status completed is not allowed while an item is \
                 planned, in progress or unknown, or a safety or recall item was declined \
                 (DAP-UV-027)"
            ));
        }
    }
}

/// Timestamps inside evidence must not be in the future either
/// (DAP-CORE-021, UV-008): `(pointer, rule)` of each one that is.
pub(crate) fn evidence_times(
    cell: Cell,
    value: &Value,
    ctx: &IngestContext,
) -> Vec<(String, String)> {
    let mut pointers: Vec<String> = Vec::new();
    let mut reports = |base: &str, v: &Value| {
        for (i, _) in v.as_array().into_iter().flatten().enumerate() {
            pointers.push(format!("{base}/{i}/report_generated_at"));
            pointers.push(format!("{base}/{i}/observed_at"));
        }
    };
    match cell {
        Cell::HistoryReports => reports("", value),
        Cell::Inspection => pointers.push("/inspected_at".into()),
        Cell::Reconditioning => pointers.push("/completed_at".into()),
        Cell::JsonUsedVehicleEvidence => {
            reports("/history_reports", &value["history_reports"]);
            pointers.push("/inspection/inspected_at".into());
            pointers.push("/reconditioning/completed_at".into());
        }
        Cell::RequiredDealerCharges
        | Cell::ConditionalAdjustments
        | Cell::ImageUrls
        | Cell::Features
        | Cell::Title => {}
    }
    pointers
        .into_iter()
        .filter_map(|p| {
            let text = value.pointer(&p)?.as_str()?;
            timestamp(text, ctx).err().map(|rule| (p, rule))
        })
        .collect()
}
