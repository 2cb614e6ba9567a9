//! `dealer-gateway preview`: the rooftop manager's view of one vehicle's
//! pricing in the terminal (docs/pricing.md) — the disclosure exactly as an
//! agent sees it (the same builder as `dealeragent.pricing.get_disclosure`),
//! the completeness score with what is missing and how to fix it, and the
//! offer evaluation as a table. Read-only; never calls a dealer system.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use chrono::{DateTime, SubsecRound as _, Utc};
use pricing::stacking::{
    Applicability, ClaimValue, Eligibility, Evaluation, Profile, ProfileJurisdiction,
    ProfilePaymentMode, ResolvedAmount, SearchBudget,
};
use serde_json::{Value, json};

use crate::Error;
use crate::dap::disclosure::PricingDisclosure;
use crate::disclosure::{self, Inputs, WEIGHT_COMPONENT, band_points};
use crate::store::RooftopPricing;

fn io(message: impl Into<String>) -> Error {
    Error::Io(message.into())
}

/// What the preview prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The readable summary: disclosure text, price components, the score
    /// with its fixes, the offer evaluation (the default of the command).
    Summary,
    /// The summary, then the disclosure document as pretty-printed JSON,
    /// exactly as agents receive it (`preview --json`).
    SummaryAndJson,
}

/// Which vehicle to preview, and with which buyer profile.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub organization: &'a str,
    pub rooftop: &'a str,
    /// The VIN (wins over `stock` when both are given).
    pub vin: Option<&'a str>,
    pub stock: Option<&'a str>,
    /// A profile file (YAML or JSON) to evaluate instead of the default.
    pub profile: Option<&'a Path>,
}

/// The full preview text of one vehicle, selected by VIN or stock number:
/// the summary and the JSON document ([`Output::SummaryAndJson`], what
/// `preview --json` prints).
///
/// # Errors
/// The store cannot be read, the organization, rooftop or vehicle is not
/// found, or the profile file is unreadable or invalid.
pub async fn run(
    database_url: &str,
    organization: &str,
    rooftop: &str,
    vin: Option<&str>,
    stock: Option<&str>,
    profile_file: Option<&Path>,
) -> Result<String, Error> {
    let request = Request {
        organization,
        rooftop,
        vin,
        stock,
        profile: profile_file,
    };
    render(database_url, &request, Output::SummaryAndJson).await
}

