//! The fake's state and its Cinder-like state machine.

use std::collections::{BTreeMap, HashMap, VecDeque};

use super::ops::DEFAULT_SETTLE_AFTER;
use crate::cloud::{
    Attachment, Backup, BackupStatus, Capacity, CloudError, CloudResult, Op, Page, PageRequest,
    RequestId, Server, Snapshot, SnapshotStatus, Volume, VolumeStatus, VolumeType, GIB,
};

/// What a pending transition does when it settles.
#[derive(Debug, Clone)]
pub(super) enum VolumeAction {
    /// `creating` → `available`, or `error` with this reason.
    Created {
        error: Option<String>,
    },
    Attached {
        server: String,
        device: String,
    },
    Detached {
        server: String,
    },
    Extended {
        size_gib: u64,
        back_to: VolumeStatus,
    },
    /// `new_type` is `(name, multiattach)`; `None` leaves the type unchanged (a retype
    /// Cinder refused asynchronously, e.g. a migration under policy `never`).
    Retyped {
        new_type: Option<(String, bool)>,
        back_to: VolumeStatus,
    },
    Deleted,
}

#[derive(Debug, Clone)]
pub(super) struct Pending<A> {
    pub remaining: u32,
    pub action: A,
}

#[derive(Debug, Clone)]
pub(super) struct FakeVolume {
    pub seq: u64,
    pub volume: Volume,
    pub pending: Option<Pending<VolumeAction>>,
    pub error_reason: Option<String>,
}

#[derive(Debug, Clone)]
pub(super) enum ObjAction {
    Created { error: bool },
    Deleted,
}

#[derive(Debug, Clone)]
pub(super) struct FakeSnapshot {
    pub seq: u64,
    pub snapshot: Snapshot,
    pub pending: Option<Pending<ObjAction>>,
}

#[derive(Debug, Clone)]
pub(super) struct FakeBackup {
    pub seq: u64,
    pub backup: Backup,
    pub pending: Option<Pending<ObjAction>>,
}

pub(super) struct State {
    pub settle_after: u32,
    pub seq: u64,
    pub volumes: BTreeMap<String, FakeVolume>,
    pub snapshots: BTreeMap<String, FakeSnapshot>,
    pub backups: BTreeMap<String, FakeBackup>,
    pub servers: BTreeMap<String, Server>,
    pub types: BTreeMap<String, VolumeType>,
    pub calls: BTreeMap<Op, u64>,
    pub faults: HashMap<Op, VecDeque<CloudError>>,
    pub failing_volume_creations: VecDeque<String>,
    pub failing_snapshot_creations: u32,
    pub failing_backup_creations: u32,
    pub quota_gib: Option<u64>,
    pub capacity: BTreeMap<(Option<String>, Option<String>), Capacity>,
    pub backups_supported: bool,
    pub retype_needs_migration: bool,
    pub default_az: String,
    pub zones: Vec<String>,
}

impl Default for State {
    fn default() -> Self {
        Self {
            settle_after: DEFAULT_SETTLE_AFTER,
            seq: 0,
            volumes: BTreeMap::new(),
            snapshots: BTreeMap::new(),
            backups: BTreeMap::new(),
            servers: BTreeMap::new(),
            types: BTreeMap::new(),
            calls: BTreeMap::new(),
            faults: HashMap::new(),
            failing_volume_creations: VecDeque::new(),
            failing_snapshot_creations: 0,
            failing_backup_creations: 0,
            quota_gib: None,
            capacity: BTreeMap::new(),
            backups_supported: true,
            retype_needs_migration: false,
            default_az: "nova".into(),
            zones: vec!["nova".into()],
        }
    }
}

pub(super) fn conflict(message: impl Into<String>) -> CloudError {
    CloudError::Conflict {
        message: message.into(),
        request_id: RequestId(Some("req-fake".into())),
    }
}

pub(super) fn bad_request(message: impl Into<String>) -> CloudError {
    CloudError::BadRequest {
        message: message.into(),
        request_id: RequestId(Some("req-fake".into())),
    }
}

