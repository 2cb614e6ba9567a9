//! A small MCP client over plain HTTP for the suite: 2026-07-28 requests
//! with per-request `_meta` and the mirror headers (MCP 2026-07-28
//! "Standard headers"), raw posts for malformed traffic, and the legacy
//! 2025-11-25 `initialize` + session handshake.
//!
//! Every exchange is returned as an [`Exchange`] that the checks keep as
//! evidence. Bearer tokens never enter an exchange: the caller is recorded
//! as `Bearer <role:NAME>`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

/// The modern MCP revision every check speaks unless it tests another.
pub const MODERN: &str = "2026-07-28";
/// The legacy revision served through `initialize`.
pub const LEGACY: &str = "2025-11-25";

/// Why a request got no HTTP answer at all.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot build the HTTP client: {0}")]
    Build(String),
    #[error("no HTTP answer from {url}: {message}")]
    Transport { url: String, message: String },
}

/// Who calls: nobody (anonymous) or one of the operator's named grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    Anonymous,
    Role(String),
}

impl Caller {
    pub fn role(name: &str) -> Self {
        Self::Role(name.to_owned())
    }

    /// How the caller appears in evidence (never the token).
    pub fn label(&self) -> String {
        match self {
            Self::Anonymous => "anonymous".to_owned(),
            Self::Role(name) => format!("Bearer <role:{name}>"),
        }
    }
}

/// One request and its answer.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// What was sent: caller label, headers (no Authorization), body.
    pub sent: Value,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when empty or not JSON).
    pub body: Value,
    /// The body exactly as received.
    pub raw: String,
    /// When the answer arrived (ages are measured against it).
    pub received_at: chrono::DateTime<chrono::Utc>,
}

impl Exchange {
    /// The JSON-RPC `result`, when the answer has one.
    pub fn result(&self) -> Option<&Value> {
        self.body.get("result")
    }

    /// The JSON-RPC error code, when the answer is an error.
    pub fn error_code(&self) -> Option<i64> {
        self.body.get("error")?.get("code")?.as_i64()
    }

    /// A tool result's `structuredContent`.
    pub fn structured(&self) -> Option<&Value> {
        self.result()?.get("structuredContent")
    }

    /// Whether a tool result is flagged `isError: true`.
    pub fn is_tool_error(&self) -> bool {
        self.result()
            .and_then(|r| r.get("isError"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// A successful tool result's `structuredContent` (`None` for errors).
    pub fn tool_ok(&self) -> Option<&Value> {
        if self.is_tool_error() {
            None
        } else {
            self.structured()
        }
    }

    /// The DAP error code of a tool error result.
    pub fn dap_code(&self) -> Option<&str> {
        if self.is_tool_error() {
            self.structured()?.get("code")?.as_str()
        } else {
            None
        }
    }

    /// The first value of response header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every header value and the body in one string, for echo searches.
    pub fn everything(&self) -> String {
        let mut all = self.raw.clone();
        for (k, v) in &self.headers {
            all.push('\n');
            all.push_str(k);
            all.push_str(": ");
            all.push_str(v);
        }
        all
    }
}

/// The per-request `_meta` of 2026-07-28 for `version`.
pub fn meta_for(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "dap-conformance", "version": crate::version::SUITE_VERSION}
    })
}

/// The HTTP client bound to one endpoint and the operator's tokens.
pub struct Client {
    http: reqwest::Client,
    pub url: String,
    tokens: BTreeMap<String, String>,
    next_id: std::sync::atomic::AtomicI64,
}

impl Client {
    pub fn new(url: &str, tokens: &[(String, String)]) -> Result<Self, ClientError> {
        // The suite may test https gateways: rustls with the ring provider,
        // as the gateway itself does. A second install fails harmlessly.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .user_agent(concat!("dap-conformance/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientError::Build(e.to_string()))?;
        Ok(Self {
            http,
            url: url.to_owned(),
            tokens: tokens.iter().cloned().collect(),
            next_id: std::sync::atomic::AtomicI64::new(1),
        })
    }

    /// Whether the operator supplied `role`.
    pub fn has_role(&self, role: &str) -> bool {
        self.tokens.contains_key(role)
    }

    /// The supplied role names.
    pub fn roles(&self) -> Vec<String> {
        self.tokens.keys().cloned().collect()
    }

    /// The token of `role`, for checks that must put it somewhere odd (a
    /// forged `_meta` grant). Evidence redacts it via [`Client::redact`].
    pub fn token(&self, role: &str) -> Option<&str> {
        self.tokens.get(role).map(String::as_str)
    }

