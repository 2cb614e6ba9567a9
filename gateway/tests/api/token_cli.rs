//! `dealer-gateway token create|list|revoke` and `audit export`, run as the
//! real binary; verification through the library. Runs on SQLite, and on
//! PostgreSQL when `DEALER_GATEWAY_TEST_POSTGRES_URL` is set.

use std::process::Output;

use chrono::{DateTime, TimeDelta, Utc};
use gateway::auth::api_token::{self, TokenRejection, VerifyError};
use gateway::auth::{Credential, RooftopScope};
use gateway::store::{ApiTokenRecord, AuditEvent, Store};
use serde_json::Value;

use crate::common::{run_cli, temp_dir, test_database_url, text};

const DEMO: &str = include_str!("../../../demo/dealers.yaml");
const ORG: &str = "org.lakeshore-auto-group";
const AUDIENCE: &str = "https://gateway.example.com/mcp";

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A store with the demo dealers imported by the binary.
async fn seeded() -> (std::path::PathBuf, String) {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let file = dir.join("dealers.yaml");
    std::fs::write(&file, DEMO).unwrap();
    let out = run_cli(&db, &["import", "dealers", &file.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out));
    (dir, db)
}

async fn store(db: &str) -> std::sync::Arc<dyn Store> {
    gateway::store::open(db).await.unwrap()
}

fn create_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "token",
        "create",
        "--subject",
        "agent:shopper",
        "--organization",
        ORG,
        "--scopes",
        "dealeragent:inventory:read,dealeragent:pricing:read",
        "--purpose",
        "compare prices for a customer",
        "--expires-in",
        "30d",
    ];
    args.extend_from_slice(extra);
    args
}