/// The preview text of one vehicle as `output` asks.
///
/// # Errors
/// As [`run`].
pub async fn render(
    database_url: &str,
    request: &Request<'_>,
    output: Output,
) -> Result<String, Error> {
    let Request {
        organization,
        rooftop,
        vin,
        stock,
        profile: profile_file,
    } = *request;
    let now = Utc::now().trunc_subsecs(0);
    let store = crate::store::open(database_url).await?;
    let orgs = store.list_organizations().await?;
    let org = orgs
        .iter()
        .find(|o| o.organization_id == organization)
        .ok_or_else(|| io(format!("organization {organization} not found")))?;
    let roof = org
        .rooftops
        .iter()
        .find(|r| r.rooftop_id == rooftop)
        .ok_or_else(|| io(format!("rooftop {rooftop} not found in {organization}")))?;
    let snapshot = store
        .latest_snapshots()
        .await?
        .into_iter()
        .find(|s| s.organization_id == organization && s.rooftop_id == rooftop)
        .ok_or_else(|| io(format!("rooftop {rooftop} has no imported inventory")))?;
    let vehicles = store.snapshot_vehicles(&snapshot.snapshot_id).await?;
    let record = vehicles
        .into_iter()
        .find(|v| match (vin, stock) {
            (Some(vin), _) => v
                .vin
                .as_deref()
                .is_some_and(|x| x.eq_ignore_ascii_case(vin)),
            (None, Some(stock)) => v.stock_number.as_deref() == Some(stock),
            (None, None) => false,
        })
        .ok_or_else(|| {
            io("vehicle not found in the rooftop's latest inventory (give --vin or --stock)")
        })?;
    let observation = store
        .latest_availability(rooftop, &record.vehicle_id)
        .await?;
    let band = crate::tools::get_disclosure::stored_band(&record, false, observation.as_ref(), now);
    let offers = crate::offers::OffersService::with_refresh(std::time::Duration::ZERO);
    let programs = offers.programs(store.as_ref(), organization).await?;
    let profile = match profile_file {
        Some(path) => Some(read_profile(path, now)?),
        None => None,
    };
    // The disclosure is the one an agent gets when it passes the buyer's
    // jurisdiction (and payment mode): the profile's buyer, else a buyer in
    // the rooftop's own jurisdiction. Without one, every rooftop would show
    // government charges as unknown, its estimates unused
    // (docs/console.md "Which buyer the scores assume").
    let assumed = match &profile {
        Some(p) => jurisdiction_value(&p.jurisdiction),
        None => rooftop_jurisdiction(&roof.dap),
    };
    let payment_mode = profile
        .as_ref()
        .map(|p| p.payment_mode)
        .filter(|m| *m != ProfilePaymentMode::Unknown)
        .and_then(|m| serde_json::to_value(m).ok())
        .and_then(|v| v.as_str().map(str::to_owned));
    let programs_input =
        disclosure::profile_jurisdiction(assumed.as_ref(), &roof.dap).and_then(|j| {
            disclosure::programs_input(
                &record,
                &programs.at(now.fixed_offset()),
                programs.loaded_at,
                j,
                payment_mode.as_deref(),
                now,
            )
        });
    let built = disclosure::build(&Inputs {
        record: &record,
        pricing: &roof.settings.pricing,
        config_source: Some(&org.source),
        inventory_sla_seconds: roof.settings.freshness_sla_seconds.inventory,
        withdrawn: false,
        snapshot_version: snapshot.version,
        band,
        jurisdiction: assumed.as_ref(),
        payment_mode: payment_mode.as_deref(),
        programs: programs_input.as_ref(),
        now,
    });

    let mut out = String::new();
    let title = format!(
        "{} {} {}{}",
        record.year,
        record.make,
        record.model,
        record
            .trim
            .as_deref()
            .map(|t| format!(" {t}"))
            .unwrap_or_default()
    );
    let _ = writeln!(out, "Pricing preview: {title}");
    let _ = writeln!(
        out,
        "  vehicle {}  VIN {}  stock {}  rooftop {}/{}  snapshot v{}  disclosure {}",
        record.vehicle_id,
        record.vin.as_deref().unwrap_or("-"),
        record.stock_number.as_deref().unwrap_or("-"),
        organization,
        rooftop,
        snapshot.version,
        built.document.disclosure_id
    );
    let _ = writeln!(
        out,
        "  buyer assumed: {}",
        assumed_text(assumed.as_ref(), profile.is_some(), payment_mode.as_deref())
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "== What an agent is told (disclosure_text) ==");
    let _ = writeln!(out, "{}", built.document.disclosure_text);
    let _ = writeln!(out);
    write_parts(&mut out, &built.document);
    let _ = writeln!(out);
    let fixes = Fixes {
        pricing: &roof.settings.pricing,
        assumed: assumed.as_ref(),
        live_source: crate::availability::http_source(roof).is_some(),
    };
    write_score(&mut out, &built, &fixes);
    let _ = writeln!(out);
    if programs.at(now.fixed_offset()).is_empty() {
        let _ = writeln!(
            out,
            "== Offer evaluation ==\nNo incentive programs are published for {organization} (import them with `dealer-gateway import programs`)."
        );
    } else {
        let profile = match profile {
            Some(p) => p,
            None => Profile {
                payment_mode: ProfilePaymentMode::Unknown,
                jurisdiction: disclosure::profile_jurisdiction(None, &roof.dap).unwrap_or(
                    ProfileJurisdiction {
                        country: "US".into(),
                        subdivision: None,
                        postal_code: None,
                    },
                ),
                claims: BTreeMap::new(),
                as_of: now.fixed_offset(),
            },
        };
        let vehicle = crate::offers::vehicle_for_pricing(&record);
        // The revisions live at the profile's as_of (docs/pricing.md "Revisions").
        let selected = programs.at(profile.as_of);
        for sentence in selected.unusable_sentences() {
            let _ = writeln!(out, "warning: {sentence}");
        }
        match selected.evaluate(&vehicle, &profile, SearchBudget::default()) {
            Ok(e) => write_evaluation(&mut out, &e, &profile),
            Err(e) => {
                let _ = writeln!(out, "== Offer evaluation ==\nnot evaluated: {e}");
            }
        }
        let _ = writeln!(out);
        write_revisions_and_rules(&mut out, &selected, &profile);
    }
    let _ = writeln!(out);
    match output {
        Output::Summary => {
            // The raw document is most of the lines and little of the
            // meaning for a manager: only on request.
            let _ = writeln!(
                out,
                "(The disclosure document as agents receive it, in JSON: add --json.)"
            );
        }
        Output::SummaryAndJson => {
            let _ = writeln!(
                out,
                "== The disclosure document (JSON, as returned to agents) =="
            );
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&built.document).unwrap_or_default()
            );
        }
    }
    Ok(out)
}

