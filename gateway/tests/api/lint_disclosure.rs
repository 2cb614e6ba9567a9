//! The disclosure lint in `dealeragent.pricing.get_disclosure` over real
//! HTTP (docs/pricing.md "The disclosure lint", docs/lint.md): every
//! disclosure carries `extensions["dealergateway.disclosure-lint"]` for the
//! buyer's jurisdiction, else the rooftop's; the full form reports the facts
//! as fed (classes, sources), the concise form stays small, a cached
//! document never carries another place's lint, and a caller who may not
//! read the disclosure learns nothing about its lint.
//!
//! The engine's verdicts are asserted through invariants that hold for any
//! catalogue (the engine re-run on the reported facts agrees; nothing
//! passes on an unknown fact), so these tests bite on the real catalogue
//! as on an empty one.

use crate::common;

use crate::common::{
    TestApp, fresh_database, spawn_on, test_source, test_vehicle, tool_error_code,
};
use chrono::{SubsecRound as _, Utc};
use gateway::inventory::model::VehicleRecord;
use gateway::store::RooftopPricing;
use pricing::lint::ChargeClass;
use serde_json::{Value, json};

const ORG: &str = "org.search-motors";
const NORTH: &str = "roof.search-north";
const PRIVATE: &str = "roof.search-private";
const TOOL: &str = "dealeragent.pricing.get_disclosure";
const NOT_FOUND: &str = "dealeragent.resource.not_found";
const BLOCK: &str = "dealergateway.disclosure-lint";

fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a valid DAP record")
}

fn usd(minor: i64) -> Value {
    json!({"amount_minor": minor, "currency": "USD"})
}

fn charge(id: &str, name: &str, minor: i64, included: bool) -> Value {
    json!({
        "charge_id": id, "name": name, "amount": usd(minor), "payee": "dealer",
        "included_in_advertised_price": included, "required": true,
    })
}

struct Fixture {
    app: TestApp,
    /// The dealers file's source name (the rooftop settings' provenance).
    settings_source: String,
    vehicles: Vec<VehicleRecord>,
}

/// NORTH (Chicago, US-IL): a classified preparation charge in the price
/// and an unclassified etching charge left out (rooftop defaults, the
/// dealers file's); vehicle `a` adds its own documentation fee, left out
/// and classified by the feed; vehicle `b` announces a reduction (a "was"
/// price) the store keeps no history for. PRIVATE: one vehicle, not
/// readable anonymously.
async fn setup() -> Fixture {
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
    let mut settings_source = String::new();
    for org in &mut orgs {
        if org.organization_id == ORG {
            settings_source = org.source.source_name.clone();
        }
        for rooftop in &mut org.rooftops {
            if rooftop.rooftop_id == NORTH {
                rooftop.settings.pricing = RooftopPricing {
                    required_dealer_charges: vec![
                        typed(charge("charge.prep", "Dealer preparation", 29_500, true)),
                        typed(charge("charge.etch", "VIN etching", 19_900, false)),
                    ],
                    charge_classes: [("charge.prep".to_owned(), ChargeClass::DealerPreparation)]
                        .into(),
                    ..RooftopPricing::default()
                };
            }
        }
    }
    store
        .upsert_organizations(&orgs)
        .await
        .expect("dealers imported");
    let mut a = test_vehicle(ORG, NORTH, "veh.a.n", "1NRTH", 1, now);
    a.required_dealer_charges = Some(vec![typed(charge(
        "charge.documentation",
        "Documentation fee",
        8_500,
        false,
    ))]);
    a.claims.charge_classes = [(
        "charge.documentation".to_owned(),
        ChargeClass::DocumentationFee,
    )]
    .into();
    let mut b = test_vehicle(ORG, NORTH, "veh.b.n", "1NRTH", 2, now);
    b.claims.reference_price = Some(pricing::Money::from_minor(
        3_499_500,
        pricing::Currency::USD,
    ));
    let p = test_vehicle(ORG, PRIVATE, "veh.p.p", "3PRVT", 1, now);
    for (rooftop, vehicles) in [
        (NORTH, vec![a.clone(), b.clone()]),
        (PRIVATE, vec![p.clone()]),
    ] {
        store
            .create_snapshot(
                ORG,
                rooftop,
                &test_source(&format!("{rooftop}.csv"), now),
                &vehicles,
            )
            .await
            .expect("snapshot created");
    }
    let app = spawn_on(dir, url, |s| s.no_demo = true).await;
    Fixture {
        app,
        settings_source,
        vehicles: vec![a, b, p],
    }
}

