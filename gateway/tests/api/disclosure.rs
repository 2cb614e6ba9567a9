//! `dealeragent.pricing.get_disclosure` over real HTTP (docs/pricing.md
//! section 5):
//! the "one price problem" cases give honest disclosures — conditional
//! offers listed apart from the advertised price, required charges
//! itemized, unknown government charges never zero — and the completeness
//! score follows docs/pricing.md section 6. Backend-neutral.

use crate::common;

use crate::common::{
    TestApp, fresh_database, spawn, spawn_on, test_source, test_vehicle, tool_error_code,
};
use chrono::{DateTime, Duration, SubsecRound as _, Utc};
use gateway::inventory::model::VehicleRecord;
use gateway::store::{GovernmentChargeEstimate, RooftopPricing};
use serde_json::{Value, json};

const ORG: &str = "org.search-motors";
const NORTH: &str = "roof.search-north";
const SOUTH: &str = "roof.search-south";
const PRIVATE: &str = "roof.search-private";
const OTHER_ORG: &str = "org.other-group";
const EAST: &str = "roof.other-east";

const TOOL: &str = "dealeragent.pricing.get_disclosure";
const NOT_FOUND: &str = "dealeragent.resource.not_found";

struct Fixture {
    app: TestApp,
    now: DateTime<Utc>,
}

/// A fixture written as JSON, read as its typed record.
fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a valid DAP record")
}

fn usd(minor: i64) -> Value {
    json!({"amount_minor": minor, "currency": "USD"})
}

fn charge(id: &str, name: &str, amount: Value, included: bool) -> Value {
    json!({
        "charge_id": id, "name": name, "amount": amount, "payee": "dealer",
        "included_in_advertised_price": included, "required": true,
        "taxable_status": "jurisdiction_dependent",
    })
}

fn military(valid_until: DateTime<Utc>) -> Value {
    json!({
        "adjustment_id": "incentive.military",
        "name": "Military appreciation",
        "direction": "discount",
        "amount_status": "known",
        "amount": usd(50_000),
        "criteria": [{"criterion": "military", "operator": "verified", "value": true, "evidence_status": "required"}],
        "criteria_mode": "all",
        "jurisdictions": [{"country": "US"}],
        "valid_until": gateway::inventory::render::timestamp(valid_until),
        "stacking": {"group": "affinity", "combinability": "rule_defined"},
    })
}

fn finance_only() -> Value {
    json!({
        "adjustment_id": "incentive.finance-cash",
        "name": "Finance bonus cash",
        "direction": "discount",
        "amount_status": "unknown",
        "criteria": [{"criterion": "payment_mode", "operator": "equals", "value": "finance", "evidence_status": "not_required"}],
        "stacking": {"group": "finance", "combinability": "stackable"},
    })
}

fn canada_only() -> Value {
    json!({
        "adjustment_id": "incentive.canada",
        "name": "Canada loyalty",
        "direction": "discount",
        "amount_status": "known",
        "amount": usd(100_000),
        "criteria": [{"criterion": "loyalty", "operator": "present", "value": true, "evidence_status": "required"}],
        "jurisdictions": [{"country": "CA"}],
        "stacking": {"group": "loyalty", "combinability": "exclusive"},
    })
}

fn north_pricing() -> RooftopPricing {
    RooftopPricing {
        required_dealer_charges: vec![
            typed(charge(
                "charge.documentation",
                "Documentation fee",
                usd(39_900),
                false,
            )),
            typed(charge(
                "charge.prep",
                "Dealer preparation",
                usd(29_500),
                true,
            )),
        ],
        government_charge_estimates: vec![
            GovernmentChargeEstimate {
                jurisdiction: typed(json!({"country": "US"})),
                lines: typed(json!([
                    {"name": "Federal placeholder", "amount": usd(1), "payee": "government"},
                ])),
                assumptions: vec!["Country-level fallback.".into()],
            },
            GovernmentChargeEstimate {
                jurisdiction: typed(json!({"country": "US", "subdivision": "US-IL"})),
                lines: typed(json!([
                    {"name": "State sales tax (estimate)", "amount": usd(203_000), "payee": "government", "basis": "6.25% of the advertised price"},
                    {"name": "Title and registration", "amount": usd(15_100), "payee": "government_agent"},
                ])),
                assumptions: vec!["Buyer registers the vehicle in Illinois.".into()],
            },
        ],
        ..RooftopPricing::default()
    }
}

/// NORTH: `a` (the one-price case), `b` (nothing but the price), `c`
/// (stale, everything classified); SOUTH: a JPY vehicle; PRIVATE and EAST
/// one vehicle each.
async fn setup() -> (Fixture, Vec<VehicleRecord>) {
    setup_with(false).await
}

/// [`setup`], with `tests/fixtures/disclosure/programs.yaml` imported for
/// ORG when `programs`.
async fn setup_with(programs: bool) -> (Fixture, Vec<VehicleRecord>) {
    let bytes = programs.then(|| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/disclosure/programs.yaml");
        std::fs::read(&path).expect("programs fixture")
    });
    setup_custom(bytes, |_| {}).await
}

