//! `dealer-gateway stdio` (docs/mcp.md "stdio"): the real binary as a local MCP
//! client starts it, newline-delimited JSON-RPC on piped stdin/stdout,
//! against a fresh store (SQLite, or PostgreSQL when
//! `DEALER_GATEWAY_TEST_POSTGRES_URL` is set).

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::common::{MODERN, meta, run_cli, temp_dir, test_database_url, text, tool_error_code};

const SEARCH: &str = "dealeragent.inventory.search";
const MANIFEST: &str = "dealeragent.discovery.get_manifest";
const ORG: &str = "org.lakeshore-auto-group";
/// The demo's partner-only rooftop (`anonymous_reads: false`).
const PROTECTED: &str = "roof.lakeshore-fleet-wholesale";

/// Run `dealer-gateway stdio ARGS` with `input` on stdin, then EOF; its
/// whole output once it exits. The input is written from another thread,
/// so a large reply cannot block the child while it is being fed.
fn run_stdio(db: &str, args: &[&str], env: &[(&str, &str)], input: Vec<u8>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dealer-gateway"));
    command
        .arg("stdio")
        .args(args)
        .env("DEALER_GATEWAY_DATABASE_URL", db)
        .env("DEALER_GATEWAY_LOG", "warn")
        .env_remove("DEALER_GATEWAY_STDIO_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("binary starts");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let writer = std::thread::spawn(move || {
        // The child may exit before reading everything (a refused token):
        // a broken pipe is then expected, not a failure.
        let _ = stdin.write_all(&input);
        // Dropping stdin is the EOF that ends the process.
    });
    let out = child.wait_with_output().expect("binary runs");
    writer.join().expect("writer thread");
    out
}

