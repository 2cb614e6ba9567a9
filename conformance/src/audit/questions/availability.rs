//! Availability questions: may a unit be presented as available now, what
//! is its status, and when was it last verified (AUD-13 to AUD-16).

use super::{
    Avl, Inv, availability_claims, availability_sentence, grade_availability_reports, unanswerable,
};
use crate::audit::agent::Session;
use crate::audit::answer::{Answer, Claim, Fact, RiskFlag};
use crate::audit::grade::{Check, Grader};
use crate::audit::subjects::Subjects;
use crate::audit::wire::{AvailabilityResult, Vehicle};
use crate::client::ClientError;

fn finish(session: &Session<'_>, mut a: Answer) -> Answer {
    a.reads = session.reads.clone();
    a
}

/// AUD-13 (a unit listed as available) and AUD-14 (the stalest listing):
/// the agent asks the availability tool, the one DAP makes authoritative.
pub async fn available_now(
    session: &mut Session<'_>,
    subject: Option<&Vehicle>,
) -> Result<Answer, ClientError> {
    let Some(v) = subject else {
        return Ok(unanswerable(session, "no vehicle to ask about".into()));
    };
    let (read, result) = session.verify(&v.rooftop_id, &v.vehicle_id).await?;
    let Some(result) = result else {
        let why = format!("the availability check answered {}", session.error(read));
        return Ok(unanswerable(session, why));
    };
    let mut a = Answer::new(Vec::new());
    let now = availability_claims(session, read, &result, &mut a);
    a.text = availability_sentence(&result, now);
    Ok(finish(session, a))
}

/// Grading of AUD-13 and AUD-14.
pub async fn grade_available_now(
    a: &Answer,
    g: &mut Grader<'_>,
    subject: Option<&Vehicle>,
) -> Result<Vec<Check>, ClientError> {
    let Some(v) = subject else {
        return Ok(Vec::new());
    };
    let mut out = grade_availability_reports(a);
    out.push(super::inventory::grade_not_off_sale_when_available(a, g, &v.rooftop_id).await?);
    Ok(out)
}

