//! Incentive offers (docs/pricing.md): the programs of each organization, cached
//! for the tools that price vehicles (`dealergateway.offers.evaluate`,
//! `dealeragent.pricing.get_disclosure`), the mapping of an inventory
//! record to the pricing engine's [`pricing::Vehicle`], and the programs-file
//! import shared by the CLI and the demo seed ([`import`]).
//!
//! The engine itself is pure (`pricing::stacking::evaluate`); this module
//! loads, validates and caches its inputs, and runs every evaluation on the
//! bounded pool of [`pool`] (never on the async workers) within the
//! whole-evaluation budget (docs/pricing.md section 4).

pub mod import;
pub mod pool;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, FixedOffset, Utc};
use pricing::{Program, ProgramSet, ValidatedPrograms};
use serde::Serialize;
use serde_json::Value;

use crate::inventory::model::VehicleRecord;
use crate::store::{ProgramRecord, Store, StoreError};

/// How long an organization's programs are reused before the store is read
/// again, unless `--programs-refresh-seconds` says otherwise: an import, a
/// replacement or a withdrawal shows up within this delay (docs/pricing.md,
/// "Revisions, whole-set validation, replacement and withdrawal").
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(10);

/// One active stored revision, decoded (or why it does not decode).
#[derive(Debug)]
struct StoredRevision {
    program_id: String,
    revision: u32,
    program: Result<Program, String>,
}

/// The active revisions of one organization, as read from the store, and
/// the validated program set of every revision choice made so far.
#[derive(Debug)]
pub struct OrgPrograms {
    revisions: Vec<StoredRevision>,
    /// Every distinct validity boundary (`valid_from`, `valid_until`) of the
    /// decoded revisions, ascending: the revision choice is constant between
    /// two of them.
    boundaries: Vec<DateTime<Utc>>,
    /// One validated set per revision choice with its reasons (constant
    /// between two boundaries, so there are at most `2n + 1`).
    selections: Mutex<HashMap<Vec<RevisionChoice>, Arc<Selection>>>,
    /// When they were read from the store.
    pub loaded_at: DateTime<Utc>,
}

/// Which revision of one program an evaluation uses, and why the others
/// are not used (docs/pricing.md "Revisions, whole-set validation,
/// replacement and withdrawal").
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct RevisionChoice {
    pub program_id: String,
    /// The revision evaluated.
    pub revision: u32,
    /// Why this one.
    pub reason: String,
    /// Every other active revision of the program, with the reason it was
    /// not used.
    pub not_used: Vec<RevisionNotUsed>,
}

/// An active revision an evaluation did not use.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct RevisionNotUsed {
    pub revision: u32,
    pub reason: String,
}

/// A stored revision that cannot be evaluated (it does not decode, or the
/// revisions chosen with it do not validate as a set). Reported in every
/// evaluation and disclosure, never dropped in silence (docs/pricing.md
/// "Validation").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnusableProgram {
    pub program_id: String,
    pub revision: u32,
    /// What is wrong, one entry per problem.
    pub problems: Vec<String>,
}

/// The programs an evaluation at one `as_of` uses.
#[derive(Debug)]
pub struct Selection {
    /// One revision per program id (the usable ones), validated together.
    pub validated: ValidatedPrograms,
    /// The revision choice of every program id, by id.
    pub revisions: Vec<RevisionChoice>,
    /// Chosen or stored revisions that cannot be evaluated.
    pub unusable: Vec<UnusableProgram>,
}

/// How much of why a stored program cannot be evaluated a reader is told
/// (docs/security.md "Who reads why a rule failed"). A rule's failure text
/// carries the rhai engine's message, which quotes the operator's script
/// (its identifiers, the strings it throws) and its line and position;
/// decoding errors quote the stored document. That is the organization's
/// own business, never an anonymous agent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detail {
    /// Every word: the organization's own credentials, its console, the
    /// operator's CLI.
    #[default]
    Full,
    /// Without engine messages and stored text ([`public_problem`]): what
    /// the rule did ("raised an error", "returned an integer, not a
    /// boolean"), on which stack and in which payment mode, never how.
    /// Anonymous callers, other organizations' grants, and the disclosure
    /// (one document cached for every reader of the vehicle).
    Public,
}

impl Detail {
    /// `Full` for a grant of `organization_id`, `Public` for anybody else.
    pub fn for_caller(principal: &crate::auth::Principal, organization_id: &str) -> Detail {
        match principal.grant() {
            Some(grant) if grant.organization_id == organization_id => Detail::Full,
            _ => Detail::Public,
        }
    }
}

