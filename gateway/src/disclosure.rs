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
#[cfg(test)]
mod tests;
mod text;

pub use programs::{AnnotatedEvaluation, profile_jurisdiction, programs_input};

pub use text::{CLOSING as TEXT_CLOSING, MAX_TEXT, TEXT_DISCOUNT_LIMIT};

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use pricing::Money;
use serde_json::Value;

use crate::availability::Band;
use crate::dap::disclosure::{
    AdjustmentOrigin, AdvertisedPrice, CompletenessComponents, DisclosureCompleteness,
    DisclosureExtensions, GovernmentCharges, ListedAdjustment, ListedCharge, OffersExtension,
    PricingDisclosure, ProvenanceExtension, Uncertainty,
};
use crate::dap::{
    ConditionalAdjustment, CriterionValue, DealerCharge, Freshness, FreshnessState, Jurisdiction,
    MAX_AGE_LIMIT, MAX_TRANSFORMATIONS, Provenance, Scalar, Source, truncate,
};
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
    pub adjustment: ConditionalAdjustment,
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
    /// The provenance sources of the programs file(s).
    pub sources: Vec<Source>,
    /// When the programs were loaded.
    pub loaded_at: DateTime<Utc>,
    /// `extensions["dealergateway.offers"]`: the offer evaluation for the
    /// default profile.
    pub evaluation: Option<OffersOutcome>,
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

/// The offer evaluation a disclosure carries under
/// `extensions["dealergateway.offers"]`, typed until it is written: the
/// engine's evaluation is serialized straight to text, never through a
/// `serde_json::Value` tree (docs/benchmarks.md "The first disclosure
/// without a tree").
#[derive(Debug, Clone)]
pub enum OffersOutcome {
    /// The evaluation for the default profile, with the gateway's members.
    Evaluated(Arc<AnnotatedEvaluation>),
    /// `{"error": sentence}`: it could not complete ([`evaluation_failure`]).
    Failed(String),
    /// Held by the evaluation cache, which writes its text into the served
    /// document; an empty object stands in its place until then (the
    /// extension bag admits any object under a well-formed key, so the
    /// document is validated with the same members).
    Held,
}

impl serde::Serialize for OffersOutcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            OffersOutcome::Evaluated(evaluation) => evaluation.serialize(serializer),
            OffersOutcome::Failed(error) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("error", error)?;
                map.end()
            }
            OffersOutcome::Held => serializer.serialize_map(Some(0))?.end(),
        }
    }
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
    pub programs: Option<&'a ProgramsInput>,
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

/// A built disclosure: the typed wire document plus what the preview
/// shows.
#[derive(Debug, Clone)]
pub struct Disclosure {
    pub document: PricingDisclosure,
    pub score: u32,
    pub gaps: Vec<Gap>,
}

fn str_of<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
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

/// Does an adjustment's (or estimate's) jurisdiction rule, given by its
/// country and subdivision, cover the requested `wanted`? Country must be
/// equal; a subdivision on the rule must equal the requested one (a
/// request without a subdivision cannot rule it out, so it is kept for
/// adjustments and not matched for estimates, see `strict`).
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
    adj: &ConditionalAdjustment,
    jurisdiction: Option<&Value>,
    payment_mode: Option<&str>,
    now: DateTime<Utc>,
) -> bool {
    let time = |t: &Option<String>| t.as_deref().and_then(rfc3339);
    if time(&adj.valid_until).is_some_and(|t| t < now)
        || time(&adj.valid_from).is_some_and(|t| t > now)
    {
        return false;
    }
    let covered = |j: &Jurisdiction, wanted: &Value| {
        covers(Some(&j.country), j.subdivision.as_deref(), wanted, false)
    };
    if let (Some(wanted), Some(list)) = (jurisdiction, adj.jurisdictions.as_deref())
        && !list.is_empty()
        && !list.iter().any(|j| covered(j, wanted))
    {
        return false;
    }
    if let Some(mode) = payment_mode.filter(|m| *m != "unknown") {
        let any_mode = adj.criteria_mode.as_deref() == Some("any");
        let tests: Vec<bool> = adj
            .criteria
            .iter()
            .filter(|c| c.criterion == "payment_mode")
            .map(|c| match &c.value {
                CriterionValue::Scalar(Scalar::Text(s)) => s == mode,
                CriterionValue::List(a) => {
                    a.iter().any(|v| matches!(v, Scalar::Text(s) if s == mode))
                }
                CriterionValue::Scalar(_) => true,
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
    value: GovernmentCharges,
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
            let value = GovernmentCharges {
                status: "estimated".to_owned(),
                jurisdiction: Some(estimate.jurisdiction.clone()),
                lines: Some(estimate.lines.clone()),
                total: Some(total),
                assumptions: Some(assumptions.clone()),
                provenance: config_provenance(inputs.config_source),
            };
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
                value: GovernmentCharges {
                    assumptions: Some(vec![basis.clone()]),
                    ..government_status(status)
                },
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
                value: government_status("unknown"),
                status: "unknown",
                total: None,
                reason,
                assumptions: Vec::new(),
            }
        }
    }
}

