//! Cinder snapshots and backups. Reading, listing (name / volume filters, pagination),
//! deleting and waiting differ only in the API path and the request labels. Making one
//! differs: a snapshot takes `force` for in-use volumes; a backup may come from a snapshot,
//! carries metadata from 3.43 and an AZ from 3.51, and its create answers only the id.
//! Restoring a backup is a volume create with `backup_id` (volumes.rs, 3.47).

use async_trait::async_trait;
use http::Method;
use serde_json::{json, Map};
use tokio::time::Instant;

use super::api::{list_cinder, CallError, Request};
use super::dto::{has_next, BackupCreated, CopyEnvelope, CopyList};
use super::ids::segment;
use super::microversion::{CINDER_BACKUP_AZ, CINDER_BACKUP_METADATA};
use super::watcher::PACE;
use super::OpenStack;
use crate::cloud::poll::{poll, Look};
use crate::cloud::{
    CloudError, CloudResult, Copies, CopyFilter, CopyKind, CopyOps, CopyWait, NewBackup,
    NewSnapshot, Op, Page, PageRequest, Resource, VolumeCopy,
};

/// Where Cinder keeps one kind of copy.
fn path(kind: CopyKind) -> &'static str {
    match kind {
        CopyKind::Snapshot => "snapshots",
        CopyKind::Backup => "backups",
    }
}

#[async_trait]
impl Copies for OpenStack {
    async fn create_snapshot(&self, req: &NewSnapshot) -> CloudResult<VolumeCopy> {
        let mut snap = Map::new();
        snap.insert("volume_id".into(), json!(req.volume_id));
        snap.insert("name".into(), json!(req.name));
        if let Some(d) = &req.description {
            snap.insert("description".into(), json!(d));
        }
        if !req.metadata.is_empty() {
            snap.insert("metadata".into(), json!(req.metadata));
        }
        // Only ever send `force: true`: from 3.66 on, `false` is rejected and `true` ignored.
        if req.force {
            snap.insert("force".into(), json!(true));
        }
        let ans = self
            .api
            .cinder(
                Request::new(Op::SnapshotCreate, Method::POST, "snapshots")
                    .json(json!({ "snapshot": snap })),
            )
            .await
            // The only thing a snapshot create names is its volume.
            .map_err(|e| e.into_cloud(Resource::Volume, &req.volume_id))?;
        let env: CopyEnvelope = ans
            .json(Op::SnapshotCreate)
            .map_err(|e| e.into_cloud(Resource::Snapshot, &req.name))?;
        Ok(env.copy.into_copy(CopyKind::Snapshot))
    }

