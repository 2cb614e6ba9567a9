//! The rooftop overview: inventory count, snapshot age against the SLA,
//! stale and withdrawn units, the distribution of completeness scores and
//! the fixes that would lift the most vehicles (docs/console.md "Pages").

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Extension, Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::Utc;
use maud::{Markup, html};

use super::aggregate::{self, RooftopScores};
use super::{Console, ConsoleError, encode, html as h, nav, page, signed_in};
use crate::state::AppState;
use crate::tools::get_disclosure;

/// How many of the lowest-scoring vehicles the overview lists.
const WORST: usize = 10;

async fn render(
    state: Arc<AppState>,
    console: Arc<Console>,
    peer: SocketAddr,
    rooftop_id: String,
    headers: HeaderMap,
) -> Response {
    let signed = match signed_in(&state, &console, &headers, peer).await {
        Ok(s) => s,
        Err(n) => return n.into_response(),
    };
    let rooftop = match super::covered_rooftop(&state, &signed.grant, &rooftop_id).await {
        Ok(r) => r,
        Err(e) => return e.page(Some(&signed)),
    };
    let view = match state.inventory.view(rooftop.directory()).await {
        Ok(v) => v,
        Err(e) => return ConsoleError::from(e).page(Some(&signed)),
    };
    let now = Utc::now();
    let sla = rooftop.record().settings.freshness_sla_seconds.inventory;
    let inventory = view.rooftop(rooftop.id());
    let scores = match aggregate::tool_scope(&state, &signed, get_disclosure::NAME) {
        Err(scope) => Err(scope),
        Ok(()) => match console.scores.scores(&state, &signed, &rooftop).await {
            Ok(s) => Ok(s),
            Err(e) => return e.page(Some(&signed)),
        },
    };
    signed
        .audit(
            &state,
            "dealergateway.console.overview",
            vec![rooftop.id().to_owned()],
        )
        .await;
    let body = html! {
        h1 { (rooftop.name()) ": overview" }
        @match inventory {
            None => p.notice { "No inventory snapshot has been imported for this rooftop yet." },
            Some(inv) => {
                @let latest = &inv.latest;
                @let snapshot_age = (now - latest.created_at()).num_seconds();
                @let newest = latest.sources().iter().map(|s| s.observed_at).max();
                // Stale as agents are told (the disclosures' freshness, the
                // same moment as the scores below); without the scores, by
                // the same rule from the records.
                @let stale = match &scores {
                    Ok(s) => s.vehicles.iter().filter(|v| v.stale).count(),
                    Err(_) => (0..latest.len()).filter(|&row| {
                        let r = latest.record(row);
                        (now - r.source.observed_at).num_seconds() > i64::from(sla)
                    }).count(),
                };
                @let withdrawn = inv.withdrawn.as_ref().map_or(0, |w| w.len());
                dl.facts {
                    div { dt { "Vehicles published" } dd id="fact-vehicles" { (latest.len()) } }
                    div { dt { "Snapshot" } dd { "version " (latest.version()) ", imported " (h::duration(snapshot_age)) " ago" } }
                    div {
                        dt { "Newest observation against the " (h::duration(i64::from(sla))) " inventory SLA" }
                        @match newest {
                            Some(t) if (now - t).num_seconds() <= i64::from(sla) => dd.ok id="fact-sla" { (h::duration((now - t).num_seconds())) " old: within the SLA" },
                            Some(t) => dd.bad id="fact-sla" { (h::duration((now - t).num_seconds())) " old: over the SLA by " (h::duration((now - t).num_seconds() - i64::from(sla))) },
                            None => dd id="fact-sla" { "no observation" },
                        }
                    }
                    div { dt { "Stale units (older than the SLA)" } dd id="fact-stale" { (stale) } }
                    div { dt { "Withdrawn units (in their grace period)" } dd id="fact-withdrawn" { (withdrawn) } }
                }
                @if stale > 0 {
                    p.notice { "Agents are told that stale vehicles may no longer be accurate, and stale records lose the advertised-price points of their completeness score. Import a fresh feed to bring them back within the SLA." }
                }
            }
        }
        // Law failures before the completeness fixes (docs/console.md
        // "Fix list"): what breaks advertised-price law comes first.
        @match &scores {
            Err(scope) => div.error role="alert" { p { "Completeness scores and the disclosure lint need the scope " code { (scope) } " (the disclosure tool's own); your grant does not carry it." } },
            Ok(scores) => {
                (super::lint::overview(rooftop.id(), &scores.lint))
                (completeness(rooftop.id(), scores))
            },
        }
    };
    page(
        &signed,
        &format!("{} overview", rooftop.name()),
        &nav(rooftop.id(), "Overview"),
        &body,
    )
}

