//! Compare a verified claim with what a gateway serves now (docs/conformance.md
//! "Verifying a claim": the claim's tools and profiles match what the URL
//! serves now).
//!
//! A small self-contained MCP 2026-07-28 client: stateless requests, each
//! with its own `params._meta` (protocol version and client capabilities
//! are required) and the mirror headers `MCP-Protocol-Version`,
//! `Mcp-Method` and `Mcp-Name` (docs/mcp.md). Anonymous: a claim's public
//! inventory must be visible without credentials.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{ClaimError, DAP_PREFIX, MODERN_REVISION, VerifiedClaim};

/// Per-request timeout; a gateway that cannot answer a list in this time
/// cannot be compared.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Upper bound on `tools/list` pages followed (a server that keeps handing
/// out cursors must not loop us forever).
const MAX_PAGES: usize = 50;

struct Client {
    http: reqwest::Client,
    url: String,
    next_id: u64,
}

impl Client {
    fn new(url: &str) -> Result<Self, ClaimError> {
        // reqwest is built without a default TLS provider; install ring once,
        // as the gateway does (an Err only means one is already installed).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| live(url, format!("cannot build an HTTP client: {e}")))?;
        Ok(Self {
            http,
            url: url.to_owned(),
            next_id: 1,
        })
    }

    async fn request(
        &mut self,
        method: &str,
        mut params: Map<String, Value>,
    ) -> Result<Value, ClaimError> {
        params.insert(
            "_meta".into(),
            json!({
                "io.modelcontextprotocol/protocolVersion": MODERN_REVISION,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {
                    "name": "dap-conformance",
                    "version": env!("CARGO_PKG_VERSION"),
                },
            }),
        );
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut request = self
            .http
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", MODERN_REVISION)
            .header("Mcp-Method", method)
            .json(&body);
        if let Some(name) = name.filter(|n| n.is_ascii()) {
            request = request.header("Mcp-Name", name);
        }
        let response = request
            .send()
            .await
            .map_err(|e| live(&self.url, format!("{method}: request failed: {e}")))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| live(&self.url, format!("{method}: reading the body failed: {e}")))?;
        let reply: Value = serde_json::from_str(&text).map_err(|_| {
            live(
                &self.url,
                format!("{method}: HTTP {status}, the body is not JSON"),
            )
        })?;
        if let Some(error) = reply.get("error") {
            return Err(live(
                &self.url,
                format!(
                    "{method}: HTTP {status}, JSON-RPC error {} {}",
                    error["code"],
                    error["message"].as_str().unwrap_or_default()
                ),
            ));
        }
        match reply.get("result") {
            Some(result) if reply.get("id") == Some(&json!(id)) => Ok(result.clone()),
            Some(_) => Err(live(
                &self.url,
                format!("{method}: the response id does not echo the request id"),
            )),
            None => Err(live(
                &self.url,
                format!("{method}: HTTP {status}, neither result nor error"),
            )),
        }
    }

    /// Every tool name `tools/list` serves, following `nextCursor`.
    async fn tool_names(&mut self) -> Result<BTreeSet<String>, ClaimError> {
        let mut names = BTreeSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut params = Map::new();
            if let Some(c) = cursor.take() {
                params.insert("cursor".into(), Value::String(c));
            }
            let result = self.request("tools/list", params).await?;
            let Some(tools) = result["tools"].as_array() else {
                return Err(live(&self.url, "tools/list: no `tools` array".to_owned()));
            };
            for tool in tools {
                let Some(name) = tool["name"].as_str() else {
                    return Err(live(&self.url, "tools/list: a tool has no name".to_owned()));
                };
                names.insert(name.to_owned());
            }
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(names),
            }
        }
        Err(live(
            &self.url,
            format!("tools/list: still paging after {MAX_PAGES} pages"),
        ))
    }

    /// The anonymous DAP manifest (`dealeragent.discovery.get_manifest`).
    async fn manifest(&mut self) -> Result<Value, ClaimError> {
        let mut params = Map::new();
        params.insert("name".into(), json!("dealeragent.discovery.get_manifest"));
        params.insert("arguments".into(), json!({}));
        let result = self.request("tools/call", params).await?;
        if result["isError"] == json!(true) {
            return Err(live(
                &self.url,
                format!(
                    "get_manifest returned a tool error: {}",
                    result["structuredContent"]["code"]
                ),
            ));
        }
        match result.get("structuredContent") {
            Some(m) if m.is_object() => Ok(m.clone()),
            Some(_) | None => Err(live(
                &self.url,
                "get_manifest: no structuredContent object".to_owned(),
            )),
        }
    }
}

fn live(url: &str, reason: String) -> ClaimError {
    ClaimError::Live {
        url: url.to_owned(),
        reason,
    }
}

/// Name every difference between a claimed and a served set.
fn compare(
    kind: &str,
    claimed: &BTreeSet<String>,
    served: &BTreeSet<String>,
    out: &mut Vec<String>,
) {
    for c in claimed.difference(served) {
        out.push(format!("{kind} {c} is claimed but not served"));
    }
    for s in served.difference(claimed) {
        out.push(format!("{kind} {s} is served but not claimed"));
    }
}

/// The differences between a verified claim and what `url` (an MCP
/// endpoint) serves now: DAP tools (`tools/list`, `dealeragent.*` names; the
/// claim pins extension tools through its extension profiles), resources
/// and profiles (the anonymous manifest's `resources` and
/// `capabilities[].profile`).
pub async fn verify_against_live(claim: &VerifiedClaim, url: &str) -> Result<(), ClaimError> {
    let mut client = Client::new(url)?;
    let served_tools: BTreeSet<String> = client
        .tool_names()
        .await?
        .into_iter()
        .filter(|t| t.starts_with(DAP_PREFIX))
        .collect();
    let manifest = client.manifest().await?;
    let served_resources = super::strings(&manifest["resources"]);
    let served_profiles: BTreeSet<String> = manifest["capabilities"]
        .as_array()
        .map(|caps| {
            caps.iter()
                .filter_map(|c| c["profile"].as_str())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();

    let mut differences = Vec::new();
    compare("tool", &claim.tools(), &served_tools, &mut differences);
    compare(
        "resource",
        &claim.resources(),
        &served_resources,
        &mut differences,
    );
    compare(
        "profile",
        &claim.profiles(),
        &served_profiles,
        &mut differences,
    );
    if differences.is_empty() {
        Ok(())
    } else {
        Err(ClaimError::LiveMismatch {
            url: url.to_owned(),
            differences,
        })
    }
}
