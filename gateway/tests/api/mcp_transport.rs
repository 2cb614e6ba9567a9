//! MCP transport rows of docs/mcp.md over real HTTP: Host and Origin,
//! media types, body size, JSON-RPC envelope, notifications, GET/DELETE.
//! None of these depend on the era.

use crate::common;

use crate::common::{MODERN, TestApp, modern_body, send, spawn, spawn_with};
use serde_json::{Value, json};

fn discover() -> String {
    modern_body(1, "server/discover", json!({})).to_string()
}

fn discover_headers() -> Vec<(&'static str, &'static str)> {
    TestApp::modern_headers("server/discover", None)
}

/// A JSON-RPC error body without an `id` member (not even `null`).
fn assert_error_without_id(body: &Value, code: i64) {
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"].is_string(), "{body}");
    assert!(
        body.as_object().is_some_and(|o| !o.contains_key("id")),
        "id must be omitted, not null: {body}"
    );
}

// ---- Host and Origin (DNS-rebinding defence) ----

#[tokio::test]
async fn origin_not_allowed_is_403_with_a_json_rpc_body_without_id() {
    let app = spawn().await;
    let mut headers = discover_headers();
    headers.push(("origin", "http://evil.example.com"));
    let r = app.post_raw(&headers, discover()).await;
    assert_eq!(r.status, 403, "{}", r.raw);
    assert_error_without_id(&r.body, -32600);
}

#[tokio::test]
async fn origin_check_runs_before_the_body_is_parsed() {
    let app = spawn().await;
    let r = app
        .post_raw(&[("origin", "https://evil.example.com")], "{not json")
        .await;
    assert_eq!(r.status, 403, "{}", r.raw);
}

#[tokio::test]
async fn loopback_origins_are_allowed() {
    let app = spawn().await;
    for origin in [
        "http://localhost",
        "http://localhost:3000",
        "http://127.0.0.1:6274",
        "https://[::1]:8443",
    ] {
        let mut headers = discover_headers();
        headers.push(("origin", origin));
        let r = app.post_raw(&headers, discover()).await;
        assert_eq!(r.status, 200, "{origin}: {}", r.raw);
        assert_eq!(r.result()["resultType"], "complete");
    }
}

#[tokio::test]
async fn configured_extra_origin_is_allowed_and_others_are_not() {
    let app = spawn_with(|s| s.allowed_origins = vec!["https://app.example.com".into()]).await;
    for (origin, status) in [
        ("https://app.example.com", 200),
        ("https://APP.example.com/", 200),
        ("https://other.example.com", 403),
        ("http://app.example.com", 403),
        ("null", 403),
    ] {
        let mut headers = discover_headers();
        headers.push(("origin", origin));
        let r = app.post_raw(&headers, discover()).await;
        assert_eq!(r.status, status, "{origin}: {}", r.raw);
    }
}

#[tokio::test]
async fn host_not_allowed_is_403() {
    let app = spawn().await;
    let body = discover();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: evil.example.com\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\n\
         Mcp-Method: server/discover\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let r = app.raw_http(&head, body.as_bytes()).await;
    assert_eq!(r.status, 403);
    assert_error_without_id(&r.json(), -32600);
}

#[tokio::test]
async fn loopback_and_configured_hosts_are_allowed() {
    let app = spawn_with(|s| s.allowed_hosts = vec!["gw.example.com".into()]).await;
    let body = discover();
    for host in ["localhost", "127.0.0.1:9", "[::1]:80", "gw.example.com:443"] {
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let r = app.raw_http(&head, body.as_bytes()).await;
        assert_eq!(r.status, 200, "{host}: {:?}", r.json());
    }
}

// ---- Media types ----

#[tokio::test]
async fn content_type_text_plain_is_415() {
    let app = spawn().await;
    let mut headers = discover_headers();
    headers.push(("content-type", "text/plain"));
    let r = app.post_raw(&headers, discover()).await;
    assert_eq!(r.status, 415, "{}", r.raw);
    assert_error_without_id(&r.body, -32600);
}

