//! Start-up shared by `serve` (`app::prepare`, which binds its listener
//! between the two steps) and `stdio` (`mcp::stdio::prepare`, which binds
//! nothing): [`open`] checks the claim, opens the store, seeds an empty one
//! and prunes the audit log; [`state`] builds the [`AppState`] and indexes
//! the inventory before the first request.

use std::net::SocketAddr;
use std::sync::Arc;

use chrono::Utc;

use super::AppState;
use crate::catalog::Catalog;
use crate::config::ServeSettings;
use crate::dealers;
use crate::demo::DEMO_DEALERS;
use crate::store::Store;

/// What [`open`] prepared.
pub struct Opened {
    catalog: Catalog,
    claim: crate::claim::PublishedClaim,
    store: Arc<dyn Store>,
    /// `--index-cache` for this store (docs/operations.md "Index images").
    index_cache: Option<std::path::PathBuf>,
}

/// The catalog, the configured conformance claim (checked before the store
/// is touched) and the store, seeded when empty and with its audit log
/// pruned.
///
/// # Errors
/// The catalog, the claim, the store or the seed failed.
pub async fn open(settings: &ServeSettings, database_url: &str) -> Result<Opened, crate::Error> {
    // Sharding settings that do not describe one assignment stop the
    // start-up (docs/operations.md "Shards").
    if let Some(filter) = settings
        .sharding
        .filter()
        .map_err(|e| crate::Error::Io(format!("sharding: {e}")))?
    {
        tracing::info!(shard = %filter.shard, shards = %filter.map.shards().join(","), "serving one shard's organizations");
    }
    let catalog = Catalog::load()?;
    // Checked before the store is touched: a claim that does not describe
    // this build stops the start-up with its reason.
    let claim = match &settings.conformance_claim {
        Some(path) => crate::claim::load(path, &catalog, chrono::Utc::now())
            .map_err(|e| crate::Error::Io(e.to_string()))?,
        None => crate::claim::PublishedClaim::none(),
    };
    if let crate::claim::PublishedClaim::Configured { expires_at, .. } = &claim {
        tracing::info!(claim.expires_at = %expires_at, "publishing the configured conformance claim");
    }
    let store = crate::store::open(database_url).await?;
    if let Some(seeded) = seed_if_empty(settings, &catalog, store.as_ref()).await? {
        tracing::info!(seed = %seeded, "store was empty; loaded dealers");
    }
    // The audit log's retention and size bound hold before the first
    // request (docs/tokens-and-audit.md "Retention and size"); `serve` keeps
    // pruning every minute.
    if let Err(e) =
        crate::store::audit::prune(store.as_ref(), settings.audit_retention(), Utc::now()).await
    {
        tracing::warn!(error = %e, "pruning the audit log at start-up failed");
    }
    Ok(Opened {
        catalog,
        claim,
        store,
        index_cache: settings.index_cache_dir(database_url),
    })
}

