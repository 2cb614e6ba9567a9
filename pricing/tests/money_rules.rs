//! Unit tests for every money rule and every `MoneyError` message
//! (docs/money.md). Messages are asserted verbatim.

use pricing::money::{Amount, AmountSum, FeedAdapter, FeedNotation, NonNegativeMoney};
use pricing::{Currency, Money, MoneyError, RoundingMode};
use rust_decimal::Decimal;

fn cur(code: &str) -> Currency {
    Currency::from_code(code).unwrap()
}

fn minor(input: &str, code: &str) -> Result<i64, MoneyError> {
    Money::from_decimal_str(input, cur(code)).map(Money::amount_minor)
}

fn err_text(result: Result<impl std::fmt::Debug, MoneyError>) -> String {
    result.unwrap_err().to_string()
}

fn dec(s: &str) -> Decimal {
    s.parse().unwrap()
}

// ---- currencies -------------------------------------------------------------

#[test]
fn exponents_come_from_iso_4217() {
    for (code, exp) in [
        ("USD", 2),
        ("JPY", 0),
        ("KRW", 0),
        ("CLP", 0),
        ("BHD", 3),
        ("KWD", 3),
    ] {
        assert_eq!(cur(code).exponent(), exp, "{code}");
    }
    for code in ["JOD", "OMR", "TND", "IQD", "LYD"] {
        assert_eq!(cur(code).exponent(), 3, "{code}");
    }
    assert_eq!(cur("CLF").exponent(), 4);
}

#[test]
fn currency_display_is_the_code_not_the_name() {
    assert_eq!(Currency::USD.to_string(), "USD");
    assert_eq!(format!("{:?}", Currency::EUR), "EUR");
}

#[test]
fn no_minor_unit_is_refused() {
    for code in [
        "XAU", "XAG", "XPT", "XPD", "XDR", "XXX", "XTS", "XBA", "XSU", "XUA",
    ] {
        assert_eq!(
            Currency::from_code(code),
            Err(MoneyError::NoMinorUnit {
                code: iso_currency::Currency::from_code(code).unwrap().code()
            })
        );
    }
    assert_eq!(
        err_text(Currency::from_code("XAU")),
        "currency XAU has no ISO 4217 minor unit (commodity, unit of account or testing code) and is refused for prices"
    );
}

#[test]
fn withdrawn_currency_names_its_successor() {
    assert_eq!(
        err_text(Currency::from_code("HRK")),
        "currency HRK has been withdrawn from ISO 4217 and superseded by EUR; amounts must be given in EUR"
    );
    for (old, new) in [
        ("BGN", "EUR"),
        ("SLL", "SLE"),
        ("ZWL", "ZWG"),
        ("CUC", "CUP"),
    ] {
        match Currency::from_code(old) {
            Err(MoneyError::WithdrawnCurrency { code, successor }) => {
                assert_eq!((code, successor), (old, new));
            }
            other => panic!("{old}: {other:?}"),
        }
    }
}

#[test]
fn ves_is_active_despite_the_crate_flag() {
    // iso_currency 0.7.1 flags VES superseded(VED); ISO 4217 still lists it.
    assert_eq!(
        iso_currency::Currency::VES.is_superseded(),
        Some(iso_currency::Currency::VED)
    );
    let ves = Currency::from_code("VES").unwrap();
    assert_eq!((ves.code(), ves.exponent()), ("VES", 2));
    assert!(Currency::from_code("VED").is_ok());
    assert!(Currency::all_active().any(|c| c.code() == "VES"));
}

