//! Deterministic demo data: a dealers file plus one DAP Inventory CSV 0.1
//! feed per rooftop.
//!
//! Two users:
//! - `dealer-gateway demo generate` writes a bundle of any size for scale
//!   tests and benchmarks ([`generate`], [`generate_at`]);
//! - `dealer-gateway serve` gives the bundled demo's rooftops realistic
//!   inventory when the store is empty ([`demo_feeds`]).
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

use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Datelike, Duration, SecondsFormat, Utc};

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
pub const CSV_COLUMNS: [&str; 29] = [
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
];

/// Most rooftops one bundle may have.
pub const MAX_ROOFTOPS: usize = 100_000;
/// Most vehicles one bundle may have: the number of distinct VINs the
/// generator can derive (33 × 33 × 1,000,000).
pub const MAX_VEHICLES: usize = 1_089_000_000;

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
    fs::write(&dealers_path, plan.dealers_yaml()).map_err(|source| DemoError::Io {
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
        let io_error = |source| DemoError::Io {
            path: path.clone(),
            source,
        };
        let file = File::create(&path).map_err(io_error)?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        let feed = FeedJob {
            roof: &rooftop.feed,
            vins: &vins,
            seed: options.seed,
            first_index,
            count,
            clock: &clock,
            overrides: &[],
        };
        feed.write(&mut out).map_err(io_error)?;
        out.flush().map_err(io_error)?;
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

/// In-memory feeds for the bundled demo (the organizations/rooftops of
/// `demo/dealers.yaml`, passed in as `(organization_id, rooftop_id, currency,
/// odometer_unit)` tuples): returns `(file_name, csv_bytes)` per rooftop,
/// with `file_name` = `<rooftop_id>.csv`.
///
/// Each rooftop gets 60–120 vehicles, new (of its franchise make) and used;
/// 2–3 with `observed_at` 3–20 hours old so they show as stale; at least one
/// each `in_transit`, `reserved` and `unavailable` (sold); at least one used
/// unit with an unknown (empty) odometer and one with unknown history.
/// Fresh rows were observed 1–15 minutes before `now`; no timestamp of a
/// row is in the future.
pub fn demo_feeds(
    rooftops: &[(String, String, String, String)],
    seed: u64,
    now: DateTime<Utc>,
) -> Vec<(String, Vec<u8>)> {
    let clock = Clock::new(now);
    let vins = VinSpace::new(seed);
    let mut first_index = 0u64;
    let mut feeds = Vec::with_capacity(rooftops.len());
    for (i, (organization_id, rooftop_id, currency, unit)) in rooftops.iter().enumerate() {
        let mut rng = Rng::new(mix(seed ^ 0x0DE3_0F33_D5A1_7E11) ^ mix(i as u64 + 1));
        let known = KNOWN_DEMO_ROOFTOPS
            .iter()
            .find(|k| k.rooftop_id == rooftop_id.as_str());
        let hash = fnv1a(rooftop_id.as_bytes());
        let franchise = known.map_or_else(
            || FRANCHISE_MAKES[(hash % FRANCHISE_MAKES.len() as u64) as usize],
            |k| k.make,
        );
        let host = known.map_or_else(|| slug_host(rooftop_id), |k| k.host.to_owned());
        let country = match currency.as_str() {
            "USD" => Some("US"),
            "CAD" => Some("CA"),
            _ => None,
        };
        let roof = FeedRooftop::new(
            RooftopIdentity {
                organization_id: organization_id.clone(),
                rooftop_id: rooftop_id.clone(),
                currency: currency.clone(),
                unit: if unit == "km" { Unit::Km } else { Unit::Mi },
                country,
                subdivision: known.map(|k| k.subdivision.to_owned()),
                host,
                franchise,
                stale_per_mille: 0,
            },
            &mut rng,
            clock.year,
        );
        let count = 60 + rng.below(61) as usize;
        let overrides = demo_overrides(&mut rng, count);
        let feed = FeedJob {
            roof: &roof,
            vins: &vins,
            seed,
            first_index,
            count,
            clock: &clock,
            overrides: &overrides,
        };
        let mut bytes = Vec::with_capacity(count * 1600);
        feed.write(&mut bytes)
            .expect("writing to a Vec<u8> cannot fail");
        first_index += count as u64;
        feeds.push((format!("{rooftop_id}.csv"), bytes));
    }
    feeds
}

// ---------------------------------------------------------------------------
// Randomness

/// SplitMix64 finalizer: a bijective 64-bit mix.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast, good enough for data.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// Uniform in `0..n` (`n` > 0), by multiply-shift.
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }

    /// True with probability `per_mille`/1000.
    fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    fn pick_str(&mut self, items: &[&'static str]) -> &'static str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// FNV-1a, for stable choices keyed by a string.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h = 0xCBF2_9CE4_8422_2325u64;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01B3);
    }
    h
}

// ---------------------------------------------------------------------------
// Time

/// `now` truncated to whole seconds, and its calendar year.
struct Clock {
    now: DateTime<Utc>,
    year: i32,
}

impl Clock {
    fn new(now: DateTime<Utc>) -> Self {
        let now = DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now);
        Clock {
            now,
            year: now.year(),
        }
    }

    fn ago(&self, seconds: i64) -> DateTime<Utc> {
        self.now - Duration::seconds(seconds)
    }
}

fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Midnight UTC of `t`'s day.
fn day_floor(t: DateTime<Utc>) -> DateTime<Utc> {
    t - Duration::seconds(t.timestamp().rem_euclid(86_400))
}

const HOUR: i64 = 3_600;
const DAY: i64 = 86_400;

// ---------------------------------------------------------------------------
// Vehicles

struct Model {
    make: &'static str,
    model: &'static str,
    vehicle_type: &'static str,
    body_style: &'static str,
    /// MSRP of the first trim for the current model year, whole US dollars.
    msrp: i64,
    first_year: i32,
    /// Last model year built; 9999 while in production.
    last_year: i32,
    electric: bool,
    trims: &'static [&'static str],
    /// World manufacturer identifier (VIN positions 1–3).
    wmi: &'static str,
}

macro_rules! model {
    ($make:literal, $model:literal, $vt:literal, $body:literal, $msrp:literal,
     $first:literal ..= $last:literal, $ev:literal, [$($trim:literal),+], $wmi:literal) => {
        Model {
            make: $make,
            model: $model,
            vehicle_type: $vt,
            body_style: $body,
            msrp: $msrp,
            first_year: $first,
            last_year: $last,
            electric: $ev,
            trims: &[$($trim),+],
            wmi: $wmi,
        }
    };
}

#[rustfmt::skip]
static MODELS: &[Model] = &[
    model!("Honda", "Civic", "car", "Sedan", 24_950, 2015..=9999, false, ["LX", "Sport", "EX", "Sport Touring"], "2HG"),
    model!("Honda", "Accord", "car", "Sedan", 28_895, 2015..=9999, false, ["LX", "SE", "Sport Hybrid", "Touring Hybrid"], "1HG"),
    model!("Honda", "CR-V", "suv", "SUV", 30_850, 2015..=9999, false, ["LX", "EX", "EX-L", "Sport Touring Hybrid"], "5J6"),
    model!("Honda", "HR-V", "suv", "SUV", 25_400, 2016..=9999, false, ["LX", "Sport", "EX-L"], "3CZ"),
    model!("Honda", "Pilot", "suv", "SUV", 40_200, 2015..=9999, false, ["Sport", "EX-L", "TrailSport", "Elite"], "5FN"),
    model!("Honda", "Odyssey", "van", "Minivan", 38_000, 2015..=9999, false, ["EX-L", "Touring", "Elite"], "5FN"),
    model!("Toyota", "Corolla", "car", "Sedan", 22_050, 2015..=9999, false, ["LE", "SE", "XSE"], "2T1"),
    model!("Toyota", "Camry", "car", "Sedan", 28_400, 2015..=9999, false, ["LE", "SE", "XLE", "XSE"], "4T1"),
    model!("Toyota", "RAV4", "suv", "SUV", 29_800, 2015..=9999, false, ["LE", "XLE", "XLE Premium", "Limited"], "2T3"),
    model!("Toyota", "Highlander", "suv", "SUV", 39_520, 2015..=9999, false, ["LE", "XLE", "Limited", "Platinum"], "5TD"),
    model!("Toyota", "Tacoma", "truck", "Double Cab Pickup", 31_500, 2015..=9999, false, ["SR", "SR5", "TRD Sport", "TRD Off-Road", "Limited"], "3TM"),
    model!("Toyota", "Tundra", "truck", "CrewMax Pickup", 40_000, 2015..=9999, false, ["SR5", "Limited", "Platinum", "1794 Edition"], "5TF"),
    model!("Ford", "F-150", "truck", "SuperCrew Pickup", 38_810, 2015..=9999, false, ["XL", "XLT", "Lariat", "King Ranch", "Platinum"], "1FT"),
    model!("Ford", "Escape", "suv", "SUV", 29_495, 2015..=9999, false, ["Active", "ST-Line", "Platinum"], "1FM"),
    model!("Ford", "Explorer", "suv", "SUV", 39_865, 2015..=9999, false, ["XLT", "ST-Line", "Platinum"], "1FM"),
    model!("Ford", "Bronco", "suv", "SUV", 39_995, 2021..=9999, false, ["Big Bend", "Outer Banks", "Badlands", "Wildtrak"], "1FM"),
    model!("Ford", "Maverick", "truck", "SuperCrew Pickup", 23_920, 2022..=9999, false, ["XL", "XLT", "Lariat"], "3FT"),
    model!("Ford", "Mustang Mach-E", "suv", "SUV", 39_995, 2021..=9999, true, ["Select", "Premium", "GT"], "3FM"),
    model!("Chevrolet", "Malibu", "car", "Sedan", 25_100, 2015..=2025, false, ["LS", "RS", "LT"], "1G1"),
    model!("Chevrolet", "Equinox", "suv", "SUV", 28_600, 2015..=9999, false, ["LS", "LT", "RS", "Premier"], "3GN"),
    model!("Chevrolet", "Tahoe", "suv", "SUV", 58_195, 2015..=9999, false, ["LS", "LT", "Z71", "Premier", "High Country"], "1GN"),
    model!("Chevrolet", "Silverado 1500", "truck", "Crew Cab Pickup", 37_645, 2015..=9999, false, ["WT", "Custom", "LT", "RST", "LTZ", "High Country"], "1GC"),
    model!("Chevrolet", "Bolt EUV", "suv", "SUV", 27_495, 2022..=2023, true, ["LT", "Premier"], "1G1"),
    model!("Hyundai", "Elantra", "car", "Sedan", 22_125, 2015..=9999, false, ["SE", "SEL", "N Line", "Limited"], "5NP"),
    model!("Hyundai", "Tucson", "suv", "SUV", 28_705, 2015..=9999, false, ["SE", "SEL", "XRT", "Limited"], "5NM"),
    model!("Hyundai", "Santa Fe", "suv", "SUV", 33_950, 2015..=9999, false, ["SE", "SEL", "XRT", "Calligraphy"], "5NM"),
    model!("Hyundai", "Palisade", "suv", "SUV", 37_200, 2020..=9999, false, ["SE", "SEL", "Limited", "Calligraphy"], "KM8"),
    model!("Hyundai", "Ioniq 5", "suv", "SUV", 42_600, 2022..=9999, true, ["SE", "SEL", "Limited"], "KM8"),
    model!("Kia", "Forte", "car", "Sedan", 20_815, 2015..=2024, false, ["LX", "LXS", "GT-Line"], "3KP"),
    model!("Kia", "K5", "car", "Sedan", 27_190, 2021..=9999, false, ["LXS", "GT-Line", "EX"], "5XX"),
    model!("Kia", "Sportage", "suv", "SUV", 27_990, 2015..=9999, false, ["LX", "EX", "X-Line", "SX"], "KND"),
    model!("Kia", "Sorento", "suv", "SUV", 31_990, 2015..=9999, false, ["LX", "S", "EX", "SX"], "5XY"),
    model!("Kia", "Telluride", "suv", "SUV", 36_990, 2020..=9999, false, ["LX", "S", "EX", "SX"], "5XY"),
    model!("Kia", "EV6", "suv", "SUV", 42_900, 2022..=9999, true, ["Light", "Wind", "GT-Line"], "KND"),
    model!("Subaru", "Crosstrek", "suv", "SUV", 25_195, 2015..=9999, false, ["Base", "Premium", "Sport", "Limited"], "JF2"),
    model!("Subaru", "Forester", "suv", "SUV", 27_895, 2015..=9999, false, ["Base", "Premium", "Sport", "Limited", "Touring"], "JF2"),
    model!("Subaru", "Outback", "suv", "Wagon", 29_060, 2015..=9999, false, ["Base", "Premium", "Limited", "Touring", "Wilderness"], "4S4"),
    model!("Subaru", "Ascent", "suv", "SUV", 35_795, 2019..=9999, false, ["Premium", "Limited", "Touring"], "4S4"),
    model!("Subaru", "WRX", "car", "Sedan", 33_855, 2015..=9999, false, ["Base", "Premium", "Limited", "GT"], "JF1"),
    model!("BMW", "3 Series", "car", "Sedan", 45_500, 2015..=9999, false, ["330i", "330i xDrive", "M340i xDrive"], "WBA"),
    model!("BMW", "X3", "suv", "SUV", 49_500, 2015..=9999, false, ["sDrive30i", "xDrive30i", "M40i"], "5UX"),
    model!("BMW", "X5", "suv", "SUV", 66_200, 2015..=9999, false, ["xDrive40i", "xDrive50e", "M60i"], "5UX"),
    model!("BMW", "i4", "car", "Gran Coupe", 52_200, 2022..=9999, true, ["eDrive35", "eDrive40", "M50"], "WBY"),
    model!("Tesla", "Model 3", "car", "Sedan", 40_240, 2017..=9999, true, ["Rear-Wheel Drive", "Long Range", "Performance"], "5YJ"),
    model!("Tesla", "Model Y", "suv", "SUV", 44_990, 2020..=9999, true, ["Rear-Wheel Drive", "Long Range", "Performance"], "7SA"),
    model!("Ram", "1500", "truck", "Crew Cab Pickup", 40_275, 2015..=9999, false, ["Tradesman", "Big Horn", "Laramie", "Rebel", "Limited"], "1C6"),
    model!("Ram", "ProMaster 2500", "van", "Cargo Van", 47_000, 2015..=9999, false, ["Base", "High Roof"], "3C6"),
    model!("Mazda", "CX-5", "suv", "SUV", 29_300, 2015..=9999, false, ["S", "Select", "Preferred", "Turbo Signature"], "JM3"),
    model!("Mazda", "Mazda3", "car", "Hatchback", 24_170, 2015..=9999, false, ["2.5 S", "Select", "Preferred", "Turbo"], "JM1"),
    model!("Nissan", "Rogue", "suv", "SUV", 29_230, 2015..=9999, false, ["S", "SV", "SL", "Platinum"], "5N1"),
];

