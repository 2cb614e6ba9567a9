//! The pricing claims columns (`charge_classes_json`,
//! `reference_price_minor`; docs/inventory-feeds.md "Columns"): read into
//! `VehicleRecord.claims`, every rule with its exact problem, no echo.

use std::collections::BTreeMap;

use pricing::Money;
use pricing::lint::ChargeClass;

use super::*;

fn two_charges() -> String {
    json!([charge("USD", "doc-fee"), charge("USD", "etch")]).to_string()
}

#[test]
fn classes_and_a_reference_price_are_read_into_the_claims() {
    let charges = two_charges();
    let feed = dap(&[row(&[
        ("required_dealer_charges_json", &charges),
        (
            "charge_classes_json",
            r#"{"doc-fee": "documentation_fee", "etch": "dealer_add_on"}"#,
        ),
        ("reference_price_minor", "3599900"),
    ])])
    .unwrap();
    let v = vehicles(&feed)[0];
    assert_eq!(
        v.claims.charge_classes,
        BTreeMap::from([
            ("doc-fee".to_owned(), ChargeClass::DocumentationFee),
            ("etch".to_owned(), ChargeClass::DealerAddOn),
        ])
    );
    assert_eq!(
        v.claims.reference_price,
        Some(Money::from_minor(3_599_900, Currency::USD))
    );
}

#[test]
fn empty_cells_say_nothing_and_an_empty_object_classifies_nothing() {
    let v = vehicles(&dap(&[row(&[])]).unwrap())[0].clone();
    assert!(v.claims.is_empty());
    let charges = two_charges();
    let feed = dap(&[row(&[
        ("required_dealer_charges_json", &charges),
        ("charge_classes_json", "{}"),
    ])])
    .unwrap();
    assert!(vehicles(&feed)[0].claims.is_empty());
    // An empty object is fine even when the charges are unknown.
    dap(&[row(&[("charge_classes_json", "{}")])]).unwrap();
}

#[test]
fn a_key_must_be_a_charge_id_of_the_same_row() {
    let charges = two_charges();
    one_problem(
        dap(&[row(&[
            ("required_dealer_charges_json", &charges),
            (
                "charge_classes_json",
                r#"{"doc-fees": "documentation_fee"}"#,
            ),
        ])]),
        2,
        "charge_classes_json",
        "at /doc-fees: not a charge_id of this row's required_dealer_charges_json",
    );
    // The charges cell empty (unknown): there is no charge to classify.
    one_problem(
        dap(&[row(&[(
            "charge_classes_json",
            r#"{"doc-fee": "documentation_fee"}"#,
        )])]),
        2,
        "charge_classes_json",
        "at /doc-fee: required_dealer_charges_json is empty (unknown)",
    );
}

#[test]
fn a_class_must_be_a_class_word() {
    let charges = two_charges();
    let p = problems(dap(&[row(&[
        ("required_dealer_charges_json", &charges),
        ("charge_classes_json", r#"{"doc-fee": "doc", "etch": 3}"#),
    ])]));
    let rules: Vec<&str> = p.iter().map(|p| p.rule.as_str()).collect();
    assert_eq!(p.len(), 2, "{p:#?}");
    assert!(
        p.iter()
            .all(|p| p.row == 2 && p.column == "charge_classes_json")
    );
    assert!(
        rules[0].starts_with("at /doc-fee: not a charge class: one of documentation_fee|"),
        "{rules:?}"
    );
    assert!(rules[0].contains("|other"), "{rules:?}");
    assert!(rules[1].starts_with("at /etch: not a string"), "{rules:?}");
}

#[test]
fn the_cell_must_be_a_json_object_of_at_most_100_keys() {
    one_problem(
        dap(&[row(&[("charge_classes_json", r#"["doc-fee"]"#)])]),
        2,
        "charge_classes_json",
        "at /: not a JSON object",
    );
    one_problem(
        dap(&[row(&[("charge_classes_json", "{\"doc-fee\":")])]),
        2,
        "charge_classes_json",
        "not valid JSON",
    );
    let many: serde_json::Map<String, serde_json::Value> = (0..101)
        .map(|i| (format!("c{i}"), json!("other")))
        .collect();
    one_problem(
        dap(&[row(&[(
            "charge_classes_json",
            &serde_json::Value::Object(many).to_string(),
        )])]),
        2,
        "charge_classes_json",
        "at /: more than 100 keys",
    );
}

#[test]
fn a_long_key_is_never_echoed() {
    let long = "x".repeat(500);
    let cell = json!({ long.clone(): "other" }).to_string();
    let p = problems(dap(&[row(&[("charge_classes_json", &cell)])]));
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(p[0].rule.starts_with("at /(key 1): "), "{p:#?}");
    assert!(!p[0].rule.contains(&long[..65]));
}

#[test]
fn a_reference_price_is_whole_minor_units_above_the_advertised_price() {
    // The row's advertised price is 3429500.
    for (cell, rule) in [
        (
            "3429500",
            "must be above advertised_price_minor: a reference price announces a reduction",
        ),
        ("100", "must be above advertised_price_minor"),
        ("3599.00", "reference_price_minor"),
        ("-5", "must not be negative"),
        ("abc", "digits only"),
    ] {
        one_problem(
            dap(&[row(&[("reference_price_minor", cell)])]),
            2,
            "reference_price_minor",
            rule,
        );
    }
    // Beyond the range served exactly, like advertised_price_minor.
    let p = problems(dap(&[row(&[(
        "reference_price_minor",
        "99999999999999999999",
    )])]));
    assert_eq!(
        (p.len(), p[0].column.as_str()),
        (1, "reference_price_minor"),
        "{p:#?}"
    );
}

#[test]
fn a_bad_claim_refuses_the_whole_file() {
    let charges = two_charges();
    let result = dap(&[
        row(&[]),
        row(&[
            ("vin", "1HGCY2F50RA000102"),
            ("stock_number", "S2"),
            ("required_dealer_charges_json", &charges),
            ("charge_classes_json", r#"{"nope": "other"}"#),
        ]),
    ]);
    let p = problems(result);
    assert_eq!((p.len(), p[0].row), (1, 3), "{p:#?}");
}
