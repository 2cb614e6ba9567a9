//! The completeness of every vehicle of a rooftop, for the overview's
//! chart and fixes and the programs' reach.
//!
//! Each vehicle's disclosure is built by the disclosure tool's own function
//! ([`get_disclosure::disclosure`]: the same tenancy prologue, inputs and
//! builder an agent's call runs) and read typed, never serialized and
//! parsed again, so the scores here are exactly the
//! scores agents see. Going round `tools::invoke` skips only its per-call
//! audit event (one page view would write one per vehicle); the tool's
//! scope is checked here first instead, and the page writes one audit
//! event of its own. Results are kept 30 s per rooftop and snapshot
//! version: a rooftop's scores do not depend on who asks once the grant is
//! known to cover it.
//!
//! Each disclosure is asked for a buyer in the rooftop's own jurisdiction
//! ([`crate::preview::rooftop_jurisdiction`]), as an agent that passes the
//! buyer's jurisdiction asks: without one, government-charge estimates are
//! never matched and every rooftop would lose their points and be told to
//! configure what it has (docs/console.md "Which buyer the scores assume").
//! The fixes are chosen from what is configured, never one already done.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{ConsoleError, Rooftop, Signed};
use crate::availability::Band;
use crate::dap::disclosure::CompletenessComponents;
use crate::dap::{ConditionalAdjustment, FreshnessState};
use crate::disclosure::{WEIGHT_COMPONENT, band_points};
use crate::preview::Fixes;
use crate::state::AppState;
use crate::tools::get_disclosure;

/// How long a rooftop's scores are reused.
const TTL: Duration = Duration::from_secs(30);

/// One completeness component a vehicle did not earn in full, and what
/// the manager can do about it (docs/pricing.md section 6 has the weights).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    pub component: &'static str,
    pub points: u32,
    pub fix: String,
}

/// One vehicle's disclosure, summarised.
#[derive(Debug, Clone)]
pub struct VehicleScore {
    pub vehicle_id: String,
    pub title: String,
    pub stock_number: Option<String>,
    pub score: u32,
    pub gaps: Vec<Gap>,
    /// `adjustment_id`s of the conditional adjustments it lists (program
    /// ids for program-derived ones).
    pub adjustments: Vec<String>,
    /// The disclosure's freshness state is `stale` (what agents are told).
    pub stale: bool,
}

/// Every vehicle of a rooftop's current snapshot.
#[derive(Debug, Clone, Default)]
pub struct RooftopScores {
    /// The buyer jurisdiction the disclosures were asked for (the
    /// rooftop's own); `None` when its address gives none.
    pub jurisdiction: Option<Value>,
    pub vehicles: Vec<VehicleScore>,
    /// DAP error codes of disclosures that could not be built.
    pub failures: Vec<String>,
    /// The disclosure lint of the same disclosures, at the same buyer's
    /// place (docs/console.md "Fix list").
    pub lint: crate::lint::rooftop::RooftopLint,
}

/// One cached rooftop: when it was computed, from which snapshot version.
struct Cached {
    at: Instant,
    version: Option<i64>,
    scores: Arc<RooftopScores>,
}

#[derive(Default)]
pub struct ScoreCache {
    inner: Mutex<HashMap<String, Cached>>,
}

/// The fix for each component, in the score's published order, when it
/// does not depend on the configuration ([`Fixes::fix`] decides the others).
const FIXES: [(&str, &str); 5] = [
    (
        "advertised_price_present_and_authoritative",
        "Publish a current feed with the vehicle's advertised price (dealer-gateway import inventory), within the rooftop's inventory SLA.",
    ),
    (
        "required_dealer_charges_itemized",
        "List the required dealer charges in the feed (an empty list if there are none) or set gateway_settings.pricing.required_dealer_charges in the dealers file.",
    ),
    (
        "conditional_adjustments_have_eligibility_and_stacking",
        "List conditional adjustments in the feed (an empty list if there are none) or import the organization's incentive programs, each with criteria and stacking.",
    ),
    (
        "government_charges_classified",
        "Configure gateway_settings.pricing.government_charge_estimates for the rooftop's jurisdiction, or publish a government charges status in the feed.",
    ),
    (
        "availability_band",
        "Connect the dealer system as the availability source (availability_source: http) and keep the feed within its SLA.",
    ),
];

