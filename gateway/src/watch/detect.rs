//! What changed for each subscribed URI, classified into the wire
//! contract's kinds (docs/mcp.md "Subscriptions"). Pure: two inventory
//! views (or two records) in, the changes out. The work is proportional to
//! the subscriptions: only subscribed vehicles are looked up, and only in
//! rooftops whose snapshot changed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::uri::Target;
use crate::auth::Principal;
use crate::directory::DirectorySnapshot;
use crate::domain::dealer::OrganizationRecord;
use crate::domain::vehicle::VehicleRecord;
use crate::inventory::index::SnapshotIndex;
use crate::inventory::live::InventoryView;
use crate::offers::OrgPrograms;

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
    rest.availability_status
        .clone_from(&old.availability_status);
    rest.advertised_price = old.advertised_price;
    rest.required_dealer_charges
        .clone_from(&old.required_dealer_charges);
    rest.conditional_adjustments
        .clone_from(&old.conditional_adjustments);
    rest.government_charges_status
        .clone_from(&old.government_charges_status);
    rest.source = old.source.clone();
    if rest != *old {
        kinds.push(DETAILS_CHANGED);
    }
    kinds
}

/// The vehicle `vehicle_id` as offered by `index` (`None`: not in it).
fn offered(index: Option<&Arc<SnapshotIndex>>, vehicle_id: &str) -> Option<VehicleRecord> {
    let index = index?;
    index
        .find_vehicle_id(vehicle_id)
        .map(|row| index.record(row))
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
                // One notice per changed rooftop, each gated on that
                // rooftop and carrying its version: a reader of the
                // organization never learns of (nor from the version of) a
                // change in a rooftop it cannot see.
                for (rooftop, (owner, version)) in &changed {
                    if owner == org {
                        out.push(Detected {
                            uri: target.uri(),
                            kinds: vec![INVENTORY_CHANGED],
                            snapshot_version: version.to_string(),
                            organization_id: org.clone(),
                            rooftops: vec![(*rooftop).to_owned()],
                            before: false,
                        });
                    }
                }
            }
            Target::Manifest => {}
        }
    }
    out
}

/// The organization `id` of `directory` as a reader sees it changed: its
/// provenance (the dealers file's digest and time) is renewed by every
/// import and is no change of the dealer, as for a vehicle.
fn record_of(directory: &DirectorySnapshot, id: &str) -> Option<OrganizationRecord> {
    let mut org = directory.organization(id)?.clone();
    org.source = crate::store::SourceRecord {
        source_name: String::new(),
        authority: String::new(),
        content_digest: String::new(),
        observed_at: chrono::DateTime::UNIX_EPOCH,
    };
    Some(org)
}

/// The organizations whose record differs between two directories (added
/// and removed ones included).
pub fn changed_organizations(before: &DirectorySnapshot, now: &DirectorySnapshot) -> Vec<String> {
    let ids: BTreeSet<&str> = before
        .organizations
        .iter()
        .chain(&now.organizations)
        .map(|o| o.organization_id.as_str())
        .collect();
    ids.into_iter()
        .filter(|id| record_of(before, id) != record_of(now, id))
        .map(str::to_owned)
        .collect()
}

/// The organization `id` as a rooftop URI shows it: its own fields and
/// that one rooftop (a rooftop read is the organization narrowed to it).
fn narrowed(directory: &DirectorySnapshot, id: &str, rooftop: &str) -> Option<OrganizationRecord> {
    let mut narrowed = record_of(directory, id)?;
    narrowed.rooftops.retain(|r| r.rooftop_id == rooftop);
    Some(narrowed).filter(|o| !o.rooftops.is_empty())
}

/// `dealer_changed` for the subscribed organization and rooftop URIs
/// whose dealers-file record changed between two directories.
pub fn directory_changes(
    before: &DirectorySnapshot,
    now: &DirectorySnapshot,
    targets: &[Target],
    version: &str,
) -> Vec<Detected> {
    let mut out = Vec::new();
    for target in targets {
        let (org, rooftops) = match target {
            Target::Organization(org) => {
                if record_of(before, org) == record_of(now, org) {
                    continue;
                }
                let rooftops: BTreeSet<String> = [before, now]
                    .iter()
                    .filter_map(|d| d.organization(org))
                    .flat_map(|o| o.rooftops.iter().map(|r| r.rooftop_id.clone()))
                    .collect();
                (org, rooftops.into_iter().collect())
            }
            Target::Rooftop(org, rooftop) => {
                if narrowed(before, org, rooftop) == narrowed(now, org, rooftop) {
                    continue;
                }
                (org, vec![rooftop.clone()])
            }
            Target::Vehicle(..) | Target::Manifest => continue,
        };
        out.push(Detected {
            uri: target.uri(),
            kinds: vec![DEALER_CHANGED],
            snapshot_version: version.to_owned(),
            organization_id: org.clone(),
            rooftops,
            // Told to whoever may read it now or could before (a rooftop
            // made private is a change its former readers learn of).
            before: false,
        });
    }
    out
}

