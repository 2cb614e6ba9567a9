//! MCP 2026-07-28 standard request headers and their agreement with the
//! body (streamable-http "Server Validation"; SEP-2243).
//!
//! Policy (docs/mcp.md "Header policy"): a supplied header that disagrees with the
//! body is always rejected (400, -32020). An omitted header is tolerated
//! when the body supplies the value (AAP ingress rule), unless
//! `--strict-mcp-headers` is set, which restores the strict upstream rule.

use axum::http::HeaderMap;
use base64::Engine as _;

use super::error::RpcError;

pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
pub const METHOD: &str = "mcp-method";
pub const NAME: &str = "mcp-name";
pub const SESSION_ID: &str = "mcp-session-id";
/// `Mcp-Param-{Name}`: a tool argument mirrored into a header because the
/// tool's input schema declares `x-mcp-header` (the catalog's
/// `mcp_headers`); `/mcp` is routed on `Mcp-Param-Organization` by a
/// sharded deployment's load balancer (docs/operations.md "Shards").
pub const PARAM_PREFIX: &str = "mcp-param-";
/// The one declared today, on every tenant-scoped tool's `organization_id`.
pub const PARAM_ORGANIZATION: &str = "mcp-param-organization";

/// A header's value, trimmed of surrounding optional whitespace (RFC 9110
/// section 5.5). `Err` when it holds bytes that are not visible ASCII.
pub fn text<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, RpcError> {
    match headers.get(name) {
        None => Ok(None),
        Some(value) => value
            .to_str()
            .map(|s| Some(s.trim_matches([' ', '\t'])))
            .map_err(|_| {
                RpcError::HeaderMismatch(format!(
                    "{name} contains characters that are not visible ASCII"
                ))
            }),
    }
}

/// Decode the `=?base64?...?=` sentinel used for `Mcp-Name` and
/// `Mcp-Param-*` values that are not plain visible ASCII. Plain values pass
/// through unchanged.
pub fn decode_sentinel(value: &str) -> Result<String, RpcError> {
    decode_sentinel_of(value, "Mcp-Name")
}

fn decode_sentinel_of(value: &str, display: &str) -> Result<String, RpcError> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        None => Ok(value.to_owned()),
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| {
                RpcError::HeaderMismatch(format!("{display} has an invalid base64 sentinel"))
            }),
    }
}

/// Check one standard header against the value the body supplies.
/// `body` is `None` when the body does not carry the value at all.
pub fn check(
    headers: &HeaderMap,
    name: &str,
    display: &str,
    body: Option<&str>,
    strict: bool,
) -> Result<(), RpcError> {
    match text(headers, name)? {
        Some(supplied) => {
            let supplied = if name == NAME || name.starts_with(PARAM_PREFIX) {
                decode_sentinel_of(supplied, display)?
            } else {
                supplied.to_owned()
            };
            match body {
                Some(expected) if expected == supplied => Ok(()),
                // Never echo the values: they may be long or sensitive.
                Some(_) => Err(RpcError::HeaderMismatch(format!(
                    "{display} header value does not match the request body"
                ))),
                None => Err(RpcError::HeaderMismatch(format!(
                    "{display} header is present but the request body has no matching value"
                ))),
            }
        }
        None if strict && body.is_some() => Err(RpcError::HeaderMismatch(format!(
            "required {display} header is missing"
        ))),
        None => Ok(()),
    }
}

/// Check every `Mcp-Param-*` header a `tools/call`'s tool declares against
/// its argument (MCP 2026-07-28 `x-mcp-header`), under the same policy as
/// the standard headers ([`check`]): a supplied header must equal the
/// argument after trimming and sentinel decoding (a header without the
/// argument is a mismatch too); an omitted one is tolerated unless
/// `strict`. The argument is compared as its header text: a string as is,
/// an integer in decimal, a boolean as `true`/`false`; `null` counts as
/// absent. Headers a tool does not declare are not read.
pub fn check_params(
    headers: &HeaderMap,
    declared: &[crate::catalog::mcp_headers::ParamHeader],
    arguments: Option<&serde_json::Value>,
    strict: bool,
) -> Result<(), RpcError> {
    use serde_json::Value;
    for param in declared {
        let value = arguments.and_then(|a| a.get(&param.property));
        let body = match value {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Bool(b)) => Some(b.to_string()),
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(n.to_string()),
            // Not a type the header mirrors: the input schema refuses the
            // argument itself (a validation error, not a header one).
            Some(_) => continue,
        };
        let display = format!("Mcp-Param-{}", param.name);
        check(headers, &param.header, &display, body.as_deref(), strict)?;
    }
    Ok(())
}

