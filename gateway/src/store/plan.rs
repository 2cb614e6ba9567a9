//! The backend-neutral half of the store's writers: what an import of
//! organizations or a change of programs must do, computed from what the
//! transaction read, and the readable refusals. Both backends (`sql/`)
//! call these inside their transactions.

use super::*;

/// The readable error for a rooftop id already kept by another organization.
pub(super) fn rooftop_taken(rooftop_id: &str, importing: &str, owner: &str) -> StoreError {
    StoreError::Query(format!(
        "rooftop_id '{rooftop_id}' already belongs to another organization: \
         '{owner}' keeps it, so '{importing}' cannot list it \
         (unique index {ROOFTOP_ID_INDEX}); nothing was imported"
    ))
}

/// Compact JSON text of a document, as stored (key order preserved).
pub(super) fn json_text<T: Serialize + ?Sized>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value)
        .map_err(|e| StoreError::Query(format!("cannot encode a JSON document: {e}")))
}

/// Reject batches that name an organization or a rooftop id twice.
pub(super) fn validate_import(orgs: &[OrganizationRecord]) -> Result<(), StoreError> {
    use std::collections::{HashMap, HashSet};
    let mut organizations = HashSet::new();
    let mut rooftops: HashMap<&str, &str> = HashMap::new();
    for org in orgs {
        let id = org.organization_id.as_str();
        if !organizations.insert(id) {
            return Err(StoreError::Query(format!(
                "organization_id '{id}' appears twice in one import; nothing was imported"
            )));
        }
        for rooftop in &org.rooftops {
            if let Some(first) = rooftops.insert(&rooftop.rooftop_id, id) {
                return Err(StoreError::Query(format!(
                    "rooftop_id '{}' already belongs to another organization: \
                     both '{first}' and '{id}' list it \
                     (unique index {ROOFTOP_ID_INDEX}); nothing was imported",
                    rooftop.rooftop_id
                )));
            }
        }
    }
    Ok(())
}

pub(super) fn duplicate_in_snapshot(field: &str, value: &str, rooftop_id: &str) -> StoreError {
    StoreError::Query(format!(
        "{field} '{value}' appears more than once in one inventory import of rooftop \
         '{rooftop_id}'; nothing was imported"
    ))
}

/// The readable error for a snapshot of a rooftop the organization does not
/// keep; `owner` is the organization that does keep it, if any.
pub(super) fn rooftop_not_of_organization(
    rooftop_id: &str,
    organization_id: &str,
    owner: Option<&str>,
) -> StoreError {
    let kept = match owner {
        Some(owner) => format!(" (it is a rooftop of organization '{owner}')"),
        None => String::new(),
    };
    StoreError::Query(format!(
        "rooftop '{rooftop_id}' is not a rooftop of organization '{organization_id}'{kept}; \
         import the dealers file first; nothing was imported"
    ))
}

/// Check a new API token against what its organization keeps: `rooftops`
/// is `None` when the organization is not stored, else its rooftop ids.
pub(super) fn check_api_token(
    token: &ApiTokenRecord,
    rooftops: Option<&[String]>,
) -> Result<(), StoreError> {
    let org = &token.organization_id;
    let Some(kept) = rooftops else {
        return Err(StoreError::Query(format!(
            "organization '{org}' is not in the store; no token was created"
        )));
    };
    if let RooftopScope::Rooftops(ids) = &token.rooftops
        && let Some(foreign) = ids.iter().find(|id| !kept.contains(id))
    {
        return Err(StoreError::Query(format!(
            "rooftop '{foreign}' is not a rooftop of organization '{org}'; no token was created"
        )));
    }
    Ok(())
}

/// A new snapshot's id (UUID v7: ordered by creation time) and creation time,
/// truncated to the microseconds both backends store.
pub(super) fn new_snapshot_identity() -> (String, DateTime<Utc>) {
    (
        uuid::Uuid::now_v7().to_string(),
        Utc::now().trunc_subsecs(6),
    )
}

/// How an imported item compares with what is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Change {
    Added,
    Updated,
    Unchanged,
}

/// What writing one imported organization must do; computed from the stored
/// version inside the import transaction, then executed by the backend.
pub(super) struct OrganizationPlan<'a> {
    pub(super) org: &'a OrganizationRecord,
    pub(super) change: Change,
    /// One per imported rooftop, in file order.
    pub(super) rooftops: Vec<RooftopPlan<'a>>,
    /// Stored rooftop ids the import no longer lists.
    pub(super) removed: Vec<String>,
}

pub(super) struct RooftopPlan<'a> {
    pub(super) rooftop: &'a RooftopRecord,
    /// 0-based file order.
    pub(super) position: i32,
    pub(super) change: Change,
    /// The stored row differs in any way (position, or document text such as
    /// key order), so it must be rewritten even when `change` is `Unchanged`.
    pub(super) rewrite: bool,
}

