//! The offer (incentive stacking) evaluator (docs/pricing.md section 2).
//!
//! [`evaluate`] takes a vehicle, the validated programs of its organization
//! and a hypothetical buyer [`Profile`], and reports per program its
//! applicability, tri-state eligibility and amount, then the best stack per
//! payment-mode branch found by an exhaustive branch and bound search
//! (`optimality: proven`, or `bounded` when the evaluation's budget of
//! search nodes and rhai operations, or its caller's interrupt, stopped it:
//! never silently greedy; [`SearchBudget`], [`evaluate_with`]). Pure and
//! deterministic: the output does not depend on the order of the programs,
//! and no clock is read (a deadline is the caller's [`Interrupt`]).
//!
//! Semantics (docs/pricing.md "Stacking"):
//! - surcharges that apply (and are not ineligible) are always included;
//! - a stack is valid when every pair is compatible, it holds at most one
//!   `top_of_deal`, at most one member of each `best_one` group, at most one
//!   revision of a program id, and every `rule_defined` member's rule accepts
//!   the whole stack;
//! - objective: the largest total known discount; ties: fewer programs,
//!   then the ascending list of `(program_id, revision)`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::incentives::ValidatedPrograms;
use crate::money::{Currency, Money, MoneyError};
use crate::program::{
    Combinability, CriteriaMode, Criterion, Direction, EligibilityCriterion, EvidenceStatus,
    GROUP_REF_PREFIX, GroupResolution, Operator, PaymentMode, ProgramAmount, StackLimit,
    TAG_REF_PREFIX, Timestamp, ValidatedProgram,
};
use crate::rules::{self, RuleContext, RuleProfile, RuleVehicle};

/// The vehicle being priced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Vehicle {
    /// Gateway vehicle id.
    pub vehicle_id: String,
    /// Make.
    pub make: String,
    /// Model.
    pub model: String,
    /// Model year.
    pub year: i32,
    /// Trim.
    pub trim: Option<String>,
    /// Condition (`new`, `used`, `certified`...).
    pub condition: String,
    /// VIN.
    pub vin: Option<String>,
    /// Rooftop id.
    pub rooftop_id: String,
    /// Advertised price (at least zero).
    pub advertised_price: Money,
    /// When the advertised price stops being valid.
    pub price_valid_until: Option<Timestamp>,
}

/// The buyer's payment mode; `Unknown` evaluates every mode as a branch.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfilePaymentMode {
    /// Cash.
    Cash,
    /// Finance.
    Finance,
    /// Lease.
    Lease,
    /// Not known: cash, finance and lease are each evaluated.
    Unknown,
}

/// Where the buyer is.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct ProfileJurisdiction {
    /// ISO 3166-1 alpha-2.
    pub country: String,
    /// ISO 3166-2.
    pub subdivision: Option<String>,
    /// Postal code.
    pub postal_code: Option<String>,
}

/// A claim value.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimValue {
    /// The buyer meets the criterion.
    True,
    /// The buyer does not.
    False,
    /// Not known.
    Unknown,
}

/// Hypothetical buyer facts (never PII).
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct Profile {
    /// Payment mode.
    pub payment_mode: ProfilePaymentMode,
    /// Jurisdiction.
    pub jurisdiction: ProfileJurisdiction,
    /// Claims per criterion; a missing criterion is unknown.
    pub claims: BTreeMap<Criterion, ClaimValue>,
    /// The instant validity is evaluated at.
    pub as_of: Timestamp,
}

/// The budget of one evaluation (docs/pricing.md section 2 "Search" and
/// section 4): every search of it (the best stack and the guaranteed floor
/// of every payment-mode branch) and every rule call together. Counted, not
/// timed, so the same inputs always stop at the same point; a caller's
/// wall-clock deadline comes on top ([`evaluate_with`]). The budget is
/// shared out between the payment-mode branches as they run: a branch may
/// use its equal part of what is left, so a costly first branch cannot
/// starve the others.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
pub struct SearchBudget {
    /// Search nodes over the whole evaluation (each candidate stack
    /// visited is a node).
    pub max_nodes: u64,
    /// rhai operations over the whole evaluation: every operation of every
    /// rule call (closures included), plus one per program of the stack
    /// handed to each call (building it). One call is also held to
    /// [`rules::RULE_CALL_OPERATIONS`].
    pub max_rule_operations: u64,
}

/// [`SearchBudget::max_nodes`] by default.
pub const DEFAULT_MAX_NODES: u64 = 50_000;
/// [`SearchBudget::max_rule_operations`] by default.
pub const DEFAULT_MAX_RULE_OPERATIONS: u64 = 500_000;

impl Default for SearchBudget {
    fn default() -> Self {
        SearchBudget {
            max_nodes: DEFAULT_MAX_NODES,
            max_rule_operations: DEFAULT_MAX_RULE_OPERATIONS,
        }
    }
}

/// A caller's way to end an evaluation early, e.g. at a wall-clock
/// deadline (the engine reads no clock itself). Asked before every rule
/// call and every 64 search nodes; once it answers `true` every search
/// stops with the best stack found so far (`optimality: bounded`).
pub trait Interrupt {
    /// Whether to stop now.
    fn interrupted(&self) -> bool;
}

impl<F: Fn() -> bool> Interrupt for F {
    fn interrupted(&self) -> bool {
        self()
    }
}

/// What ended an evaluation's searches before they were exhaustive.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetStop {
    /// [`SearchBudget::max_nodes`] (a branch's part of it).
    Nodes,
    /// [`SearchBudget::max_rule_operations`] (a branch's part of it).
    RuleOperations,
    /// The caller's [`Interrupt`] (its deadline).
    Interrupted,
}

/// What one evaluation used (not serialized: the trace says it in words).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct EvaluationCost {
    /// Search nodes visited.
    pub nodes: u64,
    /// rhai rule calls run (verdicts reused from the memo are not calls).
    pub rule_calls: u64,
    /// rhai operations charged ([`SearchBudget::max_rule_operations`]).
    pub rule_operations: u64,
    /// The first limit that cut a search short, if any: then at least one
    /// stack is `bounded`.
    pub stopped: Option<BudgetStop>,
}

/// A program whose rule failed at evaluation time (an error, a non-boolean
/// result or more than [`rules::RULE_CALL_OPERATIONS`] on a real stack):
/// it is left out of every stack and reported not applicable with this
/// reason (docs/pricing.md section 3).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct UnusableRule {
    /// Program id.
    pub program_id: String,
    /// Revision.
    pub revision: u32,
    /// What the rule did, on which stack.
    pub reason: String,
}

/// `(program_id, revision)`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug, Serialize)]
pub struct ProgramRef {
    /// Program id.
    pub program_id: String,
    /// Revision used.
    pub revision: u32,
}

/// Applicability of a program.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Applicability {
    /// It applies to this vehicle, place, time and payment mode.
    Applicable,
    /// It does not; `reason` says why.
    NotApplicable {
        /// Why.
        reason: String,
    },
}

/// What would decide an unknown criterion.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct Need {
    /// The criterion (`military`, `residency`...).
    pub criterion: String,
    /// The evidence that would decide it.
    pub evidence: String,
}

/// Tri-state eligibility.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Eligibility {
    /// Eligible.
    Eligible,
    /// Eligible once the listed criteria are proven.
    EligibleSubjectToEvidence {
        /// Criteria whose evidence is required.
        criteria: Vec<String>,
    },
    /// Not eligible.
    Ineligible {
        /// Why.
        reason: String,
    },
    /// Cannot be decided from the profile.
    Unknown {
        /// What would decide it.
        needs: Vec<Need>,
    },
}