/// AUD-15: the listing's status, then the availability check's.
pub async fn sold_in_transit_or_on_lot(
    session: &mut Session<'_>,
    s: &Subjects,
) -> Result<Answer, ClientError> {
    let Some(v) = &s.not_on_sale else {
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
    let at = session.received_at(read);
    let listed = &record.availability;
    a.claims.push(Claim {
        fact: Fact::AvailabilityStatus {
            vehicle_id: record.vehicle_id.clone(),
            status: listed.status.clone(),
            authority_status: listed.authority_status.clone(),
            observed_at: listed.observed_at.clone(),
            verified: false,
        },
        citation: session.cite(read, "", &record.provenance, &record.freshness),
    });
    if !record.freshness.current_at(at) {
        a.risk_flags.insert(RiskFlag::StaleRecord);
    }
    let (check, result) = session
        .verify(&record.rooftop_id, &record.vehicle_id)
        .await?;
    let checked = match result {
        Some(r) => {
            let now = availability_claims(session, check, &r, &mut a);
            availability_sentence(&r, now)
        }
        None => {
            a.risk_flags.insert(RiskFlag::AvailabilityUnverified);
            format!("The availability check answered {}.", session.error(check))
        }
    };
    a.text = format!(
        "The dealer's listing says {} ({} at {}). {checked}",
        listed.status.replace('_', " "),
        listed.authority_status,
        listed.observed_at
    );
    Ok(finish(session, a))
}

/// Grading of AUD-15: the statuses reported are the records', and the
/// listing's status agrees with what search says of the same unit.
pub async fn grade_sold_in_transit_or_on_lot(
    a: &Answer,
    g: &mut Grader<'_>,
    s: &Subjects,
) -> Result<Vec<Check>, ClientError> {
    let Some(v) = &s.not_on_sale else {
        return Ok(Vec::new());
    };
    let mut out = grade_availability_reports(a);
    out.push(super::inventory::grade_not_off_sale_when_available(a, g, &v.rooftop_id).await?);
    // The listing status as the answer gives it (from get_vehicle) against
    // the same unit found by search.
    let stated = a.claims.iter().find_map(|c| match (&c.fact, &c.citation) {
        (Fact::AvailabilityStatus { status, .. }, Some(cit))
            if cit.tool == crate::context::GET_VEHICLE =>
        {
            Some(status.clone())
        }
        _ => None,
    });
    let selector = match (&v.vin, &v.stock_number) {
        (Some(vin), _) => serde_json::json!({"vin": vin}),
        (None, Some(stock)) => serde_json::json!({"stock_number": stock}),
        (None, None) => serde_json::json!({}),
    };
    let mut problems = Vec::new();
    match (stated, g.search(selector, None, 5).await?) {
        (None, _) => problems.push("the answer gives no listing status".to_owned()),
        (Some(status), Some(page)) => {
            match page.vehicles.iter().find(|x| x.vehicle_id == v.vehicle_id) {
                Some(hit) if hit.availability.status != status => problems.push(format!(
                    "search lists the unit as {}, the answer as {status}",
                    hit.availability.status
                )),
                Some(_) => {}
                None => problems.push("search does not find the unit".into()),
            }
        }
        (Some(_), None) => problems.push("a search for the unit did not answer".into()),
    }
    out.push(Check::judge(
        Inv,
        "INV-STATUS-AGREES",
        problems,
        "the listing status agrees between get_vehicle and search",
    ));
    Ok(out)
}

/// AUD-16.
pub async fn last_verified(session: &mut Session<'_>, s: &Subjects) -> Result<Answer, ClientError> {
    let Some(v) = &s.in_stock else {
        return Ok(unanswerable(session, "no vehicle to ask about".into()));
    };
    let (read, result) = session.verify(&v.rooftop_id, &v.vehicle_id).await?;
    let Some(result) = result else {
        let why = format!("the availability check answered {}", session.error(read));
        return Ok(unanswerable(session, why));
    };
    let mut a = Answer::new(Vec::new());
    let citation = session.cite(read, "", &result.provenance, &result.freshness);
    let av = &result.availability;
    let authoritative = av.authority_status == "authoritative";
    let by = citation
        .as_ref()
        .map_or_else(|| "an unnamed source".to_owned(), |c| c.source_name.clone());
    a.claims.push(Claim {
        fact: Fact::LastVerified {
            vehicle_id: result.vehicle_id.clone(),
            observed_at: av.observed_at.clone(),
            source_name: by.clone(),
            authoritative,
        },
        citation,
    });
    if !authoritative {
        a.risk_flags.insert(RiskFlag::AvailabilityUnverified);
    }
    if !result.freshness.current_at(session.received_at(read)) {
        a.risk_flags.insert(RiskFlag::StaleRecord);
    }
    a.text = if authoritative {
        format!(
            "The dealer's system ({by}) last verified it at {}: {}.",
            av.observed_at, av.status
        )
    } else {
        format!(
            "It has not been verified by the dealer's system. The latest word is the dealer's own listing ({by}, {}) at {}.",
            av.authority_status, av.observed_at
        )
    };
    Ok(finish(session, a))
}

/// Grading of AUD-16: the time, source and authority stated are the
/// check's, and "verified" is said only of an authoritative check backed by
/// a dealer-system source.
pub async fn grade_last_verified(
    a: &Answer,
    _g: &mut Grader<'_>,
    s: &Subjects,
) -> Result<Vec<Check>, ClientError> {
    let Some(v) = &s.in_stock else {
        return Ok(Vec::new());
    };
    let mut problems = Vec::new();
    let stated = a.claims.iter().find_map(|c| match (&c.fact, &c.citation) {
        (
            Fact::LastVerified {
                observed_at,
                source_name,
                authoritative,
                ..
            },
            Some(cit),
        ) => Some((observed_at, source_name, *authoritative, cit)),
        _ => None,
    });
    match stated {
        None => problems.push(format!(
            "no last-verified time is stated for {}",
            v.vehicle_id
        )),
        Some((observed_at, source, authoritative, cit)) => {
            let result: Option<AvailabilityResult> = a
                .reads
                .get(cit.read)
                .filter(|r| r.tool == crate::context::VERIFY)
                .and_then(|r| r.ok.clone())
                .and_then(|ok| serde_json::from_value(ok).ok());
            match result {
                None => problems.push("the time is not taken from an availability check".into()),
                Some(r) => {
                    if &r.availability.observed_at != observed_at {
                        problems.push(format!(
                            "the check observed at {}, the answer says {observed_at}",
                            r.availability.observed_at
                        ));
                    }
                    if !r
                        .provenance
                        .sources
                        .iter()
                        .any(|x| &x.source_name == source)
                    {
                        problems.push(format!("{source} is not a source of the check"));
                    }
                    let backed = r.availability.authority_status == "authoritative"
                        && r.provenance
                            .sources
                            .iter()
                            .any(|x| x.authority == "authoritative_dealer_system");
                    if authoritative && !backed {
                        problems.push(
                            "called verified by the dealer's system without a dealer-system source"
                                .into(),
                        );
                    }
                    if !authoritative && r.availability.authority_status == "authoritative" {
                        problems.push("an authoritative check is reported as unverified".into());
                    }
                }
            }
        }
    }
    Ok(vec![Check::judge(
        Avl,
        "AVL-LAST-VERIFIED",
        problems,
        "the time, source and authority given are the availability check's",
    )])
}
