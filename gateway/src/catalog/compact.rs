//! Compact renderings of the bundled tool schemas for `tools/list`
//! (every AI client pays for `tools/list` in context on every connection,
//! so it must stay at most 50 KB; measured in docs/benchmarks.md,
//! "tools/list size").
//!
//! Two renderings with different promises:
//!
//! - [`input`] is **exact**: it accepts precisely the arguments the bundled
//!   DAP definition accepts, and it is the schema the gateway validates
//!   arguments against, so what a client reads is what is enforced. Only
//!   annotations go (titles, `$comment`, examples, and descriptions that
//!   are not on a property: a model needs to know what a member means, not
//!   what a definition is called), the root definition and every definition
//!   used once are written in place, and identical subschemas are written
//!   once under `$defs`.
//! - [`output`] is **sound but abridged**: every result the DAP schema
//!   accepts is accepted (MCP: structuredContent must conform to
//!   outputSchema; clients that validate it must never reject a correct
//!   result), but definitions deeper than a fixed depth are reduced to their
//!   JSON type and value constraints (patterns, formats, lengths, bounds)
//!   are left out; members, `required`, closed objects, `enum` and `const`
//!   stay where a definition is published. The gateway keeps checking its own results against the full
//!   success definition, and the full schemas stay at `/schemas/`.
//!
//! Soundness of the abridgement: a definition `D` replaced by `{"type": T}`
//! where `D` itself has `"type": T`, like a dropped value constraint, only
//! drops conjuncts, so it accepts more.
//! That is monotone in every applicator except `not`, `if`, `contains` (with
//! `maxContains`), `oneOf` (two weakened branches may both match) and the
//! `unevaluated*` keywords (they see the annotations of in-place
//! subschemas). So `oneOf` is written `anyOf` (which admits everything
//! `oneOf` admits) and below the other four nothing is abridged.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value, json};

/// Keywords whose value is one subschema (JSON Schema 2020-12).
const SCHEMA_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "propertyNames",
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
];
/// Keywords whose value is an array of subschemas.
const SCHEMA_ARRAY_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value maps names to subschemas (`$defs` is handled apart).
const SCHEMA_MAP_KEYWORDS: &[&str] = &["properties", "patternProperties", "dependentSchemas"];
/// Annotations dropped from every published schema; they never change
/// what validates.
const DROPPED_ANNOTATIONS: &[&str] = &[
    "title",
    "$comment",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];
/// Annotations a definition may carry into a `$ref` site that has only
/// annotations of its own (the site's win).
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "$comment",
    "examples",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
];
/// Value assertions the abridged output leaves to the full schema: they
/// only narrow what a string, number, array or object may be, so dropping
/// them (outside exact places) admits more, never less, and the kind of
/// each member, its `enum`/`const`, `required` and closed objects stay.
const VALUE_CONSTRAINTS: &[&str] = &[
    "pattern",
    "format",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "propertyNames",
];
/// Keywords below which abridging would not be sound (module doc).
const EXACT_KEYWORDS: &[&str] = &["not", "if", "contains"];

const DEFS_PREFIX: &str = "#/$defs/";

/// The exact, compact `inputSchema` of a bundled schema (`{"$ref":
/// "#/$defs/root", "$defs": {...}}` as `super::bundle` builds it).
pub(super) fn input(bundled: &Value) -> Result<Value, String> {
    let (root, defs) = parts(bundled)?;
    let mut schema = Map::new();
    schema.insert("$schema".into(), json!(super::DRAFT_2020_12));
    schema.insert("$ref".into(), json!(format!("{DEFS_PREFIX}{root}")));
    schema.insert("$defs".into(), Value::Object(defs.clone()));
    let mut schema = Value::Object(schema);
    inline_single_use(&mut schema, &[])?;
    strip_annotations(&mut schema);
    hoist_duplicates(&mut schema);
    finish(&mut schema);
    Ok(schema)
}

