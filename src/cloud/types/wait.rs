//! How a wait ends: the conditions the core waits for, what one fresh look at the object says
//! about them, and their words in `WaitTimeout`. Every adapter judges its waits here, so a
//! condition means the same on every cloud.

use std::time::Duration;

use super::copy::{CopyStatus, VolumeCopy};
use super::volume::{Volume, VolumeStatus};
use crate::cloud::{CloudError, Resource};

/// A volume back in `available` without the attachment this long after the attach was
/// requested: Nova rolled the attach back.
pub const ATTACH_ROLLBACK_GRACE: Duration = Duration::from_secs(2);

/// Condition a volume wait ends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VolumeWait {
    /// `available` (after create, detach or extend of a detached volume).
    Available,
    /// Attached to this server and `in-use`.
    AttachedTo(String),
    /// No attachment to this server and not `detaching`.
    DetachedFrom(String),
    /// Size at least this many GiB and out of `extending` (in-use or available).
    Extended(u64),
    /// Gone (404).
    Deleted,
    /// Out of every transitional state (`creating`, `attaching`, `detaching`, `reserved`, ...).
    Stable,
}

/// Condition a snapshot or backup wait ends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyWait {
    Available,
    /// Gone (404).
    Deleted,
}

/// What one fresh look says about a wait.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    Done,
    Continue,
    /// An error state (`ErrorState` without a reason: the adapter adds the one it knows).
    Fail(CloudError),
}

impl VolumeWait {
    /// Whether one look at `v`, `waited` after the wait began, ends the wait.
    pub fn verdict(&self, v: &Volume, waited: Duration) -> Verdict {
        if v.status.is_error() {
            return Verdict::Fail(error_state(Resource::Volume, &v.id, v.status.as_str()));
        }
        let done = match self {
            Self::Available => v.status == VolumeStatus::Available,
            Self::AttachedTo(server) => {
                if v.status == VolumeStatus::Available
                    && v.attached_to(server).is_none()
                    && waited >= ATTACH_ROLLBACK_GRACE
                {
                    return Verdict::Fail(CloudError::ErrorState {
                        resource: Resource::Volume,
                        id: v.id.clone(),
                        status: v.status.to_string(),
                        reason: Some(format!(
                            "Nova did not attach it to server {server} (the attachment was \
                             rolled back; nova-compute's log says why)"
                        )),
                    });
                }
                v.status == VolumeStatus::InUse && v.attached_to(server).is_some()
            }
            Self::DetachedFrom(server) => {
                v.attached_to(server).is_none() && v.status != VolumeStatus::Detaching
            }
            Self::Extended(size) => {
                v.size_gib >= *size
                    && matches!(v.status, VolumeStatus::Available | VolumeStatus::InUse)
            }
            Self::Deleted => false,
            Self::Stable => !v.status.is_transitional(),
        };
        if done {
            Verdict::Done
        } else {
            Verdict::Continue
        }
    }

    /// The condition in words (`timed out waiting for volume X to become <this>`).
    pub fn wanted(&self) -> String {
        match self {
            Self::Available => "available".into(),
            Self::AttachedTo(s) => format!("attached to server {s}"),
            Self::DetachedFrom(s) => format!("detached from server {s}"),
            Self::Extended(n) => format!("extended to {n} GiB"),
            Self::Deleted => "deleted".into(),
            Self::Stable => "out of transitional states".into(),
        }
    }
}

impl CopyWait {
    /// Whether one look at `c` ends the wait; an error state ends it with the copy's reason.
    pub fn verdict(&self, c: &VolumeCopy) -> Verdict {
        if c.status.is_error() {
            return Verdict::Fail(CloudError::ErrorState {
                resource: c.kind.resource(),
                id: c.id.clone(),
                status: c.status.to_string(),
                reason: c.fail_reason.clone(),
            });
        }
        match self {
            Self::Available if c.status == CopyStatus::Available => Verdict::Done,
            _ => Verdict::Continue,
        }
    }

    /// Whether one look at group snapshot `id`, in `status`, ends the wait. Cinder gives no
    /// reason for a group snapshot in error (its members may say).
    pub fn group_verdict(&self, id: &str, status: &CopyStatus) -> Verdict {
        if status.is_error() {
            return Verdict::Fail(error_state(Resource::GroupSnapshot, id, status.as_str()));
        }
        match self {
            Self::Available if *status == CopyStatus::Available => Verdict::Done,
            _ => Verdict::Continue,
        }
    }

    /// The condition in words (`timed out waiting for backup X to become <this>`).
    pub fn wanted(&self) -> String {
        match self {
            Self::Available => "available".into(),
            Self::Deleted => "deleted".into(),
        }
    }
}