fn args(v: &VehicleRecord) -> Value {
    json!({"organization_id": v.organization_id, "rooftop_id": v.rooftop_id, "vehicle_id": v.vehicle_id})
}

/// The disclosure's structured content (the tool validated it against the
/// published schema before answering: an invalid one is an internal error,
/// which `tool_error_code` refuses).
async fn disclose(app: &TestApp, args: Value) -> Value {
    let result = app.call_tool(TOOL, args.clone()).await;
    assert_eq!(tool_error_code(&result), None, "{args}: {result}");
    result["structuredContent"].clone()
}

fn block(doc: &Value) -> &Value {
    let b = &doc["extensions"][BLOCK];
    assert!(b.is_object(), "no lint block in {doc}");
    b
}

/// What holds of a block for any catalogue: the notice, the place's
/// source, a result in the closed set, and (full) the engine re-run on the
/// reported facts answers the same, with nothing passed on an unknown fact.
fn assert_block_invariants(b: &Value, full: bool) {
    assert_eq!(b["notice"], gateway::lint::NOTICE, "{b}");
    assert!(
        ["request", "rooftop"].contains(&b["jurisdiction_source"].as_str().unwrap_or("")),
        "{b}"
    );
    assert!(
        ["pass", "fail", "cannot_determine"].contains(&b["result"].as_str().unwrap_or("")),
        "{b}"
    );
    let rules = b["rules"].as_array().expect("rules");
    if !full {
        assert!(b.get("facts").is_none(), "concise carries no facts: {b}");
        assert!(b["rules_passed"].is_u64(), "{b}");
        for r in rules {
            assert_ne!(r["verdict"], "pass", "concise lists what did not pass: {b}");
            let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(keys.len(), 4, "{r}");
        }
        return;
    }
    let facts: pricing::lint::Facts =
        serde_json::from_value(b["facts"].clone()).expect("the block's facts parse");
    let expected = pricing::lint::lint(pricing::lint::catalogue(), &facts);
    let reported: pricing::lint::Report = serde_json::from_value(b.clone()).expect("a report");
    assert_eq!(
        reported.rules, expected.rules,
        "the engine re-run disagrees"
    );
    assert_eq!(reported.result, expected.result);
    for r in &reported.rules {
        if r.verdict == pricing::lint::Verdict::Pass {
            for f in &r.facts {
                assert!(
                    f.value != json!("unknown") && !f.value.is_null(),
                    "{} passed on the unknown fact {}",
                    r.rule_id,
                    f.fact
                );
            }
        }
    }
}

#[tokio::test]
async fn the_full_block_reports_the_facts_as_fed_with_their_sources() {
    let fx = setup().await;
    let a = &fx.vehicles[0];
    let mut request = args(a);
    request["detail"] = json!("full");
    let doc = disclose(&fx.app, request).await;
    let b = block(&doc);
    assert_block_invariants(b, true);
    assert_eq!(b["jurisdiction_source"], "rooftop");
    assert_eq!(b["place"], json!({"country": "US", "subdivision": "US-IL"}));
    let facts = &b["facts"];
    assert_eq!(facts["place"], b["place"]);
    assert_eq!(facts["as_of"], Utc::now().date_naive().to_string());
    assert_eq!(facts["condition"], "used");
    assert_eq!(facts["advertised_price"], usd(3_249_500));
    assert_eq!(facts["vin_published"], true);
    assert_eq!(facts["odometer_published"], true);
    assert_eq!(facts["reduction"], json!({"announced": "no"}));
    // Never guessed: what the dealers file does not say is unknown.
    assert_eq!(facts["price_includes_vat"], "unknown");
    let feed = a.source.source_name.as_str();
    let charges = facts["charges"].as_array().expect("charges itemized");
    let find = |id: &str| {
        charges
            .iter()
            .find(|c| c["charge_id"] == id)
            .unwrap_or_else(|| panic!("{id} in {charges:?}"))
    };
    // The feed's own charge, left out of the price, classified by the feed.
    let doc_fee = find("charge.documentation");
    assert_eq!(doc_fee["class"], "documentation_fee");
    assert_eq!(doc_fee["included_in_advertised_price"], false);
    assert_eq!(doc_fee["amount"], usd(8_500));
    assert_eq!(doc_fee["source"], feed);
    // The rooftop's, classified by the dealers file.
    let prep = find("charge.prep");
    assert_eq!(prep["class"], "dealer_preparation");
    assert_eq!(prep["included_in_advertised_price"], true);
    assert_eq!(prep["source"], fx.settings_source.as_str());
    // Unclassified: no class, never a guess.
    let etch = find("charge.etch");
    assert!(etch["class"].is_null(), "{etch}");
    assert_eq!(etch["included_in_advertised_price"], false);
    assert_eq!(facts["sources"]["vehicle"], feed);
    assert_eq!(
        facts["sources"]["rooftop_settings"],
        fx.settings_source.as_str()
    );
    assert_etch_never_passes(b);
    // For a buyer in California (rules apply there once the catalogue has
    // any): the unclassified charge left out of the price keeps the
    // disclosure from passing.
    let mut request = args(a);
    request["detail"] = json!("full");
    request["jurisdiction"] = json!({"country": "US", "subdivision": "US-CA"});
    let doc = disclose(&fx.app, request).await;
    let b = block(&doc);
    assert_block_invariants(b, true);
    assert_eq!(b["facts"]["charges"], facts["charges"]);
    assert_etch_never_passes(b);
    if pricing::lint::catalogue()
        .rules
        .iter()
        .any(|r| r.jurisdiction == "US-CA")
    {
        assert!(!b["rules"].as_array().unwrap().is_empty(), "{b}");
        assert_ne!(b["result"], "pass", "{b}");
    }
}

