//! The state every request shares: settings, catalog, store, directory,
//! inventory, limiters, services. Immutable after start except the caches.
//!
//! It sits below the transport, the tools and the resources, which all take
//! it, and above everything it holds; `app` builds it and routes requests to
//! it (no import circle through `AppState`; docs/architecture.md).

pub mod changes;
pub mod start;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use crate::catalog::Catalog;
use crate::config::ServeSettings;
use crate::directory::Directory;
use crate::inventory::live::LiveInventory;
use crate::mcp::headers::host_without_port;
use crate::mcp::session::Sessions;
use crate::ratelimit::KeyedLimiter;
use crate::store::Store;

/// Everything a request may use. Immutable after start except the caches.
pub struct AppState {
    pub settings: ServeSettings,
    pub catalog: Catalog,
    pub store: Arc<dyn Store>,
    pub directory: Directory,
    /// The per-snapshot inventory indexes this replica serves.
    pub inventory: LiveInventory,
    /// Key sealing pagination cursors; shared by every replica through the
    /// store so a cursor from one replica opens on another.
    pub cursor_key: Vec<u8>,
    pub sessions: Sessions,
    /// The exact audience credentials must name (OAuth resource URL).
    pub resource_url: String,
    /// JWT verification, when an issuer and JWKS file are configured.
    pub jwt: Option<crate::auth::jwt::JwtConfig>,
    /// Per client address, at the HTTP edge.
    pub ip_limiter: KeyedLimiter<IpAddr>,
    /// Per authenticated subject, at the HTTP edge.
    pub principal_limiter: KeyedLimiter<String>,
    /// Per (tool, client address) quota for anonymous callers of
    /// `rate_limited_or_authenticated` tools.
    pub anonymous_tool_limiter: KeyedLimiter<(String, IpAddr)>,
    /// Availability checks (reuse, coalescing, breaker, overlay).
    pub availability: crate::availability::AvailabilityService,
    /// Incentive programs per organization (cached, validated).
    pub offers: crate::offers::OffersService,
    /// Public base URL without a trailing slash.
    pub public_base: String,
    /// What `/conformance/claim.json` serves: the operator's signed claim,
    /// or a notice that none is published (see [`crate::claim`]).
    pub claim: crate::claim::PublishedClaim,
    /// Offer evaluations reused per vehicle, program set and profile.
    pub evaluations: crate::disclosure::cache::EvaluationCache,
    /// Serialized manifests per directory snapshot and caller view.
    pub manifests: crate::directory::ViewCache,
    /// The serialized `tools/list` of `/mcp`, per era.
    pub tool_lists: crate::mcp::rendered::ToolListCache,
    /// The organizations this replica serves (`None`: every one;
    /// docs/operations.md "Shards").
    pub shard: Option<Arc<crate::shards::ShardFilter>>,
    /// Subscriptions and their notice queues (docs/mcp.md "Subscriptions").
    pub watch: Arc<crate::watch::Hub>,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
}

const LOOPBACK_HOSTS: [&str; 4] = ["localhost", "127.0.0.1", "[::1]", "::1"];

