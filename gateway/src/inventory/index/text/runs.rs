//! The rows a text query matches, as runs of one facet order, so that a
//! query matching a third of a million vehicles is counted without a visit
//! of each match (docs/benchmarks.md "Text search at a million, as runs").
//!
//! The rows of a snapshot are kept in one order, grouped by (make, model,
//! year, condition, vehicle type, feed availability). The rows of a make
//! word or a model word are then one run (or one per model carrying the
//! word), and a year word one run per model. Every `block` positions the
//! order carries a checkpoint of prefix facet counts and each block's
//! oldest `observed_at`, so the facets of a run are the difference of two
//! prefix counts (as `index::ranges` does for make and price).
//!
//! Each large word (at least [`LARGE`] rows) gets a shape: its exact runs
//! when they are few (on average at least [`RUN_ROWS`] rows a run), else
//! its cover: the (make, model) groups holding any of its rows. A token's
//! match set is the union of its words' runs and of the positions of its
//! small words' rows; a large word without runs (a trim such as `laramie`
//! among the `ram` rows) must lie inside that union, found by its cover,
//! or the token is not answered here and the caller visits the rows as
//! before. The answer is exactly the substring rule's: the words are the
//! ones `TextIndex` finds for the token, and every row of each is in the
//! set.

use super::super::Row;
use super::super::checkpoints::Checkpoints;

/// Rows a word needs to get a shape. Tiny in unit tests so that their
/// small fleets exercise runs and covers.
const LARGE: usize = if cfg!(test) { 2 } else { 512 };
/// Average rows per run for a word's runs to be kept as its shape.
const RUN_ROWS: usize = if cfg!(test) { 2 } else { 32 };
/// Rows of small words a token may hold beyond `len / 32`.
const SMALL_ROWS: usize = if cfg!(test) { 4 } else { 1024 };

/// Half-open position intervals of the facet order, ascending, disjoint
/// and not adjacent.
pub(crate) type Runs = Vec<(u32, u32)>;

#[derive(Debug)]
enum Shape {
    /// Exactly the word's rows.
    Exact(Runs),
    /// A superset of the word's rows: whole (make, model) groups.
    Cover(Runs),
}

/// The facet order with its checkpoints and the shape of each large word.
#[derive(Debug)]
pub(crate) struct FacetOrder {
    /// Rows in facet order, with their prefix facet counts.
    order: Checkpoints,
    /// The position of each row in `order`.
    pos: Vec<u32>,
    /// Word id → shape, for the large words, ascending by word id.
    shapes: Vec<(u32, Shape)>,
}

fn row_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// The runs of the set bits of `bits`.
fn runs_of(bits: &[u64]) -> Runs {
    let mut out: Runs = Vec::new();
    for (w, &word) in bits.iter().enumerate() {
        let mut rest = word;
        while rest != 0 {
            let start = rest.trailing_zeros() as usize;
            let ones = (!(rest >> start)).trailing_zeros() as usize;
            let a = row_u32(w * 64 + start);
            let b = row_u32(w * 64 + start + ones);
            match out.last_mut() {
                Some(last) if last.1 == a => last.1 = b,
                _ => out.push((a, b)),
            }
            rest = if start + ones >= 64 {
                0
            } else {
                rest & !(((1u64 << ones) - 1) << start)
            };
        }
    }
    out
}

