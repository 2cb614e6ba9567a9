//! A Dealer.com-style CSV export, read with the header aliases and
//! conversion rules of the DAP reference adapter (`DealerComCsvAdapter`),
//! made strict where the reference is lax:
//!
//! - prices go through the money engine's named feed adapter
//!   (`comma_groups_dot_decimal`, the rooftop currency's exponent; never a
//!   hard-coded ×100) and must be exact and non-negative;
//! - a missing odometer unit is taken from the rooftop configuration (and
//!   recorded as a transformation), never assumed;
//! - timestamps need an offset and must not be in the future; listing URLs
//!   must be HTTPS; required columns must be present;
//! - nothing is invented: no `conditional_adjustments: []` and no
//!   government-charges status (the export says nothing about either, so
//!   both stay unknown).
//!
//! The export has no organization or rooftop column: the rooftop is
//! `--rooftop` (or the organization's only rooftop). Cells are trimmed;
//! columns this reader does not know are ignored (exports carry many).

use pricing::money::{FeedAdapter, FeedNotation};
use pricing::{Currency, Money, MoneyError};

use super::dap_csv::read_csv;
use super::rules::{self, Collector, Duplicates, Key, Transformations};
use super::{FileSource, FormatResult, IngestContext, Progress, Sink};
use crate::dap::HistoryReport;
use crate::inventory::model::{DistanceUnit, Odometer, UsedEvidence, VehicleRecord, VehicleSource};

/// The fields this reader maps, each with its accepted headers in priority
/// order (the first one present in the file wins); the last alias is the
/// field's own snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Vin,
    StockNumber,
    Year,
    Make,
    Model,
    Trim,
    Condition,
    ListingUrl,
    ObservedAt,
    Price,
    Currency,
    AvailabilityStatus,
    OdometerValue,
    OdometerUnit,
    StockedAt,
    FirstPublicListingAt,
    CarfaxUrl,
    AutocheckUrl,
    CertificationType,
    VehicleType,
    BodyStyle,
    ExteriorColor,
    InteriorColor,
}

impl Field {
    pub const ALL: [Field; 23] = [
        Self::Vin,
        Self::StockNumber,
        Self::Year,
        Self::Make,
        Self::Model,
        Self::Trim,
        Self::Condition,
        Self::ListingUrl,
        Self::ObservedAt,
        Self::Price,
        Self::Currency,
        Self::AvailabilityStatus,
        Self::OdometerValue,
        Self::OdometerUnit,
        Self::StockedAt,
        Self::FirstPublicListingAt,
        Self::CarfaxUrl,
        Self::AutocheckUrl,
        Self::CertificationType,
        Self::VehicleType,
        Self::BodyStyle,
        Self::ExteriorColor,
        Self::InteriorColor,
    ];

    /// Accepted header names, in priority order.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Self::Vin => &["VIN", "Vin", "vin"],
            Self::StockNumber => &["StockNumber", "Stock #", "Stock", "stock_number"],
            Self::Year => &["Year", "year"],
            Self::Make => &["Make", "make"],
            Self::Model => &["Model", "model"],
            Self::Trim => &["Trim", "trim"],
            Self::Condition => &["NewUsed", "Condition", "condition"],
            Self::ListingUrl => &["VDPUrl", "VehicleUrl", "URL", "listing_url"],
            Self::ObservedAt => &["LastUpdated", "FeedDate", "observed_at"],
            Self::Price => &["Price", "InternetPrice", "SalePrice", "price"],
            Self::Currency => &["currency"],
            Self::AvailabilityStatus => &["Status", "Availability", "availability_status"],
            Self::OdometerValue => &["Mileage", "Odometer", "Miles", "odometer_value"],
            Self::OdometerUnit => &["MileageUnit", "OdometerUnit", "odometer_unit"],
            Self::StockedAt => &["StockedDate", "InStockDate", "DateInStock", "stocked_at"],
            Self::FirstPublicListingAt => &[
                "FirstListedDate",
                "InventoryDate",
                "first_public_listing_at",
            ],
            Self::CarfaxUrl => &["CarfaxUrl", "CARFAX URL", "carfax_url"],
            Self::AutocheckUrl => &["AutoCheckUrl", "AutoCheck URL", "autocheck_url"],
            Self::CertificationType => &["CertificationType", "CPOType", "certification_type"],
            Self::VehicleType => &["vehicle_type"],
            Self::BodyStyle => &["body_style"],
            Self::ExteriorColor => &["exterior_color"],
            Self::InteriorColor => &["interior_color"],
        }
    }

    /// The field's own name (its snake_case alias).
    pub fn name(self) -> &'static str {
        self.aliases().last().copied().unwrap_or("")
    }

    pub fn required(self) -> bool {
        matches!(
            self,
            Self::Vin
                | Self::StockNumber
                | Self::Year
                | Self::Make
                | Self::Model
                | Self::Condition
                | Self::ListingUrl
                | Self::ObservedAt
                | Self::Price
        )
    }
}

