//! Progress of long CLI commands on stderr (docs/operations.md "Progress of
//! imports and `demo generate`"): imports and
//! `demo generate`. On a terminal an indicatif bar (position, rate, ETA);
//! when stderr is not a terminal (CI, cron, `2> file`) a plain line every
//! 10 % of the work or every 5 seconds, whichever comes first, so a log
//! shows that a long import is alive and how far it is. Never on stdout:
//! stdout carries the summaries and JSON that scripts read.

use std::io::IsTerminal as _;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use indicatif::{BinaryBytes, HumanCount, HumanDuration, ProgressBar, ProgressDrawTarget};

/// `--progress`: how progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ProgressMode {
    /// A bar on a terminal, plain periodic lines otherwise.
    #[default]
    Auto,
    /// Plain periodic lines, even on a terminal.
    Lines,
    /// Nothing.
    None,
}

/// What the position counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Rows,
}

/// How a [`Progress`] draws, once `Auto` is resolved against stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Bar,
    Lines,
    Off,
}

/// A line is printed at least this often while work goes on (lines style).
const LINE_EVERY: Duration = Duration::from_secs(5);

/// One progress indicator over a known amount of work. Cheap to clone and
/// to update from several threads (the import's reader thread updates it
/// while the writer runs).
#[derive(Clone)]
pub struct Progress {
    inner: Arc<Inner>,
}

struct Inner {
    /// The position, length and rate estimate; drawn only in bar style.
    bar: ProgressBar,
    style: Style,
    label: String,
    unit: Unit,
    lines: Mutex<LineState>,
}

struct LineState {
    last_at: Instant,
    /// The last tenth of the work a line was printed for.
    last_tenth: u64,
    message: String,
    finished: bool,
}

impl Progress {
    /// Start showing progress of `total` units of work under `label`.
    pub fn new(mode: ProgressMode, label: impl Into<String>, unit: Unit, total: u64) -> Self {
        let style = match mode {
            ProgressMode::None => Style::Off,
            ProgressMode::Lines => Style::Lines,
            ProgressMode::Auto if std::io::stderr().is_terminal() => Style::Bar,
            ProgressMode::Auto => Style::Lines,
        };
        let label = label.into();
        let target = if style == Style::Bar {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total), target);
        if style == Style::Bar {
            // Two lines: what is being done (cut to the terminal's width),
            // then the bar with its amounts, rate and ETA (within 80
            // columns, so a narrow terminal does not wrap and smear it).
            let template = match unit {
                Unit::Bytes => {
                    "{prefix}: {wide_msg}\n[{bar:30}] {percent:>3}% \
                     {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, ETA {eta})"
                }
                Unit::Rows => {
                    "{prefix}: {wide_msg}\n[{bar:30}] {percent:>3}% \
                     {human_pos}/{human_len} rows ({rows_per_sec}, ETA {eta})"
                }
            };
            if let Ok(s) = indicatif::ProgressStyle::with_template(template) {
                bar.set_style(
                    s.with_key(
                        "rows_per_sec",
                        |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                            let _ = write!(w, "{}/s", HumanCount(whole(state.per_sec())));
                        },
                    )
                    .progress_chars("=> "),
                );
            }
            bar.set_prefix(label.clone());
            bar.enable_steady_tick(Duration::from_millis(250));
        }
        let inner = Arc::new(Inner {
            bar,
            style,
            label,
            unit,
            lines: Mutex::new(LineState {
                last_at: Instant::now(),
                last_tenth: 0,
                message: String::new(),
                finished: false,
            }),
        });
        if style == Style::Lines {
            inner.line("started");
            spawn_ticker(Arc::downgrade(&inner));
        }
        Self { inner }
    }

    /// Move to `position` units of work done (clamped to the total).
    pub fn set_position(&self, position: u64) {
        let total = self.inner.bar.length().unwrap_or(position);
        self.inner.bar.set_position(position.min(total));
        if self.inner.style == Style::Lines {
            self.inner.maybe_line(false);
        }
    }

    /// What is being done now, shown beside the position.
    pub fn set_message(&self, message: impl Into<String>) {
        let message = message.into();
        match self.inner.style {
            Style::Bar => self.inner.bar.set_message(message),
            Style::Lines => {
                if let Ok(mut state) = self.inner.lines.lock() {
                    state.message = message;
                }
            }
            Style::Off => {}
        }
    }

    /// Print `text` on stderr without breaking the bar (a problem found
    /// while the work goes on).
    pub fn println(&self, text: &str) {
        let text = text.trim_end_matches('\n');
        if self.inner.style == Style::Bar {
            self.inner.bar.suspend(|| eprintln!("{text}"));
        } else {
            eprintln!("{text}");
        }
    }

    /// The work is done: the bar stays at 100 %, lines end with a summary.
    pub fn finish(&self) {
        let inner = &self.inner;
        if let Some(total) = inner.bar.length() {
            inner.bar.set_position(total);
        }
        match inner.style {
            Style::Bar => inner.bar.finish_with_message("done"),
            Style::Lines => {
                let done = match inner.lines.lock() {
                    Ok(mut state) if !state.finished => {
                        state.finished = true;
                        true
                    }
                    _ => false,
                };
                if done {
                    let elapsed = inner.bar.elapsed();
                    eprintln!(
                        "{}: done, {} in {} ({})",
                        inner.label,
                        inner.amount(inner.bar.position()),
                        HumanDuration(elapsed),
                        inner.rate()
                    );
                }
            }
            Style::Off => {}
        }
    }
}

