//! The store: the ONLY module that speaks SQL (docs/architecture.md).
//! Its one error type, [`StoreError`], and how a driver failure becomes
//! one: `error.rs`; the error guide of every layer: `crate::errors`.
//!
//! `Store` is expressed in domain types. Two backends share one behaviour
//! contract, one test suite and one implementation with one text per SQL
//! statement (`sql/`): SQLite (the embedded default,
//! WAL) and PostgreSQL (the shared store for several gateway replicas),
//! each a `Dialect` of it. Migrations live in `migrations/{sqlite,postgres}/`
//! and run at open.

pub mod audit;
mod error;
pub mod import_log;
mod plan;
mod postgres;
pub mod snapshot_write;
mod sql;
mod sqlite;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use chrono::{DateTime, SubsecRound as _, Utc};
use serde::{Deserialize, Serialize};

pub use crate::domain::grant::RooftopScope;
use crate::inventory::model::{InventoryImportSummary, VehicleRecord};

// The records store shares with auth, tools and ingest live on the ground
// floor (crate::domain); they are named here too, where callers look first.
pub use crate::domain::audit::AuditEvent;
pub use crate::domain::dealer::{
    AvailabilityObservation, AvailabilitySource, FreshnessSla, GovernmentChargeEstimate,
    HttpAvailabilitySource, ObservationSource, OrganizationRecord, RooftopPricing, RooftopRecord,
    RooftopSettings, SourceRecord,
};
pub use crate::domain::token::ApiTokenRecord;

pub use audit::{AuditCount, AuditFootprint, AuditPruneSummary, AuditRetention};
pub use error::StoreError;
pub use import_log::{ImportAttempt, ImportCount, ImportKind, ImportOutcome};
use plan::*;
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

/// What an import of organizations changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DealersImportSummary {
    pub organizations_added: u32,
    pub organizations_updated: u32,
    pub rooftops_added: u32,
    pub rooftops_updated: u32,
    pub rooftops_removed: u32,
}

/// One stored revision of one incentive program (`incentive_programs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramRecord {
    pub program_id: String,
    pub revision: u32,
    /// The `pricing::Program` exactly as imported (JSON).
    pub doc: serde_json::Value,
    /// `sha256:<hex>` of the stacking rule source, for `rule_defined`
    /// programs.
    pub rule_hash: Option<String>,
    /// When the revision was stored (microsecond precision).
    pub imported_at: DateTime<Utc>,
    /// Provenance of the import that stored it.
    pub source: SourceRecord,
}

/// One stored revision with its withdrawal time
/// ([`Store::program_revisions`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ProgramRevisionRecord {
    pub record: ProgramRecord,
    /// Set once, by `programs withdraw` or `import programs --replace`.
    pub withdrawn_at: Option<DateTime<Utc>>,
}

/// One `(program_id, revision)` pair.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ProgramRevision {
    pub program_id: String,
    pub revision: u32,
}

impl ProgramRevision {
    /// The pair as recorded in audit events: `<program_id>:<revision>` (an
    /// identifier, so [`AuditEvent::bounded`] keeps it).
    pub fn audit_id(&self) -> String {
        format!("{}:{}", self.program_id, self.revision)
    }
}

impl std::fmt::Display for ProgramRevision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} revision {}", self.program_id, self.revision)
    }
}

/// What an import, replacement or withdrawal of programs changed (or, in a
/// dry run, would change).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProgramsImportSummary {
    /// New (program_id, revision) pairs stored. Every revision coexists
    /// (docs/pricing.md "Revisions"): an older revision than a stored one
    /// is stored too.
    pub added: u32,
    /// Pairs already stored with an identical document (and not withdrawn).
    pub unchanged: u32,
    /// Pairs given again that were withdrawn earlier: they stay withdrawn
    /// (a withdrawal is final; publish a new revision instead).
    pub still_withdrawn: Vec<ProgramRevision>,
    /// Revisions this change withdrew, in (program_id, revision) order.
    pub withdrawn: Vec<ProgramRevision>,
    /// The pairs counted in `added`, in (program_id, revision) order
    /// (`import programs --json`).
    pub added_revisions: Vec<ProgramRevision>,
    /// The pairs counted in `unchanged`, in (program_id, revision) order.
    pub unchanged_revisions: Vec<ProgramRevision>,
}

