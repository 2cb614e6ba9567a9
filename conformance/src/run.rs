//! Running the suite against a gateway URL.

use std::path::PathBuf;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::checks;
use crate::client::{Client, ClientError};
use crate::context::{self, Ctx};
use crate::report::{CheckRecord, Summary};
use crate::schemas::{SchemaError, SchemaSet};

/// The version of this suite, pinned in every report and claim.
pub use crate::version::SUITE_VERSION;

/// `dap-conformance run` arguments (flattened into `claim`).
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// The gateway's MCP endpoint, e.g. http://127.0.0.1:8080/mcp
    #[arg(long)]
    pub url: String,
    /// A named grant, ROLE=TOKEN (repeatable). Roles the checks use:
    /// inventory, pricing-only, partner, other-org.
    #[arg(long = "token", value_name = "ROLE=TOKEN")]
    pub token: Vec<String>,
    /// Write the JSON report to this file.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Validate against the published DAP 0.1 schemas in this directory
    /// instead of the embedded ones.
    #[arg(long = "dap-schemas", value_name = "DIR")]
    pub dap_schemas: Option<PathBuf>,
    /// Run only the checks whose id starts with this prefix (e.g. DAPC-ISO).
    #[arg(long)]
    pub only: Option<String>,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub url: String,
    /// (role, token) pairs.
    pub tokens: Vec<(String, String)>,
    pub dap_schemas: Option<PathBuf>,
    pub only: Option<String>,
    /// A browser origin the gateway allows (CORS check); `None` skips it.
    pub origin: Option<String>,
}

