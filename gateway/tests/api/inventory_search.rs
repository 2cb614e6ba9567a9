//! `dealeragent.inventory.search` over real HTTP (docs/inventory.md): every filter,
//! sort, facet and cursor rule of `inventory::search` / `inventory::cursor`,
//! tenancy, and the freshness and provenance of results. Backend-neutral:
//! the harness runs every test on SQLite, or on PostgreSQL when
//! `DEALER_GATEWAY_TEST_POSTGRES_URL` is set.
//!
//! Each test loads its own store through the library (dealers file
//! `tests/fixtures/search/dealers.yaml`, snapshots built here), then starts
//! a gateway on it. Expected results come from a small oracle over the
//! fixture records written from the documented rules, never from the
//! gateway's own code.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use crate::common::{
    TestApp, fresh_database, load_search_dealers, poll_until, spawn_on, test_source, test_vehicle,
    tool_error_code,
};
use chrono::{DateTime, Duration, SubsecRound as _, Utc};
use gateway::config::ServeSettings;
use gateway::inventory::cursor::{self, CursorBinding, INVALID_CURSOR_MESSAGE};
use gateway::inventory::model::{DistanceUnit, Odometer, VehicleRecord};
use gateway::inventory::search::query_fingerprint;
use gateway::store::Store;
use pricing::{Currency, Money};
use serde_json::{Value, json};

const ORG: &str = "org.search-motors";
const NORTH: &str = "roof.search-north";
const SOUTH: &str = "roof.search-south";
const PRIVATE: &str = "roof.search-private";
const OTHER_ORG: &str = "org.other-group";
const EAST: &str = "roof.other-east";
const VACANT: &str = "roof.other-vacant";

const SEARCH: &str = "dealeragent.inventory.search";
const NOT_FOUND: &str = "dealeragent.resource.not_found";
const INVALID: &str = "dealeragent.validation.invalid";

const NORTH_COUNT: usize = 80;
const SOUTH_COUNT: usize = 30;

// ---------------------------------------------------------------------------
// Fixture
// ---------------------------------------------------------------------------

/// (make, model, vehicle_type, body_style), chosen by `i % 6`.
const MODELS: [(&str, &str, Option<&str>, &str); 6] = [
    ("Honda", "Civic", Some("car"), "Sedan"),
    ("Honda", "CR-V", Some("suv"), "Sport Utility"),
    ("Ford", "F-150", Some("truck"), "Crew Cab Pickup"),
    ("Toyota", "Sienna", Some("van"), "Minivan"),
    ("Subaru", "Outback", None, "Wagon"),
    ("Ford", "Mustang", Some("car"), "Coupe"),
];
const CONDITIONS: [&str; 4] = ["new", "used", "certified", "demo"];
const TRIMS: [&str; 5] = ["EX-L", "Sport", "XLT", "Limited", "Premium"];
const COLORS: [&str; 4] = [
    "Oxford White",
    "Sonic Gray Pearl",
    "Crystal Black",
    "Magnetic Blue",
];
const HISTORY: [Option<&str>; 6] = [
    None,
    Some("available"),
    Some("not_available"),
    Some("unknown"),
    Some("conflicting"),
    Some("restricted"),
];
const CERTIFICATION: [Option<&str>; 6] = [
    None,
    Some("manufacturer_cpo"),
    Some("dealer_certified"),
    Some("not_certified"),
    Some("unknown"),
    Some("third_party_certified"),
];
const AVAILABILITY: [&str; 4] = ["available", "in_transit", "on_hold", "pending_sale"];

fn sla_of(rooftop: &str) -> i64 {
    if rooftop == NORTH { 3600 } else { 900 }
}

/// Vehicle `i` of NORTH (USD, miles) or SOUTH (CAD, km). Attributes cycle
/// with different periods so every filter and sort has matches, misses and
/// ties; a few units carry exact odometer boundaries.
fn generated(rooftop: &str, i: usize, now: DateTime<Utc>) -> VehicleRecord {
    let north = rooftop == NORTH;
    let (tag, prefix, currency, unit) = if north {
        ("n", "1NRTH", Currency::USD, DistanceUnit::Mi)
    } else {
        ("s", "2STHX", Currency::CAD, DistanceUnit::Km)
    };
    let mut v = test_vehicle(ORG, rooftop, &format!("veh.{i:03}.{tag}"), prefix, i, now);
    let (make, model, vehicle_type, body) = MODELS[i % 6];
    v.make = match (i % 17, i % 19) {
        (3, _) => make.to_uppercase(),
        (_, 4) => make.to_lowercase(),
        _ => make.to_owned(),
    };
    v.model = model.to_owned();
    v.vehicle_type = vehicle_type.map(str::to_owned);
    v.body_style = Some(body.to_owned());
    v.year = 2015 + i32::try_from(i * 7 % 11).unwrap();
    v.condition = CONDITIONS[i % 4].to_owned();
    v.trim = Some(TRIMS[i % 5].to_owned());
    v.exterior_color = Some(COLORS[(i / 2) % 4].to_owned());
    v.interior_color = (!i.is_multiple_of(3)).then(|| "Black".to_owned());
    let price = 1_500_000 + i64::try_from(i * 37 % 50).unwrap() * 50_000;
    v.advertised_price = Money::from_minor(price, currency);
    let reading = if north {
        i * 1234 % 90_000
    } else {
        i * 2345 % 150_000
    };
    v.odometer = (i % 10 != 9).then(|| Odometer {
        value: i64::try_from(reading).unwrap(),
        unit,
        status: None,
    });
    let days = |d: usize| Duration::days(i64::try_from(d).unwrap());
    let basis = now - days(i % 40) - Duration::hours(1);
    (v.stocked_at, v.first_public_listing_at) = match i % 12 {
        5 => (None, None),
        7 => (None, Some(basis)),
        11 => (Some(now + Duration::days(3)), None),
        _ => (Some(basis), None),
    };
    v.source.observed_at = if i % 8 == 6 {
        now - Duration::hours(3)
    } else {
        now - Duration::minutes(1 + i64::try_from(i % 5).unwrap())
    };
    v.history_report_status = HISTORY[(i / 2) % 6].map(str::to_owned);
    v.certification_type = CERTIFICATION[(i / 3) % 6].map(str::to_owned);
    v.availability_status = AVAILABILITY[(i / 5) % 4].to_owned();
    let exact = |value: i64, unit| {
        Some(Odometer {
            value,
            unit,
            status: None,
        })
    };
    match (north, i) {
        // 18,420 mi = 29,644.116 48 km.
        (true, 1) => v.odometer = exact(18_420, DistanceUnit::Mi),
        // 15,625 mi = 25,146 km exactly.
        (true, 2) => v.odometer = exact(15_625, DistanceUnit::Mi),
        (false, 1) => v.odometer = exact(25_146, DistanceUnit::Km),
        (false, 2) => v.odometer = exact(25_147, DistanceUnit::Km),
        (false, 3) => v.odometer = exact(29_000, DistanceUnit::Km),
        _ => {}
    }
    v
}

struct Fixture {
    app: TestApp,
    store: Arc<dyn Store>,
    now: DateTime<Utc>,
    north: Vec<VehicleRecord>,
    south: Vec<VehicleRecord>,
    private: Vec<VehicleRecord>,
    east: Vec<VehicleRecord>,
}

impl Fixture {
    /// Every vehicle an anonymous caller can find in ORG (north + south).
    fn visible(&self) -> Vec<&VehicleRecord> {
        self.north.iter().chain(&self.south).collect()
    }
}

async fn setup() -> Fixture {
    setup_with(|_| {}).await
}

