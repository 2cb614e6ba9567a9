//! The pages read from the store and the services rather than a tool:
//! the organization's incentive programs, a rooftop's snapshot history and
//! its availability source (issue 14 item 3).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Extension, Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::Utc;
use maud::html;
use serde_json::Value;

use super::aggregate;
use super::{Console, ConsoleError, Signed, encode, html as h, nav, page, signed_in};
use crate::availability;
use crate::state::AppState;
use crate::tools::get_disclosure;

/// Snapshots the imports page lists.
const HISTORY: u32 = 50;

/// `GET /console/programs`: every active revision of the organization's
/// programs, which revision is in effect now and why, and how many of the
/// manager's vehicles each program reaches.
pub async fn programs(
    State(state): State<Arc<AppState>>,
    Extension(console): Extension<Arc<Console>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let signed = match signed_in(&state, &console, &headers, peer).await {
        Ok(s) => s,
        Err(n) => return n.into_response(),
    };
    match programs_page(&state, &console, &signed).await {
        Ok(r) => r,
        Err(e) => e.page(Some(&signed)),
    }
}

async fn programs_page(
    state: &Arc<AppState>,
    console: &Console,
    signed: &Signed,
) -> Result<Response, ConsoleError> {
    let org = &signed.grant.organization_id;
    let rooftops = super::covered_rooftops(state, &signed.grant).await?;
    if rooftops.is_empty() {
        return Err(ConsoleError::NotFound);
    }
    let records = state.store.current_programs(org).await?;
    let now = Utc::now();
    let in_effect = state
        .offers
        .programs(state.store.as_ref(), org)
        .await?
        .at(now.fixed_offset());
    // Reach: vehicles of the covered rooftops whose disclosure (default
    // profile: the rooftop's jurisdiction, any payment mode) lists the
    // program as a conditional adjustment.
    let mut reach: BTreeMap<String, usize> = BTreeMap::new();
    let mut total = 0usize;
    let scope = aggregate::tool_scope(state, signed, get_disclosure::NAME);
    if scope.is_ok() {
        for r in &rooftops {
            let scores = console.scores.scores(state, signed, r).await?;
            total += scores.vehicles.len();
            for v in &scores.vehicles {
                for a in &v.adjustments {
                    *reach.entry(a.clone()).or_default() += 1;
                }
            }
        }
    }
    signed
        .audit(
            state,
            "dealergateway.console.programs",
            rooftops.iter().map(|r| r.id().to_owned()).collect(),
        )
        .await;
    let body = html! {
        h1 { "Incentive programs" }
        p { "Every active revision of the programs of " code { (org) } ", with the revision an evaluation uses now and why (a chosen revision can still be outside its validity, and then applies to no vehicle)." }
        @if let Err(scope) = &scope {
            div.error role="alert" { p { "Reach needs the scope " code { (scope) } "; your grant does not carry it." } }
        }
        @if records.is_empty() {
            p.notice { "No programs are published: agents are told conditional adjustments are unknown unless the feed lists them." }
        } @else {
            div.scroll tabindex="0" { table id="programs" {
                caption { "Programs and revisions" }
                thead { tr {
                    th scope="col" { "Program" } th scope="col" { "Revision" } th scope="col" { "Kind" } th.num scope="col" { "Amount" }
                    th scope="col" { "Validity" } th scope="col" { "Stacking" } th scope="col" { "Revision an evaluation uses now" }
                    th.num scope="col" { "Vehicles reached" }
                } }
                tbody { @for p in &records {
                    @let doc = &p.doc;
                    @let choice = in_effect.selection.revisions.iter().find(|c| c.program_id == p.program_id);
                    tr {
                        th scope="row" { (h::text(doc, "name")) br; code { (p.program_id) } }
                        td { (p.revision) }
                        td { (h::text(doc, "kind")) " (" (h::text(doc, "direction")) ")" }
                        td.num { @match doc.pointer("/amount/status").and_then(Value::as_str) {
                            Some("known") => (h::money(doc.pointer("/amount/amount"))),
                            Some("percent_off") => { (doc.pointer("/amount/percent").and_then(Value::as_str).unwrap_or("?")) " % of the price" },
                            Some(other) => (other),
                            None => "–",
                        } }
                        td { @if doc.get("valid_from").is_none() && doc.get("valid_until").is_none() {
                            "no limit"
                        } @else {
                            "from " (h::time_of(doc, "valid_from")) br; "until " (h::time_of(doc, "valid_until"))
                        } }
                        td { (h::text(&doc["stacking"], "group")) ", " (h::text(&doc["stacking"], "combinability"))
                            @if let Some(res) = doc.pointer("/stacking/group_resolution").and_then(Value::as_str) { ", " (res) }
                            @if let Some(hash) = &p.rule_hash { br; "rule " code { (hash.chars().take(19).collect::<String>()) "…" } }
                        }
                        td { @match choice {
                            Some(c) if c.revision == p.revision => { strong { "this revision" } ": " (c.reason) },
                            Some(c) => { "revision " (c.revision) ": " (c.reason) },
                            None => "none usable",
                        } }
                        td.num { @if scope.is_ok() { (reach.get(&p.program_id).copied().unwrap_or(0)) " of " (total) } @else { "–" } }
                    }
                } }
            } }
        }
        @if !in_effect.selection.unusable.is_empty() {
            h2 { "Programs that cannot be evaluated" }
            ul { @for u in &in_effect.selection.unusable {
                li { code { (u.program_id) "@" (u.revision) } ": " (u.problems.join("; ")) }
            } }
        }
    };
    Ok(page(
        signed,
        "Programs",
        &nav(rooftops[0].id(), "Programs"),
        &body,
    ))
}

