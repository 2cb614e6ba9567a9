//! Conditional-offer questions (AUD-10 to AUD-12), answered from
//! `get_disclosure` and, where the gateway offers it, the
//! `dealergateway.offers.evaluate` extension (optional: DAP does not
//! require it, so its parts are skipped and not graded without it).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::pricing::{both_disclosures, finish, priced_disclosure, record_checks};
use super::{Fee, Prc, Rsk, unanswerable};
use crate::audit::agent::{OFFERS_EVALUATE, Session};
use crate::audit::answer::{Answer, Claim, Condition, Fact, RiskFlag};
use crate::audit::grade::{Check, Grader};
use crate::audit::subjects::Subjects;
use crate::audit::wire::{Disclosure, Money, Vehicle};
use crate::client::ClientError;

/// The offers claims of a disclosure.
fn offer_claims(d: &Disclosure, cite: Option<crate::audit::answer::Citation>, a: &mut Answer) {
    for adj in &d.conditional_adjustments {
        let known = adj.amount_status == "known";
        if !known {
            a.risk_flags.insert(RiskFlag::UnknownAmount);
        }
        if adj.needs_evidence() {
            a.risk_flags.insert(RiskFlag::EligibilityRequired);
        }
        a.claims.push(Claim {
            fact: Fact::ConditionalOffer {
                vehicle_id: d.vehicle_id.clone(),
                adjustment_id: adj.adjustment_id.clone(),
                name: adj.name.clone(),
                direction: adj.direction.clone(),
                amount: if known { adj.amount.clone() } else { None },
                conditions: adj
                    .criteria
                    .iter()
                    .map(|c| Condition {
                        criterion: c.criterion.clone(),
                        evidence_status: c.evidence_status.clone(),
                    })
                    .collect(),
                combinability: adj.stacking.combinability.clone(),
                group: adj.stacking.group.clone(),
                combinable_with: adj.stacking.combinable_with.clone(),
            },
            citation: cite.clone(),
        });
    }
}

fn offer_sentence(d: &Disclosure) -> String {
    let parts: Vec<String> = d
        .conditional_adjustments
        .iter()
        .map(|adj| {
            let amount = adj
                .amount
                .as_ref()
                .filter(|_| adj.amount_status == "known")
                .map_or_else(|| "amount unknown".to_owned(), Money::display);
            let needs: Vec<String> = adj
                .criteria
                .iter()
                .map(|c| {
                    let what = c
                        .description
                        .clone()
                        .unwrap_or_else(|| c.criterion.replace('_', " "));
                    match c.evidence_status.as_str() {
                        "required" => format!("{what} (proof required)"),
                        "claimed" => format!("{what} (buyer's claim)"),
                        _ => what,
                    }
                })
                .collect();
            format!(
                "{} ({}, {amount}): {}",
                adj.name,
                adj.direction,
                needs.join(" and ")
            )
        })
        .collect();
    if parts.is_empty() {
        "No conditional offers are disclosed.".to_owned()
    } else {
        format!(
            "Conditional offers, none part of the advertised price: {}.",
            parts.join("; ")
        )
    }
}

/// AUD-10.
pub async fn discount_eligibility(
    session: &mut Session<'_>,
    s: &Subjects,
) -> Result<Answer, ClientError> {
    let (mut a, d, cite, _) = match priced_disclosure(session, s, None).await? {
        Ok(x) => x,
        Err(why) => return Ok(unanswerable(session, why)),
    };
    offer_claims(&d, cite.clone(), &mut a);
    a.claims.push(Claim {
        fact: Fact::GenerallyAvailablePrice {
            vehicle_id: d.vehicle_id.clone(),
            amount: d.advertised_price.amount.clone(),
        },
        citation: cite,
    });
    a.text = format!(
        "Every buyer gets the advertised {}. {}",
        d.advertised_price.amount.display(),
        offer_sentence(&d)
    );
    Ok(finish(session, a))
}

