//! The bounded audit log (docs/tokens-and-audit.md "Audit events" and
//! "Retention and size"; docs/security.md "Audit retention"): what an event
//! may hold, the counters that replace one row per refused anonymous call,
//! each principal's share of the size bound, and the retention task.
//!
//! Why: an event that copied `organization_id`/`rooftop_id(s)` from the
//! raw arguments let one request grow the store by its own content (a
//! 900,000-character id, or a search naming 100 long made-up rooftop ids:
//! 13.5 KB an event). DAP spec 11 asks for ids of what was read, not request
//! content: rooftop ids that name no rooftop are counted
//! ([`resolve_rooftops`]), every field has a bound, the whole event has one
//! ([`MAX_EVENT_BYTES`]), and the table has a size and an age limit, of
//! which each principal has its own share ([`share_of`]) so that no caller
//! can push another's events out of the log.

use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

use super::{AuditEvent, Store, StoreError};
use crate::domain::grant::Credential;

/// Stands for an identifier that did not pass the identifier schema
/// (`common.schema.json#/$defs/identifier`): the raw value is never kept.
pub const INVALID_MARKER: &str = "invalid";
/// The last entry of a list that had more than [`MAX_LIST_ENTRIES`].
pub const TRUNCATED_MARKER: &str = "truncated";
/// Appended to free text cut at [`MAX_TEXT_BYTES`].
const TRUNCATED_SUFFIX: &str = "...(truncated)";
/// `common.schema.json#/$defs/identifier` `maxLength`.
pub const MAX_IDENTIFIER_CHARS: usize = 128;
/// Free text an event may hold per field: subject, trace id, tool, profile,
/// outcome, JWT issuer and `jti`, each delegation actor.
pub const MAX_TEXT_BYTES: usize = 256;
/// A resource id is an identifier or a `dealeragent://` URI naming at most
/// three identifiers (a vehicle resource: about 430 characters).
pub const MAX_RESOURCE_ID_BYTES: usize = 448;
/// Entries kept of `rooftop_ids` and `resource_ids` (a search page holds at
/// most 100 vehicles).
pub const MAX_LIST_ENTRIES: usize = 100;
/// Actors kept of a delegation chain.
pub const MAX_DELEGATION_ENTRIES: usize = 8;
/// No stored event is larger than this, as JSON text (the `audit export`
/// line): the sum of the field bounds above is about 60 KiB; a typical event
/// is 400 to 3,000 bytes. A test builds the largest possible event.
pub const MAX_EVENT_BYTES: usize = 64 * 1024;
/// Length of one counter window.
pub const COUNTER_WINDOW_SECONDS: i64 = 60;
/// Distinct counter keys (network, tool, outcome) per window; calls of
/// further networks in that window count under [`OVERFLOW_NETWORK`], so a
/// botnet of many networks adds at most this many rows a minute.
pub const MAX_COUNTER_KEYS_PER_WINDOW: u32 = 256;
/// The network of counted calls beyond [`MAX_COUNTER_KEYS_PER_WINDOW`].
pub const OVERFLOW_NETWORK: &str = "overflow";
/// How often the retention task runs while serving.
pub const PRUNE_INTERVAL: Duration = Duration::from_secs(60);
/// Rooftop ids of one call checked against the directory; ids past these
/// are counted as unresolved without a look.
pub const MAX_ROOFTOPS_INSPECTED: usize = 1_000;
/// Counter rows may use at most 1/10 of `--audit-max-events`, so a flood of
/// refused anonymous calls can never push out the events of authenticated
/// reads and successful checks.
const COUNTER_SHARE_DIVISOR: u64 = 10;

/// The metric counting audit writes (rendered at
/// `/metrics`, described in `crate::metrics`).
pub const AUDIT_EVENTS_METRIC: &str = "dealer_gateway_audit_events_total";

