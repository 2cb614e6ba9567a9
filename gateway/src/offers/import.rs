//! The programs file (`schemas/programs.schema.json`, docs/pricing.md):
//! parse (YAML, or JSON by extension), schema-check, validate with
//! [`pricing::ProgramSet`] (every problem at once; each rule compiled), and
//! turn into store records. Shared by `dealer-gateway import programs` and
//! the demo seed. Problems name the file, a JSON pointer and the rule,
//! never a value from the file.

use std::fmt;

use chrono::{DateTime, SubsecRound as _, Utc};
use pricing::{ProgramSet, ProgramsFile, ValidatedPrograms};
use serde_json::Value;

use crate::catalog::Catalog;
use crate::store::{ProgramRecord, SourceRecord};

/// The schema definition a programs file must match.
pub const PROGRAMS_FILE_SCHEMA: &str = "programs.schema.json#/$defs/programsFile";

/// One problem of a programs file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// JSON pointer into the file (`""` is the root).
    pub pointer: String,
    /// What is wrong (never the offending value).
    pub rule: String,
}

/// A programs file that cannot be imported: every problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramsFileError {
    pub file: String,
    pub problems: Vec<Problem>,
}

impl fmt::Display for ProgramsFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {} problem(s); nothing was imported",
            self.file,
            self.problems.len()
        )?;
        for p in &self.problems {
            let at = if p.pointer.is_empty() {
                "/"
            } else {
                &p.pointer
            };
            writeln!(f, "{}: {at}: {}", self.file, p.rule)?;
        }
        Ok(())
    }
}

impl std::error::Error for ProgramsFileError {}

/// A valid programs file.
pub struct ParsedPrograms {
    /// One per program, in file order.
    pub records: Vec<ProgramRecord>,
    /// The same programs, validated (rules compiled).
    pub validated: ValidatedPrograms,
}

/// Parse and validate a programs file named `name` (`.json` is JSON,
/// anything else YAML).
///
/// # Errors
/// Every problem found, with pointer and rule.
pub fn parse(
    catalog: &Catalog,
    name: &str,
    bytes: &[u8],
    source_name: &str,
    imported_at: DateTime<Utc>,
) -> Result<ParsedPrograms, ProgramsFileError> {
    let fail = |problems: Vec<Problem>| ProgramsFileError {
        file: name.to_owned(),
        problems,
    };
    let one = |rule: String| {
        fail(vec![Problem {
            pointer: String::new(),
            rule,
        }])
    };
    let doc: Value = if name.ends_with(".json") {
        serde_json::from_slice(bytes).map_err(|e| {
            one(format!(
                "not valid JSON (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?
    } else {
        let text = std::str::from_utf8(bytes).map_err(|_| one("not valid UTF-8 text".into()))?;
        yaml_serde::from_str(text).map_err(|e| {
            let at = e
                .location()
                .map(|l| format!(" (line {}, column {})", l.line(), l.column()))
                .unwrap_or_default();
            one(format!("not valid YAML{at}"))
        })?
    };

    let schema = crate::catalog::bundle_reference(&catalog.schema_documents, PROGRAMS_FILE_SCHEMA)
        .map_err(|e| one(format!("programs schema unavailable: {e}")))?;
    let validator = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .map_err(|e| one(format!("programs schema does not compile: {e}")))?;
    if !validator.is_valid(&doc) {
        let mut problems: Vec<Problem> = Vec::new();
        for error in validator.iter_errors(&doc) {
            let problem = Problem {
                pointer: error.instance_path().to_string(),
                rule: format!(
                    "{} (schema keyword '{}')",
                    explain(error.kind()),
                    error.kind().keyword()
                ),
            };
            if !problems.contains(&problem) {
                problems.push(problem);
            }
        }
        return Err(fail(problems));
    }

    let file: ProgramsFile = serde_json::from_value(doc.clone()).map_err(|e| {
        one(format!(
            "does not match the programs model: {}",
            e.to_string().split(" at line").next().unwrap_or_default()
        ))
    })?;
    let validated = ProgramSet::validate_file(file).map_err(|problems| {
        fail(
            problems
                .into_iter()
                .map(|p| Problem {
                    rule: match &p.program_id {
                        Some(id) => format!("program '{id}': {}", p.rule),
                        None => p.rule,
                    },
                    pointer: p.pointer,
                })
                .collect(),
        )
    })?;

    let overflow = amount_bound_problems(&validated);
    if !overflow.is_empty() {
        return Err(fail(overflow));
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
/// later (issue 12 item 6). An uncapped `percent_off` amount is bounded by
/// the price itself and is not counted.
pub const MAX_PROGRAM_SUM_MINOR: i64 = i64::MAX / 2;

/// Programs whose fixed amounts (a known amount, cut to its cap when the cap
/// is in the same currency; a `percent_off` program's cap) push the sum of
/// their currency past [`MAX_PROGRAM_SUM_MINOR`]: one problem per program
/// from the first that crosses the bound, naming the bound. Public so that
/// a whole-organization validation can apply the same bound to the union of
/// its files.
pub fn amount_bound_problems(validated: &ValidatedPrograms) -> Vec<Problem> {
    use pricing::incentives::ProgramAmount;
    let mut sums: std::collections::BTreeMap<String, i128> = std::collections::BTreeMap::new();
    let mut problems = Vec::new();
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
        let sum = sums.entry(m.currency().to_string()).or_insert(0);
        *sum += i128::from(m.amount_minor());
        if *sum > i128::from(MAX_PROGRAM_SUM_MINOR) {
            problems.push(Problem {
                pointer: format!("/programs/{index}{pointer}"),
                rule: format!(
                    "program '{}': the fixed amounts in {} of this file's programs, summed up to this one, exceed {MAX_PROGRAM_SUM_MINOR} minor units (i64::MAX / 2); larger amounts cannot be summed with a vehicle's price without overflow",
                    p.program_id,
                    m.currency()
                ),
            });
        }
    }
    problems
}

/// A value-free explanation of one failed keyword.
fn explain(kind: &jsonschema::error::ValidationErrorKind) -> String {
    use jsonschema::error::ValidationErrorKind as K;
    match kind {
        K::Required { property } => match property.as_str() {
            Some(name) => format!("Required property '{name}' is missing."),
            None => "A required property is missing.".to_owned(),
        },
        K::AdditionalProperties { .. } | K::UnevaluatedProperties { .. } => {
            "The object has a property that this schema does not allow.".to_owned()
        }
        other => format!("Value failed validation for keyword '{}'.", other.keyword()),
    }
}
