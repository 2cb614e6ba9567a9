//! The trace of one MCP request: the caller's W3C Trace Context when it
//! sent a valid one, else a trace of our own (docs/operations.md
//! "Tracing", docs/mcp.md "Trace context").
//!
//! MCP 2026-07-28 (SEP-414, "Distributed Tracing Conventions") reserves the
//! unprefixed `_meta` keys `traceparent` and `tracestate` for W3C Trace
//! Context values. A valid `traceparent` makes the caller's 32-hex
//! trace-id our `trace_id`: the access log line, the audit event, every
//! error object and the upstream availability call of the request carry
//! it. The HTTP `traceparent`/`tracestate` headers are read too, for
//! clients whose HTTP stack injects them; `_meta` wins, as it is the part
//! of the message the MCP client itself wrote.
//!
//! An invalid value (wrong length, upper-case hex, an all-zero id, version
//! `ff`, a `tracestate` over 512 characters or 32 members, ...) is ignored
//! as if absent: never an error, never echoed, never logged. A request
//! without a valid context keeps the generated `trace.<uuid>` id.
//!
//! The context of the request being served is task-local ([`scope`]), so
//! the availability source can name it on its upstream call without every
//! layer in between passing it along.

use std::future::Future;

/// Length of a version-00 `traceparent`: `vv-<32>-<16>-ff`.
const TRACEPARENT_LEN: usize = 55;
/// W3C Trace Context: a `tracestate` of more than 32 list members, or
/// longer than 512 characters, need not be propagated.
const MAX_TRACESTATE_MEMBERS: usize = 32;
const MAX_TRACESTATE_CHARS: usize = 512;

/// The trace of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// What logs, audit events and error objects call the trace: the
    /// caller's trace-id, or `trace.<uuid>` for a trace of our own.
    id: String,
    /// The W3C trace-id (32 lower-case hex digits) sent upstream: the
    /// caller's, or the digits of our uuid.
    w3c_trace_id: String,
    /// The caller's parent-id (its span), when it sent one.
    parent_id: Option<String>,
    /// The trace-flags propagated upstream.
    flags: String,
    /// The caller's `tracestate`, passed upstream untouched.
    tracestate: Option<String>,
}

impl TraceContext {
    /// A trace of our own (no valid caller context).
    pub fn generated() -> Self {
        let uuid = uuid::Uuid::new_v4();
        TraceContext {
            id: format!("trace.{uuid}"),
            w3c_trace_id: uuid.simple().to_string(),
            parent_id: None,
            // Nothing was recorded by a caller: not sampled.
            flags: "00".to_owned(),
            tracestate: None,
        }
    }

    /// The trace of a request: the `_meta` context when valid, else the
    /// HTTP headers' when valid, else a generated one. `tracestate` is
    /// only taken from the same place as the `traceparent` it goes with.
    pub fn of_request(meta: Carrier<'_>, headers: Carrier<'_>) -> Self {
        [meta, headers]
            .into_iter()
            .find_map(Self::from_carrier)
            .unwrap_or_else(Self::generated)
    }

    /// The caller's context from one carrier, if its `traceparent` is
    /// valid. An invalid `tracestate` is dropped; the `traceparent` stands
    /// (W3C Trace Context, "tracestate" processing).
    fn from_carrier(carrier: Carrier<'_>) -> Option<Self> {
        let (trace_id, parent_id, flags) = parse_traceparent(carrier.traceparent?)?;
        Some(TraceContext {
            id: trace_id.to_owned(),
            w3c_trace_id: trace_id.to_owned(),
            parent_id: Some(parent_id.to_owned()),
            flags: flags.to_owned(),
            tracestate: carrier
                .tracestate
                .filter(|s| valid_tracestate(s))
                .map(str::to_owned),
        })
    }

    /// The trace id logs, audit events and error objects carry.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The caller's span id, when it sent a context.
    pub fn parent_id(&self) -> Option<&str> {
        self.parent_id.as_deref()
    }

    /// Whether the caller sent this context (else it is ours).
    pub fn from_caller(&self) -> bool {
        self.parent_id.is_some()
    }

