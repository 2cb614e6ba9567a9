//! The published inventory feed of one organization (docs/inventory-feeds.md,
//! "The published feed"):
//! `GET /feeds/{organization_id}/inventory.csv` in DAP Inventory CSV 0.1
//! (`dealer-agent-inventory-csv/0.1`, spec/v0.1/dealer-agent-inventory-csv.md),
//! the `published_feed` of the static publication at
//! `/.well-known/dealer-agent.json` (DAP discovery section 4).
//!
//! What is in it: every vehicle of the newest inventory snapshot of each
//! rooftop of the organization that is published to anonymous callers, in
//! directory order, then snapshot order. Nothing else: a partner-only
//! rooftop is never exported, and an organization without a public rooftop
//! answers exactly as one that does not exist (DAP-CORE-031), without
//! echoing the requested id. Vehicles withdrawn by the newest snapshot are
//! not published (they are no longer offered).
//!
//! How it is written:
//! - the header names DAP's columns only (the ten required, the six
//!   disclosure columns and the optional vehicle columns). This gateway's
//!   used-vehicle evidence columns (`odometer_status`, `title_json`, …) are
//!   not DAP's, so a DAP client would refuse them; that evidence stays in
//!   `dealeragent.inventory.get_used_vehicle_details`;
//! - RFC 4180 quoting by the `csv` crate; an unknown value is an empty
//!   cell, never 0, false or "included" (DAP CSV 0.1 "Empty means unknown");
//! - a free-text cell ([`Column::is_free_text`]: stock number, make,
//!   model, trim, body style, colours) that a spreadsheet would run as a
//!   formula (it begins, after any apostrophes, with `=`, `+`, `-`, `@`,
//!   tab, carriage return, line feed or NUL:
//!   [`crate::ingest::dap_csv::FORMULA_TRIGGERS`]) is written with one more
//!   leading apostrophe, the spreadsheets' text mark (OWASP "CSV
//!   Injection"); our importer takes it off again, so the file reads back
//!   as the same vehicles. The file is public and cacheable and whoever
//!   opens it in a spreadsheet must not run a dealer-supplied formula
//!   (docs/inventory-feeds.md "Cells a spreadsheet would run"). Numbers,
//!   identifiers, enums, timestamps, URLs and JSON cells are never touched;
//! - `required_dealer_charges_json` carries the charges the gateway
//!   discloses for the vehicle: the rooftop's configured charges merged
//!   with the vehicle's own by `charge_id`, the vehicle's winning (as
//!   `disclosure::merged_charges` does). A DAP client of the file has no
//!   other way to learn a rooftop's fees, and the static publication's
//!   `disclosure_defaults` can state only what every rooftop shares.
//!   Empty only when neither the vehicle nor its rooftop says (unknown);
//! - availability is the dealer's asserted listing status in DAP's CSV
//!   enum: `on_hold` and `pending_sale` are `reserved`, `sold` is
//!   `unavailable` (a file never claims verified availability, DAP-CSV-001
//!   and DAP-DISC-003);
//! - a vehicle DAP's CSV cannot express is left out rather than written
//!   with an invented value: no VIN, no stock number or no HTTPS listing
//!   URL (required columns), or condition `demo` (the CSV's condition is
//!   `new|used|certified`). Each export logs how many it left out.
//!
//! Memory stays bounded whatever the inventory size: the rows are written
//! from the in-memory snapshot indexes one record at a time (each decoded
//! on its own) by a blocking task, into 64 KiB chunks sent over a channel
//! of four; a client that stops reading stops the writer. Nothing holds
//! the whole file.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use chrono::SecondsFormat;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use crate::auth::Principal;
use crate::dap::DealerCharge;
use crate::directory::DirectorySnapshot;
use crate::ingest::dap_csv::{Column, starts_like_a_formula};
use crate::inventory::index::SnapshotIndex;
use crate::inventory::model::VehicleRecord;
use crate::store::OrganizationRecord;

/// DAP's name of the format (well-known `published_feed.format`).
pub const FORMAT: &str = "dealer-agent-inventory-csv/0.1";

