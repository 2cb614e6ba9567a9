//! The what-if page (docs/console.md "What-if"): a buyer profile without
//! personal data, the answer of `dealergateway.offers.evaluate` to it, and
//! what a manager needs to act on that answer: every program by name with
//! its amount, whether it applies, whether the buyer is eligible, and why it
//! is not in the best stack; which programs are in the best stack and the
//! guaranteed floor; and a price waterfall (advertised price, required
//! dealer charges, each discount, each surcharge, net) drawn with inline SVG
//! bars beside the numbers as text, no script.
//!
//! The evaluation is the tool's, called with the manager's grant; the
//! required dealer charges and government charges come from
//! `dealeragent.pricing.get_disclosure` for the same jurisdiction and
//! payment mode. Why a program is out of the best stack is read from the
//! evaluation (applicability, eligibility, the best stack, the search's
//! trace of rule rejections) and the programs' stacking declarations
//! (pairwise compatibility, declarative limits, rules; docs/pricing.md).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Extension, Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use maud::{Markup, html};
use pricing::Money;
use pricing::incentives::{Combinability, GroupResolution, StackLimit, ValidatedProgram};
use serde_json::{Map, Value, json};

use super::words::{self, Vocabulary as V};
use super::{Console, ConsoleError, encode, html as h, nav, page};
use crate::dap::DealerCharge;
use crate::dap::disclosure::PricingDisclosure;
use crate::state::AppState;
use crate::tools::{get_vehicle, offers_evaluate};
use waterfall::{waterfall, waterfall_table};

mod waterfall;

/// DAP eligibility criteria a buyer profile may claim (offers.schema.json
/// `offersClaims`).
const CRITERIA: [&str; 11] = [
    "residency",
    "loyalty",
    "conquest",
    "military",
    "first_responder",
    "college_graduate",
    "finance_provider",
    "trade_in",
    "lease_return",
    "membership",
    "other",
];

/// Width of a waterfall bar, in SVG user units.
const BAR_WIDTH: i128 = 200;

