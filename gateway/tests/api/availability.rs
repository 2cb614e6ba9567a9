//! `dealeragent.inventory.verify_availability` over real HTTP (docs/availability.md)
//! against a fake dealer system the test starts on 127.0.0.1: bands, every
//! failure mode, reuse within the band, coalescing, the circuit breaker,
//! the search/get_vehicle overlay, quotas, audit and tenancy. Nothing may
//! ever report `available` without an authoritative observation inside its
//! band. Backend-neutral (SQLite, or PostgreSQL when
//! `DEALER_GATEWAY_TEST_POSTGRES_URL` is set).

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use crate::common::{
    TestApp, fresh_database, spawn_on, test_source, test_vehicle, tool_error_code,
};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, SubsecRound as _, Utc};
use gateway::config::ServeSettings;
use gateway::inventory::model::VehicleRecord;
use gateway::store::Store;
use serde_json::{Value, json};

const ORG: &str = "org.avail-motors";
const LIVE: &str = "roof.avail-live";
const FEED: &str = "roof.avail-feed";
const PRIVATE: &str = "roof.avail-private";
const ASSERTED: &str = "roof.avail-asserted";

const VERIFY: &str = "dealeragent.inventory.verify_availability";
const GET: &str = "dealeragent.inventory.get_vehicle";
const SEARCH: &str = "dealeragent.inventory.search";
const UPSTREAM: &str = "dealeragent.upstream.unavailable";
const NOT_FOUND: &str = "dealeragent.resource.not_found";

// ---------------------------------------------------------------------------
// The fake dealer system
// ---------------------------------------------------------------------------

