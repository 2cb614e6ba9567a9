//! The registry's bounds: caps, the slow consumer, unsubscribe and drop.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::Utc;

use futures_util::FutureExt;

use super::*;
use crate::auth::{Credential, Grant, RooftopScope};

fn limits(queue: usize) -> Limits {
    Limits {
        uris_per_stream: 3,
        subscriptions_per_principal: 5,
        streams_per_principal: 2,
        queue,
        keep_alive: Duration::from_secs(15),
    }
}

fn grant(subject: &str) -> Principal {
    Principal::Authenticated(Arc::new(Grant {
        subject: subject.to_owned(),
        audience: "http://127.0.0.1/mcp".to_owned(),
        organization_id: "org.a".to_owned(),
        rooftops: RooftopScope::Group,
        scopes: BTreeSet::new(),
        purpose: "test".to_owned(),
        expires_at: Utc::now() + chrono::Duration::hours(1),
        delegation: Vec::new(),
        credential: Credential::ApiToken {
            token_id: "t".to_owned(),
        },
    }))
}

fn updated(uri: &str) -> Notice {
    Notice::Updated {
        uri: uri.to_owned(),
        kinds: vec!["price_changed"],
        snapshot_version: "1".to_owned(),
    }
}

fn everyone(_: &Principal) -> bool {
    true
}

#[tokio::test]
async fn a_notice_reaches_the_holders_of_its_uri_only() {
    let hub = Arc::new(Hub::new(limits(4)));
    let mut a = hub.open(&grant("a")).unwrap();
    let mut b = hub.open(&grant("b")).unwrap();
    a.hold("u1").unwrap();
    a.hold("u1").unwrap(); // idempotent
    b.hold("u2").unwrap();
    assert_eq!(a.uris(), vec!["u1".to_owned()]);
    let mut subscribed = hub.subscribed();
    subscribed.sort();
    assert_eq!(subscribed, vec!["u1".to_owned(), "u2".to_owned()]);
    assert_eq!(hub.deliver("u1", &updated("u1"), &everyone), 1);
    assert_eq!(hub.deliver("u3", &updated("u3"), &everyone), 0);
    // A principal that may not read is never told.
    assert_eq!(hub.deliver("u2", &updated("u2"), &|_| false), 0);
    match a.next().await {
        Ok(Notice::Updated { uri, .. }) => assert_eq!(uri, "u1"),
        other => panic!("{other:?}"),
    }
    assert_eq!(b.queued(), 0);
}

#[test]
fn caps_per_stream_per_principal_and_streams_per_principal() {
    let hub = Arc::new(Hub::new(limits(4)));
    let mut s1 = hub.open(&grant("a")).unwrap();
    let mut s2 = hub.open(&grant("a")).unwrap();
    assert!(matches!(
        hub.open(&grant("a")),
        Err(WatchError::TooManyStreams { limit: 2 })
    ));
    // Another subject has its own count.
    let other = hub.open(&grant("b")).unwrap();
    for uri in ["a", "b", "c"] {
        s1.hold(uri).unwrap();
    }
    assert!(matches!(
        s1.hold("d"),
        Err(WatchError::TooManySubscriptions { limit: 3 })
    ));
    s2.hold("d").unwrap();
    s2.hold("e").unwrap();
    assert!(matches!(
        s2.hold("f"),
        Err(WatchError::TooManySubscriptions { limit: 5 })
    ));
    // Unsubscribing frees a place under the principal's cap.
    assert!(s1.unsubscribe("a"));
    assert!(!s1.unsubscribe("a"));
    s2.hold("f").unwrap();
    // Dropping a stream frees its place and its subscriptions.
    drop(s1);
    let mut s3 = hub.open(&grant("a")).unwrap();
    s3.hold("x").unwrap();
    s3.hold("y").unwrap();
    drop(other);
    // Anonymous streams are bounded per stream only.
    let anonymous: Vec<Stream> = (0..5)
        .map(|_| hub.open(&Principal::Anonymous).unwrap())
        .collect();
    assert_eq!(anonymous.len(), 5);
    let words = WatchError::TooManyStreams { limit: 2 }.to_string();
    assert!(words.contains('2'), "{words}");
}

