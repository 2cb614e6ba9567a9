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
    one_problem(r, 3, "(row)", "has 3 fields but the header has 34");
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

// --- JSON -----------------------------------------------------------------

fn json_vehicle() -> serde_json::Value {
    json!({
        "organization_id": ORG, "rooftop_id": CA,
        "vin": "2T3P1RFV8RC000606", "stock_number": "MT1",
        "year": 2024, "make": "Toyota", "model": "RAV4", "condition": "new",
        "listing_url": "https://d.example/MT1",
        "advertised_price": {
            "amount": {"amount_minor": 4199000, "currency": "CAD"},
            "availability": "generally_available", "includes_required_dealer_charges": false
        },
        "availability": {"status": "available", "authority_status": "asserted", "observed_at": "2026-09-01T14:00:00Z"},
        "freshness": {"observed_at": "2026-09-01T14:00:00Z", "state": "current"}
    })
}

fn json_feed(records: serde_json::Value) -> Result<ParsedFeed, IngestError> {
    parse_feed(
        FeedFormat::Json,
        "v.json",
        records.to_string().as_bytes(),
        &ctx(None),
    )
}

#[test]
fn json_records_convert() {
    let feed = json_feed(json!([json_vehicle()])).unwrap();
    let v = vehicles(&feed)[0];
    assert_eq!(
        v.vehicle_id,
        rules::vehicle_id(ORG, CA, "2T3P1RFV8RC000606")
    );
    assert_eq!(v.source.source_name, "json:v.json");
    assert_eq!(v.advertised_price.amount_minor(), 4_199_000);
}

#[test]
fn json_records_follow_the_same_rules() {
    let mut usd = json_vehicle();
    usd["advertised_price"]["amount"]["currency"] = json!("USD");
    one_problem(
        json_feed(json!([usd])),
        0,
        "/0/advertised_price/amount/currency",
        "configured currency CAD",
    );
    let mut future = json_vehicle();
    future["availability"]["observed_at"] = json!("2099-01-01T00:00:00Z");
    one_problem(
        json_feed(json!([future])),
        0,
        "/0/availability/observed_at",
        "in the future",
    );
    let mut bad = json_vehicle();
    bad["vin"] = json!("nope");
    // One pass: the schema's problem and the import's own rules together.
    let p = problems(json_feed(json!([json_vehicle(), bad])));
    let at: Vec<(usize, &str)> = p.iter().map(|p| (p.row, p.column.as_str())).collect();
    assert_eq!(at, [(1, "/1/vin"), (1, "/1/stock_number")], "{p:#?}");
    assert!(
        p[0].rule.starts_with("must be a VIN: 17 characters"),
        "{p:#?}"
    );
    assert!(p[1].rule.starts_with("duplicate stock number"), "{p:#?}");
    let mut nothing = json_vehicle();
    nothing.as_object_mut().unwrap().remove("vin");
    one_problem(json_feed(json!([nothing])), 0, "/0/vehicle_id", "no vin");
    let r = json_feed(json!([json_vehicle(), json_vehicle()]));
    let p = problems(r);
    assert_eq!(p[0].column, "/1/vin");
    assert!(matches!(
        json_feed(json!({"not": "an array"})),
        Err(IngestError::Unreadable { .. })
    ));
}

