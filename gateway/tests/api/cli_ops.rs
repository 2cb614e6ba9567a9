//! Operator-facing CLI: completions, the config file, progress, preview (docs/operations.md).
//!
//! The real binary: `completions`, `serve --config FILE` observed over
//! HTTP, progress on stderr while stdout stays what scripts read. Runs on
//! SQLite, and on PostgreSQL when `DEALER_GATEWAY_TEST_POSTGRES_URL` is set.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, BufReader};

use crate::common::{run_cli, temp_dir, test_database_url, text};

/// Every setting the config file tests touch through the environment:
/// removed from the child's environment unless a test sets it.
const ENV_UNDER_TEST: [&str; 6] = [
    "DEALER_GATEWAY_LOG",
    "DEALER_GATEWAY_LOG_FORMAT",
    "DEALER_GATEWAY_MAX_BODY_BYTES",
    "DEALER_GATEWAY_LISTEN",
    "DEALER_GATEWAY_NO_DEMO",
    "DEALER_GATEWAY_CONFIG",
];

#[test]
fn completions_for_each_shell_name_the_subcommands() {
    for shell in ["bash", "zsh", "fish"] {
        let out = run_cli("sqlite://unused", &["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", text(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(script.len() > 500, "{shell}: {script}");
        for word in [
            "dealer-gateway",
            "serve",
            "import",
            "bundle",
            "preview",
            "token",
            "completions",
            "config",
        ] {
            assert!(script.contains(word), "{shell} lacks {word}: {script}");
        }
        assert!(out.stderr.is_empty(), "{shell}: {}", text(&out));
    }
    let out = run_cli("sqlite://unused", &["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn serve_help_states_the_precedence() {
    let out = run_cli("sqlite://unused", &["serve", "--help"]);
    assert!(out.status.success(), "{}", text(&out));
    let help = String::from_utf8_lossy(&out.stdout).replace('\n', " ");
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains(
            "its flag, then its environment variable, then the --config file, then its default"
        ),
        "{help}"
    );
    assert!(
        help.contains("Precedence: flag > environment variable > this file > default"),
        "{help}"
    );
}

/// A `dealer-gateway serve` child process; killed when dropped.
pub(crate) struct Served {
    pub(crate) child: tokio::process::Child,
    pub(crate) base: String,
    /// Its stderr so far (the log).
    pub(crate) logs: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

/// How `serve` ended when it did not start: exit code and stderr.
pub(crate) struct Refused {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Run `serve` with `args` and `env` on `db` until it prints its address.
pub(crate) async fn serve(
    db: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<Served, Refused> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_dealer-gateway"));
    command
        .arg("serve")
        .args(args)
        .env("DEALER_GATEWAY_DATABASE_URL", db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for name in ENV_UNDER_TEST {
        command.env_remove(name);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("binary runs");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut seen = String::new();
    let started = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let mut line = String::new();
            match stdout.read_line(&mut line).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            seen.push_str(&line);
            if let Some(rest) = line.split("listening on http://").nth(1) {
                return rest.split("/mcp").next().map(str::to_owned);
            }
        }
    })
    .await
    .expect("serve prints its address or exits within 60 s");
    match started {
        Some(addr) => {
            // Keep reading both pipes while the server runs: a closed
            // stdout would fail its next line, a full stderr would block it.
            let mut stderr = child.stderr.take().expect("stderr");
            tokio::spawn(async move {
                let mut sink = Vec::new();
                let _ = stdout.read_to_end(&mut sink).await;
            });
            let logs = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let into = logs.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    into.lock().expect("logs").extend_from_slice(&buf[..n]);
                }
            });
            Ok(Served {
                child,
                base: format!("http://{addr}"),
                logs,
            })
        }
        None => {
            let status = child.wait().await.expect("serve exits");
            let mut stderr = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut stderr).await;
            }
            Err(Refused {
                code: status.code(),
                stdout: seen,
                stderr,
            })
        }
    }
}

