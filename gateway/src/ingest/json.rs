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

use std::collections::HashSet;

use pricing::{Currency, Money};
use serde_json::Value;

use super::rules::{self, Cell, Collector, Duplicates, Key, Transformations};
use super::{Failure, FileSource, FormatResult, IngestContext, Progress, Sink};
use crate::dap::{HistoryReport, Inspection, MediaAsset, Powertrain, Reconditioning, Title};
use crate::inventory::model::{
    DistanceUnit, Odometer, OdometerStatus, UsedEvidence, VehicleRecord, VehicleSource,
};
use crate::report::explain::Schema;
use crate::report::{self, Position, Target, locate};

/// The extension of a JSON vehicle record that carries used-vehicle
/// evidence (`inventory-cells.schema.json#/$defs/jsonUsedVehicleEvidence`;
/// DAP's vehicle has no room for it outside `extensions`).
pub const EVIDENCE_EXTENSION: &str = "dealergateway.used-vehicle-evidence";

/// Read the array one record at a time (only the current record is held,
/// as text and as a JSON tree, never the whole document), handing each
/// valid vehicle to `sink`. Every rule runs on every record in one pass:
/// a record that breaks the schema is still checked against the import's
/// rules (rooftop, currency, timestamps, duplicates), so a file is
/// reported whole at once.
///
/// The array is split into its records by [`Elements`], which knows the
/// line and column where each starts; each record is then parsed from its
/// own text, so a problem is located in that text and reported at its line
/// and column in the file (docs/inventory-feeds.md "Problem reports").
pub(crate) fn parse(
    mut input: impl std::io::Read,
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
    let mut state = Records {
        validator,
        ctx,
        source,
        progress,
        sink,
        read: 0,
        total,
        problems: Collector::default(),
        duplicates: Duplicates::default(),
        vehicle_ids: HashSet::new(),
        count: 0,
    };
    let mut elements = Elements::new();
    let mut chunk = vec![0; CHUNK];
    let outcome = loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => break elements.end(),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => break Err(format!("cannot be read: {e}")),
        };
        state.read += n as u64;
        let fed = elements.feed(&chunk[..n], &mut |start, text| {
            let record: Value = serde_json::from_slice(text).map_err(|e| {
                let at = Position {
                    line: e.line(),
                    column: e.column().max(1),
                }
                .within(start);
                format!("not valid JSON (line {}, column {})", at.line, at.column)
            })?;
            let i = state.count;
            state.count += 1;
            state.record(i, &record, start, text);
            Ok(())
        });
        if let Err(reason) = fed {
            break Err(reason);
        }
    };
    if let Err(reason) = outcome {
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

/// Bytes read from the file at once.
const CHUNK: usize = 64 * 1024;

/// Receives each record's text with where it starts; an error is the
/// reason the file is unreadable (a record that is not valid JSON).
type OnRecord<'a> = dyn FnMut(Position, &[u8]) -> Result<(), String> + 'a;

/// Where the array splitter is in the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the `[`.
    Document,
    /// After the `[`: a record or `]`.
    First,
    /// After a `,`: a record.
    Next,
    /// Inside a record.
    Record,
    /// After a record: `,` or `]`.
    After,
    /// After the `]`: only whitespace.
    Done,
}

/// Splits the top-level JSON array of a feed into the text of each record,
/// chunk by chunk, counting lines and columns (columns in characters) as it
/// goes: one tight loop over the bytes, so the records are then parsed from
/// their text at slice speed. Only JSON's structure is followed here
/// (strings, escapes, nesting); each record's own syntax is serde_json's
/// to check.
struct Elements {
    phase: Phase,
    line: usize,
    column: usize,
    /// Inside a record: nesting depth, in a string, after a backslash, a
    /// scalar record (ends at a delimiter).
    depth: usize,
    in_string: bool,
    escape: bool,
    scalar: bool,
    /// Where the current record starts in the file.
    start: Position,
    /// The current record's bytes from earlier chunks.
    text: Vec<u8>,
}

