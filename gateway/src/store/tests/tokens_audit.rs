//! API tokens and the audit log.

use super::*;

// ---------------------------------------------------------------------------
// API tokens and the audit log
// ---------------------------------------------------------------------------

pub(super) fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

pub(super) fn token_record(
    new: &crate::auth::api_token::NewToken,
    rooftops: RooftopScope,
    created_at: &str,
) -> ApiTokenRecord {
    ApiTokenRecord {
        token_id: new.token_id.clone(),
        secret_hash: new.secret_hash(),
        subject: "agent:shopper".into(),
        organization_id: "org-a".into(),
        rooftops,
        scopes: ["dealeragent:inventory:read".to_owned()].into(),
        purpose: "price comparison".into(),
        created_at: at(created_at),
        expires_at: at("2027-01-01T00:00:00.000001Z"),
        revoked_at: None,
    }
}

pub(super) fn audit_event(n: u32, occurred_at: &str) -> AuditEvent {
    AuditEvent {
        event_id: uuid::Uuid::now_v7().to_string(),
        occurred_at: at(occurred_at),
        trace_id: format!("trace.{n}"),
        subject: "agent:shopper".into(),
        credential: Some(Credential::ApiToken {
            token_id: "0123456789abcdef".into(),
        }),
        organization_id: Some("org-a".into()),
        rooftop_ids: vec!["a-1".into(), "a-2".into()],
        unresolved_rooftops: 0,
        tool: "dealeragent.inventory.search".into(),
        profile: "dealeragent.inventory/0.1".into(),
        policy_decision: "allow".into(),
        resource_ids: vec![format!("veh-{n}")],
        outcome: "ok".into(),
        delegation: vec![],
    }
}

pub(super) async fn api_tokens_round_trip_in_creation_order(store: &dyn Store) {
    use crate::auth::api_token::generate;
    seed_dealers(store).await;
    let (x, y) = (generate(), generate());
    // Created out of order: the list follows created_at.
    let later = token_record(&x, RooftopScope::Group, "2026-12-02T00:00:00.000002Z");
    let mut earlier = token_record(
        &y,
        RooftopScope::Rooftops(["a-1".to_owned(), "a-2".to_owned()].into()),
        "2026-12-01T00:00:00.123456Z",
    );
    earlier.scopes.insert("dealeragent:pricing:read".into());
    earlier.revoked_at = Some(at("2026-12-01T01:00:00Z"));
    store.create_api_token(&later).await.unwrap();
    store.create_api_token(&earlier).await.unwrap();
    assert_eq!(
        store.get_api_token(&x.token_id).await.unwrap(),
        Some(later.clone())
    );
    assert_eq!(
        store.get_api_token(&y.token_id).await.unwrap(),
        Some(earlier.clone())
    );
    assert_eq!(store.get_api_token("ffffffffffffffff").await.unwrap(), None);
    assert_eq!(
        store.list_api_tokens().await.unwrap(),
        vec![earlier, later.clone()]
    );
    // A token id names one token.
    let err = store.create_api_token(&later).await.unwrap_err();
    assert!(matches!(err, StoreError::Query(_)), "{err:?}");
    assert_eq!(store.list_api_tokens().await.unwrap().len(), 2);
}

pub(super) async fn revoking_a_token_keeps_the_first_time(store: &dyn Store) {
    use crate::auth::api_token::generate;
    seed_dealers(store).await;
    let new = generate();
    let record = token_record(&new, RooftopScope::Group, "2026-12-01T00:00:00Z");
    store.create_api_token(&record).await.unwrap();
    assert!(
        !store
            .revoke_api_token("ffffffffffffffff", at("2026-12-02T00:00:00Z"))
            .await
            .unwrap()
    );
    let first = at("2026-12-02T00:00:00.000007Z");
    assert!(store.revoke_api_token(&new.token_id, first).await.unwrap());
    assert!(
        store
            .revoke_api_token(&new.token_id, at("2026-12-03T00:00:00Z"))
            .await
            .unwrap()
    );
    let stored = store.get_api_token(&new.token_id).await.unwrap().unwrap();
    assert_eq!(stored.revoked_at, Some(first));
    assert_eq!(
        stored,
        ApiTokenRecord {
            revoked_at: Some(first),
            ..record
        }
    );
}

