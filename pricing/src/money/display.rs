//! Human-readable formatting that follows the currency exponent.

use std::fmt;

use super::Money;
use super::decimal::write_minor;

impl fmt::Display for Money {
    /// The exact format: an optional leading `-`, the integer part with `,`
    /// between groups of three digits, then (only when the exponent is not
    /// 0) `.` and exactly `exponent` digits, then one space and the ISO
    /// code. No symbol, no locale, no padding, no rounding.
    ///
    /// ```
    /// use pricing::{Currency, Money};
    ///
    /// assert_eq!(Money::from_minor(4_287_500, Currency::USD).to_string(), "42,875.00 USD");
    /// assert_eq!(Money::from_minor(1000, Currency::JPY).to_string(), "1,000 JPY");
    /// assert_eq!(Money::from_minor(1234, Currency::KWD).to_string(), "1.234 KWD");
    /// assert_eq!(Money::from_minor(-1, Currency::EUR).to_string(), "-0.01 EUR");
    /// assert_eq!(Money::from_minor(10_000, Currency::CLF).to_string(), "1.0000 CLF");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let currency = self.currency();
        write_minor(f, self.amount_minor(), currency.exponent(), true)?;
        f.write_str(" ")?;
        f.write_str(currency.code())
    }
}
