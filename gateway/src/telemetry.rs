//! Logging: JSON lines on stderr through `tracing`. Logs carry ids, codes
//! and timings; never tokens, request bodies or customer data.

use tracing_subscriber::EnvFilter;

/// Install the global subscriber once. `filter` is an EnvFilter directive
/// (`info`, `gateway=debug`, ...). Later calls are no-ops (tests).
pub fn init(filter: &str) {
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_current_span(false)
        .try_init();
}
