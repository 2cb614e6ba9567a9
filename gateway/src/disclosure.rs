//! The DAP pricing disclosure of one vehicle (`pricing.schema.json#/$defs/
//! pricingDisclosure`), built by one pure function of its inputs so that the
//! tool `dealeragent.pricing.get_disclosure` and the terminal preview show
//! exactly the same thing (docs/pricing.md, sections 5 and 6).
//!
//! Rules (the "one price problem"):
//! * The four parts stay separate: the generally available advertised
//!   price, the itemized required dealer charges, the conditional
//!   adjustments (each only for an eligible buyer, never subtracted from the
//!   advertised price) and the government charges.
//! * Unknown is never zero: unknown government charges have no lines and no
//!   total, and the text says they are unknown.
//! * The completeness score follows the published weights in
//!   [`WEIGHT_COMPONENT`] and [`band_points`].

pub mod cache;
mod programs;
mod text;

pub use programs::{profile_jurisdiction, programs_input};

pub use text::{CLOSING as TEXT_CLOSING, MAX_TEXT, TEXT_DISCOUNT_LIMIT};

use chrono::{DateTime, Duration, Utc};
use pricing::Money;
use serde_json::{Map, Value, json};

use crate::availability::Band;
use crate::dap::{DealerCharge, MAX_AGE_LIMIT, MAX_TRANSFORMATIONS, Provenance, Source, truncate};
use crate::inventory::model::VehicleRecord;
use crate::inventory::render::timestamp;
use crate::store::{RooftopPricing, SourceRecord};

/// Points of each boolean completeness component.
pub const WEIGHT_COMPONENT: u32 = 20;
/// Extension member holding the full transformation list when DAP's cap
/// abbreviates `provenance.transformations`.
pub const PROVENANCE_EXTENSION: &str = "dealergateway.provenance";
/// Points of the availability band component (at most [`WEIGHT_COMPONENT`]).
pub fn band_points(band: Band) -> u32 {
    match band {
        Band::VerifiedCurrent => 20,
        Band::RecentAuthoritative => 15,
        Band::Asserted => 10,
        Band::Stale => 5,
        Band::Unknown => 0,
    }
}

/// A conditional adjustment from a published incentive program, already in
/// DAP `conditionalAdjustment` shape, with what its provenance and
/// freshness need.
#[derive(Debug, Clone)]
pub struct ProgramAdjustment {
    pub adjustment: Value,
    pub program_id: String,
    pub revision: u32,
    /// `sha256:…` of the program's stacking rule, when it has one.
    pub rule_hash: Option<String>,
    pub valid_until: Option<DateTime<Utc>>,
}

/// Published programs of the organization (absent when none are loaded).
#[derive(Debug, Clone)]
pub struct ProgramsInput {
    /// Applicable programs (already narrowed by the caller's applicability
    /// rules) as adjustments.
    pub adjustments: Vec<ProgramAdjustment>,
    /// The provenance `source` objects of the programs file(s).
    pub sources: Vec<Value>,
    /// When the programs were loaded.
    pub loaded_at: DateTime<Utc>,
    /// `extensions["dealergateway.offers"]`: the offer evaluation for the
    /// default profile.
    pub evaluation: Option<Value>,
    /// The evaluation's own validity limit (a program starting or ending).
    pub evaluation_valid_until: Option<DateTime<Utc>>,
    /// Why the evaluation for the default profile could not complete (a
    /// value-free sentence, [`evaluation_failure`]). Then no program is
    /// listed and the disclosure says so in `uncertainty`, in its text and
    /// in its score: never an empty list that looks
    /// complete.
    pub evaluation_error: Option<String>,
    /// One sentence per stored program that cannot be evaluated, for
    /// `uncertainty` (never dropped in silence).
    pub unusable: Vec<String>,
    /// Set when the evaluation's budget or deadline stopped its search
    /// (`optimality: bounded`, docs/pricing.md section 4): a sentence for
    /// the text and `uncertainty`.
    pub evaluation_bounded: Option<String>,
}

