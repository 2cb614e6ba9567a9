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
//! Problems are reported per record: `row` is the array index and `column`
//! a JSON pointer from the document root.

use std::collections::HashSet;

use pricing::{Currency, Money};
use serde_json::Value;

use super::rules::{self, Cell, Collector, Duplicates, Key, Transformations};
use super::{Failure, FileSource, FormatResult, IngestContext, Progress, Sink};
use crate::inventory::model::{
    DistanceUnit, Odometer, OdometerStatus, UsedEvidence, VehicleRecord, VehicleSource,
};

/// The extension of a JSON vehicle record that carries used-vehicle
/// evidence (`inventory-cells.schema.json#/$defs/jsonUsedVehicleEvidence`;
/// DAP's vehicle has no room for it outside `extensions`).
pub const EVIDENCE_EXTENSION: &str = "dealergateway.used-vehicle-evidence";

/// Read the array one record at a time (only the current record is held
/// as a JSON tree, never the whole document), handing each valid vehicle
/// to `sink`.
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
        read: std::rc::Rc::new(std::cell::Cell::new(0)),
    };
    let read = counted.read.clone();
    let mut state = Records {
        validator,
        ctx,
        source,
        progress,
        sink,
        read,
        total,
        problems: Collector::default(),
        duplicates: Duplicates::default(),
        vehicle_ids: HashSet::new(),
        count: 0,
    };
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(counted));
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
    read: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

/// The per-file state of the record-by-record walk.
struct Records<'a, 'p, 's> {
    validator: &'a jsonschema::Validator,
    ctx: &'a IngestContext,
    source: &'a FileSource,
    progress: &'p mut dyn FnMut(Progress),
    sink: Sink<'s>,
    read: std::rc::Rc<std::cell::Cell<u64>>,
    total: u64,
    problems: Collector,
    duplicates: Duplicates,
    vehicle_ids: HashSet<String>,
    count: usize,
}

impl Records<'_, '_, '_> {
    fn record(&mut self, i: usize, record: &Value) {
        rules::report_progress(self.progress, i + 1, self.read.get(), self.total);
        let problems = &mut self.problems;
        let schema = rules::schema_problems(self.validator, record);
        if !schema.is_empty() {
            for (at, rule) in schema {
                problems.add(i, &format!("/{i}{at}"), format!("{rule} (DAP vehicle)"));
            }
            return;
        }
        let before = problems.len();
        let v = convert(
            i,
            record,
            self.ctx,
            self.source,
            &mut self.duplicates,
            problems,
        );
        if let Some(v) = v {
            if !self.vehicle_ids.insert(v.vehicle_id.clone()) {
                problems.add(
                    i,
                    &format!("/{i}/vehicle_id"),
                    "duplicate vehicle_id: already used by an earlier record of this file",
                );
            } else if problems.len() == before {
                (self.sink)(v);
            }
        }
    }
}

impl<'de> serde::de::Visitor<'de> for &mut Records<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON array of DAP vehicle records")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(record) = seq.next_element::<Value>()? {
            let i = self.count;
            self.count += 1;
            self.record(i, &record);
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
