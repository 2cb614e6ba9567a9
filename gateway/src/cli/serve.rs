//! `serve` (the HTTP endpoint), `stdio` (MCP over stdin/stdout) and
//! `migrate`: the commands that open the store for the gateway itself.

use super::{Failure, LOG_TARGET, StdioSettings};
use crate::{Error, app, store};

/// `serve`: listen until a shutdown signal, then close the store.
pub(super) async fn serve(
    settings: crate::config::ServeSettings,
    database_url: &str,
) -> Result<(), Error> {
    let (state, listener) = app::prepare(settings, database_url).await?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::Io(e.to_string()))?;
    println!("Dealer Agent Gateway listening on http://{addr}/mcp");
    println!(
        "Try: curl -s http://{addr}/mcp -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: server/discover' -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{{\"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{{}}}}}}}}'"
    );
    tracing::info!(target: LOG_TARGET, listen = %addr, store = %store_kind(database_url), "serving");
    let store = state.store.clone();
    app::serve(listener, state, app::shutdown_signal()).await?;
    // SQLite checkpoints and removes its write-ahead log as the last
    // connection closes (`Store::close`).
    store.close().await;
    tracing::info!(target: LOG_TARGET, "stopped");
    Ok(())
}

/// `dealer-gateway stdio`: stdout carries MCP messages
/// only, so nothing here prints to it; everything else goes to stderr.
pub(super) async fn stdio(settings: StdioSettings, database_url: &str) -> Result<(), Failure> {
    use crate::mcp::stdio::{self, Credential, StdioError};
    let StdioSettings { token, serve } = settings;
    let state = stdio::prepare(serve, database_url).await?;
    let credential = match Credential::establish(&state, token.as_deref()).await {
        Ok(c) => c,
        // A refused grant is input to fix (exit 2), never an anonymous start.
        Err(e @ StdioError::TokenRefused { .. }) => return Err(Failure::BadInput(e.to_string())),
        Err(e) => return Err(Failure::Gateway(Error::Io(e.to_string()))),
    };
    tracing::info!(target: LOG_TARGET, store = %store_kind(database_url), "serving MCP on stdio");
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
            tracing::info!(target: LOG_TARGET, "stdio: the client closed the connection; stopped");
            Ok(())
        }
        Ok(stdio::Ended::Shutdown) => {
            // tokio reads stdin with a blocking read on a runtime thread
            // that cannot be cancelled, and the runtime waits for it when
            // it is dropped: exit now rather than wait for input or EOF.
            tracing::info!(target: LOG_TARGET, "stdio: stopped by a signal");
            std::process::exit(0);
        }
        Err(e) => Err(Failure::Gateway(Error::Io(e.to_string()))),
    }
}

pub(super) async fn migrate(database_url: &str) -> Result<(), Error> {
    store::open(database_url).await?;
    println!("store is migrated ({})", store_kind(database_url));
    Ok(())
}

/// The store kind a database URL names, for the log and `migrate`'s line.
fn store_kind(url: &str) -> &'static str {
    if url.starts_with("postgres") {
        "postgres"
    } else {
        "sqlite"
    }
}
