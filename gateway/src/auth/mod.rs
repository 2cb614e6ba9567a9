//! Who is calling, and what they may see.
//!
//! Every tool runs with the caller's principal: policy is decided here,
//! before any lookup that could reveal a foreign record (DAP-CORE-029..031).
//! Credentials (gateway API tokens and external JWT access tokens) both
//! resolve to one [`Grant`]. `_meta` keys from the caller never confer
//! anything (DAP reference test
//! `test_caller_metadata_cannot_forge_transport_authorization`).

pub mod api_token;
pub mod jwt;

pub mod verify;

// The grant model is a ground-floor record (crate::domain) that store,
// tools and audit share; it is named here too, where readers look first.
pub use crate::domain::grant::{Credential, Grant, Principal, RooftopScope};