/// Counts one audit write as `written` or `dropped` (the store refused it;
/// the call it records was answered anyway). `kind` is `event` (one row per
/// call) or `counter` (a counted refusal or public read folded into its
/// window's row).
pub fn count_write<T, E>(kind: &'static str, written: &Result<T, E>) {
    let result = if written.is_ok() {
        "written"
    } else {
        "dropped"
    };
    metrics::counter!(AUDIT_EVENTS_METRIC, "kind" => kind, "result" => result).increment(1);
}

/// Does `text` satisfy `common.schema.json#/$defs/identifier`
/// (`^[A-Za-z0-9][A-Za-z0-9._:-]*$`, 1 to 128 characters)?
pub fn is_identifier(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() <= MAX_IDENTIFIER_CHARS
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// The identifier itself when it is one, else [`INVALID_MARKER`].
pub fn identifier_or_marker(text: &str) -> String {
    if is_identifier(text) {
        text.to_owned()
    } else {
        INVALID_MARKER.to_owned()
    }
}

/// A resource id as recorded: an identifier, or a `dealeragent://` URI of
/// identifier characters and `/`, within [`MAX_RESOURCE_ID_BYTES`]; else
/// [`INVALID_MARKER`].
fn resource_id_or_marker(text: &str) -> String {
    let uri = text.len() <= MAX_RESOURCE_ID_BYTES
        && text.strip_prefix("dealeragent://").is_some_and(|rest| {
            rest.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-' | b'/'))
        });
    if uri || is_identifier(text) {
        text.to_owned()
    } else {
        INVALID_MARKER.to_owned()
    }
}

/// Free text cut to [`MAX_TEXT_BYTES`] (on a character boundary, marked).
pub fn bounded_text(text: &str) -> String {
    if text.len() <= MAX_TEXT_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_TEXT_BYTES - TRUNCATED_SUFFIX.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{TRUNCATED_SUFFIX}", &text[..end])
}

/// At most `max` entries, each mapped by `entry`; a longer list keeps its
/// first `max - 1` entries and ends with [`TRUNCATED_MARKER`].
fn bounded_list(items: &[String], max: usize, entry: fn(&str) -> String) -> Vec<String> {
    if items.len() <= max {
        return items.iter().map(|s| entry(s)).collect();
    }
    items
        .iter()
        .take(max - 1)
        .map(|s| entry(s))
        .chain([TRUNCATED_MARKER.to_owned()])
        .collect()
}

/// The rooftop ids an event keeps of those a call named (`named`, raw JSON
/// values): those that name a rooftop of the directory (`exists`; read or
/// refused, they identify the decision), once each, and how many others it
/// named (ids of no rooftop, values that are no identifier, and everything
/// past [`MAX_ROOFTOPS_INSPECTED`]). The others are a count, so a caller
/// cannot grow the log with ids of its own making: what is kept is bounded
/// by the operator's directory (docs/tokens-and-audit.md "Audit events").
pub fn resolve_rooftops(
    named: &[serde_json::Value],
    exists: impl Fn(&str) -> bool,
) -> (Vec<String>, u32) {
    let mut kept: Vec<String> = Vec::new();
    let mut unresolved = named.len().saturating_sub(MAX_ROOFTOPS_INSPECTED);
    for value in named.iter().take(MAX_ROOFTOPS_INSPECTED) {
        match value.as_str() {
            Some(id) if is_identifier(id) && exists(id) => {
                if !kept.iter().any(|k| k == id) {
                    kept.push(id.to_owned());
                }
            }
            Some(_) | None => unresolved += 1,
        }
    }
    (kept, u32::try_from(unresolved).unwrap_or(u32::MAX))
}

/// Each principal's share of `max` events, given how many each holds
/// (`counts`): the largest share such that every principal kept at most
/// that many (and all of a smaller count) fits `max` (max-min fairness).
/// `None` when everything fits. A principal within its share never loses
/// an event to the size bound, whatever the others send; one past it loses
/// its own oldest (docs/tokens-and-audit.md "Retention and size").
pub fn share_of(counts: &[u64], max: u64) -> Option<u64> {
    if counts.iter().sum::<u64>() <= max {
        return None;
    }
    let mut sorted = counts.to_vec();
    sorted.sort_unstable();
    let mut left = max;
    for (i, count) in sorted.iter().enumerate() {
        let principals = u64::try_from(sorted.len() - i).unwrap_or(u64::MAX);
        if count.saturating_mul(principals) > left {
            return Some(left / principals);
        }
        left -= count;
    }
    None
}

impl AuditEvent {
    /// This event within every field bound above, hence within
    /// [`MAX_EVENT_BYTES`]. Idempotent; an event already within its bounds is
    /// returned unchanged. The store applies it to every event it writes,
    /// whoever built the event.
    pub fn bounded(&self) -> AuditEvent {
        AuditEvent {
            event_id: bounded_text(&self.event_id),
            occurred_at: self.occurred_at,
            trace_id: bounded_text(&self.trace_id),
            subject: bounded_text(&self.subject),
            credential: self.credential.as_ref().map(|c| match c {
                Credential::ApiToken { token_id } => Credential::ApiToken {
                    token_id: identifier_or_marker(token_id),
                },
                Credential::Jwt { issuer, token_id } => Credential::Jwt {
                    issuer: bounded_text(issuer),
                    token_id: token_id.as_deref().map(bounded_text),
                },
            }),
            organization_id: self.organization_id.as_deref().map(identifier_or_marker),
            rooftop_ids: bounded_list(&self.rooftop_ids, MAX_LIST_ENTRIES, identifier_or_marker),
            unresolved_rooftops: self.unresolved_rooftops,
            tool: bounded_text(&self.tool),
            profile: bounded_text(&self.profile),
            policy_decision: bounded_text(&self.policy_decision),
            resource_ids: bounded_list(&self.resource_ids, MAX_LIST_ENTRIES, resource_id_or_marker),
            outcome: bounded_text(&self.outcome),
            delegation: bounded_list(&self.delegation, MAX_DELEGATION_ENTRIES, bounded_text),
        }
    }
}

/// The /24 (IPv4) or /48 (IPv6) network of a client address, as text: what
/// the audit log keeps instead of the address (docs/security.md "Audit
/// retention": an address is personal data; a network prefix still names
/// the provider to report abuse to or to block, and it folds the addresses
/// one IPv6 customer can rotate through into one counter).
pub fn client_network(ip: IpAddr) -> String {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 @ IpAddr::V4(_) => v4,
    };
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            format!("{a}.{b}.{c}.0/24")
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            format!("{}/48", Ipv6Addr::new(s[0], s[1], s[2], 0, 0, 0, 0, 0))
        }
    }
}