/// Government charges with only a status.
fn government_status(status: &str) -> GovernmentCharges {
    GovernmentCharges {
        status: status.to_owned(),
        jurisdiction: None,
        lines: None,
        total: None,
        assumptions: None,
        provenance: None,
    }
}

fn config_provenance(source: Option<&SourceRecord>) -> Option<Provenance> {
    Some(Provenance::asserted(
        vec![config_source(source?)],
        None,
        Vec::<String>::new(),
    ))
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

/// The inventory feed as a DAP `source` (written in the feed's member
/// order, `dap::disclosure`).
fn feed_source(record: &VehicleRecord) -> Source {
    let s = &record.source;
    Source {
        source_name: truncate(&s.source_name, 128).to_owned(),
        authority: s.authority.clone(),
        observed_at: timestamp(s.observed_at),
        source_record_id: s
            .source_record_id
            .as_deref()
            .filter(|i| !i.is_empty())
            .map(|id| truncate(id, 256).to_owned()),
        content_digest: Some(s.content_digest.clone()),
        source_uri: None,
    }
}

/// The provenance the disclosure gives a feed record published without
/// one: the feed, asserted.
fn feed_provenance(record: &VehicleRecord) -> Provenance {
    Provenance {
        sources: vec![feed_source(record)],
        authority_status: "asserted".to_owned(),
        transformed_at: None,
        transformations: Vec::new(),
    }
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
    let listed_charges: Vec<ListedCharge> = charges
        .iter()
        .map(|&charge| {
            let mut listed = ListedCharge {
                charge: charge.clone(),
                feed_provenance: false,
            };
            if charge.provenance.is_none() {
                let from_vehicle = record
                    .required_dealer_charges
                    .as_deref()
                    .is_some_and(|own| own.iter().any(|o| o.charge_id == charge.charge_id));
                if from_vehicle {
                    listed.charge.provenance = Some(feed_provenance(record));
                    listed.feed_provenance = true;
                } else {
                    listed.charge.provenance = config_provenance(inputs.config_source);
                }
            }
            listed
        })
        .collect();
    let includes_all = charges_known && charges.iter().all(|c| c.included_in_advertised_price);

    // Conditional adjustments: the feed's own, then published programs.
    let mut adjustments: Vec<ListedAdjustment> = Vec::new();
    let mut adjustment_expiries: Vec<DateTime<Utc>> = Vec::new();
    let mut seen_ids: Vec<&str> = Vec::new();
    let feed_adjustments = record
        .conditional_adjustments
        .as_deref()
        .unwrap_or_default();
    for adj in feed_adjustments {
        if adjustment_applies(adj, inputs.jurisdiction, inputs.payment_mode, now) {
            let mut listed = ListedAdjustment {
                adjustment: adj.clone(),
                origin: AdjustmentOrigin::Feed,
            };
            if adj.provenance.is_none() {
                listed.adjustment.provenance = Some(feed_provenance(record));
                listed.origin = AdjustmentOrigin::FeedAttributed;
            }
            adjustment_expiries.extend(adj.valid_until.as_deref().and_then(rfc3339));
            seen_ids.push(&adj.adjustment_id);
            adjustments.push(listed);
        }
    }
    // The programs listed, for provenance: (id, revision, rule hash).
    let mut program_refs: Vec<(&str, u32, Option<&str>)> = Vec::new();
    if let Some(programs) = &inputs.programs {
        for p in &programs.adjustments {
            if !adjustment_applies(&p.adjustment, inputs.jurisdiction, inputs.payment_mode, now) {
                continue;
            }
            let id = p.adjustment.adjustment_id.as_str();
            if seen_ids.contains(&id) {
                continue;
            }
            seen_ids.push(id);
            adjustment_expiries.extend(p.valid_until);
            program_refs.push((&p.program_id, p.revision, p.rule_hash.as_deref()));
            adjustments.push(ListedAdjustment {
                adjustment: p.adjustment.clone(),
                origin: AdjustmentOrigin::Program,
            });
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
        && adjustments.iter().all(|listed| {
            let a = &listed.adjustment;
            // A typed adjustment always has its stacking group.
            !a.criteria.is_empty() && (a.amount_status != "known" || a.amount.is_some())
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
    let uncertainty = Uncertainty {
        status: status.to_owned(),
        reason: (status != "exact").then(|| {
            let mut reason = reasons.join(" ");
            if reason.is_empty() {
                reason = "Some price components are not exact.".to_owned();
            }
            truncate(&reason, 500).to_owned()
        }),
        assumptions: gov
            .assumptions
            .iter()
            .take(32)
            .map(|a| truncate(a, 500).to_owned())
            .collect(),
    };

    // Provenance.
    let mut sources = vec![feed_source(record)];
    if let Some(s) = inputs.config_source {
        sources.push(config_source(s));
    }
    if let Some(p) = &inputs.programs {
        sources.extend(p.sources.iter().cloned());
    }
    let mut transformations = vec![
        format!(
            "required dealer charges: rooftop defaults merged with the vehicle's own by charge_id ({} listed)",
            listed_charges.len()
        ),
        format!(
            "conditional adjustments narrowed by jurisdiction, payment mode and validity ({} applicable)",
            adjustments.len()
        ),
        format!("government charges classified {}", gov.status),
        format!("completeness score {score} by the published weights (docs/pricing.md section 6)"),
    ];
    for (program_id, revision, rule_hash) in &program_refs {
        let mut t = format!("program {program_id} revision {revision}");
        if let Some(h) = rule_hash {
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
    let provenance = Provenance {
        sources,
        authority_status: "asserted".to_owned(),
        transformed_at: Some(timestamp(now)),
        transformations,
    };

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
        FreshnessState::Withdrawn
    } else if now <= valid_until {
        FreshnessState::Current
    } else {
        FreshnessState::Stale
    };
    let freshness = Freshness {
        observed_at: timestamp(observed_at),
        state,
        valid_until: Some(timestamp(valid_until)),
        max_age_seconds: Some(inputs.inventory_sla_seconds.min(MAX_AGE_LIMIT)),
    };
    let listed: Vec<&ConditionalAdjustment> = adjustments.iter().map(|l| &l.adjustment).collect();

    let text = text::disclosure_text(&text::TextInputs {
        price,
        includes_all,
        charges_known,
        charges: &charges,
        adjustments: &listed,
        gov_status: gov.status,
        gov_total: gov.total,
        gov_assumptions: &gov.assumptions,
        evaluation_error,
        evaluation_bounded,
    });

    let mut extensions = DisclosureExtensions {
        offers: inputs
            .programs
            .as_ref()
            .and_then(|p| p.evaluation.as_ref())
            .and_then(|outcome| match outcome {
                OffersOutcome::Held => {
                    Some(OffersExtension::Tree(Value::Object(Default::default())))
                }
                written => serde_json::value::to_raw_value(written)
                    .ok()
                    .map(|text| OffersExtension::Text(Arc::from(text))),
            }),
        provenance: None,
        // Written by the tool, which reads the price history (async).
        lint: None,
    };
    if let Some(all) = full_transformations {
        extensions.provenance = Some(ProvenanceExtension {
            transformations: all,
        });
    }
    let document = PricingDisclosure {
        disclosure_id: disclosure_id(&record.vehicle_id, inputs.snapshot_version),
        vehicle_id: record.vehicle_id.clone(),
        organization_id: record.organization_id.clone(),
        rooftop_id: record.rooftop_id.clone(),
        advertised_price: AdvertisedPrice::generally_available(price, includes_all),
        required_dealer_charges: listed_charges,
        conditional_adjustments: adjustments,
        government_charges: gov.value,
        disclosure_completeness: DisclosureCompleteness {
            score,
            components: CompletenessComponents {
                advertised_price_present_and_authoritative: price_authoritative,
                required_dealer_charges_itemized: charges_known,
                conditional_adjustments_have_eligibility_and_stacking: adjustments_described,
                government_charges_classified: gov_classified,
                availability_band: inputs.band.as_str().to_owned(),
            },
        },
        disclosure_text: text,
        uncertainty,
        provenance,
        freshness,
        extensions: (!extensions.is_empty()).then_some(extensions),
    };
    Disclosure {
        document,
        score,
        gaps,
    }
}
