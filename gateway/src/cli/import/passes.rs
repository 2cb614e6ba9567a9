//! The two passes of one inventory file (docs/benchmarks.md "Feed import
//! memory", "Import: checked once"): pass 1 checks every rule and keeps each
//! checked vehicle, as stored text, in a temporary file (never in memory);
//! pass 2 streams those vehicles to the store's snapshot writer. Both
//! report progress as their file's share of the import's bar.

use std::path::Path;

use crate::Error;
use crate::cli::Failure;
use crate::ingest::kept::KeptVehicles;
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
/// keeping each checked vehicle in a temporary file; problems name the file
/// by the path given. `input` is the opened file (hashed first).
pub(super) fn check_file(
    format: FeedFormat,
    path: &Path,
    input: impl std::io::Read,
    total: u64,
    ctx: &IngestContext,
    track: &FileTrack,
) -> Result<(FeedCheck, KeptVehicles), IngestError> {
    let shown = path.display().to_string();
    track
        .progress
        .set_message(format!("checking {}", track.what));
    let mut last_message = 0usize;
    let name = file_name_of(path);
    let checked = ingest::kept::check_and_keep(format, &name, path, input, total, ctx, &mut |p| {
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

/// Pass 2 of an import (docs/benchmarks.md "Feed import memory", "Import:
/// checked once"): read the vehicles pass 1 checked and kept back on a
/// blocking thread and stream each to the store's snapshot writer through a
/// bounded channel, so the vehicles are never held whole. Every rooftop of the file gets its snapshot in one
/// transaction, or none does; a dry run computes the same summaries and
/// writes nothing. `checks` names each change as the writer finds it and
/// applies the removal guard (docs/inventory-feeds.md "Commands").
#[allow(clippy::too_many_arguments, reason = "one internal entry point")]
pub(super) async fn stream_write(
    store: &dyn Store,
    path: &Path,
    check: &FeedCheck,
    kept: KeptVehicles,
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
        let shown = shown.clone();
        let track = track.clone();
        tokio::task::spawn_blocking(move || {
            let written_from = track.base + track.bytes;
            track
                .progress
                .set_message(format!("writing {vehicles} vehicles: {}", track.what));
            let unreadable = |e: std::io::Error| {
                Failure::from(Error::Io(format!(
                    "{shown}: cannot read its checked vehicles back: {e}; nothing was imported"
                )))
            };
            let mut fed = 0usize;
            // The write phase's progress (docs/operations.md "Progress of imports") is what has
            // entered the writer's bounded channel: a send returns once
            // the writer has room, so this follows the writer to within
            // the channel's capacity. The position is the file's share of
            // the vehicles sent so far, the message counts vehicles.
            // A send fails only once the writer has stopped; it reports why.
            for v in kept.read().map_err(unreadable)? {
                let v = v.map_err(unreadable)?;
                if sender
                    .blocking_send(SnapshotFeed::Stored(Box::new(v)))
                    .is_err()
                {
                    break;
                }
                fed += 1;
                let share = track.bytes.saturating_mul(fed as u64) / vehicles.max(1) as u64;
                track
                    .progress
                    .set_position(written_from + share.min(track.bytes));
                if fed.is_multiple_of(MESSAGE_EVERY) {
                    track.progress.set_message(format!(
                        "writing, {fed} of {vehicles} vehicles: {}",
                        track.what
                    ));
                }
            }
            track
                .progress
                .set_message(format!("committing {fed} vehicles: {}", track.what));
            // Only every vehicle sent lets the writer commit.
            if fed == vehicles {
                let _ = sender.blocking_send(SnapshotFeed::End);
            }
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
