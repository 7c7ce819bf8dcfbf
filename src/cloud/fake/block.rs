//! `BlockStorage` on the fake: Cinder's rules for volumes, snapshots and backups.

use std::time::SystemTime;

use async_trait::async_trait;
use tokio::time::Instant;

use super::state::{
    bad_request, conflict, FakeBackup, FakeSnapshot, FakeVolume, ObjAction, State, VolumeAction,
};
use super::{FakeCloud, Op, FAKE_POLL_INTERVAL};
use crate::cloud::{
    Backup, BackupFilter, BackupStatus, BackupWait, BlockStorage, Capacity, CloudError,
    CloudResult, MigrationPolicy, NewBackup, NewSnapshot, NewVolume, Page, PageRequest, Resource,
    Snapshot, SnapshotFilter, SnapshotStatus, SnapshotWait, Volume, VolumeFilter, VolumeSource,
    VolumeStatus, VolumeType, VolumeWait,
};

/// One step of a wait: finished (with the result) or still waiting (with the last status).
pub(super) enum Step<T> {
    Done(CloudResult<T>),
    Waiting(String),
}

impl FakeCloud {
    /// Poll `step` until it finishes or `deadline` passes (then `WaitTimeout`).
    pub(super) async fn wait_until<T>(
        &self,
        resource: Resource,
        id: &str,
        wanted: String,
        deadline: Instant,
        mut step: impl FnMut(&mut State) -> Step<T>,
    ) -> CloudResult<T> {
        loop {
            let last_status = match step(&mut self.lock()) {
                Step::Done(r) => return r,
                Step::Waiting(last) => last,
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(CloudError::WaitTimeout {
                    resource,
                    id: id.to_string(),
                    wanted,
                    last_status,
                });
            }
            tokio::time::sleep(FAKE_POLL_INTERVAL.min(deadline - now)).await;
        }
    }
}

fn find_type<'a>(s: &'a State, name_or_id: &str) -> Option<&'a VolumeType> {
    s.types
        .get(name_or_id)
        .or_else(|| s.types.values().find(|t| t.name == name_or_id))
}

fn volume_wait_step(s: &mut State, id: &str, until: &VolumeWait) -> Step<Volume> {
    let Some(v) = s.observe_volume(id) else {
        return Step::Done(Err(CloudError::not_found(Resource::Volume, id)));
    };
    if v.status.is_error() {
        let reason = s.volumes.get(id).and_then(|f| f.error_reason.clone());
        return Step::Done(Err(CloudError::ErrorState {
            resource: Resource::Volume,
            id: id.to_string(),
            status: v.status.to_string(),
            reason,
        }));
    }
    let done = match until {
        VolumeWait::Available => v.status == VolumeStatus::Available,
        VolumeWait::AttachedTo(server) => {
            v.status == VolumeStatus::InUse && v.attached_to(server).is_some()
        }
        VolumeWait::DetachedFrom(server) => {
            v.attached_to(server).is_none() && v.status != VolumeStatus::Detaching
        }
        VolumeWait::Extended(size) => v.size_gib >= *size && v.status != VolumeStatus::Extending,
        VolumeWait::Deleted => false,
        VolumeWait::Stable => !v.status.is_transitional(),
    };
    if done {
        Step::Done(Ok(v))
    } else {
        Step::Waiting(v.status.to_string())
    }
}

fn wanted_volume(until: &VolumeWait) -> String {
    match until {
        VolumeWait::Available => "available".into(),
        VolumeWait::AttachedTo(s) => format!("attached to {s}"),
        VolumeWait::DetachedFrom(s) => format!("detached from {s}"),
        VolumeWait::Extended(n) => format!("extended to {n} GiB"),
        VolumeWait::Deleted => "deleted".into(),
        VolumeWait::Stable => "stable".into(),
    }
}

