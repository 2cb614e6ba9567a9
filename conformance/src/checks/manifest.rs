//! DAPC-MAN: the capability manifest (DAP 0.1 discovery).

use std::collections::BTreeSet;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::Check;
use crate::client::{Caller, ClientError};
use crate::context::Ctx;
use crate::report::Outcome;
use crate::schemas::Kind;

const G: &str = "manifest";

/// The profiles of the dealeragent.core-retail-read/0.1 bundle.
const CORE_PROFILES: [&str; 4] = [
    "dealeragent.discovery/0.1",
    "dealeragent.inventory.read/0.1",
    "dealeragent.inventory.availability/0.1",
    "dealeragent.pricing.disclosure/0.1",
];

pub const CHECKS: &[Check] = &[
    Check {
        id: "DAPC-MAN-001",
        group: G,
        title: "get_manifest and the dealeragent://manifest resource agree",
        section: "DAP 0.1 discovery (manifest tool and resource)",
        keyword: "MUST",
        text: "the get_manifest tool and the dealeragent://manifest resource give the same manifest",
        required: true,
        roles: &[],
        run: |cx| Box::pin(tool_equals_resource(cx)),
    },
    Check {
        id: "DAPC-MAN-002",
        group: G,
        title: "the manifest validates against the manifest schema",
        section: "DAP 0.1 discovery; schemas/manifest",
        keyword: "MUST",
        text: "the manifest is a valid DAP manifest object",
        required: true,
        roles: &[],
        run: |cx| Box::pin(manifest_valid(cx)),
    },
    Check {
        id: "DAPC-MAN-003",
        group: G,
        title: "capability tools and tools/list agree",
        section: "DAP 0.1 discovery (capabilities)",
        keyword: "MUST",
        text: "each capability's tools exist in tools/list and every dealeragent.* tool in tools/list belongs to a capability",
        required: true,
        roles: &[],
        run: |cx| Box::pin(capabilities_match_tools(cx)),
    },
    Check {
        id: "DAPC-MAN-004",
        group: G,
        title: "the four core-retail-read profiles are present",
        section: "DAP 0.1 profiles (dealeragent.core-retail-read/0.1)",
        keyword: "MUST",
        text: "discovery, inventory.read, inventory.availability and pricing.disclosure 0.1 are advertised",
        required: true,
        roles: &[],
        run: |cx| Box::pin(core_profiles(cx)),
    },
    Check {
        id: "DAPC-MAN-005",
        group: G,
        title: "every tool declares object input and output schemas",
        section: "MCP 2026-07-28 tools; DAP 0.1 MCP binding",
        keyword: "MUST",
        text: "each tool in tools/list has inputSchema and outputSchema whose root type is object",
        required: true,
        roles: &[],
        run: |cx| Box::pin(tool_schemas(cx)),
    },
    Check {
        id: "DAPC-MAN-006",
        group: G,
        title: "conformance evidence is named and its digest holds",
        section: "DAP 0.1 section 14 (conformance claims)",
        keyword: "MUST",
        text: "the manifest's conformance names claim_uri and claim_digest; when claim_uri answers 200 the sha256 of its bytes is claim_digest",
        required: true,
        roles: &[],
        run: |cx| Box::pin(conformance_digest(cx)),
    },
];

/// A manifest without its issue and expiry times, which move with the
/// clock between two reads.
fn timeless(m: &Value) -> Value {
    let mut m = m.clone();
    if let Some(map) = m.as_object_mut() {
        map.remove("issued_at");
        map.remove("expires_at");
    }
    m
}

async fn tool_equals_resource(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    if let Some(ex) = &cx.manifest_exchange {
        o.saw(ex);
    }
    let ex = cx
        .client
        .modern(
            &Caller::Anonymous,
            "resources/read",
            json!({"uri": "dealeragent://manifest"}),
        )
        .await?;
    o.saw(&ex);
    let text = ex
        .result()
        .and_then(|r| r.get("contents"))
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str);
    let Some(resource) = text.and_then(|t| serde_json::from_str::<Value>(t).ok()) else {
        return Ok(o.fail("resources/read dealeragent://manifest gave no JSON text content"));
    };
    if cx.manifest.is_null() {
        return Ok(o.fail("get_manifest gave no manifest"));
    }
    if timeless(&resource) == timeless(&cx.manifest) {
        Ok(o.pass("equal (issued_at and expires_at ignored: they follow the clock)"))
    } else {
        Ok(o.fail("the resource and the tool give different manifests"))
    }
}

