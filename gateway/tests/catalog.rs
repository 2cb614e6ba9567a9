//! `capabilities.yaml` is the single source of tool metadata: the code and
//! the catalog must agree exactly (issue 2, item 2).

use std::collections::BTreeSet;

use gateway::catalog::{Catalog, SCHEMA_FILES};
use serde_json::Value;

#[test]
fn catalog_tools_and_implemented_tools_are_the_same_set() {
    let catalog = Catalog::load().expect("catalog loads");
    let in_catalog: BTreeSet<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
    let in_code: BTreeSet<&str> = gateway::tools::IMPLEMENTED.iter().copied().collect();
    assert_eq!(
        in_catalog, in_code,
        "capabilities.yaml and gateway/src/tools disagree"
    );
}

#[test]
fn every_profile_tool_is_defined_and_every_tool_is_read_only() {
    let catalog = Catalog::load().unwrap();
    for profile in &catalog.profiles {
        for tool in &profile.tools {
            assert!(
                catalog.tool(tool).is_some(),
                "{} lists undefined {tool}",
                profile.id
            );
        }
    }
    for tool in &catalog.tools {
        assert!(
            tool.annotations.read_only_hint && !tool.annotations.destructive_hint,
            "{}",
            tool.name
        );
        assert_eq!(tool.safety.confirmation, "none", "{}", tool.name);
        assert!(!tool.safety.legal_or_financial_commitment, "{}", tool.name);
    }
}

fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                if k == "$ref" {
                    out.push(c.as_str().unwrap_or_default().to_owned());
                } else {
                    refs(c, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|c| refs(c, out)),
        _ => {}
    }
}

#[test]
fn published_schemas_are_self_contained() {
    let catalog = Catalog::load().unwrap();
    for tool in &catalog.tools {
        for schema in [
            &tool.input_schema,
            &tool.output_schema,
            &tool.published_output_schema,
        ] {
            let mut found = Vec::new();
            refs(schema, &mut found);
            assert!(!found.is_empty());
            for r in found {
                let name = r
                    .strip_prefix("#/$defs/")
                    .unwrap_or_else(|| panic!("{}: external ref {r}", tool.name));
                assert!(
                    schema["$defs"].get(name).is_some(),
                    "{}: dangling {r}",
                    tool.name
                );
            }
        }
        assert_eq!(
            tool.input_schema["type"], "object",
            "{}: MCP root type object",
            tool.name
        );
        assert_eq!(
            tool.published_output_schema["type"], "object",
            "{}: MCP root type object",
            tool.name
        );
    }
}

/// A DAP error object, as `ToolError::to_dap` writes it.
fn dap_error() -> Value {
    serde_json::json!({
        "error_id": "err.0194c1d2-0000-7000-8000-000000000001",
        "code": "dealeragent.validation.invalid",
        "message": "The arguments do not satisfy the tool's input schema.",
        "retryable": false,
        "trace_id": "trace.0194c1d2-0000-7000-8000-000000000002",
        "created_at": "2026-07-28T12:00:00.000Z",
        "details": {"field_errors": [
            {"instance_location": "/organization_id", "keyword": "required", "explanation": "Required property 'organization_id' is missing."}
        ]}
    })
}

/// The published `outputSchema` admits the DAP error object (issue 10), but
/// the gateway's own check of a successful result stays the success shape
/// alone: a tool that returned an error-shaped object as a success would
/// still be refused (dealeragent.internal), exactly as before.
#[test]
fn published_output_schemas_admit_the_dap_error_but_success_validation_stays_strict() {
    let catalog = Catalog::load().unwrap();
    let error = dap_error();
    for tool in &catalog.tools {
        let published = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&tool.published_output_schema)
            .unwrap();
        let problems: Vec<String> = published
            .iter_errors(&error)
            .map(|e| e.to_string())
            .collect();
        assert!(problems.is_empty(), "{}: {problems:?}", tool.name);
        assert!(
            tool.validate_output(&error).is_err(),
            "{}: the gateway's success validation must not accept an error object",
            tool.name
        );
        // Not a free-for-all: an object that is neither shape is refused.
        assert!(
            !published.is_valid(&serde_json::json!({"anything": "goes"})),
            "{}",
            tool.name
        );
    }
}

#[test]
fn a_catalog_naming_an_unknown_schema_definition_is_refused() {
    let yaml = include_str!("../../capabilities.yaml").replace(
        "manifest.schema.json#/$defs/manifestRequest",
        "manifest.schema.json#/$defs/noSuchDef",
    );
    let err = Catalog::from_sources(&yaml, SCHEMA_FILES).unwrap_err();
    assert!(err.to_string().contains("noSuchDef"), "{err}");
}

#[test]
fn a_catalog_tool_without_a_profile_entry_is_refused() {
    let yaml = include_str!("../../capabilities.yaml").replace(
        "tools: [dealeragent.discovery.get_manifest, dealeragent.dealer.get]",
        "tools: [dealeragent.discovery.get_manifest]",
    );
    assert_ne!(
        yaml,
        include_str!("../../capabilities.yaml"),
        "fixture must change the catalog"
    );
    let err = Catalog::from_sources(&yaml, SCHEMA_FILES).unwrap_err();
    assert!(err.to_string().contains("does not list its tool"), "{err}");
}

#[test]
fn duplicate_definition_names_across_schema_files_are_refused() {
    let extra = r#"{"$defs": {"money": {"type": "string"}}}"#;
    let mut files: Vec<(&str, &str)> = SCHEMA_FILES.to_vec();
    files.push(("extra.schema.json", extra));
    let err = Catalog::from_sources(include_str!("../../capabilities.yaml"), &files).unwrap_err();
    assert!(err.to_string().contains("money"), "{err}");
}
