//! DAPC-MCP: the MCP binding in both eras (MCP 2026-07-28 stateless
//! requests with per-request `_meta`; the 2025-11-25 handshake).

use serde_json::{Value, json};

use super::Check;
use crate::client::{Caller, ClientError, LEGACY, MODERN, meta_for};
use crate::context::{Ctx, SEARCH};
use crate::report::Outcome;
use crate::schemas::compile_tool_schema;

const G: &str = "mcp";

pub const CHECKS: &[Check] = &[
    Check {
        id: "DAPC-MCP-001",
        group: G,
        title: "server/discover answers and lists 2026-07-28",
        section: "MCP 2026-07-28 server/discover",
        keyword: "MUST",
        text: "server/discover returns a complete result whose supportedVersions include 2026-07-28 and whose capabilities include tools",
        required: true,
        roles: &[],
        run: |cx| Box::pin(discover(cx)),
    },
    Check {
        id: "DAPC-MCP-002",
        group: G,
        title: "a modern request without _meta is rejected -32602",
        section: "MCP 2026-07-28 per-request metadata",
        keyword: "MUST",
        text: "a 2026-07-28 request lacking params._meta (or its protocolVersion / clientCapabilities) is rejected with HTTP 400 and -32602",
        required: true,
        roles: &[],
        run: |cx| Box::pin(missing_meta(cx)),
    },
    Check {
        id: "DAPC-MCP-003",
        group: G,
        title: "-32022 lists only revisions usable per request",
        section: "MCP 2026-07-28 version negotiation",
        keyword: "MUST",
        text: "an unsupported version gets HTTP 400 -32022 with data.supported and data.requested; retrying per request with each listed revision succeeds (a handshake-only revision is not offered)",
        required: true,
        roles: &[],
        run: |cx| Box::pin(unsupported_version(cx)),
    },
    Check {
        id: "DAPC-MCP-004",
        group: G,
        title: "header/body mismatch is -32020, checked before the version",
        section: "MCP 2026-07-28 standard headers",
        keyword: "MUST",
        text: "Mcp-Method differing from the body method is HTTP 400 -32020, and a disagreeing header wins over an unsupported body version",
        required: true,
        roles: &[],
        run: |cx| Box::pin(header_mismatch(cx)),
    },
    Check {
        id: "DAPC-MCP-005",
        group: G,
        title: "legacy 2025-11-25 initialize and session work when served",
        section: "MCP 2025-11-25 lifecycle",
        keyword: "MUST",
        text: "when 2025-11-25 is served, initialize opens a session in which tools/list returns the same tools as the modern era",
        required: false,
        roles: &[],
        run: |cx| Box::pin(legacy_session(cx)),
    },
    Check {
        id: "DAPC-MCP-006",
        group: G,
        title: "tool results carry structuredContent (a JSON text block is advisory)",
        section: "DAP 0.1 section 4 (MCP binding); MCP 2026-07-28 tools/call (structured content)",
        keyword: "MUST",
        text: "every tools/call result, success and error, has an object structuredContent; a text content block serializing the same JSON is only a SHOULD (MCP) and a MAY (DAP), so its absence or difference is noted, never failed",
        required: true,
        roles: &[],
        run: |cx| Box::pin(structured_content(cx)),
    },
    Check {
        id: "DAPC-MCP-007",
        group: G,
        title: "every modern result has resultType complete",
        section: "MCP 2026-07-28 results",
        keyword: "MUST",
        text: "server/discover, tools/list and tools/call results carry resultType \"complete\"",
        required: true,
        roles: &[],
        run: |cx| Box::pin(result_type(cx)),
    },
    Check {
        id: "DAPC-MCP-008",
        group: G,
        title: "caching hints: public for anonymous, private for a token caller",
        section: "MCP 2026-07-28 caching; DAP 0.1 discovery",
        keyword: "MUST",
        text: "cacheable results carry ttlMs and cacheScope; the anonymous manifest resource is public, a token caller's is private",
        required: true,
        roles: &["inventory"],
        run: |cx| Box::pin(caching(cx)),
    },
    Check {
        id: "DAPC-MCP-009",
        group: G,
        title: "business failures are isError results, protocol failures JSON-RPC errors",
        section: "DAP 0.1 errors; JSON-RPC 2.0",
        keyword: "MUST",
        text: "invalid tool arguments give an isError: true result with a DAP error object; an unknown method is -32601 and malformed JSON -32700",
        required: true,
        roles: &[],
        run: |cx| Box::pin(error_split(cx)),
    },
    Check {
        id: "DAPC-MCP-010",
        group: G,
        title: "every tool's error result validates against its outputSchema",
        section: "MCP 2026-07-28 tools (outputSchema); DAP 0.1 errors",
        keyword: "MUST",
        text: "structuredContent conforms to the tool's declared outputSchema, also for isError results (clients such as the MCP Inspector validate it)",
        required: true,
        roles: &[],
        run: |cx| Box::pin(error_matches_output_schema(cx)),
    },
    Check {
        id: "DAPC-MCP-011",
        group: G,
        title: "a foreign browser origin is refused without CORS grants",
        section: "MCP 2026-07-28 Streamable HTTP security (Origin validation)",
        keyword: "MUST",
        text: "a request or preflight from an origin the gateway does not allow is refused (403) and carries no Access-Control-Allow-Origin",
        required: true,
        roles: &[],
        run: |cx| Box::pin(foreign_origin(cx)),
    },
    Check {
        id: "DAPC-MCP-012",
        group: G,
        title: "an allowed browser origin gets a working CORS preflight",
        section: "MCP 2026-07-28 Streamable HTTP; Fetch (CORS)",
        keyword: "SHOULD",
        text: "for an allowed origin (--origin) the preflight succeeds allowing POST and the MCP request headers, and responses name the origin; a response that issues an Mcp-Session-Id (a legacy initialize) exposes it, a stateless one need not",
        required: false,
        roles: &[],
        run: |cx| Box::pin(allowed_origin(cx)),
    },
    Check {
        id: "DAPC-MCP-013",
        group: G,
        title: "requests without clientInfo are served",
        section: "MCP 2026-07-28 per-request metadata (io.modelcontextprotocol/clientInfo)",
        keyword: "MUST NOT",
        text: "a 2026-07-28 request whose _meta lacks io.modelcontextprotocol/clientInfo (server/discover, tools/list, tools/call) is served like one that has it: the server MUST NOT require it; a legacy initialize without clientInfo is tried when 2025-11-25 is served and only noted (the 2025-11-25 schema makes the client send it)",
        required: true,
        roles: &[],
        run: |cx| Box::pin(client_info_optional(cx)),
    },
];

