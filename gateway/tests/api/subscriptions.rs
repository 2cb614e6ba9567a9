//! The subscription transports over real HTTP (docs/mcp.md
//! "Subscriptions"): `subscriptions/listen` (2026-07-28) and the legacy
//! `resources/subscribe` with the session's GET stream (2025-11-25). Each
//! SSE body is read incrementally, frame by frame, as a client would.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use crate::common::{LEGACY, MODERN, fresh_database, meta, run_cli, spawn_on, spawn_with, text};

const LAKESHORE: &str = "org.lakeshore-auto-group";
const MAPLECREST: &str = "org.maplecrest-motor-group";
const CHICAGO: &str = "roof.lakeshore-chicago";
const FLEET: &str = "roof.lakeshore-fleet-wholesale";
const TORONTO: &str = "roof.maplecrest-toronto";

fn rooftop_uri(org: &str, rooftop: &str) -> String {
    format!("dealeragent://organization/{org}/rooftop/{rooftop}")
}

/// An SSE body read chunk by chunk.
struct Sse {
    response: reqwest::Response,
    buffer: String,
}

/// What the next read found.
#[derive(Debug)]
enum Read {
    /// One event block (a `data:` line or a comment).
    Block(String),
    /// The body ended.
    End,
    /// Nothing within the wait.
    Idle,
}

impl Sse {
    fn new(response: reqwest::Response) -> Self {
        Self {
            response,
            buffer: String::new(),
        }
    }

    async fn read(&mut self, within: Duration) -> Read {
        let until = Instant::now() + within;
        loop {
            if let Some(at) = self.buffer.find("\n\n") {
                let block = self.buffer[..at].to_owned();
                self.buffer.drain(..at + 2);
                return Read::Block(block);
            }
            match tokio::time::timeout_at(until, self.response.chunk()).await {
                Ok(Ok(Some(bytes))) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                Ok(Ok(None) | Err(_)) => return Read::End,
                Err(_) => return Read::Idle,
            }
        }
    }

    /// The next JSON-RPC message (comments skipped); panics on end or idle.
    async fn message(&mut self, within: Duration) -> Value {
        let until = Instant::now() + within;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.read(left).await {
                Read::Block(block) => {
                    if let Some(data) = block.strip_prefix("data: ") {
                        return serde_json::from_str(data).expect("one JSON-RPC message");
                    }
                }
                other => panic!("expected a message, got {other:?}"),
            }
        }
    }
}

/// POST a listen request (the usual modern headers) with `notifications`.
async fn listen(
    base: &str,
    bearer: Option<&str>,
    id: i64,
    notifications: Value,
) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {"_meta": meta(), "notifications": notifications}});
    crate::listen_client::post_listen(&reqwest::Client::new(), base, bearer, &body)
        .await
        .expect("request sent")
}

/// A refusal's status and JSON body (a stream instead fails the test
/// rather than waiting for its end).
async fn json_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body = tokio::time::timeout(Duration::from_secs(10), response.json())
        .await
        .expect("a complete JSON answer, not a stream")
        .expect("a JSON body");
    (status, body)
}