/// The resolved amount of a program for this vehicle.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ResolvedAmount {
    /// A fixed amount (after the cap).
    Known {
        /// The amount.
        amount: Money,
        /// The uncapped amount when the cap applied.
        #[serde(skip_serializing_if = "Option::is_none")]
        capped_from: Option<Money>,
    },
    /// Unknown: never summed.
    Unknown {
        /// Why.
        reason: String,
    },
    /// Percent of the advertised price, rounded once (then capped).
    Percent {
        /// The percentage as given.
        percent: String,
        /// The amount.
        amount: Money,
        /// The uncapped amount when the cap applied.
        #[serde(skip_serializing_if = "Option::is_none")]
        capped_from: Option<Money>,
        /// The rounding transformation, for provenance.
        transformation: String,
        /// Whether the rounding changed nothing.
        exact: bool,
    },
}

impl ResolvedAmount {
    fn known(&self) -> Option<Money> {
        match self {
            ResolvedAmount::Known { amount, .. } | ResolvedAmount::Percent { amount, .. } => {
                Some(*amount)
            }
            ResolvedAmount::Unknown { .. } => None,
        }
    }
}

/// Per-program report.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct ProgramReport {
    /// Program id.
    pub program_id: String,
    /// Revision.
    pub revision: u32,
    /// Name.
    pub name: String,
    /// Direction.
    pub direction: Direction,
    /// Applicability.
    pub applicability: Applicability,
    /// Eligibility (`ineligible` "not applicable" when not applicable).
    pub eligibility: Eligibility,
    /// Amount.
    pub amount: ResolvedAmount,
}

/// Whether the search finished.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Optimality {
    /// Exhaustive: no better valid stack exists.
    Proven,
    /// The evaluation's budget (nodes or rhai operations) or its caller's
    /// interrupt stopped the search: the best stack found so far.
    Bounded {
        /// Nodes this search explored.
        nodes_explored: u64,
    },
}

/// A stack and what it does to the price.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct StackReport {
    /// Chosen discount programs, ascending.
    pub program_ids: Vec<ProgramRef>,
    /// Surcharge programs always included.
    pub surcharge_ids: Vec<ProgramRef>,
    /// Known discount total.
    pub total_discount: Money,
    /// Known surcharge total.
    pub surcharges: Money,
    /// advertised − discounts + surcharges, floored at zero.
    pub net_price: Money,
    /// True when the floor at zero applied.
    pub floored_at_zero: bool,
    /// Members eligible only subject to evidence.
    pub subject_to_evidence: Vec<ProgramRef>,
    /// Members (discounts or surcharges) whose amount is unknown: not summed.
    pub unknown_amounts: Vec<ProgramRef>,
    /// Search outcome.
    pub optimality: Optimality,
}

/// An `unknown`-eligibility discount and what it would add.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct PotentialExtra {
    /// Program.
    pub program: ProgramRef,
    /// Amount.
    pub amount: ResolvedAmount,
    /// What would decide it.
    pub needs: Vec<Need>,
    /// E.g. `"Military Appreciation +500.00 USD if military verified"`.
    pub summary: String,
}

/// One payment-mode branch.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct Branch {
    /// The mode.
    pub payment_mode: PaymentMode,
    /// Per program, sorted by `(program_id, revision)`.
    pub programs: Vec<ProgramReport>,
    /// Best stack.
    pub best_stack: StackReport,
    /// Best stack among programs that need no claim at all.
    pub guaranteed_floor: StackReport,
    /// Unknown-eligibility discounts.
    pub potential_extra: Vec<PotentialExtra>,
    /// Applicable, not ineligible programs with unknown amounts (never summed).
    pub unknown_amount_programs: Vec<ProgramRef>,
}

/// Provenance of one program used.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct ProgramProvenanceRef {
    /// Program id.
    pub program_id: String,
    /// Revision.
    pub revision: u32,
    /// `sha256:` naming the combination rule of a `rule_defined` program
    /// ([`ValidatedProgram::rule_hash`]: the rhai source, or the declared
    /// limits with the rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_hash: Option<String>,
}

/// Evaluation provenance.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct EvaluationProvenance {
    /// Every program considered, sorted.
    pub programs: Vec<ProgramProvenanceRef>,
}

/// The evaluation result (serializes deterministically).
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct Evaluation {
    /// Vehicle id.
    pub vehicle_id: String,
    /// Advertised price.
    pub advertised_price: Money,
    /// Evaluation instant.
    pub as_of: Timestamp,
    /// The requested payment mode.
    pub payment_mode: ProfilePaymentMode,
    /// The winning branch's mode (lowest net price; ties cash, finance, lease).
    pub winning_payment_mode: PaymentMode,
    /// The winning branch's best stack.
    pub best_stack: StackReport,
    /// One per payment mode evaluated.
    pub branches: Vec<Branch>,
    /// The winning branch's per-program reports.
    pub programs: Vec<ProgramReport>,
    /// The winning branch's guaranteed floor.
    pub guaranteed_floor: StackReport,
    /// The winning branch's potential extra.
    pub potential_extra: Vec<PotentialExtra>,
    /// The winning branch's unknown-amount programs.
    pub unknown_amount_programs: Vec<ProgramRef>,
    /// Ordered decisions.
    pub trace: Vec<String>,
    /// Program revisions and rule hashes.
    pub provenance: EvaluationProvenance,
    /// Earliest of: applicable programs' `valid_until`, not-yet-valid
    /// programs' `valid_from`, the price's `valid_until`.
    pub valid_until: Option<Timestamp>,
    /// What the evaluation used of its budget. Not serialized (the trace
    /// states it when a limit was hit).
    #[serde(skip)]
    pub cost: EvaluationCost,
    /// Programs left out because their rule failed on a real stack. Not
    /// serialized here: each is `not_applicable` in `programs` with the
    /// reason, and the gateway lists them under `unusable_programs`.
    #[serde(skip)]
    pub unusable_rules: Vec<UnusableRule>,
}

/// Evaluation errors (inputs the evaluator refuses).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum EvaluationError {
    /// Money arithmetic failed (overflow).
    #[error("money: {0}")]
    Money(#[from] MoneyError),
    /// The advertised price is negative.
    #[error("advertised price {0} is negative")]
    NegativePrice(Money),
}

const MODES: [PaymentMode; 3] = [PaymentMode::Cash, PaymentMode::Finance, PaymentMode::Lease];

/// Evaluates the programs for a vehicle and profile within `budget`.
///
/// # Errors
/// [`EvaluationError`] on a negative price or money overflow.
pub fn evaluate(
    vehicle: &Vehicle,
    programs: &ValidatedPrograms,
    profile: &Profile,
    budget: SearchBudget,
) -> Result<Evaluation, EvaluationError> {
    evaluate_with(vehicle, programs, profile, budget, &|| false)
}

