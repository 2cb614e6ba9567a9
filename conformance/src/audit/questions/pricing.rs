//! Price, fee and offer questions (AUD-06 to AUD-12, AUD-17), answered from
//! `get_disclosure` (and, where the gateway offers it, the
//! `dealergateway.offers.evaluate` extension).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Cit, Fee, Prc, Rsk, unanswerable};
use crate::audit::agent::{OFFERS_EVALUATE, Session};
use crate::audit::answer::{Answer, Claim, Condition, Fact, Outcome, RiskFlag};
use crate::audit::grade::{Check, Grader, Lookup, disclosure_fee_problems, unknown_totalled};
use crate::audit::subjects::Subjects;
use crate::audit::wire::{self, Disclosure, Money, Vehicle};
use crate::client::ClientError;

fn finish(session: &Session<'_>, mut a: Answer) -> Answer {
    a.reads = session.reads.clone();
    a
}

/// The subject's disclosure as the agent reads it, with the flags any
/// pricing answer raises from it (a stale record; a record that gives an
/// amount to an unknown).
async fn read_disclosure(
    session: &mut Session<'_>,
    v: &Vehicle,
    jurisdiction: Option<&Value>,
    a: &mut Answer,
) -> Result<Result<(usize, Disclosure), String>, ClientError> {
    let (read, d) = session
        .disclosure(&v.rooftop_id, &v.vehicle_id, jurisdiction)
        .await?;
    let Some(d) = d else {
        return Ok(Err(format!(
            "get_disclosure answered {}",
            session.error(read)
        )));
    };
    if !d.freshness.current_at(session.received_at(read)) {
        a.risk_flags.insert(RiskFlag::StaleRecord);
    }
    let raw = session.reads[read].ok.clone().unwrap_or(Value::Null);
    if !wire::unknown_with_amount(&raw).is_empty() {
        a.risk_flags.insert(RiskFlag::InconsistentRecord);
    }
    Ok(Ok((read, d)))
}

fn cite_disclosure(
    session: &Session<'_>,
    read: usize,
    d: &Disclosure,
) -> Option<crate::audit::answer::Citation> {
    session.cite(read, "", &d.provenance, &d.freshness)
}

/// Whether a charge is the documentation fee (its id or name says "doc").
fn is_doc_fee(id: &str, name: &str) -> bool {
    id.to_ascii_lowercase().contains("doc") || name.to_ascii_lowercase().contains("doc")
}

/// AUD-06.
pub async fn required_fees(session: &mut Session<'_>, s: &Subjects) -> Result<Answer, ClientError> {
    let Some(v) = s.priced.as_ref() else {
        return Ok(unanswerable(session, "no vehicle to ask about".into()));
    };
    let mut a = Answer::new(Vec::new());
    let (read, d) = match read_disclosure(session, v, None, &mut a).await? {
        Ok(x) => x,
        Err(why) => return Ok(unanswerable(session, why)),
    };
    let cite = cite_disclosure(session, read, &d);
    let price = &d.advertised_price;
    a.claims.push(Claim {
        fact: Fact::AdvertisedPrice {
            vehicle_id: d.vehicle_id.clone(),
            amount: price.amount.clone(),
            includes_required_dealer_charges: price.includes_required_dealer_charges,
        },
        citation: cite.clone(),
    });
    let mut said = Vec::new();
    for c in d.required_dealer_charges.iter().filter(|c| c.required) {
        a.claims.push(Claim {
            fact: Fact::RequiredCharge {
                vehicle_id: d.vehicle_id.clone(),
                charge_id: c.charge_id.clone(),
                name: c.name.clone(),
                amount: c.amount.clone(),
                included_in_advertised_price: c.included_in_advertised_price,
            },
            citation: cite.clone(),
        });
        said.push(format!(
            "{} {} ({})",
            c.name,
            c.amount.display(),
            if c.included_in_advertised_price {
                "included in the advertised price"
            } else {
                "on top of the advertised price"
            }
        ));
    }
    let doc = d
        .required_dealer_charges
        .iter()
        .find(|c| is_doc_fee(&c.charge_id, &c.name));
    a.claims.push(Claim {
        fact: Fact::DocumentationFee {
            vehicle_id: d.vehicle_id.clone(),
            charge_id: doc.map(|c| c.charge_id.clone()),
            included_in_advertised_price: doc.map(|c| c.included_in_advertised_price),
        },
        citation: cite,
    });
    let doc_sentence = match doc {
        Some(c) if c.included_in_advertised_price => format!(
            "The documentation fee ({}) is included in the advertised price.",
            c.amount.display()
        ),
        Some(c) => format!(
            "The documentation fee ({}) is NOT included in the advertised price.",
            c.amount.display()
        ),
        None => "The disclosure lists no documentation fee.".to_owned(),
    };
    a.text = if said.is_empty() {
        format!("The dealer discloses no required dealer fees on it. {doc_sentence}")
    } else {
        format!("Required dealer fees: {}. {doc_sentence}", said.join("; "))
    };
    Ok(finish(session, a))
}

