//! Reuse of offer evaluations, cached per vehicle, program set and as_of
//! window.
//!
//! Evaluating an organization's stacking rules for one vehicle is most of
//! what a disclosure costs, and its result is a function of the vehicle
//! record (an id in one snapshot version), the program set (one loaded
//! [`OrgPrograms`]), the profile's jurisdiction and payment mode, and the
//! instant. An entry is kept with the instant it was evaluated at (its
//! `as_of`, which the evaluation states) and is served for at most
//! [`REUSE`], and never past the evaluation's own `valid_until` (the first
//! program window that opens or closes; DAP 7: an offer is never shown
//! outside its validity). A reloaded program set is a different set: its
//! entries are never shared with the old one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use chrono::{DateTime, Duration, Utc};
use serde_json::value::RawValue;

use super::{OffersOutcome, ProgramsInput};
use crate::offers::OrgPrograms;

/// How long one evaluation is reused.
pub const REUSE: Duration = Duration::seconds(60);

/// At most this many entries; a full cache starts over.
const MAX_ENTRIES: usize = 16_384;

/// What an evaluation is a function of, besides the instant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EvaluationKey {
    pub organization_id: String,
    pub vehicle_id: String,
    pub snapshot_version: i64,
    /// The profile jurisdiction, serialized.
    pub jurisdiction: String,
    pub payment_mode: Option<String>,
}

/// One reusable evaluation.
#[derive(Debug, Clone)]
pub struct Evaluated {
    /// The programs input with its `evaluation` replaced by an empty object
    /// placeholder (the extension key stays, so the disclosure built from it
    /// is validated with the same members); `None` when the organization
    /// publishes no programs.
    pub input: Option<Arc<ProgramsInput>>,
    /// The evaluation itself, written to text once, when a reader first
    /// asks for it in full (the default disclosure needs only `concise`).
    pub evaluation: Option<Arc<FullEvaluation>>,
    /// Its concise form (what decides the answer), made once from the
    /// same tree: the default disclosure is sent with this in place of the
    /// full evaluation, which used to be parsed back from its text for
    /// every document built (docs/benchmarks.md "Scenarios added for a
    /// million vehicles", the first disclosure).
    pub concise: Option<Arc<RawValue>>,
    /// The instant it was evaluated at.
    pub as_of: DateTime<Utc>,
}

/// An evaluation kept typed, with its text made on first use.
#[derive(Debug)]
pub struct FullEvaluation {
    outcome: OffersOutcome,
    text: OnceLock<Option<Arc<RawValue>>>,
}

impl FullEvaluation {
    pub fn new(outcome: OffersOutcome) -> Self {
        FullEvaluation {
            outcome,
            text: OnceLock::new(),
        }
    }

    /// The evaluation as JSON text, written once. `None` only if it
    /// cannot be serialized, which no evaluation the engine makes does.
    pub fn text(&self) -> Option<Arc<RawValue>> {
        self.text
            .get_or_init(|| {
                serde_json::value::to_raw_value(&self.outcome)
                    .ok()
                    .map(Arc::from)
            })
            .clone()
    }
}

struct Entry {
    programs: Arc<OrgPrograms>,
    expires: DateTime<Utc>,
    evaluated: Evaluated,
}

/// What a whole disclosure document is a function of, besides the
/// instant, the program set and the directory snapshot (which the entry
/// holds and compares by identity).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DocumentKey {
    pub evaluation: EvaluationKey,
    /// The availability band, `Band::as_str`.
    pub band: &'static str,
    pub withdrawn: bool,
}

/// A validated disclosure document as JSON text, split around the value of
/// `provenance.transformed_at` (a JSON string), which each request writes.
#[derive(Debug)]
pub struct Document {
    pub before: String,
    pub after: String,
}

impl Document {
    /// Splits `json` (a serialized document) at its one `transformed_at`
    /// value `stamp` (already a JSON string). `None` when it is not found
    /// exactly once; the caller then serves `json` unchanged, uncached.
    pub fn split(json: &str, stamp: &str) -> Option<Document> {
        let marker = format!("\"transformed_at\":{stamp}");
        let at = json.find(&marker)?;
        if json[at + marker.len()..].contains(&marker) {
            return None;
        }
        let value = at + "\"transformed_at\":".len();
        Some(Document {
            before: json[..value].to_owned(),
            after: json[value + stamp.len()..].to_owned(),
        })
    }

