//! `capabilities.yaml` is the single source of tool metadata: the tool
//! registry (`gateway::tools::REGISTRY`) and the catalog must agree exactly.

use std::collections::BTreeSet;

use gateway::catalog::{Catalog, SCHEMA_FILES};
use serde_json::{Value, json};

use crate::common;

#[test]
fn catalog_tools_and_registered_tools_are_the_same_set() {
    let catalog = Catalog::load().expect("catalog loads");
    let in_catalog: BTreeSet<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
    let in_code: BTreeSet<&str> = gateway::tools::REGISTRY.iter().map(|r| r.name).collect();
    assert_eq!(
        in_catalog, in_code,
        "capabilities.yaml and gateway/src/tools disagree"
    );
}

/// No orphan: every registered tool is routed to its implementation on
/// the endpoint that serves it. Called with no arguments, each answers as
/// a tool (a result or a tool error such as a validation failure), never
/// with the protocol's unknown-tool error (-32602) that a catalog entry
/// without a registration, or a registration without a catalog entry,
/// would get.
#[tokio::test]
async fn every_registered_tool_dispatches() {
    let app = common::spawn().await;
    let mut aap = common::TestApp::attach(&app.base());
    aap.url = format!("{}/aap/org.lakeshore-auto-group/mcp", app.base());
    for registration in gateway::tools::REGISTRY {
        let client = if registration.name.starts_with("aap_") {
            &aap
        } else {
            &app
        };
        let reply = client
            .modern(
                "tools/call",
                json!({"name": registration.name, "arguments": {}}),
            )
            .await;
        assert_eq!(reply.status, 200, "{}: {}", registration.name, reply.raw);
        let result = reply.result();
        assert!(
            result["isError"].is_boolean() && result["structuredContent"].is_object(),
            "{}: {}",
            registration.name,
            reply.raw
        );
        assert_ne!(
            result["structuredContent"]["code"],
            json!("dealeragent.internal"),
            "{}: {}",
            registration.name,
            reply.raw
        );
    }
    // And a name that is not registered is the protocol error.
    let reply = app
        .modern(
            "tools/call",
            json!({"name": "dealeragent.no_such_tool", "arguments": {}}),
        )
        .await;
    assert_eq!(reply.error_code(), -32602, "{}", reply.raw);
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

/// An AAP error object, as `tools::aap_map::error_object` writes it (the
/// error model of the AAP compatibility tools, docs/compatibility.md).
fn aap_error() -> Value {
    serde_json::json!({
        "@type": "https://autoagentprotocol.org/extensions/aap/error",
        "type": "aap.error",
        "error_id": "err.0194c1d2-0000-7000-8000-000000000001",
        "code": "SCHEMA_VALIDATION_FAILED",
        "message": "The arguments do not satisfy this tool's input schema.",
        "retryable": false,
        "details": {"dap_code": "dealeragent.validation.invalid"},
        "created_at": "2026-07-28T12:00:00.000Z"
    })
}

/// The published `outputSchema` admits the error object of the tool's own
/// error model (the DAP error of error.schema.json; AAP's `aap.error` for the AAP
/// compatibility tools, docs/compatibility.md), but
/// the gateway's own check of a successful result stays the success shape
/// alone: a tool that returned an error-shaped object as a success would
/// still be refused (dealeragent.internal), exactly as before.
#[test]
fn published_output_schemas_admit_the_dap_error_but_success_validation_stays_strict() {
    let catalog = Catalog::load().unwrap();
    for tool in &catalog.tools {
        let error = match tool.error_model {
            gateway::catalog::ErrorModel::Dap => dap_error(),
            gateway::catalog::ErrorModel::Aap => aap_error(),
        };
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
    let yaml = include_str!("../../../capabilities.yaml").replace(
        "manifest.schema.json#/$defs/manifestRequest",
        "manifest.schema.json#/$defs/noSuchDef",
    );
    let err = Catalog::from_sources(&yaml, SCHEMA_FILES).unwrap_err();
    assert!(err.to_string().contains("noSuchDef"), "{err}");
}

#[test]
fn a_catalog_tool_without_a_profile_entry_is_refused() {
    let yaml = include_str!("../../../capabilities.yaml").replace(
        "tools: [dealeragent.discovery.get_manifest, dealeragent.dealer.get]",
        "tools: [dealeragent.discovery.get_manifest]",
    );
    assert_ne!(
        yaml,
        include_str!("../../../capabilities.yaml"),
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
    let err =
        Catalog::from_sources(include_str!("../../../capabilities.yaml"), &files).unwrap_err();
    assert!(err.to_string().contains("money"), "{err}");
}

/// `tools/list` over real HTTP stays at most 50 KB in all
/// (it was 157,776 bytes before), and every `$ref` in it resolves inside the
/// schema that holds it. Prints the bytes per tool for docs/benchmarks.md.
/// Every served tool is listed once: the DAP tools on `/mcp`, the AAP
/// binding's on each organization's AAP endpoint (docs/mcp.md "The AAP endpoints"); each list is
/// held to the budget.
#[tokio::test]
async fn tools_list_over_http_is_at_most_50_kb_and_has_no_dangling_ref() {
    let app = common::spawn().await;
    let mut aap = common::TestApp::attach(&app.base());
    aap.url = format!("{}/aap/org.lakeshore-auto-group/mcp", app.base());
    let mut listed = 0;
    for client in [&app, &aap] {
        listed += tools_list_within_budget(client).await;
    }
    assert_eq!(listed, gateway::tools::REGISTRY.len());
}

/// The checks above for one endpoint's `tools/list`; the number of tools.
async fn tools_list_within_budget(app: &common::TestApp) -> usize {
    let reply = app.modern("tools/list", json!({})).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    let tools = reply.result()["tools"].as_array().unwrap();
    println!("{}:", app.url);
    let bytes = |v: &Value| serde_json::to_string(v).unwrap().len();
    let mut resolved = 0;
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        println!(
            "{name}: tool {} inputSchema {} outputSchema {} description {}",
            bytes(tool),
            bytes(&tool["inputSchema"]),
            bytes(&tool["outputSchema"]),
            tool["description"].as_str().unwrap().len()
        );
        for member in ["inputSchema", "outputSchema"] {
            let schema = &tool[member];
            let mut found = Vec::new();
            refs(schema, &mut found);
            for r in found {
                let pointer = r
                    .strip_prefix('#')
                    .unwrap_or_else(|| panic!("{name} {member}: external ref {r}"));
                assert!(
                    schema.pointer(pointer).is_some(),
                    "{name} {member}: dangling {r}"
                );
                resolved += 1;
            }
            // "No duplicated enums": each list of allowed values is written
            // once per schema and shared by reference.
            let mut lists = Vec::new();
            enum_lists(schema, &mut lists);
            let distinct: BTreeSet<&String> = lists.iter().collect();
            assert_eq!(distinct.len(), lists.len(), "{name} {member}: {lists:?}");
            // Both compile as published (a client's first step).
            jsonschema::draft202012::options()
                .should_validate_formats(true)
                .build(schema)
                .unwrap_or_else(|e| panic!("{name} {member} does not compile: {e}"));
        }
    }
    // The walk above is not vacuous: shared definitions are referenced.
    assert!(resolved > 0);
    println!("tools/list response body: {} bytes", reply.raw.len());
    assert!(
        reply.raw.len() <= 50_000,
        "tools/list is {} bytes; the budget (docs/benchmarks.md) is 50,000",
        reply.raw.len()
    );
    tools.len()
}

/// Every `enum` array below `v`, as text.
fn enum_lists(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                if k == "enum" {
                    out.push(c.to_string());
                } else {
                    enum_lists(c, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|c| enum_lists(c, out)),
        _ => {}
    }
}

/// Valid arguments per tool, as rich as each schema allows: every optional
/// member the input definition has, so that mutating them reaches every
/// part of the schema.
fn valid_arguments(tool: &str) -> Vec<Value> {
    let org = "org.example-group";
    let rooftop = "rt.example-north";
    let selectors = [
        json!({"vehicle_id": "veh.0001"}),
        json!({"vin": "1HGCM82633A004352"}),
        json!({"stock_number": "S-1001"}),
    ];
    let with = |base: Value, extra: &Value| {
        let mut out = base;
        for (k, v) in extra.as_object().unwrap() {
            out[k] = v.clone();
        }
        out
    };
    match tool {
        "dealeragent.discovery.get_manifest" => vec![json!({})],
        "dealeragent.dealer.get" => vec![
            json!({}),
            json!({"organization_id": org}),
            json!({"organization_id": org, "rooftop_ids": [rooftop, "rt.example-south"]}),
        ],
        "dealeragent.inventory.search" => vec![
            json!({"organization_id": org}),
            json!({
                "organization_id": org,
                "rooftop_ids": [rooftop],
                "query": "2021 civic",
                "filters": {
                    "vehicle_type": ["car", "suv"],
                    "make": ["Honda"],
                    "model": ["Civic"],
                    "condition": ["used", "certified"],
                    "year_min": 2015,
                    "year_max": 2024,
                    "price_min": {"amount_minor": 1_000_000, "currency": "USD"},
                    "price_max": {"amount_minor": 4_000_000, "currency": "USD"},
                    "odometer_min": {"value": 0, "unit": "mi"},
                    "odometer_max": {"value": 100_000, "unit": "km"},
                    "inventory_age_min_days": 0,
                    "inventory_age_max_days": 90,
                    "history_report_status": ["available"],
                    "certification_type": ["not_certified"],
                    "availability": ["available", "in_transit"],
                    "vin": "1HGCM82633A004352",
                    "stock_number": "S-1001"
                },
                "sort": {"field": "advertised_price", "order": "asc"},
                "page": {"cursor": "c.abc", "limit": 100}
            }),
        ],
        "dealeragent.inventory.get_vehicle" => selectors
            .iter()
            .map(|s| with(json!({"organization_id": org, "rooftop_id": rooftop}), s))
            .collect(),
        "dealeragent.inventory.verify_availability" => selectors
            .iter()
            .map(|s| {
                with(
                    json!({"organization_id": org, "rooftop_id": rooftop, "purpose": "display"}),
                    s,
                )
            })
            .collect(),
        "dealeragent.pricing.get_disclosure" => vec![
            json!({"organization_id": org, "rooftop_id": rooftop, "vehicle_id": "veh.0001"}),
            json!({
                "organization_id": org, "rooftop_id": rooftop, "vehicle_id": "veh.0001",
                "jurisdiction": {"country": "US", "subdivision": "US-IL", "postal_code": "60601"},
                "payment_mode": "lease"
            }),
        ],
        "dealergateway.offers.evaluate" => selectors
            .iter()
            .map(|s| {
                with(
                    json!({
                        "organization_id": org, "rooftop_id": rooftop,
                        "profile": {
                            "payment_mode": "unknown",
                            "jurisdiction": {"country": "CA", "subdivision": "CA-ON", "postal_code": "M5V 2T6"},
                            "claims": {"residency": true, "loyalty": false, "military": "unknown"},
                            "as_of": "2026-07-28T12:00:00Z"
                        }
                    }),
                    s,
                )
            })
            .collect(),
        "dealeragent.inventory.get_used_vehicle_details" => selectors
            .iter()
            .map(|s| with(json!({"organization_id": org, "rooftop_id": rooftop}), s))
            .collect(),
        "aap_dealer_information" => vec![
            json!({"type": "dealer.information.request"}),
            json!({"type": "dealer.information.request", "dealer_id": org}),
        ],
        "aap_inventory_facets" => vec![json!({
            "type": "inventory.facets.request", "dealer_id": org,
            "filters": {"make": ["Ford"], "model": ["F-150"], "condition": ["used", "cpo"],
                        "vehicle_type": ["car"], "status": ["available", "pending"],
                        "rooftops": ["Example North"], "year_min": 2020, "year_max": 2026,
                        "mileage_max": 50000, "vin": "1HGCM82633A004352", "stock": "S-1001",
                        "query": "awd"}
        })],
        "aap_inventory_search" => vec![json!({
            "type": "inventory.search.request", "dealer_id": org,
            "filters": {"make": ["Ford"], "model": ["F-150"], "condition": ["new"],
                        "vehicle_type": ["motorcycle"], "status": ["intransit"],
                        "rooftops": ["Example North"], "year_min": 2020, "year_max": 2026,
                        "mileage_max": 50000, "vin": "1HGCM82633A004352", "stock": "S-1001",
                        "query": "awd"},
            "pagination": {"skip": 20, "limit": 20},
            "sort": {"field": "mileage", "order": "asc"},
            "privacy": {"anonymous": true}
        })],
        "aap_inventory_vehicle" => vec![
            json!({"type": "inventory.vehicle.request", "dealer_id": org, "vehicle_id": "veh.0001"}),
            json!({"type": "inventory.vehicle.request", "vin": "1HGCM82633A004352"}),
            json!({"type": "inventory.vehicle.request", "stock": "S-1001"}),
        ],
        other => panic!("no sample arguments for tool {other}; add them to this test"),
    }
}

/// Every property name and every string `enum`/`const` value in a schema:
/// what the mutations below add and substitute.
fn vocabulary(schema: &Value, names: &mut BTreeSet<String>, strings: &mut BTreeSet<String>) {
    match schema {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "properties"
                    && let Some(props) = v.as_object()
                {
                    names.extend(props.keys().cloned());
                }
                if k == "enum" || k == "const" {
                    let values = v.as_array().cloned().unwrap_or_else(|| vec![v.clone()]);
                    strings.extend(values.iter().filter_map(|s| s.as_str().map(str::to_owned)));
                }
                vocabulary(v, names, strings);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| vocabulary(i, names, strings)),
        _ => {}
    }
}

/// Values that sit on both sides of each kind of rule in the schemas:
/// types, lengths, bounds, patterns, formats, uniqueness, closed objects.
fn value_pool(strings: &BTreeSet<String>) -> Vec<Value> {
    let mut pool = vec![
        Value::Null,
        json!(true),
        json!(false),
        json!(0),
        json!(-1),
        json!(1),
        json!(1.5),
        json!(100),
        json!(101),
        json!(1885),
        json!(2200),
        json!(2201),
        json!(2_592_001),
        json!(""),
        json!("x"),
        json!("a b"),
        json!("A".repeat(129)),
        json!("b".repeat(501)),
        json!("c".repeat(2049)),
        json!("US"),
        json!("us"),
        json!("USD"),
        json!("US-IL"),
        json!("60601-1234567"),
        json!("1HGCM82633A004352"),
        json!("1HGCM82633A00435O"),
        json!("2026-07-28T12:00:00Z"),
        json!("2026-07-28 12:00:00"),
        json!("2026-13-40T25:61:61Z"),
        json!([]),
        json!(["x"]),
        json!(["x", "x"]),
        json!([1]),
        json!({}),
        json!({"unexpected_member": 1}),
        json!({"amount_minor": 100, "currency": "USD"}),
        json!({"amount_minor": -1, "currency": "USD"}),
        json!({"value": 10, "unit": "km"}),
        json!({"value": 10, "unit": "furlong"}),
        json!({"field": "year", "order": "desc"}),
        json!({"cursor": "c.1", "limit": 0}),
        json!({"country": "US"}),
        json!({"payment_mode": "cash", "jurisdiction": {"country": "US"}}),
    ];
    for s in strings {
        pool.push(json!(s));
        pool.push(json!([s]));
        pool.push(json!([s, s]));
    }
    pool
}

/// Every JSON pointer to a value inside `v` (the root excluded).
fn pointers(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, c) in map {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                pointers(c, &p, out);
            }
        }
        Value::Array(items) => {
            for (i, c) in items.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(c, &p, out);
            }
        }
        _ => {}
    }
}

