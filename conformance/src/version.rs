//! The suite's own version: in every report and claim, and in the
//! `clientInfo` the suite sends. Its own module so the client (the lowest
//! layer) and the runner both use it without importing each other.

/// The version of the check suite (not of any gateway).
pub const SUITE_VERSION: &str = "0.1.0";
