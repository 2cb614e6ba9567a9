//! The plan of a text query without filters: its matches are runs of the
//! snapshot's facet order (`index::text::runs`), so the total, the facets
//! and the oldest observation come from that order's checkpoints, and the
//! page from the first matches after the cursor in the requested order
//! (`vehicle_id`, or the sort's order of the snapshot) — not from a visit
//! of every match (docs/benchmarks.md "Text search at a million, as
//! runs").

use std::cmp::Ordering;

use super::super::index::SnapshotIndex;
use super::plans::{first_after, sorted_rows};
use super::ranged::Sink;
use super::{Cand, Filters, PageKey, Prepared, SearchQuery, SortKey, offer, sort_key};

/// Whether the query may be answered as runs: a text query, no filter.
pub(super) fn applies(query: &SearchQuery) -> bool {
    !query.tokens.is_empty() && query.filters == Filters::default()
}

/// Adds the matches of one snapshot to `out` and returns their oldest
/// `observed_us` (`i64::MAX` when none match); `None`, having added
/// nothing, when the query's tokens cannot be told as runs.
pub(super) fn search_snapshot<'a>(
    index: &'a SnapshotIndex,
    slot: u32,
    p: &Prepared,
    query: &SearchQuery,
    after: Option<&PageKey>,
    (limit, now_us): (usize, i64),
    mut out: Sink<'a, '_>,
) -> Option<i64> {
    let rows = &index.rows;
    let (order, runs) = index.text.matching_runs(
        rows,
        index.makes.exact.len(),
        index.models.exact.len(),
        &query.tokens,
    )?;
    let mut buckets = order.buckets();
    let mut oldest = i64::MAX;
    let mut matches = 0usize;
    for &(a, b) in &runs {
        oldest = oldest.min(order.count(rows, a as usize, b as usize, &mut buckets));
        matches += (b - a) as usize;
    }
    if matches == 0 {
        return Some(i64::MAX);
    }
    *out.total += matches;
    let counts = &mut *out.counts;
    order.each(&buckets, |facet, code, n| {
        let at = usize::try_from(code).unwrap_or(0);
        match facet {
            0 => counts.make[at] += n,
            1 => counts.model[at] += n,
            2 => counts.add_year(i32::try_from(code).unwrap_or(0), n),
            3 => counts.condition[at] += n,
            4 => counts.vehicle_type[at] += n,
            _ => counts.availability[at] += n,
        }
    });
    // The checkpoints count the feed's availability; an overlaid match
    // moves to its checked status, as in the bare search.
    for (&row, &code) in &p.availability {
        if order.contains(&runs, row) {
            counts.availability[usize::from(rows[row].availability)] -= 1;
            counts.availability[usize::from(code)] += 1;
        }
    }

    // Walking an order from the cursor meets a match every
    // `len / matches` rows on average: walk while that finds the page
    // sooner than visiting every match would.
    let member = |row: usize| order.contains(&runs, row);
    let dense = (limit + 1).saturating_mul(index.len()) / matches <= matches;
    let Some(sort) = query.sort else {
        let start = after.map_or(0, |a| first_after(index, a));
        if dense {
            let found = walk(&index.by_vehicle_id[start..], member, limit, |row| {
                let cand = Cand {
                    key: SortKey::default(),
                    index,
                    slot,
                    row,
                };
                offer(out.heap, cand, limit);
            });
            *out.after_count += found;
            return Some(oldest);
        }
        let rows = runs.iter().flat_map(|&(a, b)| order.rows(a, b));
        out.offer_first_by_vehicle_id(index, slot, rows.copied(), start, limit);
        return Some(oldest);
    };
    let cand_of = |row: u32| Cand {
        key: sort_key(Some(sort), &rows[row as usize], now_us),
        index,
        slot,
        row,
    };
    let is_after = |cand: &Cand<'_>| {
        after.is_none_or(|a| {
            cand.cmp_key(&a.sort, &a.vehicle_id, &a.rooftop_id) == Ordering::Greater
        })
    };
    // The sort's order of the snapshot (`None` while it depends on `now`).
    match sorted_rows(index, sort, now_us).filter(|_| dense) {
        Some(sorted) => {
            let start = after.map_or(0, |_| {
                sorted.partition_point(|&row| !is_after(&cand_of(row)))
            });
            let found = walk(&sorted[start..], member, limit, |row| {
                offer(out.heap, cand_of(row), limit);
            });
            *out.after_count += found;
        }
        None => {
            for &(a, b) in &runs {
                for &row in order.rows(a, b) {
                    let cand = cand_of(row);
                    if !is_after(&cand) {
                        continue;
                    }
                    *out.after_count += 1;
                    offer(out.heap, cand, limit);
                }
            }
        }
    }
    Some(oldest)
}

/// Offers the rows of `order` that match (`put`), up to `limit` of them,
/// and returns how many it met, at most `limit + 1`: one more than the
/// page tells that the page has a next one.
fn walk(
    order: &[u32],
    matches: impl Fn(usize) -> bool,
    limit: usize,
    mut put: impl FnMut(u32),
) -> usize {
    let mut found = 0usize;
    for &row in order {
        if !matches(row as usize) {
            continue;
        }
        found += 1;
        if found > limit {
            break;
        }
        put(row);
    }
    found
}
