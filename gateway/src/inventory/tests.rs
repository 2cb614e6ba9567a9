//! Tests of the snapshot index, search semantics, sealed cursors and the
//! DAP vehicle renderer.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use pricing::{Currency, Money};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::cursor::{self, CursorBinding, CursorError, CursorPayload, INVALID_CURSOR_MESSAGE};
use super::index::{SnapshotIndex, SnapshotMeta};
use super::model::{DistanceUnit, Odometer, VehicleRecord, VehicleSource};
use super::render::{self, FreshnessBasis, RenderContext};
use super::search::{self, FacetKey, PageKey, SearchQuery, SortKey};

use rendering::{ctx, vehicle_validator};

const ORG: &str = "org.lakeshore";

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 9, 1, 12, 0, 0).unwrap()
}

fn digest() -> String {
    format!("sha256:{}", "ab".repeat(32))
}

/// A plausible used car; tests change what they need.
fn car(rooftop: &str, n: usize) -> VehicleRecord {
    VehicleRecord {
        vehicle_id: format!("veh.{rooftop}.{n:05}"),
        organization_id: ORG.into(),
        rooftop_id: rooftop.into(),
        vin: Some(format!("1FTFW1E5{n:09}")),
        stock_number: Some(format!("S{n:04}")),
        year: 2021,
        make: "Ford".into(),
        model: "F-150".into(),
        trim: Some("XLT SuperCrew".into()),
        condition: "used".into(),
        vehicle_type: Some("truck".into()),
        body_style: Some("Crew Cab Pickup".into()),
        exterior_color: Some("Oxford White".into()),
        interior_color: Some("Black".into()),
        odometer: Some(Odometer {
            value: 18_420,
            unit: DistanceUnit::Mi,
            status: None,
        }),
        powertrain: Some(crate::dap::Powertrain {
            fuel_type: Some("gasoline".into()),
            drivetrain: Some("four_wd".into()),
            ..Default::default()
        }),
        features: vec!["Tow package".into()],
        media: vec![crate::dap::MediaAsset::image(
            "https://cdn.example.com/1.jpg",
            0,
        )],
        listing_url: Some("https://dealer.example.com/v/1".into()),
        window_sticker_url: None,
        advertised_price: Money::from_minor(4_287_500, Currency::USD),
        required_dealer_charges: Some(vec![]),
        conditional_adjustments: Some(vec![]),
        government_charges_status: None,
        availability_status: "available".into(),
        stocked_at: Some(now() - Duration::days(10)),
        first_public_listing_at: None,
        history_report_status: None,
        history_reports: vec![],
        certification_type: None,
        used_evidence: Default::default(),
        claims: Default::default(),
        source: VehicleSource {
            source_name: format!("dap-csv:{rooftop}.csv"),
            source_record_id: Some(format!("S{n:04}")),
            authority: "dealer_asserted".into(),
            content_digest: digest(),
            observed_at: now() - Duration::minutes(5),
            transformations: vec!["csv row to DAP vehicle".into()],
        },
    }
}

fn index(rooftop: &str, records: Vec<VehicleRecord>) -> Arc<SnapshotIndex> {
    Arc::new(SnapshotIndex::build(
        SnapshotMeta {
            snapshot_id: format!("snap.{rooftop}.1"),
            organization_id: ORG.into(),
            rooftop_id: rooftop.into(),
            version: 1,
            created_at: now() - Duration::minutes(5),
        },
        900,
        records,
    ))
}

fn query(args: Value) -> SearchQuery {
    SearchQuery::parse(&args).expect("valid query")
}

/// All matching vehicle ids (walking every page with limit 100).
fn ids(indexes: &[Arc<SnapshotIndex>], args: Value) -> Vec<String> {
    let q = query(args);
    let mut out = Vec::new();
    let mut after: Option<PageKey> = None;
    loop {
        let page = search::search(indexes, &q, after.as_ref(), now());
        out.extend(
            page.vehicles
                .iter()
                .map(|(ix, row)| ix.record(*row).vehicle_id.clone()),
        );
        match page.next {
            Some(k) => after = Some(k),
            None => return out,
        }
    }
}

fn filter_ids(records: Vec<VehicleRecord>, filters: Value) -> Vec<String> {
    let ix = index("roof.a", records);
    ids(&[ix], json!({"organization_id": ORG, "filters": filters}))
}

