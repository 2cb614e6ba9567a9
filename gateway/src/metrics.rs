//! Prometheus metrics (docs/operations.md "Metrics") and the per-request
//! facts the access log writes (docs/operations.md "Logs").
//!
//! Every layer counts through the `metrics` facade (`metrics::counter!`,
//! `histogram!`, `gauge!`), so nothing below the transport imports this
//! module; this module installs the one process-wide recorder and renders
//! it for `GET /metrics`. Gauges that describe state rather than events
//! (snapshot age against the SLA, breaker state, build info) are set when
//! a scrape asks for them, from the same directory and inventory view the
//! tools read, so they cannot disagree with what agents are told.
//!
//! Labels carry organization ids, rooftop ids, tool and method names from
//! the catalog, outcome codes from the closed DAP error enum: never a token,
//! a vehicle, a caller's address or anything a caller typed (an unknown tool
//! name is counted as `unknown`, not echoed).
//!
//! Who reads which series ([`Audience`], docs/operations.md "Metrics"): the
//! operator, on the `--metrics-listen` address, reads everything. A grant
//! carrying `dealergateway:metrics:read` on the main listener is bound to
//! its organization like every grant (DAP spec 7): it reads the series of
//! the rooftops it covers and the gateway-wide totals, which name no
//! tenant; a series naming another organization or a rooftop it does not
//! cover is left out, as is any series with a label this module does not
//! know to be tenant-free (a new label stays private until it is listed).

use std::cell::RefCell;
use std::sync::OnceLock;
use std::time::Instant;

use chrono::Utc;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::auth::Grant;
use crate::availability::BreakerState;
use crate::state::AppState;
use crate::store::{ImportKind, ImportOutcome};

mod lint;

/// Upper bounds (seconds) of the latency histograms: a cached tool answer
/// takes well under a millisecond, an upstream availability check up to its
/// timeout (seconds).
const LATENCY_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

static RECORDER: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// The process-wide recorder, installed on first use. `None` when another
/// recorder was installed first (an embedding program's): the gateway then
/// counts into that one and `/metrics` says it cannot render.
pub fn handle() -> Option<&'static PrometheusHandle> {
    RECORDER
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Suffix("duration_seconds".into()),
                    &LATENCY_BUCKETS,
                )
                .ok()?;
            match builder.install_recorder() {
                Ok(handle) => {
                    describe();
                    Some(handle)
                }
                Err(error) => {
                    tracing::warn!(%error, "metrics recorder not installed; /metrics is unavailable");
                    None
                }
            }
        })
        .as_ref()
}