    /// Cinder shows non-admins no service list, so "supported" means the backup API answers
    /// and policy lets us use it; a cloud without a cinder-backup service fails the create
    /// with Unsupported.
    async fn backups_supported(&self) -> CloudResult<bool> {
        match self
            .api
            .cinder(Request::get(Op::BackupList, "backups").query("limit", "1"))
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if matches!(e.status(), Some(403 | 404)) => Ok(false),
            Err(e) => Err(e.into_cloud(Resource::Backup, "(list)")),
        }
    }

    async fn create_backup(&self, req: &NewBackup) -> CloudResult<VolumeCopy> {
        let v = self.api.cinder_version().await?;
        let mut b = Map::new();
        b.insert("volume_id".into(), json!(req.volume_id));
        b.insert("name".into(), json!(req.name));
        if let Some(s) = &req.snapshot_id {
            b.insert("snapshot_id".into(), json!(s));
        }
        if let Some(d) = &req.description {
            b.insert("description".into(), json!(d));
        }
        if req.force {
            b.insert("force".into(), json!(true));
        }
        if !req.metadata.is_empty() {
            if v.supports(CINDER_BACKUP_METADATA) {
                b.insert("metadata".into(), json!(req.metadata));
            } else {
                // Metadata only labels the backup; losing it beats refusing the backup.
                tracing::warn!(
                    backup = %req.name,
                    "this cloud's Cinder is below microversion 3.43: backup metadata dropped"
                );
            }
        }
        if let Some(az) = &req.availability_zone {
            v.require(CINDER_BACKUP_AZ, "a backup in a chosen availability zone")
                .map_err(CloudError::Unsupported)?;
            b.insert("availability_zone".into(), json!(az));
        }
        let ans = self
            .api
            .cinder(
                Request::new(Op::BackupCreate, Method::POST, "backups")
                    .json(json!({ "backup": b })),
            )
            .await
            .map_err(|e| backup_create_error(e, req))?;
        // Cinder answers a create with the id, name and links only: read the rest.
        let created: BackupCreated = ans
            .json(Op::BackupCreate)
            .map_err(|e| e.into_cloud(Resource::Backup, &req.name))?;
        self.get_copy(CopyKind::Backup, &created.backup.id).await
    }

    async fn get_copy(&self, kind: CopyKind, id: &str) -> CloudResult<VolumeCopy> {
        let (op, resource) = (CopyOps::of(kind).get, kind.resource());
        let ans = self
            .api
            .cinder(Request::get(
                op,
                format!("{}/{}", path(kind), segment(resource, id)?),
            ))
            .await
            .map_err(|e| e.into_cloud(resource, id))?;
        let env: CopyEnvelope = ans.json(op).map_err(|e| e.into_cloud(resource, id))?;
        Ok(env.copy.into_copy(kind))
    }

    async fn list_copies(
        &self,
        kind: CopyKind,
        filter: &CopyFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<VolumeCopy>> {
        let req = Request::get(CopyOps::of(kind).list, format!("{}/detail", path(kind)))
            .query_opt("name", filter.name.clone())
            .query_opt("volume_id", filter.volume_id.clone());
        let page = list_cinder(
            &self.api,
            req,
            page,
            kind.resource(),
            |l: CopyList| {
                let more = has_next(&l.links);
                (l.copies, more)
            },
            |c| c.id.clone(),
        )
        .await?;
        Ok(Page {
            next_marker: page.next_marker,
            items: page.items.into_iter().map(|c| c.into_copy(kind)).collect(),
        })
    }

    async fn delete_copy(&self, kind: CopyKind, id: &str) -> CloudResult<()> {
        let resource = kind.resource();
        self.api
            .cinder(Request::new(
                CopyOps::of(kind).delete,
                Method::DELETE,
                format!("{}/{}", path(kind), segment(resource, id)?),
            ))
            .await
            .map(|_| ())
            .map_err(|e| e.into_cloud(resource, id))
    }

    async fn wait_copy(
        &self,
        kind: CopyKind,
        id: &str,
        until: &CopyWait,
        deadline: Instant,
    ) -> CloudResult<VolumeCopy> {
        poll(
            kind.resource(),
            id,
            until.wanted(),
            deadline,
            PACE,
            || async move {
                match self.get_copy(kind, id).await {
                    Ok(c) => {
                        let (verdict, status) = (until.verdict(&c), c.status.clone());
                        Look::judged(verdict, c, status)
                    }
                    // A passing outage keeps the wait going; `NotFound` ends it (for `Deleted`,
                    // that is success).
                    Err(e @ CloudError::Unavailable { .. }) => {
                        Ok(Look::Pending(format!("unknown (then: {e})")))
                    }
                    Err(e) => Err(e),
                }
            },
        )
        .await
    }
}

/// 404s on a backup create: no backup service, or the volume / snapshot named.
fn backup_create_error(e: CallError, req: &NewBackup) -> CloudError {
    let msg = e.message().to_lowercase();
    if msg.contains("cinder-backup") || msg.contains("backup service") {
        return CloudError::Unsupported(format!(
            "this cloud runs no cinder-backup service: {}",
            e.message()
        ));
    }
    match (&req.snapshot_id, e.status()) {
        (Some(s), Some(404)) if msg.contains("snapshot") => {
            CloudError::not_found(Resource::Snapshot, s)
        }
        _ => e.into_cloud(Resource::Volume, &req.volume_id),
    }
}
