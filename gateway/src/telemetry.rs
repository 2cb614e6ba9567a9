//! Logging through `tracing` on stderr: JSON lines (for log collectors) or
//! human-readable text (for a terminal), chosen by `--log-format` (issue 15
//! item 2). Logs carry ids, codes and timings; never tokens, request bodies
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

impl LogFormat {
    /// The format `Auto` resolves to here: text for a person at a
    /// terminal, JSON for anything that collects stderr.
    fn resolved(self) -> Self {
        match self {
            Self::Auto if std::io::stderr().is_terminal() => Self::Text,
            Self::Auto => Self::Json,
            other => other,
        }
    }
}

type Filtered = Layered<reload::Layer<EnvFilter, Registry>, Registry>;
type Output = Box<dyn Layer<Filtered> + Send + Sync>;

struct Handles {
    filter: reload::Handle<EnvFilter, Registry>,
    output: reload::Handle<Output, Filtered>,
}

static HANDLES: OnceLock<Handles> = OnceLock::new();

fn filter_of(directive: &str) -> EnvFilter {
    EnvFilter::try_new(directive).unwrap_or_else(|_| EnvFilter::new("info"))
}

fn output_of(format: LogFormat) -> Output {
    match format.resolved() {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .boxed(),
        LogFormat::Json | LogFormat::Auto => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
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