/// HELP text for every metric (docs/operations.md lists them too).
fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        REQUESTS,
        "MCP requests answered, by JSON-RPC method, tool (tools/call only) and outcome (ok or an error code)"
    );
    describe_histogram!(
        TOOL_DURATION,
        Unit::Seconds,
        "Time to answer one tools/call, by tool"
    );
    describe_counter!(
        HTTP_REFUSALS,
        "Requests refused at the HTTP edge before any method ran, by reason"
    );
    describe_counter!(
        RATE_LIMITED,
        "Requests refused by a rate limit, by limit (address, principal, tool_quota)"
    );
    describe_counter!(
        CURSOR_REFUSALS,
        "Pagination cursors refused, by reason (malformed, bad_signature, expired, ...)"
    );
    describe_counter!(
        AUDIT_EVENTS,
        "Audit events, by result: written, or dropped (the store refused the write)"
    );
    describe_gauge!(
        SNAPSHOT_AGE,
        Unit::Seconds,
        "Seconds since the served inventory snapshot of a rooftop was imported"
    );
    describe_gauge!(
        SNAPSHOT_SLA,
        Unit::Seconds,
        "The rooftop's inventory freshness SLA: the snapshot age an alert compares against"
    );
    describe_gauge!(
        SNAPSHOT_VEHICLES,
        "Vehicles in the served inventory snapshot of a rooftop"
    );
    describe_gauge!(
        BREAKER,
        "Circuit breaker of a rooftop's availability source on this replica: 0 closed, 1 half-open, 2 open"
    );
    describe_gauge!(
        BREAKER_FAILURES,
        "Consecutive failures of a rooftop's availability source while its breaker is closed"
    );
    describe_counter!(
        IMPORTS,
        "Imports run by the CLI on this store (dry runs excluded), by kind (inventory, programs, dealers) and outcome (imported, invalid, refused, removal_guard); read from the store, so every replica reports the same totals"
    );
    describe_gauge!(
        SUBSCRIPTIONS,
        "Resource subscriptions held by this replica's change hub, over every open stream (docs/mcp.md \"Subscriptions\")"
    );
    describe_gauge!(
        SUBSCRIPTION_STREAMS,
        "Open notification streams on this replica (subscriptions/listen and legacy GET streams)"
    );
    describe_counter!(
        NOTIFICATIONS_QUEUED,
        "Notifications queued for a stream, by kind (updated, list_changed)"
    );
    describe_counter!(
        NOTIFICATIONS_DROPPED,
        "Notifications not delivered because their stream was ended, by reason (slow_consumer, ...)"
    );
    describe_counter!(
        STREAMS_ENDED,
        "Notification streams ended by the server, by reason (slow_consumer, credential_revoked, credential_expired, shutdown)"
    );
    describe_gauge!(
        LINT_FAILING,
        "Vehicles of a rooftop whose published disclosure fails a confirmed rule of the disclosure lint, by rule (docs/lint.md), for a buyer in the rooftop's own jurisdiction; every confirmed rule that applies there has a series, 0 included; recomputed in the background after the rooftop's snapshot, its dealers file settings or the rule catalogue change (until then the previous counts)"
    );
    describe_gauge!(BUILD_INFO, "Always 1; the labels name the build");
    describe_gauge!(
        SCRAPE_ERRORS,
        "1 when the last scrape could not read the directory or the inventory (the state gauges are then stale)"
    );
}

pub const REQUESTS: &str = "dealer_gateway_requests_total";
pub const TOOL_DURATION: &str = "dealer_gateway_tool_duration_seconds";
pub const HTTP_REFUSALS: &str = "dealer_gateway_http_refusals_total";
pub const RATE_LIMITED: &str = "dealer_gateway_rate_limited_total";
pub const CURSOR_REFUSALS: &str = "dealer_gateway_cursor_refusals_total";
pub const AUDIT_EVENTS: &str = crate::store::audit::AUDIT_EVENTS_METRIC;
pub const SNAPSHOT_AGE: &str = "dealer_gateway_snapshot_age_seconds";
pub const SNAPSHOT_SLA: &str = "dealer_gateway_snapshot_sla_seconds";
pub const SNAPSHOT_VEHICLES: &str = "dealer_gateway_snapshot_vehicles";
pub const BREAKER: &str = "dealer_gateway_availability_breaker_state";
pub const BREAKER_FAILURES: &str = "dealer_gateway_availability_breaker_failures";
pub const IMPORTS: &str = "dealer_gateway_imports_total";
// The change hub's series are named where they are recorded.
use crate::watch::metric::{
    NOTIFICATIONS_DROPPED, NOTIFICATIONS_QUEUED, STREAMS_ENDED, SUBSCRIPTION_STREAMS, SUBSCRIPTIONS,
};
pub const LINT_FAILING: &str = "dealer_gateway_disclosure_lint_failing_vehicles";
pub const BUILD_INFO: &str = "dealer_gateway_build_info";
pub const SCRAPE_ERRORS: &str = "dealer_gateway_scrape_error";

/// Who a scrape is for.
#[derive(Debug, Clone, Copy)]
pub enum Audience<'a> {
    /// The operator (`--metrics-listen`): every series.
    Operator,
    /// A grant with the metrics scope: its own tenancy only.
    Grant(&'a Grant),
}

/// Labels whose values name no tenant: catalog tool and MCP method names,
/// outcome codes, histogram bounds, fixed words.
const TENANT_FREE_LABELS: [&str; 12] = [
    "method", "tool", "outcome", "le", "quantile", "version", "reason", "limit", "status", "kind",
    "result", "rule",
];

