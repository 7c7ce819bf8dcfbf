//! Cinder's rules for snapshots and backups on the fake.

use std::time::SystemTime;

use super::state::{conflict, FakeBackup, FakeSnapshot, ObjAction, State};
use crate::cloud::{
    Backup, BackupStatus, CloudError, CloudResult, NewBackup, NewSnapshot, Op, Resource, Snapshot,
    SnapshotStatus, VolumeStatus,
};

impl State {
    pub fn create_snapshot(&mut self, req: &NewSnapshot) -> CloudResult<Snapshot> {
        self.enter(Op::SnapshotCreate)?;
        let v = self
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
        let id = self.new_id("snapshot");
        let error = if self.failing_snapshot_creations > 0 {
            self.failing_snapshot_creations -= 1;
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
        let pending = self.pending(ObjAction::Created { error });
        let seq = self.seq;
        self.snapshots.insert(
            id,
            FakeSnapshot {
                seq,
                snapshot: snapshot.clone(),
                pending,
            },
        );
        Ok(snapshot)
    }

    pub fn delete_snapshot(&mut self, id: &str) -> CloudResult<()> {
        self.enter(Op::SnapshotDelete)?;
        let snap = self
            .observe_snapshot(id)
            .ok_or_else(|| CloudError::not_found(Resource::Snapshot, id))?;
        let backing_up = self.backups.values().any(|b| {
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
        let pending = self.pending(ObjAction::Deleted);
        if let Some(f) = self.snapshots.get_mut(id) {
            f.snapshot.status = SnapshotStatus::Deleting;
            f.pending = pending;
        }
        Ok(())
    }

    pub fn create_backup(&mut self, req: &NewBackup) -> CloudResult<Backup> {
        self.enter(Op::BackupCreate)?;
        if !self.backups_supported {
            return Err(CloudError::Unsupported(
                "the backup service is not enabled".into(),
            ));
        }
        let v = self
            .observe_volume(&req.volume_id)
            .ok_or_else(|| CloudError::not_found(Resource::Volume, &req.volume_id))?;
        match &req.snapshot_id {
            Some(sid) => {
                let snap = self
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
        let id = self.new_id("backup");
        let error = if self.failing_backup_creations > 0 {
            self.failing_backup_creations -= 1;
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
        let pending = self.pending(ObjAction::Created { error });
        let seq = self.seq;
        self.backups.insert(
            id,
            FakeBackup {
                seq,
                backup: backup.clone(),
                pending,
            },
        );
        Ok(backup)
    }

    pub fn delete_backup(&mut self, id: &str) -> CloudResult<()> {
        self.enter(Op::BackupDelete)?;
        let b = self
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
        let pending = self.pending(ObjAction::Deleted);
        if let Some(f) = self.backups.get_mut(id) {
            f.backup.status = BackupStatus::Deleting;
            f.pending = pending;
        }
        Ok(())
    }
}
