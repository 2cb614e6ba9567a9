//! What an evaluation takes (the vehicle, the buyer profile, the budget)
//! and what it reports (per program, per stack, per payment-mode branch):
//! the engine's public vocabulary, serialized as docs/pricing.md "Output"
//! describes it.

use super::*;

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
    pub(super) fn known(&self) -> Option<Money> {
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