/// Makes a generated rooftop can hold the new-car franchise for.
const FRANCHISE_MAKES: &[&str] = &[
    "Honda",
    "Toyota",
    "Ford",
    "Chevrolet",
    "Hyundai",
    "Kia",
    "Subaru",
    "BMW",
    "Ram",
    "Mazda",
    "Nissan",
];

fn captive_lender(make: &str) -> &'static str {
    match make {
        "Honda" => "Honda Financial Services",
        "Toyota" => "Toyota Financial Services",
        "Ford" => "Ford Credit",
        "Chevrolet" => "GM Financial",
        "Hyundai" => "Hyundai Motor Finance",
        "Kia" => "Kia Finance",
        "Subaru" => "Subaru Motors Finance",
        "BMW" => "BMW Financial Services",
        "Ram" => "Stellantis Financial Services",
        "Mazda" => "Mazda Financial Services",
        "Nissan" => "Nissan Motor Acceptance Company",
        _ => "the manufacturer's captive lender",
    }
}

const EXTERIOR_COLORS: &[&str] = &[
    "Black",
    "White",
    "Silver",
    "Gray",
    "Blue",
    "Red",
    "Pearl White",
    "Midnight Black Metallic",
    "Lunar Silver Metallic",
    "Magnetic Gray Metallic",
    "Deep Blue Pearl",
    "Ruby Red Metallic",
    "Cement Gray",
    "Forest Green",
    "Oxford White",
    "Agate Black",
    "Sonic Gray Pearl",
    "Bronze Metallic",
];

const INTERIOR_COLORS: &[&str] = &[
    "Black Cloth",
    "Gray Cloth",
    "Beige Cloth",
    "Black Leatherette",
    "Black Leather",
    "Gray Leather",
    "Ivory Leather",
    "Saddle Brown Leather",
];

const FEATURES_COMMON: &[&str] = &[
    "Backup camera",
    "Bluetooth",
    "Apple CarPlay",
    "Android Auto",
    "Keyless entry",
    "Push-button start",
    "Automatic emergency braking",
    "Lane keeping assist",
    "Blind-spot monitoring",
    "Adaptive cruise control",
    "Heated front seats",
    "Remote start",
    "Dual-zone climate control",
    "Wireless phone charging",
    "Power moonroof",
    "Leather-trimmed seats",
    "Navigation system",
    "Premium audio",
    "LED headlights",
    "Rear cross-traffic alert",
    "Heated steering wheel",
    "Ventilated front seats",
    "Head-up display",
    "360-degree camera",
];
const FEATURES_SUV: &[&str] = &[
    "Power liftgate",
    "Roof rails",
    "All-wheel drive",
    "Third-row seating",
];
const FEATURES_TRUCK: &[&str] = &[
    "Tow package",
    "Trailer brake controller",
    "Spray-in bed liner",
    "4x4",
];
const FEATURES_VAN: &[&str] = &[
    "Power sliding doors",
    "Rear-seat entertainment",
    "Tow package",
];
const FEATURES_EV: &[&str] = &[
    "DC fast charging",
    "Heat pump",
    "Level 2 charging cable",
    "One-pedal driving",
];

/// 33 characters allowed in a VIN (no I, O, Q).
const VIN_CHARS: &[u8; 33] = b"0123456789ABCDEFGHJKLMNPRSTUVWXYZ";
/// Model-year characters (position 10) for 1980, 1981, ... (30-year cycle).
const VIN_YEARS: &[u8; 30] = b"ABCDEFGHJKLMNPRSTVWXY123456789";
const VIN_WEIGHTS: [u32; 17] = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2];

fn vin_value(c: u8) -> u32 {
    match c {
        b'0'..=b'9' => u32::from(c - b'0'),
        b'A' | b'J' => 1,
        b'B' | b'K' | b'S' => 2,
        b'C' | b'L' | b'T' => 3,
        b'D' | b'M' | b'U' => 4,
        b'E' | b'N' | b'V' => 5,
        b'F' | b'W' => 6,
        b'G' | b'P' | b'X' => 7,
        b'H' | b'Y' => 8,
        b'R' | b'Z' => 9,
        _ => 0,
    }
}

/// The check digit (position 9) of a VIN: weighted sum mod 11, 10 = `X`.
fn vin_check_digit(vin: &[u8; 17]) -> u8 {
    let sum: u32 = vin
        .iter()
        .zip(VIN_WEIGHTS)
        .map(|(c, w)| vin_value(*c) * w)
        .sum();
    match sum % 11 {
        10 => b'X',
        d => b'0' + d as u8,
    }
}

/// Derives unique VINs from (seed, index): the serial (positions 12–17) and
/// positions 7–8 are a bijection of the index for a given seed, so two
/// indexes never share a VIN, whatever the other positions hold.
struct VinSpace {
    serial_offset: u64,
    high_offset: u64,
}

impl VinSpace {
    fn new(seed: u64) -> Self {
        VinSpace {
            serial_offset: mix(seed ^ 0x56A1_2B0C_33E5_D4F1) % 1_000_000,
            high_offset: mix(seed ^ 0x1F83_D9AB_FB41_BD6B) % (33 * 33),
        }
    }

    fn vin(&self, index: u64, wmi: &str, year: i32, rng: &mut Rng) -> String {
        let low = index % 1_000_000;
        let high = (index / 1_000_000 + self.high_offset) % (33 * 33);
        // 738,731 is coprime with 10^6, so this permutes 0..10^6.
        let serial = (low * 738_731 + self.serial_offset) % 1_000_000;
        let mut v = [b'0'; 17];
        v[..3].copy_from_slice(&wmi.as_bytes()[..3]);
        for c in &mut v[3..6] {
            *c = *rng.pick(VIN_CHARS);
        }
        v[6] = VIN_CHARS[(high / 33) as usize];
        v[7] = VIN_CHARS[(high % 33) as usize];
        v[9] = VIN_YEARS[(year - 1980).rem_euclid(30) as usize];
        v[10] = *rng.pick(VIN_CHARS);
        let mut s = serial;
        for c in v[11..].iter_mut().rev() {
            *c = b'0' + (s % 10) as u8;
            s /= 10;
        }
        v[8] = vin_check_digit(&v);
        v.iter().map(|&c| char::from(c)).collect()
    }
}

// ---------------------------------------------------------------------------
// Rooftops as the feed writer sees them

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Mi,
    Km,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Unit::Mi => "mi",
            Unit::Km => "km",
        }
    }

    /// Converts whole miles to this unit.
    fn miles_to(self, miles: i64) -> i64 {
        match self {
            Unit::Mi => miles,
            Unit::Km => miles * 1_609_344 / 1_000_000,
        }
    }
}

