//! The plan of a search whose only filters are `make` and the price
//! range, without a text query: its matches are whole ranges of the
//! snapshot's make and price order (`index::ranges`), so the total, the
//! facets and the oldest observation come from that order's checkpoints,
//! and the page from the first matches after the cursor — not from a
//! visit of every match (docs/benchmarks.md "Filters and text on bitmaps,
//! measured").

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::super::index::SnapshotIndex;
use super::plans::first_after;
use super::{
    Cand, Counts, PageKey, Prepared, SearchQuery, Sort, SortKey, offer, row_matches, sort_key,
};

/// What one search asks of each snapshot.
pub(super) struct Ask<'q> {
    pub query: &'q SearchQuery,
    pub sort: Option<Sort>,
    pub after: Option<&'q PageKey>,
    pub now_us: i64,
    pub limit: usize,
}

/// Where a snapshot's matches are added up, across the snapshots.
pub(super) struct Sink<'a, 'h> {
    pub heap: &'h mut BinaryHeap<Cand<'a>>,
    pub counts: &'h mut Counts,
    pub total: &'h mut usize,
    /// Matches after the cursor, counted up to `limit + 1` per snapshot:
    /// the page has a next one exactly when the sum exceeds the page.
    pub after_count: &'h mut usize,
}

impl<'a> Sink<'a, '_> {
    /// Offers the `limit` rows of `rows` first in the default order
    /// (`vehicle_id`) at or after the cursor's position `start`, counting
    /// every row after it: the matches are ranked, not sorted.
    pub fn offer_first_by_vehicle_id(
        &mut self,
        index: &'a SnapshotIndex,
        slot: u32,
        rows: impl Iterator<Item = u32>,
        start: usize,
        limit: usize,
    ) {
        let mut best: BinaryHeap<u32> = BinaryHeap::new();
        for row in rows {
            let rank = index.vehicle_id_rank[row as usize];
            if (rank as usize) < start {
                continue;
            }
            *self.after_count += 1;
            if best.len() < limit {
                best.push(rank);
            } else if best.peek().is_some_and(|worst| rank < *worst) {
                best.pop();
                best.push(rank);
            }
        }
        for rank in best {
            let cand = Cand {
                key: SortKey::default(),
                index,
                slot,
                row: index.by_vehicle_id[rank as usize],
            };
            offer(self.heap, cand, limit);
        }
    }
}

/// Whether the query is answered by make and price ranges.
pub(super) fn applies(query: &SearchQuery) -> bool {
    let f = &query.filters;
    query.tokens.is_empty() && (f.make.is_some() || f.price.is_some()) && f.only_make_and_price()
}

/// Adds the matches of one snapshot to `out`; returns their oldest
/// `observed_us` (`i64::MAX` when none match).
pub(super) fn search_snapshot<'a>(
    index: &'a SnapshotIndex,
    slot: u32,
    p: &Prepared,
    ask: &Ask<'_>,
    mut out: Sink<'a, '_>,
) -> i64 {
    let f = &ask.query.filters;
    let table = index.make_price();
    let rows = &index.rows;
    let price = f
        .price
        .as_ref()
        .map(|p| (p.currency, p.min_minor, p.max_minor));
    let mut buckets = table.empty_buckets();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut oldest = i64::MAX;
    let mut matches = 0usize;
    for make in 0..index.makes.exact.len() {
        if p.make.as_ref().is_some_and(|m| !m[make]) {
            continue;
        }
        let (a, b) = table.range(rows, make, price);
        if b > a {
            oldest = oldest.min(table.count(rows, a, b, &mut buckets));
            matches += b - a;
            ranges.push((a, b));
        }
    }
    if matches == 0 {
        return i64::MAX;
    }
    *out.total += matches;
    let counts = &mut *out.counts;
    table.each(&buckets, |facet, code, n| {
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
    // moves to its checked status (the filter has no availability part).
    for (&row, &code) in &p.availability {
        if row_matches(f, p, index, row, ask.now_us) {
            counts.availability[usize::from(rows[row].availability)] -= 1;
            counts.availability[usize::from(code)] += 1;
        }
    }

    let limit = ask.limit;
    // Walking the default order from the cursor meets a match every
    // `len / matches` rows on average: walk while that finds the page
    // sooner than visiting every match would.
    let walk = (limit + 1).saturating_mul(index.len()) / matches;
    match ask.sort {
        None if walk <= matches => {
            let start = ask.after.map_or(0, |a| first_after(index, a));
            let mut found = 0usize;
            // `row_matches` narrowed to the two filters present.
            let hit = |r: &super::Row| {
                p.make.as_ref().is_none_or(|m| m[r.make as usize])
                    && price.is_none_or(|(currency, min, max)| {
                        r.currency == currency
                            && min.is_none_or(|m| r.price_minor >= m)
                            && max.is_none_or(|m| r.price_minor <= m)
                    })
            };
            for &row in &index.by_vehicle_id[start..] {
                if !hit(&rows[row as usize]) {
                    continue;
                }
                found += 1;
                if found > limit {
                    break;
                }
                let cand = Cand {
                    key: SortKey::default(),
                    index,
                    slot,
                    row,
                };
                offer(out.heap, cand, limit);
            }
            *out.after_count += found;
        }
        None => {
            let start = ask.after.map_or(0, |a| first_after(index, a));
            let rows = ranges.iter().flat_map(|&(a, b)| table.rows(a, b));
            out.offer_first_by_vehicle_id(index, slot, rows.copied(), start, limit);
        }
        Some(sort) => {
            for &(a, b) in &ranges {
                for &row in table.rows(a, b) {
                    let cand = Cand {
                        key: sort_key(Some(sort), &rows[row as usize], ask.now_us),
                        index,
                        slot,
                        row,
                    };
                    if let Some(a) = ask.after
                        && cand.cmp_key(&a.sort, &a.vehicle_id, &a.rooftop_id) != Ordering::Greater
                    {
                        continue;
                    }
                    *out.after_count += 1;
                    offer(out.heap, cand, limit);
                }
            }
        }
    }
    oldest
}
