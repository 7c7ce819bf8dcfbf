//! Snapshots and backups as the port sees them: point-in-time copies of a volume. Cinder gives
//! both the same fields, statuses and life cycle, so one type serves both and `kind` says
//! which; only how one is made differs ([`NewSnapshot`], [`NewBackup`]).

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::cloud::Resource;

/// Which copy: Cinder keeps snapshots and backups in separate APIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CopyKind {
    Snapshot,
    Backup,
}

impl CopyKind {
    pub fn resource(self) -> Resource {
        match self {
            Self::Snapshot => Resource::Snapshot,
            Self::Backup => Resource::Backup,
        }
    }

    /// `snapshot` or `backup`, for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Snapshot => "snapshot",
            Self::Backup => "backup",
        }
    }
}

/// Cinder's `status` of a snapshot or backup.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CopyStatus {
    Creating,
    Available,
    Deleting,
    Restoring,
    Error,
    ErrorDeleting,
    /// A status this driver does not know; kept verbatim for messages.
    Other(String),
}

impl CopyStatus {
    pub fn parse(s: &str) -> Self {
        match s {
            "creating" => Self::Creating,
            "available" => Self::Available,
            "deleting" => Self::Deleting,
            "restoring" => Self::Restoring,
            "error" => Self::Error,
            "error_deleting" => Self::ErrorDeleting,
            other => Self::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Self::Creating => "creating",
            Self::Available => "available",
            Self::Deleting => "deleting",
            Self::Restoring => "restoring",
            Self::Error => "error",
            Self::ErrorDeleting => "error_deleting",
            Self::Other(s) => s,
        }
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Self::Error | Self::ErrorDeleting)
            || matches!(self, Self::Other(s) if s.starts_with("error"))
    }
}

impl std::fmt::Display for CopyStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A snapshot or a backup of a volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeCopy {
    pub kind: CopyKind,
    pub id: String,
    pub name: String,
    pub volume_id: String,
    /// Backups: the snapshot the backup was taken from, if any.
    pub snapshot_id: Option<String>,
    pub size_gib: u64,
    pub status: CopyStatus,
    /// Backups: the availability zone the backup is kept in.
    pub availability_zone: Option<String>,
    pub created_at: Option<SystemTime>,
    pub metadata: BTreeMap<String, String>,
    /// Why it went into an error state, when the cloud says (a backup's `fail_reason`).
    pub fail_reason: Option<String>,
    /// Snapshots: the group snapshot it is a member of (then it is deleted with the group
    /// snapshot, never on its own).
    pub group_snapshot_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewSnapshot {
    pub name: String,
    pub volume_id: String,
    pub description: Option<String>,
    /// Cinder `force`: allow a snapshot of an in-use volume.
    pub force: bool,
    pub metadata: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewBackup {
    pub name: String,
    pub volume_id: String,
    pub snapshot_id: Option<String>,
    pub description: Option<String>,
    pub force: bool,
    pub availability_zone: Option<String>,
    pub metadata: BTreeMap<String, String>,
}

/// Filters for listing snapshots or backups; every field narrows the result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyFilter {
    pub name: Option<String>,
    pub volume_id: Option<String>,
}
