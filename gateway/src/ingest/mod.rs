//! Inventory feed ingest: a dealer's inventory file in, per-rooftop
//! [`VehicleRecord`]s out, or every problem of the file at once.
//!
//! Three formats (docs/inventory-feeds.md):
//! - [`FeedFormat::DapCsv`]: DAP Inventory CSV 0.1 ([`dap_csv`]);
//! - [`FeedFormat::DealerComCsv`]: a Dealer.com-style export, read through
//!   the header aliases and conversion rules of the DAP reference adapter,
//!   made strict ([`dealer_com`]);
//! - [`FeedFormat::Json`]: an array of DAP vehicle records ([`json`]).
//!
//! All three share the rules of [`rules`]. Parsing is pure: nothing is
//! written here. A file with any problem yields [`IngestError::Invalid`]
//! with every problem (row, column, rule in words: docs/inventory-feeds.md
//! "Problem reports"), sorted by row, and no vehicle at all, so the caller
//! writes nothing.
//!
//! Every format is read record by record from a reader (reading a whole
//! 134 MB feed into memory once took 1.46 GB). [`parse_feed_reader`] keeps the
//! vehicles but never the file text or a whole-document JSON tree;
//! [`check_feed`] then [`stream_feed`] hold neither: pass 1 applies every
//! rule and keeps only the keys rules across records need, pass 2 re-reads
//! the same bytes (checked by digest) and hands each vehicle to a writer
//! that commits only at the end, so all or nothing still holds. An import
//! checks once instead ([`kept::check_and_keep`]): pass 1 also keeps each
//! checked vehicle, as stored text, in a temporary file that pass 2 reads.

pub mod claims;
pub mod dap_csv;
pub mod dealer_com;
pub mod json;
pub mod kept;
pub mod rules;

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;

use chrono::{DateTime, Duration, Utc};
use sha2::{Digest as _, Sha256};

use crate::inventory::model::VehicleRecord;
use crate::store::{OrganizationRecord, RooftopSettings, SourceRecord};

/// Allowed clock skew for timestamps in a feed: a timestamp later than
/// `now` + 5 minutes is refused (DAP CSV-002).
pub const CLOCK_SKEW_SECONDS: i64 = 300;

/// The authority of every vehicle read from a file: a file publication is
/// always asserted, never authoritative (DAP CSV-001).
pub const FILE_AUTHORITY: &str = "dealer_asserted";

/// The format of an inventory file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FeedFormat {
    /// DAP Inventory CSV 0.1 (`dealer-agent-inventory-csv/0.1`).
    DapCsv,
    /// A Dealer.com-style CSV export (header aliases, formatted prices).
    DealerComCsv,
    /// A JSON array of DAP vehicle records.
    Json,
}

impl FeedFormat {
    /// The command-line name: `dap-csv`, `dealer-com-csv`, `json`.
    pub fn name(self) -> &'static str {
        match self {
            Self::DapCsv => "dap-csv",
            Self::DealerComCsv => "dealer-com-csv",
            Self::Json => "json",
        }
    }

    /// Parse a command-line name.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "dap-csv" => Some(Self::DapCsv),
            "dealer-com-csv" => Some(Self::DealerComCsv),
            "json" => Some(Self::Json),
            _ => None,
        }
    }

    /// The default format of a file name: `.json` is JSON, `.csv` DAP CSV.
    /// A Dealer.com export must be named explicitly.
    pub fn from_file_name(name: &str) -> Option<Self> {
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".json") {
            Some(Self::Json)
        } else if lower.ends_with(".csv") {
            Some(Self::DapCsv)
        } else {
            None
        }
    }

    /// The prefix of the provenance `source_name` (`dap-csv:<file name>`).
    fn source_prefix(self) -> &'static str {
        self.name()
    }
}

/// One rooftop of the importing organization with its settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RooftopContext {
    pub rooftop_id: String,
    pub settings: RooftopSettings,
}