    /// The `traceparent` of a call this request makes: the same trace-id
    /// and flags, with a new span id of ours as the parent.
    pub fn child_traceparent(&self) -> String {
        format!("00-{}-{}-{}", self.w3c_trace_id, new_span_id(), self.flags)
    }

    /// The caller's `tracestate`, untouched.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }
}

/// Where a context may be found: `_meta` members or HTTP header values.
#[derive(Debug, Clone, Copy, Default)]
pub struct Carrier<'a> {
    pub traceparent: Option<&'a str>,
    pub tracestate: Option<&'a str>,
}

impl<'a> Carrier<'a> {
    /// The `traceparent` and `tracestate` members of a request's
    /// `params._meta` (strings only; anything else is absent).
    pub fn of_meta(params: &'a serde_json::Value) -> Self {
        let member = |key: &str| {
            params
                .get("_meta")
                .and_then(|m| m.get(key))
                .and_then(serde_json::Value::as_str)
        };
        Carrier {
            traceparent: member("traceparent"),
            tracestate: member("tracestate"),
        }
    }
}

/// `(trace-id, parent-id, flags)` of a valid `traceparent`. Version 00 is
/// exactly 55 characters; a later version may be longer, with a `-` after
/// the fields this version knows; version `ff` is invalid.
fn parse_traceparent(value: &str) -> Option<(&str, &str, &str)> {
    if !value.is_ascii() || value.len() < TRACEPARENT_LEN {
        return None;
    }
    let version = &value[0..2];
    if !lower_hex(version) || version == "ff" {
        return None;
    }
    if version == "00" && value.len() != TRACEPARENT_LEN {
        return None;
    }
    if value.len() > TRACEPARENT_LEN && value.as_bytes()[TRACEPARENT_LEN] != b'-' {
        return None;
    }
    let bytes = value.as_bytes();
    if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
        return None;
    }
    let (trace_id, parent_id, flags) = (&value[3..35], &value[36..52], &value[53..55]);
    let nonzero = |s: &str| s.bytes().any(|b| b != b'0');
    (lower_hex(trace_id)
        && lower_hex(parent_id)
        && lower_hex(flags)
        && nonzero(trace_id)
        && nonzero(parent_id))
    .then_some((trace_id, parent_id, flags))
}

fn lower_hex(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A `tracestate` worth passing on: at most 512 characters and 32 list
/// members, each `key=value` by the W3C grammar (empty members between
/// commas are allowed).
fn valid_tracestate(value: &str) -> bool {
    if value.len() > MAX_TRACESTATE_CHARS || !value.is_ascii() {
        return false;
    }
    let mut members = 0;
    for member in value.split(',') {
        let member = member.trim_matches([' ', '\t']);
        if member.is_empty() {
            continue;
        }
        members += 1;
        let Some((key, val)) = member.split_once('=') else {
            return false;
        };
        if members > MAX_TRACESTATE_MEMBERS || !valid_key(key) || !valid_value(val) {
            return false;
        }
    }
    true
}

/// `simple-key` or `tenant-id@system-id` (W3C Trace Context "key").
fn valid_key(key: &str) -> bool {
    let part = |s: &str, max: usize, first_digit: bool| {
        let mut chars = s.bytes();
        let first_ok = chars
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || (first_digit && b.is_ascii_digit()));
        first_ok
            && s.len() <= max
            && chars.all(|b| {
                b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || matches!(b, b'_' | b'-' | b'*' | b'/')
            })
    };
    match key.split_once('@') {
        None => part(key, 256, true),
        Some((tenant, system)) => part(tenant, 241, true) && part(system, 14, false),
    }
}

/// 1..256 printable characters other than `,` and `=`, not ending in a
/// space.
fn valid_value(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 256
        && !value.ends_with(' ')
        && value
            .bytes()
            .all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=')
}

