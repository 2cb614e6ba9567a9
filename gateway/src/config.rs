//! Typed settings. Every flag has an environment variable and a `--help`
//! line; defaults give the embedded single-machine setup.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{ArgAction, Args};

/// The default store: an embedded SQLite file relative to the working
/// directory, created and migrated on first start.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://./data/gateway.sqlite";

/// Settings of `dealer-gateway serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeSettings {
    /// A TOML file of serve settings: each key is a flag's name without the
    /// leading `--` and with `_` for `-` (e.g. `request_timeout_seconds =
    /// 30`, `allowed_origins = ["https://a.example"]`, `no_demo = true`;
    /// also `database_url`, `log` and `log_format`). Precedence: flag >
    /// environment variable > this file > default. An unknown key or a bad
    /// value stops the gateway before it starts, naming the key and the
    /// file; nothing of a bad file is applied.
    #[arg(long, env = "DEALER_GATEWAY_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Address to listen on. Use 127.0.0.1:0 for an ephemeral port.
    #[arg(long, env = "DEALER_GATEWAY_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// A second address serving only `GET /metrics` (Prometheus text), with
    /// no credential: bind it to a private network or loopback. Without it
    /// `/metrics` is on the main listener and needs a grant with the scope
    /// dealergateway:metrics:read (the metrics name every rooftop id).
    #[arg(long, env = "DEALER_GATEWAY_METRICS_LISTEN", value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,

    /// Start with an empty store instead of loading the bundled demo dataset
    /// when the store has no organizations.
    #[arg(long, env = "DEALER_GATEWAY_NO_DEMO", action = ArgAction::SetTrue)]
    pub no_demo: bool,

    /// Reject modern MCP requests that omit MCP-Protocol-Version, Mcp-Method
    /// or Mcp-Name (the strict upstream rule). By default omission is
    /// tolerated when the body supplies the value (AAP ingress rule);
    /// supplied conflicts are always rejected.
    #[arg(long, env = "DEALER_GATEWAY_STRICT_MCP_HEADERS", action = ArgAction::SetTrue)]
    pub strict_mcp_headers: bool,

    /// Extra browser origins allowed to call /mcp (comma separated, exact
    /// `scheme://host[:port]`). Loopback origins are always allowed; any
    /// other Origin gets 403. Exactly these listed origins are granted CORS
    /// (preflight 204, Access-Control-Allow-Origin), so a browser page
    /// needs its origin here even when it is a loopback one.
    #[arg(long, env = "DEALER_GATEWAY_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,

    /// Extra Host names accepted (comma separated, without port). Loopback
    /// names and the host of --public-url are always accepted; any other
    /// Host gets 403 (DNS-rebinding protection).
    #[arg(long, env = "DEALER_GATEWAY_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,

    /// Largest accepted request body in bytes (larger: HTTP 413).
    #[arg(
        long,
        env = "DEALER_GATEWAY_MAX_BODY_BYTES",
        default_value_t = 1_048_576
    )]
    pub max_body_bytes: usize,

    /// The public base URL of this gateway (used for schema and policy
    /// links in the manifest). Defaults to http://<listen address>.
    #[arg(long, env = "DEALER_GATEWAY_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// Stable identifier of this gateway in the manifest.
    #[arg(
        long,
        env = "DEALER_GATEWAY_ID",
        default_value = "gateway.dealer-agent-gateway.local"
    )]
    pub gateway_id: String,

    /// Operator name published in the manifest.
    #[arg(
        long,
        env = "DEALER_GATEWAY_OPERATOR_NAME",
        default_value = "Dealer Agent Gateway operator"
    )]
    pub operator_name: String,

    /// Operator URL published in the manifest.
    #[arg(long, env = "DEALER_GATEWAY_OPERATOR_URI")]
    pub operator_uri: Option<String>,

    /// A signed DAP conformance claim (from `dap-conformance claim`) to
    /// publish at /conformance/claim.json and name in the manifest. Checked
    /// at start-up: it must validate, be unexpired and pin exactly the DAP
    /// tools, resources and profiles this build serves. Without it the
    /// gateway says plainly that no claim is published.
    #[arg(long, env = "DEALER_GATEWAY_CONFORMANCE_CLAIM")]
    pub conformance_claim: Option<std::path::PathBuf>,

    /// The organization described by the DAP static publication at
    /// /.well-known/dealer-agent.json (DAP describes ONE organization
    /// there). Without it: the only organization with rooftops published to
    /// anonymous callers, or 404 when there are several or none. A private
    /// organization is never published: the document then answers 404 and
    /// a warning is logged.
    #[arg(
        long,
        env = "DEALER_GATEWAY_PUBLICATION_ORGANIZATION",
        value_name = "ORGANIZATION_ID"
    )]
    pub publication_organization: Option<String>,

    /// How often each replica reloads the dealer directory from the store.
    #[arg(
        long,
        env = "DEALER_GATEWAY_DIRECTORY_REFRESH_SECONDS",
        default_value_t = 30
    )]
    pub directory_refresh_seconds: u64,

    /// How often each replica checks the store for new inventory snapshots.
    #[arg(
        long,
        env = "DEALER_GATEWAY_INVENTORY_REFRESH_SECONDS",
        default_value_t = 5
    )]
    pub inventory_refresh_seconds: u64,

    /// How often each replica re-reads an organization's incentive programs
    /// from the store: an import, replacement or withdrawal reaches every
    /// evaluation and disclosure within this interval (docs/pricing.md).
    /// At least 1.
    #[arg(
        long,
        env = "DEALER_GATEWAY_PROGRAMS_REFRESH_SECONDS",
        default_value_t = crate::offers::DEFAULT_REFRESH.as_secs()
    )]
    pub programs_refresh_seconds: u64,

    /// This gateway's OAuth resource identifier: the exact audience every
    /// credential must name. Defaults to <public URL>/mcp.
    #[arg(long, env = "DEALER_GATEWAY_RESOURCE_URL")]
    pub resource_url: Option<String>,

    /// Issuer (`iss`) of accepted JWT access tokens. JWTs are accepted only
    /// when this and --jwt-jwks-file are set.
    #[arg(long, env = "DEALER_GATEWAY_JWT_ISSUER", requires = "jwt_jwks_file")]
    pub jwt_issuer: Option<String>,

    /// JWKS file (RFC 7517) with the issuer's ES256/RS256 public keys.
    #[arg(long, env = "DEALER_GATEWAY_JWT_JWKS_FILE", requires = "jwt_issuer")]
    pub jwt_jwks_file: Option<PathBuf>,

    /// Clock skew tolerated on JWT `exp`/`nbf`, in seconds.
    #[arg(long, env = "DEALER_GATEWAY_JWT_LEEWAY_SECONDS", default_value_t = 60)]
    pub jwt_leeway_seconds: u64,

    /// Refuse ES256 signatures whose S is in the upper half of the curve
    /// order (the malleable twin of a low-S signature). Off by default:
    /// OpenSSL, Go, Java and cloud KMS issuers do not normalise S, so about
    /// half of their valid tokens are high-S (docs/jwt.md).
    #[arg(long, env = "DEALER_GATEWAY_JWT_REQUIRE_LOW_S", action = ArgAction::SetTrue)]
    pub jwt_require_low_s: bool,

    /// Authorization servers published in the protected-resource metadata
    /// (comma separated). Defaults to the JWT issuer.
    #[arg(
        long,
        env = "DEALER_GATEWAY_AUTHORIZATION_SERVERS",
        value_delimiter = ','
    )]
    pub authorization_servers: Vec<String>,

    /// Requests per minute per client address at the HTTP edge (beyond:
    /// HTTP 429 with Retry-After).
    #[arg(
        long,
        env = "DEALER_GATEWAY_RATE_LIMIT_IP_PER_MINUTE",
        default_value_t = 1200
    )]
    pub rate_limit_ip_per_minute: u32,

    /// Requests per minute per authenticated principal (beyond: HTTP 429).
    #[arg(
        long,
        env = "DEALER_GATEWAY_RATE_LIMIT_PRINCIPAL_PER_MINUTE",
        default_value_t = 2400
    )]
    pub rate_limit_principal_per_minute: u32,

    /// Per-tool quota for anonymous callers of tools whose catalog access
    /// is `rate_limited_or_authenticated` (availability verification), per
    /// client address and minute (beyond: `dealeragent.rate_limited`).
    #[arg(
        long,
        env = "DEALER_GATEWAY_ANONYMOUS_QUOTA_PER_MINUTE",
        default_value_t = 30
    )]
    pub anonymous_quota_per_minute: u32,

    /// Audit entries older than this many days are deleted, at start-up and
    /// every minute while serving (docs/security.md, "Audit retention").
    #[arg(
        long,
        env = "DEALER_GATEWAY_AUDIT_RETENTION_DAYS",
        default_value_t = 90,
        value_parser = clap::value_parser!(u32).range(1..=36_500)
    )]
    pub audit_retention_days: u32,

    /// Most audit rows kept (events plus at most a tenth as counters of
    /// refused anonymous calls); beyond it the oldest are deleted first and
    /// a warning is logged (docs/security.md, "Audit retention").
    #[arg(
        long,
        env = "DEALER_GATEWAY_AUDIT_MAX_EVENTS",
        default_value_t = 1_000_000,
        value_parser = clap::value_parser!(u64).range(100..)
    )]
    pub audit_max_events: u64,

    /// Also refuse public reads whose audit entry cannot be written. A
    /// non-public read whose event cannot be written is always refused
    /// (retryable `dealeragent.upstream.unavailable`); this setting can only
    /// make the gateway stricter (docs/tokens-and-audit.md "When the audit
    /// log cannot be written").
    #[arg(
        long,
        env = "DEALER_GATEWAY_AUDIT_REFUSE_PUBLIC_READS",
        action = ArgAction::SetTrue
    )]
    pub audit_refuse_public_reads: bool,

    /// Longest time a request may run before it is answered with 503.
    #[arg(
        long,
        env = "DEALER_GATEWAY_REQUEST_TIMEOUT_SECONDS",
        default_value_t = 30
    )]
    pub request_timeout_seconds: u64,

    /// Offer evaluations (`dealergateway.offers.evaluate`, the offers part
    /// of `dealeragent.pricing.get_disclosure`, the console's what-if and
    /// scores) that may run at once, each on a thread of its own beside
    /// the async workers, which they never occupy. 0: one less than the
    /// machine's cores, at least 1 (docs/pricing.md section 4).
    #[arg(
        long,
        env = "DEALER_GATEWAY_EVALUATION_THREADS",
        default_value_t = 0,
        value_parser = clap::value_parser!(u32).range(0..=1024)
    )]
    pub evaluation_threads: u32,

    /// Offer evaluations that may wait for a free evaluation thread. A call
    /// beyond it, or one that waited --evaluation-deadline-ms without a
    /// thread, is answered with the retryable
    /// `dealeragent.upstream.unavailable` and `retry_after_ms`.
    #[arg(
        long,
        env = "DEALER_GATEWAY_EVALUATION_QUEUE",
        default_value_t = crate::offers::pool::DEFAULT_QUEUE as u32,
        value_parser = clap::value_parser!(u32).range(0..=100_000)
    )]
    pub evaluation_queue: u32,

    /// The wall-clock budget of one offer evaluation, from when it starts
    /// running: past it its searches stop and it answers with the best
    /// stacks found so far, marked `optimality: bounded` (the disclosure
    /// says so in its text and uncertainty). On top of the counted budget
    /// of 50,000 search nodes and 500,000 rhai operations
    /// (docs/pricing.md section 4).
    #[arg(
        long,
        env = "DEALER_GATEWAY_EVALUATION_DEADLINE_MS",
        default_value_t = crate::offers::pool::DEFAULT_DEADLINE.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(1..=60_000)
    )]
    pub evaluation_deadline_ms: u64,

    /// Longest time from the first byte of a request head to its end
    /// (request line and headers); a slower client gets 408 and the
    /// connection is closed (docs/security.md, "Slow clients").
    #[arg(
        long,
        env = "DEALER_GATEWAY_HEADER_READ_TIMEOUT_SECONDS",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..=3600)
    )]
    pub header_read_timeout_seconds: u64,

    /// A connection with no request in progress and no byte of a new one
    /// for this long is closed (keep-alive idle timeout). Behind a proxy
    /// that reuses upstream connections, set it above the proxy's own idle
    /// timeout.
    #[arg(
        long,
        env = "DEALER_GATEWAY_IDLE_TIMEOUT_SECONDS",
        default_value_t = 30,
        value_parser = clap::value_parser!(u64).range(1..=86_400)
    )]
    pub idle_timeout_seconds: u64,

    /// Most client connections open at once. A new one beyond it replaces
    /// the oldest connection that has no request in progress, or is refused
    /// with 503 when every connection is busy.
    #[arg(
        long,
        env = "DEALER_GATEWAY_MAX_CONNECTIONS",
        default_value_t = 512,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_connections: u32,

    /// Most connections open at once from one client IP address (IPv6: one
    /// /64). A new one beyond it replaces that address's oldest connection
    /// without a request in progress, or is refused with 503. Behind a
    /// reverse proxy every connection has the proxy's address: set this to
    /// --max-connections there.
    #[arg(
        long,
        env = "DEALER_GATEWAY_MAX_CONNECTIONS_PER_ADDRESS",
        default_value_t = 64,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_connections_per_address: u32,

    /// On SIGTERM or ctrl-c: stop accepting, let requests in progress
    /// finish for at most this long, then close every remaining connection
    /// and exit.
    #[arg(
        long,
        env = "DEALER_GATEWAY_SHUTDOWN_GRACE_SECONDS",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(0..=3600)
    )]
    pub shutdown_grace_seconds: u64,

    /// Most concurrent legacy (2025-11-25) MCP sessions, kept in the store
    /// for all replicas together; the least recently used is dropped beyond
    /// it.
    #[arg(
        long,
        env = "DEALER_GATEWAY_MAX_LEGACY_SESSIONS",
        default_value_t = 10_000
    )]
    pub max_legacy_sessions: usize,

    /// A legacy session idle for longer than this is forgotten (then 404).
    #[arg(
        long,
        env = "DEALER_GATEWAY_LEGACY_SESSION_IDLE_SECONDS",
        default_value_t = 3600
    )]
    pub legacy_session_idle_seconds: u64,

    /// Resource subscriptions one notification stream may hold
    /// (docs/operations.md "Metrics": `dealer_gateway_subscriptions`).
    #[arg(
        long,
        env = "DEALER_GATEWAY_SUBSCRIPTIONS_PER_STREAM",
        default_value_t = 256
    )]
    pub subscriptions_per_stream: usize,

    /// Resource subscriptions all streams of one credential subject may
    /// hold together.
    #[arg(
        long,
        env = "DEALER_GATEWAY_SUBSCRIPTIONS_PER_PRINCIPAL",
        default_value_t = 1000
    )]
    pub subscriptions_per_principal: usize,

    /// Notification streams one credential subject may hold open.
    #[arg(
        long,
        env = "DEALER_GATEWAY_SUBSCRIPTION_STREAMS_PER_PRINCIPAL",
        default_value_t = 8
    )]
    pub subscription_streams_per_principal: usize,

    /// Notifications waiting per stream; a stream whose queue is full is
    /// ended as a slow consumer.
    #[arg(long, env = "DEALER_GATEWAY_NOTIFICATION_QUEUE", default_value_t = 256)]
    pub notification_queue: usize,

    /// Seconds an idle notification stream waits before a keep-alive.
    #[arg(long, env = "DEALER_GATEWAY_KEEP_ALIVE_SECONDS", default_value_t = 15)]
    pub keep_alive_seconds: u64,

    /// Dealers file to import at start instead of the bundled demo (applied
    /// only when the store is empty).
    #[arg(long, env = "DEALER_GATEWAY_SEED_DEALERS")]
    pub seed_dealers: Option<PathBuf>,

    /// Directory of the per-snapshot index images (docs/operations.md
    /// "Index images"): a restarting replica reads each snapshot's index
    /// from its image instead of rebuilding it. Default: beside a SQLite
    /// store file (`<file>.index/`); none for PostgreSQL or an in-memory
    /// store. `off` keeps none.
    #[arg(long, env = "DEALER_GATEWAY_INDEX_CACHE", value_name = "DIR")]
    pub index_cache: Option<String>,

    /// `--shard`, `--shards`, `--shard-pins` (docs/operations.md "Shards").
    #[command(flatten)]
    pub sharding: crate::shards::ShardSettings,
}

