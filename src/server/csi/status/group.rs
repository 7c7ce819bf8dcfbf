//! The words for a group snapshot a cloud cannot take consistently (FailedPrecondition): CSI
//! says a group snapshot "MUST give a write-order consistency guarantee or fail", so each says
//! what keeps the volumes from being snapshotted together and what to change.

use std::fmt::{self, Display, Formatter};

use super::words::{joined, quoted, reason};
use crate::cloud::{GroupRefusal, Unfreezable};

impl Display for GroupRefusal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoGroupType => f.write_str(
                "no group type to snapshot the volumes with: set the VolumeGroupSnapshotClass \
                 parameter \"group-type\" (or [BlockStorage] group-type) to a Cinder group type \
                 with consistent_group_snapshot_enabled=\"<is> True\"",
            ),
            Self::NotConsistent { group_type } => write!(
                f,
                "group type {group_type:?} does not have consistent_group_snapshot_enabled=\"<is> \
                 True\": Cinder would snapshot its volumes one after another, which is not a \
                 write-order consistent group snapshot; use a group type that has it, on a \
                 backend that supports consistent group snapshots"
            ),
            Self::Unverifiable { group_type } => write!(
                f,
                "Cinder does not show this user the specs of group type {group_type:?} (policy \
                 group:access_group_types_specs), so whether its snapshots are consistent \
                 cannot be checked; name it in [BlockStorage] group-type (an operator who \
                 checked it has consistent_group_snapshot_enabled=\"<is> True\" vouches for it \
                 there), or let the user read group type specs"
            ),
            Self::NoBackend {
                group_type,
                volume_types,
                reason: why,
            } => write!(
                f,
                "Cinder could not create a group of type {group_type:?} for volume type(s) {}{}; \
                 no backend supports consistent group snapshots for them",
                quoted(volume_types),
                reason(why)
            ),
            Self::ForeignGroup {
                volume_id,
                group_id,
            } => write!(
                f,
                "volume {volume_id} is in Cinder group {group_id}, which this driver did not \
                 make; a volume is in one group at most: remove it from that group first"
            ),
            Self::NoVolumeType { volume_id } => write!(
                f,
                "volume {volume_id} has no volume type, and Cinder groups only hold volumes of \
                 their volume types; retype it first"
            ),
            Self::Zones { zones } => {
                let parts: Vec<String> = zones
                    .iter()
                    .map(|(zone, vols)| format!("{zone:?}: {}", joined(vols)))
                    .collect();
                write!(
                    f,
                    "the volumes are in different availability zones ({}); a group snapshot \
                     takes volumes of one zone",
                    parts.join("; ")
                )
            }
            Self::NotGroupable { message } => write!(
                f,
                "Cinder refused to put the volumes into one group: {message}"
            ),
            Self::Unfreezable { volume_id, why } => {
                write!(
                    f,
                    "volume {volume_id} cannot be held still while it is copied: {why}"
                )
            }
        }
    }
}

impl Display for Unfreezable {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoVisibleMount { device } => write!(
                f,
                "it is attached as {device}, but no filesystem of it is mounted where the \
                 controller can see it (a raw block volume, or a mount in another mount \
                 namespace), so its writes cannot be frozen; snapshot it while it is not \
                 published, or give the controller the node's mounts (the kubelet directory \
                 with HostToContainer propagation)"
            ),
            Self::NoFreeze { fs_type, mount } => write!(
                f,
                "its filesystem {fs_type} (mounted at {mount}) cannot be frozen; use ext4, xfs \
                 or btrfs"
            ),
        }
    }
}