/// The media type DAP's CSV document requires.
pub const CONTENT_TYPE: &str = "text/csv; charset=utf-8";

/// The route of the feed.
pub const ROUTE: &str = "/feeds/{organization_id}/inventory.csv";

/// The path of one organization's feed.
pub fn path(organization_id: &str) -> String {
    format!("/feeds/{organization_id}/inventory.csv")
}

/// DAP's columns, in the order DAP lists them (required, retail
/// disclosure, optional vehicle columns). This gateway's own evidence
/// columns are not among them (see the module doc).
pub const COLUMNS: [Column; 29] = [
    Column::OrganizationId,
    Column::RooftopId,
    Column::Vin,
    Column::StockNumber,
    Column::Year,
    Column::Make,
    Column::Model,
    Column::Condition,
    Column::ListingUrl,
    Column::ObservedAt,
    Column::AdvertisedPriceMinor,
    Column::Currency,
    Column::RequiredDealerChargesJson,
    Column::ConditionalAdjustmentsJson,
    Column::GovernmentChargesStatus,
    Column::AvailabilityStatus,
    Column::Trim,
    Column::VehicleType,
    Column::BodyStyle,
    Column::ExteriorColor,
    Column::InteriorColor,
    Column::OdometerValue,
    Column::OdometerUnit,
    Column::StockedAt,
    Column::FirstPublicListingAt,
    Column::HistoryReportsJson,
    Column::CertificationType,
    Column::ImageUrlsJson,
    Column::FeaturesJson,
];

/// Bytes per chunk sent to the client.
const CHUNK_BYTES: usize = 64 * 1024;
/// Chunks buffered between the writer and the connection.
const CHANNEL_CHUNKS: usize = 4;

/// One public rooftop of the export with the snapshot it is read from.
struct ExportRooftop {
    rooftop_id: String,
    /// `None` when the rooftop has no inventory snapshot yet (no rows).
    index: Option<Arc<SnapshotIndex>>,
    /// The rooftop's configured required dealer charges (empty when not
    /// configured).
    charges: Vec<DealerCharge>,
    /// Their `required_dealer_charges_json` cell, for the (common)
    /// vehicles without charges of their own: written once per export,
    /// not once per row. `None` when the rooftop configures none.
    charges_cell: Option<String>,
}

/// Everything one export reads, fixed when the request arrives: the
/// organization's public rooftops and their newest snapshots.
pub struct Export {
    organization_id: String,
    rooftops: Vec<ExportRooftop>,
    etag: String,
}

impl Export {
    /// The export of `organization` (which must have public rooftops; the
    /// caller checked) from the newest snapshots of `view`.
    pub fn new(
        organization: &OrganizationRecord,
        view: &crate::inventory::live::InventoryView,
    ) -> Self {
        let rooftops: Vec<ExportRooftop> = Principal::Anonymous
            .visible_rooftops(organization)
            .into_iter()
            .map(|r| ExportRooftop {
                rooftop_id: r.rooftop_id.clone(),
                index: view.rooftop(&r.rooftop_id).map(|i| i.latest.clone()),
                charges: r.settings.pricing.required_dealer_charges.clone(),
                charges_cell: Some(&r.settings.pricing.required_dealer_charges)
                    .filter(|c| !c.is_empty())
                    .map(json_cell),
            })
            .collect();
        let etag = etag(&organization.organization_id, &rooftops);
        Self {
            organization_id: organization.organization_id.clone(),
            rooftops,
            etag,
        }
    }

    /// A strong validator of the bytes this export writes: they depend only
    /// on the organization, its public rooftops (their order, snapshot
    /// versions and configured charges) and this build's writer.
    pub fn etag(&self) -> &str {
        &self.etag
    }

    /// The CSV as a streamed body (see the module doc).
    pub fn body(self) -> Body {
        let (tx, rx) = mpsc::channel::<Bytes>(CHANNEL_CHUNKS);
        tokio::task::spawn_blocking(move || self.write_all(tx));
        Body::new(ChannelBody { rx })
    }

