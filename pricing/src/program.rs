//! The incentive program model: the serde shape of a programs file
//! (`schemas/programs.schema.json`, `docs/pricing.md` section 1) and the
//! form a program takes once validated.
//!
//! It stands below both of its readers: `incentives` validates programs into
//! [`ValidatedProgram`] (compiling rules with `rules`), and `rules` builds the
//! `stack[i]` map a script sees from a [`ValidatedProgram`]. Holding the model
//! here keeps those two from importing each other (no import circles,
//! docs/architecture.md). The module is private; every name is public as
//! `pricing::incentives::*`.

use std::str::FromStr;

use chrono::{DateTime, FixedOffset};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::money::{Money, RoundingMode};

/// An RFC 3339 instant with an explicit offset.
pub type Timestamp = DateTime<FixedOffset>;

/// A programs file: `{ "programs": [ ... ] }`, all for one organization.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramsFile {
    /// The programs.
    pub programs: Vec<Program>,
}

macro_rules! named_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident => $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vm])* $v),+ }
        impl $name {
            /// The wire name.
            pub const fn name(self) -> &'static str {
                match self { $($name::$v => $s),+ }
            }
        }
    };
}

named_enum!(
    /// What kind of program it is.
    ProgramKind {
        /// Customer cash / rebate.
        Cash => "cash",
        /// Bonus cash.
        BonusCash => "bonus_cash",
        /// Subsidized finance rate.
        FinanceRate => "finance_rate",
        /// Lease cash.
        LeaseCash => "lease_cash",
        /// Dealer discount.
        DealerDiscount => "dealer_discount",
        /// A waived fee.
        FeeWaiver => "fee_waiver",
        /// A surcharge (market adjustment, ...).
        Surcharge => "surcharge",
        /// Anything else.
        Other => "other",
    }
);

named_enum!(
    /// Lowers or raises the price.
    Direction {
        /// Lowers the price.
        Discount => "discount",
        /// Raises the price.
        Surcharge => "surcharge",
    }
);

named_enum!(
    /// A concrete payment mode.
    PaymentMode {
        /// Cash purchase.
        Cash => "cash",
        /// Financed purchase.
        Finance => "finance",
        /// Lease.
        Lease => "lease",
    }
);

named_enum!(
    /// DAP `eligibilityCriterion.criterion`.
    Criterion {
        /// Residency.
        Residency => "residency",
        /// Brand loyalty.
        Loyalty => "loyalty",
        /// Conquest (owns a competitor's vehicle).
        Conquest => "conquest",
        /// Military.
        Military => "military",
        /// First responder.
        FirstResponder => "first_responder",
        /// Recent college graduate.
        CollegeGraduate => "college_graduate",
        /// Uses a given finance provider.
        FinanceProvider => "finance_provider",
        /// Payment mode (decided by the branch, not by a claim).
        PaymentMode => "payment_mode",
        /// Has a trade-in.
        TradeIn => "trade_in",
        /// Returns a lease.
        LeaseReturn => "lease_return",
        /// Membership.
        Membership => "membership",
        /// Other.
        Other => "other",
    }
);

named_enum!(
    /// DAP `eligibilityCriterion.operator`.
    Operator {
        /// Equals `value`.
        Equals => "equals",
        /// One of `value`.
        In => "in",
        /// Present.
        Present => "present",
        /// Must be proven.
        Verified => "verified",
    }
);

named_enum!(
    /// DAP `eligibilityCriterion.evidence_status`.
    EvidenceStatus {
        /// The buyer must prove it: eligibility is "subject to evidence".
        Required => "required",
        /// Claimed.
        Claimed => "claimed",
        /// Verified.
        Verified => "verified",
        /// Not required.
        NotRequired => "not_required",
    }
);

named_enum!(
    /// `criteria_mode`.
    CriteriaMode {
        /// Every criterion must hold.
        All => "all",
        /// One is enough.
        Any => "any",
    }
);

named_enum!(
    /// `stacking.combinability` (DAP).
    Combinability {
        /// Combines unless an exclusion says otherwise.
        Stackable => "stackable",
        /// Combines only with its `combinable_with` (and always-stackable programs).
        Exclusive => "exclusive",
        /// Its rhai `rule` decides over the whole stack.
        RuleDefined => "rule_defined",
    }
);

