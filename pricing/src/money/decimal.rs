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
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_minor(&mut out, amount_minor, exponent, group);
    out
}

/// [`format_minor`] written to `out` without an allocation: a disclosure
/// formats dozens of amounts (its text, the evaluation's trace).
pub(crate) fn write_minor(
    out: &mut impl std::fmt::Write,
    amount_minor: i64,
    exponent: u32,
    group: bool,
) -> std::fmt::Result {
    let magnitude = amount_minor.unsigned_abs();
    let unit = 10_u64.pow(exponent);
    let (mut int, mut frac) = (magnitude / unit, magnitude % unit);
    // The integer part's digits, least significant first (u64: at most 20).
    let mut digits = [0_u8; 20];
    let mut count = 0;
    loop {
        digits[count] = b'0' + (int % 10) as u8;
        count += 1;
        int /= 10;
        if int == 0 {
            break;
        }
    }
    // Sign, 20 digits, 6 separators, the point and the decimals (the
    // exponent of a u64 power of ten is at most 19).
    let mut buf = [0_u8; 48];
    let mut len = 0;
    if amount_minor < 0 {
        buf[len] = b'-';
        len += 1;
    }
    for place in (0..count).rev() {
        buf[len] = digits[place];
        len += 1;
        if group && place > 0 && place % 3 == 0 {
            buf[len] = b',';
            len += 1;
        }
    }
    if exponent > 0 {
        buf[len] = b'.';
        len += 1;
        let end = len + exponent as usize;
        for slot in buf[len..end].iter_mut().rev() {
            *slot = b'0' + (frac % 10) as u8;
            frac /= 10;
        }
        len = end;
    }
    // Only ASCII digits, '-', ',' and '.' were written.
    out.write_str(std::str::from_utf8(&buf[..len]).unwrap_or_default())
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
        assert_eq!(format_minor(-5, 3, true), "-0.005");
        assert_eq!(format_minor(1_234_567_890, 0, true), "1,234,567,890");
        assert_eq!(format_minor(123_456, 0, true), "123,456");
        assert_eq!(format_minor(i64::MIN, 18, true), "-9.223372036854775808");
    }
}
