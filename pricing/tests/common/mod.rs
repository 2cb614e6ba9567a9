//! Shared builders for the offer-engine tests.
#![allow(dead_code)]

use std::collections::BTreeMap;

use pricing::incentives::{Criterion, Program, ProgramSet, ValidatedPrograms};
use pricing::stacking::{
    ClaimValue, Evaluation, Profile, ProfileJurisdiction, ProfilePaymentMode, SearchBudget,
    Vehicle, evaluate,
};
use pricing::{Currency, Money};
use serde_json::{Value, json};

/// A stackable USD cash program of `minor` cents in its own group.
pub fn prog(id: &str, minor: i64) -> Value {
    json!({
        "program_id": id,
        "revision": 1,
        "name": format!("Program {id}"),
        "kind": "cash",
        "direction": "discount",
        "amount": {"status": "known", "amount": {"amount_minor": minor, "currency": "USD"}},
        "stacking": {"group": id, "combinability": "stackable"}
    })
}

/// Sets `path` (slash separated, objects created on the way).
pub fn set(mut v: Value, path: &str, value: Value) -> Value {
    let mut cur = &mut v;
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let obj = cur.as_object_mut().expect("object on the path");
        if i + 1 == parts.len() {
            obj.insert((*part).to_owned(), value);
            return v;
        }
        cur = obj.entry((*part).to_owned()).or_insert_with(|| json!({}));
    }
    v
}

pub fn programs(values: Vec<Value>) -> ValidatedPrograms {
    let ps: Vec<Program> = values
        .into_iter()
        .map(|v| serde_json::from_value(v).expect("program parses"))
        .collect();
    match ProgramSet::validate(ps) {
        Ok(v) => v,
        Err(problems) => panic!("invalid programs: {problems:#?}"),
    }
}

pub fn vehicle(price_minor: i64, currency: Currency) -> Vehicle {
    Vehicle {
        vehicle_id: "veh-1".into(),
        make: "Toyota".into(),
        model: "Camry".into(),
        year: 2026,
        trim: Some("XSE".into()),
        condition: "new".into(),
        vin: Some("4T1K61AK0TU000001".into()),
        rooftop_id: "roof-1".into(),
        advertised_price: Money::from_minor(price_minor, currency),
        price_valid_until: None,
    }
}

pub fn ts(s: &str) -> pricing::incentives::Timestamp {
    chrono::DateTime::parse_from_rfc3339(s).expect("timestamp")
}

pub fn profile(mode: ProfilePaymentMode) -> Profile {
    Profile {
        payment_mode: mode,
        jurisdiction: ProfileJurisdiction {
            country: "US".into(),
            subdivision: Some("US-IL".into()),
            postal_code: Some("60601".into()),
        },
        claims: BTreeMap::new(),
        as_of: ts("2026-06-01T12:00:00Z"),
    }
}

pub fn with_claim(mut p: Profile, c: Criterion, v: ClaimValue) -> Profile {
    p.claims.insert(c, v);
    p
}

pub fn eval_with(values: Vec<Value>, v: &Vehicle, p: &Profile) -> Evaluation {
    evaluate(v, &programs(values), p, SearchBudget::default()).expect("evaluates")
}

/// Evaluates with a 30,000.00 USD vehicle and a cash profile.
pub fn eval(values: Vec<Value>) -> Evaluation {
    eval_with(
        values,
        &vehicle(3_000_000, Currency::USD),
        &profile(ProfilePaymentMode::Cash),
    )
}

/// The best stack's program ids.
pub fn best_ids(e: &Evaluation) -> Vec<String> {
    e.best_stack
        .program_ids
        .iter()
        .map(|r| r.program_id.clone())
        .collect()
}
