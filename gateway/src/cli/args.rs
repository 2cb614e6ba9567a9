//! The arguments of every command, as clap parses them: `serve`, `stdio`
//! (MCP over stdin/stdout), `migrate`, `import dealers|inventory|bundle|programs`,
//! `demo generate`, `token create|list|revoke`, `audit export`,
//! `programs list|withdraw`, `lint rooftop|feed`, `preview` and `completions`.

use std::path::PathBuf;

use clap::{Args, CommandFactory as _, Parser, Subcommand};

use crate::config::{DEFAULT_DATABASE_URL, ServeSettings};
use crate::progress::ProgressMode;
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
    // The one-of is a required clap group, so `--help`
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
    /// The disclosure lint (docs/lint.md): check what a rooftop publishes,
    /// or an inventory feed before it is imported, against the
    /// advertised-price rules where the buyer is. Exit 1 when any confirmed
    /// rule fails, 0 otherwise, 2 on bad input. A check of published data,
    /// not legal advice.
    Lint {
        #[command(subcommand)]
        what: LintCommand,
    },
    /// Which shard serves each organization of the store
    /// (docs/operations.md "Shards"), from the same --shards and
    /// --shard-pins as the replicas (or their --config file): a table, or
    /// with --nginx the `map` blocks that route /mcp by
    /// Mcp-Param-Organization and /aap/{organization_id}/ by path.
    Shards(Box<ShardsArgs>),
    /// Publishing metadata for the MCP Registry (docs/mcp.md "Server
    /// Cards and server.json").
    Registry {
        #[command(subcommand)]
        what: RegistryCommand,
    },
    /// Print a shell completion script on stdout, e.g.
    /// `dealer-gateway completions bash > /etc/bash_completion.d/dealer-gateway`.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// `dealer-gateway shards`.
#[derive(Debug, Args)]
pub struct ShardsArgs {
    /// A serve config file whose `shards` and `shard_pins` to use (flags
    /// and environment variables win, as for `serve`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub sharding: crate::shards::ShardSettings,
    /// Also assign these organizations (comma separated), e.g. ones not
    /// imported yet.
    #[arg(
        long = "organization",
        value_delimiter = ',',
        value_name = "ORGANIZATION_ID"
    )]
    pub organizations: Vec<String>,
    /// Print nginx `map` blocks instead of the table.
    #[arg(long)]
    pub nginx: bool,
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
pub enum RegistryCommand {
    /// Print the MCP Registry `server.json` (schema 2025-12-11) of this
    /// gateway published at --public-url, generated from the catalog: one
    /// streamable-HTTP remote (`/mcp`), the tools and revisions under the
    /// publisher-provided `_meta`. Reads no store.
    ServerJson {
        /// The public base URL (`https://host[:port]`; a trailing `/mcp`
        /// is accepted).
        #[arg(long, value_name = "URL")]
        public_url: String,
        /// The registry name (`namespace/server`, e.g.
        /// `com.example/dealer-gateway`); by default the URL's host
        /// reversed, then `/dealer-agent-gateway`.
        #[arg(long)]
        name: Option<String>,
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

/// What every `lint` command asks besides its subject.
#[derive(Debug, Clone, Args)]
pub struct LintArgs {
    /// The organization that owns the rooftop.
    #[arg(long)]
    pub organization: String,
    /// The rooftop whose settings (charges, classes, VAT) apply.
    #[arg(long)]
    pub rooftop: String,
    /// The buyer's jurisdiction, an ISO 3166 code such as US-CA, CA-ON, DE
    /// or GB (default: the rooftop's own).
    #[arg(long, value_name = "CC[-SUB]")]
    pub jurisdiction: Option<String>,
    /// Print every vehicle's report as one JSON document instead of the
    /// summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum LintCommand {
    /// Lint the rooftop's newest imported inventory snapshot, each vehicle's
    /// disclosure as the disclosure tool builds it.
    Rooftop {
        #[command(flatten)]
        args: LintArgs,
    },
    /// Lint an inventory feed BEFORE it is imported: parsed and checked by
    /// the import's own code, linted with the rooftop's stored settings,
    /// nothing written. A feed with import problems is reported with them
    /// (exit 2).
    Feed {
        /// The feed (.csv or .json).
        file: PathBuf,
        #[command(flatten)]
        args: LintArgs,
        /// The feed's format, when its file name does not say.
        #[arg(long, value_enum)]
        format: Option<FeedFormatArg>,
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
