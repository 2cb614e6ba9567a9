//! Exact conversion between plain decimal strings and minor units
//! (DAP-CORE-018..020, docs/money.md section 2). No floats, no rounding.

use super::Currency;
use super::error::{MoneyError, excerpt};

/// Validates a plain decimal string and converts it to minor units.
///
/// Syntax: an optional leading `-`, one or more ASCII digits, then optionally
/// a `.` and one or more ASCII digits. Nothing else: no `+`, exponent,
/// whitespace or grouping separator.
pub(crate) fn parse_plain(input: &str, currency: Currency) -> Result<i64, MoneyError> {
    let invalid = |rule| MoneyError::InvalidDecimal {
        input: excerpt(input),
        rule,
    };
    if input.is_empty() {
        return Err(invalid("the string is empty"));
    }
    if input.starts_with('+') {
        return Err(invalid("a leading '+' is not allowed"));
    }
    let (negative, body) = match input.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, input),
    };
    for c in body.chars() {
        match c {
            '0'..='9' | '.' => {}
            'e' | 'E' => return Err(invalid("exponents are not allowed")),
            ',' | '_' | '\'' => {
                return Err(invalid(
                    "thousands separators are not allowed (formatted feed strings go through the feed adapter)",
                ));
            }
            '-' | '+' => return Err(invalid("a sign is only allowed as a single leading '-'")),
            c if c.is_whitespace() => return Err(invalid("whitespace is not allowed")),
            _ => {
                return Err(invalid(
                    "only ASCII digits, one leading '-' and one '.' are allowed",
                ));
            }
        }
    }
    let (int_digits, frac_digits) = match body.split_once('.') {
        Some((_, frac)) if frac.contains('.') => {
            return Err(invalid("more than one decimal point"));
        }
        Some((int, frac)) => (int, frac),
        None => (body, ""),
    };
    if int_digits.is_empty() {
        return Err(invalid(
            "at least one digit is required before the decimal point",
        ));
    }
    if body.contains('.') && frac_digits.is_empty() {
        return Err(invalid(
            "at least one digit is required after the decimal point",
        ));
    }
    digits_to_minor(negative, int_digits, frac_digits, currency, input)
}

/// Converts already validated ASCII digit runs to minor units, exactly.
///
/// Trailing zeros of the fraction are insignificant (`"10.010"` USD is
/// 1001); any other digit beyond the exponent is an error. `original` is the
/// string echoed in errors.
pub(crate) fn digits_to_minor(
    negative: bool,
    int_digits: &str,
    frac_digits: &str,
    currency: Currency,
    original: &str,
) -> Result<i64, MoneyError> {
    let exponent = currency.exponent();
    let significant_frac = frac_digits.trim_end_matches('0');
    if significant_frac.len() > exponent as usize {
        return Err(MoneyError::NotRepresentable {
            input: excerpt(original),
            currency: currency.code(),
            exponent,
        });
    }
    let out_of_range = || MoneyError::AmountOutOfRange {
        input: excerpt(original),
        currency: currency.code(),
    };
    let mut magnitude: i128 = 0;
    let padding = exponent as usize - significant_frac.len();
    let digits = int_digits
        .bytes()
        .chain(significant_frac.bytes())
        .chain(std::iter::repeat_n(b'0', padding));
    for d in digits {
        magnitude = magnitude
            .checked_mul(10)
            .and_then(|m| m.checked_add(i128::from(d - b'0')))
            .ok_or_else(out_of_range)?;
    }
    let signed = if negative { -magnitude } else { magnitude };
    i64::try_from(signed).map_err(|_| out_of_range())
}

/// Writes minor units as a plain decimal string with exactly `exponent`
/// decimals: `-0.01`, `1000`, `1.234`. `group` inserts `,` every three
/// integer digits.
pub(crate) fn format_minor(amount_minor: i64, exponent: u32, group: bool) -> String {
    let magnitude = amount_minor.unsigned_abs();
    let unit = 10_u64.pow(exponent);
    let int_part = (magnitude / unit).to_string();
    let mut out = String::with_capacity(int_part.len() * 4 / 3 + 8);
    if amount_minor < 0 {
        out.push('-');
    }
    if group {
        for (i, c) in int_part.chars().enumerate() {
            if i > 0 && (int_part.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
    } else {
        out.push_str(&int_part);
    }
    if exponent > 0 {
        let frac = magnitude % unit;
        out.push('.');
        out.push_str(&format!("{frac:0width$}", width = exponent as usize));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouping() {
        assert_eq!(format_minor(0, 2, true), "0.00");
        assert_eq!(format_minor(99_999, 2, true), "999.99");
        assert_eq!(format_minor(100_000, 2, true), "1,000.00");
        assert_eq!(
            format_minor(i64::MIN, 0, true),
            "-9,223,372,036,854,775,808"
        );
        assert_eq!(format_minor(i64::MAX, 4, false), "922337203685477.5807");
    }
}