/// [`render`] for `audience`: everything for the operator; for a grant,
/// only what [`visible_to`] keeps. `None` when no recorder renders.
pub async fn render_for(state: &AppState, audience: Audience<'_>) -> Option<String> {
    let text = render(state).await?;
    match audience {
        Audience::Operator => Some(text),
        Audience::Grant(grant) => {
            // Without a directory no rooftop label can be placed: every
            // tenant series is then left out (never shown by default).
            let directory = state.directory.snapshot().await.ok();
            let organization = directory
                .as_deref()
                .and_then(|d| d.organization(&grant.organization_id));
            let of_organization = |rooftop: &str| {
                organization.is_some_and(|o| o.rooftops.iter().any(|r| r.rooftop_id == rooftop))
            };
            Some(visible_to(&text, grant, of_organization))
        }
    }
}

/// The lines of exposition `text` that `grant` may read: comments (HELP
/// and TYPE, the same for everyone) and each sample whose every label is
/// tenant-free or names the grant's organization or a rooftop of it
/// (`of_organization`, from the directory) that the grant covers. A line
/// that does not parse is left out.
pub fn visible_to(text: &str, grant: &Grant, of_organization: impl Fn(&str) -> bool) -> String {
    let covers =
        |rooftop: &str| of_organization(rooftop) && grant.covers(&grant.organization_id, rooftop);
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let keep = line.is_empty()
            || line.starts_with('#')
            || sample_labels(line).is_some_and(|labels| {
                labels.iter().all(|(name, value)| match name.as_str() {
                    "organization_id" => *value == grant.organization_id,
                    // `source` is the rooftop of an availability source.
                    "rooftop_id" | "source" => covers(value),
                    other => TENANT_FREE_LABELS.contains(&other),
                })
            });
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The labels of one sample line (`name{a="x",b="y"} value` or `name
/// value`), values unescaped (`\\`, `\"`, `\n`); `None` when the line is
/// not a sample.
fn sample_labels(line: &str) -> Option<Vec<(String, String)>> {
    let name_end = line.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))?;
    if name_end == 0 {
        return None;
    }
    let rest = &line[name_end..];
    let Some(mut rest) = rest.strip_prefix('{') else {
        return rest.starts_with(' ').then(Vec::new);
    };
    let mut labels = Vec::new();
    loop {
        if let Some(after) = rest.strip_prefix('}') {
            return after.starts_with(' ').then_some(labels);
        }
        let end = rest.find('=')?;
        let name = &rest[..end];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        rest = rest[end + 1..].strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let close = loop {
            match chars.next()? {
                (i, '"') => break i,
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    c @ ('\\' | '"') => value.push(c),
                    _ => return None,
                },
                (_, c) => value.push(c),
            }
        };
        labels.push((name.to_owned(), value));
        rest = &rest[close + 1..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
}

/// The Prometheus text exposition of everything counted so far, after the
/// state gauges are brought up to date. `None` when no recorder renders.
pub async fn render(state: &AppState) -> Option<String> {
    let handle = handle()?;
    let ok = observe_state(state).await;
    metrics::gauge!(SCRAPE_ERRORS).set(if ok { 0.0 } else { 1.0 });
    metrics::gauge!(BUILD_INFO, "version" => env!("CARGO_PKG_VERSION")).set(1.0);
    // Upkeep drains the histograms' pending samples; without it they
    // would grow between scrapes (the exporter's own listener does this
    // on a timer; here every scrape does it).
    handle.run_upkeep();
    Some(handle.render())
}