fn nth(n: usize) -> String {
    format!("veh.roof.a.{n:05}")
}

// ---------------------------------------------------------------- filters

#[test]
fn enumerated_filters_match_any_listed_value() {
    let mut v = vec![car("roof.a", 0), car("roof.a", 1), car("roof.a", 2)];
    v[1].vehicle_type = Some("suv".into());
    v[2].vehicle_type = None;
    v[1].condition = "new".into();
    v[2].availability_status = "in_transit".into();
    assert_eq!(
        filter_ids(v.clone(), json!({"vehicle_type": ["suv", "truck"]})),
        [nth(0), nth(1)]
    );
    assert_eq!(
        filter_ids(v.clone(), json!({"condition": ["new"]})),
        [nth(1)]
    );
    assert_eq!(
        filter_ids(
            v.clone(),
            json!({"availability": ["in_transit", "on_hold"]})
        ),
        [nth(2)]
    );
    assert_eq!(
        filter_ids(v.clone(), json!({"vehicle_type": []})),
        [nth(0), nth(1), nth(2)],
        "an empty list is no constraint"
    );
}

#[test]
fn make_and_model_are_case_insensitive_exact() {
    let mut v = vec![car("roof.a", 0), car("roof.a", 1), car("roof.a", 2)];
    v[1].make = "FORD".into();
    v[2].make = "Fordson".into();
    v[2].model = "f-150".into();
    assert_eq!(
        filter_ids(v.clone(), json!({"make": ["ford"]})),
        [nth(0), nth(1)]
    );
    assert_eq!(
        filter_ids(v.clone(), json!({"model": ["F-150"]})),
        [nth(0), nth(1), nth(2)]
    );
    assert!(filter_ids(v, json!({"make": ["For"]})).is_empty());
}

#[test]
fn year_bounds_are_inclusive() {
    let mut v: Vec<_> = (0..4).map(|n| car("roof.a", n)).collect();
    for (n, r) in v.iter_mut().enumerate() {
        r.year = 2019 + i32::try_from(n).unwrap();
    }
    assert_eq!(
        filter_ids(v, json!({"year_min": 2020, "year_max": 2021})),
        [nth(1), nth(2)]
    );
}

#[test]
fn price_filter_never_matches_another_currency() {
    let mut v = vec![car("roof.a", 0), car("roof.a", 1), car("roof.a", 2)];
    v[0].advertised_price = Money::from_minor(3_000_000, Currency::USD);
    v[1].advertised_price = Money::from_minor(3_000_000, Currency::CAD);
    v[2].advertised_price = Money::from_minor(5_000_000, Currency::USD);
    let usd = |min: i64, max: i64| {
        json!({"price_min": {"amount_minor": min, "currency": "USD"},
               "price_max": {"amount_minor": max, "currency": "USD"}})
    };
    assert_eq!(filter_ids(v.clone(), usd(0, 4_000_000)), [nth(0)]);
    assert_eq!(
        filter_ids(v.clone(), usd(3_000_000, 5_000_000)),
        [nth(0), nth(2)]
    );
    assert_eq!(
        filter_ids(
            v.clone(),
            json!({"price_max": {"amount_minor": 9_999_999, "currency": "CAD"}})
        ),
        [nth(1)]
    );
    assert!(
        filter_ids(
            v,
            json!({"price_min": {"amount_minor": 0, "currency": "EUR"}})
        )
        .is_empty()
    );
}

