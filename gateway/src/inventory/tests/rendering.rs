//! Rendering: schema validity, availability, freshness, price claims.

use super::*;

pub(super) fn vehicle_validator() -> jsonschema::Validator {
    let catalog = crate::catalog::Catalog::load().expect("catalog");
    let schema = crate::catalog::bundle_reference(
        &catalog.schema_documents,
        "vehicle.schema.json#/$defs/vehicle",
    )
    .expect("bundle");
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("compile")
}

fn assert_valid(validator: &jsonschema::Validator, v: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{v:#}");
}

pub(super) fn ctx(withdrawn: bool) -> RenderContext {
    RenderContext {
        now: now(),
        inventory_sla_seconds: 900,
        withdrawn,
    }
}

#[test]
fn rendered_vehicles_validate_against_the_schema() {
    let validator = vehicle_validator();
    let mut sparse = car("roof.a", 1);
    sparse.vin = None;
    sparse.stock_number = None;
    sparse.trim = None;
    sparse.vehicle_type = None;
    sparse.odometer = None;
    sparse.powertrain = None;
    sparse.features = vec![];
    sparse.media = vec![];
    sparse.listing_url = None;
    sparse.required_dealer_charges = None;
    sparse.stocked_at = None;
    sparse.source.source_record_id = None;
    sparse.source.transformations = vec![];
    let mut certified = car("roof.a", 2);
    certified.condition = "certified".into();
    certified.history_report_status = Some("available".into());
    certified.certification_type = Some("manufacturer_cpo".into());
    certified.first_public_listing_at = Some(now() - Duration::days(9));
    certified.odometer = Some(Odometer {
        value: 1,
        unit: DistanceUnit::Km,
        status: Some(crate::inventory::model::OdometerStatus::Actual),
    });
    let mut new = car("roof.a", 3);
    new.condition = "new".into();
    for record in [car("roof.a", 0), sparse, certified.clone(), new.clone()] {
        for withdrawn in [false, true] {
            let v = render::vehicle(&record, &ctx(withdrawn));
            assert_valid(&validator, &v);
            assert!(v.get("price").is_none());
        }
    }
    let v = render::vehicle(&certified, &ctx(false));
    let used = &v["used_vehicle"];
    assert_eq!(used["inventory_tenure"]["age_days"], 10);
    assert_eq!(used["inventory_tenure"]["age_basis"], "stocked_at");
    assert_eq!(
        used["inventory_tenure"]["age_as_of"],
        "2026-09-01T12:00:00Z"
    );
    assert_eq!(used["history_report_status"], "available");
    assert_eq!(used["certification_type"], "manufacturer_cpo");
    assert_eq!(
        v["odometer"],
        json!({"value": 1, "unit": "km", "status": "actual"})
    );
    assert!(
        render::vehicle(&new, &ctx(false))
            .get("used_vehicle")
            .is_none()
    );
    let mut no_basis = car("roof.a", 4);
    no_basis.stocked_at = None;
    assert!(
        render::vehicle(&no_basis, &ctx(false))
            .get("used_vehicle")
            .is_none()
    );
    let unknowns = render::vehicle(&car("roof.a", 5), &ctx(false));
    assert_eq!(unknowns["used_vehicle"]["history_report_status"], "unknown");
    assert_eq!(unknowns["used_vehicle"]["certification_type"], "unknown");
}

#[test]
fn availability_is_asserted_and_withdrawn_is_never_available() {
    let r = car("roof.a", 0);
    let live = render::vehicle(&r, &ctx(false));
    assert_eq!(live["availability"]["status"], "available");
    assert_eq!(live["availability"]["authority_status"], "asserted");
    assert_eq!(live["availability"]["human_verification_required"], true);
    assert!(
        live["availability"]["reason"]
            .as_str()
            .unwrap()
            .contains("dealeragent.inventory.verify_availability")
    );
    assert_eq!(live["provenance"]["authority_status"], "asserted");
    let gone = render::vehicle(&r, &ctx(true));
    assert_eq!(gone["availability"]["status"], "unknown");
    assert_eq!(gone["freshness"]["state"], "withdrawn");
    assert!(
        gone["availability"]["reason"]
            .as_str()
            .unwrap()
            .contains("withdrawn from the dealer's latest inventory feed")
    );
}

#[test]
fn freshness_is_current_within_the_sla_and_stale_after() {
    let mut r = car("roof.a", 0);
    r.source.observed_at = now() - Duration::seconds(900);
    let v = render::vehicle(&r, &ctx(false));
    assert_eq!(v["freshness"]["state"], "current");
    assert_eq!(v["freshness"]["valid_until"], "2026-09-01T12:00:00Z");
    assert_eq!(v["freshness"]["max_age_seconds"], 900);
    assert_eq!(v["availability"]["valid_until"], "2026-09-01T12:00:00Z");
    r.source.observed_at = now() - Duration::seconds(901);
    assert_eq!(
        render::vehicle(&r, &ctx(false))["freshness"]["state"],
        "stale"
    );
}

#[test]
fn advertised_price_claims_included_charges_only_when_known() {
    let mut r = car("roof.a", 0);
    let price = |r: &VehicleRecord| render::vehicle(r, &ctx(false))["advertised_price"].clone();
    assert_eq!(
        price(&r),
        json!({"amount": {"amount_minor": 4_287_500, "currency": "USD"},
               "availability": "generally_available",
               "includes_required_dealer_charges": true})
    );
    r.required_dealer_charges = None;
    assert_eq!(price(&r)["includes_required_dealer_charges"], false);
    let charge = |included: bool| -> crate::dap::DealerCharge {
        serde_json::from_value(json!({
            "charge_id": "doc", "name": "Documentation fee",
            "amount": {"amount_minor": 19900, "currency": "USD"}, "payee": "dealer",
            "included_in_advertised_price": included, "required": true
        }))
        .unwrap()
    };
    r.required_dealer_charges = Some(vec![charge(true), charge(false)]);
    assert_eq!(price(&r)["includes_required_dealer_charges"], false);
    r.required_dealer_charges = Some(vec![charge(true)]);
    assert_eq!(price(&r)["includes_required_dealer_charges"], true);
}

#[test]
fn aggregate_freshness_is_never_better_than_its_stalest_part() {
    let basis = |minutes: i64, withdrawn: bool| FreshnessBasis {
        observed_at: now() - Duration::minutes(minutes),
        sla_seconds: 900,
        withdrawn,
    };
    let fresh = render::aggregate_freshness(&[basis(1, false), basis(2, false)], &[], now());
    assert_eq!(fresh["state"], "current");
    assert_eq!(fresh["observed_at"], "2026-09-01T11:58:00Z");
    let stale = render::aggregate_freshness(&[basis(1, false), basis(20, false)], &[], now());
    assert_eq!(stale["state"], "stale");
    let withdrawn = render::aggregate_freshness(&[basis(1, true)], &[], now());
    assert_eq!(withdrawn["state"], "stale");
    // An empty page describes the searched snapshots.
    let ix = index("roof.a", vec![]);
    let snap = FreshnessBasis::of_snapshot(&ix);
    let empty = render::aggregate_freshness(&[], &[snap], now());
    assert_eq!(empty["state"], "current");
    assert_eq!(empty["observed_at"], "2026-09-01T11:55:00Z");
    let old = FreshnessBasis {
        observed_at: now() - Duration::hours(2),
        ..snap
    };
    assert_eq!(
        render::aggregate_freshness(&[], &[snap, old], now())["state"],
        "stale"
    );
    assert_eq!(
        render::aggregate_freshness(&[], &[], now())["state"],
        "unknown"
    );
    let prov = render::search_provenance(&[index("roof.a", vec![car("roof.a", 0)])], now());
    assert_eq!(prov["sources"].as_array().unwrap().len(), 1);
    assert_eq!(prov["authority_status"], "derived");
}

#[test]
fn search_results_render_valid_vehicles() {
    let validator = vehicle_validator();
    let fleet: Vec<_> = (0..5).map(|n| car("roof.a", n)).collect();
    let ixs = [index("roof.a", fleet)];
    let page = search::search(&ixs, &query(json!({"organization_id": ORG})), None, now());
    let mut seen = BTreeSet::new();
    for (ix, row) in &page.vehicles {
        let c = RenderContext {
            now: now(),
            inventory_sla_seconds: ix.inventory_sla_seconds(),
            withdrawn: false,
        };
        let record = ix.record(*row);
        let v = render::vehicle(&record, &c);
        assert_valid(&validator, &v);
        assert_eq!(render::vehicle_owned(record, &c), v);
        seen.insert(v["vehicle_id"].as_str().unwrap().to_owned());
    }
    assert_eq!(seen.len(), 5);
}
