//! DAPC-PRC: pricing uncertainty (DAP 0.1 pricing.disclosure): no single
//! "price", exact money, unknown never shown as an amount, conditional
//! offers never folded into the advertised price, honest government
//! charges, and no quote.

use serde_json::Value;

use super::Check;
use crate::client::{ClientError, Exchange};
use crate::context::{Ctx, DISCLOSURE};
use crate::report::Outcome;

const G: &str = "pricing";

pub const CHECKS: &[Check] = &[
    Check {
        id: "DAPC-PRC-001",
        group: G,
        title: "a disclosure has no member named price",
        section: "DAP 0.1 pricing (one-price problem)",
        keyword: "MUST NOT",
        text: "get_disclosure output contains no member named `price` anywhere",
        required: true,
        roles: &[],
        run: |cx| Box::pin(no_price_member(cx)),
    },
    Check {
        id: "DAPC-PRC-002",
        group: G,
        title: "money is exact: integer minor units and an ISO currency",
        section: "DAP 0.1 common (money)",
        keyword: "MUST",
        text: "every money object has an integer amount_minor and an ISO 4217 currency",
        required: true,
        roles: &[],
        run: |cx| Box::pin(exact_money(cx)),
    },
    Check {
        id: "DAPC-PRC-003",
        group: G,
        title: "anything unknown carries no amount",
        section: "DAP 0.1 pricing (uncertainty)",
        keyword: "MUST NOT",
        text: "an object marked unknown (status or amount_status) has no amount, total or amount_minor: zero never stands in for unknown",
        required: true,
        roles: &[],
        run: |cx| Box::pin(unknown_has_no_amount(cx)),
    },
    Check {
        id: "DAPC-PRC-004",
        group: G,
        title: "conditional adjustments are not folded into the advertised price",
        section: "DAP 0.1 pricing (advertised price, conditional adjustments)",
        keyword: "MUST NOT",
        text: "the disclosure's advertised price is the generally available one, equal to the vehicle's advertised price, with conditional adjustments listed apart",
        required: true,
        roles: &[],
        run: |cx| Box::pin(conditional_apart(cx)),
    },
    Check {
        id: "DAPC-PRC-005",
        group: G,
        title: "government charges are classified honestly",
        section: "DAP 0.1 pricing (government charges)",
        keyword: "MUST",
        text: "government charges have a status in {unknown, estimated, calculated, not_applicable}; an unknown status has no amounts",
        required: true,
        roles: &[],
        run: |cx| Box::pin(government_charges(cx)),
    },
    Check {
        id: "DAPC-PRC-006",
        group: G,
        title: "a disclosure is not labelled a quote or out-the-door total",
        section: "DAP 0.1 pricing (disclosure is not a quote)",
        keyword: "MUST NOT",
        text: "no member or label presents the disclosure as a quote or an out-the-door price",
        required: true,
        roles: &[],
        run: |cx| Box::pin(not_a_quote(cx)),
    },
];

/// The successful disclosures the suite obtained, with their exchanges.
/// One extra call with a buyer jurisdiction (from the rooftop's address)
/// exercises estimated government charges where a dealer publishes them.
async fn disclosures(cx: &Ctx) -> Result<Vec<(Exchange, Value)>, ClientError> {
    let mut out = Vec::new();
    for s in &cx.samples {
        if let Some(ex) = &s.disclosure
            && let Some(d) = ex.tool_ok()
        {
            out.push((ex.clone(), d.clone()));
        }
    }
    if let Some(s) = cx.samples.iter().find(|s| s.disclosure.is_some()) {
        let address = cx
            .dealers
            .get(&s.organization_id)
            .and_then(|d| d.get("rooftops"))
            .and_then(Value::as_array)
            .and_then(|r| {
                r.iter()
                    .find(|r| r.get("rooftop_id").and_then(Value::as_str) == Some(&s.rooftop_id))
            })
            .and_then(|r| r.get("address"))
            .cloned();
        if let Some(a) = address
            && let Some(country) = a.get("country").and_then(Value::as_str)
        {
            let mut jurisdiction = serde_json::json!({"country": country});
            if let Some(region) = a.get("region").and_then(Value::as_str) {
                jurisdiction["subdivision"] = Value::String(format!("{country}-{region}"));
            }
            let ex = cx
                .call(
                    &s.caller,
                    DISCLOSURE,
                    serde_json::json!({"organization_id": s.organization_id, "rooftop_id": s.rooftop_id,
                        "vehicle_id": s.vehicle_id, "jurisdiction": jurisdiction}),
                )
                .await?;
            if let Some(d) = ex.tool_ok() {
                let d = d.clone();
                out.push((ex, d));
            }
        }
    }
    Ok(out)
}