pub(super) async fn api_token_of_unknown_organization_or_foreign_rooftop_fails(store: &dyn Store) {
    use crate::auth::api_token::generate;
    seed_dealers(store).await;
    let mut unknown_org = token_record(&generate(), RooftopScope::Group, "2026-12-01T00:00:00Z");
    unknown_org.organization_id = "org-z".into();
    let message = query_message(store.create_api_token(&unknown_org).await.unwrap_err());
    assert!(message.contains("org-z"), "{message}");
    // b-1 is org-b's.
    let foreign = token_record(
        &generate(),
        RooftopScope::Rooftops(["a-1".to_owned(), "b-1".to_owned()].into()),
        "2026-12-01T00:00:00Z",
    );
    let message = query_message(store.create_api_token(&foreign).await.unwrap_err());
    assert!(message.contains("'b-1'"), "{message}");
    assert_eq!(store.list_api_tokens().await.unwrap(), vec![]);
}

pub(super) async fn api_token_verification_follows_the_store(store: &dyn Store) {
    use crate::auth::api_token::{TokenRejection, VerifyError, generate, verify};
    seed_dealers(store).await;
    let new = generate();
    let record = token_record(
        &new,
        RooftopScope::Rooftops(["a-2".to_owned()].into()),
        "2026-12-01T00:00:00Z",
    );
    store.create_api_token(&record).await.unwrap();
    let audience = "https://gateway.example.com/mcp";
    let now = at("2026-12-15T00:00:00Z");
    let grant = verify(store, &new.token, audience, now).await.unwrap();
    assert_eq!(grant.subject, "agent:shopper");
    assert_eq!(grant.audience, audience);
    assert_eq!(grant.organization_id, "org-a");
    assert!(grant.covers("org-a", "a-2") && !grant.covers("org-a", "a-1"));
    assert_eq!(grant.expires_at, record.expires_at);
    assert_eq!(grant.purpose, "price comparison");
    assert!(grant.delegation.is_empty());
    assert_eq!(
        grant.credential,
        Credential::ApiToken {
            token_id: new.token_id.clone()
        }
    );
    let rejected = |r: Result<crate::auth::Grant, VerifyError>| match r {
        Err(VerifyError::Rejected(why)) => why,
        other => panic!("not a rejection: {other:?}"),
    };
    // Same id, another secret: unknown, like an id never issued.
    let other = generate();
    let forged = format!(
        "dgw_{}_{}",
        new.token_id,
        crate::auth::api_token::parse(&other.token).unwrap().1
    );
    assert_eq!(
        rejected(verify(store, &forged, audience, now).await),
        TokenRejection::Unknown
    );
    assert_eq!(
        rejected(verify(store, &other.token, audience, now).await),
        TokenRejection::Unknown
    );
    assert_eq!(
        rejected(verify(store, "Bearer nonsense", audience, now).await),
        TokenRejection::Malformed
    );
    assert_eq!(
        rejected(verify(store, &new.token, audience, record.expires_at).await),
        TokenRejection::Expired
    );
    store.revoke_api_token(&new.token_id, now).await.unwrap();
    assert_eq!(
        rejected(verify(store, &new.token, audience, now).await),
        TokenRejection::Revoked
    );
}

