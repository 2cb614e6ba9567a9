//! Content versions and conditional re-reads (docs/agents.md "Conditional
//! re-reads").
//!
//! Every successful `tools/call` and `resources/read` result carries
//! `_meta["dealergateway/contentVersion"]`: a short opaque digest of what
//! this caller was shown (the structured content, or the resource text).
//! A caller that sends it back as `params._meta["dealergateway/ifNoneMatch"]`
//! gets a short "unchanged" answer while the answer it would get is the same.
//!
//! The digest is of the answer itself, so two grants that see different
//! views get different versions and the same view gets the same version,
//! whoever asks and on whichever replica. Members that change on every
//! request while the data does not are left out (found by reading every
//! tool and resource of the demo twice, seconds apart): the request's
//! `trace_id`, the `transformed_at` of the answer's provenance (when the
//! gateway wrote it), `age_as_of` of an inventory tenure (the moment the age
//! was measured; the age itself, in days, stays in), a search page's sealed
//! `next_cursor` (it carries its own expiry), the `as_of` of an offers
//! evaluation (the instant it was made: a disclosure re-evaluates every few
//! seconds, DAP 0.1 "Evaluation instant"), and the `observed_at` that
//! stands for "now" where nothing was observed (an `unknown` freshness, a
//! `derived` or `unknown` source, the program set of an evaluation). A freshness that really changes
//! (`current` to `stale`) is in `state`, so it changes the version.
//!
//! The digest is a 128-bit multiply-fold hash, not SHA-256: the answer is
//! up to about 50 KB, and hashing it is on every request's path (the
//! instruction budget of docs/benchmarks.md "Content versions"). It is no
//! security boundary: the version is computed after the same authorization
//! as the full read and only decides whether to send the caller again what
//! it may already read; an engineered collision could at worst make a
//! caller keep an older copy of data it was entitled to.

use base64::Engine as _;
use serde_json::{Value, json};

/// The result `_meta` member holding the version.
pub const VERSION_META: &str = "dealergateway/contentVersion";
/// The request `params._meta` member naming the version the caller holds.
pub const IF_NONE_MATCH_META: &str = "dealergateway/ifNoneMatch";
/// The result `_meta` member that marks the short answer.
pub const UNCHANGED_META: &str = "dealergateway/unchanged";
/// The prefix of every version this gateway writes (the digest's version:
/// a change of the digest or of what it leaves out takes a new prefix, so
/// an old version never matches a new one by accident).
const PREFIX: &str = "cv1-";

/// Timestamp members whose value is the moment of the request or of the
/// evaluation, not of the data (module doc). Written as serde_json writes a
/// key: a quoted name then a colon, which cannot occur inside a JSON string
/// (a quote there is escaped).
const VOLATILE_TIMES: &[&str] = &["\"transformed_at\":", "\"age_as_of\":", "\"as_of\":"];
/// Members of a result's top level, written after its content (the trace
/// id last, the page before it), whose value changes on every request.
const VOLATILE_TAIL: &[&str] = &["\"trace_id\":", "\"next_cursor\":"];
/// How far from the end of the text [`VOLATILE_TAIL`] members are looked
/// for: they follow the content, and only the small members of the result
/// (page, provenance, freshness) are written after them.
const TAIL_BYTES: usize = 8 * 1024;
/// `observed_at` of a freshness or source that observed nothing (module doc).
const OBSERVED_AT: &str = "\"observed_at\":";
/// What follows an `observed_at` of an `unknown` freshness (its members
/// are written in this order by the typed `Freshness` and by the renderer).
const UNKNOWN_STATE: &str = ",\"state\":\"unknown\"";
/// What precedes an `observed_at` of a source that stands for "now".
const NOW_SOURCES: &[&str] = &[
    "\"authority\":\"derived\",",
    "\"authority\":\"unknown\",",
    // The program set of a disclosure without per-program sources, observed
    // when the evaluation was made (disclosure::programs).
    "\"source_name\":\"dealer-agent-gateway incentive programs\",\"authority\":\"dealer_asserted\",",
];
/// The longest timestamp value this crate writes, quotes included
/// (`"2026-01-02T03:04:05.123456789Z"` is 32 bytes).
const MAX_TIMESTAMP: usize = 40;

