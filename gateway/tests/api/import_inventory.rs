//! `dealer-gateway import inventory|bundle`, run as the real binary against
//! a fresh SQLite store: snapshots and exact summaries on success; every
//! problem (line, column, rule), exit code 2 and nothing written otherwise.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{run_cli, temp_dir, test_database_url, text};

const LAKESHORE: &str = "org.lakeshore-auto-group";
const MAPLECREST: &str = "org.maplecrest-motor-group";
const CHICAGO: &str = "roof.lakeshore-chicago";
const GRAND_RAPIDS: &str = "roof.lakeshore-grand-rapids";
const TORONTO: &str = "roof.maplecrest-toronto";

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/inventory")
        .join(name)
        .display()
        .to_string()
}

/// A fresh store with the demo dealers imported.
async fn store_with_dealers() -> (PathBuf, String) {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/dealers.yaml");
    let out = run_cli(&db, &["import", "dealers", &demo.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out));
    (dir, db)
}

fn import(db: &str, file: &str, org: &str, extra: &[&str]) -> Output {
    let mut args = vec!["import", "inventory", file, "--organization", org];
    args.extend_from_slice(extra);
    run_cli(db, &args)
}

async fn snapshot_count(db: &str, org: &str, rooftop: &str) -> usize {
    gateway::store::open(db)
        .await
        .unwrap()
        .snapshot_history(org, rooftop, 100)
        .await
        .unwrap()
        .len()
}

async fn latest_vehicles(
    db: &str,
    org: &str,
    rooftop: &str,
) -> Vec<gateway::inventory::model::VehicleRecord> {
    let store = gateway::store::open(db).await.unwrap();
    let history = store.snapshot_history(org, rooftop, 1).await.unwrap();
    store
        .snapshot_vehicles(&history[0].snapshot_id)
        .await
        .unwrap()
}

#[tokio::test]
async fn valid_dap_csv_creates_one_snapshot_per_rooftop_and_reimport_reports_exact_changes() {
    let (_dir, db) = store_with_dealers().await;
    let first = import(&db, &fixture("lakeshore.csv"), LAKESHORE, &[]);
    assert!(first.status.success(), "{}", text(&first));
    let out = text(&first);
    assert!(out.contains("4 row(s) read, 2 rooftop(s)"), "{out}");
    assert!(
        out.contains(&format!(
            "{CHICAGO}: snapshot version 1 — rows read 3, vehicles added 3, changed 0, unchanged 0, removed 0"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "{GRAND_RAPIDS}: snapshot version 1 — rows read 1, vehicles added 1"
        )),
        "{out}"
    );
    let vehicles = latest_vehicles(&db, LAKESHORE, CHICAGO).await;
    assert_eq!(vehicles.len(), 3);
    let pilot = vehicles
        .iter()
        .find(|v| v.stock_number.as_deref() == Some("LC1002"))
        .unwrap();
    assert_eq!(pilot.availability_status, "on_hold");
    assert_eq!(pilot.source.source_name, "dap-csv:lakeshore.csv");
    assert_eq!(pilot.source.authority, "dealer_asserted");
    assert!(
        pilot.vehicle_id.starts_with("veh.") && !pilot.vehicle_id.contains("5FNYG1H85RB000202")
    );

    // Changed file for Chicago only: LC1001 unchanged (new observed_at is
    // provenance, not a fact), LC1002 repriced, LC1003 gone, LC1005 new.
    let changed = fixture("lakeshore-changed.csv");
    let dry = import(
        &db,
        &changed,
        LAKESHORE,
        &["--rooftop", CHICAGO, "--dry-run"],
    );
    assert!(dry.status.success(), "{}", text(&dry));
    let expected = "rows read 3, vehicles added 1, changed 1, unchanged 1, removed 1";
    assert!(text(&dry).contains("nothing written"), "{}", text(&dry));
    assert!(text(&dry).contains(expected), "{}", text(&dry));
    assert_eq!(
        snapshot_count(&db, LAKESHORE, CHICAGO).await,
        1,
        "dry run wrote nothing"
    );

    let real = import(&db, &changed, LAKESHORE, &["--rooftop", CHICAGO]);
    assert!(real.status.success(), "{}", text(&real));
    assert!(
        text(&real).contains("snapshot version 2"),
        "{}",
        text(&real)
    );
    assert!(text(&real).contains(expected), "{}", text(&real));
    assert_eq!(snapshot_count(&db, LAKESHORE, CHICAGO).await, 2);
    assert_eq!(
        snapshot_count(&db, LAKESHORE, GRAND_RAPIDS).await,
        1,
        "other rooftop untouched"
    );
    let vehicles = latest_vehicles(&db, LAKESHORE, CHICAGO).await;
    let ids_first: Vec<String> = vehicles.iter().map(|v| v.vehicle_id.clone()).collect();
    assert_eq!(vehicles.len(), 3);
    // Re-importing the same file changes nothing and keeps the ids.
    let again = import(&db, &changed, LAKESHORE, &["--rooftop", CHICAGO]);
    assert!(
        text(&again).contains("vehicles added 0, changed 0, unchanged 3, removed 0"),
        "{}",
        text(&again)
    );
    let ids_again: Vec<String> = latest_vehicles(&db, LAKESHORE, CHICAGO)
        .await
        .iter()
        .map(|v| v.vehicle_id.clone())
        .collect();
    assert_eq!(ids_first, ids_again);
}