fn none_found(cx: &Ctx) -> String {
    if cx.samples.is_empty() {
        "no vehicle was found to disclose".to_owned()
    } else {
        let callers: Vec<String> = cx.samples.iter().map(|s| s.caller.label()).collect();
        format!(
            "no get_disclosure call succeeded (callers: {})",
            callers.join(", ")
        )
    }
}

/// Visit every object in `v` with its JSON pointer.
fn objects<'a>(
    v: &'a Value,
    path: String,
    out: &mut Vec<(String, &'a serde_json::Map<String, Value>)>,
) {
    match v {
        Value::Object(map) => {
            out.push((path.clone(), map));
            for (k, child) in map {
                objects(child, format!("{path}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                objects(child, format!("{path}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn all_objects(v: &Value) -> Vec<(String, &serde_json::Map<String, Value>)> {
    let mut out = Vec::new();
    objects(v, String::new(), &mut out);
    out
}

async fn no_price_member(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let list = disclosures(cx).await?;
    if list.is_empty() {
        return Ok(o.skip(none_found(cx)));
    }
    let mut problems = Vec::new();
    for (ex, d) in &list {
        for (path, map) in all_objects(d) {
            if map.contains_key("price") {
                o.saw_first(ex);
                problems.push(format!("member `price` at {path}/price"));
            }
        }
    }
    Ok(o.conclude(&problems, format!("{} disclosures checked", list.len())))
}

async fn exact_money(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let list = disclosures(cx).await?;
    if list.is_empty() {
        return Ok(o.skip(none_found(cx)));
    }
    let mut problems = Vec::new();
    let mut count = 0usize;
    for (ex, d) in &list {
        for (path, map) in all_objects(d) {
            let Some(amount) = map.get("amount_minor") else {
                continue;
            };
            count += 1;
            let mut bad = Vec::new();
            if !(amount.is_i64() || amount.is_u64()) {
                bad.push(format!("amount_minor {amount} is not an integer"));
            }
            match map.get("currency").and_then(Value::as_str) {
                Some(code) if iso_currency::Currency::from_code(code).is_some() => {}
                other => bad.push(format!("currency {other:?} is not ISO 4217")),
            }
            if !bad.is_empty() {
                o.saw_first(ex);
                problems.push(format!("{path}: {}", bad.join(", ")));
            }
        }
    }
    Ok(o.conclude(&problems, format!("{count} money objects exact")))
}

/// Whether an object says its amount is unknown.
fn marked_unknown(map: &serde_json::Map<String, Value>) -> bool {
    ["status", "amount_status"]
        .iter()
        .any(|k| map.get(*k).and_then(Value::as_str) == Some("unknown"))
}

/// The members of an unknown-marked object that carry an amount.
fn amounts_in(map: &serde_json::Map<String, Value>) -> Vec<&'static str> {
    let mut found = Vec::new();
    for key in ["amount", "amount_minor", "total"] {
        if map.get(key).is_some_and(|v| !v.is_null()) {
            found.push(key);
        }
    }
    if map
        .get("lines")
        .and_then(Value::as_array)
        .is_some_and(|l| l.iter().any(|x| x.get("amount").is_some()))
    {
        found.push("lines[].amount");
    }
    found
}

async fn unknown_has_no_amount(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let list = disclosures(cx).await?;
    if list.is_empty() {
        return Ok(o.skip(none_found(cx)));
    }
    let mut problems = Vec::new();
    let mut unknowns = 0usize;
    for (ex, d) in &list {
        for (path, map) in all_objects(d) {
            if !marked_unknown(map) {
                continue;
            }
            unknowns += 1;
            let found = amounts_in(map);
            if !found.is_empty() {
                o.saw_first(ex);
                problems.push(format!(
                    "{path} is marked unknown but carries {}",
                    found.join(", ")
                ));
            }
        }
    }
    Ok(o.conclude(
        &problems,
        format!("{unknowns} unknown-marked objects carry no amount"),
    ))
}

/// The amount of a vehicle's advertised price (`advertised_price.amount`).
fn advertised(v: &Value) -> Option<&Value> {
    v.get("advertised_price")?.get("amount")
}

async fn conditional_apart(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let mut problems = Vec::new();
    let mut compared = 0usize;
    for s in &cx.samples {
        let Some(ex) = &s.disclosure else { continue };
        let Some(d) = ex.tool_ok() else { continue };
        compared += 1;
        let ap = d.get("advertised_price");
        if ap
            .and_then(|a| a.get("availability"))
            .and_then(Value::as_str)
            != Some("generally_available")
        {
            o.saw_first(ex);
            problems.push(format!(
                "{}: advertised_price.availability is not generally_available",
                s.vehicle_id
            ));
        }
        // The vehicle's own advertised price, from get_vehicle or search.
        let vehicle = s
            .get_vehicle
            .as_ref()
            .and_then(Exchange::tool_ok)
            .unwrap_or(&s.search_record);
        if advertised(d) != advertised(vehicle) {
            o.saw_first(ex);
            problems.push(format!(
                "{}: the disclosure's advertised price {:?} differs from the vehicle's {:?} (an adjustment folded in?)",
                s.vehicle_id,
                advertised(d),
                advertised(vehicle)
            ));
        }
        if let Some(adjustments) = d.get("conditional_adjustments").and_then(Value::as_array) {
            for a in adjustments {
                let criteria = a.get("criteria").and_then(Value::as_array);
                if criteria.is_none_or(Vec::is_empty) {
                    problems.push(format!(
                        "{}: conditional adjustment {:?} has no eligibility criteria",
                        s.vehicle_id,
                        a.get("adjustment_id")
                    ));
                }
            }
        }
    }
    if compared == 0 {
        return Ok(o.skip(none_found(cx)));
    }
    Ok(o.conclude(
        &problems,
        format!("{compared} disclosures keep adjustments apart"),
    ))
}

async fn government_charges(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let list = disclosures(cx).await?;
    if list.is_empty() {
        return Ok(o.skip(none_found(cx)));
    }
    let mut problems = Vec::new();
    let mut statuses = std::collections::BTreeSet::new();
    for (ex, d) in &list {
        let Some(g) = d.get("government_charges").and_then(Value::as_object) else {
            o.saw_first(ex);
            problems.push("a disclosure has no government_charges object".to_owned());
            continue;
        };
        let status = g.get("status").and_then(Value::as_str).unwrap_or("");
        statuses.insert(status.to_owned());
        if !matches!(
            status,
            "unknown" | "estimated" | "calculated" | "not_applicable"
        ) {
            o.saw_first(ex);
            problems.push(format!(
                "government_charges.status {status:?} is not a DAP status"
            ));
        }
        if status == "unknown" {
            let found = amounts_in(g);
            if !found.is_empty() {
                o.saw_first(ex);
                problems.push(format!(
                    "government charges are unknown but carry {}",
                    found.join(", ")
                ));
            }
        }
    }
    let shown: Vec<String> = statuses.into_iter().collect();
    Ok(o.conclude(&problems, format!("statuses seen: {}", shown.join(", "))))
}

async fn not_a_quote(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let list = disclosures(cx).await?;
    if list.is_empty() {
        return Ok(o.skip(none_found(cx)));
    }
    let banned = ["quote", "out_the_door", "otd", "out-the-door"];
    let mut problems = Vec::new();
    for (ex, d) in &list {
        for (path, map) in all_objects(d) {
            for key in map.keys() {
                let k = key.to_ascii_lowercase();
                if banned.iter().any(|b| k.contains(b)) {
                    o.saw_first(ex);
                    problems.push(format!("member {path}/{key} presents a quote"));
                }
            }
            if let Some(label) = map.get("label").and_then(Value::as_str) {
                let l = label.to_ascii_lowercase();
                if l.contains("quote") || l.contains("out-the-door") || l.contains("out the door") {
                    o.saw_first(ex);
                    problems.push(format!("label at {path} reads {label:?}"));
                }
            }
        }
    }
    Ok(o.conclude(&problems, format!("{} disclosures checked", list.len())))
}