/// The state of a gateway whose resource URL derives from `bound` (the
/// listener's address, or for `stdio` the named `--listen`), with every
/// inventory index built.
///
/// # Errors
/// The store or the JWT configuration failed.
pub async fn state(
    opened: Opened,
    settings: ServeSettings,
    bound: SocketAddr,
) -> Result<Arc<AppState>, crate::Error> {
    let Opened {
        catalog,
        claim,
        store,
        index_cache,
    } = opened;
    let cursor_key = store
        .get_or_create_secret("inventory-cursor-hmac-sha256", &random_key)
        .await?;
    let jwt = match (&settings.jwt_issuer, &settings.jwt_jwks_file) {
        (Some(issuer), Some(jwks)) => {
            let audience = settings
                .resource_url
                .clone()
                .unwrap_or_else(|| format!("{}/mcp", settings.public_base(bound)));
            Some(
                crate::auth::jwt::JwtConfig::load(
                    issuer,
                    &audience,
                    jwks,
                    settings.jwt_leeway_seconds,
                )
                .map_err(|e| crate::Error::Io(format!("JWT configuration: {e}")))?
                .with_require_low_s(settings.jwt_require_low_s),
            )
        }
        _ => None,
    };
    let availability = crate::availability::AvailabilityService::new()
        .map_err(|e| crate::Error::Io(format!("availability HTTP client: {e}")))?;
    let mut state = AppState::new(
        settings,
        catalog,
        store,
        bound,
        cursor_key,
        jwt,
        availability,
    );
    state.claim = claim;
    // docs/operations.md "Index images".
    if let Some(dir) = index_cache {
        let schema = crate::catalog::bundle_reference(
            &state.catalog.schema_documents,
            "vehicle.schema.json#/$defs/vehicle",
        )
        .unwrap_or_default();
        state.inventory.use_image_cache(dir, &schema);
    }
    let state = Arc::new(state);
    // PostgreSQL: changes by any replica or the CLI reach this one within
    // a second (docs/operations.md "Replicas"). Started before the first load below, so
    // nothing committed after that load can be missed; the follower's first
    // message (a resync) reloads once more.
    let followed = super::changes::spawn(&state).is_some();
    if followed {
        tracing::info!("following store changes (LISTEN/NOTIFY); polling stays as the fallback");
    }
    // Build the inventory indexes before taking traffic, so the first
    // request is not the one that pays for loading every snapshot.
    let directory = state.directory.snapshot().await?;
    let view = state.inventory.view(&directory).await?;
    tracing::info!(
        inventory.rooftops = view.rooftops.len(),
        inventory.vehicles = view
            .rooftops
            .values()
            .map(|r| r.latest.len())
            .sum::<usize>(),
        // What the indexes hold on the heap, to set beside the process's
        // resident size (docs/benchmarks.md "Memory at a million").
        inventory.index_bytes = view
            .rooftops
            .values()
            .map(|r| r.latest.heap_bytes() + r.withdrawn.as_ref().map_or(0, |w| w.heap_bytes()))
            .sum::<usize>(),
        "inventory loaded"
    );
    // The change hub's detection task (docs/mcp.md "Subscriptions"), started
    // on the loaded view so its first comparison is with what readers saw:
    // fed by the follower's reloads on PostgreSQL, polling while anyone
    // listens on SQLite.
    crate::watch::sources::spawn(&state, !followed).await;
    Ok(state)
}

/// Load the bundled demo (or `--seed-dealers`) when the store is empty.
pub async fn seed_if_empty(
    settings: &ServeSettings,
    catalog: &Catalog,
    store: &dyn Store,
) -> Result<Option<String>, crate::Error> {
    if !store.is_empty().await? {
        return Ok(None);
    }
    let (name, bytes, source) = match &settings.seed_dealers {
        Some(path) => (
            path.display().to_string(),
            std::fs::read(path)
                .map_err(|e| crate::Error::Io(format!("{}: {e}", path.display())))?,
            format!("dealers-file:{}", path.display()),
        ),
        None if settings.no_demo => return Ok(None),
        None => (
            "demo/dealers.yaml".to_owned(),
            DEMO_DEALERS.as_bytes().to_vec(),
            "bundled-demo".to_owned(),
        ),
    };
    let now = Utc::now();
    let records = dealers::parse(catalog, &name, &bytes, &source, now)?;
    // The bundled demo's inventory and programs are checked whole before
    // anything is stored (crate::demo::seed).
    let demo = if settings.seed_dealers.is_none() {
        let demo = crate::demo::seed::DemoSeed::prepare(catalog, &records, now)?;
        Some(demo)
    } else {
        None
    };
    store.upsert_organizations(&records).await?;
    if let Some(demo) = demo {
        demo.write(store).await?;
    }
    Ok(Some(name))
}

/// 256 bits from the OS CSPRNG (two v4 UUIDs carry 244 random bits; the
/// SHA-256 of both spreads them over the whole key).
fn random_key() -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(uuid::Uuid::new_v4().as_bytes());
    h.update(uuid::Uuid::new_v4().as_bytes());
    h.finalize().to_vec()
}