/// The bundled demo rooftops, matched by id so the demo's Honda store sells
/// new Hondas at its own web address.
struct KnownRooftop {
    rooftop_id: &'static str,
    make: &'static str,
    host: &'static str,
    subdivision: &'static str,
}

const KNOWN_DEMO_ROOFTOPS: &[KnownRooftop] = &[
    KnownRooftop {
        rooftop_id: "roof.lakeshore-chicago",
        make: "Honda",
        host: "chicago.lakeshoreauto.example",
        subdivision: "US-IL",
    },
    KnownRooftop {
        rooftop_id: "roof.lakeshore-grand-rapids",
        make: "Ford",
        host: "grandrapids.lakeshoreauto.example",
        subdivision: "US-MI",
    },
    KnownRooftop {
        rooftop_id: "roof.lakeshore-lakewood",
        make: "Subaru",
        host: "lakewood.lakeshoreauto.example",
        subdivision: "US-CO",
    },
    KnownRooftop {
        rooftop_id: "roof.lakeshore-fleet-wholesale",
        make: "Chevrolet",
        host: "fleet.lakeshoreauto.example",
        subdivision: "US-IL",
    },
    KnownRooftop {
        rooftop_id: "roof.maplecrest-toronto",
        make: "Toyota",
        host: "toronto.maplecrestmotors.example",
        subdivision: "CA-ON",
    },
    KnownRooftop {
        rooftop_id: "roof.maplecrest-burnaby",
        make: "Hyundai",
        host: "burnaby.maplecrestmotors.example",
        subdivision: "CA-BC",
    },
];

/// `roof.acme_north` → `acme-north.example`.
fn slug_host(rooftop_id: &str) -> String {
    let base = rooftop_id.strip_prefix("roof.").unwrap_or(rooftop_id);
    let mut host: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    host = host.trim_matches('-').to_owned();
    if host.is_empty() {
        host.push_str("dealer");
    }
    host.push_str(".example");
    host
}

/// What identifies a rooftop to the feed writer.
struct RooftopIdentity {
    organization_id: String,
    rooftop_id: String,
    currency: String,
    unit: Unit,
    /// ISO 3166-1 country, when the currency tells it.
    country: Option<&'static str>,
    /// ISO 3166-2 subdivision, e.g. `US-IL`, when known.
    subdivision: Option<String>,
    /// Web host of listing and image URLs.
    host: String,
    /// Make whose new vehicles the rooftop sells.
    franchise: &'static str,
    /// Share of rows (per mille) observed hours ago (stale).
    stale_per_mille: u64,
}

/// A rooftop with its derived pricing policy and model lists.
struct FeedRooftop {
    id: RooftopIdentity,
    /// Local currency units per 1000 US dollars.
    usd_rate_per_mille: i64,
    /// Minor units per major unit (100 for USD and CAD).
    minor_per_major: i64,
    doc_fee_major: i64,
    doc_fee_taxable: &'static str,
    fees_included: bool,
    e_filing_fee: bool,
    stock_base: u64,
    new_models: Vec<usize>,
    used_franchise: Vec<usize>,
    used_any: Vec<usize>,
}

impl FeedRooftop {
    fn new(id: RooftopIdentity, rng: &mut Rng, year: i32) -> Self {
        let usd_rate_per_mille = match id.currency.as_str() {
            "USD" => 1000,
            "CAD" => 1380,
            "EUR" => 930,
            "GBP" => 790,
            "CHF" => 880,
            "AUD" => 1530,
            "NZD" => 1680,
            "MXN" => 18_000,
            "JPY" => 152_000,
            _ => 1000,
        };
        let exponent = iso_currency::Currency::from_code(&id.currency)
            .and_then(|c| c.exponent())
            .unwrap_or(2);
        let minor_per_major = 10i64.pow(u32::from(exponent.min(4)));
        let doc_fee_major = match id.country {
            Some("US") => *rng.pick(&[149, 199, 299, 349, 399, 499, 599, 699]),
            Some("CA") => *rng.pick(&[399, 499, 599, 699, 799, 899]),
            _ => *rng.pick(&[199, 299, 399]) * usd_rate_per_mille / 1000,
        };
        let doc_fee_taxable = if id.country == Some("CA") || rng.chance(600) {
            "taxable"
        } else {
            "jurisdiction_dependent"
        };
        let fees_included = rng.chance(350);
        let e_filing_fee = id.country == Some("US") && rng.chance(300);
        let stock_base = 10_000 + rng.below(50_000);
        let in_production = |m: &Model| m.last_year >= year && m.first_year <= year + 1;
        let built = |m: &Model| m.first_year <= year;
        let new_models = (0..MODELS.len())
            .filter(|&i| MODELS[i].make == id.franchise && in_production(&MODELS[i]))
            .collect();
        let used_franchise = (0..MODELS.len())
            .filter(|&i| MODELS[i].make == id.franchise && built(&MODELS[i]))
            .collect();
        let used_any = (0..MODELS.len()).filter(|&i| built(&MODELS[i])).collect();
        FeedRooftop {
            id,
            usd_rate_per_mille,
            minor_per_major,
            doc_fee_major,
            doc_fee_taxable,
            fees_included,
            e_filing_fee,
            stock_base,
            new_models,
            used_franchise,
            used_any,
        }
    }

    /// US dollars to whole local units.
    fn local(&self, usd: i64) -> i64 {
        usd * self.usd_rate_per_mille / 1000
    }

    fn money(&self, buf: &mut String, major: i64) {
        let _ = write!(
            buf,
            "{{\"amount_minor\":{},\"currency\":",
            major * self.minor_per_major
        );
        json_str(buf, &self.id.currency);
        buf.push('}');
    }
}

// ---------------------------------------------------------------------------
// Feed rows

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Condition {
    New,
    Used,
    Certified,
}

impl Condition {
    fn as_str(self) -> &'static str {
        match self {
            Condition::New => "new",
            Condition::Used => "used",
            Condition::Certified => "certified",
        }
    }
}

/// Forced facts for one row of a demo feed (the rest stays random).
#[derive(Clone, Copy, Default)]
struct Override {
    stale: bool,
    availability: Option<&'static str>,
    condition: Option<Condition>,
    no_odometer: bool,
    no_history: bool,
}

/// Where the demo's deliberate oddities go: 2–3 stale rows, one each
/// in transit, reserved and sold, one used unit without odometer and one
/// without history, all at distinct random rows.
fn demo_overrides(rng: &mut Rng, count: usize) -> Vec<Override> {
    let mut rows = vec![Override::default(); count];
    let mut order: Vec<usize> = (0..count).collect();
    for i in (1..count).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    let stale = 2 + rng.below(2) as usize;
    let mut slots = order.into_iter();
    for _ in 0..stale {
        if let Some(i) = slots.next() {
            rows[i].stale = true;
        }
    }
    let forced = [
        Override {
            availability: Some("in_transit"),
            condition: Some(Condition::New),
            ..Override::default()
        },
        Override {
            availability: Some("reserved"),
            ..Override::default()
        },
        Override {
            availability: Some("unavailable"),
            ..Override::default()
        },
        Override {
            availability: Some("available"),
            condition: Some(Condition::Used),
            no_odometer: true,
            ..Override::default()
        },
        Override {
            availability: Some("available"),
            condition: Some(Condition::Used),
            no_history: true,
            ..Override::default()
        },
    ];
    for o in forced {
        if let Some(i) = slots.next() {
            rows[i] = o;
        }
    }
    // Every other row keeps its random availability but is never stale.
    rows
}

/// One feed to write: `count` rows for `roof`, vehicle indexes from
/// `first_index` (unique in the bundle, they key the VINs).
struct FeedJob<'a> {
    roof: &'a FeedRooftop,
    vins: &'a VinSpace,
    seed: u64,
    first_index: u64,
    count: usize,
    clock: &'a Clock,
    /// Per-row overrides (demo feeds); empty = all random.
    overrides: &'a [Override],
}