impl Elements {
    fn new() -> Self {
        Self {
            phase: Phase::Document,
            line: 1,
            column: 1,
            depth: 0,
            in_string: false,
            escape: false,
            scalar: false,
            start: Position { line: 1, column: 1 },
            text: Vec::new(),
        }
    }

    fn here(&self) -> Position {
        Position {
            line: self.line,
            column: self.column,
        }
    }

    fn syntax(&self) -> String {
        format!(
            "not valid JSON (line {}, column {})",
            self.line, self.column
        )
    }

    /// Split `bytes`, the next chunk of the file, handing each complete
    /// record to `record` with where it starts.
    fn feed(&mut self, bytes: &[u8], record: &mut OnRecord<'_>) -> Result<(), String> {
        let mut from = 0;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            let whitespace = matches!(b, b' ' | b'\t' | b'\n' | b'\r');
            match self.phase {
                Phase::Record if self.scalar => {
                    if whitespace || matches!(b, b',' | b']' | b'}') {
                        // The delimiter is not part of the record: read it
                        // again after the record.
                        self.end_record(&bytes[from..i], record)?;
                        continue;
                    }
                }
                Phase::Record if self.in_string => {
                    if self.escape {
                        self.escape = false;
                    } else if b == b'\\' {
                        self.escape = true;
                    } else if b == b'"' {
                        self.in_string = false;
                        if self.depth == 0 {
                            self.end_record(&bytes[from..=i], record)?;
                        }
                    }
                }
                Phase::Record => match b {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => {
                        self.depth -= 1;
                        if self.depth == 0 {
                            self.end_record(&bytes[from..=i], record)?;
                        }
                    }
                    _ => {}
                },
                _ if whitespace => {}
                Phase::Document if b == b'[' => self.phase = Phase::First,
                Phase::Document
                    if matches!(b, b'{' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n') =>
                {
                    return Err("the document must be a JSON array of DAP vehicle records".into());
                }
                Phase::First if b == b']' => self.phase = Phase::Done,
                Phase::After if b == b']' => self.phase = Phase::Done,
                Phase::After if b == b',' => self.phase = Phase::Next,
                Phase::First | Phase::Next if b != b']' && b != b',' => {
                    from = i;
                    self.start = self.here();
                    self.text.clear();
                    self.phase = Phase::Record;
                    self.depth = usize::from(matches!(b, b'{' | b'['));
                    self.in_string = b == b'"';
                    self.escape = false;
                    self.scalar = !matches!(b, b'{' | b'[' | b'"');
                }
                _ => return Err(self.syntax()),
            }
            if b == b'\n' {
                self.line += 1;
                self.column = 1;
            } else if b & 0xC0 != 0x80 {
                // UTF-8 continuation bytes are not characters.
                self.column += 1;
            }
            i += 1;
        }
        if self.phase == Phase::Record {
            self.text.extend_from_slice(&bytes[from..]);
        }
        Ok(())
    }

    /// The record ended with `tail`, the last of its bytes in this chunk.
    fn end_record(&mut self, tail: &[u8], record: &mut OnRecord<'_>) -> Result<(), String> {
        self.phase = Phase::After;
        self.scalar = false;
        if self.text.is_empty() {
            record(self.start, tail)
        } else {
            self.text.extend_from_slice(tail);
            let text = std::mem::take(&mut self.text);
            let done = record(self.start, &text);
            self.text = text;
            self.text.clear();
            done
        }
    }

    /// The end of the file: the array must be closed.
    fn end(&mut self) -> Result<(), String> {
        match self.phase {
            Phase::Done => Ok(()),
            _ => Err(self.syntax()),
        }
    }
}

/// The per-file state of the record-by-record walk.
struct Records<'a, 'p, 's> {
    validator: &'a Schema,
    ctx: &'a IngestContext,
    source: &'a FileSource,
    progress: &'p mut dyn FnMut(Progress),
    sink: Sink<'s>,
    /// Bytes read so far, for progress.
    read: u64,
    total: u64,
    problems: Collector,
    duplicates: Duplicates,
    vehicle_ids: HashSet<String>,
    count: usize,
}