fn mutations(sample: &Value, names: &BTreeSet<String>, pool: &[Value]) -> Vec<Value> {
    let mut out = vec![sample.clone()];
    let mut at = Vec::new();
    pointers(sample, "", &mut at);
    for p in &at {
        let (parent, last) = p.rsplit_once('/').unwrap();
        // Remove the member or element.
        let mut removed = sample.clone();
        match removed.pointer_mut(if parent.is_empty() { "" } else { parent }) {
            Some(Value::Object(m)) => {
                m.shift_remove(&last.replace("~1", "/").replace("~0", "~"));
            }
            Some(Value::Array(a)) => {
                a.remove(last.parse::<usize>().unwrap());
            }
            _ => {}
        }
        out.push(removed);
        // Replace it with each pooled value.
        for value in pool {
            let mut replaced = sample.clone();
            *replaced.pointer_mut(p).unwrap() = value.clone();
            out.push(replaced);
        }
    }
    // Add every known member name, with each pooled value, to every object.
    let mut objects = vec![String::new()];
    objects.extend(
        at.iter()
            .filter(|p| sample.pointer(p).is_some_and(Value::is_object))
            .cloned(),
    );
    for object in &objects {
        for name in names
            .iter()
            .chain(std::iter::once(&"unexpected_member".to_owned()))
        {
            for value in pool {
                let mut added = sample.clone();
                if let Some(Value::Object(m)) = added.pointer_mut(object) {
                    m.insert(name.clone(), value.clone());
                }
                out.push(added);
            }
        }
    }
    out
}

