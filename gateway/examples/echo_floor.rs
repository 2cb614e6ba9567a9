//! The echo floor of docs/benchmarks.md "Instruction counts": the cheapest
//! JSON-RPC server the gateway's own stack (axum, hyper, tokio, serde_json)
//! can be, so the instruction counts of `scripts/bench-instructions` have
//! something to be divided by.
//!
//! Listens on `127.0.0.1:PORT` (`--port 0`, the default, picks a free port),
//! prints `listening on http://127.0.0.1:PORT/mcp` on stdout, and answers
//! every `POST /mcp` whose body is a JSON object by parsing it into a
//! `serde_json::Value` and replying
//!
//! ```json
//! {"jsonrpc": "2.0", "id": <the request's id>, "result": {"echo": <the request's params>}}
//! ```
//!
//! as `application/json`; a body that is not JSON gets the JSON-RPC parse
//! error (-32700) with HTTP 400. No session, no headers checked, no schema:
//! what is left is HTTP, routing, one JSON parse and one JSON write — the
//! part of a request no tool can avoid.
//!
//! ```sh
//! cargo run --release -p gateway --example echo_floor -- --port 0
//! ```

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::routing::post;
use clap::Parser;
use serde_json::{Value, json};

#[derive(Debug, Parser)]
#[command(about = "Trivial axum JSON-RPC echo: the floor of scripts/bench-instructions")]
struct Args {
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
}

/// Parse, echo, serialize: the work every JSON-RPC request costs at least.
async fn echo(body: Bytes) -> (StatusCode, Json<Value>) {
    match serde_json::from_slice::<Value>(&body) {
        Ok(request) => {
            let id = request.get("id").cloned().unwrap_or(Value::Null);
            let params = request.get("params").cloned().unwrap_or(Value::Null);
            (
                StatusCode::OK,
                Json(json!({"jsonrpc": "2.0", "id": id, "result": {"echo": params}})),
            )
        }
        Err(e) => (
            StatusCode::BAD_REQUEST,
            Json(json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {"code": -32700, "message": format!("parse error: {e}")}
            })),
        ),
    }
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

// The same runtime the gateway's main uses (`#[tokio::main]`, multi-thread),
// so the floor pays the same scheduler costs.
#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let app = Router::new().route("/mcp", post(echo));
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("echo_floor: cannot listen on 127.0.0.1:{}: {e}", args.port);
            return std::process::ExitCode::FAILURE;
        }
    };
    match listener.local_addr() {
        Ok(addr) => println!("listening on http://{addr}/mcp"),
        Err(e) => {
            eprintln!("echo_floor: no local address: {e}");
            return std::process::ExitCode::FAILURE;
        }
    }
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown())
        .await
    {
        eprintln!("echo_floor: {e}");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
