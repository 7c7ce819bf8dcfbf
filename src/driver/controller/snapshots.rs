//! CreateSnapshot (plain snapshots and the backup state machine).
//!
//! CreateSnapshot returns as soon as Cinder has the snapshot (`ready_to_use=false` while it
//! is `creating`) and the snapshotter polls by calling it again (upstream blocked ~21 s and
//! always said ready). `type: backup` is a state machine driven by those repeated calls, each
//! step idempotent: temporary snapshot (named like the backup, tagged [`BACKUP_SOURCE_KEY`])
//! → wait until it is cut → backup from it → once the backup is available, delete the
//! temporary snapshot. The CSI snapshot id of a backup is the backup id.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use super::params::{SnapshotKind, BACKUP_BASE_SECONDS, BACKUP_SOURCE_KEY, CLUSTER_KEY};
use super::waits::wait_deadline;
use super::{Controller, CreateSnapshot, SnapshotInfo};
use crate::cloud::{
    Cloud, CloudError, CopyFilter, CopyKind, CopyStatus, CopyWait, NewBackup, NewSnapshot,
    PageRequest, Resource, VolumeCopy, GIB,
};
use crate::driver::{Cleanup, Error, Failure, Mismatch, Named, Refusal, Result};

/// Bound of the set of backups whose temporary snapshot is known to be gone.
pub(super) const MAX_CLEANED_BACKUPS: usize = 4096;

/// Description Cinder shows for snapshots and backups we create.
pub const SNAPSHOT_DESCRIPTION: &str = "Created by OpenStack Cinder CSI driver";

/// A snapshot or a backup as CSI sees it.
pub(super) fn copy_info(c: &VolumeCopy) -> SnapshotInfo {
    SnapshotInfo {
        id: c.id.clone(),
        source_volume_id: c.volume_id.clone(),
        size_bytes: c.size_gib * GIB,
        created_at: c.created_at.unwrap_or(SystemTime::UNIX_EPOCH),
        ready_to_use: c.status == CopyStatus::Available,
        group_snapshot_id: c.group_snapshot_id.clone(),
    }
}

/// A snapshot a backup is being taken from (never a CSI snapshot of its own).
pub(super) fn is_temporary(c: &VolumeCopy) -> bool {
    c.kind == CopyKind::Snapshot && c.metadata.contains_key(BACKUP_SOURCE_KEY)
}

/// Snapshots and backups a listing shows: made (or being made) and not on their way out.
pub(super) fn listable(c: &VolumeCopy) -> bool {
    !is_temporary(c) && !c.status.is_error() && c.status != CopyStatus::Deleting
}

fn one_named(what: Named, name: &str, mut found: Vec<VolumeCopy>) -> Result<Option<VolumeCopy>> {
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        _ => Err(Refusal::SameName {
            what,
            name: name.to_string(),
            ids: found.into_iter().map(|c| c.id).collect(),
        }
        .into()),
    }
}

/// A snapshot or backup of ours that went into an error state, and what became of it.
fn failed(c: &VolumeCopy, cleanup: Cleanup) -> Error {
    Failure::Copy {
        kind: c.kind,
        id: c.id.clone(),
        name: c.name.clone(),
        volume_id: c.volume_id.clone(),
        status: c.status.clone(),
        cleanup,
    }
    .into()
}

impl Controller {
    fn snapshot_metadata(&self, req: &CreateSnapshot) -> BTreeMap<String, String> {
        let mut m = req.params.k8s_metadata.clone();
        m.insert(CLUSTER_KEY.to_string(), self.opts.cluster.clone());
        m
    }

    pub async fn create_snapshot(&self, req: CreateSnapshot) -> Result<SnapshotInfo> {
        super::validate::name(Resource::Snapshot, &req.name)?;
        let cloud = self.cloud(&req.cloud)?;
        match req.params.kind {
            SnapshotKind::Snapshot => self.create_plain_snapshot(cloud, &req).await,
            SnapshotKind::Backup => self.create_backup(cloud, &req).await,
        }
    }

    /// The snapshots or backups named `name` that are not being deleted.
    async fn copies_named(
        &self,
        cloud: &Cloud,
        kind: CopyKind,
        name: &str,
    ) -> Result<Vec<VolumeCopy>> {
        let filter = CopyFilter {
            name: Some(name.to_string()),
            ..Default::default()
        };
        Ok(cloud
            .copies
            .list_copies(kind, &filter, &PageRequest::default())
            .await?
            .items
            .into_iter()
            .filter(|c| c.name == name && c.status != CopyStatus::Deleting)
            .collect())
    }

