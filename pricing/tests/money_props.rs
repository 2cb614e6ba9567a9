//! Property tests (docs/money.md) over every active ISO 4217 currency.

use pricing::money::{FeedAdapter, FeedNotation};
use pricing::{Currency, Money, RoundingMode};
use proptest::prelude::*;
use rust_decimal::Decimal;

fn currencies() -> Vec<Currency> {
    Currency::all_active().collect()
}

fn currency() -> impl Strategy<Value = Currency> {
    proptest::sample::select(currencies())
}

fn mode() -> impl Strategy<Value = RoundingMode> {
    proptest::sample::select(RoundingMode::ALL.to_vec())
}

/// Any i64, with extra weight on the edges.
fn minor() -> impl Strategy<Value = i64> {
    prop_oneof![
        any::<i64>(),
        -1_000_000_000_i64..1_000_000_000,
        Just(i64::MAX),
        Just(i64::MIN),
        Just(0_i64),
    ]
}

#[test]
fn the_currency_list_is_complete() {
    let all = currencies();
    let iso_with_minor_unit = iso_currency::Currency::iter_all_with_minor_unit();
    assert_eq!(
        all.len(),
        iso_with_minor_unit,
        "every active currency with a minor unit is accepted"
    );
    for exp in [0, 2, 3, 4] {
        assert!(
            all.iter().any(|c| c.exponent() == exp),
            "exponent {exp} covered"
        );
    }
}

/// Counts iso_currency entries that have a minor unit and are active
/// (not superseded, or superseded only by the VES data error).
trait CountActive {
    fn iter_all_with_minor_unit() -> usize;
}

