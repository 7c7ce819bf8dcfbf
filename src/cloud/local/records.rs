//! The JSON records kept for each object and their one conversion into the port's types.
//! Statuses are stored in Cinder's spelling so a record reads like a Cinder object.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::cloud::{
    Attachment, CopyKind, CopyStatus, Volume, VolumeCopy, VolumeStatus, VolumeType,
};

/// Bumped if the record layout ever changes incompatibly.
pub const RECORD_VERSION: u32 = 1;

/// The availability zone of a backend configured without zones, and of records written before
/// zones existed.
pub const ZONE: &str = "local";

fn default_zone() -> String {
    ZONE.to_string()
}

/// Volume types this backend offers: the default, and one that allows multi-attach.
pub const TYPE_DEFAULT: &str = "local";
pub const TYPE_MULTIATTACH: &str = "local-multiattach";
const TYPE_DEFAULT_ID: &str = "6c0f5a52-4a39-4c2e-9d0f-0c5a1e6b7d01";
const TYPE_MULTIATTACH_ID: &str = "6c0f5a52-4a39-4c2e-9d0f-0c5a1e6b7d02";

pub fn volume_types() -> [VolumeType; 2] {
    [
        VolumeType {
            id: TYPE_DEFAULT_ID.into(),
            name: TYPE_DEFAULT.into(),
            multiattach: false,
        },
        VolumeType {
            id: TYPE_MULTIATTACH_ID.into(),
            name: TYPE_MULTIATTACH.into(),
            multiattach: true,
        },
    ]
}