/// The disclosure the grader reads itself (fullest detail), and the one
/// the agent read (evidence), for the consistency rules.
async fn both_disclosures(
    a: &Answer,
    g: &mut Grader<'_>,
    v: &Vehicle,
    jurisdiction: Option<&Value>,
) -> Result<(Option<(Disclosure, Value)>, Option<(Disclosure, Value)>), ClientError> {
    let mine = g
        .disclosure(&v.rooftop_id, &v.vehicle_id, jurisdiction)
        .await?;
    let theirs = a
        .reads
        .iter()
        .rev()
        .find(|r| r.tool == crate::context::DISCLOSURE)
        .and_then(|r| r.ok.clone())
        .and_then(|raw| {
            serde_json::from_value::<Disclosure>(raw.clone())
                .ok()
                .map(|d| (d, raw))
        });
    Ok((mine, theirs))
}

/// FEE-RECORD-CONSISTENT and the unknown-totalled rule, over both reads.
fn record_checks(
    mine: Option<&(Disclosure, Value)>,
    theirs: Option<&(Disclosure, Value)>,
    unknown_dimension: crate::audit::grade::Dimension,
) -> Vec<Check> {
    let mut fees = Vec::new();
    let mut unknown = Vec::new();
    for (d, raw) in mine.into_iter().chain(theirs) {
        for p in disclosure_fee_problems(d) {
            if !fees.contains(&p) {
                fees.push(p);
            }
        }
        for p in unknown_totalled(raw) {
            if !unknown.contains(&p) {
                unknown.push(p);
            }
        }
    }
    if mine.is_none() {
        fees.push("the grader's own get_disclosure did not answer".into());
    }
    let rule = match unknown_dimension {
        crate::audit::grade::Dimension::PriceAccuracy => "PRC-NO-UNKNOWN-TOTALLED",
        _ => "FEE-UNKNOWN-NOT-TOTALLED",
    };
    vec![
        Check::judge(
            Fee,
            "FEE-RECORD-CONSISTENT",
            fees,
            "the disclosure's itemized charges agree with its own price flag and text",
        ),
        Check::judge(
            unknown_dimension,
            rule,
            unknown,
            "nothing the disclosure calls unknown carries an amount",
        ),
    ]
}

/// The required charges an answer states: id → (amount, included).
fn stated_charges(a: &Answer) -> BTreeMap<String, (Money, bool)> {
    a.claims
        .iter()
        .filter_map(|c| match &c.fact {
            Fact::RequiredCharge {
                charge_id,
                amount,
                included_in_advertised_price,
                ..
            } => Some((
                charge_id.clone(),
                (amount.clone(), *included_in_advertised_price),
            )),
            _ => None,
        })
        .collect()
}