    fn write_all(self, tx: mpsc::Sender<Bytes>) {
        let mut writer = csv::WriterBuilder::new()
            .terminator(csv::Terminator::CRLF)
            .from_writer(ChunkSink {
                buffer: Vec::with_capacity(CHUNK_BYTES),
                tx,
            });
        let mut omitted: BTreeMap<Omission, usize> = BTreeMap::new();
        let mut written = 0usize;
        let result = (|| -> Result<(), csv::Error> {
            writer.write_record(COLUMNS.iter().map(|c| c.name()))?;
            for rooftop in &self.rooftops {
                let Some(index) = &rooftop.index else {
                    continue;
                };
                for row in 0..index.len() {
                    let record = index.record(row);
                    match cells(&record, rooftop) {
                        Ok(cells) => {
                            writer.write_record(&cells)?;
                            written += 1;
                        }
                        Err(why) => *omitted.entry(why).or_default() += 1,
                    }
                }
            }
            writer.flush()?;
            Ok(())
        })();
        match result.map_err(|e| e.to_string()).and_then(|()| {
            writer
                .into_inner()
                .map_err(|e| e.error().to_string())
                .and_then(|sink| sink.finish().map_err(|e| e.to_string()))
        }) {
            Ok(()) => {
                let left_out: usize = omitted.values().sum();
                if left_out > 0 {
                    tracing::info!(
                        organization_id = %self.organization_id,
                        vehicles.written = written,
                        vehicles.omitted = left_out,
                        reasons = ?omitted,
                        "published feed left out vehicles DAP Inventory CSV 0.1 cannot express"
                    );
                }
            }
            // The client went away (the channel closed): nothing to report.
            Err(e) => tracing::debug!(
                organization_id = %self.organization_id,
                error = %e,
                "published feed not completed"
            ),
        }
    }
}

/// Why a vehicle is not a row of the feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Omission {
    /// `vin` is a required column.
    NoVin,
    /// `stock_number` is a required column.
    NoStockNumber,
    /// `listing_url` is a required HTTPS URL.
    NoHttpsListingUrl,
    /// DAP's CSV condition is `new|used|certified`; a `demo` is none.
    DemoCondition,
}

/// The DAP CSV availability status of a listing status (the CSV enum is
/// smaller than the vehicle's).
fn csv_availability(status: &str) -> &'static str {
    match status {
        "available" => "available",
        "in_transit" => "in_transit",
        // Held for or committed to a buyer: not offered to others.
        "on_hold" | "pending_sale" => "reserved",
        "sold" | "unavailable" => "unavailable",
        // `unknown`, or anything ingest would not have stored: unknown.
        _ => "unknown",
    }
}

