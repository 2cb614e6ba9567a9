//! DAPC-ISO: tenant isolation and authorization-failure ordering. A record
//! the caller may not see must read exactly like an absent one (DAP 0.1
//! section 7: existence of unpublished records is not disclosed); a
//! missing scope must be reported before any lookup; grants come only from
//! the credential.
//!
//! Comparisons are byte-for-byte over the error's structuredContent after
//! removing its per-request ids: `error_id`, `trace_id` and `created_at`.

use serde_json::{Value, json};

use super::Check;
use crate::client::{Caller, ClientError, Exchange};
use crate::context::{Ctx, GET_MANIFEST, GET_VEHICLE, SEARCH, VERIFY, normalized_error};
use crate::report::Outcome;

const G: &str = "isolation";

pub const CHECKS: &[Check] = &[
    Check {
        id: "DAPC-ISO-001",
        group: G,
        title: "anonymous get_vehicle of a partner vehicle reads as absent",
        section: "DAP 0.1 section 7 (tenant isolation)",
        keyword: "MUST",
        text: "a vehicle of an unpublished rooftop gets, anonymously, the same answer as a made-up rooftop and vehicle (byte-identical after per-request ids)",
        required: true,
        roles: &["partner"],
        run: |cx| Box::pin(anon_get_vehicle(cx)),
    },
    Check {
        id: "DAPC-ISO-002",
        group: G,
        title: "anonymous search of a partner rooftop reads as absent",
        section: "DAP 0.1 section 7 (tenant isolation)",
        keyword: "MUST",
        text: "searching an unpublished rooftop anonymously gives the same answer as a made-up rooftop",
        required: true,
        roles: &["partner"],
        run: |cx| Box::pin(anon_search(cx)),
    },
    Check {
        id: "DAPC-ISO-003",
        group: G,
        title: "anonymous verify_availability of a partner vehicle reads as absent",
        section: "DAP 0.1 section 7 (tenant isolation)",
        keyword: "MUST",
        text: "verifying a vehicle of an unpublished rooftop anonymously gives the same answer as a made-up one",
        required: true,
        roles: &["partner"],
        run: |cx| Box::pin(anon_verify(cx)),
    },
    Check {
        id: "DAPC-ISO-004",
        group: G,
        title: "another organization's unpublished rooftop reads as absent to a grant",
        section: "DAP 0.1 section 7 (tenant isolation)",
        keyword: "MUST",
        text: "the inventory grant asking for a rooftop only other-org may read gets the same answer as for a made-up rooftop",
        required: true,
        roles: &["inventory", "other-org"],
        run: |cx| Box::pin(cross_org(cx)),
    },
    Check {
        id: "DAPC-ISO-005",
        group: G,
        title: "a missing scope is reported before any lookup",
        section: "DAP 0.1 section 7 (authorization-failure ordering)",
        keyword: "MUST",
        text: "a pricing-only grant calling inventory search gets dealeragent.scope.insufficient, identical for an existing and an absent rooftop",
        required: true,
        roles: &["pricing-only"],
        run: |cx| Box::pin(scope_first(cx)),
    },
    Check {
        id: "DAPC-ISO-006",
        group: G,
        title: "forged grants in _meta or arguments confer nothing",
        section: "DAP 0.1 section 7 (credentials); MCP _meta",
        keyword: "MUST NOT",
        text: "_meta keys claiming a grant, subject or rooftops, or a token in _meta, change nothing: the answer equals the anonymous one",
        required: true,
        roles: &["partner"],
        run: |cx| Box::pin(forged_grants(cx)),
    },
    Check {
        id: "DAPC-ISO-007",
        group: G,
        title: "every search hit stays inside the requested and visible rooftops",
        section: "DAP 0.1 section 7; inventory.read (provenance)",
        keyword: "MUST",
        text: "each search hit's rooftop_id is one the caller asked for and may read, and each hit carries its own provenance",
        required: true,
        roles: &[],
        run: |cx| Box::pin(hits_in_scope(cx)),
    },
    Check {
        id: "DAPC-ISO-008",
        group: G,
        title: "an anonymous group search never returns partner vehicles",
        section: "DAP 0.1 section 7 (tenant isolation)",
        keyword: "MUST NOT",
        text: "searching the whole organization anonymously never returns vehicles of its unpublished rooftop",
        required: true,
        roles: &["partner"],
        run: |cx| Box::pin(group_search_hides_partner(cx)),
    },
];