#[tokio::test]
async fn listen_acknowledges_first_keeps_alive_and_ends_with_its_result_on_shutdown() {
    let dir = crate::common::temp_dir();
    let db = crate::common::test_database_url(&dir).await;
    let mut settings = gateway::config::ServeSettings::with_listen("127.0.0.1:0".parse().unwrap());
    settings.keep_alive_seconds = 1;
    settings.shutdown_grace_seconds = 30;
    // Neither the request deadline nor the connection's idle and head
    // timeouts cut a healthy stream.
    settings.request_timeout_seconds = 1;
    settings.idle_timeout_seconds = 1;
    settings.header_read_timeout_seconds = 1;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = gateway::app::spawn(settings, &db, async move {
        let _ = stopped.await;
    })
    .await
    .expect("gateway starts");
    let base = format!("http://{}", running.addr);

    let manifest = "dealeragent://manifest";
    let response = listen(
        &base,
        None,
        41,
        json!({"resourceSubscriptions": [manifest], "resourcesListChanged": true, "toolsListChanged": true}),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut sse = Sse::new(response);
    let ack = sse.message(Duration::from_secs(5)).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        41
    );
    // Only what is honored: never tools list changes.
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": [manifest], "resourcesListChanged": true})
    );
    // Idle: keep-alive comments, past the 1 s request deadline.
    let mut comments = 0;
    let until = Instant::now() + Duration::from_millis(3600);
    while Instant::now() < until {
        match sse.read(Duration::from_millis(3600)).await {
            Read::Block(block) if block == ": keep-alive" => comments += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(comments >= 3, "{comments} keep-alives in 3.6 s");

    // Graceful shutdown: the result frame, then the end, well before the
    // 30 s grace period.
    let asked = Instant::now();
    drop(stop);
    let done = sse.message(Duration::from_secs(10)).await;
    assert_eq!(
        done,
        json!({"jsonrpc": "2.0", "id": 41, "result": {"resultType": "complete",
            "_meta": {"io.modelcontextprotocol/subscriptionId": 41}}})
    );
    assert!(matches!(sse.read(Duration::from_secs(10)).await, Read::End));
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "{:?}",
        asked.elapsed()
    );
    eprintln!("shutdown ended the stream after {:?}", asked.elapsed());
}

#[tokio::test]
async fn listen_refusals_and_caps_are_in_words_and_never_echo() {
    let app = spawn_with(|_| {}).await;
    let base = app.base();
    // Not visible to an anonymous caller (the private fleet rooftop and a
    // vehicle of it), absent, or not a dealeragent URI: one message.
    let secret = "dealeragent://organization/org.lakeshore-auto-group/rooftop/roof.lakeshore-fleet-wholesale/vehicle/veh.x-secret";
    let mut messages = std::collections::BTreeSet::new();
    for uri in [
        secret.to_owned(),
        rooftop_uri(LAKESHORE, FLEET),
        "dealeragent://organization/org.x-absent".to_owned(),
        "https://example.com/x-secret".to_owned(),
    ] {
        let (status, body) = json_of(
            listen(
                &base,
                None,
                3,
                json!({"resourceSubscriptions": [rooftop_uri(LAKESHORE, CHICAGO), uri]}),
            )
            .await,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["id"], 3);
        assert_eq!(body["error"]["code"], -32602, "{body}");
        let message = body["error"]["message"].as_str().unwrap().to_owned();
        assert!(
            !message.contains("x-secret") && !message.contains(FLEET),
            "{message}"
        );
        messages.insert(message);
    }
    assert_eq!(messages.len(), 1, "{messages:?}");

    // Malformed filters and the per-stream cap (256 URIs).
    for (notifications, words) in [
        (
            json!({"resourceSubscriptions": "x-secret"}),
            "array of URI strings",
        ),
        (
            json!({"resourceSubscriptions": [7]}),
            "array of URI strings",
        ),
        (json!([]), "must be an object"),
    ] {
        let (_, body) = json_of(listen(&base, None, 4, notifications).await).await;
        assert_eq!(body["error"]["code"], -32602, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(words) && !message.contains("x-secret"),
            "{message}"
        );
    }
    let many: Vec<String> = (0..257)
        .map(|i| {
            format!("dealeragent://organization/{LAKESHORE}/rooftop/{CHICAGO}/vehicle/veh.{i}")
        })
        .collect();
    let (_, body) =
        json_of(listen(&base, None, 5, json!({"resourceSubscriptions": many})).await).await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("more than 256 URIs")
    );

    // The AAP endpoints are tools only: no listen there.
    let body = json!({"jsonrpc": "2.0", "id": 8, "method": "subscriptions/listen",
        "params": {"_meta": meta(), "notifications": {"resourcesListChanged": true}}});
    let (status, answer) = json_of(
        reqwest::Client::new()
            .post(format!("{base}/aap/{LAKESHORE}/mcp"))
            .header("content-type", "application/json")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", "subscriptions/listen")
            .body(body.to_string())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, &answer["error"]["code"]),
        (404, &json!(-32601)),
        "{answer}"
    );

    // Header and _meta mistakes get the answers any request gets.
    let no_meta = json!({"jsonrpc": "2.0", "id": 6, "method": "subscriptions/listen",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}, "notifications": {}}});
    let r = app
        .post_raw(
            &[
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "subscriptions/listen"),
            ],
            no_meta.to_string(),
        )
        .await;
    assert_eq!((r.status, r.error_code()), (400, -32602), "{}", r.raw);
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
        "params": {"_meta": meta(), "notifications": {}}});
    let r = app
        .post_raw(
            &[
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "tools/list"),
            ],
            body.to_string(),
        )
        .await;
    assert_eq!((r.status, r.error_code()), (400, -32020), "{}", r.raw);
    let r = app
        .post_raw(
            &[
                ("mcp-protocol-version", LEGACY),
                ("mcp-method", "subscriptions/listen"),
            ],
            body.to_string(),
        )
        .await;
    assert_eq!((r.status, r.error_code()), (400, -32020), "{}", r.raw);
}

