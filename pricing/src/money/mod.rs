//! Exact minor-unit money (docs/money.md, DAP-CORE-018..020).
//!
//! - [`Money`]: an `i64` count of minor units in a validated [`Currency`].
//! - [`Money::from_decimal_str`]: the exact decimal-string rule;
//!   [`FeedAdapter`]: the named adapter for formatted feed strings.
//! - Checked arithmetic ([`Money::checked_add`], ...): overflow and currency
//!   mismatch are errors.
//! - [`Money::percent`] / [`Money::apply_rate`]: rate math that rounds once
//!   with a named [`RoundingMode`] and describes the rounding ([`Rounded`]).
//! - [`Money::allocate`] / [`Money::split`]: largest-remainder allocation.
//! - [`Amount`] / [`AmountSum`]: unknown is never zero.
//! - Serde: the DAP wire shape `{"amount_minor": 2499500, "currency": "USD"}`
//!   and [`NonNegativeMoney`].
//!
//! No floats anywhere; `scripts/check-pricing-purity` enforces it.

mod allocate;
mod currency;
mod decimal;
mod display;
mod error;
mod feed;
mod non_negative;
mod notation;
mod rounding;
mod unknown;
mod wire;

pub use currency::Currency;
pub use error::MoneyError;
pub use feed::FeedAdapter;
pub use non_negative::NonNegativeMoney;
pub use notation::FeedNotation;
pub use rounding::{Rounded, RoundingMode};
pub use unknown::{Amount, AmountSum, UnknownPart};

use std::cmp::Ordering;

use rust_decimal::Decimal;

/// An exact amount of money: an `i64` count of minor units of a [`Currency`].
///
/// `amount_minor` is in units of `10^-exponent` (cents for USD, yen for JPY,
/// fils for KWD). Values are `Copy`; every operation is checked and never
/// changes the currency. There is deliberately no `Ord`: amounts in
/// different currencies are not comparable (see [`Money::checked_cmp`]).
///
/// ```
/// use pricing::{Currency, Money};
///
/// let price = Money::from_decimal_str("24995.00", Currency::USD)?;
/// assert_eq!(price.amount_minor(), 2_499_500);
/// assert_eq!(price.to_decimal_string(), "24995.00");
/// assert_eq!(price.to_string(), "24,995.00 USD");
/// # Ok::<(), pricing::MoneyError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Money {
    amount_minor: i64,
    currency: Currency,
}

impl Money {
    /// Wraps a count of minor units (`2499500` USD is 24,995.00 USD).
    ///
    /// ```
    /// use pricing::{Currency, Money};
    /// assert_eq!(Money::from_minor(1000, Currency::JPY).to_string(), "1,000 JPY");
    /// ```
    pub const fn from_minor(amount_minor: i64, currency: Currency) -> Money {
        Money {
            amount_minor,
            currency,
        }
    }

    /// Like [`Money::from_minor`] with the currency given as an ISO code.
    ///
    /// # Errors
    /// Any currency error of [`Currency::from_code`].
    ///
    /// ```
    /// use pricing::Money;
    /// assert_eq!(Money::try_new(1234, "KWD")?.to_string(), "1.234 KWD");
    /// # Ok::<(), pricing::MoneyError>(())
    /// ```
    pub fn try_new(amount_minor: i64, currency_code: &str) -> Result<Money, MoneyError> {
        Ok(Money::from_minor(
            amount_minor,
            Currency::from_code(currency_code)?,
        ))
    }

    /// Zero in `currency`.
    pub const fn zero(currency: Currency) -> Money {
        Money::from_minor(0, currency)
    }

    /// The amount in minor units.
    pub const fn amount_minor(self) -> i64 {
        self.amount_minor
    }

    /// The currency.
    pub const fn currency(self) -> Currency {
        self.currency
    }

    /// `true` when the amount is below zero.
    pub const fn is_negative(self) -> bool {
        self.amount_minor < 0
    }

    /// `true` when the amount is exactly zero (a *known* zero; an unknown
    /// amount is an [`Amount::Unknown`], never zero).
    pub const fn is_zero(self) -> bool {
        self.amount_minor == 0
    }

