//! Following the store's change notifications (docs/operations.md
//! "Replicas": changes reach every replica on PostgreSQL within one second).
//!
//! Every writer of what readers see (a dealers import, an inventory
//! snapshot, a programs import or withdrawal, a token revocation) notifies
//! inside its own transaction (`store::StoreChange`). One task per replica
//! receives them and marks the matching cache stale, then reloads the
//! directory and the inventory itself, so the next request is not the one
//! that pays for the reload. A lost listening connection is reported as
//! `Resync`: everything is marked stale once. The polling intervals stay as
//! the fallback (a notification can only make a reload earlier), and are the
//! only mechanism on SQLite, whose store offers no feed.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::AppState;
use crate::store::StoreChange;

/// How often the follower checks that its gateway still runs while no
/// change arrives (it then ends, and with it the listening connection).
const ALIVE_CHECK: Duration = Duration::from_secs(5);

/// Start following `state.store`'s changes; `None` when the store has no
/// feed (SQLite). The task ends when the state is dropped.
pub fn spawn(state: &Arc<AppState>) -> Option<tokio::task::JoinHandle<()>> {
    let changes = state.store.subscribe_changes()?;
    let state = Arc::downgrade(state);
    Some(tokio::spawn(follow(state, changes)))
}

async fn follow(state: Weak<AppState>, mut changes: tokio::sync::mpsc::Receiver<StoreChange>) {
    let mut alive = tokio::time::interval(ALIVE_CHECK);
    alive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let first = tokio::select! {
            change = changes.recv() => match change {
                Some(change) => change,
                None => return,
            },
            _ = alive.tick() => {
                if state.strong_count() == 0 {
                    return;
                }
                continue;
            }
        };
        // Whatever queued meanwhile is applied in one go: a burst of
        // snapshots (a bundle import) costs one reload, not one per rooftop.
        let mut batch = vec![first];
        while let Ok(more) = changes.try_recv() {
            batch.push(more);
        }
        let Some(state) = state.upgrade() else {
            return;
        };
        apply(&state, &batch).await;
    }
}

/// What a batch of changes makes stale.
#[derive(Debug, Default, PartialEq, Eq)]
struct Stale {
    directory: bool,
    inventory: bool,
    programs: bool,
}

fn stale_of(batch: &[StoreChange]) -> Stale {
    let mut stale = Stale::default();
    for change in batch {
        match change {
            // Rooftop settings carry each rooftop's inventory SLA, which the
            // indexes hold.
            StoreChange::Dealers => {
                stale.directory = true;
                stale.inventory = true;
            }
            StoreChange::Inventory { .. } => stale.inventory = true,
            StoreChange::Programs { .. } => stale.programs = true,
            // Tokens are read from the store on every request
            // (auth::api_token::verify): a revocation is refused by the
            // very next request on any replica; nothing is cached to drop.
            StoreChange::TokenRevoked => {}
            // Read from the store and learned one by one (`apply`); no cache
            // is stale.
            StoreChange::Availability { .. } => {}
            StoreChange::Resync => {
                stale.directory = true;
                stale.inventory = true;
                stale.programs = true;
            }
        }
    }
    stale
}

async fn apply(state: &AppState, batch: &[StoreChange]) {
    for change in batch {
        metrics::counter!("dealer_gateway_change_notifications_total", "kind" => change.kind())
            .increment(1);
        tracing::debug!(change.kind = change.kind(), "store change received");
    }
    // Open subscription streams re-verify their credentials
    // (docs/mcp.md "Subscriptions": a revoked token's stream ends).
    if batch
        .iter()
        .any(|c| matches!(c, StoreChange::TokenRevoked | StoreChange::Resync))
    {
        state.watch.revoked();
    }
    // Another replica's live availability check: learned here too, so this
    // replica answers with it and tells its own subscribers
    // (`AvailabilityService::learn`).
    for change in batch {
        if let StoreChange::Availability {
            rooftop_id,
            vehicle_id,
            ..
        } = change
        {
            match state
                .store
                .latest_availability(rooftop_id, vehicle_id)
                .await
            {
                Ok(Some(observation)) => state.availability.learn(observation),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "reading another replica's availability observation failed");
                }
            }
        }
    }
    let stale = stale_of(batch);
    if stale.programs {
        state.offers.mark_stale();
    }
    if stale.directory {
        state.directory.mark_stale();
    }
    if stale.inventory {
        state.inventory.mark_stale();
    }
    if stale.directory || stale.inventory {
        // Reload now, in this task rather than in a request's background
        // reload (readers never wait for either; docs/inventory.md
        // "Snapshots"). A failure here is not final: the next request
        // starts another reload.
        let reloaded = async {
            let directory = state.directory.reload().await?;
            state.inventory.reload(&directory).await?;
            Ok::<(), crate::store::StoreError>(())
        };
        if let Err(e) = reloaded.await {
            tracing::warn!(error = %e, "reloading after a store change failed; the next request retries");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_change_marks_what_it_changes() {
        let org = || "org.a".to_owned();
        assert_eq!(
            stale_of(&[StoreChange::Dealers]),
            Stale {
                directory: true,
                inventory: true,
                programs: false
            }
        );
        assert_eq!(
            stale_of(&[StoreChange::Inventory {
                organization_id: org()
            }]),
            Stale {
                directory: false,
                inventory: true,
                programs: false
            }
        );
        assert_eq!(
            stale_of(&[StoreChange::Programs {
                organization_id: org()
            }]),
            Stale {
                directory: false,
                inventory: false,
                programs: true
            }
        );
        assert_eq!(stale_of(&[StoreChange::TokenRevoked]), Stale::default());
        assert_eq!(
            stale_of(&[StoreChange::Availability {
                organization_id: org(),
                rooftop_id: "roof.b".into(),
                vehicle_id: "veh.c".into()
            }]),
            Stale::default()
        );
        assert_eq!(
            stale_of(&[StoreChange::TokenRevoked, StoreChange::Resync]),
            Stale {
                directory: true,
                inventory: true,
                programs: true
            }
        );
    }
}
