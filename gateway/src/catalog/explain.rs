//! Tool-input validation failures in words: what would be accepted, taken
//! from the schema and never from the input (docs/security.md "What a tool
//! error says").
//!
//! Tool arguments are caller input, and DAP-ERR-002 forbids echoing any of
//! it: neither a value nor the name of an unexpected member (a name can
//! carry a secret as well as a value can). So every explanation here is
//! built from the failing place's schema alone: the allowed values of an
//! `enum`, the bound that was crossed with the whole accepted range, a
//! pattern's meaning ([`super::words::pattern_meaning`]), the members an
//! object allows, "give exactly one of …" for alternatives, the accepted
//! type described in full. The one thing the input decides is which
//! allowed name is suggested ("did you mean 'query'?"): the suggestion is
//! always a name of the schema, made only when the written name or value is
//! within a small edit distance of exactly one allowed name
//! ([`super::words::closest`]), so it reveals nothing of the input beyond
//! that closeness.
//!
//! The place is named by its path in the arguments (`page.limit`,
//! `rooftop_ids[2]`): the published input schemas close every object
//! (`additionalProperties: false`, checked by a test below), so every
//! member name on a failing path is a schema name; an unexpected member is
//! reported at the object that holds it.

use jsonschema::error::ValidationErrorKind as K;
use serde_json::{Map, Value};

use super::words::{self, article, plural};
use super::{FieldError, child_pointer};

/// At most this many field errors per call (error.schema.json
/// `errorDetails.field_errors`: `maxItems` 100).
pub(super) const MAX_FIELD_ERRORS: usize = 100;

/// error.schema.json `fieldError.explanation`: at most 500 characters.
const MAX_EXPLANATION: usize = 500;

/// Every failure of `instance` against `validator`, compiled from `schema`
/// (the document the failing places are looked up in), in words.
pub(super) fn collect_errors(
    validator: &jsonschema::Validator,
    schema: &Value,
    instance: &Value,
) -> Result<(), Vec<FieldError>> {
    if validator.is_valid(instance) {
        return Ok(());
    }
    let mut out: Vec<FieldError> = Vec::new();
    for error in validator.iter_errors(instance) {
        explain(schema, &error, &mut out);
        if out.len() >= MAX_FIELD_ERRORS {
            out.truncate(MAX_FIELD_ERRORS);
            break;
        }
    }
    if out.is_empty() {
        out.push(FieldError::new(
            "",
            "schema",
            "The arguments do not satisfy the tool's input schema.",
        ));
    }
    Err(out)
}

/// Where a failure points (DAP 0.1 errors.md section 3: a JSON Pointer per
/// violation). `at` is the validator's location, `""` for the root.
///
/// - `required`: the missing member itself (`/organization_id`). Its name
///   comes from the schema, not from the caller.
/// - `additionalProperties` / `unevaluatedProperties` / `propertyNames` / a
///   `false` schema: the object holding the unexpected member, never the
///   member. Its name is caller input (DAP-ERR-002).
/// - Anything else: the failing value's location.
fn locate(kind: &K, at: &str) -> String {
    match kind {
        K::Required { property } => match property.as_str() {
            Some(name) => child_pointer(at, name),
            None => at.to_owned(),
        },
        K::FalseSchema => at
            .rsplit_once('/')
            .map_or_else(String::new, |(parent, _)| parent.to_owned()),
        _ => at.to_owned(),
    }
}

/// The place a pointer names, as a model reads it: `page.limit`,
/// `rooftop_ids[2]`, `profile.jurisdiction.country`; `None` for the root.
pub(super) fn place(pointer: &str) -> Option<String> {
    let mut out = String::new();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{segment}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&segment);
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The subject of a sentence about `pointer`.
fn subject(pointer: &str) -> String {
    place(pointer).unwrap_or_else(|| "The arguments object".to_owned())
}

