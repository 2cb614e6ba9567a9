//! Shared harness: the real gateway on 127.0.0.1:0 over a fresh store
//! (SQLite, or PostgreSQL when `DEALER_GATEWAY_TEST_POSTGRES_URL` is set),
//! loaded with data a full suite run needs, and the four role tokens made
//! through the gateway's own token code.
//!
//! Data: the demo dealers with one change (Maple Crest Burnaby becomes
//! partner-only, so `other-org` holds a rooftop `inventory` may not read),
//! and generated inventory: every published rooftop observed 30 seconds
//! ago, except half of Lakeshore Grand Rapids, observed 30 hours ago, so
//! that stale records exist (DAP 6.4 checks) and the Lakeshore group
//! search mixes current and stale records across pages.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;

use chrono::{DateTime, Duration, SubsecRound, Utc};
use gateway::auth::RooftopScope;
use gateway::auth::api_token::{self, TokenRequest};
use gateway::config::ServeSettings;
use gateway::inventory::model::{DistanceUnit, Odometer, VehicleRecord, VehicleSource};
use gateway::store::SourceRecord;
use tokio::sync::oneshot;

pub const LAKESHORE: &str = "org.lakeshore-auto-group";
pub const MAPLECREST: &str = "org.maplecrest-motor-group";
pub const CHICAGO: &str = "roof.lakeshore-chicago";
pub const GRAND_RAPIDS: &str = "roof.lakeshore-grand-rapids";
pub const LAKEWOOD: &str = "roof.lakeshore-lakewood";
pub const FLEET: &str = "roof.lakeshore-fleet-wholesale";
pub const TORONTO: &str = "roof.maplecrest-toronto";
pub const BURNABY: &str = "roof.maplecrest-burnaby";

/// The browser origin the test gateway allows (CORS check).
pub const ALLOWED_ORIGIN: &str = "https://agent.conformance.example";

/// Vehicles generated per rooftop.
const PER_ROOFTOP: usize = 12;

/// A running gateway; stopped when dropped.
pub struct TestApp {
    pub addr: SocketAddr,
    pub url: String,
    pub db_dir: PathBuf,
    pub database_url: String,
    _stop: oneshot::Sender<()>,
}

/// A gateway with suite data and the four role tokens.
pub struct Fixture {
    pub app: TestApp,
    /// (role, token) for inventory, pricing-only, partner, other-org.
    pub tokens: Vec<(String, String)>,
}

impl Fixture {
    pub fn token(&self, role: &str) -> String {
        self.tokens
            .iter()
            .find(|(r, _)| r == role)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| panic!("no role {role}"))
    }

    /// Suite options against `url` with every role.
    pub fn options(&self, url: &str, only: Option<&str>) -> conformance::run::RunOptions {
        conformance::run::RunOptions {
            url: url.to_owned(),
            tokens: self.tokens.clone(),
            dap_schemas: None,
            only: only.map(str::to_owned),
            origin: Some(ALLOWED_ORIGIN.to_owned()),
        }
    }
}

/// A fresh temporary directory for one test.
pub fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dap-conformance-test-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
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
/// `./scripts/test`), else SQLite in the test's own directory.
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
            format!("sqlite://{}", dir.join("gateway.sqlite").display())
        }
    }
}

/// The demo dealers with Burnaby made partner-only (the first publication
/// setting after its `rooftop_id` is its own).
fn dealers_yaml() -> String {
    let demo = gateway::app::DEMO_DEALERS;
    let needle = "anonymous_reads: true";
    let burnaby = demo
        .find("rooftop_id: roof.maplecrest-burnaby")
        .expect("burnaby");
    let at = burnaby
        + demo[burnaby..]
            .find(needle)
            .expect("Burnaby is published in the demo");
    let next_rooftop = demo[burnaby + 1..]
        .find("- rooftop_id:")
        .map_or(demo.len(), |i| burnaby + 1 + i);
    assert!(at < next_rooftop, "the publication setting is Burnaby's");
    format!(
        "{}anonymous_reads: false{}",
        &demo[..at],
        &demo[at + needle.len()..]
    )
}

