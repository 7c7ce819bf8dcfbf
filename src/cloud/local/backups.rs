//! Making and deleting backups: like snapshots, kept under `backups/`, independent of their volume (a volume with
//! backups can be deleted, as in Cinder), optionally taken from one of its snapshots.

use std::path::PathBuf;

use super::backend::{bad_request, conflict, Inner};
use super::data::{self, Source};
use super::records::{self, CopyRecord, RECORD_VERSION};
use super::store::Kind;
use crate::cloud::{
    CloudError, CloudResult, CopyKind, CopyStatus, NewBackup, Resource, VolumeCopy, VolumeStatus,
};

fn not_found(id: &str) -> CloudError {
    CloudError::not_found(Resource::Backup, id)
}

impl Inner {
    pub(super) fn create_backup(&self, req: &NewBackup) -> CloudResult<VolumeCopy> {
        let zone = self.zone_for(req.availability_zone.as_deref(), None)?;
        let (rec, file, device) = {
            let _ops = self.lock_ops();
            let (size_gib, file, device) = self.backup_source(req)?;
            let rec = CopyRecord {
                version: RECORD_VERSION,
                id: uuid::Uuid::new_v4().to_string(),
                name: req.name.clone(),
                description: req.description.clone(),
                volume_id: req.volume_id.clone(),
                snapshot_id: req.snapshot_id.clone(),
                size_gib,
                status: CopyStatus::Creating.as_str().to_string(),
                error_reason: None,
                metadata: req.metadata.clone(),
                created_at_ms: records::now_ms(),
                group_snapshot_id: None,
                availability_zone: Some(zone),
            };
            self.put_copy(Kind::Backup, rec.clone())?;
            (rec, file, device)
        };
        let result = data::create(
            &self.layout,
            Kind::Backup,
            &rec.id,
            Some(Source {
                file: &file,
                device: device.as_deref(),
            }),
            0,
        );
        let rec = self.finish_copy(CopyKind::Backup, &rec.id, result)?;
        Ok(rec.to_copy(CopyKind::Backup))
    }

    /// Size, data file and (for an attached volume) loop device to back up. Call with `ops`.
    fn backup_source(&self, req: &NewBackup) -> CloudResult<(u64, PathBuf, Option<PathBuf>)> {
        let st = self.read();
        let v = st
            .volumes
            .get(&req.volume_id)
            .ok_or_else(|| CloudError::not_found(Resource::Volume, &req.volume_id))?;
        if let Some(sid) = &req.snapshot_id {
            let s = st
                .snapshots
                .get(sid)
                .ok_or_else(|| CloudError::not_found(Resource::Snapshot, sid))?;
            if s.volume_id != req.volume_id {
                return Err(bad_request(format!(
                    "snapshot {sid} is of volume {}, not {}",
                    s.volume_id, req.volume_id
                )));
            }
            if !s.is_available() {
                return Err(conflict(format!(
                    "snapshot {sid} must be available to be backed up, it is {}",
                    s.status
                )));
            }
            return Ok((s.size_gib, self.layout.data(Kind::Snapshot, sid), None));
        }
        match v.status() {
            VolumeStatus::Available => {}
            VolumeStatus::InUse if req.force => {}
            other => {
                return Err(conflict(format!(
                "volume {} must be available (or in-use with force) to be backed up, it is {other}",
                req.volume_id
            )))
            }
        }
        let dev = v.attachments.first().map(|a| PathBuf::from(&a.device));
        Ok((v.size_gib, self.layout.data(Kind::Volume, &v.id), dev))
    }

    pub(super) fn delete_backup(&self, id: &str) -> CloudResult<()> {
        let _ops = self.lock_ops();
        let mut rec =
            {
                let st = self.read();
                let b = st.backups.get(id).ok_or_else(|| not_found(id))?;
                if b.is_creating() {
                    return Err(conflict(format!("backup {id} is still being created")));
                }
                if st.volumes.values().any(|v| {
                    v.backup_id.as_deref() == Some(id) && v.status() == VolumeStatus::Creating
                }) {
                    return Err(conflict(format!("backup {id} is being restored")));
                }
                b.clone()
            };
        rec.status = CopyStatus::Deleting.as_str().to_string();
        self.put_copy(Kind::Backup, rec)?;
        self.drop_object(Kind::Backup, id)
    }
}
