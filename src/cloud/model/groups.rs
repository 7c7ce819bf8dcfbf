//! Cinder's rules for group snapshots: their members, and when one may be deleted.

use crate::cloud::{CopyStatus, Volume, VolumeStatus};

use super::profile::Profile;
use super::refusal::Refusal;

/// A volume joins a group snapshot when it is available or in use.
pub fn group_member(v: &Volume) -> Result<(), Refusal> {
    match v.status {
        VolumeStatus::Available | VolumeStatus::InUse => Ok(()),
        _ => Err(Refusal::GroupMemberStatus {
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
) -> Result<(), Refusal> {
    let id = id.to_string();
    let ok = match status {
        CopyStatus::Available | CopyStatus::Error => true,
        CopyStatus::Deleting => p.instant,
        _ => false,
    };
    if !ok {
        let status = status.clone();
        return Err(Refusal::GroupSnapshotDeleteStatus { id, status });
    }
    if restoring {
        return Err(Refusal::GroupSnapshotBeingRestored { id });
    }
    Ok(())
}
