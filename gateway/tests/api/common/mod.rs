//! Shared harness: a real gateway on 127.0.0.1:0 with a fresh store, and a
//! small JSON-RPC client over real HTTP. No sleeps: `spawn` returns after
//! the socket is bound.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::net::SocketAddr;
use std::path::PathBuf;

use gateway::config::ServeSettings;
use serde_json::{Value, json};
use tokio::sync::oneshot;

pub const MODERN: &str = "2026-07-28";
pub const LEGACY: &str = "2025-11-25";

/// A running gateway; stopped when dropped.
pub struct TestApp {
    pub addr: SocketAddr,
    /// The `--metrics-listen` address, when the settings asked for one.
    pub metrics_addr: Option<SocketAddr>,
    pub url: String,
    pub http: reqwest::Client,
    pub db_dir: PathBuf,
    /// The store this gateway uses (SQLite file or PostgreSQL database).
    pub database_url: String,
    _stop: oneshot::Sender<()>,
}

/// A fresh temporary directory for one test.
pub fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dealer-gw-test-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// The store URL for a test: SQLite in a fresh directory.
pub fn sqlite_url(dir: &std::path::Path) -> String {
    format!("sqlite://{}", dir.join("gateway.sqlite").display())
}

/// Start a gateway with the bundled demo data and default settings.
pub async fn spawn() -> TestApp {
    spawn_with(|_| {}).await
}

/// Start a gateway with adjusted settings.
pub async fn spawn_with(adjust: impl FnOnce(&mut ServeSettings)) -> TestApp {
    let dir = temp_dir();
    let database_url = test_database_url(&dir).await;
    spawn_on(dir, database_url, adjust).await
}

/// Start a gateway with adjusted settings on an existing store (made with
/// [`fresh_database`] and loaded by the test), e.g. to serve data written
/// before the server started.
pub async fn spawn_on(
    dir: PathBuf,
    database_url: String,
    adjust: impl FnOnce(&mut ServeSettings),
) -> TestApp {
    let mut settings = ServeSettings::with_listen("127.0.0.1:0".parse().unwrap());
    adjust(&mut settings);
    let (stop, stopped) = oneshot::channel::<()>();
    let running = gateway::app::spawn(settings, &database_url, async move {
        let _ = stopped.await;
    })
    .await
    .expect("gateway starts");
    TestApp {
        addr: running.addr,
        metrics_addr: running.metrics_addr,
        url: format!("http://{}/mcp", running.addr),
        http: reqwest::Client::new(),
        db_dir: dir,
        database_url,
        _stop: stop,
    }
}

impl TestApp {
    /// A client of a gateway started elsewhere (e.g. the real binary by
    /// `cli_ops::serve`) at `base` (`http://host:port`).
    pub fn attach(base: &str) -> TestApp {
        // No gateway runs in this process to install a TLS provider, and
        // reqwest's client needs one even for plain HTTP.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let addr: SocketAddr = base
            .trim_start_matches("http://")
            .parse()
            .expect("a host:port base");
        TestApp {
            addr,
            metrics_addr: None,
            url: format!("{base}/mcp"),
            http: reqwest::Client::new(),
            db_dir: PathBuf::new(),
            database_url: String::new(),
            _stop: oneshot::channel::<()>().0,
        }
    }
}

/// Drops the `itest_<pid>_…` databases whose test process no longer runs.
/// Best effort: another test may be dropping the same database at the same
/// moment, and a failure here only leaves a database for the next sweep.
async fn drop_databases_of_ended_tests(conn: &mut sqlx::PgConnection) {
    // Liveness is read from /proc; where there is none, sweep nothing.
    if !std::path::Path::new("/proc/self").exists() {
        return;
    }
    let names: Vec<String> =
        sqlx::query_scalar("select datname from pg_database where datname like 'itest\\_%'")
            .fetch_all(&mut *conn)
            .await
            .unwrap_or_default();
    for name in names {
        let Some(pid) = name
            .strip_prefix("itest_")
            .and_then(|rest| rest.split_once('_'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || std::path::Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
            "drop database if exists {name} with (force)"
        )))
        .execute(&mut *conn)
        .await;
    }
}