fn explain(schema: &Value, error: &jsonschema::ValidationError<'_>, out: &mut Vec<FieldError>) {
    let at = error.instance_path().as_str().to_owned();
    let kind = error.kind();
    let keyword_path = error.schema_path().as_str().replace("%24", "$");
    // The schema object that holds the failed keyword.
    let holder = keyword_path
        .rsplit_once('/')
        .and_then(|(parent, _)| node_at(schema, parent))
        .map(|n| flatten(schema, n));
    let it = subject(&at);
    let accepted = || {
        holder
            .as_ref()
            .map(|h| describe(schema, h))
            .unwrap_or_default()
    };
    let within = || {
        let a = accepted();
        if a.is_empty() {
            String::new()
        } else {
            format!(" (accepted: {a})")
        }
    };
    let mut keyword = kind.keyword().to_owned();
    let explanation = match kind {
        K::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            let what = holder
                .as_ref()
                .and_then(|h| h.get("properties"))
                .and_then(|p| p.get(name))
                .map(|p| describe(schema, &flatten(schema, p)))
                .filter(|d| !d.is_empty())
                .map(|d| format!("; it must be {d}"))
                .unwrap_or_default();
            let missing = subject(&child_pointer(&at, name));
            format!("Required property '{missing}' is missing{what}.")
        }
        K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
            let allowed = member_names(holder.as_ref());
            let mut text = format!(
                "{it} has an unexpected member (its name is not repeated); {}.",
                allowed_members(&allowed)
            );
            text.push_str(&did_you_mean(
                unexpected.iter().map(String::as_str),
                &allowed,
            ));
            text
        }
        K::FalseSchema => {
            let parent = locate(kind, &at);
            format!(
                "{} has a member that is not allowed here (its name is not repeated).",
                subject(&parent)
            )
        }
        K::PropertyNames { .. } => {
            format!("{it} has a member whose name is not allowed here (its name is not repeated).")
        }
        K::Enum { options } => {
            let names = value_names(options);
            let mut text = format!("{it} must be one of: {}.", names.join(", "));
            if let Some(written) = error.instance().as_str() {
                text.push_str(&did_you_mean(std::iter::once(written), &names));
            }
            text
        }
        K::Constant { expected_value } => {
            format!("{it} must be exactly {}.", literal(expected_value))
        }
        K::Pattern { pattern } => match words::pattern_meaning(pattern) {
            Some(meaning) => format!("{it} must be {meaning} (pattern {pattern})."),
            None => format!("{it} must match the pattern {pattern}."),
        },
        K::Format { format } => format!("{it} must be {}.", words::format_meaning(format)),
        K::Type { kind: types } => {
            let single = holder
                .as_ref()
                .is_some_and(|h| h.get("type").is_some_and(Value::is_string));
            if single {
                format!("{it} must be {}.", accepted())
            } else {
                format!("{it} must be {}.", article(&words::type_names(types)))
            }
        }
        K::MinLength { limit } => format!(
            "{it} must be at least {limit} character{} long.",
            plural(*limit)
        ),
        K::MaxLength { limit } => format!(
            "{it} must be at most {limit} character{} long.",
            plural(*limit)
        ),
        K::Minimum { limit } => format!("{it} must be at least {limit}{}.", within()),
        K::Maximum { limit } => format!("{it} must be at most {limit}{}.", within()),
        K::ExclusiveMinimum { limit } => format!("{it} must be greater than {limit}{}.", within()),
        K::ExclusiveMaximum { limit } => format!("{it} must be less than {limit}{}.", within()),
        K::MultipleOf { multiple_of } => format!("{it} must be a multiple of {multiple_of}."),
        K::MinItems { limit } => {
            format!("{it} must have at least {limit} item{}.", plural(*limit))
        }
        K::MaxItems { limit } => format!("{it} must have at most {limit} item{}.", plural(*limit)),
        K::UniqueItems => format!("{it} must not list the same value twice."),
        K::MinProperties { limit } => {
            format!("{it} must have at least {limit} member{}.", plural(*limit))
        }
        K::MaxProperties { limit } => {
            format!("{it} must have at most {limit} member{}.", plural(*limit))
        }
        K::AdditionalItems { .. } | K::UnevaluatedItems { .. } => {
            format!("{it} has more items than allowed{}.", within())
        }
        K::Contains => format!(
            "{it} must contain an item that is allowed here{}.",
            within()
        ),
        K::OneOfNotValid { .. } | K::OneOfMultipleValid { .. } | K::AnyOf { .. } => {
            alternatives(schema, kind, holder.as_ref(), &at)
        }
        K::Not { schema: forbidden } => match forbidden
            .get("required")
            .and_then(Value::as_array)
            .filter(|_| forbidden.as_object().is_some_and(|o| o.len() == 1))
        {
            Some(names) => {
                let names: Vec<String> = names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|n| format!("'{n}'"))
                    .collect();
                format!("{it} must not have {} together.", names.join(" and "))
            }
            None => format!("{it} has a form this place does not allow."),
        },
        K::Custom {
            keyword: custom, ..
        } if custom == words::WHOLE_LITERAL => {
            // The rule behind it is the schema's `type: integer`, as this
            // gateway reads it (docs/mcp.md "What a tool error says").
            keyword = "type".to_owned();
            format!(
                "{it} must be a whole number written without a decimal point or exponent{}.",
                within()
            )
        }
        // Keywords the input schemas do not use (a test below keeps it so).
        _ => format!("{it} does not satisfy the schema rule '{keyword}'."),
    };
    let fe = FieldError::new(locate(kind, &at), keyword, capped(&explanation));
    if !out.contains(&fe) {
        out.push(fe);
    }
}

