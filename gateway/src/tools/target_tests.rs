//! [`super::AvailabilityFacts`] against the whole record: the members
//! `verify_availability` reads from the record's text must be what
//! [`SnapshotIndex::record`] decodes, or its answer would change.

use chrono::{DateTime, Duration, TimeZone, Utc};
use pricing::{Currency, Money};

use super::availability_facts;
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
        claims: Default::default(),
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
        let text = index.record_json(row);
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