/// [`evaluate`], also ended early when `interrupt` says so (a caller's
/// deadline): the searches then stop with the best stacks found so far,
/// reported `bounded`, and the trace says why.
///
/// A program whose rule fails on a real stack (an error, a non-boolean
/// result, more than [`rules::RULE_CALL_OPERATIONS`] operations) is left
/// out of every stack: the evaluation starts again without it (the verdict
/// memo and the budget carry over) and reports it not applicable with the
/// reason, in [`Evaluation::unusable_rules`] and in the trace. It is never
/// silently eligible (docs/pricing.md section 3).
///
/// # Errors
/// [`EvaluationError`] on a negative price or money overflow.
pub fn evaluate_with(
    vehicle: &Vehicle,
    programs: &ValidatedPrograms,
    profile: &Profile,
    budget: SearchBudget,
    interrupt: &dyn Interrupt,
) -> Result<Evaluation, EvaluationError> {
    if vehicle.advertised_price.is_negative() {
        return Err(EvaluationError::NegativePrice(vehicle.advertised_price));
    }
    let mut sorted: Vec<&ValidatedProgram> = programs.programs().iter().collect();
    sorted.sort_by(|a, b| key(a).cmp(&key(b)));
    let modes: Vec<PaymentMode> = match profile.payment_mode {
        ProfilePaymentMode::Cash => vec![PaymentMode::Cash],
        ProfilePaymentMode::Finance => vec![PaymentMode::Finance],
        ProfilePaymentMode::Lease => vec![PaymentMode::Lease],
        ProfilePaymentMode::Unknown => MODES.to_vec(),
    };
    let mut memo = RuleMemo::default();
    let mut effort = Effort::new(budget, interrupt);
    // Programs left out because their rule failed: sorted index -> reason.
    let mut excluded: BTreeMap<usize, UnusableRule> = BTreeMap::new();
    let (mut trace, branches) = loop {
        let mut trace = Vec::new();
        let mut branches = Vec::new();
        effort.restart = false;
        for (i, mode) in modes.iter().enumerate() {
            effort.begin_branch(modes.len() - i);
            branches.push(evaluate_branch(
                vehicle,
                programs.engine(),
                &sorted,
                profile,
                *mode,
                &excluded,
                &mut memo,
                &mut effort,
                &mut trace,
            )?);
            if effort.restart {
                break;
            }
        }
        if !effort.restart {
            break (trace, branches);
        }
        for failure in effort.failures.drain(..) {
            excluded.entry(failure.0).or_insert(failure.1);
        }
    };
    let mut head: Vec<String> = excluded
        .values()
        .map(|u| {
            format!(
                "rules: rule of {} cannot be evaluated, so {}@{} is left out of every stack: {}",
                u.program_id, u.program_id, u.revision, u.reason
            )
        })
        .collect();
    head.append(&mut trace);
    trace = head;
    if memo.evaluations + memo.reused > 0 {
        trace.push(format!(
            "rules: {} rhai evaluations ({} operations), {} verdicts reused for stacks already judged",
            memo.evaluations, effort.ops, memo.reused
        ));
    }
    if let Some(stop) = effort.stopped {
        trace.push(effort.stop_sentence(stop));
    }
    // Winner: lowest net price; ties keep the earlier mode (cash, finance, lease).
    let mut win = 0;
    for (i, b) in branches.iter().enumerate().skip(1) {
        if b.best_stack.net_price.amount_minor() < branches[win].best_stack.net_price.amount_minor()
        {
            win = i;
        }
    }
    if branches.len() > 1 {
        trace.push(format!(
            "branches: {} wins with net price {}",
            branches[win].payment_mode.name(),
            branches[win].best_stack.net_price
        ));
    }
    let valid_until = freshness(vehicle, &sorted, profile, &mut trace);
    let winner = branches[win].clone();
    Ok(Evaluation {
        vehicle_id: vehicle.vehicle_id.clone(),
        advertised_price: vehicle.advertised_price,
        as_of: profile.as_of,
        payment_mode: profile.payment_mode,
        winning_payment_mode: winner.payment_mode,
        best_stack: winner.best_stack,
        programs: winner.programs,
        guaranteed_floor: winner.guaranteed_floor,
        potential_extra: winner.potential_extra,
        unknown_amount_programs: winner.unknown_amount_programs,
        branches,
        trace,
        provenance: EvaluationProvenance {
            programs: sorted
                .iter()
                .map(|p| ProgramProvenanceRef {
                    program_id: p.program.program_id.clone(),
                    revision: p.program.revision,
                    rule_hash: p.rule_hash().map(str::to_owned),
                })
                .collect(),
        },
        valid_until,
        cost: EvaluationCost {
            nodes: effort.nodes,
            rule_calls: effort.calls,
            rule_operations: effort.ops,
            stopped: effort.stopped,
        },
        unusable_rules: excluded.into_values().collect(),
    })
}

/// The budget of one evaluation as it is spent ([`SearchBudget`]).
struct Effort<'i> {
    budget: SearchBudget,
    interrupt: &'i dyn Interrupt,
    /// Spent so far (every attempt, every branch).
    nodes: u64,
    ops: u64,
    calls: u64,
    /// The current branch may spend up to these totals.
    node_cap: u64,
    op_cap: u64,
    /// The first limit that cut a search.
    stopped: Option<BudgetStop>,
    /// The interrupt answered `true` (asked no more).
    interrupted: bool,
    /// A rule failed on a real stack: end this attempt and start again
    /// without its program.
    restart: bool,
    /// (sorted program index, what happened) of the failures to exclude.
    failures: Vec<(usize, UnusableRule)>,
}

/// Nodes between two questions to the interrupt.
const INTERRUPT_EVERY: u64 = 64;

impl<'i> Effort<'i> {
    fn new(budget: SearchBudget, interrupt: &'i dyn Interrupt) -> Self {
        Effort {
            budget,
            interrupt,
            nodes: 0,
            ops: 0,
            calls: 0,
            node_cap: 0,
            op_cap: 0,
            stopped: None,
            interrupted: false,
            restart: false,
            failures: Vec::new(),
        }
    }

    /// Gives the next branch its equal part of what is left (`left`
    /// branches remain, this one included).
    fn begin_branch(&mut self, left: usize) {
        let left = u64::try_from(left.max(1)).unwrap_or(u64::MAX);
        let nodes_left = self.budget.max_nodes.saturating_sub(self.nodes);
        let ops_left = self.budget.max_rule_operations.saturating_sub(self.ops);
        self.node_cap = self.nodes + nodes_left / left;
        self.op_cap = self.ops + ops_left / left;
    }

    fn stop(&mut self, why: BudgetStop) {
        self.stopped.get_or_insert(why);
    }

    /// Whether the interrupt asks to stop (remembered once it does).
    fn check_interrupt(&mut self) -> bool {
        if !self.interrupted && self.interrupt.interrupted() {
            self.interrupted = true;
            self.stop(BudgetStop::Interrupted);
        }
        self.interrupted
    }

    /// Counts one node; `false` when the search must stop first.
    fn take_node(&mut self) -> bool {
        if self.interrupted || self.restart {
            return false;
        }
        if self.nodes >= self.node_cap {
            self.stop(BudgetStop::Nodes);
            return false;
        }
        if self.nodes.is_multiple_of(INTERRUPT_EVERY) && self.check_interrupt() {
            return false;
        }
        self.nodes += 1;
        true
    }

    fn stop_sentence(&self, stop: BudgetStop) -> String {
        let what = match stop {
            BudgetStop::Nodes => format!(
                "the evaluation's budget of {} search nodes",
                self.budget.max_nodes
            ),
            BudgetStop::RuleOperations => format!(
                "the evaluation's budget of {} rhai operations",
                self.budget.max_rule_operations
            ),
            BudgetStop::Interrupted => "the caller's deadline".to_owned(),
        };
        format!(
            "budget: searches stopped at {what} (used {} search nodes, {} rhai operations in {} rule calls); the stacks are the best found so far (optimality bounded)",
            self.nodes, self.ops, self.calls
        )
    }
}

fn key(p: &ValidatedProgram) -> (&str, u32) {
    (p.program.program_id.as_str(), p.program.revision)
}

fn pref(p: &ValidatedProgram) -> ProgramRef {
    ProgramRef {
        program_id: p.program.program_id.clone(),
        revision: p.program.revision,
    }
}

