//! The disclosure lint on the console (docs/console.md "Fix list",
//! docs/lint.md): the overview's law fixes, ranked before the
//! completeness fixes because a manager must see where a published price
//! breaks advertised-price law before what would only lift a score; and
//! the vehicle page's verdict per rule. Read from the same disclosures
//! the scores are ([`super::aggregate`]), so the two never disagree.

use maud::{Markup, html};
use pricing::lint::{Report, Verdict};

use super::encode;
use crate::lint::rooftop::{Example, RooftopLint, RuleSummary};

/// The words of a verdict on the page.
pub fn verdict_words(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::CannotDetermine => "cannot determine",
    }
}

fn place_words(lint: &RooftopLint) -> String {
    lint.place.as_ref().map_or_else(
        || "the rooftop's jurisdiction".to_owned(),
        |p| p.subdivision.clone().unwrap_or_else(|| p.country.clone()),
    )
}

fn examples(rooftop_id: &str, list: &[Example], total: usize) -> Markup {
    html! {
        @for (i, e) in list.iter().enumerate() {
            @if i > 0 { ", " }
            a href={"/console/rooftop/" (encode(rooftop_id)) "/vehicle/" (encode(&e.vehicle.vehicle_id))} {
                (e.vehicle.stock_number.as_deref().or(e.vehicle.vin.as_deref()).unwrap_or(&e.vehicle.vehicle_id))
            }
        }
        @if total > list.len() { " and " (total - list.len()) " more" }
    }
}

fn rule_row(rooftop_id: &str, rank: usize, r: &RuleSummary, failing: bool) -> Markup {
    let (count, list) = if failing {
        (r.failing, &r.failing_examples)
    } else {
        (r.cannot_determine, &r.undetermined_examples)
    };
    html! {
        tr {
            td { (rank) }
            th scope="row" { code { (r.rule_id) } @if !r.confirmed { " (unconfirmed)" } }
            td { (r.citation) }
            td.num { (count) }
            td {
                @if let Some(s) = &r.statement { p { (s) } }
                @if let Some(f) = &r.fix { p { strong { "Fix: " } (f) } }
            }
            td { (examples(rooftop_id, list, count)) }
        }
    }
}

const HEAD: [&str; 6] = [
    "Rank",
    "Rule",
    "Citation",
    "Vehicles",
    "What it says and how to fix it",
    "Vehicles, for example",
];

fn head() -> Markup {
    html! {
        thead { tr {
            @for (i, h) in HEAD.iter().enumerate() {
                @if i == 3 { th.num scope="col" { (h) } } @else { th scope="col" { (h) } }
            }
        } }
    }
}

/// The overview's law section: confirmed failures first (by vehicles),
/// unconfirmed failures (reported, never a failure on their own), then
/// the rules the published data cannot answer.
pub fn overview(rooftop_id: &str, lint: &RooftopLint) -> Markup {
    let failing: Vec<&RuleSummary> = lint
        .rules
        .iter()
        .filter(|r| r.confirmed_failure())
        .collect();
    let unconfirmed: Vec<&RuleSummary> = lint
        .rules
        .iter()
        .filter(|r| !r.confirmed && r.failing > 0)
        .collect();
    let unknown: Vec<&RuleSummary> = lint
        .rules
        .iter()
        .filter(|r| r.failing == 0 && r.cannot_determine > 0)
        .collect();
    html! {
        h2 id="lint" { "Advertised-price law" }
        p.notice { (crate::lint::NOTICE) " The rules and their citations are explained in docs/lint.md." }
        @if lint.vehicles == 0 {
            p { "No vehicle was checked." }
        } @else if lint.rules.is_empty() {
            p.notice id="lint-none" { "No rule of the catalogue applies to a buyer in " (place_words(lint)) ": nothing was checked, which is not a pass." }
        } @else {
            p { "The " (lint.vehicles) " published disclosures checked for a buyer in " strong { (place_words(lint)) }
                " (catalogue " (lint.catalogue_version) "): "
                strong id="lint-failing-vehicles" { (lint.failing_vehicles) } " vehicles fail a confirmed rule; "
                (lint.undetermined_vehicles) " cannot be determined from what is published." }
            @if failing.is_empty() {
                p.ok id="lint-no-failures" { "No confirmed rule fails on any vehicle." }
            } @else {
                div.scroll tabindex="0" {
                    table id="lint-fixes" {
                        caption { "Rules the published data breaks, ranked by the number of vehicles that fail" }
                        (head())
                        tbody { @for (i, r) in failing.iter().enumerate() { (rule_row(rooftop_id, i + 1, r, true)) } }
                    }
                }
            }
            @if !unconfirmed.is_empty() {
                div.scroll tabindex="0" {
                    table id="lint-unconfirmed" {
                        caption { "Rules whose wording is not confirmed from a primary source: reported, never a failure on their own" }
                        (head())
                        tbody { @for (i, r) in unconfirmed.iter().enumerate() { (rule_row(rooftop_id, i + 1, r, true)) } }
                    }
                }
            }
            @if !unknown.is_empty() {
                div.scroll tabindex="0" {
                    table id="lint-undetermined" {
                        caption { "Rules the published data cannot answer (never counted as a pass)" }
                        (head())
                        tbody { @for (i, r) in unknown.iter().enumerate() { (rule_row(rooftop_id, i + 1, r, false)) } }
                    }
                }
            }
        }
    }
}

/// The vehicle page's lint: each rule's verdict, reason and fix.
pub fn vehicle(report: &Report) -> Markup {
    let place = report
        .place
        .subdivision
        .as_deref()
        .unwrap_or(&report.place.country);
    html! {
        h2 id="lint" { "Advertised-price law" }
        p.notice { (crate::lint::NOTICE) " See docs/lint.md." }
        @if report.rules.is_empty() {
            p.notice { "No rule of the catalogue applies to a buyer in " (place) ": nothing was checked, which is not a pass." }
        } @else {
            p { "For a buyer in " strong { (place) } ": " strong id="lint-result" { (verdict_words(report.result)) } "." }
            div.scroll tabindex="0" {
                table id="lint-rules" {
                    caption { "Each rule that applies, with its verdict" }
                    thead { tr { th scope="col" { "Rule" } th scope="col" { "Citation" } th scope="col" { "Verdict" } th scope="col" { "Why" } th scope="col" { "How to fix it" } } }
                    tbody {
                        @for r in &report.rules {
                            tr class={"verdict-" (verdict_words(r.verdict).replace(' ', "-"))} {
                                th scope="row" { code { (r.rule_id) } @if !r.confirmed { " (unconfirmed)" } }
                                td { (r.citation) }
                                td { (verdict_words(r.verdict)) }
                                td { (r.reason) }
                                td { @if r.verdict != Verdict::Pass { (r.fix.as_deref().unwrap_or("–")) } }
                            }
                        }
                    }
                }
            }
        }
    }
}