/// Why `serve --config FILE` refused its file (docs/operations.md
/// "Configuration file"). The
/// gateway does not start: a file is applied whole or not at all.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// The file cannot be read.
    #[error("{file}: cannot read the config file: {reason}; the gateway did not start")]
    Unreadable { file: String, reason: String },
    /// The file is not a TOML document.
    #[error("{file}: not a valid TOML config file: {reason}\nthe gateway did not start")]
    Syntax { file: String, reason: String },
    /// Keys that are no `serve` setting, values a setting does not accept,
    /// or settings that do not go together: every problem of the file, each
    /// reported like every operator file's ([`crate::report`]:
    /// `<file>:<line>:<column>: /<key>: <rule>: <explanation>`).
    #[error(
        "{file}: {n} problem(s) in the config file; nothing of it was applied and the gateway did not start:\n{list}",
        n = problems.len(),
        list = problems.iter().map(|p| format!("  {}", p.line(file))).collect::<Vec<_>>().join("\n")
    )]
    Invalid {
        file: String,
        problems: Vec<crate::report::Problem>,
    },
    /// The process's own command line could not be read again to learn
    /// which settings came from flags and environment variables.
    #[error("cannot apply the config file: {0}")]
    CommandLine(String),
}

impl ServeSettings {
    /// The defaults of `dealer-gateway serve` with another listen address
    /// (what integration tests and embedders start from).
    /// The change hub's bounds (docs/mcp.md "Subscriptions"); each at
    /// least 1.
    pub fn watch_limits(&self) -> crate::watch::Limits {
        crate::watch::Limits {
            uris_per_stream: self.subscriptions_per_stream.max(1),
            subscriptions_per_principal: self.subscriptions_per_principal.max(1),
            streams_per_principal: self.subscription_streams_per_principal.max(1),
            queue: self.notification_queue.max(1),
            keep_alive: std::time::Duration::from_secs(self.keep_alive_seconds.max(1)),
        }
    }

