//! Cinder's rules for snapshots and backups: what they may be taken of, when they may be
//! deleted, and what a new volume may be restored or cloned from.

use crate::cloud::{CopyKind, CopyStatus, Volume, VolumeCopy, VolumeStatus};

use super::profile::Profile;

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
pub fn snapshot(p: &Profile, v: &Volume, force: bool) -> Result<(), CopyRefusal> {
    let in_use_ok = force || !p.snapshot_in_use_needs_force;
    match v.status {
        VolumeStatus::Available => Ok(()),
        VolumeStatus::InUse if in_use_ok => Ok(()),
        VolumeStatus::InUse => Err(CopyRefusal::SnapshotInUse { id: v.id.clone() }),
        _ => Err(CopyRefusal::SnapshotStatus {
            id: v.id.clone(),
            status: v.status.clone(),
        }),
    }
}

/// A backup of a volume itself: available, or in use with `force`.
pub fn backup_volume(v: &Volume, force: bool) -> Result<(), CopyRefusal> {
    match v.status {
        VolumeStatus::Available => Ok(()),
        VolumeStatus::InUse if force => Ok(()),
        _ => Err(CopyRefusal::BackupStatus {
            id: v.id.clone(),
            status: v.status.clone(),
        }),
    }
}

/// A backup taken from a snapshot: one of that volume, and available.
pub fn backup_from_snapshot(volume_id: &str, s: &VolumeCopy) -> Result<(), CopyRefusal> {
    if s.volume_id != volume_id {
        return Err(CopyRefusal::BackupOfOtherVolume {
            snapshot: s.id.clone(),
            of: s.volume_id.clone(),
            volume: volume_id.to_string(),
        });
    }
    if s.status != CopyStatus::Available {
        return Err(CopyRefusal::BackupSnapshotStatus {
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
pub fn delete_snapshot(p: &Profile, s: &VolumeCopy, uses: CopyUse) -> Result<(), CopyRefusal> {
    let id = s.id.clone();
    if !deletable(p, &s.status) {
        let status = s.status.clone();
        return Err(CopyRefusal::SnapshotDeleteStatus { id, status });
    }
    if let Some(group) = &s.group_snapshot_id {
        let group = group.clone();
        return Err(CopyRefusal::SnapshotInGroup { id, group });
    }
    if uses.backing_up || uses.restoring {
        let backing_up = uses.backing_up;
        return Err(CopyRefusal::SnapshotBeingCopied { id, backing_up });
    }
    Ok(())
}

/// A snapshot or a backup is deleted by its kind's rule (both adapters delete either alike).
pub fn delete_copy(p: &Profile, c: &VolumeCopy, uses: CopyUse) -> Result<(), CopyRefusal> {
    match c.kind {
        CopyKind::Snapshot => delete_snapshot(p, c, uses),
        CopyKind::Backup => delete_backup(p, c, uses),
    }
}

/// A backup is deleted when it is made and no volume is being restored from it.
pub fn delete_backup(p: &Profile, b: &VolumeCopy, uses: CopyUse) -> Result<(), CopyRefusal> {
    let id = b.id.clone();
    if !deletable(p, &b.status) {
        let status = b.status.clone();
        return Err(CopyRefusal::BackupDeleteStatus { id, status });
    }
    if uses.restoring {
        return Err(CopyRefusal::BackupBeingRestored { id });
    }
    Ok(())
}

/// A new volume of `size_gib` restored from a snapshot or a backup: the copy is available
/// and not larger than the volume.
pub fn restore_from(c: &VolumeCopy, size_gib: u64) -> Result<(), CopyRefusal> {
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
pub fn clone_from(v: &Volume, size_gib: u64) -> Result<(), CopyRefusal> {
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
) -> Result<(), CopyRefusal> {
    let id = id.to_string();
    if !ready {
        let status = status.to_string();
        return Err(CopyRefusal::SourceStatus { kind, id, status });
    }
    if size_gib < source_gib {
        return Err(CopyRefusal::SourceTooLarge {
            kind,
            id,
            size_gib,
            source_gib,
        });
    }
    Ok(())
}

/// What a new volume is made from, for the words of its refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Snapshot,
    Volume,
    Backup,
}

impl SourceKind {
    fn ready(self) -> &'static str {
        match self {
            Self::Volume => "available or in-use",
            Self::Snapshot | Self::Backup => "available",
        }
    }

    fn made_by(self) -> &'static str {
        match self {
            Self::Volume => "clone",
            Self::Snapshot | Self::Backup => "restore from",
        }
    }

    fn source(self) -> &'static str {
        match self {
            Self::Snapshot => "snapshot",
            Self::Volume => "source volume",
            Self::Backup => "backup",
        }
    }
}

impl std::fmt::Display for SourceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Snapshot => "snapshot",
            Self::Volume => "volume",
            Self::Backup => "backup",
        })
    }
}

/// A copy (snapshot, backup, group snapshot) that may not be deleted in its status.
pub(super) fn not_deletable(what: &str, id: &str, status: &CopyStatus) -> String {
    match status {
        CopyStatus::Creating => format!("{what} {id} is still being created"),
        _ => format!("{what} {id} must be available or in error to be deleted, it is {status}"),
    }
}

/// What the snapshot, backup and source rules refuse: the data and, on each variant, its words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CopyRefusal {
    #[error("volume {id} must be available or in-use to be snapshotted, it is {status}")]
    SnapshotStatus { id: String, status: VolumeStatus },
    /// In use, where a snapshot of an in-use volume needs `force`.
    #[error("volume {id} is in-use: a snapshot of it needs force (force-create)")]
    SnapshotInUse { id: String },
    #[error(
        "volume {id} must be available (or in-use with force) to be backed up, it is {status}"
    )]
    BackupStatus { id: String, status: VolumeStatus },
    #[error("snapshot {snapshot} is of volume {of}, not {volume}")]
    BackupOfOtherVolume {
        snapshot: String,
        of: String,
        volume: String,
    },
    #[error("snapshot {snapshot} must be available to be backed up, it is {status}")]
    BackupSnapshotStatus {
        snapshot: String,
        status: CopyStatus,
    },
    #[error("{}", not_deletable("snapshot", .id, .status))]
    SnapshotDeleteStatus { id: String, status: CopyStatus },
    #[error("snapshot {id} is part of group snapshot {group}; delete the group snapshot")]
    SnapshotInGroup { id: String, group: String },
    #[error("snapshot {id} is being copied (a restore or backup is in progress)")]
    SnapshotBeingCopied { id: String, backing_up: bool },
    #[error("{}", not_deletable("backup", .id, .status))]
    BackupDeleteStatus { id: String, status: CopyStatus },
    #[error("backup {id} is being restored")]
    BackupBeingRestored { id: String },
    #[error("{kind} {id} must be {} to {}, it is {status}", .kind.ready(), .kind.made_by())]
    SourceStatus {
        kind: SourceKind,
        id: String,
        status: String,
    },
    #[error("requested size {size_gib} GiB is smaller than the {} {id} ({source_gib} GiB)", .kind.source())]
    SourceTooLarge {
        kind: SourceKind,
        id: String,
        size_gib: u64,
        source_gib: u64,
    },
}

impl CopyRefusal {
    /// The request itself is wrong (else the objects' state forbids it).
    pub(super) fn is_bad_request(&self, p: &Profile) -> bool {
        match self {
            Self::BackupOfOtherVolume { .. } | Self::SourceTooLarge { .. } => true,
            Self::SourceStatus { .. } => p.source_not_ready_is_bad_request,
            _ => false,
        }
    }
}