/// A change to the program set of one organization: an import (with or
/// without replacement) or a withdrawal (docs/pricing.md "Revisions,
/// whole-set validation, replacement and withdrawal").
#[derive(Debug, Clone, Copy)]
pub enum ProgramsChange<'a> {
    /// Store these revisions; with `replace`, the file is the
    /// organization's complete program set: every active stored revision not
    /// in it is withdrawn.
    Import {
        records: &'a [ProgramRecord],
        replace: bool,
    },
    /// Withdraw one revision, or every active revision of the program.
    Withdraw {
        program_id: &'a str,
        revision: Option<u32>,
    },
}

/// Judges the organization's resulting set of active revisions (ascending
/// (program_id, revision)) before a change is written: `Err` lists every
/// conflict, and nothing is written.
pub type ProgramSetCheck<'a> =
    &'a (dyn Fn(&[ProgramRecord]) -> Result<(), Vec<String>> + Send + Sync);

/// One immutable inventory snapshot of one rooftop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotRecord {
    /// A UUID v7 string made by the store.
    pub snapshot_id: String,
    pub organization_id: String,
    pub rooftop_id: String,
    /// 1, 2, 3, ... per rooftop.
    pub version: i64,
    /// When the store wrote the snapshot (microsecond precision).
    pub created_at: DateTime<Utc>,
    /// The imported file (name, authority, digest, import time).
    pub source: SourceRecord,
    pub vehicle_count: u32,
    /// Against the previous snapshot of the rooftop
    /// ([`crate::inventory::model::diff_vehicles`]).
    pub summary: InventoryImportSummary,
}

/// A committed change that readers on every replica must see
/// (docs/operations.md "Replicas"). PostgreSQL sends one per writing transaction with `NOTIFY`
/// (delivered only if, and when, it commits); SQLite has no such channel,
/// so its replicas poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChange {
    /// A dealers import: organizations, rooftops or their settings.
    Dealers,
    /// A new inventory snapshot of a rooftop of this organization.
    Inventory { organization_id: String },
    /// A programs import, replacement or withdrawal of this organization.
    Programs { organization_id: String },
    /// An API token was revoked.
    TokenRevoked,
    /// A live availability observation of one vehicle was stored (by any
    /// replica's availability check).
    Availability {
        organization_id: String,
        rooftop_id: String,
        vehicle_id: String,
    },
    /// The listening connection was lost and re-established: notifications
    /// sent meanwhile are gone, so anything may have changed.
    Resync,
}

/// The PostgreSQL channel every change is sent on.
pub const CHANGE_CHANNEL: &str = "dealer_gateway_changes";

/// The channel of [`StoreChange::Availability`]: a channel of its own, so a
/// replica of an older version (during a rolling upgrade), which does not
/// listen to it, never reads these frequent notifications as an unknown
/// kind and reloads everything for each.
pub const OBSERVATION_CHANNEL: &str = "dealer_gateway_observations";

