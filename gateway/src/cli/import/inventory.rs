//! `import inventory FILE --organization ORG`: one inventory feed of one
//! organization (docs/inventory-feeds.md). Each rooftop in the file gets a
//! new snapshot, or, on any problem, none does; the import is recorded for
//! the console's imports page either way (dry runs excepted).

use std::path::Path;

use chrono::Utc;

use super::changes::{self, JsonChanges, JsonOut, Listing};
use super::passes::{FileTrack, check_file, stream_write};
use super::{first_lines, record_import};
use crate::Error;
use crate::cli::{Failure, FeedFormatArg, failure_text};
use crate::ingest::{FeedCheck, FeedFormat, IngestContext, IngestError};
use crate::progress::{Progress, ProgressMode, Unit};
use crate::store::snapshot_write::{ChangeSink, RemovalGuard, SnapshotWrite, WriteChecks};
use crate::store::{self, ImportAttempt, ImportKind, ImportOutcome, OrganizationRecord, Store};

/// What an inventory import asks besides its files (docs/inventory-feeds.md
/// "Commands").
#[derive(Debug, Clone, Copy)]
pub(super) struct ImportSettings {
    pub(super) dry_run: bool,
    /// The whole plan or result as one JSON document on stdout.
    pub(super) json: bool,
    /// `None` with `--allow-removals`.
    pub(super) guard: Option<RemovalGuard>,
}

impl ImportSettings {
    pub(super) fn new(dry_run: bool, json: bool, guard: &crate::cli::RemovalGuardArgs) -> Self {
        Self {
            dry_run,
            json,
            guard: (!guard.allow_removals).then_some(RemovalGuard {
                max_percent: guard.max_removal_percent,
                min_vehicles: RemovalGuard::DEFAULT_MIN_VEHICLES,
            }),
        }
    }
}

/// `import inventory FILE --organization ORG [--rooftop R] [--format F]
/// [--dry-run] [--json] [--allow-removals | --max-removal-percent N]`.
pub(super) async fn import_inventory(
    database_url: &str,
    file: &Path,
    organization: &str,
    rooftop: Option<&str>,
    format: Option<FeedFormatArg>,
    settings: ImportSettings,
    mode: ProgressMode,
) -> Result<(), Failure> {
    let name = file.display().to_string();
    let format = match format {
        Some(f) => Ok(FeedFormat::from(f)),
        None => FeedFormat::from_file_name(&name).ok_or_else(|| {
            "cannot tell the format from the file name (.csv is dap-csv, .json is json); \
             give --format dap-csv|dealer-com-csv|json; nothing was imported"
                .to_owned()
        }),
    };
    // Read record by record (docs/benchmarks.md "Feed import memory"): the file's text is never held
    // in memory beside the parsed vehicles.
    let total = std::fs::metadata(file)
        .map_err(|e| Error::Io(format!("{name}: cannot read: {e}")))?
        .len();
    let store = store::open(database_url).await?;
    let org = store.get_organization(organization).await?.ok_or_else(|| {
        format!(
            "organization {organization} is not in the store: import its dealers file first \
             (dealer-gateway import dealers FILE); nothing was imported"
        )
    });
    let track = FileTrack {
        progress: Progress::new(
            mode,
            format!("import {name}"),
            Unit::Bytes,
            total.saturating_mul(2),
        ),
        base: 0,
        bytes: total,
        what: name.clone(),
    };
    let mut json = settings.json.then(JsonOut::default);
    if let Some(out) = json.as_mut() {
        out.raw("{\"command\":\"import inventory\",");
    }
    let job = FeedJob {
        path: file,
        name: name.clone(),
        format,
        organization: Some(organization),
        org,
        rooftop,
        planned_rooftops: Vec::new(),
    };
    let report = import_feed(store.as_ref(), &job, settings, &track, json.as_mut()).await;
    track.progress.finish();
    store.close().await;
    if let Some(mut out) = json {
        // `import_feed` closed the document's object, failed or not.
        out.finish()
            .map_err(|e| Error::Io(format!("cannot write to stdout: {e}")))?;
    }
    let report = report?;
    if !settings.json {
        for line in &report.lines {
            println!("{line}");
        }
    }
    match report.refused {
        Some(report) => Err(Failure::BadInput(report)),
        None => Ok(()),
    }
}

