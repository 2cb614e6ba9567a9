//! What the connection layer's head check costs per request
//! (docs/benchmarks.md, "The connection layer's head check").
//!
//! One process, one keep-alive connection over loopback: a client thread
//! (blocking std socket) sends `--requests` identical `POST /mcp` requests
//! and reads each answer; the server answers each with a fixed JSON body
//! from an axum router, on a current-thread tokio runtime (no work
//! stealing, so the instruction count repeats), either
//!
//! - `--mode guard`: through the gateway's own accept loop
//!   (`gateway::mcp::connections::serve`: the head check, its timers, the
//!   connection registry), or
//! - `--mode plain`: through hyper's HTTP/1 connection straight over the
//!   socket, configured the same (`max_headers`, timer, header-read
//!   timeout), with no head check.
//!
//! Run under callgrind at two request counts; the difference divided by the
//! difference in requests is the cost of one request, start-up and the
//! client's own instructions being the same in both modes:
//!
//! ```sh
//! cargo build --release -p gateway --example head_check_cost
//! valgrind --tool=callgrind --callgrind-out-file=guard-1000.out \
//!     target/release/examples/head_check_cost --mode guard --requests 1000
//! ```
//!
//! `--head large` adds a 1 KiB bearer token and 25 more fields (2.6 KiB,
//! 33 fields) to the 8-field head of `--head typical` (about 330 bytes).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::header;
use axum::routing::post;
use clap::{Parser, ValueEnum};
use gateway::mcp::connections::{self, Limits, MAX_HEADER_FIELDS};
use tower::ServiceExt as _;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// `connections::serve`: the head check on.
    Guard,
    /// Hyper over the bare socket: no head check.
    Plain,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Head {
    /// The fields an MCP client sends (8, about 330 bytes).
    Typical,
    /// Typical plus a bearer token and tracing/proxy fields (33, 2.6 KiB).
    Large,
}

#[derive(Debug, Parser)]
#[command(about = "Instruction cost of the connection layer's head check")]
struct Args {
    #[arg(long, value_enum)]
    mode: Mode,
    #[arg(long, default_value_t = 1000)]
    requests: usize,
    #[arg(long, value_enum, default_value = "typical")]
    head: Head,
}

const BODY: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"dealeragent.inventory.search","arguments":{"organization_id":"org_maplecrest","page":{"limit":20}}}}"#;
const ANSWER: &str = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":false}}"#;

fn request(head: Head, port: u16) -> Vec<u8> {
    let mut h = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: tools/call\r\nmcp-name: dealeragent.inventory.search\r\n\
         user-agent: python-httpx/0.28.1\r\ncontent-length: {}\r\n",
        BODY.len()
    );
    if head == Head::Large {
        h.push_str(&format!("authorization: Bearer {}\r\n", "e".repeat(1024)));
        for i in 0..24 {
            h.push_str(&format!(
                "x-trace-{i:02}: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n"
            ));
        }
    }
    h.push_str("\r\n");
    let mut bytes = h.into_bytes();
    bytes.extend_from_slice(BODY.as_bytes());
    bytes
}

/// Send every request on one connection; panics on anything but a 200
/// with the whole answer.
fn client(port: u16, head: Head, requests: usize) {
    let bytes = request(head, port);
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let mut buf = vec![0_u8; 64 * 1024];
    for _ in 0..requests {
        stream.write_all(&bytes).expect("write");
        let mut have = 0;
        loop {
            let n = stream.read(&mut buf[have..]).expect("read");
            assert!(n > 0, "closed after {have} bytes");
            have += n;
            let got = &buf[..have];
            if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
                assert!(head.starts_with("http/1.1 200"), "{head}");
                let length: usize = head
                    .split("\r\n")
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .and_then(|v| v.trim().parse().ok())
                    .expect("content-length");
                if have >= end + 4 + length {
                    break;
                }
            }
        }
    }
}

fn main() {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let router = Router::new().route(
            "/mcp",
            post(|_body: Bytes| async { ([(header::CONTENT_TYPE, "application/json")], ANSWER) }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let (head, requests) = (args.head, args.requests);
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            client(port, head, requests);
            let _ = done_tx.send(());
        });
        let limits = Limits {
            header_read: Duration::from_secs(10),
            idle: Duration::from_secs(30),
            max_connections: 512,
            max_per_address: 64,
            shutdown_grace: Duration::from_secs(1),
        };
        match args.mode {
            Mode::Guard => {
                connections::serve(listener, router, limits, async {
                    let _ = done_rx.await;
                })
                .await;
            }
            Mode::Plain => {
                let (stream, _) = listener.accept().await.expect("accept");
                let _ = stream.set_nodelay(true);
                let mut http = hyper::server::conn::http1::Builder::new();
                http.max_headers(MAX_HEADER_FIELDS)
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(limits.idle + limits.header_read);
                let service = hyper::service::service_fn(move |request: axum::http::Request<_>| {
                    router.clone().oneshot(request.map(axum::body::Body::new))
                });
                let conn = http.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                tokio::select! {
                    _ = conn => {}
                    _ = done_rx => {}
                }
            }
        }
    });
}
