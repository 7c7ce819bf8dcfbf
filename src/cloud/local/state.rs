//! The records in memory: what every read looks at, behind the adapter's state lock.

use std::collections::BTreeMap;

use super::records::{CopyRecord, GroupRecord, VolumeRecord};
use crate::cloud::{CloudError, CloudResult, CopyKind, Resource};

#[derive(Default)]
pub(super) struct State {
    pub(super) volumes: BTreeMap<String, VolumeRecord>,
    pub(super) snapshots: BTreeMap<String, CopyRecord>,
    pub(super) backups: BTreeMap<String, CopyRecord>,
    pub(super) group_snapshots: BTreeMap<String, GroupRecord>,
}

impl State {
    pub(super) fn copies(&self, kind: CopyKind) -> &BTreeMap<String, CopyRecord> {
        match kind {
            CopyKind::Snapshot => &self.snapshots,
            CopyKind::Backup => &self.backups,
        }
    }

    /// Volume `id`'s record, or NotFound: what every operation on a volume starts with.
    pub(super) fn volume(&self, id: &str) -> CloudResult<&VolumeRecord> {
        self.volumes
            .get(id)
            .ok_or_else(|| CloudError::not_found(Resource::Volume, id))
    }

    /// Snapshot or backup `id`'s record, or NotFound.
    pub(super) fn copy(&self, kind: CopyKind, id: &str) -> CloudResult<&CopyRecord> {
        self.copies(kind)
            .get(id)
            .ok_or_else(|| CloudError::not_found(kind.resource(), id))
    }
}
