//! Three replicas on one PostgreSQL behind a real load balancer
//! (docs/operations.md "Replicas"): nginx from Debian in front of three
//! `dealer-gateway serve` processes (the built binary), started by the test.
//!
//! The replicas poll every 30 s here (directory, inventory, programs), so a
//! change seen within the one-second bound can only have come through
//! LISTEN/NOTIFY. Bounds are asserted generously (1 s plus slack) and the
//! measured figures are printed; nothing here asserts a speed.
//!
//! Needs `DEALER_GATEWAY_TEST_POSTGRES_URL` (an admin URL; each test makes
//! its own database) and `DEALER_GATEWAY_REPLICAS_NGINX` (an nginx binary).
//! `scripts/replicas-check` provides both. Without them every test says so
//! on stderr and passes, unless `REQUIRE_REPLICAS=1`, which makes it fail.
//!
//! `shards`: organization-sharded replicas behind the same nginx
//! (docs/operations.md "Shards"); `balancer`: the nginx both use.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cli_ops::{Served, serve};

mod balancer;
mod shards;
mod subscriptions;

use crate::common::{LEGACY, MODERN, meta, run_cli, temp_dir, test_database_url, text};
use balancer::Balancer;

const ORG: &str = "org.lakeshore-auto-group";
const CHICAGO: &str = "roof.lakeshore-chicago";
const SEARCH: &str = "dealeragent.inventory.search";
/// Only in `lakeshore-changed.csv`: its arrival shows the new snapshot.
const NEW_VIN: &str = "19XFL2H88RE000505";
/// A program no demo program names (the set check accepts it alone).
const BONUS_PROGRAM: &str = "programs:
  - program_id: replica-bonus
    revision: 1
    name: Replica bonus
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 10000, currency: USD}}
    stacking: {group: replica, combinability: stackable}
";

/// The visibility bound of docs/operations.md "Replicas": a change made by
/// one replica or the CLI is seen by every replica within about a second.
const BOUND: Duration = Duration::from_secs(1);
/// What the assertions allow beyond it (a 2-core machine under load).
const SLACK: Duration = Duration::from_millis(1500);

/// What the tests need, or why they cannot run.
struct Needs {
    nginx: PathBuf,
}