/// Which file column feeds each field, and its header (for reports).
struct Layout {
    index: [Option<(usize, String)>; Field::ALL.len()],
}

fn layout(line: usize, names: &[String], problems: &mut Collector) -> Layout {
    let mut index: [Option<(usize, String)>; Field::ALL.len()] = Default::default();
    for f in Field::ALL {
        let found = f
            .aliases()
            .iter()
            .find_map(|alias| names.iter().position(|n| n == alias));
        match found {
            Some(i) => {
                if names.iter().filter(|n| **n == names[i]).count() > 1 {
                    problems.add(
                        line,
                        &names[i],
                        "the column appears more than once in the header",
                    );
                }
                index[f as usize] = Some((i, names[i].clone()));
            }
            None if f.required() => problems.add(
                line,
                f.name(),
                format!(
                    "required column is missing (accepted headers: {})",
                    f.aliases().join(", ")
                ),
            ),
            None => {}
        }
    }
    Layout { index }
}

struct Row<'a> {
    line: usize,
    cells: &'a [&'a str],
    layout: &'a Layout,
}

impl<'a> Row<'a> {
    fn present(&self, f: Field) -> bool {
        self.layout.index[f as usize].is_some()
    }

    /// The header the field was read from (for reports).
    fn column(&self, f: Field) -> &'a str {
        self.layout.index[f as usize]
            .as_ref()
            .map_or(f.name(), |(_, name)| name.as_str())
    }

    /// The trimmed cell; `None` when empty or the column is absent.
    fn opt(&self, f: Field) -> Option<&'a str> {
        let (i, _) = self.layout.index[f as usize].as_ref()?;
        let v = self.cells.get(*i)?.trim();
        Some(v).filter(|s| !s.is_empty())
    }
}

/// Read the export record by record, handing each valid vehicle to `sink`.
pub(crate) fn parse(
    input: impl std::io::Read,
    total: u64,
    ctx: &IngestContext,
    source: &FileSource,
    progress: &mut dyn FnMut(Progress),
    sink: Sink<'_>,
) -> FormatResult {
    let mut problems = Collector::default();
    // `check_context` guarantees a rooftop: `--rooftop` or the only one.
    let rooftop_id = ctx
        .rooftop
        .clone()
        .or_else(|| ctx.rooftops.first().map(|r| r.rooftop_id.clone()))
        .unwrap_or_default();
    let settings = ctx.rooftop_settings(&rooftop_id).cloned();
    let mut duplicates = Duplicates::default();
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
            let Some(settings) = &settings else {
                problems.add(
                    line,
                    "(row)",
                    "the rooftop is not a rooftop of the organization",
                );
                return;
            };
            let rooftop = Rooftop {
                id: &rooftop_id,
                currency: rules::configured_currency(settings),
                unit: rules::configured_unit(settings),
            };
            if let Some(v) = convert(&row, ctx, &rooftop, source, &mut duplicates, problems) {
                sink(v);
            }
        },
    );
    match rows {
        Err(f) => (0, Err(f)),
        Ok(n) if problems.is_empty() => (n, Ok(())),
        Ok(n) => (n, Err(super::Failure::Problems(problems.into_problems()))),
    }
}

struct Rooftop<'a> {
    id: &'a str,
    currency: Result<Currency, String>,
    unit: Option<DistanceUnit>,
}

