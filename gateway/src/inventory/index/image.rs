//! Index images (docs/operations.md "Index images"): one file per snapshot
//! holding the index's large per-vehicle payloads ([`super::payload`]) and,
//! after them, everything else the index keeps on the heap, so that a
//! restarting replica reads its indexes back instead of decoding,
//! rendering and checking every vehicle again (docs/benchmarks.md "Index
//! images").
//!
//! Layout, little-endian: a [`HEADER`]-byte header (magic, [`LAYOUT`], the
//! renderer fingerprint, SLA, snapshot id, payload and heap lengths, row
//! count, SHA-256 of the heap part), the payloads, then the heap part.
//! Plain arrays rather than a serialization framework: the heap part is a
//! dozen flat arrays of integers and strings, read back with bounds checks
//! into exactly sized vectors, with no new dependency.
//!
//! A file is written under a temporary name and renamed into place only
//! when complete and synced, and is never modified once named: a reader
//! (this process's indexes read payloads from it by offset) then never
//! sees it change, and a half-written file is never taken for an image.
//! Anything unexpected when loading (short, corrupt, another layout,
//! renderer, SLA or snapshot) is an error and the snapshot is built as
//! without an image.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use super::payload::{PayloadWriter, Payloads};
use super::{
    Arena, Interner, NO_BASIS, PieceArena, PieceNumbers, Postings, Row, SnapshotIndex,
    SnapshotMeta, SourceSummary, TextIndex, Totals,
};

/// Bumped whenever what an image holds or how it is laid out changes
/// (the index's fields, `Row`, the payload formats). 5: a row's head
/// split, the full-only members compressed and the concise ones plain
/// (`index/rendered.rs`).
pub(crate) const LAYOUT: u32 = 5;
/// Bytes reserved for the header at the start of the file.
pub(super) const HEADER: u64 = 512;
const MAGIC: &[u8; 8] = b"DAGIMG\r\n";
const MAX_SNAPSHOT_ID: usize = 300;

/// Where a replica keeps its index images, and the fingerprint of what the
/// stored renderings and their schema verdicts depend on besides the
/// record and the SLA: the vehicle schema and this build.
#[derive(Debug, Clone)]
pub(crate) struct ImageCache {
    dir: PathBuf,
    renderer: [u8; 16],
}

static TEMPORARY: AtomicU64 = AtomicU64::new(0);