fn freshness(
    vehicle: &Vehicle,
    programs: &[&ValidatedProgram],
    profile: &Profile,
    trace: &mut Vec<String>,
) -> Option<Timestamp> {
    let mut earliest = vehicle.price_valid_until;
    let mut consider = |t: Timestamp| {
        if earliest.is_none_or(|e| t < e) {
            earliest = Some(t);
        }
    };
    for p in programs {
        let p = &p.program;
        if let Some(from) = p.valid_from
            && from > profile.as_of
        {
            consider(from);
        }
        if let Some(until) = p.valid_until
            && until > profile.as_of
            && p.valid_from.is_none_or(|f| f <= profile.as_of)
        {
            consider(until);
        }
    }
    if let Some(t) = earliest {
        trace.push(format!("freshness: valid until {}", t.to_rfc3339()));
    }
    earliest
}

fn ci_contains(list: &[String], value: &str) -> bool {
    list.iter().any(|x| x.eq_ignore_ascii_case(value))
}

/// Applicability (docs/pricing.md "Applicability"), or a residency need when the profile
/// lacks the subdivision / postal code needed to decide.
fn applicability(
    vp: &ValidatedProgram,
    vehicle: &Vehicle,
    profile: &Profile,
    mode: PaymentMode,
) -> Result<Option<Need>, String> {
    let p = &vp.program;
    let currency = vehicle.advertised_price.currency();
    if let ProgramAmount::Known { amount } = &p.amount
        && amount.currency() != currency
    {
        return Err(format!(
            "currency: fixed amount in {} but the vehicle is priced in {}",
            amount.currency(),
            currency
        ));
    }
    if let Some(cap) = p.cap
        && cap.currency() != currency
    {
        return Err(format!(
            "currency: cap in {} but the vehicle is priced in {}",
            cap.currency(),
            currency
        ));
    }
    // A declarative amount limit is bound to its currency like a cap.
    if let Some(m) = p
        .stacking
        .limits
        .iter()
        .filter_map(|l| l.max_amount)
        .find(|m| m.currency() != currency)
    {
        return Err(format!(
            "currency: stacking limit in {} but the vehicle is priced in {}",
            m.currency(),
            currency
        ));
    }
    let a = &p.applies_to;
    let scope_fail = |what: &str, v: &str| Err(format!("scope: {what} `{v}` not covered"));
    if let Some(l) = &a.makes
        && !ci_contains(l, &vehicle.make)
    {
        return scope_fail("make", &vehicle.make);
    }
    if let Some(l) = &a.models
        && !ci_contains(l, &vehicle.model)
    {
        return scope_fail("model", &vehicle.model);
    }
    if let Some(l) = &a.years
        && !l.contains(&vehicle.year)
    {
        return scope_fail("year", &vehicle.year.to_string());
    }
    if let Some(l) = &a.trims
        && !vehicle.trim.as_deref().is_some_and(|t| ci_contains(l, t))
    {
        return scope_fail("trim", vehicle.trim.as_deref().unwrap_or("(none)"));
    }
    if let Some(l) = &a.conditions
        && !ci_contains(l, &vehicle.condition)
    {
        return scope_fail("condition", &vehicle.condition);
    }
    if let Some(l) = &a.vins
        && !vehicle.vin.as_deref().is_some_and(|v| ci_contains(l, v))
    {
        return scope_fail("vin", vehicle.vin.as_deref().unwrap_or("(none)"));
    }
    if let Some(l) = &a.rooftop_ids
        && !l.contains(&vehicle.rooftop_id)
    {
        return scope_fail("rooftop", &vehicle.rooftop_id);
    }
    if let Some(from) = p.valid_from
        && profile.as_of < from
    {
        return Err(format!("validity: starts {}", from.to_rfc3339()));
    }
    if let Some(until) = p.valid_until
        && profile.as_of >= until
    {
        return Err(format!("validity: ended {}", until.to_rfc3339()));
    }
    if let Some(modes) = &p.payment_modes
        && !modes.contains(&mode)
    {
        return Err(format!("payment mode: not offered for {}", mode.name()));
    }
    let mut need = None;
    let j = &profile.jurisdiction;
    if let Some(codes) = &p.jurisdictions {
        let country_ok = codes.iter().any(|c| c.eq_ignore_ascii_case(&j.country));
        let sub_ok = j
            .subdivision
            .as_deref()
            .is_some_and(|s| codes.iter().any(|c| c.eq_ignore_ascii_case(s)));
        let wants_sub_of_country = codes.iter().any(|c| {
            c.len() > 2
                && c.get(..2)
                    .is_some_and(|cc| cc.eq_ignore_ascii_case(&j.country))
        });
        if !country_ok && !sub_ok {
            if j.subdivision.is_none() && wants_sub_of_country {
                need = Some(Need {
                    criterion: Criterion::Residency.name().into(),
                    evidence: format!("residency in one of {}", codes.join(", ")),
                });
            } else {
                return Err(format!(
                    "jurisdiction: {} not in {}",
                    j.subdivision.as_deref().unwrap_or(&j.country),
                    codes.join(", ")
                ));
            }
        }
    }
    if !p.excluded_postal_prefixes.is_empty() {
        match &j.postal_code {
            Some(code) => {
                let norm: String = code
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect::<String>()
                    .to_ascii_uppercase();
                if let Some(px) = p.excluded_postal_prefixes.iter().find(|px| {
                    let pn: String = px
                        .chars()
                        .filter(|c| !c.is_whitespace())
                        .collect::<String>()
                        .to_ascii_uppercase();
                    norm.starts_with(&pn)
                }) {
                    return Err(format!("postal code: excluded prefix {px}"));
                }
            }
            None if need.is_none() => {
                need = Some(Need {
                    criterion: Criterion::Residency.name().into(),
                    evidence: format!(
                        "postal code outside prefixes {}",
                        p.excluded_postal_prefixes.join(", ")
                    ),
                });
            }
            None => {}
        }
    }
    Ok(need)
}

enum Test {
    True,
    False,
    Unknown,
}

fn test_criterion(c: &EligibilityCriterion, profile: &Profile, mode: PaymentMode) -> Test {
    if c.criterion == Criterion::PaymentMode {
        let m = mode.name();
        let hit = match (&c.operator, &c.value) {
            (Operator::Present, _) => true,
            (_, serde_json::Value::String(s)) => s == m,
            (_, serde_json::Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(m)),
            _ => false,
        };
        return if hit { Test::True } else { Test::False };
    }
    match profile.claims.get(&c.criterion) {
        Some(ClaimValue::True) => Test::True,
        Some(ClaimValue::False) => Test::False,
        Some(ClaimValue::Unknown) | None => Test::Unknown,
    }
}

fn needs_evidence(c: &EligibilityCriterion) -> bool {
    c.evidence_status == EvidenceStatus::Required || c.operator == Operator::Verified
}

fn need_of(c: &EligibilityCriterion) -> Need {
    let evidence = c.description.clone().unwrap_or_else(|| {
        let status = c.evidence_status.name();
        format!(
            "{} {} {} (evidence {status})",
            c.criterion.name(),
            c.operator.name(),
            c.value
        )
    });
    Need {
        criterion: c.criterion.name().into(),
        evidence,
    }
}

