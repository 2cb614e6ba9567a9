//! The disclosure lint: does a published pricing disclosure obey the
//! advertised-price law of the jurisdiction where it is shown
//! (docs/lint.md)?
//!
//! Pure, like the rest of this crate: the gateway (and the conformance
//! suite, which re-derives a gateway's verdicts from the facts it reports)
//! gathers the [`Facts`] of one vehicle, and [`lint`] answers one
//! [`RuleResult`] per rule of the [`Catalogue`] that applies there. The
//! rules are data (`pricing/lint/catalogue.json`), not code paths: each
//! names its citation, effective dates, the facts it needs and one of a
//! closed set of [`Check`]s.
//!
//! Never a false pass: a fact the rule needs that is unknown answers
//! [`Verdict::CannotDetermine`]; a rule whose legal wording was not
//! confirmed from a primary source is reported but never makes the
//! disclosure's overall result [`Verdict::Fail`] on its own.
//!
//! This module is the wire contract shared by the gateway, its CLI, its
//! console and the conformance suite; the serde shapes below are what
//! `extensions["dealergateway.disclosure-lint"]` carries.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::Money;

mod engine;
mod places;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

pub use engine::{ALL_CLASSES, class_words};
pub use places::{CONDITIONS, EU_MEMBER_STATES, JURISDICTIONS};

/// A fact that may be unknown. Serialized as the value, or the string
/// `"unknown"` (unknown is never written as zero, false or "none").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Known<T> {
    /// The source said.
    Known(T),
    /// The source did not say.
    Unknown,
}

/// The wire word for an unknown fact.
pub const UNKNOWN: &str = "unknown";

impl<T: Serialize> Serialize for Known<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Known::Known(v) => v.serialize(serializer),
            Known::Unknown => serializer.serialize_str(UNKNOWN),
        }
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Known<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        if value.as_str() == Some(UNKNOWN) {
            return Ok(Known::Unknown);
        }
        serde_json::from_value(value)
            .map(Known::Known)
            .map_err(serde::de::Error::custom)
    }
}

/// What the published data says about one required dealer charge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Charge {
    /// DAP `charge_id`.
    pub charge_id: String,
    /// The charge's name as disclosed.
    pub name: String,
    /// DAP `amount`.
    pub amount: Money,
    /// DAP `included_in_advertised_price`.
    pub included_in_advertised_price: bool,
    /// The operator's classification; `None` when unclassified.
    pub class: Option<ChargeClass>,
    /// The source that published the charge (provenance).
    pub source: String,
}

/// The classes of required dealer charges the rules read (docs/lint.md
/// "Charge classes"). Wire form: snake_case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChargeClass {
    /// Documentation, documentary, processing, administration or dealer
    /// conveyance fee.
    DocumentationFee,
    /// A product or service the dealer installed or added (etching,
    /// nitrogen, protection package, service contract) that the buyer
    /// cannot decline.
    DealerAddOn,
    /// Delivery, destination, freight or transfer (Überführung) costs.
    DeliveryTransfer,
    /// Pre-delivery inspection or dealer preparation.
    DealerPreparation,
    /// Emission testing charge.
    EmissionTest,
    /// Registration, licensing, title or plate fees passed on.
    Registration,
    /// A charge to file the registration electronically.
    ElectronicFiling,
    /// A sales, use or value-added tax passed on.
    Tax,
    /// A tire fee or new-tire duty.
    TireFee,
    /// A finance charge.
    Finance,
    /// A charge that fits none of the other classes.
    Other,
}

/// DAP `government_charges.status` as published.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GovernmentStatus {
    /// Lines are given as an estimate.
    Estimated,
    /// Lines are given as calculated.
    Calculated,
    /// No government charges apply.
    NotApplicable,
}

/// A place rules apply to: an ISO 3166-1 alpha-2 country and, optionally,
/// an ISO 3166-2 subdivision (`US-CA`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Place {
    /// `US`, `CA`, `DE`, `GB`, ...
    pub country: String,
    /// `US-CA`, `CA-ON`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdivision: Option<String>,
}