/// The store for one test: a fresh PostgreSQL database when
/// `DEALER_GATEWAY_TEST_POSTGRES_URL` is set (the second run of
/// `./scripts/test`), else SQLite in the test's own directory. Every
/// integration test thus runs on both backends.
pub async fn test_database_url(dir: &std::path::Path) -> String {
    match std::env::var("DEALER_GATEWAY_TEST_POSTGRES_URL") {
        Ok(admin) if !admin.is_empty() => {
            use sqlx::Connection as _;
            // The test process's id is in the name, so a later test can drop
            // the databases of processes that have ended (nextest runs each
            // test in its own process). Without that sweep a full run left
            // one ~8 MB database per test behind and filled the cluster's
            // disk part way through (CI at stop 21: connection refused from
            // the 598th test on).
            let pid = std::process::id();
            let name = format!("itest_{pid}_{}", uuid::Uuid::new_v4().simple());
            let mut conn = sqlx::PgConnection::connect(&admin)
                .await
                .expect("connect to PostgreSQL");
            drop_databases_of_ended_tests(&mut conn).await;
            sqlx::query(sqlx::AssertSqlSafe(format!("create database {name}")))
                .execute(&mut conn)
                .await
                .expect("create test database");
            let base = admin.rsplit_once('/').map_or(admin.as_str(), |(b, _)| b);
            format!("{base}/{name}")
        }
        _ => {
            assert!(
                std::env::var("REQUIRE_POSTGRES").as_deref() != Ok("1"),
                "REQUIRE_POSTGRES=1 but DEALER_GATEWAY_TEST_POSTGRES_URL is not set"
            );
            sqlite_url(dir)
        }
    }
}

/// The per-request `_meta` of 2026-07-28.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "gateway-tests", "version": "0"}
    })
}

/// A well-formed modern request body.
pub fn modern_body(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// One HTTP response, decoded.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub raw: String,
}

impl Reply {
    pub fn result(&self) -> &Value {
        assert!(
            self.body.get("error").is_none(),
            "unexpected error: {}",
            self.raw
        );
        &self.body["result"]
    }

    pub fn error_code(&self) -> i64 {
        self.body["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("no error in {}", self.raw))
    }
}

impl TestApp {
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// POST raw bytes with exactly the given headers (plus Content-Type
    /// unless overridden).
    pub async fn post_raw(
        &self,
        headers: &[(&str, &str)],
        body: impl Into<reqwest::Body>,
    ) -> Reply {
        let mut req = self.http.post(&self.url);
        let mut has_ct = false;
        for (k, v) in headers {
            if k.eq_ignore_ascii_case("content-type") {
                has_ct = true;
            }
            req = req.header(*k, *v);
        }
        if !has_ct {
            req = req.header("content-type", "application/json");
        }
        let resp = req.body(body).send().await.expect("request sent");
        decode(resp).await
    }

    /// POST a modern request with correct standard headers.
    pub async fn modern(&self, method: &str, params: Value) -> Reply {
        let body = modern_body(1, method, params);
        let name = body["params"]
            .get("name")
            .or_else(|| body["params"].get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut headers = vec![
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", MODERN),
            ("mcp-method", method),
        ];
        if let Some(name) = name.as_deref() {
            headers.push(("mcp-name", name));
        }
        self.post_raw(&headers, body.to_string()).await
    }

    /// Call a tool the modern way; returns the `result` object.
    pub async fn call_tool(&self, name: &str, args: Value) -> Value {
        let reply = self
            .modern("tools/call", json!({"name": name, "arguments": args}))
            .await;
        assert_eq!(reply.status, 200, "{}", reply.raw);
        reply.result().clone()
    }

    /// Legacy handshake; returns the session id.
    pub async fn initialize_legacy(&self) -> String {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
        let reply = self
            .post_raw(
                &[("accept", "application/json, text/event-stream")],
                body.to_string(),
            )
            .await;
        assert_eq!(reply.status, 200, "{}", reply.raw);
        let session = reply
            .headers
            .get("mcp-session-id")
            .expect("session id")
            .to_str()
            .unwrap()
            .to_owned();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let r = self
            .post_raw(
                &[
                    ("mcp-session-id", &session),
                    ("mcp-protocol-version", LEGACY),
                ],
                note.to_string(),
            )
            .await;
        assert_eq!(r.status, 202);
        session
    }

    /// A request inside a legacy session.
    pub async fn legacy(&self, session: &str, method: &str, params: Value) -> Reply {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        self.post_raw(
            &[
                ("mcp-session-id", session),
                ("mcp-protocol-version", LEGACY),
                ("accept", "application/json, text/event-stream"),
            ],
            body.to_string(),
        )
        .await
    }
}

async fn decode(resp: reqwest::Response) -> Reply {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let raw = resp.text().await.expect("body");
    let body = if raw.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&raw).unwrap_or(Value::Null)
    };
    Reply {
        status,
        headers,
        body,
        raw,
    }
}

