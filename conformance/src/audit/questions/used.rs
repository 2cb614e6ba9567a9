//! The used-vehicle question (AUD-18), over DAP's optional profile
//! `dealeragent.used-vehicle.read/0.1`: evidence, never a verdict.

use serde_json::Value;

use super::{Inv, Rsk, unanswerable};
use crate::audit::agent::{Session, USED_DETAILS};
use crate::audit::answer::{Answer, Claim, Fact, RiskFlag};
use crate::audit::grade::{Check, Grader, Lookup};
use crate::audit::subjects::Subjects;
use crate::audit::wire::UsedDetails;
use crate::client::ClientError;

/// The accident statuses the shared summaries state.
fn accident_statuses(d: &UsedDetails) -> Vec<String> {
    d.history_reports
        .iter()
        .filter(|r| r.summary_sharing_authorized)
        .filter_map(|r| r.summary.as_ref())
        .filter_map(|s| s.get("accident_status").and_then(Value::as_str))
        .filter(|s| *s != "unknown")
        .map(str::to_owned)
        .collect()
}

/// Whether the sources disagree: a recorded discrepancy, or shared
/// summaries that state different accident histories.
fn conflicting(d: &UsedDetails) -> bool {
    let mut statuses = accident_statuses(d);
    statuses.sort();
    statuses.dedup();
    !d.discrepancies.is_empty() || statuses.len() > 1
}

/// AUD-18.
pub async fn history(session: &mut Session<'_>, s: &Subjects) -> Result<Answer, ClientError> {
    let Some(v) = &s.used else {
        return Ok(unanswerable(session, "no used vehicle to ask about".into()));
    };
    let (read, details) = session.used_details(&v.rooftop_id, &v.vehicle_id).await?;
    let Some(d) = details else {
        let why = format!("{USED_DETAILS} answered {}", session.error(read));
        return Ok(unanswerable(session, why));
    };
    let mut a = Answer::new(Vec::new());
    let reports: Vec<String> = d
        .history_reports
        .iter()
        .map(|r| {
            let summary = if r.summary_sharing_authorized {
                r.summary
                    .as_ref()
                    .and_then(|s| s.get("accident_status"))
                    .and_then(Value::as_str)
                    .map_or_else(
                        || "no summary given".to_owned(),
                        |x| format!("accidents: {}", x.replace('_', " ")),
                    )
            } else {
                "its summary may not be shared; ask the dealer for the report".to_owned()
            };
            format!("{} ({}): {summary}", r.provider_name, r.status)
        })
        .collect();
    let discrepancies: Vec<String> = d.discrepancies.iter().map(|x| x.field.clone()).collect();
    if conflicting(&d) {
        a.risk_flags.insert(RiskFlag::ConflictingEvidence);
    }
    if !d.freshness.current_at(session.received_at(read)) {
        a.risk_flags.insert(RiskFlag::StaleRecord);
    }
    a.claims.push(Claim {
        fact: Fact::History {
            vehicle_id: d.vehicle_id.clone(),
            reports: reports.clone(),
            discrepancies: discrepancies.clone(),
            odometer: d.odometer.reading.clone(),
        },
        citation: session.cite(read, "", &d.provenance, &d.freshness),
    });
    a.text = format!(
        "{}{} Odometer {} {} ({}). This is what the reports say, not a finding that the car is accident-free.",
        if reports.is_empty() {
            "No history report is on file.".to_owned()
        } else {
            format!("History reports: {}.", reports.join("; "))
        },
        if discrepancies.is_empty() {
            String::new()
        } else {
            format!(
                " The sources disagree on {}; neither is taken as the answer.",
                discrepancies.join(", ")
            )
        },
        d.odometer.reading.value,
        d.odometer.reading.unit,
        d.odometer.status
    );
    a.reads = session.reads.clone();
    Ok(a)
}

/// Grading of AUD-18.
pub async fn grade_history(
    a: &Answer,
    g: &mut Grader<'_>,
    s: &Subjects,
) -> Result<Vec<Check>, ClientError> {
    let Some(v) = &s.used else {
        return Ok(Vec::new());
    };
    let record = match g.used_details(&v.rooftop_id, &v.vehicle_id).await? {
        Lookup::Found(d) => Some(d),
        Lookup::NotFound | Lookup::Unreadable(_) => None,
    };
    let stated = a.claims.iter().find_map(|c| match &c.fact {
        Fact::History {
            discrepancies,
            odometer,
            ..
        } => Some((discrepancies, odometer)),
        _ => None,
    });
    let mut out = Vec::new();
    let Some(d) = record else {
        out.push(Check::judge(
            Inv,
            "INV-HISTORY-AS-READ",
            vec![format!("the grader's own {USED_DETAILS} did not answer")],
            "",
        ));
        return Ok(out);
    };
    let mut read_problems = Vec::new();
    let mut odometer_problems = Vec::new();
    match stated {
        None => read_problems.push("the answer states no history".to_owned()),
        Some((discrepancies, odometer)) => {
            let fields: Vec<String> = d.discrepancies.iter().map(|x| x.field.clone()).collect();
            if discrepancies != &fields {
                read_problems.push("the discrepancies stated are not the record's".into());
            }
            match g
                .vehicle(&v.rooftop_id, "vehicle_id", &v.vehicle_id)
                .await?
            {
                Lookup::Found(r) if r.odometer.as_ref() != Some(odometer) => {
                    odometer_problems.push(format!(
                        "the used-vehicle odometer ({} {}) differs from get_vehicle's",
                        odometer.value, odometer.unit
                    ));
                }
                Lookup::Found(_) => {}
                Lookup::NotFound => {
                    odometer_problems.push("get_vehicle does not find the unit".into())
                }
                Lookup::Unreadable(code) => {
                    odometer_problems.push(format!("get_vehicle answered {code}"));
                }
            }
        }
    }
    let unshared: Vec<String> = d
        .history_reports
        .iter()
        .filter(|r| !r.summary_sharing_authorized && r.summary.is_some())
        .map(|r| format!("{} gives a summary it may not share", r.provider_name))
        .collect();
    read_problems.extend(unshared);
    out.push(Check::judge(
        Inv,
        "INV-HISTORY-AS-READ",
        read_problems,
        "reports and discrepancies as the record states them, no unshared summary",
    ));
    out.push(Check::judge(
        Inv,
        "INV-ODOMETER-AGREES",
        odometer_problems,
        "the odometer agrees between the used-vehicle evidence and get_vehicle",
    ));
    if conflicting(&d) {
        out.push(Check::judge(
            Rsk,
            "RSK-CONFLICT-FLAGGED",
            if a.flagged(RiskFlag::ConflictingEvidence) {
                Vec::new()
            } else {
                vec!["sources that disagree are not flagged".into()]
            },
            "disagreeing history sources are flagged, neither taken as the answer",
        ));
    }
    Ok(out)
}
