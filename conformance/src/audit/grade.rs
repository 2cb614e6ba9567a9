//! Grading: each answer against what the gateway's own records support.
//!
//! A check looks at three things: the claims, the evidence the agent read
//! (the exact tool results), and the grader's own independent reads of the
//! same records through other tools (memoized, never counted against a
//! budget). An answer is only as good as the record it rests on: a claim
//! whose record contradicts itself or another tool fails, whatever the
//! agent made of it. The rules are listed in docs/conformance.md
//! "Shopper's audit".

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Value, json};

use super::agent::{Env, call_patiently};
use super::answer::{Answer, Citation, Fact, RiskFlag, VehicleFact};
use super::wire::{
    self, AvailabilityResult, Band, Dealer, Disclosure, Provenance, SearchPage, Vehicle,
};
use crate::client::{ClientError, Exchange};
use crate::context::{DEALER_GET, DISCLOSURE, GET_VEHICLE, SEARCH};

/// The six dimensions of DAP's public answer-audit rubric, with its weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    InventoryAccuracy,
    PriceAccuracy,
    FeeAndConditionDisclosure,
    PhantomAvailability,
    CitationQuality,
    RiskFlags,
}

impl Dimension {
    pub const ALL: [Dimension; 6] = [
        Self::InventoryAccuracy,
        Self::PriceAccuracy,
        Self::FeeAndConditionDisclosure,
        Self::PhantomAvailability,
        Self::CitationQuality,
        Self::RiskFlags,
    ];

    /// The rubric's weight (the six sum to 100).
    pub fn weight(self) -> u64 {
        match self {
            Self::InventoryAccuracy | Self::PriceAccuracy => 25,
            Self::FeeAndConditionDisclosure => 20,
            Self::PhantomAvailability => 15,
            Self::CitationQuality => 10,
            Self::RiskFlags => 5,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::InventoryAccuracy => "inventory accuracy",
            Self::PriceAccuracy => "price accuracy",
            Self::FeeAndConditionDisclosure => "fee and condition disclosure",
            Self::PhantomAvailability => "phantom availability",
            Self::CitationQuality => "citation quality",
            Self::RiskFlags => "risk flags",
        }
    }

    /// The short code of the tables.
    pub fn code(self) -> &'static str {
        match self {
            Self::InventoryAccuracy => "INV",
            Self::PriceAccuracy => "PRC",
            Self::FeeAndConditionDisclosure => "FEE",
            Self::PhantomAvailability => "AVL",
            Self::CitationQuality => "CIT",
            Self::RiskFlags => "RSK",
        }
    }
}

/// How one rule came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Passed,
    Failed,
    /// The rule has nothing to judge here (and is not counted).
    NotApplicable,
}

/// The rules whose failure the public rubric calls critical: directing a
/// shopper to a wrong or invented unit, a materially wrong price, or
/// fabricated current availability. A critical failure costs the question
/// everything it had in that dimension.
pub const CRITICAL_RULES: [&str; 9] = [
    "INV-LISTED-EXISTS",
    "PRC-LISTED-PRICE",
    "INV-VIN-IDENTITY",
    "INV-NO-FABRICATED-UNIT",
    "PRC-PRICE-MATCHES",
    "PRC-SUM-CORRECT",
    "PRC-OUT-THE-DOOR",
    "PRC-NO-UNKNOWN-TOTALLED",
    "AVL-AVAILABLE-NOW-SUPPORTED",
];

/// One graded rule of one answer.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub dimension: Dimension,
    /// Stable rule id, e.g. `AVL-AVAILABLE-NOW`.
    pub rule: &'static str,
    pub verdict: Verdict,
    /// Whether the rule is one of [`CRITICAL_RULES`].
    pub critical: bool,
    pub detail: String,
}

impl Check {
    /// Whether this is a failed critical rule ([`CRITICAL_RULES`]).
    pub fn critical_failure(&self) -> bool {
        self.critical && self.verdict == Verdict::Failed
    }