/// A plausible vehicle of `rooftop` observed at `observed_at`.
fn vehicle(
    org: &str,
    rooftop: &str,
    n: usize,
    observed_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> VehicleRecord {
    let canadian = org == MAPLECREST;
    let tag: String = rooftop
        .rsplit('-')
        .next()
        .unwrap_or("x")
        .chars()
        .filter(char::is_ascii_alphabetic)
        .take(3)
        .collect::<String>()
        .to_ascii_uppercase();
    let stock = format!("{tag}{n:04}");
    // 17 characters without I, O or Q: a 5-character prefix + 12 digits.
    let prefix: String = format!("1{tag}XX")
        .replace(['I', 'O', 'Q'], "Z")
        .chars()
        .take(5)
        .collect();
    VehicleRecord {
        vehicle_id: format!("veh.{}.{n:03}", rooftop.trim_start_matches("roof.")),
        organization_id: org.to_owned(),
        rooftop_id: rooftop.to_owned(),
        vin: Some(format!("{prefix}{n:012}")),
        stock_number: Some(stock.clone()),
        year: 2018 + i32::try_from(n % 8).unwrap_or(0),
        make: "Ford".into(),
        model: "F-150".into(),
        trim: Some("XLT".into()),
        condition: if n.is_multiple_of(2) { "used" } else { "new" }.into(),
        vehicle_type: Some("truck".into()),
        body_style: Some("Crew Cab Pickup".into()),
        exterior_color: Some("Oxford White".into()),
        interior_color: Some("Black".into()),
        odometer: Some(Odometer {
            value: 1_000 + 997 * i64::try_from(n).unwrap_or(0),
            unit: if canadian {
                DistanceUnit::Km
            } else {
                DistanceUnit::Mi
            },
            status: None,
        }),
        powertrain: None,
        features: vec!["Tow package".into()],
        media: vec![],
        listing_url: Some(format!("https://dealer.example/inventory/{stock}")),
        window_sticker_url: None,
        advertised_price: pricing::Money::from_minor(
            2_500_000 + 10_000 * i64::try_from(n).unwrap_or(0),
            if canadian {
                pricing::Currency::CAD
            } else {
                pricing::Currency::USD
            },
        ),
        required_dealer_charges: None,
        conditional_adjustments: None,
        government_charges_status: None,
        availability_status: "available".into(),
        stocked_at: Some(now - Duration::days(10)),
        first_public_listing_at: None,
        // The first used unit of every rooftop has two history reports
        // that disagree (the used-vehicle checks need conflicting
        // evidence), the second one report whose summary may not be
        // shared; the others have none (unknown).
        history_report_status: match n {
            0 => Some("conflicting".into()),
            2 => Some("available".into()),
            _ => None,
        },
        history_reports: serde_json::from_value(serde_json::Value::Array(if n == 0 {
            let summary = |accidents: &str| {
                serde_json::json!({"accident_status": accidents, "damage_status": "unknown",
                    "title_brand_status": "unknown", "odometer_consistency": "unknown",
                    "owner_count_status": "unknown"})
            };
            vec![
                serde_json::json!({"provider_id": "com.carfax", "provider_name": "CARFAX",
                    "status": "available", "access": "public_link",
                    "summary_sharing_authorized": true, "summary": summary("no_events_reported")}),
                serde_json::json!({"provider_id": "com.experian.autocheck",
                    "provider_name": "AutoCheck", "status": "available", "access": "on_request",
                    "summary_sharing_authorized": true, "summary": summary("events_reported")}),
            ]
        } else if n == 2 {
            // A report whose summary may not be shared.
            vec![
                serde_json::json!({"provider_id": "com.carfax", "provider_name": "CARFAX",
                "status": "available", "access": "dealer_presented",
                "summary_sharing_authorized": false}),
            ]
        } else {
            vec![]
        }))
        .expect("valid history reports"),
        certification_type: None,
        used_evidence: Default::default(),
        claims: Default::default(),
        source: VehicleSource {
            source_name: format!("dap-csv:{rooftop}.csv"),
            source_record_id: Some(stock),
            authority: "dealer_asserted".into(),
            content_digest: format!("sha256:{}", "5e".repeat(32)),
            observed_at,
            transformations: vec!["csv row to DAP vehicle".into()],
        },
    }
}

/// Start a gateway with the suite data and create the role tokens.
pub async fn setup() -> Fixture {
    let now = Utc::now().trunc_subsecs(0);
    let dir = temp_dir();
    let url = test_database_url(&dir).await;
    let store = gateway::store::open(&url).await.expect("store opens");
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let orgs = gateway::dealers::parse(
        &catalog,
        "dealers.yaml",
        dealers_yaml().as_bytes(),
        "dealers-file:test",
        now,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    store.upsert_organizations(&orgs).await.expect("dealers");
    let recent = now - Duration::seconds(30);
    let long_ago = now - Duration::hours(30);
    for (org, rooftop) in [
        (LAKESHORE, CHICAGO),
        (LAKESHORE, GRAND_RAPIDS),
        (LAKESHORE, LAKEWOOD),
        (LAKESHORE, FLEET),
        (MAPLECREST, TORONTO),
        (MAPLECREST, BURNABY),
    ] {
        let vehicles: Vec<VehicleRecord> = (0..PER_ROOFTOP)
            .map(|n| {
                // Half of Grand Rapids was observed long ago: stale (DAP 6.4).
                let observed = if rooftop == GRAND_RAPIDS && !n.is_multiple_of(2) {
                    long_ago
                } else {
                    recent
                };
                vehicle(org, rooftop, n, observed, now)
            })
            .collect();
        let source = SourceRecord {
            source_name: format!("dap-csv:{rooftop}.csv"),
            authority: "dealer_asserted".into(),
            content_digest: format!("sha256:{}", "5e".repeat(32)),
            observed_at: recent,
        };
        store
            .create_snapshot(org, rooftop, &source, &vehicles)
            .await
            .expect("snapshot");
    }
    let scopes = api_token::known_scopes(&catalog);
    let mut tokens = Vec::new();
    for (role, org, rooftop, granted) in [
        (
            "inventory",
            LAKESHORE,
            CHICAGO,
            &["dealeragent:inventory:read", "dealeragent:pricing:read"][..],
        ),
        (
            "pricing-only",
            LAKESHORE,
            CHICAGO,
            &["dealeragent:pricing:read"][..],
        ),
        (
            "partner",
            LAKESHORE,
            FLEET,
            &["dealeragent:inventory:read"][..],
        ),
        (
            "other-org",
            MAPLECREST,
            BURNABY,
            &["dealeragent:inventory:read", "dealeragent:pricing:read"][..],
        ),
    ] {
        let request = TokenRequest {
            subject: format!("conformance:{role}"),
            organization_id: org.to_owned(),
            rooftops: RooftopScope::Rooftops(BTreeSet::from([rooftop.to_owned()])),
            scopes: granted.iter().map(|s| (*s).to_owned()).collect(),
            purpose: format!("conformance suite role {role}"),
            expires_at: now + Duration::days(1),
        };
        let issued = api_token::create(store.as_ref(), &request, &scopes, Utc::now())
            .await
            .unwrap_or_else(|e| panic!("token for {role}: {e}"));
        tokens.push((role.to_owned(), issued.token));
    }
    let app = spawn_on(dir, url, |s| {
        s.no_demo = true;
        // The suite makes a few hundred calls in seconds from one address.
        s.rate_limit_ip_per_minute = 100_000;
        s.rate_limit_principal_per_minute = 100_000;
        s.anonymous_quota_per_minute = 100_000;
        s.allowed_origins = vec![ALLOWED_ORIGIN.to_owned()];
    })
    .await;
    Fixture { app, tokens }
}

/// Start a gateway on an existing store.
pub async fn spawn_on(
    dir: PathBuf,
    database_url: String,
    adjust: impl FnOnce(&mut ServeSettings),
) -> TestApp {
    let mut settings = ServeSettings::with_listen("127.0.0.1:0".parse().expect("address"));
    adjust(&mut settings);
    let (stop, stopped) = oneshot::channel::<()>();
    let running = gateway::app::spawn(settings, &database_url, async move {
        let _ = stopped.await;
    })
    .await
    .expect("gateway starts");
    TestApp {
        addr: running.addr,
        url: format!("http://{}/mcp", running.addr),
        db_dir: dir,
        database_url,
        _stop: stop,
    }
}

/// The failed and skipped required checks of a report, one line each.
pub fn not_passed(report: &serde_json::Value) -> Vec<String> {
    report["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["required"] == true && c["result"] != "passed")
        .map(|c| format!("{} {}: {}", c["id"], c["result"], c["reason"]))
        .collect()
}

/// The result of check `id` in a report.
pub fn result_of<'a>(report: &'a serde_json::Value, id: &str) -> (&'a str, &'a str) {
    let check = report["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id} in the report"));
    (
        check["result"].as_str().unwrap_or(""),
        check["reason"].as_str().unwrap_or(""),
    )
}