fn needs(test: &str) -> Option<Needs> {
    // reqwest needs a process-wide rustls provider; the in-process servers
    // of other tests install it through the gateway, these tests start none.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let nginx = std::env::var("DEALER_GATEWAY_REPLICAS_NGINX")
        .ok()
        .filter(|s| !s.is_empty());
    let postgres = std::env::var("DEALER_GATEWAY_TEST_POSTGRES_URL")
        .ok()
        .filter(|s| !s.is_empty());
    match (nginx, postgres) {
        (Some(nginx), Some(_)) => Some(Needs {
            nginx: PathBuf::from(nginx),
        }),
        (nginx, postgres) => {
            let missing = [
                nginx.is_none().then_some("DEALER_GATEWAY_REPLICAS_NGINX"),
                postgres
                    .is_none()
                    .then_some("DEALER_GATEWAY_TEST_POSTGRES_URL"),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" and ");
            assert!(
                std::env::var("REQUIRE_REPLICAS").as_deref() != Ok("1"),
                "REQUIRE_REPLICAS=1 but {missing} is not set (run scripts/replicas-check)"
            );
            eprintln!(
                "SKIPPED replicas::{test}: {missing} not set; scripts/replicas-check runs these tests \
                 with nginx and PostgreSQL"
            );
            None
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/inventory")
        .join(name)
        .display()
        .to_string()
}

/// Replicas on one fresh PostgreSQL database, and nginx before them.
struct Cluster {
    db: String,
    replicas: Vec<Option<Replica>>,
    /// Each replica's own base URL (`http://127.0.0.1:port`).
    bases: Vec<String>,
    /// The balancer's base URL (over every replica).
    front: String,
    /// Kept for its lifetime (stopped on drop).
    _balancer: Balancer,
    token: String,
}

/// Settings every replica shares: one resource URL (the balancer's), slow
/// polling (so notifications must do the work), and limits a load test
/// from one address does not hit.
fn replica_args(resource_url: &str) -> Vec<String> {
    [
        "--listen",
        "127.0.0.1:0",
        "--resource-url",
        resource_url,
        "--directory-refresh-seconds",
        "30",
        "--inventory-refresh-seconds",
        "30",
        "--programs-refresh-seconds",
        "30",
        "--rate-limit-ip-per-minute",
        "1000000",
        "--rate-limit-principal-per-minute",
        "1000000",
        "--anonymous-quota-per-minute",
        "1000000",
        "--max-connections-per-address",
        "4096",
        "--max-connections",
        "4096",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

async fn start_replica(db: &str, args: &[String]) -> Replica {
    match std::env::var("DEALER_GATEWAY_REPLICAS_BIN") {
        // A release binary for the throughput figures (scripts/bench-replicas).
        Ok(bin) if !bin.is_empty() => {
            let mut child = tokio::process::Command::new(&bin)
                .arg("serve")
                .args(args)
                .env("DEALER_GATEWAY_DATABASE_URL", db)
                .env("DEALER_GATEWAY_LOG", "warn")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::inherit())
                .kill_on_drop(true)
                .spawn()
                .expect("the replica binary runs");
            use tokio::io::AsyncBufReadExt as _;
            let mut stdout =
                tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
            let base = tokio::time::timeout(Duration::from_secs(60), async {
                while let Ok(Some(line)) = stdout.next_line().await {
                    if let Some(rest) = line.split("listening on http://").nth(1) {
                        return rest.split("/mcp").next().map(|a| format!("http://{a}"));
                    }
                }
                None
            })
            .await
            .ok()
            .flatten()
            .expect("the replica prints its address");
            tokio::spawn(async move { while let Ok(Some(_)) = stdout.next_line().await {} });
            Replica::Binary { child, base }
        }
        _ => {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            match serve(db, &args, &[("DEALER_GATEWAY_LOG", "warn")]).await {
                Ok(served) => Replica::Test(served),
                Err(_) => panic!("a replica did not start"),
            }
        }
    }
}

/// A running replica process.
enum Replica {
    /// The test build's binary (`cli_ops::serve`).
    Test(Served),
    /// `DEALER_GATEWAY_REPLICAS_BIN`.
    Binary {
        child: tokio::process::Child,
        base: String,
    },
}

impl Replica {
    fn base(&self) -> String {
        match self {
            Self::Test(served) => served.base.clone(),
            Self::Binary { base, .. } => base.clone(),
        }
    }

    fn child(&mut self) -> &mut tokio::process::Child {
        match self {
            Self::Test(served) => &mut served.child,
            Self::Binary { child, .. } => child,
        }
    }
}

impl Cluster {
    async fn start(needs: &Needs, n: usize) -> Self {
        let dir = temp_dir();
        let db = test_database_url(&dir).await;
        assert!(db.starts_with("postgres"), "replicas share PostgreSQL");
        let port = free_port();
        let front = format!("http://127.0.0.1:{port}");
        let args = replica_args(&format!("{front}/mcp"));
        // The first replica seeds the empty store (the bundled demo); the
        // others start on what it wrote.
        let mut replicas = vec![start_replica(&db, &args).await];
        for _ in 1..n {
            replicas.push(start_replica(&db, &args).await);
        }
        let bases: Vec<String> = replicas.iter().map(Replica::base).collect();
        let backends: Vec<String> = bases
            .iter()
            .map(|b| b.trim_start_matches("http://").to_owned())
            .collect();
        let balancer = Balancer::start(&needs.nginx, &backends, &[(port, n)]).await;
        let out = run_cli(
            &db,
            &[
                "token",
                "create",
                "--subject",
                "agent:replicas",
                "--organization",
                ORG,
                "--scopes",
                "dealeragent:inventory:read,dealeragent:pricing:read",
                "--purpose",
                "replica test",
                "--expires-in",
                "1d",
                "--group",
            ],
        );
        assert!(out.status.success(), "{}", text(&out));
        let token = token_of(&out);
        Self {
            db,
            replicas: replicas.into_iter().map(Some).collect(),
            bases,
            front,
            _balancer: balancer,
            token,
        }
    }

    /// SIGKILL replica `i` (no graceful shutdown: its connections reset).
    async fn kill(&mut self, i: usize) {
        if let Some(mut replica) = self.replicas[i].take() {
            replica.child().start_kill().expect("kill a replica");
            let _ = replica.child().wait().await;
        }
    }
}

fn token_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find(|w| w.starts_with("dgw_"))
        .expect("the token is printed")
        .to_owned()
}

/// One MCP client (modern requests, an optional bearer token).
#[derive(Clone)]
struct Client {
    http: reqwest::Client,
}

impl Client {
    fn new() -> Self {
        Self {
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(64)
                .build()
                .expect("client"),
        }
    }

    /// A tool call at `base`; `Err` names what went wrong (transport,
    /// status, JSON-RPC error).
    async fn tool(
        &self,
        base: &str,
        token: Option<&str>,
        name: &str,
        args: Value,
    ) -> Result<Value, String> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": args, "_meta": meta()}});
        let mut req = self
            .http
            .post(format!("{base}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", "tools/call")
            .header("mcp-name", name)
            .body(body.to_string());
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        let resp = req.send().await.map_err(|e| format!("transport: {e}"))?;
        let status = resp.status().as_u16();
        let raw = resp.text().await.map_err(|e| format!("body: {e}"))?;
        let value: Value = serde_json::from_str(&raw).map_err(|_| format!("{status}: {raw}"))?;
        if status != 200 || value.get("error").is_some() {
            return Err(format!("{status}: {raw}"));
        }
        Ok(value["result"].clone())
    }

    /// A search that must succeed: its `structuredContent`.
    async fn search(&self, base: &str, token: &str, args: Value) -> Result<Value, String> {
        let result = self.tool(base, Some(token), SEARCH, args).await?;
        if result["isError"] == json!(true) {
            return Err(format!("tool error: {result}"));
        }
        Ok(result["structuredContent"].clone())
    }

    /// True when a search for [`NEW_VIN`] at `base` finds it.
    async fn sees_new_vin(&self, base: &str, token: &str) -> bool {
        let args = json!({"organization_id": ORG, "rooftop_ids": [CHICAGO],
            "filters": {"vin": NEW_VIN}});
        self.search(base, token, args)
            .await
            .is_ok_and(|page| page["vehicles"].as_array().is_some_and(|v| v.len() == 1))
    }

    async fn legacy(
        &self,
        base: &str,
        session: Option<&str>,
        body: Value,
    ) -> Result<(u16, reqwest::header::HeaderMap, Value), String> {
        let mut req = self
            .http
            .post(format!("{base}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(session) = session {
            req = req
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", LEGACY);
        }
        let resp = req.send().await.map_err(|e| format!("transport: {e}"))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let raw = resp.text().await.map_err(|e| format!("body: {e}"))?;
        Ok((
            status,
            headers,
            serde_json::from_str(&raw).unwrap_or(Value::Null),
        ))
    }
}

/// Mixed load through the balancer until stopped: searches with a token,
/// anonymous manifest reads and legacy sessions (initialize, tools/list).
/// Counts what succeeded and what failed.
struct Load {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    failed: Arc<std::sync::Mutex<Vec<String>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(front: &str, token: &str, workers: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let ok = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(std::sync::Mutex::new(Vec::new()));
        let tasks = (0..workers)
            .map(|w| {
                let (stop, ok, failed) = (stop.clone(), ok.clone(), failed.clone());
                let (front, token) = (front.to_owned(), token.to_owned());
                tokio::spawn(async move {
                    let client = Client::new();
                    let mut n = 0_u64;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        let outcome = match (w as u64 + n) % 3 {
                            0 => client
                                .search(
                                    &front,
                                    &token,
                                    json!({"organization_id": ORG, "page": {"limit": 5}}),
                                )
                                .await
                                .map(|_| 1),
                            1 => client
                                .tool(
                                    &front,
                                    None,
                                    "dealeragent.discovery.get_manifest",
                                    json!({}),
                                )
                                .await
                                .map(|_| 1),
                            _ => legacy_round(&client, &front).await.map(|()| 2),
                        };
                        match outcome {
                            Ok(requests) => {
                                ok.fetch_add(requests, Ordering::Relaxed);
                            }
                            Err(e) => failed
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .push(e),
                        }
                    }
                })
            })
            .collect();
        Self {
            stop,
            ok,
            failed,
            tasks,
        }
    }

    /// Stop and return (succeeded, failures).
    async fn finish(self) -> (u64, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            let _ = t.await;
        }
        let failed = self
            .failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        (self.ok.load(Ordering::Relaxed), failed)
    }
}

/// initialize + tools/list in one legacy session, both through `base`.
async fn legacy_round(client: &Client, base: &str) -> Result<(), String> {
    let (status, headers, body) = client.legacy(base, None, initialize_body()).await?;
    let session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| format!("initialize {status}: {body}"))?
        .to_owned();
    let (status, _, body) = client
        .legacy(
            base,
            Some(&session),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        .await?;
    if status != 200 || body["result"]["tools"].as_array().is_none_or(Vec::is_empty) {
        return Err(format!("tools/list in session {status}: {body}"));
    }
    Ok(())
}

fn initialize_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "replicas", "version": "0"}}})
}