/// How far below a root its definitions are published in full: the root's
/// own members (depth 0), then each definition it references directly
/// (depth 1), and so on; anything deeper is written as its JSON type.
/// Depth 0: the success object's members, `required` and closedness, each
/// member as its type. Depth 1 (the vehicle's, the evaluation's members
/// too) fit seven tools in 47 KB; with the five tools added later (the
/// used-vehicle profile and the AAP adapter) only depth 0 keeps
/// `tools/list` within its 50 KB (docs/benchmarks.md, "tools/list size").
/// The full schemas stay at `/schemas/`, and every result is still checked
/// against its full success definition.
pub(super) const SUCCESS_DEPTH: usize = 0;
/// The DAP error object is the same for every tool and documented once
/// (`/schemas/error.schema.json`): its members are published with their
/// types, its nested definitions (`errorCode`, `details`) as types only.
pub(super) const ERROR_DEPTH: usize = 0;

/// The sound, abridged `outputSchema`: `{"type": "object", "anyOf":
/// [success, error]}` over the union of both bundles' definitions (names
/// are unique across schema files, so shared ones are the same
/// definition, as `super::publish_output_schema` checks).
pub(super) fn output(
    definitions: &Map<String, Value>,
    roots: &[(&str, usize)],
    description: &str,
) -> Result<Value, String> {
    // Worklist over (definition, remaining depth, exact): a definition
    // reached again with more depth left, or below an exact keyword, is
    // rendered again with that; depth is bounded, so this ends.
    let mut rendered: BTreeMap<String, (usize, bool, Value)> = BTreeMap::new();
    let mut queue: Vec<(String, usize, bool)> = roots
        .iter()
        .map(|(name, depth)| ((*name).to_owned(), *depth, false))
        .collect();
    while let Some((name, depth, exact)) = queue.pop() {
        if let Some((d, e, _)) = rendered.get(&name)
            && (*e || (!exact && *d >= depth))
        {
            continue;
        }
        let def = definitions
            .get(&name)
            .ok_or_else(|| format!("no definition {name}"))?;
        let mut refs = Vec::new();
        let copy = abridge(def, depth, exact, definitions, &mut refs)?;
        rendered.insert(name, (depth, exact, copy));
        queue.extend(refs);
    }
    let mut defs = Map::new();
    for (name, (_, _, copy)) in rendered {
        defs.insert(name, copy);
    }
    let branches: Vec<Value> = roots
        .iter()
        .map(|(name, _)| json!({"$ref": format!("{DEFS_PREFIX}{name}")}))
        .collect();
    let mut schema = Map::new();
    schema.insert("$schema".into(), json!(super::DRAFT_2020_12));
    schema.insert("type".into(), json!("object"));
    schema.insert("description".into(), json!(description));
    schema.insert("anyOf".into(), Value::Array(branches));
    schema.insert("$defs".into(), Value::Object(defs));
    let mut schema = Value::Object(schema);
    // The two branches keep their definition names: `anyOf: [vehicle,
    // error]` says which is which.
    let names: Vec<&str> = roots.iter().map(|(name, _)| *name).collect();
    inline_single_use(&mut schema, &names)?;
    hoist_duplicates(&mut schema);
    finish(&mut schema);
    Ok(schema)
}

/// The root name and `$defs` of a bundled schema.
fn parts(bundled: &Value) -> Result<(&str, &Map<String, Value>), String> {
    let root = bundled
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(DEFS_PREFIX))
        .ok_or("bundled schema has no root #/$defs/ reference")?;
    let defs = bundled
        .get("$defs")
        .and_then(Value::as_object)
        .ok_or("bundled schema has no $defs")?;
    Ok((root, defs))
}

fn local_name(reference: &Value) -> Result<&str, String> {
    reference
        .as_str()
        .and_then(|r| r.strip_prefix(DEFS_PREFIX))
        .ok_or_else(|| format!("reference {reference} is not #/$defs/NAME"))
}