/// The version of a tool result: its structured content (JSON text as the
/// tool pipeline wrote it) and the tool's own `_meta` additions (the
/// availability band of docs/availability.md), which the caller sees too.
pub fn of_tool(structured: &str, meta: Option<&Value>) -> String {
    let extra = meta.and_then(|m| serde_json::to_vec(m).ok());
    encode(digest_of(structured, extra.as_deref()))
}

/// The version of a resource read: the text of its one `contents` entry.
pub fn of_text(text: &str) -> String {
    encode(digest_of(text, None))
}

/// The version the caller says it holds, if any.
pub fn requested(params: &Value) -> Option<&str> {
    params
        .get("_meta")
        .and_then(|m| m.get(IF_NONE_MATCH_META))
        .and_then(Value::as_str)
}

/// The structured content of the short answer: `{"unchanged": true,
/// "contentVersion": V}` (the third branch of every published
/// `outputSchema`, [`unchanged_schema`]).
pub fn unchanged_structured(version: &str) -> String {
    json!({"unchanged": true, "contentVersion": version}).to_string()
}

/// The words of the short answer's text block.
pub fn unchanged_words(version: &str) -> String {
    format!(
        "Unchanged: the full answer is the same as the one you hold with contentVersion {version}; reuse it. Send the request without dealergateway/ifNoneMatch for the full answer."
    )
}

/// The `anyOf` branch every published `outputSchema` carries for the short
/// answer, so a client that validates `structuredContent` accepts it.
pub fn unchanged_schema() -> Value {
    json!({
        "type": "object",
        "required": ["unchanged", "contentVersion"],
        "properties": {"unchanged": {"const": true}, "contentVersion": {"type": "string"}},
        "additionalProperties": false
    })
}

/// `"cv1-"` and 22 base64url characters of the 128-bit digest.
fn encode(digest: [u8; 16]) -> String {
    let mut out = String::with_capacity(PREFIX.len() + 22);
    out.push_str(PREFIX);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode_string(digest, &mut out);
    out
}

/// The digest of `text` without the values of the volatile members, then
/// of `extra`.
///
/// Found without a pass per member (docs/benchmarks.md "Content
/// versions"): every volatile timestamp is a UTC timestamp, so one
/// `memchr` pass for `Z` finds them all, and each `Z"` is checked against
/// the key before its value; the trace id and the page cursor are top-level
/// members after the content, looked for in the text's tail. The text between
/// the dropped values is hashed in place, never copied.
fn digest_of(text: &str, extra: Option<&[u8]>) -> [u8; 16] {
    let bytes = text.as_bytes();
    let mut drop: Vec<(usize, usize)> = Vec::new();
    for z in memchr::memchr_iter(b'Z', bytes) {
        if bytes.get(z + 1) != Some(&b'"') {
            continue;
        }
        let window = z.saturating_sub(MAX_TIMESTAMP);
        let Some(open) = memchr::memrchr(b'"', &bytes[window..z]).map(|i| window + i) else {
            continue;
        };
        let before = &bytes[..open];
        let end = z + 2;
        let volatile = VOLATILE_TIMES
            .iter()
            .any(|k| before.ends_with(k.as_bytes()))
            || (before.ends_with(OBSERVED_AT.as_bytes())
                && (bytes[end..].starts_with(UNKNOWN_STATE.as_bytes())
                    || NOW_SOURCES.iter().any(|s| {
                        before[..before.len() - OBSERVED_AT.len()].ends_with(s.as_bytes())
                    })));
        if volatile {
            drop.push((open, end));
        }
    }
    let tail = bytes.len().saturating_sub(TAIL_BYTES);
    for key in VOLATILE_TAIL {
        // Forward (the vectorised search; the reverse one is not), the last.
        if let Some(at) = memchr::memmem::find_iter(&bytes[tail..], key.as_bytes()).last() {
            let start = tail + at + key.len();
            drop.push((start, value_end(bytes, start)));
        }
    }
    drop.sort_unstable();
    let mut digest = Digest::new();
    let mut from = 0;
    for (start, end) in drop {
        if start >= from {
            digest.update(&bytes[from..start]);
            from = end;
        }
    }
    digest.update(&bytes[from..]);
    if let Some(extra) = extra {
        // A byte that never occurs in UTF-8 separates the two parts.
        digest.update(&[0xFF]);
        digest.update(extra);
    }
    digest.finish()
}

