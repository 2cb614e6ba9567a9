//! The tool catalog: `capabilities.yaml` plus the project's JSON Schemas.
//!
//! `capabilities.yaml` is the single source of every tool's metadata
//! (DAP-CORE-012): `tools/list`, the manifest and policy checks all come from
//! it. Both it and `schemas/` are compiled into the binary and loaded once at
//! start; validators are compiled once here and shared by every request.
//!
//! `tools/list` must publish self-contained schemas (no unresolved cross-file
//! `$ref`), so each tool's input and output definition is *bundled*: every
//! definition it reaches is copied into one `$defs` under its own name. The
//! schema files therefore keep definition names unique across files, which
//! [`Catalog::load`] checks.
//!
//! What `tools/list` publishes is smaller than the bundles (at most 50 KB
//! in all, docs/mcp.md): the exact compact `inputSchema` the gateway
//! also validates arguments against, and an abridged but sound
//! `outputSchema`; [`compact`] says how and why.

mod compact;
mod explain;
pub mod mcp_headers;
pub mod words;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The catalog as shipped with this binary.
const CAPABILITIES_YAML: &str = include_str!("../../capabilities.yaml");

/// Every schema file shipped with this binary, by file name.
pub const SCHEMA_FILES: &[(&str, &str)] = &[
    (
        "common.schema.json",
        include_str!("../../schemas/common.schema.json"),
    ),
    (
        "dealer.schema.json",
        include_str!("../../schemas/dealer.schema.json"),
    ),
    (
        "vehicle.schema.json",
        include_str!("../../schemas/vehicle.schema.json"),
    ),
    (
        "used-vehicle.schema.json",
        include_str!("../../schemas/used-vehicle.schema.json"),
    ),
    (
        "pricing.schema.json",
        include_str!("../../schemas/pricing.schema.json"),
    ),
    (
        "manifest.schema.json",
        include_str!("../../schemas/manifest.schema.json"),
    ),
    (
        "error.schema.json",
        include_str!("../../schemas/error.schema.json"),
    ),
    (
        "dealers-file.schema.json",
        include_str!("../../schemas/dealers-file.schema.json"),
    ),
    (
        "inventory-cells.schema.json",
        include_str!("../../schemas/inventory-cells.schema.json"),
    ),
    (
        "availability-source.schema.json",
        include_str!("../../schemas/availability-source.schema.json"),
    ),
    (
        "programs.schema.json",
        include_str!("../../schemas/programs.schema.json"),
    ),
    (
        "offers.schema.json",
        include_str!("../../schemas/offers.schema.json"),
    ),
    // The AAP compatibility adapter's own shapes (docs/compatibility.md).
    (
        "aap-common.schema.json",
        include_str!("../../schemas/aap-common.schema.json"),
    ),
    (
        "aap-dealer-information.schema.json",
        include_str!("../../schemas/aap-dealer-information.schema.json"),
    ),
    (
        "aap-inventory.schema.json",
        include_str!("../../schemas/aap-inventory.schema.json"),
    ),
    // The discovery documents (`wellknown`): DAP's static publication
    // at /.well-known/dealer-agent.json and this gateway's own document.
    (
        "well-known.schema.json",
        include_str!("../../schemas/well-known.schema.json"),
    ),
    (
        "dealer-agent-gateway.schema.json",
        include_str!("../../schemas/dealer-agent-gateway.schema.json"),
    ),
];

const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// The DAP error object (DAP 0.1 errors.md section 1): the
/// `structuredContent` of every tool result with `isError: true`.
const ERROR_DEFINITION: &str = "error.schema.json#/$defs/error";

/// AAP's typed error (`aap.error`): the `structuredContent` of every error
/// result of a tool whose `error_model` is `aap` (docs/compatibility.md).
const AAP_ERROR_DEFINITION: &str = "aap-common.schema.json#/$defs/aapError";

/// Which error object a tool answers with when it fails (catalog
/// `error_model`, default `dap`). The AAP compatibility tools answer with
/// AAP's own error model, as AAP's MCP binding requires; every other tool
/// with the DAP error object (DAP 0.1 errors.md section 1).
#[derive(Debug, Clone, Copy, Default, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ErrorModel {
    #[default]
    Dap,
    Aap,
}

