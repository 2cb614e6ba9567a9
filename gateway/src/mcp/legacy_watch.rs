//! Subscriptions in the 2025-11-25 era (docs/mcp.md "Subscriptions"):
//! `resources/subscribe` / `resources/unsubscribe` within a session, and
//! the session's notices on `GET /mcp` (an SSE stream).
//!
//! A session is shared by every replica (docs/operations.md "Replicas"), so
//! its subscription set lives with it in the store: a subscribe on replica
//! A is followed by the GET stream on replica B, which re-reads the set
//! about every [`FOLLOW_INTERVAL`]. Every URI is authorized like a read
//! when subscribed (before anything is looked up, DAP-CORE-029..031) and
//! again, with the GET request's own credential, when the stream follows
//! it: a session is transport state, never identity, so the stream never
//! carries what its own caller may not read.
//!
//! One GET stream per session: a new one replaces the old (the old one
//! ends within a second, on whichever replica it runs), so a client that
//! lost its connection simply opens another. DELETE of the session ends
//! the stream the same way. Legacy streams carry no end frame (the era has
//! no listen request to answer): they close.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use super::error::RpcError;
use super::listen::{self, Follow, Step};
use super::{Caller, json_response, rpc_error, session_store_failed};
use crate::auth::Principal;
use crate::resources::{VEHICLE_TEMPLATE, has_profile_scope};
use crate::state::AppState;
use crate::watch::authorize::may_read;
use crate::watch::uri::{Target, parse};
use crate::watch::{Stream, WatchError};

/// How often a GET stream re-reads its session's subscriptions.
pub const FOLLOW_INTERVAL: Duration = Duration::from_secs(1);

/// May `principal` read `uri`? The rule of the hub's subscribe (URI shape,
/// the vehicle profile's scopes, a visible rooftop), checked without a
/// stream and without looking the resource up.
async fn readable(state: &AppState, principal: &Principal, uri: &str) -> bool {
    let Some(target) = parse(uri) else {
        return false;
    };
    if matches!(target, Target::Vehicle(..))
        && !has_profile_scope(state, principal, VEHICLE_TEMPLATE)
    {
        return false;
    }
    match state.directory.snapshot().await {
        Ok(directory) => may_read(&directory, principal, &target),
        Err(e) => {
            tracing::warn!(error = %e, "directory unavailable while authorizing a subscription");
            false
        }
    }
}

/// `resources/subscribe` (`subscribe`) or `resources/unsubscribe` in the
/// legacy session `session_id`: `{}` on success.
pub(crate) async fn change(
    state: &Arc<AppState>,
    id: &Value,
    params: &Value,
    caller: &Caller,
    session_id: &str,
    subscribe: bool,
) -> Response {
    let started = std::time::Instant::now();
    let method = if subscribe {
        "resources/subscribe"
    } else {
        "resources/unsubscribe"
    };
    let answer = change_set(state, params, caller, session_id, subscribe).await;
    let outcome = match &answer {
        Ok(()) => "ok".to_owned(),
        Err(e) => format!("jsonrpc.{}", e.code()),
    };
    crate::metrics::count_method(method, None, &outcome, started);
    crate::metrics::note(|f| f.outcome = Some(outcome));
    match answer {
        Ok(()) => json_response(
            StatusCode::OK,
            &json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            None,
        ),
        Err(e) => rpc_error(&e, Some(id)),
    }
}

async fn change_set(
    state: &Arc<AppState>,
    params: &Value,
    caller: &Caller,
    session_id: &str,
    subscribe: bool,
) -> Result<(), RpcError> {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::InvalidParams("params.uri must be a string".into()))?;
    // Authorized before anything is stored or looked up; an unsubscribe
    // needs no authorization (it only forgets).
    if subscribe && !readable(state, &caller.principal, uri).await {
        return Err(listen::refusal(&WatchError::NotReadable));
    }
    let limit = state.watch.limits().uris_per_stream;
    let set = state
        .sessions
        .change_subscription(session_id, uri, subscribe, limit)
        .await
        .map_err(|e| session_store_failed(&e))?;
    let Some(set) = set else {
        return Err(RpcError::SessionNotFound);
    };
    if subscribe && !set.iter().any(|u| u == uri) {
        return Err(listen::refusal(&WatchError::TooManySubscriptions { limit }));
    }
    Ok(())
}

