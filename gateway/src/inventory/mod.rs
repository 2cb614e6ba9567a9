//! Inventory: the vehicle domain model shared by ingest, the store, the
//! in-memory index and the tools, and its DAP wire rendering.
//!
//! A rooftop's inventory is published as immutable *snapshots*: each import
//! of a rooftop creates a new one (all or nothing), and reads are pinned to
//! one snapshot so pages never mix two imports. Each vehicle keeps its own
//! rooftop and provenance (DAP-CORE-032/033).

pub mod cursor;
pub mod index;
pub mod live;
/// The vehicle record lives on the ground floor (`crate::domain::vehicle`).
pub use crate::domain::vehicle as model;
pub mod render;
pub mod search;

#[cfg(test)]
mod tests;
