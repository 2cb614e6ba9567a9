//! The disclosure lint, gateway side (docs/lint.md): gathers the
//! [`Facts`] of one vehicle's disclosure as it is published (the built
//! document, the feed's claims, the rooftop's settings, the stored price
//! history), runs the pure engine (`pricing::lint`) and writes the
//! `dealergateway.disclosure-lint` block. The tool, the console, the CLI
//! and the metric all come through here, so they say the same thing.

pub mod rooftop;
#[cfg(test)]
mod tests;

use chrono::{DateTime, Duration, Utc};
use pricing::Money;
use pricing::lint::{Charge, Facts, GovernmentStatus, Known, Place, Reduction, Report};
use serde_json::{Value, json};

use crate::dap::disclosure::PricingDisclosure;
use crate::domain::dealer::{RooftopPricing, SourceRecord};
use crate::domain::vehicle::VehicleRecord;
use crate::store::{PriceHistory, Store, StoreError};

/// Extension member of a disclosure that carries the lint.
pub const EXTENSION: &str = "dealergateway.disclosure-lint";

/// The window of an announced reduction's prior price (Directive 98/6/EC
/// art. 6a; PAngV §11): at least 30 days before the reduction applied.
pub const PRIOR_DAYS: u32 = 30;

/// How far back the price history is read for a vehicle that announces a
/// reduction: the prior window plus the time the reduced price may have
/// been in force (the store keeps superseded points at least 90 days).
pub const HISTORY_DAYS: i64 = 120;

/// The block's one-sentence notice (docs/lint.md: not legal advice).
pub const NOTICE: &str = "A check of the published data against the cited rules, not legal advice.";

/// Where the place linted came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaceSource {
    /// The request's buyer jurisdiction (DAP `jurisdiction`).
    Request,
    /// The rooftop's address.
    Rooftop,
}

impl PlaceSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Request => "request",
            Self::Rooftop => "rooftop",
        }
    }
}

/// The place to lint for: the buyer's jurisdiction when the request gives
/// one (a subdivision written `CA` or `US-CA` alike), else the rooftop's
/// address. `None` when a requested jurisdiction has no country.
pub fn place(
    requested: Option<&Value>,
    rooftop: &crate::dap::Rooftop,
) -> Option<(Place, PlaceSource)> {
    match requested {
        Some(j) => {
            let country = j.get("country").and_then(Value::as_str)?.to_owned();
            let subdivision = j
                .get("subdivision")
                .and_then(Value::as_str)
                .map(|s| subdivision_code(&country, s));
            Some((
                Place {
                    country,
                    subdivision,
                },
                PlaceSource::Request,
            ))
        }
        None => Some((
            Place {
                country: rooftop.address.country.clone(),
                subdivision: rooftop.address.subdivision(),
            },
            PlaceSource::Rooftop,
        )),
    }
}

/// `CA` in `US` is `US-CA`; `US-CA` stays.
pub fn subdivision_code(country: &str, subdivision: &str) -> String {
    if subdivision.contains('-') {
        subdivision.to_owned()
    } else {
        format!("{country}-{subdivision}")
    }
}

/// Parses a CLI jurisdiction, `US-CA` or `DE`, into a place.
pub fn parse_place(text: &str) -> Option<Place> {
    let valid = |s: &str, len: usize| {
        (1..=len).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric())
    };
    let (country, sub) = match text.split_once('-') {
        Some((c, s)) => (c, Some(s)),
        None => (text, None),
    };
    let country = country.to_ascii_uppercase();
    if country.len() != 2 || !valid(&country, 2) || sub.is_some_and(|s| !valid(s, 3)) {
        return None;
    }
    Some(Place {
        subdivision: sub.map(|s| format!("{country}-{}", s.to_ascii_uppercase())),
        country,
    })
}

/// What the facts are gathered from: the disclosure exactly as it is
/// published, with what DAP has no member for.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub record: &'a VehicleRecord,
    pub pricing: &'a RooftopPricing,
    pub document: &'a PricingDisclosure,
    /// Where the rooftop settings came from (the dealers file).
    pub config_source: Option<&'a SourceRecord>,
}

/// Reads the price history a lint of `record` needs: none unless the feed
/// announces a reduction (then the rules compare the reference price with
/// the lowest price of the prior window).
pub async fn history(
    store: &dyn Store,
    record: &VehicleRecord,
    now: DateTime<Utc>,
) -> Result<Option<PriceHistory>, StoreError> {
    if record.claims.reference_price.is_none() {
        return Ok(None);
    }
    store
        .price_history(
            &record.organization_id,
            &record.rooftop_id,
            &record.vehicle_id,
            now - Duration::days(HISTORY_DAYS),
        )
        .await
        .map(Some)
}

