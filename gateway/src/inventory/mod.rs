//! Inventory: the in-memory index over a snapshot's vehicles, search,
//! sealed cursors and the DAP wire rendering. The vehicle record itself is
//! on the ground floor (`crate::domain::vehicle`, also named `model` here).
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
pub mod pieces;
pub mod render;
pub mod search;

#[cfg(test)]
mod tests;
