//! `subscriptions/listen` (2026-07-28): a POST whose answer is a
//! `text/event-stream` of notices (docs/mcp.md "Subscriptions").
//!
//! The request passes every check of a modern request first (`_meta`,
//! headers, version: [`super::modern`]); then its `notifications` filter
//! is validated, a [`Stream`] of the change hub is opened with the
//! caller's principal and each URI is subscribed, authorized like a read
//! before anything is looked up (DAP-CORE-029..031). One refused URI
//! refuses the whole listen, with the same words for a URI that does not
//! exist and one the caller may not see.
//!
//! The stream then carries, in order: the acknowledgement (always first),
//! the notices, an SSE comment every `keep_alive` while idle (so
//! intermediaries do not cut it), and one end frame: the JSON-RPC result
//! on graceful shutdown, or a JSON-RPC error whose `data.reason` says why
//! the server ended it (`slow_consumer`, `credential_revoked`,
//! `credential_expired`). The credential is checked again whenever a token
//! revocation arrives ([`crate::watch::Hub::revocations`]) and the stream
//! ends at the grant's expiry: a stream never outlives the right to read.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::error::RpcError;
use super::extension::{self, ListenExtra, Notices};
use super::{Caller, rpc_error};
use crate::auth::{Principal, verify};
use crate::state::AppState;
use crate::watch::{EndReason, Notice, Stream, WatchError};

/// The `_meta` key that ties a notice to the listen request that opened
/// its stream (MCP 2026-07-28).
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// The `_meta` key of a change's kinds and snapshot version (docs/mcp.md
/// "Subscriptions").
pub const CHANGE: &str = "dealergateway/change";

/// The longest a stream waits for its grant's expiry in one sleep; a grant
/// that expires later is checked again then (no overflow on far dates).
const LONGEST_WAIT: Duration = Duration::from_secs(24 * 3600);

/// What a listen asked for, validated.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Filter {
    pub uris: Vec<String>,
    pub list_changed: bool,
}

/// Validate `params.notifications`: an object; `resourceSubscriptions`, when
/// present, an array of strings (duplicates count once) of at most `limit`
/// URIs; `resourcesListChanged`, when present, a boolean. Other members
/// (`toolsListChanged`, `promptsListChanged`) are accepted and not honored
/// by the product, which never sends those notices (an installed test
/// extension may: [`extension::Extension::listen`]). The words never echo the input.
pub(crate) fn filter(params: &Value, limit: usize) -> Result<Filter, RpcError> {
    let invalid = |m: &str| RpcError::InvalidParams(m.to_owned());
    let Some(notifications) = params.get("notifications").and_then(Value::as_object) else {
        return Err(invalid(
            "params.notifications must be an object naming the notifications to receive",
        ));
    };
    let mut uris: Vec<String> = Vec::new();
    match notifications.get("resourceSubscriptions") {
        None => {}
        Some(Value::Array(items)) => {
            for item in items {
                let Some(uri) = item.as_str() else {
                    return Err(invalid(
                        "notifications.resourceSubscriptions must be an array of URI strings",
                    ));
                };
                if !uris.iter().any(|u| u == uri) {
                    if uris.len() == limit {
                        return Err(RpcError::InvalidParams(format!(
                            "notifications.resourceSubscriptions names more than {limit} URIs, the most one stream may hold; open another stream for the rest"
                        )));
                    }
                    uris.push(uri.to_owned());
                }
            }
        }
        Some(_) => {
            return Err(invalid(
                "notifications.resourceSubscriptions must be an array of URI strings",
            ));
        }
    }
    let list_changed = match notifications.get("resourcesListChanged") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(invalid(
                "notifications.resourcesListChanged must be a boolean",
            ));
        }
    };
    Ok(Filter { uris, list_changed })
}

/// A hub refusal as a protocol error: -32602 for an unreadable URI (one
/// message for absent and foreign), 429 with `data.reason` for a cap.
pub(crate) fn refusal(error: &WatchError) -> RpcError {
    match error.reason() {
        None => RpcError::InvalidParams(error.to_string()),
        Some(reason) => RpcError::TooMany {
            reason,
            message: error.to_string(),
        },
    }
}

