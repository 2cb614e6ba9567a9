//! Used-vehicle evidence (profile dealeragent.used-vehicle.read/0.1).

use super::*;

fn used(changes: &[(&str, &str)]) -> Vec<String> {
    let mut all = vec![("condition", "used"), ("stock_number", "U1")];
    all.extend_from_slice(changes);
    row(&all)
}

fn vehicle_of(result: Result<ParsedFeed, IngestError>) -> VehicleRecord {
    let feed = result.unwrap_or_else(|e| panic!("{e}"));
    feed.rooftops[0].vehicles[0].clone()
}

#[test]
fn evidence_columns_are_read_into_the_record() {
    let history = json!([
        {"provider_id": "com.carfax", "provider_name": "CARFAX", "status": "available",
         "access": "public_link", "summary_sharing_authorized": true,
         "summary": {"accident_status": "no_events_reported", "damage_status": "unknown",
                     "title_brand_status": "no_brands_reported", "odometer_consistency": "consistent",
                     "owner_count_status": "unknown"}},
        {"provider_id": "com.experian.autocheck", "provider_name": "AutoCheck", "status": "available",
         "access": "on_request", "summary_sharing_authorized": true,
         "summary": {"accident_status": "events_reported", "damage_status": "unknown",
                     "title_brand_status": "unknown", "odometer_consistency": "unknown",
                     "owner_count_status": "unknown"}}
    ])
    .to_string();
    let title =
        json!({"status": "branded", "brands": ["flood"], "jurisdiction": "US-TX"}).to_string();
    let inspection = json!({"status": "partial", "inspection_authority": "dealer",
                            "inspected_at": "2026-08-30T10:00:00Z"})
    .to_string();
    let v = vehicle_of(dap(&[used(&[
        ("odometer_status", "not_actual"),
        ("history_reports_json", &history),
        ("title_json", &title),
        ("inspection_json", &inspection),
        ("certification_type", "dealer_certified"),
        ("certification_program", "Our Certified"),
    ])]));
    assert_eq!(
        v.used_evidence.odometer_status.as_deref(),
        Some("not_actual")
    );
    // The vehicle document's odometer carries the shared statuses too.
    assert_eq!(
        v.odometer.and_then(|o| o.status),
        Some(crate::inventory::model::OdometerStatus::NotActual)
    );
    assert_eq!(v.used_evidence.title.as_ref().unwrap().brands, ["flood"]);
    assert_eq!(
        v.used_evidence.inspection.as_ref().unwrap().status,
        "partial"
    );
    assert_eq!(
        v.used_evidence.certification_program.as_deref(),
        Some("Our Certified")
    );
    assert_eq!(v.history_reports.len(), 2);
    // Providers that contradict each other: conflicting, never the more
    // favorable "available" (DAP-UV-020).
    assert_eq!(v.history_report_status.as_deref(), Some("conflicting"));
    let d = crate::inventory::model::discrepancies(&v);
    let fields: Vec<&str> = d.iter().map(|x| x.field.as_str()).collect();
    assert_eq!(fields, ["history.accident_status", "title.brands"]);
    assert_eq!(d[0].source_names, ["AutoCheck", "CARFAX"]);

    // `exempt` is kept in the evidence but not put on the vehicle document,
    // whose odometer has no such status.
    let v = vehicle_of(dap(&[used(&[("odometer_status", "exempt")])]));
    assert_eq!(v.used_evidence.odometer_status.as_deref(), Some("exempt"));
    assert_eq!(v.odometer.and_then(|o| o.status), None);

    // Empty evidence cells are unknown: nothing stored.
    let v = vehicle_of(dap(&[used(&[])]));
    assert!(v.used_evidence.is_empty());
}

