//! `dap-conformance audit`: a shopper's audit anyone can run against any DAP
//! 0.1 gateway (docs/conformance.md "Shopper's audit").
//!
//! Twenty shopper questions of our own are answered by a scripted agent
//! (deterministic code, no model) from the gateway's MCP tools alone. Each
//! answer is graded against what the gateway's own records support, on the
//! six weighted dimensions of DAP's public answer-audit rubric, and the
//! weighted score (0–100) is printed.
//!
//! Layers: [`wire`] (DAP shapes) ← [`agent`] (the agent's calls) ←
//! [`subjects`] (what the questions ask about) ← [`answer`] (what the agent
//! says) ← [`grade`] (the rules) ← [`questions`] (the twenty) ← this module
//! (running and scoring) ← [`report`] (table and JSON).

pub mod agent;
pub mod answer;
pub mod grade;
pub mod questions;
pub mod report;
pub mod subjects;
pub mod wire;

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::client::{Caller, Client, ClientError};
use crate::context::{DEALER_GET, GET_MANIFEST};
use agent::{Env, Session, call_patiently};
use answer::{Answer, Outcome};
use grade::{Check, Dimension, Grader, Verdict};
use questions::{QUESTIONS, Question};

/// `dap-conformance audit` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct AuditArgs {
    /// The gateway's MCP endpoint, e.g. http://127.0.0.1:8080/mcp
    #[arg(long)]
    pub url: String,
    /// A bearer token the shopper's agent calls with (default: anonymous,
    /// as a shopper's agent usually is).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// The organization to audit (default: the first one the manifest lists).
    #[arg(long, value_name = "ORG")]
    pub organization: Option<String>,
    /// Print the result as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// One token budget for every question, in place of each question's own
    /// (tokens are estimated as bytes / 4).
    #[arg(long = "budget-tokens", value_name = "N")]
    pub budget_tokens: Option<usize>,
    /// Exit with status 1 when the weighted score is below N (0–100).
    #[arg(long = "min-score", value_name = "N", value_parser = clap::value_parser!(u8).range(0..=100))]
    pub min_score: Option<u8>,
    /// Also write the JSON report to this file.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

/// What to audit.
#[derive(Debug, Clone)]
pub struct AuditOptions {
    pub url: String,
    pub token: Option<String>,
    pub organization: Option<String>,
    pub budget_tokens: Option<usize>,
}

impl AuditOptions {
    pub fn from_args(a: &AuditArgs) -> Result<Self, AuditError> {
        let parsed = reqwest::Url::parse(&a.url)
            .map_err(|e| AuditError::Usage(format!("--url is not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(AuditError::Usage(
                "--url must be http:// or https://".into(),
            ));
        }
        if a.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(AuditError::Usage("--token is empty".into()));
        }
        if a.budget_tokens == Some(0) {
            return Err(AuditError::Usage(
                "--budget-tokens must be at least 1".into(),
            ));
        }
        Ok(Self {
            url: a.url.clone(),
            token: a.token.clone(),
            organization: a.organization.clone(),
            budget_tokens: a.budget_tokens,
        })
    }
}

/// Why the audit could not run (exit status 2). A low score is not one.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("usage: {0}")]
    Usage(String),
    #[error("connection: {0}")]
    Connection(#[from] ClientError),
    #[error("the gateway cannot be audited: {0}")]
    NotAuditable(String),
    #[error("cannot encode the report: {0}")]
    Encode(String),
}

/// One graded question.
#[derive(Debug, Clone)]
pub struct Graded {
    pub question: &'static Question,
    pub wording: String,
    pub budget_tokens: usize,
    pub answer: Answer,
    pub checks: Vec<Check>,
}

/// A finished audit.
#[derive(Debug, Clone)]
pub struct AuditOutput {
    pub report: Value,
    /// The exact bytes `--json` prints and `--report` writes.
    pub report_bytes: Vec<u8>,
    /// The table `dap-conformance audit` prints without `--json`.
    pub table: String,
    /// The weighted score in hundredths of a point (0..=10000).
    pub score_hundredths: u64,
    pub graded: Vec<Graded>,
}