fn time(t: chrono::DateTime<chrono::Utc>) -> String {
    // Sub-second digits only when present, so a re-import reads the same
    // instant back.
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

fn json_cell(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// The charges the gateway discloses for `record` at a rooftop configuring
/// `rooftop_charges`: the rooftop's first (those the vehicle does not
/// override by `charge_id`), then the vehicle's own. `None` when neither
/// says anything (unknown).
fn disclosed_charges(
    record: &VehicleRecord,
    rooftop_charges: &[DealerCharge],
) -> Option<Vec<DealerCharge>> {
    if record.required_dealer_charges.is_none() && rooftop_charges.is_empty() {
        return None;
    }
    let own = record
        .required_dealer_charges
        .as_deref()
        .unwrap_or_default();
    let mut out: Vec<DealerCharge> = rooftop_charges
        .iter()
        .filter(|c| !own.iter().any(|o| o.charge_id == c.charge_id))
        .cloned()
        .collect();
    out.extend(own.iter().cloned());
    Some(out)
}

/// One row in [`COLUMNS`] order, or why the vehicle cannot be one.
fn cells(record: &VehicleRecord, rooftop: &ExportRooftop) -> Result<Vec<String>, Omission> {
    let vin = record.vin.as_deref().ok_or(Omission::NoVin)?;
    let stock = record
        .stock_number
        .as_deref()
        .ok_or(Omission::NoStockNumber)?;
    let listing_url = record
        .listing_url
        .as_deref()
        .filter(|u| u.starts_with("https://"))
        .ok_or(Omission::NoHttpsListingUrl)?;
    if record.condition == "demo" {
        return Err(Omission::DemoCondition);
    }
    let opt = |v: &Option<String>| v.clone().unwrap_or_default();
    let text = |v: &Option<String>| v.as_deref().map(neutralised).unwrap_or_default();
    let images: Vec<&str> = {
        let mut media: Vec<_> = record.media.iter().filter(|m| m.is_image()).collect();
        media.sort_by_key(|m| m.position.unwrap_or(u64::MAX));
        media.into_iter().map(|m| m.url.as_str()).collect()
    };
    let mut row = Vec::with_capacity(COLUMNS.len());
    for column in COLUMNS {
        row.push(match column {
            Column::OrganizationId => record.organization_id.clone(),
            Column::RooftopId => record.rooftop_id.clone(),
            Column::Vin => vin.to_owned(),
            Column::StockNumber => neutralised(stock),
            Column::Year => record.year.to_string(),
            Column::Make => neutralised(&record.make),
            Column::Model => neutralised(&record.model),
            Column::Condition => record.condition.clone(),
            Column::ListingUrl => listing_url.to_owned(),
            Column::ObservedAt => time(record.source.observed_at),
            Column::AdvertisedPriceMinor => record.advertised_price.amount_minor().to_string(),
            Column::Currency => record.advertised_price.currency().code().to_owned(),
            Column::RequiredDealerChargesJson if record.required_dealer_charges.is_none() => {
                rooftop.charges_cell.clone().unwrap_or_default()
            }
            Column::RequiredDealerChargesJson => disclosed_charges(record, &rooftop.charges)
                .map(|c| json_cell(&c))
                .unwrap_or_default(),
            Column::ConditionalAdjustmentsJson => record
                .conditional_adjustments
                .as_ref()
                .map(json_cell)
                .unwrap_or_default(),
            Column::GovernmentChargesStatus => opt(&record.government_charges_status),
            Column::AvailabilityStatus => csv_availability(&record.availability_status).to_owned(),
            Column::Trim => text(&record.trim),
            Column::VehicleType => opt(&record.vehicle_type),
            Column::BodyStyle => text(&record.body_style),
            Column::ExteriorColor => text(&record.exterior_color),
            Column::InteriorColor => text(&record.interior_color),
            Column::OdometerValue => record
                .odometer
                .map(|o| o.value.to_string())
                .unwrap_or_default(),
            Column::OdometerUnit => record
                .odometer
                .map(|o| o.unit.as_str().to_owned())
                .unwrap_or_default(),
            Column::StockedAt => record.stocked_at.map(time).unwrap_or_default(),
            Column::FirstPublicListingAt => {
                record.first_public_listing_at.map(time).unwrap_or_default()
            }
            // The reports as published. An empty list is written only
            // where it is what the record says (the status an empty list
            // has, `not_available`); a status a JSON feed gave without any
            // report cannot be a CSV cell, so it is left unknown rather
            // than turned into "no reports".
            Column::HistoryReportsJson => match &record.history_report_status {
                Some(status)
                    if !record.history_reports.is_empty()
                        || *status == crate::ingest::rules::history_report_status(&[]) =>
                {
                    json_cell(&record.history_reports)
                }
                _ => String::new(),
            },
            Column::CertificationType => opt(&record.certification_type),
            Column::ImageUrlsJson if images.is_empty() => String::new(),
            Column::ImageUrlsJson => json_cell(&images),
            // The record cannot tell "none" from "not stated": empty.
            Column::FeaturesJson if record.features.is_empty() => String::new(),
            Column::FeaturesJson => json_cell(&record.features),
            // Not DAP columns: never in COLUMNS.
            Column::OdometerStatus
            | Column::TitleJson
            | Column::InspectionJson
            | Column::ReconditioningJson
            | Column::CertificationProgram
            | Column::ChargeClassesJson
            | Column::ReferencePriceMinor => String::new(),
        });
    }
    Ok(row)
}

/// A free-text cell as the feed writes it: with one more leading
/// apostrophe when a spreadsheet would take it for a formula (see the
/// module doc); as it is otherwise.
fn neutralised(text: &str) -> String {
    if starts_like_a_formula(text) {
        format!("'{text}")
    } else {
        text.to_owned()
    }
}

/// Bumped whenever the writer writes the same vehicles as other bytes
/// (2: formula neutralising), so a cached copy is not revalidated by an
/// ETag of the older bytes within one version.
const WRITER_REVISION: &[u8] = b"2";

fn etag(organization_id: &str, rooftops: &[ExportRooftop]) -> String {
    let mut h = Sha256::new();
    h.update(FORMAT.as_bytes());
    h.update([0]);
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update([0]);
    h.update(WRITER_REVISION);
    h.update([0]);
    h.update(organization_id.as_bytes());
    for r in rooftops {
        h.update([1]);
        h.update(r.rooftop_id.as_bytes());
        h.update([0]);
        if let Some(index) = &r.index {
            h.update(index.meta().snapshot_id.as_bytes());
            h.update(index.version().to_be_bytes());
        }
        h.update([0]);
        h.update(serde_json::to_vec(&r.charges).unwrap_or_default());
    }
    let digest = h.finalize();
    format!("\"csv-{}\"", hex::encode(&digest[..16]))
}

/// The organization of `snapshot` whose feed is `organization_id`, when it
/// publishes at least one rooftop to anonymous callers; `None` for an
/// absent organization and a private one alike (DAP-CORE-031).
pub fn public_organization<'a>(
    snapshot: &'a DirectorySnapshot,
    organization_id: &str,
) -> Option<&'a OrganizationRecord> {
    snapshot
        .organization(organization_id)
        .filter(|o| !Principal::Anonymous.visible_rooftops(o).is_empty())
}