#[test]
fn unknown_and_malformed_codes() {
    assert_eq!(
        err_text(Currency::from_code("ANG")),
        "currency code `ANG` is not an ISO 4217 currency"
    );
    assert_eq!(
        err_text(Currency::from_code("ZZZ")),
        "currency code `ZZZ` is not an ISO 4217 currency"
    );
    for bad in ["usd", "US", "USDX", "", "U$D", "ÜSD"] {
        assert_eq!(
            err_text(Currency::from_code(bad)),
            format!(
                "currency code `{bad}` is malformed: an ISO 4217 alphabetic code is three upper-case ASCII letters such as `USD`"
            )
        );
    }
    let long = "X".repeat(100);
    let text = err_text(Currency::from_code(&long));
    assert!(text.contains(&format!("`{}…`", "X".repeat(64))), "{text}");
}

#[test]
fn every_active_currency_has_exponent_0_to_4_and_no_successor_unless_allowed() {
    let all: Vec<Currency> = Currency::all_active().collect();
    assert!(all.len() > 150, "{}", all.len());
    for c in all {
        assert!(c.exponent() <= 4);
        assert!(c.iso().is_superseded().is_none() || c.code() == "VES");
        assert_eq!(Currency::from_code(c.code()), Ok(c));
    }
}

// ---- decimal strings --------------------------------------------------------

#[test]
fn spec_vectors() {
    assert_eq!(minor("24995.00", "USD"), Ok(2_499_500));
    assert_eq!(minor("1000", "JPY"), Ok(1000));
    assert_eq!(minor("1.234", "KWD"), Ok(1234));
    assert_eq!(minor("1.234", "BHD"), Ok(1234));
    assert_eq!(minor("10.010", "USD"), Ok(1001));
    assert_eq!(minor("-0.01", "EUR"), Ok(-1));
    assert_eq!(minor("1.0001", "CLF"), Ok(10_001));
    assert_eq!(minor("0", "USD"), Ok(0));
    assert_eq!(minor("-0.00", "USD"), Ok(0));
    assert_eq!(minor("007.50", "USD"), Ok(750));
    assert_eq!(minor("1000.000", "JPY"), Ok(1000));
    assert_eq!(minor("92233720368547758.07", "USD"), Ok(i64::MAX));
    assert_eq!(minor("-92233720368547758.08", "USD"), Ok(i64::MIN));
}

#[test]
fn not_representable() {
    assert_eq!(
        err_text(minor("10.001", "USD")),
        "amount `10.001` is not representable in USD (2 decimals)"
    );
    assert_eq!(
        err_text(minor("1.5", "JPY")),
        "amount `1.5` is not representable in JPY (0 decimals)"
    );
    assert_eq!(
        err_text(minor("1.2345", "KWD")),
        "amount `1.2345` is not representable in KWD (3 decimals)"
    );
}

#[test]
fn out_of_range() {
    assert_eq!(
        err_text(minor("92233720368547758.08", "USD")),
        "amount `92233720368547758.08` does not fit in a signed 64-bit count of USD minor units"
    );
    assert!(minor("-92233720368547758.09", "USD").is_err());
    let huge = "9".repeat(60);
    assert!(matches!(
        minor(&huge, "JPY"),
        Err(MoneyError::AmountOutOfRange { .. })
    ));
}

#[test]
fn syntax_rules_and_messages() {
    let cases = [
        ("", "the string is empty"),
        ("+1.00", "a leading '+' is not allowed"),
        ("1e5", "exponents are not allowed"),
        ("1.5E2", "exponents are not allowed"),
        (
            "1,000.00",
            "thousands separators are not allowed (formatted feed strings go through the feed adapter)",
        ),
        (
            "1_000",
            "thousands separators are not allowed (formatted feed strings go through the feed adapter)",
        ),
        ("1 000", "whitespace is not allowed"),
        (" 1", "whitespace is not allowed"),
        ("--1", "a sign is only allowed as a single leading '-'"),
        ("1-", "a sign is only allowed as a single leading '-'"),
        ("-+1", "a sign is only allowed as a single leading '-'"),
        (
            "$10",
            "only ASCII digits, one leading '-' and one '.' are allowed",
        ),
        (
            "NaN",
            "only ASCII digits, one leading '-' and one '.' are allowed",
        ),
        ("1.2.3", "more than one decimal point"),
        (
            ".5",
            "at least one digit is required before the decimal point",
        ),
        (
            "-",
            "at least one digit is required before the decimal point",
        ),
        (
            "5.",
            "at least one digit is required after the decimal point",
        ),
    ];
    for (input, rule) in cases {
        assert_eq!(
            err_text(minor(input, "USD")),
            format!("amount `{input}` is not a plain decimal number: {rule}"),
            "{input:?}"
        );
    }
}

