//! The programs file (`schemas/programs.schema.json`, docs/pricing.md):
//! parse (YAML, or JSON by extension), schema-check, check its money,
//! validate with [`pricing::ProgramSet`] (every problem at once; each rule
//! compiled), bound the sum of its amounts, and turn into store records.
//! Shared by `dealer-gateway import programs` and the demo seed.
//!
//! Problems are reported like the dealers file's (docs/pricing.md
//! "Validation"): file, line and column, JSON pointer, the rule and what
//! was expected in words, an unexpected key named with the allowed keys and
//! a did-you-mean. The schema is checked first (the engine needs a
//! well-formed file); money problems (an `amount_minor` written `299.00`,
//! an unknown currency) are reported at their own pointer with the schema's
//! or with every problem of the engine's validation, never alone.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use chrono::{DateTime, SubsecRound as _, Utc};
use pricing::{ProgramSet, ProgramsFile, ValidatedPrograms};

use crate::catalog::Catalog;
use crate::report::explain::{MAX_PROBLEMS, Schema};
use crate::report::{self, FileReport, Syntax, Target, money};
use crate::store::{ProgramRecord, SourceRecord};

pub use crate::report::Problem;

/// The schema definition a programs file must match.
pub const PROGRAMS_FILE_SCHEMA: &str = "programs.schema.json#/$defs/programsFile";

/// A programs file that cannot be imported: every problem found, in file
/// order.
pub type ProgramsFileError = FileReport;

/// What a refused programs file did not do.
const NOT_IMPORTED: &str = "nothing was imported";

/// The rule name of a problem found by the pricing engine's validation
/// ([`pricing::ProgramProblem`]: its pointer and words carried unchanged).
pub const PROGRAM_RULE: &str = "program";

/// The rule name of the amount bound ([`amount_bound_problems`]).
pub const AMOUNT_BOUND_RULE: &str = "amount_bound";

/// The programs-file schema, compiled once, for the words of its problems.
static SCHEMA: LazyLock<Result<Schema, String>> =
    LazyLock::new(|| Schema::compile(PROGRAMS_FILE_SCHEMA, "docs/pricing.md", |_| {}));

/// Money in a programs file: any `i64` (their sum is bounded by
/// [`MAX_PROGRAM_SUM_MINOR`]); a currency must be one the engine knows,
/// since no other rule ties it to a configured one.
const MONEY: money::Checks = money::Checks {
    range: money::Range::I64,
    currencies: true,
};

/// A valid programs file.
pub struct ParsedPrograms {
    /// One per program, in file order.
    pub records: Vec<ProgramRecord>,
    /// The same programs, validated (rules compiled).
    pub validated: ValidatedPrograms,
}

/// Parse and validate a programs file named `name` (`.json` is JSON,
/// anything else YAML). The schema is the one shipped in the binary, which
/// the catalog loads too.
///
/// # Errors
/// Every problem found, with position, pointer, rule and explanation.
pub fn parse(
    _catalog: &Catalog,
    name: &str,
    bytes: &[u8],
    source_name: &str,
    imported_at: DateTime<Utc>,
) -> Result<ParsedPrograms, ProgramsFileError> {
    let refused = |problems: Vec<Problem>| FileReport::new(name, problems, NOT_IMPORTED);
    let syntax = Syntax::of(name);
    let (text, doc) = report::parse_document(bytes, syntax).map_err(|p| refused(vec![p]))?;
    let located = |mut problems: Vec<Problem>, targets: &[Target]| {
        report::locate_all(text, syntax, &mut problems, targets);
        refused(problems)
    };
    let schema = SCHEMA.as_ref().map_err(|e| {
        refused(vec![Problem::new(
            "",
            "schema",
            format!("programs schema defect: {e}"),
        )])
    })?;

    // A money problem is reported with the schema's, in its place.
    let (located_problems, money_problems) = schema.problems_with_money(&doc, MAX_PROBLEMS, MONEY);
    let (targets, mut schema_problems): (Vec<Target>, Vec<Problem>) = located_problems
        .into_iter()
        .map(|l| (l.target, l.problem))
        .unzip();
    if !schema_problems.is_empty() {
        schema_problems.extend(money_problems);
        return Err(located(schema_problems, &targets));
    }

    // The engine reads money strictly; repair what was reported so that
    // every other problem of the file is found in the same pass.
    let mut readable = doc.clone();
    let repaired = money::repair(&mut readable, &money_problems);
    let mut problems = money_problems;
    let file: ProgramsFile = match serde_json::from_value(readable) {
        Ok(file) => file,
        Err(e) => {
            problems.push(Problem::new(
                "",
                "model",
                format!(
                    "does not match the programs model: {}",
                    e.to_string().split(" at line").next().unwrap_or_default()
                ),
            ));
            return Err(located(problems, &[]));
        }
    };
    let validated = match ProgramSet::validate_file(file) {
        Ok(validated) => Some(validated),
        Err(engine) => {
            problems.extend(
                engine
                    .into_iter()
                    .filter(|p| !money::is_repaired(&p.pointer, &repaired))
                    .map(|p| {
                        let words = match &p.program_id {
                            Some(id) => format!("program '{id}': {}", p.rule),
                            None => p.rule,
                        };
                        Problem::new(p.pointer, PROGRAM_RULE, words)
                    }),
            );
            None
        }
    };
    let validated = match validated {
        Some(v) if problems.is_empty() => v,
        _ => return Err(located(problems, &[])),
    };
    let overflow = amount_bound_problems(&validated);
    if !overflow.is_empty() {
        return Err(located(overflow, &[]));
    }

    let source = SourceRecord {
        source_name: source_name.to_owned(),
        authority: "dealer_asserted".to_owned(),
        content_digest: crate::dealers::digest(bytes),
        observed_at: imported_at.trunc_subsecs(6),
    };
    let docs = doc["programs"].as_array().cloned().unwrap_or_default();
    let records = validated
        .programs()
        .iter()
        .zip(docs)
        .map(|(v, doc)| ProgramRecord {
            program_id: v.program.program_id.clone(),
            revision: v.program.revision,
            doc,
            rule_hash: v.rule.as_ref().map(|r| r.rule_hash.clone()),
            imported_at: imported_at.trunc_subsecs(6),
            source: source.clone(),
        })
        .collect();
    Ok(ParsedPrograms { records, validated })
}