#[test]
fn odometer_compares_miles_and_kilometres_exactly() {
    let mut v = vec![car("roof.a", 0), car("roof.a", 1), car("roof.a", 2)];
    // 18,420 mi = 29,644.11648 km.
    v[0].odometer = Some(Odometer {
        value: 18_420,
        unit: DistanceUnit::Mi,
        status: None,
    });
    v[1].odometer = Some(Odometer {
        value: 29_000,
        unit: DistanceUnit::Km,
        status: None,
    });
    v[2].odometer = None;
    let km = |k: &str, value: i64| json!({ k: {"value": value, "unit": "km"} });
    assert_eq!(filter_ids(v.clone(), km("odometer_max", 29_000)), [nth(1)]);
    assert_eq!(filter_ids(v.clone(), km("odometer_max", 29_644)), [nth(1)]);
    assert_eq!(
        filter_ids(v.clone(), km("odometer_max", 29_645)),
        [nth(0), nth(1)]
    );
    assert_eq!(filter_ids(v.clone(), km("odometer_min", 29_001)), [nth(0)]);
    assert!(
        filter_ids(v.clone(), km("odometer_min", 0)).len() == 2,
        "unknown odometer never matches an odometer filter"
    );

    // Equality at an exact conversion: 15,625 mi = 25,146 km exactly.
    let mut w = vec![car("roof.a", 0), car("roof.a", 1)];
    w[0].odometer = Some(Odometer {
        value: 15_625,
        unit: DistanceUnit::Mi,
        status: None,
    });
    w[1].odometer = Some(Odometer {
        value: 25_146,
        unit: DistanceUnit::Km,
        status: None,
    });
    let both = [nth(0), nth(1)];
    assert_eq!(filter_ids(w.clone(), km("odometer_max", 25_146)), both);
    assert_eq!(filter_ids(w.clone(), km("odometer_min", 25_146)), both);
    assert!(filter_ids(w.clone(), km("odometer_max", 25_145)).is_empty());
    assert_eq!(
        filter_ids(
            w.clone(),
            json!({"odometer_min": {"value": 15_625, "unit": "mi"},
                   "odometer_max": {"value": 15_625, "unit": "mi"}})
        ),
        both
    );
    assert!(filter_ids(w, json!({"odometer_min": {"value": 15_626, "unit": "mi"}})).is_empty());
}

#[test]
fn inventory_age_counts_complete_days_from_the_basis() {
    let mut v: Vec<_> = (0..5).map(|n| car("roof.a", n)).collect();
    v[0].stocked_at = Some(now() - Duration::days(3)); // exactly 3 days
    v[1].stocked_at = Some(now() - Duration::days(3) + Duration::microseconds(1)); // 2 days
    v[2].stocked_at = None;
    v[2].first_public_listing_at = Some(now() - Duration::days(4) + Duration::hours(1)); // 3 days
    v[3].stocked_at = None; // unknown basis
    v[4].stocked_at = Some(now() + Duration::hours(1)); // future basis
    assert_eq!(
        filter_ids(v.clone(), json!({"inventory_age_min_days": 3})),
        [nth(0), nth(2)]
    );
    assert_eq!(
        filter_ids(v.clone(), json!({"inventory_age_max_days": 2})),
        [nth(1)]
    );
    assert_eq!(
        filter_ids(
            v,
            json!({"inventory_age_min_days": 0, "inventory_age_max_days": 3})
        ),
        [nth(0), nth(1), nth(2)]
    );
}

#[test]
fn unknown_history_and_certification_match_unknown() {
    let mut v = vec![car("roof.a", 0), car("roof.a", 1), car("roof.a", 2)];
    v[0].history_report_status = Some("available".into());
    v[0].certification_type = Some("manufacturer_cpo".into());
    v[1].history_report_status = Some("unknown".into());
    assert_eq!(
        filter_ids(v.clone(), json!({"history_report_status": ["unknown"]})),
        [nth(1), nth(2)]
    );
    assert_eq!(
        filter_ids(v.clone(), json!({"history_report_status": ["available"]})),
        [nth(0)]
    );
    assert_eq!(
        filter_ids(v.clone(), json!({"certification_type": ["unknown"]})),
        [nth(1), nth(2)]
    );
    assert_eq!(
        filter_ids(v, json!({"certification_type": ["manufacturer_cpo"]})),
        [nth(0)]
    );
}

#[test]
fn vin_and_stock_number_are_exact() {
    let v: Vec<_> = (0..3).map(|n| car("roof.a", n)).collect();
    let vin = v[1].vin.clone().unwrap();
    assert_eq!(filter_ids(v.clone(), json!({"vin": vin})), [nth(1)]);
    assert_eq!(
        filter_ids(v.clone(), json!({"stock_number": "S0002"})),
        [nth(2)]
    );
    assert!(filter_ids(v.clone(), json!({"stock_number": "s0002"})).is_empty());
    assert!(filter_ids(v, json!({"vin": vin, "stock_number": "S0002"})).is_empty());
}

