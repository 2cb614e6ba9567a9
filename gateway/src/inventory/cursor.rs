//! Opaque, sealed keyset cursors for `dealeragent.inventory.search`
//! (DAP-CORE-026, SEC-006; fixes weakness 3 of the reference gateway).
//!
//! A cursor is `base64url(payload) "." base64url(HMAC-SHA256(key, payload))`
//! (no padding). The payload is a compact binary record, signed but not
//! encrypted, holding no PII (no VIN, no caller identity — only digests):
//!
//! | field | bytes |
//! |---|---|
//! | format version (1) | 1 |
//! | query fingerprint: SHA-256 of the canonical request without `page` (`search::query_fingerprint`), first 16 bytes | 16 |
//! | grant fingerprint: HMAC (same key) of the SHA-256 of the caller's opaque grant string, first 16 bytes — keyed so identities cannot be guessed from a cursor | 16 |
//! | rooftop-set fingerprint: SHA-256 of the sorted resolved rooftop ids, first 16 bytes | 16 |
//! | issued-at, expires-at (unix seconds) | varints |
//! | snapshot pin: the snapshot version of each rooftop of the set, in sorted rooftop order (or, when that would not fit in 2048 characters, a 16-byte digest of the versions) | varints |
//! | page key: sort key, `vehicle_id`, `rooftop_id` of the page's last vehicle | varints + strings |
//!
//! [`open`] accepts a cursor only when the MAC verifies (constant time),
//! the format is known, it has not expired, and the query, grant and
//! rooftop-set fingerprints equal the ones of the current call. Every
//! failure has the same value-free message ([`INVALID_CURSOR_MESSAGE`]);
//! only the enum variant (for tests and logs) tells them apart.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use super::search::{PageKey, SortKey};

/// The only message a caller ever sees for a bad cursor.
pub const INVALID_CURSOR_MESSAGE: &str = "The pagination cursor is invalid for this query, caller or time; start again without a cursor.";
/// Default lifetime of a cursor: 15 minutes.
pub const DEFAULT_LIFETIME_SECONDS: i64 = 15 * 60;
/// Longest cursor (the schema's `pageRequest.cursor` limit).
pub const MAX_CURSOR_CHARS: usize = 2048;

const FORMAT_VERSION: u8 = 1;
const MAC_DOMAIN: &[u8] = b"dealeragent.inventory.search.cursor.v1\0";
const FP: usize = 16;

/// Why a cursor was refused. `Display` is the same for every variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorError {
    /// Not base64, no separator, truncated, trailing bytes, too long.
    Malformed,
    /// The MAC does not verify (tampered, or sealed with another key).
    BadSignature,
    /// A format version this gateway does not read.
    UnsupportedVersion,
    /// `expires_at` has passed.
    Expired,
    /// Issued for another query (filters, sort, text, rooftops asked).
    WrongQuery,
    /// Issued to another caller.
    WrongGrant,
    /// Issued for another resolved rooftop set.
    WrongRooftops,
}

impl CursorError {
    /// A short label for metrics; the caller-facing message stays the one
    /// [`INVALID_CURSOR_MESSAGE`] for every reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::BadSignature => "bad_signature",
            Self::UnsupportedVersion => "unsupported_version",
            Self::Expired => "expired",
            Self::WrongQuery => "wrong_query",
            Self::WrongGrant => "wrong_grant",
            Self::WrongRooftops => "wrong_rooftops",
        }
    }
}

impl fmt::Display for CursorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(INVALID_CURSOR_MESSAGE)
    }
}

impl std::error::Error for CursorError {}

fn fp(domain: &[u8], parts: &[&[u8]]) -> [u8; FP] {
    let mut h = Sha256::new();
    h.update(domain);
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p);
    }
    let full: [u8; 32] = h.finalize().into();
    let mut out = [0u8; FP];
    out.copy_from_slice(&full[..FP]);
    out
}

/// What a cursor must be bound to, computed from the current call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorBinding {
    query: [u8; FP],
    grant: [u8; FP],
    rooftops: [u8; FP],
    rooftop_ids: Vec<String>,
}

