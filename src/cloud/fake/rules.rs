//! What the fake brings to Cinder's rules (`cloud/model`): its profile and the
//! facts a rule asks for that are not on the object itself (what else uses it).

use super::state::State;
use crate::cloud::model::{self, CopyUse, Profile, Refusal};
use crate::cloud::{CloudError, CopyKind, RequestId, Volume};

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
        let copies = self.snapshots.values().chain(self.backups.values());
        model::copying(id, copies.map(|c| &c.copy), self.seen_volumes())
    }

    /// Whether a volume is being restored from one of `copies` (snapshot or backup ids).
    pub fn restoring(&self, kind: CopyKind, copies: &[&str]) -> bool {
        model::restoring(kind, copies, self.seen_volumes())
    }

    /// What reads copy `id`: a backup being made of it (a snapshot), a volume restored from it.
    pub fn copy_uses(&self, kind: CopyKind, id: &str) -> CopyUse {
        let backups = self.backups.values().map(|b| &b.copy);
        model::copy_uses(kind, id, backups, self.seen_volumes())
    }

    /// The volumes as last observed (a rule's facts do not advance their transitions).
    fn seen_volumes(&self) -> impl Iterator<Item = &Volume> {
        self.volumes.values().map(|v| &v.volume)
    }
}