fn convert(
    row: &Row<'_>,
    ctx: &IngestContext,
    rooftop: &Rooftop<'_>,
    source: &FileSource,
    duplicates: &mut Duplicates,
    p: &mut Collector,
) -> Option<VehicleRecord> {
    use Field as F;
    let line = row.line;
    let before = p.len();
    let col = |f: Field| row.column(f);
    let required = |f: Field, p: &mut Collector| -> Option<&str> {
        if !row.present(f) {
            return None;
        }
        let v = row.opt(f);
        if v.is_none() {
            let rule = if f == F::Price {
                "the price is required: a published vehicle carries an advertised price; unknown \
                 prices are not published as zero"
                    .to_owned()
            } else {
                format!("{} is required; the cell is empty", f.name())
            };
            p.add(line, col(f), rule);
        }
        v
    };
    let mut transformations = Transformations::default();
    let currency = match &rooftop.currency {
        Ok(c) => Some(*c),
        Err(rule) => {
            p.add(line, "(rooftop)", rule.clone());
            None
        }
    };

    let vin = required(F::Vin, p).and_then(|raw| {
        let upper = raw.to_ascii_uppercase();
        if upper != raw {
            transformations.push("VIN upper-cased");
        }
        p.check(line, col(F::Vin), rules::vin(&upper).map(|()| upper))
    });
    let stock = required(F::StockNumber, p)
        .and_then(|s| p.check(line, col(F::StockNumber), rules::text(s, 80)));
    if let Some(v) = &vin
        && let Some(first) = duplicates.first(Key::Vin, rooftop.id, v, line)
    {
        p.add(
            line,
            col(F::Vin),
            rules::duplicate_rule(Key::Vin, &format!("line {first}")),
        );
    }
    if let Some(s) = &stock
        && let Some(first) = duplicates.first(Key::StockNumber, rooftop.id, s, line)
    {
        p.add(
            line,
            col(F::StockNumber),
            rules::duplicate_rule(Key::StockNumber, &format!("line {first}")),
        );
    }
    let year = required(F::Year, p).and_then(|y| p.check(line, col(F::Year), rules::year(y)));
    let make = required(F::Make, p).and_then(|s| p.check(line, col(F::Make), rules::text(s, 100)));
    let model =
        required(F::Model, p).and_then(|s| p.check(line, col(F::Model), rules::text(s, 120)));
    let condition = required(F::Condition, p).and_then(|s| {
        let mapped = condition(s);
        if let Some(m) = mapped
            && m != s
        {
            transformations.push(format!("condition mapped from the export's code to {m}"));
        }
        p.check(
            line,
            col(F::Condition),
            mapped.map(str::to_owned).ok_or_else(|| {
                "not a known condition: expected N/New, U/Used, CPO/Certified/Certified Pre-Owned \
                 or Demo"
                    .to_owned()
            }),
        )
    });
    let listing_url = required(F::ListingUrl, p)
        .and_then(|s| p.check(line, col(F::ListingUrl), rules::https_url(s)));
    let observed_at = required(F::ObservedAt, p)
        .and_then(|s| p.check(line, col(F::ObservedAt), rules::timestamp(s, ctx)));
    let optional_time = |f: Field, p: &mut Collector| {
        row.opt(f)
            .and_then(|s| p.check(line, col(f), rules::timestamp(s, ctx)))
    };
    let stocked_at = optional_time(F::StockedAt, p);
    let first_public_listing_at = optional_time(F::FirstPublicListingAt, p);
    let optional_text = |f: Field, max: usize, p: &mut Collector| {
        row.opt(f)
            .and_then(|s| p.check(line, col(f), rules::text(s, max)))
    };
    let trim = optional_text(F::Trim, 120, p);
    let body_style = optional_text(F::BodyStyle, 80, p);
    let exterior_color = optional_text(F::ExteriorColor, 80, p);
    let interior_color = optional_text(F::InteriorColor, 80, p);
    let vehicle_type = row.opt(F::VehicleType).and_then(|s| {
        p.check(
            line,
            col(F::VehicleType),
            rules::one_of(&s.to_ascii_lowercase(), rules::VEHICLE_TYPES),
        )
    });

    // Price: the named feed adapter in the rooftop currency; exact.
    if let (Some(c), Some(cell)) = (currency, row.opt(F::Currency)) {
        p.check(line, col(F::Currency), rules::same_currency(cell, c));
    }
    let price = required(F::Price, p).and_then(|s| {
        let c = currency?;
        let parsed = p.check(line, col(F::Price), price(s, c))?;
        transformations.push(format!(
            "advertised price converted from {} feed notation to minor units (exact, {} decimals)",
            FeedNotation::CommaGroupsDotDecimal.name(),
            c.exponent()
        ));
        Some(parsed)
    });

    // Availability: the reference adapter's mapping, extended to DAP's
    // statuses; an unrecognized status is recorded as unknown.
    let availability_status = match row.opt(F::AvailabilityStatus) {
        None => "unknown".to_owned(),
        Some(s) => {
            let (status, note) = availability(s);
            if let Some(note) = note {
                transformations.push(note);
            }
            status.to_owned()
        }
    };

    // Odometer: canonical integer; the unit from the row or the rooftop.
    let odometer_value = row.opt(F::OdometerValue).and_then(|s| {
        let (digits, grouped) = ungroup(s);
        if grouped {
            transformations.push("odometer value grouping separators removed");
        }
        p.check(
            line,
            col(F::OdometerValue),
            rules::non_negative_integer(&digits),
        )
    });
    let odometer = match odometer_value {
        None => {
            if let Some(u) = row.opt(F::OdometerUnit) {
                p.check(line, col(F::OdometerUnit), distance_unit(u));
            }
            None
        }
        Some(value) => {
            let unit = match row.opt(F::OdometerUnit) {
                Some(u) => p.check(line, col(F::OdometerUnit), distance_unit(u)),
                None => match rooftop.unit {
                    Some(u) => {
                        transformations.push(format!(
                            "odometer unit {} taken from rooftop configuration",
                            u.as_str()
                        ));
                        Some(u)
                    }
                    None => {
                        p.add(
                            line,
                            col(F::OdometerValue),
                            "the row gives no odometer unit and the rooftop configures none; \
                             no unit is assumed",
                        );
                        None
                    }
                },
            };
            unit.map(|unit| Odometer {
                value,
                unit,
                status: None,
            })
        }
    };

    let certification_type = row.opt(F::CertificationType).and_then(|s| {
        let mapped = certification(s);
        if let Some(m) = mapped
            && m != s
        {
            transformations.push(format!("certification type mapped to {m}"));
        }
        p.check(
            line,
            col(F::CertificationType),
            mapped.map(str::to_owned).ok_or_else(|| {
                format!(
                    "not a known certification type: expected CPO/Manufacturer, Dealer, or one of {}",
                    rules::CERTIFICATION_TYPES.join("|")
                )
            }),
        )
    });

    // History report links become asserted public-link reports; summaries
    // are never authorized by a feed (CSV-003).
    let mut history_reports = Vec::new();
    for (f, provider_id, provider_name) in [
        (F::CarfaxUrl, "com.carfax", "CARFAX"),
        (F::AutocheckUrl, "com.experian.autocheck", "AutoCheck"),
    ] {
        if let Some(url) = row
            .opt(f)
            .and_then(|s| p.check(line, col(f), rules::https_url(s)))
        {
            history_reports.push(HistoryReport {
                provider_id: provider_id.to_owned(),
                provider_name: provider_name.to_owned(),
                report_id: None,
                status: "available".to_owned(),
                access: "public_link".to_owned(),
                report_url: Some(url),
                report_generated_at: None,
                observed_at: None,
                summary_sharing_authorized: false,
                summary: None,
            });
            transformations.push(format!(
                "{provider_name} link converted to a public_link history report"
            ));
        }
    }

    if p.len() != before {
        return None;
    }
    let vin = vin?;
    Some(VehicleRecord {
        vehicle_id: rules::vehicle_id(&ctx.organization_id, rooftop.id, &vin),
        organization_id: ctx.organization_id.clone(),
        rooftop_id: rooftop.id.to_owned(),
        vin: Some(vin),
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
        features: Vec::new(),
        media: Vec::new(),
        listing_url,
        window_sticker_url: None,
        advertised_price: price?,
        required_dealer_charges: None,
        conditional_adjustments: None,
        government_charges_status: None,
        availability_status,
        stocked_at,
        first_public_listing_at,
        history_report_status: (!history_reports.is_empty())
            .then(|| rules::history_report_status(&history_reports)),
        history_reports,
        certification_type,
        // An export carries no title, inspection or reconditioning
        // evidence: all unknown.
        used_evidence: UsedEvidence::default(),
        claims: Default::default(),
        source: VehicleSource {
            source_name: source.source_name.clone(),
            source_record_id: stock,
            authority: super::FILE_AUTHORITY.to_owned(),
            content_digest: source.content_digest.clone(),
            observed_at: observed_at?,
            transformations: transformations.into_vec(),
        },
    })
}

