//! `dap-conformance`: a black-box conformance suite for Dealer Agent
//! Protocol 0.1 gateways, and signed conformance claims (DAP section 14).
//!
//! The suite speaks only HTTP to the gateway under test: it never reads a
//! store or links gateway code, so it runs against any DAP 0.1 gateway.
//! [`audit`] is the shopper's audit: twenty questions answered by a
//! scripted agent and graded on DAP's answer-audit rubric.

pub mod audit;
pub mod checks;
pub mod claim;
pub mod client;
pub mod context;
pub mod report;
pub mod run;
pub mod schemas;
pub mod version;
