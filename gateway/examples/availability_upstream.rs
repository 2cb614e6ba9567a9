//! A fake dealer system for the availability benchmark in
//! `docs/benchmarks.md` (`scripts/bench-availability`).
//!
//! Listens on `127.0.0.1:PORT` (`--port 0`, the default, picks a free
//! port), prints `listening on http://127.0.0.1:PORT` on stdout, and answers
//! `GET /avail/{vin}` after `--delay-ms` milliseconds with the dealer-system
//! answer of `schemas/availability-source.schema.json`:
//!
//! ```json
//! {"vin": "<vin>", "status": "available", "observed_at": "<now, RFC 3339 Z>"}
//! ```
//!
//! The VIN is echoed, so the gateway's check that it matches the vehicle's
//! passes. `observed_at` is taken when the answer is sent. Every request is
//! counted; the count is printed on stderr when the process stops
//! (SIGINT/SIGTERM).
//!
//! ```sh
//! cargo run --release -p gateway --example availability_upstream -- --delay-ms 50
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::routing::get;
use clap::Parser;
use serde_json::{Value, json};

#[derive(Debug, Parser)]
#[command(about = "Fake dealer system answering availability checks after a fixed delay")]
struct Args {
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Delay before each answer, milliseconds.
    #[arg(long, default_value_t = 50)]
    delay_ms: u64,
}

struct Upstream {
    delay: Duration,
    requests: AtomicU64,
}

async fn avail(State(up): State<Arc<Upstream>>, Path(vin): Path<String>) -> Json<Value> {
    up.requests.fetch_add(1, Ordering::Relaxed);
    tokio::time::sleep(up.delay).await;
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    Json(json!({"vin": vin, "status": "available", "observed_at": now}))
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

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let up = Arc::new(Upstream {
        delay: Duration::from_millis(args.delay_ms),
        requests: AtomicU64::new(0),
    });
    let app = Router::new()
        .route("/avail/{vin}", get(avail))
        .with_state(up.clone());
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("availability_upstream: bind 127.0.0.1:{}: {e}", args.port);
            return std::process::ExitCode::from(2);
        }
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(args.port);
    println!(
        "listening on http://127.0.0.1:{port} (delay {} ms)",
        args.delay_ms
    );
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown())
        .await
    {
        eprintln!("availability_upstream: {e}");
        return std::process::ExitCode::from(1);
    }
    eprintln!(
        "availability_upstream: answered {} requests",
        up.requests.load(Ordering::Relaxed)
    );
    std::process::ExitCode::SUCCESS
}
