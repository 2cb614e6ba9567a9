//! The vehicle list (the search tool), the vehicle page (`get_vehicle` and
//! `get_disclosure`, rendered as an agent receives them) and the what-if
//! form (`dealergateway.offers.evaluate`, rendered in `what_if.rs`). Every
//! call goes through `tools::invoke` with the manager's principal
//! (docs/console.md "Pages"), except the disclosure, which is read typed
//! through [`super::Signed::disclosure`] (the same checks, builder and
//! answer; the page audits the read) so that no amount is parsed back
//! from JSON.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Extension, Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use maud::{Markup, html};
use serde_json::{Map, Value, json};

use super::aggregate;
use super::words::{self, Vocabulary as V};
use super::{Console, ConsoleError, Rooftop, Signed, encode, html as h, nav, page, signed_in};
use crate::dap::disclosure::PricingDisclosure;
use crate::dap::{ConditionalAdjustment, CriterionValue, EligibilityCriterion, Scalar};
use crate::state::AppState;
use crate::tools::{get_disclosure, get_vehicle, inventory_search};

/// Vehicles per list page.
const PAGE_SIZE: u32 = 25;

/// The sorts the list offers: the search tool's sort fields.
const SORTS: [(&str, &str); 7] = [
    ("", "Relevance (the tool's default order)"),
    ("advertised_price:asc", "Price, lowest first"),
    ("advertised_price:desc", "Price, highest first"),
    ("year:desc", "Year, newest first"),
    ("odometer:asc", "Odometer, lowest first"),
    ("inventory_age_days:desc", "Longest in stock first"),
    ("observed_at:asc", "Oldest observation first"),
];

const CONDITIONS: [&str; 4] = ["new", "used", "certified", "demo"];
const AVAILABILITY: [&str; 4] = ["available", "in_transit", "on_hold", "pending_sale"];

/// Query parameters of the list. Empty values mean "not set".
#[derive(Debug, Default, serde::Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    make: String,
    #[serde(default)]
    condition: String,
    #[serde(default)]
    availability: String,
    #[serde(default)]
    sort: String,
    #[serde(default)]
    cursor: String,
}

impl ListQuery {
    /// The search tool's arguments for this query.
    fn arguments(&self, organization_id: &str, rooftop_id: &str) -> Value {
        let mut args = json!({
            "organization_id": organization_id,
            "rooftop_ids": [rooftop_id],
            "page": {"limit": PAGE_SIZE},
        });
        if !self.cursor.is_empty() {
            args["page"]["cursor"] = json!(self.cursor);
        }
        if !self.q.trim().is_empty() {
            args["query"] = json!(self.q.trim());
        }
        let mut filters = Map::new();
        for (key, value) in [
            ("make", &self.make),
            ("condition", &self.condition),
            ("availability", &self.availability),
        ] {
            if !value.is_empty() {
                filters.insert(key.to_owned(), json!([value]));
            }
        }
        if !filters.is_empty() {
            args["filters"] = Value::Object(filters);
        }
        if let Some((field, order)) = self.sort.split_once(':') {
            args["sort"] = json!({"field": field, "order": order});
        }
        args
    }

    /// This query's URL parameters without the cursor.
    fn params(&self) -> String {
        [
            ("q", &self.q),
            ("make", &self.make),
            ("condition", &self.condition),
            ("availability", &self.availability),
            ("sort", &self.sort),
        ]
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect::<Vec<_>>()
        .join("&")
    }
}

pub(super) async fn signed_rooftop(
    state: &Arc<AppState>,
    console: &Console,
    headers: &HeaderMap,
    peer: SocketAddr,
    rooftop_id: &str,
) -> Result<(Signed, Rooftop), Response> {
    let signed = signed_in(state, console, headers, peer)
        .await
        .map_err(super::NotSigned::into_response)?;
    match super::covered_rooftop(state, &signed.grant, rooftop_id).await {
        Ok(r) => Ok((signed, r)),
        Err(e) => Err(e.page(Some(&signed))),
    }
}