/// Tri-state eligibility (docs/pricing.md "Eligibility (tri-state)").
fn eligibility(vp: &ValidatedProgram, profile: &Profile, mode: PaymentMode) -> Eligibility {
    let p = &vp.program;
    if p.criteria.is_empty() {
        return Eligibility::Eligible;
    }
    let results: Vec<(&EligibilityCriterion, Test)> = p
        .criteria
        .iter()
        .map(|c| (c, test_criterion(c, profile, mode)))
        .collect();
    let unknown_needs = || -> Vec<Need> {
        results
            .iter()
            .filter(|(_, t)| matches!(t, Test::Unknown))
            .map(|(c, _)| need_of(c))
            .collect()
    };
    match p.criteria_mode {
        CriteriaMode::All => {
            if let Some((c, _)) = results.iter().find(|(_, t)| matches!(t, Test::False)) {
                return Eligibility::Ineligible {
                    reason: format!("criterion {} not met", c.criterion.name()),
                };
            }
            let needs = unknown_needs();
            if !needs.is_empty() {
                return Eligibility::Unknown { needs };
            }
            let mut ev: Vec<String> = results
                .iter()
                .filter(|(c, _)| needs_evidence(c))
                .map(|(c, _)| c.criterion.name().to_owned())
                .collect();
            ev.dedup();
            if ev.is_empty() {
                Eligibility::Eligible
            } else {
                Eligibility::EligibleSubjectToEvidence { criteria: ev }
            }
        }
        CriteriaMode::Any => {
            let met: Vec<&EligibilityCriterion> = results
                .iter()
                .filter(|(_, t)| matches!(t, Test::True))
                .map(|(c, _)| *c)
                .collect();
            if met.iter().any(|c| !needs_evidence(c)) {
                return Eligibility::Eligible;
            }
            if !met.is_empty() {
                let mut ev: Vec<String> = met.iter().map(|c| c.criterion.name().into()).collect();
                ev.dedup();
                return Eligibility::EligibleSubjectToEvidence { criteria: ev };
            }
            let needs = unknown_needs();
            if needs.is_empty() {
                Eligibility::Ineligible {
                    reason: "no criterion met (criteria_mode any)".into(),
                }
            } else {
                Eligibility::Unknown { needs }
            }
        }
    }
}

fn resolve_amount(vp: &ValidatedProgram, vehicle: &Vehicle) -> Result<ResolvedAmount, MoneyError> {
    let p = &vp.program;
    let cap = |m: Money| -> (Money, Option<Money>) {
        match p.cap {
            Some(c) if c.currency() == m.currency() && c.amount_minor() < m.amount_minor() => {
                (c, Some(m))
            }
            _ => (m, None),
        }
    };
    Ok(match &p.amount {
        ProgramAmount::Known { amount } => {
            let (amount, capped_from) = cap(*amount);
            ResolvedAmount::Known {
                amount,
                capped_from,
            }
        }
        ProgramAmount::Unknown { reason } => ResolvedAmount::Unknown {
            reason: reason.clone(),
        },
        ProgramAmount::PercentOff { percent, rounding } => {
            // Validation always sets `percent` for percent_off programs.
            let Some(pct) = vp.percent else {
                return Ok(ResolvedAmount::Unknown {
                    reason: format!("percent `{percent}` was not validated"),
                });
            };
            let r = vehicle.advertised_price.percent(pct, *rounding)?;
            let (amount, capped_from) = cap(r.money);
            ResolvedAmount::Percent {
                percent: percent.clone(),
                amount,
                capped_from,
                transformation: r.transformation,
                exact: r.exact,
            }
        }
    })
}

/// A search candidate.
struct Cand<'a> {
    vp: &'a ValidatedProgram,
    /// Index of the program in the evaluation's sorted program list: names
    /// it in the rule-verdict memo across searches and branches.
    gidx: usize,
    value: i64,
}

fn refs_match(list: &[String], other: &ValidatedProgram) -> bool {
    list.iter().any(|r| {
        if let Some(g) = r.strip_prefix(GROUP_REF_PREFIX) {
            g == other.program.stacking.group
        } else if let Some(t) = r.strip_prefix(TAG_REF_PREFIX) {
            other.program.tags.iter().any(|x| x == t)
        } else {
            *r == other.program.program_id
        }
    })
}

/// Pairwise compatibility (symmetric by construction).
pub fn compatible(a: &ValidatedProgram, b: &ValidatedProgram) -> bool {
    let (sa, sb) = (&a.program.stacking, &b.program.stacking);
    if a.program.program_id == b.program.program_id {
        return false;
    }
    if refs_match(&sa.not_combinable_with, b) || refs_match(&sb.not_combinable_with, a) {
        return false;
    }
    if sa.top_of_deal && sb.top_of_deal {
        return false;
    }
    if sa.group == sb.group && sa.group_resolution == GroupResolution::BestOne {
        return false;
    }
    let side_ok = |x: &ValidatedProgram, y: &ValidatedProgram| {
        let sx = &x.program.stacking;
        sx.combinability != Combinability::Exclusive
            || refs_match(&sx.combinable_with, y)
            || y.program.stacking.always_stackable
    };
    side_ok(a, b) && side_ok(b, a)
}

/// Whether a declarative limit selects `p`.
fn limit_selects(limit: &StackLimit, p: &ValidatedProgram) -> bool {
    match (&limit.group, &limit.tag) {
        (Some(g), _) => *g == p.program.stacking.group,
        (None, Some(t)) => p.program.tags.iter().any(|x| x == t),
        (None, None) => true,
    }
}

/// One declarative limit during a search, with the count and sum of the
/// current stack's members it selects (kept incrementally along the path).
struct LimitState {
    /// Candidate index of the program declaring it (the limit binds only
    /// while that program is in the stack).
    owner: usize,
    max_programs: Option<u64>,
    max_amount: Option<i128>,
    count: u64,
    sum: i128,
}

impl LimitState {
    fn exceeded(&self, count: u64, sum: i128) -> bool {
        self.max_programs.is_some_and(|m| count > m) || self.max_amount.is_some_and(|m| sum > m)
    }
}

/// A rule's verdict on one stack: `Ok(())` accepts, `Err(why)` rejects.
type Verdict = Result<(), String>;

/// Rule verdicts of one evaluation (a stack already judged is not judged
/// again; docs/pricing.md "Search"). Keyed by the rule's program, the stack
/// (sorted program indices) and, for a rule whose source names `ctx`, the branch's
/// payment mode; a rule that never names `ctx` sees the same inputs in every
/// branch (amounts do not depend on the mode), so its verdicts are shared
/// by all branches and by the best-stack and floor searches.
#[derive(Default)]
pub(crate) struct RuleMemo {
    verdicts: HashMap<(usize, Option<PaymentMode>, Vec<usize>), Verdict>,
    /// rhai evaluations actually run.
    pub(crate) evaluations: u64,
    /// Verdicts reused instead of running the rule again.
    pub(crate) reused: u64,
}

struct Search<'a, 'e, 'm, 'f, 'i> {
    cands: Vec<Cand<'a>>,
    /// Each candidate's rule-visible value, built once per search.
    maps: Vec<rhai::Dynamic>,
    compat: Vec<Vec<bool>>,
    runner: rules::RuleRunner<'e>,
    memo: &'m mut RuleMemo,
    effort: &'f mut Effort<'i>,
    mode: PaymentMode,
    /// Nodes this search visited.
    nodes: u64,
    exhausted: bool,
    best: Vec<usize>,
    best_total: i128,
    rule_rejections: Vec<(String, String)>,
    rule_rejections_total: u64,
    limits: Vec<LimitState>,
    /// Per candidate: the limits that select it.
    affects: Vec<Vec<usize>>,
    /// Per candidate: the limits it declares that do not select it.
    owned_only: Vec<Vec<usize>>,
    in_set: Vec<bool>,
    /// Extensions refused because they broke a declarative limit.
    limit_refusals: u64,
}

/// What the rules say of one stack.
enum Judgement {
    /// Every rule accepts it.
    Accepted,
    /// A rule rejects it; `true` when that rule is declared monotone.
    Rejected(bool),
    /// No verdict: the budget ran out, the caller interrupted, or a rule
    /// failed (the evaluation starts again without its program).
    Stop,
}

/// Rejected stacks traced per search; the rest are counted.
const TRACED_REJECTIONS: usize = 20;

