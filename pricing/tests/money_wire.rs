//! The DAP wire shape `{"amount_minor": 2499500, "currency": "USD"}`
//! (common.schema.json `money` / `nonNegativeMoney`): exact error texts.

use pricing::money::NonNegativeMoney;
use pricing::{Currency, Money};

fn parse(json: &str) -> Result<Money, String> {
    serde_json::from_str::<Money>(json).map_err(|e| e.to_string())
}

fn parse_err(json: &str) -> String {
    parse(json).unwrap_err()
}

const EXPECTING: &str = "amount_minor as a JSON integer count of minor units within the signed 64-bit range (floats such as 2499500.0 and strings are refused)";

#[test]
fn round_trip() {
    let m = Money::from_minor(2_499_500, Currency::USD);
    let json = serde_json::to_string(&m).unwrap();
    assert_eq!(json, r#"{"amount_minor":2499500,"currency":"USD"}"#);
    assert_eq!(parse(&json), Ok(m));
    assert_eq!(
        parse(r#"{"currency":"JPY","amount_minor":-1000}"#),
        Ok(Money::from_minor(-1000, Currency::JPY))
    );
    assert_eq!(
        parse(r#"{"amount_minor": 9223372036854775807, "currency": "KWD"}"#),
        Ok(Money::from_minor(i64::MAX, Currency::KWD))
    );
    assert_eq!(
        parse(r#"{"amount_minor": -9223372036854775808, "currency": "VES"}"#),
        Ok(Money::from_minor(
            i64::MIN,
            Currency::from_code("VES").unwrap()
        ))
    );
    let v = serde_json::json!({"amount_minor": 5, "currency": "EUR"});
    assert_eq!(
        serde_json::from_value::<Money>(v).unwrap(),
        Money::from_minor(5, Currency::EUR)
    );
}

#[test]
fn floats_are_refused() {
    assert_eq!(
        parse_err(r#"{"amount_minor": 2499500.0, "currency": "USD"}"#),
        format!(
            "invalid type: floating point `2499500.0`, expected {EXPECTING} at line 1 column 26"
        )
    );
    assert_eq!(
        parse_err(r#"{"amount_minor": 1e3, "currency": "USD"}"#),
        format!("invalid type: floating point `1000.0`, expected {EXPECTING} at line 1 column 20")
    );
    let v = serde_json::json!({"amount_minor": 2499500.0, "currency": "USD"});
    assert_eq!(
        serde_json::from_value::<Money>(v).unwrap_err().to_string(),
        format!("invalid type: floating point `2499500.0`, expected {EXPECTING}")
    );
}

#[test]
fn strings_and_other_types_are_refused() {
    assert_eq!(
        parse_err(r#"{"amount_minor": "2499500", "currency": "USD"}"#),
        format!("invalid type: string \"2499500\", expected {EXPECTING} at line 1 column 26")
    );
    assert_eq!(
        parse_err(r#"{"amount_minor": null, "currency": "USD"}"#),
        format!("invalid type: null, expected {EXPECTING} at line 1 column 21")
    );
    assert_eq!(
        parse_err(r#"{"amount_minor": 1, "currency": 840}"#),
        "invalid type: integer `840`, expected an ISO 4217 currency code string such as \"USD\" at line 1 column 35"
    );
    assert_eq!(
        parse_err(r#"[2499500, "USD"]"#),
        "invalid type: sequence, expected a DAP money object {\"amount_minor\": <integer>, \"currency\": \"<ISO 4217 code>\"} at line 1 column 1"
    );
}

#[test]
fn out_of_range_integers_are_refused() {
    assert_eq!(
        parse_err(r#"{"amount_minor": 9223372036854775808, "currency": "USD"}"#),
        "amount_minor 9223372036854775808 is outside the signed 64-bit range (-9223372036854775808..=9223372036854775807) at line 1 column 36"
    );
    // Beyond u64, serde_json reads the literal as a float: still refused.
    assert_eq!(
        parse_err(r#"{"amount_minor": -9223372036854775809, "currency": "USD"}"#),
        format!(
            "invalid type: floating point `-9.223372036854776e+18`, expected {EXPECTING} at line 1 column 37"
        )
    );
}

#[test]
fn fields_are_exact() {
    assert_eq!(
        parse_err(r#"{"amount_minor": 1, "currency": "USD", "note": "x"}"#),
        "unknown field `note`, expected `amount_minor` or `currency` at line 1 column 45"
    );
    assert_eq!(
        parse_err(r#"{"amount": 1, "currency": "USD"}"#),
        "unknown field `amount`, expected `amount_minor` or `currency` at line 1 column 9"
    );
    assert_eq!(
        parse_err(r#"{"currency": "USD"}"#),
        "missing field `amount_minor` at line 1 column 19"
    );
    assert_eq!(
        parse_err(r#"{"amount_minor": 1}"#),
        "missing field `currency` at line 1 column 19"
    );
    assert_eq!(
        parse_err(r#"{"amount_minor": 1, "amount_minor": 2, "currency": "USD"}"#),
        "duplicate field `amount_minor` at line 1 column 34"
    );
    assert_eq!(
        parse_err(r#"{"amount_minor": 1, "currency": "USD", "currency": "EUR"}"#),
        "duplicate field `currency` at line 1 column 49"
    );
}

#[test]
fn currencies_are_validated() {
    assert_eq!(
        parse_err(r#"{"amount_minor": 1, "currency": "HRK"}"#),
        "currency HRK has been withdrawn from ISO 4217 and superseded by EUR; amounts must be given in EUR at line 1 column 37"
    );
    assert_eq!(
        parse_err(r#"{"amount_minor": 1, "currency": "XAU"}"#),
        "currency XAU has no ISO 4217 minor unit (commodity, unit of account or testing code) and is refused for prices at line 1 column 37"
    );
    assert_eq!(
        parse_err(r#"{"amount_minor": 1, "currency": "ABC"}"#),
        "currency code `ABC` is not an ISO 4217 currency at line 1 column 37"
    );
    assert_eq!(
        parse_err(r#"{"amount_minor": 1, "currency": "usd"}"#),
        "currency code `usd` is malformed: an ISO 4217 alphabetic code is three upper-case ASCII letters such as `USD` at line 1 column 37"
    );
    assert_eq!(
        serde_json::from_str::<Currency>(r#""VES""#).unwrap().code(),
        "VES"
    );
    assert_eq!(serde_json::to_string(&Currency::KWD).unwrap(), r#""KWD""#);
}

#[test]
fn non_negative_money_wire() {
    let ok: NonNegativeMoney =
        serde_json::from_str(r#"{"amount_minor": 0, "currency": "USD"}"#).unwrap();
    assert_eq!(ok.get(), Money::zero(Currency::USD));
    assert_eq!(
        serde_json::to_string(&ok).unwrap(),
        r#"{"amount_minor":0,"currency":"USD"}"#
    );
    assert_eq!(
        serde_json::from_str::<NonNegativeMoney>(r#"{"amount_minor": -1, "currency": "USD"}"#)
            .unwrap_err()
            .to_string(),
        // serde's `try_from` runs after parsing, so no position is added.
        "amount_minor -1 USD is negative; a nonNegativeMoney amount must be zero or more"
    );
    assert!(
        serde_json::from_str::<NonNegativeMoney>(r#"{"amount_minor": 1.0, "currency": "USD"}"#)
            .is_err()
    );
}