/// Differences between the charges an answer states and a disclosure's
/// (`only_excluded`: the answer is about the charges outside the price).
fn charge_differences(a: &Answer, d: &Disclosure, only_excluded: bool) -> Vec<String> {
    let stated = stated_charges(a);
    let record: BTreeMap<String, (Money, bool)> = d
        .required_dealer_charges
        .iter()
        .filter(|c| c.required && (!only_excluded || !c.included_in_advertised_price))
        .map(|c| {
            (
                c.charge_id.clone(),
                (c.amount.clone(), c.included_in_advertised_price),
            )
        })
        .collect();
    let mut out = Vec::new();
    for (id, (amount, included)) in &record {
        match stated.get(id) {
            None => out.push(format!(
                "the required charge {id} ({}) is left out",
                amount.display()
            )),
            Some((m, i)) if m != amount || i != included => {
                out.push(format!(
                    "the charge {id} is stated differently from the disclosure"
                ));
            }
            Some(_) => {}
        }
    }
    for id in stated.keys().filter(|id| !record.contains_key(*id)) {
        out.push(format!("the charge {id} is not in the disclosure"));
    }
    out
}

/// Grading of AUD-06.
pub async fn grade_required_fees(
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
    out.push(Check::judge(
        Fee,
        "FEE-CHARGES-COMPLETE",
        charge_differences(a, d, false),
        format!(
            "all {} required charges are stated with amount and inclusion",
            d.required_dealer_charges.len()
        ),
    ));
    let doc = d
        .required_dealer_charges
        .iter()
        .find(|c| is_doc_fee(&c.charge_id, &c.name));
    let stated = a.claims.iter().find_map(|c| match &c.fact {
        Fact::DocumentationFee {
            charge_id,
            included_in_advertised_price,
            ..
        } => Some((charge_id.clone(), *included_in_advertised_price)),
        _ => None,
    });
    let expected = (
        doc.map(|c| c.charge_id.clone()),
        doc.map(|c| c.included_in_advertised_price),
    );
    out.push(Check::judge(
        Fee,
        "FEE-DOC-FEE",
        match stated {
            None => vec!["the answer does not say whether a documentation fee applies".into()],
            Some(s) if s != expected => {
                vec!["the documentation fee answer differs from the disclosure".into()]
            }
            Some(_) => Vec::new(),
        },
        "the documentation fee, and whether the price includes it, as disclosed",
    ));
    Ok(out)
}

/// AUD-07.
pub async fn price_with_fees(
    session: &mut Session<'_>,
    s: &Subjects,
) -> Result<Answer, ClientError> {
    let Some(v) = s.priced.as_ref() else {
        return Ok(unanswerable(session, "no vehicle to ask about".into()));
    };
    let mut a = Answer::new(Vec::new());
    let (read, d) = match read_disclosure(session, v, None, &mut a).await? {
        Ok(x) => x,
        Err(why) => return Ok(unanswerable(session, why)),
    };
    let cite = cite_disclosure(session, read, &d);
    let Some(total) = d.price_with_required_charges() else {
        return Ok(unanswerable(
            session,
            "the required charges are not in the price's currency".into(),
        ));
    };
    let mut excluded = Vec::new();
    for c in d.excluded_charges() {
        excluded.push(format!("{} {}", c.name, c.amount.display()));
        a.claims.push(Claim {
            fact: Fact::RequiredCharge {
                vehicle_id: d.vehicle_id.clone(),
                charge_id: c.charge_id.clone(),
                name: c.name.clone(),
                amount: c.amount.clone(),
                included_in_advertised_price: false,
            },
            citation: cite.clone(),
        });
    }
    a.claims.push(Claim {
        fact: Fact::PriceWithRequiredCharges {
            vehicle_id: d.vehicle_id.clone(),
            amount: total.clone(),
        },
        citation: cite.clone(),
    });
    government_fact(&d, cite, &mut a);
    a.text = format!(
        "{} with every required dealer fee: the advertised {}{}. Taxes, title and registration are not included{}.",
        total.display(),
        d.advertised_price.amount.display(),
        if excluded.is_empty() {
            " already includes them".to_owned()
        } else {
            format!(" plus {}", excluded.join(" and "))
        },
        if d.government_charges.status == "unknown" {
            " and are unknown (not zero)"
        } else {
            ""
        }
    );
    Ok(finish(session, a))
}

