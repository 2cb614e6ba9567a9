//! The DAP 0.1 wire shapes the audit reads, as typed views holding the
//! members DAP requires (and the few optional ones a careful agent uses when
//! present). Unknown members are ignored, so a gateway's extensions, a
//! trimmed answer or a fuller one read the same.
//!
//! Shapes: `vehicle.schema.json` (vehicle, searchResponse,
//! availabilityResult), `pricing.schema.json` (pricingDisclosure),
//! `dealer.schema.json`, `used-vehicle.schema.json` and `common.schema.json`
//! (money, source, provenance, freshness), as digested in docs/conformance.md
//! "Shopper's audit".

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Exact money: integer minor units and an ISO 4217 code (DAP common `money`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Money {
    pub amount_minor: i64,
    pub currency: String,
}

impl Money {
    /// The sum of `self` and `other` when both are in one currency and the
    /// sum does not overflow.
    pub fn plus(&self, other: &Money) -> Option<Money> {
        (self.currency == other.currency).then_some(())?;
        Some(Money {
            amount_minor: self.amount_minor.checked_add(other.amount_minor)?,
            currency: self.currency.clone(),
        })
    }

    /// `self` written for a person: `40,888.00 USD` (the currency's own
    /// number of decimals, from ISO 4217).
    pub fn display(&self) -> String {
        let exponent = exponent(&self.currency).unwrap_or(2);
        let negative = self.amount_minor < 0;
        let digits = self.amount_minor.unsigned_abs().to_string();
        let exponent = usize::from(exponent);
        let padded = format!("{digits:0>width$}", width = exponent + 1);
        let (whole, fraction) = padded.split_at(padded.len() - exponent);
        let mut grouped = String::new();
        for (i, c) in whole.chars().enumerate() {
            if i > 0 && (whole.len() - i).is_multiple_of(3) {
                grouped.push(',');
            }
            grouped.push(c);
        }
        let sign = if negative { "-" } else { "" };
        if fraction.is_empty() {
            format!("{sign}{grouped} {}", self.currency)
        } else {
            format!("{sign}{grouped}.{fraction} {}", self.currency)
        }
    }
}

/// The number of decimals of an ISO 4217 currency, when it has one.
pub fn exponent(code: &str) -> Option<u16> {
    iso_currency::Currency::from_code(code)?.exponent()
}

/// One source of a record (DAP common `source`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    pub source_name: String,
    pub authority: String,
    pub observed_at: String,
}

/// Where a record came from (DAP common `provenance`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Provenance {
    pub sources: Vec<Source>,
    pub authority_status: String,
}

/// How old a record is (DAP common `freshness`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Freshness {
    pub observed_at: String,
    pub state: String,
    #[serde(default)]
    pub valid_until: Option<String>,
}

impl Freshness {
    /// Whether the record may be presented as current at `at`: its state is
    /// `current` and, when it states one, `valid_until` has not passed.
    pub fn current_at(&self, at: DateTime<Utc>) -> bool {
        self.state == "current"
            && self
                .valid_until
                .as_deref()
                .and_then(time)
                .is_none_or(|until| until > at)
    }
}

/// A vehicle's availability (DAP `vehicle.schema.json#/$defs/availability`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Availability {
    pub status: String,
    pub authority_status: String,
    pub observed_at: String,
    #[serde(default)]
    pub valid_until: Option<String>,
    #[serde(default)]
    pub human_verification_required: Option<bool>,
}

/// DAP's normative availability bands (DAP 0.1 section 7): what an
/// observation of a given authority and age allows an agent to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Band {
    /// Authoritative and at most 120 s old: the only band that supports
    /// "available now".
    VerifiedCurrent,
    /// Authoritative and at most 15 minutes old: shown with its time.
    RecentAuthoritative,
    /// At most 24 hours old: never "available now".
    Asserted,
    /// Older: must be labelled stale.
    Stale,
    /// No usable observation: no availability claim at all.
    Unknown,
}