#[tokio::test]
async fn missing_content_type_is_tolerated() {
    let app = spawn().await;
    let r = app.post_exact(&discover_headers(), discover()).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.result()["resultType"], "complete");
}

#[tokio::test]
async fn content_type_with_parameters_is_accepted() {
    let app = spawn().await;
    let mut headers = discover_headers();
    headers.push(("content-type", "Application/JSON; charset=utf-8"));
    let r = app.post_raw(&headers, discover()).await;
    assert_eq!(r.status, 200, "{}", r.raw);
}

#[tokio::test]
async fn missing_wildcard_or_json_only_accept_is_answered_with_json() {
    let app = spawn().await;
    for accept in [
        None,
        Some("*/*"),
        Some("application/json"),
        Some("application/*"),
        Some("application/json, text/event-stream"),
    ] {
        let mut headers = vec![
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "server/discover"),
        ];
        if let Some(a) = accept {
            headers.push(("accept", a));
        }
        let r = app.post_raw(&headers, discover()).await;
        assert_eq!(r.status, 200, "{accept:?}: {}", r.raw);
        assert_eq!(
            r.headers.get("content-type").unwrap(),
            "application/json",
            "{accept:?}"
        );
        assert_eq!(r.result()["resultType"], "complete");
    }
}

#[tokio::test]
async fn accept_excluding_json_is_406() {
    let app = spawn().await;
    for accept in [
        "text/event-stream",
        "text/html",
        "application/json;q=0, text/event-stream",
    ] {
        let mut headers = discover_headers();
        headers[0] = ("accept", accept);
        let r = app.post_raw(&headers, discover()).await;
        assert_eq!(r.status, 406, "{accept}: {}", r.raw);
        assert_error_without_id(&r.body, -32600);
    }
}

// ---- Body size ----

fn oversized_body() -> String {
    // A syntactically valid request, padded past a 1 KiB limit.
    let mut body = modern_body(1, "server/discover", json!({}));
    body["params"]["_meta"]["com.example/padding"] = json!("x".repeat(2048));
    body.to_string()
}

#[tokio::test]
async fn body_over_the_limit_with_content_length_is_413() {
    let app = spawn_with(|s| s.max_body_bytes = 1024).await;
    let r = app.post_raw(&discover_headers(), oversized_body()).await;
    assert_eq!(r.status, 413, "{}", r.raw);
    assert_error_without_id(&r.body, -32600);
    // At the limit, the same server serves the request.
    let ok = app.post_raw(&discover_headers(), discover()).await;
    assert_eq!(ok.status, 200, "{}", ok.raw);
}