/// The MCP request headers a browser client sends (lower case).
const MCP_REQUEST_HEADERS: [&str; 5] = [
    "content-type",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "authorization",
];

fn preflight_headers(origin: &str) -> Vec<(&str, &str)> {
    vec![
        ("origin", origin),
        ("access-control-request-method", "POST"),
        (
            "access-control-request-headers",
            "content-type, mcp-protocol-version, mcp-method, mcp-name, authorization",
        ),
    ]
}

async fn foreign_origin(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let origin = format!("https://dapc-foreign-{}.invalid", cx.nonce);
    let mut problems = Vec::new();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": meta_for(MODERN)}});
    let post = cx
        .client
        .post_raw(
            &Caller::Anonymous,
            &[
                ("origin", origin.as_str()),
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "tools/list"),
            ],
            &body.to_string(),
        )
        .await?;
    o.saw(&post);
    if post.status != 403 {
        problems.push(format!(
            "POST from a foreign origin: HTTP {}, expected 403",
            post.status
        ));
    }
    if post.header("access-control-allow-origin").is_some() {
        problems.push("POST from a foreign origin carries Access-Control-Allow-Origin".into());
    }
    let pre = cx
        .client
        .send(
            reqwest::Method::OPTIONS,
            &Caller::Anonymous,
            &preflight_headers(&origin),
            "",
        )
        .await?;
    o.saw(&pre);
    if pre.header("access-control-allow-origin").is_some() {
        problems.push("the preflight of a foreign origin is granted".into());
    }
    Ok(o.conclude(&problems, "refused, no CORS grant"))
}

