//! The head check against its contract (`connections/head.rs`): fixed
//! cases, then arbitrary and boundary heads fed to both the guard and hyper
//! itself (an HTTP/1 connection configured as `serve` configures it, over
//! an in-memory pipe), which must agree on admit or refuse, or differ only
//! where the guard is stricter by design.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::*;

fn framing(head: &str) -> Result<Reading, HeadRefusal> {
    inspect_head(head.as_bytes())
}

#[test]
fn heads_are_checked_like_hyper_checks_them() {
    assert_eq!(
        framing("POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n\r\n"),
        Ok(Reading::Body(12))
    );
    assert_eq!(
        framing("GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
        Ok(Reading::Head)
    );
    assert_eq!(
        framing("POST / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n"),
        Ok(Reading::Body(5))
    );
    assert_eq!(
        framing("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
        Ok(Reading::PassThrough)
    );
    assert_eq!(
        framing("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: x\r\n\r\n"),
        Ok(Reading::PassThrough)
    );
    for bad in [
        "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
        // Hyper 1.x reads one value per field: a list is refused, even of
        // equal values.
        "POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 18446744073709551614\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n",
        "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
        "GET / HTTP/1.1\r\nX-A: a\x01b\r\n\r\n",
        "GET / HTTP/1.1\r\nX A: b\r\n\r\n",
        "GET / HTTP/2.0\r\n\r\n",
        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    ] {
        assert_eq!(framing(bad), Err(HeadRefusal::Malformed), "{bad:?}");
    }
    assert_eq!(
        framing("POST / HTTP/1.1\r\nContent-Length: 18446744073709551613\r\n\r\n"),
        Ok(Reading::Body(u64::MAX - 2))
    );
    // Obs-text (bytes >= 0x80) is a legal header value byte.
    assert_eq!(
        inspect_head(b"GET / HTTP/1.1\r\nMcp-Name: caf\xc3\xa9\r\n\r\n"),
        Ok(Reading::Head)
    );
}

fn fields(n: usize) -> String {
    let mut h = String::from("GET / HTTP/1.1\r\n");
    for i in 0..n {
        h.push_str(&format!("x-{i}: v\r\n"));
    }
    h.push_str("\r\n");
    h
}

#[test]
fn exactly_100_fields_pass_and_101_do_not() {
    assert_eq!(framing(&fields(100)), Ok(Reading::Head));
    assert_eq!(framing(&fields(101)), Err(HeadRefusal::TooManyFields));
    assert_eq!(framing(&fields(500)), Err(HeadRefusal::TooManyFields));
}

#[test]
fn the_end_of_a_head_is_found_incrementally() {
    let mut from = 0;
    let mut data = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    assert_eq!(find_head_end(&data, &mut from), None);
    data.extend_from_slice(b"\r");
    assert_eq!(find_head_end(&data, &mut from), None);
    data.extend_from_slice(b"\nbody");
    assert_eq!(find_head_end(&data, &mut from), Some(data.len() - 4));
    let mut from = 0;
    assert_eq!(
        find_head_end(b"GET / HTTP/1.1\nHost: a\n\n", &mut from),
        Some(24)
    );
}

/// The guard's verdict on `bytes` read from the start of a connection:
/// `None` while it would wait for more.
fn guard_verdict(bytes: &[u8]) -> Option<Result<Reading, HeadRefusal>> {
    let bytes = &bytes[leading_blank(bytes)..];
    match scan(bytes, &mut 0) {
        Scan::Partial => None,
        Scan::Head { next, .. } => Some(Ok(next)),
        Scan::Refused(why) => Some(Err(why)),
    }
}

/// Whether hyper, configured as `serve` configures it, hands the first
/// request in `bytes` to the service (the client then closes its side).
fn hyper_admits(bytes: &[u8]) -> bool {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let (client, server) = tokio::io::duplex(1 << 20);
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let service = hyper::service::service_fn(move |_request| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, Infallible>(Response::new(axum::body::Body::empty())) }
        });
        let mut http = hyper::server::conn::http1::Builder::new();
        http.max_headers(MAX_HEADER_FIELDS);
        let conn = http.serve_connection(hyper_util::rt::TokioIo::new(server), service);
        let task = tokio::spawn(conn);
        let (mut reader, mut writer) = tokio::io::split(client);
        writer.write_all(bytes).await.expect("write");
        writer.shutdown().await.expect("shutdown");
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), reader.read_to_end(&mut answer)).await;
        let joined = task.await;
        assert!(
            !joined.as_ref().is_err_and(tokio::task::JoinError::is_panic),
            "hyper panicked on {:?}",
            String::from_utf8_lossy(bytes)
        );
        calls.load(Ordering::SeqCst) > 0
    })
}

