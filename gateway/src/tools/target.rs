//! The vehicle target of a tool call: one shared prologue for every tool
//! that answers about one vehicle of one rooftop (`get_vehicle`,
//! `verify_availability`, `get_disclosure`, `offers.evaluate`).
//!
//! The order is fixed and is the tenancy rule itself (DAP-CORE-029..031):
//! selector from the arguments, then the dealer directory, then the
//! caller's authority over the organization and rooftop ([`policy`]), and
//! only then the inventory. A rooftop the caller may not read answers
//! `NotFound` before anything could reveal whether the vehicle exists, so a
//! foreign vehicle and an absent one look the same.
//!
//! The prologue is two steps, [`authorize`] and [`Authorized::locate`],
//! because `offers.evaluate` checks its buyer profile between them (after
//! tenancy, before the lookup); [`resolve_vehicle`] runs both.

use std::borrow::Cow;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::{ToolContext, ToolError, policy};
use crate::directory::DirectorySnapshot;
use crate::inventory::index::SnapshotIndex;
use crate::inventory::live::InventoryView;
use crate::inventory::model::VehicleRecord;
use crate::store::{OrganizationRecord, RooftopRecord};

/// How a vehicle is selected.
#[derive(Debug, Clone, Copy)]
pub enum Selector<'a> {
    VehicleId(&'a str),
    Vin(&'a str),
    StockNumber(&'a str),
}

impl Selector<'_> {
    fn find(self, index: &SnapshotIndex) -> Option<usize> {
        match self {
            Selector::VehicleId(id) => index.find_vehicle_id(id),
            Selector::Vin(vin) => index.find_vin(vin).first().map(|r| *r as usize),
            Selector::StockNumber(s) => index.find_stock_number(s).first().map(|r| *r as usize),
        }
    }
}

/// The vehicle target every vehicle tool names: where, and which one.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub organization_id: &'a str,
    pub rooftop_id: &'a str,
    pub selector: Selector<'a>,
}

/// Where a selected vehicle was found.
pub struct Found {
    pub index: Arc<SnapshotIndex>,
    pub row: usize,
    pub withdrawn: bool,
}

/// Look a vehicle up in a rooftop's current inventory, then among the
/// vehicles its newest snapshot withdrew (the grace period of
/// `get_vehicle`'s module doc).
pub fn lookup(view: &InventoryView, rooftop_id: &str, selector: Selector<'_>) -> Option<Found> {
    let rooftop = view.rooftop(rooftop_id)?;
    if let Some(row) = selector.find(&rooftop.latest) {
        return Some(Found {
            index: rooftop.latest.clone(),
            row,
            withdrawn: false,
        });
    }
    let withdrawn = rooftop.withdrawn.as_ref()?;
    selector.find(withdrawn).map(|row| Found {
        index: withdrawn.clone(),
        row,
        withdrawn: true,
    })
}

/// An organization and one of its rooftops the caller may read, held with
/// the directory snapshot they were decided on (the same snapshot the
/// inventory view is then taken from).
pub struct Tenant {
    directory: Arc<DirectorySnapshot>,
    /// Positions in `directory`, which is immutable behind its `Arc`; set
    /// only by [`authorize`] from this very snapshot.
    organization: usize,
    rooftop: usize,
}

impl Tenant {
    /// The directory snapshot the tenant was authorized in.
    pub fn directory(&self) -> &Arc<DirectorySnapshot> {
        &self.directory
    }

    pub fn organization(&self) -> &OrganizationRecord {
        &self.directory.organizations[self.organization]
    }

    pub fn rooftop(&self) -> &RooftopRecord {
        &self.organization().rooftops[self.rooftop]
    }
}

/// The first step done: the caller may read the rooftop; nothing about the
/// vehicle has been looked at yet.
pub struct Authorized<'a> {
    pub tenant: Tenant,
    selector: Selector<'a>,
}

/// Both steps done: the authorized rooftop, where its vehicle was found and
/// the vehicle's record.
pub struct VehicleTarget {
    pub tenant: Tenant,
    pub found: Found,
    pub record: VehicleRecord,
}

/// Both steps done, the record kept as its JSON text: for a caller that
/// reads a few of its members ([`VehicleText::availability_facts`]) instead
/// of decoding all of them.
pub struct VehicleText {
    pub tenant: Tenant,
    pub found: Found,
    json: Vec<u8>,
}

