//! `import programs FILE --organization ORG [--replace] [--dry-run]
//! [--json]`: an organization's incentive programs file, all or nothing.

use std::path::Path;

use chrono::Utc;

use super::{ProgramsRefusal, audit_programs_refusal, change_programs, print_program_changes};
use crate::Error;
use crate::catalog::Catalog;
use crate::cli::import::{first_lines, problem_count, record_import, stored_organizations};
use crate::cli::{Failure, LOG_TARGET, failure_text};
use crate::store::{self, ImportAttempt, ImportKind, ImportOutcome};

/// `import programs FILE --organization ORG [--replace] [--dry-run]
/// [--json]`: parse, schema-check and validate the file (every problem at
/// once, each rule compiled), then, in one store transaction, validate the
/// organization's resulting program set as a whole at every instant
/// (docs/pricing.md "Whole-set validation") and store it with an audit
/// event. Bad input, or any conflict,
/// exits 2 and writes nothing but the audit event of the refusal
/// (docs/pricing.md "Audit") and its record for the console's imports page
/// (docs/console.md "Imports").
pub(in crate::cli) async fn import_programs(
    database_url: &str,
    file: &Path,
    organization: &str,
    replace: bool,
    dry_run: bool,
    json: bool,
) -> Result<(), Failure> {
    let name = file.display().to_string();
    let result = change_programs_file(database_url, file, organization, replace, dry_run).await;
    let header = serde_json::json!({
        "command": "import programs",
        "file": name,
        "organization_id": organization,
        "dry_run": dry_run,
        "replace": replace,
    });
    match result {
        Ok((records, summary)) => {
            if json {
                let pairs = |list: &[store::ProgramRevision]| -> serde_json::Value {
                    list.iter()
                        .map(|r| serde_json::json!({"program_id": r.program_id, "revision": r.revision}))
                        .collect()
                };
                let mut doc = header;
                doc["outcome"] = if dry_run { "planned" } else { "imported" }.into();
                doc["programs"] = records.into();
                doc["added"] = pairs(&summary.added_revisions);
                doc["unchanged"] = pairs(&summary.unchanged_revisions);
                doc["withdrawn"] = pairs(&summary.withdrawn);
                doc["still_withdrawn"] = pairs(&summary.still_withdrawn);
                println!("{doc}");
            } else {
                println!(
                    "{verb} {name}: {records} program(s) of {organization} — added {a}, unchanged {u}, withdrawn {w}",
                    verb = if dry_run {
                        "dry run, nothing written:"
                    } else {
                        "imported"
                    },
                    a = summary.added,
                    u = summary.unchanged,
                    w = summary.withdrawn.len(),
                );
                print_program_changes(&summary, dry_run);
            }
            Ok(())
        }
        Err((outcome, failure)) => {
            if json {
                let mut doc = header;
                doc["outcome"] = outcome.map_or("failed", ImportOutcome::as_str).into();
                doc["reason"] = failure_text(&failure).into();
                println!("{doc}");
            }
            Err(failure)
        }
    }
}

