//! `dealeragent.inventory.get_used_vehicle_details` (profile
//! `dealeragent.used-vehicle.read/0.1`) over real
//! HTTP, on SQLite and, with `DEALER_GATEWAY_TEST_POSTGRES_URL`, on
//! PostgreSQL: every evidence state of the demo (complete, partial,
//! conflicting, missing, and a new vehicle), the used-vehicle columns of the
//! DAP CSV and the evidence extension of the JSON feed from import to the
//! wire, and the tool against every credential of the isolation matrix.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{self, TestApp, fresh_database, run_cli, spawn_on, text};
use crate::security::{
    CHICAGO, FLEET, Fixture, NOT_FOUND, ORG, OTHER_ORG, SCOPE_INSUFFICIENT, Who, normalized,
};

/// The tools whose isolation cases this module checks with the matrix's
/// credentials (`security::Who`, `security::Fixture`); the catalog
/// coverage test in `security` accepts them.
pub(crate) const ISOLATION_TOOLS: &[&str] = &[DETAILS];

const DETAILS: &str = "dealeragent.inventory.get_used_vehicle_details";
const SEARCH: &str = "dealeragent.inventory.search";

/// Every vehicle of `rooftop` with one of `conditions`, as search returns
/// them to the group token of the isolation fixture or anonymously.
async fn vehicles(
    app: &TestApp,
    auth: Option<&str>,
    rooftop: &str,
    conditions: &[&str],
) -> Vec<Value> {
    // Full vehicles (their `used_vehicle` summaries are read), every page:
    // a page ends where the result budget says (docs/inventory.md "Detail
    // and the result budget").
    let mut arguments = json!({
        "organization_id": ORG, "rooftop_ids": [rooftop],
        "filters": {"condition": conditions}, "page": {"limit": 100}, "detail": "full"});
    let mut all = Vec::new();
    loop {
        let body = common::modern_body(
            1,
            "tools/call",
            json!({"name": SEARCH, "arguments": arguments}),
        );
        let mut req = app
            .http
            .post(&app.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", common::MODERN)
            .header("mcp-method", "tools/call")
            .header("mcp-name", SEARCH);
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let r = common::send(req.body(body.to_string())).await;
        let page = &r.result()["structuredContent"];
        all.extend(
            page["vehicles"]
                .as_array()
                .cloned()
                .unwrap_or_else(|| panic!("search failed: {}", r.raw)),
        );
        match page["page"]["next_cursor"].as_str() {
            Some(cursor) => arguments["page"]["cursor"] = json!(cursor),
            None => return all,
        }
    }
}

async fn details(app: &TestApp, rooftop: &str, vehicle_id: &str) -> Value {
    app.call_tool(
        DETAILS,
        json!({"organization_id": ORG, "rooftop_id": rooftop, "vehicle_id": vehicle_id}),
    )
    .await
}

/// The tool's output schema as tools/list publishes it, compiled.
async fn output_validator(app: &TestApp) -> jsonschema::Validator {
    let list = app.modern("tools/list", json!({})).await;
    let tool = list.result()["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == json!(DETAILS)).cloned())
        .unwrap_or_else(|| panic!("{DETAILS} not listed: {}", list.raw));
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&tool["outputSchema"])
        .expect("output schema compiles")
}

/// Which evidence state a disclosure shows (the demo has one unit of each
/// at every rooftop).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum State {
    Complete,
    Partial,
    Conflicting,
    Missing,
}

fn state_of(d: &Value) -> Option<State> {
    let reports = d["history_reports"].as_array()?;
    let with_summary = reports
        .iter()
        .filter(|r| r.get("summary").is_some())
        .count();
    if !d["discrepancies"].as_array()?.is_empty() {
        return Some(State::Conflicting);
    }
    if d["condition_report"]["status"] == json!("completed") && with_summary == 1 {
        return Some(State::Complete);
    }
    if d["condition_report"]["status"] == json!("partial") {
        return Some(State::Partial);
    }
    if reports.is_empty()
        && d["title"]["status"] == json!("unknown")
        && d["condition_report"]["status"] == json!("unknown")
        && d["reconditioning"]["status"] == json!("unknown")
    {
        return Some(State::Missing);
    }
    None
}

