//! Incentive programs (OFFERS.md section 2): the serde model of a programs
//! file and its validation ([`ProgramSet::validate`]), which reports every
//! problem at once and compiles each `rule_defined` rule exactly once.
//!
//! The JSON Schema is `schemas/programs.schema.json`; the format is written
//! up in `docs/pricing.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

use chrono::{DateTime, FixedOffset};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::money::{Money, RoundingMode};
use crate::rules;

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

/// A declarative stacking limit (docs/pricing.md "Declarative rules", issue 12
/// item 7): while the program that declares it is in a stack, the stack's
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

/// One incentive program (OFFERS.md section 2).
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

/// Whether `source` contains the identifier `ctx` (comments and strings
/// included: over-approximating only costs reuse, never correctness).
pub(crate) fn mentions_identifier(source: &str, ident: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    source.match_indices(ident).any(|(at, _)| {
        let before = source[..at].chars().next_back();
        let after = source[at + ident.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
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

/// A validated program set plus the sandbox engine its rules compiled on.
pub struct ValidatedPrograms {
    programs: Vec<ValidatedProgram>,
    engine: rhai::Engine,
}

impl std::fmt::Debug for ValidatedPrograms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValidatedPrograms")
            .field("programs", &self.programs)
            .finish_non_exhaustive()
    }
}

impl ValidatedPrograms {
    /// The programs, in input order.
    pub fn programs(&self) -> &[ValidatedProgram] {
        &self.programs
    }

    /// The sandbox engine (from [`rules::engine`]).
    pub fn engine(&self) -> &rhai::Engine {
        &self.engine
    }
}

/// One validation problem.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProgramProblem {
    /// Index in the `programs` array.
    pub program_index: usize,
    /// The program id when it was readable.
    pub program_id: Option<String>,
    /// JSON pointer into the programs file, e.g. `/programs/2/stacking/rule`.
    pub pointer: String,
    /// What is wrong.
    pub rule: String,
}

impl std::fmt::Display for ProgramProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let id = self.program_id.as_deref().unwrap_or("?");
        write!(f, "{} (program {id}): {}", self.pointer, self.rule)
    }
}

/// Validation entry point.
pub struct ProgramSet;

