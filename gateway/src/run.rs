//! Running one CLI command to an exit code.

use std::process::ExitCode;

use chrono::Utc;

use crate::catalog::Catalog;
use crate::cli::{Cli, Command, ImportCommand};
use crate::{Error, app, dealers, store};

/// Exit code for input the user must fix (a bad file).
const EXIT_INVALID_INPUT: u8 = 2;

pub async fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Serve(settings) => serve(*settings, &cli.database_url).await,
        Command::Migrate => migrate(&cli.database_url).await,
        Command::Import { what } => match what {
            ImportCommand::Dealers { file, dry_run } => {
                import_dealers(&cli.database_url, &file, dry_run).await
            }
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::DealersFile(e)) => {
            eprint!("{e}");
            ExitCode::from(EXIT_INVALID_INPUT)
        }
        Err(e) => {
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
    app::serve(listener, state, app::shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(())
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
    file: &std::path::Path,
    dry_run: bool,
) -> Result<(), Error> {
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
    Ok(())
}
