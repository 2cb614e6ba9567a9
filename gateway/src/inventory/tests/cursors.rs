//! Cursors: signing, opening, bounds and continuation.

use super::*;

const KEY: &[u8] = b"test-cursor-key-0123456789abcdef";

fn binding(q: &[u8; 32], grant: &str, rooftops: &[&str]) -> CursorBinding {
    CursorBinding::new(q, grant, rooftops)
}

fn page_key() -> PageKey {
    PageKey {
        sort: SortKey {
            missing: false,
            major: 0x0055_5344,
            minor: -42_875_000_000_000_000_000_i128,
        },
        vehicle_id: "veh.roof.a.00042".into(),
        rooftop_id: "roof.a".into(),
    }
}

fn versions() -> BTreeMap<String, i64> {
    BTreeMap::from([("roof.a".to_owned(), 7), ("roof.b".to_owned(), 3)])
}

#[test]
fn cursor_round_trips_its_payload() {
    let q = [7u8; 32];
    let b = binding(&q, "principal:abc", &["roof.b", "roof.a", "roof.c"]);
    let payload = CursorPayload::new(&b, &versions(), page_key(), now());
    let token = cursor::seal(KEY, &payload);
    assert!(token.len() <= cursor::MAX_CURSOR_CHARS);
    assert!(!token.contains("principal"), "no caller identity in clear");
    let opened = cursor::open(KEY, &token, &b, now() + Duration::minutes(14)).unwrap();
    assert_eq!(opened, payload);
    assert_eq!(opened.key, page_key());
    assert_eq!(opened.expires_at - opened.issued_at, 900);
    assert_eq!(opened.issued_at(), now());
    let pinned = opened.snapshot_versions(&b).unwrap();
    assert_eq!(pinned, versions(), "roof.c had no snapshot");
    assert!(opened.snapshots_unchanged(&b, &versions()));
    let mut moved = versions();
    moved.insert("roof.a".into(), 8);
    assert!(!opened.snapshots_unchanged(&b, &moved));
}

#[test]
fn every_bad_cursor_is_rejected_with_the_same_message() {
    let q = [7u8; 32];
    let b = binding(&q, "anonymous", &["roof.a", "roof.b"]);
    let token = cursor::seal(KEY, &CursorPayload::new(&b, &versions(), page_key(), now()));
    let open = |t: &str, b: &CursorBinding, at: DateTime<Utc>| cursor::open(KEY, t, b, at);

    let mut tampered = token.clone().into_bytes();
    tampered[10] = if tampered[10] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let (body, _) = token.split_once('.').unwrap();
    let cases: Vec<(Result<CursorPayload, CursorError>, CursorError)> = vec![
        (open("not a cursor", &b, now()), CursorError::Malformed),
        (open("%%%.%%%", &b, now()), CursorError::Malformed),
        (open(body, &b, now()), CursorError::Malformed),
        (
            open(&format!("{body}.AAAA"), &b, now()),
            CursorError::BadSignature,
        ),
        (open(&tampered, &b, now()), CursorError::BadSignature),
        (
            cursor::open(b"another key", &token, &b, now()),
            CursorError::BadSignature,
        ),
        (
            open(&token, &b, now() + Duration::minutes(15)),
            CursorError::Expired,
        ),
        (
            open(
                &token,
                &binding(&[8u8; 32], "anonymous", &["roof.a", "roof.b"]),
                now(),
            ),
            CursorError::WrongQuery,
        ),
        (
            open(
                &token,
                &binding(&q, "principal:x", &["roof.a", "roof.b"]),
                now(),
            ),
            CursorError::WrongGrant,
        ),
        (
            open(&token, &binding(&q, "anonymous", &["roof.a"]), now()),
            CursorError::WrongRooftops,
        ),
        (open(&"A".repeat(3000), &b, now()), CursorError::Malformed),
    ];
    for (got, want) in cases {
        let e = got.unwrap_err();
        assert_eq!(e, want);
        assert_eq!(e.to_string(), INVALID_CURSOR_MESSAGE);
    }
    assert!(open(&token, &b, now()).is_ok());
}

#[test]
fn truncated_payloads_are_malformed_not_panics() {
    // Sign truncated payloads with the right key: decoding must still fail cleanly.
    let q = [1u8; 32];
    let b = binding(&q, "anonymous", &["roof.a"]);
    let token = cursor::seal(KEY, &CursorPayload::new(&b, &versions(), page_key(), now()));
    let (body, _) = token.split_once('.').unwrap();
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(body)
        .unwrap();
    for cut in 0..bytes.len() {
        let t = resign(&bytes[..cut]);
        assert!(cursor::open(KEY, &t, &b, now()).is_err());
    }
}

fn resign(payload: &[u8]) -> String {
    use base64::Engine as _;
    use hmac::{Hmac, KeyInit, Mac};
    let mut m = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(KEY).unwrap();
    m.update(b"dealeragent.inventory.search.cursor.v1\0");
    m.update(payload);
    let e = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!(
        "{}.{}",
        e.encode(payload),
        e.encode(m.finalize().into_bytes())
    )
}

#[test]
fn cursors_stay_within_2048_characters() {
    let q = [3u8; 32];
    let long = "r".repeat(120);
    let mut page_key = page_key();
    page_key.vehicle_id = "v".repeat(128);
    page_key.rooftop_id = "r".repeat(128);
    for n in [1usize, 200, 5000] {
        let rooftops: Vec<String> = (0..n).map(|i| format!("{long}{i:05}")).collect();
        let snapshots: BTreeMap<String, i64> = rooftops
            .iter()
            .enumerate()
            .map(|(i, r)| {
                (
                    r.clone(),
                    if n == 1 {
                        i64::MAX
                    } else {
                        1_000 + i64::try_from(i).unwrap()
                    },
                )
            })
            .collect();
        let b = CursorBinding::new(&q, "anonymous", &rooftops);
        let token = cursor::seal(
            KEY,
            &CursorPayload::new(&b, &snapshots, page_key.clone(), now()),
        );
        assert!(token.len() <= 2048, "{n}: {}", token.len());
        let opened = cursor::open(KEY, &token, &b, now()).unwrap();
        assert!(opened.snapshots_unchanged(&b, &snapshots));
        assert_eq!(opened.snapshot_versions(&b).is_some(), n <= 200);
    }
}

#[test]
fn search_continues_from_an_opened_cursor() {
    let fleet: Vec<_> = (0..30).map(|n| car("roof.a", n)).collect();
    let ixs = [index("roof.a", fleet)];
    let args = json!({"organization_id": ORG, "sort": {"field": "year", "order": "desc"},
                      "page": {"limit": 10}});
    let q = query(args);
    let b = CursorBinding::new(&q.fingerprint, "anonymous", &["roof.a"]);
    let first = search::search(&ixs, &q, None, now());
    let token = cursor::seal(
        KEY,
        &CursorPayload::new(&b, &versions(), first.next.clone().unwrap(), now()),
    );
    let again = query(
        json!({"organization_id": ORG, "sort": {"field": "year", "order": "desc"},
                             "page": {"limit": 10, "cursor": token}}),
    );
    assert_eq!(again.fingerprint, q.fingerprint);
    let opened = cursor::open(KEY, again.cursor.as_deref().unwrap(), &b, now()).unwrap();
    let second = search::search(&ixs, &again, Some(&opened.key), opened.issued_at());
    assert_eq!(second.vehicles[0].1, 10);
}
