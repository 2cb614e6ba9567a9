//! `dealer-gateway-conformance-fixture`: the gateway built with the `conformance-fixture`
//! feature, which mounts the official MCP conformance suite's fixture tools, resources and
//! prompts on the gateway's own MCP stack (docs/conformance.md, "The MCP conformance
//! fixture"). Same CLI as `dealer-gateway`; a test tool, never shipped.

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = gateway::cli::Cli::parse();
    gateway::fixture::install();
    gateway::telemetry::init(&cli.log);
    gateway::cli::run(cli).await
}
