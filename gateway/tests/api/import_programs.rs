//! `dealer-gateway import programs FILE --organization ORG [--replace]
//! [--dry-run]` and `dealer-gateway programs withdraw`, run as the real
//! binary (docs/pricing.md section 1): all or nothing, every problem
//! at once (a rhai compile error names the program), exit 2 on bad input,
//! every revision kept (an older one never overwrites a newer one), each
//! import validated against the organization's whole resulting program set,
//! replacement and withdrawal audited, refused changes audited too (and
//! writing nothing else).

use std::path::Path;
use std::process::Output;

use crate::common::{run_cli, temp_dir, test_database_url, text};

const DEMO: &str = include_str!("../../../demo/dealers.yaml");
const ORG: &str = "org.lakeshore-auto-group";

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/programs")
        .join(name)
        .display()
        .to_string()
}

/// A store holding the demo dealers (no programs).
async fn store_with_dealers() -> String {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let file = dir.join("dealers.yaml");
    std::fs::write(&file, DEMO).unwrap();
    let out = run_cli(&db, &["import", "dealers", &file.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out));
    db
}

async fn current(db: &str) -> Vec<(String, u32)> {
    gateway::store::open(db)
        .await
        .unwrap()
        .current_programs(ORG)
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.program_id, p.revision))
        .collect()
}

fn import(db: &str, file: &str, extra: &[&str]) -> Output {
    let mut args = vec!["import", "programs", file, "--organization", ORG];
    args.extend_from_slice(extra);
    run_cli(db, &args)
}

#[tokio::test]
async fn valid_file_imports_and_identical_reimport_is_unchanged() {
    let db = store_with_dealers().await;
    let dry = import(&db, &fixture("valid.yaml"), &["--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(
        text(&dry).contains("dry run, nothing written"),
        "{}",
        text(&dry)
    );
    assert!(text(&dry).contains("added 2"), "{}", text(&dry));
    assert!(current(&db).await.is_empty());

    let first = import(&db, &fixture("valid.yaml"), &[]);
    assert!(first.status.success(), "{}", text(&first));
    assert!(
        text(&first).contains("added 2, unchanged 0"),
        "{}",
        text(&first)
    );
    assert_eq!(
        current(&db).await,
        [("t-cash".to_owned(), 2), ("t-dealer".to_owned(), 1)]
    );
    let store = gateway::store::open(&db).await.unwrap();
    let stored = store.current_programs(ORG).await.unwrap();
    assert!(
        stored[1]
            .rule_hash
            .as_deref()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(stored[0].rule_hash, None);

    let again = import(&db, &fixture("valid.yaml"), &[]);
    assert!(again.status.success());
    assert!(
        text(&again).contains("added 0, unchanged 2"),
        "{}",
        text(&again)
    );
}

// An older revision is stored beside the newer one (it may
// cover another validity window); the newer one's document is untouched.
#[tokio::test]
async fn older_revision_is_stored_beside_the_newer_one_never_overwriting_it() {
    let db = store_with_dealers().await;
    assert!(import(&db, &fixture("valid.yaml"), &[]).status.success());
    let older = import(&db, &fixture("older.json"), &[]);
    assert!(older.status.success(), "{}", text(&older));
    assert!(
        text(&older).contains("added 2, unchanged 0, withdrawn 0"),
        "{}",
        text(&older)
    );
    assert_eq!(
        current(&db).await,
        [
            ("t-bonus".to_owned(), 1),
            ("t-cash".to_owned(), 1),
            ("t-cash".to_owned(), 2),
            ("t-dealer".to_owned(), 1)
        ]
    );
    let store = gateway::store::open(&db).await.unwrap();
    let stored = store.current_programs(ORG).await.unwrap();
    assert_eq!(stored[2].doc["name"], "Customer Cash");
    assert_eq!(stored[1].doc["name"], "Customer Cash (older)");
}

/// Write `yaml` as a programs file in a fresh directory.
fn programs_file(name: &str, yaml: &str) -> String {
    let path = temp_dir().join(name);
    std::fs::write(&path, yaml).unwrap();
    path.display().to_string()
}

fn withdraw(db: &str, extra: &[&str]) -> Output {
    let mut args = vec!["programs", "withdraw", "--organization", ORG];
    args.extend_from_slice(extra);
    run_cli(db, &args)
}

/// The audit events exported since 2000 (JSON lines).
fn audit_events(db: &str) -> Vec<serde_json::Value> {
    let out = run_cli(db, &["audit", "export", "--since", "2000-01-01T00:00:00Z"]);
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const GROUP_BEST_ONE: &str = r#"
programs:
  - program_id: w-loyalty
    revision: 1
    name: Loyalty
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 50000, currency: USD}}
    stacking: {group: w-affinity, combinability: stackable, group_resolution: best_one}
  - program_id: w-excluder
    revision: 1
    name: Excludes the affinity group
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 10000, currency: USD}}
    stacking: {group: w-other, combinability: stackable, not_combinable_with: ["group:w-affinity", "w-loyalty"]}