#[tokio::test]
async fn a_file_with_several_bad_rows_reports_every_problem_and_writes_nothing() {
    let (_dir, db) = store_with_dealers().await;
    let file = fixture("lakeshore-bad.csv");
    let out = import(&db, &file, LAKESHORE, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(report.contains("13 problem(s)"), "{report}");
    assert!(report.contains("nothing was imported"), "{report}");
    for (line, column, rule) in [
        (2, "vin", "not a valid VIN"),
        (3, "listing_url", "not an absolute https:// URL"),
        (3, "observed_at", "has no UTC offset"),
        (3, "advertised_price_minor", "must not be negative"),
        (3, "odometer_unit", "required when odometer_value is given"),
        (3, "availability_status", "not a known value"),
        (4, "year", "1886 to 2200"),
        (4, "condition", "new|used|certified|demo"),
        (
            4,
            "advertised_price_minor",
            "unknown prices are not published as zero",
        ),
        (4, "required_dealer_charges_json", "not valid JSON"),
        (
            5,
            "vin",
            "duplicate VIN for this rooftop: already used on line 3",
        ),
        (5, "stock_number", "duplicate stock number"),
        (5, "currency", "configured currency USD"),
    ] {
        let needle = format!("{file}:{line}: {column}: ");
        let hit = report
            .lines()
            .find(|l| l.contains(&needle) && l.contains(rule));
        assert!(hit.is_some(), "missing {needle}{rule} in\n{report}");
    }
    // Problems come sorted by line, and no input value is echoed.
    let lines: Vec<usize> = report
        .lines()
        .skip(1)
        .filter_map(|l| l.split(':').nth(1)?.trim().parse().ok())
        .collect();
    assert!(lines.windows(2).all(|w| w[0] <= w[1]), "{report}");
    for value in [
        "1HGCY2F50RA00010I",
        "brand-new",
        "{not json",
        "EUR",
        "http://chicago",
    ] {
        assert!(!report.contains(value), "echoed {value}: {report}");
    }
    assert_eq!(snapshot_count(&db, LAKESHORE, CHICAGO).await, 0);
}

#[tokio::test]
async fn dealer_com_export_converts_prices_statuses_and_takes_the_rooftop_unit() {
    let (_dir, db) = store_with_dealers().await;
    let file = fixture("dealer-com-export.csv");
    // Without --format a .csv is read as DAP CSV and its headers are refused.
    let wrong = import(&db, &file, LAKESHORE, &["--rooftop", GRAND_RAPIDS]);
    assert_eq!(wrong.status.code(), Some(2), "{}", text(&wrong));
    assert!(text(&wrong).contains("unknown column"), "{}", text(&wrong));

    let out = import(
        &db,
        &file,
        LAKESHORE,
        &["--rooftop", GRAND_RAPIDS, "--format", "dealer-com-csv"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("vehicles added 2"), "{}", text(&out));
    let vehicles = latest_vehicles(&db, LAKESHORE, GRAND_RAPIDS).await;
    let accord = vehicles
        .iter()
        .find(|v| v.stock_number.as_deref() == Some("GR7001"))
        .unwrap();
    assert_eq!(accord.vin.as_deref(), Some("1HGCY2F50RA000707"));
    assert_eq!(accord.advertised_price.amount_minor(), 4_287_500);
    assert_eq!(accord.advertised_price.currency().code(), "USD");
    assert_eq!(accord.condition, "new");
    assert_eq!(accord.availability_status, "available");
    let odometer = accord.odometer.unwrap();
    assert_eq!((odometer.value, odometer.unit.as_str()), (1204, "mi"));
    assert_eq!(
        accord.source.source_name,
        "dealer-com-csv:dealer-com-export.csv"
    );
    for t in [
        "odometer unit mi taken from rooftop configuration",
        "advertised price converted from comma_groups_dot_decimal feed notation to minor units (exact, 2 decimals)",
    ] {
        assert!(
            accord.source.transformations.iter().any(|x| x == t),
            "{:#?}",
            accord.source.transformations
        );
    }
    let pilot = vehicles
        .iter()
        .find(|v| v.stock_number.as_deref() == Some("GR7002"))
        .unwrap();
    assert_eq!(pilot.availability_status, "on_hold");
    assert_eq!(pilot.history_report_status.as_deref(), Some("available"));
    assert!(!pilot.history_reports[0].summary_sharing_authorized);

    // dealer-com needs a rooftop when the organization has several.
    let no_rooftop = import(&db, &file, LAKESHORE, &["--format", "dealer-com-csv"]);
    assert_eq!(no_rooftop.status.code(), Some(2), "{}", text(&no_rooftop));
    assert!(
        text(&no_rooftop).contains("--rooftop"),
        "{}",
        text(&no_rooftop)
    );
}

#[tokio::test]
async fn a_cad_rooftop_row_priced_in_usd_is_refused() {
    let (_dir, db) = store_with_dealers().await;
    let file = fixture("maplecrest-usd.csv");
    let out = import(&db, &file, MAPLECREST, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "{file}:2: currency: differs from the rooftop's configured currency CAD"
        )),
        "{}",
        text(&out)
    );
    assert_eq!(snapshot_count(&db, MAPLECREST, TORONTO).await, 0);
}

