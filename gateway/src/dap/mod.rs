//! The DAP 0.1 wire vocabulary, on the ground floor: the typed records and
//! constants every layer shares, each defined once and held to the
//! published schemas (`schemas/`) by drift tests.

/// DAP `availability`: sale status, authority, validity.
pub mod availability;
/// DAP `pricingDisclosure`, the disclosure tool's typed answer.
pub mod disclosure;
/// A published vehicle history report.
pub mod history;
/// DAP money, charges, adjustments, jurisdictions and government charges.
pub mod pricing;
/// DAP `source`, `provenance` and `freshness`.
pub mod provenance;
/// Dealer rooftops as published: address, departments, contacts, hours.
pub mod rooftop;
/// Used-vehicle evidence as published: title, inspection, reconditioning.
pub mod used;
/// The used-vehicle disclosure as served, every part with provenance and freshness.
pub mod used_details;
/// Vehicle records as published: powertrain and media assets.
pub mod vehicle;
/// Wire limits and the one `truncate`.
pub mod wire;

pub use availability::Availability;
pub use history::HistoryReport;
pub use pricing::{
    ConditionalAdjustment, CriterionValue, DealerCharge, EligibilityCriterion,
    GovernmentChargeLine, Jurisdiction, Money, Scalar, Stacking,
};
pub use provenance::{Freshness, FreshnessState, Provenance, Source};
pub use rooftop::{Address, ContactPoint, HoursInterval, Rooftop};
pub use used::{
    ConditionComponent, ConditionGrade, Inspection, Reconditioning, ReconditioningItem, Title,
};
pub use used_details::UsedVehicleDetails;
pub use vehicle::{ElectricRange, MediaAsset, Powertrain};
pub use wire::{MAX_AGE_LIMIT, MAX_TRANSFORMATIONS, truncate};