/// What a component is called on the page.
pub fn label(component: &str) -> &'static str {
    match component {
        "advertised_price_present_and_authoritative" => {
            "Advertised price present and authoritative"
        }
        "required_dealer_charges_itemized" => "Required dealer charges itemized",
        "conditional_adjustments_have_eligibility_and_stacking" => {
            "Conditional adjustments have eligibility and stacking"
        }
        "government_charges_classified" => "Government charges classified",
        "availability_band" => "Availability band",
        _ => "Other",
    }
}

fn band_of(name: &str) -> Band {
    match name {
        "verified_current" => Band::VerifiedCurrent,
        "recent_authoritative" => Band::RecentAuthoritative,
        "asserted" => Band::Asserted,
        "stale" => Band::Stale,
        _ => Band::Unknown,
    }
}

/// The components of a disclosure that lost points, with the
/// points at stake and the fix: each boolean component is worth
/// [`WEIGHT_COMPONENT`], the band what [`band_points`] leaves. `fixes`
/// knows what the rooftop has configured, so no fix is one already done.
/// `adjustments` are the conditional adjustments the disclosure lists.
pub fn gaps(
    components: &CompletenessComponents,
    adjustments: &[&ConditionalAdjustment],
    fixes: &Fixes<'_>,
) -> Vec<Gap> {
    FIXES
        .iter()
        .filter_map(|(component, fix)| {
            let earned = match *component {
                "advertised_price_present_and_authoritative" => {
                    components.advertised_price_present_and_authoritative
                }
                "required_dealer_charges_itemized" => components.required_dealer_charges_itemized,
                "conditional_adjustments_have_eligibility_and_stacking" => {
                    components.conditional_adjustments_have_eligibility_and_stacking
                }
                "government_charges_classified" => components.government_charges_classified,
                _ => false,
            };
            let points = if *component == "availability_band" {
                let band = band_of(&components.availability_band);
                WEIGHT_COMPONENT - band_points(band)
            } else if earned {
                0
            } else {
                WEIGHT_COMPONENT
            };
            (points > 0).then(|| Gap {
                component,
                points,
                fix: fixes
                    .fix(component)
                    .or_else(|| adjustments_fix(component, adjustments))
                    .unwrap_or_else(|| (*fix).to_owned()),
            })
        })
        .collect()
}

/// The conditional-adjustments fix when adjustments are listed (the
/// general fix says to list them or import programs, which is then done):
/// the listed ones that lack what the score needs, or the programs that
/// could not be evaluated.
fn adjustments_fix(component: &str, listed: &[&ConditionalAdjustment]) -> Option<String> {
    if component != "conditional_adjustments_have_eligibility_and_stacking" {
        return None;
    }
    // A typed adjustment always has its stacking group.
    let incomplete: Vec<&str> = listed
        .iter()
        .filter(|a| a.criteria.is_empty() || (a.amount_status == "known" && a.amount.is_none()))
        .map(|a| a.name.as_str())
        .collect();
    Some(if incomplete.is_empty() {
        "The organization's incentive programs could not be evaluated for this vehicle (the vehicle page says why): correct the programs file and import it again.".to_owned()
    } else {
        format!(
            "Give each conditional adjustment in the feed its criteria, a stacking group and, when its amount is known, the amount; incomplete: {}.",
            incomplete.join(", ")
        )
    })
}

/// Refuse when the grant lacks the scope `tool` requires, as the tool
/// would (`dealeragent.scope.insufficient`); `Err` names the scope.
pub fn tool_scope(state: &AppState, signed: &Signed, tool: &str) -> Result<(), String> {
    match state.catalog.tool(tool).and_then(|t| t.scope.clone()) {
        Some(scope) if !signed.grant.has_scope(&scope) => Err(scope),
        _ => Ok(()),
    }
}

