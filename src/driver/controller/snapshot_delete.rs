//! DeleteSnapshot: a Cinder snapshot or a backup (with its temporary snapshot); unknown → OK
//! (CSI: "MUST reply 0 OK"). Waits until Cinder has really deleted it.

use tokio::time::Instant;

use super::waits::wait_deadline;
use super::{Controller, DeleteSnapshot};
use crate::cloud::{BackupStatus, BackupWait, Cloud, CloudError, SnapshotStatus, SnapshotWait};
use crate::driver::{Error, Result};

impl Controller {
    /// CSI DeleteSnapshot: a Cinder snapshot or a backup; unknown → OK. Waits until gone.
    pub async fn delete_snapshot(&self, req: DeleteSnapshot) -> Result<()> {
        let cloud = self.cloud(&req.cloud)?;
        let deadline = wait_deadline(req.deadline);
        let id = req.snapshot_id.as_str();
        let storage = &cloud.storage;
        // Snapshots are the common case: try them first (upstream always paid a backup 404).
        match storage.delete_snapshot(id).await {
            Ok(()) => return snapshot_gone(cloud, id, deadline).await,
            Err(CloudError::NotFound { .. }) => {}
            Err(CloudError::Conflict { message, .. }) => {
                return match storage.get_snapshot(id).await {
                    Err(CloudError::NotFound { .. }) => Ok(()),
                    Ok(s) if s.status == SnapshotStatus::Deleting => {
                        snapshot_gone(cloud, id, deadline).await
                    }
                    Ok(s) => Err(Error::precondition(format!(
                        "snapshot {id} (status {}) cannot be deleted now: {message}",
                        s.status
                    ))),
                    Err(e) => Err(e.into()),
                }
            }
            Err(e) => return Err(e.into()),
        }
        let b = match storage.get_backup(id).await {
            Ok(b) => b,
            Err(CloudError::NotFound { .. } | CloudError::Unsupported(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        if b.status != BackupStatus::Deleting {
            match storage.delete_backup(id).await {
                Ok(()) => {}
                Err(CloudError::NotFound { .. }) => return Ok(()),
                Err(CloudError::Conflict { message, .. }) => {
                    return Err(Error::precondition(format!(
                        "backup {id} (status {}) cannot be deleted now: {message}",
                        b.status
                    )))
                }
                Err(e) => return Err(e.into()),
            }
        }
        self.drop_temporary(cloud, &b).await;
        let gone = match storage
            .wait_backup(id, &BackupWait::Deleted, deadline)
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
        .storage
        .wait_snapshot(id, &SnapshotWait::Deleted, deadline)
        .await
    {
        Ok(_) | Err(CloudError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
