//! `BlockStorage` on the fake: Cinder's rules for volumes, snapshots and backups.

use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::state::State;
use super::{FakeCloud, FAKE_POLL_INTERVAL};
use crate::cloud::poll::{poll, Look, Pace};
use crate::cloud::{
    Backup, BackupFilter, BackupStatus, BackupWait, BlockStorage, Capacity, CloudError,
    CloudResult, MigrationPolicy, NewBackup, NewSnapshot, NewVolume, Op, Page, PageRequest,
    Resource, Snapshot, SnapshotFilter, SnapshotStatus, SnapshotWait, Volume, VolumeFilter,
    VolumeType, VolumeWait,
};

impl FakeCloud {
    /// Look with `look` at the fake's pace until it is done, fails, or `deadline` passes.
    pub(super) async fn wait_until<T>(
        &self,
        resource: Resource,
        id: &str,
        wanted: String,
        deadline: Instant,
        mut look: impl FnMut(&mut State) -> CloudResult<Look<T>>,
    ) -> CloudResult<T> {
        let pace = Pace::every(FAKE_POLL_INTERVAL);
        poll(resource, id, wanted, deadline, pace, || {
            let r = look(&mut self.lock());
            async move { r }
        })
        .await
    }
}

pub(super) fn find_type<'a>(s: &'a State, name_or_id: &str) -> Option<&'a VolumeType> {
    s.types
        .get(name_or_id)
        .or_else(|| s.types.values().find(|t| t.name == name_or_id))
}

fn volume_look(
    s: &mut State,
    id: &str,
    until: &VolumeWait,
    waited: Duration,
) -> CloudResult<Look<Volume>> {
    let Some(v) = s.observe_volume(id) else {
        return Err(CloudError::not_found(Resource::Volume, id));
    };
    let reason = s.volumes.get(id).and_then(|f| f.error_reason.clone());
    let verdict = until.verdict(&v, waited);
    let status = v.status.clone();
    Look::judged(verdict, v, status).map_err(|e| e.or_reason(&reason))
}

#[async_trait]
impl BlockStorage for FakeCloud {
    async fn check(&self) -> CloudResult<()> {
        self.enter(Op::VolumeList)
    }

    async fn create_volume(&self, req: &NewVolume) -> CloudResult<Volume> {
        self.lock().create_volume(req)
    }

    async fn get_volume(&self, id: &str) -> CloudResult<Volume> {
        let mut s = self.lock();
        s.enter(Op::VolumeGet)?;
        s.observe_volume(id)
            .ok_or_else(|| CloudError::not_found(Resource::Volume, id))
    }

    async fn list_volumes(
        &self,
        filter: &VolumeFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Volume>> {
        let mut s = self.lock();
        s.enter(Op::VolumeList)?;
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
        self.enter(Op::VolumeWatch)?;
        let started = Instant::now();
        self.wait_until(Resource::Volume, id, until.wanted(), deadline, |s| {
            volume_look(s, id, until, started.elapsed())
        })
        .await
    }

    async fn get_volume_type(&self, name_or_id: &str) -> CloudResult<VolumeType> {
        let s = {
            let mut s = self.lock();
            s.enter(Op::VolumeTypeGet)?;
            find_type(&s, name_or_id).cloned()
        };
        s.ok_or_else(|| CloudError::not_found(Resource::VolumeType, name_or_id))
    }

    async fn create_snapshot(&self, req: &NewSnapshot) -> CloudResult<Snapshot> {
        self.lock().create_snapshot(req)
    }

    async fn get_snapshot(&self, id: &str) -> CloudResult<Snapshot> {
        let mut s = self.lock();
        s.enter(Op::SnapshotGet)?;
        s.observe_snapshot(id)
            .ok_or_else(|| CloudError::not_found(Resource::Snapshot, id))
    }

    async fn list_snapshots(
        &self,
        filter: &SnapshotFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Snapshot>> {
        let mut s = self.lock();
        s.enter(Op::SnapshotList)?;
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
        self.enter(Op::SnapshotGet)?;
        let wanted = match until {
            SnapshotWait::Available => "available",
            SnapshotWait::Deleted => "deleted",
        };
        self.wait_until(Resource::Snapshot, id, wanted.into(), deadline, |s| {
            let Some(x) = s.observe_snapshot(id) else {
                return Err(CloudError::not_found(Resource::Snapshot, id));
            };
            if x.status.is_error() {
                return Err(CloudError::ErrorState {
                    resource: Resource::Snapshot,
                    id: id.to_string(),
                    status: x.status.to_string(),
                    reason: None,
                });
            }
            Ok(match until {
                SnapshotWait::Available if x.status == SnapshotStatus::Available => Look::Done(x),
                _ => Look::Pending(x.status.to_string()),
            })
        })
        .await
    }

    async fn backups_supported(&self) -> CloudResult<bool> {
        let mut s = self.lock();
        s.enter(Op::BackupList)?;
        Ok(s.backups_supported)
    }

    async fn create_backup(&self, req: &NewBackup) -> CloudResult<Backup> {
        self.lock().create_backup(req)
    }

    async fn get_backup(&self, id: &str) -> CloudResult<Backup> {
        let mut s = self.lock();
        s.enter(Op::BackupGet)?;
        s.observe_backup(id)
            .ok_or_else(|| CloudError::not_found(Resource::Backup, id))
    }

    async fn list_backups(
        &self,
        filter: &BackupFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Backup>> {
        let mut s = self.lock();
        s.enter(Op::BackupList)?;
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
        self.enter(Op::BackupGet)?;
        let wanted = match until {
            BackupWait::Available => "available",
            BackupWait::Deleted => "deleted",
        };
        self.wait_until(Resource::Backup, id, wanted.into(), deadline, |s| {
            let Some(x) = s.observe_backup(id) else {
                return Err(CloudError::not_found(Resource::Backup, id));
            };
            if x.status.is_error() {
                return Err(CloudError::ErrorState {
                    resource: Resource::Backup,
                    id: id.to_string(),
                    status: x.status.to_string(),
                    reason: None,
                });
            }
            Ok(match until {
                BackupWait::Available if x.status == BackupStatus::Available => Look::Done(x),
                _ => Look::Pending(x.status.to_string()),
            })
        })
        .await
    }

    async fn availability_zones(&self) -> CloudResult<Vec<String>> {
        let mut s = self.lock();
        s.enter(Op::AvailabilityZoneList)?;
        Ok(s.zones.clone())
    }

    async fn capacity(
        &self,
        availability_zone: Option<&str>,
        volume_type: Option<&str>,
    ) -> CloudResult<Capacity> {
        let mut s = self.lock();
        s.enter(Op::QuotaGet)?;
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
