//! DAP Inventory CSV 0.1 (`dealer-agent-inventory-csv/0.1`): UTF-8, one
//! header row, RFC 4180 quoting, one row per (vehicle, rooftop). An empty
//! cell means unknown: never 0, false or "included".
//!
//! This reader is strict: cells are taken as written (no trimming, no case
//! folding: a lower-case VIN is an error), a column DAP does not define is
//! an error (a misspelt optional column would otherwise be dropped
//! silently), and every rule of docs/inventory-feeds.md applies.

use std::collections::HashSet;

use pricing::Money;
use serde_json::Value;

use super::claims;
use super::rules::{self, Cell, CellCache, Collector, Duplicates, Key, Transformations};
use super::{Failure, FileSource, FormatResult, IngestContext, Progress, Sink};
use crate::dap::{
    ConditionalAdjustment, DealerCharge, HistoryReport, Inspection, MediaAsset, Reconditioning,
    Title,
};
use crate::inventory::model::{
    Odometer, OdometerStatus, PricingClaims, UsedEvidence, VehicleRecord, VehicleSource,
};

/// Every DAP Inventory CSV 0.1 column, in the order DAP lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    OrganizationId,
    RooftopId,
    Vin,
    StockNumber,
    Year,
    Make,
    Model,
    Condition,
    ListingUrl,
    ObservedAt,
    AdvertisedPriceMinor,
    Currency,
    RequiredDealerChargesJson,
    ConditionalAdjustmentsJson,
    GovernmentChargesStatus,
    AvailabilityStatus,
    Trim,
    VehicleType,
    BodyStyle,
    ExteriorColor,
    InteriorColor,
    OdometerValue,
    OdometerUnit,
    StockedAt,
    FirstPublicListingAt,
    HistoryReportsJson,
    CertificationType,
    ImageUrlsJson,
    FeaturesJson,
    // This gateway's used-vehicle evidence columns (profile
    // dealeragent.used-vehicle.read/0.1; DAP's CSV defines none).
    OdometerStatus,
    TitleJson,
    InspectionJson,
    ReconditioningJson,
    CertificationProgram,
    ChargeClassesJson,
    ReferencePriceMinor,
}

impl Column {
    pub const ALL: [Column; 36] = [
        Self::OrganizationId,
        Self::RooftopId,
        Self::Vin,
        Self::StockNumber,
        Self::Year,
        Self::Make,
        Self::Model,
        Self::Condition,
        Self::ListingUrl,
        Self::ObservedAt,
        Self::AdvertisedPriceMinor,
        Self::Currency,
        Self::RequiredDealerChargesJson,
        Self::ConditionalAdjustmentsJson,
        Self::GovernmentChargesStatus,
        Self::AvailabilityStatus,
        Self::Trim,
        Self::VehicleType,
        Self::BodyStyle,
        Self::ExteriorColor,
        Self::InteriorColor,
        Self::OdometerValue,
        Self::OdometerUnit,
        Self::StockedAt,
        Self::FirstPublicListingAt,
        Self::HistoryReportsJson,
        Self::CertificationType,
        Self::ImageUrlsJson,
        Self::FeaturesJson,
        Self::OdometerStatus,
        Self::TitleJson,
        Self::InspectionJson,
        Self::ReconditioningJson,
        Self::CertificationProgram,
        Self::ChargeClassesJson,
        Self::ReferencePriceMinor,
    ];

