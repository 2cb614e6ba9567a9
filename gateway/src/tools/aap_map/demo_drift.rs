//! The typed AAP vehicle against its published definitions, from real
//! data: every vehicle of the served demo, imported through the DAP CSV
//! reader and rendered as the DAP tools answer it (current, an hour stale,
//! and withdrawn), mapped by [`super::vehicle`]. Every vehicle AAP may
//! list is checked as `aapVehicle`, its evidence as `aapVehicleEvidence`,
//! and each as the `aapVehicleResponse` of `aap_inventory_vehicle`
//! (members both ways, required members never skipped, full validation).

use std::collections::HashMap;

use chrono::{DateTime, Duration, TimeZone, Utc};

use crate::ingest::{FeedFormat, IngestContext, parse_feed};
use crate::inventory::model::VehicleRecord;
use crate::inventory::render::{self, RenderContext};
use crate::tools::output::drift::check_output;
use crate::tools::output::{AapVehicle, AapVehicleResponse};

fn imported_at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 9, 14, 15, 30, 12).unwrap()
}

/// Every vehicle of the served demo, and every rooftop's name by id.
fn demo() -> (Vec<VehicleRecord>, HashMap<String, String>) {
    let catalog = crate::catalog::Catalog::load().unwrap();
    let dealers = include_bytes!("../../../../demo/dealers.yaml");
    let orgs =
        crate::dealers::parse(&catalog, "dealers.yaml", dealers, "test", imported_at()).unwrap();
    let mut names = HashMap::new();
    let mut rooftops = Vec::new();
    for org in &orgs {
        for r in &org.rooftops {
            names.insert(r.rooftop_id.clone(), r.dap.name.clone());
            rooftops.push((
                org.organization_id.clone(),
                r.rooftop_id.clone(),
                r.settings.currency.clone(),
                r.settings.odometer_unit.clone(),
            ));
        }
    }
    let feeds = crate::demo::demo_feeds(&rooftops, 2026, imported_at()).unwrap();
    let mut records = Vec::new();
    for (file, bytes) in &feeds {
        let rooftop_id = file.strip_suffix(".csv").unwrap();
        let org = orgs
            .iter()
            .find(|o| o.rooftops.iter().any(|r| r.rooftop_id == rooftop_id))
            .unwrap();
        let ctx = IngestContext::for_organization(org, Some(rooftop_id), imported_at());
        let parsed = parse_feed(FeedFormat::DapCsv, file, bytes, &ctx).unwrap();
        for rooftop in parsed.rooftops {
            records.extend(rooftop.vehicles);
        }
    }
    (records, names)
}

#[test]
fn every_demo_vehicle_aap_lists_matches_the_published_definitions() {
    let (records, names) = demo();
    assert!(!records.is_empty());
    let mut listed: Vec<AapVehicle> = Vec::new();
    let mut withheld = 0;
    for (hours, withdrawn) in [(0, false), (1, false), (0, true)] {
        let ctx = RenderContext {
            now: imported_at() + Duration::hours(hours),
            inventory_sla_seconds: 900,
            withdrawn,
        };
        for record in &records {
            let dap = render::vehicle(record, &ctx);
            match super::vehicle(&dap, &names).unwrap() {
                Some(aap) => {
                    assert!(!withdrawn, "a withdrawn unit is never listed");
                    // The typed vehicle carries the DAP facts unchanged.
                    let evidence = serde_json::to_value(&aap.dealergateway).unwrap();
                    for member in [
                        "availability",
                        "advertised_price",
                        "provenance",
                        "freshness",
                    ] {
                        assert_eq!(evidence[member], dap[member], "{member}");
                    }
                    assert_eq!(evidence.get("odometer"), dap.get("odometer"));
                    listed.push(aap);
                }
                None => withheld += 1,
            }
        }
    }
    assert!(withheld > 0, "the demo has units AAP does not list");
    // The optional members are both written and skipped among them.
    assert!(listed.iter().any(|v| v.list_price.is_some()));
    assert!(listed.iter().any(|v| v.list_price.is_none()));
    assert!(listed.iter().any(|v| v.inventory_date.is_some()));
    assert!(listed.iter().any(|v| v.inventory_date.is_none()));
    assert!(listed.iter().any(|v| v.condition.is_some()));
    check_output(&listed);
    let evidence: Vec<_> = listed.iter().map(|v| v.dealergateway.clone()).collect();
    check_output(&evidence);
    let responses: Vec<AapVehicleResponse> =
        listed.into_iter().map(AapVehicleResponse::of).collect();
    check_output(&responses);
}
