//! Reuse of offer evaluations (issue 13 item 4: "cache it per vehicle,
//! program set and as_of window").
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
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Duration, Utc};
use serde_json::value::RawValue;

use super::ProgramsInput;
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
    /// The evaluation itself, serialized once.
    pub evaluation: Option<Arc<RawValue>>,
    /// The instant it was evaluated at.
    pub as_of: DateTime<Utc>,
}

struct Entry {
    programs: Arc<OrgPrograms>,
    expires: DateTime<Utc>,
    evaluated: Evaluated,
}

/// Evaluations by [`EvaluationKey`], shared by every request.
#[derive(Default)]
pub struct EvaluationCache {
    entries: Mutex<HashMap<EvaluationKey, Entry>>,
}

impl std::fmt::Debug for EvaluationCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvaluationCache").finish_non_exhaustive()
    }
}

impl EvaluationCache {
    /// The evaluation of `key` under `programs` at `now`: a reused one when
    /// it is still within its reuse period and validity, else the result of
    /// `evaluate(now)`, remembered.
    pub fn get_or_evaluate(
        &self,
        key: EvaluationKey,
        programs: &Arc<OrgPrograms>,
        now: DateTime<Utc>,
        evaluate: impl FnOnce(DateTime<Utc>) -> Option<ProgramsInput>,
    ) -> Evaluated {
        if let Some(entry) = self
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            && Arc::ptr_eq(&entry.programs, programs)
            && entry.evaluated.as_of <= now
            && now < entry.expires
        {
            return entry.evaluated.clone();
        }
        let mut input = evaluate(now);
        let mut expires = now + REUSE;
        let mut evaluation = None;
        if let Some(p) = input.as_mut() {
            if let Some(until) = p.evaluation_valid_until {
                expires = expires.min(until);
            }
            if let Some(tree) = p.evaluation.take() {
                evaluation = serde_json::value::to_raw_value(&tree).ok().map(Arc::from);
                p.evaluation = Some(serde_json::Value::Object(serde_json::Map::new()));
            }
        }
        let evaluated = Evaluated {
            input: input.map(Arc::new),
            evaluation,
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
