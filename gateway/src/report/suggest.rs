//! Did-you-mean: the allowed name closest to a misspelt key or enum value.

/// The allowed name closest to `written`: at most 2 edits (3 for names of
/// 12 characters or more), compared case-insensitively, and unambiguous
/// (two candidates at the same distance suggest nothing). A name that is
/// already allowed suggests nothing.
pub fn closest<'a, S: AsRef<str>>(written: &str, allowed: &'a [S]) -> Option<&'a str> {
    let limit = if written.chars().count() >= 12 { 3 } else { 2 };
    let written_lower = written.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    let mut tie = false;
    for candidate in allowed {
        let candidate = candidate.as_ref();
        if candidate == written {
            return None;
        }
        let d = edit_distance(&written_lower, &candidate.to_lowercase());
        match best {
            Some((b, _)) if d > b => {}
            Some((b, _)) if d == b => tie = true,
            _ => {
                best = Some((d, candidate));
                tie = false;
            }
        }
    }
    match best {
        Some((d, name)) if d <= limit && !tie => Some(name),
        _ => None,
    }
}

/// ` (did you mean 'name'?)`, or nothing.
pub fn hint<S: AsRef<str>>(written: &str, allowed: &[S]) -> String {
    closest(written, allowed)
        .map(|name| format!(" (did you mean '{name}'?)"))
        .unwrap_or_default()
}

/// Levenshtein distance over characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

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
