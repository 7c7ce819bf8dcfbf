//! Making snapshots: sparse copies of a volume's file under `snapshots/`.

use std::path::PathBuf;

use super::backend::Inner;
use super::data::{self, Source};
use super::records::CopyRecord;
use super::rules::{refused, PROFILE};
use super::store::Kind;
use crate::cloud::model;
use crate::cloud::{CloudResult, CopyKind, NewSnapshot, VolumeCopy};

impl Inner {
    pub(super) fn create_snapshot(&self, req: &NewSnapshot) -> CloudResult<VolumeCopy> {
        let (rec, device) = {
            let _ops = self.lock_ops();
            let (size_gib, device) = {
                let st = self.read();
                let v = st.volume(&req.volume_id)?;
                // In-use volumes may be snapshotted (Cinder 3.66+ needs no `force` for that);
                // the copy is crash-consistent, like a Cinder snapshot of an attached disk.
                model::snapshot(&PROFILE, &v.to_volume(), req.force).map_err(refused)?;
                let dev = v.attachments.first().map(|a| PathBuf::from(&a.device));
                (v.size_gib, dev)
            };
            let id = uuid::Uuid::new_v4().to_string();
            let rec = CopyRecord {
                metadata: req.metadata.clone(),
                ..CopyRecord::creating(id, &req.name, &req.description, &req.volume_id, size_gib)
            };
            self.put_copy(Kind::Snapshot, rec.clone())?;
            (rec, device)
        };
        let result = data::create(
            &self.layout,
            Kind::Snapshot,
            &rec.id,
            Some(Source {
                file: &self.layout.data(Kind::Volume, &rec.volume_id),
                device: device.as_deref(),
            }),
            0,
        );
        let rec = self.finish_copy(CopyKind::Snapshot, &rec.id, result)?;
        Ok(rec.to_copy(CopyKind::Snapshot))
    }
}
