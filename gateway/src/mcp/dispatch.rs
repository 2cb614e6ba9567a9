//! JSON-RPC method dispatch shared by both MCP eras.
//!
//! Each method returns its result body plus, for the six cacheable results
//! of 2026-07-28, its cache hints. [`decorate`] then shapes it for the era:
//! modern results carry `resultType`, server identity in `_meta` and
//! `ttlMs`/`cacheScope`; legacy (2025-11-25) results carry none of these.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::error::RpcError;
use super::rendered::{RenderedResult, ToolListCache};
use super::{Caller, Endpoint, Era};
use crate::state::AppState;
use crate::tools::{self, ToolContext};
use crate::{content_version, resources};

/// A method's result before era-specific decoration.
pub struct MethodResult {
    pub body: Map<String, Value>,
    /// `(ttlMs, cacheScope)` for cacheable results (MCP caching).
    pub cache: Option<(u64, &'static str)>,
    /// A tool result's structured content, serialized once by the tool
    /// pipeline (docs/benchmarks.md "Where output is validated"): written as `structuredContent` and, as a
    /// JSON string, as the text content block, without being parsed again;
    /// with the content blocks that follow the text block.
    pub structured: Option<ToolContent>,
    /// A tool's DAP error code when it refused or failed (`isError`), for
    /// the metrics and the access log.
    pub code: Option<tools::ErrorCode>,
    /// A result already decorated and serialized for each era (the
    /// `tools/list` of `/mcp`, [`ToolListCache`]): written as it is, in place
    /// of `body`, which is then empty.
    pub rendered: Option<Arc<RenderedResult>>,
}

/// What a tool result writes besides its other members (docs/mcp.md
/// "Content blocks"): the structured content, which is also the text
/// block, and the `resource_link` blocks after it.
pub struct ToolContent {
    pub structured: tools::JsonText,
    /// Serialized content blocks, each after its comma (empty for none).
    pub links: String,
    /// The text block when it is not the structured content: the words of
    /// the short answer to a conditional re-read (docs/agents.md
    /// "Conditional re-reads").
    pub text: Option<String>,
}

/// Instructions for agents, sent by `server/discover` and `initialize`.
pub const INSTRUCTIONS: &str = "Dealer Agent Protocol 0.1 gateway (read-only retail data). \
Start with dealeragent.discovery.get_manifest to learn which organizations, rooftops, tools \
and freshness SLAs this gateway serves. Every record carries provenance and freshness: treat \
stale or unknown data as stale or unknown, never as current, and never describe an unknown \
amount as zero.";

/// The server identity (`serverInfo`).
pub fn server_info() -> Value {
    json!({"name": "dealer-agent-gateway", "title": "Dealer Agent Gateway", "version": env!("CARGO_PKG_VERSION")})
}

/// What the server offers; both eras advertise the same features.
/// Prompts and completions: docs/mcp.md "Prompts and completions";
/// resource subscriptions and list changes: "Subscriptions".
pub fn capabilities() -> Value {
    json!({
        "tools": {},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {},
        "completions": {},
    })
}

/// [`capabilities`] without resource subscriptions: the stdio transport,
/// which has no listen stream (docs/mcp.md "stdio").
pub fn capabilities_without_subscriptions() -> Value {
    json!({"tools": {}, "resources": {}, "prompts": {}, "completions": {}})
}

/// What an endpoint offers: `/mcp` tools and resources; an AAP endpoint
/// tools only (the AAP binding defines no resources).
pub fn capabilities_of(endpoint: &Endpoint) -> Value {
    match endpoint {
        Endpoint::Dap => capabilities(),
        Endpoint::Aap { .. } => json!({"tools": {}}),
    }
}

/// The instructions of an endpoint (`server/discover`, `initialize`).
pub fn instructions_of(endpoint: &Endpoint) -> &'static str {
    match endpoint {
        Endpoint::Dap => INSTRUCTIONS,
        Endpoint::Aap { .. } => super::aap::INSTRUCTIONS,
    }
}