/// One inventory file of `import inventory` or `import bundle`.
pub(super) struct FeedJob<'a> {
    pub(super) path: &'a Path,
    /// The file as the operator named it.
    pub(super) name: String,
    /// Or why it cannot be told.
    pub(super) format: Result<FeedFormat, String>,
    /// The organization asked for (`--organization`), or the one the file
    /// names, when known.
    pub(super) organization: Option<&'a str>,
    /// The stored organization, or why there is none to import into.
    pub(super) org: Result<OrganizationRecord, String>,
    /// `--rooftop`.
    pub(super) rooftop: Option<&'a str>,
    /// The organization's rooftops as the bundle's dealers file lists
    /// them: a dry run plans those the store does not keep yet as first
    /// snapshots.
    pub(super) planned_rooftops: Vec<String>,
}

/// What became of one inventory file.
pub(super) struct FeedReport {
    /// The text summary: the counts line, one line per rooftop, and the
    /// bounded listing under each.
    pub(super) lines: Vec<String>,
    /// Vehicles in the file (checked).
    pub(super) vehicles: usize,
    /// Refused: the report for stderr (exit 2).
    pub(super) refused: Option<String>,
}

/// A file refused before or during its write.
struct FeedRefusal {
    outcome: ImportOutcome,
    /// The report for stderr.
    report: String,
    /// One line for the console's imports page, in the gateway's words.
    reason: String,
    problems: u32,
    /// The rooftops it would have changed (empty: not known).
    rooftops: Vec<String>,
}

/// Check, write (or plan) and report one inventory file, streaming its
/// changes to `json` (an object of the document, opened and closed here)
/// or keeping a bounded listing for the text summary; record the import
/// for the imports page and /metrics unless it is a dry run.
pub(super) async fn import_feed(
    store: &dyn Store,
    job: &FeedJob<'_>,
    settings: ImportSettings,
    track: &FileTrack,
    mut json: Option<&mut JsonOut>,
) -> Result<FeedReport, Failure> {
    let org_id = job.org.as_ref().ok().map(|o| o.organization_id.clone());
    if let Some(out) = json.as_deref_mut() {
        out.raw("\"file\":");
        out.value(&serde_json::json!(job.name));
        out.raw(",\"organization_id\":");
        out.value(&serde_json::json!(org_id.as_deref().or(job.organization)));
        out.raw(&format!(",\"dry_run\":{},\"changes\":[", settings.dry_run));
    }
    let mut listing = Listing::default();
    let outcome = run_feed(
        store,
        job,
        settings,
        track,
        json.as_deref_mut(),
        &mut listing,
    )
    .await;
    let mut trailer = serde_json::Map::new();
    trailer.insert(
        "format".into(),
        serde_json::json!(job.format.as_ref().ok().map(|f| f.name())),
    );
    let (report, attempt) = match outcome {
        Ok(Ok((check, written))) => {
            let refused = (!written.refused.is_empty()).then(|| {
                let why = changes::refusal_text(&written.refused);
                FeedRefusal {
                    outcome: ImportOutcome::RemovalGuard,
                    report: format!(
                        "{}: refused by the removal guard: {why}; nothing was imported. If the \
                         file is complete, import it again with --allow-removals (or a larger \
                         --max-removal-percent; docs/inventory-feeds.md \"The removal guard\")",
                        job.name
                    ),
                    reason: format!("refused by the removal guard: {why}; nothing was imported"),
                    problems: 0,
                    rooftops: check.rooftops.iter().map(|(r, _)| r.clone()).collect(),
                }
            });
            let written_now = !settings.dry_run && refused.is_none();
            trailer.insert(
                "rooftops".into(),
                written
                    .snapshots
                    .iter()
                    .map(|s| changes::rooftop_json(s, written_now))
                    .collect(),
            );
            let lines = report_lines(&job.name, &check, &written, settings.dry_run, &listing);
            let vehicles = check.rooftops.iter().map(|(_, n)| n).sum();
            match refused {
                None => {
                    trailer.insert(
                        "outcome".into(),
                        if settings.dry_run {
                            "planned"
                        } else {
                            "imported"
                        }
                        .into(),
                    );
                    let mut attempt = ImportAttempt::new(
                        ImportKind::Inventory,
                        ImportOutcome::Imported,
                        &job.name,
                        "imported",
                    );
                    attempt.organization_ids = org_id.into_iter().collect();
                    (
                        FeedReport {
                            lines,
                            vehicles,
                            refused: None,
                        },
                        attempt,
                    )
                }
                Some(refusal) => {
                    trailer.insert("outcome".into(), refusal.outcome.as_str().into());
                    trailer.insert("reason".into(), refusal.reason.clone().into());
                    trailer.insert(
                        "removal_refusals".into(),
                        serde_json::to_value(&written.refused).unwrap_or_default(),
                    );
                    let attempt = refusal_attempt(job, org_id, &refusal);
                    (
                        FeedReport {
                            lines,
                            vehicles,
                            refused: Some(refusal.report),
                        },
                        attempt,
                    )
                }
            }
        }
        Ok(Err(refusal)) => {
            trailer.insert("rooftops".into(), serde_json::json!([]));
            trailer.insert("outcome".into(), refusal.outcome.as_str().into());
            trailer.insert("reason".into(), refusal.reason.clone().into());
            trailer.insert("problems".into(), refusal.problems.into());
            let attempt = refusal_attempt(job, org_id, &refusal);
            (
                FeedReport {
                    lines: Vec::new(),
                    vehicles: 0,
                    refused: Some(refusal.report),
                },
                attempt,
            )
        }
        Err(failure) => {
            // Not a refusal (the store is unavailable, the file vanished):
            // the document still closes, saying so; nothing is recorded.
            if let Some(out) = json.as_deref_mut() {
                trailer.insert("rooftops".into(), serde_json::json!([]));
                trailer.insert("outcome".into(), "failed".into());
                trailer.insert("reason".into(), failure_text(&failure).into());
                out.raw("]");
                out.members(&trailer, false);
                out.raw("}");
            }
            return Err(failure);
        }
    };
    if let Some(out) = json {
        out.raw("]");
        out.members(&trailer, false);
        out.raw("}");
    }
    if !settings.dry_run {
        record_import(store, &attempt).await;
    }
    Ok(report)
}

