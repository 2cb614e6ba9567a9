//! The AAP vehicle (`aapVehicle`, `aapVehicleEvidence` of
//! aap-common.schema.json) and `aap_inventory_vehicle`'s answer
//! (`aapVehicleResponse` of aap-inventory.schema.json), as
//! `aap_map::vehicle` maps them from a DAP vehicle (field classes in
//! docs/compatibility.md).
//!
//! Both definitions are closed. Member order is the order the JSON tree
//! these types replaced was built in, so the bytes on the wire are
//! unchanged; an optional member the DAP vehicle gives no value for is
//! absent, never `null`. There is no `price` member: AAP's price is an
//! out-the-door total this gateway cannot state (DAP section 15, nothing
//! invented).

use serde::Serialize;
use serde_json::{Number, Value};

use super::{Freshness, Provenance, ToolOutput};
use crate::dap::disclosure::AdvertisedPrice;

/// `aapVehicle`. The enumerated members hold AAP's wire strings, mapped
/// from DAP's by the tables of `aap_map`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AapVehicle {
    pub vehicle_id: String,
    /// The DAP organization_id (AAP's dealer).
    pub dealer_id: String,
    /// The rooftop's name (AAP names a rooftop by name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rooftop: Option<String>,
    /// `car|motorcycle|trailer|rv|other`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vehicle_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stock: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub year: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub make: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trim: Option<String>,
    /// `new|used|cpo`; absent for a DAP `demo` unit (no AAP value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<&'static str>,
    /// `available|intransit|pending`: AAP lists in-stock units only.
    pub status: &'static str,
    /// Whole US dollars, only when the advertised price excludes required
    /// dealer charges (`aap_map::list_price`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_price: Option<i64>,
    /// Whole miles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mileage: Option<u64>,
    /// The DAP body style, lowercased.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transmission: Option<String>,
    /// `fwd|rwd|awd|4wd`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driveline: Option<&'static str>,
    /// `gas|diesel|hybrid|phev|bev|hydrogen`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuel: Option<&'static str>,
    /// Kept as a JSON number: miles as the feed gave them (`250`, `249.5`
    /// keep their text), kilometres converted to tenths of a mile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub electric_range_mi: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exterior_color: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interior_color: Option<String>,
    /// Written whenever the DAP vehicle lists features, even none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub features: Option<Vec<String>>,
    /// Image URLs in media position order; absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub photos: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vdp_url: Option<String>,
    /// `YYYY-MM-DD` (UTC) of the used unit's stocking date.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inventory_date: Option<String>,
    /// The availability observation time, RFC 3339 as DAP gave it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    pub dealergateway: AapVehicleEvidence,
}

/// `aapVehicleEvidence`: the DAP facts behind an AAP vehicle, unchanged,
/// so a compatibility answer drops none of the availability, price,
/// provenance and freshness DAP states (DAP 6.4).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AapVehicleEvidence {
    pub rooftop_id: String,
    /// The DAP `vehicleCondition` (`demo` included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// The DAP `vehicleType` (before AAP folds trucks, SUVs and vans into
    /// `car`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vehicle_type: Option<String>,
    /// The DAP odometer in its own unit (never converted, DAP-UV-004).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub odometer: Option<Odometer>,
    /// DAP `availability`, as the DAP tool answered it (bounded by
    /// `availability::band`, DAP-CORE-036), byte for byte: the
    /// pre-rendered vehicle writes `valid_until` before the verdict and an
    /// overlaid check after it ([`crate::dap::Availability`]), both valid,
    /// and the adapter must not reorder what the DAP tool said.
    pub availability: Value,
    pub advertised_price: AdvertisedPrice,
    pub provenance: Provenance,
    pub freshness: Freshness,
}

/// DAP `odometer` (vehicle.schema.json): a whole-number reading, its
/// unit, and the disclosure status when the feed states one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Odometer {
    pub value: u64,
    /// `mi|km`.
    pub unit: String,
    /// `actual|not_actual|exceeds_mechanical_limits|unknown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// `aap_inventory_vehicle`: `aapVehicleResponse`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AapVehicleResponse {
    /// `inventory.vehicle.response`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub data: AapVehicle,
    /// The tool says nothing beyond the vehicle today.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl AapVehicleResponse {
    /// The response of one vehicle.
    pub fn of(data: AapVehicle) -> Self {
        Self {
            kind: "inventory.vehicle.response",
            data,
            message: None,
        }
    }
}

impl ToolOutput for AapVehicleResponse {
    const OUTPUT: &'static str = "aap-inventory.schema.json#/$defs/aapVehicleResponse";
}

/// The vehicle as its own definition (what the search response lists).
impl ToolOutput for AapVehicle {
    const OUTPUT: &'static str = "aap-common.schema.json#/$defs/aapVehicle";
}

impl ToolOutput for AapVehicleEvidence {
    const OUTPUT: &'static str = "aap-common.schema.json#/$defs/aapVehicleEvidence";
}
