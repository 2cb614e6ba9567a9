//! Content versions and conditional re-reads (docs/agents.md "Conditional
//! re-reads") over real HTTP: every successful tool result and resource
//! read carries `_meta["dealergateway/contentVersion"]`, stable while the
//! data is, changed by an import, different between views; a request with
//! `params._meta["dealergateway/ifNoneMatch"]` equal to it is answered in
//! under 1 KB with a result that still conforms to the tool's advertised
//! `outputSchema`.

use std::path::Path;
use std::time::Duration as StdDuration;

use chrono::{Duration, Utc};
use serde_json::{Value, json};

use crate::common::{
    self, TestApp, fresh_database, run_cli, spawn, spawn_on, text, tool_error_code,
};

const VERSION: &str = "dealergateway/contentVersion";
const IF_NONE_MATCH: &str = "dealergateway/ifNoneMatch";
const UNCHANGED: &str = "dealergateway/unchanged";
const ORG: &str = "org.lakeshore-auto-group";
const CHICAGO: &str = "roof.lakeshore-chicago";
const FLEET: &str = "roof.lakeshore-fleet-wholesale";
const DISCLOSURE: &str = "dealeragent.pricing.get_disclosure";
const GET_VEHICLE: &str = "dealeragent.inventory.get_vehicle";
const DEALER: &str = "dealeragent.dealer.get";

/// A modern request with `_meta` extended by `extra` (the conditional
/// member), optionally with a bearer token; the whole reply.
async fn request(
    app: &TestApp,
    token: Option<&str>,
    method: &str,
    mut params: Value,
    if_none_match: Option<&str>,
) -> common::Reply {
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    params["_meta"] = common::meta();
    if let Some(v) = if_none_match {
        params["_meta"][IF_NONE_MATCH] = json!(v);
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = TestApp::modern_headers(method, name.as_deref());
    if let Some(auth) = auth.as_deref() {
        headers.push(("authorization", auth));
    }
    let reply = app.post_raw(&headers, body.to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    reply
}

async fn call(
    app: &TestApp,
    token: Option<&str>,
    tool: &str,
    args: Value,
    if_none_match: Option<&str>,
) -> common::Reply {
    let reply = request(
        app,
        token,
        "tools/call",
        json!({"name": tool, "arguments": args}),
        if_none_match,
    )
    .await;
    assert_eq!(tool_error_code(reply.result()), None, "{}", reply.raw);
    reply
}

fn version_of(reply: &common::Reply) -> String {
    reply.result()["_meta"][VERSION]
        .as_str()
        .unwrap_or_else(|| panic!("no content version in {}", reply.raw))
        .to_owned()
}

/// A vehicle of Chicago in the demo, as anonymous search finds it.
async fn chicago_vehicle(app: &TestApp) -> String {
    let found = app
        .call_tool(
            "dealeragent.inventory.search",
            json!({"organization_id": ORG, "rooftop_ids": [CHICAGO]}),
        )
        .await;
    found["structuredContent"]["vehicles"][0]["vehicle_id"]
        .as_str()
        .expect("a demo vehicle at Chicago")
        .to_owned()
}

/// The advertised `outputSchema` of `tool` (tools/list), compiled.
async fn advertised_schema(app: &TestApp, tool: &str) -> jsonschema::Validator {
    let list = app.modern("tools/list", json!({})).await;
    let schema = list.result()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == tool)
        .unwrap_or_else(|| panic!("{tool} not listed"))["outputSchema"]
        .clone();
    jsonschema::draft202012::options()
        .build(&schema)
        .expect("the advertised outputSchema compiles")
}

fn assert_valid(validator: &jsonschema::Validator, instance: &Value, what: &str) {
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:?}\n{instance}");
}

