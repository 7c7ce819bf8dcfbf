//! Snapshots as the port sees them.

use std::collections::BTreeMap;
use std::time::SystemTime;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SnapshotStatus {
    Creating,
    Available,
    Deleting,
    Error,
    ErrorDeleting,
    Other(String),
}

impl SnapshotStatus {
    pub fn parse(s: &str) -> Self {
        match s {
            "creating" => Self::Creating,
            "available" => Self::Available,
            "deleting" => Self::Deleting,
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

impl std::fmt::Display for SnapshotStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub id: String,
    pub name: String,
    pub volume_id: String,
    pub size_gib: u64,
    pub status: SnapshotStatus,
    pub created_at: Option<SystemTime>,
    pub metadata: BTreeMap<String, String>,
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
pub struct SnapshotFilter {
    pub name: Option<String>,
    pub volume_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotWait {
    Available,
    Deleted,
}
