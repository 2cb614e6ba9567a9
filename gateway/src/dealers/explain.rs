//! Schema failures of a dealers file, in words.
//!
//! The catalog's validator serves tool input, where DAP-ERR-002 forbids
//! echoing anything the caller sent, so its explanations are generic
//! ("Value failed validation for keyword 'pattern'") and an unexpected
//! member is never named. The dealers file is the operator's own file:
//! here the rule is spelled out (docs/dealers-file.md "Error report") and a
//! misspelt key is named, with the closest allowed key as a hint. Values
//! are still never repeated: the pointer and the line find them.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use jsonschema::error::{TypeKind, ValidationErrorKind as K};
use serde_json::Value;

use super::Problem;
use super::locate::Target;

/// Definition the dealers file is validated against.
const DEALERS_FILE: &str = "dealers-file.schema.json#/$defs/dealersFile";

/// At most this many schema problems are reported (each one is located by
/// re-reading the file).
pub const MAX_PROBLEMS: usize = 200;

/// The dealers-file schema, bundled and compiled once, kept with the
/// bundled document (to look up the keys an object allows).
struct Compiled {
    schema: Value,
    validator: jsonschema::Validator,
}

static COMPILED: LazyLock<Result<Compiled, String>> = LazyLock::new(|| {
    let mut documents = BTreeMap::new();
    for (name, text) in crate::catalog::SCHEMA_FILES {
        let doc: Value = serde_json::from_str(text).map_err(|e| format!("{name}: {e}"))?;
        documents.insert((*name).to_owned(), doc);
    }
    let schema =
        crate::catalog::bundle_reference(&documents, DEALERS_FILE).map_err(|e| e.to_string())?;
    // Same options as the catalog's validator (formats checked).
    let validator = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .map_err(|e| e.to_string())?;
    Ok(Compiled { schema, validator })
});

/// One schema problem and what to locate for it.
pub struct Located {
    pub problem: Problem,
    pub target: Target,
}

/// Every schema problem of `doc`, in words. `Err` only if the shipped
/// schema does not compile (a defect of this build, caught by tests).
pub fn schema_problems(doc: &Value) -> Result<Vec<Located>, String> {
    let compiled = COMPILED.as_ref().map_err(Clone::clone)?;
    let mut out: Vec<Located> = Vec::new();
    for error in compiled.validator.iter_errors(doc) {
        explain(&compiled.schema, &error, &mut out);
        if out.len() >= MAX_PROBLEMS {
            break;
        }
    }
    out.dedup_by(|a, b| a.problem == b.problem);
    Ok(out)
}

fn push(out: &mut Vec<Located>, pointer: String, rule: &str, explanation: String, target: Target) {
    let problem = Problem {
        pointer,
        rule: rule.to_owned(),
        explanation,
        position: None,
    };
    if !out.iter().any(|l| l.problem == problem) {
        out.push(Located { problem, target });
    }
}

fn child(parent: &str, name: &str) -> String {
    format!("{parent}/{}", name.replace('~', "~0").replace('/', "~1"))
}