impl Band {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::VerifiedCurrent => "verified_current",
            Self::RecentAuthoritative => "recent_authoritative",
            Self::Asserted => "asserted",
            Self::Stale => "stale",
            Self::Unknown => "unknown",
        }
    }
}

/// Age limits of the bands, in seconds (DAP 0.1 section 7).
pub const VERIFIED_CURRENT_MAX_AGE_S: i64 = 120;
const RECENT_AUTHORITATIVE_MAX_AGE_S: i64 = 15 * 60;
const ASSERTED_MAX_AGE_S: i64 = 24 * 60 * 60;

impl Availability {
    /// The band of this observation at `at`, computed from the DAP members
    /// alone (authority and age), never from a gateway's own label.
    pub fn band_at(&self, at: DateTime<Utc>) -> Band {
        let Some(observed) = time(&self.observed_at) else {
            return Band::Unknown;
        };
        // A clock a little ahead of ours counts as age 0.
        let age = (at - observed).num_seconds().max(0);
        match self.authority_status.as_str() {
            "authoritative" if age <= VERIFIED_CURRENT_MAX_AGE_S => Band::VerifiedCurrent,
            "authoritative" if age <= RECENT_AUTHORITATIVE_MAX_AGE_S => Band::RecentAuthoritative,
            "authoritative" | "asserted" if age <= ASSERTED_MAX_AGE_S => Band::Asserted,
            "authoritative" | "asserted" => Band::Stale,
            _ => Band::Unknown,
        }
    }
}

/// A vehicle's odometer (`vehicle.odometer`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Odometer {
    pub value: i64,
    pub unit: String,
}

impl Odometer {
    /// The reading in millimetres, exactly (1 mi = 1,609,344 mm by the 1959
    /// international mile; 1 km = 1,000,000 mm), for comparisons across units.
    pub fn millimetres(&self) -> Option<i128> {
        let per_unit: i128 = match self.unit.as_str() {
            "mi" => 1_609_344,
            "km" => 1_000_000,
            _ => return None,
        };
        Some(i128::from(self.value) * per_unit)
    }
}

/// The advertised price (`pricing.schema.json#/$defs/advertisedPrice`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdvertisedPrice {
    pub amount: Money,
    pub availability: String,
    pub includes_required_dealer_charges: bool,
}

/// The used-vehicle summary a vehicle may carry (`vehicle.used_vehicle`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UsedSummary {
    #[serde(default)]
    pub history_report_status: Option<String>,
}

/// A vehicle record (`vehicle.schema.json#/$defs/vehicle`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Vehicle {
    pub vehicle_id: String,
    pub organization_id: String,
    pub rooftop_id: String,
    pub year: i64,
    pub make: String,
    pub model: String,
    pub condition: String,
    pub availability: Availability,
    pub advertised_price: AdvertisedPrice,
    pub provenance: Provenance,
    pub freshness: Freshness,
    #[serde(default)]
    pub vin: Option<String>,
    #[serde(default)]
    pub stock_number: Option<String>,
    #[serde(default)]
    pub odometer: Option<Odometer>,
    #[serde(default)]
    pub used_vehicle: Option<UsedSummary>,
}

impl Vehicle {
    /// "2024 Honda Civic (used)".
    pub fn title(&self) -> String {
        format!(
            "{} {} {} ({})",
            self.year, self.make, self.model, self.condition
        )
    }
}

/// `page` of a search answer (`common.schema.json#/$defs/pageInfo`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PageInfo {
    pub has_more: bool,
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// A search answer (`vehicle.schema.json#/$defs/searchResponse`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchPage {
    pub vehicles: Vec<Vehicle>,
    pub page: PageInfo,
    pub provenance: Provenance,
    pub freshness: Freshness,
}

