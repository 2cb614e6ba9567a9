//! Loading a snapshot: the pieces written straight from the record against
//! the tree-built reference, and the rendering checked while the snapshot
//! is read against the check of the built index.

use super::*;
use crate::domain::vehicle::OdometerStatus;
use crate::inventory::live::{Keep, VehicleCheck, index_received};
use crate::inventory::pieces::{self, Pieces};

/// Records that exercise every member and escape: text that needs
/// escaping, non-ASCII, over-long values (truncated), empty features,
/// absent members, odometer statuses, an electric range, many media.
pub(super) fn varied(n: usize) -> VehicleRecord {
    let mut r = car(["roof.a", "roof.b"][n % 2], n);
    match n % 7 {
        0 => {}
        1 => {
            r.vin = None;
            r.stock_number = Some(String::new());
            r.vehicle_type = None;
            r.trim = None;
            r.body_style = None;
            r.exterior_color = None;
            r.interior_color = None;
            r.odometer = None;
            r.powertrain = None;
            r.features = vec![];
            r.media = vec![];
            r.listing_url = None;
            r.required_dealer_charges = None;
        }
        2 => {
            r.make = "Citroën \"DS\"\\\n\t\u{1}".repeat(20);
            r.model = "Ünïcödé ✓ ".repeat(30);
            r.trim = Some("x".repeat(300));
            r.stock_number = Some("S".repeat(200));
            r.exterior_color = Some("Bleu « nuit »".into());
            r.features = vec![String::new(), "é".repeat(250), "A/C".into()];
            r.odometer = Some(Odometer {
                value: 5,
                unit: DistanceUnit::Km,
                status: Some(OdometerStatus::ExceedsMechanicalLimits),
            });
            r.window_sticker_url = Some("https://dealer.example.com/sticker?a=1&b=\"2\"".into());
        }
        3 => {
            r.odometer = Some(Odometer {
                value: -1,
                unit: DistanceUnit::Mi,
                status: Some(OdometerStatus::NotActual),
            });
            r.powertrain = Some(crate::dap::Powertrain {
                fuel_type: Some("battery_electric".into()),
                drivetrain: None,
                transmission: Some("1-speed \"direct\"".into()),
                electric_range: Some(crate::dap::ElectricRange {
                    value: serde_json::Number::from_f64(249.5).unwrap(),
                    unit: "mi".into(),
                }),
            });
            r.media = (0..600)
                .map(|i| {
                    crate::dap::MediaAsset::image(format!("https://cdn.example.com/{i}.jpg"), i)
                })
                .collect();
            r.features = (0..700).map(|i| format!("f{i}")).collect();
        }
        4 => {
            r.condition = "new".into();
            r.required_dealer_charges = Some(vec![]);
            r.source.source_record_id = Some(String::new());
            r.source.source_name = "n".repeat(200);
        }
        5 => {
            r.advertised_price = Money::from_minor(-1, Currency::EUR);
            r.source.transformations = vec![];
            // In the future of the clock the load check reads.
            r.stocked_at = Some(Utc::now() + Duration::days(3));
            r.first_public_listing_at = Some(now() - Duration::days(1));
        }
        _ => {
            r.condition = "certified".into();
            r.certification_type = Some("manufacturer".into());
            r.history_report_status = Some("available".into());
        }
    }
    r
}

/// Writing the head and provenance straight from the record gives the
/// text the `serde_json::Value` trees gave.
#[test]
fn pieces_written_from_the_record_match_the_tree_built_ones() {
    for n in 0..70 {
        let r = varied(n);
        let p = Pieces::of(&r, 900);
        assert_eq!(p.head, pieces::reference_head(&r), "head of record {n}");
        assert_eq!(
            p.provenance,
            serde_json::to_string(&pieces::provenance(&r)).unwrap(),
            "provenance of record {n}"
        );
    }
}

fn meta(rooftop: &str) -> SnapshotMeta {
    SnapshotMeta {
        snapshot_id: format!("snap.{rooftop}.1"),
        organization_id: ORG.into(),
        rooftop_id: rooftop.into(),
        version: 1,
        created_at: now() - Duration::minutes(5),
    }
}

