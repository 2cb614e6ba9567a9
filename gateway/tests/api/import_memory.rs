//! Memory is returned after imports (docs/inventory.md "Snapshots"): an
//! index a newer snapshot replaced is kept only while a cursor can use it,
//! so ten full imports in a row leave the gateway's resident memory where
//! the second one left it (within 20 %: the second adds the generation the
//! first one's cursor pins).
//!
//! The gateway is the real binary (`cli_ops::serve`), whose resident set is
//! read from `/proc/<pid>/statm`; the imports are the real CLI on the same
//! store (SQLite, or PostgreSQL when `DEALER_GATEWAY_TEST_POSTGRES_URL` is
//! set). 3,000 vehicles over 3 rooftops keep the ten debug-build imports
//! near a minute while each replaced generation (several MB of indexes) is
//! large against what 20 % of the gateway's resident set allows only when
//! generations pile up.

use std::time::Duration;

use serde_json::{Value, json};

use crate::cli_ops::serve;
use crate::common::{self, TestApp, run_cli, text, tool_error_code};

const SEARCH: &str = "dealeragent.inventory.search";
const VEHICLES: usize = 3_000;
const IMPORTS: usize = 10;

/// Resident pages of process `pid` (the second field of statm).
fn resident_pages(pid: u32) -> u64 {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).expect("statm readable");
    statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("statm has a resident field")
}

/// The newest `observed_at` of every source the search of `organization`
/// read (each rooftop's snapshot carries its import time), oldest first.
async fn observed(app: &TestApp, organization: &str) -> Vec<String> {
    let result = app
        .call_tool(
            SEARCH,
            json!({"organization_id": organization, "page": {"limit": 5}}),
        )
        .await;
    if tool_error_code(&result).is_some() {
        return Vec::new();
    }
    let mut times: Vec<String> = result["structuredContent"]["provenance"]["sources"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|s| s["observed_at"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    times.sort();
    times
}

/// Every rooftop of the bundle serves a snapshot imported after `since`
/// (RFC 3339 UTC text compares in time order).
async fn all_served_after(app: &TestApp, since: &str) -> bool {
    let mut rooftops = 0;
    for organization in ["org.bench-001", "org.bench-002"] {
        let times = observed(app, organization).await;
        if times.iter().any(|t| t.as_str() <= since) {
            return false;
        }
        rooftops += times.len();
    }
    rooftops == 3
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_imports_in_a_row_keep_resident_memory_flat() {
    let dir = common::temp_dir();
    let db = common::test_database_url(&dir).await;
    let bundle = dir.join("bundle");
    let bundle_arg = bundle.to_str().expect("utf-8 path").to_owned();
    let generated = run_cli(
        &db,
        &[
            "demo",
            "generate",
            "--vehicles",
            &VEHICLES.to_string(),
            "--rooftops",
            "3",
            "--out",
            &bundle_arg,
            "--progress",
            "none",
        ],
    );
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
        ],
        &[("DEALER_GATEWAY_LOG", "warn")],
    )
    .await
    .unwrap_or_else(|_| panic!("serve starts"));
    let pid = served.child.id().expect("the gateway runs");
    let app = TestApp::attach(&served.base);

    let mut resident: Vec<u64> = Vec::new();
    for round in 0..IMPORTS {
        let since = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let imported = {
            let (db, bundle) = (db.clone(), bundle_arg.clone());
            tokio::task::spawn_blocking(move || {
                run_cli(&db, &["import", "bundle", &bundle, "--progress", "none"])
            })
            .await
            .expect("import runs")
        };
        assert!(imported.status.success(), "{}", text(&imported));
        let landed =
            common::poll_until(Duration::from_secs(120), || all_served_after(&app, &since)).await;
        assert!(landed, "import {round} is served within 120 s");
        // A page with a cursor on every round: a pagination that begins now
        // pins the current indexes, as real traffic does.
        let page: Value = app
            .call_tool(
                SEARCH,
                json!({"organization_id": "org.bench-001", "page": {"limit": 5}}),
            )
            .await;
        assert!(page["structuredContent"]["page"]["next_cursor"].is_string());
        resident.push(resident_pages(pid));
    }
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);

    // The first import adds one generation; the second another, which the
    // cursor issued on the first keeps pinned (docs/inventory.md
    // "Cursors"): from there on every import must give back what the one
    // before it took.
    let steady = resident[1];
    let peak = *resident[1..].iter().max().expect("ten readings");
    let pages_mib = |pages: u64| pages * 4096 / (1024 * 1024);
    let readings: Vec<u64> = resident.iter().map(|p| pages_mib(*p)).collect();
    eprintln!("import_memory: resident MiB after each of {IMPORTS} imports: {readings:?}");
    assert!(
        peak * 100 <= steady * 120,
        "resident memory grew more than 20 % after the second of {IMPORTS} imports (MiB): {readings:?}"
    );
}