/// What the parser needs to know besides the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestContext {
    /// The organization whose inventory this is (`--organization`).
    pub organization_id: String,
    /// `--rooftop`: only this rooftop (a row naming another is an error);
    /// it also supplies the rooftop to formats without a rooftop column.
    pub rooftop: Option<String>,
    /// Every rooftop of the organization, as stored.
    pub rooftops: Vec<RooftopContext>,
    /// The instant timestamps are checked against.
    pub now: DateTime<Utc>,
    /// How far in the future a timestamp may be (clock skew).
    pub clock_skew: Duration,
}

impl IngestContext {
    /// The context for importing into `organization` at `now` with the
    /// default clock skew.
    pub fn for_organization(
        organization: &OrganizationRecord,
        rooftop: Option<&str>,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            organization_id: organization.organization_id.clone(),
            rooftop: rooftop.map(str::to_owned),
            rooftops: organization
                .rooftops
                .iter()
                .map(|r| RooftopContext {
                    rooftop_id: r.rooftop_id.clone(),
                    settings: r.settings.clone(),
                })
                .collect(),
            now,
            clock_skew: Duration::seconds(CLOCK_SKEW_SECONDS),
        }
    }

    /// The settings of one of the organization's rooftops.
    pub fn rooftop_settings(&self, rooftop_id: &str) -> Option<&RooftopSettings> {
        self.rooftops
            .iter()
            .find(|r| r.rooftop_id == rooftop_id)
            .map(|r| &r.settings)
    }
}

/// The vehicles of one rooftop read from a feed.
#[derive(Debug, Clone, PartialEq)]
pub struct RooftopFeed {
    pub rooftop_id: String,
    /// In file order.
    pub vehicles: Vec<VehicleRecord>,
}

/// A feed that passed every rule.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedFeed {
    pub format: FeedFormat,
    pub organization_id: String,
    /// `<format>:<file name>`, e.g. `dap-csv:lakeshore-chicago.csv`.
    pub source_name: String,
    /// `sha256:<hex>` of the file bytes.
    pub content_digest: String,
    /// Data rows (CSV) or records (JSON) read.
    pub rows_read: usize,
    /// One entry per rooftop with rows in the file (or the `--rooftop`
    /// rooftop, even with no rows: an empty inventory), by rooftop id.
    pub rooftops: Vec<RooftopFeed>,
}

impl ParsedFeed {
    /// The snapshot source: this file, asserted, observed at `imported_at`.
    pub fn source_record(&self, imported_at: DateTime<Utc>) -> SourceRecord {
        file_source_record(&self.source_name, &self.content_digest, imported_at)
    }
}

impl FeedCheck {
    /// The snapshot source: this file, asserted, observed at `imported_at`.
    pub fn source_record(&self, imported_at: DateTime<Utc>) -> SourceRecord {
        file_source_record(&self.source_name, &self.content_digest, imported_at)
    }
}

fn file_source_record(
    source_name: &str,
    content_digest: &str,
    imported_at: DateTime<Utc>,
) -> SourceRecord {
    SourceRecord {
        source_name: source_name.to_owned(),
        authority: FILE_AUTHORITY.to_owned(),
        content_digest: content_digest.to_owned(),
        observed_at: imported_at,
    }
}

/// One problem of a feed. Carries no input value, except a key the
/// operator's file has but the format does not, and what a number written
/// `299.00` would be in minor units (docs/inventory-feeds.md "Problem
/// reports").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowProblem {
    /// CSV: the 1-based line number where the record starts (1 = the
    /// header). JSON: the 0-based index of the record in the array.
    pub row: usize,
    /// CSV: the column name (as the format names it). JSON: a JSON pointer
    /// from the document root.
    pub column: String,
    /// The rule that failed, in words.
    pub rule: String,
    /// JSON: where the pointer is in the file (line and column), when it
    /// can be found. CSV: `None` (the row's line is `row`).
    pub position: Option<crate::report::Position>,
}

/// Parse progress, for an indicator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub rows: usize,
    pub bytes_done: u64,
    pub bytes_total: u64,
}