impl Served {
    /// The HTTP status of a well-formed `server/discover` POST /mcp whose
    /// body is padded to `size` bytes.
    async fn post_status(&self, size: usize) -> u16 {
        let mut body = crate::common::modern_body(1, "server/discover", serde_json::json!({}));
        body["params"]["_meta"]["com.example/padding"] = serde_json::json!("");
        let bare = body.to_string().len();
        body["params"]["_meta"]["com.example/padding"] = serde_json::json!("x".repeat(size - bare));
        let body = body.to_string();
        assert_eq!(body.len(), size);
        // No gateway runs in this process to install one (plain HTTP here).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut request = reqwest::Client::new()
            .post(format!("{}/mcp", self.base))
            .header("content-type", "application/json");
        for (name, value) in crate::common::TestApp::modern_headers("server/discover", None) {
            request = request.header(name, value);
        }
        request
            .body(body)
            .send()
            .await
            .expect("request sent")
            .status()
            .as_u16()
    }

    /// Whether the server refuses a POST /mcp declaring a `size`-byte body
    /// as too large (413), judged on the request head alone: an answer
    /// before the body is sent is read from a raw socket, because the
    /// server closes without reading the body, which a client that is
    /// still sending sees as a reset. No answer within 5 s: not refused.
    async fn refuses_as_too_large(&self, size: usize) -> bool {
        use tokio::io::AsyncWriteExt as _;
        let addr = self.base.trim_start_matches("http://");
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {}\r\n\
             Mcp-Method: server/discover\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n",
            crate::common::MODERN
        );
        stream.write_all(head.as_bytes()).await.expect("head sent");
        let mut reply = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), async {
            let mut buf = [0u8; 512];
            while !reply.windows(2).any(|w| w == b"\r\n") {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => reply.extend_from_slice(&buf[..n]),
                }
            }
        })
        .await;
        let refused = read.is_ok() && reply.starts_with(b"HTTP/1.1 413 ");
        if !refused {
            eprintln!("not refused: {}", String::from_utf8_lossy(&reply));
        }
        refused
    }

    fn port(&self) -> u16 {
        self.base
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a port")
    }
}