/// A [`Selection`] at one `as_of`, with the next instant at which the
/// choice may change.
#[derive(Debug, Clone)]
pub struct ProgramsAt {
    pub selection: Arc<Selection>,
    /// The first validity boundary after `as_of` (a revision starting or
    /// ending): the evaluation is valid at most until then.
    pub next_change: Option<DateTime<Utc>>,
    /// When evaluations on this value must stop (the pool's deadline).
    deadline: Option<pool::Deadline>,
    /// Programs whose rule failed on a real stack in an evaluation run on
    /// this value (`pricing::stacking::UnusableRule`): reported with the
    /// selection's own unusable programs by [`ProgramsAt::unusable`].
    failed_rules: Arc<Mutex<Vec<UnusableProgram>>>,
    /// What the reader of the evaluations is told ([`Detail`]).
    detail: Detail,
}

impl ProgramsAt {
    /// The validated programs of the selection.
    pub fn validated(&self) -> &ValidatedPrograms {
        &self.selection.validated
    }

    /// True when the organization has no active program at all (usable or
    /// not).
    pub fn is_empty(&self) -> bool {
        self.selection.revisions.is_empty() && self.selection.unusable.is_empty()
    }

    /// The same programs, with evaluations stopped at `deadline` (their
    /// searches then end `bounded`, and the trace says so).
    #[must_use]
    pub fn with_deadline(mut self, deadline: pool::Deadline) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The same programs, told to a reader at `detail`: evaluations,
    /// [`ProgramsAt::unusable`] and its sentences at that detail.
    #[must_use]
    pub fn with_detail(mut self, detail: Detail) -> Self {
        self.detail = detail;
        self
    }

    /// `pricing::evaluate_with` over the selection, within `budget` and the
    /// deadline given by [`ProgramsAt::with_deadline`] (none: the counted
    /// budget alone, as for `preview`), its `valid_until` bounded by
    /// [`ProgramsAt::next_change`] (another revision takes over then). A
    /// program whose rule fails on a real stack is left out by the engine
    /// and from then on reported by [`ProgramsAt::unusable`] (docs/pricing.md
    /// section 3).
    ///
    /// # Errors
    /// The engine's error.
    pub fn evaluate(
        &self,
        vehicle: &pricing::Vehicle,
        profile: &pricing::Profile,
        budget: pricing::SearchBudget,
    ) -> Result<pricing::Evaluation, pricing::stacking::EvaluationError> {
        let deadline = self.deadline;
        let interrupt = move || deadline.is_some_and(|d| d.passed());
        let mut evaluation = pricing::stacking::evaluate_with(
            vehicle,
            &self.selection.validated,
            profile,
            budget,
            &interrupt,
        )?;
        if let Some(next) = self.next_change {
            let next = next.fixed_offset();
            evaluation.valid_until = Some(evaluation.valid_until.map_or(next, |t| t.min(next)));
        }
        if let Some(stop) = evaluation.cost.stopped {
            tracing::info!(
                vehicle.id = %vehicle.vehicle_id,
                budget.stop = ?stop,
                budget.nodes = evaluation.cost.nodes,
                budget.rule_operations = evaluation.cost.rule_operations,
                "offer evaluation stopped at its budget; answered bounded"
            );
        }
        if !evaluation.unusable_rules.is_empty() {
            let mut failed = self
                .failed_rules
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for u in &evaluation.unusable_rules {
                if failed
                    .iter()
                    .any(|f| f.program_id == u.program_id && f.revision == u.revision)
                {
                    continue;
                }
                tracing::warn!(
                    program.id = %u.program_id,
                    program.revision = u.revision,
                    reason = %u.reason,
                    "a stored program's rule failed at evaluation; reported to callers as unusable"
                );
                failed.push(UnusableProgram {
                    program_id: u.program_id.clone(),
                    revision: u.revision,
                    problems: vec![bounded(&format!(
                        "/stacking/rule: {} at evaluation; the program is left out of every stack",
                        u.reason
                    ))],
                });
            }
        }
        if self.detail == Detail::Public {
            redact_evaluation(&mut evaluation);
        }
        Ok(evaluation)
    }

