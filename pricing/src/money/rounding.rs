//! Rounding modes and rate/percentage math that rounds exactly once
//! (docs/money.md section 5: round once, at a declared point, with a named
//! mode; never a bare `round_dp`).

use std::fmt;
use std::str::FromStr;

use rust_decimal::{Decimal, RoundingStrategy};

use super::error::excerpt;
use super::{Money, MoneyError};

/// How a value between two minor units is rounded. There is deliberately no
/// default: every caller names a mode, and the name is recorded in
/// provenance `transformations`.
///
/// Examples below round to whole units; the same applies at any exponent.
///
/// | value | `half_up` | `half_even` | `floor` | `ceiling` | `truncate` |
/// |------:|----------:|------------:|--------:|----------:|-----------:|
/// |   2.5 |         3 |           2 |       2 |         3 |          2 |
/// |   3.5 |         4 |           4 |       3 |         4 |          3 |
/// |   2.4 |         2 |           2 |       2 |         3 |          2 |
/// |  -2.5 |        -3 |          -2 |      -3 |        -2 |         -2 |
/// |  -2.6 |        -3 |          -3 |      -3 |        -2 |         -2 |
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundingMode {
    /// Nearest; a tie goes away from zero. `2.5 -> 3`, `-2.5 -> -3`.
    /// Symmetric: a negative value rounds like its magnitude, then keeps
    /// its sign. `rust_decimal`: `MidpointAwayFromZero`.
    HalfUp,
    /// Nearest; a tie goes to the even neighbour (banker's rounding).
    /// `2.5 -> 2`, `3.5 -> 4`, `-2.5 -> -2`, `-3.5 -> -4`. Symmetric for
    /// negative values. `rust_decimal`: `MidpointNearestEven`.
    HalfEven,
    /// Toward negative infinity. `2.7 -> 2`, `-2.1 -> -3`: on negative
    /// values this moves *away* from zero. `rust_decimal`: `ToNegativeInfinity`.
    Floor,
    /// Toward positive infinity. `2.1 -> 3`, `-2.7 -> -2`: on negative
    /// values this moves *toward* zero. `rust_decimal`: `ToPositiveInfinity`.
    Ceiling,
    /// Toward zero (drop the excess digits). `2.7 -> 2`, `-2.7 -> -2`.
    /// `rust_decimal`: `ToZero`.
    Truncate,
}

impl RoundingMode {
    /// Every mode, in declaration order.
    pub const ALL: [RoundingMode; 5] = [
        RoundingMode::HalfUp,
        RoundingMode::HalfEven,
        RoundingMode::Floor,
        RoundingMode::Ceiling,
        RoundingMode::Truncate,
    ];

    /// The stable name used on the wire and in provenance: `half_up`,
    /// `half_even`, `floor`, `ceiling`, `truncate`.
    pub const fn name(self) -> &'static str {
        match self {
            RoundingMode::HalfUp => "half_up",
            RoundingMode::HalfEven => "half_even",
            RoundingMode::Floor => "floor",
            RoundingMode::Ceiling => "ceiling",
            RoundingMode::Truncate => "truncate",
        }
    }

    /// The equivalent `rust_decimal` strategy, for callers that round a
    /// `Decimal` with `round_dp_with_strategy`.
    ///
    /// ```
    /// use pricing::RoundingMode;
    /// use rust_decimal::Decimal;
    ///
    /// let d = Decimal::new(-25, 1); // -2.5
    /// let r = d.round_dp_with_strategy(0, RoundingMode::HalfEven.strategy());
    /// assert_eq!(r, Decimal::new(-2, 0));
    /// ```
    pub const fn strategy(self) -> RoundingStrategy {
        match self {
            RoundingMode::HalfUp => RoundingStrategy::MidpointAwayFromZero,
            RoundingMode::HalfEven => RoundingStrategy::MidpointNearestEven,
            RoundingMode::Floor => RoundingStrategy::ToNegativeInfinity,
            RoundingMode::Ceiling => RoundingStrategy::ToPositiveInfinity,
            RoundingMode::Truncate => RoundingStrategy::ToZero,
        }
    }

    /// Rounds the exact quotient `numerator / denominator` to an integer.
    /// `denominator` must be positive.
    fn divide(self, numerator: i128, denominator: i128) -> i128 {
        let quotient = numerator / denominator; // truncates toward zero
        let remainder = numerator % denominator; // same sign as numerator
        if remainder == 0 {
            return quotient;
        }
        let away = quotient + numerator.signum();
        let twice = remainder.unsigned_abs() * 2;
        let half = denominator.unsigned_abs();
        match self {
            RoundingMode::Truncate => quotient,
            RoundingMode::Floor if numerator < 0 => away,
            RoundingMode::Floor => quotient,
            RoundingMode::Ceiling if numerator > 0 => away,
            RoundingMode::Ceiling => quotient,
            RoundingMode::HalfUp if twice >= half => away,
            RoundingMode::HalfUp => quotient,
            RoundingMode::HalfEven if twice > half || (twice == half && quotient % 2 != 0) => away,
            RoundingMode::HalfEven => quotient,
        }
    }
}

impl fmt::Display for RoundingMode {
    /// Writes [`RoundingMode::name`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for RoundingMode {
    type Err = MoneyError;

    /// Parses [`RoundingMode::name`] (exact, lower case); any other text is
    /// [`MoneyError::UnknownRoundingMode`].
    fn from_str(s: &str) -> Result<RoundingMode, MoneyError> {
        RoundingMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| MoneyError::UnknownRoundingMode { name: excerpt(s) })
    }
}

