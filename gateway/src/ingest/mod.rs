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
//! with every problem (row, column, rule; never an input value), sorted by
//! row, and no vehicle at all, so the caller writes nothing.

pub mod dap_csv;
pub mod dealer_com;
pub mod json;
pub mod rules;

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Duration, Utc};

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
        SourceRecord {
            source_name: self.source_name.clone(),
            authority: FILE_AUTHORITY.to_owned(),
            content_digest: self.content_digest.clone(),
            observed_at: imported_at,
        }
    }
}

/// One problem of a feed. Never carries an input value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowProblem {
    /// CSV: the 1-based line number where the record starts (1 = the
    /// header). JSON: the 0-based index of the record in the array.
    pub row: usize,
    /// CSV: the column name (as the format names it). JSON: a JSON pointer
    /// from the document root.
    pub column: String,
    /// The rule that failed.
    pub rule: String,
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
                            writeln!(f, "  {file}: record {}: {at}: {}", p.row, p.rule)?;
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
    rules::validators().map_err(IngestError::Schemas)?;
    check_context(format, ctx)?;
    let source = FileSource {
        source_name: format!("{}:{file_name}", format.source_prefix()),
        content_digest: crate::dealers::digest(bytes),
    };
    let (rows_read, result) = match format {
        FeedFormat::DapCsv => dap_csv::parse(bytes, ctx, &source, progress),
        FeedFormat::DealerComCsv => dealer_com::parse(bytes, ctx, &source, progress),
        FeedFormat::Json => json::parse(bytes, ctx, &source, progress),
    };
    let vehicles = match result {
        Ok(v) => v,
        Err(Failure::Unreadable(reason)) => {
            return Err(IngestError::Unreadable {
                file: file_name.to_owned(),
                reason,
            });
        }
        Err(Failure::Problems(mut problems)) => {
            problems.sort_by_key(|p| p.row);
            return Err(IngestError::Invalid {
                file: file_name.to_owned(),
                format,
                problems,
            });
        }
    };
    let mut by_rooftop: BTreeMap<String, Vec<VehicleRecord>> = BTreeMap::new();
    if let Some(r) = &ctx.rooftop {
        by_rooftop.insert(r.clone(), Vec::new());
    }
    for v in vehicles {
        by_rooftop.entry(v.rooftop_id.clone()).or_default().push(v);
    }
    if by_rooftop.is_empty() {
        return Err(IngestError::Usage(format!(
            "{file_name}: the file has no vehicles and names no rooftop; to publish an empty \
             inventory, name the rooftop with --rooftop; nothing was imported"
        )));
    }
    Ok(ParsedFeed {
        format,
        organization_id: ctx.organization_id.clone(),
        source_name: source.source_name,
        content_digest: source.content_digest,
        rows_read,
        rooftops: by_rooftop
            .into_iter()
            .map(|(rooftop_id, vehicles)| RooftopFeed {
                rooftop_id,
                vehicles,
            })
            .collect(),
    })
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

/// What a format parser returns: rows read and the vehicles (or failure).
pub(crate) type FormatResult = (usize, Result<Vec<VehicleRecord>, Failure>);

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