impl Served {
    /// The first log line containing `needle`, waiting up to 10 s for it.
    async fn log_line(&self, needle: &str) -> String {
        for _ in 0..100 {
            let logs = String::from_utf8_lossy(&self.logs.lock().expect("logs")).into_owned();
            if let Some(line) = logs.lines().find(|l| l.contains(needle)) {
                return line.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "no log line with {needle:?} in: {}",
            String::from_utf8_lossy(&self.logs.lock().expect("logs"))
        );
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// A fresh store and a config file with `text` in its directory.
async fn store_and_config(text: &str) -> (std::path::PathBuf, String, String) {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let file = dir.join("gateway.toml");
    std::fs::write(&file, text).expect("config written");
    (dir, db, file.display().to_string())
}

/// The file sets the listen address (an ephemeral port instead of the
/// default 8080), a switch and the body limit; the server honours them.
const CONFIG: &str = r#"
# Serve settings for the tests.
listen = "127.0.0.1:0"
no_demo = true
max_body_bytes = 2000
allowed_hosts = ["gateway.example", "localhost"]
"#;

#[tokio::test]
async fn a_config_file_sets_what_the_running_server_honours() {
    let (_dir, db, file) = store_and_config(CONFIG).await;
    let served = serve(&db, &["--config", &file], &[])
        .await
        .unwrap_or_else(|r| panic!("{:?}: {}{}", r.code, r.stdout, r.stderr));
    assert_ne!(served.port(), 8080);
    assert!(served.refuses_as_too_large(3000).await);
    assert_eq!(served.post_status(1500).await, 200);
    // no_demo = true: the store stays empty (no demo organizations).
    let store = gateway::store::open(&db).await.expect("store opens");
    assert!(store.list_organizations().await.expect("listed").is_empty());
}

#[tokio::test]
async fn a_flag_and_an_environment_variable_override_the_file() {
    let (_dir, db, file) = store_and_config(CONFIG).await;
    // A flag beats the file.
    let served = serve(&db, &["--config", &file, "--max-body-bytes", "100000"], &[])
        .await
        .unwrap_or_else(|r| panic!("{:?}: {}{}", r.code, r.stdout, r.stderr));
    assert_eq!(served.post_status(3000).await, 200);
    drop(served);
    // An environment variable beats the file.
    let served = serve(
        &db,
        &["--config", &file],
        &[("DEALER_GATEWAY_MAX_BODY_BYTES", "100000")],
    )
    .await
    .unwrap_or_else(|r| panic!("{:?}: {}{}", r.code, r.stdout, r.stderr));
    assert_eq!(served.post_status(3000).await, 200);
    drop(served);
    // The file itself may come from the environment, and a flag beats an
    // environment variable.
    let served = serve(
        &db,
        &["--max-body-bytes", "2500"],
        &[
            ("DEALER_GATEWAY_CONFIG", &file),
            ("DEALER_GATEWAY_MAX_BODY_BYTES", "100000"),
        ],
    )
    .await
    .unwrap_or_else(|r| panic!("{:?}: {}{}", r.code, r.stdout, r.stderr));
    assert_ne!(served.port(), 8080);
    assert!(served.refuses_as_too_large(3000).await);
    assert_eq!(served.post_status(2400).await, 200);
}

#[tokio::test]
async fn unknown_keys_and_bad_values_stop_the_start_naming_key_and_file() {
    let (_dir, db, file) = store_and_config(
        r#"
listen = "127.0.0.1:0"
max_body_byte = 10
request_timeout_seconds = "soon"
audit_retention_days = 99999
no_demo = "yes"
log_format = "xml"
"#,
    )
    .await;
    let refused = match serve(&db, &["--config", &file], &[]).await {
        Ok(served) => panic!("started on {} despite a bad config file", served.base),
        Err(refused) => refused,
    };
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(!refused.stdout.contains("listening"), "{}", refused.stdout);
    let report = &refused.stderr;
    for needle in [
        format!("{file}: 5 problem(s) in the config file"),
        "nothing of it was applied and the gateway did not start".to_owned(),
        "unknown key `max_body_byte`: not a serve setting".to_owned(),
        "request_timeout_seconds = \"soon\": invalid digit found in string; expected a whole number"
            .to_owned(),
        "audit_retention_days = 99999: 99999 is not in 1..=36500; expected a whole number"
            .to_owned(),
        "no_demo = \"yes\": expected true or false".to_owned(),
        "log_format = \"xml\"".to_owned(),
        "expected one of auto, json, text".to_owned(),
    ] {
        assert!(report.contains(&needle), "no {needle:?} in:\n{report}");
    }
    // Nothing was applied: the store was not even opened for the demo.
    let store = gateway::store::open(&db).await.expect("store opens");
    assert!(store.list_organizations().await.expect("listed").is_empty());

    // A file that is not TOML, and a missing file, name the file too.
    std::fs::write(&file, "listen = \n").expect("written");
    let refused = serve(&db, &["--config", &file], &[])
        .await
        .err()
        .expect("refused");
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains(&format!("{file}: not a valid TOML config file")),
        "{}",
        refused.stderr
    );
    let missing = format!("{file}.missing");
    let refused = serve(&db, &["--config", &missing], &[])
        .await
        .err()
        .expect("refused");
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains(&format!("{missing}: cannot read the config file")),
        "{}",
        refused.stderr
    );
}

/// `demo generate` into `out`; its output.
fn generate(db: &str, out: &Path, extra: &[&str]) -> std::process::Output {
    generate_sized(db, out, "4000", "4", extra)
}

/// `demo generate` of `vehicles` on `rooftops` (seed 7) into `out`; its output.
fn generate_sized(
    db: &str,
    out: &Path,
    vehicles: &str,
    rooftops: &str,
    extra: &[&str],
) -> std::process::Output {
    let out = out.display().to_string();
    let mut args = vec![
        "demo",
        "generate",
        "--vehicles",
        vehicles,
        "--rooftops",
        rooftops,
        "--seed",
        "7",
        "--out",
        &out,
    ];
    args.extend_from_slice(extra);
    run_cli(db, &args)
}

/// The progress lines of `label` in a command's stderr.
fn progress_lines<'a>(stderr: &'a str, label: &str) -> Vec<&'a str> {
    stderr
        .lines()
        .filter(|l| l.starts_with(&format!("{label}: ")))
        .collect()
}