impl FeedJob<'_> {
    fn write<W: Write>(&self, out: &mut W) -> io::Result<()> {
        let mut row = Row::default();
        for c in CSV_COLUMNS {
            row.cell(c);
        }
        row.end();
        out.write_all(row.line.as_bytes())?;
        let mut scratch = Scratch::default();
        let seed_key = mix(self.seed ^ 0x2545_F491_4F6C_DD1D);
        for j in 0..self.count {
            let index = self.first_index + j as u64;
            let mut rng = Rng::new(seed_key ^ mix(index.wrapping_add(0x6A09_E667_F3BC_C909)));
            let ov = self.overrides.get(j).copied().unwrap_or_default();
            row.clear();
            self.vehicle_row(&mut rng, index, j, ov, &mut row, &mut scratch);
            row.end();
            out.write_all(row.line.as_bytes())?;
        }
        Ok(())
    }

    fn vehicle_row(
        &self,
        rng: &mut Rng,
        index: u64,
        j: usize,
        ov: Override,
        row: &mut Row,
        s: &mut Scratch,
    ) {
        let roof = self.roof;
        let id = &roof.id;
        let cy = self.clock.year;

        // Condition and model.
        let roll = rng.below(1000);
        let mut condition = ov.condition.unwrap_or(if roll < 450 {
            Condition::New
        } else if roll < 600 {
            Condition::Certified
        } else {
            Condition::Used
        });
        if condition == Condition::New && roof.new_models.is_empty() {
            condition = Condition::Used;
        }
        let franchise_used = rng.chance(450) && !roof.used_franchise.is_empty();
        let model_index = match condition {
            Condition::New => *rng.pick(&roof.new_models),
            _ if franchise_used => *rng.pick(&roof.used_franchise),
            _ => *rng.pick(&roof.used_any),
        };
        let m = &MODELS[model_index];
        let year = match condition {
            Condition::New => {
                let next = cy < m.last_year && rng.chance(300);
                if next || m.first_year > cy {
                    cy + 1
                } else {
                    cy
                }
            }
            Condition::Certified => rand_year(rng, m, cy, 6),
            Condition::Used => rand_year(rng, m, cy, 11),
        };
        let age = i64::from((cy - year).max(0));
        let trim_index = rng.below(m.trims.len() as u64) as usize;
        let trim = m.trims[trim_index];

        // Identity.
        let vin = self.vins.vin(index, m.wmi, year, rng);
        let prefix = match condition {
            Condition::New => 'N',
            Condition::Used => 'U',
            Condition::Certified => 'C',
        };
        let trade_suffix = if condition == Condition::Used && rng.chance(300) {
            "A"
        } else {
            ""
        };
        let stock = format!("{prefix}{}{trade_suffix}", roof.stock_base + j as u64);

        // Odometer, in miles first.
        let miles = match condition {
            Condition::New => rng.range(3, 45),
            _ => {
                let months = age * 12 + rng.range(2, 11);
                let per_year = rng.range(8_000, 15_500);
                let mut miles = (per_year * months / 12).max(600);
                if condition == Condition::Certified && miles > 75_000 {
                    miles = 25_000 + miles % 45_000;
                }
                miles
            }
        };
        let odometer_known = match condition {
            Condition::New => !rng.chance(200),
            _ => !rng.chance(20),
        } && !ov.no_odometer;

        // Price, whole local currency units.
        let msrp_usd = m.msrp * (1000 + 120 * trim_index as i64) / 1000;
        let price_major = match condition {
            Condition::New => {
                let options = rng.range(0, 4) * 450;
                let model_year_bump = if year > cy { 20 } else { 0 };
                let msrp = roof.local((msrp_usd + options) * (1000 + model_year_bump) / 1000);
                let msrp = (msrp + 2) / 5 * 5;
                if rng.chance(600) {
                    msrp
                } else {
                    let discount = rng.range(10, 70);
                    retail(rng, msrp * (1000 - discount) / 1000)
                }
            }
            _ => {
                let base = msrp_usd * (1000 - 30 * age) / 1000;
                let yearly = if m.electric { 800 } else { 870 };
                let first_year_loss = if age == 0 { 900 } else { 820 };
                let mut value = base * first_year_loss / 1000;
                for _ in 1..age {
                    value = value * yearly / 1000;
                }
                let expected = 12_000 * age.max(1);
                let adjust = ((expected - miles) / 10).clamp(-value / 5, value / 5);
                value += adjust;
                if condition == Condition::Certified {
                    value += 1_200;
                }
                retail(rng, roof.local(value.max(4_000)))
            }
        };

        // Availability and timestamps.
        let roll = rng.below(1000);
        let random_availability = if roll < 900 {
            "available"
        } else if roll < 935 {
            if condition == Condition::New {
                "in_transit"
            } else {
                "reserved"
            }
        } else if roll < 960 {
            "reserved"
        } else if roll < 985 {
            "unavailable"
        } else {
            "unknown"
        };
        let availability = ov.availability.unwrap_or(random_availability);
        let stale = ov.stale || rng.chance(id.stale_per_mille);
        let observed_ago = if stale {
            rng.range(3 * HOUR, 20 * HOUR)
        } else {
            rng.range(60, 900)
        };
        let observed = self.clock.ago(observed_ago);
        let (stocked_at, first_listed) = if availability == "in_transit" {
            let listed = self.clock.ago(rng.range(DAY, 10 * DAY).max(observed_ago));
            (String::new(), ts(listed))
        } else {
            let stocked_ago = rng.range(DAY, 200 * DAY);
            let listed_ago = (stocked_ago - rng.range(0, 3 * DAY)).max(observed_ago);
            let listed = if rng.chance(100) {
                String::new()
            } else {
                ts(self.clock.ago(listed_ago))
            };
            (ts(self.clock.ago(stocked_ago)), listed)
        };

        // Required columns.
        row.cell(&id.organization_id);
        row.cell(&id.rooftop_id);
        row.cell(&vin);
        row.cell(&stock);
        row.num(i64::from(year));
        row.cell(m.make);
        row.cell(m.model);
        row.cell(condition.as_str());
        s.text.clear();
        let _ = write!(s.text, "https://{}/inventory/{}", id.host, stock);
        row.cell(&s.text);
        row.cell(&ts(observed));

        // Disclosure columns.
        row.num(price_major * roof.minor_per_major);
        row.cell(&id.currency);
        self.charges(rng, condition, m, &mut s.json);
        row.cell(&s.json);
        self.adjustments(rng, condition, m, &mut s.json);
        row.cell(&s.json);
        row.cell(if rng.chance(50) { "" } else { "unknown" });
        row.cell(availability);

        // Optional columns.
        row.cell(if rng.chance(30) { "" } else { trim });
        row.cell(m.vehicle_type);
        row.cell(m.body_style);
        row.cell(if rng.chance(25) {
            ""
        } else {
            rng.pick_str(EXTERIOR_COLORS)
        });
        row.cell(if rng.chance(80) {
            ""
        } else {
            rng.pick_str(INTERIOR_COLORS)
        });
        if odometer_known {
            row.num(id.unit.miles_to(miles));
            row.cell(id.unit.as_str());
        } else {
            row.cell("");
            row.cell("");
        }
        row.cell(&stocked_at);
        row.cell(&first_listed);
        s.json.clear();
        if condition != Condition::New && !ov.no_history && !rng.chance(40) {
            self.history(rng, &vin, &mut s.json);
        }
        row.cell(&s.json);
        let certification = match condition {
            Condition::New => "",
            Condition::Used => {
                if rng.chance(150) {
                    ""
                } else {
                    "not_certified"
                }
            }
            Condition::Certified => {
                if m.make == id.franchise && !rng.chance(100) {
                    "manufacturer_cpo"
                } else if rng.chance(150) {
                    "third_party_certified"
                } else {
                    "dealer_certified"
                }
            }
        };
        row.cell(certification);
        s.json.clear();
        if !rng.chance(30) {
            s.json.push('[');
            for k in 1..=rng.range(1, 3) {
                if k > 1 {
                    s.json.push(',');
                }
                let _ = write!(s.json, "\"https://{}/photos/{}/{k}.jpg\"", id.host, stock);
            }
            s.json.push(']');
        }
        row.cell(&s.json);
        features(rng, m, &mut s.json);
        row.cell(&s.json);
    }

    /// `required_dealer_charges_json`: a documentation/administration fee,
    /// freight and PDI on new Canadian units, an e-filing fee at some US
    /// stores; empty (unknown) in a few rows.
    fn charges(&self, rng: &mut Rng, condition: Condition, m: &Model, buf: &mut String) {
        let roof = self.roof;
        buf.clear();
        if rng.chance(40) {
            return;
        }
        let included = roof.fees_included != rng.chance(120);
        let canada = roof.id.country == Some("CA");
        buf.push('[');
        let (id, name) = if canada {
            ("admin-fee", "Administration fee")
        } else {
            ("doc-fee", "Documentation fee")
        };
        charge(
            buf,
            roof,
            ChargeSpec {
                id,
                name,
                major: roof.doc_fee_major,
                payee: "dealer",
                included,
                taxable: roof.doc_fee_taxable,
            },
        );
        if canada && condition == Condition::New {
            buf.push(',');
            let freight = 1_795 + (fnv1a(m.make.as_bytes()) % 9) as i64 * 100;
            charge(
                buf,
                roof,
                ChargeSpec {
                    id: "freight-pdi",
                    name: "Freight and PDI",
                    major: freight,
                    payee: "dealer",
                    included,
                    taxable: "taxable",
                },
            );
        }
        if roof.e_filing_fee {
            buf.push(',');
            charge(
                buf,
                roof,
                ChargeSpec {
                    id: "e-filing-fee",
                    name: "Electronic registration filing fee",
                    major: roof.local(35),
                    payee: "dealer_vendor",
                    included: false,
                    taxable: "not_taxable",
                },
            );
        }
        buf.push(']');
    }

    /// `conditional_adjustments_json`: manufacturer offers on some new
    /// units (military, first responder, graduate, loyalty, conquest,
    /// captive-finance bonus), a trade-in offer of unknown amount on some
    /// used ones, `[]` for most rows and empty (unknown) in a few.
    fn adjustments(&self, rng: &mut Rng, condition: Condition, m: &Model, buf: &mut String) {
        let roof = self.roof;
        buf.clear();
        if rng.chance(30) {
            return;
        }
        let mut offers: Vec<Offer> = Vec::new();
        if condition == Condition::New && rng.chance(400) {
            let n = rng.range(1, 3) as usize;
            let mut kinds = [
                Offer::Military,
                Offer::FirstResponder,
                Offer::Graduate,
                Offer::Loyalty,
                Offer::Conquest,
                Offer::Finance,
            ];
            for i in 0..n {
                let k = i + rng.below((kinds.len() - i) as u64) as usize;
                kinds.swap(i, k);
            }
            offers.extend_from_slice(&kinds[..n]);
            offers.sort_by_key(|o| *o as u8);
        } else if condition != Condition::New && rng.chance(80) {
            offers.push(Offer::TradeIn);
        }
        let valid_from = day_floor(self.clock.ago(rng.range(DAY, 20 * DAY)));
        let valid_until = day_floor(self.clock.now + Duration::days(rng.range(10, 45)))
            + Duration::seconds(DAY - 1);
        let ctx = OfferContext {
            roof,
            make: m.make,
            valid_from: ts(valid_from),
            valid_until: ts(valid_until),
        };
        let affinity_ids: Vec<String> = offers
            .iter()
            .filter(|o| o.group() == "affinity")
            .map(|o| o.id(&ctx))
            .collect();
        buf.push('[');
        for (i, offer) in offers.iter().enumerate() {
            if i > 0 {
                buf.push(',');
            }
            offer.write(buf, &ctx, &affinity_ids);
        }
        buf.push(']');
    }

    /// `history_reports_json` for a used unit.
    fn history(&self, rng: &mut Rng, vin: &str, buf: &mut String) {
        let canada = self.roof.id.country == Some("CA");
        buf.push('[');
        let carfax = rng.chance(850);
        let autocheck = !canada && rng.chance(350);
        if carfax {
            let (provider_id, provider_name) = if canada {
                ("ca.carfax", "CARFAX Canada")
            } else {
                ("com.carfax", "CARFAX")
            };
            let roll = rng.below(1000);
            let _ = write!(
                buf,
                "{{\"provider_id\":\"{provider_id}\",\"provider_name\":\"{provider_name}\","
            );
            if roll < 900 {
                let _ = write!(
                    buf,
                    "\"status\":\"available\",\"access\":\"public_link\",\
                     \"report_url\":\"https://vhr.carfax.example/report/{vin}\","
                );
            } else if roll < 960 {
                buf.push_str("\"status\":\"available\",\"access\":\"dealer_presented\",");
            } else {
                buf.push_str("\"status\":\"restricted\",\"access\":\"restricted\",");
            }
            buf.push_str("\"summary_sharing_authorized\":false}");
        }
        if autocheck {
            if carfax {
                buf.push(',');
            }
            buf.push_str(
                "{\"provider_id\":\"com.experian.autocheck\",\"provider_name\":\"AutoCheck\",\
                 \"status\":\"available\",\"access\":\"on_request\",\
                 \"summary_sharing_authorized\":false}",
            );
        }
        if !carfax && !autocheck {
            buf.push_str(
                "{\"provider_id\":\"com.carfax\",\"provider_name\":\"CARFAX\",\
                 \"status\":\"not_available\",\"access\":\"none\",\
                 \"summary_sharing_authorized\":false}",
            );
        }
        buf.push(']');
    }
}

/// A model year within `max_age` years of `cy` that the model was built in.
fn rand_year(rng: &mut Rng, m: &Model, cy: i32, max_age: i32) -> i32 {
    let hi = m.last_year.min(cy);
    let lo = m.first_year.max(cy - max_age).min(hi);
    rng.range(i64::from(lo), i64::from(hi)) as i32
}

