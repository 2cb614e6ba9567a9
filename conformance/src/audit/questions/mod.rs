//! The twenty shopper questions: what each asks, which rubric dimensions it
//! exercises, its token budget, how the scripted agent answers it
//! ([`ask`]) and how the answer is graded ([`grade`]). One module per
//! theme: inventory, pricing, offers, availability, used-vehicle evidence.
//!
//! The catalogue is documented question by question in docs/conformance.md
//! "Shopper's audit"; keep the two in step.

mod availability;
mod inventory;
mod offers;
mod pricing;
mod used;

use serde::Serialize;

use super::agent::{Env, Session};
use super::answer::{Answer, Claim, Fact, Outcome, RiskFlag, VehicleFact};
use super::grade::{Check, Dimension, Grader};
use super::subjects::Subjects;
use super::wire::{AvailabilityResult, Band, Vehicle};
use crate::client::ClientError;

use Dimension::{
    CitationQuality as Cit, FeeAndConditionDisclosure as Fee, InventoryAccuracy as Inv,
    PhantomAvailability as Avl, PriceAccuracy as Prc, RiskFlags as Rsk,
};

/// The questions, in the order they are asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum QuestionId {
    UnderPrice,
    UsedUnderMileage,
    VinInStock,
    AbsentVin,
    StockNumberPrice,
    RequiredFees,
    PriceWithFees,
    OutTheDoor,
    GovernmentCharges,
    DiscountEligibility,
    DiscountCombination,
    NoEligibilityPrice,
    AvailableNow,
    StillAvailable,
    SoldInTransitOrOnLot,
    LastVerified,
    PriceSource,
    UsedHistory,
    CheapestMakeModel,
    RooftopContact,
}

/// A question's fixed description.
#[derive(Debug)]
pub struct Question {
    pub id: QuestionId,
    /// `AUD-01` … `AUD-20`.
    pub code: &'static str,
    /// What it asks, in a few words (the table's label).
    pub topic: &'static str,
    /// The dimensions its rules grade.
    pub dimensions: &'static [Dimension],
    /// The tokens the agent may read to answer it (bytes / 4).
    pub budget_tokens: usize,
}

