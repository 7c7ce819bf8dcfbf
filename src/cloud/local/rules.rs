//! What the local backend brings to Cinder's rules (`cloud/model`): its profile
//! and the facts a rule asks for that are not on the record itself (what else uses it).

use super::records::VolumeRecord;
use super::state::State;
use crate::cloud::model::{self, CopyUse, Profile, Refusal};
use crate::cloud::{CloudError, CopyKind, Volume};

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
        let snapshots = self
            .snapshots
            .values()
            .map(|s| s.to_copy(CopyKind::Snapshot));
        let backups = self.backups.values().map(|b| b.to_copy(CopyKind::Backup));
        model::copying(id, snapshots.chain(backups), self.all_volumes())
    }

    /// Whether a volume is being restored from one of `copies` (snapshot or backup ids).
    pub(super) fn restoring(&self, kind: CopyKind, copies: &[&str]) -> bool {
        model::restoring(kind, copies, self.all_volumes())
    }

    /// What reads copy `id`: a backup being made of it (a snapshot), a volume restored from it.
    pub(super) fn copy_uses(&self, kind: CopyKind, id: &str) -> CopyUse {
        let backups = self.backups.values().map(|b| b.to_copy(CopyKind::Backup));
        model::copy_uses(kind, id, backups, self.all_volumes())
    }

    /// Every volume record as the port's type, for the rules' facts.
    fn all_volumes(&self) -> impl Iterator<Item = Volume> + '_ {
        self.volumes.values().map(VolumeRecord::to_volume)
    }
}