    /// Passed when `problems` is empty, else failed with them.
    pub fn judge(
        dimension: Dimension,
        rule: &'static str,
        problems: Vec<String>,
        ok: impl Into<String>,
    ) -> Self {
        if problems.is_empty() {
            Self {
                dimension,
                rule,
                verdict: Verdict::Passed,
                critical: CRITICAL_RULES.contains(&rule),
                detail: ok.into(),
            }
        } else {
            let shown: Vec<&str> = problems.iter().take(4).map(String::as_str).collect();
            let more = problems.len().saturating_sub(shown.len());
            let mut detail = shown.join("; ");
            if more > 0 {
                detail.push_str(&format!("; and {more} more"));
            }
            Self {
                dimension,
                rule,
                verdict: Verdict::Failed,
                critical: CRITICAL_RULES.contains(&rule),
                detail,
            }
        }
    }

    pub fn na(dimension: Dimension, rule: &'static str, why: impl Into<String>) -> Self {
        Self {
            dimension,
            rule,
            verdict: Verdict::NotApplicable,
            critical: CRITICAL_RULES.contains(&rule),
            detail: why.into(),
        }
    }
}

/// The outcome of an independent read.
pub enum Lookup<T> {
    Found(T),
    /// `dealeragent.resource.not_found`.
    NotFound,
    /// Another error or a shape the grader cannot read (the code).
    Unreadable(String),
}

/// The grader's independent reads, memoized per (tool, arguments).
pub struct Grader<'e> {
    pub env: &'e Env,
    cache: BTreeMap<String, Exchange>,
}

impl<'e> Grader<'e> {
    pub fn new(env: &'e Env) -> Self {
        Self {
            env,
            cache: BTreeMap::new(),
        }
    }

    /// `tool` with `args`, asking for the tool's fullest answer when it
    /// offers a level of detail.
    async fn read(&mut self, tool: &str, mut args: Value) -> Result<Exchange, ClientError> {
        if let Some((name, value)) = self.env.full_detail(tool) {
            args[name] = value;
        }
        let key = format!("{tool} {args}");
        if let Some(ex) = self.cache.get(&key) {
            return Ok(ex.clone());
        }
        let answers = call_patiently(&self.env.client, &self.env.caller, tool, &args).await?;
        let Some(ex) = answers.into_iter().last() else {
            return Err(ClientError::Transport {
                url: self.env.client.url.clone(),
                message: "no answer".into(),
            });
        };
        self.cache.insert(key, ex.clone());
        Ok(ex)
    }

    async fn lookup<T: serde::de::DeserializeOwned>(
        &mut self,
        tool: &str,
        args: Value,
    ) -> Result<Lookup<T>, ClientError> {
        let ex = self.read(tool, args).await?;
        if let Some(ok) = ex.tool_ok() {
            return Ok(match serde_json::from_value(ok.clone()) {
                Ok(v) => Lookup::Found(v),
                Err(_) => Lookup::Unreadable("an answer that is not the DAP shape".into()),
            });
        }
        Ok(match ex.dap_code() {
            Some("dealeragent.resource.not_found") => Lookup::NotFound,
            Some(code) => Lookup::Unreadable(code.to_owned()),
            None => Lookup::Unreadable(format!("HTTP {}", ex.status)),
        })
    }

    /// `get_vehicle` by `selector` at `rooftop_id`.
    pub async fn vehicle(
        &mut self,
        rooftop_id: &str,
        selector: &str,
        value: &str,
    ) -> Result<Lookup<Vehicle>, ClientError> {
        let args = json!({"organization_id": self.env.organization_id,
            "rooftop_id": rooftop_id, selector: value});
        self.lookup(GET_VEHICLE, args).await
    }

    /// `get_disclosure` of a vehicle (its raw value too, for the checks
    /// that look for members DAP forbids).
    pub async fn disclosure(
        &mut self,
        rooftop_id: &str,
        vehicle_id: &str,
        jurisdiction: Option<&Value>,
    ) -> Result<Option<(Disclosure, Value)>, ClientError> {
        let mut args = json!({"organization_id": self.env.organization_id,
            "rooftop_id": rooftop_id, "vehicle_id": vehicle_id});
        if let Some(j) = jurisdiction {
            args["jurisdiction"] = j.clone();
        }
        let ex = self.read(DISCLOSURE, args).await?;
        Ok(ex.tool_ok().and_then(|raw| {
            serde_json::from_value(raw.clone())
                .ok()
                .map(|d| (d, raw.clone()))
        }))
    }