    /// The header name.
    pub fn name(self) -> &'static str {
        match self {
            Self::OrganizationId => "organization_id",
            Self::RooftopId => "rooftop_id",
            Self::Vin => "vin",
            Self::StockNumber => "stock_number",
            Self::Year => "year",
            Self::Make => "make",
            Self::Model => "model",
            Self::Condition => "condition",
            Self::ListingUrl => "listing_url",
            Self::ObservedAt => "observed_at",
            Self::AdvertisedPriceMinor => "advertised_price_minor",
            Self::Currency => "currency",
            Self::RequiredDealerChargesJson => "required_dealer_charges_json",
            Self::ConditionalAdjustmentsJson => "conditional_adjustments_json",
            Self::GovernmentChargesStatus => "government_charges_status",
            Self::AvailabilityStatus => "availability_status",
            Self::Trim => "trim",
            Self::VehicleType => "vehicle_type",
            Self::BodyStyle => "body_style",
            Self::ExteriorColor => "exterior_color",
            Self::InteriorColor => "interior_color",
            Self::OdometerValue => "odometer_value",
            Self::OdometerUnit => "odometer_unit",
            Self::StockedAt => "stocked_at",
            Self::FirstPublicListingAt => "first_public_listing_at",
            Self::HistoryReportsJson => "history_reports_json",
            Self::CertificationType => "certification_type",
            Self::ImageUrlsJson => "image_urls_json",
            Self::FeaturesJson => "features_json",
            Self::OdometerStatus => "odometer_status",
            Self::TitleJson => "title_json",
            Self::InspectionJson => "inspection_json",
            Self::ReconditioningJson => "reconditioning_json",
            Self::CertificationProgram => "certification_program",
            Self::ChargeClassesJson => "charge_classes_json",
            Self::ReferencePriceMinor => "reference_price_minor",
        }
    }

    /// Required columns: DAP's ten, plus `advertised_price_minor`, which
    /// this gateway requires because a DAP vehicle carries an advertised
    /// price.
    pub fn required(self) -> bool {
        matches!(
            self,
            Self::OrganizationId
                | Self::RooftopId
                | Self::Vin
                | Self::StockNumber
                | Self::Year
                | Self::Make
                | Self::Model
                | Self::Condition
                | Self::ListingUrl
                | Self::ObservedAt
                | Self::AdvertisedPriceMinor
        )
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The columns of free text a dealer writes (stock number, make, model,
    /// trim, body style, colours, certification program): the only cells of
    /// a file whose first character the dealer chooses freely. Every other
    /// column is an identifier, an enum, a number, a timestamp, an HTTPS URL
    /// or a JSON array, none of which can begin with a formula trigger
    /// (docs/inventory-feeds.md "Cells a spreadsheet would run").
    pub fn is_free_text(self) -> bool {
        matches!(
            self,
            Self::StockNumber
                | Self::Make
                | Self::Model
                | Self::Trim
                | Self::BodyStyle
                | Self::ExteriorColor
                | Self::InteriorColor
                | Self::CertificationProgram
        )
    }
}

/// First characters that make a spreadsheet read a cell as a formula
/// rather than text: `=`, `+`, `-`, `@` and tab and carriage return
/// (OWASP "CSV Injection"), NUL (OWASP ASVS 1.2.10) and line feed (like
/// carriage return). The published feed writes a free-text cell that
/// begins with one of them, after any apostrophes, with one more leading
/// apostrophe, the spreadsheets' "this is text" mark
/// ([`crate::feed_export`]); [`restore_formula_text`] takes it off again
/// (docs/inventory-feeds.md "Cells a spreadsheet would run").
pub const FORMULA_TRIGGERS: [char; 8] = ['=', '+', '-', '@', '\t', '\r', '\n', '\0'];

/// Does `cell` need (export) or carry (import, after its first
/// apostrophe) the apostrophe mark: its first character after any
/// leading apostrophes is a [`FORMULA_TRIGGERS`] character?
pub fn starts_like_a_formula(cell: &str) -> bool {
    cell.trim_start_matches('\'')
        .starts_with(FORMULA_TRIGGERS.as_slice())
}

/// A free-text cell as the dealer wrote it: one leading apostrophe is
/// dropped when what follows it starts like a formula (apostrophes, then a
/// trigger). The exact inverse of the feed's neutralising: a value the
/// feed wrote with an added apostrophe gets it back off, and a value that
/// merely begins with an apostrophe ("'71 classic") is kept as written.
/// The importer accepts cells that begin with a trigger (a trim "-Line"
/// is a dealer's real data); it is the exporter's duty to neutralise them.
pub fn restore_formula_text(cell: &str) -> &str {
    match cell.strip_prefix('\'') {
        Some(rest) if starts_like_a_formula(rest) => rest,
        _ => cell,
    }
}

/// Counts line terminators in the bytes the CSV reader pulls, so record
/// line numbers come from the file itself.
///
/// The csv crate's `Position::line()` is one too low for every record
/// after the header of a CRLF file (the RFC 4180 and spreadsheet default):
/// it takes a record's position before consuming the `\n` of the previous
/// `\r\n`, and counts only `\n`. Here a record starting
/// at byte `b` is on line 1 + the number of terminators (`\r\n`, `\n` or a
/// lone `\r`) whose last byte is at or before `b`; that is right whether
/// `b` is the first byte of the record or the `\n` the reader has not yet
/// skipped. Only the terminators of the reader's look-ahead are kept.
pub(crate) struct LineCounter<R> {
    inner: R,
    /// Bytes read so far.
    read: u64,
    /// Offsets of the last byte of terminators not yet passed.
    ends: std::collections::VecDeque<u64>,
    /// A `\r` that ended the previous chunk: `\r\n` or a lone `\r`.
    pending_cr: Option<u64>,
    /// Terminators already passed.
    passed: usize,
}

impl<R: std::io::Read> LineCounter<R> {
    pub(crate) fn new(inner: R) -> Self {
        Self {
            inner,
            read: 0,
            ends: std::collections::VecDeque::new(),
            pending_cr: None,
            passed: 0,
        }
    }

    /// The 1-based line of the record starting at byte offset `byte`.
    pub(crate) fn line_at(&mut self, byte: u64) -> usize {
        while self.ends.front().is_some_and(|end| *end <= byte) {
            self.ends.pop_front();
            self.passed += 1;
        }
        self.passed + 1
    }
}

impl<R: std::io::Read> std::io::Read for LineCounter<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 {
            if let Some(cr) = self.pending_cr.take() {
                self.ends.push_back(cr);
            }
            return Ok(0);
        }
        for (i, byte) in buf[..n].iter().enumerate() {
            let at = self.read + i as u64;
            if let Some(cr) = self.pending_cr.take() {
                if *byte == b'\n' {
                    self.ends.push_back(at);
                    continue;
                }
                self.ends.push_back(cr);
            }
            match byte {
                b'\n' => self.ends.push_back(at),
                b'\r' => self.pending_cr = Some(at),
                _ => {}
            }
        }
        self.read += n as u64;
        Ok(n)
    }
}