/// The government-charges claim and its flag.
fn government_fact(d: &Disclosure, cite: Option<crate::audit::answer::Citation>, a: &mut Answer) {
    let g = &d.government_charges;
    let known = matches!(g.status.as_str(), "estimated" | "calculated");
    a.claims.push(Claim {
        fact: Fact::GovernmentCharges {
            vehicle_id: d.vehicle_id.clone(),
            status: g.status.clone(),
            total: if known { g.total.clone() } else { None },
        },
        citation: cite,
    });
    if g.status == "unknown" {
        a.risk_flags.insert(RiskFlag::GovernmentChargesUnknown);
    }
}

/// The government-charges rules: the status stated is the record's, a
/// total only where the record has a known one, and the flag when unknown.
fn grade_government(a: &Answer, d: &Disclosure) -> Vec<Check> {
    let g = &d.government_charges;
    let stated = a.claims.iter().find_map(|c| match &c.fact {
        Fact::GovernmentCharges { status, total, .. } => Some((status, total)),
        _ => None,
    });
    let known = matches!(g.status.as_str(), "estimated" | "calculated");
    let expected_total = if known { g.total.clone() } else { None };
    let problems = match stated {
        None => vec!["the answer says nothing of government charges".to_owned()],
        Some((status, total)) => {
            let mut p = Vec::new();
            if status != &g.status {
                p.push(format!("stated as {status}, disclosed as {}", g.status));
            }
            if total != &expected_total {
                p.push(format!(
                    "a government total of {} is stated where the disclosure supports {}",
                    total.as_ref().map_or_else(|| "none".into(), Money::display),
                    expected_total
                        .as_ref()
                        .map_or_else(|| "none".into(), Money::display)
                ));
            }
            p
        }
    };
    let mut out = vec![Check::judge(
        Fee,
        "FEE-GOVERNMENT-EXPLICIT",
        problems,
        format!("government charges stated as {}", g.status),
    )];
    if g.status == "unknown" {
        out.push(Check::judge(
            Rsk,
            "RSK-GOVERNMENT-UNKNOWN-FLAGGED",
            if a.flagged(RiskFlag::GovernmentChargesUnknown) {
                Vec::new()
            } else {
                vec!["unknown government charges are not flagged".into()]
            },
            "unknown government charges are flagged",
        ));
    }
    out
}

/// Grading of AUD-07.
pub async fn grade_price_with_fees(
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
    let stated = a.claims.iter().find_map(|c| match &c.fact {
        Fact::PriceWithRequiredCharges { amount, .. } => Some(amount),
        _ => None,
    });
    let expected = d.price_with_required_charges();
    out.push(Check::judge(
        Prc,
        "PRC-SUM-CORRECT",
        match (stated, &expected) {
            (Some(s), Some(e)) if s == e => Vec::new(),
            (Some(s), Some(e)) => vec![format!(
                "{} stated, the disclosure adds up to {}",
                s.display(),
                e.display()
            )],
            (None, _) => vec!["no price with fees is stated".into()],
            (Some(_), None) => vec!["a total is stated over charges in another currency".into()],
        },
        "the advertised price plus every excluded required charge, exactly",
    ));
    out.push(Check::judge(
        Fee,
        "FEE-CHARGES-COMPLETE",
        charge_differences(a, d, true),
        "every required charge outside the price is counted",
    ));
    out.extend(grade_government(a, d));
    Ok(out)
}

