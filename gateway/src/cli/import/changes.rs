//! What an inventory import adds, changes and removes, as an operator reads
//! it (docs/inventory-feeds.md "Commands"): a bounded text listing per
//! rooftop, or every change in the `--json` document, streamed to stdout as
//! the store finds it. Neither holds more than [`LISTED`] names per rooftop
//! and kind, so a 1,000,000-vehicle feed lists in bounded memory.

use std::collections::BTreeMap;
use std::io::Write;

use serde_json::{Value, json};

use crate::store::SnapshotRecord;
use crate::store::snapshot_write::{ChangeKind, ChangeSink, RemovalRefusal, VehicleChange};

/// Vehicles the text summary names per rooftop and kind; the rest are
/// counted ("and 990 more"), and `--json` lists every one.
pub const LISTED: usize = 10;

/// How one vehicle is named in the text summary: its stock number (what a
/// dealer searches by), else its VIN, else its vehicle id; a changed
/// vehicle with the fields that changed.
pub fn label(change: &VehicleChange<'_>) -> String {
    let name = match (change.stock_number, change.vin) {
        (Some(stock), _) => stock.to_owned(),
        (None, Some(vin)) => format!("VIN {vin}"),
        (None, None) => format!("vehicle {}", change.vehicle_id),
    };
    if change.fields.is_empty() {
        name
    } else {
        format!("{name} ({})", change.fields.join(", "))
    }
}

/// The first [`LISTED`] names per (rooftop, kind) of one file.
#[derive(Debug, Default)]
pub struct Listing {
    names: BTreeMap<(String, ChangeKind), Vec<String>>,
}

impl ChangeSink for Listing {
    fn change(&mut self, change: &VehicleChange<'_>) {
        let names = self
            .names
            .entry((change.rooftop_id.to_owned(), change.kind))
            .or_default();
        if names.len() < LISTED {
            names.push(label(change));
        }
    }
}

impl Listing {
    /// The listing lines of one rooftop (after its counts line), one per
    /// kind with changes: `    removed: A, B, … and 12 more (--json lists
    /// every one)`.
    pub fn lines(&self, snapshot: &SnapshotRecord, dry_run: bool) -> Vec<String> {
        let s = &snapshot.summary;
        let mut lines = Vec::new();
        for (kind, total) in [
            (ChangeKind::Added, s.vehicles_added),
            (ChangeKind::Changed, s.vehicles_changed),
            (ChangeKind::Removed, s.vehicles_removed),
        ] {
            let Some(names) = self.names.get(&(snapshot.rooftop_id.clone(), kind)) else {
                continue;
            };
            let verb = match (kind, dry_run) {
                (ChangeKind::Added, true) => "would add",
                (ChangeKind::Changed, true) => "would change",
                (ChangeKind::Removed, true) => "would remove",
                (ChangeKind::Added, false) => "added",
                (ChangeKind::Changed, false) => "changed",
                (ChangeKind::Removed, false) => "removed",
            };
            let more = (total as usize).saturating_sub(names.len());
            let rest = if more > 0 {
                format!(" and {more} more (--json lists every one)")
            } else {
                String::new()
            };
            lines.push(format!("    {verb}: {}{rest}", names.join(", ")));
        }
        lines
    }
}

/// The JSON document on stdout, written piece by piece (`--json`). A
/// closed stdout (`| head`) ends the output quietly and the import goes on;
/// another write failure is kept and reported at the end.
pub struct JsonOut {
    out: std::io::BufWriter<std::io::Stdout>,
    error: Option<std::io::Error>,
    closed: bool,
}

impl Default for JsonOut {
    fn default() -> Self {
        Self {
            out: std::io::BufWriter::new(std::io::stdout()),
            error: None,
            closed: false,
        }
    }
}

impl JsonOut {
    /// Write raw JSON text (a piece of the document).
    pub fn raw(&mut self, text: &str) {
        if self.closed {
            return;
        }
        if let Err(e) = self.out.write_all(text.as_bytes()) {
            self.fail(e);
        }
    }

    /// Write one value as compact JSON.
    pub fn value(&mut self, value: &Value) {
        self.raw(&value.to_string());
    }

    /// Write `"key":value` members (no braces), each preceded by a comma
    /// unless `first`.
    pub fn members(&mut self, members: &serde_json::Map<String, Value>, mut first: bool) {
        for (key, value) in members {
            if !first {
                self.raw(",");
            }
            first = false;
            self.value(&Value::String(key.clone()));
            self.raw(":");
            self.value(value);
        }
    }

    /// Flush; the first write failure other than a closed pipe.
    pub fn finish(&mut self) -> Result<(), std::io::Error> {
        if !self.closed
            && let Err(e) = self.out.write_all(b"\n").and_then(|()| self.out.flush())
        {
            self.fail(e);
        }
        self.error.take().map_or(Ok(()), Err)
    }

    fn fail(&mut self, e: std::io::Error) {
        self.closed = true;
        if e.kind() != std::io::ErrorKind::BrokenPipe && self.error.is_none() {
            self.error = Some(e);
        }
    }
}