/// [`setup`], with the programs file `programs` (YAML) imported for ORG
/// and vehicle `b` edited by `edit_b`.
async fn setup_custom(
    programs: Option<Vec<u8>>,
    edit_b: impl FnOnce(&mut VehicleRecord),
) -> (Fixture, Vec<VehicleRecord>) {
    let now = Utc::now().trunc_subsecs(0);
    let (dir, url) = fresh_database().await;
    let store = gateway::store::open(&url).await.expect("store opens");
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/search/dealers.yaml");
    let bytes = std::fs::read(&path).expect("dealers fixture");
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let mut orgs =
        gateway::dealers::parse(&catalog, "dealers.yaml", &bytes, "dealers-file:test", now)
            .unwrap_or_else(|e| panic!("{e}"));
    for org in &mut orgs {
        for rooftop in &mut org.rooftops {
            if rooftop.rooftop_id == NORTH {
                rooftop.settings.pricing = north_pricing();
            }
        }
    }
    store
        .upsert_organizations(&orgs)
        .await
        .expect("dealers imported");
    if let Some(bytes) = programs {
        let parsed = gateway::offers::import::parse(
            &catalog,
            "programs.yaml",
            &bytes,
            "programs-file:test",
            now,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        store
            .import_programs(ORG, &parsed.records)
            .await
            .expect("programs imported");
    }

    let mut a = test_vehicle(ORG, NORTH, "veh.a.n", "1NRTH", 1, now);
    a.required_dealer_charges = Some(vec![typed(charge(
        "charge.documentation",
        "Documentation fee",
        usd(49_900),
        false,
    ))]);
    a.conditional_adjustments = Some(typed(json!([
        military(now + Duration::minutes(20)),
        finance_only(),
        canada_only(),
    ])));
    let mut b = test_vehicle(ORG, NORTH, "veh.b.n", "1NRTH", 2, now);
    edit_b(&mut b);
    let mut c = test_vehicle(ORG, NORTH, "veh.c.n", "1NRTH", 3, now);
    c.source.observed_at = now - Duration::hours(3);
    c.required_dealer_charges = Some(vec![]);
    c.conditional_adjustments = Some(vec![]);
    c.government_charges_status = Some("not_applicable".into());
    let mut j = test_vehicle(ORG, SOUTH, "veh.j.s", "2STHX", 1, now);
    j.advertised_price = pricing::Money::from_minor(3_500_000, pricing::Currency::JPY);
    j.required_dealer_charges = Some(vec![typed(charge(
        "charge.registration-agency",
        "Registration agency fee",
        json!({"amount_minor": 55_000, "currency": "JPY"}),
        false,
    ))]);
    let p = test_vehicle(ORG, PRIVATE, "veh.p.p", "3PRVT", 1, now);
    let e = test_vehicle(OTHER_ORG, EAST, "veh.e.e", "4EAST", 1, now);
    for (org, rooftop, vehicles) in [
        (ORG, NORTH, vec![a.clone(), b.clone(), c.clone()]),
        (ORG, SOUTH, vec![j.clone()]),
        (ORG, PRIVATE, vec![p.clone()]),
        (OTHER_ORG, EAST, vec![e.clone()]),
    ] {
        store
            .create_snapshot(
                org,
                rooftop,
                &test_source(&format!("{rooftop}.csv"), now),
                &vehicles,
            )
            .await
            .expect("snapshot created");
    }
    let app = spawn_on(dir, url, |s| s.no_demo = true).await;
    (Fixture { app, now }, vec![a, b, c, j, p, e])
}

async fn disclose(app: &TestApp, args: Value) -> Value {
    let result = app.call_tool(TOOL, args.clone()).await;
    assert_eq!(tool_error_code(&result), None, "{args}: {result}");
    let doc = result["structuredContent"].clone();
    assert_honest_shape(&doc);
    doc
}

fn args(v: &VehicleRecord) -> Value {
    json!({"organization_id": v.organization_id, "rooftop_id": v.rooftop_id, "vehicle_id": v.vehicle_id})
}

/// No generic `price` key anywhere; every `amount_minor` is an integer.
fn assert_honest_shape(v: &Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                assert_ne!(k, "price", "generic price key in {v}");
                if k == "amount_minor" {
                    assert!(x.is_i64(), "amount_minor not an integer: {x}");
                }
                assert_honest_shape(x);
            }
        }
        Value::Array(a) => a.iter().for_each(assert_honest_shape),
        _ => {}
    }
}

/// The first JSON pointer at which `a` and `b` differ, for messages.
fn first_difference(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.keys()
                .chain(y.keys())
                .find_map(|k| match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => first_difference(p, q, &format!("{at}/{k}")),
                    _ => Some(format!("{at}/{k}")),
                })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, &format!("{at}/{i}"))),
        _ => (a != b).then(|| format!("{at}: {a} != {b}")),
    }
}

fn time(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().expect("timestamp"))
        .expect("rfc3339")
        .with_timezone(&Utc)
}

#[tokio::test]
async fn the_one_price_problem_cases_give_an_honest_disclosure() {
    let (fx, v) = setup().await;
    let d = disclose(&fx.app, args(&v[0])).await;
    assert_eq!(
        d["disclosure_id"]
            .as_str()
            .unwrap()
            .split('.')
            .take(3)
            .collect::<Vec<_>>(),
        ["pricing", "veh", "a"]
    );

    // The advertised price is the generally available one, untouched.
    assert_eq!(d["advertised_price"]["amount"], usd(3_249_500));
    assert_eq!(d["advertised_price"]["availability"], "generally_available");
    assert_eq!(
        d["advertised_price"]["includes_required_dealer_charges"],
        json!(false)
    );

    // Required charges: rooftop defaults plus the vehicle's own (it wins).
    let charges = d["required_dealer_charges"].as_array().unwrap();
    assert_eq!(charges.len(), 2, "{charges:?}");
    let doc_fee = charges
        .iter()
        .find(|c| c["charge_id"] == "charge.documentation")
        .unwrap();
    assert_eq!(doc_fee["amount"], usd(49_900));
    assert_eq!(doc_fee["included_in_advertised_price"], json!(false));
    assert_eq!(
        doc_fee["provenance"]["sources"][0]["source_name"],
        v[0].source.source_name.as_str()
    );
    let prep = charges
        .iter()
        .find(|c| c["charge_id"] == "charge.prep")
        .unwrap();
    assert_eq!(
        prep["provenance"]["sources"][0]["source_name"],
        "dealers-file:test"
    );

    // Conditional adjustments: listed as conditional, never subtracted.
    let adjustments = d["conditional_adjustments"].as_array().unwrap();
    let ids: Vec<&str> = adjustments
        .iter()
        .map(|a| a["adjustment_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "incentive.military",
            "incentive.finance-cash",
            "incentive.canada"
        ]
    );
    assert_eq!(adjustments[0]["criteria"][0]["evidence_status"], "required");

    // Government charges unknown: no lines, no total.
    let gov = &d["government_charges"];
    assert_eq!(gov["status"], "unknown");
    assert!(
        gov.get("lines").is_none() && gov.get("total").is_none(),
        "{gov}"
    );
    assert_eq!(d["uncertainty"]["status"], "unknown");

    let text = d["disclosure_text"].as_str().unwrap();
    assert!(text.len() <= 4000);
    assert!(text.contains("32,495.00 USD"), "{text}");
    assert!(text.contains("Documentation fee (499.00 USD)"), "{text}");
    assert!(text.contains("NOT included"), "{text}");
    assert!(
        text.contains("Government charges (taxes, title, registration) are unknown"),
        "{text}"
    );
    assert!(
        !text.contains("$0") && !text.contains(" 0.00") && !text.contains(" 0 USD"),
        "{text}"
    );
    assert!(text.contains("eligibility"), "{text}");
    assert!(text.contains("Military appreciation"), "{text}");
    assert!(text.contains("not part of the advertised price"), "{text}");
    assert!(
        text.contains("not a personalized or out-the-door quote"),
        "{text}"
    );

    // Completeness: price 20 + charges 20 + adjustments 20 + government 0
    // + band asserted 10.
    let c = &d["disclosure_completeness"];
    assert_eq!(c["components"]["availability_band"], "asserted");
    assert_eq!(
        c["components"]["government_charges_classified"],
        json!(false)
    );
    assert_eq!(c["score"], json!(70));

    // Freshness: valid until the earliest input expiry (the military
    // offer, 20 minutes, before the inventory SLA's 55 minutes).
    assert_eq!(
        time(&d["freshness"]["valid_until"]),
        fx.now + Duration::minutes(20)
    );
    assert_eq!(d["freshness"]["state"], "current");
    assert_eq!(
        time(&d["freshness"]["observed_at"]),
        v[0].source.observed_at
    );
}

