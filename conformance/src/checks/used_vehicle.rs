//! DAPC-UVP: the optional used-vehicle profile
//! `dealeragent.used-vehicle.read/0.1` (DAP 0.1 used-vehicles.md). Run only
//! when the manifest advertises it; then they are required (a gateway that
//! claims the profile must pass them), otherwise they are skipped without
//! counting against a claim ([`PROFILE`], see `Check::execute`).
//!
//! The disclosures come from the used, certified and demo vehicles the
//! anonymous walks found (at most [`MAX_DISCLOSURES`]), each read by the
//! best caller for its rooftop and compared with the vehicle's own search
//! summary (`used_vehicle`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Check;
use crate::client::{Caller, ClientError, Exchange};
use crate::context::{Ctx, SEARCH, normalized_error};
use crate::report::Outcome;
use crate::schemas::Kind;

const G: &str = "used-vehicle";

/// The profile these checks belong to.
pub const PROFILE: &str = "dealeragent.used-vehicle.read/0.1";
pub const USED_DETAILS: &str = "dealeragent.inventory.get_used_vehicle_details";
/// Most disclosures read per run.
pub const MAX_DISCLOSURES: usize = 12;

pub const CHECKS: &[Check] = &[
    Check {
        id: "DAPC-UVP-001",
        group: G,
        title: "used-vehicle disclosures validate",
        section: "DAP 0.1 used-vehicles 1; schemas (used-vehicle)",
        keyword: "MUST",
        text: "get_used_vehicle_details answers a published used, certified or demo vehicle with a disclosure that validates against the DAP usedVehicleDetails schema",
        required: true,
        roles: &[],
        run: |cx| Box::pin(disclosures_validate(cx)),
    },
    Check {
        id: "DAPC-UVP-002",
        group: G,
        title: "unknown and conflicting evidence are kept as such",
        section: "DAP 0.1 used-vehicles 4-5 (DAP-UV-012, 016, 017, 019, 020)",
        keyword: "MUST NOT",
        text: "no summary where sharing is not authorized or the report is not available; a vehicle whose history is conflicting has discrepancies naming two sources; an unknown, unavailable or restricted history never becomes an available report; an unknown certification never becomes a certification",
        required: true,
        roles: &[],
        run: |cx| Box::pin(evidence_kept(cx)),
    },
    Check {
        id: "DAPC-UVP-003",
        group: G,
        title: "a foreign used vehicle reads as absent",
        section: "DAP 0.1 used-vehicles 1 (DAP-UV-002); section 7",
        keyword: "MUST",
        text: "get_used_vehicle_details of a used vehicle of an unpublished rooftop gets, anonymously and under another grant, the same not-found as a made-up rooftop and vehicle",
        required: true,
        roles: &["partner", "inventory"],
        run: |cx| Box::pin(foreign_absent(cx)),
    },
    Check {
        id: "DAPC-UVP-004",
        group: G,
        title: "a new vehicle has no used-vehicle disclosure",
        section: "DAP 0.1 used-vehicles 1 (DAP-UV-001, DAP-UV-002)",
        keyword: "MUST",
        text: "get_used_vehicle_details of a published new vehicle answers the same not-found as a vehicle that does not exist",
        required: true,
        roles: &[],
        run: |cx| Box::pin(new_not_found(cx)),
    },
];

/// A walked vehicle: organization, rooftop and its search record.
fn walked<'a>(cx: &'a Ctx, conditions: &[&str]) -> Vec<(&'a str, &'a Value)> {
    let mut out = Vec::new();
    for walk in cx.walks.iter().filter(|w| w.caller == Caller::Anonymous) {
        for v in walk.vehicles() {
            let condition = v.get("condition").and_then(Value::as_str).unwrap_or("");
            if conditions.contains(&condition) {
                out.push((walk.organization_id.as_str(), v));
            }
        }
    }
    out
}

fn args(org: &str, v: &Value) -> Value {
    json!({
        "organization_id": org,
        "rooftop_id": v.get("rooftop_id").cloned().unwrap_or(Value::Null),
        "vehicle_id": v.get("vehicle_id").cloned().unwrap_or(Value::Null),
    })
}

