//! The ground floor: the records that store, auth, ingest, tools and the
//! transport share (docs/architecture.md). Nothing here imports any other module
//! of the crate; every other module may import this one.
//!
//! - [`dealer`]: organizations, rooftops and their settings, provenance,
//!   availability observations;
//! - [`vehicle`]: the vehicle record as imported and stored;
//! - [`grant`]: credentials, grants and principals;
//! - [`token`]: gateway API token metadata;
//! - [`audit`]: the audit event.

pub mod audit;
pub mod dealer;
pub mod grant;
pub mod token;
pub mod vehicle;
