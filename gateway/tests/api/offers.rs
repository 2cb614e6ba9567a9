//! `dealergateway.offers.evaluate` over real HTTP (docs/pricing.md) on the
//! bundled demo (its programs are seeded from demo/programs/): payment-mode
//! branches with a proven best stack, tri-state military eligibility,
//! PII-ish fields rejected without echo, tenancy, and the manifest's
//! extension profile.

use crate::common;

use crate::common::{TestApp, spawn, tool_error_code};
use serde_json::{Value, json};

const TOOL: &str = "dealergateway.offers.evaluate";
const ORG: &str = "org.lakeshore-auto-group";
const CHICAGO: &str = "roof.lakeshore-chicago";
const PRIVATE: &str = "roof.lakeshore-fleet-wholesale";
const OTHER_ORG: &str = "org.maplecrest-motor-group";

/// A new vehicle of the Chicago rooftop (the demo programs target new cars).
async fn new_vehicle(app: &TestApp) -> String {
    let result = app
        .call_tool(
            "dealeragent.inventory.search",
            json!({"organization_id": ORG, "rooftop_ids": [CHICAGO],
                   "filters": {"condition": ["new"]}}),
        )
        .await;
    assert_eq!(tool_error_code(&result), None, "{result}");
    result["structuredContent"]["vehicles"][0]["vehicle_id"]
        .as_str()
        .expect("a new demo vehicle at Chicago")
        .to_owned()
}

fn args(vehicle_id: &str, profile: Value) -> Value {
    json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": vehicle_id,
           "profile": profile})
}

fn report<'a>(evaluation: &'a Value, program_id: &str) -> &'a Value {
    evaluation["programs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["program_id"] == program_id)
        .unwrap_or_else(|| panic!("{program_id} missing: {evaluation}"))
}

#[tokio::test]
async fn unknown_payment_mode_evaluates_three_branches_with_a_proven_best_stack() {
    let app = spawn().await;
    let vehicle_id = new_vehicle(&app).await;
    let result = app
        .call_tool(
            TOOL,
            args(
                &vehicle_id,
                json!({"payment_mode": "unknown", "jurisdiction": {"country": "US", "subdivision": "US-IL", "postal_code": "62701"}}),
            ),
        )
        .await;
    assert_eq!(tool_error_code(&result), None, "{result}");
    let ev = &result["structuredContent"];
    assert_eq!(ev["organization_id"], ORG);
    assert_eq!(ev["rooftop_id"], CHICAGO);
    assert_eq!(ev["vehicle_id"], vehicle_id.as_str());
    let modes: Vec<&str> = ev["branches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["payment_mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["cash", "finance", "lease"]);
    for branch in ev["branches"].as_array().unwrap() {
        assert_eq!(branch["best_stack"]["optimality"]["status"], "proven");
    }
    assert_eq!(ev["best_stack"]["optimality"]["status"], "proven");
    assert!(
        ev["best_stack"]["total_discount"]["amount_minor"]
            .as_i64()
            .unwrap()
            > 0,
        "{ev}"
    );
    // Expired and jurisdiction-limited programs.
    assert_eq!(
        report(ev, "lk-summer-clearance")["applicability"]["status"],
        "not_applicable"
    );
    assert_eq!(
        report(ev, "lk-il-green")["applicability"]["status"],
        "applicable"
    );
    // Provenance names the revision and the rule hash of the rule program.
    let provenance = ev["provenance"]["programs"].as_array().unwrap();
    let dealer = provenance
        .iter()
        .find(|p| p["program_id"] == "lk-dealer-winter")
        .unwrap();
    assert!(dealer["rule_hash"].as_str().unwrap().starts_with("sha256:"));
    let cash = provenance
        .iter()
        .find(|p| p["program_id"] == "lk-customer-cash")
        .unwrap();
    assert_eq!(cash["revision"], 3);
    assert!(ev["freshness"]["valid_until"].is_string());
    assert!(ev["trace_id"].is_string());
}

