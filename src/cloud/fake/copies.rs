//! `Copies` on the fake: Cinder's rules for snapshots and backups.

use std::time::SystemTime;

use async_trait::async_trait;
use tokio::time::Instant;

use super::rules::{refused, PROFILE};
use super::state::{paginate, FakeCopy, ObjAction, State};
use super::FakeCloud;
use crate::cloud::model;
use crate::cloud::poll::Look;
use crate::cloud::{
    CloudError, CloudResult, Copies, CopyFilter, CopyKind, CopyOps, CopyStatus, CopyWait,
    NewBackup, NewSnapshot, Op, Page, PageRequest, VolumeCopy,
};

#[async_trait]
impl Copies for FakeCloud {
    async fn create_snapshot(&self, req: &NewSnapshot) -> CloudResult<VolumeCopy> {
        self.lock().create_snapshot(req)
    }

    async fn backups_supported(&self) -> CloudResult<bool> {
        let mut s = self.lock();
        s.enter(Op::BackupList)?;
        Ok(s.backups_supported)
    }

    async fn create_backup(&self, req: &NewBackup) -> CloudResult<VolumeCopy> {
        self.lock().create_backup(req)
    }

    async fn get_copy(&self, kind: CopyKind, id: &str) -> CloudResult<VolumeCopy> {
        let mut s = self.lock();
        s.enter(CopyOps::of(kind).get)?;
        s.copy(kind, id)
    }

    async fn list_copies(
        &self,
        kind: CopyKind,
        filter: &CopyFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<VolumeCopy>> {
        let mut s = self.lock();
        s.enter(CopyOps::of(kind).list)?;
        let ids: Vec<String> = s.sorted_copies(kind).iter().map(|x| x.id.clone()).collect();
        let mut items = Vec::new();
        for id in &ids {
            if let Some(x) = s.observe_copy(kind, id) {
                if filter.name.as_ref().is_none_or(|n| &x.name == n)
                    && filter.volume_id.as_ref().is_none_or(|v| &x.volume_id == v)
                {
                    items.push((id.clone(), x));
                }
            }
        }
        paginate(items, &ids, page)
    }

    async fn delete_copy(&self, kind: CopyKind, id: &str) -> CloudResult<()> {
        let mut s = self.lock();
        s.enter(CopyOps::of(kind).delete)?;
        s.delete_copy(kind, id)
    }

    /// Counted as one read of the copy, however many looks it takes.
    async fn wait_copy(
        &self,
        kind: CopyKind,
        id: &str,
        until: &CopyWait,
        deadline: Instant,
    ) -> CloudResult<VolumeCopy> {
        self.enter(CopyOps::of(kind).get)?;
        self.wait_until(kind.resource(), id, until.wanted(), deadline, |s| {
            let c = s.copy(kind, id)?;
            let (verdict, status) = (until.verdict(&c), c.status.clone());
            Look::judged(verdict, c, status)
        })
        .await
    }
}

impl State {
    fn create_snapshot(&mut self, req: &NewSnapshot) -> CloudResult<VolumeCopy> {
        self.enter(Op::SnapshotCreate)?;
        let v = self.volume(&req.volume_id)?;
        model::snapshot(&PROFILE, &v, req.force).map_err(refused)?;
        let id = self.new_id("snapshot");
        let error = if self.failing_snapshot_creations > 0 {
            self.failing_snapshot_creations -= 1;
            true
        } else {
            false
        };
        let snapshot = VolumeCopy {
            kind: CopyKind::Snapshot,
            id,
            name: req.name.clone(),
            volume_id: req.volume_id.clone(),
            snapshot_id: None,
            size_gib: v.size_gib,
            status: CopyStatus::Creating,
            availability_zone: None,
            created_at: Some(SystemTime::now()),
            metadata: req.metadata.clone(),
            fail_reason: None,
            group_snapshot_id: None,
        };
        Ok(self.insert_copy(snapshot, error))
    }

    fn create_backup(&mut self, req: &NewBackup) -> CloudResult<VolumeCopy> {
        self.enter(Op::BackupCreate)?;
        if !self.backups_supported {
            return Err(CloudError::Unsupported(
                "the backup service is not enabled".into(),
            ));
        }
        let v = self.volume(&req.volume_id)?;
        match &req.snapshot_id {
            Some(sid) => {
                let snap = self.copy(CopyKind::Snapshot, sid)?;
                model::backup_from_snapshot(&req.volume_id, &snap).map_err(refused)?;
            }
            None => model::backup_volume(&v, req.force).map_err(refused)?,
        }
        let id = self.new_id("backup");
        let error = if self.failing_backup_creations > 0 {
            self.failing_backup_creations -= 1;
            true
        } else {
            false
        };
        let backup = VolumeCopy {
            kind: CopyKind::Backup,
            id,
            name: req.name.clone(),
            volume_id: req.volume_id.clone(),
            snapshot_id: req.snapshot_id.clone(),
            size_gib: v.size_gib,
            status: CopyStatus::Creating,
            availability_zone: req
                .availability_zone
                .clone()
                .or(Some(v.availability_zone.clone())),
            created_at: Some(SystemTime::now()),
            metadata: req.metadata.clone(),
            fail_reason: None,
            group_snapshot_id: None,
        };
        Ok(self.insert_copy(backup, error))
    }

    fn delete_copy(&mut self, kind: CopyKind, id: &str) -> CloudResult<()> {
        let c = self.copy(kind, id)?;
        let uses = self.copy_uses(kind, id);
        model::delete_copy(&PROFILE, &c, uses).map_err(refused)?;
        self.start_deleting(kind, id);
        Ok(())
    }

    /// A new copy, `creating` until it settles (in `error` when `error`).
    fn insert_copy(&mut self, copy: VolumeCopy, error: bool) -> VolumeCopy {
        let pending = self.pending(ObjAction::Created { error });
        let seq = self.seq;
        let fake = FakeCopy {
            seq,
            copy: copy.clone(),
            pending,
        };
        self.copies_mut(copy.kind).insert(copy.id.clone(), fake);
        copy
    }

    fn start_deleting(&mut self, kind: CopyKind, id: &str) {
        let pending = self.pending(ObjAction::Deleted);
        if let Some(f) = self.copies_mut(kind).get_mut(id) {
            f.copy.status = CopyStatus::Deleting;
            f.pending = pending;
        }
    }
}