/// Read a CSV file: the header, then each data record with its 1-based line
/// number, one record at a time (the file is never held whole). `total` is
/// the file size, for progress. Rows whose field count differs from the
/// header's, or with a cell that is not UTF-8, are reported and skipped.
/// Returns the data rows read.
pub(crate) fn read_csv<H>(
    input: impl std::io::Read,
    total: u64,
    progress: &mut dyn FnMut(Progress),
    problems: &mut Collector,
    header: impl FnOnce(usize, &[String], &mut Collector) -> H,
    mut row: impl FnMut(&H, usize, &[&str], &mut Collector),
) -> Result<usize, Failure> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(LineCounter::new(input));
    let mut record = csv::ByteRecord::new();
    let unreadable = |e: csv::Error| Failure::Unreadable(format!("not readable as CSV: {e}"));
    if !reader.read_byte_record(&mut record).map_err(unreadable)? {
        return Err(Failure::Unreadable(
            "the file is empty: a header row is required".into(),
        ));
    }
    let header_byte = record.position().map_or(0, csv::Position::byte);
    let header_line = reader.get_mut().line_at(header_byte);
    let mut names = Vec::with_capacity(record.len());
    for (i, field) in record.iter().enumerate() {
        let field = if i == 0 {
            field.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(field)
        } else {
            field
        };
        let name = std::str::from_utf8(field)
            .map_err(|_| Failure::Unreadable("the header row is not valid UTF-8 text".into()))?;
        names.push(name.trim().to_owned());
    }
    let width = names.len();
    let ctx = header(header_line, &names, problems);
    let mut rows = 0usize;
    loop {
        let more = reader.read_byte_record(&mut record).map_err(unreadable)?;
        if !more {
            break;
        }
        rows += 1;
        let byte = record.position().map_or(0, csv::Position::byte);
        let line = reader.get_mut().line_at(byte);
        rules::report_progress(progress, rows, byte, total);
        if record.len() != width {
            problems.add(
                line,
                "(row)",
                format!(
                    "has {} fields but the header has {width}; quote cells that contain commas",
                    record.len()
                ),
            );
            continue;
        }
        let mut cells: Vec<&str> = Vec::with_capacity(width);
        let mut utf8_ok = true;
        for (i, field) in record.iter().enumerate() {
            match std::str::from_utf8(field) {
                Ok(s) => cells.push(s),
                Err(_) => {
                    problems.add(line, &names[i], "not valid UTF-8 text");
                    utf8_ok = false;
                    cells.push("");
                }
            }
        }
        if utf8_ok {
            row(&ctx, line, &cells, problems);
        }
    }
    progress(Progress {
        rows,
        bytes_done: total,
        bytes_total: total,
    });
    Ok(rows)
}

