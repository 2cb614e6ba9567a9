//! The single, closed error type of the money engine.

use super::notation::FeedNotation;

/// Every way a money operation can fail.
///
/// The enum is closed (no `#[non_exhaustive]`) so that the gateway can map
/// each variant to exactly one wire error with an exhaustive `match`.
/// Messages are full sentences that say what was refused and which rule
/// refused it. Only the offending amount string or code is echoed, cut to
/// 64 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    /// The currency code is not three upper-case ASCII letters.
    #[error(
        "currency code `{code}` is malformed: an ISO 4217 alphabetic code is three upper-case ASCII letters such as `USD`"
    )]
    MalformedCurrencyCode {
        /// The offending code (cut to 64 characters).
        code: String,
    },
    /// The code is well-formed but is not an ISO 4217 currency.
    #[error("currency code `{code}` is not an ISO 4217 currency")]
    UnknownCurrency {
        /// The offending code.
        code: String,
    },
    /// The currency has no ISO 4217 minor unit (XAU, XDR, XXX, ...).
    #[error(
        "currency {code} has no ISO 4217 minor unit (commodity, unit of account or testing code) and is refused for prices"
    )]
    NoMinorUnit {
        /// The refused code.
        code: &'static str,
    },
    /// The currency was withdrawn from ISO 4217 and has a successor.
    #[error(
        "currency {code} has been withdrawn from ISO 4217 and superseded by {successor}; amounts must be given in {successor}"
    )]
    WithdrawnCurrency {
        /// The withdrawn code.
        code: &'static str,
        /// The code that replaced it.
        successor: &'static str,
    },
    /// A decimal amount string breaks the plain-decimal syntax.
    #[error("amount `{input}` is not a plain decimal number: {rule}")]
    InvalidDecimal {
        /// The offending amount string (cut to 64 characters).
        input: String,
        /// The syntax rule that was broken.
        rule: &'static str,
    },
    /// The amount has more decimals than the currency's minor unit allows.
    #[error("amount `{input}` is not representable in {currency} ({exponent} decimals)")]
    NotRepresentable {
        /// The offending amount string (cut to 64 characters).
        input: String,
        /// The currency code.
        currency: &'static str,
        /// The currency's ISO 4217 exponent.
        exponent: u32,
    },
    /// The amount does not fit in an `i64` count of minor units.
    #[error("amount `{input}` does not fit in a signed 64-bit count of {currency} minor units")]
    AmountOutOfRange {
        /// The offending amount string (cut to 64 characters).
        input: String,
        /// The currency code.
        currency: &'static str,
    },
    /// A feed string breaks the notation the caller named.
    #[error("feed amount `{input}` is not valid in notation {notation}: {rule}")]
    InvalidFeedAmount {
        /// The offending feed string (cut to 64 characters).
        input: String,
        /// The notation the caller named.
        notation: FeedNotation,
        /// The rule that was broken.
        rule: &'static str,
    },
    /// Checked arithmetic left the `i64` minor-unit range.
    #[error(
        "{operation} overflowed the signed 64-bit range of {currency} minor units; money arithmetic is checked and never wraps"
    )]
    Overflow {
        /// The operation (`"addition"`, `"percent"`, ...).
        operation: &'static str,
        /// The currency code.
        currency: &'static str,
    },
    /// Two amounts in different currencies met in one operation.
    #[error(
        "{operation} of a {left} amount and a {right} amount is refused: currencies are never mixed or converted"
    )]
    CurrencyMismatch {
        /// The operation (`"addition"`, `"comparison"`, ...).
        operation: &'static str,
        /// The left-hand currency code.
        left: &'static str,
        /// The right-hand currency code.
        right: &'static str,
    },
    /// A rate or percentage is too large or too precise to apply exactly.
    #[error(
        "{kind} `{rate}` applied to {currency} minor units exceeds the exact 128-bit intermediate; use fewer significant digits"
    )]
    RateTooLarge {
        /// `"rate"` or `"percent"`.
        kind: &'static str,
        /// The rate as written by `rust_decimal`.
        rate: String,
        /// The currency code.
        currency: &'static str,
    },
    /// A rounding mode name is not one of the five named modes.
    #[error(
        "rounding mode `{name}` is unknown: it must be one of half_up, half_even, floor, ceiling, truncate"
    )]
    UnknownRoundingMode {
        /// The offending name (cut to 64 characters).
        name: String,
    },
    /// An allocation was asked for with no weights.
    #[error("allocation needs at least one weight")]
    NoWeights,
    /// Every allocation weight is zero.
    #[error("allocation weights sum to zero; at least one weight must be positive")]
    ZeroWeights,
    /// A split into zero parts was asked for.
    #[error("an amount cannot be split into 0 parts; the number of parts must be at least 1")]
    ZeroParts,
    /// A negative amount where DAP `nonNegativeMoney` is required.
    #[error(
        "amount_minor {amount_minor} {currency} is negative; a nonNegativeMoney amount must be zero or more"
    )]
    Negative {
        /// The refused amount in minor units.
        amount_minor: i64,
        /// The currency code.
        currency: &'static str,
    },
}

/// Cuts an echoed input to 64 characters so that errors never carry a whole
/// payload.
pub(crate) fn excerpt(input: &str) -> String {
    const MAX_CHARS: usize = 64;
    match input.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}…", &input[..cut]),
        None => input.to_owned(),
    }
}
