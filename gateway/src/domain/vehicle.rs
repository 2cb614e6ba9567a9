//! The vehicle record as imported and stored, independent of the file
//! format it came from.
//!
//! Unknown is a value: every optional fact is an `Option`, and `None` is
//! rendered as absent (or as an explicit unknown where DAP has one), never
//! as zero, false or "included" (DAP Inventory CSV 0.1: an empty cell means
//! unknown).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use pricing::Money;
use pricing::lint::ChargeClass;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dap::{
    ConditionalAdjustment, DealerCharge, HistoryReport, Inspection, MediaAsset, Powertrain,
    Reconditioning, Title,
};

/// Odometer unit (DAP `distance.unit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DistanceUnit {
    Mi,
    Km,
}

impl DistanceUnit {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mi => "mi",
            Self::Km => "km",
        }
    }

    /// Exact length of one unit in millimetres. A mile is exactly
    /// 1,609,344 mm (international mile, 1959); a kilometre 1,000,000 mm.
    /// Comparing odometers in millimetres as integers is exact.
    pub fn millimetres(self) -> i128 {
        match self {
            Self::Mi => 1_609_344,
            Self::Km => 1_000_000,
        }
    }
}

/// An odometer reading with its unit (never assumed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Odometer {
    pub value: i64,
    pub unit: DistanceUnit,
    /// DAP `odometer.status` (`actual|not_actual|exceeds_mechanical_limits|unknown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<OdometerStatus>,
}

impl Odometer {
    /// The reading in millimetres (exact).
    pub fn millimetres(&self) -> i128 {
        i128::from(self.value) * self.unit.millimetres()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OdometerStatus {
    Actual,
    NotActual,
    ExceedsMechanicalLimits,
    Unknown,
}

impl OdometerStatus {
    /// The DAP wire string (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Actual => "actual",
            Self::NotActual => "not_actual",
            Self::ExceedsMechanicalLimits => "exceeds_mechanical_limits",
            Self::Unknown => "unknown",
        }
    }
}

/// Where a vehicle record came from (DAP `source` + `provenance`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VehicleSource {
    /// e.g. `dap-csv:lakeshore-chicago.csv`.
    pub source_name: String,
    /// The record's id in the source (the row's stock number or the JSON
    /// record's id); `None` when the source has none.
    pub source_record_id: Option<String>,
    /// DAP `source.authority`: `dealer_asserted` for files unless the
    /// rooftop configuration says otherwise.
    pub authority: String,
    /// `sha256:<hex>` of the imported file.
    pub content_digest: String,
    /// When the source observed the record (the row's `observed_at`).
    pub observed_at: DateTime<Utc>,
    /// Each transformation applied on the way in (DAP `transformations`,
    /// at most 32 of at most 160 characters).
    pub transformations: Vec<String>,
}

/// One vehicle as published by one rooftop in one snapshot.
///
/// Enumerated fields hold DAP wire strings that ingest has already checked
/// against the schema enums (`condition`, `vehicle_type`, availability
/// status, ...); they are kept as strings so the record mirrors the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VehicleRecord {
    /// Gateway-scoped stable id (DAP 6.1: never the VIN itself). Stable
    /// across snapshots for the same (rooftop, VIN).
    pub vehicle_id: String,
    pub organization_id: String,
    pub rooftop_id: String,
    pub vin: Option<String>,
    pub stock_number: Option<String>,
    pub year: i32,
    pub make: String,
    pub model: String,
    pub trim: Option<String>,
    /// `new|used|certified|demo`.
    pub condition: String,
    /// `car|truck|suv|van|motorcycle|rv|trailer|other`.
    pub vehicle_type: Option<String>,
    pub body_style: Option<String>,
    pub exterior_color: Option<String>,
    pub interior_color: Option<String>,
    pub odometer: Option<Odometer>,
    /// DAP `powertrain` as published (ingest checks it against
    /// vehicle.schema.json `powertrain`, then reads it into this type).
    pub powertrain: Option<Powertrain>,
    pub features: Vec<String>,
    /// DAP `mediaAsset` records as published (schema-checked by ingest).
    pub media: Vec<MediaAsset>,
    /// HTTPS listing page.
    pub listing_url: Option<String>,
    pub window_sticker_url: Option<String>,
    /// The advertised price; DAP requires one for a published vehicle.
    pub advertised_price: Money,
    /// Required dealer charges; `None` when the source did not say
    /// (unknown, not "none").
    pub required_dealer_charges: Option<Vec<DealerCharge>>,
    /// Conditional adjustments; `None` when unknown.
    pub conditional_adjustments: Option<Vec<ConditionalAdjustment>>,
    /// `unknown|estimated|calculated|not_applicable`; `None` = unknown.
    pub government_charges_status: Option<String>,
    /// DAP availability status as asserted by the source
    /// (`available|in_transit|on_hold|pending_sale|sold|unavailable|unknown`).
    pub availability_status: String,
    /// When the vehicle entered stock (inventory age basis).
    pub stocked_at: Option<DateTime<Utc>>,
    pub first_public_listing_at: Option<DateTime<Utc>>,
    /// `available|not_available|restricted|unknown|conflicting` summary of
    /// the history reports; `None` when no report information exists.
    pub history_report_status: Option<String>,
    /// The history reports as published (inventory-cells.schema.json
    /// `csvHistoryReport`).
    pub history_reports: Vec<HistoryReport>,
    /// `manufacturer_cpo|dealer_certified|third_party_certified|not_certified|unknown`.
    pub certification_type: Option<String>,
    /// The rest of the used-vehicle evidence (profile
    /// `dealeragent.used-vehicle.read/0.1`). Absent from records stored
    /// before it existed, which read back as "nothing known".
    #[serde(default, skip_serializing_if = "UsedEvidence::is_empty")]
    pub used_evidence: UsedEvidence,
    /// What the feed says about its charges' classes and an announced
    /// price reduction, read by the disclosure lint (docs/lint.md).
    /// Absent from records stored before it existed: nothing known.
    #[serde(default, skip_serializing_if = "PricingClaims::is_empty")]
    pub claims: PricingClaims,
    pub source: VehicleSource,
}

