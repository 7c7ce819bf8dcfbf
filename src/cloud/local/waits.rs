//! Waits. Operations here finish before they return, so a wait is normally satisfied at
//! once; it still ends with `ErrorState` on an error status and looks again (for a concurrent
//! operation to finish) until the deadline, then reports `WaitTimeout` like the cloud does.
//! An object that is gone ends every wait with `NotFound` (for `Deleted`, that is success).

use std::time::Duration;

use tokio::time::Instant;

use super::backend::Inner;
use crate::cloud::poll::{poll, Look, Pace};
use crate::cloud::{
    Backup, BackupStatus, BackupWait, CloudError, CloudResult, Resource, Snapshot, SnapshotStatus,
    SnapshotWait, Volume, VolumeWait,
};

/// How often an unsatisfied wait looks again.
const PACE: Pace = Pace::every(Duration::from_millis(50));

fn error_state(resource: Resource, id: &str, status: &str, reason: Option<&String>) -> CloudError {
    CloudError::ErrorState {
        resource,
        id: id.to_string(),
        status: status.to_string(),
        reason: reason.cloned(),
    }
}

pub(super) async fn wait_volume(
    inner: &Inner,
    id: &str,
    until: &VolumeWait,
    deadline: Instant,
) -> CloudResult<Volume> {
    let started = Instant::now();
    poll(Resource::Volume, id, until.wanted(), deadline, PACE, || {
        let st = inner.read();
        // Gone: what a `Deleted` wait waits for, and the end of any other (the port's rule).
        let look = match st.volumes.get(id) {
            None => Err(CloudError::not_found(Resource::Volume, id)),
            Some(rec) => {
                let v = rec.to_volume();
                let verdict = until.verdict(&v, started.elapsed());
                let status = v.status.clone();
                Look::judged(verdict, v, status).map_err(|e| e.or_reason(&rec.error_reason))
            }
        };
        async move { look }
    })
    .await
}

pub(super) async fn wait_snapshot(
    inner: &Inner,
    id: &str,
    until: &SnapshotWait,
    deadline: Instant,
) -> CloudResult<Snapshot> {
    let wanted = format!("{until:?}").to_lowercase();
    poll(Resource::Snapshot, id, wanted, deadline, PACE, || {
        let st = inner.read();
        let look = match st.snapshots.get(id) {
            None => Err(CloudError::not_found(Resource::Snapshot, id)),
            Some(rec) => {
                let s = rec.to_snapshot();
                if s.status.is_error() {
                    Err(error_state(
                        Resource::Snapshot,
                        id,
                        s.status.as_str(),
                        rec.error_reason.as_ref(),
                    ))
                } else {
                    Ok(match until {
                        SnapshotWait::Available if s.status == SnapshotStatus::Available => {
                            Look::Done(s)
                        }
                        _ => Look::Pending(s.status.to_string()),
                    })
                }
            }
        };
        async move { look }
    })
    .await
}

pub(super) async fn wait_backup(
    inner: &Inner,
    id: &str,
    until: &BackupWait,
    deadline: Instant,
) -> CloudResult<Backup> {
    let wanted = format!("{until:?}").to_lowercase();
    poll(Resource::Backup, id, wanted, deadline, PACE, || {
        let st = inner.read();
        let look = match st.backups.get(id) {
            None => Err(CloudError::not_found(Resource::Backup, id)),
            Some(rec) => {
                let b = rec.to_backup();
                if b.status.is_error() {
                    Err(error_state(
                        Resource::Backup,
                        id,
                        b.status.as_str(),
                        rec.error_reason.as_ref(),
                    ))
                } else {
                    Ok(match until {
                        BackupWait::Available if b.status == BackupStatus::Available => {
                            Look::Done(b)
                        }
                        _ => Look::Pending(b.status.to_string()),
                    })
                }
            }
        };
        async move { look }
    })
    .await
}
