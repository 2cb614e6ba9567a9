//! `dealer-gateway import programs FILE --organization ORG [--dry-run]`, run
//! as the real binary (issue 7 item 1): all or nothing, every problem at
//! once (a rhai compile error names the program), exit 2 on bad input, and
//! an older revision never overwrites a newer one.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{temp_dir, test_database_url};

const DEMO: &str = include_str!("../../demo/dealers.yaml");
const ORG: &str = "org.lakeshore-auto-group";

fn gateway(db: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dealer-gateway"))
        .args(args)
        .env("DEALER_GATEWAY_DATABASE_URL", db)
        .env("DEALER_GATEWAY_LOG", "warn")
        .output()
        .expect("binary runs")
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/programs")
        .join(name)
        .display()
        .to_string()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A store holding the demo dealers (no programs).
async fn store_with_dealers() -> String {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let file = dir.join("dealers.yaml");
    std::fs::write(&file, DEMO).unwrap();
    let out = gateway(&db, &["import", "dealers", &file.display().to_string()]);
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
    gateway(db, &args)
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

#[tokio::test]
async fn older_revision_is_ignored_never_overwriting_the_newer_one() {
    let db = store_with_dealers().await;
    assert!(import(&db, &fixture("valid.yaml"), &[]).status.success());
    let older = import(&db, &fixture("older.json"), &[]);
    assert!(older.status.success(), "{}", text(&older));
    assert!(
        text(&older).contains("added 1, unchanged 0, older revisions ignored 1"),
        "{}",
        text(&older)
    );
    assert_eq!(
        current(&db).await,
        [
            ("t-bonus".to_owned(), 1),
            ("t-cash".to_owned(), 2),
            ("t-dealer".to_owned(), 1)
        ]
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
    assert!(
        report.lines().filter(|l| l.contains("bad.yaml: /")).count() == 3,
        "{report}"
    );
    assert!(current(&db).await.is_empty());

    // Schema problems: file, pointer and rule, never the value.
    let out = import(&db, &fixture("bad-schema.json"), &[]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(2), "{report}");
    assert!(
        report.contains("bad-schema.json: /programs/0/revision"),
        "{report}"
    );
    assert!(
        report.contains("bad-schema.json: /programs/1/kind"),
        "{report}"
    );
    assert!(report.contains("bad-schema.json: /programs/0:"), "{report}");
    assert!(
        !report.contains("do-not-echo-me") && !report.contains("teleport"),
        "{report}"
    );
    assert!(current(&db).await.is_empty());

    // An unknown organization is bad input too.
    let out = gateway(
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
