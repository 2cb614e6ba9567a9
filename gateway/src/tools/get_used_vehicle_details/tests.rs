//! The typed answer against its published definition, from real data: the
//! served demo's feeds imported through the DAP CSV reader (used units with
//! complete, partial, conflicting and missing evidence), rendered live and
//! withdrawn.

use chrono::{DateTime, Duration, TimeZone, Utc};

use super::*;
use crate::ingest::{FeedFormat, IngestContext, parse_feed};
use crate::inventory::model::VehicleRecord;
use crate::tools::output::drift::check_output;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 9, 14, 15, 30, 12).unwrap()
}

/// Every vehicle of the served demo, imported at [`now`].
fn demo_records() -> Vec<VehicleRecord> {
    let catalog = crate::catalog::Catalog::load().unwrap();
    let dealers = include_bytes!("../../../../demo/dealers.yaml");
    let orgs = crate::dealers::parse(&catalog, "dealers.yaml", dealers, "test", now()).unwrap();
    let rooftops: Vec<(String, String, String, String)> = orgs
        .iter()
        .flat_map(|o| {
            o.rooftops.iter().map(|r| {
                (
                    o.organization_id.clone(),
                    r.rooftop_id.clone(),
                    r.settings.currency.clone(),
                    r.settings.odometer_unit.clone(),
                )
            })
        })
        .collect();
    let feeds = crate::demo::demo_feeds(&rooftops, 2026, now()).unwrap();
    let mut out = Vec::new();
    for (file, bytes) in &feeds {
        let rooftop_id = file.strip_suffix(".csv").unwrap();
        let org = orgs
            .iter()
            .find(|o| o.rooftops.iter().any(|r| r.rooftop_id == rooftop_id))
            .unwrap();
        let ctx = IngestContext::for_organization(org, Some(rooftop_id), now());
        let parsed = parse_feed(FeedFormat::DapCsv, file, bytes, &ctx).unwrap();
        for rooftop in parsed.rooftops {
            out.extend(rooftop.vehicles);
        }
    }
    out
}

/// Every used-vehicle disclosure of the served demo, rendered an hour
/// after import (some parts current, some stale).
fn demo_details(withdrawn: bool) -> Vec<UsedVehicleDetails> {
    let render_ctx = RenderContext {
        now: now() + Duration::hours(1),
        inventory_sla_seconds: 3_600,
        withdrawn,
    };
    demo_records()
        .iter()
        .filter_map(|v| {
            render::used_vehicle_details(v, &render_ctx, "0123456789abcdef0123456789abcdef")
        })
        .collect()
}

#[test]
fn the_answer_matches_its_definition_on_real_data() {
    for withdrawn in [false, true] {
        let details = demo_details(withdrawn);
        // Every evidence state is among them, so every optional part is
        // both written and skipped somewhere.
        let stated = |d: &&UsedVehicleDetails| d.title.provenance.authority_status == "asserted";
        assert!(details.iter().any(|d| stated(&d)));
        assert!(details.iter().any(|d| !stated(&d)));
        assert!(
            details
                .iter()
                .any(|d| d.reconditioning.completed_at.is_some())
        );
        assert!(
            details
                .iter()
                .any(|d| d.condition_report.components.is_some())
        );
        assert!(details.iter().any(|d| d.history_reports.is_empty()));
        assert!(
            details
                .iter()
                .any(|d| d.history_reports.iter().any(|r| r.summary.is_some()))
        );
        assert!(details.iter().any(|d| !d.discrepancies.is_empty()));
        assert!(
            details
                .iter()
                .any(|d| d.certification.program_name.is_some())
        );
        check_output(&details);
    }
}