pub(super) async fn audit_since_filters_and_orders(store: &dyn Store) {
    let events = [
        audit_event(0, "2026-12-01T10:00:00.000003Z"),
        audit_event(1, "2026-12-01T09:00:00Z"),
        audit_event(2, "2026-12-01T10:00:00.000001Z"),
        audit_event(3, "2026-12-01T10:00:00.000001Z"),
    ];
    let mut anonymous = audit_event(4, "2026-12-01T11:00:00Z");
    anonymous.subject = "anonymous".into();
    anonymous.credential = None;
    anonymous.organization_id = None;
    anonymous.policy_decision = "deny".into();
    anonymous.outcome = "dealeragent.auth.required".into();
    anonymous.delegation = vec!["agent:outer".into(), "agent:inner".into()];
    for e in events.iter().chain([&anonymous]) {
        store.append_audit(e).await.unwrap();
    }
    // A repeated event id is refused.
    assert!(store.append_audit(&events[0]).await.is_err());

    let all = store
        .audit_since(at("2026-01-01T00:00:00Z"), 100)
        .await
        .unwrap();
    let mut tied = [events[2].clone(), events[3].clone()];
    tied.sort_by(|a, b| a.event_id.cmp(&b.event_id));
    let expected = vec![
        events[1].clone(),
        tied[0].clone(),
        tied[1].clone(),
        events[0].clone(),
        anonymous.clone(),
    ];
    assert_eq!(all, expected);
    // `since` is inclusive, to the microsecond.
    let since = store
        .audit_since(at("2026-12-01T10:00:00.000001Z"), 100)
        .await
        .unwrap();
    assert_eq!(since, expected[1..]);
    let limited = store
        .audit_since(at("2026-12-01T10:00:00.000002Z"), 1)
        .await
        .unwrap();
    assert_eq!(limited, vec![events[0].clone()]);
    assert_eq!(
        store
            .audit_since(at("2026-12-02T00:00:00Z"), 100)
            .await
            .unwrap(),
        vec![]
    );
    let after = store
        .audit_after(tied[0].occurred_at, &tied[0].event_id, 100)
        .await
        .unwrap();
    assert_eq!(after, expected[2..]);
}

pub(super) async fn audit_pages_through_events_sharing_a_timestamp(store: &dyn Store) {
    let mut appended: Vec<AuditEvent> = (0..25)
        .map(|n| {
            let second = if n < 20 { 1 } else { 2 };
            audit_event(n, &format!("2026-12-01T10:00:0{second}Z"))
        })
        .collect();
    for e in &appended {
        store.append_audit(e).await.unwrap();
    }
    appended.sort_by(|a, b| (a.occurred_at, &a.event_id).cmp(&(b.occurred_at, &b.event_id)));
    let mut seen = store
        .audit_since(at("2026-12-01T00:00:00Z"), 7)
        .await
        .unwrap();
    let mut page = seen.clone();
    while page.len() == 7 {
        let last = page.last().unwrap();
        page = store
            .audit_after(last.occurred_at, &last.event_id, 7)
            .await
            .unwrap();
        seen.extend(page.iter().cloned());
    }
    assert_eq!(seen, appended);
}

pub(super) async fn audit_event_never_contains_the_token_secret(store: &dyn Store) {
    use crate::auth::Principal;
    use crate::auth::api_token::{generate, parse, verify};
    seed_dealers(store).await;
    let new = generate();
    store
        .create_api_token(&token_record(
            &new,
            RooftopScope::Group,
            "2026-12-01T00:00:00Z",
        ))
        .await
        .unwrap();
    let grant = verify(
        store,
        &new.token,
        "https://gw.example/mcp",
        at("2026-12-02T00:00:00Z"),
    )
    .await
    .unwrap();
    let principal = Principal::Authenticated(Arc::new(grant));
    let mut event = AuditEvent::for_principal(
        &principal,
        "trace.1",
        "dealeragent.inventory.get_vehicle",
        "dealeragent.inventory/0.1",
    );
    event.organization_id = Some("org-a".into());
    event.rooftop_ids = vec!["a-1".into()];
    event.resource_ids = vec!["veh-1".into()];
    store.append_audit(&event).await.unwrap();
    let stored = store.audit_since(event.occurred_at, 10).await.unwrap();
    assert_eq!(stored, vec![event.clone()]);
    let line = serde_json::to_string(&stored[0]).unwrap();
    let secret = parse(&new.token).unwrap().1;
    assert!(!line.contains(secret), "{line}");
    assert!(!line.contains(&new.token), "{line}");
    assert!(!line.contains(&new.secret_hash()), "{line}");
    assert!(!line.contains(new.secret_hash().trim_start_matches("sha256:")));
    // It does name the token, by its public id.
    assert!(line.contains(&new.token_id), "{line}");
    let value: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(value["subject"], "agent:shopper");
    assert_eq!(
        value["credential"],
        json!({"kind": "api_token", "token_id": new.token_id})
    );
    assert_eq!(value["policy_decision"], "allow");
    assert_eq!(value["outcome"], "ok");
}

/// One refused anonymous call of `network`'s host `.7` at `at`.
pub(super) fn audit_count(at_text: &str, network: &str, outcome: &str) -> AuditCount {
    let host = network.replace(".0/24", ".7");
    AuditCount::one(
        at(at_text),
        host.parse().unwrap(),
        &format!("trace.{at_text}"),
        "dealeragent.inventory.verify_availability",
        "dealeragent.inventory.availability/0.1",
        "deny",
        outcome,
    )
}

