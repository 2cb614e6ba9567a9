//! The command line: `serve`, `migrate`, `import dealers|inventory|bundle`,
//! `demo generate`, `token create|list|revoke`, `audit export`,
//! `import programs [--replace]`, `programs list|withdraw`, `preview`,
//! `completions`, `stdio` (MCP over stdin/stdout, issue 15 item 5); and
//! `serve|stdio --config FILE` (issue 15 item 6).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgAction, Args, CommandFactory as _, Parser, Subcommand};

use crate::config::{ConfigFileError, DEFAULT_DATABASE_URL, ServeSettings};
use crate::progress::ProgressMode;
use crate::report::{Position, Problem};
use crate::telemetry::LogFormat;

/// What `serve --help` says about where a setting comes from.
const PRECEDENCE: &str = "Each setting comes from, in this order of precedence: its flag, then \
its environment variable, then the --config file, then its default.";

/// Dealer Agent Gateway: a read-only Dealer Agent Protocol 0.1 gateway over
/// MCP (2026-07-28, plus the 2025-11-25 handshake).
#[derive(Debug, Parser)]
#[command(name = "dealer-gateway", version, about, long_about = None)]
pub struct Cli {
    /// Store URL: sqlite://PATH (embedded default) or postgres://USER@HOST:PORT/DB.
    #[arg(long, env = "DEALER_GATEWAY_DATABASE_URL", default_value = DEFAULT_DATABASE_URL, global = true)]
    pub database_url: String,

