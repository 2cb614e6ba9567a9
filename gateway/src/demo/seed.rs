//! The bundled demo that `dealer-gateway serve` loads into an empty store:
//! generated inventory for the rooftops of `demo/dealers.yaml`
//! ([`demo_feeds`]) and the incentive programs of `demo/programs/`.
//!
//! Everything is checked before anything is written ([`DemoSeed::prepare`]):
//! every feed through the same parser as `import inventory`, every programs
//! file through the same parser as `import programs`, and each
//! organization's programs as a whole set at every instant, the check
//! `import programs` makes
//! ([`crate::offers::check_program_set`]). A broken demo stops the start-up
//! with every conflict named, and leaves no partial demo behind that a
//! second start would take for a seeded store. [`DemoSeed::write`] then
//! stores the programs through the same checked store call as
//! `import programs`.

use std::io;

use chrono::{DateTime, Utc};

use super::cells::{Condition, Evidence};
use super::clock::Clock;
use super::data::{FRANCHISE_MAKES, KNOWN_DEMO_ROOFTOPS};
use super::feed::{FeedJob, Override};
use super::random::{Rng, fnv1a, mix};
use super::rooftop::{FeedRooftop, RooftopIdentity, Unit, slug_host};
use super::vin::VinSpace;
use crate::catalog::Catalog;
use crate::ingest::{FeedFormat, IngestContext, IngestError, parse_feed};
use crate::inventory::model::VehicleRecord;
use crate::offers::import::ProgramsFileError;
use crate::store::{
    OrganizationRecord, ProgramRecord, ProgramsChange, SourceRecord, Store, StoreError,
};

/// Seed of the bundled demo inventory (deterministic vehicles).
pub const DEMO_SEED: u64 = 2026;

/// The bundled demo's incentive programs, one file per demo organization:
/// `(organization_id, demo/programs/<organization_id>.yaml)`.
pub const PROGRAM_FILES: &[(&str, &str)] = &[
    (
        "org.lakeshore-auto-group",
        include_str!("../../../demo/programs/org.lakeshore-auto-group.yaml"),
    ),
    (
        "org.maplecrest-motor-group",
        include_str!("../../../demo/programs/org.maplecrest-motor-group.yaml"),
    ),
];

