//! The typed request against the tree it is read from.

use serde_json::{Value, json};

use super::{SearchArgs, SearchQuery, query_fingerprint};

fn args(v: &Value) -> SearchArgs {
    SearchArgs::deserialize(v).expect("a search request")
}

use serde::Deserialize as _;

/// The cursor binding is computed from the typed arguments; it must be
/// the request's own fingerprint, or a cursor issued before this type
/// existed, or computed by a client test from the tree, would not open.
#[test]
fn the_typed_fingerprint_is_the_request_fingerprint() {
    let requests = [
        json!({"organization_id": "org.a"}),
        json!({"organization_id": "org.a", "rooftop_ids": ["r.b", "r.a"], "query": "Ford  f-150",
                   "filters": {"make": ["Ford"], "model": [], "year_min": 2020, "year_max": 2020.0,
                               "price_min": {"amount_minor": 100, "currency": "USD"},
                               "odometer_max": {"value": 40000, "unit": "mi"},
                               "inventory_age_max_days": 30, "availability": ["available"],
                               "vin": "1FTFW1E5000000002", "stock_number": "S1"},
                   "sort": {"field": "odometer", "order": "desc"},
                   "page": {"limit": 10, "cursor": "abc"}}),
        json!({"organization_id": "org.a", "filters": {}}),
        json!({"organization_id": "org.a", "filters": {"make": []}, "page": {}}),
        json!({"organization_id": "org.a", "filters": {"price_max": {"amount_minor": 1e20, "currency": "CAD"}}}),
    ];
    for request in &requests {
        assert_eq!(
            args(request).fingerprint(),
            query_fingerprint(request),
            "{request}"
        );
    }
    // And it still tells queries apart.
    assert_ne!(
        args(&requests[0]).fingerprint(),
        args(&requests[1]).fingerprint()
    );
}

/// Numbers the schema's `integer` admits but the engine cannot hold keep
/// their precise, value-free error with its pointer.
#[test]
fn unrepresentable_integers_are_pointed_errors() {
    let cases = [
        (json!({"year_min": 2020.5}), "/filters/year_min"),
        (json!({"year_max": 1e20}), "/filters/year_max"),
        (
            json!({"inventory_age_min_days": -1}),
            "/filters/inventory_age_min_days",
        ),
        (
            json!({"price_min": {"amount_minor": 1e20, "currency": "USD"}}),
            "/filters/price_min",
        ),
        (
            json!({"odometer_min": {"value": 1e20, "unit": "km"}}),
            "/filters/odometer_min",
        ),
        (json!({"condition": ["scrapped"]}), "/filters/condition"),
    ];
    for (filters, pointer) in cases {
        let e = SearchQuery::compile(&args(
            &json!({"organization_id": "org.a", "filters": filters}),
        ))
        .expect_err("refused");
        assert_eq!(e.pointer, pointer, "{filters}");
        assert!(!e.message.contains("1e20") && !e.message.contains("scrapped"));
    }
    let e = SearchQuery::compile(&args(
        &json!({"organization_id": "org.a", "page": {"limit": 101}}),
    ))
    .expect_err("refused");
    assert_eq!(e.pointer, "/page/limit");
    // Not a search request at all: refused at the root, without
    // serde's message (which can quote the value).
    let e = SearchQuery::parse(&json!({"organization_id": "org.a", "nickname": "secret"}))
        .expect_err("refused");
    assert_eq!(e.pointer, "");
    assert!(!e.message.contains("secret") && !e.message.contains("nickname"));
}

/// The cross-field rules say which members disagree and what would be
/// accepted, and repeat no value (DAP-ERR-002).
#[test]
fn cross_field_errors_name_both_members_and_the_fix() {
    let cases = [
        (
            json!({"year_min": 2030, "year_max": 2010}),
            "/filters/year_min",
            "filters.year_min must not be greater than filters.year_max: give a minimum at most the maximum (swap the two if they are reversed), or leave one out.",
        ),
        (
            json!({"price_min": {"amount_minor": 900, "currency": "USD"},
                       "price_max": {"amount_minor": 100, "currency": "USD"}}),
            "/filters/price_min",
            "filters.price_min must not be greater than filters.price_max",
        ),
        (
            json!({"price_min": {"amount_minor": 100, "currency": "USD"},
                       "price_max": {"amount_minor": 900, "currency": "CAD"}}),
            "/filters/price_max/currency",
            "filters.price_max.currency must be the currency of filters.price_min",
        ),
        (
            json!({"odometer_min": {"value": 9, "unit": "km"},
                       "odometer_max": {"value": 5, "unit": "mi"}}),
            "/filters/odometer_min",
            "filters.odometer_min must not be greater than filters.odometer_max (compared exactly",
        ),
        (
            json!({"inventory_age_min_days": 31, "inventory_age_max_days": 30}),
            "/filters/inventory_age_min_days",
            "filters.inventory_age_min_days must not be greater than filters.inventory_age_max_days",
        ),
    ];
    for (filters, pointer, words) in cases {
        let e = SearchQuery::compile(&args(
            &json!({"organization_id": "org.a", "filters": filters}),
        ))
        .expect_err("refused");
        assert_eq!(e.pointer, pointer, "{filters}");
        assert!(e.message.starts_with(words), "{}", e.message);
        for value in ["2030", "2010", "900", "CAD", "31"] {
            assert!(!e.message.contains(value), "{value} echoed: {}", e.message);
        }
    }
}
