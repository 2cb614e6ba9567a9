//! The DAP 0.1 schemas every tool output is validated against.
//!
//! Default: this repository's own `schemas/` files (wire-compatible with
//! DAP 0.1), embedded at build time. With `--dap-schemas DIR`: the
//! published DAP 0.1 schema files found in DIR. Cross-file `$ref`s
//! (`common.schema.json#/$defs/...`) resolve through a registry keyed by
//! each file's `$id`, so nothing is fetched over the network.

use std::path::Path;

use serde_json::{Value, json};

/// The schema files embedded as the default source.
const EMBEDDED: &[(&str, &str)] = &[
    (
        "common.schema.json",
        include_str!("../../schemas/common.schema.json"),
    ),
    (
        "dealer.schema.json",
        include_str!("../../schemas/dealer.schema.json"),
    ),
    (
        "error.schema.json",
        include_str!("../../schemas/error.schema.json"),
    ),
    (
        "manifest.schema.json",
        include_str!("../../schemas/manifest.schema.json"),
    ),
    (
        "pricing.schema.json",
        include_str!("../../schemas/pricing.schema.json"),
    ),
    (
        "vehicle.schema.json",
        include_str!("../../schemas/vehicle.schema.json"),
    ),
    (
        "used-vehicle.schema.json",
        include_str!("../../schemas/used-vehicle.schema.json"),
    ),
];

/// Which DAP object a tool output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Manifest,
    Dealer,
    Search,
    Vehicle,
    Availability,
    Disclosure,
    /// The optional used-vehicle profile's disclosure.
    UsedVehicle,
    Error,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Manifest,
        Kind::Dealer,
        Kind::Search,
        Kind::Vehicle,
        Kind::Availability,
        Kind::Disclosure,
        Kind::UsedVehicle,
        Kind::Error,
    ];

    /// The file and the `$defs` names that hold this object, in the order
    /// tried (ours first, then the published names); with none found, the
    /// file's root schema is used (the published error schema has no
    /// `$defs` entry for the error itself).
    fn location(self) -> (&'static str, &'static [&'static str]) {
        match self {
            Kind::Manifest => ("manifest.schema.json", &["manifest", "capabilityManifest"]),
            Kind::Dealer => (
                "dealer.schema.json",
                &["dealerOrganization", "organization", "dealerResponse"],
            ),
            Kind::Search => ("vehicle.schema.json", &["searchResponse", "searchResult"]),
            Kind::Vehicle => ("vehicle.schema.json", &["vehicle", "vehicleDetail"]),
            Kind::Availability => (
                "vehicle.schema.json",
                &["availabilityResult", "availabilityResponse"],
            ),
            Kind::Disclosure => ("pricing.schema.json", &["pricingDisclosure", "disclosure"]),
            Kind::UsedVehicle => ("used-vehicle.schema.json", &["usedVehicleDetails"]),
            Kind::Error => ("error.schema.json", &["error", "errorObject"]),
        }
    }

    /// The DAP object a tool's successful output is, by tool name.
    pub fn of_tool(tool: &str) -> Option<Kind> {
        match tool {
            "dealeragent.discovery.get_manifest" => Some(Kind::Manifest),
            "dealeragent.dealer.get" => Some(Kind::Dealer),
            "dealeragent.inventory.search" => Some(Kind::Search),
            "dealeragent.inventory.get_vehicle" => Some(Kind::Vehicle),
            "dealeragent.inventory.verify_availability" => Some(Kind::Availability),
            "dealeragent.pricing.get_disclosure" => Some(Kind::Disclosure),
            "dealeragent.inventory.get_used_vehicle_details" => Some(Kind::UsedVehicle),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Kind::Manifest => "manifest",
            Kind::Dealer => "dealer response",
            Kind::Search => "search result",
            Kind::Vehicle => "vehicle detail",
            Kind::Availability => "availability result",
            Kind::Disclosure => "pricing disclosure",
            Kind::UsedVehicle => "used-vehicle disclosure",
            Kind::Error => "error object",
        }
    }
}

/// Why the schemas could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("cannot read schema directory {dir}: {message}")]
    Read { dir: String, message: String },
    #[error("schema file {file} is not JSON: {message}")]
    Parse { file: String, message: String },
    #[error("schema file {file} is missing from the schema source")]
    Missing { file: String },
    #[error("schema for the {kind} does not compile: {message}")]
    Compile { kind: &'static str, message: String },
}

