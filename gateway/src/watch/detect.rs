//! What changed for each subscribed URI, classified into the wire
//! contract's kinds (docs/mcp.md "Subscriptions"). Pure: two inventory
//! views (or two records) in, the changes out. The work is proportional to
//! the subscriptions: only subscribed vehicles are looked up, and only in
//! rooftops whose snapshot changed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::uri::Target;
use crate::domain::vehicle::VehicleRecord;
use crate::inventory::index::SnapshotIndex;
use crate::inventory::live::InventoryView;

pub const ADDED: &str = "added";
pub const REMOVED: &str = "removed";
pub const PRICE_CHANGED: &str = "price_changed";
pub const CHARGES_CHANGED: &str = "charges_changed";
pub const AVAILABILITY_CHANGED: &str = "availability_changed";
pub const PROGRAMS_CHANGED: &str = "programs_changed";
pub const DETAILS_CHANGED: &str = "details_changed";
pub const INVENTORY_CHANGED: &str = "inventory_changed";
pub const DEALER_CHANGED: &str = "dealer_changed";

/// One subscribed URI's change, and whom it may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    pub uri: String,
    pub kinds: Vec<&'static str>,
    pub snapshot_version: String,
    pub organization_id: String,
    /// The rooftops a principal must be able to read (any one of them) to
    /// be told: the vehicle's or the rooftop's own, or for an organization
    /// the rooftops whose inventory changed, so nobody learns of a change
    /// in a rooftop they cannot see.
    pub rooftops: Vec<String>,
    /// A `removed` change: told to whoever could read it before.
    pub before: bool,
}

/// The kinds of change between two versions of one vehicle as the
/// caller sees it (`None`: not offered in that snapshot). Provenance
/// (source name, digest, observation time) is not a change of the vehicle:
/// every import renews it, and the new snapshot version already says so.
pub fn vehicle_kinds(
    old: Option<&VehicleRecord>,
    new: Option<&VehicleRecord>,
) -> Vec<&'static str> {
    let (old, new) = match (old, new) {
        (None, None) => return Vec::new(),
        (None, Some(_)) => return vec![ADDED],
        (Some(_), None) => return vec![REMOVED],
        (Some(old), Some(new)) => (old, new),
    };
    let mut kinds = Vec::new();
    if old.availability_status != new.availability_status {
        // Sold is no longer offered (the contract's `removed`: sold or
        // withdrawn); any other move of the status is an availability
        // change.
        if new.availability_status == "sold" {
            kinds.push(REMOVED);
        } else {
            kinds.push(AVAILABILITY_CHANGED);
        }
    }
    if old.advertised_price != new.advertised_price {
        kinds.push(PRICE_CHANGED);
    }
    if old.required_dealer_charges != new.required_dealer_charges
        || old.conditional_adjustments != new.conditional_adjustments
        || old.government_charges_status != new.government_charges_status
    {
        kinds.push(CHARGES_CHANGED);
    }
    // Everything else the caller sees: compare the rest with the fields
    // above (and provenance) taken from the old record.
    let mut rest = new.clone();
    rest.availability_status.clone_from(&old.availability_status);
    rest.advertised_price = old.advertised_price.clone();
    rest.required_dealer_charges.clone_from(&old.required_dealer_charges);
    rest.conditional_adjustments.clone_from(&old.conditional_adjustments);
    rest.government_charges_status.clone_from(&old.government_charges_status);
    rest.source = old.source.clone();
    if rest != *old {
        kinds.push(DETAILS_CHANGED);
    }
    kinds
}

/// The vehicle `vehicle_id` as offered by `index` (`None`: not in it).
fn offered(index: Option<&Arc<SnapshotIndex>>, vehicle_id: &str) -> Option<VehicleRecord> {
    let index = index?;
    index.find_vehicle_id(vehicle_id).map(|row| index.record(row))
}

/// The changes between two inventory views for the subscribed `targets`.
/// A rooftop whose newest snapshot is the same index in both views is not
/// looked at.
pub fn inventory_changes(
    old: &InventoryView,
    new: &InventoryView,
    targets: &[Target],
) -> Vec<Detected> {
    // Rooftops whose newest snapshot changed, with their organization and
    // the new version (or the old one, for a rooftop no longer served).
    let mut changed: BTreeMap<&str, (String, i64)> = BTreeMap::new();
    let wanted: BTreeSet<&str> = targets
        .iter()
        .filter_map(|t| match t {
            Target::Rooftop(_, r) | Target::Vehicle(_, r, _) => Some(r.as_str()),
            _ => None,
        })
        .collect();
    let orgs: BTreeSet<&str> = targets
        .iter()
        .filter_map(|t| match t {
            Target::Organization(o) => Some(o.as_str()),
            _ => None,
        })
        .collect();
    let rooftop_ids: BTreeSet<&str> = old
        .rooftops
        .keys()
        .chain(new.rooftops.keys())
        .map(String::as_str)
        .collect();
    for rooftop_id in rooftop_ids {
        let before = old.rooftop(rooftop_id);
        let after = new.rooftop(rooftop_id);
        let same = match (before, after) {
            (Some(b), Some(a)) => Arc::ptr_eq(&b.latest, &a.latest),
            _ => false,
        };
        if same {
            continue;
        }
        let Some(index) = after.or(before).map(|r| &r.latest) else {
            continue;
        };
        let organization_id = index.organization_id();
        if wanted.contains(rooftop_id) || orgs.contains(organization_id) {
            changed.insert(rooftop_id, (organization_id.to_owned(), index.version()));
        }
    }
    let mut out = Vec::new();
    for target in targets {
        match target {
            Target::Vehicle(org, rooftop, vehicle_id) => {
                let Some((owner, version)) = changed.get(rooftop.as_str()) else {
                    continue;
                };
                if owner != org {
                    continue;
                }
                let was = offered(old.rooftop(rooftop).map(|r| &r.latest), vehicle_id);
                let is = offered(new.rooftop(rooftop).map(|r| &r.latest), vehicle_id);
                let kinds = vehicle_kinds(was.as_ref(), is.as_ref());
                if kinds.is_empty() {
                    continue;
                }
                out.push(Detected {
                    uri: target.uri(),
                    before: kinds.contains(&REMOVED),
                    kinds,
                    snapshot_version: version.to_string(),
                    organization_id: org.clone(),
                    rooftops: vec![rooftop.clone()],
                });
            }
            Target::Rooftop(org, rooftop) => {
                if let Some((owner, version)) = changed.get(rooftop.as_str())
                    && owner == org
                {
                    out.push(Detected {
                        uri: target.uri(),
                        kinds: vec![INVENTORY_CHANGED],
                        snapshot_version: version.to_string(),
                        organization_id: org.clone(),
                        rooftops: vec![rooftop.clone()],
                        before: false,
                    });
                }
            }
            Target::Organization(org) => {
                let rooftops: Vec<(&str, i64)> = changed
                    .iter()
                    .filter(|(_, (owner, _))| owner == org)
                    .map(|(r, (_, v))| (*r, *v))
                    .collect();
                if let Some(version) = rooftops.iter().map(|(_, v)| *v).max() {
                    out.push(Detected {
                        uri: target.uri(),
                        kinds: vec![INVENTORY_CHANGED],
                        snapshot_version: version.to_string(),
                        organization_id: org.clone(),
                        rooftops: rooftops.iter().map(|(r, _)| (*r).to_owned()).collect(),
                        before: false,
                    });
                }
            }
            Target::Manifest => {}
        }
    }
    out
}

#[cfg(test)]
#[path = "detect_tests.rs"]
mod tests;