/// A random, non-zero 8-byte span id as 16 hex digits.
fn new_span_id() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() || bytes == [0; 8] {
        // The uuid generator has its own source; its first eight bytes
        // are random apart from none (the version bits are in byte 6).
        bytes.copy_from_slice(&uuid::Uuid::new_v4().as_bytes()[..8]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

tokio::task_local! {
    static CURRENT: TraceContext;
}

/// Runs `future` (the serving of one request) with `trace` as its
/// context, for [`current`].
pub async fn scope<F: Future>(trace: TraceContext, future: F) -> F::Output {
    CURRENT.scope(trace, future).await
}

/// The context of the request being served on this task, if any (none in
/// start-up, imports and other work outside a request).
pub fn current() -> Option<TraceContext> {
    CURRENT.try_with(Clone::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn meta(tp: &str, ts: Option<&str>) -> Carrier<'static> {
        Carrier {
            traceparent: Some(Box::leak(tp.to_owned().into_boxed_str())),
            tracestate: ts.map(|s| &*Box::leak(s.to_owned().into_boxed_str())),
        }
    }

    #[test]
    fn a_valid_traceparent_becomes_the_trace() {
        let t = TraceContext::of_request(
            meta(GOOD, Some("rojo=00f067aa0ba902b7")),
            Carrier::default(),
        );
        assert_eq!(t.id(), TRACE);
        assert_eq!(t.parent_id(), Some("00f067aa0ba902b7"));
        assert_eq!(t.tracestate(), Some("rojo=00f067aa0ba902b7"));
        let child = t.child_traceparent();
        assert_eq!(child.len(), TRACEPARENT_LEN);
        assert!(child.starts_with(&format!("00-{TRACE}-")), "{child}");
        assert!(child.ends_with("-01"), "{child}");
        assert_ne!(&child[36..52], "00f067aa0ba902b7");
        assert!(parse_traceparent(&child).is_some());
    }

    #[test]
    fn invalid_traceparents_are_ignored() {
        let bad = [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0Z",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01é",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        ];
        for value in bad {
            let t = TraceContext::of_request(meta(value, None), Carrier::default());
            assert!(!t.from_caller(), "{value}");
            assert!(t.id().starts_with("trace."), "{value}");
        }
        // A later version may carry more fields after a dash.
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more";
        assert_eq!(
            TraceContext::of_request(meta(later, None), Carrier::default()).id(),
            TRACE
        );
    }

    #[test]
    fn meta_wins_over_headers_and_an_invalid_one_falls_through() {
        let header = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
        let headers = meta(header, Some("congo=t61rcWkgMzE"));
        let t = TraceContext::of_request(meta(GOOD, None), headers);
        assert_eq!(t.id(), TRACE);
        assert_eq!(t.tracestate(), None, "tracestate goes with its traceparent");
        let t = TraceContext::of_request(meta("garbage", Some("a=b")), headers);
        assert_eq!(t.id(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(t.tracestate(), Some("congo=t61rcWkgMzE"));
    }

    #[test]
    fn an_invalid_tracestate_is_dropped_and_the_traceparent_kept() {
        let long = format!("a={}", "x".repeat(MAX_TRACESTATE_CHARS));
        let many = (0..33)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join(",");
        let thirty_two = (0..32)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join(",");
        for state in [
            long.as_str(),
            many.as_str(),
            "Upper=1",
            "a",
            "a=b,=c",
            "a=b=c",
            "a=\u{7f}",
        ] {
            let t = TraceContext::of_request(meta(GOOD, Some(state)), Carrier::default());
            assert_eq!(t.id(), TRACE, "{state}");
            assert_eq!(t.tracestate(), None, "{state}");
        }
        for state in [thirty_two.as_str(), "a=b, ,c@d=e", "vendor/x_y-z*=v a"] {
            let t = TraceContext::of_request(meta(GOOD, Some(state)), Carrier::default());
            assert_eq!(t.tracestate(), Some(state), "{state}");
        }
    }

    #[test]
    fn a_generated_trace_sends_its_own_digits_upstream() {
        let t = TraceContext::of_request(Carrier::default(), Carrier::default());
        assert!(!t.from_caller());
        let digits: String = t.id().trim_start_matches("trace.").replace('-', "");
        let child = t.child_traceparent();
        assert_eq!(&child[3..35], digits);
        assert!(child.ends_with("-00"));
    }
}
