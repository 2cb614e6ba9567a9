//! `dap-conformance claim | verify | keygen | jwks`.
//!
//! Exit codes: 0 done; 1 the claim is refused (the run is not claimable, or
//! a claim fails verification); 2 usage, file or connection errors.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use chrono::Utc;
use serde_json::Value;

use super::{
    ClaimError, IssueInput, generate_key, issue, jwk_thumbprint, key_from_pem, key_to_pem,
    parse_validity, public_jwk, verify, verify_against_live, verify_report,
};

/// Run the whole suite and, only when every required check passed, issue
/// a signed claim pinning the report.
#[derive(Debug, clap::Args)]
pub struct ClaimArgs {
    #[command(flatten)]
    pub run: crate::run::RunArgs,
    /// The issuer's P-256 private key (PKCS#8 or SEC1 PEM).
    #[arg(long, value_name = "KEY.pem")]
    pub key: PathBuf,
    /// The key's `kid` in the issuer's JWKS (becomes signer.key_id).
    #[arg(long = "key-id", value_name = "ID")]
    pub key_id: String,
    /// The organization issuing and signing the claim (signer.organization).
    #[arg(long, value_name = "ORG")]
    pub issuer: String,
    /// The gateway's operator (implementation.operator); defaults to the issuer.
    #[arg(long, value_name = "NAME")]
    pub operator: Option<String>,
    /// How long the claim is valid: e.g. 30d, 12h, 90m (1h to 366d).
    #[arg(long = "valid-for", value_name = "DURATION", default_value = "30d")]
    pub valid_for: String,
    /// The tested build's source revision, e.g. its git commit (a black-box
    /// suite cannot find it out, so the issuer states it).
    #[arg(long = "source-revision", value_name = "REV")]
    pub source_revision: String,
    /// Where the report will be published (test_run.report_uri); defaults to
    /// a file: URI of the report path.
    #[arg(long = "report-uri", value_name = "URI")]
    pub report_uri: Option<String>,
    /// A documented deviation to list in the claim (repeatable).
    #[arg(long = "exception", value_name = "TEXT")]
    pub exceptions: Vec<String>,
    /// Where to write the claim. The report goes to --report, or to
    /// `<out>.report.json`.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// Verify a claim: schema, ES256 signature with the JWKS, payload, expiry;
/// optionally its report digest and what a gateway serves now.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The claim file (claim.json).
    #[arg(value_name = "CLAIM")]
    pub claim: PathBuf,
    /// The issuer's JWKS (RFC 7517) holding the claim's key.
    #[arg(long, value_name = "FILE")]
    pub jwks: PathBuf,
    /// Also check that the claim's tools, resources and profiles equal what
    /// this MCP endpoint serves now.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Also check that this report file is the one the claim pins.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

/// Generate a P-256 signing key (PKCS#8 PEM, mode 0600) and its JWKS.
#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// Where to write the private key; an existing file is never overwritten.
    #[arg(long, value_name = "KEY.pem")]
    pub out: PathBuf,
    /// The key's `kid`; defaults to its RFC 7638 thumbprint.
    #[arg(long = "key-id", value_name = "ID")]
    pub key_id: Option<String>,
    /// Also write the public JWKS here.
    #[arg(long, value_name = "FILE")]
    pub jwks: Option<PathBuf>,
}

/// Print the public JWKS for a private key.
#[derive(Debug, clap::Args)]
pub struct JwksArgs {
    /// The P-256 private key (PKCS#8 or SEC1 PEM).
    #[arg(long, value_name = "KEY.pem")]
    pub key: PathBuf,
    /// The key's `kid`; defaults to its RFC 7638 thumbprint.
    #[arg(long = "key-id", value_name = "ID")]
    pub key_id: Option<String>,
}