/// Why the catalog could not be loaded. Any of these stops the server at
/// start: a gateway must never serve a catalog it cannot enforce.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("capabilities.yaml is not valid: {0}")]
    Yaml(String),
    #[error("schema file {file} is not valid JSON: {message}")]
    SchemaJson { file: String, message: String },
    #[error("schema reference {reference} cannot be resolved: {reason}")]
    Reference { reference: String, reason: String },
    #[error(
        "definition name {name} is defined in both {first} and {second}; names must be unique across schema files"
    )]
    DuplicateDefinition {
        name: String,
        first: String,
        second: String,
    },
    #[error("schema {reference} does not compile: {message}")]
    Compile { reference: String, message: String },
    #[error("catalog inconsistency: {0}")]
    Inconsistent(String),
}

/// MCP tool annotations (untrusted hints, DAP-CORE-013).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Annotations {
    pub read_only_hint: bool,
    pub destructive_hint: bool,
    pub idempotent_hint: bool,
    pub open_world_hint: bool,
}

/// The DAP safety metadata of one tool, published in its `_meta` and
/// enforced by policy (DAP-CORE-012).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Safety {
    pub effect: String,
    pub public_access: PublicAccess,
    pub confirmation: String,
    pub idempotency: String,
    pub pii_input: String,
    pub pii_output: String,
    pub retention: String,
    pub reversible: bool,
    pub legal_or_financial_commitment: bool,
    pub freshness_authority: String,
    pub audit: String,
}

/// Who may call a tool without credentials (catalog `public_access`).
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PublicAccess {
    /// Anyone, always.
    Allowed,
    /// Anonymous callers see only rooftops whose publication policy allows it.
    AllowedByDealerPolicy,
    /// Anonymous callers are rate limited; authenticated callers are not.
    RateLimitedOrAuthenticated,
    /// Credentials are required.
    Authenticated,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCatalog {
    catalog_version: u32,
    bundle: String,
    schema_base: String,
    profiles: Vec<Profile>,
    tools: Vec<RawTool>,
    /// Scopes of the gateway's own non-MCP surfaces (docs/console.md).
    #[serde(default)]
    gateway_scopes: Vec<GatewayScope>,
    /// Documentation only: profiles a later release will add.
    #[serde(default)]
    #[expect(dead_code, reason = "read by humans, ignored by the loader")]
    planned_profiles: Option<Value>,
}

/// One conformance profile the gateway serves.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub id: String,
    pub status: String,
    pub depends_on: Vec<String>,
    pub scopes: Vec<String>,
    pub tools: Vec<String>,
    pub resources: Vec<String>,
    /// Tools of the protocol this profile adapts that the gateway does not
    /// serve, each with why (`aap_lead_submit`, a write). The
    /// manifest and the discovery documents publish them.
    #[serde(default)]
    pub not_offered: Vec<NotOffered>,
}

/// A tool a compatibility profile deliberately does not serve.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NotOffered {
    pub tool: String,
    pub reason: String,
}

/// A scope checked by one of the gateway's own surfaces rather than by a
/// tool (`dealergateway:console:read` for `/console/`). It is
/// part of the scope model a grant may carry, but no DAP profile names it,
/// so it never appears in the manifest or `tools/list`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct GatewayScope {
    pub scope: String,
    /// The path prefix of the surface that checks it.
    pub surface: String,
    pub description: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: String,
    title: String,
    description: String,
    profile: String,
    scope: Option<String>,
    input_schema: String,
    output_schema: String,
    annotations: Annotations,
    safety: Safety,
    #[serde(default)]
    error_model: ErrorModel,
    /// Arguments mirrored into `Mcp-Param-*` headers (`x-mcp-header`).
    #[serde(default)]
    mcp_headers: BTreeMap<String, String>,
}