impl ImageCache {
    /// Images in `dir`, for renderings checked against `vehicle_schema`.
    pub fn new(dir: PathBuf, vehicle_schema: &serde_json::Value) -> ImageCache {
        let mut h = Sha256::new();
        // The renderer is this build's code: its version, and the schema
        // whose verdict the image stores.
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        h.update(LAYOUT.to_le_bytes());
        h.update(vehicle_schema.to_string().as_bytes());
        let digest = h.finalize();
        let mut renderer = [0u8; 16];
        renderer.copy_from_slice(&digest[..16]);
        ImageCache { dir, renderer }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file name of a snapshot's image: snapshot id (hex when it is not
    /// a plain token), layout, renderer and SLA.
    fn name(&self, snapshot_id: &str, sla: u32) -> String {
        format!(
            "{}.L{LAYOUT}.{}.sla{sla}.idx",
            file_token(snapshot_id),
            hex::encode(&self.renderer[..6])
        )
    }

    pub fn path(&self, snapshot_id: &str, sla: u32) -> PathBuf {
        self.dir.join(self.name(snapshot_id, sla))
    }

    /// A writer whose payloads go to a new temporary file of this cache.
    pub(crate) fn writer(
        &self,
        snapshot_id: &str,
        sla: u32,
        expected: usize,
    ) -> io::Result<PayloadWriter> {
        if snapshot_id.len() > MAX_SNAPSHOT_ID {
            return Err(io::Error::other("snapshot id too long for an image"));
        }
        std::fs::create_dir_all(&self.dir)?;
        let temporary = self.dir.join(format!(
            "{}.tmp{}-{}",
            self.name(snapshot_id, sla),
            std::process::id(),
            TEMPORARY.fetch_add(1, Ordering::Relaxed)
        ));
        PayloadWriter::file(temporary, HEADER, expected.min(1 << 22) * 2)
    }

    /// Completes the image of `index`, whose payloads are in `temporary`:
    /// the heap part and the header are written, the file synced and
    /// renamed to its name. On an error the temporary file is removed (the
    /// index keeps reading its payloads through its open handle).
    pub fn store(&self, index: &SnapshotIndex, temporary: &Path) -> io::Result<PathBuf> {
        let finished = self.finish(index, temporary);
        if finished.is_err() {
            let _ = std::fs::remove_file(temporary);
        }
        finished
    }

    fn finish(&self, index: &SnapshotIndex, temporary: &Path) -> io::Result<PathBuf> {
        let (file, base, payload_len) = index
            .payloads
            .file()
            .ok_or_else(|| io::Error::other("the index's payloads are not in a file"))?;
        let mut out = file.try_clone()?;
        io::Seek::seek(&mut out, io::SeekFrom::Start(base + payload_len))?;
        let mut heap = Hashing {
            out: BufWriter::with_capacity(1 << 20, out),
            hash: Sha256::new(),
            len: 0,
        };
        write_heap(index, &mut heap)?;
        let Hashing { out, hash, len } = heap;
        out.into_inner().map_err(io::IntoInnerError::into_error)?;
        let mut header = Vec::with_capacity(HEADER as usize);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&LAYOUT.to_le_bytes());
        header.extend_from_slice(&self.renderer);
        header.extend_from_slice(&index.inventory_sla_seconds.to_le_bytes());
        header.extend_from_slice(&(index.len() as u64).to_le_bytes());
        header.extend_from_slice(&payload_len.to_le_bytes());
        header.extend_from_slice(&len.to_le_bytes());
        header.extend_from_slice(&hash.finalize());
        let id = index.meta.snapshot_id.as_bytes();
        header.extend_from_slice(&(id.len() as u32).to_le_bytes());
        header.extend_from_slice(id);
        if header.len() as u64 > HEADER {
            return Err(io::Error::other("snapshot id too long for an image"));
        }
        super::payload::write_at(file, &header, 0)?;
        file.sync_all()?;
        let target = self.path(&index.meta.snapshot_id, index.inventory_sla_seconds);
        // The rename is the commit: before it no reader takes the file for
        // an image, after it the file is never written again.
        std::fs::rename(temporary, &target)?;
        Ok(target)
    }