    /// A search of the organization.
    pub async fn search(
        &mut self,
        filters: Value,
        sort: Option<Value>,
        limit: u64,
    ) -> Result<Option<SearchPage>, ClientError> {
        let mut args = json!({"organization_id": self.env.organization_id,
            "page": {"limit": limit}});
        if filters.as_object().is_some_and(|f| !f.is_empty()) {
            args["filters"] = filters;
        }
        if let Some(sort) = sort {
            args["sort"] = sort;
        }
        Ok(match self.lookup(SEARCH, args).await? {
            Lookup::Found(p) => Some(p),
            Lookup::NotFound | Lookup::Unreadable(_) => None,
        })
    }

    /// The used-vehicle evidence of a vehicle (DAP's optional profile).
    pub async fn used_details(
        &mut self,
        rooftop_id: &str,
        vehicle_id: &str,
    ) -> Result<Lookup<wire::UsedDetails>, ClientError> {
        let args = json!({"organization_id": self.env.organization_id,
            "rooftop_id": rooftop_id, "vehicle_id": vehicle_id});
        self.lookup(super::agent::USED_DETAILS, args).await
    }

    /// `dealer.get` of the organization.
    pub async fn dealer(&mut self) -> Result<Option<Dealer>, ClientError> {
        let args = json!({"organization_id": self.env.organization_id});
        Ok(match self.lookup(DEALER_GET, args).await? {
            Lookup::Found(d) => Some(d),
            Lookup::NotFound | Lookup::Unreadable(_) => None,
        })
    }
}

/// The record a citation points at inside its read, when the read
/// succeeded and the pointer resolves.
pub fn cited_record<'a>(answer: &'a Answer, c: &Citation) -> Option<&'a Value> {
    answer.reads.get(c.read)?.ok.as_ref()?.pointer(&c.pointer)
}

/// The citations of an answer.
fn citations(answer: &Answer) -> impl Iterator<Item = &Citation> {
    answer.claims.iter().filter_map(|c| c.citation.as_ref())
}