#[tokio::test]
async fn chunked_body_over_the_limit_is_413() {
    let app = spawn_with(|s| s.max_body_bytes = 1024).await;
    let body = oversized_body();
    let mut chunked = Vec::new();
    for chunk in body.as_bytes().chunks(300) {
        chunked.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        chunked.extend_from_slice(chunk);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    let r = app.raw_http(head, &chunked).await;
    assert_eq!(r.status, 413);
    assert_error_without_id(&r.json(), -32600);
}

#[tokio::test]
async fn chunked_body_within_the_limit_is_served() {
    let app = spawn().await;
    let body = discover();
    let mut chunked = Vec::new();
    for chunk in body.as_bytes().chunks(40) {
        chunked.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        chunked.extend_from_slice(chunk);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    let r = app.raw_http(head, &chunked).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["resultType"], "complete");
}

// ---- JSON-RPC envelope ----

#[tokio::test]
async fn invalid_json_is_400_parse_error_without_id() {
    let app = spawn().await;
    for body in [
        "{\"jsonrpc\": \"2.0\", \"id\": 1,",
        "",
        "nope",
        "\u{feff}{}",
    ] {
        let r = app.post_raw(&discover_headers(), body).await;
        assert_eq!(r.status, 400, "{body:?}: {}", r.raw);
        assert_error_without_id(&r.body, -32700);
    }
}

#[tokio::test]
async fn batch_is_rejected() {
    let app = spawn().await;
    let batch = json!([
        modern_body(1, "server/discover", json!({})),
        modern_body(2, "tools/list", json!({}))
    ]);
    for body in [batch.to_string(), "[]".to_owned()] {
        let r = app.post_raw(&discover_headers(), body).await;
        assert_eq!(r.status, 400, "{}", r.raw);
        assert_error_without_id(&r.body, -32600);
    }
}

#[tokio::test]
async fn non_object_json_is_invalid_request() {
    let app = spawn().await;
    for body in ["42", "\"server/discover\"", "null", "true"] {
        let r = app.post_raw(&discover_headers(), body).await;
        assert_eq!(r.status, 400, "{body}: {}", r.raw);
        assert_error_without_id(&r.body, -32600);
    }
}

#[tokio::test]
async fn null_fractional_or_structured_id_is_invalid_request() {
    let app = spawn().await;
    for id in [
        json!(null),
        json!(1.5),
        json!(2.0),
        json!(true),
        json!({"a": 1}),
        json!([1]),
    ] {
        let mut body = modern_body(1, "server/discover", json!({}));
        body["id"] = id.clone();
        let r = app.post_raw(&discover_headers(), body.to_string()).await;
        assert_eq!(r.status, 400, "{id}: {}", r.raw);
        assert_error_without_id(&r.body, -32600);
    }
}

#[tokio::test]
async fn wrong_or_missing_jsonrpc_version_is_invalid_request_with_id_echoed() {
    let app = spawn().await;
    for version in [Some(json!("1.0")), Some(json!(2.0)), None] {
        let mut body = modern_body(1, "server/discover", json!({}));
        body["id"] = json!("req-7");
        match &version {
            Some(v) => body["jsonrpc"] = v.clone(),
            None => {
                body.as_object_mut().unwrap().remove("jsonrpc");
            }
        }
        let r = app.post_raw(&discover_headers(), body.to_string()).await;
        assert_eq!(r.status, 400, "{version:?}: {}", r.raw);
        assert_eq!(r.error_code(), -32600);
        assert_eq!(r.body["id"], "req-7");
    }
}

#[tokio::test]
async fn missing_or_non_string_method_is_invalid_request() {
    let app = spawn().await;
    let missing = json!({"jsonrpc": "2.0", "id": 11});
    let numeric = json!({"jsonrpc": "2.0", "id": 12, "method": 5});
    for (body, id) in [(missing, 11), (numeric, 12)] {
        let r = app.post_raw(&discover_headers(), body.to_string()).await;
        assert_eq!(r.status, 400, "{}", r.raw);
        assert_eq!(r.error_code(), -32600);
        assert_eq!(r.body["id"], id);
    }
}

#[tokio::test]
async fn params_not_an_object_is_400_invalid_params() {
    let app = spawn().await;
    for params in [json!([1, 2]), json!("x"), json!(null), json!(3)] {
        let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": params});
        let r = app
            .post_raw(
                &TestApp::modern_headers("tools/list", None),
                body.to_string(),
            )
            .await;
        assert_eq!(r.status, 400, "{params}: {}", r.raw);
        assert_eq!(r.error_code(), -32602);
        assert_eq!(r.body["id"], 3);
    }
}

#[tokio::test]
async fn notification_is_202_with_an_empty_body() {
    let app = spawn().await;
    let modern = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "_meta": common::meta()}});
    let bare = json!({"jsonrpc": "2.0", "method": "notifications/whatever"});
    for body in [modern, bare] {
        let r = app
            .post_raw(
                &TestApp::modern_headers("notifications/cancelled", None),
                body.to_string(),
            )
            .await;
        assert_eq!(r.status, 202, "{}", r.raw);
        assert!(r.raw.is_empty(), "{}", r.raw);
    }
}

#[tokio::test]
async fn client_response_object_is_202() {
    let app = spawn().await;
    for body in [
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        json!({"jsonrpc": "2.0", "id": "s-1", "error": {"code": -1, "message": "no"}}),
    ] {
        let r = app.post_raw(&[], body.to_string()).await;
        assert_eq!(r.status, 202, "{}", r.raw);
        assert!(r.raw.is_empty());
    }
}