fn violations(validator: &jsonschema::Validator, instance: &Value) -> BTreeSet<(String, String)> {
    validator
        .iter_errors(instance)
        .map(|e| (e.instance_path().to_string(), e.kind().keyword().to_owned()))
        .collect()
}

/// The compact `inputSchema` of `tools/list` (docs/mcp.md) validates
/// exactly as the full DAP definition bundled from `schemas/`: the same
/// arguments pass, and a failing one fails at the same places for the same
/// keywords (so `field_errors` are unchanged). Thousands of arguments per
/// tool: rich valid ones, each member removed or replaced by values on both
/// sides of every rule, every known member added anywhere. The gateway's
/// own check (`validate_input`) agrees too.
#[test]
fn compact_input_schemas_accept_and_reject_exactly_what_the_full_schemas_do() {
    let catalog = Catalog::load().unwrap();
    for tool in &catalog.tools {
        let build = |schema: &Value| {
            jsonschema::draft202012::options()
                .should_validate_formats(true)
                .build(schema)
                .unwrap()
        };
        let full = build(&tool.input_schema);
        let compact = build(&tool.published_input_schema);
        let mut names = BTreeSet::new();
        let mut strings = BTreeSet::new();
        vocabulary(&tool.input_schema, &mut names, &mut strings);
        let pool = value_pool(&strings);
        let (mut valid, mut invalid) = (0, 0);
        for sample in valid_arguments(&tool.name) {
            assert!(
                full.is_valid(&sample),
                "{}: sample {sample} must be valid",
                tool.name
            );
            for args in mutations(&sample, &names, &pool) {
                let expected = violations(&full, &args);
                assert_eq!(
                    violations(&compact, &args),
                    expected,
                    "{}: {args}",
                    tool.name
                );
                assert_eq!(
                    tool.validate_input(&args).is_ok(),
                    expected.is_empty(),
                    "{}: {args}",
                    tool.name
                );
                if expected.is_empty() {
                    valid += 1;
                } else {
                    invalid += 1;
                }
            }
        }
        println!(
            "{}: {valid} valid and {invalid} invalid arguments agree",
            tool.name
        );
        assert!(valid > 0 && invalid > 0, "{}", tool.name);
    }
}

