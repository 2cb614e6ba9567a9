//! [`super::AvailabilityFacts`] against the whole record: the members
//! `verify_availability` reads from the record's text must be what
//! [`SnapshotIndex::record`] decodes, or its answer would change.

use chrono::{DateTime, Duration, TimeZone, Utc};
use pricing::{Currency, Money};

use super::{AVAILABILITY_MEMBERS, availability_facts, members};
use crate::inventory::index::{SnapshotIndex, SnapshotMeta};
use crate::inventory::model::{VehicleRecord, VehicleSource};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 9, 1, 12, 0, 0).unwrap()
}

/// A record whose strings need unescaping (quotes, backslashes, control
/// and non-ASCII characters) when `odd`, so the facts cannot simply borrow
/// them; with or without VIN and stock number.
fn vehicle(n: usize, odd: bool) -> VehicleRecord {
    let text = |plain: String| {
        if odd {
            format!("{plain} \"q\" \\ \t é 🚗")
        } else {
            plain
        }
    };
    VehicleRecord {
        vehicle_id: format!("veh.roof.{n:05}"),
        organization_id: "org.north".into(),
        rooftop_id: "roof.north".into(),
        vin: n.is_multiple_of(2).then(|| format!("1FTFW1E5{n:09}")),
        stock_number: (!n.is_multiple_of(3)).then(|| text(format!("S{n:04}"))),
        year: 2021,
        make: "Ford".into(),
        model: "F-150".into(),
        trim: Some("XLT".into()),
        condition: "used".into(),
        vehicle_type: None,
        body_style: None,
        exterior_color: None,
        interior_color: None,
        odometer: None,
        powertrain: None,
        features: vec![text("Tow package".into())],
        media: vec![],
        listing_url: None,
        window_sticker_url: None,
        advertised_price: Money::from_minor(4_287_500, Currency::USD),
        required_dealer_charges: Some(vec![]),
        conditional_adjustments: None,
        government_charges_status: None,
        availability_status: ["available", "on_hold", "sold", "unknown"][n % 4].into(),
        stocked_at: Some(now() - Duration::days(10)),
        first_public_listing_at: None,
        history_report_status: None,
        history_reports: vec![],
        certification_type: None,
        used_evidence: Default::default(),
        source: VehicleSource {
            source_name: text(format!("dap-csv:roof-{n}.csv")),
            source_record_id: Some(format!("S{n:04}")),
            authority: ["dealer_asserted", "authoritative_dealer_system"][n % 2].into(),
            content_digest: format!("sha256:{}", "ab".repeat(32)),
            observed_at: now() - Duration::seconds(i64::try_from(n).unwrap() * 61 + 7),
            transformations: vec![text("csv row to DAP vehicle".into())],
        },
    }
}

#[test]
fn availability_facts_read_what_the_whole_record_decodes() {
    let records: Vec<VehicleRecord> = (0..12).map(|n| vehicle(n, n % 4 >= 2)).collect();
    let index = std::sync::Arc::new(SnapshotIndex::build(
        SnapshotMeta {
            snapshot_id: "snap.roof.1".into(),
            organization_id: "org.north".into(),
            rooftop_id: "roof.north".into(),
            version: 1,
            created_at: now(),
        },
        900,
        records.clone(),
    ));
    for (row, expected) in records.iter().enumerate() {
        let whole = index.record(row);
        assert_eq!(&whole, expected);
        let full = index.record_json(row);
        let text = members(&full, AVAILABILITY_MEMBERS);
        assert!(text.len() < full.len());
        // The projection is the same object minus the other members.
        let mut kept: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(&full).unwrap();
        kept.retain(|k, _| AVAILABILITY_MEMBERS.contains(&k.as_str()));
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&text).unwrap(),
            serde_json::Value::Object(kept)
        );
        let facts = availability_facts(&text);
        assert_eq!(facts.vehicle_id, whole.vehicle_id);
        assert_eq!(facts.organization_id, whole.organization_id);
        assert_eq!(facts.rooftop_id, whole.rooftop_id);
        assert_eq!(facts.vin, whole.vin);
        assert_eq!(facts.stock_number, whole.stock_number);
        assert_eq!(facts.availability_status, whole.availability_status);
        assert_eq!(facts.source.source_name, whole.source.source_name);
        assert_eq!(facts.source.authority, whole.source.authority);
        assert_eq!(facts.source.observed_at, whole.source.observed_at);
    }
}

/// What the scan does not understand is kept whole, and whitespace,
/// escapes and nesting do not confuse it.
#[test]
fn members_keeps_the_named_top_level_members_only() {
    let keep = &["a", "c"];
    let cases: [(&str, &str); 7] = [
        (r#"{"a":1,"b":2,"c":3}"#, r#"{"a":1,"c":3}"#),
        (
            r#" { "b" : {"a":[1,{"c":"}"}]} , "a" : "x\"}\\" ,"c":null } "#,
            r#"{"a":"x\"}\\","c":null}"#,
        ),
        (
            r#"{"b":["]",{"a":1}],"c":[true,false]}"#,
            r#"{"c":[true,false]}"#,
        ),
        (r#"{}"#, r#"{}"#),
        (r#"{"a":-1.5e3}"#, r#"{"a":-1.5e3}"#),
        (
            r#"{"a":1,"b":"unterminated}"#,
            r#"{"a":1,"b":"unterminated}"#,
        ),
        (r#"[1,2]"#, r#"[1,2]"#),
    ];
    for (json, expected) in cases {
        assert_eq!(
            String::from_utf8(members(json.as_bytes(), keep)).unwrap(),
            expected,
            "{json}"
        );
    }
}
