//! Dealer Agent Gateway: a read-only Dealer Agent Protocol 0.1 gateway over
//! MCP 2026-07-28 (plus the 2025-11-25 handshake).
//!
//! Layout, the request flow of one tool call and the layering rules:
//! docs/architecture.md. Every module says why it exists; requirements are
//! cited as `DAP-CORE-NNN`.
//!
//! The layers, from the ground floor up, each importing only those below
//! it (no import circle):
//!
//! 1. [`domain`] (the records every layer shares; imports nothing of ours),
//!    [`dap`] (the DAP wire vocabulary), [`catalog`], and the leaves
//!    [`ratelimit`], [`telemetry`], [`trace_context`], [`progress`],
//!    [`content_version`].
//! 2. [`report`] (the problem reporter of every operator file), [`store`]
//!    (the only SQL), [`claim`].
//! 3. [`auth`], [`directory`], [`dealers`].
//! 4. [`inventory`].
//! 5. [`ingest`], [`offers`], [`availability`].
//! 6. [`disclosure`], [`demo`], [`feed_export`], [`config`].
//! 7. [`state`]: `AppState`, what every request shares.
//! 8. [`tools`] (each a [`tools::Tool`] with typed arguments and output,
//!    called with a narrow `ToolContext`, never the whole `AppState`),
//!    [`metrics`].
//! 9. [`mcp`] (the transport: `/mcp` and the AAP endpoint per
//!    organization), [`console`], [`resources`], [`manifest`], [`preview`].
//! 10. [`wellknown`], [`server_card`], [`app`] (routes, start-up,
//!     shutdown).
//! 11. The command line ([`cli`]) on top.

/// Routes, start-up and graceful shutdown.
pub mod app;
/// Principals and the visibility policy applied before any lookup.
pub mod auth;
/// Availability checks: sources, bands, reuse, coalescing, breaker.
pub mod availability;
/// `capabilities.yaml` and the JSON Schemas, compiled once.
pub mod catalog;
/// The conformance claim published at `/conformance/claim.json`.
pub mod claim;
/// The command line.
pub mod cli;
/// Typed settings with environment variables.
pub mod config;
/// The rooftop manager's console at `/console/` (server-rendered pages).
pub mod console;
/// Content versions of tool results and resource reads, and the short
/// answer of a conditional re-read (docs/agents.md "Conditional re-reads").
pub mod content_version;
/// The DAP 0.1 wire vocabulary shared by every layer.
pub mod dap;
/// The dealers file: parse, validate, convert.
pub mod dealers;
/// Deterministic demo data (a dealers file, DAP Inventory CSV feeds) and
/// the bundled demo `serve` loads into an empty store.
pub mod demo;
/// The in-memory dealer directory over the store.
pub mod directory;
/// The pricing disclosure of a vehicle (one pure builder).
pub mod disclosure;
/// The ground floor: records shared by every layer; imports nothing above.
pub mod domain;
/// The error guide: each layer's error type and how it maps outward.
pub mod errors;
/// The published DAP Inventory CSV feed of an organization (`/feeds/{organization_id}/inventory.csv`).
pub mod feed_export;
/// Test-only: the MCP conformance fixture (docs/conformance.md, "The MCP conformance
/// fixture"); never in the release binary.
#[cfg(feature = "conformance-fixture")]
pub mod fixture;
/// Inventory feeds (DAP CSV, Dealer.com CSV, JSON): parse, validate, convert.
pub mod ingest;
/// Vehicles: the domain model and its wire rendering.
pub mod inventory;
/// The disclosure lint, gateway side: facts of a published disclosure,
/// the `dealergateway.disclosure-lint` block (docs/lint.md).
pub mod lint;
/// The DAP manifest, one object for tool and resource.
pub mod manifest;
/// The MCP endpoint, both eras.
pub mod mcp;
/// Prometheus metrics at `/metrics` (no tenant data beyond organization and rooftop ids).
pub mod metrics;
/// Incentive programs: per-organization cache, import, vehicle mapping.
pub mod offers;
/// `dealer-gateway preview`: a vehicle's pricing as the rooftop manager sees it.
pub mod preview;
/// Progress of imports and `demo generate` on stderr.
pub mod progress;
/// Keyed rate limits (per address, per principal, per-tool quotas).
pub mod ratelimit;
/// The one problem reporter of every operator file (dealers, programs,
/// feeds, config, buyer profiles): line and column, pointer, rule in words.
pub mod report;
/// MCP resources over the reserved `dealeragent://` URIs.
pub mod resources;
/// MCP Server Cards of `/mcp` and of each AAP endpoint, the AI Catalog,
/// and the MCP Registry's `server.json`.
pub mod server_card;
/// Organization-sharded replicas: which organizations a replica serves.
pub mod shards;
/// The state every request shares (below transport, tools and resources).
pub mod state;
/// The only module that speaks SQL.
pub mod store;
/// JSON logs.
pub mod telemetry;
/// One module per tool.
pub mod tools;
/// The W3C Trace Context of one request (`_meta` or HTTP headers), or a
/// trace of our own.
pub mod trace_context;
/// The per-replica change hub: subscriptions, bounded notice queues,
/// change detection (docs/mcp.md "Subscriptions").
pub mod watch;
/// DAP's static publication, the gateway discovery document and `/llms.txt`.
pub mod wellknown;

/// Top-level failures of a command, the last layer of the error guide
/// ([`errors`]). Each maps to an exit code in `cli::run`: `OperatorFile`
/// exits 2, every other variant 1.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The bundled catalog (`capabilities.yaml`, the schemas) is unusable.
    #[error(transparent)]
    Catalog(#[from] catalog::CatalogError),
    /// The store failed (an outage, a refused write, a corrupt record).
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// An operator file refused whole (bad input: exit code 2).
    #[error("{0}")]
    OperatorFile(#[from] report::FileReport),
    /// A file or socket could not be read or written.
    #[error("{0}")]
    Io(String),
}