/// The work of `import programs`: the number of programs in the file and
/// what changed, or how it was refused (`None`: a failure that is no
/// refusal, e.g. an unreadable file) and why.
async fn change_programs_file(
    database_url: &str,
    file: &Path,
    organization: &str,
    replace: bool,
    dry_run: bool,
) -> Result<(usize, store::ProgramsImportSummary), (Option<ImportOutcome>, Failure)> {
    let plain = |failure: Failure| (None, failure);
    let catalog = Catalog::load().map_err(|e| plain(e.into()))?;
    let tool = if replace {
        "cli.import_programs_replace"
    } else {
        "cli.import_programs"
    };
    let name = file.display().to_string();
    let parsed = match read_programs_file(&catalog, file, &name) {
        Ok(parsed) => parsed,
        Err(failure) => {
            // A file that cannot be read or does not validate on its own is
            // a refused change too: audited (outcome `invalid`) with no
            // resource id, since nothing in it was validated.
            if !dry_run {
                match store::open(database_url).await {
                    Ok(store) => {
                        audit_programs_refusal(
                            store.as_ref(),
                            organization,
                            tool,
                            ProgramsRefusal::InvalidFile,
                            Vec::new(),
                        )
                        .await;
                        if let Failure::BadInput(report) = &failure {
                            let mut attempt = ImportAttempt::new(
                                ImportKind::Programs,
                                ImportOutcome::Invalid,
                                &name,
                                &first_lines(report, &name),
                            );
                            attempt.organization_ids =
                                stored_organizations(store.as_ref(), &[organization.to_owned()])
                                    .await;
                            attempt.problems = problem_count(report);
                            record_import(store.as_ref(), &attempt).await;
                        }
                    }
                    Err(e) => tracing::error!(target: LOG_TARGET,
                        error = %e,
                        "the store cannot be opened: the refused programs import is not audited"
                    ),
                }
            }
            let outcome = matches!(failure, Failure::BadInput(_)).then_some(ImportOutcome::Invalid);
            return Err((outcome, failure));
        }
    };
    // The pairs the file asked for: schema-valid identifiers, so the
    // event of a refusal names them (bounded like every event).
    let asked: Vec<String> = parsed
        .records
        .iter()
        .map(|r| {
            store::ProgramRevision {
                program_id: r.program_id.clone(),
                revision: r.revision,
            }
            .audit_id()
        })
        .collect();
    let store = store::open(database_url)
        .await
        .map_err(|e| plain(e.into()))?;
    let known = store
        .get_organization(organization)
        .await
        .map_err(|e| plain(e.into()))?;
    if known.is_none() {
        let message = format!(
            "organization {organization} is not in the store: import its dealers file first \
             (dealer-gateway import dealers FILE); nothing was imported"
        );
        if !dry_run {
            audit_programs_refusal(
                store.as_ref(),
                organization,
                tool,
                ProgramsRefusal::Refused,
                asked,
            )
            .await;
            let attempt = ImportAttempt::new(
                ImportKind::Programs,
                ImportOutcome::Refused,
                &name,
                &message,
            );
            record_import(store.as_ref(), &attempt).await;
        }
        return Err((Some(ImportOutcome::Refused), Failure::BadInput(message)));
    }
    let changed = change_programs(
        store.as_ref(),
        organization,
        store::ProgramsChange::Import {
            records: &parsed.records,
            replace,
        },
        tool,
        &asked,
        dry_run,
    )
    .await;
    match changed {
        Ok(summary) => {
            if !dry_run {
                let mut attempt = ImportAttempt::new(
                    ImportKind::Programs,
                    ImportOutcome::Imported,
                    &name,
                    "imported",
                );
                attempt.organization_ids = vec![organization.to_owned()];
                record_import(store.as_ref(), &attempt).await;
            }
            Ok((parsed.records.len(), summary))
        }
        Err(Failure::BadInput(message)) => {
            // The store's refusals of a programs change name only this
            // organization's programs (docs/pricing.md "Revisions ...").
            if !dry_run {
                let mut attempt = ImportAttempt::new(
                    ImportKind::Programs,
                    ImportOutcome::Refused,
                    &name,
                    &message,
                );
                attempt.organization_ids = vec![organization.to_owned()];
                attempt.problems = problem_count(&message);
                record_import(store.as_ref(), &attempt).await;
            }
            Err((
                Some(ImportOutcome::Refused),
                Failure::BadInput(format!("{name}: {message}")),
            ))
        }
        Err(other) => Err(plain(other)),
    }
}

/// Read and parse a programs file: an unreadable file is an I/O failure,
/// a file with problems is bad input (every problem listed).
fn read_programs_file(
    catalog: &Catalog,
    file: &Path,
    name: &str,
) -> Result<crate::offers::import::ParsedPrograms, Failure> {
    let bytes = std::fs::read(file).map_err(|e| Error::Io(format!("{name}: cannot read: {e}")))?;
    let file_name = file
        .file_name()
        .map_or_else(|| name.to_owned(), |n| n.to_string_lossy().into_owned());
    crate::offers::import::parse(
        catalog,
        name,
        &bytes,
        &format!("programs-file:{file_name}"),
        Utc::now(),
    )
    .map_err(|e| Failure::BadInput(e.to_string()))
}
