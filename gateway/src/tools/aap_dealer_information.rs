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

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::Value;

use super::args::AapDealerInformationArgs;
use super::output::{DealerOrganization, FreshnessState, ToolOutput};
use super::{ToolContext, ToolError, aap_map, dealer_get};
use crate::dap::{HoursInterval, Rooftop};

pub const NAME: &str = "aap_dealer_information";

/// The tool (see [`super::Tool`]).
pub struct AapDealerInformation;

impl super::Tool for AapDealerInformation {
    const NAME: &'static str = NAME;
    type Args = AapDealerInformationArgs;
    type Output = DealerInformationResponse;

    async fn call(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let (directory, organization_id) = aap_map::dealer(ctx, args.dealer_id.as_deref()).await?;
        let dap = dealer_get::organization(&directory, &ctx.principal, &organization_id, None)?;
        Ok(response(&dap))
    }
}

/// AAP `dealer.information.response` (`aapDealerInformationResponse`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DealerInformationResponse {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub data: DealerInformation,
    pub message: String,
}

impl ToolOutput for DealerInformationResponse {
    const OUTPUT: &'static str =
        "aap-dealer-information.schema.json#/$defs/aapDealerInformationResponse";
}

/// AAP `aapDealerInformation`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DealerInformation {
    pub name: String,
    pub rooftops: Vec<AapRooftop>,
}

/// AAP `aapRooftop`, in the member order this adapter has always written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AapRooftop {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub legal_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub emails: Vec<NamedValue>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phones: Vec<NamedValue>,
    pub address: AapAddress,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub schedules: Vec<Schedule>,
    /// The DAP rooftop's departments, as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Vec<String>>,
}

/// AAP `aapNamedValue`: a contact by department.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedValue {
    pub name: String,
    pub value: String,
}

/// AAP `aapRooftop.address`, mapped from the DAP postal address.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AapAddress {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_line_1: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_line_2: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub city: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zip: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
}

/// AAP `aapSchedule`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Schedule {
    pub name: String,
    pub value: WeeklyHours,
}

/// AAP weekly hours: day name to `aapDayHours`, in the order DAP lists
/// the days.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WeeklyHours(pub Vec<(String, DayHours)>);

impl Serialize for WeeklyHours {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (day, hours) in &self.0 {
            map.serialize_entry(day, hours)?;
        }
        map.end()
    }
}

/// AAP `aapDayHours`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DayHours {
    pub open: String,
    pub close: String,
}

/// The AAP `dealer.information.response` of a DAP `dealerOrganization`.
pub fn response(dap: &DealerOrganization) -> DealerInformationResponse {
    let rooftops: Vec<AapRooftop> = dap.rooftops.iter().map(rooftop).collect();
    let freshness = &dap.freshness;
    let message = format!(
        "Compatibility view of DAP dealer {id} (dealeragent.dealer.get), not native DAP. Directory data {authority}, observed {observed}, freshness {state} until {until}.",
        id = dap.organization_id,
        authority = dap.provenance.authority_status,
        observed = freshness.observed_at,
        state = state_name(freshness.state),
        until = freshness.valid_until.as_deref().unwrap_or("unknown"),
    );
    DealerInformationResponse {
        kind: "dealer.information.response",
        data: DealerInformation {
            name: dap.name.clone(),
            rooftops,
        },
        message,
    }
}

/// DAP `freshness.state` as written on the wire (checked against its
/// serialization by the tests).
fn state_name(state: FreshnessState) -> &'static str {
    match state {
        FreshnessState::Current => "current",
        FreshnessState::Stale => "stale",
        FreshnessState::Unknown => "unknown",
        FreshnessState::Withdrawn => "withdrawn",
    }
}

/// Days of a DAP hours list with exactly one interval, as AAP weekly
/// hours. A day with several intervals (a lunch break) has no honest AAP
/// form and is left out, as is a day DAP does not list (AAP's `null` says
/// closed, which DAP does not assert).
fn weekly(hours: &[HoursInterval]) -> Option<WeeklyHours> {
    let mut per_day: Vec<(String, DayHours)> = Vec::new();
    let mut repeated: Vec<String> = Vec::new();
    for interval in hours {
        let day = interval.day.as_str();
        let hours = DayHours {
            open: interval.opens.clone(),
            close: interval.closes.clone(),
        };
        match per_day.iter_mut().find(|(d, _)| d == day) {
            Some(entry) => {
                repeated.push(day.to_owned());
                entry.1 = hours;
            }
            None => per_day.push((day.to_owned(), hours)),
        }
    }
    // A repeated day leaves, its place taken by the last day (the order
    // this adapter has always written: a swap removal).
    for day in repeated {
        if let Some(at) = per_day.iter().position(|(d, _)| *d == day) {
            per_day.swap_remove(at);
        }
    }
    // AAP's HH:MM pattern has no 24:00.
    per_day.retain(|(_, hours)| hours.close.as_str() < "24:00");
    (!per_day.is_empty()).then_some(WeeklyHours(per_day))
}

