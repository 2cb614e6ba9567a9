//! A subscriber that stops reading is cut, and the server's memory does
//! not grow with what it was not told (docs/mcp.md "Subscriptions",
//! "Bounds"): eight listen streams that never read their bodies, each
//! watching 1,000 vehicles, while twenty imports change every watched
//! vehicle's price: 160,000 notifications owed, twice what the socket
//! buffers between the server and its clients hold (up to 4 MB a
//! connection here). The server process's resident memory is read from /proc after the
//! first import and after the last; the streams are ended with
//! `slow_consumer`, which a late reader finds at the end of what was queued.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::cli_ops::serve;
use crate::common::{MODERN, meta, run_cli, temp_dir, test_database_url, text};
use crate::listen_client::{listen_body, vehicle_uri};

const ORG: &str = "org.bench-001";
const ROOFTOP: &str = "roof.bench-0001";
const STREAMS: usize = 8;
const WATCHED_PER_STREAM: usize = 1_000;
/// Imports after the first (warm-up) one, each changing every price.
const IMPORTS: u64 = 19;
/// What "flat" allows: allocator noise and the imports' own snapshots
/// (measured: 0 MB on SQLite, 14 MB on PostgreSQL, whose client keeps
/// buffers per reload), below what a server that queued the ~80,000
/// notifications the sockets cannot take grows by (40 MB measured on
/// SQLite with an unbounded queue).
const RSS_SLACK_KB: u64 = 24 * 1024;

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse().ok())
        })
        .expect("the server's VmRSS")
}

/// The generated feed with every price raised by `step` minor units and
/// every row observed now (a newer snapshot than the last import's).
fn bump(feed: &str, step: u64) -> String {
    let mut reader = csv::Reader::from_reader(feed.as_bytes());
    let headers = reader.headers().expect("headers").clone();
    let col = |name: &str| headers.iter().position(|h| h == name).expect(name);
    let (price, observed) = (col("advertised_price_minor"), col("observed_at"));
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(&headers).expect("write");
    for row in reader.records() {
        let row = row.expect("a row");
        let fields: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, f)| match i {
                _ if i == price && !f.is_empty() => {
                    (f.parse::<u64>().expect("a price") + step).to_string()
                }
                _ if i == observed => now.clone(),
                _ => f.to_owned(),
            })
            .collect();
        writer.write_record(&fields).expect("write");
    }
    String::from_utf8(writer.into_inner().expect("flush")).expect("utf-8")
}

/// Every vehicle id of the rooftop, through anonymous searches.
async fn vehicle_ids(http: &reqwest::Client, base: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut page = json!({"limit": 100});
        if let Some(c) = &cursor {
            page = json!({"cursor": c});
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "dealeragent.inventory.search", "_meta": meta(),
            "arguments": {"organization_id": ORG, "rooftop_ids": [ROOFTOP], "page": page}}});
        let reply: Value = http
            .post(format!("{base}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", "tools/call")
            .header("mcp-name", "dealeragent.inventory.search")
            .body(body.to_string())
            .send()
            .await
            .expect("search")
            .json()
            .await
            .expect("json");
        let result = &reply["result"]["structuredContent"];
        for v in result["vehicles"].as_array().expect("vehicles") {
            ids.push(v["vehicle_id"].as_str().expect("vehicle_id").to_owned());
        }
        cursor = result["page"]["next_cursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            return ids;
        }
    }
}

