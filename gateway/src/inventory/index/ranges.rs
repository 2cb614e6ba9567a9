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
use super::checkpoints::Checkpoints;

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
    /// Rows ordered by (make, currency, amount, row), with their prefix
    /// facet counts.
    order: Checkpoints,
    /// `order[make_ends[m - 1]..make_ends[m]]` are the rows of make `m`.
    make_ends: Vec<u32>,
}

impl MakePriceOrder {
    pub fn build(rows: &[Row], makes: usize, models: usize) -> MakePriceOrder {
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
        MakePriceOrder {
            order: Checkpoints::build(rows, makes, models, order),
            make_ends,
        }
    }

    pub fn empty_buckets(&self) -> Buckets {
        Buckets {
            counts: self.order.buckets(),
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
        let seg = &self.order.order[a..b];
        let lo = seg.partition_point(|p| key(p) < (currency, min.unwrap_or(i64::MIN)));
        let hi = seg.partition_point(|p| key(p) <= (currency, max.unwrap_or(i64::MAX)));
        (a + lo, a + hi.max(lo))
    }

    /// The rows at positions `a..b`.
    pub fn rows(&self, a: usize, b: usize) -> &[u32] {
        &self.order.order[a..b]
    }

    /// Adds the buckets of the rows at positions `a..b` to `acc` and
    /// returns their oldest `observed_us` (`i64::MAX` when empty).
    pub fn count(&self, rows: &[Row], a: usize, b: usize, acc: &mut Buckets) -> i64 {
        self.order.count(rows, a, b, &mut acc.counts)
    }

    /// Calls `f(facet, code, count)` for each non-zero bucket
    /// ([`Checkpoints::each`]).
    pub fn each(&self, acc: &Buckets, f: impl FnMut(usize, i64, u64)) {
        self.order.each(&acc.counts, f);
    }

    pub fn heap_bytes(&self) -> usize {
        self.order.heap_bytes() + self.make_ends.len() * 4
    }
}

fn row_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}
