//! Row sets and orders an indexed search visits instead of every row
//! (docs/benchmarks.md "Search complexity").

use std::cmp::Ordering;

use super::super::index::{SORT_ORDERS, SnapshotIndex};
use super::{PageKey, Prepared, Sort, SortField, SortKey, sort_key};

/// Position in `index.by_vehicle_id` of the first row after the cursor
/// position `a` in the default order (vehicle_id, then rooftop_id).
pub(super) fn first_after(index: &SnapshotIndex, a: &PageKey) -> usize {
    index.by_vehicle_id.partition_point(|r| {
        let vid = index.vehicle_id(*r as usize);
        vid.cmp(a.vehicle_id.as_str())
            .then_with(|| index.rooftop_id().cmp(&a.rooftop_id))
            != Ordering::Greater
    })
}

/// Where the order of `sort` is kept in [`SnapshotIndex`] (`orders`).
fn order_slot(sort: Sort) -> usize {
    let field = match sort.field {
        SortField::AdvertisedPrice => 0,
        SortField::Year => 1,
        SortField::Odometer => 2,
        SortField::InventoryAgeDays => 3,
        SortField::ObservedAt => 4,
    };
    let slot = field * 2 + usize::from(sort.descending);
    debug_assert!(slot < SORT_ORDERS);
    slot
}

/// The snapshot's rows in the total order of `sort` (built on first use),
/// or `None` while that order depends on `now`: a vehicle whose
/// inventory-age basis lies in the future has no age yet and sorts last,
/// so the age order is fixed only once `now` is past every basis.
pub(super) fn sorted_rows(index: &SnapshotIndex, sort: Sort, now_us: i64) -> Option<&[u32]> {
    if sort.field == SortField::InventoryAgeDays && index.max_basis_us > now_us {
        return None;
    }
    let order = index.orders[order_slot(sort)].get_or_init(|| {
        let mut rows: Vec<(SortKey, u32)> = (0..index.len())
            .map(|i| {
                let row = u32::try_from(i).unwrap_or(u32::MAX);
                (sort_key(Some(sort), &index.rows[i], now_us), row)
            })
            .collect();
        // Vehicle ids are unique within a snapshot, so the order is total.
        rows.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0).then_with(|| {
                index
                    .vehicle_id(a.1 as usize)
                    .cmp(index.vehicle_id(b.1 as usize))
            })
        });
        rows.into_iter().map(|(_, row)| row).collect()
    });
    Some(order)
}

/// Rows that can match `prepared`'s make or model filter (the posting
/// lists of the matching spellings) or, without either, its text query,
/// when they are few enough that visiting them beats visiting every row.
pub(super) fn candidate_rows(index: &SnapshotIndex, prepared: &Prepared) -> Option<Vec<u32>> {
    let gather = |wanted: &Option<Vec<bool>>, postings: &super::super::index::Postings| {
        let wanted = wanted.as_ref()?;
        let ids = wanted.iter().enumerate().filter(|(_, w)| **w);
        let n: usize = ids.clone().map(|(id, _)| postings.rows(id).len()).sum();
        Some((n, ids.map(|(id, _)| id).collect::<Vec<_>>()))
    };
    let by_make = gather(&prepared.make, &index.make_rows);
    let by_model = gather(&prepared.model, &index.model_rows);
    let (n, ids, postings) = match (by_make, by_model) {
        (Some(a), Some(b)) if b.0 < a.0 => (b.0, b.1, &index.model_rows),
        (Some(a), _) => (a.0, a.1, &index.make_rows),
        (None, Some(b)) => (b.0, b.1, &index.model_rows),
        (None, None) => return text_rows(index, prepared.text.as_deref()?),
    };
    if n > index.len() / 2 {
        return None;
    }
    let mut rows = Vec::with_capacity(n);
    for id in ids {
        rows.extend_from_slice(postings.rows(id));
    }
    Some(rows)
}

/// The rows a text query's bitmap holds, when few enough to visit alone.
fn text_rows(index: &SnapshotIndex, bits: &[u64]) -> Option<Vec<u32>> {
    // One pass: the rows are gathered until they pass half the snapshot
    // (no separate count, whose popcount is a dozen instructions a word
    // without the CPU's popcnt).
    let half = index.len() / 2;
    let mut rows = Vec::new();
    for (w, &word) in bits.iter().enumerate() {
        let mut rest = word;
        while rest != 0 {
            let bit = rest.trailing_zeros() as usize;
            rows.push(u32::try_from(w * 64 + bit).unwrap_or(u32::MAX));
            rest &= rest - 1;
        }
        if rows.len() > half {
            return None;
        }
    }
    Some(rows)
}
