//! The two passes over one inventory file (docs/benchmarks.md "Feed import
//! memory"): pass 1 checks every rule and keeps no vehicle; pass 2 reads the
//! file again and streams each vehicle to the store's snapshot writer. Both
//! report progress as their file's share of the import's bar.

use std::path::Path;

use crate::Error;
use crate::cli::Failure;
use crate::ingest::{self, FeedCheck, FeedFormat, IngestContext, IngestError};
use crate::progress::Progress;
use crate::store::Store;
use crate::store::snapshot_write::{SnapshotWrite, WriteChecks};

/// One file's share of an import's overall progress (docs/operations.md "Progress of imports").
/// Each file is read twice, once to check it and once to write it, so the
/// bar counts its bytes twice: `base .. base + bytes` while checking,
/// then `base + bytes .. base + 2 * bytes` while writing.
#[derive(Clone)]
pub(super) struct FileTrack {
    pub(super) progress: Progress,
    /// The position where this file's work starts.
    pub(super) base: u64,
    /// The file's size.
    pub(super) bytes: u64,
    /// How the messages name the file (`file 2/5 PATH` in a bundle).
    pub(super) what: String,
}

/// Rows or vehicles between two progress messages (the position itself
/// moves on every update).
const MESSAGE_EVERY: usize = 1000;

/// Pass 1 of an import: every rule over the whole file, with progress,
/// keeping no vehicle; problems name the file by the path given.
pub(super) fn check_file(
    format: FeedFormat,
    path: &Path,
    input: impl std::io::Read,
    total: u64,
    ctx: &IngestContext,
    track: &FileTrack,
) -> Result<FeedCheck, IngestError> {
    let shown = path.display().to_string();
    track
        .progress
        .set_message(format!("checking {}", track.what));
    let mut last_message = 0usize;
    let checked = ingest::check_feed(format, &file_name_of(path), input, total, ctx, &mut |p| {
        track
            .progress
            .set_position(track.base + p.bytes_done.min(track.bytes));
        if p.rows >= last_message + MESSAGE_EVERY {
            last_message = p.rows;
            track
                .progress
                .set_message(format!("checking, {} rows: {}", p.rows, track.what));
        }
    });
    checked.map_err(|e| named_by_path(e, &shown))
}

/// A reader that counts the bytes read through it (the write pass's
/// position in its file).
struct CountingReader<R> {
    inner: R,
    count: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: std::io::Read> std::io::Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// The name provenance records for a file: its last path component.
fn file_name_of(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// A feed error naming the file by the path the operator gave.
fn named_by_path(e: IngestError, shown: &str) -> IngestError {
    match e {
        IngestError::Invalid {
            format, problems, ..
        } => IngestError::Invalid {
            file: shown.to_owned(),
            format,
            problems,
        },
        IngestError::Unreadable { reason, .. } => IngestError::Unreadable {
            file: shown.to_owned(),
            reason,
        },
        other => other,
    }
}

/// Pass 2 of an import (docs/benchmarks.md "Feed import memory"): read the checked file again on a
/// blocking thread and stream each vehicle to the store's snapshot writer
/// through a bounded channel, so neither the file nor its vehicles are ever
/// held whole. Every rooftop of the file gets its snapshot in one
/// transaction, or none does; a dry run computes the same summaries and
/// writes nothing. `checks` names each change as the writer finds it and
/// applies the removal guard (docs/inventory-feeds.md "Commands").
pub(super) async fn stream_write(
    store: &dyn Store,
    path: &Path,
    check: &FeedCheck,
    ctx: &IngestContext,
    dry_run: bool,
    track: &FileTrack,
    checks: WriteChecks<'_>,
) -> Result<SnapshotWrite, Failure> {
    use crate::store::snapshot_write::{FEED_CHANNEL_CAPACITY, SnapshotFeed, SnapshotPlan};
    let shown = path.display().to_string();
    let vehicles: usize = check.rooftops.iter().map(|(_, n)| n).sum();
    let rooftops: Vec<String> = check.rooftops.iter().map(|(r, _)| r.clone()).collect();
    let source = check.source_record(ctx.now);
    let (sender, receiver) = tokio::sync::mpsc::channel(FEED_CHANNEL_CAPACITY);
    let reader = {
        let (path, check, ctx) = (path.to_owned(), check.clone(), ctx.clone());
        let shown = shown.clone();
        let track = track.clone();
        tokio::task::spawn_blocking(move || {
            let file = std::fs::File::open(&path)
                .and_then(|f| f.metadata().map(|m| (f, m.len())))
                .map_err(|e| Failure::from(Error::Io(format!("{shown}: cannot read: {e}"))))?;
            let (handle, total) = file;
            let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            let written_from = track.base + track.bytes;
            track
                .progress
                .set_message(format!("writing {vehicles} vehicles: {}", track.what));
            let mut fed = 0usize;
            // The write phase's progress (docs/operations.md "Progress of imports") is what has
            // entered the writer's bounded channel: a send returns once
            // the writer has room, so this follows the writer to within
            // the channel's capacity. The position is the bytes of the file
            // read so far, the message counts vehicles.
            // A send fails only once the writer has stopped; it reports why.
            let mut sink = |v| {
                if sender
                    .blocking_send(SnapshotFeed::Vehicle(Box::new(v)))
                    .is_ok()
                {
                    fed += 1;
                    track.progress.set_position(
                        written_from
                            + read
                                .load(std::sync::atomic::Ordering::Relaxed)
                                .min(track.bytes),
                    );
                    if fed.is_multiple_of(MESSAGE_EVERY) {
                        track.progress.set_message(format!(
                            "writing, {fed} of {vehicles} vehicles: {}",
                            track.what
                        ));
                    }
                }
            };
            let input = std::io::BufReader::new(CountingReader {
                inner: handle,
                count: read.clone(),
            });
            ingest::stream_feed(&check, &file_name_of(&path), input, total, &ctx, &mut sink)
                .map_err(|e| Failure::from_ingest(named_by_path(e, &shown)))?;
            track
                .progress
                .set_message(format!("committing {fed} vehicles: {}", track.what));
            // Only a complete, valid second pass lets the writer commit.
            let _ = sender.blocking_send(SnapshotFeed::End);
            Ok::<(), Failure>(())
        })
    };
    let plan = SnapshotPlan {
        organization_id: &check.organization_id,
        rooftops: &rooftops,
        source: &source,
        dry_run,
    };
    // The writer owns the receiver and drops it when it stops, which
    // unblocks the reader if it stopped early.
    let written = store.write_snapshots_checked(plan, receiver, checks).await;
    // The reader's failure, if any, is the cause of the writer's.
    reader.await.map_err(|e| {
        Failure::from(Error::Io(format!(
            "{shown}: the reading thread failed ({e}); nothing was imported"
        )))
    })??;
    let written = written?;
    track
        .progress
        .set_position(track.base + track.bytes.saturating_mul(2));
    Ok(written)
}