/// A retail price ending: $x,x95 mostly, else $x,x00 or $x,x88.
fn retail(rng: &mut Rng, major: i64) -> i64 {
    if major < 1_000 {
        return major.max(0);
    }
    let hundreds = (major + 50) / 100 * 100;
    match rng.below(10) {
        0 | 1 => hundreds,
        2 => hundreds - 12,
        _ => hundreds - 5,
    }
}

fn features(rng: &mut Rng, m: &Model, buf: &mut String) {
    buf.clear();
    let extra: &[&str] = match m.vehicle_type {
        "suv" => FEATURES_SUV,
        "truck" => FEATURES_TRUCK,
        "van" => FEATURES_VAN,
        _ => &[],
    };
    let ev: &[&str] = if m.electric { FEATURES_EV } else { &[] };
    let pool: Vec<&str> = FEATURES_COMMON
        .iter()
        .chain(extra)
        .chain(ev)
        .copied()
        .collect();
    let mut picked: Vec<usize> = (0..pool.len()).collect();
    let n = rng.range(3, 8) as usize;
    for i in 0..n {
        let k = i + rng.below((picked.len() - i) as u64) as usize;
        picked.swap(i, k);
    }
    let mut chosen = picked[..n].to_vec();
    chosen.sort_unstable();
    buf.push('[');
    for (i, &f) in chosen.iter().enumerate() {
        if i > 0 {
            buf.push(',');
        }
        json_str(buf, pool[f]);
    }
    buf.push(']');
}

struct ChargeSpec {
    id: &'static str,
    name: &'static str,
    major: i64,
    payee: &'static str,
    included: bool,
    taxable: &'static str,
}

/// One DAP `dealerCharge`.
fn charge(buf: &mut String, roof: &FeedRooftop, c: ChargeSpec) {
    let _ = write!(
        buf,
        "{{\"charge_id\":\"{}\",\"name\":\"{}\",\"amount\":",
        c.id, c.name
    );
    roof.money(buf, c.major);
    let _ = write!(
        buf,
        ",\"payee\":\"{}\",\"included_in_advertised_price\":{},\"required\":true,\"taxable_status\":\"{}\"}}",
        c.payee, c.included, c.taxable
    );
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Offer {
    Military,
    FirstResponder,
    Graduate,
    Loyalty,
    Conquest,
    Finance,
    TradeIn,
}

struct OfferContext<'a> {
    roof: &'a FeedRooftop,
    make: &'static str,
    valid_from: String,
    valid_until: String,
}

impl Offer {
    fn group(self) -> &'static str {
        match self {
            Offer::Military | Offer::FirstResponder | Offer::Graduate => "affinity",
            Offer::Loyalty | Offer::Conquest => "loyalty-conquest",
            Offer::Finance => "captive-finance",
            Offer::TradeIn => "trade-in",
        }
    }

    /// Amount in whole local units (`None` = unknown).
    fn amount(self, roof: &FeedRooftop) -> Option<i64> {
        let usd = match self {
            Offer::Military | Offer::FirstResponder | Offer::Graduate => 500,
            Offer::Loyalty => 750,
            Offer::Conquest => 1_000,
            Offer::Finance => 1_500,
            Offer::TradeIn => return None,
        };
        Some((roof.local(usd) + 25) / 50 * 50)
    }

    fn id(self, ctx: &OfferContext<'_>) -> String {
        let kind = match self {
            Offer::Military => "military",
            Offer::FirstResponder => "first-responder",
            Offer::Graduate => "college-graduate",
            Offer::Loyalty => "loyalty",
            Offer::Conquest => "conquest",
            Offer::Finance => "finance-bonus",
            Offer::TradeIn => "trade-in-assistance",
        };
        match self.amount(ctx.roof) {
            Some(a) => format!("{kind}-{a}"),
            None => kind.to_owned(),
        }
    }

    /// One DAP `conditionalAdjustment`.
    fn write(self, buf: &mut String, ctx: &OfferContext<'_>, affinity_ids: &[String]) {
        let make = ctx.make;
        let canada = ctx.roof.id.country == Some("CA");
        let name = match self {
            Offer::Military => format!("{make} Military Appreciation Offer"),
            Offer::FirstResponder => format!("{make} First Responder Offer"),
            Offer::Graduate => format!("{make} College Graduate Offer"),
            Offer::Loyalty => format!("{make} Owner Loyalty Cash"),
            Offer::Conquest => "Competitive Owner Conquest Cash".to_owned(),
            Offer::Finance => format!("{} Bonus Cash", captive_lender(make)),
            Offer::TradeIn => "Trade-in Assistance".to_owned(),
        };
        buf.push_str("{\"adjustment_id\":");
        json_str(buf, &self.id(ctx));
        buf.push_str(",\"name\":");
        json_str(buf, &name);
        buf.push_str(",\"direction\":\"discount\"");
        match self.amount(ctx.roof) {
            Some(a) => {
                buf.push_str(",\"amount_status\":\"known\",\"amount\":");
                ctx.roof.money(buf, a);
            }
            None => buf.push_str(",\"amount_status\":\"unknown\""),
        }
        buf.push_str(",\"criteria\":[");
        match self {
            Offer::Military => criterion(
                buf,
                "military",
                "verified",
                "true",
                "required",
                if canada {
                    "Serving or retired member of the Canadian Armed Forces, or a veteran"
                } else {
                    "Active duty, reserve, retired or veteran member of the U.S. Armed Forces"
                },
            ),
            Offer::FirstResponder => criterion(
                buf,
                "first_responder",
                "verified",
                "true",
                "required",
                "Active firefighter, police officer, paramedic or EMT",
            ),
            Offer::Graduate => criterion(
                buf,
                "college_graduate",
                "verified",
                "true",
                "required",
                "Graduated from an accredited college in the past 2 years or within the next 6 months",
            ),
            Offer::Loyalty => {
                let mut value = String::new();
                json_str(&mut value, make);
                criterion(
                    buf,
                    "loyalty",
                    "equals",
                    &value,
                    "required",
                    &format!(
                        "Currently owns or leases a {make} vehicle registered in the buyer's name"
                    ),
                );
            }
            Offer::Conquest => {
                let rivals: Vec<&str> = FRANCHISE_MAKES
                    .iter()
                    .copied()
                    .filter(|&r| r != make)
                    .take(4)
                    .collect();
                let mut value = String::from("[");
                for (i, r) in rivals.iter().enumerate() {
                    if i > 0 {
                        value.push(',');
                    }
                    json_str(&mut value, r);
                }
                value.push(']');
                criterion(
                    buf,
                    "conquest",
                    "in",
                    &value,
                    "required",
                    "Currently owns or leases a vehicle of one of these competitive makes",
                );
            }
            Offer::Finance => {
                let mut value = String::new();
                json_str(&mut value, captive_lender(make));
                criterion(
                    buf,
                    "finance_provider",
                    "equals",
                    &value,
                    "not_required",
                    "Finance or lease through the manufacturer's captive lender, on approved credit",
                );
                buf.push(',');
                criterion(
                    buf,
                    "payment_mode",
                    "in",
                    "[\"finance\",\"lease\"]",
                    "not_required",
                    "Not available on cash purchases",
                );
            }
            Offer::TradeIn => criterion(
                buf,
                "trade_in",
                "present",
                "true",
                "claimed",
                "A vehicle traded in toward this purchase; amount depends on the appraisal",
            ),
        }
        buf.push(']');
        if self == Offer::Finance {
            buf.push_str(",\"criteria_mode\":\"all\"");
            if let Some(country) = ctx.roof.id.country {
                let _ = write!(buf, ",\"jurisdictions\":[{{\"country\":\"{country}\"");
                if let Some(sub) = &ctx.roof.id.subdivision {
                    buf.push_str(",\"subdivision\":");
                    json_str(buf, sub);
                }
                buf.push_str("}]");
            }
        }
        if self != Offer::TradeIn {
            buf.push_str(",\"valid_from\":");
            json_str(buf, &ctx.valid_from);
            buf.push_str(",\"valid_until\":");
            json_str(buf, &ctx.valid_until);
        }
        let _ = write!(buf, ",\"stacking\":{{\"group\":\"{}\"", self.group());
        match self {
            Offer::Loyalty if !affinity_ids.is_empty() => {
                buf.push_str(",\"combinability\":\"stackable\",\"combinable_with\":[");
                for (i, id) in affinity_ids.iter().enumerate() {
                    if i > 0 {
                        buf.push(',');
                    }
                    json_str(buf, id);
                }
                buf.push(']');
            }
            Offer::Loyalty => buf.push_str(",\"combinability\":\"stackable\""),
            Offer::Finance | Offer::TradeIn => buf.push_str(",\"combinability\":\"rule_defined\""),
            _ => buf.push_str(",\"combinability\":\"exclusive\""),
        }
        buf.push_str("}}");
    }
}

/// One DAP `eligibilityCriterion`; `value` is raw JSON.
fn criterion(
    buf: &mut String,
    criterion: &str,
    operator: &str,
    value: &str,
    evidence: &str,
    description: &str,
) {
    let _ = write!(
        buf,
        "{{\"criterion\":\"{criterion}\",\"operator\":\"{operator}\",\"value\":{value},\
         \"evidence_status\":\"{evidence}\",\"description\":"
    );
    json_str(buf, description);
    buf.push('}');
}

/// Appends `s` as a JSON string literal (also a valid YAML double-quoted
/// scalar).
fn json_str(buf: &mut String, s: &str) {
    buf.push('"');
    for c in s.chars() {
        match c {
            '"' => buf.push_str("\\\""),
            '\\' => buf.push_str("\\\\"),
            '\n' => buf.push_str("\\n"),
            '\r' => buf.push_str("\\r"),
            '\t' => buf.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(buf, "\\u{:04x}", u32::from(c));
            }
            c => buf.push(c),
        }
    }
    buf.push('"');
}

/// Reused buffers of one feed.
#[derive(Default)]
struct Scratch {
    text: String,
    json: String,
}

/// One CSV record being built (RFC 4180 quoting, `\n` line ends).
#[derive(Default)]
struct Row {
    line: String,
    cells: usize,
}

impl Row {
    fn clear(&mut self) {
        self.line.clear();
        self.cells = 0;
    }

    fn sep(&mut self) {
        if self.cells > 0 {
            self.line.push(',');
        }
        self.cells += 1;
    }

    fn cell(&mut self, value: &str) {
        self.sep();
        if value.contains([',', '"', '\n', '\r']) {
            self.line.push('"');
            for c in value.chars() {
                if c == '"' {
                    self.line.push('"');
                }
                self.line.push(c);
            }
            self.line.push('"');
        } else {
            self.line.push_str(value);
        }
    }

    fn num(&mut self, value: i64) {
        self.sep();
        let _ = write!(self.line, "{value}");
    }

    fn end(&mut self) {
        debug_assert_eq!(self.cells, CSV_COLUMNS.len());
        self.line.push('\n');
    }
}