/// The hours of one department in the rooftop's
/// `dealergateway.department-hours` extension: the extension is open, so
/// only intervals that read as DAP `hoursInterval` count (an interval
/// missing a member was always skipped).
fn extension_hours(hours: &Value) -> Vec<HoursInterval> {
    hours
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|interval| {
            let text = |member: &str| interval[member].as_str().map(str::to_owned);
            Some(HoursInterval {
                day: text("day")?,
                opens: text("opens")?,
                closes: text("closes")?,
            })
        })
        .collect()
}

fn rooftop(dap: &Rooftop) -> AapRooftop {
    let contacts = |channel: &str| -> Vec<NamedValue> {
        dap.contacts
            .iter()
            .flatten()
            .filter(|c| c.channel == channel)
            .map(|c| NamedValue {
                name: c.department.clone(),
                value: c.value.clone(),
            })
            .collect()
    };
    let a = &dap.address;
    let address = AapAddress {
        address_line_1: a.lines.first().cloned(),
        address_line_2: a.lines.get(1).cloned(),
        city: Some(a.locality.clone()),
        state: a.region.clone(),
        zip: a.postal_code.clone(),
        country: Some(a.country.clone()),
    };
    let mut schedules = Vec::new();
    if let Some(value) = weekly(dap.hours.as_deref().unwrap_or_default()) {
        schedules.push(Schedule {
            name: "general".to_owned(),
            value,
        });
    }
    if let Some(departments) = dap
        .extensions
        .as_ref()
        .and_then(|e| e.get("dealergateway.department-hours"))
        .and_then(Value::as_object)
    {
        for (department, hours) in departments {
            if let Some(value) = weekly(&extension_hours(hours)) {
                schedules.push(Schedule {
                    name: department.clone(),
                    value,
                });
            }
        }
    }
    AapRooftop {
        name: dap.name.clone(),
        legal_name: dap.legal_name.clone(),
        website: dap.website.clone(),
        timezone: Some(dap.timezone.clone()),
        emails: contacts("email"),
        phones: contacts("phone"),
        address,
        schedules,
        capabilities: Some(dap.departments.clone()),
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use serde_json::json;

    use super::*;
    use crate::tools::output::{Freshness, Provenance, drift};

    /// `DealerInformationResponse` against `aapDealerInformationResponse`,
    /// for every organization of the demo dealers file; weekly hours keep
    /// the order the adapter has always written and leave out repeated
    /// days and 24:00.
    #[test]
    fn dealer_information_responses_match_their_definition() {
        let catalog = crate::catalog::Catalog::load().expect("catalog");
        let observed = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        let orgs = crate::dealers::parse(
            &catalog,
            "dealers.yaml",
            crate::demo::DEMO_DEALERS.as_bytes(),
            "demo dealers file",
            observed,
        )
        .expect("the demo dealers file parses");
        let mut instances = Vec::new();
        for org in &orgs {
            let dap = DealerOrganization {
                organization_id: org.organization_id.clone(),
                name: org.name.clone(),
                rooftops: org
                    .rooftops
                    .iter()
                    .map(|r| crate::dealers::published_rooftop(&r.dap))
                    .collect(),
                provenance: Provenance {
                    sources: Vec::new(),
                    authority_status: "asserted".into(),
                    transformed_at: None,
                    transformations: Vec::new(),
                },
                freshness: Freshness {
                    observed_at: "2026-01-02T03:04:05Z".into(),
                    state: FreshnessState::Current,
                    valid_until: None,
                    max_age_seconds: None,
                },
                legal_name: None,
                extensions: None,
            };
            instances.push(response(&dap));
        }
        assert!(instances.iter().any(|r| {
            r.data
                .rooftops
                .iter()
                .any(|r| !r.schedules.is_empty() && !r.phones.is_empty())
        }));
        drift::check_output(&instances);
        let rooftops: Vec<AapRooftop> = instances
            .into_iter()
            .flat_map(|r| r.data.rooftops)
            .collect();
        drift::check(
            "aap-dealer-information.schema.json#/$defs/aapRooftop",
            &rooftops,
        );

        let hours = json!([
            {"day": "tuesday", "opens": "09:00", "closes": "18:00"},
            {"day": "monday", "opens": "09:00", "closes": "12:00"},
            {"day": "monday", "opens": "13:00", "closes": "18:00"},
            {"day": "friday", "opens": "09:00", "closes": "24:00"},
            {"day": "saturday", "opens": "10:00", "closes": "16:00"},
            {"day": "sunday", "opens": "11:00", "closes": "15:00"},
        ]);
        let typed: Vec<HoursInterval> = serde_json::from_value(hours.clone()).unwrap();
        assert_eq!(extension_hours(&hours), typed);
        assert_eq!(
            serde_json::to_string(&weekly(&typed).unwrap()).unwrap(),
            r#"{"tuesday":{"open":"09:00","close":"18:00"},"sunday":{"open":"11:00","close":"15:00"},"saturday":{"open":"10:00","close":"16:00"}}"#
        );
    }

    /// The freshness state in the message is its wire name.
    #[test]
    fn freshness_states_are_named_as_on_the_wire() {
        for state in [
            FreshnessState::Current,
            FreshnessState::Stale,
            FreshnessState::Unknown,
            FreshnessState::Withdrawn,
        ] {
            assert_eq!(
                serde_json::to_value(state).unwrap(),
                json!(state_name(state))
            );
        }
    }
}