/// `GET /console/rooftop/{rooftop_id}/`.
pub async fn handler(
    State(state): State<Arc<AppState>>,
    Extension(console): Extension<Arc<Console>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(rooftop_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    render(state, console, peer, rooftop_id, headers).await
}

/// Which buyer the scores assume, said on every page that shows one
/// (docs/console.md "Which buyer the scores assume").
pub fn assumed_jurisdiction(jurisdiction: Option<&serde_json::Value>) -> Markup {
    html! {
        p.assumed id="assumed-jurisdiction" {
            @match jurisdiction {
                Some(j) => {
                    "Scores assume a buyer in " strong { (crate::preview::jurisdiction_label(j)) }
                    ", the rooftop's own jurisdiction (the country and region of its address, never its postal code), "
                    "as an agent gets them when it passes the buyer's jurisdiction. An agent that passes none is told government charges are unknown."
                },
                None => {
                    "The rooftop's address has no ISO country code, so the scores assume no buyer jurisdiction: "
                    "government-charge estimates cannot be matched."
                },
            }
        }
    }
}

/// The score chart, the fixes ranked by how many vehicles they lift, and
/// the vehicles that need them most.
fn completeness(rooftop_id: &str, scores: &RooftopScores) -> Markup {
    let mut by_score: BTreeMap<u32, usize> = BTreeMap::new();
    for v in &scores.vehicles {
        *by_score.entry(v.score).or_default() += 1;
    }
    let most = by_score.values().copied().max().unwrap_or(0);
    // component -> (vehicles lifted, points gained in total, each distinct
    // fix with the vehicles it names: a fix depends on the configuration and,
    // for listed adjustments, on the vehicle).
    let mut fixes: BTreeMap<&'static str, (usize, u32, BTreeMap<&str, usize>)> = BTreeMap::new();
    for v in &scores.vehicles {
        for g in &v.gaps {
            let e = fixes.entry(g.component).or_default();
            e.0 += 1;
            e.1 += g.points;
            *e.2.entry(g.fix.as_str()).or_default() += 1;
        }
    }
    let mut ranked: Vec<(&'static str, usize, u32, BTreeMap<&str, usize>)> = fixes
        .into_iter()
        .map(|(c, (n, p, f))| (c, n, p, f))
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(b.0)));
    let mut worst: Vec<&aggregate::VehicleScore> = scores.vehicles.iter().collect();
    worst.sort_by(|a, b| a.score.cmp(&b.score).then(a.vehicle_id.cmp(&b.vehicle_id)));
    worst.truncate(WORST);
    let mean = if scores.vehicles.is_empty() {
        0
    } else {
        scores
            .vehicles
            .iter()
            .map(|v| u64::from(v.score))
            .sum::<u64>()
            / scores.vehicles.len() as u64
    };
    html! {
        h2 id="scores" { "Completeness scores" }
        p { "The disclosure completeness score (0 to 100) agents receive with every price disclosure, for each of the "
            (scores.vehicles.len()) " vehicles; mean " strong id="mean-score" { (mean) } "." }
        (assumed_jurisdiction(scores.jurisdiction.as_ref()))
        @if !scores.failures.is_empty() {
            p.notice { (scores.failures.len()) " disclosures could not be built (" (scores.failures.join(", ")) ")." }
        }
        div.scroll tabindex="0" {
            table id="score-distribution" {
                caption { "Vehicles by completeness score" }
                thead { tr { th scope="col" { "Score" } th.num scope="col" { "Vehicles" } th scope="col" { span.sr { "Bar" } } } }
                tbody {
                    @for (score, count) in by_score.iter().rev() {
                        tr {
                            th scope="row" { (score) }
                            td.num { (count) }
                            td { (h::bar(*count, most)) }
                        }
                    }
                }
            }
        }
        h2 id="fixes" { "Fixes that would lift the most vehicles" }
        @if ranked.is_empty() {
            p.ok { "Every vehicle scores 100: nothing to fix." }
        } @else {
            div.scroll tabindex="0" {
                table id="fix-ranking" {
                    caption { "Missing parts of the score, ranked by the number of vehicles a fix would lift" }
                    thead { tr { th scope="col" { "Rank" } th scope="col" { "Missing part" } th scope="col" { "How to fix it" } th.num scope="col" { "Vehicles lifted" } th.num scope="col" { "Points gained in total" } } }
                    tbody {
                        @for (i, (component, vehicles, points, how)) in ranked.iter().enumerate() {
                            tr {
                                td { (i + 1) }
                                th scope="row" { (aggregate::label(component)) }
                                td {
                                    @if how.len() == 1 {
                                        @for fix in how.keys() { (fix) }
                                    } @else {
                                        ul { @for (fix, n) in how { li { (fix) " (" (n) " vehicles)" } } }
                                    }
                                }
                                td.num { (vehicles) }
                                td.num { (points) }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Lowest-scoring vehicles" }
        div.scroll tabindex="0" {
            table id="worst-vehicles" {
                caption { "The vehicles agents describe least completely" }
                thead { tr { th scope="col" { "Vehicle" } th scope="col" { "Stock number" } th.num scope="col" { "Score" } th scope="col" { "Missing" } } }
                tbody {
                    @for v in &worst {
                        tr {
                            td { a href={"/console/rooftop/" (encode(rooftop_id)) "/vehicle/" (encode(&v.vehicle_id))} { (v.title) } }
                            td { (v.stock_number.as_deref().unwrap_or("–")) }
                            td.num { (v.score) }
                            td { (v.gaps.iter().map(|g| aggregate::label(g.component)).collect::<Vec<_>>().join("; ")) }
                        }
                    }
                }
            }
        }
    }
}
