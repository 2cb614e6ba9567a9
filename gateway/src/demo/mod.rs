//! Deterministic demo data: a dealers file plus one DAP Inventory CSV 0.1
//! feed per rooftop.
//!
//! Two users:
//! - `dealer-gateway demo generate` writes a bundle of any size for scale
//!   tests and benchmarks ([`generate`], [`generate_at`]);
//! - `dealer-gateway serve` loads the bundled demo into an empty store
//!   ([`seed::DemoSeed`]): realistic inventory for the rooftops of
//!   `demo/dealers.yaml` ([`demo_feeds`]) and the programs of
//!   `demo/programs/`, checked as `import inventory` and `import programs`
//!   check them before anything is stored.
//!
//! Everything is derived from the seed with a self-contained SplitMix64
//! generator, so the same options and seed give byte-identical files for the
//! same `now`. Only the timestamps and the model years (which follow the
//! calendar year of `now`) depend on `now`; `observed_at`, `stocked_at` and
//! `first_public_listing_at` are never in the future. Each vehicle draws from
//! its own generator keyed by (seed, index), so a row does not depend on the
//! rows before it, and rows are streamed to the output (100,000 vehicles take
//! well under a second in a release build).
//!
//! The data follows DAP 0.1 section 6 (Inventory CSV 0.1): prices are integer
//! minor units of the rooftop currency, odometers are in the rooftop's unit,
//! an empty cell means unknown, and the JSON cells hold arrays of DAP
//! `dealerCharge` and `conditionalAdjustment` objects, history-report objects,
//! image URLs and feature strings.
//!
//! Every organization, rooftop, address, phone number (555-01xx) and web
//! address (`.example`) is fictional. VINs are well formed (WMI of the real
//! maker, model-year character, valid check digit) but made up, and unique
//! within one generated bundle.
//!
//! Layout (data apart from code, files written with serde):
//! - `data`: the tables (models, makes, colours, cities, ...), no logic;
//! - `random`, `clock`, `vin`: the seeded generator, the one `now`, VINs;
//! - `rooftop`: a rooftop's identity and derived pricing policy;
//! - `cells`: the JSON cells as serde types; `feed`: one CSV feed, written
//!   with the `csv` crate from a serde row;
//! - `plan`, `dealers_file`, `bundle`: the organizations and rooftops of a
//!   generated bundle, its dealers file (serde types written as JSON, which
//!   is YAML 1.2 with every string quoted) and the files on disk;
//! - [`seed`]: the bundled demo loaded by `serve`;
//! - [`refresh`]: keeps the bundled demo within its freshness SLAs while
//!   `serve` runs.

use std::io;
use std::path::PathBuf;

mod bundle;
mod cells;
mod clock;
mod data;
mod dealers_file;
mod feed;
mod plan;
mod random;

/// Bundled demo dealers (2 organizations, 5 rooftops, US and Canada).
pub const DEMO_DEALERS: &str = include_str!("../../../demo/dealers.yaml");

pub mod refresh;
mod rooftop;
pub mod seed;
mod vin;

#[cfg(test)]
mod tests;

pub use bundle::{generate, generate_at};
pub use seed::demo_feeds;

/// Size and seed of a generated bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoOptions {
    /// Vehicles in the whole bundle, spread evenly over the rooftops.
    pub vehicles: usize,
    /// Rooftops (at least 1).
    pub rooftops: usize,
    /// Seed of every random choice.
    pub seed: u64,
}

/// What [`generate`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoSummary {
    pub organizations: usize,
    pub rooftops: usize,
    pub vehicles: usize,
    /// `dealers.yaml` first, then the feeds in rooftop order.
    pub files: Vec<PathBuf>,
}

/// Why a bundle could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("invalid demo options: {0}")]
    InvalidOptions(String),
}

/// The columns of every generated feed, in order: the DAP Inventory CSV 0.1
/// required columns, then the disclosure columns, then the optional ones.
pub const CSV_COLUMNS: [&str; 35] = [
    "organization_id",
    "rooftop_id",
    "vin",
    "stock_number",
    "year",
    "make",
    "model",
    "condition",
    "listing_url",
    "observed_at",
    "advertised_price_minor",
    "currency",
    "required_dealer_charges_json",
    "conditional_adjustments_json",
    "government_charges_status",
    "availability_status",
    "trim",
    "vehicle_type",
    "body_style",
    "exterior_color",
    "interior_color",
    "odometer_value",
    "odometer_unit",
    "stocked_at",
    "first_public_listing_at",
    "history_reports_json",
    "certification_type",
    "image_urls_json",
    "features_json",
    "odometer_status",
    "title_json",
    "inspection_json",
    "reconditioning_json",
    "certification_program",
    "charge_classes_json",
];

/// Most rooftops one bundle may have.
pub const MAX_ROOFTOPS: usize = 100_000;
/// Most vehicles one bundle may have: the number of distinct VINs the
/// generator can derive (33 × 33 × 1,000,000).
pub const MAX_VEHICLES: usize = 1_089_000_000;
