//! DeleteVolume. Unknown volume → OK (CSI: "MUST reply 0 OK"); attached → FailedPrecondition;
//! a volume with snapshots → FailedPrecondition unless `cascade-delete` (CSI: snapshots that
//! are not independent of their volume make the volume "in use"). Waits until Cinder has
//! really deleted it, so quota is free and `error_deleting` is reported, not hidden. A volume
//! a group snapshot left in a Cinder group (which Cinder refuses to delete) leaves the group
//! first.

use tokio::time::Instant;

use super::waits::{wait_deadline, MAX_STATE_RETRIES};
use super::{Controller, DeleteVolume};
use crate::cloud::{
    Cloud, CloudError, CopyFilter, CopyKind, PageRequest, Volume, VolumeStatus, VolumeWait,
};
use crate::driver::{Error, Refusal, Result};

impl Controller {
    pub async fn delete_volume(&self, req: DeleteVolume) -> Result<()> {
        let cloud = self.cloud(&req.cloud)?;
        let deadline = wait_deadline(req.deadline);
        let id = req.volume_id.as_str();
        let volumes = &cloud.volumes;
        // DELETE first: Cinder itself refuses what we must refuse (attached, in use, in a
        // transition, with snapshots), and the GET that tells which is made only then; a
        // delete that goes through costs one request less.
        let message = match volumes
            .delete_volume(id, self.opts.block_storage.cascade_delete)
            .await
        {
            Ok(()) => return until_deleted(cloud, id, deadline).await,
            Err(CloudError::NotFound { .. }) => return Ok(()),
            Err(CloudError::Conflict { message, .. }) => message,
            Err(e) => return Err(e.into()),
        };
        let mut v = match volumes.get_volume(id).await {
            Ok(v) => v,
            Err(CloudError::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        if v.attachments.is_empty()
            && v.status != VolumeStatus::InUse
            && v.status != VolumeStatus::Deleting
            && !v.status.is_transitional()
        {
            return self.delete_refused(cloud, &v, &message, deadline).await;
        }
        for _ in 0..MAX_STATE_RETRIES {
            if !v.attachments.is_empty() || v.status == VolumeStatus::InUse {
                return Err(Refusal::Attached {
                    id: id.to_string(),
                    nodes: v.attachments.iter().map(|a| a.server_id.clone()).collect(),
                }
                .into());
            }
            if v.status == VolumeStatus::Deleting {
                return until_deleted(cloud, id, deadline).await;
            }
            if v.status.is_transitional() {
                // e.g. `detaching` right after an unpublish: Cinder refuses deletes until it
                // settles (upstream's 400 here, #2965).
                v = match volumes.wait_volume(id, &VolumeWait::Stable, deadline).await {
                    Ok(v) => v,
                    Err(CloudError::NotFound { .. }) => return Ok(()),
                    // A volume in an error state can be deleted.
                    Err(CloudError::ErrorState { .. }) => volumes.get_volume(id).await?,
                    Err(e) => return Err(e.into()),
                };
                continue;
            }
            match volumes
                .delete_volume(id, self.opts.block_storage.cascade_delete)
                .await
            {
                Ok(()) => return until_deleted(cloud, id, deadline).await,
                Err(CloudError::NotFound { .. }) => return Ok(()),
                Err(CloudError::Conflict { message, .. }) => {
                    v = match volumes.get_volume(id).await {
                        Ok(v) => v,
                        Err(CloudError::NotFound { .. }) => return Ok(()),
                        Err(e) => return Err(e.into()),
                    };
                    if v.status.is_transitional() || !v.attachments.is_empty() {
                        continue;
                    }
                    return self.delete_refused(cloud, &v, &message, deadline).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::KeptChanging {
            id: id.to_string(),
            status: v.status,
        })
    }

    /// Cinder refused to delete stable, detached volume `v`: its snapshots (FailedPrecondition
    /// naming them), or the group a group snapshot put it in, which it leaves (Cinder does not
    /// delete a volume in a group) before it is deleted again.
    async fn delete_refused(
        &self,
        cloud: &Cloud,
        v: &Volume,
        message: &str,
        deadline: Instant,
    ) -> Result<()> {
        let why = self.explain_refusal(cloud, &v.id, message).await;
        if v.group_id.is_none() || !matches!(why, Error::Refused(Refusal::DeleteRefused { .. })) {
            return Err(why);
        }
        tracing::info!(volume = %v.id, group = ?v.group_id,
            "the volume is in a group: taking it out before deleting it");
        cloud.groups.release_volume(v, deadline).await?;
        match cloud
            .volumes
            .delete_volume(&v.id, self.opts.block_storage.cascade_delete)
            .await
        {
            Ok(()) => until_deleted(cloud, &v.id, deadline).await,
            Err(CloudError::NotFound { .. }) => Ok(()),
            Err(CloudError::Conflict { message, .. }) => {
                Err(self.explain_refusal(cloud, &v.id, &message).await)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Cinder refused a delete of a stable, detached volume: almost always its snapshots.
    async fn explain_refusal(&self, cloud: &Cloud, id: &str, message: &str) -> Error {
        let filter = CopyFilter {
            volume_id: Some(id.to_string()),
            ..Default::default()
        };
        match cloud
            .copies
            .list_copies(CopyKind::Snapshot, &filter, &PageRequest::default())
            .await
        {
            Ok(page) if !page.items.is_empty() => Refusal::HasSnapshots {
                id: id.to_string(),
                snapshots: page.items.into_iter().map(|s| s.id).collect(),
            }
            .into(),
            _ => Refusal::DeleteRefused {
                id: id.to_string(),
                message: message.to_string(),
            }
            .into(),
        }
    }
}

async fn until_deleted(cloud: &Cloud, id: &str, deadline: Instant) -> Result<()> {
    match cloud
        .volumes
        .wait_volume(id, &VolumeWait::Deleted, deadline)
        .await
    {
        Ok(_) | Err(CloudError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
