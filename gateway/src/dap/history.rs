//! A vehicle history report as a feed publishes it
//! (inventory-cells.schema.json `csvHistoryReport`, the DAP `historyReport`
//! names without the provenance and freshness the gateway adds when it
//! renders one, DAP-UV-011 and DAP-UV-018).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One provider's history report as published. `None` members were not
/// published; the renderer never turns one into favorable evidence
/// (DAP-UV-016, DAP-UV-017).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryReport {
    /// Reverse-domain provider identifier, e.g. `com.carfax`.
    pub provider_id: String,
    pub provider_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_id: Option<String>,
    /// `available|not_available|restricted|unknown`.
    pub status: String,
    /// `public_link|dealer_presented|on_request|restricted|none`.
    pub access: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_url: Option<String>,
    /// RFC 3339 as published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_generated_at: Option<String>,
    /// RFC 3339 as published; absent means "observed with the row".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<String>,
    pub summary_sharing_authorized: bool,
    /// The provider's summary (DAP `historySummary`), present only when
    /// sharing is authorized (DAP-UV-012). The cell schema leaves this
    /// member open (`csvHistoryReport.properties.summary` has no type; its
    /// shape is checked by the schema's condition on
    /// `summary_sharing_authorized`), so it is kept as published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Value>,
}

impl HistoryReport {
    /// The summary when one is stored (only where sharing is authorized).
    pub fn summary(&self) -> Option<&Value> {
        self.summary.as_ref().filter(|s| s.is_object())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::output::drift::check;

    fn report(full: bool) -> HistoryReport {
        HistoryReport {
            provider_id: "com.carfax".into(),
            provider_name: "CARFAX".into(),
            report_id: full.then(|| "R-1".into()),
            status: "available".into(),
            access: "public_link".into(),
            report_url: full.then(|| "https://reports.example/R-1".into()),
            report_generated_at: full.then(|| "2026-01-01T00:00:00Z".into()),
            observed_at: full.then(|| "2026-01-02T00:00:00Z".into()),
            summary_sharing_authorized: full,
            summary: full.then(|| {
                serde_json::json!({
                    "accident_status": "no_events_reported",
                    "damage_status": "unknown",
                    "title_brand_status": "no_brands_reported",
                    "odometer_consistency": "consistent",
                    "owner_count_status": "unknown"
                })
            }),
        }
    }

    #[test]
    fn the_history_report_matches_its_definition() {
        check(
            "inventory-cells.schema.json#/$defs/csvHistoryReport",
            &[report(false), report(true)],
        );
    }
}