/// The most the fixed amounts of one currency may add up to, over every
/// program of a file, in minor units: `i64::MAX / 2`. A vehicle priced
/// anywhere in `0..=MAX_PROGRAM_SUM_MINOR` can then be evaluated with any
/// stack of those programs without overflow (price plus every surcharge,
/// price minus every discount, both stay within `i64`), so such amounts are
/// refused here as an input error instead of failing every evaluation
/// later (docs/pricing.md "Amounts"). An uncapped `percent_off` amount is
/// bounded by the price itself and is not counted.
pub const MAX_PROGRAM_SUM_MINOR: i64 = i64::MAX / 2;

/// At most this many contributing programs are named in one amount-bound
/// problem (the count of the others follows).
const MAX_NAMED: usize = 20;

/// One program's fixed amount as the bound counts it.
struct Contribution {
    index: usize,
    program_id: String,
    minor: i64,
    pointer: &'static str,
}

/// Programs whose fixed amounts (a known amount, cut to its cap when the cap
/// is in the same currency; a `percent_off` program's cap) push the sum of
/// their currency past [`MAX_PROGRAM_SUM_MINOR`]: one problem per program
/// from the first that crosses the bound, each naming the currency's sum
/// and every program contributing to it. Public so that a
/// whole-organization validation can apply the same bound to the union of
/// its files.
pub fn amount_bound_problems(validated: &ValidatedPrograms) -> Vec<Problem> {
    use pricing::incentives::ProgramAmount;
    let mut by_currency: BTreeMap<String, Vec<Contribution>> = BTreeMap::new();
    for (index, vp) in validated.programs().iter().enumerate() {
        let p = &vp.program;
        let (largest, pointer) = match &p.amount {
            ProgramAmount::Known { amount } => {
                let capped = match p.cap {
                    Some(c)
                        if c.currency() == amount.currency()
                            && c.amount_minor() < amount.amount_minor() =>
                    {
                        c
                    }
                    _ => *amount,
                };
                (Some(capped), "/amount/amount/amount_minor")
            }
            ProgramAmount::PercentOff { .. } => (p.cap, "/cap/amount_minor"),
            ProgramAmount::Unknown { .. } => (None, ""),
        };
        let Some(m) = largest else { continue };
        by_currency
            .entry(m.currency().to_string())
            .or_default()
            .push(Contribution {
                index,
                program_id: p.program_id.clone(),
                minor: m.amount_minor(),
                pointer,
            });
    }
    let mut problems = Vec::new();
    for (currency, contributions) in by_currency {
        let total: i128 = contributions.iter().map(|c| i128::from(c.minor)).sum();
        if total <= i128::from(MAX_PROGRAM_SUM_MINOR) {
            continue;
        }
        let mut named: Vec<String> = contributions
            .iter()
            .take(MAX_NAMED)
            .map(|c| format!("'{}' {}", c.program_id, c.minor))
            .collect();
        if contributions.len() > MAX_NAMED {
            named.push(format!("and {} more", contributions.len() - MAX_NAMED));
        }
        let explanation = |id: &str| {
            format!(
                "program '{id}': the fixed amounts in {currency} of the programs evaluated \
                 together sum to {total} minor units, beyond {MAX_PROGRAM_SUM_MINOR} (i64::MAX / \
                 2), the most that can be summed with a vehicle's price without overflow; \
                 contributing: {}",
                named.join(", ")
            )
        };
        let mut running: i128 = 0;
        for c in &contributions {
            running += i128::from(c.minor);
            if running > i128::from(MAX_PROGRAM_SUM_MINOR) {
                problems.push(Problem::new(
                    format!("/programs/{}{}", c.index, c.pointer),
                    AMOUNT_BOUND_RULE,
                    explanation(&c.program_id),
                ));
            }
        }
    }
    problems
}