/// The rules every answer is held to: each claim cites a source and an
/// as-of time, the citation is what the cited record says, the as-of time
/// is within the record's freshness (or the answer says it is not), the
/// reads fit the budget, and a record that contradicts itself is flagged.
pub fn common_checks(answer: &Answer, budget_tokens: usize) -> Vec<Check> {
    use Dimension::{CitationQuality as Cit, RiskFlags as Rsk};
    let mut out = Vec::new();
    let uncited: Vec<String> = answer
        .claims
        .iter()
        .filter(|c| {
            c.citation.as_ref().is_none_or(|x| {
                x.source_name.is_empty() || x.authority.is_empty() || x.observed_at.is_empty()
            })
        })
        .map(|c| {
            format!(
                "a {} claim cites no source and as-of time",
                fact_kind(&c.fact)
            )
        })
        .collect();
    if answer.claims.is_empty() {
        out.push(Check::na(Cit, "CIT-CITED", "the answer makes no claim"));
    } else {
        out.push(Check::judge(
            Cit,
            "CIT-CITED",
            uncited,
            format!(
                "all {} claims cite a source, its authority and an as-of time",
                answer.claims.len()
            ),
        ));
    }
    let mut mismatched = Vec::new();
    let mut stale_unflagged = Vec::new();
    let mut cited = 0usize;
    for c in citations(answer) {
        cited += 1;
        let Some(record) = cited_record(answer, c) else {
            mismatched.push(format!(
                "a citation points at no record of its {} read",
                c.tool
            ));
            continue;
        };
        let provenance: Option<Provenance> = record
            .get("provenance")
            .and_then(|p| serde_json::from_value(p.clone()).ok());
        let source_there = provenance.as_ref().is_some_and(|p| {
            p.sources.iter().any(|s| {
                s.source_name == c.source_name
                    && s.authority == c.authority
                    && s.observed_at == c.observed_at
            })
        });
        if !source_there {
            mismatched.push(format!(
                "{}: the cited source {} is not in the record's provenance",
                c.tool, c.source_name
            ));
        }
        let freshness: Option<wire::Freshness> = record
            .get("freshness")
            .and_then(|f| serde_json::from_value(f.clone()).ok());
        let Some(freshness) = freshness else {
            mismatched.push(format!("{}: the cited record states no freshness", c.tool));
            continue;
        };
        if freshness.state != c.freshness_state || freshness.valid_until != c.valid_until {
            mismatched.push(format!(
                "{}: the citation's freshness differs from the record's",
                c.tool
            ));
        }
        let at = answer.reads[c.read].received_at;
        if !freshness.current_at(at) && !answer.flagged(RiskFlag::StaleRecord) {
            stale_unflagged.push(format!(
                "{}: the record is {} (valid until {}) and the answer does not say so",
                c.tool,
                freshness.state,
                freshness.valid_until.as_deref().unwrap_or("unstated")
            ));
        }
    }
    if cited == 0 {
        out.push(Check::na(Cit, "CIT-MATCHES-RECORD", "nothing is cited"));
        out.push(Check::na(Cit, "CIT-AS-OF-FRESH", "nothing is cited"));
    } else {
        out.push(Check::judge(
            Cit,
            "CIT-MATCHES-RECORD",
            mismatched,
            format!("{cited} citations name a source and freshness the cited record states"),
        ));
        out.push(Check::judge(
            Cit,
            "CIT-AS-OF-FRESH",
            stale_unflagged,
            "every as-of time is within its record's freshness, or the answer labels it stale",
        ));
    }
    let used = super::answer::tokens(answer.bytes_read());
    out.push(Check::judge(
        Cit,
        "CIT-WITHIN-BUDGET",
        if used > budget_tokens {
            vec![format!(
                "the agent read about {used} tokens for a budget of {budget_tokens}"
            )]
        } else {
            Vec::new()
        },
        format!("about {used} tokens read, budget {budget_tokens}"),
    ));
    let contradictions: Vec<String> = answer
        .reads
        .iter()
        .filter_map(|r| r.ok.as_ref().map(|ok| (r, wire::unknown_with_amount(ok))))
        .filter(|(_, found)| !found.is_empty())
        .map(|(r, found)| {
            format!(
                "{} gives an amount to an unknown at {}",
                r.tool,
                found.join(", ")
            )
        })
        .collect();
    if contradictions.is_empty() {
        out.push(Check::na(
            Rsk,
            "RSK-INCONSISTENT-FLAGGED",
            "no record read contradicts itself",
        ));
    } else if answer.flagged(RiskFlag::InconsistentRecord) {
        out.push(Check::judge(
            Rsk,
            "RSK-INCONSISTENT-FLAGGED",
            Vec::new(),
            format!("flagged for review: {}", contradictions.join("; ")),
        ));
    } else {
        out.push(Check::judge(
            Rsk,
            "RSK-INCONSISTENT-FLAGGED",
            contradictions,
            "",
        ));
    }
    out
}

/// A short name of a fact's kind, for messages.
pub fn fact_kind(f: &Fact) -> &'static str {
    match f {
        Fact::Listed { .. } => "listed-vehicle",
        Fact::NotListed { .. } => "not-listed",
        Fact::AdvertisedPrice { .. } => "advertised-price",
        Fact::RequiredCharge { .. } => "required-charge",
        Fact::DocumentationFee { .. } => "documentation-fee",
        Fact::PriceWithRequiredCharges { .. } => "price-with-required-charges",
        Fact::OutTheDoor { .. } => "out-the-door",
        Fact::GovernmentCharges { .. } => "government-charges",
        Fact::ConditionalOffer { .. } => "conditional-offer",
        Fact::BestStack { .. } => "best-stack",
        Fact::GenerallyAvailablePrice { .. } => "generally-available-price",
        Fact::AvailableNow { .. } => "available-now",
        Fact::AvailabilityStatus { .. } => "availability-status",
        Fact::LastVerified { .. } => "last-verified",
        Fact::PriceSource { .. } => "price-source",
        Fact::History { .. } => "history",
        Fact::Rooftop { .. } => "rooftop",
    }
}

