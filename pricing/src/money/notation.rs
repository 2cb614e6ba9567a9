//! The number notations a feed may use (docs/money.md section 3), named by the
//! caller and never guessed. A module of its own because both the feed
//! adapter (`feed`) and the error that echoes the notation (`error`) name it;
//! with it here neither imports the other's back (no import circles,
//! docs/architecture.md). Public as `pricing::money::FeedNotation`.

use std::fmt;

/// How a feed writes numbers. Chosen by the caller per feed, never guessed.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum FeedNotation {
    /// US/UK style: `,` groups, `.` decimal mark. `42,875.00`, `42875.00`.
    CommaGroupsDotDecimal,
    /// French/Nordic style: space groups, `,` decimal mark. The group
    /// separator may be a space (U+0020), a no-break space (U+00A0) or a
    /// narrow no-break space (U+202F), but one number uses one kind.
    /// `42 875,00`, `42875,00`.
    SpaceGroupsCommaDecimal,
    /// German/Italian style: `.` groups, `,` decimal mark. `42.875,00`.
    DotGroupsCommaDecimal,
}

impl FeedNotation {
    /// The stable name used in error messages, e.g.
    /// `comma_groups_dot_decimal`.
    pub const fn name(self) -> &'static str {
        match self {
            FeedNotation::CommaGroupsDotDecimal => "comma_groups_dot_decimal",
            FeedNotation::SpaceGroupsCommaDecimal => "space_groups_comma_decimal",
            FeedNotation::DotGroupsCommaDecimal => "dot_groups_comma_decimal",
        }
    }

    /// The character that starts the fraction (read by the feed adapter).
    pub(super) const fn decimal_mark(self) -> char {
        match self {
            FeedNotation::CommaGroupsDotDecimal => '.',
            FeedNotation::SpaceGroupsCommaDecimal | FeedNotation::DotGroupsCommaDecimal => ',',
        }
    }

    /// Whether `c` separates digit groups in this notation.
    pub(super) const fn is_group_separator(self, c: char) -> bool {
        match self {
            FeedNotation::CommaGroupsDotDecimal => c == ',',
            FeedNotation::SpaceGroupsCommaDecimal => {
                matches!(c, ' ' | '\u{00A0}' | '\u{202F}')
            }
            FeedNotation::DotGroupsCommaDecimal => c == '.',
        }
    }
}

impl fmt::Display for FeedNotation {
    /// Writes [`FeedNotation::name`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