#[tokio::test]
async fn header_value_with_non_ascii_bytes_is_header_mismatch() {
    let app = spawn().await;
    let body = modern_body(
        4,
        "tools/call",
        json!({"name": "dealeragent.discovery.get_manifest", "arguments": {}}),
    )
    .to_string();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\nMcp-Name: ",
        body.len()
    )
    .into_bytes();
    head.extend_from_slice(b"caf\xc3\xa9\r\n\r\n");
    let mut request = head;
    request.extend_from_slice(body.as_bytes());
    let r = app.raw_http("", &request).await;
    assert_eq!(r.status, 400);
    let b = r.json();
    assert_eq!(b["error"]["code"], -32020, "{b}");
    assert_eq!(b["id"], 4);
}

// ---- GET and DELETE without a legacy session ----

#[tokio::test]
async fn get_without_session_is_405_allowing_post() {
    let app = spawn().await;
    for accept in ["text/event-stream", "application/json"] {
        let r = send(
            app.http
                .get(&app.url)
                .header("accept", accept)
                .header("mcp-protocol-version", MODERN),
        )
        .await;
        assert_eq!(r.status, 405, "{}", r.raw);
        assert_eq!(r.headers.get("allow").unwrap(), "POST");
    }
}

#[tokio::test]
async fn delete_without_session_is_405() {
    let app = spawn().await;
    let r = send(app.http.delete(&app.url)).await;
    assert_eq!(r.status, 405, "{}", r.raw);
    assert_eq!(r.headers.get("allow").unwrap(), "POST");
}

#[tokio::test]
async fn get_with_a_foreign_origin_is_403() {
    let app = spawn().await;
    let r = send(
        app.http
            .get(&app.url)
            .header("origin", "https://evil.example.com"),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.raw);
}

#[tokio::test]
async fn oversized_request_headers_get_431_with_a_json_rpc_body() {
    let app = common::spawn().await;
    let big = "x".repeat(20 * 1024);
    let body = common::modern_body(1, "tools/list", serde_json::json!({}));
    let r = app
        .post_raw(
            &[("x-padding", big.as_str()), ("mcp-method", "tools/list")],
            body.to_string(),
        )
        .await;
    assert_eq!(r.status, 431, "{}", r.raw);
    assert_eq!(r.body["error"]["code"], -32600);
}

// ---- CORS (browser clients; --allowed-origins) ----

const APP_ORIGIN: &str = "https://app.example.com";

/// The comma-separated tokens of one response header, lower-cased.
fn header_tokens(r: &common::Reply, name: &str) -> Vec<String> {
    r.headers
        .get_all(name)
        .iter()
        .flat_map(|v| v.to_str().unwrap_or_default().split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty())
        .collect()
}

fn assert_no_cors_headers(r: &common::Reply) {
    let cors: Vec<&str> = r
        .headers
        .keys()
        .map(reqwest::header::HeaderName::as_str)
        .filter(|k| k.starts_with("access-control-"))
        .collect();
    assert!(cors.is_empty(), "unexpected CORS headers {cors:?}: {r:?}");
}

fn preflight(app: &TestApp, origin: &str) -> reqwest::RequestBuilder {
    app.http
        .request(reqwest::Method::OPTIONS, &app.url)
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "content-type,mcp-protocol-version,mcp-method,mcp-name,authorization",
        )
}