#[test]
fn decimal_value_conversion_is_exact() {
    assert_eq!(
        Money::from_decimal(dec("24995.00"), Currency::USD).map(Money::amount_minor),
        Ok(2_499_500)
    );
    assert_eq!(
        err_text(Money::from_decimal(dec("10.005"), Currency::USD)),
        "amount `10.005` is not representable in USD (2 decimals)"
    );
    assert_eq!(
        err_text(Money::from_decimal(
            dec("100000000000000000"),
            Currency::USD
        )),
        "amount `100000000000000000` does not fit in a signed 64-bit count of USD minor units"
    );
    assert_eq!(
        Money::from_minor(-1, Currency::EUR).to_decimal(),
        dec("-0.01")
    );
}

#[test]
fn plain_string_output() {
    assert_eq!(
        Money::from_minor(2_499_500, Currency::USD).to_decimal_string(),
        "24995.00"
    );
    assert_eq!(
        Money::from_minor(1000, Currency::JPY).to_decimal_string(),
        "1000"
    );
    assert_eq!(
        Money::from_minor(-1, Currency::EUR).to_decimal_string(),
        "-0.01"
    );
    assert_eq!(
        Money::from_minor(5, Currency::CLF).to_decimal_string(),
        "0.0005"
    );
}

// ---- display ----------------------------------------------------------------

#[test]
fn display_follows_the_exponent() {
    let show = |m: i64, c: Currency| Money::from_minor(m, c).to_string();
    assert_eq!(show(4_287_500, Currency::USD), "42,875.00 USD");
    assert_eq!(show(1000, Currency::JPY), "1,000 JPY");
    assert_eq!(show(1234, Currency::KWD), "1.234 KWD");
    assert_eq!(show(-4_287_500, Currency::USD), "-42,875.00 USD");
    assert_eq!(show(-1, Currency::EUR), "-0.01 EUR");
    assert_eq!(show(0, Currency::JPY), "0 JPY");
    assert_eq!(show(123_456_789, Currency::KWD), "123,456.789 KWD");
    assert_eq!(
        show(i64::MAX, Currency::USD),
        "92,233,720,368,547,758.07 USD"
    );
    assert_eq!(
        show(i64::MIN, Currency::JPY),
        "-9,223,372,036,854,775,808 JPY"
    );
}

// ---- feed adapter -----------------------------------------------------------

fn us() -> FeedAdapter {
    FeedAdapter::new(Currency::USD, FeedNotation::CommaGroupsDotDecimal)
        .with_marker("$")
        .with_marker("USD")
}

fn fr() -> FeedAdapter {
    FeedAdapter::new(Currency::EUR, FeedNotation::SpaceGroupsCommaDecimal).with_marker("€")
}

#[test]
fn feed_us_notation() {
    let ok = |s: &str| us().parse(s).map(Money::amount_minor);
    assert_eq!(ok("$42,875.00"), Ok(4_287_500));
    assert_eq!(ok("42875.00"), Ok(4_287_500));
    assert_eq!(ok(" $ 42,875 "), Ok(4_287_500));
    assert_eq!(ok("42,875.00 USD"), Ok(4_287_500));
    assert_eq!(ok("USD 1,234,567.89"), Ok(123_456_789));
    assert_eq!(ok("-$0.01"), Ok(-1));
    assert_eq!(ok("$-0.01"), Ok(-1));
    assert_eq!(ok("10.010"), Ok(1001));
    assert_eq!(us().currency(), Currency::USD);
    assert_eq!(us().notation(), FeedNotation::CommaGroupsDotDecimal);
}