/// The disclosures of the walked used vehicles: (search record, exchange).
async fn disclosures(cx: &Ctx) -> Result<Vec<(Value, Exchange)>, ClientError> {
    let mut out = Vec::new();
    for (org, v) in walked(cx, &["used", "certified", "demo"])
        .into_iter()
        .take(MAX_DISCLOSURES)
    {
        let rooftop = v.get("rooftop_id").and_then(Value::as_str).unwrap_or("");
        let ex = cx
            .call(&cx.reader_for(rooftop), USED_DETAILS, args(org, v))
            .await?;
        out.push((v.clone(), ex));
    }
    Ok(out)
}

async fn disclosures_validate(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let found = disclosures(cx).await?;
    if found.is_empty() {
        return Ok(o.skip("the anonymous walks found no used, certified or demo vehicle"));
    }
    let mut problems = Vec::new();
    let mut served = 0;
    for (v, ex) in &found {
        let id = v.get("vehicle_id").and_then(Value::as_str).unwrap_or("?");
        let Some(d) = ex.tool_ok() else {
            // The profile needs a reading and a dated tenure; a used unit
            // whose search record has neither may have no disclosure.
            if v.get("odometer").is_some() && v.get("used_vehicle").is_some() {
                o.saw_first(ex);
                problems.push(format!(
                    "{id}: a used vehicle with an odometer and a dated tenure got no disclosure ({})",
                    ex.dap_code().unwrap_or("not a tool result")
                ));
            }
            continue;
        };
        served += 1;
        o.saw(ex);
        for e in cx.schemas.errors(Kind::UsedVehicle, d) {
            problems.push(format!("{id}: {e}"));
        }
        if d.get("vehicle_id") != v.get("vehicle_id") || d.get("rooftop_id") != v.get("rooftop_id")
        {
            problems.push(format!("{id}: the disclosure is of another vehicle"));
        }
    }
    if served == 0 && problems.is_empty() {
        return Ok(o.skip("no walked used vehicle has an odometer and a dated tenure"));
    }
    Ok(o.conclude(
        &problems,
        format!(
            "{served} disclosure(s) valid against {}",
            cx.schemas.pointer(Kind::UsedVehicle)
        ),
    ))
}

async fn evidence_kept(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let found = disclosures(cx).await?;
    let mut problems = Vec::new();
    let mut judged = 0;
    let mut conflicting = 0;
    for (v, ex) in &found {
        let Some(d) = ex.tool_ok() else { continue };
        judged += 1;
        let id = v.get("vehicle_id").and_then(Value::as_str).unwrap_or("?");
        let before = problems.len();
        let reports = d
            .get("history_reports")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for (i, r) in reports.iter().enumerate() {
            let authorized = r.get("summary_sharing_authorized") == Some(&json!(true));
            let available = r.get("status") == Some(&json!("available"));
            if r.get("summary").is_some() && !(authorized && available) {
                problems.push(format!(
                    "{id}: history_reports/{i} carries a summary although {}",
                    if authorized {
                        "the report is not available"
                    } else {
                        "sharing is not authorized"
                    }
                ));
            }
        }
        let summary = v.get("used_vehicle");
        let status = summary
            .and_then(|s| s.get("history_report_status"))
            .and_then(Value::as_str);
        let discrepancies = d
            .get("discrepancies")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if status == Some("conflicting") {
            conflicting += 1;
            let named = discrepancies.iter().any(|x| {
                x.get("source_names")
                    .and_then(Value::as_array)
                    .is_some_and(|n| n.len() >= 2)
            });
            if !named {
                problems.push(format!(
                    "{id}: the search summary says conflicting, but the disclosure has no discrepancy naming two sources (a value was picked)"
                ));
            }
        }
        if matches!(status, Some("unknown" | "not_available" | "restricted"))
            && reports
                .iter()
                .any(|r| r.get("status") == Some(&json!("available")))
        {
            problems.push(format!(
                "{id}: the search summary's history status is {} but the disclosure shows an available report",
                status.unwrap_or("")
            ));
        }
        let certified = |t: Option<&str>| {
            matches!(
                t,
                Some("manufacturer_cpo" | "dealer_certified" | "third_party_certified")
            )
        };
        let summary_type = summary
            .and_then(|s| s.get("certification_type"))
            .and_then(Value::as_str);
        let disclosed_type = d
            .get("certification")
            .and_then(|c| c.get("type"))
            .and_then(Value::as_str);
        if !certified(summary_type) && certified(disclosed_type) {
            problems.push(format!(
                "{id}: the search summary's certification is {} but the disclosure claims {}",
                summary_type.unwrap_or("absent"),
                disclosed_type.unwrap_or("")
            ));
        }
        if problems.len() > before {
            o.saw_first(ex);
        }
    }
    if judged == 0 {
        return Ok(o.skip("no used-vehicle disclosure was obtained"));
    }
    Ok(o.conclude(
        &problems,
        format!("{judged} disclosure(s) keep unknown and conflicting evidence ({conflicting} conflicting)"),
    ))
}

