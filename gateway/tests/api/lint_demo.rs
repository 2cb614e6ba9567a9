//! The demo's lint examples (docs/lint.md "The demo"): one rooftop per
//! country of the catalogue shows a failure its manager can fix in the
//! dealers file, and fixing it there flips the verdict — through the real
//! server and the real `import dealers`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{TestApp, poll_until, run_cli, spawn_with, text, tool_error_code};

/// (organization, rooftop, the fact that fails: a charge left out of the
/// price, or the prices' VAT).
const EXAMPLES: &[(&str, &str, &str)] = &[
    (
        "org.lakeshore-auto-group",
        "roof.lakeshore-sacramento",
        "protection-package",
    ),
    (
        "org.maplecrest-motor-group",
        "roof.maplecrest-montreal",
        "freight-pdi",
    ),
    (
        "org.northsea-motor-group",
        "roof.northsea-hamburg",
        "ueberfuehrung",
    ),
    (
        "org.northsea-motor-group",
        "roof.northsea-manchester",
        "price_includes_vat",
    ),
];

const DISCLOSURE: &str = "dealeragent.pricing.get_disclosure";

/// A new vehicle of the rooftop (the transfer-cost rules are about new cars).
async fn new_vehicle(app: &TestApp, org: &str, rooftop: &str) -> String {
    let found = app
        .call_tool(
            "dealeragent.inventory.search",
            json!({"organization_id": org, "rooftop_ids": [rooftop],
                   "filters": {"condition": ["new"]}}),
        )
        .await;
    assert_eq!(tool_error_code(&found), None, "{found}");
    found["structuredContent"]["vehicles"][0]["vehicle_id"]
        .as_str()
        .unwrap_or_else(|| panic!("a new vehicle at {rooftop}: {found}"))
        .to_owned()
}

async fn lint(app: &TestApp, org: &str, rooftop: &str, vehicle: &str) -> Value {
    let result = app
        .call_tool(
            DISCLOSURE,
            json!({"organization_id": org, "rooftop_id": rooftop, "vehicle_id": vehicle,
                   "detail": "full"}),
        )
        .await;
    assert_eq!(tool_error_code(&result), None, "{result}");
    result["structuredContent"]["extensions"]["dealergateway.disclosure-lint"].clone()
}

/// The confirmed rules that fail on `fact` (a charge id or a fact name).
fn failing_on(block: &Value, fact: &str) -> Vec<String> {
    block["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["verdict"] == "fail" && r["confirmed"] == true)
        .filter(|r| {
            r["facts"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|f| f["fact"].as_str().is_some_and(|p| p.contains(fact)))
        })
        .map(|r| r["rule_id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn each_countrys_demo_failure_is_fixed_in_the_dealers_file() {
    // The dealers file is re-read every second (another process imports it).
    let app = spawn_with(|s| s.directory_refresh_seconds = 1).await;
    let mut vehicles = Vec::new();
    for &(org, rooftop, charge) in EXAMPLES {
        let vehicle = new_vehicle(&app, org, rooftop).await;
        let block = lint(&app, org, rooftop, &vehicle).await;
        assert_eq!(block["result"], "fail", "{rooftop}: {block:#}");
        assert_eq!(block["jurisdiction_source"], "rooftop", "{block}");
        let failing = failing_on(&block, charge);
        assert!(
            !failing.is_empty(),
            "{rooftop}: no rule fails on {charge}: {block:#}"
        );
        vehicles.push((org, rooftop, charge, vehicle, failing));
    }

    // The manager's fix: the charge goes into the advertised price, the
    // prices are published with VAT.
    let demo = include_str!("../../../demo/dealers.yaml");
    let mut fixed = demo.replacen(
        "advertised_prices_include_vat: false",
        "advertised_prices_include_vat: true",
        1,
    );
    assert_ne!(fixed, demo, "Manchester publishes prices without VAT");
    for &(_, _, charge) in EXAMPLES.iter().filter(|e| e.2 != "price_includes_vat") {
        let at = fixed
            .find(&format!("- charge_id: {charge}\n                name:"))
            .map(|start| {
                start
                    + fixed[start..]
                        .find("included_in_advertised_price: false")
                        .expect("the charge is left out")
            })
            .expect("the charge is in the demo");
        // Each example's charge id is left out of a price in its rooftop
        // only (the others' charges of that id are included already).
        fixed.replace_range(
            at..at + "included_in_advertised_price: false".len(),
            "included_in_advertised_price: true",
        );
    }
    let path = app.db_dir.join("dealers-fixed.yaml");
    std::fs::write(&path, fixed).unwrap();
    let out = run_cli(
        &app.database_url,
        &["import", "dealers", path.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out));

    for (org, rooftop, charge, vehicle, failing) in vehicles {
        let flipped = poll_until(Duration::from_secs(20), || async {
            let block = lint(&app, org, rooftop, &vehicle).await;
            failing_on(&block, charge).is_empty()
                && block["rules"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|r| failing.iter().any(|f| r["rule_id"] == f.as_str()))
                    .all(|r| r["verdict"] == "pass")
        })
        .await;
        let block = lint(&app, org, rooftop, &vehicle).await;
        assert!(
            flipped,
            "{rooftop}: {failing:?} still fail after the fix: {block:#}"
        );
        assert_ne!(block["result"], "fail", "{rooftop}: {block:#}");
    }
}
