//! Every integration test of the gateway, in one test binary (docs/testing.md
//! "Where the tests are"): one link instead of one per file, one harness (`common`:
//! `spawn`, `spawn_with`, the CLI runner, `test_database_url`, which honours
//! `DEALER_GATEWAY_TEST_POSTGRES_URL` so each test also runs on PostgreSQL).
//! Each module below is one area; `cargo nextest run -p gateway --test api
//! <module>::` runs one of them.

mod common;

mod aap;
mod agents_guide;
mod audit_bounds;
mod availability;
mod budget;
mod catalog;
mod cli_ops;
mod conditional;
mod console;
mod console_sessions;
mod disclosure;
mod discovery;
mod errors_teach;
#[cfg(feature = "conformance-fixture")]
mod fixture_list_changed;
#[cfg(feature = "conformance-fixture")]
mod fixture_mrtr;
mod get_vehicle;
mod hardening;
mod import_dealers;
mod import_inventory;
mod import_memory;
mod import_programs;
mod import_stall;
mod import_trust;
mod index_images;
mod inventory_search;
mod lint_demo;
mod lint_disclosure;
mod lint_surfaces;
mod listen_client;
mod mcp_fuzz;
mod mcp_legacy;
mod mcp_modern;
mod mcp_transport;
mod metrics;
mod money_exactness;
mod offers;
mod offers_budget;
mod operator_reports;
mod prompts;
mod replicas;
mod routes;
mod security;
mod server_card;
mod slow_subscriber;
mod stdio;
mod store_outage;
mod subscriptions;
mod token_cli;
mod trace_context;
mod used_vehicle;
mod watch;
mod wellknown;