    pub fn with_listen(listen: SocketAddr) -> Self {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            settings: ServeSettings,
        }
        // Parse an empty command line so defaults come from one place (the
        // attributes above). DEALER_GATEWAY_* variables still apply.
        let mut settings = Wrapper::parse_from(["dealer-gateway"]).settings;
        settings.listen = listen;
        settings
    }

    /// The index image directory `--index-cache` names for the store at
    /// `database_url` (docs/operations.md "Index images"), if any.
    pub fn index_cache_dir(&self, database_url: &str) -> Option<PathBuf> {
        match self.index_cache.as_deref().map(str::trim) {
            Some("off" | "") => None,
            Some(dir) => Some(PathBuf::from(dir)),
            None => sqlite_sibling(database_url),
        }
    }

    /// `--audit-retention-days` and `--audit-max-events`.
    pub fn audit_retention(&self) -> crate::store::AuditRetention {
        crate::store::AuditRetention {
            retention_days: self.audit_retention_days,
            max_events: self.audit_max_events,
        }
    }

    /// The public base URL without a trailing slash.
    pub fn public_base(&self, bound: SocketAddr) -> String {
        match &self.public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{bound}"),
        }
    }
}

/// `<file>.index` beside the file of a SQLite store URL; `None` for any
/// other store and for an in-memory database (nothing to restart from).
fn sqlite_sibling(database_url: &str) -> Option<PathBuf> {
    use std::str::FromStr as _;
    if !database_url.starts_with("sqlite:")
        || database_url.contains(":memory:")
        || database_url.contains("mode=memory")
    {
        return None;
    }
    let options = sqlx::sqlite::SqliteConnectOptions::from_str(database_url).ok()?;
    let file = options.get_filename();
    let name = file.file_name()?.to_str()?;
    Some(file.with_file_name(format!("{name}.index")))
}