#[tokio::test]
async fn preflight_from_a_configured_origin_is_204_allowing_the_mcp_headers() {
    let app = spawn_with(|s| s.allowed_origins = vec![APP_ORIGIN.into()]).await;
    let r = send(preflight(&app, APP_ORIGIN)).await;
    assert_eq!(r.status, 204, "{r:?}");
    assert_eq!(
        r.headers.get("access-control-allow-origin").unwrap(),
        APP_ORIGIN
    );
    let methods = header_tokens(&r, "access-control-allow-methods");
    for m in ["get", "post", "delete", "options"] {
        assert!(methods.contains(&m.to_owned()), "{m} not in {methods:?}");
    }
    let allowed = header_tokens(&r, "access-control-allow-headers");
    for h in [
        "content-type",
        "accept",
        "authorization",
        "mcp-protocol-version",
        "mcp-session-id",
        "mcp-method",
        "mcp-name",
        "mcp-param-organization",
        "last-event-id",
    ] {
        assert!(allowed.contains(&h.to_owned()), "{h} not in {allowed:?}");
    }
    assert!(
        header_tokens(&r, "vary").contains(&"origin".to_owned()),
        "{r:?}"
    );
    // No credentials mode: tokens travel in Authorization, not cookies.
    assert!(r.headers.get("access-control-allow-credentials").is_none());
}

#[tokio::test]
async fn requests_from_a_configured_origin_carry_cors_headers_and_expose_the_mcp_ones() {
    let app = spawn_with(|s| s.allowed_origins = vec![APP_ORIGIN.into()]).await;
    let mut headers = discover_headers();
    headers.push(("origin", APP_ORIGIN));
    let r = app.post_raw(&headers, discover()).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.result()["resultType"], "complete");
    assert_eq!(
        r.headers.get("access-control-allow-origin").unwrap(),
        APP_ORIGIN
    );
    let exposed = header_tokens(&r, "access-control-expose-headers");
    for h in [
        "mcp-session-id",
        "mcp-protocol-version",
        "www-authenticate",
        "retry-after",
    ] {
        assert!(exposed.contains(&h.to_owned()), "{h} not in {exposed:?}");
    }

    // The legacy handshake from a browser: the session id must be readable.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": common::LEGACY, "capabilities": {},
        "clientInfo": {"name": "browser", "version": "0"}}});
    let r = app
        .post_raw(&[("origin", APP_ORIGIN)], init.to_string())
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(r.headers.get("mcp-session-id").is_some());
    assert_eq!(
        r.headers.get("access-control-allow-origin").unwrap(),
        APP_ORIGIN
    );

    // A refused credential: the challenge is readable by the page.
    let mut headers = discover_headers();
    headers.push(("origin", APP_ORIGIN));
    headers.push(("authorization", "Bearer not-a-token"));
    let r = app.post_raw(&headers, discover()).await;
    assert_eq!(r.status, 401, "{}", r.raw);
    assert!(r.headers.get("www-authenticate").is_some());
    assert_eq!(
        r.headers.get("access-control-allow-origin").unwrap(),
        APP_ORIGIN
    );
}

#[tokio::test]
async fn a_foreign_origin_gets_403_and_no_cors_headers_on_preflight_and_post() {
    let app = spawn_with(|s| s.allowed_origins = vec![APP_ORIGIN.into()]).await;
    for origin in ["https://evil.example.com", "http://app.example.com", "null"] {
        let r = send(preflight(&app, origin)).await;
        assert_eq!(r.status, 403, "{origin}: {r:?}");
        assert_error_without_id(&r.body, -32600);
        assert_no_cors_headers(&r);

        let mut headers = discover_headers();
        headers.push(("origin", origin));
        let r = app.post_raw(&headers, discover()).await;
        assert_eq!(r.status, 403, "{origin}: {}", r.raw);
        assert_no_cors_headers(&r);
    }
    // A foreign Host is refused on preflight too (DNS rebinding).
    let head = format!(
        "OPTIONS /mcp HTTP/1.1\r\nHost: evil.example.com\r\nOrigin: {APP_ORIGIN}\r\n\
         Access-Control-Request-Method: POST\r\nConnection: close\r\n\r\n"
    );
    let r = app.raw_http(&head, b"").await;
    assert_eq!(r.status, 403);
    assert!(
        r.headers
            .iter()
            .all(|(k, _)| !k.starts_with("access-control-")),
        "{:?}",
        r.headers
    );
}