/// An unchanged `get_disclosure` re-read is a successful result under
/// 1 KB that conforms to the advertised outputSchema; the full one is over
/// 10 KB and conforms to the published DAP schema; a stale version gets the
/// full answer.
#[tokio::test]
async fn an_unchanged_disclosure_re_read_is_under_1_kb_and_valid() {
    let app = spawn().await;
    let vehicle = chicago_vehicle(&app).await;
    let args = json!({"organization_id": ORG, "rooftop_id": CHICAGO,
                      "vehicle_id": vehicle, "detail": "full"});
    let full = call(&app, None, DISCLOSURE, args.clone(), None).await;
    let version = version_of(&full);
    assert!(full.raw.len() > 10_000, "full: {} bytes", full.raw.len());
    let again = call(&app, None, DISCLOSURE, args.clone(), None).await;
    assert_eq!(version_of(&again), version, "stable across two reads");

    // The full answer: the published DAP schema (schemas/*.json, the
    // gateway's own check) and the advertised outputSchema.
    let catalog = gateway::catalog::Catalog::load().unwrap();
    let tool = catalog.tools.iter().find(|t| t.name == DISCLOSURE).unwrap();
    let structured = &full.result()["structuredContent"];
    assert_eq!(tool.validate_output(structured), Ok(()));
    let advertised = advertised_schema(&app, DISCLOSURE).await;
    assert_valid(&advertised, structured, "full answer");

    // The short answer.
    let short = call(&app, None, DISCLOSURE, args.clone(), Some(&version)).await;
    assert!(
        short.raw.len() < 1024,
        "unchanged: {} bytes",
        short.raw.len()
    );
    let result = short.result();
    assert_eq!(result["isError"], json!(false), "{}", short.raw);
    assert_eq!(result["_meta"][UNCHANGED], json!(true));
    assert_eq!(result["_meta"][VERSION], json!(version));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["structuredContent"],
        json!({"unchanged": true, "contentVersion": version})
    );
    let words = result["content"][0]["text"].as_str().unwrap();
    assert!(
        words.starts_with("Unchanged") && words.contains(&version),
        "{words}"
    );
    assert_valid(
        &advertised,
        &result["structuredContent"],
        "unchanged answer",
    );
    // The short answer is not a DAP success: the gateway's own check of a
    // full result would refuse it (the advertised schema admits it only as
    // its own branch).
    assert!(tool.validate_output(&result["structuredContent"]).is_err());

    // A stale or unknown version gets the full answer, never an error.
    for stale in ["cv1-AAAAAAAAAAAAAAAAAAAAAA", "not a version", ""] {
        let reply = call(&app, None, DISCLOSURE, args.clone(), Some(stale)).await;
        assert!(
            reply.raw.len() > 10_000,
            "{stale}: {} bytes",
            reply.raw.len()
        );
        assert_eq!(version_of(&reply), version);
        assert!(reply.result()["_meta"].get(UNCHANGED).is_none());
    }
}

