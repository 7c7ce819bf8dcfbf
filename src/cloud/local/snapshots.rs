//! Snapshots: sparse copies of a volume's file under `snapshots/`.

use std::path::PathBuf;

use super::backend::{conflict, Inner};
use super::data::{self, Source};
use super::paging::paginate;
use super::records::{self, CopyRecord, RECORD_VERSION};
use super::store::Kind;
use crate::cloud::{
    CloudError, CloudResult, NewSnapshot, Page, PageRequest, Resource, Snapshot, SnapshotFilter,
    SnapshotStatus, VolumeStatus,
};

fn not_found(id: &str) -> CloudError {
    CloudError::not_found(Resource::Snapshot, id)
}

impl Inner {
    pub(super) fn get_snapshot(&self, id: &str) -> CloudResult<Snapshot> {
        self.read()
            .snapshots
            .get(id)
            .map(CopyRecord::to_snapshot)
            .ok_or_else(|| not_found(id))
    }

    pub(super) fn list_snapshots(
        &self,
        filter: &SnapshotFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Snapshot>> {
        let items = self
            .read()
            .snapshots
            .values()
            .filter(|s| filter.name.as_ref().is_none_or(|n| &s.name == n))
            .filter(|s| filter.volume_id.as_ref().is_none_or(|v| &s.volume_id == v))
            .map(|s| (s.created_at_ms, s.id.clone(), s.to_snapshot()))
            .collect();
        paginate(items, page)
    }

    pub(super) fn create_snapshot(&self, req: &NewSnapshot) -> CloudResult<Snapshot> {
        let (rec, device) = {
            let _ops = self.lock_ops();
            let (size_gib, device) = {
                let st = self.read();
                let v = st
                    .volumes
                    .get(&req.volume_id)
                    .ok_or_else(|| CloudError::not_found(Resource::Volume, &req.volume_id))?;
                // In-use volumes may be snapshotted (Cinder 3.66+ needs no `force` for that);
                // the copy is crash-consistent, like a Cinder snapshot of an attached disk.
                if !matches!(v.status(), VolumeStatus::Available | VolumeStatus::InUse) {
                    return Err(conflict(format!(
                        "volume {} must be available or in-use to be snapshotted, it is {}",
                        req.volume_id, v.status
                    )));
                }
                let dev = v.attachments.first().map(|a| PathBuf::from(&a.device));
                (v.size_gib, dev)
            };
            let rec = CopyRecord {
                version: RECORD_VERSION,
                id: uuid::Uuid::new_v4().to_string(),
                name: req.name.clone(),
                description: req.description.clone(),
                volume_id: req.volume_id.clone(),
                snapshot_id: None,
                size_gib,
                status: SnapshotStatus::Creating.as_str().to_string(),
                error_reason: None,
                metadata: req.metadata.clone(),
                created_at_ms: records::now_ms(),
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
        let rec = self.finish_copy(Kind::Snapshot, &rec.id, result)?;
        Ok(rec.to_snapshot())
    }

    /// Mark a copy `available` (with its real size) or `error`. Takes `ops`.
    pub(super) fn finish_copy(
        &self,
        kind: Kind,
        id: &str,
        result: std::io::Result<u64>,
    ) -> CloudResult<CopyRecord> {
        let _ops = self.lock_ops();
        let current = {
            let st = self.read();
            match kind {
                Kind::Snapshot => st.snapshots.get(id).cloned(),
                Kind::Backup => st.backups.get(id).cloned(),
                Kind::Volume => None,
            }
        };
        let mut rec = current.ok_or_else(|| io_missing(kind, id))?;
        match result {
            Ok(len) => {
                rec.size_gib = data::gib_of(len);
                rec.status = "available".into();
            }
            Err(e) => {
                tracing::warn!(id, error = %e, "copy failed");
                rec.status = "error".into();
                rec.error_reason = Some(format!("cannot copy the volume's data: {e}"));
            }
        }
        self.put_copy(kind, rec.clone())?;
        Ok(rec)
    }

    pub(super) fn delete_snapshot(&self, id: &str) -> CloudResult<()> {
        let _ops = self.lock_ops();
        let mut rec = {
            let st = self.read();
            let s = st.snapshots.get(id).ok_or_else(|| not_found(id))?;
            if s.is_creating() {
                return Err(conflict(format!("snapshot {id} is still being created")));
            }
            let restoring = st.volumes.values().any(|v| {
                v.snapshot_id.as_deref() == Some(id) && v.status() == VolumeStatus::Creating
            }) || st
                .backups
                .values()
                .any(|b| b.snapshot_id.as_deref() == Some(id) && b.is_creating());
            if restoring {
                return Err(conflict(format!(
                    "snapshot {id} is being copied (a restore or backup is in progress)"
                )));
            }
            s.clone()
        };
        rec.status = SnapshotStatus::Deleting.as_str().to_string();
        self.put_copy(Kind::Snapshot, rec)?;
        self.drop_object(Kind::Snapshot, id)
    }
}

fn io_missing(kind: Kind, id: &str) -> CloudError {
    CloudError::Internal(format!(
        "{kind:?} {id} disappeared while its data was being written"
    ))
}
