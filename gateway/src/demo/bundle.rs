//! `dealer-gateway demo generate`: write a bundle of any size for scale
//! tests and benchmarks, `DIR/dealers.yaml` plus one DAP Inventory CSV 0.1
//! feed per rooftop in `DIR/inventory/<rooftop_id>.csv` (the layout
//! `dealer-gateway import bundle` reads).

use std::fs::{self, File};
use std::io::BufWriter;
use std::path::Path;

use chrono::{DateTime, Utc};

use super::clock::Clock;
use super::feed::FeedJob;
use super::plan::BenchPlan;
use super::vin::VinSpace;
use super::{DemoError, DemoOptions, DemoSummary, MAX_ROOFTOPS, MAX_VEHICLES, dealers_file};

/// Write `DIR/dealers.yaml` and `DIR/inventory/<rooftop_id>.csv`.
/// Deterministic for (options, seed) except timestamps, which are relative
/// to the current time. Existing files of the same names are overwritten.
pub fn generate(options: &DemoOptions, out_dir: &Path) -> Result<DemoSummary, DemoError> {
    generate_at(options, out_dir, Utc::now())
}

/// [`generate`] with an explicit `now` (timestamps and model years follow it).
pub fn generate_at(
    options: &DemoOptions,
    out_dir: &Path,
    now: DateTime<Utc>,
) -> Result<DemoSummary, DemoError> {
    if options.rooftops == 0 {
        return Err(DemoError::InvalidOptions(
            "at least 1 rooftop is needed".into(),
        ));
    }
    if options.rooftops > MAX_ROOFTOPS {
        return Err(DemoError::InvalidOptions(format!(
            "at most {MAX_ROOFTOPS} rooftops"
        )));
    }
    if options.vehicles > MAX_VEHICLES {
        return Err(DemoError::InvalidOptions(format!(
            "at most {MAX_VEHICLES} vehicles"
        )));
    }
    let clock = Clock::new(now);
    let plan = BenchPlan::new(options, clock.year);

    let inventory_dir = out_dir.join("inventory");
    fs::create_dir_all(&inventory_dir).map_err(|source| DemoError::Io {
        path: inventory_dir.clone(),
        source,
    })?;
    let mut files = Vec::with_capacity(options.rooftops + 1);

    let dealers_path = out_dir.join("dealers.yaml");
    File::create(&dealers_path)
        .map(|file| BufWriter::with_capacity(1 << 16, file))
        .and_then(|out| dealers_file::write(&plan, out))
        .and_then(|out| out.into_inner().map_err(|e| e.into_error()))
        .map_err(|source| DemoError::Io {
            path: dealers_path.clone(),
            source,
        })?;
    files.push(dealers_path);

    let vins = VinSpace::new(options.seed);
    let per_rooftop = options.vehicles / options.rooftops;
    let remainder = options.vehicles % options.rooftops;
    let mut first_index = 0u64;
    for (i, rooftop) in plan.rooftops.iter().enumerate() {
        let count = per_rooftop + usize::from(i < remainder);
        let path = inventory_dir.join(format!("{}.csv", rooftop.feed.id.rooftop_id));
        let feed = FeedJob {
            roof: &rooftop.feed,
            vins: &vins,
            seed: options.seed,
            first_index,
            count,
            clock: &clock,
            overrides: &[],
        };
        // The csv writer buffers 64 KiB itself: the file needs no BufWriter.
        File::create(&path)
            .and_then(|file| feed.write(file))
            .map_err(|source| DemoError::Io {
                path: path.clone(),
                source,
            })?;
        first_index += count as u64;
        files.push(path);
    }
    Ok(DemoSummary {
        organizations: plan.organizations.len(),
        rooftops: options.rooftops,
        vehicles: options.vehicles,
        files,
    })
}
