//! ISO 4217 currencies accepted for prices: a validated wrapper over
//! `iso_currency` (docs/money.md section 1 lists the traps this module absorbs).

use std::fmt;
use std::str::FromStr;

use iso_currency::IntoEnumIterator;

use super::error::{MoneyError, excerpt};

/// Codes that `iso_currency` 0.7.1 flags as superseded although ISO 4217
/// still lists them as active. `is_superseded()` alone must not be used to
/// refuse input (docs/money.md section 1).
const ACTIVE_DESPITE_SUPERSEDED_FLAG: &[iso_currency::Currency] = &[
    // VES (928, bolívar soberano): the crate's Wikipedia-derived table marks
    // it `superseded(VED)`, but ISO 4217 List One still carries VES as an
    // active code next to VED (926, bolívar digital).
    iso_currency::Currency::VES,
];

/// An ISO 4217 currency that may carry a price.
///
/// Construction guarantees two rules (docs/money.md section 1):
/// - the currency has a defined minor unit, so [`Currency::exponent`] is one
///   of 0, 2, 3 or 4 (XAU, XDR, XXX and the like are refused);
/// - the currency is active: a withdrawn code such as HRK is refused with an
///   error naming its successor (EUR). VES is explicitly kept active.
///
/// `Display` prints the code (`USD`), never the English name that
/// `iso_currency` prints.
///
/// ```
/// use pricing::{Currency, MoneyError};
///
/// let kwd = Currency::from_code("KWD")?;
/// assert_eq!((kwd.code(), kwd.exponent()), ("KWD", 3));
/// assert_eq!(Currency::JPY.exponent(), 0);
/// assert_eq!(kwd.to_string(), "KWD");
/// assert_eq!(
///     Currency::from_code("HRK"),
///     Err(MoneyError::WithdrawnCurrency { code: "HRK", successor: "EUR" })
/// );
/// assert_eq!(Currency::from_code("XAU"), Err(MoneyError::NoMinorUnit { code: "XAU" }));
/// # Ok::<(), MoneyError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Currency {
    iso: iso_currency::Currency,
    exponent: u8,
}

impl Currency {
    /// United States dollar (exponent 2).
    pub const USD: Currency = Currency::known(iso_currency::Currency::USD, 2);
    /// Euro (exponent 2).
    pub const EUR: Currency = Currency::known(iso_currency::Currency::EUR, 2);
    /// Pound sterling (exponent 2).
    pub const GBP: Currency = Currency::known(iso_currency::Currency::GBP, 2);
    /// Canadian dollar (exponent 2).
    pub const CAD: Currency = Currency::known(iso_currency::Currency::CAD, 2);
    /// Japanese yen (exponent 0).
    pub const JPY: Currency = Currency::known(iso_currency::Currency::JPY, 0);
    /// Kuwaiti dinar (exponent 3).
    pub const KWD: Currency = Currency::known(iso_currency::Currency::KWD, 3);
    /// Chilean Unidad de Fomento (exponent 4).
    pub const CLF: Currency = Currency::known(iso_currency::Currency::CLF, 4);

    /// Builds a constant; the unit test `constants_match_iso_data` checks the
    /// exponents against the ISO table.
    const fn known(iso: iso_currency::Currency, exponent: u8) -> Currency {
        Currency { iso, exponent }
    }