impl CursorBinding {
    /// `query_fingerprint`: `SearchQuery::fingerprint`. `grant`: an opaque
    /// string identifying the caller's grant (e.g. `"anonymous"` or a
    /// principal hash); it is hashed, never stored. `rooftop_ids`: the
    /// RESOLVED rooftop set searched (any order, duplicates ignored).
    pub fn new<S: AsRef<str>>(
        query_fingerprint: &[u8; 32],
        grant: &str,
        rooftop_ids: &[S],
    ) -> CursorBinding {
        let mut ids: Vec<String> = rooftop_ids.iter().map(|s| s.as_ref().to_owned()).collect();
        ids.sort();
        ids.dedup();
        let parts: Vec<&[u8]> = ids.iter().map(|s| s.as_bytes()).collect();
        let mut query = [0u8; FP];
        query.copy_from_slice(&query_fingerprint[..FP]);
        CursorBinding {
            query,
            grant: fp(b"grant\0", &[grant.as_bytes()]),
            rooftops: fp(b"rooftops\0", &parts),
            rooftop_ids: ids,
        }
    }

    /// The resolved rooftop set, sorted.
    pub fn rooftop_ids(&self) -> &[String] {
        &self.rooftop_ids
    }
}

/// The snapshots the first page read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotPin {
    /// The version of each rooftop of the binding's set, in sorted rooftop
    /// order; `None` for a rooftop that had no snapshot.
    Versions(Vec<Option<i64>>),
    /// A digest of those versions, used when the list would make the cursor
    /// longer than 2048 characters (very large rooftop sets): it can only
    /// say whether the versions are still the same.
    Digest([u8; FP]),
}

impl SnapshotPin {
    fn of(binding: &CursorBinding, snapshots: &BTreeMap<String, i64>) -> SnapshotPin {
        SnapshotPin::Versions(
            binding
                .rooftop_ids
                .iter()
                .map(|r| snapshots.get(r).copied())
                .collect(),
        )
    }

    fn digest(versions: &[Option<i64>]) -> [u8; FP] {
        let mut bytes = Vec::with_capacity(versions.len() * 9);
        for v in versions {
            match v {
                None => bytes.push(0),
                Some(v) => {
                    bytes.push(1);
                    bytes.extend_from_slice(&v.to_be_bytes());
                }
            }
        }
        fp(b"snapshots\0", &[&bytes])
    }
}

/// The content of a cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorPayload {
    query: [u8; FP],
    grant: [u8; FP],
    rooftops: [u8; FP],
    /// Unix seconds.
    pub issued_at: i64,
    /// Unix seconds; the cursor is refused from this instant on.
    pub expires_at: i64,
    pub snapshots: SnapshotPin,
    /// Where the next page starts (strictly after this key).
    pub key: PageKey,
}

impl CursorPayload {
    /// A payload bound to `binding`, pinning `snapshots` (rooftop id →
    /// snapshot version of the first page), valid for
    /// [`DEFAULT_LIFETIME_SECONDS`] from `now`.
    pub fn new(
        binding: &CursorBinding,
        snapshots: &BTreeMap<String, i64>,
        key: PageKey,
        now: DateTime<Utc>,
    ) -> CursorPayload {
        CursorPayload::with_lifetime(binding, snapshots, key, now, DEFAULT_LIFETIME_SECONDS)
    }

    /// Like [`CursorPayload::new`] with another lifetime (seconds).
    pub fn with_lifetime(
        binding: &CursorBinding,
        snapshots: &BTreeMap<String, i64>,
        key: PageKey,
        now: DateTime<Utc>,
        lifetime_seconds: i64,
    ) -> CursorPayload {
        let issued_at = now.timestamp();
        CursorPayload {
            query: binding.query,
            grant: binding.grant,
            rooftops: binding.rooftops,
            issued_at,
            expires_at: issued_at.saturating_add(lifetime_seconds),
            snapshots: SnapshotPin::of(binding, snapshots),
            key,
        }
    }

    /// The pinned snapshot versions by rooftop, when the cursor carries
    /// them (see [`SnapshotPin`]); `binding` is the one `open` checked.
    pub fn snapshot_versions(&self, binding: &CursorBinding) -> Option<BTreeMap<String, i64>> {
        match &self.snapshots {
            SnapshotPin::Versions(v) => Some(
                binding
                    .rooftop_ids
                    .iter()
                    .zip(v)
                    .filter_map(|(r, v)| v.map(|v| (r.clone(), v)))
                    .collect(),
            ),
            SnapshotPin::Digest(_) => None,
        }
    }

