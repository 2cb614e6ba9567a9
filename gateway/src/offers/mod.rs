//! Incentive offers (issue 7): the programs of each organization, cached
//! for the tools that price vehicles (`dealergateway.offers.evaluate`,
//! `dealeragent.pricing.get_disclosure`), the mapping of an inventory
//! record to the pricing engine's [`pricing::Vehicle`], and the programs-file
//! import shared by the CLI and the demo seed ([`import`]).
//!
//! The engine itself is pure (`pricing::stacking::evaluate`); this module
//! only loads, validates and caches its inputs.

pub mod import;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use pricing::{Program, ProgramSet, ValidatedPrograms};

use crate::inventory::model::VehicleRecord;
use crate::store::{ProgramRecord, Store, StoreError};

/// How long an organization's validated programs are reused before the
/// store is read again (an import shows up within this delay).
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(10);

/// The validated current programs of one organization.
#[derive(Debug)]
pub struct OrgPrograms {
    /// The newest revision of every stored program that still validates.
    pub validated: ValidatedPrograms,
    /// When they were read from the store.
    pub loaded_at: DateTime<Utc>,
}

/// Per-organization cache of [`OrgPrograms`], refreshed after
/// [`DEFAULT_REFRESH`]. Concurrent misses may both read the store; the
/// result is the same.
pub struct OffersService {
    refresh: Duration,
    cache: Mutex<HashMap<String, (Instant, Arc<OrgPrograms>)>>,
}

impl std::fmt::Debug for OffersService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffersService")
            .field("refresh", &self.refresh)
            .finish_non_exhaustive()
    }
}

impl Default for OffersService {
    fn default() -> Self {
        Self::new()
    }
}

impl OffersService {
    /// A service refreshing after [`DEFAULT_REFRESH`].
    pub fn new() -> Self {
        Self::with_refresh(DEFAULT_REFRESH)
    }

    /// A service refreshing after `refresh` (zero: read the store every call).
    pub fn with_refresh(refresh: Duration) -> Self {
        Self {
            refresh,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The validated current programs of `organization_id` (empty when it
    /// has none). A stored program that no longer decodes or validates is
    /// logged and skipped: it never fails a request.
    pub async fn programs(
        &self,
        store: &dyn Store,
        organization_id: &str,
    ) -> Result<Arc<OrgPrograms>, StoreError> {
        if let Some((at, cached)) = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(organization_id)
            && at.elapsed() < self.refresh
        {
            return Ok(cached.clone());
        }
        let records = store.current_programs(organization_id).await?;
        let loaded = Arc::new(OrgPrograms {
            validated: validate_stored(organization_id, &records),
            loaded_at: Utc::now(),
        });
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(organization_id.to_owned(), (Instant::now(), loaded.clone()));
        Ok(loaded)
    }
}

/// Decode and validate stored programs, dropping (and logging) every
/// program that fails, until the rest validates as a set.
fn validate_stored(organization_id: &str, records: &[ProgramRecord]) -> ValidatedPrograms {
    let mut programs: Vec<Program> = Vec::with_capacity(records.len());
    for record in records {
        match serde_json::from_value::<Program>(record.doc.clone()) {
            Ok(p) => programs.push(p),
            Err(e) => tracing::warn!(
                organization.id = organization_id,
                program.id = %record.program_id,
                program.revision = record.revision,
                error = %e,
                "stored incentive program does not decode; skipped"
            ),
        }
    }
    loop {
        match ProgramSet::validate(programs.clone()) {
            Ok(validated) => return validated,
            Err(problems) => {
                let bad: std::collections::BTreeSet<usize> =
                    problems.iter().map(|p| p.program_index).collect();
                for problem in &problems {
                    tracing::warn!(
                        organization.id = organization_id,
                        program.id = problem.program_id.as_deref().unwrap_or("?"),
                        pointer = %problem.pointer,
                        rule = %problem.rule,
                        "stored incentive program no longer validates; skipped"
                    );
                }
                let before = programs.len();
                programs = programs
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| !bad.contains(i))
                    .map(|(_, p)| p)
                    .collect();
                if programs.len() == before {
                    // Problems that name no program: nothing can be trusted.
                    programs.clear();
                }
            }
        }
    }
}

/// The pricing engine's view of an inventory record (shared by the offers
/// tool and the pricing disclosure).
pub fn vehicle_for_pricing(record: &VehicleRecord) -> pricing::stacking::Vehicle {
    pricing::stacking::Vehicle {
        vehicle_id: record.vehicle_id.clone(),
        make: record.make.clone(),
        model: record.model.clone(),
        year: record.year,
        trim: record.trim.clone(),
        condition: record.condition.clone(),
        vin: record.vin.clone(),
        rooftop_id: record.rooftop_id.clone(),
        advertised_price: record.advertised_price,
        // The feed's price carries no validity of its own: the inventory
        // freshness bounds it (applied by the callers).
        price_valid_until: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SourceRecord;
    use serde_json::json;

    fn record(id: &str, doc: serde_json::Value) -> ProgramRecord {
        ProgramRecord {
            program_id: id.to_owned(),
            revision: 1,
            doc,
            rule_hash: None,
            imported_at: Utc::now(),
            source: SourceRecord {
                source_name: "test".into(),
                authority: "dealer_asserted".into(),
                content_digest: "sha256:00".into(),
                observed_at: Utc::now(),
            },
        }
    }

    fn program(id: &str, extra: serde_json::Value) -> serde_json::Value {
        let mut p = json!({
            "program_id": id, "revision": 1, "name": id, "kind": "cash",
            "direction": "discount",
            "amount": {"status": "known", "amount": {"amount_minor": 100, "currency": "USD"}},
            "stacking": {"group": "oem", "combinability": "stackable"}
        });
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        p
    }

    #[test]
    fn stored_programs_that_no_longer_decode_or_validate_are_skipped() {
        let records = [
            record("good", program("good", json!({}))),
            record("corrupt", json!({"program_id": "corrupt"})),
            record(
                "bad-rule",
                program(
                    "bad-rule",
                    json!({"stacking": {"group": "d", "combinability": "rule_defined", "rule": "stack.len( <"}}),
                ),
            ),
        ];
        let validated = validate_stored("org", &records);
        let ids: Vec<&str> = validated
            .programs()
            .iter()
            .map(|p| p.program.program_id.as_str())
            .collect();
        assert_eq!(ids, ["good"]);
    }
}