/// A `verify_availability` answer (`availabilityResult`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AvailabilityResult {
    pub vehicle_id: String,
    pub organization_id: String,
    pub rooftop_id: String,
    pub availability: Availability,
    pub provenance: Provenance,
    pub freshness: Freshness,
}

/// A required dealer charge (`pricing.schema.json#/$defs/dealerCharge`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DealerCharge {
    pub charge_id: String,
    pub name: String,
    pub amount: Money,
    pub included_in_advertised_price: bool,
    pub required: bool,
}

/// One eligibility criterion of a conditional adjustment.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Criterion {
    pub criterion: String,
    pub evidence_status: String,
    #[serde(default)]
    pub description: Option<String>,
}

/// How an adjustment combines with others (`stacking`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stacking {
    pub group: String,
    pub combinability: String,
    #[serde(default)]
    pub combinable_with: Vec<String>,
}

/// A conditional adjustment (`conditionalAdjustment`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Adjustment {
    pub adjustment_id: String,
    pub name: String,
    pub direction: String,
    pub amount_status: String,
    #[serde(default)]
    pub amount: Option<Money>,
    pub criteria: Vec<Criterion>,
    pub stacking: Stacking,
}

impl Adjustment {
    /// Whether a buyer must show proof of some criterion.
    pub fn needs_evidence(&self) -> bool {
        self.criteria
            .iter()
            .any(|c| matches!(c.evidence_status.as_str(), "required" | "claimed"))
    }
}

/// Government charges (`governmentCharges`). Lines are kept as values: an
/// honest unknown carries none, and the audit must see any that a broken
/// gateway adds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GovernmentCharges {
    pub status: String,
    #[serde(default)]
    pub total: Option<Money>,
    #[serde(default)]
    pub lines: Vec<Value>,
}

/// A price disclosure (`pricing.schema.json#/$defs/pricingDisclosure`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Disclosure {
    pub vehicle_id: String,
    pub organization_id: String,
    pub rooftop_id: String,
    pub advertised_price: AdvertisedPrice,
    pub required_dealer_charges: Vec<DealerCharge>,
    pub conditional_adjustments: Vec<Adjustment>,
    pub government_charges: GovernmentCharges,
    pub provenance: Provenance,
    pub freshness: Freshness,
    #[serde(default)]
    pub disclosure_text: Option<String>,
}

impl Disclosure {
    /// The required charges the advertised price does not include.
    pub fn excluded_charges(&self) -> impl Iterator<Item = &DealerCharge> {
        self.required_dealer_charges
            .iter()
            .filter(|c| c.required && !c.included_in_advertised_price)
    }

    /// The advertised price plus every required charge it excludes, when
    /// every amount is in the price's currency.
    pub fn price_with_required_charges(&self) -> Option<Money> {
        self.excluded_charges()
            .try_fold(self.advertised_price.amount.clone(), |sum, c| {
                sum.plus(&c.amount)
            })
    }
}

/// A public contact point of a rooftop (`contactPoint`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Contact {
    pub department: String,
    pub channel: String,
    pub value: String,
    #[serde(default)]
    pub public: Option<bool>,
}

/// A postal address (`common.schema.json#/$defs/address`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Address {
    pub locality: String,
    pub country: String,
    #[serde(default)]
    pub region: Option<String>,
}

/// A rooftop (`dealer.schema.json#/$defs/rooftop`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rooftop {
    pub rooftop_id: String,
    pub name: String,
    pub address: Address,
    #[serde(default)]
    pub contacts: Vec<Contact>,
}

impl Rooftop {
    /// The public contact points of the sales desks (sales, internet sales).
    pub fn sales_contacts(&self) -> Vec<&Contact> {
        self.contacts
            .iter()
            .filter(|c| {
                matches!(c.department.as_str(), "sales" | "internet_sales")
                    && c.public != Some(false)
            })
            .collect()
    }

