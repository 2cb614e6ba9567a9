//! MCP resources: the manifest and the reserved dealer URIs (DAP section 1
//! "Resources"). A URI is not a grant: every read goes through the same
//! policy as the tools, and an invisible organization or rooftop reads as
//! absent.

use serde_json::{Value, json};

use crate::auth::Principal;
use crate::manifest;
use crate::state::AppState;
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
        json!({
            "uriTemplate": "dealeragent://organization/{organization_id}/rooftop/{rooftop_id}/vehicle/{vehicle_id}",
            "name": "vehicle",
            "title": "Vehicle",
            "description": "One published vehicle (DAP vehicle) with provenance and freshness; short-lived: re-read it rather than caching it past its ttl.",
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
                "title": rooftop.dap.name,
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
    Vehicle(&'a str, &'a str, &'a str),
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
        [org, "rooftop", rooftop, "vehicle", vehicle] if ok(org) && ok(rooftop) && ok(vehicle) => {
            Some(Target::Vehicle(org, rooftop, vehicle))
        }
        _ => None,
    }
}

/// The organization whose inventory the resource at `uri` is read from (a
/// vehicle resource), for a sharded replica's routing check
/// (docs/operations.md "Shards"); the directory's resources read no
/// inventory and every replica answers them.
pub fn inventory_organization(uri: &str) -> Option<&str> {
    match parse(uri) {
        Some(Target::Vehicle(org, _, _)) => Some(org),
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
    let mut ttl = state.directory_ttl_ms();
    let document = match target {
        Target::Vehicle(_, _, _) if !has_profile_scope(state, principal, VEHICLE_TEMPLATE) => {
            // A resource needs the scope of the profile that declares it,
            // exactly like the matching tool (get_vehicle); without it the
            // resource reads as absent.
            Err(ToolError::NotFound)
        }
        Target::Vehicle(org, rooftop, vehicle_id) => {
            match vehicle(state, &snapshot, principal, org, rooftop, vehicle_id).await? {
                Some((doc, vehicle_ttl)) => {
                    ttl = vehicle_ttl;
                    Ok(doc)
                }
                None => Err(ToolError::NotFound),
            }
        }
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

/// The vehicle resource's template: a grant must hold the scopes of the
/// profile that declares it to read (or subscribe to) a vehicle.
pub(crate) const VEHICLE_TEMPLATE: &str =
    "dealeragent://organization/{organization_id}/rooftop/{rooftop_id}/vehicle/{vehicle_id}";

/// Does the caller hold the scopes of the catalog profile that declares
/// `template`? Anonymous callers are governed by publication policy only.
/// A subscription is held to the same rule (`watch::authorize`).
pub(crate) fn has_profile_scope(state: &AppState, principal: &Principal, template: &str) -> bool {
    let Some(grant) = principal.grant() else {
        return true;
    };
    state
        .catalog
        .profiles
        .iter()
        .filter(|p| p.resources.iter().any(|r| r == template))
        .flat_map(|p| &p.scopes)
        .all(|scope| grant.has_scope(scope))
}

/// The organization and rooftops a resource URI names (for audit).
pub fn tenancy_of(uri: &str) -> (Option<String>, Vec<String>) {
    match parse(uri) {
        Some(Target::Organization(org)) => (Some(org.to_owned()), Vec::new()),
        Some(Target::Rooftop(org, rooftop) | Target::Vehicle(org, rooftop, _)) => {
            (Some(org.to_owned()), vec![rooftop.to_owned()])
        }
        Some(Target::Manifest) | None => (None, Vec::new()),
    }
}

/// The catalog profile that declares the resource at `uri` (for audit).
pub fn profile_of(state: &AppState, uri: &str) -> String {
    let template = match parse(uri) {
        Some(Target::Manifest) => MANIFEST_URI,
        Some(Target::Organization(_)) => "dealeragent://organization/{organization_id}",
        Some(Target::Rooftop(_, _)) => {
            "dealeragent://organization/{organization_id}/rooftop/{rooftop_id}"
        }
        Some(Target::Vehicle(_, _, _)) => VEHICLE_TEMPLATE,
        None => return String::new(),
    };
    state
        .catalog
        .profiles
        .iter()
        .find(|p| p.resources.iter().any(|r| r == template))
        .map(|p| p.id.clone())
        .unwrap_or_default()
}

/// The longest a vehicle resource may be cached: availability and prices
/// move, so vehicle documents are short-lived (DAP: nonpublic or volatile
/// data uses short ttls).
const VEHICLE_MAX_TTL_MS: u64 = 60_000;

/// A vehicle resource: the same policy and lookup as
/// `dealeragent.inventory.get_vehicle` by `vehicle_id`. The ttl is at most
/// a minute, never past the record's validity, and 0 once it is stale or
/// withdrawn.
async fn vehicle(
    state: &AppState,
    directory: &crate::directory::DirectorySnapshot,
    principal: &Principal,
    organization_id: &str,
    rooftop_id: &str,
    vehicle_id: &str,
) -> Result<Option<(Value, u64)>, StoreError> {
    let Ok(rooftop) =
        crate::tools::policy::authorize_rooftop(directory, principal, organization_id, rooftop_id)
    else {
        return Ok(None);
    };
    let view = state.inventory.view(directory).await?;
    let Some(found) = crate::tools::get_vehicle::lookup(
        &view,
        &rooftop.rooftop_id,
        crate::tools::get_vehicle::Selector::VehicleId(vehicle_id),
    ) else {
        return Ok(None);
    };
    let doc = crate::tools::get_vehicle::render_found(&found);
    let ttl = doc["freshness"]["valid_until"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .filter(|_| doc["freshness"]["state"] == "current")
        .map_or(0, |until| {
            let left = (until.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_milliseconds();
            u64::try_from(left.max(0))
                .unwrap_or(0)
                .min(VEHICLE_MAX_TTL_MS)
        });
    Ok(Some((doc, ttl)))
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
        assert_eq!(
            parse("dealeragent://organization/org.a/rooftop/roof.b/vehicle/veh.c"),
            Some(Target::Vehicle("org.a", "roof.b", "veh.c"))
        );
        assert_eq!(parse("file:///etc/passwd"), None);
    }
}
