//! Audit that cannot be crowded out or skipped (docs/tokens-and-audit.md
//! "Audit events" and "When the audit log cannot be written"): an event
//! keeps only what identifies the decision, and a non-public read whose
//! event cannot be written is refused, retryable, while public reads go on
//! (unless `--audit-refuse-public-reads` makes the gateway stricter).
//! Each principal's share of the size bound is a store test
//! (`store::tests`, both backends).

use chrono::Utc;
use gateway::auth::RooftopScope;
use gateway::auth::api_token::SCOPE_INVENTORY_READ;
use gateway::store::Store;
use serde_json::{Value, json};

use crate::common::{self, MODERN, Reply, TestApp, tool_error_code};
use crate::security::{CHICAGO, ORG, VERIFY, create_token};

const SEARCH: &str = "dealeragent.inventory.search";
const UNAVAILABLE: &str = "dealeragent.upstream.unavailable";

/// One modern request with `token` as a bearer credential.
async fn authed(app: &TestApp, token: &str, method: &str, params: Value) -> Reply {
    let body = common::modern_body(1, method, params);
    let name = body["params"]
        .get("name")
        .or_else(|| body["params"].get("uri"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let bearer = format!("Bearer {token}");
    app.post_raw(
        &[
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", MODERN),
            ("mcp-method", method),
            ("mcp-name", &name),
            ("authorization", &bearer),
        ],
        body.to_string(),
    )
    .await
}

async fn store_of(app: &TestApp) -> std::sync::Arc<dyn Store> {
    gateway::store::open(&app.database_url)
        .await
        .expect("store opens")
}

#[tokio::test]
async fn a_search_naming_100_long_rooftop_ids_writes_a_small_event() {
    let app = common::spawn().await;
    let store = store_of(&app).await;
    let token = create_token(
        store.as_ref(),
        "partner:long-ids",
        ORG,
        RooftopScope::Group,
        &[SCOPE_INVENTORY_READ],
    )
    .await;
    let since = Utc::now();
    // One rooftop the grant covers, then 100 made-up ids of the largest
    // size the identifier schema allows (128 characters).
    let mut rooftop_ids = vec![json!(CHICAGO)];
    rooftop_ids.extend((0..100).map(|n| json!(format!("roof.{n:03}{}", "x".repeat(120)))));
    assert_eq!(rooftop_ids[1].as_str().unwrap().len(), 128);
    let reply = authed(
        &app,
        &token,
        "tools/call",
        json!({"name": SEARCH, "arguments": {"organization_id": ORG, "rooftop_ids": rooftop_ids}}),
    )
    .await;
    assert_eq!(
        tool_error_code(reply.result()).as_deref(),
        Some("dealeragent.resource.not_found"),
        "{}",
        reply.raw
    );

    let events = store.audit_since(since, 100).await.unwrap();
    let event = events
        .iter()
        .find(|e| e.subject == "partner:long-ids" && e.tool == SEARCH)
        .expect("the search is audited");
    // What identifies the decision: the covered rooftop, and a count.
    assert_eq!(event.rooftop_ids, [CHICAGO]);
    assert_eq!(event.unresolved_rooftops, 100);
    assert_eq!(event.policy_decision, "deny");
    let bytes = serde_json::to_string(event).unwrap().len();
    assert!(bytes < 1_024, "{bytes} bytes: {event:?}");
}

/// Makes every audit write of the store at `url` fail, as a full disk
/// would: a trigger that raises on each insert or update of the two
/// audit tables (`false` drops it again).
async fn audit_writes_fail(url: &str, fail: bool) {
    use sqlx::Connection as _;
    if url.starts_with("postgres") {
        let mut conn = sqlx::PgConnection::connect(url).await.expect("connect");
        let statements: &[&'static str] = if fail {
            &[
                "create or replace function refuse_audit() returns trigger language plpgsql as
                 $$ begin raise exception 'simulated full disk'; end $$",
                "create trigger audit_events_refuse before insert on audit_events
                 for each row execute function refuse_audit()",
                "create trigger audit_counters_refuse before insert or update on audit_counters
                 for each row execute function refuse_audit()",
            ]
        } else {
            &[
                "drop trigger audit_events_refuse on audit_events",
                "drop trigger audit_counters_refuse on audit_counters",
            ]
        };
        for statement in statements {
            sqlx::query(*statement)
                .execute(&mut conn)
                .await
                .expect("trigger statement");
        }
    } else {
        let mut conn = sqlx::SqliteConnection::connect(url).await.expect("connect");
        let statements: &[&'static str] = if fail {
            &[
                "create trigger audit_events_refuse before insert on audit_events
                 begin select raise(abort, 'simulated full disk'); end",
                "create trigger audit_counters_refuse before insert on audit_counters
                 begin select raise(abort, 'simulated full disk'); end",
                "create trigger audit_counters_refuse_update before update on audit_counters
                 begin select raise(abort, 'simulated full disk'); end",
            ]
        } else {
            &[
                "drop trigger audit_events_refuse",
                "drop trigger audit_counters_refuse",
                "drop trigger audit_counters_refuse_update",
            ]
        };
        for statement in statements {
            sqlx::query(*statement)
                .execute(&mut conn)
                .await
                .expect("trigger statement");
        }
    }
}

#[tokio::test]
async fn a_non_public_read_whose_event_cannot_be_written_is_refused_and_public_reads_go_on() {
    let app = common::spawn().await;
    let store = store_of(&app).await;
    let token = create_token(
        store.as_ref(),
        "partner:audited",
        ORG,
        RooftopScope::Group,
        &[SCOPE_INVENTORY_READ],
    )
    .await;
    let search =
        json!({"name": SEARCH, "arguments": {"organization_id": ORG, "rooftop_ids": [CHICAGO]}});
    let served = authed(&app, &token, "tools/call", search.clone()).await;
    assert_eq!(tool_error_code(served.result()), None, "{}", served.raw);
    let vehicle = served.result()["structuredContent"]["vehicles"][0]["vehicle_id"]
        .as_str()
        .expect("a vehicle")
        .to_owned();

    audit_writes_fail(&app.database_url, true).await;
    // The authenticated search: refused, retryable, nothing of the answer.
    let refused = authed(&app, &token, "tools/call", search.clone()).await;
    let result = refused.result();
    assert_eq!(
        tool_error_code(result).as_deref(),
        Some(UNAVAILABLE),
        "{}",
        refused.raw
    );
    assert_eq!(result["structuredContent"]["retryable"], json!(true));
    assert!(
        result["structuredContent"]["retry_after_ms"]
            .as_u64()
            .is_some()
    );
    assert!(!refused.raw.contains(&vehicle), "{}", refused.raw);
    // An authenticated resource read: refused with a retryable 503.
    let uri = format!("dealeragent://organization/{ORG}/rooftop/{CHICAGO}/vehicle/{vehicle}");
    let read = authed(&app, &token, "resources/read", json!({"uri": uri})).await;
    assert_eq!(read.status, 503, "{}", read.raw);
    assert!(!read.raw.contains("\"contents\""), "{}", read.raw);
    // Public reads go on: an anonymous search of the public rooftop, and an
    // anonymous availability check's refusal (a counted audit entry).
    let public = app.call_tool(SEARCH, search["arguments"].clone()).await;
    assert_eq!(tool_error_code(&public), None, "{public}");
    assert!(public["structuredContent"]["vehicles"][0]["vehicle_id"] == vehicle.as_str());
    let verify = json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": "veh.000000000000000000000000"});
    let unknown = app.call_tool(VERIFY, verify.clone()).await;
    assert_eq!(
        tool_error_code(&unknown).as_deref(),
        Some("dealeragent.resource.not_found"),
        "{unknown}"
    );

    // Once the log is writable again, the same read is served (and audited).
    audit_writes_fail(&app.database_url, false).await;
    let since = Utc::now();
    let again = authed(&app, &token, "tools/call", search).await;
    assert_eq!(tool_error_code(again.result()), None, "{}", again.raw);
    let events = store.audit_since(since, 10).await.unwrap();
    assert!(events.iter().any(|e| e.subject == "partner:audited"));
}

#[tokio::test]
async fn the_stricter_setting_also_refuses_public_reads_whose_audit_fails() {
    let app = common::spawn_with(|s| s.audit_refuse_public_reads = true).await;
    audit_writes_fail(&app.database_url, true).await;
    let verify = json!({"organization_id": ORG, "rooftop_id": CHICAGO, "vehicle_id": "veh.000000000000000000000000"});
    let refused = app.call_tool(VERIFY, verify).await;
    assert_eq!(
        tool_error_code(&refused).as_deref(),
        Some(UNAVAILABLE),
        "{refused}"
    );
    // A public read that is not audited at all is not affected.
    let search = app
        .call_tool(
            SEARCH,
            json!({"organization_id": ORG, "rooftop_ids": [CHICAGO]}),
        )
        .await;
    assert_eq!(tool_error_code(&search), None, "{search}");
}