/// The recorded attempt of a refused file.
fn refusal_attempt(
    job: &FeedJob<'_>,
    organization_id: Option<String>,
    refusal: &FeedRefusal,
) -> ImportAttempt {
    let mut attempt = ImportAttempt::new(
        ImportKind::Inventory,
        refusal.outcome,
        &job.name,
        &refusal.reason,
    );
    attempt.organization_ids = organization_id.into_iter().collect();
    attempt.rooftop_ids.clone_from(&refusal.rooftops);
    attempt.problems = refusal.problems;
    attempt
}

/// The two passes of one file: `Ok(Err(_))` is a refusal (bad input, an
/// unknown organization, the store's refusal), `Err(_)` any other failure.
async fn run_feed(
    store: &dyn Store,
    job: &FeedJob<'_>,
    settings: ImportSettings,
    track: &FileTrack,
    json: Option<&mut JsonOut>,
    listing: &mut Listing,
) -> Result<Result<(FeedCheck, SnapshotWrite), FeedRefusal>, Failure> {
    let refused = |outcome, report: String, reason: String, problems, rooftops| FeedRefusal {
        outcome,
        report,
        reason,
        problems,
        rooftops,
    };
    let asked: Vec<String> = job.rooftop.map(str::to_owned).into_iter().collect();
    let format = match &job.format {
        Ok(f) => *f,
        Err(why) => {
            return Ok(Err(refused(
                ImportOutcome::Refused,
                format!("{}: {why}", job.name),
                why.clone(),
                0,
                asked,
            )));
        }
    };
    let org = match &job.org {
        Ok(org) => org,
        Err(why) => {
            return Ok(Err(refused(
                ImportOutcome::Refused,
                format!("{}: {why}", job.name),
                why.clone(),
                0,
                asked,
            )));
        }
    };
    let now = Utc::now();
    let ctx = IngestContext::for_organization(org, job.rooftop, now);
    let input = std::fs::File::open(job.path)
        .map_err(|e| Error::Io(format!("{}: cannot read: {e}", job.name)))?;
    let (check, kept) = match check_file(
        format,
        job.path,
        std::io::BufReader::new(input),
        track.bytes,
        &ctx,
        track,
    ) {
        Ok(checked) => checked,
        Err(e) if e.is_bad_input() => {
            let (reason, problems) = ingest_summary(&e, &job.name);
            return Ok(Err(refused(
                ImportOutcome::Invalid,
                e.to_string(),
                reason,
                problems,
                asked,
            )));
        }
        Err(e) => return Err(Failure::from_ingest(e)),
    };
    let mut streamed;
    let sink: &mut dyn ChangeSink = match json {
        Some(out) => {
            streamed = JsonChanges { out, first: true };
            &mut streamed
        }
        None => listing,
    };
    let checks = WriteChecks {
        removal_guard: settings.guard,
        changes: Some(sink),
        planned_rooftops: &job.planned_rooftops,
    };
    let rooftops: Vec<String> = check.rooftops.iter().map(|(r, _)| r.clone()).collect();
    match stream_write(
        store,
        job.path,
        &check,
        kept,
        &ctx,
        settings.dry_run,
        track,
        checks,
    )
    .await
    {
        Ok(written) => Ok(Ok((check, written))),
        // The second pass read something the first did not (the file
        // changed in between): as bad as the first pass's problems.
        Err(Failure::BadInput(report)) => Ok(Err(refused(
            ImportOutcome::Invalid,
            report.clone(),
            format!(
                "the file changed while it was imported: {}",
                report.lines().next().unwrap_or_default()
            ),
            0,
            rooftops,
        ))),
        // The store refused the write (a rooftop moved to another
        // organization meanwhile, ...). Its message may name another
        // organization, so the imports page gets the gateway's own words.
        Err(Failure::Gateway(Error::Store(store::StoreError::Query(message)))) => Ok(Err(refused(
            ImportOutcome::Refused,
            format!("{}: {message}", job.name),
            "the store refused the write (the operator's output says why); nothing was \
                 imported"
                .to_owned(),
            0,
            rooftops,
        ))),
        Err(other) => Err(other),
    }
}