#[tokio::test]
async fn a_military_claim_changes_eligibility_and_potential_extra() {
    let app = spawn().await;
    let vehicle_id = new_vehicle(&app).await;
    let evaluate = |claim: Value| {
        let app = &app;
        let vehicle_id = vehicle_id.clone();
        async move {
            let result = app
                .call_tool(
                    TOOL,
                    args(
                        &vehicle_id,
                        json!({"payment_mode": "cash", "jurisdiction": {"country": "US"},
                               "claims": {"military": claim},
                               "as_of": "2026-12-01T12:00:00Z"}),
                    ),
                )
                .await;
            assert_eq!(tool_error_code(&result), None, "{result}");
            result["structuredContent"].clone()
        }
    };
    let unknown = evaluate(json!("unknown")).await;
    let yes = evaluate(json!(true)).await;
    assert_eq!(
        report(&unknown, "lk-military")["eligibility"]["status"],
        "unknown"
    );
    assert!(
        unknown["potential_extra"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["program"]["program_id"] == "lk-military"),
        "{unknown}"
    );
    assert_eq!(
        report(&yes, "lk-military")["eligibility"]["status"],
        "eligible_subject_to_evidence"
    );
    assert!(
        !yes["potential_extra"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["program"]["program_id"] == "lk-military")
    );
    let total = |v: &Value| {
        v["best_stack"]["total_discount"]["amount_minor"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(total(&yes), total(&unknown) + 50_000);
}

#[tokio::test]
async fn pii_fields_are_rejected_without_echo() {
    let app = spawn().await;
    let vehicle_id = new_vehicle(&app).await;
    for (profile, secret) in [
        (
            json!({"payment_mode": "cash", "jurisdiction": {"country": "US"}, "name": "Jane Q. Buyer"}),
            "Jane Q. Buyer",
        ),
        (
            json!({"payment_mode": "cash", "jurisdiction": {"country": "US", "postal_code": "jane@example.com"}}),
            "jane@example.com",
        ),
        (
            json!({"payment_mode": "cash", "jurisdiction": {"country": "US"}, "claims": {"email": "jane@example.com"}}),
            "jane@example.com",
        ),
    ] {
        let result = app.call_tool(TOOL, args(&vehicle_id, profile)).await;
        assert_eq!(result["isError"], true, "{result}");
        assert_eq!(
            tool_error_code(&result).as_deref(),
            Some("dealeragent.validation.invalid")
        );
        assert!(!result.to_string().contains(secret), "{result}");
    }
    // An extra top-level field too.
    let mut extra = args(
        &vehicle_id,
        json!({"payment_mode": "cash", "jurisdiction": {"country": "US"}}),
    );
    extra["phone"] = json!("+1 312 555 0100");
    let result = app.call_tool(TOOL, extra).await;
    assert_eq!(result["isError"], true);
    assert!(!result.to_string().contains("555 0100"));
}

#[tokio::test]
async fn foreign_or_private_rooftops_are_not_found() {
    let app = spawn().await;
    let vehicle_id = new_vehicle(&app).await;
    let profile = json!({"payment_mode": "cash", "jurisdiction": {"country": "US"}});
    for (org, rooftop) in [
        (ORG, PRIVATE),
        (OTHER_ORG, CHICAGO),
        ("org.absent", CHICAGO),
    ] {
        let result = app
            .call_tool(
                TOOL,
                json!({"organization_id": org, "rooftop_id": rooftop,
                       "vehicle_id": vehicle_id, "profile": profile}),
            )
            .await;
        assert_eq!(
            tool_error_code(&result).as_deref(),
            Some("dealeragent.resource.not_found"),
            "{org}/{rooftop}: {result}"
        );
    }
}

#[tokio::test]
async fn manifest_lists_the_extension_profile_outside_dap_capabilities() {
    let app = spawn().await;
    let result = app
        .call_tool("dealeragent.discovery.get_manifest", json!({}))
        .await;
    assert_eq!(tool_error_code(&result), None, "{result}");
    let manifest = &result["structuredContent"];
    for capability in manifest["capabilities"].as_array().unwrap() {
        assert!(
            capability["profile"]
                .as_str()
                .unwrap()
                .starts_with("dealeragent."),
            "{capability}"
        );
    }
    let extension = &manifest["extensions"]["dealergateway.extensions"]["profiles"];
    assert!(
        extension
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["profile"] == "dealergateway.offers/0.1"
                && p["tools"] == json!([TOOL])
                && p["scopes"] == json!(["dealeragent:pricing:read"])),
        "{extension}"
    );
}

/// Amounts that cannot be summed with a vehicle's price are refused at
/// import, whole, naming the bound (docs/pricing.md "Amounts"); the same
/// programs with amounts within it import.
#[test]
fn amounts_that_cannot_be_summed_are_refused_at_import() {
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let file = |minor: i64| {
        format!(
            "programs:
  - program_id: fee-a
    revision: 1
    name: Fee A
    kind: surcharge
    direction: surcharge
    amount: {{status: known, amount: {{amount_minor: {minor}, currency: USD}}}}
    stacking: {{group: addons, combinability: stackable}}
  - program_id: fee-b
    revision: 1
    name: Fee B
    kind: surcharge
    direction: surcharge
    amount: {{status: known, amount: {{amount_minor: {minor}, currency: USD}}}}
    stacking: {{group: addons, combinability: stackable}}
  - program_id: small-cash
    revision: 1
    name: Small cash
    kind: cash
    direction: discount
    amount: {{status: known, amount: {{amount_minor: 100, currency: EUR}}}}
    stacking: {{group: oem, combinability: stackable}}
"
        )
    };
    let parse = |minor: i64| {
        gateway::offers::import::parse(
            &catalog,
            "programs.yaml",
            file(minor).as_bytes(),
            "programs-file:test",
            chrono::Utc::now(),
        )
    };
    let Err(err) = parse(9_000_000_000_000_000_000) else {
        panic!("two 9e18 surcharges imported");
    };
    // Each program from the one whose amount crosses the bound is named;
    // the text states the bound.
    let pointers: Vec<&str> = err.problems.iter().map(|p| p.pointer.as_str()).collect();
    assert_eq!(
        pointers,
        [
            "/programs/0/amount/amount/amount_minor",
            "/programs/1/amount/amount/amount_minor"
        ],
        "{err}"
    );
    let bound = gateway::offers::import::MAX_PROGRAM_SUM_MINOR;
    assert_eq!(bound, i64::MAX / 2);
    assert!(err.problems[0].explanation.contains("fee-a"), "{err}");
    assert!(
        err.problems[0].explanation.contains(&bound.to_string()),
        "{err}"
    );
    assert!(err.to_string().contains("nothing was imported"), "{err}");
    // Each within the bound but not their sum: the second is refused.
    let Err(err) = parse(bound / 2 + 1) else {
        panic!("a sum above the bound imported");
    };
    assert_eq!(err.problems.len(), 1, "{err}");
    assert_eq!(
        err.problems[0].pointer,
        "/programs/1/amount/amount/amount_minor"
    );
    // At the bound exactly: accepted.
    let parsed = parse(bound / 2).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(parsed.records.len(), 3);
}

// ---------------------------------------------------------------------------
// Revisions, unusable programs, withdrawal and replacement reaching a
// running gateway (docs/pricing.md "Revisions, whole-set validation,
// replacement and withdrawal").
// ---------------------------------------------------------------------------

/// Run the real binary against the running gateway's store.
fn cli(app: &TestApp, args: &[&str]) -> std::process::Output {
    crate::common::run_cli(&app.database_url, args)
}

fn cli_text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Import `yaml` as a programs file of ORG through the CLI.
fn cli_import(app: &TestApp, yaml: &str, extra: &[&str]) {
    let path = app
        .db_dir
        .join(format!("programs-{}.yaml", uuid::Uuid::new_v4()));
    std::fs::write(&path, yaml).unwrap();
    let file = path.display().to_string();
    let mut args = vec!["import", "programs", file.as_str(), "--organization", ORG];
    args.extend_from_slice(extra);
    let out = cli(app, &args);
    assert!(out.status.success(), "{}", cli_text(&out));
}

async fn evaluate_at(app: &TestApp, vehicle_id: &str, as_of: &str) -> Value {
    let result = app
        .call_tool(
            TOOL,
            args(
                vehicle_id,
                json!({"payment_mode": "cash", "jurisdiction": {"country": "US"}, "as_of": as_of}),
            ),
        )
        .await;
    assert_eq!(tool_error_code(&result), None, "{result}");
    result["structuredContent"].clone()
}

fn choice<'a>(evaluation: &'a Value, program_id: &str) -> Option<&'a Value> {
    evaluation["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["program_id"] == program_id)
}