/// One counter row: `count` refused anonymous calls of `tool` from
/// `client_network` with `outcome` in the window starting at
/// `window_start` (table `audit_counters`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditCount {
    pub window_start: DateTime<Utc>,
    pub client_network: String,
    pub tool: String,
    pub outcome: String,
    pub profile: String,
    pub policy_decision: String,
    pub count: u64,
    /// The trace id of the first call counted (to find it in the logs).
    pub first_trace_id: String,
    /// When the last call counted was made (microseconds).
    pub last_at: DateTime<Utc>,
}

impl AuditCount {
    /// One call made at `at`, to be added to its window's counter.
    pub fn one(
        at: DateTime<Utc>,
        client_ip: IpAddr,
        trace_id: &str,
        tool: &str,
        profile: &str,
        policy_decision: &str,
        outcome: &str,
    ) -> Self {
        use chrono::SubsecRound as _;
        let start = at.timestamp().div_euclid(COUNTER_WINDOW_SECONDS) * COUNTER_WINDOW_SECONDS;
        Self {
            window_start: DateTime::from_timestamp(start, 0).unwrap_or(at),
            client_network: client_network(client_ip),
            tool: bounded_text(tool),
            outcome: bounded_text(outcome),
            profile: bounded_text(profile),
            policy_decision: bounded_text(policy_decision),
            count: 1,
            first_trace_id: bounded_text(trace_id),
            last_at: at.trunc_subsecs(6),
        }
    }
}