    /// Every program that cannot be evaluated: the selection's (does not
    /// decode, does not validate with the others, its rule fails the proof)
    /// and those whose rule failed in an evaluation run on this value.
    pub fn unusable(&self) -> Vec<UnusableProgram> {
        let mut all = self.selection.unusable.clone();
        let failed = self
            .failed_rules
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        all.extend(failed.iter().cloned());
        all.sort_by(|a, b| (&a.program_id, a.revision).cmp(&(&b.program_id, b.revision)));
        if self.detail == Detail::Public {
            for u in &mut all {
                for problem in &mut u.problems {
                    *problem = public_problem(problem);
                }
            }
        }
        all
    }

    /// Add the gateway's members to a serialized evaluation:
    /// `revisions` (the choice per program) and `unusable_programs`
    /// (`schemas/offers.schema.json#/$defs/offersEvaluation`).
    pub fn annotate(&self, evaluation: &mut Value) {
        if let Some(map) = evaluation.as_object_mut() {
            map.insert(
                "revisions".into(),
                serde_json::to_value(&self.selection.revisions).unwrap_or_default(),
            );
            map.insert(
                "unusable_programs".into(),
                serde_json::to_value(self.unusable()).unwrap_or_default(),
            );
        }
    }

    /// One sentence per unusable program, for a disclosure's `uncertainty`.
    pub fn unusable_sentences(&self) -> Vec<String> {
        self.unusable()
            .iter()
            .map(|u| {
                format!(
                    "Incentive program {} revision {} cannot be evaluated ({}); its offer is not listed.",
                    u.program_id,
                    u.revision,
                    u.problems.join("; ")
                )
            })
            .collect()
    }
}

impl OrgPrograms {
    /// Decode the active stored revisions of one organization.
    pub fn from_records(records: &[ProgramRecord], loaded_at: DateTime<Utc>) -> Self {
        let revisions: Vec<StoredRevision> = records
            .iter()
            .map(|r| StoredRevision {
                program_id: r.program_id.clone(),
                revision: r.revision,
                program: serde_json::from_value::<Program>(r.doc.clone())
                    .map_err(|e| format!("{STORED_DOES_NOT_DECODE}: {e}")),
            })
            .collect();
        let mut boundaries: Vec<DateTime<Utc>> = revisions
            .iter()
            .filter_map(|r| r.program.as_ref().ok())
            .flat_map(|p| [p.valid_from, p.valid_until])
            .flatten()
            .map(|t| t.with_timezone(&Utc))
            .collect();
        boundaries.sort();
        boundaries.dedup();
        Self {
            revisions,
            boundaries,
            selections: Mutex::new(HashMap::new()),
            loaded_at,
        }
    }

    /// The programs an evaluation at `as_of` uses: per program id, the
    /// revision [`choose`] picks; validated as a set (once per distinct
    /// choice). A chosen revision that does not validate with the others is
    /// left out and reported in [`Selection::unusable`], as is every
    /// stored revision that does not decode.
    pub fn at(&self, as_of: DateTime<FixedOffset>) -> ProgramsAt {
        let at = as_of.with_timezone(&Utc);
        let next_change = self.boundaries.iter().find(|b| **b > at).copied();
        let decoded: Vec<(&str, u32, &Program)> = self
            .revisions
            .iter()
            .filter_map(|r| {
                r.program
                    .as_ref()
                    .ok()
                    .map(|p| (r.program_id.as_str(), r.revision, p))
            })
            .collect();
        let (choices, chosen) = choose(&decoded, at);
        let mut cache = self
            .selections
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let selection = cache
            .entry(choices.clone())
            .or_insert_with(|| {
                let (validated, mut unusable) = validate_usable(chosen);
                for r in &self.revisions {
                    if let Err(problem) = &r.program {
                        unusable.push(UnusableProgram {
                            program_id: r.program_id.clone(),
                            revision: r.revision,
                            problems: vec![bounded(problem)],
                        });
                    }
                }
                unusable.sort_by(|a, b| {
                    (&a.program_id, a.revision).cmp(&(&b.program_id, b.revision))
                });
                for u in &unusable {
                    tracing::warn!(
                        program.id = %u.program_id,
                        program.revision = u.revision,
                        problems = %u.problems.join("; "),
                        "stored incentive program cannot be evaluated; reported to callers as unusable"
                    );
                }
                Arc::new(Selection {
                    validated,
                    revisions: choices,
                    unusable,
                })
            })
            .clone();
        ProgramsAt {
            selection,
            next_change,
            deadline: None,
            failed_rules: Arc::default(),
            detail: Detail::Full,
        }
    }
}