    /// Log filter (tracing EnvFilter syntax), e.g. `info` or `gateway=debug`.
    #[arg(
        long,
        env = "DEALER_GATEWAY_LOG",
        default_value = "info",
        global = true
    )]
    pub log: String,

    /// Log line format: text for a person at a terminal, JSON lines for a
    /// log collector; auto picks text when stderr is a terminal.
    #[arg(
        long,
        env = "DEALER_GATEWAY_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Auto,
        global = true
    )]
    pub log_format: LogFormat,

    /// Progress of imports and `demo generate` on stderr: auto draws a bar
    /// on a terminal and prints a plain line every 10 % or 5 seconds
    /// otherwise; lines always prints lines; none prints nothing.
    #[arg(
        long,
        env = "DEALER_GATEWAY_PROGRESS",
        value_enum,
        default_value_t = ProgressMode::Auto,
        global = true
    )]
    pub progress: ProgressMode,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the MCP endpoint (POST /mcp) with /healthz and /readyz.
    #[command(after_help = PRECEDENCE)]
    Serve(Box<ServeSettings>),
    /// Serve the same MCP tools and resources over stdio (newline-delimited
    /// JSON-RPC on stdin/stdout, logs on stderr) for a local MCP client that
    /// starts the gateway itself, e.g. a desktop assistant. Anonymous unless
    /// a token is given. Ends at EOF on stdin. Opens the same store as
    /// `serve` and loads the demo into an empty one; listens on no port.
    #[command(after_help = STDIO_AFTER_HELP)]
    Stdio(Box<StdioSettings>),
    /// Create the store if needed and apply its migrations, then exit.
    Migrate,
    /// Import data files into the store (all or nothing).
    Import {
        #[command(subcommand)]
        what: ImportCommand,
    },
    /// Demo data.
    Demo {
        #[command(subcommand)]
        what: DemoCommand,
    },
    /// Gateway API tokens (docs/tokens-and-audit.md).
    Token {
        #[command(subcommand)]
        what: TokenCommand,
    },
    /// The audit log (docs/tokens-and-audit.md).
    Audit {
        #[command(subcommand)]
        what: AuditCommand,
    },
    /// Incentive programs already imported (docs/pricing.md).
    Programs {
        #[command(subcommand)]
        what: ProgramsCommand,
    },
    /// The rooftop manager's view of one vehicle: the disclosure text
    /// exactly as agents get it, the price components, the completeness
    /// score with what is missing and how to fix it, and the offer
    /// evaluation as a table (docs/pricing.md). The vehicle is chosen by
    /// exactly one of --vin or --stock.
    // Issue 14 item 6: the one-of is a required clap group, so `--help`
    // and the usage line show `<--vin <VIN>|--stock <STOCK>>`.
    #[command(group(
        clap::ArgGroup::new("vehicle")
            .required(true)
            .multiple(false)
            .args(["vin", "stock"])
    ))]
    Preview {
        /// The organization that owns the rooftop.
        #[arg(long)]
        organization: String,
        /// The rooftop that lists the vehicle.
        #[arg(long)]
        rooftop: String,
        /// Select the vehicle by VIN (or give --stock).
        #[arg(long)]
        vin: Option<String>,
        /// Select the vehicle by stock number (or give --vin).
        #[arg(long)]
        stock: Option<String>,
        /// A PII-free eligibility profile (YAML or JSON: payment_mode,
        /// jurisdiction, claims, as_of) to evaluate instead of the default.
        #[arg(long)]
        profile: Option<PathBuf>,
        /// Also print the disclosure document as raw JSON, exactly as
        /// agents receive it, after the summary.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script on stdout, e.g.
    /// `dealer-gateway completions bash > /etc/bash_completion.d/dealer-gateway`.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// What `stdio --help` says about the serve settings it shares.
const STDIO_AFTER_HELP: &str = "The serve settings apply as they do to `serve` (rate limits, \
JWT, --no-demo, --seed-dealers, audit retention, --max-body-bytes as the longest line, \
--request-timeout-seconds), and so does --config FILE (the same keys; `token` is not one). \
Nothing listens: the connection limits are unused, and --listen (or --public-url, \
--resource-url) only names the resource URL that JWT audiences are checked against. The \
client address of every request is 127.0.0.1. A refused token exits with status 2.";

/// Settings of `dealer-gateway stdio`: the grant, then every serve setting.
#[derive(Debug, Clone, Args)]
pub struct StdioSettings {
    /// The explicit grant of this process: a gateway API token (`token
    /// create`) or a JWT, verified like `Authorization: Bearer` on /mcp and
    /// again on every request. Prefer the environment variable, which keeps
    /// the token off the command line. Without it the client is anonymous.
    #[arg(long, env = "DEALER_GATEWAY_STDIO_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    #[command(flatten)]
    pub serve: ServeSettings,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token and print it ONCE: the store keeps only its hash.
    Create {
        /// Who the token is for (the audit subject), e.g. `agent:acme-shopper`.
        #[arg(long)]
        subject: String,
        /// The organization the token grants access to.
        #[arg(long)]
        organization: String,
        /// Comma-separated rooftop ids of the organization.
        #[arg(
            long,
            value_delimiter = ',',
            conflicts_with = "group",
            required_unless_present = "group"
        )]
        rooftops: Vec<String>,
        /// Grant every rooftop of the organization, present and future.
        #[arg(long)]
        group: bool,
        /// Comma-separated scopes, e.g. dealeragent:inventory:read,dealeragent:pricing:read.
        #[arg(long, value_delimiter = ',', required = true)]
        scopes: Vec<String>,
        /// Why the token exists (1 to 128 characters).
        #[arg(long)]
        purpose: String,
        /// Lifetime: a number and d, h, m or s (e.g. 30d, 12h, 90m, 3600s); at most 365d.
        #[arg(long)]
        expires_in: String,
        /// Print `{"token_id", "token", "expires_at"}` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List every token (never a secret or a hash).
    List {
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by its token id (the first revocation time is kept).
    Revoke {
        /// The token id (16 hex characters, as `token list` shows it).
        token_id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProgramsCommand {
    /// Every stored revision of the organization's programs with its status
    /// now: active, scheduled, expired, superseded, withdrawn (with when)
    /// or unusable (with why, as evaluations report it); its name, kind,
    /// amount and validity window.
    List {
        /// The organization whose programs to list.
        #[arg(long)]
        organization: String,
        /// Print a JSON array instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Withdraw a program (every active revision) or one revision of it:
    /// it is never evaluated again (audited; a running gateway stops
    /// offering it within its refresh interval). Refused, withdrawing
    /// nothing, when the remaining programs would no longer validate
    /// together (e.g. another program names it in not_combinable_with).
    Withdraw {
        /// The organization whose program it is.
        #[arg(long)]
        organization: String,
        /// The program id.
        program_id: String,
        /// Only this revision (default: every active revision).
        #[arg(long)]
        revision: Option<u32>,
        /// Check and report what would be withdrawn, but write nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Print audit events as JSON lines, oldest first.
    Export {
        /// Only events at or after this instant (RFC 3339 with an offset,
        /// e.g. 2026-11-29T00:00:00Z).
        #[arg(long)]
        since: String,
    },
}

/// The inventory feed formats (docs/inventory-feeds.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FeedFormatArg {
    /// DAP Inventory CSV 0.1.
    DapCsv,
    /// A Dealer.com-style CSV export (header aliases, formatted prices).
    DealerComCsv,
    /// A JSON array of DAP vehicle records.
    Json,
}

impl From<FeedFormatArg> for crate::ingest::FeedFormat {
    fn from(f: FeedFormatArg) -> Self {
        match f {
            FeedFormatArg::DapCsv => Self::DapCsv,
            FeedFormatArg::DealerComCsv => Self::DealerComCsv,
            FeedFormatArg::Json => Self::Json,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Import a dealers file (YAML or JSON; see docs/dealers-file.md).
    /// Organizations named in the file are created or updated in place.
    Dealers {
        /// The file to import (.yaml, .yml or .json).
        file: PathBuf,
        /// Validate and report what would change, but write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Import one inventory file of one organization (see
    /// docs/inventory-feeds.md). Each rooftop in the file gets a new
    /// inventory snapshot; a file with any problem writes nothing.
    Inventory {
        /// The file to import (.csv or .json).
        file: PathBuf,
        /// The organization whose inventory this is.
        #[arg(long)]
        organization: String,
        /// Only this rooftop: rows naming another rooftop are errors. Supplies
        /// the rooftop to formats without a rooftop column (dealer-com-csv).
        #[arg(long)]
        rooftop: Option<String>,
        /// The file format. Default: by extension (.json is json, .csv is
        /// dap-csv); a Dealer.com export must be named explicitly.
        #[arg(long, value_enum)]
        format: Option<FeedFormatArg>,
        /// Validate and report what would change, but write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print the whole plan or result as one JSON document (every
        /// vehicle added, changed and removed; docs/inventory-feeds.md)
        /// instead of the text summary.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        guard: RemovalGuardArgs,
    },
    /// Import the incentive programs file of one organization (YAML or
    /// JSON; schemas/programs.schema.json, docs/pricing.md). All or
    /// nothing: every problem is reported at once, including conflicts with
    /// the organization's other stored programs. Programs are versioned by
    /// (program_id, revision); every revision is kept, and which one applies
    /// is decided by its validity window. Audited.
    Programs {
        /// The file to import (.yaml, .yml or .json).
        file: PathBuf,
        /// The organization whose programs these are.
        #[arg(long)]
        organization: String,
        /// The file is the organization's complete program set: every stored
        /// revision not in it is withdrawn.
        #[arg(long)]
        replace: bool,
        /// Validate and report what would change, but write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print the added, unchanged and withdrawn revisions as one JSON
        /// document instead of the text summary.
        #[arg(long)]
        json: bool,
    },
    /// Import a bundle directory: DIR/dealers.yaml, then every
    /// DIR/inventory/*.csv (DAP Inventory CSV; the organization is the one
    /// its rows name). Each file is all or nothing; one summary at the end.
    Bundle {
        /// The bundle directory.
        dir: PathBuf,
        /// Validate and report what would change, but write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print the whole plan or result as one JSON document (every
        /// vehicle added, changed and removed, per file) instead of the text
        /// summary.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        guard: RemovalGuardArgs,
    },
}

/// The removal guard of inventory imports (docs/inventory-feeds.md "The
/// removal guard"): a truncated feed must not unpublish a rooftop.
#[derive(Debug, Clone, Args)]
pub struct RemovalGuardArgs {
    /// Refuse the whole import (exit 2, nothing written) when it would
    /// remove more than this percentage of the current vehicles of a
    /// rooftop that has 5 or more; 100 never refuses.
    #[arg(
        long,
        env = "DEALER_GATEWAY_MAX_REMOVAL_PERCENT",
        default_value_t = crate::store::snapshot_write::RemovalGuard::DEFAULT_MAX_PERCENT,
        value_parser = clap::value_parser!(u8).range(0..=100),
        value_name = "PERCENT"
    )]
    pub max_removal_percent: u8,
    /// Turn the removal guard off for this import: remove every vehicle
    /// the file no longer lists, however many.
    #[arg(long)]
    pub allow_removals: bool,
}

#[derive(Debug, Subcommand)]
pub enum DemoCommand {
    /// Generate a fictional, reproducible demo bundle (dealers.yaml and
    /// inventory/*.csv) for `import bundle`.
    Generate {
        /// Vehicles in total, spread over the rooftops.
        #[arg(long, default_value_t = 500)]
        vehicles: usize,
        /// Rooftops to generate.
        #[arg(long, default_value_t = 5)]
        rooftops: usize,
        /// Random seed: the same seed gives the same files.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Output directory (created if missing).
        #[arg(long)]
        out: PathBuf,
    },
}

/// The completion script of `shell` for this command line.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "dealer-gateway", &mut out);
    out
}

/// Global flags that are settings of a running server too, so a config
/// file may set them (`progress` concerns only the one-shot commands).
const GLOBAL_SERVE_KEYS: [&str; 3] = ["database_url", "log", "log_format"];

/// `serve --config FILE` (issue 15 item 6): parse `args` (the process's
/// command line) again with the file's settings layered under the flags
/// and environment variables. `Ok(None)` when `args` is not a `serve` (or
/// `stdio`, which shares the serve settings) with `--config`.
///
/// The keys are derived from the `serve` flags themselves (their ids), so
/// every setting is configurable and there is no second list to keep in
/// step. A file is checked whole before anything is applied: each unknown
/// key and each bad value is reported at its line and column, by key, with
/// what is expected and the closest key or value when it looks misspelt
/// (docs/operations.md "Configuration file"), and then nothing of the file
/// is used.
///
/// # Errors
/// The file is unreadable, not TOML, or has unknown keys or bad values.
pub fn with_config_file(args: &[OsString]) -> Result<Option<Cli>, ConfigFileError> {
    let command = Cli::command();
    let matches = command
        .clone()
        .try_get_matches_from(args)
        .map_err(|e| ConfigFileError::CommandLine(e.to_string()))?;
    // `stdio` takes the serve settings too (flattened), so the same file
    // configures both (issue 15 item 5).
    let Some((subcommand, serve_matches)) = ["serve", "stdio"]
        .into_iter()
        .find_map(|name| matches.subcommand_matches(name).map(|m| (name, m)))
    else {
        return Ok(None);
    };
    let Some(path) = serve_matches.get_one::<PathBuf>("config") else {
        return Ok(None);
    };
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigFileError::Unreadable {
        file: file.clone(),
        reason: e.to_string(),
    })?;
    let table: toml::Table =
        text.parse()
            .map_err(|e: toml::de::Error| ConfigFileError::Syntax {
                file: file.clone(),
                reason: e.to_string().trim_end().to_owned(),
            })?;
    let Some(serve_command) = command.find_subcommand(subcommand) else {
        return Err(ConfigFileError::CommandLine(format!(
            "the command line has no {subcommand} command"
        )));
    };
    // Where each key and value is in the file, for the report.
    let spans = config_spans(&text);
    let at = |key: &str, value: bool| {
        spans
            .iter()
            .find(|s| s.key == key)
            .map(|s| if value { s.value } else { s.key_at })
    };
    let known: Vec<String> = GLOBAL_SERVE_KEYS
        .iter()
        .map(|k| (*k).to_owned())
        .chain(
            serve_command
                .get_arguments()
                .filter(|a| a.get_long().is_some() && a.get_id() != "config")
                .map(|a| a.get_id().to_string()),
        )
        .collect();
    let mut problems = Vec::new();
    let mut extra: Vec<OsString> = Vec::new();
    for (key, value) in &table {
        let global = GLOBAL_SERVE_KEYS.contains(&key.as_str());
        let arg = if global {
            command.get_arguments().find(|a| a.get_id() == key.as_str())
        } else if key == "config" || key == "token" {
            // `token` (stdio's grant) is not a serve setting: a file shared
            // by `serve` and `stdio` holds serve settings only.
            None
        } else {
            serve_command
                .get_arguments()
                .find(|a| a.get_id() == key.as_str() && a.get_long().is_some())
        };
        let pointer = format!("/{}", key.replace('~', "~0").replace('/', "~1"));
        let (Some(arg), Some(long)) = (arg, arg.and_then(clap::Arg::get_long)) else {
            let hint = crate::report::suggest::closest(key, &known)
                .map(|k| format!("; did you mean `{k}`?"))
                .unwrap_or_default();
            let mut problem = Problem::new(
                pointer,
                "unknown_key",
                format!(
                    "unknown key `{key}`: not a serve setting{hint} (the keys are the flags of \
                     `dealer-gateway serve --help` without `--` and with `_` for `-`, \
                     e.g. request_timeout_seconds)"
                ),
            );
            problem.position = at(key, false);
            problems.push(problem);
            continue;
        };
        let values = match config_values(arg, key, value) {
            Ok(values) => values,
            Err(explanation) => {
                let mut problem = Problem::new(pointer, "value", explanation);
                problem.position = at(key, true);
                problems.push(problem);
                continue;
            }
        };
        // Flags and environment variables win over the file.
        let source = if global {
            matches.value_source(key)
        } else {
            serve_matches.value_source(key)
        };
        if matches!(
            source,
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        for v in values {
            extra.push(match v {
                ConfigValue::Flag => format!("--{long}").into(),
                ConfigValue::Value(v) => format!("--{long}={v}").into(),
            });
        }
    }
    if !problems.is_empty() {
        return Err(ConfigFileError::Invalid {
            file,
            problems: crate::report::sorted(problems),
        });
    }
    let layered: Vec<OsString> = args.iter().cloned().chain(extra).collect();
    // Every value was checked on its own; what remains are relations
    // between settings (e.g. jwt_issuer requires jwt_jwks_file), reported
    // at the first key of the file the message names.
    Cli::try_parse_from(layered).map(Some).map_err(|e| {
        let mut reason = clap_reason(&e);
        let flags: Vec<&str> = reason
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|word| word.starts_with("--") && word.len() > 2)
            .collect();
        let named = table.keys().find(|key| {
            let flag = format!("--{}", key.replace('_', "-"));
            flags.contains(&flag.as_str())
        });
        // The message names flags; the file has keys.
        let keys: Vec<String> = flags
            .iter()
            .map(|f| f.trim_start_matches("--").replace('-', "_"))
            .collect();
        if !keys.is_empty() {
            reason.push_str(&format!(" (as keys of this file: {})", keys.join(", ")));
        }
        let mut problem = Problem::new(
            named.map(|k| format!("/{k}")).unwrap_or_default(),
            "settings",
            reason,
        );
        problem.position = named.and_then(|k| at(k, false));
        ConfigFileError::Invalid {
            file,
            problems: vec![problem],
        }
    })
}

/// Where a top-level key of the config file and its value start.
struct KeySpan {
    key: String,
    key_at: Position,
    value: Position,
}

/// The position of every top-level key and value of a TOML text (the text
/// already parsed once, so a parse failure here only means no positions).
fn config_spans(text: &str) -> Vec<KeySpan> {
    let Ok(table) = toml::de::DeTable::parse(text) else {
        return Vec::new();
    };
    table
        .get_ref()
        .iter()
        .map(|(key, value)| KeySpan {
            key: key.get_ref().to_string(),
            key_at: crate::report::locate::at_offset(text, key.span().start),
            value: crate::report::locate::at_offset(text, value.span().start),
        })
        .collect()
}

/// One value of a config key, as the flag would get it.
enum ConfigValue {
    /// A switch that is on (`no_demo = true`).
    Flag,
    Value(String),
}

/// The flag values of `key = value`, each checked by the flag's own value
/// parser (the same types and ranges as on the command line).
fn config_values(
    arg: &clap::Arg,
    key: &str,
    value: &toml::Value,
) -> Result<Vec<ConfigValue>, String> {
    if matches!(arg.get_action(), ArgAction::SetTrue) {
        return match value {
            toml::Value::Boolean(true) => Ok(vec![ConfigValue::Flag]),
            toml::Value::Boolean(false) => Ok(Vec::new()),
            other => Err(format!("{key} = {other}: expected true or false")),
        };
    }
    let repeated = matches!(arg.get_action(), ArgAction::Append);
    let items: Vec<&toml::Value> = match value {
        toml::Value::Array(items) if repeated => items.iter().collect(),
        toml::Value::Array(_) => {
            return Err(format!(
                "{key} = {value}: takes one value, not a list; expected {}",
                expected(arg)
            ));
        }
        one => vec![one],
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let text = match item {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            other => {
                return Err(format!("{key} = {other}: expected {}", expected(arg)));
            }
        };
        // The flag alone, without its relations to other flags or its
        // environment variable: only the value is judged here.
        let probe = clap::Command::new("config").no_binary_name(true).arg(
            clap::Arg::new("value")
                .long("value")
                .action(ArgAction::Set)
                .value_parser(arg.get_value_parser().clone()),
        );
        if let Err(e) = probe.try_get_matches_from([format!("--value={text}")]) {
            let possible: Vec<String> = arg
                .get_value_parser()
                .possible_values()
                .map(|values| values.map(|v| v.get_name().to_owned()).collect())
                .unwrap_or_default();
            return Err(format!(
                "{key} = {item}: {}{}; expected {}",
                clap_reason(&e),
                crate::report::suggest::hint(&text, &possible),
                expected(arg)
            ));
        }
        out.push(ConfigValue::Value(text));
    }
    Ok(out)
}

/// What a flag accepts, in words, from its value parser.
fn expected(arg: &clap::Arg) -> String {
    use std::any::TypeId;
    let parser = arg.get_value_parser();
    if let Some(values) = parser.possible_values() {
        let names: Vec<String> = values.map(|v| v.get_name().to_owned()).collect();
        return format!("one of {}", names.join(", "));
    }
    let ty = parser.type_id();
    let list = if matches!(arg.get_action(), ArgAction::Append) {
        " (or a list of them)"
    } else {
        ""
    };
    let what = if ty == TypeId::of::<std::net::SocketAddr>() {
        "a socket address as a string, e.g. \"127.0.0.1:8080\""
    } else if ty == TypeId::of::<u64>() || ty == TypeId::of::<u32>() || ty == TypeId::of::<usize>()
    {
        "a whole number"
    } else if ty == TypeId::of::<PathBuf>() {
        "a file path as a string"
    } else {
        "a string"
    };
    format!("{what}{list}")
}

/// The reason inside a clap error, without its usage and help lines.
fn clap_reason(e: &clap::Error) -> String {
    if e.kind() == clap::error::ErrorKind::InvalidValue {
        // The probe's flag name would only confuse; `expected` lists the
        // possible values.
        return "not a possible value".to_owned();
    }
    if let Some(source) = std::error::Error::source(e) {
        return source.to_string();
    }
    // The message runs until the usage block.
    let text = e.to_string();
    text.lines()
        .take_while(|l| !l.starts_with("Usage:"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .trim_start_matches("error: ")
        .to_owned()
}