/// The result of a rounded operation: the money plus the record of the
/// single rounding step, ready for a provenance `transformations` entry
/// (always at most 160 characters, the DAP limit).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Rounded {
    /// The rounded amount, in the input's currency.
    pub money: Money,
    /// `true` when the exact result was already a whole number of minor
    /// units, so the rounding changed nothing.
    pub exact: bool,
    /// E.g. `"percent 12.5% of 42875.00 USD rounded half_up to 2 decimals"`.
    pub transformation: String,
}

impl Money {
    /// `self * percent / 100`, rounded once with `mode` to the currency's
    /// minor unit.
    ///
    /// The product is computed exactly (an `i128` numerator over a power of
    /// ten, up to 30 decimal places: more than the spec's floor of scale 9),
    /// then rounded once. The percentage keeps all of its digits.
    ///
    /// # Errors
    /// [`MoneyError::RateTooLarge`] when the exact product does not fit in
    /// 128 bits; [`MoneyError::Overflow`] when the rounded result does not
    /// fit in `i64` minor units.
    ///
    /// ```
    /// use pricing::{Currency, Money, RoundingMode};
    /// use rust_decimal::Decimal;
    ///
    /// let price = Money::from_minor(4_287_500, Currency::USD);
    /// let pct = Decimal::new(125, 1); // 12.5
    /// let down = price.percent(pct, RoundingMode::Floor)?;
    /// assert_eq!(down.money.amount_minor(), 535_937); // exact 535937.5
    /// assert_eq!(down.transformation, "percent 12.5% of 42875.00 USD rounded floor to 2 decimals");
    /// assert!(!down.exact);
    /// # Ok::<(), pricing::MoneyError>(())
    /// ```
    pub fn percent(self, percent: Decimal, mode: RoundingMode) -> Result<Rounded, MoneyError> {
        let p = percent.normalize();
        let label = format!("percent {p}% of");
        self.scale_exact(p, 2, "percent", label, mode)
    }

    /// `self * rate`, rounded once with `mode` to the currency's minor
    /// unit (`rate` 0.125 is 12.5 %). Same exactness as [`Money::percent`].
    ///
    /// # Errors
    /// As [`Money::percent`].
    ///
    /// ```
    /// use pricing::{Currency, Money, RoundingMode};
    /// use rust_decimal::Decimal;
    ///
    /// let fee = Money::from_minor(-1_005, Currency::JPY);
    /// let r = fee.apply_rate(Decimal::new(5, 1), RoundingMode::HalfEven)?; // -502.5
    /// assert_eq!(r.money.amount_minor(), -502);
    /// assert_eq!(r.transformation, "rate 0.5 times -1005 JPY rounded half_even to 0 decimals");
    /// # Ok::<(), pricing::MoneyError>(())
    /// ```
    pub fn apply_rate(self, rate: Decimal, mode: RoundingMode) -> Result<Rounded, MoneyError> {
        let r = rate.normalize();
        let label = format!("rate {r} times");
        self.scale_exact(r, 0, "rate", label, mode)
    }

    /// Computes `self * factor / 10^extra_scale` exactly, rounds once.
    fn scale_exact(
        self,
        factor: Decimal,
        extra_scale: u32,
        kind: &'static str,
        label: String,
        mode: RoundingMode,
    ) -> Result<Rounded, MoneyError> {
        let currency = self.currency();
        // factor = mantissa / 10^scale, scale <= 28, so the denominator is
        // at most 10^30 and always fits in i128.
        let denominator = 10_i128.pow(factor.scale() + extra_scale);
        let numerator = i128::from(self.amount_minor())
            .checked_mul(factor.mantissa())
            .ok_or_else(|| MoneyError::RateTooLarge {
                kind,
                rate: factor.to_string(),
                currency: currency.code(),
            })?;
        let rounded = mode.divide(numerator, denominator);
        let amount_minor = i64::try_from(rounded).map_err(|_| MoneyError::Overflow {
            operation: kind,
            currency: currency.code(),
        })?;
        Ok(Rounded {
            money: Money::from_minor(amount_minor, currency),
            exact: numerator % denominator == 0,
            transformation: format!(
                "{label} {} {} rounded {mode} to {} decimals",
                self.to_decimal_string(),
                currency.code(),
                currency.exponent()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::RoundingMode;

    fn whole(mode: RoundingMode, tenths: i128) -> i128 {
        mode.divide(tenths, 10)
    }

    #[test]
    fn table_in_the_docs_holds() {
        let rows: [(i128, [i128; 5]); 5] = [
            (25, [3, 2, 2, 3, 2]),
            (35, [4, 4, 3, 4, 3]),
            (24, [2, 2, 2, 3, 2]),
            (-25, [-3, -2, -3, -2, -2]),
            (-26, [-3, -3, -3, -2, -2]),
        ];
        for (tenths, expected) in rows {
            for (mode, want) in RoundingMode::ALL.into_iter().zip(expected) {
                assert_eq!(whole(mode, tenths), want, "{mode} of {tenths}/10");
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for mode in RoundingMode::ALL {
            assert_eq!(mode.name().parse::<RoundingMode>(), Ok(mode));
        }
        assert_eq!(
            "HALF_UP".parse::<RoundingMode>().unwrap_err().to_string(),
            "rounding mode `HALF_UP` is unknown: it must be one of half_up, half_even, floor, ceiling, truncate"
        );
    }
}