/// The offers an answer states, by id.
fn stated_offers(a: &Answer) -> BTreeMap<&str, &Fact> {
    a.claims
        .iter()
        .filter_map(|c| match &c.fact {
            f @ Fact::ConditionalOffer { adjustment_id, .. } => Some((adjustment_id.as_str(), f)),
            _ => None,
        })
        .collect()
}

/// Grading of AUD-10.
pub async fn grade_discount_eligibility(
    a: &Answer,
    g: &mut Grader<'_>,
    s: &Subjects,
) -> Result<Vec<Check>, ClientError> {
    let Some(v) = &s.priced else {
        return Ok(Vec::new());
    };
    let (mine, theirs) = both_disclosures(a, g, v, None).await?;
    let mut out = record_checks(
        mine.as_ref(),
        theirs.as_ref(),
        crate::audit::grade::Dimension::FeeAndConditionDisclosure,
    );
    let Some((d, _)) = &mine else {
        return Ok(out);
    };
    let stated = stated_offers(a);
    let mut problems = Vec::new();
    for adj in &d.conditional_adjustments {
        let Some(Fact::ConditionalOffer {
            amount,
            conditions,
            direction,
            ..
        }) = stated.get(adj.adjustment_id.as_str())
        else {
            problems.push(format!("the offer {} is left out", adj.adjustment_id));
            continue;
        };
        let expected_amount = adj.amount.clone().filter(|_| adj.amount_status == "known");
        let expected_conditions: Vec<Condition> = adj
            .criteria
            .iter()
            .map(|c| Condition {
                criterion: c.criterion.clone(),
                evidence_status: c.evidence_status.clone(),
            })
            .collect();
        if amount != &expected_amount
            || conditions != &expected_conditions
            || direction != &adj.direction
        {
            problems.push(format!(
                "the offer {} is stated with other conditions or amount than disclosed",
                adj.adjustment_id
            ));
        }
    }
    for id in stated.keys() {
        if !d
            .conditional_adjustments
            .iter()
            .any(|x| x.adjustment_id == *id)
        {
            problems.push(format!("the offer {id} is not disclosed"));
        }
    }
    let general = a.claims.iter().find_map(|c| match &c.fact {
        Fact::GenerallyAvailablePrice { amount, .. } => Some(amount),
        _ => None,
    });
    if general != Some(&d.advertised_price.amount) {
        problems.push("the price every buyer gets is not the advertised price".into());
    }
    out.push(Check::judge(
        Fee,
        "FEE-OFFERS-COMPLETE",
        problems,
        format!(
            "all {} conditional offers are stated with their conditions, evidence and amounts, apart from the advertised price",
            d.conditional_adjustments.len()
        ),
    ));
    out.extend(grade_offer_flags(a, d));
    Ok(out)
}

/// Offers that need proof, or whose amount is unknown, must be flagged.
fn grade_offer_flags(a: &Answer, d: &Disclosure) -> Vec<Check> {
    let mut out = Vec::new();
    if d.conditional_adjustments.iter().any(|x| x.needs_evidence()) {
        out.push(Check::judge(
            Rsk,
            "RSK-ELIGIBILITY-FLAGGED",
            if a.flagged(RiskFlag::EligibilityRequired) {
                Vec::new()
            } else {
                vec!["offers that need proof of eligibility are not flagged".into()]
            },
            "offers needing proof of eligibility are flagged",
        ));
    }
    if d.conditional_adjustments
        .iter()
        .any(|x| x.amount_status != "known")
    {
        out.push(Check::judge(
            Rsk,
            "RSK-UNKNOWN-AMOUNT-FLAGGED",
            if a.flagged(RiskFlag::UnknownAmount) {
                Vec::new()
            } else {
                vec!["an offer of unknown amount is not flagged".into()]
            },
            "offers of unknown amount are flagged and not counted",
        ));
    }
    out
}

/// A program reference of the offers extension.
#[derive(Debug, Deserialize)]
struct ProgramRef {
    program_id: String,
}

/// The best stack of `dealergateway.offers.evaluate` (only the members
/// this audit reads).
#[derive(Debug, Deserialize)]
struct StackReport {
    program_ids: Vec<ProgramRef>,
    total_discount: Money,
    net_price: Money,
    #[serde(default)]
    surcharges: Option<Money>,
    #[serde(default)]
    subject_to_evidence: Vec<ProgramRef>,
}

