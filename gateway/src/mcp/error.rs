//! Protocol-level failures (JSON-RPC errors) and their HTTP status.
//!
//! Only envelope, routing and infrastructure problems are JSON-RPC errors;
//! a tool that ran and failed answers `isError: true` (DAP spec 11, MCP
//! SEP-1303). Every modern-path rejection carries a JSON-RPC body so that a
//! modern client never mistakes it for a legacy server (docs/mcp.md "Header
//! policy").

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{INITIALIZE_REVISIONS, PER_REQUEST_REVISIONS};

/// Closed set of protocol errors. `status_and_body` maps each exactly once.
#[derive(Debug, Clone, PartialEq)]
pub enum RpcError {
    /// -32700: the body is not JSON.
    Parse,
    /// -32600: JSON, but not a single JSON-RPC 2.0 request.
    InvalidRequest(String),
    /// -32602 at the envelope: missing or malformed per-request `_meta`.
    InvalidMeta(String),
    /// -32020: a header is missing (strict mode) or disagrees with the body.
    HeaderMismatch(String),
    /// -32022: the requested protocol revision is not served.
    UnsupportedVersion { requested: String },
    /// -32601: unknown or removed method.
    MethodNotFound,
    /// -32602 from a method: bad params or an unknown tool.
    InvalidParams(String),
    /// Unknown resource: -32602 with `data.uri` (2026-07-28, SEP-2164) or
    /// -32002 (2025-11-25).
    ResourceNotFound { uri: String, legacy: bool },
    /// -32600 on the legacy path: no session id; send initialize first.
    SessionRequired,
    /// Legacy session id unknown or terminated: HTTP 404.
    SessionNotFound,
    /// -32600 with HTTP 400: the organization id in an AAP endpoint path
    /// (`/aap/{organization_id}/mcp`) is not an identifier. The path is not
    /// echoed (it is caller input).
    InvalidEndpoint,
    /// -32600 with HTTP 404: no AAP endpoint is served at this path for
    /// this caller. An unknown organization and one the caller may not see
    /// get this same answer (DAP-CORE-031: no existence oracle).
    EndpointNotFound,
    /// A subscription cap (docs/mcp.md "Subscriptions"): -32602 with HTTP
    /// 429 and `data.reason` (`too_many_streams`, `too_many_subscriptions`);
    /// the message names the limit.
    TooMany {
        reason: &'static str,
        message: String,
    },
    /// -32603: the gateway failed; the detail is logged under `error_id`.
    Internal { error_id: String, unavailable: bool },
    /// -32603 with HTTP 503 and `Retry-After`: the gateway cannot take the
    /// request now (the request timed out, every connection is busy). The
    /// message says which; nothing failed that an operator must look up.
    Unavailable(String),
}

impl RpcError {
    pub fn code(&self) -> i64 {
        match self {
            Self::Parse => -32700,
            Self::InvalidRequest(_)
            | Self::SessionRequired
            | Self::SessionNotFound
            | Self::InvalidEndpoint
            | Self::EndpointNotFound => -32600,
            Self::InvalidMeta(_) | Self::InvalidParams(_) | Self::TooMany { .. } => -32602,
            Self::HeaderMismatch(_) => -32020,
            Self::UnsupportedVersion { .. } => -32022,
            Self::MethodNotFound => -32601,
            Self::ResourceNotFound { legacy: true, .. } => -32002,
            Self::ResourceNotFound { legacy: false, .. } => -32602,
            Self::Internal { .. } | Self::Unavailable(_) => -32603,
        }
    }

    /// HTTP status, message and optional `data` of this error.
    pub fn parts(&self) -> (StatusCode, String, Option<Value>) {
        match self {
            Self::Parse => (StatusCode::BAD_REQUEST, "Parse error: the body is not valid JSON".into(), None),
            Self::InvalidRequest(m) => (StatusCode::BAD_REQUEST, format!("Invalid request: {m}"), None),
            Self::InvalidMeta(m) => (StatusCode::BAD_REQUEST, format!("Invalid params: {m}"), None),
            Self::HeaderMismatch(m) => (StatusCode::BAD_REQUEST, format!("Header mismatch: {m}"), None),
            // MCP 2026-07-28 requires `supported` and `requested`. Only the
            // revisions usable on this (per-request) path are `supported`;
            // those that need the handshake are listed apart, so a client
            // retrying with a `supported` entry cannot loop.
            Self::UnsupportedVersion { requested } => (
                StatusCode::BAD_REQUEST,
                if INITIALIZE_REVISIONS.contains(&requested.as_str()) {
                    "Unsupported protocol version for per-request _meta: this revision is served only through the initialize handshake (send initialize without per-request _meta), or name 2026-07-28 in _meta".into()
                } else {
                    "Unsupported protocol version: name 2026-07-28 in per-request _meta, or use the initialize handshake for 2025-11-25".into()
                },
                Some(json!({
                    "supported": PER_REQUEST_REVISIONS,
                    "requested": requested,
                    "requires_initialize": INITIALIZE_REVISIONS,
                })),
            ),
            Self::MethodNotFound => (StatusCode::NOT_FOUND, "Method not found".into(), None),
            Self::InvalidParams(m) => (StatusCode::OK, format!("Invalid params: {m}"), None),
            Self::TooMany { reason, message } => (
                StatusCode::TOO_MANY_REQUESTS,
                format!("Invalid params: {message}"),
                Some(json!({"reason": reason})),
            ),
            Self::ResourceNotFound { uri, .. } => {
                (StatusCode::OK, "Resource not found".into(), Some(json!({"uri": uri})))
            }
            Self::SessionRequired => (
                StatusCode::BAD_REQUEST,
                "Invalid request: missing Mcp-Session-Id; send initialize first (2025-11-25) or per-request _meta (2026-07-28)".into(),
                None,
            ),
            Self::SessionNotFound => (
                StatusCode::NOT_FOUND,
                "Session not found: it ended or expired; send initialize again".into(),
                None,
            ),
            Self::InvalidEndpoint => (
                StatusCode::BAD_REQUEST,
                "Invalid request: the organization_id in the path /aap/{organization_id}/mcp is not an identifier (1 to 128 characters: letters, digits and . _ : -, starting with a letter or digit); take one from the manifest's organization_ids".into(),
                None,
            ),
            Self::EndpointNotFound => (
                StatusCode::NOT_FOUND,
                "Not found: no AAP endpoint is served at this path for this caller (the organization is unknown, or not visible with this credential); the manifest's organization_ids name the dealers served".into(),
                None,
            ),
            Self::Unavailable(m) => {
                (StatusCode::SERVICE_UNAVAILABLE, format!("Service unavailable: {m}"), None)
            }
            Self::Internal { error_id, unavailable } => (
                if *unavailable { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK },
                format!("Internal error; quote error id {error_id} to the operator"),
                None,
            ),
        }
    }

    /// The JSON-RPC error response. `id` is echoed when readable and omitted
    /// (never `null`, which the MCP schema forbids) otherwise.
    pub fn to_response_body(&self, id: Option<&Value>) -> (StatusCode, Value) {
        let (status, message, data) = self.parts();
        let mut error = json!({"code": self.code(), "message": message});
        if let Some(data) = data {
            error["data"] = data;
        }
        let mut body = json!({"jsonrpc": "2.0", "error": error});
        if let Some(id) = id {
            body["id"] = id.clone();
        }
        (status, body)
    }
}
