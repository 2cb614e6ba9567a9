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

/// Decode the `=?base64?...?=` sentinel used for `Mcp-Name` values that are
/// not plain visible ASCII. Plain values pass through unchanged.
pub fn decode_sentinel(value: &str) -> Result<String, RpcError> {
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
                RpcError::HeaderMismatch("Mcp-Name has an invalid base64 sentinel".into())
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
            let supplied = if name == NAME {
                decode_sentinel(supplied)?
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

    #[test]
    fn surrounding_whitespace_is_ignored() {
        let mut h = HeaderMap::new();
        h.insert(NAME, "  echo  ".parse().unwrap());
        assert!(check(&h, NAME, "Mcp-Name", Some("echo"), true).is_ok());
    }
}