named_enum!(
    /// `stacking.group_resolution`.
    GroupResolution {
        /// Every member may stack.
        All => "all",
        /// At most one member of the group per stack.
        BestOne => "best_one",
    }
);

#[allow(clippy::derivable_impls)] // the variants come from a macro
impl Default for CriteriaMode {
    fn default() -> Self {
        CriteriaMode::All
    }
}

#[allow(clippy::derivable_impls)] // the variants come from a macro
impl Default for GroupResolution {
    fn default() -> Self {
        GroupResolution::All
    }
}

/// A program's amount: `{"status": "known" | "unknown" | "percent_off", ...}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum ProgramAmount {
    /// A fixed amount; bound to its currency.
    Known {
        /// Magnitude (direction is separate), at least zero.
        amount: Money,
    },
    /// Not known: never summed.
    Unknown {
        /// Why.
        reason: String,
    },
    /// A percentage of the advertised price, additive (never compounding).
    PercentOff {
        /// Exact decimal string, e.g. `"2.5"`; 0 < percent <= 100.
        percent: String,
        /// The rounding applied once to the result.
        rounding: RoundingMode,
    },
}

/// Vehicle scope; an omitted list means "all".
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppliesTo {
    /// Makes (ASCII case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub makes: Option<Vec<String>>,
    /// Models (ASCII case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<String>>,
    /// Model years.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub years: Option<Vec<i32>>,
    /// Trims (ASCII case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trims: Option<Vec<String>>,
    /// Conditions (`new`, `used`, `certified`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<String>>,
    /// VINs (exact, upper case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vins: Option<Vec<String>>,
    /// Rooftop ids (exact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rooftop_ids: Option<Vec<String>>,
}

/// DAP `eligibilityCriterion`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EligibilityCriterion {
    /// What the condition is about.
    pub criterion: Criterion,
    /// How `value` is tested.
    pub operator: Operator,
    /// Expected value (scalar or array of scalars).
    pub value: serde_json::Value,
    /// Evidence needed.
    pub evidence_status: EvidenceStatus,
    /// Plain-language description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A declarative stacking limit (docs/pricing.md "Declarative rules"):
/// while the program that declares it is in a stack, the stack's
/// members it selects (those of `group`, or carrying `tag`, or all of them
/// when neither is given; the declaring program included when it matches)
/// number at most `max_programs` and their known amounts sum to at most
/// `max_amount`. Adding a program never lowers a count or a sum, so a
/// violated limit stays violated in every larger stack: the search prunes
/// on it exactly (no rhai call, no lost optimum).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StackLimit {
    /// Selects the members of this stacking group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Selects the members carrying this tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// At most this many selected members.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_programs: Option<u32>,
    /// The selected members' known amounts (for this vehicle, after caps)
    /// sum to at most this. Bound to its currency: in another currency than
    /// the vehicle's price the declaring program is not applicable, as with
    /// a cap. Unknown amounts are never summed (they still count for
    /// `max_programs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_amount: Option<Money>,
}

impl StackLimit {
    /// `group oem`, `tag dealer` or `every program`: what the limit selects.
    pub fn selector(&self) -> String {
        match (&self.group, &self.tag) {
            (Some(g), _) => format!("group {g}"),
            (None, Some(t)) => format!("tag {t}"),
            (None, None) => "every program".to_owned(),
        }
    }
}

/// `stacking`: the DAP fields plus this project's richer ones.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramStacking {
    /// Stacking group.
    pub group: String,
    /// DAP combinability.
    pub combinability: Combinability,
    /// Program ids (or `group:<name>`) this one combines with.
    #[serde(default)]
    pub combinable_with: Vec<String>,
    /// Program ids (or `group:<name>`) this one never combines with; symmetric.
    #[serde(default)]
    pub not_combinable_with: Vec<String>,
    /// Combines with anything unless an exclusion names it.
    #[serde(default)]
    pub always_stackable: bool,
    /// A primary program: at most one per stack.
    #[serde(default)]
    pub top_of_deal: bool,
    /// `all` or `best_one` (must agree across the group).
    #[serde(default)]
    pub group_resolution: GroupResolution,
    /// rhai predicate; required iff `combinability = rule_defined`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Declares the rule monotone: when it rejects a stack it rejects every
    /// larger stack too (limits like "at most N", "sum at most X", "not with
    /// Y"). Lets the search prune; a wrong declaration can only lose
    /// optimality, never admit an invalid stack. Only with a rule.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rule_monotone: bool,
    /// Declarative limits, evaluated natively by the search (no rhai).
    /// Only with `combinability: rule_defined`, which then needs a `rule`,
    /// `limits`, or both.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<StackLimit>,
}

