//! The examiner's preparation: which organization is audited, and which of
//! its vehicles each question asks about. Every subject is found in the
//! gateway's own answers (manifest, dealer.get, search, disclosures), never
//! in anyone's demo data, so the audit runs against any DAP gateway. These
//! reads are the examiner's, not the agent's: they count against no
//! question's budget.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::agent::{Env, call_patiently};
use super::wire::{Disclosure, Money, Odometer, SearchPage, Vehicle, time};
use crate::client::{ClientError, Exchange};
use crate::context::{DISCLOSURE, SEARCH};

/// Vehicles the examiner looks at (pages of 100).
const WALK_PAGES: usize = 5;
const WALK_LIMIT: u64 = 100;
/// Disclosures read to find a vehicle with charges and offers.
const MAX_DISCLOSURE_PROBES: usize = 8;
/// How many vehicles the list questions expect to reach.
const LIST_SIZE: usize = 6;

/// The vehicles and values the questions ask about. A `None` makes the
/// questions that need it not applicable (the inventory has no such unit).
#[derive(Debug, Clone, Default)]
pub struct Subjects {
    /// The currency most of the inventory is priced in.
    pub currency: Option<String>,
    /// "At or under this price" (the 6th lowest price in that currency).
    pub price_ceiling: Option<Money>,
    /// "Under this odometer reading" (above the 6th lowest used reading).
    pub mileage_ceiling: Option<Odometer>,
    /// A unit listed as available, current, with a VIN.
    pub in_stock: Option<Vehicle>,
    /// A valid VIN the organization does not list.
    pub absent_vin: String,
    /// A unit with a stock number (another one than `in_stock` if any).
    pub by_stock: Option<Vehicle>,
    /// A unit whose disclosure has a required charge outside the price and
    /// conditional offers (the best found).
    pub priced: Option<Vehicle>,
    /// The buyer jurisdiction of `priced`'s rooftop.
    pub jurisdiction: Option<Value>,
    /// The stalest record listed as available (else the stalest record).
    pub stale: Option<Vehicle>,
    /// A unit listed as neither available nor missing: in transit, on hold,
    /// pending sale, sold or unavailable.
    pub not_on_sale: Option<Vehicle>,
    /// A used unit, one with conflicting history when there is one.
    pub used: Option<Vehicle>,
    /// The most common make and model (in `currency`).
    pub make_model: Option<(String, String)>,
    /// What the examiner noticed (e.g. a walk cut short).
    pub notes: Vec<String>,
}