impl AuditCount {
    /// This row within its bounds (what the store writes): text fields cut
    /// to [`MAX_TEXT_BYTES`], a network that is not a prefix written by
    /// [`client_network`] replaced by [`INVALID_MARKER`].
    pub fn bounded(&self) -> AuditCount {
        let network_ok = self.client_network.len() <= 64
            && self
                .client_network
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b':' | b'/'));
        AuditCount {
            window_start: self.window_start,
            client_network: if network_ok {
                self.client_network.clone()
            } else {
                INVALID_MARKER.to_owned()
            },
            tool: bounded_text(&self.tool),
            outcome: bounded_text(&self.outcome),
            profile: bounded_text(&self.profile),
            policy_decision: if self.policy_decision.len() <= 16 {
                self.policy_decision.clone()
            } else {
                INVALID_MARKER.to_owned()
            },
            count: self.count.max(1),
            first_trace_id: bounded_text(&self.first_trace_id),
            last_at: self.last_at,
        }
    }
}

/// How much the audit log holds: rows of both tables and the bytes of
/// their field text (what the bound in docs/security.md is stated in).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditFootprint {
    pub events: u64,
    pub counters: u64,
    pub bytes: u64,
}

/// What one pruning pass deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditPruneSummary {
    /// Events and counter rows older than the retention period.
    pub events_expired: u64,
    pub counters_expired: u64,
    /// The events deleted for the size bound (those of
    /// `events_over_share` included) and the oldest counter rows deleted
    /// for it.
    pub events_over_limit: u64,
    /// Of `events_over_limit`, those deleted because their principal held
    /// more than its share ([`share_of`]).
    pub events_over_share: u64,
    pub counters_over_limit: u64,
    /// `occurred_at` of the newest event deleted for the size bound: an
    /// export that has not read past it has a gap.
    pub events_pruned_through: Option<DateTime<Utc>>,
    /// `window_start` of the newest counter row deleted for the size bound.
    pub counters_pruned_through: Option<DateTime<Utc>>,
}

/// `--audit-retention-days` and `--audit-max-events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditRetention {
    pub retention_days: u32,
    pub max_events: u64,
}

impl AuditRetention {
    /// Counter rows kept at most: a tenth of the bound (at least one).
    pub fn max_counters(&self) -> u64 {
        (self.max_events / COUNTER_SHARE_DIVISOR).max(1)
    }

    /// Events kept at most: the rest of the bound, so events and counter
    /// rows together never exceed `max_events` after a pass.
    pub fn max_single_events(&self) -> u64 {
        self.max_events.saturating_sub(self.max_counters()).max(1)
    }

    /// Everything older than this is deleted.
    pub fn cutoff(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        now - TimeDelta::days(i64::from(self.retention_days))
    }
}

/// One pruning pass: retention first, then the size bound: each
/// principal's share ([`share_of`]; its own oldest events past it), then
/// the oldest of all should the log still be over the bound.
/// A pass that deletes for the size bound logs a warning naming how far it
/// deleted, because `audit export --since` earlier than that has a gap.
pub async fn prune(
    store: &dyn Store,
    policy: AuditRetention,
    now: DateTime<Utc>,
) -> Result<AuditPruneSummary, StoreError> {
    let summary = store
        .prune_audit(
            policy.cutoff(now),
            policy.max_single_events(),
            policy.max_counters(),
        )
        .await?;
    if summary.events_expired + summary.counters_expired > 0 {
        tracing::info!(
            audit.events_expired = summary.events_expired,
            audit.counters_expired = summary.counters_expired,
            audit.retention_days = policy.retention_days,
            "pruned audit entries older than the retention period"
        );
    }
    if summary.events_over_limit + summary.counters_over_limit > 0 {
        tracing::warn!(
            audit.events_deleted = summary.events_over_limit,
            audit.events_over_share = summary.events_over_share,
            audit.counters_deleted = summary.counters_over_limit,
            audit.max_events = policy.max_events,
            audit.events_pruned_through = ?summary.events_pruned_through,
            audit.counters_pruned_through = ?summary.counters_pruned_through,
            "the audit log reached --audit-max-events: the oldest entries of the principals \
             past their share (then of all) were deleted; an `audit export` that had not yet \
             read them has a gap up to the times shown (raise --audit-max-events or export \
             more often)"
        );
    }
    Ok(summary)
}