pub(super) fn plan_organization<'a>(
    stored: Option<&OrganizationRecord>,
    org: &'a OrganizationRecord,
) -> Result<OrganizationPlan<'a>, StoreError> {
    let mut rooftops = Vec::with_capacity(org.rooftops.len());
    let mut order_changed = false;
    for (index, rooftop) in org.rooftops.iter().enumerate() {
        let position = i32::try_from(index)
            .map_err(|_| StoreError::Query("too many rooftops in one organization".into()))?;
        let before = stored.and_then(|s| {
            s.rooftops
                .iter()
                .enumerate()
                .find(|(_, r)| r.rooftop_id == rooftop.rooftop_id)
        });
        let (change, rewrite) = match before {
            None => (Change::Added, true),
            Some((stored_index, old)) => {
                let same = old.dap == rooftop.dap && old.settings == rooftop.settings;
                let same_text = json_text(&old.dap)? == json_text(&rooftop.dap)?;
                let moved = stored_index != index;
                order_changed |= moved;
                let change = if same {
                    Change::Unchanged
                } else {
                    Change::Updated
                };
                (change, !same || !same_text || moved)
            }
        };
        rooftops.push(RooftopPlan {
            rooftop,
            position,
            change,
            rewrite,
        });
    }
    let removed: Vec<String> = stored
        .map(|s| {
            s.rooftops
                .iter()
                .filter(|old| !org.rooftops.iter().any(|r| r.rooftop_id == old.rooftop_id))
                .map(|old| old.rooftop_id.clone())
                .collect()
        })
        .unwrap_or_default();
    let change = match stored {
        None => Change::Added,
        Some(s) => {
            let fields_changed = s.name != org.name
                || s.legal_name != org.legal_name
                || s.extensions != org.extensions;
            let rooftops_changed = order_changed
                || !removed.is_empty()
                || rooftops.iter().any(|r| r.change != Change::Unchanged);
            if fields_changed || rooftops_changed {
                Change::Updated
            } else {
                Change::Unchanged
            }
        }
    };
    Ok(OrganizationPlan {
        org,
        change,
        rooftops,
        removed,
    })
}

pub(super) fn summarize(plans: &[OrganizationPlan<'_>]) -> DealersImportSummary {
    let mut summary = DealersImportSummary::default();
    for plan in plans {
        match plan.change {
            Change::Added => summary.organizations_added += 1,
            Change::Updated => summary.organizations_updated += 1,
            Change::Unchanged => {}
        }
        for rooftop in &plan.rooftops {
            match rooftop.change {
                Change::Added => summary.rooftops_added += 1,
                Change::Updated => summary.rooftops_updated += 1,
                Change::Unchanged => {}
            }
        }
        summary.rooftops_removed += u32::try_from(plan.removed.len()).unwrap_or(u32::MAX);
    }
    summary
}

/// The records of a programs import in the order the store applies them:
/// ascending (program_id, revision); a pair given twice must carry the same
/// document.
pub(super) fn sorted_programs(
    programs: &[ProgramRecord],
) -> Result<Vec<&ProgramRecord>, StoreError> {
    let mut sorted: Vec<&ProgramRecord> = programs.iter().collect();
    sorted.sort_by(|a, b| (&a.program_id, a.revision).cmp(&(&b.program_id, b.revision)));
    for pair in sorted.windows(2) {
        if pair[0].program_id == pair[1].program_id
            && pair[0].revision == pair[1].revision
            && pair[0].doc != pair[1].doc
        {
            return Err(program_conflict(&pair[0].program_id, pair[0].revision));
        }
    }
    sorted.dedup_by(|a, b| a.program_id == b.program_id && a.revision == b.revision);
    Ok(sorted)
}

/// A different document under a stored (program_id, revision).
pub(super) fn program_conflict(program_id: &str, revision: u32) -> StoreError {
    StoreError::Query(format!(
        "program '{program_id}' revision {revision} is already stored with a different \
         document; a revision is immutable: give the change a new revision; nothing was imported"
    ))
}

/// The readable error for a programs import of an unknown organization.
pub(super) fn programs_organization_missing(organization_id: &str) -> StoreError {
    StoreError::Query(format!(
        "organization '{organization_id}' is not in the store: import its dealers file first; \
         nothing was imported"
    ))
}

/// One stored revision with its withdrawal state, as a backend reads it
/// inside the change transaction.
pub(super) struct StoredProgram {
    pub(super) record: ProgramRecord,
    pub(super) withdrawn: bool,
}

/// What [`Store::change_programs`] writes, computed from the stored rows.
pub(super) struct ProgramsPlan<'a> {
    pub(super) inserts: Vec<&'a ProgramRecord>,
    pub(super) withdraw: Vec<ProgramRevision>,
    pub(super) summary: ProgramsImportSummary,
}

