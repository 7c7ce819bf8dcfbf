//! Group snapshots as the port sees them: snapshots of several volumes cut at one point in
//! time relative to the writes to all of them (CSI's write-order consistency), each member an
//! ordinary snapshot ([`VolumeCopy`] with `group_snapshot_id`). How a cloud gets there is its
//! adapter's business: Cinder through a group of a consistent group type, the local backend
//! by freezing the members' filesystems while it copies them.

use std::collections::BTreeSet;
use std::time::SystemTime;

use super::copy::{CopyStatus, VolumeCopy};

/// A group snapshot and its members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSnapshot {
    pub id: String,
    pub name: String,
    /// Cinder's group snapshot status (the same words as a snapshot's).
    pub status: CopyStatus,
    pub created_at: Option<SystemTime>,
    /// One snapshot per member volume.
    pub members: Vec<VolumeCopy>,
}

impl GroupSnapshot {
    /// The volumes it is a snapshot of.
    pub fn volume_ids(&self) -> BTreeSet<&str> {
        self.members.iter().map(|m| m.volume_id.as_str()).collect()
    }

    /// Usable as a source: the group and every member `available`.
    pub fn ready(&self) -> bool {
        self.status == CopyStatus::Available
            && self
                .members
                .iter()
                .all(|m| m.status == CopyStatus::Available)
    }
}

/// What to snapshot together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewGroupSnapshot {
    pub name: String,
    /// Distinct, in ascending order.
    pub volume_ids: Vec<String>,
    /// The group type (name or id) that gives the consistency; `None`: the cloud's default.
    pub group_type: Option<String>,
    pub description: Option<String>,
}

/// Why a cloud cannot take a write-order consistent group snapshot of the volumes asked
/// (CSI FAILED_PRECONDITION: "the volumes are not configured properly").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupRefusal {
    /// No group type was asked for and the cloud has no default one.
    NoGroupType,
    /// The group type's snapshots are not consistent: Cinder would take its members' snapshots
    /// one after the other.
    NotConsistent { group_type: String },
    /// The cloud hides the group type's specs from this user, so its consistency cannot be
    /// checked, and the operator did not vouch for it (`[BlockStorage] group-type`).
    Unverifiable { group_type: String },
    /// The cloud could not place a group of `group_type` with these volume types (the group
    /// went into an error state; `reason` is the cloud's, when it gave one).
    NoBackend {
        group_type: String,
        volume_types: Vec<String>,
        reason: Option<String>,
    },
    /// `volume_id` is in group `group_id`, which this driver did not make (a volume can be in
    /// one group only).
    ForeignGroup { volume_id: String, group_id: String },
    /// A volume without a volume type cannot join a group.
    NoVolumeType { volume_id: String },
    /// The volumes are in several availability zones (a group lives in one).
    Zones { zones: Vec<(String, Vec<String>)> },
    /// The cloud refused to put the volumes into one group (e.g. they are on different
    /// backends); `message` is its reason.
    NotGroupable { message: String },
    /// The local backend cannot stop the writes to `volume_id` while it copies it.
    Unfreezable { volume_id: String, why: Unfreezable },
}

/// Why the writes to an attached volume cannot be held still.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfreezable {
    /// Attached as `device`, but no filesystem of it is mounted where this process can see
    /// one: a raw block volume, or a mount in another mount namespace.
    NoVisibleMount { device: String },
    /// Its filesystem (`fs_type`, mounted at `mount`) has no freeze support.
    NoFreeze { fs_type: String, mount: String },
}
