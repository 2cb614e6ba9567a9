//! The one problem reporter of every operator file: the dealers file, the
//! programs file, the JSON and CSV inventory feeds, the config file and the
//! buyer profiles of `preview --profile`.
//!
//! An operator file is refused whole, with every problem found in one pass,
//! each as `<file>:<line>:<column>: <json-pointer>: <rule>: <explanation>`
//! (CSV feeds keep their `<file>:<line>: <column-name>: …` form): where it
//! is in the file as written ([`locate`]), which rule failed, and what was
//! expected in words ([`explain`]), naming an unexpected key with the keys
//! allowed there and a did-you-mean ([`suggest`]). Money is checked where
//! the number is read ([`money`]): what is imported is exactly what agents
//! are told. The formats are documented in docs/dealers-file.md "Error
//! report", docs/pricing.md "Validation", docs/inventory-feeds.md "Problem
//! reports" and docs/operations.md "Configuration file".
//!
//! These files are the operator's own, so a key, and where it helps a
//! value, may be named. Tool input on the MCP surface never goes through
//! here: its errors never echo the caller (DAP-ERR-002, docs/security.md).

pub mod explain;
pub mod locate;
pub mod money;
pub mod suggest;

use std::fmt;

pub use locate::{Position, Syntax, Target};

/// One problem (or warning) of an operator file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// RFC 6901 JSON pointer into the document (`""` = the root).
    pub pointer: String,
    /// The rule that failed: the JSON Schema keyword (`required`,
    /// `pattern`, `additionalProperties`, ...) or a rule of the format
    /// (`unique`, `iso_4217`, `amount_minor`, ...).
    pub rule: String,
    /// What was expected, in words.
    pub explanation: String,
    /// Where the pointer is in the file as written, when it can be found.
    pub position: Option<Position>,
}

impl Problem {
    /// A problem without a position yet.
    pub fn new(pointer: impl Into<String>, rule: &str, explanation: impl Into<String>) -> Self {
        Self {
            pointer: pointer.into(),
            rule: rule.to_owned(),
            explanation: explanation.into(),
            position: None,
        }
    }

    /// One report line: `<file>[:<line>:<column>]: <pointer>: <rule>: <explanation>`
    /// (the root pointer is printed `""`).
    pub fn line(&self, file: &str) -> String {
        let at = self
            .position
            .map(|p| format!(":{}:{}", p.line, p.column))
            .unwrap_or_default();
        let pointer = if self.pointer.is_empty() {
            "\"\""
        } else {
            &self.pointer
        };
        format!("{file}{at}: {pointer}: {}: {}", self.rule, self.explanation)
    }
}

/// Is `pointer` equal to `base` or inside it (`/a/b` is inside `/a`, not
/// inside `/a/bc`)?
pub fn is_at_or_under(pointer: &str, base: &str) -> bool {
    pointer == base
        || pointer
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// A file refused whole: every problem, and what did not happen because of
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// The file as named on the command line.
    pub file: String,
    /// In file order ([`sorted`]).
    pub problems: Vec<Problem>,
    /// What was not done, e.g. "nothing was imported".
    pub outcome: String,
}

impl FileReport {
    /// A report of `problems` (sorted here) for `file`.
    pub fn new(file: &str, problems: Vec<Problem>, outcome: &str) -> Self {
        Self {
            file: file.to_owned(),
            problems: sorted(problems),
            outcome: outcome.to_owned(),
        }
    }

    /// The report lines, one per problem, without the summary line.
    pub fn lines(&self) -> Vec<String> {
        self.problems.iter().map(|p| p.line(&self.file)).collect()
    }
}

impl fmt::Display for FileReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {} problem(s); {}",
            self.file,
            self.problems.len(),
            self.outcome
        )?;
        for line in self.lines() {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for FileReport {}

/// Report order: file order (line, column); problems without a position
/// last, by pointer with array indexes compared as numbers (so
/// `/rooftops/2` comes before `/rooftops/10`). The same problem twice is
/// reported once.
pub fn sorted(mut problems: Vec<Problem>) -> Vec<Problem> {
    fn key(pointer: &str) -> Vec<(u8, usize, String)> {
        locate::segments(pointer)
            .into_iter()
            .map(|s| match s.parse::<usize>() {
                Ok(n) => (0, n, String::new()),
                Err(_) => (1, 0, s),
            })
            .collect()
    }
    problems.sort_by_cached_key(|p| {
        (
            p.position.is_none(),
            p.position,
            key(&p.pointer),
            p.rule.clone(),
        )
    });
    problems.dedup();
    problems
}

/// At most this many problems of one file get a line and column: each one
/// costs another read of the file, which keeps a file with thousands of
/// problems quick to report (the pointer still finds the rest).
pub const MAX_LOCATED: usize = 200;

/// Give each problem the position of its pointer in `text` (`targets[i]`
/// says whether problem `i` is about a value or a key; missing targets are
/// values). At most [`MAX_LOCATED`] are located.
pub fn locate_all(text: &str, syntax: Syntax, problems: &mut [Problem], targets: &[Target]) {
    for (i, p) in problems.iter_mut().enumerate().take(MAX_LOCATED) {
        let target = targets.get(i).copied().unwrap_or(Target::Value);
        p.position = locate::find(text, syntax, &p.pointer, target);
    }
}

/// A YAML or JSON operator file read into its JSON data model, or the
/// problem that stops it (not UTF-8, not YAML, not JSON), with its
/// position.
///
/// # Errors
/// The one `parse` problem.
pub fn parse_document(bytes: &[u8], syntax: Syntax) -> Result<(&str, serde_json::Value), Problem> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let before = &bytes[..e.valid_up_to()];
        let line = before.iter().filter(|b| **b == b'\n').count() + 1;
        Problem::new("", "parse", format!("not valid UTF-8 text (line {line})"))
    })?;
    let doc = match syntax {
        Syntax::Json => serde_json::from_str(text).map_err(|e| {
            let mut p = Problem::new(
                "",
                "parse",
                format!("not valid JSON (line {}, column {})", e.line(), e.column()),
            );
            p.position = Some(Position {
                line: e.line(),
                column: e.column(),
            });
            p
        })?,
        Syntax::Yaml => yaml_serde::from_str(text).map_err(|e| {
            let position = e.location().map(|l| Position {
                line: l.line(),
                column: l.column(),
            });
            let at = position
                .map(|p| format!(" (line {}, column {})", p.line, p.column))
                .unwrap_or_default();
            let mut p = Problem::new("", "parse", format!("not valid YAML{at}"));
            p.position = position;
            p
        })?,
    };
    Ok((text, doc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_sort_by_position_then_pointer_and_name_the_root() {
        let mut a = Problem::new("/programs/10/name", "minLength", "too short");
        a.position = Some(Position { line: 9, column: 3 });
        let b = Problem::new("/programs/2/name", "minLength", "too short");
        let c = Problem::new("", "parse", "not valid YAML");
        let report = FileReport::new("p.yaml", vec![c, b, a.clone(), a], "nothing was imported");
        assert_eq!(
            report.to_string(),
            "p.yaml: 3 problem(s); nothing was imported\n\
             p.yaml:9:3: /programs/10/name: minLength: too short\n\
             p.yaml: \"\": parse: not valid YAML\n\
             p.yaml: /programs/2/name: minLength: too short\n"
        );
        assert!(is_at_or_under("/a/b/c", "/a/b"));
        assert!(!is_at_or_under("/a/bc", "/a/b"));
    }
}