#[async_trait]
impl BlockStorage for FakeCloud {
    async fn check(&self) -> CloudResult<()> {
        self.enter(Op::Check)
    }

    async fn create_volume(&self, req: &NewVolume) -> CloudResult<Volume> {
        let mut s = self.lock();
        s.enter(Op::CreateVolume)?;
        let (type_name, multiattach) = match &req.volume_type {
            None => (None, false),
            Some(t) => match find_type(&s, t) {
                Some(t) => (Some(t.name.clone()), t.multiattach),
                None => return Err(CloudError::not_found(Resource::VolumeType, t)),
            },
        };
        if let Some(az) = &req.availability_zone {
            if !s.zones.contains(az) {
                return Err(bad_request(format!("Availability zone '{az}' is invalid.")));
            }
        }
        let mut az = req
            .availability_zone
            .clone()
            .unwrap_or_else(|| s.default_az.clone());
        let (mut snapshot_id, mut source_volume_id, mut backup_id) = (None, None, None);
        match &req.source {
            None => {}
            Some(VolumeSource::Snapshot(id)) => {
                let snap = s
                    .snapshots
                    .get(id)
                    .map(|f| f.snapshot.clone())
                    .ok_or_else(|| CloudError::not_found(Resource::Snapshot, id))?;
                if snap.status != SnapshotStatus::Available {
                    return Err(bad_request(format!(
                        "Originating snapshot status must be one of 'available' values, is {}",
                        snap.status
                    )));
                }
                if req.size_gib < snap.size_gib {
                    return Err(bad_request(
                        "Volume size cannot be lesser than the snapshot size",
                    ));
                }
                if let Some(src) = s.volumes.get(&snap.volume_id) {
                    az = src.volume.availability_zone.clone();
                }
                snapshot_id = Some(id.clone());
            }
            Some(VolumeSource::Volume(id)) => {
                let src = s
                    .volumes
                    .get(id)
                    .map(|f| f.volume.clone())
                    .ok_or_else(|| CloudError::not_found(Resource::Volume, id))?;
                if !matches!(src.status, VolumeStatus::Available | VolumeStatus::InUse) {
                    return Err(bad_request(format!(
                        "Source volume status must be available or in-use, is {}",
                        src.status
                    )));
                }
                if req.size_gib < src.size_gib {
                    return Err(bad_request("Clones cannot be smaller than their source"));
                }
                az = src.availability_zone.clone();
                source_volume_id = Some(id.clone());
            }
            Some(VolumeSource::Backup(id)) => {
                let b = s
                    .backups
                    .get(id)
                    .map(|f| f.backup.clone())
                    .ok_or_else(|| CloudError::not_found(Resource::Backup, id))?;
                if b.status != BackupStatus::Available {
                    return Err(bad_request(format!(
                        "Backup status must be available, is {}",
                        b.status
                    )));
                }
                if req.size_gib < b.size_gib {
                    return Err(bad_request(
                        "Volume size cannot be lesser than the backup size",
                    ));
                }
                backup_id = Some(id.clone());
            }
        }
        s.check_quota(req.size_gib)?;
        let id = s.new_id("volume");
        let error = s.failing_volume_creations.pop_front();
        let volume = Volume {
            id: id.clone(),
            name: req.name.clone(),
            size_gib: req.size_gib,
            status: VolumeStatus::Creating,
            availability_zone: az,
            volume_type: type_name,
            multiattach,
            bootable: false,
            metadata: req.metadata.clone(),
            attachments: Vec::new(),
            snapshot_id,
            source_volume_id,
            backup_id,
            created_at: Some(SystemTime::now()),
        };
        let pending = s.pending(VolumeAction::Created { error });
        let seq = s.seq;
        s.volumes.insert(
            id,
            FakeVolume {
                seq,
                volume: volume.clone(),
                pending,
                error_reason: None,
            },
        );
        Ok(volume)
    }

