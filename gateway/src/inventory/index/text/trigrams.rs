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

    /// The encoded word ids of trigram `k`.
    fn bytes(&self, k: usize) -> &[u8] {
        let a = if k == 0 { 0 } else { self.ends[k - 1] as usize };
        &self.data[a..self.ends[k] as usize]
    }

    fn words(&self, k: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.counts[k] as usize);
        out.extend(Decode::new(self.bytes(k)));
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
        let Some(&(_, second)) = found.get(1) else {
            return self.words(rarest);
        };
        // Both lists are decoded in one pass, neither into a vector: the
        // lists of a digit trigram hold tens of thousands of VINs and
        // stock numbers (docs/benchmarks.md "Text search at a million:
        // the digit token").
        let mut out = Vec::new();
        let mut other = Decode::new(self.bytes(second));
        let mut next = other.next();
        for w in Decode::new(self.bytes(rarest)) {
            while let Some(o) = next {
                if o >= w {
                    break;
                }
                next = other.next();
            }
            match next {
                Some(o) if o == w => out.push(w),
                Some(_) => {}
                None => break,
            }
        }
        out
    }

    pub fn heap_bytes(&self) -> usize {
        (self.keys.len() + self.ends.len() + self.counts.len()) * 4 + self.data.len()
    }
}

/// The ascending word ids of one LEB128-delta list.
struct Decode<'d> {
    data: &'d [u8],
    at: usize,
    word: usize,
}

impl<'d> Decode<'d> {
    fn new(data: &'d [u8]) -> Decode<'d> {
        Decode {
            data,
            at: 0,
            word: 0,
        }
    }
}

impl Iterator for Decode<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        let &first = self.data.get(self.at)?;
        self.at += 1;
        // A delta under 128 is one byte: most of a dense list.
        if first & 0x80 == 0 {
            self.word += usize::from(first);
            return Some(self.word);
        }
        let mut delta = usize::from(first & 0x7f);
        let mut shift = 7;
        while let Some(&b) = self.data.get(self.at) {
            self.at += 1;
            delta |= usize::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        self.word += delta;
        Some(self.word)
    }
}