/// The extension's best stack for `claims`, when the gateway offers the
/// tool; a note says when it does not.
async fn best_stack(
    session: &mut Session<'_>,
    v: &Vehicle,
    jurisdiction: Option<&Value>,
    payment_mode: &str,
    claims: Value,
    cite: Option<crate::audit::answer::Citation>,
    a: &mut Answer,
) -> Result<Option<(Money, Vec<String>)>, ClientError> {
    if !session.env.offers(OFFERS_EVALUATE) {
        a.notes.push(format!(
            "extension part skipped: the gateway offers no {OFFERS_EVALUATE} (DAP does not require it)"
        ));
        return Ok(None);
    }
    let country = session.env.rooftop(&v.rooftop_id).map_or_else(
        || json!({"country": "US"}),
        super::super::wire::Rooftop::jurisdiction,
    );
    let args = json!({"organization_id": session.env.organization_id,
        "rooftop_id": v.rooftop_id, "vehicle_id": v.vehicle_id,
        "profile": {"payment_mode": payment_mode,
            "jurisdiction": jurisdiction.cloned().unwrap_or(country), "claims": claims}});
    let read = session.call(OFFERS_EVALUATE, args).await?;
    let report: Option<StackReport> = session.reads[read]
        .ok
        .as_ref()
        .and_then(|ok| ok.get("best_stack"))
        .and_then(|b| serde_json::from_value(b.clone()).ok());
    let Some(report) = report else {
        a.notes.push(format!(
            "{OFFERS_EVALUATE} answered {}",
            session.error(read)
        ));
        return Ok(None);
    };
    let ids: Vec<String> = report
        .program_ids
        .iter()
        .map(|p| p.program_id.clone())
        .collect();
    a.claims.push(Claim {
        fact: Fact::BestStack {
            vehicle_id: v.vehicle_id.clone(),
            program_ids: ids.clone(),
            total_discount: report.total_discount.clone(),
            surcharges: report.surcharges.clone(),
            net_price: report.net_price.clone(),
            subject_to_evidence: report
                .subject_to_evidence
                .iter()
                .map(|p| p.program_id.clone())
                .collect(),
        },
        citation: cite,
    });
    Ok(Some((report.net_price, ids)))
}

/// AUD-11.
pub async fn discount_combination(
    session: &mut Session<'_>,
    s: &Subjects,
) -> Result<Answer, ClientError> {
    let (mut a, d, cite, v) = match priced_disclosure(session, s, s.jurisdiction.as_ref()).await? {
        Ok(x) => x,
        Err(why) => return Ok(unanswerable(session, why)),
    };
    offer_claims(&d, cite.clone(), &mut a);
    let rules: Vec<String> = d
        .conditional_adjustments
        .iter()
        .map(|x| {
            let how = match x.stacking.combinability.as_str() {
                "stackable" => "combines with others".to_owned(),
                "exclusive" if x.stacking.combinable_with.is_empty() => {
                    "cannot be combined with any other offer".to_owned()
                }
                "exclusive" => format!(
                    "combines only with {}",
                    x.stacking.combinable_with.join(", ")
                ),
                _ => "combines as the dealer's rule decides".to_owned(),
            };
            format!("{} {how} (group {})", x.name, x.stacking.group)
        })
        .collect();
    // A buyer who qualified for every criterion: which offers would stack.
    let mut qualified = serde_json::Map::new();
    for c in d.conditional_adjustments.iter().flat_map(|x| &x.criteria) {
        if c.criterion != "payment_mode" {
            qualified.insert(c.criterion.clone(), Value::Bool(true));
        }
    }
    let stack = best_stack(
        session,
        v,
        s.jurisdiction.as_ref(),
        "unknown",
        Value::Object(qualified),
        cite,
        &mut a,
    )
    .await?;
    a.text = format!(
        "{}{}",
        if rules.is_empty() {
            "No conditional offers are disclosed.".to_owned()
        } else {
            format!("{}.", rules.join("; "))
        },
        match &stack {
            Some((net, ids)) if !ids.is_empty() => format!(
                " For a buyer who qualifies for everything, the best combination is {} (net {} before fees and taxes, subject to eligibility and proof).",
                ids.join(" + "),
                net.display()
            ),
            Some(_) => " No combination of offers applies.".to_owned(),
            None => String::new(),
        }
    );
    Ok(finish(session, a))
}