#[test]
fn feed_space_and_dot_notations() {
    let ok = |s: &str| fr().parse(s).map(Money::amount_minor);
    assert_eq!(ok("42 875,00"), Ok(4_287_500));
    assert_eq!(ok("42\u{a0}875,00 €"), Ok(4_287_500));
    assert_eq!(ok("1\u{202f}000\u{202f}000,5"), Ok(100_000_050));
    assert_eq!(ok("€ 3,50"), Ok(350));
    let de = FeedAdapter::new(Currency::EUR, FeedNotation::DotGroupsCommaDecimal);
    assert_eq!(
        de.parse("42.875,00").map(Money::amount_minor),
        Ok(4_287_500)
    );
    assert_eq!(de.parse("1.234").map(Money::amount_minor), Ok(123_400));
    let jp = FeedAdapter::new(Currency::JPY, FeedNotation::CommaGroupsDotDecimal).with_marker("¥");
    assert_eq!(jp.parse("¥1,000").map(Money::amount_minor), Ok(1000));
}

#[test]
fn feed_errors() {
    let notation = "comma_groups_dot_decimal";
    let cases = [
        ("", "the amount is empty"),
        (
            "$42,87.00",
            "group separators must split the integer part into groups of three digits",
        ),
        (
            "$4,2875.00",
            "group separators must split the integer part into groups of three digits",
        ),
        (
            ",875.00",
            "group separators must split the integer part into groups of three digits",
        ),
        (
            "1,,000",
            "group separators must split the integer part into groups of three digits",
        ),
        (
            "$.50",
            "at least one digit is required before the decimal mark",
        ),
        (
            "$5.",
            "at least one digit is required after the decimal mark",
        ),
        (
            "1.000,00",
            "only digits may follow the decimal mark (one decimal mark, no grouping in the fraction)",
        ),
        (
            "1.2.3",
            "only digits may follow the decimal mark (one decimal mark, no grouping in the fraction)",
        ),
        ("--5", "only one '-' is allowed"),
        ("-$-5", "only one '-' is allowed"),
        ("5-", "a sign is only allowed as one leading '-'"),
        ("+5", "a sign is only allowed as one leading '-'"),
        (
            "€5",
            "it contains a character that is neither a digit, a separator of this notation nor a declared currency marker",
        ),
        (
            "$5 USD",
            "it contains a character that is neither a digit, a separator of this notation nor a declared currency marker",
        ),
        (
            "1e5",
            "it contains a character that is neither a digit, a separator of this notation nor a declared currency marker",
        ),
    ];
    for (input, rule) in cases {
        assert_eq!(
            err_text(us().parse(input)),
            format!(
                "feed amount `{}` is not valid in notation {notation}: {rule}",
                input
            ),
            "{input:?}"
        );
    }
    assert_eq!(
        err_text(fr().parse("1 000\u{a0}000,00")),
        "feed amount `1 000\u{a0}000,00` is not valid in notation space_groups_comma_decimal: one number must use one kind of group separator"
    );
    assert_eq!(
        err_text(us().parse("$42,875.001")),
        "amount `$42,875.001` is not representable in USD (2 decimals)"
    );
    assert_eq!(
        err_text(us().parse("$100,000,000,000,000,000.00")),
        "amount `$100,000,000,000,000,000.00` does not fit in a signed 64-bit count of USD minor units"
    );
    // Without a declared marker, the symbol is an error, never guessed.
    let bare =
        FeedAdapter::new(Currency::USD, FeedNotation::CommaGroupsDotDecimal).with_marker(" ");
    assert!(bare.parse("$5").is_err());
    assert_eq!(
        FeedNotation::DotGroupsCommaDecimal.to_string(),
        "dot_groups_comma_decimal"
    );
}