fn error_state(resource: Resource, id: &str, status: &str) -> CloudError {
    CloudError::ErrorState {
        resource,
        id: id.to_string(),
        status: status.to_string(),
        reason: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::Attachment;

    fn vol(status: VolumeStatus, attached: Option<&str>, size: u64) -> Volume {
        Volume {
            size_gib: size,
            status,
            availability_zone: String::new(),
            attachments: attached
                .map(|s| {
                    vec![Attachment {
                        server_id: s.into(),
                        attachment_id: None,
                        device: None,
                    }]
                })
                .unwrap_or_default(),
            ..Volume::sample("v")
        }
    }

    #[test]
    fn volume_conditions() {
        use VolumeStatus::*;
        let s = || "srv".to_string();
        let t = Duration::ZERO;
        let verdict = |w: &VolumeWait, v: Volume| w.verdict(&v, t);
        assert_eq!(
            verdict(&VolumeWait::Available, vol(Available, None, 1)),
            Verdict::Done
        );
        assert_eq!(
            verdict(&VolumeWait::Available, vol(Creating, None, 1)),
            Verdict::Continue
        );
        let attached = VolumeWait::AttachedTo(s());
        assert_eq!(
            verdict(&attached, vol(InUse, Some("srv"), 1)),
            Verdict::Done
        );
        for v in [
            vol(Attaching, Some("srv"), 1),
            vol(InUse, Some("other"), 1),
            vol(Reserved, None, 1),
            // Back to available without our attachment, before the grace.
            vol(Available, None, 1),
        ] {
            assert_eq!(verdict(&attached, v), Verdict::Continue);
        }
        // After the grace: Nova rolled it back.
        assert!(matches!(
            attached.verdict(&vol(Available, None, 1), ATTACH_ROLLBACK_GRACE),
            Verdict::Fail(CloudError::ErrorState {
                reason: Some(_),
                ..
            })
        ));
        let detached = VolumeWait::DetachedFrom(s());
        for v in [vol(Available, None, 1), vol(InUse, Some("other"), 1)] {
            assert_eq!(verdict(&detached, v), Verdict::Done);
        }
        for v in [vol(Detaching, None, 1), vol(InUse, Some("srv"), 1)] {
            assert_eq!(verdict(&detached, v), Verdict::Continue);
        }
        let grown = VolumeWait::Extended(3);
        for v in [vol(Extending, None, 3), vol(Available, None, 2)] {
            assert_eq!(verdict(&grown, v), Verdict::Continue);
        }
        assert_eq!(verdict(&grown, vol(InUse, Some("srv"), 3)), Verdict::Done);
        assert_eq!(
            verdict(&VolumeWait::Stable, vol(Detaching, None, 1)),
            Verdict::Continue
        );
        assert_eq!(
            verdict(&VolumeWait::Stable, vol(InUse, None, 1)),
            Verdict::Done
        );
        assert_eq!(
            verdict(&VolumeWait::Deleted, vol(Deleting, None, 1)),
            Verdict::Continue
        );
        for st in [Error, ErrorExtending, ErrorDeleting] {
            assert_eq!(
                verdict(&VolumeWait::Stable, vol(st.clone(), None, 1)),
                Verdict::Fail(error_state(Resource::Volume, "v", st.as_str()))
            );
        }
    }

    #[test]
    fn copy_conditions() {
        let copy = |status: &str| VolumeCopy {
            kind: crate::cloud::CopyKind::Backup,
            id: "b".into(),
            name: String::new(),
            volume_id: "v".into(),
            snapshot_id: None,
            size_gib: 1,
            status: CopyStatus::parse(status),
            availability_zone: None,
            created_at: None,
            metadata: Default::default(),
            fail_reason: Some("no space".into()),
            group_snapshot_id: None,
        };
        assert_eq!(
            CopyWait::Available.verdict(&copy("available")),
            Verdict::Done
        );
        assert_eq!(
            CopyWait::Deleted.verdict(&copy("available")),
            Verdict::Continue
        );
        assert_eq!(
            CopyWait::Available.verdict(&copy("creating")),
            Verdict::Continue
        );
        assert_eq!(
            CopyWait::Deleted.verdict(&copy("error_deleting")),
            Verdict::Fail(CloudError::ErrorState {
                resource: Resource::Backup,
                id: "b".into(),
                status: "error_deleting".into(),
                reason: Some("no space".into()),
            })
        );
    }

    #[test]
    fn group_snapshot_conditions() {
        let verdict = |w: CopyWait, s: &str| w.group_verdict("g", &CopyStatus::parse(s));
        assert_eq!(verdict(CopyWait::Available, "available"), Verdict::Done);
        assert_eq!(verdict(CopyWait::Available, "creating"), Verdict::Continue);
        assert_eq!(verdict(CopyWait::Deleted, "available"), Verdict::Continue);
        assert_eq!(
            verdict(CopyWait::Deleted, "error_deleting"),
            Verdict::Fail(CloudError::ErrorState {
                resource: Resource::GroupSnapshot,
                id: "g".into(),
                status: "error_deleting".into(),
                reason: None,
            })
        );
    }

    #[test]
    fn conditions_in_words() {
        assert_eq!(
            VolumeWait::AttachedTo("n1".into()).wanted(),
            "attached to server n1"
        );
        assert_eq!(VolumeWait::Extended(4).wanted(), "extended to 4 GiB");
    }
}
