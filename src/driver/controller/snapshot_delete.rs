//! DeleteSnapshot: a Cinder snapshot or a backup (with its temporary snapshot); unknown → OK
//! (CSI: "MUST reply 0 OK"). Waits until Cinder has really deleted it.
//!
//! Cinder refuses (400) to delete a snapshot or backup that is still in a transitional state
//! (`creating`, `backing-up`, `restoring`, …), and a VolumeSnapshot deleted right after it was
//! made is exactly that. The refusal is not the caller's fault and not final: DeleteSnapshot
//! waits (the port's `wait_*`, within the RPC deadline) until the object settles, `available`
//! or an error state, both of which Cinder deletes, and deletes it then. When the deadline
//! comes first the answer is Aborted with the last status; the sidecar retries.
//!
//! A member of a group snapshot is deleted with its group snapshot only (Cinder refuses it
//! alone): FailedPrecondition naming the group snapshot. The snapshotter never asks for it.

use tokio::time::Instant;

use super::waits::wait_deadline;
use super::{Controller, DeleteSnapshot};
use crate::cloud::{Cloud, CloudError, CopyKind, CopyStatus, CopyWait, VolumeCopy};
use crate::driver::{Refusal, Result};

impl Controller {
    /// CSI DeleteSnapshot: a Cinder snapshot or a backup; unknown → OK. Waits until gone.
    pub async fn delete_snapshot(&self, req: DeleteSnapshot) -> Result<()> {
        let cloud = self.cloud(&req.cloud)?;
        let deadline = wait_deadline(req.deadline);
        let id = req.snapshot_id.as_str();
        let copies = &cloud.copies;
        // Snapshots are the common case: try them first (upstream always paid a backup 404).
        match copies.delete_copy(CopyKind::Snapshot, id).await {
            Ok(()) => return snapshot_gone(cloud, id, deadline).await,
            Err(CloudError::NotFound { .. }) => {}
            Err(CloudError::Conflict { message, .. }) => {
                return delete_settled_snapshot(cloud, id, &message, deadline).await
            }
            Err(e) => return Err(e.into()),
        }
        let mut b = match copies.get_copy(CopyKind::Backup, id).await {
            Ok(b) => b,
            Err(CloudError::NotFound { .. } | CloudError::Unsupported(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        if b.status != CopyStatus::Deleting {
            if transitional(&b.status) {
                tracing::info!(backup = id, status = %b.status,
                    "the backup is still settling; waiting, then deleting");
                b = match settle_backup(cloud, id, deadline).await? {
                    Some(b) => b,
                    None => return Ok(()),
                };
            }
            match copies.delete_copy(CopyKind::Backup, id).await {
                Ok(()) => {}
                Err(CloudError::NotFound { .. }) => return Ok(()),
                Err(CloudError::Conflict { message, .. }) => {
                    return Err(Refusal::CopyDeleteRefused {
                        kind: CopyKind::Backup,
                        id: id.to_string(),
                        status: b.status,
                        message,
                    }
                    .into())
                }
                Err(e) => return Err(e.into()),
            }
        }
        self.drop_temporary(cloud, &b).await;
        let gone = match copies
            .wait_copy(CopyKind::Backup, id, &CopyWait::Deleted, deadline)
            .await
        {
            Ok(_) | Err(CloudError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        };
        if gone.is_ok() {
            // Nothing will list this backup again.
            self.forget_cleaned(id);
        }
        gone
    }
}

async fn snapshot_gone(cloud: &Cloud, id: &str, deadline: Instant) -> Result<()> {
    match cloud
        .copies
        .wait_copy(CopyKind::Snapshot, id, &CopyWait::Deleted, deadline)
        .await
    {
        Ok(_) | Err(CloudError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Cinder refused to delete snapshot `id`: gone → OK; deleting → wait until gone; still
/// transitional → wait until it settles. Then one more delete: the refusal may also have
/// raced the end of the creation (the snapshot reads `available` already). Refused again →
/// FailedPrecondition with Cinder's reason (e.g. a volume is being created from it).
async fn delete_settled_snapshot(
    cloud: &Cloud,
    id: &str,
    refusal: &str,
    deadline: Instant,
) -> Result<()> {
    let copies = &cloud.copies;
    let s = match copies.get_copy(CopyKind::Snapshot, id).await {
        Err(CloudError::NotFound { .. }) => return Ok(()),
        Err(e) => return Err(e.into()),
        Ok(s) => s,
    };
    if s.status == CopyStatus::Deleting {
        return snapshot_gone(cloud, id, deadline).await;
    }
    // Cinder never deletes a member of a group snapshot on its own.
    if let Some(group) = s.group_snapshot_id {
        return Err(Refusal::GroupMember {
            id: id.to_string(),
            group_snapshot_id: group,
        }
        .into());
    }
    let mut status = s.status;
    if transitional(&status) {
        tracing::info!(snapshot = id, %status,
            "Cinder refused to delete the snapshot while it settles; waiting, then deleting");
        // An error state ends the wait as well: Cinder deletes snapshots in `error`.
        match copies
            .wait_copy(CopyKind::Snapshot, id, &CopyWait::Available, deadline)
            .await
        {
            Ok(s) => status = s.status,
            Err(CloudError::ErrorState { status: st, .. }) => status = CopyStatus::parse(&st),
            Err(CloudError::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    } else {
        tracing::debug!(snapshot = id, %status, refusal,
            "Cinder refused to delete the snapshot; trying once more");
    }
    match copies.delete_copy(CopyKind::Snapshot, id).await {
        Ok(()) => snapshot_gone(cloud, id, deadline).await,
        Err(CloudError::NotFound { .. }) => Ok(()),
        Err(CloudError::Conflict { message, .. }) => Err(Refusal::CopyDeleteRefused {
            kind: CopyKind::Snapshot,
            id: id.to_string(),
            status,
            message,
        }
        .into()),
        Err(e) => Err(e.into()),
    }
}

/// Wait until backup `id` leaves its transitional state; `None` when it is gone.
async fn settle_backup(cloud: &Cloud, id: &str, deadline: Instant) -> Result<Option<VolumeCopy>> {
    let copies = &cloud.copies;
    match copies
        .wait_copy(CopyKind::Backup, id, &CopyWait::Available, deadline)
        .await
    {
        Ok(b) => Ok(Some(b)),
        // Cinder deletes backups in `error`; re-read for the status the message shows.
        Err(CloudError::ErrorState { .. }) => match copies.get_copy(CopyKind::Backup, id).await {
            Ok(b) => Ok(Some(b)),
            Err(CloudError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        },
        Err(CloudError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A snapshot or backup status Cinder leaves on its own (`creating`, `backing-up`,
/// `restoring`, …), as opposed to `available`, `deleting` and the error states.
fn transitional(s: &CopyStatus) -> bool {
    !s.is_error() && !matches!(s, CopyStatus::Available | CopyStatus::Deleting)
}
