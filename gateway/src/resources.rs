//! MCP resources: the manifest and the reserved dealer URIs (DAP section 1
//! "Resources"). A URI is not a grant: every read goes through the same
//! policy as the tools, and an invisible organization or rooftop reads as
//! absent.

use serde_json::{Value, json};

use crate::app::AppState;
use crate::auth::Principal;
use crate::manifest;
use crate::store::StoreError;
use crate::tools::{ToolError, dealer_get};

pub const MANIFEST_URI: &str = "dealeragent://manifest";
const ORG_PREFIX: &str = "dealeragent://organization/";

/// The resource templates (RFC 6570) this gateway serves.
pub fn templates() -> Vec<Value> {
    vec![
        json!({
            "uriTemplate": "dealeragent://organization/{organization_id}",
            "name": "dealer-organization",
            "title": "Dealer organization",
            "description": "A dealer organization and the rooftops you may see (DAP dealerOrganization).",
            "mimeType": "application/json"
        }),
        json!({
            "uriTemplate": "dealeragent://organization/{organization_id}/rooftop/{rooftop_id}",
            "name": "dealer-rooftop",
            "title": "Dealer rooftop",
            "description": "One rooftop of a dealer organization, as a DAP dealerOrganization narrowed to that rooftop.",
            "mimeType": "application/json"
        }),
    ]
}

/// `resources/list`: the manifest plus every organization and rooftop the
/// caller may see, and the cache scope of that view.
pub async fn list(
    state: &AppState,
    principal: &Principal,
) -> Result<(Vec<Value>, &'static str), StoreError> {
    let snapshot = state.directory.snapshot().await?;
    let mut out = vec![json!({
        "uri": MANIFEST_URI,
        "name": "manifest",
        "title": "Dealer Agent Protocol manifest",
        "description": "What this gateway serves, for whom, and how fresh (same object as dealeragent.discovery.get_manifest).",
        "mimeType": "application/json"
    })];
    for org in &snapshot.organizations {
        let visible = principal.visible_rooftops(org);
        if visible.is_empty() {
            continue;
        }
        out.push(json!({
            "uri": format!("{ORG_PREFIX}{}", org.organization_id),
            "name": org.organization_id,
            "title": org.name,
            "mimeType": "application/json"
        }));
        for rooftop in visible {
            out.push(json!({
                "uri": format!("{ORG_PREFIX}{}/rooftop/{}", org.organization_id, rooftop.rooftop_id),
                "name": rooftop.rooftop_id,
                "title": rooftop.dap.get("name").cloned().unwrap_or(Value::Null),
                "mimeType": "application/json"
            }));
        }
    }
    Ok((out, principal.cache_scope()))
}

/// The parts of a reserved dealer URI.
#[derive(Debug, PartialEq, Eq)]
enum Target<'a> {
    Manifest,
    Organization(&'a str),
    Rooftop(&'a str, &'a str),
}

fn parse(uri: &str) -> Option<Target<'_>> {
    if uri == MANIFEST_URI {
        return Some(Target::Manifest);
    }
    let rest = uri.strip_prefix(ORG_PREFIX)?;
    let segments: Vec<&str> = rest.split('/').collect();
    let ok = |s: &str| !s.is_empty() && s.len() <= 128;
    match segments.as_slice() {
        [org] if ok(org) => Some(Target::Organization(org)),
        [org, "rooftop", rooftop] if ok(org) && ok(rooftop) => Some(Target::Rooftop(org, rooftop)),
        _ => None,
    }
}

/// `resources/read`: `Ok(None)` when the resource does not exist or is not
/// visible (the same answer for both). Returns the content entry, `ttlMs`
/// and `cacheScope`.
pub async fn read(
    state: &AppState,
    principal: &Principal,
    uri: &str,
) -> Result<Option<(Value, u64, &'static str)>, StoreError> {
    let Some(target) = parse(uri) else {
        return Ok(None);
    };
    let snapshot = state.directory.snapshot().await?;
    let ttl = state.directory_ttl_ms();
    let document = match target {
        Target::Manifest => manifest::build(state, &snapshot, principal, None),
        Target::Organization(org) => dealer_get::organization_view(&snapshot, principal, org, None),
        Target::Rooftop(org, rooftop) => {
            dealer_get::organization_view(&snapshot, principal, org, Some(&[rooftop]))
        }
    };
    match document {
        Ok(doc) => Ok(Some((
            json!({
                "uri": uri,
                "mimeType": "application/json",
                "text": serde_json::to_string(&doc).unwrap_or_default()
            }),
            ttl,
            principal.cache_scope(),
        ))),
        Err(ToolError::NotFound) => Ok(None),
        Err(other) => Err(StoreError::Query(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_uris_parse_and_others_do_not() {
        assert_eq!(parse("dealeragent://manifest"), Some(Target::Manifest));
        assert_eq!(
            parse("dealeragent://organization/org.a"),
            Some(Target::Organization("org.a"))
        );
        assert_eq!(
            parse("dealeragent://organization/org.a/rooftop/roof.b"),
            Some(Target::Rooftop("org.a", "roof.b"))
        );
        assert_eq!(parse("dealeragent://organization/"), None);
        assert_eq!(parse("dealeragent://organization/org.a/rooftop/"), None);
        assert_eq!(parse("dealeragent://organization/org.a/vehicle/x"), None);
        assert_eq!(parse("file:///etc/passwd"), None);
    }
}