/// One tool with its bundled schemas and compiled validators.
pub struct Tool {
    pub name: String,
    pub title: String,
    pub description: String,
    pub profile: String,
    pub scope: Option<String>,
    pub annotations: Annotations,
    pub safety: Safety,
    /// The error object the tool fails with (DAP's, or AAP's).
    pub error_model: ErrorModel,
    /// The catalog's `FILE#/$defs/NAME` of the input and output definitions.
    pub input_reference: String,
    pub output_reference: String,
    /// The input definition bundled in full, as the schema files write it.
    pub input_schema: Value,
    /// What `tools/list` publishes as `inputSchema` and what arguments are
    /// validated against: exactly as strict as [`Tool::input_schema`],
    /// without its annotations and repetitions (see [`compact`]).
    pub published_input_schema: Value,
    /// The success shape alone: what the gateway validates its own results
    /// against before sending them (as strict as the DAP schema).
    pub output_schema: Value,
    /// What `tools/list` publishes as `outputSchema`: the success shape or
    /// the DAP error object, abridged. See [`publish_output_schema`].
    pub published_output_schema: Value,
    /// Arguments a client mirrors into `Mcp-Param-*` headers (the
    /// catalog's `mcp_headers`, published as `x-mcp-header`).
    pub param_headers: Vec<mcp_headers::ParamHeader>,
    input_validator: jsonschema::Validator,
    output_validator: jsonschema::Validator,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// One schema violation, safe to show to the caller: it names the place and
/// the rule, never the offending value (DAP-ERR-002).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldError {
    /// JSON pointer (RFC 6901) into the tool arguments, always starting
    /// with `/` as DAP 0.1 requires (published error.schema.json:
    /// `instance_location` pattern `^/`); [`ROOT_POINTER`] stands for the
    /// arguments object as a whole. Build it with [`FieldError::new`].
    pub instance_location: String,
    /// The JSON Schema keyword that failed.
    pub keyword: String,
    /// A value-free explanation.
    pub explanation: String,
}

/// `instance_location` of a failure that belongs to the arguments object as
/// a whole (not an object, a root-level `oneOf`, an unexpected top-level
/// member). RFC 6901 spells the whole document `""`, which DAP 0.1's
/// pattern `^/` does not admit; `/` is the closest pointer it does.
pub const ROOT_POINTER: &str = "/";

impl FieldError {
    /// A field error at `pointer`; the empty (whole-document) pointer is
    /// written [`ROOT_POINTER`] so every location starts with `/` (DAP 0.1).
    pub fn new(
        pointer: impl Into<String>,
        keyword: impl Into<String>,
        explanation: impl Into<String>,
    ) -> Self {
        let pointer = pointer.into();
        Self {
            instance_location: if pointer.is_empty() {
                ROOT_POINTER.to_owned()
            } else {
                pointer
            },
            keyword: keyword.into(),
            explanation: explanation.into(),
        }
    }
}

/// `parent` extended by one member name, escaped per RFC 6901 (`~` as
/// `~0`, `/` as `~1`).
fn child_pointer(parent: &str, member: &str) -> String {
    format!("{parent}/{}", member.replace('~', "~0").replace('/', "~1"))
}

/// The loaded catalog.
#[derive(Debug)]
pub struct Catalog {
    pub bundle: String,
    pub schema_base: String,
    pub profiles: Vec<Profile>,
    /// Scopes of the gateway's own surfaces (see [`GatewayScope`]).
    pub gateway_scopes: Vec<GatewayScope>,
    /// Sorted by name (deterministic `tools/list`, MCP).
    pub tools: Vec<Tool>,
    by_name: HashMap<String, usize>,
    /// The schema files as parsed, by file name (served at `/schemas/`).
    pub schema_documents: BTreeMap<String, Value>,
    dealers_file_schema: Value,
    dealers_file_validator: jsonschema::Validator,
}

impl Catalog {
    /// Load and check the catalog shipped with this binary.
    pub fn load() -> Result<Self, CatalogError> {
        Self::from_sources(CAPABILITIES_YAML, SCHEMA_FILES)
    }