// ---- arithmetic -------------------------------------------------------------

#[test]
fn checked_arithmetic_and_messages() {
    let usd = |m| Money::from_minor(m, Currency::USD);
    assert_eq!(usd(5).checked_add(usd(7)), Ok(usd(12)));
    assert_eq!(usd(5).checked_sub(usd(7)), Ok(usd(-2)));
    assert_eq!(usd(5).checked_mul(-3), Ok(usd(-15)));
    assert_eq!(usd(5).checked_neg(), Ok(usd(-5)));
    assert_eq!(usd(-5).checked_abs(), Ok(usd(5)));
    assert_eq!(usd(1).checked_cmp(usd(2)), Ok(std::cmp::Ordering::Less));
    let overflow = |op: &str| {
        format!(
            "{op} overflowed the signed 64-bit range of USD minor units; money arithmetic is checked and never wraps"
        )
    };
    assert_eq!(
        err_text(usd(i64::MAX).checked_add(usd(1))),
        overflow("addition")
    );
    assert_eq!(
        err_text(usd(i64::MIN).checked_sub(usd(1))),
        overflow("subtraction")
    );
    assert_eq!(
        err_text(usd(i64::MAX).checked_mul(2)),
        overflow("multiplication")
    );
    assert_eq!(err_text(usd(i64::MIN).checked_neg()), overflow("negation"));
    assert_eq!(
        err_text(usd(i64::MIN).checked_abs()),
        overflow("absolute value")
    );
    let eur = Money::from_minor(1, Currency::EUR);
    assert_eq!(
        err_text(usd(1).checked_add(eur)),
        "addition of a USD amount and a EUR amount is refused: currencies are never mixed or converted"
    );
    assert_eq!(
        err_text(usd(1).checked_sub(eur)),
        "subtraction of a USD amount and a EUR amount is refused: currencies are never mixed or converted"
    );
    assert_eq!(
        err_text(usd(1).checked_cmp(eur)),
        "comparison of a USD amount and a EUR amount is refused: currencies are never mixed or converted"
    );
    assert_eq!(Money::checked_sum(Currency::USD, []), Ok(usd(0)));
    assert!(Money::checked_sum(Currency::USD, [usd(1), eur]).is_err());
    assert!(Money::checked_sum(Currency::EUR, [usd(1)]).is_err());
    assert_eq!(
        Money::try_new(5, "JPY"),
        Ok(Money::from_minor(5, Currency::JPY))
    );
    assert!(Money::try_new(5, "XXX").is_err());
    assert!(usd(-1).is_negative() && usd(0).is_zero());
}

// ---- rounding ---------------------------------------------------------------

#[test]
fn percent_and_rate_with_each_mode() {
    let price = Money::from_minor(4_287_500, Currency::USD);
    let expected = [535_938, 535_938, 535_937, 535_938, 535_937]; // exact 535937.5
    for (mode, want) in RoundingMode::ALL.into_iter().zip(expected) {
        let r = price.percent(dec("12.5"), mode).unwrap();
        assert_eq!(r.money, Money::from_minor(want, Currency::USD), "{mode}");
        assert_eq!(
            r.transformation,
            format!("percent 12.5% of 42875.00 USD rounded {mode} to 2 decimals")
        );
        assert!(!r.exact);
    }
    let neg = Money::from_minor(-4_287_500, Currency::USD);
    let expected = [-535_938, -535_938, -535_938, -535_937, -535_937];
    for (mode, want) in RoundingMode::ALL.into_iter().zip(expected) {
        assert_eq!(
            neg.percent(dec("12.50"), mode)
                .unwrap()
                .money
                .amount_minor(),
            want,
            "{mode}"
        );
    }
    let exact = price.percent(dec("10"), RoundingMode::HalfUp).unwrap();
    assert_eq!((exact.money.amount_minor(), exact.exact), (428_750, true));
    let r = Money::from_minor(1234, Currency::KWD)
        .apply_rate(dec("0.5"), RoundingMode::HalfEven)
        .unwrap();
    assert_eq!(r.money.amount_minor(), 617);
    assert_eq!(
        r.transformation,
        "rate 0.5 times 1.234 KWD rounded half_even to 3 decimals"
    );
    // Tiny rates keep all their digits: no intermediate rounding.
    let tiny = Money::from_minor(1, Currency::USD)
        .apply_rate(
            dec("0.5000000000000000000000000001"),
            RoundingMode::HalfEven,
        )
        .unwrap();
    assert_eq!(tiny.money.amount_minor(), 1);
}

