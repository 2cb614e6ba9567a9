//! Incentive programs (docs/pricing.md section 1): validation of a programs file
//! ([`ProgramSet::validate`]), which reports every problem at once and
//! compiles each `rule_defined` rule exactly once.
//!
//! The program model (the serde types and [`ValidatedProgram`]) is defined in
//! the crate's `program` module, below this one and `rules` alike, and is
//! re-exported here, so its public paths stay `pricing::incentives::*`. The
//! JSON Schema is `schemas/programs.schema.json`; the format is written up in
//! `docs/pricing.md`.

use std::collections::{BTreeMap, BTreeSet};

use rust_decimal::Decimal;
use serde::Serialize;
use sha2::{Digest, Sha256};

pub use crate::program::{
    AppliesTo, Combinability, CompiledRule, CriteriaMode, Criterion, Direction,
    EligibilityCriterion, EvidenceStatus, GROUP_REF_PREFIX, GroupResolution, Operator, PaymentMode,
    Program, ProgramAmount, ProgramKind, ProgramProvenance, ProgramStacking, ProgramsFile,
    StackLimit, TAG_REF_PREFIX, Timestamp, ValidatedProgram,
};
use crate::rules;

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
        // Rules proven at import (docs/pricing.md section 3): each compiled
        // rule must return a boolean within its operation budget on the
        // synthetic stacks of `rules::prove`, built from this set.
        for (i, vp) in validated.iter().enumerate() {
            if let Some(why) = rules::prove(&engine, &validated, i) {
                problems.push(ProgramProblem {
                    program_index: i,
                    program_id: Some(vp.program.program_id.clone()),
                    pointer: format!("/programs/{i}/stacking/rule"),
                    rule: why,
                });
            }
        }
        // In program order, as documented (the proof runs after the loop).
        problems.sort_by_key(|p| p.program_index);
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