/// `example.com:8080` -> `example.com`; `[::1]:80` -> `[::1]`.
pub fn host_without_port(host: &str) -> String {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((inner, _)) => format!("[{}]", inner.to_ascii_lowercase()),
            None => host.to_ascii_lowercase(),
        };
    }
    host.rsplit_once(':')
        .map_or(host, |(h, _)| h)
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_decodes_base64_utf8() {
        assert_eq!(decode_sentinel("=?base64?w6l0w6k=?=").unwrap(), "été");
        assert_eq!(decode_sentinel("plain.name").unwrap(), "plain.name");
        assert!(decode_sentinel("=?base64?***?=").is_err());
    }

    #[test]
    fn omission_is_tolerated_unless_strict() {
        let h = HeaderMap::new();
        assert!(check(&h, METHOD, "Mcp-Method", Some("tools/list"), false).is_ok());
        assert!(check(&h, METHOD, "Mcp-Method", Some("tools/list"), true).is_err());
    }

    #[test]
    fn supplied_conflict_is_always_rejected_and_values_are_not_echoed() {
        let mut h = HeaderMap::new();
        h.insert(METHOD, "TOOLS/LIST".parse().unwrap());
        let err = check(&h, METHOD, "Mcp-Method", Some("tools/list"), false).unwrap_err();
        assert_eq!(err.code(), -32020);
        assert!(!format!("{err:?}").contains("TOOLS/LIST"));
    }

    fn organization() -> Vec<crate::catalog::mcp_headers::ParamHeader> {
        vec![crate::catalog::mcp_headers::ParamHeader {
            property: "organization_id".into(),
            name: "Organization".into(),
            header: PARAM_ORGANIZATION.into(),
        }]
    }

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(PARAM_ORGANIZATION, value.parse().unwrap());
        h
    }

    #[test]
    fn param_header_must_equal_the_argument_and_is_never_echoed() {
        let args = serde_json::json!({"organization_id": "org.a"});
        let p = organization();
        assert!(check_params(&with("org.a"), &p, Some(&args), true).is_ok());
        assert!(check_params(&with(" org.a\t"), &p, Some(&args), true).is_ok());
        let err = check_params(&with("org.other"), &p, Some(&args), false).unwrap_err();
        assert_eq!(err.code(), -32020);
        let shown = format!("{err:?}");
        assert!(
            !shown.contains("org.other") && !shown.contains("org.a"),
            "{shown}"
        );
        assert!(shown.contains("Mcp-Param-Organization"), "{shown}");
        // Case matters: ids are compared exactly.
        assert!(check_params(&with("ORG.A"), &p, Some(&args), false).is_err());
    }

    #[test]
    fn param_header_sentinel_is_decoded_before_comparing() {
        let p = organization();
        let args = serde_json::json!({"organization_id": "org.a"});
        // base64("org.a") = b3JnLmE=
        assert!(check_params(&with("=?base64?b3JnLmE=?="), &p, Some(&args), true).is_ok());
        let accented = serde_json::json!({"organization_id": "été"});
        assert!(check_params(&with("=?base64?w6l0w6k=?="), &p, Some(&accented), true).is_ok());
        assert!(check_params(&with("=?base64?***?="), &p, Some(&args), false).is_err());
    }

    #[test]
    fn param_header_omission_follows_the_header_policy() {
        let p = organization();
        let args = serde_json::json!({"organization_id": "org.a"});
        let none = HeaderMap::new();
        assert!(check_params(&none, &p, Some(&args), false).is_ok());
        assert_eq!(
            check_params(&none, &p, Some(&args), true)
                .unwrap_err()
                .code(),
            -32020
        );
        // No argument (or null): nothing to mirror, in either mode; a
        // header without its argument disagrees with the body.
        for args in [
            serde_json::json!({}),
            serde_json::json!({"organization_id": null}),
        ] {
            assert!(check_params(&none, &p, Some(&args), true).is_ok());
            assert!(check_params(&with("org.a"), &p, Some(&args), false).is_err());
        }
        // Non-ASCII bytes in the header are a mismatch.
        let mut h = HeaderMap::new();
        h.insert(
            PARAM_ORGANIZATION,
            axum::http::HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap(),
        );
        assert!(check_params(&h, &p, Some(&args), false).is_err());
    }

    #[test]
    fn surrounding_whitespace_is_ignored() {
        let mut h = HeaderMap::new();
        h.insert(NAME, "  echo  ".parse().unwrap());
        assert!(check(&h, NAME, "Mcp-Name", Some("echo"), true).is_ok());
    }
}