/// A store with the search dealers and one snapshot per rooftop (NORTH 80
/// vehicles, SOUTH 30, PRIVATE 3, EAST 3, VACANT none), served by a fresh
/// gateway.
async fn setup_with(adjust: impl FnOnce(&mut ServeSettings)) -> Fixture {
    let now = Utc::now().trunc_subsecs(0);
    let (dir, url) = fresh_database().await;
    let store = gateway::store::open(&url).await.expect("store opens");
    load_search_dealers(store.as_ref(), "dealers.yaml", now).await;
    let north: Vec<VehicleRecord> = (0..NORTH_COUNT).map(|i| generated(NORTH, i, now)).collect();
    let south: Vec<VehicleRecord> = (0..SOUTH_COUNT).map(|i| generated(SOUTH, i, now)).collect();
    let private: Vec<VehicleRecord> = (0..3)
        .map(|i| test_vehicle(ORG, PRIVATE, &format!("veh.{i:03}.p"), "3PRVT", i, now))
        .collect();
    let east: Vec<VehicleRecord> = (0..3)
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
        adjust(s);
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

// ---------------------------------------------------------------------------
// Calls
// ---------------------------------------------------------------------------

/// A successful search: its `structuredContent`.
async fn search_ok(app: &TestApp, args: Value) -> Value {
    let result = app.call_tool(SEARCH, args.clone()).await;
    assert_eq!(
        tool_error_code(&result),
        None,
        "search {args} failed: {result}"
    );
    result["structuredContent"].clone()
}

/// A failed search: its DAP error object (`structuredContent`).
async fn search_err(app: &TestApp, args: Value, code: &str) -> Value {
    let result = app.call_tool(SEARCH, args.clone()).await;
    assert_eq!(
        tool_error_code(&result).as_deref(),
        Some(code),
        "search {args}: {result}"
    );
    result["structuredContent"].clone()
}

/// Every page of one search.
struct Walk {
    pages: Vec<Value>,
    vehicles: Vec<Value>,
}

impl Walk {
    fn ids(&self) -> Vec<String> {
        self.vehicles
            .iter()
            .map(|v| v["vehicle_id"].as_str().unwrap().to_owned())
            .collect()
    }
}

fn cursor_of(page: &Value) -> Option<String> {
    page["page"]["next_cursor"].as_str().map(str::to_owned)
}

/// Check one page against the page rules; returns its cursor.
fn check_page(page: &Value, limit: usize, first_facets: Option<&Value>) -> Option<String> {
    let n = page["vehicles"].as_array().unwrap().len();
    let has_more = page["page"]["has_more"].as_bool().expect("has_more");
    assert!(n <= limit, "page of {n} over limit {limit}");
    let next = cursor_of(page);
    if has_more {
        // A page before the last is full, or the result budget ended it and
        // it says so (docs/inventory.md "Detail and the result budget").
        if n < limit {
            let note = format!("page ended after {n} of the {limit} vehicles asked for");
            assert!(
                page["provenance"]["transformations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|t| t.as_str().unwrap().starts_with(&note)),
                "a page of {n} before the last, limit {limit}, without the budget's note: {}",
                page["provenance"]
            );
        }
        assert!(next.is_some(), "has_more without next_cursor: {page}");
    } else {
        assert!(
            page["page"].get("next_cursor").is_none(),
            "last page carries a cursor: {}",
            page["page"]
        );
    }
    if let Some(facets) = first_facets {
        assert_eq!(
            &page["facets"], facets,
            "facets count the whole set on every page"
        );
    }
    next
}

/// Follow `next_cursor` from the first page of `args` to the end with page
/// size `limit`, checking the page rules on the way.
async fn walk(app: &TestApp, args: Value, limit: usize) -> Walk {
    let mut pages: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut a = args.clone();
        a["page"] = json!({"limit": limit});
        if let Some(c) = &cursor {
            a["page"]["cursor"] = json!(c);
        }
        let page = search_ok(app, a).await;
        cursor = check_page(&page, limit, pages.first().map(|p| &p["facets"]));
        if !pages.is_empty() {
            assert!(
                !page["vehicles"].as_array().unwrap().is_empty(),
                "an empty continuation page"
            );
        }
        pages.push(page);
        if cursor.is_none() {
            break;
        }
        assert!(pages.len() <= 200, "pagination does not end");
    }
    let vehicles: Vec<Value> = pages
        .iter()
        .flat_map(|p| p["vehicles"].as_array().unwrap().clone())
        .collect();
    let distinct: BTreeSet<(String, String)> = vehicles
        .iter()
        .map(|v| {
            (
                v["vehicle_id"].as_str().unwrap().to_owned(),
                v["rooftop_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(distinct.len(), vehicles.len(), "pages overlap");
    Walk { pages, vehicles }
}

fn org_args() -> Value {
    json!({"organization_id": ORG})
}

fn with_filters(filters: Value) -> Value {
    json!({"organization_id": ORG, "filters": filters})
}

// ---------------------------------------------------------------------------
// Oracle (from the documented rules)
// ---------------------------------------------------------------------------

/// Ids in the default order: `vehicle_id`, then `rooftop_id`.
fn default_order<'a>(vehicles: impl IntoIterator<Item = &'a VehicleRecord>) -> Vec<String> {
    let mut v: Vec<&VehicleRecord> = vehicles.into_iter().collect();
    v.sort_by(|a, b| {
        a.vehicle_id
            .cmp(&b.vehicle_id)
            .then_with(|| a.rooftop_id.cmp(&b.rooftop_id))
    });
    v.iter().map(|v| v.vehicle_id.clone()).collect()
}

/// Walks the search with `filters` (limit 100) and compares it with the
/// fixture vehicles that satisfy `expected`, which must select some but
/// not all of them (else the check says nothing).
async fn check_filter(fx: &Fixture, filters: Value, expected: impl Fn(&VehicleRecord) -> bool) {
    let want = default_order(fx.visible().into_iter().filter(|v| expected(v)));
    assert!(!want.is_empty(), "filter {filters} selects nothing");
    assert!(
        want.len() < fx.visible().len(),
        "filter {filters} selects everything"
    );
    let got = walk(&fx.app, with_filters(filters.clone()), 100)
        .await
        .ids();
    assert_eq!(got, want, "filter {filters}");
}

fn basis(v: &VehicleRecord) -> Option<DateTime<Utc>> {
    v.stocked_at.or(v.first_public_listing_at)
}

/// Complete 24-hour periods from the age basis to `now`; `None` without a
/// basis or for a basis in the future.
fn age_days(v: &VehicleRecord, now: DateTime<Utc>) -> Option<i64> {
    let b = basis(v)?;
    (b <= now).then(|| (now - b).num_seconds().div_euclid(86_400))
}

fn text_fields(v: &VehicleRecord) -> Vec<String> {
    [
        Some(v.year.to_string()),
        Some(v.make.clone()),
        Some(v.model.clone()),
        v.trim.clone(),
        v.body_style.clone(),
        v.exterior_color.clone(),
        v.interior_color.clone(),
        Some(v.condition.clone()),
        v.stock_number.clone(),
        v.vin.clone(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Every token is a substring of one word of one searchable field.
fn query_matches(v: &VehicleRecord, query: &str) -> bool {
    let words: Vec<String> = text_fields(v)
        .iter()
        .flat_map(|f| {
            f.to_lowercase()
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    query
        .to_lowercase()
        .split_whitespace()
        .all(|t| words.iter().any(|w| w.contains(t)))
}

#[derive(Debug, Clone, Copy)]
enum Field {
    Price,
    Year,
    Odometer,
    Age,
    Observed,
}

impl Field {
    fn wire(self) -> &'static str {
        match self {
            Field::Price => "advertised_price",
            Field::Year => "year",
            Field::Odometer => "odometer",
            Field::Age => "inventory_age_days",
            Field::Observed => "observed_at",
        }
    }
}

const FIELDS: [Field; 5] = [
    Field::Price,
    Field::Year,
    Field::Odometer,
    Field::Age,
    Field::Observed,
];

/// `(missing, currency group, signed value)`: ascending IS the requested
/// order; vehicles without the key last in both directions.
fn sort_key(
    v: &VehicleRecord,
    field: Field,
    desc: bool,
    now: DateTime<Utc>,
) -> (bool, String, i128) {
    let sign = |x: i128| if desc { -x } else { x };
    let missing = (true, String::new(), 0);
    match field {
        Field::Price => (
            false,
            v.advertised_price.currency().code().to_owned(),
            sign(i128::from(v.advertised_price.amount_minor())),
        ),
        Field::Year => (false, String::new(), sign(i128::from(v.year))),
        Field::Odometer => v.odometer.map_or(missing.clone(), |o| {
            (false, String::new(), sign(o.millimetres()))
        }),
        // Greater age = earlier basis.
        Field::Age => match basis(v).filter(|b| *b <= now) {
            Some(b) => (
                false,
                String::new(),
                -sign(i128::from(b.timestamp_micros())),
            ),
            None => missing,
        },
        Field::Observed => (
            false,
            String::new(),
            sign(i128::from(v.source.observed_at.timestamp_micros())),
        ),
    }
}

fn sorted_ids<'a>(
    vehicles: impl IntoIterator<Item = &'a VehicleRecord>,
    field: Field,
    desc: bool,
    now: DateTime<Utc>,
) -> Vec<String> {
    let mut v: Vec<&VehicleRecord> = vehicles.into_iter().collect();
    v.sort_by(|a, b| {
        sort_key(a, field, desc, now)
            .cmp(&sort_key(b, field, desc, now))
            .then_with(|| a.vehicle_id.cmp(&b.vehicle_id))
            .then_with(|| a.rooftop_id.cmp(&b.rooftop_id))
    });
    v.iter().map(|v| v.vehicle_id.clone()).collect()
}

fn sort_args(field: Field, desc: bool) -> Value {
    json!({
        "organization_id": ORG,
        "sort": {"field": field.wire(), "order": if desc { "desc" } else { "asc" }}
    })
}

/// Facet counts of a set of records: value (lower-cased for make and model,
/// "unknown" when missing) → count.
fn facet_oracle(vehicles: &[&VehicleRecord], facet: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for v in vehicles {
        let key = match facet {
            "make" => v.make.to_lowercase(),
            "model" => v.model.to_lowercase(),
            "year" => v.year.to_string(),
            "condition" => v.condition.clone(),
            "vehicle_type" => v.vehicle_type.clone().unwrap_or_else(|| "unknown".into()),
            "availability" => v.availability_status.clone(),
            other => panic!("no facet {other}"),
        };
        *out.entry(key).or_insert(0) += 1;
    }
    out
}

fn wire_facet(facets: &Value, facet: &str) -> BTreeMap<String, u64> {
    let buckets = facets[facet]
        .as_array()
        .unwrap_or_else(|| panic!("facet {facet} missing: {facets}"));
    let mut out = BTreeMap::new();
    // Values as shown: years as integers, strings in their spelling.
    let mut previous: Option<(u64, Option<i64>, String)> = None;
    for b in buckets {
        let shown = match &b["value"] {
            Value::String(s) => (None, s.clone()),
            Value::Number(n) => (n.as_i64(), String::new()),
            other => panic!("facet value {other}"),
        };
        let value = match &b["value"] {
            Value::String(s) => s.to_lowercase(),
            other => other.to_string(),
        };
        let count = b["count"].as_u64().unwrap();
        assert!(count > 0, "empty bucket in {facet}");
        if let Some((pc, pn, ps)) = &previous {
            assert!(
                *pc > count || (*pc == count && (pn, ps) < (&shown.0, &shown.1)),
                "facet {facet} not ordered by count desc, value asc: {buckets:?}"
            );
        }
        previous = Some((count, shown.0, shown.1));
        assert!(
            out.insert(value, count).is_none(),
            "duplicate bucket in {facet}"
        );
    }
    out
}

const FACETS: [&str; 6] = [
    "availability",
    "condition",
    "make",
    "model",
    "vehicle_type",
    "year",
];

// ---------------------------------------------------------------------------
// Filters
// ---------------------------------------------------------------------------

#[tokio::test]
async fn enumerated_filters_match_any_listed_value() {
    let fx = setup().await;
    check_filter(&fx, json!({"vehicle_type": ["suv"]}), |v| {
        v.vehicle_type.as_deref() == Some("suv")
    })
    .await;
    check_filter(&fx, json!({"vehicle_type": ["car", "van"]}), |v| {
        matches!(v.vehicle_type.as_deref(), Some("car" | "van"))
    })
    .await;
    check_filter(&fx, json!({"condition": ["certified"]}), |v| {
        v.condition == "certified"
    })
    .await;
    check_filter(&fx, json!({"condition": ["new", "demo"]}), |v| {
        v.condition == "new" || v.condition == "demo"
    })
    .await;
    check_filter(&fx, json!({"availability": ["on_hold"]}), |v| {
        v.availability_status == "on_hold"
    })
    .await;
    check_filter(
        &fx,
        json!({"availability": ["in_transit", "pending_sale"]}),
        |v| v.availability_status == "in_transit" || v.availability_status == "pending_sale",
    )
    .await;
    check_filter(
        &fx,
        json!({"history_report_status": ["available", "conflicting"]}),
        |v| {
            matches!(
                v.history_report_status.as_deref(),
                Some("available" | "conflicting")
            )
        },
    )
    .await;
    // `unknown` matches a missing status as well as an explicit one.
    check_filter(&fx, json!({"history_report_status": ["unknown"]}), |v| {
        matches!(v.history_report_status.as_deref(), None | Some("unknown"))
    })
    .await;
    assert!(
        fx.visible()
            .iter()
            .any(|v| v.history_report_status.is_none())
    );
    check_filter(
        &fx,
        json!({"certification_type": ["manufacturer_cpo"]}),
        |v| v.certification_type.as_deref() == Some("manufacturer_cpo"),
    )
    .await;
    check_filter(&fx, json!({"certification_type": ["unknown"]}), |v| {
        matches!(v.certification_type.as_deref(), None | Some("unknown"))
    })
    .await;
    // An empty list is the same as no filter.
    let all = walk(&fx.app, with_filters(json!({"condition": []})), 100).await;
    assert_eq!(all.ids(), default_order(fx.visible()));
}

#[tokio::test]
async fn make_and_model_filters_are_case_insensitive_exact_matches() {
    let fx = setup().await;
    // Makes are published as Honda, HONDA and honda: one make.
    let spellings: BTreeSet<&str> = fx
        .visible()
        .into_iter()
        .filter(|v| v.make.eq_ignore_ascii_case("honda"))
        .map(|v| v.make.as_str())
        .collect();
    assert!(spellings.len() >= 2, "fixture has several spellings");
    check_filter(&fx, json!({"make": ["hOnDa"]}), |v| {
        v.make.eq_ignore_ascii_case("honda")
    })
    .await;
    check_filter(&fx, json!({"make": ["FORD", "toyota"]}), |v| {
        v.make.eq_ignore_ascii_case("ford") || v.make.eq_ignore_ascii_case("toyota")
    })
    .await;
    check_filter(&fx, json!({"model": ["cr-v"]}), |v| v.model == "CR-V").await;
    check_filter(&fx, json!({"make": ["ford"], "model": ["MUSTANG"]}), |v| {
        v.model == "Mustang"
    })
    .await;
    // Exact, not a substring: "Hond" and "Civ" match nothing.
    for filters in [json!({"make": ["Hond"]}), json!({"model": ["Civ"]})] {
        let page = search_ok(&fx.app, with_filters(filters)).await;
        assert_eq!(page["vehicles"], json!([]));
    }
}

#[tokio::test]
async fn year_bounds_are_inclusive() {
    let fx = setup().await;
    check_filter(&fx, json!({"year_min": 2020}), |v| v.year >= 2020).await;
    check_filter(&fx, json!({"year_max": 2017}), |v| v.year <= 2017).await;
    check_filter(&fx, json!({"year_min": 2019, "year_max": 2019}), |v| {
        v.year == 2019
    })
    .await;
}

#[tokio::test]
async fn price_filter_matches_only_its_currency_with_inclusive_bounds() {
    let fx = setup().await;
    let usd = |a: i64| json!({"amount_minor": a, "currency": "USD"});
    let cad = |a: i64| json!({"amount_minor": a, "currency": "CAD"});
    let in_ccy = |v: &VehicleRecord, code: &str| v.advertised_price.currency().code() == code;
    let amount = |v: &VehicleRecord| v.advertised_price.amount_minor();
    // A USD bound never returns a CAD vehicle, even one priced within it.
    check_filter(&fx, json!({"price_min": usd(0)}), |v| in_ccy(v, "USD")).await;
    check_filter(&fx, json!({"price_max": cad(100_000_000)}), |v| {
        in_ccy(v, "CAD")
    })
    .await;
    // Inclusive bounds, on an amount that some vehicles have exactly.
    let edge = fx.north[7].advertised_price.amount_minor();
    assert!(
        fx.south.iter().any(|v| amount(v) == edge),
        "a CAD vehicle has the same amount"
    );
    check_filter(&fx, json!({"price_min": usd(edge)}), |v| {
        in_ccy(v, "USD") && amount(v) >= edge
    })
    .await;
    check_filter(&fx, json!({"price_max": usd(edge)}), |v| {
        in_ccy(v, "USD") && amount(v) <= edge
    })
    .await;
    check_filter(
        &fx,
        json!({"price_min": cad(edge), "price_max": cad(edge)}),
        |v| in_ccy(v, "CAD") && amount(v) == edge,
    )
    .await;
    // A currency nobody prices in matches nothing (never converted).
    let page = search_ok(
        &fx.app,
        with_filters(json!({"price_min": {"amount_minor": 0, "currency": "EUR"}})),
    )
    .await;
    assert_eq!(page["vehicles"], json!([]));
}

#[tokio::test]
async fn price_bounds_in_two_currencies_are_a_validation_error_naming_the_field() {
    let fx = setup().await;
    let err = search_err(
        &fx.app,
        with_filters(json!({
            "price_min": {"amount_minor": 1_000_000, "currency": "USD"},
            "price_max": {"amount_minor": 5_000_000, "currency": "CAD"}
        })),
        INVALID,
    )
    .await;
    let field_errors = err["details"]["field_errors"]
        .as_array()
        .expect("field errors");
    assert!(
        field_errors
            .iter()
            .any(|e| e["instance_location"] == "/filters/price_max/currency"),
        "{err}"
    );
    assert_eq!(err["retryable"], json!(false));
    assert!(!err["message"].as_str().unwrap().contains("CAD"), "no echo");
}

#[tokio::test]
async fn minimum_above_maximum_is_a_validation_error_naming_the_field() {
    let fx = setup().await;
    for (filters, pointer) in [
        (
            json!({"year_min": 2022, "year_max": 2021}),
            "/filters/year_min",
        ),
        (
            json!({"price_min": {"amount_minor": 2, "currency": "USD"},
                   "price_max": {"amount_minor": 1, "currency": "USD"}}),
            "/filters/price_min",
        ),
        (
            json!({"odometer_min": {"value": 2, "unit": "km"},
                   "odometer_max": {"value": 1, "unit": "mi"}}),
            "/filters/odometer_min",
        ),
        (
            json!({"inventory_age_min_days": 5, "inventory_age_max_days": 4}),
            "/filters/inventory_age_min_days",
        ),
    ] {
        let err = search_err(&fx.app, with_filters(filters.clone()), INVALID).await;
        let locations: Vec<&str> = err["details"]["field_errors"]
            .as_array()
            .expect("field errors")
            .iter()
            .map(|e| e["instance_location"].as_str().unwrap())
            .collect();
        assert!(locations.contains(&pointer), "{filters}: {err}");
    }
    // 1 km < 1 mi: a km minimum below a mi maximum is fine.
    search_ok(
        &fx.app,
        with_filters(json!({"odometer_min": {"value": 1, "unit": "km"},
                             "odometer_max": {"value": 1, "unit": "mi"}})),
    )
    .await;
}

#[tokio::test]
async fn odometer_bounds_compare_miles_and_kilometres_exactly() {
    let fx = setup().await;
    let mm = |v: &VehicleRecord| v.odometer.map(|o| o.millimetres());
    let km = |n: i64| json!({"value": n, "unit": "km"});
    let mi = |n: i64| json!({"value": n, "unit": "mi"});
    let unit_18420 = fx.north[1].vehicle_id.clone();

    // 18,420 mi = 29,644.1 km: above a 29,000 km maximum, within 29,645 km.
    let below = walk(
        &fx.app,
        with_filters(json!({"odometer_max": km(29_000)})),
        100,
    )
    .await;
    assert!(!below.ids().contains(&unit_18420));
    assert!(
        below.ids().contains(&fx.south[3].vehicle_id),
        "29,000 km is inside a 29,000 km maximum"
    );
    let within = walk(
        &fx.app,
        with_filters(json!({"odometer_max": km(29_645)})),
        100,
    )
    .await;
    assert!(within.ids().contains(&unit_18420));
    let above = walk(
        &fx.app,
        with_filters(json!({"odometer_min": km(29_645)})),
        100,
    )
    .await;
    assert!(!above.ids().contains(&unit_18420));

    // 15,625 mi = 25,146 km exactly: both bounds are inclusive across units.
    let exact = walk(
        &fx.app,
        with_filters(json!({"odometer_min": mi(15_625), "odometer_max": mi(15_625)})),
        100,
    )
    .await;
    let mut want = vec![
        fx.north[2].vehicle_id.clone(),
        fx.south[1].vehicle_id.clone(),
    ];
    want.sort();
    assert_eq!(exact.ids(), want, "15,625 mi and 25,146 km are equal");
    let exact_km = walk(
        &fx.app,
        with_filters(json!({"odometer_min": km(25_146), "odometer_max": km(25_146)})),
        100,
    )
    .await;
    assert_eq!(exact_km.ids(), want);

    // Against the oracle, in both units; unknown odometers never match.
    check_filter(&fx, json!({"odometer_max": km(29_000)}), |v| {
        mm(v).is_some_and(|m| m <= 29_000 * 1_000_000)
    })
    .await;
    check_filter(&fx, json!({"odometer_min": mi(40_000)}), |v| {
        mm(v).is_some_and(|m| m >= 40_000 * 1_609_344)
    })
    .await;
    check_filter(&fx, json!({"odometer_min": km(0)}), |v| {
        v.odometer.is_some()
    })
    .await;
    check_filter(
        &fx,
        json!({"odometer_min": km(10_000), "odometer_max": mi(50_000)}),
        |v| mm(v).is_some_and(|m| (10_000 * 1_000_000..=50_000 * 1_609_344).contains(&m)),
    )
    .await;
}

#[tokio::test]
async fn inventory_age_bounds_count_complete_days_and_skip_unknown_or_future_basis() {
    let fx = setup().await;
    let now = fx.now;
    let age = move |v: &VehicleRecord| age_days(v, now);
    check_filter(&fx, json!({"inventory_age_min_days": 20}), move |v| {
        age(v).is_some_and(|d| d >= 20)
    })
    .await;
    check_filter(&fx, json!({"inventory_age_max_days": 3}), move |v| {
        age(v).is_some_and(|d| d <= 3)
    })
    .await;
    // Exactly 10 days and 1 hour old is 10 complete days: inside [10, 10].
    check_filter(
        &fx,
        json!({"inventory_age_min_days": 10, "inventory_age_max_days": 10}),
        move |v| age(v) == Some(10),
    )
    .await;
    // `min 0` selects every vehicle with a known, past basis (stocked_at or
    // else first_public_listing_at), never the unknown or future ones.
    check_filter(&fx, json!({"inventory_age_min_days": 0}), move |v| {
        age(v).is_some()
    })
    .await;
    let with_listing_basis = fx
        .visible()
        .into_iter()
        .find(|v| v.stocked_at.is_none() && v.first_public_listing_at.is_some())
        .unwrap();
    let listed = walk(
        &fx.app,
        with_filters(json!({"inventory_age_min_days": 0})),
        100,
    )
    .await;
    assert!(listed.ids().contains(&with_listing_basis.vehicle_id));
}

#[tokio::test]
async fn vin_and_stock_number_filters_are_exact() {
    let fx = setup().await;
    let target = &fx.south[12];
    let vin = target.vin.clone().unwrap();
    let stock = target.stock_number.clone().unwrap();
    let by_vin = walk(&fx.app, with_filters(json!({"vin": vin})), 100).await;
    assert_eq!(by_vin.ids(), vec![target.vehicle_id.clone()]);
    let by_stock = walk(&fx.app, with_filters(json!({"stock_number": stock})), 100).await;
    assert_eq!(by_stock.ids(), vec![target.vehicle_id.clone()]);
    let both = walk(
        &fx.app,
        with_filters(json!({"vin": vin, "stock_number": stock})),
        100,
    )
    .await;
    assert_eq!(both.ids(), vec![target.vehicle_id.clone()]);
    // Case-sensitive and exact: a lower-cased stock number or a VIN of
    // another unit with this stock number matches nothing.
    for filters in [
        json!({"stock_number": stock.to_lowercase()}),
        json!({"stock_number": &stock[..3]}),
        json!({"vin": fx.south[13].vin, "stock_number": stock}),
        json!({"vin": "1HGCM82633A004352"}),
    ] {
        let page = search_ok(&fx.app, with_filters(filters.clone())).await;
        assert_eq!(page["vehicles"], json!([]), "{filters}");
    }
}

#[tokio::test]
async fn free_text_query_requires_every_token_case_insensitively() {
    let fx = setup().await;
    for query in [
        "HONDA civic",
        "cr-v sport",
        "ford 2019",
        "oxford WHITE",
        "crystal black used",
        "n0012",
        "2sthx",
        "gray pearl",
    ] {
        let want = default_order(fx.visible().into_iter().filter(|v| query_matches(v, query)));
        assert!(!want.is_empty(), "query {query} matches something");
        assert!(
            want.len() < fx.visible().len(),
            "query {query} is selective"
        );
        let got = walk(
            &fx.app,
            json!({"organization_id": ORG, "query": query}),
            100,
        )
        .await;
        assert_eq!(got.ids(), want, "query {query}");
    }
    // Tokens never span two words or two fields.
    for query in ["hondacivic", "oxfordwhite", "honda lamborghini"] {
        let page = search_ok(&fx.app, json!({"organization_id": ORG, "query": query})).await;
        assert_eq!(page["vehicles"], json!([]), "query {query}");
    }
    // Query and filters combine with AND.
    let got = walk(
        &fx.app,
        json!({"organization_id": ORG, "query": "honda", "filters": {"condition": ["used"]}}),
        100,
    )
    .await;
    let want = default_order(
        fx.visible()
            .into_iter()
            .filter(|v| query_matches(v, "honda") && v.condition == "used"),
    );
    assert!(!want.is_empty());
    assert_eq!(got.ids(), want);
}

#[tokio::test]
async fn filters_combine_with_and() {
    let fx = setup().await;
    check_filter(
        &fx,
        json!({
            "make": ["ford"],
            "year_min": 2017,
            "price_min": {"amount_minor": 0, "currency": "USD"},
            "odometer_max": {"value": 80_000, "unit": "mi"}
        }),
        |v| {
            v.make.eq_ignore_ascii_case("ford")
                && v.year >= 2017
                && v.advertised_price.currency().code() == "USD"
                && v.odometer
                    .is_some_and(|o| o.millimetres() <= 80_000 * 1_609_344)
        },
    )
    .await;
}

// ---------------------------------------------------------------------------
// Sort
// ---------------------------------------------------------------------------

#[tokio::test]
async fn every_sort_field_orders_both_directions_with_ties_by_vehicle_id_and_missing_keys_last() {
    let fx = setup().await;
    for field in FIELDS {
        for desc in [false, true] {
            let want = sorted_ids(fx.visible(), field, desc, fx.now);
            let got = walk(&fx.app, sort_args(field, desc), 100).await;
            assert_eq!(got.ids(), want, "sort {} desc={desc}", field.wire());
        }
    }
    // The fixture really has ties and missing keys.
    let years: BTreeSet<i32> = fx.visible().iter().map(|v| v.year).collect();
    assert!(years.len() < fx.visible().len());
    assert!(fx.visible().iter().any(|v| v.odometer.is_none()));
    // Missing keys come last in both directions, by vehicle_id.
    for desc in [false, true] {
        let got = walk(&fx.app, sort_args(Field::Odometer, desc), 100).await;
        let tail: Vec<&Value> = got
            .vehicles
            .iter()
            .skip_while(|v| v.get("odometer").is_some())
            .collect();
        assert!(!tail.is_empty());
        assert!(tail.iter().all(|v| v.get("odometer").is_none()));
        let tail_ids: Vec<&str> = tail
            .iter()
            .map(|v| v["vehicle_id"].as_str().unwrap())
            .collect();
        let mut sorted = tail_ids.clone();
        sorted.sort_unstable();
        assert_eq!(tail_ids, sorted);
    }
    // Without a sort the order is vehicle_id ascending.
    let plain = walk(&fx.app, org_args(), 100).await;
    assert_eq!(plain.ids(), default_order(fx.visible()));
}

#[tokio::test]
async fn price_sort_groups_currencies_in_both_directions() {
    let fx = setup().await;
    for desc in [false, true] {
        let got = walk(&fx.app, sort_args(Field::Price, desc), 100).await;
        let currencies: Vec<&str> = got
            .vehicles
            .iter()
            .map(|v| {
                v["advertised_price"]["amount"]["currency"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        let switch = currencies.iter().position(|c| *c == "USD").unwrap();
        assert!(
            currencies[..switch].iter().all(|c| *c == "CAD"),
            "CAD first"
        );
        assert!(
            currencies[switch..].iter().all(|c| *c == "USD"),
            "never interleaved"
        );
        assert_eq!(switch, SOUTH_COUNT);
        for group in [&got.vehicles[..switch], &got.vehicles[switch..]] {
            let amounts: Vec<i64> = group
                .iter()
                .map(|v| {
                    v["advertised_price"]["amount"]["amount_minor"]
                        .as_i64()
                        .unwrap()
                })
                .collect();
            let ids: Vec<&str> = group
                .iter()
                .map(|v| v["vehicle_id"].as_str().unwrap())
                .collect();
            for i in 1..amounts.len() {
                let ordered = if desc {
                    amounts[i - 1] >= amounts[i]
                } else {
                    amounts[i - 1] <= amounts[i]
                };
                assert!(ordered, "amounts ordered within a currency");
                if amounts[i - 1] == amounts[i] {
                    assert!(ids[i - 1] < ids[i], "ties by vehicle_id ascending");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Facets
// ---------------------------------------------------------------------------

#[tokio::test]
async fn facets_count_the_whole_filtered_set_and_each_sums_to_the_walked_total() {
    let fx = setup().await;
    for (args, expected) in [
        (org_args(), fx.visible()),
        (
            with_filters(json!({"year_min": 2018, "vehicle_type": ["car", "suv", "van"]})),
            fx.visible()
                .into_iter()
                .filter(|v| {
                    v.year >= 2018
                        && matches!(v.vehicle_type.as_deref(), Some("car" | "suv" | "van"))
                })
                .collect(),
        ),
        (
            json!({"organization_id": ORG, "rooftop_ids": [SOUTH], "query": "honda"}),
            fx.south
                .iter()
                .filter(|v| query_matches(v, "honda"))
                .collect(),
        ),
    ] {
        let got = walk(&fx.app, args.clone(), 9).await;
        let total = got.vehicles.len();
        assert_eq!(total, expected.len(), "{args}");
        let facets = &got.pages[0]["facets"];
        let names: BTreeSet<&str> = facets
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(names, FACETS.into_iter().collect(), "facet names");
        for facet in FACETS {
            let wire = wire_facet(facets, facet);
            let sum: u64 = wire.values().sum();
            assert_eq!(sum, total as u64, "{facet} sums to the total for {args}");
            assert_eq!(wire, facet_oracle(&expected, facet), "{facet} for {args}");
        }
    }
    // Makes are shown in their most frequent spelling; a missing type is
    // counted as "unknown".
    let page = search_ok(&fx.app, org_args()).await;
    let makes: Vec<&str> = page["facets"]["make"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["value"].as_str().unwrap())
        .collect();
    assert!(
        makes.contains(&"Honda") && !makes.contains(&"HONDA"),
        "{makes:?}"
    );
    assert!(
        page["facets"]["vehicle_type"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["value"] == "unknown")
    );
    // An empty result has empty facets.
    let none = search_ok(&fx.app, with_filters(json!({"make": ["Lamborghini"]}))).await;
    for facet in FACETS {
        assert_eq!(none["facets"][facet], json!([]), "{facet}");
    }
}

// ---------------------------------------------------------------------------
// Pagination
// ---------------------------------------------------------------------------

/// The default page is 10 vehicles (docs/inventory.md "Pages"); a larger
/// `limit` is a maximum: the page holds at most that many, fewer when the
/// result budget ends it (saying so, `check_page`), and the pages of a walk
/// hold every vehicle once, in order.
#[tokio::test]
async fn default_page_holds_10_vehicles_and_a_page_holds_up_to_100_within_the_budget() {
    let fx = setup().await;
    let first = search_ok(&fx.app, org_args()).await;
    assert_eq!(first["vehicles"].as_array().unwrap().len(), 10);
    assert_eq!(first["page"]["has_more"], json!(true));
    let ids: Vec<&str> = first["vehicles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["vehicle_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, default_order(fx.visible())[..10]);
    // The default also applies to continuation pages.
    let second = search_ok(
        &fx.app,
        json!({"organization_id": ORG, "page": {"cursor": cursor_of(&first).unwrap()}}),
    )
    .await;
    assert_eq!(second["vehicles"].as_array().unwrap().len(), 10);

    let hundred = search_ok(
        &fx.app,
        json!({"organization_id": ORG, "page": {"limit": 100}}),
    )
    .await;
    let n = hundred["vehicles"].as_array().unwrap().len();
    assert!(n > 10 && n <= 100, "{n}");
    assert_eq!(hundred["page"]["has_more"], json!(true));
    check_page(&hundred, 100, None);
    let walked = walk(&fx.app, org_args(), 100).await;
    assert_eq!(walked.ids(), default_order(fx.visible()));
    assert_eq!(walked.vehicles.len(), NORTH_COUNT + SOUTH_COUNT);
    assert_eq!(
        walked.pages.last().unwrap()["page"],
        json!({"has_more": false})
    );
}

#[tokio::test]
async fn limit_outside_1_to_100_is_a_validation_error() {
    let fx = setup().await;
    for limit in [101, 0] {
        let err = search_err(
            &fx.app,
            json!({"organization_id": ORG, "page": {"limit": limit}}),
            INVALID,
        )
        .await;
        assert!(
            err["details"]["field_errors"]
                .as_array()
                .is_some_and(|e| !e.is_empty()),
            "{err}"
        );
    }
}

#[tokio::test]
async fn pages_never_overlap_or_skip_for_several_sorts_and_end_without_a_cursor() {
    let fx = setup().await;
    let cases = [
        (org_args(), default_order(fx.visible())),
        (
            sort_args(Field::Price, true),
            sorted_ids(fx.visible(), Field::Price, true, fx.now),
        ),
        (
            sort_args(Field::Year, false),
            sorted_ids(fx.visible(), Field::Year, false, fx.now),
        ),
        (
            sort_args(Field::Age, true),
            sorted_ids(fx.visible(), Field::Age, true, fx.now),
        ),
        (
            sort_args(Field::Odometer, false),
            sorted_ids(fx.visible(), Field::Odometer, false, fx.now),
        ),
    ];
    for (args, want) in cases {
        for limit in [1, 7, 10] {
            if limit == 1 && args.get("sort").is_none() {
                continue; // covered by the sorted cases; keeps the test short
            }
            let got = walk(&fx.app, args.clone(), limit).await;
            assert_eq!(got.ids(), want, "{args} limit {limit}");
            assert_eq!(got.pages.len(), want.len().div_ceil(limit));
            assert_eq!(
                got.pages.last().unwrap()["page"],
                json!({"has_more": false})
            );
        }
    }
    // A result that exactly fills its only page has no cursor (a set small
    // enough for one page within the result budget: South's new units).
    let n = fx.south.iter().filter(|v| v.condition == "new").count();
    assert!(n > 1);
    let page = search_ok(
        &fx.app,
        json!({"organization_id": ORG, "rooftop_ids": [SOUTH], "filters": {"condition": ["new"]}, "page": {"limit": n}}),
    )
    .await;
    assert_eq!(page["vehicles"].as_array().unwrap().len(), n);
    assert_eq!(page["page"], json!({"has_more": false}));
}

#[tokio::test]
async fn changing_the_limit_between_pages_neither_skips_nor_repeats() {
    let fx = setup().await;
    let args = sort_args(Field::Observed, true);
    let want = sorted_ids(fx.visible(), Field::Observed, true, fx.now);
    let mut got: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    for limit in [3, 11, 50, 100].into_iter().cycle() {
        let mut a = args.clone();
        a["page"] = json!({"limit": limit});
        if let Some(c) = &cursor {
            a["page"]["cursor"] = json!(c);
        }
        let page = search_ok(&fx.app, a).await;
        got.extend(
            page["vehicles"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["vehicle_id"].as_str().unwrap().to_owned()),
        );
        cursor = check_page(&page, limit, None);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(got, want);
}

/// Checks a refused cursor: `validation.invalid`, the one fixed message,
/// a field error on `/page/cursor`, and no trace of the cursor.
fn assert_cursor_refused(err: &Value, cursor: &str) {
    assert_eq!(err["code"], INVALID, "{err}");
    assert_eq!(err["message"], INVALID_CURSOR_MESSAGE, "{err}");
    let field_errors = err["details"]["field_errors"]
        .as_array()
        .expect("field errors");
    assert!(
        field_errors
            .iter()
            .all(|e| e["instance_location"] == "/page/cursor"),
        "{err}"
    );
    let text = err.to_string();
    assert!(!text.contains(cursor), "the cursor is echoed: {text}");
    if let Some((body, tag)) = cursor.split_once('.') {
        assert!(!text.contains(body) && !text.contains(tag), "{text}");
    }
}

#[tokio::test]
async fn tampered_or_rebound_cursors_are_refused_with_one_message_that_does_not_echo_them() {
    let fx = setup().await;
    let args = json!({
        "organization_id": ORG,
        "rooftop_ids": [NORTH],
        "filters": {"year_min": 2016},
        "sort": {"field": "year", "order": "asc"}
    });
    let mut first_args = args.clone();
    first_args["page"] = json!({"limit": 5});
    let first = search_ok(&fx.app, first_args).await;
    let cursor = cursor_of(&first).expect("a cursor");
    let with_cursor = |mut a: Value, c: &str| {
        a["page"] = json!({"limit": 5, "cursor": c});
        a
    };
    // The untouched cursor works.
    search_ok(&fx.app, with_cursor(args.clone(), &cursor)).await;

    // Tampered: one character of the payload, of the tag, truncated, junk.
    let flip = |s: &str, at: usize| {
        let mut chars: Vec<char> = s.chars().collect();
        chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
        chars.into_iter().collect::<String>()
    };
    let dot = cursor.find('.').unwrap();
    let tampered = [
        flip(&cursor, 5),
        flip(&cursor, dot + 3),
        cursor[..cursor.len() - 4].to_owned(),
        cursor.replace('.', ""),
        "not-a-cursor".to_owned(),
    ];
    for bad in &tampered {
        assert_ne!(bad, &cursor);
        let err = search_err(&fx.app, with_cursor(args.clone(), bad), INVALID).await;
        assert_cursor_refused(&err, bad);
    }

    // Reused with a different filter, query, sort or rooftop set.
    let mut other_filter = args.clone();
    other_filter["filters"]["year_min"] = json!(2017);
    let mut other_query = args.clone();
    other_query["query"] = json!("honda");
    let mut other_sort = args.clone();
    other_sort["sort"]["order"] = json!("desc");
    let mut other_rooftops = args.clone();
    other_rooftops["rooftop_ids"] = json!([NORTH, SOUTH]);
    let mut no_rooftops = args.clone();
    no_rooftops.as_object_mut().unwrap().remove("rooftop_ids");
    let mut messages = BTreeSet::new();
    for other in [
        other_filter,
        other_query,
        other_sort,
        other_rooftops,
        no_rooftops,
    ] {
        let err = search_err(&fx.app, with_cursor(other.clone(), &cursor), INVALID).await;
        assert_cursor_refused(&err, &cursor);
        messages.insert(err["message"].as_str().unwrap().to_owned());
    }
    assert_eq!(messages.len(), 1, "one message for every refusal");

    // A cursor of another organization's search is refused too.
    let east_first = search_ok(
        &fx.app,
        json!({"organization_id": OTHER_ORG, "rooftop_ids": [EAST], "page": {"limit": 1}}),
    )
    .await;
    let east_cursor = cursor_of(&east_first).unwrap();
    let err = search_err(&fx.app, with_cursor(args.clone(), &east_cursor), INVALID).await;
    assert_cursor_refused(&err, &east_cursor);
}

/// docs/inventory.md: an empty list filter is the same as an absent one,
/// so it cannot change the query a cursor is bound to.
#[tokio::test]
async fn an_empty_list_filter_keeps_the_cursor_of_the_same_query() {
    let fx = setup().await;
    let plain = json!({"organization_id": ORG, "rooftop_ids": [NORTH], "page": {"limit": 5}});
    let first = search_ok(&fx.app, plain.clone()).await;
    let cursor = cursor_of(&first).expect("a cursor");
    for filters in [
        json!({"make": []}),
        json!({}),
        json!({"make": [], "model": []}),
    ] {
        let mut next = plain.clone();
        next["filters"] = filters.clone();
        next["page"]["cursor"] = json!(cursor);
        let page = search_ok(&fx.app, next).await;
        assert!(
            !page["vehicles"].as_array().unwrap().is_empty(),
            "{filters}"
        );
    }
    // And the other way round: a cursor issued for `make: []` works without it.
    let mut empty = plain.clone();
    empty["filters"] = json!({"make": []});
    let first = search_ok(&fx.app, empty).await;
    let mut next = plain.clone();
    next["page"]["cursor"] = json!(cursor_of(&first).expect("a cursor"));
    search_ok(&fx.app, next).await;
    // A non-empty filter is still another query.
    let mut other = plain.clone();
    other["filters"] = json!({"make": ["Honda"]});
    other["page"]["cursor"] = json!(cursor);
    search_err(&fx.app, other, "dealeragent.validation.invalid").await;
}

#[tokio::test]
async fn a_cursor_is_refused_once_the_resolved_rooftop_set_changes() {
    let fx = setup_with(|s| s.directory_refresh_seconds = 1).await;
    // No rooftop_ids: the set is every rooftop the caller may read.
    let args = json!({"organization_id": ORG, "page": {"limit": 10}});
    let first = search_ok(&fx.app, args.clone()).await;
    let cursor = cursor_of(&first).unwrap();

    // SOUTH closes to anonymous readers: the same request now resolves to
    // another rooftop set.
    load_search_dealers(fx.store.as_ref(), "dealers-south-private.yaml", fx.now).await;
    let closed = poll_until(StdDuration::from_secs(15), || async {
        let r = fx
            .app
            .call_tool(
                SEARCH,
                json!({"organization_id": ORG, "rooftop_ids": [SOUTH]}),
            )
            .await;
        tool_error_code(&r).as_deref() == Some(NOT_FOUND)
    })
    .await;
    assert!(closed, "the directory change is served within 15 s");

    let mut again = args.clone();
    again["page"]["cursor"] = json!(cursor);
    let err = search_err(&fx.app, again, INVALID).await;
    assert_cursor_refused(&err, &cursor);
    // A fresh search shows NORTH only.
    let fresh = walk(&fx.app, org_args(), 100).await;
    assert_eq!(fresh.ids(), default_order(&fx.north));
}

#[tokio::test]
async fn an_expired_cursor_is_refused() {
    let fx = setup().await;
    let args = json!({
        "organization_id": ORG,
        "rooftop_ids": [NORTH],
        "sort": {"field": "advertised_price", "order": "asc"}
    });
    let mut first_args = args.clone();
    first_args["page"] = json!({"limit": 10});
    let first = search_ok(&fx.app, first_args).await;
    let cursor = cursor_of(&first).unwrap();

    // Re-seal the same position with the gateway's key, shifting its times.
    let key = fx
        .store
        .get_or_create_secret("inventory-cursor-hmac-sha256", &|| {
            panic!("the gateway created the cursor key at start")
        })
        .await
        .unwrap();
    let binding = CursorBinding::new(&query_fingerprint(&args), "anonymous", &[NORTH]);
    let payload = cursor::open(&key, &cursor, &binding, Utc::now()).expect("our cursor opens");
    let now = Utc::now().timestamp();
    let mut page_args = args.clone();
    page_args["page"] = json!({"limit": 10});

    // Control: re-sealed with a valid lifetime it continues the pagination.
    let mut fresh = payload.clone();
    fresh.issued_at = now - 60;
    fresh.expires_at = now + 600;
    let resealed = cursor::seal(&key, &fresh);
    page_args["page"]["cursor"] = json!(resealed);
    let second = search_ok(&fx.app, page_args.clone()).await;
    let want = sorted_ids(&fx.north, Field::Price, false, fx.now);
    let got: Vec<&str> = second["vehicles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["vehicle_id"].as_str().unwrap())
        .collect();
    assert_eq!(got, want[10..20]);

    // Issued 16 minutes ago with the default 15-minute lifetime: expired.
    let mut old = payload.clone();
    old.issued_at = now - 16 * 60;
    old.expires_at = old.issued_at + cursor::DEFAULT_LIFETIME_SECONDS;
    let expired = cursor::seal(&key, &old);
    page_args["page"]["cursor"] = json!(expired);
    let err = search_err(&fx.app, page_args.clone(), INVALID).await;
    assert_cursor_refused(&err, &expired);

    // Expiring right now is expired too (the bound is exclusive).
    let mut edge = payload;
    edge.issued_at = now - cursor::DEFAULT_LIFETIME_SECONDS;
    edge.expires_at = now;
    let at_edge = cursor::seal(&key, &edge);
    page_args["page"]["cursor"] = json!(at_edge);
    let err = search_err(&fx.app, page_args, INVALID).await;
    assert_cursor_refused(&err, &at_edge);
}

#[tokio::test]
async fn a_new_snapshot_mid_pagination_keeps_the_old_pages_while_fresh_searches_see_it() {
    let fx = setup_with(|s| s.inventory_refresh_seconds = 1).await;
    let args = json!({
        "organization_id": ORG,
        "rooftop_ids": [NORTH],
        "sort": {"field": "year", "order": "desc"}
    });
    let old_order = sorted_ids(&fx.north, Field::Year, true, fx.now);
    let mut first_args = args.clone();
    first_args["page"] = json!({"limit": 10});
    let first = search_ok(&fx.app, first_args).await;
    let mut got: Vec<String> = first["vehicles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["vehicle_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(got, old_order[..10]);
    let mut cursor = cursor_of(&first);

    // The next import drops a vehicle of a later page, adds a new one that
    // would sort first, and reprices another.
    let removed = old_order[40].clone();
    let mut next: Vec<VehicleRecord> = fx
        .north
        .iter()
        .filter(|v| v.vehicle_id != removed)
        .cloned()
        .collect();
    let mut added = test_vehicle(ORG, NORTH, "veh.900.n", "1NRTH", 900, fx.now);
    added.year = 2026;
    next.push(added.clone());
    next[3].advertised_price = Money::from_minor(999_900, Currency::USD);
    fx.store
        .create_snapshot(ORG, NORTH, &test_source("north-2.csv", fx.now), &next)
        .await
        .unwrap();
    let vin_args = with_filters(json!({"vin": added.vin.clone().unwrap()}));
    let landed = poll_until(StdDuration::from_secs(15), || async {
        let page = search_ok(&fx.app, vin_args.clone()).await;
        page["vehicles"].as_array().unwrap().len() == 1
    })
    .await;
    assert!(landed, "the new snapshot is served within 15 s");

    // The old pagination finishes on the old snapshot.
    let mut pages = 1;
    while let Some(c) = cursor {
        let mut a = args.clone();
        a["page"] = json!({"limit": 10, "cursor": c});
        let page = search_ok(&fx.app, a).await;
        cursor = check_page(&page, 10, Some(&first["facets"]));
        got.extend(
            page["vehicles"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["vehicle_id"].as_str().unwrap().to_owned()),
        );
        pages += 1;
        assert!(pages < 50);
    }
    assert_eq!(got, old_order, "no overlap, no gap, old data only");
    assert!(got.contains(&removed) && !got.contains(&added.vehicle_id));

    // A fresh search sees the new snapshot.
    let fresh = walk(&fx.app, args.clone(), 10).await;
    assert_eq!(fresh.ids(), sorted_ids(&next, Field::Year, true, fx.now));
    assert_eq!(fresh.ids()[0], added.vehicle_id);
    assert!(!fresh.ids().contains(&removed));
    let repriced = fresh
        .vehicles
        .iter()
        .find(|v| v["vehicle_id"] == next[3].vehicle_id.as_str())
        .unwrap();
    assert_eq!(
        repriced["advertised_price"]["amount"]["amount_minor"],
        json!(999_900)
    );
}

// ---------------------------------------------------------------------------
// Tenancy
// ---------------------------------------------------------------------------

#[tokio::test]
async fn unknown_organization_unknown_rooftop_and_foreign_rooftop_answer_the_same_not_found() {
    let fx = setup().await;
    let cases = [
        json!({"organization_id": "org.nobody"}),
        json!({"organization_id": "org.nobody", "rooftop_ids": [NORTH]}),
        json!({"organization_id": ORG, "rooftop_ids": ["roof.nowhere"]}),
        json!({"organization_id": ORG, "rooftop_ids": [NORTH, "roof.nowhere"]}),
        json!({"organization_id": ORG, "rooftop_ids": [EAST]}),
        json!({"organization_id": ORG, "rooftop_ids": [SOUTH, EAST]}),
        json!({"organization_id": OTHER_ORG, "rooftop_ids": [NORTH]}),
        json!({"organization_id": ORG, "rooftop_ids": [PRIVATE]}),
        json!({"organization_id": ORG, "rooftop_ids": [NORTH, PRIVATE]}),
    ];
    let mut messages = BTreeSet::new();
    for args in cases {
        let err = search_err(&fx.app, args.clone(), NOT_FOUND).await;
        assert_eq!(err["retryable"], json!(false));
        assert!(err.get("details").is_none(), "{err}");
        let text = err.to_string();
        for id in ["org.nobody", "roof.nowhere", EAST, NORTH, PRIVATE] {
            assert!(!text.contains(id), "{id} echoed: {text}");
        }
        messages.insert(err["message"].as_str().unwrap().to_owned());
    }
    assert_eq!(messages.len(), 1, "one message: {messages:?}");
}

#[tokio::test]
async fn a_rooftop_closed_to_anonymous_reads_is_invisible_to_anonymous_callers() {
    let fx = setup().await;
    // Searching the organization skips it: exactly NORTH and SOUTH.
    let all = walk(&fx.app, org_args(), 100).await;
    assert_eq!(all.ids(), default_order(fx.visible()));
    assert!(all.vehicles.iter().all(|v| v["rooftop_id"] != PRIVATE));
    // Its vehicles are not found by their identifiers either.
    let hidden = &fx.private[0];
    for filters in [
        json!({"vin": hidden.vin}),
        json!({"stock_number": hidden.stock_number}),
    ] {
        let page = search_ok(&fx.app, with_filters(filters.clone())).await;
        assert_eq!(page["vehicles"], json!([]), "{filters}");
    }
    let page = search_ok(
        &fx.app,
        json!({"organization_id": ORG, "query": hidden.vin.clone().unwrap()}),
    )
    .await;
    assert_eq!(page["vehicles"], json!([]));
    // Naming it is the same not-found as naming nothing.
    let named = search_err(
        &fx.app,
        json!({"organization_id": ORG, "rooftop_ids": [PRIVATE]}),
        NOT_FOUND,
    )
    .await;
    let unknown = search_err(
        &fx.app,
        json!({"organization_id": ORG, "rooftop_ids": ["roof.search-nowhere"]}),
        NOT_FOUND,
    )
    .await;
    assert_eq!(named["message"], unknown["message"]);
    // The other organization's search never shows ORG's vehicles.
    let east = walk(&fx.app, json!({"organization_id": OTHER_ORG}), 100).await;
    assert_eq!(east.ids(), default_order(&fx.east));
}

// ---------------------------------------------------------------------------
// Freshness and provenance
// ---------------------------------------------------------------------------

fn parse_time(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().unwrap_or_else(|| panic!("timestamp {v}")))
        .unwrap()
        .with_timezone(&Utc)
}

#[tokio::test]
async fn every_vehicle_carries_provenance_freshness_and_asserted_availability() {
    let fx = setup().await;
    let records: BTreeMap<&str, &VehicleRecord> = fx
        .visible()
        .into_iter()
        .map(|v| (v.vehicle_id.as_str(), v))
        .collect();
    let got = walk(&fx.app, org_args(), 100).await;
    let asked = Utc::now();
    assert_eq!(got.vehicles.len(), records.len());
    let mut stale = 0;
    for v in &got.vehicles {
        let record = records[v["vehicle_id"].as_str().unwrap()];
        assert_eq!(v["organization_id"], ORG);
        assert_eq!(v["rooftop_id"], record.rooftop_id.as_str());
        let source = &v["provenance"]["sources"][0];
        assert_eq!(source["source_name"], record.source.source_name.as_str());
        assert_eq!(source["authority"], "dealer_asserted");
        let digest = source["content_digest"].as_str().unwrap();
        assert!(
            digest.len() == 71
                && digest.starts_with("sha256:")
                && digest[7..].bytes().all(|b| b.is_ascii_hexdigit()),
            "{digest}"
        );
        assert_eq!(
            parse_time(&source["observed_at"]),
            record.source.observed_at
        );

        let sla = sla_of(&record.rooftop_id);
        let freshness = &v["freshness"];
        assert_eq!(
            parse_time(&freshness["observed_at"]),
            record.source.observed_at
        );
        let until = record.source.observed_at + Duration::seconds(sla);
        assert_eq!(parse_time(&freshness["valid_until"]), until);
        assert_eq!(freshness["max_age_seconds"], json!(sla));
        let expected = if asked > until { "stale" } else { "current" };
        assert_eq!(freshness["state"], expected, "{}", record.vehicle_id);
        stale += usize::from(expected == "stale");

        let availability = &v["availability"];
        assert_eq!(availability["status"], record.availability_status.as_str());
        assert_eq!(availability["authority_status"], "asserted");
        assert_eq!(availability["human_verification_required"], json!(true));
        assert!(
            availability["reason"]
                .as_str()
                .is_some_and(|r| !r.is_empty())
        );
        assert!(v.get("price").is_none(), "no generic price field");
        assert_eq!(
            v["advertised_price"]["amount"]["amount_minor"],
            json!(record.advertised_price.amount_minor())
        );
    }
    assert!(
        stale > 0 && stale < got.vehicles.len(),
        "fixture mixes both"
    );

    // The response names the searched snapshots as its sources, derived.
    let page = &got.pages[0];
    assert_eq!(page["provenance"]["authority_status"], "derived");
    let names: BTreeSet<&str> = page["provenance"]["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["source_name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(fx.north[0].source.source_name.as_str()),
        "{names:?}"
    );
    assert!(
        names.contains(fx.south[0].source.source_name.as_str()),
        "{names:?}"
    );
    assert!(page["trace_id"].as_str().is_some_and(|t| !t.is_empty()));
}

#[tokio::test]
async fn a_vehicle_observed_before_its_rooftop_sla_is_stale_and_makes_the_response_stale() {
    let fx = setup().await;
    // NORTH 6 was observed 3 hours ago (SLA 1 hour); NORTH 0 minutes ago.
    let old = &fx.north[6];
    let recent = &fx.north[0];
    assert!(old.source.observed_at < fx.now - Duration::hours(2));

    let alone = search_ok(&fx.app, with_filters(json!({"vin": old.vin}))).await;
    assert_eq!(alone["vehicles"][0]["freshness"]["state"], "stale");
    assert_eq!(alone["freshness"]["state"], "stale");
    assert_eq!(
        parse_time(&alone["freshness"]["observed_at"]),
        old.source.observed_at
    );

    let fresh = search_ok(&fx.app, with_filters(json!({"vin": recent.vin}))).await;
    assert_eq!(fresh["vehicles"][0]["freshness"]["state"], "current");
    assert_eq!(fresh["freshness"]["state"], "current");

    // Both on one page: never better than the stalest; observed_at is the
    // oldest and valid_until the earliest.
    // The first 20 in vehicle_id order include NORTH 6 and SOUTH 6.
    let mixed = search_ok(
        &fx.app,
        json!({"organization_id": ORG, "page": {"limit": 20}}),
    )
    .await;
    let states: Vec<&str> = mixed["vehicles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["freshness"]["state"].as_str().unwrap())
        .collect();
    assert!(
        states.contains(&"stale") && states.contains(&"current"),
        "{states:?}"
    );
    assert_eq!(mixed["freshness"]["state"], "stale");
    let oldest = mixed["vehicles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| parse_time(&v["freshness"]["observed_at"]))
        .min()
        .unwrap();
    assert_eq!(parse_time(&mixed["freshness"]["observed_at"]), oldest);
    let earliest = mixed["vehicles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| parse_time(&v["freshness"]["valid_until"]))
        .min()
        .unwrap();
    assert_eq!(parse_time(&mixed["freshness"]["valid_until"]), earliest);

    // A page holding only current vehicles, of a result set whose later
    // pages hold stale ones, is stale: the response never claims better
    // freshness than the result set it pages through (DAP 6.4).
    // (This used to read `current`, describing the page alone.)
    let args = json!({"organization_id": ORG, "rooftop_ids": [NORTH],
                      "sort": {"field": "observed_at", "order": "desc"}, "page": {"limit": 5}});
    let first = search_ok(&fx.app, args.clone()).await;
    let page_states: Vec<&str> = first["vehicles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["freshness"]["state"].as_str().unwrap())
        .collect();
    assert!(
        page_states.iter().all(|s| *s == "current"),
        "{page_states:?}"
    );
    assert_eq!(
        first["freshness"]["state"], "stale",
        "{}",
        first["freshness"]
    );
    assert_eq!(
        parse_time(&first["freshness"]["observed_at"]),
        fx.north.iter().map(|v| v.source.observed_at).min().unwrap()
    );
    // Every page of the walk says the same.
    let mut cursor = first["page"]["next_cursor"].as_str().map(str::to_owned);
    let mut pages = 1;
    while let Some(c) = cursor {
        let mut next = args.clone();
        next["page"]["cursor"] = json!(c);
        let page = search_ok(&fx.app, next).await;
        assert_eq!(page["freshness"]["state"], "stale", "page {pages}");
        cursor = page["page"]["next_cursor"].as_str().map(str::to_owned);
        pages += 1;
    }
    assert!(pages > 1);
    // A result set that is current throughout is current.
    let current_set = search_ok(
        &fx.app,
        json!({"organization_id": ORG, "rooftop_ids": [NORTH],
               "filters": {"vin": recent.vin}, "page": {"limit": 5}}),
    )
    .await;
    assert_eq!(current_set["freshness"]["state"], "current");
}

#[tokio::test]
async fn an_empty_result_describes_the_searched_snapshots() {
    let fx = setup().await;
    let snapshots = fx.store.latest_snapshots().await.unwrap();
    let created = |rooftop: &str| {
        snapshots
            .iter()
            .find(|s| s.rooftop_id == rooftop)
            .unwrap()
            .created_at
    };
    let page = search_ok(&fx.app, with_filters(json!({"make": ["Lamborghini"]}))).await;
    assert_eq!(page["vehicles"], json!([]));
    assert_eq!(page["page"], json!({"has_more": false}));
    let freshness = &page["freshness"];
    // The searched snapshots are NORTH's and SOUTH's (PRIVATE is not
    // visible): the oldest import, the earliest validity, the smaller SLA.
    let oldest = created(NORTH).min(created(SOUTH));
    assert_eq!(parse_time(&freshness["observed_at"]), oldest, "{freshness}");
    let until =
        (created(NORTH) + Duration::seconds(3600)).min(created(SOUTH) + Duration::seconds(900));
    assert_eq!(parse_time(&freshness["valid_until"]), until);
    assert_eq!(freshness["max_age_seconds"], json!(900));
    assert_eq!(freshness["state"], "current");

    // One rooftop searched: its snapshot and SLA alone.
    let north_only = search_ok(
        &fx.app,
        json!({"organization_id": ORG, "rooftop_ids": [NORTH], "query": "lamborghini"}),
    )
    .await;
    assert_eq!(north_only["vehicles"], json!([]));
    assert_eq!(
        parse_time(&north_only["freshness"]["observed_at"]),
        created(NORTH)
    );
    assert_eq!(north_only["freshness"]["max_age_seconds"], json!(3600));

    // A rooftop that never had a snapshot: nothing to vouch for.
    let vacant = search_ok(
        &fx.app,
        json!({"organization_id": OTHER_ORG, "rooftop_ids": [VACANT]}),
    )
    .await;
    assert_eq!(vacant["vehicles"], json!([]));
    assert_eq!(vacant["freshness"]["state"], "unknown", "{vacant}");
}

#[tokio::test]
async fn a_cursor_continues_on_a_replica_that_never_held_its_snapshot() {
    let fx = setup().await;
    let args = json!({
        "organization_id": ORG,
        "rooftop_ids": [NORTH],
        "sort": {"field": "advertised_price", "order": "desc"}
    });
    let old_order = sorted_ids(&fx.north, Field::Price, true, fx.now);
    let mut first_args = args.clone();
    first_args["page"] = json!({"limit": 30});
    let first = search_ok(&fx.app, first_args).await;
    let mut got: Vec<String> = first["vehicles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["vehicle_id"].as_str().unwrap().to_owned())
        .collect();
    let mut cursor = cursor_of(&first);

    // A new snapshot lands, then a second replica starts on the same store:
    // it only ever loads the new snapshot.
    let removed = old_order[50].clone();
    let next: Vec<VehicleRecord> = fx
        .north
        .iter()
        .filter(|v| v.vehicle_id != removed)
        .cloned()
        .collect();
    fx.store
        .create_snapshot(ORG, NORTH, &test_source("north-2.csv", fx.now), &next)
        .await
        .unwrap();
    let replica = spawn_on(fx.app.db_dir.clone(), fx.app.database_url.clone(), |s| {
        s.no_demo = true;
    })
    .await;
    while let Some(c) = cursor {
        let mut a = args.clone();
        a["page"] = json!({"limit": 30, "cursor": c});
        let page = search_ok(&replica, a).await;
        cursor = check_page(&page, 30, Some(&first["facets"]));
        got.extend(
            page["vehicles"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["vehicle_id"].as_str().unwrap().to_owned()),
        );
    }
    assert_eq!(
        got, old_order,
        "the replica finishes on the pinned snapshot"
    );
    let fresh = walk(&replica, args, 30).await;
    assert_eq!(fresh.ids(), sorted_ids(&next, Field::Price, true, fx.now));
}

#[tokio::test]
async fn age_filters_select_the_same_set_on_every_page_of_a_pagination() {
    // Bases every 100 ms around "10 days ago": whatever the instant of the
    // first page, several vehicles reach exactly 10 complete days of age
    // within the second of it.
    let now = Utc::now().trunc_subsecs(0);
    let (dir, url) = fresh_database().await;
    let store = gateway::store::open(&url).await.expect("store opens");
    load_search_dealers(store.as_ref(), "dealers.yaml", now).await;
    let start = now + Duration::seconds(2) - Duration::days(10);
    let vehicles: Vec<VehicleRecord> = (0..150)
        .map(|k| {
            let mut v = test_vehicle(ORG, NORTH, &format!("veh.{k:03}.n"), "1NRTH", k, now);
            v.stocked_at = Some(start + Duration::milliseconds(100 * i64::try_from(k).unwrap()));
            v
        })
        .collect();
    store
        .create_snapshot(ORG, NORTH, &test_source("north.csv", now), &vehicles)
        .await
        .unwrap();
    let app = spawn_on(dir, url, |s| s.no_demo = true).await;
    // Ask in the middle of a second, inside the window of bases.
    loop {
        let t = Utc::now();
        let frac = t.timestamp_subsec_millis();
        if t > start + Duration::days(10) + Duration::seconds(1) && (400..600).contains(&frac) {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(20)).await;
    }
    let args = with_filters(json!({"inventory_age_min_days": 10}));
    let got = walk(&app, args, 5).await;
    let total: u64 = got.pages[0]["facets"]["condition"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(
        got.vehicles.len() as u64,
        total,
        "every counted vehicle is paged"
    );
}
