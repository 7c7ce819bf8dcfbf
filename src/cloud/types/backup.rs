//! Backups as the port sees them.

use std::collections::BTreeMap;
use std::time::SystemTime;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BackupStatus {
    Creating,
    Available,
    Deleting,
    Restoring,
    Error,
    ErrorDeleting,
    Other(String),
}

impl BackupStatus {
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

impl std::fmt::Display for BackupStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backup {
    pub id: String,
    pub name: String,
    pub volume_id: String,
    /// The snapshot the backup was taken from, if any.
    pub snapshot_id: Option<String>,
    pub size_gib: u64,
    pub status: BackupStatus,
    pub availability_zone: Option<String>,
    pub created_at: Option<SystemTime>,
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

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackupFilter {
    pub name: Option<String>,
    pub volume_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackupWait {
    Available,
    Deleted,
}
