//! Unit tests of the ingest rules: each bad-input class yields its exact
//! problem (row, column, rule), no vehicle at all, and no echoed value.

use chrono::{DateTime, Duration, Utc};
use pricing::Currency;
use serde_json::json;

use super::*;
use crate::store::{FreshnessSla, RooftopSettings};

const ORG: &str = "org.test-group";
const US: &str = "roof.test-us";
const CA: &str = "roof.test-ca";
const NO_UNIT: &str = "roof.test-nounit";

fn now() -> DateTime<Utc> {
    "2026-09-01T15:00:00Z".parse().unwrap()
}

fn settings(currency: &str, unit: &str) -> RooftopSettings {
    RooftopSettings {
        currency: currency.into(),
        odometer_unit: unit.into(),
        anonymous_reads: true,
        freshness_sla_seconds: FreshnessSla {
            inventory: 900,
            availability: 120,
            pricing: 3600,
        },
        availability_source: Default::default(),
        pricing: Default::default(),
    }
}

fn ctx(rooftop: Option<&str>) -> IngestContext {
    IngestContext {
        organization_id: ORG.into(),
        rooftop: rooftop.map(str::to_owned),
        rooftops: vec![
            RooftopContext {
                rooftop_id: US.into(),
                settings: settings("USD", "mi"),
            },
            RooftopContext {
                rooftop_id: CA.into(),
                settings: settings("CAD", "km"),
            },
            RooftopContext {
                rooftop_id: NO_UNIT.into(),
                settings: settings("USD", ""),
            },
        ],
        now: now(),
        clock_skew: Duration::seconds(CLOCK_SKEW_SECONDS),
    }
}

/// Columns of the test files: every DAP column.
fn header() -> Vec<&'static str> {
    dap_csv::Column::ALL.iter().map(|c| c.name()).collect()
}

/// A valid row for `US`, with `changes` applied by column name.
fn row(changes: &[(&str, &str)]) -> Vec<String> {
    let base = [
        ("organization_id", ORG),
        ("rooftop_id", US),
        ("vin", "1HGCY2F50RA000101"),
        ("stock_number", "S1"),
        ("year", "2024"),
        ("make", "Honda"),
        ("model", "Accord"),
        ("condition", "new"),
        ("listing_url", "https://dealer.example/v/S1"),
        ("observed_at", "2026-09-01T14:00:00Z"),
        ("advertised_price_minor", "3429500"),
        ("currency", "USD"),
        ("odometer_value", "12"),
        ("odometer_unit", "mi"),
        ("availability_status", "available"),
    ];
    header()
        .iter()
        .map(|col| {
            changes
                .iter()
                .find(|(c, _)| c == col)
                .map(|(_, v)| (*v).to_owned())
                .or_else(|| {
                    base.iter()
                        .find(|(c, _)| c == col)
                        .map(|(_, v)| (*v).to_owned())
                })
                .unwrap_or_default()
        })
        .collect()
}

fn quote(cell: &str) -> String {
    if cell.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", cell.replace('"', "\"\""))
    } else {
        cell.to_owned()
    }
}

