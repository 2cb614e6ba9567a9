//! Facet lists in response order (docs/inventory.md, DAP `facetValue`).

use std::collections::BTreeMap;

use super::{FacetKey, FacetValue};

/// `facets` as `serde_json::to_string` writes them (a unit test holds it
/// to that), without going through the serializer: a broad search's
/// hundred facet values cost about 540 instructions each that way, 6.5% of
/// the search (docs/benchmarks.md "Page reads from an index image"),
/// mostly for escaping the member names `value` and `count` again for
/// every value and formatting the numbers.
pub fn facets_json(facets: &BTreeMap<&'static str, Vec<FacetValue>>) -> String {
    let mut out = String::with_capacity(64 + facets.values().map(|v| v.len() * 32).sum::<usize>());
    out.push('{');
    for (k, (name, values)) in facets.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        push_json_string(&mut out, name);
        out.push_str(":[");
        for (i, v) in values.iter().enumerate() {
            out.push_str(if i > 0 { ",{\"value\":" } else { "{\"value\":" });
            match &v.value {
                FacetKey::Int(n) => {
                    if *n < 0 {
                        out.push('-');
                    }
                    push_digits(&mut out, n.unsigned_abs());
                }
                FacetKey::Str(s) => push_json_string(&mut out, s),
            }
            out.push_str(",\"count\":");
            push_digits(&mut out, v.count);
            out.push('}');
        }
        out.push(']');
    }
    out.push('}');
    out
}

/// `n` in decimal, as serde_json writes an integer (without the
/// formatting machinery, which cost about 300 instructions a number).
fn push_digits(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        // A digit: `n % 10` is below 10.
        digits[at] = b'0' + u8::try_from(n % 10).unwrap_or(0);
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for d in &digits[at..] {
        out.push(char::from(*d));
    }
}

/// `s` as a JSON string literal as serde_json writes it: as it is when
/// nothing in it needs escaping (no quote, backslash or control
/// character), else escaped by serde_json itself.
fn push_json_string(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        // Serializing a `str` cannot fail.
        out.push_str(&serde_json::to_string(s).unwrap_or_default());
    }
}

pub(super) fn ordered(mut values: Vec<(FacetKey, u64)>) -> Vec<FacetValue> {
    values.retain(|(_, c)| *c > 0);
    values.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    values
        .into_iter()
        .map(|(value, count)| FacetValue { value, count })
        .collect()
}

pub(super) fn coded_facet(table: &[&str], counts: &[u64]) -> Vec<FacetValue> {
    ordered(
        table
            .iter()
            .zip(counts)
            .map(|(v, c)| (FacetKey::Str((*v).to_owned()), *c))
            .collect(),
    )
}