impl ScoreCache {
    /// The rooftop's scores (computed at most every [`TTL`] per snapshot
    /// version). The caller has checked the grant covers the rooftop and
    /// holds the disclosure tool's scope.
    pub async fn scores(
        &self,
        state: &Arc<AppState>,
        signed: &Signed,
        rooftop: &Rooftop,
    ) -> Result<Arc<RooftopScores>, ConsoleError> {
        let view = state.inventory.view(rooftop.directory()).await?;
        let inventory = view.rooftop(rooftop.id());
        let version = inventory.map(|i| i.latest.version());
        if let Some(cached) = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(rooftop.id())
            && cached.version == version
            && cached.at.elapsed() < TTL
        {
            return Ok(cached.scores.clone());
        }
        let jurisdiction = crate::preview::rooftop_jurisdiction(&rooftop.record().dap);
        let fixes = rooftop_fixes(rooftop, jurisdiction.as_ref());
        let mut scores = RooftopScores {
            jurisdiction: jurisdiction.clone(),
            ..RooftopScores::default()
        };
        let mut lint = crate::lint::rooftop::Aggregator::new(crate::lint::rooftop::EXAMPLES);
        if let Some(inventory) = inventory {
            let ctx = signed.context(state);
            let index = &inventory.latest;
            let linted_at = crate::lint::rooftop::Rooftop {
                organization: rooftop.organization(),
                rooftop: rooftop.record(),
                snapshot_version: index.version(),
                jurisdiction: jurisdiction.as_ref(),
                now: chrono::Utc::now(),
            };
            for row in 0..index.len() {
                let record = index.record(row);
                let args = crate::tools::args::DisclosureArgs {
                    organization_id: rooftop.organization().organization_id.clone(),
                    rooftop_id: rooftop.id().to_owned(),
                    vehicle_id: Some(record.vehicle_id.clone()),
                    vin: None,
                    stock_number: None,
                    jurisdiction: jurisdiction.clone(),
                    payment_mode: None,
                    detail: None,
                };
                match get_disclosure::disclosure(&ctx, &args).await {
                    Ok(built) => {
                        let doc = &built.document;
                        // A history the store cannot read is no history:
                        // the reduction rules then cannot determine.
                        let history =
                            crate::lint::history(state.store.as_ref(), &record, linted_at.now)
                                .await
                                .ok()
                                .flatten();
                        if let Some((_, report, _)) = crate::lint::rooftop::vehicle(
                            &linted_at,
                            &record,
                            doc,
                            history.as_ref(),
                        ) {
                            lint.add(&crate::lint::rooftop::VehicleRef::of(&record), &report);
                        }
                        let listed: Vec<&ConditionalAdjustment> = doc
                            .conditional_adjustments
                            .iter()
                            .map(|l| &l.adjustment)
                            .collect();
                        scores.vehicles.push(VehicleScore {
                            title: title(&record),
                            stock_number: record.stock_number.clone(),
                            score: doc.disclosure_completeness.score,
                            gaps: gaps(&doc.disclosure_completeness.components, &listed, &fixes),
                            adjustments: listed.iter().map(|a| a.adjustment_id.clone()).collect(),
                            stale: doc.freshness.state == FreshnessState::Stale,
                            vehicle_id: record.vehicle_id,
                        });
                    }
                    Err(e) => scores.failures.push(e.code().as_str().to_owned()),
                }
            }
        }
        scores.lint = lint.finish();
        let scores = Arc::new(scores);
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(
                rooftop.id().to_owned(),
                Cached {
                    at: Instant::now(),
                    version,
                    scores: scores.clone(),
                },
            );
        Ok(scores)
    }
}

/// What the rooftop has configured, for its fixes.
pub fn rooftop_fixes<'a>(rooftop: &'a Rooftop, jurisdiction: Option<&'a Value>) -> Fixes<'a> {
    Fixes {
        pricing: &rooftop.record().settings.pricing,
        assumed: jurisdiction,
        live_source: crate::availability::http_source(rooftop.record()).is_some(),
    }
}