/// Sets the state gauges from the directory and the inventory view, and
/// the import totals from the store; false when any could not be read.
async fn observe_state(state: &AppState) -> bool {
    // Imports run in the CLI's own process, which keeps no recorder: their
    // totals live in the store (`import_counts`, docs/operations.md
    // "Metrics"), and a scrape reports them. Labels are the two closed
    // enums, never a tenant id or a file name. Every pair is reported, 0
    // included, so a first refusal is an increase a rate() sees.
    let Ok(counts) = state.store.import_counts().await else {
        return false;
    };
    for kind in ImportKind::ALL {
        for outcome in ImportOutcome::ALL {
            let total = counts
                .iter()
                .find(|c| c.kind == kind && c.outcome == outcome)
                .map_or(0, |c| c.count);
            metrics::counter!(IMPORTS, "kind" => kind.as_str(), "outcome" => outcome.as_str())
                .absolute(total);
        }
    }
    let Ok(directory) = state.directory.snapshot().await else {
        return false;
    };
    let Ok(view) = state.inventory.view(&directory).await else {
        return false;
    };
    lint::observe(state, &directory, &view);
    let now = Utc::now();
    for organization in &directory.organizations {
        for rooftop in &organization.rooftops {
            let labels = [
                ("organization_id", organization.organization_id.clone()),
                ("rooftop_id", rooftop.rooftop_id.clone()),
            ];
            let sla = rooftop.settings.freshness_sla_seconds.inventory;
            metrics::gauge!(SNAPSHOT_SLA, &labels).set(f64::from(sla));
            if let Some(inventory) = view.rooftop(&rooftop.rooftop_id) {
                // Whole seconds: SLAs are minutes to hours.
                let age = (now - inventory.latest.created_at()).num_seconds();
                metrics::gauge!(SNAPSHOT_AGE, &labels).set(age.max(0) as f64);
                metrics::gauge!(SNAPSHOT_VEHICLES, &labels).set(inventory.latest.len() as f64);
            }
            if let Some(source) = crate::availability::http_source(rooftop) {
                let (code, failures) = match state.availability.breaker_state(source) {
                    BreakerState::Closed { failures } => (0.0, f64::from(failures)),
                    BreakerState::HalfOpen { .. } => (1.0, 0.0),
                    BreakerState::Open { .. } => (2.0, 0.0),
                };
                metrics::gauge!(BREAKER, &labels).set(code);
                metrics::gauge!(BREAKER_FAILURES, &labels).set(failures);
            }
        }
    }
    true
}

/// What the access log says about one request (docs/operations.md "Logs"), filled
/// in by the layers that learn each part: the transport (method,
/// principal, trace id), the dispatcher (tool, outcome).
#[derive(Debug, Default, Clone)]
pub struct RequestFacts {
    /// The JSON-RPC method, once the body parsed.
    pub method: Option<String>,
    /// A catalog tool name (tools/call only; never an unknown name).
    pub tool: Option<String>,
    /// `ok`, a DAP error code, or a JSON-RPC error code.
    pub outcome: Option<String>,
    /// `anonymous` or the grant's subject id; never a credential.
    pub principal: Option<String>,
    pub trace_id: Option<String>,
    /// The caller's span id, when it sent a W3C Trace Context
    /// (docs/operations.md "Tracing").
    pub parent_id: Option<String>,
}

tokio::task_local! {
    static FACTS: RefCell<RequestFacts>;
}

/// Runs `future` (one HTTP request) with a fresh facts record, then hands
/// back what the layers noted. The record is task-local: the request's
/// future runs on one task, so no lock is needed.
pub async fn with_facts<F: std::future::Future>(future: F) -> (F::Output, RequestFacts) {
    FACTS
        .scope(RefCell::new(RequestFacts::default()), async move {
            let output = future.await;
            let facts = FACTS.with(|f| f.take());
            (output, facts)
        })
        .await
}

/// Notes facts of the current request; a no-op outside [`with_facts`]
/// (stdio, the console's direct tool calls, tests).
pub fn note(update: impl FnOnce(&mut RequestFacts)) {
    let _ = FACTS.try_with(|f| update(&mut f.borrow_mut()));
}

/// Counts one answered MCP method (and, for a tool call, its latency).
pub fn count_method(method: &str, tool: Option<&str>, outcome: &str, started: Instant) {
    let method = known_method(method);
    let tool = tool.unwrap_or("").to_owned();
    if !tool.is_empty() {
        metrics::histogram!(TOOL_DURATION, "tool" => tool.clone())
            .record(started.elapsed().as_secs_f64());
    }
    metrics::counter!(REQUESTS, "method" => method, "tool" => tool, "outcome" => outcome.to_owned())
        .increment(1);
}

