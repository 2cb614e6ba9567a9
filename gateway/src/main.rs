//! `dealer-gateway`: thin entry point; everything lives in the library.

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = gateway::cli::Cli::parse();
    gateway::telemetry::init(&cli.log);
    gateway::cli::run(cli).await
}
