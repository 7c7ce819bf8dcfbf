//! The refusals in the local backend's words: the objects named, and what to do about it.

use super::refusal::{Code, Refusal, SourceKind};

/// The code and the message of `r`.
pub(super) fn words(r: &Refusal) -> (Code, String) {
    use Code::{BadRequest, Conflict, NoAttachment};
    use Refusal as R;
    match r {
        R::BadSize => (BadRequest, "volume size must be at least 1 GiB".into()),
        R::UnknownZone { zone, zones } => (
            BadRequest,
            format!(
                "availability zone {zone:?} is invalid: the local backend's zones are {zones:?}"
            ),
        ),
        R::DeleteAttached { id, servers, .. } => (
            Conflict,
            format!(
                "volume {id} is attached to {}; detach it first",
                servers.join(", ")
            ),
        ),
        R::DeleteStatus { id, status } => (
            Conflict,
            format!("volume {id} must be available or in error to be deleted, it is {status}"),
        ),
        R::DeleteInGroup { id, group, .. } => (
            Conflict,
            format!("volume {id} is in group {group}; remove it from the group first"),
        ),
        R::HasSnapshots { id, count } => (
            Conflict,
            format!("volume {id} has {count} dependent snapshot(s); delete them first or cascade"),
        ),
        R::VolumeBeingCopied { id, .. } => (
            Conflict,
            format!("volume {id} is being copied (snapshot, backup or clone in progress)"),
        ),
        R::ExtendNotLarger {
            size_gib,
            new_size_gib,
            ..
        } => (
            BadRequest,
            format!(
                "new size {new_size_gib} GiB must be greater than the current size {size_gib} GiB"
            ),
        ),
        R::ExtendAttached { id } => (
            Conflict,
            format!("volume {id} is in-use; extending an attached volume needs online extend"),
        ),
        R::ExtendStatus { id, status } => (
            Conflict,
            format!("volume {id} must be available or in-use to be extended, it is {status}"),
        ),
        R::RetypeStatus { id, status } => (
            Conflict,
            format!("volume {id} must be available or in-use to be retyped, it is {status}"),
        ),
        R::RetypeSameType { id, volume_type } => (
            BadRequest,
            format!("volume {id} already has type {volume_type}"),
        ),
        R::RetypeInGroup { id, group } => (
            BadRequest,
            format!(
                "Invalid input received: volume {id} is in group {group}; remove it from the \
                 group before retyping it"
            ),
        ),
        R::RetypeMultiattached { id, volume_type } => (
            Conflict,
            format!(
                "volume {id} is attached to several servers; type {volume_type} does not allow \
                 that"
            ),
        ),
        R::AttachStatus { id, status } => (
            Conflict,
            format!("volume {id} must be available to be attached, it is {status}"),
        ),
        R::AttachZone {
            id,
            zone,
            server,
            server_zone,
        } => (
            BadRequest,
            format!(
                "volume {id} is in availability zone {zone:?} and server {server} in \
                 {server_zone:?}: a volume attaches only to servers of its own zone"
            ),
        ),
        R::AlreadyAttached { id, server } => (
            Conflict,
            format!("volume {id} is already attached to server {server}"),
        ),
        R::AttachedElsewhere { id, server, .. } => (
            Conflict,
            format!(
                "volume {id} is attached to server {} and is not multiattach",
                server.as_deref().unwrap_or("another")
            ),
        ),
        R::MultiattachNotAsked { id, .. } => (
            BadRequest,
            format!(
                "volume {id} is multiattach and already attached: attaching it again needs \
                 the multiattach microversion"
            ),
        ),
        R::NotAttached { id, server } => (NoAttachment, format!("{id} on {server}")),
        R::DetachStatus { id, status } => (
            Conflict,
            format!("volume {id} must be in-use to be detached, it is {status}"),
        ),
        R::SnapshotStatus { id, status } | R::GroupMemberStatus { id, status } => (
            Conflict,
            format!("volume {id} must be available or in-use to be snapshotted, it is {status}"),
        ),
        R::BackupStatus { id, status } => (
            Conflict,
            format!(
                "volume {id} must be available (or in-use with force) to be backed up, it is \
                 {status}"
            ),
        ),
        R::BackupOfOtherVolume {
            snapshot,
            of,
            volume,
        } => (
            BadRequest,
            format!("snapshot {snapshot} is of volume {of}, not {volume}"),
        ),
        R::BackupSnapshotStatus { snapshot, status } => (
            Conflict,
            format!("snapshot {snapshot} must be available to be backed up, it is {status}"),
        ),
        R::SnapshotDeleteStatus { id, status } => (
            Conflict,
            match status {
                crate::cloud::CopyStatus::Creating => {
                    format!("snapshot {id} is still being created")
                }
                _ => format!(
                    "snapshot {id} must be available or in error to be deleted, it is {status}"
                ),
            },
        ),
        R::SnapshotInGroup { id, group } => (
            Conflict,
            format!("snapshot {id} is part of group snapshot {group}; delete the group snapshot"),
        ),
        R::SnapshotBeingCopied { id, .. } => (
            Conflict,
            format!("snapshot {id} is being copied (a restore or backup is in progress)"),
        ),
        R::BackupDeleteStatus { id, status } => (
            Conflict,
            match status {
                crate::cloud::CopyStatus::Creating => format!("backup {id} is still being created"),
                _ => format!(
                    "backup {id} must be available or in error to be deleted, it is {status}"
                ),
            },
        ),
        R::BackupBeingRestored { id } => (Conflict, format!("backup {id} is being restored")),
        R::SourceStatus { kind, id, status } => (
            Conflict,
            match kind {
                SourceKind::Snapshot => {
                    format!("snapshot {id} must be available to restore from, it is {status}")
                }
                SourceKind::Volume => {
                    format!("volume {id} must be available or in-use to clone, it is {status}")
                }
                SourceKind::Backup => {
                    format!("backup {id} must be available to restore from, it is {status}")
                }
            },
        ),
        R::SourceTooLarge {
            kind,
            id,
            size_gib,
            source_gib,
        } => (
            BadRequest,
            format!(
                "requested size {size_gib} GiB is smaller than the {} {id} ({source_gib} GiB)",
                match kind {
                    SourceKind::Snapshot => "snapshot",
                    SourceKind::Volume => "source volume",
                    SourceKind::Backup => "backup",
                }
            ),
        ),
        R::GroupSnapshotDeleteStatus { id, status } => (
            Conflict,
            match status {
                crate::cloud::CopyStatus::Creating => {
                    format!("group snapshot {id} is still being created")
                }
                _ => format!(
                    "group snapshot {id} must be available or in error to be deleted, it is \
                     {status}"
                ),
            },
        ),
        R::GroupSnapshotBeingRestored { id } => (
            Conflict,
            format!("a volume is being restored from a member of group snapshot {id}"),
        ),
    }
}