/// AUD-08.
pub async fn out_the_door(session: &mut Session<'_>, s: &Subjects) -> Result<Answer, ClientError> {
    let Some(v) = s.priced.as_ref() else {
        return Ok(unanswerable(session, "no vehicle to ask about".into()));
    };
    let mut a = Answer::new(Vec::new());
    let (read, d) = match read_disclosure(session, v, None, &mut a).await? {
        Ok(x) => x,
        Err(why) => return Ok(unanswerable(session, why)),
    };
    let cite = cite_disclosure(session, read, &d);
    let with_fees = d.price_with_required_charges();
    if let Some(m) = &with_fees {
        a.claims.push(Claim {
            fact: Fact::PriceWithRequiredCharges {
                vehicle_id: d.vehicle_id.clone(),
                amount: m.clone(),
            },
            citation: cite.clone(),
        });
    }
    government_fact(&d, cite.clone(), &mut a);
    let g = &d.government_charges;
    let (amount, missing) = match (g.status.as_str(), &with_fees, &g.total) {
        ("unknown", _, _) => (None, vec!["government charges (unknown)".to_owned()]),
        ("not_applicable", Some(w), _) => (Some(w.clone()), Vec::new()),
        ("estimated" | "calculated", Some(w), Some(t)) => (w.plus(t), Vec::new()),
        ("estimated" | "calculated", Some(_), None) => {
            (None, vec!["a government total (none is given)".to_owned()])
        }
        (_, None, _) => (
            None,
            vec!["required charges in another currency".to_owned()],
        ),
        (other, Some(_), _) => (None, vec![format!("government charges ({other})")]),
    };
    let estimate = g.status == "estimated";
    a.claims.push(Claim {
        fact: Fact::OutTheDoor {
            vehicle_id: d.vehicle_id.clone(),
            amount: amount.clone(),
            estimate,
            missing: missing.clone(),
        },
        citation: cite,
    });
    a.text = match &amount {
        Some(m) => format!(
            "About {} out the door{}: the advertised price, the required dealer fees and {} government charges. Not a quote.",
            m.display(),
            if estimate { " (estimated)" } else { "" },
            g.status
        ),
        None => {
            a.outcome = Outcome::NotComputable;
            format!(
                "An out-the-door price cannot be computed: missing {}. The known part is {} (advertised price plus required dealer fees); ask the store for a quote for your address.",
                missing.join(", "),
                with_fees
                    .as_ref()
                    .map_or_else(|| "not computable either".into(), Money::display)
            )
        }
    };
    Ok(finish(session, a))
}

/// Grading of AUD-08.
pub async fn grade_out_the_door(
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
        crate::audit::grade::Dimension::PriceAccuracy,
    );
    let Some((d, _)) = &mine else {
        return Ok(out);
    };
    let stated = a.claims.iter().find_map(|c| match &c.fact {
        Fact::OutTheDoor { amount, .. } => Some(amount),
        _ => None,
    });
    let gov = &d.government_charges;
    let expected = match gov.status.as_str() {
        "not_applicable" => d.price_with_required_charges(),
        "estimated" | "calculated" => d
            .price_with_required_charges()
            .zip(gov.total.as_ref())
            .and_then(|(w, t)| w.plus(t)),
        _ => None,
    };
    let mut problems = Vec::new();
    match stated {
        None => problems.push("the answer gives no out-the-door answer".to_owned()),
        Some(amount) => {
            if amount != &expected {
                problems.push(format!(
                    "{} stated where the disclosure supports {}",
                    amount
                        .as_ref()
                        .map_or_else(|| "no figure".into(), Money::display),
                    expected
                        .as_ref()
                        .map_or_else(|| "no figure (not computable)".into(), Money::display)
                ));
            }
            if amount.is_none() && a.outcome != Outcome::NotComputable {
                problems
                    .push("no figure is given but the answer is not marked not computable".into());
            }
        }
    }
    out.push(Check::judge(
        Prc,
        "PRC-OUT-THE-DOOR",
        problems,
        if gov.status == "unknown" {
            "not computable while government charges are unknown".to_owned()
        } else {
            "the figure adds the price, required fees and known government charges".to_owned()
        },
    ));
    out.extend(grade_government(a, d));
    Ok(out)
}