pub(super) async fn audit_events_are_stored_within_their_bounds(store: &dyn Store) {
    let before = store.audit_footprint().await.unwrap();
    assert_eq!(before, AuditFootprint::default());
    // What a hostile request used to put in an event: a 900,000-character
    // organization id, ids that fail the identifier schema, an endless list.
    let mut hostile = audit_event(1, "2026-12-01T10:00:00Z");
    hostile.organization_id = Some("o".repeat(900_000));
    hostile.rooftop_ids = vec!["a-1".into(), "not an id".into(), "a".repeat(129)];
    hostile.resource_ids = vec!["veh-1".into(); 5_000];
    hostile.subject = "s".repeat(100_000);
    store.append_audit(&hostile).await.unwrap();
    let stored = store
        .audit_since(at("2026-12-01T00:00:00Z"), 10)
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    let e = &stored[0];
    assert_eq!(e.organization_id.as_deref(), Some(audit::INVALID_MARKER));
    assert_eq!(
        e.rooftop_ids,
        ["a-1", audit::INVALID_MARKER, audit::INVALID_MARKER]
    );
    assert_eq!(e.resource_ids.len(), audit::MAX_LIST_ENTRIES);
    assert_eq!(e.resource_ids.last().unwrap(), audit::TRUNCATED_MARKER);
    assert!(
        e.subject.len() <= audit::MAX_TEXT_BYTES,
        "{}",
        e.subject.len()
    );
    assert_eq!(*e, hostile.bounded());
    let line = serde_json::to_string(e).unwrap();
    assert!(line.len() <= audit::MAX_EVENT_BYTES, "{}", line.len());
    // The footprint counts the stored text, byte for byte on both backends.
    let after = store.audit_footprint().await.unwrap();
    assert_eq!((after.events, after.counters), (1, 0));
    assert!(after.bytes < 2_048, "{after:?}");
    let fields: usize = [
        e.event_id.len(),
        27,
        e.trace_id.len(),
        e.subject.len(),
        serde_json::to_string(&e.credential).unwrap().len(),
        e.organization_id.as_ref().map_or(0, String::len),
        serde_json::to_string(&e.rooftop_ids).unwrap().len(),
        e.tool.len(),
        e.profile.len(),
        e.policy_decision.len(),
        serde_json::to_string(&e.resource_ids).unwrap().len(),
        e.outcome.len(),
        serde_json::to_string(&e.delegation).unwrap().len(),
    ]
    .iter()
    .sum();
    assert_eq!(after.bytes, fields as u64);
}

pub(super) async fn audit_counters_add_up_and_cap_the_keys_of_a_window(store: &dyn Store) {
    const LIMITED: &str = "dealeragent.rate_limited";
    const INVALID: &str = "dealeragent.validation.invalid";
    let first = audit_count("2026-12-01T10:00:05Z", "192.0.2.0/24", LIMITED);
    store.count_audit(&first, 3).await.unwrap();
    store
        .count_audit(
            &audit_count("2026-12-01T10:00:50.5Z", "192.0.2.0/24", LIMITED),
            3,
        )
        .await
        .unwrap();
    store
        .count_audit(
            &audit_count("2026-12-01T10:00:20Z", "192.0.2.0/24", LIMITED),
            3,
        )
        .await
        .unwrap();
    // Two more keys fill the window's cap of 3; the next networks overflow.
    for (network, outcome) in [
        ("192.0.2.0/24", INVALID),
        ("198.51.100.0/24", LIMITED),
        ("203.0.113.0/24", LIMITED),
        ("10.9.8.0/24", LIMITED),
    ] {
        store
            .count_audit(&audit_count("2026-12-01T10:00:30Z", network, outcome), 3)
            .await
            .unwrap();
    }
    // The next window starts afresh.
    store
        .count_audit(
            &audit_count("2026-12-01T10:01:00Z", "203.0.113.0/24", LIMITED),
            3,
        )
        .await
        .unwrap();
    let rows = store
        .audit_counts_since(at("2026-12-01T00:00:00Z"), 100)
        .await
        .unwrap();
    let keys: Vec<(String, &str, &str, u64)> = rows
        .iter()
        .map(|r| {
            (
                r.window_start.to_rfc3339(),
                r.client_network.as_str(),
                r.outcome.as_str(),
                r.count,
            )
        })
        .collect();
    let w0 = "2026-12-01T10:00:00+00:00".to_owned();
    let w1 = "2026-12-01T10:01:00+00:00".to_owned();
    assert_eq!(
        keys,
        vec![
            (w0.clone(), "192.0.2.0/24", LIMITED, 3),
            (w0.clone(), "192.0.2.0/24", INVALID, 1),
            (w0.clone(), "198.51.100.0/24", LIMITED, 1),
            (w0.clone(), audit::OVERFLOW_NETWORK, LIMITED, 2),
            (w1, "203.0.113.0/24", LIMITED, 1),
        ]
    );
    let limited = &rows[0];
    assert_eq!(limited.first_trace_id, first.first_trace_id);
    assert_eq!(limited.last_at, at("2026-12-01T10:00:50.5Z"));
    assert_eq!(limited.policy_decision, "deny");
    let since = store
        .audit_counts_since(at("2026-12-01T10:01:00Z"), 100)
        .await
        .unwrap();
    assert_eq!(since.len(), 1);
    let footprint = store.audit_footprint().await.unwrap();
    assert_eq!((footprint.events, footprint.counters), (0, 5));
    assert!(footprint.bytes < 5 * 300, "{footprint:?}");
}