/// The sentence a disclosure carries when its offer evaluation was
/// bounded by its budget (docs/pricing.md section 4).
pub fn bounded_sentence(stop: pricing::stacking::BudgetStop) -> String {
    use pricing::stacking::BudgetStop;
    let why = match stop {
        BudgetStop::Nodes | BudgetStop::RuleOperations => "its operation budget",
        BudgetStop::Interrupted => "its time budget",
    };
    format!(
        "The best combination of the dealer's incentive offers was not proven: the evaluation stopped at {why}, so its best stack is the best found, not necessarily the best (optimality bounded); every applicable offer is still listed."
    )
}

/// A value-free, caller-facing sentence for an evaluation that cannot
/// complete. Both causes are deterministic properties of the stored inputs
/// (retrying cannot help), so `offers.evaluate` answers them as a
/// non-retryable error and the disclosure reports them.
pub fn evaluation_failure(err: &pricing::stacking::EvaluationError) -> String {
    use pricing::stacking::EvaluationError;
    match err {
        EvaluationError::Money(_) => "The organization's incentive programs cannot be evaluated for this vehicle: their amounts cannot be summed with its price within the signed 64-bit range of minor units (money overflow). The result is deterministic; the programs file must be corrected.".to_owned(),
        EvaluationError::NegativePrice(_) => "The organization's incentive programs cannot be evaluated for this vehicle: its advertised price is negative.".to_owned(),
    }
}

/// Everything a disclosure is computed from.
#[derive(Debug, Clone)]
pub struct Inputs<'a> {
    pub record: &'a VehicleRecord,
    /// The rooftop's pricing configuration.
    pub pricing: &'a RooftopPricing,
    /// Where the rooftop configuration came from (the dealers file).
    pub config_source: Option<&'a SourceRecord>,
    pub inventory_sla_seconds: u32,
    /// The vehicle was withdrawn by the rooftop's newest snapshot.
    pub withdrawn: bool,
    /// Version of the snapshot the record comes from.
    pub snapshot_version: i64,
    /// Availability band at `now` (from stored observations only).
    pub band: Band,
    /// Requested buyer jurisdiction (DAP `jurisdiction`).
    pub jurisdiction: Option<&'a Value>,
    /// Requested payment mode (`cash|finance|lease|unknown`).
    pub payment_mode: Option<&'a str>,
    pub programs: Option<ProgramsInput>,
    pub now: DateTime<Utc>,
}

/// One completeness component that did not earn its full points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    pub component: &'static str,
    pub points_lost: u32,
    pub what: String,
    pub fix: String,
}

/// A built disclosure: the wire document plus what the preview shows.
#[derive(Debug, Clone)]
pub struct Disclosure {
    pub document: Value,
    pub score: u32,
    pub gaps: Vec<Gap>,
}

fn str_of<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

fn parse_time(v: &Value, key: &str) -> Option<DateTime<Utc>> {
    str_of(v, key).and_then(rfc3339)
}

