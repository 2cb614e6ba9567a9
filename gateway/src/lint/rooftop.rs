//! The lint of a whole rooftop (docs/lint.md, docs/console.md "Fix list"):
//! every vehicle's [`Report`] folded into one summary per rule (how many
//! vehicles fail, how many cannot be determined, a few examples, the
//! rule's citation and fix), ranked so that a manager reads the law
//! failures first: confirmed failures by vehicles affected, then
//! unconfirmed failures, then what cannot be determined.
//!
//! The console's fix list, the CLI `lint` and the metric all fold through
//! [`Aggregator`], so the three count the same way. Memory is bounded by
//! the catalogue (one summary per rule, at most [`Aggregator::new`]'s
//! `examples` vehicles kept per rule and verdict), never by the inventory.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use pricing::lint::{Facts, Place, Report, Verdict};
use serde::Serialize;
use serde_json::Value;

use super::{PlaceSource, Subject};
use crate::dap::disclosure::PricingDisclosure;
use crate::domain::dealer::{OrganizationRecord, RooftopRecord};
use crate::domain::vehicle::VehicleRecord;
use crate::store::PriceHistory;

#[cfg(test)]
mod tests;

/// How many example vehicles each rule keeps per verdict by default.
pub const EXAMPLES: usize = 5;

/// A vehicle as a manager finds it: id, stock number, VIN.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VehicleRef {
    pub vehicle_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stock_number: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vin: Option<String>,
}

impl VehicleRef {
    pub fn of(record: &VehicleRecord) -> Self {
        Self {
            vehicle_id: record.vehicle_id.clone(),
            stock_number: record.stock_number.clone(),
            vin: record.vin.clone(),
        }
    }
}

/// One vehicle a rule named, with the engine's reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Example {
    pub vehicle: VehicleRef,
    pub reason: String,
}

/// One rule over the rooftop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleSummary {
    pub rule_id: String,
    pub citation: String,
    /// Confirmed from a primary source; an unconfirmed rule never fails a
    /// disclosure on its own (docs/lint.md).
    pub confirmed: bool,
    /// The rule's plain statement, from the catalogue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statement: Option<String>,
    /// What the operator changes: the engine's fix of the first failing
    /// (else undetermined) vehicle, else the catalogue's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    pub failing: usize,
    pub cannot_determine: usize,
    pub passing: usize,
    /// The first failing vehicles, in the order linted.
    pub failing_examples: Vec<Example>,
    /// The first vehicles it could not determine.
    pub undetermined_examples: Vec<Example>,
}

impl RuleSummary {
    /// A failure that counts: confirmed and at least one vehicle failing.
    pub fn confirmed_failure(&self) -> bool {
        self.confirmed && self.failing > 0
    }
}

/// The rooftop's lint: totals and the ranked rules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RooftopLint {
    /// The place linted (the first vehicle's; every vehicle of a rooftop is
    /// linted at the same place). `None` with no vehicle.
    pub place: Option<Place>,
    pub catalogue_version: String,
    /// Vehicles linted.
    pub vehicles: usize,
    /// Vehicles with at least one confirmed rule failing.
    pub failing_vehicles: usize,
    /// Vehicles whose overall result is `cannot_determine`.
    pub undetermined_vehicles: usize,
    /// Ranked: see [`rank`].
    pub rules: Vec<RuleSummary>,
}

impl RooftopLint {
    /// True when any confirmed rule fails on any vehicle (CLI exit 1).
    pub fn any_confirmed_failure(&self) -> bool {
        self.rules.iter().any(RuleSummary::confirmed_failure)
    }

    /// Vehicles failing each confirmed rule that applied (0 included), for
    /// the metric.
    pub fn confirmed_failing_by_rule(&self) -> BTreeMap<String, usize> {
        self.rules
            .iter()
            .filter(|r| r.confirmed)
            .map(|r| (r.rule_id.clone(), r.failing))
            .collect()
    }
}