/// The plan of a programs change against the stored rows, after `check`
/// accepted the resulting active set (backend-neutral; both backends call
/// it inside their transaction).
pub(super) fn plan_programs_change<'a>(
    organization_id: &str,
    stored: &[StoredProgram],
    change: ProgramsChange<'a>,
    check: ProgramSetCheck<'_>,
) -> Result<ProgramsPlan<'a>, StoreError> {
    let find = |id: &str, revision: u32| {
        stored
            .iter()
            .find(|s| s.record.program_id == id && s.record.revision == revision)
    };
    let mut plan = ProgramsPlan {
        inserts: Vec::new(),
        withdraw: Vec::new(),
        summary: ProgramsImportSummary::default(),
    };
    match change {
        ProgramsChange::Import { records, replace } => {
            let sorted = sorted_programs(records)?;
            for record in &sorted {
                match find(&record.program_id, record.revision) {
                    Some(s) if s.record.doc != record.doc => {
                        return Err(program_conflict(&record.program_id, record.revision));
                    }
                    Some(s) if s.withdrawn => plan.summary.still_withdrawn.push(ProgramRevision {
                        program_id: record.program_id.clone(),
                        revision: record.revision,
                    }),
                    Some(_) => {
                        plan.summary.unchanged += 1;
                        plan.summary.unchanged_revisions.push(ProgramRevision {
                            program_id: record.program_id.clone(),
                            revision: record.revision,
                        });
                    }
                    None => {
                        plan.inserts.push(record);
                        plan.summary.added += 1;
                        plan.summary.added_revisions.push(ProgramRevision {
                            program_id: record.program_id.clone(),
                            revision: record.revision,
                        });
                    }
                }
            }
            if replace {
                for s in stored.iter().filter(|s| !s.withdrawn) {
                    let given = sorted.iter().any(|r| {
                        r.program_id == s.record.program_id && r.revision == s.record.revision
                    });
                    if !given {
                        plan.withdraw.push(ProgramRevision {
                            program_id: s.record.program_id.clone(),
                            revision: s.record.revision,
                        });
                    }
                }
            }
        }
        ProgramsChange::Withdraw {
            program_id,
            revision,
        } => {
            let matching: Vec<&StoredProgram> = stored
                .iter()
                .filter(|s| {
                    s.record.program_id == program_id
                        && revision.is_none_or(|r| r == s.record.revision)
                })
                .collect();
            let what = match revision {
                Some(r) => format!("program '{program_id}' revision {r}"),
                None => format!("program '{program_id}'"),
            };
            if matching.is_empty() {
                return Err(StoreError::Query(format!(
                    "{what} is not stored for organization '{organization_id}'; nothing was withdrawn"
                )));
            }
            if matching.iter().all(|s| s.withdrawn) {
                return Err(StoreError::Query(format!(
                    "{what} is already withdrawn; nothing was withdrawn"
                )));
            }
            plan.withdraw = matching
                .iter()
                .filter(|s| !s.withdrawn)
                .map(|s| ProgramRevision {
                    program_id: s.record.program_id.clone(),
                    revision: s.record.revision,
                })
                .collect();
        }
    }
    plan.withdraw.sort();
    plan.summary.withdrawn = plan.withdraw.clone();
    let mut resulting: Vec<ProgramRecord> = stored
        .iter()
        .filter(|s| {
            !s.withdrawn
                && !plan
                    .withdraw
                    .iter()
                    .any(|w| w.program_id == s.record.program_id && w.revision == s.record.revision)
        })
        .map(|s| s.record.clone())
        .chain(plan.inserts.iter().map(|r| (*r).clone()))
        .collect();
    resulting.sort_by(|a, b| (&a.program_id, a.revision).cmp(&(&b.program_id, b.revision)));
    if let Err(conflicts) = check(&resulting) {
        let mut message = format!(
            "{} conflict(s) in the resulting program set of organization '{organization_id}'; \
             nothing was changed:",
            conflicts.len()
        );
        for c in &conflicts {
            message.push_str("\n  - ");
            message.push_str(c);
        }
        return Err(StoreError::Query(message));
    }
    Ok(plan)
}

/// The audit event of a programs change: `audit` with the added and
/// withdrawn pairs as its resource ids.
pub(super) fn programs_audit_event(audit: &AuditEvent, plan: &ProgramsPlan<'_>) -> AuditEvent {
    let resource_ids = plan
        .inserts
        .iter()
        .map(|r| {
            ProgramRevision {
                program_id: r.program_id.clone(),
                revision: r.revision,
            }
            .audit_id()
        })
        .chain(plan.withdraw.iter().map(ProgramRevision::audit_id))
        .collect();
    audit.clone().with_resource_ids(resource_ids)
}