/// Serve one `subscriptions/listen` (already past the modern checks).
pub(crate) async fn listen(
    state: &Arc<AppState>,
    headers: &HeaderMap,
    id: &Value,
    params: &Value,
    caller: &Caller,
) -> Response {
    let started = std::time::Instant::now();
    let answer = open(state, params, caller).await;
    let outcome = match &answer {
        Ok(_) => "ok".to_owned(),
        Err(e) => format!("jsonrpc.{}", e.code()),
    };
    crate::metrics::count_method("subscriptions/listen", None, &outcome, started);
    crate::metrics::note(|f| f.outcome = Some(outcome));
    match answer {
        Ok((stream, filter)) => {
            // Asked only once the product accepted the listen; the product
            // installs no extension, so its streams are what they were.
            let extra = extension::installed().and_then(|e| {
                let notifications = params.get("notifications").and_then(Value::as_object)?;
                e.listen(notifications)
            });
            respond(state, headers, id, stream, &filter, extra)
        }
        Err(e) => rpc_error(&e, Some(id)),
    }
}

async fn open(
    state: &Arc<AppState>,
    params: &Value,
    caller: &Caller,
) -> Result<(Stream, Filter), RpcError> {
    let filter = filter(params, state.watch.limits().uris_per_stream)?;
    let mut stream = state
        .watch
        .open(&caller.principal)
        .map_err(|e| refusal(&e))?;
    for uri in &filter.uris {
        // Dropping `stream` on a refusal releases what it already holds.
        stream
            .subscribe(state, uri)
            .await
            .map_err(|e| refusal(&e))?;
    }
    if filter.list_changed {
        stream.want_list_changed(true);
    }
    Ok((stream, filter))
}

/// One SSE event carrying one JSON-RPC message.
pub(crate) fn event(message: &Value) -> Bytes {
    let mut out = b"data: ".to_vec();
    out.extend_from_slice(&serde_json::to_vec(message).unwrap_or_default());
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

pub(crate) const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// The acknowledgement: the honored subset of the filter.
pub(crate) fn acknowledgement(id: &Value, filter: &Filter) -> Value {
    let mut honored = serde_json::Map::new();
    if !filter.uris.is_empty() {
        honored.insert("resourceSubscriptions".into(), json!(filter.uris));
    }
    if filter.list_changed {
        honored.insert("resourcesListChanged".into(), json!(true));
    }
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": honored, "_meta": {SUBSCRIPTION_ID: id}},
    })
}

/// A notice as its notification; `id` is the subscription id (none on the
/// legacy GET stream).
pub(crate) fn notification(notice: &Notice, id: Option<&Value>) -> Value {
    let mut meta = serde_json::Map::new();
    if let Some(id) = id {
        meta.insert(SUBSCRIPTION_ID.into(), id.clone());
    }
    match notice {
        Notice::Updated {
            uri,
            kinds,
            snapshot_version,
        } => {
            meta.insert(
                CHANGE.into(),
                json!({"kinds": kinds, "snapshotVersion": snapshot_version}),
            );
            json!({
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": uri, "_meta": meta},
            })
        }
        Notice::ListChanged => json!({
            "jsonrpc": "2.0",
            "method": "notifications/resources/list_changed",
            "params": {"_meta": meta},
        }),
    }
}

/// An extension's notification tagged with the subscription id, like the
/// product's own (MCP 2026-07-28: every notice on a listen stream names
/// the request that opened it).
fn tagged(mut message: Value, id: &Value) -> Value {
    if let Some(object) = message.as_object_mut() {
        let params = object
            .entry("params")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Some(params) = params.as_object_mut() {
            let meta = params
                .entry("_meta")
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(SUBSCRIPTION_ID.into(), id.clone());
            }
        }
    }
    message
}

/// The end frame of a listen stream.
fn end_frame(id: &Value, reason: EndReason) -> Value {
    let message = match reason {
        EndReason::Shutdown => {
            return json!({
                "jsonrpc": "2.0",
                "id": id,
                "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: id}},
            });
        }
        EndReason::SlowConsumer => {
            "the stream fell too far behind and was ended; re-read what you follow (the snapshot versions tell what changed) and listen again"
        }
        EndReason::CredentialRevoked => {
            "the credential this stream was opened with is no longer valid (revoked); listen again with a valid credential"
        }
        EndReason::CredentialExpired => {
            "the credential this stream was opened with has expired; listen again with a fresh credential"
        }
    };
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32603, "message": message, "data": {"reason": reason.as_str()}},
    })
}

