//! A `subscriptions/listen` client for the tests that watch changes
//! (docs/mcp.md "Subscriptions"): it opens the stream over real HTTP and
//! hands every JSON-RPC message of the SSE body to the test, stamped with
//! the instant it arrived, so a test can measure how late a change was told.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{MODERN, meta};

/// One open listen stream.
pub(crate) struct Listen {
    messages: tokio::sync::mpsc::UnboundedReceiver<(Instant, Value)>,
    reader: tokio::task::JoinHandle<()>,
}

/// What a listen request answered instead of a stream.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) status: u16,
    pub(crate) body: Value,
}

/// The listen request body: `id`, the resource URIs and the list-changed
/// flag of the subscription filter.
pub(crate) fn listen_body(id: i64, uris: &[String], list_changed: bool) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
        "_meta": meta(),
        "notifications": {"resourceSubscriptions": uris, "resourcesListChanged": list_changed}
    }})
}

/// POST a listen request `body` at `base` with the usual 2026-07-28
/// headers (`Mcp-Method: subscriptions/listen`) and an optional bearer.
pub(crate) async fn post_listen(
    http: &reqwest::Client,
    base: &str,
    token: Option<&str>,
    body: &Value,
) -> reqwest::Result<reqwest::Response> {
    let mut req = http
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "subscriptions/listen")
        .body(body.to_string());
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    req.send().await
}

/// Open a listen stream at `base` (`http://host:port`). `Err` when the
/// server answered with anything but an event stream.
pub(crate) async fn listen(
    http: &reqwest::Client,
    base: &str,
    token: Option<&str>,
    body: &Value,
) -> Result<Listen, Refused> {
    let mut resp = post_listen(http, base, token, body)
        .await
        .map_err(|e| Refused {
            status: 0,
            body: json!({"transport": e.to_string()}),
        })?;
    let status = resp.status().as_u16();
    let is_stream = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if status != 200 || !is_stream {
        let raw = resp.text().await.unwrap_or_default();
        return Err(Refused {
            status,
            body: serde_json::from_str(&raw).unwrap_or(Value::String(raw)),
        });
    }
    let (tx, messages) = tokio::sync::mpsc::unbounded_channel();
    let reader = tokio::spawn(async move {
        let mut pending = String::new();
        while let Ok(Some(chunk)) = resp.chunk().await {
            let now = Instant::now();
            pending.push_str(&String::from_utf8_lossy(&chunk));
            // Events end with a blank line; `data:` lines carry the message,
            // comment lines (`:`) are the keep-alive.
            while let Some(end) = pending.find("\n\n") {
                let event: String = pending.drain(..end + 2).collect();
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if data.is_empty() {
                    continue;
                }
                let message = serde_json::from_str(&data.join("\n"))
                    .unwrap_or(Value::String(data.join("\n")));
                if tx.send((now, message)).is_err() {
                    return;
                }
            }
        }
    });
    Ok(Listen { messages, reader })
}

impl Listen {
    /// The next message, or `None` when the stream ended or nothing came
    /// within `wait`.
    pub(crate) async fn next(&mut self, wait: Duration) -> Option<(Instant, Value)> {
        tokio::time::timeout(wait, self.messages.recv())
            .await
            .ok()
            .flatten()
    }

    /// The next message that `pick` accepts, skipping the others (each
    /// skipped one is returned too, for assertions about what came).
    pub(crate) async fn until(
        &mut self,
        wait: Duration,
        pick: impl Fn(&Value) -> bool,
    ) -> (Option<(Instant, Value)>, Vec<Value>) {
        let deadline = Instant::now() + wait;
        let mut skipped = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await {
                Some((at, message)) if pick(&message) => return (Some((at, message)), skipped),
                Some((_, message)) => skipped.push(message),
                None => return (None, skipped),
            }
        }
    }
}

impl Drop for Listen {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// The `notifications/resources/updated` message for `uri`, if `message` is one.
pub(crate) fn is_update_of(message: &Value, uri: &str) -> bool {
    message["method"] == "notifications/resources/updated" && message["params"]["uri"] == uri
}

/// The change kinds a `notifications/resources/updated` carries.
pub(crate) fn kinds(message: &Value) -> Vec<String> {
    message["params"]["_meta"]["dealergateway/change"]["kinds"]
        .as_array()
        .map(|k| {
            k.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A vehicle resource URI.
pub(crate) fn vehicle_uri(org: &str, rooftop: &str, vehicle_id: &str) -> String {
    format!("dealeragent://organization/{org}/rooftop/{rooftop}/vehicle/{vehicle_id}")
}