/// What the published data says about an announced price reduction (a
/// "was" price shown next to the advertised price).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "announced", rename_all = "snake_case")]
pub enum Reduction {
    /// The published data announces no reduction.
    #[serde(rename = "no")]
    NotAnnounced,
    /// A reduction is announced with `reference_price` as the earlier
    /// price; `lowest_prior` is the lowest advertised price over the
    /// `days` before the current price applied, from the gateway's own
    /// price history, unknown when the history does not reach that far.
    #[serde(rename = "yes")]
    Announced {
        /// The earlier price the dealer shows.
        reference_price: Money,
        /// Lowest advertised price in the prior window.
        lowest_prior: Known<Money>,
        /// The window the lowest price was taken over.
        days: u32,
    },
}

/// Everything the rules read about one vehicle's published disclosure.
/// Its JSON form is `facts` of the lint block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Facts {
    /// Where the disclosure is shown (the buyer's jurisdiction, else the
    /// rooftop's).
    pub place: Place,
    /// The day the lint is run (effective dates are compared with it).
    pub as_of: NaiveDate,
    /// DAP `condition`: `new`, `used`, `certified`, `demo`.
    pub condition: String,
    /// DAP advertised price.
    pub advertised_price: Money,
    /// Required dealer charges (rooftop defaults merged with the
    /// vehicle's own, as the disclosure lists them).
    pub charges: Known<Vec<Charge>>,
    /// Government charges status; unknown when DAP says `unknown`.
    pub government_charges: Known<GovernmentStatus>,
    /// Whether the advertised price includes VAT (dealers file
    /// `advertised_prices_include_vat`).
    pub price_includes_vat: Known<bool>,
    /// Whether the disclosure identifies the vehicle by its VIN.
    pub vin_published: Known<bool>,
    /// Whether the odometer reading is published.
    pub odometer_published: Known<bool>,
    /// An announced price reduction.
    pub reduction: Reduction,
    /// Provenance of the facts that are not per charge: keys
    /// `advertised_price`, `rooftop_settings`, `price_history`,
    /// `vehicle`.
    pub sources: BTreeMap<String, String>,
}

/// One rule's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The published data obeys the rule.
    Pass,
    /// The published data breaks the rule.
    Fail,
    /// A fact the rule needs is unknown (never a pass).
    CannotDetermine,
}

/// One fact a verdict was drawn from, with its provenance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactUsed {
    /// A path into [`Facts`], e.g. `charges.doc-fee.included_in_advertised_price`.
    pub fact: String,
    /// The value as published, or `"unknown"`.
    pub value: serde_json::Value,
    /// Where it came from.
    pub source: String,
}

/// One rule's verdict on one vehicle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleResult {
    /// Catalogue rule id.
    pub rule_id: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Whether the rule's wording was confirmed from a primary source.
    pub confirmed: bool,
    /// The citation, as in the catalogue.
    pub citation: String,
    /// Why, in one plain sentence naming the facts (no legal advice).
    pub reason: String,
    /// What the operator can change to pass (for `fail` and
    /// `cannot_determine`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// The facts read.
    pub facts: Vec<FactUsed>,
}

/// The lint of one vehicle's disclosure where it is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// Catalogue version (a date).
    pub catalogue_version: String,
    /// The place linted.
    pub place: Place,
    /// `fail` when a confirmed rule fails; else `cannot_determine` when
    /// any rule cannot determine (or an unconfirmed rule fails); else
    /// `pass`. With no applicable rule: `cannot_determine` (nothing was
    /// checked, which is not a pass).
    pub result: Verdict,
    /// One result per applicable rule, in catalogue order.
    pub rules: Vec<RuleResult>,
}

