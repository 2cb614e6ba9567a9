//! Every served used-vehicle record against its published definition
//! (members both ways, required members never skipped, real instances
//! valid).

use super::*;
use crate::dap::used::tests::{inspection, reconditioning, title};
use crate::tools::output::drift::{check, freshness, provenance};

fn relay(full: bool) -> RelayProvenance {
    let feed = provenance(full).sources.remove(0);
    RelayProvenance {
        sources: vec![
            RelaySource::Provider(ProviderSource {
                source_name: "CARFAX".into(),
                source_record_id: full.then(|| "R-1".into()),
                authority: "third_party".into(),
                observed_at: "2026-01-02T00:00:00Z".into(),
                content_digest: None,
                source_uri: None,
            }),
            RelaySource::Feed(feed),
        ],
        authority_status: "asserted".into(),
        transformed_at: full.then(|| "2026-01-02T03:04:06Z".into()),
        transformations: vec!["relayed".into()],
    }
}

fn tenure(full: bool) -> InventoryTenure {
    InventoryTenure {
        stocked_at: "2026-01-01T00:00:00Z".into(),
        first_public_listing_at: full.then(|| "2026-01-02T00:00:00Z".into()),
        age_days: 12,
        age_as_of: "2026-01-13T00:00:00Z".into(),
        age_basis: "stocked_at".into(),
        provenance: provenance(full),
        freshness: freshness(full),
    }
}

fn report(full: bool) -> HistoryReportDisclosure {
    HistoryReportDisclosure {
        provider_id: "com.carfax".into(),
        provider_name: "CARFAX".into(),
        report_id: full.then(|| "R-1".into()),
        status: "available".into(),
        access: "public_link".into(),
        report_url: full.then(|| "https://reports.example/R-1".into()),
        report_generated_at: full.then(|| "2026-01-01T00:00:00Z".into()),
        observed_at: "2026-01-02T00:00:00Z".into(),
        summary_sharing_authorized: full,
        summary: full.then(|| {
            serde_json::json!({
                "accident_status": "no_events_reported",
                "damage_status": "unknown",
                "title_brand_status": "no_brands_reported",
                "odometer_consistency": "consistent",
                "owner_count_status": "unknown"
            })
        }),
        provenance: relay(full),
        freshness: freshness(full),
    }
}

fn odometer(full: bool) -> OdometerDisclosure {
    OdometerDisclosure {
        reading: Distance {
            value: 18_420,
            unit: if full { "km" } else { "mi" },
        },
        status: if full { "exempt" } else { "unknown" }.into(),
        observed_at: "2026-01-02T03:04:05Z".into(),
        provenance: provenance(full),
        freshness: freshness(full),
    }
}

fn certification(full: bool) -> Certification {
    Certification {
        kind: if full { "manufacturer_cpo" } else { "unknown" }.into(),
        program_name: full.then(|| "Honda Certified".into()),
        certified_at: full.then(|| "2026-01-02T03:04:05Z".into()),
        inspection_point_count: full.then_some(182),
        warranty: full.then(|| {
            vec![WarrantyCoverage {
                coverage_type: "powertrain".into(),
                status: "included".into(),
                term_months: Some(84),
                distance_limit: Some(Distance {
                    value: 100_000,
                    unit: "mi",
                }),
                expires_at: Some("2030-01-01T00:00:00Z".into()),
                transferable: Some(true),
                description: Some("Powertrain limited warranty.".into()),
            }]
        }),
        provenance: provenance(full),
        freshness: freshness(full),
    }
}

fn discrepancy() -> Discrepancy {
    Discrepancy {
        field: "history.accident_status".into(),
        source_names: vec!["CARFAX".into(), "AutoCheck".into()],
        description: "The history reports disagree.".into(),
        status: "unresolved".into(),
    }
}

fn details(full: bool) -> UsedVehicleDetails {
    UsedVehicleDetails {
        vehicle_id: "veh_1".into(),
        organization_id: "org.a".into(),
        rooftop_id: "roof.a".into(),
        vin: "1HGCM82633A004352".into(),
        condition: "used".into(),
        odometer: odometer(full),
        inventory_tenure: tenure(full),
        history_reports: if full { vec![report(true)] } else { vec![] },
        title: title(full).disclosed(provenance(full), freshness(full)),
        condition_report: inspection(full).disclosed(provenance(full), freshness(full)),
        certification: certification(full),
        reconditioning: reconditioning(full).disclosed(provenance(full), freshness(full)),
        discrepancies: if full { vec![discrepancy()] } else { vec![] },
        provenance: relay(full),
        freshness: freshness(full),
        trace_id: "0123456789abcdef0123456789abcdef".into(),
        extensions: None,
    }
}

#[test]
fn the_served_used_vehicle_records_match_their_definitions() {
    let defs = "used-vehicle.schema.json#/$defs/";
    check(
        &format!("{defs}odometerDisclosure"),
        &[odometer(false), odometer(true)],
    );
    check(
        "vehicle.schema.json#/$defs/inventoryTenure",
        &[tenure(false), tenure(true)],
    );
    check(
        &format!("{defs}historyReport"),
        &[report(false), report(true)],
    );
    check(
        &format!("{defs}titleDisclosure"),
        &[false, true].map(|f| title(f).disclosed(provenance(f), freshness(f))),
    );
    check(
        &format!("{defs}conditionReport"),
        &[false, true].map(|f| inspection(f).disclosed(provenance(f), freshness(f))),
    );
    check(
        &format!("{defs}reconditioning"),
        &[false, true].map(|f| reconditioning(f).disclosed(provenance(f), freshness(f))),
    );
    check(
        &format!("{defs}certification"),
        &[certification(false), certification(true)],
    );
    check(
        &format!("{defs}warrantyCoverage"),
        &certification(true).warranty.unwrap(),
    );
    check(&format!("{defs}discrepancy"), &[discrepancy()]);
    check(
        "common.schema.json#/$defs/provenance",
        &[relay(false), relay(true)],
    );
    for source in relay(true).sources {
        if let RelaySource::Provider(p) = source {
            check("common.schema.json#/$defs/source", &[p]);
        }
    }
    check(
        "common.schema.json#/$defs/distance",
        &[odometer(true).reading],
    );
    check(
        &format!("{defs}usedVehicleDetails"),
        &[details(false), details(true)],
    );
}

/// Disclosing a published part keeps every member it had: the served
/// object is the published one plus provenance and freshness, in order.
#[test]
fn a_disclosed_part_is_the_published_one_plus_provenance_and_freshness() {
    fn published_then_added<T: serde::Serialize, D: serde::Serialize>(part: &T, served: &D) {
        let part = serde_json::to_value(part).unwrap();
        let served = serde_json::to_value(served).unwrap();
        let mut expected = part.as_object().unwrap().clone();
        expected.insert(
            "provenance".into(),
            serde_json::to_value(provenance(true)).unwrap(),
        );
        expected.insert(
            "freshness".into(),
            serde_json::to_value(freshness(true)).unwrap(),
        );
        assert_eq!(
            serde_json::to_string(&expected).unwrap(),
            serde_json::to_string(&served).unwrap()
        );
    }
    for full in [false, true] {
        published_then_added(
            &title(full),
            &title(full).disclosed(provenance(true), freshness(true)),
        );
        published_then_added(
            &inspection(full),
            &inspection(full).disclosed(provenance(true), freshness(true)),
        );
        published_then_added(
            &reconditioning(full),
            &reconditioning(full).disclosed(provenance(true), freshness(true)),
        );
    }
}
