//! Did-you-mean: the allowed name closest to a misspelt key or enum value.

// One did-you-mean for operator files and tool input alike: it lives
// with the schema vocabulary both explainers share.
pub use crate::catalog::words::{closest, edit_distance, hint};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_name_is_suggested_only_when_unambiguous() {
        let allowed = ["publication", "currency", "odometer_unit"];
        assert_eq!(closest("publicaton", &allowed), Some("publication"));
        assert_eq!(closest("odometer-unit", &allowed), Some("odometer_unit"));
        assert_eq!(closest("Currency", &allowed), Some("currency"));
        assert_eq!(closest("colour", &allowed), None);
        assert_eq!(closest("currency", &allowed), None);
        assert_eq!(closest("ab", &["aa", "bb"]), None, "a tie suggests nothing");
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(hint("cahs", &["cash", "lease"]), " (did you mean 'cash'?)");
    }
}
