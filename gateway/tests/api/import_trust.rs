//! Imports an operator can trust (docs/inventory-feeds.md "Commands" and
//! "The removal guard", docs/console.md "Imports", docs/operations.md
//! "Metrics", docs/pricing.md "Listing"), through the real binary:
//! - a dry run names what it would add, change and remove by stock number,
//!   and `--json` is one JSON document listing every change;
//! - a truncated feed is refused whole by the removal guard (exit 2,
//!   nothing written) and goes through when forced;
//! - a refused import shows on the console's imports page to the managers
//!   of its organization only, and in `/metrics`;
//! - `programs list` gives every stored revision its status.
//!
//! Runs on SQLite, and on PostgreSQL when `DEALER_GATEWAY_TEST_POSTGRES_URL`
//! is set.

use std::path::{Path, PathBuf};
use std::process::Output;

use chrono::{TimeDelta, Utc};
use gateway::auth::RooftopScope;
use gateway::auth::api_token::{self, TokenRequest};
use serde_json::{Value, json};

use crate::common::{TestApp, run_cli, spawn, temp_dir, test_database_url, text};

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

/// A fresh store with the demo dealers file imported (no inventory).
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

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The one JSON document a `--json` run prints on stdout.
fn document(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", text(o)))
}

/// The stock numbers of the document's changes of `kind`, sorted.
fn stocks(doc: &Value, kind: &str) -> Vec<String> {
    let mut out: Vec<String> = doc["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter(|c| c["change"] == kind)
        .map(|c| c["stock_number"].as_str().expect("stock_number").to_owned())
        .collect();
    out.sort();
    out
}

async fn snapshots(db: &str, org: &str, rooftop: &str) -> Vec<gateway::store::SnapshotRecord> {
    gateway::store::open(db)
        .await
        .unwrap()
        .snapshot_history(org, rooftop, 100)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_dry_run_names_each_vehicle_it_would_add_change_and_remove_and_json_lists_them() {
    let (_dir, db) = store_with_dealers().await;
    let first = import(&db, &fixture("lakeshore.csv"), LAKESHORE, &[]);
    assert!(first.status.success(), "{}", text(&first));
    // The first import names what it added, under each rooftop's line.
    let out = stdout(&first);
    assert!(out.contains("    added: LC1001, LC1002, LC1003\n"), "{out}");
    assert!(out.contains("    added: GR2001\n"), "{out}");

    // Chicago's next file: LC1001 unchanged (provenance only), LC1002
    // repriced and available again, LC1003 gone, LC1005 new.
    let changed = fixture("lakeshore-changed.csv");
    let dry = import(
        &db,
        &changed,
        LAKESHORE,
        &["--rooftop", CHICAGO, "--dry-run"],
    );
    assert!(dry.status.success(), "{}", text(&dry));
    let out = stdout(&dry);
    for line in [
        "vehicles added 1, changed 1, unchanged 1, removed 1",
        "    would add: LC1005\n",
        "    would change: LC1002 (advertised_price, availability_status)\n",
        "    would remove: LC1003\n",
    ] {
        assert!(out.contains(line), "no {line:?} in:\n{out}");
    }
    assert!(
        !out.contains("LC1001"),
        "an unchanged vehicle is not listed: {out}"
    );

    // --json: one document, every change with its ids, nothing written.
    let dry = import(
        &db,
        &changed,
        LAKESHORE,
        &["--rooftop", CHICAGO, "--dry-run", "--json"],
    );
    assert!(dry.status.success(), "{}", text(&dry));
    let doc = document(&dry);
    assert_eq!(doc["command"], "import inventory");
    assert_eq!(doc["dry_run"], true);
    assert_eq!(doc["outcome"], "planned");
    assert_eq!(doc["format"], "dap-csv");
    assert_eq!(doc["organization_id"], LAKESHORE);
    assert_eq!(stocks(&doc, "added"), ["LC1005"]);
    assert_eq!(stocks(&doc, "changed"), ["LC1002"]);
    assert_eq!(stocks(&doc, "removed"), ["LC1003"]);
    let removed = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["change"] == "removed")
        .unwrap();
    assert_eq!(removed["rooftop_id"], CHICAGO);
    assert_eq!(removed["vin"].as_str().map(str::len), Some(17), "{removed}");
    assert!(removed["vehicle_id"].as_str().unwrap().starts_with("veh."));
    let changed_entry = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["change"] == "changed")
        .unwrap();
    assert_eq!(
        changed_entry["fields"],
        json!(["advertised_price", "availability_status"])
    );
    assert_eq!(
        doc["rooftops"],
        json!([{
            "rooftop_id": CHICAGO, "snapshot_version": 2, "written": false,
            "previous_vehicles": 3, "rows_read": 3,
            "added": 1, "changed": 1, "unchanged": 1, "removed": 1
        }])
    );
    assert_eq!(snapshots(&db, LAKESHORE, CHICAGO).await.len(), 1);

    // The real import reports the same changes as done.
    let real = import(&db, &changed, LAKESHORE, &["--rooftop", CHICAGO, "--json"]);
    assert!(real.status.success(), "{}", text(&real));
    let doc = document(&real);
    assert_eq!(doc["outcome"], "imported");
    assert_eq!(doc["rooftops"][0]["written"], true);
    assert_eq!(stocks(&doc, "removed"), ["LC1003"]);
    assert_eq!(snapshots(&db, LAKESHORE, CHICAGO).await.len(), 2);
}

