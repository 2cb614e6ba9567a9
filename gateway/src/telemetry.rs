//! Logging through `tracing` on stderr: JSON lines (for log collectors) or
//! human-readable text (for a terminal), chosen by `--log-format`
//! (docs/operations.md "Logs"). Logs carry ids, codes and timings; never tokens, request bodies
//! or customer data.
//!
//! The subscriber is installed once, early (`main` calls [`init`] before
//! the command runs), and both its filter and its format can be changed
//! afterwards with [`configure`]: `serve --config FILE` may name a `log`
//! filter or a `log_format` that is only known once the file is read.

use std::io::IsTerminal as _;
use std::sync::OnceLock;

use tracing_subscriber::layer::{Layered, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer, Registry, reload};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Text when stderr is a terminal, JSON lines otherwise.
    #[default]
    Auto,
    /// One JSON object per line.
    Json,
    /// Human-readable text (coloured on a terminal).
    Text,
}

type Filtered = Layered<reload::Layer<EnvFilter, Registry>, Registry>;
type Summarized = Layered<SlowStatements, Filtered>;
type Output = Box<dyn Layer<Summarized> + Send + Sync>;

struct Handles {
    filter: reload::Handle<EnvFilter, Registry>,
    output: reload::Handle<Output, Summarized>,
}

/// sqlx's slow-statement warnings carry the whole SQL
/// text, pretty-printed (16 KB for some statements): unreadable in a log
/// and costly to ship. This layer replaces each of them with one short
/// warning under the same target: the statement kind (its first SQL
/// keyword), sqlx's few-word summary, the duration in milliseconds and
/// the row counts; the original event is then not logged at all.
pub struct SlowStatements;

/// The fields of one sqlx slow-statement event that the summary keeps.
#[derive(Default)]
struct SlowStatement {
    summary: String,
    statement: String,
    elapsed_secs: Option<f64>,
    rows_returned: Option<u64>,
    rows_affected: Option<u64>,
}

impl tracing::field::Visit for SlowStatement {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "summary" => value.clone_into(&mut self.summary),
            "db.statement" => value.clone_into(&mut self.statement),
            _ => {}
        }
    }

    fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
        if field.name() == "elapsed_secs" {
            self.elapsed_secs = Some(value);
        }
    }

    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        match field.name() {
            "rows_returned" => self.rows_returned = Some(value),
            "rows_affected" => self.rows_affected = Some(value),
            _ => {}
        }
    }

    fn record_debug(&mut self, _field: &tracing::field::Field, _value: &dyn std::fmt::Debug) {}
}

impl SlowStatement {
    /// The statement's kind: its first SQL keyword after any comment
    /// lines (`SELECT`, `INSERT`, `WITH`, `CREATE`, ...), upper-cased.
    fn kind(&self) -> String {
        let text = if self.statement.trim().is_empty() {
            &self.summary
        } else {
            &self.statement
        };
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("--"))
            .flat_map(str::split_whitespace)
            .next()
            .map(|w| {
                w.chars()
                    .take_while(char::is_ascii_alphabetic)
                    .collect::<String>()
            })
            .filter(|w| !w.is_empty())
            .map_or_else(|| "STATEMENT".to_owned(), |w| w.to_ascii_uppercase())
    }

    fn elapsed_ms(&self) -> u64 {
        let secs = self.elapsed_secs.unwrap_or_default();
        if !secs.is_finite() || secs <= 0.0 {
            return 0;
        }
        let millis = std::time::Duration::from_secs_f64(secs).as_millis();
        u64::try_from(millis).unwrap_or(u64::MAX)
    }
}

/// sqlx marks its slow-statement events with this field (its ordinary
/// statement events do not have it).
const SLOW_MARK: &str = "slow_threshold";

impl<S: tracing::Subscriber> Layer<S> for SlowStatements {
    fn event_enabled(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        let meta = event.metadata();
        if meta.target() != "sqlx::query" || meta.fields().field(SLOW_MARK).is_none() {
            return true;
        }
        let mut slow = SlowStatement::default();
        event.record(&mut slow);
        // Logged in place of the original, which is disabled by returning
        // false; this one has no `slow_threshold` field, so it passes.
        tracing::warn!(
            target: "sqlx::query",
            statement = %slow.kind(),
            summary = %slow.summary,
            elapsed_ms = slow.elapsed_ms(),
            rows_returned = slow.rows_returned,
            rows_affected = slow.rows_affected,
            "slow statement"
        );
        false
    }
}

static HANDLES: OnceLock<Handles> = OnceLock::new();

fn filter_of(directive: &str) -> EnvFilter {
    EnvFilter::try_new(directive).unwrap_or_else(|_| EnvFilter::new("info"))
}

fn output_of(format: LogFormat) -> Output {
    output_to(format, std::io::stderr().is_terminal(), std::io::stderr)
}

/// The log line writer of `format` into `writer` (stderr, or a buffer in
/// tests); `terminal` says whether `Auto` means text and colours are on.
fn output_to<W>(format: LogFormat, terminal: bool, writer: W) -> Output
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    let format = match format {
        LogFormat::Auto if terminal => LogFormat::Text,
        LogFormat::Auto => LogFormat::Json,
        other => other,
    };
    match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .with_ansi(terminal)
            .boxed(),
        LogFormat::Json | LogFormat::Auto => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(writer)
            .with_current_span(false)
            .boxed(),
    }
}