    async fn new_snapshot(&self, cloud: &Cloud, new: &NewSnapshot) -> Result<VolumeCopy> {
        cloud
            .copies
            .create_snapshot(new)
            .await
            .map_err(|e| match e {
                CloudError::NotFound { .. } => Error::VolumeNotFound {
                    id: new.volume_id.clone(),
                },
                CloudError::Conflict { message, .. } if !new.force => {
                    Refusal::SnapshotNeedsForce { message }.into()
                }
                other => Error::Cloud(other),
            })
    }

    async fn create_plain_snapshot(
        &self,
        cloud: &Cloud,
        req: &CreateSnapshot,
    ) -> Result<SnapshotInfo> {
        let found: Vec<VolumeCopy> = self
            .copies_named(cloud, CopyKind::Snapshot, &req.name)
            .await?
            .into_iter()
            .filter(|s| !is_temporary(s))
            .collect();
        if let Some(s) = one_named(Named::Snapshot, &req.name, found)? {
            if s.volume_id != req.source_volume_id {
                return Err(Mismatch::CopyOfOther {
                    kind: CopyKind::Snapshot,
                    name: req.name.clone(),
                    id: s.id,
                    of: s.volume_id,
                    wanted: req.source_volume_id.clone(),
                }
                .into());
            }
            if s.status.is_error() {
                return Err(self.drop_failed_snapshot(cloud, &s).await);
            }
            return Ok(copy_info(&s));
        }
        let s = self
            .new_snapshot(
                cloud,
                &NewSnapshot {
                    name: req.name.clone(),
                    volume_id: req.source_volume_id.clone(),
                    description: Some(SNAPSHOT_DESCRIPTION.to_string()),
                    force: req.params.force,
                    metadata: self.snapshot_metadata(req),
                },
            )
            .await?;
        Ok(copy_info(&s))
    }

    /// A snapshot in an error state is deleted so a retried CreateSnapshot starts afresh.
    async fn drop_failed_snapshot(&self, cloud: &Cloud, s: &VolumeCopy) -> Error {
        let cleanup = match cloud.copies.delete_copy(CopyKind::Snapshot, &s.id).await {
            Ok(()) | Err(CloudError::NotFound { .. }) => Cleanup::Deleted,
            Err(e) => Cleanup::DeleteFailed(Box::new(e)),
        };
        failed(s, cleanup)
    }

    async fn create_backup(&self, cloud: &Cloud, req: &CreateSnapshot) -> Result<SnapshotInfo> {
        let copies = &cloud.copies;
        let found = self
            .copies_named(cloud, CopyKind::Backup, &req.name)
            .await?;
        if let Some(b) = one_named(Named::Backup, &req.name, found)? {
            return self.backup_progress(cloud, req, b).await;
        }
        if !copies.backups_supported().await? {
            return Err(Refusal::NoBackupService.into());
        }
        // Step 1: the temporary snapshot the backup is taken from.
        let temp = self
            .copies_named(cloud, CopyKind::Snapshot, &req.name)
            .await?
            .into_iter()
            .filter(is_temporary)
            .collect();
        let temp = match one_named(Named::TemporarySnapshot, &req.name, temp)? {
            Some(s) if s.volume_id != req.source_volume_id => {
                return Err(Mismatch::BackupOfOther {
                    name: req.name.clone(),
                    of: s.volume_id,
                    wanted: req.source_volume_id.clone(),
                }
                .into())
            }
            Some(s) if s.status.is_error() => {
                return Err(self.drop_failed_snapshot(cloud, &s).await)
            }
            Some(s) => s,
            None => {
                let mut metadata = self.snapshot_metadata(req);
                metadata.insert(BACKUP_SOURCE_KEY.to_string(), req.name.clone());
                self.new_snapshot(
                    cloud,
                    &NewSnapshot {
                        name: req.name.clone(),
                        volume_id: req.source_volume_id.clone(),
                        description: Some(format!(
                            "Temporary source of backup {:?}; deleted when the backup is done",
                            req.name
                        )),
                        force: req.params.force,
                        metadata,
                    },
                )
                .await?
            }
        };
        // Step 2: the snapshot must be cut (available) before Cinder backs it up. This is the
        // part CreateSnapshot must block for; a timeout is Aborted and the retry resumes here.
        let temp = if temp.status == CopyStatus::Available {
            temp
        } else {
            let deadline = wait_deadline(req.deadline);
            match copies
                .wait_copy(CopyKind::Snapshot, &temp.id, &CopyWait::Available, deadline)
                .await
            {
                Ok(s) => s,
                Err(CloudError::ErrorState { .. }) => {
                    let mut failed = temp.clone();
                    failed.status = CopyStatus::Error;
                    return Err(self.drop_failed_snapshot(cloud, &failed).await);
                }
                Err(e) => return Err(e.into()),
            }
        };
        // Step 3: the backup.
        let b = copies
            .create_backup(&NewBackup {
                name: req.name.clone(),
                volume_id: req.source_volume_id.clone(),
                snapshot_id: Some(temp.id.clone()),
                description: Some(SNAPSHOT_DESCRIPTION.to_string()),
                force: req.params.force,
                availability_zone: req.params.availability.clone(),
                metadata: self.snapshot_metadata(req),
            })
            .await
            .map_err(|e| match e {
                CloudError::Unsupported(why) => Refusal::BackupsUnsupported { why }.into(),
                other => Error::Cloud(other),
            })?;
        self.backup_progress(cloud, req, b).await
    }