/// Why the bundled demo cannot be loaded. Every variant but `Store` is a
/// defect of the bundled files.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    #[error("bundled demo feed {file} could not be generated: {problem}")]
    Generate { file: String, problem: io::Error },
    #[error("bundled demo feed {file} is invalid: {problem}")]
    Feed { file: String, problem: IngestError },
    #[error("bundled demo programs are invalid: {0}")]
    Programs(ProgramsFileError),
    #[error(
        "bundled demo programs {file} name organization {organization_id}, which is not in the bundled dealers file"
    )]
    UnknownOrganization {
        file: String,
        organization_id: String,
    },
    #[error(
        "bundled demo programs of {organization_id} do not validate as a set: {}",
        conflicts.join("; ")
    )]
    ProgramSet {
        organization_id: String,
        conflicts: Vec<String>,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<SeedError> for crate::Error {
    fn from(e: SeedError) -> Self {
        match e {
            SeedError::Store(e) => crate::Error::Store(e),
            e @ (SeedError::Generate { .. }
            | SeedError::Feed { .. }
            | SeedError::Programs(_)
            | SeedError::UnknownOrganization { .. }
            | SeedError::ProgramSet { .. }) => crate::Error::Io(e.to_string()),
        }
    }
}

/// One rooftop's generated inventory, parsed.
struct DemoSnapshot {
    organization_id: String,
    rooftop_id: String,
    source: SourceRecord,
    vehicles: Vec<VehicleRecord>,
}

/// The bundled demo's inventory and programs, checked and ready to store.
pub struct DemoSeed {
    snapshots: Vec<DemoSnapshot>,
    /// Per organization, in file order: the union of its programs files.
    programs: Vec<(String, Vec<ProgramRecord>)>,
}

impl DemoSeed {
    /// Generate and check the demo for `organizations` (the parsed bundled
    /// dealers file) with the bundled [`PROGRAM_FILES`].
    pub fn prepare(
        catalog: &Catalog,
        organizations: &[OrganizationRecord],
        now: DateTime<Utc>,
    ) -> Result<Self, SeedError> {
        Self::prepare_with(catalog, organizations, PROGRAM_FILES, now)
    }

    /// [`DemoSeed::prepare`] with other programs files
    /// (`(organization_id, YAML text)`; an organization may have several).
    pub fn prepare_with(
        catalog: &Catalog,
        organizations: &[OrganizationRecord],
        program_files: &[(&str, &str)],
        now: DateTime<Utc>,
    ) -> Result<Self, SeedError> {
        let mut snapshots = Vec::new();
        for org in organizations {
            let rooftops: Vec<(String, String, String, String)> = org
                .rooftops
                .iter()
                .map(|r| {
                    (
                        org.organization_id.clone(),
                        r.rooftop_id.clone(),
                        r.settings.currency.clone(),
                        r.settings.odometer_unit.clone(),
                    )
                })
                .collect();
            let ctx = IngestContext::for_organization(org, None, now);
            let feeds =
                demo_feeds(&rooftops, DEMO_SEED, now).map_err(|problem| SeedError::Generate {
                    file: org.organization_id.clone(),
                    problem,
                })?;
            for (file_name, bytes) in feeds {
                // The same parser and rules as `import inventory`.
                let parsed = parse_feed(FeedFormat::DapCsv, &file_name, &bytes, &ctx).map_err(
                    |problem| SeedError::Feed {
                        file: file_name.clone(),
                        problem,
                    },
                )?;
                let source = parsed.source_record(now);
                for rooftop in parsed.rooftops {
                    snapshots.push(DemoSnapshot {
                        organization_id: org.organization_id.clone(),
                        rooftop_id: rooftop.rooftop_id,
                        source: source.clone(),
                        vehicles: rooftop.vehicles,
                    });
                }
            }
        }

        let mut programs: Vec<(String, Vec<ProgramRecord>)> = Vec::new();
        for (organization_id, text) in program_files {
            let name = format!("demo/programs/{organization_id}.yaml");
            if !organizations
                .iter()
                .any(|o| o.organization_id == *organization_id)
            {
                return Err(SeedError::UnknownOrganization {
                    file: name,
                    organization_id: (*organization_id).to_owned(),
                });
            }
            // The same parser and per-file rules as `import programs`.
            let parsed =
                crate::offers::import::parse(catalog, &name, text.as_bytes(), "bundled-demo", now)
                    .map_err(SeedError::Programs)?;
            match programs.iter_mut().find(|(o, _)| o == organization_id) {
                Some((_, records)) => records.extend(parsed.records),
                None => programs.push(((*organization_id).to_owned(), parsed.records)),
            }
        }
        // The whole-set check `import programs` makes in its transaction
        // over each organization's union of files.
        for (organization_id, records) in &programs {
            crate::offers::check_program_set(records).map_err(|conflicts| {
                SeedError::ProgramSet {
                    organization_id: organization_id.clone(),
                    conflicts,
                }
            })?;
        }
        Ok(DemoSeed {
            snapshots,
            programs,
        })
    }

    /// Vehicles in the demo inventory.
    pub fn vehicle_count(&self) -> usize {
        self.snapshots.iter().map(|s| s.vehicles.len()).sum()
    }

    /// Program revisions of `organization_id` in the demo.
    pub fn program_count(&self, organization_id: &str) -> usize {
        self.programs
            .iter()
            .find(|(o, _)| o == organization_id)
            .map_or(0, |(_, records)| records.len())
    }

    /// Store the snapshots, then the programs of each organization through
    /// [`Store::change_programs`] with the whole-set check, as `import
    /// programs` does (without its audit event: no one ran a command).
    /// The organizations must be stored already.
    pub async fn write(&self, store: &dyn Store) -> Result<(), SeedError> {
        for s in &self.snapshots {
            store
                .create_snapshot(&s.organization_id, &s.rooftop_id, &s.source, &s.vehicles)
                .await?;
        }
        for (organization_id, records) in &self.programs {
            store
                .change_programs(
                    organization_id,
                    ProgramsChange::Import {
                        records,
                        replace: false,
                    },
                    &crate::offers::check_program_set,
                    None,
                    false,
                )
                .await?;
        }
        Ok(())
    }
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
///
/// # Errors
/// A row that cannot be serialized (a defect: every cell type serializes).
pub fn demo_feeds(
    rooftops: &[(String, String, String, String)],
    seed: u64,
    now: DateTime<Utc>,
) -> io::Result<Vec<(String, Vec<u8>)>> {
    let clock = Clock::new(now);
    let vins = VinSpace::new(seed);
    let mut first_index = 0u64;
    let mut feeds = Vec::with_capacity(rooftops.len());
    // Drawn in the order of KNOWN_DEMO_ROOFTOPS (others after, in file
    // order): a rooftop added to the demo later never changes the inventory
    // of those before it, wherever the dealers file lists it.
    let position = |rooftop_id: &str| {
        KNOWN_DEMO_ROOFTOPS
            .iter()
            .position(|k| k.rooftop_id == rooftop_id)
            .unwrap_or(KNOWN_DEMO_ROOFTOPS.len())
    };
    let mut ordered: Vec<_> = rooftops.iter().enumerate().collect();
    ordered.sort_by_key(|(_, (_, rooftop_id, _, _))| position(rooftop_id));
    for (i, (given, (organization_id, rooftop_id, currency, unit))) in
        ordered.into_iter().enumerate()
    {
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
            _ => known.and_then(|k| match k.subdivision.split('-').next() {
                Some("DE") => Some("DE"),
                Some("GB") => Some("GB"),
                _ => None,
            }),
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
                charges_in_settings: known.is_some_and(|k| k.charges_in_settings),
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
        let bytes = feed.write(Vec::with_capacity(count * 1600))?;
        first_index += count as u64;
        feeds.push((given, (format!("{rooftop_id}.csv"), bytes)));
    }
    // Returned in the order given.
    feeds.sort_by_key(|(given, _)| *given);
    Ok(feeds.into_iter().map(|(_, feed)| feed).collect())
}

/// Where the demo's deliberate oddities go: 2–3 stale rows, one each
/// in transit, reserved and sold, one used unit without odometer, one
/// without history (and so without any used-vehicle evidence), and one used
/// unit each with complete, partial and conflicting evidence, all at
/// distinct random rows.
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
        // The used-vehicle evidence states (the unit without history above
        // is the fourth: missing evidence).
        Override {
            availability: Some("available"),
            evidence: Some(Evidence::Complete),
            ..Override::default()
        },
        Override {
            availability: Some("available"),
            evidence: Some(Evidence::Partial),
            ..Override::default()
        },
        Override {
            availability: Some("available"),
            evidence: Some(Evidence::Conflicting),
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