/// `oneOf` / `anyOf` in words. Alternatives that each only require a member
/// (the vehicle selectors) read "give exactly one of vehicle_id, vin or
/// stock_number"; other alternatives are each described.
fn alternatives(schema: &Value, kind: &K, holder: Option<&Value>, at: &str) -> String {
    let keyword = kind.keyword();
    let branches: Vec<Value> = holder
        .and_then(|h| h.get(keyword))
        .and_then(Value::as_array)
        .map(|b| b.iter().map(|b| flatten(schema, b)).collect())
        .unwrap_or_default();
    let required_only: Option<Vec<String>> = branches
        .iter()
        .map(|b| {
            let object = b.as_object()?;
            let names = object.get("required")?.as_array()?;
            (object.len() == 1).then(|| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
                    .join(" and ")
            })
        })
        .collect();
    let rule = match kind {
        K::AnyOf { .. } => "at least one of",
        _ => "exactly one of",
    };
    if let Some(names) = required_only.filter(|n| !n.is_empty()) {
        let given = match kind {
            K::OneOfMultipleValid { .. } => "more than one of them was given",
            _ => "none of them was given",
        };
        let within = place(at).map(|p| format!(" in {p}")).unwrap_or_default();
        return format!("Give {rule} {}{within}; {given}.", or_list(&names));
    }
    let forms: Vec<String> = branches
        .iter()
        .map(|b| describe(schema, b))
        .filter(|d| !d.is_empty())
        .collect();
    let it = subject(at);
    if forms.is_empty() {
        format!("{it} must match {rule} the allowed forms.")
    } else if matches!(kind, K::OneOfMultipleValid { .. }) {
        format!(
            "{it} must match {rule} these forms, not several: {}.",
            forms.join("; or ")
        )
    } else {
        format!("{it} must be {}.", forms.join(", or "))
    }
}

/// `a, b or c`.
fn or_list(names: &[String]) -> String {
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// "allowed members here: a, b, c" (or that none are).
fn allowed_members(allowed: &[String]) -> String {
    if allowed.is_empty() {
        "no members are allowed here".to_owned()
    } else {
        format!("allowed members here: {}", allowed.join(", "))
    }
}

/// ` Did you mean 'query'?` for the written names that are close to exactly
/// one allowed name; what is said is always an allowed name.
fn did_you_mean<'a>(written: impl Iterator<Item = &'a str>, allowed: &[String]) -> String {
    let mut meant: Vec<&str> = Vec::new();
    for w in written {
        if let Some(name) = words::closest(w, allowed)
            && !meant.contains(&name)
        {
            meant.push(name);
        }
    }
    if meant.is_empty() {
        return String::new();
    }
    let quoted: Vec<String> = meant.iter().map(|m| format!("'{m}'")).collect();
    format!(" Did you mean {}?", or_list(&quoted))
}

/// The member names an object schema lists, in schema order.
fn member_names(object: Option<&Value>) -> Vec<String> {
    object
        .and_then(|o| o.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The values an `enum` allows, strings without quotes.
fn value_names(options: &Value) -> Vec<String> {
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

/// A schema constant as written in JSON (`"inventory.search.request"`).
fn literal(value: &Value) -> String {
    value.to_string()
}

/// At most [`MAX_EXPLANATION`] characters.
fn capped(text: &str) -> String {
    if text.chars().count() <= MAX_EXPLANATION {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(MAX_EXPLANATION - 1).collect();
    out.push('…');
    out
}

// ---------------------------------------------------------------------------
// The schema, read
// ---------------------------------------------------------------------------

/// The schema node at a JSON pointer of `root`; a `$ref` segment (an
/// evaluation path) follows the reference.
fn node_at<'a>(root: &'a Value, pointer: &str) -> Option<&'a Value> {
    let mut node = root;
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        node = if segment == "$ref" {
            target(root, node)?
        } else {
            match node {
                Value::Object(map) => map.get(&segment)?,
                Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
                _ => return None,
            }
        };
    }
    Some(node)
}

/// What a local `$ref` of `node` points at.
fn target<'a>(root: &'a Value, node: &Value) -> Option<&'a Value> {
    let reference = node.get("$ref")?.as_str()?;
    root.pointer(reference.strip_prefix('#')?)
}