    /// True when `current` (rooftop id → snapshot version) is exactly what
    /// the first page read.
    pub fn snapshots_unchanged(
        &self,
        binding: &CursorBinding,
        current: &BTreeMap<String, i64>,
    ) -> bool {
        let SnapshotPin::Versions(now) = SnapshotPin::of(binding, current) else {
            return false;
        };
        match &self.snapshots {
            SnapshotPin::Versions(v) => *v == now,
            SnapshotPin::Digest(d) => *d == SnapshotPin::digest(&now),
        }
    }

    /// The instant of the first page (use it as `now` for the age filters
    /// of continuation pages).
    pub fn issued_at(&self) -> DateTime<Utc> {
        DateTime::from_timestamp(self.issued_at, 0).unwrap_or_default()
    }
}

// ---- binary encoding ----

fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn zigzag(v: i128) -> u128 {
    ((v << 1) ^ (v >> 127)) as u128
}

fn unzigzag(v: u128) -> i128 {
    ((v >> 1) as i128) ^ -((v & 1) as i128)
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u128);
    out.extend_from_slice(s.as_bytes());
}

fn encode(p: &CursorPayload) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.push(FORMAT_VERSION);
    out.extend_from_slice(&p.query);
    out.extend_from_slice(&p.grant);
    out.extend_from_slice(&p.rooftops);
    put_varint(&mut out, zigzag(i128::from(p.issued_at)));
    put_varint(&mut out, zigzag(i128::from(p.expires_at)));
    match &p.snapshots {
        SnapshotPin::Versions(v) => {
            out.push(0);
            put_varint(&mut out, v.len() as u128);
            for v in v {
                match v {
                    None => out.push(0),
                    Some(v) => {
                        out.push(1);
                        put_varint(&mut out, zigzag(i128::from(*v)));
                    }
                }
            }
        }
        SnapshotPin::Digest(d) => {
            out.push(1);
            out.extend_from_slice(d);
        }
    }
    out.push(u8::from(p.key.sort.missing));
    put_varint(&mut out, u128::from(p.key.sort.major));
    put_varint(&mut out, zigzag(p.key.sort.minor));
    put_str(&mut out, &p.key.vehicle_id);
    put_str(&mut out, &p.key.rooftop_id);
    out
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, CursorError> {
        let (b, rest) = self.bytes.split_first().ok_or(CursorError::Malformed)?;
        self.bytes = rest;
        Ok(*b)
    }

    fn take(&mut self, n: usize) -> Result<&[u8], CursorError> {
        if self.bytes.len() < n {
            return Err(CursorError::Malformed);
        }
        let (a, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(a)
    }

    fn fp(&mut self) -> Result<[u8; FP], CursorError> {
        let mut out = [0u8; FP];
        out.copy_from_slice(self.take(FP)?);
        Ok(out)
    }

    fn varint(&mut self) -> Result<u128, CursorError> {
        let mut v: u128 = 0;
        for shift in (0..=126).step_by(7) {
            let b = self.byte()?;
            v |= u128::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(CursorError::Malformed)
    }

    fn i64(&mut self) -> Result<i64, CursorError> {
        i64::try_from(unzigzag(self.varint()?)).map_err(|_| CursorError::Malformed)
    }

    fn string(&mut self) -> Result<String, CursorError> {
        let len = usize::try_from(self.varint()?).map_err(|_| CursorError::Malformed)?;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| CursorError::Malformed)
    }
}

fn decode(bytes: &[u8]) -> Result<CursorPayload, CursorError> {
    let mut r = Reader { bytes };
    if r.byte()? != FORMAT_VERSION {
        return Err(CursorError::UnsupportedVersion);
    }
    let query = r.fp()?;
    let grant = r.fp()?;
    let rooftops = r.fp()?;
    let issued_at = r.i64()?;
    let expires_at = r.i64()?;
    let snapshots = match r.byte()? {
        0 => {
            let n = usize::try_from(r.varint()?).map_err(|_| CursorError::Malformed)?;
            if n > bytes.len() {
                return Err(CursorError::Malformed);
            }
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push(match r.byte()? {
                    0 => None,
                    1 => Some(r.i64()?),
                    _ => return Err(CursorError::Malformed),
                });
            }
            SnapshotPin::Versions(v)
        }
        1 => SnapshotPin::Digest(r.fp()?),
        _ => return Err(CursorError::Malformed),
    };
    let missing = match r.byte()? {
        0 => false,
        1 => true,
        _ => return Err(CursorError::Malformed),
    };
    let major = u32::try_from(r.varint()?).map_err(|_| CursorError::Malformed)?;
    let minor = unzigzag(r.varint()?);
    let vehicle_id = r.string()?;
    let rooftop_id = r.string()?;
    if !r.bytes.is_empty() {
        return Err(CursorError::Malformed);
    }
    Ok(CursorPayload {
        query,
        grant,
        rooftops,
        issued_at,
        expires_at,
        snapshots,
        key: PageKey {
            sort: SortKey {
                missing,
                major,
                minor,
            },
            vehicle_id,
            rooftop_id,
        },
    })
}

