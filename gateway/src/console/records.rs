//! The pages read from the store and the services rather than a tool:
//! the organization's incentive programs, a rooftop's snapshot history and
//! its availability source (docs/console.md "Pages").

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Extension, Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::Utc;
use maud::{Markup, html};
use serde_json::{Value, json};

use super::aggregate;
use super::words::{self, Vocabulary as V};
use super::{Console, ConsoleError, Signed, encode, html as h, nav, page, signed_in};
use crate::availability;
use crate::state::AppState;
use crate::store::ProgramRevisionRecord;
use crate::tools::get_disclosure;

/// Snapshots the imports page lists.
const HISTORY: u32 = 50;

/// `GET /console/programs`: every program of the organization with every
/// revision (withdrawn ones with when), everything each declares in words,
/// which revision is in effect now and why, and how many of the manager's
/// vehicles each program reaches.
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
    let history = state.store.program_revisions(org).await?;
    let now = Utc::now();
    // Choosing and validating the set proves every rhai rule (docs/pricing.md
    // section 4): CPU work that belongs on the evaluation pool, never on an
    // async worker.
    let org_programs = state.offers.programs(state.store.as_ref(), org).await?;
    let in_effect = state
        .offers
        .pool()
        .run(move |_| org_programs.at(now.fixed_offset()))
        .await
        .map_err(super::busy)?;
    // Reach: vehicles of the covered rooftops whose disclosure (a buyer in
    // the rooftop's jurisdiction, any payment mode) lists the program as a
    // conditional adjustment.
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
    // Every revision, active or withdrawn, by program id.
    let mut by_program: BTreeMap<&str, Vec<&ProgramRevisionRecord>> = BTreeMap::new();
    for h in &history {
        by_program
            .entry(h.record.program_id.as_str())
            .or_default()
            .push(h);
    }
    let names: HashMap<&str, &str> = history
        .iter()
        .filter_map(|h| Some((h.record.program_id.as_str(), h.record.doc["name"].as_str()?)))
        .collect();
    let programs: Vec<ProgramView<'_>> = by_program
        .into_iter()
        .map(|(id, revisions)| ProgramView::new(id, revisions, &in_effect, now))
        .collect();
    let body = html! {
        h1 { "Incentive programs" }
        p { "Every program of " code { (org) } " and each of its revisions, withdrawn ones included: what it offers, to which buyers and vehicles, how it combines with others, "
            "and which revision an evaluation uses now and why (a chosen revision can still be outside its validity, and then applies to no vehicle)." }
        @if let Err(scope) = &scope {
            div.error role="alert" { p { "Reach needs the scope " code { (scope) } "; your grant does not carry it." } }
        }
        @if programs.is_empty() {
            p.notice { "No programs are published: agents are told conditional adjustments are unknown unless the feed lists them." }
        } @else {
            div.scroll tabindex="0" { table id="programs" {
                caption { "Programs at a glance (details below)" }
                thead { tr {
                    th scope="col" { "Program" } th scope="col" { "In effect now" } th scope="col" { "Kind" }
                    th.num scope="col" { "Amount" } th.num scope="col" { "Cap" } th scope="col" { "Validity" }
                    th.num scope="col" { "Vehicles reached" }
                } }
                tbody { @for p in &programs {
                    @let doc = &p.shown.record.doc;
                    tr {
                        th scope="row" { a href={"#program-" (encode(p.id))} { (h::text(doc, "name")) } br; code { (p.id) } }
                        td { @match p.chosen {
                            Some(c) if valid_at(&p.shown.record.doc, now) => { "revision " (c.revision) },
                            Some(c) => { "none (revision " (c.revision) " is outside its validity)" },
                            None => "none",
                        } }
                        td { (words::plain(V::ProgramKind, h::text(doc, "kind"))) }
                        td.num { (amount_text(doc)) }
                        td.num { (h::money(doc.get("cap")).replace("unknown", "none")) }
                        td { (validity_text(doc)) }
                        td.num { @if scope.is_ok() { (reach.get(p.id).copied().unwrap_or(0)) " of " (total) } @else { "–" } }
                    }
                } }
            } }
            @for p in &programs { (program_section(p, &names)) }
        }
        @if !in_effect.selection.unusable.is_empty() {
            h2 id="unusable" { "Programs that cannot be evaluated" }
            p { "Agents are told these may hold an offer the disclosure does not list." }
            ul { @for u in &in_effect.selection.unusable {
                li { strong { (names.get(u.program_id.as_str()).copied().unwrap_or(&u.program_id)) } " " code { (u.program_id) "@" (u.revision) } ": " (u.problems.join("; ")) }
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
/// Longest rule text the page prints (characters); the rest is counted.
const RULE_TEXT: usize = 2_000;

/// One program id: its revisions (ascending), the revision an evaluation
/// uses now, and the revision shown in full first (that one, else the
/// newest active, else the newest).
struct ProgramView<'a> {
    id: &'a str,
    revisions: Vec<&'a ProgramRevisionRecord>,
    chosen: Option<&'a crate::offers::RevisionChoice>,
    shown: &'a ProgramRevisionRecord,
    unusable: Vec<&'a crate::offers::UnusableProgram>,
    now: chrono::DateTime<Utc>,
}

/// Whether a revision's validity window (`valid_from` inclusive,
/// `valid_until` exclusive, docs/pricing.md) contains `now`.
fn valid_at(doc: &Value, now: chrono::DateTime<Utc>) -> bool {
    let at = |k: &str| {
        doc[k]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
    };
    at("valid_from").is_none_or(|t| t <= now) && at("valid_until").is_none_or(|t| now < t)
}

impl<'a> ProgramView<'a> {
    fn new(
        id: &'a str,
        revisions: Vec<&'a ProgramRevisionRecord>,
        in_effect: &'a crate::offers::ProgramsAt,
        now: chrono::DateTime<Utc>,
    ) -> Self {
        let chosen = in_effect
            .selection
            .revisions
            .iter()
            .find(|c| c.program_id == id);
        let newest_active = revisions.iter().rev().find(|r| r.withdrawn_at.is_none());
        let shown = chosen
            .and_then(|c| revisions.iter().find(|r| r.record.revision == c.revision))
            .or(newest_active)
            .or(revisions.last())
            .copied()
            .unwrap_or(revisions[0]);
        let unusable = in_effect
            .selection
            .unusable
            .iter()
            .filter(|u| u.program_id == id)
            .collect();
        ProgramView {
            id,
            revisions,
            chosen,
            shown,
            unusable,
            now,
        }
    }

    /// Where revision `r` stands now, in words.
    fn status(&self, r: &ProgramRevisionRecord) -> Markup {
        let revision = r.record.revision;
        html! {
            @if let Some(t) = r.withdrawn_at {
                span.bad { "withdrawn " (h::time(t)) }
            } @else if let Some(u) = self.unusable.iter().find(|u| u.revision == revision) {
                span.bad { "cannot be evaluated: " (u.problems.join("; ")) }
            } @else if let Some(c) = self.chosen.filter(|c| c.revision == revision) {
                @if valid_at(&r.record.doc, self.now) {
                    strong.ok { "in effect now" } ": " (c.reason)
                } @else {
                    strong.warn { "chosen now, but outside its validity: it applies to no vehicle" } " (" (c.reason) ")"
                }
            } @else if let Some(n) = self.chosen.and_then(|c| c.not_used.iter().find(|n| n.revision == revision)) {
                "active, not used now: " (n.reason)
            } @else {
                "active"
            }
        }
    }
}

/// A program's amount: "1,500.00 USD", "2.5 % of the advertised price",
/// "unknown: <why>".
fn amount_text(doc: &Value) -> String {
    let a = &doc["amount"];
    match h::text(a, "status") {
        "known" => h::money(a.get("amount")),
        "percent_off" => format!("{} % of the advertised price", h::text(a, "percent")),
        "unknown" => format!("unknown: {}", h::text(a, "reason")),
        other => other.to_owned(),
    }
}

fn validity_text(doc: &Value) -> String {
    match (doc.get("valid_from"), doc.get("valid_until")) {
        (None, None) => "no limit".to_owned(),
        (Some(_), None) => format!("from {}, no end", h::time_of(doc, "valid_from")),
        (None, Some(_)) => format!("until {}", h::time_of(doc, "valid_until")),
        (Some(_), Some(_)) => format!(
            "from {} until {}",
            h::time_of(doc, "valid_from"),
            h::time_of(doc, "valid_until")
        ),
    }
}

/// A list of strings, or `otherwise` when absent.
fn list(v: &Value, otherwise: &str) -> String {
    v.as_array().map_or_else(
        || otherwise.to_owned(),
        |a| {
            a.iter()
                .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(", ")
        },
    )
}

/// A `combinable_with` / `not_combinable_with` entry in words.
fn reference(entry: &str, names: &HashMap<&str, &str>) -> Markup {
    html! {
        @if let Some(group) = entry.strip_prefix("group:") {
            "any program of group " (group)
        } @else if let Some(tag) = entry.strip_prefix("tag:") {
            "any program tagged " (tag)
        } @else {
            (names.get(entry).copied().unwrap_or("a program not stored")) " " code.hint { (entry) }
        }
    }
}

/// Everything one revision declares, in words.
fn revision_facts(doc: &Value, names: &HashMap<&str, &str>) -> Markup {
    let empty = Vec::new();
    let a = &doc["amount"];
    let stacking = &doc["stacking"];
    let scope = &doc["applies_to"];
    let program: Option<pricing::Program> = serde_json::from_value(doc.clone()).ok();
    let sentences = program
        .as_ref()
        .map(crate::preview::rule_sentences)
        .unwrap_or_default();
    let rule = stacking["rule"].as_str();
    html! {
        dl.props {
            div { dt { "Kind" } dd { (words::hinted(V::ProgramKind, h::text(doc, "kind"))) ", " (words::plain(V::Direction, h::text(doc, "direction"))) } }
            div { dt { "Amount" } dd.amount {
                @match h::text(a, "status") {
                    "known" => (h::money(a.get("amount"))),
                    "percent_off" => { (h::text(a, "percent")) " % of the advertised price, rounded " (words::plain(V::Rounding, h::text(a, "rounding"))) },
                    _ => { "unknown: " (h::text(a, "reason")) },
                }
            } }
            div { dt { "Cap" } dd.cap { @if doc.get("cap").is_some() { "at most " (h::money(doc.get("cap"))) } @else { "none" } } }
            div { dt { "Validity" } dd { (validity_text(doc)) } }
            div { dt { "Payment modes" } dd { @match doc["payment_modes"].as_array() {
                Some(modes) => (modes.iter().filter_map(Value::as_str).map(|m| words::plain(V::PaymentMode, m)).collect::<Vec<_>>().join(", ")),
                None => "every payment mode",
            } } }
            div { dt { "Jurisdictions" } dd { (list(&doc["jurisdictions"], "everywhere"))
                @if let Some(prefixes) = doc["excluded_postal_prefixes"].as_array().filter(|p| !p.is_empty()) {
                    "; not for postal codes starting " (prefixes.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
                }
            } }
            div { dt { "Vehicles" } dd {
                @let parts: Vec<String> = ["makes", "models", "years", "trims", "conditions", "vins", "rooftop_ids"].iter()
                    .filter(|k| scope.get(**k).is_some())
                    .map(|k| format!("{}: {}", k.replace('_', " "), list(&scope[*k], "")))
                    .collect();
                @if parts.is_empty() { "every vehicle" } @else { (parts.join("; ")) }
            } }
            div.wide { dt { "Buyer criteria" } dd.criteria {
                @let criteria = doc["criteria"].as_array().unwrap_or(&empty);
                @if criteria.is_empty() {
                    "none: no claim needed"
                } @else {
                    (words::plain(V::CriteriaMode, doc["criteria_mode"].as_str().unwrap_or("all"))) ":"
                    ul { @for c in criteria { li { (super::vehicles::criterion_words(c)) } } }
                }
            } }
            div.wide { dt { "Stacking" } dd.stacking {
                "group " (h::text(stacking, "group")) ": " (words::hinted(V::Combinability, h::text(stacking, "combinability")))
                "; " (words::hinted(V::GroupResolution, stacking["group_resolution"].as_str().unwrap_or("all")))
                @if stacking["always_stackable"] == json!(true) { "; combines with anything that does not exclude it" }
                @if stacking["top_of_deal"] == json!(true) { "; a primary (top-of-deal) program, one per stack" }
                @let with = stacking["combinable_with"].as_array().unwrap_or(&empty);
                @let never = stacking["not_combinable_with"].as_array().unwrap_or(&empty);
                @if !with.is_empty() {
                    p { "Combines with: " @for (i, e) in with.iter().filter_map(Value::as_str).enumerate() { @if i > 0 { "; " } (reference(e, names)) } }
                }
                @if !never.is_empty() {
                    p { "Never with: " @for (i, e) in never.iter().filter_map(Value::as_str).enumerate() { @if i > 0 { "; " } (reference(e, names)) } }
                }
                @if !sentences.is_empty() {
                    ul.rules { @for s in &sentences { li { (s) } } }
                }
                @if let Some(rule) = rule {
                    p { "Combination rule (rhai), "
                        @if stacking["rule_monotone"] == json!(true) {
                            "declared monotone: a stack it rejects has every larger stack rejected too, so the search prunes them"
                        } @else {
                            "not declared monotone: every candidate stack is judged"
                        } ":" }
                    @let chars = rule.chars().count();
                    pre.rule tabindex="0" { code { (rule.chars().take(RULE_TEXT).collect::<String>()) } }
                    @if chars > RULE_TEXT { p { "… " (chars - RULE_TEXT) " more characters (the whole rule is in the programs file)." } }
                }
            } }
            @if let Some(tags) = doc["tags"].as_array().filter(|t| !t.is_empty()) {
                div { dt { "Tags" } dd { (list(&Value::Array(tags.clone()), "")) } }
            }
            @if let Some(text) = doc["disclosure"].as_str() {
                div.wide { dt { "Disclosure" } dd { (text) } }
            }
            @if let Some(p) = doc.get("provenance") {
                div { dt { "Source" } dd { (h::text(p, "source_name")) " (" (words::plain(V::SourceAuthority, h::text(p, "authority"))) ")" } }
            }
            @if program.is_none() {
                div.wide { dt { "Stored document" } dd.bad { "It does not read as a program of this gateway's format; see \"Programs that cannot be evaluated\"." } }
            }
        }
    }
}

/// One program: the revision shown in full, the revision history, the
/// other revisions behind toggles.
fn program_section(p: &ProgramView<'_>, names: &HashMap<&str, &str>) -> Markup {
    let shown = p.shown;
    html! {
        section.program id={"program-" (p.id)} aria-labelledby={"program-" (p.id) "-name"} {
            h2 id={"program-" (p.id) "-name"} { (h::text(&shown.record.doc, "name")) }
            p { code { (p.id) } ", revision " (shown.record.revision) " shown: " (p.status(shown)) }
            (revision_facts(&shown.record.doc, names))
            div.scroll tabindex="0" { table.history id={"history-" (p.id)} {
                caption { "Revisions of " (h::text(&shown.record.doc, "name")) }
                thead { tr {
                    th scope="col" { "Revision" } th scope="col" { "Imported" } th scope="col" { "Validity" }
                    th.num scope="col" { "Amount" } th scope="col" { "Now" }
                } }
                tbody { @for r in &p.revisions { tr {
                    th scope="row" { (r.record.revision) }
                    td { (h::time(r.record.imported_at)) br; "from " (r.record.source.source_name) }
                    td { (validity_text(&r.record.doc)) }
                    td.num { (amount_text(&r.record.doc)) }
                    td.status { (p.status(r)) }
                } } }
            } }
            @for r in p.revisions.iter().filter(|r| r.record.revision != shown.record.revision) {
                details.revision {
                    summary { "Revision " (r.record.revision) " in full" }
                    (revision_facts(&r.record.doc, names))
                }
            }
        }
    }
}

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
                    td { code { (s.source.source_name) } " (" (words::hinted(V::SourceAuthority, &s.source.authority)) ")" }
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
                th scope="row" { (words::hinted(V::Band, band)) }
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