async fn allowed_origin(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let Some(origin) = cx.origin.as_deref() else {
        return Ok(o.skip("no --origin given (an origin the gateway is configured to allow)"));
    };
    let mut problems = Vec::new();
    let pre = cx
        .client
        .send(
            reqwest::Method::OPTIONS,
            &Caller::Anonymous,
            &preflight_headers(origin),
            "",
        )
        .await?;
    o.saw(&pre);
    if !(200..300).contains(&pre.status) {
        problems.push(format!("preflight: HTTP {}", pre.status));
    }
    if pre.header("access-control-allow-origin") != Some(origin) {
        problems.push(format!(
            "preflight: Access-Control-Allow-Origin {:?}, expected {origin}",
            pre.header("access-control-allow-origin")
        ));
    }
    let methods = pre
        .header("access-control-allow-methods")
        .unwrap_or("")
        .to_ascii_uppercase();
    if !methods.contains("POST") && !methods.contains('*') {
        problems.push(format!("preflight: POST not allowed ({methods:?})"));
    }
    let allowed = pre
        .header("access-control-allow-headers")
        .unwrap_or("")
        .to_ascii_lowercase();
    for h in MCP_REQUEST_HEADERS {
        if !allowed.contains(h) && !allowed.contains('*') {
            problems.push(format!("preflight: header {h} not allowed"));
        }
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": meta_for(MODERN)}});
    let post = cx
        .client
        .post_raw(
            &Caller::Anonymous,
            &[
                ("origin", origin),
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "tools/list"),
            ],
            &body.to_string(),
        )
        .await?;
    o.saw(&post);
    if post.status != 200 || post.header("access-control-allow-origin") != Some(origin) {
        problems.push(format!(
            "POST from the allowed origin: HTTP {}, Access-Control-Allow-Origin {:?}",
            post.status,
            post.header("access-control-allow-origin")
        ));
    }
    // Mcp-Session-Id matters to a browser only on an answer that issues
    // one: 2026-07-28 is stateless, so only a legacy initialize (when
    // 2025-11-25 is served) must expose it (Fetch: a response header the
    // script may read is one named in Access-Control-Expose-Headers).
    let mut ok = "preflight and request carry the CORS grant".to_owned();
    if legacy_served(cx) {
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "dap-conformance", "version": crate::version::SUITE_VERSION}}});
        let init = cx
            .client
            .post_raw(
                &Caller::Anonymous,
                &[
                    ("origin", origin),
                    ("accept", "application/json, text/event-stream"),
                ],
                &body.to_string(),
            )
            .await?;
        o.saw(&init);
        let exposed = init
            .header("access-control-expose-headers")
            .unwrap_or("")
            .to_ascii_lowercase();
        if init.header("mcp-session-id").is_some() {
            if !exposed.contains("mcp-session-id") && !exposed.contains('*') {
                problems.push(
                    "a legacy initialize issues an Mcp-Session-Id that is not exposed to the browser"
                        .into(),
                );
            } else {
                ok.push_str("; the legacy session id is exposed");
            }
        }
    }
    Ok(o.conclude(&problems, ok))
}

async fn discover(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let ex = &cx.discover;
    o.saw(ex);
    let mut problems = Vec::new();
    if ex.status != 200 {
        problems.push(format!("HTTP {}", ex.status));
    }
    let r = ex.result().cloned().unwrap_or(Value::Null);
    let versions: Vec<&str> = r
        .get("supportedVersions")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !versions.contains(&MODERN) {
        problems.push(format!("supportedVersions {versions:?} lacks {MODERN}"));
    }
    if r.get("capabilities").and_then(|c| c.get("tools")).is_none() {
        problems.push("capabilities.tools missing".into());
    }
    if r.get("resultType") != Some(&json!("complete")) {
        problems.push("resultType is not \"complete\"".into());
    }
    Ok(o.conclude(&problems, "discover lists 2026-07-28"))
}