fn rejection(result: Result<gateway::auth::Grant, VerifyError>) -> TokenRejection {
    match result {
        Err(VerifyError::Rejected(why)) => why,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[tokio::test]
async fn create_list_revoke_and_verify() {
    let (_dir, db) = seeded().await;
    let before = Utc::now();

    // --json: exactly token_id, token, expires_at.
    let out = run_cli(
        &db,
        &create_args(&[
            "--rooftops",
            "roof.lakeshore-chicago,roof.lakeshore-lakewood",
            "--json",
        ]),
    );
    assert!(out.status.success(), "{}", text(&out));
    let created: Value = serde_json::from_str(stdout(&out).trim()).expect("one JSON object");
    let keys: Vec<&str> = created
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["token_id", "token", "expires_at"]);
    let token_id = created["token_id"].as_str().unwrap().to_owned();
    let token = created["token"].as_str().unwrap().to_owned();
    let (parsed_id, secret) = api_token::parse(&token).expect("well-formed token");
    assert_eq!(parsed_id, token_id);
    let expires_at: DateTime<Utc> = created["expires_at"].as_str().unwrap().parse().unwrap();
    let lifetime = expires_at - before;
    assert!(
        lifetime >= TimeDelta::days(30) - TimeDelta::seconds(1)
            && lifetime <= TimeDelta::days(30) + TimeDelta::minutes(1),
        "{lifetime}"
    );

    // The store keeps only the hash.
    let s = store(&db).await;
    let record = s.get_api_token(&token_id).await.unwrap().expect("stored");
    assert_ne!(record.secret_hash, secret);
    assert!(!record.secret_hash.contains(secret));
    assert!(!record.secret_hash.contains(&token));
    assert_eq!(record.secret_hash, api_token::hash_secret(secret));
    assert_eq!(record.subject, "agent:shopper");
    assert_eq!(
        record.rooftops,
        RooftopScope::Rooftops(
            [
                "roof.lakeshore-chicago".to_owned(),
                "roof.lakeshore-lakewood".to_owned()
            ]
            .into()
        )
    );
    assert_eq!(record.expires_at, expires_at);
    assert_eq!(record.revoked_at, None);

    // It verifies, and grants exactly what was asked.
    let grant = api_token::verify(s.as_ref(), &token, AUDIENCE, Utc::now())
        .await
        .expect("valid token");
    assert_eq!(grant.organization_id, ORG);
    assert_eq!(grant.audience, AUDIENCE);
    assert!(grant.covers(ORG, "roof.lakeshore-chicago"));
    assert!(!grant.covers(ORG, "roof.lakeshore-grand-rapids"));
    assert!(grant.has_scope("dealeragent:pricing:read"));
    assert_eq!(grant.purpose, "compare prices for a customer");
    assert_eq!(
        grant.credential,
        Credential::ApiToken {
            token_id: token_id.clone()
        }
    );

    // Plain output: the id, the token once, the expiry and a warning.
    let out = run_cli(&db, &create_args(&["--group"]));
    assert!(out.status.success(), "{}", text(&out));
    let plain = stdout(&out);
    let group_token = plain
        .split_whitespace()
        .find(|w| w.starts_with("dgw_"))
        .expect("the token is printed")
        .to_owned();
    let (group_id, group_secret) = api_token::parse(&group_token).unwrap();
    let group_id = group_id.to_owned();
    assert!(
        plain.contains(&format!("created token {group_id}")),
        "{plain}"
    );
    assert!(plain.contains("expires "), "{plain}");
    assert!(plain.contains("shown only this once"), "{plain}");
    let group_grant = api_token::verify(s.as_ref(), &group_token, AUDIENCE, Utc::now())
        .await
        .unwrap();
    assert_eq!(group_grant.rooftops, RooftopScope::Group);
    assert!(group_grant.covers(ORG, "roof.lakeshore-grand-rapids"));

    // list: both tokens, never a secret or a hash.
    let group_hash = api_token::hash_secret(group_secret);
    let no_secrets = |listing: &str| {
        for needle in [
            token.as_str(),
            secret,
            group_token.as_str(),
            group_secret,
            record.secret_hash.as_str(),
            group_hash.as_str(),
            record.secret_hash.trim_start_matches("sha256:"),
            group_hash.trim_start_matches("sha256:"),
            "sha256:",
        ] {
            assert!(!listing.contains(needle), "{needle} in {listing}");
        }
    };
    let out = run_cli(&db, &["token", "list"]);
    assert!(out.status.success(), "{}", text(&out));
    let listing = stdout(&out);
    no_secrets(&listing);
    assert_eq!(listing.lines().count(), 2, "{listing}");
    assert!(listing.lines().next().unwrap().starts_with(&token_id));
    assert!(listing.contains("active"));
    assert!(listing.contains("roof.lakeshore-chicago,roof.lakeshore-lakewood"));
    assert!(listing.contains("group"));

    let out = run_cli(&db, &["token", "list", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    no_secrets(&stdout(&out));
    let rows: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["token_id"], token_id.as_str());
    assert_eq!(rows[0]["status"], "active");
    assert_eq!(rows[0]["group"], false);
    assert_eq!(
        rows[0]["rooftops"],
        serde_json::json!(["roof.lakeshore-chicago", "roof.lakeshore-lakewood"])
    );
    assert_eq!(rows[1]["token_id"], group_id.as_str());
    assert_eq!(rows[1]["group"], true);
    assert_eq!(rows[1]["revoked_at"], Value::Null);

    // revoke: verification fails from then on; the other token still works.
    let out = run_cli(&db, &["token", "revoke", &token_id]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains(&format!("revoked token {token_id}")),
        "{}",
        text(&out)
    );
    assert_eq!(
        rejection(api_token::verify(s.as_ref(), &token, AUDIENCE, Utc::now()).await),
        TokenRejection::Revoked
    );
    assert!(
        api_token::verify(s.as_ref(), &group_token, AUDIENCE, Utc::now())
            .await
            .is_ok()
    );
    let revoked_at = s
        .get_api_token(&token_id)
        .await
        .unwrap()
        .unwrap()
        .revoked_at
        .expect("revoked");

    // Revoking again keeps the first time.
    let out = run_cli(&db, &["token", "revoke", &token_id]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("already revoked"), "{}", text(&out));
    let record = s.get_api_token(&token_id).await.unwrap().unwrap();
    assert_eq!(record.revoked_at, Some(revoked_at));

    let out = run_cli(&db, &["token", "list", "--json"]);
    let rows: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(rows[0]["status"], "revoked");
    assert_eq!(rows[1]["status"], "active");

    // Unknown id: exit 2.
    let out = run_cli(&db, &["token", "revoke", "0000000000000000"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("0000000000000000"), "{}", text(&out));
}

#[tokio::test]
async fn expired_token_is_rejected_and_listed_as_expired() {
    let (_dir, db) = seeded().await;
    let s = store(&db).await;
    let new = api_token::generate();
    let created_at: DateTime<Utc> = "2026-01-01T00:00:00Z".parse().unwrap();
    s.create_api_token(&ApiTokenRecord {
        token_id: new.token_id.clone(),
        secret_hash: new.secret_hash(),
        subject: "agent:old".into(),
        organization_id: ORG.into(),
        rooftops: RooftopScope::Group,
        scopes: ["dealeragent:inventory:read".to_owned()].into(),
        purpose: "expired on purpose".into(),
        created_at,
        expires_at: created_at + TimeDelta::hours(1),
        revoked_at: None,
    })
    .await
    .unwrap();
    assert!(
        api_token::verify(
            s.as_ref(),
            &new.token,
            AUDIENCE,
            created_at + TimeDelta::minutes(59)
        )
        .await
        .is_ok()
    );
    assert_eq!(
        rejection(api_token::verify(s.as_ref(), &new.token, AUDIENCE, Utc::now()).await),
        TokenRejection::Expired
    );
    let out = run_cli(&db, &["token", "list", "--json"]);
    let rows: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(rows[0]["status"], "expired");
    assert_eq!(rows[0]["created_at"], "2026-01-01T00:00:00Z");
}

#[tokio::test]
async fn bad_inputs_exit_2_and_write_nothing() {
    let (_dir, db) = seeded().await;
    let long_purpose = "p".repeat(129);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--organization",
                "org.nobody",
                "--rooftops",
                "roof.lakeshore-chicago",
            ],
            "org.nobody",
        ),
        (
            // A rooftop of the other organization.
            vec![
                "--rooftops",
                "roof.lakeshore-chicago,roof.maplecrest-toronto",
            ],
            "roof.maplecrest-toronto",
        ),
        (
            vec!["--rooftops", "roof.lakeshore-chicago", "--group"],
            "cannot be used with",
        ),
        (vec![], "--rooftops"),
        (
            vec!["--group", "--scopes", "dealeragent:inventory:write"],
            "dealeragent:inventory:write",
        ),
        (vec!["--group", "--expires-in", "30x"], "30x"),
        (vec!["--group", "--expires-in", "0d"], "0d"),
        (vec!["--group", "--expires-in", "366d"], "366d"),
        (vec!["--group", "--expires-in", "1.5h"], "1.5h"),
        (vec!["--group", "--purpose", "  "], "--purpose"),
        (vec!["--group", "--purpose", &long_purpose], "--purpose"),
        (vec!["--group", "--subject", ""], "--subject"),
    ]
    .into_iter()
    .map(|(args, needle)| (args.into_iter().map(str::to_owned).collect(), needle))
    .collect();
    for (extra, needle) in &cases {
        // Later flags override the defaults of `create_args` (clap keeps
        // the last value of a single-valued flag), except --scopes, which
        // appends: an unknown scope still fails.
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let mut args = create_args(&[]);
        if extra.contains(&"--organization") {
            // Only one --organization is allowed by clap.
            let i = args.iter().position(|a| *a == "--organization").unwrap();
            args.drain(i..i + 2);
        }
        if extra.contains(&"--purpose") {
            let i = args.iter().position(|a| *a == "--purpose").unwrap();
            args.drain(i..i + 2);
        }
        if extra.contains(&"--subject") {
            let i = args.iter().position(|a| *a == "--subject").unwrap();
            args.drain(i..i + 2);
        }
        if extra.contains(&"--expires-in") {
            let i = args.iter().position(|a| *a == "--expires-in").unwrap();
            args.drain(i..i + 2);
        }
        args.extend(extra.iter().copied());
        let out = run_cli(&db, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains(needle),
            "{args:?}: expected {needle:?} in {}",
            text(&out)
        );
        assert!(!stdout(&out).contains("dgw_"), "{}", text(&out));
        assert_eq!(
            store(&db).await.list_api_tokens().await.unwrap(),
            vec![],
            "{args:?} wrote a token"
        );
    }
}