pub(super) async fn audit_retention_prunes_entries_older_than_the_cutoff(store: &dyn Store) {
    let old = audit_event(1, "2026-08-01T00:00:00Z");
    let at_cutoff = audit_event(2, "2026-09-02T00:00:00Z");
    let recent = audit_event(3, "2026-11-30T00:00:00Z");
    for e in [&old, &at_cutoff, &recent] {
        store.append_audit(e).await.unwrap();
    }
    for when in ["2026-08-01T00:00:10Z", "2026-11-30T00:00:10Z"] {
        store
            .count_audit(
                &audit_count(when, "192.0.2.0/24", "dealeragent.rate_limited"),
                256,
            )
            .await
            .unwrap();
    }
    // 90 days before 2026-12-01.
    let policy = AuditRetention {
        retention_days: 90,
        max_events: 1_000_000,
    };
    let now = at("2026-12-01T00:00:00Z");
    assert_eq!(policy.cutoff(now), at("2026-09-02T00:00:00Z"));
    let summary = audit::prune(store, policy, now).await.unwrap();
    assert_eq!(
        summary,
        AuditPruneSummary {
            events_expired: 1,
            counters_expired: 1,
            ..AuditPruneSummary::default()
        }
    );
    let kept = store
        .audit_since(at("2000-01-01T00:00:00Z"), 100)
        .await
        .unwrap();
    assert_eq!(kept, vec![at_cutoff, recent]);
    let counters = store
        .audit_counts_since(at("2000-01-01T00:00:00Z"), 100)
        .await
        .unwrap();
    assert_eq!(counters.len(), 1);
    assert_eq!(counters[0].window_start, at("2026-11-30T00:00:00Z"));
    // A second pass finds nothing to do.
    assert_eq!(
        audit::prune(store, policy, now).await.unwrap(),
        AuditPruneSummary::default()
    );
}