/// The feed's own claims about its pricing that DAP has no member for
/// (docs/lint.md "What the feeds say"). Empty is "nothing said": an
/// unclassified charge, no reduction announced.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PricingClaims {
    /// Class of the vehicle's own required dealer charges by `charge_id`
    /// (CSV `charge_classes_json`); a charge not named is unclassified.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub charge_classes: BTreeMap<String, ChargeClass>,
    /// The earlier price the dealer shows next to the advertised price,
    /// announcing a reduction (CSV `reference_price_minor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_price: Option<Money>,
}

impl PricingClaims {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Used-vehicle evidence as the feed published it, already checked by
/// ingest against `schemas/inventory-cells.schema.json` (the history reports
/// live in [`VehicleRecord::history_reports`]). `None` is unknown: the
/// renderer says `unknown`, never a favorable value (DAP-UV-016/017).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsedEvidence {
    /// DAP odometer disclosure status, `exempt` included (the vehicle
    /// document's own odometer has no `exempt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub odometer_status: Option<String>,
    /// `csvTitle`: the title as the dealer discloses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Title>,
    /// `csvInspection`: a DAP `conditionReport` without provenance and
    /// freshness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inspection: Option<Inspection>,
    /// `csvReconditioning`: the completion state and its public items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconditioning: Option<Reconditioning>,
    /// The certification program (a manufacturer-CPO claim needs one,
    /// DAP-UV-024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certification_program: Option<String>,
}

impl UsedEvidence {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Two or more sources that disagree on a material fact (DAP-UV-019): the
/// gateway names them and never picks the more favorable value
/// (DAP-UV-020).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discrepancy {
    /// e.g. `history.accident_status`.
    pub field: String,
    /// At least two distinct names.
    pub source_names: Vec<String>,
    pub description: String,
}

/// Summary members two providers can contradict each other on, with the
/// two values that contradict (`unknown` contradicts nothing).
const SUMMARY_FACTS: &[(&str, &str, &str)] = &[
    ("accident_status", "events_reported", "no_events_reported"),
    ("damage_status", "damage_reported", "no_damage_reported"),
    ("structural_damage_status", "reported", "not_reported"),
    ("airbag_deployment_status", "reported", "not_reported"),
    (
        "title_brand_status",
        "brands_reported",
        "no_brands_reported",
    ),
    ("odometer_consistency", "discrepancy_reported", "consistent"),
];

/// The (provider name, summary) of each report that carries a summary (a
/// summary is stored only where sharing is authorized).
fn summaries(reports: &[HistoryReport]) -> Vec<(&str, &Value)> {
    reports
        .iter()
        .filter_map(|r| Some((r.provider_name.as_str(), r.summary()?)))
        .collect()
}

/// Names of the sources on each side, distinct, in report order; `None`
/// unless both sides have one and there are at least two names in all.
fn sides(yes: Vec<&str>, no: Vec<&str>) -> Option<Vec<String>> {
    if yes.is_empty() || no.is_empty() {
        return None;
    }
    let mut names: Vec<String> = Vec::new();
    for n in yes.into_iter().chain(no) {
        if !names.iter().any(|m| m == n) {
            names.push(n.to_owned());
        }
    }
    (names.len() >= 2).then_some(names)
}

/// Where history-report summaries of different providers contradict each
/// other: this makes the vehicle's history-report status `conflicting`.
pub fn history_conflicts(reports: &[HistoryReport]) -> Vec<Discrepancy> {
    let summaries = summaries(reports);
    let mut out = Vec::new();
    for (member, a, b) in SUMMARY_FACTS {
        let with = |value: &str| -> Vec<&str> {
            summaries
                .iter()
                .filter(|(_, s)| s[*member].as_str() == Some(value))
                .map(|(name, _)| *name)
                .collect()
        };
        if let Some(source_names) = sides(with(a), with(b)) {
            out.push(Discrepancy {
                field: format!("history.{member}"),
                description: format!(
                    "The history reports disagree on {member}: at least one says {a}, another {b}. \
                     Neither is taken as the answer; show both to the shopper."
                ),
                source_names,
            });
        }
    }
    out
}