#[tokio::test]
async fn loopback_origins_pass_the_origin_check_but_get_cors_only_when_configured() {
    let app = spawn().await;
    let origin = "http://localhost:3000";
    let mut headers = discover_headers();
    headers.push(("origin", origin));
    let r = app.post_raw(&headers, discover()).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_no_cors_headers(&r);
    let r = send(preflight(&app, origin)).await;
    assert_eq!(r.status, 204, "{r:?}");
    assert!(
        r.headers.get("access-control-allow-origin").is_none(),
        "{r:?}"
    );

    let app = spawn_with(|s| s.allowed_origins = vec![origin.into()]).await;
    let r = send(preflight(&app, origin)).await;
    assert_eq!(r.status, 204, "{r:?}");
    assert_eq!(
        r.headers.get("access-control-allow-origin").unwrap(),
        origin
    );
}

// ---- Slow clients and refusals at the connection (docs/security.md) ----

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One response read off a raw connection.
#[derive(Debug)]
struct Raw {
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Split every `Content-Length` response in `bytes` (the gateway never
/// streams a response).
fn responses(mut bytes: &[u8]) -> Vec<Raw> {
    let mut out = Vec::new();
    while let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .expect("status line");
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let length: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let body = &bytes[end + 4..(end + 4 + length).min(bytes.len())];
        out.push(Raw {
            status,
            headers,
            body: serde_json::from_slice(body).unwrap_or(Value::Null),
        });
        bytes = &bytes[(end + 4 + length).min(bytes.len())..];
    }
    out
}

/// Read until the server closes the connection or `limit` passes; the
/// bytes and whether it closed.
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, bool) {
    let mut bytes = Vec::new();
    let mut chunk = [0_u8; 4096];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Ok(Ok(0) | Err(_)) => return (bytes, true),
            Ok(Ok(n)) => bytes.extend_from_slice(&chunk[..n]),
            Err(_) => return (bytes, false),
        }
    }
}

/// A JSON-RPC refusal: `code`, a message, no `id` member.
fn assert_refusal(r: &Raw, status: u16, code: i64) {
    assert_eq!(r.status, status, "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/json"), "{r:?}");
    assert_error_without_id(&r.body, code);
}

const HALF_SENT: &[u8] = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty";

async fn half_sent(app: &TestApp) -> TcpStream {
    let mut s = TcpStream::connect(app.addr).await.expect("connect");
    s.write_all(HALF_SENT).await.expect("write");
    s
}

async fn healthz_over(stream: &mut TcpStream) -> Vec<Raw> {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .expect("write");
    let (bytes, closed) = read_until_closed(stream, Duration::from_secs(10)).await;
    assert!(closed, "{:?}", String::from_utf8_lossy(&bytes));
    responses(&bytes)
}

#[tokio::test]
async fn a_half_sent_request_head_gets_408_and_is_closed_within_the_header_read_timeout() {
    let app = spawn_with(|s| s.header_read_timeout_seconds = 1).await;
    let started = Instant::now();
    let mut stream = half_sent(&app).await;
    let (bytes, closed) = read_until_closed(&mut stream, Duration::from_secs(5)).await;
    let took = started.elapsed();
    assert!(closed, "still open after 5 s");
    assert!(
        took >= Duration::from_millis(900),
        "closed too early: {took:?}"
    );
    assert!(took < Duration::from_secs(4), "closed late: {took:?}");
    let replies = responses(&bytes);
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_refusal(&replies[0], 408, -32600);
    assert_eq!(replies[0].header("connection"), Some("close"));
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let app = spawn_with(|s| s.idle_timeout_seconds = 1).await;
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let (bytes, closed) = read_until_closed(&mut stream, Duration::from_secs(5)).await;
    let took = started.elapsed();
    let replies = responses(&bytes);
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0].status, 200);
    assert!(closed, "the idle keep-alive connection stayed open");
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(took < Duration::from_secs(4), "{took:?}");
    // A connection that never sends a byte is idle too.
    let mut silent = TcpStream::connect(app.addr).await.unwrap();
    let (bytes, closed) = read_until_closed(&mut silent, Duration::from_secs(5)).await;
    assert!(closed && bytes.is_empty(), "{bytes:?}");
}

