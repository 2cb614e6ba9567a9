use super::*;
use crate::store::SourceRecord;
use serde_json::json;

fn record(id: &str, doc: serde_json::Value) -> ProgramRecord {
    ProgramRecord {
        program_id: id.to_owned(),
        revision: 1,
        doc,
        rule_hash: None,
        imported_at: Utc::now(),
        source: SourceRecord {
            source_name: "test".into(),
            authority: "dealer_asserted".into(),
            content_digest: "sha256:00".into(),
            observed_at: Utc::now(),
        },
    }
}

fn program(id: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut p = json!({
        "program_id": id, "revision": 1, "name": id, "kind": "cash",
        "direction": "discount",
        "amount": {"status": "known", "amount": {"amount_minor": 100, "currency": "USD"}},
        "stacking": {"group": "oem", "combinability": "stackable"}
    });
    for (k, v) in extra.as_object().unwrap() {
        p[k] = v.clone();
    }
    p
}

fn rec(id: &str, revision: u32, doc: serde_json::Value) -> ProgramRecord {
    let mut r = record(id, doc);
    r.revision = revision;
    r.doc["revision"] = json!(revision);
    r
}

fn at(t: &str) -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339(t).unwrap()
}

#[test]
fn stored_programs_that_no_longer_decode_or_validate_are_reported_unusable() {
    let records = [
        record("good", program("good", json!({}))),
        record("corrupt", json!({"program_id": "corrupt"})),
        record(
            "bad-rule",
            program(
                "bad-rule",
                json!({"stacking": {"group": "d", "combinability": "rule_defined", "rule": "stack.len( <"}}),
            ),
        ),
    ];
    let org = OrgPrograms::from_records(&records, Utc::now());
    let now = org.at(at("2026-11-21T12:00:00Z"));
    let ids: Vec<&str> = now
        .validated()
        .programs()
        .iter()
        .map(|p| p.program.program_id.as_str())
        .collect();
    assert_eq!(ids, ["good"]);
    let unusable: Vec<&str> = now
        .selection
        .unusable
        .iter()
        .map(|u| u.program_id.as_str())
        .collect();
    assert_eq!(unusable, ["bad-rule", "corrupt"]);
    assert!(now.selection.unusable[0].problems[0].contains("/stacking/rule"));
    assert_eq!(now.unusable_sentences().len(), 2);
    assert!(check_program_set(&records).is_err());
}

/// A public reader learns which program cannot be evaluated and what
/// its rule did, never the engine's message (script identifiers,
/// thrown text, line and position) nor a stored document's text; the
/// organization itself reads everything.
#[test]
fn public_readers_get_what_a_rule_did_never_the_engines_text_or_the_document() {
    let ruled = |id: &str, rule: &str| {
        program(
            id,
            json!({"stacking": {"group": id, "combinability": "rule_defined", "rule": rule}}),
        )
    };
    let records = [
        record("good", program("good", json!({}))),
        record(
            "corrupt",
            program("corrupt", json!({"kind": "SECRET-KIND"})),
        ),
        record("no-compile", ruled("no-compile", "SECRET_FN(1,")),
        record("thrower", ruled("thrower", "throw \"SECRET-THROWN\"")),
        record("plus-one", ruled("plus-one", "stack.len() + 1")),
    ];
    let org = OrgPrograms::from_records(&records, Utc::now());
    let as_of = at("2026-11-21T12:00:00Z");
    let said = |p: &ProgramsAt| {
        format!(
            "{}\n{}",
            serde_json::to_string(&p.unusable()).unwrap(),
            p.unusable_sentences().join("\n")
        )
    };
    let full = said(&org.at(as_of));
    // What the public must not read is there for the organization.
    for secret in [
        "SECRET-KIND",
        "SECRET-THROWN",
        "Script is incomplete",
        "line 1, position",
    ] {
        assert!(full.contains(secret), "{secret}: {full}");
    }
    let public = org.at(as_of).with_detail(Detail::Public);
    let text = said(&public);
    for secret in [
        "SECRET",
        "line 1",
        "position",
        "Runtime error",
        "Script is incomplete",
    ] {
        assert!(!text.contains(secret), "{secret}: {text}");
    }
    let problems = |id: &str| {
        public
            .unusable()
            .into_iter()
            .find(|u| u.program_id == id)
            .unwrap_or_else(|| panic!("{id} not unusable: {text}"))
            .problems
            .join("; ")
    };
    assert_eq!(problems("corrupt"), STORED_DOES_NOT_DECODE);
    assert_eq!(
        problems("no-compile"),
        "/stacking/rule: rule of program no-compile does not compile"
    );
    assert!(
            problems("thrower").starts_with(
                "/stacking/rule: the rule raised an error, for the stack [thrower]; a rule must return true or false"
            ),
            "{text}"
        );
    assert!(
        problems("plus-one")
            .contains("the rule returned an integer, not a boolean, for the stack [plus-one]"),
        "{text}"
    );
    assert_eq!(
        Detail::for_caller(&crate::auth::Principal::Anonymous, "org.a"),
        Detail::Public
    );
}

