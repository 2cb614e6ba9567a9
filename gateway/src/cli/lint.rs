//! `lint rooftop` and `lint feed` (docs/lint.md, docs/operations.md
//! "Importing inventory"): the disclosure lint of a rooftop's newest
//! snapshot, or of a feed before it is imported, with the rooftop's stored
//! settings and the disclosure tool's own builder
//! ([`crate::lint::rooftop::document`]).
//!
//! Exit codes: 1 when any confirmed rule fails on any vehicle (an
//! unconfirmed rule never fails on its own), 0 otherwise (which includes
//! `cannot_determine`: nothing is claimed to pass), 2 on bad input (an
//! unknown organization or rooftop, a bad `--jurisdiction`, a feed with
//! import problems, reported with them).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use chrono::{DateTime, Utc};
use pricing::lint::{Facts, Report};
use serde_json::{Value, json};

use super::{Failure, LintArgs, LintCommand};
use crate::domain::dealer::{OrganizationRecord, RooftopRecord};
use crate::domain::vehicle::VehicleRecord;
use crate::ingest::{FeedFormat, IngestContext, IngestError};
use crate::lint::rooftop::{self as roof, RooftopLint};
use crate::store::{PriceHistory, Store};

/// Failing vehicles printed per rule; the rest are counted ("and K more").
pub const LISTED: usize = 10;

