//! Money as the operator wrote it: every `amount_minor` must be exactly the
//! integer that will be served.
//!
//! JSON Schema calls `299.00` and `2.99e4` integers (their value has no
//! fraction), so a schema-valid file could carry them; the money engine
//! then refuses to read them and a disclosure would say "an unknown
//! amount" where the operator wrote a price (DAP-CORE-018..020: money is an
//! integer count of minor units; docs/money.md section 8). serde_json
//! reads a literal with a decimal point or an exponent as a float and one
//! without as an integer, so the literal's form is known here without the
//! text: a float is refused, naming the integer it equals and, read as an
//! amount in its currency, the minor units it would be. Integers beyond the
//! range served exactly are refused too (docs/inventory-feeds.md and
//! docs/dealers-file.md "Money").

use pricing::{Currency, Money};
use serde_json::{Number, Value};

use super::{Problem, is_at_or_under};

/// The largest amount an inventory feed or the dealers file may carry, in
/// minor units of any currency: 2^53 − 1, the largest integer that every
/// JSON reader holds exactly (RFC 7493 I-JSON, section 2.2), so an agent
/// reading numbers as IEEE doubles is told the amount written. A price and
/// up to 1,023 charges within it also sum within `i64`, so the totals a
/// disclosure states never overflow. (A programs file is bounded by its
/// sum instead: `offers::import::MAX_PROGRAM_SUM_MINOR`.)
pub const MAX_SAFE_MINOR: i64 = 9_007_199_254_740_991;

/// Which integers a file's amounts may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    /// Any `i64` (the programs file, bounded by its sum elsewhere).
    I64,
    /// `-MAX_SAFE_MINOR..=MAX_SAFE_MINOR` (feeds and the dealers file).
    Safe,
}

/// What to check in every money object (`{amount_minor, currency}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checks {
    pub range: Range,
    /// Also refuse a well-formed currency code that is not an active ISO
    /// 4217 currency with a minor unit (where no other rule of the format
    /// ties the currency to a configured one).
    pub currencies: bool,
}

/// Every money problem of `doc`, pointers relative to `doc`: each object
/// holding `amount_minor` is a money object.
pub fn problems(doc: &Value, checks: Checks) -> Vec<Problem> {
    let mut out = Vec::new();
    walk(doc, &mut Vec::new(), checks, &mut out);
    out
}

/// One step of the path to a node, kept without allocating while walking
/// (feeds walk every record): the pointer is written only for a problem.
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