impl Inner {
    /// Print a line if a new tenth of the work is reached or the last line
    /// is [`LINE_EVERY`] old (`timer`: called by the ticker, not by work).
    fn maybe_line(&self, timer: bool) {
        let total = self.bar.length().unwrap_or(0).max(1);
        let tenth = self.bar.position().saturating_mul(10) / total;
        let due = match self.lines.lock() {
            Ok(mut state) => {
                let due = !state.finished
                    && ((!timer && tenth > state.last_tenth)
                        || state.last_at.elapsed() >= LINE_EVERY);
                if due {
                    state.last_tenth = state.last_tenth.max(tenth);
                    state.last_at = Instant::now();
                }
                due.then(|| state.message.clone())
            }
            Err(_) => None,
        };
        if let Some(message) = due {
            self.line(&message);
        }
    }

    fn line(&self, message: &str) {
        let total = self.bar.length().unwrap_or(0);
        let position = self.bar.position();
        let percent = position.saturating_mul(100) / total.max(1);
        let eta = if position == 0 || position >= total {
            String::new()
        } else {
            format!(", ETA {}", HumanDuration(self.bar.eta()))
        };
        let message = if message.is_empty() {
            String::new()
        } else {
            format!(" — {message}")
        };
        let done = match self.unit {
            Unit::Bytes => format!("{} of {}", BinaryBytes(position), BinaryBytes(total)),
            Unit::Rows => format!("{} of {} rows", HumanCount(position), HumanCount(total)),
        };
        eprintln!(
            "{}: {percent}% ({done}, {}{eta}){message}",
            self.label,
            self.rate(),
        );
    }

    fn amount(&self, n: u64) -> String {
        match self.unit {
            Unit::Bytes => BinaryBytes(n).to_string(),
            Unit::Rows => format!("{} rows", HumanCount(n)),
        }
    }

    fn rate(&self) -> String {
        let per_sec = self.bar.per_sec();
        if !per_sec.is_finite() {
            return "rate unknown".to_owned();
        }
        let n = whole(per_sec);
        match self.unit {
            Unit::Bytes => format!("{}/s", BinaryBytes(n)),
            Unit::Rows => format!("{} rows/s", HumanCount(n)),
        }
    }
}

/// A displayed rate as a whole number (0 for anything not a finite,
/// positive rate).
fn whole(per_sec: f64) -> u64 {
    if !per_sec.is_finite() || per_sec <= 0.0 {
        return 0;
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a displayed rate, rounded: finite and positive here, and saturating"
    )]
    let n = per_sec.round() as u64;
    n
}

impl Drop for Inner {
    /// Work that stopped early (an error) leaves its bar where it was, on
    /// its own line, so the error report below it is readable.
    fn drop(&mut self) {
        if self.style == Style::Bar && !self.bar.is_finished() {
            self.bar.abandon();
        }
    }
}

/// Lines style: a line every [`LINE_EVERY`] even while the position does
/// not move (a long commit), until the work is finished or dropped.
fn spawn_ticker(inner: Weak<Inner>) {
    let spawned = std::thread::Builder::new()
        .name("progress".into())
        .spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(500));
                let Some(inner) = inner.upgrade() else {
                    return;
                };
                if inner.lines.lock().map_or(true, |s| s.finished) {
                    return;
                }
                inner.maybe_line(true);
            }
        });
    // Without the thread only the ticker's lines are missing, not progress.
    drop(spawned);
}