#[test]
fn rate_errors() {
    let big = Money::from_minor(i64::MAX, Currency::USD);
    assert_eq!(
        err_text(big.percent(dec("200"), RoundingMode::Floor)),
        "percent overflowed the signed 64-bit range of USD minor units; money arithmetic is checked and never wraps"
    );
    assert_eq!(
        err_text(big.apply_rate(Decimal::MAX, RoundingMode::Floor)),
        "rate `79228162514264337593543950335` applied to USD minor units exceeds the exact 128-bit intermediate; use fewer significant digits"
    );
}

#[test]
fn transformation_fits_the_dap_limit() {
    let m = Money::from_minor(i64::MIN, Currency::CLF);
    let r = m
        .percent(
            dec("-0.0000000000000000000000000001"),
            RoundingMode::HalfEven,
        )
        .unwrap();
    assert!(
        r.transformation.chars().count() <= 160,
        "{}",
        r.transformation
    );
}

#[test]
fn rounding_mode_names() {
    assert_eq!(
        RoundingMode::ALL.map(RoundingMode::name),
        ["half_up", "half_even", "floor", "ceiling", "truncate"]
    );
    assert_eq!(
        serde_json::to_string(&RoundingMode::HalfEven).unwrap(),
        "\"half_even\""
    );
    assert_eq!(
        serde_json::from_str::<RoundingMode>("\"truncate\"").unwrap(),
        RoundingMode::Truncate
    );
    assert_eq!(
        err_text("round".parse::<RoundingMode>()),
        "rounding mode `round` is unknown: it must be one of half_up, half_even, floor, ceiling, truncate"
    );
}

// ---- allocation -------------------------------------------------------------

fn minors(parts: &[Money]) -> Vec<i64> {
    parts.iter().map(|m| m.amount_minor()).collect()
}

#[test]
fn allocation_rules() {
    let usd = |m| Money::from_minor(m, Currency::USD);
    assert_eq!(
        minors(&usd(100).allocate(&[1, 1, 1]).unwrap()),
        [34, 33, 33]
    );
    assert_eq!(
        minors(&usd(-100).allocate(&[1, 1, 1]).unwrap()),
        [-34, -33, -33]
    );
    // Largest remainder, not first index: 10 over 1:2:2 -> 2, 4, 4.
    assert_eq!(minors(&usd(10).allocate(&[1, 2, 2]).unwrap()), [2, 4, 4]);
    // 5 over 3:3:1 -> exact 2.14, 2.14, 0.71: remainder goes to the third.
    assert_eq!(minors(&usd(5).allocate(&[3, 3, 1]).unwrap()), [2, 2, 1]);
    // Ties go to the lower index.
    assert_eq!(minors(&usd(2).allocate(&[1, 1, 1]).unwrap()), [1, 1, 0]);
    assert_eq!(minors(&usd(7).allocate(&[0, 1, 0]).unwrap()), [0, 7, 0]);
    assert_eq!(minors(&usd(i64::MIN).allocate(&[1]).unwrap()), [i64::MIN]);
    assert_eq!(
        minors(&usd(i64::MAX).allocate(&[u64::MAX, u64::MAX]).unwrap())
            .iter()
            .map(|&x| i128::from(x))
            .sum::<i128>(),
        i128::from(i64::MAX)
    );
    assert_eq!(minors(&usd(5).split(1).unwrap()), [5]);
    assert_eq!(minors(&usd(1).split(3).unwrap()), [1, 0, 0]);
    assert_eq!(
        err_text(usd(1).allocate(&[])),
        "allocation needs at least one weight"
    );
    assert_eq!(
        err_text(usd(1).allocate(&[0, 0])),
        "allocation weights sum to zero; at least one weight must be positive"
    );
    assert_eq!(
        err_text(usd(1).split(0)),
        "an amount cannot be split into 0 parts; the number of parts must be at least 1"
    );
}

