//! The records in memory: what every read looks at, behind the adapter's state lock.

use std::collections::BTreeMap;

use super::records::{CopyRecord, GroupRecord, VolumeRecord};
use crate::cloud::CopyKind;

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
}