/// Where each DAP column is in the file.
struct Layout {
    index: [Option<usize>; Column::ALL.len()],
}

impl Layout {
    fn present(&self, c: Column) -> bool {
        self.index[c as usize].is_some()
    }
}

fn layout(line: usize, names: &[String], problems: &mut Collector) -> Layout {
    let mut index = [None; Column::ALL.len()];
    for (i, name) in names.iter().enumerate() {
        match Column::from_name(name) {
            Some(c) if index[c as usize].is_some() => {
                problems.add(
                    line,
                    name,
                    "the column appears more than once in the header",
                );
            }
            Some(c) => index[c as usize] = Some(i),
            None if name.is_empty() => {
                problems.add(
                    line,
                    &format!("(column {})", i + 1),
                    "the header cell is empty: every column needs a name",
                );
            }
            None => problems.add(
                line,
                name,
                "unknown column: DAP Inventory CSV 0.1 defines no column of this name \
                 (names are lower-case snake_case, see docs/inventory-feeds.md)",
            ),
        }
    }
    for c in Column::ALL {
        if c.required() && index[c as usize].is_none() {
            let why = if c == Column::AdvertisedPriceMinor {
                "required column is missing: a published vehicle carries an advertised price"
            } else {
                "required column is missing"
            };
            problems.add(line, c.name(), why);
        }
    }
    Layout { index }
}

/// One data row.
struct Row<'a> {
    line: usize,
    cells: &'a [&'a str],
    layout: &'a Layout,
}

impl<'a> Row<'a> {
    /// The cell, or `""` when the column is absent. A free-text cell comes
    /// without the apostrophe our published feed adds before a formula
    /// trigger ([`restore_formula_text`]), so the feed reads back as the
    /// vehicles it was written from.
    fn get(&self, c: Column) -> &'a str {
        let cell = self.layout.index[c as usize]
            .and_then(|i| self.cells.get(i).copied())
            .unwrap_or("");
        if c.is_free_text() {
            restore_formula_text(cell)
        } else {
            cell
        }
    }

    /// A non-empty cell; `None` when empty (unknown) or absent.
    fn opt(&self, c: Column) -> Option<&'a str> {
        Some(self.get(c)).filter(|s| !s.is_empty())
    }
}

/// Read the file record by record, handing each valid vehicle to `sink`.
pub(crate) fn parse(
    input: impl std::io::Read,
    total: u64,
    ctx: &IngestContext,
    source: &FileSource,
    progress: &mut dyn FnMut(Progress),
    sink: Sink<'_>,
) -> FormatResult {
    let mut problems = Collector::default();
    let mut duplicates = Duplicates::default();
    let mut cache = CellCache::default();
    let rows = read_csv(
        input,
        total,
        progress,
        &mut problems,
        layout,
        |layout, line, cells, problems| {
            let row = Row {
                line,
                cells,
                layout,
            };
            if let Some(v) = convert(&row, ctx, source, &mut duplicates, &mut cache, problems) {
                sink(v);
            }
        },
    );
    match rows {
        Err(f) => (0, Err(f)),
        Ok(n) if problems.is_empty() => (n, Ok(())),
        Ok(n) => (n, Err(Failure::Problems(problems.into_problems()))),
    }
}