/// Cinder-like pagination over items already in listing order.
pub(super) fn paginate<T: Clone>(
    items: Vec<(String, T)>,
    all_ids: &[String],
    page: &PageRequest,
) -> CloudResult<Page<T>> {
    let start = match &page.marker {
        None => 0,
        Some(m) => {
            // Cinder answers 400 for a marker it does not know.
            if !all_ids.iter().any(|id| id == m) {
                return Err(bad_request(format!("marker [{m}] not found")));
            }
            let pos_all = all_ids.iter().position(|id| id == m).unwrap_or(0);
            // First filtered item that comes after the marker in the unfiltered order.
            items
                .iter()
                .position(|(id, _)| all_ids.iter().position(|a| a == id).unwrap_or(0) > pos_all)
                .unwrap_or(items.len())
        }
    };
    let rest = &items[start..];
    let take = page.limit.map(|l| l as usize).unwrap_or(rest.len());
    let take = take.min(rest.len());
    let next_marker = (take < rest.len() && take > 0).then(|| rest[take - 1].0.clone());
    Ok(Page {
        items: rest[..take].iter().map(|(_, t)| t.clone()).collect(),
        next_marker,
    })
}

impl State {
    pub fn enter(&mut self, op: Op) -> CloudResult<()> {
        *self.calls.entry(op).or_default() += 1;
        match self.faults.get_mut(&op).and_then(VecDeque::pop_front) {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    pub fn new_id(&mut self, kind: &str) -> String {
        self.seq += 1;
        // UUID-shaped and sortable by creation order.
        let tag = match kind {
            "volume" => 0x1,
            "snapshot" => 0x2,
            "backup" => 0x3,
            _ => 0xf,
        };
        format!("{tag:08x}-0000-4000-8000-{:012x}", self.seq)
    }

    pub fn pending<A>(&self, action: A) -> Option<Pending<A>> {
        Some(Pending {
            remaining: self.settle_after,
            action,
        })
    }

    pub fn used_gib(&self) -> u64 {
        self.volumes.values().map(|v| v.volume.size_gib).sum()
    }

    pub fn check_quota(&self, extra_gib: u64) -> CloudResult<()> {
        if let Some(q) = self.quota_gib {
            if self.used_gib() + extra_gib > q {
                return Err(CloudError::OverLimit {
                    message: format!(
                        "VolumeSizeExceedsAvailableQuota: requested {extra_gib}G, quota is {q}G and {}G consumed",
                        self.used_gib()
                    ),
                    request_id: RequestId(Some("req-fake".into())),
                });
            }
        }
        Ok(())
    }

    pub fn default_capacity(&self) -> Capacity {
        Capacity {
            available_bytes: self
                .quota_gib
                .map(|q| q.saturating_sub(self.used_gib()) * GIB),
            maximum_volume_bytes: None,
        }
    }

    // ---- observation: a read moves pending transitions forward ---------------------------

    /// Observe a volume: settle or advance its transition. `None` when it does not exist.
    pub fn observe_volume(&mut self, id: &str) -> Option<Volume> {
        let v = self.volumes.get_mut(id)?;
        if let Some(p) = v.pending.as_mut() {
            if p.remaining == 0 {
                let action = v.pending.take().map(|p| p.action);
                if let Some(action) = action {
                    self.apply_volume(id, action);
                }
            } else {
                p.remaining -= 1;
            }
        }
        self.volumes.get(id).map(|v| v.volume.clone())
    }

    fn apply_volume(&mut self, id: &str, action: VolumeAction) {
        if let VolumeAction::Deleted = action {
            self.volumes.remove(id);
            return;
        }
        let Some(v) = self.volumes.get_mut(id) else {
            return;
        };
        match action {
            VolumeAction::Created { error: None } => v.volume.status = VolumeStatus::Available,
            VolumeAction::Created { error: Some(r) } => {
                v.volume.status = VolumeStatus::Error;
                v.error_reason = Some(r);
            }
            VolumeAction::Attached { server, device } => {
                v.volume.attachments.push(Attachment {
                    server_id: server,
                    attachment_id: Some(format!("att-{id}-{}", v.volume.attachments.len())),
                    device: Some(device),
                });
                v.volume.status = VolumeStatus::InUse;
            }
            VolumeAction::Detached { server } => {
                v.volume.attachments.retain(|a| a.server_id != server);
                v.volume.status = if v.volume.attachments.is_empty() {
                    VolumeStatus::Available
                } else {
                    VolumeStatus::InUse
                };
            }
            VolumeAction::Extended { size_gib, back_to } => {
                v.volume.size_gib = size_gib;
                v.volume.status = back_to;
            }
            VolumeAction::Retyped { new_type, back_to } => {
                if let Some((name, multiattach)) = new_type {
                    v.volume.volume_type = Some(name);
                    v.volume.multiattach = multiattach;
                }
                v.volume.status = back_to;
            }
            VolumeAction::Deleted => {}
        }
    }

    pub fn observe_snapshot(&mut self, id: &str) -> Option<Snapshot> {
        let s = self.snapshots.get_mut(id)?;
        if let Some(p) = s.pending.as_mut() {
            if p.remaining == 0 {
                match s.pending.take().map(|p| p.action) {
                    Some(ObjAction::Created { error }) => {
                        s.snapshot.status = if error {
                            SnapshotStatus::Error
                        } else {
                            SnapshotStatus::Available
                        }
                    }
                    Some(ObjAction::Deleted) => {
                        self.snapshots.remove(id);
                        return None;
                    }
                    None => {}
                }
            } else {
                p.remaining -= 1;
            }
        }
        self.snapshots.get(id).map(|s| s.snapshot.clone())
    }

    pub fn observe_backup(&mut self, id: &str) -> Option<Backup> {
        let b = self.backups.get_mut(id)?;
        if let Some(p) = b.pending.as_mut() {
            if p.remaining == 0 {
                match b.pending.take().map(|p| p.action) {
                    Some(ObjAction::Created { error }) => {
                        b.backup.status = if error {
                            BackupStatus::Error
                        } else {
                            BackupStatus::Available
                        }
                    }
                    Some(ObjAction::Deleted) => {
                        self.backups.remove(id);
                        return None;
                    }
                    None => {}
                }
            } else {
                p.remaining -= 1;
            }
        }
        self.backups.get(id).map(|b| b.backup.clone())
    }

    pub fn settle_all(&mut self) {
        loop {
            let mut any = false;
            let ids: Vec<String> = self.volumes.keys().cloned().collect();
            for id in ids {
                if let Some(v) = self.volumes.get_mut(&id) {
                    if let Some(p) = v.pending.as_mut() {
                        p.remaining = 0;
                        any = true;
                        self.observe_volume(&id);
                    }
                }
            }
            let ids: Vec<String> = self.snapshots.keys().cloned().collect();
            for id in ids {
                if let Some(s) = self.snapshots.get_mut(&id) {
                    if let Some(p) = s.pending.as_mut() {
                        p.remaining = 0;
                        any = true;
                        self.observe_snapshot(&id);
                    }
                }
            }
            let ids: Vec<String> = self.backups.keys().cloned().collect();
            for id in ids {
                if let Some(b) = self.backups.get_mut(&id) {
                    if let Some(p) = b.pending.as_mut() {
                        p.remaining = 0;
                        any = true;
                        self.observe_backup(&id);
                    }
                }
            }
            if !any {
                return;
            }
        }
    }

    // ---- listing order --------------------------------------------------------------------

    pub fn sorted_volumes(&self) -> Vec<&Volume> {
        let mut v: Vec<&FakeVolume> = self.volumes.values().collect();
        v.sort_by_key(|v| v.seq);
        v.into_iter().map(|v| &v.volume).collect()
    }

    pub fn sorted_snapshots(&self) -> Vec<&Snapshot> {
        let mut v: Vec<&FakeSnapshot> = self.snapshots.values().collect();
        v.sort_by_key(|s| s.seq);
        v.into_iter().map(|s| &s.snapshot).collect()
    }

    pub fn sorted_backups(&self) -> Vec<&Backup> {
        let mut v: Vec<&FakeBackup> = self.backups.values().collect();
        v.sort_by_key(|b| b.seq);
        v.into_iter().map(|b| &b.backup).collect()
    }
}
