//! `import dealers FILE [--dry-run]`: a dealers file (docs/dealers-file.md);
//! organizations named in it are created or updated in place.

use std::path::Path;

use chrono::Utc;

use super::{first_lines, record_import, stored_organizations};
use crate::catalog::Catalog;
use crate::cli::Failure;
use crate::store::{
    self, DealersImportSummary, ImportAttempt, ImportKind, ImportOutcome, OrganizationRecord,
};
use crate::{Error, dealers};

/// `import dealers FILE [--dry-run]`: the summary line on stdout.
pub(super) async fn import_dealers(
    database_url: &str,
    file: &Path,
    dry_run: bool,
) -> Result<(), Failure> {
    let name = file.display().to_string();
    let (records, summary) = dealers_import(database_url, file, dry_run).await?;
    println!("{}", dealers_line(&name, &records, &summary, dry_run));
    Ok(())
}

/// Parse a dealers file and store it (or plan it, for a dry run). A refused
/// file is recorded for the console's imports page of every stored
/// organization it names, and every import is counted for /metrics (docs/console.md
/// "Imports"), dry runs excepted.
pub(super) async fn dealers_import(
    database_url: &str,
    file: &Path,
    dry_run: bool,
) -> Result<(Vec<OrganizationRecord>, DealersImportSummary), Failure> {
    let catalog = Catalog::load()?;
    let name = file.display().to_string();
    let bytes = std::fs::read(file).map_err(|e| Error::Io(format!("{name}: cannot read: {e}")))?;
    let file_name = file
        .file_name()
        .map_or_else(|| name.clone(), |n| n.to_string_lossy().into_owned());
    let parsed = dealers::parse(
        &catalog,
        &name,
        &bytes,
        &format!("dealers-file:{file_name}"),
        Utc::now(),
    );
    let records = match parsed {
        Ok(records) => records,
        Err(e) => {
            if !dry_run && let Ok(store) = store::open(database_url).await {
                let named =
                    stored_organizations(store.as_ref(), &organizations_named(&bytes)).await;
                // A manager of one organization never reads another's
                // problems: with several named, only their count.
                let reason = if named.len() == 1 {
                    first_lines(&e.to_string(), &name)
                } else {
                    format!(
                        "{} problem(s) in the dealers file; nothing was imported",
                        e.problems.len()
                    )
                };
                let mut attempt =
                    ImportAttempt::new(ImportKind::Dealers, ImportOutcome::Invalid, &name, &reason);
                attempt.organization_ids = named;
                attempt.problems = u32::try_from(e.problems.len()).unwrap_or(u32::MAX);
                record_import(store.as_ref(), &attempt).await;
            }
            return Err(Error::OperatorFile(e).into());
        }
    };
    let store = store::open(database_url).await?;
    let summary = if dry_run {
        let existing = store.list_organizations().await?;
        dealers::plan(&existing, &records)
    } else {
        let ids: Vec<String> = records.iter().map(|o| o.organization_id.clone()).collect();
        match store.upsert_organizations(&records).await {
            Ok(summary) => {
                let mut attempt = ImportAttempt::new(
                    ImportKind::Dealers,
                    ImportOutcome::Imported,
                    &name,
                    "imported",
                );
                attempt.organization_ids = ids;
                record_import(store.as_ref(), &attempt).await;
                summary
            }
            Err(store::StoreError::Query(message)) => {
                // The store's message may name another organization (the
                // one keeping a rooftop): the imports page gets the
                // gateway's own words.
                let mut attempt = ImportAttempt::new(
                    ImportKind::Dealers,
                    ImportOutcome::Refused,
                    &name,
                    "the store refused the dealers file (a rooftop id it lists is kept by \
                     another organization, or it lists an id twice; the operator's output \
                     says which); nothing was imported",
                );
                attempt.organization_ids = stored_organizations(store.as_ref(), &ids).await;
                record_import(store.as_ref(), &attempt).await;
                return Err(Error::Store(store::StoreError::Query(message)).into());
            }
            Err(other) => return Err(other.into()),
        }
    };
    Ok((records, summary))
}

/// The summary line of a dealers import.
pub(super) fn dealers_line(
    name: &str,
    records: &[OrganizationRecord],
    summary: &DealersImportSummary,
    dry_run: bool,
) -> String {
    let rooftops: usize = records.iter().map(|o| o.rooftops.len()).sum();
    format!(
        "{verb} {name}: {orgs} organization(s), {rooftops} rooftop(s) — organizations added {oa}, updated {ou}; rooftops added {ra}, updated {ru}, removed {rr}",
        verb = if dry_run {
            "dry run, nothing written:"
        } else {
            "imported"
        },
        orgs = records.len(),
        oa = summary.organizations_added,
        ou = summary.organizations_updated,
        ra = summary.rooftops_added,
        ru = summary.rooftops_updated,
        rr = summary.rooftops_removed,
    )
}

/// The dealers part of the `import bundle --json` document.
pub(super) fn dealers_json(
    name: &str,
    records: &[OrganizationRecord],
    summary: &DealersImportSummary,
) -> serde_json::Value {
    serde_json::json!({
        "file": name,
        "organization_ids": records.iter().map(|o| o.organization_id.as_str()).collect::<Vec<_>>(),
        "rooftops": records.iter().map(|o| o.rooftops.len()).sum::<usize>(),
        "organizations_added": summary.organizations_added,
        "organizations_updated": summary.organizations_updated,
        "rooftops_added": summary.rooftops_added,
        "rooftops_updated": summary.rooftops_updated,
        "rooftops_removed": summary.rooftops_removed,
    })
}

/// The `organization_id`s a dealers file names, read leniently from a file
/// that failed its rules (empty when it is not YAML or JSON at all).
fn organizations_named(bytes: &[u8]) -> Vec<String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Vec::new();
    };
    let Ok(doc) = yaml_serde::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = doc
        .get("organizations")
        .and_then(serde_json::Value::as_array)
        .map(|orgs| {
            orgs.iter()
                .filter_map(|o| o.get("organization_id")?.as_str())
                .filter(|id| store::audit::is_identifier(id))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids.dedup();
    ids
}
