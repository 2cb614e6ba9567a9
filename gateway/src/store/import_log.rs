//! Refused imports and the count of every import (docs/console.md
//! "Imports", docs/operations.md "Metrics").
//!
//! The CLI imports in its own process, so a refusal would otherwise leave
//! a trace only on the operator's terminal. Each refused import (an invalid
//! file, a store refusal, the removal guard) is kept here for the console's
//! imports page, where the managers of its organization see it; each import
//! that ran (dry runs excluded) is counted by kind and outcome, which
//! `/metrics` reports. What is kept is bounded: the newest
//! [`MAX_ATTEMPTS_PER_ORGANIZATION`] per organization, and every text within
//! its bound. The reason is always the gateway's own sentence, written so
//! that a manager of the organization may read it: it never quotes a store
//! message that could name another organization.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::audit::is_identifier;

/// Refused imports kept per organization (and as many that name none).
pub const MAX_ATTEMPTS_PER_ORGANIZATION: u32 = 100;
/// Characters kept of the file name (its end: the file's own name).
pub const MAX_FILE_CHARS: usize = 300;
/// Characters kept of the reason.
pub const MAX_REASON_CHARS: usize = 500;
/// Rooftop ids kept of one attempt.
pub const MAX_ROOFTOPS: usize = 100;
/// Organizations one attempt is kept for (a dealers file may name several).
pub const MAX_ORGANIZATIONS: usize = 100;

/// What was imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportKind {
    /// An inventory file (`import inventory`, or a feed of `import bundle`).
    Inventory,
    /// A programs file (`import programs`).
    Programs,
    /// A dealers file (`import dealers`, or a bundle's `dealers.yaml`).
    Dealers,
}

impl ImportKind {
    pub const ALL: [Self; 3] = [Self::Inventory, Self::Programs, Self::Dealers];

    /// The stored word and metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inventory => "inventory",
            Self::Programs => "programs",
            Self::Dealers => "dealers",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// How an import ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportOutcome {
    /// Written (counted only; the snapshot or revision is the record).
    Imported,
    /// The file breaks rules of its format (every problem on stderr).
    Invalid,
    /// The arguments or the store refused it: an unknown organization or
    /// rooftop, a conflict with what is stored.
    Refused,
    /// The removal guard refused it (docs/inventory-feeds.md "The removal
    /// guard").
    RemovalGuard,
}

impl ImportOutcome {
    pub const ALL: [Self; 4] = [
        Self::Imported,
        Self::Invalid,
        Self::Refused,
        Self::RemovalGuard,
    ];

    /// The stored word and metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Imported => "imported",
            Self::Invalid => "invalid",
            Self::Refused => "refused",
            Self::RemovalGuard => "removal_guard",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == text)
    }
}

/// One import as recorded: every refused one is kept, an `Imported` one is
/// only counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportAttempt {
    /// A UUID v7 string (sorts as `attempted_at` does). A file of several
    /// organizations is kept once per organization, this id on the first
    /// one's row and a fresh one on each other's.
    pub attempt_id: String,
    /// Microsecond precision.
    pub attempted_at: DateTime<Utc>,
    pub kind: ImportKind,
    pub outcome: ImportOutcome,
    /// The stored organizations whose file it was (a dealers file may name
    /// several; each one's managers see it, never the others' ids); empty
    /// when none is known. Read back, the one organization of the row.
    pub organization_ids: Vec<String>,
    /// The rooftops it would have changed; empty: the organization as a
    /// whole (a programs or dealers file, or a feed refused before its
    /// rooftops were known).
    pub rooftop_ids: Vec<String>,
    /// The file as the operator named it.
    pub file: String,
    /// Why, in one line.
    pub reason: String,
    /// Problems found in the file (0 when the refusal is not about them).
    pub problems: u32,
}

impl ImportAttempt {
    /// A new attempt now, with a fresh id.
    pub fn new(kind: ImportKind, outcome: ImportOutcome, file: &str, reason: &str) -> Self {
        Self {
            attempt_id: uuid::Uuid::now_v7().to_string(),
            attempted_at: chrono::SubsecRound::trunc_subsecs(Utc::now(), 6),
            kind,
            outcome,
            organization_ids: Vec::new(),
            rooftop_ids: Vec::new(),
            file: file.to_owned(),
            reason: reason.to_owned(),
            problems: 0,
        }
    }

