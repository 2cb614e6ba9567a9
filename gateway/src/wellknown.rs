//! Discovery documents for an agent that knows only the hostname (issue 16
//! item 4): `/.well-known/dealer-agent.json` and `/llms.txt`, both generated
//! from the catalog so they cannot drift from the manifest.

use std::sync::Arc;

use axum::Router;

use crate::state::AppState;

/// The discovery routes, merged into the app's router.
pub fn router() -> Router<Arc<AppState>> {
    Router::new()
}