    /// The index of `meta`'s snapshot under `sla` read from its image, or
    /// `Ok(None)` when there is no image; `Err` when there is one that
    /// cannot be used (the caller builds instead and removes it).
    pub fn load(&self, meta: SnapshotMeta, sla: u32) -> Result<Option<SnapshotIndex>, String> {
        let path = self.path(&meta.snapshot_id, sla);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        self.read(file, meta, sla)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    fn read(&self, file: File, meta: SnapshotMeta, sla: u32) -> io::Result<SnapshotIndex> {
        let mut header = vec![0u8; HEADER as usize];
        super::payload::read_at(&file, &mut header, 0)?;
        let mut h = Dec {
            input: &header[..],
            hash: None,
            left: HEADER,
        };
        if h.bytes(8)? != MAGIC {
            return Err(bad("not an index image"));
        }
        if h.u32()? != LAYOUT {
            return Err(bad("another layout version"));
        }
        if h.bytes(16)? != self.renderer {
            return Err(bad("another renderer"));
        }
        if h.u32()? != sla {
            return Err(bad("another SLA"));
        }
        let rows = usize::try_from(h.u64()?).map_err(|_| bad("row count"))?;
        let payload_len = h.u64()?;
        let heap_len = h.u64()?;
        let checksum = h.bytes(32)?.to_vec();
        let id_len = h.u32()? as usize;
        if h.bytes(id_len)? != meta.snapshot_id.as_bytes() {
            return Err(bad("another snapshot"));
        }
        let heap_at = HEADER
            .checked_add(payload_len)
            .ok_or_else(|| bad("lengths"))?;
        if file.metadata()?.len()
            != heap_at
                .checked_add(heap_len)
                .ok_or_else(|| bad("lengths"))?
        {
            return Err(bad("the file's length is not the header's"));
        }
        let mut reader = file.try_clone()?;
        io::Seek::seek(&mut reader, io::SeekFrom::Start(heap_at))?;
        let mut d = Dec {
            input: BufReader::with_capacity(1 << 20, reader),
            hash: Some(Sha256::new()),
            left: heap_len,
        };
        let index = read_heap(&mut d, meta, sla, rows, file, payload_len)?;
        if d.left != 0 {
            return Err(bad("trailing bytes"));
        }
        let digest = d.hash.take().map(Sha256::finalize);
        if digest.as_deref() != Some(&checksum[..]) {
            return Err(bad("checksum mismatch"));
        }
        // The stored verdicts are logged as the check logged them, so an
        // operator learns of each failing vehicle at every start.
        for (row, reason) in index.failed.iter().zip(&index.failed_reasons) {
            index.log_failure(*row as usize, reason);
        }
        Ok(index)
    }

    /// Removes the images of `snapshot_id` except `keep` (a file name), and
    /// temporary files this process left for it. Best effort.
    pub fn remove_snapshot(&self, snapshot_id: &str, keep: Option<&Path>) {
        let prefix = format!("{}.", file_token(snapshot_id));
        self.remove_where(|name| name.starts_with(&prefix), keep);
    }

    /// Removes every image (and temporary file) whose snapshot is not one
    /// of `current`: left by snapshots superseded while no replica ran.
    /// Images of other replicas' organizations sharing the directory are
    /// kept as long as their snapshot is current in the store.
    pub fn remove_all_but(&self, current: &[&str]) {
        let tokens: Vec<String> = current.iter().map(|id| file_token(id)).collect();
        self.remove_where(
            |name| {
                let token = name.split('.').next().unwrap_or("");
                (name.ends_with(".idx") || name.contains(".idx.tmp"))
                    && !tokens.iter().any(|t| t == token)
            },
            None,
        );
    }

    fn remove_where(&self, remove: impl Fn(&str) -> bool, keep: Option<&Path>) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if remove(name) && keep != Some(path.as_path()) {
                // An index still serving from the file keeps reading it
                // through its open handle.
                if std::fs::remove_file(&path).is_ok() {
                    tracing::info!(image = %path.display(), "removed an index image of a replaced snapshot");
                }
            }
        }
    }
}

/// `id` when it is a plain file-name token, else `x` and its hex.
fn file_token(id: &str) -> String {
    if !id.is_empty()
        && id.len() <= 120
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        id.to_owned()
    } else {
        format!("x{}", hex::encode(&Sha256::digest(id.as_bytes())[..16]))
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

struct Hashing<W> {
    out: W,
    hash: Sha256,
    len: u64,
}

impl<W: Write> Hashing<W> {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.hash.update(bytes);
        self.len += bytes.len() as u64;
        self.out.write_all(bytes)
    }
    fn u32(&mut self, v: u32) -> io::Result<()> {
        self.put(&v.to_le_bytes())
    }
    fn u64(&mut self, v: u64) -> io::Result<()> {
        self.put(&v.to_le_bytes())
    }
    fn i64(&mut self, v: i64) -> io::Result<()> {
        self.put(&v.to_le_bytes())
    }
    fn len(&mut self, n: usize) -> io::Result<()> {
        self.u64(n as u64)
    }
    fn str(&mut self, s: &str) -> io::Result<()> {
        self.len(s.len())?;
        self.put(s.as_bytes())
    }
    fn u32s(&mut self, v: &[u32]) -> io::Result<()> {
        self.len(v.len())?;
        for x in v {
            self.u32(*x)?;
        }
        Ok(())
    }
    fn u64s(&mut self, v: &[u64]) -> io::Result<()> {
        self.len(v.len())?;
        for x in v {
            self.u64(*x)?;
        }
        Ok(())
    }
    fn time(&mut self, t: chrono::DateTime<chrono::Utc>) -> io::Result<()> {
        self.i64(t.timestamp())?;
        self.u32(t.timestamp_subsec_nanos())
    }
}