/// Where a stated vehicle's identity differs from the record of it:
/// rooftop, year, make, model, condition, VIN, odometer.
pub fn identity_differences(stated: &VehicleFact, record: &Vehicle) -> Vec<String> {
    let mut out = Vec::new();
    let id = &stated.vehicle_id;
    if stated.rooftop_id != record.rooftop_id {
        out.push(format!("{id}: stated at another rooftop than its record"));
    }
    if (stated.year, &stated.make, &stated.model, &stated.condition)
        != (record.year, &record.make, &record.model, &record.condition)
    {
        out.push(format!(
            "{id}: stated as another vehicle than {}",
            record.title()
        ));
    }
    if stated.vin != record.vin {
        out.push(format!("{id}: stated with another VIN than its record"));
    }
    if stated.odometer != record.odometer {
        out.push(format!(
            "{id}: stated with another odometer than its record"
        ));
    }
    out
}

/// Where a stated vehicle's advertised price differs from the record's.
pub fn price_difference(stated: &VehicleFact, record: &Vehicle) -> Option<String> {
    (stated.advertised_price != record.advertised_price.amount).then(|| {
        format!(
            "{}: stated at {} where get_vehicle says {}",
            stated.vehicle_id,
            stated.advertised_price.display(),
            record.advertised_price.amount.display()
        )
    })
}

/// Why a record may not be presented as a unit on offer: sold, unavailable
/// or withdrawn from the dealer's feed.
pub fn off_sale(record: &Vehicle) -> Option<String> {
    if record.freshness.state == "withdrawn" {
        return Some(format!(
            "{} is withdrawn from the dealer's feed",
            record.vehicle_id
        ));
    }
    matches!(record.availability.status.as_str(), "sold" | "unavailable").then(|| {
        format!(
            "{} is {} according to its record",
            record.vehicle_id, record.availability.status
        )
    })
}

/// DAP authorities that are not the dealer's own assertion (DAP common
/// `source.authority`); "available now" needs a dealer system.
const AUTHORITATIVE_SOURCE: &str = "authoritative_dealer_system";

/// Everything that must hold for "available now" to rest on a
/// `verify_availability` result received at `at` (DAP 0.1 section 7 and
/// DAP-CORE-036): status `available`; DAP band `verified_current` computed
/// from authority and age; freshness current; a dealer-system source in the
/// provenance observed within the band's 120 s; and, where the gateway adds
/// its own band label in the result's `_meta`, that label agreeing.
pub fn available_now_problems(
    result: &AvailabilityResult,
    meta: Option<&Value>,
    at: DateTime<Utc>,
) -> Vec<String> {
    let mut out = Vec::new();
    let a = &result.availability;
    let id = &result.vehicle_id;
    if a.status != "available" {
        out.push(format!("{id}: the check says {}, not available", a.status));
    }
    let band = a.band_at(at);
    if band != Band::VerifiedCurrent {
        out.push(format!(
            "{id}: its availability ({} observed at {}) is in band {}, not verified_current",
            a.authority_status,
            a.observed_at,
            band.as_str()
        ));
    }
    if !result.freshness.current_at(at) {
        out.push(format!(
            "{id}: the check's freshness is {} (valid until {})",
            result.freshness.state,
            result
                .freshness
                .valid_until
                .as_deref()
                .unwrap_or("unstated")
        ));
    }
    let supported = result.provenance.sources.iter().any(|s| {
        s.authority == AUTHORITATIVE_SOURCE
            && wire::time(&s.observed_at)
                .is_some_and(|t| (at - t).num_seconds() <= wire::VERIFIED_CURRENT_MAX_AGE_S)
    });
    if !supported {
        let named: Vec<String> = result
            .provenance
            .sources
            .iter()
            .map(|s| {
                format!(
                    "{} ({}, observed {})",
                    s.source_name, s.authority, s.observed_at
                )
            })
            .collect();
        out.push(format!(
            "{id}: no dealer-system source observed within {} s supports it (sources: {})",
            wire::VERIFIED_CURRENT_MAX_AGE_S,
            named.join(", ")
        ));
    }
    let labelled = meta
        .and_then(|m| m.get("dealergateway.availability"))
        .and_then(|x| x.get("band"))
        .and_then(Value::as_str);
    if let Some(label) = labelled
        && label != Band::VerifiedCurrent.as_str()
    {
        out.push(format!("{id}: the gateway itself labels the check {label}"));
    }
    out
}