/// Prefix marking a group reference in `combinable_with` /
/// `not_combinable_with`.
pub const GROUP_REF_PREFIX: &str = "group:";

/// Prefix marking a tag reference in `combinable_with` /
/// `not_combinable_with` (every program carrying the tag): mutual exclusion
/// by tag, checked pairwise by the search (docs/pricing.md "Declarative rules").
pub const TAG_REF_PREFIX: &str = "tag:";

/// Where the program came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramProvenance {
    /// Source name (e.g. the OEM program bulletin).
    pub source_name: String,
    /// Authority class (`oem`, `dealer_asserted`, ...).
    pub authority: String,
    /// When the source was observed.
    pub observed_at: Timestamp,
    /// The source's record id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_id: Option<String>,
}

/// One incentive program (docs/pricing.md section 1, "The programs file").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Program {
    /// Identity.
    pub program_id: String,
    /// Revision; every evaluation records the one it used.
    pub revision: u32,
    /// Display name.
    pub name: String,
    /// Kind.
    pub kind: ProgramKind,
    /// Discount or surcharge.
    pub direction: Direction,
    /// The amount.
    pub amount: ProgramAmount,
    /// Cap on the program's amount (same currency as the vehicle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<Money>,
    /// Vehicle scope.
    #[serde(default)]
    pub applies_to: AppliesTo,
    /// ISO 3166-1 (`US`) or 3166-2 (`US-IL`) codes; omitted = everywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jurisdictions: Option<Vec<String>>,
    /// Postal-code prefixes where it does not apply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded_postal_prefixes: Vec<String>,
    /// Start of validity (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<Timestamp>,
    /// End of validity (exclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<Timestamp>,
    /// Payment modes; omitted = all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_modes: Option<Vec<PaymentMode>>,
    /// Eligibility criteria (empty = no claim needed).
    #[serde(default)]
    pub criteria: Vec<EligibilityCriterion>,
    /// `all` (default) or `any`.
    #[serde(default)]
    pub criteria_mode: CriteriaMode,
    /// Stacking.
    pub stacking: ProgramStacking,
    /// Free labels visible to rules (`stack[i].tags`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Disclosure text shown with the program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disclosure: Option<String>,
    /// Provenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<ProgramProvenance>,
}

/// A compiled `rule_defined` rule.
#[derive(Clone, Debug)]
pub struct CompiledRule {
    /// The compiled script.
    pub ast: rhai::AST,
    /// `sha256:<hex>` of the source, for provenance.
    pub rule_hash: String,
    /// Whether the source names `ctx` at all. A rule that does not can only
    /// depend on `stack`, whose maps are the same in every payment-mode
    /// branch, so its verdict on a stack is reused across branches.
    pub reads_ctx: bool,
}

/// A program that passed validation.
#[derive(Clone, Debug)]
pub struct ValidatedProgram {
    /// The program as imported.
    pub program: Program,
    /// The exact percentage for `percent_off`.
    pub percent: Option<Decimal>,
    /// The compiled rule for `rule_defined`.
    pub rule: Option<CompiledRule>,
    /// `sha256:` of the combination rule this program declares, for
    /// provenance: the rhai source's hash when it has only a rhai rule,
    /// otherwise (declarative `limits`, with or without rhai) the hash of the
    /// compact JSON `{"limits": [...], "rule": <source or null>}`. `None`
    /// without either. Read it with [`ValidatedProgram::rule_hash`].
    pub combination_hash: Option<String>,
}

impl ValidatedProgram {
    /// The hash naming the program's combination rule (rhai and/or
    /// declarative limits) in every evaluation's provenance.
    pub fn rule_hash(&self) -> Option<&str> {
        self.combination_hash.as_deref()
    }
}

impl FromStr for ProgramsFile {
    type Err = serde_json::Error;
    /// Parses a JSON programs file (no validation beyond the shape).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        serde_json::from_str(s)
    }
}