fn csv(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = header.join(",");
    out.push('\n');
    for r in rows {
        out.push_str(&r.iter().map(|c| quote(c)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

fn dap(rows: &[Vec<String>]) -> Result<ParsedFeed, IngestError> {
    parse_feed(
        FeedFormat::DapCsv,
        "test.csv",
        csv(&header(), rows).as_bytes(),
        &ctx(None),
    )
}

fn problems(result: Result<ParsedFeed, IngestError>) -> Vec<RowProblem> {
    match result {
        Err(IngestError::Invalid { problems, .. }) => problems,
        other => panic!("expected problems, got {other:?}"),
    }
}

/// Exactly one problem, at (row, column), whose rule contains `rule`.
fn one_problem(result: Result<ParsedFeed, IngestError>, row: usize, column: &str, rule: &str) {
    let p = problems(result);
    assert_eq!(p.len(), 1, "{p:#?}");
    assert_eq!((p[0].row, p[0].column.as_str()), (row, column), "{p:#?}");
    assert!(p[0].rule.contains(rule), "{p:#?}");
}

fn vehicles(feed: &ParsedFeed) -> Vec<&VehicleRecord> {
    feed.rooftops.iter().flat_map(|r| &r.vehicles).collect()
}

// --- DAP CSV: a valid file ------------------------------------------------

#[test]
fn valid_row_converts_with_provenance_and_a_stable_vehicle_id() {
    let feed = dap(&[row(&[])]).unwrap();
    assert_eq!(feed.rows_read, 1);
    assert_eq!(feed.source_name, "dap-csv:test.csv");
    let v = vehicles(&feed)[0];
    assert_eq!(
        v.vehicle_id,
        rules::vehicle_id(ORG, US, "1HGCY2F50RA000101")
    );
    assert!(v.vehicle_id.starts_with("veh.") && v.vehicle_id.len() == 28);
    assert!(!v.vehicle_id.contains("1HGCY2F50RA000101"));
    assert_eq!(v.advertised_price.amount_minor(), 3_429_500);
    assert_eq!(v.advertised_price.currency(), Currency::USD);
    assert_eq!(v.odometer.unwrap().value, 12);
    assert_eq!(v.source.authority, "dealer_asserted");
    assert_eq!(v.source.source_record_id.as_deref(), Some("S1"));
    assert_eq!(v.source.content_digest, feed.content_digest);
    assert!(v.source.content_digest.starts_with("sha256:"));
    // Empty cells are unknown, never zero/none.
    assert_eq!(v.required_dealer_charges, None);
    assert_eq!(v.conditional_adjustments, None);
    assert_eq!(v.government_charges_status, None);
    assert_eq!(v.history_report_status, None);
    // Same (org, rooftop, VIN) → same id; another rooftop → another id.
    assert_eq!(
        rules::vehicle_id(ORG, US, "1HGCY2F50RA000101"),
        v.vehicle_id
    );
    assert_ne!(
        rules::vehicle_id(ORG, CA, "1HGCY2F50RA000101"),
        v.vehicle_id
    );
}

#[test]
fn a_file_may_hold_several_rooftops_and_the_same_vin_in_each() {
    let feed = dap(&[
        row(&[]),
        row(&[
            ("rooftop_id", CA),
            ("currency", "CAD"),
            ("odometer_unit", "km"),
        ]),
    ])
    .unwrap();
    let ids: Vec<&str> = feed
        .rooftops
        .iter()
        .map(|r| r.rooftop_id.as_str())
        .collect();
    assert_eq!(ids, [CA, US]);
    assert_eq!(
        feed.rooftops[0].vehicles[0].advertised_price.currency(),
        Currency::CAD
    );
}

#[test]
fn demo_condition_is_accepted_and_currency_defaults_to_the_rooftop() {
    let feed = dap(&[row(&[
        ("condition", "demo"),
        ("currency", ""),
        ("rooftop_id", CA),
        ("odometer_unit", "km"),
    ])])
    .unwrap();
    let v = vehicles(&feed)[0];
    assert_eq!(v.condition, "demo");
    assert_eq!(v.advertised_price.currency(), Currency::CAD);
}

// --- DAP CSV: one rule per test -------------------------------------------

#[test]
fn vin_must_match_the_pattern_as_written() {
    for bad in [
        "1hgcy2f50ra000101",
        "1HGCY2F50RA00010I",
        "1HGCY2F50RA0001",
        "1HGCY2F50RA000101 ",
    ] {
        let r = dap(&[row(&[("vin", bad)])]);
        let text = r.clone().unwrap_err().to_string();
        assert!(!text.contains(bad.trim()), "the VIN is echoed: {text}");
        one_problem(r, 2, "vin", "not a valid VIN");
    }
}

#[test]
fn duplicate_vin_and_stock_number_within_a_rooftop_are_errors() {
    let p = problems(dap(&[row(&[]), row(&[])]));
    assert_eq!(p.len(), 2, "{p:#?}");
    assert_eq!((p[0].row, p[0].column.as_str()), (3, "vin"));
    assert!(p[0].rule.contains("duplicate VIN") && p[0].rule.contains("line 2"));
    assert_eq!((p[1].row, p[1].column.as_str()), (3, "stock_number"));
    assert!(p[1].rule.contains("duplicate stock number"));
}

#[test]
fn price_is_required_exact_and_non_negative() {
    one_problem(
        dap(&[row(&[("advertised_price_minor", "")])]),
        2,
        "advertised_price_minor",
        "advertised_price_minor is required: a published vehicle carries an advertised price; unknown prices are not published as zero",
    );
    one_problem(
        dap(&[row(&[("advertised_price_minor", "34295.00")])]),
        2,
        "advertised_price_minor",
        "written without a decimal point or exponent; the number written equals 34295 (write 34295 if that counts minor units); 34295.00 USD would be 3429500",
    );
    one_problem(
        dap(&[row(&[("advertised_price_minor", "-1")])]),
        2,
        "advertised_price_minor",
        "must not be negative",
    );
    one_problem(
        dap(&[row(&[("advertised_price_minor", "99999999999999999999")])]),
        2,
        "advertised_price_minor",
        "too large",
    );
}

#[test]
fn a_price_in_another_currency_than_the_rooftop_is_an_error() {
    let r = dap(&[row(&[
        ("rooftop_id", CA),
        ("odometer_unit", "km"),
        ("currency", "USD"),
    ])]);
    one_problem(r, 2, "currency", "configured currency CAD");
    one_problem(
        dap(&[row(&[("currency", "usd")])]),
        2,
        "currency",
        "configured currency USD",
    );
}

#[test]
fn odometer_needs_a_unit_and_a_non_negative_value() {
    one_problem(
        dap(&[row(&[("odometer_unit", "")])]),
        2,
        "odometer_unit",
        "required when odometer_value is given",
    );
    one_problem(
        dap(&[row(&[("odometer_unit", "miles")])]),
        2,
        "odometer_unit",
        "expected mi|km",
    );
    one_problem(
        dap(&[row(&[("odometer_value", "-3")])]),
        2,
        "odometer_value",
        "must not be negative",
    );
    // No value: no odometer, the unit alone is harmless.
    let feed = dap(&[row(&[("odometer_value", "")])]).unwrap();
    assert_eq!(vehicles(&feed)[0].odometer, None);
}

#[test]
fn timestamps_need_an_offset_and_must_not_be_in_the_future() {
    one_problem(
        dap(&[row(&[("observed_at", "2026-09-01T14:00:00")])]),
        2,
        "observed_at",
        "has no UTC offset",
    );
    one_problem(
        dap(&[row(&[("stocked_at", "2026-08-01")])]),
        2,
        "stocked_at",
        "has no UTC offset",
    );
    one_problem(
        dap(&[row(&[("first_public_listing_at", "yesterday")])]),
        2,
        "first_public_listing_at",
        "not an RFC 3339 date-time",
    );
    // 5 minutes of skew are allowed, 6 are not.
    assert!(dap(&[row(&[("observed_at", "2026-09-01T15:05:00Z")])]).is_ok());
    one_problem(
        dap(&[row(&[("observed_at", "2026-09-01T15:06:00Z")])]),
        2,
        "observed_at",
        "in the future beyond the allowed clock skew (300 s)",
    );
    one_problem(
        dap(&[row(&[("observed_at", "2026-09-01T11:10:00-04:00")])]),
        2,
        "observed_at",
        "in the future",
    );
}

#[test]
fn enumerations_are_closed() {
    for (column, bad, expected) in [
        ("condition", "New", "new|used|certified|demo"),
        (
            "availability_status",
            "on_hold",
            "available|unavailable|in_transit|reserved|unknown",
        ),
        ("vehicle_type", "sedan", "car|truck|suv"),
        (
            "certification_type",
            "cpo",
            "manufacturer_cpo|dealer_certified",
        ),
        (
            "government_charges_status",
            "zero",
            "unknown|estimated|calculated|not_applicable",
        ),
    ] {
        one_problem(dap(&[row(&[(column, bad)])]), 2, column, expected);
    }
}

#[test]
fn reserved_maps_to_on_hold_as_a_recorded_transformation() {
    let feed = dap(&[row(&[("availability_status", "reserved")])]).unwrap();
    let v = vehicles(&feed)[0];
    assert_eq!(v.availability_status, "on_hold");
    assert!(
        v.source
            .transformations
            .contains(&"availability reserved mapped to on_hold".to_owned())
    );
    let feed = dap(&[row(&[("availability_status", "")])]).unwrap();
    assert_eq!(vehicles(&feed)[0].availability_status, "unknown");
}

#[test]
fn listing_url_must_be_https_and_year_in_range() {
    one_problem(
        dap(&[row(&[("listing_url", "http://dealer.example/v/S1")])]),
        2,
        "listing_url",
        "https",
    );
    one_problem(
        dap(&[row(&[("listing_url", "not a url")])]),
        2,
        "listing_url",
        "https",
    );
    one_problem(dap(&[row(&[("year", "1885")])]), 2, "year", "1886 to 2200");
    one_problem(dap(&[row(&[("year", "2201")])]), 2, "year", "1886 to 2200");
    one_problem(dap(&[row(&[("year", "24")])]), 2, "year", "1886 to 2200");
}

#[test]
fn required_cells_must_not_be_empty() {
    for column in [
        "vin",
        "stock_number",
        "make",
        "model",
        "condition",
        "listing_url",
        "observed_at",
        "year",
    ] {
        one_problem(dap(&[row(&[(column, "")])]), 2, column, "is required");
    }
}

#[test]
fn a_missing_required_column_is_reported_once_in_the_header() {
    let cols: Vec<&str> = header().into_iter().filter(|c| *c != "make").collect();
    let rows: Vec<Vec<String>> = [
        ("vin", "1HGCY2F50RA000101", "S1"),
        ("vin", "5FNYG1H85RB000202", "S2"),
    ]
    .iter()
    .map(|(_, vin, stock)| {
        let full = row(&[("vin", vin), ("stock_number", stock)]);
        header()
            .iter()
            .zip(full)
            .filter(|(c, _)| **c != "make")
            .map(|(_, v)| v)
            .collect()
    })
    .collect();
    let r = parse_feed(
        FeedFormat::DapCsv,
        "t.csv",
        csv(&cols, &rows).as_bytes(),
        &ctx(None),
    );
    one_problem(r, 1, "make", "required column is missing");
}

#[test]
fn unknown_and_repeated_columns_are_header_problems() {
    let mut cols = header();
    cols.push("odometer_units");
    let mut r = row(&[]);
    r.push(String::new());
    let res = parse_feed(
        FeedFormat::DapCsv,
        "t.csv",
        csv(&cols, &[r]).as_bytes(),
        &ctx(None),
    );
    one_problem(res, 1, "odometer_units", "unknown column");

    let mut cols = header();
    cols.push("trim");
    let mut r = row(&[]);
    r.push(String::new());
    let res = parse_feed(
        FeedFormat::DapCsv,
        "t.csv",
        csv(&cols, &[r]).as_bytes(),
        &ctx(None),
    );
    one_problem(res, 1, "trim", "more than once");
}

#[test]
fn a_row_with_the_wrong_number_of_fields_is_reported() {
    let mut text = csv(&header(), &[row(&[])]);
    text.push_str("a,b,c\n");
    let r = parse_feed(FeedFormat::DapCsv, "t.csv", text.as_bytes(), &ctx(None));
    one_problem(r, 3, "(row)", "has 3 fields but the header has 36");
}

#[test]
fn organization_and_rooftop_must_belong_to_the_import() {
    one_problem(
        dap(&[row(&[("organization_id", "org.other")])]),
        2,
        "organization_id",
        "another organization",
    );
    one_problem(
        dap(&[row(&[("rooftop_id", "roof.elsewhere")])]),
        2,
        "rooftop_id",
        "not a rooftop of organization org.test-group",
    );
    // --rooftop restricts: a row of another rooftop is an error.
    let r = parse_feed(
        FeedFormat::DapCsv,
        "t.csv",
        csv(&header(), &[row(&[])]).as_bytes(),
        &ctx(Some(CA)),
    );
    one_problem(
        r,
        2,
        "rooftop_id",
        "another rooftop than --rooftop roof.test-ca",
    );
}

#[test]
fn rooftop_option_must_name_a_rooftop_and_allows_an_empty_inventory() {
    let empty = csv(&header(), &[]);
    let r = parse_feed(
        FeedFormat::DapCsv,
        "t.csv",
        empty.as_bytes(),
        &ctx(Some("roof.x")),
    );
    assert!(matches!(r, Err(IngestError::Usage(_))), "{r:?}");
    let feed = parse_feed(
        FeedFormat::DapCsv,
        "t.csv",
        empty.as_bytes(),
        &ctx(Some(US)),
    )
    .unwrap();
    assert_eq!(feed.rooftops.len(), 1);
    assert!(feed.rooftops[0].vehicles.is_empty());
    let r = parse_feed(FeedFormat::DapCsv, "t.csv", empty.as_bytes(), &ctx(None));
    assert!(matches!(r, Err(IngestError::Usage(_))), "{r:?}");
    let r = parse_feed(FeedFormat::DapCsv, "t.csv", b"", &ctx(None));
    assert!(matches!(r, Err(IngestError::Unreadable { .. })), "{r:?}");
}

#[test]
fn every_problem_is_reported_sorted_by_row_and_no_vehicle_is_returned() {
    let r = dap(&[
        row(&[("year", "1800")]),
        row(&[("vin", "5FNYG1H85RB000202"), ("stock_number", "S2")]),
        row(&[
            ("vin", "2HKRS4H75RH000303"),
            ("stock_number", "S3"),
            ("make", ""),
            ("observed_at", "2099-01-01T00:00:00Z"),
        ]),
    ]);
    let p = problems(r);
    let at: Vec<(usize, &str)> = p.iter().map(|p| (p.row, p.column.as_str())).collect();
    assert_eq!(at, [(2, "year"), (4, "make"), (4, "observed_at")]);
}

// --- JSON cells -----------------------------------------------------------

fn charge(currency: &str, id: &str) -> serde_json::Value {
    json!({
        "charge_id": id, "name": "Documentary fee",
        "amount": {"amount_minor": 35800, "currency": currency},
        "payee": "dealer", "included_in_advertised_price": false, "required": true
    })
}

#[test]
fn json_cells_convert_and_distinguish_unknown_from_none() {
    let charges = json!([charge("USD", "doc-fee")]).to_string();
    let feed = dap(&[row(&[
        ("required_dealer_charges_json", &charges),
        ("conditional_adjustments_json", "[]"),
        (
            "image_urls_json",
            r#"["https://img.example/1.jpg","https://img.example/2.jpg"]"#,
        ),
        ("features_json", r#"["Heated seats"]"#),
        ("history_reports_json", "[]"),
    ])])
    .unwrap();
    let v = vehicles(&feed)[0];
    assert_eq!(v.required_dealer_charges.as_ref().unwrap().len(), 1);
    assert_eq!(v.conditional_adjustments, Some(vec![]));
    assert_eq!(v.media.len(), 2);
    assert_eq!(v.media[1].position, Some(1));
    assert_eq!(v.media[0].kind, "image");
    assert_eq!(v.features, ["Heated seats"]);
    assert_eq!(v.history_report_status.as_deref(), Some("not_available"));
}

#[test]
fn json_cells_must_be_json_of_their_shape() {
    one_problem(
        dap(&[row(&[("features_json", "[\"a\",")])]),
        2,
        "features_json",
        "not valid JSON",
    );
    let p = problems(dap(&[row(&[(
        "required_dealer_charges_json",
        r#"[{"charge_id":"x"}]"#,
    )])]));
    assert!(
        p.iter()
            .all(|p| p.row == 2 && p.column == "required_dealer_charges_json")
    );
    assert!(p.iter().any(|p| p.rule
        == "at /0: missing required property 'name' (required, csvRequiredDealerCharges)"));
    one_problem(
        dap(&[row(&[(
            "image_urls_json",
            r#"["http://img.example/1.jpg"]"#,
        )])]),
        2,
        "image_urls_json",
        "at /0: must be an https:// URL, matching ^https://",
    );
    let with_summary = json!([{
        "provider_id": "com.carfax", "provider_name": "CARFAX", "status": "available",
        "access": "public_link", "summary_sharing_authorized": false, "summary": "clean"
    }])
    .to_string();
    one_problem(
        dap(&[row(&[("history_reports_json", &with_summary)])]),
        2,
        "history_reports_json",
        "this key is not allowed here: summary_sharing_authorized is false",
    );
    let adjustment = json!([{
        "adjustment_id": "loyalty", "name": "Loyalty", "direction": "discount",
        "amount_status": "known",
        "criteria": [{"criterion": "loyalty", "operator": "verified", "value": true, "evidence_status": "required"}],
        "stacking": {"group": "oem", "combinability": "stackable"}
    }])
    .to_string();
    one_problem(
        dap(&[row(&[("conditional_adjustments_json", &adjustment)])]),
        2,
        "conditional_adjustments_json",
        "missing required property 'amount'",
    );
}

#[test]
fn money_in_json_cells_must_be_in_the_rooftop_currency_and_ids_unique() {
    let cad = json!([charge("CAD", "doc-fee")]).to_string();
    one_problem(
        dap(&[row(&[("required_dealer_charges_json", &cad)])]),
        2,
        "required_dealer_charges_json",
        "at /0/amount/currency: differs from the rooftop's configured currency USD",
    );
    let twice = json!([charge("USD", "doc-fee"), charge("USD", "doc-fee")]).to_string();
    one_problem(
        dap(&[row(&[("required_dealer_charges_json", &twice)])]),
        2,
        "required_dealer_charges_json",
        "at /1/charge_id: repeats",
    );
}

// --- Dealer.com export ----------------------------------------------------

const DEALER_COM_HEADER: &str =
    "VIN,Stock #,Year,Make,Model,NewUsed,VDPUrl,LastUpdated,InternetPrice,Status,Mileage,Color";

fn dealer_com(body: &str, rooftop: Option<&str>) -> Result<ParsedFeed, IngestError> {
    let text = format!("{DEALER_COM_HEADER}\n{body}\n");
    parse_feed(
        FeedFormat::DealerComCsv,
        "export.csv",
        text.as_bytes(),
        &ctx(rooftop),
    )
}

#[test]
fn dealer_com_export_converts_with_recorded_transformations() {
    let feed = dealer_com(
        r#"1hgcy2f50ra000707,GR7001,2024,Honda,Accord,N,https://d.example/GR7001,2026-09-01T10:00:00-04:00,"$42,875.00",In Stock,"1,204",Blue"#,
        Some(US),
    )
    .unwrap();
    let v = vehicles(&feed)[0];
    assert_eq!(v.vin.as_deref(), Some("1HGCY2F50RA000707"));
    assert_eq!(v.advertised_price.amount_minor(), 4_287_500);
    assert_eq!(v.condition, "new");
    assert_eq!(v.availability_status, "available");
    let odo = v.odometer.unwrap();
    assert_eq!((odo.value, odo.unit.as_str()), (1204, "mi"));
    assert_eq!(
        v.conditional_adjustments, None,
        "the export says nothing about offers"
    );
    assert_eq!(v.government_charges_status, None);
    assert_eq!(feed.source_name, "dealer-com-csv:export.csv");
    let t = &v.source.transformations;
    for expected in [
        "VIN upper-cased",
        "advertised price converted from comma_groups_dot_decimal feed notation to minor units (exact, 2 decimals)",
        "odometer unit mi taken from rooftop configuration",
        "condition mapped from the export's code to new",
    ] {
        assert!(t.contains(&expected.to_owned()), "{t:#?}");
    }
    assert!(t.iter().all(|s| s.chars().count() <= 160));
}

#[test]
fn dealer_com_uses_the_rooftop_currency_and_unit() {
    let feed = dealer_com(
        r#"2T3P1RFV8RC000606,MT1,2024,Toyota,RAV4,U,https://d.example/MT1,2026-09-01T10:00:00-04:00,"$41,990",Reserved,18000,"#,
        Some(CA),
    )
    .unwrap();
    let v = vehicles(&feed)[0];
    assert_eq!(v.advertised_price.currency(), Currency::CAD);
    assert_eq!(v.advertised_price.amount_minor(), 4_199_000);
    assert_eq!(v.odometer.unwrap().unit.as_str(), "km");
    assert_eq!(v.availability_status, "on_hold");
    assert!(
        v.source
            .transformations
            .contains(&"availability reserved mapped to on_hold".to_owned())
    );
}

#[test]
fn dealer_com_prices_are_exact_and_never_echoed() {
    for (bad, rule) in [
        ("$42,875.001", "more decimals than USD allows"),
        ("$42,87.00", "comma_groups_dot_decimal"),
        ("-$5.00", "must not be negative"),
        ("€42.00", "comma_groups_dot_decimal"),
    ] {
        let body = format!(
            r#"1HGCY2F50RA000707,S1,2024,Honda,Accord,N,https://d.example/S1,2026-09-01T12:00:00Z,"{bad}",In Stock,10,"#
        );
        let r = dealer_com(&body, Some(US));
        let text = r.clone().unwrap_err().to_string();
        assert!(!text.contains(bad), "the price is echoed: {text}");
        one_problem(r, 2, "InternetPrice", rule);
    }
    let body = r#"1HGCY2F50RA000707,S1,2024,Honda,Accord,N,https://d.example/S1,2026-09-01T12:00:00Z,,In Stock,10,"#;
    one_problem(
        dealer_com(body, Some(US)),
        2,
        "InternetPrice",
        "the price is required",
    );
}

#[test]
fn dealer_com_without_a_unit_anywhere_is_an_error() {
    let body = r#"1HGCY2F50RA000707,S1,2024,Honda,Accord,N,https://d.example/S1,2026-09-01T12:00:00Z,$1,In Stock,10,"#;
    one_problem(
        dealer_com(body, Some(NO_UNIT)),
        2,
        "Mileage",
        "no unit is assumed",
    );
}

#[test]
fn dealer_com_needs_a_rooftop_and_its_required_headers() {
    let body = r#"1HGCY2F50RA000707,S1,2024,Honda,Accord,N,https://d.example/S1,2026-09-01T12:00:00Z,$1,In Stock,10,"#;
    assert!(matches!(dealer_com(body, None), Err(IngestError::Usage(_))));
    let text = "VIN,Stock,Year,Make,Model,NewUsed,URL,FeedDate\n1HGCY2F50RA000707,S1,2024,Honda,Accord,N,https://d.example/S1,2026-09-01T12:00:00Z\n";
    let r = parse_feed(
        FeedFormat::DealerComCsv,
        "e.csv",
        text.as_bytes(),
        &ctx(Some(US)),
    );
    one_problem(
        r,
        1,
        "price",
        "required column is missing (accepted headers: Price, InternetPrice, SalePrice, price)",
    );
}

#[test]
fn dealer_com_status_mapping() {
    for (export, dap) in [
        ("In Stock", "available"),
        ("active", "available"),
        ("Sold", "sold"),
        ("Pending", "pending_sale"),
        ("Reserved", "on_hold"),
        ("In-Transit", "in_transit"),
        ("Whatever", "unknown"),
    ] {
        assert_eq!(dealer_com::test_availability(export), dap, "{export}");
    }
    assert_eq!(
        dealer_com::test_price("42875", Currency::JPY)
            .unwrap()
            .amount_minor(),
        42_875
    );
}

/// Parse speed on a generated feed: `INGEST_BENCH_FILE=path cargo test -p
/// gateway --lib ingest::tests::parse_speed -- --ignored --nocapture`
/// (the file's rows must name `INGEST_BENCH_ORG` / `INGEST_BENCH_ROOFTOP`,
/// a USD/mi rooftop, e.g. `demo generate` output).
#[test]
#[ignore = "benchmark; needs a generated file"]
fn parse_speed() {
    let path = std::env::var("INGEST_BENCH_FILE").expect("INGEST_BENCH_FILE");
    let org = std::env::var("INGEST_BENCH_ORG").unwrap_or_else(|_| "org.bench-001".into());
    let rooftop =
        std::env::var("INGEST_BENCH_ROOFTOP").unwrap_or_else(|_| "roof.bench-0001".into());
    let bytes = std::fs::read(&path).unwrap();
    let ctx = IngestContext {
        organization_id: org,
        rooftop: None,
        rooftops: vec![RooftopContext {
            rooftop_id: rooftop,
            settings: settings("USD", "mi"),
        }],
        now: Utc::now(),
        clock_skew: Duration::seconds(CLOCK_SKEW_SECONDS),
    };
    let _ = rules::validators();
    let start = std::time::Instant::now();
    let feed = parse_feed(FeedFormat::DapCsv, "bench.csv", &bytes, &ctx).unwrap();
    let millis = start.elapsed().as_millis().max(1);
    let rate = feed.rows_read as u128 * 1000 / millis;
    println!("{} rows in {millis} ms: {rate} rows/s", feed.rows_read);
}

/// Peak memory of each way of reading a generated feed, in a process of
/// its own per mode (VmHWM is per process):
/// `INGEST_BENCH_FILE=path INGEST_MEMORY_MODE=bytes|reader|check cargo test
/// -p gateway --release --lib ingest::tests::feed_memory -- --ignored --nocapture`
/// (rows must name `INGEST_BENCH_ORG` / `INGEST_BENCH_ROOFTOP`, a USD/mi
/// rooftop: `demo generate --rooftops 1` output). docs/benchmarks.md.
#[test]
#[ignore = "benchmark; needs a generated file"]
fn feed_memory() {
    let path = std::env::var("INGEST_BENCH_FILE").expect("INGEST_BENCH_FILE");
    let mode = std::env::var("INGEST_MEMORY_MODE").unwrap_or_else(|_| "check".into());
    let ctx = IngestContext {
        organization_id: std::env::var("INGEST_BENCH_ORG")
            .unwrap_or_else(|_| "org.bench-001".into()),
        rooftop: None,
        rooftops: vec![RooftopContext {
            rooftop_id: std::env::var("INGEST_BENCH_ROOFTOP")
                .unwrap_or_else(|_| "roof.bench-0001".into()),
            settings: settings("USD", "mi"),
        }],
        now: Utc::now(),
        clock_skew: Duration::seconds(CLOCK_SKEW_SECONDS),
    };
    let peak_kb = || {
        std::fs::read_to_string("/proc/self/status")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let _ = rules::validators();
    let before = peak_kb();
    let size = std::fs::metadata(&path).unwrap().len();
    let start = std::time::Instant::now();
    let rows = match mode.as_str() {
        "bytes" => {
            let bytes = std::fs::read(&path).unwrap();
            parse_feed(FeedFormat::DapCsv, "bench.csv", &bytes, &ctx)
                .unwrap()
                .rows_read
        }
        "reader" => {
            let file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
            parse_feed_reader(
                FeedFormat::DapCsv,
                "bench.csv",
                file,
                size,
                &ctx,
                &mut |_| {},
            )
            .unwrap()
            .rows_read
        }
        _ => {
            let file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
            let check = check_feed(
                FeedFormat::DapCsv,
                "bench.csv",
                file,
                size,
                &ctx,
                &mut |_| {},
            )
            .unwrap();
            let file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
            let mut n = 0usize;
            stream_feed(&check, "bench.csv", file, size, &ctx, &mut |_| n += 1).unwrap();
            assert_eq!(n, check.rows_read);
            n
        }
    };
    println!(
        "{mode}: {rows} rows of a {} MB file in {} ms; peak RSS {} MB (before parsing {} MB)",
        size / 1_000_000,
        start.elapsed().as_millis(),
        peak_kb() / 1024,
        before / 1024
    );
}

/// The pricing claims columns read by the disclosure lint.
mod claims;
/// Used-vehicle evidence (profile dealeragent.used-vehicle.read/0.1).
mod evidence;
/// JSON vehicle records: conversion, the shared rules, problem positions.
mod json;
/// Checked once: the vehicles an import keeps from its checking pass.
mod kept;
/// Line numbers: LF, CRLF (RFC 4180, spreadsheets) and lone CR.
mod lines;
/// Streaming: parse from a reader, check then stream.
mod streaming;