fn audit_event(n: usize, occurred_at: DateTime<Utc>) -> AuditEvent {
    AuditEvent {
        event_id: uuid::Uuid::now_v7().to_string(),
        occurred_at,
        trace_id: format!("trace.{n}"),
        subject: "agent:shopper".into(),
        credential: Some(Credential::ApiToken {
            token_id: "0123456789abcdef".into(),
        }),
        organization_id: Some(ORG.into()),
        rooftop_ids: vec!["roof.lakeshore-chicago".into()],
        unresolved_rooftops: 0,
        tool: "dealeragent.inventory.get_vehicle".into(),
        profile: "dealeragent.inventory/0.1".into(),
        policy_decision: if n.is_multiple_of(3) { "deny" } else { "allow" }.into(),
        resource_ids: vec![format!("veh-{n}")],
        outcome: if n.is_multiple_of(3) {
            "dealeragent.tenant.forbidden"
        } else {
            "ok"
        }
        .into(),
        delegation: vec![],
    }
}

#[tokio::test]
async fn audit_export_prints_json_lines_oldest_first() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let s = store(&db).await;
    let base: DateTime<Utc> = "2026-12-01T00:00:00Z".parse().unwrap();
    // More than one internal page (1000), many events sharing a timestamp,
    // appended out of order.
    let count = 2_150;
    let mut events: Vec<AuditEvent> = (0..count)
        .map(|n| {
            let minute = i64::try_from((count - n) / 700).unwrap();
            audit_event(n, base + TimeDelta::minutes(minute))
        })
        .collect();
    for e in &events {
        s.append_audit(e).await.unwrap();
    }
    events.sort_by(|a, b| (a.occurred_at, &a.event_id).cmp(&(b.occurred_at, &b.event_id)));

    let export = |since: &str| {
        let out = run_cli(&db, &["audit", "export", "--since", since]);
        assert!(out.status.success(), "{}", text(&out));
        stdout(&out)
            .lines()
            .map(|l| serde_json::from_str::<AuditEvent>(l).expect("one JSON object per line"))
            .collect::<Vec<_>>()
    };
    assert_eq!(export("2026-11-30T00:00:00Z"), events);
    // Inclusive, and an offset other than Z is understood.
    let cutoff = base + TimeDelta::minutes(2);
    let expected: Vec<AuditEvent> = events
        .iter()
        .filter(|e| e.occurred_at >= cutoff)
        .cloned()
        .collect();
    assert!(!expected.is_empty() && expected.len() < events.len());
    assert_eq!(export("2026-11-30T19:02:00-05:00"), expected);
    assert_eq!(export("2027-01-01T00:00:00Z"), vec![]);

    // The fields of one line, by name.
    let out = run_cli(&db, &["audit", "export", "--since", "2026-11-30T00:00:00Z"]);
    let first: Value = serde_json::from_str(stdout(&out).lines().next().unwrap()).unwrap();
    for field in [
        "event_id",
        "occurred_at",
        "trace_id",
        "subject",
        "credential",
        "organization_id",
        "rooftop_ids",
        "tool",
        "profile",
        "policy_decision",
        "resource_ids",
        "outcome",
        "delegation",
    ] {
        assert!(first.get(field).is_some(), "{field} missing in {first}");
    }

    for bad in ["2026-12-01", "2026-12-01T00:00:00", "yesterday"] {
        let out = run_cli(&db, &["audit", "export", "--since", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out));
        assert!(text(&out).contains("RFC 3339"), "{}", text(&out));
    }
}

