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

/// Members whose value changes on every request while the data does not
/// (module doc). Written as serde_json writes a key: a quoted name then a
/// colon, which cannot occur inside a JSON string (a quote there is escaped).
const VOLATILE: &[&str] = &[
    "\"trace_id\":",
    "\"transformed_at\":",
    "\"age_as_of\":",
    "\"next_cursor\":",
    "\"as_of\":",
];
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

/// The version of a tool result: its structured content (JSON text as the
/// tool pipeline wrote it) and the tool's own `_meta` additions (the
/// availability band of docs/availability.md), which the caller sees too.
pub fn of_tool(structured: &str, meta: Option<&Value>) -> String {
    let mut kept = stripped(structured);
    if let Some(meta) = meta {
        // A byte that never occurs in UTF-8 separates the two parts.
        kept.push(0xFF);
        // Writing a `Value` into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut kept, meta);
    }
    encode(&kept)
}

/// The version of a resource read: the text of its one `contents` entry.
pub fn of_text(text: &str) -> String {
    encode(&stripped(text))
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
fn encode(bytes: &[u8]) -> String {
    let digest = digest128(bytes);
    let mut out = String::with_capacity(PREFIX.len() + 22);
    out.push_str(PREFIX);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode_string(digest, &mut out);
    out
}

/// `text` without the values of the volatile members.
fn stripped(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut drop: Vec<(usize, usize)> = Vec::new();
    for key in VOLATILE {
        for at in memchr::memmem::find_iter(bytes, key.as_bytes()) {
            let start = at + key.len();
            drop.push((start, value_end(bytes, start)));
        }
    }
    for at in memchr::memmem::find_iter(bytes, OBSERVED_AT.as_bytes()) {
        let start = at + OBSERVED_AT.len();
        let end = value_end(bytes, start);
        let now = bytes[end..].starts_with(UNKNOWN_STATE.as_bytes())
            || NOW_SOURCES
                .iter()
                .any(|s| bytes[..at].ends_with(s.as_bytes()));
        if now {
            drop.push((start, end));
        }
    }
    if drop.is_empty() {
        return bytes.to_vec();
    }
    drop.sort_unstable();
    let mut kept = Vec::with_capacity(bytes.len());
    let mut from = 0;
    for (start, end) in drop {
        if start >= from {
            kept.extend_from_slice(&bytes[from..start]);
            from = end;
        }
    }
    kept.extend_from_slice(&bytes[from..]);
    kept
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
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
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

/// Two multiply-fold lanes over 16-byte blocks, each lane taking both
/// words in a different order, finished with the length: 16 bytes.
fn digest128(bytes: &[u8]) -> [u8; 16] {
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(w)
    };
    let (mut a, mut b) = (K[0], K[1]);
    let mut blocks = bytes.chunks_exact(16);
    for block in &mut blocks {
        let (w0, w1) = (word(&block[..8]), word(&block[8..]));
        a = fold(w0 ^ a ^ K[2], w1 ^ K[3]);
        b = fold(w1 ^ b ^ K[3], w0 ^ K[2]);
    }
    let rest = blocks.remainder();
    let (w0, w1) = (
        word(&rest[..rest.len().min(8)]),
        word(rest.get(8..).unwrap_or_default()),
    );
    let len = bytes.len() as u64;
    a = fold(w0 ^ a ^ K[2], w1 ^ len ^ K[3]);
    b = fold(w1 ^ b ^ K[3], w0 ^ len ^ K[2]);
    // Finish: each lane mixed with the other, so every input bit reaches
    // every output bit.
    let x = fold(a ^ K[0], b ^ K[1]);
    let y = fold(b ^ K[2], a ^ K[3] ^ len);
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&x.to_le_bytes());
    out[8..].copy_from_slice(&y.to_le_bytes());
    out
}

#[cfg(test)]
mod tests;
