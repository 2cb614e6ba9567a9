//! Check outcomes, trimmed evidence and the JSON report.

use serde_json::{Map, Value, json};

use crate::client::Exchange;

/// Longest string kept in evidence.
pub const MAX_EVIDENCE_CHARS: usize = 400;
/// Most array items kept in evidence.
const MAX_EVIDENCE_ITEMS: usize = 3;
/// Deepest nesting kept in evidence.
const MAX_EVIDENCE_DEPTH: usize = 6;
/// Most exchanges kept per check.
pub const MAX_EXCHANGES: usize = 4;

/// The result of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    Failed,
    Skipped,
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
        }
    }
}

/// What a check found: its verdict, why, and trimmed exchanges.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub verdict: Verdict,
    pub reason: String,
    pub evidence: Vec<Value>,
}

impl Default for Outcome {
    fn default() -> Self {
        Self::new()
    }
}

impl Outcome {
    /// A check in progress (passed unless told otherwise).
    pub fn new() -> Self {
        Self {
            verdict: Verdict::Passed,
            reason: String::new(),
            evidence: Vec::new(),
        }
    }

    /// Keep `ex` as evidence (at most [`MAX_EXCHANGES`]).
    pub fn saw(&mut self, ex: &Exchange) {
        if self.evidence.len() < MAX_EXCHANGES {
            self.evidence.push(json!({
                "sent": trim(&ex.sent, 0),
                "received": trim(&json!({"status": ex.status, "body": ex.body.clone()}), 0),
            }));
        }
    }

    /// Keep `ex` as evidence in place of the oldest kept one: the exchange
    /// that proves a failure matters more than the ones before it.
    pub fn saw_first(&mut self, ex: &Exchange) {
        if self.evidence.len() >= MAX_EXCHANGES {
            self.evidence.pop();
        }
        self.evidence.insert(
            0,
            json!({
                "sent": trim(&ex.sent, 0),
                "received": trim(&json!({"status": ex.status, "body": ex.body.clone()}), 0),
            }),
        );
    }

    pub fn pass(mut self, reason: impl Into<String>) -> Self {
        self.verdict = Verdict::Passed;
        self.reason = reason.into();
        self
    }

    pub fn fail(mut self, reason: impl Into<String>) -> Self {
        self.verdict = Verdict::Failed;
        self.reason = cap(&reason.into(), 1000);
        self
    }

    pub fn skip(mut self, reason: impl Into<String>) -> Self {
        self.verdict = Verdict::Skipped;
        self.reason = reason.into();
        self
    }

    /// Fail with every problem found, or pass with `ok`.
    pub fn conclude(self, problems: &[String], ok: impl Into<String>) -> Self {
        if problems.is_empty() {
            self.pass(ok)
        } else {
            let shown: Vec<&str> = problems.iter().take(5).map(String::as_str).collect();
            let more = problems.len().saturating_sub(shown.len());
            let mut reason = shown.join("; ");
            if more > 0 {
                reason.push_str(&format!("; and {more} more"));
            }
            self.fail(reason)
        }
    }
}

/// Cut `text` to `max` characters, marking the cut.
pub fn cap(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let kept: String = text.chars().take(max).collect();
        format!("{kept}…")
    }
}

/// A bounded copy of `value`: long strings cut, long arrays shortened,
/// deep nesting summarised.
pub fn trim(value: &Value, depth: usize) -> Value {
    match value {
        Value::String(s) => Value::String(cap(s, MAX_EVIDENCE_CHARS)),
        Value::Array(items) => {
            if depth >= MAX_EVIDENCE_DEPTH {
                return Value::String(format!("[{} items]", items.len()));
            }
            let mut out: Vec<Value> = items
                .iter()
                .take(MAX_EVIDENCE_ITEMS)
                .map(|v| trim(v, depth + 1))
                .collect();
            if items.len() > MAX_EVIDENCE_ITEMS {
                out.push(Value::String(format!(
                    "… {} more items",
                    items.len() - MAX_EVIDENCE_ITEMS
                )));
            }
            Value::Array(out)
        }
        Value::Object(map) => {
            if depth >= MAX_EVIDENCE_DEPTH {
                return Value::String(format!("{{{} members}}", map.len()));
            }
            let mut out = Map::new();
            for (k, v) in map {
                // The text block repeats structuredContent; keep it short.
                out.insert(k.clone(), trim(v, depth + 1));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// One finished check, as it appears in the report.
#[derive(Debug, Clone)]
pub struct CheckRecord {
    pub id: &'static str,
    pub group: &'static str,
    pub title: &'static str,
    pub section: &'static str,
    pub keyword: &'static str,
    pub text: &'static str,
    pub required: bool,
    pub outcome: Outcome,
}

impl CheckRecord {
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "group": self.group,
            "title": self.title,
            "requirement": {"section": self.section, "keyword": self.keyword, "text": self.text},
            "required": self.required,
            "result": self.outcome.verdict.as_str(),
            "reason": self.outcome.reason,
            "evidence": self.outcome.evidence,
        })
    }

    /// The line printed for this check.
    pub fn line(&self) -> String {
        match self.outcome.verdict {
            Verdict::Passed => format!("PASS {} {}", self.id, self.title),
            Verdict::Failed => format!("FAIL {} {}: {}", self.id, self.title, self.outcome.reason),
            Verdict::Skipped => format!("SKIP {} {}: {}", self.id, self.title, self.outcome.reason),
        }
    }
}

/// Counts over a set of records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub required_failed: usize,
    pub required_skipped: usize,
}

impl Summary {
    pub fn of(records: &[CheckRecord]) -> Self {
        let mut s = Self::default();
        for r in records {
            match r.outcome.verdict {
                Verdict::Passed => s.passed += 1,
                Verdict::Failed => {
                    s.failed += 1;
                    if r.required {
                        s.required_failed += 1;
                    }
                }
                Verdict::Skipped => {
                    s.skipped += 1;
                    if r.required {
                        s.required_skipped += 1;
                    }
                }
            }
        }
        s
    }

    pub fn to_json(self) -> Value {
        json!({
            "passed": self.passed, "failed": self.failed, "skipped": self.skipped,
            "required_failed": self.required_failed, "required_skipped": self.required_skipped,
        })
    }

    /// The closing line: exactly `N passed, N failed, N skipped`.
    pub fn line(self) -> String {
        format!(
            "{} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        )
    }
}
