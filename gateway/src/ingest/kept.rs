//! An import's feed checked once (docs/benchmarks.md "Import: checked
//! once"): the checking pass keeps every vehicle it checked, written as the
//! text the store keeps, in a spill file of its own; the write pass reads
//! them back instead of parsing and checking the feed a second time.
//!
//! What is written is what was checked, byte for byte: the spill holds the
//! very records the checking pass produced. All or nothing still holds: the
//! spill is only handed out when every rule passed ([`check_and_keep`]
//! returns every problem otherwise, as [`super::check_feed`] does), and the
//! writer commits only after the last vehicle. Memory stays flat (docs/benchmarks.md
//! "Feed import memory"): the spill is a file, read a vehicle at a time.
//!
//! Records carry the file's content digest (DAP `source.content_digest`),
//! known only once the last byte is read, so the file is hashed first (a
//! read and SHA-256, a few percent of a check); the checking pass hashes
//! the bytes it parses too, and a file that changed in between is refused
//! with the words [`super::stream_feed`] uses.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest as _, Sha256};

use super::{FeedCheck, FeedFormat, IngestContext, IngestError, Progress};
use crate::inventory::model::VehicleRecord;
use crate::store::snapshot_write::StoredVehicle;

/// Vehicles between the checking thread and the thread writing the spill:
/// enough to keep both busy, few enough to bound memory.
const SPILL_CHANNEL: usize = 256;

/// The checked vehicles of a feed, in file order, each as the store keeps
/// it. The file is removed from its directory as soon as it is created, so
/// it disappears with its last handle, even if the process dies.
#[derive(Debug)]
pub struct KeptVehicles {
    file: File,
    /// Set only when the name could not be removed at creation (then it is
    /// removed on drop).
    path: Option<PathBuf>,
    count: usize,
}

impl Drop for KeptVehicles {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl KeptVehicles {
    /// Vehicles kept.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Read the vehicles back, in file order.
    pub fn read(mut self) -> std::io::Result<KeptReader> {
        self.file.rewind()?;
        let file = self.file.try_clone()?;
        Ok(KeptReader {
            input: BufReader::with_capacity(1 << 20, file),
            left: self.count,
            _kept: self,
        })
    }
}

/// The vehicles of a [`KeptVehicles`], one at a time.
pub struct KeptReader {
    input: BufReader<File>,
    left: usize,
    _kept: KeptVehicles,
}

impl Iterator for KeptReader {
    type Item = std::io::Result<StoredVehicle>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        Some(read_vehicle(&mut self.input))
    }
}

/// Pass 1 of an import that keeps what it checked: the file's digest from
/// `first` (the opened file), then every rule of [`super::check_feed`] over
/// the file at `path` (the same problems, all of them), each vehicle that
/// passes written to the spill on a second thread. `total` is the size in
/// bytes, for progress.
pub fn check_and_keep(
    format: FeedFormat,
    file_name: &str,
    path: &Path,
    first: impl Read,
    total: u64,
    ctx: &IngestContext,
    progress: &mut dyn FnMut(Progress),
) -> Result<(FeedCheck, KeptVehicles), IngestError> {
    let unreadable = |e: std::io::Error| IngestError::Unreadable {
        file: file_name.to_owned(),
        reason: format!("cannot be read: {e}"),
    };
    let digest = digest_of(first).map_err(unreadable)?;
    let input = File::open(path).map_err(unreadable)?;
    let (spill, spill_path) = create_spill().map_err(|e| IngestError::Unreadable {
        file: file_name.to_owned(),
        reason: format!("cannot create a temporary file for its checked vehicles: {e}"),
    })?;
    let (sender, receiver) = std::sync::mpsc::sync_channel::<VehicleRecord>(SPILL_CHANNEL);
    let writer = std::thread::spawn(move || write_spill(spill, &receiver));
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    let pass = super::run_pass(
        format,
        file_name,
        BufReader::with_capacity(1 << 20, input),
        total,
        Some(&digest),
        ctx,
        progress,
        &mut |v| {
            *counts.entry(v.rooftop_id.clone()).or_default() += 1;
            // A send fails only once the spill writer stopped: its join says why.
            let _ = sender.send(v);
        },
    );
    drop(sender);
    let written = writer.join();
    let pass = pass?;
    let spill_failed = |reason: String| IngestError::Unreadable {
        file: file_name.to_owned(),
        reason: format!("its checked vehicles cannot be kept in a temporary file: {reason}"),
    };
    let (file, count) = match written {
        Ok(Ok(done)) => done,
        Ok(Err(e)) => return Err(spill_failed(e)),
        Err(_) => return Err(spill_failed("the writing thread failed".into())),
    };
    if pass.content_digest != digest {
        return Err(IngestError::Unreadable {
            file: file_name.to_owned(),
            reason: "the file changed while it was being imported (its content digest differs \
                     from the one checked)"
                .into(),
        });
    }
    let check = FeedCheck {
        format,
        organization_id: ctx.organization_id.clone(),
        source_name: pass.source_name,
        content_digest: pass.content_digest,
        rows_read: pass.rows_read,
        rooftops: super::rooftop_list(file_name, ctx, counts)?,
    };
    Ok((
        check,
        KeptVehicles {
            file,
            path: spill_path,
            count,
        },
    ))
}