#[test]
fn revisions_coexist_by_window_and_the_higher_wins_where_they_overlap() {
    let nov = json!({"valid_from": "2026-11-01T00:00:00Z", "valid_until": "2026-12-01T00:00:00Z"});
    let dec = json!({"valid_from": "2026-11-25T00:00:00Z", "valid_until": "2027-01-01T00:00:00Z"});
    let records = [
        rec("x", 1, program("x", nov)),
        rec("x", 2, program("x", dec)),
    ];
    let org = OrgPrograms::from_records(&records, Utc::now());
    let nov21 = org.at(at("2026-11-21T00:00:00Z"));
    assert_eq!(nov21.selection.revisions[0].revision, 1);
    assert!(
        nov21.selection.revisions[0].not_used[0]
            .reason
            .contains("not valid at as_of")
    );
    assert_eq!(
        nov21.next_change,
        Some("2026-11-25T00:00:00Z".parse().unwrap())
    );
    let overlap = org.at(at("2026-11-28T00:00:00Z"));
    assert_eq!(overlap.selection.revisions[0].revision, 2);
    assert!(
        overlap.selection.revisions[0].not_used[0]
            .reason
            .contains("superseded by revision 2")
    );
    assert_eq!(overlap.validated().programs().len(), 1);
    let before = org.at(at("2026-10-01T00:00:00Z"));
    assert_eq!(before.selection.revisions[0].revision, 1);
    assert!(
        before.selection.revisions[0].reason.contains("starts next"),
        "{:?}",
        before.selection.revisions
    );
    let after = org.at(at("2027-02-01T00:00:00Z"));
    assert_eq!(after.selection.revisions[0].revision, 2);
    assert_eq!(after.next_change, None);
}

#[test]
fn whole_set_check_names_conflicts_that_only_appear_across_files_or_revisions() {
    // a excludes group g; b@2 moves the only member of g to group h
    // from December on: from then, a's exclusion names nothing.
    let a = rec(
        "a",
        1,
        program(
            "a",
            json!({"stacking": {"group": "oem", "combinability": "stackable", "not_combinable_with": ["group:g"]}}),
        ),
    );
    let b1 = rec(
        "b",
        1,
        program(
            "b",
            json!({"stacking": {"group": "g", "combinability": "stackable"}}),
        ),
    );
    let b2 = rec(
        "b",
        2,
        program(
            "b",
            json!({"valid_from": "2026-12-01T00:00:00Z", "stacking": {"group": "h", "combinability": "stackable"}}),
        ),
    );
    assert_eq!(check_program_set(&[a.clone(), b1.clone()]), Ok(()));
    let conflicts = check_program_set(&[a.clone(), b1.clone(), b2]).unwrap_err();
    assert_eq!(conflicts.len(), 1, "{conflicts:?}");
    assert!(
        conflicts[0].contains("program 'a' revision 1"),
        "{conflicts:?}"
    );
    assert!(conflicts[0].contains("group:g"), "{conflicts:?}");
    assert!(conflicts[0].contains("2026-12-01"), "{conflicts:?}");
    // group_resolution disagreement between two files.
    let c = rec(
        "c",
        1,
        program(
            "c",
            json!({"stacking": {"group": "g", "combinability": "stackable", "group_resolution": "best_one"}}),
        ),
    );
    let conflicts = check_program_set(&[a, b1, c]).unwrap_err();
    assert!(
        conflicts.iter().any(|c| c.contains("group_resolution")),
        "{conflicts:?}"
    );
    // Two surcharges each within the import bound, in two files, whose
    // sum is not.
    let half = import::MAX_PROGRAM_SUM_MINOR / 2 + 1;
    let fee = |id: &str| {
        rec(
            id,
            1,
            program(
                id,
                json!({"kind": "surcharge", "direction": "surcharge",
                "amount": {"status": "known", "amount": {"amount_minor": half, "currency": "USD"}},
                "stacking": {"group": "addons", "combinability": "stackable"}}),
            ),
        )
    };
    assert_eq!(check_program_set(&[fee("fee-a")]), Ok(()));
    let conflicts = check_program_set(&[fee("fee-a"), fee("fee-b")]).unwrap_err();
    assert_eq!(conflicts.len(), 1, "{conflicts:?}");
    assert!(conflicts[0].contains("fee-b"), "{conflicts:?}");
}
