//! Price and fee questions (AUD-06 to AUD-09, AUD-17), answered from
//! `get_disclosure` and `get_vehicle`. The helpers that read and check a
//! disclosure are shared with the offer questions (`offers`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Cit, Fee, Prc, Rsk, unanswerable};
use crate::audit::agent::Session;
use crate::audit::answer::{Answer, Claim, Fact, Outcome, RiskFlag};
use crate::audit::grade::{Check, Grader, Lookup, disclosure_fee_problems, unknown_totalled};
use crate::audit::subjects::Subjects;
use crate::audit::wire::{self, Disclosure, Money, Vehicle};
use crate::client::ClientError;

pub(super) fn finish(session: &Session<'_>, mut a: Answer) -> Answer {
    a.reads = session.reads.clone();
    a
}

/// The subject's disclosure as the agent reads it, with the flags any
/// pricing answer raises from it (a stale record; a record that gives an
/// amount to an unknown).
pub(super) async fn read_disclosure(
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

/// What every question about the priced subject's disclosure starts from:
/// the answer begun, the disclosure, its citation and the subject.
pub(super) type PricedRead<'s> = (
    Answer,
    Disclosure,
    Option<crate::audit::answer::Citation>,
    &'s Vehicle,
);

/// The prologue of every question about the priced subject's disclosure;
/// `Err` with the reason when there is no subject or no disclosure (the
/// question is then unanswerable).
pub(super) async fn priced_disclosure<'s>(
    session: &mut Session<'_>,
    s: &'s Subjects,
    jurisdiction: Option<&Value>,
) -> Result<Result<PricedRead<'s>, String>, ClientError> {
    let Some(vehicle) = s.priced.as_ref() else {
        return Ok(Err("no vehicle to ask about".into()));
    };
    let mut answer = Answer::new(Vec::new());
    let (read, disclosure) =
        match read_disclosure(session, vehicle, jurisdiction, &mut answer).await? {
            Ok(x) => x,
            Err(why) => return Ok(Err(why)),
        };
    let cite = cite_disclosure(session, read, &disclosure);
    Ok(Ok((answer, disclosure, cite, vehicle)))
}

pub(super) fn cite_disclosure(
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
    let (mut a, d, cite, _) = match priced_disclosure(session, s, None).await? {
        Ok(x) => x,
        Err(why) => return Ok(unanswerable(session, why)),
    };
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
pub(super) async fn both_disclosures(
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
pub(super) fn record_checks(
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
    let (mut a, d, cite, _) = match priced_disclosure(session, s, None).await? {
        Ok(x) => x,
        Err(why) => return Ok(unanswerable(session, why)),
    };
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
    let (mut a, d, cite, _) = match priced_disclosure(session, s, None).await? {
        Ok(x) => x,
        Err(why) => return Ok(unanswerable(session, why)),
    };
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
    let (mut a, d, cite, _) = match priced_disclosure(session, s, s.jurisdiction.as_ref()).await? {
        Ok(x) => x,
        Err(why) => return Ok(unanswerable(session, why)),
    };
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
    // The named source against the vehicle record the agent read (a later
    // read may be a newer snapshot of the same facts, with a newer source).
    let evidence: Option<Vehicle> = a
        .claims
        .iter()
        .find(|c| matches!(c.fact, Fact::PriceSource { .. }))
        .and_then(|c| c.citation.as_ref())
        .and_then(|c| crate::audit::grade::cited_record(a, c))
        .and_then(|r| serde_json::from_value(r.clone()).ok());
    let mut cited = Vec::new();
    match &evidence {
        None => cited.push("the price's source does not cite a vehicle record".to_owned()),
        Some(r) => {
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
            if &r.advertised_price.amount != amount {
                cited.push("the price named is not the cited record's".into());
            }
        }
    }
    let mut price = Vec::new();
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
