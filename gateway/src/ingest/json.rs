//! A JSON array of DAP vehicle records (`vehicle.schema.json#/$defs/vehicle`)
//! as another gateway or a dealer system publishes them.
//!
//! The parts the gateway computes are optional on the way in:
//! `vehicle_id` (derived from the VIN like CSV rows when absent),
//! `organization_id` (must be `--organization` when present), `rooftop_id`
//! (`--rooftop` when absent), `availability` (status `unknown` when
//! absent), `provenance` and `freshness`. Incoming freshness is ignored
//! (the gateway computes its own); the first incoming provenance source is
//! kept as the record's source, except that a file is never authoritative.
//! Problems are reported per record: `row` is the array index, `column`
//! a JSON pointer from the document root, and `position` the line and
//! column in the file.

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;

use pricing::{Currency, Money};
use serde_json::Value;

use super::rules::{self, Cell, Collector, Duplicates, Key, Transformations};
use super::{Failure, FileSource, FormatResult, IngestContext, Progress, Sink};
use crate::inventory::model::{
    DistanceUnit, Odometer, OdometerStatus, UsedEvidence, VehicleRecord, VehicleSource,
};
use crate::report::explain::Schema;
use crate::report::{self, Position, Target, locate};

/// The extension of a JSON vehicle record that carries used-vehicle
/// evidence (`inventory-cells.schema.json#/$defs/jsonUsedVehicleEvidence`;
/// DAP's vehicle has no room for it outside `extensions`).
pub const EVIDENCE_EXTENSION: &str = "dealergateway.used-vehicle-evidence";

/// Read the array one record at a time (only the current record is held
/// as a JSON tree and as text, never the whole document), handing each
/// valid vehicle to `sink`. Every rule runs on every record in one pass:
/// a record that breaks the schema is still checked against the import's
/// rules (rooftop, currency, timestamps, duplicates), so a file is
/// reported whole at once.
pub(crate) fn parse(
    input: impl std::io::Read,
    total: u64,
    ctx: &IngestContext,
    source: &FileSource,
    progress: &mut dyn FnMut(Progress),
    sink: Sink<'_>,
) -> FormatResult {
    let validator = match rules::validators() {
        Ok(v) => &v.json_vehicle,
        Err(e) => return (0, Err(Failure::Unreadable(e))),
    };
    let counted = Counted {
        inner: input,
        read: Rc::new(std::cell::Cell::new(0)),
    };
    let read = counted.read.clone();
    let tap = Rc::new(RefCell::new(TapState::default()));
    let mut state = Records {
        validator,
        ctx,
        source,
        progress,
        sink,
        read,
        total,
        tap: tap.clone(),
        problems: Collector::default(),
        duplicates: Duplicates::default(),
        vehicle_ids: HashSet::new(),
        count: 0,
    };
    let reader = Tap {
        inner: counted,
        buffer: vec![0; TAP_BUFFER].into_boxed_slice(),
        at: 0,
        filled: 0,
        state: tap,
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let outcome = serde::Deserializer::deserialize_any(&mut de, &mut state).and_then(|()| de.end());
    if let Err(e) = outcome {
        let reason = if e.to_string().contains(NOT_AN_ARRAY) {
            "the document must be a JSON array of DAP vehicle records".to_owned()
        } else if e.is_io() {
            format!("cannot be read: {e}")
        } else {
            format!("not valid JSON (line {}, column {})", e.line(), e.column())
        };
        return (0, Err(Failure::Unreadable(reason)));
    }
    let rows = state.count;
    (state.progress)(Progress {
        rows,
        bytes_done: total,
        bytes_total: total,
    });
    if state.problems.is_empty() {
        (rows, Ok(()))
    } else {
        (rows, Err(Failure::Problems(state.problems.into_problems())))
    }
}

/// The failure raised when the top-level value is not an array.
const NOT_AN_ARRAY: &str = "dealer-gateway: the document is not an array";

/// Counts the bytes read, for progress.
struct Counted<R> {
    inner: R,
    read: Rc<std::cell::Cell<u64>>,
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

/// Sees every byte the JSON parser consumes, in order (serde_json reads
/// its input one byte at a time), to know the line and column of each
/// record's first byte and keep the record's text while it is read: a
/// problem of the record is then located in that text and reported at its
/// line and column in the file (docs/inventory-feeds.md "Problem
/// reports"). Only the current record's text is held.
struct Tap<R> {
    /// The file, read in [`TAP_BUFFER`] chunks (the tap is the buffer:
    /// one layer per byte the parser asks for, not two).
    inner: R,
    buffer: Box<[u8]>,
    /// The next byte to hand out, and the end of what was read.
    at: usize,
    filled: usize,
    state: Rc<RefCell<TapState>>,
}

/// Bytes read from the file at once by the tap.
const TAP_BUFFER: usize = 64 * 1024;

/// What the tap knows: the position of the next byte, and the record being
/// recorded.
struct TapState {
    line: usize,
    column: usize,
    /// Waiting for the first byte of the next record (after whitespace and
    /// the comma between records).
    awaiting: bool,
    recording: bool,
    /// Where the current record starts in the file.
    start: Option<Position>,
    /// The current record's bytes.
    text: Vec<u8>,
}

impl Default for TapState {
    fn default() -> Self {
        Self {
            line: 1,
            column: 1,
            awaiting: false,
            recording: false,
            start: None,
            text: Vec::new(),
        }
    }
}

impl TapState {
    /// The next bytes read belong to the next record.
    fn await_record(&mut self) {
        self.awaiting = true;
        self.recording = false;
        self.start = None;
        self.text.clear();
    }

    fn consume(&mut self, byte: u8) {
        if self.awaiting && !matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | b',') {
            self.awaiting = false;
            self.recording = true;
            self.start = Some(Position {
                line: self.line,
                column: self.column,
            });
        }
        if self.recording {
            self.text.push(byte);
        }
        if byte == b'\n' {
            self.line += 1;
            self.column = 1;
        } else if byte & 0xC0 != 0x80 {
            // Columns count characters: UTF-8 continuation bytes do not.
            self.column += 1;
        }
    }

    /// The record just read: where it starts and its text.
    fn take_record(&mut self) -> (Option<Position>, Vec<u8>) {
        self.recording = false;
        (self.start.take(), std::mem::take(&mut self.text))
    }
}

impl<R: std::io::Read> std::io::Read for Tap<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.filled {
            self.filled = self.inner.read(&mut self.buffer)?;
            self.at = 0;
        }
        let n = buf.len().min(self.filled - self.at);
        let bytes = &self.buffer[self.at..self.at + n];
        buf[..n].copy_from_slice(bytes);
        self.at += n;
        let mut state = self.state.borrow_mut();
        for byte in bytes {
            state.consume(*byte);
        }
        Ok(n)
    }
}