/// Look a type up by name or id.
pub fn find_volume_type(name_or_id: &str) -> Option<VolumeType> {
    volume_types()
        .into_iter()
        .find(|t| t.name == name_or_id || t.id == name_or_id)
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

pub(super) fn time_of(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentRecord {
    pub attachment_id: String,
    pub server_id: String,
    /// `/dev/loopN` (rewritten by the startup reconcile if the number changed).
    pub device: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeRecord {
    pub version: u32,
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub size_gib: u64,
    /// Cinder spelling: `creating`, `available`, `in-use`, `deleting`, `error`, …
    pub status: String,
    /// Why the volume is in an error status, for wait errors.
    #[serde(default)]
    pub error_reason: Option<String>,
    pub volume_type: String,
    pub multiattach: bool,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub attachments: Vec<AttachmentRecord>,
    #[serde(default)]
    pub snapshot_id: Option<String>,
    #[serde(default)]
    pub source_volume_id: Option<String>,
    #[serde(default)]
    pub backup_id: Option<String>,
    pub created_at_ms: u64,
    /// One of the backend's zones; attaching it to a server of another zone is refused.
    #[serde(default = "default_zone")]
    pub availability_zone: String,
}

impl VolumeRecord {
    pub fn status(&self) -> VolumeStatus {
        VolumeStatus::parse(&self.status)
    }

    pub fn set_status(&mut self, s: VolumeStatus) {
        self.status = s.as_str().to_string();
    }

    /// `in-use` while attached, `available` otherwise (for stable volumes).
    pub fn settle_status(&mut self) {
        self.set_status(if self.attachments.is_empty() {
            VolumeStatus::Available
        } else {
            VolumeStatus::InUse
        });
    }

    pub fn to_volume(&self) -> Volume {
        Volume {
            id: self.id.clone(),
            name: self.name.clone(),
            size_gib: self.size_gib,
            status: self.status(),
            availability_zone: self.availability_zone.clone(),
            volume_type: Some(self.volume_type.clone()),
            multiattach: self.multiattach,
            bootable: false,
            metadata: self.metadata.clone(),
            attachments: self
                .attachments
                .iter()
                .map(|a| Attachment {
                    server_id: a.server_id.clone(),
                    attachment_id: Some(a.attachment_id.clone()),
                    device: Some(a.device.clone()),
                })
                .collect(),
            snapshot_id: self.snapshot_id.clone(),
            source_volume_id: self.source_volume_id.clone(),
            backup_id: self.backup_id.clone(),
            created_at: Some(time_of(self.created_at_ms)),
            group_id: None,
        }
    }
}

/// Snapshots and backups share one record shape (a backup is a snapshot kept elsewhere).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyRecord {
    pub version: u32,
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub volume_id: String,
    /// Backups only: the snapshot the backup was taken from.
    #[serde(default)]
    pub snapshot_id: Option<String>,
    pub size_gib: u64,
    pub status: String,
    #[serde(default)]
    pub error_reason: Option<String>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    pub created_at_ms: u64,
    /// Snapshots only: the group snapshot it is a member of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_snapshot_id: Option<String>,
    /// Backups only: the zone asked for (records without one are in [`ZONE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<String>,
}

impl CopyRecord {
    /// A new snapshot or backup of `volume_id`, `creating` until its data is written; what
    /// only some copies have (metadata, source snapshot, group, zone) the caller sets.
    pub fn creating(
        id: String,
        name: &str,
        description: &Option<String>,
        volume_id: &str,
        size_gib: u64,
    ) -> Self {
        Self {
            version: RECORD_VERSION,
            id,
            name: name.to_string(),
            description: description.clone(),
            volume_id: volume_id.to_string(),
            snapshot_id: None,
            size_gib,
            status: CopyStatus::Creating.as_str().to_string(),
            error_reason: None,
            metadata: BTreeMap::new(),
            created_at_ms: now_ms(),
            group_snapshot_id: None,
            availability_zone: None,
        }
    }

    pub fn to_copy(&self, kind: CopyKind) -> VolumeCopy {
        VolumeCopy {
            kind,
            id: self.id.clone(),
            name: self.name.clone(),
            volume_id: self.volume_id.clone(),
            snapshot_id: self.snapshot_id.clone(),
            size_gib: self.size_gib,
            status: CopyStatus::parse(&self.status),
            availability_zone: (kind == CopyKind::Backup)
                .then(|| self.availability_zone.clone().unwrap_or_else(default_zone)),
            created_at: Some(time_of(self.created_at_ms)),
            metadata: self.metadata.clone(),
            fail_reason: self.error_reason.clone(),
            group_snapshot_id: self.group_snapshot_id.clone(),
        }
    }
}

/// A node id usable as a file name under `DIR/nodes`.
pub(super) fn valid_node_id(id: &str) -> bool {
    !id.is_empty() && id != "." && id != ".." && !id.contains('/') && !id.contains('\0')
}

/// A node's registration (`nodes/<id>`): the server it is and the zone it is in. Nodes of
/// versions without zones wrote their id alone, a line of text: they are in [`ZONE`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRecord {
    pub id: String,
    pub availability_zone: String,
}

impl NodeRecord {
    /// The record in `text`, the file of node `id`; `None` if it is neither form.
    pub fn parse(id: &str, text: &str) -> Option<Self> {
        match serde_json::from_str::<Self>(text) {
            Ok(r) if r.id == id => Some(r),
            Ok(_) => None,
            Err(_) => (text.trim_end_matches('\n') == id).then(|| Self {
                id: id.to_string(),
                availability_zone: default_zone(),
            }),
        }
    }
}

/// A group snapshot: its members are snapshots whose records carry `group_snapshot_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRecord {
    pub version: u32,
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// `creating`, `available`, `deleting`, `error`.
    pub status: String,
    /// The member snapshots, one per volume.
    pub member_ids: Vec<String>,
    pub created_at_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volume_record_round_trips_and_converts() {
        let r = VolumeRecord {
            version: RECORD_VERSION,
            id: "v1".into(),
            name: "n".into(),
            description: None,
            size_gib: 2,
            status: "in-use".into(),
            error_reason: None,
            volume_type: TYPE_DEFAULT.into(),
            multiattach: false,
            metadata: [("k".to_string(), "v".to_string())].into(),
            attachments: vec![AttachmentRecord {
                attachment_id: "a".into(),
                server_id: "node".into(),
                device: "/dev/loop3".into(),
            }],
            snapshot_id: None,
            source_volume_id: None,
            backup_id: None,
            created_at_ms: 1_700_000_000_000,
            availability_zone: "zone-b".into(),
        };
        let json = serde_json::to_string(&r).unwrap();
        let back: VolumeRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        let v = r.to_volume();
        assert_eq!(v.status, VolumeStatus::InUse);
        assert_eq!(v.availability_zone, "zone-b");
        assert_eq!(
            v.attached_to("node").unwrap().device.as_deref(),
            Some("/dev/loop3")
        );
        assert_eq!(v.size_bytes(), 2 << 30);
    }

    #[test]
    fn records_without_a_zone_are_in_the_default_zone() {
        let r: VolumeRecord = serde_json::from_value(serde_json::json!({
            "version": 1, "id": "v1", "name": "n", "size_gib": 1, "status": "available",
            "volume_type": "local", "multiattach": false, "created_at_ms": 1,
        }))
        .unwrap();
        assert_eq!(r.to_volume().availability_zone, ZONE);
        // A node registered by a version without zones wrote its id alone.
        let legacy = NodeRecord::parse("node-1", "node-1\n").unwrap();
        assert_eq!(legacy.availability_zone, ZONE);
        let rec = NodeRecord {
            id: "node-1".into(),
            availability_zone: "zone-b".into(),
        };
        let text = serde_json::to_string(&rec).unwrap();
        assert_eq!(NodeRecord::parse("node-1", &text), Some(rec));
        // Another node's file, or garbage, is no registration of this one.
        assert_eq!(NodeRecord::parse("node-2", &text), None);
        assert_eq!(NodeRecord::parse("node-1", "node-2\n"), None);
    }

    #[test]
    fn types_resolve_by_name_or_id() {
        assert!(!find_volume_type("local").unwrap().multiattach);
        assert!(find_volume_type(TYPE_MULTIATTACH_ID).unwrap().multiattach);
        assert!(find_volume_type("ssd").is_none());
    }
}