/// Where a best stack contradicts the disclosure: a member that is not a
/// disclosed discount (or, for the no-eligibility price, one that needs
/// proof), or a net price that is not the advertised price less the
/// discount plus surcharges (floored at zero). DAP's `stacking` object is a
/// summary (a `rule_defined` rule is opaque, and a gateway's richer
/// semantics such as an always-stackable program do not show in
/// `combinable_with`), so pairwise exclusivity is not judged from it.
fn stack_problems(stack: &Fact, d: &Disclosure, no_eligibility: bool) -> Vec<String> {
    let Fact::BestStack {
        program_ids,
        total_discount,
        surcharges,
        net_price,
        subject_to_evidence,
        ..
    } = stack
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let find = |id: &str| {
        d.conditional_adjustments
            .iter()
            .find(|x| x.adjustment_id == id)
    };
    for id in program_ids {
        match find(id) {
            None => out.push(format!("{id} is stacked but is not a disclosed offer")),
            Some(x) if x.direction != "discount" => {
                out.push(format!("{id} is stacked but is not a discount"))
            }
            Some(x) => {
                if no_eligibility && x.needs_evidence() {
                    out.push(format!("{id} needs proof of eligibility"));
                }
            }
        }
    }
    if no_eligibility && !subject_to_evidence.is_empty() {
        out.push("the no-eligibility stack is subject to evidence".into());
    }
    let price = &d.advertised_price.amount;
    let expected = price
        .amount_minor
        .checked_sub(total_discount.amount_minor)
        .and_then(|n| n.checked_add(surcharges.as_ref().map_or(0, |m| m.amount_minor)))
        .map(|n| n.max(0));
    if net_price.currency != price.currency || expected != Some(net_price.amount_minor) {
        out.push(format!(
            "the net {} is not the advertised {} less the discount {} plus surcharges",
            net_price.display(),
            price.display(),
            total_discount.display()
        ));
    }
    out
}

/// The extension rule of AUD-11 and AUD-12.
fn grade_stack(a: &Answer, g: &Grader<'_>, d: &Disclosure, no_eligibility: bool) -> Check {
    let rule = if no_eligibility {
        "PRC-NO-ELIGIBILITY-STACK"
    } else {
        "FEE-STACK-VALID"
    };
    let dimension = if no_eligibility { Prc } else { Fee };
    if !g.env.offers(OFFERS_EVALUATE) {
        return Check::na(
            dimension,
            rule,
            format!("the gateway offers no {OFFERS_EVALUATE}; DAP does not require it"),
        );
    }
    let stack = a
        .claims
        .iter()
        .find(|c| matches!(c.fact, Fact::BestStack { .. }));
    match stack {
        None => Check::judge(
            dimension,
            rule,
            vec![format!(
                "{OFFERS_EVALUATE} is offered but gave no usable best stack"
            )],
            "",
        ),
        Some(c) => Check::judge(
            dimension,
            rule,
            stack_problems(&c.fact, d, no_eligibility),
            "the extension's best stack keeps to the disclosed offers, their stacking and the arithmetic",
        ),
    }
}