impl StoreChange {
    /// The `NOTIFY` channel this change is sent on.
    pub fn channel(&self) -> &'static str {
        match self {
            Self::Availability { .. } => OBSERVATION_CHANNEL,
            _ => CHANGE_CHANNEL,
        }
    }

    /// The metric label (and the payload prefix) of this change.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Dealers => "dealers",
            Self::Inventory { .. } => "inventory",
            Self::Programs { .. } => "programs",
            Self::TokenRevoked => "token",
            Self::Availability { .. } => "availability",
            Self::Resync => "resync",
        }
    }

    /// The `NOTIFY` payload: `<kind>[:<organization_id>]`, for an
    /// availability observation `availability:<organization_id>
    /// <rooftop_id> <vehicle_id>` (identifiers hold no space; together far
    /// below the 8000-byte payload limit). `Resync` is never sent; it is
    /// what a listener reports itself.
    pub fn payload(&self) -> String {
        match self {
            Self::Inventory { organization_id } | Self::Programs { organization_id } => {
                format!("{}:{organization_id}", self.kind())
            }
            Self::Availability {
                organization_id,
                rooftop_id,
                vehicle_id,
            } => format!(
                "{}:{organization_id} {rooftop_id} {vehicle_id}",
                self.kind()
            ),
            Self::Dealers | Self::TokenRevoked | Self::Resync => self.kind().to_owned(),
        }
    }

    /// Read a payload written by [`Self::payload`]. An unknown payload (a
    /// newer replica's kind) reads as `Resync`: reloading everything is
    /// always correct, only slower.
    pub fn parse(payload: &str) -> Self {
        match payload.split_once(':') {
            Some(("inventory", org)) if !org.is_empty() => Self::Inventory {
                organization_id: org.to_owned(),
            },
            Some(("programs", org)) if !org.is_empty() => Self::Programs {
                organization_id: org.to_owned(),
            },
            Some(("availability", ids)) => match ids.split(' ').collect::<Vec<_>>()[..] {
                [org, rooftop, vehicle]
                    if !org.is_empty() && !rooftop.is_empty() && !vehicle.is_empty() =>
                {
                    Self::Availability {
                        organization_id: org.to_owned(),
                        rooftop_id: rooftop.to_owned(),
                        vehicle_id: vehicle.to_owned(),
                    }
                }
                _ => Self::Resync,
            },
            Some(_) => Self::Resync,
            None => match payload {
                "dealers" => Self::Dealers,
                "token" => Self::TokenRevoked,
                _ => Self::Resync,
            },
        }
    }
}

/// One stored legacy (2025-11-25) MCP session (any replica serves it;
/// docs/operations.md "Replicas"). Keyed by the SHA-256 of the session id, so the
/// table never holds a usable id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacySessionRecord {
    /// Lowercase hex SHA-256 of the session id.
    pub key: String,
    pub protocol_version: String,
    /// `notifications/initialized` was received.
    pub initialized: bool,
    pub created_at: DateTime<Utc>,
    /// The last use written (refreshed at most every few seconds, not on
    /// every request).
    pub last_seen: DateTime<Utc>,
}

/// One advertised price of a vehicle and the instant from which it was
/// published (the snapshot that first carried it), until the next point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PricePoint {
    pub amount: pricing::Money,
    pub from: DateTime<Utc>,
}

/// A vehicle's advertised-price history as the gateway stored it, for the
/// disclosure lint's price-reduction rules (docs/lint.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PriceHistory {
    /// Oldest first. The first point is the price in force at the
    /// requested `since` when the history reaches back that far.
    pub points: Vec<PricePoint>,
    /// When the gateway's history of this vehicle begins (the first stored
    /// snapshot that carried it, or the oldest point kept); `None` when it
    /// has none. Before it, the price is unknown.
    pub begins_at: Option<DateTime<Utc>>,
}