/// The members of a vehicle record `verify_availability` reads, parsed
/// from the record's JSON text; every other member is skipped unparsed
/// into values (docs/benchmarks.md "verify_availability under 4x"). Names
/// and types are those of [`VehicleRecord`] and its `source`, so each
/// member reads exactly as the whole record decodes it (tests below).
#[derive(Debug, Deserialize)]
pub struct AvailabilityFacts<'a> {
    #[serde(borrow)]
    pub vehicle_id: Cow<'a, str>,
    #[serde(borrow)]
    pub organization_id: Cow<'a, str>,
    #[serde(borrow)]
    pub rooftop_id: Cow<'a, str>,
    pub vin: Option<String>,
    pub stock_number: Option<String>,
    #[serde(borrow)]
    pub availability_status: Cow<'a, str>,
    #[serde(borrow)]
    pub source: AvailabilitySource<'a>,
}

/// The record's `source` members of [`AvailabilityFacts`].
#[derive(Debug, Deserialize)]
pub struct AvailabilitySource<'a> {
    #[serde(borrow)]
    pub source_name: Cow<'a, str>,
    #[serde(borrow)]
    pub authority: Cow<'a, str>,
    pub observed_at: DateTime<Utc>,
}

impl VehicleText {
    /// The members `verify_availability` reads.
    ///
    /// # Panics
    /// When the text is not a record, which [`SnapshotIndex::record`]
    /// treats the same way (the index wrote it from a `VehicleRecord`).
    pub fn availability_facts(&self) -> AvailabilityFacts<'_> {
        availability_facts(&self.json)
    }
}

fn availability_facts(json: &[u8]) -> AvailabilityFacts<'_> {
    serde_json::from_slice(json).expect("index blob is a compressed VehicleRecord")
}

/// Selector, directory and tenancy (DAP-CORE-029..031): `NotFound` without
/// a selector, and for an organization or rooftop that is absent or not
/// readable by the caller (exactly like an absent vehicle).
pub async fn authorize<'a>(
    ctx: &ToolContext,
    target: Option<Target<'a>>,
) -> Result<Authorized<'a>, ToolError> {
    let target = target.ok_or(ToolError::NotFound)?;
    let selector = target.selector;
    let directory = ctx.directory().snapshot().await?;
    let requested = [target.rooftop_id.to_owned()];
    let (org, rooftops) = policy::authorize_rooftops(
        &directory,
        &ctx.principal,
        target.organization_id,
        Some(&requested),
    )?;
    let rooftop = rooftops.into_iter().next().ok_or(ToolError::NotFound)?;
    // Positions of the records policy chose, so the tenant can own the
    // snapshot instead of borrowing from a local.
    let organization = directory
        .organizations
        .iter()
        .position(|o| std::ptr::eq(o, org))
        .ok_or_else(|| ToolError::internal("authorized organization not in its directory"))?;
    let rooftop = org
        .rooftops
        .iter()
        .position(|r| std::ptr::eq(r, rooftop))
        .ok_or_else(|| ToolError::internal("authorized rooftop not in its organization"))?;
    Ok(Authorized {
        tenant: Tenant {
            directory,
            organization,
            rooftop,
        },
        selector,
    })
}

impl Authorized<'_> {
    /// The inventory view of the authorized directory, then the vehicle in
    /// the authorized rooftop only: `NotFound` when it is neither current
    /// nor recently withdrawn there.
    pub async fn locate(self, ctx: &ToolContext) -> Result<VehicleTarget, ToolError> {
        let (tenant, found) = self.find(ctx).await?;
        let record = found.index.record(found.row);
        Ok(VehicleTarget {
            tenant,
            found,
            record,
        })
    }

    /// [`Authorized::locate`] with the record left as its JSON text.
    pub async fn locate_text(self, ctx: &ToolContext) -> Result<VehicleText, ToolError> {
        let (tenant, found) = self.find(ctx).await?;
        let json = found.index.record_json(found.row);
        Ok(VehicleText {
            tenant,
            found,
            json,
        })
    }

    /// [`Authorized::locate`] without decoding the record (a caller that
    /// serves the pre-rendered vehicle needs only where it is).
    pub async fn find(self, ctx: &ToolContext) -> Result<(Tenant, Found), ToolError> {
        let Authorized { tenant, selector } = self;
        let view = ctx.inventory().view(&tenant.directory).await?;
        let found =
            lookup(&view, &tenant.rooftop().rooftop_id, selector).ok_or(ToolError::NotFound)?;
        Ok((tenant, found))
    }
}

/// [`authorize`] then [`Authorized::locate`].
pub async fn resolve_vehicle(
    ctx: &ToolContext,
    target: Option<Target<'_>>,
) -> Result<VehicleTarget, ToolError> {
    authorize(ctx, target).await?.locate(ctx).await
}

/// [`authorize`] then [`Authorized::locate_text`].
pub async fn resolve_vehicle_text(
    ctx: &ToolContext,
    target: Option<Target<'_>>,
) -> Result<VehicleText, ToolError> {
    authorize(ctx, target).await?.locate_text(ctx).await
}

#[cfg(test)]
#[path = "target_tests.rs"]
mod tests;
