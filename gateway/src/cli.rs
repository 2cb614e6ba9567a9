//! The command line: `serve`, `migrate`, `import dealers`.

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
}
