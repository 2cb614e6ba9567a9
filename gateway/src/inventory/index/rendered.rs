//! The [`Pieces`] of every row as stored: the numbers on the heap
//! ([`PieceArena`]), the strings in the row's payload ([`super::payload`],
//! entry `2 * row + 1`), and how a request reads them back
//! ([`RowPieces`]).
//!
//! A payload holds the members only the full form carries (media,
//! features and the rest, from the detail mark on) LZ4-compressed, then
//! the concise form's members and the six small strings as they are. A
//! search page is concise by default (docs/inventory.md "Detail and the
//! result budget"): it copies and checks the plain tail and never
//! decompresses the media and features it does not write
//! (docs/benchmarks.md "Page reads from an index image"); decompressing the
//! small strings with the head had cost a search page of 20 about 6% more
//! instructions (docs/benchmarks.md "Index images").

use super::super::pieces::{Detail, Pieces, PiecesRef};
use super::{NO_BASIS, row_u32};

/// The numbers of every row's pieces (the strings are in the payloads).
#[derive(Debug, Default)]
pub(super) struct PieceArena {
    pub(super) numbers: Vec<PieceNumbers>,
}

const PIECE_STRINGS: usize = 6;

/// Where the full-only members start in a head: the detail mark
/// (`inventory::pieces`), written by `static_head` before them; the mark
/// goes with the second block so that the two blocks joined are the head
/// exactly.
const DETAIL_MARK: char = '\0';

/// One row's pieces, read back: the head (both blocks, or the concise one
/// only) and the six small strings in one text.
#[derive(Debug)]
pub struct RowPieces<'a> {
    text: String,
    /// End of the head in `text`.
    head: usize,
    /// End of each of the [`PIECE_STRINGS`] strings in `text`.
    cuts: [usize; PIECE_STRINGS],
    numbers: PieceNumbers,
    /// Tied to the index it came from, as when the pieces were borrowed.
    index: std::marker::PhantomData<&'a ()>,
}

impl RowPieces<'_> {
    pub fn get(&self) -> PiecesRef<'_> {
        let piece = |k: usize| {
            let a = if k == 0 { self.head } else { self.cuts[k - 1] };
            self.text.get(a..self.cuts[k]).unwrap_or("")
        };
        let n = self.numbers;
        PiecesRef {
            head: self.text.get(..self.head).unwrap_or(""),
            provenance: piece(0),
            observed_at: piece(1),
            valid_until: piece(2),
            tenure: piece(3),
            used_tail: piece(4),
            status: piece(5),
            valid_until_us: n.valid_until_us,
            stocked_us: (n.stocked_us != NO_BASIS).then_some(n.stocked_us),
            max_age_seconds: n.max_age_seconds,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct PieceNumbers {
    pub(super) valid_until_us: i64,
    /// [`NO_BASIS`] when the row carries no used-vehicle tenure.
    pub(super) stocked_us: i64,
    pub(super) max_age_seconds: u32,
}

/// A row's pieces as one payload: the full-only block's length (u32 LE)
/// and the block (LZ4, size prepended: the head from the detail mark on,
/// empty when it has no mark), the lengths (u32 LE) of the concise head and
/// of the six small strings, then those seven strings as they are: the
/// text a concise page needs is the payload's tail, one copy and one UTF-8
/// check.
pub(super) fn pieces_payload(p: &Pieces) -> Vec<u8> {
    let cut = p.head.find(DETAIL_MARK).unwrap_or(p.head.len());
    let (concise, full_only) = p.head.split_at(cut);
    let full_only = lz4_flex::compress_prepend_size(full_only.as_bytes());
    let plain = [
        concise,
        &p.provenance,
        &p.observed_at,
        &p.valid_until,
        &p.tenure,
        &p.used_tail,
        &p.status,
    ];
    let total: usize = plain.iter().map(|s| s.len()).sum();
    let mut out = Vec::with_capacity(4 + full_only.len() + plain.len() * 4 + total);
    out.extend_from_slice(&row_u32(full_only.len()).to_le_bytes());
    out.extend_from_slice(&full_only);
    for s in plain {
        out.extend_from_slice(&row_u32(s.len()).to_le_bytes());
    }
    for s in plain {
        out.extend_from_slice(s.as_bytes());
    }
    out
}

/// The inverse of [`pieces_payload`], the head as `detail` writes it (a
/// concise head has no full-only members: `PiecesRef::write_detail`
/// writes the same page from it); `None` for bytes it did not write.
///
/// One allocation: the concise head, the full-only block decompressed
/// (for the full form only) and the small strings go into one text, checked
/// as UTF-8 once.
pub(super) fn read_pieces<'a>(
    bytes: &[u8],
    numbers: PieceNumbers,
    detail: Detail,
) -> Option<RowPieces<'a>> {
    let le = |at: usize| -> Option<usize> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?) as usize)
    };
    let lens = le(0)?.checked_add(4)?;
    let (full_size, full_only) = lz4_flex::block::uncompressed_size(bytes.get(4..lens)?).ok()?;
    let plain = bytes.get(lens.checked_add((1 + PIECE_STRINGS) * 4)?..)?;
    let concise = le(lens)?;
    let full_size = if detail == Detail::Full { full_size } else { 0 };
    // The stored size is checked against what decompresses into it, and a
    // block cannot expand more than 255 times: refuse a size no block
    // could give before allocating it.
    if full_size > full_only.len().saturating_mul(255) {
        return None;
    }
    let head = concise.checked_add(full_size)?;
    let mut cuts = [0usize; PIECE_STRINGS];
    let mut end = head;
    for (k, cut) in cuts.iter_mut().enumerate() {
        end = end.checked_add(le(lens + (k + 1) * 4)?)?;
        *cut = end;
    }
    if end - full_size != plain.len() {
        return None;
    }
    let text = if full_size == 0 {
        plain.to_vec()
    } else {
        let mut text = Vec::with_capacity(end);
        text.extend_from_slice(plain.get(..concise)?);
        text.resize(head, 0);
        if lz4_flex::decompress_into(full_only, &mut text[concise..]).ok()? != full_size {
            return None;
        }
        text.extend_from_slice(plain.get(concise..)?);
        text
    };
    let text = String::from_utf8(text).ok()?;
    // Each piece must end on a character boundary.
    if !text.is_char_boundary(concise)
        || !text.is_char_boundary(head)
        || !cuts.iter().all(|c| text.is_char_boundary(*c))
    {
        return None;
    }
    Some(RowPieces {
        text,
        head,
        cuts,
        numbers,
        index: std::marker::PhantomData,
    })
}

