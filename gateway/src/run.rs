//! Running one CLI command to an exit code.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;

use chrono::{DateTime, Utc};

use crate::auth::RooftopScope;
use crate::auth::api_token::{self, CreateError, TokenRequest, TokenStatus};
use crate::catalog::Catalog;
use crate::cli::{
    AuditCommand, Cli, Command, DemoCommand, FeedFormatArg, ImportCommand, ProgramsCommand,
    TokenCommand,
};
use crate::ingest::{self, FeedCheck, FeedFormat, IngestContext, IngestError};
use crate::progress::{Progress, ProgressMode, Unit};
use crate::store::snapshot_write::{ChangeSink, RemovalGuard, SnapshotWrite, WriteChecks};
use crate::store::{
    DealersImportSummary, ImportAttempt, ImportKind, ImportOutcome, OrganizationRecord, Store,
};
use crate::{Error, app, dealers, store};

mod changes;
mod programs_list;

use changes::{JsonChanges, JsonOut, Listing};

/// Exit code for input the user must fix (a bad file, an unknown id).
const EXIT_INVALID_INPUT: u8 = 2;

/// How a command fails: bad input (exit 2, the report is printed as is) or
/// any other failure (exit 1).
#[derive(Debug)]
enum Failure {
    Gateway(Error),
    BadInput(String),
}

impl<E: Into<Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        Self::Gateway(e.into())
    }
}

impl Failure {
    fn from_ingest(e: IngestError) -> Self {
        if e.is_bad_input() {
            Self::BadInput(e.to_string())
        } else {
            Self::Gateway(Error::Io(e.to_string()))
        }
    }
}