/// An unknown part says so three times: its value, its provenance's
/// authority and its freshness state.
fn assert_unknown_part(part: &Value, what: &str) {
    assert_eq!(
        part["provenance"]["authority_status"],
        json!("unknown"),
        "{what}: {part}"
    );
    assert_eq!(
        part["freshness"]["state"],
        json!("unknown"),
        "{what}: {part}"
    );
}

#[tokio::test]
async fn every_evidence_state_of_the_demo_is_disclosed_as_it_stands() {
    let app = common::spawn().await;
    let validator = output_validator(&app).await;
    let used = vehicles(&app, None, CHICAGO, &["used", "certified", "demo"]).await;
    assert!(used.len() >= 4, "{} used units", used.len());
    let mut seen = std::collections::BTreeMap::new();
    for v in &used {
        let id = v["vehicle_id"].as_str().unwrap();
        let r = details(&app, CHICAGO, id).await;
        let vehicle_summary = &v["used_vehicle"];
        if r["isError"] == json!(true) {
            // Only a used unit without an odometer reading or a dated
            // tenure has no disclosure (the profile requires both).
            assert_eq!(r["structuredContent"]["code"], json!(NOT_FOUND), "{r}");
            assert!(
                v.get("odometer").is_none() || vehicle_summary.is_null(),
                "a used unit with odometer and tenure was refused: {v}"
            );
            continue;
        }
        let d = &r["structuredContent"];
        let errors: Vec<String> = validator.iter_errors(d).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}\n{d}");
        assert_eq!(d["vehicle_id"], json!(id));
        assert_eq!(d["condition"], v["condition"]);
        // The disclosure's tenure is the search summary's, dated.
        assert_eq!(
            d["inventory_tenure"]["stocked_at"],
            vehicle_summary["inventory_tenure"]["stocked_at"]
        );
        assert_eq!(d["inventory_tenure"]["age_basis"], json!("stocked_at"));
        // Never a summary where sharing is not authorized (DAP-UV-012).
        for report in d["history_reports"].as_array().unwrap() {
            if report["summary_sharing_authorized"] == json!(false) {
                assert!(report.get("summary").is_none(), "{report}");
            }
            // A report keeps its own source (DAP-UV-018).
            assert_eq!(
                report["provenance"]["sources"][0]["authority"],
                json!("third_party")
            );
            assert_eq!(
                report["provenance"]["sources"][0]["source_name"],
                report["provider_name"]
            );
        }
        let Some(state) = state_of(d) else { continue };
        seen.insert(state, d.clone());
        // The search summary agrees with the disclosure: conflicting there
        // exactly when providers disagree here.
        let providers_disagree = d["discrepancies"].as_array().unwrap().iter().any(|x| {
            x["field"]
                .as_str()
                .is_some_and(|f| f.starts_with("history."))
        });
        assert_eq!(
            vehicle_summary["history_report_status"] == json!("conflicting"),
            providers_disagree,
            "{vehicle_summary}\n{d}"
        );
    }
    let states: Vec<State> = seen.keys().copied().collect();
    assert_eq!(
        states,
        [
            State::Complete,
            State::Partial,
            State::Conflicting,
            State::Missing
        ],
        "evidence states found at {CHICAGO}"
    );

    let complete = &seen[&State::Complete];
    assert_eq!(complete["odometer"]["status"], json!("actual"));
    assert_eq!(complete["title"]["status"], json!("clear"));
    assert_eq!(
        complete["title"]["provenance"]["authority_status"],
        json!("asserted")
    );
    assert_eq!(complete["certification"]["type"], json!("dealer_certified"));
    assert!(
        complete["certification"]["program_name"].is_string(),
        "{complete}"
    );
    assert_eq!(complete["reconditioning"]["status"], json!("completed"));
    let summary = &complete["history_reports"][0]["summary"];
    assert_eq!(summary["accident_status"], json!("no_events_reported"));
    assert_eq!(
        complete["history_reports"][0]["freshness"]["max_age_seconds"],
        json!(2_592_000)
    );

    let partial = &seen[&State::Partial];
    let report = &partial["history_reports"][0];
    assert_eq!(report["summary_sharing_authorized"], json!(false));
    assert!(report.get("summary").is_none());
    assert_eq!(partial["reconditioning"]["status"], json!("unknown"));
    assert_unknown_part(&partial["reconditioning"], "partial reconditioning");
    assert_eq!(
        partial["title"]["provenance"]["authority_status"],
        json!("asserted")
    );

    // Conflicting evidence is kept as it is: both providers' summaries,
    // the dealer's clear title, and discrepancies naming the sources
    // (DAP-UV-019/020), never one value picked.
    let conflicting = &seen[&State::Conflicting];
    let reports = conflicting["history_reports"].as_array().unwrap();
    let accidents: Vec<&Value> = reports
        .iter()
        .map(|r| &r["summary"]["accident_status"])
        .collect();
    assert_eq!(
        accidents,
        [&json!("no_events_reported"), &json!("events_reported")]
    );
    assert_eq!(conflicting["title"]["status"], json!("clear"));
    let fields: Vec<&str> = conflicting["discrepancies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["field"].as_str().unwrap())
        .collect();
    for field in [
        "history.accident_status",
        "title.brands",
        "odometer.reading",
    ] {
        assert!(fields.contains(&field), "{field} not in {fields:?}");
    }
    for x in conflicting["discrepancies"].as_array().unwrap() {
        assert_eq!(x["status"], json!("unresolved"));
        assert!(x["source_names"].as_array().unwrap().len() >= 2, "{x}");
    }
    let accident = conflicting["discrepancies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["field"] == json!("history.accident_status"))
        .unwrap();
    let names: Vec<&str> = accident["source_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"CARFAX") && names.contains(&"AutoCheck"),
        "{names:?}"
    );

    // Missing evidence stays unknown, never favorable (DAP-UV-016/017).
    let missing = &seen[&State::Missing];
    assert_eq!(missing["title"]["brands"], json!([]));
    assert_unknown_part(&missing["title"], "missing title");
    assert_unknown_part(&missing["condition_report"], "missing inspection");
    assert_unknown_part(&missing["reconditioning"], "missing reconditioning");
    assert_eq!(missing["history_reports"], json!([]));
    assert!(missing["discrepancies"].as_array().unwrap().is_empty());

    // A new vehicle has no used-vehicle disclosure: the same not-found as
    // a vehicle that does not exist (DAP-UV-001/002).
    let new = vehicles(&app, None, CHICAGO, &["new"]).await;
    let new_id = new[0]["vehicle_id"].as_str().unwrap();
    let refused = details(&app, CHICAGO, new_id).await;
    let absent = details(&app, CHICAGO, "veh.does-not-exist").await;
    assert_eq!(
        refused["structuredContent"]["code"],
        json!(NOT_FOUND),
        "{refused}"
    );
    assert_eq!(
        normalized(&refused.to_string()),
        normalized(&absent.to_string())
    );
    assert!(!refused.to_string().contains(new_id));
}

/// A CSV row and a JSON record of a used unit with every evidence column.
const VIN_CSV: &str = "1HGCV1F31LA000017";
const VIN_JSON: &str = "1HGCV1F31LA000025";

fn header_and_row(observed: &str) -> String {
    let history = json!([
        {"provider_id": "com.carfax", "provider_name": "CARFAX", "report_id": "cfx-1",
         "status": "available", "access": "public_link",
         "report_url": "https://vhr.carfax.example/report/1", "summary_sharing_authorized": true,
         "summary": {"accident_status": "no_events_reported", "damage_status": "no_damage_reported",
                     "title_brand_status": "no_brands_reported", "odometer_consistency": "consistent",
                     "owner_count_status": "known", "owner_count": 1,
                     "last_reported_odometer": {"value": 30000, "unit": "mi"}}},
        {"provider_id": "com.experian.autocheck", "provider_name": "AutoCheck",
         "status": "available", "access": "on_request", "summary_sharing_authorized": true,
         "summary": {"accident_status": "events_reported", "damage_status": "unknown",
                     "title_brand_status": "unknown", "odometer_consistency": "unknown",
                     "owner_count_status": "unknown"}}
    ]);
    let title = json!({"status": "branded", "brands": ["rebuilt"], "jurisdiction": "US-IL"});
    let inspection = json!({"status": "completed", "inspection_authority": "independent_third_party",
                            "inspected_at": observed, "grade": {"system": "Example grade", "value": "4.0"},
                            "components": [{"component": "frame", "status": "attention", "note": "Repaired rail."}]});
    let recon = json!({"status": "in_progress", "items": [
        {"category": "safety", "description": "Airbag module replacement.", "status": "in_progress"}]});
    let cells = [
        ("organization_id", ORG.to_owned()),
        ("rooftop_id", CHICAGO.to_owned()),
        ("vin", VIN_CSV.to_owned()),
        ("stock_number", "UV9001".to_owned()),
        ("year", "2020".to_owned()),
        ("make", "Honda".to_owned()),
        ("model", "Accord".to_owned()),
        ("condition", "used".to_owned()),
        (
            "listing_url",
            "https://chicago.example/inventory/UV9001".to_owned(),
        ),
        ("observed_at", observed.to_owned()),
        ("advertised_price_minor", "1899500".to_owned()),
        ("odometer_value", "31250".to_owned()),
        ("odometer_unit", "mi".to_owned()),
        ("odometer_status", "exempt".to_owned()),
        ("stocked_at", observed.to_owned()),
        ("history_reports_json", history.to_string()),
        ("certification_type", "manufacturer_cpo".to_owned()),
        ("title_json", title.to_string()),
        ("inspection_json", inspection.to_string()),
        ("reconditioning_json", recon.to_string()),
    ];
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let head: Vec<&str> = cells.iter().map(|(k, _)| *k).collect();
    let row: Vec<String> = cells.iter().map(|(_, v)| quote(v)).collect();
    format!("{}\n{}\n", head.join(","), row.join(","))
}

fn json_record(observed: &str) -> Value {
    json!([{
        "rooftop_id": "roof.maplecrest-toronto",
        "vin": VIN_JSON, "stock_number": "J-77", "year": 2021, "make": "Toyota", "model": "RAV4",
        "condition": "certified",
        "odometer": {"value": 41000, "unit": "km"},
        "listing_url": "https://toronto.example/inventory/J-77",
        "advertised_price": {"amount": {"amount_minor": 3249500, "currency": "CAD"},
                             "availability": "generally_available", "includes_required_dealer_charges": false},
        "availability": {"status": "available", "authority_status": "asserted", "observed_at": observed},
        "used_vehicle": {
            "inventory_tenure": {
                "stocked_at": observed, "age_days": 0, "age_as_of": observed, "age_basis": "stocked_at",
                "provenance": {"sources": [{"source_name": "dms", "authority": "dealer_asserted",
                                            "observed_at": observed}],
                               "authority_status": "asserted"},
                "freshness": {"observed_at": observed, "state": "current"}},
            "history_report_status": "unknown",
            "certification_type": "manufacturer_cpo"},
        "extensions": {"dealergateway.used-vehicle-evidence": {
            "odometer_status": "actual",
            "certification_program": "Toyota Certified Used Vehicles",
            "title": {"status": "clear", "brands": [], "jurisdiction": "CA-ON"},
            "history_reports": [{"provider_id": "ca.carfax", "provider_name": "CARFAX Canada",
                                 "status": "available", "access": "dealer_presented",
                                 "summary_sharing_authorized": false}]
        }}
    }])
}

/// Import through the real CLI into a fresh store (demo dealers first),
/// then serve it.
async fn imported(files: &[(&str, &str, String)]) -> TestApp {
    let (dir, db) = fresh_database().await;
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/dealers.yaml");
    let out = run_cli(&db, &["import", "dealers", &demo.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out));
    for (name, org, body) in files {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        let out = run_cli(
            &db,
            &[
                "import",
                "inventory",
                &path.display().to_string(),
                "--organization",
                org,
            ],
        );
        assert!(out.status.success(), "{}", text(&out));
    }
    spawn_on(dir, db, |_| {}).await
}

#[tokio::test]
async fn the_evidence_columns_and_the_json_extension_reach_the_wire() {
    let observed = chrono::Utc::now()
        .checked_sub_signed(chrono::TimeDelta::days(3))
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let app = imported(&[
        ("chicago-used.csv", ORG, header_and_row(&observed)),
        (
            "toronto.json",
            OTHER_ORG,
            json_record(&observed).to_string(),
        ),
    ])
    .await;
    let validator = output_validator(&app).await;

    let csv_id = vehicles(&app, None, CHICAGO, &["used"]).await[0]["vehicle_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = details(&app, CHICAGO, &csv_id).await;
    let d = &r["structuredContent"];
    assert_eq!(r["isError"], json!(false), "{r}");
    assert!(validator.is_valid(d), "{d}");
    assert_eq!(d["vin"], json!(VIN_CSV));
    // `exempt` is kept (the vehicle document has no such status).
    assert_eq!(d["odometer"]["status"], json!("exempt"));
    assert_eq!(
        d["odometer"]["reading"],
        json!({"value": 31250, "unit": "mi"})
    );
    assert_eq!(d["title"]["status"], json!("branded"));
    assert_eq!(d["title"]["brands"], json!(["rebuilt"]));
    assert_eq!(
        d["condition_report"]["inspection_authority"],
        json!("independent_third_party")
    );
    assert_eq!(
        d["condition_report"]["components"][0]["component"],
        json!("frame")
    );
    assert_eq!(d["reconditioning"]["status"], json!("in_progress"));
    // manufacturer_cpo without a program cannot be claimed (DAP-UV-024).
    assert_eq!(d["certification"]["type"], json!("unknown"));
    assert_unknown_part(&d["certification"], "CPO without a program");
    let reports = d["history_reports"].as_array().unwrap();
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[0]["report_id"], json!("cfx-1"));
    // No observed_at in the cell: the row's.
    assert_eq!(reports[0]["observed_at"], json!(observed));
    let fields: Vec<&str> = d["discrepancies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["field"].as_str().unwrap())
        .collect();
    // CARFAX and AutoCheck disagree on accidents; the branded title
    // against CARFAX's no_brands_reported. CARFAX's 30,000 mi is below the
    // dealer's 31,250: no odometer discrepancy.
    assert_eq!(fields, ["history.accident_status", "title.brands"], "{d}");
    let search = vehicles(&app, None, CHICAGO, &["used"]).await;
    assert_eq!(
        search[0]["used_vehicle"]["history_report_status"],
        json!("conflicting")
    );

    let toronto = "roof.maplecrest-toronto";
    let r = app
        .call_tool(
            SEARCH,
            json!({"organization_id": OTHER_ORG, "rooftop_ids": [toronto]}),
        )
        .await;
    let json_id = r["structuredContent"]["vehicles"][0]["vehicle_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = app
        .call_tool(
            DETAILS,
            json!({"organization_id": OTHER_ORG, "rooftop_id": toronto, "vin": VIN_JSON}),
        )
        .await;
    let d = &r["structuredContent"];
    assert_eq!(r["isError"], json!(false), "{r}");
    assert!(validator.is_valid(d), "{d}");
    assert_eq!(d["vehicle_id"], json!(json_id));
    assert_eq!(
        d["odometer"]["reading"],
        json!({"value": 41000, "unit": "km"})
    );
    assert_eq!(d["odometer"]["status"], json!("actual"));
    assert_eq!(d["certification"]["type"], json!("manufacturer_cpo"));
    assert_eq!(
        d["certification"]["program_name"],
        json!("Toyota Certified Used Vehicles")
    );
    assert_eq!(d["title"]["jurisdiction"], json!("CA-ON"));
    assert_eq!(
        d["history_reports"][0]["summary_sharing_authorized"],
        json!(false)
    );
    assert!(d["history_reports"][0].get("summary").is_none());
    assert_unknown_part(&d["condition_report"], "JSON record without inspection");
}

#[tokio::test]
async fn bad_evidence_cells_are_refused_with_line_column_and_rule_and_nothing_is_written() {
    let observed = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let good = header_and_row(&observed);
    let bad = good
        .replace("\"\"branded\"\"", "\"\"clear\"\"")
        .replace(
            "\"\"in_progress\"\",\"\"items\"\"",
            "\"\"completed\"\",\"\"items\"\"",
        )
        .replace("\"exempt\"", "\"not-a-status\"");
    let (dir, db) = fresh_database().await;
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/dealers.yaml");
    assert!(
        run_cli(&db, &["import", "dealers", &demo.display().to_string()])
            .status
            .success()
    );
    let path = dir.join("bad.csv");
    std::fs::write(&path, bad).unwrap();
    let out = run_cli(
        &db,
        &[
            "import",
            "inventory",
            &path.display().to_string(),
            "--organization",
            ORG,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report = text(&out);
    for line in [
        "bad.csv:2: odometer_status: not a known value: expected one of actual|not_actual|exceeds_mechanical_limits|exempt|unknown",
        "bad.csv:2: title_json: at /brands: status clear allows no brands; use status branded",
        "bad.csv:2: reconditioning_json: at /items/0/status: status completed is not allowed while an item is planned, in progress or unknown",
    ] {
        assert!(report.contains(line), "{line}\n{report}");
    }
    assert!(report.contains("3 problem(s)"), "{report}");
    let store = gateway::store::open(&db).await.unwrap();
    assert!(
        store
            .snapshot_history(ORG, CHICAGO, 1)
            .await
            .unwrap()
            .is_empty()
    );
}

// ---------------------------------------------------------------------------
// Isolation: the matrix's credentials against this tool
// ---------------------------------------------------------------------------

/// What the tool answers each case, the way `security::expected` decides
/// it for get_vehicle (this tool has the same scope and tenancy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Fleet,
    Chicago,
    FleetUnderOtherOrganization,
    /// A new vehicle of a rooftop everyone may read: never a disclosure.
    ChicagoNew,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Ok,
    NotFound,
    ScopeInsufficient,
    Unauthorized(&'static str),
}

fn want(case: Case, who: Who) -> Want {
    if let Some(error) = who.refusal() {
        return Want::Unauthorized(error);
    }
    if who.lacks_inventory_scope() {
        return Want::ScopeInsufficient;
    }
    let visible = match case {
        Case::Fleet => who.sees_fleet(),
        Case::Chicago => true,
        Case::FleetUnderOtherOrganization | Case::ChicagoNew => false,
    };
    if visible { Want::Ok } else { Want::NotFound }
}

#[tokio::test]
async fn every_credential_gets_the_exact_outcome_from_the_used_vehicle_tool() {
    let f = Fixture::new().await;
    let reference = f.reference_not_found().await;
    let group = f.authorization(Who::GroupToken);
    let used = |list: Vec<Value>| -> String {
        list.iter()
            .find(|v| v["odometer"].is_object() && v["used_vehicle"].is_object())
            .and_then(|v| v["vehicle_id"].as_str())
            .expect("a used unit with a disclosure")
            .to_owned()
    };
    let fleet = used(vehicles(&f.app, group.as_deref(), FLEET, &["used", "certified"]).await);
    let chicago = used(vehicles(&f.app, group.as_deref(), CHICAGO, &["used", "certified"]).await);
    let chicago_new = vehicles(&f.app, group.as_deref(), CHICAGO, &["new"]).await[0]["vehicle_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut failures = Vec::new();
    let mut checked = 0;
    for who in Who::ALL {
        for case in [
            Case::Fleet,
            Case::Chicago,
            Case::FleetUnderOtherOrganization,
            Case::ChicagoNew,
        ] {
            let (org, rooftop, vehicle) = match case {
                Case::Fleet => (ORG, FLEET, &fleet),
                Case::Chicago => (ORG, CHICAGO, &chicago),
                Case::FleetUnderOtherOrganization => (OTHER_ORG, FLEET, &fleet),
                Case::ChicagoNew => (ORG, CHICAGO, &chicago_new),
            };
            let before = f.audit().await.len();
            let r = f
                .tool(
                    who,
                    DETAILS,
                    json!({"organization_id": org, "rooftop_id": rooftop, "vehicle_id": vehicle}),
                )
                .await;
            checked += 1;
            let w = want(case, who);
            let fail = |why: &str| {
                format!(
                    "{case:?} as {who:?} (want {w:?}): {why}; got {} {}",
                    r.status, r.raw
                )
            };
            match w {
                Want::Unauthorized(error) => {
                    let challenge = r
                        .headers
                        .get("www-authenticate")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    if r.status != 401
                        || !challenge.starts_with("Bearer ")
                        || !challenge.contains(&format!("error=\"{error}\""))
                        || r.body["error"] != json!(error)
                    {
                        failures.push(fail("not the 401 with its Bearer challenge"));
                    }
                    if let Some(token) = f.tokens.get(&who)
                        && r.raw.contains(token.as_str())
                    {
                        failures.push(fail("the credential is echoed"));
                    }
                    if f.audit().await.len() != before {
                        failures.push(fail("a refused credential wrote an audit event"));
                    }
                }
                Want::NotFound | Want::ScopeInsufficient => {
                    let code = if w == Want::NotFound {
                        NOT_FOUND
                    } else {
                        SCOPE_INSUFFICIENT
                    };
                    let result = &r.body["result"];
                    if r.status != 200
                        || result["isError"] != json!(true)
                        || result["structuredContent"]["code"] != json!(code)
                    {
                        failures.push(fail(&format!("not isError {code}")));
                    } else if w == Want::NotFound && normalized(&result.to_string()) != reference {
                        failures.push(fail("differs from the reference not-found"));
                    }
                }
                Want::Ok => {
                    let sc = &r.body["result"]["structuredContent"];
                    if r.status != 200
                        || r.body["result"]["isError"] == json!(true)
                        || sc["vehicle_id"] != json!(vehicle)
                        || sc["rooftop_id"] != json!(rooftop)
                    {
                        failures.push(fail("not the disclosure of the vehicle asked for"));
                    }
                }
            }
            // The private rooftop is never mentioned to who may not see it.
            if !who.sees_fleet() && r.raw.contains(FLEET) {
                failures.push(fail("the private rooftop is mentioned"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} cells failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(checked, Who::ALL.len() * 4);
    // Authenticated reads are audited under this tool and its profile.
    let audited = f
        .audit()
        .await
        .into_iter()
        .filter(|e| e.tool == DETAILS && e.profile == "dealeragent.used-vehicle.read/0.1")
        .count();
    assert!(audited > 0, "no audit event for {DETAILS}");
}