/// A listen stream on a raw socket with a tiny receive buffer: the request
/// is sent, the response head and acknowledgement read, and then nothing.
async fn silent_listener(addr: &str, body: &Value) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("SO_RCVBUF");
    let mut stream = socket
        .connect(addr.parse().expect("an address"))
        .await
        .expect("connect");
    let body = body.to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\n\
         Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.write_all(body.as_bytes()).await.expect("write");
    let mut got = Vec::new();
    let mut buf = [0_u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(20);
    while !String::from_utf8_lossy(&got).contains("notifications/subscriptions/acknowledged") {
        let left = deadline.saturating_duration_since(Instant::now());
        let n = tokio::time::timeout(left, stream.read(&mut buf))
            .await
            .expect("the acknowledgement within 20 s")
            .expect("read");
        assert!(
            n > 0,
            "the stream closed: {}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    }
    assert!(
        String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    stream
}

/// Everything left on `stream` until it closes or is quiet for 5 s.
async fn drain(stream: &mut tokio::net::TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0_u8; 65536];
    while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await
    {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_stops_reading_is_cut_and_memory_stays_flat() {
    // reqwest needs a process-wide rustls provider; this test starts the
    // server as a process, so nothing in-process installed one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let bundle = dir.join("bundle");
    let out = run_cli(
        &db,
        &[
            "demo",
            "generate",
            "--vehicles",
            "1000",
            "--rooftops",
            "1",
            "--seed",
            "7",
            "--out",
            &bundle.display().to_string(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = run_cli(&db, &["import", "bundle", &bundle.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out));
    let feed_file = bundle.join("inventory").join(format!("{ROOFTOP}.csv"));
    let feed = std::fs::read_to_string(&feed_file).expect("the generated feed");

    let metrics_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let metrics_listen = format!("127.0.0.1:{metrics_port}");
    let served = serve(
        &db,
        &[
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            &metrics_listen,
            "--subscriptions-per-stream",
            "1000",
            "--max-connections-per-address",
            "4096",
            "--anonymous-quota-per-minute",
            "1000000",
            "--rate-limit-ip-per-minute",
            "1000000",
        ],
        &[("DEALER_GATEWAY_LOG", "warn")],
    )
    .await
    .unwrap_or_else(|_| panic!("the server did not start"));
    let pid = served.child.id().expect("the server's pid");
    let http = reqwest::Client::new();
    let ids = vehicle_ids(&http, &served.base).await;
    assert!(ids.len() >= WATCHED_PER_STREAM, "{} vehicles", ids.len());
    let uris: Vec<String> = ids[..WATCHED_PER_STREAM]
        .iter()
        .map(|id| vehicle_uri(ORG, ROOFTOP, id))
        .collect();

    let addr = served.base.trim_start_matches("http://").to_owned();
    let mut silent = Vec::with_capacity(STREAMS);
    for i in 0..STREAMS {
        silent.push(silent_listener(&addr, &listen_body(100 + i as i64, &uris, false)).await);
    }

    let import = |step: u64| {
        let file = dir.join(format!("bumped-{step}.csv"));
        std::fs::write(&file, bump(&feed, step)).expect("write");
        let out = run_cli(
            &db,
            &[
                "import",
                "inventory",
                &file.display().to_string(),
                "--organization",
                ORG,
            ],
        );
        assert!(out.status.success(), "{}", text(&out));
    };
    // Warm-up: the first change and the queues it fills; memory is read
    // after it settles.
    import(1);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = rss_kb(pid);
    for step in 2..=IMPORTS + 1 {
        import(step);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = rss_kb(pid);
    let owed = (IMPORTS + 1) * (STREAMS * WATCHED_PER_STREAM) as u64;
    eprintln!(
        "slow subscribers: {STREAMS} silent streams owed {owed} notifications; server RSS {before} KB \
         after the first import, {after} KB after {IMPORTS} more"
    );
    assert!(
        after <= before + RSS_SLACK_KB,
        "RSS grew from {before} KB to {after} KB while {STREAMS} streams did not read"
    );

    // The server ended them, and says why at the end of what it had queued.
    let metrics = http
        .get(format!("http://{metrics_listen}/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    let ended: f64 = metrics
        .lines()
        .filter(|l| {
            l.starts_with("dealer_gateway_subscription_streams_ended_total")
                && l.contains("slow_consumer")
        })
        .filter_map(|l| l.split_whitespace().last()?.parse::<f64>().ok())
        .sum();
    assert!(
        ended >= 1.0,
        "no stream was ended as a slow consumer:\n{}",
        metrics
            .lines()
            .filter(|l| l.contains("subscription") || l.contains("notification"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let rest = drain(&mut silent[0]).await;
    assert!(
        rest.contains("\"slow_consumer\""),
        "the first silent stream ends with its reason; its last 600 bytes: {}",
        &rest[rest.len().saturating_sub(600)..]
    );
}
