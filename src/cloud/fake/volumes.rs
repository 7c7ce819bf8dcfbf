//! Cinder's rules for volumes on the fake: create (sources, AZ, quota), delete, extend, retype.

use std::time::SystemTime;

use super::block::find_type;
use super::state::{bad_request, conflict, FakeVolume, State, VolumeAction};
use crate::cloud::{
    BackupStatus, CloudError, CloudResult, MigrationPolicy, NewVolume, Op, Resource,
    SnapshotStatus, Volume, VolumeSource, VolumeStatus,
};

impl State {
    pub fn create_volume(&mut self, req: &NewVolume) -> CloudResult<Volume> {
        self.enter(Op::VolumeCreate)?;
        let (type_name, multiattach) = match &req.volume_type {
            None => (None, false),
            Some(t) => match find_type(self, t) {
                Some(t) => (Some(t.name.clone()), t.multiattach),
                None => return Err(CloudError::not_found(Resource::VolumeType, t)),
            },
        };
        if let Some(az) = &req.availability_zone {
            if !self.zones.contains(az) {
                return Err(bad_request(format!("Availability zone '{az}' is invalid.")));
            }
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
                let b = self
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
        };
        let pending = self.pending(VolumeAction::Created { error });
        let seq = self.seq;
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

    pub fn delete_volume(&mut self, id: &str, cascade: bool) -> CloudResult<()> {
        self.enter(Op::VolumeDelete)?;
        let v = self
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
        let snaps: Vec<String> = self
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
                self.snapshots.remove(&sid);
            }
        }
        let pending = self.pending(VolumeAction::Deleted);
        if let Some(f) = self.volumes.get_mut(id) {
            f.volume.status = VolumeStatus::Deleting;
            f.pending = pending;
        }
        Ok(())
    }

    pub fn extend_volume(&mut self, id: &str, new_size_gib: u64, online: bool) -> CloudResult<()> {
        self.enter(Op::VolumeExtend)?;
        let v = self
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

    pub fn retype_volume(
        &mut self,
        id: &str,
        new_type: &str,
        policy: MigrationPolicy,
    ) -> CloudResult<()> {
        self.enter(Op::VolumeRetype)?;
        let v = self
            .observe_volume(id)
            .ok_or_else(|| CloudError::not_found(Resource::Volume, id))?;
        let t = find_type(self, new_type)
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
