//! Incentive programs from the command line (docs/pricing.md): `import
//! programs` ([`import`]), `programs list` ([`list`]) and `programs
//! withdraw`. Every change goes through the store in one transaction with
//! its whole-set check and its audit event; a refused change is audited
//! too.

use super::{Failure, LOG_TARGET, ProgramsCommand};
use crate::store::{self, Store};

mod import;
mod list;

pub(super) use import::import_programs;

/// Run one `programs` command.
pub(super) async fn run(database_url: &str, what: ProgramsCommand) -> Result<(), Failure> {
    match what {
        ProgramsCommand::List { organization, json } => {
            list::run(database_url, &organization, json).await
        }
        ProgramsCommand::Withdraw {
            organization,
            program_id,
            revision,
            dry_run,
        } => programs_withdraw(database_url, &organization, &program_id, revision, dry_run).await,
    }
}

/// `programs withdraw --organization ORG PROGRAM_ID [--revision N] [--dry-run]`:
/// audited; refused (exit 2, nothing withdrawn, the
/// refusal audited) when the program or revision is not active or the
/// remaining programs would not validate as a set.
async fn programs_withdraw(
    database_url: &str,
    organization: &str,
    program_id: &str,
    revision: Option<u32>,
    dry_run: bool,
) -> Result<(), Failure> {
    let tool = "cli.programs_withdraw";
    // What was asked, as the refusal's resource id: `<id>:<revision>` or the
    // id alone. It comes from the command line, unvalidated: the store
    // records it only if it passes the identifier schema (else `invalid`).
    let asked = vec![match revision {
        Some(r) => format!("{program_id}:{r}"),
        None => program_id.to_owned(),
    }];
    let store = store::open(database_url).await?;
    if store.get_organization(organization).await?.is_none() {
        if !dry_run {
            audit_programs_refusal(
                store.as_ref(),
                organization,
                tool,
                ProgramsRefusal::Refused,
                asked,
            )
            .await;
        }
        return Err(Failure::BadInput(format!(
            "organization {organization} is not in the store; nothing was withdrawn"
        )));
    }
    let summary = change_programs(
        store.as_ref(),
        organization,
        store::ProgramsChange::Withdraw {
            program_id,
            revision,
        },
        tool,
        &asked,
        dry_run,
    )
    .await?;
    println!(
        "{verb} {n} revision(s) of {organization}",
        verb = if dry_run {
            "dry run, nothing written: would withdraw"
        } else {
            "withdrew"
        },
        n = summary.withdrawn.len(),
    );
    print_program_changes(&summary, dry_run);
    Ok(())
}

/// Why a programs change was refused, as the `outcome` of its audit event
/// (docs/pricing.md "Audit").
#[derive(Debug, Clone, Copy)]
enum ProgramsRefusal {
    /// The file could not be read, parsed, schema-checked or validated on
    /// its own (including the per-file amount bound).
    InvalidFile,
    /// The store refused the change: unknown organization, program or
    /// revision, an already withdrawn revision, another document under a
    /// stored (program_id, revision), or a conflict in the resulting set.
    Refused,
}

impl ProgramsRefusal {
    fn outcome(self) -> &'static str {
        match self {
            Self::InvalidFile => "invalid",
            Self::Refused => "refused",
        }
    }
}

/// The audit profile of a programs change (docs/pricing.md "Audit").
const PROGRAMS_PROFILE: &str = "dealergateway.programs/0.1";

/// Who runs the command, as an audit subject: `cli:<user>`, or `cli` when
/// `$USER` is not an identifier.
fn operator_subject() -> String {
    let user = std::env::var("USER").unwrap_or_default();
    if store::audit::is_identifier(&user) {
        format!("cli:{user}")
    } else {
        "cli".to_owned()
    }
}

/// The audit event of a programs change made from the CLI: subject
/// [`operator_subject`], tool `tool`, outcome `ok`, no resource id yet.
fn programs_event(organization: &str, tool: &str) -> store::AuditEvent {
    store::AuditEvent::for_operator(operator_subject(), organization, tool, PROGRAMS_PROFILE)
}

/// Append the audit event of a refused programs change (refused changes
/// leave a trace as accepted ones do; docs/pricing.md "Audit"). It is the only thing a
/// refusal writes, in its own statement after the refused transaction
/// rolled back. Like every event it is bounded by the store
/// ([`store::AuditEvent::bounded`]): an organization or resource id that is
/// not an identifier is recorded as `invalid`, a list past 100 entries is
/// cut. A failed write is logged; the refusal stands either way.
async fn audit_programs_refusal(
    store: &dyn Store,
    organization: &str,
    tool: &str,
    refusal: ProgramsRefusal,
    resource_ids: Vec<String>,
) {
    let event = programs_event(organization, tool)
        .decided("allow", refusal.outcome())
        .with_resource_ids(resource_ids);
    let written = store.append_audit(&event).await;
    crate::store::audit::count_write("event", &written);
    if let Err(e) = written {
        tracing::error!(target: LOG_TARGET, error = %e, tool, "audit write of a refused programs change failed");
    }
}

/// One programs change through the store: the whole-set check
/// ([`crate::offers::check_program_set`]) and the audit event (subject
/// `cli:<user>`, tool `tool`, resource ids `<program_id>:<revision>` of the
/// added and withdrawn revisions) in the change's transaction. A refusal is
/// bad input, audited (outcome `refused`, resource ids `asked`) unless this
/// is a dry run, which writes nothing.
async fn change_programs(
    store: &dyn Store,
    organization: &str,
    change: store::ProgramsChange<'_>,
    tool: &str,
    asked: &[String],
    dry_run: bool,
) -> Result<store::ProgramsImportSummary, Failure> {
    let audit = programs_event(organization, tool);
    match store
        .change_programs(
            organization,
            change,
            &crate::offers::check_program_set,
            Some(&audit),
            dry_run,
        )
        .await
    {
        Ok(summary) => Ok(summary),
        // The store reports every refusal of a change as `Query` (and
        // rolls the transaction back).
        Err(store::StoreError::Query(message)) => {
            if !dry_run {
                audit_programs_refusal(
                    store,
                    organization,
                    tool,
                    ProgramsRefusal::Refused,
                    asked.to_vec(),
                )
                .await;
            }
            Err(Failure::BadInput(message))
        }
        Err(other) => Err(Failure::from(other)),
    }
}

/// The withdrawn and still-withdrawn revisions of a change, one a line.
fn print_program_changes(summary: &store::ProgramsImportSummary, dry_run: bool) {
    for w in &summary.withdrawn {
        println!(
            "  {} {w}",
            if dry_run {
                "would withdraw"
            } else {
                "withdrawn"
            }
        );
    }
    for w in &summary.still_withdrawn {
        println!(
            "  {w} was withdrawn earlier and stays withdrawn (publish a new revision to offer it again)"
        );
    }
}
