//! Unit tests of the what-if page.

use super::*;
use pricing::Currency;

fn usd(minor: i64) -> Value {
    json!({"amount_minor": minor, "currency": "USD"})
}

fn charge(name: &str, amount: Money, included: bool) -> crate::dap::DealerCharge {
    crate::dap::DealerCharge {
        charge_id: name.to_lowercase().replace(' ', "-"),
        name: name.into(),
        amount,
        payee: "dealer".into(),
        included_in_advertised_price: included,
        taxable_status: None,
        required: true,
        provenance: None,
    }
}

#[test]
fn the_waterfall_lines_sum_to_its_net_and_the_floor_keeps_it_at_zero() {
    let branch = json!({
        "payment_mode": "cash",
        "programs": [
            {"program_id": "a", "revision": 1, "name": "A", "amount": {"status": "known", "amount": usd(150_000)}},
            {"program_id": "s", "revision": 2, "name": "S", "amount": {"status": "known", "amount": usd(10_000)}},
            {"program_id": "u", "revision": 1, "name": "U", "amount": {"status": "unknown", "reason": "tbd"}},
        ],
        "best_stack": {
            "program_ids": [{"program_id": "a", "revision": 1}, {"program_id": "u", "revision": 1}],
            "surcharge_ids": [{"program_id": "s", "revision": 2}],
            "floored_at_zero": false,
        },
    });
    let dollars = |minor| Money::from_minor(minor, Currency::USD);
    let (doc_fee, prep) = (
        charge("Doc fee", dollars(34_900), false),
        charge("Prep", dollars(20_000), true),
    );
    let charges = [&doc_fee, &prep];
    let price = Money::from_minor(2_000_000, Currency::USD);
    let (steps, notes) = waterfall(price, Some(&charges), &branch).expect("drawn");
    let kinds: Vec<&str> = steps.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            "price",
            "charge",
            "discount",
            "discount",
            "surcharge",
            "net"
        ]
    );
    let counted: i64 = steps
        .iter()
        .filter_map(|s| s.delta)
        .map(Money::amount_minor)
        .sum();
    let net = steps.last().unwrap().total.amount_minor();
    assert_eq!(counted, net);
    assert_eq!(net, 2_000_000 + 34_900 - 150_000 + 10_000);
    assert!(notes[0].contains("Prep"), "{notes:?}");
    // The unknown amount is a line that is not counted.
    assert!(steps[3].delta.is_none());

    // Discounts above the price: the floor line lifts it back to zero
    // before the charges count.
    let mut floored = branch.clone();
    floored["programs"][0]["amount"]["amount"] = usd(3_000_000);
    floored["best_stack"]["floored_at_zero"] = json!(true);
    let (steps, _) = waterfall(price, Some(&charges), &floored).expect("drawn");
    let counted: i64 = steps
        .iter()
        .filter_map(|s| s.delta)
        .map(Money::amount_minor)
        .sum();
    let net = steps.last().unwrap().total.amount_minor();
    assert_eq!(counted, net);
    assert_eq!(net, 34_900, "zero, plus the charge");
    // A charge in another currency cannot be summed.
    let agency = charge("Agency", Money::from_minor(5, Currency::JPY), false);
    let yen = [&agency];
    assert!(waterfall(price, Some(&yen), &branch).is_err());
}

#[test]
fn traced_rule_rejections_are_read_per_mode() {
    let trace = json!([
        "cash: a@1 applicable; eligibility eligible",
        "cash/best: stack [a, b] rejected: rule of b returned false",
        "cash/best: stack [a, c] rejected: rule of c ErrorTooManyOperations",
        "finance/best: stack [a, d] rejected: rule of d returned false",
    ]);
    let found = rejections(&trace, "cash");
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].members, ["a", "b"]);
    assert_eq!(found[0].owner, "b");
    assert_eq!(found[0].why, "returned false");
    assert_eq!(found[1].why, "ErrorTooManyOperations");
    assert_eq!(rejections(&trace, "lease").len(), 0);
}

#[test]
fn engine_reasons_read_as_words() {
    assert_eq!(
        not_applicable_words("scope: condition `used` not covered"),
        "the vehicle is outside the program's scope (condition used not covered)"
    );
    assert_eq!(
        eligibility_words(
            &json!({"eligibility": {"status": "ineligible", "reason": "criterion military not met"}})
        ),
        "not eligible: the buyer does not meet \u{201c}military service\u{201d}"
    );
    assert_eq!(
        eligibility_words(
            &json!({"eligibility": {"status": "unknown", "needs": [{"criterion": "loyalty", "evidence": "owns the brand"}]}})
        ),
        "undecided: needs brand loyalty"
    );
    assert_eq!(
        needs_words(&json!([{"criterion": "loyalty", "evidence": "owns the brand"}])),
        "brand loyalty: owns the brand"
    );
}