#[test]
fn lookups_by_id_vin_and_stock_number() {
    let ix = index("roof.a", (0..50).rev().map(|n| car("roof.a", n)).collect());
    let row = ix.find_vehicle_id(&nth(7)).unwrap();
    assert_eq!(ix.record(row).vehicle_id, nth(7));
    assert!(ix.find_vehicle_id("veh.nope").is_none());
    let vin = car("roof.a", 9).vin.unwrap();
    assert_eq!(ix.find_vin(&vin).len(), 1);
    assert_eq!(
        ix.record(ix.find_stock_number("S0011")[0] as usize)
            .vehicle_id,
        nth(11)
    );
    assert!(ix.find_stock_number("S9999").is_empty());
}

#[test]
fn text_query_requires_every_token() {
    let mut v: Vec<_> = (0..4).map(|n| car("roof.a", n)).collect();
    v[1].make = "Toyota".into();
    v[1].model = "RAV4".into();
    v[1].exterior_color = Some("Blueprint".into());
    v[2].trim = Some("Lariat".into());
    v[3].year = 2019;
    let ix = index("roof.a", v);
    let q = |text: &str| {
        ids(
            std::slice::from_ref(&ix),
            json!({"organization_id": ORG, "query": text}),
        )
    };
    assert_eq!(q("toyota"), [nth(1)]);
    assert_eq!(q("  FORD   lariat "), [nth(2)]);
    assert_eq!(q("rav"), [nth(1)]);
    assert_eq!(q("blue"), [nth(1)]);
    assert_eq!(q("2019 f-150"), [nth(3)]);
    assert_eq!(q("s0003"), [nth(3)]);
    assert_eq!(q("1ftfw1e5000000002"), [nth(2)]);
    assert_eq!(q("used crew"), [nth(0), nth(1), nth(2), nth(3)]);
    assert!(q("ford toyota").is_empty());
    assert!(q("fordf-150").is_empty(), "a token never spans two fields");
}

#[test]
fn cross_field_rules_are_value_free_errors() {
    let bad = |filters: Value| {
        SearchQuery::parse(&json!({"organization_id": ORG, "filters": filters})).unwrap_err()
    };
    let e = bad(json!({"price_min": {"amount_minor": 1, "currency": "USD"},
                       "price_max": {"amount_minor": 2, "currency": "CAD"}}));
    assert_eq!(e.pointer, "/filters/price_max/currency");
    assert!(!e.to_string().contains("CAD"));
    assert_eq!(
        bad(json!({"year_min": 2022, "year_max": 2021})).pointer,
        "/filters/year_min"
    );
    assert_eq!(
        bad(json!({"price_min": {"amount_minor": 5, "currency": "USD"},
                   "price_max": {"amount_minor": 4, "currency": "USD"}}))
        .pointer,
        "/filters/price_min"
    );
    // 1 mi > 1 km.
    assert_eq!(
        bad(json!({"odometer_min": {"value": 1, "unit": "mi"},
                   "odometer_max": {"value": 1, "unit": "km"}}))
        .pointer,
        "/filters/odometer_min"
    );
    assert_eq!(
        bad(json!({"inventory_age_min_days": 3, "inventory_age_max_days": 2})).pointer,
        "/filters/inventory_age_min_days"
    );
    let q = query(json!({"organization_id": ORG}));
    assert_eq!(q.limit, search::DEFAULT_LIMIT);
    assert!(q.sort.is_none() && q.cursor.is_none());
}

#[test]
fn fingerprint_ignores_page_and_key_order_but_not_filters() {
    let a = json!({"organization_id": ORG, "filters": {"year_min": 2020, "make": ["Ford"]},
                   "page": {"limit": 5}});
    let b = json!({"filters": {"make": ["Ford"], "year_min": 2020}, "organization_id": ORG,
                   "page": {"limit": 50, "cursor": "x"}});
    let c = json!({"organization_id": ORG, "filters": {"year_min": 2021, "make": ["Ford"]}});
    assert_eq!(query(a.clone()).fingerprint, query(b).fingerprint);
    assert_ne!(query(a).fingerprint, query(c).fingerprint);
}

#[test]
fn search_skips_foreign_organizations_and_unrequested_rooftops() {
    let a = index("roof.a", vec![car("roof.a", 0)]);
    let b = index("roof.b", vec![car("roof.b", 0)]);
    let all = ids(&[a.clone(), b.clone()], json!({"organization_id": ORG}));
    assert_eq!(all.len(), 2);
    let only_b = ids(
        &[a.clone(), b.clone()],
        json!({"organization_id": ORG, "rooftop_ids": ["roof.b"]}),
    );
    assert_eq!(only_b, ["veh.roof.b.00000"]);
    assert!(ids(&[a, b], json!({"organization_id": "org.other"})).is_empty());
}

