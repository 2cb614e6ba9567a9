//! The command line: its arguments ([`args`]), `serve --config FILE`
//! ([`config_file`]), and one file per command family, each running its
//! command to an exit code through [`run`]:
//!
//! - [`serve`]: `serve`, `stdio` (MCP over stdin/stdout) and `migrate`;
//! - [`import`]: `import dealers|inventory|bundle` (`import programs` is
//!   the programs family's);
//! - [`programs`]: `import programs`, `programs list|withdraw`;
//! - [`tokens`]: `token create|list|revoke`;
//! - [`audit`]: `audit export`;
//! - [`demo`]: `demo generate`;
//! - [`lint`]: `lint rooftop|feed` (docs/lint.md);
//! - `preview` and `completions`, one call each, here.

use std::process::ExitCode;

use chrono::{DateTime, Utc};

use crate::Error;
use crate::ingest::IngestError;

mod args;
mod audit;
mod config_file;
mod demo;
mod import;
mod lint;
mod programs;
mod registry;
mod serve;
mod shards;
mod tokens;

pub use args::{
    AuditCommand, Cli, Command, DemoCommand, FeedFormatArg, ImportCommand, LintArgs, LintCommand,
    ProgramsCommand, RegistryCommand, RemovalGuardArgs, ShardsArgs, StdioSettings, TokenCommand,
    completions,
};
pub use config_file::with_config_file;

/// Exit code for input the user must fix (a bad file, an unknown id).
const EXIT_INVALID_INPUT: u8 = 2;

/// The log target of every command's own log lines: the module the
/// commands lived in before they had a file each, kept so that operators'
/// filters (`log = "warn,gateway::run=info"`) and log searches still match.
const LOG_TARGET: &str = "gateway::run";

/// How a command fails: bad input (exit 2, the report is printed as is) or
/// any other failure (exit 1).
#[derive(Debug)]
enum Failure {
    Gateway(Error),
    BadInput(String),
    /// The command ran and reported findings on stdout (a `lint` whose
    /// confirmed rule fails): exit 1, nothing more on stderr.
    Findings,
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

/// Run one command line to its exit code: 0, 2 for input the user must
/// fix (the report on stderr), 1 for any other failure (`error: ...`).
pub async fn run(cli: Cli) -> ExitCode {
    // `serve --config FILE`, and `stdio --config FILE` (the same serve
    // settings): the file's settings under the flags and environment
    // variables, or no start at all.
    let config_given = matches!(&cli.command, Command::Serve(s) if s.config.is_some())
        || matches!(&cli.command, Command::Stdio(s) if s.serve.config.is_some());
    let cli = if config_given {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        match with_config_file(&args) {
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
        Command::Serve(settings) => serve::serve(*settings, db).await.map_err(Failure::from),
        Command::Stdio(settings) => serve::stdio(*settings, db).await,
        Command::Migrate => serve::migrate(db).await.map_err(Failure::from),
        Command::Completions { shell } => {
            use std::io::Write as _;
            let script = completions(shell);
            let mut out = std::io::stdout().lock();
            match out.write_all(&script).and_then(|()| out.flush()) {
                Ok(()) => Ok(()),
                Err(e) => stdout_closed(e),
            }
        }
        Command::Import { what } => import::run(db, what, progress).await,
        Command::Demo { what } => demo::run(what, progress),
        Command::Token { what } => tokens::run(db, what).await,
        Command::Audit { what } => audit::run(db, what).await,
        Command::Programs { what } => programs::run(db, what).await,
        Command::Shards(args) => shards::run(db, *args).await,
        Command::Lint { what } => lint::run(db, what).await,
        Command::Registry { what } => registry::run(what),
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
        Err(Failure::Findings) => ExitCode::FAILURE,
    }
}

/// A failure in one line, for the `reason` of a `failed` document.
fn failure_text(failure: &Failure) -> String {
    match failure {
        Failure::Gateway(e) => e.to_string(),
        Failure::BadInput(report) => report.lines().next().unwrap_or_default().to_owned(),
        Failure::Findings => "findings reported".to_owned(),
    }
}

/// A closed stdout (`audit export | head`) ends the output quietly.
fn stdout_closed(e: std::io::Error) -> Result<(), Failure> {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Ok(())
    } else {
        Err(Error::Io(format!("cannot write to stdout: {e}")).into())
    }
}

/// An instant as the commands print it (RFC 3339, UTC, `Z`).
fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}
