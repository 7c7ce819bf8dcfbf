//! Making backups: like snapshots, kept under `backups/`, independent of their volume (a volume with
//! backups can be deleted, as in Cinder), optionally taken from one of its snapshots.

use std::path::PathBuf;

use super::backend::Inner;
use super::data::{self, Source};
use super::records::CopyRecord;
use super::rules::refused;
use super::store::Kind;
use crate::cloud::model;
use crate::cloud::{CloudResult, CopyKind, NewBackup, VolumeCopy};

impl Inner {
    pub(super) fn create_backup(&self, req: &NewBackup) -> CloudResult<VolumeCopy> {
        let zone = self.zone_for(req.availability_zone.as_deref(), None)?;
        let (rec, file, device) = {
            let _ops = self.lock_ops();
            let (size_gib, file, device) = self.backup_source(req)?;
            let id = uuid::Uuid::new_v4().to_string();
            let rec = CopyRecord {
                snapshot_id: req.snapshot_id.clone(),
                metadata: req.metadata.clone(),
                availability_zone: Some(zone),
                ..CopyRecord::creating(id, &req.name, &req.description, &req.volume_id, size_gib)
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
        let v = st.volume(&req.volume_id)?;
        if let Some(sid) = &req.snapshot_id {
            let s = st.copy(CopyKind::Snapshot, sid)?;
            model::backup_from_snapshot(&req.volume_id, &s.to_copy(CopyKind::Snapshot))
                .map_err(refused)?;
            return Ok((s.size_gib, self.layout.data(Kind::Snapshot, sid), None));
        }
        model::backup_volume(&v.to_volume(), req.force).map_err(refused)?;
        let dev = v.attachments.first().map(|a| PathBuf::from(&a.device));
        Ok((v.size_gib, self.layout.data(Kind::Volume, &v.id), dev))
    }
}