/// Copy one definition for the abridged output: annotations (including
/// every description) dropped, `oneOf` written `anyOf`, each `$ref` kept
/// while depth remains (its target queued in `refs`) and otherwise
/// replaced by the target's `type`. `exact` (below `not`, `if`,
/// `contains` or beside `unevaluated*`) keeps everything as it is.
fn abridge(
    node: &Value,
    depth: usize,
    exact: bool,
    definitions: &Map<String, Value>,
    refs: &mut Vec<(String, usize, bool)>,
) -> Result<Value, String> {
    let Value::Object(map) = node else {
        // `true` / `false` schemas.
        return Ok(node.clone());
    };
    let exact =
        exact || map.contains_key("unevaluatedProperties") || map.contains_key("unevaluatedItems");
    let mut out = Map::new();
    let mut extra_all_of = Vec::new();
    for (key, child) in map {
        let key = key.as_str();
        if ANNOTATIONS.contains(&key) || (!exact && VALUE_CONSTRAINTS.contains(&key)) {
            continue;
        }
        if key == "$ref" {
            let name = local_name(child)?;
            if exact || depth > 0 {
                refs.push((name.to_owned(), depth.saturating_sub(1), exact));
                out.insert(key.into(), child.clone());
            } else if !map.contains_key("type")
                && let Some(t) = definitions.get(name).and_then(|d| d.get("type"))
            {
                // The target's own `type` is implied by the target, so
                // keeping it loses nothing and tells the client the kind.
                out.insert("type".into(), t.clone());
            }
            continue;
        }
        let value = if SCHEMA_KEYWORDS.contains(&key) {
            let below_exact = exact || EXACT_KEYWORDS.contains(&key);
            abridge(child, depth, below_exact, definitions, refs)?
        } else if SCHEMA_ARRAY_KEYWORDS.contains(&key) {
            let items = child
                .as_array()
                .ok_or_else(|| format!("{key} must be an array"))?;
            let mut copies = Vec::with_capacity(items.len());
            for item in items {
                copies.push(abridge(item, depth, exact, definitions, refs)?);
            }
            Value::Array(copies)
        } else if SCHEMA_MAP_KEYWORDS.contains(&key) {
            let members = child
                .as_object()
                .ok_or_else(|| format!("{key} must be an object"))?;
            let mut copies = Map::new();
            for (name, member) in members {
                copies.insert(
                    name.clone(),
                    abridge(member, depth, exact, definitions, refs)?,
                );
            }
            Value::Object(copies)
        } else {
            child.clone()
        };
        if key == "oneOf" && !exact {
            // `anyOf` admits everything `oneOf` admits; beside an `anyOf`
            // of its own it becomes one more `allOf` conjunct.
            if map.contains_key("anyOf") {
                extra_all_of.push(json!({"anyOf": value}));
            } else {
                out.insert("anyOf".into(), value);
            }
            continue;
        }
        out.insert(key.into(), value);
    }
    if !extra_all_of.is_empty() {
        match out.get_mut("allOf") {
            Some(Value::Array(all_of)) => all_of.extend(extra_all_of),
            _ => {
                out.insert("allOf".into(), Value::Array(extra_all_of));
            }
        }
    }
    Ok(Value::Object(out))
}

/// Visit every subschema directly below `node` (not `$defs`), mutably.
fn for_each_child(node: &mut Value, f: &mut dyn FnMut(&mut Value, bool)) {
    let Value::Object(map) = node else { return };
    for (key, child) in map.iter_mut() {
        let key = key.as_str();
        if SCHEMA_KEYWORDS.contains(&key) {
            f(child, false);
        } else if SCHEMA_ARRAY_KEYWORDS.contains(&key) {
            if let Value::Array(items) = child {
                items.iter_mut().for_each(|item| f(item, false));
            }
        } else if SCHEMA_MAP_KEYWORDS.contains(&key)
            && let Value::Object(members) = child
        {
            let is_properties = key == "properties" || key == "patternProperties";
            members.values_mut().for_each(|m| f(m, is_properties));
        }
    }
}

/// Count `#/$defs/NAME` references below `node` (schema positions only).
fn count_refs(node: &Value, counts: &mut HashMap<String, usize>) {
    if let Some(name) = node
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(DEFS_PREFIX))
    {
        *counts.entry(name.to_owned()).or_default() += 1;
    }
    for (child, _) in named_children(node) {
        count_refs(child, counts);
    }
}

/// All reference counts of a whole schema: its root and every definition.
fn all_ref_counts(schema: &Value) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    count_refs(schema, &mut counts);
    if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
        for def in defs.values() {
            count_refs(def, &mut counts);
        }
    }
    counts
}