/// A rule's check: one of a closed set, parametrized by the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Check {
    /// Every required charge is included in the advertised price, except
    /// charges of the `excluded` classes; a charge of an `uncertain` class
    /// left out answers cannot_determine.
    IncludedExcept {
        /// Classes the law lets the price leave out.
        excluded: Vec<ChargeClass>,
        /// Classes whose exclusion could not be confirmed.
        #[serde(default)]
        uncertain: Vec<ChargeClass>,
    },
    /// Charges of `class` are at most `max_minor` in `currency`.
    MaxAmount {
        /// The class capped.
        class: ChargeClass,
        /// ISO 4217.
        currency: String,
        /// The cap in minor units.
        max_minor: i64,
        /// Only when the charge is left out of the price.
        #[serde(default)]
        only_when_excluded: bool,
    },
    /// The advertised price includes VAT.
    VatIncluded,
    /// The vehicle is identified by its VIN.
    VinPublished,
    /// The odometer reading is published.
    OdometerPublished,
    /// The government charges are stated (not unknown).
    GovernmentChargesStated,
    /// An announced reduction shows the lowest price of the prior `days`.
    PriorPriceIsLowest {
        /// The window.
        days: u32,
    },
}

/// One rule of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    /// Stable id, e.g. `US-CA-VC-11713.1-B`.
    pub id: String,
    /// `US-CA`, `US-CT`, `CA-ON`, `CA-QC`, `EU`, `DE`, `GB`.
    pub jurisdiction: String,
    /// The statute or regulation, as cited.
    pub citation: String,
    /// First day in force.
    pub effective_from: NaiveDate,
    /// Last day in force, when it ended.
    #[serde(default)]
    pub effective_until: Option<NaiveDate>,
    /// Confirmed from a primary source (docs/lint.md).
    pub confirmed: bool,
    /// One plain-language sentence.
    pub statement: String,
    /// Conditions it applies to (`new`, `used`, `certified`, `demo`); empty = all.
    #[serde(default)]
    pub conditions: Vec<String>,
    /// The facts it needs (names of [`Facts`] members).
    pub needs: Vec<String>,
    /// The check.
    pub check: Check,
    /// What the operator changes to pass.
    pub fix: String,
    /// Addresses of the texts read to write (and, when `confirmed`, to
    /// confirm) the rule (docs/lint.md "How a rule is confirmed").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

/// The rule catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalogue {
    /// A date.
    pub version: String,
    /// The rules, in order.
    pub rules: Vec<Rule>,
}

/// The catalogue shipped with this build (`pricing/lint/catalogue.json`),
/// parsed once. The file is embedded at compile time and validated by the
/// tests (`lint::tests::catalogue_*`); should it ever fail to parse, the
/// catalogue is empty, which lints every disclosure `cannot_determine`
/// (never a false pass, never a panic).
pub fn catalogue() -> &'static Catalogue {
    static CATALOGUE: std::sync::LazyLock<Catalogue> = std::sync::LazyLock::new(|| {
        serde_json::from_str(CATALOGUE_JSON).unwrap_or_else(|_| Catalogue {
            version: String::new(),
            rules: Vec::new(),
        })
    });
    &CATALOGUE
}

/// The embedded catalogue text.
const CATALOGUE_JSON: &str = include_str!("../../lint/catalogue.json");

/// Lint `facts` against every rule of `catalogue` that applies at their
/// place, condition and date (docs/lint.md "Verdicts").
pub fn lint(catalogue: &Catalogue, facts: &Facts) -> Report {
    let rules: Vec<RuleResult> = catalogue
        .rules
        .iter()
        .filter(|rule| places::applies(rule, facts))
        .map(|rule| engine::evaluate(rule, facts))
        .collect();
    Report {
        catalogue_version: catalogue.version.clone(),
        place: facts.place.clone(),
        result: overall(&rules),
        rules,
    }
}

/// The disclosure's overall verdict, as documented on [`Report::result`]:
/// an unconfirmed rule's fail never fails the disclosure on its own.
fn overall(rules: &[RuleResult]) -> Verdict {
    if rules.is_empty() {
        return Verdict::CannotDetermine;
    }
    if rules
        .iter()
        .any(|r| r.confirmed && r.verdict == Verdict::Fail)
    {
        return Verdict::Fail;
    }
    if rules.iter().any(|r| r.verdict != Verdict::Pass) {
        return Verdict::CannotDetermine;
    }
    Verdict::Pass
}