/// `sha256:<hex>` of a string.
pub fn sha256_hex(source: &str) -> String {
    let digest = Sha256::digest(source.as_bytes());
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in digest.iter() {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

/// Parses a percent string exactly: digits, optionally `.` and digits;
/// `0 < p <= 100`.
pub fn parse_percent(text: &str) -> Result<Decimal, String> {
    let ok_syntax = {
        let mut parts = text.splitn(2, '.');
        let int = parts.next().unwrap_or("");
        let frac = parts.next();
        !int.is_empty()
            && int.bytes().all(|b| b.is_ascii_digit())
            && frac.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
    };
    if !ok_syntax {
        return Err(format!(
            "percent `{text}` is not a plain decimal string (digits, optional `.` and digits)"
        ));
    }
    let value =
        Decimal::from_str_exact(text).map_err(|e| format!("percent `{text}` is not exact: {e}"))?;
    if value <= Decimal::ZERO || value > Decimal::ONE_HUNDRED {
        return Err(format!("percent `{text}` must be > 0 and <= 100"));
    }
    Ok(value)
}

fn is_identifier(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-'))
}

fn is_jurisdiction(s: &str) -> bool {
    let b = s.as_bytes();
    let country = |x: &[u8]| x.len() == 2 && x.iter().all(u8::is_ascii_uppercase);
    match b.len() {
        2 => country(b),
        4..=6 => {
            country(&b[..2])
                && b[2] == b'-'
                && b[3..]
                    .iter()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        }
        _ => false,
    }
}

/// The DAP `sourceAuthority` values (common.schema.json).
pub const AUTHORITIES: &[&str] = &[
    "authoritative_dealer_system",
    "dealer_asserted",
    "oem",
    "government",
    "third_party",
    "derived",
    "unknown",
];

/// Prefix marking a group reference in `combinable_with` /
/// `not_combinable_with`.
pub const GROUP_REF_PREFIX: &str = "group:";

/// Prefix marking a tag reference in `combinable_with` /
/// `not_combinable_with` (every program carrying the tag): mutual exclusion
/// by tag, checked pairwise by the search (issue 12 item 7).
pub const TAG_REF_PREFIX: &str = "tag:";

impl ProgramSet {
    /// Validates a programs file.
    ///
    /// # Errors
    /// Every problem found, in program order.
    pub fn validate_file(file: ProgramsFile) -> Result<ValidatedPrograms, Vec<ProgramProblem>> {
        ProgramSet::validate(file.programs)
    }

    /// Validates programs, reporting every problem at once, and compiles each
    /// rule once. Unknown ids in `combinable_with` / `not_combinable_with`
    /// are errors (a typo in an exclusion would silently allow a forbidden
    /// combination).
    ///
    /// # Errors
    /// Every problem found, in program order.
    pub fn validate(programs: Vec<Program>) -> Result<ValidatedPrograms, Vec<ProgramProblem>> {
        let engine = rules::engine();
        let mut problems = Vec::new();
        let ids: BTreeSet<&str> = programs.iter().map(|p| p.program_id.as_str()).collect();
        let groups: BTreeSet<&str> = programs.iter().map(|p| p.stacking.group.as_str()).collect();
        let tags: BTreeSet<&str> = programs
            .iter()
            .flat_map(|p| p.tags.iter().map(String::as_str))
            .collect();
        let mut seen: BTreeMap<(&str, u32), usize> = BTreeMap::new();
        let mut group_res: BTreeMap<&str, (GroupResolution, usize)> = BTreeMap::new();
        let mut validated = Vec::with_capacity(programs.len());

        for (i, p) in programs.iter().enumerate() {
            let mut bad = |field: &str, rule: String| {
                problems.push(ProgramProblem {
                    program_index: i,
                    program_id: Some(p.program_id.clone()),
                    pointer: format!("/programs/{i}{field}"),
                    rule,
                });
            };
            if !is_identifier(&p.program_id) {
                bad(
                    "/program_id",
                    format!("`{}` is not an identifier", p.program_id),
                );
            }
            if p.name.trim().is_empty() || p.name.chars().count() > 160 {
                bad("/name", "name must be 1..=160 characters".into());
            }
            if let Some(prov) = &p.provenance
                && !AUTHORITIES.contains(&prov.authority.as_str())
            {
                bad(
                    "/provenance/authority",
                    format!(
                        "authority `{}` is not one of {}",
                        prov.authority,
                        AUTHORITIES.join(", ")
                    ),
                );
            }
            if let Some(first) = seen.insert((&p.program_id, p.revision), i) {
                bad(
                    "/revision",
                    format!(
                        "duplicate (program_id, revision) ({}, {}): also program {first}",
                        p.program_id, p.revision
                    ),
                );
            }
            if p.kind == ProgramKind::Surcharge && p.direction != Direction::Surcharge {
                bad(
                    "/direction",
                    "kind surcharge needs direction surcharge".into(),
                );
            }
            let mut percent = None;
            match &p.amount {
                ProgramAmount::Known { amount } => {
                    if amount.is_negative() {
                        bad(
                            "/amount/amount/amount_minor",
                            "amount is negative (direction carries the sign)".into(),
                        );
                    }
                    if let Some(cap) = p.cap
                        && cap.currency() != amount.currency()
                    {
                        bad(
                            "/cap/currency",
                            format!(
                                "cap currency {} differs from amount currency {}",
                                cap.currency(),
                                amount.currency()
                            ),
                        );
                    }
                }
                ProgramAmount::Unknown { reason } => {
                    if reason.trim().is_empty() {
                        bad("/amount/reason", "an unknown amount needs a reason".into());
                    }
                }
                ProgramAmount::PercentOff { percent: text, .. } => match parse_percent(text) {
                    Ok(v) => percent = Some(v),
                    Err(e) => bad("/amount/percent", e),
                },
            }
            if let Some(cap) = p.cap
                && cap.is_negative()
            {
                bad("/cap/amount_minor", "cap is negative".into());
            }
            if let (Some(from), Some(until)) = (p.valid_from, p.valid_until)
                && until < from
            {
                bad(
                    "/valid_until",
                    format!("valid_until {until} is before valid_from {from}"),
                );
            }
            for (j, code) in p.jurisdictions.iter().flatten().enumerate() {
                if !is_jurisdiction(code) {
                    bad(
                        &format!("/jurisdictions/{j}"),
                        format!("`{code}` is not ISO 3166-1 alpha-2 or ISO 3166-2"),
                    );
                }
            }
            if p.stacking.group.trim().is_empty() {
                bad("/stacking/group", "group is empty".into());
            }
            match group_res.get(p.stacking.group.as_str()) {
                Some((res, first)) if *res != p.stacking.group_resolution => bad(
                    "/stacking/group_resolution",
                    format!(
                        "group `{}` is {} here but {} in program {first}",
                        p.stacking.group,
                        p.stacking.group_resolution.name(),
                        res.name()
                    ),
                ),
                Some(_) => {}
                None => {
                    group_res.insert(&p.stacking.group, (p.stacking.group_resolution, i));
                }
            }
            for (field, list) in [
                ("combinable_with", &p.stacking.combinable_with),
                ("not_combinable_with", &p.stacking.not_combinable_with),
            ] {
                for (j, r) in list.iter().enumerate() {
                    let known = if let Some(g) = r.strip_prefix(GROUP_REF_PREFIX) {
                        groups.contains(g)
                    } else if let Some(t) = r.strip_prefix(TAG_REF_PREFIX) {
                        tags.contains(t)
                    } else {
                        ids.contains(r.as_str())
                    };
                    if !known {
                        bad(
                            &format!("/stacking/{field}/{j}"),
                            format!("`{r}` names no program, group or tag in this file"),
                        );
                    }
                }
            }
            for (j, limit) in p.stacking.limits.iter().enumerate() {
                let at = format!("/stacking/limits/{j}");
                if limit.group.is_some() && limit.tag.is_some() {
                    bad(&at, "a limit selects by group or by tag, not both".into());
                }
                if let Some(g) = &limit.group
                    && !groups.contains(g.as_str())
                {
                    bad(
                        &format!("{at}/group"),
                        format!("`{g}` names no group in this file"),
                    );
                }
                if let Some(t) = &limit.tag
                    && !tags.contains(t.as_str())
                {
                    bad(
                        &format!("{at}/tag"),
                        format!("`{t}` is no program's tag in this file"),
                    );
                }
                if limit.max_programs.is_none() && limit.max_amount.is_none() {
                    bad(&at, "a limit needs max_programs, max_amount or both".into());
                }
                if let Some(m) = limit.max_amount
                    && m.is_negative()
                {
                    bad(
                        &format!("{at}/max_amount/amount_minor"),
                        "max_amount is negative".into(),
                    );
                }
            }
            let rule_defined = p.stacking.combinability == Combinability::RuleDefined;
            let has_limits = !p.stacking.limits.is_empty();
            if has_limits && !rule_defined {
                bad(
                    "/stacking/limits",
                    "limits are allowed only with combinability rule_defined".into(),
                );
            }
            let mut compiled = None;
            match (&p.stacking.rule, rule_defined) {
                (None, true) if has_limits => {
                    if p.stacking.rule_monotone {
                        bad(
                            "/stacking/rule_monotone",
                            "rule_monotone is allowed only with a rule".into(),
                        );
                    }
                }
                (None, true) => bad(
                    "/stacking/rule",
                    "combinability rule_defined requires a rule or limits".into(),
                ),
                (Some(_), false) => bad(
                    "/stacking/rule",
                    "a rule is allowed only with combinability rule_defined".into(),
                ),
                (None, false) => {
                    if p.stacking.rule_monotone {
                        bad(
                            "/stacking/rule_monotone",
                            "rule_monotone is allowed only with a rule".into(),
                        );
                    }
                }
                (Some(src), true) => match rules::compile(&engine, src) {
                    Ok(ast) => {
                        compiled = Some(CompiledRule {
                            ast,
                            rule_hash: sha256_hex(src),
                            reads_ctx: mentions_identifier(src, "ctx"),
                        });
                    }
                    Err(e) => bad(
                        "/stacking/rule",
                        format!("rule of program {} does not compile: {e}", p.program_id),
                    ),
                },
            }
            let combination_hash = if has_limits {
                let declared = serde_json::json!({
                    "limits": p.stacking.limits,
                    "rule": p.stacking.rule,
                });
                Some(sha256_hex(&declared.to_string()))
            } else {
                compiled.as_ref().map(|r| r.rule_hash.clone())
            };
            validated.push(ValidatedProgram {
                program: p.clone(),
                percent,
                rule: compiled,
                combination_hash,
            });
        }
        if problems.is_empty() {
            Ok(ValidatedPrograms {
                programs: validated,
                engine,
            })
        } else {
            Err(problems)
        }
    }
}

impl FromStr for ProgramsFile {
    type Err = serde_json::Error;
    /// Parses a JSON programs file (no validation beyond the shape).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        serde_json::from_str(s)
    }
}