/// Resource reads carry a version too, and answer a matching one with one
/// `contents` entry whose text is `{"unchanged":true,"contentVersion":V}`.
#[tokio::test]
async fn resource_reads_are_versioned_and_answer_unchanged_short() {
    let app = spawn().await;
    let vehicle = chicago_vehicle(&app).await;
    for uri in [
        "dealeragent://manifest".to_owned(),
        format!("dealeragent://organization/{ORG}"),
        format!("dealeragent://organization/{ORG}/rooftop/{CHICAGO}/vehicle/{vehicle}"),
    ] {
        let read = |v: Option<String>| {
            let app = &app;
            let uri = uri.clone();
            async move {
                request(
                    app,
                    None,
                    "resources/read",
                    json!({"uri": uri}),
                    v.as_deref(),
                )
                .await
            }
        };
        let full = read(None).await;
        let version = version_of(&full);
        assert_eq!(version_of(&read(None).await), version, "{uri}: stable");
        let short = read(Some(version.clone())).await;
        assert!(short.raw.len() < 1024, "{uri}: {} bytes", short.raw.len());
        let result = short.result();
        assert_eq!(result["_meta"][UNCHANGED], json!(true));
        assert_eq!(result["contents"].as_array().map(Vec::len), Some(1));
        assert_eq!(result["contents"][0]["uri"], json!(uri));
        let text: Value =
            serde_json::from_str(result["contents"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, json!({"unchanged": true, "contentVersion": version}));
        // The usual cache hints stay.
        assert_eq!(result["ttlMs"], full.result()["ttlMs"], "{uri}");
        assert_eq!(result["cacheScope"], full.result()["cacheScope"], "{uri}");
        let stale = read(Some("cv1-AAAAAAAAAAAAAAAAAAAAAA".into())).await;
        // (The text itself may differ in a volatile member: `age_as_of`.)
        assert_eq!(version_of(&stale), version, "{uri}");
        assert!(stale.result()["_meta"].get(UNCHANGED).is_none());
        let text = stale.result()["contents"][0]["text"].as_str().unwrap();
        assert!(
            text.len() > 1_000 && !text.contains("\"unchanged\""),
            "{uri}: the full text"
        );
    }
}

/// The legacy era carries the same version and honours the same member.
#[tokio::test]
async fn the_legacy_era_is_versioned_too() {
    let app = spawn().await;
    let args = json!({"organization_id": ORG});
    let modern = call(&app, None, DEALER, args.clone(), None).await;
    let version = version_of(&modern);
    let session = app.initialize_legacy().await;
    let full = app
        .legacy(
            &session,
            "tools/call",
            json!({"name": DEALER, "arguments": args}),
        )
        .await;
    assert_eq!(
        full.result()["_meta"][VERSION],
        json!(version),
        "{}",
        full.raw
    );
    let short = app
        .legacy(
            &session,
            "tools/call",
            json!({"name": DEALER, "arguments": args, "_meta": {IF_NONE_MATCH: version}}),
        )
        .await;
    assert_eq!(
        short.result()["_meta"][UNCHANGED],
        json!(true),
        "{}",
        short.raw
    );
    assert!(short.raw.len() < 1024, "{} bytes", short.raw.len());
}

async fn token(app: &TestApp, subject: &str, rooftops: &[&str]) -> String {
    use gateway::auth::RooftopScope;
    use gateway::auth::api_token::{self, TokenRequest};
    let store = gateway::store::open(&app.database_url).await.unwrap();
    let catalog = gateway::catalog::Catalog::load().expect("catalog");
    let now = Utc::now();
    let request = TokenRequest {
        subject: subject.into(),
        organization_id: ORG.into(),
        rooftops: RooftopScope::Rooftops(rooftops.iter().map(|r| (*r).to_owned()).collect()),
        scopes: ["dealeragent:inventory:read".to_owned()].into(),
        purpose: "conditional re-read test".into(),
        expires_at: now + Duration::hours(1),
    };
    api_token::create(
        store.as_ref(),
        &request,
        &api_token::known_scopes(&catalog),
        now,
    )
    .await
    .expect("token created")
    .token
}

/// Two grants that see different views get different versions; the same
/// view gets the same version, whoever asks. And a version learnt in one
/// view is no key to another: the anonymous caller sending the partner's
/// version gets its own full answer.
#[tokio::test]
async fn versions_differ_between_views_and_agree_within_one() {
    let app = spawn().await;
    let args = json!({"organization_id": ORG});
    let anonymous = call(&app, None, DEALER, args.clone(), None).await;
    let partner = token(&app, "partner:conditional-a", &[CHICAGO, FLEET]).await;
    let twin = token(&app, "partner:conditional-b", &[CHICAGO, FLEET]).await;
    let seen = call(&app, Some(&partner), DEALER, args.clone(), None).await;
    // The partner sees the partner-only rooftop; the anonymous caller does not.
    let rooftops = |r: &common::Reply| r.result()["structuredContent"]["rooftops"].to_string();
    assert!(rooftops(&seen).contains(FLEET), "{}", seen.raw);
    assert!(!rooftops(&anonymous).contains(FLEET));
    assert_ne!(version_of(&anonymous), version_of(&seen));
    // Another credential with the same view: the same version.
    let same = call(&app, Some(&twin), DEALER, args.clone(), None).await;
    assert_eq!(
        same.result()["structuredContent"],
        seen.result()["structuredContent"]
    );
    assert_eq!(version_of(&same), version_of(&seen));
    // The partner's version does not match the anonymous view.
    let crossed = call(&app, None, DEALER, args.clone(), Some(&version_of(&seen))).await;
    assert!(crossed.result()["_meta"].get(UNCHANGED).is_none());
    assert_eq!(version_of(&crossed), version_of(&anonymous));
    // A record the caller may not read is refused before any version is
    // compared: the same refusal with or without one.
    let fleet_vehicle = {
        let found = call(
            &app,
            Some(&partner),
            "dealeragent.inventory.search",
            json!({"organization_id": ORG, "rooftop_ids": [FLEET]}),
            None,
        )
        .await;
        found.result()["structuredContent"]["vehicles"][0]["vehicle_id"]
            .as_str()
            .expect("a fleet vehicle")
            .to_owned()
    };
    let fleet_args =
        json!({"organization_id": ORG, "rooftop_id": FLEET, "vehicle_id": fleet_vehicle});
    let theirs = call(&app, Some(&partner), GET_VEHICLE, fleet_args.clone(), None).await;
    for v in [None, Some(version_of(&theirs))] {
        let refused = request(
            &app,
            None,
            "tools/call",
            json!({"name": GET_VEHICLE, "arguments": fleet_args}),
            v.as_deref(),
        )
        .await;
        assert_eq!(
            tool_error_code(refused.result()).as_deref(),
            Some("dealeragent.resource.not_found"),
            "{}",
            refused.raw
        );
        assert!(refused.result()["_meta"].get(VERSION).is_none());
    }
}

/// A real import that changes the vehicle changes its version; one that
/// leaves it as it was does not.
#[tokio::test]
async fn an_import_that_changes_the_vehicle_changes_its_version() {
    let fixture = |name: &str| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/inventory")
            .join(name)
            .display()
            .to_string()
    };
    let (dir, db) = fresh_database().await;
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/dealers.yaml");
    let out = run_cli(&db, &["import", "dealers", &demo.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run_cli(
        &db,
        &[
            "import",
            "inventory",
            &fixture("lakeshore.csv"),
            "--organization",
            ORG,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let app = spawn_on(dir, db.clone(), |_| {}).await;
    // LC1002 is repriced by the changed file; LC1001 only re-observed.
    let by_stock =
        |stock: &str| json!({"organization_id": ORG, "rooftop_id": CHICAGO, "stock_number": stock});
    let pilot = call(&app, None, GET_VEHICLE, by_stock("LC1002"), None).await;
    let before = version_of(&pilot);
    assert_eq!(
        version_of(&call(&app, None, GET_VEHICLE, by_stock("LC1002"), None).await),
        before
    );
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
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    // The running server learns of the import through the store's change
    // notifications; until then the old version is still current.
    let deadline = std::time::Instant::now() + StdDuration::from_secs(15);
    let after = loop {
        let reply = call(&app, None, GET_VEHICLE, by_stock("LC1002"), Some(&before)).await;
        if reply.result()["_meta"].get(UNCHANGED).is_none() {
            break reply.result().clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the repriced vehicle's version did not change within 15 s"
        );
        tokio::time::sleep(StdDuration::from_millis(100)).await;
    };
    assert_ne!(after["_meta"][VERSION], json!(before));
    assert_ne!(
        after["structuredContent"]["advertised_price"],
        pilot.result()["structuredContent"]["advertised_price"]
    );
}

/// A disclosure re-evaluates its offers every few seconds (a new `as_of`,
/// a new `observed_at` of the program set) without anything changing: its
/// version stays while what it says stays.
#[tokio::test]
async fn a_disclosure_keeps_its_version_across_re_evaluations() {
    /// The answer without what changes on every evaluation or request.
    fn settled(mut v: Value) -> Value {
        let s = &mut v["structuredContent"];
        s.as_object_mut().unwrap().remove("trace_id");
        s["provenance"]
            .as_object_mut()
            .unwrap()
            .remove("transformed_at");
        s["extensions"]["dealergateway.offers"]
            .as_object_mut()
            .unwrap()
            .remove("as_of");
        for source in s["provenance"]["sources"].as_array_mut().unwrap() {
            if source["source_name"] == "dealer-agent-gateway incentive programs" {
                source.as_object_mut().unwrap().remove("observed_at");
            }
        }
        v.as_object_mut().unwrap().remove("_meta");
        v.as_object_mut().unwrap().remove("content");
        v
    }
    let app = spawn().await;
    let vehicle = chicago_vehicle(&app).await;
    let args = json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": vehicle});
    let first = call(&app, None, DISCLOSURE, args.clone(), None).await;
    let as_of = |r: &common::Reply| {
        r.result()["structuredContent"]["extensions"]["dealergateway.offers"]["as_of"].clone()
    };
    let deadline = std::time::Instant::now() + StdDuration::from_secs(40);
    let later = loop {
        tokio::time::sleep(StdDuration::from_millis(500)).await;
        let reply = call(&app, None, DISCLOSURE, args.clone(), None).await;
        if as_of(&reply) != as_of(&first) {
            break reply;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no re-evaluation within 40 s"
        );
    };
    if settled(first.result().clone()) == settled(later.result().clone()) {
        assert_eq!(version_of(&later), version_of(&first));
    } else {
        // The demo re-observed the vehicle meanwhile: a real change.
        assert_ne!(version_of(&later), version_of(&first));
    }
}
