//! `dealer-gateway import dealers FILE`, run as the real binary: precise
//! reports, non-zero exit, and nothing written on any problem.

use std::path::Path;

use crate::common::{run_cli, temp_dir, test_database_url, text};

const DEMO: &str = include_str!("../../../demo/dealers.yaml");

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

async fn organization_count(db: &str) -> usize {
    gateway::store::open(db)
        .await
        .unwrap()
        .list_organizations()
        .await
        .unwrap()
        .len()
}

#[tokio::test]
async fn valid_file_imports_and_identical_reimport_changes_nothing() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let file = write(&dir, "dealers.yaml", DEMO);
    let first = run_cli(&db, &["import", "dealers", &file]);
    assert!(first.status.success(), "{}", text(&first));
    assert!(
        text(&first).contains("organizations added 3"),
        "{}",
        text(&first)
    );
    let again = run_cli(&db, &["import", "dealers", &file]);
    assert!(again.status.success());
    assert!(
        text(&again).contains("added 0, updated 0"),
        "{}",
        text(&again)
    );
    assert_eq!(organization_count(&db).await, 3);
}

#[tokio::test]
async fn reimport_updates_in_place_and_reports_removed_rooftops() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let file = write(&dir, "dealers.yaml", DEMO);
    assert!(run_cli(&db, &["import", "dealers", &file]).status.success());
    // Drop the Burnaby rooftop and rename the Canadian group.
    let doc: serde_json::Value = yaml_serde::from_str(DEMO).unwrap();
    let mut doc = doc;
    let orgs = doc["organizations"].as_array_mut().unwrap();
    let ca = orgs
        .iter_mut()
        .find(|o| o["organization_id"] == "org.maplecrest-motor-group")
        .unwrap();
    ca["name"] = "Maplecrest Motors".into();
    ca["rooftops"]
        .as_array_mut()
        .unwrap()
        .retain(|r| r["rooftop_id"] != "roof.maplecrest-burnaby");
    let changed = write(&dir, "changed.json", &doc.to_string());

    let dry = run_cli(&db, &["import", "dealers", &changed, "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(text(&dry).contains("nothing written"), "{}", text(&dry));
    assert!(text(&dry).contains("removed 1"), "{}", text(&dry));

    let store = gateway::store::open(&db).await.unwrap();
    let before = store
        .get_organization("org.maplecrest-motor-group")
        .await
        .unwrap()
        .unwrap();
    // Toronto, Burnaby and Montréal.
    assert_eq!(before.rooftops.len(), 3, "dry run wrote nothing");

    let real = run_cli(&db, &["import", "dealers", &changed]);
    assert!(real.status.success(), "{}", text(&real));
    assert!(text(&real).contains("updated 1"), "{}", text(&real));
    let after = store
        .get_organization("org.maplecrest-motor-group")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.name, "Maplecrest Motors");
    assert_eq!(after.rooftops.len(), 2);
}

#[tokio::test]
async fn every_problem_is_reported_with_pointer_and_rule_and_nothing_is_written() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let bad = DEMO
        .replacen("country: US", "country: usa-secret-value", 1)
        .replacen("odometer_unit: mi", "odometer_unit: furlongs", 1);
    assert_ne!(bad, DEMO);
    let file = write(&dir, "bad.yaml", &bad);
    let out = run_cli(&db, &["import", "dealers", &file]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report = text(&out);
    assert!(report.contains("nothing was imported"), "{report}");
    assert!(
        report.contains("/organizations/0/rooftops/0/address/country"),
        "{report}"
    );
    assert!(
        report.contains("gateway_settings/odometer_unit"),
        "{report}"
    );
    assert!(report.contains("bad.yaml"), "names the file: {report}");
    assert!(
        !report.contains("usa-secret-value"),
        "never echoes values: {report}"
    );
    assert!(
        !report.contains("furlongs"),
        "never echoes values: {report}"
    );
    assert_eq!(organization_count(&db).await, 0);
}

#[tokio::test]
async fn duplicate_rooftop_ids_and_currency_rules_are_cross_checked() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let bad = DEMO
        .replace(
            "rooftop_id: roof.maplecrest-burnaby",
            "rooftop_id: roof.lakeshore-chicago",
        )
        .replacen("currency: USD", "currency: XYZ", 1);
    let file = write(&dir, "dup.yaml", &bad);
    let out = run_cli(&db, &["import", "dealers", &file]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report = text(&out);
    assert!(report.contains("duplicate rooftop_id"), "{report}");
    assert!(report.contains("ISO 4217"), "{report}");
    assert_eq!(organization_count(&db).await, 0);
}

