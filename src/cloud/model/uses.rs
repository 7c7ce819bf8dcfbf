//! The facts Cinder's rules ask for that are not on the object itself: what else reads a
//! volume or a copy right now, judged over every object an adapter holds, as the port's types.

use std::borrow::Borrow;

use crate::cloud::{CopyKind, CopyStatus, Volume, VolumeCopy, VolumeStatus};

use super::copies::CopyUse;

/// A snapshot, backup or clone of volume `id` is being made (its data is being read), among
/// `copies` (snapshots and backups) and `volumes`.
pub fn copying(
    id: &str,
    copies: impl IntoIterator<Item = impl Borrow<VolumeCopy>>,
    volumes: impl IntoIterator<Item = impl Borrow<Volume>>,
) -> bool {
    copies.into_iter().any(|c| {
        let c = c.borrow();
        c.volume_id == id && c.status == CopyStatus::Creating
    }) || volumes.into_iter().any(|v| {
        let v = v.borrow();
        v.source_volume_id.as_deref() == Some(id) && v.status == VolumeStatus::Creating
    })
}

/// Whether one of `volumes` is being restored from one of `copies` (snapshot or backup ids).
pub fn restoring(
    kind: CopyKind,
    copies: &[&str],
    volumes: impl IntoIterator<Item = impl Borrow<Volume>>,
) -> bool {
    volumes.into_iter().any(|v| {
        let v = v.borrow();
        let source = match kind {
            CopyKind::Snapshot => v.snapshot_id.as_deref(),
            CopyKind::Backup => v.backup_id.as_deref(),
        };
        v.status == VolumeStatus::Creating && source.is_some_and(|s| copies.contains(&s))
    })
}

/// What reads copy `id`: a backup being made of it (a snapshot; among `backups`), a volume
/// restored from it (among `volumes`).
pub fn copy_uses(
    kind: CopyKind,
    id: &str,
    backups: impl IntoIterator<Item = impl Borrow<VolumeCopy>>,
    volumes: impl IntoIterator<Item = impl Borrow<Volume>>,
) -> CopyUse {
    CopyUse {
        backing_up: kind == CopyKind::Snapshot
            && backups.into_iter().any(|b| {
                let b = b.borrow();
                b.snapshot_id.as_deref() == Some(id) && b.status == CopyStatus::Creating
            }),
        restoring: restoring(kind, &[id], volumes),
    }
}