fn io_error(path: &Path, e: &std::io::Error) -> ClaimError {
    ClaimError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

fn read(path: &Path) -> Result<Vec<u8>, ClaimError> {
    std::fs::read(path).map_err(|e| io_error(path, &e))
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), ClaimError> {
    std::fs::write(path, bytes).map_err(|e| io_error(path, &e))
}

fn pretty(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

fn read_key(path: &Path) -> Result<p256::ecdsa::SigningKey, ClaimError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(meta) = std::fs::metadata(path)
            && meta.permissions().mode() & 0o077 != 0
        {
            eprintln!(
                "warning: {} is readable by other users (mode {:o}); a signing key should be 0600",
                path.display(),
                meta.permissions().mode() & 0o777
            );
        }
    }
    let bytes = read(path)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| ClaimError::Key(format!("{} is not PEM text", path.display())))?;
    key_from_pem(&text).map_err(|e| ClaimError::Key(format!("{}: {e}", path.display())))
}

/// The default report path next to the claim: `<out>.report.json`.
fn default_report_path(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".report.json");
    PathBuf::from(name)
}

fn file_uri(path: &Path) -> Result<String, ClaimError> {
    let absolute = std::path::absolute(path).map_err(|e| io_error(path, &e))?;
    reqwest::Url::from_file_path(&absolute)
        .map(|u| u.to_string())
        .map_err(|()| ClaimError::InvalidInput {
            option: "--report",
            rule: format!("{} cannot be written as a file: URI", absolute.display()),
        })
}

/// Print the required checks that keep a report from being claimable.
fn print_blocking_checks(report: &Value) {
    let checks = report["checks"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for check in checks {
        let result = check["result"].as_str().unwrap_or("(no result)");
        if check["required"] == Value::Bool(true) && result != "passed" {
            eprintln!(
                "  {} {} {}: {}",
                result.to_uppercase(),
                check["id"].as_str().unwrap_or("(no id)"),
                check["title"].as_str().unwrap_or_default(),
                check["reason"].as_str().unwrap_or_default()
            );
        }
    }
}

/// `dap-conformance claim`.
pub async fn cmd_claim(args: &ClaimArgs) -> i32 {
    match claim(args).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("dap-conformance claim: {e}");
            e.exit_code()
        }
    }
}

async fn claim(args: &ClaimArgs) -> Result<i32, ClaimError> {
    // Everything that can be checked before a run is checked first, so a
    // typo does not cost a whole suite run.
    let valid_for = parse_validity(&args.valid_for)?;
    let key = read_key(&args.key)?;
    if let Some(uri) = &args.report_uri {
        reqwest::Url::parse(uri).map_err(|e| ClaimError::InvalidInput {
            option: "--report-uri",
            rule: format!("not an absolute URI: {e}"),
        })?;
    }
    let options =
        crate::run::RunOptions::from_args(&args.run).map_err(|e| ClaimError::InvalidInput {
            option: "run options",
            rule: e.to_string(),
        })?;
    let output = crate::run::run_suite(&options)
        .await
        .map_err(|e| ClaimError::Live {
            url: options.url.clone(),
            reason: format!("the suite could not run: {e}"),
        })?;

    // A claim pins its report, so the report is always written.
    let report_path = args
        .run
        .report
        .clone()
        .unwrap_or_else(|| default_report_path(&args.out));
    write(&report_path, &output.report_bytes)?;
    println!("report written to {}", report_path.display());

    if !output.claimable {
        eprintln!(
            "not claimable: {} required check(s) failed, {} required check(s) skipped; failed, skipped or untested required checks prohibit a claim",
            output.failed_required,
            output.report["summary"]["required_skipped"]
                .as_u64()
                .unwrap_or_default()
        );
        print_blocking_checks(&output.report);
        return Ok(1);
    }
    let report_uri = match &args.report_uri {
        Some(uri) => uri.clone(),
        None => file_uri(&report_path)?,
    };
    let claim = match issue(&IssueInput {
        report: &output.report,
        report_bytes: &output.report_bytes,
        report_uri,
        claim_id: format!("urn:uuid:{}", uuid::Uuid::new_v4()),
        now: Utc::now(),
        valid_for,
        issuer: args.issuer.clone(),
        operator: args.operator.clone(),
        source_revision: args.source_revision.clone(),
        exceptions: args.exceptions.clone(),
        key: &key,
        key_id: args.key_id.clone(),
    }) {
        Ok(claim) => claim,
        Err(e @ ClaimError::NotClaimable { .. }) => {
            print_blocking_checks(&output.report);
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    write(&args.out, &pretty(&claim))?;
    println!(
        "claim {} issued by {} (kid {}): {} profile(s), {} tool(s), {} resource(s), {} exception(s); report {}; expires {}",
        claim["claim_id"].as_str().unwrap_or_default(),
        args.issuer,
        args.key_id,
        claim["profiles"].as_array().map_or(0, Vec::len),
        claim["implementation"]["tools"]
            .as_array()
            .map_or(0, Vec::len),
        claim["implementation"]["resources"]
            .as_array()
            .map_or(0, Vec::len),
        claim["exceptions"].as_array().map_or(0, Vec::len),
        claim["test_run"]["report_digest"]
            .as_str()
            .unwrap_or_default(),
        claim["expires_at"].as_str().unwrap_or_default(),
    );
    println!("claim written to {}", args.out.display());
    Ok(0)
}

/// `dap-conformance verify`.
pub async fn cmd_verify(args: &VerifyArgs) -> i32 {
    match verify_cmd(args).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("FAIL {e}");
            e.exit_code()
        }
    }
}