    /// Load and check a catalog from the given sources (used by tests).
    pub fn from_sources(yaml: &str, schema_files: &[(&str, &str)]) -> Result<Self, CatalogError> {
        let raw: RawCatalog =
            yaml_serde::from_str(yaml).map_err(|e| CatalogError::Yaml(e.to_string()))?;
        if raw.catalog_version != 1 {
            return Err(CatalogError::Yaml(format!(
                "catalog_version {} is not supported (expected 1)",
                raw.catalog_version
            )));
        }
        let mut documents = BTreeMap::new();
        for (file, text) in schema_files {
            let doc: Value = serde_json::from_str(text).map_err(|e| CatalogError::SchemaJson {
                file: (*file).to_owned(),
                message: e.to_string(),
            })?;
            documents.insert((*file).to_owned(), doc);
        }
        let definitions = index_definitions(&documents)?;
        let error_schema = bundle(&definitions, ERROR_DEFINITION)?;
        let aap_error_schema = bundle(&definitions, AAP_ERROR_DEFINITION)?;

        let mut tools = Vec::with_capacity(raw.tools.len());
        for t in raw.tools {
            let input_schema = bundle(&definitions, &t.input_schema)?;
            let output_schema = bundle(&definitions, &t.output_schema)?;
            if input_schema.get("type") != Some(&json!("object")) {
                return Err(CatalogError::Inconsistent(format!(
                    "tool {}: input schema root must be type object (MCP)",
                    t.name
                )));
            }
            let mut published_input_schema = compact::input(&input_schema).map_err(|reason| {
                CatalogError::Inconsistent(format!("tool {}: input schema: {reason}", t.name))
            })?;
            let param_headers = mcp_headers::declare(&mut published_input_schema, &t.mcp_headers)
                .map_err(|reason| {
                CatalogError::Inconsistent(format!("tool {}: {reason}", t.name))
            })?;
            if published_input_schema.get("type") != Some(&json!("object")) {
                return Err(CatalogError::Inconsistent(format!(
                    "tool {}: published input schema root must be type object (MCP)",
                    t.name
                )));
            }
            // Arguments are checked against the published schema, so what a
            // client reads is exactly what is enforced.
            let input_validator = compile_input(&t.input_schema, &published_input_schema)?;
            let output_validator = compile(&t.output_schema, &output_schema)?;
            let tool_error_schema = match t.error_model {
                ErrorModel::Dap => &error_schema,
                ErrorModel::Aap => &aap_error_schema,
            };
            let published_output_schema = publish_output_schema(
                &t.output_schema,
                &output_schema,
                tool_error_schema,
                t.error_model,
            )
            .map_err(|reason| CatalogError::Inconsistent(format!("tool {}: {reason}", t.name)))?;
            // Compiled once so a published schema that does not compile
            // stops the server at start, like the others.
            compile(&t.output_schema, &published_output_schema)?;
            tools.push(Tool {
                name: t.name,
                title: t.title,
                description: t.description,
                profile: t.profile,
                scope: t.scope,
                annotations: t.annotations,
                safety: t.safety,
                error_model: t.error_model,
                input_reference: t.input_schema,
                output_reference: t.output_schema,
                input_schema,
                published_input_schema,
                output_schema,
                published_output_schema,
                param_headers,
                input_validator,
                output_validator,
            });
        }
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let dealers_file_schema =
            bundle(&definitions, "dealers-file.schema.json#/$defs/dealersFile")?;
        let dealers_file_validator = compile("dealers-file", &dealers_file_schema)?;

        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect::<HashMap<_, _>>();
        let catalog = Catalog {
            bundle: raw.bundle,
            schema_base: raw.schema_base,
            profiles: raw.profiles,
            gateway_scopes: raw.gateway_scopes,
            tools,
            by_name,
            schema_documents: documents,
            dealers_file_schema,
            dealers_file_validator,
        };
        catalog.check_consistency()?;
        Ok(catalog)
    }