async fn missing_meta(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let mut problems = Vec::new();
    let headers = [
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/list"),
    ];
    let bodies = [
        (
            "no _meta",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
        ),
        (
            "_meta without clientCapabilities",
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN}}}),
        ),
        (
            "_meta without protocolVersion",
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": {
                "io.modelcontextprotocol/clientCapabilities": {}}}}),
        ),
    ];
    for (what, body) in bodies {
        let ex = cx
            .client
            .post_raw(&Caller::Anonymous, &headers, &body.to_string())
            .await?;
        o.saw(&ex);
        if ex.status != 400 || ex.error_code() != Some(-32602) {
            problems.push(format!(
                "{what}: HTTP {} code {:?}, expected 400 -32602",
                ex.status,
                ex.error_code()
            ));
        }
    }
    Ok(o.conclude(&problems, "each is 400 -32602"))
}

async fn unsupported_version(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let ex = cx
        .client
        .modern_version(&Caller::Anonymous, "tools/list", json!({}), "1900-01-01")
        .await?;
    o.saw(&ex);
    if ex.status != 400 || ex.error_code() != Some(-32022) {
        return Ok(o.fail(format!(
            "HTTP {} code {:?}, expected 400 -32022",
            ex.status,
            ex.error_code()
        )));
    }
    let data = ex
        .body
        .get("error")
        .and_then(|e| e.get("data"))
        .cloned()
        .unwrap_or(Value::Null);
    if data.get("requested") != Some(&json!("1900-01-01")) {
        return Ok(o.fail("error.data.requested is not the requested version"));
    }
    let Some(supported) = data.get("supported").and_then(Value::as_array) else {
        return Ok(o.fail("error.data.supported is missing"));
    };
    let mut problems = Vec::new();
    if !supported.iter().any(|v| v == MODERN) {
        problems.push(format!("supported {supported:?} lacks {MODERN}"));
    }
    for v in supported.iter().filter_map(Value::as_str) {
        // A client retries with a listed version exactly as it sent the
        // failed request: per request, no handshake.
        let retry = cx
            .client
            .modern_version(&Caller::Anonymous, "tools/list", json!({}), v)
            .await?;
        if retry.status != 200 || retry.result().is_none() {
            o.saw_first(&retry);
            problems.push(format!(
                "retrying per request with listed revision {v} got HTTP {} code {:?}: a revision that needs initialize must not be offered as a retry",
                retry.status,
                retry.error_code()
            ));
        }
    }
    Ok(o.conclude(&problems, "every listed revision works per request"))
}

async fn header_mismatch(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let mut problems = Vec::new();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": {"_meta": meta_for(MODERN)}});
    let ex = cx
        .client
        .post_raw(
            &Caller::Anonymous,
            &[
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "tools/list"),
            ],
            &body.to_string(),
        )
        .await?;
    o.saw(&ex);
    if ex.status != 400 || ex.error_code() != Some(-32020) {
        problems.push(format!(
            "Mcp-Method tools/list for body server/discover: HTTP {} code {:?}, expected 400 -32020",
            ex.status,
            ex.error_code()
        ));
    }
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
        "params": {"_meta": meta_for("v999.0.0")}});
    let ex = cx
        .client
        .post_raw(
            &Caller::Anonymous,
            &[
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "tools/list"),
            ],
            &body.to_string(),
        )
        .await?;
    o.saw(&ex);
    if ex.status != 400 || ex.error_code() != Some(-32020) {
        problems.push(format!(
            "header {MODERN} with body version v999.0.0: HTTP {} code {:?}, expected 400 -32020 (agreement is checked before support)",
            ex.status,
            ex.error_code()
        ));
    }
    Ok(o.conclude(&problems, "mismatches are -32020"))
}

