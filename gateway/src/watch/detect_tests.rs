//! Detection: the kinds between two records and between two views.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{Duration, TimeZone, Utc};
use pricing::{Currency, Money};

use super::*;
use crate::domain::vehicle::VehicleSource;
use crate::inventory::index::SnapshotMeta;
use crate::inventory::live::RooftopInventory;
use crate::store::{ProgramRecord, SourceRecord};

const ORG: &str = "org.a";

fn car(rooftop: &str, n: usize) -> VehicleRecord {
    let now = Utc.with_ymd_and_hms(2026, 9, 1, 12, 0, 0).unwrap();
    VehicleRecord {
        vehicle_id: format!("veh.{rooftop}.{n}"),
        organization_id: ORG.into(),
        rooftop_id: rooftop.into(),
        vin: Some(format!("1FTFW1E5{n:09}")),
        stock_number: Some(format!("S{n:04}")),
        year: 2021,
        make: "Ford".into(),
        model: "F-150".into(),
        trim: None,
        condition: "used".into(),
        vehicle_type: Some("truck".into()),
        body_style: None,
        exterior_color: Some("Oxford White".into()),
        interior_color: None,
        odometer: None,
        powertrain: None,
        features: vec![],
        media: vec![],
        listing_url: None,
        window_sticker_url: None,
        advertised_price: Money::from_minor(4_287_500, Currency::USD),
        required_dealer_charges: Some(vec![]),
        conditional_adjustments: Some(vec![]),
        government_charges_status: None,
        availability_status: "available".into(),
        stocked_at: Some(now - Duration::days(10)),
        first_public_listing_at: None,
        history_report_status: None,
        history_reports: vec![],
        certification_type: None,
        used_evidence: Default::default(),
        claims: Default::default(),
        source: VehicleSource {
            source_name: format!("dap-csv:{rooftop}.csv"),
            source_record_id: None,
            authority: "dealer_asserted".into(),
            content_digest: format!("sha256:{}", "ab".repeat(32)),
            observed_at: now,
            transformations: vec![],
        },
    }
}

fn index(rooftop: &str, version: i64, records: Vec<VehicleRecord>) -> Arc<SnapshotIndex> {
    Arc::new(SnapshotIndex::build(
        SnapshotMeta {
            snapshot_id: format!("snap.{rooftop}.{version}"),
            organization_id: ORG.into(),
            rooftop_id: rooftop.into(),
            version,
            created_at: Utc::now(),
        },
        3600,
        records,
    ))
}

fn view(rooftops: &[&Arc<SnapshotIndex>]) -> InventoryView {
    InventoryView {
        rooftops: rooftops
            .iter()
            .map(|i| {
                (
                    i.rooftop_id().to_owned(),
                    RooftopInventory {
                        latest: (*i).clone(),
                        withdrawn: None,
                    },
                )
            })
            .collect::<HashMap<_, _>>(),
    }
}

#[test]
fn kinds_between_two_records() {
    let a = car("r1", 1);
    assert_eq!(vehicle_kinds(None, Some(&a)), vec![ADDED]);
    assert_eq!(vehicle_kinds(Some(&a), None), vec![REMOVED]);
    assert!(vehicle_kinds(None, None).is_empty());
    // Provenance alone is no change.
    let mut b = a.clone();
    b.source.observed_at += Duration::hours(1);
    b.source.content_digest = format!("sha256:{}", "cd".repeat(32));
    assert!(vehicle_kinds(Some(&a), Some(&b)).is_empty());
    let mut b = a.clone();
    b.advertised_price = Money::from_minor(4_187_500, Currency::USD);
    assert_eq!(vehicle_kinds(Some(&a), Some(&b)), vec![PRICE_CHANGED]);
    let mut b = a.clone();
    b.government_charges_status = Some("estimated".into());
    assert_eq!(vehicle_kinds(Some(&a), Some(&b)), vec![CHARGES_CHANGED]);
    let mut b = a.clone();
    b.availability_status = "on_hold".into();
    assert_eq!(
        vehicle_kinds(Some(&a), Some(&b)),
        vec![AVAILABILITY_CHANGED]
    );
    b.availability_status = "sold".into();
    assert_eq!(vehicle_kinds(Some(&a), Some(&b)), vec![REMOVED]);
    let mut b = a.clone();
    b.exterior_color = Some("Red".into());
    b.advertised_price = Money::from_minor(1, Currency::USD);
    assert_eq!(
        vehicle_kinds(Some(&a), Some(&b)),
        vec![PRICE_CHANGED, DETAILS_CHANGED]
    );
}

