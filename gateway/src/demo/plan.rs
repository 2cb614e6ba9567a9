//! The organizations and rooftops of a generated bundle: `ceil(M/10)`
//! organizations (at least 2 when M ≥ 2), each a block of rooftops; every
//! third organization (the second, fifth, ...) is Canadian (CAD, km), the
//! rest American (USD, mi). Each rooftop draws from its own generator keyed
//! by (seed, rooftop index).

use super::DemoOptions;
use super::data::{CA_CITIES, City, FRANCHISE_MAKES, GROUPS, STREETS, US_CITIES};
use super::random::{Rng, mix};
use super::rooftop::{FeedRooftop, RooftopIdentity, Unit};

pub(super) struct BenchOrganization {
    pub(super) organization_id: String,
    pub(super) name: String,
    pub(super) legal_name: String,
    /// Indexes into `BenchPlan::rooftops`.
    pub(super) rooftops: std::ops::Range<usize>,
}

pub(super) struct BenchRooftop {
    pub(super) name: String,
    pub(super) legal_name: String,
    pub(super) street: String,
    pub(super) city: &'static City,
    pub(super) country: &'static str,
    pub(super) departments: &'static [&'static str],
    /// Last two digits of the sales line (555-01xx); service and parts
    /// follow it.
    pub(super) phone_suffix: u64,
    pub(super) sunday: bool,
    pub(super) inventory_sla: u32,
    pub(super) feed: FeedRooftop,
}

/// Organizations and rooftops of a generated bundle.
pub(super) struct BenchPlan {
    pub(super) organizations: Vec<BenchOrganization>,
    pub(super) rooftops: Vec<BenchRooftop>,
}

impl BenchPlan {
    pub(super) fn new(options: &DemoOptions, year: i32) -> Self {
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
                        charges_in_settings: false,
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
}
