//! The named adapter for formatted feed amounts such as `$42,875.00` or
//! `42 875,00 €` (docs/money.md section 3). The caller names the notation; the
//! adapter never guesses a locale.

use super::decimal::digits_to_minor;
use super::error::excerpt;
use super::notation::FeedNotation;
use super::{Currency, Money, MoneyError};

/// Parses formatted feed amounts for one currency and one notation.
///
/// Accepted shape, after trimming whitespace (incl. no-break spaces) at both
/// ends:
///
/// ```text
/// ['-'] [marker [spaces]] ['-'] number [[spaces] marker]
/// ```
///
/// - `marker` is one of the currency symbols/codes declared with
///   [`FeedAdapter::with_marker`], as a prefix or a suffix (not both);
///   undeclared symbols are errors.
/// - At most one `-`, before or right after a prefix marker.
/// - `number` is digits with optional group separators, then optionally the
///   decimal mark and at least one digit. Grouping must be well formed: the
///   first group has 1–3 digits, every later group exactly 3, and one number
///   uses one separator character. No grouping after the decimal mark.
///
/// The digits then go through the same exact rule as
/// [`Money::from_decimal_str`] (representable in the exponent, fits in
/// `i64`).
///
/// ```
/// use pricing::{Currency, Money};
/// use pricing::money::{FeedAdapter, FeedNotation};
///
/// let us = FeedAdapter::new(Currency::USD, FeedNotation::CommaGroupsDotDecimal).with_marker("$");
/// assert_eq!(us.parse("$42,875.00")?.amount_minor(), 4_287_500);
/// assert_eq!(us.parse("-$1,000")?.amount_minor(), -100_000);
/// assert!(us.parse("$42,87.00").is_err()); // malformed grouping
///
/// let fr = FeedAdapter::new(Currency::EUR, FeedNotation::SpaceGroupsCommaDecimal).with_marker("€");
/// assert_eq!(fr.parse("42\u{a0}875,00 €")?.amount_minor(), 4_287_500);
/// # Ok::<(), pricing::MoneyError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FeedAdapter {
    currency: Currency,
    notation: FeedNotation,
    markers: Vec<String>,
}

impl FeedAdapter {
    /// An adapter with no currency markers: only bare numbers are accepted
    /// until markers are declared.
    pub fn new(currency: Currency, notation: FeedNotation) -> FeedAdapter {
        FeedAdapter {
            currency,
            notation,
            markers: Vec::new(),
        }
    }

    /// Declares a currency symbol or code the feed may put before or after
    /// the number (`"$"`, `"US$"`, `"USD"`, `"€"`). Blank markers are
    /// ignored. Longer markers are tried first.
    #[must_use]
    pub fn with_marker(mut self, marker: impl Into<String>) -> FeedAdapter {
        let marker = marker.into();
        if !marker.trim().is_empty() && !self.markers.contains(&marker) {
            self.markers.push(marker);
            self.markers.sort_by_key(|m| std::cmp::Reverse(m.len()));
        }
        self
    }

    /// The currency every parsed amount is in.
    pub fn currency(&self) -> Currency {
        self.currency
    }

    /// The notation this adapter reads.
    pub fn notation(&self) -> FeedNotation {
        self.notation
    }

    /// Parses one feed amount.
    ///
    /// # Errors
    /// [`MoneyError::InvalidFeedAmount`] for a shape error;
    /// [`MoneyError::NotRepresentable`] or [`MoneyError::AmountOutOfRange`]
    /// from the exact rule (echoing the feed string).
    pub fn parse(&self, input: &str) -> Result<Money, MoneyError> {
        let invalid = |rule| MoneyError::InvalidFeedAmount {
            input: excerpt(input),
            notation: self.notation,
            rule,
        };
        let mut s = input.trim();
        if s.is_empty() {
            return Err(invalid("the amount is empty"));
        }
        let mut negative = false;
        if let Some(rest) = s.strip_prefix('-') {
            negative = true;
            s = rest;
        }
        let mut prefixed = false;
        if let Some(rest) = self.markers.iter().find_map(|m| s.strip_prefix(m.as_str())) {
            prefixed = true;
            s = rest.trim_start();
        }
        if let Some(rest) = s.strip_prefix('-') {
            if negative {
                return Err(invalid("only one '-' is allowed"));
            }
            negative = true;
            s = rest;
        }
        if !prefixed
            && let Some(rest) = self.markers.iter().find_map(|m| s.strip_suffix(m.as_str()))
        {
            s = rest.trim_end();
        }
        let (int_part, frac_part) = match s.split_once(self.notation.decimal_mark()) {
            Some((int, frac)) => (int, Some(frac)),
            None => (s, None),
        };
        if let Some(bad) = s.chars().find(|&c| {
            !(c.is_ascii_digit()
                || c == self.notation.decimal_mark()
                || self.notation.is_group_separator(c))
        }) {
            return Err(invalid(if bad == '-' || bad == '+' {
                "a sign is only allowed as one leading '-'"
            } else {
                "it contains a character that is neither a digit, a separator of this notation nor a declared currency marker"
            }));
        }
        let frac_digits = match frac_part {
            None => "",
            Some("") => {
                return Err(invalid(
                    "at least one digit is required after the decimal mark",
                ));
            }
            Some(frac) if frac.bytes().all(|b| b.is_ascii_digit()) => frac,
            Some(_) => {
                return Err(invalid(
                    "only digits may follow the decimal mark (one decimal mark, no grouping in the fraction)",
                ));
            }
        };
        let int_digits = self.ungroup(int_part).map_err(invalid)?;
        digits_to_minor(negative, &int_digits, frac_digits, self.currency, input)
            .map(|minor| Money::from_minor(minor, self.currency))
    }

    /// Removes well-formed group separators from the integer part.
    fn ungroup(&self, int_part: &str) -> Result<String, &'static str> {
        if int_part.is_empty() {
            return Err("at least one digit is required before the decimal mark");
        }
        let mut separators = int_part
            .chars()
            .filter(|&c| self.notation.is_group_separator(c));
        let Some(first) = separators.next() else {
            return Ok(int_part.to_owned());
        };
        if separators.any(|c| c != first) {
            return Err("one number must use one kind of group separator");
        }
        let groups: Vec<&str> = int_part.split(first).collect();
        let well_formed = groups.iter().enumerate().all(|(i, g)| {
            let len_ok = if i == 0 {
                (1..=3).contains(&g.len())
            } else {
                g.len() == 3
            };
            len_ok && g.bytes().all(|b| b.is_ascii_digit())
        });
        if well_formed {
            Ok(groups.concat())
        } else {
            Err("group separators must split the integer part into groups of three digits")
        }
    }
}