fn legacy_served(cx: &Ctx) -> bool {
    let listed = |v: Option<&Value>| {
        v.and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|x| x == LEGACY))
    };
    listed(
        cx.discover
            .result()
            .and_then(|r| r.get("supportedVersions")),
    ) || listed(
        cx.manifest
            .get("extensions")
            .and_then(|e| e.get("dealergateway.mcp"))
            .and_then(|m| m.get("revisions")),
    )
}

async fn legacy_session(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    if !legacy_served(cx) {
        return Ok(o.skip("the gateway does not say it serves 2025-11-25"));
    }
    let (session, exchanges) = cx.client.initialize_legacy(&Caller::Anonymous).await?;
    for ex in &exchanges {
        o.saw(ex);
    }
    let Some(session) = session else {
        return Ok(o.fail("initialize opened no Mcp-Session-Id"));
    };
    let init = &exchanges[0];
    let mut problems = Vec::new();
    if init.result().and_then(|r| r.get("protocolVersion")) != Some(&json!(LEGACY)) {
        problems.push("initialize did not answer protocolVersion 2025-11-25".to_owned());
    }
    if exchanges.get(1).map(|e| e.status) != Some(202) {
        problems.push("notifications/initialized was not 202".to_owned());
    }
    let list = cx
        .client
        .legacy(&Caller::Anonymous, &session, "tools/list", json!({}))
        .await?;
    o.saw(&list);
    let legacy_tools = list.result().and_then(|r| r.get("tools")).cloned();
    let modern_tools = cx
        .tools_list
        .as_ref()
        .and_then(|e| e.result())
        .and_then(|r| r.get("tools"))
        .cloned();
    if legacy_tools.is_none() || legacy_tools != modern_tools {
        problems.push("tools/list in the session differs from the modern tools/list".to_owned());
    }
    Ok(o.conclude(&problems, "legacy session serves the same tools"))
}

async fn structured_content(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let mut problems = Vec::new();
    let mut advisories: Vec<&str> = Vec::new();
    let mut exchanges = Vec::new();
    if let Some(ex) = &cx.manifest_exchange {
        exchanges.push(ex.clone());
    }
    let invalid = cx
        .call(&Caller::Anonymous, SEARCH, json!({"organization_id": 42}))
        .await?;
    exchanges.push(invalid);
    for s in cx.samples.iter().take(1) {
        exchanges.extend(s.get_vehicle.iter().cloned());
        exchanges.extend(s.disclosure.iter().cloned());
    }
    for ex in &exchanges {
        o.saw(ex);
        let Some(result) = ex.result() else {
            problems.push(format!("HTTP {}: no result", ex.status));
            continue;
        };
        let Some(structured) = result.get("structuredContent") else {
            problems.push("a tool result has no structuredContent".into());
            continue;
        };
        let text = result
            .get("content")
            .and_then(Value::as_array)
            .and_then(|c| {
                c.iter()
                    .find(|b| b.get("type") == Some(&json!("text")))
                    .and_then(|b| b.get("text"))
                    .and_then(Value::as_str)
            });
        if !structured.is_object() {
            problems.push("structuredContent is not a JSON object".into());
            continue;
        }
        // DAP 0.1 section 4: "a text serialization MAY accompany it for
        // legacy clients, but clients MUST treat the structured content as
        // authoritative"; MCP: the serialized JSON in a text block is a
        // SHOULD. So a text block that is prose, or absent, is a note.
        match text.map(serde_json::from_str::<Value>) {
            Some(Ok(parsed)) if &parsed == structured => {}
            Some(Ok(_)) => advisories.push("a text block differs from structuredContent"),
            Some(Err(_)) => advisories.push("a text block is not JSON"),
            None => advisories.push("a result has no text block"),
        }
    }
    let mut ok = format!(
        "{} results checked (success and error) carry structuredContent",
        exchanges.len()
    );
    advisories.sort_unstable();
    advisories.dedup();
    if !advisories.is_empty() {
        ok.push_str(&format!(
            "; advisory (MCP SHOULD, not required): {}",
            advisories.join("; ")
        ));
    }
    Ok(o.conclude(&problems, ok))
}

