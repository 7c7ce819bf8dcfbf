//! DeleteVolumeGroupSnapshot: the group snapshot with its members (CSI: "delete a volume group
//! snapshot as well as all individual snapshots that are part of this volume group
//! snapshot"); unknown → OK ("MUST reply 0 OK"). Waits until the cloud has deleted it and
//! the adapter has removed what it made for it (Cinder's group), so nothing is left.
//!
//! Cinder deletes a group snapshot only in `available` or `error`: one still `creating`
//! (deleted right after it was made) is waited for within the RPC deadline, then deleted;
//! the deadline first → Aborted with the last status, and the snapshotter retries.

use tokio::time::Instant;

use super::groups::check_members;
use super::waits::wait_deadline;
use super::{Controller, GroupSnapshotRef};
use crate::cloud::{Cloud, CloudError, CopyStatus, CopyWait, GroupSnapshot};
use crate::driver::{Refusal, Result};

impl Controller {
    pub async fn delete_group_snapshot(&self, req: GroupSnapshotRef) -> Result<()> {
        let deadline = wait_deadline(req.deadline);
        let Some((cloud, g)) = self.find_group_snapshot(&req).await? else {
            // Gone: maybe by an earlier attempt interrupted before it removed the cloud's
            // helper objects, which this one cannot name any more. Best effort.
            for c in self.list_clouds(req.cloud.as_deref())? {
                if let Err(e) = c.groups.sweep(deadline).await {
                    tracing::warn!(cloud = %c.name, error = %e,
                        "cannot sweep what group snapshots left behind");
                }
            }
            return Ok(());
        };
        check_members(cloud, &g, &req.snapshot_ids).await?;
        // Its volumes leave the cloud's group (OpenStack) as part of the delete: no other
        // operation may change them meanwhile.
        let _guards = self.lock_volumes(g.volume_ids())?;
        remove(cloud, g, deadline).await
    }
}

/// Wait out `creating`, delete, wait until gone.
async fn remove(cloud: &Cloud, mut g: GroupSnapshot, deadline: Instant) -> Result<()> {
    let groups = &cloud.groups;
    if g.status == CopyStatus::Creating {
        tracing::info!(group_snapshot = %g.id, "the group snapshot is still being created; \
            waiting, then deleting");
        g = match groups
            .wait_group_snapshot(&g.id, &CopyWait::Available, deadline)
            .await
        {
            Ok(g) => g,
            // Cinder deletes group snapshots in `error`.
            Err(CloudError::ErrorState { .. }) => match groups.get_group_snapshot(&g.id).await {
                Ok(g) => g,
                Err(CloudError::NotFound { .. }) => return Ok(()),
                Err(e) => return Err(e.into()),
            },
            Err(CloudError::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
    }
    match groups.delete_group_snapshot(&g.id, deadline).await {
        Ok(()) | Err(CloudError::NotFound { .. }) => Ok(()),
        Err(CloudError::Conflict { message, .. }) => Err(Refusal::GroupSnapshotDeleteRefused {
            id: g.id.clone(),
            status: g.status,
            message,
        }
        .into()),
        Err(e) => Err(e.into()),
    }
}