#[tokio::test]
async fn jurisdiction_selects_the_estimate_and_narrows_adjustments() {
    let (fx, v) = setup().await;
    let mut a = args(&v[0]);
    a["jurisdiction"] = json!({"country": "US", "subdivision": "US-IL"});
    a["payment_mode"] = json!("cash");
    let d = disclose(&fx.app, a).await;
    let gov = &d["government_charges"];
    assert_eq!(gov["status"], "estimated");
    assert_eq!(gov["lines"].as_array().unwrap().len(), 2);
    assert_eq!(gov["total"], usd(218_100));
    assert_eq!(
        gov["assumptions"][0],
        "Buyer registers the vehicle in Illinois."
    );
    assert_eq!(d["uncertainty"]["status"], "estimated");
    let ids: Vec<&str> = d["conditional_adjustments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["adjustment_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["incentive.military"],
        "cash in Illinois: no finance or Canadian offer"
    );
    let text = d["disclosure_text"].as_str().unwrap();
    assert!(text.contains("estimated at 2,181.00 USD"), "{text}");
    assert!(text.contains("Illinois"), "{text}");
    // 20 + 20 + 20 + 20 + asserted 10.
    assert_eq!(d["disclosure_completeness"]["score"], json!(90));

    // A jurisdiction without an estimate is unknown, never zero.
    let mut a = args(&v[0]);
    a["jurisdiction"] = json!({"country": "CA", "subdivision": "CA-ON"});
    let d = disclose(&fx.app, a).await;
    assert_eq!(d["government_charges"], json!({"status": "unknown"}));
    // The reason names where the dealer does publish estimates, never "no
    // amounts" (docs/pricing.md section 5).
    let reasons = d["uncertainty"].to_string();
    assert!(
        reasons.contains("the dealer publishes estimates only for US and US-IL"),
        "{reasons}"
    );
    assert!(!reasons.contains("publishes no"), "{reasons}");
    let ids: Vec<&str> = d["conditional_adjustments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["adjustment_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["incentive.finance-cash", "incentive.canada"]);
}