/// A rule that reads the unclassified charge never passes.
fn assert_etch_never_passes(b: &Value) {
    for r in b["rules"].as_array().unwrap() {
        let reads_etch = r["facts"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|f| f["fact"].as_str().unwrap_or("").contains("charge.etch"));
        if reads_etch {
            assert_ne!(r["verdict"], "pass", "{r}");
        }
    }
}

#[tokio::test]
async fn an_announced_reduction_without_history_is_unknown_never_a_pass() {
    let fx = setup().await;
    let mut request = args(&fx.vehicles[1]);
    request["detail"] = json!("full");
    // Germany: where a reduction must show the lowest price of the prior
    // 30 days (PAngV section 11), once the catalogue has that rule.
    request["jurisdiction"] = json!({"country": "DE"});
    let doc = disclose(&fx.app, request).await;
    let b = block(&doc);
    assert_block_invariants(b, true);
    assert_eq!(
        b["facts"]["reduction"],
        json!({"announced": "yes", "reference_price": usd(3_499_500),
               "lowest_prior": "unknown", "days": 30})
    );
    let mut read = 0;
    for r in b["rules"].as_array().unwrap() {
        let reads_reduction = r["facts"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|f| f["fact"].as_str().unwrap_or("").starts_with("reduction"));
        if reads_reduction {
            read += 1;
            assert_eq!(r["verdict"], "cannot_determine", "{r}");
        }
    }
    let has_rule = pricing::lint::catalogue().rules.iter().any(|r| {
        matches!(r.check, pricing::lint::Check::PriorPriceIsLowest { .. })
            && ["DE", "EU"].contains(&r.jurisdiction.as_str())
    });
    if has_rule {
        assert!(read > 0, "no rule read the announced reduction: {b}");
        assert_ne!(b["result"], "pass", "{b}");
    }
}