/// What in a disclosure contradicts its own itemization (DAP 0.1 pricing):
/// an advertised price said to include every required charge while one is
/// excluded (or the reverse), an amount its text states that no itemized
/// amount or sum accounts for (a charge left out of the list), and a
/// required charge in another currency than the price.
pub fn disclosure_fee_problems(d: &Disclosure) -> Vec<String> {
    let mut out = Vec::new();
    let id = &d.vehicle_id;
    let price = &d.advertised_price;
    let excluded = d.excluded_charges().count();
    if price.includes_required_dealer_charges && excluded > 0 {
        out.push(format!(
            "{id}: the advertised price is said to include every required charge, yet {excluded} are not included"
        ));
    }
    if !price.includes_required_dealer_charges
        && excluded == 0
        && !d.required_dealer_charges.is_empty()
    {
        out.push(format!(
            "{id}: every required charge is included, yet the advertised price is said not to include them"
        ));
    }
    if d.price_with_required_charges().is_none() {
        out.push(format!(
            "{id}: a required charge is in another currency than the price"
        ));
    }
    if let Some(text) = &d.disclosure_text {
        let currency = &price.amount.currency;
        let known = accounted_amounts(d);
        let unaccounted: Vec<String> = wire::text_amounts(text, currency)
            .into_iter()
            .filter(|a| !known.contains(a))
            .map(|a| {
                wire::Money {
                    amount_minor: a,
                    currency: currency.clone(),
                }
                .display()
            })
            .collect();
        if !unaccounted.is_empty() {
            out.push(format!(
                "{id}: the disclosure text states {} that no itemized charge, offer or sum accounts for (a charge left out of the list?)",
                unaccounted.join(", ")
            ));
        }
    }
    out
}

/// The amounts a disclosure itemizes, and the sums a text may state: the
/// advertised price, each charge, offer and government line, the government
/// total, the excluded charges alone and with the price, and that with the
/// government total.
fn accounted_amounts(d: &Disclosure) -> Vec<i64> {
    let mut out = vec![d.advertised_price.amount.amount_minor];
    out.extend(
        d.required_dealer_charges
            .iter()
            .map(|c| c.amount.amount_minor),
    );
    out.extend(
        d.conditional_adjustments
            .iter()
            .filter_map(|a| a.amount.as_ref().map(|m| m.amount_minor)),
    );
    let gov_total = d.government_charges.total.as_ref().map(|m| m.amount_minor);
    out.extend(gov_total);
    out.extend(d.government_charges.lines.iter().filter_map(|l| {
        l.get("amount")
            .and_then(|a| a.get("amount_minor"))
            .and_then(Value::as_i64)
    }));
    let excluded: i64 = d
        .excluded_charges()
        .map(|c| c.amount.amount_minor)
        .fold(0i64, i64::saturating_add);
    out.push(excluded);
    if let Some(with) = d.price_with_required_charges() {
        out.push(with.amount_minor);
        out.extend(gov_total.map(|g| with.amount_minor.saturating_add(g)));
    }
    out
}

