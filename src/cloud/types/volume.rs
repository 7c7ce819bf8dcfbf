//! Volumes as the port sees them: status, attachments, what a new one is made from, and the
//! retype policy.

use std::collections::BTreeMap;
use std::time::SystemTime;

/// Sizes in the cloud are whole GiB, like Cinder.
pub const GIB: u64 = 1 << 30;

/// Lifecycle state of a volume (Cinder's `status`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum VolumeStatus {
    Creating,
    Available,
    Reserved,
    Attaching,
    Detaching,
    InUse,
    Maintenance,
    Deleting,
    AwaitingTransfer,
    Extending,
    Retyping,
    BackingUp,
    RestoringBackup,
    Downloading,
    Uploading,
    Error,
    ErrorDeleting,
    ErrorBackingUp,
    ErrorRestoring,
    ErrorExtending,
    ErrorManaging,
    /// A status this driver does not know; kept verbatim for messages.
    Other(String),
}

impl VolumeStatus {
    /// Cinder's spelling, for messages and for adapters that store it.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Creating => "creating",
            Self::Available => "available",
            Self::Reserved => "reserved",
            Self::Attaching => "attaching",
            Self::Detaching => "detaching",
            Self::InUse => "in-use",
            Self::Maintenance => "maintenance",
            Self::Deleting => "deleting",
            Self::AwaitingTransfer => "awaiting-transfer",
            Self::Extending => "extending",
            Self::Retyping => "retyping",
            Self::BackingUp => "backing-up",
            Self::RestoringBackup => "restoring-backup",
            Self::Downloading => "downloading",
            Self::Uploading => "uploading",
            Self::Error => "error",
            Self::ErrorDeleting => "error_deleting",
            Self::ErrorBackingUp => "error_backing-up",
            Self::ErrorRestoring => "error_restoring",
            Self::ErrorExtending => "error_extending",
            Self::ErrorManaging => "error_managing",
            Self::Other(s) => s,
        }
    }

    /// Parse Cinder's spelling; unknown strings become `Other`.
    pub fn parse(s: &str) -> Self {
        match s {
            "creating" => Self::Creating,
            "available" => Self::Available,
            "reserved" => Self::Reserved,
            "attaching" => Self::Attaching,
            "detaching" => Self::Detaching,
            "in-use" => Self::InUse,
            "maintenance" => Self::Maintenance,
            "deleting" => Self::Deleting,
            "awaiting-transfer" => Self::AwaitingTransfer,
            "extending" => Self::Extending,
            "retyping" => Self::Retyping,
            "backing-up" => Self::BackingUp,
            "restoring-backup" => Self::RestoringBackup,
            "downloading" => Self::Downloading,
            "uploading" => Self::Uploading,
            "error" => Self::Error,
            "error_deleting" => Self::ErrorDeleting,
            "error_backing-up" => Self::ErrorBackingUp,
            "error_restoring" => Self::ErrorRestoring,
            "error_extending" => Self::ErrorExtending,
            "error_managing" => Self::ErrorManaging,
            other => Self::Other(other.to_string()),
        }
    }

    /// Error states end every wait at once.
    pub fn is_error(&self) -> bool {
        matches!(
            self,
            Self::Error
                | Self::ErrorDeleting
                | Self::ErrorBackingUp
                | Self::ErrorRestoring
                | Self::ErrorExtending
                | Self::ErrorManaging
        ) || matches!(self, Self::Other(s) if s.starts_with("error"))
    }

    /// States Cinder leaves by itself; an operation that needs a stable state waits them out.
    pub fn is_transitional(&self) -> bool {
        matches!(
            self,
            Self::Creating
                | Self::Reserved
                | Self::Attaching
                | Self::Detaching
                | Self::Deleting
                | Self::Extending
                | Self::Retyping
                | Self::BackingUp
                | Self::RestoringBackup
                | Self::Downloading
                | Self::Uploading
        )
    }
}

impl std::fmt::Display for VolumeStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One attachment of a volume to a server, as Cinder reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub server_id: String,
    /// Cinder attachment id, when known.
    pub attachment_id: Option<String>,
    /// Device path Nova reported (a hint only; nodes look disks up by serial).
    pub device: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volume {
    pub id: String,
    pub name: String,
    pub size_gib: u64,
    pub status: VolumeStatus,
    pub availability_zone: String,
    /// Volume type name.
    pub volume_type: Option<String>,
    pub multiattach: bool,
    pub bootable: bool,
    pub metadata: BTreeMap<String, String>,
    pub attachments: Vec<Attachment>,
    pub snapshot_id: Option<String>,
    pub source_volume_id: Option<String>,
    /// The backup the volume was restored from, when the cloud reports it.
    pub backup_id: Option<String>,
    pub created_at: Option<SystemTime>,
    /// The Cinder group it is in (a volume is in one at most; Cinder refuses to delete or
    /// retype it there).
    pub group_id: Option<String>,
}

impl Volume {
    pub fn size_bytes(&self) -> u64 {
        self.size_gib * GIB
    }

    pub fn attached_to(&self, server_id: &str) -> Option<&Attachment> {
        self.attachments.iter().find(|a| a.server_id == server_id)
    }
}

/// Where a new volume's content comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VolumeSource {
    Snapshot(String),
    Volume(String),
    Backup(String),
}

/// Cinder scheduler hints (`same_host` / `different_host`), volume UUIDs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchedulerHints {
    pub same_host: Vec<String>,
    pub different_host: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewVolume {
    pub name: String,
    pub size_gib: u64,
    pub description: Option<String>,
    pub volume_type: Option<String>,
    pub availability_zone: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub source: Option<VolumeSource>,
    pub scheduler_hints: SchedulerHints,
}

/// A volume type and what the driver needs to know of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeType {
    pub id: String,
    pub name: String,
    /// Extra spec `multiattach="<is> True"`.
    pub multiattach: bool,
}

/// Filters for listing volumes; every field narrows the result, server-side where the cloud can.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VolumeFilter {
    pub name: Option<String>,
    /// Every pair must match the volume's metadata.
    pub metadata: BTreeMap<String, String>,
}

/// How Cinder may move data on retype: `[BlockStorage] retype-migration-policy`, as parsed.
pub use crate::config::RetypeMigrationPolicy as MigrationPolicy;

#[cfg(test)]
impl Volume {
    /// An available, unattached 1 GiB volume in `nova` with nothing else set: unit tests
    /// change what they are about with struct update syntax.
    pub(crate) fn sample(id: &str) -> Self {
        Volume {
            id: id.into(),
            name: String::new(),
            size_gib: 1,
            status: VolumeStatus::Available,
            availability_zone: "nova".into(),
            volume_type: None,
            multiattach: false,
            bootable: false,
            metadata: Default::default(),
            attachments: vec![],
            snapshot_id: None,
            source_volume_id: None,
            backup_id: None,
            created_at: None,
            group_id: None,
        }
    }
}