    /// Step 4 and the answer for an existing backup: ready when available (and then the
    /// temporary snapshot goes), an error when it failed or is stuck.
    async fn backup_progress(
        &self,
        cloud: &Cloud,
        req: &CreateSnapshot,
        b: VolumeCopy,
    ) -> Result<SnapshotInfo> {
        if b.volume_id != req.source_volume_id {
            return Err(Mismatch::CopyOfOther {
                kind: CopyKind::Backup,
                name: req.name.clone(),
                id: b.id,
                of: b.volume_id,
                wanted: req.source_volume_id.clone(),
            }
            .into());
        }
        if b.status.is_error() {
            let cleanup = match cloud.copies.delete_copy(CopyKind::Backup, &b.id).await {
                Ok(()) | Err(CloudError::NotFound { .. }) => Cleanup::Deleted,
                Err(e) => Cleanup::DeleteFailed(Box::new(e)),
            };
            self.drop_temporary(cloud, &b).await;
            return Err(failed(&b, cleanup));
        }
        if b.status == CopyStatus::Available {
            self.drop_temporary(cloud, &b).await;
        } else if let Some(created) = b.created_at {
            let bound = Duration::from_secs(
                req.params
                    .backup_seconds_per_gib
                    .saturating_mul(b.size_gib)
                    .saturating_add(BACKUP_BASE_SECONDS),
            );
            let age = SystemTime::now()
                .duration_since(created)
                .unwrap_or_default();
            if age > bound {
                return Err(Failure::BackupStuck {
                    id: b.id,
                    status: b.status,
                    age_secs: age.as_secs(),
                    bound_secs: bound.as_secs(),
                    secs_per_gib: req.params.backup_seconds_per_gib,
                    size_gib: b.size_gib,
                }
                .into());
            }
        }
        Ok(copy_info(&b))
    }

    /// Delete the temporary snapshot of a finished backup, once. Failures only delay it to
    /// the next CreateSnapshot/ListSnapshots/DeleteSnapshot that sees the backup.
    pub(super) async fn drop_temporary(&self, cloud: &Cloud, b: &VolumeCopy) {
        let Some(sid) = b.snapshot_id.as_deref() else {
            return;
        };
        if self.cleaned().contains(&b.id) {
            return;
        }
        let copies = &cloud.copies;
        let gone = match copies.get_copy(CopyKind::Snapshot, sid).await {
            Err(CloudError::NotFound { .. }) => true,
            Ok(s) if !is_temporary(&s) => true,
            Ok(s) if s.status == CopyStatus::Deleting => true,
            Ok(_) => match copies.delete_copy(CopyKind::Snapshot, sid).await {
                Ok(()) | Err(CloudError::NotFound { .. }) => true,
                Err(e) => {
                    tracing::warn!(backup = %b.id, snapshot = sid, error = %e,
                        "cannot delete the temporary snapshot of a backup yet");
                    false
                }
            },
            Err(e) => {
                tracing::warn!(backup = %b.id, snapshot = sid, error = %e,
                    "cannot look up the temporary snapshot of a backup");
                false
            }
        };
        if gone {
            let mut cleaned = self.cleaned();
            if cleaned.len() >= MAX_CLEANED_BACKUPS {
                // Only a cache of lookups saved: forgetting costs one GET per backup listed.
                cleaned.clear();
            }
            cleaned.insert(b.id.clone());
        }
    }

    /// A deleted backup leaves the cache (which stays bounded either way).
    pub(super) fn forget_cleaned(&self, backup_id: &str) {
        self.cleaned().remove(backup_id);
    }

    #[cfg(test)]
    pub(super) fn cleaned_len(&self) -> usize {
        self.cleaned().len()
    }

    fn cleaned(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.cleaned_backups
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}