"#;

// Each file validates alone, but not with what is stored:
// refused whole (exit 2), every conflict named, nothing written.
#[tokio::test]
async fn an_import_that_conflicts_with_stored_programs_is_refused_whole() {
    let db = store_with_dealers().await;
    let first = import(&db, &programs_file("a.yaml", GROUP_BEST_ONE), &[]);
    assert!(first.status.success(), "{}", text(&first));

    // A second file putting a program in w-affinity with `all`.
    let disagree = programs_file(
        "b.yaml",
        r#"
programs:
  - program_id: w-conquest
    revision: 1
    name: Conquest
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 70000, currency: USD}}
    stacking: {group: w-affinity, combinability: stackable, group_resolution: all}
  - program_id: w-new
    revision: 1
    name: New
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 100, currency: USD}}
    stacking: {group: w-new, combinability: stackable}
"#,
    );
    let out = import(&db, &disagree, &[]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(2), "{report}");
    assert!(report.contains("nothing was changed"), "{report}");
    assert!(report.contains("group_resolution"), "{report}");
    assert!(report.contains("w-affinity"), "{report}");
    // The dry run refuses the same way.
    let dry = import(&db, &disagree, &["--dry-run"]);
    assert_eq!(dry.status.code(), Some(2), "{}", text(&dry));

    // Moving the only member of w-affinity out of it from December on: the
    // exclusion of w-excluder would name nothing then.
    let moved = programs_file(
        "c.yaml",
        r#"
programs:
  - program_id: w-loyalty
    revision: 2
    name: Loyalty
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 50000, currency: USD}}
    valid_from: "2026-12-01T00:00:00Z"
    stacking: {group: w-elsewhere, combinability: stackable}
"#,
    );
    let out = import(&db, &moved, &[]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(2), "{report}");
    assert!(
        report
            .lines()
            .any(|l| l.contains("program 'w-excluder' revision 1")
                && l.contains("group:w-affinity")
                && l.contains("2026-12-01")),
        "{report}"
    );
    assert_eq!(
        current(&db).await,
        [("w-excluder".to_owned(), 1), ("w-loyalty".to_owned(), 1)]
    );
    // The accepted import wrote one `ok` event; each refusal one `refused`
    // event naming what its file asked for; the refused dry run none.
    let events = audit_events(&db);
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0]["tool"], "cli.import_programs");
    assert_eq!(events[0]["organization_id"], ORG);
    assert_eq!(events[0]["outcome"], "ok");
    assert_eq!(
        events[0]["resource_ids"],
        serde_json::json!(["w-excluder:1", "w-loyalty:1"])
    );
    for (event, asked) in events[1..].iter().zip([
        serde_json::json!(["w-conquest:1", "w-new:1"]),
        serde_json::json!(["w-loyalty:2"]),
    ]) {
        assert_eq!(event["tool"], "cli.import_programs", "{event}");
        assert_eq!(event["organization_id"], ORG, "{event}");
        assert_eq!(event["outcome"], "refused", "{event}");
        assert_eq!(event["resource_ids"], asked, "{event}");
    }
}