/// When an organization's programs were loaded, the staleness generation
/// read before the load, and the programs.
type CachedPrograms = (Instant, u64, Arc<OrgPrograms>);

/// Per-organization cache of [`OrgPrograms`], refreshed after its
/// interval (`--programs-refresh-seconds`, default [`DEFAULT_REFRESH`]).
/// Concurrent misses may both read the store; the
/// result is the same.
pub struct OffersService {
    refresh: Duration,
    /// Per organization: when it was loaded, the staleness generation read
    /// before the load, and the programs.
    cache: Mutex<HashMap<String, CachedPrograms>>,
    /// Bumped by [`OffersService::mark_stale`] (a programs change
    /// notification on PostgreSQL; docs/operations.md "Replicas"): entries of an older
    /// generation are read again.
    generation: std::sync::atomic::AtomicU64,
    /// Where evaluations run ([`pool`]).
    pool: pool::EvaluationPool,
}

impl std::fmt::Debug for OffersService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffersService")
            .field("refresh", &self.refresh)
            .finish_non_exhaustive()
    }
}

impl Default for OffersService {
    fn default() -> Self {
        Self::new()
    }
}

impl OffersService {
    /// A service refreshing after [`DEFAULT_REFRESH`].
    pub fn new() -> Self {
        Self::with_refresh(DEFAULT_REFRESH)
    }

    /// A service refreshing after `refresh` (zero: read the store every call).
    pub fn with_refresh(refresh: Duration) -> Self {
        Self::with_pool(refresh, pool::EvaluationPool::default())
    }

    /// A service refreshing after `refresh` whose evaluations run on `pool`.
    pub fn with_pool(refresh: Duration, pool: pool::EvaluationPool) -> Self {
        Self {
            refresh,
            cache: Mutex::new(HashMap::new()),
            generation: std::sync::atomic::AtomicU64::new(0),
            pool,
        }
    }

    /// The pool every evaluation of a request runs on (docs/pricing.md
    /// section 4, "Where evaluations run").
    pub fn pool(&self) -> &pool::EvaluationPool {
        &self.pool
    }