#[tokio::test]
async fn the_completeness_score_follows_the_published_weights() {
    let (fx, v) = setup().await;
    // b: price 20 + rooftop default charges 20 + adjustments unknown 0 +
    // government unknown 0 + asserted 10.
    let b = disclose(&fx.app, args(&v[1])).await;
    let c = &b["disclosure_completeness"];
    assert_eq!(
        c["components"],
        json!({
            "advertised_price_present_and_authoritative": true,
            "required_dealer_charges_itemized": true,
            "conditional_adjustments_have_eligibility_and_stacking": false,
            "government_charges_classified": false,
            "availability_band": "asserted",
        })
    );
    assert_eq!(c["score"], json!(50));
    assert_eq!(b["conditional_adjustments"], json!([]));
    // c: stale record (price not authoritative 0) + charges 20 +
    // adjustments 20 + not_applicable 20 + asserted (3 h) 10.
    let d = disclose(&fx.app, args(&v[2])).await;
    let c = &d["disclosure_completeness"];
    assert_eq!(
        c["components"]["advertised_price_present_and_authoritative"],
        json!(false)
    );
    assert_eq!(
        c["components"]["government_charges_classified"],
        json!(true)
    );
    assert_eq!(c["score"], json!(70));
    assert_eq!(d["government_charges"]["status"], "not_applicable");
    assert_eq!(d["freshness"]["state"], "stale");
    // Rooftop defaults apply to c too, its own list is empty.
    assert_eq!(d["required_dealer_charges"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn yen_amounts_have_no_decimals() {
    let (fx, v) = setup().await;
    let d = disclose(&fx.app, args(&v[3])).await;
    assert_eq!(
        d["advertised_price"]["amount"],
        json!({"amount_minor": 3_500_000, "currency": "JPY"})
    );
    let text = d["disclosure_text"].as_str().unwrap();
    assert!(text.contains("3,500,000 JPY"), "{text}");
    assert!(
        text.contains("Registration agency fee (55,000 JPY)"),
        "{text}"
    );
    assert!(text.contains("3,555,000 JPY"), "{text}");
    assert!(!text.contains("3,500,000.00"), "{text}");
    // The vehicle's own charges are known: itemized even without defaults.
    assert_eq!(
        d["disclosure_completeness"]["components"]["required_dealer_charges_itemized"],
        json!(true)
    );
}

#[tokio::test]
async fn foreign_private_and_absent_vehicles_are_not_found() {
    let (fx, v) = setup().await;
    let cases = [
        args(&v[4]),
        json!({"organization_id": ORG, "rooftop_id": EAST, "vehicle_id": v[5].vehicle_id}),
        json!({"organization_id": OTHER_ORG, "rooftop_id": NORTH, "vehicle_id": v[0].vehicle_id}),
        json!({"organization_id": ORG, "rooftop_id": SOUTH, "vehicle_id": v[0].vehicle_id}),
        json!({"organization_id": ORG, "rooftop_id": NORTH, "vehicle_id": "veh.nothing"}),
    ];
    for a in cases {
        let result = fx.app.call_tool(TOOL, a.clone()).await;
        assert_eq!(
            tool_error_code(&result).as_deref(),
            Some(NOT_FOUND),
            "{a}: {result}"
        );
    }
    // Two selectors are a validation error (exactly one of vehicle_id, vin
    // or stock_number).
    let mut a = args(&v[0]);
    a["vin"] = json!("1NRTH000000000001");
    let result = fx.app.call_tool(TOOL, a).await;
    assert_eq!(
        tool_error_code(&result).as_deref(),
        Some("dealeragent.validation.invalid")
    );
}

/// `get_disclosure` selects a vehicle by `vin` or `stock_number` like the
/// other vehicle tools (docs/agents.md "Disclosure"): the same document as
/// by `vehicle_id`; a VIN or stock number of another rooftop, or of none,
/// is not found, the same answer as a foreign `vehicle_id`; no selector is
/// a validation error.
#[tokio::test]
async fn a_disclosure_is_selected_by_vin_or_stock_number_like_get_vehicle() {
    let (fx, v) = setup().await;
    let strip = |mut d: Value| {
        d["provenance"]
            .as_object_mut()
            .expect("provenance")
            .remove("transformed_at");
        d
    };
    let vehicle = &v[0];
    let by_id = strip(disclose(&fx.app, args(vehicle)).await);
    let base =
        json!({"organization_id": vehicle.organization_id, "rooftop_id": vehicle.rooftop_id});
    for (member, value) in [
        ("vin", vehicle.vin.clone().expect("a VIN")),
        (
            "stock_number",
            vehicle.stock_number.clone().expect("a stock number"),
        ),
    ] {
        let mut a = base.clone();
        a[member] = json!(value);
        let doc = strip(disclose(&fx.app, a.clone()).await);
        assert_eq!(doc, by_id, "{a}: {:?}", first_difference(&doc, &by_id, ""));
        // The same VIN or stock number at another rooftop of the
        // organization does not reach this vehicle.
        a["rooftop_id"] = json!(SOUTH);
        let result = fx.app.call_tool(TOOL, a.clone()).await;
        assert_eq!(
            tool_error_code(&result).as_deref(),
            Some(NOT_FOUND),
            "{a}: {result}"
        );
    }
    let mut a = base.clone();
    a["vin"] = json!("1NRTH0000000ZZZZ9");
    let result = fx.app.call_tool(TOOL, a.clone()).await;
    assert_eq!(
        tool_error_code(&result).as_deref(),
        Some(NOT_FOUND),
        "{a}: {result}"
    );
    let result = fx.app.call_tool(TOOL, base.clone()).await;
    assert_eq!(
        tool_error_code(&result).as_deref(),
        Some("dealeragent.validation.invalid"),
        "{result}"
    );
}

#[tokio::test]
async fn published_programs_become_conditional_adjustments_with_the_evaluation() {
    let (fx, v) = setup_with(true).await;
    let d = disclose(&fx.app, args(&v[1])).await;
    let adjustments = d["conditional_adjustments"].as_array().unwrap();
    let ids: Vec<&str> = adjustments
        .iter()
        .map(|a| a["adjustment_id"].as_str().unwrap())
        .collect();
    // Used vehicle in Illinois (the rooftop's jurisdiction by default): not
    // the Canadian or the new-vehicle program.
    assert_eq!(ids, ["sm-finance-bonus", "sm-used-cash"], "{d}");
    let cash = &adjustments[1];
    assert_eq!(cash["amount_status"], "known");
    assert_eq!(cash["amount"], usd(100_000));
    assert_eq!(
        cash["stacking"],
        json!({"group": "dealer", "combinability": "stackable"})
    );
    assert_eq!(cash["criteria"][0]["evidence_status"], "not_required");
    let finance = &adjustments[0];
    assert_eq!(finance["criteria"][0]["criterion"], "payment_mode");
    assert_eq!(finance["stacking"]["combinability"], "rule_defined");
    assert!(
        finance["stacking"].get("rule").is_none(),
        "only DAP stacking fields"
    );
    // Never subtracted from the advertised price.
    assert_eq!(d["advertised_price"]["amount"], usd(3_249_500));
    // Provenance names the revisions and the rule hash.
    let transformations = d["provenance"]["transformations"].to_string();
    assert!(
        transformations.contains("program sm-used-cash revision 2"),
        "{transformations}"
    );
    assert!(
        transformations.contains("rule sha256:"),
        "{transformations}"
    );
    // The evaluation for the default profile rides in the extension:
    // concise by default (what decides the answer, and what is left out)...
    let offers = &d["extensions"]["dealergateway.offers"];
    assert_eq!(offers["payment_mode"], "unknown");
    assert!(offers.get("branches").is_none(), "{offers}");
    assert!(
        offers["omitted"]["left_out"]
            .to_string()
            .contains("the 3 payment-mode branches"),
        "{offers}"
    );
    assert!(
        offers["best_stack"]["net_price"]["amount_minor"].is_i64(),
        "{offers}"
    );
    // ...and whole with `detail: "full"` (docs/pricing.md section 5).
    let mut full = args(&v[1]);
    full["detail"] = json!("full");
    let full = disclose(&fx.app, full).await;
    let offers = &full["extensions"]["dealergateway.offers"];
    assert_eq!(offers["payment_mode"], "unknown");
    assert_eq!(offers["branches"].as_array().unwrap().len(), 3);
    assert!(
        offers["best_stack"]["net_price"]["amount_minor"].is_i64(),
        "{offers}"
    );
    // Adjustments are now known and described: 20 + 20 + 20 + 0 + 10.
    assert_eq!(d["disclosure_completeness"]["score"], json!(70));
    let text = d["disclosure_text"].as_str().unwrap();
    assert!(
        text.contains("Used vehicle cash (discount, 1,000.00 USD)"),
        "{text}"
    );

    // A cash buyer: the finance-only program is not applicable.
    let mut a = args(&v[1]);
    a["payment_mode"] = json!("cash");
    let d = disclose(&fx.app, a).await;
    let ids: Vec<&str> = d["conditional_adjustments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["adjustment_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["sm-used-cash"]);
    // A Canadian buyer sees the Canadian program.
    let mut a = args(&v[1]);
    a["jurisdiction"] = json!({"country": "CA", "subdivision": "CA-ON"});
    let d = disclose(&fx.app, a).await;
    let ids: Vec<&str> = d["conditional_adjustments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["adjustment_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["sm-canada", "sm-finance-bonus", "sm-used-cash"]);
}

#[tokio::test]
async fn the_preview_shows_the_disclosure_the_score_with_fixes_and_the_offer_table() {
    let (fx, v) = setup_with(true).await;
    let b = &v[1];
    let text = gateway::preview::run(
        &fx.app.database_url,
        ORG,
        NORTH,
        b.vin.as_deref(),
        None,
        None,
    )
    .await
    .expect("preview");
    // NORTH is in Illinois and has an estimate for US-IL: the preview
    // assumes a buyer in the rooftop's own jurisdiction, so the estimate
    // counts and the fix left is the band's (docs/console.md).
    assert!(
        text.contains("buyer assumed: US-IL (the rooftop's own jurisdiction"),
        "{text}"
    );
    assert!(
        text.contains("Government charges: estimated, total 2,181.00 USD"),
        "{text}"
    );
    assert!(text.contains("Completeness score: 90/100"), "{text}");
    assert!(!text.contains("government_charges_classified (-"), "{text}");
    assert!(text.contains("availability_band (-10)"), "{text}");
    assert!(
        text.contains("fix: Connect the dealer system as the availability source"),
        "{text}"
    );
    assert!(text.contains("sm-used-cash"), "{text}");
    assert!(text.contains("Best stack ("), "{text}");
    assert!(
        text.contains("\"disclosure_id\": \"pricing.veh.b.n.v1\""),
        "{text}"
    );
    // With a profile file: the finance branch only.
    let profile = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/disclosure/profile.yaml");
    let text = gateway::preview::run(
        &fx.app.database_url,
        ORG,
        NORTH,
        None,
        b.stock_number.as_deref(),
        Some(&profile),
    )
    .await
    .expect("preview with profile");
    assert!(
        text.contains("payment mode finance, jurisdiction US-IL"),
        "{text}"
    );
    assert!(text.contains("branch finance"), "{text}");
    assert!(!text.contains("branch cash"), "{text}");

    // The revision table and the combination rules in words.
    // Revisions 1 (ended) and 3 (not yet started) of sm-used-cash beside
    // the live revision 2; a declarative limit and a `tag:` exclusion.
    let more = r#"
programs:
  - program_id: sm-used-cash
    revision: 1
    name: Used vehicle cash (2020)
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 50000, currency: USD}}
    applies_to: {conditions: [used]}
    valid_from: "2020-01-01T00:00:00Z"
    valid_until: "2021-01-01T00:00:00Z"
    stacking: {group: dealer, combinability: stackable}
  - program_id: sm-used-cash
    revision: 3
    name: Used vehicle cash (2099)
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 150000, currency: USD}}
    applies_to: {conditions: [used]}
    valid_from: "2099-01-01T00:00:00Z"
    stacking: {group: dealer, combinability: stackable}
  - program_id: sm-dealer-cap
    revision: 1
    name: Dealer bonus, at most two dealer programs
    kind: dealer_discount
    direction: discount
    amount: {status: known, amount: {amount_minor: 20000, currency: USD}}
    stacking:
      group: dealer
      combinability: rule_defined
      limits: [{group: dealer, max_programs: 2, max_amount: {amount_minor: 150000, currency: USD}}]
      not_combinable_with: ["tag:clearance"]
  - program_id: sm-clearance
    revision: 1
    name: Clearance
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 10000, currency: USD}}
    tags: [clearance]
    stacking: {group: clearance, combinability: stackable}
