//! The free-text vocabulary of a snapshot (docs/inventory.md, the query
//! rule of `inventory::search`): every distinct lower-cased word with the
//! rows containing it, and a trigram index over the words so that a token
//! is tested against the few words that can contain it.

use super::{Row, row_u32};
use trigrams::Trigrams;

pub(crate) mod runs;
mod trigrams;

pub(crate) use runs::FacetOrder;

/// Words per vocabulary chunk: a chunk is first tested as a whole with
/// `str::contains` (vectorized in std), and its words only when it hits.
const CHUNK_WORDS: usize = 64;

/// The deduplicated vocabulary of the searchable text with a posting list
/// (the rows that contain it) per word.
#[derive(Debug, Default)]
pub(crate) struct TextIndex {
    /// Every distinct lower-cased word, each followed by `'\n'`. A query
    /// token never contains whitespace, so a token that is a substring of a
    /// vehicle's text is a substring of one of its words, and a match in
    /// this buffer never spans two words.
    vocab: String,
    /// Start offset of each word in `vocab`, plus `vocab.len()` at the end.
    starts: Vec<u32>,
    /// `postings[ends[w - 1]..ends[w]]` are the rows containing word `w`,
    /// ascending.
    ends: Vec<u32>,
    postings: Vec<u32>,
    /// The words containing each trigram, built on the first query token
    /// of three bytes or more.
    trigrams: std::sync::OnceLock<Trigrams>,
    /// The facet order and the shapes of the large words, built on the
    /// first query that can be answered as runs ([`runs`]).
    runs: std::sync::OnceLock<FacetOrder>,
}

impl TextIndex {
    pub(super) fn build(per_row: &[Vec<u32>], vocab: String, mut starts: Vec<u32>) -> TextIndex {
        let words = starts.len();
        starts.push(row_u32(vocab.len()));
        let mut counts = vec![0u32; words];
        for row in per_row {
            for w in row {
                counts[*w as usize] += 1;
            }
        }
        let mut ends = Vec::with_capacity(words);
        let mut acc = 0u32;
        for c in &counts {
            acc += c;
            ends.push(acc);
        }
        let mut fill: Vec<u32> = ends.iter().zip(&counts).map(|(e, c)| e - c).collect();
        let mut postings = vec![0u32; acc as usize];
        for (row, ws) in per_row.iter().enumerate() {
            for w in ws {
                let slot = &mut fill[*w as usize];
                postings[*slot as usize] = row_u32(row);
                *slot += 1;
            }
        }
        TextIndex {
            vocab,
            starts,
            ends,
            postings,
            trigrams: std::sync::OnceLock::new(),
            runs: std::sync::OnceLock::new(),
        }
    }

    /// The persisted parts, for an index image (`index::image`).
    pub(super) fn parts(&self) -> (&str, &[u32], &[u32], &[u32]) {
        (&self.vocab, &self.starts, &self.ends, &self.postings)
    }

    /// The inverse of [`TextIndex::parts`] (checked by the image reader);
    /// lazily built fields start empty.
    pub(super) fn from_parts(
        vocab: String,
        starts: Vec<u32>,
        ends: Vec<u32>,
        postings: Vec<u32>,
    ) -> TextIndex {
        TextIndex {
            vocab,
            starts,
            ends,
            postings,
            ..TextIndex::default()
        }
    }

    fn word(&self, w: usize) -> &str {
        // Without the trailing newline.
        &self.vocab[self.starts[w] as usize..self.starts[w + 1] as usize - 1]
    }

    fn posting(&self, w: usize) -> &[u32] {
        let a = if w == 0 { 0 } else { self.ends[w - 1] as usize };
        &self.postings[a..self.ends[w] as usize]
    }

    /// Calls `f` with each word containing `token` (not empty), ascending.
    ///
    /// A token of three bytes or more is a substring of a word only if
    /// each of its trigrams is, so only the words holding its two rarest
    /// trigrams are tested with `contains`; a shorter token tests the whole
    /// vocabulary, 64 words at a time.
    fn each_word(&self, token: &str, mut f: impl FnMut(usize)) {
        if token.len() >= 3 {
            let trigrams = self
                .trigrams
                .get_or_init(|| Trigrams::build(&self.vocab, &self.starts));
            for w in trigrams.candidates(token) {
                if self.word(w).contains(token) {
                    f(w);
                }
            }
            return;
        }
        if !self.vocab.contains(token) {
            return;
        }
        let words = self.starts.len() - 1;
        for first in (0..words).step_by(CHUNK_WORDS) {
            let last = (first + CHUNK_WORDS).min(words);
            let chunk = &self.vocab[self.starts[first] as usize..self.starts[last] as usize];
            if !chunk.contains(token) {
                continue;
            }
            for w in first..last {
                if self.word(w).contains(token) {
                    f(w);
                }
            }
        }
    }

    /// The rows whose searchable text contains `token`, as a bitmap of
    /// `rows` bits; `None` when no row does.
    pub fn rows_containing(&self, token: &str, rows: usize) -> Option<Vec<u64>> {
        if token.is_empty() {
            return None;
        }
        let mut bits = vec![0u64; rows.div_ceil(64)];
        let mut any = false;
        self.each_word(token, |w| {
            let posting = self.posting(w);
            any |= !posting.is_empty();
            for row in posting {
                bits[(*row >> 6) as usize] |= 1u64 << (row & 63);
            }
        });
        any.then_some(bits)
    }