/// One request to route: its era, the endpoint it reached and its
/// envelope members.
#[derive(Clone, Copy)]
pub struct Call<'a> {
    pub era: Era,
    pub endpoint: &'a Endpoint,
    pub method: &'a str,
    pub params: &'a Value,
    pub trace_id: &'a str,
}

/// Route one request. `principal` is already authenticated. Every answer
/// is counted (docs/operations.md "Metrics") and its outcome noted for the
/// access log ("Logs"): `ok`, the DAP error code of a refused or failed
/// tool, or `jsonrpc.<code>` for a protocol error.
pub async fn dispatch(
    state: &Arc<AppState>,
    call: &Call<'_>,
    caller: &Caller,
) -> Result<MethodResult, RpcError> {
    let method = call.method;
    let started = std::time::Instant::now();
    let mut tool = None;
    let result = route(state, call, caller, &mut tool).await;
    let outcome = match &result {
        Ok(r) => r.code.map_or("ok", |c| c.as_str()).to_owned(),
        Err(e) => format!("jsonrpc.{}", e.code()),
    };
    crate::metrics::count_method(method, tool.as_deref(), &outcome, started);
    if outcome == tools::ErrorCode::RateLimited.as_str() {
        // The anonymous per-tool quota (the HTTP-edge limits count in the
        // transport).
        metrics::counter!(crate::metrics::RATE_LIMITED, "limit" => "tool_quota").increment(1);
    }
    crate::metrics::note(|f| {
        f.tool = tool;
        f.outcome = Some(outcome);
    });
    result
}

