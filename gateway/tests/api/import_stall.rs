//! Readers never wait for an import (docs/inventory.md "Snapshots"): while
//! the CLI imports a large bundle into the store of a running gateway, and
//! after it, searches of every organization (those being imported and the
//! others) are answered from the current view, each rooftop swapped in as
//! soon as its new index is built off the request path.
//!
//! The gateway is the real binary (`cli_ops::serve`), so the measurement
//! sees its multi-threaded runtime, not this test's; the import is the real
//! CLI writing to the same store (SQLite, or PostgreSQL when
//! `DEALER_GATEWAY_TEST_POSTGRES_URL` is set).
//!
//! Size: `DEALER_GATEWAY_STALL_VEHICLES` (default 10,000 over 10 rooftops).
//! A debug build imports about 250 vehicles a second on the 2-core CI
//! machine, so 50,000 would take this test past three minutes per backend;
//! at 10,000 every rooftop's rebuild (1,000 vehicles, seconds in a debug
//! build) still made every reader wait for seconds before readers stopped
//! waiting, which is what this test must catch. The 50,000-vehicle run is
//! the benchmark (docs/benchmarks.md "Searches during a bundle import").

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cli_ops::serve;
use crate::common::{self, TestApp, run_cli, text, tool_error_code};

const SEARCH: &str = "dealeragent.inventory.search";

/// The bundled demo's two organizations and the generated bundle's two.
const ORGANIZATIONS: [&str; 4] = [
    "org.lakeshore-auto-group",
    "org.maplecrest-motor-group",
    "org.bench-001",
    "org.bench-002",
];

/// The bounds of docs/inventory.md "Snapshots" on this machine. When the
/// host is loaded (a debug build on two cores shared with other builds)
/// the p99 bound becomes four times the p99 the same loops measured just
/// before the import: during the import the CLI parses and writes on one
/// core and the gateway builds indexes on the other, so the loops get a
/// fraction of the CPU they had (measured: p99 82 ms before, 272 ms during,
/// in a debug build). What is bounded is the waiting, and the max bound is
/// fixed: a reader that waits on a reload waits for seconds.
const P99_BOUND: Duration = Duration::from_millis(100);
const MAX_BOUND: Duration = Duration::from_secs(1);
/// How long the loops run before the import, for the baseline.
const BASELINE: Duration = Duration::from_secs(5);

