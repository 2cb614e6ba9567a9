//! `dap-conformance run | audit | claim | verify | keygen | jwks`.
//!
//! Exit codes of `run`: 0 when no required check failed, 1 when one did,
//! 2 on usage or connection errors. Of `audit`: 0 when the audit ran
//! (whatever the score), 1 when `--min-score` is not reached, 2 when it
//! could not run.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use conformance::audit::{AuditArgs, AuditError, AuditOptions, run_audit};
use conformance::claim::{
    ClaimArgs, JwksArgs, KeygenArgs, VerifyArgs, cmd_claim, cmd_jwks, cmd_keygen, cmd_verify,
};
use conformance::run::{RunArgs, RunError, RunOptions, run_suite};

#[derive(Debug, Parser)]
#[command(
    name = "dap-conformance",
    version,
    about = "Black-box Dealer Agent Protocol 0.1 conformance suite and signed conformance claims"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the suite against a gateway's MCP endpoint.
    Run(RunCommand),
    /// Ask twenty shopper questions through a scripted agent and grade the
    /// answers on DAP's six-dimension answer-audit rubric (score 0-100).
    Audit(AuditArgs),
    /// Run the whole suite and, when every required check passed, issue a signed claim.
    Claim(Box<ClaimArgs>),
    /// Verify a signed claim (signature, schema, expiry, live match).
    Verify(VerifyArgs),
    /// Make a P-256 signing key.
    Keygen(KeygenArgs),
    /// Print the JWKS of a signing key.
    Jwks(JwksArgs),
}

/// `run`'s arguments: the shared [`RunArgs`] plus what only `run` takes.
#[derive(Debug, clap::Args)]
struct RunCommand {
    #[command(flatten)]
    run: RunArgs,
    /// A browser origin the gateway is configured to allow (e.g.
    /// https://agent.example.com), for the CORS check DAPC-MCP-012
    /// (skipped without it).
    #[arg(long, value_name = "ORIGIN")]
    origin: Option<String>,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // Help and version are not errors.
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("dap-conformance: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let code = runtime.block_on(async {
        match &cli.command {
            Command::Run(args) => cmd_run(args).await,
            Command::Audit(args) => cmd_audit(args).await,
            Command::Claim(args) => cmd_claim(args).await,
            Command::Verify(args) => cmd_verify(args).await,
            Command::Keygen(args) => cmd_keygen(args),
            Command::Jwks(args) => cmd_jwks(args),
        }
    });
    ExitCode::from(u8::try_from(code).unwrap_or(2))
}

async fn cmd_run(cmd: &RunCommand) -> i32 {
    let args = &cmd.run;
    let result = async {
        let mut opts = RunOptions::from_args(args)?;
        opts.origin.clone_from(&cmd.origin);
        run_suite(&opts).await
    }
    .await;
    let output = match result {
        Ok(output) => output,
        Err(e) => {
            eprintln!("dap-conformance: {e}");
            return match e {
                RunError::Usage(_)
                | RunError::Connection(_)
                | RunError::Schemas(_)
                | RunError::Encode(_) => 2,
            };
        }
    };
    if let Some(path) = &args.report
        && let Err(e) = std::fs::write(path, &output.report_bytes)
    {
        eprintln!("dap-conformance: cannot write {}: {e}", path.display());
        return 2;
    }
    if output.failed_required == 0 { 0 } else { 1 }
}

async fn cmd_audit(args: &AuditArgs) -> i32 {
    let result = async {
        let opts = AuditOptions::from_args(args)?;
        run_audit(&opts).await
    }
    .await;
    let output = match result {
        Ok(output) => output,
        Err(e) => {
            eprintln!("dap-conformance audit: {e}");
            return match e {
                AuditError::Usage(_)
                | AuditError::Connection(_)
                | AuditError::NotAuditable(_)
                | AuditError::Encode(_) => 2,
            };
        }
    };
    if let Some(path) = &args.report
        && let Err(e) = std::fs::write(path, &output.report_bytes)
    {
        eprintln!(
            "dap-conformance audit: cannot write {}: {e}",
            path.display()
        );
        return 2;
    }
    if args.json {
        print!("{}", String::from_utf8_lossy(&output.report_bytes));
    } else {
        print!("{}", output.table);
    }
    match args.min_score {
        Some(min) if output.score_hundredths < u64::from(min) * 100 => {
            eprintln!("dap-conformance audit: the weighted score is below --min-score {min}");
            1
        }
        _ => 0,
    }
}