/// Folds vehicle reports into a [`RooftopLint`].
#[derive(Debug, Default)]
pub struct Aggregator {
    examples: usize,
    lint: RooftopLint,
    by_rule: BTreeMap<String, RuleSummary>,
}

impl Aggregator {
    /// Keeps at most `examples` vehicles per rule and verdict.
    pub fn new(examples: usize) -> Self {
        Self {
            examples,
            ..Self::default()
        }
    }

    /// Counts one vehicle's report.
    pub fn add(&mut self, vehicle: &VehicleRef, report: &Report) {
        let lint = &mut self.lint;
        lint.vehicles += 1;
        if lint.place.is_none() {
            lint.place = Some(report.place.clone());
            lint.catalogue_version.clone_from(&report.catalogue_version);
        }
        // Counted from the rules, not `report.result`: the vehicle fails
        // when a confirmed rule fails (the engine's own definition).
        if report
            .rules
            .iter()
            .any(|r| r.confirmed && r.verdict == Verdict::Fail)
        {
            lint.failing_vehicles += 1;
        } else if report.result == Verdict::CannotDetermine {
            lint.undetermined_vehicles += 1;
        }
        for result in &report.rules {
            let summary = self
                .by_rule
                .entry(result.rule_id.clone())
                .or_insert_with(|| RuleSummary {
                    rule_id: result.rule_id.clone(),
                    citation: result.citation.clone(),
                    confirmed: result.confirmed,
                    statement: catalogue_rule(&result.rule_id).map(|r| r.statement.clone()),
                    fix: None,
                    failing: 0,
                    cannot_determine: 0,
                    passing: 0,
                    failing_examples: Vec::new(),
                    undetermined_examples: Vec::new(),
                });
            let example = || Example {
                vehicle: vehicle.clone(),
                reason: result.reason.clone(),
            };
            match result.verdict {
                Verdict::Pass => summary.passing += 1,
                Verdict::Fail => {
                    if summary.failing == 0 && result.fix.is_some() {
                        summary.fix.clone_from(&result.fix);
                    }
                    summary.failing += 1;
                    if summary.failing_examples.len() < self.examples {
                        summary.failing_examples.push(example());
                    }
                }
                Verdict::CannotDetermine => {
                    if summary.failing == 0 && summary.fix.is_none() {
                        summary.fix.clone_from(&result.fix);
                    }
                    summary.cannot_determine += 1;
                    if summary.undetermined_examples.len() < self.examples {
                        summary.undetermined_examples.push(example());
                    }
                }
            }
        }
    }

    /// The ranked rooftop lint.
    pub fn finish(self) -> RooftopLint {
        let mut lint = self.lint;
        lint.rules = self
            .by_rule
            .into_values()
            .map(|mut s| {
                if s.fix.is_none() {
                    s.fix = catalogue_rule(&s.rule_id).map(|r| r.fix.clone());
                }
                s
            })
            .collect();
        rank(&mut lint.rules);
        lint
    }
}

fn catalogue_rule(id: &str) -> Option<&'static pricing::lint::Rule> {
    pricing::lint::catalogue().rules.iter().find(|r| r.id == id)
}

/// Law failures first: confirmed rules that fail, by failing vehicles
/// (most first); then unconfirmed rules that fail (they never fail a
/// disclosure on their own, docs/lint.md); then rules that cannot be
/// determined, by those vehicles; then the rules every vehicle passes.
/// Ties by rule id, so the order is stable.
pub fn rank(rules: &mut [RuleSummary]) {
    let tier = |r: &RuleSummary| match (r.confirmed, r.failing > 0, r.cannot_determine > 0) {
        (true, true, _) => 0,
        (false, true, _) => 1,
        (_, false, true) => 2,
        _ => 3,
    };
    rules.sort_by(|a, b| {
        tier(a)
            .cmp(&tier(b))
            .then(b.failing.cmp(&a.failing))
            .then(b.cannot_determine.cmp(&a.cannot_determine))
            .then(a.rule_id.cmp(&b.rule_id))
    });
}

