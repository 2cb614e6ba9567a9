//! Prefix facet counts over one order of a snapshot's rows, shared by the
//! make → price order (`index::ranges`) and the text facet order
//! (`index::text::runs`): the facets of any range of positions are the
//! difference of two prefix counts, each read from the nearest checkpoint
//! plus fewer than `block / 2` rows (docs/benchmarks.md "Filters and text
//! on bitmaps, measured", "Text search at a million, as runs").
//!
//! Buckets are laid out as makes, models, years, conditions (4), vehicle
//! types (9), feed availability codes (7).

use super::Row;

/// Smallest distance between checkpoints. Unit tests use a tiny one so
/// that their small fleets cross several checkpoints.
const MIN_BLOCK: usize = if cfg!(test) { 4 } else { 256 };
/// Positions between checkpoints per facet bucket (none in unit tests).
const BLOCK_PER_BUCKET: usize = if cfg!(test) { 0 } else { 2 };

/// An order of the rows with a checkpoint of bucket counts every `block`
/// positions and the oldest `observed_us` of each block.
#[derive(Debug)]
pub(crate) struct Checkpoints {
    /// The rows in the caller's order.
    pub(crate) order: Vec<u32>,
    makes: usize,
    models: usize,
    /// Distinct years of the snapshot, ascending.
    years: Vec<i32>,
    dims: usize,
    block: usize,
    /// `dims` counts per checkpoint: the rows of `order[..k * block]`.
    table: Vec<u32>,
    /// Smallest `observed_us` of each block of `block` positions.
    block_min: Vec<i64>,
}

impl Checkpoints {
    /// Checkpoints over `order` (a permutation of the rows of `rows`).
    pub fn build(rows: &[Row], makes: usize, models: usize, order: Vec<u32>) -> Checkpoints {
        let mut years: Vec<i32> = rows.iter().map(|r| r.year).collect();
        years.sort_unstable();
        years.dedup();
        let dims = makes + models + years.len() + 4 + 9 + 7;
        let block = MIN_BLOCK.max(BLOCK_PER_BUCKET * dims);
        let mut me = Checkpoints {
            order,
            makes,
            models,
            years,
            dims,
            block,
            table: Vec::new(),
            block_min: Vec::new(),
        };
        let mut table = Vec::with_capacity((rows.len() / block + 1) * dims);
        let mut running = vec![0u32; dims];
        let mut block_min = Vec::with_capacity(rows.len().div_ceil(block));
        for (p, &row) in me.order.iter().enumerate() {
            if p.is_multiple_of(block) {
                table.extend_from_slice(&running);
                block_min.push(i64::MAX);
            }
            let r = &rows[row as usize];
            for d in me.slots(r) {
                running[d] += 1;
            }
            if let Some(m) = block_min.last_mut() {
                *m = (*m).min(r.observed_us);
            }
        }
        if rows.len().is_multiple_of(block) {
            table.extend_from_slice(&running);
        }
        me.table = table;
        me.block_min = block_min;
        me
    }

    /// The bucket of each facet that row `r` counts in.
    fn slots(&self, r: &Row) -> [usize; 6] {
        let year = self.years.partition_point(|y| *y < r.year);
        let base = self.makes + self.models + self.years.len();
        [
            r.make as usize,
            self.makes + r.model as usize,
            self.makes + self.models + year,
            base + usize::from(r.condition),
            base + 4 + usize::from(r.vehicle_type),
            base + 13 + usize::from(r.availability),
        ]
    }

    /// Zero counts, one per bucket.
    pub fn buckets(&self) -> Vec<i64> {
        vec![0; self.dims]
    }

    /// Adds the buckets of the rows at positions `a..b` to `acc` and
    /// returns their oldest `observed_us` (`i64::MAX` when empty).
    pub fn count(&self, rows: &[Row], a: usize, b: usize, acc: &mut [i64]) -> i64 {
        if b <= a {
            return i64::MAX;
        }
        if b - a <= self.block {
            let mut oldest = i64::MAX;
            for &row in &self.order[a..b] {
                let r = &rows[row as usize];
                for d in self.slots(r) {
                    acc[d] += 1;
                }
                oldest = oldest.min(r.observed_us);
            }
            return oldest;
        }
        self.prefix(rows, b, 1, acc);
        self.prefix(rows, a, -1, acc);
        // Whole blocks inside the range, then the rows at either end.
        let first = a.div_ceil(self.block);
        let last = b / self.block;
        let mut oldest = self.block_min[first..last]
            .iter()
            .copied()
            .min()
            .unwrap_or(i64::MAX);
        let ends = self.order[a..(first * self.block).min(b)]
            .iter()
            .chain(&self.order[(last * self.block).max(a)..b]);
        for &row in ends {
            oldest = oldest.min(rows[row as usize].observed_us);
        }
        oldest
    }

    /// Adds `sign` × the buckets of `order[..p]` to `acc`, from the
    /// nearest checkpoint.
    fn prefix(&self, rows: &[Row], p: usize, sign: i64, acc: &mut [i64]) {
        let k = p / self.block;
        let lo = k * self.block;
        let hi = lo + self.block;
        let (checkpoint, visit, row_sign) = if hi <= self.order.len() && hi - p < p - lo {
            (k + 1, &self.order[p..hi], -sign)
        } else {
            (k, &self.order[lo..p], sign)
        };
        let at = &self.table[checkpoint * self.dims..(checkpoint + 1) * self.dims];
        for (c, t) in acc.iter_mut().zip(at) {
            *c += sign * i64::from(*t);
        }
        for &row in visit {
            for d in self.slots(&rows[row as usize]) {
                acc[d] += row_sign;
            }
        }
    }

    /// Calls `f(facet, code, count)` for each non-zero bucket: facet 0
    /// make id, 1 model id, 2 year, 3 condition, 4 vehicle type, 5
    /// availability code.
    pub fn each(&self, acc: &[i64], mut f: impl FnMut(usize, i64, u64)) {
        let base = self.makes + self.models + self.years.len();
        for (d, &c) in acc.iter().enumerate() {
            let Ok(c) = u64::try_from(c) else { continue };
            if c == 0 {
                continue;
            }
            let (facet, code) = if d < self.makes {
                (0, d)
            } else if d < self.makes + self.models {
                (1, d - self.makes)
            } else if d < base {
                (2, d - self.makes - self.models)
            } else if d < base + 4 {
                (3, d - base)
            } else if d < base + 13 {
                (4, d - base - 4)
            } else {
                (5, d - base - 13)
            };
            let code = if facet == 2 {
                i64::from(self.years[code])
            } else {
                i64::try_from(code).unwrap_or(0)
            };
            f(facet, code, c);
        }
    }

    pub fn heap_bytes(&self) -> usize {
        (self.order.len() + self.table.len() + self.years.len()) * 4 + self.block_min.len() * 8
    }
}