// ------------------------------------------------------------------ sort

/// The documented order, computed naively from the records.
fn reference_cmp(
    sort: Option<(&str, bool)>,
    a: &VehicleRecord,
    b: &VehicleRecord,
    now: DateTime<Utc>,
) -> Ordering {
    let key = |r: &VehicleRecord| -> Option<(String, i128)> {
        let (field, _) = sort?;
        match field {
            "advertised_price" => Some((
                r.advertised_price.currency().code().to_owned(),
                i128::from(r.advertised_price.amount_minor()),
            )),
            "year" => Some((String::new(), i128::from(r.year))),
            "odometer" => r.odometer.map(|o| (String::new(), o.millimetres())),
            "inventory_age_days" => r
                .stocked_at
                .or(r.first_public_listing_at)
                .filter(|b| *b <= now)
                .map(|b| (String::new(), -i128::from(b.timestamp_micros()))),
            "observed_at" => Some((
                String::new(),
                i128::from(r.source.observed_at.timestamp_micros()),
            )),
            _ => unreachable!(),
        }
    };
    let by_key = match (sort, key(a), key(b)) {
        (None, _, _) | (_, None, None) => Ordering::Equal,
        (_, Some(_), None) => Ordering::Less,
        (_, None, Some(_)) => Ordering::Greater,
        (Some((_, desc)), Some((ca, va)), Some((cb, vb))) => ca
            .cmp(&cb)
            .then_with(|| if desc { vb.cmp(&va) } else { va.cmp(&vb) }),
    };
    by_key
        .then_with(|| a.vehicle_id.cmp(&b.vehicle_id))
        .then_with(|| a.rooftop_id.cmp(&b.rooftop_id))
}

fn sorted_reference(
    records: &[VehicleRecord],
    sort: Option<(&str, bool)>,
    keep: impl Fn(&VehicleRecord) -> bool,
) -> Vec<String> {
    let mut v: Vec<&VehicleRecord> = records.iter().filter(|r| keep(r)).collect();
    v.sort_by(|a, b| reference_cmp(sort, a, b, now()));
    v.iter().map(|r| r.vehicle_id.clone()).collect()
}

fn sort_args(sort: Option<(&str, bool)>, limit: usize) -> Value {
    let mut args = json!({"organization_id": ORG, "page": {"limit": limit}});
    if let Some((field, desc)) = sort {
        args["sort"] = json!({"field": field, "order": if desc { "desc" } else { "asc" }});
    }
    args
}

const SORTS: [Option<(&str, bool)>; 11] = [
    None,
    Some(("advertised_price", false)),
    Some(("advertised_price", true)),
    Some(("year", false)),
    Some(("year", true)),
    Some(("odometer", false)),
    Some(("odometer", true)),
    Some(("inventory_age_days", false)),
    Some(("inventory_age_days", true)),
    Some(("observed_at", false)),
    Some(("observed_at", true)),
];

#[test]
fn every_sort_with_ties_and_missing_keys() {
    let mut v: Vec<_> = (0..8).map(|n| car("roof.a", n)).collect();
    let prices = [
        (300, "USD"),
        (100, "CAD"),
        (300, "USD"),
        (200, "USD"),
        (900, "CAD"),
    ];
    for (i, (amount, cur)) in prices.iter().enumerate() {
        v[i].advertised_price = Money::try_new(*amount, cur).unwrap();
    }
    v[2].odometer = None;
    v[5].odometer = None;
    v[3].odometer = Some(Odometer {
        value: 29_000,
        unit: DistanceUnit::Km,
        status: None,
    });
    v[1].stocked_at = None;
    v[6].stocked_at = Some(now() + Duration::days(1));
    v[4].stocked_at = Some(now() - Duration::days(400));
    v[7].year = 2018;
    v[0].source.observed_at = now() - Duration::hours(3);
    let records = v.clone();
    let ix = index("roof.a", v);
    for sort in SORTS {
        let got = ids(std::slice::from_ref(&ix), sort_args(sort, 3));
        assert_eq!(got, sorted_reference(&records, sort, |_| true), "{sort:?}");
    }
    // Spot checks of the documented rules.
    let price_desc = ids(
        std::slice::from_ref(&ix),
        sort_args(Some(("advertised_price", true)), 100),
    );
    assert_eq!(price_desc[..2], [nth(4), nth(1)], "CAD first, then USD");
    let odo_desc = ids(
        std::slice::from_ref(&ix),
        sort_args(Some(("odometer", true)), 100),
    );
    assert_eq!(
        odo_desc[6..],
        [nth(2), nth(5)],
        "missing last when descending"
    );
    let odo_asc = ids(
        std::slice::from_ref(&ix),
        sort_args(Some(("odometer", false)), 100),
    );
    assert_eq!(odo_asc[0], nth(3), "29,000 km < 18,420 mi");
    assert_eq!(
        odo_asc[6..],
        [nth(2), nth(5)],
        "missing last when ascending"
    );
    let age_desc = ids(&[ix], sort_args(Some(("inventory_age_days", true)), 100));
    assert_eq!(age_desc[0], nth(4));
    assert_eq!(age_desc[6..], [nth(1), nth(6)]);
}