fn pointer(path: &[Step<'_>], last: &str) -> String {
    let mut out = String::new();
    for step in path {
        out.push('/');
        match step {
            Step::Key(key) => out.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Step::Index(i) => out.push_str(&i.to_string()),
        }
    }
    out.push('/');
    out.push_str(last);
    out
}

fn walk<'a>(value: &'a Value, path: &mut Vec<Step<'a>>, checks: Checks, out: &mut Vec<Problem>) {
    match value {
        Value::Object(map) => {
            if let Some(amount) = map.get("amount_minor") {
                let code = map.get("currency").and_then(Value::as_str);
                let currency = code.and_then(|c| Currency::from_code(c).ok());
                if let Some((rule, explanation)) = amount_problem(amount, currency, checks.range) {
                    out.push(Problem::new(
                        pointer(path, "amount_minor"),
                        rule,
                        explanation,
                    ));
                }
                if checks.currencies
                    && let Some(code) = code
                    && currency.is_none()
                    && is_code_shaped(code)
                {
                    out.push(Problem::new(
                        pointer(path, "currency"),
                        "iso_4217",
                        currency_words(code),
                    ));
                }
            }
            for (key, child) in map {
                if child.is_object() || child.is_array() {
                    path.push(Step::Key(key));
                    walk(child, path, checks, out);
                    path.pop();
                }
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                if child.is_object() || child.is_array() {
                    path.push(Step::Index(i));
                    walk(child, path, checks, out);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

/// Three upper-case letters: the form the schemas ask for (another form is
/// the schema's problem, reported there).
fn is_code_shaped(code: &str) -> bool {
    code.len() == 3 && code.bytes().all(|b| b.is_ascii_uppercase())
}

fn currency_words(code: &str) -> String {
    let active: Vec<&str> = Currency::all_active().map(Currency::code).collect();
    let hint = super::suggest::closest(code, &active)
        .map(|c| format!(" (did you mean '{c}'?)"))
        .unwrap_or_default();
    format!(
        "not an active ISO 4217 currency code with a minor unit{hint}; amounts are kept in \
         minor units of a currency the money engine knows (docs/money.md)"
    )
}

/// The rule and explanation of an `amount_minor` that is not exactly a
/// servable integer; `None` when it is (or is not a number at all: the
/// schema's `type` rule reports that).
fn amount_problem(
    amount: &Value,
    currency: Option<Currency>,
    range: Range,
) -> Option<(&'static str, String)> {
    let Value::Number(n) = amount else {
        return None;
    };
    if let Some(i) = n.as_i64() {
        return out_of_range(i, currency, range).map(|e| ("safe_range", e));
    }
    Some((
        "amount_minor",
        number_words(n, currency, range, "amount_minor"),
    ))
}

/// Why `n` (not an `i64`) cannot be an amount in minor units, in words:
/// the integer it equals or that it has a fraction, and what it would be
/// read as an amount in `currency`. `what` names the field or column.
pub fn number_words(n: &Number, currency: Option<Currency>, range: Range, what: &str) -> String {
    let text = plain(n);
    // A float as large as 2^63 in magnitude prints as a whole number that
    // `i64` cannot hold (or holds only as `i64::MIN`): beyond the range.
    let beyond =
        n.is_u64() || (!text.contains('.') && !text.parse::<i64>().is_ok_and(|i| i != i64::MIN));
    if beyond {
        return format!(
            "{what} must be a whole number of minor units within {}; this number is beyond it",
            range_words(range, currency)
        );
    }
    let form = format!(
        "{what} must be a whole number of minor units written without a decimal point or exponent"
    );
    let reading = currency
        .and_then(|c| Money::from_decimal_str(&text, c).ok())
        .filter(|m| out_of_range(m.amount_minor(), currency, range).is_none())
        .map(|m| {
            format!(
                "; {} {} would be {}",
                m.to_decimal_string(),
                m.currency().code(),
                m.amount_minor()
            )
        })
        .unwrap_or_default();
    if text.contains('.') {
        format!("{form}; the number written is not a whole number{reading}")
    } else {
        format!(
            "{form}; the number written equals {text} (write {text} if that counts minor units){reading}"
        )
    }
}

/// A number as plain decimal digits: an integer as written, a float by
/// Rust's `Display`, which never uses an exponent (2.99e4 prints 29900,
/// 299.00 prints 299); serde_json's own `Display` would print `29900.0`.
pub fn plain(n: &Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() => match format!("{f}") {
            // -0.0 prints as -0: it is zero.
            text if text == "-0" => "0".to_owned(),
            text => text,
        },
        _ => n.to_string(),
    }
}

/// Why `minor` is outside `range`, or `None`.
pub fn out_of_range(minor: i64, currency: Option<Currency>, range: Range) -> Option<String> {
    match range {
        Range::I64 => None,
        Range::Safe if minor.unsigned_abs() <= MAX_SAFE_MINOR.unsigned_abs() => None,
        Range::Safe => Some(format!(
            "the amount is beyond {}: larger amounts are not read exactly by every JSON reader \
             (2^53 - 1 is the largest integer an IEEE double holds exactly, RFC 7493 section 2.2)",
            range_words(range, currency)
        )),
    }
}

fn range_words(range: Range, currency: Option<Currency>) -> String {
    match range {
        Range::I64 => "the signed 64-bit range (at most 9223372036854775807)".to_owned(),
        Range::Safe => {
            let major = currency
                .map(|c| format!(", {}", Money::from_minor(MAX_SAFE_MINOR, c)))
                .unwrap_or_default();
            format!("the range served exactly, at most {MAX_SAFE_MINOR} minor units{major}")
        }
    }
}

/// Make `doc` readable by the money engine after [`problems`] were
/// reported, so that the format's other rules can still run and report
/// their problems in the same pass: an amount becomes the integer it
/// equals (else 0), a currency the one the file uses most (else USD).
/// Returns the money objects changed: a later problem inside one of them
/// is a consequence of the repair and must be dropped ([`is_repaired`]).
pub fn repair(doc: &mut Value, reported: &[Problem]) -> Vec<String> {
    let fallback = most_used_currency(doc);
    let mut repaired = Vec::new();
    for p in reported {
        let Some((object, key)) = p.pointer.rsplit_once('/') else {
            continue;
        };
        let Some(slot) = doc.pointer_mut(&p.pointer) else {
            continue;
        };
        match key {
            "amount_minor" => {
                let whole = slot
                    .as_f64()
                    .map(|f| f.to_string())
                    .and_then(|t| t.parse::<i64>().ok())
                    .unwrap_or(0);
                *slot = Value::from(whole);
            }
            "currency" => *slot = Value::from(fallback.code()),
            _ => continue,
        }
        repaired.push(object.to_owned());
    }
    repaired
}

/// Is `pointer` inside a money object that [`repair`] changed?
pub fn is_repaired(pointer: &str, repaired: &[String]) -> bool {
    repaired.iter().any(|r| is_at_or_under(pointer, r))
}

fn most_used_currency(doc: &Value) -> Currency {
    fn count(v: &Value, counts: &mut std::collections::BTreeMap<&'static str, usize>) {
        match v {
            Value::Object(map) => {
                if map.contains_key("amount_minor")
                    && let Some(c) = map
                        .get("currency")
                        .and_then(Value::as_str)
                        .and_then(|c| Currency::from_code(c).ok())
                {
                    *counts.entry(c.code()).or_default() += 1;
                }
                map.values().for_each(|v| count(v, counts));
            }
            Value::Array(items) => items.iter().for_each(|v| count(v, counts)),
            _ => {}
        }
    }
    let mut counts = std::collections::BTreeMap::new();
    count(doc, &mut counts);
    counts
        .into_iter()
        .max_by_key(|(code, n)| (*n, std::cmp::Reverse(*code)))
        .and_then(|(code, _)| Currency::from_code(code).ok())
        .unwrap_or(Currency::USD)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explain(json: &str, range: Range) -> Vec<(String, String, String)> {
        let doc: Value = serde_json::from_str(json).unwrap();
        problems(
            &doc,
            Checks {
                range,
                currencies: true,
            },
        )
        .into_iter()
        .map(|p| (p.pointer, p.rule, p.explanation))
        .collect()
    }

    #[test]
    fn a_decimal_point_or_exponent_is_refused_naming_the_minor_units() {
        let got = explain(
            r#"{"fees": [{"amount": {"amount_minor": 299.00, "currency": "USD"}}]}"#,
            Range::Safe,
        );
        assert_eq!(
            got,
            [(
                "/fees/0/amount/amount_minor".to_owned(),
                "amount_minor".to_owned(),
                "amount_minor must be a whole number of minor units written without a decimal point or exponent; the number written equals 299 (write 299 if that counts minor units); 299.00 USD would be 29900".to_owned()
            )]
        );
        let got = explain(r#"{"amount_minor": 2.99e4, "currency": "JPY"}"#, Range::I64);
        assert!(got[0].2.contains("equals 29900 (write 29900"), "{got:?}");
        assert!(got[0].2.ends_with("29900 JPY would be 29900"), "{got:?}");
        let got = explain(r#"{"amount_minor": 299.5, "currency": "USD"}"#, Range::I64);
        assert!(
            got[0]
                .2
                .ends_with("not a whole number; 299.50 USD would be 29950"),
            "{got:?}"
        );
        // Beyond i64, as a float or as an integer literal.
        for big in ["1e30", "9223372036854775808", "-9223372036854775809"] {
            let got = explain(
                &format!(r#"{{"amount_minor": {big}, "currency": "USD"}}"#),
                Range::I64,
            );
            assert!(got[0].2.contains("beyond it"), "{big}: {got:?}");
        }
        // Integers are fine within the range; the safe range is stated.
        assert!(explain(r#"{"amount_minor": 29900, "currency": "USD"}"#, Range::Safe).is_empty());
        let got = explain(
            r#"{"amount_minor": 9007199254740992, "currency": "USD"}"#,
            Range::Safe,
        );
        assert_eq!(got[0].1, "safe_range");
        assert!(
            got[0]
                .2
                .contains("at most 9007199254740991 minor units, 90,071,992,547,409.91 USD"),
            "{got:?}"
        );
        assert!(
            explain(
                r#"{"amount_minor": 9007199254740992, "currency": "USD"}"#,
                Range::I64
            )
            .is_empty()
        );
    }

    #[test]
    fn unknown_currencies_are_named_at_their_own_pointer_and_repaired() {
        let json = r#"{"a": [{"amount_minor": 1, "currency": "USX"}, {"amount_minor": 1.0, "currency": "CAD"}, {"amount_minor": 2, "currency": "CAD"}]}"#;
        let got = explain(json, Range::I64);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].0, "/a/0/currency");
        assert_eq!(got[0].1, "iso_4217");
        assert_eq!(got[1].0, "/a/1/amount_minor");
        let mut doc: Value = serde_json::from_str(json).unwrap();
        let reported = problems(
            &doc,
            Checks {
                range: Range::I64,
                currencies: true,
            },
        );
        let repaired = repair(&mut doc, &reported);
        assert_eq!(repaired, ["/a/0", "/a/1"]);
        assert_eq!(doc["a"][0]["currency"], "CAD");
        assert_eq!(doc["a"][1]["amount_minor"], Value::from(1));
        assert!(doc["a"][1]["amount_minor"].is_i64());
        assert!(is_repaired("/a/0/currency", &repaired));
        assert!(!is_repaired("/a/2/currency", &repaired));
    }
}