impl AuditOutput {
    /// The score of `dimension` in hundredths (`None`: no question covers it).
    pub fn dimension_hundredths(&self, dimension: Dimension) -> Option<u64> {
        report::dimension_ppm(&self.graded, dimension).map(|ppm| ppm / 100)
    }
}

/// Run the audit against `opts.url`.
pub async fn run_audit(opts: &AuditOptions) -> Result<AuditOutput, AuditError> {
    let started_at = now();
    let tokens: Vec<(String, String)> = opts
        .token
        .iter()
        .map(|t| ("shopper".to_owned(), t.trim().to_owned()))
        .collect();
    let caller = if tokens.is_empty() {
        Caller::Anonymous
    } else {
        Caller::role("shopper")
    };
    let client = Client::new(&opts.url, &tokens)?;
    let env = discover(client, caller, opts.organization.as_deref()).await?;
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let subjects = subjects::choose(&env, &nonce).await?;
    // One grader for the whole audit: its reads are memoized, so a record
    // several questions rest on is read once.
    let mut grader = Grader::new(&env);
    let mut graded = Vec::new();
    for q in &QUESTIONS {
        let budget = opts.budget_tokens.unwrap_or(q.budget_tokens);
        graded.push(ask_and_grade(&env, &mut grader, &subjects, q, budget).await?);
    }
    let context = json!({
        "suite": "dap-conformance audit",
        "suite_version": crate::version::SUITE_VERSION,
        "target": {"endpoint": opts.url},
        "organization_id": env.organization_id,
        "organization_name": env.dealer.name,
        "caller": env.caller.label(),
        "started_at": started_at,
        "completed_at": now(),
        "notes": subjects.notes,
    });
    let (report, table, score_hundredths) = report::render(&context, &graded);
    let mut report_bytes =
        serde_json::to_vec_pretty(&report).map_err(|e| AuditError::Encode(e.to_string()))?;
    report_bytes.push(b'\n');
    Ok(AuditOutput {
        report,
        report_bytes,
        table,
        score_hundredths,
        graded,
    })
}

/// What the agent learns first: the tools (`tools/list`), the manifest's
/// profiles and organizations, and the audited organization's rooftops.
async fn discover(
    client: Client,
    caller: Caller,
    organization: Option<&str>,
) -> Result<Env, AuditError> {
    let listed = client.modern(&caller, "tools/list", json!({})).await?;
    let tools = listed
        .result()
        .and_then(|r| r.get("tools"))
        .and_then(Value::as_array)
        .cloned()
        .ok_or_else(|| {
            AuditError::NotAuditable(format!(
                "tools/list did not answer with tools (HTTP {})",
                listed.status
            ))
        })?;
    let manifest = call_patiently(&client, &caller, GET_MANIFEST, &json!({}))
        .await?
        .into_iter()
        .last()
        .and_then(|ex| ex.tool_ok().cloned())
        .ok_or_else(|| {
            AuditError::NotAuditable(format!("{GET_MANIFEST} did not answer with a manifest"))
        })?;
    let profiles: BTreeSet<String> = manifest
        .get("capabilities")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("profile").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let organizations = crate::context::ids(&manifest, "organization_ids");
    let organization_id = match organization {
        Some(o) if organizations.contains(o) => o.to_owned(),
        Some(_) => {
            return Err(AuditError::NotAuditable(
                "the --organization given is not among the manifest's organization_ids for this caller"
                    .into(),
            ));
        }
        None => organizations
            .into_iter()
            .next()
            .ok_or_else(|| AuditError::NotAuditable("the manifest lists no organization".into()))?,
    };
    let dealer = call_patiently(
        &client,
        &caller,
        DEALER_GET,
        &json!({"organization_id": organization_id}),
    )
    .await?
    .into_iter()
    .last()
    .and_then(|ex| ex.tool_ok().cloned())
    .and_then(|d| serde_json::from_value(d).ok())
    .ok_or_else(|| {
        AuditError::NotAuditable(format!(
            "{DEALER_GET} of {organization_id} did not answer with a DAP dealer organization"
        ))
    })?;
    Ok(Env {
        client,
        caller,
        organization_id,
        dealer,
        tools,
        profiles,
    })
}