/// `io::Write` that hands the CSV to the connection in chunks; a closed
/// channel (the client went away) is a broken pipe that stops the writer.
struct ChunkSink {
    buffer: Vec<u8>,
    tx: mpsc::Sender<Bytes>,
}

impl ChunkSink {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(
            &mut self.buffer,
            Vec::with_capacity(CHUNK_BYTES),
        ));
        self.tx
            .blocking_send(chunk)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))
    }

    fn finish(mut self) -> std::io::Result<()> {
        self.send()
    }
}

impl std::io::Write for ChunkSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(buf);
        if self.buffer.len() >= CHUNK_BYTES {
            self.send()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        // Chunks go out when full or at the end ([`ChunkSink::finish`]);
        // the csv writer's own flush must not send tiny chunks.
        Ok(())
    }
}

/// The response body: the chunks, as they come.
struct ChannelBody {
    rx: mpsc::Receiver<Bytes>,
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        self.rx
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| Ok(hyper::body::Frame::data(c))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::dap_csv::{FORMULA_TRIGGERS, restore_formula_text};

    #[test]
    fn every_trigger_is_neutralised_with_one_apostrophe_and_restored() {
        for trigger in FORMULA_TRIGGERS {
            for value in [
                format!("{trigger}HYPERLINK(\"https://x.example\")"),
                format!("'{trigger}1+1"),
                format!("''{trigger}"),
                trigger.to_string(),
            ] {
                let written = neutralised(&value);
                assert_eq!(written, format!("'{value}"), "{value:?}");
                assert!(
                    !written.starts_with(FORMULA_TRIGGERS.as_slice()),
                    "{written:?}"
                );
                assert_eq!(restore_formula_text(&written), value, "{value:?}");
            }
        }
    }

    #[test]
    fn plain_text_and_a_leading_apostrophe_without_a_trigger_are_left_alone() {
        for value in [
            "Lariat",
            "'71 Classic",
            "'",
            "''",
            "",
            "Mid-Line",
            "A=B",
            " =x",
        ] {
            assert_eq!(neutralised(value), value);
            assert_eq!(restore_formula_text(value), value);
        }
        // What the feed never writes still reads back as a dealer would
        // expect from a spreadsheet: the text mark is dropped.
        assert_eq!(restore_formula_text("'-Line"), "-Line");
    }
}
