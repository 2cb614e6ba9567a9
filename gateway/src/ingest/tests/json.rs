//! JSON vehicle records: conversion, the shared rules, problem positions.

use super::*;

pub(super) fn json_vehicle() -> serde_json::Value {
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

/// The closed records of a JSON vehicle are read into their DAP types with
/// every member kept (a fractional range keeps its number text); a value
/// that is not of its type refuses the record at the member, never dropping
/// it.
#[test]
fn json_powertrain_and_media_are_read_into_their_types() {
    let mut record = json_vehicle();
    record["powertrain"] = json!({
        "fuel_type": "battery_electric", "drivetrain": "awd",
        "electric_range": {"value": 402.5, "unit": "km"}
    });
    record["media"] = json!([
        {"type": "image", "url": "https://cdn.example/1.jpg", "caption": "Front", "position": 0},
        {"type": "spin", "url": "https://cdn.example/360"}
    ]);
    let feed = json_feed(json!([record.clone()])).unwrap();
    let v = vehicles(&feed)[0];
    let powertrain = v.powertrain.as_ref().unwrap();
    assert_eq!(powertrain.drivetrain.as_deref(), Some("awd"));
    assert_eq!(
        serde_json::to_value(powertrain).unwrap(),
        record["powertrain"]
    );
    assert_eq!(serde_json::to_value(&v.media).unwrap(), record["media"]);

    // A position written 1.0 is refused at the member (the schema check
    // names it; the type's own refusal restates it and is not repeated).
    record["media"][1]["position"] = json!(1.0);
    let found = problems(json_feed(json!([record])));
    if let [p] = found.as_slice() {
        assert_eq!(p.column, "/0/media/1/position", "{}", p.rule);
    } else {
        panic!("one problem expected: {found:?}");
    }
}