/// The DAP `jurisdiction` of a place (the buyer's), as a request passes it.
pub fn jurisdiction_of(place: &Place) -> Value {
    let mut v = serde_json::json!({"country": place.country});
    if let Some(sub) = &place.subdivision {
        v["subdivision"] = Value::from(sub.as_str());
    }
    v
}

/// What a rooftop-wide lint outside a request reads: the organization and
/// rooftop as stored, the snapshot version, the buyer's jurisdiction (the
/// rooftop's own unless given) and the moment.
#[derive(Debug, Clone, Copy)]
pub struct Rooftop<'a> {
    pub organization: &'a OrganizationRecord,
    pub rooftop: &'a RooftopRecord,
    pub snapshot_version: i64,
    /// DAP `jurisdiction`; `None`: the rooftop's own.
    pub jurisdiction: Option<&'a Value>,
    pub now: DateTime<Utc>,
}

/// The disclosure the tool builds for `record` (the same builder, for a
/// buyer at `jurisdiction`), without programs: no fact of the lint reads
/// the conditional adjustments. The band is the feed record's own (the
/// tool's `stored_band` without a live observation, which only scores).
pub fn document(at: &Rooftop<'_>, record: &VehicleRecord) -> PricingDisclosure {
    let band = crate::availability::band::band(
        Some(&crate::availability::Observed {
            status: &record.availability_status,
            authority: &record.source.authority,
            observed_at: record.source.observed_at,
        }),
        at.now,
    );
    crate::disclosure::build(&crate::disclosure::Inputs {
        record,
        pricing: &at.rooftop.settings.pricing,
        config_source: Some(&at.organization.source),
        inventory_sla_seconds: at.rooftop.settings.freshness_sla_seconds.inventory,
        withdrawn: false,
        snapshot_version: at.snapshot_version,
        band,
        jurisdiction: at.jurisdiction,
        payment_mode: None,
        programs: None,
        now: at.now,
    })
    .document
}

/// Facts and report of one vehicle's built `document` (the tool's own, or
/// [`document`]'s). `None` when the requested jurisdiction has no country.
pub fn vehicle(
    at: &Rooftop<'_>,
    record: &VehicleRecord,
    document: &PricingDisclosure,
    history: Option<&PriceHistory>,
) -> Option<(Facts, Report, PlaceSource)> {
    let (place, source) = super::place(at.jurisdiction, &at.rooftop.dap)?;
    let facts = super::facts(
        Subject {
            record,
            pricing: &at.rooftop.settings.pricing,
            document,
            config_source: Some(&at.organization.source),
        },
        place,
        history,
        at.now,
    );
    let report = super::report(&facts);
    Some((facts, report, source))
}

/// Lints `records` of one rooftop into the ranked summary, calling
/// `each` with every vehicle's report (the CLI's `--json` keeps them; the
/// console and the metric do not). Synchronous: run it off the async
/// workers (`spawn_blocking`). `histories` holds the price history of the
/// vehicles that announce a reduction, by vehicle id.
pub fn rooftop(
    at: &Rooftop<'_>,
    records: impl Iterator<Item = VehicleRecord>,
    histories: &BTreeMap<String, PriceHistory>,
    examples: usize,
    mut each: impl FnMut(&VehicleRecord, &Facts, &Report),
) -> RooftopLint {
    let mut aggregator = Aggregator::new(examples);
    for record in records {
        let doc = document(at, &record);
        if let Some((facts, report, _)) =
            vehicle(at, &record, &doc, histories.get(&record.vehicle_id))
        {
            aggregator.add(&VehicleRef::of(&record), &report);
            each(&record, &facts, &report);
        }
    }
    aggregator.finish()
}
