//! Subscriptions across replicas (docs/mcp.md "Subscriptions"): a listener
//! on one replica is told of every change the CLI imports into the shared
//! PostgreSQL, whichever process wrote it, through the store's change
//! notifications (the replicas poll only every 30 s here). The latency of
//! each of 100 price changes is measured from the CLI's exit to the
//! notification's arrival and printed; the assertion allows the file's
//! usual slack over the 2 s bound.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{BOUND, CHICAGO, Client, Cluster, ORG, SLACK, fixture, millis, needs, time_on_each};
use crate::common::{run_cli, temp_dir, text};
use crate::listen_client::{Refused, is_update_of, kinds, listen, listen_body, vehicle_uri};

/// The bound a notification is held to (p99 over the changes).
const NOTIFY_BOUND: Duration = Duration::from_secs(2);
/// Price changes measured.
const CHANGES: usize = 100;
/// The fixture's Accord: its price changes with every import.
const ACCORD_VIN: &str = "1HGCY2F50RA000101";
/// The fixture's Pilot: sold (dropped from the feed) at the end.
const PILOT_VIN: &str = "5FNYG1H85RB000202";
/// A vehicle of another organization (the token is Lakeshore's).
const FOREIGN_ORG: &str = "org.maplecrest-motor-group";

/// `base` (a CSV feed) with the Accord at `price` minor units, every row
/// observed `minute` minutes after the fixture's time (each import is a
/// newer snapshot), and without `drop_vin`'s row.
fn variant(base: &str, price: u64, minute: u32, drop_vin: Option<&str>) -> String {
    let mut reader = csv::Reader::from_reader(base.as_bytes());
    let headers = reader.headers().expect("a header row").clone();
    let col = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("the fixture has no {name} column"))
    };
    let (vin, price_col, observed) = (
        col("vin"),
        col("advertised_price_minor"),
        col("observed_at"),
    );
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(&headers).expect("write");
    let at = format!("2026-09-02T{:02}:{:02}:00Z", 14 + minute / 60, minute % 60);
    for row in reader.records() {
        let row = row.expect("a fixture row");
        if Some(&row[vin]) == drop_vin {
            continue;
        }
        let fields: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, f)| {
                if i == price_col && row[vin] == *ACCORD_VIN {
                    price.to_string()
                } else if i == observed {
                    at.clone()
                } else {
                    f.to_owned()
                }
            })
            .collect();
        writer.write_record(&fields).expect("write");
    }
    String::from_utf8(writer.into_inner().expect("flush")).expect("utf-8")
}