/// Why the suite could not run (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("usage: {0}")]
    Usage(String),
    #[error("connection: {0}")]
    Connection(#[from] ClientError),
    #[error("schemas: {0}")]
    Schemas(#[from] SchemaError),
    #[error("cannot encode the report: {0}")]
    Encode(String),
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct RunOutput {
    pub report: Value,
    /// The exact bytes `--report` writes (pretty JSON and a newline).
    pub report_bytes: Vec<u8>,
    /// Every required check passed (none failed, none skipped).
    pub claimable: bool,
    pub failed_required: usize,
}

impl RunOptions {
    pub fn from_args(a: &RunArgs) -> Result<Self, RunError> {
        let mut tokens = Vec::new();
        for t in &a.token {
            let Some((role, token)) = t.split_once('=') else {
                return Err(RunError::Usage(
                    "--token takes ROLE=TOKEN (e.g. --token inventory=dgw_...)".into(),
                ));
            };
            let (role, token) = (role.trim(), token.trim());
            if role.is_empty() || token.is_empty() {
                return Err(RunError::Usage(
                    "--token ROLE=TOKEN needs both parts".into(),
                ));
            }
            if tokens.iter().any(|(r, _): &(String, String)| r == role) {
                return Err(RunError::Usage(format!("role {role:?} given twice")));
            }
            tokens.push((role.to_owned(), token.to_owned()));
        }
        let parsed = reqwest::Url::parse(&a.url)
            .map_err(|e| RunError::Usage(format!("--url {:?}: {e}", a.url)))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(RunError::Usage("--url must be http:// or https://".into()));
        }
        Ok(Self {
            url: a.url.clone(),
            tokens,
            dap_schemas: a.dap_schemas.clone(),
            only: a.only.clone(),
            origin: None,
        })
    }
}

/// Run every check (or those `only` selects) against `opts.url`.
pub async fn run_suite(opts: &RunOptions) -> Result<RunOutput, RunError> {
    let started_at = now();
    let schemas = match &opts.dap_schemas {
        Some(dir) => SchemaSet::from_dir(dir)?,
        None => SchemaSet::embedded()?,
    };
    let client = Client::new(&opts.url, &opts.tokens)?;
    let mut cx = context::discover(client, schemas, &opts.url).await?;
    cx.origin = opts.origin.clone();
    let mut records: Vec<CheckRecord> = Vec::new();
    for check in checks::all() {
        if let Some(prefix) = &opts.only
            && !check.id.starts_with(prefix.as_str())
        {
            continue;
        }
        records.push(check.execute(&cx).await);
    }
    let summary = Summary::of(&records);
    let report = json!({
        "suite": "dap-conformance",
        "suite_version": SUITE_VERSION,
        "target": {"endpoint": opts.url},
        "started_at": started_at,
        "completed_at": now(),
        "roles": cx.client.roles(),
        "schema_source": cx.schemas.source,
        "summary": summary.to_json(),
        "result": if summary.required_failed == 0 && summary.required_skipped == 0 { "pass" } else { "fail" },
        "observed": observed(&cx),
        "notes": cx.notes,
        "checks": records.iter().map(CheckRecord::to_json).collect::<Vec<_>>(),
    });
    let mut report_bytes =
        serde_json::to_vec_pretty(&report).map_err(|e| RunError::Encode(e.to_string()))?;
    report_bytes.push(b'\n');
    for r in &records {
        println!("{}", r.line());
    }
    println!("{}", summary.line());
    Ok(RunOutput {
        report,
        report_bytes,
        claimable: summary.required_failed == 0 && summary.required_skipped == 0,
        failed_required: summary.required_failed,
    })
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// What the gateway said about itself (the claim pins these).
/// Organization and rooftop ids are those of the anonymous manifest: a
/// claim is public, and a partner-only rooftop must not surface in it.
fn observed(cx: &Ctx) -> Value {
    let m = &cx.manifest;
    let discover = cx.discover.result().cloned().unwrap_or(Value::Null);
    let server_info = discover
        .get("_meta")
        .and_then(|x| x.get("io.modelcontextprotocol/serverInfo"))
        .or_else(|| discover.get("serverInfo"))
        .map(|s| json!({"name": s.get("name"), "version": s.get("version")}))
        .unwrap_or(Value::Null);
    let capabilities = m
        .get("capabilities")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut profiles = Vec::new();
    let mut extensions = Vec::new();
    let mut scopes = std::collections::BTreeSet::new();
    for c in &capabilities {
        if let Some(p) = c.get("profile").and_then(Value::as_str) {
            if p.starts_with("dealeragent.") {
                profiles.push(p.to_owned());
            } else {
                extensions.push(p.to_owned());
            }
        }
        for s in c
            .get("scopes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(s) = s.as_str() {
                scopes.insert(s.to_owned());
            }
        }
    }
    collect_profiles(m.get("extensions").unwrap_or(&Value::Null), &mut extensions);
    extensions.sort();
    extensions.dedup();
    let digest = cx
        .manifest_exchange
        .as_ref()
        .and_then(|ex| ex.result())
        .and_then(|r| r.get("content"))
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .and_then(|b| b.get("text"))
        .and_then(Value::as_str)
        .map(|t| format!("sha256:{}", hex::encode(Sha256::digest(t.as_bytes()))));
    json!({
        "endpoint": cx.endpoint,
        "mcp_revisions": discover.get("supportedVersions").cloned().unwrap_or(json!([])),
        "server_info": server_info,
        "profiles": profiles,
        "extensions": extensions,
        "tools": cx.tool_names(),
        "resources": m.get("resources").cloned().unwrap_or(json!([])),
        "auth_modes": m.get("auth_modes").cloned().unwrap_or(json!([])),
        "scopes": scopes,
        "organization_ids": m.get("organization_ids").cloned().unwrap_or(json!([])),
        "rooftop_ids": m.get("rooftop_ids").cloned().unwrap_or(json!([])),
        "manifest_digest": digest,
    })
}

/// Every `profile` string under the manifest's extensions (extension
/// profiles such as `dealergateway.offers/0.1`).
fn collect_profiles(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if let Some(p) = map.get("profile").and_then(Value::as_str) {
                out.push(p.to_owned());
            }
            for child in map.values() {
                collect_profiles(child, out);
            }
        }
        Value::Array(items) => {
            for child in items {
                collect_profiles(child, out);
            }
        }
        _ => {}
    }
}