pub(super) async fn run(db: &str, what: LintCommand) -> Result<(), Failure> {
    let (args, feed) = match &what {
        LintCommand::Rooftop { args } => (args, None),
        LintCommand::Feed { file, args, format } => (args, Some((file.as_path(), *format))),
    };
    let jurisdiction = match &args.jurisdiction {
        None => None,
        Some(text) => Some(roof::jurisdiction_of(
            &crate::lint::parse_place(text).ok_or_else(|| {
                Failure::BadInput(
                    "--jurisdiction must be an ISO 3166 code such as US-CA, CA-ON, DE or GB"
                        .to_owned(),
                )
            })?,
        )),
    };
    let store = crate::store::open(db).await?;
    let result = lint(store.as_ref(), args, feed, jurisdiction.as_ref()).await;
    store.close().await;
    let (lint, vehicles) = result?;
    if args.json {
        let doc = json!({
            "organization_id": args.organization,
            "rooftop_id": args.rooftop,
            "notice": crate::lint::NOTICE,
            "summary": lint,
            "vehicles": vehicles,
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        print!("{}", summary(&args.organization, &args.rooftop, &lint));
    }
    if lint.any_confirmed_failure() {
        Err(Failure::Findings)
    } else {
        Ok(())
    }
}

/// The organization and rooftop as stored, or the bad-input failure.
async fn rooftop_of(
    store: &dyn Store,
    args: &LintArgs,
) -> Result<(OrganizationRecord, usize), Failure> {
    let org = store
        .get_organization(&args.organization)
        .await?
        .ok_or_else(|| {
            Failure::BadInput(format!(
                "organization {} is not in the store: import its dealers file first",
                args.organization
            ))
        })?;
    let at = org
        .rooftops
        .iter()
        .position(|r| r.rooftop_id == args.rooftop)
        .ok_or_else(|| {
            Failure::BadInput(format!(
                "rooftop {} is not a rooftop of {}",
                args.rooftop, args.organization
            ))
        })?;
    Ok((org, at))
}

/// The price histories the reduction rules read, of the vehicles that
/// announce one (none for the others: [`crate::lint::history`]).
async fn histories<'a>(
    store: &dyn Store,
    records: impl Iterator<Item = &'a VehicleRecord>,
    now: DateTime<Utc>,
) -> Result<BTreeMap<String, PriceHistory>, Failure> {
    let mut out = BTreeMap::new();
    for record in records {
        if let Some(h) = crate::lint::history(store, record, now).await? {
            out.insert(record.vehicle_id.clone(), h);
        }
    }
    Ok(out)
}

fn vehicle_json(record: &VehicleRecord, facts: &Facts, report: &Report) -> Value {
    json!({
        "vehicle_id": record.vehicle_id,
        "stock_number": record.stock_number,
        "vin": record.vin,
        "report": report,
        "facts": facts,
    })
}

async fn lint(
    store: &dyn Store,
    args: &LintArgs,
    feed: Option<(&Path, Option<crate::cli::FeedFormatArg>)>,
    jurisdiction: Option<&Value>,
) -> Result<(RooftopLint, Vec<Value>), Failure> {
    let (org, at) = rooftop_of(store, args).await?;
    let rooftop: &RooftopRecord = &org.rooftops[at];
    let now = Utc::now();
    let (records, version) = match feed {
        None => {
            let snapshot = store
                .latest_snapshots()
                .await?
                .into_iter()
                .find(|s| s.organization_id == args.organization && s.rooftop_id == args.rooftop)
                .ok_or_else(|| {
                    Failure::BadInput(format!(
                        "rooftop {} has no imported inventory: lint a feed with `lint feed FILE`",
                        args.rooftop
                    ))
                })?;
            (
                store.snapshot_vehicles(&snapshot.snapshot_id).await?,
                snapshot.version,
            )
        }
        Some((file, format)) => (read_feed(file, format, &org, &args.rooftop, now)?, 0),
    };
    let histories = histories(store, records.iter(), now).await?;
    let at = roof::Rooftop {
        organization: &org,
        rooftop,
        snapshot_version: version,
        jurisdiction,
        now,
    };
    let mut vehicles = Vec::new();
    let keep = args.json;
    let lint = roof::rooftop(
        &at,
        records.into_iter(),
        &histories,
        LISTED,
        |record, facts, report| {
            if keep {
                vehicles.push(vehicle_json(record, facts, report));
            }
        },
    );
    Ok((lint, vehicles))
}

/// The vehicles of `file` for `rooftop`, read and checked by the import's
/// own parser (every rule of `import inventory`); nothing is written.
fn read_feed(
    file: &Path,
    format: Option<crate::cli::FeedFormatArg>,
    org: &OrganizationRecord,
    rooftop: &str,
    now: DateTime<Utc>,
) -> Result<Vec<VehicleRecord>, Failure> {
    let name = file.display().to_string();
    let format = match format {
        Some(f) => FeedFormat::from(f),
        None => FeedFormat::from_file_name(&name).ok_or_else(|| {
            Failure::BadInput(
                "cannot tell the format from the file name (.csv is dap-csv, .json is json); \
                 give --format dap-csv|dealer-com-csv|json"
                    .to_owned(),
            )
        })?,
    };
    let opened = std::fs::File::open(file)
        .map_err(|e| Failure::BadInput(format!("{name}: cannot read: {e}")))?;
    let total = opened.metadata().map(|m| m.len()).unwrap_or(0);
    let ctx = IngestContext::for_organization(org, Some(rooftop), now);
    let parsed = crate::ingest::parse_feed_reader(
        format,
        &name,
        std::io::BufReader::new(opened),
        total,
        &ctx,
        &mut |_| {},
    )
    .map_err(lint_ingest_error)?;
    Ok(parsed
        .rooftops
        .into_iter()
        .filter(|r| r.rooftop_id == rooftop)
        .flat_map(|r| r.vehicles)
        .collect())
}

/// An import problem report, said for a lint: the same problems; nothing
/// is ever imported by `lint`.
fn lint_ingest_error(e: IngestError) -> Failure {
    match Failure::from_ingest(e) {
        Failure::BadInput(report) => Failure::BadInput(format!(
            "{report}The feed cannot be linted until it would import: fix these problems first.\n"
        )),
        other => other,
    }
}

/// The text report: the totals, one entry per rule (confirmed failures
/// first), then the failing vehicles of each failing rule, bounded.
pub fn summary(organization: &str, rooftop: &str, lint: &RooftopLint) -> String {
    let mut out = String::new();
    let place = lint.place.as_ref().map_or("-".to_owned(), |p| {
        p.subdivision.clone().unwrap_or_else(|| p.country.clone())
    });
    let _ = writeln!(
        out,
        "Disclosure lint of {organization}/{rooftop} for a buyer in {place} (catalogue {}): {} vehicles, {} fail a confirmed rule, {} cannot be determined.",
        if lint.catalogue_version.is_empty() {
            "-"
        } else {
            &lint.catalogue_version
        },
        lint.vehicles,
        lint.failing_vehicles,
        lint.undetermined_vehicles
    );
    let _ = writeln!(out, "{}", crate::lint::NOTICE);
    if lint.vehicles > 0 && lint.rules.is_empty() {
        let _ = writeln!(
            out,
            "No rule of the catalogue applies at {place}: nothing was checked, which is not a pass."
        );
    }
    if !lint.rules.is_empty() {
        let _ = writeln!(out, "\n== Rules ==");
    }
    for r in &lint.rules {
        let word = if r.confirmed_failure() {
            "FAIL"
        } else if r.failing > 0 {
            "fail (unconfirmed)"
        } else if r.cannot_determine > 0 {
            "cannot determine"
        } else {
            "pass"
        };
        let _ = writeln!(
            out,
            "{word:<18} {}  {} fail, {} cannot determine, {} pass  [{}]",
            r.rule_id, r.failing, r.cannot_determine, r.passing, r.citation
        );
        if r.failing + r.cannot_determine > 0
            && let Some(fix) = &r.fix
        {
            let _ = writeln!(out, "{:<18} fix: {fix}", "");
        }
    }
    let failing: Vec<_> = lint.rules.iter().filter(|r| r.failing > 0).collect();
    if !failing.is_empty() {
        let _ = writeln!(out, "\n== Failing vehicles ==");
    }
    for r in failing {
        let _ = writeln!(
            out,
            "{}{}:",
            r.rule_id,
            if r.confirmed { "" } else { " (unconfirmed)" }
        );
        for e in &r.failing_examples {
            let _ = writeln!(
                out,
                "  stock {}  VIN {}  {}",
                e.vehicle.stock_number.as_deref().unwrap_or("-"),
                e.vehicle.vin.as_deref().unwrap_or("-"),
                e.reason
            );
        }
        if r.failing > r.failing_examples.len() {
            let _ = writeln!(out, "  and {} more", r.failing - r.failing_examples.len());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::rooftop::{Example, RuleSummary, VehicleRef};

    fn rule(id: &str, confirmed: bool, failing: usize, listed: usize) -> RuleSummary {
        RuleSummary {
            rule_id: id.into(),
            citation: format!("cite {id}"),
            confirmed,
            statement: None,
            fix: Some(format!("fix {id}")),
            failing,
            cannot_determine: 1,
            passing: 2,
            failing_examples: (0..listed)
                .map(|n| Example {
                    vehicle: VehicleRef {
                        vehicle_id: format!("v{n}"),
                        stock_number: Some(format!("S{n}")),
                        vin: None,
                    },
                    reason: format!("reason {n}"),
                })
                .collect(),
            undetermined_examples: vec![],
        }
    }

    #[test]
    fn the_summary_lists_rules_then_bounded_failing_vehicles() {
        let lint = RooftopLint {
            place: Some(pricing::lint::Place {
                country: "CA".into(),
                subdivision: Some("CA-ON".into()),
            }),
            catalogue_version: "2026-12-01".into(),
            vehicles: 15,
            failing_vehicles: 12,
            undetermined_vehicles: 1,
            rules: vec![rule("ON-ALL-IN", true, 12, 10), rule("U", false, 1, 1)],
        };
        let text = summary("org.a", "roof.a", &lint);
        assert!(text.contains("org.a/roof.a for a buyer in CA-ON"), "{text}");
        assert!(
            text.contains("15 vehicles, 12 fail a confirmed rule"),
            "{text}"
        );
        assert!(text.contains(crate::lint::NOTICE), "{text}");
        assert!(
            text.contains("FAIL               ON-ALL-IN  12 fail, 1 cannot determine, 2 pass  [cite ON-ALL-IN]"),
            "{text}"
        );
        assert!(text.contains("fix: fix ON-ALL-IN"), "{text}");
        assert!(text.contains("fail (unconfirmed) U"), "{text}");
        assert!(text.contains("  stock S0  VIN -  reason 0"), "{text}");
        assert!(text.contains("  and 2 more"), "{text}");
        assert!(text.contains("U (unconfirmed):"), "{text}");
        assert!(lint.any_confirmed_failure());
    }

    #[test]
    fn nothing_applicable_is_said_not_passed() {
        let lint = RooftopLint {
            place: Some(pricing::lint::Place {
                country: "FR".into(),
                subdivision: None,
            }),
            vehicles: 3,
            undetermined_vehicles: 3,
            ..RooftopLint::default()
        };
        let text = summary("o", "r", &lint);
        assert!(
            text.contains("nothing was checked, which is not a pass"),
            "{text}"
        );
        assert!(!lint.any_confirmed_failure());
    }
}