fn write_parts(out: &mut String, doc: &PricingDisclosure) {
    let _ = writeln!(out, "== Price components ==");
    let _ = writeln!(
        out,
        "Advertised price (generally available): {}  includes required charges: {}",
        doc.advertised_price.amount, doc.advertised_price.includes_required_dealer_charges
    );
    let charges = &doc.required_dealer_charges;
    if charges.is_empty() {
        let _ = writeln!(out, "Required dealer charges: none listed");
    }
    for listed in charges {
        let c = &listed.charge;
        let _ = writeln!(
            out,
            "  charge   {:<32} {:>18}  {}",
            c.name,
            c.amount.to_string(),
            if c.included_in_advertised_price {
                "included"
            } else {
                "NOT included"
            }
        );
    }
    let adjustments = &doc.conditional_adjustments;
    if adjustments.is_empty() {
        let _ = writeln!(out, "Conditional adjustments: none listed");
    }
    for listed in adjustments {
        let a = &listed.adjustment;
        let criteria: Vec<String> = a
            .criteria
            .iter()
            .map(|c| format!("{} ({})", c.criterion, c.evidence_status))
            .collect();
        // Unknown is said, never zero.
        let amount = a
            .known_amount()
            .map_or_else(|| "unknown".to_owned(), |m| m.to_string());
        let _ = writeln!(
            out,
            "  offer    {:<32} {:>18}  {} | stacking {}/{} | needs {}",
            a.name,
            amount,
            a.direction,
            a.stacking.group,
            a.stacking.combinability,
            criteria.join(", ")
        );
    }
    let gov = &doc.government_charges;
    let status = &gov.status;
    match gov.total {
        Some(total) => {
            let _ = writeln!(out, "Government charges: {status}, total {total}");
        }
        None => {
            let _ = writeln!(
                out,
                "Government charges: {status} (no amount given; never zero)"
            );
        }
    }
    let state = serde_json::to_value(doc.freshness.state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "Freshness: {state} until {}",
        doc.freshness.valid_until.as_deref().unwrap_or("-")
    );
}

fn write_score(out: &mut String, built: &disclosure::Disclosure, fixes: &Fixes<'_>) {
    let components = &built.document.disclosure_completeness.components;
    let _ = writeln!(out, "== Completeness score: {}/100 ==", built.score);
    for (key, ok) in [
        (
            "advertised_price_present_and_authoritative",
            components.advertised_price_present_and_authoritative,
        ),
        (
            "required_dealer_charges_itemized",
            components.required_dealer_charges_itemized,
        ),
        (
            "conditional_adjustments_have_eligibility_and_stacking",
            components.conditional_adjustments_have_eligibility_and_stacking,
        ),
        (
            "government_charges_classified",
            components.government_charges_classified,
        ),
    ] {
        let _ = writeln!(
            out,
            "  [{}] {:<56} {:>2}/{WEIGHT_COMPONENT}",
            if ok { "x" } else { " " },
            key,
            if ok { WEIGHT_COMPONENT } else { 0 }
        );
    }
    let band = components.availability_band.as_str();
    let points = built
        .gaps
        .iter()
        .find(|g| g.component == "availability_band")
        .map_or(WEIGHT_COMPONENT, |g| WEIGHT_COMPONENT - g.points_lost);
    let _ = writeln!(
        out,
        "  [{}] availability_band = {band:<37} {points:>2}/{WEIGHT_COMPONENT}",
        if points == band_points(crate::availability::Band::VerifiedCurrent) {
            "x"
        } else {
            "~"
        }
    );
    if built.gaps.is_empty() {
        let _ = writeln!(out, "Nothing is missing.");
        return;
    }
    let _ = writeln!(out, "Missing, and how to fix it:");
    for g in &built.gaps {
        let _ = writeln!(out, "  - {} (-{}): {}", g.component, g.points_lost, g.what);
        let fix = fixes.fix(g.component).unwrap_or_else(|| g.fix.clone());
        let _ = writeln!(out, "      fix: {fix}");
    }
}

