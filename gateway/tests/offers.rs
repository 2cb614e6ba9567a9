//! `dealergateway.offers.evaluate` over real HTTP (issue 7 item 5) on the
//! bundled demo (its programs are seeded from demo/programs/): payment-mode
//! branches with a proven best stack, tri-state military eligibility,
//! PII-ish fields rejected without echo, tenancy, and the manifest's
//! extension profile.

mod common;

use common::{TestApp, spawn, tool_error_code};
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

/// Issue 12 item 6: amounts that cannot be summed with a vehicle's price
/// are refused at import, whole, naming the bound; the same programs with
/// amounts within it import.
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
    assert!(err.problems[0].rule.contains("fee-a"), "{err}");
    assert!(err.problems[0].rule.contains(&bound.to_string()), "{err}");
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