/// AUD-09.
pub async fn government_charges(
    session: &mut Session<'_>,
    s: &Subjects,
) -> Result<Answer, ClientError> {
    let Some(v) = s.priced.as_ref() else {
        return Ok(unanswerable(session, "no vehicle to ask about".into()));
    };
    let mut a = Answer::new(Vec::new());
    let (read, d) = match read_disclosure(session, v, s.jurisdiction.as_ref(), &mut a).await? {
        Ok(x) => x,
        Err(why) => return Ok(unanswerable(session, why)),
    };
    let cite = cite_disclosure(session, read, &d);
    government_fact(&d, cite, &mut a);
    let g = &d.government_charges;
    a.text = match (g.status.as_str(), &g.total) {
        ("estimated" | "calculated", Some(t)) => format!(
            "Government charges are {} at {} for that jurisdiction; sales tax may not be included; not a quote.",
            g.status,
            t.display()
        ),
        ("not_applicable", _) => "No government charges apply.".to_owned(),
        ("unknown", _) => {
            "Unknown: the dealer publishes no government charges for that jurisdiction. They are not zero; ask the store or the registry.".to_owned()
        }
        (other, _) => format!("Government charges are {other}, with no total given."),
    };
    Ok(finish(session, a))
}

/// Grading of AUD-09.
pub async fn grade_government_charges(
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
        crate::audit::grade::Dimension::PriceAccuracy,
    );
    let Some((d, _)) = &mine else {
        return Ok(out);
    };
    out.extend(grade_government(a, d));
    let gov = &d.government_charges;
    let line_amounts: Option<Vec<Money>> = gov
        .lines
        .iter()
        .map(|l| {
            l.get("amount")
                .and_then(|m| serde_json::from_value(m.clone()).ok())
        })
        .collect();
    match (gov.status.as_str(), &gov.total, line_amounts) {
        ("estimated" | "calculated", Some(total), Some(lines)) if !lines.is_empty() => {
            let sum = lines
                .iter()
                .skip(1)
                .try_fold(lines[0].clone(), |acc, m| acc.plus(m));
            out.push(Check::judge(
                Fee,
                "FEE-LINES-SUM",
                if sum.as_ref() == Some(total) {
                    Vec::new()
                } else {
                    vec![format!(
                        "the lines do not add up to the total {}",
                        total.display()
                    )]
                },
                "the government lines add up to the stated total",
            ));
        }
        _ => out.push(Check::na(
            Fee,
            "FEE-LINES-SUM",
            "no itemized government total",
        )),
    }
    Ok(out)
}

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
    let Some(v) = s.priced.as_ref() else {
        return Ok(unanswerable(session, "no vehicle to ask about".into()));
    };
    let mut a = Answer::new(Vec::new());
    let (read, d) = match read_disclosure(session, v, None, &mut a).await? {
        Ok(x) => x,
        Err(why) => return Ok(unanswerable(session, why)),
    };
    let cite = cite_disclosure(session, read, &d);
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
    let Some(v) = s.priced.as_ref() else {
        return Ok(unanswerable(session, "no vehicle to ask about".into()));
    };
    let mut a = Answer::new(Vec::new());
    let (read, d) = match read_disclosure(session, v, s.jurisdiction.as_ref(), &mut a).await? {
        Ok(x) => x,
        Err(why) => return Ok(unanswerable(session, why)),
    };
    let cite = cite_disclosure(session, read, &d);
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
    let Some(v) = s.priced.as_ref() else {
        return Ok(unanswerable(session, "no vehicle to ask about".into()));
    };
    let mut a = Answer::new(Vec::new());
    let (read, d) = match read_disclosure(session, v, s.jurisdiction.as_ref(), &mut a).await? {
        Ok(x) => x,
        Err(why) => return Ok(unanswerable(session, why)),
    };
    let cite = cite_disclosure(session, read, &d);
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

