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
use crate::store::{OrganizationRecord, SnapshotRecord, Store};
use crate::{Error, app, dealers, store};

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
            ImportCommand::Dealers { file, dry_run } => import_dealers(db, &file, dry_run)
                .await
                .map(|_| ())
                .map_err(Failure::from),
            ImportCommand::Inventory {
                file,
                organization,
                rooftop,
                format,
                dry_run,
            } => {
                import_inventory(
                    db,
                    &file,
                    &organization,
                    rooftop.as_deref(),
                    format,
                    dry_run,
                    progress,
                )
                .await
            }
            ImportCommand::Bundle { dir, dry_run } => {
                import_bundle(db, &dir, dry_run, progress).await
            }
            ImportCommand::Programs {
                file,
                organization,
                replace,
                dry_run,
            } => import_programs(db, &file, &organization, replace, dry_run).await,
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

async fn import_dealers(
    database_url: &str,
    file: &Path,
    dry_run: bool,
) -> Result<Vec<OrganizationRecord>, Error> {
    let catalog = Catalog::load()?;
    let name = file.display().to_string();
    let bytes = std::fs::read(file).map_err(|e| Error::Io(format!("{name}: cannot read: {e}")))?;
    let file_name = file
        .file_name()
        .map_or_else(|| name.clone(), |n| n.to_string_lossy().into_owned());
    let records = dealers::parse(
        &catalog,
        &name,
        &bytes,
        &format!("dealers-file:{file_name}"),
        Utc::now(),
    )?;
    let store = store::open(database_url).await?;
    let summary = if dry_run {
        let existing = store.list_organizations().await?;
        dealers::plan(&existing, &records)
    } else {
        store.upsert_organizations(&records).await?
    };
    let rooftops: usize = records.iter().map(|o| o.rooftops.len()).sum();
    println!(
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
    );
    Ok(records)
}