/// Compare two answers that must be byte-identical after normalization.
fn same(
    o: &mut Outcome,
    what: &str,
    real: &Exchange,
    absent: &Exchange,
    problems: &mut Vec<String>,
) {
    o.saw(real);
    o.saw(absent);
    if !real.is_tool_error() {
        problems.push(format!(
            "{what}: the hidden record was served (not an error)"
        ));
    } else if normalized_error(real) != normalized_error(absent) {
        problems.push(format!(
            "{what}: hidden and absent answers differ: {} vs {}",
            crate::report::cap(&normalized_error(real), 200),
            crate::report::cap(&normalized_error(absent), 200)
        ));
    }
}

fn partner(cx: &Ctx) -> Result<&crate::context::HiddenRooftop, String> {
    cx.partner.as_ref().ok_or_else(|| {
        "the partner grant's manifest lists no rooftop the anonymous manifest lacks".to_owned()
    })
}

async fn anon_get_vehicle(cx: &Ctx) -> Result<Outcome, ClientError> {
    unit_read(cx, GET_VEHICLE).await
}

async fn anon_verify(cx: &Ctx) -> Result<Outcome, ClientError> {
    unit_read(cx, VERIFY).await
}

async fn unit_read(cx: &Ctx, tool: &str) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let p = match partner(cx) {
        Ok(p) => p,
        Err(why) => return Ok(o.skip(why)),
    };
    let Some(vehicle) = &p.vehicle_id else {
        return Ok(o.skip("the partner rooftop has no vehicle to probe"));
    };
    let anon = Caller::Anonymous;
    let real = cx
        .call(
            &anon,
            tool,
            json!({"organization_id": p.organization_id, "rooftop_id": p.rooftop_id, "vehicle_id": vehicle}),
        )
        .await?;
    let absent = cx
        .call(
            &anon,
            tool,
            json!({"organization_id": p.organization_id, "rooftop_id": cx.absent("roof"), "vehicle_id": cx.absent("veh")}),
        )
        .await?;
    let mut problems = Vec::new();
    same(&mut o, tool, &real, &absent, &mut problems);
    Ok(o.conclude(
        &problems,
        "identical after removing error_id, trace_id, created_at",
    ))
}

async fn anon_search(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let p = match partner(cx) {
        Ok(p) => p,
        Err(why) => return Ok(o.skip(why)),
    };
    let anon = Caller::Anonymous;
    let real = cx
        .call(
            &anon,
            SEARCH,
            json!({"organization_id": p.organization_id, "rooftop_ids": [p.rooftop_id], "page": {"limit": 5}}),
        )
        .await?;
    let absent = cx
        .call(
            &anon,
            SEARCH,
            json!({"organization_id": p.organization_id, "rooftop_ids": [cx.absent("roof")], "page": {"limit": 5}}),
        )
        .await?;
    let mut problems = Vec::new();
    same(&mut o, SEARCH, &real, &absent, &mut problems);
    Ok(o.conclude(
        &problems,
        "identical after removing error_id, trace_id, created_at",
    ))
}

async fn cross_org(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let Some(f) = &cx.foreign else {
        return Ok(o.skip(
            "other-org's manifest lists no rooftop that the inventory grant may not read (needs an unpublished rooftop of other-org)",
        ));
    };
    let inv = Caller::role("inventory");
    let mut problems = Vec::new();
    let real = cx
        .call(
            &inv,
            SEARCH,
            json!({"organization_id": f.organization_id, "rooftop_ids": [f.rooftop_id], "page": {"limit": 5}}),
        )
        .await?;
    let absent = cx
        .call(
            &inv,
            SEARCH,
            json!({"organization_id": f.organization_id, "rooftop_ids": [cx.absent("roof")], "page": {"limit": 5}}),
        )
        .await?;
    same(&mut o, SEARCH, &real, &absent, &mut problems);
    if let Some(vehicle) = &f.vehicle_id {
        let real = cx
            .call(
                &inv,
                GET_VEHICLE,
                json!({"organization_id": f.organization_id, "rooftop_id": f.rooftop_id, "vehicle_id": vehicle}),
            )
            .await?;
        let absent = cx
            .call(
                &inv,
                GET_VEHICLE,
                json!({"organization_id": f.organization_id, "rooftop_id": cx.absent("roof"), "vehicle_id": cx.absent("veh")}),
            )
            .await?;
        same(&mut o, GET_VEHICLE, &real, &absent, &mut problems);
    }
    Ok(o.conclude(
        &problems,
        "identical after removing error_id, trace_id, created_at",
    ))
}