/// Install the global subscriber once with the default format
/// ([`LogFormat::Auto`]). `filter` is an EnvFilter directive (`info`,
/// `gateway=debug`, ...); an invalid one falls back to `info`. Later calls
/// are no-ops (tests).
pub fn init(filter: &str) {
    if HANDLES.get().is_some() {
        return;
    }
    let (filter_layer, filter) = reload::Layer::new(filter_of(filter));
    let (output_layer, output) = reload::Layer::new(output_of(LogFormat::Auto));
    if tracing_subscriber::registry()
        .with(filter_layer)
        .with(SlowStatements)
        .with(output_layer)
        .try_init()
        .is_ok()
    {
        let _ = HANDLES.set(Handles { filter, output });
    }
}

/// Replace the filter and the format of the subscriber [`init`] installed
/// (installing it first if needed). Returns false when the subscriber is
/// not ours (another one was installed first), so nothing changed.
pub fn configure(filter: &str, format: LogFormat) -> bool {
    init(filter);
    let Some(handles) = HANDLES.get() else {
        return false;
    };
    handles.filter.reload(filter_of(filter)).is_ok()
        && handles.output.reload(output_of(format)).is_ok()
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A log destination the test can read back.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if let Ok(mut b) = self.0.lock() {
                b.extend_from_slice(buf);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> tracing_subscriber::fmt::MakeWriter<'w> for Buffer {
        type Writer = Self;
        fn make_writer(&'w self) -> Self::Writer {
            self.clone()
        }
    }

    /// The same stack as [`init`], into a buffer. Installed as the global
    /// default (the summary is logged from inside a dispatch, which only
    /// the global dispatcher allows); no other test of this crate installs
    /// a subscriber.
    #[test]
    fn a_slow_statement_is_logged_as_kind_and_duration_without_its_sql() {
        let buffer = Buffer::default();
        let (filter, _filter_handle) = reload::Layer::new(EnvFilter::new("info"));
        let (output, handle) =
            reload::Layer::new(output_to(LogFormat::Json, false, buffer.clone()));
        let subscriber = tracing_subscriber::registry()
            .with(filter)
            .with(SlowStatements)
            .with(output);
        tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber");
        let sql = "\n\n-- the newest snapshot of each rooftop\nSELECT s.snapshot_id, s.version\n  FROM snapshots s\n WHERE s.organization_id = $1 /* and 16 KB more */\n";
        // What sqlx 0.9 logs for a statement over its slow threshold.
        tracing::warn!(
            target: "sqlx::query",
            summary = "select s.snapshot_id, s.version …",
            db.statement = sql,
            rows_affected = 0u64,
            rows_returned = 3u64,
            elapsed = ?std::time::Duration::from_millis(1520),
            elapsed_secs = 1.52f64,
            slow_threshold = ?std::time::Duration::from_secs(1),
            "slow statement: execution time exceeded alert threshold"
        );
        // An ordinary event passes untouched.
        tracing::warn!(target: "gateway::store", rows = 2u64, "unrelated telemetry test event");
        // Other tests of this process may log into the buffer too: only
        // this test's lines are judged.
        let text = String::from_utf8(buffer.0.lock().expect("buffer").clone()).expect("UTF-8");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .filter(|l: &serde_json::Value| {
                l["fields"]["summary"] == "select s.snapshot_id, s.version …"
                    || l["fields"]["message"] == "unrelated telemetry test event"
            })
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        let slow = &lines[0]["fields"];
        assert_eq!(lines[0]["target"], "sqlx::query", "{text}");
        assert_eq!(lines[0]["level"], "WARN", "{text}");
        assert_eq!(slow["message"], "slow statement", "{text}");
        assert_eq!(slow["statement"], "SELECT", "{text}");
        assert_eq!(slow["elapsed_ms"], 1520, "{text}");
        assert_eq!(slow["rows_returned"], 3, "{text}");
        assert!(!text.contains("FROM snapshots"), "{text}");
        assert!(!text.contains("16 KB more"), "{text}");
        assert_eq!(
            lines[1]["fields"]["message"], "unrelated telemetry test event",
            "{text}"
        );
        // The text format (as on a terminal) says the same in one line.
        handle
            .reload(output_to(LogFormat::Text, false, buffer.clone()))
            .expect("reloaded");
        buffer.0.lock().expect("buffer").clear();
        tracing::warn!(
            target: "sqlx::query",
            summary = "insert into vehicles …",
            db.statement = "INSERT INTO vehicles (a, b) VALUES ($1, $2)",
            rows_affected = 1u64,
            rows_returned = 0u64,
            elapsed_secs = 2.0f64,
            slow_threshold = ?std::time::Duration::from_secs(1),
            "slow statement: execution time exceeded alert threshold"
        );
        let text = String::from_utf8(buffer.0.lock().expect("buffer").clone()).expect("UTF-8");
        let ours: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("insert into vehicles …"))
            .collect();
        assert_eq!(ours.len(), 1, "{text}");
        assert!(ours[0].contains("slow statement"), "{text}");
        assert!(ours[0].contains("statement=INSERT"), "{text}");
        assert!(ours[0].contains("elapsed_ms=2000"), "{text}");
        assert!(!text.contains("VALUES ($1"), "{text}");
    }
}
