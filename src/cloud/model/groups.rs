//! Cinder's rules for group snapshots: their members, and when one may be deleted.

use crate::cloud::{CopyStatus, Volume, VolumeStatus};

use super::copies::not_deletable;
use super::profile::Profile;

/// A volume joins a group snapshot when it is available or in use.
pub fn group_member(v: &Volume) -> Result<(), GroupSnapshotRefusal> {
    match v.status {
        VolumeStatus::Available | VolumeStatus::InUse => Ok(()),
        _ => Err(GroupSnapshotRefusal::MemberStatus {
            id: v.id.clone(),
            status: v.status.clone(),
        }),
    }
}

/// A group snapshot (with its members) is deleted when it is available or in error (or
/// `deleting`, to finish a delete, where operations are instant), and no volume is being
/// restored from one of its members.
pub fn delete_group_snapshot(
    p: &Profile,
    id: &str,
    status: &CopyStatus,
    restoring: bool,
) -> Result<(), GroupSnapshotRefusal> {
    let id = id.to_string();
    let ok = match status {
        CopyStatus::Available | CopyStatus::Error => true,
        CopyStatus::Deleting => p.instant,
        _ => false,
    };
    if !ok {
        let status = status.clone();
        return Err(GroupSnapshotRefusal::DeleteStatus { id, status });
    }
    if restoring {
        return Err(GroupSnapshotRefusal::BeingRestored { id });
    }
    Ok(())
}

/// What the group snapshot rules refuse: the data and, on each variant, its words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupSnapshotRefusal {
    #[error("volume {id} must be available or in-use to be snapshotted, it is {status}")]
    MemberStatus { id: String, status: VolumeStatus },
    #[error("{}", not_deletable("group snapshot", .id, .status))]
    DeleteStatus { id: String, status: CopyStatus },
    #[error("a volume is being restored from a member of group snapshot {id}")]
    BeingRestored { id: String },
}