/// The (organization, rooftop) pairs `principal` sees in `directory`:
/// its resource list, whose change is `list_changed`.
pub fn visible_set(
    directory: &DirectorySnapshot,
    principal: &Principal,
) -> BTreeSet<(String, String)> {
    directory
        .organizations
        .iter()
        .flat_map(|o| {
            principal
                .visible_rooftops(o)
                .into_iter()
                .map(|r| (o.organization_id.clone(), r.rooftop_id.clone()))
        })
        .collect()
}

/// Is `vehicle` inside the vehicle scope of `program` (`applies_to`, the
/// same scope rules the offer engine applies before anything else:
/// docs/pricing.md)? Lists compare ASCII case-insensitively except years,
/// VINs and rooftop ids, as the engine does.
pub fn in_scope(program: &pricing::Program, vehicle: &VehicleRecord) -> bool {
    let a = &program.applies_to;
    let ci = |list: &Option<Vec<String>>, value: Option<&str>| {
        list.as_ref()
            .is_none_or(|l| value.is_some_and(|v| l.iter().any(|x| x.eq_ignore_ascii_case(v))))
    };
    ci(&a.makes, Some(&vehicle.make))
        && ci(&a.models, Some(&vehicle.model))
        && a.years.as_ref().is_none_or(|l| l.contains(&vehicle.year))
        && ci(&a.trims, vehicle.trim.as_deref())
        && ci(&a.conditions, Some(&vehicle.condition))
        && ci(&a.vins, vehicle.vin.as_deref())
        && a.rooftop_ids
            .as_ref()
            .is_none_or(|l| l.contains(&vehicle.rooftop_id))
}

/// The program revisions of a set that touch `vehicle` (`None`: every one
/// in the set, for an organization).
fn revisions(
    programs: &pricing::ValidatedPrograms,
    vehicle: Option<&VehicleRecord>,
) -> BTreeSet<(String, u32)> {
    programs
        .programs()
        .iter()
        .map(|p| &p.program)
        .filter(|p| vehicle.is_none_or(|v| in_scope(p, v)))
        .map(|p| (p.program_id.clone(), p.revision))
        .collect()
}

/// `programs_changed` after an organization's programs were loaded again:
/// for each subscribed vehicle of `organization_id` offered in `view`, when
/// the revisions that apply to it now (the revision an evaluation uses, in
/// the vehicle's scope) differ from before; and for the organization URI
/// when its set of applying revisions differs.
pub fn program_changes(
    old: &OrgPrograms,
    new: &OrgPrograms,
    view: &InventoryView,
    organization_id: &str,
    targets: &[Target],
) -> Vec<Detected> {
    let at = chrono::Utc::now().fixed_offset();
    let (old, new) = (old.at(at), new.at(at));
    let version = new_version(new.validated());
    let mut out = Vec::new();
    for target in targets {
        match target {
            Target::Organization(org)
                if org == organization_id
                    && revisions(old.validated(), None) != revisions(new.validated(), None) =>
            {
                out.push(Detected {
                    uri: target.uri(),
                    kinds: vec![PROGRAMS_CHANGED],
                    snapshot_version: version.clone(),
                    organization_id: org.clone(),
                    rooftops: view
                        .rooftops
                        .values()
                        .filter(|r| r.latest.organization_id() == org)
                        .map(|r| r.latest.rooftop_id().to_owned())
                        .collect(),
                    before: false,
                });
            }
            Target::Vehicle(org, rooftop, vehicle_id) if org == organization_id => {
                let Some(record) = offered(view.rooftop(rooftop).map(|r| &r.latest), vehicle_id)
                else {
                    continue;
                };
                if record.organization_id != *org {
                    continue;
                }
                if revisions(old.validated(), Some(&record))
                    != revisions(new.validated(), Some(&record))
                {
                    out.push(Detected {
                        uri: target.uri(),
                        kinds: vec![PROGRAMS_CHANGED],
                        snapshot_version: version.clone(),
                        organization_id: org.clone(),
                        rooftops: vec![rooftop.clone()],
                        before: false,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// The snapshot version of a program set: its revisions, as one opaque
/// string (a client compares it, never parses it).
fn new_version(programs: &pricing::ValidatedPrograms) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for (id, revision) in revisions(programs, None) {
        h.update(id.as_bytes());
        h.update(b"\0");
        h.update(revision.to_be_bytes());
    }
    format!("programs:{}", &hex::encode(h.finalize())[..16])
}

#[cfg(test)]
#[path = "detect_tests.rs"]
mod tests;
