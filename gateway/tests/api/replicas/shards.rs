//! Organization-sharded replicas behind nginx (docs/operations.md
//! "Shards"): two shards (`east` with two replicas, `west` with one) on one
//! PostgreSQL, ten organizations (the bundled demo's two and eight from
//! `demo generate`), nginx routing `/mcp` by `Mcp-Param-Organization` and
//! `/aap/{organization_id}/` by path with the `map` that
//! `dealer-gateway shards --nginx` prints.
//!
//! Also here, without nginx: the `Mcp-Param-Organization` header checks
//! (docs/mcp.md "Header policy") on one in-process gateway.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::balancer::{Balancer, upstream_server};
use super::{
    BOUND, CHICAGO, NEW_VIN, ORG, Replica, SEARCH, SLACK, fixture, free_port, millis, needs,
    replica_args, start_replica, time_on_each, token_of,
};
use crate::common::{MODERN, meta, run_cli, temp_dir, test_database_url, text};

const SHARDS: &str = "east,west";
/// The demo's Lakeshore group (imported into below, and killed under) on
/// the shard with two replicas; one generated organization pinned to the
/// other so each shard serves some whatever the hash says.
const PINS: &str = "org.lakeshore-auto-group=east,org.bench-001=west";
const OTHER_DEMO_ORG: &str = "org.maplecrest-motor-group";

fn shard_args(resource_url: &str, shard: &str) -> Vec<String> {
    let mut args = replica_args(resource_url);
    for (flag, value) in [
        ("--shards", SHARDS),
        ("--shard-pins", PINS),
        ("--shard", shard),
    ] {
        args.push(flag.to_owned());
        args.push(value.to_owned());
    }
    args
}

/// One modern `tools/call` at `base`, with `Mcp-Param-Organization` when
/// `organization` is given: (HTTP status, body).
async fn call(
    http: &reqwest::Client,
    base: &str,
    token: Option<&str>,
    name: &str,
    args: &Value,
    organization: Option<&str>,
) -> Result<(u16, Value), String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": args, "_meta": meta()}});
    let mut req = http
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .body(body.to_string());
    if let Some(org) = organization {
        req = req.header("mcp-param-organization", org);
    }
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    let resp = req.send().await.map_err(|e| format!("transport: {e}"))?;
    let status = resp.status().as_u16();
    let raw = resp.text().await.map_err(|e| format!("body: {e}"))?;
    let value = serde_json::from_str(&raw).map_err(|_| format!("{status}: {raw}"))?;
    Ok((status, value))
}

/// A search of `org` that must succeed and hold only `org`'s vehicles
/// (no other organization id of `all` appears in it): its page.
async fn search_of(
    http: &reqwest::Client,
    base: &str,
    token: Option<&str>,
    org: &str,
    args: Value,
    all: &[String],
) -> Result<Value, String> {
    let (status, body) = call(http, base, token, SEARCH, &args, Some(org)).await?;
    let result = &body["result"];
    if status != 200 || result["isError"] != json!(false) {
        return Err(format!("search of {org}: {status} {body}"));
    }
    let page = &result["structuredContent"];
    let shown = page.to_string();
    if let Some(foreign) = all.iter().find(|o| *o != org && shown.contains(o.as_str())) {
        return Err(format!("search of {org} answered with {foreign}'s data"));
    }
    if page["vehicles"].as_array().is_none_or(Vec::is_empty) {
        return Err(format!("search of {org} found no vehicles: {page}"));
    }
    Ok(page.clone())
}