fn explain(schema: &Value, error: &jsonschema::ValidationError<'_>, out: &mut Vec<Located>) {
    let at = error.instance_path().as_str().to_owned();
    let keyword = error.kind().keyword().to_owned();
    let value = |text: String| (text, Target::Value);
    let (explanation, target) = match error.kind() {
        K::Required { property } => value(match property.as_str() {
            Some(name) => format!("missing required property '{name}'"),
            None => "a required property is missing".to_owned(),
        }),
        K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
            let allowed = allowed_keys(schema, error);
            for key in unexpected {
                let hint = closest(key, &allowed)
                    .map(|k| format!(" (did you mean '{k}'?)"))
                    .unwrap_or_default();
                let list = if allowed.is_empty() {
                    String::new()
                } else {
                    format!("; allowed keys here: {}", allowed.join(", "))
                };
                push(
                    out,
                    child(&at, key),
                    &keyword,
                    format!("unexpected key '{key}'{hint}: this object does not allow it{list}"),
                    Target::Key,
                );
            }
            return;
        }
        K::FalseSchema => value("this key is not allowed here".to_owned()),
        K::PropertyNames { error: inner } => {
            let key = inner.instance().as_str().unwrap_or_default().to_owned();
            let why = match inner.kind() {
                K::Pattern { pattern } => format!(
                    "extension key '{key}' is not a lower-case dotted name such as \
                     dealergateway.department-hours (must match {pattern})"
                ),
                _ => format!("key '{key}' is not an allowed name here"),
            };
            push(out, child(&at, &key), "propertyNames", why, Target::Key);
            return;
        }
        K::Pattern { pattern } => value(pattern_words(pattern)),
        K::Type { kind } => value(type_words(kind, error.instance())),
        K::Enum { options } => value(format!("must be one of: {}", list(options))),
        K::Constant { expected_value } => value(format!("must be {expected_value}")),
        K::MinLength { limit } => value(format!(
            "must be at least {limit} character{} long",
            plural(*limit)
        )),
        K::MaxLength { limit } => value(format!(
            "must be at most {limit} character{} long",
            plural(*limit)
        )),
        K::MinItems { limit } => {
            value(format!("must have at least {limit} item{}", plural(*limit)))
        }
        K::MaxItems { limit } => value(format!("must have at most {limit} item{}", plural(*limit))),
        K::UniqueItems => value("must not list the same item twice".to_owned()),
        K::Minimum { limit } => value(format!("must be at least {limit}")),
        K::Maximum { limit } => value(format!("must be at most {limit}")),
        K::ExclusiveMinimum { limit } => value(format!("must be greater than {limit}")),
        K::ExclusiveMaximum { limit } => value(format!("must be less than {limit}")),
        K::MinProperties { limit } => {
            value(format!("must have at least {limit} key{}", plural(*limit)))
        }
        K::MaxProperties { limit } => {
            value(format!("must have at most {limit} key{}", plural(*limit)))
        }
        K::Format { format } => value(match format.as_str() {
            "uri" => "must be an absolute URI such as https://dealer.example/".to_owned(),
            "date-time" => "must be an RFC 3339 date-time such as 2026-01-31T09:00:00Z".to_owned(),
            "date" => "must be a date such as 2026-01-31".to_owned(),
            other => format!("must be a valid {other}"),
        }),
        K::OneOfNotValid { context } | K::AnyOf { context } => {
            one_of(schema, &at, context, out);
            return;
        }
        K::OneOfMultipleValid { .. } => {
            value("matches more than one of the allowed forms; make it match exactly one".into())
        }
        // Keywords the dealers-file schema does not use; worded generally.
        _ => value(format!(
            "does not satisfy the schema rule '{keyword}' (see docs/dealers-file.md)"
        )),
    };
    push(out, at, &keyword, explanation, target);
}