fn vehicles() -> usize {
    std::env::var("DEALER_GATEWAY_STALL_VEHICLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// How many vehicles a search of `organization` matches (its condition
/// facet counts the whole filtered set), or `None` when it is not served.
fn total_of(result: &Value) -> Option<u64> {
    if tool_error_code(result).is_some() {
        return None;
    }
    let facets = result["structuredContent"]["facets"]["condition"].as_array()?;
    Some(facets.iter().filter_map(|f| f["count"].as_u64()).sum())
}

/// One search; `Err` names what was wrong with the answer.
async fn search(app: &TestApp, organization: &str) -> Result<Value, String> {
    let reply = app
        .modern(
            "tools/call",
            json!({"name": SEARCH, "arguments": {"organization_id": organization, "page": {"limit": 5}}}),
        )
        .await;
    if reply.status != 200 {
        return Err(format!("HTTP {}: {}", reply.status, reply.raw));
    }
    let result = reply.result().clone();
    match result["structuredContent"]["code"].as_str() {
        None | Some("dealeragent.resource.not_found") => Ok(result),
        Some(other) => Err(format!("{organization}: {other}")),
    }
}

/// The `percent`-th percentile of `sorted` (nearest rank).
pub(crate) fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    let rank = (sorted.len() * percent).div_ceil(100);
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_of_every_organization_never_wait_for_a_bundle_import() {
    let dir = common::temp_dir();
    let db = common::test_database_url(&dir).await;
    let bundle = dir.join("bundle");
    let n = vehicles();
    let generated = {
        let (db, bundle) = (db.clone(), bundle.clone());
        tokio::task::spawn_blocking(move || {
            run_cli(
                &db,
                &[
                    "demo",
                    "generate",
                    "--vehicles",
                    &n.to_string(),
                    "--rooftops",
                    "10",
                    "--out",
                    bundle.to_str().expect("utf-8 path"),
                    "--progress",
                    "none",
                ],
            )
        })
        .await
        .expect("generator runs")
    };
    assert!(generated.status.success(), "{}", text(&generated));

    let served = serve(
        &db,
        &[
            "--listen",
            "127.0.0.1:0",
            "--inventory-refresh-seconds",
            "1",
            "--directory-refresh-seconds",
            "1",
            "--rate-limit-ip-per-minute",
            "1000000",
        ],
        &[("DEALER_GATEWAY_LOG", "warn")],
    )
    .await
    .unwrap_or_else(|_| panic!("serve starts"));
    let app = Arc::new(TestApp::attach(&served.base));
    for organization in ORGANIZATIONS {
        search(&app, organization).await.expect("a first search");
    }

    // One loop per organization, one request at a time, until stopped.
    let stop = Arc::new(AtomicBool::new(false));
    let loops: Vec<_> = ORGANIZATIONS
        .iter()
        .map(|organization| {
            let (app, stop) = (app.clone(), stop.clone());
            tokio::spawn(async move {
                let mut samples = Vec::new();
                let mut errors = Vec::new();
                while !stop.load(Ordering::Acquire) {
                    let started = Instant::now();
                    let answer = search(&app, organization).await;
                    samples.push((started, started.elapsed()));
                    if let Err(e) = answer {
                        errors.push(e);
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                (samples, errors)
            })
        })
        .collect();

    tokio::time::sleep(BASELINE).await;
    let began = Instant::now();
    let imported = {
        let (db, bundle) = (db.clone(), bundle.clone());
        tokio::task::spawn_blocking(move || {
            run_cli(
                &db,
                &[
                    "import",
                    "bundle",
                    bundle.to_str().expect("utf-8 path"),
                    "--progress",
                    "none",
                ],
            )
        })
        .await
        .expect("import runs")
    };
    let import_wall = began.elapsed();
    assert!(imported.status.success(), "{}", text(&imported));

    // After the import: until both bundle organizations are served whole,
    // then a few seconds more.
    let everything = common::poll_until(Duration::from_secs(300), || async {
        let mut total = 0;
        for organization in &ORGANIZATIONS[2..] {
            if let Ok(result) = search(&app, organization).await {
                total += total_of(&result).unwrap_or(0);
            }
        }
        total == u64::try_from(n).unwrap_or(u64::MAX)
    })
    .await;
    let served_wall = began.elapsed();
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Release);

    let mut baseline = Vec::new();
    let mut samples = Vec::new();
    let mut errors = Vec::new();
    for one in loops {
        let (s, e) = one.await.expect("a search loop");
        for (started, took) in s {
            if started < began {
                baseline.push(took);
            } else {
                samples.push(took);
            }
        }
        errors.extend(e);
    }
    baseline.sort_unstable();
    samples.sort_unstable();
    let baseline_p99 = percentile(&baseline, 99);
    let p99_bound = P99_BOUND.max(baseline_p99 * 4);
    let p50 = percentile(&samples, 50);
    let p99 = percentile(&samples, 99);
    let max = *samples.last().expect("searches ran");
    let summary = format!(
        "{n} vehicles: import {import_wall:.1?}, every vehicle served after {served_wall:.1?}; \
         {} searches: p50 {p50:.1?}, p99 {p99:.1?}, max {max:.1?}; \
         {} searches before the import: p99 {baseline_p99:.1?}",
        samples.len(),
        baseline.len(),
    );
    eprintln!("import_stall: {summary}");
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);

    assert!(everything, "the whole bundle is served ({summary})");
    assert!(errors.is_empty(), "{errors:?} ({summary})");
    assert!(p99 <= p99_bound, "p99 over {p99_bound:?}: {summary}");
    assert!(
        max <= MAX_BOUND,
        "a search waited over {MAX_BOUND:?}: {summary}"
    );
}
