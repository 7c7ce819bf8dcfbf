//! What a rule refuses: the data (ids, statuses), its words beside each variant (one wording for
//! the fake and the local backend: the objects named, and what to do), and its code.

use crate::cloud::{CloudError, CopyStatus, RequestId, Resource, VolumeStatus};

use super::profile::Profile;

/// What a new volume is made from, for the words of its refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Snapshot,
    Volume,
    Backup,
}

impl SourceKind {
    fn ready(self) -> &'static str {
        match self {
            Self::Volume => "available or in-use",
            Self::Snapshot | Self::Backup => "available",
        }
    }

    fn made_by(self) -> &'static str {
        match self {
            Self::Volume => "clone",
            Self::Snapshot | Self::Backup => "restore from",
        }
    }

    fn source(self) -> &'static str {
        match self {
            Self::Snapshot => "snapshot",
            Self::Volume => "source volume",
            Self::Backup => "backup",
        }
    }
}

impl std::fmt::Display for SourceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Snapshot => "snapshot",
            Self::Volume => "volume",
            Self::Backup => "backup",
        })
    }
}

/// A copy (snapshot, backup, group snapshot) that may not be deleted in its status.
fn not_deletable(what: &str, id: &str, status: &CopyStatus) -> String {
    match status {
        CopyStatus::Creating => format!("{what} {id} is still being created"),
        _ => format!("{what} {id} must be available or in error to be deleted, it is {status}"),
    }
}

