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

mod eligibility;
mod report;
mod search;

use eligibility::*;
pub use report::*;
pub use search::compatible;
use search::*;

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
