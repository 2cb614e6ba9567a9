//! The completeness of every vehicle of a rooftop, for the overview's
//! chart and fixes and the programs' reach.
//!
//! Each vehicle's disclosure is built by the disclosure tool's own function
//! (`tools::get_disclosure::GetDisclosure`: the same tenancy prologue, inputs and
//! builder an agent's call runs), so the scores here are exactly the
//! scores agents see. Going round `tools::invoke` skips only its per-call
//! audit event (one page view would write one per vehicle); the tool's
//! scope is checked here first instead, and the page writes one audit
//! event of its own. Results are kept 30 s per rooftop and snapshot
//! version: a rooftop's scores do not depend on who asks once the grant is
//! known to cover it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{ConsoleError, Rooftop, Signed};
use crate::availability::Band;
use crate::disclosure::{WEIGHT_COMPONENT, band_points};
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
    pub fix: &'static str,
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
    pub vehicles: Vec<VehicleScore>,
    /// DAP error codes of disclosures that could not be built.
    pub failures: Vec<String>,
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

/// The fix for each component, in the score's published order.
pub const FIXES: [(&str, &str); 5] = [
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

/// The components of a disclosure document that lost points, with the
/// points at stake: each boolean component is worth [`WEIGHT_COMPONENT`],
/// the band what [`band_points`] leaves.
pub fn gaps(disclosure: &Value) -> Vec<Gap> {
    let components = &disclosure["disclosure_completeness"]["components"];
    FIXES
        .iter()
        .filter_map(|(component, fix)| {
            let points = if *component == "availability_band" {
                let band = band_of(components[*component].as_str().unwrap_or("unknown"));
                WEIGHT_COMPONENT - band_points(band)
            } else if components[*component] == json!(true) {
                0
            } else {
                WEIGHT_COMPONENT
            };
            (points > 0).then_some(Gap {
                component,
                points,
                fix,
            })
        })
        .collect()
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
        let mut scores = RooftopScores::default();
        if let Some(inventory) = inventory {
            let ctx = signed.context(state);
            let index = &inventory.latest;
            for row in 0..index.len() {
                let record = index.record(row);
                let args = crate::tools::args::DisclosureArgs {
                    organization_id: rooftop.organization().organization_id.clone(),
                    rooftop_id: rooftop.id().to_owned(),
                    vehicle_id: record.vehicle_id.clone(),
                    jurisdiction: None,
                    payment_mode: None,
                };
                match <get_disclosure::GetDisclosure as crate::tools::Tool>::call(&ctx, args)
                    .await
                    .map(crate::tools::Produced::into_value)
                {
                    Ok(doc) => scores.vehicles.push(VehicleScore {
                        title: title(&record),
                        stock_number: record.stock_number.clone(),
                        score: u32::try_from(
                            doc["disclosure_completeness"]["score"]
                                .as_u64()
                                .unwrap_or(0),
                        )
                        .unwrap_or(0),
                        gaps: gaps(&doc),
                        adjustments: doc["conditional_adjustments"]
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .filter_map(|x| x["adjustment_id"].as_str().map(str::to_owned))
                                    .collect()
                            })
                            .unwrap_or_default(),
                        stale: doc["freshness"]["state"] == json!("stale"),
                        vehicle_id: record.vehicle_id,
                    }),
                    Err(e) => scores.failures.push(e.code().as_str().to_owned()),
                }
            }
        }
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

    #[test]
    fn gaps_follow_the_published_weights() {
        let doc = json!({"disclosure_completeness": {"score": 45, "components": {
            "advertised_price_present_and_authoritative": true,
            "required_dealer_charges_itemized": false,
            "conditional_adjustments_have_eligibility_and_stacking": true,
            "government_charges_classified": false,
            "availability_band": "stale"
        }}});
        let found: Vec<(&str, u32)> = gaps(&doc).iter().map(|g| (g.component, g.points)).collect();
        assert_eq!(
            found,
            vec![
                ("required_dealer_charges_itemized", 20),
                ("government_charges_classified", 20),
                ("availability_band", 15),
            ]
        );
        // 100 minus the points at stake is the score the tool computed.
        assert_eq!(
            u64::from(100 - found.iter().map(|(_, p)| p).sum::<u32>()),
            doc["disclosure_completeness"]["score"].as_u64().unwrap()
        );
    }
}
