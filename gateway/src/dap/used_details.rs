//! The used-vehicle disclosure as the gateway serves it
//! (used-vehicle.schema.json `usedVehicleDetails`, profile
//! `dealeragent.used-vehicle.read/0.1`): every part with its own provenance
//! and freshness (DAP 6.4, DAP-UV-011).
//!
//! The parts a feed publishes ([`super::used`]) gain their provenance and
//! freshness here and nowhere else ([`Title::disclosed`] and its siblings),
//! so a member added to a published record has one place to be carried
//! over. Member order is the order of the document the renderer wrote
//! before these types existed, so the bytes on the wire are unchanged.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::provenance::{Freshness, Provenance, Source};
use super::used::{
    ConditionComponent, ConditionGrade, Inspection, Reconditioning, ReconditioningItem, Title,
};

/// DAP `distance` (common.schema.json): a whole-number distance with its
/// unit (never converted, DAP-UV-004).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Distance {
    pub value: u64,
    /// `mi|km`.
    pub unit: &'static str,
}

/// DAP `odometerDisclosure`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OdometerDisclosure {
    pub reading: Distance,
    /// `actual|not_actual|exceeds_mechanical_limits|exempt|unknown`; only
    /// `actual` may be described as actual (DAP-UV-003).
    pub status: String,
    pub observed_at: String,
    pub provenance: Provenance,
    pub freshness: Freshness,
}

/// DAP `inventoryTenure` (vehicle.schema.json): dated inventory age with
/// its basis (DAP-UV-006), as the vehicle renderer writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InventoryTenure {
    pub stocked_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_public_listing_at: Option<String>,
    pub age_days: u64,
    pub age_as_of: String,
    /// `stocked_at|first_public_listing_at|source_reported`.
    pub age_basis: String,
    pub provenance: Provenance,
    pub freshness: Freshness,
}

/// DAP `source` naming a history-report provider, in the member order the
/// disclosure has always written (`source_record_id` before `authority`),
/// so the bytes on the wire stay as they were.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProviderSource {
    pub source_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_record_id: Option<String>,
    /// `third_party`: the provider, not the dealer.
    pub authority: String,
    pub observed_at: String,
    /// Not known for a relayed report; never written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_digest: Option<String>,
    /// Not known for a relayed report; never written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_uri: Option<String>,
}

/// One source of a relayed part: the dealer's feed or a report provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum RelaySource {
    Feed(Source),
    Provider(ProviderSource),
}

/// DAP `provenance` of a part that names the feed and the report providers
/// it relays (a history report, the disclosure as a whole).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RelayProvenance {
    pub sources: Vec<RelaySource>,
    pub authority_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transformed_at: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub transformations: Vec<String>,
}

/// DAP `historyReport`: a relayed report with the provenance that names
/// both the provider and the feed that relayed it (DAP-UV-011, DAP-UV-018).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryReportDisclosure {
    pub provider_id: String,
    pub provider_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report_id: Option<String>,
    pub status: String,
    pub access: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report_generated_at: Option<String>,
    pub observed_at: String,
    pub summary_sharing_authorized: bool,
    /// The provider's `historySummary`, only where sharing is authorized
    /// (DAP-UV-012); kept as published (see `HistoryReport::summary`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Value>,
    pub provenance: RelayProvenance,
    pub freshness: Freshness,
}

/// DAP `titleDisclosure`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TitleDisclosure {
    pub status: String,
    pub brands: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jurisdiction: Option<String>,
    pub provenance: Provenance,
    pub freshness: Freshness,
}

impl Title {
    pub fn disclosed(self, provenance: Provenance, freshness: Freshness) -> TitleDisclosure {
        let Title {
            status,
            brands,
            jurisdiction,
        } = self;
        TitleDisclosure {
            status,
            brands,
            jurisdiction,
            provenance,
            freshness,
        }
    }
}

/// DAP `conditionReport`: inspection evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConditionReport {
    pub status: String,
    pub inspection_authority: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inspector_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inspected_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inspection_point_count: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grade: Option<ConditionGrade>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub components: Option<Vec<ConditionComponent>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disclosed_damage: Option<Vec<String>>,
    pub provenance: Provenance,
    pub freshness: Freshness,
}

impl Inspection {
    pub fn disclosed(self, provenance: Provenance, freshness: Freshness) -> ConditionReport {
        let Inspection {
            status,
            inspection_authority,
            inspector_name,
            inspected_at,
            report_url,
            inspection_point_count,
            grade,
            components,
            disclosed_damage,
        } = self;
        ConditionReport {
            status,
            inspection_authority,
            inspector_name,
            inspected_at,
            report_url,
            inspection_point_count,
            grade,
            components,
            disclosed_damage,
            provenance,
            freshness,
        }
    }
}

/// DAP `reconditioning` as served.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReconditioningDisclosure {
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    pub items: Vec<ReconditioningItem>,
    pub provenance: Provenance,
    pub freshness: Freshness,
}

impl Reconditioning {
    pub fn disclosed(
        self,
        provenance: Provenance,
        freshness: Freshness,
    ) -> ReconditioningDisclosure {
        let Reconditioning {
            status,
            completed_at,
            items,
        } = self;
        ReconditioningDisclosure {
            status,
            completed_at,
            items,
            provenance,
            freshness,
        }
    }
}

/// DAP `warrantyCoverage`; an optional service contract is never an
/// included warranty (DAP-UV-025).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WarrantyCoverage {
    pub coverage_type: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub term_months: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distance_limit: Option<Distance>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transferable: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// DAP `certification`. A feed states the type and the program only; the
/// other members stay absent (unknown), never invented.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Certification {
    /// `manufacturer_cpo|dealer_certified|third_party_certified|not_certified|unknown`;
    /// a manufacturer-CPO claim names its program (DAP-UV-024).
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certified_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inspection_point_count: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warranty: Option<Vec<WarrantyCoverage>>,
    pub provenance: Provenance,
    pub freshness: Freshness,
}

/// DAP `discrepancy`: sources that disagree, both named, neither preferred
/// (DAP-UV-019, DAP-UV-020).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Discrepancy {
    pub field: String,
    pub source_names: Vec<String>,
    pub description: String,
    /// `unresolved|dealer_reviewed|provider_corrected`.
    pub status: String,
}

/// DAP `usedVehicleDetails`: the answer of
/// `dealeragent.inventory.get_used_vehicle_details`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsedVehicleDetails {
    pub vehicle_id: String,
    pub organization_id: String,
    pub rooftop_id: String,
    pub vin: String,
    /// `used|certified|demo` (a new vehicle has no disclosure, DAP-UV-001).
    pub condition: String,
    pub odometer: OdometerDisclosure,
    pub inventory_tenure: InventoryTenure,
    pub history_reports: Vec<HistoryReportDisclosure>,
    pub title: TitleDisclosure,
    pub condition_report: ConditionReport,
    pub certification: Certification,
    pub reconditioning: ReconditioningDisclosure,
    pub discrepancies: Vec<Discrepancy>,
    pub provenance: RelayProvenance,
    pub freshness: Freshness,
    pub trace_id: String,
    /// The gateway defines no extension of this document; never written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<serde_json::Map<String, Value>>,
}

#[cfg(test)]
mod tests;