/// Guard and hyper agree on `head`, or the guard is stricter by design
/// (over [`MAX_HEAD_BYTES`]); a head the guard would still wait for is
/// not judged.
fn assert_agree(head: &[u8]) {
    let Some(verdict) = guard_verdict(head) else {
        return;
    };
    let hyper = hyper_admits(head);
    let text = String::from_utf8_lossy(head);
    match verdict {
        Ok(_) => assert!(hyper, "the guard admits what hyper refuses: {text:?}"),
        Err(HeadRefusal::TooLarge) => {}
        Err(why) => assert!(
            !hyper,
            "the guard refuses ({why:?}) what hyper admits: {text:?}"
        ),
    }
}

#[test]
fn field_counts_and_head_sizes_at_the_limits_agree_with_hyper() {
    for n in [0, 1, 98, 99, 100, 101, 102, 200] {
        assert_agree(fields(n).as_bytes());
    }
    // Heads of MAX_HEAD_BYTES - 1, exactly, and one byte over: the guard
    // admits up to the limit (so does hyper) and refuses beyond it (hyper
    // would not; stricter by design).
    for size in [MAX_HEAD_BYTES - 1, MAX_HEAD_BYTES, MAX_HEAD_BYTES + 1] {
        let fixed = "GET / HTTP/1.1\r\nX-Pad: \r\n\r\n".len();
        let head = format!(
            "GET / HTTP/1.1\r\nX-Pad: {}\r\n\r\n",
            "p".repeat(size - fixed)
        );
        assert_eq!(head.len(), size);
        let verdict = guard_verdict(head.as_bytes());
        if size <= MAX_HEAD_BYTES {
            assert_eq!(verdict, Some(Ok(Reading::Head)), "{size}");
        } else {
            assert_eq!(verdict, Some(Err(HeadRefusal::TooLarge)), "{size}");
        }
        assert!(hyper_admits(head.as_bytes()), "{size}");
    }
    // 100 fields whose head is just over the limit: too large, not too many.
    let long =
        format!("{}\r\n", fields(100).trim_end()).replace(": v", &format!(": {}", "v".repeat(700)));
    assert_eq!(
        guard_verdict(long.as_bytes()),
        Some(Err(HeadRefusal::TooLarge))
    );
    // No end of head within the limit: refused without waiting for one.
    let endless = format!("GET / HTTP/1.1\r\nX-Pad: {}", "p".repeat(MAX_HEAD_BYTES));
    assert_eq!(
        guard_verdict(endless.as_bytes()),
        Some(Err(HeadRefusal::TooLarge))
    );
}

#[test]
fn the_fixed_cases_agree_with_hyper() {
    for head in [
        "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 18446744073709551613\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 18446744073709551614\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
        "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
        "\r\n\r\nGET / HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\n\n",
        "GET / HTTP/1.1\r\nHost: a\n\r\n",
        "GET http://a/b?c HTTP/1.1\r\n\r\n",
        "GET * HTTP/1.1\r\n\r\n",
        "G{T / HTTP/1.1\r\n\r\n",
    ] {
        assert_agree(head.as_bytes());
    }
}

/// Pieces heads are built from: ordinary ones, and the ones that tell
/// parsers apart.
fn method() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::sample::select(vec!["GET", "POST", "DELETE", "OPTIONS", "CONNECT", "PRI"])
            .prop_map(|m| m.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..6),
        1 => "[!#$%&'*+.^_`|~A-Za-z0-9-]{1,12}".prop_map(String::into_bytes),
    ]
}