/// Every discrepancy of a used vehicle's evidence (DAP-UV-019): providers
/// against each other ([`history_conflicts`]), the dealer's title against
/// the reports' title brands, and the dealer's odometer against the
/// reports' odometer history.
pub fn discrepancies(record: &VehicleRecord) -> Vec<Discrepancy> {
    let mut out = history_conflicts(&record.history_reports);
    let dealer = record
        .source
        .source_name
        .chars()
        .take(200)
        .collect::<String>();
    let summaries = summaries(&record.history_reports);
    let reporting = |member: &str, value: &str| -> Vec<&str> {
        summaries
            .iter()
            .filter(|(_, s)| s[member].as_str() == Some(value))
            .map(|(name, _)| *name)
            .collect()
    };
    let title_status = record
        .used_evidence
        .title
        .as_ref()
        .map(|t| t.status.as_str());
    let contradicting = match title_status {
        Some("clear") => Some(("brands_reported", "the dealer's title record is clear")),
        Some("branded") => Some(("no_brands_reported", "the dealer's title record is branded")),
        _ => None,
    };
    if let Some((value, says)) = contradicting
        && let Some(source_names) = sides(
            vec![dealer.as_str()],
            reporting("title_brand_status", value),
        )
    {
        out.push(Discrepancy {
            field: "title.brands".into(),
            description: format!(
                "{says}, but a history report says {value}. Unresolved: show both to the shopper."
            ),
            source_names,
        });
    }
    if let Some(odometer) = record.odometer {
        let higher: Vec<&str> = summaries
            .iter()
            .filter(|(_, s)| {
                let reported = &s["last_reported_odometer"];
                let unit = match reported["unit"].as_str() {
                    Some("mi") => DistanceUnit::Mi,
                    Some("km") => DistanceUnit::Km,
                    _ => return false,
                };
                reported["value"]
                    .as_i64()
                    .is_some_and(|v| i128::from(v) * unit.millimetres() > odometer.millimetres())
            })
            .map(|(name, _)| *name)
            .collect();
        if let Some(source_names) = sides(vec![dealer.as_str()], higher) {
            out.push(Discrepancy {
                field: "odometer.reading".into(),
                description: "A history report lists a higher odometer reading than the dealer \
                              shows now (compared in exact units). Unresolved: show both to the \
                              shopper."
                    .into(),
                source_names,
            });
        }
        let actual = record.used_evidence.odometer_status.as_deref() == Some("actual")
            || (record.used_evidence.odometer_status.is_none()
                && odometer.status == Some(OdometerStatus::Actual));
        if actual
            && let Some(source_names) = sides(
                vec![dealer.as_str()],
                reporting("odometer_consistency", "discrepancy_reported"),
            )
        {
            out.push(Discrepancy {
                field: "odometer.status".into(),
                description: "The dealer states the odometer is actual, but a history report \
                              reports an odometer discrepancy. Unresolved: show both to the \
                              shopper."
                    .into(),
                source_names,
            });
        }
    }
    out
}

/// What a new snapshot changes against the previous one of its rooftop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InventoryImportSummary {
    /// Data rows read from the file (all of them valid, or nothing is written).
    pub rows_read: u32,
    /// Vehicle ids absent from the previous snapshot.
    pub vehicles_added: u32,
    /// Vehicle ids present before whose facts changed.
    pub vehicles_changed: u32,
    /// Vehicle ids present before whose facts are identical.
    pub vehicles_unchanged: u32,
    /// Vehicle ids of the previous snapshot missing from this one (they are
    /// reported `withdrawn` for a grace period, then not found).
    pub vehicles_removed: u32,
}

impl VehicleRecord {
    /// True when the published facts differ. Provenance is not a fact of the
    /// vehicle: re-importing the same row from a new file changes nothing.
    pub fn facts_differ(&self, other: &VehicleRecord) -> bool {
        let mut a = self.clone();
        let b = other;
        a.source = b.source.clone();
        a != *b
    }
}

/// Compare two snapshots of one rooftop by `vehicle_id`.
pub fn diff_vehicles(previous: &[VehicleRecord], next: &[VehicleRecord]) -> InventoryImportSummary {
    use std::collections::HashMap;
    let before: HashMap<&str, &VehicleRecord> = previous
        .iter()
        .map(|v| (v.vehicle_id.as_str(), v))
        .collect();
    let mut summary = InventoryImportSummary {
        rows_read: saturating_u32(next.len()),
        ..InventoryImportSummary::default()
    };
    let mut seen = 0usize;
    for v in next {
        match before.get(v.vehicle_id.as_str()) {
            None => summary.vehicles_added += 1,
            Some(old) => {
                seen += 1;
                if old.facts_differ(v) {
                    summary.vehicles_changed += 1;
                } else {
                    summary.vehicles_unchanged += 1;
                }
            }
        }
    }
    summary.vehicles_removed = saturating_u32(before.len().saturating_sub(seen));
    summary
}

fn saturating_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