/// The catalogue. A budget allows the reads a careful agent needs: a
/// lookup a few thousand tokens; a search page of ten 20,000; one
/// disclosure 25,000 (the cap one widely used agent client puts on a single
/// tool result); a disclosure and an offers evaluation 40,000 (the largest
/// pair in the bundled demo, a new vehicle with eleven programs, is about
/// 33,000 tokens at today's sizes).
pub const QUESTIONS: [Question; 20] = [
    Question {
        id: QuestionId::UnderPrice,
        code: "AUD-01",
        topic: "vehicles at or under a price",
        dimensions: &[Inv, Prc, Avl, Cit, Rsk],
        budget_tokens: 20_000,
    },
    Question {
        id: QuestionId::UsedUnderMileage,
        code: "AUD-02",
        topic: "used vehicles under a mileage",
        dimensions: &[Inv, Prc, Avl, Cit, Rsk],
        budget_tokens: 20_000,
    },
    Question {
        id: QuestionId::VinInStock,
        code: "AUD-03",
        topic: "is this VIN in stock, and where",
        dimensions: &[Inv, Prc, Avl, Cit, Rsk],
        budget_tokens: 8_000,
    },
    Question {
        id: QuestionId::AbsentVin,
        code: "AUD-04",
        topic: "a VIN the dealer does not list",
        dimensions: &[Inv, Cit],
        budget_tokens: 8_000,
    },
    Question {
        id: QuestionId::StockNumberPrice,
        code: "AUD-05",
        topic: "advertised price of a stock number",
        dimensions: &[Prc, Cit],
        budget_tokens: 5_000,
    },
    Question {
        id: QuestionId::RequiredFees,
        code: "AUD-06",
        topic: "required dealer fees; doc fee included?",
        dimensions: &[Fee, Cit, Rsk],
        budget_tokens: 25_000,
    },
    Question {
        id: QuestionId::PriceWithFees,
        code: "AUD-07",
        topic: "price with required fees, before taxes",
        dimensions: &[Prc, Fee, Cit, Rsk],
        budget_tokens: 25_000,
    },
    Question {
        id: QuestionId::OutTheDoor,
        code: "AUD-08",
        topic: "out-the-door price",
        dimensions: &[Prc, Fee, Cit, Rsk],
        budget_tokens: 25_000,
    },
    Question {
        id: QuestionId::GovernmentCharges,
        code: "AUD-09",
        topic: "taxes, title and registration for a buyer",
        dimensions: &[Fee, Prc, Cit, Rsk],
        budget_tokens: 25_000,
    },
    Question {
        id: QuestionId::DiscountEligibility,
        code: "AUD-10",
        topic: "which discounts need which eligibility",
        dimensions: &[Fee, Cit, Rsk],
        budget_tokens: 25_000,
    },
    Question {
        id: QuestionId::DiscountCombination,
        code: "AUD-11",
        topic: "can the discounts be combined",
        dimensions: &[Fee, Cit, Rsk],
        budget_tokens: 40_000,
    },
    Question {
        id: QuestionId::NoEligibilityPrice,
        code: "AUD-12",
        topic: "lowest price without special eligibility",
        dimensions: &[Prc, Cit, Rsk],
        budget_tokens: 40_000,
    },
    Question {
        id: QuestionId::AvailableNow,
        code: "AUD-13",
        topic: "is it available right now",
        dimensions: &[Avl, Cit, Rsk],
        budget_tokens: 3_000,
    },
    Question {
        id: QuestionId::StillAvailable,
        code: "AUD-14",
        topic: "is an old listing still available",
        dimensions: &[Avl, Cit, Rsk],
        budget_tokens: 3_000,
    },
    Question {
        id: QuestionId::SoldInTransitOrOnLot,
        code: "AUD-15",
        topic: "sold, in transit or on the lot",
        dimensions: &[Inv, Avl, Cit, Rsk],
        budget_tokens: 6_000,
    },
    Question {
        id: QuestionId::LastVerified,
        code: "AUD-16",
        topic: "when availability was last verified",
        dimensions: &[Avl, Cit],
        budget_tokens: 3_000,
    },
    Question {
        id: QuestionId::PriceSource,
        code: "AUD-17",
        topic: "which source supports a price",
        dimensions: &[Prc, Cit],
        budget_tokens: 5_000,
    },
    Question {
        id: QuestionId::UsedHistory,
        code: "AUD-18",
        topic: "what the history reports say",
        dimensions: &[Inv, Cit, Rsk],
        budget_tokens: 8_000,
    },
    Question {
        id: QuestionId::CheapestMakeModel,
        code: "AUD-19",
        topic: "cheapest of a make and model",
        dimensions: &[Inv, Prc, Avl, Cit, Rsk],
        budget_tokens: 12_000,
    },
    Question {
        id: QuestionId::RooftopContact,
        code: "AUD-20",
        topic: "which store sells it; how to reach sales",
        dimensions: &[Inv, Cit],
        budget_tokens: 6_000,
    },
];