    async fn get_volume(&self, id: &str) -> CloudResult<Volume> {
        let mut s = self.lock();
        s.enter(Op::GetVolume)?;
        s.observe_volume(id)
            .ok_or_else(|| CloudError::not_found(Resource::Volume, id))
    }

    async fn list_volumes(
        &self,
        filter: &VolumeFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Volume>> {
        let mut s = self.lock();
        s.enter(Op::ListVolumes)?;
        let ids: Vec<String> = s.sorted_volumes().iter().map(|v| v.id.clone()).collect();
        let mut items = Vec::new();
        for id in &ids {
            if let Some(v) = s.observe_volume(id) {
                let name_ok = filter.name.as_ref().is_none_or(|n| &v.name == n);
                let meta_ok = filter
                    .metadata
                    .iter()
                    .all(|(k, val)| v.metadata.get(k) == Some(val));
                if name_ok && meta_ok {
                    items.push((id.clone(), v));
                }
            }
        }
        super::state::paginate(items, &ids, page)
    }

    async fn delete_volume(&self, id: &str, cascade: bool) -> CloudResult<()> {
        let mut s = self.lock();
        s.enter(Op::DeleteVolume)?;
        let v = s
            .observe_volume(id)
            .ok_or_else(|| CloudError::not_found(Resource::Volume, id))?;
        if !v.attachments.is_empty()
            || v.status.is_transitional()
            || v.status == VolumeStatus::InUse
        {
            return Err(conflict(format!(
                "Invalid volume: Volume status must be available or error or error_restoring or \
                 error_extending or error_managing and must not be migrating, attached, belong to \
                 a group, have snapshots or be disassociated from snapshots after volume \
                 transfer (status {})",
                v.status
            )));
        }
        let snaps: Vec<String> = s
            .snapshots
            .values()
            .filter(|f| f.snapshot.volume_id == id)
            .map(|f| f.snapshot.id.clone())
            .collect();
        if !snaps.is_empty() {
            if !cascade {
                return Err(conflict(format!(
                    "Invalid volume: Volume still has {} dependent snapshots.",
                    snaps.len()
                )));
            }
            for sid in snaps {
                s.snapshots.remove(&sid);
            }
        }
        let pending = s.pending(VolumeAction::Deleted);
        if let Some(f) = s.volumes.get_mut(id) {
            f.volume.status = VolumeStatus::Deleting;
            f.pending = pending;
        }
        Ok(())
    }

    async fn extend_volume(&self, id: &str, new_size_gib: u64, online: bool) -> CloudResult<()> {
        let mut s = self.lock();
        s.enter(Op::ExtendVolume)?;
        let v = s
            .observe_volume(id)
            .ok_or_else(|| CloudError::not_found(Resource::Volume, id))?;
        if new_size_gib <= v.size_gib {
            return Err(bad_request(
                "New size for extend must be greater than current size.",
            ));
        }
        let ok = v.status == VolumeStatus::Available || (v.status == VolumeStatus::InUse && online);
        if !ok {
            return Err(conflict(format!(
                "Invalid volume: Volume should be in available or in-use state (with online \
                 extend) but is {}",
                v.status
            )));
        }
        s.check_quota(new_size_gib - v.size_gib)?;
        let pending = s.pending(VolumeAction::Extended {
            size_gib: new_size_gib,
            back_to: v.status.clone(),
        });
        if let Some(f) = s.volumes.get_mut(id) {
            f.volume.status = VolumeStatus::Extending;
            f.pending = pending;
        }
        Ok(())
    }

    async fn retype_volume(
        &self,
        id: &str,
        new_type: &str,
        policy: MigrationPolicy,
    ) -> CloudResult<()> {
        let mut s = self.lock();
        s.enter(Op::RetypeVolume)?;
        let v = s
            .observe_volume(id)
            .ok_or_else(|| CloudError::not_found(Resource::Volume, id))?;
        let t = find_type(&s, new_type)
            .cloned()
            .ok_or_else(|| CloudError::not_found(Resource::VolumeType, new_type))?;
        if !matches!(v.status, VolumeStatus::Available | VolumeStatus::InUse) {
            return Err(conflict(format!(
                "Invalid volume: Volume status must be available or in-use, is {}",
                v.status
            )));
        }
        if v.volume_type.as_deref() == Some(t.name.as_str()) {
            return Err(bad_request("Retype requested to the same volume type"));
        }
        let applies = !(s.retype_needs_migration && policy == MigrationPolicy::Never);
        let pending = s.pending(VolumeAction::Retyped {
            new_type: applies.then(|| (t.name.clone(), t.multiattach)),
            back_to: v.status.clone(),
        });
        if let Some(f) = s.volumes.get_mut(id) {
            f.volume.status = VolumeStatus::Retyping;
            f.pending = pending;
        }
        Ok(())
    }

    async fn wait_volume(
        &self,
        id: &str,
        until: &VolumeWait,
        deadline: Instant,
    ) -> CloudResult<Volume> {
        self.enter(Op::WaitVolume)?;
        self.wait_until(Resource::Volume, id, wanted_volume(until), deadline, |s| {
            volume_wait_step(s, id, until)
        })
        .await
    }

    async fn get_volume_type(&self, name_or_id: &str) -> CloudResult<VolumeType> {
        let s = {
            let mut s = self.lock();
            s.enter(Op::GetVolumeType)?;
            find_type(&s, name_or_id).cloned()
        };
        s.ok_or_else(|| CloudError::not_found(Resource::VolumeType, name_or_id))
    }

    async fn create_snapshot(&self, req: &NewSnapshot) -> CloudResult<Snapshot> {
        let mut s = self.lock();
        s.enter(Op::CreateSnapshot)?;
        let v = s
            .observe_volume(&req.volume_id)
            .ok_or_else(|| CloudError::not_found(Resource::Volume, &req.volume_id))?;
        let ok =
            v.status == VolumeStatus::Available || (v.status == VolumeStatus::InUse && req.force);
        if !ok {
            return Err(conflict(format!(
                "Invalid volume: Volume {} status must be available, but current status is: {}",
                v.id, v.status
            )));
        }
        let id = s.new_id("snapshot");
        let error = if s.failing_snapshot_creations > 0 {
            s.failing_snapshot_creations -= 1;
            true
        } else {
            false
        };
        let snapshot = Snapshot {
            id: id.clone(),
            name: req.name.clone(),
            volume_id: req.volume_id.clone(),
            size_gib: v.size_gib,
            status: SnapshotStatus::Creating,
            created_at: Some(SystemTime::now()),
            metadata: req.metadata.clone(),
        };
        let pending = s.pending(ObjAction::Created { error });
        let seq = s.seq;
        s.snapshots.insert(
            id,
            FakeSnapshot {
                seq,
                snapshot: snapshot.clone(),
                pending,
            },
        );
        Ok(snapshot)
    }

    async fn get_snapshot(&self, id: &str) -> CloudResult<Snapshot> {
        let mut s = self.lock();
        s.enter(Op::GetSnapshot)?;
        s.observe_snapshot(id)
            .ok_or_else(|| CloudError::not_found(Resource::Snapshot, id))
    }

    async fn list_snapshots(
        &self,
        filter: &SnapshotFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Snapshot>> {
        let mut s = self.lock();
        s.enter(Op::ListSnapshots)?;
        let ids: Vec<String> = s.sorted_snapshots().iter().map(|x| x.id.clone()).collect();
        let mut items = Vec::new();
        for id in &ids {
            if let Some(x) = s.observe_snapshot(id) {
                if filter.name.as_ref().is_none_or(|n| &x.name == n)
                    && filter.volume_id.as_ref().is_none_or(|v| &x.volume_id == v)
                {
                    items.push((id.clone(), x));
                }
            }
        }
        super::state::paginate(items, &ids, page)
    }

    async fn delete_snapshot(&self, id: &str) -> CloudResult<()> {
        let mut s = self.lock();
        s.enter(Op::DeleteSnapshot)?;
        let snap = s
            .observe_snapshot(id)
            .ok_or_else(|| CloudError::not_found(Resource::Snapshot, id))?;
        let backing_up = s.backups.values().any(|b| {
            b.backup.snapshot_id.as_deref() == Some(id) && b.backup.status == BackupStatus::Creating
        });
        if backing_up {
            return Err(conflict(format!(
                "Invalid snapshot: snapshot {id} is being backed up"
            )));
        }
        if matches!(
            snap.status,
            SnapshotStatus::Creating | SnapshotStatus::Deleting
        ) {
            return Err(conflict(format!(
                "Invalid snapshot: Snapshot status must be available or error, is {}",
                snap.status
            )));
        }
        let pending = s.pending(ObjAction::Deleted);
        if let Some(f) = s.snapshots.get_mut(id) {
            f.snapshot.status = SnapshotStatus::Deleting;
            f.pending = pending;
        }
        Ok(())
    }

    async fn wait_snapshot(
        &self,
        id: &str,
        until: &SnapshotWait,
        deadline: Instant,
    ) -> CloudResult<Snapshot> {
        self.enter(Op::WaitSnapshot)?;
        let wanted = match until {
            SnapshotWait::Available => "available",
            SnapshotWait::Deleted => "deleted",
        };
        self.wait_until(Resource::Snapshot, id, wanted.into(), deadline, |s| {
            let Some(x) = s.observe_snapshot(id) else {
                return Step::Done(Err(CloudError::not_found(Resource::Snapshot, id)));
            };
            if x.status.is_error() {
                return Step::Done(Err(CloudError::ErrorState {
                    resource: Resource::Snapshot,
                    id: id.to_string(),
                    status: x.status.to_string(),
                    reason: None,
                }));
            }
            match until {
                SnapshotWait::Available if x.status == SnapshotStatus::Available => {
                    Step::Done(Ok(x))
                }
                _ => Step::Waiting(x.status.to_string()),
            }
        })
        .await
    }

    async fn backups_supported(&self) -> CloudResult<bool> {
        let mut s = self.lock();
        s.enter(Op::BackupsSupported)?;
        Ok(s.backups_supported)
    }

    async fn create_backup(&self, req: &NewBackup) -> CloudResult<Backup> {
        let mut s = self.lock();
        s.enter(Op::CreateBackup)?;
        if !s.backups_supported {
            return Err(CloudError::Unsupported(
                "the backup service is not enabled".into(),
            ));
        }
        let v = s
            .observe_volume(&req.volume_id)
            .ok_or_else(|| CloudError::not_found(Resource::Volume, &req.volume_id))?;
        match &req.snapshot_id {
            Some(sid) => {
                let snap = s
                    .observe_snapshot(sid)
                    .ok_or_else(|| CloudError::not_found(Resource::Snapshot, sid))?;
                if snap.status != SnapshotStatus::Available {
                    return Err(conflict(format!(
                        "Invalid snapshot: Snapshot to be backed up must be available, is {}",
                        snap.status
                    )));
                }
            }
            None => {
                let ok = v.status == VolumeStatus::Available
                    || (v.status == VolumeStatus::InUse && req.force);
                if !ok {
                    return Err(conflict(format!(
                        "Invalid volume: Volume to be backed up must be available, is {}",
                        v.status
                    )));
                }
            }
        }
        let id = s.new_id("backup");
        let error = if s.failing_backup_creations > 0 {
            s.failing_backup_creations -= 1;
            true
        } else {
            false
        };
        let backup = Backup {
            id: id.clone(),
            name: req.name.clone(),
            volume_id: req.volume_id.clone(),
            snapshot_id: req.snapshot_id.clone(),
            size_gib: v.size_gib,
            status: BackupStatus::Creating,
            availability_zone: req
                .availability_zone
                .clone()
                .or(Some(v.availability_zone.clone())),
            created_at: Some(SystemTime::now()),
            metadata: req.metadata.clone(),
        };
        let pending = s.pending(ObjAction::Created { error });
        let seq = s.seq;
        s.backups.insert(
            id,
            FakeBackup {
                seq,
                backup: backup.clone(),
                pending,
            },
        );
        Ok(backup)
    }

    async fn get_backup(&self, id: &str) -> CloudResult<Backup> {
        let mut s = self.lock();
        s.enter(Op::GetBackup)?;
        s.observe_backup(id)
            .ok_or_else(|| CloudError::not_found(Resource::Backup, id))
    }

    async fn list_backups(
        &self,
        filter: &BackupFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Backup>> {
        let mut s = self.lock();
        s.enter(Op::ListBackups)?;
        let ids: Vec<String> = s.sorted_backups().iter().map(|x| x.id.clone()).collect();
        let mut items = Vec::new();
        for id in &ids {
            if let Some(x) = s.observe_backup(id) {
                if filter.name.as_ref().is_none_or(|n| &x.name == n)
                    && filter.volume_id.as_ref().is_none_or(|v| &x.volume_id == v)
                {
                    items.push((id.clone(), x));
                }
            }
        }
        super::state::paginate(items, &ids, page)
    }

    async fn delete_backup(&self, id: &str) -> CloudResult<()> {
        let mut s = self.lock();
        s.enter(Op::DeleteBackup)?;
        let b = s
            .observe_backup(id)
            .ok_or_else(|| CloudError::not_found(Resource::Backup, id))?;
        if matches!(
            b.status,
            BackupStatus::Creating | BackupStatus::Restoring | BackupStatus::Deleting
        ) {
            return Err(conflict(format!(
                "Invalid backup: Backup status must be available or error, is {}",
                b.status
            )));
        }
        let pending = s.pending(ObjAction::Deleted);
        if let Some(f) = s.backups.get_mut(id) {
            f.backup.status = BackupStatus::Deleting;
            f.pending = pending;
        }
        Ok(())
    }

    async fn wait_backup(
        &self,
        id: &str,
        until: &BackupWait,
        deadline: Instant,
    ) -> CloudResult<Backup> {
        self.enter(Op::WaitBackup)?;
        let wanted = match until {
            BackupWait::Available => "available",
            BackupWait::Deleted => "deleted",
        };
        self.wait_until(Resource::Backup, id, wanted.into(), deadline, |s| {
            let Some(x) = s.observe_backup(id) else {
                return Step::Done(Err(CloudError::not_found(Resource::Backup, id)));
            };
            if x.status.is_error() {
                return Step::Done(Err(CloudError::ErrorState {
                    resource: Resource::Backup,
                    id: id.to_string(),
                    status: x.status.to_string(),
                    reason: None,
                }));
            }
            match until {
                BackupWait::Available if x.status == BackupStatus::Available => Step::Done(Ok(x)),
                _ => Step::Waiting(x.status.to_string()),
            }
        })
        .await
    }

    async fn capacity(
        &self,
        availability_zone: Option<&str>,
        volume_type: Option<&str>,
    ) -> CloudResult<Capacity> {
        let mut s = self.lock();
        s.enter(Op::Capacity)?;
        let az = availability_zone.map(str::to_string);
        let ty = volume_type.map(str::to_string);
        for key in [
            (az.clone(), ty.clone()),
            (az.clone(), None),
            (None, ty.clone()),
            (None, None),
        ] {
            if let Some(c) = s.capacity.get(&key) {
                return Ok(*c);
            }
        }
        Ok(s.default_capacity())
    }
}