// ---- unknown is not zero ----------------------------------------------------

#[test]
fn unknown_never_becomes_zero() {
    let usd = |m| Amount::Known(Money::from_minor(m, Currency::USD));
    let unknown = Amount::unknown("not published");
    assert_eq!(unknown.known(), None);
    assert!(!unknown.is_known());
    assert_eq!(usd(1).checked_add(&unknown), Ok(unknown.clone()));
    assert_eq!(unknown.checked_add(&usd(1)), Ok(unknown.clone()));
    assert_eq!(usd(1).checked_add(&usd(2)), Ok(usd(3)));
    assert!(
        usd(1)
            .checked_add(&Amount::Known(Money::from_minor(1, Currency::EUR)))
            .is_err()
    );

    let parts = [
        ("freight", usd(149_500)),
        ("doc_fee", Amount::unknown("dealer did not publish it")),
        ("prep", usd(25_000)),
        ("etch", Amount::unknown("optional, price on request")),
    ];
    let sum = AmountSum::from_parts(Currency::USD, parts.iter().map(|(l, a)| (*l, a))).unwrap();
    assert_eq!(
        sum.known_subtotal(),
        Money::from_minor(174_500, Currency::USD)
    );
    let labels: Vec<&str> = sum
        .unknown_parts()
        .iter()
        .map(|p| p.label.as_str())
        .collect();
    assert_eq!(labels, ["doc_fee", "etch"]);
    assert_eq!(sum.unknown_parts()[0].reason, "dealer did not publish it");
    assert!(!sum.is_complete());
    assert_eq!(sum.complete_total(), None);
    assert_eq!(sum.total(), Amount::unknown("unknown parts: doc_fee, etch"));

    let complete = AmountSum::from_parts(Currency::USD, [("a", &usd(1)), ("b", &usd(2))]).unwrap();
    assert_eq!(complete.total(), usd(3));
    assert_eq!(
        complete.complete_total(),
        Some(Money::from_minor(3, Currency::USD))
    );
    let empty = AmountSum::new(Currency::JPY);
    assert_eq!(empty.complete_total(), Some(Money::zero(Currency::JPY)));

    let mut s = AmountSum::new(Currency::USD);
    assert!(
        s.add("x", &Amount::Known(Money::from_minor(1, Currency::EUR)))
            .is_err()
    );
    assert_eq!(s, AmountSum::new(Currency::USD));
}

// ---- nonNegativeMoney -------------------------------------------------------

#[test]
fn non_negative_money() {
    let zero = Money::zero(Currency::USD);
    assert_eq!(
        NonNegativeMoney::new(zero).map(NonNegativeMoney::get),
        Ok(zero)
    );
    assert_eq!(
        err_text(NonNegativeMoney::new(Money::from_minor(-5, Currency::JPY))),
        "amount_minor -5 JPY is negative; a nonNegativeMoney amount must be zero or more"
    );
    let m: Money = NonNegativeMoney::new(Money::from_minor(5, Currency::USD))
        .unwrap()
        .into();
    assert_eq!(m.amount_minor(), 5);
}
