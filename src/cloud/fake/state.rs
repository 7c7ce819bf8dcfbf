//! The fake's state and its Cinder-like state machine.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::cloud::{
    Attachment, Capacity, CloudError, CloudResult, CopyKind, CopyStatus, Op, Page, PageRequest,
    RequestId, Resource, Server, Volume, VolumeCopy, VolumeStatus, VolumeType, GIB,
};

/// Default number of observations an object stays in a transitional state.
pub const DEFAULT_SETTLE_AFTER: u32 = 2;

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

/// A snapshot or a backup.
#[derive(Debug, Clone)]
pub(super) struct FakeCopy {
    pub seq: u64,
    pub copy: VolumeCopy,
    pub pending: Option<Pending<ObjAction>>,
}

pub(super) struct State {
    pub settle_after: u32,
    pub seq: u64,
    pub volumes: BTreeMap<String, FakeVolume>,
    pub snapshots: BTreeMap<String, FakeCopy>,
    pub backups: BTreeMap<String, FakeCopy>,
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
    pub groups: super::group_state::GroupState,
    /// The scheduler hints each volume was created with, by volume id.
    pub hints: BTreeMap<String, crate::cloud::SchedulerHints>,
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
            groups: Default::default(),
            hints: BTreeMap::new(),
        }
    }
}

fn bad_request(message: impl Into<String>) -> CloudError {
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

    /// A volume type by id or name.
    pub fn find_type(&self, name_or_id: &str) -> Option<&VolumeType> {
        self.types
            .get(name_or_id)
            .or_else(|| self.types.values().find(|t| t.name == name_or_id))
    }

    pub fn new_id(&mut self, kind: &str) -> String {
        self.seq += 1;
        // UUID-shaped and sortable by creation order.
        let tag = match kind {
            "volume" => 0x1,
            "snapshot" => 0x2,
            "backup" => 0x3,
            "group-snapshot" => 0x4,
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

    /// Observe volume `id`, or NotFound: what every operation on a volume starts with.
    pub fn volume(&mut self, id: &str) -> CloudResult<Volume> {
        self.observe_volume(id)
            .ok_or_else(|| CloudError::not_found(Resource::Volume, id))
    }

    /// Observe snapshot or backup `id`, or NotFound.
    pub fn copy(&mut self, kind: CopyKind, id: &str) -> CloudResult<VolumeCopy> {
        self.observe_copy(kind, id)
            .ok_or_else(|| CloudError::not_found(kind.resource(), id))
    }

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

    pub fn copies(&self, kind: CopyKind) -> &BTreeMap<String, FakeCopy> {
        match kind {
            CopyKind::Snapshot => &self.snapshots,
            CopyKind::Backup => &self.backups,
        }
    }

    pub fn copies_mut(&mut self, kind: CopyKind) -> &mut BTreeMap<String, FakeCopy> {
        match kind {
            CopyKind::Snapshot => &mut self.snapshots,
            CopyKind::Backup => &mut self.backups,
        }
    }

    /// Observe a snapshot or backup: settle or advance its transition.
    pub fn observe_copy(&mut self, kind: CopyKind, id: &str) -> Option<VolumeCopy> {
        let copies = self.copies_mut(kind);
        let c = copies.get_mut(id)?;
        if let Some(p) = c.pending.as_mut() {
            if p.remaining == 0 {
                match c.pending.take().map(|p| p.action) {
                    Some(ObjAction::Created { error }) => {
                        c.copy.status = if error {
                            CopyStatus::Error
                        } else {
                            CopyStatus::Available
                        }
                    }
                    Some(ObjAction::Deleted) => {
                        copies.remove(id);
                        return None;
                    }
                    None => {}
                }
            } else {
                p.remaining -= 1;
            }
        }
        copies.get(id).map(|c| c.copy.clone())
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
            for kind in [CopyKind::Snapshot, CopyKind::Backup] {
                let ids: Vec<String> = self.copies(kind).keys().cloned().collect();
                for id in ids {
                    if let Some(c) = self.copies_mut(kind).get_mut(&id) {
                        if let Some(p) = c.pending.as_mut() {
                            p.remaining = 0;
                            any = true;
                            self.observe_copy(kind, &id);
                        }
                    }
                }
            }
            any |= self.settle_group_snapshots();
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

    pub fn sorted_copies(&self, kind: CopyKind) -> Vec<&VolumeCopy> {
        let mut v: Vec<&FakeCopy> = self.copies(kind).values().collect();
        v.sort_by_key(|c| c.seq);
        v.into_iter().map(|c| &c.copy).collect()
    }
}