/// Convert one row; `None` (with problems recorded) when it breaks a rule.
fn convert(
    row: &Row<'_>,
    ctx: &IngestContext,
    source: &FileSource,
    duplicates: &mut Duplicates,
    cache: &mut CellCache,
    p: &mut Collector,
) -> Option<VehicleRecord> {
    use Column as C;
    let line = row.line;
    let before = p.len();
    // A required column that is absent was reported once for the header.
    let required = |c: Column, p: &mut Collector| -> Option<&str> {
        if !row.layout.present(c) {
            return None;
        }
        let v = row.opt(c);
        if v.is_none() {
            let rule = if c == C::AdvertisedPriceMinor {
                "advertised_price_minor is required: a published vehicle carries an advertised \
                 price; unknown prices are not published as zero"
                    .to_owned()
            } else {
                format!("{} is required; the cell is empty", c.name())
            };
            p.add(line, c.name(), rule);
        }
        v
    };

    let organization = required(C::OrganizationId, p);
    if let Some(o) = organization
        && o != ctx.organization_id
    {
        p.add(
            line,
            C::OrganizationId.name(),
            format!(
                "names another organization than --organization {}: one file imports one \
                 organization's inventory",
                ctx.organization_id
            ),
        );
    }
    let rooftop_cell = required(C::RooftopId, p);
    let rooftop = rooftop_cell.and_then(|r| match (&ctx.rooftop, ctx.rooftop_settings(r)) {
        (Some(only), _) if only != r => {
            p.add(
                line,
                C::RooftopId.name(),
                format!("names another rooftop than --rooftop {only}"),
            );
            None
        }
        (_, None) => {
            p.add(
                line,
                C::RooftopId.name(),
                format!(
                    "not a rooftop of organization {}; import the dealers file first",
                    ctx.organization_id
                ),
            );
            None
        }
        (_, Some(settings)) => Some((r, settings)),
    });
    let currency = rooftop
        .and_then(|(_, s)| p.check(line, C::RooftopId.name(), rules::configured_currency(s)));

    let vin =
        required(C::Vin, p).and_then(|v| p.check(line, C::Vin.name(), rules::vin(v).map(|()| v)));
    let stock = required(C::StockNumber, p)
        .and_then(|s| p.check(line, C::StockNumber.name(), rules::text(s, 80)));
    if let Some((r, _)) = rooftop {
        if let Some(v) = vin
            && let Some(first) = duplicates.first(Key::Vin, r, v, line)
        {
            p.add(
                line,
                C::Vin.name(),
                rules::duplicate_rule(Key::Vin, &format!("line {first}")),
            );
        }
        if let Some(s) = &stock
            && let Some(first) = duplicates.first(Key::StockNumber, r, s, line)
        {
            p.add(
                line,
                C::StockNumber.name(),
                rules::duplicate_rule(Key::StockNumber, &format!("line {first}")),
            );
        }
    }
    let year = required(C::Year, p).and_then(|y| p.check(line, C::Year.name(), rules::year(y)));
    let make =
        required(C::Make, p).and_then(|s| p.check(line, C::Make.name(), rules::text(s, 100)));
    let model =
        required(C::Model, p).and_then(|s| p.check(line, C::Model.name(), rules::text(s, 120)));
    let condition = required(C::Condition, p).and_then(|s| {
        p.check(
            line,
            C::Condition.name(),
            rules::one_of(s, rules::CONDITIONS),
        )
    });
    let listing_url = required(C::ListingUrl, p)
        .and_then(|s| p.check(line, C::ListingUrl.name(), rules::https_url(s)));
    let observed_at = required(C::ObservedAt, p)
        .and_then(|s| p.check(line, C::ObservedAt.name(), rules::timestamp(s, ctx)));

    let optional_text = |c: Column, max: usize, p: &mut Collector| -> Option<String> {
        row.opt(c)
            .and_then(|s| p.check(line, c.name(), rules::text(s, max)))
    };
    let trim = optional_text(C::Trim, 120, p);
    let body_style = optional_text(C::BodyStyle, 80, p);
    let exterior_color = optional_text(C::ExteriorColor, 80, p);
    let interior_color = optional_text(C::InteriorColor, 80, p);
    let optional_enum = |c: Column, allowed: &[&str], p: &mut Collector| -> Option<String> {
        row.opt(c)
            .and_then(|s| p.check(line, c.name(), rules::one_of(s, allowed)))
    };
    let vehicle_type = optional_enum(C::VehicleType, rules::VEHICLE_TYPES, p);
    let certification_type = optional_enum(C::CertificationType, rules::CERTIFICATION_TYPES, p);
    let government_charges_status = optional_enum(
        C::GovernmentChargesStatus,
        rules::GOVERNMENT_CHARGES_STATUSES,
        p,
    );
    let optional_time = |c: Column, p: &mut Collector| {
        row.opt(c)
            .and_then(|s| p.check(line, c.name(), rules::timestamp(s, ctx)))
    };
    let stocked_at = optional_time(C::StockedAt, p);
    let first_public_listing_at = optional_time(C::FirstPublicListingAt, p);

    let mut transformations = Transformations::default();

    // Money: an exact integer count of minor units in the rooftop currency.
    let price_minor = required(C::AdvertisedPriceMinor, p).and_then(|s| {
        p.check(
            line,
            C::AdvertisedPriceMinor.name(),
            rules::minor_units(s, currency),
        )
    });
    if let (Some(c), Some(cell)) = (currency, row.opt(C::Currency)) {
        p.check(line, C::Currency.name(), rules::same_currency(cell, c));
    }

    // Odometer: a value needs its unit (CSV-004/005); no unit is assumed.
    let odometer_value = row.opt(C::OdometerValue).and_then(|s| {
        p.check(
            line,
            C::OdometerValue.name(),
            rules::non_negative_integer(s),
        )
    });
    let odometer_unit = row
        .opt(C::OdometerUnit)
        .and_then(|s| p.check(line, C::OdometerUnit.name(), rules::distance_unit(s)));
    if row.opt(C::OdometerValue).is_some() && row.opt(C::OdometerUnit).is_none() {
        p.add(
            line,
            C::OdometerUnit.name(),
            "odometer_unit (mi|km) is required when odometer_value is given; no unit is assumed",
        );
    }
    // The disclosure status describes a reading (DAP-UV-003): without one
    // it would say nothing.
    let odometer_status = optional_enum(C::OdometerStatus, rules::ODOMETER_STATUSES, p);
    if row.opt(C::OdometerStatus).is_some() && row.opt(C::OdometerValue).is_none() {
        p.add(
            line,
            C::OdometerStatus.name(),
            "odometer_status needs odometer_value: a disclosure status describes a reading",
        );
    }
    let odometer = match (odometer_value, odometer_unit) {
        (Some(value), Some(unit)) => Some(Odometer {
            value,
            unit,
            status: odometer_status.as_deref().and_then(vehicle_odometer_status),
        }),
        _ => None,
    };
    let certification_program = optional_text(C::CertificationProgram, 200, p);
    if certification_program.is_some()
        && !certification_type
            .as_deref()
            .is_some_and(|c| rules::CERTIFIED_TYPES.contains(&c))
    {
        p.add(
            line,
            C::CertificationProgram.name(),
            format!(
                "certification_program needs certification_type {}: only a certification has a \
                 program",
                rules::CERTIFIED_TYPES.join("|")
            ),
        );
    }

    let availability_status = match row.opt(C::AvailabilityStatus) {
        None => Some("unknown".to_owned()),
        Some(s) => p
            .check(
                line,
                C::AvailabilityStatus.name(),
                rules::one_of(s, rules::CSV_AVAILABILITY),
            )
            .map(|s| {
                if s == "reserved" {
                    transformations.push("availability reserved mapped to on_hold");
                    "on_hold".to_owned()
                } else {
                    s
                }
            }),
    };

    // JSON cells; money inside them must be in the rooftop currency.
    let mut json = |c: Column, cell: Cell, p: &mut Collector| -> Option<Value> {
        let text = row.opt(c)?;
        match cache.get(cell, text, currency) {
            Ok(v) => {
                let late = rules::evidence_times(cell, &v, ctx);
                for (at, rule) in &late {
                    p.add(line, c.name(), format!("at {at}: {rule}"));
                }
                late.is_empty().then_some(v)
            }
            Err(rules_broken) => {
                for r in rules_broken {
                    p.add(line, c.name(), r);
                }
                None
            }
        }
    };
    let charges = json(C::RequiredDealerChargesJson, Cell::RequiredDealerCharges, p);
    let adjustments = json(
        C::ConditionalAdjustmentsJson,
        Cell::ConditionalAdjustments,
        p,
    );
    let images = json(C::ImageUrlsJson, Cell::ImageUrls, p);
    let features = json(C::FeaturesJson, Cell::Features, p);
    let history = json(C::HistoryReportsJson, Cell::HistoryReports, p);
    let charges: Option<Vec<DealerCharge>> =
        p.typed(line, C::RequiredDealerChargesJson.name(), charges);
    let adjustments: Option<Vec<ConditionalAdjustment>> =
        p.typed(line, C::ConditionalAdjustmentsJson.name(), adjustments);
    let history_reports: Option<Vec<HistoryReport>> =
        p.typed(line, C::HistoryReportsJson.name(), history);
    // Schema-checked cells read into their DAP records; a record that no
    // longer matches its definition refuses the row, never drops a member.
    let title = json(C::TitleJson, Cell::Title, p);
    let title: Option<Title> = p.typed(line, C::TitleJson.name(), title);
    let inspection = json(C::InspectionJson, Cell::Inspection, p);
    let inspection: Option<Inspection> = p.typed(line, C::InspectionJson.name(), inspection);
    let reconditioning = json(C::ReconditioningJson, Cell::Reconditioning, p);
    let reconditioning: Option<Reconditioning> =
        p.typed(line, C::ReconditioningJson.name(), reconditioning);

    let claims = claims(row, charges.as_deref(), currency, price_minor, p);

    if p.len() != before {
        return None;
    }
    let (rooftop_id, _) = rooftop?;
    let vin = vin?;
    let media: Vec<MediaAsset> = images
        .as_ref()
        .and_then(Value::as_array)
        .map(|urls| {
            // Every item is a URL string (csvImageUrls); its position is
            // its index in the cell.
            urls.iter()
                .zip(0..)
                .filter_map(|(url, i)| Some(MediaAsset::image(url.as_str()?, i)))
                .collect()
        })
        .unwrap_or_default();
    if !media.is_empty() {
        transformations.push("image_urls_json converted to image media assets in file order");
    }
    let observed_at = observed_at?;
    // A report without its own observed_at was observed with the row; the
    // renderer says so (the record keeps the cell as published).
    Some(VehicleRecord {
        vehicle_id: rules::vehicle_id(&ctx.organization_id, rooftop_id, vin),
        organization_id: ctx.organization_id.clone(),
        rooftop_id: rooftop_id.to_owned(),
        vin: Some(vin.to_owned()),
        stock_number: stock.clone(),
        year: year?,
        make: make?,
        model: model?,
        trim,
        condition: condition?,
        vehicle_type,
        body_style,
        exterior_color,
        interior_color,
        odometer,
        powertrain: None,
        features: features
            .and_then(|f| f.as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|f| f.as_str().map(str::to_owned))
            .collect(),
        media,
        listing_url,
        window_sticker_url: None,
        advertised_price: Money::from_minor(price_minor?, currency?),
        required_dealer_charges: charges,
        conditional_adjustments: adjustments,
        government_charges_status,
        availability_status: availability_status?,
        stocked_at,
        first_public_listing_at,
        history_report_status: history_reports.as_deref().map(rules::history_report_status),
        history_reports: history_reports.unwrap_or_default(),
        certification_type,
        used_evidence: UsedEvidence {
            odometer_status,
            title,
            inspection,
            reconditioning,
            certification_program,
        },
        claims,
        source: VehicleSource {
            source_name: source.source_name.clone(),
            source_record_id: stock,
            authority: super::FILE_AUTHORITY.to_owned(),
            content_digest: source.content_digest.clone(),
            observed_at,
            transformations: transformations.into_vec(),
        },
    })
}

