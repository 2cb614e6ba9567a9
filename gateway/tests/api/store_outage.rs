//! A store outage while the gateway serves: a tool call that must reach the
//! store at request time answers the retryable
//! `dealeragent.upstream.unavailable` with `retry_after_ms`
//! (error.schema.json), never `dealeragent.internal` and never an HTTP 500
//! (the error guide, `gateway::errors`).
//!
//! PostgreSQL: the test starts a cluster of its own (`scripts/pg-cluster`)
//! and stops it while the gateway runs, so every connection is refused; an
//! organization's programs, read on first use, can then not be read.
//! SQLite: the gateway holds its file open, so removing, moving or
//! replacing the file reaches none of its connections, and in WAL mode no
//! other process can keep a reader out. The outage an embedded database
//! really has is another process holding the write lock past the busy
//! timeout (a stuck import): the test takes it with a connection of its
//! own, and an authenticated read, which may not be answered unaudited,
//! cannot write its audit event.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::common::{self, TestApp};

const ORG: &str = "org.lakeshore-auto-group";
const CHICAGO: &str = "roof.lakeshore-chicago";

/// A cluster of this test's own, stopped (and removed) on drop if the test
/// did not stop it.
struct Cluster {
    script: PathBuf,
    dir: Option<String>,
}

impl Cluster {
    fn start() -> (Self, String) {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/pg-cluster");
        let out = std::process::Command::new(&script)
            .arg("start")
            .output()
            .expect("run scripts/pg-cluster start");
        assert!(
            out.status.success(),
            "pg-cluster start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let field = |name: &str| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .unwrap_or_else(|| panic!("no {name} in {stdout}"))
                .to_owned()
        };
        let url = field("url=");
        let dir = field("dir=");
        (
            Self {
                script,
                dir: Some(dir),
            },
            url,
        )
    }

    fn stop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let status = std::process::Command::new(&self.script)
                .args(["stop", &dir])
                .status()
                .expect("run scripts/pg-cluster stop");
            assert!(status.success(), "pg-cluster stop failed");
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = std::process::Command::new(&self.script)
                .args(["stop", &dir])
                .status();
        }
    }
}

/// How the test takes the store away.
enum Outage {
    Postgres(Cluster),
    /// A connection holding SQLite's write lock (`begin immediate`), kept
    /// for as long as the outage lasts.
    Sqlite {
        url: String,
        holder: Option<sqlx::SqliteConnection>,
    },
}

impl Outage {
    async fn begin(&mut self) {
        match self {
            Self::Postgres(cluster) => cluster.stop(),
            Self::Sqlite { url, holder } => {
                use sqlx::Connection as _;
                let mut conn = sqlx::SqliteConnection::connect(url)
                    .await
                    .expect("open the gateway's SQLite file");
                sqlx::query("begin immediate")
                    .execute(&mut conn)
                    .await
                    .expect("take the write lock");
                *holder = Some(conn);
            }
        }
    }
}

fn on_postgres() -> bool {
    std::env::var("DEALER_GATEWAY_TEST_POSTGRES_URL").is_ok_and(|u| !u.is_empty())
}

/// The gateway on a store this test can take away.
async fn spawn_killable() -> (TestApp, Outage) {
    let dir = common::temp_dir();
    if on_postgres() {
        let (cluster, url) = Cluster::start();
        let app = common::spawn_on(dir, url, |_| {}).await;
        (app, Outage::Postgres(cluster))
    } else {
        let url = common::sqlite_url(&dir);
        let app = common::spawn_on(dir, url.clone(), |_| {}).await;
        (app, Outage::Sqlite { url, holder: None })
    }
}

/// A new vehicle of the Chicago rooftop (the demo programs target new
/// cars); loads the directory and the inventory while the store is up.
async fn new_vehicle(app: &TestApp) -> String {
    let result = app
        .call_tool(
            "dealeragent.inventory.search",
            json!({"organization_id": ORG, "rooftop_ids": [CHICAGO],
                   "filters": {"condition": ["new"]}}),
        )
        .await;
    assert_eq!(common::tool_error_code(&result), None, "{result}");
    result["structuredContent"]["vehicles"][0]["vehicle_id"]
        .as_str()
        .expect("a new demo vehicle at Chicago")
        .to_owned()
}

/// The call was answered over HTTP 200 as the tool error
/// `dealeragent.upstream.unavailable`, retryable, with a retry hint.
fn assert_unavailable(reply: &common::Reply) {
    assert_eq!(
        reply.status, 200,
        "an outage is not an HTTP error: {}",
        reply.raw
    );
    let result = reply.result();
    assert_eq!(result["isError"], json!(true), "{result}");
    let error: &Value = &result["structuredContent"];
    assert_eq!(
        error["code"], "dealeragent.upstream.unavailable",
        "a store outage is not an internal error: {error}"
    );
    assert_eq!(error["retryable"], json!(true), "{error}");
    let retry = error["retry_after_ms"]
        .as_u64()
        .unwrap_or_else(|| panic!("no retry_after_ms: {error}"));
    assert!(retry > 0 && retry <= 86_400_000, "{error}");
}

/// A tool call as `token` (none: anonymous).
async fn call(app: &TestApp, token: Option<&str>, name: &str, arguments: Value) -> common::Reply {
    let body = common::modern_body(
        1,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    );
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = TestApp::modern_headers("tools/call", Some(name));
    if let Some(bearer) = bearer.as_deref() {
        headers.push(("authorization", bearer));
    }
    app.post_raw(&headers, body.to_string()).await
}

/// An API token of the demo organization, made with the CLI.
fn token(database_url: &str) -> String {
    let out = common::run_cli(
        database_url,
        &[
            "token",
            "create",
            "--subject",
            "agent:outage",
            "--organization",
            ORG,
            "--scopes",
            "dealeragent:inventory:read,dealeragent:pricing:read",
            "--purpose",
            "store outage test",
            "--expires-in",
            "1d",
            "--rooftops",
            CHICAGO,
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", common::text(&out));
    let created: Value =
        serde_json::from_slice(&out.stdout).expect("token create --json prints one object");
    created["token"].as_str().expect("a token").to_owned()
}

#[tokio::test]
async fn a_killed_store_answers_unavailable_with_a_retry_hint() {
    let (app, mut outage) = spawn_killable().await;
    let vehicle_id = new_vehicle(&app).await;
    let reply = match &outage {
        Outage::Postgres(_) => {
            outage.begin().await;
            // The organization's programs are read from the store on first
            // use (offers::OffersService::programs).
            call(
                &app,
                None,
                "dealergateway.offers.evaluate",
                json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": vehicle_id,
                       "profile": {"payment_mode": "cash", "jurisdiction":
                           {"country": "US", "subdivision": "US-IL", "postal_code": "62701"}}}),
            )
            .await
        }
        Outage::Sqlite { url, .. } => {
            let token = token(url);
            outage.begin().await;
            call(
                &app,
                Some(&token),
                "dealeragent.inventory.search",
                json!({"organization_id": ORG, "rooftop_ids": [CHICAGO]}),
            )
            .await
        }
    };
    assert_unavailable(&reply);
    drop(outage);
}
