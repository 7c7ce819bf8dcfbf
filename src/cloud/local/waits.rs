//! Waits. Operations here finish before they return, so a wait is normally satisfied at
//! once; it still ends with `ErrorState` on an error status and polls (for a concurrent
//! operation to finish) until the deadline, then reports `WaitTimeout` like the cloud does.
//! An object that is gone ends every wait with `NotFound` (for `Deleted`, that is success).

use std::time::Duration;

use tokio::time::Instant;

use super::backend::Inner;
use crate::cloud::{
    Backup, BackupStatus, BackupWait, CloudError, CloudResult, Resource, Snapshot, SnapshotStatus,
    SnapshotWait, Volume, VolumeStatus, VolumeWait,
};

/// How often an unsatisfied wait looks again.
const POLL: Duration = Duration::from_millis(50);

enum Check<T> {
    Done(T),
    Pending(String),
}

async fn poll<T>(
    resource: Resource,
    id: &str,
    wanted: String,
    deadline: Instant,
    mut check: impl FnMut() -> CloudResult<Check<T>>,
) -> CloudResult<T> {
    loop {
        let last_status = match check()? {
            Check::Done(t) => return Ok(t),
            Check::Pending(status) => status,
        };
        let now = Instant::now();
        if now >= deadline {
            return Err(CloudError::WaitTimeout {
                resource,
                id: id.to_string(),
                wanted,
                last_status,
            });
        }
        tokio::time::sleep(POLL.min(deadline - now)).await;
    }
}

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
    let wanted = format!("{until:?}").to_lowercase();
    poll(Resource::Volume, id, wanted, deadline, || {
        let st = inner.read();
        // Gone: what a `Deleted` wait waits for, and the end of any other (the port's rule).
        let Some(rec) = st.volumes.get(id) else {
            return Err(CloudError::not_found(Resource::Volume, id));
        };
        let v = rec.to_volume();
        if v.status.is_error() {
            return Err(error_state(
                Resource::Volume,
                id,
                v.status.as_str(),
                rec.error_reason.as_ref(),
            ));
        }
        let done = match until {
            VolumeWait::Available => v.status == VolumeStatus::Available,
            VolumeWait::AttachedTo(s) => {
                v.attached_to(s).is_some() && v.status == VolumeStatus::InUse
            }
            VolumeWait::DetachedFrom(s) => {
                v.attached_to(s).is_none() && v.status != VolumeStatus::Detaching
            }
            VolumeWait::Extended(gib) => v.size_gib >= *gib && v.status != VolumeStatus::Extending,
            VolumeWait::Deleted => false,
            VolumeWait::Stable => !v.status.is_transitional(),
        };
        Ok(if done {
            Check::Done(v)
        } else {
            Check::Pending(v.status.to_string())
        })
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
    poll(Resource::Snapshot, id, wanted, deadline, || {
        let st = inner.read();
        let Some(rec) = st.snapshots.get(id) else {
            return Err(CloudError::not_found(Resource::Snapshot, id));
        };
        let s = rec.to_snapshot();
        if s.status.is_error() {
            return Err(error_state(
                Resource::Snapshot,
                id,
                s.status.as_str(),
                rec.error_reason.as_ref(),
            ));
        }
        Ok(match until {
            SnapshotWait::Available if s.status == SnapshotStatus::Available => Check::Done(s),
            _ => Check::Pending(s.status.to_string()),
        })
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
    poll(Resource::Backup, id, wanted, deadline, || {
        let st = inner.read();
        let Some(rec) = st.backups.get(id) else {
            return Err(CloudError::not_found(Resource::Backup, id));
        };
        let b = rec.to_backup();
        if b.status.is_error() {
            return Err(error_state(
                Resource::Backup,
                id,
                b.status.as_str(),
                rec.error_reason.as_ref(),
            ));
        }
        Ok(match until {
            BackupWait::Available if b.status == BackupStatus::Available => Check::Done(b),
            _ => Check::Pending(b.status.to_string()),
        })
    })
    .await
}
