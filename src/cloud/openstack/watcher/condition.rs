//! When a fresh observation ends a volume wait.

use std::time::Duration;

use crate::cloud::{CloudError, Resource, Volume, VolumeStatus, VolumeWait};

/// A volume back in `available` without the attachment this long after the attach was
/// requested: Nova rolled the attach back.
pub const ATTACH_ROLLBACK_GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, PartialEq)]
pub enum Verdict {
    Done,
    Continue,
    Fail(CloudError),
}

/// Whether one fresh observation ends a wait.
pub fn evaluate(until: &VolumeWait, v: &Volume, waited: Duration) -> Verdict {
    if v.status.is_error() {
        return Verdict::Fail(CloudError::ErrorState {
            resource: Resource::Volume,
            id: v.id.clone(),
            status: v.status.to_string(),
            reason: None,
        });
    }
    let done = match until {
        VolumeWait::Available => v.status == VolumeStatus::Available,
        VolumeWait::AttachedTo(server) => {
            if v.status == VolumeStatus::Available
                && v.attached_to(server).is_none()
                && waited >= ATTACH_ROLLBACK_GRACE
            {
                return Verdict::Fail(CloudError::ErrorState {
                    resource: Resource::Volume,
                    id: v.id.clone(),
                    status: v.status.to_string(),
                    reason: Some(format!(
                        "Nova did not attach it to server {server} (the attachment was rolled \
                         back; nova-compute's log says why)"
                    )),
                });
            }
            v.status == VolumeStatus::InUse && v.attached_to(server).is_some()
        }
        VolumeWait::DetachedFrom(server) => {
            v.attached_to(server).is_none() && v.status != VolumeStatus::Detaching
        }
        VolumeWait::Extended(size) => {
            v.size_gib >= *size && matches!(v.status, VolumeStatus::Available | VolumeStatus::InUse)
        }
        VolumeWait::Deleted => false,
        VolumeWait::Stable => !v.status.is_transitional(),
    };
    if done {
        Verdict::Done
    } else {
        Verdict::Continue
    }
}

pub fn wanted(until: &VolumeWait) -> String {
    match until {
        VolumeWait::Available => "available".into(),
        VolumeWait::AttachedTo(s) => format!("attached to server {s}"),
        VolumeWait::DetachedFrom(s) => format!("detached from server {s}"),
        VolumeWait::Extended(n) => format!("extended to {n} GiB"),
        VolumeWait::Deleted => "deleted".into(),
        VolumeWait::Stable => "out of transitional states".into(),
    }
}