/// The index `index_received` builds from `records` (as the store would
/// stream them) and which rows it marks as failing.
fn received(
    records: &[VehicleRecord],
    keep: Keep,
    check: VehicleCheck,
) -> (Vec<String>, Vec<bool>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let records = records.to_vec();
    let ix = runtime.block_on(async move {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let building = tokio::spawn(index_received(rx, meta("roof.a"), 900, 0, keep, check));
        for r in records {
            tx.send(r).await.unwrap();
        }
        drop(tx);
        building.await.unwrap().unwrap()
    });
    marks(&ix)
}

fn marks(ix: &SnapshotIndex) -> (Vec<String>, Vec<bool>) {
    (
        (0..ix.len())
            .map(|row| ix.vehicle_id(row).to_owned())
            .collect(),
        (0..ix.len()).map(|row| ix.piece_checked(row)).collect(),
    )
}

/// The slow path: build, then check every row of the built index.
fn built_then_checked(records: &[VehicleRecord], check: &VehicleCheck) -> (Vec<String>, Vec<bool>) {
    let mut ix = SnapshotIndex::build_from(meta("roof.a"), 900, 0, records.to_vec());
    ix.check_pieces(Utc::now(), check.as_ref());
    marks(&ix)
}

/// Checking each vehicle while the snapshot is read marks exactly the
/// rows the check of the built index marks: none when all pass, each
/// failing one when some fail (the real vehicle schema among them).
#[test]
fn checking_while_reading_marks_the_rows_the_built_index_check_marks() {
    let records: Vec<VehicleRecord> = (0..40).map(varied).collect();
    let validator = Arc::new(vehicle_validator());
    let schema: VehicleCheck = Arc::new(move |v: &Value| {
        if validator.is_valid(v) {
            Ok(())
        } else {
            Err("schema".into())
        }
    });
    let all_pass: VehicleCheck = Arc::new(|_: &Value| Ok(()));
    let some_fail: VehicleCheck = Arc::new(|v: &Value| {
        let id = v["vehicle_id"].as_str().unwrap_or_default();
        if id.ends_with('3') || id.ends_with("17") {
            Err("refused".into())
        } else {
            Ok(())
        }
    });
    // Fails only the shape a used vehicle stocked in the future takes a
    // day after it was stocked (the second rendering the check writes).
    let later_only: VehicleCheck = Arc::new(|v: &Value| {
        if v["used_vehicle"]["inventory_tenure"]["age_days"] == json!(1) {
            Err("refused later".into())
        } else {
            Ok(())
        }
    });
    for (name, check) in [
        ("schema", schema),
        ("all pass", all_pass),
        ("some fail", some_fail),
        ("later only", later_only),
    ] {
        let expected = built_then_checked(&records, &check);
        let got = received(&records, Keep::All, check.clone());
        assert_eq!(got, expected, "{name}");
        // Some of the varied records break the schema (a negative price,
        // control characters), so every check here fails some row but one.
        assert_eq!(got.1.iter().all(|ok| *ok), name == "all pass", "{name}");
    }
}

/// The withdrawn set: only the vehicles the newer snapshot dropped are
/// indexed and checked.
#[test]
fn checking_while_reading_keeps_only_the_dropped_vehicles() {
    let records: Vec<VehicleRecord> = (0..20).map(varied).collect();
    let current = index("roof.a", records[..10].to_vec());
    let dropped: Vec<VehicleRecord> = records[10..].to_vec();
    let fail_one: VehicleCheck = Arc::new(|v: &Value| {
        if v["vehicle_id"].as_str().unwrap_or_default().ends_with("15") {
            Err("refused".into())
        } else {
            Ok(())
        }
    });
    let got = received(&records, Keep::NotIn(current), fail_one.clone());
    assert_eq!(got, built_then_checked(&dropped, &fail_one));
    assert_eq!(got.1.iter().filter(|ok| !**ok).count(), 1);
}
