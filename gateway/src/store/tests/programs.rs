//! Incentive programs: revisions, withdrawals and the set check.

use super::*;

// ---------------------------------------------------------------------------
// Incentive programs
// ---------------------------------------------------------------------------

pub(super) fn program(id: &str, revision: u32, amount: i64) -> ProgramRecord {
    ProgramRecord {
        program_id: id.to_owned(),
        revision,
        doc: json!({"program_id": id, "revision": revision, "amount": amount}),
        rule_hash: (amount == 7).then(|| "sha256:00".to_owned()),
        imported_at: DateTime::parse_from_rfc3339("2026-11-29T10:00:00.123456Z")
            .unwrap()
            .with_timezone(&Utc),
        source: source("sha256:programs"),
    }
}

pub(super) fn program_pairs(records: &[ProgramRecord]) -> Vec<(String, u32)> {
    records
        .iter()
        .map(|r| (r.program_id.clone(), r.revision))
        .collect()
}

pub(super) fn revision(id: &str, revision: u32) -> ProgramRevision {
    ProgramRevision {
        program_id: id.to_owned(),
        revision,
    }
}

// docs/pricing.md "Revisions": every revision coexists (an older one than the newest
// stored is stored too: X@1 for November must survive X@2 for December).
pub(super) async fn programs_revisions_coexist_and_import_counts(store: &dyn Store) {
    seed_dealers(store).await;
    let first = store
        .import_programs(
            "org-a",
            &[
                program("cash", 2, 100),
                program("bonus", 1, 7),
                program("cash", 1, 50),
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        first,
        ProgramsImportSummary {
            added: 3,
            unchanged: 0,
            still_withdrawn: vec![],
            withdrawn: vec![],
            added_revisions: vec![
                revision("bonus", 1),
                revision("cash", 1),
                revision("cash", 2)
            ],
            unchanged_revisions: vec![],
        }
    );
    // Identical again: unchanged; an older revision than the newest: added.
    let again = store
        .import_programs(
            "org-a",
            &[
                program("cash", 2, 100),
                program("bonus", 1, 7),
                program("bonus", 0, 1),
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        again,
        ProgramsImportSummary {
            added: 1,
            unchanged: 2,
            still_withdrawn: vec![],
            withdrawn: vec![],
            added_revisions: vec![revision("bonus", 0)],
            unchanged_revisions: vec![revision("bonus", 1), revision("cash", 2)],
        }
    );
    let current = store.current_programs("org-a").await.unwrap();
    assert_eq!(
        current,
        vec![
            program("bonus", 0, 1),
            program("bonus", 1, 7),
            program("cash", 1, 50),
            program("cash", 2, 100),
        ]
    );
    assert!(store.current_programs("org-b").await.unwrap().is_empty());
    store
        .import_programs("org-a", &[program("cash", 3, 120)])
        .await
        .unwrap();
    let current = store.current_programs("org-a").await.unwrap();
    assert_eq!(current.len(), 5);
    assert_eq!(current[4], program("cash", 3, 120));
}

// docs/pricing.md "Validation": the check sees the whole resulting set (stored and
// new), and its refusal writes nothing (no row, no audit event).
pub(super) async fn programs_change_refused_by_the_set_check_writes_nothing(store: &dyn Store) {
    seed_dealers(store).await;
    store
        .import_programs("org-a", &[program("cash", 1, 100)])
        .await
        .unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let check = |set: &[ProgramRecord]| {
        *seen.lock().unwrap() = program_pairs(set);
        Err(vec![
            "first conflict".to_owned(),
            "second conflict".to_owned(),
        ])
    };
    let audit = audit_event(1, "2026-11-30T10:00:00.000001Z");
    let err = store
        .change_programs(
            "org-a",
            ProgramsChange::Import {
                records: &[program("bonus", 1, 5)],
                replace: false,
            },
            &check,
            Some(&audit),
            false,
        )
        .await
        .unwrap_err();
    let message = query_message(err);
    assert!(message.contains("2 conflict(s)"), "{message}");
    assert!(message.contains("first conflict") && message.contains("second conflict"));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![("bonus".to_owned(), 1), ("cash".to_owned(), 1)]
    );
    assert_eq!(
        program_pairs(&store.current_programs("org-a").await.unwrap()),
        vec![("cash".to_owned(), 1)]
    );
    let since = at("2026-01-01T00:00:00Z");
    assert!(store.audit_since(since, 10).await.unwrap().is_empty());
}

// docs/pricing.md "Revisions": `--replace` withdraws every active revision the file
// omits, in one transaction with its audit event; a dry run writes nothing.
pub(super) async fn programs_replace_withdraws_what_the_file_omits_with_an_audit_event(
    store: &dyn Store,
) {
    seed_dealers(store).await;
    store
        .import_programs(
            "org-a",
            &[
                program("cash", 1, 100),
                program("cash", 2, 100),
                program("bonus", 1, 7),
            ],
        )
        .await
        .unwrap();
    let audit = audit_event(2, "2026-11-30T10:00:00.000001Z");
    let file = [program("cash", 2, 100), program("new", 1, 3)];
    let change = ProgramsChange::Import {
        records: &file,
        replace: true,
    };
    let dry = store
        .change_programs("org-a", change, &|_| Ok(()), Some(&audit), true)
        .await
        .unwrap();
    assert_eq!(store.current_programs("org-a").await.unwrap().len(), 3);
    let since = at("2026-01-01T00:00:00Z");
    assert!(store.audit_since(since, 10).await.unwrap().is_empty());
    let done = store
        .change_programs("org-a", change, &|_| Ok(()), Some(&audit), false)
        .await
        .unwrap();
    assert_eq!(dry, done);
    assert_eq!(
        done,
        ProgramsImportSummary {
            added: 1,
            unchanged: 1,
            still_withdrawn: vec![],
            withdrawn: vec![revision("bonus", 1), revision("cash", 1)],
            added_revisions: vec![revision("new", 1)],
            unchanged_revisions: vec![revision("cash", 2)],
        }
    );
    assert_eq!(
        program_pairs(&store.current_programs("org-a").await.unwrap()),
        vec![("cash".to_owned(), 2), ("new".to_owned(), 1)]
    );
    let events = store.audit_since(since, 10).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event_id, audit.event_id);
    assert_eq!(events[0].resource_ids, ["new:1", "bonus:1", "cash:1"]);
}

