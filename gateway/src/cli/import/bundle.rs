//! `import bundle DIR`: a bundle's dealers.yaml, then every
//! inventory/*.csv in it, each file all or nothing, one summary at the end.

use std::path::Path;

use super::changes::JsonOut;
use super::dealers::{dealers_import, dealers_json, dealers_line};
use super::inventory::{FeedJob, ImportSettings, import_feed};
use super::passes::FileTrack;
use crate::Error;
use crate::cli::{Failure, failure_text};
use crate::ingest::{self, FeedFormat};
use crate::progress::{Progress, ProgressMode, Unit};
use crate::store;

/// `import bundle DIR [--dry-run] [--json] [--allow-removals |
/// --max-removal-percent N]`.
pub(super) async fn import_bundle(
    database_url: &str,
    dir: &Path,
    settings: ImportSettings,
    mode: ProgressMode,
) -> Result<(), Failure> {
    let shown = dir.display().to_string();
    let dealers_file = dir.join("dealers.yaml");
    if !dealers_file.is_file() {
        return Err(Failure::BadInput(format!(
            "{shown}: a bundle needs dealers.yaml (and inventory/*.csv); nothing was imported"
        )));
    }
    let mut json = settings.json.then(JsonOut::default);
    if let Some(out) = json.as_mut() {
        out.raw("{\"command\":\"import bundle\",\"bundle\":");
        out.value(&serde_json::json!(shown));
        out.raw(&format!(",\"dry_run\":{},\"dealers\":", settings.dry_run));
    }
    let dealers_name = dealers_file.display().to_string();
    let organizations = match dealers_import(database_url, &dealers_file, settings.dry_run).await {
        Ok((records, summary)) => {
            let line = dealers_line(&dealers_name, &records, &summary, settings.dry_run);
            match json.as_mut() {
                Some(out) => {
                    let mut dealers = dealers_json(&dealers_name, &records, &summary);
                    dealers["outcome"] = if settings.dry_run {
                        "planned"
                    } else {
                        "imported"
                    }
                    .into();
                    out.value(&dealers);
                }
                None => println!("{line}"),
            }
            records
        }
        Err(failure) => {
            // A bad dealers file stops everything; the document says so.
            if let Some(mut out) = json {
                let outcome = match &failure {
                    Failure::BadInput(_) | Failure::Gateway(Error::OperatorFile(_)) => "invalid",
                    Failure::Gateway(Error::Store(store::StoreError::Query(_))) => "refused",
                    Failure::Gateway(_) | Failure::Findings => "failed",
                };
                out.value(&serde_json::json!({
                    "file": dealers_name,
                    "outcome": outcome,
                    "reason": failure_text(&failure),
                }));
                out.raw(",\"files\":[],\"files_with_problems\":[],\"outcome\":");
                out.value(&serde_json::json!(outcome));
                out.raw("}");
                out.finish()
                    .map_err(|e| Error::Io(format!("cannot write to stdout: {e}")))?;
            }
            return Err(failure);
        }
    };
    let inventory_dir = dir.join("inventory");
    let mut files: Vec<std::path::PathBuf> = match std::fs::read_dir(&inventory_dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            return Err(Error::Io(format!("{}: cannot list: {e}", inventory_dir.display())).into());
        }
    };
    files.sort();
    // The overall bar (docs/operations.md "Progress of imports"): every byte of every feed, twice
    // (checked, then written); see `FileTrack`.
    let sizes: Vec<u64> = files
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .collect();
    let progress = Progress::new(
        mode,
        format!("import bundle {shown}"),
        Unit::Bytes,
        sizes.iter().sum::<u64>().saturating_mul(2),
    );
    let store = store::open(database_url).await?;
    if let Some(out) = json.as_mut() {
        out.raw(",\"files\":[");
    }
    let mut lines = Vec::new();
    let mut failed = Vec::new();
    let mut vehicles = 0usize;
    let mut base = 0u64;
    let mut result = Ok(());
    for (index, (path, &size)) in files.iter().zip(&sizes).enumerate() {
        let name = path.display().to_string();
        let track = FileTrack {
            progress: progress.clone(),
            base,
            bytes: size,
            what: format!("file {} of {} {name}", index + 1, files.len()),
        };
        base += size.saturating_mul(2);
        progress.set_position(track.base);
        // Three reads of the file, none holding it (docs/benchmarks.md "Feed import memory"): its
        // organization, then check, then write.
        let opened = std::fs::File::open(path)
            .map(std::io::BufReader::new)
            .map_err(|e| Error::Io(format!("{name}: cannot read: {e}")));
        let opened = match opened {
            Ok(o) => o,
            Err(e) => {
                result = Err(e.into());
                break;
            }
        };
        let named = ingest::dap_csv::organization_of(opened);
        let org = match &named {
            Err(rule) => Err(format!(
                "cannot tell the organization: {rule}; nothing was imported from this file"
            )),
            Ok(id) => match organizations.iter().find(|o| &o.organization_id == id) {
                Some(o) => Ok(o.clone()),
                None => match store.get_organization(id).await {
                    Ok(Some(o)) => Ok(o),
                    Ok(None) => Err("its organization_id names no organization of the bundle's \
                                     dealers.yaml or the store; nothing was imported from this \
                                     file"
                        .to_owned()),
                    Err(e) => {
                        result = Err(e.into());
                        break;
                    }
                },
            },
        };
        let planned_rooftops = org
            .as_ref()
            .ok()
            .filter(|_| settings.dry_run)
            .map(|o| o.rooftops.iter().map(|r| r.rooftop_id.clone()).collect())
            .unwrap_or_default();
        let job = FeedJob {
            path,
            name: name.clone(),
            format: Ok(FeedFormat::DapCsv),
            organization: named.as_deref().ok(),
            org,
            rooftop: None,
            planned_rooftops,
        };
        if let Some(out) = json.as_mut() {
            out.raw(if index == 0 { "{" } else { ",{" });
        }
        match import_feed(store.as_ref(), &job, settings, &track, json.as_mut()).await {
            Ok(report) => {
                vehicles += report.vehicles;
                lines.extend(report.lines);
                if let Some(report) = report.refused {
                    progress.println(&report);
                    failed.push(name);
                }
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    progress.finish();
    store.close().await;
    let verb = if settings.dry_run {
        "valid"
    } else {
        "imported"
    };
    if let Some(mut out) = json {
        out.raw("],\"files_with_problems\":");
        out.value(&serde_json::json!(failed));
        let outcome = match (&result, failed.is_empty(), settings.dry_run) {
            (Err(_), _, _) => "failed",
            (Ok(()), true, true) => "planned",
            (Ok(()), true, false) => "imported",
            (Ok(()), false, _) => "partial",
        };
        out.raw(",\"outcome\":");
        out.value(&serde_json::json!(outcome));
        out.raw("}");
        out.finish()
            .map_err(|e| Error::Io(format!("cannot write to stdout: {e}")))?;
    } else if result.is_ok() {
        for line in &lines {
            println!("{line}");
        }
        println!(
            "bundle {shown}{dry}: {ok} of {all} inventory file(s) {verb}, {vehicles} vehicle(s); {bad} file(s) with problems",
            dry = if settings.dry_run {
                " (dry run, nothing written)"
            } else {
                ""
            },
            ok = files.len() - failed.len(),
            all = files.len(),
            bad = failed.len(),
        );
    }
    result?;
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Failure::BadInput(format!(
            "{} inventory file(s) had problems and were not imported: {}",
            failed.len(),
            failed.join(", ")
        )))
    }
}