/// `import programs FILE --organization ORG [--replace] [--dry-run]`: parse,
/// schema-check and validate the file (every problem at once, each rule
/// compiled), then, in one store transaction, validate the organization's
/// resulting program set as a whole at every instant (issue 12 item 2) and
/// store it with an audit event. Bad input, or any conflict, exits 2 and
/// writes nothing but the audit event of the refusal (docs/pricing.md
/// "Audit").
async fn import_programs(
    database_url: &str,
    file: &Path,
    organization: &str,
    replace: bool,
    dry_run: bool,
) -> Result<(), Failure> {
    let catalog = Catalog::load()?;
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
                    }
                    Err(e) => tracing::error!(
                        error = %e,
                        "the store cannot be opened: the refused programs import is not audited"
                    ),
                }
            }
            return Err(failure);
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
            "organization {organization} is not in the store: import its dealers file first \
             (dealer-gateway import dealers FILE); nothing was imported"
        )));
    }
    let summary = change_programs(
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
    .await
    .map_err(|e| match e {
        Failure::BadInput(message) => Failure::BadInput(format!("{name}: {message}")),
        other => other,
    })?;
    println!(
        "{verb} {name}: {n} program(s) of {organization} — added {a}, unchanged {u}, withdrawn {w}",
        verb = if dry_run {
            "dry run, nothing written:"
        } else {
            "imported"
        },
        n = parsed.records.len(),
        a = summary.added,
        u = summary.unchanged,
        w = summary.withdrawn.len(),
    );
    print_program_changes(&summary, dry_run);
    Ok(())
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

/// `import inventory FILE --organization ORG [--rooftop R] [--format F] [--dry-run]`.
async fn import_inventory(
    database_url: &str,
    file: &Path,
    organization: &str,
    rooftop: Option<&str>,
    format: Option<FeedFormatArg>,
    dry_run: bool,
    mode: ProgressMode,
) -> Result<(), Failure> {
    let name = file.display().to_string();
    let format = match format {
        Some(f) => FeedFormat::from(f),
        None => FeedFormat::from_file_name(&name).ok_or_else(|| {
            Failure::BadInput(format!(
                "{name}: cannot tell the format from the file name (.csv is dap-csv, .json is \
                 json); give --format dap-csv|dealer-com-csv|json; nothing was imported"
            ))
        })?,
    };
    // Read record by record (issue 11 item 6): the file's text is never held
    // in memory beside the parsed vehicles.
    let opened = std::fs::File::open(file)
        .and_then(|f| f.metadata().map(|m| (f, m.len())))
        .map_err(|e| Error::Io(format!("{name}: cannot read: {e}")))?;
    let store = store::open(database_url).await?;
    let org = store.get_organization(organization).await?.ok_or_else(|| {
        Failure::BadInput(format!(
            "organization {organization} is not in the store: import its dealers file first \
                 (dealer-gateway import dealers FILE); nothing was imported"
        ))
    })?;
    let now = Utc::now();
    let ctx = IngestContext::for_organization(&org, rooftop, now);
    let (handle, total) = opened;
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
    let check = check_file(
        format,
        file,
        std::io::BufReader::new(handle),
        total,
        &ctx,
        &track,
    )?;
    let results = stream_write(store.as_ref(), file, &check, &ctx, dry_run, now, &track).await?;
    track.progress.finish();
    store.close().await;
    for line in report_lines(&name, &check, &results, dry_run) {
        println!("{line}");
    }
    Ok(())
}

/// One file's share of an import's overall progress (issue 15 item 3).
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
) -> Result<FeedCheck, Failure> {
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
    checked.map_err(|e| Failure::from_ingest(named_by_path(e, &shown)))
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

/// Pass 2 of an import (issue 11 item 6): read the checked file again on a
/// blocking thread and stream each vehicle to the store's snapshot writer
/// through a bounded channel, so neither the file nor its vehicles are ever
/// held whole. Every rooftop of the file gets its snapshot in one
/// transaction, or none does; a dry run computes the same summaries and
/// writes nothing.
async fn stream_write(
    store: &dyn Store,
    path: &Path,
    check: &FeedCheck,
    ctx: &IngestContext,
    dry_run: bool,
    now: DateTime<Utc>,
    track: &FileTrack,
) -> Result<Vec<SnapshotRecord>, Failure> {
    use crate::store::snapshot_write::{FEED_CHANNEL_CAPACITY, SnapshotFeed, SnapshotPlan};
    let shown = path.display().to_string();
    let vehicles: usize = check.rooftops.iter().map(|(_, n)| n).sum();
    let rooftops: Vec<String> = check.rooftops.iter().map(|(r, _)| r.clone()).collect();
    let source = check.source_record(now);
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
            // The write phase's progress (issue 15 item 3) is what has
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
    let written = store.write_snapshots(plan, receiver).await;
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
    results: &[SnapshotRecord],
    dry_run: bool,
) -> Vec<String> {
    let mut lines = vec![format!(
        "{verb} {name} ({format}, organization {org}): {rows} row(s) read, {n} rooftop(s)",
        verb = if dry_run {
            "dry run, nothing written:"
        } else {
            "imported"
        },
        format = check.format.name(),
        org = check.organization_id,
        rows = check.rows_read,
        n = results.len(),
    )];
    for r in results {
        let snapshot = if dry_run {
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
    }
    lines
}

/// `import bundle DIR [--dry-run]`.
async fn import_bundle(
    database_url: &str,
    dir: &Path,
    dry_run: bool,
    mode: ProgressMode,
) -> Result<(), Failure> {
    let shown = dir.display().to_string();
    let dealers_file = dir.join("dealers.yaml");
    if !dealers_file.is_file() {
        return Err(Failure::BadInput(format!(
            "{shown}: a bundle needs dealers.yaml (and inventory/*.csv); nothing was imported"
        )));
    }
    let organizations = import_dealers(database_url, &dealers_file, dry_run).await?;
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
    // The overall bar (issue 15 item 3): every byte of every feed, twice
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
    let mut lines = Vec::new();
    let mut failed = Vec::new();
    let mut vehicles = 0usize;
    let mut base = 0u64;
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
        // Three reads of the file, none holding it (issue 11 item 6): its
        // organization, then check, then write.
        let open = || {
            std::fs::File::open(path)
                .and_then(|f| f.metadata().map(|m| (std::io::BufReader::new(f), m.len())))
                .map_err(|e| Error::Io(format!("{name}: cannot read: {e}")))
        };
        let org = match ingest::dap_csv::organization_of(open()?.0) {
            Err(rule) => {
                progress.println(&format!(
                    "{name}: cannot tell the organization: {rule}; nothing was imported from this file"
                ));
                failed.push(name);
                continue;
            }
            Ok(id) => match organizations.iter().find(|o| o.organization_id == id) {
                Some(o) => Some(o.clone()),
                None => store.get_organization(&id).await?,
            },
        };
        let Some(org) = org else {
            progress.println(&format!(
                "{name}: its organization_id names no organization of the bundle's dealers.yaml \
                 or the store; nothing was imported from this file"
            ));
            failed.push(name);
            continue;
        };
        let now = Utc::now();
        let ctx = IngestContext::for_organization(&org, None, now);
        let (input, total) = open()?;
        let check = match check_file(FeedFormat::DapCsv, path, input, total, &ctx, &track) {
            Ok(c) => c,
            Err(Failure::BadInput(report)) => {
                progress.println(&report);
                failed.push(name);
                continue;
            }
            Err(other) => return Err(other),
        };
        let results =
            stream_write(store.as_ref(), path, &check, &ctx, dry_run, now, &track).await?;
        vehicles += check.rooftops.iter().map(|(_, n)| n).sum::<usize>();
        lines.extend(report_lines(&name, &check, &results, dry_run));
    }
    progress.finish();
    store.close().await;
    for line in &lines {
        println!("{line}");
    }
    println!(
        "bundle {shown}{dry}: {ok} of {all} inventory file(s) {verb}, {vehicles} vehicle(s); {bad} file(s) with problems",
        dry = if dry_run {
            " (dry run, nothing written)"
        } else {
            ""
        },
        ok = files.len() - failed.len(),
        all = files.len(),
        verb = if dry_run { "valid" } else { "imported" },
        bad = failed.len(),
    );
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