"#;
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let parsed = gateway::offers::import::parse(
        &catalog,
        "more.yaml",
        more.as_bytes(),
        "programs-file:more",
        fx.now,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    gateway::store::open(&fx.app.database_url)
        .await
        .expect("store opens")
        .import_programs(ORG, &parsed.records)
        .await
        .expect("more programs imported");
    let text = gateway::preview::run(
        &fx.app.database_url,
        ORG,
        NORTH,
        b.vin.as_deref(),
        None,
        None,
    )
    .await
    .expect("preview");
    let table = text
        .split("== Revisions and combination rules (as of ")
        .nth(1)
        .and_then(|rest| rest.split("\n== ").next())
        .unwrap_or_else(|| panic!("no revision table: {text}"));
    let line = |needle: &str| {
        table
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?}: {table}"))
            .to_owned()
    };
    assert!(
        line("sm-used-cash")
            .contains("rev 2    the highest revision whose validity window contains as_of"),
        "{table}"
    );
    assert!(
        line("not rev 1:").contains(
            "not valid at as_of: its window is 2020-01-01T00:00:00+00:00 to 2021-01-01T00:00:00+00:00"
        ),
        "{table}"
    );
    assert!(
        line("not rev 3:").contains(
            "not valid at as_of: its window starts 2099-01-01T00:00:00+00:00 with no end"
        ),
        "{table}"
    );
    assert!(
        line("sm-canada").contains("rev 1    the only active revision"),
        "{table}"
    );
    assert!(
        line("limit:").contains(
            "in a stack with this program, at most 2 programs of group dealer, and known amounts of group dealer summing to at most 1,500.00 USD"
        ),
        "{table}"
    );
    assert!(
        table.contains("never with any program tagged clearance"),
        "{table}"
    );
    assert!(
        table.contains("rule: a rhai rule judges each stack (declared monotone)"),
        "{table}"
    );
    // One line per program with one revision and no rule, none for the
    // revisions not used beyond their own lines: short.
    assert_eq!(
        table.lines().filter(|l| l.contains(" rev ")).count(),
        6 + 2,
        "{table}"
    );
    // Unknown vehicle: an error, not a panic.
    assert!(
        gateway::preview::run(
            &fx.app.database_url,
            ORG,
            NORTH,
            Some("1NRTH999999999999"),
            None,
            None
        )
        .await
        .is_err()
    );
}