#[test]
fn bad_evidence_cells_name_the_column_the_place_and_the_rule() {
    one_problem(
        dap(&[used(&[("odometer_status", "rolled_back")])]),
        2,
        "odometer_status",
        "not a known value: expected one of actual|not_actual|exceeds_mechanical_limits|exempt|unknown",
    );
    one_problem(
        dap(&[used(&[
            ("odometer_value", ""),
            ("odometer_unit", ""),
            ("odometer_status", "actual"),
        ])]),
        2,
        "odometer_status",
        "odometer_status needs odometer_value",
    );
    one_problem(
        dap(&[used(&[(
            "title_json",
            r#"{"status":"branded","brands":[]}"#,
        )])]),
        2,
        "title_json",
        "at /brands: status branded needs at least one brand",
    );
    one_problem(
        dap(&[used(&[(
            "title_json",
            r#"{"status":"clear","brands":["salvage"]}"#,
        )])]),
        2,
        "title_json",
        "at /brands: status clear allows no brands",
    );
    one_problem(
        dap(&[used(&[(
            "title_json",
            r#"{"status":"clear","brands":["water"]}"#,
        )])]),
        2,
        "title_json",
        "at /brands/0: must be one of: salvage, rebuilt, flood, lemon, junk, fire, hail, odometer, manufacturer_buyback, other (enum, csvTitle)",
    );
    one_problem(
        dap(&[used(&[(
            "reconditioning_json",
            r#"{"status":"completed","items":[{"category":"recall","description":"Recall repair.","status":"declined"}]}"#,
        )])]),
        2,
        "reconditioning_json",
        "at /items/0/status: status completed is not allowed",
    );
    one_problem(
        dap(&[used(&[(
            "reconditioning_json",
            r#"{"status":"in_progress","completed_at":"2026-08-01T00:00:00Z","items":[]}"#,
        )])]),
        2,
        "reconditioning_json",
        "at /completed_at: completed_at is given but status is not completed",
    );
    one_problem(
        dap(&[used(&[(
            "inspection_json",
            r#"{"status":"completed","inspection_authority":"dealer","inspected_at":"2027-01-01T00:00:00Z"}"#,
        )])]),
        2,
        "inspection_json",
        "at /inspected_at: is in the future beyond the allowed clock skew",
    );
    one_problem(
        dap(&[used(&[(
            "inspection_json",
            r#"{"status":"completed","inspection_authority":"dealer","grade":{"value":"A"}}"#,
        )])]),
        2,
        "inspection_json",
        "at /grade: missing required property 'system'",
    );
    one_problem(
        dap(&[used(&[
            ("certification_type", "not_certified"),
            ("certification_program", "X"),
        ])]),
        2,
        "certification_program",
        "certification_program needs certification_type",
    );
    let twice = json!([
        {"provider_id": "com.carfax", "provider_name": "CARFAX", "status": "available",
         "access": "public_link", "summary_sharing_authorized": false},
        {"provider_id": "com.carfax", "provider_name": "CARFAX", "status": "unknown",
         "access": "none", "summary_sharing_authorized": false}
    ])
    .to_string();
    one_problem(
        dap(&[used(&[("history_reports_json", &twice)])]),
        2,
        "history_reports_json",
        "at /1/provider_id: repeats an earlier provider_id",
    );
    let unauthorized = json!([
        {"provider_id": "com.carfax", "provider_name": "CARFAX", "status": "available",
         "access": "public_link", "summary_sharing_authorized": false,
         "summary": {"accident_status": "no_events_reported", "damage_status": "unknown",
                     "title_brand_status": "unknown", "odometer_consistency": "unknown",
                     "owner_count_status": "unknown"}}
    ])
    .to_string();
    one_problem(
        dap(&[used(&[("history_reports_json", &unauthorized)])]),
        2,
        "history_reports_json",
        "at /0/summary: this key is not allowed here: summary_sharing_authorized is false",
    );
    let late = json!([
        {"provider_id": "com.carfax", "provider_name": "CARFAX", "status": "available",
         "access": "public_link", "summary_sharing_authorized": false,
         "observed_at": "2030-01-01T00:00:00Z"}
    ])
    .to_string();
    one_problem(
        dap(&[used(&[("history_reports_json", &late)])]),
        2,
        "history_reports_json",
        "at /0/observed_at: is in the future",
    );
}

#[test]
fn the_json_feed_reads_the_evidence_extension_with_the_same_rules() {
    let record = |evidence: serde_json::Value| {
        json!([{
            "rooftop_id": US, "vin": "1HGCY2F50RA000101", "stock_number": "J1", "year": 2022,
            "make": "Honda", "model": "Accord", "condition": "certified",
            "odometer": {"value": 20000, "unit": "mi"},
            "listing_url": "https://dealer.example/v/J1",
            "advertised_price": {"amount": {"amount_minor": 2500000, "currency": "USD"},
                                 "availability": "generally_available",
                                 "includes_required_dealer_charges": false},
            "availability": {"status": "available", "authority_status": "asserted",
                             "observed_at": "2026-09-01T14:00:00Z"},
            "used_vehicle": {
                "inventory_tenure": {
                    "stocked_at": "2026-08-01T00:00:00Z", "age_days": 31,
                    "age_as_of": "2026-09-01T14:00:00Z", "age_basis": "stocked_at",
                    "provenance": {"sources": [{"source_name": "dms", "authority": "dealer_asserted",
                                                "observed_at": "2026-09-01T14:00:00Z"}],
                                   "authority_status": "asserted"},
                    "freshness": {"observed_at": "2026-09-01T14:00:00Z", "state": "current"}},
                "history_report_status": "unknown",
                "certification_type": "manufacturer_cpo"},
            "extensions": {"dealergateway.used-vehicle-evidence": evidence}
        }])
        .to_string()
    };
    let parse = |text: String| parse_feed(FeedFormat::Json, "t.json", text.as_bytes(), &ctx(None));
    let good = json!({
        "odometer_status": "actual", "certification_program": "Honda Certified",
        "title": {"status": "clear", "brands": []},
        "reconditioning": {"status": "not_started", "items": []}
    });
    let v = vehicle_of(parse(record(good)));
    assert_eq!(
        v.used_evidence.certification_program.as_deref(),
        Some("Honda Certified")
    );
    assert_eq!(v.used_evidence.title.as_ref().unwrap().status, "clear");
    assert_eq!(
        v.odometer.and_then(|o| o.status),
        Some(crate::inventory::model::OdometerStatus::Actual)
    );

    let p = problems(parse(record(
        json!({"title": {"status": "branded", "brands": []}}),
    )));
    assert_eq!(p.len(), 1, "{p:#?}");
    assert_eq!(
        p[0].column,
        "/0/extensions/dealergateway.used-vehicle-evidence"
    );
    assert!(
        p[0].rule
            .contains("at /title/brands: status branded needs at least one brand"),
        "{p:#?}"
    );

    let p = problems(parse(record(json!({"inspection": {"status": "completed",
        "inspection_authority": "dealer", "inspected_at": "2027-01-01T00:00:00Z"}}))));
    assert_eq!(p.len(), 1, "{p:#?}");
    assert_eq!(
        p[0].column,
        "/0/extensions/dealergateway.used-vehicle-evidence/inspection/inspected_at"
    );
    assert!(p[0].rule.contains("in the future"), "{p:#?}");

    let p = problems(parse(record(json!({"colour": "red"}))));
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(p[0].rule.contains("does not allow"), "{p:#?}");
}