async fn route(
    state: &Arc<AppState>,
    call: &Call<'_>,
    caller: &Caller,
    tool: &mut Option<String>,
) -> Result<MethodResult, RpcError> {
    let Call {
        era,
        endpoint,
        method,
        params,
        trace_id,
    } = *call;
    let principal = &caller.principal;
    // The AAP binding is tools only: resource, prompt and completion
    // methods are not served on an AAP endpoint (its capabilities say so).
    let resources = matches!(endpoint, Endpoint::Dap);
    match (era, method) {
        (Era::Modern, "server/discover") => Ok(MethodResult {
            body: obj(json!({
                "supportedVersions": super::SUPPORTED_REVISIONS,
                "capabilities": capabilities_of(endpoint),
                "instructions": instructions_of(endpoint),
            })),
            cache: Some((3_600_000, "public")),
            structured: None,
            code: None,
            rendered: None,
        }),
        (Era::Legacy, "ping") => Ok(MethodResult {
            body: Map::new(),
            cache: None,
            structured: None,
            code: None,
            rendered: None,
        }),
        (_, "tools/list") => {
            reject_cursor(params)?;
            match endpoint {
                // The same for every caller: rendered once (ToolListCache).
                Endpoint::Dap => Ok(MethodResult {
                    body: Map::new(),
                    cache: None,
                    structured: None,
                    code: None,
                    rendered: Some(state.tool_lists.get(state)),
                }),
                // Private: the endpoint exists only for callers who may see
                // its organization, and its currencies are those of the
                // rooftops the caller may see (MCP caching: never shared
                // between authorization contexts), so it is built per
                // request and never cached.
                Endpoint::Aap { organization_id } => {
                    let tools = super::aap::tool_list(state, principal, organization_id).await?;
                    Ok(MethodResult {
                        body: obj(json!({ "tools": tools })),
                        cache: Some((state.directory_ttl_ms(), "private")),
                        structured: None,
                        code: None,
                        rendered: None,
                    })
                }
            }
        }
        (_, "tools/call") => {
            let request = ToolRequest {
                params,
                trace_id,
                endpoint,
            };
            tools_call(state, &request, caller, tool).await
        }
        (_, "resources/list") if resources => {
            reject_cursor(params)?;
            let (list, scope) = resources::list(state, principal)
                .await
                .map_err(|e| internal(&e))?;
            Ok(MethodResult {
                body: obj(json!({"resources": list})),
                cache: Some((state.directory_ttl_ms(), scope)),
                structured: None,
                code: None,
                rendered: None,
            })
        }
        (_, "resources/templates/list") if resources => {
            reject_cursor(params)?;
            Ok(MethodResult {
                body: obj(json!({"resourceTemplates": resources::templates()})),
                cache: Some((3_600_000, "public")),
                structured: None,
                code: None,
                rendered: None,
            })
        }
        (_, "prompts/list") if resources => {
            reject_cursor(params)?;
            Ok(MethodResult {
                body: obj(json!({"prompts": super::prompts::list()})),
                cache: Some((3_600_000, "public")),
                structured: None,
                code: None,
                rendered: None,
            })
        }
        (_, "prompts/get") if resources => Ok(MethodResult {
            body: obj(super::prompts::get(params)?),
            cache: None,
            structured: None,
            code: None,
            rendered: None,
        }),
        (_, "completion/complete") if resources => Ok(MethodResult {
            body: obj(super::completion::complete(state, principal, params).await?),
            cache: None,
            structured: None,
            code: None,
            rendered: None,
        }),
        (_, "resources/read") if resources => {
            let uri = params
                .get("uri")
                .and_then(Value::as_str)
                .ok_or_else(|| RpcError::InvalidParams("params.uri must be a string".into()))?;
            // A sharded replica never answers from an inventory it does not
            // hold (docs/operations.md "Shards"): 503, retryable elsewhere.
            if resources::inventory_organization(uri)
                .is_some_and(|org| !state.serves_organization(org))
            {
                return Err(RpcError::Unavailable(
                    "this gateway replica does not serve that organization (the gateway is sharded by organization); retry through the load balancer".into(),
                ));
            }
            let outcome = resources::read(state, principal, uri).await;
            // Authenticated reads are answered only once their audit event
            // is written (docs/tokens-and-audit.md "When the audit log
            // cannot be written"); anonymous reads are public and unaudited.
            if !audit_resource_read(state, caller, trace_id, uri, &outcome).await {
                return Err(RpcError::Unavailable(
                    "the audit log could not record this read, so it was not answered; retry shortly".into(),
                ));
            }
            match outcome {
                Ok(Some((contents, ttl_ms, scope))) => Ok(MethodResult {
                    body: versioned_contents(contents, params),
                    cache: Some((ttl_ms, scope)),
                    structured: None,
                    code: None,
                    rendered: None,
                }),
                Ok(None) => Err(RpcError::ResourceNotFound {
                    uri: uri.to_owned(),
                    legacy: era == Era::Legacy,
                }),
                Err(e) => Err(internal(&e)),
            }
        }
        _ => Err(RpcError::MethodNotFound),
    }
}