#[test]
fn changes_between_two_views_for_the_subscribed_targets_only() {
    let cheaper = {
        let mut c = car("r1", 1);
        c.advertised_price = Money::from_minor(100, Currency::USD);
        c
    };
    let r1_old = index("r1", 1, vec![car("r1", 1), car("r1", 2)]);
    let r1_new = index("r1", 2, vec![cheaper, car("r1", 3)]);
    let r2 = index("r2", 7, vec![car("r2", 1)]);
    let old = view(&[&r1_old, &r2]);
    let new = view(&[&r1_new, &r2]);
    let t = |r: &str, v: &str| Target::Vehicle(ORG.into(), r.into(), v.into());
    let targets = vec![
        t("r1", "veh.r1.1"),
        t("r1", "veh.r1.2"),
        t("r1", "veh.r1.3"),
        // Never existed: accepted at subscribe, never notified.
        t("r1", "veh.r1.404"),
        // Its rooftop did not change.
        t("r2", "veh.r2.1"),
        // The wrong organization for this rooftop: never notified.
        Target::Vehicle("org.other".into(), "r1".into(), "veh.r1.1".into()),
        Target::Rooftop(ORG.into(), "r1".into()),
        Target::Rooftop(ORG.into(), "r2".into()),
        Target::Organization(ORG.into()),
        Target::Organization("org.other".into()),
    ];
    type Row = (String, Vec<&'static str>, String, Vec<String>, bool);
    let got: Vec<Row> = inventory_changes(&old, &new, &targets)
        .into_iter()
        .map(|d| (d.uri, d.kinds, d.snapshot_version, d.rooftops, d.before))
        .collect();
    let vehicle = |v: &str| format!("dealeragent://organization/{ORG}/rooftop/r1/vehicle/{v}");
    assert_eq!(
        got,
        vec![
            (
                vehicle("veh.r1.1"),
                vec![PRICE_CHANGED],
                "2".to_owned(),
                vec!["r1".to_owned()],
                false
            ),
            (
                vehicle("veh.r1.2"),
                vec![REMOVED],
                "2".to_owned(),
                vec!["r1".to_owned()],
                true
            ),
            (
                vehicle("veh.r1.3"),
                vec![ADDED],
                "2".to_owned(),
                vec!["r1".to_owned()],
                false
            ),
            (
                format!("dealeragent://organization/{ORG}/rooftop/r1"),
                vec![INVENTORY_CHANGED],
                "2".to_owned(),
                vec!["r1".to_owned()],
                false
            ),
            (
                format!("dealeragent://organization/{ORG}"),
                vec![INVENTORY_CHANGED],
                "2".to_owned(),
                vec!["r1".to_owned()],
                false
            ),
        ]
    );
    // The same view twice: nothing.
    assert!(inventory_changes(&new, &new, &targets).is_empty());
}

fn program_record(id: &str, revision: u32, applies_to: serde_json::Value) -> ProgramRecord {
    ProgramRecord {
        program_id: id.to_owned(),
        revision,
        doc: serde_json::json!({
            "program_id": id, "revision": revision, "name": id, "kind": "cash",
            "direction": "discount",
            "amount": {"status": "known", "amount": {"amount_minor": 100, "currency": "USD"}},
            "stacking": {"group": "oem", "combinability": "stackable"},
            "applies_to": applies_to
        }),
        rule_hash: None,
        imported_at: Utc::now(),
        source: SourceRecord {
            source_name: "test".into(),
            authority: "dealer_asserted".into(),
            content_digest: "sha256:00".into(),
            observed_at: Utc::now(),
        },
    }
}

#[test]
fn programs_changed_for_the_vehicles_a_new_revision_touches_only() {
    let mut civic = car("r1", 2);
    civic.make = "Honda".into();
    civic.model = "Civic".into();
    let r1 = index("r1", 1, vec![car("r1", 1), civic]);
    let view = view(&[&r1]);
    let ford = serde_json::json!({"makes": ["ford"]});
    let old = OrgPrograms::from_records(&[program_record("p.ford", 1, ford.clone())], Utc::now());
    // A second revision of the Ford program, and nothing for Honda.
    let new = OrgPrograms::from_records(
        &[
            program_record("p.ford", 1, ford.clone()),
            program_record("p.ford", 2, ford),
        ],
        Utc::now(),
    );
    let targets = vec![
        Target::Vehicle(ORG.into(), "r1".into(), "veh.r1.1".into()),
        Target::Vehicle(ORG.into(), "r1".into(), "veh.r1.2".into()),
        Target::Vehicle(ORG.into(), "r1".into(), "veh.r1.404".into()),
        Target::Organization(ORG.into()),
        Target::Organization("org.other".into()),
    ];
    let got: Vec<(String, Vec<&str>)> = program_changes(&old, &new, &view, ORG, &targets)
        .into_iter()
        .map(|d| (d.uri, d.kinds))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                format!("dealeragent://organization/{ORG}/rooftop/r1/vehicle/veh.r1.1"),
                vec![PROGRAMS_CHANGED]
            ),
            (
                format!("dealeragent://organization/{ORG}"),
                vec![PROGRAMS_CHANGED]
            ),
        ]
    );
    // A reload of the same programs changes nothing.
    assert!(program_changes(&new, &new, &view, ORG, &targets).is_empty());
    let mut honda = car("r1", 3);
    honda.make = "HONDA".into();
    let p = serde_json::from_value::<pricing::Program>(
        program_record(
            "p",
            1,
            serde_json::json!({"makes": ["honda"], "years": [2021]}),
        )
        .doc,
    )
    .unwrap();
    assert!(in_scope(&p, &honda));
    honda.year = 2020;
    assert!(!in_scope(&p, &honda));
}