/// Poll every replica for `check` every 10 ms; the time each took to hold
/// (`None`: not within `deadline`).
async fn time_on_each<F, Fut>(
    bases: &[String],
    deadline: Duration,
    check: F,
) -> Vec<Option<Duration>>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    let mut out = Vec::new();
    let waits = bases.iter().map(|base| {
        let check = &check;
        async move {
            loop {
                if check(base.clone()).await {
                    return Some(started.elapsed());
                }
                if started.elapsed() > deadline {
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    });
    for t in futures_join_all(waits).await {
        out.push(t);
    }
    out
}

/// `join_all` without a dependency: each future on its own task would need
/// `'static`; polling them together in one task is enough here.
async fn futures_join_all<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let mut pinned: Vec<std::pin::Pin<Box<F>>> = futures.map(Box::pin).collect();
    let mut results: Vec<Option<F::Output>> = pinned.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in pinned.iter_mut().enumerate() {
            if results[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => results[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    results.into_iter().flatten().collect()
}

fn millis(d: Option<Duration>) -> String {
    d.map_or_else(|| "never".to_owned(), |d| format!("{} ms", d.as_millis()))
}

/// Under mixed load through the balancer: an inventory import and a
/// dealers import through the CLI are served by every replica within the
/// bound, and a revoked token is refused by every replica within it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_changes_and_a_revocation_reach_every_replica_within_the_bound() {
    let Some(needs) = needs("cli_changes_and_a_revocation_reach_every_replica_within_the_bound")
    else {
        return;
    };
    let cluster = Cluster::start(&needs, 3).await;
    let client = Client::new();
    for base in &cluster.bases {
        assert!(!client.sees_new_vin(base, &cluster.token).await);
    }
    let load = Load::start(&cluster.front, &cluster.token, 6);
    tokio::time::sleep(Duration::from_millis(500)).await;

    // 1. A new inventory snapshot.
    let started = Instant::now();
    let out = run_cli(
        &cluster.db,
        &[
            "import",
            "inventory",
            &fixture("lakeshore-changed.csv"),
            "--organization",
            ORG,
            "--rooftop",
            CHICAGO,
            // 3 rows replace the demo's Chicago stock: past the removal
            // guard (docs/inventory-feeds.md "The removal guard").
            "--allow-removals",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let import_took = started.elapsed();
    let token = cluster.token.clone();
    let seen = time_on_each(&cluster.bases, BOUND + SLACK, |base| {
        let (client, token) = (client.clone(), token.clone());
        async move { client.sees_new_vin(&base, &token).await }
    })
    .await;
    eprintln!(
        "inventory import (CLI took {} ms): visible on the replicas {} after the CLI exited",
        import_took.as_millis(),
        seen.iter()
            .map(|d| millis(*d))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (i, t) in seen.iter().enumerate() {
        assert!(
            t.is_some(),
            "replica {i} did not serve the new snapshot within {:?}",
            BOUND + SLACK
        );
    }

    // 2. A dealers import: a rooftop renamed.
    let demo =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/dealers.yaml"))
            .expect("demo dealers");
    let renamed = "Lakeshore Honda Chicago (renamed)";
    let changed = demo.replacen(
        "name: Lakeshore Honda Chicago",
        &format!("name: {renamed}"),
        1,
    );
    assert_ne!(
        changed, demo,
        "the demo names the rooftop 'Lakeshore Honda Chicago'"
    );
    let dir = temp_dir();
    let file = dir.join("dealers.yaml");
    std::fs::write(&file, changed).expect("write dealers");
    let out = run_cli(
        &cluster.db,
        &["import", "dealers", &file.display().to_string()],
    );
    assert!(out.status.success(), "{}", text(&out));
    let seen = time_on_each(&cluster.bases, BOUND + SLACK, |base| {
        let client = client.clone();
        async move {
            client
                .tool(
                    &base,
                    None,
                    "dealeragent.dealer.get",
                    json!({"organization_id": ORG}),
                )
                .await
                .is_ok_and(|r| r.to_string().contains(renamed))
        }
    })
    .await;
    eprintln!(
        "dealers import: visible on the replicas {} after the CLI exited",
        seen.iter()
            .map(|d| millis(*d))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (i, t) in seen.iter().enumerate() {
        assert!(
            t.is_some(),
            "replica {i} did not serve the dealers import within the bound"
        );
    }

    // 3. A programs import: a new program reaches every replica's offer
    // evaluations.
    let vehicle = client
        .search(
            &cluster.bases[0],
            &cluster.token,
            json!({"organization_id": ORG, "rooftop_ids": [CHICAGO], "filters": {"vin": NEW_VIN}}),
        )
        .await
        .expect("search")["vehicles"][0]["vehicle_id"]
        .as_str()
        .expect("the imported vehicle")
        .to_owned();
    let evaluates_bonus = |base: String| {
        let (client, token, vehicle) = (client.clone(), token.clone(), vehicle.clone());
        async move {
            client
                .tool(
                    &base,
                    Some(&token),
                    "dealergateway.offers.evaluate",
                    json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": vehicle,
                           "profile": {"payment_mode": "cash", "jurisdiction": {"country": "US"}}}),
                )
                .await
                .is_ok_and(|r| r["structuredContent"].to_string().contains("replica-bonus"))
        }
    };
    for base in &cluster.bases {
        assert!(
            !evaluates_bonus(base.clone()).await,
            "not offered before the import"
        );
    }
    let programs = dir.join("programs.yaml");
    std::fs::write(&programs, BONUS_PROGRAM).expect("write programs");
    let out = run_cli(
        &cluster.db,
        &[
            "import",
            "programs",
            &programs.display().to_string(),
            "--organization",
            ORG,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let seen = time_on_each(&cluster.bases, BOUND + SLACK, evaluates_bonus).await;
    eprintln!(
        "programs import: evaluated by the replicas {} after the CLI exited",
        seen.iter()
            .map(|d| millis(*d))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (i, t) in seen.iter().enumerate() {
        assert!(
            t.is_some(),
            "replica {i} did not evaluate the imported program within the bound"
        );
    }

    // 4. A revoked token.
    let (token_id, _) = gateway::auth::api_token::parse(&cluster.token).expect("a token");
    let token_id = token_id.to_owned();
    let out = run_cli(&cluster.db, &["token", "revoke", &token_id]);
    assert!(out.status.success(), "{}", text(&out));
    let refused = time_on_each(&cluster.bases, BOUND + SLACK, |base| {
        let (client, token) = (client.clone(), token.clone());
        async move {
            client
                .search(&base, &token, json!({"organization_id": ORG}))
                .await
                .is_err_and(|e| e.starts_with("401"))
        }
    })
    .await;
    eprintln!(
        "token revoked: refused by the replicas {} after the CLI exited",
        refused
            .iter()
            .map(|d| millis(*d))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (i, t) in refused.iter().enumerate() {
        assert!(t.is_some(), "replica {i} still accepts the revoked token");
    }

    let (ok, failed) = load.finish().await;
    // The load's searches used the revoked token: those after the
    // revocation are refused (401), which is the point; anything else is a
    // failure.
    let unexpected: Vec<&String> = failed.iter().filter(|e| !e.starts_with("401")).collect();
    eprintln!(
        "mixed load meanwhile: {ok} requests succeeded, {} refused after the revocation",
        failed.len() - unexpected.len()
    );
    assert!(
        unexpected.is_empty(),
        "requests failed under load: {unexpected:?}"
    );
    assert!(ok > 0);
    drop(cluster);
}

/// A cursor opened on one replica continues on the others; a legacy
/// session opened on one is used on the others, and once terminated on one
/// it is 404 on every replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursors_and_legacy_sessions_continue_on_another_replica() {
    let Some(needs) = needs("cursors_and_legacy_sessions_continue_on_another_replica") else {
        return;
    };
    let cluster = Cluster::start(&needs, 3).await;
    let client = Client::new();
    let token = &cluster.token;
    let args = json!({"organization_id": ORG, "sort": {"field": "year", "order": "desc"}});

    // The whole walk on one replica, then page by page round the replicas.
    let walk = |rotate: bool| {
        let (client, args) = (client.clone(), args.clone());
        let bases = cluster.bases.clone();
        async move {
            let mut ids = Vec::new();
            let mut cursor: Option<String> = None;
            for page_no in 0.. {
                let base = if rotate {
                    &bases[page_no % bases.len()]
                } else {
                    &bases[0]
                };
                let mut a = args.clone();
                a["page"] = match &cursor {
                    Some(c) => json!({"limit": 3, "cursor": c}),
                    None => json!({"limit": 3}),
                };
                let page = client.search(base, token, a).await.expect("a page");
                ids.extend(
                    page["vehicles"]
                        .as_array()
                        .expect("vehicles")
                        .iter()
                        .map(|v| v["vehicle_id"].as_str().unwrap_or_default().to_owned()),
                );
                cursor = page["page"]["next_cursor"].as_str().map(str::to_owned);
                if cursor.is_none() {
                    return (ids, page_no + 1);
                }
                assert!(page_no < 200, "the walk ends");
            }
            unreachable!()
        }
    };
    let (one, pages) = walk(false).await;
    let (round, _) = walk(true).await;
    assert!(pages >= 3, "the walk crosses every replica ({pages} pages)");
    assert_eq!(round, one, "no gap, no overlap across replicas");

    // A legacy session: initialize on replica 0, initialized on 1, used on
    // 2 and through the balancer.
    let (status, headers, _) = client
        .legacy(&cluster.bases[0], None, initialize_body())
        .await
        .expect("initialize");
    assert_eq!(status, 200);
    let session = headers["mcp-session-id"]
        .to_str()
        .expect("session id")
        .to_owned();
    let (status, _, _) = client
        .legacy(
            &cluster.bases[1],
            Some(&session),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await
        .expect("initialized");
    assert_eq!(status, 202);
    for base in [&cluster.bases[2], &cluster.front, &cluster.bases[0]] {
        let (status, _, body) = client
            .legacy(
                base,
                Some(&session),
                json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
            )
            .await
            .expect("tools/list");
        assert_eq!(status, 200, "{body}");
        assert!(
            body["result"]["tools"]
                .as_array()
                .is_some_and(|t| !t.is_empty())
        );
    }
    // Terminated on replica 1: 404 everywhere at once.
    let deleted = client
        .http
        .delete(format!("{}/mcp", cluster.bases[1]))
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status().as_u16(), 200);
    for base in cluster.bases.iter().chain([&cluster.front]) {
        let (status, _, _) = client
            .legacy(
                base,
                Some(&session),
                json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
            )
            .await
            .expect("ping");
        assert_eq!(status, 404, "a terminated session is 404 on {base}");
    }
    drop(cluster);
}

/// Killing one replica (SIGKILL) mid-load loses no request: nginx retries
/// what the dead replica did not answer on another one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_replica_mid_load_loses_no_request() {
    let Some(needs) = needs("killing_a_replica_mid_load_loses_no_request") else {
        return;
    };
    let mut cluster = Cluster::start(&needs, 3).await;
    let load = Load::start(&cluster.front, &cluster.token, 8);
    tokio::time::sleep(Duration::from_secs(2)).await;
    cluster.kill(1).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (ok, failed) = load.finish().await;
    eprintln!(
        "killed replica 1 mid-load: {ok} requests succeeded, {} failed",
        failed.len()
    );
    assert!(failed.is_empty(), "lost requests: {failed:?}");
    assert!(ok > 100, "the load ran ({ok} requests)");
    // The survivors still serve.
    let client = Client::new();
    for i in [0, 2] {
        client
            .search(
                &cluster.bases[i],
                &cluster.token,
                json!({"organization_id": ORG}),
            )
            .await
            .expect("a surviving replica serves");
    }
    drop(cluster);
}

/// Throughput of 1, 2 and 3 replicas behind one nginx (docs/benchmarks.md
/// "Replicas").
/// A measurement, not a check: `scripts/bench-replicas` runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement; run by scripts/bench-replicas"]
async fn throughput_of_one_two_and_three_replicas() {
    let Some(needs) = needs("throughput_of_one_two_and_three_replicas") else {
        return;
    };
    let seconds: u64 = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let workers: usize = std::env::var("BENCH_WORKERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16);
    let cluster = Cluster::start(&needs, 3).await;
    let backends: Vec<String> = cluster
        .bases
        .iter()
        .map(|b| b.trim_start_matches("http://").to_owned())
        .collect();
    let ports = [free_port(), free_port(), free_port()];
    let balancer = Balancer::start(
        &needs.nginx,
        &backends,
        &[(ports[0], 1), (ports[1], 2), (ports[2], 3)],
    )
    .await;
    println!(
        "workers={workers} seconds={seconds} (load generator, nginx, 3 replicas and PostgreSQL share 2 cores)"
    );
    for (i, port) in ports.iter().enumerate() {
        let front = format!("http://127.0.0.1:{port}");
        // Warm-up: every replica's caches.
        let warm = Load::start(&front, &cluster.token, workers);
        tokio::time::sleep(Duration::from_secs(2)).await;
        let _ = warm.finish().await;
        let started = Instant::now();
        let load = Load::start(&front, &cluster.token, workers);
        tokio::time::sleep(Duration::from_secs(seconds)).await;
        let (ok, failed) = load.finish().await;
        let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        println!(
            "replicas={} requests={ok} failed={} rate={}/s",
            i + 1,
            failed.len(),
            ok * 1000 / elapsed_ms.max(1)
        );
    }
    drop(balancer);
    drop(cluster);
}