fn select(name: &str, label: &str, options: &[(String, String)], current: &str) -> Markup {
    html! {
        span.field {
            label for=(name) { (label) }
            select id=(name) name=(name) {
                @for (value, text) in options {
                    option value=(value) selected[value == current] { (text) }
                }
            }
        }
    }
}

/// "Any", then each wire value (the option's value) in words (its text).
fn any_of(vocabulary: V, values: &[&str]) -> Vec<(String, String)> {
    std::iter::once((String::new(), "Any".to_owned()))
        .chain(
            values
                .iter()
                .map(|v| ((*v).to_owned(), words::plain(vocabulary, v).into_owned())),
        )
        .collect()
}

fn any_and(values: impl IntoIterator<Item = String>) -> Vec<(String, String)> {
    std::iter::once((String::new(), "Any".to_owned()))
        .chain(values.into_iter().map(|v| (v.clone(), v)))
        .collect()
}

/// `GET /console/rooftop/{rooftop_id}/vehicles`.
pub async fn list(
    State(state): State<Arc<AppState>>,
    Extension(console): Extension<Arc<Console>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(rooftop_id): Path<String>,
    Query(query): Query<ListQuery>,
    headers: HeaderMap,
) -> Response {
    let (signed, rooftop) =
        match signed_rooftop(&state, &console, &headers, peer, &rooftop_id).await {
            Ok(x) => x,
            Err(r) => return r,
        };
    let org = rooftop.organization().organization_id.clone();
    let result = signed
        .tool(
            &state,
            inventory_search::NAME,
            &query.arguments(&org, rooftop.id()),
        )
        .await;
    // Scores from the overview's aggregate, when the grant may see them.
    let scores = match aggregate::tool_scope(&state, &signed, get_disclosure::NAME) {
        Ok(()) => match console.scores.scores(&state, &signed, &rooftop).await {
            Ok(s) => Some(s),
            Err(e) => return e.page(Some(&signed)),
        },
        Err(_) => None,
    };
    let score_of: HashMap<&str, &aggregate::VehicleScore> = scores
        .as_ref()
        .map(|s| {
            s.vehicles
                .iter()
                .map(|v| (v.vehicle_id.as_str(), v))
                .collect()
        })
        .unwrap_or_default();
    let base = format!("/console/rooftop/{}", encode(rooftop.id()));
    let makes: Vec<String> = result
        .as_ref()
        .ok()
        .and_then(|r| r.pointer("/facets/make"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f["value"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut makes = makes;
    if !query.make.is_empty() && !makes.contains(&query.make) {
        makes.push(query.make.clone());
    }
    let body = html! {
        h1 { (rooftop.name()) ": vehicles" }
        p { "The list is the answer of " code { (inventory_search::NAME) } " for your grant: the same filters, order and pages an agent gets." }
        form.filters method="get" action={(base) "/vehicles"} role="search" aria-label="Filter vehicles" {
            label for="q" { "Text (year, make, model, trim, stock number, VIN)"
                input id="q" name="q" type="search" value=(query.q) maxlength="500"; }
            (select("make", "Make", &any_and(makes), &query.make))
            (select("condition", "Condition", &any_of(V::Condition, &CONDITIONS), &query.condition))
            (select("availability", "Listed availability", &any_of(V::AvailabilityStatus, &AVAILABILITY), &query.availability))
            (select("sort", "Sort", &SORTS.iter().map(|(v, t)| ((*v).to_owned(), (*t).to_owned())).collect::<Vec<_>>(), &query.sort))
            button type="submit" { "Search" }
        }
        @match &result {
            Err(error) => (h::tool_error("The search tool refused", error)),
            Ok(found) => {
                @let vehicles = found["vehicles"].as_array().cloned().unwrap_or_default();
                @if vehicles.is_empty() {
                    p id="no-vehicles" { "No vehicle matches." }
                } @else {
                    div.scroll tabindex="0" {
                        table id="vehicle-list" {
                            caption { "Vehicles (" (vehicles.len()) " on this page)" }
                            thead { tr {
                                th scope="col" { "Vehicle" } th scope="col" { "Stock number" } th scope="col" { "Condition" }
                                th.num scope="col" { "Advertised price" } th scope="col" { "Listed availability" }
                                th scope="col" { "Freshness" } th.num scope="col" { "Score" }
                            } }
                            tbody {
                                @for v in &vehicles {
                                    @let id = h::text(v, "vehicle_id");
                                    tr {
                                        td { a href={(base) "/vehicle/" (encode(id))} {
                                            (v["year"]) " " (h::text(v, "make")) " " (h::text(v, "model")) " " (h::text(v, "trim"))
                                        } }
                                        td { (h::text(v, "stock_number")) }
                                        td { (words::plain(V::Condition, h::text(v, "condition"))) }
                                        td.num { (h::money(v.pointer("/advertised_price/amount"))) }
                                        td { (words::plain(V::AvailabilityStatus, h::text(&v["availability"], "status"))) }
                                        td { (words::plain(V::Freshness, h::text(&v["freshness"], "state"))) }
                                        td.num { (score_of.get(id).map_or_else(|| "–".to_owned(), |s| s.score.to_string())) }
                                    }
                                }
                            }
                        }
                    }
                }
                @if let Some(next) = found.pointer("/page/next_cursor").and_then(Value::as_str) {
                    @let params = query.params();
                    p { a id="next-page" rel="next" href={(base) "/vehicles?" (params) @if !params.is_empty() { "&" } "cursor=" (encode(next))} { "Next page" } }
                }
                (h::raw_json("Raw structured content of the search (as the agent receives it)", "raw-search", found))
            }
        }
    };
    page(
        &signed,
        &format!("{} vehicles", rooftop.name()),
        &nav(rooftop.id(), "Vehicles"),
        &body,
    )
}

/// `GET /console/rooftop/{rooftop_id}/vehicle/{vehicle_id}`.
pub async fn vehicle(
    State(state): State<Arc<AppState>>,
    Extension(console): Extension<Arc<Console>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path((rooftop_id, vehicle_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let (signed, rooftop) =
        match signed_rooftop(&state, &console, &headers, peer, &rooftop_id).await {
            Ok(x) => x,
            Err(r) => return r,
        };
    let args = json!({
        "organization_id": rooftop.organization().organization_id,
        "rooftop_id": rooftop.id(),
        "vehicle_id": vehicle_id,
    });
    let record = signed.tool(&state, get_vehicle::NAME, &args).await;
    // An absent vehicle is the one not-found page (nothing else is shown).
    if matches!(&record, Err(e) if h::text(e, "code") == "dealeragent.resource.not_found")
        || matches!(&record, Err(e) if h::text(e, "code") == "dealeragent.validation.invalid")
    {
        return ConsoleError::NotFound.page(Some(&signed));
    }
    // The disclosure an agent gets for a buyer in the rooftop's own
    // jurisdiction, the one the scores assume (aggregate.rs).
    // Read typed (no money parsed back from JSON); the raw form below is
    // the typed document with the concise extension an agent is sent.
    let jurisdiction = crate::preview::rooftop_jurisdiction(&rooftop.record().dap);
    let mut disclosure_args = args.clone();
    if let Some(j) = &jurisdiction {
        disclosure_args["jurisdiction"] = j.clone();
    }
    let disclosure = signed.disclosure(&state, &disclosure_args).await;
    signed
        .audit(
            &state,
            "dealergateway.console.vehicle",
            vec![rooftop.id().to_owned()],
        )
        .await;
    let raw_disclosure = disclosure.as_ref().ok().map(|d| {
        let mut document = d.document.clone();
        // The evaluation was serialized by this gateway: its concise form
        // cannot fail short of a defect, then the full one is shown.
        let _ = get_disclosure::concise(&mut document);
        serde_json::to_value(&document).unwrap_or(Value::Null)
    });
    let lint = match &disclosure {
        Ok(d) => vehicle_lint(&state, &rooftop, &vehicle_id, jurisdiction.as_ref(), d).await,
        Err(_) => None,
    };
    let fixes = aggregate::rooftop_fixes(&rooftop, jurisdiction.as_ref());
    let base = format!("/console/rooftop/{}", encode(rooftop.id()));
    let title = match &record {
        Ok(v) => format!(
            "{} {} {} {}",
            v["year"],
            h::text(v, "make"),
            h::text(v, "model"),
            h::text(v, "trim")
        )
        .trim()
        .to_owned(),
        Err(_) => "Vehicle".to_owned(),
    };
    let body = html! {
        h1 { (title) }
        p { a href={(base) "/vehicle/" (encode(&vehicle_id)) "/what-if"} { "Try a buyer profile (what-if)" } }
        @match &disclosure {
            Err(error) => (h::tool_error("The disclosure tool refused", error)),
            Ok(d) => (disclosure_section(&d.document, &fixes)),
        }
        @if let Some(report) = &lint { (super::lint::vehicle(report)) }
        @match &record {
            Err(error) => (h::tool_error("The vehicle tool refused", error)),
            Ok(v) => (record_section(v)),
        }
        h2 { "Raw structured content" }
        @if let Some(d) = &raw_disclosure { (h::raw_json("Disclosure (dealeragent.pricing.get_disclosure), as the agent receives it", "raw-disclosure", d)) }
        @if let Ok(v) = &record { (h::raw_json("Vehicle (dealeragent.inventory.get_vehicle), as the agent receives it", "raw-vehicle", v)) }
    };
    page(&signed, &title, &nav(rooftop.id(), "Vehicles"), &body)
}

/// The lint of the disclosure the page shows (docs/lint.md): the record
/// as the inventory view holds it (newest snapshot, else the withdrawn
/// ones in their grace period), at the same buyer's place. `None` when
/// the record cannot be found again (a snapshot replaced in between).
async fn vehicle_lint(
    state: &Arc<AppState>,
    rooftop: &super::Rooftop,
    vehicle_id: &str,
    jurisdiction: Option<&Value>,
    built: &crate::disclosure::Disclosure,
) -> Option<pricing::lint::Report> {
    let view = state.inventory.view(rooftop.directory()).await.ok()?;
    let inventory = view.rooftop(rooftop.id())?;
    let (index, row) = [Some(&inventory.latest), inventory.withdrawn.as_ref()]
        .into_iter()
        .flatten()
        .find_map(|i| i.find_vehicle_id(vehicle_id).map(|row| (i, row)))?;
    let record = index.record(row);
    let at = crate::lint::rooftop::Rooftop {
        organization: rooftop.organization(),
        rooftop: rooftop.record(),
        snapshot_version: index.version(),
        jurisdiction,
        now: chrono::Utc::now(),
    };
    let history = crate::lint::history(state.store.as_ref(), &record, at.now)
        .await
        .ok()
        .flatten();
    crate::lint::rooftop::vehicle(&at, &record, &built.document, history.as_ref())
        .map(|(_, report, _)| report)
}

fn disclosure_section(d: &PricingDisclosure, fixes: &crate::preview::Fixes<'_>) -> Markup {
    let adjustments: Vec<&ConditionalAdjustment> = d
        .conditional_adjustments
        .iter()
        .map(|l| &l.adjustment)
        .collect();
    let completeness = &d.disclosure_completeness;
    let gaps = aggregate::gaps(&completeness.components, &adjustments, fixes);
    let gov = &d.government_charges;
    html! {
        h2 { "What agents are told" }
        (super::overview::assumed_jurisdiction(fixes.assumed))
        blockquote.agent id="disclosure-text" { (d.disclosure_text) }
        dl.facts {
            div { dt { "Advertised price" } dd id="advertised-price" { (d.advertised_price.amount) } }
            div { dt { "Advertised price availability" } dd { (words::plain(V::PriceAvailability, &d.advertised_price.availability)) } }
            div { dt { "Government charges" } dd id="government-status" { (words::hinted(V::GovernmentStatus, &gov.status)) } }
            div { dt { "Completeness score" } dd id="completeness-score" { (completeness.score) " / 100" } }
            div { dt { "Availability band" } dd id="availability-band" { (words::hinted(V::Band, &completeness.components.availability_band)) } }
        }
        h2 { "Required dealer charges" }
        @if d.required_dealer_charges.is_empty() {
            p { "None." }
        } @else {
            div.scroll tabindex="0" { table id="required-charges" {
                caption.sr { "Required dealer charges" }
                thead { tr { th scope="col" { "Charge" } th.num scope="col" { "Amount" } th scope="col" { "In the advertised price" } th scope="col" { "Payee" } th scope="col" { "Taxable" } } }
                tbody { @for listed in &d.required_dealer_charges { @let c = &listed.charge; tr {
                    td { (c.name) }
                    td.num { (c.amount) }
                    td { @if c.included_in_advertised_price { "included" } @else { "not included" } }
                    td { (words::plain(V::Payee, &c.payee)) }
                    td { (words::plain(V::TaxableStatus, c.taxable_status.as_deref().unwrap_or_default())) }
                } } }
            } }
        }
        h2 { "Conditional adjustments" }
        @if adjustments.is_empty() {
            p { "None." }
        } @else {
            div.scroll tabindex="0" { table id="conditional-adjustments" {
                caption.sr { "Conditional adjustments with eligibility and stacking" }
                thead { tr { th scope="col" { "Adjustment" } th scope="col" { "Direction" } th.num scope="col" { "Amount" } th scope="col" { "Eligibility" } th scope="col" { "Stacking" } } }
                tbody { @for a in &adjustments { tr {
                    td { (a.name) br; code { (a.adjustment_id) } }
                    td { (words::plain(V::Direction, &a.direction)) }
                    td.num { @if a.amount_status == "known" { (h::amount(a.amount)) } @else { (words::plain(V::AmountStatus, &a.amount_status)) } }
                    td { ul { @for c in &a.criteria {
                        li { (eligibility_words(c)) }
                    } } }
                    td { "group " (a.stacking.group) ": " (words::hinted(V::Combinability, &a.stacking.combinability)) }
                } } }
            } }
        }
        @if let Some(lines) = &gov.lines {
            h2 { "Government charges" }
            p { "Estimated by the dealer for " (gov.jurisdiction.as_ref().map(crate::preview::jurisdiction_name).unwrap_or_default())
                ", not included in the price: " strong id="government-total" { (h::amount(gov.total)) } "." }
            ul { @for l in lines { li { (l.name) ": " (l.amount) } } }
        }
        h2 { "Completeness: what is missing and how to fix it" }
        @if gaps.is_empty() {
            p.ok { "Complete: 100 points." }
        } @else {
            div.scroll tabindex="0" { table id="completeness-gaps" {
                caption.sr { "Missing parts of the completeness score" }
                thead { tr { th scope="col" { "Missing part" } th.num scope="col" { "Points lost" } th scope="col" { "Fix" } } }
                tbody { @for g in &gaps { tr {
                    th scope="row" { (aggregate::label(g.component)) }
                    td.num { (g.points) }
                    td { (g.fix) }
                } } }
            } }
        }
        @if let Some(reason) = d.uncertainty.reason.as_deref().filter(|r| !r.is_empty()) {
            p.notice id="uncertainty" { strong { "Price " (words::plain(V::Uncertainty, &d.uncertainty.status)) ": " } (reason) }
        }
    }
}

/// [`criterion_words`] of a typed criterion.
fn eligibility_words(c: &EligibilityCriterion) -> Markup {
    let scalar = |s: &Scalar| match s {
        Scalar::Text(t) => t.clone(),
        Scalar::Flag(b) => b.to_string(),
        Scalar::Number(n) => n.to_string(),
    };
    let value = match &c.value {
        CriterionValue::Scalar(Scalar::Text(s)) => s.clone(),
        CriterionValue::List(items) => items.iter().map(scalar).collect::<Vec<_>>().join(", "),
        CriterionValue::Scalar(_) => String::new(),
    };
    let operator = c.operator.as_str();
    html! {
        (words::plain(V::Criterion, &c.criterion)) " "
        (words::plain(V::Operator, operator))
        @if matches!(operator, "equals" | "in") && !value.is_empty() { " " (value) }
        " (" (words::plain(V::EvidenceStatus, &c.evidence_status)) ")"
        @if let Some(d) = c.description.as_deref().filter(|d| !d.is_empty()) { ": " (d) }
    }
}

/// One eligibility criterion in words: "military service is proven (proof
/// required): Active duty, reserve or veteran, verified".
pub fn criterion_words(c: &Value) -> Markup {
    let value = match &c["value"] {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(", "),
        _ => String::new(),
    };
    let operator = h::text(c, "operator");
    html! {
        (words::plain(V::Criterion, h::text(c, "criterion"))) " "
        (words::plain(V::Operator, operator))
        @if matches!(operator, "equals" | "in") && !value.is_empty() { " " (value) }
        " (" (words::plain(V::EvidenceStatus, h::text(c, "evidence_status"))) ")"
        @if !h::text(c, "description").is_empty() { ": " (h::text(c, "description")) }
    }
}

fn sources(v: &Value) -> Markup {
    let empty = Vec::new();
    html! {
        ul { @for s in v.pointer("/provenance/sources").and_then(Value::as_array).unwrap_or(&empty) {
            li { code { (h::text(s, "source_name")) } " (" (words::hinted(V::SourceAuthority, h::text(s, "authority"))) "), observed " (h::time_of(s, "observed_at")) }
        } }
    }
}

fn record_section(v: &Value) -> Markup {
    let a = &v["availability"];
    html! {
        h2 { "Availability" }
        dl.facts {
            div { dt { "Status" } dd id="availability-status" { (words::plain(V::AvailabilityStatus, h::text(a, "status"))) } }
            div { dt { "Authority" } dd { (words::hinted(V::AuthorityStatus, h::text(a, "authority_status"))) } }
            div { dt { "Observed" } dd { (h::time_of(a, "observed_at")) } }
            div { dt { "Valid until" } dd { (h::time_of(a, "valid_until")) } }
        }
        @if !h::text(a, "reason").is_empty() { p { (h::text(a, "reason")) } }
        h2 { "Provenance and freshness" }
        p { "Freshness: " strong { (words::plain(V::Freshness, h::text(&v["freshness"], "state"))) } ", observed " (h::time_of(&v["freshness"], "observed_at"))
            ", valid until " (h::time_of(&v["freshness"], "valid_until")) "." }
        (sources(v))
        h2 { "Vehicle" }
        dl.facts {
            div { dt { "VIN" } dd { (h::text(v, "vin")) } }
            div { dt { "Stock number" } dd { (h::text(v, "stock_number")) } }
            div { dt { "Condition" } dd { (words::plain(V::Condition, h::text(v, "condition"))) } }
            div { dt { "Odometer" } dd { (v.pointer("/odometer/value").cloned().unwrap_or(Value::Null)) " " (v.pointer("/odometer/unit").and_then(Value::as_str).unwrap_or("")) } }
        }
    }
}