/// The row's pricing claims (`charge_classes_json`, `reference_price_minor`;
/// docs/inventory-feeds.md "Columns"), problems recorded in `p`. The
/// classes' keys are checked against the row's charges when that cell is
/// empty (no charge to classify) or valid; when it is invalid the row is
/// refused for it already.
fn claims(
    row: &Row<'_>,
    charges: Option<&[DealerCharge]>,
    currency: Option<pricing::Currency>,
    price_minor: Option<i64>,
    p: &mut Collector,
) -> PricingClaims {
    use Column as C;
    let line = row.line;
    let mut out = PricingClaims::default();
    if let Some(text) = row.opt(C::ChargeClassesJson) {
        let ids: Option<HashSet<&str>> =
            charges.map(|c| c.iter().map(|c| c.charge_id.as_str()).collect());
        let row_charges = match (&ids, row.opt(C::RequiredDealerChargesJson)) {
            (Some(ids), _) => claims::RowCharges::Ids(ids),
            (None, None) => claims::RowCharges::Unknown,
            (None, Some(_)) => claims::RowCharges::Refused,
        };
        let result = claims::charge_classes(text, row_charges);
        match result {
            Ok(classes) => out.charge_classes = classes,
            Err(rules) => {
                for r in rules {
                    p.add(line, C::ChargeClassesJson.name(), r);
                }
            }
        }
    }
    if let Some(cell) = row.opt(C::ReferencePriceMinor)
        && let Some(price) = p.check(
            line,
            C::ReferencePriceMinor.name(),
            claims::reference_price(cell, currency, price_minor),
        )
    {
        out.reference_price = price;
    }
    out
}