#[test]
fn facets_count_the_whole_filtered_set() {
    let mut v: Vec<_> = (0..10).map(|n| car("roof.a", n)).collect();
    v[0].make = "FORD".into();
    v[1].make = "Toyota".into();
    v[2].vehicle_type = None;
    v[3].year = 2020;
    v[4].availability_status = "on_hold".into();
    let mut w: Vec<_> = (0..3).map(|n| car("roof.b", n)).collect();
    w[0].make = "toyota".into();
    let ixs = [index("roof.a", v), index("roof.b", w)];
    let q = query(json!({"organization_id": ORG, "page": {"limit": 2}}));
    let page = search::search(&ixs, &q, None, now());
    assert_eq!(page.total, 13);
    assert_eq!(page.vehicles.len(), 2);
    for name in search::FACETS {
        let sum: u64 = page.facets[name].iter().map(|f| f.count).sum();
        assert_eq!(sum, 13, "{name}");
    }
    let make: Vec<(FacetKey, u64)> = page.facets["make"]
        .iter()
        .map(|f| (f.value.clone(), f.count))
        .collect();
    assert_eq!(
        make,
        [
            (FacetKey::Str("Ford".into()), 11),
            (FacetKey::Str("Toyota".into()), 2)
        ]
    );
    assert_eq!(
        page.facets["year"][1],
        search::FacetValue {
            value: FacetKey::Int(2020),
            count: 1
        }
    );
    assert!(
        page.facets["vehicle_type"]
            .iter()
            .any(|f| f.value == FacetKey::Str("unknown".into()) && f.count == 1)
    );
    let wire = serde_json::to_value(&page.facets["year"]).unwrap();
    assert_eq!(wire[0], json!({"value": 2021, "count": 12}));
}

// ------------------------------------------------------ timing (by hand)

