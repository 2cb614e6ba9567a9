//! The change hub end to end on the real server and store (docs/mcp.md
//! "Subscriptions"): a stream opened through the running gateway's state,
//! a real CLI import into the same store, and the notices it produces.
//! The SSE transports over HTTP are tested with them (`subscriptions/listen`,
//! the legacy GET stream); this file tests what reaches a stream.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use gateway::auth::{Credential, Grant, Principal, RooftopScope};
use gateway::watch::{Notice, Stream, WatchError};

use crate::common::{fresh_database, run_cli, text};

const LAKESHORE: &str = "org.lakeshore-auto-group";
const MAPLECREST: &str = "org.maplecrest-motor-group";
const CHICAGO: &str = "roof.lakeshore-chicago";
const FLEET: &str = "roof.lakeshore-fleet-wholesale";

/// The gateway on `db` in this process (the tests watch through its
/// state); it shuts down when the sender is used or dropped.
async fn start(db: &str) -> (gateway::app::Running, tokio::sync::oneshot::Sender<()>) {
    let settings = gateway::config::ServeSettings::with_listen("127.0.0.1:0".parse().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = gateway::app::spawn(settings, db, async move {
        let _ = stopped.await;
    })
    .await
    .expect("gateway starts");
    (running, stop)
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/inventory")
        .join(name)
        .display()
        .to_string()
}

/// The Lakeshore rows of `lakeshore.csv` whose stock numbers are in
/// `stocks`, moved to the private fleet rooftop, as a file in `dir`.
fn fleet_file(dir: &Path, name: &str, stocks: &[&str]) -> String {
    let source = std::fs::read_to_string(fixture("lakeshore.csv")).unwrap();
    let mut lines = source.lines();
    let mut out = vec![lines.next().unwrap().to_owned()];
    for line in lines {
        if stocks.iter().any(|s| line.contains(&format!(",{s},"))) {
            out.push(line.replace(CHICAGO, FLEET));
        }
    }
    let path = dir.join(name);
    std::fs::write(&path, out.join("\n") + "\n").unwrap();
    path.display().to_string()
}

fn import(db: &str, file: &str, extra: &[&str]) {
    let mut args = vec!["import", "inventory", file, "--organization", LAKESHORE];
    args.extend_from_slice(extra);
    let out = run_cli(db, &args);
    assert!(out.status.success(), "{}", text(&out));
}

fn grant(organization_id: &str, rooftops: RooftopScope, scopes: &[&str]) -> Principal {
    Principal::Authenticated(Arc::new(Grant {
        subject: format!("test:{organization_id}:{rooftops:?}"),
        audience: "unused".to_owned(),
        organization_id: organization_id.to_owned(),
        rooftops,
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        purpose: "watch test".to_owned(),
        expires_at: Utc::now() + chrono::Duration::hours(1),
        delegation: Vec::new(),
        credential: Credential::ApiToken {
            token_id: "tok_test".to_owned(),
        },
    }))
}

fn vehicle_uri(rooftop: &str, vehicle_id: &str) -> String {
    format!("dealeragent://organization/{LAKESHORE}/rooftop/{rooftop}/vehicle/{vehicle_id}")
}

/// The vehicle id of stock number `stock` in the newest snapshot.
async fn vehicle_id(db: &str, rooftop: &str, stock: &str) -> String {
    let store = gateway::store::open(db).await.unwrap();
    let history = store.snapshot_history(LAKESHORE, rooftop, 1).await.unwrap();
    store
        .snapshot_vehicles(&history[0].snapshot_id)
        .await
        .unwrap()
        .into_iter()
        .find(|v| v.stock_number.as_deref() == Some(stock))
        .unwrap()
        .vehicle_id
}

/// Every notice that arrives within `within`, stopping early once `done`
/// holds for what was collected.
async fn collect(
    stream: &mut Stream,
    within: Duration,
    done: impl Fn(&[(String, Vec<&'static str>, String)]) -> bool,
) -> Vec<(String, Vec<&'static str>, String)> {
    let mut got = Vec::new();
    let until = tokio::time::Instant::now() + within;
    while !done(&got) {
        match tokio::time::timeout_at(until, stream.next()).await {
            Ok(Ok(Notice::Updated {
                uri,
                kinds,
                snapshot_version,
            })) => got.push((uri, kinds, snapshot_version)),
            Ok(Ok(Notice::ListChanged)) => {}
            Ok(Err(reason)) => panic!("stream ended: {reason:?}"),
            Err(_) => break,
        }
    }
    got
}

#[tokio::test]
async fn a_cli_import_notifies_price_changed_and_removed_and_never_a_private_rooftop() {
    let (dir, db) = fresh_database().await;
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/dealers.yaml");
    let out = run_cli(&db, &["import", "dealers", &demo.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out));
    import(&db, &fixture("lakeshore.csv"), &[]);
    import(
        &db,
        &fleet_file(&dir, "fleet-1.csv", &["LC1001"]),
        &["--rooftop", FLEET],
    );
    let repriced = vehicle_id(&db, CHICAGO, "LC1002").await;
    let gone = vehicle_id(&db, CHICAGO, "LC1003").await;
    let private = vehicle_id(&db, FLEET, "LC1001").await;

    let (running, _stop) = start(&db).await;
    let state = running.state.clone();
    let hub = state.watch.clone();

    // Authorized like a read, before any lookup: the same refusal for a
    // private rooftop, a foreign grant, a missing scope, a rooftop named
    // under the wrong organization and a malformed URI.
    let mut anonymous = hub.open(&Principal::Anonymous).unwrap();
    let refused = [
        vehicle_uri(FLEET, &private),
        format!("dealeragent://organization/{LAKESHORE}/rooftop/{FLEET}"),
        format!("dealeragent://organization/{MAPLECREST}/rooftop/{CHICAGO}/vehicle/{repriced}"),
        "dealeragent://organization/org.absent".to_owned(),
        "https://example.com/x".to_owned(),
    ];
    let mut words = BTreeSet::new();
    for uri in &refused {
        let e = anonymous.subscribe(&state, uri).await.unwrap_err();
        assert!(matches!(e, WatchError::NotReadable), "{uri}: {e:?}");
        assert!(!e.to_string().contains(uri.as_str()));
        words.insert(e.to_string());
    }
    assert_eq!(words.len(), 1, "one answer for every refusal: {words:?}");
    let foreign = grant(
        MAPLECREST,
        RooftopScope::Group,
        &["dealeragent:inventory:read"],
    );
    let mut foreign_stream = hub.open(&foreign).unwrap();
    assert!(matches!(
        foreign_stream
            .subscribe(&state, &vehicle_uri(FLEET, &private))
            .await,
        Err(WatchError::NotReadable)
    ));
    let unscoped = grant(LAKESHORE, RooftopScope::Group, &[]);
    let mut unscoped_stream = hub.open(&unscoped).unwrap();
    assert!(matches!(
        unscoped_stream
            .subscribe(&state, &vehicle_uri(CHICAGO, &repriced))
            .await,
        Err(WatchError::NotReadable)
    ));

    // A vehicle id that does not exist in a visible rooftop is accepted
    // (existence is not revealed) and never notified.
    let org_uri = format!("dealeragent://organization/{LAKESHORE}");
    for uri in [
        vehicle_uri(CHICAGO, &repriced),
        vehicle_uri(CHICAGO, &gone),
        vehicle_uri(CHICAGO, "veh.does-not-exist"),
        org_uri.clone(),
    ] {
        anonymous.subscribe(&state, &uri).await.unwrap();
    }
    let partner = grant(
        LAKESHORE,
        RooftopScope::Group,
        &["dealeragent:inventory:read"],
    );
    let mut partner_stream = hub.open(&partner).unwrap();
    partner_stream.subscribe(&state, &org_uri).await.unwrap();
    partner_stream
        .subscribe(&state, &vehicle_uri(FLEET, &private))
        .await
        .unwrap();

    // The private rooftop changes first: its reader is told, the anonymous
    // subscriber of the organization is not.
    let started = Instant::now();
    import(
        &db,
        &fleet_file(&dir, "fleet-2.csv", &["LC1001", "LC1002"]),
        &["--rooftop", FLEET],
    );
    let seen = collect(&mut partner_stream, Duration::from_secs(10), |got| {
        got.iter().any(|(u, _, _)| *u == org_uri)
    })
    .await;
    assert!(
        seen.iter()
            .any(|(u, k, _)| *u == org_uri && k.contains(&"inventory_changed")),
        "{seen:?}"
    );
    let fleet_latency = started.elapsed();
    // Delivered in the same pass as the partner's: nothing for anonymous.
    let leaked = collect(&mut anonymous, Duration::from_millis(1500), |got| {
        !got.is_empty()
    })
    .await;
    assert!(
        leaked.is_empty(),
        "a private rooftop's change reached anonymous: {leaked:?}"
    );

    // Then Chicago: LC1002 repriced, LC1003 gone (lakeshore-changed.csv).
    let started = Instant::now();
    import(
        &db,
        &fixture("lakeshore-changed.csv"),
        &["--rooftop", CHICAGO],
    );
    let seen = collect(&mut anonymous, Duration::from_secs(10), |got| {
        got.iter()
            .any(|(u, _, _)| *u == vehicle_uri(CHICAGO, &repriced))
            && got
                .iter()
                .any(|(u, _, _)| *u == vehicle_uri(CHICAGO, &gone))
    })
    .await;
    let latency = started.elapsed();
    let kinds_of = |uri: &str| -> Vec<&'static str> {
        seen.iter()
            .filter(|(u, _, _)| u == uri)
            .flat_map(|(_, k, _)| k.clone())
            .collect()
    };
    // lakeshore-changed.csv also moves LC1002 off hold.
    assert_eq!(
        kinds_of(&vehicle_uri(CHICAGO, &repriced)),
        vec!["availability_changed", "price_changed"],
        "{seen:?}"
    );
    assert_eq!(
        kinds_of(&vehicle_uri(CHICAGO, &gone)),
        vec!["removed"],
        "{seen:?}"
    );
    assert!(kinds_of(&vehicle_uri(CHICAGO, "veh.does-not-exist")).is_empty());
    // The organization notice names only Chicago's change: the anonymous
    // subscriber never heard of the fleet import before it.
    let org_notices: Vec<_> = seen.iter().filter(|(u, _, _)| *u == org_uri).collect();
    assert!(org_notices.len() <= 1, "{seen:?}");
    let versions: BTreeSet<&str> = seen
        .iter()
        .filter(|(u, _, _)| u.contains("/vehicle/"))
        .map(|(_, _, v)| v.as_str())
        .collect();
    assert_eq!(versions.len(), 1, "one snapshot version: {seen:?}");
    eprintln!(
        "notified after the CLI import returned: private rooftop {fleet_latency:?}, chicago {latency:?}"
    );
    drop(running);
}

#[tokio::test]
async fn a_dealers_file_import_notifies_dealer_changed_and_the_list_change_to_whom_it_concerns() {
    let (dir, db) = fresh_database().await;
    let demo_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/dealers.yaml");
    let out = run_cli(
        &db,
        &["import", "dealers", &demo_path.display().to_string()],
    );
    assert!(out.status.success(), "{}", text(&out));
    let (running, _stop) = start(&db).await;
    let state = running.state.clone();
    let hub = state.watch.clone();

    let org_uri = format!("dealeragent://organization/{LAKESHORE}");
    let fleet_uri = format!("dealeragent://organization/{LAKESHORE}/rooftop/{FLEET}");
    let maplecrest_uri = format!("dealeragent://organization/{MAPLECREST}");
    let mut anonymous = hub.open(&Principal::Anonymous).unwrap();
    anonymous.want_list_changed(true);
    anonymous.subscribe(&state, &org_uri).await.unwrap();
    anonymous.subscribe(&state, &maplecrest_uri).await.unwrap();
    anonymous
        .subscribe(&state, gateway::watch::uri::MANIFEST_URI)
        .await
        .unwrap();
    // A Lakeshore group partner already reads the fleet rooftop: its list
    // does not change, and neither does Maplecrest's record.
    let foreign = grant(
        LAKESHORE,
        RooftopScope::Group,
        &["dealeragent:inventory:read"],
    );
    let mut foreign_stream = hub.open(&foreign).unwrap();
    foreign_stream.want_list_changed(true);
    foreign_stream
        .subscribe(&state, &maplecrest_uri)
        .await
        .unwrap();

    // The fleet rooftop is published to anonymous readers.
    let demo = std::fs::read_to_string(&demo_path).unwrap();
    let private = "publication:\n            anonymous_reads: false";
    assert_eq!(demo.matches(private).count(), 1);
    let opened = dir.join("dealers-open.yaml");
    std::fs::write(
        &opened,
        demo.replace(private, "publication:\n            anonymous_reads: true"),
    )
    .unwrap();
    let out = run_cli(&db, &["import", "dealers", &opened.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out));

    let mut list_changed = false;
    let mut updated = Vec::new();
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    while !(list_changed && updated.len() >= 2) {
        match tokio::time::timeout_at(until, anonymous.next()).await {
            Ok(Ok(Notice::ListChanged)) => list_changed = true,
            Ok(Ok(Notice::Updated { uri, kinds, .. })) => updated.push((uri, kinds)),
            Ok(Err(reason)) => panic!("ended: {reason:?}"),
            Err(_) => break,
        }
    }
    assert!(list_changed, "{updated:?}");
    assert!(
        updated.contains(&(org_uri.clone(), vec!["dealer_changed"])),
        "{updated:?}"
    );
    assert!(
        updated.contains(&(
            gateway::watch::uri::MANIFEST_URI.to_owned(),
            vec!["dealer_changed"]
        )),
        "{updated:?}"
    );
    // Maplecrest's record did not change: nobody is told about it.
    assert!(
        !updated.iter().any(|(u, _)| *u == maplecrest_uri),
        "{updated:?}"
    );
    // Now readable, the fleet rooftop can be subscribed.
    anonymous.subscribe(&state, &fleet_uri).await.unwrap();
    let foreign_saw =
        tokio::time::timeout(Duration::from_millis(1500), foreign_stream.next()).await;
    assert!(
        foreign_saw.is_err(),
        "an unchanged list and record: {foreign_saw:?}"
    );
    drop(running);
}

/// A fake dealer system answering `status` for every VIN, observed now.
async fn fake_dealer_system(status: &'static str) -> u16 {
    let app = axum::Router::new().route(
        "/avail/{vin}",
        axum::routing::get(
            move |axum::extract::Path(vin): axum::extract::Path<String>| async move {
                axum::Json(serde_json::json!({
                    "vin": vin,
                    "status": status,
                    "observed_at": Utc::now().to_rfc3339(),
                }))
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    port
}

#[tokio::test]
async fn a_live_observation_that_changes_the_shown_status_notifies_availability_changed() {
    const ORG: &str = "org.avail-motors";
    const LIVE: &str = "roof.avail-live";
    let port = fake_dealer_system("sold").await;
    let (dir, db) = fresh_database().await;
    let store = gateway::store::open(&db).await.unwrap();
    let now = Utc::now();
    let dealers = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/availability/dealers.yaml"),
    )
    .unwrap()
    .replace("__PORT__", &port.to_string());
    let catalog = gateway::catalog::Catalog::load().unwrap();
    let orgs = gateway::dealers::parse(
        &catalog,
        "dealers.yaml",
        dealers.as_bytes(),
        "dealers-file:test",
        now,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    store.upsert_organizations(&orgs).await.unwrap();
    // The feed asserts `available`; the dealer system says sold.
    let vehicles: Vec<_> = (0..2)
        .map(|i| crate::common::test_vehicle(ORG, LIVE, &format!("veh.{i:03}.l"), "1LVEA", i, now))
        .collect();
    store
        .create_snapshot(
            ORG,
            LIVE,
            &crate::common::test_source("live.csv", now),
            &vehicles,
        )
        .await
        .unwrap();
    let (running, _stop) = start(&db).await;
    let state = running.state.clone();
    let mut stream = state.watch.open(&Principal::Anonymous).unwrap();
    let checked = format!("dealeragent://organization/{ORG}/rooftop/{LIVE}/vehicle/veh.000.l");
    let unchecked = format!("dealeragent://organization/{ORG}/rooftop/{LIVE}/vehicle/veh.001.l");
    stream.subscribe(&state, &checked).await.unwrap();
    stream.subscribe(&state, &unchecked).await.unwrap();
    // On PostgreSQL, a second replica: it learns of the first one's live
    // check through the store's notifications and tells its own subscriber.
    let mut other = if db.starts_with("postgres") {
        let (other, other_stop) = start(&db).await;
        let mut other_stream = other.state.watch.open(&Principal::Anonymous).unwrap();
        other_stream
            .subscribe(&other.state, &checked)
            .await
            .unwrap();
        Some((other, other_stop, other_stream))
    } else {
        None
    };

    let app = crate::common::TestApp::attach(&format!("http://{}", running.addr));
    let result = app
        .call_tool(
            "dealeragent.inventory.verify_availability",
            serde_json::json!({"organization_id": ORG, "rooftop_id": LIVE, "vehicle_id": "veh.000.l"}),
        )
        .await;
    assert_eq!(
        result["structuredContent"]["availability"]["status"], "sold",
        "{result}"
    );
    let seen = collect(&mut stream, Duration::from_secs(5), |got| !got.is_empty()).await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].0, checked);
    assert_eq!(seen[0].1, vec!["availability_changed"]);
    if let Some((_, _, other_stream)) = other.as_mut() {
        let told = collect(other_stream, Duration::from_secs(5), |got| !got.is_empty()).await;
        assert_eq!(
            told.len(),
            1,
            "the other replica tells its subscriber: {told:?}"
        );
        assert_eq!(told[0].0, checked);
        assert_eq!(told[0].1, vec!["availability_changed"]);
    }
    // A reused observation changes nothing, and the replica that made the
    // observation hears its own notification without telling it twice.
    app.call_tool(
        "dealeragent.inventory.verify_availability",
        serde_json::json!({"organization_id": ORG, "rooftop_id": LIVE, "vehicle_id": "veh.000.l"}),
    )
    .await;
    let again = collect(&mut stream, Duration::from_millis(1500), |got| {
        !got.is_empty()
    })
    .await;
    assert!(again.is_empty(), "{again:?}");
    drop(other);
    drop(dir);
    drop(running);
}

#[tokio::test]
async fn a_token_revoked_by_the_cli_makes_stream_holders_reverify() {
    let (_dir, db) = fresh_database().await;
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/dealers.yaml");
    let out = run_cli(&db, &["import", "dealers", &demo.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run_cli(
        &db,
        &[
            "token",
            "create",
            "--subject",
            "agent:watcher",
            "--organization",
            LAKESHORE,
            "--group",
            "--scopes",
            "dealeragent:inventory:read",
            "--purpose",
            "watch test",
            "--expires-in",
            "1d",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let created: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let token_id = created["token_id"].as_str().unwrap().to_owned();
    let (running, _stop) = start(&db).await;
    let state = running.state.clone();
    let mut stream = state.watch.open(&Principal::Anonymous).unwrap();
    stream
        .subscribe(&state, &format!("dealeragent://organization/{LAKESHORE}"))
        .await
        .unwrap();
    let mut revocations = state.watch.revocations();
    revocations.borrow_and_update();
    let out = run_cli(&db, &["token", "revoke", &token_id]);
    assert!(out.status.success(), "{}", text(&out));
    // PostgreSQL: the revocation's notification; SQLite (no feed): the
    // periodic re-verification while a stream listens.
    let bumped = tokio::time::timeout(
        gateway::watch::sources::REVERIFY + Duration::from_secs(2),
        revocations.changed(),
    )
    .await;
    assert!(matches!(bumped, Ok(Ok(()))), "{bumped:?}");
    drop(running);
}

#[tokio::test]
async fn graceful_shutdown_ends_every_stream_with_its_reason() {
    let (_dir, db) = fresh_database().await;
    let (running, stop) = start(&db).await;
    let state = running.state.clone();
    let mut stream = state.watch.open(&Principal::Anonymous).unwrap();
    stream
        .subscribe(&state, gateway::watch::uri::MANIFEST_URI)
        .await
        .unwrap();
    stop.send(()).unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(5), stream.next()).await;
    assert!(
        matches!(ended, Ok(Err(gateway::watch::EndReason::Shutdown))),
        "{ended:?}"
    );
}