/// `demo generate` of `vehicles` on one rooftop into `dir/bundle`; the
/// bundle, its feed, and the feed's organization and rooftop.
fn generate(db: &str, dir: &Path, vehicles: &str) -> (PathBuf, PathBuf, String, String) {
    let bundle = dir.join("bundle");
    let out = run_cli(
        db,
        &[
            "demo",
            "generate",
            "--vehicles",
            vehicles,
            "--rooftops",
            "1",
            "--seed",
            "7",
            "--out",
            &bundle.display().to_string(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let feed = std::fs::read_dir(bundle.join("inventory"))
        .expect("feeds")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "csv"))
        .expect("a feed");
    let mut reader = csv::Reader::from_path(&feed).expect("feed");
    let headers = reader.headers().expect("header").clone();
    let row = reader.records().next().expect("a row").expect("a record");
    let column = |name: &str| {
        let at = headers.iter().position(|h| h == name).expect("column");
        row[at].to_owned()
    };
    (
        bundle,
        feed,
        column("organization_id"),
        column("rooftop_id"),
    )
}

/// The feed's header and its first `rows` records, as a new file.
fn truncated(feed: &Path, rows: usize, into: &Path) -> String {
    let mut reader = csv::Reader::from_path(feed).expect("feed");
    let mut writer = csv::Writer::from_path(into).expect("truncated feed");
    writer
        .write_record(reader.headers().expect("header"))
        .unwrap();
    for record in reader.records().take(rows) {
        writer.write_record(&record.expect("record")).unwrap();
    }
    writer.flush().unwrap();
    into.display().to_string()
}

#[tokio::test]
async fn a_large_listing_is_bounded_in_text_and_complete_in_json() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let (bundle, _, _, _) = generate(&db, &dir, "40");
    let shown = bundle.display().to_string();
    let dry = run_cli(&db, &["import", "bundle", &shown, "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    let out = stdout(&dry);
    let listing = out
        .lines()
        .find(|l| l.starts_with("    would add: "))
        .unwrap_or_else(|| panic!("no listing in:\n{out}"));
    assert_eq!(listing.matches(", ").count(), 9, "ten names: {listing}");
    assert!(
        listing.ends_with(" and 30 more (--json lists every one)"),
        "{listing}"
    );

    let dry = run_cli(&db, &["import", "bundle", &shown, "--dry-run", "--json"]);
    assert!(dry.status.success(), "{}", text(&dry));
    let doc = document(&dry);
    assert_eq!(doc["command"], "import bundle");
    assert_eq!(doc["outcome"], "planned");
    assert_eq!(doc["dealers"]["outcome"], "planned");
    let files = doc["files"].as_array().expect("files");
    assert_eq!(files.len(), 1);
    let added = stocks(&files[0], "added");
    assert_eq!(added.len(), 40);
    added.windows(2).for_each(|w| assert_ne!(w[0], w[1]));
    assert_eq!(files[0]["rooftops"][0]["added"], 40);
    assert_eq!(doc["files_with_problems"], json!([]));
}

#[tokio::test]
async fn a_truncated_feed_is_refused_by_the_removal_guard_and_passes_when_forced() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let (bundle, feed, org, rooftop) = generate(&db, &dir, "5");
    let imported = run_cli(&db, &["import", "bundle", &bundle.display().to_string()]);
    assert!(imported.status.success(), "{}", text(&imported));
    let before = snapshots(&db, &org, &rooftop).await;
    assert_eq!(before.len(), 1);
    assert_eq!(before[0].vehicle_count, 5);

    // One row of five: four removed (80 %) is refused, and nothing is
    // written; the plan still names the four.
    let one_row = truncated(&feed, 1, &dir.join("truncated.csv"));
    for extra in [&[][..], &["--dry-run"][..]] {
        let refused = import(&db, &one_row, &org, extra);
        assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
        let report = stderr(&refused);
        for needle in [
            format!(
                "rooftop {rooftop} would lose 4 of its 5 vehicles (80%, more than the 50% allowed)"
            ),
            "nothing was imported".to_owned(),
            "--allow-removals".to_owned(),
            "--max-removal-percent".to_owned(),
        ] {
            assert!(report.contains(&needle), "no {needle:?} in:\n{report}");
        }
        let out = stdout(&refused);
        assert!(out.contains("removed 4"), "{out}");
        assert!(out.contains("    would remove: "), "{out}");
        assert_eq!(snapshots(&db, &org, &rooftop).await, before, "{extra:?}");
    }
    let refused = import(&db, &one_row, &org, &["--json"]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    let doc = document(&refused);
    assert_eq!(doc["outcome"], "removal_guard");
    assert_eq!(doc["rooftops"][0]["written"], false);
    assert_eq!(stocks(&doc, "removed").len(), 4);
    assert_eq!(
        doc["removal_refusals"],
        json!([{"rooftop_id": rooftop, "removed": 4, "previous": 5, "max_percent": 50}])
    );
    // A bundle carrying the truncated feed is refused the same way.
    std::fs::copy(&one_row, &feed).unwrap();
    let refused = run_cli(&db, &["import", "bundle", &bundle.display().to_string()]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        stderr(&refused).contains("would lose 4 of its 5"),
        "{}",
        text(&refused)
    );
    assert_eq!(snapshots(&db, &org, &rooftop).await, before);

    // A larger share lets it through; so does --allow-removals.
    let lenient = import(
        &db,
        &one_row,
        &org,
        &["--max-removal-percent", "80", "--dry-run"],
    );
    assert!(lenient.status.success(), "{}", text(&lenient));
    let forced = import(&db, &one_row, &org, &["--allow-removals"]);
    assert!(forced.status.success(), "{}", text(&forced));
    let after = snapshots(&db, &org, &rooftop).await;
    assert_eq!(after.len(), 2);
    assert_eq!(after[0].vehicle_count, 1);
    assert_eq!(after[0].summary.vehicles_removed, 4);
    // The share is checked (0 to 100).
    let bad = import(&db, &one_row, &org, &["--max-removal-percent", "101"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
}

/// A console token of `org` for `rooftops` (with the metrics scope, so
/// the same token scrapes /metrics).
async fn manager(app: &TestApp, org: &str, rooftops: &[&str]) -> String {
    let store = gateway::store::open(&app.database_url)
        .await
        .expect("store");
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let mut known = api_token::known_scopes(&catalog);
    known.extend(catalog.gateway_scopes.iter().map(|s| s.scope.clone()));
    let now = Utc::now();
    let request = TokenRequest {
        subject: "manager:imports".to_owned(),
        organization_id: org.to_owned(),
        rooftops: RooftopScope::Rooftops(rooftops.iter().map(|r| (*r).to_owned()).collect()),
        scopes: [
            "dealergateway:console:read",
            "dealergateway:metrics:read",
            api_token::SCOPE_INVENTORY_READ,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect(),
        purpose: "imports test".to_owned(),
        expires_at: now + TimeDelta::days(1),
    };
    api_token::create(store.as_ref(), &request, &known, now)
        .await
        .expect("token created")
        .token
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// Sign in with `token`; the imports page of `rooftop` (status, body).
async fn imports_page(app: &TestApp, token: &str, rooftop: &str) -> (u16, String) {
    let signed = client()
        .post(format!("{}/console/sign-in", app.base()))
        .header("origin", app.base())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={token}"))
        .send()
        .await
        .expect("sign-in");
    assert_eq!(signed.status(), 303);
    let cookie = signed.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let page = client()
        .get(format!("{}/console/rooftop/{rooftop}/imports", app.base()))
        .header("cookie", cookie)
        .send()
        .await
        .expect("page");
    (page.status().as_u16(), page.text().await.expect("body"))
}

/// The rows of the page's refused-imports table.
fn refused_rows(body: &str) -> Vec<&str> {
    body.split("<table id=\"refused-imports\"")
        .nth(1)
        .map(|t| t.split("</table>").next().unwrap_or_default())
        .map(|t| t.split("<tr>").skip(2).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_refused_import_shows_on_its_organizations_imports_page_only_and_in_metrics() {
    let app = spawn().await;
    let db = app.database_url.clone();
    let chicago = manager(&app, LAKESHORE, &[CHICAGO]).await;
    let (status, body) = imports_page(&app, &chicago, CHICAGO).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("No import concerning this rooftop was refused."),
        "{body}"
    );
    // 1. A feed with 13 problems, for the organization (no --rooftop: its
    //    rooftops are not known, so it concerns every one).
    let bad = import(&db, &fixture("lakeshore-bad.csv"), LAKESHORE, &[]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    // 2. A 3-row feed for the demo's Chicago rooftop: the removal guard.
    let guard = import(
        &db,
        &fixture("lakeshore-changed.csv"),
        LAKESHORE,
        &["--rooftop", CHICAGO],
    );
    assert_eq!(guard.status.code(), Some(2), "{}", text(&guard));
    assert!(
        stderr(&guard).contains("refused by the removal guard"),
        "{}",
        text(&guard)
    );
    // 3. A programs file that breaks the schema, and 4. a dealers file of
    //    the organization that does.
    let programs = app.db_dir.join("programs.yaml");
    std::fs::write(&programs, "programs:\n  - program_id: x\n").unwrap();
    let out = run_cli(
        &db,
        &[
            "import",
            "programs",
            &programs.display().to_string(),
            "--organization",
            LAKESHORE,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let dealers = app.db_dir.join("dealers.yaml");
    std::fs::write(
        &dealers,
        format!("organizations:\n  - organization_id: {LAKESHORE}\n    name: Lakeshore\n"),
    )
    .unwrap();
    let out = run_cli(&db, &["import", "dealers", &dealers.display().to_string()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    // 5. Maplecrest's dealers file listing Lakeshore's Chicago rooftop: the
    //    store refuses it (the rooftop is kept by another organization).
    let demo =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/dealers.yaml"))
            .unwrap();
    let mut doc: Value = yaml_serde::from_str(&demo).unwrap();
    let orgs = doc["organizations"].as_array().unwrap().clone();
    let find = |id: &str| {
        orgs.iter()
            .find(|o| o["organization_id"] == id)
            .unwrap()
            .clone()
    };
    let mut maplecrest = find(MAPLECREST);
    let chicago_rooftop = find(LAKESHORE)["rooftops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rooftop_id"] == CHICAGO)
        .unwrap()
        .clone();
    maplecrest["rooftops"]
        .as_array_mut()
        .unwrap()
        .push(chicago_rooftop);
    doc["organizations"] = json!([maplecrest]);
    let stealing = app.db_dir.join("maplecrest-dealers.json");
    std::fs::write(&stealing, doc.to_string()).unwrap();
    let out = run_cli(&db, &["import", "dealers", &stealing.display().to_string()]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(LAKESHORE),
        "the operator is told who: {}",
        text(&out)
    );
    // A dry run is no import: not recorded.
    let dry = import(
        &db,
        &fixture("lakeshore-bad.csv"),
        LAKESHORE,
        &["--dry-run"],
    );
    assert_eq!(dry.status.code(), Some(2), "{}", text(&dry));

    // Chicago's manager sees all four, newest first.
    let (status, body) = imports_page(&app, &chicago, CHICAGO).await;
    assert_eq!(status, 200, "{body}");
    let rows = refused_rows(&body);
    assert_eq!(rows.len(), 4, "{body}");
    assert!(
        rows[0].contains("Dealers file") && rows[0].contains("dealers.yaml"),
        "{}",
        rows[0]
    );
    assert!(
        rows[1].contains("Programs file") && rows[1].contains("programs.yaml"),
        "{}",
        rows[1]
    );
    assert!(rows[2].contains("lakeshore-changed.csv"), "{}", rows[2]);
    assert!(rows[2].contains("removal guard"), "{}", rows[2]);
    assert!(
        rows[2].contains(&format!("rooftop {CHICAGO} would lose ")),
        "{}",
        rows[2]
    );
    assert!(rows[3].contains("lakeshore-bad.csv"), "{}", rows[3]);
    assert!(
        rows[3].contains("13 problem(s) in this dap-csv file"),
        "{}",
        rows[3]
    );
    assert!(rows[3].contains("<td class=\"num\">13</td>"), "{}", rows[3]);

    // Grand Rapids' manager: not the Chicago feed the guard refused, but
    // the organization's files.
    let grand_rapids = manager(&app, LAKESHORE, &[GRAND_RAPIDS]).await;
    let (_, body) = imports_page(&app, &grand_rapids, GRAND_RAPIDS).await;
    let rows = refused_rows(&body);
    assert_eq!(rows.len(), 3, "{body}");
    assert!(!body.contains("lakeshore-changed.csv"), "{body}");

    assert!(!body.contains("maplecrest-dealers.json"), "{body}");

    // Another organization's manager sees none of them, only its own
    // refused dealers file, in the gateway's words: the store's message
    // names Lakeshore, the page does not.
    let toronto = manager(&app, MAPLECREST, &[TORONTO]).await;
    let (status, body) = imports_page(&app, &toronto, TORONTO).await;
    assert_eq!(status, 200, "{body}");
    let rows = refused_rows(&body);
    assert_eq!(rows.len(), 1, "{body}");
    assert!(rows[0].contains("maplecrest-dealers.json"), "{}", rows[0]);
    assert!(
        rows[0].contains("the store refused the dealers file"),
        "{}",
        rows[0]
    );
    assert!(
        !body.contains("lakeshore"),
        "another organization named: {body}"
    );
    for file in [
        "lakeshore-bad.csv",
        "lakeshore-changed.csv",
        "programs.yaml",
        "dealers.yaml",
    ] {
        assert!(
            !body.contains(file),
            "{file} shown to another organization: {body}"
        );
    }

    // /metrics counts them by kind and outcome, no tenant in the labels.
    let scraped = client()
        .get(format!("{}/metrics", app.base()))
        .bearer_auth(&chicago)
        .send()
        .await
        .expect("scrape");
    assert_eq!(scraped.status(), 200);
    let metrics = scraped.text().await.unwrap();
    let sample = |kind: &str, outcome: &str| -> Option<f64> {
        let prefix =
            format!("dealer_gateway_imports_total{{kind=\"{kind}\",outcome=\"{outcome}\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&prefix)?.parse().ok())
    };
    assert_eq!(sample("inventory", "invalid"), Some(1.0), "{metrics}");
    assert_eq!(sample("inventory", "removal_guard"), Some(1.0), "{metrics}");
    assert_eq!(sample("programs", "invalid"), Some(1.0), "{metrics}");
    assert_eq!(sample("dealers", "invalid"), Some(1.0), "{metrics}");
    assert_eq!(sample("dealers", "refused"), Some(1.0), "{metrics}");
    assert_eq!(sample("inventory", "imported"), Some(0.0), "{metrics}");
    assert!(
        metrics
            .lines()
            .filter(|l| l.starts_with("dealer_gateway_imports_total"))
            .all(|l| !l.contains("org.") && !l.contains("roof.")),
        "{metrics}"
    );
}

const PROGRAMS: &str = r#"
programs:
  - program_id: pl-cash
    revision: 1
    name: Customer cash
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 150000, currency: USD}}
    stacking: {group: oem, combinability: stackable}
  - program_id: pl-spring
    revision: 1
    name: Spring bonus
    kind: bonus_cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 50000, currency: USD}}
    valid_from: "2099-03-01T00:00:00Z"
    valid_until: "2099-06-01T00:00:00Z"
    stacking: {group: oem, combinability: stackable}
  - program_id: pl-loyalty
    revision: 1
    name: Owner loyalty
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 75000, currency: USD}}
    stacking: {group: loyalty, combinability: stackable}
"#;

#[tokio::test]
async fn programs_list_gives_every_revision_its_status_with_why() {
    let (dir, db) = store_with_dealers().await;
    let file = dir.join("programs.yaml");
    std::fs::write(&file, PROGRAMS).unwrap();
    let file = file.display().to_string();
    let out = run_cli(
        &db,
        &[
            "import",
            "programs",
            &file,
            "--organization",
            LAKESHORE,
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let doc = document(&out);
    assert_eq!(doc["outcome"], "imported");
    assert_eq!(doc["added"].as_array().map(Vec::len), Some(3), "{doc}");
    assert_eq!(doc["unchanged"], json!([]));
    let out = run_cli(
        &db,
        &[
            "programs",
            "withdraw",
            "--organization",
            LAKESHORE,
            "pl-loyalty",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    // A revision stored before whole-set validation existed, naming a
    // program that is not stored: evaluations report it unusable.
    let store = gateway::store::open(&db).await.unwrap();
    let now = chrono::SubsecRound::trunc_subsecs(Utc::now(), 6);
    store
        .import_programs(
            LAKESHORE,
            &[gateway::store::ProgramRecord {
                program_id: "pl-orphan".into(),
                revision: 1,
                doc: json!({
                    "program_id": "pl-orphan", "revision": 1, "name": "Orphan", "kind": "cash",
                    "direction": "discount",
                    "amount": {"status": "known", "amount": {"amount_minor": 100, "currency": "USD"}},
                    "stacking": {"group": "oem", "combinability": "stackable",
                                 "not_combinable_with": ["pl-ghost"]}
                }),
                rule_hash: None,
                imported_at: now,
                source: crate::common::test_source("programs", now),
            }],
        )
        .await
        .unwrap();

    let out = run_cli(&db, &["programs", "list", "--organization", LAKESHORE]);
    assert!(out.status.success(), "{}", text(&out));
    let listing = stdout(&out);
    for needle in [
        "4 revision(s) of 4 program(s) — active 1, scheduled 1, expired 0, superseded 0, withdrawn 1, unusable 1",
        "  pl-cash revision 1: active\n      Customer cash — cash discount, 1,500.00 USD; no validity limit",
        "  pl-spring revision 1: scheduled (starts 2099-03-01T00:00:00Z)",
        "valid from 2099-03-01T00:00:00Z until 2099-06-01T00:00:00Z",
        "  pl-loyalty revision 1: withdrawn (withdrawn at ",
        "  pl-orphan revision 1: unusable (",
        "pl-ghost",
    ] {
        assert!(listing.contains(needle), "no {needle:?} in:\n{listing}");
    }

    let out = run_cli(
        &db,
        &["programs", "list", "--organization", LAKESHORE, "--json"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let listed = document(&out);
    let status: Vec<(&str, &str)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["program_id"].as_str().unwrap(),
                r["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        status,
        [
            ("pl-cash", "active"),
            ("pl-loyalty", "withdrawn"),
            ("pl-orphan", "unusable"),
            ("pl-spring", "scheduled"),
        ]
    );
    assert!(listed[1]["at"].as_str().is_some(), "{listed}");
    assert!(
        listed[2]["problems"][0]
            .as_str()
            .unwrap()
            .contains("pl-ghost"),
        "{listed}"
    );
    assert_eq!(listed[3]["valid_from"], "2099-03-01T00:00:00Z");
    assert_eq!(listed[0]["amount"], "1,500.00 USD");

    // An unknown organization is bad input.
    let out = run_cli(&db, &["programs", "list", "--organization", "org.nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}