#[tokio::test]
async fn a_future_observed_at_is_refused() {
    let (_dir, db) = store_with_dealers().await;
    let file = fixture("future.csv");
    let out = import(&db, &file, LAKESHORE, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "{file}:2: observed_at: is in the future beyond the allowed clock skew (300 s)"
        )),
        "{}",
        text(&out)
    );
    assert_eq!(snapshot_count(&db, LAKESHORE, CHICAGO).await, 0);
}

#[tokio::test]
async fn json_records_import_and_keep_their_ids_and_sources() {
    let (_dir, db) = store_with_dealers().await;
    let out = import(&db, &fixture("maplecrest-toronto.json"), MAPLECREST, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("(json, organization"), "{}", text(&out));
    let vehicles = latest_vehicles(&db, MAPLECREST, TORONTO).await;
    assert_eq!(vehicles.len(), 2);
    let kept = vehicles
        .iter()
        .find(|v| v.vehicle_id == "veh.maplecrest-mt3002")
        .unwrap();
    assert_eq!(kept.source.source_name, "maplecrest-dms-export");
    assert_eq!(
        kept.source.authority, "dealer_asserted",
        "a file is never authoritative"
    );
    assert_eq!(kept.advertised_price.currency().code(), "CAD");
}

#[tokio::test]
async fn dry_run_and_unknown_organization_write_nothing() {
    let (_dir, db) = store_with_dealers().await;
    let dry = import(&db, &fixture("lakeshore.csv"), LAKESHORE, &["--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(text(&dry).contains("no snapshot written"), "{}", text(&dry));
    assert!(text(&dry).contains("vehicles added 3"), "{}", text(&dry));
    assert_eq!(snapshot_count(&db, LAKESHORE, CHICAGO).await, 0);
    assert!(
        gateway::store::open(&db)
            .await
            .unwrap()
            .latest_snapshots()
            .await
            .unwrap()
            .is_empty()
    );

    let unknown = import(&db, &fixture("lakeshore.csv"), "org.nobody", &[]);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    assert!(
        text(&unknown).contains("organization org.nobody is not in the store"),
        "{}",
        text(&unknown)
    );
    let bad_rooftop = import(
        &db,
        &fixture("lakeshore.csv"),
        LAKESHORE,
        &["--rooftop", TORONTO],
    );
    assert_eq!(bad_rooftop.status.code(), Some(2), "{}", text(&bad_rooftop));
}

#[tokio::test]
async fn bundle_imports_dealers_then_each_inventory_file_all_or_nothing() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let bundle = dir.join("bundle");
    std::fs::create_dir_all(bundle.join("inventory")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/dealers.yaml"),
        bundle.join("dealers.yaml"),
    )
    .unwrap();
    std::fs::copy(
        fixture("lakeshore.csv"),
        bundle.join("inventory/a-lakeshore.csv"),
    )
    .unwrap();
    std::fs::copy(
        fixture("maplecrest-usd.csv"),
        bundle.join("inventory/b-maplecrest.csv"),
    )
    .unwrap();
    let out = run_cli(&db, &["import", "bundle", &bundle.display().to_string()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report = text(&out);
    assert!(
        report.contains("1 of 2 inventory file(s) imported"),
        "{report}"
    );
    assert!(report.contains("b-maplecrest.csv:2: currency"), "{report}");
    assert_eq!(snapshot_count(&db, LAKESHORE, CHICAGO).await, 1);
    assert_eq!(snapshot_count(&db, MAPLECREST, TORONTO).await, 0);

    std::fs::remove_file(bundle.join("inventory/b-maplecrest.csv")).unwrap();
    let ok = run_cli(&db, &["import", "bundle", &bundle.display().to_string()]);
    assert!(ok.status.success(), "{}", text(&ok));
    assert!(
        text(&ok).contains("vehicles added 0, changed 0, unchanged 3, removed 0"),
        "{}",
        text(&ok)
    );
}

#[tokio::test]
async fn generated_demo_bundle_imports() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let out_dir = dir.join("generated");
    let generate = run_cli(
        &db,
        &[
            "demo",
            "generate",
            "--vehicles",
            "60",
            "--rooftops",
            "3",
            "--seed",
            "42",
            "--out",
            &out_dir.display().to_string(),
        ],
    );
    assert!(generate.status.success(), "{}", text(&generate));
    let bundle = run_cli(&db, &["import", "bundle", &out_dir.display().to_string()]);
    assert!(bundle.status.success(), "{}", text(&bundle));
    assert!(
        text(&bundle).contains("3 of 3 inventory file(s) imported, 60 vehicle(s)"),
        "{}",
        text(&bundle)
    );
}

#[tokio::test]
async fn problems_name_the_right_line_with_crlf_and_lf_line_endings() {
    let (dir, db) = store_with_dealers().await;
    let original = std::fs::read_to_string(fixture("lakeshore.csv")).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    // Line 4 (the third vehicle) gets a lower-case VIN.
    let vin = lines[3].split(',').nth(2).unwrap().to_owned();
    assert_eq!(vin.len(), 17, "fixture layout: {}", lines[3]);
    let broken: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if i == 3 {
                l.replacen(&vin, &vin.to_lowercase(), 1)
            } else {
                (*l).to_owned()
            }
        })
        .collect();
    for (name, terminator) in [("lf.csv", "\n"), ("crlf.csv", "\r\n")] {
        let path = dir.join(name);
        std::fs::write(&path, broken.join(terminator) + terminator).unwrap();
        let file = path.display().to_string();
        let out = import(&db, &file, LAKESHORE, &[]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let report = text(&out);
        assert!(
            report.contains(&format!("{file}:4: vin: ")),
            "{name}: {report}"
        );
        assert_eq!(report.matches(": vin: ").count(), 1, "{name}: {report}");
    }
    assert_eq!(snapshot_count(&db, LAKESHORE, CHICAGO).await, 0);
}

/// `lakeshore.csv`'s first vehicle alone, its charges cell replaced by one
/// "VIN etching" charge of `amount_minor` written as `amount`.
fn one_row_with_etching(amount: &str) -> String {
    let original = std::fs::read_to_string(fixture("lakeshore.csv")).unwrap();
    let mut lines = original.lines();
    let header = lines.next().unwrap();
    let row = lines.next().unwrap();
    let cell = r#""[{""charge_id"":""doc-fee"",""name"":""Documentary fee"",""amount"":{""amount_minor"":35800,""currency"":""USD""},""payee"":""dealer"",""included_in_advertised_price"":false,""required"":true}]""#;
    assert!(row.contains(cell), "fixture layout: {row}");
    let etching = format!(
        r#""[{{""charge_id"":""etch"",""name"":""VIN etching"",""amount"":{{""amount_minor"":{amount},""currency"":""USD""}},""payee"":""dealer"",""included_in_advertised_price"":false,""required"":true}}]""#
    );
    format!("{header}\n{}\n", row.replacen(cell, &etching, 1))
}

// What operators feed in is what agents are told (docs/inventory-feeds.md
// "Money"): `"amount_minor": 299.00` in a charges cell was imported with exit
// 0, and agents were then told "VIN etching (an unknown amount)". It is
// refused naming the minor units it would be; 29900 is served as 299.00 USD.
#[tokio::test]
async fn a_charge_written_299_00_is_refused_and_29900_is_served_exactly() {
    let (dir, db) = store_with_dealers().await;
    let path = dir.join("etching.csv");
    std::fs::write(&path, one_row_with_etching("299.00")).unwrap();
    let file = path.display().to_string();
    let out = import(&db, &file, LAKESHORE, &[]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(2), "{report}");
    assert!(
        report.contains(&format!(
            "{file}:2: required_dealer_charges_json: at /0/amount/amount_minor: amount_minor must be a whole number of minor units written without a decimal point or exponent; the number written equals 299 (write 299 if that counts minor units); 299.00 USD would be 29900 (amount_minor, csvRequiredDealerCharges)"
        )),
        "{report}"
    );
    assert_eq!(snapshot_count(&db, LAKESHORE, CHICAGO).await, 0);

    std::fs::write(&path, one_row_with_etching("29900")).unwrap();
    let out = import(&db, &file, LAKESHORE, &["--rooftop", CHICAGO]);
    assert!(out.status.success(), "{}", text(&out));
    let vehicle = latest_vehicles(&db, LAKESHORE, CHICAGO).await.remove(0);
    let app = crate::common::spawn_on(dir, db, |_| {}).await;
    let result = app
        .call_tool(
            "dealeragent.pricing.get_disclosure",
            serde_json::json!({"organization_id": LAKESHORE, "rooftop_id": CHICAGO, "vehicle_id": vehicle.vehicle_id}),
        )
        .await;
    let doc = &result["structuredContent"];
    let disclosure = doc["disclosure_text"].as_str().unwrap_or_default();
    assert!(disclosure.contains("VIN etching (299.00 USD)"), "{result}");
    assert!(!disclosure.contains("unknown amount"), "{result}");
    let charge = doc["required_dealer_charges"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["charge_id"] == "etch"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        charge["amount"],
        serde_json::json!({"amount_minor": 29900, "currency": "USD"}),
        "{result}"
    );
}

// A JSON feed is reported whole in one run (docs/inventory-feeds.md "Problem
// reports"): a record that breaks the schema is still checked against the
// import's rules, an unexpected key is named with the keys allowed and the
// closest one, and each problem has its line and column in the file.
#[tokio::test]
async fn a_json_feed_reports_every_problem_in_one_round_naming_the_unexpected_key() {
    let (dir, db) = store_with_dealers().await;
    let original = std::fs::read_to_string(fixture("maplecrest-toronto.json")).unwrap();
    // Record 0: a misspelt key (schema) and a price in USD for a CAD
    // rooftop (an import rule); record 1 (line 23 on): a float year.
    let broken = original
        .replacen("\"trim\": \"XLE\"", "\"trmi\": \"XLE\"", 1)
        .replacen(
            "\"amount_minor\": 4199000, \"currency\": \"CAD\"",
            "\"amount_minor\": 4199000, \"currency\": \"USD\"",
            1,
        )
        .replacen("\"year\": 2023", "\"year\": 2023.0", 1);
    assert_ne!(broken, original);
    let path = dir.join("broken.json");
    std::fs::write(&path, &broken).unwrap();
    let file = path.display().to_string();
    let out = import(&db, &file, MAPLECREST, &[]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(2), "{report}");
    let line_of = |needle: &str| {
        broken
            .lines()
            .position(|l| l.contains(needle))
            .map(|i| i + 1)
            .unwrap()
    };
    for expected in [
        format!(
            "{file}:{}:5: record 0: /0/trmi: unexpected key 'trmi' (did you mean 'trim'?): this object does not allow it; allowed keys here: ",
            line_of("\"trmi\"")
        ),
        format!(
            "{file}:{}:56: record 0: /0/advertised_price/amount/currency: differs from the rooftop's configured currency CAD",
            line_of("\"amount_minor\": 4199000")
        ),
        format!(
            "{file}:{}:13: record 1: /1/year: must be written as a whole number, without a decimal point or exponent: the number written equals 2023 (write 2023) (whole_number, DAP vehicle)",
            line_of("\"year\": 2023.0")
        ),
    ] {
        assert!(report.contains(&expected), "no {expected:?} in\n{report}");
    }
    assert!(report.contains("3 problem(s)"), "{report}");
    assert_eq!(snapshot_count(&db, MAPLECREST, TORONTO).await, 0);
}