impl Search<'_, '_, '_, '_, '_> {
    fn ids(&self, set: &[usize]) -> Vec<(&str, u32)> {
        let mut v: Vec<(&str, u32)> = set.iter().map(|&i| key(self.cands[i].vp)).collect();
        v.sort_unstable();
        v
    }

    /// `true` when `(total, set)` is a better stack than the current best
    /// (larger total, then fewer programs, then ascending ids).
    fn better(&self, total: i128, set: &[usize]) -> bool {
        match total.cmp(&self.best_total) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => match set.len().cmp(&self.best.len()) {
                Ordering::Less => true,
                Ordering::Greater => false,
                Ordering::Equal => self.ids(set) < self.ids(&self.best),
            },
        }
    }

    /// Whether adding candidate `k` to the current stack keeps every
    /// declarative limit (of the members and of `k`) satisfied. Counts and
    /// sums only grow, so a refusal holds for every larger stack too.
    fn limits_allow(&self, k: usize) -> bool {
        let value = i128::from(self.cands[k].value.max(0));
        for &l in &self.affects[k] {
            let st = &self.limits[l];
            if (self.in_set[st.owner] || st.owner == k) && st.exceeded(st.count + 1, st.sum + value)
            {
                return false;
            }
        }
        self.owned_only[k]
            .iter()
            .all(|&l| !self.limits[l].exceeded(self.limits[l].count, self.limits[l].sum))
    }

    fn push(&mut self, set: &mut Vec<usize>, k: usize) {
        let value = i128::from(self.cands[k].value.max(0));
        for &l in &self.affects[k] {
            self.limits[l].count += 1;
            self.limits[l].sum += value;
        }
        self.in_set[k] = true;
        set.push(k);
    }

    fn pop(&mut self, set: &mut Vec<usize>) {
        if let Some(k) = set.pop() {
            let value = i128::from(self.cands[k].value.max(0));
            for &l in &self.affects[k] {
                self.limits[l].count -= 1;
                self.limits[l].sum -= value;
            }
            self.in_set[k] = false;
        }
    }

    /// What the rules of `set`'s members say of it (memoized per rule and
    /// stack; see [`RuleMemo`]).
    fn rules_accept(&mut self, set: &[usize]) -> Judgement {
        let mut order: Vec<usize> = set.to_vec();
        order.sort_by(|&a, &b| key(self.cands[a].vp).cmp(&key(self.cands[b].vp)));
        let stack_key: Vec<usize> = order.iter().map(|&k| self.cands[k].gidx).collect();
        let mut array: Option<rhai::Array> = None;
        for &i in &order {
            let p = self.cands[i].vp;
            let Some(rule) = &p.rule else { continue };
            let mode = rule.reads_ctx.then_some(self.mode);
            let memo_key = (self.cands[i].gidx, mode, stack_key.clone());
            let verdict = if let Some(v) = self.memo.verdicts.get(&memo_key) {
                self.memo.reused += 1;
                v.clone()
            } else {
                if self.effort.check_interrupt() {
                    return Judgement::Stop;
                }
                // Building the stack costs one operation per member.
                let charge = 1 + u64::try_from(order.len()).unwrap_or(u64::MAX);
                let left = self.effort.op_cap.saturating_sub(self.effort.ops);
                if left <= charge {
                    self.effort.stop(BudgetStop::RuleOperations);
                    return Judgement::Stop;
                }
                let a = array
                    .get_or_insert_with(|| order.iter().map(|&k| self.maps[k].clone()).collect())
                    .clone();
                let run = self.runner.run_within(&rule.ast, a, left - charge);
                self.memo.evaluations += 1;
                self.effort.calls += 1;
                self.effort.ops += run.operations + charge;
                let v = match run.verdict {
                    None => {
                        self.effort.stop(BudgetStop::RuleOperations);
                        return Judgement::Stop;
                    }
                    Some(Ok(true)) => Ok(()),
                    Some(Ok(false)) => Err("returned false".to_owned()),
                    Some(Err(failure)) => {
                        // Never a verdict: the program is left out and the
                        // evaluation starts again without it.
                        let members: Vec<&ValidatedProgram> =
                            order.iter().map(|&k| self.cands[k].vp).collect();
                        self.effort.failures.push((
                            self.cands[i].gidx,
                            UnusableRule {
                                program_id: p.program.program_id.clone(),
                                revision: p.program.revision,
                                reason: format!(
                                    "the rule {}, for the stack {} (payment mode {})",
                                    rules::failure_words(&failure),
                                    rules::stack_words(&members),
                                    self.mode.name()
                                ),
                            },
                        ));
                        self.effort.restart = true;
                        return Judgement::Stop;
                    }
                };
                self.memo.verdicts.insert(memo_key, v.clone());
                v
            };
            if let Err(why) = verdict {
                self.rule_rejections_total += 1;
                if self.rule_rejections.len() < TRACED_REJECTIONS {
                    let members: Vec<&str> = order
                        .iter()
                        .map(|&k| self.cands[k].vp.program.program_id.as_str())
                        .collect();
                    self.rule_rejections.push((
                        format!("[{}]", members.join(", ")),
                        format!("rule of {} {why}", p.program.program_id),
                    ));
                }
                return Judgement::Rejected(p.program.stacking.rule_monotone);
            }
        }
        Judgement::Accepted
    }

    /// Visits `set` and its extensions by members of `avail` (candidates
    /// after the last member, compatible with every member and allowed by
    /// every declarative limit).
    fn dfs(&mut self, set: &mut Vec<usize>, total: i128, avail: &[usize]) {
        if !self.effort.take_node() {
            self.exhausted = true;
            return;
        }
        self.nodes += 1;
        if self.better(total, set) {
            match self.rules_accept(set) {
                Judgement::Accepted => {
                    self.best = set.clone();
                    self.best_total = total;
                }
                // A monotone rule rejects every extension too: prune.
                Judgement::Rejected(true) => return,
                Judgement::Rejected(false) => {}
                Judgement::Stop => {
                    self.exhausted = true;
                    return;
                }
            }
        }
        self.extend(set, total, avail);
    }

    /// The children of `set` in [`Search::dfs`].
    fn extend(&mut self, set: &mut Vec<usize>, total: i128, avail: &[usize]) {
        let mut suffix = vec![0_i128; avail.len() + 1];
        for (idx, &k) in avail.iter().enumerate().rev() {
            suffix[idx] = suffix[idx + 1] + i128::from(self.cands[k].value.max(0));
        }
        for (idx, &j) in avail.iter().enumerate() {
            // Bound: even every remaining compatible candidate cannot reach best.
            if total + suffix[idx] < self.best_total {
                break;
            }
            self.push(set, j);
            let mut next = Vec::with_capacity(avail.len() - idx);
            for &k in &avail[idx + 1..] {
                if !self.compat[j][k] {
                    continue;
                }
                if self.limits_allow(k) {
                    next.push(k);
                } else {
                    self.limit_refusals += 1;
                }
            }
            self.dfs(set, total + i128::from(self.cands[j].value), &next);
            self.pop(set);
            if self.exhausted {
                return;
            }
        }
    }
}

struct SearchOutcome<'a> {
    members: Vec<&'a ValidatedProgram>,
    optimality: Optimality,
    nodes: u64,
    rule_rejections: Vec<(String, String)>,
    rule_rejections_total: u64,
    limit_refusals: u64,
}