    /// Profiles and tools must point at each other exactly once.
    fn check_consistency(&self) -> Result<(), CatalogError> {
        if self.by_name.len() != self.tools.len() {
            return Err(CatalogError::Inconsistent("duplicate tool name".into()));
        }
        // A gateway scope is checked by its surface, never by a tool: one a
        // profile also declared would be published as a DAP scope.
        for gateway_scope in &self.gateway_scopes {
            if self
                .profiles
                .iter()
                .any(|p| p.scopes.contains(&gateway_scope.scope))
            {
                return Err(CatalogError::Inconsistent(format!(
                    "gateway scope {} is also a profile scope",
                    gateway_scope.scope
                )));
            }
        }
        for tool in &self.tools {
            if !valid_tool_name(&tool.name) {
                return Err(CatalogError::Inconsistent(format!(
                    "tool name {} breaks the MCP name rule [A-Za-z0-9_.-]{{1,128}}",
                    tool.name
                )));
            }
            let Some(profile) = self.profiles.iter().find(|p| p.id == tool.profile) else {
                return Err(CatalogError::Inconsistent(format!(
                    "tool {} names unknown profile {}",
                    tool.name, tool.profile
                )));
            };
            if !profile.tools.contains(&tool.name) {
                return Err(CatalogError::Inconsistent(format!(
                    "profile {} does not list its tool {}",
                    profile.id, tool.name
                )));
            }
            if let Some(scope) = &tool.scope
                && !profile.scopes.contains(scope)
            {
                return Err(CatalogError::Inconsistent(format!(
                    "tool {} requires scope {scope} that profile {} does not declare",
                    tool.name, profile.id
                )));
            }
            if !tool.annotations.read_only_hint {
                return Err(CatalogError::Inconsistent(format!(
                    "tool {} is not read-only; this gateway serves read-only profiles only",
                    tool.name
                )));
            }
        }
        for profile in &self.profiles {
            // A tool said not to be offered must indeed not be served.
            for absent in &profile.not_offered {
                if self.by_name.contains_key(&absent.tool) {
                    return Err(CatalogError::Inconsistent(format!(
                        "profile {} says {} is not offered, but the catalog defines it",
                        profile.id, absent.tool
                    )));
                }
            }
            for name in &profile.tools {
                if !self.by_name.contains_key(name) {
                    return Err(CatalogError::Inconsistent(format!(
                        "profile {} lists tool {name} that the catalog does not define",
                        profile.id
                    )));
                }
            }
        }
        Ok(())
    }

    /// The gateway scope checked by `surface` (e.g. `/console/`), if any.
    pub fn gateway_scope(&self, surface: &str) -> Option<&GatewayScope> {
        self.gateway_scopes.iter().find(|s| s.surface == surface)
    }

    /// The tool named `name`, if the catalog defines it.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// Validate a dealers file document (already parsed from YAML or JSON).
    pub fn validate_dealers_file(&self, doc: &Value) -> Result<(), Vec<FieldError>> {
        explain::collect_errors(&self.dealers_file_validator, &self.dealers_file_schema, doc)
    }

    /// Every resource URI or template the catalog's profiles declare.
    pub fn resources(&self) -> Vec<String> {
        let set: BTreeSet<&String> = self.profiles.iter().flat_map(|p| &p.resources).collect();
        set.into_iter().cloned().collect()
    }
}

impl Tool {
    /// Its MCP `tools/list` entry, from the catalog only (both endpoints
    /// list their tools with it).
    pub fn list_entry(&self) -> Value {
        let mut annotations = serde_json::to_value(&self.annotations).unwrap_or_default();
        annotations["title"] = serde_json::json!(self.title);
        serde_json::json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.published_input_schema,
            "outputSchema": self.published_output_schema,
            "annotations": annotations,
            "_meta": {
                "com.dealeragentprotocol/catalog": {
                    "profile": self.profile,
                    "scope": self.scope,
                    "safety": self.safety,
                }
            }
        })
    }

    /// Check tool arguments against the input schema (DAP-ERR-002: the
    /// returned errors never carry input values).
    pub fn validate_input(&self, args: &Value) -> Result<(), Vec<FieldError>> {
        explain::collect_errors(&self.input_validator, &self.published_input_schema, args)
    }

    /// Check a tool result against the output schema. The errors are for the
    /// log only; callers see `dealeragent.internal`.
    pub fn validate_output(&self, output: &Value) -> Result<(), Vec<FieldError>> {
        explain::collect_errors(&self.output_validator, &self.output_schema, output)
    }
}

/// MCP tool-name rule: 1–128 characters from `[A-Za-z0-9_.-]`.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Index every `$defs` entry of every file by name, refusing duplicates.
fn index_definitions(
    documents: &BTreeMap<String, Value>,
) -> Result<HashMap<String, (String, Value)>, CatalogError> {
    let mut defs: HashMap<String, (String, Value)> = HashMap::new();
    for (file, doc) in documents {
        let Some(file_defs) = doc.get("$defs").and_then(Value::as_object) else {
            continue;
        };
        for (name, def) in file_defs {
            if let Some((first, _)) = defs.get(name) {
                return Err(CatalogError::DuplicateDefinition {
                    name: name.clone(),
                    first: first.clone(),
                    second: file.clone(),
                });
            }
            defs.insert(name.clone(), (file.clone(), def.clone()));
        }
    }
    Ok(defs)
}