/// `sha256:<hex>` of everything `input` holds.
fn digest_of(mut input: impl Read) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(format!("sha256:{}", hex::encode(hasher.finalize())))
}

/// A new spill file in the temporary directory, its name already removed
/// (or, when that failed, the name to remove on drop).
fn create_spill() -> std::io::Result<(File, Option<PathBuf>)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let path = std::env::temp_dir().join(format!(
        "dealer-gateway-import-{}-{nanos}-{}.vehicles",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    let left = std::fs::remove_file(&path).err().map(|_| path);
    Ok((file, left))
}

/// Write every record received to `file` as the store keeps it; the file
/// and the count when the sender is done.
fn write_spill(
    file: File,
    records: &std::sync::mpsc::Receiver<VehicleRecord>,
) -> Result<(File, usize), String> {
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut count = 0usize;
    for record in records {
        let stored = StoredVehicle::from_record(record).map_err(|e| e.to_string())?;
        write_vehicle(&mut out, &stored).map_err(|e| e.to_string())?;
        count += 1;
    }
    let file = out.into_inner().map_err(|e| e.error().to_string())?;
    Ok((file, count))
}

/// Marks an absent optional text in the spill.
const ABSENT: u32 = u32::MAX;

fn write_text(out: &mut impl Write, text: Option<&str>) -> std::io::Result<()> {
    match text {
        None => out.write_all(&ABSENT.to_le_bytes()),
        Some(t) => {
            let len = u32::try_from(t.len())
                .ok()
                .filter(|&n| n != ABSENT)
                .ok_or_else(|| std::io::Error::other("a text of 4 GiB or more"))?;
            out.write_all(&len.to_le_bytes())?;
            out.write_all(t.as_bytes())
        }
    }
}

fn read_text(input: &mut impl Read) -> std::io::Result<Option<String>> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len);
    if len == ABSENT {
        return Ok(None);
    }
    let mut bytes = vec![0u8; len as usize];
    input.read_exact(&mut bytes)?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

fn write_vehicle(out: &mut impl Write, v: &StoredVehicle) -> std::io::Result<()> {
    write_text(out, Some(&v.organization_id))?;
    write_text(out, Some(&v.rooftop_id))?;
    write_text(out, Some(&v.vehicle_id))?;
    write_text(out, v.vin.as_deref())?;
    write_text(out, v.stock_number.as_deref())?;
    out.write_all(&v.advertised_price.amount_minor().to_le_bytes())?;
    write_text(out, Some(v.advertised_price.currency().code()))?;
    write_text(out, Some(&v.doc))
}

fn read_vehicle(input: &mut impl Read) -> std::io::Result<StoredVehicle> {
    let required = |t: Option<String>| {
        t.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "a text is missing"))
    };
    let organization_id = required(read_text(input)?)?;
    let rooftop_id = required(read_text(input)?)?;
    let vehicle_id = required(read_text(input)?)?;
    let vin = read_text(input)?;
    let stock_number = read_text(input)?;
    let mut amount = [0u8; 8];
    input.read_exact(&mut amount)?;
    let currency = pricing::Currency::from_code(&required(read_text(input)?)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
    Ok(StoredVehicle {
        organization_id,
        rooftop_id,
        vehicle_id,
        vin,
        stock_number,
        advertised_price: pricing::Money::from_minor(i64::from_le_bytes(amount), currency),
        doc: required(read_text(input)?)?,
    })
}