async fn scope_first(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let caller = Caller::role("pricing-only");
    let Some(rooftop) = cx.role_rooftops("pricing-only").into_iter().next() else {
        return Ok(o.skip("the pricing-only grant's manifest lists no rooftop"));
    };
    let Some(org) = cx.rooftop_org.get(&rooftop).cloned() else {
        return Ok(o.skip("no organization found for the pricing-only rooftop"));
    };
    let existing = cx
        .call(
            &caller,
            SEARCH,
            json!({"organization_id": org, "rooftop_ids": [rooftop], "page": {"limit": 1}}),
        )
        .await?;
    let absent = cx
        .call(
            &caller,
            SEARCH,
            json!({"organization_id": org, "rooftop_ids": [cx.absent("roof")], "page": {"limit": 1}}),
        )
        .await?;
    o.saw(&existing);
    o.saw(&absent);
    let mut problems = Vec::new();
    if existing.dap_code() != Some("dealeragent.scope.insufficient") {
        problems.push(format!(
            "existing rooftop: code {:?}, expected dealeragent.scope.insufficient",
            existing.dap_code()
        ));
    }
    if normalized_error(&existing) != normalized_error(&absent) {
        problems.push(format!(
            "existing and absent rooftops answered differently: {} vs {}",
            crate::report::cap(&normalized_error(&existing), 200),
            crate::report::cap(&normalized_error(&absent), 200)
        ));
    }
    Ok(o.conclude(
        &problems,
        "scope.insufficient, identical for existing and absent",
    ))
}

/// `_meta` members that claim a grant the request does not have.
fn forged_meta(cx: &Ctx, p: &crate::context::HiddenRooftop) -> Value {
    let mut meta = crate::client::meta_for(crate::client::MODERN);
    let token = cx.client.token("partner").unwrap_or("").to_owned();
    if let Some(m) = meta.as_object_mut() {
        m.insert(
            "com.dealeragentprotocol/grant".into(),
            json!({"organization_id": p.organization_id, "rooftop_ids": [p.rooftop_id],
                   "scopes": ["dealeragent:inventory:read"]}),
        );
        m.insert("subject".into(), json!("partner:forged"));
        m.insert("rooftop_ids".into(), json!([p.rooftop_id]));
        m.insert("authorization".into(), json!(format!("Bearer {token}")));
        m.insert(
            "io.modelcontextprotocol/authorization".into(),
            json!(format!("Bearer {token}")),
        );
    }
    meta
}

async fn forged_grants(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let p = match partner(cx) {
        Ok(p) => p,
        Err(why) => return Ok(o.skip(why)),
    };
    let anon = Caller::Anonymous;
    let args = json!({"organization_id": p.organization_id, "rooftop_ids": [p.rooftop_id], "page": {"limit": 5}});
    let plain = cx.call(&anon, SEARCH, args.clone()).await?;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": SEARCH, "arguments": args, "_meta": forged_meta(cx, p)}});
    let headers = [
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", crate::client::MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", SEARCH),
    ];
    let forged = cx
        .client
        .post_raw(&anon, &headers, &body.to_string())
        .await?;
    cx.observe(SEARCH, &anon, &forged);
    let mut problems = Vec::new();
    o.saw(&plain);
    o.saw(&forged);
    if normalized_error(&plain) != normalized_error(&forged) {
        problems
            .push("a search with forged _meta grants differs from the anonymous one".to_owned());
    }
    // An Authorization-like member inside the arguments is no credential.
    let mut with_arg = json!({"organization_id": p.organization_id, "rooftop_ids": [p.rooftop_id],
        "page": {"limit": 5}});
    with_arg["authorization"] = json!(format!(
        "Bearer {}",
        cx.client.token("partner").unwrap_or("")
    ));
    let arg_forged = cx.call(&anon, SEARCH, with_arg).await?;
    o.saw(&arg_forged);
    if arg_forged.tool_ok().is_some_and(|r| {
        r.get("vehicles")
            .and_then(Value::as_array)
            .is_some_and(|v| !v.is_empty())
    }) {
        problems.push("a token inside the arguments unlocked the partner rooftop".to_owned());
    }
    // The manifest, too, must not widen.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": GET_MANIFEST, "arguments": {}, "_meta": forged_meta(cx, p)}});
    let headers = [
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", crate::client::MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", GET_MANIFEST),
    ];
    let manifest = cx
        .client
        .post_raw(&anon, &headers, &body.to_string())
        .await?;
    let rooftops = manifest
        .structured()
        .map(|m| crate::context::ids(m, "rooftop_ids"))
        .unwrap_or_default();
    if rooftops.contains(&p.rooftop_id) {
        o.saw_first(&manifest);
        problems.push("the manifest with forged _meta lists the partner rooftop".to_owned());
    }
    Ok(o.conclude(&problems, "forged grants change nothing"))
}

