//! The refusals in Cinder's and Nova's words, and with their codes, as their APIs answer: what
//! the fake says, so the core's tests see what the real cloud answers.

use super::refusal::{Code, Refusal, SourceKind};

/// What Cinder answers for every status that forbids a delete.
fn cinder_delete(status: &impl std::fmt::Display) -> String {
    format!(
        "Invalid volume: Volume status must be available or error or error_restoring or \
         error_extending or error_managing and must not be migrating, attached, belong to a \
         group, have snapshots or be disassociated from snapshots after volume transfer \
         (status {status})"
    )
}

fn cinder_reserve(id: &str, status: &impl std::fmt::Display) -> String {
    format!(
        "Invalid volume: volume {id} status must be available to reserve, but the status is \
         {status}"
    )
}

fn cinder_extend(status: &impl std::fmt::Display) -> String {
    format!(
        "Invalid volume: Volume should be in available or in-use state (with online extend) \
         but is {status}"
    )
}

/// The code and the message of `r`.
pub(super) fn words(r: &Refusal) -> (Code, String) {
    use Code::{BadRequest, Conflict, NoAttachment};
    use Refusal as R;
    match r {
        R::BadSize => (
            BadRequest,
            "Invalid input received: Volume size '0' must be an integer and greater than 0".into(),
        ),
        R::UnknownZone { zone, .. } => (
            BadRequest,
            format!("Availability zone '{zone}' is invalid."),
        ),
        R::DeleteAttached { status, .. }
        | R::DeleteStatus { status, .. }
        | R::DeleteInGroup { status, .. } => (Conflict, cinder_delete(status)),
        R::HasSnapshots { count, .. } => (
            Conflict,
            format!("Invalid volume: Volume still has {count} dependent snapshots."),
        ),
        R::VolumeBeingCopied { status, .. } => (Conflict, cinder_delete(status)),
        R::ExtendNotLarger { .. } => (
            BadRequest,
            "New size for extend must be greater than current size.".into(),
        ),
        R::ExtendAttached { .. } => (Conflict, cinder_extend(&"in-use")),
        R::ExtendStatus { status, .. } => (Conflict, cinder_extend(status)),
        R::RetypeStatus { status, .. } => (
            Conflict,
            format!("Invalid volume: Volume status must be available or in-use, is {status}"),
        ),
        R::RetypeSameType { .. } => (
            BadRequest,
            "Retype requested to the same volume type".into(),
        ),
        R::RetypeMultiattached { id, volume_type } => (
            Conflict,
            format!(
                "Invalid volume: volume {id} is attached to several servers; type \
                 {volume_type} does not allow multiattach"
            ),
        ),
        R::AttachStatus { id, status }
        | R::AttachedElsewhere { id, status, .. }
        | R::MultiattachNotAsked { id, status } => (Conflict, cinder_reserve(id, status)),
        R::AttachZone {
            id,
            zone,
            server,
            server_zone,
        } => (
            BadRequest,
            format!(
                "Invalid volume: Instance {server} and volume {id} are not in the same \
                 availability_zone. Instance is in {server_zone}. Volume is in {zone}"
            ),
        ),
        R::AlreadyAttached { id, server } => (
            Conflict,
            format!("volume {id} is already attached to the instance {server}"),
        ),
        R::DetachStatus { status, .. } => (
            Conflict,
            format!(
                "Invalid volume: Unable to detach volume. Volume status must be 'in-use', is \
                 {status}"
            ),
        ),
        R::SnapshotStatus { id, status } => (
            Conflict,
            format!(
                "Invalid volume: Volume {id} status must be available, but current status is: \
                 {status}"
            ),
        ),
        R::GroupMemberStatus { id, status } => (
            Conflict,
            format!("Invalid volume: volume {id} status must be available or in-use, is {status}"),
        ),
        R::BackupStatus { status, .. } => (
            Conflict,
            format!("Invalid volume: Volume to be backed up must be available, is {status}"),
        ),
        R::BackupOfOtherVolume {
            snapshot,
            of,
            volume,
        } => (
            BadRequest,
            format!("Invalid snapshot: Snapshot {snapshot} is of volume {of}, not {volume}"),
        ),
        R::BackupSnapshotStatus { status, .. } => (
            Conflict,
            format!("Invalid snapshot: Snapshot to be backed up must be available, is {status}"),
        ),
        R::SnapshotDeleteStatus { status, .. } => (
            Conflict,
            format!("Invalid snapshot: Snapshot status must be available or error, is {status}"),
        ),
        R::SnapshotInGroup { id, group } => (
            Conflict,
            format!(
                "Invalid snapshot: Snapshot {id} is part of group snapshot {group}; delete the \
                 group snapshot instead"
            ),
        ),
        R::SnapshotBeingCopied { id, backing_up } => (
            Conflict,
            if *backing_up {
                format!("Invalid snapshot: snapshot {id} is being backed up")
            } else {
                format!("Invalid snapshot: snapshot {id} is being restored")
            },
        ),
        R::BackupDeleteStatus { status, .. } => (
            Conflict,
            format!("Invalid backup: Backup status must be available or error, is {status}"),
        ),
        R::BackupBeingRestored { .. } => (
            Conflict,
            "Invalid backup: Backup status must be available or error, is restoring".into(),
        ),
        R::SourceStatus { kind, status, .. } => (
            BadRequest,
            match kind {
                SourceKind::Snapshot => format!(
                    "Originating snapshot status must be one of 'available' values, is {status}"
                ),
                SourceKind::Volume => {
                    format!("Source volume status must be available or in-use, is {status}")
                }
                SourceKind::Backup => format!("Backup status must be available, is {status}"),
            },
        ),
        R::SourceTooLarge { kind, .. } => (
            BadRequest,
            match kind {
                SourceKind::Snapshot => "Volume size cannot be lesser than the snapshot size",
                SourceKind::Volume => "Clones cannot be smaller than their source",
                SourceKind::Backup => "Volume size cannot be lesser than the backup size",
            }
            .into(),
        ),
        R::GroupSnapshotDeleteStatus { status, .. } => (
            Conflict,
            format!(
                "Invalid GroupSnapshot: GroupSnapshot status must be available or error, and no \
                 Group can be currently using it as source for its creation (status {status})"
            ),
        ),
        R::GroupSnapshotBeingRestored { id } => (
            Conflict,
            format!(
                "Invalid GroupSnapshot: a volume is being restored from a member of group \
                 snapshot {id}"
            ),
        ),
        R::RetypeInGroup { id, group } => (
            BadRequest,
            format!(
                "Invalid input received: volume {id} is in group {group}; remove it from the \
                 group before retyping it"
            ),
        ),
        R::NotAttached { id, server } => (NoAttachment, format!("{id} on {server}")),
    }
}