/// One line and a problem count for a feed's bad-input error: the report's
/// first line and its first problem, without the file's name (the imports
/// page shows it apart).
fn ingest_summary(e: &IngestError, name: &str) -> (String, u32) {
    let problems = match e {
        IngestError::Invalid { problems, .. } => u32::try_from(problems.len()).unwrap_or(u32::MAX),
        IngestError::Unreadable { .. } => 1,
        IngestError::Usage(_) | IngestError::Schemas(_) => 0,
    };
    (first_lines(&e.to_string(), name), problems)
}

fn report_lines(
    name: &str,
    check: &FeedCheck,
    written: &SnapshotWrite,
    dry_run: bool,
    listing: &Listing,
) -> Vec<String> {
    let refused = !written.refused.is_empty();
    let verb = match (dry_run, refused) {
        (true, false) => "dry run, nothing written:",
        (true, true) => "dry run, nothing written (the removal guard would refuse it):",
        (false, true) => "refused by the removal guard, nothing written:",
        (false, false) => "imported",
    };
    let mut lines = vec![format!(
        "{verb} {name} ({format}, organization {org}): {rows} row(s) read, {n} rooftop(s)",
        format = check.format.name(),
        org = check.organization_id,
        rows = check.rows_read,
        n = written.snapshots.len(),
    )];
    for r in &written.snapshots {
        let snapshot = if dry_run || refused {
            "no snapshot written".to_owned()
        } else {
            format!("snapshot version {}", r.version)
        };
        let s = &r.summary;
        lines.push(format!(
            "  {rooftop}: {snapshot} — rows read {}, vehicles added {}, changed {}, unchanged {}, removed {}",
            s.rows_read,
            s.vehicles_added,
            s.vehicles_changed,
            s.vehicles_unchanged,
            s.vehicles_removed,
            rooftop = r.rooftop_id,
        ));
        lines.extend(listing.lines(r, dry_run || refused));
    }
    lines
}