/// The offers cache refreshes every 10 s (`offers::DEFAULT_REFRESH`).
const REFRESH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(15);

const TWO_REVISIONS: &str = r#"
programs:
  - program_id: rv-cash
    revision: 1
    name: November cash
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 30000, currency: USD}}
    valid_from: "2026-11-01T00:00:00Z"
    valid_until: "2026-12-01T00:00:00Z"
    stacking: {group: rv, combinability: stackable}
  - program_id: rv-cash
    revision: 2
    name: December cash
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 40000, currency: USD}}
    valid_from: "2026-11-25T00:00:00Z"
    valid_until: "2027-01-01T00:00:00Z"
    stacking: {group: rv, combinability: stackable}
"#;

// X@1 for November and X@2 from November 25 both stay
// offered in their own windows; where the windows overlap the higher one
// wins; every evaluation names the revision used and why the other was not.
#[tokio::test]
async fn revisions_coexist_and_every_evaluation_names_the_revision_it_used() {
    let app = spawn().await;
    let vehicle_id = new_vehicle(&app).await;
    cli_import(&app, TWO_REVISIONS, &[]);
    let arrived = common::poll_until(REFRESH_DEADLINE, || async {
        choice(
            &evaluate_at(&app, &vehicle_id, "2026-11-21T12:00:00Z").await,
            "rv-cash",
        )
        .is_some()
    })
    .await;
    assert!(arrived, "the import never reached the running gateway");

    let nov = evaluate_at(&app, &vehicle_id, "2026-11-21T12:00:00Z").await;
    let c = choice(&nov, "rv-cash").unwrap();
    assert_eq!(c["revision"], 1, "{c}");
    assert_eq!(c["not_used"][0]["revision"], 2, "{c}");
    assert!(
        c["not_used"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("not valid at as_of"),
        "{c}"
    );
    let reports: Vec<&Value> = nov["programs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["program_id"] == "rv-cash")
        .collect();
    assert_eq!(reports.len(), 1, "{nov}");
    assert_eq!(reports[0]["revision"], 1);
    assert_eq!(reports[0]["applicability"]["status"], "applicable", "{nov}");
    // Valid at most until revision 2 takes over.
    let until = nov["valid_until"].as_str().unwrap();
    assert!(until <= "2026-11-25T00:00:00Z", "{until}");

    let overlap = evaluate_at(&app, &vehicle_id, "2026-11-28T12:00:00Z").await;
    let c = choice(&overlap, "rv-cash").unwrap();
    assert_eq!(c["revision"], 2, "{c}");
    assert!(
        c["not_used"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("superseded by revision 2"),
        "{c}"
    );
    let used: Vec<&Value> = overlap["best_stack"]["program_ids"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["program_id"] == "rv-cash")
        .collect();
    assert!(used.len() <= 1, "{overlap}");
    assert_eq!(overlap["unusable_programs"], json!([]));
}

// A stored program that cannot be evaluated (stored before
// whole-set validation existed: it names a program that is not stored) is
// reported in the evaluation and in the disclosure's uncertainty.
#[tokio::test]
async fn a_stored_program_that_cannot_be_evaluated_is_reported_to_callers() {
    let app = spawn().await;
    let vehicle_id = new_vehicle(&app).await;
    // The full offers extension: its `revisions` are read below (the
    // default, concise extension keeps `unusable_programs` but not them;
    // docs/pricing.md section 5).
    let disclose = || {
        app.call_tool(
            "dealeragent.pricing.get_disclosure",
            json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": vehicle_id,
                   "jurisdiction": {"country": "US", "subdivision": "US-IL"}, "detail": "full"}),
        )
    };
    // Before: the Illinois estimate makes the disclosure `estimated`.
    let before = disclose().await;
    assert_eq!(tool_error_code(&before), None, "{before}");
    assert_eq!(
        before["structuredContent"]["uncertainty"]["status"], "estimated",
        "{before}"
    );
    let store = gateway::store::open(&app.database_url).await.unwrap();
    let now = chrono::Utc::now();
    let doc = json!({
        "program_id": "rv-orphan", "revision": 1, "name": "Orphan", "kind": "cash",
        "direction": "discount",
        "amount": {"status": "known", "amount": {"amount_minor": 100, "currency": "USD"}},
        "stacking": {"group": "rv", "combinability": "stackable", "not_combinable_with": ["rv-ghost"]}
    });
    store
        .import_programs(
            ORG,
            &[gateway::store::ProgramRecord {
                program_id: "rv-orphan".into(),
                revision: 1,
                doc,
                rule_hash: None,
                imported_at: chrono::SubsecRound::trunc_subsecs(now, 6),
                source: common::test_source("programs", chrono::SubsecRound::trunc_subsecs(now, 6)),
            }],
        )
        .await
        .unwrap();
    let reported = common::poll_until(REFRESH_DEADLINE, || async {
        let ev = evaluate_at(&app, &vehicle_id, "2026-11-21T12:00:00Z").await;
        ev["unusable_programs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["program_id"] == "rv-orphan")
    })
    .await;
    assert!(reported, "the unusable program was never reported");
    let ev = evaluate_at(&app, &vehicle_id, "2026-11-21T12:00:00Z").await;
    let u = &ev["unusable_programs"][0];
    assert_eq!(u["revision"], 1);
    assert!(
        u["problems"][0].as_str().unwrap().contains("rv-ghost"),
        "{u}"
    );
    // The other programs are still evaluated.
    assert!(choice(&ev, "lk-customer-cash").is_some(), "{ev}");

    let disclosure = disclose().await;
    assert_eq!(tool_error_code(&disclosure), None, "{disclosure}");
    let offers = &disclosure["structuredContent"]["extensions"]["dealergateway.offers"];
    assert_eq!(
        offers["unusable_programs"][0]["program_id"], "rv-orphan",
        "{offers}"
    );
    assert!(
        offers["revisions"]
            .as_array()
            .is_some_and(|r| !r.is_empty()),
        "{offers}"
    );
    let uncertainty = &disclosure["structuredContent"]["uncertainty"];
    assert_eq!(uncertainty["status"], "unknown", "{uncertainty}");
    assert!(
        uncertainty["reason"]
            .as_str()
            .unwrap()
            .contains("rv-orphan revision 1 cannot be evaluated"),
        "{uncertainty}"
    );
}

// A withdrawal and a replacement made with the CLI while
// the gateway runs reach it within the refresh interval.
#[tokio::test]
async fn withdrawal_and_replacement_reach_a_running_gateway_within_the_refresh_interval() {
    let app = spawn().await;
    let vehicle_id = new_vehicle(&app).await;
    let as_of = "2026-11-28T12:00:00Z";
    cli_import(&app, TWO_REVISIONS, &[]);
    assert!(
        common::poll_until(REFRESH_DEADLINE, || async {
            choice(&evaluate_at(&app, &vehicle_id, as_of).await, "rv-cash")
                .is_some_and(|c| c["revision"] == 2)
        })
        .await
    );

    // Withdraw revision 2: revision 1 (still in its window) takes over.
    let out = cli(
        &app,
        &[
            "programs",
            "withdraw",
            "--organization",
            ORG,
            "rv-cash",
            "--revision",
            "2",
        ],
    );
    assert!(out.status.success(), "{}", cli_text(&out));
    assert!(
        common::poll_until(REFRESH_DEADLINE, || async {
            choice(&evaluate_at(&app, &vehicle_id, as_of).await, "rv-cash")
                .is_some_and(|c| c["revision"] == 1 && c["not_used"] == json!([]))
        })
        .await,
        "the withdrawal never reached the running gateway"
    );

    // Replace the whole set with one program: every demo program goes.
    cli_import(
        &app,
        r#"
programs:
  - program_id: rv-only
    revision: 1
    name: The only program
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 12300, currency: USD}}
    stacking: {group: rv, combinability: stackable}
"#,
        &["--replace"],
    );
    assert!(
        common::poll_until(REFRESH_DEADLINE, || async {
            let ev = evaluate_at(&app, &vehicle_id, as_of).await;
            let ids: Vec<&str> = ev["programs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["program_id"].as_str().unwrap())
                .collect();
            ids == ["rv-only"]
        })
        .await,
        "the replacement never reached the running gateway"
    );
}

// `--programs-refresh-seconds` decides how soon a running
// gateway sees a programs change. At 1 s a withdrawal reaches it well
// within 5 s, which the 10 s default (`offers::DEFAULT_REFRESH`) would not:
// the gateway below last read the store just before the withdrawal. A
// second gateway on the same store, at one hour, keeps serving the set it
// read: the interval is the flag's, and a cached set is really reused.
#[tokio::test]
async fn the_programs_refresh_interval_is_configurable() {
    const FAST_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);
    let fast = common::spawn_with(|s| s.programs_refresh_seconds = 1).await;
    let vehicle_id = new_vehicle(&fast).await;
    let as_of = "2026-11-28T12:00:00Z";
    cli_import(&fast, TWO_REVISIONS, &[]);
    let slow = common::spawn_on(fast.db_dir.clone(), fast.database_url.clone(), |s| {
        s.programs_refresh_seconds = 3600;
    })
    .await;
    // The slow gateway reads the programs once, now (revision 2 is live).
    let first = evaluate_at(&slow, &vehicle_id, as_of).await;
    assert_eq!(choice(&first, "rv-cash").unwrap()["revision"], 2, "{first}");
    assert!(
        common::poll_until(REFRESH_DEADLINE, || async {
            choice(&evaluate_at(&fast, &vehicle_id, as_of).await, "rv-cash")
                .is_some_and(|c| c["revision"] == 2)
        })
        .await
    );

    let out = cli(
        &fast,
        &[
            "programs",
            "withdraw",
            "--organization",
            ORG,
            "rv-cash",
            "--revision",
            "2",
        ],
    );
    assert!(out.status.success(), "{}", cli_text(&out));
    let withdrawn_at = std::time::Instant::now();
    assert!(
        common::poll_until(FAST_DEADLINE, || async {
            choice(&evaluate_at(&fast, &vehicle_id, as_of).await, "rv-cash")
                .is_some_and(|c| c["revision"] == 1)
        })
        .await,
        "with --programs-refresh-seconds 1 the withdrawal did not reach the gateway within {FAST_DEADLINE:?}"
    );
    let seen_after = withdrawn_at.elapsed();
    assert!(seen_after < FAST_DEADLINE, "{seen_after:?}");
    if fast.database_url.starts_with("postgres") {
        // PostgreSQL: the withdrawal's change notification reaches the
        // slow gateway too, long before its hour (docs/operations.md
        // "Replicas": changes reach every replica within a second; polling
        // is the fallback).
        assert!(
            common::poll_until(FAST_DEADLINE, || async {
                choice(&evaluate_at(&slow, &vehicle_id, as_of).await, "rv-cash")
                    .is_some_and(|c| c["revision"] == 1)
            })
            .await,
            "the withdrawal's notification did not reach the gateway polling hourly"
        );
    } else {
        // SQLite has no notifications: still within its hour, the slow
        // gateway evaluates its cached set.
        let cached = evaluate_at(&slow, &vehicle_id, as_of).await;
        assert_eq!(
            choice(&cached, "rv-cash").unwrap()["revision"],
            2,
            "{cached}"
        );
    }
}