/// What the stream's body needs to keep its promises.
pub(crate) struct Follow {
    pub state: Arc<AppState>,
    pub stream: Stream,
    /// The `Authorization` header the stream was opened with (re-verified
    /// on each revocation); none for an anonymous caller.
    pub authorization: Option<HeaderMap>,
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
    pub revocations: tokio::sync::watch::Receiver<u64>,
    pub keep_alive: Duration,
    pub next_keep_alive: Instant,
    /// When set, [`Step::Tick`] about this often (the legacy GET stream
    /// re-reads its session's subscriptions).
    pub tick: Option<Duration>,
    /// An installed extension's notifications for this stream
    /// ([`extension::Extension::listen`]); never set in the product.
    pub extra: Option<Notices>,
}

/// What [`Follow::next`] found to do.
pub(crate) enum Step {
    Notice(Notice),
    /// A notification message of an extension (untagged).
    Extra(Value),
    KeepAlive,
    Tick,
}

impl Follow {
    pub(crate) fn new(state: &Arc<AppState>, headers: &HeaderMap, stream: Stream) -> Self {
        let (authorization, expires_at) = match stream.principal() {
            Principal::Anonymous => (None, None),
            Principal::Authenticated(grant) => {
                let mut kept = HeaderMap::new();
                for value in headers.get_all(header::AUTHORIZATION) {
                    kept.append(header::AUTHORIZATION, value.clone());
                }
                (Some(kept), Some(grant.expires_at))
            }
        };
        let keep_alive = state.watch.limits().keep_alive;
        Self {
            state: state.clone(),
            stream,
            authorization,
            expires_at,
            revocations: state.watch.revocations(),
            keep_alive,
            next_keep_alive: Instant::now() + keep_alive,
            tick: None,
            extra: None,
        }
    }

    /// Wait for the next thing to write: a notice, a keep-alive, or the
    /// end. The credential checks happen here, between frames.
    pub(crate) async fn next(&mut self) -> Result<Step, EndReason> {
        let tick_at = self.tick.map(|every| Instant::now() + every);
        loop {
            let expiry = self.expires_at.map(|at| {
                let left = (at - chrono::Utc::now()).to_std().unwrap_or(Duration::ZERO);
                (left.is_zero(), Instant::now() + left.min(LONGEST_WAIT))
            });
            if expiry.is_some_and(|(passed, _)| passed) {
                self.stream.end(EndReason::CredentialExpired);
            }
            let expiry_at = expiry.map_or_else(|| Instant::now() + LONGEST_WAIT, |(_, at)| at);
            let watch_revocations = self.authorization.is_some();
            tokio::select! {
                biased;
                next = self.stream.next() => {
                    self.next_keep_alive = Instant::now() + self.keep_alive;
                    return next.map(Step::Notice);
                }
                // Inside this select, not around `next()`, so that an
                // extension's notice never cancels a credential check
                // half-way.
                message = next_extra(&mut self.extra) => match message {
                    Some(message) => {
                        self.next_keep_alive = Instant::now() + self.keep_alive;
                        return Ok(Step::Extra(message));
                    }
                    // The extension's stream ended: the product's goes on.
                    None => self.extra = None,
                },
                changed = self.revocations.changed(), if watch_revocations => {
                    if changed.is_err() {
                        // The hub is gone: nothing more will be revoked here.
                        self.authorization = None;
                    } else if revoked(&self.state, self.authorization.as_ref()).await {
                        self.stream.end(EndReason::CredentialRevoked);
                    }
                }
                () = tokio::time::sleep_until(expiry_at) => {}
                () = tokio::time::sleep_until(self.next_keep_alive) => {
                    self.next_keep_alive = Instant::now() + self.keep_alive;
                    return Ok(Step::KeepAlive);
                }
                () = sleep_until_some(tick_at) => return Ok(Step::Tick),
            }
        }
    }
}

/// Re-verify the credential on the same path a request takes
/// (`auth::verify`). A store outage is not a revocation: the stream goes
/// on and the next revocation checks again. (It borrows the two fields it
/// reads, not the whole [`Follow`], whose extension stream need not be
/// `Sync`.)
async fn revoked(state: &Arc<AppState>, authorization: Option<&HeaderMap>) -> bool {
    let Some(headers) = authorization else {
        return false;
    };
    match verify::authenticate(state, headers, None).await {
        Ok(Principal::Authenticated(_)) => false,
        Ok(Principal::Anonymous) => true,
        Err(rejection) => !rejection.unavailable,
    }
}