    /// Parses a plain decimal string exactly (the DAP money rule).
    ///
    /// Syntax: optional leading `-`, ASCII digits, optionally `.` and more
    /// ASCII digits. Refused: `+`, exponents, whitespace, thousands
    /// separators, `.5`, `5.`. The value must be representable in the
    /// currency's exponent; trailing zeros beyond it are fine.
    ///
    /// # Errors
    /// [`MoneyError::InvalidDecimal`], [`MoneyError::NotRepresentable`],
    /// [`MoneyError::AmountOutOfRange`].
    ///
    /// ```
    /// use pricing::{Currency, Money};
    ///
    /// let minor = |s, c| Money::from_decimal_str(s, c).map(Money::amount_minor);
    /// assert_eq!(minor("24995.00", Currency::USD), Ok(2_499_500));
    /// assert_eq!(minor("1000", Currency::JPY), Ok(1000));
    /// assert_eq!(minor("1.234", Currency::KWD), Ok(1234));
    /// assert_eq!(minor("10.010", Currency::USD), Ok(1001));
    /// assert_eq!(minor("-0.01", Currency::EUR), Ok(-1));
    /// assert_eq!(
    ///     minor("10.001", Currency::USD).unwrap_err().to_string(),
    ///     "amount `10.001` is not representable in USD (2 decimals)"
    /// );
    /// ```
    pub fn from_decimal_str(input: &str, currency: Currency) -> Result<Money, MoneyError> {
        decimal::parse_plain(input, currency).map(|minor| Money::from_minor(minor, currency))
    }

    /// Converts a `rust_decimal` value exactly (no rounding).
    ///
    /// # Errors
    /// [`MoneyError::NotRepresentable`] when the value has more significant
    /// decimals than the exponent; [`MoneyError::AmountOutOfRange`].
    ///
    /// ```
    /// use pricing::{Currency, Money};
    /// use rust_decimal::Decimal;
    ///
    /// let d = Decimal::new(10010, 3); // 10.010
    /// assert_eq!(Money::from_decimal(d, Currency::USD)?.amount_minor(), 1001);
    /// assert!(Money::from_decimal(Decimal::new(15, 1), Currency::JPY).is_err());
    /// # Ok::<(), pricing::MoneyError>(())
    /// ```
    pub fn from_decimal(value: Decimal, currency: Currency) -> Result<Money, MoneyError> {
        let normalized = value.normalize();
        let exponent = currency.exponent();
        let text = || normalized.to_string();
        if normalized.scale() > exponent {
            return Err(MoneyError::NotRepresentable {
                input: text(),
                currency: currency.code(),
                exponent,
            });
        }
        // Exact: multiply the mantissa up instead of calling `rescale`,
        // which rounds silently.
        let factor = 10_i128.pow(exponent - normalized.scale());
        normalized
            .mantissa()
            .checked_mul(factor)
            .and_then(|m| i64::try_from(m).ok())
            .map(|minor| Money::from_minor(minor, currency))
            .ok_or_else(|| MoneyError::AmountOutOfRange {
                input: text(),
                currency: currency.code(),
            })
    }

    /// The exact value in major units (`2499500` USD -> `24995.00`).
    ///
    /// ```
    /// use pricing::{Currency, Money};
    /// assert_eq!(Money::from_minor(1234, Currency::KWD).to_decimal().to_string(), "1.234");
    /// ```
    pub fn to_decimal(self) -> Decimal {
        Decimal::new(self.amount_minor, self.currency.exponent())
    }

    /// The plain decimal string, with exactly `exponent` decimals and no
    /// grouping or code: `"24995.00"`, `"1000"`, `"-0.01"`. It parses back
    /// with [`Money::from_decimal_str`] to the same value.
    pub fn to_decimal_string(self) -> String {
        decimal::format_minor(self.amount_minor, self.currency.exponent(), false)
    }

    fn same_currency(self, rhs: Money, operation: &'static str) -> Result<(), MoneyError> {
        if self.currency == rhs.currency {
            Ok(())
        } else {
            Err(MoneyError::CurrencyMismatch {
                operation,
                left: self.currency.code(),
                right: rhs.currency.code(),
            })
        }
    }

