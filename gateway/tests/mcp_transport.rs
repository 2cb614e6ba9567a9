//! MCP transport rows of docs/mcp.md over real HTTP: Host and Origin,
//! media types, body size, JSON-RPC envelope, notifications, GET/DELETE.
//! None of these depend on the era.

mod common;

use common::{MODERN, TestApp, modern_body, send, spawn, spawn_with};
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