/// `GET /console/rooftop/{rooftop_id}/vehicle/{vehicle_id}/what-if`: the
/// form; with `payment_mode` set, also the offer evaluation of that
/// profile.
pub async fn what_if(
    State(state): State<Arc<AppState>>,
    Extension(console): Extension<Arc<Console>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path((rooftop_id, vehicle_id)): Path<(String, String)>,
    Query(form): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let (signed, rooftop) = match super::vehicles::signed_rooftop(
        &state,
        &console,
        &headers,
        peer,
        &rooftop_id,
    )
    .await
    {
        Ok(x) => x,
        Err(r) => return r,
    };
    let field = |k: &str| form.get(k).map(|v| v.trim()).unwrap_or_default();
    let address = &rooftop.record().dap.address;
    let country = if form.contains_key("country") {
        field("country").to_owned()
    } else {
        address.country.clone()
    };
    let subdivision = if form.contains_key("subdivision") {
        field("subdivision").to_owned()
    } else {
        let region = address.region.as_deref().unwrap_or_default();
        if region.is_empty() {
            String::new()
        } else {
            format!("{country}-{region}")
        }
    };
    let organization_id = rooftop.organization().organization_id.clone();
    let evaluation = if form.contains_key("payment_mode") {
        let mut jurisdiction = json!({"country": country});
        if !subdivision.is_empty() {
            jurisdiction["subdivision"] = json!(subdivision);
        }
        if !field("postal_code").is_empty() {
            jurisdiction["postal_code"] = json!(field("postal_code"));
        }
        let mut claims = Map::new();
        for c in CRITERIA {
            match field(&format!("claim_{c}")) {
                "true" => {
                    claims.insert(c.to_owned(), json!(true));
                }
                "false" => {
                    claims.insert(c.to_owned(), json!(false));
                }
                _ => {}
            }
        }
        let mut profile = json!({"payment_mode": field("payment_mode"), "jurisdiction": jurisdiction, "claims": claims});
        // `datetime-local` has no offset: the form says it is UTC.
        if !field("as_of").is_empty() {
            let as_of = field("as_of");
            let with_seconds = if as_of.len() == 16 {
                format!("{as_of}:00Z")
            } else {
                format!("{as_of}Z")
            };
            profile["as_of"] = json!(with_seconds);
        }
        // The waterfall and the program table read every branch's reports
        // and the trace: the full evaluation (docs/pricing.md section 2).
        let args = json!({
            "organization_id": organization_id,
            "rooftop_id": rooftop.id(),
            "vehicle_id": vehicle_id,
            "profile": profile,
            "detail": "full",
        });
        let result = signed.tool(&state, offers_evaluate::NAME, &args).await;
        if matches!(&result, Err(e) if h::text(e, "code") == "dealeragent.resource.not_found") {
            return ConsoleError::NotFound.page(Some(&signed));
        }
        match result {
            Err(e) => Some(Err(e)),
            Ok(e) => {
                // The same buyer's disclosure, for the required dealer
                // charges and the government charges of the waterfall.
                let mut disclosure_args = json!({
                    "organization_id": organization_id,
                    "rooftop_id": rooftop.id(),
                    "vehicle_id": vehicle_id,
                    "jurisdiction": jurisdiction,
                });
                if field("payment_mode") != "unknown" {
                    disclosure_args["payment_mode"] = json!(field("payment_mode"));
                }
                // Read typed: its charges' money is never parsed back
                // from JSON; the page's own audit event records the read.
                let disclosure = signed.disclosure(&state, &disclosure_args).await;
                signed
                    .audit(
                        &state,
                        "dealergateway.console.what_if",
                        vec![rooftop.id().to_owned()],
                    )
                    .await;
                // The stacking declarations of the revisions the evaluation
                // used (its `as_of`), for the reasons a program is out.
                let as_of = chrono::DateTime::parse_from_rfc3339(h::text(&e, "as_of"))
                    .unwrap_or_else(|_| chrono::Utc::now().fixed_offset());
                let org_programs = match state
                    .offers
                    .programs(state.store.as_ref(), &organization_id)
                    .await
                {
                    Ok(p) => p,
                    Err(err) => return ConsoleError::from(err).page(Some(&signed)),
                };
                // On the evaluation pool, like every evaluation
                // (docs/pricing.md section 4).
                let programs = match state
                    .offers
                    .pool()
                    .run(move |_| org_programs.at(as_of))
                    .await
                {
                    Ok(p) => p,
                    Err(err) => return super::busy(err).page(Some(&signed)),
                };
                Some(Ok((e, disclosure, programs)))
            }
        }
    } else {
        // The vehicle must exist in this rooftop even before a profile is
        // sent: the same not-found page as the vehicle page.
        let args = json!({
            "organization_id": organization_id,
            "rooftop_id": rooftop.id(),
            "vehicle_id": vehicle_id,
        });
        if let Err(e) = signed.tool(&state, get_vehicle::NAME, &args).await
            && matches!(
                h::text(&e, "code"),
                "dealeragent.resource.not_found" | "dealeragent.validation.invalid"
            )
        {
            return ConsoleError::NotFound.page(Some(&signed));
        }
        None
    };
    let base = format!(
        "/console/rooftop/{}/vehicle/{}",
        encode(rooftop.id()),
        encode(&vehicle_id)
    );
    let modes = [
        ("unknown", "Not decided (compare cash, finance and lease)"),
        ("cash", "Cash"),
        ("finance", "Finance"),
        ("lease", "Lease"),
    ];
    let current_mode = if form.contains_key("payment_mode") {
        field("payment_mode")
    } else {
        "unknown"
    };
    let body = html! {
        h1 { "What-if: offers for a buyer profile" }
        p { a href=(base) { "Back to the vehicle" } }
        p { "A hypothetical buyer, without personal data: the evaluation is the answer of "
            code { (offers_evaluate::NAME) } " to the same profile. Not a quote." }
        form.stack method="get" action={(base) "/what-if"} id="what-if-form" {
            fieldset {
                legend { "Payment and jurisdiction" }
                div.row {
                    span.field {
                        label for="payment_mode" { "Payment mode" }
                        select id="payment_mode" name="payment_mode" {
                            @for (v, t) in modes { option value=(v) selected[v == current_mode] { (t) } }
                        }
                    }
                    label for="country" { "Country (ISO 3166-1, e.g. US)"
                        input id="country" name="country" value=(country) maxlength="2" size="4" required; }
                    label for="subdivision" { "Subdivision (e.g. US-IL)"
                        input id="subdivision" name="subdivision" value=(subdivision) maxlength="6" size="8"; }
                    label for="postal_code" { "Postal code or prefix"
                        input id="postal_code" name="postal_code" value=(field("postal_code")) maxlength="10" size="10"; }
                    label for="as_of" { "As of (UTC; empty: now)"
                        input id="as_of" name="as_of" type="datetime-local" value=(field("as_of")); }
                }
            }
            fieldset {
                legend { "Claims per eligibility criterion" }
                div.row {
                    @for c in CRITERIA {
                        @let name = format!("claim_{c}");
                        @let current = field(&name);
                        span.field {
                            label for=(name) { (words::plain(V::Criterion, c)) }
                            select id=(name) name=(name) {
                                option value="unknown" selected[current != "true" && current != "false"] { "unknown" }
                                option value="true" selected[current == "true"] { "meets it" }
                                option value="false" selected[current == "false"] { "does not" }
                            }
                        }
                    }
                }
            }
            button type="submit" { "Evaluate offers" }
        }
        @match &evaluation {
            None => {},
            Some(Err(error)) => (h::tool_error("The offers tool refused", error)),
            Some(Ok((e, disclosure, programs))) => (evaluation_section(e, disclosure.as_ref().map(|d| &d.document), programs)),
        }
    };
    page(&signed, "What-if", &nav(rooftop.id(), "Vehicles"), &body)
}