async fn verify_cmd(args: &VerifyArgs) -> Result<(), ClaimError> {
    let claim_bytes = read(&args.claim)?;
    let jwks_bytes = read(&args.jwks)?;
    let jwks: Value = serde_json::from_slice(&jwks_bytes)
        .map_err(|e| ClaimError::Jwks(format!("{} is not JSON: {e}", args.jwks.display())))?;
    let verified = verify(&claim_bytes, &jwks, Utc::now())?;
    println!(
        "PASS claim {}: schema, ES256 signature (kid {}), canonical payload, status active, valid until {}",
        verified.claim_id(),
        verified.key_id,
        verified
            .expires_at
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    if let Some(path) = &args.report {
        verify_report(&verified, &read(path)?)?;
        println!(
            "PASS report {} matches test_run.report_digest {}",
            path.display(),
            verified.report_digest()
        );
    }
    if let Some(url) = &args.url {
        if url != verified.endpoint() {
            println!(
                "note: comparing with {url}; the claim was issued for {}",
                verified.endpoint()
            );
        }
        verify_against_live(&verified, url).await?;
        println!("PASS {url} serves exactly the claimed tools, resources and profiles");
    }
    Ok(())
}

/// Create `path` for a private key: never overwrite, mode 0600 from the
/// start (no window in which the key is world-readable).
fn create_private(path: &Path) -> Result<std::fs::File, ClaimError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options.open(path).map_err(|e| io_error(path, &e))
}

/// `dap-conformance keygen`.
pub fn cmd_keygen(args: &KeygenArgs) -> i32 {
    match keygen(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("dap-conformance keygen: {e}");
            2
        }
    }
}

fn keygen(args: &KeygenArgs) -> Result<(), ClaimError> {
    let key = generate_key()?;
    let kid = args
        .key_id
        .clone()
        .unwrap_or_else(|| jwk_thumbprint(key.verifying_key()));
    let pem = key_to_pem(&key)?;
    let mut file = create_private(&args.out)?;
    file.write_all(pem.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| io_error(&args.out, &e))?;
    println!("private key written to {} (mode 0600)", args.out.display());
    if let Some(path) = &args.jwks {
        let jwks = serde_json::json!({"keys": [public_jwk(key.verifying_key(), &kid)]});
        write(path, &pretty(&jwks))?;
        println!("JWKS written to {}", path.display());
    }
    println!("kid {kid}");
    Ok(())
}

/// `dap-conformance jwks`.
pub fn cmd_jwks(args: &JwksArgs) -> i32 {
    match read_key(&args.key) {
        Ok(key) => {
            let kid = args
                .key_id
                .clone()
                .unwrap_or_else(|| jwk_thumbprint(key.verifying_key()));
            let jwks = serde_json::json!({"keys": [public_jwk(key.verifying_key(), &kid)]});
            print!("{}", String::from_utf8_lossy(&pretty(&jwks)));
            0
        }
        Err(e) => {
            eprintln!("dap-conformance jwks: {e}");
            2
        }
    }
}