/// Choose the subjects from the organization's inventory.
pub async fn choose(env: &Env, nonce: &str) -> Result<Subjects, ClientError> {
    let mut s = Subjects::default();
    let vehicles = walk(env, &mut s.notes).await?;
    if vehicles.is_empty() {
        s.notes.push(format!(
            "the organization {} lists no vehicle the auditor may read",
            env.organization_id
        ));
    }
    s.currency = most_common(
        vehicles
            .iter()
            .map(|v| v.advertised_price.amount.currency.clone()),
    );
    let in_currency: Vec<&Vehicle> = vehicles
        .iter()
        .filter(|v| Some(&v.advertised_price.amount.currency) == s.currency.as_ref())
        .collect();
    let listed_available: Vec<&Vehicle> = in_currency
        .iter()
        .copied()
        .filter(|v| v.availability.status == "available")
        .collect();
    let mut prices: Vec<i64> = listed_available
        .iter()
        .map(|v| v.advertised_price.amount.amount_minor)
        .collect();
    prices.sort_unstable();
    s.price_ceiling = prices
        .get(LIST_SIZE - 1)
        .or(prices.last())
        .zip(s.currency.clone())
        .map(|(amount_minor, currency)| Money {
            amount_minor: *amount_minor,
            currency,
        });
    s.mileage_ceiling = mileage_ceiling(&vehicles);
    let now = chrono::Utc::now();
    let current = |v: &&Vehicle| v.freshness.current_at(now);
    s.in_stock = listed_available
        .iter()
        .copied()
        .filter(current)
        .find(|v| v.vin.is_some())
        .or_else(|| listed_available.iter().copied().find(|v| v.vin.is_some()))
        .cloned();
    s.by_stock = vehicles
        .iter()
        .filter(|v| v.stock_number.is_some())
        .find(|v| Some(&v.vehicle_id) != s.in_stock.as_ref().map(|x| &x.vehicle_id))
        .or_else(|| vehicles.iter().find(|v| v.stock_number.is_some()))
        .cloned();
    // AUD-14 asks whether an old listing is still available: the phantom
    // case is a stale record that still says "available" (docs/conformance.md
    // "The twenty questions"), so such a unit is preferred over a stale one
    // already listed as off sale, whose answer is no test of phantom
    // availability (and the choice must not depend on the walk's order).
    let stale = |v: &&Vehicle| matches!(v.freshness.state.as_str(), "stale" | "unknown");
    let says_available = |v: &&Vehicle| v.availability.status == "available";
    let oldest = |vs: &mut dyn Iterator<Item = &Vehicle>| {
        vs.min_by_key(|v| time(&v.freshness.observed_at)).cloned()
    };
    s.stale = oldest(&mut vehicles.iter().filter(stale).filter(says_available))
        .or_else(|| oldest(&mut vehicles.iter().filter(stale)))
        .or_else(|| oldest(&mut vehicles.iter().filter(says_available)))
        .or_else(|| oldest(&mut vehicles.iter()));
    s.not_on_sale = vehicles
        .iter()
        .find(|v| {
            matches!(
                v.availability.status.as_str(),
                "in_transit" | "on_hold" | "pending_sale" | "sold" | "unavailable"
            )
        })
        .cloned();
    s.used = vehicles
        .iter()
        .filter(|v| matches!(v.condition.as_str(), "used" | "certified"))
        .find(|v| {
            v.used_vehicle
                .as_ref()
                .and_then(|u| u.history_report_status.as_deref())
                == Some("conflicting")
        })
        .or_else(|| {
            vehicles
                .iter()
                .find(|v| matches!(v.condition.as_str(), "used" | "certified"))
        })
        .cloned();
    s.make_model = most_common(
        in_currency
            .iter()
            .map(|v| (v.make.clone(), v.model.clone())),
    );
    s.priced = priced(env, &vehicles).await?;
    s.jurisdiction = s
        .priced
        .as_ref()
        .and_then(|v| env.rooftop(&v.rooftop_id))
        .map(super::wire::Rooftop::jurisdiction);
    s.absent_vin = absent_vin(env, nonce).await?;
    Ok(s)
}

/// The organization's vehicles, a few pages of them.
async fn walk(env: &Env, notes: &mut Vec<String>) -> Result<Vec<Vehicle>, ClientError> {
    let mut args = json!({"organization_id": env.organization_id, "page": {"limit": WALK_LIMIT}});
    let mut out = Vec::new();
    for page in 0..WALK_PAGES {
        let Some(p) = examine::<SearchPage>(env, SEARCH, &args).await? else {
            notes.push("the examiner's inventory search did not answer in the DAP shape".into());
            break;
        };
        out.extend(p.vehicles);
        match p.page.next_cursor {
            Some(next) if p.page.has_more => {
                if page + 1 == WALK_PAGES {
                    notes.push(format!(
                        "subjects were chosen from the first {} vehicles",
                        out.len()
                    ));
                }
                args["page"]["cursor"] = json!(next);
            }
            _ => break,
        }
    }
    Ok(out)
}

/// One examiner read as `T` (`None` for an error or another shape).
async fn examine<T: serde::de::DeserializeOwned>(
    env: &Env,
    tool: &str,
    args: &Value,
) -> Result<Option<T>, ClientError> {
    let answers = call_patiently(&env.client, &env.caller, tool, args).await?;
    Ok(answers
        .last()
        .and_then(Exchange::tool_ok)
        .and_then(|v| serde_json::from_value(v.clone()).ok()))
}