async fn result_type(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let mut problems = Vec::new();
    let mut list: Vec<(&str, Option<&crate::client::Exchange>)> = vec![
        ("server/discover", Some(&cx.discover)),
        ("tools/list", cx.tools_list.as_ref()),
        ("tools/call", cx.manifest_exchange.as_ref()),
    ];
    let resources = cx
        .client
        .modern(&Caller::Anonymous, "resources/list", json!({}))
        .await?;
    list.push(("resources/list", Some(&resources)));
    for (what, ex) in list {
        let Some(ex) = ex else {
            problems.push(format!("{what}: no answer"));
            continue;
        };
        o.saw(ex);
        if ex.result().and_then(|r| r.get("resultType")) != Some(&json!("complete")) {
            problems.push(format!("{what}: resultType is not \"complete\""));
        }
    }
    Ok(o.conclude(&problems, "resultType complete everywhere"))
}

fn hints(ex: &crate::client::Exchange) -> (Option<&Value>, Option<&str>) {
    let r = ex.result();
    (
        r.and_then(|r| r.get("ttlMs")),
        r.and_then(|r| r.get("cacheScope")).and_then(Value::as_str),
    )
}

async fn caching(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let mut problems = Vec::new();
    for (what, ex) in [
        ("server/discover", Some(&cx.discover)),
        ("tools/list", cx.tools_list.as_ref()),
    ] {
        let Some(ex) = ex else { continue };
        let (ttl, scope) = hints(ex);
        if !ttl.is_some_and(Value::is_u64) || !matches!(scope, Some("public" | "private")) {
            o.saw(ex);
            problems.push(format!("{what}: ttlMs {ttl:?} / cacheScope {scope:?}"));
        }
    }
    let params = json!({"uri": "dealeragent://manifest"});
    let anon = cx
        .client
        .modern(&Caller::Anonymous, "resources/read", params.clone())
        .await?;
    o.saw(&anon);
    let (ttl, scope) = hints(&anon);
    if !ttl.is_some_and(Value::is_u64) || scope != Some("public") {
        problems.push(format!(
            "anonymous manifest resource: ttlMs {ttl:?} cacheScope {scope:?}, expected public"
        ));
    }
    let token = cx
        .client
        .modern(&Caller::role("inventory"), "resources/read", params)
        .await?;
    o.saw(&token);
    let (ttl, scope) = hints(&token);
    if !ttl.is_some_and(Value::is_u64) || scope != Some("private") {
        problems.push(format!(
            "token caller's manifest resource: ttlMs {ttl:?} cacheScope {scope:?}, expected private (it depends on the grant)"
        ));
    }
    Ok(o.conclude(&problems, "hints present; public vs private as expected"))
}

async fn error_split(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let mut problems = Vec::new();
    let invalid = cx
        .call(
            &Caller::Anonymous,
            SEARCH,
            json!({"organization_id": "org.x", "page": {"limit": "ten"}}),
        )
        .await?;
    o.saw(&invalid);
    if invalid.status != 200 || !invalid.is_tool_error() {
        problems.push(format!(
            "invalid arguments: HTTP {} isError {}, expected an isError: true result",
            invalid.status,
            invalid.is_tool_error()
        ));
    } else if invalid.dap_code() != Some("dealeragent.validation.invalid") {
        problems.push(format!(
            "invalid arguments: DAP code {:?}, expected dealeragent.validation.invalid",
            invalid.dap_code()
        ));
    }
    let unknown = cx
        .client
        .modern(&Caller::Anonymous, "tools/frobnicate", json!({}))
        .await?;
    o.saw(&unknown);
    if unknown.error_code() != Some(-32601) {
        problems.push(format!(
            "unknown method: code {:?}, expected -32601",
            unknown.error_code()
        ));
    }
    let malformed = cx
        .client
        .post_raw(
            &Caller::Anonymous,
            &[
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "tools/list"),
            ],
            "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ",
        )
        .await?;
    o.saw(&malformed);
    if malformed.error_code() != Some(-32700) {
        problems.push(format!(
            "malformed JSON: code {:?}, expected -32700",
            malformed.error_code()
        ));
    }
    Ok(o.conclude(
        &problems,
        "isError for arguments, -32601 and -32700 for protocol",
    ))
}