/// Why a feed cannot be imported. Closed: callers map every variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IngestError {
    /// The file breaks rules: every problem, sorted by row. Bad input.
    Invalid {
        file: String,
        format: FeedFormat,
        problems: Vec<RowProblem>,
    },
    /// The file cannot be read as its format at all (not JSON, not an
    /// array, ...). Bad input.
    Unreadable { file: String, reason: String },
    /// The command's arguments do not fit the organization or the format
    /// (unknown `--rooftop`, no rooftop for a format without a rooftop
    /// column, ...). Bad input.
    Usage(String),
    /// The shipped schemas cannot be compiled: a defect of this build.
    Schemas(String),
}

impl IngestError {
    /// True when the user must fix the input (exit code 2); false for a
    /// defect of the gateway itself.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, Self::Schemas(_))
    }
}

impl fmt::Display for IngestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid {
                file,
                format,
                problems,
            } => {
                writeln!(
                    f,
                    "{file}: {} problem(s) in this {} file; nothing was imported",
                    problems.len(),
                    format.name()
                )?;
                for p in problems {
                    match format {
                        FeedFormat::Json => {
                            let at = if p.column.is_empty() { "/" } else { &p.column };
                            let line = p
                                .position
                                .map(|l| format!(":{}:{}", l.line, l.column))
                                .unwrap_or_default();
                            writeln!(f, "  {file}{line}: record {}: {at}: {}", p.row, p.rule)?;
                        }
                        FeedFormat::DapCsv | FeedFormat::DealerComCsv => {
                            writeln!(f, "  {file}:{}: {}: {}", p.row, p.column, p.rule)?;
                        }
                    }
                }
                Ok(())
            }
            Self::Unreadable { file, reason } => {
                writeln!(f, "{file}: {reason}; nothing was imported")
            }
            Self::Usage(message) => writeln!(f, "{message}"),
            Self::Schemas(message) => writeln!(f, "inventory schemas: {message}"),
        }
    }
}

impl std::error::Error for IngestError {}

/// Parse, validate and convert one inventory file. `file_name` is recorded
/// in provenance (`<format>:<file name>`) and in problem reports.
pub fn parse_feed(
    format: FeedFormat,
    file_name: &str,
    bytes: &[u8],
    ctx: &IngestContext,
) -> Result<ParsedFeed, IngestError> {
    parse_feed_with_progress(format, file_name, bytes, ctx, &mut |_| {})
}

/// [`parse_feed`] reporting progress every few thousand rows.
pub fn parse_feed_with_progress(
    format: FeedFormat,
    file_name: &str,
    bytes: &[u8],
    ctx: &IngestContext,
    progress: &mut dyn FnMut(Progress),
) -> Result<ParsedFeed, IngestError> {
    parse_feed_reader(format, file_name, bytes, bytes.len() as u64, ctx, progress)
}

/// [`parse_feed`] from a reader (a file), read once, record by record: the
/// file text is never held whole, and a JSON feed is never held as one
/// JSON tree. The vehicles are kept (the store writes a rooftop's snapshot
/// from all of them); to hold none, use [`check_feed`] then
/// [`stream_feed`]. `total` is the size in bytes, for progress.
pub fn parse_feed_reader(
    format: FeedFormat,
    file_name: &str,
    input: impl Read,
    total: u64,
    ctx: &IngestContext,
    progress: &mut dyn FnMut(Progress),
) -> Result<ParsedFeed, IngestError> {
    let mut by_rooftop: BTreeMap<String, Vec<VehicleRecord>> = BTreeMap::new();
    let pass = run_pass(
        format,
        file_name,
        input,
        total,
        None,
        ctx,
        progress,
        &mut |v| {
            by_rooftop.entry(v.rooftop_id.clone()).or_default().push(v);
        },
    )?;
    // The digest is known only once the last byte is read.
    for v in by_rooftop.values_mut().flatten() {
        v.source.content_digest.clone_from(&pass.content_digest);
    }
    let rooftops = rooftop_list(file_name, ctx, by_rooftop)?;
    Ok(ParsedFeed {
        format,
        organization_id: ctx.organization_id.clone(),
        source_name: pass.source_name,
        content_digest: pass.content_digest,
        rows_read: pass.rows_read,
        rooftops: rooftops
            .into_iter()
            .map(|(rooftop_id, vehicles)| RooftopFeed {
                rooftop_id,
                vehicles,
            })
            .collect(),
    })
}