fn search<'a>(
    cands: Vec<Cand<'a>>,
    engine: &rhai::Engine,
    ctx: &RuleContext,
    mode: PaymentMode,
    memo: &mut RuleMemo,
    effort: &mut Effort<'_>,
) -> SearchOutcome<'a> {
    let mut cands = cands;
    cands.sort_by(|a, b| {
        b.value
            .cmp(&a.value)
            .then_with(|| key(a.vp).cmp(&key(b.vp)))
    });
    let n = cands.len();
    let compat: Vec<Vec<bool>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| i != j && compatible(cands[i].vp, cands[j].vp))
                .collect()
        })
        .collect();
    let mut limits = Vec::new();
    let mut affects = vec![Vec::new(); n];
    let mut owned_only = vec![Vec::new(); n];
    for (owner, c) in cands.iter().enumerate() {
        for limit in &c.vp.program.stacking.limits {
            let l = limits.len();
            limits.push(LimitState {
                owner,
                max_programs: limit.max_programs.map(u64::from),
                max_amount: limit.max_amount.map(|m| i128::from(m.amount_minor())),
                count: 0,
                sum: 0,
            });
            for (k, other) in cands.iter().enumerate() {
                if limit_selects(limit, other.vp) {
                    affects[k].push(l);
                }
            }
            if !limit_selects(limit, c.vp) {
                owned_only[owner].push(l);
            }
        }
    }
    let needs_maps = cands.iter().any(|c| c.vp.rule.is_some());
    let maps = if needs_maps {
        cands.iter().map(|c| ctx.program_dynamic(c.vp)).collect()
    } else {
        Vec::new()
    };
    let mut s = Search {
        cands,
        maps,
        compat,
        runner: rules::RuleRunner::new(engine, ctx),
        memo,
        effort,
        mode,
        nodes: 0,
        exhausted: false,
        best: Vec::new(),
        best_total: 0,
        rule_rejections: Vec::new(),
        rule_rejections_total: 0,
        limits,
        affects,
        owned_only,
        in_set: vec![false; n],
        limit_refusals: 0,
    };
    let mut set = Vec::new();
    // Warm start: rule calls are the expensive part, and a rule that is not
    // declared monotone does not prune, so first find the best stack without
    // any rhai-ruled program
    // (pairwise constraints and limits only: cheap and exact). It is a valid
    // stack, so it is a sound incumbent; the full search below then bounds
    // against it instead of against nothing. The result is the same total
    // order's maximum either way: the bound only drops branches that cannot
    // reach the incumbent.
    if s.cands.iter().any(|c| c.vp.rule.is_some()) {
        let rule_free: Vec<usize> = (0..n)
            .filter(|&k| s.cands[k].vp.rule.is_none() && s.limits_allow(k))
            .collect();
        s.dfs(&mut set, 0, &rule_free);
    }
    // The empty stack is the first node and always valid (no rule runs on it).
    if !s.exhausted {
        let all: Vec<usize> = (0..n).filter(|&k| s.limits_allow(k)).collect();
        s.limit_refusals += (n - all.len()) as u64;
        s.dfs(&mut set, 0, &all);
    }
    let mut members: Vec<&ValidatedProgram> = s.best.iter().map(|&i| s.cands[i].vp).collect();
    members.sort_by(|a, b| key(a).cmp(&key(b)));
    SearchOutcome {
        members,
        optimality: if s.exhausted {
            Optimality::Bounded {
                nodes_explored: s.nodes,
            }
        } else {
            Optimality::Proven
        },
        nodes: s.nodes,
        rule_rejections: s.rule_rejections,
        rule_rejections_total: s.rule_rejections_total,
        limit_refusals: s.limit_refusals,
    }
}

#[allow(clippy::too_many_arguments)]
fn stack_report(
    label: &str,
    mode: PaymentMode,
    outcome: SearchOutcome<'_>,
    surcharges: &[(&ValidatedProgram, &ResolvedAmount)],
    amounts: &BTreeMap<(String, u32), ResolvedAmount>,
    eligibilities: &BTreeMap<(String, u32), Eligibility>,
    price: Money,
    trace: &mut Vec<String>,
) -> Result<StackReport, MoneyError> {
    let currency: Currency = price.currency();
    let amount_of =
        |p: &ValidatedProgram| amounts.get(&(p.program.program_id.clone(), p.program.revision));
    let mut total = Money::zero(currency);
    let mut unknown_amounts = Vec::new();
    let mut subject = Vec::new();
    for p in &outcome.members {
        match amount_of(p).and_then(ResolvedAmount::known) {
            Some(m) => total = total.checked_add(m)?,
            None => unknown_amounts.push(pref(p)),
        }
        if matches!(
            eligibilities.get(&(p.program.program_id.clone(), p.program.revision)),
            Some(Eligibility::EligibleSubjectToEvidence { .. })
        ) {
            subject.push(pref(p));
        }
    }
    let mut sur = Money::zero(currency);
    for (p, a) in surcharges {
        match a.known() {
            Some(m) => sur = sur.checked_add(m)?,
            None => unknown_amounts.push(pref(p)),
        }
    }
    let raw = price.checked_sub(total)?.checked_add(sur)?;
    let floored = raw.is_negative();
    let net = if floored { Money::zero(currency) } else { raw };
    for (stack, why) in &outcome.rule_rejections {
        trace.push(format!(
            "{}/{label}: stack {stack} rejected: {why}",
            mode.name()
        ));
    }
    if outcome.limit_refusals > 0 {
        trace.push(format!(
            "{}/{label}: {} extensions refused by declarative limits",
            mode.name(),
            outcome.limit_refusals
        ));
    }
    let untraced = outcome.rule_rejections_total - outcome.rule_rejections.len() as u64;
    if untraced > 0 {
        trace.push(format!(
            "{}/{label}: {untraced} more stacks rejected by rules (not listed)",
            mode.name()
        ));
    }
    let ids: Vec<String> = outcome
        .members
        .iter()
        .map(|p| format!("{}@{}", p.program.program_id, p.program.revision))
        .collect();
    let opt = match outcome.optimality {
        Optimality::Proven => "proven".to_owned(),
        Optimality::Bounded { nodes_explored } => format!("bounded after {nodes_explored} nodes"),
    };
    trace.push(format!(
        "{}/{label}: stack [{}] discount {total} surcharges {sur} net {net} ({opt}, {} nodes)",
        mode.name(),
        ids.join(", "),
        outcome.nodes
    ));
    if floored {
        trace.push(format!(
            "{}/{label}: net price {raw} floored at zero",
            mode.name()
        ));
    }
    unknown_amounts.sort();
    Ok(StackReport {
        program_ids: outcome.members.iter().map(|p| pref(p)).collect(),
        surcharge_ids: surcharges.iter().map(|(p, _)| pref(p)).collect(),
        total_discount: total,
        surcharges: sur,
        net_price: net,
        floored_at_zero: floored,
        subject_to_evidence: subject,
        unknown_amounts,
        optimality: outcome.optimality,
    })
}

