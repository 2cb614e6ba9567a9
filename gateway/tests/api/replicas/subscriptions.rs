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
/// Lakeshore's partner-only rooftop: its vehicles are private to
/// anonymous callers (demo/dealers.yaml `anonymous_reads: false`).
const FLEET: &str = "roof.lakeshore-fleet-wholesale";

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

/// Import `feed` as Chicago's snapshot through the CLI; the instants the
/// CLI started and exited (its commit is somewhere between).
fn import(db: &str, dir: &std::path::Path, feed: &str) -> (Instant, Instant) {
    let file = dir.join("chicago.csv");
    std::fs::write(&file, feed).expect("write the feed");
    let started = Instant::now();
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
    (started, Instant::now())
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

    // 1. What a caller may not read is refused before anything is looked
    // up, in the same words whether it exists or not: an anonymous caller
    // asking for a real vehicle of the partner-only rooftop, and for one
    // that does not exist anywhere.
    let fleet_page = client
        .search(
            &cluster.bases[1],
            &cluster.token,
            json!({"organization_id": ORG, "rooftop_ids": [FLEET], "page": {"limit": 1}}),
        )
        .await
        .expect("the token reads the fleet rooftop");
    let private = vehicle_uri(
        ORG,
        FLEET,
        fleet_page["vehicles"][0]["vehicle_id"]
            .as_str()
            .unwrap_or_else(|| panic!("a fleet vehicle: {fleet_page}")),
    );
    let nowhere = vehicle_uri("org.nowhere", "roof.nowhere", "veh.none");
    let mut words = Vec::new();
    for uri in [&private, &nowhere] {
        let refused: Refused = match listen(
            &http,
            &cluster.bases[1],
            None,
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
            !refused.body.to_string().contains("fleet"),
            "the refusal echoes nothing of the private record: {refused:?}"
        );
        words.push(refused.body["error"]["message"].clone());
    }
    assert_eq!(words[0], words[1], "private and absent read alike");

    // 2. Two listeners: one on replica A directly, one through the
    // balancer (a proxy must pass the stream on as it comes).
    let rooftop = format!("dealeragent://organization/{ORG}/rooftop/{CHICAGO}");
    let subscribed = [watched.clone(), sold.clone(), rooftop.clone()];
    let mut streams = Vec::new();
    for (id, base) in [(7, &cluster.bases[0]), (8, &cluster.front)] {
        let mut stream = listen(
            &http,
            base,
            Some(&cluster.token),
            &listen_body(id, &subscribed, false),
        )
        .await
        .unwrap_or_else(|refused| panic!("the listen at {base} was refused: {refused:?}"));
        let (_, ack) = stream
            .next(Duration::from_secs(10))
            .await
            .expect("the acknowledgement");
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        assert_eq!(
            ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], id,
            "{ack}"
        );
        let honored = &ack["params"]["notifications"]["resourceSubscriptions"];
        assert!(
            honored
                .as_array()
                .is_some_and(|u| u.contains(&json!(watched))),
            "{ack}"
        );
        streams.push((id, stream));
    }

    // 3. A hundred price changes, each imported by the CLI (another
    // process, writing to the store every replica reads). Each latency is
    // measured from the CLI's start (an upper bound: it includes the CLI's
    // own checks) and from its exit (a lower bound: the commit came first).
    let mut from_start = vec![Vec::with_capacity(CHANGES); streams.len()];
    let mut from_exit = vec![Vec::with_capacity(CHANGES); streams.len()];
    let mut versions: Vec<Value> = Vec::new();
    for i in 1..=CHANGES {
        let price = first_price + 100 * i as u64;
        let (started, exited) = import(
            &cluster.db,
            &dir,
            &variant(&fixture_feed, price, i as u32, None),
        );
        for (n, (id, stream)) in streams.iter_mut().enumerate() {
            let (got, skipped) = stream
                .until(Duration::from_secs(15), |m| is_update_of(m, &watched))
                .await;
            let Some((at, told)) = got else {
                panic!(
                    "price change {i} was not told to listener {id} within 15 s; it carried {skipped:?}"
                );
            };
            assert!(
                kinds(&told).iter().any(|k| k == "price_changed"),
                "change {i} is a price change: {told}"
            );
            assert_eq!(
                told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], *id,
                "{told}"
            );
            let version =
                told["params"]["_meta"]["dealergateway/change"]["snapshotVersion"].clone();
            assert!(version.is_string(), "a snapshot version: {told}");
            if n == 0 {
                assert!(
                    !versions.contains(&version),
                    "each snapshot is a new version: {told}"
                );
                versions.push(version);
            } else {
                assert_eq!(
                    versions.last(),
                    Some(&version),
                    "both listeners see one version"
                );
            }
            for other in &skipped {
                // Only what was subscribed is told.
                let uri = other["params"]["uri"].as_str().unwrap_or_default();
                assert!(
                    other["method"] != "notifications/resources/updated"
                        || subscribed.iter().any(|u| u == uri),
                    "an update of a URI not subscribed: {other}"
                );
            }
            from_start[n].push(at.saturating_duration_since(started));
            from_exit[n].push(at.saturating_duration_since(exited));
        }
    }
    for (n, (name, _)) in [("replica A", 0), ("the balancer", 1)].iter().enumerate() {
        for list in [&mut from_start[n], &mut from_exit[n]] {
            list.sort();
        }
        let figures = |l: &[Duration]| {
            format!(
                "{} / {} / {}",
                millis(Some(percentile(l, 50))),
                millis(Some(percentile(l, 99))),
                millis(Some(l[l.len() - 1]))
            )
        };
        eprintln!(
            "subscriptions across replicas, listener on {name}: {CHANGES} price changes told \
             p50 / p99 / max {} after the CLI started, {} after it exited",
            figures(&from_start[n]),
            figures(&from_exit[n])
        );
        let p99 = percentile(&from_start[n], 99);
        assert!(
            p99 <= NOTIFY_BOUND + SLACK,
            "p99 {p99:?} over {CHANGES} changes exceeds {NOTIFY_BOUND:?} (+{SLACK:?} slack)"
        );
    }
    let mut stream = streams.remove(0).1;

    // 4. A sale: the Pilot leaves the feed.
    let (_, exited) = import(
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