impl Records<'_, '_, '_> {
    fn record(&mut self, i: usize, record: &Value, start: Position, text: &[u8]) {
        rules::report_progress(self.progress, i + 1, self.read, self.total);
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
        let Ok(text) = std::str::from_utf8(text) else {
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

/// Convert one record; `None` with problems when a rule fails. The record
/// need not be schema-valid (its schema problems are reported beside these
/// in one pass): every member is read defensively.
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
    let history_reports: Option<Vec<HistoryReport>> = p.typed(
        i,
        &format!("{evidence_at}/history_reports"),
        evidence
            .as_ref()
            .and_then(|e| e.get("history_reports").cloned()),
    );
    // The schema-checked closed records read into their DAP types; one that
    // no longer matches its type refuses the record (a restatement of a
    // schema problem at the same place is dropped by the caller).
    let evidence_part = |name: &str| evidence.as_ref().and_then(|e| e.get(name).cloned());
    let title: Option<Title> = p.typed(i, &format!("{evidence_at}/title"), evidence_part("title"));
    let inspection: Option<Inspection> = p.typed(
        i,
        &format!("{evidence_at}/inspection"),
        evidence_part("inspection"),
    );
    let reconditioning: Option<Reconditioning> = p.typed(
        i,
        &format!("{evidence_at}/reconditioning"),
        evidence_part("reconditioning"),
    );
    let powertrain: Option<Powertrain> =
        p.typed(i, &at("/powertrain"), r.get("powertrain").cloned());
    let media: Option<Vec<MediaAsset>> = p.typed(i, &at("/media"), r.get("media").cloned());
    if p.len() != before {
        return None;
    }
    let observed_at = observed_at?;
    let used_evidence = UsedEvidence {
        odometer_status: evidence_status,
        title,
        inspection,
        reconditioning,
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
        powertrain,
        features: strings(&r["features"]),
        media: media.unwrap_or_default(),
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
        claims: Default::default(),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Split `text` fed in chunks of `size` bytes: each record's start and
    /// text, or the error.
    fn split(text: &str, size: usize) -> Result<Vec<(Position, String)>, String> {
        let mut elements = Elements::new();
        let mut out = Vec::new();
        for chunk in text.as_bytes().chunks(size) {
            elements.feed(chunk, &mut |start, bytes| {
                out.push((start, String::from_utf8(bytes.to_vec()).unwrap()));
                Ok(())
            })?;
        }
        elements.end()?;
        Ok(out)
    }

    fn at(line: usize, column: usize) -> Position {
        Position { line, column }
    }

    #[test]
    fn the_array_is_split_into_records_with_their_positions_whatever_the_chunks() {
        let text = "[\n  {\"a\": \"x]}\\\"\", \"b\": [1, {\"c\": 2}]},\n  \"\u{e9}\u{e9}\", 12.5e3 ,true,\n{}]\n";
        let expected = vec![
            (
                at(2, 3),
                "{\"a\": \"x]}\\\"\", \"b\": [1, {\"c\": 2}]}".to_owned(),
            ),
            (at(3, 3), "\"\u{e9}\u{e9}\"".to_owned()),
            (at(3, 9), "12.5e3".to_owned()),
            (at(3, 17), "true".to_owned()),
            (at(4, 1), "{}".to_owned()),
        ];
        for size in [1, 2, 3, 7, text.len()] {
            assert_eq!(split(text, size), Ok(expected.clone()), "chunks of {size}");
        }
        assert_eq!(split(" [ ] ", 2), Ok(Vec::new()));
    }

    #[test]
    fn a_document_that_is_no_array_of_records_is_refused_with_its_position() {
        let not_array = "the document must be a JSON array of DAP vehicle records";
        assert_eq!(split("{\"a\": 1}", 4), Err(not_array.into()));
        assert_eq!(split("  12", 4), Err(not_array.into()));
        for (text, line, column) in [
            ("[1,]", 1, 4),
            ("[1 2]", 1, 4),
            ("[{}]x", 1, 5),
            ("[{}", 1, 4),
            ("", 1, 1),
            ("[\n{},\n", 3, 1),
            ("x", 1, 1),
        ] {
            assert_eq!(
                split(text, 2),
                Err(format!("not valid JSON (line {line}, column {column})")),
                "{text:?}"
            );
        }
    }
}