/// Refused imports the imports page shows (of the newest kept per
/// organization, [`crate::store::import_log::MAX_ATTEMPTS_PER_ORGANIZATION`]).
const REFUSED_SHOWN: usize = 20;

/// `GET /console/rooftop/{rooftop_id}/imports`: the snapshot history with
/// added, changed and removed counts, and the refused imports that concern
/// the rooftop: its feeds, and the organization's dealers and programs files
/// (docs/console.md "Imports"). Only the manager's own organization's are
/// read, and a row never names another organization.
pub async fn imports(
    State(state): State<Arc<AppState>>,
    Extension(console): Extension<Arc<Console>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(rooftop_id): Path<String>,
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
    let history = match state
        .store
        .snapshot_history(&signed.grant.organization_id, rooftop.id(), HISTORY)
        .await
    {
        Ok(h) => h,
        Err(e) => return ConsoleError::from(e).page(Some(&signed)),
    };
    let refused: Vec<crate::store::ImportAttempt> = match state
        .store
        .import_attempts(
            &signed.grant.organization_id,
            crate::store::import_log::MAX_ATTEMPTS_PER_ORGANIZATION,
        )
        .await
    {
        Ok(all) => all
            .into_iter()
            .filter(|a| a.concerns(rooftop.id()))
            .take(REFUSED_SHOWN)
            .collect(),
        Err(e) => return ConsoleError::from(e).page(Some(&signed)),
    };
    signed
        .audit(
            &state,
            "dealergateway.console.imports",
            vec![rooftop.id().to_owned()],
        )
        .await;
    let body = html! {
        h1 { (rooftop.name()) ": imports" }
        p { "Each import of a feed creates one immutable snapshot; agents are served the newest. Newest first, at most " (HISTORY) "." }
        @if history.is_empty() {
            p.notice { "No snapshot has been imported for this rooftop." }
        } @else {
            div.scroll tabindex="0" { table id="snapshot-history" {
                caption { "Snapshot history" }
                thead { tr {
                    th scope="col" { "Version" } th scope="col" { "Imported" } th scope="col" { "Source" }
                    th.num scope="col" { "Vehicles" } th.num scope="col" { "Added" } th.num scope="col" { "Changed" }
                    th.num scope="col" { "Unchanged" } th.num scope="col" { "Removed" }
                } }
                tbody { @for s in &history { tr {
                    th scope="row" { (s.version) }
                    td { (h::time(s.created_at)) }
                    td { code { (s.source.source_name) } " (" (s.source.authority) ")" }
                    td.num { (s.vehicle_count) }
                    td.num { (s.summary.vehicles_added) }
                    td.num { (s.summary.vehicles_changed) }
                    td.num { (s.summary.vehicles_unchanged) }
                    td.num { (s.summary.vehicles_removed) }
                } } }
            } }
        }
        h2 { "Refused imports" }
        p { "Files of this rooftop, and dealers and programs files of the organization, that were refused: nothing of them was written, and agents are still told what the last accepted import said. The operator's terminal listed every problem. Newest first, at most " (REFUSED_SHOWN) "." }
        @if refused.is_empty() {
            p.notice id="no-refused-imports" { "No import concerning this rooftop was refused." }
        } @else {
            div.scroll tabindex="0" { table id="refused-imports" {
                caption { "Refused imports" }
                thead { tr {
                    th scope="col" { "When" } th scope="col" { "File" } th scope="col" { "Refused because" }
                    th scope="col" { "Why" } th.num scope="col" { "Problems" }
                } }
                tbody { @for a in &refused { tr {
                    th scope="row" { (h::time(a.attempted_at)) }
                    td { (kind_words(a.kind)) br; code { (a.file) } }
                    td { (outcome_words(a.outcome)) }
                    td { (a.reason) }
                    td.num { (a.problems) }
                } } }
            } }
        }
    };
    page(
        &signed,
        &format!("{} imports", rooftop.name()),
        &nav(rooftop.id(), "Imports"),
        &body,
    )
}