// ---------------------------------------------------------------------------
// The dealers file of a generated bundle

struct City {
    locality: &'static str,
    region: &'static str,
    postal_code: &'static str,
    timezone: &'static str,
    area_code: &'static str,
}

macro_rules! city {
    ($l:literal, $r:literal, $p:literal, $tz:literal, $a:literal) => {
        City {
            locality: $l,
            region: $r,
            postal_code: $p,
            timezone: $tz,
            area_code: $a,
        }
    };
}

#[rustfmt::skip]
const US_CITIES: &[City] = &[
    city!("Springfield", "IL", "62704", "America/Chicago", "217"),
    city!("Columbus", "OH", "43215", "America/New_York", "614"),
    city!("Austin", "TX", "78745", "America/Chicago", "512"),
    city!("Aurora", "CO", "80012", "America/Denver", "303"),
    city!("Phoenix", "AZ", "85016", "America/Phoenix", "602"),
    city!("Portland", "OR", "97214", "America/Los_Angeles", "503"),
    city!("Nashville", "TN", "37211", "America/Chicago", "615"),
    city!("Raleigh", "NC", "27604", "America/New_York", "919"),
    city!("Madison", "WI", "53713", "America/Chicago", "608"),
    city!("Boise", "ID", "83704", "America/Boise", "208"),
    city!("Sacramento", "CA", "95815", "America/Los_Angeles", "916"),
    city!("Omaha", "NE", "68144", "America/Chicago", "402"),
    city!("Albany", "NY", "12205", "America/New_York", "518"),
    city!("Tampa", "FL", "33612", "America/New_York", "813"),
    city!("Salt Lake City", "UT", "84115", "America/Denver", "801"),
    city!("Indianapolis", "IN", "46240", "America/Indiana/Indianapolis", "317"),
    city!("Anchorage", "AK", "99503", "America/Anchorage", "907"),
    city!("Honolulu", "HI", "96814", "Pacific/Honolulu", "808"),
];

#[rustfmt::skip]
const CA_CITIES: &[City] = &[
    city!("Ottawa", "ON", "K2C 3H2", "America/Toronto", "613"),
    city!("Mississauga", "ON", "L5B 2C9", "America/Toronto", "905"),
    city!("Calgary", "AB", "T2H 0K8", "America/Edmonton", "403"),
    city!("Edmonton", "AB", "T6E 5A1", "America/Edmonton", "780"),
    city!("Winnipeg", "MB", "R3T 2E4", "America/Winnipeg", "204"),
    city!("Halifax", "NS", "B3L 4P1", "America/Halifax", "902"),
    city!("Laval", "QC", "H7T 2P4", "America/Toronto", "450"),
    city!("Regina", "SK", "S4P 3Y2", "America/Regina", "306"),
    city!("Victoria", "BC", "V8Z 3B3", "America/Vancouver", "250"),
    city!("St. John's", "NL", "A1B 3N9", "America/St_Johns", "709"),
];

const STREETS: &[&str] = &[
    "Auto Mall Pkwy",
    "Commerce Dr",
    "N Main St",
    "W Broadway",
    "Motor Pkwy",
    "Dealer Row",
    "Oak Ridge Blvd",
    "S Lincoln Ave",
    "Highway 7 W",
    "Industrial Rd",
];

const GROUPS: &[&str] = &[
    "Northfield",
    "Riverbend",
    "Summit Ridge",
    "Prairie Wind",
    "Harborview",
    "Cedar Valley",
    "Bluewater",
    "Granite Peak",
    "Silver Lake",
    "Oak Hollow",
    "Red Rock",
    "Pine Crest",
    "Great Plains",
    "Tidewater",
    "Ironwood",
    "Golden Mile",
];

struct BenchOrganization {
    organization_id: String,
    name: String,
    legal_name: String,
    /// Indexes into `BenchPlan::rooftops`.
    rooftops: std::ops::Range<usize>,
}

struct BenchRooftop {
    name: String,
    legal_name: String,
    street: String,
    city: &'static City,
    country: &'static str,
    departments: &'static [&'static str],
    phone_suffix: u64,
    sunday: bool,
    inventory_sla: u32,
    feed: FeedRooftop,
}

/// Organizations and rooftops of a generated bundle.
struct BenchPlan {
    organizations: Vec<BenchOrganization>,
    rooftops: Vec<BenchRooftop>,
}

impl BenchPlan {
    /// `ceil(M/10)` organizations (at least 2 when M ≥ 2), each a block of
    /// rooftops; every third organization (the second, fifth, ...) is
    /// Canadian (CAD, km), the rest American (USD, mi).
    fn new(options: &DemoOptions, year: i32) -> Self {
        let m = options.rooftops;
        let orgs = m.div_ceil(10).max(m.min(2));
        let mut organizations = Vec::with_capacity(orgs);
        let mut rooftops = Vec::with_capacity(m);
        for k in 0..orgs {
            let start = k * m / orgs;
            let end = (k + 1) * m / orgs;
            let canada = k % 3 == 1;
            let short = GROUPS[k % GROUPS.len()];
            let name = if k < GROUPS.len() {
                format!("{short} Auto Group")
            } else {
                format!("{short} Auto Group {}", k / GROUPS.len() + 1)
            };
            let legal_name = if canada {
                format!("{name} Inc.")
            } else {
                format!("{name}, LLC")
            };
            let organization_id = format!("org.bench-{:03}", k + 1);
            for i in start..end {
                let mut rng = Rng::new(mix(options.seed ^ 0x7F4A_7C15_9E37_79B9) ^ mix(i as u64));
                let (cities, country, currency, unit) = if canada {
                    (CA_CITIES, "CA", "CAD", Unit::Km)
                } else {
                    (US_CITIES, "US", "USD", Unit::Mi)
                };
                let city = rng.pick(cities);
                let franchise = *rng.pick(FRANCHISE_MAKES);
                let rooftop_id = format!("roof.bench-{:04}", i + 1);
                let host = format!("bench-{:04}.example", i + 1);
                let street = format!("{} {}", rng.range(100, 9999), rng.pick(STREETS));
                let departments: &[&str] = if rng.chance(200) {
                    &["sales", "internet_sales", "service"]
                } else {
                    &["sales", "internet_sales", "service", "parts"]
                };
                let phone_suffix = rng.below(97);
                let sunday = rng.chance(300);
                let inventory_sla = if rng.chance(250) { 1800 } else { 900 };
                let feed = FeedRooftop::new(
                    RooftopIdentity {
                        organization_id: organization_id.clone(),
                        rooftop_id,
                        currency: currency.to_owned(),
                        unit,
                        country: Some(country),
                        subdivision: Some(format!("{country}-{}", city.region)),
                        host,
                        franchise,
                        stale_per_mille: 10,
                    },
                    &mut rng,
                    year,
                );
                let corp = if canada { "Inc." } else { "LLC" };
                rooftops.push(BenchRooftop {
                    name: format!("{short} {franchise} {}", city.locality),
                    legal_name: format!("{short} {} Motors {:04}, {corp}", city.locality, i + 1),
                    street,
                    city,
                    country,
                    departments,
                    phone_suffix,
                    sunday,
                    inventory_sla,
                    feed,
                });
            }
            organizations.push(BenchOrganization {
                organization_id,
                name,
                legal_name,
                rooftops: start..end,
            });
        }
        BenchPlan {
            organizations,
            rooftops,
        }
    }