fn mac(key: &[u8]) -> Hmac<Sha256> {
    let mut m =
        <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC accepts keys of any length");
    m.update(MAC_DOMAIN);
    m
}

/// The grant fingerprint as written on the wire: keyed, so that a cursor
/// never lets anyone test guesses of a caller identity against it (a
/// plain hash of a low-entropy principal name could be brute-forced).
fn blind(key: &[u8], grant: &[u8; FP]) -> [u8; FP] {
    let mut m = mac(key);
    m.update(b"grant\0");
    m.update(grant);
    let tag = m.finalize().into_bytes();
    let mut out = [0u8; FP];
    out.copy_from_slice(&tag[..FP]);
    out
}

fn token(key: &[u8], payload: &[u8]) -> String {
    let mut m = mac(key);
    m.update(payload);
    let tag = m.finalize().into_bytes();
    let mut out = URL_SAFE_NO_PAD.encode(payload);
    out.push('.');
    out.push_str(&URL_SAFE_NO_PAD.encode(tag));
    out
}

/// Seals `payload` with `key`. When the snapshot version list would make
/// the token longer than [`MAX_CURSOR_CHARS`], the versions are replaced by
/// their digest (see [`SnapshotPin::Digest`]); with identifiers within the
/// schema limits (128 characters) the result is always ≤ 2048 characters.
pub fn seal(key: &[u8], payload: &CursorPayload) -> String {
    let mut payload = payload.clone();
    payload.grant = blind(key, &payload.grant);
    let payload = &payload;
    let sealed = token(key, &encode(payload));
    if sealed.len() <= MAX_CURSOR_CHARS {
        return sealed;
    }
    if let SnapshotPin::Versions(v) = &payload.snapshots {
        let mut compact = payload.clone();
        compact.snapshots = SnapshotPin::Digest(SnapshotPin::digest(v));
        return token(key, &encode(&compact));
    }
    sealed
}

/// Opens a cursor for the call described by `expected` at `now`.
///
/// # Errors
/// A [`CursorError`] for any failure; all display the same message.
pub fn open(
    key: &[u8],
    token: &str,
    expected: &CursorBinding,
    now: DateTime<Utc>,
) -> Result<CursorPayload, CursorError> {
    let opened = open_checked(key, token, expected, now);
    if let Err(e) = &opened {
        // Refusals by reason (docs/operations.md "Metrics"): an
        // expired-cursor spike means clients page too slowly; bad
        // signatures, tampering or a rotated key.
        metrics::counter!("dealer_gateway_cursor_refusals_total", "reason" => e.reason())
            .increment(1);
    }
    opened
}

fn open_checked(
    key: &[u8],
    token: &str,
    expected: &CursorBinding,
    now: DateTime<Utc>,
) -> Result<CursorPayload, CursorError> {
    if token.len() > MAX_CURSOR_CHARS {
        return Err(CursorError::Malformed);
    }
    let (body, tag) = token.split_once('.').ok_or(CursorError::Malformed)?;
    let payload = URL_SAFE_NO_PAD
        .decode(body)
        .map_err(|_| CursorError::Malformed)?;
    let tag = URL_SAFE_NO_PAD
        .decode(tag)
        .map_err(|_| CursorError::Malformed)?;
    let mut m = mac(key);
    m.update(&payload);
    m.verify_slice(&tag)
        .map_err(|_| CursorError::BadSignature)?;
    let mut p = decode(&payload)?;
    if now.timestamp() >= p.expires_at || p.issued_at > p.expires_at {
        return Err(CursorError::Expired);
    }
    if p.query != expected.query {
        return Err(CursorError::WrongQuery);
    }
    if p.grant != blind(key, &expected.grant) {
        return Err(CursorError::WrongGrant);
    }
    p.grant = expected.grant;
    if p.rooftops != expected.rooftops {
        return Err(CursorError::WrongRooftops);
    }
    if let SnapshotPin::Versions(v) = &p.snapshots
        && v.len() != expected.rooftop_ids.len()
    {
        return Err(CursorError::Malformed);
    }
    Ok(p)
}
