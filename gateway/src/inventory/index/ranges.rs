//! Facet counts of a make and advertised-price filter without visiting
//! its matches.
//!
//! The rows of a snapshot are kept in one order, grouped by make, then by
//! the advertised price's currency and amount: the rows of one make priced
//! in one currency within `[min, max]` are then one contiguous range of
//! that order, found by binary search. Every `block` positions the order
//! carries a checkpoint: how many rows before it fall in each facet bucket
//! (make, model, year, condition, vehicle type, feed availability) and the
//! oldest `observed_at` of each block. The facets of a range are the
//! difference of two prefix counts, each read from the nearest checkpoint
//! plus fewer than `block / 2` rows, so a filter matching 700,000 of a
//! million vehicles is counted from two checkpoints instead of 700,000
//! rows (docs/benchmarks.md "Filters and text on bitmaps, measured").
//!
//! Memory: 4 bytes a row for the order, plus `4 × buckets / block` bytes a
//! row for the checkpoints (`block` is at least twice the number of
//! buckets, so at most 2 bytes a row).

use super::Row;

/// Smallest distance between checkpoints. Unit tests use a tiny one so
/// that their small fleets cross several checkpoints.
const MIN_BLOCK: usize = if cfg!(test) { 4 } else { 256 };
/// Positions between checkpoints per facet bucket (none in unit tests).
const BLOCK_PER_BUCKET: usize = if cfg!(test) { 0 } else { 2 };

/// Bucket counts of a set of rows, laid out as [`MakePriceOrder`]'s
/// checkpoints: makes, models, years, conditions, vehicle types, feed
/// availability codes.
#[derive(Debug, Clone)]
pub(crate) struct Buckets {
    pub counts: Vec<i64>,
}

/// The rows grouped by make then price, with prefix facet counts.
#[derive(Debug)]
pub(crate) struct MakePriceOrder {
    /// Rows ordered by (make, currency, amount, row).
    order: Vec<u32>,
    /// `order[make_ends[m - 1]..make_ends[m]]` are the rows of make `m`.
    make_ends: Vec<u32>,
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

impl MakePriceOrder {
    pub fn build(rows: &[Row], makes: usize, models: usize) -> MakePriceOrder {
        let mut years: Vec<i32> = rows.iter().map(|r| r.year).collect();
        years.sort_unstable();
        years.dedup();
        let dims = makes + models + years.len() + 4 + 9 + 7;
        let block = MIN_BLOCK.max(BLOCK_PER_BUCKET * dims);
        let mut order: Vec<u32> = (0..rows.len()).map(row_u32).collect();
        order.sort_unstable_by_key(|&i| {
            let r = &rows[i as usize];
            (r.make, r.currency, r.price_minor, i)
        });
        let mut make_ends = vec![0u32; makes];
        for r in rows {
            make_ends[r.make as usize] += 1;
        }
        let mut acc = 0u32;
        for e in &mut make_ends {
            acc += *e;
            *e = acc;
        }
        let mut me = MakePriceOrder {
            order,
            make_ends,
            makes,
            models,
            years,
            dims,
            block,
            table: Vec::new(),
            block_min: Vec::new(),
        };
        let checkpoints = rows.len() / block + 1;
        let mut table = Vec::with_capacity(checkpoints * dims);
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

    pub fn empty_buckets(&self) -> Buckets {
        Buckets {
            counts: vec![0; self.dims],
        }
    }

    /// Positions of the rows of `make` priced in `currency` within
    /// `[min, max]` (inclusive; an absent bound is open); all rows of the
    /// make without a price filter.
    pub fn range(
        &self,
        rows: &[Row],
        make: usize,
        price: Option<(u32, Option<i64>, Option<i64>)>,
    ) -> (usize, usize) {
        let a = if make == 0 {
            0
        } else {
            self.make_ends[make - 1] as usize
        };
        let b = self.make_ends[make] as usize;
        let Some((currency, min, max)) = price else {
            return (a, b);
        };
        let key = |p: &u32| {
            let r = &rows[*p as usize];
            (r.currency, r.price_minor)
        };
        let seg = &self.order[a..b];
        let lo = seg.partition_point(|p| key(p) < (currency, min.unwrap_or(i64::MIN)));
        let hi = seg.partition_point(|p| key(p) <= (currency, max.unwrap_or(i64::MAX)));
        (a + lo, a + hi.max(lo))
    }

    /// The rows at positions `a..b`.
    pub fn rows(&self, a: usize, b: usize) -> &[u32] {
        &self.order[a..b]
    }

    /// Adds the buckets of the rows at positions `a..b` to `acc` and
    /// returns their oldest `observed_us` (`i64::MAX` when empty).
    pub fn count(&self, rows: &[Row], a: usize, b: usize, acc: &mut Buckets) -> i64 {
        if b <= a {
            return i64::MAX;
        }
        if b - a <= self.block {
            let mut oldest = i64::MAX;
            for &row in &self.order[a..b] {
                let r = &rows[row as usize];
                for d in self.slots(r) {
                    acc.counts[d] += 1;
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
    fn prefix(&self, rows: &[Row], p: usize, sign: i64, acc: &mut Buckets) {
        let k = p / self.block;
        let lo = k * self.block;
        let hi = lo + self.block;
        let (checkpoint, visit, row_sign) = if hi <= self.order.len() && hi - p < p - lo {
            (k + 1, &self.order[p..hi], -sign)
        } else {
            (k, &self.order[lo..p], sign)
        };
        let at = &self.table[checkpoint * self.dims..(checkpoint + 1) * self.dims];
        for (c, t) in acc.counts.iter_mut().zip(at) {
            *c += sign * i64::from(*t);
        }
        for &row in visit {
            for d in self.slots(&rows[row as usize]) {
                acc.counts[d] += row_sign;
            }
        }
    }

    /// Calls `f(facet, code, count)` for each non-zero bucket: facet 0
    /// make id, 1 model id, 2 year, 3 condition, 4 vehicle type, 5
    /// availability code.
    pub fn each(&self, acc: &Buckets, mut f: impl FnMut(usize, i64, u64)) {
        let base = self.makes + self.models + self.years.len();
        for (d, &c) in acc.counts.iter().enumerate() {
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
        (self.order.len() + self.make_ends.len() + self.table.len()) * 4
            + self.years.len() * 4
            + self.block_min.len() * 8
    }
}

fn row_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}
