//! A rooftop as the feed generator sees it: its identity (ids, currency,
//! odometer unit, country, web host, franchise) and the pricing policy
//! derived from the seed (exchange rate, minor units, fees, stock numbers,
//! the models it sells).

use super::data::{
    CA_DOC_FEES, MODELS, Model, OTHER_DOC_FEES_USD, US_DOC_FEES, USD_RATES_PER_MILLE,
};
use super::random::Rng;

/// The odometer unit of a rooftop (DAP 6, CSV-004: `mi` or `km`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Unit {
    Mi,
    Km,
}

impl Unit {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Unit::Mi => "mi",
            Unit::Km => "km",
        }
    }

    /// Converts whole miles to this unit.
    pub(super) fn miles_to(self, miles: i64) -> i64 {
        match self {
            Unit::Mi => miles,
            Unit::Km => miles * 1_609_344 / 1_000_000,
        }
    }
}

/// `roof.acme_north` → `acme-north.example`.
pub(super) fn slug_host(rooftop_id: &str) -> String {
    let base = rooftop_id.strip_prefix("roof.").unwrap_or(rooftop_id);
    let mut host: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    host = host.trim_matches('-').to_owned();
    if host.is_empty() {
        host.push_str("dealer");
    }
    host.push_str(".example");
    host
}

/// What identifies a rooftop to the feed writer.
pub(super) struct RooftopIdentity {
    pub(super) organization_id: String,
    pub(super) rooftop_id: String,
    pub(super) currency: String,
    pub(super) unit: Unit,
    /// ISO 3166-1 country, when the currency tells it.
    pub(super) country: Option<&'static str>,
    /// ISO 3166-2 subdivision, e.g. `US-IL`, when known.
    pub(super) subdivision: Option<String>,
    /// Web host of listing and image URLs.
    pub(super) host: String,
    /// Make whose new vehicles the rooftop sells.
    pub(super) franchise: &'static str,
    /// Share of rows (per mille) observed hours ago (stale).
    pub(super) stale_per_mille: u64,
    /// The rows list no charges of their own: the rooftop's dealers-file
    /// charges apply (the demo's lint examples, docs/lint.md).
    pub(super) charges_in_settings: bool,
}

/// A rooftop with its derived pricing policy and model lists.
pub(super) struct FeedRooftop {
    pub(super) id: RooftopIdentity,
    /// Local currency units per 1000 US dollars.
    usd_rate_per_mille: i64,
    /// Minor units per major unit (100 for USD and CAD).
    pub(super) minor_per_major: i64,
    pub(super) doc_fee_major: i64,
    pub(super) doc_fee_taxable: &'static str,
    pub(super) fees_included: bool,
    pub(super) e_filing_fee: bool,
    pub(super) stock_base: u64,
    /// Indexes into [`MODELS`].
    pub(super) new_models: Vec<usize>,
    pub(super) used_franchise: Vec<usize>,
    pub(super) used_any: Vec<usize>,
}

impl FeedRooftop {
    pub(super) fn new(id: RooftopIdentity, rng: &mut Rng, year: i32) -> Self {
        let usd_rate_per_mille = USD_RATES_PER_MILLE
            .iter()
            .find(|(code, _)| *code == id.currency)
            .map_or(1000, |(_, rate)| *rate);
        // Prices are integer minor units of the rooftop currency (DAP 6):
        // its ISO 4217 exponent says how many.
        let exponent = iso_currency::Currency::from_code(&id.currency)
            .and_then(|c| c.exponent())
            .unwrap_or(2);
        let minor_per_major = 10i64.pow(u32::from(exponent.min(4)));
        let doc_fee_major = match id.country {
            Some("US") => *rng.pick(US_DOC_FEES),
            Some("CA") => *rng.pick(CA_DOC_FEES),
            _ => *rng.pick(OTHER_DOC_FEES_USD) * usd_rate_per_mille / 1000,
        };
        let doc_fee_taxable = if id.country == Some("CA") || rng.chance(600) {
            "taxable"
        } else {
            "jurisdiction_dependent"
        };
        let fees_included = rng.chance(350);
        let e_filing_fee = id.country == Some("US") && rng.chance(300);
        let stock_base = 10_000 + rng.below(50_000);
        let in_production = |m: &Model| m.last_year >= year && m.first_year <= year + 1;
        let built = |m: &Model| m.first_year <= year;
        let new_models = (0..MODELS.len())
            .filter(|&i| MODELS[i].make == id.franchise && in_production(&MODELS[i]))
            .collect();
        let used_franchise = (0..MODELS.len())
            .filter(|&i| MODELS[i].make == id.franchise && built(&MODELS[i]))
            .collect();
        let used_any = (0..MODELS.len()).filter(|&i| built(&MODELS[i])).collect();
        FeedRooftop {
            id,
            usd_rate_per_mille,
            minor_per_major,
            doc_fee_major,
            doc_fee_taxable,
            fees_included,
            e_filing_fee,
            stock_base,
            new_models,
            used_franchise,
            used_any,
        }
    }

    /// US dollars to whole local units.
    pub(super) fn local(&self, usd: i64) -> i64 {
        usd * self.usd_rate_per_mille / 1000
    }
}