/// The vehicle document's odometer status for a used-vehicle disclosure
/// status: the same value, except `exempt`, which the vehicle schema does
/// not have (it stays in the used-vehicle evidence only).
pub(crate) fn vehicle_odometer_status(status: &str) -> Option<OdometerStatus> {
    match status {
        "actual" => Some(OdometerStatus::Actual),
        "not_actual" => Some(OdometerStatus::NotActual),
        "exceeds_mechanical_limits" => Some(OdometerStatus::ExceedsMechanicalLimits),
        "unknown" => Some(OdometerStatus::Unknown),
        _ => None,
    }
}

/// The organization a DAP CSV file belongs to: the value of its
/// `organization_id` column, which must be the same non-empty value on
/// every row (used by `import bundle`). Errors are value-free rules.
pub fn organization_of(input: impl std::io::Read) -> Result<String, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(input);
    let headers = reader
        .byte_headers()
        .map_err(|_| "not readable as CSV".to_owned())?
        .clone();
    let column = headers
        .iter()
        .enumerate()
        .find(|(i, h)| {
            let h = if *i == 0 {
                h.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(h)
            } else {
                h
            };
            h.trim_ascii() == b"organization_id"
        })
        .map(|(i, _)| i)
        .ok_or_else(|| "the organization_id column is missing".to_owned())?;
    let mut found: Option<Vec<u8>> = None;
    let mut record = csv::ByteRecord::new();
    while reader
        .read_byte_record(&mut record)
        .map_err(|_| "not readable as CSV".to_owned())?
    {
        let Some(value) = record.get(column).filter(|v| !v.is_empty()) else {
            continue;
        };
        match &found {
            None => found = Some(value.to_vec()),
            Some(f) if f.as_slice() == value => {}
            Some(_) => {
                return Err(
                    "rows name more than one organization_id: a bundle file holds one \
                     organization's inventory"
                        .into(),
                );
            }
        }
    }
    let found = found.ok_or_else(|| "no row names an organization_id".to_owned())?;
    String::from_utf8(found).map_err(|_| "organization_id is not valid UTF-8 text".to_owned())
}