async fn manifest_valid(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    if let Some(ex) = &cx.manifest_exchange {
        o.saw(ex);
    }
    let mut problems: Vec<String> = cx
        .schemas
        .errors(Kind::Manifest, &cx.manifest)
        .into_iter()
        .map(|e| format!("anonymous manifest {e}"))
        .collect();
    for (role, m) in &cx.role_manifests {
        problems.extend(
            cx.schemas
                .errors(Kind::Manifest, m)
                .into_iter()
                .map(|e| format!("{role} manifest {e}")),
        );
    }
    Ok(o.conclude(
        &problems,
        format!("valid against {}", cx.schemas.pointer(Kind::Manifest)),
    ))
}

fn capability_tools(m: &Value) -> BTreeSet<String> {
    m.get("capabilities")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|c| {
            c.get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

async fn capabilities_match_tools(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    if let Some(ex) = &cx.tools_list {
        o.saw(ex);
    }
    let listed: BTreeSet<String> = cx.tool_names().into_iter().collect();
    let declared = capability_tools(&cx.manifest);
    let mut problems = Vec::new();
    if declared.is_empty() {
        problems.push("the manifest declares no capability tools".to_owned());
    }
    for t in declared.difference(&listed) {
        problems.push(format!("capability tool {t} is not in tools/list"));
    }
    for t in listed.iter().filter(|t| t.starts_with("dealeragent.")) {
        if !declared.contains(t) {
            problems.push(format!("tools/list tool {t} is in no capability"));
        }
    }
    Ok(o.conclude(
        &problems,
        format!("{} capability tools all listed", declared.len()),
    ))
}

async fn core_profiles(cx: &Ctx) -> Result<Outcome, ClientError> {
    let o = Outcome::new();
    let profiles: BTreeSet<&str> = cx
        .manifest
        .get("capabilities")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("profile").and_then(Value::as_str))
        .collect();
    let problems: Vec<String> = CORE_PROFILES
        .iter()
        .filter(|p| !profiles.contains(*p))
        .map(|p| format!("profile {p} missing"))
        .collect();
    Ok(o.conclude(&problems, "all four present"))
}

async fn tool_schemas(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    if let Some(ex) = &cx.tools_list {
        o.saw(ex);
    }
    let tools = cx.tools();
    let mut problems = Vec::new();
    if tools.is_empty() {
        problems.push("tools/list returned no tools".to_owned());
    }
    for t in &tools {
        let name = t.get("name").and_then(Value::as_str).unwrap_or("?");
        for member in ["inputSchema", "outputSchema"] {
            match t.get(member).and_then(|s| s.get("type")) {
                Some(ty) if ty == "object" => {}
                other => problems.push(format!("{name}: {member} root type is {other:?}")),
            }
        }
    }
    Ok(o.conclude(&problems, format!("{} tools checked", tools.len())))
}

async fn conformance_digest(cx: &Ctx) -> Result<Outcome, ClientError> {
    let mut o = Outcome::new();
    let Some(c) = cx.manifest.get("conformance") else {
        return Ok(o.fail("the manifest has no conformance member"));
    };
    let (Some(uri), Some(digest)) = (
        c.get("claim_uri").and_then(Value::as_str),
        c.get("claim_digest").and_then(Value::as_str),
    ) else {
        return Ok(o.fail("conformance lacks claim_uri or claim_digest"));
    };
    let (status, bytes) = match cx.client.get_bytes(uri).await {
        Ok(answer) => answer,
        Err(e) => {
            return Ok(o.pass(format!(
                "claim_uri does not answer ({e}); digest not checked"
            )));
        }
    };
    o.evidence.push(json!({
        "sent": {"get": uri},
        "received": {"status": status, "bytes": bytes.len()},
    }));
    if status != 200 {
        return Ok(o.pass(format!("claim_uri answers {status}; digest not checked")));
    }
    let actual = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
    if actual == digest {
        Ok(o.pass("claim_digest matches the served bytes"))
    } else {
        Ok(o.fail(format!(
            "claim_digest {digest} but the served claim hashes to {actual}"
        )))
    }
}