/// The per-file state of the record-by-record walk.
struct Records<'a, 'p, 's> {
    validator: &'a Schema,
    ctx: &'a IngestContext,
    source: &'a FileSource,
    progress: &'p mut dyn FnMut(Progress),
    sink: Sink<'s>,
    read: Rc<std::cell::Cell<u64>>,
    total: u64,
    tap: Rc<RefCell<TapState>>,
    problems: Collector,
    duplicates: Duplicates,
    vehicle_ids: HashSet<String>,
    count: usize,
}

impl Records<'_, '_, '_> {
    fn record(&mut self, i: usize, record: &Value, start: Option<Position>, text: &[u8]) {
        rules::report_progress(self.progress, i + 1, self.read.get(), self.total);
        let root = format!("/{i}");
        let problems = &mut self.problems;
        let before = problems.len();
        let mut schema_pointers = Vec::new();
        let mut keys = Vec::new();
        for l in rules::schema_problems(self.validator, record) {
            let pointer = format!("{root}{}", l.problem.pointer);
            if l.target == Target::Key {
                keys.push(pointer.clone());
            }
            problems.add(i, &pointer, rules::rule_text(&l.problem, "DAP vehicle"));
            schema_pointers.push(pointer);
        }
        let after_schema = problems.len();
        let v = convert(
            i,
            record,
            self.ctx,
            self.source,
            &mut self.duplicates,
            problems,
        );
        // A rule that restates a schema problem (the same field, or one
        // inside it) adds nothing to the report.
        problems.drop_since(after_schema, |p| {
            schema_pointers.iter().any(|s| {
                report::is_at_or_under(&p.column, s)
                    || (p.column != root && report::is_at_or_under(s, &p.column))
            })
        });
        match v {
            Some(v) if !self.vehicle_ids.insert(v.vehicle_id.clone()) => {
                problems.add(
                    i,
                    &format!("{root}/vehicle_id"),
                    "duplicate vehicle_id: already used by an earlier record of this file",
                );
            }
            Some(v) if problems.len() == before => (self.sink)(v),
            Some(_) => {}
            // Never drop a record in silence: every way convert gives up
            // should have said why; if one did not, say so.
            None if problems.len() == before => problems.add(
                i,
                &root,
                "the record cannot be read as a vehicle: a member the gateway needs is not in \
                 the form it reads (see docs/inventory-feeds.md, Format 3)",
            ),
            None => {}
        }
        let (Some(start), Ok(text)) = (start, std::str::from_utf8(text)) else {
            return;
        };
        for p in problems.since_mut(before) {
            let Some(inner) = p.column.strip_prefix(&root) else {
                continue;
            };
            let target = if keys.contains(&p.column) {
                Target::Key
            } else {
                Target::Value
            };
            p.position = locate::in_json(text, inner, target).map(|at| at.within(start));
        }
    }
}