    /// The buyer jurisdiction of the rooftop's own address (DAP common
    /// `jurisdiction`): its country and, when the region is a subdivision
    /// code, `CC-RR`.
    pub fn jurisdiction(&self) -> Value {
        let mut j = serde_json::json!({"country": self.address.country});
        if let Some(region) = &self.address.region {
            let code = format!("{}-{region}", self.address.country);
            let ok = (1..=3).contains(&region.len())
                && region
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
            if ok {
                j["subdivision"] = Value::String(code);
            }
        }
        j
    }
}

/// A dealer organization (`dealerOrganization`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Dealer {
    pub organization_id: String,
    pub name: String,
    pub rooftops: Vec<Rooftop>,
    pub provenance: Provenance,
    pub freshness: Freshness,
}

/// One history report of a used vehicle (`historyReport`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoryReport {
    pub provider_name: String,
    pub status: String,
    pub summary_sharing_authorized: bool,
    #[serde(default)]
    pub summary: Option<Value>,
}

/// A discrepancy between sources (`discrepancy`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Discrepancy {
    pub field: String,
    pub status: String,
}

/// The odometer disclosure of a used vehicle.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UsedOdometer {
    pub reading: Odometer,
    pub status: String,
}

/// Used-vehicle evidence (`usedVehicleDetails`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UsedDetails {
    pub vehicle_id: String,
    pub odometer: UsedOdometer,
    pub history_reports: Vec<HistoryReport>,
    pub discrepancies: Vec<Discrepancy>,
    pub provenance: Provenance,
    pub freshness: Freshness,
}

