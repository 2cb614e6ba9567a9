//! `completion/complete` (MCP server utilities, "Completion") for the
//! arguments of our prompts and the parameters of our resource templates:
//! organization and rooftop identifiers and vehicle makes.
//!
//! Only values the caller may see are offered: the directory filtered by
//! the caller's grant (anonymous callers: published organizations and
//! rooftops only), and makes in stock at those rooftops (DAP-CORE-031: no
//! existence oracle). A reference or argument we do not complete (an
//! unknown prompt, a free-text argument, another server's template) gets
//! an empty list, not an error, so that the answer never tells a caller
//! whether a name exists.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::error::RpcError;
use crate::auth::Principal;
use crate::state::AppState;

/// MCP: at most 100 values per completion.
pub const MAX_VALUES: usize = 100;

/// The resource templates whose parameters we complete.
const TEMPLATE_PREFIX: &str = "dealeragent://organization/{organization_id}";

/// What is being completed.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Kind {
    Organization,
    Rooftop,
    Make,
    Nothing,
}

fn kind_of(reference: &Value, argument: &str) -> Result<Kind, RpcError> {
    let ref_type = reference.get("type").and_then(Value::as_str).ok_or_else(|| {
        RpcError::InvalidParams(
            "params.ref must be {\"type\": \"ref/prompt\", \"name\": …} or {\"type\": \"ref/resource\", \"uri\": …}"
                .into(),
        )
    })?;
    let by_name = |allowed: &[&str]| match argument {
        "organization_id" if allowed.contains(&"organization_id") => Kind::Organization,
        "rooftop_id" if allowed.contains(&"rooftop_id") => Kind::Rooftop,
        "make" if allowed.contains(&"make") => Kind::Make,
        _ => Kind::Nothing,
    };
    match ref_type {
        "ref/prompt" => {
            let name = reference
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    RpcError::InvalidParams("params.ref.name must be a prompt name".into())
                })?;
            Ok(super::prompts::find(name).map_or(Kind::Nothing, |p| {
                let args: Vec<&str> = p.arguments.iter().map(|a| a.name).collect();
                by_name(&args)
            }))
        }
        "ref/resource" => {
            let uri = reference
                .get("uri")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    RpcError::InvalidParams("params.ref.uri must be a URI template".into())
                })?;
            if !uri.starts_with(TEMPLATE_PREFIX)
                || !crate::resources::templates()
                    .iter()
                    .any(|t| t["uriTemplate"] == uri)
            {
                return Ok(Kind::Nothing);
            }
            let mut params = vec!["organization_id"];
            if uri.contains("{rooftop_id}") {
                params.push("rooftop_id");
            }
            Ok(by_name(&params))
        }
        _ => Err(RpcError::InvalidParams(
            "params.ref.type must be ref/prompt or ref/resource".into(),
        )),
    }
}

/// `completion/complete`.
pub async fn complete(
    state: &AppState,
    principal: &Principal,
    params: &Value,
) -> Result<Value, RpcError> {
    let reference = params
        .get("ref")
        .ok_or_else(|| RpcError::InvalidParams("params.ref is required".into()))?;
    let argument = params.get("argument").ok_or_else(|| {
        RpcError::InvalidParams("params.argument {\"name\", \"value\"} is required".into())
    })?;
    let (Some(name), Some(value)) = (
        argument.get("name").and_then(Value::as_str),
        argument.get("value").and_then(Value::as_str),
    ) else {
        return Err(RpcError::InvalidParams(
            "params.argument must have string members name and value".into(),
        ));
    };
    let context = params
        .get("context")
        .and_then(|c| c.get("arguments"))
        .and_then(Value::as_object);
    let chosen_org = context
        .and_then(|c| c.get("organization_id"))
        .and_then(Value::as_str);
    let kind = kind_of(reference, name)?;
    let candidates = match kind {
        Kind::Nothing => BTreeSet::new(),
        _ => candidates(state, principal, kind, chosen_org).await?,
    };
    let prefix = value.to_lowercase();
    let matched: Vec<&String> = candidates
        .iter()
        .filter(|c| c.to_lowercase().starts_with(&prefix))
        .collect();
    let total = matched.len();
    let values: Vec<&String> = matched.into_iter().take(MAX_VALUES).collect();
    Ok(json!({"completion": {
        "values": values,
        "total": total,
        "hasMore": total > MAX_VALUES,
    }}))
}

/// Every value of `kind` the caller may see, narrowed to `chosen_org`
/// when the client has already chosen one.
async fn candidates(
    state: &AppState,
    principal: &Principal,
    kind: Kind,
    chosen_org: Option<&str>,
) -> Result<BTreeSet<String>, RpcError> {
    let directory = state.directory.snapshot().await.map_err(unavailable)?;
    let mut out = BTreeSet::new();
    let mut rooftops: Vec<String> = Vec::new();
    for org in &directory.organizations {
        if chosen_org.is_some_and(|c| c != org.organization_id) {
            continue;
        }
        let visible = principal.visible_rooftops(org);
        if visible.is_empty() {
            continue;
        }
        match kind {
            Kind::Organization => {
                out.insert(org.organization_id.clone());
            }
            Kind::Rooftop => out.extend(visible.iter().map(|r| r.rooftop_id.clone())),
            Kind::Make => rooftops.extend(visible.iter().map(|r| r.rooftop_id.clone())),
            Kind::Nothing => {}
        }
    }
    if kind == Kind::Make && !rooftops.is_empty() {
        let view = state
            .inventory
            .view(&directory)
            .await
            .map_err(unavailable)?;
        for rooftop in &rooftops {
            if let Some(inventory) = view.rooftop(rooftop) {
                out.extend(inventory.latest.makes_in_stock().map(str::to_owned));
            }
        }
    }
    Ok(out)
}

fn unavailable(e: crate::store::StoreError) -> RpcError {
    tracing::warn!(error = %e, "completion: store unavailable");
    RpcError::Unavailable("the directory cannot be read now; retry shortly".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_pick_what_to_complete() {
        let p = |name: &str| json!({"type": "ref/prompt", "name": name});
        let r = |uri: &str| json!({"type": "ref/resource", "uri": uri});
        assert_eq!(
            kind_of(&p("find_vehicles"), "organization_id").unwrap(),
            Kind::Organization
        );
        assert_eq!(kind_of(&p("find_vehicles"), "make").unwrap(), Kind::Make);
        assert_eq!(
            kind_of(&p("find_vehicles"), "rooftop_id").unwrap(),
            Kind::Nothing
        );
        assert_eq!(
            kind_of(&p("explain_disclosure"), "rooftop_id").unwrap(),
            Kind::Rooftop
        );
        assert_eq!(
            kind_of(&p("test_prompt_with_arguments"), "arg1").unwrap(),
            Kind::Nothing
        );
        assert_eq!(
            kind_of(
                &r("dealeragent://organization/{organization_id}/rooftop/{rooftop_id}"),
                "rooftop_id"
            )
            .unwrap(),
            Kind::Rooftop
        );
        assert_eq!(
            kind_of(
                &r("dealeragent://organization/{organization_id}"),
                "rooftop_id"
            )
            .unwrap(),
            Kind::Nothing
        );
        assert_eq!(
            kind_of(&r("file:///{path}"), "path").unwrap(),
            Kind::Nothing
        );
        assert!(kind_of(&json!({"type": "ref/other"}), "x").is_err());
        assert!(kind_of(&json!({}), "x").is_err());
    }
}