/// A feed that passed every rule, checked without keeping its vehicles:
/// pass 1 of a streaming import ([`check_feed`], then [`stream_feed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedCheck {
    pub format: FeedFormat,
    pub organization_id: String,
    pub source_name: String,
    /// `sha256:<hex>` of the file bytes; pass 2 must read the same bytes.
    pub content_digest: String,
    pub rows_read: usize,
    /// Vehicles per rooftop, by rooftop id (the `--rooftop` rooftop even
    /// with none: an empty inventory).
    pub rooftops: Vec<(String, usize)>,
}

/// Pass 1 of a streaming import: every rule of [`parse_feed`] (the same
/// problems, all of them), record by record, keeping only what rules
/// across records need (the VINs, stock numbers and ids seen), never the
/// vehicles. Memory does not grow with the records' content.
pub fn check_feed(
    format: FeedFormat,
    file_name: &str,
    input: impl Read,
    total: u64,
    ctx: &IngestContext,
    progress: &mut dyn FnMut(Progress),
) -> Result<FeedCheck, IngestError> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let pass = run_pass(
        format,
        file_name,
        input,
        total,
        None,
        ctx,
        progress,
        &mut |v| {
            *counts.entry(v.rooftop_id).or_default() += 1;
        },
    )?;
    Ok(FeedCheck {
        format,
        organization_id: ctx.organization_id.clone(),
        source_name: pass.source_name,
        content_digest: pass.content_digest,
        rows_read: pass.rows_read,
        rooftops: rooftop_list(file_name, ctx, counts)?,
    })
}

/// Pass 2 of a streaming import: read the checked file again and hand
/// every vehicle to `sink`, in file order, each complete with provenance.
/// All or nothing stays with the writer: write inside one transaction and
/// commit only when this returns `Ok`. It fails if the bytes are not those
/// [`check_feed`] checked (the file changed in between), or, defensively,
/// if any rule fails now.
pub fn stream_feed(
    check: &FeedCheck,
    file_name: &str,
    input: impl Read,
    total: u64,
    ctx: &IngestContext,
    sink: &mut dyn FnMut(VehicleRecord),
) -> Result<(), IngestError> {
    let pass = run_pass(
        check.format,
        file_name,
        input,
        total,
        Some(&check.content_digest),
        ctx,
        &mut |_| {},
        sink,
    )?;
    if pass.content_digest == check.content_digest {
        Ok(())
    } else {
        Err(IngestError::Unreadable {
            file: file_name.to_owned(),
            reason: "the file changed while it was being imported (its content digest differs \
                     from the one checked)"
                .into(),
        })
    }
}

/// What one pass over a file found.
struct Pass {
    source_name: String,
    content_digest: String,
    rows_read: usize,
}

