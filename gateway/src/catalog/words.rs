//! The schema rules in words, shared by the two explainers of this
//! gateway: tool input on the MCP surface ([`super::explain`], caller
//! input, which is never repeated: DAP-ERR-002) and operator files
//! (`report::explain`, the operator's own). Both say what a place accepts
//! with the same sentences, so a rule reads the same in a tool error and in
//! an import report.
//!
//! Everything here is worded from the schema (a pattern, a format, a type,
//! an allowed name); nothing takes text from the value being checked.

use jsonschema::error::TypeKind;
use serde_json::Value;

/// What a `pattern` of the shipped schemas means, as the complement of
/// "must be" (`an ISO 4217 code in capitals such as USD`); `None` for a
/// pattern without words. Every pattern of a tool's input schema has words
/// (a test of [`super::explain`] checks it), so a caller is never left with
/// a bare regular expression.
pub fn pattern_meaning(pattern: &str) -> Option<&'static str> {
    Some(match pattern {
        "^[a-z0-9][a-z0-9._-]{0,127}$" => "lower case",
        "^[A-Za-z0-9][A-Za-z0-9._:-]*$" => {
            "a DAP identifier: letters, digits and . _ : -, starting with a letter or digit"
        }
        "^[A-Z]{3}$" => "an ISO 4217 code in capitals such as USD",
        "^[A-Z]{2}$" => "an ISO 3166-1 alpha-2 country code in capitals such as US",
        "^[A-Z]{2}(-[A-Z0-9]{1,3})?$" | "^[A-Z]{2}(?:-[A-Z0-9]{1,3})?$" => {
            "an ISO 3166-1 country code or ISO 3166-2 subdivision code in capitals such as US or \
             US-IL"
        }
        "^[A-Z]{2}-[A-Z0-9]{1,3}$" => "an ISO 3166-2 subdivision code in capitals such as US-IL",
        "^[A-HJ-NPR-Z0-9]{17}$" => {
            "a VIN: 17 characters, digits and upper-case letters except I, O and Q"
        }
        "^([01][0-9]|2[0-3]):[0-5][0-9]$" => {
            "a local time HH:MM from 00:00 to 23:59, quoted in YAML"
        }
        "^[a-z]{2,3}(?:-[A-Z]{2})?$" => "a language tag such as en-US or fr-CA",
        "^https?://" => "an http:// or https:// URL",
        "^https://" => "an https:// URL",
        "^[0-9]+(\\.[0-9]+)?$" => {
            "a plain decimal number such as 2.5: digits, an optional point, no sign"
        }
        "^[A-Za-z0-9]{1,5}(?:[ -]?[A-Za-z0-9]{1,4})?$" => {
            "a postal or ZIP code, or its prefix, such as 60614, 60614-1234 or M5V 2T6: letters \
             and digits with at most one space or hyphen"
        }
        "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})$" => {
            "an RFC 3339 date-time with an explicit offset such as 2026-01-31T09:00:00Z or \
             2026-01-31T09:00:00-05:00"
        }
        _ => return None,
    })
}

/// What a `format` means, as the complement of "must be".
pub fn format_meaning(format: &str) -> String {
    match format {
        "uri" => "an absolute URI such as https://dealer.example/".to_owned(),
        "date-time" => "an RFC 3339 date-time such as 2026-01-31T09:00:00Z".to_owned(),
        "date" => "a date such as 2026-01-31".to_owned(),
        other => format!("a valid {other}"),
    }
}

/// The JSON types a `type` allows, in words (`whole number or string`).
pub fn type_names(kind: &TypeKind) -> String {
    let expected: Vec<String> = match kind {
        TypeKind::Single(t) => vec![t.to_string()],
        TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect(),
    };
    expected
        .iter()
        .map(|t| type_noun(t))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// One JSON Schema type name in words.
pub fn type_noun(name: &str) -> &str {
    match name {
        "integer" => "whole number",
        "array" => "list",
        other => other,
    }
}

/// `noun` with its indefinite article.
pub fn article(noun: &str) -> String {
    match noun.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u') => format!("an {noun}"),
        _ => format!("a {noun}"),
    }
}

