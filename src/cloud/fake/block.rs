//! `BlockStorage` on the fake: Cinder's rules for volumes, snapshots and backups.

use async_trait::async_trait;
use tokio::time::Instant;

use super::state::State;
use super::{FakeCloud, Op, FAKE_POLL_INTERVAL};
use crate::cloud::{
    Backup, BackupFilter, BackupStatus, BackupWait, BlockStorage, Capacity, CloudError,
    CloudResult, MigrationPolicy, NewBackup, NewSnapshot, NewVolume, Page, PageRequest, Resource,
    Snapshot, SnapshotFilter, SnapshotStatus, SnapshotWait, Volume, VolumeFilter, VolumeStatus,
    VolumeType, VolumeWait,
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

pub(super) fn find_type<'a>(s: &'a State, name_or_id: &str) -> Option<&'a VolumeType> {
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
        self.lock().create_volume(req)
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
        self.lock().delete_volume(id, cascade)
    }

    async fn extend_volume(&self, id: &str, new_size_gib: u64, online: bool) -> CloudResult<()> {
        self.lock().extend_volume(id, new_size_gib, online)
    }

    async fn retype_volume(
        &self,
        id: &str,
        new_type: &str,
        policy: MigrationPolicy,
    ) -> CloudResult<()> {
        self.lock().retype_volume(id, new_type, policy)
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
        self.lock().create_snapshot(req)
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
        self.lock().delete_snapshot(id)
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
        self.lock().create_backup(req)
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
        self.lock().delete_backup(id)
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

    async fn availability_zones(&self) -> CloudResult<Vec<String>> {
        let mut s = self.lock();
        s.enter(Op::AvailabilityZones)?;
        Ok(s.zones.clone())
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