/// One pass over a file: every rule, each valid vehicle to `sink`. With
/// `digest` (pass 2) records carry it; otherwise (pass 1, or a single
/// pass that patches it afterwards) it is computed while reading.
#[allow(clippy::too_many_arguments, reason = "one internal entry point")]
fn run_pass(
    format: FeedFormat,
    file_name: &str,
    input: impl Read,
    total: u64,
    digest: Option<&str>,
    ctx: &IngestContext,
    progress: &mut dyn FnMut(Progress),
    sink: Sink<'_>,
) -> Result<Pass, IngestError> {
    rules::validators().map_err(IngestError::Schemas)?;
    check_context(format, ctx)?;
    let source = FileSource {
        source_name: format!("{}:{file_name}", format.source_prefix()),
        content_digest: digest.unwrap_or_default().to_owned(),
    };
    let mut hashing = Hashing {
        inner: input,
        hasher: Sha256::new(),
        error: None,
    };
    let (rows_read, result) = match format {
        FeedFormat::DapCsv => dap_csv::parse(&mut hashing, total, ctx, &source, progress, sink),
        FeedFormat::DealerComCsv => {
            dealer_com::parse(&mut hashing, total, ctx, &source, progress, sink)
        }
        FeedFormat::Json => json::parse(&mut hashing, total, ctx, &source, progress, sink),
    };
    if let Some(e) = hashing.error.take() {
        return Err(IngestError::Unreadable {
            file: file_name.to_owned(),
            reason: format!("cannot be read: {e}"),
        });
    }
    match result {
        Ok(()) => {}
        Err(Failure::Unreadable(reason)) => {
            return Err(IngestError::Unreadable {
                file: file_name.to_owned(),
                reason,
            });
        }
        Err(Failure::Problems(mut problems)) => {
            problems.sort_by_key(|p| (p.row, p.position));
            return Err(IngestError::Invalid {
                file: file_name.to_owned(),
                format,
                problems,
            });
        }
    }
    // A format parser may stop before the end (JSON trailing data is an
    // error it reports); hash whatever is left so the digest is the file's.
    if let Err(e) = std::io::copy(&mut hashing, &mut std::io::sink()) {
        return Err(IngestError::Unreadable {
            file: file_name.to_owned(),
            reason: format!("cannot be read: {e}"),
        });
    }
    Ok(Pass {
        source_name: source.source_name,
        content_digest: format!("sha256:{}", hex::encode(hashing.hasher.finalize())),
        rows_read,
    })
}

/// Per-rooftop entries by rooftop id, with the `--rooftop` rooftop even
/// when it has no row (an empty inventory); an empty file naming no
/// rooftop is a usage error.
fn rooftop_list<T: Default>(
    file_name: &str,
    ctx: &IngestContext,
    mut by_rooftop: BTreeMap<String, T>,
) -> Result<Vec<(String, T)>, IngestError> {
    if let Some(r) = &ctx.rooftop {
        by_rooftop.entry(r.clone()).or_default();
    }
    if by_rooftop.is_empty() {
        return Err(IngestError::Usage(format!(
            "{file_name}: the file has no vehicles and names no rooftop; to publish an empty \
             inventory, name the rooftop with --rooftop; nothing was imported"
        )));
    }
    Ok(by_rooftop.into_iter().collect())
}

/// Hashes every byte read through it (SHA-256, DAP
/// `source.content_digest`) and remembers a read error.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    error: Option<std::io::Error>,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.hasher.update(&buf[..n]);
                Ok(n)
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Err(e),
            Err(e) => {
                let copy = std::io::Error::new(e.kind(), e.to_string());
                self.error = Some(e);
                Err(copy)
            }
        }
    }
}

/// The file being parsed, as provenance names it.
pub(crate) struct FileSource {
    pub source_name: String,
    pub content_digest: String,
}

/// How a format parser fails.
pub(crate) enum Failure {
    Unreadable(String),
    Problems(Vec<RowProblem>),
}

/// Receives each valid vehicle of a feed, in file order.
pub(crate) type Sink<'a> = &'a mut dyn FnMut(VehicleRecord);

/// What a format parser returns: rows read, and `Ok` when no rule failed
/// (the vehicles went to the sink; on failure the caller drops them).
pub(crate) type FormatResult = (usize, Result<(), Failure>);

fn check_context(format: FeedFormat, ctx: &IngestContext) -> Result<(), IngestError> {
    if let Some(r) = &ctx.rooftop
        && ctx.rooftop_settings(r).is_none()
    {
        return Err(IngestError::Usage(format!(
            "--rooftop {r} is not a rooftop of organization {}; nothing was imported",
            ctx.organization_id
        )));
    }
    if format == FeedFormat::DealerComCsv && ctx.rooftop.is_none() && ctx.rooftops.len() != 1 {
        return Err(IngestError::Usage(format!(
            "a dealer-com-csv export has no rooftop column: name the rooftop with --rooftop \
             (organization {} has {} rooftops); nothing was imported",
            ctx.organization_id,
            ctx.rooftops.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