/// Parse an RFC 3339 timestamp.
pub fn time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Every object in `v`, with its JSON pointer.
pub fn objects(v: &Value) -> Vec<(String, &serde_json::Map<String, Value>)> {
    fn walk<'a>(
        v: &'a Value,
        path: String,
        out: &mut Vec<(String, &'a serde_json::Map<String, Value>)>,
    ) {
        match v {
            Value::Object(map) => {
                out.push((path.clone(), map));
                for (k, child) in map {
                    walk(child, format!("{path}/{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, format!("{path}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, String::new(), &mut out);
    out
}

/// Where a record gives an amount to something it calls unknown (a
/// `status` or `amount_status` of `unknown` beside an `amount`, `total`,
/// `amount_minor` or line amounts): DAP's "unknown is not zero", and no
/// unknown is ever totalled. Returns the JSON pointers.
pub fn unknown_with_amount(v: &Value) -> Vec<String> {
    let mut found = Vec::new();
    for (path, map) in objects(v) {
        let unknown = ["status", "amount_status"]
            .iter()
            .any(|k| map.get(*k).and_then(Value::as_str) == Some("unknown"));
        if !unknown {
            continue;
        }
        for key in ["amount", "amount_minor", "total"] {
            if map.get(key).is_some_and(|x| !x.is_null()) {
                found.push(format!("{path}/{key}"));
            }
        }
        if map
            .get("lines")
            .and_then(Value::as_array)
            .is_some_and(|l| l.iter().any(|x| x.get("amount").is_some()))
        {
            found.push(format!("{path}/lines"));
        }
    }
    found
}

/// The amounts a text states in `currency`, as minor units: numbers written
/// next to the currency code, before it ("1,234.50 USD") or after it
/// ("USD 1,234.50"). Amounts in other currencies, percentages and bare
/// numbers are not amounts of this disclosure and are left out.
pub fn text_amounts(text: &str, currency: &str) -> Vec<i64> {
    let Some(exp) = exponent(currency) else {
        return Vec::new();
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    let bare = |w: &str| {
        w.trim_matches(|c: char| !c.is_ascii_alphanumeric())
            .to_owned()
    };
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if bare(w) != currency {
            continue;
        }
        let before = i.checked_sub(1).and_then(|j| words.get(j));
        let after = words.get(i + 1);
        for neighbour in [before, after].into_iter().flatten() {
            if let Some(minor) = parse_amount(neighbour, exp) {
                out.push(minor);
                break;
            }
        }
    }
    out
}

/// "(1,234.50" or "1234.5," in minor units of a currency with `exp`
/// decimals; `None` for anything else.
fn parse_amount(word: &str, exp: u16) -> Option<i64> {
    let core = word.trim_matches(|c: char| !c.is_ascii_digit());
    if core.is_empty() || core.contains(|c: char| !(c.is_ascii_digit() || c == ',' || c == '.')) {
        return None;
    }
    let (whole, fraction) = core.split_once('.').unwrap_or((core, ""));
    if fraction.contains(',') || fraction.len() > usize::from(exp) {
        return None;
    }
    let whole: String = whole.chars().filter(|c| *c != ',').collect();
    let padded = format!("{fraction:0<width$}", width = usize::from(exp));
    format!("{whole}{padded}").parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usd(minor: i64) -> Money {
        Money {
            amount_minor: minor,
            currency: "USD".into(),
        }
    }

    #[test]
    fn money_displays_with_the_currency_decimals() {
        assert_eq!(usd(4_088_800).display(), "40,888.00 USD");
        assert_eq!(usd(5).display(), "0.05 USD");
        let yen = Money {
            amount_minor: 1_234_567,
            currency: "JPY".into(),
        };
        assert_eq!(yen.display(), "1,234,567 JPY");
        assert_eq!(usd(-49_900).display(), "-499.00 USD");
    }

    #[test]
    fn sums_refuse_mixed_currencies() {
        let cad = Money {
            amount_minor: 1,
            currency: "CAD".into(),
        };
        assert_eq!(usd(1).plus(&usd(2)), Some(usd(3)));
        assert_eq!(usd(1).plus(&cad), None);
        assert_eq!(usd(i64::MAX).plus(&usd(1)), None);
    }

    #[test]
    fn text_amounts_are_read_next_to_their_currency_only() {
        let text = "Advertised price: 6,100.00 USD, available to every buyer. Documentation fee \
                    (499.00 USD). A 1.9% APR offer; 35 days; CAD 12.00 elsewhere; USD 7.5.";
        assert_eq!(text_amounts(text, "USD"), vec![610_000, 49_900, 750]);
        assert_eq!(text_amounts(text, "CAD"), vec![1_200]);
        // Too many decimals for the currency: not an amount of it.
        assert!(text_amounts("0.001 USD", "USD").is_empty());
    }

    #[test]
    fn bands_follow_authority_and_age() {
        let now = Utc::now();
        let at = |age_s: i64, authority: &str| Availability {
            status: "available".into(),
            authority_status: authority.into(),
            observed_at: (now - chrono::Duration::seconds(age_s)).to_rfc3339(),
            valid_until: None,
            human_verification_required: None,
        };
        assert_eq!(at(100, "authoritative").band_at(now), Band::VerifiedCurrent);
        assert_eq!(
            at(121, "authoritative").band_at(now),
            Band::RecentAuthoritative
        );
        assert_eq!(at(10, "asserted").band_at(now), Band::Asserted);
        assert_eq!(at(90_000, "asserted").band_at(now), Band::Stale);
        assert_eq!(at(10, "unknown").band_at(now), Band::Unknown);
    }

    #[test]
    fn unknown_amounts_are_found_wherever_they_hide() {
        let d = serde_json::json!({"government_charges": {"status": "unknown",
            "total": {"amount_minor": 0, "currency": "USD"}},
            "conditional_adjustments": [{"amount_status": "unknown"}]});
        assert_eq!(unknown_with_amount(&d), vec!["/government_charges/total"]);
    }

    #[test]
    fn odometers_compare_exactly_across_units() {
        let mi = Odometer {
            value: 10,
            unit: "mi".into(),
        };
        let km = Odometer {
            value: 16,
            unit: "km".into(),
        };
        assert!(mi.millimetres() > km.millimetres());
    }
}