pub(super) async fn audit_size_bound_prunes_the_oldest_entries_first(store: &dyn Store) {
    // 250 events, five sharing each second, appended newest first.
    let mut appended: Vec<AuditEvent> = (0..250)
        .rev()
        .map(|n| {
            let second = n / 5;
            audit_event(
                n,
                &format!("2026-12-01T10:{:02}:{:02}Z", second / 60, second % 60),
            )
        })
        .collect();
    for e in &appended {
        store.append_audit(e).await.unwrap();
    }
    for minute in 0..12 {
        let when = format!("2026-12-01T09:{minute:02}:00Z");
        store
            .count_audit(
                &audit_count(&when, "192.0.2.0/24", "dealeragent.rate_limited"),
                256,
            )
            .await
            .unwrap();
    }
    appended.sort_by(|a, b| (a.occurred_at, &a.event_id).cmp(&(b.occurred_at, &b.event_id)));
    let summary = store
        .prune_audit(at("2000-01-01T00:00:00Z"), 100, 5)
        .await
        .unwrap();
    assert_eq!(summary.events_expired + summary.counters_expired, 0);
    assert_eq!(summary.events_over_limit, 150);
    assert_eq!(summary.counters_over_limit, 7);
    assert_eq!(
        summary.events_pruned_through,
        Some(appended[149].occurred_at)
    );
    assert_eq!(
        summary.counters_pruned_through,
        Some(at("2026-12-01T09:06:00Z"))
    );
    let kept = store
        .audit_since(at("2000-01-01T00:00:00Z"), 1_000)
        .await
        .unwrap();
    assert_eq!(kept, appended[150..]);
    let counters = store
        .audit_counts_since(at("2000-01-01T00:00:00Z"), 100)
        .await
        .unwrap();
    assert_eq!(counters.len(), 5);
    assert_eq!(counters[0].window_start, at("2026-12-01T09:07:00Z"));
    let footprint = store.audit_footprint().await.unwrap();
    assert_eq!((footprint.events, footprint.counters), (100, 5));
    // Through the policy: 50 rows at most, of which 5 counter rows.
    let policy = AuditRetention {
        retention_days: 36_500,
        max_events: 50,
    };
    let summary = audit::prune(store, policy, at("2026-12-01T12:00:00Z"))
        .await
        .unwrap();
    assert_eq!(summary.events_over_limit, 55);
    assert_eq!(summary.counters_over_limit, 0);
    let footprint = store.audit_footprint().await.unwrap();
    assert_eq!((footprint.events, footprint.counters), (45, 5));
    assert!(footprint.events + footprint.counters <= policy.max_events);
}

/// Each principal has its own share of the size bound
/// (docs/tokens-and-audit.md "Retention and size"): a partner that floods
/// the log loses its own oldest events, never the (older) events of a
/// quiet partner, and the unresolved-rooftop count is kept.
pub(super) async fn audit_one_principal_flooding_keeps_every_other_principals_events(
    store: &dyn Store,
) {
    let event = |subject: &str, n: u32, second: u32| {
        let mut e = audit_event(
            n,
            &format!("2026-12-01T10:{:02}:{:02}Z", second / 60, second % 60),
        );
        e.subject = subject.to_owned();
        e
    };
    // The quiet partner's events are the oldest of the log.
    let mut quiet: Vec<AuditEvent> = (0..10).map(|n| event("partner:quiet", n, n)).collect();
    quiet[0].unresolved_rooftops = 100;
    quiet[0].rooftop_ids = Vec::new();
    let mut anonymous: Vec<AuditEvent> = (0..20)
        .map(|n| event("anonymous", 100 + n, 20 + n))
        .collect();
    anonymous.iter_mut().for_each(|e| e.credential = None);
    let flood: Vec<AuditEvent> = (0..300)
        .map(|n| event("partner:flood", 1_000 + n, 60 + n))
        .collect();
    for e in quiet.iter().chain(&anonymous).chain(&flood) {
        store.append_audit(e).await.unwrap();
    }
    let summary = store
        .prune_audit(at("2000-01-01T00:00:00Z"), 100, 10)
        .await
        .unwrap();
    // 10 + 20 fit their share; the flooder keeps the other 70, its newest.
    assert_eq!(summary.events_over_limit, 230);
    assert_eq!(summary.events_over_share, 230);
    assert_eq!(summary.events_pruned_through, Some(flood[229].occurred_at));
    let kept = store
        .audit_since(at("2000-01-01T00:00:00Z"), 1_000)
        .await
        .unwrap();
    let of = |subject: &str| -> Vec<AuditEvent> {
        kept.iter()
            .filter(|e| e.subject == subject)
            .cloned()
            .collect()
    };
    assert_eq!(of("partner:quiet"), quiet);
    assert_eq!(of("anonymous"), anonymous);
    assert_eq!(of("partner:flood"), flood[230..]);
    assert_eq!(of("partner:quiet")[0].unresolved_rooftops, 100);
    // Within the bound now: a second pass deletes nothing.
    let again = store
        .prune_audit(at("2000-01-01T00:00:00Z"), 100, 10)
        .await
        .unwrap();
    assert_eq!(again, AuditPruneSummary::default());
}
