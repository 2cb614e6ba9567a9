//! Which vocabulary words contain each three-byte sequence.
//!
//! The vocabulary of a large snapshot is mostly VINs and stock numbers,
//! one of each per vehicle, so testing every word for a token costs a pass
//! over megabytes per token (docs/benchmarks.md "Indexed search plans,
//! measured"). A word contains a token of three bytes or more only if it
//! contains every trigram of the token; the words holding the token's two
//! rarest trigrams are the only candidates, and each is still tested with
//! `str::contains`, so the answer is exactly the substring rule's. Bytes,
//! not characters: a substring of valid UTF-8 is a byte substring.
//!
//! Memory: the word ids of each trigram are ascending and stored as
//! LEB128 deltas, one to three bytes each.

/// Trigram → ascending word ids.
#[derive(Debug, Default)]
pub(super) struct Trigrams {
    /// Distinct trigrams, ascending (three bytes packed big-endian).
    keys: Vec<u32>,
    /// `data[ends[k - 1]..ends[k]]` encodes the words of `keys[k]`.
    ends: Vec<u32>,
    /// How many words each trigram has.
    counts: Vec<u32>,
    data: Vec<u8>,
}

fn key(t: &[u8]) -> u32 {
    (u32::from(t[0]) << 16) | (u32::from(t[1]) << 8) | u32::from(t[2])
}

impl Trigrams {
    /// From the vocabulary as `TextIndex` keeps it: words separated by
    /// `'\n'`, word `w` starting at `starts[w]`, `starts` ending with the
    /// vocabulary's length.
    pub fn build(vocab: &str, starts: &[u32]) -> Trigrams {
        let bytes = vocab.as_bytes();
        let mut pairs: Vec<u64> = Vec::new();
        for w in 0..starts.len().saturating_sub(1) {
            let word = &bytes[starts[w] as usize..starts[w + 1] as usize - 1];
            for t in word.windows(3) {
                pairs.push((u64::from(key(t)) << 32) | w as u64);
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        let mut me = Trigrams::default();
        let mut prev_word = 0u64;
        for pair in pairs {
            let (k, w) = ((pair >> 32) as u32, pair & 0xffff_ffff);
            if me.keys.last() != Some(&k) {
                if !me.keys.is_empty() {
                    me.ends
                        .push(u32::try_from(me.data.len()).unwrap_or(u32::MAX));
                }
                me.keys.push(k);
                me.counts.push(0);
                prev_word = 0;
            }
            let mut delta = w - prev_word;
            prev_word = w;
            loop {
                let low = (delta & 0x7f) as u8;
                delta >>= 7;
                if delta == 0 {
                    me.data.push(low);
                    break;
                }
                me.data.push(low | 0x80);
            }
            if let Some(c) = me.counts.last_mut() {
                *c += 1;
            }
        }
        if !me.keys.is_empty() {
            me.ends
                .push(u32::try_from(me.data.len()).unwrap_or(u32::MAX));
        }
        me.keys.shrink_to_fit();
        me.ends.shrink_to_fit();
        me.counts.shrink_to_fit();
        me.data.shrink_to_fit();
        me
    }

    fn words(&self, k: usize) -> Vec<usize> {
        let a = if k == 0 { 0 } else { self.ends[k - 1] as usize };
        let mut out = Vec::with_capacity(self.counts[k] as usize);
        let mut word = 0usize;
        let mut delta = 0usize;
        let mut shift = 0;
        for &b in &self.data[a..self.ends[k] as usize] {
            delta |= usize::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                word += delta;
                out.push(word);
                delta = 0;
                shift = 0;
            } else {
                shift += 7;
            }
        }
        out
    }

    /// The words that hold the two rarest trigrams of `token` (at least
    /// three bytes long), ascending: a superset of the words containing
    /// `token`.
    pub fn candidates(&self, token: &str) -> Vec<usize> {
        let mut found: Vec<(u32, usize)> = Vec::new();
        for t in token.as_bytes().windows(3) {
            match self.keys.binary_search(&key(t)) {
                Ok(k) => found.push((self.counts[k], k)),
                // A trigram no word has: no word contains the token.
                Err(_) => return Vec::new(),
            }
        }
        found.sort_unstable();
        found.dedup();
        let Some(&(_, rarest)) = found.first() else {
            return Vec::new();
        };
        let first = self.words(rarest);
        let Some(&(_, second)) = found.get(1) else {
            return first;
        };
        let other = self.words(second);
        let mut out = Vec::with_capacity(first.len().min(other.len()));
        let mut j = 0;
        for w in first {
            while j < other.len() && other[j] < w {
                j += 1;
            }
            if other.get(j) == Some(&w) {
                out.push(w);
            }
        }
        out
    }

    pub fn heap_bytes(&self) -> usize {
        (self.keys.len() + self.ends.len() + self.counts.len()) * 4 + self.data.len()
    }
}