/// How the fake dealer system answers for one VIN.
#[derive(Debug, Clone)]
enum Behaviour {
    /// 200 with this status, observed this many seconds ago.
    Answer(&'static str, i64),
    /// Answer available after sleeping this long.
    Slow(u64),
    /// HTTP 500.
    Fail,
    /// 200 with a body that is not JSON.
    Malformed,
    /// 200 about another VIN.
    WrongVin,
    /// HTTP 404: no record of the unit.
    NoRecord,
}

#[derive(Default)]
struct Fake {
    behaviour: Mutex<HashMap<String, Behaviour>>,
    calls: AtomicUsize,
}

impl Fake {
    fn set(&self, vin: &str, b: Behaviour) {
        self.behaviour.lock().unwrap().insert(vin.to_owned(), b);
    }
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

async fn answer(State(fake): State<Arc<Fake>>, Path(vin): Path<String>) -> Response {
    fake.calls.fetch_add(1, Ordering::SeqCst);
    let behaviour = fake.behaviour.lock().unwrap().get(&vin).cloned();
    let body = |status: &str, age: i64, vin: &str| {
        axum::Json(json!({
            "vin": vin,
            "status": status,
            "observed_at": (Utc::now() - Duration::seconds(age)).to_rfc3339(),
        }))
        .into_response()
    };
    match behaviour {
        None | Some(Behaviour::NoRecord) => StatusCode::NOT_FOUND.into_response(),
        Some(Behaviour::Answer(status, age)) => body(status, age, &vin),
        Some(Behaviour::Slow(ms)) => {
            tokio::time::sleep(StdDuration::from_millis(ms)).await;
            body("available", 0, &vin)
        }
        Some(Behaviour::Fail) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        Some(Behaviour::Malformed) => (
            [("content-type", "application/json")],
            "{\"vin\": \"oops\", \"status\": ",
        )
            .into_response(),
        Some(Behaviour::WrongVin) => body("available", 0, "9ZZZZ000000000001"),
    }
}

async fn start_fake() -> (Arc<Fake>, u16) {
    let fake = Arc::new(Fake::default());
    let app = axum::Router::new()
        .route("/avail/{vin}", axum::routing::get(answer))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (fake, port)
}

// ---------------------------------------------------------------------------
// Fixture
// ---------------------------------------------------------------------------

struct Fixture {
    app: TestApp,
    store: Arc<dyn Store>,
    fake: Arc<Fake>,
    now: DateTime<Utc>,
    /// By rooftop: the vehicles loaded.
    live: Vec<VehicleRecord>,
    feed: Vec<VehicleRecord>,
    private: Vec<VehicleRecord>,
    asserted: Vec<VehicleRecord>,
}

/// The availability fixtures' dealers file (tests/fixtures/availability/dealers.yaml),
/// its live sources answering on `port`, into `store`.
pub(crate) async fn upsert_fixture_dealers(store: &dyn Store, port: u16, now: DateTime<Utc>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/availability/dealers.yaml");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("__PORT__", &port.to_string());
    let catalog = gateway::catalog::Catalog::load().unwrap();
    let orgs = gateway::dealers::parse(
        &catalog,
        "dealers.yaml",
        text.as_bytes(),
        "dealers-file:test",
        now,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    store.upsert_organizations(&orgs).await.unwrap();
}

/// LIVE: 8 vehicles (VIN prefix 1LVEA); FEED: 3 (index 1 observed 30 h
/// ago, index 2 sold); PRIVATE: 1; ASSERTED: 1. Every feed row asserts
/// `available` unless said otherwise.
async fn setup(adjust: impl FnOnce(&mut ServeSettings)) -> Fixture {
    let now = Utc::now().trunc_subsecs(0);
    let (fake, port) = start_fake().await;
    let (dir, url) = fresh_database().await;
    let store = gateway::store::open(&url).await.expect("store opens");
    upsert_fixture_dealers(&*store, port, now).await;

    let live: Vec<VehicleRecord> = (0..8)
        .map(|i| test_vehicle(ORG, LIVE, &format!("veh.{i:03}.l"), "1LVEA", i, now))
        .collect();
    let mut feed: Vec<VehicleRecord> = (0..3)
        .map(|i| test_vehicle(ORG, FEED, &format!("veh.{i:03}.f"), "1FEED", i, now))
        .collect();
    feed[1].source.observed_at = now - Duration::hours(30);
    feed[2].availability_status = "sold".into();
    let private = vec![test_vehicle(ORG, PRIVATE, "veh.000.p", "1PRVT", 0, now)];
    let asserted = vec![test_vehicle(ORG, ASSERTED, "veh.000.a", "1ASRT", 0, now)];
    for (rooftop, vehicles) in [
        (LIVE, &live),
        (FEED, &feed),
        (PRIVATE, &private),
        (ASSERTED, &asserted),
    ] {
        store
            .create_snapshot(
                ORG,
                rooftop,
                &test_source(&format!("{rooftop}.csv"), now),
                vehicles,
            )
            .await
            .unwrap();
    }
    let app = spawn_on(dir, url, adjust).await;
    Fixture {
        app,
        store,
        fake,
        now,
        live,
        feed,
        private,
        asserted,
    }
}

fn vin(v: &VehicleRecord) -> &str {
    v.vin.as_deref().unwrap()
}

fn by_id(rooftop: &str, v: &VehicleRecord) -> Value {
    json!({"organization_id": ORG, "rooftop_id": rooftop, "vehicle_id": v.vehicle_id})
}

async fn verify(app: &TestApp, rooftop: &str, v: &VehicleRecord) -> Value {
    app.call_tool(VERIFY, by_id(rooftop, v)).await
}

/// The band and source of a check: in the MCP result's `_meta`, since
/// DAP 0.1's `availabilityResult` has no room for them.
fn ext(r: &Value) -> &Value {
    &r["_meta"]["dealergateway.availability"]
}

fn availability(r: &Value) -> &Value {
    &r["structuredContent"]["availability"]
}

/// The invariant of the whole issue: `available` only with an
/// authoritative observation inside an authoritative band.
fn assert_never_available_unless_verified(r: &Value) {
    if tool_error_code(r).is_some() {
        return;
    }
    let a = availability(r);
    if a["status"] == "available" {
        let band = ext(r)["band"].as_str().unwrap();
        assert!(
            band == "verified_current" || band == "recent_authoritative",
            "available in band {band}: {r}"
        );
        assert_eq!(a["authority_status"], "authoritative", "{r}");
    }
}

fn assert_upstream_unavailable(r: &Value) {
    assert_eq!(tool_error_code(r).as_deref(), Some(UPSTREAM), "{r}");
    let e = &r["structuredContent"];
    assert_eq!(e["retryable"], true, "{r}");
    assert!(e["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0), "{r}");
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[tokio::test]
async fn verified_current_then_reused_within_its_band() {
    let fx = setup(|_| {}).await;
    let v = &fx.live[0];
    fx.fake.set(vin(v), Behaviour::Answer("available", 0));
    let first = verify(&fx.app, LIVE, v).await;
    assert_eq!(tool_error_code(&first), None, "{first}");
    let a = availability(&first);
    assert_eq!(a["status"], "available");
    assert_eq!(a["authority_status"], "authoritative");
    assert_eq!(a["human_verification_required"], false);
    assert!(a["valid_until"].is_string());
    assert_eq!(ext(&first)["band"], "verified_current");
    assert_eq!(ext(&first)["checked_live"], true);
    assert_eq!(ext(&first)["source"], "http");
    let s = &first["structuredContent"];
    assert_eq!(s["freshness"]["state"], "current");
    assert_eq!(s["freshness"]["max_age_seconds"], 120);
    assert_eq!(s["provenance"]["authority_status"], "authoritative");
    assert_eq!(
        s["provenance"]["sources"][0]["source_name"],
        "dealer-system:http://127.0.0.1"
    );
    assert_eq!(
        s["provenance"]["sources"][0]["authority"],
        "authoritative_dealer_system"
    );
    assert_eq!(fx.fake.calls(), 1);

    // Reused: no second upstream call inside the band.
    let second = verify(&fx.app, LIVE, v).await;
    assert_eq!(availability(&second)["status"], "available");
    assert_eq!(ext(&second)["checked_live"], false);
    assert_eq!(fx.fake.calls(), 1);

    // Selecting by VIN or stock number finds the same reused answer.
    let by_vin = fx
        .app
        .call_tool(
            VERIFY,
            json!({"organization_id": ORG, "rooftop_id": LIVE, "vin": vin(v), "purpose": "shopping_assistance"}),
        )
        .await;
    assert_eq!(
        by_vin["structuredContent"]["vehicle_id"],
        v.vehicle_id.as_str()
    );
    assert_eq!(fx.fake.calls(), 1);

    // Stored with its provenance.
    let stored = fx
        .store
        .latest_availability(LIVE, &v.vehicle_id)
        .await
        .unwrap()
        .expect("observation stored");
    assert_eq!(stored.status, "available");
    assert_eq!(stored.authority, "authoritative_dealer_system");
    assert_eq!(stored.source.kind, "http");

    // get_vehicle now shows the authoritative observation.
    let got = fx.app.call_tool(GET, by_id(LIVE, v)).await;
    let ga = &got["structuredContent"]["availability"];
    assert_eq!(ga["status"], "available");
    assert_eq!(ga["authority_status"], "authoritative");
    assert_eq!(ga["human_verification_required"], false);
}

#[tokio::test]
async fn sold_is_answered_and_search_never_shows_it_available() {
    let fx = setup(|_| {}).await;
    let v = &fx.live[1];
    fx.fake.set(vin(v), Behaviour::Answer("sold", 0));
    let search_available = json!({"organization_id": ORG, "rooftop_ids": [LIVE],
        "filters": {"availability": ["available"]}, "page": {"limit": 100}});
    let ids = |r: &Value| -> Vec<String> {
        r["structuredContent"]["vehicles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["vehicle_id"].as_str().unwrap().to_owned())
            .collect()
    };
    // Before the check the feed asserts it available.
    let before = fx.app.call_tool(SEARCH, search_available.clone()).await;
    assert!(ids(&before).contains(&v.vehicle_id));

    let r = verify(&fx.app, LIVE, v).await;
    assert_eq!(tool_error_code(&r), None, "{r}");
    assert_eq!(availability(&r)["status"], "sold");
    assert_eq!(availability(&r)["authority_status"], "authoritative");
    assert_eq!(ext(&r)["band"], "verified_current");

    let after = fx.app.call_tool(SEARCH, search_available).await;
    assert!(!ids(&after).contains(&v.vehicle_id), "{after}");
    assert_eq!(ids(&after).len(), fx.live.len() - 1);
    let facets = &after["structuredContent"]["facets"]["availability"];
    assert!(
        !facets.to_string().contains("sold"),
        "filtered facets: {facets}"
    );
    let all = fx
        .app
        .call_tool(
            SEARCH,
            json!({"organization_id": ORG, "rooftop_ids": [LIVE], "filters": {"vin": vin(v)}}),
        )
        .await;
    let shown = &all["structuredContent"]["vehicles"][0]["availability"];
    assert_eq!(shown["status"], "sold", "{all}");
    assert_eq!(shown["authority_status"], "authoritative");
    let sold_facet = &all["structuredContent"]["facets"]["availability"];
    assert_eq!(sold_facet[0]["value"], "sold", "{sold_facet}");

    // Another replica on the same store learns it from the store.
    let other = spawn_on(fx.app.db_dir.clone(), fx.app.database_url.clone(), |_| {}).await;
    let got = other.call_tool(GET, by_id(LIVE, v)).await;
    assert_eq!(got["structuredContent"]["availability"]["status"], "sold");
    assert_eq!(
        got["structuredContent"]["availability"]["authority_status"],
        "authoritative"
    );
    // ... and reuses it for a check instead of asking the dealer again.
    let again = verify(&other, LIVE, v).await;
    assert_eq!(availability(&again)["status"], "sold");
    assert_eq!(ext(&again)["checked_live"], false);
    assert_eq!(fx.fake.calls(), 1);
}

#[tokio::test]
async fn bands_follow_the_age_of_the_authoritative_observation() {
    let fx = setup(|_| {}).await;
    let cases = [
        (&fx.live[0], 300, "recent_authoritative", "available", true),
        (&fx.live[1], 7200, "asserted", "unknown", true),
        (&fx.live[2], 30 * 3600, "stale", "unknown", true),
        (&fx.live[3], 60, "verified_current", "available", false),
    ];
    for (v, age, band, status, hvr) in cases {
        fx.fake.set(vin(v), Behaviour::Answer("available", age));
        let r = verify(&fx.app, LIVE, v).await;
        assert_eq!(tool_error_code(&r), None, "{r}");
        assert_eq!(ext(&r)["band"], band, "{r}");
        assert_eq!(availability(&r)["status"], status, "{r}");
        assert_eq!(availability(&r)["human_verification_required"], hvr);
        assert_never_available_unless_verified(&r);
        // Freshness is bounded by the rooftop's advertised availability
        // SLA (120 s here): older observations are stale whatever the band.
        let state = &r["structuredContent"]["freshness"]["state"];
        assert_eq!(*state, if age <= 120 { "current" } else { "stale" }, "{r}");
    }
    let asserted = verify(&fx.app, LIVE, &fx.live[1]).await;
    let reason = availability(&asserted)["reason"].as_str().unwrap();
    assert!(reason.contains("asserted available at"), "{reason}");
    assert!(reason.contains("(asserted, 2 h old)"), "{reason}");

    // An http source configured as dealer_asserted never verifies.
    let a = &fx.asserted[0];
    fx.fake.set(vin(a), Behaviour::Answer("available", 0));
    let r = verify(&fx.app, ASSERTED, a).await;
    assert_eq!(ext(&r)["band"], "asserted", "{r}");
    assert_eq!(availability(&r)["status"], "unknown");
    assert_eq!(availability(&r)["authority_status"], "asserted");

    // No record at the dealer system: an explicit unknown, not an error.
    let n = &fx.live[4];
    fx.fake.set(vin(n), Behaviour::NoRecord);
    let r = verify(&fx.app, LIVE, n).await;
    assert_eq!(tool_error_code(&r), None, "{r}");
    assert_eq!(ext(&r)["band"], "unknown");
    assert_eq!(availability(&r)["status"], "unknown");
    assert_eq!(availability(&r)["authority_status"], "unknown");
    assert_eq!(r["structuredContent"]["freshness"]["state"], "unknown");
}

#[tokio::test]
async fn feed_rooftop_is_asserted_or_stale_and_never_available() {
    let fx = setup(|_| {}).await;
    let fresh = verify(&fx.app, FEED, &fx.feed[0]).await;
    assert_eq!(tool_error_code(&fresh), None, "{fresh}");
    assert_eq!(ext(&fresh)["band"], "asserted");
    assert_eq!(ext(&fresh)["source"], "feed");
    assert_eq!(ext(&fresh)["checked_live"], false);
    let a = availability(&fresh);
    assert_eq!(a["status"], "unknown");
    assert_eq!(a["authority_status"], "asserted");
    assert_eq!(a["human_verification_required"], true);
    let reason = a["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("The dealer's feed asserted available at")
            && reason.contains("(asserted, 5 min old)"),
        "{reason}"
    );
    assert_eq!(
        fresh["structuredContent"]["provenance"]["sources"][0]["authority"],
        "dealer_asserted"
    );

    let old = verify(&fx.app, FEED, &fx.feed[1]).await;
    assert_eq!(ext(&old)["band"], "stale");
    assert_eq!(availability(&old)["status"], "unknown");
    assert_eq!(old["structuredContent"]["freshness"]["state"], "stale");

    let sold = verify(&fx.app, FEED, &fx.feed[2]).await;
    assert_eq!(availability(&sold)["status"], "sold");
    assert_eq!(availability(&sold)["authority_status"], "asserted");
    for r in [&fresh, &old, &sold] {
        assert_never_available_unless_verified(r);
    }
    assert_eq!(fx.fake.calls(), 0);
}

#[tokio::test]
async fn failed_checks_are_upstream_unavailable_and_never_available() {
    let fx = setup(|_| {}).await;
    let cases = [
        Behaviour::Slow(1500),
        Behaviour::Fail,
        Behaviour::Malformed,
        Behaviour::WrongVin,
    ];
    for (i, b) in cases.into_iter().enumerate() {
        let v = &fx.live[i];
        fx.fake.set(vin(v), b.clone());
        let started = std::time::Instant::now();
        let r = verify(&fx.app, LIVE, v).await;
        assert_upstream_unavailable(&r);
        if matches!(b, Behaviour::Slow(_)) {
            assert!(
                started.elapsed() < StdDuration::from_millis(1200),
                "timeout honoured"
            );
        }
        // Nothing was stored, and get_vehicle still shows the feed's assertion.
        assert_eq!(
            fx.store
                .latest_availability(LIVE, &v.vehicle_id)
                .await
                .unwrap(),
            None
        );
        let got = fx.app.call_tool(GET, by_id(LIVE, v)).await;
        assert_eq!(
            got["structuredContent"]["availability"]["authority_status"], "asserted",
            "{b:?}"
        );
    }
    assert_eq!(fx.fake.calls(), 4);
    // Four failures do not open the breaker; a success closes the count.
    let ok = &fx.live[5];
    fx.fake.set(vin(ok), Behaviour::Answer("available", 0));
    let r = verify(&fx.app, LIVE, ok).await;
    assert_eq!(availability(&r)["status"], "available", "{r}");
}

#[tokio::test]
async fn breaker_opens_after_five_failures_and_stops_calling() {
    let fx = setup(|_| {}).await;
    for v in &fx.live[..5] {
        fx.fake.set(vin(v), Behaviour::Fail);
        let r = verify(&fx.app, LIVE, v).await;
        assert_upstream_unavailable(&r);
    }
    assert_eq!(fx.fake.calls(), 5);
    // Open: even a healthy unit of the same source is not asked.
    let healthy = &fx.live[6];
    fx.fake.set(vin(healthy), Behaviour::Answer("available", 0));
    for _ in 0..3 {
        let r = verify(&fx.app, LIVE, healthy).await;
        assert_upstream_unavailable(&r);
        let retry = r["structuredContent"]["retry_after_ms"].as_u64().unwrap();
        assert!(retry > 25_000 && retry <= 30_000, "{retry}");
    }
    assert_eq!(fx.fake.calls(), 5);
    // Another source (the feed rooftop) is unaffected.
    let feed = verify(&fx.app, FEED, &fx.feed[2]).await;
    assert_eq!(availability(&feed)["status"], "sold");
}

#[tokio::test]
async fn hundred_concurrent_checks_share_one_upstream_call() {
    let fx = setup(|s| {
        s.anonymous_quota_per_minute = 10_000;
        s.rate_limit_ip_per_minute = 10_000;
        // 100 connections from one address: above the default per-address
        // cap (64), where a newcomer evicts a connection that has not sent
        // its request yet (docs/security.md, slow clients). This test is
        // about coalescing, not about that cap.
        s.max_connections_per_address = 256;
    })
    .await;
    let v = fx.live[0].clone();
    // Slow enough for concurrent checks to join the flight, and far enough
    // under the fixture's 300 ms timeout that a loaded machine (CI runs
    // other builds beside it) does not turn it into a timeout.
    fx.fake.set(vin(&v), Behaviour::Slow(60));
    let app = Arc::new(fx.app);
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..100 {
        let app = app.clone();
        let v = v.clone();
        set.spawn(async move { verify(&app, LIVE, &v).await });
    }
    let mut live = 0;
    while let Some(r) = set.join_next().await {
        let r = r.unwrap();
        assert_eq!(tool_error_code(&r), None, "{r}");
        assert_eq!(availability(&r)["status"], "available");
        assert_eq!(ext(&r)["band"], "verified_current");
        if ext(&r)["checked_live"] == true {
            live += 1;
        }
    }
    assert_eq!(fx.fake.calls(), 1, "one upstream call for 100 checks");
    assert!(live >= 1);
}

#[tokio::test]
async fn anonymous_checks_are_rate_limited_per_address() {
    let fx = setup(|s| s.anonymous_quota_per_minute = 3).await;
    for _ in 0..3 {
        let r = verify(&fx.app, FEED, &fx.feed[0]).await;
        assert_eq!(tool_error_code(&r), None, "{r}");
    }
    let r = verify(&fx.app, FEED, &fx.feed[0]).await;
    assert_eq!(
        tool_error_code(&r).as_deref(),
        Some("dealeragent.rate_limited")
    );
    assert!(r["structuredContent"]["retry_after_ms"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn every_check_writes_an_authoritative_read_event() {
    let fx = setup(|_| {}).await;
    let since = Utc::now() - Duration::seconds(1);
    fx.fake
        .set(vin(&fx.live[0]), Behaviour::Answer("on_hold", 0));
    fx.fake.set(vin(&fx.live[1]), Behaviour::Fail);
    let ok = verify(&fx.app, LIVE, &fx.live[0]).await;
    assert_eq!(availability(&ok)["status"], "on_hold");
    assert_upstream_unavailable(&verify(&fx.app, LIVE, &fx.live[1]).await);
    let events = fx.store.audit_since(since, 100).await.unwrap();
    let checks: Vec<_> = events.iter().filter(|e| e.tool == VERIFY).collect();
    assert_eq!(checks.len(), 2, "{events:?}");
    assert_eq!(checks[0].outcome, "ok");
    assert_eq!(checks[0].subject, "anonymous");
    assert_eq!(checks[0].profile, "dealeragent.inventory.availability/0.1");
    assert_eq!(checks[0].resource_ids, vec![fx.live[0].vehicle_id.clone()]);
    assert_eq!(checks[0].rooftop_ids, vec![LIVE.to_owned()]);
    assert_eq!(checks[1].outcome, UPSTREAM);
    assert_eq!(checks[1].policy_decision, "allow");
}

#[tokio::test]
async fn tenancy_and_unknown_vehicles_are_not_found() {
    let fx = setup(|_| {}).await;
    fx.fake
        .set(vin(&fx.private[0]), Behaviour::Answer("available", 0));
    let private = verify(&fx.app, PRIVATE, &fx.private[0]).await;
    assert_eq!(tool_error_code(&private).as_deref(), Some(NOT_FOUND));
    // A vehicle of another rooftop, and an unknown one.
    let foreign = verify(&fx.app, FEED, &fx.live[0]).await;
    assert_eq!(tool_error_code(&foreign).as_deref(), Some(NOT_FOUND));
    let unknown = fx
        .app
        .call_tool(
            VERIFY,
            json!({"organization_id": ORG, "rooftop_id": LIVE, "vehicle_id": "veh.none"}),
        )
        .await;
    assert_eq!(tool_error_code(&unknown).as_deref(), Some(NOT_FOUND));
    // Two selectors break the schema.
    let two = fx
        .app
        .call_tool(
            VERIFY,
            json!({"organization_id": ORG, "rooftop_id": LIVE, "vehicle_id": "veh.000.l", "vin": vin(&fx.live[0])}),
        )
        .await;
    assert_eq!(
        tool_error_code(&two).as_deref(),
        Some("dealeragent.validation.invalid")
    );
    assert_eq!(fx.fake.calls(), 0, "policy before any upstream call");
}

#[tokio::test]
async fn withdrawn_vehicle_answers_unknown_without_a_live_check() {
    let fx = setup(|s| s.inventory_refresh_seconds = 1).await;
    let dropped = fx.live[7].clone();
    fx.fake
        .set(vin(&dropped), Behaviour::Answer("available", 0));
    fx.store
        .create_snapshot(ORG, LIVE, &test_source("live-2.csv", fx.now), &fx.live[..7])
        .await
        .unwrap();
    let landed = common::poll_until(StdDuration::from_secs(15), || async {
        let r = fx.app.call_tool(GET, by_id(LIVE, &dropped)).await;
        r["structuredContent"]["freshness"]["state"] == "withdrawn"
    })
    .await;
    assert!(landed);
    let calls = fx.fake.calls();
    let last = verify(&fx.app, LIVE, &dropped).await;
    assert_eq!(tool_error_code(&last), None, "{last}");
    assert_eq!(last["structuredContent"]["freshness"]["state"], "withdrawn");
    assert_eq!(fx.fake.calls(), calls, "no live check of a withdrawn unit");
    assert_eq!(availability(&last)["status"], "unknown");
    assert_eq!(ext(&last)["band"], "unknown");
    assert_never_available_unless_verified(&last);
}

/// DAP 6.4: one record, one freshness state. A feed answer is the imported
/// record itself, so verify_availability may never call it fresher than
/// search and get_vehicle do, and it is bounded by the rooftop's advertised
/// availability SLA (120 s): a record observed 5 minutes ago is `current`
/// for inventory (900 s) but `stale` as an availability answer.
#[tokio::test]
async fn feed_answers_are_never_fresher_than_the_record_or_the_availability_sla() {
    let fx = setup(|_| {}).await;
    for v in &fx.feed {
        let checked = verify(&fx.app, FEED, v).await;
        assert_eq!(tool_error_code(&checked), None, "{checked}");
        let detail = fx.app.call_tool(GET, by_id(FEED, v)).await;
        let record_state = detail["structuredContent"]["freshness"]["state"].clone();
        let f = &checked["structuredContent"]["freshness"];
        if record_state == "stale" {
            assert_eq!(f["state"], "stale", "record stale, check {checked}");
        }
        // Observed 5 minutes (or 30 hours) ago: past the 120 s SLA.
        assert_eq!(f["state"], "stale", "{checked}");
        let observed = DateTime::parse_from_rfc3339(f["observed_at"].as_str().unwrap()).unwrap();
        let until = DateTime::parse_from_rfc3339(f["valid_until"].as_str().unwrap()).unwrap();
        assert!(until - observed <= Duration::seconds(120), "{checked}");
        assert!(f["max_age_seconds"].as_u64().unwrap() <= 120, "{checked}");
        // No member outside DAP 0.1's availabilityResult.
        assert!(
            checked["structuredContent"].get("extensions").is_none(),
            "{checked}"
        );
    }
    // A live verified_current answer within the SLA stays current.
    let v = &fx.live[5];
    fx.fake.set(vin(v), Behaviour::Answer("available", 10));
    let r = verify(&fx.app, LIVE, v).await;
    assert_eq!(
        r["structuredContent"]["freshness"]["state"], "current",
        "{r}"
    );
    assert_eq!(ext(&r)["band"], "verified_current", "{r}");
}