/// Import `feed` as Chicago's snapshot through the CLI; the instant the CLI
/// exited.
fn import(db: &str, dir: &std::path::Path, feed: &str) -> Instant {
    let file = dir.join("chicago.csv");
    std::fs::write(&file, feed).expect("write the feed");
    let out = run_cli(
        db,
        &[
            "import",
            "inventory",
            &file.display().to_string(),
            "--organization",
            ORG,
            "--rooftop",
            CHICAGO,
            "--allow-removals",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    Instant::now()
}

/// The percentile `p` (0..=100) of `sorted`, nearest rank.
fn percentile(sorted: &[Duration], p: usize) -> Duration {
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_on_one_replica_is_told_of_every_cli_import_within_the_bound() {
    let Some(needs) = needs(
        "subscriptions::a_listener_on_one_replica_is_told_of_every_cli_import_within_the_bound",
    ) else {
        return;
    };
    let cluster = Cluster::start(&needs, 3).await;
    let client = Client::new();
    let http = reqwest::Client::new();
    let dir = temp_dir();
    let fixture_feed =
        std::fs::read_to_string(fixture("lakeshore-changed.csv")).expect("the fixture");
    let first_price = 3_000_000_u64;

    // 0. The fixture's three vehicles replace Chicago's demo stock, and
    // every replica serves them.
    import(
        &cluster.db,
        &dir,
        &variant(&fixture_feed, first_price, 0, None),
    );
    let token = cluster.token.clone();
    let seen = time_on_each(&cluster.bases, BOUND + SLACK, |base| {
        let (client, token) = (client.clone(), token.clone());
        async move { client.sees_new_vin(&base, &token).await }
    })
    .await;
    assert!(
        seen.iter().all(Option::is_some),
        "the first import reached every replica: {seen:?}"
    );
    let page = client
        .search(
            &cluster.bases[0],
            &cluster.token,
            json!({"organization_id": ORG, "rooftop_ids": [CHICAGO]}),
        )
        .await
        .expect("a search");
    let id_of = |vin: &str| {
        page["vehicles"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["vin"] == vin))
            .and_then(|v| v["vehicle_id"].as_str())
            .unwrap_or_else(|| panic!("{vin} is served: {page}"))
            .to_owned()
    };
    let watched = vehicle_uri(ORG, CHICAGO, &id_of(ACCORD_VIN));
    let sold = vehicle_uri(ORG, CHICAGO, &id_of(PILOT_VIN));

    // 1. What the token may not read is refused before anything is looked
    // up, in the same words whether it exists or not: another
    // organization's vehicle, and one that does not exist anywhere.
    let foreign = vehicle_uri(FOREIGN_ORG, "roof.maplecrest-toronto", "veh.any");
    let nowhere = vehicle_uri("org.nowhere", "roof.nowhere", "veh.none");
    let mut words = Vec::new();
    for uri in [&foreign, &nowhere] {
        let refused: Refused = match listen(
            &http,
            &cluster.bases[1],
            Some(&cluster.token),
            &listen_body(3, std::slice::from_ref(uri), false),
        )
        .await
        {
            Ok(_) => panic!("a listen on {uri} was accepted"),
            Err(refused) => refused,
        };
        assert_ne!(
            refused.status, 0,
            "the listen reached the server: {refused:?}"
        );
        assert_eq!(refused.body["error"]["code"], -32602, "{refused:?}");
        assert!(
            !refused.body.to_string().contains("maplecrest"),
            "the refusal echoes nothing of the foreign record: {refused:?}"
        );
        words.push(refused.body["error"]["message"].clone());
    }
    assert_eq!(words[0], words[1], "foreign and absent read alike");

    // 2. The listener, on replica A.
    let rooftop = format!("dealeragent://organization/{ORG}/rooftop/{CHICAGO}");
    let mut stream = listen(
        &http,
        &cluster.bases[0],
        Some(&cluster.token),
        &listen_body(7, &[watched.clone(), sold.clone(), rooftop.clone()], false),
    )
    .await
    .unwrap_or_else(|refused| panic!("the listen was refused: {refused:?}"));
    let (_, ack) = stream
        .next(Duration::from_secs(10))
        .await
        .expect("the acknowledgement");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7,
        "{ack}"
    );
    let honored = &ack["params"]["notifications"]["resourceSubscriptions"];
    assert!(
        honored
            .as_array()
            .is_some_and(|u| u.contains(&json!(watched))),
        "{ack}"
    );

    // 3. A hundred price changes, each imported by the CLI (another
    // process, writing to the store every replica reads).
    let mut latencies = Vec::with_capacity(CHANGES);
    let mut versions: Vec<Value> = Vec::new();
    for i in 1..=CHANGES {
        let price = first_price + 100 * i as u64;
        let exited = import(
            &cluster.db,
            &dir,
            &variant(&fixture_feed, price, i as u32, None),
        );
        let (got, skipped) = stream
            .until(Duration::from_secs(15), |m| is_update_of(m, &watched))
            .await;
        let Some((at, told)) = got else {
            panic!("price change {i} was not told within 15 s; the stream carried {skipped:?}");
        };
        assert!(
            kinds(&told).iter().any(|k| k == "price_changed"),
            "change {i} is a price change: {told}"
        );
        assert_eq!(
            told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7,
            "{told}"
        );
        let version = told["params"]["_meta"]["dealergateway/change"]["snapshotVersion"].clone();
        assert!(version.is_string(), "a snapshot version: {told}");
        assert!(
            !versions.contains(&version),
            "each snapshot is a new version: {told}"
        );
        versions.push(version);
        for other in &skipped {
            // Only what was subscribed is told.
            let uri = other["params"]["uri"].as_str().unwrap_or_default();
            assert!(
                other["method"] != "notifications/resources/updated"
                    || [&watched, &sold, &rooftop].iter().any(|u| *u == uri),
                "an update of a URI not subscribed: {other}"
            );
        }
        latencies.push(at.saturating_duration_since(exited));
    }
    latencies.sort();
    let (p50, p99, max) = (
        percentile(&latencies, 50),
        percentile(&latencies, 99),
        latencies[latencies.len() - 1],
    );
    eprintln!(
        "subscriptions across replicas: {CHANGES} price changes told {} (p50), {} (p99), {} (max) \
         after the CLI exited",
        millis(Some(p50)),
        millis(Some(p99)),
        millis(Some(max))
    );
    assert!(
        p99 <= NOTIFY_BOUND + SLACK,
        "p99 {p99:?} over {CHANGES} changes exceeds {NOTIFY_BOUND:?} (+{SLACK:?} slack)"
    );

    // 4. A sale: the Pilot leaves the feed.
    let exited = import(
        &cluster.db,
        &dir,
        &variant(
            &fixture_feed,
            first_price,
            CHANGES as u32 + 1,
            Some(PILOT_VIN),
        ),
    );
    let (got, skipped) = stream
        .until(Duration::from_secs(15), |m| is_update_of(m, &sold))
        .await;
    let Some((at, told)) = got else {
        panic!("the sale was not told within 15 s; the stream carried {skipped:?}");
    };
    assert!(
        kinds(&told).iter().any(|k| k == "removed"),
        "a sold vehicle is told as removed: {told}"
    );
    eprintln!(
        "the sale was told {} after the CLI exited",
        millis(Some(at.saturating_duration_since(exited)))
    );

    // 5. The token is revoked: the stream ends with that reason.
    let (token_id, _) = gateway::auth::api_token::parse(&cluster.token).expect("a token");
    let out = run_cli(&cluster.db, &["token", "revoke", token_id]);
    assert!(out.status.success(), "{}", text(&out));
    let revoked = Instant::now();
    let (got, skipped) = stream
        .until(Duration::from_secs(15), |m| {
            m.get("error").is_some() || m.get("result").is_some()
        })
        .await;
    let Some((at, end)) = got else {
        panic!("the stream of a revoked token did not end within 15 s; it carried {skipped:?}");
    };
    assert_eq!(end["id"], 7, "the end answers the listen request: {end}");
    assert_eq!(
        end["error"]["data"]["reason"], "credential_revoked",
        "the end says why: {end}"
    );
    eprintln!(
        "the revoked token's stream ended {} after the CLI exited",
        millis(Some(at.saturating_duration_since(revoked)))
    );
}