/// The programs of the evaluation's selection, by `(program_id, revision)`.
struct Declarations<'a> {
    programs: HashMap<(&'a str, u32), &'a ValidatedProgram>,
}

impl<'a> Declarations<'a> {
    fn new(selection: &'a crate::offers::ProgramsAt) -> Self {
        Declarations {
            programs: selection
                .validated()
                .programs()
                .iter()
                .map(|vp| ((vp.program.program_id.as_str(), vp.program.revision), vp))
                .collect(),
        }
    }

    fn get(&self, r: &Value) -> Option<&'a ValidatedProgram> {
        let revision = u32::try_from(r["revision"].as_u64()?).ok()?;
        self.programs
            .get(&(r["program_id"].as_str()?, revision))
            .copied()
    }
}

/// `program_id@revision` of a report or a reference.
fn key(r: &Value) -> (String, u64) {
    (
        h::text(r, "program_id").to_owned(),
        r["revision"].as_u64().unwrap_or(0),
    )
}

fn refs(stack: &Value, member: &str) -> Vec<(String, u64)> {
    stack[member]
        .as_array()
        .map(|a| a.iter().map(key).collect())
        .unwrap_or_default()
}

/// The resolved amount of a program for this vehicle, when known.
fn known_amount(report: &Value) -> Option<Money> {
    match h::text(&report["amount"], "status") {
        "known" | "percent" => serde_json::from_value(report["amount"]["amount"].clone()).ok(),
        _ => None,
    }
}

/// A program's amount in words: "1,500.00 USD", "2.5 % of the price:
/// 650.00 USD (capped from 700.00 USD)", "unknown: <why>".
fn amount_words(report: &Value) -> Markup {
    let a = &report["amount"];
    html! {
        @match h::text(a, "status") {
            "known" => {
                (h::money(a.get("amount")))
                @if a.get("capped_from").is_some() { " (capped from " (h::money(a.get("capped_from"))) ")" }
            },
            "percent" => {
                (h::text(a, "percent")) " % of the price: " (h::money(a.get("amount")))
                @if a.get("capped_from").is_some() { " (capped from " (h::money(a.get("capped_from"))) ")" }
            },
            _ => { "unknown: " (h::text(a, "reason")) },
        }
    }
}

/// The engine's not-applicable reason (`scope: …`, `validity: …`) in words.
fn not_applicable_words(reason: &str) -> String {
    let (kind, detail) = reason.split_once(": ").unwrap_or(("", reason));
    let lead = match kind {
        "scope" => "the vehicle is outside the program's scope",
        "validity" => "outside its validity window",
        "payment mode" => "not offered for this payment mode",
        "jurisdiction" => "not offered in the buyer's jurisdiction",
        "postal code" => "excluded for the buyer's postal code",
        "currency" => "its amounts are in another currency than the vehicle's price",
        _ => return reason.replace('`', ""),
    };
    format!("{lead} ({})", detail.replace('`', ""))
}