/// The export's condition codes: N/New, U/Used, CPO/Certified/Certified
/// Pre-Owned, Demo (case-insensitive).
fn condition(s: &str) -> Option<&'static str> {
    match s.to_ascii_lowercase().as_str() {
        "n" | "new" => Some("new"),
        "u" | "used" | "pre-owned" | "preowned" => Some("used"),
        "cpo" | "certified" | "certified pre-owned" | "certified preowned" => Some("certified"),
        "demo" => Some("demo"),
        _ => None,
    }
}

/// The export's status to a DAP availability status, with the
/// transformation to record (`None` when the value is already DAP's).
fn availability(s: &str) -> (&'static str, Option<String>) {
    let key: String = s
        .trim()
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c == ' ' || c == '-' { '_' } else { c })
        .collect();
    let status = match key.as_str() {
        "available" => return ("available", None),
        "in_transit" => return ("in_transit", None),
        "on_hold" => return ("on_hold", None),
        "pending_sale" => return ("pending_sale", None),
        "sold" => return ("sold", None),
        "unavailable" => return ("unavailable", None),
        "unknown" => return ("unknown", None),
        "in_stock" | "active" | "instock" => "available",
        "reserved" | "hold" => "on_hold",
        "pending" | "sale_pending" => "pending_sale",
        "intransit" | "transit" => "in_transit",
        _ => {
            return (
                "unknown",
                Some("availability status not recognized; recorded as unknown".into()),
            );
        }
    };
    (
        status,
        Some(if key == "reserved" {
            "availability reserved mapped to on_hold".to_owned()
        } else {
            format!("availability mapped from the export's status to {status}")
        }),
    )
}