/// The next message of an extension's stream (`None` when it ended), or
/// never without one.
async fn next_extra(extra: &mut Option<Notices>) -> Option<Value> {
    use futures_util::StreamExt as _;
    match extra {
        Some(notices) => notices.next().await,
        None => std::future::pending().await,
    }
}

/// Sleep until `at`, or forever without one.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// 200 `text/event-stream` with the headers a stream needs: never cached,
/// never buffered by a proxy (nginx honors `X-Accel-Buffering`).
pub(crate) fn sse_response(body: Body) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

enum Phase {
    Ack(Value),
    Running,
    Done,
}

fn respond(
    state: &Arc<AppState>,
    headers: &HeaderMap,
    id: &Value,
    stream: Stream,
    filter: &Filter,
    extra: Option<ListenExtra>,
) -> Response {
    let mut follow = Follow::new(state, headers, stream);
    let id = id.clone();
    let mut ack = acknowledgement(&id, filter);
    if let Some(extra) = extra {
        if let Some(honored) = ack["params"]["notifications"].as_object_mut() {
            honored.extend(extra.honored);
        }
        follow.extra = Some(extra.notices);
    }
    let frames = futures_util::stream::unfold(
        (follow, Phase::Ack(ack), id),
        |(mut follow, phase, id)| async move {
            let step = match phase {
                Phase::Done => return None,
                Phase::Ack(ack) => {
                    return Some((
                        Ok::<_, std::io::Error>(event(&ack)),
                        (follow, Phase::Running, id),
                    ));
                }
                Phase::Running => follow.next().await,
            };
            match step {
                Ok(Step::Notice(notice)) => {
                    let frame = event(&notification(&notice, Some(&id)));
                    Some((Ok(frame), (follow, Phase::Running, id)))
                }
                Ok(Step::Extra(message)) => {
                    let frame = event(&tagged(message, &id));
                    Some((Ok(frame), (follow, Phase::Running, id)))
                }
                Ok(Step::KeepAlive | Step::Tick) => Some((
                    Ok(Bytes::from_static(KEEP_ALIVE)),
                    (follow, Phase::Running, id),
                )),
                Err(reason) => {
                    let frame = event(&end_frame(&id, reason));
                    Some((Ok(frame), (follow, Phase::Done, id)))
                }
            }
        },
    );
    sse_response(Body::from_stream(frames))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_is_checked_and_capped_without_echo() {
        let ok = filter(
            &json!({"notifications": {"resourceSubscriptions": ["a", "a", "b"], "resourcesListChanged": true, "toolsListChanged": true}}),
            2,
        )
        .unwrap();
        assert_eq!(
            ok,
            Filter {
                uris: vec!["a".into(), "b".into()],
                list_changed: true
            }
        );
        for bad in [
            json!({}),
            json!({"notifications": []}),
            json!({"notifications": {"resourceSubscriptions": "x-secret"}}),
            json!({"notifications": {"resourceSubscriptions": [1]}}),
            json!({"notifications": {"resourcesListChanged": "x-secret"}}),
        ] {
            let e = filter(&bad, 2).unwrap_err();
            assert_eq!(e.code(), -32602, "{bad}");
            assert!(!e.parts().1.contains("x-secret"));
        }
        let e = filter(
            &json!({"notifications": {"resourceSubscriptions": ["a", "b", "c"]}}),
            2,
        )
        .unwrap_err();
        assert!(e.parts().1.contains("more than 2 URIs"), "{e:?}");
    }

    #[test]
    fn frames_follow_the_wire_contract() {
        let id = json!(7);
        let ack = acknowledgement(
            &id,
            &Filter {
                uris: vec![],
                list_changed: false,
            },
        );
        assert_eq!(ack["params"]["notifications"], json!({}));
        assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], 7);
        let done = end_frame(&id, EndReason::Shutdown);
        assert_eq!(done["result"]["resultType"], "complete");
        let cut = end_frame(&id, EndReason::CredentialRevoked);
        assert_eq!(cut["error"]["data"]["reason"], "credential_revoked");
        let n = notification(
            &Notice::Updated {
                uri: "dealeragent://manifest".into(),
                kinds: vec!["dealer_changed"],
                snapshot_version: "v1".into(),
            },
            None,
        );
        assert!(n["params"]["_meta"].get(SUBSCRIPTION_ID).is_none());
        assert_eq!(n["params"]["_meta"][CHANGE]["kinds"][0], "dealer_changed");
        assert_eq!(event(&json!(1)).as_ref(), b"data: 1\n\n");
    }
}