/// Split `file.schema.json#/$defs/name` into its parts.
fn parse_reference(reference: &str) -> Option<(&str, &str)> {
    let (file, pointer) = reference.split_once('#')?;
    let name = pointer.strip_prefix("/$defs/")?;
    if name.contains('/') {
        return None;
    }
    Some((file, name))
}

/// Build a self-contained schema for one definition: `$ref` to it plus every
/// definition it reaches, with cross-file references rewritten to local ones.
pub fn bundle_reference(
    documents: &BTreeMap<String, Value>,
    reference: &str,
) -> Result<Value, CatalogError> {
    let definitions = index_definitions(documents)?;
    bundle(&definitions, reference)
}

fn bundle(
    definitions: &HashMap<String, (String, Value)>,
    reference: &str,
) -> Result<Value, CatalogError> {
    let bad = |reason: &str| CatalogError::Reference {
        reference: reference.to_owned(),
        reason: reason.to_owned(),
    };
    let (file, root) =
        parse_reference(reference).ok_or_else(|| bad("expected FILE#/$defs/NAME"))?;
    match definitions.get(root) {
        Some((def_file, _)) if def_file == file => {}
        Some(_) => return Err(bad("definition lives in another file")),
        None => return Err(bad("no such definition")),
    }
    let mut out_defs = Map::new();
    let mut queue = vec![root.to_owned()];
    while let Some(name) = queue.pop() {
        if out_defs.contains_key(&name) {
            continue;
        }
        let (def_file, def) = definitions
            .get(&name)
            .ok_or_else(|| CatalogError::Reference {
                reference: name.clone(),
                reason: "no such definition".into(),
            })?;
        let mut def = def.clone();
        rewrite_refs(&mut def, def_file, definitions, &mut queue)?;
        out_defs.insert(name, def);
    }
    let root_def = &out_defs[root];
    let mut schema = Map::new();
    schema.insert("$schema".into(), json!(DRAFT_2020_12));
    if let Some(t) = root_def.get("type") {
        schema.insert("type".into(), t.clone());
    }
    if let Some(d) = root_def.get("description") {
        schema.insert("description".into(), d.clone());
    }
    schema.insert("$ref".into(), json!(format!("#/$defs/{root}")));
    schema.insert("$defs".into(), Value::Object(sorted(out_defs)));
    Ok(Value::Object(schema))
}