    /// Read every organization's programs again on next use. Programs are
    /// few per organization, so one generation for all is cheap and leaves
    /// no race between a load and a notification for another organization.
    pub fn mark_stale(&self) {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// The active revisions of `organization_id` (none when it has none).
    /// A stored revision that cannot be evaluated never fails a request: it
    /// is reported by [`OrgPrograms::at`].
    pub async fn programs(
        &self,
        store: &dyn Store,
        organization_id: &str,
    ) -> Result<Arc<OrgPrograms>, StoreError> {
        // Read before the store is, so a change notified during the load
        // leaves this entry stale.
        let generation = self.generation.load(std::sync::atomic::Ordering::Acquire);
        if let Some((at, loaded_generation, cached)) = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(organization_id)
            && at.elapsed() < self.refresh
            && *loaded_generation == generation
        {
            return Ok(cached.clone());
        }
        let records = store.current_programs(organization_id).await?;
        let loaded = Arc::new(OrgPrograms::from_records(&records, Utc::now()));
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(
                organization_id.to_owned(),
                (Instant::now(), generation, loaded.clone()),
            );
        Ok(loaded)
    }
}

/// Is `at` inside the program's validity window (`valid_from` inclusive,
/// `valid_until` exclusive; an omitted bound is open)?
fn window_contains(p: &Program, at: DateTime<Utc>) -> bool {
    p.valid_from.is_none_or(|f| f <= at) && p.valid_until.is_none_or(|u| at < u)
}

/// The validity window in words.
fn window_text(p: &Program) -> String {
    let t = |x: &pricing::incentives::Timestamp| x.to_rfc3339();
    match (&p.valid_from, &p.valid_until) {
        (Some(f), Some(u)) => format!("its window is {} to {}", t(f), t(u)),
        (Some(f), None) => format!("its window starts {} with no end", t(f)),
        (None, Some(u)) => format!("its window ends {}", t(u)),
        (None, None) => "it has no window (always valid)".to_owned(),
    }
}

/// The revision of each program id an evaluation at `at` uses
/// (docs/pricing.md "Revisions, whole-set validation, replacement and
/// withdrawal"):
///
/// 1. the **highest revision whose validity window contains `at`**: a newer
///    revision supersedes an older one only where their windows overlap;
/// 2. when no window contains `at`, the revision that starts next (so the
///    evaluation reports when the program begins), else the highest one
///    (reported not applicable: its window ended).
///
/// Exactly one revision per id is evaluated, so two revisions of one
/// program can never be in one stack. `revisions` holds (id, revision,
/// program) of the decoded active revisions; the result is sorted by id.
fn choose<'a>(
    revisions: &[(&str, u32, &'a Program)],
    at: DateTime<Utc>,
) -> (Vec<RevisionChoice>, Vec<&'a Program>) {
    let mut by_id: BTreeMap<&str, Vec<(u32, &'a Program)>> = BTreeMap::new();
    for (id, revision, program) in revisions {
        by_id.entry(id).or_default().push((*revision, program));
    }
    let mut choices = Vec::with_capacity(by_id.len());
    let mut chosen = Vec::with_capacity(by_id.len());
    for (id, mut revs) in by_id {
        revs.sort_by_key(|r| std::cmp::Reverse(r.0));
        let live = revs.iter().find(|(_, p)| window_contains(p, at));
        let (revision, program, reason) = match live {
            Some((r, p)) => (
                *r,
                *p,
                "the highest revision whose validity window contains as_of".to_owned(),
            ),
            None => {
                let next = revs
                    .iter()
                    .filter(|(_, p)| p.valid_from.is_some_and(|f| f > at))
                    .min_by(|a, b| a.1.valid_from.cmp(&b.1.valid_from).then(b.0.cmp(&a.0)));
                match next {
                    Some((r, p)) => (
                        *r,
                        *p,
                        "no revision is valid at as_of; this one starts next (reported not applicable until then)".to_owned(),
                    ),
                    None => (
                        revs[0].0,
                        revs[0].1,
                        "no revision is valid at as_of and none starts later; the highest revision is reported (not applicable)".to_owned(),
                    ),
                }
            }
        };
        let not_used = revs
            .iter()
            .filter(|(r, _)| *r != revision)
            .map(|(r, p)| RevisionNotUsed {
                revision: *r,
                reason: if live.is_some() && window_contains(p, at) {
                    format!(
                        "superseded by revision {revision}: both windows contain as_of and the higher revision wins where windows overlap"
                    )
                } else {
                    format!("not valid at as_of: {}", window_text(p))
                },
            })
            .collect();
        choices.push(RevisionChoice {
            program_id: id.to_owned(),
            revision,
            reason,
            not_used,
        });
        chosen.push(program);
    }
    (choices, chosen)
}

/// Validate the chosen programs as a set; a program with a problem is left
/// out (and reported with its problems) until the rest validates.
fn validate_usable(chosen: Vec<&Program>) -> (ValidatedPrograms, Vec<UnusableProgram>) {
    let mut programs: Vec<Program> = chosen.into_iter().cloned().collect();
    let mut unusable: Vec<UnusableProgram> = Vec::new();
    loop {
        match ProgramSet::validate(programs.clone()) {
            Ok(validated) => return (validated, unusable),
            Err(problems) => {
                let mut bad: BTreeMap<usize, Vec<String>> = BTreeMap::new();
                for problem in &problems {
                    bad.entry(problem.program_index)
                        .or_default()
                        .push(problem_text(problem));
                }
                let before = programs.len();
                let mut kept = Vec::with_capacity(programs.len());
                for (i, p) in programs.into_iter().enumerate() {
                    match bad.remove(&i) {
                        Some(texts) => unusable.push(UnusableProgram {
                            program_id: p.program_id.clone(),
                            revision: p.revision,
                            problems: texts.iter().map(|t| bounded(t)).collect(),
                        }),
                        None => kept.push(p),
                    }
                }
                programs = kept;
                if programs.len() == before {
                    // Problems that name no program: nothing can be trusted.
                    for p in programs.drain(..) {
                        unusable.push(UnusableProgram {
                            program_id: p.program_id.clone(),
                            revision: p.revision,
                            problems: problems.iter().map(|p| bounded(&problem_text(p))).collect(),
                        });
                    }
                }
            }
        }
    }
}

/// What a rule did, in words that quote nothing of the script: the
/// engine's message after "raised an error" and "ran out of its budget" is
/// dropped (it holds the script's identifiers, thrown text, line and
/// position); a non-boolean result ("returned an integer, not a boolean")
/// names only a rhai type and is kept. `words` is
/// `pricing::rules::failure_words` output; anything else is "failed".
fn public_failure_words(words: &str) -> &str {
    if words.starts_with("raised an error") {
        "raised an error"
    } else if words.starts_with("ran out of its budget") {
        "ran out of its budget"
    } else if words.starts_with("returned ") {
        words
    } else {
        "failed"
    }
}

/// `text`, a rule failure of the engine ("the rule <what it did>, for the
/// stack [..] ..."), with only [`public_failure_words`] of what it did;
/// `None` when `text` is no such sentence. The stack and the payment mode
/// are this gateway's words (program ids and a mode), so the last ", for
/// the stack " is where the engine's message ended.
fn public_rule_failure(text: &str) -> Option<String> {
    let what_and_rest = text.strip_prefix("the rule ")?;
    let end = what_and_rest.rfind(", for the stack ")?;
    let what = public_failure_words(&what_and_rest[..end]);
    Some(format!("the rule {what}{}", &what_and_rest[end..]))
}

/// One problem of an unusable program as a [`Detail::Public`] reader reads
/// it: the JSON pointer and this gateway's own words, without the rhai
/// engine's messages (a rule that fails or does not compile) or the text
/// of a stored document that does not decode.
pub fn public_problem(problem: &str) -> String {
    let (pointer, text) = match problem.split_once(": ") {
        Some((pointer, text)) if pointer.starts_with('/') => (Some(pointer), text),
        _ => (None, problem),
    };
    let text = if let Some(public) = public_rule_failure(text) {
        public
    } else if let Some(at) = text.find(" does not compile: ") {
        format!("{} does not compile", &text[..at])
    } else if text.starts_with(STORED_DOES_NOT_DECODE) {
        STORED_DOES_NOT_DECODE.to_owned()
    } else {
        text.to_owned()
    };
    match pointer {
        Some(pointer) => format!("{pointer}: {text}"),
        None => text,
    }
}

/// The start of a decoding problem (its serde message quotes the stored
/// document).
const STORED_DOES_NOT_DECODE: &str = "the stored document does not decode";

/// The evaluation as a [`Detail::Public`] reader gets it: every reason of a
/// rule that failed on a real stack (in the trace, in each program's
/// applicability and eligibility, in every branch) in public words. The
/// reasons are replaced where they occur verbatim, so no sentence the
/// engine built around them is touched.
fn redact_evaluation(evaluation: &mut pricing::Evaluation) {
    use pricing::stacking::{Applicability, Eligibility};
    let replacements: Vec<(String, String)> = evaluation
        .unusable_rules
        .iter_mut()
        .filter_map(|u| {
            let public =
                public_rule_failure(&u.reason).unwrap_or_else(|| "the rule failed".to_owned());
            (public != u.reason).then(|| (std::mem::replace(&mut u.reason, public.clone()), public))
        })
        .collect();
    if replacements.is_empty() {
        return;
    }
    let redact = |text: &mut String| {
        for (full, public) in &replacements {
            if text.contains(full.as_str()) {
                *text = text.replace(full.as_str(), public);
            }
        }
    };
    evaluation.trace.iter_mut().for_each(redact);
    let reports = evaluation.programs.iter_mut().chain(
        evaluation
            .branches
            .iter_mut()
            .flat_map(|b| b.programs.iter_mut()),
    );
    for report in reports {
        if let Applicability::NotApplicable { reason } = &mut report.applicability {
            redact(reason);
        }
        if let Eligibility::Ineligible { reason } = &mut report.eligibility {
            redact(reason);
        }
    }
}

/// At most 1,000 characters (`offersUnusableProgram.problems`), cut on a
/// character boundary.
fn bounded(text: &str) -> String {
    let kept = crate::dap::truncate(text, 1_000);
    if kept.len() < text.len() {
        format!("{kept}...")
    } else {
        text.to_owned()
    }
}

/// A validation problem without the set-relative `/programs/<i>` prefix of
/// its pointer (meaningless outside one file).
fn problem_text(problem: &pricing::ProgramProblem) -> String {
    let field = problem
        .pointer
        .strip_prefix("/programs/")
        .and_then(|rest| rest.find('/').map(|i| &rest[i..]))
        .unwrap_or("");
    let rule = problem
        .rule
        .replace("in this file", "in the organization's program set");
    if field.is_empty() {
        rule
    } else {
        format!("{field}: {rule}")
    }
}

/// Whole-set validation (docs/pricing.md "Validation"): the organization's resulting
/// active revisions must validate as a set at every instant, i.e. for every
/// revision choice [`choose`] can make (one per interval between two
/// validity boundaries). Every conflict is named once, with the program, the
/// revision, the field and the interval where it first occurs. Used by
/// `import programs` and `programs withdraw` as the store's
/// [`crate::store::ProgramSetCheck`].
///
/// # Errors
/// Every conflict.
pub fn check_program_set(records: &[ProgramRecord]) -> Result<(), Vec<String>> {
    let org = OrgPrograms::from_records(records, Utc::now());
    let mut conflicts: Vec<String> = Vec::new();
    for r in &org.revisions {
        if let Err(problem) = &r.program {
            conflicts.push(format!(
                "program '{}' revision {}: {problem}",
                r.program_id, r.revision
            ));
        }
    }
    // One instant per interval: before the first boundary, then each one.
    let mut instants: Vec<DateTime<Utc>> = Vec::with_capacity(org.boundaries.len() + 1);
    match org.boundaries.first() {
        Some(first) => instants.push(*first - chrono::Duration::microseconds(1)),
        None => instants.push(DateTime::<Utc>::UNIX_EPOCH),
    }
    instants.extend(org.boundaries.iter().copied());
    let decoded: Vec<(&str, u32, &Program)> = org
        .revisions
        .iter()
        .filter_map(|r| {
            r.program
                .as_ref()
                .ok()
                .map(|p| (r.program_id.as_str(), r.revision, p))
        })
        .collect();
    let mut seen: std::collections::HashSet<Vec<(String, u32)>> = std::collections::HashSet::new();
    for (i, at) in instants.iter().enumerate() {
        let (choices, chosen) = choose(&decoded, *at);
        let key: Vec<(String, u32)> = choices
            .iter()
            .map(|c| (c.program_id.clone(), c.revision))
            .collect();
        if !seen.insert(key) {
            continue;
        }
        let period = match (i, org.boundaries.is_empty()) {
            (_, true) => "at every time".to_owned(),
            (0, false) => format!("before {}", instants[1].to_rfc3339()),
            _ => match instants.get(i + 1) {
                Some(end) => format!("from {} until {}", at.to_rfc3339(), end.to_rfc3339()),
                None => format!("from {} on", at.to_rfc3339()),
            },
        };
        let programs: Vec<Program> = chosen.into_iter().cloned().collect();
        match ProgramSet::validate(programs.clone()) {
            Err(problems) => {
                for problem in &problems {
                    let who = programs
                        .get(problem.program_index)
                        .map_or_else(String::new, |p| {
                            format!("program '{}' revision {}: ", p.program_id, p.revision)
                        });
                    let text = format!("{who}{}", problem_text(problem));
                    if !conflicts.iter().any(|c| c.starts_with(&text)) {
                        conflicts.push(format!("{text} (when evaluated {period})"));
                    }
                }
            }
            // The import's amount bound (docs/pricing.md "Amounts") over the union of
            // the organization's files, not only over one file.
            Ok(validated) => {
                for problem in import::amount_bound_problems(&validated) {
                    let field = problem
                        .pointer
                        .strip_prefix("/programs/")
                        .and_then(|rest| rest.find('/').map(|i| &rest[i..]))
                        .unwrap_or("");
                    let text = format!("{field}: {}", problem.explanation);
                    if !conflicts.iter().any(|c| c.starts_with(&text)) {
                        conflicts.push(format!("{text} (when evaluated {period})"));
                    }
                }
            }
        }
    }
    if conflicts.is_empty() {
        Ok(())
    } else {
        Err(conflicts)
    }
}

/// The pricing engine's view of an inventory record (shared by the offers
/// tool and the pricing disclosure).
pub fn vehicle_for_pricing(record: &VehicleRecord) -> pricing::stacking::Vehicle {
    pricing::stacking::Vehicle {
        vehicle_id: record.vehicle_id.clone(),
        make: record.make.clone(),
        model: record.model.clone(),
        year: record.year,
        trim: record.trim.clone(),
        condition: record.condition.clone(),
        vin: record.vin.clone(),
        rooftop_id: record.rooftop_id.clone(),
        advertised_price: record.advertised_price,
        // The feed's price carries no validity of its own: the inventory
        // freshness bounds it (applied by the callers).
        price_valid_until: None,
    }
}

#[cfg(test)]
mod tests;