/// "2022 Kia Sorento SX".
pub fn title(record: &crate::inventory::model::VehicleRecord) -> String {
    let mut t = format!("{} {} {}", record.year, record.make, record.model);
    if let Some(trim) = &record.trim {
        t.push(' ');
        t.push_str(trim);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn components(charges: bool, band: &str) -> CompletenessComponents {
        CompletenessComponents {
            advertised_price_present_and_authoritative: true,
            required_dealer_charges_itemized: charges,
            conditional_adjustments_have_eligibility_and_stacking: true,
            government_charges_classified: false,
            availability_band: band.to_owned(),
        }
    }

    #[test]
    fn gaps_follow_the_published_weights() {
        let (score, components) = (45, components(false, "stale"));
        let pricing = crate::store::RooftopPricing::default();
        let fixes = Fixes {
            pricing: &pricing,
            assumed: None,
            live_source: false,
        };
        let found: Vec<(&str, u32)> = gaps(&components, &[], &fixes)
            .iter()
            .map(|g| (g.component, g.points))
            .collect();
        assert_eq!(
            found,
            vec![
                ("required_dealer_charges_itemized", 20),
                ("government_charges_classified", 20),
                ("availability_band", 15),
            ]
        );
        // 100 minus the points at stake is the score the tool computed.
        assert_eq!(100 - found.iter().map(|(_, p)| p).sum::<u32>(), score);
    }

    #[test]
    fn a_fix_is_never_one_the_rooftop_has_already_done() {
        use crate::store::{GovernmentChargeEstimate, RooftopPricing};
        let components = components(true, "asserted");
        let illinois = GovernmentChargeEstimate {
            jurisdiction: serde_json::from_value(json!({"country": "US", "subdivision": "US-IL"}))
                .unwrap(),
            lines: vec![
                serde_json::from_value(json!({"name": "Title", "amount": {"amount_minor": 16500, "currency": "USD"}, "payee": "government"}))
                    .unwrap(),
            ],
            assumptions: vec![],
        };
        let fix = |pricing: &RooftopPricing, assumed: &Value, live: bool, component: &str| {
            let fixes = Fixes {
                pricing,
                assumed: Some(assumed),
                live_source: live,
            };
            gaps(&components, &[], &fixes)
                .into_iter()
                .find(|g| g.component == component)
                .map(|g| g.fix)
                .unwrap()
        };
        let michigan = json!({"country": "US", "subdivision": "US-MI"});
        let none = RooftopPricing::default();
        let configured = RooftopPricing {
            government_charge_estimates: vec![illinois.clone()],
            ..RooftopPricing::default()
        };
        assert!(
            fix(&none, &michigan, false, "government_charges_classified").starts_with(
                "Configure gateway_settings.pricing.government_charge_estimates for US-MI"
            )
        );
        // Estimates exist, for another jurisdiction: say which, never
        // "configure" as if there were none.
        let other = fix(
            &configured,
            &michigan,
            false,
            "government_charges_classified",
        );
        assert!(other.contains("covers US-IL but not US-MI"), "{other}");
        // An estimate for the very jurisdiction that cannot be totalled.
        let mut broken = configured.clone();
        // Lines in two currencies have no total.
        let mut other_currency = broken.government_charge_estimates[0].lines[0].clone();
        other_currency.amount = pricing::Money::from_minor(16500, pricing::Currency::CAD);
        broken.government_charge_estimates[0]
            .lines
            .push(other_currency);
        let own = json!({"country": "US", "subdivision": "US-IL"});
        let totalled = fix(&broken, &own, false, "government_charges_classified");
        assert!(totalled.contains("cannot be totalled"), "{totalled}");
        assert!(!totalled.starts_with("Configure"), "{totalled}");
        // A connected dealer system is not to be connected again.
        assert!(
            fix(&none, &own, false, "availability_band").starts_with("Connect the dealer system")
        );
        assert!(fix(&none, &own, true, "availability_band").starts_with("Nothing to configure"));
    }
}