/// AUD-17.
pub async fn price_source(session: &mut Session<'_>, s: &Subjects) -> Result<Answer, ClientError> {
    let Some(v) = s.priced.as_ref() else {
        return Ok(unanswerable(session, "no vehicle to ask about".into()));
    };
    let (read, record) = session
        .vehicle(&v.rooftop_id, "vehicle_id", &v.vehicle_id)
        .await?;
    let Some(record) = record else {
        let why = format!("get_vehicle answered {}", session.error(read));
        return Ok(unanswerable(session, why));
    };
    let mut a = Answer::new(Vec::new());
    let Some(cite) = session.cite(read, "", &record.provenance, &record.freshness) else {
        return Ok(unanswerable(
            session,
            "the vehicle record names no source".into(),
        ));
    };
    if !record.freshness.current_at(session.received_at(read)) {
        a.risk_flags.insert(RiskFlag::StaleRecord);
    }
    a.claims.push(Claim {
        fact: Fact::PriceSource {
            vehicle_id: record.vehicle_id.clone(),
            amount: record.advertised_price.amount.clone(),
            source_name: cite.source_name.clone(),
            authority: cite.authority.clone(),
            observed_at: cite.observed_at.clone(),
        },
        citation: Some(cite.clone()),
    });
    let who = match cite.authority.as_str() {
        "dealer_asserted" => {
            "the dealer's own feed (the dealer's assertion, not independently verified)"
        }
        "authoritative_dealer_system" => "the dealer's system of record",
        "oem" => "the manufacturer",
        "third_party" => "a third party (not the dealer)",
        _ => "a source of unstated authority",
    };
    a.text = format!(
        "The advertised {} comes from {} ({}), as of {}{}.",
        record.advertised_price.amount.display(),
        cite.source_name,
        who,
        cite.observed_at,
        if a.flagged(RiskFlag::StaleRecord) {
            "; that record is stale, so the price may have changed"
        } else {
            ""
        }
    );
    Ok(finish(session, a))
}

/// Grading of AUD-17.
pub async fn grade_price_source(
    a: &Answer,
    g: &mut Grader<'_>,
    s: &Subjects,
) -> Result<Vec<Check>, ClientError> {
    let Some(v) = &s.priced else {
        return Ok(Vec::new());
    };
    let stated = a.claims.iter().find_map(|c| match &c.fact {
        Fact::PriceSource {
            amount,
            source_name,
            authority,
            observed_at,
            ..
        } => Some((amount, source_name, authority, observed_at)),
        _ => None,
    });
    let Some((amount, source, authority, observed_at)) = stated else {
        return Ok(vec![Check::judge(
            Cit,
            "CIT-PRICE-SOURCE",
            vec!["no source is named for the price".into()],
            "",
        )]);
    };
    let mut price = Vec::new();
    let mut cited = Vec::new();
    match g
        .vehicle(&v.rooftop_id, "vehicle_id", &v.vehicle_id)
        .await?
    {
        Lookup::Found(r) => {
            if &r.advertised_price.amount != amount {
                price.push(format!(
                    "get_vehicle says {}",
                    r.advertised_price.amount.display()
                ));
            }
            let there = r.provenance.sources.iter().any(|x| {
                &x.source_name == source
                    && &x.authority == authority
                    && &x.observed_at == observed_at
            });
            if !there {
                cited.push(format!(
                    "{source} ({authority}, {observed_at}) is not a source of the vehicle record"
                ));
            }
        }
        Lookup::NotFound => price.push("get_vehicle does not find the unit".into()),
        Lookup::Unreadable(code) => price.push(format!("get_vehicle answered {code}")),
    }
    if let Some((d, _)) = g.disclosure(&v.rooftop_id, &v.vehicle_id, None).await?
        && &d.advertised_price.amount != amount
    {
        price.push(format!(
            "the disclosure says {}",
            d.advertised_price.amount.display()
        ));
    }
    Ok(vec![
        Check::judge(
            Prc,
            "PRC-PRICE-MATCHES",
            price,
            "the price agrees across get_vehicle and get_disclosure",
        ),
        Check::judge(
            Cit,
            "CIT-PRICE-SOURCE",
            cited,
            "the named source, its authority and time are the vehicle record's",
        ),
    ])
}