fn rfc3339(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The first instant after `now` at which one of the feed's own
/// adjustments starts or stops applying (its `valid_from` or
/// `valid_until`): a disclosure built at `now` is the same document until
/// then, as far as the feed's adjustments go (programs have their own
/// window in the evaluation). `None` when no such instant is ahead.
pub fn next_feed_change(record: &VehicleRecord, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    record
        .conditional_adjustments
        .as_deref()
        .unwrap_or_default()
        .iter()
        .flat_map(|adj| [&adj.valid_from, &adj.valid_until])
        .filter_map(|t| t.as_deref().and_then(rfc3339))
        .filter(|t| *t >= now)
        .min()
}

/// Does an adjustment's (or estimate's) jurisdiction `rule` cover the
/// requested `wanted`? Country must be equal; a subdivision on the rule
/// must equal the requested one (a request without a subdivision cannot
/// rule it out, so it is kept for adjustments and not matched for
/// estimates, see `strict`).
fn jurisdiction_covers(rule: &Value, wanted: &Value, strict: bool) -> bool {
    covers(
        str_of(rule, "country"),
        str_of(rule, "subdivision"),
        wanted,
        strict,
    )
}

/// [`jurisdiction_covers`] for a rule given by its country and
/// subdivision.
fn covers(country: Option<&str>, subdivision: Option<&str>, wanted: &Value, strict: bool) -> bool {
    if country != str_of(wanted, "country") {
        return false;
    }
    match (subdivision, str_of(wanted, "subdivision")) {
        (None, _) => true,
        (Some(a), Some(b)) => a == b,
        (Some(_), None) => !strict,
    }
}

/// Is the adjustment applicable under the request's jurisdiction, payment
/// mode and `now` (validity window)?
fn adjustment_applies(
    adj: &Value,
    jurisdiction: Option<&Value>,
    payment_mode: Option<&str>,
    now: DateTime<Utc>,
) -> bool {
    if parse_time(adj, "valid_until").is_some_and(|t| t < now)
        || parse_time(adj, "valid_from").is_some_and(|t| t > now)
    {
        return false;
    }
    if let (Some(wanted), Some(list)) = (
        jurisdiction,
        adj.get("jurisdictions").and_then(Value::as_array),
    ) && !list.is_empty()
        && !list.iter().any(|j| jurisdiction_covers(j, wanted, false))
    {
        return false;
    }
    if let Some(mode) = payment_mode.filter(|m| *m != "unknown") {
        let criteria = adj
            .get("criteria")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let any_mode = str_of(adj, "criteria_mode") == Some("any");
        let tests: Vec<bool> = criteria
            .iter()
            .filter(|c| str_of(c, "criterion") == Some("payment_mode"))
            .map(|c| match c.get("value") {
                Some(Value::String(s)) => s == mode,
                Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(mode)),
                _ => true,
            })
            .collect();
        // With `any`, another criterion may still qualify the buyer; only an
        // all-criteria adjustment is ruled out by a payment mode mismatch.
        if !tests.is_empty() && !any_mode && tests.iter().any(|ok| !ok) {
            return false;
        }
    }
    true
}

/// Merge rooftop default charges and the vehicle's own (by `charge_id`,
/// the vehicle wins), rooftop order first.
fn merged_charges<'r>(
    record: &'r VehicleRecord,
    pricing: &'r RooftopPricing,
) -> Vec<&'r DealerCharge> {
    let own = record
        .required_dealer_charges
        .as_deref()
        .unwrap_or_default();
    let mut out: Vec<&DealerCharge> = pricing
        .required_dealer_charges
        .iter()
        .filter(|c| !own.iter().any(|o| o.charge_id == c.charge_id))
        .collect();
    out.extend(own);
    out
}

/// A configured estimate matching the requested jurisdiction (subdivision
/// matches before country-only ones; first in file order otherwise).
pub fn matching_estimate<'p>(
    pricing: &'p RooftopPricing,
    wanted: Option<&Value>,
) -> Option<&'p crate::store::GovernmentChargeEstimate> {
    let wanted = wanted?;
    let matches = |e: &&crate::store::GovernmentChargeEstimate| {
        covers(
            Some(&e.jurisdiction.country),
            e.jurisdiction.subdivision.as_deref(),
            wanted,
            true,
        )
    };
    pricing
        .government_charge_estimates
        .iter()
        .filter(matches)
        .find(|e| e.jurisdiction.subdivision.is_some())
        .or_else(|| pricing.government_charge_estimates.iter().find(matches))
}