    /// Replace every token value in `text` with `<token:ROLE>`.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (role, token) in &self.tokens {
            if !token.is_empty() {
                out = out.replace(token.as_str(), &format!("<token:{role}>"));
            }
        }
        out
    }

    fn id(&self) -> i64 {
        self.next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// POST `body` (raw bytes) with exactly `headers` plus the caller's
    /// Authorization. `Content-Type: application/json` is added unless
    /// `headers` names one.
    pub async fn post_raw(
        &self,
        caller: &Caller,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Result<Exchange, ClientError> {
        self.send(reqwest::Method::POST, caller, headers, body)
            .await
    }

    /// Send `method` to the endpoint with exactly `headers` (plus the
    /// caller's Authorization and, for a body, its Content-Type).
    pub async fn send(
        &self,
        method: reqwest::Method,
        caller: &Caller,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Result<Exchange, ClientError> {
        let shown_method = method.as_str().to_owned();
        let mut req = self.http.request(method, &self.url);
        let mut shown = serde_json::Map::new();
        let mut has_ct = false;
        for (k, v) in headers {
            if k.eq_ignore_ascii_case("content-type") {
                has_ct = true;
            }
            req = req.header(*k, *v);
            // A credential is never recorded, whatever it is.
            let value = if k.eq_ignore_ascii_case("authorization") {
                "<redacted>".to_owned()
            } else {
                self.redact(v)
            };
            shown.insert((*k).to_owned(), Value::String(value));
        }
        if !has_ct && !body.is_empty() {
            req = req.header("content-type", "application/json");
        }
        if let Caller::Role(role) = caller
            && let Some(token) = self.tokens.get(role)
        {
            req = req.bearer_auth(token);
        }
        let resp = req
            .body(body.to_owned())
            .send()
            .await
            .map_err(|e| ClientError::Transport {
                url: self.url.clone(),
                message: e.to_string(),
            })?;
        let status = resp.status().as_u16();
        let headers: Vec<(String, String)> = resp
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let raw = resp.text().await.map_err(|e| ClientError::Transport {
            url: self.url.clone(),
            message: e.to_string(),
        })?;
        let parsed = serde_json::from_str(&raw).unwrap_or(Value::Null);
        let redacted_body = self.redact(body);
        let body_shown =
            serde_json::from_str::<Value>(&redacted_body).unwrap_or(Value::String(redacted_body));
        Ok(Exchange {
            sent: json!({
                "method": shown_method,
                "caller": caller.label(),
                "headers": Value::Object(shown),
                "body": body_shown,
            }),
            status,
            headers,
            body: parsed,
            raw,
            received_at: chrono::Utc::now(),
        })
    }

    /// A modern request: `_meta` for 2026-07-28 and the matching
    /// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers.
    pub async fn modern(
        &self,
        caller: &Caller,
        method: &str,
        params: Value,
    ) -> Result<Exchange, ClientError> {
        self.modern_version(caller, method, params, MODERN).await
    }

    /// A modern request naming `version` in `_meta` and header.
    pub async fn modern_version(
        &self,
        caller: &Caller,
        method: &str,
        mut params: Value,
        version: &str,
    ) -> Result<Exchange, ClientError> {
        if !params.is_object() {
            params = json!({});
        }
        params["_meta"] = meta_for(version);
        let body = json!({"jsonrpc": "2.0", "id": self.id(), "method": method, "params": params});
        let name = body["params"]
            .get("name")
            .or_else(|| body["params"].get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut headers = vec![
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", version),
            ("mcp-method", method),
        ];
        if let Some(name) = name.as_deref() {
            headers.push(("mcp-name", name));
        }
        self.post_raw(caller, &headers, &body.to_string()).await
    }

    /// `tools/call` of `name` with `arguments`, the modern way.
    pub async fn call_tool(
        &self,
        caller: &Caller,
        name: &str,
        arguments: Value,
    ) -> Result<Exchange, ClientError> {
        self.modern(
            caller,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
        .await
    }

    /// The legacy handshake: `initialize` (2025-11-25), then
    /// `notifications/initialized`. Returns the session id, or `None`
    /// with the exchange when the server did not open a session.
    pub async fn initialize_legacy(
        &self,
        caller: &Caller,
    ) -> Result<(Option<String>, Vec<Exchange>), ClientError> {
        let body = json!({"jsonrpc": "2.0", "id": self.id(), "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "dap-conformance", "version": crate::version::SUITE_VERSION}}});
        let init = self
            .post_raw(
                caller,
                &[("accept", "application/json, text/event-stream")],
                &body.to_string(),
            )
            .await?;
        let session = init
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id"))
            .map(|(_, v)| v.clone());
        let Some(session) = session else {
            return Ok((None, vec![init]));
        };
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let ack = self
            .post_raw(
                caller,
                &[
                    ("mcp-session-id", &session),
                    ("mcp-protocol-version", LEGACY),
                ],
                &note.to_string(),
            )
            .await?;
        Ok((Some(session), vec![init, ack]))
    }

    /// A request inside a legacy session.
    pub async fn legacy(
        &self,
        caller: &Caller,
        session: &str,
        method: &str,
        params: Value,
    ) -> Result<Exchange, ClientError> {
        let body = json!({"jsonrpc": "2.0", "id": self.id(), "method": method, "params": params});
        self.post_raw(
            caller,
            &[
                ("mcp-session-id", session),
                ("mcp-protocol-version", LEGACY),
                ("accept", "application/json, text/event-stream"),
            ],
            &body.to_string(),
        )
        .await
    }

    /// A plain GET (e.g. the conformance claim), returning status and bytes.
    pub async fn get_bytes(&self, url: &str) -> Result<(u16, Vec<u8>), ClientError> {
        let resp = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| ClientError::Transport {
                url: url.to_owned(),
                message: e.to_string(),
            })?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.map_err(|e| ClientError::Transport {
            url: url.to_owned(),
            message: e.to_string(),
        })?;
        Ok((status, bytes.to_vec()))
    }
}