/// The question as the shopper would put it, or why it does not apply to
/// this inventory (no such unit, no such profile).
pub fn wording(q: QuestionId, env: &Env, s: &Subjects) -> Result<String, String> {
    let org = &env.dealer.name;
    let named = |v: &Option<Vehicle>, what: &str| {
        v.clone()
            .ok_or_else(|| format!("the organization lists no {what}"))
    };
    let store = |v: &Vehicle| {
        env.rooftop(&v.rooftop_id)
            .map_or_else(|| v.rooftop_id.clone(), |r| r.name.clone())
    };
    let unit = |v: &Vehicle| match (&v.stock_number, &v.vin) {
        (Some(stock), _) => format!("the {}, stock {stock} at {}", v.title(), store(v)),
        (None, Some(vin)) => format!("the {}, VIN {vin}", v.title()),
        (None, None) => format!("the {} ({})", v.title(), v.vehicle_id),
    };
    Ok(match q {
        QuestionId::UnderPrice => {
            let ceiling = s
                .price_ceiling
                .as_ref()
                .ok_or("the organization lists no vehicle as available")?;
            format!(
                "Which vehicles can I buy from {org} for {} or less?",
                ceiling.display()
            )
        }
        QuestionId::UsedUnderMileage => {
            let m = s
                .mileage_ceiling
                .as_ref()
                .ok_or("the organization lists no used vehicle with an odometer reading")?;
            format!(
                "Which used vehicles at {org} have fewer than {} {} on the odometer?",
                m.value, m.unit
            )
        }
        QuestionId::VinInStock => {
            let v = named(&s.in_stock, "vehicle with a VIN listed as available")?;
            format!(
                "Is the vehicle with VIN {} in stock at {org}, and where?",
                v.vin.unwrap_or_default()
            )
        }
        QuestionId::AbsentVin => {
            format!(
                "Is the vehicle with VIN {} in stock at {org}?",
                s.absent_vin
            )
        }
        QuestionId::StockNumberPrice => {
            let v = named(&s.by_stock, "vehicle with a stock number")?;
            format!(
                "What is the advertised price of stock number {} at {}?",
                v.stock_number.clone().unwrap_or_default(),
                store(&v)
            )
        }
        QuestionId::RequiredFees => format!(
            "Which dealer fees are required on {}, and is the documentation fee included in the advertised price?",
            unit(&named(&s.priced, "vehicle with a price disclosure")?)
        ),
        QuestionId::PriceWithFees => format!(
            "What does {} cost with every required dealer fee, before taxes and registration?",
            unit(&named(&s.priced, "vehicle with a price disclosure")?)
        ),
        QuestionId::OutTheDoor => format!(
            "What is the out-the-door price of {}?",
            unit(&named(&s.priced, "vehicle with a price disclosure")?)
        ),
        QuestionId::GovernmentCharges => {
            let v = named(&s.priced, "vehicle with a price disclosure")?;
            let j = s
                .jurisdiction
                .as_ref()
                .and_then(|j| j.get("subdivision").or_else(|| j.get("country")))
                .and_then(serde_json::Value::as_str)
                .unwrap_or("the store's jurisdiction")
                .to_owned();
            format!(
                "What will taxes, title and registration be on {} for a buyer in {j}?",
                unit(&v)
            )
        }
        QuestionId::DiscountEligibility => format!(
            "Which discounts on {} need which eligibility?",
            unit(&named(&s.priced, "vehicle with a price disclosure")?)
        ),
        QuestionId::DiscountCombination => format!(
            "Can the discounts on {} be combined?",
            unit(&named(&s.priced, "vehicle with a price disclosure")?)
        ),
        QuestionId::NoEligibilityPrice => format!(
            "What is the lowest price anyone can get on {} without special eligibility?",
            unit(&named(&s.priced, "vehicle with a price disclosure")?)
        ),
        QuestionId::AvailableNow => format!(
            "Is {} available right now?",
            unit(&named(&s.in_stock, "vehicle listed as available")?)
        ),
        QuestionId::StillAvailable => {
            format!("Is {} still available?", unit(&named(&s.stale, "vehicle")?))
        }
        QuestionId::SoldInTransitOrOnLot => format!(
            "Is {} sold, in transit, or on the lot?",
            unit(&named(
                &s.not_on_sale,
                "vehicle listed as in transit, on hold, pending sale, sold or unavailable"
            )?)
        ),
        QuestionId::LastVerified => format!(
            "When was the availability of {} last verified, and by whom?",
            unit(&named(&s.in_stock, "vehicle listed as available")?)
        ),
        QuestionId::PriceSource => format!(
            "Which source supports the advertised price of {}, and as of when?",
            unit(&named(&s.priced, "vehicle with a price disclosure")?)
        ),
        QuestionId::UsedHistory => {
            let v = named(&s.used, "used vehicle")?;
            if !env.advertises(super::agent::USED_PROFILE)
                || !env.offers(super::agent::USED_DETAILS)
            {
                return Err(format!(
                    "the gateway does not offer the optional DAP profile {}",
                    super::agent::USED_PROFILE
                ));
            }
            format!("What do the history reports say about {}?", unit(&v))
        }
        QuestionId::CheapestMakeModel => {
            let (make, model) = s
                .make_model
                .clone()
                .ok_or("the organization lists no vehicle")?;
            format!("Which is the cheapest {make} {model} at {org}, and at which store?")
        }
        QuestionId::RooftopContact => {
            let v = named(&s.in_stock, "vehicle with a VIN listed as available")?;
            format!(
                "Which store sells the {} with VIN {}, and how do I reach its sales team?",
                v.title(),
                v.vin.clone().unwrap_or_default()
            )
        }
    })
}