impl FacetOrder {
    /// `posting(w)` gives the rows of word `w` (of `words`).
    pub fn build<'p>(
        rows: &[Row],
        makes: usize,
        models: usize,
        words: usize,
        posting: impl Fn(usize) -> &'p [u32],
    ) -> FacetOrder {
        let mut order: Vec<u32> = (0..rows.len()).map(row_u32).collect();
        order.sort_unstable_by_key(|&i| {
            let r = &rows[i as usize];
            (
                r.make,
                r.model,
                r.year,
                r.condition,
                r.vehicle_type,
                r.availability,
                i,
            )
        });
        let mut pos = vec![0u32; rows.len()];
        for (p, &row) in order.iter().enumerate() {
            pos[row as usize] = row_u32(p);
        }
        let mut me = FacetOrder {
            order: Checkpoints::build(rows, makes, models, order),
            pos,
            shapes: Vec::new(),
        };

        // The (make, model) group of each position, as its first position.
        let mut group_start = vec![0u32; rows.len()];
        let mut groups: Vec<(u32, u32)> = Vec::new();
        for p in 0..me.order.order.len() {
            let r = &rows[me.order.order[p] as usize];
            let same = p > 0 && {
                let q = &rows[me.order.order[p - 1] as usize];
                (q.make, q.model) == (r.make, r.model)
            };
            if !same {
                groups.push((row_u32(p), row_u32(p)));
            }
            if let Some(g) = groups.last_mut() {
                g.1 = row_u32(p + 1);
                group_start[p] = row_u32(groups.len() - 1);
            }
        }
        let mut bits = vec![0u64; rows.len().div_ceil(64)];
        for w in 0..words {
            let rows_of = posting(w);
            if rows_of.len() < LARGE {
                continue;
            }
            bits.iter_mut().for_each(|b| *b = 0);
            for &row in rows_of {
                let p = me.pos[row as usize];
                bits[(p >> 6) as usize] |= 1u64 << (p & 63);
            }
            let runs = runs_of(&bits);
            let shape = if runs.len() * RUN_ROWS <= rows_of.len() {
                Shape::Exact(runs)
            } else {
                let mut ids: Vec<u32> = rows_of
                    .iter()
                    .map(|&row| group_start[me.pos[row as usize] as usize])
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                let mut cover: Runs = Vec::new();
                for id in ids {
                    let (a, b) = groups[id as usize];
                    match cover.last_mut() {
                        Some(last) if last.1 == a => last.1 = b,
                        _ => cover.push((a, b)),
                    }
                }
                Shape::Cover(cover)
            };
            me.shapes.push((row_u32(w), shape));
        }
        me.shapes.shrink_to_fit();
        me
    }

    /// The match set of one token whose words are `words` (ascending word
    /// ids, with `posting`), cut to `within` (the set of the tokens already
    /// intersected, `None` for the first): `None` when it cannot be told as
    /// runs (too many rows of small words, or a large word without runs
    /// outside the others' runs).
    ///
    /// A small word's rows outside `within` are dropped before they are
    /// sorted: the intersection would drop them anyway, and a digit token
    /// such as `1500` holds thousands of VINs and stock numbers mostly
    /// outside a make's run (docs/benchmarks.md "Text search at a million:
    /// the digit token").
    pub fn token<'p>(
        &self,
        words: &[usize],
        posting: impl Fn(usize) -> &'p [u32],
        within: Option<&[(u32, u32)]>,
    ) -> Option<Runs> {
        // Rows of small words tolerated per token: each is one position.
        let cap = self.order.order.len() / 32 + SMALL_ROWS;
        let mut runs: Runs = Vec::new();
        let mut covers: Vec<&Runs> = Vec::new();
        let mut small = 0usize;
        for &w in words {
            match self.shapes.binary_search_by_key(&row_u32(w), |s| s.0) {
                Ok(k) => match &self.shapes[k].1 {
                    Shape::Exact(r) => runs.extend_from_slice(r),
                    Shape::Cover(c) => covers.push(c),
                },
                Err(_) => {
                    let rows = posting(w);
                    small += rows.len();
                    if small > cap {
                        return None;
                    }
                    for &row in rows {
                        let p = self.pos[row as usize];
                        if within.is_none_or(|set| in_runs(set, p)) {
                            runs.push((p, p + 1));
                        }
                    }
                }
            }
        }
        runs.sort_unstable();
        let mut merged: Runs = Vec::with_capacity(runs.len());
        for (a, b) in runs {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        // A covered word's rows are in the set if its cover is: only the
        // part of the cover inside `within` is asked, since the small
        // words' rows outside it were dropped.
        for cover in covers {
            let clipped;
            let cover: &[(u32, u32)] = match within {
                Some(set) => {
                    clipped = intersect(cover, set);
                    &clipped
                }
                None => cover,
            };
            for &(a, b) in cover {
                let k = merged.partition_point(|r| r.1 <= a);
                if merged.get(k).is_none_or(|r| r.0 > a || r.1 < b) {
                    return None;
                }
            }
        }
        Some(merged)
    }

    /// Whether row `row` lies in `runs`.
    pub fn contains(&self, runs: &[(u32, u32)], row: usize) -> bool {
        in_runs(runs, self.pos[row])
    }

    /// The rows at positions `a..b`.
    pub fn rows(&self, a: u32, b: u32) -> &[u32] {
        &self.order.order[a as usize..b as usize]
    }

    pub fn buckets(&self) -> Vec<i64> {
        self.order.buckets()
    }

    /// Adds the buckets of the rows at positions `a..b` to `acc` and
    /// returns their oldest `observed_us` (`i64::MAX` when empty).
    pub fn count(&self, rows: &[Row], a: usize, b: usize, acc: &mut [i64]) -> i64 {
        self.order.count(rows, a, b, acc)
    }

    /// Calls `f(facet, code, count)` for each non-zero bucket
    /// ([`Checkpoints::each`]).
    pub fn each(&self, acc: &[i64], f: impl FnMut(usize, i64, u64)) {
        self.order.each(acc, f);
    }

    pub fn heap_bytes(&self) -> usize {
        let shapes: usize = self
            .shapes
            .iter()
            .map(|(_, s)| match s {
                Shape::Exact(r) | Shape::Cover(r) => r.len() * 8 + 32,
            })
            .sum();
        self.order.heap_bytes() + self.pos.len() * 4 + shapes
    }
}

/// Whether position `p` lies in `runs`.
fn in_runs(runs: &[(u32, u32)], p: u32) -> bool {
    let k = runs.partition_point(|r| r.1 <= p);
    runs.get(k).is_some_and(|r| r.0 <= p)
}

/// The positions in both `a` and `b`.
pub(crate) fn intersect(a: &[(u32, u32)], b: &[(u32, u32)]) -> Runs {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if lo < hi {
            out.push((lo, hi));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}