#[tokio::test]
async fn imports_off_a_terminal_print_progress_lines_on_stderr_and_the_same_stdout() {
    let dir = temp_dir();
    let bundle = dir.join("bundle");
    let shown = bundle.display().to_string();

    // demo generate: rows, then a final line; stdout is its summary only.
    let generated = generate("sqlite://unused", &bundle, &[]);
    assert!(generated.status.success(), "{}", text(&generated));
    let stderr = String::from_utf8_lossy(&generated.stderr);
    let lines = progress_lines(&stderr, &format!("demo generate {shown}"));
    assert!(
        lines.iter().any(|l| l.contains("done, 4,000 rows in")),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&generated.stdout);
    assert!(
        stdout.starts_with(&format!("generated {shown}:")),
        "{stdout}"
    );
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let quiet = generate("sqlite://unused", &bundle, &["--progress", "none"]);
    assert!(quiet.status.success(), "{}", text(&quiet));
    assert!(quiet.stderr.is_empty(), "{}", text(&quiet));
    assert_eq!(quiet.stdout, generated.stdout);

    // import bundle, into two fresh stores: with progress (stderr is a
    // pipe here, so plain lines) and without.
    let label = format!("import bundle {shown}");
    let mut stdouts = Vec::new();
    for mode in ["auto", "none"] {
        let store_dir = temp_dir();
        let db = test_database_url(&store_dir).await;
        let out = run_cli(&db, &["--progress", mode, "import", "bundle", &shown]);
        assert!(out.status.success(), "{mode}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let lines = progress_lines(&stderr, &label);
        if mode == "auto" {
            // Lines as the work crosses tenths (the check pass reports
            // every 2048 rows, so a small feed's check is one step):
            // percentages that only grow, both phases named, rate and ETA,
            // a final summary.
            assert!(lines.len() >= 6, "{stderr}");
            let percents: Vec<u64> = lines
                .iter()
                .filter_map(|l| l.split(": ").nth(1)?.split('%').next()?.parse().ok())
                .collect();
            assert!(percents.windows(2).all(|w| w[0] <= w[1]), "{stderr}");
            assert!(percents.contains(&0) && percents.contains(&100), "{stderr}");
            assert!(lines.iter().any(|l| l.contains("— checking")), "{stderr}");
            assert!(
                lines
                    .iter()
                    .any(|l| l.contains("— writing") || l.contains("— committing")),
                "{stderr}"
            );
            assert!(lines.iter().any(|l| l.contains("ETA ")), "{stderr}");
            assert!(lines.iter().any(|l| l.contains("/s")), "{stderr}");
            assert!(
                lines.last().is_some_and(|l| l.contains(": done, ")),
                "{stderr}"
            );
        } else {
            assert!(lines.is_empty(), "{stderr}");
        }
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            !stdout.contains('%') && !stdout.contains("ETA"),
            "progress on stdout: {stdout}"
        );
        assert!(
            stdout.contains(&format!(
                "bundle {shown}: 4 of 4 inventory file(s) imported, 4000 vehicle(s); 0 file(s) with problems"
            )),
            "{stdout}"
        );
        stdouts.push(stdout);
    }
    assert_eq!(stdouts[0], stdouts[1]);

    // import inventory of one feed: the same, for a single file.
    let feed = std::fs::read_dir(bundle.join("inventory"))
        .expect("feeds")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "csv"))
        .expect("a feed");
    let feed_text = std::fs::read_to_string(&feed).expect("feed");
    let organization = feed_text
        .lines()
        .nth(1)
        .and_then(|row| {
            let header: Vec<&str> = feed_text.lines().next()?.split(',').collect();
            let at = header.iter().position(|h| *h == "organization_id")?;
            row.split(',').nth(at).map(str::to_owned)
        })
        .expect("organization_id column");
    let feed = feed.display().to_string();
    let mut stdouts = Vec::new();
    for mode in ["lines", "none"] {
        let store_dir = temp_dir();
        let db = test_database_url(&store_dir).await;
        let dealers = run_cli(
            &db,
            &[
                "--progress",
                mode,
                "import",
                "dealers",
                &bundle.join("dealers.yaml").display().to_string(),
            ],
        );
        assert!(dealers.status.success(), "{}", text(&dealers));
        let out = run_cli(
            &db,
            &[
                "--progress",
                mode,
                "import",
                "inventory",
                &feed,
                "--organization",
                &organization,
            ],
        );
        assert!(out.status.success(), "{mode}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let lines = progress_lines(&stderr, &format!("import {feed}"));
        if mode == "lines" {
            assert!(lines.len() >= 5, "{stderr}");
            assert!(
                lines.iter().any(|l| l.contains("— writing")),
                "the write phase reports progress: {stderr}"
            );
            assert!(
                lines.last().is_some_and(|l| l.contains(": done, ")),
                "{stderr}"
            );
        } else {
            assert!(lines.is_empty(), "{stderr}");
        }
        stdouts.push(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    assert_eq!(stdouts[0], stdouts[1]);
    assert!(
        stdouts[0].starts_with(&format!(
            "imported {feed} (dap-csv, organization {organization}): 1000 row(s) read"
        )),
        "{}",
        stdouts[0]
    );
}

/// The named columns of a generated feed's first data row.
fn first_row(feed: &Path, columns: &[&str]) -> Vec<String> {
    let text = std::fs::read_to_string(feed).expect("feed");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let row: Vec<&str> = lines.next().expect("a row").split(',').collect();
    columns
        .iter()
        .map(|c| {
            let at = header
                .iter()
                .position(|h| h == c)
                .unwrap_or_else(|| panic!("no column {c}"));
            row[at].to_owned()
        })
        .collect()
}

#[tokio::test]
async fn preview_prints_the_summary_and_the_json_only_with_json() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    let bundle = dir.join("bundle");
    let generated = generate_sized(&db, &bundle, "20", "1", &[]);
    assert!(generated.status.success(), "{}", text(&generated));
    let imported = run_cli(&db, &["import", "bundle", &bundle.display().to_string()]);
    assert!(imported.status.success(), "{}", text(&imported));
    let feed = std::fs::read_dir(bundle.join("inventory"))
        .expect("feeds")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .next()
        .expect("a feed");
    let row = first_row(
        &feed,
        &["organization_id", "rooftop_id", "vin", "stock_number"],
    );
    let (org, roof, vin, stock) = (&row[0], &row[1], &row[2], &row[3]);
    let base = ["preview", "--organization", org, "--rooftop", roof];

    // Default: the readable summary, no raw JSON.
    let args: Vec<&str> = base.iter().copied().chain(["--vin", vin]).collect();
    let out = run_cli(&db, &args);
    assert!(out.status.success(), "{}", text(&out));
    let summary = String::from_utf8_lossy(&out.stdout).into_owned();
    for needle in [
        "Pricing preview: ",
        "== What an agent is told (disclosure_text) ==",
        "== Price components ==",
        "== Completeness score: ",
        "add --json",
    ] {
        assert!(summary.contains(needle), "no {needle:?}: {summary}");
    }
    assert!(!summary.contains("\"disclosure_id\""), "{summary}");
    assert!(!summary.contains("== The disclosure document"), "{summary}");
    assert!(summary.lines().count() < 120, "{summary}");

    // --json (here with --stock): the same summary, then the document.
    let args: Vec<&str> = base
        .iter()
        .copied()
        .chain(["--stock", stock, "--json"])
        .collect();
    let out = run_cli(&db, &args);
    assert!(out.status.success(), "{}", text(&out));
    let full = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, json) = full
        .split_once("== The disclosure document (JSON, as returned to agents) ==\n")
        .unwrap_or_else(|| panic!("no JSON section: {full}"));
    assert!(head.contains("== Completeness score: "), "{head}");
    let document: serde_json::Value = serde_json::from_str(json.trim()).expect("the JSON document");
    let id = document["disclosure_id"].as_str().expect("disclosure_id");
    assert!(summary.contains(&format!("disclosure {id}")), "{summary}");
    assert_eq!(
        document["advertised_price"]["amount"]["currency"]
            .as_str()
            .map(str::len),
        Some(3),
        "{document}"
    );

    // Exactly one of --vin and --stock, and --help says so.
    let out = run_cli(&db, &base);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("<--vin <VIN>|--stock <STOCK>>"),
        "{}",
        text(&out)
    );
    let args: Vec<&str> = base
        .iter()
        .copied()
        .chain(["--vin", vin, "--stock", stock])
        .collect();
    let out = run_cli(&db, &args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("cannot be used with"), "{}", text(&out));
    let out = run_cli(&db, &["preview", "--help"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(
            "preview [OPTIONS] --organization <ORGANIZATION> --rooftop <ROOFTOP> <--vin <VIN>|--stock <STOCK>>"
        ),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn log_format_json_or_text_from_a_flag_or_the_config_file() {
    let (_dir, db, file) = store_and_config(CONFIG).await;
    // Default off a terminal: JSON lines.
    let served = serve(&db, &["--config", &file], &[])
        .await
        .unwrap_or_else(|r| panic!("{:?}: {}{}", r.code, r.stdout, r.stderr));
    let line = served.log_line("serving").await;
    let json: serde_json::Value = serde_json::from_str(&line).expect("a JSON log line");
    assert_eq!(json["fields"]["message"], "serving", "{line}");
    assert_eq!(json["level"], "INFO", "{line}");
    drop(served);
    // --log-format text (as a terminal would get by default).
    let served = serve(&db, &["--config", &file, "--log-format", "text"], &[])
        .await
        .unwrap_or_else(|r| panic!("{:?}: {}{}", r.code, r.stdout, r.stderr));
    let line = served.log_line("serving").await;
    assert!(
        serde_json::from_str::<serde_json::Value>(&line).is_err(),
        "{line}"
    );
    assert!(line.contains(" INFO "), "{line}");
    assert!(line.contains("gateway::run: serving"), "{line}");
    assert!(
        !line.contains('\u{1b}'),
        "no colours off a terminal: {line}"
    );
    drop(served);
    // The config file's log filter and format apply too.
    std::fs::write(
        &file,
        format!("{CONFIG}\nlog = \"warn,gateway::run=info\"\nlog_format = \"text\"\n"),
    )
    .expect("config written");
    let served = serve(&db, &["--config", &file], &[])
        .await
        .unwrap_or_else(|r| panic!("{:?}: {}{}", r.code, r.stdout, r.stderr));
    let line = served.log_line("serving").await;
    assert!(line.contains("gateway::run: serving"), "{line}");
    let logs = String::from_utf8_lossy(&served.logs.lock().expect("logs")).into_owned();
    assert!(
        !logs.contains("inventory loaded"),
        "the filter applies: {logs}"
    );
}

/// An import leaves no write-ahead log behind on SQLite: the command closes
/// its store, so SQLite checkpoints the log into the database and removes
/// it (`Store::close`). Before, a 1,000,000-vehicle import left about 3 GB
/// of log for the next process. On PostgreSQL there is no file to check.
#[tokio::test]
async fn an_import_leaves_no_write_ahead_log_on_sqlite() {
    let dir = temp_dir();
    let db = test_database_url(&dir).await;
    if !db.starts_with("sqlite:") {
        return;
    }
    let bundle = dir.join("bundle");
    let generated = generate_sized(&db, &bundle, "300", "2", &[]);
    assert!(generated.status.success(), "{}", text(&generated));
    let wal = dir.join("gateway.sqlite-wal");
    let imported = run_cli(&db, &["import", "bundle", &bundle.display().to_string()]);
    assert!(imported.status.success(), "{}", text(&imported));
    assert!(
        !wal.exists(),
        "{} bytes of write-ahead log left after import bundle",
        std::fs::metadata(&wal).map_or(0, |m| m.len())
    );
    let feed = std::fs::read_dir(bundle.join("inventory"))
        .expect("feeds")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .next()
        .expect("a feed");
    let row = first_row(&feed, &["organization_id", "rooftop_id"]);
    let imported = run_cli(
        &db,
        &[
            "import",
            "inventory",
            &feed.display().to_string(),
            "--organization",
            &row[0],
            "--rooftop",
            &row[1],
        ],
    );
    assert!(imported.status.success(), "{}", text(&imported));
    assert!(!wal.exists(), "write-ahead log left after import inventory");
}