    /// The rows containing every token, as runs of the facet order (built
    /// on first use over `rows`, `makes` and `models` of the snapshot);
    /// empty runs when no row matches; `None` when some token cannot be
    /// told as runs (the caller then uses [`TextIndex::rows_containing`]).
    pub fn matching_runs(
        &self,
        rows: &[Row],
        makes: usize,
        models: usize,
        tokens: &[String],
    ) -> Option<(&FacetOrder, runs::Runs)> {
        let order = self.runs.get_or_init(|| {
            FacetOrder::build(rows, makes, models, self.starts.len() - 1, |w| {
                self.posting(w)
            })
        });
        // The tokens with fewest words first: a make or model token is a
        // run or two, and the single positions of a token of thousands of
        // VINs and stock numbers (`1500`) are then cut to it before they
        // are sorted, in whichever order the query names them.
        let mut words_of: Vec<Vec<usize>> = tokens
            .iter()
            .map(|token| {
                let mut words = Vec::new();
                if !token.is_empty() {
                    self.each_word(token, |w| words.push(w));
                }
                words
            })
            .collect();
        words_of.sort_by_key(Vec::len);
        let mut acc: Option<runs::Runs> = None;
        for words in &words_of {
            let set = order.token(words, |w| self.posting(w), acc.as_deref())?;
            let next = match acc {
                None => set,
                Some(prev) => runs::intersect(&prev, &set),
            };
            if next.is_empty() {
                return Some((order, next));
            }
            acc = Some(next);
        }
        Some((order, acc.unwrap_or_default()))
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.vocab.len()
            + (self.starts.len() + self.ends.len() + self.postings.len()) * 4
            + self.trigrams.get().map_or(0, Trigrams::heap_bytes)
            + self.runs.get().map_or(0, FacetOrder::heap_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::TextIndex;
    use proptest::prelude::*;

    fn index_of(words: &[String], rows: &[Vec<usize>]) -> TextIndex {
        let mut vocab = String::new();
        let mut starts = Vec::new();
        for w in words {
            starts.push(super::row_u32(vocab.len()));
            vocab.push_str(w);
            vocab.push('\n');
        }
        let per_row: Vec<Vec<u32>> = rows
            .iter()
            .map(|ws| {
                let mut ids: Vec<u32> = ws.iter().map(|w| super::row_u32(*w)).collect();
                ids.sort_unstable();
                ids.dedup();
                ids
            })
            .collect();
        TextIndex::build(&per_row, vocab, starts)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// The trigram candidates never lose a word: every token (short,
        /// long, repeated trigrams, multi-byte characters, absent) finds
        /// exactly the rows one of whose words contains it.
        #[test]
        fn tokens_find_exactly_the_rows_whose_words_contain_them(
            words in prop::collection::btree_set("[ab1é]{1,9}", 1..40),
            picks in prop::collection::vec(prop::collection::vec(0usize..1000, 0..4), 0..60),
            tokens in prop::collection::vec("[ab1é]{1,6}", 1..8),
        ) {
            let words: Vec<String> = words.into_iter().collect();
            let rows: Vec<Vec<usize>> = picks
                .iter()
                .map(|p| p.iter().map(|i| i % words.len()).collect())
                .collect();
            let index = index_of(&words, &rows);
            rows_are_those_whose_words_contain(&index, &words, &rows, &tokens)?;
        }
    }

    /// Every token's rows from the index are exactly the rows one of whose
    /// words contains it (`str::contains`, the matching rule).
    fn rows_are_those_whose_words_contain(
        index: &TextIndex,
        words: &[String],
        rows: &[Vec<usize>],
        tokens: &[String],
    ) -> Result<(), TestCaseError> {
        for token in tokens {
            let expected: Vec<usize> = (0..rows.len())
                .filter(|r| rows[*r].iter().any(|w| words[*w].contains(token.as_str())))
                .collect();
            let got: Vec<usize> = index
                .rows_containing(token, rows.len())
                .map(|bits| {
                    (0..rows.len())
                        .filter(|r| bits[r >> 6] & (1u64 << (r & 63)) != 0)
                        .collect()
                })
                .unwrap_or_default();
            prop_assert_eq!(got, expected, "token {:?}", token);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// On a vocabulary of thousands of digit words (VINs and stock
        /// numbers at scale), the trigram lists hold deltas of one, two
        /// and three bytes; a digit token still finds exactly the rows
        /// whose words contain it.
        #[test]
        fn digit_tokens_find_exactly_their_rows_in_a_large_vocabulary(
            seed in 1u64..1_000_000,
            spread in 1usize..40,
            tokens in prop::collection::vec("[0-9]{3,5}", 1..6),
        ) {
            let words: Vec<String> = (0..20_000u64)
                .map(|i| format!("{}", (i * 7919 + seed) % (100_000 * spread as u64 + 7)))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let rows: Vec<Vec<usize>> = (0..words.len()).map(|w| vec![w, (w * 31) % words.len()]).collect();
            let index = index_of(&words, &rows);
            rows_are_those_whose_words_contain(&index, &words, &rows, &tokens)?;
        }
    }
}