/// The places the rooftop publishes government-charge estimates for
/// (`US-IL, US-IN and US`), at most [`PLACES_NAMED`] then a count; `None`
/// when it publishes none.
fn estimate_places(pricing: &RooftopPricing) -> Option<String> {
    let mut places: Vec<&str> = Vec::new();
    for e in &pricing.government_charge_estimates {
        let place = e
            .jurisdiction
            .subdivision
            .as_deref()
            .or(Some(e.jurisdiction.country.as_str()))
            .filter(|p| p.len() <= 6 && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
        if let Some(p) = place
            && !places.contains(&p)
        {
            places.push(p);
        }
    }
    let (named, rest) = places.split_at(places.len().min(PLACES_NAMED));
    match (named, rest.len()) {
        ([], _) => None,
        ([one], 0) => Some((*one).to_owned()),
        (_, 0) => {
            let (last, init) = named.split_last()?;
            Some(format!("{} and {last}", init.join(", ")))
        }
        (_, n) => Some(format!("{} and {n} more", named.join(", "))),
    }
}

/// How many estimate places an unknown-government reason names.
const PLACES_NAMED: usize = 5;

/// Government charges and, for the text, the estimate's total.
struct Government {
    value: Value,
    status: &'static str,
    total: Option<Money>,
    reason: String,
    assumptions: Vec<String>,
}

fn government(inputs: &Inputs<'_>) -> Government {
    if let Some(estimate) = matching_estimate(inputs.pricing, inputs.jurisdiction) {
        let amounts: Vec<Money> = estimate.lines.iter().map(|l| l.amount).collect();
        let total = amounts
            .first()
            .map(|m| m.currency())
            .and_then(|first| Money::checked_sum(first, amounts).ok());
        if let Some(total) = total {
            let mut assumptions = estimate.assumptions.clone();
            if assumptions.is_empty() {
                assumptions.push(
                    "Estimate configured by the dealer for this jurisdiction; the actual amounts depend on the buyer's registration."
                        .to_owned(),
                );
            }
            let mut value = json!({
                "status": "estimated",
                "jurisdiction": estimate.jurisdiction,
                "lines": estimate.lines,
                "total": total,
                "assumptions": assumptions,
            });
            if let Some(p) = config_provenance(inputs.config_source) {
                value["provenance"] = p;
            }
            return Government {
                value,
                status: "estimated",
                total: Some(total),
                reason: "Government charges are an estimate for the requested jurisdiction."
                    .to_owned(),
                assumptions,
            };
        }
    }
    match inputs.record.government_charges_status.as_deref() {
        Some(status @ ("calculated" | "not_applicable")) => {
            let status: &'static str = if status == "calculated" {
                "calculated"
            } else {
                "not_applicable"
            };
            let basis = format!(
                "Status {status} as published by the dealer's inventory feed ({}).",
                inputs.record.source.source_name
            );
            Government {
                value: json!({"status": status, "assumptions": [basis.clone()]}),
                status,
                total: None,
                reason: basis.clone(),
                assumptions: vec![basis],
            }
        }
        _ => {
            // Never "publishes no amounts" when it does publish estimates:
            // say which places they cover, so an agent can ask again with
            // the buyer's jurisdiction and a manager is not sent to
            // configure what is configured.
            let covered = estimate_places(inputs.pricing);
            let reason = if matching_estimate(inputs.pricing, inputs.jurisdiction).is_some() {
                "Government charges (taxes, title, registration) are unknown for the requested jurisdiction: the dealer's estimate for it cannot be totalled (no lines, a line without an amount, or lines in more than one currency).".to_owned()
            } else {
                match (inputs.jurisdiction.is_none(), covered) {
                    (true, None) => "Government charges (taxes, title, registration) are unknown: no buyer jurisdiction was given and the dealer publishes no amounts.".to_owned(),
                    (true, Some(places)) => format!(
                        "Government charges (taxes, title, registration) are unknown until the buyer's jurisdiction is given: the dealer publishes estimates for {places}."
                    ),
                    (false, None) => "Government charges (taxes, title, registration) are unknown for the requested jurisdiction: the dealer publishes no estimate for it.".to_owned(),
                    (false, Some(places)) => format!(
                        "Government charges (taxes, title, registration) are unknown for the requested jurisdiction: the dealer publishes estimates only for {places}."
                    ),
                }
            };
            Government {
                value: json!({"status": "unknown"}),
                status: "unknown",
                total: None,
                reason,
                assumptions: Vec::new(),
            }
        }
    }
}