// Withdrawal of one revision or of a program, refused when
// another program still names it; audited; final.
#[tokio::test]
async fn withdraw_is_audited_refused_while_named_and_final() {
    let db = store_with_dealers().await;
    assert!(
        import(&db, &programs_file("a.yaml", GROUP_BEST_ONE), &[])
            .status
            .success()
    );
    assert!(import(&db, &fixture("valid.yaml"), &[]).status.success());
    assert!(import(&db, &fixture("older.json"), &[]).status.success());

    // w-excluder names w-loyalty: withdrawing it is refused.
    let out = withdraw(&db, &["w-loyalty"]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(2), "{report}");
    assert!(
        report.contains("program 'w-excluder' revision 1"),
        "{report}"
    );
    assert!(report.contains("w-loyalty"), "{report}");

    // One revision.
    let dry = withdraw(&db, &["t-cash", "--revision", "2", "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(
        text(&dry).contains("would withdraw t-cash revision 2"),
        "{}",
        text(&dry)
    );
    assert_eq!(current(&db).await.len(), 6);
    let out = withdraw(&db, &["t-cash", "--revision", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("withdrew 1 revision(s)"),
        "{}",
        text(&out)
    );
    assert!(!current(&db).await.contains(&("t-cash".to_owned(), 2)));
    assert!(current(&db).await.contains(&("t-cash".to_owned(), 1)));
    // Again: nothing active to withdraw.
    let out = withdraw(&db, &["t-cash", "--revision", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("already withdrawn"), "{}", text(&out));
    let out = withdraw(&db, &["no-such-program"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));

    // Re-importing the withdrawn revision does not reinstate it.
    let again = import(&db, &fixture("valid.yaml"), &[]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(
        text(&again).contains("t-cash revision 2 was withdrawn earlier and stays withdrawn"),
        "{}",
        text(&again)
    );
    assert!(!current(&db).await.contains(&("t-cash".to_owned(), 2)));

    let events = audit_events(&db);
    let withdrawals: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["tool"] == "cli.programs_withdraw" && e["outcome"] == "ok")
        .collect();
    assert_eq!(withdrawals.len(), 1, "{events:?}");
    // The three refused withdrawals are audited as asked (the dry run is
    // not: it writes nothing).
    let refused: Vec<(&serde_json::Value, &serde_json::Value)> = events
        .iter()
        .filter(|e| e["tool"] == "cli.programs_withdraw" && e["outcome"] != "ok")
        .map(|e| (&e["outcome"], &e["resource_ids"]))
        .collect();
    let r = serde_json::json!("refused");
    assert_eq!(
        refused,
        [
            (&r, &serde_json::json!(["w-loyalty"])),
            (&r, &serde_json::json!(["t-cash:2"])),
            (&r, &serde_json::json!(["no-such-program"]))
        ],
        "{events:?}"
    );
    assert_eq!(
        withdrawals[0]["resource_ids"],
        serde_json::json!(["t-cash:2"])
    );
    assert!(
        withdrawals[0]["subject"]
            .as_str()
            .unwrap()
            .starts_with("cli"),
        "{events:?}"
    );
}

// `--replace` makes the file the complete program set.
#[tokio::test]
async fn replace_withdraws_every_revision_the_file_omits() {
    let db = store_with_dealers().await;
    assert!(import(&db, &fixture("valid.yaml"), &[]).status.success());
    assert!(import(&db, &fixture("older.json"), &[]).status.success());
    let dry = import(&db, &fixture("older.json"), &["--replace", "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(text(&dry).contains("withdrawn 2"), "{}", text(&dry));
    assert_eq!(current(&db).await.len(), 4);
    let out = import(&db, &fixture("older.json"), &["--replace"]);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("added 0, unchanged 2, withdrawn 2"),
        "{report}"
    );
    assert!(report.contains("withdrawn t-cash revision 2"), "{report}");
    assert!(report.contains("withdrawn t-dealer revision 1"), "{report}");
    assert_eq!(
        current(&db).await,
        [("t-bonus".to_owned(), 1), ("t-cash".to_owned(), 1)]
    );
    let events = audit_events(&db);
    let replace: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["tool"] == "cli.import_programs_replace")
        .collect();
    assert_eq!(replace.len(), 1, "{events:?}");
    assert_eq!(
        replace[0]["resource_ids"],
        serde_json::json!(["t-cash:2", "t-dealer:1"])
    );
}

#[tokio::test]
async fn bad_file_reports_every_problem_exits_2_and_writes_nothing() {
    let db = store_with_dealers().await;
    let out = import(&db, &fixture("bad.yaml"), &[]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(2), "{report}");
    assert!(report.contains("nothing was imported"), "{report}");
    // The rhai syntax error names its program and pointer.
    assert!(
        report
            .lines()
            .any(|l| l.contains("/programs/0/stacking/rule") && l.contains("program 'b-rule'")),
        "{report}"
    );
    assert!(report.contains("program 'b-stackable'"), "{report}");
    assert!(report.contains("program 'b-dup'"), "{report}");
    // One line per problem, each with its line and column in the file.
    let file = fixture("bad.yaml");
    assert_eq!(
        report
            .lines()
            .filter(|l| l.starts_with(&format!("{file}:")) && l.contains(": /programs/"))
            .count(),
        3,
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "{file}:14:13: /programs/0/stacking/rule: program: program 'b-rule': "
        )),
        "{report}"
    );
    assert!(current(&db).await.is_empty());

    // Schema problems: file, pointer and rule, never the value.
    let out = import(&db, &fixture("bad-schema.json"), &[]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(2), "{report}");
    assert!(
        report.contains("bad-schema.json:2:37: /programs/0/revision: minimum: must be at least 0"),
        "{report}"
    );
    assert!(
        report.contains("bad-schema.json:5:68: /programs/1/kind: enum: must be one of: cash, bonus_cash, finance_rate, lease_cash, dealer_discount, fee_waiver, surcharge, other"),
        "{report}"
    );
    assert!(
        report.contains("bad-schema.json:4:64: /programs/0/secret_note: additionalProperties: unexpected key 'secret_note': this object does not allow it; allowed keys here: program_id, revision, name, kind, direction, amount, cap, applies_to,"),
        "{report}"
    );
    assert!(
        !report.contains("do-not-echo-me") && !report.contains("teleport"),
        "{report}"
    );
    assert!(current(&db).await.is_empty());

    // An unknown organization is bad input too.
    let out = run_cli(
        &db,
        &[
            "import",
            "programs",
            &fixture("valid.yaml"),
            "--organization",
            "org.absent",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

// A refused import, replacement or withdrawal leaves an audit
// event (outcome `invalid` for a file that fails on its own, `refused` for
// a change the store refuses), holding only identifiers that pass the
// identifier schema, and writes nothing else. A refused dry run writes
// nothing at all. Runs on SQLite and PostgreSQL (test_database_url).
#[tokio::test]
async fn refused_program_changes_are_audited_and_write_nothing_else() {
    let db = store_with_dealers().await;
    assert!(import(&db, &fixture("valid.yaml"), &[]).status.success());
    assert!(
        import(&db, &programs_file("a.yaml", GROUP_BEST_ONE), &[])
            .status
            .success()
    );
    let before = current(&db).await;
    assert_eq!(before.len(), 4, "{before:?}");
    let accepted = audit_events(&db).len();
    assert_eq!(accepted, 2);

    // 1. A file with problems, and a file that cannot be read.
    let out = import(&db, &fixture("bad.yaml"), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let missing = temp_dir().join("no-such-file.yaml").display().to_string();
    let out = import(&db, &missing, &[]);
    assert!(!out.status.success(), "{}", text(&out));
    // 2. Unknown organizations: one that is an identifier, one that is not.
    let hostile_org = format!("org {}", "x".repeat(300));
    for org in ["org.absent", hostile_org.as_str()] {
        let out = run_cli(
            &db,
            &[
                "import",
                "programs",
                &fixture("valid.yaml"),
                "--organization",
                org,
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    }
    // 3. Two files within the amount bound each, beyond it together.
    let huge = |id: &str| {
        format!(
            "programs:
  - program_id: {id}
    revision: 1
    name: Large fee
    kind: surcharge
    direction: surcharge
    amount: {{status: known, amount: {{amount_minor: 3000000000000000000, currency: USD}}}}
    stacking: {{group: addons, combinability: stackable}}
"
        )
    };
    let out = import(&db, &programs_file("huge-a.yaml", &huge("ov-a")), &[]);
    assert!(out.status.success(), "{}", text(&out));
    let after_huge = audit_events(&db).len();
    let out = import(&db, &programs_file("huge-b.yaml", &huge("ov-b")), &[]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(2), "{report}");
    assert!(report.contains("ov-b"), "{report}");
    // 4. A replacement that gives a stored (program_id, revision) another
    // document: valid on its own, refused by the store.
    let renamed = r#"
programs:
  - program_id: t-cash
    revision: 2
    name: Customer Cash, renamed
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 100000, currency: USD}}
    stacking: {group: oem, combinability: stackable}
"#;
    let out = import(&db, &programs_file("renamed.yaml", renamed), &["--replace"]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(2), "{report}");
    assert!(report.contains("t-cash"), "{report}");
    // 5. Withdrawals: an unknown revision, an id that is no identifier.
    let out = withdraw(&db, &["t-cash", "--revision", "9"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let hostile_id = "p".repeat(400);
    let out = withdraw(&db, &[&hostile_id]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    // 6. Refused dry runs write nothing, not even an event.
    let events_so_far = audit_events(&db).len();
    let out = import(&db, &fixture("bad.yaml"), &["--dry-run"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = withdraw(&db, &["t-cash", "--revision", "9", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(audit_events(&db).len(), events_so_far);

    // Nothing but the events was written: the active programs are as
    // before (plus the accepted ov-a); a refusal never withdraws.
    let mut expected = before.clone();
    expected.push(("ov-a".to_owned(), 1));
    expected.sort();
    assert_eq!(current(&db).await, expected);

    let events = audit_events(&db);
    let summary: Vec<(String, String, String, serde_json::Value)> = events
        .iter()
        .filter(|e| e["outcome"] != "ok")
        .map(|e| {
            (
                e["tool"].as_str().unwrap().to_owned(),
                e["outcome"].as_str().unwrap().to_owned(),
                e["organization_id"].as_str().unwrap().to_owned(),
                e["resource_ids"].clone(),
            )
        })
        .collect();
    let ev = |tool: &str, outcome: &str, org: &str, ids: serde_json::Value| {
        (tool.to_owned(), outcome.to_owned(), org.to_owned(), ids)
    };
    let file_pairs = serde_json::json!(["t-cash:2", "t-dealer:1"]);
    assert_eq!(
        summary,
        [
            ev("cli.import_programs", "invalid", ORG, serde_json::json!([])),
            ev("cli.import_programs", "invalid", ORG, serde_json::json!([])),
            ev(
                "cli.import_programs",
                "refused",
                "org.absent",
                file_pairs.clone()
            ),
            ev("cli.import_programs", "refused", "invalid", file_pairs),
            ev(
                "cli.import_programs",
                "refused",
                ORG,
                serde_json::json!(["ov-b:1"])
            ),
            ev(
                "cli.import_programs_replace",
                "refused",
                ORG,
                serde_json::json!(["t-cash:2"])
            ),
            ev(
                "cli.programs_withdraw",
                "refused",
                ORG,
                serde_json::json!(["t-cash:9"])
            ),
            ev(
                "cli.programs_withdraw",
                "refused",
                ORG,
                serde_json::json!(["invalid"])
            ),
        ],
        "{events:?}"
    );
    // One event per refusal, on top of the three accepted imports.
    assert_eq!(after_huge, accepted + 5);
    assert_eq!(events.len(), accepted + 1 + 8);
    for e in events.iter().filter(|e| e["outcome"] != "ok") {
        assert_eq!(e["profile"], "dealergateway.programs/0.1", "{e}");
        assert_eq!(e["policy_decision"], "allow", "{e}");
        assert!(e["subject"].as_str().unwrap().starts_with("cli"), "{e}");
        // Never the raw hostile values.
        let line = e.to_string();
        assert!(
            !line.contains("xxxxxxxx") && !line.contains("pppppppp"),
            "{line}"
        );
    }
}

/// A second file putting a program into `w-affinity` of [`GROUP_BEST_ONE`]
/// with another `group_resolution`: valid alone, a conflict beside it.
const AFFINITY_ALL: &str = r#"
programs:
  - program_id: w-conquest
    revision: 1
    name: Conquest
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 70000, currency: USD}}
    stacking: {group: w-affinity, combinability: stackable, group_resolution: all}
"#;

fn demo_organizations() -> Vec<gateway::store::OrganizationRecord> {
    let catalog = gateway::catalog::Catalog::load().unwrap();
    gateway::dealers::parse(
        &catalog,
        "demo/dealers.yaml",
        DEMO.as_bytes(),
        "bundled-demo",
        chrono::Utc::now(),
    )
    .unwrap()
}

// Whole-set validation for the demo seed: `serve` loading the bundled demo
// checks each organization's programs files as one set, as `import
// programs` does, before anything is written; a broken demo is refused with
// the conflict named instead of being loaded silently.
#[tokio::test]
async fn demo_seed_refuses_programs_that_conflict_as_a_set_before_writing() {
    use gateway::demo::seed::{DemoSeed, SeedError};
    let catalog = gateway::catalog::Catalog::load().unwrap();
    let orgs = demo_organizations();
    let now = chrono::Utc::now();
    // Each file alone is accepted.
    for file in [GROUP_BEST_ONE, AFFINITY_ALL] {
        let seed = DemoSeed::prepare_with(&catalog, &orgs, &[(ORG, file)], now).unwrap();
        assert_eq!(seed.program_count(ORG), file.matches("program_id").count());
    }
    let refused = DemoSeed::prepare_with(
        &catalog,
        &orgs,
        &[(ORG, GROUP_BEST_ONE), (ORG, AFFINITY_ALL)],
        now,
    );
    match refused {
        Err(SeedError::ProgramSet {
            organization_id,
            conflicts,
        }) => {
            assert_eq!(organization_id, ORG);
            assert!(
                conflicts.iter().any(|c| c.contains("group_resolution")),
                "{conflicts:?}"
            );
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("a demo whose programs conflict as a set was accepted"),
    }
    // Programs of an organization the dealers file does not have.
    let stray = DemoSeed::prepare_with(&catalog, &orgs, &[("org.nowhere", GROUP_BEST_ONE)], now);
    assert!(
        matches!(stray, Err(SeedError::UnknownOrganization { .. })),
        "{:?}",
        stray.err()
    );
}

// The seed stores its programs through the same checked store call as
// `import programs`: beside a stored program they conflict with, they are
// refused and nothing of them is written.
#[tokio::test]
async fn demo_seed_writes_through_the_whole_set_check() {
    use gateway::demo::seed::DemoSeed;
    let catalog = gateway::catalog::Catalog::load().unwrap();
    let orgs = demo_organizations();
    let now = chrono::Utc::now();

    // The bundled demo, into an empty store: every program and vehicle.
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let store = gateway::store::open(&db).await.unwrap();
    assert!(store.is_empty().await.unwrap());
    let demo = DemoSeed::prepare(&catalog, &orgs, now).unwrap();
    store.upsert_organizations(&orgs).await.unwrap();
    demo.write(store.as_ref()).await.unwrap();
    for org in &orgs {
        let stored = store.current_programs(&org.organization_id).await.unwrap();
        // Every organization with a bundled programs file has its programs
        // stored; the European group (a lint example) has none.
        let has_file = gateway::demo::seed::PROGRAM_FILES
            .iter()
            .any(|(id, _)| *id == org.organization_id);
        assert_eq!(!stored.is_empty(), has_file, "{}", org.organization_id);
        assert_eq!(stored.len(), demo.program_count(&org.organization_id));
    }
    assert_eq!(
        gateway::demo::seed::PROGRAM_FILES.len(),
        2,
        "Lakeshore's and Maple Crest's files"
    );
    let mut vehicles = 0;
    for org in &orgs {
        for r in &org.rooftops {
            let history = store
                .snapshot_history(&org.organization_id, &r.rooftop_id, 1)
                .await
                .unwrap();
            vehicles += store
                .snapshot_vehicles(&history[0].snapshot_id)
                .await
                .unwrap()
                .len();
        }
    }
    assert_eq!(vehicles, demo.vehicle_count());

    // A store already holding GROUP_BEST_ONE refuses a demo adding
    // AFFINITY_ALL (valid alone) and keeps what it had.
    let db = store_with_dealers().await;
    let first = import(&db, &programs_file("a.yaml", GROUP_BEST_ONE), &[]);
    assert!(first.status.success(), "{}", text(&first));
    let demo = DemoSeed::prepare_with(&catalog, &orgs, &[(ORG, AFFINITY_ALL)], now).unwrap();
    let store = gateway::store::open(&db).await.unwrap();
    let err = demo.write(store.as_ref()).await.unwrap_err().to_string();
    assert!(err.contains("group_resolution"), "{err}");
    assert_eq!(
        current(&db).await,
        [("w-excluder".to_owned(), 1), ("w-loyalty".to_owned(), 1)]
    );
}

/// `line:column` of the first `marker` on the first line holding `line`.
fn at(text: &str, line: &str, marker: &str) -> String {
    let (i, l) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(line))
        .unwrap_or_else(|| panic!("no line with {line:?}"));
    let column = l[..l.find(marker).unwrap()].chars().count() + 1;
    format!("{}:{column}", i + 1)
}

// docs/pricing.md "Validation": the programs file is reported like the
// dealers file, every problem at once, each with its line and column, the
// JSON pointer, the rule and what was expected in words: an unexpected key
// named with the keys allowed and the closest one, `currency: usd` as an
// ISO 4217 code in capitals (did you mean USD), and the two stacking
// mistakes JSON Schema can only call `not` in sentences.
#[tokio::test]
async fn schema_problems_name_the_key_the_place_and_the_rule_in_words() {
    let db = store_with_dealers().await;
    let yaml = r#"programs:
  - program_id: s-key
    revision: 1
    nmae: Misspelt name
    name: Cash
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 50000, currency: usd}}
    stacking: {group: oem, combinability: stackable, rule: "stack.len() <= 1"}
  - program_id: s-limit
    revision: 1
    name: Limited
    kind: cash
    direction: discount
    amount: {status: known, amount: {amount_minor: 10000, currency: USD}}
    stacking:
      group: oem
      combinability: rule_defined
      limits: [{group: oem, tag: loyalty, max_programs: 1}]
"#;
    let file = programs_file("schema.yaml", yaml);
    let out = import(&db, &file, &[]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(2), "{report}");
    for expected in [
        format!("{file}: 4 problem(s); nothing was imported"),
        format!(
            "{file}:{}: /programs/0/nmae: additionalProperties: unexpected key 'nmae' (did you mean 'name'?): this object does not allow it; allowed keys here: program_id, revision, name, kind, direction, amount, cap, applies_to, jurisdictions, excluded_postal_prefixes, valid_from, valid_until, payment_modes, criteria, criteria_mode, stacking, tags, disclosure, provenance",
            at(yaml, "nmae", "nmae")
        ),
        format!(
            "{file}:{}: /programs/0/amount/amount/currency: pattern: must be an ISO 4217 code in capitals such as USD, matching ^[A-Z]{{3}}$ (did you mean 'USD'?)",
            at(yaml, "currency: usd", "usd")
        ),
        format!(
            "{file}:{}: /programs/0/stacking: not: rule is allowed only with combinability rule_defined, and this program's combinability is stackable: remove it, or make the program rule_defined",
            at(
                yaml,
                "stacking: {group: oem, combinability: stackable",
                "{group"
            )
        ),
        format!(
            "{file}:{}: /programs/1/stacking/limits/0: not: a limit selects the members of one group or of one tag, not both: keep group or tag (with neither, the limit counts every member of the stack)",
            at(yaml, "limits: [", "{group")
        ),
    ] {
        assert!(report.contains(&expected), "no {expected:?} in\n{report}");
    }
    assert!(
        !report.contains("failed validation for keyword"),
        "{report}"
    );
    assert!(current(&db).await.is_empty());
}

// An unknown currency is reported at its own pointer beside every other
// problem of the file (it used to be one problem at `/` hiding the rest
// until it was fixed), and so is an amount written 299.00.
#[tokio::test]
async fn an_unknown_currency_is_reported_at_its_own_pointer_beside_every_other_problem() {
    let db = store_with_dealers().await;
    let bad = std::fs::read_to_string(fixture("bad.yaml")).unwrap();
    let yaml = format!(
        "{bad}  - program_id: b-currency
    revision: 1
    name: Unknown currency
    kind: cash
    direction: discount
    amount: {{status: known, amount: {{amount_minor: 10000, currency: XYZ}}}}
    stacking: {{group: oem, combinability: stackable}}
  - program_id: b-float
    revision: 1
    name: Float amount
    kind: cash
    direction: discount
    amount: {{status: known, amount: {{amount_minor: 299.00, currency: USD}}}}
    stacking: {{group: oem, combinability: stackable}}
  - program_id: b-window
    revision: 1
    name: Ends before it starts
    kind: cash
    direction: discount
    valid_from: 2026-06-01T00:00:00Z
    valid_until: 2026-05-01T00:00:00Z
    amount: {{status: known, amount: {{amount_minor: 100, currency: USD}}}}
    stacking: {{group: oem, combinability: stackable}}
"
    );
    let file = programs_file("every.yaml", &yaml);
    let out = import(&db, &file, &[]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(2), "{report}");
    for expected in [
        format!(
            "{file}:{}: /programs/4/amount/amount/currency: iso_4217: not an active ISO 4217 currency code with a minor unit",
            at(&yaml, "currency: XYZ", "XYZ")
        ),
        format!(
            "{file}:{}: /programs/5/amount/amount/amount_minor: amount_minor: amount_minor must be a whole number of minor units written without a decimal point or exponent; the number written equals 299 (write 299 if that counts minor units); 299.00 USD would be 29900",
            at(&yaml, "amount_minor: 299.00", "299.00")
        ),
        format!(
            "{file}:{}: /programs/0/stacking/rule: program: program 'b-rule': ",
            at(&yaml, "rule: \"stack.len(", "\"stack")
        ),
        // The engine's problems, their pointers and words carried unchanged.
        ": /programs/1/stacking/not_combinable_with".to_owned(),
        ": /programs/3/revision: program: program 'b-dup': ".to_owned(),
        ": /programs/6/valid_until: program: program 'b-window': ".to_owned(),
    ] {
        assert!(report.contains(&expected), "no {expected:?} in\n{report}");
    }
    assert!(report.contains("6 problem(s)"), "{report}");
    assert!(current(&db).await.is_empty());
}

// The amount bound names the sum of the currency and every program that
// contributes to it, not one program.
#[tokio::test]
async fn the_amount_bound_names_the_sum_and_every_contributing_program() {
    let db = store_with_dealers().await;
    let fee = |id: &str, minor: &str| {
        format!(
            "  - program_id: {id}
    revision: 1
    name: Fee {id}
    kind: surcharge
    direction: surcharge
    amount: {{status: known, amount: {{amount_minor: {minor}, currency: USD}}}}
    stacking: {{group: addons, combinability: stackable}}
"
        )
    };
    let yaml = format!(
        "programs:\n{}{}{}",
        fee("fee-a", "3000000000000000000"),
        fee("fee-b", "2000000000000000000"),
        fee("fee-c", "100")
    );
    let file = programs_file("sum.yaml", &yaml);
    let out = import(&db, &file, &[]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(2), "{report}");
    let bound = gateway::offers::import::MAX_PROGRAM_SUM_MINOR;
    let words = format!(
        "the fixed amounts in USD of the programs evaluated together sum to 5000000000000000100 minor units, beyond {bound} (i64::MAX / 2), the most that can be summed with a vehicle's price without overflow; contributing: 'fee-a' 3000000000000000000, 'fee-b' 2000000000000000000, 'fee-c' 100"
    );
    assert!(
        report.contains(&format!(
            "{file}:{}: /programs/1/amount/amount/amount_minor: amount_bound: program 'fee-b': {words}",
            at(&yaml, "amount_minor: 2000000000000000000", "2000000000000000000")
        )),
        "{report}"
    );
    assert!(
        !report.contains("/programs/0/"),
        "fee-a alone is within the bound: {report}"
    );
    assert!(current(&db).await.is_empty());
}