impl CountActive for iso_currency::Currency {
    fn iter_all_with_minor_unit() -> usize {
        use iso_currency::IntoEnumIterator;
        iso_currency::Currency::iter()
            .filter(|c| c.exponent().is_some())
            .filter(|c| c.is_superseded().is_none() || c.code() == "VES")
            .count()
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// minor units -> plain string -> minor units, for EVERY active currency.
    #[test]
    fn string_round_trip_every_currency(m in minor()) {
        for c in currencies() {
            let money = Money::from_minor(m, c);
            let text = money.to_decimal_string();
            prop_assert_eq!(Money::from_decimal_str(&text, c), Ok(money), "{}", text);
            prop_assert_eq!(Money::from_decimal(money.to_decimal(), c), Ok(money));
            // The display form, minus grouping and code, is the same number.
            let shown = money.to_string();
            let suffix = format!(" {}", c.code());
            prop_assert!(shown.ends_with(&suffix));
            prop_assert_eq!(shown.trim_end_matches(&suffix).replace(',', ""), text.clone());
            // The US feed notation reads the display form back exactly.
            let feed = FeedAdapter::new(c, FeedNotation::CommaGroupsDotDecimal).with_marker(c.code());
            prop_assert_eq!(feed.parse(&shown), Ok(money));
        }
    }

    /// string -> minor units -> string is canonical, and extra significant
    /// decimals are always refused, for every active currency.
    #[test]
    fn decimal_strings_every_currency(
        negative in any::<bool>(),
        int in "[0-9]{1,14}", // 10^14 * 10^4 < i64::MAX
        frac in "[0-9]{0,4}",
        zeros in 0_usize..4,
    ) {
        for c in currencies() {
            let exp = c.exponent() as usize;
            let mut f: String = frac.chars().take(exp).collect();
            f.push_str(&"0".repeat(zeros));
            let sign = if negative { "-" } else { "" };
            let input = if f.is_empty() { format!("{sign}{int}") } else { format!("{sign}{int}.{f}") };
            let money = Money::from_decimal_str(&input, c).unwrap();
            let expected: Decimal = input.parse().unwrap();
            prop_assert_eq!(money.to_decimal(), expected);
            prop_assert_eq!(money.currency(), c);
            // Any non-zero digit beyond the exponent is refused.
            let too_precise = format!("{sign}{int}.{}1", "0".repeat(exp));
            prop_assert!(Money::from_decimal_str(&too_precise, c).is_err(), "{}", too_precise);
        }
    }

    /// Checked arithmetic never wraps: it agrees with i128 math exactly.
    #[test]
    fn checked_arithmetic_matches_i128(a in minor(), b in minor(), k in minor(), c in currency()) {
        let (x, y) = (Money::from_minor(a, c), Money::from_minor(b, c));
        let fits = |v: i128| i64::try_from(v).ok().map(|m| Money::from_minor(m, c));
        prop_assert_eq!(x.checked_add(y).ok(), fits(i128::from(a) + i128::from(b)));
        prop_assert_eq!(x.checked_sub(y).ok(), fits(i128::from(a) - i128::from(b)));
        prop_assert_eq!(x.checked_mul(k).ok(), fits(i128::from(a) * i128::from(k)));
        prop_assert_eq!(x.checked_neg().ok(), fits(-i128::from(a)));
        prop_assert_eq!(x.checked_abs().ok(), fits(i128::from(a).abs()));
        prop_assert_eq!(
            Money::checked_sum(c, [x, y, x]).ok(),
            fits(2 * i128::from(a) + i128::from(b))
        );
    }

    /// No operation silently changes currency, and mixing always fails.
    #[test]
    fn currency_is_preserved(a in minor(), b in minor(), c in currency(), d in currency(),
                             pct in -100_000_i64..100_000, md in mode(), n in 1_usize..8) {
        let x = Money::from_minor(a, c);
        let same = Money::from_minor(b, c);
        let results = [x.checked_add(same), x.checked_sub(same), x.checked_mul(2), x.checked_neg()];
        for m in results.into_iter().flatten() {
            prop_assert_eq!(m.currency(), c);
        }
        if let Ok(r) = x.percent(Decimal::new(pct, 2), md) { prop_assert_eq!(r.money.currency(), c); }
        if let Ok(r) = x.apply_rate(Decimal::new(pct, 4), md) { prop_assert_eq!(r.money.currency(), c); }
        for part in x.split(n).unwrap() { prop_assert_eq!(part.currency(), c); }
        if c != d {
            let other = Money::from_minor(b, d);
            prop_assert!(x.checked_add(other).is_err());
            prop_assert!(x.checked_sub(other).is_err());
            prop_assert!(x.checked_cmp(other).is_err());
            prop_assert!(Money::checked_sum(c, [x, other]).is_err());
        }
    }

    /// Largest-remainder allocation always sums to the whole, keeps each part
    /// within one minor unit of its exact share, and gives zero weights zero.
    #[test]
    fn allocation_conserves_the_total(
        total in minor(),
        weights in proptest::collection::vec(prop_oneof![Just(0_u64), 0_u64..1000, any::<u64>()], 1..12),
        c in currency(),
    ) {
        let w_sum: u128 = weights.iter().map(|&w| u128::from(w)).sum();
        prop_assume!(w_sum > 0);
        let parts = Money::from_minor(total, c).allocate(&weights).unwrap();
        prop_assert_eq!(parts.len(), weights.len());
        let sum: i128 = parts.iter().map(|p| i128::from(p.amount_minor())).sum();
        prop_assert_eq!(sum, i128::from(total));
        for (part, &w) in parts.iter().zip(&weights) {
            prop_assert_eq!(part.currency(), c);
            // |part * W - total * w| < W  (within one unit of the exact share)
            let diff = i128::from(part.amount_minor()) * w_sum as i128 - i128::from(total) * i128::from(w);
            prop_assert!(diff.unsigned_abs() < w_sum);
            if w == 0 { prop_assert_eq!(part.amount_minor(), 0); }
            // Parts never have the opposite sign of the total.
            prop_assert!(part.amount_minor() == 0 || part.amount_minor().signum() == total.signum());
        }
    }

    /// Splitting is deterministic and sums to the whole.
    #[test]
    fn split_conserves_the_total(total in minor(), n in 1_usize..50, c in currency()) {
        let parts = Money::from_minor(total, c).split(n).unwrap();
        let sum: i128 = parts.iter().map(|p| i128::from(p.amount_minor())).sum();
        prop_assert_eq!(sum, i128::from(total));
        let max = parts.iter().map(|p| p.amount_minor()).max().unwrap();
        let min = parts.iter().map(|p| p.amount_minor()).min().unwrap();
        prop_assert!(i128::from(max) - i128::from(min) <= 1);
        prop_assert_eq!(Money::from_minor(total, c).split(n).unwrap(), parts);
    }

    /// The single rounding step agrees with rust_decimal's named strategy
    /// wherever rust_decimal can hold the exact product.
    #[test]
    fn rounding_matches_rust_decimal(
        a in -1_000_000_000_000_i64..1_000_000_000_000,
        rate in -10_000_000_000_i64..10_000_000_000,
        scale in 0_u32..12,
        md in mode(),
        c in currency(),
    ) {
        let rate = Decimal::new(rate, scale);
        let exact = Decimal::from(a) * rate;
        let expected = exact.round_dp_with_strategy(0, md.strategy());
        let expected_minor = i64::try_from(expected.mantissa()).ok();
        let got = Money::from_minor(a, c).apply_rate(rate, md);
        prop_assert_eq!(got.as_ref().ok().map(|r| r.money.amount_minor()), expected_minor);
        if let Ok(got) = got {
            prop_assert_eq!(got.exact, exact.fract().is_zero());
            prop_assert!(got.transformation.chars().count() <= 160);
        }
        // percent(p) == apply_rate(p / 100)
        let pct = Money::from_minor(a, c).percent(rate, md).map(|r| r.money);
        let via_rate = Money::from_minor(a, c).apply_rate(rate / Decimal::ONE_HUNDRED, md).map(|r| r.money);
        prop_assert_eq!(pct.ok(), via_rate.ok());
    }

    /// The wire shape round-trips for every currency and any i64.
    #[test]
    fn wire_round_trip(m in minor(), c in currency()) {
        let money = Money::from_minor(m, c);
        let json = serde_json::to_string(&money).unwrap();
        prop_assert_eq!(json.clone(), format!(r#"{{"amount_minor":{m},"currency":"{}"}}"#, c.code()));
        prop_assert_eq!(serde_json::from_str::<Money>(&json).unwrap(), money);
    }
}