fn config_provenance(source: Option<&SourceRecord>) -> Option<Value> {
    let provenance = Provenance::asserted(vec![config_source(source?)], None, Vec::<String>::new());
    serde_json::to_value(provenance).ok()
}

/// The dealers file as a DAP `source`.
fn config_source(s: &SourceRecord) -> Source {
    Source {
        source_name: truncate(&s.source_name, 128).to_owned(),
        authority: s.authority.clone(),
        observed_at: timestamp(s.observed_at),
        source_record_id: None,
        content_digest: Some(s.content_digest.clone()),
        source_uri: None,
    }
}

fn config_source_value(s: &SourceRecord) -> Value {
    serde_json::to_value(config_source(s)).unwrap_or(Value::Null)
}

fn feed_source_value(record: &VehicleRecord) -> Value {
    let s = &record.source;
    let mut v = json!({
        "source_name": truncate(&s.source_name, 128),
        "authority": s.authority,
        "observed_at": timestamp(s.observed_at),
        "content_digest": s.content_digest,
    });
    if let Some(id) = s.source_record_id.as_deref().filter(|i| !i.is_empty()) {
        v["source_record_id"] = truncate(id, 256).into();
    }
    v
}

/// The identifier of a disclosure: `pricing.<vehicle_id>.v<snapshot>`,
/// or a digest form when that would exceed 128 characters.
pub fn disclosure_id(vehicle_id: &str, snapshot_version: i64) -> String {
    let id = format!("pricing.{vehicle_id}.v{snapshot_version}");
    if id.len() <= 128 {
        return id;
    }
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(id.as_bytes());
    format!("pricing.{}", &hex::encode(digest)[..40])
}