async fn error_matches_output_schema(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let mut problems = Vec::new();
    let tools = cx.tools();
    if tools.is_empty() {
        return Ok(o.fail("tools/list returned no tools"));
    }
    for tool in &tools {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
        let Some(schema) = tool.get("outputSchema") else {
            problems.push(format!("{name}: no outputSchema"));
            continue;
        };
        let validator = match compile_tool_schema(schema) {
            Ok(v) => v,
            Err(e) => {
                problems.push(format!("{name}: outputSchema does not compile: {e}"));
                continue;
            }
        };
        // An argument no tool accepts: a validation error from every tool.
        let ex = cx
            .call(
                &Caller::Anonymous,
                name,
                json!({"dapc_unknown_member": true}),
            )
            .await?;
        if !ex.is_tool_error() {
            o.saw(&ex);
            problems.push(format!(
                "{name}: an unknown argument was not an isError result"
            ));
            continue;
        }
        let Some(content) = ex.structured() else {
            o.saw(&ex);
            problems.push(format!("{name}: error result without structuredContent"));
            continue;
        };
        let errors: Vec<String> = validator
            .iter_errors(content)
            .take(3)
            .map(|e| format!("{}: {}", e.instance_path(), e))
            .collect();
        if !errors.is_empty() {
            o.saw(&ex);
            problems.push(format!(
                "{name}: error structuredContent violates its outputSchema ({})",
                crate::report::cap(&errors.join("; "), 300)
            ));
        }
    }
    Ok(o.conclude(&problems, format!("{} tools' errors conform", tools.len())))
}

/// `_meta` with only the two members MCP 2026-07-28 requires.
fn meta_without_client_info(version: &str) -> Value {
    let mut meta = meta_for(version);
    if let Some(m) = meta.as_object_mut() {
        m.remove("io.modelcontextprotocol/clientInfo");
    }
    meta
}

async fn client_info_optional(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let mut problems = Vec::new();
    let manifest_tool = crate::context::GET_MANIFEST;
    let requests = [
        ("server/discover", None, json!({})),
        ("tools/list", None, json!({})),
        (
            "tools/call",
            Some(manifest_tool),
            json!({"name": manifest_tool, "arguments": {}}),
        ),
    ];
    for (i, (method, name, mut params)) in requests.into_iter().enumerate() {
        params["_meta"] = meta_without_client_info(MODERN);
        let body = json!({"jsonrpc": "2.0", "id": i + 1, "method": method, "params": params});
        let mut headers = vec![
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", MODERN),
            ("mcp-method", method),
        ];
        if let Some(name) = name {
            headers.push(("mcp-name", name));
        }
        let ex = cx
            .client
            .post_raw(&Caller::Anonymous, &headers, &body.to_string())
            .await?;
        let served = ex.status == 200 && ex.result().is_some() && !ex.is_tool_error();
        if served {
            o.saw(&ex);
        } else {
            o.saw_first(&ex);
            problems.push(format!(
                "{method} without clientInfo: HTTP {} code {:?}, expected a result",
                ex.status,
                ex.error_code()
            ));
        }
    }
    let mut ok = "discover, tools/list and tools/call are served without clientInfo".to_owned();
    if legacy_served(cx) {
        let body = json!({"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {}}});
        let init = cx
            .client
            .post_raw(
                &Caller::Anonymous,
                &[("accept", "application/json, text/event-stream")],
                &body.to_string(),
            )
            .await?;
        o.saw(&init);
        if init.status == 200 && init.result().is_some() {
            ok.push_str("; a legacy initialize without clientInfo is served too");
        } else {
            ok.push_str(&format!(
                "; note: a legacy initialize without clientInfo got HTTP {} code {:?} (permitted: the 2025-11-25 schema requires the client to send clientInfo)",
                init.status,
                init.error_code()
            ));
        }
    }
    Ok(o.conclude(&problems, ok))
}