// docs/pricing.md "Revisions": withdraw one revision or every active one; withdrawing
// nothing is an error; re-importing a withdrawn revision keeps it withdrawn.
pub(super) async fn programs_withdraw_one_revision_or_all_and_withdrawal_is_final(
    store: &dyn Store,
) {
    seed_dealers(store).await;
    store
        .import_programs(
            "org-a",
            &[
                program("cash", 1, 100),
                program("cash", 2, 100),
                program("bonus", 1, 7),
            ],
        )
        .await
        .unwrap();
    let withdraw = |program_id, revision| ProgramsChange::Withdraw {
        program_id,
        revision,
    };
    let one = store
        .change_programs("org-a", withdraw("cash", Some(1)), &|_| Ok(()), None, false)
        .await
        .unwrap();
    assert_eq!(one.withdrawn, vec![revision("cash", 1)]);
    assert_eq!(
        program_pairs(&store.current_programs("org-a").await.unwrap()),
        vec![("bonus".to_owned(), 1), ("cash".to_owned(), 2)]
    );
    let err = store
        .change_programs("org-a", withdraw("cash", Some(1)), &|_| Ok(()), None, false)
        .await
        .unwrap_err();
    assert!(query_message(err).contains("already withdrawn"));
    let err = store
        .change_programs("org-a", withdraw("nope", None), &|_| Ok(()), None, false)
        .await
        .unwrap_err();
    assert!(query_message(err).contains("'nope' is not stored"));
    let all = store
        .change_programs("org-a", withdraw("cash", None), &|_| Ok(()), None, false)
        .await
        .unwrap();
    assert_eq!(all.withdrawn, vec![revision("cash", 2)]);
    let again = store
        .import_programs("org-a", &[program("cash", 2, 100), program("cash", 1, 100)])
        .await
        .unwrap();
    assert_eq!(again.added, 0);
    assert_eq!(
        again.still_withdrawn,
        vec![revision("cash", 1), revision("cash", 2)]
    );
    assert_eq!(
        program_pairs(&store.current_programs("org-a").await.unwrap()),
        vec![("bonus".to_owned(), 1)]
    );
    // A different document under a withdrawn pair is still a conflict.
    let err = store
        .import_programs("org-a", &[program("cash", 2, 999)])
        .await
        .unwrap_err();
    assert!(query_message(err).contains("'cash' revision 2"));
    // Every stored revision, the withdrawn ones with when (`programs list`).
    let all = store.program_revisions("org-a").await.unwrap();
    let listed: Vec<(String, u32, bool)> = all
        .iter()
        .map(|r| {
            (
                r.record.program_id.clone(),
                r.record.revision,
                r.withdrawn_at.is_some(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        vec![
            ("bonus".to_owned(), 1, false),
            ("cash".to_owned(), 1, true),
            ("cash".to_owned(), 2, true),
        ]
    );
    assert!(all[1].withdrawn_at <= all[2].withdrawn_at);
    assert_eq!(all[0].record, program("bonus", 1, 7));
    assert!(store.program_revisions("org-b").await.unwrap().is_empty());
}

pub(super) async fn programs_import_conflict_or_unknown_organization_writes_nothing(
    store: &dyn Store,
) {
    seed_dealers(store).await;
    store
        .import_programs("org-a", &[program("cash", 1, 100)])
        .await
        .unwrap();
    let err = store
        .import_programs("org-a", &[program("new", 1, 5), program("cash", 1, 999)])
        .await
        .unwrap_err();
    let message = query_message(err);
    assert!(message.contains("'cash' revision 1"), "{message}");
    assert_eq!(store.current_programs("org-a").await.unwrap().len(), 1);
    let err = store
        .import_programs("org-missing", &[program("cash", 1, 100)])
        .await
        .unwrap_err();
    assert!(query_message(err).contains("org-missing"));
}
