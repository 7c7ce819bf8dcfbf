//! `Volumes` on the fake: Cinder's rules for volumes: create (sources, AZ, quota), delete,
//! extend, retype; reads and waits move pending transitions forward.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use tokio::time::Instant;

use super::rules::{refused, PROFILE};
use super::state::{paginate, FakeVolume, State, VolumeAction};
use super::FakeCloud;
use crate::cloud::model::{self, VolumeUse};
use crate::cloud::poll::Look;
use crate::cloud::{
    CloudError, CloudResult, MigrationPolicy, NewVolume, Op, Page, PageRequest, Resource, Volume,
    VolumeFilter, VolumeSource, VolumeStatus, VolumeWait, Volumes,
};

#[async_trait]
impl Volumes for FakeCloud {
    async fn create_volume(&self, req: &NewVolume) -> CloudResult<Volume> {
        self.lock().create_volume(req)
    }

    async fn get_volume(&self, id: &str) -> CloudResult<Volume> {
        let mut s = self.lock();
        s.enter(Op::VolumeGet)?;
        s.volume(id)
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
        paginate(items, &ids, page)
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

    async fn update_volume_metadata(
        &self,
        id: &str,
        pairs: &BTreeMap<String, String>,
    ) -> CloudResult<()> {
        let mut s = self.lock();
        s.enter(Op::VolumeMetadataUpdate)?;
        s.volume(id)?;
        if let Some(f) = s.volumes.get_mut(id) {
            f.volume.metadata.extend(pairs.clone());
        }
        Ok(())
    }

    /// Counted as one `volume_watch_list`, however many looks it takes.
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

impl State {
    fn create_volume(&mut self, req: &NewVolume) -> CloudResult<Volume> {
        self.enter(Op::VolumeCreate)?;
        let (type_name, multiattach) = match &req.volume_type {
            None => (None, false),
            Some(t) => match self.find_type(t) {
                Some(t) => (Some(t.name.clone()), t.multiattach),
                None => return Err(CloudError::not_found(Resource::VolumeType, t)),
            },
        };
        model::new_volume_size(req.size_gib).map_err(refused)?;
        if let Some(az) = &req.availability_zone {
            model::zone(az, &self.zones).map_err(refused)?;
        }
        let mut az = req
            .availability_zone
            .clone()
            .unwrap_or_else(|| self.default_az.clone());
        let (mut snapshot_id, mut source_volume_id, mut backup_id) = (None, None, None);
        match &req.source {
            None => {}
            Some(VolumeSource::Snapshot(id)) => {
                let snap = self
                    .snapshots
                    .get(id)
                    .map(|f| f.copy.clone())
                    .ok_or_else(|| CloudError::not_found(Resource::Snapshot, id))?;
                model::restore_from(&snap, req.size_gib).map_err(refused)?;
                if let Some(src) = self.volumes.get(&snap.volume_id) {
                    az = src.volume.availability_zone.clone();
                }
                snapshot_id = Some(id.clone());
            }
            Some(VolumeSource::Volume(id)) => {
                let src = self
                    .volumes
                    .get(id)
                    .map(|f| f.volume.clone())
                    .ok_or_else(|| CloudError::not_found(Resource::Volume, id))?;
                model::clone_from(&src, req.size_gib).map_err(refused)?;
                az = src.availability_zone.clone();
                source_volume_id = Some(id.clone());
            }
            Some(VolumeSource::Backup(id)) => {
                let b = self
                    .backups
                    .get(id)
                    .map(|f| f.copy.clone())
                    .ok_or_else(|| CloudError::not_found(Resource::Backup, id))?;
                model::restore_from(&b, req.size_gib).map_err(refused)?;
                backup_id = Some(id.clone());
            }
        }
        self.check_quota(req.size_gib)?;
        let id = self.new_id("volume");
        let error = self.failing_volume_creations.pop_front();
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
            group_id: None,
        };
        let pending = self.pending(VolumeAction::Created { error });
        let seq = self.seq;
        self.hints.insert(id.clone(), req.scheduler_hints.clone());
        self.volumes.insert(
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

    fn delete_volume(&mut self, id: &str, cascade: bool) -> CloudResult<()> {
        self.enter(Op::VolumeDelete)?;
        let v = self.volume(id)?;
        let snaps: Vec<String> = self
            .snapshots
            .values()
            .filter(|f| f.copy.volume_id == id)
            .map(|f| f.copy.id.clone())
            .collect();
        let uses = VolumeUse {
            snapshots: snaps.len(),
            copying: self.copying(id),
        };
        model::delete_volume(&PROFILE, &v, uses, cascade).map_err(refused)?;
        for sid in snaps {
            self.snapshots.remove(&sid);
        }
        let pending = self.pending(VolumeAction::Deleted);
        if let Some(f) = self.volumes.get_mut(id) {
            f.volume.status = VolumeStatus::Deleting;
            f.pending = pending;
        }
        Ok(())
    }

    fn extend_volume(&mut self, id: &str, new_size_gib: u64, online: bool) -> CloudResult<()> {
        self.enter(Op::VolumeExtend)?;
        let v = self.volume(id)?;
        model::extend(&v, new_size_gib, online).map_err(refused)?;
        self.check_quota(new_size_gib - v.size_gib)?;
        let pending = self.pending(VolumeAction::Extended {
            size_gib: new_size_gib,
            back_to: v.status.clone(),
        });
        if let Some(f) = self.volumes.get_mut(id) {
            f.volume.status = VolumeStatus::Extending;
            f.pending = pending;
        }
        Ok(())
    }

    fn retype_volume(
        &mut self,
        id: &str,
        new_type: &str,
        policy: MigrationPolicy,
    ) -> CloudResult<()> {
        self.enter(Op::VolumeRetype)?;
        let v = self.volume(id)?;
        let t = self
            .find_type(new_type)
            .cloned()
            .ok_or_else(|| CloudError::not_found(Resource::VolumeType, new_type))?;
        model::retype(&v, &t).map_err(refused)?;
        let applies = !(self.retype_needs_migration && policy == MigrationPolicy::Never);
        let pending = self.pending(VolumeAction::Retyped {
            new_type: applies.then(|| (t.name.clone(), t.multiattach)),
            back_to: v.status.clone(),
        });
        if let Some(f) = self.volumes.get_mut(id) {
            f.volume.status = VolumeStatus::Retyping;
            f.pending = pending;
        }
        Ok(())
    }
}