/// Authenticated resource reads are nonpublic reads like tool calls and
/// are audited the same way (DAP spec 11): ids only, never the token.
/// False when the event was due and could not be written.
async fn audit_resource_read(
    state: &AppState,
    caller: &Caller,
    trace_id: &str,
    uri: &str,
    outcome: &Result<Option<(Value, u64, &'static str)>, crate::store::StoreError>,
) -> bool {
    if caller.principal.grant().is_none() {
        return true;
    }
    let mut event = crate::store::AuditEvent::for_principal(
        &caller.principal,
        trace_id,
        "resources/read",
        &resources::profile_of(state, uri),
    );
    event.resource_ids.push(uri.to_owned());
    (event.organization_id, event.rooftop_ids) = resources::tenancy_of(uri);
    match outcome {
        Ok(Some(_)) => {}
        Ok(None) => {
            event.policy_decision = "deny".to_owned();
            event.outcome = crate::tools::ErrorCode::ResourceNotFound
                .as_str()
                .to_owned();
        }
        Err(_) => event.outcome = crate::tools::ErrorCode::Internal.as_str().to_owned(),
    }
    let written = state.store.append_audit(&event).await;
    crate::store::audit::count_write("event", &written);
    if let Err(e) = &written {
        tracing::error!(error = %e, trace.id = %trace_id, "audit write failed");
    }
    written.is_ok()
}

/// The body of a resource read: its one `contents` entry and its content
/// version in `_meta`, or, when the caller already holds that version
/// (`dealergateway/ifNoneMatch`), the short answer: one entry for the same
/// uri whose text is `{"unchanged":true,"contentVersion":V}` (docs/agents.md
/// "Conditional re-reads"). Called only with a read that was authorized
/// and found, so a version never says anything about a record the caller
/// may not read.
fn versioned_contents(contents: Value, params: &Value) -> Map<String, Value> {
    let Some(text) = contents.get("text").and_then(Value::as_str) else {
        return obj(json!({"contents": [contents]}));
    };
    let version = content_version::of_text(text);
    if content_version::requested(params) == Some(version.as_str()) {
        let mut short = Map::with_capacity(3);
        for key in ["uri", "mimeType"] {
            if let Some(v) = contents.get(key) {
                short.insert(key.into(), v.clone());
            }
        }
        short.insert(
            "text".into(),
            json!(content_version::unchanged_structured(&version)),
        );
        return obj(json!({
            "contents": [short],
            "_meta": {
                content_version::VERSION_META: version,
                content_version::UNCHANGED_META: true,
            },
        }));
    }
    obj(json!({
        "contents": [contents],
        "_meta": {content_version::VERSION_META: version},
    }))
}

fn internal(detail: &dyn std::fmt::Display) -> RpcError {
    let error_id = format!("err.{}", uuid::Uuid::new_v4());
    tracing::error!(error.id = %error_id, %detail, "method failed");
    RpcError::Internal {
        error_id,
        unavailable: true,
    }
}

/// We never issue list cursors (every list fits one page), so any cursor a
/// client sends is not one of ours (MCP: invalid cursor -> -32602).
fn reject_cursor(params: &Value) -> Result<(), RpcError> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(()),
        Some(_) => Err(RpcError::InvalidParams(
            "unknown cursor; this list has a single page".into(),
        )),
    }
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// `tools/list` of `/mcp`: the registered tools but the AAP binding's,
/// which are served on each organization's AAP endpoint (docs/mcp.md
/// "The AAP endpoints"), described by their catalog entries. The catalog's DAP safety metadata goes into each tool's
/// `_meta` (DAP-CORE-012).
pub fn tool_list(state: &AppState) -> Vec<Value> {
    // In the catalog's order (by name); a catalog entry without a
    // registration is not served, so it is not listed either.
    state
        .catalog
        .tools
        .iter()
        .filter(|t| tools::registered(&t.name).is_some())
        .filter(|t| !super::aap::is_aap_tool(t))
        .map(crate::catalog::Tool::list_entry)
        .collect()
}

/// How long clients may reuse the `tools/list` of `/mcp` (MCP caching):
/// the catalog is fixed for the life of the process.
pub(crate) const TOOL_LIST_TTL_MS: u64 = 3_600_000;

/// The `tools/list` result of `/mcp` before it is rendered: the slow
/// construction the cache renders once, and the one its tests compare the
/// cached text with.
fn dap_tool_list_result(state: &AppState) -> MethodResult {
    MethodResult {
        body: obj(json!({"tools": tool_list(state)})),
        cache: Some((TOOL_LIST_TTL_MS, "public")),
        structured: None,
        code: None,
        rendered: None,
    }
}

/// `result`'s text for each era: decorated and written exactly as a
/// result built per request would be, so the bytes on the wire do not
/// change.
fn render(result: impl Fn() -> MethodResult) -> RenderedResult {
    let text = |era| {
        let mut out = Vec::new();
        decorate(era, result()).write_result(&mut out);
        out.into_boxed_slice()
    };
    RenderedResult::new(text(Era::Modern), text(Era::Legacy))
}

impl ToolListCache {
    /// The rendered list, built from `state` on first use. `state` must be
    /// the state that holds this cache (its catalog is the key).
    pub fn get(&self, state: &AppState) -> Arc<RenderedResult> {
        self.get_or_render(|| render(|| dap_tool_list_result(state)))
    }
}