/// The persistence contract. Every method is all-or-nothing.
#[async_trait::async_trait]
pub trait Store: Send + Sync + 'static {
    /// Cheap reachability check for `/readyz`.
    async fn ping(&self) -> Result<(), StoreError>;

    /// Close every connection, waiting for them to finish. A command that
    /// wrote much and then exits calls this: SQLite checkpoints its
    /// write-ahead log into the database and removes it when the last
    /// connection closes, where an exit without closing left the log (about
    /// 3 GB after a 1,000,000-vehicle import) for the next process.
    async fn close(&self);

    /// True when no organization is stored (the demo loads only then).
    async fn is_empty(&self) -> Result<bool, StoreError>;

    /// Insert or update the given organizations in one transaction. For each
    /// organization named, the stored rooftop set becomes exactly the given
    /// one (rooftops absent from it are removed). Organizations not named are
    /// untouched. Nothing is written if any statement fails.
    ///
    /// A `rooftop_id` names one rooftop gateway-wide. The import fails with
    /// [`StoreError::Query`] (and writes nothing) when an organization lists a
    /// rooftop id another organization keeps, or when the batch lists one
    /// organization or rooftop id twice. A rooftop may move between two
    /// organizations of the same batch when its old owner no longer lists it.
    ///
    /// Counting in the returned summary:
    /// - an organization is *added* when it was not stored, and *updated* when
    ///   its `name`, `legal_name` or `extensions` changed, or any of its
    ///   rooftops was added, updated or removed, or their order changed;
    /// - a rooftop is *added* when its organization did not keep it, *updated*
    ///   when its `dap` object or settings changed (JSON equality: key order
    ///   alone is not a change, although the new text is stored), and
    ///   *removed* when its organization no longer lists it;
    /// - re-importing identical content counts nothing. The organization's
    ///   `source` (provenance of the latest import) is replaced on every
    ///   import without counting as a change.
    async fn upsert_organizations(
        &self,
        orgs: &[OrganizationRecord],
    ) -> Result<DealersImportSummary, StoreError>;

    /// Every organization, ordered by `organization_id`, rooftops in file order.
    async fn list_organizations(&self) -> Result<Vec<OrganizationRecord>, StoreError>;

    /// One organization by id.
    async fn get_organization(
        &self,
        organization_id: &str,
    ) -> Result<Option<OrganizationRecord>, StoreError>;

    /// A named gateway secret (e.g. the cursor sealing key), created with
    /// `generate` on first use and identical for every replica afterwards.
    ///
    /// `generate` runs only when the secret is missing. Race-free across
    /// replicas: the insert is `on conflict do nothing` and every caller then
    /// reads back the one stored value, so a loser's generated bytes are
    /// discarded.
    async fn get_or_create_secret(
        &self,
        name: &str,
        generate: &(dyn Fn() -> Vec<u8> + Send + Sync),
    ) -> Result<Vec<u8>, StoreError>;

    /// Create the next snapshot of (`organization_id`, `rooftop_id`) holding
    /// exactly `vehicles`, in one transaction: its version is the previous
    /// one + 1 (1 for the first), its summary is
    /// [`diff_vehicles`](crate::inventory::model::diff_vehicles) against the
    /// previous snapshot's vehicles (read inside the same transaction), and
    /// every vehicle is inserted.
    ///
    /// Fails with [`StoreError::Query`] (and writes nothing) when the rooftop
    /// is not a rooftop of the organization, when a vehicle's
    /// `organization_id` or `rooftop_id` differs from the arguments, or when
    /// two vehicles share a `vehicle_id`, `vin` or `stock_number`.
    /// Concurrent imports of one rooftop are serialised (SQLite: the write
    /// lock; PostgreSQL: a row lock on the rooftop), so versions never repeat.
    /// It is [`Store::write_snapshots`] fed from memory.
    async fn create_snapshot(
        &self,
        organization_id: &str,
        rooftop_id: &str,
        source: &SourceRecord,
        vehicles: &[VehicleRecord],
    ) -> Result<SnapshotRecord, StoreError> {
        // The writer applies every snapshot rule (snapshot_write::admit).
        let rooftops = [rooftop_id.to_owned()];
        let plan = snapshot_write::SnapshotPlan {
            organization_id,
            rooftops: &rooftops,
            source,
            dry_run: false,
        };
        let (sender, receiver) = tokio::sync::mpsc::channel(snapshot_write::FEED_CHANNEL_CAPACITY);
        let ((), written) = tokio::join!(
            snapshot_write::feed_slice(vehicles, sender),
            self.write_snapshots(plan, receiver)
        );
        written?.pop().ok_or_else(|| {
            StoreError::Query(format!(
                "no snapshot of rooftop '{rooftop_id}' was written; nothing was imported"
            ))
        })
    }

    /// Write the next snapshot of every rooftop of `plan` (each as
    /// [`Store::create_snapshot`] describes) from vehicles streamed on
    /// `feed`, all in one transaction: every rooftop gets its snapshot or
    /// none does. Nothing is committed unless [`snapshot_write::SnapshotFeed::End`]
    /// arrives. Memory does not grow with the vehicles' content: the
    /// previous snapshot is compared batch by batch, never loaded whole.
    /// A dry run computes the same records and summaries and writes nothing.
    /// Returns one record per rooftop, in `plan.rooftops` order.
    /// [`Store::write_snapshots_checked`] without its checks.
    async fn write_snapshots(
        &self,
        plan: snapshot_write::SnapshotPlan<'_>,
        feed: tokio::sync::mpsc::Receiver<snapshot_write::SnapshotFeed>,
    ) -> Result<Vec<SnapshotRecord>, StoreError> {
        let written = self
            .write_snapshots_checked(plan, feed, snapshot_write::WriteChecks::default())
            .await?;
        Ok(written.snapshots)
    }

    /// [`Store::write_snapshots`], reporting every added, changed and
    /// removed vehicle to `checks.changes` as it is found (the removed
    /// ones read from the previous snapshot a page at a time), and applying
    /// `checks.removal_guard`: when it refuses a rooftop, nothing is
    /// written and [`snapshot_write::SnapshotWrite::refused`] names every
    /// refused rooftop (docs/inventory-feeds.md "The removal guard").
    async fn write_snapshots_checked(
        &self,
        plan: snapshot_write::SnapshotPlan<'_>,
        feed: tokio::sync::mpsc::Receiver<snapshot_write::SnapshotFeed>,
        checks: snapshot_write::WriteChecks<'_>,
    ) -> Result<snapshot_write::SnapshotWrite, StoreError>;

    /// The newest snapshot of every rooftop that has one, ordered by
    /// (`organization_id`, `rooftop_id`).
    async fn latest_snapshots(&self) -> Result<Vec<SnapshotRecord>, StoreError>;

    /// Snapshots of one rooftop, newest first, at most `limit`.
    async fn snapshot_history(
        &self,
        organization_id: &str,
        rooftop_id: &str,
        limit: u32,
    ) -> Result<Vec<SnapshotRecord>, StoreError>;

    /// Every vehicle of a snapshot, ordered by `vehicle_id`. Empty for an
    /// unknown snapshot id (e.g. one pruned meanwhile).
    async fn snapshot_vehicles(&self, snapshot_id: &str) -> Result<Vec<VehicleRecord>, StoreError>;

    /// [`Store::snapshot_vehicles`] one vehicle at a time, in the same
    /// order, into `out` as each row is decoded: a reader that indexes
    /// them as they come never holds a large rooftop's stored rows and its
    /// decoded records at once (docs/benchmarks.md "Memory at a million").
    /// Stops early, without an error, when `out`'s receiver is gone.
    /// Returns how many vehicles were sent.
    async fn stream_snapshot_vehicles(
        &self,
        snapshot_id: &str,
        out: tokio::sync::mpsc::Sender<VehicleRecord>,
    ) -> Result<usize, StoreError>;

    /// Delete the snapshots that are superseded (not the newest of their
    /// rooftop) and whose successor (the next version of the rooftop) was
    /// created before `superseded_before`, with their vehicles; returns how
    /// many snapshots were deleted. The newest snapshot of a rooftop is never
    /// deleted.
    async fn prune_snapshots(&self, superseded_before: DateTime<Utc>) -> Result<u64, StoreError>;

    /// The advertised prices of one vehicle from `since` on, oldest first
    /// ([`PriceHistory`]): the point in force at `since` (the latest that
    /// began at or before it), then every later point, at most the newest
    /// 10,000. The SQL backends keep it (migration 0012): the snapshot
    /// writer records a point when a vehicle first appears in a rooftop's
    /// snapshots and when its price differs from the previous snapshot's;
    /// pruning keeps superseded points at least 90 days
    /// (docs/operations.md "Price history"). The default knows no history
    /// (every price-reduction rule then answers `cannot_determine`).
    async fn price_history(
        &self,
        organization_id: &str,
        rooftop_id: &str,
        vehicle_id: &str,
        since: DateTime<Utc>,
    ) -> Result<PriceHistory, StoreError> {
        let _ = (organization_id, rooftop_id, vehicle_id, since);
        Ok(PriceHistory::default())
    }

    /// Store a new API token. Fails with [`StoreError::Query`] (writing
    /// nothing) when its organization is not stored, when it lists a rooftop
    /// that is not a rooftop of that organization, or when its `token_id` is
    /// taken.
    async fn create_api_token(&self, token: &ApiTokenRecord) -> Result<(), StoreError>;

    /// One API token by its public id.
    async fn get_api_token(&self, token_id: &str) -> Result<Option<ApiTokenRecord>, StoreError>;

    /// Every API token (revoked and expired ones too), ordered by
    /// (`created_at`, `token_id`).
    async fn list_api_tokens(&self) -> Result<Vec<ApiTokenRecord>, StoreError>;

    /// Revoke a token at `at`; false when no token has this id. Revoking a
    /// revoked token returns true and keeps the first revocation time.
    async fn revoke_api_token(&self, token_id: &str, at: DateTime<Utc>)
    -> Result<bool, StoreError>;

    /// Append one audit event (its `event_id` must be new). What is stored
    /// is [`AuditEvent::bounded`]: every field within its bound, an
    /// identifier that is not one replaced by [`audit::INVALID_MARKER`].
    async fn append_audit(&self, event: &AuditEvent) -> Result<(), StoreError>;

    /// Add `count.count` calls to the counter row of (`window_start`,
    /// `client_network`, `tool`, `outcome`), creating it with
    /// `first_trace_id` when missing; `last_at` becomes the later of the
    /// two. A window already holding `max_keys_per_window` rows counts a new
    /// key under [`audit::OVERFLOW_NETWORK`] instead (concurrent writers
    /// are serialised, so the cap holds across replicas).
    async fn count_audit(
        &self,
        count: &AuditCount,
        max_keys_per_window: u32,
    ) -> Result<(), StoreError>;

    /// Counter rows with `window_start >= since`, ordered by
    /// (`window_start`, `client_network`, `tool`, `outcome`), at most `limit`.
    async fn audit_counts_since(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<AuditCount>, StoreError>;

    /// The counter rows after `last` in the order of
    /// [`Store::audit_counts_since`], at most `limit`: the next page of an
    /// export (keyset paging, so rows added meanwhile are neither skipped nor
    /// repeated).
    async fn audit_counts_after(
        &self,
        last: &AuditCount,
        limit: u32,
    ) -> Result<Vec<AuditCount>, StoreError>;

    /// Rows of `audit_events` and `audit_counters`, and the bytes of their
    /// field text (JSON documents as their text, timestamps as RFC 3339).
    async fn audit_footprint(&self) -> Result<AuditFootprint, StoreError>;

    /// Delete events with `occurred_at < older_than` and counter rows with
    /// `window_start < older_than`; then, while more than `max_events`
    /// events (`max_counters` counter rows) remain, the oldest ones in
    /// (`occurred_at`, `event_id`) (counter key) order. Works in batches of
    /// at most 10,000 rows, each its own transaction, so writers wait at most
    /// one batch. Concurrent passes (several replicas) are serialised.
    async fn prune_audit(
        &self,
        older_than: DateTime<Utc>,
        max_events: u64,
        max_counters: u64,
    ) -> Result<AuditPruneSummary, StoreError>;

    /// Audit events with `occurred_at >= since`, ordered by (`occurred_at`,
    /// `event_id`), at most `limit`.
    async fn audit_since(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<AuditEvent>, StoreError>;

    /// The audit events after the position (`occurred_at`, `event_id`) of
    /// the last event of a previous page, in the same order, at most
    /// `limit`: with [`Store::audit_since`], pages through any number of
    /// events, even many sharing one timestamp.
    async fn audit_after(
        &self,
        occurred_at: DateTime<Utc>,
        event_id: &str,
        limit: u32,
    ) -> Result<Vec<AuditEvent>, StoreError>;

    /// Import incentive program revisions of one organization in one
    /// transaction, with no whole-set check and no audit
    /// event (the demo seed): [`Store::change_programs`] with
    /// [`ProgramsChange::Import`] and `replace: false`.
    async fn import_programs(
        &self,
        organization_id: &str,
        programs: &[ProgramRecord],
    ) -> Result<ProgramsImportSummary, StoreError> {
        self.change_programs(
            organization_id,
            ProgramsChange::Import {
                records: programs,
                replace: false,
            },
            &|_| Ok(()),
            None,
            false,
        )
        .await
    }

    /// Change the programs of one organization in one transaction
    /// (docs/pricing.md "Revisions, whole-set validation, replacement and
    /// withdrawal"). Imported records, in ascending (program_id, revision)
    /// order: a stored pair with an identical document is *unchanged* (or
    /// *still withdrawn*), a new pair is *added* (every revision coexists);
    /// with `replace`, every active revision not given is *withdrawn*. A
    /// withdrawal marks the revision (or every active revision of the id)
    /// withdrawn; a revision is never deleted. `check` then judges the
    /// resulting active set; when it refuses, or the organization is not
    /// stored, or a different document is given under a stored pair, or a
    /// withdrawal names no active revision, the call fails with
    /// [`StoreError::Query`] (every conflict named) and writes nothing.
    /// `audit`, when given, is appended in the same transaction with
    /// `resource_ids` = the added and withdrawn pairs
    /// ([`ProgramRevision::audit_id`]). `dry_run` computes the same summary
    /// and writes nothing.
    async fn change_programs(
        &self,
        organization_id: &str,
        change: ProgramsChange<'_>,
        check: ProgramSetCheck<'_>,
        audit: Option<&AuditEvent>,
        dry_run: bool,
    ) -> Result<ProgramsImportSummary, StoreError>;

    /// Every active (not withdrawn) revision of every program of an
    /// organization, ordered by (`program_id`, `revision`). Which one an
    /// evaluation uses is decided at its `as_of` (`crate::offers`).
    async fn current_programs(
        &self,
        organization_id: &str,
    ) -> Result<Vec<ProgramRecord>, StoreError>;

    /// Every stored revision of every program of an organization, withdrawn
    /// ones too (with when), ordered by (`program_id`, `revision`):
    /// `programs list`.
    async fn program_revisions(
        &self,
        organization_id: &str,
    ) -> Result<Vec<ProgramRevisionRecord>, StoreError>;

    /// Record one import the CLI ran (docs/console.md "Imports"): its
    /// (kind, outcome) count goes up by one; a refused one (any outcome but
    /// `imported`) is also kept, [`ImportAttempt::bounded`], and only the
    /// newest [`import_log::MAX_ATTEMPTS_PER_ORGANIZATION`] of its
    /// organization (or of those without one) are kept.
    async fn record_import(&self, attempt: &ImportAttempt) -> Result<(), StoreError>;

    /// The kept refused imports of an organization, newest first, at most
    /// `limit`.
    async fn import_attempts(
        &self,
        organization_id: &str,
        limit: u32,
    ) -> Result<Vec<ImportAttempt>, StoreError>;

    /// Every (kind, outcome) count of [`Store::record_import`].
    async fn import_counts(&self) -> Result<Vec<ImportCount>, StoreError>;

    /// Append one availability observation.
    async fn record_availability(
        &self,
        observation: &AvailabilityObservation,
    ) -> Result<(), StoreError>;

    /// The newest observation of a vehicle of a rooftop: greatest
    /// `observed_at`, then greatest `checked_at`.
    async fn latest_availability(
        &self,
        rooftop_id: &str,
        vehicle_id: &str,
    ) -> Result<Option<AvailabilityObservation>, StoreError>;

    /// Follow the changes committed on this store by any process: the
    /// writers above notify inside their transactions. PostgreSQL: a task
    /// holding its own `LISTEN` connection (reconnected with backoff; each
    /// reconnection is reported as [`StoreChange::Resync`]) feeds the
    /// returned channel until the receiver is dropped. SQLite: `None`; its
    /// readers poll.
    fn subscribe_changes(&self) -> Option<tokio::sync::mpsc::Receiver<StoreChange>>;

    /// Store a new legacy session in one transaction: sessions whose
    /// `last_seen` is before `idle_before` are deleted first, then, while
    /// `max_sessions` or more remain, the least recently seen ones, so the
    /// table never holds more than `max_sessions` (concurrent creations are
    /// serialised across replicas). Returns how many sessions are stored
    /// afterwards.
    async fn create_legacy_session(
        &self,
        session: &LegacySessionRecord,
        max_sessions: u32,
        idle_before: DateTime<Utc>,
    ) -> Result<u64, StoreError>;

    /// One legacy session by key.
    async fn legacy_session(&self, key: &str) -> Result<Option<LegacySessionRecord>, StoreError>;

    /// Move a session's `last_seen` forward to `at` (never back); false
    /// when the session is gone.
    async fn touch_legacy_session(&self, key: &str, at: DateTime<Utc>) -> Result<bool, StoreError>;

    /// Record `notifications/initialized` (and a use at `at`); false when
    /// the session is gone.
    async fn initialize_legacy_session(
        &self,
        key: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Delete a legacy session; false when it was not stored.
    async fn delete_legacy_session(&self, key: &str) -> Result<bool, StoreError>;

    /// The URIs a legacy session subscribed to and the token of its GET
    /// stream (docs/mcp.md "Subscriptions"); `None` when the session is gone.
    async fn legacy_session_subscriptions(
        &self,
        key: &str,
    ) -> Result<Option<LegacySubscriptions>, StoreError>;

    /// Make `stream` the token of the session's one GET stream (a stream
    /// holding another token ends); false when the session is gone.
    async fn claim_legacy_session_stream(
        &self,
        key: &str,
        stream: &str,
    ) -> Result<bool, StoreError>;

    /// Add (`subscribe`) or remove `uri` in a legacy session's
    /// subscriptions in one transaction; an addition beyond `max` URIs is
    /// not made. Returns the set afterwards; `None` when the session is gone.
    async fn change_legacy_session_subscription(
        &self,
        key: &str,
        uri: &str,
        subscribe: bool,
        max: u32,
    ) -> Result<Option<Vec<String>>, StoreError>;

    /// How many legacy sessions are stored (live or not yet found idle).
    async fn count_legacy_sessions(&self) -> Result<u64, StoreError>;
}

/// Open the store named by `database_url` (`sqlite:` path or `postgres://`),
/// creating the SQLite file and its directory when missing, and apply the
/// backend's migrations.
pub async fn open(database_url: &str) -> Result<Arc<dyn Store>, StoreError> {
    if database_url.starts_with("postgres://") || database_url.starts_with("postgresql://") {
        Ok(Arc::new(PostgresStore::open(database_url).await?))
    } else if database_url.starts_with("sqlite:") {
        Ok(Arc::new(SqliteStore::open(database_url).await?))
    } else {
        Err(StoreError::UnsupportedUrl)
    }
}

// ---------------------------------------------------------------------------
// Backend-neutral helpers of the store implementation (`sql/`, `plan.rs`).
// ---------------------------------------------------------------------------

/// A legacy session's subscriptions ([`Store::legacy_session_subscriptions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacySubscriptions {
    pub uris: Vec<String>,
    /// The token of the GET stream that follows them, if one was opened.
    pub stream: Option<String>,
}

/// The unique index that makes a rooftop id name one rooftop gateway-wide.
const ROOFTOP_ID_INDEX: &str = "rooftops_rooftop_id_unique";

/// Rows deleted per statement and transaction by `prune_audit`.
const AUDIT_PRUNE_BATCH: u64 = 10_000;

/// A `Migrator` over migrations embedded by `build.rs` as
/// `(version, description, sql)`, checksummed exactly as `sqlx::migrate!` does.
fn embedded_migrator(migrations: &[(i64, &str, &'static str)]) -> sqlx::migrate::Migrator {
    use sqlx::SqlSafeStr as _;
    use sqlx::migrate::{Migration, MigrationType, Migrator};
    Migrator::with_migrations(
        migrations
            .iter()
            .map(|&(version, description, sql)| {
                Migration::new(
                    version,
                    description.to_owned().into(),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    )
}