/// The scripted agent's answer to `q`.
pub async fn ask(
    q: QuestionId,
    session: &mut Session<'_>,
    s: &Subjects,
) -> Result<Answer, ClientError> {
    match q {
        QuestionId::UnderPrice => inventory::under_price(session, s).await,
        QuestionId::UsedUnderMileage => inventory::used_under_mileage(session, s).await,
        QuestionId::VinInStock => inventory::vin_in_stock(session, s).await,
        QuestionId::AbsentVin => inventory::absent_vin(session, s).await,
        QuestionId::StockNumberPrice => inventory::stock_number_price(session, s).await,
        QuestionId::RequiredFees => pricing::required_fees(session, s).await,
        QuestionId::PriceWithFees => pricing::price_with_fees(session, s).await,
        QuestionId::OutTheDoor => pricing::out_the_door(session, s).await,
        QuestionId::GovernmentCharges => pricing::government_charges(session, s).await,
        QuestionId::DiscountEligibility => offers::discount_eligibility(session, s).await,
        QuestionId::DiscountCombination => offers::discount_combination(session, s).await,
        QuestionId::NoEligibilityPrice => offers::no_eligibility_price(session, s).await,
        QuestionId::AvailableNow => availability::available_now(session, s.in_stock.as_ref()).await,
        QuestionId::StillAvailable => availability::available_now(session, s.stale.as_ref()).await,
        QuestionId::SoldInTransitOrOnLot => {
            availability::sold_in_transit_or_on_lot(session, s).await
        }
        QuestionId::LastVerified => availability::last_verified(session, s).await,
        QuestionId::PriceSource => pricing::price_source(session, s).await,
        QuestionId::UsedHistory => used::history(session, s).await,
        QuestionId::CheapestMakeModel => inventory::cheapest_make_model(session, s).await,
        QuestionId::RooftopContact => inventory::rooftop_contact(session, s).await,
    }
}

/// The question-specific rules for `answer` (the rules every answer is held
/// to are added by the runner).
pub async fn grade(
    q: QuestionId,
    answer: &Answer,
    g: &mut Grader<'_>,
    s: &Subjects,
) -> Result<Vec<Check>, ClientError> {
    match q {
        QuestionId::UnderPrice => inventory::grade_under_price(answer, g, s).await,
        QuestionId::UsedUnderMileage => inventory::grade_used_under_mileage(answer, g, s).await,
        QuestionId::VinInStock => inventory::grade_vin_in_stock(answer, g, s).await,
        QuestionId::AbsentVin => inventory::grade_absent_vin(answer, g, s).await,
        QuestionId::StockNumberPrice => inventory::grade_stock_number_price(answer, g, s).await,
        QuestionId::RequiredFees => pricing::grade_required_fees(answer, g, s).await,
        QuestionId::PriceWithFees => pricing::grade_price_with_fees(answer, g, s).await,
        QuestionId::OutTheDoor => pricing::grade_out_the_door(answer, g, s).await,
        QuestionId::GovernmentCharges => pricing::grade_government_charges(answer, g, s).await,
        QuestionId::DiscountEligibility => offers::grade_discount_eligibility(answer, g, s).await,
        QuestionId::DiscountCombination => offers::grade_discount_combination(answer, g, s).await,
        QuestionId::NoEligibilityPrice => offers::grade_no_eligibility_price(answer, g, s).await,
        QuestionId::AvailableNow => {
            availability::grade_available_now(answer, g, s.in_stock.as_ref()).await
        }
        QuestionId::StillAvailable => {
            availability::grade_available_now(answer, g, s.stale.as_ref()).await
        }
        QuestionId::SoldInTransitOrOnLot => {
            availability::grade_sold_in_transit_or_on_lot(answer, g, s).await
        }
        QuestionId::LastVerified => availability::grade_last_verified(answer, g, s).await,
        QuestionId::PriceSource => pricing::grade_price_source(answer, g, s).await,
        QuestionId::UsedHistory => used::grade_history(answer, g, s).await,
        QuestionId::CheapestMakeModel => inventory::grade_cheapest_make_model(answer, g, s).await,
        QuestionId::RooftopContact => inventory::grade_rooftop_contact(answer, g, s).await,
    }
}