/// The plural ending of a count.
pub fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

// ---------------------------------------------------------------------------
// Did-you-mean
// ---------------------------------------------------------------------------

/// The allowed name closest to `written`: at most 2 edits (3 for names of
/// 12 characters or more), compared case-insensitively, and unambiguous
/// (two candidates at the same distance suggest nothing). A name that is
/// already allowed suggests nothing. What is suggested is always one of
/// `allowed`, never `written` (docs/security.md "What a tool error says").
pub fn closest<'a, S: AsRef<str>>(written: &str, allowed: &'a [S]) -> Option<&'a str> {
    let limit = if written.chars().count() >= 12 { 3 } else { 2 };
    let written_lower = written.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    let mut tie = false;
    for candidate in allowed {
        let candidate = candidate.as_ref();
        if candidate == written {
            return None;
        }
        let d = edit_distance(&written_lower, &candidate.to_lowercase());
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
        Some((d, name)) if d <= limit && !tie => Some(name),
        _ => None,
    }
}

/// ` (did you mean 'name'?)`, or nothing.
pub fn hint<S: AsRef<str>>(written: &str, allowed: &[S]) -> String {
    closest(written, allowed)
        .map(|name| format!(" (did you mean '{name}'?)"))
        .unwrap_or_default()
}

/// Levenshtein distance over characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
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

// ---------------------------------------------------------------------------
// Whole numbers written as integers
// ---------------------------------------------------------------------------

/// The keyword added beside every `type: integer` of a schema this gateway
/// reads into integers (operator files and tool input): JSON Schema calls
/// `2024.0` and `2.024e3` integers (their value has no fraction), but
/// serde_json reads them as floats, and a reader asking for an integer then
/// finds none, so the record, the amount or the setting would silently go
/// missing (or a tool would fail). The literal must be written as an
/// integer.
pub const WHOLE_LITERAL: &str = "x-dealergateway-whole-literal";

/// Add [`WHOLE_LITERAL`] beside every `type: integer` of `schema`.
pub fn mark_integers(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let integer = match map.get("type") {
                Some(Value::String(t)) => t == "integer",
                Some(Value::Array(types)) => types.iter().any(|t| t == "integer"),
                _ => false,
            };
            if integer {
                map.insert(WHOLE_LITERAL.to_owned(), Value::Bool(true));
            }
            map.values_mut().for_each(mark_integers);
        }
        Value::Array(items) => items.iter_mut().for_each(mark_integers),
        _ => {}
    }
}

/// Is `value` a number written with a decimal point or an exponent whose
/// value has no fraction (one `type: integer` accepts)? serde_json reads
/// exactly those literals as floats, and a float's `Display` never uses an
/// exponent, so a whole one prints without a point.
pub fn is_whole_float(value: &Value) -> bool {
    matches!(value, Value::Number(n) if n.is_f64()
        && n.as_f64().is_some_and(|f| !format!("{f}").contains('.')))
}

/// The [`WHOLE_LITERAL`] keyword, for `jsonschema`'s `with_keyword`.
pub struct WholeLiteral;

impl<'i> jsonschema::Keyword<'i> for WholeLiteral {
    fn validate(&self, instance: &'i Value) -> Result<(), jsonschema::ValidationError<'i>> {
        if self.is_valid(instance) {
            Ok(())
        } else {
            Err(jsonschema::ValidationError::custom(
                "a whole number written with a decimal point or an exponent",
            ))
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        !is_whole_float(instance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_floats_are_told_from_integers_and_fractions() {
        assert!(is_whole_float(&serde_json::json!(2024.0)));
        assert!(is_whole_float(&serde_json::json!(-0.0)));
        assert!(is_whole_float(&serde_json::json!(1e300)));
        assert!(!is_whole_float(&serde_json::json!(2024)));
        assert!(!is_whole_float(&serde_json::json!(2.5)));
        assert!(!is_whole_float(&serde_json::json!("2024.0")));
    }
}