/// The rendered text of `era`.
fn era_text(rendered: &RenderedResult, era: Era) -> &[u8] {
    match era {
        Era::Modern => rendered.modern(),
        Era::Legacy => rendered.legacy(),
    }
}

/// A `tools/call` to route.
#[derive(Clone, Copy)]
struct ToolRequest<'a> {
    params: &'a Value,
    trace_id: &'a str,
    endpoint: &'a Endpoint,
}

/// Which tools an endpoint serves: a catalog tool served on the other
/// endpoint is refused with a protocol error that says where it is (it is
/// not listed here, so it is an unknown tool for this endpoint: -32602).
fn served_here(
    state: &AppState,
    endpoint: &Endpoint,
    tool: &crate::catalog::Tool,
) -> Result<(), RpcError> {
    let aap_tool = super::aap::is_aap_tool(tool);
    match endpoint {
        Endpoint::Dap if aap_tool => Err(RpcError::InvalidParams(format!(
            "{} is served on the AAP endpoint of each dealer, {}{}, not on /mcp (organization_ids are in the manifest)",
            tool.name,
            state.public_base,
            super::aap::PATH_TEMPLATE
        ))),
        Endpoint::Aap { .. } if !aap_tool => Err(RpcError::InvalidParams(format!(
            "{} is not served on an AAP endpoint, which serves the AAP binding's tools only (tools/list); DAP tools are served at {}/mcp",
            tool.name, state.public_base
        ))),
        Endpoint::Dap | Endpoint::Aap { .. } => Ok(()),
    }
}

async fn tools_call(
    state: &Arc<AppState>,
    request: &ToolRequest<'_>,
    caller: &Caller,
    tool: &mut Option<String>,
) -> Result<MethodResult, RpcError> {
    let ToolRequest {
        params,
        trace_id,
        endpoint,
    } = *request;
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::InvalidParams("params.name must be a string".into()))?;
    let unknown = || {
        RpcError::InvalidParams(
            "unknown tool; call tools/list for the tools this endpoint serves".into(),
        )
    };
    // A registered tool, described by its catalog entry (the two agree:
    // tools::tests::the_registry_is_the_catalog).
    let catalog_tool = tools::registered(name)
        .and_then(|r| r.catalog_entry(&state.catalog))
        .ok_or_else(unknown)?;
    served_here(state, endpoint, catalog_tool)?;
    let empty = Value::Object(Map::new());
    let mut args = match params.get("arguments") {
        None | Some(Value::Null) => empty,
        Some(a) => a.clone(),
    };
    // On an AAP endpoint the dealer is the path's: an absent dealer_id is
    // the endpoint's organization (so the audit record names it), and a
    // given one must be it (aap_map::dealer, with the context pinned below).
    let pinned = match endpoint {
        Endpoint::Aap { organization_id } => {
            if let Value::Object(members) = &mut args
                && !members.contains_key("dealer_id")
            {
                members.insert("dealer_id".into(), json!(organization_id));
            }
            Some(organization_id.clone())
        }
        Endpoint::Dap => None,
    };
    let args = &args;
    let ctx = ToolContext::new(
        state,
        caller.principal.clone(),
        caller.client_ip,
        trace_id.to_owned(),
    );
    let ctx = match pinned {
        Some(organization_id) => ctx.pinned_to(organization_id),
        None => ctx,
    };
    // Only a catalog name becomes a label or a log field (no echo).
    *tool = Some(catalog_tool.name.clone());
    let outcome = tools::invoke(&ctx, name, args).await.ok_or_else(unknown)?;
    let mut body = Map::with_capacity(3);
    body.insert("isError".into(), Value::Bool(outcome.is_error));
    // A successful result carries its content version, computed from the
    // bytes the pipeline already wrote (docs/agents.md "Conditional
    // re-reads"); an error is not content and carries none.
    let version = (!outcome.is_error)
        .then(|| content_version::of_tool(outcome.structured.get(), outcome.meta.as_ref()));
    if let Some(version) = version.as_deref()
        && content_version::requested(params) == Some(version)
    {
        // The caller holds this answer: the short one, after the same
        // authorization and audit as the full one (tools::invoke ran).
        body.insert(
            "_meta".into(),
            json!({
                content_version::VERSION_META: version,
                content_version::UNCHANGED_META: true,
            }),
        );
        return Ok(MethodResult {
            body,
            cache: None,
            structured: Some(ToolContent {
                structured: tools::JsonText::trusted(content_version::unchanged_structured(
                    version,
                )),
                links: String::new(),
                text: Some(content_version::unchanged_words(version)),
            }),
            code: outcome.code,
            rendered: None,
        });
    }
    match (outcome.meta, version) {
        (Some(Value::Object(mut meta)), Some(version)) => {
            meta.insert(content_version::VERSION_META.into(), Value::String(version));
            body.insert("_meta".into(), Value::Object(meta));
        }
        (None, Some(version)) => {
            body.insert(
                "_meta".into(),
                json!({ content_version::VERSION_META: version }),
            );
        }
        // A tool's `_meta` additions are an object (tools::ToolOutcome);
        // anything else is written as it was.
        (Some(meta), _) => {
            body.insert("_meta".into(), meta);
        }
        (None, None) => {}
    }
    Ok(MethodResult {
        body,
        cache: None,
        structured: Some(ToolContent {
            structured: outcome.structured,
            links: outcome.links,
            text: None,
        }),
        code: outcome.code,
        rendered: None,
    })
}

