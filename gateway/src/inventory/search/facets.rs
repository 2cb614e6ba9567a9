//! Facet lists in response order (docs/inventory.md, DAP `facetValue`).

use super::{FacetKey, FacetValue};

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
pub(super) fn spelled_facet(entries: Vec<(&str, &str, u64)>) -> Vec<FacetValue> {
    // Group by lower-case value, then by exact spelling, with a hash map:
    // the entries (one per make/model of each searched snapshot) far
    // outnumber the groups, so hashing them is cheaper than sorting them
    // (docs/benchmarks.md). `ordered` fixes the output order.
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
            // Most frequent spelling; ties: the smallest spelling.
            let best = spellings
                .iter()
                .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))
                .map_or("", |(s, _)| *s);
            (FacetKey::Str(best.to_owned()), total)
        })
        .collect();
    ordered(out)
}