pub async fn run(cli: Cli) -> ExitCode {
    // `serve --config FILE` (issue 15 item 6), and `stdio --config FILE`
    // (the same serve settings): the file's settings under the flags and
    // environment variables, or no start at all.
    let config_given = matches!(&cli.command, Command::Serve(s) if s.config.is_some())
        || matches!(&cli.command, Command::Stdio(s) if s.serve.config.is_some());
    let cli = if config_given {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        match crate::cli::with_config_file(&args) {
            Ok(Some(layered)) => layered,
            Ok(None) => cli,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(EXIT_INVALID_INPUT);
            }
        }
    } else {
        cli
    };
    // `main` installed the subscriber before the command line was known
    // whole; the filter and format may come from the config file.
    crate::telemetry::configure(&cli.log, cli.log_format);
    let db = cli.database_url.as_str();
    let progress = cli.progress;
    let result: Result<(), Failure> = match cli.command {
        Command::Serve(settings) => serve(*settings, db).await.map_err(Failure::from),
        Command::Stdio(settings) => stdio(*settings, db).await,
        Command::Completions { shell } => {
            use std::io::Write as _;
            let script = crate::cli::completions(shell);
            let mut out = std::io::stdout().lock();
            match out.write_all(&script).and_then(|()| out.flush()) {
                Ok(()) => Ok(()),
                Err(e) => stdout_closed(e),
            }
        }
        Command::Migrate => migrate(db).await.map_err(Failure::from),
        Command::Import { what } => match what {
            ImportCommand::Dealers { file, dry_run } => import_dealers(db, &file, dry_run).await,
            ImportCommand::Inventory {
                file,
                organization,
                rooftop,
                format,
                dry_run,
                json,
                guard,
            } => {
                import_inventory(
                    db,
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
                import_bundle(
                    db,
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
            } => import_programs(db, &file, &organization, replace, dry_run, json).await,
        },
        Command::Demo { what } => match what {
            DemoCommand::Generate {
                vehicles,
                rooftops,
                seed,
                out,
            } => demo_generate(vehicles, rooftops, seed, &out, progress),
        },
        Command::Token { what } => match what {
            TokenCommand::Create {
                subject,
                organization,
                rooftops,
                group,
                scopes,
                purpose,
                expires_in,
                json,
            } => {
                let grant = if group {
                    RooftopScope::Group
                } else {
                    RooftopScope::Rooftops(rooftops.iter().map(|r| r.trim().to_owned()).collect())
                };
                let scopes = scopes.iter().map(|s| s.trim().to_owned()).collect();
                token_create(
                    db,
                    TokenArgs {
                        subject,
                        organization,
                        rooftops: grant,
                        scopes,
                        purpose,
                        expires_in,
                    },
                    json,
                )
                .await
            }
            TokenCommand::List { json } => token_list(db, json).await,
            TokenCommand::Revoke { token_id } => token_revoke(db, &token_id).await,
        },
        Command::Audit { what } => match what {
            AuditCommand::Export { since } => audit_export(db, &since).await,
        },
        Command::Programs { what } => match what {
            ProgramsCommand::List { organization, json } => {
                programs_list::run(db, &organization, json).await
            }
            ProgramsCommand::Withdraw {
                organization,
                program_id,
                revision,
                dry_run,
            } => programs_withdraw(db, &organization, &program_id, revision, dry_run).await,
        },
        Command::Preview {
            organization,
            rooftop,
            vin,
            stock,
            profile,
            json,
        } => crate::preview::render(
            db,
            &crate::preview::Request {
                organization: &organization,
                rooftop: &rooftop,
                vin: vin.as_deref(),
                stock: stock.as_deref(),
                profile: profile.as_deref(),
            },
            if json {
                crate::preview::Output::SummaryAndJson
            } else {
                crate::preview::Output::Summary
            },
        )
        .await
        .map(|text| print!("{text}"))
        .map_err(Failure::from),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Gateway(Error::OperatorFile(e))) => {
            eprint!("{e}");
            ExitCode::from(EXIT_INVALID_INPUT)
        }
        Err(Failure::BadInput(report)) => {
            eprint!("{report}");
            if !report.ends_with('\n') {
                eprintln!();
            }
            ExitCode::from(EXIT_INVALID_INPUT)
        }
        Err(Failure::Gateway(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(settings: crate::config::ServeSettings, database_url: &str) -> Result<(), Error> {
    let (state, listener) = app::prepare(settings, database_url).await?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::Io(e.to_string()))?;
    println!("Dealer Agent Gateway listening on http://{addr}/mcp");
    println!(
        "Try: curl -s http://{addr}/mcp -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: server/discover' -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{{\"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{{}}}}}}}}'"
    );
    tracing::info!(listen = %addr, store = %store_kind(database_url), "serving");
    let store = state.store.clone();
    app::serve(listener, state, app::shutdown_signal()).await?;
    // SQLite checkpoints and removes its write-ahead log as the last
    // connection closes (`Store::close`).
    store.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// `dealer-gateway stdio` (issue 15 item 5): stdout carries MCP messages
/// only, so nothing here prints to it; everything else goes to stderr.
async fn stdio(settings: crate::cli::StdioSettings, database_url: &str) -> Result<(), Failure> {
    use crate::mcp::stdio::{self, Credential, StdioError};
    let crate::cli::StdioSettings { token, serve } = settings;
    let state = stdio::prepare(serve, database_url).await?;
    let credential = match Credential::establish(&state, token.as_deref()).await {
        Ok(c) => c,
        // A refused grant is input to fix (exit 2), never an anonymous start.
        Err(e @ StdioError::TokenRefused { .. }) => return Err(Failure::BadInput(e.to_string())),
        Err(e) => return Err(Failure::Gateway(Error::Io(e.to_string()))),
    };
    tracing::info!(store = %store_kind(database_url), "serving MCP on stdio");
    // The same background work as `serve`: audit retention, and the
    // bundled demo kept within its SLAs (a desktop client may keep this
    // process for hours).
    let retention =
        store::audit::spawn_retention(state.store.clone(), state.settings.audit_retention());
    let demo_refresh = (!state.settings.no_demo && state.settings.seed_dealers.is_none())
        .then(|| crate::demo::refresh::spawn(state.store.clone()));
    let stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let result = stdio::serve(
        &state,
        &credential,
        stdin,
        tokio::io::stdout(),
        app::shutdown_signal(),
    )
    .await;
    retention.abort();
    if let Some(task) = demo_refresh {
        task.abort();
    }
    match result {
        Ok(stdio::Ended::Eof | stdio::Ended::OutputClosed) => {
            tracing::info!("stdio: the client closed the connection; stopped");
            Ok(())
        }
        Ok(stdio::Ended::Shutdown) => {
            // tokio reads stdin with a blocking read on a runtime thread
            // that cannot be cancelled, and the runtime waits for it when
            // it is dropped: exit now rather than wait for input or EOF.
            tracing::info!("stdio: stopped by a signal");
            std::process::exit(0);
        }
        Err(e) => Err(Failure::Gateway(Error::Io(e.to_string()))),
    }
}

fn store_kind(url: &str) -> &'static str {
    if url.starts_with("postgres") {
        "postgres"
    } else {
        "sqlite"
    }
}

async fn migrate(database_url: &str) -> Result<(), Error> {
    store::open(database_url).await?;
    println!("store is migrated ({})", store_kind(database_url));
    Ok(())
}

async fn import_dealers(database_url: &str, file: &Path, dry_run: bool) -> Result<(), Failure> {
    let name = file.display().to_string();
    let (records, summary) = dealers_import(database_url, file, dry_run).await?;
    println!("{}", dealers_line(&name, &records, &summary, dry_run));
    Ok(())
}

/// Parse a dealers file and store it (or plan it, for a dry run). A refused
/// file is recorded for the console's imports page of every stored
/// organization it names, and every import is counted for /metrics (docs/console.md
/// "Imports"), dry runs excepted.
async fn dealers_import(
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
fn dealers_line(
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
fn dealers_json(
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

/// Those of `ids` that are stored organizations (a refusal is shown only
/// to the managers of an organization that exists).
async fn stored_organizations(store: &dyn Store, ids: &[String]) -> Vec<String> {
    let mut stored = Vec::new();
    for id in ids.iter().take(store::import_log::MAX_ORGANIZATIONS) {
        if let Ok(Some(_)) = store.get_organization(id).await {
            stored.push(id.clone());
        }
    }
    stored
}

/// `import programs FILE --organization ORG [--replace] [--dry-run]
/// [--json]`: parse, schema-check and validate the file (every problem at
/// once, each rule compiled), then, in one store transaction, validate the
/// organization's resulting program set as a whole at every instant
/// (docs/pricing.md "Whole-set validation") and store it with an audit
/// event. Bad input, or any conflict,
/// exits 2 and writes nothing but the audit event of the refusal
/// (docs/pricing.md "Audit") and its record for the console's imports page
/// (docs/console.md "Imports").
async fn import_programs(
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
                    Err(e) => tracing::error!(
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

/// How many problems a report lists: the count its heading states
/// (`N problem(s)`, `N conflict(s)`), else one per line after the heading.
fn problem_count(report: &str) -> u32 {
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

/// `programs withdraw --organization ORG PROGRAM_ID [--revision N] [--dry-run]`
/// (issue 12 item 3): audited; refused (exit 2, nothing withdrawn, the
/// refusal audited) when the program or revision is not active or the
/// remaining programs would not validate as a set.
async fn programs_withdraw(
    database_url: &str,
    organization: &str,
    program_id: &str,
    revision: Option<u32>,
    dry_run: bool,
) -> Result<(), Failure> {
    let tool = "cli.programs_withdraw";
    // What was asked, as the refusal's resource id: `<id>:<revision>` or the
    // id alone. It comes from the command line, unvalidated: the store
    // records it only if it passes the identifier schema (else `invalid`).
    let asked = vec![match revision {
        Some(r) => format!("{program_id}:{r}"),
        None => program_id.to_owned(),
    }];
    let store = store::open(database_url).await?;
    if store.get_organization(organization).await?.is_none() {
        if !dry_run {
            audit_programs_refusal(
                store.as_ref(),
                organization,
                tool,
                ProgramsRefusal::Refused,
                asked,
            )
            .await;
        }
        return Err(Failure::BadInput(format!(
            "organization {organization} is not in the store; nothing was withdrawn"
        )));
    }
    let summary = change_programs(
        store.as_ref(),
        organization,
        store::ProgramsChange::Withdraw {
            program_id,
            revision,
        },
        tool,
        &asked,
        dry_run,
    )
    .await?;
    println!(
        "{verb} {n} revision(s) of {organization}",
        verb = if dry_run {
            "dry run, nothing written: would withdraw"
        } else {
            "withdrew"
        },
        n = summary.withdrawn.len(),
    );
    print_program_changes(&summary, dry_run);
    Ok(())
}

/// Why a programs change was refused, as the `outcome` of its audit event
/// (docs/pricing.md "Audit").
#[derive(Debug, Clone, Copy)]
enum ProgramsRefusal {
    /// The file could not be read, parsed, schema-checked or validated on
    /// its own (including the per-file amount bound).
    InvalidFile,
    /// The store refused the change: unknown organization, program or
    /// revision, an already withdrawn revision, another document under a
    /// stored (program_id, revision), or a conflict in the resulting set.
    Refused,
}

impl ProgramsRefusal {
    fn outcome(self) -> &'static str {
        match self {
            Self::InvalidFile => "invalid",
            Self::Refused => "refused",
        }
    }
}

/// The audit event of a programs change made from the CLI: subject
/// `cli:<user>` (`cli` when `$USER` is not an identifier), tool `tool`,
/// outcome `ok`, no resource id yet.
fn programs_event(organization: &str, tool: &str) -> store::AuditEvent {
    let user = std::env::var("USER").unwrap_or_default();
    let subject = if store::audit::is_identifier(&user) {
        format!("cli:{user}")
    } else {
        "cli".to_owned()
    };
    store::AuditEvent {
        event_id: uuid::Uuid::now_v7().to_string(),
        occurred_at: chrono::SubsecRound::trunc_subsecs(Utc::now(), 6),
        trace_id: uuid::Uuid::now_v7().simple().to_string(),
        subject,
        credential: None,
        organization_id: Some(organization.to_owned()),
        rooftop_ids: Vec::new(),
        unresolved_rooftops: 0,
        tool: tool.to_owned(),
        profile: "dealergateway.programs/0.1".to_owned(),
        policy_decision: "allow".to_owned(),
        resource_ids: Vec::new(),
        outcome: "ok".to_owned(),
        delegation: Vec::new(),
    }
}

/// Append the audit event of a refused programs change (issue 12: refused
/// changes leave a trace as accepted ones do). It is the only thing a
/// refusal writes, in its own statement after the refused transaction
/// rolled back. Like every event it is bounded by the store
/// ([`store::AuditEvent::bounded`]): an organization or resource id that is
/// not an identifier is recorded as `invalid`, a list past 100 entries is
/// cut. A failed write is logged; the refusal stands either way.
async fn audit_programs_refusal(
    store: &dyn Store,
    organization: &str,
    tool: &str,
    refusal: ProgramsRefusal,
    resource_ids: Vec<String>,
) {
    let mut event = programs_event(organization, tool);
    event.outcome = refusal.outcome().to_owned();
    event.resource_ids = resource_ids;
    let written = store.append_audit(&event).await;
    crate::store::audit::count_write("event", &written);
    if let Err(e) = written {
        tracing::error!(error = %e, tool, "audit write of a refused programs change failed");
    }
}

/// One programs change through the store: the whole-set check
/// ([`crate::offers::check_program_set`]) and the audit event (subject
/// `cli:<user>`, tool `tool`, resource ids `<program_id>:<revision>` of the
/// added and withdrawn revisions) in the change's transaction. A refusal is
/// bad input, audited (outcome `refused`, resource ids `asked`) unless this
/// is a dry run, which writes nothing.
async fn change_programs(
    store: &dyn Store,
    organization: &str,
    change: store::ProgramsChange<'_>,
    tool: &str,
    asked: &[String],
    dry_run: bool,
) -> Result<store::ProgramsImportSummary, Failure> {
    let audit = programs_event(organization, tool);
    match store
        .change_programs(
            organization,
            change,
            &crate::offers::check_program_set,
            Some(&audit),
            dry_run,
        )
        .await
    {
        Ok(summary) => Ok(summary),
        // The store reports every refusal of a change as `Query` (and
        // rolls the transaction back).
        Err(store::StoreError::Query(message)) => {
            if !dry_run {
                audit_programs_refusal(
                    store,
                    organization,
                    tool,
                    ProgramsRefusal::Refused,
                    asked.to_vec(),
                )
                .await;
            }
            Err(Failure::BadInput(message))
        }
        Err(other) => Err(Failure::from(other)),
    }
}

/// The withdrawn and still-withdrawn revisions of a change, one a line.
fn print_program_changes(summary: &store::ProgramsImportSummary, dry_run: bool) {
    for w in &summary.withdrawn {
        println!(
            "  {} {w}",
            if dry_run {
                "would withdraw"
            } else {
                "withdrawn"
            }
        );
    }
    for w in &summary.still_withdrawn {
        println!(
            "  {w} was withdrawn earlier and stays withdrawn (publish a new revision to offer it again)"
        );
    }
}

/// What an inventory import asks besides its files (docs/inventory-feeds.md
/// "Commands").
#[derive(Debug, Clone, Copy)]
struct ImportSettings {
    dry_run: bool,
    /// The whole plan or result as one JSON document on stdout.
    json: bool,
    /// `None` with `--allow-removals`.
    guard: Option<RemovalGuard>,
}

impl ImportSettings {
    fn new(dry_run: bool, json: bool, guard: &crate::cli::RemovalGuardArgs) -> Self {
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
async fn import_inventory(
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
struct FeedJob<'a> {
    path: &'a Path,
    /// The file as the operator named it.
    name: String,
    /// Or why it cannot be told.
    format: Result<FeedFormat, String>,
    /// The organization asked for (`--organization`), or the one the file
    /// names, when known.
    organization: Option<&'a str>,
    /// The stored organization, or why there is none to import into.
    org: Result<OrganizationRecord, String>,
    /// `--rooftop`.
    rooftop: Option<&'a str>,
    /// The organization's rooftops as the bundle's dealers file lists
    /// them: a dry run plans those the store does not keep yet as first
    /// snapshots.
    planned_rooftops: Vec<String>,
}

/// What became of one inventory file.
struct FeedReport {
    /// The text summary: the counts line, one line per rooftop, and the
    /// bounded listing under each.
    lines: Vec<String>,
    /// Vehicles in the file (checked).
    vehicles: usize,
    /// Refused: the report for stderr (exit 2).
    refused: Option<String>,
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
async fn import_feed(
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

/// A failure in one line, for the `reason` of a `failed` document.
fn failure_text(failure: &Failure) -> String {
    match failure {
        Failure::Gateway(e) => e.to_string(),
        Failure::BadInput(report) => report.lines().next().unwrap_or_default().to_owned(),
    }
}

/// Count (and, when refused, keep) one import for the console's imports
/// page and /metrics. A failed write is logged; the import's own outcome
/// stands either way.
async fn record_import(store: &dyn Store, attempt: &ImportAttempt) {
    if let Err(e) = store.record_import(attempt).await {
        tracing::error!(
            error = %e,
            kind = attempt.kind.as_str(),
            outcome = attempt.outcome.as_str(),
            "the import could not be recorded for the console and /metrics"
        );
    }
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
    let check = match check_file(
        format,
        job.path,
        std::io::BufReader::new(input),
        track.bytes,
        &ctx,
        track,
    ) {
        Ok(check) => check,
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

/// A report's first line, and its second (the first problem) when there is
/// one, as one line without the file's name in front.
fn first_lines(report: &str, name: &str) -> String {
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

/// One file's share of an import's overall progress (docs/operations.md "Progress of imports").
/// Each file is read twice, once to check it and once to write it, so the
/// bar counts its bytes twice: `base .. base + bytes` while checking,
/// then `base + bytes .. base + 2 * bytes` while writing.
#[derive(Clone)]
struct FileTrack {
    progress: Progress,
    /// The position where this file's work starts.
    base: u64,
    /// The file's size.
    bytes: u64,
    /// How the messages name the file (`file 2/5 PATH` in a bundle).
    what: String,
}

/// Rows or vehicles between two progress messages (the position itself
/// moves on every update).
const MESSAGE_EVERY: usize = 1000;

/// Pass 1 of an import: every rule over the whole file, with progress,
/// keeping no vehicle; problems name the file by the path given.
fn check_file(
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
async fn stream_write(
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

/// `import bundle DIR [--dry-run] [--json] [--allow-removals |
/// --max-removal-percent N]`.
async fn import_bundle(
    database_url: &str,
    dir: &Path,
    settings: ImportSettings,
    mode: ProgressMode,
) -> Result<(), Failure> {
    let shown = dir.display().to_string();
    let dealers_file = dir.join("dealers.yaml");
    if !dealers_file.is_file() {
        return Err(Failure::BadInput(format!(
            "{shown}: a bundle needs dealers.yaml (and inventory/*.csv); nothing was imported"
        )));
    }
    let mut json = settings.json.then(JsonOut::default);
    if let Some(out) = json.as_mut() {
        out.raw("{\"command\":\"import bundle\",\"bundle\":");
        out.value(&serde_json::json!(shown));
        out.raw(&format!(",\"dry_run\":{},\"dealers\":", settings.dry_run));
    }
    let dealers_name = dealers_file.display().to_string();
    let organizations = match dealers_import(database_url, &dealers_file, settings.dry_run).await {
        Ok((records, summary)) => {
            let line = dealers_line(&dealers_name, &records, &summary, settings.dry_run);
            match json.as_mut() {
                Some(out) => {
                    let mut dealers = dealers_json(&dealers_name, &records, &summary);
                    dealers["outcome"] = if settings.dry_run {
                        "planned"
                    } else {
                        "imported"
                    }
                    .into();
                    out.value(&dealers);
                }
                None => println!("{line}"),
            }
            records
        }
        Err(failure) => {
            // A bad dealers file stops everything; the document says so.
            if let Some(mut out) = json {
                let outcome = match &failure {
                    Failure::BadInput(_) | Failure::Gateway(Error::OperatorFile(_)) => "invalid",
                    Failure::Gateway(Error::Store(store::StoreError::Query(_))) => "refused",
                    Failure::Gateway(_) => "failed",
                };
                out.value(&serde_json::json!({
                    "file": dealers_name,
                    "outcome": outcome,
                    "reason": failure_text(&failure),
                }));
                out.raw(",\"files\":[],\"files_with_problems\":[],\"outcome\":");
                out.value(&serde_json::json!(outcome));
                out.raw("}");
                out.finish()
                    .map_err(|e| Error::Io(format!("cannot write to stdout: {e}")))?;
            }
            return Err(failure);
        }
    };
    let inventory_dir = dir.join("inventory");
    let mut files: Vec<std::path::PathBuf> = match std::fs::read_dir(&inventory_dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            return Err(Error::Io(format!("{}: cannot list: {e}", inventory_dir.display())).into());
        }
    };
    files.sort();
    // The overall bar (docs/operations.md "Progress of imports"): every byte of every feed, twice
    // (checked, then written); see `FileTrack`.
    let sizes: Vec<u64> = files
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .collect();
    let progress = Progress::new(
        mode,
        format!("import bundle {shown}"),
        Unit::Bytes,
        sizes.iter().sum::<u64>().saturating_mul(2),
    );
    let store = store::open(database_url).await?;
    if let Some(out) = json.as_mut() {
        out.raw(",\"files\":[");
    }
    let mut lines = Vec::new();
    let mut failed = Vec::new();
    let mut vehicles = 0usize;
    let mut base = 0u64;
    let mut result = Ok(());
    for (index, (path, &size)) in files.iter().zip(&sizes).enumerate() {
        let name = path.display().to_string();
        let track = FileTrack {
            progress: progress.clone(),
            base,
            bytes: size,
            what: format!("file {} of {} {name}", index + 1, files.len()),
        };
        base += size.saturating_mul(2);
        progress.set_position(track.base);
        // Three reads of the file, none holding it (docs/benchmarks.md "Feed import memory"): its
        // organization, then check, then write.
        let opened = std::fs::File::open(path)
            .map(std::io::BufReader::new)
            .map_err(|e| Error::Io(format!("{name}: cannot read: {e}")));
        let opened = match opened {
            Ok(o) => o,
            Err(e) => {
                result = Err(e.into());
                break;
            }
        };
        let named = ingest::dap_csv::organization_of(opened);
        let org = match &named {
            Err(rule) => Err(format!(
                "cannot tell the organization: {rule}; nothing was imported from this file"
            )),
            Ok(id) => match organizations.iter().find(|o| &o.organization_id == id) {
                Some(o) => Ok(o.clone()),
                None => match store.get_organization(id).await {
                    Ok(Some(o)) => Ok(o),
                    Ok(None) => Err("its organization_id names no organization of the bundle's \
                                     dealers.yaml or the store; nothing was imported from this \
                                     file"
                        .to_owned()),
                    Err(e) => {
                        result = Err(e.into());
                        break;
                    }
                },
            },
        };
        let planned_rooftops = org
            .as_ref()
            .ok()
            .filter(|_| settings.dry_run)
            .map(|o| o.rooftops.iter().map(|r| r.rooftop_id.clone()).collect())
            .unwrap_or_default();
        let job = FeedJob {
            path,
            name: name.clone(),
            format: Ok(FeedFormat::DapCsv),
            organization: named.as_deref().ok(),
            org,
            rooftop: None,
            planned_rooftops,
        };
        if let Some(out) = json.as_mut() {
            out.raw(if index == 0 { "{" } else { ",{" });
        }
        match import_feed(store.as_ref(), &job, settings, &track, json.as_mut()).await {
            Ok(report) => {
                vehicles += report.vehicles;
                lines.extend(report.lines);
                if let Some(report) = report.refused {
                    progress.println(&report);
                    failed.push(name);
                }
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    progress.finish();
    store.close().await;
    let verb = if settings.dry_run {
        "valid"
    } else {
        "imported"
    };
    if let Some(mut out) = json {
        out.raw("],\"files_with_problems\":");
        out.value(&serde_json::json!(failed));
        let outcome = match (&result, failed.is_empty(), settings.dry_run) {
            (Err(_), _, _) => "failed",
            (Ok(()), true, true) => "planned",
            (Ok(()), true, false) => "imported",
            (Ok(()), false, _) => "partial",
        };
        out.raw(",\"outcome\":");
        out.value(&serde_json::json!(outcome));
        out.raw("}");
        out.finish()
            .map_err(|e| Error::Io(format!("cannot write to stdout: {e}")))?;
    } else if result.is_ok() {
        for line in &lines {
            println!("{line}");
        }
        println!(
            "bundle {shown}{dry}: {ok} of {all} inventory file(s) {verb}, {vehicles} vehicle(s); {bad} file(s) with problems",
            dry = if settings.dry_run {
                " (dry run, nothing written)"
            } else {
                ""
            },
            ok = files.len() - failed.len(),
            all = files.len(),
            bad = failed.len(),
        );
    }
    result?;
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Failure::BadInput(format!(
            "{} inventory file(s) had problems and were not imported: {}",
            failed.len(),
            failed.join(", ")
        )))
    }
}

/// `demo generate --vehicles N --rooftops M --seed S --out DIR`, with
/// progress in rows (issue 15 item 3).
fn demo_generate(
    vehicles: usize,
    rooftops: usize,
    seed: u64,
    out: &Path,
    mode: ProgressMode,
) -> Result<(), Failure> {
    let options = crate::demo::DemoOptions {
        vehicles,
        rooftops,
        seed,
    };
    let progress = Progress::new(
        mode,
        format!("demo generate {}", out.display()),
        Unit::Rows,
        vehicles as u64,
    );
    // `demo::generate` has no progress hook (gateway/src/demo is not this
    // command's module), so the rows are counted where they land: the
    // feeds it writes, followed as they grow.
    let generated = std::thread::scope(|scope| {
        let worker = scope.spawn(|| crate::demo::generate(&options, out));
        let mut watch = FeedWatch::new(&out.join("inventory"));
        while !worker.is_finished() {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let rows = watch.rows();
            progress.set_position(rows);
            progress.set_message(format!("feed {} of {rooftops}", watch.files().max(1)));
        }
        worker.join()
    });
    let summary = generated
        .map_err(|_| {
            Failure::Gateway(Error::Io(
                "the demo generator thread failed; the bundle may be incomplete".into(),
            ))
        })?
        .map_err(|e| match e {
            crate::demo::DemoError::InvalidOptions(_) => Failure::BadInput(e.to_string()),
            crate::demo::DemoError::Io { .. } => Failure::Gateway(Error::Io(e.to_string())),
        })?;
    progress.finish();
    println!(
        "generated {}: {} organization(s), {} rooftop(s), {} vehicle(s) in {} file(s); \
         load it with: dealer-gateway import bundle {}",
        out.display(),
        summary.organizations,
        summary.rooftops,
        summary.vehicles,
        summary.files.len(),
        out.display()
    );
    Ok(())
}

/// The CSV feeds `demo generate` is writing, read as they grow to count
/// their data rows (lines after each header). A file last modified before
/// the command started is a previous run's and not counted; a file that
/// shrinks was re-created and is counted again from its start.
struct FeedWatch {
    dir: std::path::PathBuf,
    since: std::time::SystemTime,
    /// Per file: bytes read so far and the newlines among them.
    seen: std::collections::BTreeMap<std::path::PathBuf, (u64, u64)>,
}

impl FeedWatch {
    fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            // Filesystem clocks are coarser than ours.
            since: std::time::SystemTime::now() - std::time::Duration::from_secs(1),
            seen: std::collections::BTreeMap::new(),
        }
    }

    fn files(&self) -> usize {
        self.seen.values().filter(|(bytes, _)| *bytes > 0).count()
    }

    /// Data rows written so far (what is readable now).
    fn rows(&mut self) -> u64 {
        use std::io::{Read as _, Seek as _};
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "csv") {
                continue;
            }
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.modified().is_ok_and(|m| m < self.since) {
                continue;
            }
            let (offset, lines) = self.seen.entry(path.clone()).or_insert((0, 0));
            if meta.len() < *offset {
                (*offset, *lines) = (0, 0);
            }
            let Ok(mut file) = std::fs::File::open(&path) else {
                continue;
            };
            if file.seek(std::io::SeekFrom::Start(*offset)).is_err() {
                continue;
            }
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n) = file.read(&mut buf) {
                if n == 0 {
                    break;
                }
                *offset += n as u64;
                *lines += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
            }
        }
        self.seen
            .values()
            .map(|(_, lines)| lines.saturating_sub(1))
            .sum()
    }
}

/// `token create` arguments, after splitting the comma lists.
struct TokenArgs {
    subject: String,
    organization: String,
    rooftops: RooftopScope,
    scopes: BTreeSet<String>,
    purpose: String,
    expires_in: String,
}

/// `token create ...`: validate, store the hash, print the token once.
async fn token_create(database_url: &str, args: TokenArgs, json: bool) -> Result<(), Failure> {
    let not_created =
        |message: String| Failure::BadInput(format!("{message}; no token was created"));
    let lifetime = api_token::parse_lifetime(&args.expires_in).map_err(not_created)?;
    let known_scopes = api_token::known_scopes(&Catalog::load()?);
    let store = store::open(database_url).await?;
    let now = Utc::now();
    let request = TokenRequest {
        subject: args.subject,
        organization_id: args.organization,
        rooftops: args.rooftops,
        scopes: args.scopes,
        purpose: args.purpose,
        expires_at: now + lifetime,
    };
    let issued = api_token::create(store.as_ref(), &request, &known_scopes, now)
        .await
        .map_err(|e| match e {
            CreateError::Invalid(message) => not_created(message),
            CreateError::Store(e) => Failure::from(e),
        })?;
    if json {
        println!(
            "{}",
            serde_json::to_string(&issued).map_err(|e| Error::Io(e.to_string()))?
        );
    } else {
        println!(
            "created token {id} for {subject} (organization {org}, {rooftops}; scopes {scopes}), \
             expires {expires}:\n\n    {token}\n\n\
             Store it now: it is shown only this once and cannot be recovered \
             (the gateway keeps only its hash).",
            id = issued.token_id,
            subject = request.subject.trim(),
            org = request.organization_id,
            rooftops = describe_rooftops(&request.rooftops),
            scopes = join(&request.scopes),
            expires = rfc3339(issued.expires_at),
            token = issued.token,
        );
    }
    Ok(())
}

/// `token list [--json]`: never a secret or a hash.
async fn token_list(database_url: &str, json: bool) -> Result<(), Failure> {
    let store = store::open(database_url).await?;
    let tokens = store.list_api_tokens().await?;
    let now = Utc::now();
    if json {
        let rows: Vec<serde_json::Value> = tokens
            .iter()
            .map(|t| {
                let (group, rooftops) = match &t.rooftops {
                    RooftopScope::Group => (true, Vec::new()),
                    RooftopScope::Rooftops(ids) => (false, ids.iter().cloned().collect()),
                };
                serde_json::json!({
                    "token_id": t.token_id,
                    "status": TokenStatus::of(t, now).as_str(),
                    "subject": t.subject,
                    "organization_id": t.organization_id,
                    "group": group,
                    "rooftops": rooftops,
                    "scopes": t.scopes,
                    "purpose": t.purpose,
                    "created_at": rfc3339(t.created_at),
                    "expires_at": rfc3339(t.expires_at),
                    "revoked_at": t.revoked_at.map(rfc3339),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).map_err(|e| Error::Io(e.to_string()))?
        );
        return Ok(());
    }
    if tokens.is_empty() {
        println!("no tokens");
        return Ok(());
    }
    for t in &tokens {
        println!(
            "{id}  {status:<7}  subject={subject}  organization={org}  {rooftops}  scopes={scopes}  \
             purpose={purpose:?}  created={created}  expires={expires}  revoked={revoked}",
            id = t.token_id,
            status = TokenStatus::of(t, now).as_str(),
            subject = t.subject,
            org = t.organization_id,
            rooftops = match &t.rooftops {
                RooftopScope::Group => "rooftops=group".to_owned(),
                RooftopScope::Rooftops(ids) => format!("rooftops={}", join(ids)),
            },
            scopes = join(&t.scopes),
            purpose = t.purpose,
            created = rfc3339(t.created_at),
            expires = rfc3339(t.expires_at),
            revoked = t.revoked_at.map_or_else(|| "-".to_owned(), rfc3339),
        );
    }
    Ok(())
}

/// `token revoke ID`.
async fn token_revoke(database_url: &str, token_id: &str) -> Result<(), Failure> {
    let store = store::open(database_url).await?;
    let unknown = || {
        Failure::BadInput(format!(
            "no token has id {token_id:?} (see dealer-gateway token list); nothing was revoked"
        ))
    };
    let before = store.get_api_token(token_id).await?.ok_or_else(unknown)?;
    if !store.revoke_api_token(token_id, Utc::now()).await? {
        return Err(unknown());
    }
    match before.revoked_at {
        Some(at) => println!("token {token_id} was already revoked at {}", rfc3339(at)),
        None => {
            let at = store
                .get_api_token(token_id)
                .await?
                .and_then(|t| t.revoked_at)
                .map_or_else(|| "now".to_owned(), rfc3339);
            println!("revoked token {token_id} at {at}");
        }
    }
    Ok(())
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

/// A closed stdout (`audit export | head`) ends the export quietly.
fn stdout_closed(e: std::io::Error) -> Result<(), Failure> {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Ok(())
    } else {
        Err(Error::Io(format!("cannot write to stdout: {e}")).into())
    }
}

fn describe_rooftops(scope: &RooftopScope) -> String {
    match scope {
        RooftopScope::Group => "group (every rooftop)".to_owned(),
        RooftopScope::Rooftops(ids) => format!("rooftops {}", join(ids)),
    }
}

fn join(items: &BTreeSet<String>) -> String {
    items
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(",")
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}