fn write_evaluation(out: &mut String, e: &Evaluation, profile: &Profile) {
    let claims: Vec<String> = profile
        .claims
        .iter()
        .map(|(k, v)| format!("{}={}", k.name(), claim_text(*v)))
        .collect();
    let _ = writeln!(
        out,
        "== Offer evaluation (payment mode {}, jurisdiction {}, claims [{}], as of {}) ==",
        serde_json::to_value(profile.payment_mode)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        profile
            .jurisdiction
            .subdivision
            .as_deref()
            .unwrap_or(&profile.jurisdiction.country),
        claims.join(", "),
        profile.as_of.to_rfc3339()
    );
    let chosen: Vec<&str> = e
        .best_stack
        .program_ids
        .iter()
        .chain(e.best_stack.surcharge_ids.iter())
        .map(|r| r.program_id.as_str())
        .collect();
    let _ = writeln!(
        out,
        "  {:<24} {:>4} {:<15} {:<28} {:>18} {:<5}",
        "program", "rev", "applicability", "eligibility", "amount", "stack"
    );
    for p in &e.programs {
        let applicability = match &p.applicability {
            Applicability::Applicable => "applicable".to_owned(),
            Applicability::NotApplicable { .. } => "not applicable".to_owned(),
        };
        let eligibility = match &p.eligibility {
            Eligibility::Eligible => "eligible".to_owned(),
            Eligibility::EligibleSubjectToEvidence { criteria } => {
                format!("if proven: {}", criteria.join(","))
            }
            Eligibility::Ineligible { .. } => "ineligible".to_owned(),
            Eligibility::Unknown { needs } => format!(
                "needs {}",
                needs
                    .iter()
                    .map(|n| n.criterion.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        };
        let amount = match &p.amount {
            ResolvedAmount::Known { amount, .. } | ResolvedAmount::Percent { amount, .. } => {
                amount.to_string()
            }
            ResolvedAmount::Unknown { .. } => "unknown".to_owned(),
        };
        let _ = writeln!(
            out,
            "  {:<24} {:>4} {:<15} {:<28} {:>18} {:<5}",
            clip(&p.program_id, 24),
            p.revision,
            applicability,
            clip(&eligibility, 28),
            amount,
            if chosen.contains(&p.program_id.as_str()) {
                "yes"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        out,
        "Best stack ({}): discount {}, net price {} (before required charges and government charges; not a quote)",
        e.winning_payment_mode.name(),
        e.best_stack.total_discount,
        e.best_stack.net_price
    );
    let _ = writeln!(
        out,
        "Guaranteed floor (no claims needed): net price {}",
        e.guaranteed_floor.net_price
    );
    // A search its budget stopped (docs/pricing.md section 4) says so.
    for line in e.trace.iter().filter(|t| t.starts_with("budget:")) {
        let _ = writeln!(out, "Not proven best: {line}");
    }
    for x in &e.potential_extra {
        let _ = writeln!(out, "Potential extra: {}", x.summary);
    }
    for b in &e.branches {
        let _ = writeln!(
            out,
            "  branch {:<8} best net price {}",
            b.payment_mode.name(),
            b.best_stack.net_price
        );
    }
}

/// The revision table and the combination rules (docs/pricing.md "Revisions"): per program,
/// the revision used at `as_of` and why each other active revision was not
/// (the evaluation's `revisions[]`), then its declarative
/// `stacking.limits`, its `tag:`/`group:` combinations and exclusions and
/// whether a rhai rule judges it, in words. A program with one revision and
/// no such rule takes one line.
fn write_revisions_and_rules(
    out: &mut String,
    selected: &crate::offers::ProgramsAt,
    profile: &Profile,
) {
    let _ = writeln!(
        out,
        "== Revisions and combination rules (as of {}) ==",
        profile.as_of.to_rfc3339()
    );
    let validated = selected.validated().programs();
    for choice in &selected.selection.revisions {
        let _ = writeln!(
            out,
            "  {:<24} rev {:<4} {}",
            clip(&choice.program_id, 24),
            choice.revision,
            if choice.not_used.is_empty() {
                "the only active revision".to_owned()
            } else {
                choice.reason.clone()
            }
        );
        for n in &choice.not_used {
            let _ = writeln!(out, "  {:<24} not rev {}: {}", "", n.revision, n.reason);
        }
        let program = validated
            .iter()
            .map(|v| &v.program)
            .find(|p| p.program_id == choice.program_id && p.revision == choice.revision);
        if let Some(p) = program {
            for rule in rule_sentences(p) {
                let _ = writeln!(out, "  {:<24} {rule}", "");
            }
        }
    }
    for u in &selected.unusable() {
        let _ = writeln!(
            out,
            "  {:<24} rev {:<4} cannot be evaluated: {}",
            clip(&u.program_id, 24),
            u.revision,
            u.problems.join("; ")
        );
    }
}

/// The program's combination rules in words: each declarative limit, each
/// `combinable_with` / `not_combinable_with` entry naming a tag or a group,
/// and a rhai rule (whether it is declared monotone). Shared with the
/// console's programs page.
pub fn rule_sentences(p: &pricing::Program) -> Vec<String> {
    let stacking = &p.stacking;
    let mut sentences: Vec<String> = stacking
        .limits
        .iter()
        .map(|l| {
            let mut parts = Vec::new();
            if let Some(n) = l.max_programs {
                parts.push(format!(
                    "at most {n} program{} of {}",
                    if n == 1 { "" } else { "s" },
                    l.selector()
                ));
            }
            if let Some(m) = l.max_amount {
                parts.push(format!(
                    "known amounts of {} summing to at most {m}",
                    l.selector()
                ));
            }
            format!(
                "limit: in a stack with this program, {}",
                parts.join(", and ")
            )
        })
        .collect();
    let referent = |entry: &str| -> Option<String> {
        if let Some(tag) = entry.strip_prefix("tag:") {
            Some(format!("any program tagged {tag}"))
        } else {
            entry
                .strip_prefix("group:")
                .map(|g| format!("any program of group {g}"))
        }
    };
    for entry in &stacking.not_combinable_with {
        if let Some(who) = referent(entry) {
            sentences.push(format!("never with {who}"));
        }
    }
    for entry in &stacking.combinable_with {
        if let Some(who) = referent(entry) {
            sentences.push(format!("combines with {who}"));
        }
    }
    if stacking.rule.is_some() {
        sentences.push(
            if stacking.rule_monotone {
                "rule: a rhai rule judges each stack (declared monotone)"
            } else {
                "rule: a rhai rule judges each stack (not declared monotone)"
            }
            .to_owned(),
        );
    }
    sentences
}

/// The jurisdiction a manager's view assumes when no buyer is named: the
/// rooftop's own, the country and region of its address (the region as an
/// ISO 3166-2 subdivision), never its postal code, which says where the
/// dealer is and not where the buyer lives (docs/pricing.md section 5).
/// The same default the disclosure's offer evaluation already uses
/// ([`disclosure::profile_jurisdiction`]), here also for government
/// charges. `None` when the address has no ISO country code.
pub fn rooftop_jurisdiction(rooftop: &crate::dap::Rooftop) -> Option<Value> {
    jurisdiction_value(&disclosure::profile_jurisdiction(None, rooftop)?)
}

/// The DAP `jurisdiction` object (common.schema.json) of a profile's
/// jurisdiction: `None` without an ISO 3166-1 country; a subdivision that
/// is not an ISO 3166-2 code of that country, or a postal code out of the
/// schema's bounds, is left out rather than sent to be refused.
pub fn jurisdiction_value(j: &ProfileJurisdiction) -> Option<Value> {
    let upper = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    };
    if j.country.len() != 2 || !j.country.bytes().all(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let mut v = json!({"country": j.country});
    if let Some(sub) = &j.subdivision
        && let Some(code) = sub.strip_prefix(&format!("{}-", j.country))
        && (1..=3).contains(&code.len())
        && upper(code)
    {
        v["subdivision"] = json!(sub);
    }
    if let Some(postal) = j
        .postal_code
        .as_deref()
        .filter(|p| (1..=32).contains(&p.chars().count()))
    {
        v["postal_code"] = json!(postal);
    }
    Some(v)
}

/// "US-IL", "US", "US-IL, postal code 60614": a jurisdiction for people.
pub fn jurisdiction_label(j: &Value) -> String {
    let s = |k: &str| j.get(k).and_then(Value::as_str);
    let mut label = s("subdivision")
        .or_else(|| s("country"))
        .unwrap_or("no jurisdiction")
        .to_owned();
    if let Some(postal) = s("postal_code") {
        let _ = write!(label, ", postal code {postal}");
    }
    label
}

/// [`jurisdiction_label`] of a typed jurisdiction.
pub fn jurisdiction_name(j: &crate::dap::Jurisdiction) -> String {
    let mut label = j.subdivision.as_deref().unwrap_or(&j.country).to_owned();
    if let Some(postal) = &j.postal_code {
        let _ = write!(label, ", postal code {postal}");
    }
    label
}

fn assumed_text(assumed: Option<&Value>, from_profile: bool, payment_mode: Option<&str>) -> String {
    let mode = payment_mode.map_or_else(String::new, |m| format!(", payment mode {m}"));
    match (assumed, from_profile) {
        (Some(j), true) => format!("{} (the profile's){mode}", jurisdiction_label(j)),
        (Some(j), false) => format!(
            "{} (the rooftop's own jurisdiction, from its address; --profile names another buyer)",
            jurisdiction_label(j)
        ),
        (None, true) => format!("no valid jurisdiction in the profile{mode}"),
        (None, false) => {
            "no jurisdiction (the rooftop's address has no ISO country code)".to_owned()
        }
    }
}

/// What a manager can do about a missing part of the score, given what is
/// already configured: never a fix that is already done (docs/console.md
/// "Fixes"). Shared by the preview and the console.
#[derive(Debug, Clone, Copy)]
pub struct Fixes<'a> {
    /// The rooftop's pricing settings (dealers file).
    pub pricing: &'a RooftopPricing,
    /// The jurisdiction the disclosure was built for.
    pub assumed: Option<&'a Value>,
    /// The rooftop checks availability with the dealer system.
    pub live_source: bool,
}

impl Fixes<'_> {
    /// The fix for `component` when it depends on the configuration
    /// (government charges, availability band); `None` for the others,
    /// whose fix does not.
    pub fn fix(&self, component: &str) -> Option<String> {
        match component {
            "government_charges_classified" => Some(self.government()),
            "availability_band" => Some(self.availability().to_owned()),
            _ => None,
        }
    }

    fn government(&self) -> String {
        const FEED: &str = "or publish a government charges status (government_charges_status) in the inventory feed";
        let Some(j) = self.assumed else {
            return format!(
                "No estimate can be matched without a jurisdiction: give the rooftop's address an ISO country code and region in the dealers file, {FEED}."
            );
        };
        let label = jurisdiction_label(j);
        if disclosure::matching_estimate(self.pricing, Some(j)).is_some() {
            return format!(
                "The estimate for {label} in gateway_settings.pricing.government_charge_estimates cannot be totalled (no lines, a line without an amount, or lines in more than one currency): give it lines with amounts in one currency."
            );
        }
        let configured: Vec<String> = self
            .pricing
            .government_charge_estimates
            .iter()
            .map(|e| jurisdiction_label(&json!(e.jurisdiction)))
            .collect();
        if configured.is_empty() {
            format!(
                "Configure gateway_settings.pricing.government_charge_estimates for {label} in the dealers file, {FEED}."
            )
        } else {
            format!(
                "gateway_settings.pricing.government_charge_estimates covers {} but not {label}: add an estimate for {label}, {FEED}.",
                configured.join(", ")
            )
        }
    }

    fn availability(&self) -> &'static str {
        if self.live_source {
            "Nothing to configure: the dealer system is connected, and a band is verified_current only within 120 s of a live check (an agent's dealeragent.inventory.verify_availability), falling with the check's age (docs/availability.md \"Bands\")."
        } else {
            "Connect the dealer system as the availability source (availability_source: http in the dealers file): without a live check, availability stays in the band its feed record earns, at best asserted for a dealer-asserted feed."
        }
    }
}

fn claim_text(v: ClaimValue) -> &'static str {
    match v {
        ClaimValue::True => "true",
        ClaimValue::False => "false",
        ClaimValue::Unknown => "unknown",
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// The schema of a buyer profile file: `dealergateway.offers.evaluate`'s
/// profile (`offers.schema.json#/$defs/offersProfile`), with `payment_mode`
/// optional (unknown when left out, as the preview has always read it).
static PROFILE_SCHEMA: std::sync::LazyLock<Result<crate::report::explain::Schema, String>> =
    std::sync::LazyLock::new(|| {
        crate::report::explain::Schema::compile(
            "offers.schema.json#/$defs/offersProfile",
            "docs/operations.md",
            |schema| {
                schema["$defs"]["offersProfile"]["required"] = serde_json::json!(["jurisdiction"]);
            },
        )
    });

/// A buyer profile file (YAML or JSON): `{payment_mode?, jurisdiction:
/// {country, subdivision?, postal_code?}, claims?: {criterion: true|false|
/// "unknown"}, as_of?}` — hypothetical facts, never PII. A bad file is
/// refused whole by the shared reporter (every problem, with line and
/// column, pointer, rule and words; exit code 2), never read in part: a
/// claim the preview cannot read is not silently taken as unknown.
fn read_profile(path: &Path, now: DateTime<Utc>) -> Result<Profile, Error> {
    use crate::report::{self, FileReport, Problem, Syntax};
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| io(format!("{name}: cannot read: {e}")))?;
    let refused = |problems: Vec<Problem>| {
        Error::OperatorFile(FileReport::new(&name, problems, "the preview was not made"))
    };
    let syntax = Syntax::of(&name);
    let (text, value) = report::parse_document(&bytes, syntax).map_err(|p| refused(vec![p]))?;
    let schema = PROFILE_SCHEMA
        .as_ref()
        .map_err(|e| io(format!("buyer profile schema defect: {e}")))?;
    let located = schema.problems(&value);
    if !located.is_empty() {
        let (targets, mut problems): (Vec<_>, Vec<_>) =
            located.into_iter().map(|l| (l.target, l.problem)).unzip();
        report::locate_all(text, syntax, &mut problems, &targets);
        return Err(refused(problems));
    }
    // Schema-valid from here: the shapes are trusted, and what the schema
    // cannot say (an engine criterion, a real date) is still reported.
    let mut problems = Vec::new();
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let payment_mode = match value.get("payment_mode").and_then(Value::as_str) {
        Some("cash") => ProfilePaymentMode::Cash,
        Some("finance") => ProfilePaymentMode::Finance,
        Some("lease") => ProfilePaymentMode::Lease,
        _ => ProfilePaymentMode::Unknown,
    };
    let j = value.get("jurisdiction").unwrap_or(&Value::Null);
    let country = s(j, "country").unwrap_or_default();
    let mut claims = BTreeMap::new();
    if let Some(map) = value.get("claims").and_then(Value::as_object) {
        for (k, v) in map {
            let Ok(criterion) = serde_json::from_value(Value::String(k.clone())) else {
                problems.push(Problem::new(
                    format!("/claims/{k}"),
                    "criterion",
                    format!("'{k}' is not a criterion the pricing engine evaluates"),
                ));
                continue;
            };
            let claim = match v {
                Value::Bool(true) => ClaimValue::True,
                Value::Bool(false) => ClaimValue::False,
                _ => ClaimValue::Unknown,
            };
            claims.insert(criterion, claim);
        }
    }
    let as_of = match s(&value, "as_of") {
        Some(t) => match DateTime::parse_from_rfc3339(&t) {
            Ok(t) => t,
            Err(_) => {
                problems.push(Problem::new(
                    "/as_of",
                    "format",
                    "must be an RFC 3339 date-time such as 2026-01-31T09:00:00Z",
                ));
                now.fixed_offset()
            }
        },
        None => now.fixed_offset(),
    };
    if !problems.is_empty() {
        report::locate_all(text, syntax, &mut problems, &[]);
        return Err(refused(problems));
    }
    Ok(Profile {
        payment_mode,
        jurisdiction: ProfileJurisdiction {
            country,
            subdivision: s(j, "subdivision"),
            postal_code: s(j, "postal_code"),
        },
        claims,
        as_of,
    })
}