    /// The document with `stamp` (a JSON string) as `transformed_at`.
    pub fn with_stamp(&self, stamp: &str) -> String {
        let mut out = String::with_capacity(self.before.len() + stamp.len() + self.after.len());
        out.push_str(&self.before);
        out.push_str(stamp);
        out.push_str(&self.after);
        out
    }
}

struct DocumentEntry {
    programs: Arc<OrgPrograms>,
    directory: Arc<dyn std::any::Any + Send + Sync>,
    built: DateTime<Utc>,
    expires: DateTime<Utc>,
    document: Arc<Document>,
}

/// Evaluations by [`EvaluationKey`] and documents by [`DocumentKey`],
/// shared by every request.
#[derive(Default)]
pub struct EvaluationCache {
    entries: Mutex<HashMap<EvaluationKey, Entry>>,
    documents: Mutex<HashMap<DocumentKey, DocumentEntry>>,
}

impl std::fmt::Debug for EvaluationCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvaluationCache").finish_non_exhaustive()
    }
}

impl EvaluationCache {
    /// A document built for `key` under `programs` and `directory` that
    /// is still the same document at `now`.
    pub fn document<D: Send + Sync + 'static>(
        &self,
        key: &DocumentKey,
        programs: &Arc<OrgPrograms>,
        directory: &Arc<D>,
        now: DateTime<Utc>,
    ) -> Option<Arc<Document>> {
        let documents = self
            .documents
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let entry = documents.get(key)?;
        let same_directory =
            Arc::as_ptr(&entry.directory).cast::<()>() == Arc::as_ptr(directory).cast::<()>();
        (Arc::ptr_eq(&entry.programs, programs)
            && same_directory
            && entry.built <= now
            && now < entry.expires)
            .then(|| entry.document.clone())
    }

    /// Remembers `document`, built at `built` for `key`, until `expires`
    /// (the caller's earliest change, see the module doc), and never past
    /// the reuse period.
    pub fn keep_document<D: Send + Sync + 'static>(
        &self,
        key: DocumentKey,
        programs: &Arc<OrgPrograms>,
        directory: &Arc<D>,
        built: DateTime<Utc>,
        expires: DateTime<Utc>,
        document: Arc<Document>,
    ) {
        let expires = expires.min(built + REUSE);
        if expires <= built {
            return;
        }
        let mut documents = self
            .documents
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if documents.len() >= MAX_ENTRIES {
            documents.clear();
        }
        let directory: Arc<dyn std::any::Any + Send + Sync> = directory.clone();
        documents.insert(
            key,
            DocumentEntry {
                programs: programs.clone(),
                directory,
                built,
                expires,
                document,
            },
        );
    }

    /// The evaluation of `key` under `programs` reusable at `now` (within
    /// its reuse period and validity), if any. A miss is evaluated by the
    /// caller on the evaluation pool (docs/pricing.md section 4: never on
    /// the async workers) and handed to [`EvaluationCache::remember`].
    pub fn reusable(
        &self,
        key: &EvaluationKey,
        programs: &Arc<OrgPrograms>,
        now: DateTime<Utc>,
    ) -> Option<Evaluated> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = entries.get(key)?;
        (Arc::ptr_eq(&entry.programs, programs)
            && entry.evaluated.as_of <= now
            && now < entry.expires)
            .then(|| entry.evaluated.clone())
    }

    /// Remembers `input`, evaluated for `key` under `programs` at `now`,
    /// and returns it as served: the evaluation kept typed (its text made
    /// when first asked for), [`OffersOutcome::Held`] in its place in the
    /// input. An evaluation its budget bounded is kept like any other
    /// (reused for at most [`REUSE`]): evaluating it again would cost the
    /// same budget again. `summarize` makes the concise form of the
    /// evaluation (the tool's rule).
    pub fn remember(
        &self,
        key: EvaluationKey,
        programs: &Arc<OrgPrograms>,
        now: DateTime<Utc>,
        mut input: Option<ProgramsInput>,
        summarize: fn(&OffersOutcome) -> serde_json::Result<Box<RawValue>>,
    ) -> Evaluated {
        let mut expires = now + REUSE;
        let mut evaluation = None;
        let mut concise = None;
        if let Some(p) = input.as_mut() {
            if let Some(until) = p.evaluation_valid_until {
                expires = expires.min(until);
            }
            if let Some(outcome) = p.evaluation.take() {
                concise = summarize(&outcome).ok().map(Arc::from);
                evaluation = Some(Arc::new(FullEvaluation::new(outcome)));
                p.evaluation = Some(OffersOutcome::Held);
            }
        }
        let evaluated = Evaluated {
            input: input.map(Arc::new),
            evaluation,
            concise,
            as_of: now,
        };
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(
            key,
            Entry {
                programs: programs.clone(),
                expires,
                evaluated: evaluated.clone(),
            },
        );
        evaluated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> DocumentKey {
        DocumentKey {
            evaluation: EvaluationKey {
                organization_id: "org.a".into(),
                vehicle_id: "veh.a".into(),
                snapshot_version: 1,
                jurisdiction: "null".into(),
                payment_mode: None,
            },
            band: "available",
            withdrawn: false,
        }
    }

    #[test]
    fn a_document_is_split_once_around_its_stamp_and_rewritten_with_another() {
        let stamp = "\"2026-12-01T10:00:00.123Z\"";
        let json =
            format!(r#"{{"a":1,"provenance":{{"transformed_at":{stamp},"x":[]}},"z":"{{"}}"#);
        let doc = Document::split(&json, stamp).expect("split");
        assert_eq!(doc.with_stamp(stamp), json);
        let later = "\"2026-12-01T10:00:30Z\"";
        assert_eq!(
            doc.with_stamp(later),
            json.replace("10:00:00.123Z", "10:00:30Z")
        );
        // Twice, or not at all: not split (served uncached).
        let twice = format!(r#"{{"transformed_at":{stamp},"b":{{"transformed_at":{stamp}}}}}"#);
        assert!(Document::split(&twice, stamp).is_none());
        assert!(Document::split(r#"{"a":1}"#, stamp).is_none());
    }

    #[test]
    fn a_document_is_served_only_for_its_programs_directory_and_window() {
        let cache = EvaluationCache::default();
        let programs = Arc::new(OrgPrograms::from_records(&[], Utc::now()));
        let directory = Arc::new(7u32);
        let now = Utc::now();
        let doc = Arc::new(Document {
            before: "{\"t\":".into(),
            after: "}".into(),
        });
        let until = now + Duration::seconds(10);
        cache.keep_document(key(), &programs, &directory, now, until, doc);
        assert!(cache.document(&key(), &programs, &directory, now).is_some());
        let almost = until - Duration::milliseconds(1);
        assert!(
            cache
                .document(&key(), &programs, &directory, almost)
                .is_some()
        );
        // At the change, before the build, under another program set or
        // directory snapshot, or for another key: built again.
        assert!(
            cache
                .document(&key(), &programs, &directory, until)
                .is_none()
        );
        let before = now - Duration::milliseconds(1);
        assert!(
            cache
                .document(&key(), &programs, &directory, before)
                .is_none()
        );
        let reloaded = Arc::new(OrgPrograms::from_records(&[], Utc::now()));
        assert!(cache.document(&key(), &reloaded, &directory, now).is_none());
        let other_directory = Arc::new(7u32);
        assert!(
            cache
                .document(&key(), &programs, &other_directory, now)
                .is_none()
        );
        let mut stale = key();
        stale.band = "unknown";
        assert!(cache.document(&stale, &programs, &directory, now).is_none());
        // Never past the reuse period, whatever the caller asks.
        let far = now + Duration::days(1);
        let doc = Arc::new(Document {
            before: String::new(),
            after: String::new(),
        });
        cache.keep_document(key(), &programs, &directory, now, far, doc);
        assert!(
            cache
                .document(&key(), &programs, &directory, now + REUSE)
                .is_none()
        );
        // An expiry not after the build keeps nothing.
        let mut fresh = key();
        fresh.withdrawn = true;
        let doc = Arc::new(Document {
            before: String::new(),
            after: String::new(),
        });
        cache.keep_document(fresh.clone(), &programs, &directory, now, now, doc);
        assert!(cache.document(&fresh, &programs, &directory, now).is_none());
    }
}