#[test]
fn json_problems_are_located_in_the_file_even_past_a_read_buffer() {
    // Enough valid records before the bad one that the tap refills its
    // 64 KiB buffer in between; multi-byte characters count as one column.
    let mut records: Vec<serde_json::Value> = (0..400)
        .map(|n| {
            let mut v = json_vehicle();
            v["vin"] = json!(format!("2T3P1RFV8RC{n:06}"));
            v["stock_number"] = json!(format!("S{n}"));
            v["model"] = json!(format!("RAV4 {}", "\u{e9}".repeat(n % 7)));
            v
        })
        .collect();
    let mut bad = json_vehicle();
    bad["vin"] = json!("2T3P1RFV8RC999999");
    bad["stock_number"] = json!("BAD");
    bad["model"] = json!("\u{e9}t\u{e9}");
    bad["trmi"] = json!("XLE");
    bad["year"] = json!(2024.0);
    records.push(bad);
    let text = serde_json::to_string_pretty(&records).unwrap();
    assert!(text.len() > 3 * 64 * 1024, "{}", text.len());
    let p = problems(parse_feed(
        FeedFormat::Json,
        "v.json",
        text.as_bytes(),
        &ctx(None),
    ));
    let at = |needle: &str| {
        let (i, line) = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains(needle))
            .last()
            .unwrap();
        crate::report::Position {
            line: i + 1,
            column: line[..line.find(needle).unwrap()].chars().count() + 1,
        }
    };
    let got: Vec<(&str, Option<crate::report::Position>)> =
        p.iter().map(|p| (p.column.as_str(), p.position)).collect();
    assert_eq!(
        got,
        [
            ("/400/year", Some(at("2024.0"))),
            ("/400/trmi", Some(at("\"trmi\""))),
        ],
        "{p:#?}"
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

// --- Line numbers: LF, CRLF (RFC 4180, spreadsheets) and lone CR ----------

/// The same rows with `terminator` between records. Row 1 has a quoted
/// cell spanning two lines, so row 2 starts on line 4.
fn rows_with_terminator(terminator: &str) -> String {
    let rows = [
        row(&[("features_json", "[\"Sunroof\",\n\"Heated seats\"]")]),
        row(&[("vin", "1hgcy2f50ra000102"), ("stock_number", "S2")]),
        row(&[
            ("vin", "1HGCY2F50RA000103"),
            ("stock_number", "S3"),
            ("year", "19x4"),
        ]),
    ];
    let mut out = header().join(",");
    for r in &rows {
        out.push_str(terminator);
        out.push_str(&r.iter().map(|c| quote(c)).collect::<Vec<_>>().join(","));
    }
    out.push_str(terminator);
    out
}

#[test]
fn csv_line_numbers_are_the_file_lines_with_any_line_ending() {
    for terminator in ["\n", "\r\n", "\r"] {
        let text = rows_with_terminator(terminator);
        let p = problems(parse_feed(
            FeedFormat::DapCsv,
            "lines.csv",
            text.as_bytes(),
            &ctx(None),
        ));
        let at: Vec<(usize, &str)> = p.iter().map(|p| (p.row, p.column.as_str())).collect();
        assert_eq!(at, [(4, "vin"), (5, "year")], "{terminator:?}: {p:#?}");
    }
    // A header-only problem is on line 1, after a BOM too.
    let text = format!("\u{feff}{},colour\r\n", header().join(","));
    let p = problems(parse_feed(
        FeedFormat::DapCsv,
        "h.csv",
        text.as_bytes(),
        &ctx(None),
    ));
    assert_eq!((p[0].row, p[0].column.as_str()), (1, "colour"), "{p:#?}");
}

#[test]
fn dealer_com_line_numbers_are_right_with_crlf() {
    let good = r#"1HGCY2F50RA000707,S1,2024,Honda,Accord,N,https://d.example/S1,2026-09-01T12:00:00Z,$1,In Stock,10,"#;
    let bad = r#"1HGCY2F50RA000708,S2,2024,Honda,Accord,N,https://d.example/S2,2026-09-01T12:00:00Z,,In Stock,10,"#;
    for terminator in ["\n", "\r\n"] {
        let text = [
            DEALER_COM_HEADER,
            good,
            good.replace("S1", "S3").replace("707", "709").as_str(),
            bad,
        ]
        .join(terminator)
            + terminator;
        let p = problems(parse_feed(
            FeedFormat::DealerComCsv,
            "export.csv",
            text.as_bytes(),
            &ctx(Some(US)),
        ));
        assert_eq!(p.len(), 1, "{p:#?}");
        assert_eq!(
            (p[0].row, p[0].column.as_str()),
            (4, "InternetPrice"),
            "{terminator:?}"
        );
    }
}

#[test]
fn the_line_counter_handles_terminators_split_across_reads() {
    use std::io::Read as _;
    /// Hands out one byte per read, the worst case for a pending `\r`.
    struct OneByte<'a>(&'a [u8]);
    impl std::io::Read for OneByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match self.0.split_first() {
                Some((b, rest)) if !buf.is_empty() => {
                    buf[0] = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }
    let text = b"a\r\nb\rc\nd\r";
    let mut counter = dap_csv::LineCounter::new(OneByte(text));
    let mut sink = Vec::new();
    counter.read_to_end(&mut sink).unwrap();
    assert_eq!(sink, text);
    // Record starts: a@0, b@3 (or @2, the LF the reader has not skipped),
    // c@5, d@7.
    assert_eq!(counter.line_at(0), 1);
    assert_eq!(counter.line_at(2), 2);
    assert_eq!(counter.line_at(3), 2);
    assert_eq!(counter.line_at(5), 3);
    assert_eq!(counter.line_at(7), 4);
    assert_eq!(counter.line_at(10), 5);
}

// --- Streaming: parse from a reader, check then stream ---------------------

/// Hands out at most `chunk` bytes per read (a file read in pieces).
struct Chunked<'a> {
    rest: &'a [u8],
    chunk: usize,
}

impl std::io::Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.chunk.min(buf.len()).min(self.rest.len());
        buf[..n].copy_from_slice(&self.rest[..n]);
        self.rest = &self.rest[n..];
        Ok(n)
    }
}

fn chunked(bytes: &[u8], chunk: usize) -> Chunked<'_> {
    Chunked { rest: bytes, chunk }
}