/// The GET stream of a live session, for `principal` (already
/// authenticated by the GET itself).
pub(crate) async fn stream(
    state: &Arc<AppState>,
    headers: &HeaderMap,
    principal: &Principal,
    session_id: &str,
) -> Response {
    let stream = match state.watch.open(principal) {
        Ok(stream) => stream,
        Err(e) => return rpc_error(&listen::refusal(&e), None),
    };
    let token = uuid::Uuid::new_v4().simple().to_string();
    match state.sessions.claim_stream(session_id, &token).await {
        Ok(true) => {}
        Ok(false) => return rpc_error(&RpcError::SessionNotFound, None),
        Err(e) => return rpc_error(&session_store_failed(&e), None),
    }
    let mut follow = Follow::new(state, headers, stream);
    follow.tick = Some(FOLLOW_INTERVAL);
    let session = Session {
        follow,
        id: session_id.to_owned(),
        token,
        opened: false,
    };
    let frames = futures_util::stream::unfold(session, |mut session| async move {
        let frame = session.next_frame().await?;
        Some((Ok::<_, std::io::Error>(frame), session))
    });
    listen::sse_response(Body::from_stream(frames))
}

/// One GET stream's state.
struct Session {
    follow: Follow,
    id: String,
    token: String,
    /// Whether the first frame (a comment, so the client sees the stream
    /// open at once) was written.
    opened: bool,
}

impl Session {
    /// The next frame, or `None` to close the stream.
    async fn next_frame(&mut self) -> Option<Bytes> {
        if !self.opened {
            self.opened = true;
            // Follow what is subscribed already before the first wait.
            if !self.reconcile().await {
                return None;
            }
            return Some(Bytes::from_static(b": stream open\n\n"));
        }
        loop {
            match self.follow.next().await {
                Ok(Step::Notice(notice)) => {
                    return Some(listen::event(&listen::notification(&notice, None)));
                }
                Ok(Step::KeepAlive) => return Some(Bytes::from_static(listen::KEEP_ALIVE)),
                // Extensions add notices to listen streams only (this
                // stream never carries an extension's stream).
                Ok(Step::Extra(_)) => {}
                Ok(Step::Tick) => {
                    if !self.reconcile().await {
                        return None;
                    }
                }
                Err(_) => return None,
            }
        }
    }

    /// Make the hub stream hold the session's current set; false when the
    /// session is gone or another GET stream replaced this one. A store
    /// failure keeps the current set (the next tick reads again).
    async fn reconcile(&mut self) -> bool {
        let state = self.follow.state.clone();
        // An open stream is a use of its session; a store failure is not
        // the session's end (the next tick reads again).
        if let Ok(None) = state.sessions.touch(&self.id).await {
            return false;
        }
        let current = match state.sessions.subscriptions(&self.id).await {
            Ok(Some(current)) => current,
            Ok(None) => return false,
            Err(e) => {
                tracing::warn!(error = %e, "reading a legacy session's subscriptions failed");
                return true;
            }
        };
        if current.stream.as_deref() != Some(self.token.as_str()) {
            return false;
        }
        follow_set(&mut self.follow.stream, &state, &current.uris).await;
        true
    }
}

/// Hold exactly `uris` (each authorized by the hub's subscribe for this
/// stream's principal; one it refuses is not followed).
async fn follow_set(stream: &mut Stream, state: &AppState, uris: &[String]) {
    for held in stream.uris() {
        if !uris.contains(&held) {
            stream.unsubscribe(&held);
        }
    }
    let held = stream.uris();
    for uri in uris {
        if !held.contains(uri) {
            let _ = stream.subscribe(state, uri).await;
        }
    }
}
