//! DAPC-RED: error redaction. No response echoes what the caller sent
//! (DAP 0.1 errors: messages are fixed text; values are never reflected),
//! and every error carries a DAP error object.

use serde_json::{Value, json};

use super::Check;
use crate::client::{Caller, ClientError, Exchange, MODERN, meta_for};
use crate::context::{Ctx, DEALER_GET, GET_VEHICLE, SEARCH};
use crate::report::Outcome;

const G: &str = "redaction";

pub const CHECKS: &[Check] = &[
    Check {
        id: "DAPC-RED-001",
        group: G,
        title: "invalid arguments are never echoed",
        section: "DAP 0.1 errors (redaction)",
        keyword: "MUST NOT",
        text: "canary strings in wrong-typed fields, over-long ids, unknown members, a bad VIN, a bad cursor and unknown ids appear in no response body or header",
        required: true,
        roles: &[],
        run: |cx| Box::pin(arguments_not_echoed(cx)),
    },
    Check {
        id: "DAPC-RED-002",
        group: G,
        title: "request headers are never echoed",
        section: "DAP 0.1 errors (redaction); MCP 2026-07-28 standard headers",
        keyword: "MUST NOT",
        text: "canary values in Authorization, Mcp-Name, Mcp-Method and MCP-Protocol-Version appear in no response body or header, whether the gateway refuses or serves the request",
        required: true,
        roles: &[],
        run: |cx| Box::pin(headers_not_echoed(cx)),
    },
    Check {
        id: "DAPC-RED-003",
        group: G,
        title: "every tool error is a DAP error object",
        section: "DAP 0.1 errors",
        keyword: "MUST",
        text: "every isError result's structuredContent has a dealeragent.* code, a message, retryable and a trace id",
        required: true,
        roles: &[],
        run: |cx| Box::pin(errors_are_dap(cx)),
    },
];

fn canary() -> String {
    format!("canary-{}", uuid::Uuid::new_v4().simple())
}

/// Whether `ex` (body or headers) contains `canary`, in any case.
fn echoes(ex: &Exchange, canary: &str) -> bool {
    ex.everything()
        .to_ascii_lowercase()
        .contains(&canary.to_ascii_lowercase())
}

/// An organization and rooftop to aim at: a published one when there is one.
fn aim(cx: &Ctx) -> (String, String) {
    cx.public_rooftops()
        .into_iter()
        .find_map(|r| cx.rooftop_org.get(&r).map(|o| (o.clone(), r)))
        .unwrap_or_else(|| (cx.absent("org"), cx.absent("roof")))
}

async fn arguments_not_echoed(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let (org, rooftop) = aim(cx);
    let mut problems = Vec::new();
    let mut cases: Vec<(&str, &str, String, Value)> = Vec::new();
    let c = canary();
    cases.push((
        "wrong-typed page.limit",
        SEARCH,
        c.clone(),
        json!({"organization_id": org, "page": {"limit": c}}),
    ));
    let c = canary();
    cases.push((
        "over-long rooftop id",
        SEARCH,
        c.clone(),
        json!({"organization_id": org, "rooftop_ids": [format!("{c}{}", "x".repeat(200))]}),
    ));
    let c = canary();
    let mut unknown = json!({"organization_id": org});
    unknown[c.as_str()] = json!(c);
    cases.push(("unknown member", SEARCH, c.clone(), unknown));
    let c = canary();
    cases.push((
        "bad VIN",
        GET_VEHICLE,
        c.clone(),
        json!({"organization_id": org, "rooftop_id": rooftop, "vin": c}),
    ));
    let c = canary();
    cases.push((
        "bad cursor",
        SEARCH,
        c.clone(),
        json!({"organization_id": org, "page": {"cursor": c}}),
    ));
    let c = canary();
    cases.push((
        "over-long query",
        SEARCH,
        c.clone(),
        json!({"organization_id": org, "query": format!("{c}{}", "q".repeat(600))}),
    ));
    let c = canary();
    cases.push((
        "unknown vehicle id",
        GET_VEHICLE,
        c.clone(),
        json!({"organization_id": org, "rooftop_id": rooftop, "vehicle_id": format!("veh.{c}")}),
    ));
    let c = canary();
    cases.push((
        "unknown organization id",
        DEALER_GET,
        c.clone(),
        json!({"organization_id": format!("org.{c}")}),
    ));
    for (what, tool, c, args) in cases {
        let ex = cx.call(&Caller::Anonymous, tool, args).await?;
        if echoes(&ex, &c) {
            o.saw_first(&ex);
            problems.push(format!("{what} ({tool}): the response echoes the value"));
        } else {
            o.saw(&ex);
        }
        if !ex.is_tool_error() {
            problems.push(format!("{what} ({tool}): not an error result"));
        }
    }
    Ok(o.conclude(&problems, "no canary echoed"))
}

