//! One DAP Inventory CSV 0.1 feed (DAP 6): a header row with
//! [`CSV_COLUMNS`], then one row per vehicle, written with the `csv` crate
//! (RFC 4180 quoting, `\n` line ends) from a serde row type, the JSON cells
//! with `serde_json`.
//!
//! Each vehicle draws from its own generator keyed by (seed, index), so a
//! row does not depend on the rows before it, and rows are streamed to the
//! output.

use std::io::{self, Write};

use serde::{Serialize, Serializer};

use super::CSV_COLUMNS;
use super::cells::{self, Condition, Evidence, EvidenceRow, OfferScratch};
use super::clock::{Clock, DAY, HOUR, ts};
use super::data::{EXTERIOR_COLORS, INTERIOR_COLORS, MODELS, Model};
use super::random::{Rng, mix};
use super::rooftop::FeedRooftop;
use super::vin::VinSpace;

/// Forced facts for one row of a demo feed (the rest stays random).
#[derive(Clone, Copy, Default)]
pub(super) struct Override {
    pub(super) stale: bool,
    pub(super) availability: Option<&'static str>,
    pub(super) condition: Option<Condition>,
    pub(super) no_odometer: bool,
    pub(super) no_history: bool,
    /// Used-vehicle evidence to show (its condition wins over `condition`).
    pub(super) evidence: Option<Evidence>,
}

/// One feed to write: `count` rows for `roof`, vehicle indexes from
/// `first_index` (unique in the bundle, they key the VINs).
pub(super) struct FeedJob<'a> {
    pub(super) roof: &'a FeedRooftop,
    pub(super) vins: &'a VinSpace,
    pub(super) seed: u64,
    pub(super) first_index: u64,
    pub(super) count: usize,
    pub(super) clock: &'a Clock,
    /// Per-row overrides (demo feeds); empty = all random.
    pub(super) overrides: &'a [Override],
}

/// A JSON cell already serialized by `serde_json` (always UTF-8); empty =
/// unknown (DAP 6: an empty cell means unknown).
struct JsonCell<'a>(&'a [u8]);

impl Serialize for JsonCell<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.0)
    }
}

/// One feed row; the field order is [`CSV_COLUMNS`] (a unit test checks
/// it). `None` and `""` are empty cells.
#[derive(Serialize)]
struct FeedRow<'a> {
    organization_id: &'a str,
    rooftop_id: &'a str,
    vin: &'a str,
    stock_number: &'a str,
    year: i32,
    make: &'a str,
    model: &'a str,
    condition: &'a str,
    listing_url: &'a str,
    observed_at: &'a str,
    advertised_price_minor: i64,
    currency: &'a str,
    required_dealer_charges_json: JsonCell<'a>,
    conditional_adjustments_json: JsonCell<'a>,
    government_charges_status: &'a str,
    availability_status: &'a str,
    trim: &'a str,
    vehicle_type: &'a str,
    body_style: &'a str,
    exterior_color: &'a str,
    interior_color: &'a str,
    odometer_value: Option<i64>,
    odometer_unit: &'a str,
    stocked_at: &'a str,
    first_public_listing_at: &'a str,
    history_reports_json: JsonCell<'a>,
    certification_type: &'a str,
    image_urls_json: JsonCell<'a>,
    features_json: JsonCell<'a>,
    odometer_status: &'a str,
    title_json: JsonCell<'a>,
    inspection_json: JsonCell<'a>,
    reconditioning_json: JsonCell<'a>,
    certification_program: &'a str,
    charge_classes_json: JsonCell<'a>,
}

/// Buffers reused from row to row.
#[derive(Default)]
struct Scratch {
    listing_url: String,
    charges: Vec<u8>,
    adjustments: Vec<u8>,
    history: Vec<u8>,
    images: Vec<u8>,
    features: Vec<u8>,
    title: Vec<u8>,
    inspection: Vec<u8>,
    reconditioning: Vec<u8>,
    classes: Vec<u8>,
    offers: OfferScratch,
}

/// Serialize `value` into `buf` (cleared first); `None` leaves it empty.
fn json_into<T: Serialize>(buf: &mut Vec<u8>, value: Option<&T>) -> io::Result<()> {
    buf.clear();
    if let Some(v) = value {
        serde_json::to_writer(&mut *buf, v)?;
    }
    Ok(())
}

