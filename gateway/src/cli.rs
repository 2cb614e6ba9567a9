//! The command line: `serve`, `migrate`, `import dealers|inventory|bundle`,
//! `demo generate`, `token create|list|revoke`, `audit export`,
//! `import programs [--replace]`, `programs withdraw`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::config::{DEFAULT_DATABASE_URL, ServeSettings};

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

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the MCP endpoint (POST /mcp) with /healthz and /readyz.
    Serve(Box<ServeSettings>),
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
    /// The rooftop manager's view of one vehicle: the disclosure exactly as
    /// agents get it, the completeness score with what is missing and how
    /// to fix it, and the offer evaluation as a table (docs/pricing.md).
    Preview {
        /// The organization that owns the rooftop.
        #[arg(long)]
        organization: String,
        /// The rooftop that lists the vehicle.
        #[arg(long)]
        rooftop: String,
        /// Select the vehicle by VIN.
        #[arg(long, conflicts_with = "stock", required_unless_present = "stock")]
        vin: Option<String>,
        /// Select the vehicle by stock number.
        #[arg(long)]
        stock: Option<String>,
        /// A PII-free eligibility profile (YAML or JSON: payment_mode,
        /// jurisdiction, claims, as_of) to evaluate instead of the default.
        #[arg(long)]
        profile: Option<PathBuf>,
    },
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
    },
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