/// Send any prepared request and decode the reply (GET, DELETE, odd
/// headers).
pub async fn send(req: reqwest::RequestBuilder) -> Reply {
    decode(req.send().await.expect("request sent")).await
}

/// A reply read from a raw socket: status line, headers (lower-cased
/// names) and body bytes.
#[derive(Debug)]
pub struct RawReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawReply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

impl TestApp {
    /// POST with exactly these headers: unlike [`TestApp::post_raw`] no
    /// Content-Type is added.
    pub async fn post_exact(
        &self,
        headers: &[(&str, &str)],
        body: impl Into<reqwest::Body>,
    ) -> Reply {
        let mut req = self.http.post(&self.url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        send(req.body(body)).await
    }

    /// The standard 2026-07-28 request headers for `method`, with
    /// `Mcp-Name` when `name` is given.
    pub fn modern_headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
        let mut headers = vec![
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", MODERN),
            ("mcp-method", method),
        ];
        if let Some(name) = name {
            headers.push(("mcp-name", name));
        }
        headers
    }

    /// Write one HTTP/1.1 request on a fresh TCP connection (with
    /// `Connection: close`) and read the whole reply. For what an HTTP
    /// client library will not send: chunked bodies, foreign Host headers,
    /// bytes that are not UTF-8 in header values.
    pub async fn raw_http(&self, head: &str, body: &[u8]) -> RawReply {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(self.addr)
            .await
            .expect("connect");
        let mut request = head.as_bytes().to_vec();
        request.extend_from_slice(body);
        // The server may answer (and close) before reading everything.
        let _ = stream.write_all(&request).await;
        let _ = stream.flush().await;
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw).await;
        parse_raw_reply(&raw)
    }
}

fn parse_raw_reply(raw: &[u8]) -> RawReply {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"))
    {
        body = dechunk(&body);
    }
    RawReply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = data.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&data[..eol])
                .split(';')
                .next()
                .unwrap_or("0")
                .trim(),
            16,
        )
        .unwrap_or(0);
        if size == 0 || data.len() < eol + 2 + size {
            break;
        }
        out.extend_from_slice(&data[eol + 2..eol + 2 + size]);
        data = &data[(eol + 4 + size).min(data.len())..];
    }
    out
}

// ---------------------------------------------------------------------------
// Inventory fixtures (inventory_search.rs, get_vehicle.rs): stores loaded
// through the library before (or while) a gateway serves them.
// ---------------------------------------------------------------------------

/// A fresh, empty store location for one test: its directory and URL
/// (SQLite, or a fresh PostgreSQL database; see [`test_database_url`]).
pub async fn fresh_database() -> (PathBuf, String) {
    let dir = temp_dir();
    let url = test_database_url(&dir).await;
    (dir, url)
}

/// Import `tests/fixtures/search/<file>` as the dealers file of `store`.
pub async fn load_search_dealers(
    store: &dyn gateway::store::Store,
    file: &str,
    now: chrono::DateTime<chrono::Utc>,
) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/search")
        .join(file);
    let bytes = std::fs::read(&path).expect("dealers fixture");
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let orgs = gateway::dealers::parse(&catalog, file, &bytes, "dealers-file:test", now)
        .unwrap_or_else(|e| panic!("{e}"));
    store
        .upsert_organizations(&orgs)
        .await
        .expect("dealers imported");
}