/// Where the JSON value starting at `start` ends: after a string's
/// closing quote, or at the `,`, `}` or `]` that ends any other value
/// (an object or array is skipped whole, strings inside it included).
fn value_end(bytes: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i = string_end(bytes, i + 1);
                if depth == 0 {
                    return i;
                }
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' if depth == 0 => return i,
            b'}' | b']' => {
                depth -= 1;
                i += 1;
                if depth == 0 {
                    return i;
                }
            }
            b',' if depth == 0 => return i,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The index after the closing quote of a string whose text starts at `i`.
fn string_end(bytes: &[u8], mut i: usize) -> usize {
    while let Some(j) = bytes.get(i..).and_then(|b| memchr::memchr2(b'"', b'\\', b)) {
        i += j;
        if bytes[i] == b'\\' {
            i += 2;
        } else {
            return i + 1;
        }
    }
    bytes.len()
}

/// Odd constants with well-mixed bits (the fractional parts of the golden
/// ratio and of the square roots of 2, 3 and 5, made odd).
const K: [u64; 4] = [
    0x9E37_79B9_7F4A_7C15,
    0x6A09_E667_F3BC_C909,
    0xBB67_AE85_84CA_A73B,
    0x3C6E_F372_FE94_F82B,
];

/// The 128-bit product of `a` and `b`, its halves folded together.
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    // Both halves of the product, by design.
    #[allow(clippy::cast_possible_truncation)]
    let (lo, hi) = (p as u64, (p >> 64) as u64);
    lo ^ hi
}

/// The `i`-th little-endian word of a 32-byte block.
fn word(block: &[u8; BLOCK], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&block[8 * i..8 * i + 8]);
    u64::from_le_bytes(w)
}

const BLOCK: usize = 32;

/// Two multiply-fold lanes over 32-byte blocks (one multiplication per 16
/// bytes), fed piece by piece, finished with the length and mixed across
/// the lanes: 16 bytes.
struct Digest {
    a: u64,
    b: u64,
    len: u64,
    buf: [u8; BLOCK],
    n: usize,
}

impl Digest {
    fn new() -> Self {
        Digest {
            a: K[0],
            b: K[1],
            len: 0,
            buf: [0; BLOCK],
            n: 0,
        }
    }

    fn block(&mut self, block: &[u8; BLOCK]) {
        self.a = fold(word(block, 0) ^ self.a ^ K[2], word(block, 1) ^ K[3]);
        self.b = fold(word(block, 2) ^ self.b ^ K[3], word(block, 3) ^ K[2]);
    }

    fn update(&mut self, mut data: &[u8]) {
        self.len += data.len() as u64;
        if self.n > 0 {
            let take = (BLOCK - self.n).min(data.len());
            self.buf[self.n..self.n + take].copy_from_slice(&data[..take]);
            self.n += take;
            data = &data[take..];
            if self.n < BLOCK {
                return;
            }
            let buf = self.buf;
            self.block(&buf);
            self.n = 0;
        }
        let (blocks, rest) = data.as_chunks::<BLOCK>();
        for block in blocks {
            self.block(block);
        }
        self.buf[..rest.len()].copy_from_slice(rest);
        self.n = rest.len();
    }

    fn finish(mut self) -> [u8; 16] {
        self.buf[self.n..].fill(0);
        let (buf, len) = (self.buf, self.len);
        let a = fold(word(&buf, 0) ^ self.a ^ K[2], word(&buf, 1) ^ len ^ K[3]);
        let b = fold(word(&buf, 2) ^ self.b ^ K[3], word(&buf, 3) ^ len ^ K[2]);
        let x = fold(a ^ K[0], b ^ K[1]);
        let y = fold(b ^ K[2], a ^ K[3] ^ len);
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&x.to_le_bytes());
        out[8..].copy_from_slice(&y.to_le_bytes());
        out
    }
}

#[cfg(test)]
mod tests;