/// `cargo test --release -p gateway --lib inventory::tests::timing -- --ignored --nocapture`
#[test]
#[ignore = "timing sanity check, run by hand in --release"]
fn timing_100k_vehicles_200_rooftops() {
    use std::time::Instant;
    fn rss_kib() -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
            })
            .unwrap_or(0)
    }
    let makes = [
        ("Ford", ["F-150", "Escape", "Explorer", "Mustang"]),
        ("Toyota", ["RAV4", "Camry", "Tacoma", "Highlander"]),
        ("Honda", ["CR-V", "Civic", "Accord", "Pilot"]),
        (
            "Chevrolet",
            ["Silverado 1500", "Equinox", "Tahoe", "Malibu"],
        ),
        ("Kia", ["Telluride", "Sportage", "Sorento", "Forte"]),
    ];
    let colors = [
        "Oxford White",
        "Agate Black",
        "Lunar Silver",
        "Blueprint",
        "Ruby Red",
    ];
    let rss0 = rss_kib();
    let t0 = Instant::now();
    let mut indexes = Vec::new();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = |m: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % m
    };
    let mut n = 0usize;
    for roof in 0..200 {
        let rooftop = format!("roof.{roof:03}");
        let mut records = Vec::with_capacity(500);
        for _ in 0..500 {
            let mut r = car(&rooftop, n);
            n += 1;
            r.vehicle_id = format!(
                "veh.{:016x}",
                (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            );
            let (make, models) = makes[rnd(5) as usize];
            r.make = make.into();
            r.model = models[rnd(4) as usize].into();
            r.year = 2012 + i32::try_from(rnd(14)).unwrap();
            r.exterior_color = Some(colors[rnd(5) as usize].into());
            r.condition = ["new", "used", "certified"][rnd(3) as usize].into();
            r.advertised_price = Money::from_minor(
                1_500_000 + i64::try_from(rnd(6_000_000)).unwrap(),
                if roof % 10 == 0 {
                    Currency::CAD
                } else {
                    Currency::USD
                },
            );
            r.odometer = (rnd(10) > 0).then(|| Odometer {
                value: i64::try_from(rnd(150_000)).unwrap(),
                unit: if roof % 10 == 0 {
                    DistanceUnit::Km
                } else {
                    DistanceUnit::Mi
                },
                status: None,
            });
            r.stocked_at = (rnd(8) > 0)
                .then(|| now() - Duration::minutes(i64::try_from(rnd(200 * 24 * 60)).unwrap()));
            r.features = (0..8).map(|i| format!("Feature number {i}")).collect();
            r.media = (0..8)
                .map(|i| {
                    crate::dap::MediaAsset::image(
                        format!("https://cdn.example.com/{}/{i}.jpg", r.vehicle_id),
                        i,
                    )
                })
                .collect();
            records.push(r);
        }
        indexes.push(Arc::new(SnapshotIndex::build(
            SnapshotMeta {
                snapshot_id: format!("snap.{rooftop}"),
                organization_id: ORG.into(),
                rooftop_id: rooftop,
                version: 1,
                created_at: now(),
            },
            900,
            records,
        )));
    }
    println!(
        "build 100k: {:?}, RSS +{} MiB (records + index)",
        t0.elapsed(),
        (rss_kib() - rss0) / 1024
    );

    let run = |name: &str, args: Value, deep: bool| {
        let q = query(args);
        let mut times = Vec::with_capacity(1000);
        let mut after: Option<PageKey> = None;
        let mut total = 0;
        for _ in 0..1000 {
            let t = Instant::now();
            let page = search::search(&indexes, &q, after.as_ref(), now());
            times.push(t.elapsed());
            total = page.total;
            if deep {
                after = page.next.clone();
            }
        }
        times.sort();
        println!(
            "{name:<28} total={total:>6} p50={:>8.3?} p99={:>8.3?} max={:>8.3?}",
            times[500], times[990], times[999]
        );
    };
    run("broad (vehicle_id)", json!({"organization_id": ORG}), false);
    run(
        "broad limit 100",
        json!({"organization_id": ORG, "page": {"limit": 100}}),
        false,
    );
    run(
        "price asc",
        json!({"organization_id": ORG, "sort": {"field": "advertised_price", "order": "asc"}}),
        false,
    );
    run(
        "price desc, deep pages",
        json!({"organization_id": ORG, "sort": {"field": "advertised_price", "order": "desc"},
               "page": {"limit": 100}}),
        true,
    );
    run(
        "vehicle_id, deep pages",
        json!({"organization_id": ORG, "page": {"limit": 100}}),
        true,
    );
    run(
        "odometer asc",
        json!({"organization_id": ORG, "sort": {"field": "odometer", "order": "asc"}}),
        false,
    );
    run(
        "text 'toyota rav4 blue'",
        json!({"organization_id": ORG, "query": "toyota rav4 blue"}),
        false,
    );
    run(
        "text 'silver'",
        json!({"organization_id": ORG, "query": "silver"}),
        false,
    );
    run(
        "text VIN fragment",
        json!({"organization_id": ORG, "query": "000012345"}),
        false,
    );
    run(
        "filters + age sort",
        json!({"organization_id": ORG, "filters": {"make": ["ford", "kia"], "year_min": 2018,
               "price_max": {"amount_minor": 4_000_000, "currency": "USD"},
               "inventory_age_min_days": 30},
               "sort": {"field": "inventory_age_days", "order": "desc"}}),
        false,
    );
    let q = query(json!({"organization_id": ORG, "page": {"limit": 100}}));
    let page = search::search(&indexes, &q, None, now());
    let mut times = Vec::new();
    let mut bytes = 0;
    for _ in 0..50 {
        let t = Instant::now();
        let rendered: Vec<Value> = page
            .vehicles
            .iter()
            .map(|(ix, row)| render::vehicle_owned(ix.record(*row), &ctx(false)))
            .collect();
        bytes = serde_json::to_string(&rendered).unwrap().len();
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "decode+render+serialize 100 vehicles: p50={:?} max={:?} ({bytes} bytes of JSON)",
        times[25], times[49]
    );
    let t = Instant::now();
    for _ in 0..10 {
        for (ix, row) in &page.vehicles {
            std::hint::black_box(ix.record(*row));
        }
    }
    println!("decode only, 100 vehicles: {:?}", t.elapsed() / 10);
    let heap: usize = indexes.iter().map(|i| i.heap_bytes()).sum();
    println!("index heap estimate: {} MiB", heap >> 20);
}