    /// What the store keeps: an organization or rooftop id that is not an
    /// identifier is dropped (no stored organization has such an id; at
    /// most [`MAX_ORGANIZATIONS`] are kept), the
    /// file keeps its last [`MAX_FILE_CHARS`] characters, the reason its
    /// first line within [`MAX_REASON_CHARS`], at most [`MAX_ROOFTOPS`]
    /// rooftops.
    pub fn bounded(&self) -> Self {
        let mut rooftop_ids: Vec<String> = self
            .rooftop_ids
            .iter()
            .filter(|r| is_identifier(r))
            .take(MAX_ROOFTOPS)
            .cloned()
            .collect();
        rooftop_ids.sort();
        rooftop_ids.dedup();
        Self {
            attempt_id: self.attempt_id.clone(),
            attempted_at: self.attempted_at,
            kind: self.kind,
            outcome: self.outcome,
            organization_ids: {
                let mut ids: Vec<String> = self
                    .organization_ids
                    .iter()
                    .filter(|o| is_identifier(o))
                    .take(MAX_ORGANIZATIONS)
                    .cloned()
                    .collect();
                ids.sort();
                ids.dedup();
                ids
            },
            rooftop_ids,
            file: tail(&self.file, MAX_FILE_CHARS),
            reason: head(
                self.reason.lines().next().unwrap_or_default().trim(),
                MAX_REASON_CHARS,
            ),
            problems: self.problems,
        }
    }

    /// Does this attempt concern `rooftop_id` (named, or the organization
    /// as a whole)?
    pub fn concerns(&self, rooftop_id: &str) -> bool {
        self.rooftop_ids.is_empty() || self.rooftop_ids.iter().any(|r| r == rooftop_id)
    }
}

/// The total of one (kind, outcome) pair since the store was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportCount {
    pub kind: ImportKind,
    pub outcome: ImportOutcome,
    pub count: u64,
}

/// Read back a stored kind and outcome.
pub(super) fn parse_labels(
    kind: &str,
    outcome: &str,
) -> Result<(ImportKind, ImportOutcome), super::StoreError> {
    match (ImportKind::parse(kind), ImportOutcome::parse(outcome)) {
        (Some(k), Some(o)) => Ok((k, o)),
        _ => Err(super::StoreError::Corrupt(format!(
            "import kind {kind:?} or outcome {outcome:?} is not one the gateway writes"
        ))),
    }
}

/// The first `max` characters, marked with `…` when cut.
fn head(text: &str, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((end, _)) if text.chars().count() > max => format!("{}…", &text[..end]),
        _ => text.to_owned(),
    }
}

/// The last `max` characters, marked with `…` when cut (a path's end names
/// the file).
fn tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let skip = count - (max - 1);
    let start = text.char_indices().nth(skip).map_or(text.len(), |(i, _)| i);
    format!("…{}", &text[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_keeps_every_text_within_its_column_bound() {
        let mut attempt = ImportAttempt::new(
            ImportKind::Inventory,
            ImportOutcome::Invalid,
            &format!("/{}/feed.csv", "d".repeat(1_000)),
            &format!("{}\nsecond line", "é".repeat(2_000)),
        );
        attempt.organization_ids = vec!["not an identifier".into(), "org.b".into(), "org.a".into()];
        attempt.rooftop_ids = (0..300).map(|i| format!("roof.{i}")).collect();
        attempt.rooftop_ids.push("x y".into());
        let kept = attempt.bounded();
        assert_eq!(kept.file.chars().count(), MAX_FILE_CHARS);
        assert!(kept.file.ends_with("/feed.csv") && kept.file.starts_with('…'));
        assert_eq!(kept.reason.chars().count(), MAX_REASON_CHARS);
        assert!(kept.reason.ends_with('…') && !kept.reason.contains("second"));
        assert_eq!(kept.organization_ids, ["org.a", "org.b"]);
        assert_eq!(kept.rooftop_ids.len(), MAX_ROOFTOPS);
        assert!(kept.rooftop_ids.iter().all(|r| is_identifier(r)));
        // Short texts are kept as they are.
        let short = ImportAttempt::new(
            ImportKind::Programs,
            ImportOutcome::Refused,
            "p.yaml",
            "why",
        )
        .bounded();
        assert_eq!(
            (short.file.as_str(), short.reason.as_str()),
            ("p.yaml", "why")
        );
    }

    #[test]
    fn labels_round_trip_and_unknown_ones_are_corrupt() {
        for kind in ImportKind::ALL {
            for outcome in ImportOutcome::ALL {
                assert_eq!(
                    parse_labels(kind.as_str(), outcome.as_str()).unwrap(),
                    (kind, outcome)
                );
            }
        }
        assert!(parse_labels("inventory", "ok").is_err());
        assert!(parse_labels("bundle", "invalid").is_err());
    }
}