/// The compact input schema is smaller than the bundle and keeps a
/// property's description (what a model needs) but not the root's, which
/// would repeat the tool description from capabilities.yaml.
#[test]
fn compact_input_schemas_keep_property_descriptions_only() {
    let catalog = Catalog::load().unwrap();
    let search = catalog.tool("dealeragent.inventory.search").unwrap();
    let schema = &search.published_input_schema;
    assert!(schema.get("description").is_none());
    assert!(
        schema["properties"]["query"]["description"]
            .as_str()
            .is_some_and(|d| !d.is_empty())
    );
    for tool in &catalog.tools {
        let full = serde_json::to_string(&tool.input_schema).unwrap().len();
        let compact = serde_json::to_string(&tool.published_input_schema)
            .unwrap()
            .len();
        assert!(compact < full, "{}: {compact} >= {full}", tool.name);
    }
}

/// Search, get_vehicle and the manifest are assembled
/// from pieces validated where they were produced. Every assembled result
/// of the demo must still satisfy the tool's own (success) output schema,
/// and its text content must be exactly its structured content.
#[tokio::test]
async fn assembled_results_satisfy_their_output_schemas_and_match_their_text() {
    let app = crate::common::spawn().await;
    let catalog = Catalog::load().unwrap();
    let check = |name: &str, result: &Value| {
        assert_eq!(result["isError"], false, "{name}: {result}");
        let structured = &result["structuredContent"];
        let text = result["content"][0]["text"].as_str().expect("text content");
        assert_eq!(
            &serde_json::from_str::<Value>(text).unwrap(),
            structured,
            "{name}: text and structured content differ"
        );
        let tool = catalog.tool(name).unwrap();
        if let Err(errors) = tool.validate_output(structured) {
            panic!("{name}: {errors:?}");
        }
    };
    let manifest = app
        .call_tool("dealeragent.discovery.get_manifest", serde_json::json!({}))
        .await;
    check("dealeragent.discovery.get_manifest", &manifest);
    // Twice: the second answer comes from the manifest cache.
    let again = app
        .call_tool("dealeragent.discovery.get_manifest", serde_json::json!({}))
        .await;
    assert_eq!(again["structuredContent"], manifest["structuredContent"]);
    let orgs: Vec<String> = manifest["structuredContent"]["organization_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap().to_owned())
        .collect();
    assert!(!orgs.is_empty());
    let mut vehicles = 0;
    let mut used = 0;
    let mut disclosures = 0;
    let mut evaluated = 0;
    for org in &orgs {
        for limit in [1, 20, 100] {
            // The pages of 20 in full, their vehicles compared below with
            // get_vehicle's (full by default); the others concise (the
            // default).
            let mut args = serde_json::json!({"organization_id": org, "page": {"limit": limit}});
            if limit == 20 {
                args["detail"] = serde_json::json!("full");
            }
            for _page in 0..3 {
                let result = app
                    .call_tool("dealeragent.inventory.search", args.clone())
                    .await;
                check("dealeragent.inventory.search", &result);
                let page = &result["structuredContent"];
                for v in page["vehicles"].as_array().unwrap() {
                    vehicles += 1;
                    used += usize::from(v.get("used_vehicle").is_some());
                    if limit == 20 {
                        let one = app
                            .call_tool(
                                "dealeragent.inventory.get_vehicle",
                                serde_json::json!({
                                    "organization_id": org,
                                    "rooftop_id": v["rooftop_id"],
                                    "vehicle_id": v["vehicle_id"],
                                }),
                            )
                            .await;
                        check("dealeragent.inventory.get_vehicle", &one);
                        let mut alone = one["structuredContent"].clone();
                        let mut listed = v.clone();
                        // The same pieces: equal but for the clock-dependent
                        // members, which were written a moment apart.
                        for x in [&mut alone, &mut listed] {
                            if let Some(u) = x.get_mut("used_vehicle") {
                                u["inventory_tenure"]
                                    .as_object_mut()
                                    .unwrap()
                                    .remove("age_as_of");
                            }
                        }
                        if alone != listed
                            && listed["freshness"]["state"] == serde_json::json!("current")
                            && alone["freshness"]["state"] == serde_json::json!("stale")
                        {
                            // Aged past its window between the two reads (the
                            // demo's records are current for 15 minutes after
                            // the store was seeded): that instant has passed.
                            let passed = alone["freshness"]["valid_until"]
                                .as_str()
                                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                                .is_some_and(|t| t <= chrono::Utc::now());
                            assert!(passed, "stale before its window ended: {alone}");
                            listed["freshness"]["state"] = serde_json::json!("stale");
                            // A used vehicle's tenure carries the record's
                            // freshness too, and aged with it (CI dry run
                            // at 6ac25f5 straddled the instant here).
                            let tenure = "/used_vehicle/inventory_tenure/freshness/state";
                            if alone.pointer(tenure) == Some(&serde_json::json!("stale"))
                                && let Some(state) = listed.pointer_mut(tenure)
                            {
                                *state = serde_json::json!("stale");
                            }
                        }
                        assert_eq!(alone, listed);
                        disclosures += 1;
                        let args = serde_json::json!({
                            "organization_id": org,
                            "rooftop_id": v["rooftop_id"],
                            "vehicle_id": v["vehicle_id"],
                        });
                        let first = app
                            .call_tool("dealeragent.pricing.get_disclosure", args.clone())
                            .await;
                        check("dealeragent.pricing.get_disclosure", &first);
                        let args_again = args.clone();
                        let second = app
                            .call_tool("dealeragent.pricing.get_disclosure", args)
                            .await;
                        check("dealeragent.pricing.get_disclosure", &second);
                        let offers = |r: &Value| {
                            r["structuredContent"]["extensions"]["dealergateway.offers"].clone()
                        };
                        if let Some(evaluation) = offers(&first).as_object() {
                            // The evaluation itself, never the placeholder;
                            // the second answer reuses it (same as_of).
                            assert!(evaluation.contains_key("best_stack"), "{evaluation:?}");
                            if offers(&first) != offers(&second) {
                                // An evaluation is reused for at most 60 s, and
                                // this test runs for minutes under load: the first
                                // answer may have been the last use of an
                                // evaluation made on an earlier page. Then the
                                // second is a fresh one, later, and a third answer
                                // must reuse it.
                                let as_of =
                                    |r: &Value| offers(r)["as_of"].as_str().map(str::to_owned);
                                assert!(
                                    as_of(&first) < as_of(&second),
                                    "two evaluations in a row: {first} then {second}"
                                );
                                let third = app
                                    .call_tool(
                                        "dealeragent.pricing.get_disclosure",
                                        args_again.clone(),
                                    )
                                    .await;
                                check("dealeragent.pricing.get_disclosure", &third);
                                assert_eq!(offers(&second), offers(&third));
                            }
                            evaluated += 1;
                        }
                    }
                }
                match page["page"]["next_cursor"].as_str() {
                    Some(cursor) => args["page"]["cursor"] = serde_json::json!(cursor),
                    None => break,
                }
            }
        }
    }
    assert!(
        vehicles > 100,
        "the demo pages rendered {vehicles} vehicles"
    );
    assert!(used > 0, "no used-vehicle summary was rendered");
    assert!(
        disclosures > 20 && evaluated > 0,
        "{disclosures} disclosures, {evaluated} with offers"
    );
}