/// What a refused import was, in words.
fn kind_words(kind: crate::store::ImportKind) -> &'static str {
    use crate::store::ImportKind;
    match kind {
        ImportKind::Inventory => "Inventory feed",
        ImportKind::Programs => "Programs file",
        ImportKind::Dealers => "Dealers file",
    }
}

/// Why an import was refused, in words.
fn outcome_words(outcome: crate::store::ImportOutcome) -> &'static str {
    use crate::store::ImportOutcome;
    match outcome {
        ImportOutcome::Invalid => "the file breaks the format's rules",
        ImportOutcome::Refused => "the organization or the store refused it",
        ImportOutcome::RemovalGuard => "it would remove too many vehicles (removal guard)",
        ImportOutcome::Imported => "imported",
    }
}

/// `GET /console/rooftop/{rooftop_id}/availability`: where availability
/// answers come from, and the band every vehicle is in now (the band the
/// disclosure tool reports, from stored observations only).
pub async fn availability(
    State(state): State<Arc<AppState>>,
    Extension(console): Extension<Arc<Console>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(rooftop_id): Path<String>,
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
    let mut bands: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut live = 0usize;
    let mut newest_live: Option<chrono::DateTime<Utc>> = None;
    if let Some(inv) = view.rooftop(rooftop.id()) {
        for row in 0..inv.latest.len() {
            let record = inv.latest.record(row);
            let overlay = state
                .availability
                .overlay_or_store(state.store.as_ref(), rooftop.record(), &record.vehicle_id)
                .await;
            if let Some(o) = overlay
                .as_ref()
                .filter(|o| o.observed_at > record.source.observed_at)
            {
                live += 1;
                newest_live = newest_live.max(Some(o.observed_at));
            }
            let band = get_disclosure::stored_band(&record, false, overlay.as_ref(), now);
            *bands.entry(band.as_str()).or_default() += 1;
        }
    }
    signed
        .audit(
            &state,
            "dealergateway.console.availability",
            vec![rooftop.id().to_owned()],
        )
        .await;
    let sla = &rooftop.record().settings.freshness_sla_seconds;
    let most = bands.values().copied().max().unwrap_or(0);
    let source = availability::http_source(rooftop.record());
    let body = html! {
        h1 { (rooftop.name()) ": availability sources" }
        dl.facts {
            div { dt { "Source" } dd id="availability-source" { @match source {
                Some(s) => { "dealer system: " code { (availability::source::source_name(s)) } },
                None => "the inventory feed only (no live check)",
            } } }
            div { dt { "Availability SLA" } dd { (h::duration(i64::from(sla.availability))) } }
            div { dt { "Vehicles with a live observation newer than the feed" } dd { (live) } }
            div { dt { "Newest live observation" } dd { @match newest_live { Some(t) => (h::time(t)), None => "none" } } }
        }
        h2 { "Circuit breaker" }
        @match source {
            None => p { "No live source, so no breaker: checks answer from the feed." },
            Some(s) => {
                p id="breaker-state" { "On this replica: " strong { (breaker_text(state.availability.breaker_state(s))) } }
                p { "After 5 consecutive failed checks the gateway stops calling the dealer system for 30 s and answers "
                    code { "dealeragent.upstream.unavailable" } "; then one check probes it. Each replica keeps its own breaker." }
            },
        }
        h2 { "Bands of the current vehicles" }
        p { "The band each vehicle's availability is reported in now, from stored observations (the disclosure tool's own rule)." }
        div.scroll tabindex="0" { table id="availability-bands" {
            caption { "Vehicles by availability band" }
            thead { tr { th scope="col" { "Band" } th.num scope="col" { "Vehicles" } th scope="col" { span.sr { "Bar" } } } }
            tbody { @for (band, n) in &bands { tr {
                th scope="row" { (band) }
                td.num { (n) }
                td { (h::bar(*n, most)) }
            } } }
        } }
        p { a href={"/console/rooftop/" (encode(rooftop.id())) "/"} { "Back to the overview" } }
    };
    page(
        &signed,
        &format!("{} availability", rooftop.name()),
        &nav(rooftop.id(), "Availability sources"),
        &body,
    )
}

/// A breaker state in words.
fn breaker_text(state: availability::BreakerState) -> String {
    use availability::BreakerState;
    match state {
        BreakerState::Closed { failures: 0 } => "closed: checks reach the dealer system".to_owned(),
        BreakerState::Closed { failures } => {
            format!("closed, after {failures} consecutive failed check(s)")
        }
        BreakerState::Open { remaining } => format!(
            "open: checks are refused for {} s more",
            remaining.as_secs().max(1)
        ),
        BreakerState::HalfOpen { probing: true } => {
            "half-open: one check is probing the dealer system".to_owned()
        }
        BreakerState::HalfOpen { probing: false } => {
            "half-open: the next check probes the dealer system".to_owned()
        }
    }
}
