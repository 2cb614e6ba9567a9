//! Schema failures of an operator file, in words.
//!
//! Tool input is explained by `catalog::explain` in caller-input mode
//! (DAP-ERR-002: nothing the caller sent is repeated, not even an
//! unexpected member's name). An operator file is the operator's own: here
//! the rule is spelled out, a misspelt key is named with the keys allowed
//! there, and a misspelt key or enum value gets the closest allowed name
//! (docs/dealers-file.md "Error report"). Values are otherwise not
//! repeated: the pointer and the line find them. The words of a rule
//! (pattern meanings, formats, types, the did-you-mean) are shared with
//! tool input through `catalog::words`.

use std::collections::BTreeMap;

use jsonschema::error::{TypeKind, ValidationErrorKind as K};
use serde_json::Value;

use super::Problem;
use super::locate::Target;
use super::suggest;
// The schema vocabulary shared with tool-input errors; the operator's own
// wording (naming keys, YAML hints, the number written) stays here.
use crate::catalog::words::{
    WHOLE_LITERAL, WholeLiteral, article, format_meaning, mark_integers, plural, type_names,
};

/// At most this many schema problems are reported per document (each one
/// is located by re-reading the file).
pub const MAX_PROBLEMS: usize = 200;

/// One schema definition, bundled from the shipped schema files and
/// compiled once, kept with the bundled document (to look up the keys an
/// object allows and the forms a `not` forbids).
pub struct Schema {
    schema: Value,
    validator: jsonschema::Validator,
    /// The document that describes the format, named when a rule has no
    /// sentence of its own (e.g. `docs/dealers-file.md`).
    guide: &'static str,
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schema")
            .field("guide", &self.guide)
            .finish_non_exhaustive()
    }
}

/// One schema problem and what to locate for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub problem: Problem,
    pub target: Target,
}

impl Schema {
    /// Bundle `reference` (`FILE#/$defs/NAME`) from the schema files shipped
    /// in the binary, let `adjust` change the bundled document (e.g. relax
    /// a `required` list), and compile it with formats checked, as the
    /// catalog's validator does. `Err` only if the shipped schemas do not
    /// compile (a defect of this build, caught by tests).
    pub fn compile(
        reference: &str,
        guide: &'static str,
        adjust: impl FnOnce(&mut Value),
    ) -> Result<Self, String> {
        let mut documents = BTreeMap::new();
        for (name, text) in crate::catalog::SCHEMA_FILES {
            let doc: Value = serde_json::from_str(text).map_err(|e| format!("{name}: {e}"))?;
            documents.insert((*name).to_owned(), doc);
        }
        let mut schema = crate::catalog::bundle_reference(&documents, reference)
            .map_err(|e| format!("{reference}: {e}"))?;
        adjust(&mut schema);
        mark_integers(&mut schema);
        let validator = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .with_keyword(WHOLE_LITERAL, |_, _, _| Ok(Box::new(WholeLiteral)))
            .build(&schema)
            .map_err(|e| format!("{reference}: {e}"))?;
        Ok(Self {
            schema,
            validator,
            guide,
        })
    }

    /// Does `doc` satisfy the schema?
    pub fn is_valid(&self, doc: &Value) -> bool {
        self.validator.is_valid(doc)
    }

    /// Every schema problem of `doc`, in words (at most [`MAX_PROBLEMS`]).
    pub fn problems(&self, doc: &Value) -> Vec<Located> {
        self.problems_at_most(doc, MAX_PROBLEMS)
    }

    /// [`Schema::problems`], at most `max` of them.
    pub fn problems_at_most(&self, doc: &Value, max: usize) -> Vec<Located> {
        let mut out: Vec<Located> = Vec::new();
        if self.validator.is_valid(doc) {
            return out;
        }
        for error in self.validator.iter_errors(doc) {
            self.explain(&error, &mut out);
            if out.len() >= max {
                out.truncate(max);
                break;
            }
        }
        out
    }