/// Ask one question and grade the answer.
async fn ask_and_grade(
    env: &Env,
    grader: &mut Grader<'_>,
    subjects: &subjects::Subjects,
    q: &'static Question,
    budget_tokens: usize,
) -> Result<Graded, ClientError> {
    let wording = match questions::wording(q.id, env, subjects) {
        Ok(w) => w,
        Err(why) => {
            let mut answer = Answer::new(Vec::new());
            answer.text = format!("Not asked: {why}.");
            answer.outcome = Outcome::NotApplicable(why);
            return Ok(Graded {
                question: q,
                wording: String::new(),
                budget_tokens,
                answer,
                checks: Vec::new(),
            });
        }
    };
    let mut session = Session::new(env);
    let answer = questions::ask(q.id, &mut session, subjects).await?;
    let mut checks = match &answer.outcome {
        Outcome::Unanswerable(why) => q
            .dimensions
            .iter()
            .map(|d| Check::judge(*d, "ANSWERED", vec![format!("not answered: {why}")], ""))
            .collect(),
        Outcome::NotApplicable(_) => Vec::new(),
        Outcome::Answered | Outcome::NotComputable => {
            let mut checks = questions::grade(q.id, &answer, grader, subjects).await?;
            checks.extend(grade::common_checks(&answer, budget_tokens));
            checks
        }
    };
    apply_budget_rule(&mut checks);
    Ok(Graded {
        question: q,
        wording,
        budget_tokens,
        answer,
        checks,
    })
}

/// A question whose reads exceed its budget loses every citation-quality
/// point it has (docs/conformance.md "Shopper's audit", token budgets).
fn apply_budget_rule(checks: &mut [Check]) {
    let over = checks
        .iter()
        .any(|c| c.rule == "CIT-WITHIN-BUDGET" && c.verdict == Verdict::Failed);
    if !over {
        return;
    }
    for c in checks
        .iter_mut()
        .filter(|c| c.dimension == Dimension::CitationQuality && c.verdict == Verdict::Passed)
    {
        c.verdict = Verdict::Failed;
        c.detail = format!(
            "lost: the question's reads exceed its token budget ({})",
            c.detail
        );
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_budget_loses_every_citation_point_and_nothing_else() {
        let cit = Dimension::CitationQuality;
        let mut checks = vec![
            Check::judge(cit, "CIT-CITED", Vec::new(), "ok"),
            Check::judge(cit, "CIT-WITHIN-BUDGET", vec!["over".into()], ""),
            Check::judge(
                Dimension::PriceAccuracy,
                "PRC-SUM-CORRECT",
                Vec::new(),
                "ok",
            ),
            Check::na(cit, "CIT-AS-OF-FRESH", "nothing cited"),
        ];
        apply_budget_rule(&mut checks);
        let verdicts: Vec<Verdict> = checks.iter().map(|c| c.verdict).collect();
        assert_eq!(
            verdicts,
            [
                Verdict::Failed,
                Verdict::Failed,
                Verdict::Passed,
                Verdict::NotApplicable
            ]
        );
        let mut within = vec![
            Check::judge(cit, "CIT-CITED", Vec::new(), "ok"),
            Check::judge(cit, "CIT-WITHIN-BUDGET", Vec::new(), "ok"),
        ];
        apply_budget_rule(&mut within);
        assert!(within.iter().all(|c| c.verdict == Verdict::Passed));
    }

    #[test]
    fn bad_arguments_are_usage_errors() {
        let args = |url: &str, budget: Option<usize>| AuditArgs {
            url: url.to_owned(),
            token: None,
            organization: None,
            json: false,
            budget_tokens: budget,
            min_score: None,
            report: None,
        };
        assert!(matches!(
            AuditOptions::from_args(&args("ftp://x/mcp", None)),
            Err(AuditError::Usage(_))
        ));
        assert!(matches!(
            AuditOptions::from_args(&args("http://x/mcp", Some(0))),
            Err(AuditError::Usage(_))
        ));
        assert!(AuditOptions::from_args(&args("http://x/mcp", Some(5))).is_ok());
    }
}