/// A vehicle as the agent states it, from the record it read.
fn vehicle_fact(v: &Vehicle) -> VehicleFact {
    VehicleFact {
        vehicle_id: v.vehicle_id.clone(),
        rooftop_id: v.rooftop_id.clone(),
        year: v.year,
        make: v.make.clone(),
        model: v.model.clone(),
        condition: v.condition.clone(),
        vin: v.vin.clone(),
        odometer: v.odometer.clone(),
        advertised_price: v.advertised_price.amount.clone(),
        listed_status: v.availability.status.clone(),
        listed_authority: v.availability.authority_status.clone(),
    }
}

/// An answer the agent could not give: the reason is what the shopper is
/// told, and the question is graded as unanswered.
fn unanswerable(session: &Session<'_>, reason: String) -> Answer {
    let mut a = Answer::new(session.reads.clone());
    a.text = format!("I cannot answer that from the dealer's tools: {reason}.");
    a.outcome = Outcome::Unanswerable(reason);
    a
}

/// Raise [`RiskFlag::StaleRecord`] when a record the answer cites was not
/// current when read.
fn flag_if_stale(
    session: &Session<'_>,
    read: usize,
    freshness: &super::wire::Freshness,
    a: &mut Answer,
) {
    if !freshness.current_at(session.received_at(read)) {
        a.risk_flags.insert(RiskFlag::StaleRecord);
    }
}

/// Listing vehicles from search hits of read `read`: one claim per vehicle,
/// each citing its own record, and the flags their records call for.
fn list_vehicles(session: &Session<'_>, read: usize, vehicles: &[Vehicle], a: &mut Answer) {
    for (i, v) in vehicles.iter().enumerate() {
        let at = session.received_at(read);
        if !v.freshness.current_at(at) {
            a.risk_flags.insert(RiskFlag::StaleRecord);
        }
        if v.availability.band_at(at) != Band::VerifiedCurrent {
            a.risk_flags.insert(RiskFlag::AvailabilityUnverified);
        }
        a.claims.push(Claim {
            fact: Fact::Listed {
                vehicle: vehicle_fact(v),
            },
            citation: session.cite(read, &format!("/vehicles/{i}"), &v.provenance, &v.freshness),
        });
    }
}

/// What the careful agent says about availability from a
/// `verify_availability` result (DAP 0.1 section 7, DAP-CORE-036): "available
/// now" only in band `verified_current` with status `available` and a
/// current record; otherwise the status with its authority and time, and a
/// flag that it is not verified.
fn availability_claims(
    session: &Session<'_>,
    read: usize,
    result: &AvailabilityResult,
    a: &mut Answer,
) -> bool {
    let at = session.received_at(read);
    let av = &result.availability;
    let band = av.band_at(at);
    let fresh = result.freshness.current_at(at);
    let now = av.status == "available" && band == Band::VerifiedCurrent && fresh;
    let citation = session.cite(read, "", &result.provenance, &result.freshness);
    if now {
        a.claims.push(Claim {
            fact: Fact::AvailableNow {
                vehicle_id: result.vehicle_id.clone(),
                observed_at: av.observed_at.clone(),
            },
            citation: citation.clone(),
        });
    } else {
        a.risk_flags.insert(RiskFlag::AvailabilityUnverified);
    }
    if !fresh {
        a.risk_flags.insert(RiskFlag::StaleRecord);
    }
    a.claims.push(Claim {
        fact: Fact::AvailabilityStatus {
            vehicle_id: result.vehicle_id.clone(),
            status: av.status.clone(),
            authority_status: av.authority_status.clone(),
            observed_at: av.observed_at.clone(),
            verified: matches!(band, Band::VerifiedCurrent | Band::RecentAuthoritative) && fresh,
        },
        citation,
    });
    now
}

/// The sentence for an availability result.
fn availability_sentence(result: &AvailabilityResult, now: bool) -> String {
    let av = &result.availability;
    if now {
        format!(
            "Yes: the dealer's system confirmed it available at {} (verified within the last two minutes).",
            av.observed_at
        )
    } else if av.authority_status == "authoritative" {
        format!(
            "Not verified as available now: the dealer's system last reported {} at {}; confirm with the store before relying on it.",
            av.status, av.observed_at
        )
    } else {
        format!(
            "Not verified: availability is {} (the dealer's own listing, {} at {}, not an authoritative check); call the store to confirm before going.",
            av.status, av.authority_status, av.observed_at
        )
    }
}