    /// The schema problems of `doc` (at most `max`) and its money problems
    /// ([`super::money`]), apart: a money problem says more than the
    /// schema's at the same place, which is left out.
    pub fn problems_with_money(
        &self,
        doc: &Value,
        max: usize,
        checks: super::money::Checks,
    ) -> (Vec<Located>, Vec<Problem>) {
        let money = super::money::problems(doc, checks);
        let schema = self
            .problems_at_most(doc, max)
            .into_iter()
            .filter(|l| !money.iter().any(|m| m.pointer == l.problem.pointer))
            .collect();
        (schema, money)
    }

    fn explain(&self, error: &jsonschema::ValidationError<'_>, out: &mut Vec<Located>) {
        let at = error.instance_path().as_str().to_owned();
        let keyword = error.kind().keyword().to_owned();
        let instance = error.instance();
        let value = |text: String| (text, Target::Value);
        let (explanation, target) = match error.kind() {
            K::Required { property } => value(match property.as_str() {
                Some(name) => format!("missing required property '{name}'"),
                None => "a required property is missing".to_owned(),
            }),
            K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
                let allowed = self.allowed_keys(error);
                for key in unexpected {
                    let list = if allowed.is_empty() {
                        String::new()
                    } else {
                        format!("; allowed keys here: {}", allowed.join(", "))
                    };
                    push(
                        out,
                        child(&at, key),
                        &keyword,
                        format!(
                            "unexpected key '{key}'{}: this object does not allow it{list}",
                            suggest::hint(key, &allowed)
                        ),
                        Target::Key,
                    );
                }
                return;
            }
            K::FalseSchema => ("this key is not allowed here".to_owned(), Target::Key),
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
            K::Pattern { pattern } => value(pattern_words(pattern, instance)),
            K::Type { kind } => value(type_words(kind, instance)),
            K::Enum { options } => value(enum_words(options, instance)),
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
            K::MaxItems { limit } => {
                value(format!("must have at most {limit} item{}", plural(*limit)))
            }
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
            K::Format { format } => value(format!("must be {}", format_meaning(format))),
            K::OneOfNotValid { context } | K::AnyOf { context } => {
                self.one_of(&at, &keyword, context, out);
                return;
            }
            K::OneOfMultipleValid { .. } => value(
                "matches more than one of the allowed forms; make it match exactly one".into(),
            ),
            K::Not { schema } => value(self.not_words(error, schema, instance)),
            K::Custom { .. } if keyword == WHOLE_LITERAL => {
                push(out, at, WHOLE_RULE, whole_words(instance), Target::Value);
                return;
            }
            // Keywords the operator-file schemas do not use; worded generally.
            _ => value(format!(
                "does not satisfy the schema rule '{keyword}' (see {})",
                self.guide
            )),
        };
        push(out, at, &keyword, explanation, target);
    }

    /// A `oneOf`/`anyOf` with no matching branch. If some branch is
    /// selected by its constants (`type: http`, `status: known`), that
    /// branch's own problems are the useful ones; if every branch only
    /// misses a property (`anyOf: [{required: [rule]}, {required:
    /// [limits]}]`), say which; if every branch fails on a constant, say
    /// which constants are allowed.
    fn one_of(
        &self,
        at: &str,
        keyword: &str,
        context: &[Vec<jsonschema::ValidationError<'static>>],
        out: &mut Vec<Located>,
    ) {
        let required_only: Option<Vec<String>> = context
            .iter()
            .map(|branch| match branch.as_slice() {
                [e] => match e.kind() {
                    K::Required { property } => property.as_str().map(str::to_owned),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        if let Some(names) = required_only.filter(|n| !n.is_empty()) {
            let names: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
            push(
                out,
                at.to_owned(),
                keyword,
                format!("needs at least one of: {}", names.join(", ")),
                Target::Value,
            );
            return;
        }
        // Alternatives of type or value at this very place (`true`, `false`
        // or "unknown"): name every form allowed.
        let forms: Option<Vec<String>> = context
            .iter()
            .map(|branch| match branch.as_slice() {
                [e] if e.instance_path().as_str() == at => match e.kind() {
                    K::Type { kind } => Some(article(&type_names(kind))),
                    K::Enum { options } => Some(format!("one of: {}", names(options).join(", "))),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        if let Some(forms) = forms.filter(|f| f.len() > 1) {
            push(
                out,
                at.to_owned(),
                keyword,
                format!("must be {}", forms.join(", or ")),
                Target::Value,
            );
            return;
        }
        let is_const = |e: &jsonschema::ValidationError<'_>| matches!(e.kind(), K::Constant { .. });
        let selected = context
            .iter()
            .filter(|branch| !branch.iter().any(is_const))
            .min_by_key(|branch| branch.len());
        if let Some(branch) = selected {
            for e in branch {
                self.explain(e, out);
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
                keyword,
                format!("must be one of: {}", values.join(", ")),
                Target::Value,
            );
        } else {
            push(
                out,
                at.to_owned(),
                keyword,
                format!("matches none of the allowed forms (see {})", self.guide),
                Target::Value,
            );
        }
    }

    /// A `not`: the form it forbids, in words. The two of the programs
    /// file have a sentence of their own (docs/pricing.md "Declarative
    /// rules"); any other is described from the forbidden schema.
    fn not_words(
        &self,
        error: &jsonschema::ValidationError<'_>,
        forbidden: &Value,
        instance: &Value,
    ) -> String {
        let location = keyword_location(error);
        let present = |keys: &[&str]| -> Vec<String> {
            keys.iter()
                .filter(|k| instance.get(**k).is_some())
                .map(|k| (*k).to_owned())
                .collect()
        };
        if location.ends_with("/programStacking/else/not") {
            let mut given = present(&["rule", "limits"]);
            if instance.get("rule_monotone") == Some(&Value::Bool(true)) {
                given.push("rule_monotone: true".to_owned());
            }
            let combinability = instance
                .get("combinability")
                .and_then(Value::as_str)
                .unwrap_or("not rule_defined");
            return format!(
                "{} {} allowed only with combinability rule_defined, and this program's \
                 combinability is {combinability}: remove {}, or make the program rule_defined",
                given.join(" and "),
                if given.len() == 1 { "is" } else { "are" },
                if given.len() == 1 { "it" } else { "them" },
            );
        }
        if location.ends_with("/stackLimit/not") {
            return "a limit selects the members of one group or of one tag, not both: keep \
                    group or tag (with neither, the limit counts every member of the stack)"
                .to_owned();
        }
        match forbidden.get("required").and_then(Value::as_array) {
            Some(names) if forbidden.as_object().is_some_and(|o| o.len() == 1) => {
                let names: Vec<String> = names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|n| format!("'{n}'"))
                    .collect();
                format!("must not have {} together", names.join(" and "))
            }
            _ => format!(
                "has a form this place forbids (see {}; schema keyword 'not')",
                self.guide
            ),
        }
    }

    /// The keys the failing object's schema lists (`properties`), found
    /// from the error's keyword location in the bundled schema.
    fn allowed_keys(&self, error: &jsonschema::ValidationError<'_>) -> Vec<String> {
        let location = keyword_location(error);
        let Some(object_pointer) = location
            .strip_suffix("/additionalProperties")
            .or_else(|| location.strip_suffix("/unevaluatedProperties"))
        else {
            return Vec::new();
        };
        self.schema
            .pointer(object_pointer)
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }
}

/// The rule name of a [`WHOLE_LITERAL`] problem.
pub const WHOLE_RULE: &str = "whole_number";

fn whole_words(instance: &Value) -> String {
    let text = match instance {
        Value::Number(n) => super::money::plain(n),
        other => other.to_string(),
    };
    if text.parse::<i64>().is_ok_and(|i| i != i64::MIN) {
        format!(
            "must be written as a whole number, without a decimal point or exponent: the number \
             written equals {text} (write {text})"
        )
    } else {
        "must be a whole number within the signed 64-bit range, written without a decimal \
         point or exponent; this number is beyond it"
            .to_owned()
    }
}

/// Where in the bundled schema the failed keyword is (a JSON pointer).
fn keyword_location(error: &jsonschema::ValidationError<'_>) -> String {
    let from_fragment = error
        .absolute_keyword_location()
        .and_then(|uri| uri.fragment().map(|f| f.as_str().to_owned()));
    from_fragment
        .unwrap_or_else(|| error.schema_path().as_str().to_owned())
        .replace("%24", "$")
}

fn push(out: &mut Vec<Located>, pointer: String, rule: &str, explanation: String, target: Target) {
    let problem = Problem::new(pointer, rule, explanation);
    if !out.iter().any(|l| l.problem == problem) {
        out.push(Located { problem, target });
    }
}

fn child(parent: &str, name: &str) -> String {
    format!("{parent}/{}", name.replace('~', "~0").replace('/', "~1"))
}

/// The patterns of the operator-file schemas, in words (the pattern itself
/// follows, so nothing is hidden), with the spelling meant when the value
/// only has the wrong case (`usd` for `USD`).
fn pattern_words(pattern: &str, instance: &Value) -> String {
    // The table is shared with tool-input errors (catalog::words).
    let what = crate::catalog::words::pattern_meaning(pattern);
    let mut text = match what {
        Some(w) => format!("must be {w}, matching {pattern}"),
        None => format!("must match {pattern}"),
    };
    if let Some(written) = instance.as_str() {
        let candidates = [written.to_uppercase(), written.to_lowercase()];
        if let Some(meant) = candidates
            .iter()
            .find(|c| c.as_str() != written && matches_pattern(pattern, c))
        {
            let known = pattern != "^[A-Z]{3}$" || pricing::Currency::from_code(meant).is_ok();
            if known {
                text.push_str(&format!(" (did you mean '{meant}'?)"));
            }
        }
    }
    text
}

fn matches_pattern(pattern: &str, candidate: &str) -> bool {
    jsonschema::draft202012::options()
        .build(&serde_json::json!({"type": "string", "pattern": pattern}))
        .is_ok_and(|v| v.is_valid(&Value::String(candidate.to_owned())))
}

/// The values an `enum` allows, strings without quotes.
fn names(options: &Value) -> Vec<String> {
    options
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn enum_words(options: &Value, instance: &Value) -> String {
    let names = names(options);
    let hint = instance
        .as_str()
        .map(|written| suggest::hint(written, &names))
        .unwrap_or_default();
    format!("must be one of: {}{hint}", names.join(", "))
}

fn type_words(kind: &TypeKind, instance: &Value) -> String {
    let expected: Vec<String> = match kind {
        TypeKind::Single(t) => vec![t.to_string()],
        TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect(),
    };
    let found = match instance {
        Value::Null => "null (an empty value)",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number with a fraction",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    };
    let mut text = format!("must be {}, not {found}", article(&type_names(kind)));
    // The YAML 1.1 traps of docs/dealers-file.md: 09:00, 60614, ON, +1312...
    if expected.iter().any(|t| t == "string")
        && matches!(instance, Value::Number(_) | Value::Bool(_))
    {
        text.push_str("; quote it in YAML");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn programs() -> Schema {
        Schema::compile(
            "programs.schema.json#/$defs/programsFile",
            "docs/pricing.md",
            |_| {},
        )
        .unwrap()
    }

    fn explained(schema: &Schema, doc: Value) -> Vec<(String, String, String)> {
        schema
            .problems(&doc)
            .into_iter()
            .map(|l| (l.problem.pointer, l.problem.rule, l.problem.explanation))
            .collect()
    }

    fn program(extra: Value) -> Value {
        let mut p = serde_json::json!({
            "program_id": "p", "revision": 1, "name": "P", "kind": "cash",
            "direction": "discount",
            "amount": {"status": "known", "amount": {"amount_minor": 100, "currency": "USD"}},
            "stacking": {"group": "oem", "combinability": "stackable"}
        });
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        serde_json::json!({"programs": [p]})
    }

    #[test]
    fn the_programs_file_problems_are_in_words() {
        let schema = programs();
        // An unknown key is named with the allowed keys and the closest one.
        let got = explained(&schema, program(serde_json::json!({"nmae": "x"})));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "/programs/0/nmae");
        assert!(
            got[0].2.starts_with("unexpected key 'nmae' (did you mean 'name'?): this object does not allow it; allowed keys here: program_id, revision, name,"),
            "{got:?}"
        );
        // A currency in lower case: the rule in words and the code meant.
        let got = explained(
            &schema,
            program(
                serde_json::json!({"amount": {"status": "known", "amount": {"amount_minor": 1, "currency": "usd"}}}),
            ),
        );
        assert_eq!(
            got,
            [(
                "/programs/0/amount/amount/currency".to_owned(),
                "pattern".to_owned(),
                "must be an ISO 4217 code in capitals such as USD, matching ^[A-Z]{3}$ (did you mean 'USD'?)".to_owned()
            )]
        );
        // A misspelt enum value.
        let got = explained(&schema, program(serde_json::json!({"kind": "cahs"})));
        assert!(got[0].2.ends_with("(did you mean 'cash'?)"), "{got:?}");
    }

    #[test]
    fn whole_numbers_written_as_floats_are_refused_with_the_integer_they_equal() {
        let schema = programs();
        let got = explained(&schema, program(serde_json::json!({"revision": 2.0})));
        assert_eq!(
            got,
            [(
                "/programs/0/revision".to_owned(),
                WHOLE_RULE.to_owned(),
                "must be written as a whole number, without a decimal point or exponent: the number written equals 2 (write 2)".to_owned()
            )]
        );
        // A fraction is the type rule's, reported once.
        let got = explained(&schema, program(serde_json::json!({"revision": 2.5})));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].1, "type");
        assert_eq!(
            got[0].2,
            "must be a whole number, not a number with a fraction"
        );
    }

    #[test]
    fn the_two_not_rules_of_the_programs_file_have_sentences() {
        let schema = programs();
        let got = explained(
            &schema,
            program(
                serde_json::json!({"stacking": {"group": "oem", "combinability": "stackable", "rule": "true", "rule_monotone": true}}),
            ),
        );
        assert_eq!(
            got,
            [(
                "/programs/0/stacking".to_owned(),
                "not".to_owned(),
                "rule and rule_monotone: true are allowed only with combinability rule_defined, and this program's combinability is stackable: remove them, or make the program rule_defined".to_owned()
            )]
        );
        let got = explained(
            &schema,
            program(
                serde_json::json!({"stacking": {"group": "oem", "combinability": "rule_defined", "limits": [{"group": "oem", "tag": "t", "max_programs": 1}]}}),
            ),
        );
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "/programs/0/stacking/limits/0");
        assert!(
            got[0]
                .2
                .starts_with("a limit selects the members of one group or of one tag, not both"),
            "{got:?}"
        );
        // rule_defined with neither: the anyOf names both.
        let got = explained(
            &schema,
            program(
                serde_json::json!({"stacking": {"group": "oem", "combinability": "rule_defined"}}),
            ),
        );
        assert_eq!(
            got,
            [(
                "/programs/0/stacking".to_owned(),
                "anyOf".to_owned(),
                "needs at least one of: 'rule', 'limits'".to_owned()
            )]
        );
    }
}