impl<'de> serde::de::Visitor<'de> for &mut Records<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON array of DAP vehicle records")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            self.tap.borrow_mut().await_record();
            let Some(record) = seq.next_element::<Value>()? else {
                break;
            };
            let (start, text) = self.tap.borrow_mut().take_record();
            let i = self.count;
            self.count += 1;
            self.record(i, &record, start, &text);
        }
        Ok(())
    }

    // Anything but an array.
    fn visit_map<A: serde::de::MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(serde::de::Error::custom(NOT_AN_ARRAY))
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        Err(E::custom(NOT_AN_ARRAY))
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        Err(E::custom(NOT_AN_ARRAY))
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        Err(E::custom(NOT_AN_ARRAY))
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        Err(E::custom(NOT_AN_ARRAY))
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        Err(E::custom(NOT_AN_ARRAY))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Err(E::custom(NOT_AN_ARRAY))
    }
}

/// Convert one schema-valid record; `None` with problems when a rule fails.
fn convert(
    i: usize,
    r: &Value,
    ctx: &IngestContext,
    source: &FileSource,
    duplicates: &mut Duplicates,
    p: &mut Collector,
) -> Option<VehicleRecord> {
    let at = |path: &str| format!("/{i}{path}");
    let before = p.len();
    let s = |v: &Value| v.as_str().map(str::to_owned);
    let mut transformations = Transformations::default();

    if let Some(org) = r["organization_id"].as_str()
        && org != ctx.organization_id
    {
        p.add(
            i,
            &at("/organization_id"),
            format!(
                "names another organization than --organization {}",
                ctx.organization_id
            ),
        );
    }
    let rooftop_id: Option<String> = match (r["rooftop_id"].as_str(), &ctx.rooftop) {
        (Some(rid), Some(only)) if rid != only => {
            p.add(
                i,
                &at("/rooftop_id"),
                format!("names another rooftop than --rooftop {only}"),
            );
            None
        }
        (Some(rid), _) => Some(rid.to_owned()),
        (None, Some(only)) => Some(only.clone()),
        (None, None) => {
            p.add(
                i,
                &at("/rooftop_id"),
                "rooftop_id is required when --rooftop is not given",
            );
            None
        }
    };
    let settings = rooftop_id.as_deref().and_then(|rid| {
        let found = ctx.rooftop_settings(rid);
        if found.is_none() {
            p.add(
                i,
                &at("/rooftop_id"),
                format!(
                    "not a rooftop of organization {}; import the dealers file first",
                    ctx.organization_id
                ),
            );
        }
        found
    });
    let currency: Option<Currency> =
        settings.and_then(|s| p.check(i, &at("/rooftop_id"), rules::configured_currency(s)));

    // Price: exact, in the rooftop currency.
    let amount = &r["advertised_price"]["amount"];
    if let (Some(c), Some(code)) = (currency, amount["currency"].as_str()) {
        p.check(
            i,
            &at("/advertised_price/amount/currency"),
            rules::same_currency(code, c),
        );
    }
    let price = currency.and_then(|c| {
        amount["amount_minor"]
            .as_i64()
            .map(|m| Money::from_minor(m, c))
    });

    if let Some(url) = r["listing_url"].as_str() {
        p.check(i, &at("/listing_url"), rules::https_url(url));
    }

    let time = |path: &str, v: &Value, p: &mut Collector| {
        v.as_str()
            .and_then(|t| p.check(i, &at(path), rules::timestamp(t, ctx)))
    };
    let availability_observed = time(
        "/availability/observed_at",
        &r["availability"]["observed_at"],
        p,
    );
    let tenure = &r["used_vehicle"]["inventory_tenure"];
    let stocked_at = time(
        "/used_vehicle/inventory_tenure/stocked_at",
        &tenure["stocked_at"],
        p,
    );
    let first_public_listing_at = time(
        "/used_vehicle/inventory_tenure/first_public_listing_at",
        &tenure["first_public_listing_at"],
        p,
    );

    // The record's source: the first incoming provenance source, else the file.
    let incoming = &r["provenance"]["sources"][0];
    let source_observed = time(
        "/provenance/sources/0/observed_at",
        &incoming["observed_at"],
        p,
    );
    let observed_at = if incoming.is_object() {
        source_observed
    } else {
        availability_observed
    };
    if observed_at.is_none() && !incoming.is_object() && r["availability"]["observed_at"].is_null()
    {
        p.add(
            i,
            &at(""),
            "no observation time: give availability.observed_at or a provenance source",
        );
    }
    for t in r["provenance"]["transformations"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(t) = t.as_str() {
            transformations.push(t);
        }
    }
    let (source_name, source_record_id, authority, content_digest) = if incoming.is_object() {
        let mut authority =
            s(&incoming["authority"]).unwrap_or_else(|| super::FILE_AUTHORITY.into());
        if authority == "authoritative_dealer_system" {
            authority = super::FILE_AUTHORITY.to_owned();
            transformations.push(
                "source authority lowered to dealer_asserted: a file import is never authoritative",
            );
        }
        (
            s(&incoming["source_name"]).unwrap_or_else(|| source.source_name.clone()),
            s(&incoming["source_record_id"]),
            authority,
            s(&incoming["content_digest"]).unwrap_or_else(|| source.content_digest.clone()),
        )
    } else {
        (
            source.source_name.clone(),
            s(&r["vehicle_id"]).or_else(|| s(&r["stock_number"])),
            super::FILE_AUTHORITY.to_owned(),
            source.content_digest.clone(),
        )
    };

    let vin = s(&r["vin"]);
    let stock = s(&r["stock_number"]);
    let vehicle_id = match (s(&r["vehicle_id"]), &vin, &rooftop_id) {
        (Some(id), _, _) => Some(id),
        (None, Some(v), Some(rid)) => Some(rules::vehicle_id(&ctx.organization_id, rid, v)),
        (None, None, _) => {
            p.add(
                i,
                &at("/vehicle_id"),
                "vehicle_id is required when the record has no vin",
            );
            None
        }
        (None, Some(_), None) => None,
    };
    if let Some(rid) = &rooftop_id {
        if let Some(v) = &vin
            && let Some(first) = duplicates.first(Key::Vin, rid, v, i)
        {
            p.add(
                i,
                &at("/vin"),
                rules::duplicate_rule(Key::Vin, &format!("record {first}")),
            );
        }
        if let Some(st) = &stock
            && let Some(first) = duplicates.first(Key::StockNumber, rid, st, i)
        {
            p.add(
                i,
                &at("/stock_number"),
                rules::duplicate_rule(Key::StockNumber, &format!("record {first}")),
            );
        }
    }

    // Used-vehicle evidence: the same shapes and rules as the CSV cells.
    let evidence_at = at(&format!("/extensions/{EVIDENCE_EXTENSION}"));
    let evidence = r["extensions"].get(EVIDENCE_EXTENSION).and_then(|v| {
        match rules::json_value(Cell::JsonUsedVehicleEvidence, v.clone(), currency) {
            Ok(v) => {
                let late = rules::evidence_times(Cell::JsonUsedVehicleEvidence, &v, ctx);
                for (pointer, rule) in &late {
                    p.add(i, &format!("{evidence_at}{pointer}"), rule.clone());
                }
                late.is_empty().then_some(v)
            }
            Err(broken) => {
                for rule in broken {
                    p.add(i, &evidence_at, rule);
                }
                None
            }
        }
    });
    let evidence_status = evidence.as_ref().and_then(|e| s(&e["odometer_status"]));

    let odometer = r.get("odometer").and_then(|o| {
        let unit = match o["unit"].as_str()? {
            "mi" => DistanceUnit::Mi,
            "km" => DistanceUnit::Km,
            _ => return None,
        };
        let status = match evidence_status.as_deref().or(o["status"].as_str()) {
            Some("actual") => Some(OdometerStatus::Actual),
            Some("not_actual") => Some(OdometerStatus::NotActual),
            Some("exceeds_mechanical_limits") => Some(OdometerStatus::ExceedsMechanicalLimits),
            Some("unknown") => Some(OdometerStatus::Unknown),
            _ => None,
        };
        Some(Odometer {
            value: o["value"].as_i64()?,
            unit,
            status,
        })
    });

    if evidence_status.is_some() && odometer.is_none() {
        p.add(
            i,
            &format!("{evidence_at}/odometer_status"),
            "odometer_status needs an odometer: a disclosure status describes a reading",
        );
    }
    let certification_type = s(&r["used_vehicle"]["certification_type"]);
    let certification_program = evidence
        .as_ref()
        .and_then(|e| s(&e["certification_program"]));
    if certification_program.is_some()
        && !certification_type
            .as_deref()
            .is_some_and(|c| rules::CERTIFIED_TYPES.contains(&c))
    {
        p.add(
            i,
            &format!("{evidence_at}/certification_program"),
            format!(
                "certification_program needs used_vehicle.certification_type {}: only a \
                 certification has a program",
                rules::CERTIFIED_TYPES.join("|")
            ),
        );
    }
    if p.len() != before {
        return None;
    }
    let observed_at = observed_at?;
    let history_reports = evidence
        .as_ref()
        .and_then(|e| e["history_reports"].as_array().cloned());
    let used_evidence = UsedEvidence {
        odometer_status: evidence_status,
        title: evidence.as_ref().and_then(|e| e.get("title").cloned()),
        inspection: evidence.as_ref().and_then(|e| e.get("inspection").cloned()),
        reconditioning: evidence
            .as_ref()
            .and_then(|e| e.get("reconditioning").cloned()),
        certification_program,
    };
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|x| x.as_str().map(str::to_owned))
            .collect()
    };
    Some(VehicleRecord {
        vehicle_id: vehicle_id?,
        organization_id: ctx.organization_id.clone(),
        rooftop_id: rooftop_id?,
        vin,
        stock_number: stock,
        year: i32::try_from(r["year"].as_i64()?).ok()?,
        make: s(&r["make"])?,
        model: s(&r["model"])?,
        trim: s(&r["trim"]),
        condition: s(&r["condition"])?,
        vehicle_type: s(&r["vehicle_type"]),
        body_style: s(&r["body_style"]),
        exterior_color: s(&r["exterior_color"]),
        interior_color: s(&r["interior_color"]),
        odometer,
        powertrain: r.get("powertrain").cloned(),
        features: strings(&r["features"]),
        media: r["media"].as_array().cloned().unwrap_or_default(),
        listing_url: s(&r["listing_url"]),
        window_sticker_url: s(&r["window_sticker_url"]),
        advertised_price: price?,
        required_dealer_charges: None,
        conditional_adjustments: None,
        government_charges_status: None,
        availability_status: s(&r["availability"]["status"]).unwrap_or_else(|| "unknown".into()),
        stocked_at,
        first_public_listing_at,
        // With the reports, their summary decides the status (a record's own
        // status could claim available over reports that conflict).
        history_report_status: match &history_reports {
            Some(reports) => Some(rules::history_report_status(reports)),
            None => s(&r["used_vehicle"]["history_report_status"]),
        },
        history_reports: history_reports.unwrap_or_default(),
        certification_type,
        used_evidence,
        source: VehicleSource {
            source_name,
            source_record_id,
            authority,
            content_digest,
            observed_at,
            transformations: transformations.into_vec(),
        },
    })
}