    /// The dealers file (docs/dealers-file.md). Every string is written as
    /// a JSON-style double-quoted scalar, so YAML 1.1 pitfalls (`ON`,
    /// `09:00`, postal codes) cannot bite.
    fn dealers_yaml(&self) -> String {
        let mut y = String::with_capacity(256 + self.rooftops.len() * 1800);
        y.push_str(
            "# Generated by `dealer-gateway demo generate`: fictional dealers for scale tests.\n\
             # Format: docs/dealers-file.md. Feeds: inventory/<rooftop_id>.csv (DAP Inventory CSV 0.1).\n\
             organizations:\n",
        );
        let q = |s: &str| {
            let mut out = String::with_capacity(s.len() + 2);
            json_str(&mut out, s);
            out
        };
        for org in &self.organizations {
            let _ = writeln!(y, "  - organization_id: {}", q(&org.organization_id));
            let _ = writeln!(y, "    name: {}", q(&org.name));
            let _ = writeln!(y, "    legal_name: {}", q(&org.legal_name));
            y.push_str("    rooftops:\n");
            for r in &self.rooftops[org.rooftops.clone()] {
                let f = &r.feed;
                let host = &f.id.host;
                let _ = writeln!(y, "      - rooftop_id: {}", q(&f.id.rooftop_id));
                let _ = writeln!(y, "        name: {}", q(&r.name));
                let _ = writeln!(y, "        legal_name: {}", q(&r.legal_name));
                let _ = writeln!(y, "        website: {}", q(&format!("https://{host}/")));
                y.push_str("        address:\n");
                let _ = writeln!(y, "          lines: [{}]", q(&r.street));
                let _ = writeln!(y, "          locality: {}", q(r.city.locality));
                let _ = writeln!(y, "          region: {}", q(r.city.region));
                let _ = writeln!(y, "          postal_code: {}", q(r.city.postal_code));
                let _ = writeln!(y, "          country: {}", q(r.country));
                let _ = writeln!(y, "        timezone: {}", q(r.city.timezone));
                let departments: Vec<String> = r.departments.iter().map(|d| q(d)).collect();
                let _ = writeln!(y, "        departments: [{}]", departments.join(", "));
                y.push_str("        contacts:\n");
                let phone = |n: u64| q(&format!("+1{}55501{:02}", r.city.area_code, n));
                let _ = writeln!(
                    y,
                    "          - {{department: \"sales\", channel: \"phone\", value: {}, public: true}}",
                    phone(r.phone_suffix)
                );
                let _ = writeln!(
                    y,
                    "          - {{department: \"internet_sales\", channel: \"email\", value: {}, public: true}}",
                    q(&format!("internet@{host}"))
                );
                let _ = writeln!(
                    y,
                    "          - {{department: \"service\", channel: \"phone\", value: {}, public: true}}",
                    phone(r.phone_suffix + 1)
                );
                if r.departments.contains(&"parts") {
                    let _ = writeln!(
                        y,
                        "          - {{department: \"parts\", channel: \"phone\", value: {}, public: true}}",
                        phone(r.phone_suffix + 2)
                    );
                }
                y.push_str("        hours:\n");
                for day in ["monday", "tuesday", "wednesday", "thursday", "friday"] {
                    let _ = writeln!(
                        y,
                        "          - {{day: \"{day}\", opens: \"09:00\", closes: \"20:00\"}}"
                    );
                }
                y.push_str(
                    "          - {day: \"saturday\", opens: \"09:00\", closes: \"18:00\"}\n",
                );
                if r.sunday {
                    y.push_str(
                        "          - {day: \"sunday\", opens: \"11:00\", closes: \"17:00\"}\n",
                    );
                }
                let languages = match (r.country, r.city.region) {
                    ("CA", "QC") => "[\"fr-CA\", \"en-CA\"]",
                    ("CA", _) => "[\"en-CA\", \"fr-CA\"]",
                    _ => "[\"en-US\", \"es-US\"]",
                };
                let _ = writeln!(y, "        supported_languages: {languages}");
                let _ = writeln!(y, "        supported_currencies: [{}]", q(&f.id.currency));
                y.push_str("        gateway_settings:\n");
                let _ = writeln!(y, "          currency: {}", q(&f.id.currency));
                let _ = writeln!(y, "          odometer_unit: {}", q(f.id.unit.as_str()));
                y.push_str("          publication:\n            anonymous_reads: true\n");
                let _ = writeln!(
                    y,
                    "          freshness_sla_seconds:\n            inventory: {}",
                    r.inventory_sla
                );
            }
        }
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::Value;
    use std::collections::{HashMap, HashSet};
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 9, 14, 15, 30, 12).unwrap()
    }

    /// A fresh directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> Self {
            static N: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "gateway-demo-{tag}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// Minimal RFC 4180 reader: header + records as maps.
    fn parse_csv(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
        let mut records = Vec::new();
        let mut record = Vec::new();
        let mut field = String::new();
        let mut chars = text.chars().peekable();
        let mut quoted = false;
        while let Some(c) = chars.next() {
            if quoted {
                if c == '"' {
                    if chars.peek() == Some(&'"') {
                        chars.next();
                        field.push('"');
                    } else {
                        quoted = false;
                    }
                } else {
                    field.push(c);
                }
            } else {
                match c {
                    '"' => quoted = true,
                    ',' => record.push(std::mem::take(&mut field)),
                    '\r' => {}
                    '\n' => {
                        record.push(std::mem::take(&mut field));
                        records.push(std::mem::take(&mut record));
                    }
                    c => field.push(c),
                }
            }
        }
        assert!(!quoted, "unterminated quote");
        assert!(field.is_empty() && record.is_empty(), "no final newline");
        let header = records.remove(0);
        (header, records)
    }

    fn rows_of(bytes: &[u8]) -> Vec<HashMap<String, String>> {
        let (header, records) = parse_csv(std::str::from_utf8(bytes).unwrap());
        assert_eq!(header, CSV_COLUMNS);
        records
            .into_iter()
            .map(|r| {
                assert_eq!(r.len(), header.len());
                header.iter().cloned().zip(r).collect()
            })
            .collect()
    }

    fn read_bundle(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out = vec![(
            "dealers.yaml".to_owned(),
            fs::read(dir.join("dealers.yaml")).unwrap(),
        )];
        let mut names: Vec<_> = fs::read_dir(dir.join("inventory"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        for n in names {
            let bytes = fs::read(dir.join("inventory").join(&n)).unwrap();
            out.push((n, bytes));
        }
        out
    }

    fn is_vin(v: &str) -> bool {
        v.len() == 17
            && v.bytes()
                .all(|c| c.is_ascii_digit() || (c.is_ascii_uppercase() && !b"IOQ".contains(&c)))
    }

    fn demo_rooftops() -> Vec<(String, String, String, String)> {
        let text = include_str!("../../demo/dealers.yaml");
        let doc: Value = yaml_serde::from_str(text).unwrap();
        let mut out = Vec::new();
        for org in doc["organizations"].as_array().unwrap() {
            for r in org["rooftops"].as_array().unwrap() {
                out.push((
                    org["organization_id"].as_str().unwrap().to_owned(),
                    r["rooftop_id"].as_str().unwrap().to_owned(),
                    r["gateway_settings"]["currency"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                    r["gateway_settings"]["odometer_unit"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                ));
            }
        }
        out
    }

    /// Every rule of DAP Inventory CSV 0.1 the generator promises, per row.
    fn check_row(row: &HashMap<String, String>, currency: &str, unit: &str, now: DateTime<Utc>) {
        for c in CSV_COLUMNS[..10]
            .iter()
            .chain(&["advertised_price_minor", "currency"])
        {
            assert!(!row[*c].is_empty(), "required column {c} empty: {row:?}");
        }
        assert!(is_vin(&row["vin"]), "bad VIN {}", row["vin"]);
        let vin: [u8; 17] = row["vin"].as_bytes().try_into().unwrap();
        assert_eq!(
            vin[8],
            vin_check_digit(&vin),
            "check digit of {}",
            row["vin"]
        );
        let year: i32 = row["year"].parse().unwrap();
        assert!((2015..=2027).contains(&year), "year {year}");
        assert!(["new", "used", "certified"].contains(&row["condition"].as_str()));
        assert!(row["listing_url"].starts_with("https://"));
        assert!(row["listing_url"].ends_with(&format!("/inventory/{}", row["stock_number"])));
        let observed = DateTime::parse_from_rfc3339(&row["observed_at"]).unwrap();
        assert!(observed <= now);
        for c in ["stocked_at", "first_public_listing_at"] {
            if !row[c].is_empty() {
                let t = DateTime::parse_from_rfc3339(&row[c]).unwrap();
                assert!(t <= observed, "{c} after observed_at");
            }
        }
        let price: i64 = row["advertised_price_minor"].parse().unwrap();
        assert!(price > 100_000, "implausible price {price}");
        assert_eq!(row["currency"], currency);
        assert!(["", "unknown"].contains(&row["government_charges_status"].as_str()));
        assert!(
            [
                "available",
                "unavailable",
                "in_transit",
                "reserved",
                "unknown"
            ]
            .contains(&row["availability_status"].as_str())
        );
        assert!(["car", "truck", "suv", "van"].contains(&row["vehicle_type"].as_str()));
        if row["odometer_value"].is_empty() {
            assert!(row["odometer_unit"].is_empty());
        } else {
            let odo: i64 = row["odometer_value"].parse().unwrap();
            assert!(odo >= 0);
            assert_eq!(row["odometer_unit"], unit);
        }
        assert!(
            [
                "",
                "manufacturer_cpo",
                "dealer_certified",
                "third_party_certified",
                "not_certified"
            ]
            .contains(&row["certification_type"].as_str())
        );
        for c in [
            "required_dealer_charges_json",
            "conditional_adjustments_json",
            "history_reports_json",
            "image_urls_json",
            "features_json",
        ] {
            if row[c].is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(&row[c]).unwrap_or_else(|e| panic!("{c}: {e}"));
            let items = v
                .as_array()
                .unwrap_or_else(|| panic!("{c} is not an array"));
            for item in items {
                match c {
                    "image_urls_json" => assert!(item.as_str().unwrap().starts_with("https://")),
                    "features_json" => assert!(item.is_string()),
                    "history_reports_json" => {
                        assert!(item["provider_id"].as_str().unwrap().contains('.'));
                        assert!(item["summary_sharing_authorized"].is_boolean());
                    }
                    _ => {
                        assert!(
                            item["amount"].is_null() || item["amount"]["amount_minor"].is_i64()
                        );
                        if !item["amount"].is_null() {
                            assert_eq!(item["amount"]["currency"], currency);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let options = DemoOptions {
            vehicles: 500,
            rooftops: 4,
            seed: 7,
        };
        let (a, b, c) = (TempDir::new("a"), TempDir::new("b"), TempDir::new("c"));
        generate_at(&options, &a.0, now()).unwrap();
        generate_at(&options, &b.0, now()).unwrap();
        generate_at(&DemoOptions { seed: 8, ..options }, &c.0, now()).unwrap();
        let (ba, bb, bc) = (read_bundle(&a.0), read_bundle(&b.0), read_bundle(&c.0));
        assert_eq!(ba, bb);
        assert_eq!(ba.len(), 5);
        // The dealers file and every feed differ with the seed.
        for (x, y) in ba.iter().zip(&bc) {
            assert_eq!(x.0, y.0);
            assert_ne!(x.1, y.1, "{} did not change with the seed", x.0);
        }

        let feeds = demo_feeds(&demo_rooftops(), 1, now());
        assert_eq!(feeds, demo_feeds(&demo_rooftops(), 1, now()));
        assert_ne!(feeds, demo_feeds(&demo_rooftops(), 2, now()));
    }

    #[test]
    fn bundle_has_the_requested_counts_and_valid_rows() {
        let options = DemoOptions {
            vehicles: 1_234,
            rooftops: 23,
            seed: 42,
        };
        let dir = TempDir::new("counts");
        let summary = generate_at(&options, &dir.0, now()).unwrap();
        assert_eq!(summary.rooftops, 23);
        assert_eq!(summary.vehicles, 1_234);
        assert_eq!(summary.organizations, 3);
        assert_eq!(summary.files.len(), 24);
        assert_eq!(summary.files[0], dir.0.join("dealers.yaml"));

        let yaml = fs::read_to_string(dir.0.join("dealers.yaml")).unwrap();
        let doc: Value = yaml_serde::from_str(&yaml).unwrap();
        let mut settings = HashMap::new();
        for org in doc["organizations"].as_array().unwrap() {
            for r in org["rooftops"].as_array().unwrap() {
                let gs = &r["gateway_settings"];
                settings.insert(
                    r["rooftop_id"].as_str().unwrap().to_owned(),
                    (
                        org["organization_id"].as_str().unwrap().to_owned(),
                        gs["currency"].as_str().unwrap().to_owned(),
                        gs["odometer_unit"].as_str().unwrap().to_owned(),
                    ),
                );
            }
        }
        assert_eq!(settings.len(), 23);
        let currencies: HashSet<_> = settings.values().map(|s| s.1.as_str()).collect();
        assert_eq!(currencies, HashSet::from(["USD", "CAD"]));

        let mut vins = HashSet::new();
        let mut total = 0;
        let mut conditions = HashMap::new();
        for path in &summary.files[1..] {
            let rows = rows_of(&fs::read(path).unwrap());
            let mut stocks = HashSet::new();
            for row in &rows {
                let (org, currency, unit) = &settings[&row["rooftop_id"]];
                assert_eq!(&row["organization_id"], org);
                assert_eq!(
                    path.file_name().unwrap().to_str().unwrap(),
                    format!("{}.csv", row["rooftop_id"])
                );
                check_row(row, currency, unit, now());
                assert!(vins.insert(row["vin"].clone()), "duplicate VIN");
                assert!(
                    stocks.insert(row["stock_number"].clone()),
                    "duplicate stock"
                );
                *conditions.entry(row["condition"].clone()).or_insert(0) += 1;
            }
            // Spread evenly: 1234 / 23 = 53 or 54 per rooftop.
            assert!((53..=54).contains(&rows.len()));
            total += rows.len();
        }
        assert_eq!(total, 1_234);
        assert_eq!(conditions.len(), 3, "{conditions:?}");
    }

    #[test]
    fn generated_dealers_file_is_valid() {
        let catalog = crate::catalog::Catalog::load().unwrap();
        for rooftops in [1, 2, 11, 40] {
            let dir = TempDir::new("dealers");
            let options = DemoOptions {
                vehicles: 0,
                rooftops,
                seed: rooftops as u64,
            };
            generate_at(&options, &dir.0, now()).unwrap();
            let bytes = fs::read(dir.0.join("dealers.yaml")).unwrap();
            let doc: Value = yaml_serde::from_str(std::str::from_utf8(&bytes).unwrap()).unwrap();
            if let Err(errors) = catalog.validate_dealers_file(&doc) {
                panic!("{rooftops} rooftops: {errors:?}");
            }
            // Cross-record rules too (unique ids).
            let orgs =
                crate::dealers::parse(&catalog, "dealers.yaml", &bytes, "dealers-file:test", now())
                    .unwrap();
            let n: usize = doc["organizations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["rooftops"].as_array().unwrap().len())
                .sum();
            assert_eq!(n, rooftops);
            assert_eq!(
                orgs.len(),
                options.rooftops.div_ceil(10).max(rooftops.min(2))
            );
            // Header-only feeds for 0 vehicles.
            let feed = fs::read(dir.0.join("inventory/roof.bench-0001.csv")).unwrap();
            assert_eq!(rows_of(&feed).len(), 0);
        }
    }

    #[test]
    fn json_cells_match_the_pricing_schema() {
        let catalog = crate::catalog::Catalog::load().unwrap();
        let validator = |name: &str| {
            let schema = crate::catalog::bundle_reference(
                &catalog.schema_documents,
                &format!("pricing.schema.json#/$defs/{name}"),
            )
            .unwrap();
            jsonschema::draft202012::options()
                .should_validate_formats(true)
                .build(&schema)
                .unwrap()
        };
        let charge = validator("dealerCharge");
        let adjustment = validator("conditionalAdjustment");
        let mut seen = (0, 0, HashSet::new());
        for (_, bytes) in demo_feeds(&demo_rooftops(), 3, now()) {
            for row in rows_of(&bytes) {
                for (cell, v) in [
                    ("required_dealer_charges_json", &charge),
                    ("conditional_adjustments_json", &adjustment),
                ] {
                    if row[cell].is_empty() {
                        continue;
                    }
                    let items: Vec<Value> = serde_json::from_str(&row[cell]).unwrap();
                    let ids: HashSet<&str> = items
                        .iter()
                        .filter_map(|i| i["adjustment_id"].as_str())
                        .collect();
                    for item in &items {
                        let errors: Vec<_> = v.iter_errors(item).map(|e| e.to_string()).collect();
                        assert!(errors.is_empty(), "{cell}: {item}: {errors:?}");
                        if let Some(with) = item["stacking"]["combinable_with"].as_array() {
                            for id in with {
                                assert!(ids.contains(id.as_str().unwrap()));
                            }
                        }
                        if cell.starts_with("required") {
                            seen.0 += 1;
                        } else {
                            seen.1 += 1;
                            seen.2.insert(
                                item["criteria"][0]["criterion"]
                                    .as_str()
                                    .unwrap()
                                    .to_owned(),
                            );
                        }
                    }
                }
            }
        }
        assert!(seen.0 > 200 && seen.1 > 20, "{seen:?}");
        assert!(seen.2.len() >= 5, "{:?}", seen.2);
    }

    #[test]
    fn demo_feeds_cover_the_demo() {
        let rooftops = demo_rooftops();
        // Five published rooftops plus the partner-only fleet rooftop.
        assert_eq!(rooftops.len(), 6);
        let n = now();
        let feeds = demo_feeds(&rooftops, 2026, n);
        assert_eq!(feeds.len(), rooftops.len());
        let mut vins = HashSet::new();
        for ((org, roof, currency, unit), (file, bytes)) in rooftops.iter().zip(&feeds) {
            assert_eq!(file, &format!("{roof}.csv"));
            let rows = rows_of(bytes);
            assert!((60..=120).contains(&rows.len()), "{roof}: {}", rows.len());
            let mut stocks = HashSet::new();
            let mut stale = 0;
            let mut statuses = HashSet::new();
            let mut conditions = HashSet::new();
            let (mut used_no_odo, mut used_no_history, mut new_franchise) = (0, 0, 0);
            let franchise = KNOWN_DEMO_ROOFTOPS
                .iter()
                .find(|k| k.rooftop_id == roof)
                .unwrap();
            for row in &rows {
                assert_eq!(&row["organization_id"], org);
                assert_eq!(&row["rooftop_id"], roof);
                check_row(row, currency, unit, n);
                assert!(vins.insert(row["vin"].clone()));
                assert!(stocks.insert(row["stock_number"].clone()));
                assert!(row["listing_url"].starts_with(&format!("https://{}/", franchise.host)));
                let observed = DateTime::parse_from_rfc3339(&row["observed_at"]).unwrap();
                let age = n.signed_duration_since(observed);
                if age > Duration::hours(2) {
                    stale += 1;
                } else {
                    assert!(age <= Duration::minutes(15) && age >= Duration::minutes(1));
                }
                statuses.insert(row["availability_status"].clone());
                conditions.insert(row["condition"].clone());
                if row["condition"] != "new" {
                    used_no_odo += usize::from(row["odometer_value"].is_empty());
                    used_no_history += usize::from(row["history_reports_json"].is_empty());
                } else {
                    assert_eq!(row["make"], franchise.make);
                    new_franchise += 1;
                }
            }
            assert!((2..=3).contains(&stale), "{roof}: {stale} stale");
            for s in ["available", "in_transit", "reserved", "unavailable"] {
                assert!(statuses.contains(s), "{roof}: no {s}");
            }
            assert_eq!(conditions.len(), 3, "{roof}: {conditions:?}");
            assert!(used_no_odo >= 1 && used_no_history >= 1);
            assert!(new_franchise >= 15, "{roof}: {new_franchise} new");
        }
    }

    #[test]
    fn prices_are_plausible_integer_minor_units() {
        let feeds = demo_feeds(&demo_rooftops(), 9, now());
        for (_, bytes) in &feeds {
            for row in rows_of(bytes) {
                let price: i64 = row["advertised_price_minor"].parse().unwrap();
                // Whole currency units: USD and CAD have 2 decimals.
                assert_eq!(price % 100, 0);
                assert!((350_000..=15_000_000).contains(&price), "{price}");
                if row["condition"] == "new" {
                    assert!(price >= 1_900_000, "new {} at {price}", row["model"]);
                }
            }
        }
    }

    #[test]
    fn vins_are_unique_and_well_formed_at_scale() {
        let vins = VinSpace::new(99);
        let mut rng = Rng::new(1);
        let mut seen = HashSet::new();
        // Straddle the 10^6 boundary where positions 7-8 change.
        for index in (0..60_000u64).chain(999_000..1_061_000) {
            let v = vins.vin(index, "1HG", 2026, &mut rng);
            assert!(is_vin(&v), "{v}");
            assert_eq!(&v[9..10], "T");
            assert!(seen.insert(v));
        }
        // A known-good VIN (check digit example from 49 CFR 565): 1M8GDM9A_KP042788.
        assert_eq!(vin_check_digit(b"1M8GDM9AXKP042788"), b'X');
        assert_eq!(vin_check_digit(b"11111111111111111"), b'1');
    }

    #[test]
    fn invalid_options_are_refused() {
        let dir = TempDir::new("invalid");
        let err = generate_at(
            &DemoOptions {
                vehicles: 10,
                rooftops: 0,
                seed: 1,
            },
            &dir.0,
            now(),
        )
        .unwrap_err();
        assert!(matches!(err, DemoError::InvalidOptions(_)), "{err}");
        assert!(!dir.0.join("dealers.yaml").exists());
    }

    #[test]
    fn io_errors_name_the_path() {
        let dir = TempDir::new("io");
        let blocker = dir.0.join("file");
        fs::write(&blocker, b"x").unwrap();
        let err = generate_at(
            &DemoOptions {
                vehicles: 1,
                rooftops: 1,
                seed: 1,
            },
            &blocker,
            now(),
        )
        .unwrap_err();
        assert!(matches!(err, DemoError::Io { .. }));
        assert!(err.to_string().contains("file"), "{err}");
    }

    /// Parse every feed with the DAP CSV importer against its dealers file.
    fn import_all(dealers: &[u8], feeds: &[(String, Vec<u8>)], now: DateTime<Utc>) -> usize {
        use crate::ingest::{FeedFormat, IngestContext, parse_feed};
        let catalog = crate::catalog::Catalog::load().unwrap();
        let orgs = crate::dealers::parse(&catalog, "dealers.yaml", dealers, "test", now).unwrap();
        let mut imported = 0;
        for (file, bytes) in feeds {
            let rooftop_id = file.strip_suffix(".csv").unwrap();
            let org = orgs
                .iter()
                .find(|o| o.rooftops.iter().any(|r| r.rooftop_id == rooftop_id))
                .unwrap();
            let ctx = IngestContext::for_organization(org, Some(rooftop_id), now);
            let parsed =
                parse_feed(FeedFormat::DapCsv, file, bytes, &ctx).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(parsed.rooftops.len(), 1);
            assert_eq!(parsed.rooftops[0].vehicles.len(), parsed.rows_read);
            imported += parsed.rows_read;
        }
        imported
    }

    #[test]
    fn demo_feeds_import_without_problems() {
        let dealers =
            fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../demo/dealers.yaml")).unwrap();
        for seed in [0, 1, 2026] {
            let feeds = demo_feeds(&demo_rooftops(), seed, now());
            let rows: usize = feeds.iter().map(|(_, b)| rows_of(b).len()).sum();
            assert_eq!(import_all(&dealers, &feeds, now()), rows);
        }
    }

    #[test]
    fn generated_bundle_imports_without_problems() {
        let dir = TempDir::new("import");
        let options = DemoOptions {
            vehicles: 2_000,
            rooftops: 12,
            seed: 5,
        };
        generate_at(&options, &dir.0, now()).unwrap();
        let bundle = read_bundle(&dir.0);
        assert_eq!(import_all(&bundle[0].1, &bundle[1..], now()), 2_000);
    }

    /// `cargo test --release -p gateway --lib demo::tests::speed -- --ignored --nocapture`
    #[test]
    #[ignore = "timing run"]
    fn speed() {
        let dir = TempDir::new("speed");
        let started = std::time::Instant::now();
        let s = generate(
            &DemoOptions {
                vehicles: 100_000,
                rooftops: 100,
                seed: 1,
            },
            &dir.0,
        )
        .unwrap();
        let elapsed = started.elapsed();
        let bytes: u64 = s.files.iter().map(|f| fs::metadata(f).unwrap().len()).sum();
        println!("100000 vehicles, 100 rooftops: {elapsed:?}, {bytes} bytes");
    }
}