/// The export's certification types: CPO/Manufacturer → manufacturer_cpo,
/// Dealer → dealer_certified, or a DAP value.
fn certification(s: &str) -> Option<&'static str> {
    let lower = s.to_ascii_lowercase();
    if let Some(dap) = rules::CERTIFICATION_TYPES.iter().find(|t| **t == lower) {
        return Some(dap);
    }
    match lower.as_str() {
        "cpo" | "manufacturer" | "manufacturer cpo" => Some("manufacturer_cpo"),
        "dealer" | "dealer certified" => Some("dealer_certified"),
        "third party" | "third_party" | "third party certified" => Some("third_party_certified"),
        "none" | "not certified" => Some("not_certified"),
        _ => None,
    }
}

/// Odometer units as exports write them.
fn distance_unit(s: &str) -> Result<DistanceUnit, String> {
    match s.to_ascii_lowercase().as_str() {
        "mi" | "mile" | "miles" => Ok(DistanceUnit::Mi),
        "km" | "kms" | "kilometer" | "kilometers" | "kilometre" | "kilometres" => {
            Ok(DistanceUnit::Km)
        }
        _ => Err("not a known odometer unit: expected mi or km (miles, kilometers)".into()),
    }
}

/// Remove well-formed `,` grouping (`12,345`); anything else is returned
/// unchanged for the integer rule to judge.
fn ungroup(s: &str) -> (String, bool) {
    if !s.contains(',') {
        return (s.to_owned(), false);
    }
    let groups: Vec<&str> = s.split(',').collect();
    let well_formed = groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_digit()))
        && (1..=3).contains(&groups[0].len())
        && groups[1..].iter().all(|g| g.len() == 3);
    if well_formed {
        (groups.concat(), true)
    } else {
        (s.to_owned(), false)
    }
}

/// The currency markers an export may put around a price: the ISO code and
/// the currency's symbol (`$` for USD and CAD).
fn adapter(currency: Currency) -> FeedAdapter {
    let mut a = FeedAdapter::new(currency, FeedNotation::CommaGroupsDotDecimal)
        .with_marker(currency.code());
    let symbol = currency.iso().symbol().symbol;
    if symbol != "¤" {
        a = a.with_marker(symbol);
    }
    a
}

/// A formatted price in the rooftop currency, exact, non-negative and
/// within the range served exactly. The rule never echoes the cell.
fn price(s: &str, currency: Currency) -> Result<Money, String> {
    let money = adapter(currency).parse(s).map_err(|e| match e {
        MoneyError::InvalidFeedAmount { notation, rule, .. } => {
            format!("not a valid amount in {notation} notation: {rule}")
        }
        MoneyError::NotRepresentable {
            currency, exponent, ..
        } => format!(
            "has more decimals than {currency} allows ({exponent}); amounts are never rounded"
        ),
        MoneyError::AmountOutOfRange { .. } => "the amount is too large".to_owned(),
        _ => "not a valid amount".to_owned(),
    })?;
    if money.is_negative() {
        return Err("must not be negative".into());
    }
    // Served exactly to every JSON reader (docs/inventory-feeds.md "Money").
    match crate::report::money::out_of_range(
        money.amount_minor(),
        Some(currency),
        crate::report::money::Range::Safe,
    ) {
        None => Ok(money),
        Some(why) => Err(why),
    }
}

#[cfg(test)]
pub(crate) fn test_price(s: &str, currency: Currency) -> Result<Money, String> {
    price(s, currency)
}

#[cfg(test)]
pub(crate) fn test_availability(s: &str) -> &'static str {
    availability(s).0
}