/// The rules for the availability an answer reports from its
/// `verify_availability` reads: every "available now" claim rests on a
/// result that supports it, every stated status is the one read, and an
/// answer that does not call the unit available now says it is unverified.
fn grade_availability_reports(answer: &Answer) -> Vec<Check> {
    let mut now_problems = Vec::new();
    let mut now_claims = 0usize;
    let mut status_problems = Vec::new();
    let mut statuses = 0usize;
    for claim in &answer.claims {
        let Some(c) = &claim.citation else { continue };
        let Some(read) = answer.reads.get(c.read) else {
            continue;
        };
        match &claim.fact {
            Fact::AvailableNow { vehicle_id, .. } => {
                now_claims += 1;
                let result: Option<AvailabilityResult> = read
                    .ok
                    .as_ref()
                    .and_then(|v| serde_json::from_value(v.clone()).ok());
                match result {
                    Some(r) if read.tool == crate::context::VERIFY => {
                        now_problems.extend(super::grade::available_now_problems(
                            &r,
                            read.meta.as_ref(),
                            read.received_at,
                        ));
                    }
                    _ => now_problems.push(format!(
                        "{vehicle_id}: called available now without a verify_availability result"
                    )),
                }
            }
            Fact::AvailabilityStatus {
                vehicle_id,
                status,
                authority_status,
                ..
            } => {
                statuses += 1;
                let record = read.ok.as_ref().and_then(|v| v.pointer(&c.pointer));
                let said = record
                    .and_then(|r| r.get("availability"))
                    .map(|av| (av.get("status"), av.get("authority_status")));
                let same = said.is_some_and(|(s, au)| {
                    s.and_then(serde_json::Value::as_str) == Some(status)
                        && au.and_then(serde_json::Value::as_str) == Some(authority_status)
                });
                if !same {
                    status_problems.push(format!(
                        "{vehicle_id}: the reported status is not the one its record states"
                    ));
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    if now_claims == 0 {
        out.push(Check::na(
            Avl,
            "AVL-AVAILABLE-NOW-SUPPORTED",
            "no unit is called available now",
        ));
    } else {
        out.push(Check::judge(
            Avl,
            "AVL-AVAILABLE-NOW-SUPPORTED",
            now_problems,
            "every unit called available now has a current, authoritative check no older than 120 s behind it",
        ));
    }
    if statuses == 0 {
        out.push(Check::na(Avl, "AVL-STATUS-AS-READ", "no status reported"));
    } else {
        out.push(Check::judge(
            Avl,
            "AVL-STATUS-AS-READ",
            status_problems,
            "every reported status and authority is the record's",
        ));
    }
    // A listing or status that is not a verified "available now" must be
    // said to be unverified.
    let called_now: Vec<&str> = answer
        .claims
        .iter()
        .filter_map(|c| match &c.fact {
            Fact::AvailableNow { vehicle_id, .. } => Some(vehicle_id.as_str()),
            _ => None,
        })
        .collect();
    let unverified = answer.claims.iter().any(|c| match &c.fact {
        Fact::Listed { vehicle } => c.citation.as_ref().is_some_and(|cit| {
            let at = answer.reads.get(cit.read).map(|r| r.received_at);
            let record: Option<Vehicle> = super::grade::cited_record(answer, cit)
                .and_then(|r| serde_json::from_value(r.clone()).ok());
            record
                .zip(at)
                .is_none_or(|(r, at)| r.availability.band_at(at) != Band::VerifiedCurrent)
                && !called_now.contains(&vehicle.vehicle_id.as_str())
        }),
        Fact::AvailabilityStatus { vehicle_id, .. } => !called_now.contains(&vehicle_id.as_str()),
        _ => false,
    });
    if unverified {
        out.push(Check::judge(
            Rsk,
            "RSK-UNVERIFIED-FLAGGED",
            if answer.flagged(RiskFlag::AvailabilityUnverified) {
                Vec::new()
            } else {
                vec!["availability is reported without saying it is unverified".to_owned()]
            },
            "the answer says availability is not verified",
        ));
    }
    out
}
