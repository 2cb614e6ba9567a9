//! The closed records of a DAP vehicle a feed publishes as they are
//! (vehicle.schema.json `powertrain` and `mediaAsset`): ingest checks the
//! published object against its definition, then reads it into these
//! types; the renderer writes them back unchanged.
//!
//! Member names, order and skip rules are the published schema's (an
//! optional member is absent when `None`, never `null`). Enumerated members
//! hold the DAP wire strings, already checked against the schema enums, like
//! the rest of the vehicle record.

use serde::{Deserialize, Serialize};

/// DAP `powertrain`: every member is optional, and `None` is "not stated",
/// never a default (an empty cell means unknown, docs/inventory-feeds.md).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Powertrain {
    /// `gasoline|diesel|hybrid|plug_in_hybrid|battery_electric|hydrogen|other|unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel_type: Option<String>,
    /// `fwd|rwd|awd|four_wd|other|unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drivetrain: Option<String>,
    /// As the source describes it, at most 120 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transmission: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub electric_range: Option<ElectricRange>,
}

/// `powertrain.electric_range`: a rated range, which may be fractional.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElectricRange {
    /// Kept as the published JSON number, so `250`, `250.0` and `249.5`
    /// are written back with the text they were read with.
    pub value: serde_json::Number,
    /// `mi|km` (common.schema.json `distanceUnit`).
    pub unit: String,
}

/// DAP `mediaAsset`: a photo, video, document or 360-degree spin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediaAsset {
    /// `image|video|document|spin`.
    #[serde(rename = "type")]
    pub kind: String,
    pub url: String,
    /// Caption or alt text, at most 500 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// Display order, 0 first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<u64>,
}

impl MediaAsset {
    /// An image at `position` (how a feed's ordered image URLs become
    /// media assets).
    pub fn image(url: impl Into<String>, position: u64) -> Self {
        Self {
            kind: "image".to_owned(),
            url: url.into(),
            caption: None,
            position: Some(position),
        }
    }

    pub fn is_image(&self) -> bool {
        self.kind == "image"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::output::drift::check;

    fn powertrain(full: bool) -> Powertrain {
        if !full {
            return Powertrain::default();
        }
        Powertrain {
            fuel_type: Some("battery_electric".into()),
            drivetrain: Some("awd".into()),
            transmission: Some("1-speed automatic".into()),
            electric_range: Some(ElectricRange {
                value: serde_json::Number::from_f64(249.5).unwrap(),
                unit: "mi".into(),
            }),
        }
    }

    fn media(full: bool) -> MediaAsset {
        MediaAsset {
            kind: "video".into(),
            url: "https://cdn.example.com/walkaround.mp4".into(),
            caption: full.then(|| "Walk-around".into()),
            position: full.then_some(3),
        }
    }

    #[test]
    fn the_vehicle_records_match_their_definitions() {
        check(
            "vehicle.schema.json#/$defs/powertrain",
            &[powertrain(false), powertrain(true)],
        );
        check(
            "vehicle.schema.json#/$defs/mediaAsset",
            &[
                media(false),
                media(true),
                MediaAsset::image("https://a/b.jpg", 0),
            ],
        );
        // The nested range names exactly its definition's members too.
        let range = &catalog_definition("powertrain")["properties"]["electric_range"];
        let members =
            crate::tools::output::drift::members(&powertrain(true).electric_range.unwrap());
        let named: std::collections::BTreeSet<String> =
            members.written.union(&members.skipped).cloned().collect();
        let published: std::collections::BTreeSet<String> = range["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(named, published);
    }

    fn catalog_definition(name: &str) -> serde_json::Value {
        let catalog = crate::catalog::Catalog::load().expect("catalog");
        catalog.schema_documents["vehicle.schema.json"]["$defs"][name].clone()
    }

    /// What a feed publishes reads back into the same bytes: member order,
    /// number text (a fractional or float-written range), skipped members.
    #[test]
    fn the_vehicle_records_round_trip_byte_for_byte() {
        for text in [
            r#"{"fuel_type":"gasoline","drivetrain":"four_wd"}"#,
            r#"{"transmission":"8-speed automatic","electric_range":{"value":250,"unit":"km"}}"#,
            r#"{"electric_range":{"value":250.0,"unit":"mi"}}"#,
            r#"{"electric_range":{"value":1e300,"unit":"mi"}}"#,
            r#"{}"#,
        ] {
            let p: Powertrain = serde_json::from_str(text).unwrap();
            let back = serde_json::to_string(&p).unwrap();
            let again: Powertrain = serde_json::from_str(&back).unwrap();
            assert_eq!(again, p, "{text}");
            assert_eq!(
                serde_json::to_string(&serde_json::from_str::<serde_json::Value>(text).unwrap())
                    .unwrap(),
                back
            );
        }
        let text = r#"{"type":"image","url":"https://a/1.jpg","caption":"Front","position":0}"#;
        let m: MediaAsset = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&m).unwrap(), text);
    }

    /// A member the definition does not have is refused, never dropped.
    #[test]
    fn an_unknown_member_is_refused() {
        assert!(serde_json::from_str::<Powertrain>(r#"{"fuel":"gasoline"}"#).is_err());
        assert!(
            serde_json::from_str::<MediaAsset>(r#"{"type":"image","url":"u","kind":"x"}"#).is_err()
        );
    }
}
