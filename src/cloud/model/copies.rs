//! Cinder's rules for snapshots and backups: what they may be taken of, when they may be
//! deleted, and what a new volume may be restored or cloned from.

use crate::cloud::{CopyKind, CopyStatus, Volume, VolumeCopy, VolumeStatus};

use super::profile::Profile;
use super::refusal::{Refusal, SourceKind};

/// What reads a snapshot or a backup right now, as its adapter found it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyUse {
    /// A backup is being made of it (snapshots).
    pub backing_up: bool,
    /// A volume is being restored from it.
    pub restoring: bool,
}

/// A snapshot is taken of an available volume, or of an in-use one (with `force` where the
/// profile asks for it).
pub fn snapshot(p: &Profile, v: &Volume, force: bool) -> Result<(), Refusal> {
    let in_use_ok = force || !p.snapshot_in_use_needs_force;
    match v.status {
        VolumeStatus::Available => Ok(()),
        VolumeStatus::InUse if in_use_ok => Ok(()),
        VolumeStatus::InUse => Err(Refusal::SnapshotInUse { id: v.id.clone() }),
        _ => Err(Refusal::SnapshotStatus {
            id: v.id.clone(),
            status: v.status.clone(),
        }),
    }
}

/// A backup of a volume itself: available, or in use with `force`.
pub fn backup_volume(v: &Volume, force: bool) -> Result<(), Refusal> {
    match v.status {
        VolumeStatus::Available => Ok(()),
        VolumeStatus::InUse if force => Ok(()),
        _ => Err(Refusal::BackupStatus {
            id: v.id.clone(),
            status: v.status.clone(),
        }),
    }
}

/// A backup taken from a snapshot: one of that volume, and available.
pub fn backup_from_snapshot(volume_id: &str, s: &VolumeCopy) -> Result<(), Refusal> {
    if s.volume_id != volume_id {
        return Err(Refusal::BackupOfOtherVolume {
            snapshot: s.id.clone(),
            of: s.volume_id.clone(),
            volume: volume_id.to_string(),
        });
    }
    if s.status != CopyStatus::Available {
        return Err(Refusal::BackupSnapshotStatus {
            snapshot: s.id.clone(),
            status: s.status.clone(),
        });
    }
    Ok(())
}

/// Whether a copy in `status` may be deleted: not while it is being made (or restored to a
/// volume, for a backup), nor while a delete is under way where that takes time.
fn deletable(p: &Profile, status: &CopyStatus) -> bool {
    match status {
        CopyStatus::Creating | CopyStatus::Restoring => false,
        CopyStatus::Deleting => p.instant,
        _ => true,
    }
}

/// A snapshot is deleted when it is made, on its own (not a group snapshot's member), and
/// nothing reads it.
pub fn delete_snapshot(p: &Profile, s: &VolumeCopy, uses: CopyUse) -> Result<(), Refusal> {
    let id = s.id.clone();
    if !deletable(p, &s.status) {
        let status = s.status.clone();
        return Err(Refusal::SnapshotDeleteStatus { id, status });
    }
    if let Some(group) = &s.group_snapshot_id {
        let group = group.clone();
        return Err(Refusal::SnapshotInGroup { id, group });
    }
    if uses.backing_up || uses.restoring {
        let backing_up = uses.backing_up;
        return Err(Refusal::SnapshotBeingCopied { id, backing_up });
    }
    Ok(())
}

/// A backup is deleted when it is made and no volume is being restored from it.
pub fn delete_backup(p: &Profile, b: &VolumeCopy, uses: CopyUse) -> Result<(), Refusal> {
    let id = b.id.clone();
    if !deletable(p, &b.status) {
        let status = b.status.clone();
        return Err(Refusal::BackupDeleteStatus { id, status });
    }
    if uses.restoring {
        return Err(Refusal::BackupBeingRestored { id });
    }
    Ok(())
}

/// A new volume of `size_gib` restored from a snapshot or a backup: the copy is available
/// and not larger than the volume.
pub fn restore_from(c: &VolumeCopy, size_gib: u64) -> Result<(), Refusal> {
    let kind = match c.kind {
        CopyKind::Snapshot => SourceKind::Snapshot,
        CopyKind::Backup => SourceKind::Backup,
    };
    source(
        kind,
        &c.id,
        c.status == CopyStatus::Available,
        c.status.as_str(),
        c.size_gib,
        size_gib,
    )
}

/// A new volume of `size_gib` cloned from `v`: available or in use, not larger.
pub fn clone_from(v: &Volume, size_gib: u64) -> Result<(), Refusal> {
    let ready = matches!(v.status, VolumeStatus::Available | VolumeStatus::InUse);
    source(
        SourceKind::Volume,
        &v.id,
        ready,
        v.status.as_str(),
        v.size_gib,
        size_gib,
    )
}

fn source(
    kind: SourceKind,
    id: &str,
    ready: bool,
    status: &str,
    source_gib: u64,
    size_gib: u64,
) -> Result<(), Refusal> {
    let id = id.to_string();
    if !ready {
        let status = status.to_string();
        return Err(Refusal::SourceStatus { kind, id, status });
    }
    if size_gib < source_gib {
        return Err(Refusal::SourceTooLarge {
            kind,
            id,
            size_gib,
            source_gib,
        });
    }
    Ok(())
}