/// A `oneOf`/`anyOf` with no matching branch (e.g. `availability_source`).
/// If some branch is selected by its constants (`type: http`), that
/// branch's own problems are the useful ones; if every branch fails on a
/// constant, say which constants are allowed.
fn one_of(
    schema: &Value,
    at: &str,
    context: &[Vec<jsonschema::ValidationError<'static>>],
    out: &mut Vec<Located>,
) {
    let is_const = |e: &jsonschema::ValidationError<'_>| matches!(e.kind(), K::Constant { .. });
    let selected = context
        .iter()
        .filter(|branch| !branch.iter().any(is_const))
        .min_by_key(|branch| branch.len());
    if let Some(branch) = selected {
        for e in branch {
            explain(schema, e, out);
        }
        return;
    }
    let mut constants: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in context.iter().flatten() {
        if let K::Constant { expected_value } = e.kind() {
            constants
                .entry(e.instance_path().as_str().to_owned())
                .or_default()
                .push(expected_value.to_string());
        }
    }
    if constants.len() == 1
        && let Some((pointer, values)) = constants.into_iter().next()
    {
        push(
            out,
            pointer,
            "oneOf",
            format!("must be one of: {}", values.join(", ")),
            Target::Value,
        );
    } else {
        push(
            out,
            at.to_owned(),
            "oneOf",
            "matches none of the allowed forms (see docs/dealers-file.md)".to_owned(),
            Target::Value,
        );
    }
}

/// The patterns of the dealers-file schema, in words (the pattern itself
/// follows, so nothing is hidden).
fn pattern_words(pattern: &str) -> String {
    let what = match pattern {
        "^[a-z0-9][a-z0-9._-]{0,127}$" => Some("must be lower case"),
        "^[A-Za-z0-9][A-Za-z0-9._:-]*$" => Some(
            "must be a DAP identifier: letters, digits and . _ : -, starting with a letter or digit",
        ),
        "^[A-Z]{3}$" => Some("must be an ISO 4217 code"),
        "^[A-Z]{2}$" => Some("must be an ISO 3166-1 alpha-2 country code"),
        "^([01][0-9]|2[0-3]):[0-5][0-9]$" => {
            Some("must be a local time HH:MM from 00:00 to 23:59, quoted in YAML")
        }
        "^[a-z]{2,3}(?:-[A-Z]{2})?$" => Some("must be a language tag such as en-US or fr-CA"),
        "^https?://" => Some("must be an http:// or https:// URL"),
        _ => None,
    };
    match what {
        Some(w) => format!("{w}, matching {pattern}"),
        None => format!("must match {pattern}"),
    }
}

fn type_words(kind: &TypeKind, instance: &Value) -> String {
    let expected: Vec<String> = match kind {
        TypeKind::Single(t) => vec![t.to_string()],
        TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect(),
    };
    let found = match instance {
        Value::Null => "null (an empty value)",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    };
    let mut text = format!("must be {}, not {found}", article(&expected.join(" or ")));
    // The YAML 1.1 traps of docs/dealers-file.md: 09:00, 60614, ON, +1312...
    if expected.iter().any(|t| t == "string")
        && matches!(instance, Value::Number(_) | Value::Bool(_))
    {
        text.push_str("; quote it in YAML");
    }
    text
}

fn article(noun: &str) -> String {
    match noun.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u') => format!("an {noun}"),
        _ => format!("a {noun}"),
    }
}

fn list(options: &Value) -> String {
    match options.as_array() {
        Some(items) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(", "),
        None => options.to_string(),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The keys the failing object's schema lists (`properties`), found from
/// the error's keyword location in the bundled schema.
fn allowed_keys(schema: &Value, error: &jsonschema::ValidationError<'_>) -> Vec<String> {
    let from_fragment = error
        .absolute_keyword_location()
        .and_then(|uri| uri.fragment().map(|f| f.as_str().to_owned()));
    let keyword_pointer = from_fragment.unwrap_or_else(|| error.schema_path().as_str().to_owned());
    let Some(object_pointer) = keyword_pointer.strip_suffix("/additionalProperties") else {
        return Vec::new();
    };
    let decoded = object_pointer.replace("%24", "$");
    schema
        .pointer(&decoded)
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The allowed key closest to a misspelt one: at most 2 edits (3 for long
/// keys), and unambiguous.
fn closest<'a>(key: &str, allowed: &'a [String]) -> Option<&'a str> {
    let limit = if key.chars().count() >= 12 { 3 } else { 2 };
    let mut best: Option<(usize, &str)> = None;
    let mut tie = false;
    for candidate in allowed {
        let d = edit_distance(&key.to_lowercase(), candidate);
        match best {
            Some((b, _)) if d > b => {}
            Some((b, _)) if d == b => tie = true,
            _ => {
                best = Some((d, candidate));
                tie = false;
            }
        }
    }
    match best {
        Some((d, k)) if d <= limit && !tie => Some(k),
        _ => None,
    }
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_key_is_suggested_only_when_unambiguous() {
        let allowed: Vec<String> = ["publication", "currency", "odometer_unit"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(closest("publicaton", &allowed), Some("publication"));
        assert_eq!(closest("odometer-unit", &allowed), Some("odometer_unit"));
        assert_eq!(closest("colour", &allowed), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn the_schema_compiles() {
        assert!(COMPILED.is_ok(), "{:?}", COMPILED.as_ref().err());
    }
}