/// A `$ref` site that may take its target's keywords in place: it has only
/// annotations beside `$ref`. (A site with validation keywords of its own
/// could change what the target's `additionalProperties` sees.) The root
/// also holds `$schema` and `$defs`.
fn inlinable_site(site: &Map<String, Value>, root: bool) -> bool {
    site.keys().all(|k| {
        k == "$ref"
            || ANNOTATIONS.contains(&k.as_str())
            || (root && (k == "$schema" || k == "$defs"))
    })
}

/// Write every definition referenced exactly once in place of its `$ref`
/// (the root's included), repeatedly, so a reader follows as few
/// references as possible; a definition that reaches itself, or whose one
/// site has validation keywords of its own, stays.
fn inline_single_use(schema: &mut Value, keep: &[&str]) -> Result<(), String> {
    let mut stuck: BTreeSet<String> = keep.iter().map(|k| (*k).to_owned()).collect();
    loop {
        let counts = all_ref_counts(schema);
        let Some(defs) = schema.get("$defs").and_then(Value::as_object) else {
            return Ok(());
        };
        let candidate = defs.iter().find_map(|(name, def)| {
            if stuck.contains(name) || counts.get(name) != Some(&1) || !def.is_object() {
                return None;
            }
            let mut own = HashMap::new();
            count_refs(def, &mut own);
            (!own.contains_key(name)).then(|| name.clone())
        });
        let Some(name) = candidate else {
            return Ok(());
        };
        let body = schema
            .get_mut("$defs")
            .and_then(Value::as_object_mut)
            .and_then(|defs| defs.shift_remove(&name))
            .ok_or_else(|| format!("definition {name} vanished"))?;
        let target = json!(format!("{DEFS_PREFIX}{name}"));
        let mut done = replace_ref(schema, &target, &body, true);
        if !done && let Some(Value::Object(defs)) = schema.get_mut("$defs") {
            for def in defs.values_mut() {
                if replace_ref(def, &target, &body, false) {
                    done = true;
                    break;
                }
            }
        }
        if !done {
            if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
                defs.insert(name.clone(), body);
            }
            stuck.insert(name);
        }
    }
}

/// Replace the one `{"$ref": target, annotations...}` below `node` by the
/// definition's keywords plus the site's annotations (which win).
fn replace_ref(node: &mut Value, target: &Value, body: &Value, root: bool) -> bool {
    if let Value::Object(site) = node
        && site.get("$ref") == Some(target)
    {
        if !inlinable_site(site, root) {
            return false;
        }
        let Value::Object(def) = body else {
            return false;
        };
        let mut merged = Map::new();
        for (k, v) in site.iter() {
            if k == "$schema" {
                merged.insert(k.clone(), v.clone());
            }
        }
        for (k, v) in def {
            merged.insert(k.clone(), v.clone());
        }
        for (k, v) in site.iter() {
            if ANNOTATIONS.contains(&k.as_str()) {
                merged.insert(k.clone(), v.clone());
            }
        }
        if let Some(defs) = site.get("$defs") {
            merged.insert("$defs".into(), defs.clone());
        }
        *site = merged;
        return true;
    }
    let mut done = false;
    for_each_child(node, &mut |child, _| {
        if !done {
            done = replace_ref(child, target, body, false);
        }
    });
    done
}

/// Drop annotations from an input schema. Descriptions stay only on
/// properties: what a model must know to fill a member in. The root's (the
/// tool description says it), a definition's and a branch's go.
fn strip_annotations(schema: &mut Value) {
    fn walk(node: &mut Value, is_property: bool) {
        if let Value::Object(map) = node {
            for key in DROPPED_ANNOTATIONS {
                map.shift_remove(*key);
            }
            if !is_property {
                map.shift_remove("description");
            }
        }
        for_each_child(node, &mut |child, is_property| walk(child, is_property));
    }
    walk(schema, false);
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        for def in defs.values_mut() {
            walk(def, false);
        }
    }
}

