//! `audit export`: the audit log as JSON lines (docs/tokens-and-audit.md).

use chrono::{DateTime, Utc};

use super::{AuditCommand, Failure, stdout_closed};
use crate::Error;
use crate::store;

/// Run one `audit` command.
pub(super) async fn run(database_url: &str, what: AuditCommand) -> Result<(), Failure> {
    match what {
        AuditCommand::Export { since } => audit_export(database_url, &since).await,
    }
}

/// Audit events per store query of `audit export`.
const AUDIT_PAGE: u32 = 1000;

/// `audit export --since T`: JSON lines on stdout, oldest first, a page at
/// a time (any number of events in bounded memory).
async fn audit_export(database_url: &str, since: &str) -> Result<(), Failure> {
    use std::io::Write as _;
    let since = DateTime::parse_from_rfc3339(since)
        .map_err(|e| {
            Failure::BadInput(format!(
                "--since {since:?} is not an RFC 3339 time with an offset \
                 (e.g. 2026-11-29T00:00:00Z): {e}"
            ))
        })?
        .with_timezone(&Utc);
    let store = store::open(database_url).await?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut page = store.audit_since(since, AUDIT_PAGE).await?;
    loop {
        for event in &page {
            let line = serde_json::to_string(event).map_err(|e| Error::Io(e.to_string()))?;
            if let Err(e) = writeln!(out, "{line}") {
                return stdout_closed(e);
            }
        }
        if let Err(e) = out.flush() {
            return stdout_closed(e);
        }
        let Some(last) = page.last() else {
            break;
        };
        if page.len() < AUDIT_PAGE as usize {
            break;
        }
        page = store
            .audit_after(last.occurred_at, &last.event_id, AUDIT_PAGE)
            .await?;
    }
    // Then the counter rows of refused anonymous calls (docs/security.md,
    // "What is kept, by outcome"): without them an export would hide every
    // call that was only counted. Each line says it is a counter.
    let mut counts = store.audit_counts_since(since, AUDIT_PAGE).await?;
    loop {
        for count in &counts {
            let line = counter_line(count)?;
            if let Err(e) = writeln!(out, "{line}") {
                return stdout_closed(e);
            }
        }
        if let Err(e) = out.flush() {
            return stdout_closed(e);
        }
        let Some(last) = counts.last() else {
            return Ok(());
        };
        if counts.len() < AUDIT_PAGE as usize {
            return Ok(());
        }
        counts = store.audit_counts_after(last, AUDIT_PAGE).await?;
    }
}

/// One counter row as an export line: its fields plus
/// `"record": "audit_counter"` (an event line has no `record` member).
fn counter_line(count: &store::AuditCount) -> Result<String, Failure> {
    let mut value = serde_json::to_value(count).map_err(|e| Error::Io(e.to_string()))?;
    if let Some(fields) = value.as_object_mut() {
        fields.insert("record".to_owned(), "audit_counter".into());
    }
    Ok(value.to_string())
}
