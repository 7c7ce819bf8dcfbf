//! What the local backend brings to Cinder's rules (`cloud/model`): its profile
//! and the facts a rule asks for that are not on the record itself (what else uses it).

use super::state::State;
use crate::cloud::model::{CopyUse, Profile, Refusal};
use crate::cloud::{CloudError, CopyKind, VolumeStatus};

/// The local backend is Cinder (3.66+, no `force` for snapshots of in-use volumes) and Nova
/// (`[cinder] cross_az_attach = False`) on one machine, whose operations are done when they
/// return.
pub(super) const PROFILE: Profile = Profile {
    instant: true,
    snapshot_in_use_needs_force: false,
    cross_az_attach: false,
    source_not_ready_is_bad_request: false,
    multiattach_not_asked_is_conflict: false,
};

/// A rule's refusal as the local backend answers it.
pub(super) fn refused(r: impl Into<Refusal>) -> CloudError {
    r.into().into_error(&PROFILE, Default::default())
}

impl State {
    /// A snapshot, backup or clone of volume `id` is being made (its file is being read).
    pub(super) fn copying(&self, id: &str) -> bool {
        self.snapshots
            .values()
            .any(|s| s.volume_id == id && s.is_creating())
            || self
                .backups
                .values()
                .any(|b| b.volume_id == id && b.is_creating())
            || self.volumes.values().any(|c| {
                c.source_volume_id.as_deref() == Some(id) && c.status() == VolumeStatus::Creating
            })
    }

    /// Whether a volume is being restored from one of `copies` (snapshot or backup ids).
    pub(super) fn restoring(&self, kind: CopyKind, copies: &[&str]) -> bool {
        self.volumes.values().any(|v| {
            let source = match kind {
                CopyKind::Snapshot => v.snapshot_id.as_deref(),
                CopyKind::Backup => v.backup_id.as_deref(),
            };
            v.status() == VolumeStatus::Creating && source.is_some_and(|s| copies.contains(&s))
        })
    }

    /// What reads copy `id`: a backup being made of it (a snapshot), a volume restored from it.
    pub(super) fn copy_uses(&self, kind: CopyKind, id: &str) -> CopyUse {
        CopyUse {
            backing_up: kind == CopyKind::Snapshot
                && self
                    .backups
                    .values()
                    .any(|b| b.snapshot_id.as_deref() == Some(id) && b.is_creating()),
            restoring: self.restoring(kind, &[id]),
        }
    }
}