/// Groups `(lower, exact, count)` case-insensitively; each group is shown
/// in its most frequent exact spelling (ties: the smallest spelling).
///
/// By sorting, without a map: a snapshot has tens of makes and models (a
/// few thousand entries for an organization of a hundred rooftops), and a
/// hash map with a vector per group cost about 1,500 instructions an entry
/// (11% of a broad search of 20, docs/benchmarks.md "Page reads from an
/// index image") against a few comparisons an entry for the sort.
/// `ordered` fixes the output order.
pub(super) fn spelled_facet(mut entries: Vec<(&str, &str, u64)>) -> Vec<FacetValue> {
    // Each group together, and in it each spelling's entries together, the
    // spellings ascending.
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0).then_with(|| a.1.cmp(b.1)));
    let mut out: Vec<(FacetKey, u64)> = Vec::new();
    let mut rest = &entries[..];
    while let Some(&(lower, _, _)) = rest.first() {
        let group = rest.iter().take_while(|e| e.0 == lower).count();
        let (this, after) = rest.split_at(group);
        rest = after;
        let mut total = 0u64;
        // Most frequent spelling; ties: the smallest, which comes first.
        let mut best: Option<(&str, u64)> = None;
        let mut spellings = this;
        while let Some(&(_, exact, _)) = spellings.first() {
            let same = spellings.iter().take_while(|e| e.1 == exact).count();
            let n: u64 = spellings[..same].iter().map(|e| e.2).sum();
            spellings = &spellings[same..];
            total += n;
            if best.is_none_or(|(_, m)| n > m) {
                best = Some((exact, n));
            }
        }
        let best = best.map_or("", |(s, _)| s);
        out.push((FacetKey::Str(best.to_owned()), total));
    }
    ordered(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The grouping as first written, with a hash map: the reference
    /// [`spelled_facet`] is tested against.
    fn by_map(entries: Vec<(&str, &str, u64)>) -> Vec<FacetValue> {
        let mut groups: std::collections::HashMap<&str, Vec<(&str, u64)>> =
            std::collections::HashMap::new();
        for (lower, exact, n) in entries {
            let spellings = groups.entry(lower).or_default();
            match spellings.iter_mut().find(|(s, _)| *s == exact) {
                Some((_, c)) => *c += n,
                None => spellings.push((exact, n)),
            }
        }
        let out: Vec<(FacetKey, u64)> = groups
            .into_values()
            .map(|spellings| {
                let total = spellings.iter().map(|(_, n)| n).sum();
                let best = spellings
                    .iter()
                    .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))
                    .map_or("", |(s, _)| *s);
                (FacetKey::Str(best.to_owned()), total)
            })
            .collect();
        ordered(out)
    }

    #[test]
    fn facets_are_written_as_serde_json_writes_them() {
        let strings = [
            "Ford",
            "Citro\u{eb}n \"Ltd\"",
            "back\\slash",
            "tab\there",
            "nul\u{0}and\u{1f}unit\u{7f}del",
            "",
            "\u{2028}line\u{2029}para \u{1f697}",
            "</script>",
        ];
        let mut facets: BTreeMap<&'static str, Vec<FacetValue>> = BTreeMap::new();
        facets.insert("availability", Vec::new());
        facets.insert(
            "make",
            strings
                .iter()
                .zip(0u64..)
                .map(|(s, n)| FacetValue {
                    value: FacetKey::Str((*s).into()),
                    count: n * 1_000_003,
                })
                .collect(),
        );
        facets.insert(
            "year",
            [i64::MIN, -1, 0, 1886, 2026, i64::MAX]
                .into_iter()
                .map(|y| FacetValue {
                    value: FacetKey::Int(y),
                    count: u64::MAX,
                })
                .collect(),
        );
        facets.insert(
            "model",
            vec![FacetValue {
                value: FacetKey::Str("F-150".into()),
                count: 0,
            }],
        );
        assert_eq!(
            facets_json(&facets),
            serde_json::to_string(&facets).unwrap()
        );
        let empty = BTreeMap::new();
        assert_eq!(facets_json(&empty), serde_json::to_string(&empty).unwrap());
    }

    proptest! {
        #[test]
        fn any_string_is_written_as_serde_json_writes_it(s in "\\PC*|[\\x00-\\x7f]{0,12}") {
            let mut out = String::new();
            push_json_string(&mut out, &s);
            prop_assert_eq!(out, serde_json::to_string(&s).unwrap());
        }

        #[test]
        fn sorting_groups_as_the_map_did(
            entries in proptest::collection::vec(
                (0usize..4, 0usize..3, 0u64..5),
                0..40,
            )
        ) {
            // Few groups and spellings, so that groups, repeated spellings
            // (several snapshots), ties and empty counts all occur.
            const SPELLINGS: [[&str; 3]; 4] = [
                ["Ford", "FORD", "ford"],
                ["Kia", "KIA", "kia"],
                ["BMW", "Bmw", "bmw"],
                ["Mini", "MINI", "mini"],
            ];
            let entries: Vec<(&str, &str, u64)> = entries
                .into_iter()
                .map(|(g, s, n)| (SPELLINGS[g][2], SPELLINGS[g][s], n))
                .collect();
            prop_assert_eq!(spelled_facet(entries.clone()), by_map(entries));
        }
    }
}
