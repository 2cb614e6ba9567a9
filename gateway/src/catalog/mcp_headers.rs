//! `x-mcp-header` (MCP 2026-07-28, streamable HTTP "Custom headers from
//! tool parameters"): a tool's catalog entry may mirror an argument into a
//! request header `Mcp-Param-{Name}`, so a load balancer can route on it
//! without reading the body (docs/operations.md "Shards": `/mcp` routes on
//! `Mcp-Param-Organization`). The catalog declares it (`mcp_headers:
//! {organization_id: Organization}`); the loader checks MCP's constraints
//! and annotates the published `inputSchema` property, and the transport
//! checks the header against the body (docs/mcp.md "Header policy").

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// One argument mirrored into a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The root `inputSchema` property.
    pub property: String,
    /// The name after `Mcp-Param-` as declared (e.g. `Organization`).
    pub name: String,
    /// The full header name, lower case (`mcp-param-organization`).
    pub header: String,
}

/// Check `declared` (property -> header name) against MCP's constraints and
/// write `x-mcp-header` on each property of the published `schema`:
/// the property is a root property (reachable through `properties` alone)
/// whose type is string, integer or boolean; the name is a non-empty
/// RFC 9110 token, unique case-insensitively within the tool.
pub(super) fn declare(
    schema: &mut Value,
    declared: &BTreeMap<String, String>,
) -> Result<Vec<ParamHeader>, String> {
    let mut out: Vec<ParamHeader> = Vec::with_capacity(declared.len());
    for (property, name) in declared {
        if name.is_empty() || !name.bytes().all(is_tchar) {
            return Err(format!(
                "mcp_headers: `{name}` is not an RFC 9110 token (x-mcp-header)"
            ));
        }
        let header = format!("mcp-param-{}", name.to_ascii_lowercase());
        if out.iter().any(|p| p.header == header) {
            return Err(format!(
                "mcp_headers: `{name}` is declared twice (names are case-insensitive)"
            ));
        }
        let defs = schema.get("$defs").cloned().unwrap_or(Value::Null);
        let Some(member) = schema
            .get_mut("properties")
            .and_then(|p| p.get_mut(property))
            .and_then(Value::as_object_mut)
        else {
            return Err(format!(
                "mcp_headers: `{property}` is not a property of the input schema's root"
            ));
        };
        let ty = primitive_type(member, &defs).map(str::to_owned);
        let Some(ty) = ty.filter(|t| matches!(t.as_str(), "string" | "integer" | "boolean")) else {
            return Err(format!(
                "mcp_headers: `{property}` must be a string, integer or boolean (x-mcp-header)"
            ));
        };
        // Clients read the `type` keyword of the property itself and drop
        // a tool whose header property has none (the official Python SDK
        // does): a property that is a `$ref` to a primitive definition
        // states that definition's type beside the reference, which
        // validates exactly the same values.
        member.entry("type").or_insert_with(|| json!(ty));
        member.insert("x-mcp-header".into(), json!(name));
        out.push(ParamHeader {
            property: property.clone(),
            name: name.clone(),
            header,
        });
    }
    Ok(out)
}

/// The `type` of a property schema, through one local `$ref`.
fn primitive_type<'a>(member: &'a Map<String, Value>, defs: &'a Value) -> Option<&'a str> {
    if let Some(ty) = member.get("type") {
        return ty.as_str();
    }
    let name = member.get("$ref")?.as_str()?.strip_prefix("#/$defs/")?;
    defs.get(name)?.get("type")?.as_str()
}

/// RFC 9110 section 5.6.2 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'!' | b'#'
                | b'$'
                | b'%'
                | b'&'
                | b'\''
                | b'*'
                | b'+'
                | b'-'
                | b'.'
                | b'^'
                | b'_'
                | b'`'
                | b'|'
                | b'~'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "organization_id": {"$ref": "#/$defs/identifier"},
            "flag": {"type": "boolean"},
            "list": {"type": "array"},
            "nested": {"type": "object", "properties": {"x": {"type": "string"}}}
        }, "$defs": {"identifier": {"type": "string"}}})
    }

    fn one(property: &str, name: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(property.to_owned(), name.to_owned())])
    }

    #[test]
    fn a_primitive_root_property_is_annotated() {
        let mut s = schema();
        let declared = declare(&mut s, &one("organization_id", "Organization")).unwrap();
        assert_eq!(declared[0].header, "mcp-param-organization");
        assert_eq!(
            s["properties"]["organization_id"]["x-mcp-header"],
            "Organization"
        );
        // The type a client checks is on the property itself, beside the
        // reference it came from.
        assert_eq!(s["properties"]["organization_id"]["type"], "string");
        assert_eq!(
            s["properties"]["organization_id"]["$ref"],
            "#/$defs/identifier"
        );
    }

    #[test]
    fn mcp_constraints_are_enforced() {
        for (property, name) in [
            ("list", "List"),
            ("nested", "Nested"),
            ("x", "X"),
            ("missing", "Missing"),
            ("flag", ""),
            ("flag", "Has Space"),
            ("flag", "Ünicode"),
        ] {
            assert!(
                declare(&mut schema(), &one(property, name)).is_err(),
                "{property} {name}"
            );
        }
        let twice = BTreeMap::from([
            ("flag".to_owned(), "Same".to_owned()),
            ("organization_id".to_owned(), "SAME".to_owned()),
        ]);
        assert!(declare(&mut schema(), &twice).is_err());
    }
}