/// `node` with its `$ref` chain merged in (the site's own keywords win), so
/// one object holds every rule of the place.
fn flatten(root: &Value, node: &Value) -> Value {
    let Some(site) = node.as_object() else {
        return node.clone();
    };
    let mut merged: Map<String, Value> = site.clone();
    let mut current = node;
    for _ in 0..16 {
        let Some(next) = target(root, current) else {
            break;
        };
        if let Some(map) = next.as_object() {
            for (k, v) in map {
                merged.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        current = next;
    }
    merged.remove("$ref");
    Value::Object(merged)
}

/// What a place accepts, as a noun phrase ("a whole number from 1 to 100",
/// "one of: asc, desc"), from its (flattened) schema alone.
fn describe(root: &Value, node: &Value) -> String {
    if let Some(c) = node.get("const") {
        return format!("exactly {}", literal(c));
    }
    if let Some(options) = node.get("enum") {
        let names = value_names(options);
        return match names.as_slice() {
            [one] if options[0].is_string() => format!("the string \"{one}\""),
            _ => format!("one of: {}", names.join(", ")),
        };
    }
    if node.get("type").is_none() {
        for keyword in ["oneOf", "anyOf"] {
            if let Some(branches) = node.get(keyword).and_then(Value::as_array) {
                let forms: Vec<String> = branches
                    .iter()
                    .map(|b| describe(root, &flatten(root, b)))
                    .filter(|d| !d.is_empty())
                    .collect();
                return forms.join(", or ");
            }
        }
    }
    match node.get("type").and_then(Value::as_str) {
        Some("string") => string_words(node),
        Some(t @ ("integer" | "number")) => number_words(node, t),
        Some("boolean") => "true or false".to_owned(),
        Some("null") => "null".to_owned(),
        Some("array") => array_words(root, node),
        Some("object") => object_words(node),
        _ => String::new(),
    }
}

fn string_words(node: &Value) -> String {
    let min = node.get("minLength").and_then(Value::as_u64);
    let max = node.get("maxLength").and_then(Value::as_u64);
    let length = match (min, max) {
        (Some(a), Some(b)) => Some(format!("{a} to {b} characters")),
        (Some(a), None) if a > 0 => Some(format!("at least {a} character{}", plural(a))),
        (None, Some(b)) => Some(format!("at most {b} character{}", plural(b))),
        _ => None,
    };
    let pattern = node.get("pattern").and_then(Value::as_str);
    let meaning = pattern.and_then(words::pattern_meaning);
    match (meaning, pattern, node.get("format").and_then(Value::as_str)) {
        (Some(m), _, _) => match length {
            Some(l) => format!("{m} ({l})"),
            None => m.to_owned(),
        },
        (None, Some(p), _) => match length {
            Some(l) => format!("a string matching {p} ({l})"),
            None => format!("a string matching {p}"),
        },
        (None, None, Some(f)) => words::format_meaning(f),
        (None, None, None) => match length {
            Some(l) => format!("a string of {l}"),
            None => "a string".to_owned(),
        },
    }
}

fn number_words(node: &Value, kind: &str) -> String {
    let noun = article(words::type_noun(kind));
    let bound = |k: &str| node.get(k).map(Value::to_string);
    let range = match (bound("minimum"), bound("maximum")) {
        (Some(a), Some(b)) => format!(" from {a} to {b}"),
        (Some(a), None) => format!(" of at least {a}"),
        (None, Some(b)) => format!(" of at most {b}"),
        (None, None) => String::new(),
    };
    let exclusive = match (bound("exclusiveMinimum"), bound("exclusiveMaximum")) {
        (Some(a), Some(b)) => format!(" greater than {a} and less than {b}"),
        (Some(a), None) => format!(" greater than {a}"),
        (None, Some(b)) => format!(" less than {b}"),
        (None, None) => String::new(),
    };
    format!("{noun}{range}{exclusive}")
}

fn array_words(root: &Value, node: &Value) -> String {
    let mut limits = Vec::new();
    match (
        node.get("minItems").and_then(Value::as_u64),
        node.get("maxItems").and_then(Value::as_u64),
    ) {
        (Some(a), Some(b)) => limits.push(format!("{a} to {b} items")),
        (Some(a), None) if a > 0 => limits.push(format!("at least {a} item{}", plural(a))),
        (None, Some(b)) => limits.push(format!("at most {b} item{}", plural(b))),
        _ => {}
    }
    if node.get("uniqueItems") == Some(&Value::Bool(true)) {
        limits.push("no value twice".to_owned());
    }
    let limits = if limits.is_empty() {
        String::new()
    } else {
        format!(" ({})", limits.join(", "))
    };
    let items = node.get("items").map(|i| flatten(root, i));
    match items.as_ref() {
        Some(i) if i.get("enum").is_some() => {
            format!(
                "a list{limits} of values from: {}",
                value_names(&i["enum"]).join(", ")
            )
        }
        Some(i) => match describe(root, i) {
            d if d.is_empty() => format!("a list{limits}"),
            d => format!("a list{limits}, each item {d}"),
        },
        None => format!("a list{limits}"),
    }
}

fn object_words(node: &Value) -> String {
    let members = member_names(Some(node));
    if members.is_empty() {
        return "an object".to_owned();
    }
    let required: Vec<&str> = node
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let required = if required.is_empty() {
        String::new()
    } else {
        format!(" (required: {})", required.join(", "))
    };
    format!("an object with members {}{required}", members.join(", "))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::json;

    use super::*;
    use crate::catalog::Catalog;

    /// Every subschema of `node`, with the keywords it uses.
    fn walk<'a>(node: &'a Value, out: &mut Vec<&'a Map<String, Value>>) {
        match node {
            Value::Object(map) => {
                out.push(map);
                for (key, child) in map {
                    match key.as_str() {
                        // Maps of names to subschemas: walk the subschemas.
                        "properties" | "$defs" | "patternProperties" | "dependentSchemas" => {
                            if let Some(children) = child.as_object() {
                                for c in children.values() {
                                    walk(c, out);
                                }
                            }
                        }
                        "enum" | "const" | "required" | "description" | "default" => {}
                        _ => walk(child, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            _ => {}
        }
    }

    fn input_schemas() -> Vec<(String, Value)> {
        Catalog::load()
            .unwrap()
            .tools
            .iter()
            .map(|t| (t.name.clone(), t.published_input_schema.clone()))
            .collect()
    }

    /// A tool's `field_errors` for `args`.
    fn errors(tool: &str, args: Value) -> Vec<FieldError> {
        let catalog = Catalog::load().unwrap();
        catalog
            .tool(tool)
            .unwrap()
            .validate_input(&args)
            .unwrap_err()
    }

    #[test]
    fn every_pattern_of_every_input_schema_has_words() {
        for (tool, schema) in input_schemas() {
            let mut nodes = Vec::new();
            walk(&schema, &mut nodes);
            for node in nodes {
                if let Some(pattern) = node.get("pattern").and_then(Value::as_str) {
                    assert!(
                        words::pattern_meaning(pattern).is_some(),
                        "{tool}: pattern {pattern} has no words in catalog::words::pattern_meaning"
                    );
                }
            }
        }
    }

    /// The explainer words every keyword the input schemas use; a schema
    /// that starts using another one (`if`, `patternProperties`, …) fails
    /// here until it is worded.
    #[test]
    fn every_keyword_of_every_input_schema_is_worded() {
        const WORDED: &[&str] = &[
            "$schema",
            "$ref",
            "$defs",
            "type",
            "description",
            "properties",
            "additionalProperties",
            "required",
            "enum",
            "const",
            "pattern",
            "format",
            "minLength",
            "maxLength",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "items",
            "minItems",
            "maxItems",
            "uniqueItems",
            "oneOf",
            "anyOf",
            "not",
            "dependentSchemas",
            "default",
            // MCP's header mirror: an annotation, never a failure
            // (docs/mcp.md "Header policy").
            "x-mcp-header",
        ];
        let mut used = BTreeSet::new();
        for (tool, schema) in input_schemas() {
            let mut nodes = Vec::new();
            walk(&schema, &mut nodes);
            for node in nodes {
                for key in node.keys() {
                    assert!(
                        WORDED.contains(&key.as_str()),
                        "{tool}: keyword {key} is not worded by catalog::explain"
                    );
                    used.insert(key.clone());
                }
            }
        }
        assert!(
            used.contains("oneOf") && used.contains("pattern"),
            "{used:?}"
        );
    }

    /// Every object of an input schema is closed, so every member name on a
    /// failing path is a schema name (the module doc's premise).
    #[test]
    fn every_object_of_every_input_schema_is_closed() {
        for (tool, schema) in input_schemas() {
            let mut nodes = Vec::new();
            walk(&schema, &mut nodes);
            for node in nodes {
                if node.contains_key("properties") {
                    assert_eq!(
                        node.get("additionalProperties"),
                        Some(&Value::Bool(false)),
                        "{tool}: an object with properties must be closed: {node:?}"
                    );
                }
                assert!(
                    !node.contains_key("patternProperties"),
                    "{tool}: patternProperties would put caller names on error paths"
                );
            }
        }
    }

    #[test]
    fn places_are_named_as_paths() {
        assert_eq!(place("/page/limit").as_deref(), Some("page.limit"));
        assert_eq!(place("/rooftop_ids/2").as_deref(), Some("rooftop_ids[2]"));
        assert_eq!(place("/a~1b/c~0d").as_deref(), Some("a/b.c~d"));
        assert_eq!(place(""), None);
        assert_eq!(place("/"), None);
    }

    #[test]
    fn a_failure_says_what_is_accepted_from_the_schema() {
        let search = "dealeragent.inventory.search";
        let org = "org.maplecrest-motor-group";
        let e = errors(
            search,
            json!({"organization_id": org, "sort": {"field": "price", "order": "asc"}}),
        );
        assert_eq!(
            e,
            [FieldError::new(
                "/sort/field",
                "enum",
                "sort.field must be one of: advertised_price, year, odometer, inventory_age_days, observed_at."
            )]
        );
        let e = errors(
            search,
            json!({"organization_id": org, "page": {"limit": 500}}),
        );
        assert_eq!(
            e[0].explanation,
            "page.limit must be at most 100 (accepted: a whole number from 1 to 100)."
        );
        let e = errors(
            search,
            json!({"organization_id": org, "page": {"limit": 20.0}}),
        );
        assert_eq!(e[0].keyword, "type");
        assert!(
            e[0].explanation
                .starts_with("page.limit must be a whole number written without"),
            "{e:?}"
        );
        let e = errors(
            "dealeragent.inventory.get_vehicle",
            json!({"organization_id": org, "rooftop_id": "r", "vin": "1HGCM82633A004352", "stock_number": "S1"}),
        );
        assert_eq!(
            e,
            [FieldError::new(
                "/",
                "oneOf",
                "Give exactly one of vehicle_id, vin or stock_number; more than one of them was given."
            )]
        );
        let e = errors(search, json!({"organization_id": org, "qurey": "x"}));
        assert_eq!(e[0].instance_location, "/");
        assert!(
            e[0].explanation.starts_with(
                "The arguments object has an unexpected member (its name is not repeated); allowed members here: organization_id, rooftop_ids, query,"
            ) && e[0].explanation.ends_with(" Did you mean 'query'?"),
            "{e:?}"
        );
        let e = errors(
            "dealergateway.offers.evaluate",
            json!({"organization_id": org, "rooftop_id": "r", "vehicle_id": "v",
                   "profile": {"payment_mode": "cash", "jurisdiction": {"country": "US", "subdivision": "WA"},
                               "claims": {"military": "yes"}}}),
        );
        assert!(
            e.contains(&FieldError::new(
                "/profile/jurisdiction/subdivision",
                "pattern",
                "profile.jurisdiction.subdivision must be an ISO 3166-2 subdivision code in capitals such as US-IL (pattern ^[A-Z]{2}-[A-Z0-9]{1,3}$)."
            )),
            "{e:?}"
        );
        assert!(
            e.contains(&FieldError::new(
                "/profile/claims/military",
                "oneOf",
                "profile.claims.military must be true or false, or the string \"unknown\"."
            )),
            "{e:?}"
        );
    }

    #[test]
    fn nothing_of_the_input_is_repeated() {
        let secret = "sk_live_5ecret_member";
        let value = "s3cr3t-value-Zq";
        let e = errors(
            "dealeragent.inventory.search",
            json!({"organization_id": value, secret: value, "filters": {secret: 1, "make": [value, value]},
                   "sort": {"field": value, "order": value}, "page": {"cursor": "", "limit": value}}),
        );
        let text = serde_json::to_string(&e).unwrap();
        assert!(!text.contains(secret) && !text.contains(value), "{text}");
        assert!(e.len() >= 6, "{e:?}");
    }
}