/// Refused anonymous calls are kept as counter rows (docs/tokens-and-audit.md
/// "Counted calls"), and the export must include them (more than one page
/// of them), each line marked `"record": "audit_counter"`, after the events.
#[tokio::test]
async fn audit_export_includes_every_counter_row_after_the_events() {
    use gateway::store::AuditCount;
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let s = store(&db).await;
    let base: DateTime<Utc> = "2026-12-01T00:00:00Z".parse().unwrap();
    let events: Vec<AuditEvent> = (0..3).map(|n| audit_event(n, base)).collect();
    for e in &events {
        s.append_audit(e).await.unwrap();
    }
    // 2,400 distinct keys over three minutes: more than two export pages.
    let mut expected = Vec::new();
    for n in 0..2_400u32 {
        let at = base + TimeDelta::seconds(i64::from(n % 3) * 60 + 5);
        let ip: std::net::IpAddr = format!("10.{}.{}.9", n / 200, n % 200).parse().unwrap();
        let outcome = if n % 2 == 0 {
            "dealeragent.rate_limited"
        } else {
            "dealeragent.validation.invalid"
        };
        let one = AuditCount::one(
            at,
            ip,
            &format!("trace-{n}"),
            "dealeragent.inventory.verify_availability",
            "dealeragent.retail.read/0.1",
            "deny",
            outcome,
        );
        s.count_audit(&one, 10_000).await.unwrap();
        expected.push(one);
    }
    // Counted twice: the count adds up.
    s.count_audit(&expected[7], 10_000).await.unwrap();
    expected[7].count = 2;
    expected.sort_by(|a, b| {
        (a.window_start, &a.client_network, &a.tool, &a.outcome).cmp(&(
            b.window_start,
            &b.client_network,
            &b.tool,
            &b.outcome,
        ))
    });
    let stored = s.audit_counts_since(base, 10_000).await.unwrap();
    assert_eq!(stored.len(), 2_400);

    let out = run_cli(&db, &["audit", "export", "--since", "2026-11-30T00:00:00Z"]);
    assert!(out.status.success(), "{}", text(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(lines.len(), 3 + 2_400);
    let (event_lines, counter_lines) = lines.split_at(3);
    for (line, event) in event_lines.iter().zip(&events) {
        assert!(line.get("record").is_none(), "{line}");
        assert_eq!(
            &serde_json::from_value::<AuditEvent>(line.clone()).unwrap(),
            event
        );
    }
    let counters: Vec<AuditCount> = counter_lines
        .iter()
        .map(|l| {
            assert_eq!(l["record"], "audit_counter", "{l}");
            serde_json::from_value(l.clone()).unwrap()
        })
        .collect();
    // The store's own order, which keyset paging must keep across pages.
    assert_eq!(counters, stored);
    assert_eq!(counters.iter().map(|c| c.count).sum::<u64>(), 2_401);
    // --since applies to counter rows too (by their window).
    let out = run_cli(&db, &["audit", "export", "--since", "2026-12-01T00:02:00Z"]);
    let later = stdout(&out).lines().count();
    assert_eq!(later, 800, "{}", text(&out));
}

#[tokio::test]
async fn audit_export_of_an_empty_log_prints_nothing() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let out = run_cli(&db, &["audit", "export", "--since", "2000-01-01T00:00:00Z"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(stdout(&out), "");
}

/// The console's scope is a scope of this gateway, so an
/// operator can issue a manager's token from the command line; an unknown
/// scope is still refused.
#[tokio::test]
async fn a_console_token_can_be_created_and_an_unknown_scope_cannot() {
    let (_dir, db) = seeded().await;
    let manager = [
        "token",
        "create",
        "--subject",
        "manager:chicago",
        "--organization",
        ORG,
        "--scopes",
        "dealergateway:console:read",
        "--purpose",
        "preview what agents are told",
        "--expires-in",
        "8h",
        "--rooftops",
        "roof.lakeshore-chicago",
        "--json",
    ];
    let out = run_cli(&db, &manager);
    assert!(out.status.success(), "{}", text(&out));
    let mut unknown = manager;
    unknown[7] = "dealergateway:console:write";
    let out = run_cli(&db, &unknown);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("dealergateway:console:write"),
        "{}",
        text(&out)
    );
}