/// A tool call with `Authorization: Bearer <token>`; the `result` object.
async fn call_as(app: &TestApp, token: &str, args: Value) -> Value {
    let body = common::modern_body(1, "tools/call", json!({"name": TOOL, "arguments": args}));
    let auth = format!("Bearer {token}");
    let reply = app
        .post_raw(
            &[
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", common::MODERN),
                ("mcp-method", "tools/call"),
                ("mcp-name", TOOL),
                ("authorization", &auth),
            ],
            body.to_string(),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    reply.result().clone()
}

async fn token(store: &dyn gateway::store::Store, rooftop: &str, scopes: &[&str]) -> String {
    use gateway::auth::RooftopScope;
    use gateway::auth::api_token::{self, TokenRequest};
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let now = Utc::now();
    let request = TokenRequest {
        subject: "partner:disclosure-test".into(),
        organization_id: ORG.into(),
        rooftops: RooftopScope::Rooftops([rooftop.to_owned()].into()),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        purpose: "disclosure test".into(),
        expires_at: now + Duration::hours(1),
    };
    api_token::create(store, &request, &api_token::known_scopes(&catalog), now)
        .await
        .expect("token created")
        .token
}

#[tokio::test]
async fn the_pricing_scope_and_the_granted_rooftops_decide_access() {
    let (fx, v) = setup().await;
    let store = gateway::store::open(&fx.app.database_url)
        .await
        .expect("store opens");
    let private = args(&v[4]);
    // The private rooftop's partner with the pricing scope reads it.
    let pricing = token(store.as_ref(), PRIVATE, &["dealeragent:pricing:read"]).await;
    let result = call_as(&fx.app, &pricing, private.clone()).await;
    assert_eq!(tool_error_code(&result), None, "{result}");
    assert_eq!(result["structuredContent"]["vehicle_id"], "veh.p.p");
    // Inventory scope alone is not the pricing scope.
    let inventory = token(store.as_ref(), PRIVATE, &["dealeragent:inventory:read"]).await;
    let result = call_as(&fx.app, &inventory, private.clone()).await;
    assert_eq!(
        tool_error_code(&result).as_deref(),
        Some("dealeragent.scope.insufficient")
    );
    // A grant for another rooftop never reaches the private one.
    let north = token(store.as_ref(), NORTH, &["dealeragent:pricing:read"]).await;
    let result = call_as(&fx.app, &north, private).await;
    assert_eq!(tool_error_code(&result).as_deref(), Some(NOT_FOUND));
}

/// Without a requested jurisdiction the default profile
/// takes only the rooftop's country and region, never its postal code, so
/// the demo's `lk-il-green` (Illinois, not postal prefix 606) at the
/// Chicago rooftop (60614) is listed with an unknown eligibility and a
/// residency need instead of being hidden by a guess.
#[tokio::test]
async fn the_default_profile_never_guesses_the_buyers_postal_code() {
    const DEMO_ORG: &str = "org.lakeshore-auto-group";
    const CHICAGO: &str = "roof.lakeshore-chicago";
    let app = spawn().await;
    let found = app
        .call_tool(
            "dealeragent.inventory.search",
            json!({"organization_id": DEMO_ORG, "rooftop_ids": [CHICAGO]}),
        )
        .await;
    assert_eq!(tool_error_code(&found), None, "{found}");
    let vehicle_id = found["structuredContent"]["vehicles"][0]["vehicle_id"]
        .as_str()
        .expect("a demo vehicle at Chicago")
        .to_owned();
    // The full offers extension: its per-program reports are read below
    // (the default, concise one leaves them out; docs/pricing.md section 5).
    let request = |jurisdiction: Option<Value>| {
        let mut a = json!({"organization_id": DEMO_ORG, "rooftop_id": CHICAGO,
                           "vehicle_id": vehicle_id, "detail": "full"});
        if let Some(j) = jurisdiction {
            a["jurisdiction"] = j;
        }
        a
    };
    let green = |d: &Value| {
        d["conditional_adjustments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["adjustment_id"] == "lk-il-green")
            .cloned()
    };

    let d = disclose(&app, request(None)).await;
    let adjustment = green(&d).unwrap_or_else(|| panic!("lk-il-green hidden: {d}"));
    let residency: Vec<&Value> = adjustment["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["criterion"] == "residency")
        .collect();
    assert_eq!(residency.len(), 1, "{adjustment}");
    assert!(
        residency[0]["description"]
            .as_str()
            .unwrap()
            .contains("606"),
        "{adjustment}"
    );
    let report = d["extensions"]["dealergateway.offers"]["programs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["program_id"] == "lk-il-green")
        .cloned()
        .expect("lk-il-green evaluated");
    assert_eq!(report["applicability"]["status"], "applicable", "{report}");
    assert_eq!(report["eligibility"]["status"], "unknown", "{report}");
    assert!(
        report["eligibility"]["needs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["criterion"] == "residency"),
        "{report}"
    );

    // A buyer who says they live in Chicago: excluded, not listed.
    let d = disclose(
        &app,
        request(Some(
            json!({"country": "US", "subdivision": "US-IL", "postal_code": "60614"}),
        )),
    )
    .await;
    assert!(green(&d).is_none(), "{d}");
    // A buyer in Springfield: listed, with no residency question left.
    let d = disclose(
        &app,
        request(Some(
            json!({"country": "US", "subdivision": "US-IL", "postal_code": "62701"}),
        )),
    )
    .await;
    let adjustment = green(&d).unwrap_or_else(|| panic!("lk-il-green missing: {d}"));
    assert!(
        !adjustment["criteria"].to_string().contains("residency"),
        "{adjustment}"
    );
}

/// A programs file of `discounts` stackable discounts named `Offer NN` and
/// one 995.00 USD market-adjustment surcharge, last in file order.
fn many_programs(discounts: usize) -> Vec<u8> {
    let mut yaml = String::from("programs:\n");
    for i in 0..discounts {
        yaml.push_str(&format!(
            "  - program_id: many-{i:02}\n    revision: 1\n    name: Offer {i:02}\n    kind: cash\n    direction: discount\n    amount: {{status: known, amount: {{amount_minor: {}, currency: USD}}}}\n    stacking: {{group: dealer, combinability: stackable}}\n",
            1_000 + i
        ));
    }
    yaml.push_str("  - program_id: market-adjustment\n    revision: 1\n    name: Market adjustment\n    kind: surcharge\n    direction: surcharge\n    amount: {status: known, amount: {amount_minor: 99500, currency: USD}}\n    stacking: {group: dealer-addons, combinability: stackable}\n");
    yaml.into_bytes()
}

/// Every surcharge and required charge is always in the
/// text, discounts past the documented limit are counted exactly, and
/// provenance beyond DAP's 32 transformations is abbreviated with the full
/// list kept in the extension.
#[tokio::test]
async fn the_text_names_every_surcharge_and_counts_the_offers_it_leaves_out() {
    let (fx, v) = setup_custom(Some(many_programs(29)), |_| {}).await;
    let d = disclose(&fx.app, args(&v[1])).await;
    let adjustments = d["conditional_adjustments"].as_array().unwrap();
    assert_eq!(adjustments.len(), 30, "{d}");
    let text = d["disclosure_text"].as_str().unwrap();
    assert!(text.chars().count() <= 4000);
    assert!(
        text.contains("Market adjustment (surcharge, 995.00 USD)"),
        "{text}"
    );
    assert!(text.contains("Documentation fee (399.00 USD)"), "{text}");
    assert!(text.contains("Dealer preparation (295.00 USD)"), "{text}");
    let limit = gateway::disclosure::TEXT_DISCOUNT_LIMIT;
    let named = (0..29)
        .filter(|i| text.contains(&format!("Offer {i:02} (discount")))
        .count();
    assert_eq!(named, limit, "{text}");
    assert!(
        text.contains(&format!("and {} more conditional offers", 29 - limit)),
        "{text}"
    );
    assert!(
        text.ends_with("not a personalized or out-the-door quote."),
        "{text}"
    );

    // 4 gateway steps + 30 program revisions: abbreviated to DAP's 32, the
    // full list in the extension.
    let listed = d["provenance"]["transformations"].as_array().unwrap();
    assert_eq!(listed.len(), 32, "{listed:?}");
    let last = listed[31].as_str().unwrap();
    assert!(last.starts_with("abbreviated: 31 of 34"), "{last}");
    assert!(
        last.contains(gateway::disclosure::PROVENANCE_EXTENSION),
        "{last}"
    );
    let all = d["extensions"][gateway::disclosure::PROVENANCE_EXTENSION]["transformations"]
        .as_array()
        .unwrap_or_else(|| panic!("full list missing: {d}"));
    assert_eq!(all.len(), 34);
    for i in 0..29 {
        let name = format!("program many-{i:02} revision 1");
        assert!(all.iter().any(|t| t == &json!(name)), "{name}: {all:?}");
    }
    assert!(
        all.iter()
            .any(|t| t == "program market-adjustment revision 1")
    );

    // Few offers: every one named, no count.
    let (fx, v) = setup_custom(Some(many_programs(3)), |_| {}).await;
    let d = disclose(&fx.app, args(&v[1])).await;
    let text = d["disclosure_text"].as_str().unwrap();
    assert!(text.contains("Offer 02 (discount, 10.02 USD)"), "{text}");
    assert!(!text.contains("more conditional offer"), "{text}");
    assert!(
        d["extensions"]
            .get(gateway::disclosure::PROVENANCE_EXTENSION)
            .is_none()
    );
    assert!(d["provenance"]["transformations"].as_array().unwrap().len() < 32);
}

/// Amounts that pass the import bound (an uncapped
/// percentage is bounded by the price) can still overflow for an extreme
/// price. `offers.evaluate` then answers a non-retryable error, and the
/// disclosure says so in `uncertainty` and its text and earns no points
/// for the adjustments it could not compute.
#[tokio::test]
async fn an_evaluation_that_overflows_is_reported_not_retried_or_scored() {
    let programs = b"programs:
  - program_id: full-price-fee-a
    revision: 1
    name: Full price fee A
    kind: surcharge
    direction: surcharge
    amount: {status: percent_off, percent: \"100\", rounding: half_up}
    stacking: {group: addons, combinability: stackable}
  - program_id: full-price-fee-b
    revision: 1
    name: Full price fee B
    kind: surcharge
    direction: surcharge
    amount: {status: percent_off, percent: \"100\", rounding: half_up}
    stacking: {group: addons, combinability: stackable}
"
    .to_vec();
    let (fx, v) = setup_custom(Some(programs), |b| {
        b.advertised_price =
            pricing::Money::from_minor(4_000_000_000_000_000_000, pricing::Currency::USD);
    })
    .await;
    let b = &v[1];

    let result = fx
        .app
        .call_tool(
            "dealergateway.offers.evaluate",
            json!({"organization_id": ORG, "rooftop_id": NORTH, "vehicle_id": b.vehicle_id,
                   "profile": {"payment_mode": "cash", "jurisdiction": {"country": "US"}}}),
        )
        .await;
    assert_eq!(
        tool_error_code(&result).as_deref(),
        Some("dealeragent.validation.invalid"),
        "{result}"
    );
    assert_eq!(result["structuredContent"]["retryable"], false, "{result}");
    assert!(
        result["structuredContent"]["message"]
            .as_str()
            .unwrap()
            .contains("overflow"),
        "{result}"
    );

    let d = disclose(&fx.app, args(b)).await;
    assert_eq!(d["conditional_adjustments"], json!([]), "{d}");
    assert_eq!(
        d["disclosure_completeness"]["components"]["conditional_adjustments_have_eligibility_and_stacking"],
        false,
        "{d}"
    );
    // 20 (price) + 20 (charges) + 0 (adjustments) + 0 (government) + 10:
    // the same vehicle with computable programs scores 70.
    assert_eq!(d["disclosure_completeness"]["score"], json!(50), "{d}");
    assert_eq!(d["uncertainty"]["status"], "unknown", "{d}");
    assert!(
        d["uncertainty"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("The organization's incentive programs cannot be evaluated"),
        "{d}"
    );
    let text = d["disclosure_text"].as_str().unwrap();
    assert!(
        text.contains("could not be computed") && text.contains("overflow"),
        "{text}"
    );
}

/// The length bound: when 28 surcharges with long names
/// fill most of the 4,000 characters, every surcharge stays named and the
/// text names fewer discounts, counting exactly the ones it leaves out.
#[tokio::test]
async fn long_texts_give_up_discount_names_never_surcharges() {
    let mut yaml = String::from("programs:\n");
    let long_name = |i: usize| format!("Surcharge {i:02} {}", "x".repeat(110));
    for i in 0..28 {
        yaml.push_str(&format!(
            "  - program_id: fee-{i:02}\n    revision: 1\n    name: {}\n    kind: surcharge\n    direction: surcharge\n    amount: {{status: known, amount: {{amount_minor: {}, currency: USD}}}}\n    stacking: {{group: addons, combinability: stackable}}\n",
            long_name(i),
            1_000 + i
        ));
    }
    for i in 0..12 {
        yaml.push_str(&format!(
            "  - program_id: cash-{i:02}\n    revision: 1\n    name: Offer {i:02}\n    kind: cash\n    direction: discount\n    amount: {{status: known, amount: {{amount_minor: {}, currency: USD}}}}\n    stacking: {{group: dealer, combinability: stackable}}\n",
            2_000 + i
        ));
    }
    let (fx, v) = setup_custom(Some(yaml.into_bytes()), |_| {}).await;
    let d = disclose(&fx.app, args(&v[1])).await;
    assert_eq!(d["conditional_adjustments"].as_array().unwrap().len(), 40);
    let text = d["disclosure_text"].as_str().unwrap();
    assert!(text.chars().count() <= 4000, "{}", text.chars().count());
    for i in 0..28 {
        let shown: String = long_name(i).chars().take(80).collect();
        assert!(
            text.contains(&format!("{shown} (surcharge, 10.{i:02} USD)")),
            "surcharge {i} missing: {text}"
        );
    }
    let named = (0..12)
        .filter(|i| text.contains(&format!("Offer {i:02} (discount")))
        .count();
    assert!(
        named < gateway::disclosure::TEXT_DISCOUNT_LIMIT,
        "the bound did not bite: {text}"
    );
    let rest = 12 - named;
    let offers = if rest == 1 { "offer" } else { "offers" };
    let lead = if named == 0 { "" } else { "and " };
    assert!(
        text.contains(&format!("{lead}{rest} more conditional {offers}")),
        "{text}"
    );
    assert!(
        text.ends_with("not a personalized or out-the-door quote."),
        "{text}"
    );
}

/// A disclosure reused from the document cache is the
/// document a fresh build gives, except `provenance.transformed_at`, which
/// is each request's own instant. With programs: the same gateway builds,
/// then reuses. Without: another gateway on the same store, with nothing
/// cached, builds it again (with programs the two gateways would differ
/// anyway, in the instant each loaded and evaluated the programs).
#[tokio::test]
async fn a_reused_disclosure_is_the_document_a_fresh_build_gives() {
    let variants = |vehicle: &VehicleRecord| {
        let plain = args(vehicle);
        let mut finance = plain.clone();
        finance["payment_mode"] = json!("finance");
        let mut canada = plain.clone();
        canada["jurisdiction"] = json!({"country": "CA"});
        [plain, finance, canada]
    };
    let strip = |mut d: Value| {
        d["provenance"]
            .as_object_mut()
            .expect("provenance")
            .remove("transformed_at");
        d
    };
    for programs in [true, false] {
        let (fx, v) = setup_with(programs).await;
        // Steady state first: on PostgreSQL the change listener resyncs
        // once after it connects (marking every cache stale,
        // docs/operations.md "Replicas"), which can land between two calls of a fresh gateway and
        // reload the program set. Wait until two calls agree.
        let settled = common::poll_until(std::time::Duration::from_secs(10), || async {
            let one = disclose(&fx.app, args(&v[0])).await;
            let two = disclose(&fx.app, args(&v[0])).await;
            strip(one) == strip(two)
        })
        .await;
        assert!(settled, "two consecutive disclosures never agreed");
        let mut first = Vec::new();
        for vehicle in &v[..4] {
            for a in variants(vehicle) {
                let built = disclose(&fx.app, a.clone()).await;
                let asked = Utc::now();
                let reused = disclose(&fx.app, a.clone()).await;
                assert!(
                    time(&reused["provenance"]["transformed_at"])
                        >= asked - Duration::milliseconds(1),
                    "a reused document keeps this request's instant: {reused}"
                );
                let (built, reused) = (strip(built), strip(reused));
                assert_eq!(
                    built,
                    reused,
                    "{a}: {:?}",
                    first_difference(&built, &reused, "")
                );
                first.push((a, built));
            }
        }
        if programs {
            continue;
        }
        let fresh = spawn_on(fx.app.db_dir.clone(), fx.app.database_url.clone(), |s| {
            s.no_demo = true;
        })
        .await;
        // In the reverse order, so a cache that confused two requests would
        // answer them differently on the two gateways.
        for (a, built) in first.into_iter().rev() {
            let again = strip(disclose(&fresh, a.clone()).await);
            assert_eq!(
                built,
                again,
                "{a}: {:?}",
                first_difference(&built, &again, "")
            );
        }
    }
}

/// docs/pricing.md section 5 "Text": when required charges and surcharges
/// together need more than DAP's 4,000 characters, the text is composed,
/// not cut. Before, it was cut at exactly 4,000 characters: it ended in the
/// middle of an item, a surcharge was never named and the closing "not an
/// out-the-door quote" sentence was gone.
#[tokio::test]
async fn a_text_too_long_for_every_name_still_accounts_for_every_charge() {
    let long = |tag: &str, i: usize| format!("{tag} {i:02} {}", "y".repeat(120));
    let mut yaml = String::from("programs:\n");
    for i in 0..25 {
        yaml.push_str(&format!(
            "  - program_id: fee-{i:02}\n    revision: 1\n    name: {}\n    kind: surcharge\n    direction: surcharge\n    amount: {{status: known, amount: {{amount_minor: {}, currency: USD}}}}\n    stacking: {{group: addons, combinability: stackable}}\n",
            long("Surcharge", i),
            1_000 + i
        ));
    }
    let (fx, v) = setup_custom(Some(yaml.into_bytes()), |b| {
        b.required_dealer_charges = Some(
            (0..25)
                .map(|i| {
                    typed(json!({
                        "charge_id": format!("fee-{i}"),
                        "name": long("Required charge", i),
                        "amount": {"amount_minor": 10_000 + i, "currency": "USD"},
                        "included_in_advertised_price": false,
                        "taxable_status": "unknown",
                        "payee": "dealer",
                        "required": true,
                    }))
                })
                .collect(),
        );
    })
    .await;
    let d = disclose(&fx.app, args(&v[1])).await;
    let text = d["disclosure_text"].as_str().unwrap();
    assert!(text.chars().count() <= 4000, "{}", text.chars().count());
    assert!(
        text.ends_with("not a personalized or out-the-door quote."),
        "the closing sentence was lost: {text}"
    );
    // Every charge not included is named whole or counted, never cut.
    let not_included = d["required_dealer_charges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["included_in_advertised_price"] == json!(false))
        .count();
    assert_eq!(
        not_included, 26,
        "the vehicle's 25 and the rooftop's documentation fee"
    );
    let charges_named = usize::from(text.contains("Documentation fee (399.00 USD)"));
    let charges_named = charges_named
        + (0..25)
            .filter(|i| text.contains(&format!("Required charge {i:02} ")))
            .count();
    for i in 0..25 {
        let tag = format!("Required charge {i:02} ");
        if let Some(at) = text.find(&tag) {
            let rest = &text[at..];
            let close = rest.find(" (").expect("a named charge has its amount");
            assert!(
                rest[close..].starts_with(&format!(" (100.{i:02} USD)")),
                "charge {i} is cut: {rest}"
            );
        }
    }
    let charges_left = not_included - charges_named;
    if charges_left > 0 {
        assert!(
            text.contains(&format!("{charges_left} more required charge")),
            "{charges_named} of {not_included} charges named and the rest not counted: {text}"
        );
    }
    let surcharges_named = (0..25)
        .filter(|i| text.contains(&format!("Surcharge {i:02} ")))
        .count();
    assert!(surcharges_named > 0, "{text}");
    let left = 25 - surcharges_named;
    assert!(left > 0, "the case must not fit: {text}");
    assert!(
        text.contains(&format!(
            "and {left} more surcharge{} (every one is listed in conditional_adjustments)",
            if left == 1 { "" } else { "s" }
        )),
        "{surcharges_named} of 25 surcharges named and the rest not counted: {text}"
    );
    // The sum covers every charge, named or counted.
    assert!(
        text.contains("Advertised price plus required dealer charges:"),
        "{text}"
    );
}