/// The lowest advertised price over the `days` before the current price
/// applied, from the stored history; unknown when the history does not
/// show the current price (not yet recorded), or does not reach back over
/// the whole window (never a guess: docs/lint.md "Price reductions").
pub fn lowest_prior(history: &PriceHistory, current: Money, days: u32) -> Known<Money> {
    let Some((last, earlier)) = history.points.split_last() else {
        return Known::Unknown;
    };
    if last.amount != current {
        return Known::Unknown;
    }
    let applied = last.from;
    let start = applied - Duration::days(i64::from(days));
    if history.begins_at.is_none_or(|b| b > start) {
        return Known::Unknown;
    }
    // A point is in force from its `from` until the next point's.
    let mut lowest: Option<Money> = None;
    for (i, point) in earlier.iter().enumerate() {
        let until = history.points[i + 1].from;
        if until <= start || point.from >= applied {
            continue;
        }
        if point.amount.currency() != current.currency() {
            return Known::Unknown;
        }
        if lowest.is_none_or(|l| point.amount.amount_minor() < l.amount_minor()) {
            lowest = Some(point.amount);
        }
    }
    lowest.map_or(Known::Unknown, Known::Known)
}

fn source_name(document: &PricingDisclosure) -> String {
    document
        .provenance
        .sources
        .first()
        .map_or_else(|| "unknown".to_owned(), |s| s.source_name.clone())
}

/// The facts of `subject` at `place` on `now`'s date.
pub fn facts(
    subject: Subject<'_>,
    place: Place,
    history: Option<&PriceHistory>,
    now: DateTime<Utc>,
) -> Facts {
    let Subject {
        record,
        pricing,
        document,
        config_source,
    } = subject;
    let feed = record.source.source_name.clone();
    let settings = config_source.map_or_else(|| "unknown".to_owned(), |s| s.source_name.clone());
    let own = record
        .required_dealer_charges
        .as_deref()
        .unwrap_or_default();
    let charges = if document
        .disclosure_completeness
        .components
        .required_dealer_charges_itemized
    {
        Known::Known(
            document
                .required_dealer_charges
                .iter()
                .map(|listed| {
                    let c = &listed.charge;
                    let from_vehicle = own.iter().any(|o| o.charge_id == c.charge_id);
                    let (class, source) = if from_vehicle {
                        (record.claims.charge_classes.get(&c.charge_id), &feed)
                    } else {
                        (pricing.charge_classes.get(&c.charge_id), &settings)
                    };
                    Charge {
                        charge_id: c.charge_id.clone(),
                        name: c.name.clone(),
                        amount: c.amount,
                        included_in_advertised_price: c.included_in_advertised_price,
                        class: class.copied(),
                        source: source.clone(),
                    }
                })
                .collect(),
        )
    } else {
        Known::Unknown
    };
    let government_charges = match document.government_charges.status.as_str() {
        "estimated" => Known::Known(GovernmentStatus::Estimated),
        "calculated" => Known::Known(GovernmentStatus::Calculated),
        "not_applicable" => Known::Known(GovernmentStatus::NotApplicable),
        _ => Known::Unknown,
    };
    let price_includes_vat = pricing
        .advertised_prices_include_vat
        .map_or(Known::Unknown, Known::Known);
    let reduction = match record.claims.reference_price {
        None => Reduction::NotAnnounced,
        Some(reference_price) => Reduction::Announced {
            reference_price,
            lowest_prior: history.map_or(Known::Unknown, |h| {
                lowest_prior(h, record.advertised_price, PRIOR_DAYS)
            }),
            days: PRIOR_DAYS,
        },
    };
    let mut sources = std::collections::BTreeMap::new();
    sources.insert("advertised_price".to_owned(), source_name(document));
    sources.insert("vehicle".to_owned(), feed);
    sources.insert("rooftop_settings".to_owned(), settings);
    sources.insert(
        "price_history".to_owned(),
        "gateway price history (stored snapshots)".to_owned(),
    );
    Facts {
        place,
        as_of: now.date_naive(),
        condition: record.condition.clone(),
        advertised_price: record.advertised_price,
        charges,
        government_charges,
        price_includes_vat,
        // What the gateway publishes is known: the feed's VIN and odometer
        // reading, or nothing (docs/lint.md).
        vin_published: Known::Known(record.vin.is_some()),
        odometer_published: Known::Known(record.odometer.is_some()),
        reduction,
        sources,
    }
}

/// The engine's report on `facts` with the shipped catalogue.
pub fn report(facts: &Facts) -> Report {
    pricing::lint::lint(pricing::lint::catalogue(), facts)
}

/// The `dealergateway.disclosure-lint` block: the report, the notice, where
/// the place came from and, in full detail, the facts (which a
/// conformance suite re-runs the engine on).
pub fn block(report: &Report, facts: &Facts, source: PlaceSource, full: bool) -> Value {
    let mut value = serde_json::to_value(report).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut value {
        map.insert("notice".to_owned(), Value::from(NOTICE));
        map.insert(
            "jurisdiction_source".to_owned(),
            Value::from(source.as_str()),
        );
        if full && let Ok(f) = serde_json::to_value(facts) {
            map.insert("facts".to_owned(), f);
        }
    }
    value
}
