//! The cloud's objects are not in a state to honour a valid request (FailedPrecondition), or
//! an operation ended in a state an operator must look at (Internal). Data only; worded in
//! `csi::status`.

use crate::cloud::{CloudError, CopyKind, CopyStatus, MigrationPolicy, VolumeStatus};
use crate::driver::types::AccessMode;

/// What kind of object a name should identify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    Volume,
    Snapshot,
    Backup,
    /// The snapshot a backup is taken from.
    TemporarySnapshot,
    GroupSnapshot,
}

/// A change of a volume the cloud refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Extend { gib: u64 },
    Retype { to: String },
    Attach { node: String },
    Detach { node: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// GetCapacity (no secrets) among several clouds without a default one.
    NoCapacityCloud,
    SourceVolumeFailed {
        id: String,
        status: VolumeStatus,
    },
    SourceCopyFailed {
        kind: CopyKind,
        id: String,
        status: CopyStatus,
    },
    /// A volume named like the request in an error state that is not a failed creation of
    /// ours: it may hold data, so it is left alone.
    MayHoldData {
        id: String,
        name: String,
        status: VolumeStatus,
        reason: Option<String>,
    },
    /// Several objects carry the name that should identify one.
    SameName {
        what: Named,
        name: String,
        ids: Vec<String>,
    },
    /// Delete of a volume still attached to `nodes`.
    Attached {
        id: String,
        nodes: Vec<String>,
    },
    HasSnapshots {
        id: String,
        snapshots: Vec<String>,
    },
    /// Cinder refused to delete a stable, detached volume; `message` is Cinder's.
    DeleteRefused {
        id: String,
        message: String,
    },
    /// The cloud refused `change` twice with the volume unchanged; `message` is its reason.
    ChangeRefused {
        id: String,
        status: VolumeStatus,
        change: Change,
        message: String,
    },
    CannotExtend {
        id: String,
        status: VolumeStatus,
    },
    /// An in-use volume and a cloud that cannot extend attached volumes (`why`).
    OnlineExtendUnsupported {
        id: String,
        why: String,
    },
    CannotRetype {
        id: String,
        status: VolumeStatus,
    },
    /// Cinder accepted a retype but left the type (a migration `policy` forbids, or failed).
    NotRetyped {
        id: String,
        to: String,
        policy: MigrationPolicy,
    },
    CannotAttach {
        id: String,
        status: VolumeStatus,
        reason: Option<String>,
    },
    /// Published to `nodes` and its volume type has no multiattach.
    PublishedNoMultiattach {
        id: String,
        nodes: Vec<String>,
    },
    /// Published to `nodes` and `mode` is single-node.
    PublishedSingleNode {
        id: String,
        nodes: Vec<String>,
        mode: AccessMode,
    },
    /// Cinder refused a snapshot of an attached volume without force-create.
    SnapshotNeedsForce {
        message: String,
    },
    NoBackupService,
    BackupsUnsupported {
        why: String,
    },
    CopyDeleteRefused {
        kind: CopyKind,
        id: String,
        status: CopyStatus,
        message: String,
    },
    /// Snapshot `id` is a member of group snapshot `group_snapshot_id`: it goes with the group
    /// snapshot, never on its own.
    GroupMember {
        id: String,
        group_snapshot_id: String,
    },
    /// Group snapshot `id` is still in `status` and the cloud refused to delete it.
    GroupSnapshotDeleteRefused {
        id: String,
        status: CopyStatus,
        message: String,
    },
    /// Topology zone `value` is the label form of several Cinder `zones`.
    AmbiguousZone {
        value: String,
        zones: Vec<String>,
    },
}

/// What became of an object that failed, so the retry knows where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cleanup {
    Deleted,
    /// Boxed: a rare answer that would otherwise double the size of every `Error`.
    DeleteFailed(Box<CloudError>),
}

/// An operation that ended in a state an operator must look at (Internal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A volume we created went into an error state.
    Creation {
        id: String,
        name: String,
        status: VolumeStatus,
        reason: Option<String>,
        cleanup: Cleanup,
    },
    /// A snapshot or backup we took went into an error state.
    Copy {
        kind: CopyKind,
        id: String,
        name: String,
        volume_id: String,
        status: CopyStatus,
        cleanup: Cleanup,
    },
    /// A backup still in `status` after longer than its bound.
    BackupStuck {
        id: String,
        status: CopyStatus,
        age_secs: u64,
        bound_secs: u64,
        secs_per_gib: u64,
        size_gib: u64,
    },
    SnapshotUnusable {
        id: String,
        status: CopyStatus,
    },
    /// A group snapshot we took went into an error state.
    GroupSnapshot {
        id: String,
        name: String,
        volume_ids: Vec<String>,
        status: CopyStatus,
        cleanup: Cleanup,
    },
}