/// The `outputSchema` a tool publishes: `{"type": "object", "anyOf":
/// [success, DAP error]}` over one `$defs`, abridged by [`compact::output`].
///
/// MCP clients that validate `structuredContent` against `outputSchema`
/// (the TypeScript SDK, MCP Inspector 0.15 and 2.x) do so for error results
/// too, and DAP requires an error result's `structuredContent` to be the
/// DAP error object (DAP 0.1 errors.md section 1); with the success shape
/// alone every tool error failed client-side validation. The
/// root stays `type: object` (MCP: `outputSchema` root is an object). The
/// error definitions are added once per tool and shared with the success
/// shape where both use them (`freshness`, `timestamp`, ...), since
/// definition names are unique across the schema files.
///
/// The abridgement admits every result the full definitions admit (so a
/// validating client never rejects a correct result) but writes
/// definitions below [`compact::SUCCESS_DEPTH`] as their JSON type; the
/// gateway itself still checks each result against the full success
/// definition, and `/schemas/` serves the full files (docs/mcp.md).
///
/// An AAP compatibility tool (`error_model: aap`) publishes `anyOf: [AAP
/// response, aap.error]` (AAP MCP binding: the output schema accepts the
/// typed response or `aap.error`), with only the root members of each
/// published (depth 0): every served tool shares one `tools/list`, which
/// must stay within 50 KB (docs/benchmarks.md, "tools/list size").
fn publish_output_schema(
    reference: &str,
    success: &Value,
    error: &Value,
    model: ErrorModel,
) -> Result<Value, String> {
    let root_name = |schema: &Value| {
        schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .map(str::to_owned)
            .ok_or_else(|| "bundled schema has no root #/$defs/ reference".to_owned())
    };
    let defs_of = |schema: &Value| {
        schema
            .get("$defs")
            .and_then(Value::as_object)
            .cloned()
            .ok_or_else(|| "bundled schema has no $defs".to_owned())
    };
    if success.get("type") != Some(&json!("object")) {
        return Err("output schema root must be type object (MCP)".into());
    }
    let mut defs = defs_of(success)?;
    for (name, def) in defs_of(error)? {
        match defs.get(&name) {
            Some(existing) if existing != &def => {
                return Err(format!("definition {name} differs between bundles"));
            }
            Some(_) => {}
            None => {
                defs.insert(name, def);
            }
        }
    }
    let success_root = root_name(success)?;
    let error_root = root_name(error)?;
    let (description, success_depth) = match model {
        ErrorModel::Dap => (
            format!(
                "The result, the DAP error object if isError, or {{unchanged, contentVersion}} if ifNoneMatch matched. Abridged; full: /schemas/{reference}"
            ),
            compact::SUCCESS_DEPTH,
        ),
        ErrorModel::Aap => (
            format!(
                "The AAP response, aap.error if isError, or {{unchanged, contentVersion}} if ifNoneMatch matched. Abridged; full: /schemas/{reference}"
            ),
            0,
        ),
    };
    let mut schema = compact::output(
        &defs,
        &[
            (success_root.as_str(), success_depth),
            (error_root.as_str(), compact::ERROR_DEPTH),
        ],
        &description,
    )?;
    // The short answer to a conditional re-read is a successful result
    // too, so its structuredContent must conform (MCP; the official SDK
    // clients check it): a third, closed branch (docs/agents.md
    // "Conditional re-reads"). Full answers still match the DAP branches.
    if let Some(Value::Array(branches)) = schema.get_mut("anyOf") {
        branches.push(crate::content_version::unchanged_schema());
    }
    Ok(schema)
}

fn sorted(map: Map<String, Value>) -> Map<String, Value> {
    let mut entries: Vec<_> = map.into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.into_iter().collect()
}

fn rewrite_refs(
    value: &mut Value,
    current_file: &str,
    definitions: &HashMap<String, (String, Value)>,
    queue: &mut Vec<String>,
) -> Result<(), CatalogError> {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if key == "$ref" {
                    let Some(reference) = child.as_str() else {
                        return Err(CatalogError::Reference {
                            reference: child.to_string(),
                            reason: "$ref must be a string".into(),
                        });
                    };
                    let (file, name) =
                        parse_reference(reference).ok_or_else(|| CatalogError::Reference {
                            reference: reference.to_owned(),
                            reason:
                                "only #/$defs/NAME and FILE#/$defs/NAME references are supported"
                                    .into(),
                        })?;
                    let target_file = if file.is_empty() { current_file } else { file };
                    match definitions.get(name) {
                        Some((f, _)) if f == target_file => {}
                        _ => {
                            return Err(CatalogError::Reference {
                                reference: reference.to_owned(),
                                reason: format!("no definition {name} in {target_file}"),
                            });
                        }
                    }
                    queue.push(name.to_owned());
                    *child = json!(format!("#/$defs/{name}"));
                } else {
                    rewrite_refs(child, current_file, definitions, queue)?;
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rewrite_refs(item, current_file, definitions, queue)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The validator of a tool's input: the published schema, plus the one
/// rule this gateway reads into it: an integer is written as an integer
/// (`20`, not `20.0` or `2e1`; [`words::WHOLE_LITERAL`]). JSON Schema calls
/// a whole-valued float an integer, but the tools read integers, and such
/// a literal otherwise failed inside the tool as an internal error.
fn compile_input(reference: &str, schema: &Value) -> Result<jsonschema::Validator, CatalogError> {
    let mut marked = schema.clone();
    words::mark_integers(&mut marked);
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .with_keyword(words::WHOLE_LITERAL, |_, _, _| {
            Ok(Box::new(words::WholeLiteral))
        })
        .build(&marked)
        .map_err(|e| CatalogError::Compile {
            reference: reference.to_owned(),
            message: e.to_string(),
        })
}

fn compile(reference: &str, schema: &Value) -> Result<jsonschema::Validator, CatalogError> {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| CatalogError::Compile {
            reference: reference.to_owned(),
            message: e.to_string(),
        })
}