/// One of Cinder's rules broken. Ids are the objects' ids; statuses are theirs as they are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A new volume of 0 GiB.
    #[error("volume size must be at least 1 GiB")]
    BadSize,
    /// A zone the cloud does not have.
    #[error("availability zone {zone:?} is invalid: the local backend's zones are {zones:?}")]
    UnknownZone { zone: String, zones: Vec<String> },
    #[error("volume {id} is attached to {}; detach it first", .servers.join(", "))]
    DeleteAttached {
        id: String,
        servers: Vec<String>,
        status: VolumeStatus,
    },
    #[error("volume {id} must be available or in error to be deleted, it is {status}")]
    DeleteStatus { id: String, status: VolumeStatus },
    #[error("volume {id} is in group {group}; remove it from the group first")]
    DeleteInGroup {
        id: String,
        group: String,
        status: VolumeStatus,
    },
    #[error("volume {id} has {count} dependent snapshot(s); delete them first or cascade")]
    HasSnapshots { id: String, count: usize },
    #[error("volume {id} is being copied (snapshot, backup or clone in progress)")]
    VolumeBeingCopied { id: String, status: VolumeStatus },
    #[error("new size {new_size_gib} GiB must be greater than the current size {size_gib} GiB")]
    ExtendNotLarger {
        id: String,
        size_gib: u64,
        new_size_gib: u64,
    },
    #[error("volume {id} is in-use; extending an attached volume needs online extend")]
    ExtendAttached { id: String },
    #[error("volume {id} must be available or in-use to be extended, it is {status}")]
    ExtendStatus { id: String, status: VolumeStatus },
    #[error("volume {id} must be available or in-use to be retyped, it is {status}")]
    RetypeStatus { id: String, status: VolumeStatus },
    #[error("volume {id} already has type {volume_type}")]
    RetypeSameType { id: String, volume_type: String },
    #[error("Invalid input received: volume {id} is in group {group}; remove it from the group before retyping it")]
    RetypeInGroup { id: String, group: String },
    #[error("volume {id} is attached to several servers; type {volume_type} does not allow that")]
    RetypeMultiattached { id: String, volume_type: String },
    #[error("volume {id} must be available to be attached, it is {status}")]
    AttachStatus { id: String, status: VolumeStatus },
    #[error("volume {id} is in availability zone {zone:?} and server {server} in {server_zone:?}: a volume attaches only to servers of its own zone")]
    AttachZone {
        id: String,
        zone: String,
        server: String,
        server_zone: String,
    },
    #[error("volume {id} is already attached to server {server}")]
    AlreadyAttached { id: String, server: String },
    /// In use elsewhere and not multiattach.
    #[error("volume {id} is attached to server {} and is not multiattach", .server.as_deref().unwrap_or("another"))]
    AttachedElsewhere {
        id: String,
        server: Option<String>,
        status: VolumeStatus,
    },
    /// Multiattach and in use, but the request did not ask for multiattach.
    #[error("volume {id} is multiattach and already attached: attaching it again needs the multiattach microversion")]
    MultiattachNotAsked { id: String, status: VolumeStatus },
    #[error("{id} on {server}")]
    NotAttached { id: String, server: String },
    #[error("volume {id} must be in-use to be detached, it is {status}")]
    DetachStatus { id: String, status: VolumeStatus },
    #[error("volume {id} must be available or in-use to be snapshotted, it is {status}")]
    SnapshotStatus { id: String, status: VolumeStatus },
    /// In use, where a snapshot of an in-use volume needs `force`.
    #[error("volume {id} is in-use: a snapshot of it needs force (force-create)")]
    SnapshotInUse { id: String },
    #[error("volume {id} must be available or in-use to be snapshotted, it is {status}")]
    GroupMemberStatus { id: String, status: VolumeStatus },
    #[error(
        "volume {id} must be available (or in-use with force) to be backed up, it is {status}"
    )]
    BackupStatus { id: String, status: VolumeStatus },
    #[error("snapshot {snapshot} is of volume {of}, not {volume}")]
    BackupOfOtherVolume {
        snapshot: String,
        of: String,
        volume: String,
    },
    #[error("snapshot {snapshot} must be available to be backed up, it is {status}")]
    BackupSnapshotStatus {
        snapshot: String,
        status: CopyStatus,
    },
    #[error("{}", not_deletable("snapshot", .id, .status))]
    SnapshotDeleteStatus { id: String, status: CopyStatus },
    #[error("snapshot {id} is part of group snapshot {group}; delete the group snapshot")]
    SnapshotInGroup { id: String, group: String },
    #[error("snapshot {id} is being copied (a restore or backup is in progress)")]
    SnapshotBeingCopied { id: String, backing_up: bool },
    #[error("{}", not_deletable("backup", .id, .status))]
    BackupDeleteStatus { id: String, status: CopyStatus },
    #[error("backup {id} is being restored")]
    BackupBeingRestored { id: String },
    #[error("{kind} {id} must be {} to {}, it is {status}", .kind.ready(), .kind.made_by())]
    SourceStatus {
        kind: SourceKind,
        id: String,
        status: String,
    },
    #[error("requested size {size_gib} GiB is smaller than the {} {id} ({source_gib} GiB)", .kind.source())]
    SourceTooLarge {
        kind: SourceKind,
        id: String,
        size_gib: u64,
        source_gib: u64,
    },
    #[error("{}", not_deletable("group snapshot", .id, .status))]
    GroupSnapshotDeleteStatus { id: String, status: CopyStatus },
    #[error("a volume is being restored from a member of group snapshot {id}")]
    GroupSnapshotBeingRestored { id: String },
}

impl Refusal {
    /// The error an adapter of profile `p` answers this refusal with, carrying `request_id`.
    pub fn into_error(self, p: &Profile, request_id: RequestId) -> CloudError {
        use Refusal as R;
        let bad_request = match &self {
            R::BadSize
            | R::UnknownZone { .. }
            | R::ExtendNotLarger { .. }
            | R::RetypeSameType { .. }
            | R::RetypeInGroup { .. }
            | R::AttachZone { .. }
            | R::BackupOfOtherVolume { .. }
            | R::SourceTooLarge { .. } => true,
            R::SourceStatus { .. } => p.source_not_ready_is_bad_request,
            R::MultiattachNotAsked { .. } => !p.multiattach_not_asked_is_conflict,
            R::NotAttached { .. } => {
                return CloudError::not_found(Resource::Attachment, self.to_string())
            }
            _ => false,
        };
        let message = self.to_string();
        match bad_request {
            true => CloudError::BadRequest {
                message,
                request_id,
            },
            false => CloudError::Conflict {
                message,
                request_id,
            },
        }
    }
}
