//! Dealer organizations and rooftops as the gateway keeps them: the DAP wire
//! objects plus this gateway's per-rooftop settings, their provenance, and
//! the availability observations made for their vehicles.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::dap::{DealerCharge, GovernmentChargeLine, Jurisdiction, Rooftop};

/// Where an imported record came from (DAP `source`, `provenance`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceRecord {
    /// e.g. `dealers-file:dealers.yaml` or `bundled-demo`.
    pub source_name: String,
    /// DAP `source.authority`, e.g. `dealer_asserted`.
    pub authority: String,
    /// `sha256:<hex>` of the imported file.
    pub content_digest: String,
    /// When the gateway observed (imported) the record.
    pub observed_at: DateTime<Utc>,
}

/// Settings this gateway keeps per rooftop (the dealers file's
/// `gateway_settings` object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RooftopSettings {
    /// ISO 4217 code of the rooftop's prices.
    pub currency: String,
    /// Default odometer unit (`mi` or `km`) for feeds that omit one.
    pub odometer_unit: String,
    /// Whether anonymous callers may read this rooftop's published data.
    pub anonymous_reads: bool,
    /// Freshness SLAs in seconds (manifest `freshness_sla_seconds`).
    pub freshness_sla_seconds: FreshnessSla,
    /// Where availability checks get their answer (default: the feed).
    #[serde(default)]
    pub availability_source: AvailabilitySource,
    /// Pricing defaults of the rooftop (dealers file
    /// `gateway_settings.pricing`); empty when not configured.
    #[serde(default)]
    pub pricing: RooftopPricing,
}

/// A rooftop's pricing configuration (docs/pricing.md): the required dealer
/// charges every vehicle carries, and optional government-charge
/// estimates per jurisdiction. Without an estimate for a buyer's
/// jurisdiction, government charges are `unknown` — never zero.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RooftopPricing {
    /// In the rooftop currency (checked by the dealers-file import).
    #[serde(default)]
    pub required_dealer_charges: Vec<DealerCharge>,
    /// Estimates by jurisdiction, most specific first when several match.
    #[serde(default)]
    pub government_charge_estimates: Vec<GovernmentChargeEstimate>,
    /// Class of each rooftop default charge by `charge_id` (dealers file
    /// `pricing.charge_classes`), read by the disclosure lint
    /// (docs/lint.md); a charge not named is unclassified.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub charge_classes: std::collections::BTreeMap<String, pricing::lint::ChargeClass>,
    /// Whether the rooftop's advertised prices include VAT (dealers file
    /// `pricing.advertised_prices_include_vat`); `None` when not said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advertised_prices_include_vat: Option<bool>,
}

/// The dealer's configured estimate of government charges in one
/// jurisdiction (DAP `governmentCharges` with status `estimated`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GovernmentChargeEstimate {
    pub jurisdiction: Jurisdiction,
    pub lines: Vec<GovernmentChargeLine>,
    /// Plain-language assumptions behind the estimate.
    #[serde(default)]
    pub assumptions: Vec<String>,
}

/// Where a rooftop's availability comes from (dealers file
/// `gateway_settings.availability_source`, docs/availability.md). Stored
/// settings written before availability sources existed have none:
/// [`AvailabilitySource::Feed`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AvailabilitySource {
    /// The latest imported feed observation (dealer-asserted).
    #[default]
    Feed,
    /// A dealer system queried live per check.
    Http(HttpAvailabilitySource),
}

/// A dealer system endpoint answering
/// `availability-source.schema.json#/$defs/availabilitySourceResponse`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpAvailabilitySource {
    /// With `{vin}`, `{stock_number}` and/or `{vehicle_id}` placeholders.
    pub url_template: String,
    pub timeout_ms: u32,
    /// DAP source authority of its answers (`authoritative_dealer_system`
    /// or `dealer_asserted`).
    pub authority: String,
}

/// One observation of a vehicle's availability made by a live check
/// (`availability_observations`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AvailabilityObservation {
    pub organization_id: String,
    pub rooftop_id: String,
    pub vehicle_id: String,
    /// DAP availability status.
    pub status: String,
    /// DAP source authority of the system that answered.
    pub authority: String,
    /// When the source observed the status (microsecond precision).
    pub observed_at: DateTime<Utc>,
    /// Which source answered.
    pub source: ObservationSource,
    /// When the gateway made the check (microsecond precision).
    pub checked_at: DateTime<Utc>,
}

/// The source of an [`AvailabilityObservation`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservationSource {
    /// `http` or `feed`.
    pub kind: String,
    /// Human-readable name (scheme and host of an http source; never its
    /// full URL, which may carry credentials).
    pub source_name: String,
}

/// Per-rooftop freshness SLAs in seconds (DAP manifest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FreshnessSla {
    pub inventory: u32,
    pub availability: u32,
    pub pricing: u32,
}

/// One rooftop as stored: its DAP wire object plus our settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RooftopRecord {
    pub rooftop_id: String,
    /// The DAP `rooftop` record (dealer.schema.json `rooftop`) as the
    /// dealers-file import read it, every contact included: what is
    /// published is [`Rooftop::published`].
    pub dap: Rooftop,
    pub settings: RooftopSettings,
}

/// One dealer organization as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrganizationRecord {
    pub organization_id: String,
    pub name: String,
    pub legal_name: Option<String>,
    /// DAP `extensions` bag of the organization, if any. The schema leaves
    /// it open (common.schema.json `extensionBag`: keys are extension
    /// identifiers, values are the extension's own).
    pub extensions: Option<serde_json::Value>,
    /// In the order of the imported file.
    pub rooftops: Vec<RooftopRecord>,
    pub source: SourceRecord,
}
