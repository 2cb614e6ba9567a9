//! `demo generate`: a fictional, reproducible demo bundle, with progress.

use std::path::Path;

use super::{DemoCommand, Failure};
use crate::Error;
use crate::progress::{Progress, ProgressMode, Unit};

/// Run one `demo` command.
pub(super) fn run(what: DemoCommand, mode: ProgressMode) -> Result<(), Failure> {
    match what {
        DemoCommand::Generate {
            vehicles,
            rooftops,
            seed,
            out,
        } => demo_generate(vehicles, rooftops, seed, &out, mode),
    }
}

/// `demo generate --vehicles N --rooftops M --seed S --out DIR`, with
/// progress in rows.
fn demo_generate(
    vehicles: usize,
    rooftops: usize,
    seed: u64,
    out: &Path,
    mode: ProgressMode,
) -> Result<(), Failure> {
    let options = crate::demo::DemoOptions {
        vehicles,
        rooftops,
        seed,
    };
    let progress = Progress::new(
        mode,
        format!("demo generate {}", out.display()),
        Unit::Rows,
        vehicles as u64,
    );
    // `demo::generate` has no progress hook (gateway/src/demo is not this
    // command's module), so the rows are counted where they land: the
    // feeds it writes, followed as they grow.
    let generated = std::thread::scope(|scope| {
        let worker = scope.spawn(|| crate::demo::generate(&options, out));
        let mut watch = FeedWatch::new(&out.join("inventory"));
        while !worker.is_finished() {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let rows = watch.rows();
            progress.set_position(rows);
            progress.set_message(format!("feed {} of {rooftops}", watch.files().max(1)));
        }
        worker.join()
    });
    let summary = generated
        .map_err(|_| {
            Failure::Gateway(Error::Io(
                "the demo generator thread failed; the bundle may be incomplete".into(),
            ))
        })?
        .map_err(|e| match e {
            crate::demo::DemoError::InvalidOptions(_) => Failure::BadInput(e.to_string()),
            crate::demo::DemoError::Io { .. } => Failure::Gateway(Error::Io(e.to_string())),
        })?;
    progress.finish();
    println!(
        "generated {}: {} organization(s), {} rooftop(s), {} vehicle(s) in {} file(s); \
         load it with: dealer-gateway import bundle {}",
        out.display(),
        summary.organizations,
        summary.rooftops,
        summary.vehicles,
        summary.files.len(),
        out.display()
    );
    Ok(())
}

/// The CSV feeds `demo generate` is writing, read as they grow to count
/// their data rows (lines after each header). A file last modified before
/// the command started is a previous run's and not counted; a file that
/// shrinks was re-created and is counted again from its start.
struct FeedWatch {
    dir: std::path::PathBuf,
    since: std::time::SystemTime,
    /// Per file: bytes read so far and the newlines among them.
    seen: std::collections::BTreeMap<std::path::PathBuf, (u64, u64)>,
}

impl FeedWatch {
    fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            // Filesystem clocks are coarser than ours.
            since: std::time::SystemTime::now() - std::time::Duration::from_secs(1),
            seen: std::collections::BTreeMap::new(),
        }
    }

    fn files(&self) -> usize {
        self.seen.values().filter(|(bytes, _)| *bytes > 0).count()
    }

    /// Data rows written so far (what is readable now).
    fn rows(&mut self) -> u64 {
        use std::io::{Read as _, Seek as _};
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "csv") {
                continue;
            }
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.modified().is_ok_and(|m| m < self.since) {
                continue;
            }
            let (offset, lines) = self.seen.entry(path.clone()).or_insert((0, 0));
            if meta.len() < *offset {
                (*offset, *lines) = (0, 0);
            }
            let Ok(mut file) = std::fs::File::open(&path) else {
                continue;
            };
            if file.seek(std::io::SeekFrom::Start(*offset)).is_err() {
                continue;
            }
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n) = file.read(&mut buf) {
                if n == 0 {
                    break;
                }
                *offset += n as u64;
                *lines += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
            }
        }
        self.seen
            .values()
            .map(|(_, lines)| lines.saturating_sub(1))
            .sum()
    }
}