/// Key order does not change a schema's meaning; this text is the same for
/// two equal schemas whatever their order.
fn canonical(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let sorted: BTreeMap<&String, &Value> = map.iter().collect();
                out.push('{');
                for (i, (k, v)) in sorted.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(v, out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(v, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// Where one subschema text occurs.
#[derive(Default)]
struct Occurrences {
    /// Occurrences that a reference could replace (not a definition's top).
    sites: usize,
    /// The property names it appears under (`""`: not under a property).
    properties: BTreeSet<String>,
    /// A definition that already is this subschema.
    definition: Option<String>,
    /// The first occurrence, in its own key order (for the new definition).
    sample: Option<Value>,
}

/// The subschemas directly below `node` (never `$defs`), with the property
/// name each sits under, if any.
fn named_children(node: &Value) -> Vec<(&Value, Option<&str>)> {
    let mut out = Vec::new();
    let Value::Object(map) = node else {
        return out;
    };
    for (key, child) in map {
        let key = key.as_str();
        if SCHEMA_KEYWORDS.contains(&key) {
            out.push((child, None));
        } else if SCHEMA_ARRAY_KEYWORDS.contains(&key) {
            if let Value::Array(items) = child {
                out.extend(items.iter().map(|i| (i, None)));
            }
        } else if SCHEMA_MAP_KEYWORDS.contains(&key)
            && let Value::Object(members) = child
        {
            out.extend(members.iter().map(|(n, m)| (m, Some(n.as_str()))));
        }
    }
    out
}

fn collect(node: &Value, property: Option<&str>, seen: &mut HashMap<String, Occurrences>) {
    if node.is_object() {
        let entry = seen.entry(canonical(node)).or_default();
        entry.sites += 1;
        entry.sample.get_or_insert_with(|| node.clone());
        entry.properties.insert(property.unwrap_or("").to_owned());
    }
    for (child, name) in named_children(node) {
        collect(child, name, seen);
    }
}

/// Every object subschema of `schema` by text: below the root (the root
/// itself is never replaced) and in each definition (whose top is an
/// occurrence that already has a name).
fn occurrences(schema: &Value) -> HashMap<String, Occurrences> {
    let mut seen = HashMap::new();
    for (child, name) in named_children(schema) {
        collect(child, name, &mut seen);
    }
    if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
        for (name, def) in defs {
            seen.entry(canonical(def))
                .or_default()
                .definition
                .get_or_insert_with(|| name.clone());
            for (child, member) in named_children(def) {
                collect(child, member, &mut seen);
            }
        }
    }
    seen
}

/// Bytes of `{"$ref":"#/$defs/NAME"}`.
fn reference_len(name: &str) -> usize {
    r##"{"$ref":"#/$defs/"}"##.len() + name.len()
}

/// A name for a new shared definition: the one property name it always
/// appears under (what a reader would call it), else `shared_N`.
fn shared_name(occurrence: &Occurrences, defs: Option<&Map<String, Value>>) -> String {
    let taken = |name: &str| defs.is_some_and(|d| d.contains_key(name));
    if occurrence.properties.len() == 1
        && let Some(name) = occurrence.properties.first()
        && !name.is_empty()
        && !taken(name)
    {
        return name.clone();
    }
    (1..)
        .map(|n| format!("shared_{n}"))
        .find(|name| !taken(name))
        .unwrap_or_default()
}

/// Write every subschema that occurs more than once (and is long enough
/// for references to be shorter) once under `$defs` and reference it:
/// shared `$defs` once per tool, no repeated inlined copies (docs/mcp.md).
/// A reference to an identical schema validates exactly as the schema
/// itself; every step shrinks the text, so this ends.
fn hoist_duplicates(schema: &mut Value) {
    loop {
        let seen = occurrences(schema);
        let defs = schema.get("$defs").and_then(Value::as_object);
        let best = seen
            .iter()
            .filter_map(|(text, occurrence)| {
                // Bytes saved (negative: the text grows).
                let len = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
                let (name, saved, new_body) = match &occurrence.definition {
                    Some(name) if occurrence.sites >= 1 => {
                        let per_site = len(text.len()) - len(reference_len(name));
                        (name.clone(), len(occurrence.sites) * per_site, None)
                    }
                    None if occurrence.sites >= 2 => {
                        let name = shared_name(occurrence, defs);
                        let cost =
                            len(occurrence.sites) * len(reference_len(&name)) + len(name.len()) + 4;
                        let saved = len(occurrence.sites - 1) * len(text.len()) - cost;
                        (name, saved, occurrence.sample.clone())
                    }
                    _ => return None,
                };
                // A list of allowed values is written once even where a
                // reference costs a few bytes more: "no duplicated enums".
                let holds_enum = occurrence
                    .sample
                    .as_ref()
                    .is_some_and(|s| s.get("enum").is_some());
                (saved > 0 || holds_enum).then(|| (saved, text.clone(), name, new_body))
            })
            // Largest saving first; the text breaks ties deterministically.
            .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(&a.1)));
        let Some((_, text, name, new_body)) = best else {
            return;
        };
        let reference = json!({"$ref": format!("{DEFS_PREFIX}{name}")});
        replace_all(schema, &text, &reference);
        if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
            for def in defs.values_mut() {
                replace_all(def, &text, &reference);
            }
            if let Some(body) = new_body {
                defs.insert(name, body);
            }
        } else if let (Value::Object(root), Some(body)) = (&mut *schema, new_body) {
            let mut defs = Map::new();
            defs.insert(name, body);
            root.insert("$defs".into(), Value::Object(defs));
        }
    }
}