/// A used vehicle of the partner's unpublished rooftop, found by the
/// partner itself.
async fn partner_used(cx: &Ctx) -> Result<Result<(String, String, String), String>, ClientError> {
    let Some(p) = cx.partner.as_ref() else {
        return Ok(Err(
            "the partner grant's manifest lists no rooftop the anonymous manifest lacks".into(),
        ));
    };
    let ex = cx
        .call(
            &Caller::role("partner"),
            SEARCH,
            json!({"organization_id": p.organization_id, "rooftop_ids": [p.rooftop_id],
                   "filters": {"condition": ["used", "certified", "demo"]}, "page": {"limit": 1}}),
        )
        .await?;
    let vehicle = ex
        .tool_ok()
        .and_then(|r| r.get("vehicles"))
        .and_then(|v| v.get(0))
        .and_then(|v| v.get("vehicle_id"))
        .and_then(Value::as_str);
    Ok(match vehicle {
        Some(v) => Ok((
            p.organization_id.clone(),
            p.rooftop_id.clone(),
            v.to_owned(),
        )),
        None => Err("the partner rooftop has no used vehicle to probe".into()),
    })
}

async fn foreign_absent(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let (org, rooftop, vehicle) = match partner_used(cx).await? {
        Ok(t) => t,
        Err(why) => return Ok(o.skip(why)),
    };
    let absent_args = json!({"organization_id": org, "rooftop_id": cx.absent("roof"), "vehicle_id": cx.absent("veh")});
    let mut problems = Vec::new();
    let mut answers = BTreeMap::new();
    for caller in [Caller::Anonymous, Caller::role("inventory")] {
        let real = cx
            .call(
                &caller,
                USED_DETAILS,
                json!({"organization_id": org, "rooftop_id": rooftop, "vehicle_id": vehicle}),
            )
            .await?;
        let absent = cx.call(&caller, USED_DETAILS, absent_args.clone()).await?;
        o.saw(&real);
        if !real.is_tool_error() {
            o.saw_first(&real);
            problems.push(format!(
                "{}: the foreign vehicle's disclosure was served",
                caller.label()
            ));
        } else if normalized_error(&real) != normalized_error(&absent) {
            problems.push(format!(
                "{}: foreign and absent answers differ: {} vs {}",
                caller.label(),
                crate::report::cap(&normalized_error(&real), 200),
                crate::report::cap(&normalized_error(&absent), 200)
            ));
        }
        answers.insert(caller.label(), real.dap_code().map(str::to_owned));
    }
    Ok(o.conclude(
        &problems,
        format!("identical to an absent vehicle for {answers:?}"),
    ))
}

async fn new_not_found(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let Some((org, v)) = walked(cx, &["new"]).into_iter().next() else {
        return Ok(o.skip("the anonymous walks found no new vehicle"));
    };
    let rooftop = v.get("rooftop_id").and_then(Value::as_str).unwrap_or("");
    let caller = cx.reader_for(rooftop);
    let real = cx.call(&caller, USED_DETAILS, args(org, v)).await?;
    let absent = cx
        .call(
            &caller,
            USED_DETAILS,
            json!({"organization_id": org, "rooftop_id": rooftop, "vehicle_id": cx.absent("veh")}),
        )
        .await?;
    o.saw(&real);
    o.saw(&absent);
    let problems = if !real.is_tool_error() {
        vec!["a new vehicle got a used-vehicle disclosure".to_owned()]
    } else if real.dap_code() != Some("dealeragent.resource.not_found") {
        vec![format!(
            "a new vehicle answered {} instead of dealeragent.resource.not_found",
            real.dap_code().unwrap_or("?")
        )]
    } else if normalized_error(&real) != normalized_error(&absent) {
        vec!["the new vehicle's not-found differs from an absent vehicle's".to_owned()]
    } else {
        Vec::new()
    };
    Ok(o.conclude(&problems, "not found, like an absent vehicle"))
}