/// Amounts a disclosure gives to things it calls unknown (DAP: unknown is
/// not zero, and an unknown is never totalled).
pub fn unknown_totalled(raw: &Value) -> Vec<String> {
    wire::unknown_with_amount(raw)
        .into_iter()
        .map(|at| format!("an amount is given to an unknown at {at}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn disclosure(text: &str, charges: Value, includes: bool) -> Disclosure {
        serde_json::from_value(json!({
            "vehicle_id": "veh.1", "organization_id": "org.a", "rooftop_id": "roof.a",
            "advertised_price": {"amount": {"amount_minor": 610_000, "currency": "USD"},
                "availability": "generally_available", "includes_required_dealer_charges": includes},
            "required_dealer_charges": charges,
            "conditional_adjustments": [],
            "government_charges": {"status": "unknown"},
            "provenance": {"sources": [], "authority_status": "asserted"},
            "freshness": {"observed_at": "2026-12-01T00:00:00Z", "state": "current"},
            "disclosure_text": text,
        }))
        .expect("a disclosure")
    }

    fn doc_fee(included: bool) -> Value {
        json!({"charge_id": "doc-fee", "name": "Documentation fee",
            "amount": {"amount_minor": 49_900, "currency": "USD"}, "payee": "dealer",
            "included_in_advertised_price": included, "required": true})
    }

    const TEXT: &str = "Advertised price: 6,100.00 USD. NOT included: Documentation fee (499.00 USD). \
                        Advertised price plus required dealer charges: 6,599.00 USD.";

    #[test]
    fn a_consistent_disclosure_has_no_fee_problem() {
        let d = disclosure(TEXT, json!([doc_fee(false)]), false);
        assert_eq!(disclosure_fee_problems(&d), Vec::<String>::new());
    }

    #[test]
    fn a_charge_its_text_names_but_its_list_lacks_is_found() {
        let d = disclosure(TEXT, json!([]), false);
        let problems = disclosure_fee_problems(&d);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("499.00 USD, 6,599.00 USD"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_price_said_to_include_an_excluded_charge_is_found() {
        let d = disclosure("", json!([doc_fee(false)]), true);
        assert_eq!(disclosure_fee_problems(&d).len(), 1);
        let d = disclosure("", json!([doc_fee(true)]), false);
        assert_eq!(disclosure_fee_problems(&d).len(), 1);
    }

    fn check(authority: &str, source_authority: &str, age_s: i64, band: &str) -> Vec<String> {
        let now = Utc::now();
        let at = (now - Duration::seconds(age_s)).to_rfc3339();
        let until = (now + Duration::seconds(60)).to_rfc3339();
        let result: AvailabilityResult = serde_json::from_value(json!({
            "vehicle_id": "veh.1", "organization_id": "org.a", "rooftop_id": "roof.a",
            "availability": {"status": "available", "authority_status": authority,
                "observed_at": at, "valid_until": until},
            "provenance": {"sources": [{"source_name": "dms", "authority": source_authority,
                "observed_at": at}], "authority_status": authority},
            "freshness": {"observed_at": at, "state": "current", "valid_until": until},
        }))
        .expect("a result");
        let meta = json!({"dealergateway.availability": {"band": band}});
        available_now_problems(&result, Some(&meta), now)
    }

    #[test]
    fn available_now_needs_a_recent_dealer_system_check() {
        assert!(
            check(
                "authoritative",
                "authoritative_dealer_system",
                30,
                "verified_current"
            )
            .is_empty()
        );
        // The dealer's own feed, however labelled, is not a dealer system.
        assert_eq!(
            check("authoritative", "dealer_asserted", 30, "verified_current").len(),
            1
        );
        // Older than the band's 120 s.
        assert!(
            !check(
                "authoritative",
                "authoritative_dealer_system",
                600,
                "recent_authoritative"
            )
            .is_empty()
        );
        // Asserted is never "available now".
        assert!(!check("asserted", "dealer_asserted", 5, "asserted").is_empty());
        // The gateway's own label must agree where it gives one.
        assert_eq!(
            check(
                "authoritative",
                "authoritative_dealer_system",
                30,
                "asserted"
            )
            .len(),
            1
        );
    }

    #[test]
    fn critical_rules_are_marked_on_every_verdict() {
        let failed = Check::judge(
            Dimension::PriceAccuracy,
            "PRC-OUT-THE-DOOR",
            vec!["x".into()],
            "",
        );
        assert!(failed.critical_failure());
        let passed = Check::judge(
            Dimension::PriceAccuracy,
            "PRC-OUT-THE-DOOR",
            Vec::new(),
            "ok",
        );
        assert!(passed.critical && !passed.critical_failure());
        let minor = Check::judge(
            Dimension::FeeAndConditionDisclosure,
            "FEE-DOC-FEE",
            vec!["x".into()],
            "",
        );
        assert!(!minor.critical_failure());
    }
}