/// Bounds-checked reads of the header or the heap part, each length
/// checked against what is left before anything is allocated.
struct Dec<R> {
    input: R,
    hash: Option<Sha256>,
    left: u64,
}

impl<R: Read> Dec<R> {
    fn bytes(&mut self, n: usize) -> io::Result<Vec<u8>> {
        if n as u64 > self.left {
            return Err(bad("a length runs past the end"));
        }
        let mut v = vec![0u8; n];
        self.input.read_exact(&mut v)?;
        if let Some(h) = &mut self.hash {
            h.update(&v);
        }
        self.left -= n as u64;
        Ok(v)
    }
    fn array<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        let v = self.bytes(N)?;
        v.try_into().map_err(|_| bad("short"))
    }
    fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn i64(&mut self) -> io::Result<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    /// A count of items of `size` bytes each that fit in what is left.
    fn count(&mut self, size: u64) -> io::Result<usize> {
        let n = self.u64()?;
        if n.checked_mul(size).is_none_or(|b| b > self.left) {
            return Err(bad("a count runs past the end"));
        }
        usize::try_from(n).map_err(|_| bad("count"))
    }
    fn string(&mut self) -> io::Result<String> {
        let n = self.count(1)?;
        String::from_utf8(self.bytes(n)?).map_err(|_| bad("not UTF-8"))
    }
    fn u32s(&mut self) -> io::Result<Vec<u32>> {
        let n = self.count(4)?;
        let raw = self.bytes(n * 4)?;
        Ok(raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
    fn u64s(&mut self) -> io::Result<Vec<u64>> {
        let n = self.count(8)?;
        let raw = self.bytes(n * 8)?;
        Ok(raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect())
    }
    fn time(&mut self) -> io::Result<chrono::DateTime<chrono::Utc>> {
        let secs = self.i64()?;
        let nanos = self.u32()?;
        chrono::DateTime::from_timestamp(secs, nanos).ok_or_else(|| bad("time"))
    }
}

const ROW_BYTES: usize = 16 + 8 * 3 + 4 * 4 + 5;

fn write_heap<W: Write>(ix: &SnapshotIndex, w: &mut Hashing<W>) -> io::Result<()> {
    w.len(ix.rows.len())?;
    let mut buf = Vec::with_capacity(ROW_BYTES * 1024);
    for chunk in ix.rows.chunks(1024) {
        buf.clear();
        for r in chunk {
            buf.extend_from_slice(&r.odometer_mm.to_le_bytes());
            buf.extend_from_slice(&r.price_minor.to_le_bytes());
            buf.extend_from_slice(&r.basis_us.to_le_bytes());
            buf.extend_from_slice(&r.observed_us.to_le_bytes());
            buf.extend_from_slice(&r.make.to_le_bytes());
            buf.extend_from_slice(&r.model.to_le_bytes());
            buf.extend_from_slice(&r.currency.to_le_bytes());
            buf.extend_from_slice(&r.year.to_le_bytes());
            buf.extend_from_slice(&[
                r.condition,
                r.vehicle_type,
                r.availability,
                r.history,
                r.certification,
            ]);
        }
        w.put(&buf)?;
    }
    for interner in [&ix.makes, &ix.models] {
        w.len(interner.exact.len())?;
        for (exact, lower) in interner.exact.iter().zip(&interner.lower) {
            w.str(exact)?;
            w.str(lower)?;
        }
    }
    let (vocab, starts, ends, postings) = ix.text.parts();
    w.str(vocab)?;
    w.u32s(starts)?;
    w.u32s(ends)?;
    w.u32s(postings)?;
    for arena in [&ix.vehicle_ids, &ix.vins, &ix.stock_numbers] {
        w.str(&arena.text)?;
        w.u32s(&arena.ends)?;
    }
    w.u32s(&ix.by_vehicle_id)?;
    w.u32s(&ix.by_vin)?;
    w.u32s(&ix.by_stock)?;
    w.len(ix.sources.len())?;
    for s in &ix.sources {
        w.str(&s.source_name)?;
        w.str(&s.authority)?;
        w.str(&s.content_digest)?;
        w.time(s.observed_at)?;
    }
    w.len(ix.pieces.numbers.len())?;
    for n in &ix.pieces.numbers {
        w.i64(n.valid_until_us)?;
        w.i64(n.stocked_us)?;
        w.u32(n.max_age_seconds)?;
    }
    w.u64s(ix.payloads.ends())?;
    // The schema check's verdict (`check_pieces`): a stored pass is the
    // loader's pass, because the check is a function of the rendering,
    // and the rendering of the record and SLA the image is named for by
    // the renderer (this build and the vehicle schema) named in it.
    w.u32s(&ix.failed)?;
    for reason in &ix.failed_reasons {
        w.str(reason)?;
    }
    Ok(())
}

fn ascending_ends(ends: &[u32], text: &str, n: usize) -> io::Result<()> {
    if ends.len() != n
        || ends.windows(2).any(|w| w[0] > w[1])
        || ends.last().map_or(0, |e| *e as usize) != text.len()
        || !ends.iter().all(|e| text.is_char_boundary(*e as usize))
    {
        return Err(bad("string offsets"));
    }
    Ok(())
}

fn all_below(v: &[u32], n: usize) -> io::Result<()> {
    if v.iter().any(|r| *r as usize >= n) {
        return Err(bad("a row number past the end"));
    }
    Ok(())
}

fn read_heap<R: Read>(
    d: &mut Dec<R>,
    meta: SnapshotMeta,
    sla: u32,
    n: usize,
    file: File,
    payload_len: u64,
) -> io::Result<SnapshotIndex> {
    if d.count(ROW_BYTES as u64)? != n {
        return Err(bad("row count"));
    }
    let mut rows = Vec::with_capacity(n);
    let mut left = n;
    while left > 0 {
        let k = left.min(1024);
        let raw = d.bytes(k * ROW_BYTES)?;
        for c in raw.chunks_exact(ROW_BYTES) {
            let le8 = |a: usize| i64::from_le_bytes(c[a..a + 8].try_into().unwrap_or_default());
            let le4 = |a: usize| u32::from_le_bytes(c[a..a + 4].try_into().unwrap_or_default());
            rows.push(Row {
                odometer_mm: i128::from_le_bytes(c[0..16].try_into().unwrap_or_default()),
                price_minor: le8(16),
                basis_us: le8(24),
                observed_us: le8(32),
                make: le4(40),
                model: le4(44),
                currency: le4(48),
                year: i32::from_le_bytes(c[52..56].try_into().unwrap_or_default()),
                condition: c[56],
                vehicle_type: c[57],
                availability: c[58],
                history: c[59],
                certification: c[60],
            });
        }
        left -= k;
    }
    let mut interners = Vec::with_capacity(2);
    for _ in 0..2 {
        let k = d.count(16)?;
        let mut i = Interner::default();
        for _ in 0..k {
            i.exact.push(d.string()?.into());
            i.lower.push(d.string()?.into());
        }
        interners.push(i);
    }
    let models = interners.pop().unwrap_or_default();
    let makes = interners.pop().unwrap_or_default();
    // Every code indexes a table: out of range is a corrupt image.
    if rows.iter().any(|r| {
        r.make as usize >= makes.exact.len()
            || r.model as usize >= models.exact.len()
            || usize::from(r.condition) >= super::CONDITIONS.len()
            || usize::from(r.vehicle_type) >= super::VEHICLE_TYPES.len()
            || usize::from(r.availability) >= super::AVAILABILITY.len()
            || usize::from(r.history) >= super::HISTORY.len()
            || usize::from(r.certification) >= super::CERTIFICATION.len()
    }) {
        return Err(bad("a row code out of range"));
    }
    let vocab = d.string()?;
    let starts = d.u32s()?;
    let ends = d.u32s()?;
    let postings = d.u32s()?;
    let words = ends.len();
    if starts.len() != words + 1
        || starts.windows(2).any(|w| w[0] >= w[1])
        || starts.last().map(|s| *s as usize) != Some(vocab.len())
        || !starts.iter().all(|s| vocab.is_char_boundary(*s as usize))
        || ends.windows(2).any(|w| w[0] > w[1])
        || ends.last().map_or(0, |e| *e as usize) != postings.len()
    {
        return Err(bad("text index"));
    }
    all_below(&postings, n)?;
    let text = TextIndex::from_parts(vocab, starts, ends, postings);
    let mut arenas = Vec::with_capacity(3);
    for _ in 0..3 {
        let text = d.string()?;
        let ends = d.u32s()?;
        ascending_ends(&ends, &text, n)?;
        arenas.push(Arena { text, ends });
    }
    let stock_numbers = arenas.pop().unwrap_or_default();
    let vins = arenas.pop().unwrap_or_default();
    let vehicle_ids = arenas.pop().unwrap_or_default();
    let by_vehicle_id = d.u32s()?;
    let by_vin = d.u32s()?;
    let by_stock = d.u32s()?;
    if by_vehicle_id.len() != n || by_vin.len() > n || by_stock.len() > n {
        return Err(bad("lookup orders"));
    }
    all_below(&by_vehicle_id, n)?;
    all_below(&by_vin, n)?;
    all_below(&by_stock, n)?;
    let mut vehicle_id_rank = vec![u32::MAX; n];
    for (position, row) in by_vehicle_id.iter().enumerate() {
        vehicle_id_rank[*row as usize] = super::row_u32(position);
    }
    if vehicle_id_rank.contains(&u32::MAX) {
        return Err(bad("the vehicle id order is not a permutation"));
    }
    let k = d.count(3 * 8 + 12)?;
    let mut sources = Vec::with_capacity(k);
    for _ in 0..k {
        sources.push(SourceSummary {
            source_name: d.string()?,
            authority: d.string()?,
            content_digest: d.string()?,
            observed_at: d.time()?,
        });
    }
    if d.count(20)? != n {
        return Err(bad("piece numbers"));
    }
    let mut numbers = Vec::with_capacity(n);
    for _ in 0..n {
        numbers.push(PieceNumbers {
            valid_until_us: d.i64()?,
            stocked_us: d.i64()?,
            max_age_seconds: d.u32()?,
        });
    }
    let payload_ends = d.u64s()?;
    if payload_ends.len() != 2 * n || payload_ends.last().copied().unwrap_or(0) != payload_len {
        return Err(bad("payload offsets"));
    }
    let payloads = Payloads::in_file(file, HEADER, payload_ends)?;
    let failed = d.u32s()?;
    if failed.windows(2).any(|w| w[0] >= w[1]) {
        return Err(bad("failed rows"));
    }
    all_below(&failed, n)?;
    let mut failed_reasons = Vec::with_capacity(failed.len());
    for _ in 0..failed.len() {
        failed_reasons.push(d.string()?.into_boxed_str());
    }

    // What the build derives from the above, derived again.
    let totals = Totals::of(&rows, makes.exact.len(), models.exact.len());
    let make_rows = Postings::build(n, makes.exact.len(), |i| rows[i].make);
    let model_rows = Postings::build(n, models.exact.len(), |i| rows[i].model);
    let max_basis_us = rows.iter().map(|r| r.basis_us).max().unwrap_or(NO_BASIS);
    Ok(SnapshotIndex {
        meta,
        inventory_sla_seconds: sla,
        payloads,
        rows,
        makes,
        models,
        make_rows,
        model_rows,
        orders: Default::default(),
        max_basis_us,
        make_price: std::sync::OnceLock::new(),
        text,
        vehicle_ids,
        vins,
        stock_numbers,
        by_vehicle_id,
        vehicle_id_rank,
        by_vin,
        by_stock,
        sources,
        pieces: PieceArena { numbers },
        totals,
        failed,
        failed_reasons,
    })
}