#[tokio::test]
async fn half_open_connections_from_one_address_cannot_lock_out_a_fresh_client() {
    // Every test client is 127.0.0.1, so the fresh client shares the
    // attacker's address: a connection over a cap replaces the oldest one
    // without a request in progress, never the newcomer. Both caps in turn.
    for (total, per_address) in [(6_u32, 4_u32), (4, 100)] {
        let app = spawn_with(|s| {
            s.max_connections = total;
            s.max_connections_per_address = per_address;
            s.header_read_timeout_seconds = 60;
            s.idle_timeout_seconds = 60;
        })
        .await;
        let mut stalled = Vec::new();
        for _ in 0..30 {
            stalled.push(half_sent(&app).await);
        }
        let mut fresh = TcpStream::connect(app.addr).await.unwrap();
        let replies = healthz_over(&mut fresh).await;
        assert_eq!(replies.len(), 1, "{replies:?}");
        assert_eq!(replies[0].status, 200, "{replies:?}");
        assert_eq!(replies[0].body["status"], "ok");
        // The stalled connections were closed, all but at most a cap's worth.
        let mut closed = 0;
        for s in &mut stalled {
            if read_until_closed(s, Duration::from_millis(200)).await.1 {
                closed += 1;
            }
        }
        let kept = total.min(per_address) as usize;
        assert!(closed >= 30 - kept, "{closed} of 30 closed (cap {kept})");
    }
}

/// A request whose head is complete and whose body never finishes: the
/// handler waits for the body, so the connection is busy.
async fn busy_request(app: &TestApp) -> TcpStream {
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    s.write_all(
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
          Content-Length: 100\r\n\r\n{\"jsonrpc\":",
    )
    .await
    .unwrap();
    s
}

#[tokio::test]
async fn when_every_connection_of_an_address_is_busy_a_new_one_gets_503_with_a_body() {
    let app = spawn_with(|s| {
        s.max_connections_per_address = 2;
        s.request_timeout_seconds = 30;
    })
    .await;
    let mut busy = vec![busy_request(&app).await, busy_request(&app).await];
    // Let the server see both heads (the handlers are then waiting).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut third = TcpStream::connect(app.addr).await.unwrap();
    let (bytes, closed) = read_until_closed(&mut third, Duration::from_secs(5)).await;
    assert!(closed);
    let replies = responses(&bytes);
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_refusal(&replies[0], 503, -32603);
    assert_eq!(replies[0].header("retry-after"), Some("1"));
    // The busy requests were not disturbed: finishing a body is served.
    let rest = format!("{:<89}", "\"2.0\",\"id\":1,\"method\":\"ping\"}");
    busy[0].write_all(rest.as_bytes()).await.unwrap();
    let mut chunk = [0_u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), busy[0].read(&mut chunk))
        .await
        .expect("answered")
        .unwrap();
    let replies = responses(&chunk[..n]);
    assert_eq!(
        replies.len(),
        1,
        "{:?}",
        String::from_utf8_lossy(&chunk[..n])
    );
    assert_ne!(replies[0].status, 503, "{replies:?}");
    busy.clear();
}

#[tokio::test]
async fn shutdown_with_open_connections_exits_within_the_grace_period() {
    let dir = common::temp_dir();
    let url = common::test_database_url(&dir).await;
    let mut settings = gateway::config::ServeSettings::with_listen("127.0.0.1:0".parse().unwrap());
    settings.shutdown_grace_seconds = 1;
    settings.header_read_timeout_seconds = 60;
    settings.idle_timeout_seconds = 60;
    settings.request_timeout_seconds = 60;
    let (state, listener) = gateway::app::prepare(settings, &url).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(gateway::app::serve(listener, state, async move {
        let _ = stopped.await;
    }));
    // One half-sent head (closed at once: no request is in progress) and
    // one request whose body never ends (in progress: cut at the deadline).
    let mut head = TcpStream::connect(addr).await.unwrap();
    head.write_all(HALF_SENT).await.unwrap();
    let mut body = TcpStream::connect(addr).await.unwrap();
    body.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("serve returned within the grace period")
        .unwrap()
        .unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(
        took >= Duration::from_millis(900),
        "the busy request got its grace: {took:?}"
    );
    assert!(read_until_closed(&mut head, Duration::from_secs(1)).await.1);
    assert!(read_until_closed(&mut body, Duration::from_secs(1)).await.1);
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no longer accepting"
    );
}