/// A valid two-rooftop DAP CSV file and a JSON feed.
fn feeds() -> Vec<(FeedFormat, String)> {
    let csv_text = csv(
        &header(),
        &[
            row(&[("features_json", "[\"Sunroof\",\n\"Heated seats\"]")]),
            row(&[
                ("rooftop_id", CA),
                ("currency", "CAD"),
                ("odometer_unit", "km"),
            ]),
            row(&[("vin", "1HGCY2F50RA000103"), ("stock_number", "S3")]),
        ],
    );
    let mut second = json_vehicle();
    second["vin"] = json!("2T3P1RFV8RC000607");
    second["stock_number"] = json!("MT2");
    let json_text = serde_json::to_string_pretty(&json!([json_vehicle(), second])).unwrap();
    vec![
        (FeedFormat::DapCsv, csv_text),
        (FeedFormat::Json, json_text),
    ]
}

#[test]
fn a_feed_read_in_small_pieces_parses_exactly_like_the_bytes() {
    for (format, text) in feeds() {
        let whole = parse_feed(format, "f", text.as_bytes(), &ctx(None)).unwrap();
        for chunk in [1, 7, 4096] {
            let streamed = parse_feed_reader(
                format,
                "f",
                chunked(text.as_bytes(), chunk),
                text.len() as u64,
                &ctx(None),
                &mut |_| {},
            )
            .unwrap();
            assert_eq!(streamed, whole, "{format:?} in {chunk}-byte reads");
        }
        assert_eq!(
            whole.content_digest,
            crate::dealers::digest(text.as_bytes())
        );
        assert!(
            vehicles(&whole)
                .iter()
                .all(|v| v.source.content_digest == whole.content_digest)
        );
    }
}

#[test]
fn check_then_stream_yields_the_parsed_vehicles_and_the_same_problems() {
    for (format, text) in feeds() {
        let parsed = parse_feed(format, "f", text.as_bytes(), &ctx(None)).unwrap();
        let check = check_feed(
            format,
            "f",
            chunked(text.as_bytes(), 5),
            text.len() as u64,
            &ctx(None),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(check.content_digest, parsed.content_digest);
        assert_eq!(check.rows_read, parsed.rows_read);
        let counts: Vec<(String, usize)> = parsed
            .rooftops
            .iter()
            .map(|r| (r.rooftop_id.clone(), r.vehicles.len()))
            .collect();
        assert_eq!(check.rooftops, counts, "{format:?}");
        let mut streamed = Vec::new();
        stream_feed(
            &check,
            "f",
            chunked(text.as_bytes(), 3),
            text.len() as u64,
            &ctx(None),
            &mut |v| streamed.push(v),
        )
        .unwrap();
        let mut expected: Vec<VehicleRecord> = vehicles(&parsed).into_iter().cloned().collect();
        expected.sort_by_cached_key(|v| v.vehicle_id.clone());
        streamed.sort_by_cached_key(|v| v.vehicle_id.clone());
        assert_eq!(streamed, expected, "{format:?}");

        // The file changed between the passes: refused (the writer rolls back).
        let changed = text.replace("Accord", "Civic").replace("RAV4", "RAV5");
        let r = stream_feed(
            &check,
            "f",
            changed.as_bytes(),
            changed.len() as u64,
            &ctx(None),
            &mut |_| {},
        );
        assert!(
            matches!(&r, Err(IngestError::Unreadable { reason, .. }) if reason.contains("changed")),
            "{r:?}"
        );
    }
    // Pass 1 reports every problem, exactly as parse_feed does.
    let bad = rows_with_terminator("\r\n");
    let check = check_feed(
        FeedFormat::DapCsv,
        "lines.csv",
        bad.as_bytes(),
        bad.len() as u64,
        &ctx(None),
        &mut |_| {},
    );
    assert_eq!(
        problems(check.map(|_| unreachable_feed())),
        problems(parse_feed(
            FeedFormat::DapCsv,
            "lines.csv",
            bad.as_bytes(),
            &ctx(None)
        ))
    );
}

/// Never called: `check_feed` failed above (a `map` to reuse `problems`).
fn unreachable_feed() -> ParsedFeed {
    panic!("the check must fail")
}

#[test]
fn json_streaming_still_refuses_non_arrays_and_reports_syntax_positions() {
    for (text, reason) in [
        ("{\"not\": \"an array\"}", "must be a JSON array"),
        ("\"text\"", "must be a JSON array"),
        ("[\n{\"vin\": 1},\n{oops}\n]", "not valid JSON (line 3"),
        ("[] []", "not valid JSON (line 1"),
    ] {
        let r = parse_feed(FeedFormat::Json, "v.json", text.as_bytes(), &ctx(Some(CA)));
        assert!(
            matches!(&r, Err(IngestError::Unreadable { reason: got, .. }) if got.contains(reason)),
            "{text}: {r:?}"
        );
    }
    let empty = parse_feed(FeedFormat::Json, "v.json", b"[]", &ctx(Some(CA))).unwrap();
    assert_eq!(empty.rooftops.len(), 1);
    assert!(empty.rooftops[0].vehicles.is_empty());
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

// ---------------------------------------------------------------------------
// Used-vehicle evidence (profile dealeragent.used-vehicle.read/0.1)
// ---------------------------------------------------------------------------

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