/// Grading of AUD-11.
pub async fn grade_discount_combination(
    a: &Answer,
    g: &mut Grader<'_>,
    s: &Subjects,
) -> Result<Vec<Check>, ClientError> {
    let Some(v) = &s.priced else {
        return Ok(Vec::new());
    };
    let (mine, theirs) = both_disclosures(a, g, v, s.jurisdiction.as_ref()).await?;
    let mut out = record_checks(
        mine.as_ref(),
        theirs.as_ref(),
        crate::audit::grade::Dimension::FeeAndConditionDisclosure,
    );
    let Some((d, _)) = &mine else {
        return Ok(out);
    };
    let stated = stated_offers(a);
    let mut problems = Vec::new();
    for adj in &d.conditional_adjustments {
        match stated.get(adj.adjustment_id.as_str()) {
            Some(Fact::ConditionalOffer {
                combinability,
                group,
                combinable_with,
                ..
            }) => {
                if combinability != &adj.stacking.combinability
                    || group != &adj.stacking.group
                    || combinable_with != &adj.stacking.combinable_with
                {
                    problems.push(format!(
                        "{}: stacking stated otherwise than disclosed",
                        adj.adjustment_id
                    ));
                }
            }
            _ => problems.push(format!("{}: its stacking is not stated", adj.adjustment_id)),
        }
    }
    out.push(Check::judge(
        Fee,
        "FEE-STACKING-STATED",
        problems,
        "each offer's combinability, group and partners are stated as disclosed",
    ));
    out.push(grade_stack(a, g, d, false));
    out.extend(grade_offer_flags(a, d));
    Ok(out)
}

/// AUD-12.
pub async fn no_eligibility_price(
    session: &mut Session<'_>,
    s: &Subjects,
) -> Result<Answer, ClientError> {
    let (mut a, d, cite, v) = match priced_disclosure(session, s, s.jurisdiction.as_ref()).await? {
        Ok(x) => x,
        Err(why) => return Ok(unanswerable(session, why)),
    };
    a.claims.push(Claim {
        fact: Fact::GenerallyAvailablePrice {
            vehicle_id: d.vehicle_id.clone(),
            amount: d.advertised_price.amount.clone(),
        },
        citation: cite.clone(),
    });
    if d.conditional_adjustments.iter().any(|x| x.needs_evidence()) {
        a.risk_flags.insert(RiskFlag::EligibilityRequired);
    }
    // No claims at all: only offers that need none can be in the stack.
    let stack = best_stack(
        session,
        v,
        s.jurisdiction.as_ref(),
        "cash",
        json!({}),
        cite,
        &mut a,
    )
    .await?;
    a.text = format!(
        "The advertised {} is the price every buyer gets{}.{}",
        d.advertised_price.amount.display(),
        if d.advertised_price.includes_required_dealer_charges {
            ""
        } else {
            " (required dealer fees and taxes are extra)"
        },
        match &stack {
            Some((net, ids)) if !ids.is_empty() => format!(
                " Offers that need no eligibility ({}) bring it to {} for a cash buyer.",
                ids.join(", "),
                net.display()
            ),
            _ => " Every other offer depends on eligibility.".to_owned(),
        }
    );
    Ok(finish(session, a))
}

/// Grading of AUD-12.
pub async fn grade_no_eligibility_price(
    a: &Answer,
    g: &mut Grader<'_>,
    s: &Subjects,
) -> Result<Vec<Check>, ClientError> {
    let Some(v) = &s.priced else {
        return Ok(Vec::new());
    };
    let Some((d, _)) = g
        .disclosure(&v.rooftop_id, &v.vehicle_id, s.jurisdiction.as_ref())
        .await?
    else {
        return Ok(vec![Check::judge(
            Prc,
            "PRC-GENERALLY-AVAILABLE",
            vec!["the grader's own get_disclosure did not answer".into()],
            "",
        )]);
    };
    let stated = a.claims.iter().find_map(|c| match &c.fact {
        Fact::GenerallyAvailablePrice { amount, .. } => Some(amount),
        _ => None,
    });
    let mut problems = Vec::new();
    if stated != Some(&d.advertised_price.amount) {
        problems.push(format!(
            "the price every buyer gets is {}, the advertised price",
            d.advertised_price.amount.display()
        ));
    }
    if d.advertised_price.availability != "generally_available" {
        problems.push("the disclosed advertised price is not generally available".into());
    }
    let mut out = vec![Check::judge(
        Prc,
        "PRC-GENERALLY-AVAILABLE",
        problems,
        "the price for every buyer is the advertised price, never a conditional best case",
    )];
    out.push(grade_stack(a, g, &d, true));
    Ok(out)
}