/// The provenance of one imported test file.
pub fn test_source(name: &str, now: chrono::DateTime<chrono::Utc>) -> gateway::store::SourceRecord {
    gateway::store::SourceRecord {
        source_name: format!("dap-csv:{name}"),
        authority: "dealer_asserted".into(),
        content_digest: format!("sha256:{}", "5e".repeat(32)),
        observed_at: now,
    }
}

/// A plausible published used car observed five minutes before `now`;
/// tests change what they need. `vin_prefix` + 12 digits of `n` make a
/// valid 17-character VIN.
pub fn test_vehicle(
    organization_id: &str,
    rooftop_id: &str,
    vehicle_id: &str,
    vin_prefix: &str,
    n: usize,
    now: chrono::DateTime<chrono::Utc>,
) -> gateway::inventory::model::VehicleRecord {
    use gateway::inventory::model::{DistanceUnit, Odometer, VehicleRecord, VehicleSource};
    assert_eq!(vin_prefix.len(), 5, "VIN prefix has 5 characters");
    let stock = format!("{}{n:04}", &vin_prefix[1..2]);
    VehicleRecord {
        vehicle_id: vehicle_id.to_owned(),
        organization_id: organization_id.to_owned(),
        rooftop_id: rooftop_id.to_owned(),
        vin: Some(format!("{vin_prefix}{n:012}")),
        stock_number: Some(stock.clone()),
        year: 2021,
        make: "Ford".into(),
        model: "F-150".into(),
        trim: Some("XLT".into()),
        condition: "used".into(),
        vehicle_type: Some("truck".into()),
        body_style: Some("Crew Cab Pickup".into()),
        exterior_color: Some("Oxford White".into()),
        interior_color: Some("Black".into()),
        odometer: Some(Odometer {
            value: 18_420,
            unit: DistanceUnit::Mi,
            status: None,
        }),
        powertrain: None,
        features: vec!["Tow package".into()],
        media: vec![],
        listing_url: Some(format!("https://dealer.example/inventory/{stock}")),
        window_sticker_url: None,
        advertised_price: pricing::Money::from_minor(3_249_500, pricing::Currency::USD),
        required_dealer_charges: None,
        conditional_adjustments: None,
        government_charges_status: None,
        availability_status: "available".into(),
        stocked_at: Some(now - chrono::Duration::days(10) - chrono::Duration::hours(1)),
        first_public_listing_at: None,
        history_report_status: None,
        history_reports: vec![],
        certification_type: None,
        used_evidence: Default::default(),
        claims: Default::default(),
        source: VehicleSource {
            source_name: format!("dap-csv:{rooftop_id}.csv"),
            source_record_id: Some(stock),
            authority: "dealer_asserted".into(),
            content_digest: format!("sha256:{}", "5e".repeat(32)),
            observed_at: now - chrono::Duration::minutes(5),
            transformations: vec!["csv row to DAP vehicle".into()],
        },
    }
}

/// The DAP error code of a failed tool call (`None` when it succeeded).
/// Panics on `dealeragent.internal`: the server validates its own outputs,
/// so an invalid one would surface as that code.
pub fn tool_error_code(result: &Value) -> Option<String> {
    let code = result["structuredContent"]["code"]
        .as_str()
        .map(str::to_owned);
    assert_ne!(
        code.as_deref(),
        Some("dealeragent.internal"),
        "internal error (invalid output?): {result}"
    );
    if result["isError"] == json!(true) {
        Some(code.unwrap_or_else(|| panic!("error without a code: {result}")))
    } else {
        None
    }
}

/// Poll `check` (a fresh request each time) until it holds or `deadline`
/// passes; returns whether it held. For data written while a gateway runs
/// with 1-second refresh intervals.
pub async fn poll_until<F, Fut>(deadline: std::time::Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let end = std::time::Instant::now() + deadline;
    loop {
        if check().await {
            return true;
        }
        if std::time::Instant::now() >= end {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Run the real `dealer-gateway` binary against the store at `db` (the CLI
/// half of the harness: imports, tokens, audit, programs, preview).
pub fn run_cli(db: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_dealer-gateway"))
        .args(args)
        .env("DEALER_GATEWAY_DATABASE_URL", db)
        .env("DEALER_GATEWAY_LOG", "warn")
        .output()
        .expect("binary runs")
}

/// A CLI run's stdout then stderr, for assertions and failure messages.
pub fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