/// A store with the demo dealers and Lakeshore's inventory, imported by
/// the binary.
async fn seeded() -> (std::path::PathBuf, String) {
    let (dir, db) = fresh_database().await;
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/dealers.yaml");
    let out = run_cli(&db, &["import", "dealers", &demo.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out));
    import(&db, &lakeshore_without(&dir, "full.csv", &[]));
    (dir, db)
}

/// `lakeshore.csv` without the rows of `stocks`, as a file in `dir`.
fn lakeshore_without(dir: &Path, name: &str, stocks: &[&str]) -> String {
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/inventory/lakeshore.csv"),
    )
    .unwrap();
    let kept: Vec<&str> = source
        .lines()
        .filter(|line| !stocks.iter().any(|s| line.contains(&format!(",{s},"))))
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, kept.join("\n") + "\n").unwrap();
    path.display().to_string()
}

fn import(db: &str, file: &str) {
    let out = run_cli(
        db,
        &["import", "inventory", file, "--organization", LAKESHORE],
    );
    assert!(out.status.success(), "{}", text(&out));
}

/// A group token of `organization` (`--json`): its id and secret.
fn token(db: &str, organization: &str) -> (String, String) {
    let out = run_cli(
        db,
        &[
            "token",
            "create",
            "--subject",
            "agent:watcher",
            "--organization",
            organization,
            "--scopes",
            "dealeragent:inventory:read",
            "--purpose",
            "follow changes",
            "--expires-in",
            "1d",
            "--group",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let created: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    (
        created["token_id"].as_str().unwrap().to_owned(),
        created["token"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn a_revoked_token_ends_its_stream_and_streams_are_capped_per_credential() {
    let (dir, db) = seeded().await;
    let (token_id, token) = token(&db, MAPLECREST);
    let app = spawn_on(dir, db.clone(), |_| {}).await;
    let base = app.base();

    // Another organization's partner-only rooftop is refused with the
    // words an absent one gets.
    let foreign = json_of(
        listen(
            &base,
            Some(&token),
            2,
            json!({"resourceSubscriptions": [rooftop_uri(LAKESHORE, FLEET)]}),
        )
        .await,
    )
    .await
    .1;
    let absent = json_of(
        listen(
            &base,
            Some(&token),
            2,
            json!({"resourceSubscriptions": [rooftop_uri(MAPLECREST, "roof.absent")]}),
        )
        .await,
    )
    .await
    .1;
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
    assert_eq!(foreign["error"], absent["error"]);

    // Eight streams per credential; the ninth is refused with the limit.
    let mut open = Vec::new();
    for id in 0..8 {
        let r = listen(
            &base,
            Some(&token),
            id,
            json!({"resourceSubscriptions": [rooftop_uri(MAPLECREST, TORONTO)]}),
        )
        .await;
        assert_eq!(r.status(), 200);
        open.push(Sse::new(r));
    }
    let (status, body) = json_of(listen(&base, Some(&token), 9, json!({})).await).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["data"]["reason"], "too_many_streams");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 8")
    );
    for sse in &mut open {
        let ack = sse.message(Duration::from_secs(5)).await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    }
    let mut sse = open.pop().unwrap();
    drop(open);

    // Revoked: the stream ends with credential_revoked.
    let out = run_cli(&db, &["token", "revoke", &token_id]);
    assert!(out.status.success(), "{}", text(&out));
    let started = Instant::now();
    let end = sse.message(Duration::from_secs(20)).await;
    assert_eq!(end["id"], 7, "{end}");
    assert_eq!(
        end["error"]["data"]["reason"], "credential_revoked",
        "{end}"
    );
    assert!(matches!(sse.read(Duration::from_secs(5)).await, Read::End));
    eprintln!("revocation ended the stream after {:?}", started.elapsed());
}

#[tokio::test]
async fn a_legacy_session_subscribes_and_its_get_stream_hears_a_cli_import() {
    let (dir, db) = seeded().await;
    let app = spawn_on(dir.clone(), db.clone(), |_| {}).await;
    let session = app.initialize_legacy().await;
    let org_uri = format!("dealeragent://organization/{LAKESHORE}");

    let r = app
        .legacy(&session, "resources/subscribe", json!({"uri": org_uri}))
        .await;
    assert_eq!(r.result(), &json!({}));
    let refused = app
        .legacy(
            &session,
            "resources/subscribe",
            json!({"uri": rooftop_uri(LAKESHORE, FLEET)}),
        )
        .await;
    assert_eq!(refused.error_code(), -32602, "{}", refused.raw);
    let r = app
        .legacy(
            &session,
            "resources/unsubscribe",
            json!({"uri": "dealeragent://manifest"}),
        )
        .await;
    assert_eq!(r.result(), &json!({}));

    let get = |session: String| {
        let url = app.url.clone();
        async move {
            reqwest::Client::new()
                .get(url)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", LEGACY)
                .send()
                .await
                .unwrap()
        }
    };
    let response = get(session.clone()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut sse = Sse::new(response);
    assert!(matches!(sse.read(Duration::from_secs(5)).await, Read::Block(b) if b.starts_with(':')));

    // A real import (LC1003 sold) reaches the stream.
    let imported = Instant::now();
    import(&db, &lakeshore_without(&dir, "sold.csv", &["LC1003"]));
    let until = Instant::now() + Duration::from_secs(20);
    let notice = loop {
        let notice = sse
            .message(until.saturating_duration_since(Instant::now()))
            .await;
        if notice["params"]["uri"] == org_uri.as_str() {
            break notice;
        }
    };
    eprintln!("the import was notified after {:?}", imported.elapsed());
    assert_eq!(
        notice["method"], "notifications/resources/updated",
        "{notice}"
    );
    assert_eq!(notice["params"]["uri"], org_uri.as_str());
    let change = &notice["params"]["_meta"]["dealergateway/change"];
    assert!(
        change["kinds"]
            .as_array()
            .unwrap()
            .contains(&json!("inventory_changed")),
        "{notice}"
    );
    assert!(change["snapshotVersion"].is_string());
    assert!(
        notice["params"]["_meta"]
            .get("io.modelcontextprotocol/subscriptionId")
            .is_none()
    );

    // A second GET stream replaces the first; DELETE ends the second.
    let second = get(session.clone()).await;
    assert_eq!(second.status(), 200);
    let mut second = Sse::new(second);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        match sse
            .read(until.saturating_duration_since(Instant::now()))
            .await
        {
            Read::End => break,
            Read::Block(_) => {}
            Read::Idle => panic!("the replaced stream did not end"),
        }
    }
    let deleted = reqwest::Client::new()
        .delete(app.url.clone())
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        match second
            .read(until.saturating_duration_since(Instant::now()))
            .await
        {
            Read::End => break,
            Read::Block(_) => {}
            Read::Idle => panic!("DELETE did not end the stream"),
        }
    }
    // Without a session there is still no stream to offer.
    let r = reqwest::Client::new()
        .get(app.url.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
}