#[tokio::test]
async fn the_buyers_jurisdiction_decides_the_place_and_the_cache_never_mixes_places() {
    let fx = setup().await;
    let a = &fx.vehicles[0];
    let ask = |jurisdiction: Option<Value>| {
        let mut r = args(a);
        if let Some(j) = jurisdiction {
            r["jurisdiction"] = j;
        }
        r
    };
    // Each concise document is kept and served again: the second read of
    // each comes from the document cache, whose key must separate them.
    for _ in 0..2 {
        let doc = disclose(&fx.app, ask(None)).await;
        let b = block(&doc);
        assert_block_invariants(b, false);
        assert_eq!(b["jurisdiction_source"], "rooftop");
        assert_eq!(b["place"], json!({"country": "US", "subdivision": "US-IL"}));

        let doc = disclose(
            &fx.app,
            ask(Some(json!({"country": "US", "subdivision": "US-CA"}))),
        )
        .await;
        let b = block(&doc);
        assert_block_invariants(b, false);
        assert_eq!(b["jurisdiction_source"], "request");
        assert_eq!(b["place"], json!({"country": "US", "subdivision": "US-CA"}));

        let doc = disclose(&fx.app, ask(Some(json!({"country": "DE"})))).await;
        let b = block(&doc);
        assert_eq!(b["jurisdiction_source"], "request");
        assert_eq!(b["place"], json!({"country": "DE"}));
    }
    // Full detail carries the same place and result as the concise form.
    let mut full = ask(Some(json!({"country": "CA", "subdivision": "CA-ON"})));
    let concise = disclose(&fx.app, full.clone()).await;
    full["detail"] = json!("full");
    let full = disclose(&fx.app, full).await;
    let (c, f) = (block(&concise), block(&full));
    assert_block_invariants(f, true);
    assert_eq!(c["place"], f["place"]);
    assert_eq!(c["result"], f["result"]);
    assert_eq!(c["catalogue_version"], f["catalogue_version"]);
    assert_eq!(
        f["facts"]["place"],
        json!({"country": "CA", "subdivision": "CA-ON"})
    );
    let not_passed = f["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["verdict"] != "pass")
        .count();
    assert_eq!(c["rules"].as_array().unwrap().len(), not_passed);
    assert_eq!(
        c["rules_passed"].as_u64().unwrap() as usize + not_passed,
        f["rules"].as_array().unwrap().len()
    );
}

#[tokio::test]
async fn the_concise_block_is_small_and_smaller_than_the_full_one() {
    let fx = setup().await;
    let a = &fx.vehicles[0];
    let concise = disclose(&fx.app, args(a)).await;
    let mut request = args(a);
    request["detail"] = json!("full");
    let full = disclose(&fx.app, request).await;
    let c = serde_json::to_string(block(&concise)).unwrap().len();
    let f = serde_json::to_string(block(&full)).unwrap().len();
    eprintln!("lint block bytes: concise {c}, full {f}");
    assert!(c < f, "concise {c} >= full {f}");
    // Per rule that did not pass, at most a reason's worth; the fixed part
    // (place, notice, result, version, count) well under half a kilobyte.
    let rules = block(&concise)["rules"].as_array().unwrap().len();
    assert!(
        c <= 400 + 400 * rules,
        "concise block {c} bytes for {rules} rules"
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

#[tokio::test]
async fn a_caller_who_may_not_read_the_disclosure_learns_nothing_of_its_lint() {
    use gateway::auth::RooftopScope;
    use gateway::auth::api_token::{self, TokenRequest};
    let fx = setup().await;
    let private = args(&fx.vehicles[2]);
    // Anonymous: the private rooftop's vehicle is not found, as before.
    let result = fx.app.call_tool(TOOL, private.clone()).await;
    assert_eq!(tool_error_code(&result).as_deref(), Some(NOT_FOUND));
    let text = result.to_string();
    assert!(
        !text.contains(BLOCK) && !text.contains("jurisdiction_source"),
        "{text}"
    );
    // A grant for another rooftop: not found either.
    let store = gateway::store::open(&fx.app.database_url)
        .await
        .expect("store opens");
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let now = Utc::now();
    let request = TokenRequest {
        subject: "partner:lint-test".into(),
        organization_id: ORG.into(),
        rooftops: RooftopScope::Rooftops([NORTH.to_owned()].into()),
        scopes: ["dealeragent:pricing:read".to_owned()].into(),
        purpose: "lint test".into(),
        expires_at: now + chrono::Duration::hours(1),
    };
    let token = api_token::create(
        store.as_ref(),
        &request,
        &api_token::known_scopes(&catalog),
        now,
    )
    .await
    .expect("token created")
    .token;
    let mut full = private.clone();
    full["detail"] = json!("full");
    let result = call_as(&fx.app, &token, full).await;
    assert_eq!(tool_error_code(&result).as_deref(), Some(NOT_FOUND));
    let text = result.to_string();
    assert!(!text.contains(BLOCK) && !text.contains("veh.p.p"), "{text}");
    // The same grant reads its own rooftop's block.
    let result = call_as(&fx.app, &token, args(&fx.vehicles[0])).await;
    assert_eq!(tool_error_code(&result), None, "{result}");
    assert!(result["structuredContent"]["extensions"][BLOCK].is_object());
}