/// The `changes` array of one file's document: each change as it comes,
/// written straight to the output.
pub struct JsonChanges<'a> {
    pub out: &'a mut JsonOut,
    pub first: bool,
}

impl ChangeSink for JsonChanges<'_> {
    fn change(&mut self, change: &VehicleChange<'_>) {
        if !self.first {
            self.out.raw(",");
        }
        self.first = false;
        let mut entry = json!({
            "rooftop_id": change.rooftop_id,
            "change": change.kind.as_str(),
            "vehicle_id": change.vehicle_id,
            "stock_number": change.stock_number,
            "vin": change.vin,
        });
        if change.kind == ChangeKind::Changed {
            entry["fields"] = json!(change.fields);
        }
        self.out.value(&entry);
    }
}

/// One rooftop's entry in the document's `rooftops`.
pub fn rooftop_json(snapshot: &SnapshotRecord, written: bool) -> Value {
    let s = &snapshot.summary;
    json!({
        "rooftop_id": snapshot.rooftop_id,
        "snapshot_version": snapshot.version,
        "written": written,
        "previous_vehicles": s.vehicles_changed + s.vehicles_unchanged + s.vehicles_removed,
        "rows_read": s.rows_read,
        "added": s.vehicles_added,
        "changed": s.vehicles_changed,
        "unchanged": s.vehicles_unchanged,
        "removed": s.vehicles_removed,
    })
}

/// The refusal of the removal guard in words, one sentence per rooftop.
pub fn refusal_text(refused: &[RemovalRefusal]) -> String {
    refused
        .iter()
        .map(|r| {
            format!(
                "rooftop {} would lose {} of its {} vehicles ({}%, more than the {}% allowed)",
                r.rooftop_id,
                r.removed,
                r.previous,
                percent(r.removed, r.previous),
                r.max_percent
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `part` of `whole` in whole percent, rounded down (never shown as more
/// than it is).
fn percent(part: u32, whole: u32) -> u64 {
    if whole == 0 {
        return 0;
    }
    u64::from(part) * 100 / u64::from(whole)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::model::InventoryImportSummary;

    fn change<'a>(
        kind: ChangeKind,
        stock: Option<&'a str>,
        vin: Option<&'a str>,
        id: &'a str,
    ) -> VehicleChange<'a> {
        VehicleChange {
            rooftop_id: "roof.a",
            kind,
            vehicle_id: id,
            stock_number: stock,
            vin,
            fields: Vec::new(),
        }
    }

    #[test]
    fn a_vehicle_is_named_by_stock_number_else_vin_else_id() {
        let mut c = change(ChangeKind::Changed, Some("S1"), Some("VIN1"), "veh.1");
        c.fields = vec!["advertised_price".into(), "availability_status".into()];
        assert_eq!(label(&c), "S1 (advertised_price, availability_status)");
        let c = change(ChangeKind::Removed, None, Some("1HG"), "veh.2");
        assert_eq!(label(&c), "VIN 1HG");
        let c = change(ChangeKind::Added, None, None, "veh.3");
        assert_eq!(label(&c), "vehicle veh.3");
    }

    #[test]
    fn the_listing_keeps_the_first_names_and_counts_the_rest() {
        let mut listing = Listing::default();
        let stocks: Vec<String> = (0..25).map(|i| format!("S{i}")).collect();
        for s in &stocks {
            listing.change(&change(ChangeKind::Removed, Some(s), None, "veh"));
        }
        listing.change(&change(ChangeKind::Added, Some("NEW"), None, "veh.n"));
        let snapshot = SnapshotRecord {
            snapshot_id: "s".into(),
            organization_id: "org".into(),
            rooftop_id: "roof.a".into(),
            version: 2,
            created_at: chrono::Utc::now(),
            source: crate::store::SourceRecord {
                source_name: "f".into(),
                authority: "dealer_asserted".into(),
                content_digest: "sha256:00".into(),
                observed_at: chrono::Utc::now(),
            },
            vehicle_count: 1,
            summary: InventoryImportSummary {
                rows_read: 1,
                vehicles_added: 1,
                vehicles_changed: 0,
                vehicles_unchanged: 0,
                vehicles_removed: 25,
            },
        };
        assert_eq!(
            listing.lines(&snapshot, true),
            vec![
                "    would add: NEW".to_owned(),
                format!(
                    "    would remove: {} and 15 more (--json lists every one)",
                    stocks[..LISTED].join(", ")
                ),
            ]
        );
        assert_eq!(listing.lines(&snapshot, false)[0], "    added: NEW");
    }

    #[test]
    fn a_refusal_names_the_rooftop_and_the_share_rounded_down() {
        let text = refusal_text(&[RemovalRefusal {
            rooftop_id: "roof.a".into(),
            removed: 2,
            previous: 3,
            max_percent: 50,
        }]);
        assert_eq!(
            text,
            "rooftop roof.a would lose 2 of its 3 vehicles (66%, more than the 50% allowed)"
        );
    }
}
