//! `aap_dealer_information` (profile `dealergateway.aap-compat/0.1`): AAP's
//! `dealer.information` skill as a compatibility adapter over
//! `dealeragent.dealer.get` (docs/compatibility.md).
//!
//! The DAP tool's own view decides what the caller may see
//! (`dealer_get::organization_view`: invisible rooftops are left out, an
//! invisible dealer is not found, only public contacts leave the gateway,
//! DAP-CORE-029..031). AAP's rooftop has no id, provenance or freshness:
//! the rooftop ids stay out (AAP names rooftops by name), and the DAP
//! provenance and freshness of the directory data go into `message`.

use serde_json::{Map, Value, json};

use super::args::AapDealerInformationArgs;
use super::{ToolContext, ToolError, aap_map, dealer_get};

pub const NAME: &str = "aap_dealer_information";

/// The tool (see [`super::Tool`]).
pub struct AapDealerInformation;

impl super::Tool for AapDealerInformation {
    const NAME: &'static str = NAME;
    type Args = AapDealerInformationArgs;
    type Output = Value;

    async fn call(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let (directory, organization_id) = aap_map::dealer(ctx, args.dealer_id.as_deref()).await?;
        let dap =
            dealer_get::organization_view(&directory, &ctx.principal, &organization_id, None)?;
        Ok(response(&dap))
    }
}

/// The AAP `dealer.information.response` of a DAP `dealerOrganization`.
pub fn response(dap: &Value) -> Value {
    let rooftops: Vec<Value> = dap["rooftops"]
        .as_array()
        .into_iter()
        .flatten()
        .map(rooftop)
        .collect();
    let freshness = &dap["freshness"];
    let message = format!(
        "Compatibility view of DAP dealer {id} (dealeragent.dealer.get), not native DAP. Directory data {authority}, observed {observed}, freshness {state} until {until}.",
        id = dap["organization_id"].as_str().unwrap_or_default(),
        authority = dap["provenance"]["authority_status"]
            .as_str()
            .unwrap_or("unknown"),
        observed = freshness["observed_at"].as_str().unwrap_or("unknown"),
        state = freshness["state"].as_str().unwrap_or("unknown"),
        until = freshness["valid_until"].as_str().unwrap_or("unknown"),
    );
    json!({
        "type": "dealer.information.response",
        "data": {"name": dap["name"], "rooftops": rooftops},
        "message": message,
    })
}

/// Days of a DAP hours list with exactly one interval, as AAP weekly
/// hours. A day with several intervals (a lunch break) has no honest AAP
/// form and is left out, as is a day DAP does not list (AAP's `null` says
/// closed, which DAP does not assert).
fn weekly(hours: &Value) -> Option<Value> {
    let mut per_day: Map<String, Value> = Map::new();
    let mut repeated: Vec<String> = Vec::new();
    for interval in hours.as_array().into_iter().flatten() {
        let (Some(day), Some(open), Some(close)) = (
            interval["day"].as_str(),
            interval["opens"].as_str(),
            interval["closes"].as_str(),
        ) else {
            continue;
        };
        if per_day.contains_key(day) {
            repeated.push(day.to_owned());
        }
        per_day.insert(day.to_owned(), json!({"open": open, "close": close}));
    }
    for day in repeated {
        per_day.remove(&day);
    }
    // AAP's HH:MM pattern has no 24:00.
    per_day.retain(|_, v| v["close"].as_str().is_some_and(|c| c < "24:00"));
    (!per_day.is_empty()).then_some(Value::Object(per_day))
}

fn rooftop(dap: &Value) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), dap["name"].clone());
    for member in ["legal_name", "website", "timezone"] {
        if let Some(v) = dap.get(member) {
            out.insert(member.into(), v.clone());
        }
    }
    let contacts = |channel: &str| -> Vec<Value> {
        dap["contacts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["channel"] == json!(channel))
            .map(|c| json!({"name": c["department"], "value": c["value"]}))
            .collect()
    };
    let emails = contacts("email");
    if !emails.is_empty() {
        out.insert("emails".into(), Value::Array(emails));
    }
    let phones = contacts("phone");
    if !phones.is_empty() {
        out.insert("phones".into(), Value::Array(phones));
    }
    let a = &dap["address"];
    let mut address = Map::new();
    let lines = a["lines"].as_array().cloned().unwrap_or_default();
    if let Some(first) = lines.first() {
        address.insert("address_line_1".into(), first.clone());
    }
    if let Some(second) = lines.get(1) {
        address.insert("address_line_2".into(), second.clone());
    }
    for (aap, dap_member) in [
        ("city", "locality"),
        ("state", "region"),
        ("zip", "postal_code"),
        ("country", "country"),
    ] {
        if let Some(v) = a.get(dap_member) {
            address.insert(aap.into(), v.clone());
        }
    }
    out.insert("address".into(), Value::Object(address));
    let mut schedules = Vec::new();
    if let Some(value) = weekly(&dap["hours"]) {
        schedules.push(json!({"name": "general", "value": value}));
    }
    if let Some(departments) = dap["extensions"]["dealergateway.department-hours"].as_object() {
        for (department, hours) in departments {
            if let Some(value) = weekly(hours) {
                schedules.push(json!({"name": department, "value": value}));
            }
        }
    }
    if !schedules.is_empty() {
        out.insert("schedules".into(), Value::Array(schedules));
    }
    if let Some(departments) = dap["departments"].as_array() {
        out.insert("capabilities".into(), Value::Array(departments.clone()));
    }
    Value::Object(out)
}