/// The most frequent item (ties: the smallest).
fn most_common<T: Ord + Clone>(items: impl Iterator<Item = T>) -> Option<T> {
    let mut counts: BTreeMap<T, usize> = BTreeMap::new();
    for item in items {
        *counts.entry(item).or_default() += 1;
    }
    let best = counts.values().copied().max()?;
    counts.into_iter().find(|(_, c)| *c == best).map(|(k, _)| k)
}

/// One more than the [`LIST_SIZE`]th lowest used reading, in the most
/// common unit among used vehicles.
fn mileage_ceiling(vehicles: &[Vehicle]) -> Option<Odometer> {
    let used: Vec<&Odometer> = vehicles
        .iter()
        .filter(|v| matches!(v.condition.as_str(), "used" | "certified"))
        .filter_map(|v| v.odometer.as_ref())
        .collect();
    let unit = most_common(used.iter().map(|o| o.unit.clone()))?;
    let mut readings: Vec<i64> = used
        .iter()
        .filter(|o| o.unit == unit)
        .map(|o| o.value)
        .collect();
    readings.sort_unstable();
    let nth = readings.get(LIST_SIZE - 1).or(readings.last())?;
    Some(Odometer {
        value: nth.checked_add(1)?,
        unit,
    })
}

/// A vehicle whose disclosure excludes a required charge from the price and
/// carries conditional offers, one per rooftop first; else the best found.
async fn priced(env: &Env, vehicles: &[Vehicle]) -> Result<Option<Vehicle>, ClientError> {
    let mut order: Vec<&Vehicle> = Vec::new();
    let mut rooftops_seen = std::collections::BTreeSet::new();
    for v in vehicles {
        if rooftops_seen.insert(v.rooftop_id.clone()) {
            order.push(v);
        }
    }
    for v in vehicles {
        if !order.iter().any(|o| o.vehicle_id == v.vehicle_id) {
            order.push(v);
        }
    }
    let mut best: Option<(u8, &Vehicle)> = None;
    for v in order.into_iter().take(MAX_DISCLOSURE_PROBES) {
        let args = json!({"organization_id": env.organization_id,
            "rooftop_id": v.rooftop_id, "vehicle_id": v.vehicle_id});
        let Some(d) = examine::<Disclosure>(env, DISCLOSURE, &args).await? else {
            continue;
        };
        let score = u8::from(d.excluded_charges().next().is_some()) * 4
            + u8::from(d.conditional_adjustments.len() >= 2) * 2
            + u8::from(d.conditional_adjustments.iter().any(|a| a.needs_evidence()));
        if best.is_none_or(|(b, _)| score > b) {
            best = Some((score, v));
        }
        if score == 7 {
            break;
        }
    }
    Ok(best.map(|(_, v)| v.clone()))
}

/// A VIN (DAP's pattern `^[A-HJ-NPR-Z0-9]{17}$`) the organization does not
/// list, made from the run's nonce.
async fn absent_vin(env: &Env, nonce: &str) -> Result<String, ClientError> {
    let digits: String = nonce
        .bytes()
        .map(|b| char::from(b'0' + b % 10))
        .chain(std::iter::repeat('7'))
        .take(9)
        .collect();
    let mut vin = format!("1DAPAUDT{digits}");
    for attempt in 0..3u8 {
        let args = json!({"organization_id": env.organization_id,
            "filters": {"vin": vin}, "page": {"limit": 1}});
        let found = examine::<SearchPage>(env, SEARCH, &args)
            .await?
            .is_some_and(|p| !p.vehicles.is_empty());
        if !found {
            break;
        }
        vin = format!("1DAPAUDT{:0>9}", u32::from(attempt) + 1);
    }
    Ok(vin)
}