impl FeedJob<'_> {
    /// Write the header and every row to `out`; returns `out` with every
    /// byte written to it.
    pub(super) fn write<W: Write>(&self, out: W) -> io::Result<W> {
        let mut csv = csv::WriterBuilder::new()
            .has_headers(false)
            .buffer_capacity(1 << 16)
            .from_writer(out);
        csv.write_record(CSV_COLUMNS)?;
        let mut scratch = Scratch::default();
        let seed_key = mix(self.seed ^ 0x2545_F491_4F6C_DD1D);
        for j in 0..self.count {
            let index = self.first_index + j as u64;
            let mut rng = Rng::new(seed_key ^ mix(index.wrapping_add(0x6A09_E667_F3BC_C909)));
            let ov = self.overrides.get(j).copied().unwrap_or_default();
            self.vehicle_row(&mut rng, index, j, ov, &mut scratch, &mut csv)?;
        }
        csv.into_inner().map_err(|e| e.into_error())
    }

    /// One vehicle. The random draws happen in a fixed order (the order of
    /// the columns they fill), so a seed keeps giving the same row.
    fn vehicle_row<W: Write>(
        &self,
        rng: &mut Rng,
        index: u64,
        j: usize,
        ov: Override,
        s: &mut Scratch,
        csv: &mut csv::Writer<W>,
    ) -> io::Result<()> {
        let roof = self.roof;
        let id = &roof.id;
        let cy = self.clock.year;

        // Condition and model.
        let roll = rng.below(1000);
        let forced = ov.evidence.map(Evidence::condition).or(ov.condition);
        let mut condition = forced.unwrap_or(if roll < 450 {
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
        let drawn_known = match condition {
            Condition::New => !rng.chance(200),
            _ => !rng.chance(20),
        };
        // A row that shows used-vehicle evidence always has a reading.
        let odometer_known = (drawn_known && !ov.no_odometer) || ov.evidence.is_some();

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
        let mut stocked_ago = None;
        let (stocked_at, first_listed) = if availability == "in_transit" {
            let listed = self.clock.ago(rng.range(DAY, 10 * DAY).max(observed_ago));
            (String::new(), ts(listed))
        } else {
            let stocked = rng.range(DAY, 200 * DAY);
            stocked_ago = Some(stocked);
            let stocked_ago = stocked;
            let listed_ago = (stocked_ago - rng.range(0, 3 * DAY)).max(observed_ago);
            let listed = if rng.chance(100) {
                String::new()
            } else {
                ts(self.clock.ago(listed_ago))
            };
            (ts(self.clock.ago(stocked_ago)), listed)
        };
        s.listing_url.clear();
        s.listing_url.push_str("https://");
        s.listing_url.push_str(&id.host);
        s.listing_url.push_str("/inventory/");
        s.listing_url.push_str(&stock);

        // Disclosure columns.
        let charges = cells::charges(rng, roof, condition, m);
        json_into(&mut s.charges, charges.as_ref())?;
        // Every charge the row lists is classified (docs/lint.md); drawn
        // from nothing random, so the other cells stay as they were.
        let classes = charges
            .as_deref()
            .filter(|c| !c.is_empty())
            .map(cells::charge_classes);
        json_into(&mut s.classes, classes.as_ref())?;
        let adjustments = cells::adjustments(rng, roof, self.clock, condition, m, &mut s.offers);
        json_into(&mut s.adjustments, adjustments.as_ref())?;
        let government_charges_status = if rng.chance(50) { "" } else { "unknown" };

        // Optional columns.
        let trim = if rng.chance(30) { "" } else { trim };
        let exterior_color = if rng.chance(25) {
            ""
        } else {
            rng.pick_str(EXTERIOR_COLORS)
        };
        let interior_color = if rng.chance(80) {
            ""
        } else {
            rng.pick_str(INTERIOR_COLORS)
        };
        let history = (condition != Condition::New && !ov.no_history && !rng.chance(40))
            .then(|| cells::history(rng, roof, &vin));
        json_into(&mut s.history, history.as_ref())?;
        let mut certification_type = match condition {
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
        let images = (!rng.chance(30)).then(|| {
            (1..=rng.range(1, 3))
                .map(|k| format!("https://{}/photos/{stock}/{k}.jpg", id.host))
                .collect::<Vec<_>>()
        });
        json_into(&mut s.images, images.as_ref())?;
        let features = cells::features(rng, m);
        json_into(&mut s.features, Some(&features))?;

        // Used-vehicle evidence of the rows that show it (drawn from
        // nothing random, so the rows' other facts stay as they were).
        let mut odometer_status = "";
        let mut certification_program = String::new();
        for buf in [&mut s.title, &mut s.inspection, &mut s.reconditioning] {
            buf.clear();
        }
        if let (Some(e), Some(stocked)) = (ov.evidence, stocked_ago) {
            let inspected = ts(self.clock.ago((stocked / 2).max(observed_ago)));
            let cells = cells::evidence(
                e,
                &EvidenceRow {
                    roof,
                    vin: &vin,
                    stock: &stock,
                    reading: id.unit.miles_to(miles),
                    stocked_at: &stocked_at,
                    inspected_at: &inspected,
                },
            );
            json_into(&mut s.history, Some(&cells.history))?;
            json_into(&mut s.title, cells.title.as_ref())?;
            json_into(&mut s.inspection, cells.inspection.as_ref())?;
            json_into(&mut s.reconditioning, cells.reconditioning.as_ref())?;
            odometer_status = cells.odometer_status;
            certification_type = cells.certification_type;
            certification_program = cells.certification_program.unwrap_or_default();
        }

        let observed_at = ts(observed);
        let row = FeedRow {
            organization_id: &id.organization_id,
            rooftop_id: &id.rooftop_id,
            vin: &vin,
            stock_number: &stock,
            year,
            make: m.make,
            model: m.model,
            condition: condition.as_str(),
            listing_url: &s.listing_url,
            observed_at: &observed_at,
            advertised_price_minor: price_major * roof.minor_per_major,
            currency: &id.currency,
            required_dealer_charges_json: JsonCell(&s.charges),
            conditional_adjustments_json: JsonCell(&s.adjustments),
            government_charges_status,
            availability_status: availability,
            trim,
            vehicle_type: m.vehicle_type,
            body_style: m.body_style,
            exterior_color,
            interior_color,
            odometer_value: odometer_known.then(|| id.unit.miles_to(miles)),
            odometer_unit: if odometer_known { id.unit.as_str() } else { "" },
            stocked_at: &stocked_at,
            first_public_listing_at: &first_listed,
            history_reports_json: JsonCell(&s.history),
            certification_type,
            image_urls_json: JsonCell(&s.images),
            features_json: JsonCell(&s.features),
            odometer_status,
            title_json: JsonCell(&s.title),
            inspection_json: JsonCell(&s.inspection),
            reconditioning_json: JsonCell(&s.reconditioning),
            certification_program: &certification_program,
            charge_classes_json: JsonCell(&s.classes),
        };
        csv.serialize(row)?;
        Ok(())
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