/// Prune every [`PRUNE_INTERVAL`] until aborted (the server aborts the
/// task when it stops). The start-up pass is made by the caller before the
/// server takes traffic. A failed pass is logged and retried next time.
pub fn spawn_retention(
    store: Arc<dyn Store>,
    policy: AuditRetention,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(PRUNE_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick completes at once: the start-up pass already ran.
        tick.tick().await;
        loop {
            tick.tick().await;
            if let Err(e) = prune(store.as_ref(), policy, Utc::now()).await {
                tracing::warn!(error = %e, "pruning the audit log failed; retrying next interval");
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_follow_the_schema() {
        assert!(is_identifier("org.lakeshore-auto-group"));
        assert!(is_identifier("veh:1_a-b.c"));
        assert!(is_identifier(&"a".repeat(128)));
        assert!(!is_identifier(&"a".repeat(129)));
        assert!(!is_identifier(""));
        assert!(!is_identifier("-leading"));
        assert!(!is_identifier("has space"));
        assert!(!is_identifier("ünïcode"));
        assert_eq!(identifier_or_marker(&"x".repeat(900_000)), INVALID_MARKER);
    }

    #[test]
    fn networks_drop_the_host_part() {
        assert_eq!(
            client_network("203.0.113.77".parse().unwrap()),
            "203.0.113.0/24"
        );
        assert_eq!(
            client_network("2001:db8:1:2:3:4:5:6".parse().unwrap()),
            "2001:db8:1::/48"
        );
        assert_eq!(
            client_network("::ffff:198.51.100.9".parse().unwrap()),
            "198.51.100.0/24"
        );
    }

    #[test]
    fn text_is_cut_on_a_character_boundary() {
        let long = "é".repeat(300);
        let cut = bounded_text(&long);
        assert!(cut.len() <= MAX_TEXT_BYTES, "{}", cut.len());
        assert!(cut.ends_with(TRUNCATED_SUFFIX));
        assert_eq!(bounded_text(&cut), cut);
        assert_eq!(bounded_text("short"), "short");
    }

    /// Every field at its largest: the whole event stays within
    /// [`MAX_EVENT_BYTES`], and bounding is idempotent.
    #[test]
    fn the_largest_event_fits_the_event_bound() {
        let huge = "x".repeat(1_000_000);
        let id = "i".repeat(MAX_IDENTIFIER_CHARS);
        let uri = format!(
            "dealeragent://organization/{id}/rooftop/{id}/vehicle/{}",
            "v".repeat(MAX_RESOURCE_ID_BYTES - 14 - 13 - 9 - 9 - 2 * MAX_IDENTIFIER_CHARS)
        );
        assert_eq!(uri.len(), MAX_RESOURCE_ID_BYTES);
        let event = AuditEvent {
            event_id: huge.clone(),
            occurred_at: Utc::now(),
            trace_id: huge.clone(),
            subject: huge.clone(),
            credential: Some(Credential::Jwt {
                issuer: huge.clone(),
                token_id: Some(huge.clone()),
            }),
            organization_id: Some(id.clone()),
            rooftop_ids: vec![id.clone(); 10_000],
            unresolved_rooftops: u32::MAX,
            tool: huge.clone(),
            profile: huge.clone(),
            policy_decision: huge.clone(),
            resource_ids: vec![uri.clone(); 10_000],
            outcome: huge.clone(),
            delegation: vec![huge.clone(); 1_000],
        };
        let bounded = event.bounded();
        let bytes = serde_json::to_string(&bounded).unwrap().len();
        assert!(bytes <= MAX_EVENT_BYTES, "{bytes} bytes");
        assert_eq!(bounded.rooftop_ids.len(), MAX_LIST_ENTRIES);
        assert_eq!(bounded.rooftop_ids.last().unwrap(), TRUNCATED_MARKER);
        assert_eq!(bounded.resource_ids[0], uri);
        assert_eq!(bounded.delegation.len(), MAX_DELEGATION_ENTRIES);
        assert_eq!(bounded.bounded(), bounded);
        // An invalid identifier becomes the marker, never a prefix of itself.
        let mut raw = bounded.clone();
        raw.organization_id = Some(huge.clone());
        raw.rooftop_ids = vec!["bad id".into()];
        raw.resource_ids = vec!["dealeragent://x y".into()];
        let b = raw.bounded();
        assert_eq!(b.organization_id.as_deref(), Some(INVALID_MARKER));
        assert_eq!(b.rooftop_ids, [INVALID_MARKER]);
        assert_eq!(b.resource_ids, [INVALID_MARKER]);
    }

    #[test]
    fn counters_start_on_the_minute() {
        let at: DateTime<Utc> = "2026-12-01T10:17:42.123456789Z".parse().unwrap();
        let c = AuditCount::one(
            at,
            "10.1.2.3".parse().unwrap(),
            "trace.1",
            "tool",
            "profile",
            "deny",
            "dealeragent.rate_limited",
        );
        assert_eq!(c.window_start.to_rfc3339(), "2026-12-01T10:17:00+00:00");
        assert_eq!(c.client_network, "10.1.2.0/24");
        assert_eq!(c.count, 1);
        assert_eq!(
            c.last_at,
            "2026-12-01T10:17:42.123456Z"
                .parse::<DateTime<Utc>>()
                .unwrap()
        );
    }

    #[test]
    fn shares_are_max_min_fair() {
        // Everything fits: nobody is cut.
        assert_eq!(share_of(&[10, 20], 30), None);
        assert_eq!(share_of(&[], 0), None);
        // One principal flooding: the quiet ones keep everything, the
        // flooder keeps the rest.
        assert_eq!(share_of(&[10, 1_000_000, 5], 1_000), Some(985));
        // Two flooders split what the quiet one leaves.
        assert_eq!(share_of(&[500, 500, 10], 110), Some(50));
        // The share never lets the kept total exceed the bound.
        for (counts, max) in [
            (vec![3u64, 7, 7, 100], 20u64),
            (vec![1, 1, 1], 2),
            (vec![50; 7], 101),
        ] {
            let share = share_of(&counts, max).expect("over the bound");
            let kept: u64 = counts.iter().map(|c| (*c).min(share)).sum();
            assert!(kept <= max, "{counts:?} {max}: share {share} keeps {kept}");
            assert!(
                counts.iter().map(|c| (*c).min(share + 1)).sum::<u64>() > max,
                "{counts:?} {max}: share {share} is not the largest"
            );
        }
    }

    #[test]
    fn only_rooftops_of_the_directory_are_kept_the_others_are_counted() {
        let long = "r".repeat(MAX_IDENTIFIER_CHARS);
        let mut named: Vec<serde_json::Value> = (0..100)
            .map(|n| serde_json::Value::String(format!("{long}{n}")))
            .collect();
        named.push("roof.a".into());
        named.push("roof.a".into());
        named.push(serde_json::json!(7));
        named.push("not an id".into());
        let (kept, unresolved) = resolve_rooftops(&named, |id| id == "roof.a");
        assert_eq!(kept, ["roof.a"]);
        assert_eq!(unresolved, 102);
        // Past the inspected ids, everything is counted unread.
        let many = vec![serde_json::Value::from("roof.a"); MAX_ROOFTOPS_INSPECTED + 5];
        assert_eq!(
            resolve_rooftops(&many, |_| true),
            (vec!["roof.a".to_owned()], 5)
        );
    }

    #[test]
    fn the_counter_share_and_the_event_share_add_up_to_the_bound() {
        let p = AuditRetention {
            retention_days: 90,
            max_events: 1_000_000,
        };
        assert_eq!(p.max_counters(), 100_000);
        assert_eq!(p.max_single_events() + p.max_counters(), p.max_events);
    }
}
