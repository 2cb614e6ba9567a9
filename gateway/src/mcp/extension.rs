//! The seam through which a test build adds methods, list entries and
//! capabilities to the MCP endpoint: the conformance fixture binary
//! (`dealer-gateway-conformance-fixture`, docs/conformance.md "The MCP
//! conformance fixture") installs one [`Extension`] before it serves. The
//! product binary installs none, so every hook below is one `None` check
//! and the product's answers are exactly what they are without it.
//!
//! The seam lives here, and the fixture depends on it, so that `crate::mcp`
//! never names its extension: the transport imports nothing of the test
//! build (no import circle), and the hooks run only after every product
//! check (Host/Origin, credentials, media types, the JSON-RPC envelope, the
//! era, `_meta`, header/body agreement, version support, legacy sessions),
//! so an extension's answer is judged on the same transport as a product
//! one.

// Without the test build nothing installs an extension or reads an
// `Incoming`: only the seam's `None` checks are live in the product.
#![cfg_attr(not(feature = "conformance-fixture"), allow(dead_code))]

use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use axum::http::{HeaderMap, header};
use axum::response::Response;
use serde_json::{Map, Value};

use super::dispatch::{Call, MethodResult};
use super::error::RpcError;
use super::{Endpoint, Era};
use crate::state::AppState;

/// One request that passed every product check, as an extension sees it.
pub(crate) struct Incoming<'a> {
    pub era: Era,
    pub id: &'a Value,
    pub method: &'a str,
    pub params: &'a Value,
    pub headers: &'a HeaderMap,
    /// The legacy session (none on 2026-07-28, which has no sessions).
    pub session: Option<&'a str>,
    pub endpoint: &'a Endpoint,
}

impl<'a> Incoming<'a> {
    pub(crate) fn modern(
        id: &'a Value,
        method: &'a str,
        params: &'a Value,
        headers: &'a HeaderMap,
        endpoint: &'a Endpoint,
    ) -> Self {
        Self {
            era: Era::Modern,
            id,
            method,
            params,
            headers,
            session: None,
            endpoint,
        }
    }

    pub(crate) fn legacy(
        id: &'a Value,
        method: &'a str,
        params: &'a Value,
        headers: &'a HeaderMap,
        session: &'a str,
        endpoint: &'a Endpoint,
    ) -> Self {
        Self {
            era: Era::Legacy,
            id,
            method,
            params,
            headers,
            session: Some(session),
            endpoint,
        }
    }

    /// The request's `_meta`.
    pub(crate) fn meta(&self) -> Option<&'a Map<String, Value>> {
        self.params.get("_meta").and_then(Value::as_object)
    }

    /// True when the client accepts an event stream as the answer.
    pub(crate) fn accepts_sse(&self) -> bool {
        self.headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|range| {
                range
                    .split(';')
                    .next()
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/event-stream"))
            })
    }
}

/// What an extension adds to one `subscriptions/listen` stream.
pub(crate) struct ListenExtra {
    /// The members of `params.notifications` it honors, added to the
    /// stream's acknowledgement (the honored subset of the filter).
    pub honored: Map<String, Value>,
    /// Its notification messages, in order; the transport tags each with
    /// the subscription id (`listen::SUBSCRIPTION_ID`) before writing it.
    pub notices: Notices,
}

/// The notification messages an extension adds to a listen stream.
pub(crate) type Notices = Pin<Box<dyn futures_util::Stream<Item = Value> + Send>>;

/// What an extension may do, each at one point of the transport.
#[async_trait::async_trait]
pub(crate) trait Extension: Send + Sync {
    /// Answer a request before the product dispatches it (a result, an
    /// error or an event stream); `None` leaves it to the product.
    async fn respond(&self, state: &Arc<AppState>, incoming: &Incoming<'_>) -> Option<Response>;

    /// Amend a successful product result (add tools, resources, templates,
    /// prompts, capabilities).
    fn amend(&self, state: &AppState, call: &Call<'_>, result: MethodResult) -> MethodResult;

    /// A legacy session was opened by `initialize` with `params`; returns
    /// the capabilities to announce (given the product's).
    fn session_opened(
        &self,
        session: &str,
        params: &Value,
        endpoint: &Endpoint,
        capabilities: Value,
    ) -> Value;

    /// The `Mcp-Name` value of a method only the extension serves
    /// (`Some(None)`: the method takes a name this request lacks).
    fn mcp_name<'a>(&self, method: &str, params: &'a Value) -> Option<Option<&'a str>>;

    /// Check the `Mcp-Param-*` headers the extension's tool declares,
    /// under the product's header policy.
    fn check_param_headers(
        &self,
        headers: &HeaderMap,
        method: &str,
        name: Option<&str>,
        params: &Value,
        strict: bool,
    ) -> Result<(), RpcError>;

    /// A client POSTed a response (`id` with `result` or `error`) to a
    /// server-to-client request.
    fn client_response(&self, headers: &HeaderMap, message: &Map<String, Value>);

    /// The `GET` of live legacy session `session`, when the extension
    /// resumes one of its streams (`Last-Event-ID`); `None` otherwise.
    fn resume(&self, headers: &HeaderMap, session: &str) -> Option<Response>;

    /// A `subscriptions/listen` was opened with `notifications` (the
    /// product validated the object and serves its resource members):
    /// the notifications the extension adds to that stream, e.g. the
    /// `toolsListChanged` / `promptsListChanged` the product never sends.
    /// `None` (the default) adds nothing.
    fn listen(&self, notifications: &Map<String, Value>) -> Option<ListenExtra> {
        let _ = notifications;
        None
    }
}

static INSTALLED: OnceLock<Box<dyn Extension>> = OnceLock::new();

/// Install the process's extension (once; a later call is refused with
/// `false`). Only the test build calls this (`crate::fixture::install`).
pub(crate) fn install(extension: Box<dyn Extension>) -> bool {
    INSTALLED.set(extension).is_ok()
}

/// The installed extension, if any (never in the product binary).
pub(crate) fn installed() -> Option<&'static dyn Extension> {
    INSTALLED.get().map(Box::as_ref)
}