/// The MCP methods this gateway answers keep their names as labels; any
/// other string a caller sent becomes `other` (no echo, bounded labels).
pub fn known_method(method: &str) -> &'static str {
    const KNOWN: [&str; 16] = [
        "initialize",
        "ping",
        "server/discover",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "subscriptions/listen",
        "resources/subscribe",
        "resources/unsubscribe",
        "notifications/initialized",
        "notifications/cancelled",
    ];
    KNOWN
        .iter()
        .find(|k| **k == method)
        .copied()
        .unwrap_or("other")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(rooftops: crate::auth::RooftopScope) -> Grant {
        Grant {
            subject: "ops:a".into(),
            audience: "http://127.0.0.1/mcp".into(),
            organization_id: "org.a".into(),
            rooftops,
            scopes: std::collections::BTreeSet::new(),
            purpose: "test".into(),
            expires_at: Utc::now(),
            delegation: vec![],
            credential: crate::auth::Credential::ApiToken {
                token_id: "0123456789abcdef".into(),
            },
        }
    }

    #[test]
    fn a_sample_line_parses_with_escaped_values_and_junk_does_not() {
        assert_eq!(
            sample_labels(r#"m{a="x\"y",b="p\\q\nr"} 1"#),
            Some(vec![
                ("a".into(), "x\"y".into()),
                ("b".into(), "p\\q\nr".into())
            ])
        );
        assert_eq!(sample_labels("m 1"), Some(vec![]));
        for junk in [
            "m{a=\"x} 1",
            "m{a=x} 1",
            "{a=\"x\"} 1",
            "m{a=\"x\"}1",
            "m{=\"x\"} 1",
            "m{a=\"\\q\"} 1",
        ] {
            assert_eq!(sample_labels(junk), None, "{junk}");
        }
    }

    #[test]
    fn a_grant_reads_its_own_rooftops_and_tenant_free_totals_only() {
        let text = "# HELP g gauge\n# TYPE g gauge\n\
            g{organization_id=\"org.a\",rooftop_id=\"roof.a1\"} 1\n\
            g{organization_id=\"org.a\",rooftop_id=\"roof.a2\"} 2\n\
            g{organization_id=\"org.b\",rooftop_id=\"roof.b1\"} 3\n\
            u{source=\"roof.a1\",outcome=\"ok\"} 4\n\
            u{source=\"roof.b1\",outcome=\"ok\"} 5\n\
            r{method=\"tools/call\",tool=\"t\",outcome=\"ok\"} 6\n\
            n{novel=\"org.b\"} 7\n\
            broken{organization_id=\"org.a\" 8\n";
        let kept = |grant: &Grant, rooftops: &[&str]| {
            visible_to(text, grant, |r: &str| rooftops.contains(&r))
        };
        let group = kept(
            &grant(crate::auth::RooftopScope::Group),
            &["roof.a1", "roof.a2"],
        );
        assert!(
            group.contains("roof.a1\"} 1") && group.contains("roof.a2\"} 2"),
            "{group}"
        );
        assert!(group.contains("source=\"roof.a1\""), "{group}");
        assert!(group.contains("r{method"), "{group}");
        assert!(
            group.starts_with("# HELP g gauge\n# TYPE g gauge\n"),
            "{group}"
        );
        for hidden in ["org.b", "roof.b1", "novel", "broken"] {
            assert!(!group.contains(hidden), "{hidden}: {group}");
        }
        let one = kept(
            &grant(crate::auth::RooftopScope::Rooftops(
                ["roof.a1".to_owned()].into(),
            )),
            &["roof.a1", "roof.a2"],
        );
        assert!(one.contains("roof.a1") && !one.contains("roof.a2"), "{one}");
        // Without the directory no rooftop series is placed.
        let blind = visible_to(text, &grant(crate::auth::RooftopScope::Group), |_: &str| {
            false
        });
        assert!(
            !blind.contains("roof.") && blind.contains("r{method"),
            "{blind}"
        );
    }
}
