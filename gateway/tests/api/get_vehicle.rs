//! `dealeragent.inventory.get_vehicle` and the vehicle resource
//! `dealeragent://organization/{org}/rooftop/{roof}/vehicle/{vehicle_id}`
//! over real HTTP (docs/inventory.md): selectors, tenancy, withdrawn vehicles,
//! freshness, and resource ttl. Backend-neutral (SQLite, or PostgreSQL when
//! `DEALER_GATEWAY_TEST_POSTGRES_URL` is set).

use std::sync::Arc;
use std::time::Duration as StdDuration;

use crate::common::{
    TestApp, fresh_database, load_search_dealers, poll_until, spawn_on, test_source, test_vehicle,
    tool_error_code,
};
use chrono::{DateTime, Duration, SubsecRound as _, Utc};
use gateway::inventory::model::VehicleRecord;
use gateway::store::Store;
use serde_json::{Value, json};

const ORG: &str = "org.search-motors";
const NORTH: &str = "roof.search-north";
const SOUTH: &str = "roof.search-south";
const PRIVATE: &str = "roof.search-private";
const OTHER_ORG: &str = "org.other-group";
const EAST: &str = "roof.other-east";

const GET: &str = "dealeragent.inventory.get_vehicle";
const SEARCH: &str = "dealeragent.inventory.search";
const NOT_FOUND: &str = "dealeragent.resource.not_found";
const INVALID: &str = "dealeragent.validation.invalid";

struct Fixture {
    app: TestApp,
    store: Arc<dyn Store>,
    now: DateTime<Utc>,
    north: Vec<VehicleRecord>,
    south: Vec<VehicleRecord>,
    private: Vec<VehicleRecord>,
    east: Vec<VehicleRecord>,
}

/// NORTH: 4 vehicles (index 2 observed 3 hours ago, past the 1-hour SLA;
/// index 3 a new car without tenure); SOUTH, PRIVATE, EAST: 2 each.
async fn setup(inventory_refresh_seconds: u64) -> Fixture {
    let now = Utc::now().trunc_subsecs(0);
    let (dir, url) = fresh_database().await;
    let store = gateway::store::open(&url).await.expect("store opens");
    load_search_dealers(store.as_ref(), "dealers.yaml", now).await;
    let mut north: Vec<VehicleRecord> = (0..4)
        .map(|i| test_vehicle(ORG, NORTH, &format!("veh.{i:03}.n"), "1NRTH", i, now))
        .collect();
    north[1].make = "Honda".into();
    north[1].model = "Civic".into();
    north[1].availability_status = "on_hold".into();
    north[1].history_report_status = Some("available".into());
    north[1].certification_type = Some("dealer_certified".into());
    north[2].source.observed_at = now - Duration::hours(3);
    north[3].condition = "new".into();
    north[3].stocked_at = None;
    let south: Vec<VehicleRecord> = (0..2)
        .map(|i| {
            let mut v = test_vehicle(ORG, SOUTH, &format!("veh.{i:03}.s"), "2STHX", i, now);
            v.advertised_price = pricing::Money::from_minor(4_100_000, pricing::Currency::CAD);
            v
        })
        .collect();
    let private: Vec<VehicleRecord> = (0..2)
        .map(|i| test_vehicle(ORG, PRIVATE, &format!("veh.{i:03}.p"), "3PRVT", i, now))
        .collect();
    let east: Vec<VehicleRecord> = (0..2)
        .map(|i| test_vehicle(OTHER_ORG, EAST, &format!("veh.{i:03}.e"), "4EAST", i, now))
        .collect();
    for (org, rooftop, vehicles) in [
        (ORG, NORTH, &north),
        (ORG, SOUTH, &south),
        (ORG, PRIVATE, &private),
        (OTHER_ORG, EAST, &east),
    ] {
        store
            .create_snapshot(
                org,
                rooftop,
                &test_source(&format!("{rooftop}.csv"), now),
                vehicles,
            )
            .await
            .expect("snapshot created");
    }
    let app = spawn_on(dir, url, |s| {
        s.no_demo = true;
        s.inventory_refresh_seconds = inventory_refresh_seconds;
    })
    .await;
    Fixture {
        app,
        store,
        now,
        north,
        south,
        private,
        east,
    }
}