async fn headers_not_echoed(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let mut problems = Vec::new();
    let mut answers = Vec::new();
    let (org, _) = aim(cx);
    let body = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": SEARCH, "arguments": {"organization_id": org, "page": {"limit": 1}},
            "_meta": meta_for(MODERN)}})
        .to_string()
    };
    let cases: Vec<(&str, String)> = vec![
        ("authorization", canary()),
        ("mcp-name", canary()),
        ("mcp-method", canary()),
        ("mcp-protocol-version", canary()),
    ];
    for (i, (header, c)) in cases.iter().enumerate() {
        let value = if *header == "authorization" {
            format!("Bearer {c}")
        } else {
            c.clone()
        };
        let mut headers: Vec<(&str, &str)> =
            vec![("accept", "application/json, text/event-stream")];
        for (name, default) in [
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", SEARCH),
        ] {
            if name != *header {
                headers.push((name, default));
            }
        }
        headers.push((header, value.as_str()));
        let ex = cx
            .client
            .post_raw(&Caller::Anonymous, &headers, &body(i as i64 + 1))
            .await?;
        if echoes(&ex, c) {
            o.saw_first(&ex);
            problems.push(format!("a canary in {header} is echoed"));
        } else {
            o.saw(&ex);
        }
        // Redaction only: whether a canary header is refused or ignored
        // is the header checks' business (DAPC-MCP-004 for Mcp-Method and
        // the version, the isolation group for credentials), so a gateway
        // that answers either way passes here as long as nothing echoes.
        let answer = if ex.status == 200 && ex.result().is_some() && !ex.is_tool_error() {
            "served"
        } else {
            "refused"
        };
        answers.push(format!("{header} {answer}"));
    }
    Ok(o.conclude(
        &problems,
        format!("no header value echoed ({})", answers.join(", ")),
    ))
}

async fn errors_are_dap(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    // Make sure there are errors to look at, of two kinds.
    for (tool, args) in [
        (SEARCH, json!({"organization_id": 7})),
        (
            GET_VEHICLE,
            json!({"organization_id": cx.absent("org"), "rooftop_id": cx.absent("roof"), "vehicle_id": cx.absent("veh")}),
        ),
    ] {
        let ex = cx.call(&Caller::Anonymous, tool, args).await?;
        o.saw(&ex);
    }
    let mut problems = Vec::new();
    let errors: Vec<_> = cx
        .observed_dap()
        .into_iter()
        .filter(|x| x.is_error)
        .collect();
    for e in &errors {
        let c = &e.content;
        let mut bad = Vec::new();
        if !c
            .get("code")
            .and_then(Value::as_str)
            .is_some_and(|s| s.starts_with("dealeragent."))
        {
            bad.push("code");
        }
        if c.get("message")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            bad.push("message");
        }
        if !c.get("retryable").is_some_and(Value::is_boolean) {
            bad.push("retryable");
        }
        if c.get("trace_id")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            bad.push("trace_id");
        }
        if !bad.is_empty() {
            problems.push(format!(
                "{} error ({}) lacks {}",
                e.tool,
                e.caller,
                bad.join(", ")
            ));
        }
    }
    Ok(o.conclude(
        &problems,
        format!("{} errors are DAP error objects", errors.len()),
    ))
}