/// Replace every subschema below `node` whose text is `text` by `reference`.
fn replace_all(node: &mut Value, text: &str, reference: &Value) {
    for_each_child(node, &mut |child, _| {
        if child.is_object() && canonical(child) == text {
            *child = reference.clone();
        } else {
            replace_all(child, text, reference);
        }
    });
}

/// Drop definitions nothing references any more, sort the rest and put
/// `$defs` last (a reader meets the root's own keywords first).
fn finish(schema: &mut Value) {
    loop {
        let counts = all_ref_counts(schema);
        let Some(Value::Object(defs)) = schema.get_mut("$defs") else {
            break;
        };
        let before = defs.len();
        defs.retain(|name, _| counts.contains_key(name));
        if defs.len() == before {
            break;
        }
    }
    if let Value::Object(root) = schema
        && let Some(Value::Object(defs)) = root.shift_remove("$defs")
        && !defs.is_empty()
    {
        let mut entries: Vec<(String, Value)> = defs.into_iter().collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        root.insert("$defs".into(), Value::Object(entries.into_iter().collect()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validator(schema: &Value) -> jsonschema::Validator {
        jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(schema)
            .expect("compiles")
    }

    fn bundled(root: &str, defs: Value) -> Value {
        json!({"$schema": super::super::DRAFT_2020_12, "$ref": format!("#/$defs/{root}"), "$defs": defs})
    }

    fn text_of(v: &Value) -> String {
        serde_json::to_string(v).unwrap_or_default()
    }

    #[test]
    fn a_site_with_its_own_validation_keywords_is_not_inlined() {
        // Merging `d` into the site would let d's additionalProperties see
        // the site's `extra` and admit {"extra": 1}.
        let full = bundled(
            "root",
            json!({
                "root": {"type": "object", "properties": {"p": {"$ref": "#/$defs/d", "properties": {"extra": {}}}}},
                "d": {"type": "object", "additionalProperties": false, "properties": {"q": {}}}
            }),
        );
        let compact = input(&full).unwrap();
        let (f, c) = (validator(&full), validator(&compact));
        for instance in [
            json!({"p": {"extra": 1}}),
            json!({"p": {"q": 1}}),
            json!({"p": 3}),
        ] {
            assert_eq!(f.is_valid(&instance), c.is_valid(&instance), "{instance}");
        }
        assert!(!c.is_valid(&json!({"p": {"extra": 1}})));
        assert!(compact["$defs"].get("d").is_some(), "{compact}");
    }

    #[test]
    fn single_use_definitions_and_the_root_are_written_in_place_and_repeats_shared() {
        let big = json!({"description": "A claim.", "oneOf": [{"type": "boolean"}, {"type": "string", "enum": ["unknown"]}]});
        let full = bundled(
            "root",
            json!({
                "root": {"description": "Root text the tool description repeats.", "type": "object", "properties": {
                    "once": {"description": "Used once.", "$ref": "#/$defs/once"},
                    "a": big.clone(), "b": big.clone(), "c": big
                }},
                "once": {"description": "Definition text.", "type": "integer", "minimum": 1}
            }),
        );
        let compact = input(&full).unwrap();
        assert_eq!(compact["type"], "object", "{compact}");
        assert!(compact.get("description").is_none(), "{compact}");
        assert_eq!(
            compact["properties"]["once"],
            json!({"type": "integer", "minimum": 1, "description": "Used once."})
        );
        let shared = &compact["properties"]["a"]["$ref"];
        assert!(shared.is_string(), "{compact}");
        assert_eq!(compact["properties"]["b"]["$ref"], *shared);
        assert_eq!(compact["$defs"].as_object().map(Map::len), Some(1));
        let (f, c) = (validator(&full), validator(&compact));
        for instance in [
            json!({"a": true, "once": 1}),
            json!({"a": "unknown", "b": "no"}),
            json!({"once": 0}),
            json!({"c": 1}),
        ] {
            assert_eq!(f.is_valid(&instance), c.is_valid(&instance), "{instance}");
        }
    }

    #[test]
    fn a_recursive_definition_stays_a_definition() {
        let full = bundled(
            "node",
            json!({"node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}, "additionalProperties": false}}),
        );
        let compact = input(&full).unwrap();
        let c = validator(&compact);
        assert!(c.is_valid(&json!({"child": {"child": {}}})));
        assert!(!c.is_valid(&json!({"child": {"child": {"x": 1}}})));
    }

    /// Abridging the branches of a `oneOf` would make both match; it is
    /// written `anyOf`, which admits what `oneOf` admits.
    #[test]
    fn abridged_one_of_becomes_any_of_and_still_admits_every_valid_result() {
        let defs = json!({
            "result": {"type": "object", "required": ["x"], "properties": {"x": {"oneOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}]}}},
            "a": {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "a"}}},
            "b": {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "b"}}}
        });
        let published = output(defs.as_object().unwrap(), &[("result", 0)], "d").unwrap();
        assert!(!text_of(&published).contains("oneOf"), "{published}");
        let full = validator(&bundled("result", defs.clone()));
        let p = validator(&published);
        for instance in [json!({"x": {"kind": "a"}}), json!({"x": {"kind": "b"}})] {
            assert!(
                full.is_valid(&instance) && p.is_valid(&instance),
                "{instance}"
            );
        }
        assert!(!p.is_valid(&json!({"x": 1})), "the member's type stays");
        assert!(!p.is_valid(&json!({})), "required stays");
    }

    /// Below `not` (and `if`, `contains`) nothing is abridged: a weaker
    /// schema under `not` would reject more.
    #[test]
    fn nothing_below_not_is_abridged() {
        let defs = json!({
            "result": {"type": "object", "properties": {"y": {"not": {"$ref": "#/$defs/c"}}, "z": {"$ref": "#/$defs/c"}}},
            "c": {"type": "string", "pattern": "^a"}
        });
        let published = output(defs.as_object().unwrap(), &[("result", 0)], "d").unwrap();
        let p = validator(&published);
        assert!(p.is_valid(&json!({"y": "b"})), "{published}");
        assert!(!p.is_valid(&json!({"y": "abc"})));
        // Outside `not` the same definition is abridged to its type.
        assert!(p.is_valid(&json!({"z": "b"})));
        assert!(!p.is_valid(&json!({"z": 1})));
    }

    #[test]
    fn definitions_within_the_depth_are_published_and_deeper_ones_typed() {
        let defs = json!({
            "result": {"type": "object", "required": ["v"], "properties": {"v": {"$ref": "#/$defs/vehicle"}}},
            "vehicle": {"type": "object", "additionalProperties": false, "required": ["price"], "properties": {"price": {"$ref": "#/$defs/money"}}},
            "money": {"type": "object", "required": ["amount_minor"], "properties": {"amount_minor": {"type": "integer", "minimum": 0}}}
        });
        let published = output(defs.as_object().unwrap(), &[("result", 1)], "d").unwrap();
        let p = validator(&published);
        assert!(p.is_valid(&json!({"v": {"price": {"amount_minor": 5}}})));
        // `vehicle` (depth 1) is published: its closed members and required.
        assert!(!p.is_valid(&json!({"v": {"price": {}, "extra": 1}})));
        assert!(!p.is_valid(&json!({"v": {}})));
        // `money` (depth 2) is only an object: its rules are not published.
        assert!(p.is_valid(&json!({"v": {"price": {"amount_minor": -1}}})));
        assert!(!p.is_valid(&json!({"v": {"price": 7}})));
        // The root branch keeps its name.
        assert_eq!(published["anyOf"][0]["$ref"], "#/$defs/result");
    }
}