/// A successful get_vehicle: the vehicle.
async fn get_ok(app: &TestApp, args: Value) -> Value {
    let result = app.call_tool(GET, args.clone()).await;
    assert_eq!(tool_error_code(&result), None, "get {args}: {result}");
    result["structuredContent"].clone()
}

/// A failed get_vehicle: the DAP error object.
async fn get_err(app: &TestApp, args: Value, code: &str) -> Value {
    let result = app.call_tool(GET, args.clone()).await;
    assert_eq!(
        tool_error_code(&result).as_deref(),
        Some(code),
        "get {args}: {result}"
    );
    result["structuredContent"].clone()
}

fn by_id(v: &VehicleRecord) -> Value {
    json!({"organization_id": v.organization_id, "rooftop_id": v.rooftop_id, "vehicle_id": v.vehicle_id})
}

fn vehicle_uri(org: &str, rooftop: &str, vehicle_id: &str) -> String {
    format!("dealeragent://organization/{org}/rooftop/{rooftop}/vehicle/{vehicle_id}")
}

/// A vehicle document without the fields that depend on the instant it
/// was rendered (`used_vehicle.inventory_tenure.age_as_of`).
fn timeless(mut v: Value) -> Value {
    if let Some(tenure) = v
        .get_mut("used_vehicle")
        .and_then(|u| u.get_mut("inventory_tenure"))
        .and_then(Value::as_object_mut)
    {
        tenure.remove("age_as_of");
    }
    v
}

/// Read the vehicle resource: (document, ttlMs, cacheScope).
async fn read_resource(app: &TestApp, uri: &str) -> (Value, u64, String) {
    let reply = app.modern("resources/read", json!({"uri": uri})).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    let result = reply.result();
    let contents = &result["contents"][0];
    assert_eq!(contents["uri"], uri);
    assert_eq!(contents["mimeType"], "application/json");
    let doc: Value = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
    (
        doc,
        result["ttlMs"].as_u64().expect("ttlMs"),
        result["cacheScope"].as_str().unwrap().to_owned(),
    )
}

/// A resource read that must fail as unknown: -32602 with `data.uri`.
async fn read_missing(app: &TestApp, uri: &str) -> Value {
    let reply = app.modern("resources/read", json!({"uri": uri})).await;
    assert_eq!(reply.error_code(), -32602, "{}", reply.raw);
    assert_eq!(reply.body["error"]["data"]["uri"], uri, "{}", reply.raw);
    reply.body["error"].clone()
}

