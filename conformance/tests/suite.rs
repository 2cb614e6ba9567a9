//! The suite against the real gateway: every required check passes (none
//! fails, none is skipped). Runs on SQLite, and on PostgreSQL when
//! `DEALER_GATEWAY_TEST_POSTGRES_URL` is set.

mod common;

use conformance::run::run_suite;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_required_check_passes_against_the_real_gateway() {
    let fx = common::setup().await;
    let out = run_suite(&fx.options(&fx.app.url, None))
        .await
        .expect("the suite runs");
    // Keep the report for inspection when asked (scripts and debugging).
    if let Ok(path) = std::env::var("DAP_CONFORMANCE_TEST_REPORT") {
        std::fs::write(path, &out.report_bytes).expect("report written");
    }
    let bad = common::not_passed(&out.report);
    assert!(
        bad.is_empty(),
        "required checks not passed:\n{}",
        bad.join("\n")
    );
    // The optional CORS check ran with the configured origin and passed.
    let (result, reason) = common::result_of(&out.report, "DAPC-MCP-012");
    assert_eq!(result, "passed", "DAPC-MCP-012: {reason}");
    assert!(out.claimable);
    assert_eq!(out.report["result"], "pass");
    // Every group ran and every role was used.
    let checks = out.report["checks"].as_array().expect("checks");
    for group in [
        "mcp",
        "manifest",
        "schema",
        "isolation",
        "cursor",
        "freshness",
        "pricing",
        "availability",
        "redaction",
    ] {
        assert!(
            checks.iter().any(|c| c["group"] == group),
            "no {group} checks"
        );
    }
    // The report names roles, never tokens (nor anywhere in evidence).
    let bytes = String::from_utf8(out.report_bytes.clone()).expect("utf-8");
    for (role, token) in &fx.tokens {
        assert!(
            !bytes.contains(token.as_str()),
            "token of {role} in the report"
        );
    }
    assert_eq!(
        out.report["roles"],
        serde_json::json!(["inventory", "other-org", "partner", "pricing-only"])
    );
    // The report bytes are the report, pretty-printed, with a newline.
    let parsed: serde_json::Value = serde_json::from_slice(&out.report_bytes).expect("JSON");
    assert_eq!(parsed, out.report);
    assert!(out.report_bytes.ends_with(b"\n"));
    // The partner-only rooftop never surfaces in what a claim would pin.
    let rooftops = out.report["observed"]["rooftop_ids"].to_string();
    assert!(!rooftops.contains(common::FLEET), "{rooftops}");
}

/// Without a role, its checks are skipped (never passed), and the run is
/// then not claimable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_roles_skip_their_checks() {
    let fx = common::setup().await;
    let mut opts = fx.options(&fx.app.url, Some("DAPC-ISO"));
    opts.tokens.retain(|(role, _)| role != "partner");
    let out = run_suite(&opts).await.expect("the suite runs");
    let (result, reason) = common::result_of(&out.report, "DAPC-ISO-001");
    assert_eq!((result, reason), ("skipped", "needs role partner"));
    assert!(!out.claimable);
    assert_eq!(out.report["result"], "fail");
}

/// `--dap-schemas DIR` validates against the files in DIR (here this
/// repository's own schema files, read from disk instead of embedded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_directory_replaces_the_embedded_schemas() {
    let fx = common::setup().await;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas");
    let mut opts = fx.options(&fx.app.url, Some("DAPC-SCH"));
    opts.dap_schemas = Some(dir.clone());
    let out = run_suite(&opts).await.expect("the suite runs");
    assert_eq!(
        out.report["schema_source"],
        format!("directory: {}", dir.display())
    );
    let bad = common::not_passed(&out.report);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // A directory without the DAP files is a usage problem, not a pass.
    let empty = common::temp_dir();
    opts.dap_schemas = Some(empty);
    assert!(run_suite(&opts).await.is_err());
}