#[allow(clippy::too_many_arguments)]
fn evaluate_branch(
    vehicle: &Vehicle,
    engine: &rhai::Engine,
    programs: &[&ValidatedProgram],
    profile: &Profile,
    mode: PaymentMode,
    excluded: &BTreeMap<usize, UnusableRule>,
    memo: &mut RuleMemo,
    effort: &mut Effort<'_>,
    trace: &mut Vec<String>,
) -> Result<Branch, MoneyError> {
    let m = mode.name();
    let mut reports = Vec::new();
    let mut amounts = BTreeMap::new();
    let mut eligibilities = BTreeMap::new();
    let as_of = profile.as_of.to_rfc3339();
    let claims: Vec<(&str, Option<bool>)> = profile
        .claims
        .iter()
        .map(|(c, v)| {
            (
                c.name(),
                match v {
                    ClaimValue::True => Some(true),
                    ClaimValue::False => Some(false),
                    ClaimValue::Unknown => None,
                },
            )
        })
        .collect();
    let mut ctx = RuleContext::new(
        &RuleVehicle {
            make: &vehicle.make,
            model: &vehicle.model,
            year: i64::from(vehicle.year),
            trim: vehicle.trim.as_deref(),
            condition: &vehicle.condition,
            price_minor: vehicle.advertised_price.amount_minor(),
            currency: vehicle.advertised_price.currency().code(),
        },
        &RuleProfile {
            payment_mode: m,
            country: &profile.jurisdiction.country,
            subdivision: profile.jurisdiction.subdivision.as_deref(),
            claims,
        },
        &as_of,
    );
    // (program, index in `programs`, value, needs no claim)
    let mut discounts: Vec<(&ValidatedProgram, usize, i64, bool)> = Vec::new();
    let mut surcharges: Vec<(&ValidatedProgram, ResolvedAmount)> = Vec::new();
    let mut potential_extra = Vec::new();
    let mut unknown_amount_programs = Vec::new();
    for (gidx, vp) in programs.iter().enumerate() {
        let p = &vp.program;
        let id = format!("{}@{}", p.program_id, p.revision);
        let amount = resolve_amount(vp, vehicle)?;
        // A program whose rule failed on a real stack is out of every stack
        // and of every offer (docs/pricing.md section 3).
        let applies = match excluded.get(&gidx) {
            Some(u) => Err(format!("stacking rule cannot be evaluated: {}", u.reason)),
            None => applicability(vp, vehicle, profile, mode),
        };
        let (applicability, elig) = match applies {
            Err(reason) => {
                trace.push(format!("{m}: {id} not applicable: {reason}"));
                (
                    Applicability::NotApplicable {
                        reason: reason.clone(),
                    },
                    Eligibility::Ineligible {
                        reason: format!("not applicable: {reason}"),
                    },
                )
            }
            Ok(residency_need) => {
                let mut e = eligibility(vp, profile, mode);
                if let Some(need) = residency_need {
                    e = match e {
                        Eligibility::Ineligible { .. } => e,
                        Eligibility::Unknown { mut needs } => {
                            needs.insert(0, need);
                            Eligibility::Unknown { needs }
                        }
                        _ => Eligibility::Unknown { needs: vec![need] },
                    };
                }
                trace.push(format!(
                    "{m}: {id} applicable; eligibility {}",
                    elig_name(&e)
                ));
                (Applicability::Applicable, e)
            }
        };
        let applicable = applicability == Applicability::Applicable;
        let usable = matches!(
            elig,
            Eligibility::Eligible | Eligibility::EligibleSubjectToEvidence { .. }
        );
        if applicable && !matches!(elig, Eligibility::Ineligible { .. }) && amount.known().is_none()
        {
            unknown_amount_programs.push(pref(vp));
        }
        if applicable {
            match p.direction {
                Direction::Surcharge => {
                    if !matches!(elig, Eligibility::Ineligible { .. }) {
                        trace.push(format!("{m}: {id} surcharge always included"));
                        surcharges.push((vp, amount.clone()));
                    }
                }
                Direction::Discount => {
                    if usable {
                        let value = amount.known().map_or(0, Money::amount_minor);
                        let no_claim = needs_no_claim(vp, &elig, profile, mode);
                        discounts.push((vp, gidx, value, no_claim));
                    } else if let Eligibility::Unknown { needs } = &elig {
                        let what = match amount.known() {
                            Some(a) => format!("+{a}"),
                            None => "+amount unknown".to_owned(),
                        };
                        let crits: Vec<&str> = needs.iter().map(|n| n.criterion.as_str()).collect();
                        potential_extra.push(PotentialExtra {
                            program: pref(vp),
                            amount: amount.clone(),
                            needs: needs.clone(),
                            summary: format!(
                                "{} {what} if {} verified",
                                p.name,
                                crits.join(" and ")
                            ),
                        });
                    }
                }
            }
        }
        ctx.set_amount(
            &p.program_id,
            p.revision,
            amount.known().map(Money::amount_minor),
        );
        amounts.insert((p.program_id.clone(), p.revision), amount.clone());
        eligibilities.insert((p.program_id.clone(), p.revision), elig.clone());
        reports.push(ProgramReport {
            program_id: p.program_id.clone(),
            revision: p.revision,
            name: p.name.clone(),
            direction: p.direction,
            applicability,
            eligibility: elig,
            amount,
        });
    }
    let sur_refs: Vec<(&ValidatedProgram, &ResolvedAmount)> =
        surcharges.iter().map(|(p, a)| (*p, a)).collect();
    fn cand<'a>(&(vp, gidx, value, _): &(&'a ValidatedProgram, usize, i64, bool)) -> Cand<'a> {
        Cand { vp, gidx, value }
    }
    let all: Vec<Cand<'_>> = discounts.iter().map(cand).collect();
    let floor: Vec<Cand<'_>> = discounts
        .iter()
        .filter(|(_, _, _, no_claim)| *no_claim)
        .map(cand)
        .collect();
    let best = search(all, engine, &ctx, mode, memo, effort);
    let best_stack = stack_report(
        "best",
        mode,
        best,
        &sur_refs,
        &amounts,
        &eligibilities,
        vehicle.advertised_price,
        trace,
    )?;
    // When every usable discount needs no claim the floor is the best stack.
    let floor = if floor.len() == discounts.len() {
        search_again(
            &best_stack,
            discounts.iter().map(|(vp, _, _, _)| *vp).collect(),
        )
    } else {
        search(floor, engine, &ctx, mode, memo, effort)
    };
    let guaranteed_floor = stack_report(
        "floor",
        mode,
        floor,
        &sur_refs,
        &amounts,
        &eligibilities,
        vehicle.advertised_price,
        trace,
    )?;
    Ok(Branch {
        payment_mode: mode,
        programs: reports,
        best_stack,
        guaranteed_floor,
        potential_extra,
        unknown_amount_programs,
    })
}

/// Rebuilds an outcome from a finished search's report (same candidates,
/// same answer) instead of searching twice.
fn search_again<'a>(report: &StackReport, cands: Vec<&'a ValidatedProgram>) -> SearchOutcome<'a> {
    let mut members: Vec<&ValidatedProgram> = cands
        .into_iter()
        .filter(|p| report.program_ids.contains(&pref(p)))
        .collect();
    members.sort_by(|a, b| key(a).cmp(&key(b)));
    SearchOutcome {
        members,
        optimality: report.optimality,
        nodes: 0,
        rule_rejections: Vec::new(),
        rule_rejections_total: 0,
        limit_refusals: 0,
    }
}

/// Whether a usable discount belongs in the guaranteed floor (docs/pricing.md
/// "Output"): the floor counts the programs that need **no claim
/// from the buyer**, not only those with no criteria at all. A program is
/// in it when it is plainly `eligible` in this branch and would still be
/// eligible with every claim withdrawn, i.e. every criterion it relies on
/// is decided by the profile itself (its `payment_mode` criterion, decided
/// by the branch). Eligible only subject to evidence, or eligible because
/// of a claim, is not guaranteed.
fn needs_no_claim(
    vp: &ValidatedProgram,
    elig: &Eligibility,
    profile: &Profile,
    mode: PaymentMode,
) -> bool {
    if !matches!(elig, Eligibility::Eligible) {
        return false;
    }
    if vp.program.criteria.is_empty() || profile.claims.is_empty() {
        return true;
    }
    let unclaimed = Profile {
        claims: BTreeMap::new(),
        ..profile.clone()
    };
    matches!(eligibility(vp, &unclaimed, mode), Eligibility::Eligible)
}

fn elig_name(e: &Eligibility) -> String {
    match e {
        Eligibility::Eligible => "eligible".into(),
        Eligibility::EligibleSubjectToEvidence { criteria } => {
            format!("eligible subject to evidence ({})", criteria.join(", "))
        }
        Eligibility::Ineligible { reason } => format!("ineligible ({reason})"),
        Eligibility::Unknown { needs } => {
            let c: Vec<&str> = needs.iter().map(|n| n.criterion.as_str()).collect();
            format!("unknown (needs {})", c.join(", "))
        }
    }
}