    /// Looks up an ISO 4217 alphabetic code such as `"USD"`.
    ///
    /// The code must be exactly three upper-case ASCII letters (DAP
    /// `currency` pattern `^[A-Z]{3}$`); lower case is refused, not folded.
    ///
    /// # Errors
    /// [`MoneyError::MalformedCurrencyCode`], [`MoneyError::UnknownCurrency`],
    /// [`MoneyError::NoMinorUnit`] or [`MoneyError::WithdrawnCurrency`].
    ///
    /// ```
    /// use pricing::Currency;
    /// assert_eq!(Currency::from_code("USD"), Ok(Currency::USD));
    /// assert!(Currency::from_code("usd").is_err());
    /// ```
    pub fn from_code(code: &str) -> Result<Currency, MoneyError> {
        if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(MoneyError::MalformedCurrencyCode {
                code: excerpt(code),
            });
        }
        let iso =
            iso_currency::Currency::from_code(code).ok_or_else(|| MoneyError::UnknownCurrency {
                code: code.to_owned(),
            })?;
        Currency::from_iso(iso)
    }

    /// Validates an `iso_currency` value against the two rules above.
    ///
    /// # Errors
    /// [`MoneyError::NoMinorUnit`] or [`MoneyError::WithdrawnCurrency`].
    ///
    /// ```
    /// use pricing::Currency;
    /// assert_eq!(Currency::from_iso(iso_currency::Currency::VES)?.code(), "VES");
    /// assert!(Currency::from_iso(iso_currency::Currency::XXX).is_err());
    /// # Ok::<(), pricing::MoneyError>(())
    /// ```
    pub fn from_iso(iso: iso_currency::Currency) -> Result<Currency, MoneyError> {
        let Some(exponent) = iso.exponent() else {
            return Err(MoneyError::NoMinorUnit { code: iso.code() });
        };
        if let Some(successor) = iso.is_superseded()
            && !ACTIVE_DESPITE_SUPERSEDED_FLAG.contains(&iso)
        {
            return Err(MoneyError::WithdrawnCurrency {
                code: iso.code(),
                successor: successor.code(),
            });
        }
        // ISO 4217 exponents are 0..=4; anything else would be a data error
        // in the table, so refuse it as "no usable minor unit".
        match u8::try_from(exponent) {
            Ok(exponent @ 0..=4) => Ok(Currency { iso, exponent }),
            _ => Err(MoneyError::NoMinorUnit { code: iso.code() }),
        }
    }

    /// The three-letter ISO 4217 code, e.g. `"USD"`.
    pub fn code(self) -> &'static str {
        self.iso.code()
    }

    /// The ISO 4217 exponent: the number of decimals of one minor unit
    /// (JPY 0, USD 2, KWD 3, CLF 4).
    pub fn exponent(self) -> u32 {
        u32::from(self.exponent)
    }

    /// The underlying `iso_currency` value.
    pub fn iso(self) -> iso_currency::Currency {
        self.iso
    }

    /// Every currency accepted for prices, in `iso_currency` order: all ISO
    /// 4217 entries with a minor unit that are not withdrawn (VES included).
    ///
    /// ```
    /// use pricing::Currency;
    /// let all: Vec<Currency> = Currency::all_active().collect();
    /// assert!(all.contains(&Currency::USD) && all.contains(&Currency::CLF));
    /// assert!(all.iter().all(|c| c.code() != "HRK" && c.code() != "XAU"));
    /// ```
    pub fn all_active() -> impl Iterator<Item = Currency> {
        iso_currency::Currency::iter().filter_map(|iso| Currency::from_iso(iso).ok())
    }
}

impl fmt::Display for Currency {
    /// Writes the ISO code (`USD`), not the English name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl fmt::Debug for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl FromStr for Currency {
    type Err = MoneyError;

    /// Same as [`Currency::from_code`].
    fn from_str(code: &str) -> Result<Currency, MoneyError> {
        Currency::from_code(code)
    }
}

impl TryFrom<iso_currency::Currency> for Currency {
    type Error = MoneyError;

    /// Same as [`Currency::from_iso`].
    fn try_from(iso: iso_currency::Currency) -> Result<Currency, MoneyError> {
        Currency::from_iso(iso)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_match_iso_data() {
        for c in [
            Currency::USD,
            Currency::EUR,
            Currency::GBP,
            Currency::CAD,
            Currency::JPY,
            Currency::KWD,
            Currency::CLF,
        ] {
            assert_eq!(Currency::from_iso(c.iso()), Ok(c), "{}", c.code());
        }
    }
}
