//! Cinder backups: create (from a volume or one of its snapshots, metadata with 3.43, AZ with
//! 3.51), get, list, delete and bounded waits. Restoring is a volume create with `backup_id`
//! (volumes.rs, 3.47).

use reqwest::Method;
use serde_json::{json, Map};
use tokio::time::Instant;

use super::api::{list_cinder, CallError, Request};
use super::dto::{has_next, BackupCreated, BackupEnvelope, BackupList};
use super::ids::segment;
use super::microversion::{CINDER_BACKUP_AZ, CINDER_BACKUP_METADATA};
use super::snapshots::transient;
use super::watcher::PACE;
use super::OpenStack;
use crate::cloud::poll::{poll, Look};
use crate::cloud::{
    Backup, BackupFilter, BackupStatus, BackupWait, CloudError, CloudResult, NewBackup, Op, Page,
    PageRequest, Resource,
};

impl OpenStack {
    /// Cinder shows non-admins no service list, so "supported" means the backup API answers
    /// and policy lets us use it; a cloud without a cinder-backup service fails the create
    /// with Unsupported.
    pub(super) async fn backups_supported_impl(&self) -> CloudResult<bool> {
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

    pub(super) async fn create_backup_impl(&self, req: &NewBackup) -> CloudResult<Backup> {
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
            .map_err(|e| create_error(e, req))?;
        // Cinder answers a create with the id, name and links only: read the rest.
        let created: BackupCreated = ans
            .json(Op::BackupCreate)
            .map_err(|e| e.into_cloud(Resource::Backup, &req.name))?;
        self.get_backup_impl(&created.backup.id).await
    }

    pub(super) async fn get_backup_impl(&self, id: &str) -> CloudResult<Backup> {
        Ok(self.get_backup_dto(id).await?.into())
    }

    async fn get_backup_dto(&self, id: &str) -> CloudResult<super::dto::BackupDto> {
        let ans = self
            .api
            .cinder(Request::get(
                Op::BackupGet,
                format!("backups/{}", segment(Resource::Backup, id)?),
            ))
            .await
            .map_err(|e| e.into_cloud(Resource::Backup, id))?;
        let env: BackupEnvelope = ans
            .json(Op::BackupGet)
            .map_err(|e| e.into_cloud(Resource::Backup, id))?;
        Ok(env.backup)
    }

    pub(super) async fn list_backups_impl(
        &self,
        filter: &BackupFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Backup>> {
        let req = Request::get(Op::BackupList, "backups/detail")
            .query_opt("name", filter.name.clone())
            .query_opt("volume_id", filter.volume_id.clone());
        let page = list_cinder(
            &self.api,
            req,
            page,
            Resource::Backup,
            |l: BackupList| {
                let more = has_next(&l.backups_links);
                (l.backups, more)
            },
            |b| b.id.clone(),
        )
        .await?;
        Ok(Page {
            next_marker: page.next_marker,
            items: page.items.into_iter().map(Backup::from).collect(),
        })
    }

    pub(super) async fn delete_backup_impl(&self, id: &str) -> CloudResult<()> {
        self.api
            .cinder(Request::new(
                Op::BackupDelete,
                Method::DELETE,
                format!("backups/{}", segment(Resource::Backup, id)?),
            ))
            .await
            .map(|_| ())
            .map_err(|e| e.into_cloud(Resource::Backup, id))
    }

    pub(super) async fn wait_backup_impl(
        &self,
        id: &str,
        until: &BackupWait,
        deadline: Instant,
    ) -> CloudResult<Backup> {
        let wanted = match until {
            BackupWait::Available => "available",
            BackupWait::Deleted => "deleted",
        };
        poll(
            Resource::Backup,
            id,
            wanted.into(),
            deadline,
            PACE,
            || async move {
                match (self.get_backup_dto(id).await, until) {
                    (Ok(d), _) if BackupStatus::parse(&d.status).is_error() => {
                        Err(CloudError::ErrorState {
                            resource: Resource::Backup,
                            id: d.id.clone(),
                            status: d.status.clone(),
                            reason: d.fail_reason.clone(),
                        })
                    }
                    (Ok(d), BackupWait::Available) if d.status == "available" => {
                        Ok(Look::Done(d.into()))
                    }
                    (Ok(d), _) => Ok(Look::Pending(d.status)),
                    (Err(e), _) => transient(e),
                }
            },
        )
        .await
    }
}

/// 404s on create: no backup service, or the volume / snapshot named.
fn create_error(e: CallError, req: &NewBackup) -> CloudError {
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