#[tokio::test]
async fn more_than_100_header_fields_get_431_with_a_json_rpc_body() {
    let app = spawn().await;
    let body = discover();
    let head = |fields: usize| {
        // Host, Content-Type, Content-Length, Mcp-Method and Connection,
        // then padding up to `fields` in all.
        let mut h = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nMcp-Method: server/discover\r\nConnection: close\r\n",
            body.len()
        );
        for i in 0..fields - 5 {
            h.push_str(&format!("X-Pad-{i}: v\r\n"));
        }
        h.push_str("\r\n");
        h
    };
    let r = app.raw_http(&head(100), body.as_bytes()).await;
    assert_eq!(r.status, 200, "100 fields are served: {:?}", r.json());
    for fields in [101, 150, 2_000] {
        let r = app.raw_http(&head(fields), body.as_bytes()).await;
        assert_eq!(r.status, 431, "{fields} fields");
        assert_error_without_id(&r.json(), -32600);
    }
}

#[tokio::test]
async fn a_control_byte_in_a_header_value_gets_400_with_a_json_rpc_body() {
    let app = spawn().await;
    let body = discover();
    for bad in [&b"a\x01b"[..], b"\x00", b"x\x7fy", b"a\rb"] {
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\
             Connection: close\r\nX-Test: ",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(bad);
        request.extend_from_slice(b"\r\n\r\n");
        request.extend_from_slice(body.as_bytes());
        let r = app.raw_http("", &request).await;
        assert_eq!(r.status, 400, "{bad:?}");
        assert_error_without_id(&r.json(), -32600);
    }
}

#[tokio::test]
async fn a_request_head_over_64_kib_gets_431_with_a_json_rpc_body() {
    let app = spawn().await;
    let big = "x".repeat(70 * 1024);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {big}\r\nConnection: close\r\n\r\n"
    );
    let r = app.raw_http(&head, b"").await;
    assert_eq!(r.status, 431);
    assert_error_without_id(&r.json(), -32600);
}

#[tokio::test]
async fn a_bad_head_after_a_request_on_a_keep_alive_connection_is_answered_with_a_body() {
    let app = spawn().await;
    let body = discover();
    let mut bytes = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Mcp-Method: server/discover\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes();
    bytes.extend_from_slice(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    bytes.extend_from_slice(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Bad: \x02\r\n\r\n");
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    stream.write_all(&bytes).await.unwrap();
    let (bytes, closed) = read_until_closed(&mut stream, Duration::from_secs(10)).await;
    assert!(closed);
    let replies = responses(&bytes);
    assert_eq!(replies.len(), 3, "{replies:?}");
    assert_eq!(replies[0].status, 200);
    assert_eq!(replies[0].body["result"]["resultType"], "complete");
    assert_eq!(replies[1].status, 200);
    assert_eq!(replies[1].body["status"], "ok");
    assert_refusal(&replies[2], 400, -32600);
}

#[tokio::test]
async fn a_request_over_the_timeout_gets_503_with_a_json_rpc_body_and_retry_after() {
    let app = spawn_with(|s| s.request_timeout_seconds = 1).await;
    let mut stream = busy_request(&app).await;
    let started = Instant::now();
    let (bytes, _) = read_until_closed(&mut stream, Duration::from_secs(5)).await;
    assert!(started.elapsed() < Duration::from_secs(4));
    let replies = responses(&bytes);
    assert_eq!(replies.len(), 1, "{:?}", String::from_utf8_lossy(&bytes));
    assert_refusal(&replies[0], 503, -32603);
    assert_eq!(replies[0].header("retry-after"), Some("1"));
}
