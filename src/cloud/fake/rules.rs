//! What the fake brings to Cinder's rules (`cloud/model`): its profile and the
//! facts a rule asks for that are not on the object itself (what else uses it).

use super::state::{FakeCopy, State};
use crate::cloud::model::{CopyUse, Profile, Refusal};
use crate::cloud::{CloudError, CopyKind, CopyStatus, RequestId, VolumeStatus};

/// The fake stands for Cinder as the core meets it: statuses settle after a few looks, a
/// snapshot of an in-use volume needs `force`, Nova attaches across zones (its default), and
/// refusals carry Cinder's codes (the core's tests meet what the real cloud answers).
pub(super) const PROFILE: Profile = Profile {
    instant: false,
    snapshot_in_use_needs_force: true,
    cross_az_attach: true,
    source_not_ready_is_bad_request: true,
    multiattach_not_asked_is_conflict: true,
};

/// A rule's refusal as the fake answers it.
pub(super) fn refused(r: impl Into<Refusal>) -> CloudError {
    r.into()
        .into_error(&PROFILE, RequestId(Some("req-fake".into())))
}

impl State {
    /// A snapshot, backup or clone of volume `id` is being made.
    pub fn copying(&self, id: &str) -> bool {
        let making = |c: &FakeCopy| c.copy.volume_id == id && c.copy.status == CopyStatus::Creating;
        self.snapshots.values().any(making)
            || self.backups.values().any(making)
            || self.volumes.values().any(|v| {
                v.volume.source_volume_id.as_deref() == Some(id)
                    && v.volume.status == VolumeStatus::Creating
            })
    }

    /// Whether a volume is being restored from one of `copies` (snapshot or backup ids).
    pub fn restoring(&self, kind: CopyKind, copies: &[&str]) -> bool {
        self.volumes.values().any(|v| {
            let source = match kind {
                CopyKind::Snapshot => v.volume.snapshot_id.as_deref(),
                CopyKind::Backup => v.volume.backup_id.as_deref(),
            };
            v.volume.status == VolumeStatus::Creating && source.is_some_and(|s| copies.contains(&s))
        })
    }

    /// What reads copy `id`: a backup being made of it (a snapshot), a volume restored from it.
    pub fn copy_uses(&self, kind: CopyKind, id: &str) -> CopyUse {
        CopyUse {
            backing_up: kind == CopyKind::Snapshot
                && self.backups.values().any(|b| {
                    b.copy.snapshot_id.as_deref() == Some(id)
                        && b.copy.status == CopyStatus::Creating
                }),
            restoring: self.restoring(kind, &[id]),
        }
    }
}