impl PieceArena {
    /// Keeps the numbers; the strings are the row's payload.
    pub(super) fn push(&mut self, p: &Pieces) {
        self.numbers.push(PieceNumbers {
            valid_until_us: p.valid_until_us,
            stocked_us: p.stocked_us.unwrap_or(NO_BASIS),
            max_age_seconds: p.max_age_seconds,
        });
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.numbers.len() * std::mem::size_of::<PieceNumbers>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(head: &str) -> Pieces {
        Pieces {
            head: head.into(),
            provenance: "{\"source\":\"feed\"}".into(),
            observed_at: "\"2026-01-02T03:04:05Z\"".into(),
            valid_until: "\"2026-01-02T04:04:05Z\"".into(),
            tenure: "\"stocked_at\":\"2025-12-01T00:00:00Z\"".into(),
            used_tail: "\"history_report_status\":\"unknown\"".into(),
            status: "in_stock".into(),
            valid_until_us: 7,
            stocked_us: Some(5),
            max_age_seconds: 3600,
        }
    }

    fn numbers(p: &Pieces) -> PieceNumbers {
        let mut arena = PieceArena::default();
        arena.push(p);
        arena.numbers[0]
    }

    fn same(a: PiecesRef<'_>, b: PiecesRef<'_>) {
        assert_eq!(
            (a.provenance, a.observed_at, a.valid_until, a.tenure),
            (b.provenance, b.observed_at, b.valid_until, b.tenure)
        );
        assert_eq!((a.used_tail, a.status), (b.used_tail, b.status));
        assert_eq!(
            (a.valid_until_us, a.stocked_us, a.max_age_seconds),
            (b.valid_until_us, b.stocked_us, b.max_age_seconds)
        );
    }

    #[test]
    fn a_payload_reads_back_as_written_in_both_forms() {
        for head in [
            "{\"vehicle_id\":\"v1\",\"make\":\"Ford é\"\0,\"media\":[\"x\"]",
            "{\"vehicle_id\":\"v1\"",
            "{\"vehicle_id\":\"v1\"\0",
            "",
        ] {
            let p = pieces(head);
            let bytes = pieces_payload(&p);
            let full = read_pieces(&bytes, numbers(&p), Detail::Full).expect("full");
            assert_eq!(full.get().head, head);
            same(full.get(), p.as_ref());
            let concise = read_pieces(&bytes, numbers(&p), Detail::Concise).expect("concise");
            let before_mark = head.split_once('\0').map_or(head, |(c, _)| c);
            assert_eq!(concise.get().head, before_mark);
            same(concise.get(), p.as_ref());
        }
    }

    #[test]
    fn bytes_it_did_not_write_are_refused_not_panics() {
        let p = pieces("{\"a\":1\0,\"b\":[1,2,3]");
        let bytes = pieces_payload(&p);
        for len in 0..bytes.len() {
            for detail in [Detail::Concise, Detail::Full] {
                assert!(read_pieces(&bytes[..len], numbers(&p), detail).is_none());
            }
        }
        let mut bad = bytes.clone();
        // The full-only block claims more than it decompresses to.
        bad[4] = bad[4].wrapping_add(1);
        assert!(read_pieces(&bad, numbers(&p), Detail::Full).is_none());
        let mut bad = bytes;
        let last = bad.len() - 1;
        bad[last] = 0xff;
        assert!(read_pieces(&bad, numbers(&p), Detail::Full).is_none());
    }
}