/// A decorated result, ready to write: the members of `body`, then, for a
/// tool result, `content` (the structured content as one text block, for
/// clients that read text only, then its `resource_link` blocks) and
/// `structuredContent`.
pub struct Decorated {
    body: Map<String, Value>,
    structured: Option<ToolContent>,
    /// The whole `result` already written for `era` (then `body` is empty
    /// and `structured` is `None`).
    rendered: Option<(Era, Arc<RenderedResult>)>,
}

impl Decorated {
    /// `{"jsonrpc":"2.0","id":…,"result":{…}}` as bytes. The structured
    /// content is copied in as it is (it was serialized once by the tool
    /// pipeline) and escaped once for the text block.
    pub fn into_envelope(self, id: &Value) -> Vec<u8> {
        // The content twice, once escaped. The escaper reserves its worst
        // case (six bytes out for every byte in, plus 35) past the end
        // before it writes, so the buffer is sized for that and the content
        // after it: allocated once, never reallocated (a realloc cost a
        // search page about 70,000 instructions). Pages never touched are
        // never resident.
        let extra = self.structured.as_ref().map_or(0, |s| {
            let n = s.structured.get().len();
            7 * n + 128 + s.links.len()
        }) + self
            .rendered
            .as_ref()
            .map_or(0, |(era, r)| era_text(r, *era).len());
        let mut out = Vec::with_capacity(256 + extra);
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        // Writing a `Value` or a `str` into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, id);
        out.extend_from_slice(b",\"result\":");
        self.write_result(&mut out);
        out.push(b'}');
        out
    }

    /// The `result` object: the rendered text as it is, or the structured
    /// content and the members of `body`.
    fn write_result(&self, out: &mut Vec<u8>) {
        if let Some((era, rendered)) = &self.rendered {
            out.extend_from_slice(era_text(rendered, *era));
            return;
        }
        out.push(b'{');
        let mut first = true;
        if let Some(content) = &self.structured {
            let structured = content.structured.get();
            out.extend_from_slice(b"\"content\":[{\"type\":\"text\",\"text\":");
            write_json_string(out, content.text.as_deref().unwrap_or(structured));
            out.push(b'}');
            out.extend_from_slice(content.links.as_bytes());
            out.extend_from_slice(b"],\"structuredContent\":");
            out.extend_from_slice(structured.as_bytes());
            first = false;
        }
        for (key, value) in &self.body {
            if !first {
                out.push(b',');
            }
            first = false;
            let _ = serde_json::to_writer(&mut *out, key);
            out.push(b':');
            let _ = serde_json::to_writer(&mut *out, value);
        }
        out.push(b'}');
    }
}