/// Who may search `org`: the token for the demo's Lakeshore group (its
/// dealer policy needs one); the others publish to anonymous callers.
fn token_for<'a>(org: &str, token: &'a str) -> Option<&'a str> {
    (org == ORG).then_some(token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_route_by_organization_and_lose_no_request() {
    let Some(needs) = needs("shards::two_shards_route_by_organization_and_lose_no_request") else {
        return;
    };
    let started = Instant::now();
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let port = free_port();
    let front = format!("http://127.0.0.1:{port}");
    let resource = format!("{front}/mcp");
    // East first: it seeds the empty store with the bundled demo.
    let mut east = vec![Some(
        start_replica(&db, &shard_args(&resource, "east")).await,
    )];
    east.push(Some(
        start_replica(&db, &shard_args(&resource, "east")).await,
    ));
    let west = start_replica(&db, &shard_args(&resource, "west")).await;
    let east_bases: Vec<String> = east.iter().flatten().map(Replica::base).collect();
    let west_base = west.base();

    // Eight more organizations (80 rooftops), imported through the CLI
    // while the replicas run: ten in all.
    let bundle = dir.join("bundle");
    let bundle_arg = bundle.display().to_string();
    for args in [
        vec![
            "--progress",
            "none",
            "demo",
            "generate",
            "--vehicles",
            "240",
            "--rooftops",
            "80",
            "--seed",
            "7",
            "--out",
            &bundle_arg,
        ],
        vec!["--progress", "none", "import", "bundle", &bundle_arg],
    ] {
        let out = run_cli(&db, &args);
        assert!(out.status.success(), "{}", text(&out));
    }
    let mut orgs: Vec<String> = (1..=8).map(|k| format!("org.bench-{k:03}")).collect();
    orgs.push(ORG.to_owned());
    orgs.push(OTHER_DEMO_ORG.to_owned());

    // The assignment, as the operator sees it and as nginx gets it.
    let shard_flags = ["shards", "--shards", SHARDS, "--shard-pins", PINS];
    let table = run_cli(&db, &shard_flags);
    assert!(table.status.success(), "{}", text(&table));
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    eprintln!("{table}");
    let shard_of = |org: &str| {
        table
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{org}\t")))
            .and_then(|rest| rest.split('\t').next())
            .unwrap_or_else(|| panic!("{org} is not in the table:\n{table}"))
            .to_owned()
    };
    for org in &orgs {
        assert!(matches!(shard_of(org).as_str(), "east" | "west"), "{org}");
    }
    assert_eq!(shard_of(ORG), "east");
    assert_eq!(shard_of("org.bench-001"), "west");
    let mut nginx_flags = shard_flags.to_vec();
    nginx_flags.push("--nginx");
    let map = run_cli(&db, &nginx_flags);
    assert!(map.status.success(), "{}", text(&map));
    let map = String::from_utf8_lossy(&map.stdout).into_owned();
    let mut http = map.clone();
    for (name, bases) in [("east", &east_bases), ("west", &vec![west_base.clone()])] {
        http.push_str(&format!("    upstream shard_{name} {{\n"));
        for b in bases {
            http.push_str(&upstream_server(b.trim_start_matches("http://")));
        }
        http.push_str("    }\n");
    }
    http.push_str(&format!(
        "    server {{\n        listen 127.0.0.1:{port};\n        location / {{\n            proxy_pass http://$dgw_shard;\n        }}\n    }}\n"
    ));
    let _balancer = Balancer::start_with(&needs.nginx, &http, &[port]).await;
    let out = run_cli(
        &db,
        &[
            "token",
            "create",
            "--subject",
            "agent:shards",
            "--organization",
            ORG,
            "--scopes",
            "dealeragent:inventory:read,dealeragent:pricing:read",
            "--purpose",
            "shard test",
            "--expires-in",
            "1d",
            "--group",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let token = token_of(&out);
    let client = reqwest::Client::new();

    // Every organization is answered through nginx, by its own shard.
    let all_served = crate::common::poll_until(Duration::from_secs(20), || async {
        for org in &orgs {
            let args = json!({"organization_id": org, "page": {"limit": 3}});
            if search_of(&client, &front, token_for(org, &token), org, args, &orgs)
                .await
                .is_err()
            {
                return false;
            }
        }
        true
    })
    .await;
    assert!(all_served, "every organization is served through nginx");

    // 1. The wrong shard, asked directly, refuses precisely and retryably,
    // and shows nothing of the organization; directory reads stay global.
    for (org, base) in [(ORG, &west_base), ("org.bench-001", &east_bases[0])] {
        let args = json!({"organization_id": org});
        let (status, body) = call(
            &client,
            base,
            token_for(org, &token),
            SEARCH,
            &args,
            Some(org),
        )
        .await
        .expect("answered");
        assert_eq!(status, 200, "{body}");
        let result = &body["result"];
        assert_eq!(result["isError"], true, "{body}");
        let error = &result["structuredContent"];
        assert_eq!(error["code"], "dealeragent.upstream.unavailable", "{error}");
        assert_eq!(error["retryable"], true, "{error}");
        assert!(error["retry_after_ms"].as_u64().is_some(), "{error}");
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.contains("does not serve that organization")
                    && m.contains("Mcp-Param-Organization")),
            "{error}"
        );
        assert!(error.get("vehicles").is_none() && !body.to_string().contains("vin"));
        // The AAP endpoint of that organization too.
        let aap = client
            .post(format!("{base}/aap/{org}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", "tools/call")
            .header("mcp-name", "aap_inventory_search")
            .body(
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                    "name": "aap_inventory_search",
                    "arguments": {"type": "inventory.search.request"}, "_meta": meta()}})
                .to_string(),
            )
            .send()
            .await
            .expect("aap answered");
        let aap: Value = aap.json().await.expect("aap json");
        assert_eq!(aap["result"]["isError"], true, "{aap}");
        assert_eq!(
            aap["result"]["structuredContent"]["retryable"], true,
            "{aap}"
        );
        assert!(
            aap.to_string().contains("does not serve this dealer"),
            "{aap}"
        );
        // The manifest and the dealer record are the directory's: global.
        let (_, manifest) = call(
            &client,
            base,
            None,
            "dealeragent.discovery.get_manifest",
            &json!({}),
            None,
        )
        .await
        .expect("manifest");
        for o in orgs.iter().filter(|o| o.starts_with("org.bench-")) {
            assert!(
                manifest.to_string().contains(o.as_str()),
                "{o} in the manifest"
            );
        }
    }
    // A header that names another organization than the body is refused
    // (400, -32020), never routed to a foreign answer.
    let args = json!({"organization_id": ORG});
    let (status, body) = call(
        &client,
        &front,
        Some(&token),
        SEARCH,
        &args,
        Some("org.bench-001"),
    )
    .await
    .expect("answered");
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &json!(-32020)),
        "{body}"
    );

    // 2. An inventory import through the CLI is served through nginx and
    // by both east replicas within the bound.
    let import_started = Instant::now();
    let out = run_cli(
        &db,
        &[
            "import",
            "inventory",
            &fixture("lakeshore-changed.csv"),
            "--organization",
            ORG,
            "--rooftop",
            CHICAGO,
            "--allow-removals",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let import_took = import_started.elapsed();
    let mut watched = east_bases.clone();
    watched.push(front.clone());
    let seen = time_on_each(&watched, BOUND + SLACK, |base| {
        let (client, token, orgs) = (client.clone(), token.clone(), orgs.clone());
        async move {
            let args = json!({"organization_id": ORG, "rooftop_ids": [CHICAGO],
                "filters": {"vin": NEW_VIN}});
            search_of(&client, &base, Some(&token), ORG, args, &orgs)
                .await
                .is_ok()
        }
    })
    .await;
    eprintln!(
        "sharded import (CLI took {} ms): visible on east 1, east 2, nginx {} after the CLI exited",
        import_took.as_millis(),
        seen.iter()
            .map(|d| millis(*d))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert!(
        seen.iter().all(Option::is_some),
        "import not visible within the bound"
    );

    // 3. Load over all ten organizations through nginx; one east replica
    // is killed mid-load and no request is lost.
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let tasks: Vec<_> = (0..6)
        .map(|w| {
            let (stop, ok, failed) = (stop.clone(), ok.clone(), failed.clone());
            let (front, token, orgs) = (front.clone(), token.clone(), orgs.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let mut n = w;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let org = &orgs[n % orgs.len()];
                    let args = json!({"organization_id": org, "page": {"limit": 5}});
                    match search_of(&client, &front, token_for(org, &token), org, args, &orgs).await
                    {
                        Ok(_) => {
                            ok.fetch_add(1, Ordering::Relaxed);
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
    tokio::time::sleep(Duration::from_millis(1500)).await;
    if let Some(mut replica) = east[1].take() {
        replica.child().start_kill().expect("kill an east replica");
        let _ = replica.child().wait().await;
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let ok = ok.load(Ordering::Relaxed);
    let failed = failed
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    eprintln!(
        "killed east 2 mid-load: {ok} sharded requests succeeded, {} failed; test took {} ms",
        failed.len(),
        started.elapsed().as_millis()
    );
    assert!(failed.is_empty(), "lost requests: {failed:?}");
    assert!(ok > 50, "the load ran ({ok} requests)");
    drop(west);
}

/// `Mcp-Param-Organization` on one in-process gateway (docs/mcp.md "Header
/// policy"): it must agree with `organization_id`; the sentinel is decoded;
/// an omitted one is tolerated unless `--strict-mcp-headers`.
#[tokio::test]
async fn mcp_param_organization_must_agree_with_the_argument() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    for strict in [false, true] {
        let app = crate::common::spawn_with(|s| s.strict_mcp_headers = strict).await;
        let base = app.base();
        let client = reqwest::Client::new();
        let args = json!({"organization_id": ORG});
        let dealer = "dealeragent.dealer.get";
        let (status, body) = call(&client, &base, None, dealer, &args, Some(ORG))
            .await
            .expect("answered");
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["isError"], false, "{body}");
        // base64("org.lakeshore-auto-group"), with surrounding spaces.
        let sentinel = " =?base64?b3JnLmxha2VzaG9yZS1hdXRvLWdyb3Vw?= ";
        let (status, body) = call(&client, &base, None, dealer, &args, Some(sentinel))
            .await
            .expect("answered");
        assert_eq!(
            (status, &body["result"]["isError"]),
            (200, &json!(false)),
            "{body}"
        );
        for wrong in [OTHER_DEMO_ORG, "ORG.LAKESHORE-AUTO-GROUP", "=?base64?***?="] {
            let (status, body) = call(&client, &base, None, dealer, &args, Some(wrong))
                .await
                .expect("answered");
            assert_eq!(status, 400, "{wrong}: {body}");
            assert_eq!(body["error"]["code"], -32020, "{body}");
            let shown = body.to_string();
            assert!(
                !shown.contains(OTHER_DEMO_ORG) && !shown.contains(ORG),
                "{shown}"
            );
        }
        // The header without the argument disagrees with the body.
        let (status, body) = call(&client, &base, None, dealer, &json!({}), Some(ORG))
            .await
            .expect("answered");
        assert_eq!(
            (status, &body["error"]["code"]),
            (400, &json!(-32020)),
            "{body}"
        );
        // Omitted: served by default, -32020 in strict mode.
        let (status, body) = call(&client, &base, None, dealer, &args, None)
            .await
            .expect("answered");
        if strict {
            assert_eq!(
                (status, &body["error"]["code"]),
                (400, &json!(-32020)),
                "{body}"
            );
        } else {
            assert_eq!(
                (status, &body["result"]["isError"]),
                (200, &json!(false)),
                "{body}"
            );
        }
        // The published schema declares it.
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
            "params": {"_meta": meta()}});
        let listed: Value = client
            .post(format!("{base}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", "tools/list")
            .body(list.to_string())
            .send()
            .await
            .expect("tools/list")
            .json()
            .await
            .expect("json");
        let tools = listed["result"]["tools"].as_array().expect("tools");
        for tool in tools {
            let declared = &tool["inputSchema"]["properties"]["organization_id"]["x-mcp-header"];
            if tool["name"] == "dealeragent.discovery.get_manifest" {
                assert!(declared.is_null(), "the manifest is global");
            } else {
                assert_eq!(declared, "Organization", "{}", tool["name"]);
            }
        }
    }
}

/// One in-process replica of shard `east` (no nginx, SQLite): the demo's
/// Lakeshore group is pinned to `west`, Maplecrest to `east`.
#[tokio::test]
async fn a_sharded_replica_refuses_other_organizations_and_answers_the_directory() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let app = crate::common::spawn_with(|s| {
        s.sharding = gateway::shards::ShardSettings {
            shard: Some("east".into()),
            shards: vec!["east".into(), "west".into()],
            shard_pins: vec![format!("{ORG}=west"), format!("{OTHER_DEMO_ORG}=east")],
        };
    })
    .await;
    let base = app.base();
    let client = reqwest::Client::new();
    let refused = json!({"organization_id": ORG, "rooftop_ids": [CHICAGO]});
    for (tool, args) in [
        (SEARCH, refused.clone()),
        (
            "dealeragent.inventory.get_vehicle",
            json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vin": NEW_VIN}),
        ),
    ] {
        let (status, body) = call(&client, &base, None, tool, &args, Some(ORG))
            .await
            .expect("answered");
        let error = &body["result"]["structuredContent"];
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["isError"], true, "{tool}: {body}");
        assert_eq!(error["code"], "dealeragent.upstream.unavailable", "{error}");
        assert_eq!(error["retryable"], true, "{error}");
        assert_eq!(error["retry_after_ms"], 500, "{error}");
    }
    // Its own organization is served (whatever the tool then answers).
    let args = json!({"organization_id": OTHER_DEMO_ORG});
    let (_, body) = call(&client, &base, None, SEARCH, &args, Some(OTHER_DEMO_ORG))
        .await
        .expect("answered");
    assert_ne!(
        body["result"]["structuredContent"]["code"], "dealeragent.upstream.unavailable",
        "{body}"
    );
    // The directory is global: the dealer record and the manifest.
    let (status, body) = call(
        &client,
        &base,
        None,
        "dealeragent.dealer.get",
        &json!({"organization_id": ORG}),
        Some(ORG),
    )
    .await
    .expect("answered");
    assert_eq!(
        (status, &body["result"]["isError"]),
        (200, &json!(false)),
        "{body}"
    );
    // A vehicle resource of the other shard's organization: 503.
    let uri = format!("dealeragent://organization/{ORG}/rooftop/{CHICAGO}/vehicle/veh.x");
    let read = client
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "resources/read")
        .header("mcp-name", uri.as_str())
        .body(
            json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                "params": {"uri": uri, "_meta": meta()}})
            .to_string(),
        )
        .send()
        .await
        .expect("resources/read");
    assert_eq!(read.status().as_u16(), 503);
}

/// `dealer-gateway shards` reads `shards` and `shard_pins` from a serve
/// config file (flags win), lists the store's organizations plus
/// `--organization`, and refuses settings that make no assignment.
#[tokio::test]
async fn the_shards_command_prints_the_assignment_of_a_config_file() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let out = run_cli(&db, &["migrate"]);
    assert!(out.status.success(), "{}", text(&out));
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        "shards = [\"east\", \"west\"]\nshard_pins = \"org.new=west\"\nrequest_timeout_seconds = 30\n",
    )
    .expect("config");
    let config = config.display().to_string();
    let out = run_cli(
        &db,
        &[
            "shards",
            "--config",
            &config,
            "--organization",
            "org.new,org.other",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "organization_id\tshard\tassigned_by", "{table}");
    assert!(lines.contains(&"org.new\twest\tpin"), "{table}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("org.other\t") && l.ends_with("\thash")),
        "{table}"
    );
    // A flag wins over the file: the pin names a shard no longer listed.
    let out = run_cli(&db, &["shards", "--config", &config, "--shards", "north"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--shard-pins"), "{}", text(&out));
    let out = run_cli(&db, &["shards"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no shards"), "{}", text(&out));
}
