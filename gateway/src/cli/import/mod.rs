//! `import dealers|inventory|bundle|programs`: operator files into the
//! store, each all or nothing, and each import recorded for the console's
//! imports page and /metrics (docs/console.md "Imports").
//!
//! [`dealers`] reads a dealers file; [`inventory`] one inventory feed
//! (checked by one pass of [`passes`], then streamed to the store by
//! another), listing its [`changes`]; [`bundle`] a dealers file and its
//! feeds. `import programs` belongs to the programs family.

use super::{Failure, ImportCommand, LOG_TARGET};
use crate::progress::ProgressMode;
use crate::store::{self, ImportAttempt, Store};

mod bundle;
mod changes;
mod dealers;
mod inventory;
mod passes;

use inventory::ImportSettings;

/// Run one `import` command.
pub(super) async fn run(
    database_url: &str,
    what: ImportCommand,
    progress: ProgressMode,
) -> Result<(), Failure> {
    match what {
        ImportCommand::Dealers { file, dry_run } => {
            dealers::import_dealers(database_url, &file, dry_run).await
        }
        ImportCommand::Inventory {
            file,
            organization,
            rooftop,
            format,
            dry_run,
            json,
            guard,
        } => {
            inventory::import_inventory(
                database_url,
                &file,
                &organization,
                rooftop.as_deref(),
                format,
                ImportSettings::new(dry_run, json, &guard),
                progress,
            )
            .await
        }
        ImportCommand::Bundle {
            dir,
            dry_run,
            json,
            guard,
        } => {
            bundle::import_bundle(
                database_url,
                &dir,
                ImportSettings::new(dry_run, json, &guard),
                progress,
            )
            .await
        }
        ImportCommand::Programs {
            file,
            organization,
            replace,
            dry_run,
            json,
        } => {
            super::programs::import_programs(
                database_url,
                &file,
                &organization,
                replace,
                dry_run,
                json,
            )
            .await
        }
    }
}

/// Count (and, when refused, keep) one import for the console's imports
/// page and /metrics. A failed write is logged; the import's own outcome
/// stands either way.
pub(super) async fn record_import(store: &dyn Store, attempt: &ImportAttempt) {
    if let Err(e) = store.record_import(attempt).await {
        tracing::error!(target: LOG_TARGET,
            error = %e,
            kind = attempt.kind.as_str(),
            outcome = attempt.outcome.as_str(),
            "the import could not be recorded for the console and /metrics"
        );
    }
}

/// How many problems a report lists: the count its heading states
/// (`N problem(s)`, `N conflict(s)`), else one per line after the heading.
pub(super) fn problem_count(report: &str) -> u32 {
    let mut lines = report.lines().filter(|l| !l.trim().is_empty());
    let heading = lines.next().unwrap_or_default();
    let words: Vec<&str> = heading.split_whitespace().collect();
    let stated = words.windows(2).find_map(|w| {
        (w[1].starts_with("problem(s)") || w[1].starts_with("conflict(s)"))
            .then(|| w[0].parse::<u32>().ok())
            .flatten()
    });
    stated.unwrap_or_else(|| u32::try_from(lines.count()).unwrap_or(u32::MAX))
}

/// A report's first line, and its second (the first problem) when there is
/// one, as one line without the file's name in front.
pub(super) fn first_lines(report: &str, name: &str) -> String {
    let strip = |line: &str| {
        let line = line.trim();
        line.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix(':'))
            .map_or(line, str::trim)
            .to_owned()
    };
    let mut lines = report.lines().filter(|l| !l.trim().is_empty());
    let head = lines.next().map(strip).unwrap_or_default();
    match lines.next() {
        Some(first) => format!("{head} First: {}", strip(first)),
        None => head,
    }
}

/// Those of `ids` that are stored organizations (a refusal is shown only
/// to the managers of an organization that exists).
pub(super) async fn stored_organizations(store: &dyn Store, ids: &[String]) -> Vec<String> {
    let mut stored = Vec::new();
    for id in ids.iter().take(store::import_log::MAX_ORGANIZATIONS) {
        if let Ok(Some(_)) = store.get_organization(id).await {
            stored.push(id.clone());
        }
    }
    stored
}