// ---------------------------------------------------------------------------
// Selectors
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_vehicle_is_found_by_vehicle_id_by_vin_and_by_stock_number_alike() {
    let fx = setup(5).await;
    let target = &fx.north[1];
    let base = json!({"organization_id": ORG, "rooftop_id": NORTH});
    let mut docs = Vec::new();
    for (key, value) in [
        ("vehicle_id", target.vehicle_id.clone()),
        ("vin", target.vin.clone().unwrap()),
        ("stock_number", target.stock_number.clone().unwrap()),
    ] {
        let mut args = base.clone();
        args[key] = json!(value);
        docs.push(timeless(get_ok(&fx.app, args).await));
    }
    assert_eq!(docs[0], docs[1]);
    assert_eq!(docs[0], docs[2]);
    let v = &docs[0];
    assert_eq!(v["vehicle_id"], target.vehicle_id.as_str());
    assert_eq!(v["organization_id"], ORG);
    assert_eq!(v["rooftop_id"], NORTH);
    assert_eq!(v["vin"], target.vin.clone().unwrap());
    assert_eq!(v["stock_number"], target.stock_number.clone().unwrap());
    assert_eq!(v["make"], "Honda");
    assert_eq!(v["model"], "Civic");
    assert_eq!(v["odometer"], json!({"value": 18_420, "unit": "mi"}));
    assert_eq!(
        v["advertised_price"]["amount"],
        json!({"amount_minor": 3_249_500, "currency": "USD"})
    );
    assert_eq!(v["used_vehicle"]["history_report_status"], "available");
    assert_eq!(v["used_vehicle"]["certification_type"], "dealer_certified");
    assert_eq!(v["used_vehicle"]["inventory_tenure"]["age_days"], json!(10));

    // Provenance, freshness and availability as published, asserted.
    let source = &v["provenance"]["sources"][0];
    assert_eq!(source["source_name"], target.source.source_name.as_str());
    assert_eq!(source["authority"], "dealer_asserted");
    assert!(
        source["content_digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(v["freshness"]["state"], "current");
    assert_eq!(v["freshness"]["max_age_seconds"], json!(3600));
    assert_eq!(v["availability"]["status"], "on_hold");
    assert_eq!(v["availability"]["authority_status"], "asserted");
    assert_eq!(
        v["availability"]["human_verification_required"],
        json!(true)
    );

    // The same document as the vehicle in a full search (the default page
    // is concise: docs/inventory.md "Detail and the result budget").
    let search = fx
        .app
        .call_tool(
            SEARCH,
            json!({"organization_id": ORG, "filters": {"vin": target.vin}, "detail": "full"}),
        )
        .await;
    assert_eq!(tool_error_code(&search), None);
    assert_eq!(
        timeless(search["structuredContent"]["vehicles"][0].clone()),
        docs[0]
    );
}

#[tokio::test]
async fn no_selector_or_two_selectors_is_a_validation_error() {
    let fx = setup(5).await;
    let target = &fx.north[0];
    let base = json!({"organization_id": ORG, "rooftop_id": NORTH});
    let none = base.clone();
    let mut two = base.clone();
    two["vehicle_id"] = json!(target.vehicle_id);
    two["vin"] = json!(target.vin);
    let mut three = two.clone();
    three["stock_number"] = json!(target.stock_number);
    let mut vin_and_stock = base.clone();
    vin_and_stock["vin"] = json!(target.vin);
    vin_and_stock["stock_number"] = json!(target.stock_number);
    for args in [none, two, three, vin_and_stock] {
        let err = get_err(&fx.app, args.clone(), INVALID).await;
        let field_errors = err["details"]["field_errors"]
            .as_array()
            .expect("field errors");
        assert!(
            field_errors
                .iter()
                // The selector rule belongs to the arguments as a whole:
                // DAP 0.1 spells that pointer `/` (it requires a leading `/`).
                .any(|e| e["keyword"] == "oneOf" && e["instance_location"] == "/"),
            "{args}: {err}"
        );
        let text = err.to_string();
        assert!(
            !text.contains(target.vin.as_deref().unwrap()),
            "no echo: {text}"
        );
    }
    // Malformed selectors are schema errors too, not lookups.
    for args in [
        json!({"organization_id": ORG, "rooftop_id": NORTH, "vin": "not-a-vin"}),
        json!({"organization_id": ORG, "rooftop_id": NORTH, "stock_number": ""}),
        json!({"organization_id": ORG, "vehicle_id": target.vehicle_id}),
    ] {
        get_err(&fx.app, args, INVALID).await;
    }
}

#[tokio::test]
async fn unknown_vehicles_and_other_tenants_vehicles_are_the_same_not_found() {
    let fx = setup(5).await;
    let north = &fx.north[0];
    let cases = [
        // Absent vehicle, VIN, stock number.
        json!({"organization_id": ORG, "rooftop_id": NORTH, "vehicle_id": "veh.nothing"}),
        json!({"organization_id": ORG, "rooftop_id": NORTH, "vin": "1HGCM82633A004352"}),
        json!({"organization_id": ORG, "rooftop_id": NORTH, "stock_number": "ZZ-404"}),
        // A real vehicle asked at the wrong rooftop of its organization.
        json!({"organization_id": ORG, "rooftop_id": SOUTH, "vehicle_id": north.vehicle_id}),
        json!({"organization_id": ORG, "rooftop_id": SOUTH, "vin": north.vin}),
        // Unknown organization or rooftop.
        json!({"organization_id": "org.nobody", "rooftop_id": NORTH, "vehicle_id": north.vehicle_id}),
        json!({"organization_id": ORG, "rooftop_id": "roof.nowhere", "vehicle_id": north.vehicle_id}),
        // A rooftop of another organization, with its own vehicle.
        json!({"organization_id": ORG, "rooftop_id": EAST, "vehicle_id": fx.east[0].vehicle_id}),
        json!({"organization_id": OTHER_ORG, "rooftop_id": NORTH, "vehicle_id": north.vehicle_id}),
        // A rooftop closed to anonymous readers, with its own vehicle.
        json!({"organization_id": ORG, "rooftop_id": PRIVATE, "vehicle_id": fx.private[0].vehicle_id}),
        json!({"organization_id": ORG, "rooftop_id": PRIVATE, "vin": fx.private[0].vin}),
        json!({"organization_id": ORG, "rooftop_id": PRIVATE, "stock_number": fx.private[0].stock_number}),
    ];
    let mut messages = std::collections::BTreeSet::new();
    for args in cases {
        let err = get_err(&fx.app, args.clone(), NOT_FOUND).await;
        assert!(err.get("details").is_none(), "{err}");
        assert_eq!(err["retryable"], json!(false));
        let text = err.to_string();
        for id in [
            &fx.private[0].vehicle_id,
            &fx.east[0].vehicle_id,
            &north.vehicle_id,
        ] {
            assert!(!text.contains(id.as_str()), "{id} echoed: {text}");
        }
        messages.insert(err["message"].as_str().unwrap().to_owned());
    }
    assert_eq!(messages.len(), 1, "{messages:?}");
    // The other organization reads its own vehicle.
    let own = get_ok(&fx.app, by_id(&fx.east[0])).await;
    assert_eq!(own["organization_id"], OTHER_ORG);
    // And the SOUTH vehicle at SOUTH (CAD).
    let south = get_ok(&fx.app, by_id(&fx.south[1])).await;
    assert_eq!(south["advertised_price"]["amount"]["currency"], "CAD");
    assert_eq!(south["freshness"]["max_age_seconds"], json!(900));
}

// ---------------------------------------------------------------------------
// Freshness
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_vehicle_observed_longer_ago_than_the_inventory_sla_is_stale() {
    let fx = setup(5).await;
    let stale = get_ok(&fx.app, by_id(&fx.north[2])).await;
    assert_eq!(stale["freshness"]["state"], "stale");
    let observed = fx.north[2].source.observed_at;
    let until = DateTime::parse_from_rfc3339(stale["freshness"]["valid_until"].as_str().unwrap())
        .unwrap()
        .with_timezone(&Utc);
    assert_eq!(until, observed + Duration::seconds(3600));
    assert!(until < fx.now);
    // Stale is not withdrawn: the asserted status is still reported.
    assert_eq!(stale["availability"]["status"], "available");
    assert_eq!(stale["availability"]["authority_status"], "asserted");
    // A new car without tenure has no used-vehicle summary.
    let new_car = get_ok(&fx.app, by_id(&fx.north[3])).await;
    assert!(new_car.get("used_vehicle").is_none(), "{new_car}");
    assert_eq!(new_car["freshness"]["state"], "current");
}

#[tokio::test]
async fn a_vehicle_dropped_by_a_newer_snapshot_is_withdrawn_and_never_available() {
    let fx = setup(1).await;
    let dropped = fx.north[0].clone();
    assert_eq!(dropped.availability_status, "available");
    let before = get_ok(&fx.app, by_id(&dropped)).await;
    assert_eq!(before["freshness"]["state"], "current");

    let mut next: Vec<VehicleRecord> = fx.north[1..].to_vec();
    next.push(test_vehicle(ORG, NORTH, "veh.900.n", "1NRTH", 900, fx.now));
    fx.store
        .create_snapshot(ORG, NORTH, &test_source("north-2.csv", fx.now), &next)
        .await
        .unwrap();
    let landed = poll_until(StdDuration::from_secs(15), || async {
        let r = fx.app.call_tool(GET, by_id(&dropped)).await;
        tool_error_code(&r).is_none() && r["structuredContent"]["freshness"]["state"] == "withdrawn"
    })
    .await;
    assert!(landed, "the new snapshot is served within 15 s");

    let selectors = [
        by_id(&dropped),
        json!({"organization_id": ORG, "rooftop_id": NORTH, "vin": dropped.vin}),
        json!({"organization_id": ORG, "rooftop_id": NORTH, "stock_number": dropped.stock_number}),
    ];
    for args in selectors {
        let v = get_ok(&fx.app, args.clone()).await;
        assert_eq!(v["vehicle_id"], dropped.vehicle_id.as_str(), "{args}");
        assert_eq!(v["freshness"]["state"], "withdrawn");
        assert_ne!(v["availability"]["status"], "available");
        assert_eq!(v["availability"]["status"], "unknown");
        assert_eq!(v["availability"]["authority_status"], "asserted");
        assert_eq!(
            v["availability"]["human_verification_required"],
            json!(true)
        );
        // Provenance still names where it was published.
        assert_eq!(
            v["provenance"]["sources"][0]["source_name"],
            dropped.source.source_name.as_str()
        );
    }
    // The new vehicle is found; the kept ones are current.
    let added = get_ok(
        &fx.app,
        json!({"organization_id": ORG, "rooftop_id": NORTH, "vehicle_id": "veh.900.n"}),
    )
    .await;
    assert_eq!(added["freshness"]["state"], "current");
    let kept = get_ok(&fx.app, by_id(&fx.north[1])).await;
    assert_eq!(kept["freshness"]["state"], "current");

    // Search no longer lists the withdrawn vehicle.
    let search = fx
        .app
        .call_tool(
            SEARCH,
            json!({"organization_id": ORG, "rooftop_ids": [NORTH]}),
        )
        .await;
    assert_eq!(tool_error_code(&search), None);
    let ids: Vec<&str> = search["structuredContent"]["vehicles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["vehicle_id"].as_str().unwrap())
        .collect();
    assert!(!ids.contains(&dropped.vehicle_id.as_str()), "{ids:?}");
    assert!(ids.contains(&"veh.900.n"));

    // The resource agrees, with ttl 0.
    let (doc, ttl, _) = read_resource(&fx.app, &vehicle_uri(ORG, NORTH, &dropped.vehicle_id)).await;
    assert_eq!(doc["freshness"]["state"], "withdrawn");
    assert_eq!(ttl, 0);
}

// ---------------------------------------------------------------------------
// Vehicle resource
// ---------------------------------------------------------------------------

#[tokio::test]
async fn the_vehicle_resource_is_the_get_vehicle_document_with_a_short_ttl() {
    let fx = setup(5).await;
    for v in [&fx.north[0], &fx.north[1], &fx.north[3], &fx.south[0]] {
        let (doc, ttl, scope) =
            read_resource(&fx.app, &vehicle_uri(ORG, &v.rooftop_id, &v.vehicle_id)).await;
        let tool = get_ok(&fx.app, by_id(v)).await;
        assert_eq!(timeless(doc), timeless(tool), "{}", v.vehicle_id);
        assert!(ttl > 0 && ttl <= 60_000, "ttl {ttl} for a current vehicle");
        assert_eq!(scope, "public");
    }
}

#[tokio::test]
async fn a_stale_vehicle_resource_has_ttl_zero() {
    let fx = setup(5).await;
    let stale = &fx.north[2];
    let (doc, ttl, _) = read_resource(&fx.app, &vehicle_uri(ORG, NORTH, &stale.vehicle_id)).await;
    assert_eq!(doc["freshness"]["state"], "stale");
    assert_eq!(ttl, 0);
    assert_eq!(timeless(doc), timeless(get_ok(&fx.app, by_id(stale)).await));
}

#[tokio::test]
async fn unknown_or_invisible_vehicle_resources_are_invalid_params_with_the_uri() {
    let fx = setup(5).await;
    let uris = [
        vehicle_uri(ORG, NORTH, "veh.nothing"),
        vehicle_uri(ORG, SOUTH, &fx.north[0].vehicle_id),
        vehicle_uri(ORG, "roof.nowhere", &fx.north[0].vehicle_id),
        vehicle_uri("org.nobody", NORTH, &fx.north[0].vehicle_id),
        vehicle_uri(ORG, EAST, &fx.east[0].vehicle_id),
        vehicle_uri(OTHER_ORG, NORTH, &fx.north[0].vehicle_id),
        vehicle_uri(ORG, PRIVATE, &fx.private[0].vehicle_id),
        // A VIN is not a vehicle id.
        vehicle_uri(ORG, NORTH, fx.north[0].vin.as_deref().unwrap()),
    ];
    let mut messages = std::collections::BTreeSet::new();
    for uri in &uris {
        let error = read_missing(&fx.app, uri).await;
        messages.insert(error["message"].as_str().unwrap().to_owned());
    }
    assert_eq!(messages.len(), 1, "{messages:?}");
}