/// `text` as a JSON string, written as serde_json writes it.
///
/// The text block of a tool result is the whole structured content again,
/// escaped (MCP asks for both); for a search page of 20 that is 50 KB, and
/// escaping it was the largest single cost of a search (docs/benchmarks.md). JSON holds a `"` every seven bytes or so, so what
/// counts is the cost per escape, not the scan: `json_escape_simd` (the
/// sonic-rs kernel) stores each 32-byte block whole and patches the escapes
/// in place, about 3 instructions a byte against 7.5 for the word-at-a-time
/// loop this replaced. Our crates forbid `unsafe`, which that kernel needs.
/// The proptest below holds it to serde_json's output for any text.
fn write_json_string(out: &mut Vec<u8>, text: &str) {
    json_escape_simd::escape_into(text, out);
}

/// Shape a result for its era.
pub fn decorate(era: Era, result: MethodResult) -> Decorated {
    if let Some(rendered) = result.rendered {
        // Decorated for every era when it was rendered.
        return Decorated {
            body: Map::new(),
            structured: None,
            rendered: Some((era, rendered)),
        };
    }
    let mut body = result.body;
    if era == Era::Modern {
        body.insert("resultType".into(), json!("complete"));
        if let Some((ttl, scope)) = result.cache {
            body.insert("ttlMs".into(), json!(ttl));
            body.insert("cacheScope".into(), json!(scope));
        }
        // Merged into a tool's own result `_meta` (if any), not replacing it.
        let meta = body
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert("io.modelcontextprotocol/serverInfo".into(), server_info());
        }
    }
    Decorated {
        body,
        structured: result.structured,
        rendered: None,
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    proptest::proptest! {
        /// Any text at all, escaped exactly as serde_json escapes it: the
        /// word-at-a-time scan must neither miss a quote nor flag a byte
        /// it should copy (its false positives are re-read).
        #[test]
        fn any_text_escapes_like_serde_json(text in "(\\PC|[\"\\\\\\x00-\\x1f\\x7f\\u{80}-\\u{10ffff}]){0,80}") {
            let mut ours = Vec::new();
            write_json_string(&mut ours, &text);
            proptest::prop_assert_eq!(String::from_utf8(ours).unwrap(), serde_json::to_string(&text).unwrap());
        }

        /// JSON as the tools write it (serialized values holding quotes,
        /// backslashes and non-ASCII), prefixed so every alignment of the
        /// 8-byte words is exercised.
        #[test]
        fn serialized_json_escapes_like_serde_json(
            pad in 0usize..9,
            words in proptest::collection::vec("[a-z\"\\\\\u{e9}\u{1F697}]{0,12}", 0..12),
        ) {
            let text = format!("{}{}", "x".repeat(pad), serde_json::json!({"w": words, "n": 1}));
            let mut ours = Vec::new();
            write_json_string(&mut ours, &text);
            proptest::prop_assert_eq!(String::from_utf8(ours).unwrap(), serde_json::to_string(&text).unwrap());
        }
    }

    /// The fast escape writes what serde_json writes, for JSON text and
    /// for text with control characters (which takes serde_json's path).
    #[test]
    fn text_blocks_escape_like_serde_json() {
        for text in [
            r#"{"a":"b\"c","d":[1,2,{"e":"\\"}],"f":"caf\u00e9 \u2014 ok"}"#,
            "{\"x\":\"\u{e9}\u{1F697}\"}",
            "line\nbreak\ttab\u{1}",
            "",
            "\\\"",
        ] {
            let mut ours = Vec::new();
            write_json_string(&mut ours, text);
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                serde_json::to_string(text).unwrap()
            );
        }
    }
}

#[cfg(test)]
mod tool_list_tests;
