//! Snapshots and backups: sparse copies of a volume's file, kept under `snapshots/` and
//! `backups/`. Reading, listing, waiting and deleting are the same for both (deleting by its
//! kind's rule); making one differs (snapshots.rs, backups.rs). Mutations run on the blocking
//! pool.

use async_trait::async_trait;
use tokio::time::Instant;

use super::backend::{Inner, LocalCloud, PACE};
use super::data;
use super::paging::paginate;
use super::records::CopyRecord;
use super::rules::{refused, PROFILE};
use super::store::Kind;
use crate::cloud::model;
use crate::cloud::poll::{poll, Look};
use crate::cloud::{
    CloudError, CloudResult, Copies, CopyFilter, CopyKind, CopyStatus, CopyWait, NewBackup,
    NewSnapshot, Page, PageRequest, VolumeCopy,
};

#[async_trait]
impl Copies for LocalCloud {
    async fn create_snapshot(&self, req: &NewSnapshot) -> CloudResult<VolumeCopy> {
        let req = req.clone();
        self.blocking(move |inner| inner.create_snapshot(&req))
            .await
    }

    async fn backups_supported(&self) -> CloudResult<bool> {
        self.inner()?;
        Ok(true)
    }

    async fn create_backup(&self, req: &NewBackup) -> CloudResult<VolumeCopy> {
        let req = req.clone();
        self.blocking(move |inner| inner.create_backup(&req)).await
    }

    async fn get_copy(&self, kind: CopyKind, id: &str) -> CloudResult<VolumeCopy> {
        Ok(self.inner()?.read().copy(kind, id)?.to_copy(kind))
    }

    async fn list_copies(
        &self,
        kind: CopyKind,
        filter: &CopyFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<VolumeCopy>> {
        let items = self
            .inner()?
            .read()
            .copies(kind)
            .values()
            .filter(|c| filter.name.as_ref().is_none_or(|n| &c.name == n))
            .filter(|c| filter.volume_id.as_ref().is_none_or(|v| &c.volume_id == v))
            .map(|c| (c.created_at_ms, c.id.clone(), c.to_copy(kind)))
            .collect();
        paginate(items, page)
    }

    async fn delete_copy(&self, kind: CopyKind, id: &str) -> CloudResult<()> {
        let id = id.to_string();
        self.blocking(move |inner| inner.delete_copy(kind, &id))
            .await
    }

    async fn wait_copy(
        &self,
        kind: CopyKind,
        id: &str,
        until: &CopyWait,
        deadline: Instant,
    ) -> CloudResult<VolumeCopy> {
        // Gone (`NotFound`): what a `Deleted` wait waits for, and the end of any other.
        poll(
            kind.resource(),
            id,
            until.wanted(),
            deadline,
            PACE,
            || async move {
                let c = self.get_copy(kind, id).await?;
                let (verdict, status) = (until.verdict(&c), c.status.clone());
                Look::judged(verdict, c, status)
            },
        )
        .await
    }
}

impl Inner {
    /// Delete a snapshot or a backup: marked `deleting` first, so a crash half way leaves
    /// what another delete finishes.
    pub(super) fn delete_copy(&self, kind: CopyKind, id: &str) -> CloudResult<()> {
        let _ops = self.lock_ops();
        let mut rec = {
            let st = self.read();
            let c = st.copy(kind, id)?;
            let uses = st.copy_uses(kind, id);
            model::delete_copy(&PROFILE, &c.to_copy(kind), uses).map_err(refused)?;
            c.clone()
        };
        rec.status = CopyStatus::Deleting.as_str().to_string();
        self.put_copy(Kind::from(kind), rec)?;
        self.drop_object(Kind::from(kind), id)
    }

    /// Mark a copy `available` (with its real size) or `error`. Takes `ops`.
    pub(super) fn finish_copy(
        &self,
        kind: CopyKind,
        id: &str,
        result: std::io::Result<u64>,
    ) -> CloudResult<CopyRecord> {
        let _ops = self.lock_ops();
        let current = self.read().copies(kind).get(id).cloned();
        let mut rec = current.ok_or_else(|| {
            CloudError::Internal(format!(
                "{kind:?} {id} disappeared while its data was being written"
            ))
        })?;
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
        self.put_copy(Kind::from(kind), rec.clone())?;
        Ok(rec)
    }
}
