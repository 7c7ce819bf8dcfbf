//! What a rule refuses, as data: the words are each voice's (cinder_words.rs, local_words.rs).

use crate::cloud::{CopyStatus, VolumeStatus};

/// What a new volume is made from, for the words of its refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Snapshot,
    Volume,
    Backup,
}

/// One of Cinder's rules broken. Ids are the objects' ids; statuses are theirs as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A new volume of 0 GiB.
    BadSize,
    /// A zone the cloud does not have.
    UnknownZone {
        zone: String,
        zones: Vec<String>,
    },
    DeleteAttached {
        id: String,
        servers: Vec<String>,
        status: VolumeStatus,
    },
    DeleteStatus {
        id: String,
        status: VolumeStatus,
    },
    DeleteInGroup {
        id: String,
        group: String,
        status: VolumeStatus,
    },
    HasSnapshots {
        id: String,
        count: usize,
    },
    VolumeBeingCopied {
        id: String,
        status: VolumeStatus,
    },
    ExtendNotLarger {
        id: String,
        size_gib: u64,
        new_size_gib: u64,
    },
    ExtendAttached {
        id: String,
    },
    ExtendStatus {
        id: String,
        status: VolumeStatus,
    },
    RetypeStatus {
        id: String,
        status: VolumeStatus,
    },
    RetypeSameType {
        id: String,
        volume_type: String,
    },
    RetypeInGroup {
        id: String,
        group: String,
    },
    RetypeMultiattached {
        id: String,
        volume_type: String,
    },
    AttachStatus {
        id: String,
        status: VolumeStatus,
    },
    AttachZone {
        id: String,
        zone: String,
        server: String,
        server_zone: String,
    },
    AlreadyAttached {
        id: String,
        server: String,
    },
    /// In use elsewhere and not multiattach.
    AttachedElsewhere {
        id: String,
        server: Option<String>,
        status: VolumeStatus,
    },
    /// Multiattach and in use, but the request did not ask for multiattach.
    MultiattachNotAsked {
        id: String,
        status: VolumeStatus,
    },
    NotAttached {
        id: String,
        server: String,
    },
    DetachStatus {
        id: String,
        status: VolumeStatus,
    },
    SnapshotStatus {
        id: String,
        status: VolumeStatus,
    },
    GroupMemberStatus {
        id: String,
        status: VolumeStatus,
    },
    BackupStatus {
        id: String,
        status: VolumeStatus,
    },
    BackupOfOtherVolume {
        snapshot: String,
        of: String,
        volume: String,
    },
    BackupSnapshotStatus {
        snapshot: String,
        status: CopyStatus,
    },
    SnapshotDeleteStatus {
        id: String,
        status: CopyStatus,
    },
    SnapshotInGroup {
        id: String,
        group: String,
    },
    SnapshotBeingCopied {
        id: String,
        backing_up: bool,
    },
    BackupDeleteStatus {
        id: String,
        status: CopyStatus,
    },
    BackupBeingRestored {
        id: String,
    },
    SourceStatus {
        kind: SourceKind,
        id: String,
        status: String,
    },
    SourceTooLarge {
        kind: SourceKind,
        id: String,
        size_gib: u64,
        source_gib: u64,
    },
    GroupSnapshotDeleteStatus {
        id: String,
        status: CopyStatus,
    },
    GroupSnapshotBeingRestored {
        id: String,
    },
}

/// The kind of error a refusal is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Code {
    /// The object's state forbids it (Cinder's 400 "Invalid volume", Nova's 409).
    Conflict,
    /// The request itself is wrong.
    BadRequest,
    /// The volume is not attached to that server: the message names the attachment.
    NoAttachment,
}