async fn hits_in_scope(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    if cx.walks.is_empty() {
        return Ok(o.skip("the anonymous manifest lists no organization to search"));
    }
    let mut problems = Vec::new();
    let mut hits = 0usize;
    for w in &cx.walks {
        if let Some(ex) = &w.error {
            o.saw(ex);
            problems.push(format!(
                "search of {} ({}) failed: {:?}",
                w.organization_id,
                w.caller.label(),
                ex.dap_code()
            ));
        }
        for v in w.vehicles() {
            hits += 1;
            let rooftop = v.get("rooftop_id").and_then(Value::as_str).unwrap_or("");
            let asked = w
                .rooftop_ids
                .as_ref()
                .is_none_or(|r| r.iter().any(|x| x == rooftop));
            if !asked || !w.visible.contains(rooftop) {
                problems.push(format!(
                    "{} search of {} returned a vehicle of rooftop {rooftop:?} outside the requested/visible set",
                    w.caller.label(),
                    w.organization_id
                ));
            }
            if v.get("organization_id").and_then(Value::as_str) != Some(w.organization_id.as_str())
            {
                problems.push(format!(
                    "a hit of rooftop {rooftop:?} names another organization"
                ));
            }
            let sources = v
                .get("provenance")
                .and_then(|p| p.get("sources"))
                .and_then(Value::as_array);
            if sources.is_none_or(Vec::is_empty) {
                problems.push(format!(
                    "hit {:?} carries no provenance sources",
                    v.get("vehicle_id")
                ));
            }
        }
    }
    let truncated = cx.walks.iter().any(|w| w.truncated);
    let mut ok = format!("{hits} hits checked");
    if truncated {
        ok.push_str(&format!(
            " (a walk stopped at the {}-page bound)",
            crate::context::MAX_PAGES
        ));
    }
    Ok(o.conclude(&problems, ok))
}

async fn group_search_hides_partner(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let p = match partner(cx) {
        Ok(p) => p,
        Err(why) => return Ok(o.skip(why)),
    };
    let walk = cx
        .walks
        .iter()
        .find(|w| w.caller == Caller::Anonymous && w.organization_id == p.organization_id);
    let walk = match walk {
        Some(w) => w.clone(),
        None => {
            crate::context::walk(
                cx,
                &Caller::Anonymous,
                &p.organization_id,
                None,
                crate::context::WALK_LIMIT,
            )
            .await?
        }
    };
    if let Some(ex) = &walk.error {
        o.saw(ex);
    }
    let leaked: Vec<String> = walk
        .vehicles()
        .filter(|v| v.get("rooftop_id").and_then(Value::as_str) == Some(p.rooftop_id.as_str()))
        .filter_map(|v| {
            v.get("vehicle_id")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect();
    if !leaked.is_empty() {
        return Ok(o.fail(format!(
            "the anonymous group search returned {} vehicles of the partner rooftop (e.g. {})",
            leaked.len(),
            leaked[0]
        )));
    }
    let mut reason = format!("{} pages, no partner vehicle", walk.pages.len());
    if walk.truncated {
        reason.push_str(&format!(
            " (stopped at the {}-page bound)",
            crate::context::MAX_PAGES
        ));
    }
    Ok(o.pass(reason))
}