fn applicability_words(report: &Value) -> String {
    match h::text(&report["applicability"], "status") {
        "applicable" => "applies".to_owned(),
        _ => format!(
            "does not apply: {}",
            not_applicable_words(h::text(&report["applicability"], "reason"))
        ),
    }
}

fn criteria_list(list: &Value) -> String {
    list.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(|c| words::plain(V::Criterion, c).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// What would decide an undecided eligibility, in words: "brand loyalty:
/// Currently owns or leases a vehicle of the same brand".
fn needs_words(needs: &Value) -> String {
    needs
        .as_array()
        .map(|a| {
            a.iter()
                .map(|n| {
                    format!(
                        "{}: {}",
                        words::plain(V::Criterion, h::text(n, "criterion")),
                        h::text(n, "evidence")
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_default()
}

/// The criteria an undecided eligibility waits for, named only.
fn needs_named(needs: &Value) -> String {
    needs
        .as_array()
        .map(|a| {
            a.iter()
                .map(|n| words::plain(V::Criterion, h::text(n, "criterion")).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn eligibility_words(report: &Value) -> String {
    let e = &report["eligibility"];
    match h::text(e, "status") {
        "eligible" => "eligible".to_owned(),
        "eligible_subject_to_evidence" => {
            format!("eligible once proven: {}", criteria_list(&e["criteria"]))
        }
        "unknown" => format!("undecided: needs {}", needs_named(&e["needs"])),
        _ => {
            let reason = h::text(e, "reason");
            if reason.starts_with("not applicable") {
                "not considered (it does not apply)".to_owned()
            } else if let Some(c) = reason
                .strip_prefix("criterion ")
                .and_then(|r| r.strip_suffix(" not met"))
            {
                format!(
                    "not eligible: the buyer does not meet \u{201c}{}\u{201d}",
                    words::plain(V::Criterion, c)
                )
            } else if reason.starts_with("no criterion met") {
                "not eligible: the buyer meets none of its conditions".to_owned()
            } else {
                format!("not eligible: {reason}")
            }
        }
    }
}

/// A rule rejection the search traced: the stack's program ids, the
/// program whose rule judged it, and why (`returned false`, or the error
/// that stopped the rule). The line is
/// `{mode}/best: stack [a, b] rejected: rule of X {why}` (pricing
/// `stacking::stack_report`).
struct Rejection<'t> {
    members: Vec<&'t str>,
    owner: &'t str,
    why: &'t str,
}

fn rejections<'t>(trace: &'t Value, mode: &str) -> Vec<Rejection<'t>> {
    let prefix = format!("{mode}/best: stack [");
    trace
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(Value::as_str)
        .filter_map(|line| {
            let rest = line.strip_prefix(&prefix)?;
            let (members, tail) = rest.split_once("] rejected: rule of ")?;
            let (owner, why) = tail.split_once(' ')?;
            Some(Rejection {
                members: members.split(", ").collect(),
                owner,
                why,
            })
        })
        .collect()
}

/// Whether a declarative limit selects `p` (programs.schema.json
/// `stacking.limits`: the members of its group, or carrying its tag, or
/// every member).
fn limit_selects(limit: &StackLimit, p: &ValidatedProgram) -> bool {
    match (&limit.group, &limit.tag) {
        (Some(g), _) => *g == p.program.stacking.group,
        (None, Some(t)) => p.program.tags.iter().any(|x| x == t),
        (None, None) => true,
    }
}

/// Why `a` and `b` never share a stack (the pairwise rules of
/// `pricing::stacking::compatible`), in words; `None` when they may.
fn incompatibility(a: &ValidatedProgram, b: &ValidatedProgram) -> Option<String> {
    if pricing::stacking::compatible(a, b) {
        return None;
    }
    let (sa, sb) = (&a.program.stacking, &b.program.stacking);
    let names = |list: &[String], other: &ValidatedProgram| {
        list.iter().any(|r| {
            r.strip_prefix("group:")
                .map(|g| g == other.program.stacking.group)
                .or_else(|| {
                    r.strip_prefix("tag:")
                        .map(|t| other.program.tags.iter().any(|x| x == t))
                })
                .unwrap_or(*r == other.program.program_id)
        })
    };
    Some(
        if names(&sa.not_combinable_with, b) || names(&sb.not_combinable_with, a) {
            "one of the two excludes the other (not combinable with)".to_owned()
        } else if sa.top_of_deal && sb.top_of_deal {
            "both are primary (top-of-deal) programs, and a stack has one".to_owned()
        } else if sa.group == sb.group && sa.group_resolution == GroupResolution::BestOne {
            format!(
                "both are in group {}, where only the best one counts",
                sa.group
            )
        } else if sa.combinability == Combinability::Exclusive
            || sb.combinability == Combinability::Exclusive
        {
            let exclusive = if sa.combinability == Combinability::Exclusive {
                &a.program.name
            } else {
                &b.program.name
            };
            format!("{exclusive} is exclusive: it combines only with the programs it names")
        } else {
            "their stacking declarations exclude each other".to_owned()
        },
    )
}

/// Why an applicable, usable discount is not in the branch's best stack.
fn combination_reason(
    report: &Value,
    branch: &Value,
    trace: &Value,
    decl: &Declarations<'_>,
) -> String {
    let mode = h::text(branch, "payment_mode");
    let best = &branch["best_stack"];
    let Some(p) = decl.get(report) else {
        return "not in the best stack (its stacking declaration is no longer stored)".to_owned();
    };
    let reports: Vec<&Value> = branch["programs"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let members: Vec<(&ValidatedProgram, &Value)> = best["program_ids"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|r| {
            let vp = decl.get(r)?;
            let rep = reports.iter().find(|x| key(x) == key(r))?;
            Some((vp, *rep))
        })
        .collect();
    // 1. A pairwise rule with a member of the best stack.
    for (m, _) in &members {
        if let Some(why) = incompatibility(p, m) {
            return format!(
                "rejected by a combination rule: it does not combine with {} (in the best stack): {why}",
                m.program.name
            );
        }
    }
    // 2. A declarative limit of the stack with it.
    let mut with: Vec<(&ValidatedProgram, &Value)> = members.clone();
    with.push((p, report));
    for (owner, _) in &with {
        for limit in &owner.program.stacking.limits {
            let selected: Vec<&(&ValidatedProgram, &Value)> = with
                .iter()
                .filter(|(x, _)| limit_selects(limit, x))
                .collect();
            let count = selected.len();
            let sum: i128 = selected
                .iter()
                .filter_map(|(_, r)| known_amount(r))
                .map(|m| i128::from(m.amount_minor()))
                .sum();
            let over_count = limit
                .max_programs
                .is_some_and(|n| count > usize::try_from(n).unwrap_or(usize::MAX));
            let over_sum = limit
                .max_amount
                .is_some_and(|m| sum > i128::from(m.amount_minor()));
            if over_count || over_sum {
                let sentence = crate::preview::rule_sentences(&owner.program)
                    .into_iter()
                    .find(|s| s.starts_with("limit:"))
                    .unwrap_or_default();
                return format!(
                    "rejected by a combination rule: with it, the best stack breaks a limit of {} ({})",
                    owner.program.name,
                    sentence.trim_start_matches("limit: ")
                );
            }
        }
    }
    // 3. A rhai rule of the stack with it.
    let ruled: Vec<&str> = with
        .iter()
        .filter(|(x, _)| x.program.stacking.rule.is_some())
        .map(|(x, _)| x.program.name.as_str())
        .collect();
    if !ruled.is_empty() {
        let id = p.program.program_id.as_str();
        let name_of = |owner: &str| {
            decl.programs
                .values()
                .find(|v| v.program.program_id == owner)
                .map_or_else(|| owner.to_owned(), |v| v.program.name.clone())
        };
        let found = rejections(trace, mode);
        let mine: Vec<&Rejection<'_>> = found.iter().filter(|r| r.members.contains(&id)).collect();
        if let Some(r) = mine.iter().find(|r| r.why != "returned false") {
            return format!(
                "the combination rule of {} could not be evaluated: {}",
                name_of(r.owner),
                r.why
            );
        }
        if let Some(r) = mine.first() {
            return format!(
                "rejected by a combination rule: the rule of {} refused the stacks with it",
                name_of(r.owner)
            );
        }
        return format!(
            "rejected by a combination rule: the rule of {} refused the stacks with it (the trace counts these rejections without listing them)",
            ruled.join(", ")
        );
    }
    // 4. Nothing excludes it: an unknown amount adds nothing the search
    // can count, or the search stopped early.
    if known_amount(report).is_none() {
        return "its amount is unknown and never counted, so the best stack gains nothing from it"
            .to_owned();
    }
    if h::text(&best["optimality"], "status") == "bounded" {
        return "the search stopped at its budget before it could add it".to_owned();
    }
    "a stack without it is worth more".to_owned()
}

/// Where a program stands in a branch's best stack, in words: `(in it,
/// words)`.
fn standing(
    report: &Value,
    branch: &Value,
    trace: &Value,
    decl: &Declarations<'_>,
) -> (bool, String) {
    let k = key(report);
    let best = &branch["best_stack"];
    if refs(best, "program_ids").contains(&k) {
        return (true, "in the best stack".to_owned());
    }
    if refs(best, "surcharge_ids").contains(&k) {
        return (
            true,
            "added: a surcharge that applies is always included".to_owned(),
        );
    }
    let out = match (
        h::text(&report["applicability"], "status"),
        h::text(&report["eligibility"], "status"),
    ) {
        ("not_applicable", _) => "out: it does not apply".to_owned(),
        (_, "ineligible") => "out: the buyer is not eligible".to_owned(),
        (_, "unknown") => format!(
            "out until decided by {}",
            needs_words(&report["eligibility"]["needs"])
        ),
        _ => format!("out: {}", combination_reason(report, branch, trace, decl)),
    };
    (false, out)
}

fn programs_table(mode: &str, branch: &Value, trace: &Value, decl: &Declarations<'_>) -> Markup {
    let empty = Vec::new();
    let floor = refs(&branch["guaranteed_floor"], "program_ids");
    let floor_surcharges = refs(&branch["guaranteed_floor"], "surcharge_ids");
    html! {
        div.scroll tabindex="0" {
            table.programs id={"programs-" (mode)} {
                caption { "Every program for a " (words::plain(V::PaymentMode, mode)) " buyer: amount, whether it applies, eligibility and its place in the stacks" }
                thead { tr {
                    th scope="col" { "Program" } th.num scope="col" { "Amount" } th scope="col" { "Applies" }
                    th scope="col" { "Eligibility" } th scope="col" { "Best stack" } th scope="col" { "Guaranteed floor" }
                } }
                tbody {
                    @for r in branch["programs"].as_array().unwrap_or(&empty) {
                        @let (inside, why) = standing(r, branch, trace, decl);
                        @let k = key(r);
                        tr class={ @if inside { "in" } @else { "out" } } {
                            th scope="row" {
                                (h::text(r, "name"))
                                @if h::text(r, "direction") == "surcharge" { " (surcharge)" }
                                br; code.hint { (k.0) "@" (k.1) }
                            }
                            td.num { (amount_words(r)) }
                            td { (applicability_words(r)) }
                            td { (eligibility_words(r)) }
                            td.standing { (why) }
                            td { @if floor.contains(&k) || floor_surcharges.contains(&k) { "in the floor" } @else { "not in the floor" } }
                        }
                    }
                }
            }
        }
    }
}

/// One payment mode: its waterfall, then every program. `priced` is the
/// disclosure's advertised price and required dealer charges, typed (`None`
/// when the disclosure could not be read: then no waterfall).
fn branch_section(
    e: &Value,
    branch: &Value,
    priced: Option<(Money, &[&DealerCharge])>,
    decl: &Declarations<'_>,
) -> Markup {
    let mode = h::text(branch, "payment_mode");
    let drawn = priced.map(|(price, charges)| waterfall(price, Some(charges), branch));
    html! {
        @match drawn {
            Some(Ok((steps, notes))) => {
                (waterfall_table(mode, &steps))
                @for n in &notes { p { (n) } }
                p { "The offers tool's own net price for this stack (advertised price less discounts plus surcharges, without dealer charges): "
                    strong { (h::money(branch.pointer("/best_stack/net_price"))) } "." }
            },
            Some(Err(why)) => p.notice { "No waterfall: " (why) "." },
            None => p.notice { "No waterfall: the required dealer charges could not be read (see the disclosure tool's answer above)." },
        }
        @let extras = branch["potential_extra"].as_array().map(Vec::as_slice).unwrap_or_default();
        @if !extras.is_empty() {
            p { "Potential extra, if the buyer proves it:" }
            ul { @for x in extras { li { (h::text(x, "summary")) } } }
        }
        (programs_table(mode, branch, &e["trace"], decl))
    }
}

fn stack_names(stack: &Value, branch: &Value) -> String {
    let reports = branch["programs"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let names: Vec<String> = refs(stack, "program_ids")
        .into_iter()
        .chain(refs(stack, "surcharge_ids"))
        .map(|r| {
            reports
                .iter()
                .find(|x| key(x) == r)
                .map_or(r.0.clone(), |x| h::text(x, "name").to_owned())
        })
        .collect();
    if names.is_empty() {
        "no program".to_owned()
    } else {
        names.join(", ")
    }
}

fn evaluation_section(
    e: &Value,
    disclosure: Result<&PricingDisclosure, &Value>,
    selection: &crate::offers::ProgramsAt,
) -> Markup {
    let empty = Vec::new();
    let decl = Declarations::new(selection);
    let branches = e["branches"].as_array().unwrap_or(&empty);
    let winning = h::text(e, "winning_payment_mode");
    let charges: Option<(Money, Vec<&DealerCharge>)> = disclosure.ok().map(|d| {
        (
            d.advertised_price.amount,
            d.required_dealer_charges
                .iter()
                .map(|l| &l.charge)
                .collect(),
        )
    });
    let priced = charges.as_ref().map(|(price, c)| (*price, c.as_slice()));
    html! {
        h2 id="evaluation" { "Offer evaluation" }
        dl.facts {
            div { dt { "Best payment mode" } dd id="winning-mode" { (words::plain(V::PaymentMode, winning)) } }
            div { dt { "Best stack net price" } dd id="best-net" { (h::money(e.pointer("/best_stack/net_price"))) } }
            div { dt { "Best stack discount" } dd { (h::money(e.pointer("/best_stack/total_discount"))) } }
            div { dt { "Advertised price" } dd { (h::money(e.get("advertised_price"))) } }
        }
        @match disclosure {
            Ok(d) => {
                @let gov = &d.government_charges;
                p id="government-note" {
                    @if gov.status == "estimated" {
                        "Government charges are not in the waterfall: the dealer estimates them at "
                        strong { (h::amount(gov.total)) } " for " (gov.jurisdiction.as_ref().map(crate::preview::jurisdiction_name).unwrap_or_default()) "."
                    } @else {
                        "Government charges are not in the waterfall: " (words::hinted(V::GovernmentStatus, &gov.status)) " for this buyer's jurisdiction."
                    }
                }
            },
            Err(error) => (h::tool_error("The disclosure tool refused", error)),
        }
        div.scroll tabindex="0" { table id="branches" {
            caption { "Best stack and guaranteed floor per payment mode" }
            thead { tr {
                th scope="col" { "Payment mode" } th scope="col" { "Best stack" } th.num scope="col" { "Net price" }
                th scope="col" { "Search" } th scope="col" { "Guaranteed floor (no claim needed)" } th.num scope="col" { "Floor net price" }
                th scope="col" { "Potential extra and what it needs" }
            } }
            tbody { @for b in branches { tr {
                th scope="row" { (words::plain(V::PaymentMode, h::text(b, "payment_mode"))) }
                td { (stack_names(&b["best_stack"], b)) }
                td.num { (h::money(b.pointer("/best_stack/net_price"))) }
                td { (words::plain(V::Optimality, b.pointer("/best_stack/optimality/status").and_then(Value::as_str).unwrap_or(""))) }
                td { (stack_names(&b["guaranteed_floor"], b)) }
                td.num { (h::money(b.pointer("/guaranteed_floor/net_price"))) }
                td { ul { @for x in b["potential_extra"].as_array().unwrap_or(&empty) { li { (h::text(x, "summary")) } } } }
            } } }
        } }
        @for b in branches.iter().filter(|b| h::text(b, "payment_mode") == winning) {
            h3 id={"branch-" (winning)} { "Best " (words::plain(V::PaymentMode, winning)) " stack, line by line" }
            (branch_section(e, b, priced, &decl))
        }
        @for b in branches.iter().filter(|b| h::text(b, "payment_mode") != winning) {
            @let mode = h::text(b, "payment_mode");
            details.branch id={"branch-" (mode)} {
                summary { "The " (words::plain(V::PaymentMode, mode)) " stack, line by line" }
                (branch_section(e, b, priced, &decl))
            }
        }
        (h::raw_json("Raw structured content of the evaluation (as the agent receives it)", "raw-evaluation", e))
    }
}

#[cfg(test)]
mod tests;