#[tokio::test]
async fn a_slow_consumer_is_ended_and_its_queue_freed_at_once() {
    let hub = Arc::new(Hub::new(limits(2)));
    let mut slow = hub.open(&grant("a")).unwrap();
    let mut fast = hub.open(&grant("b")).unwrap();
    slow.hold("u").unwrap();
    fast.hold("u").unwrap();
    for _ in 0..2 {
        hub.deliver("u", &updated("u"), &everyone);
        fast.next().await.unwrap();
    }
    assert_eq!(slow.queued(), 2);
    // The third notice does not fit: the stream ends and holds nothing.
    assert_eq!(hub.deliver("u", &updated("u"), &everyone), 1);
    fast.next().await.unwrap();
    assert_eq!(slow.queued(), 0);
    assert_eq!(slow.next().await.unwrap_err(), EndReason::SlowConsumer);
    assert_eq!(slow.next().await.unwrap_err(), EndReason::SlowConsumer);
    // Later notices are not queued for it either.
    for _ in 0..10 {
        hub.deliver("u", &updated("u"), &everyone);
        fast.next().await.unwrap();
    }
    assert_eq!(slow.queued(), 0);
    assert!(fast.next().now_or_never().is_none());
}

#[tokio::test]
async fn shutdown_and_end_report_their_reason() {
    let hub = Arc::new(Hub::new(limits(2)));
    let mut a = hub.open(&grant("a")).unwrap();
    let mut b = hub.open(&grant("b")).unwrap();
    b.end(EndReason::CredentialRevoked);
    assert_eq!(b.next().await.unwrap_err(), EndReason::CredentialRevoked);
    let waiting = tokio::spawn(async move { a.next().await });
    tokio::task::yield_now().await;
    hub.shutdown();
    assert_eq!(waiting.await.unwrap().unwrap_err(), EndReason::Shutdown);
    // The first reason stays.
    hub.shutdown();
    assert_eq!(b.next().await.unwrap_err(), EndReason::CredentialRevoked);
    // A stream opened after shutdown ends at once.
    let mut late = hub.open(&grant("c")).unwrap();
    assert_eq!(late.next().await.unwrap_err(), EndReason::Shutdown);
    assert_eq!(EndReason::SlowConsumer.as_str(), "slow_consumer");
    assert_eq!(EndReason::CredentialExpired.as_str(), "credential_expired");
}

#[tokio::test]
async fn list_changes_reach_the_streams_that_want_them_and_revocations_bump() {
    let hub = Arc::new(Hub::new(limits(2)));
    let mut a = hub.open(&grant("a")).unwrap();
    let b = hub.open(&grant("b")).unwrap();
    assert!(!hub.is_active());
    a.want_list_changed(true);
    assert!(hub.is_active());
    hub.until_active().await;
    assert_eq!(hub.deliver_list_changed(&everyone), 1);
    assert!(matches!(a.next().await, Ok(Notice::ListChanged)));
    drop(b);
    let mut revocations = hub.revocations();
    let before = *revocations.borrow_and_update();
    hub.revoked();
    revocations.changed().await.unwrap();
    assert_ne!(*revocations.borrow(), before);
}

/// The transports hold a stream across awaits in their response bodies:
/// it and its futures must be `Send` (checked when this compiles).
#[allow(dead_code, reason = "a compile-time check; never called")]
fn streams_and_their_futures_are_send(stream: &mut Stream, state: &crate::state::AppState) {
    fn send<T: Send>(_: T) {}
    send(stream.subscribe(state, "dealeragent://manifest"));
    send(stream.next());
    send(Arc::new(Hub::new(Limits::default())));
}