/// Lines of JSON-RPC messages, one per line.
fn lines(messages: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in messages {
        out.extend_from_slice(m.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

/// Every stdout line as JSON; stdout must hold nothing else.
fn replies(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .expect("stdout is UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "stdio-test", "version": "1"}
    }})
}

fn call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

fn protected_search(id: i64) -> Value {
    call(
        id,
        SEARCH,
        json!({"organization_id": ORG, "rooftop_ids": [PROTECTED]}),
    )
}

fn by_id(replies: &[Value], id: i64) -> &Value {
    replies
        .iter()
        .find(|r| r["id"] == json!(id))
        .unwrap_or_else(|| panic!("no reply with id {id}: {replies:?}"))
}

/// A fresh store; the first stdio run loads the bundled demo into it.
async fn store() -> String {
    test_database_url(&temp_dir()).await
}

/// The legacy handshake, tools/list and tool calls, a 2026-07-28 request
/// with per-request `_meta` on the same connection, no reply to a
/// notification, and exit 0 at EOF. Anonymous: the partner-only rooftop is
/// not found (DAP isolation), as on /mcp.
#[tokio::test]
async fn anonymous_handshake_list_and_calls_then_eof_exits_0() {
    let db = store().await;
    let input = lines(&[
        initialize(1),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        call(3, MANIFEST, json!({})),
        protected_search(4),
        json!({"jsonrpc": "2.0", "id": "m", "method": "tools/call", "params": {
            "name": MANIFEST, "arguments": {}, "_meta": meta()}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
    ]);
    let out = run_stdio(&db, &[], &[], input);
    assert!(out.status.success(), "{}", text(&out));
    let replies = replies(&out);
    assert_eq!(
        replies.len(),
        6,
        "one reply per request, none for the notification: {replies:?}"
    );

    let init = &by_id(&replies, 1)["result"];
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert_eq!(init["serverInfo"]["name"], "dealer-agent-gateway");
    assert!(init["capabilities"]["tools"].is_object());

    let tools = by_id(&replies, 2)["result"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(
        names.contains(&MANIFEST) && names.contains(&SEARCH),
        "{names:?}"
    );
    // Legacy results carry no 2026-07-28 decoration.
    assert!(by_id(&replies, 2)["result"].get("resultType").is_none());

    let manifest = &by_id(&replies, 3)["result"];
    assert_eq!(manifest["isError"], false, "{manifest}");
    assert_eq!(
        manifest["structuredContent"]["standard"],
        "dealer-agent-protocol"
    );
    let text_block: Value =
        serde_json::from_str(manifest["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text_block, manifest["structuredContent"]);

    let search = &by_id(&replies, 4)["result"];
    assert_eq!(search["isError"], true, "{search}");
    assert_eq!(
        tool_error_code(search).as_deref(),
        Some("dealeragent.resource.not_found"),
        "{search}"
    );

    let modern = &replies.iter().find(|r| r["id"] == "m").unwrap()["result"];
    assert_eq!(modern["resultType"], "complete");
    assert_eq!(modern["isError"], false);
    assert_eq!(
        modern["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "dealer-agent-gateway"
    );
    assert_eq!(by_id(&replies, 5)["result"], json!({}));
}

/// With `--token` (or its environment variable) the partner-only rooftop
/// is searchable, and the audit log records the call with the token's
/// subject. A bad token stops the start-up: exit 2, a message on stderr,
/// nothing on stdout, never an anonymous session.
#[tokio::test]
async fn a_token_grants_and_is_audited_and_a_bad_token_exits_2() {
    let db = store().await;
    // Load the demo (an empty store is seeded by the first start).
    let out = run_stdio(&db, &[], &[], Vec::new());
    assert!(out.status.success(), "{}", text(&out));
    assert!(out.stdout.is_empty(), "{}", text(&out));

    let created = run_cli(
        &db,
        &[
            "token",
            "create",
            "--subject",
            "agent:stdio-check",
            "--organization",
            ORG,
            "--rooftops",
            PROTECTED,
            "--scopes",
            "dealeragent:inventory:read",
            "--purpose",
            "stdio test",
            "--expires-in",
            "1h",
            "--json",
        ],
    );
    assert!(created.status.success(), "{}", text(&created));
    let created: Value = serde_json::from_slice(&created.stdout).unwrap();
    let token = created["token"].as_str().unwrap().to_owned();
    let token_id = created["token_id"].as_str().unwrap().to_owned();

    let since = chrono::Utc::now().to_rfc3339();
    let input = lines(&[initialize(1), protected_search(2)]);
    for how in ["flag", "env"] {
        let out = if how == "flag" {
            run_stdio(&db, &["--token", &token], &[], input.clone())
        } else {
            run_stdio(
                &db,
                &[],
                &[("DEALER_GATEWAY_STDIO_TOKEN", &token)],
                input.clone(),
            )
        };
        assert!(out.status.success(), "{how}: {}", text(&out));
        let replies = replies(&out);
        let search = &by_id(&replies, 2)["result"];
        assert_eq!(search["isError"], false, "{how}: {search}");
        let vehicles = search["structuredContent"]["vehicles"].as_array().unwrap();
        assert!(!vehicles.is_empty(), "{how}: {search}");
        assert!(vehicles.iter().all(|v| v["rooftop_id"] == PROTECTED));
        // The token never appears in what the process writes.
        assert!(!text(&out).contains(&token));
    }

    let export = run_cli(&db, &["audit", "export", "--since", &since]);
    assert!(export.status.success(), "{}", text(&export));
    let events: Vec<Value> = String::from_utf8_lossy(&export.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let searches: Vec<&Value> = events
        .iter()
        .filter(|e| e["tool"] == SEARCH && e["subject"] == "agent:stdio-check")
        .collect();
    assert_eq!(searches.len(), 2, "one audited search per run: {events:?}");
    for e in &searches {
        assert_eq!(e["policy_decision"], "allow", "{e}");
        assert_eq!(e["rooftop_ids"], json!([PROTECTED]), "{e}");
        assert!(e["credential"].to_string().contains(&token_id), "{e}");
    }

    // Refused tokens: malformed, unknown, and revoked.
    let revoked = run_cli(&db, &["token", "revoke", &token_id]);
    assert!(revoked.status.success(), "{}", text(&revoked));
    for bad in ["not-a-token", token.as_str()] {
        let out = run_stdio(&db, &["--token", bad], &[], input.clone());
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(out.stdout.is_empty(), "nothing on stdout: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("the stdio token was refused"), "{stderr}");
        assert!(!stderr.contains(bad), "the token is not echoed: {stderr}");
    }
    let out = run_stdio(&db, &[], &[("DEALER_GATEWAY_STDIO_TOKEN", &token)], input);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(out.stdout.is_empty());
}

/// Framing errors get the HTTP transport's JSON-RPC errors and the process
/// goes on: a malformed line -32700, a batch -32600, a line over the body
/// limit -32600 (skipped, not buffered), a request before `initialize`
/// -32600, an unsupported `_meta` version -32022; blank lines and client
/// responses are ignored.
#[tokio::test]
async fn malformed_batch_oversized_and_early_requests_get_json_rpc_errors() {
    let db = store().await;
    let mut input = b"{not json\n\n".to_vec();
    input.extend_from_slice(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n");
    input.extend_from_slice(&lines(&[
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ]));
    // Over the 4096-byte limit set below.
    let big = json!({"jsonrpc": "2.0", "id": 3, "method": "ping",
                     "params": {"pad": "x".repeat(5000)}});
    input.extend_from_slice(&lines(&[big]));
    let mut old = meta();
    old["io.modelcontextprotocol/protocolVersion"] = json!("2024-01-01");
    input.extend_from_slice(&lines(&[
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": old}}),
        json!({"jsonrpc": "2.0", "id": 99, "result": {}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": meta()}}),
    ]));
    let out = run_stdio(&db, &["--no-demo", "--max-body-bytes", "4096"], &[], input);
    assert!(out.status.success(), "{}", text(&out));
    let replies = replies(&out);
    assert_eq!(replies.len(), 6, "{replies:?}");
    assert_eq!(replies[0]["error"]["code"], -32700, "{}", replies[0]);
    assert!(replies[0].get("id").is_none());
    assert_eq!(replies[1]["error"]["code"], -32600, "{}", replies[1]);
    assert!(
        replies[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("batch")
    );
    assert_eq!(replies[2]["id"], 2);
    assert_eq!(replies[2]["error"]["code"], -32600, "{}", replies[2]);
    assert!(
        replies[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("initialize")
    );
    assert_eq!(replies[3]["error"]["code"], -32600, "{}", replies[3]);
    assert!(
        replies[3]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("4096 bytes")
    );
    assert_eq!(replies[4]["id"], 4);
    assert_eq!(replies[4]["error"]["code"], -32022, "{}", replies[4]);
    assert_eq!(replies[4]["error"]["data"]["supported"], json!([MODERN]));
    assert_eq!(replies[5]["id"], 5);
    assert_eq!(
        replies[5]["result"]["resultType"], "complete",
        "{}",
        replies[5]
    );
    // Logs never reach stdout: every stdout line was a JSON-RPC message.
    assert!(replies.iter().all(|r| r["jsonrpc"] == "2.0"));
}

/// The grant is checked again on every request, like a Bearer header on
/// each POST: a token revoked while the process runs is refused from the
/// next request on (-32600, the request's id echoed), never served as
/// anonymous. Also: `ping` may precede `initialize`.
#[tokio::test]
async fn a_token_revoked_while_running_is_refused_on_the_next_request() {
    use std::io::BufRead as _;
    let db = store().await;
    let out = run_stdio(&db, &[], &[], Vec::new());
    assert!(out.status.success(), "{}", text(&out));
    let created = run_cli(
        &db,
        &[
            "token",
            "create",
            "--subject",
            "agent:stdio-revoked",
            "--organization",
            ORG,
            "--rooftops",
            PROTECTED,
            "--scopes",
            "dealeragent:inventory:read",
            "--purpose",
            "stdio test",
            "--expires-in",
            "1h",
            "--json",
        ],
    );
    assert!(created.status.success(), "{}", text(&created));
    let created: Value = serde_json::from_slice(&created.stdout).unwrap();
    let token = created["token"].as_str().unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_dealer-gateway"))
        .arg("stdio")
        .env("DEALER_GATEWAY_DATABASE_URL", &db)
        .env("DEALER_GATEWAY_LOG", "warn")
        .env("DEALER_GATEWAY_STDIO_TOKEN", token)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("binary starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut exchange = |message: Value| -> Value {
        stdin.write_all(&lines(&[message])).unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    };
    let ping = exchange(json!({"jsonrpc": "2.0", "id": 0, "method": "ping"}));
    assert_eq!(ping["result"], json!({}), "{ping}");
    assert!(exchange(initialize(1))["result"].is_object());
    let before = exchange(protected_search(2));
    assert_eq!(before["result"]["isError"], false, "{before}");

    let revoked = run_cli(
        &db,
        &["token", "revoke", created["token_id"].as_str().unwrap()],
    );
    assert!(revoked.status.success(), "{}", text(&revoked));
    let after = exchange(protected_search(3));
    assert_eq!(after["id"], 3, "{after}");
    assert_eq!(after["error"]["code"], -32600, "{after}");
    assert!(
        after["error"]["message"]
            .as_str()
            .unwrap()
            .contains("revoked"),
        "{after}"
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// The per-address limit counts stdio requests as one loopback client's; a
/// refusal echoes the id, so the client can tell which request it was.
#[tokio::test]
async fn the_per_address_rate_limit_applies_with_the_id_echoed() {
    let db = store().await;
    let pings: Vec<Value> = (1..=4)
        .map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
        .collect();
    let out = run_stdio(
        &db,
        &["--no-demo", "--rate-limit-ip-per-minute", "2"],
        &[],
        lines(&pings),
    );
    assert!(out.status.success(), "{}", text(&out));
    let replies = replies(&out);
    assert_eq!(replies.len(), 4, "{replies:?}");
    assert_eq!(replies[0]["result"], json!({}), "{}", replies[0]);
    let last = &replies[3];
    assert_eq!(last["id"], 4, "{last}");
    assert_eq!(last["error"]["code"], -32600, "{last}");
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap()
            .contains("rate limit"),
        "{last}"
    );
}

/// `stdio --config FILE` reads the serve settings from the same file as
/// `serve --config` (here the body limit and `no_demo`); `token` is not a
/// key of that file, so a shared file never carries a grant.
#[tokio::test]
async fn stdio_reads_the_serve_config_file_but_not_a_token_from_it() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let config = dir.join("gateway.toml");
    std::fs::write(&config, "max_body_bytes = 4096\nno_demo = true\n").unwrap();
    let config = config.display().to_string();
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "ping",
                     "params": {"pad": "x".repeat(5000)}});
    let input = lines(&[
        big,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": MANIFEST, "arguments": {}, "_meta": meta()}}),
    ]);
    let out = run_stdio(&db, &["--config", &config], &[], input);
    assert!(out.status.success(), "{}", text(&out));
    let replies = replies(&out);
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert!(
        replies[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("4096 bytes"),
        "{}",
        replies[0]
    );
    // no_demo: the store stays empty, so there is no manifest to serve
    // (with the demo loaded it is served: the first test).
    assert_eq!(
        tool_error_code(&replies[1]["result"]).as_deref(),
        Some("dealeragent.resource.not_found"),
        "{}",
        replies[1]
    );

    let with_token = dir.join("token.toml");
    std::fs::write(&with_token, "token = \"dgw_x\"\n").unwrap();
    let out = run_stdio(
        &db,
        &["--config", &with_token.display().to_string()],
        &[],
        Vec::new(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown key `token`"),
        "{}",
        text(&out)
    );
}