fn target() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::sample::select(vec!["/", "/mcp", "*", "/a?b=c", "http://a.example/x", "a.example:443"])
            .prop_map(|t| t.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..8),
        1 => "[ -~]{1,10}".prop_map(String::into_bytes),
    ]
}

fn version() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => prop::sample::select(vec!["HTTP/1.1", "HTTP/1.0"]).prop_map(|v| v.as_bytes().to_vec()),
        1 => prop::sample::select(vec!["HTTP/2.0", "HTTP/1.2", "http/1.1", "HTTP/1.1 ", ""])
            .prop_map(|v| v.as_bytes().to_vec()),
    ]
}

fn field() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    let name = prop_oneof![
        6 => prop::sample::select(vec![
            "Host", "Content-Length", "content-length", "Transfer-Encoding", "Connection",
            "Upgrade", "Expect", "X-Pad", "Mcp-Method",
        ])
        .prop_map(|n| n.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..6),
        1 => "[ -~]{1,8}".prop_map(String::into_bytes),
    ];
    let value = prop_oneof![
        4 => prop::sample::select(vec![
            "a", "0", "5", "12", "5, 5", "5,6", " 7 ", "+5", "-1", "", "chunked", "Chunked",
            "gzip, chunked", "chunked, gzip", "gzip", "close", "keep-alive", "100-continue",
            "18446744073709551613", "18446744073709551614", "18446744073709551615",
            "99999999999999999999", "caf\u{e9}",
        ])
        .prop_map(|v| v.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..10),
        1 => prop::collection::vec(prop::sample::select(vec![b'5', b',', b' ', b'\t', b'\r', b'\x01', b'\x7f', 0xe9]), 0..6),
    ];
    (name, value)
}

fn line_end() -> impl Strategy<Value = &'static [u8]> {
    prop_oneof![8 => Just(&b"\r\n"[..]), 1 => Just(&b"\n"[..])]
}

prop_compose! {
    fn structured_head()(
        blank in prop::sample::select(vec![&b""[..], b"\r\n", b"\n"]),
        method in method(),
        target in target(),
        version in version(),
        fields in prop::collection::vec((field(), line_end()), 0..8),
        end in line_end(),
        body in prop::collection::vec(any::<u8>(), 0..8),
    ) -> Vec<u8> {
        let mut head = blank.to_vec();
        head.extend_from_slice(&method);
        head.push(b' ');
        head.extend_from_slice(&target);
        head.push(b' ');
        head.extend_from_slice(&version);
        head.extend_from_slice(b"\r\n");
        for ((name, value), eol) in fields {
            head.extend_from_slice(&name);
            head.extend_from_slice(b": ");
            head.extend_from_slice(&value);
            head.extend_from_slice(eol);
        }
        head.extend_from_slice(end);
        head.extend_from_slice(&body);
        head
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn structured_heads_agree_with_hyper(head in structured_head()) {
        assert_agree(&head);
    }

    #[test]
    fn arbitrary_bytes_agree_with_hyper(
        bytes in prop::collection::vec(any::<u8>(), 0..64),
        end in prop::sample::select(vec![&b"\r\n\r\n"[..], b"\n\n", b""]),
    ) {
        let mut head = b"GET / HTTP/1.1\r\n".to_vec();
        head.extend_from_slice(&bytes);
        head.extend_from_slice(end);
        assert_agree(&head);
        let mut raw = bytes.clone();
        raw.extend_from_slice(end);
        assert_agree(&raw);
    }

    #[test]
    fn field_counts_near_the_limit_agree_with_hyper(
        n in 95_usize..106,
        value in "[ -~]{0,4}",
    ) {
        let mut head = String::from("GET / HTTP/1.1\r\n");
        for i in 0..n {
            head.push_str(&format!("x-{i}: {value}\r\n"));
        }
        head.push_str("\r\n");
        assert_agree(head.as_bytes());
    }
}