/// A search without filters reads each snapshot's
/// precomputed totals instead of visiting every row. It must answer exactly
/// what the row-by-row path answers: `year_min: 1886` matches every row
/// (the schema's first year) but forces the scan.
#[test]
fn unfiltered_search_from_totals_equals_the_row_by_row_scan() {
    let mut north: Vec<VehicleRecord> = (0..57).map(|n| car("roof.a", n)).collect();
    for (n, r) in north.iter_mut().enumerate() {
        r.make = ["Honda", "Ford", "honda", "Kia"][n % 4].into();
        r.year = 2015 + i32::try_from(n % 7).unwrap();
        r.availability_status = ["available", "sold", "on_hold"][n % 3].into();
        r.source.observed_at = now() - Duration::minutes(i64::try_from(n % 11).unwrap());
    }
    let south: Vec<VehicleRecord> = (100..123).map(|n| car("roof.b", n)).collect();
    let ixs = [index("roof.a", north), index("roof.b", south)];
    for limit in [1, 5, 20, 100] {
        let fast = query(json!({"organization_id": ORG, "page": {"limit": limit}}));
        let scan = query(
            json!({"organization_id": ORG, "page": {"limit": limit}, "filters": {"year_min": 1886}}),
        );
        let (mut a, mut b): (Option<PageKey>, Option<PageKey>) = (None, None);
        let mut pages = 0;
        loop {
            let x = search::search(&ixs, &fast, a.as_ref(), now());
            let y = search::search(&ixs, &scan, b.as_ref(), now());
            let rows = |p: &search::SearchPage| -> Vec<(String, usize)> {
                p.vehicles
                    .iter()
                    .map(|(ix, row)| (ix.rooftop_id().to_owned(), *row))
                    .collect()
            };
            assert_eq!(rows(&x), rows(&y), "limit {limit} page {pages}");
            assert_eq!(x.total, y.total);
            assert_eq!(x.facets, y.facets);
            assert_eq!(x.oldest_match_us, y.oldest_match_us);
            assert_eq!(x.next, y.next);
            pages += 1;
            match (x.next, y.next) {
                (Some(k), Some(l)) => {
                    a = Some(k);
                    b = Some(l);
                }
                _ => break,
            }
        }
        assert_eq!(pages, 80usize.div_ceil(limit));
    }
}

/// A row whose pieces fail the vehicle check is remembered (and logged);
/// the others stay served from their pieces.
#[test]
fn a_row_failing_the_piece_check_is_marked_alone() {
    let mut ix =
        Arc::try_unwrap(index("roof.a", (0..4).map(|n| car("roof.a", n)).collect())).unwrap();
    let bad = ix.vehicle_id(2).to_owned();
    let failures = ix.check_pieces(now(), &|v: &Value| {
        if v["vehicle_id"] == json!(bad) {
            Err("refused".into())
        } else {
            Ok(())
        }
    });
    assert_eq!(failures, 1);
    let marked: Vec<bool> = (0..4).map(|row| ix.piece_checked(row)).collect();
    assert_eq!(marked, [true, true, false, true]);
    // The schema itself accepts every piece the renderer writes.
    let validator = vehicle_validator();
    let checked = ix.check_pieces(now(), &|v: &Value| {
        if validator.is_valid(v) {
            Ok(())
        } else {
            Err("schema".into())
        }
    });
    assert_eq!(checked, 0);
}

/// Cursors: signing, opening, bounds and continuation.
mod cursors;
/// Index images: read back, they answer as the index built from records.
mod image;
/// Loading a snapshot: pieces and the rendering check while reading.
mod loading;
/// Property tests: the index against a reference scan.
mod properties;
/// Rendering: schema validity, availability, freshness, price claims.
mod rendering;