    fn overflow(self, operation: &'static str) -> MoneyError {
        MoneyError::Overflow {
            operation,
            currency: self.currency.code(),
        }
    }

    /// `self + rhs`.
    ///
    /// # Errors
    /// [`MoneyError::CurrencyMismatch`] or [`MoneyError::Overflow`].
    ///
    /// ```
    /// use pricing::{Currency, Money};
    /// let a = Money::from_minor(150, Currency::USD);
    /// assert_eq!(a.checked_add(a)?.amount_minor(), 300);
    /// assert!(a.checked_add(Money::from_minor(1, Currency::EUR)).is_err());
    /// assert!(Money::from_minor(i64::MAX, Currency::USD).checked_add(Money::from_minor(1, Currency::USD)).is_err());
    /// # Ok::<(), pricing::MoneyError>(())
    /// ```
    pub fn checked_add(self, rhs: Money) -> Result<Money, MoneyError> {
        self.same_currency(rhs, "addition")?;
        self.amount_minor
            .checked_add(rhs.amount_minor)
            .map(|m| Money::from_minor(m, self.currency))
            .ok_or_else(|| self.overflow("addition"))
    }

    /// `self - rhs`.
    ///
    /// # Errors
    /// [`MoneyError::CurrencyMismatch`] or [`MoneyError::Overflow`].
    pub fn checked_sub(self, rhs: Money) -> Result<Money, MoneyError> {
        self.same_currency(rhs, "subtraction")?;
        self.amount_minor
            .checked_sub(rhs.amount_minor)
            .map(|m| Money::from_minor(m, self.currency))
            .ok_or_else(|| self.overflow("subtraction"))
    }

    /// `self * factor` for an integer factor (e.g. a quantity).
    ///
    /// # Errors
    /// [`MoneyError::Overflow`].
    pub fn checked_mul(self, factor: i64) -> Result<Money, MoneyError> {
        self.amount_minor
            .checked_mul(factor)
            .map(|m| Money::from_minor(m, self.currency))
            .ok_or_else(|| self.overflow("multiplication"))
    }

    /// `-self`.
    ///
    /// # Errors
    /// [`MoneyError::Overflow`] for `i64::MIN` minor units.
    pub fn checked_neg(self) -> Result<Money, MoneyError> {
        self.amount_minor
            .checked_neg()
            .map(|m| Money::from_minor(m, self.currency))
            .ok_or_else(|| self.overflow("negation"))
    }

    /// `|self|`.
    ///
    /// # Errors
    /// [`MoneyError::Overflow`] for `i64::MIN` minor units.
    pub fn checked_abs(self) -> Result<Money, MoneyError> {
        self.amount_minor
            .checked_abs()
            .map(|m| Money::from_minor(m, self.currency))
            .ok_or_else(|| self.overflow("absolute value"))
    }

    /// Sums `items`, all of which must be in `currency`. An empty iterator
    /// gives zero (a known zero: to sum possibly unknown amounts use
    /// [`AmountSum`]).
    ///
    /// # Errors
    /// [`MoneyError::CurrencyMismatch`] or [`MoneyError::Overflow`].
    ///
    /// ```
    /// use pricing::{Currency, Money};
    /// let fees = [Money::from_minor(49_900, Currency::USD), Money::from_minor(8_500, Currency::USD)];
    /// assert_eq!(Money::checked_sum(Currency::USD, fees)?.to_string(), "584.00 USD");
    /// # Ok::<(), pricing::MoneyError>(())
    /// ```
    pub fn checked_sum<I>(currency: Currency, items: I) -> Result<Money, MoneyError>
    where
        I: IntoIterator<Item = Money>,
    {
        items
            .into_iter()
            .try_fold(Money::zero(currency), Money::checked_add)
    }

    /// Compares two amounts of the same currency.
    ///
    /// # Errors
    /// [`MoneyError::CurrencyMismatch`].
    pub fn checked_cmp(self, rhs: Money) -> Result<Ordering, MoneyError> {
        self.same_currency(rhs, "comparison")?;
        Ok(self.amount_minor.cmp(&rhs.amount_minor))
    }
}