#[tokio::test]
async fn malformed_yaml_and_json_are_reported_with_position() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let yaml = write(
        &dir,
        "broken.yaml",
        "organizations: [\n  {organization_id: x,\n",
    );
    let out = run_cli(&db, &["import", "dealers", &yaml]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("not valid YAML (line"),
        "{}",
        text(&out)
    );
    let json = write(&dir, "broken.json", "{\"organizations\": [}");
    let out = run_cli(&db, &["import", "dealers", &json]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("not valid JSON (line 1"),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn a_missing_file_is_a_clear_error() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let out = run_cli(&db, &["import", "dealers", "/nonexistent/dealers.yaml"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("/nonexistent/dealers.yaml: cannot read"),
        "{}",
        text(&out)
    );
}

/// The 1-based line of the first occurrence of `needle` in `text`.
fn line_of(text: &str, needle: &str) -> usize {
    let at = text.find(needle).expect("needle in text");
    text[..at].matches('\n').count() + 1
}

#[tokio::test]
async fn contacts_without_a_public_flag_are_warned_about_with_file_pointer_and_line() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let contact = r#"{department: service, channel: phone, value: "+13125550143", public: true}"#;
    let unflagged = DEMO.replacen(
        contact,
        r#"{department: service, channel: phone, value: "+13125550143"}"#,
        1,
    );
    assert_ne!(unflagged, DEMO);
    let line = line_of(
        &unflagged,
        r#"{department: service, channel: phone, value: "+13125550143"}"#,
    );
    let file = write(&dir, "dealers.yaml", &unflagged);
    let expected = format!(
        "warning: {file}:{line}:13: /organizations/0/rooftops/0/contacts/2: public: the contact has no public flag, so it is not published"
    );
    for args in [
        vec!["import", "dealers", file.as_str(), "--dry-run"],
        vec!["import", "dealers", file.as_str()],
    ] {
        let out = run_cli(&db, &args);
        assert!(out.status.success(), "{}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&expected), "{args:?}: {stderr}");
        assert_eq!(stderr.matches("no public flag").count(), 1, "{stderr}");
    }
    // The demo file flags every contact: no warning.
    let demo = write(&dir, "demo.yaml", DEMO);
    let out = run_cli(&db, &["import", "dealers", &demo, "--dry-run"]);
    assert!(out.status.success());
    assert!(!text(&out).contains("no public flag"), "{}", text(&out));
}

#[tokio::test]
async fn problems_name_the_misspelt_key_in_words_with_line_and_column() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let bad = DEMO.replacen("publication:", "publicaton:", 1).replacen(
        "rooftop_id: roof.lakeshore-chicago",
        "rooftop_id: roof.Lakeshore-Chicago",
        1,
    );
    let key_line = line_of(&bad, "publicaton:");
    let id_line = line_of(&bad, "rooftop_id: roof.Lakeshore-Chicago");
    let file = write(&dir, "bad.yaml", &bad);
    let out = run_cli(&db, &["import", "dealers", &file]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report = text(&out);
    let base = "/organizations/0/rooftops/0";
    for expected in [
        format!(
            "{file}:{id_line}:21: {base}/rooftop_id: pattern: must be lower case, matching ^[a-z0-9][a-z0-9._-]{{0,127}}$"
        ),
        format!(
            "{file}:{key_line}:11: {base}/gateway_settings/publicaton: additionalProperties: unexpected key 'publicaton' (did you mean 'publication'?)"
        ),
        format!("{base}/gateway_settings: required: missing required property 'publication'"),
    ] {
        assert!(report.contains(&expected), "{expected}\n{report}");
    }
    assert!(
        !report.contains("failed validation for keyword"),
        "{report}"
    );
    assert!(
        !report.contains("Lakeshore-Chicago"),
        "never echoes values: {report}"
    );
    assert_eq!(organization_count(&db).await, 0);
}

#[tokio::test]
async fn a_misspelt_time_zone_is_refused_in_yaml_and_json() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let bad = DEMO.replacen("timezone: America/Chicago", "timezone: America/Chicagoo", 1);
    let line = line_of(&bad, "timezone: America/Chicagoo");
    let yaml = write(&dir, "tz.yaml", &bad);
    let out = run_cli(&db, &["import", "dealers", &yaml, "--dry-run"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "{yaml}:{line}:19: /organizations/0/rooftops/0/timezone: iana_timezone: not an IANA time zone name"
        )),
        "{}",
        text(&out)
    );
    // The same document as pretty JSON: the same rule, located in the JSON text.
    let doc: serde_json::Value = yaml_serde::from_str(&bad).unwrap();
    let pretty = serde_json::to_string_pretty(&doc).unwrap();
    let json_line = line_of(&pretty, "\"America/Chicagoo\"");
    let json = write(&dir, "tz.json", &pretty);
    let out = run_cli(&db, &["import", "dealers", &json]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{json}:{json_line}:"))
            && text(&out).contains("/organizations/0/rooftops/0/timezone: iana_timezone"),
        "{}",
        text(&out)
    );
    assert_eq!(organization_count(&db).await, 0);
}