impl AppState {
    pub fn new(
        settings: ServeSettings,
        catalog: Catalog,
        store: Arc<dyn Store>,
        bound: SocketAddr,
        cursor_key: Vec<u8>,
        jwt: Option<crate::auth::jwt::JwtConfig>,
        availability: crate::availability::AvailabilityService,
    ) -> Self {
        let public_base = settings.public_base(bound);
        let resource_url = settings
            .resource_url
            .clone()
            .unwrap_or_else(|| format!("{public_base}/mcp"));
        let ip_limiter = KeyedLimiter::new(
            settings.rate_limit_ip_per_minute,
            settings.rate_limit_ip_per_minute,
        );
        let principal_limiter = KeyedLimiter::new(
            settings.rate_limit_principal_per_minute,
            settings.rate_limit_principal_per_minute,
        );
        let anonymous_tool_limiter = KeyedLimiter::new(
            settings.anonymous_quota_per_minute,
            settings.anonymous_quota_per_minute,
        );
        let mut allowed_hosts: Vec<String> =
            LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
        allowed_hosts.extend(
            settings
                .allowed_hosts
                .iter()
                .map(|h| h.trim().to_ascii_lowercase()),
        );
        if let Some(host) = public_base
            .split_once("://")
            .map(|(_, rest)| rest.split('/').next().unwrap_or(""))
        {
            allowed_hosts.push(host_without_port(host));
        }
        if !bound.ip().is_unspecified() {
            allowed_hosts.push(host_without_port(&bound.to_string()));
        }
        let allowed_origins = settings
            .allowed_origins
            .iter()
            .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
            .collect();
        let directory = Directory::new(
            store.clone(),
            Duration::from_secs(settings.directory_refresh_seconds.max(1)),
        );
        // The DAP vehicle definition, compiled once for the indexes'
        // pre-rendered vehicles. It compiled when the
        // catalog loaded; should it not, every vehicle is served as a tree
        // and validated per request instead.
        let vehicle_schema = crate::catalog::bundle_reference(
            &catalog.schema_documents,
            "vehicle.schema.json#/$defs/vehicle",
        )
        .ok()
        .and_then(|schema| {
            jsonschema::draft202012::options()
                .should_validate_formats(true)
                .build(&schema)
                .ok()
        });
        if vehicle_schema.is_none() {
            tracing::error!(
                "the DAP vehicle schema did not compile; vehicles are validated per request"
            );
        }
        let vehicle_check: crate::inventory::live::VehicleCheck =
            Arc::new(move |vehicle| match &vehicle_schema {
                // The fast yes/no first: every stored vehicle is checked at
                // start-up, and nearly all of them pass; only a failure
                // pays for the list of what failed.
                Some(validator) if validator.is_valid(vehicle) => Ok(()),
                Some(validator) => {
                    let errors: Vec<String> = validator
                        .iter_errors(vehicle)
                        .map(|e| format!("{e} at {}", e.instance_path()))
                        .collect();
                    if errors.is_empty() {
                        Ok(())
                    } else {
                        Err(errors.join("; "))
                    }
                }
                None => Err("the vehicle schema is unavailable".to_owned()),
            });
        let mut inventory = LiveInventory::new(
            store.clone(),
            Duration::from_secs(settings.inventory_refresh_seconds.max(1)),
            vehicle_check,
        );
        // A sharded replica holds only its organizations' inventory
        // (docs/operations.md "Shards"); settings that do not parse were
        // refused at start-up (`state::start::open`).
        let shard = settings.sharding.filter().ok().flatten().map(Arc::new);
        if let Some(filter) = &shard {
            let filter = filter.clone();
            inventory = inventory.serving_only(Arc::new(move |org| filter.serves(org)));
        }
        // In the store, so any replica serves any legacy session
        // (docs/operations.md "Replicas").
        let sessions = Sessions::new(
            store.clone(),
            settings.max_legacy_sessions,
            Duration::from_secs(settings.legacy_session_idle_seconds.max(1)),
        );
        // `--programs-refresh-seconds` (docs/pricing.md "Revisions,
        // whole-set validation, replacement and withdrawal"): how soon an
        // import, replacement or withdrawal reaches this replica.
        let offers = crate::offers::OffersService::with_pool(
            Duration::from_secs(settings.programs_refresh_seconds.max(1)),
            // `--evaluation-threads`, `--evaluation-queue`,
            // `--evaluation-deadline-ms` (docs/pricing.md section 4).
            crate::offers::pool::EvaluationPool::new(
                crate::offers::pool::EvaluationPool::threads_for(settings.evaluation_threads),
                usize::try_from(settings.evaluation_queue).unwrap_or(usize::MAX),
                Duration::from_millis(settings.evaluation_deadline_ms.max(1)),
            ),
        );
        // `--subscriptions-per-stream` and the other bounds of the hub.
        let watch_limits = settings.watch_limits();
        Self {
            settings,
            catalog,
            store,
            directory,
            inventory,
            cursor_key,
            sessions,
            resource_url,
            jwt,
            ip_limiter,
            principal_limiter,
            anonymous_tool_limiter,
            availability,
            offers,
            manifests: crate::directory::ViewCache::default(),
            tool_lists: crate::mcp::rendered::ToolListCache::default(),
            shard,
            watch: Arc::new(crate::watch::Hub::new(watch_limits)),
            evaluations: crate::disclosure::cache::EvaluationCache::default(),
            public_base,
            claim: crate::claim::PublishedClaim::none(),
            allowed_hosts,
            allowed_origins,
        }
    }

    /// Whether this replica serves `organization_id` (always, unless it is
    /// a sharded replica: docs/operations.md "Shards").
    pub fn serves_organization(&self, organization_id: &str) -> bool {
        self.shard
            .as_ref()
            .is_none_or(|s| s.serves(organization_id))
    }

    /// Host allowlist (DNS-rebinding defence).
    pub fn host_allowed(&self, host: &str) -> bool {
        self.allowed_hosts.iter().any(|h| h == host)
    }

    /// Origin allowlist: loopback origins and the configured ones.
    pub fn origin_allowed(&self, origin: &str) -> bool {
        if self.cors_origin_allowed(origin) {
            return true;
        }
        let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        let Some((scheme, rest)) = origin.split_once("://") else {
            return false;
        };
        matches!(scheme, "http" | "https")
            && !rest.contains('/')
            && LOOPBACK_HOSTS.contains(&host_without_port(rest).as_str())
    }

    /// Origins granted CORS: exactly the configured `--allowed-origins`.
    /// Loopback origins pass the DNS-rebinding check (local tools send
    /// them) but are not granted CORS unless listed, so an arbitrary page
    /// served from some local port cannot read the gateway's answers
    /// (docs/security.md). The same list feeds [`Self::origin_allowed`]:
    /// one source of truth for both checks.
    pub fn cors_origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        self.allowed_origins.contains(&origin)
    }

    /// `ttlMs` for directory-derived results: how long until this replica
    /// may serve a newer directory.
    pub fn directory_ttl_ms(&self) -> u64 {
        u64::try_from(self.directory.refresh_interval().as_millis()).unwrap_or(u64::MAX)
    }
}
