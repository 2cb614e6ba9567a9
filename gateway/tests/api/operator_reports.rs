//! The one error reporter of every operator file, for the files that are
//! not imports: the `serve --config` TOML file (docs/operations.md
//! "Configuration file") and the buyer profile of `preview --profile`.
//! Every problem in one pass, at its line and column, with the key named
//! and a did-you-mean; exit code 2 for bad input.

use std::path::Path;

use crate::common::{run_cli, temp_dir, test_database_url, text};

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

#[tokio::test]
async fn a_config_file_mistake_is_reported_at_its_line_and_column_with_a_did_you_mean() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let toml = "# serve settings\nlisten = \"127.0.0.1:0\"\nmax_body_byte = 10\nlog_format = \"jsn\"\n\naudit_retention_days = 0\n";
    let path = dir.join("gateway.toml");
    std::fs::write(&path, toml).unwrap();
    let file = path.display().to_string();
    let out = run_cli(&db, &["serve", "--config", &file]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(2), "{report}");
    for expected in [
        format!(
            "{file}: 3 problem(s) in the config file; nothing of it was applied and the gateway did not start:"
        ),
        format!(
            "  {file}:{}: /max_body_byte: unknown_key: unknown key `max_body_byte`: not a serve setting; did you mean `max_body_bytes`? (the keys are the flags of `dealer-gateway serve --help`",
            at(toml, "max_body_byte", "max_body_byte")
        ),
        format!(
            "  {file}:{}: /log_format: value: log_format = \"jsn\": not a possible value (did you mean 'json'?); expected one of auto, json, text",
            at(toml, "log_format", "\"jsn\"")
        ),
        format!(
            "  {file}:{}: /audit_retention_days: value: audit_retention_days = 0: 0 is not in 1..=36500; expected a whole number",
            at(toml, "audit_retention_days", "0")
        ),
    ] {
        assert!(report.contains(&expected), "no {expected:?} in\n{report}");
    }
    // Nothing was applied: the store was not even opened for the demo.
    let store = gateway::store::open(&db).await.expect("store opens");
    assert!(store.list_organizations().await.expect("listed").is_empty());
}

#[tokio::test]
async fn preview_with_a_bad_profile_exits_2_reporting_every_problem() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dealers = manifest.join("../demo/dealers.yaml").display().to_string();
    let out = run_cli(&db, &["import", "dealers", &dealers]);
    assert!(out.status.success(), "{}", text(&out));
    let feed = manifest
        .join("tests/fixtures/inventory/lakeshore.csv")
        .display()
        .to_string();
    let out = run_cli(
        &db,
        &[
            "import",
            "inventory",
            &feed,
            "--organization",
            "org.lakeshore-auto-group",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let preview = |profile: &str| {
        run_cli(
            &db,
            &[
                "preview",
                "--organization",
                "org.lakeshore-auto-group",
                "--rooftop",
                "roof.lakeshore-chicago",
                "--vin",
                "1HGCY2F50RA000101",
                "--profile",
                profile,
            ],
        )
    };

    // Each of these used to be read in part: the misspelt payment mode as
    // unknown, the lower-case country as given, the claim "maybe" as
    // unknown; the preview then showed offers for a buyer nobody described.
    let yaml = "paymnet_mode: finance\njurisdiction: {country: us, subdivision: US-IL}\nclaims: {loyalty: maybe}\n";
    let path = dir.join("profile.yaml");
    std::fs::write(&path, yaml).unwrap();
    let file = path.display().to_string();
    let out = preview(&file);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(2), "{report}");
    for expected in [
        format!("{file}: 3 problem(s); the preview was not made"),
        format!(
            "{file}:{}: /paymnet_mode: additionalProperties: unexpected key 'paymnet_mode' (did you mean 'payment_mode'?): this object does not allow it; allowed keys here: payment_mode, jurisdiction, claims, as_of",
            at(yaml, "paymnet_mode", "paymnet_mode")
        ),
        format!(
            "{file}:{}: /jurisdiction/country: pattern: must be an ISO 3166-1 alpha-2 country code in capitals such as US, matching ^[A-Z]{{2}}$ (did you mean 'US'?)",
            at(yaml, "country", "us,")
        ),
        format!(
            "{file}:{}: /claims/loyalty: oneOf: must be a boolean, or one of: unknown",
            at(yaml, "claims", "maybe")
        ),
    ] {
        assert!(report.contains(&expected), "no {expected:?} in\n{report}");
    }

    // Not YAML at all: the parser's position, exit 2 as well.
    std::fs::write(&path, "jurisdiction: {country: US\n").unwrap();
    let out = preview(&file);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("not valid YAML (line"),
        "{}",
        text(&out)
    );

    // A good profile still previews.
    std::fs::write(
        &path,
        "payment_mode: finance\njurisdiction: {country: US, subdivision: US-IL}\nclaims: {loyalty: unknown}\n",
    )
    .unwrap();
    let out = preview(&file);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Pricing preview: 2024 Honda Accord"),
        "{}",
        text(&out)
    );
}