/// Build the disclosure.
#[allow(clippy::too_many_lines, reason = "one linear pass over the four parts")]
pub fn build(inputs: &Inputs<'_>) -> Disclosure {
    let record = inputs.record;
    let now = inputs.now;
    let price = record.advertised_price;
    let observed = record.source.observed_at;
    let inventory_until = observed
        .checked_add_signed(Duration::seconds(i64::from(inputs.inventory_sla_seconds)))
        .unwrap_or(observed);
    let record_current = !inputs.withdrawn && now <= inventory_until;

    // Required dealer charges.
    let charges = merged_charges(record, inputs.pricing);
    let charges_known = record.required_dealer_charges.is_some()
        || !inputs.pricing.required_dealer_charges.is_empty();
    let charges_value: Vec<Value> = charges
        .iter()
        .map(|charge| {
            let mut c = serde_json::to_value(charge).unwrap_or(Value::Null);
            if charge.provenance.is_none() {
                let from_vehicle = record
                    .required_dealer_charges
                    .as_deref()
                    .is_some_and(|own| own.iter().any(|o| o.charge_id == charge.charge_id));
                let p = if from_vehicle {
                    Some(json!({"sources": [feed_source_value(record)], "authority_status": "asserted"}))
                } else {
                    config_provenance(inputs.config_source)
                };
                if let Some(p) = p {
                    c["provenance"] = p;
                }
            }
            c
        })
        .collect();
    let includes_all = charges_known && charges.iter().all(|c| c.included_in_advertised_price);

    // Conditional adjustments: the feed's own, then published programs.
    let mut adjustments: Vec<Value> = Vec::new();
    let mut adjustment_expiries: Vec<DateTime<Utc>> = Vec::new();
    let mut seen_ids: Vec<String> = Vec::new();
    let feed_adjustments = record
        .conditional_adjustments
        .as_deref()
        .unwrap_or_default();
    for adj in feed_adjustments {
        let adj = &serde_json::to_value(adj).unwrap_or(Value::Null);
        if adjustment_applies(adj, inputs.jurisdiction, inputs.payment_mode, now) {
            let mut a = adj.clone();
            if a.get("provenance").is_none() {
                a["provenance"] =
                    json!({"sources": [feed_source_value(record)], "authority_status": "asserted"});
            }
            adjustment_expiries.extend(parse_time(adj, "valid_until"));
            seen_ids.extend(str_of(adj, "adjustment_id").map(str::to_owned));
            adjustments.push(a);
        }
    }
    let mut program_refs: Vec<Value> = Vec::new();
    if let Some(programs) = &inputs.programs {
        for p in &programs.adjustments {
            if !adjustment_applies(&p.adjustment, inputs.jurisdiction, inputs.payment_mode, now) {
                continue;
            }
            let id = str_of(&p.adjustment, "adjustment_id").unwrap_or_default();
            if seen_ids.iter().any(|s| s == id) {
                continue;
            }
            seen_ids.push(id.to_owned());
            adjustment_expiries.extend(p.valid_until);
            let mut r = json!({"program_id": p.program_id, "revision": p.revision});
            if let Some(h) = &p.rule_hash {
                r["rule_hash"] = h.clone().into();
            }
            program_refs.push(r);
            adjustments.push(p.adjustment.clone());
        }
    }
    let adjustments_known = record.conditional_adjustments.is_some() || inputs.programs.is_some();
    // A failed evaluation lists no program: the adjustments are then not
    // known, whatever the feed says, and earn no points.
    let evaluation_error = inputs
        .programs
        .as_ref()
        .and_then(|p| p.evaluation_error.as_deref());
    let adjustments_described = adjustments_known
        && evaluation_error.is_none()
        && adjustments.iter().all(|a| {
            a.get("criteria")
                .and_then(Value::as_array)
                .is_some_and(|c| !c.is_empty())
                && a.get("stacking")
                    .is_some_and(|s| str_of(s, "group").is_some())
                && (str_of(a, "amount_status") != Some("known") || a.get("amount").is_some())
        });

    let gov = government(inputs);

    // Completeness (docs/pricing.md section 6).
    let price_authoritative = record_current
        && price.amount_minor() > 0
        && matches!(
            record.source.authority.as_str(),
            "authoritative_dealer_system" | "dealer_asserted"
        );
    let gov_classified = gov.status != "unknown";
    let mut gaps = Vec::new();
    if !price_authoritative {
        gaps.push(Gap {
            component: "advertised_price_present_and_authoritative",
            points_lost: WEIGHT_COMPONENT,
            what: if inputs.withdrawn {
                "The vehicle was withdrawn from the latest inventory feed.".to_owned()
            } else if !record_current {
                "The inventory record is older than the rooftop's inventory SLA.".to_owned()
            } else {
                "The advertised price is missing, zero, or not from the dealer.".to_owned()
            },
            fix: "Publish a current feed with the vehicle's advertised price (import-inventory)."
                .to_owned(),
        });
    }
    if !charges_known {
        gaps.push(Gap {
            component: "required_dealer_charges_itemized",
            points_lost: WEIGHT_COMPONENT,
            what: "Required dealer charges are unknown: the feed does not list them and the rooftop has no defaults.".to_owned(),
            fix: "List required charges in the feed (an empty list if there are none) or set gateway_settings.pricing.required_dealer_charges in the dealers file.".to_owned(),
        });
    }
    if !adjustments_described {
        gaps.push(Gap {
            component: "conditional_adjustments_have_eligibility_and_stacking",
            points_lost: WEIGHT_COMPONENT,
            what: if let Some(e) = evaluation_error {
                e.to_owned()
            } else if adjustments_known {
                "A conditional adjustment lacks criteria, stacking or its amount.".to_owned()
            } else {
                "Conditional adjustments are unknown: the feed does not list them and no programs are published.".to_owned()
            },
            fix: "List conditional adjustments in the feed (an empty list if there are none) or import the organization's incentive programs.".to_owned(),
        });
    }
    if !gov_classified {
        gaps.push(Gap {
            component: "government_charges_classified",
            points_lost: WEIGHT_COMPONENT,
            what: "Government charges are unknown.".to_owned(),
            fix: "Configure gateway_settings.pricing.government_charge_estimates for the buyer's jurisdiction, or publish a government charges status in the feed.".to_owned(),
        });
    }
    let band_score = band_points(inputs.band);
    if band_score < WEIGHT_COMPONENT {
        gaps.push(Gap {
            component: "availability_band",
            points_lost: WEIGHT_COMPONENT - band_score,
            what: format!("The availability band is {}.", inputs.band.as_str()),
            fix: "Connect the dealer system as the availability source (availability_source: http) and verify availability; keep the feed within its SLA.".to_owned(),
        });
    }
    let score = [
        price_authoritative,
        charges_known,
        adjustments_described,
        gov_classified,
    ]
    .iter()
    .map(|ok| if *ok { WEIGHT_COMPONENT } else { 0 })
    .sum::<u32>()
        + band_score;

    // Uncertainty.
    let mut reasons: Vec<String> = Vec::new();
    // First, so that the 500-character bound never cuts it.
    if let Some(e) = evaluation_error {
        reasons.push(e.to_owned());
    }
    let evaluation_bounded = inputs
        .programs
        .as_ref()
        .and_then(|p| p.evaluation_bounded.as_deref());
    reasons.extend(evaluation_bounded.map(str::to_owned));
    if !charges_known {
        reasons.push("Required dealer charges are unknown.".to_owned());
    }
    if !adjustments_known {
        reasons.push("Conditional adjustments are unknown.".to_owned());
    }
    let unusable_programs = inputs
        .programs
        .as_ref()
        .map_or(&[][..], |p| &p.unusable[..]);
    reasons.extend(unusable_programs.iter().cloned());
    if gov.status != "not_applicable" {
        reasons.push(gov.reason.clone());
    }
    // A program that cannot be evaluated may hold an offer we do not list.
    let status = if !charges_known
        || evaluation_error.is_some()
        || evaluation_bounded.is_some()
        || !unusable_programs.is_empty()
        || gov.status == "unknown"
        || gov.status == "calculated" && gov.total.is_none()
    {
        "unknown"
    } else if gov.status == "estimated" {
        "estimated"
    } else {
        "exact"
    };
    let mut uncertainty = json!({"status": status});
    if status != "exact" {
        let mut reason = reasons.join(" ");
        if reason.is_empty() {
            reason = "Some price components are not exact.".to_owned();
        }
        uncertainty["reason"] = truncate(&reason, 500).into();
    }
    if !gov.assumptions.is_empty() {
        uncertainty["assumptions"] = gov
            .assumptions
            .iter()
            .take(32)
            .map(|a| Value::from(truncate(a, 500)))
            .collect::<Vec<_>>()
            .into();
    }

    // Provenance.
    let mut sources = vec![feed_source_value(record)];
    if let Some(s) = inputs.config_source {
        sources.push(config_source_value(s));
    }
    if let Some(p) = &inputs.programs {
        sources.extend(p.sources.iter().cloned());
    }
    let mut transformations = vec![
        format!(
            "required dealer charges: rooftop defaults merged with the vehicle's own by charge_id ({} listed)",
            charges_value.len()
        ),
        format!(
            "conditional adjustments narrowed by jurisdiction, payment mode and validity ({} applicable)",
            adjustments.len()
        ),
        format!("government charges classified {}", gov.status),
        format!("completeness score {score} by the published weights (docs/pricing.md section 6)"),
    ];
    for r in &program_refs {
        let mut t = format!(
            "program {} revision {}",
            str_of(r, "program_id").unwrap_or_default(),
            r["revision"]
        );
        if let Some(h) = str_of(r, "rule_hash") {
            t.push_str(&format!(" rule {h}"));
        }
        transformations.push(truncate(&t, 160).to_owned());
    }
    // DAP caps `provenance.transformations` at 32 items. Every program
    // revision must stay named: beyond the cap the full
    // list goes to `extensions["dealergateway.provenance"]` (DAP 13 allows
    // extension members) and the last item says the list is abbreviated.
    let full_transformations = (transformations.len() > MAX_TRANSFORMATIONS).then(|| {
        let total = transformations.len();
        let kept = MAX_TRANSFORMATIONS - 1;
        let all = transformations.clone();
        transformations.truncate(kept);
        transformations.push(format!(
            "abbreviated: {kept} of {total} transformations listed; all are in extensions.{PROVENANCE_EXTENSION}.transformations"
        ));
        all
    });
    let provenance = json!({
        "sources": sources,
        "authority_status": "asserted",
        "transformed_at": timestamp(now),
        "transformations": transformations,
    });

    // Freshness: oldest input, earliest expiry.
    let mut observed_at = observed;
    if let Some(p) = &inputs.programs {
        observed_at = observed_at.min(p.loaded_at);
    }
    if let Some(t) = inputs
        .programs
        .as_ref()
        .and_then(|p| p.evaluation_valid_until)
    {
        adjustment_expiries.push(t);
    }
    let valid_until = adjustment_expiries
        .iter()
        .copied()
        .fold(inventory_until, DateTime::min);
    let state = if inputs.withdrawn {
        "withdrawn"
    } else if now <= valid_until {
        "current"
    } else {
        "stale"
    };
    let freshness = json!({
        "observed_at": timestamp(observed_at),
        "valid_until": timestamp(valid_until),
        "state": state,
        "max_age_seconds": inputs.inventory_sla_seconds.min(MAX_AGE_LIMIT),
    });

    let text = text::disclosure_text(&text::TextInputs {
        price,
        includes_all,
        charges_known,
        charges: &charges,
        adjustments: &adjustments,
        gov_status: gov.status,
        gov_total: gov.total,
        gov_assumptions: &gov.assumptions,
        evaluation_error,
        evaluation_bounded,
    });

    let mut doc = Map::new();
    doc.insert(
        "disclosure_id".into(),
        disclosure_id(&record.vehicle_id, inputs.snapshot_version).into(),
    );
    doc.insert("vehicle_id".into(), record.vehicle_id.clone().into());
    doc.insert(
        "organization_id".into(),
        record.organization_id.clone().into(),
    );
    doc.insert("rooftop_id".into(), record.rooftop_id.clone().into());
    doc.insert(
        "advertised_price".into(),
        json!({
            "amount": price,
            "availability": "generally_available",
            "includes_required_dealer_charges": includes_all,
        }),
    );
    doc.insert("required_dealer_charges".into(), charges_value.into());
    doc.insert("conditional_adjustments".into(), adjustments.into());
    doc.insert("government_charges".into(), gov.value.clone());
    doc.insert(
        "disclosure_completeness".into(),
        json!({
            "score": score,
            "components": {
                "advertised_price_present_and_authoritative": price_authoritative,
                "required_dealer_charges_itemized": charges_known,
                "conditional_adjustments_have_eligibility_and_stacking": adjustments_described,
                "government_charges_classified": gov_classified,
                "availability_band": inputs.band.as_str(),
            }
        }),
    );
    doc.insert("disclosure_text".into(), text.into());
    doc.insert("uncertainty".into(), uncertainty);
    doc.insert("provenance".into(), provenance);
    doc.insert("freshness".into(), freshness);
    let mut extensions = Map::new();
    if let Some(e) = inputs.programs.as_ref().and_then(|p| p.evaluation.as_ref()) {
        extensions.insert("dealergateway.offers".into(), e.clone());
    }
    if let Some(all) = full_transformations {
        extensions.insert(PROVENANCE_EXTENSION.into(), json!({"transformations": all}));
    }
    if !extensions.is_empty() {
        doc.insert("extensions".into(), Value::Object(extensions));
    }
    Disclosure {
        document: Value::Object(doc),
        score,
        gaps,
    }
}