/// Compiled validators, one per [`Kind`].
pub struct SchemaSet {
    /// Where the schemas came from, for the report.
    pub source: String,
    validators: Vec<(Kind, String, jsonschema::Validator)>,
}

impl SchemaSet {
    /// This repository's schemas, embedded.
    pub fn embedded() -> Result<Self, SchemaError> {
        let mut docs = Vec::new();
        for (name, text) in EMBEDDED {
            docs.push(((*name).to_owned(), parse(name, text)?));
        }
        Self::build(docs, "embedded: this repository's schemas/".to_owned())
    }

    /// Every `*.json` file in `dir`.
    pub fn from_dir(dir: &Path) -> Result<Self, SchemaError> {
        let read_err = |e: std::io::Error| SchemaError::Read {
            dir: dir.display().to_string(),
            message: e.to_string(),
        };
        let mut docs = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(read_err)? {
            let path = entry.map_err(read_err)?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
                continue;
            };
            if !name.ends_with(".json") {
                continue;
            }
            let text = std::fs::read_to_string(&path).map_err(read_err)?;
            docs.push((name.clone(), parse(&name, &text)?));
        }
        Self::build(docs, format!("directory: {}", dir.display()))
    }

    fn build(docs: Vec<(String, Value)>, source: String) -> Result<Self, SchemaError> {
        let base = "https://dap-conformance.invalid/schemas/";
        // Each file is registered under its own `$id` (which its relative
        // `$ref`s resolve against) and under a neutral base by file name.
        let mut pairs: Vec<(String, jsonschema::Resource)> = Vec::new();
        let mut ids = std::collections::BTreeMap::new();
        for (name, doc) in &docs {
            let id = doc
                .get("$id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("{base}{name}"), str::to_owned);
            pairs.push((id.clone(), jsonschema::Resource::from_contents(doc.clone())));
            ids.insert(name.clone(), (id, doc.clone()));
        }
        let registry = jsonschema::Registry::new()
            .extend(pairs)
            .and_then(jsonschema::RegistryBuilder::prepare)
            .map_err(|e| SchemaError::Compile {
                kind: "schema registry",
                message: e.to_string(),
            })?;
        let mut validators = Vec::new();
        for kind in Kind::ALL {
            let (file, names) = kind.location();
            // The optional profile's file may be absent from a directory of
            // core schemas: its checks then say there is no schema.
            if kind == Kind::UsedVehicle && !ids.contains_key(file) {
                continue;
            }
            let (id, doc) = ids.get(file).ok_or_else(|| SchemaError::Missing {
                file: file.to_owned(),
            })?;
            let defs = doc.get("$defs");
            let pointer = names
                .iter()
                .find(|n| defs.and_then(|d| d.get(**n)).is_some())
                .map_or_else(|| id.clone(), |n| format!("{id}#/$defs/{n}"));
            // Formats (uri, date-time, ...) are asserted: strict clients
            // check them, as the gateway's own output validation does.
            let validator = jsonschema::draft202012::options()
                .should_validate_formats(true)
                .with_registry(&registry)
                .build(&json!({"$ref": pointer}))
                .map_err(|e| SchemaError::Compile {
                    kind: kind.label(),
                    message: e.to_string(),
                })?;
            validators.push((kind, pointer, validator));
        }
        Ok(Self { source, validators })
    }

    /// Validation errors of `value` as `kind` (empty when valid), each as
    /// `instance pointer: message`.
    pub fn errors(&self, kind: Kind, value: &Value) -> Vec<String> {
        let Some((_, _, validator)) = self.validators.iter().find(|(k, _, _)| *k == kind) else {
            return vec![format!("no schema for the {}", kind.label())];
        };
        validator
            .iter_errors(value)
            .take(10)
            .map(|e| {
                format!(
                    "{}: {}",
                    e.instance_path(),
                    crate::report::cap(&e.to_string(), 200)
                )
            })
            .collect()
    }

    /// The schema pointer used for `kind`.
    pub fn pointer(&self, kind: Kind) -> &str {
        self.validators
            .iter()
            .find(|(k, _, _)| *k == kind)
            .map_or("", |(_, p, _)| p.as_str())
    }
}

fn parse(name: &str, text: &str) -> Result<Value, SchemaError> {
    serde_json::from_str(text).map_err(|e| SchemaError::Parse {
        file: name.to_owned(),
        message: e.to_string(),
    })
}

/// Compile a tool's self-contained `outputSchema` (as tools/list gives it).
pub fn compile_tool_schema(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::draft202012::options()
        .build(schema)
        .map_err(|e| e.to_string())
}
