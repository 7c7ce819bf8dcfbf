//! Cinder's volumes, snapshots, backups, volume types, quotas, zones and messages, and their
//! conversions into the port's types.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::lenient::{loose_bool, null_as_default, parse_time, string_map, system_time, Link};
use crate::cloud::{
    Attachment, CopyKind, CopyStatus, Volume, VolumeCopy, VolumeStatus, VolumeType,
};

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct VolumeAttachmentDto {
    /// `null` for an attachment to a host rather than a Nova server (e.g. a volume attached
    /// by `cinder local-attach` or a bare-metal connector): no node of ours, so skipped.
    #[serde(default)]
    pub server_id: Option<String>,
    #[serde(default)]
    pub attachment_id: Option<String>,
    #[serde(default)]
    pub device: Option<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct VolumeDto {
    pub id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    pub size: u64,
    pub status: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub availability_zone: String,
    #[serde(default)]
    pub volume_type: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub multiattach: bool,
    #[serde(default, deserialize_with = "loose_bool")]
    pub bootable: bool,
    #[serde(default, deserialize_with = "string_map")]
    pub metadata: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub attachments: Vec<VolumeAttachmentDto>,
    #[serde(default)]
    pub snapshot_id: Option<String>,
    #[serde(default)]
    pub source_volid: Option<String>,
    #[serde(default)]
    pub backup_id: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub updated_at: Option<String>,
    /// The owning project, when policy shows it (project readers see it by default).
    #[serde(rename = "os-vol-tenant-attr:tenant_id", default)]
    pub project_id: Option<String>,
    /// Since 3.13.
    #[serde(default)]
    pub group_id: Option<String>,
}

/// Where a volume stands on Cinder's clock, for the watcher's time-filtered lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeMark {
    /// Never updated since creation (`updated_at` is null): only a `created_at` filter finds it.
    Created(DateTime<Utc>),
    /// Last updated then: an `updated_at` filter at or before it finds it.
    Updated(DateTime<Utc>),
}

impl ChangeMark {
    pub fn time(self) -> DateTime<Utc> {
        match self {
            ChangeMark::Created(t) | ChangeMark::Updated(t) => t,
        }
    }
}

impl VolumeDto {
    pub fn change_mark(&self) -> Option<ChangeMark> {
        match (&self.updated_at, &self.created_at) {
            (Some(u), _) => parse_time(u).map(ChangeMark::Updated),
            (None, Some(c)) => parse_time(c).map(ChangeMark::Created),
            (None, None) => None,
        }
    }
}

impl From<VolumeDto> for Volume {
    fn from(d: VolumeDto) -> Self {
        Volume {
            created_at: system_time(&d.created_at),
            status: VolumeStatus::parse(&d.status),
            attachments: d
                .attachments
                .into_iter()
                .filter_map(|a| {
                    Some(Attachment {
                        server_id: a.server_id?,
                        attachment_id: a.attachment_id,
                        device: a.device,
                    })
                })
                .collect(),
            id: d.id,
            name: d.name,
            size_gib: d.size,
            availability_zone: d.availability_zone,
            volume_type: d.volume_type,
            multiattach: d.multiattach,
            bootable: d.bootable,
            metadata: d.metadata,
            snapshot_id: d.snapshot_id,
            source_volume_id: d.source_volid,
            backup_id: d.backup_id,
            group_id: d.group_id,
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct VolumeEnvelope {
    pub volume: VolumeDto,
}

#[derive(Debug, Deserialize)]
pub struct VolumeList {
    pub volumes: Vec<VolumeDto>,
    #[serde(default)]
    pub volumes_links: Vec<Link>,
}

/// A snapshot or a backup as Cinder sends it. Snapshots have no `snapshot_id`,
/// `availability_zone` or `fail_reason`; a backup being created may have a null `size`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct CopyDto {
    pub id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    pub volume_id: String,
    #[serde(default)]
    pub snapshot_id: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub size: u64,
    pub status: String,
    #[serde(default)]
    pub availability_zone: Option<String>,
    #[serde(default)]
    pub fail_reason: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default, deserialize_with = "string_map")]
    pub metadata: BTreeMap<String, String>,
    /// Snapshots, since 3.14.
    #[serde(default)]
    pub group_snapshot_id: Option<String>,
}

impl CopyDto {
    pub fn into_copy(self, kind: CopyKind) -> VolumeCopy {
        VolumeCopy {
            kind,
            created_at: system_time(&self.created_at),
            status: CopyStatus::parse(&self.status),
            id: self.id,
            name: self.name,
            volume_id: self.volume_id,
            snapshot_id: self.snapshot_id,
            size_gib: self.size,
            availability_zone: self.availability_zone,
            metadata: self.metadata,
            fail_reason: self.fail_reason,
            group_snapshot_id: self.group_snapshot_id,
        }
    }
}

/// `{"snapshot": {...}}` or `{"backup": {...}}`.
#[derive(Debug, Deserialize)]
pub struct CopyEnvelope {
    #[serde(rename = "snapshot", alias = "backup")]
    pub copy: CopyDto,
}

/// What a backup create answers: `{"backup": {"id", "links", "name"}}`.
#[derive(Debug, Deserialize)]
pub struct BackupCreated {
    pub backup: IdOnly,
}

#[derive(Debug, Deserialize)]
pub struct IdOnly {
    pub id: String,
}

/// `{"snapshots": [...], "snapshots_links": [...]}` or the same of `backups`.
#[derive(Debug, Deserialize)]
pub struct CopyList {
    #[serde(rename = "snapshots", alias = "backups")]
    pub copies: Vec<CopyDto>,
    #[serde(default, rename = "snapshots_links", alias = "backups_links")]
    pub links: Vec<Link>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct VolumeTypeDto {
    pub id: String,
    pub name: String,
    #[serde(default, deserialize_with = "string_map")]
    pub extra_specs: BTreeMap<String, String>,
}

impl From<VolumeTypeDto> for VolumeType {
    fn from(d: VolumeTypeDto) -> Self {
        VolumeType {
            multiattach: d
                .extra_specs
                .get("multiattach")
                .is_some_and(|v| is_true_spec(v)),
            id: d.id,
            name: d.name,
        }
    }
}

/// Extra spec booleans are written `<is> True` (or plain `True`).
pub(super) fn is_true_spec(v: &str) -> bool {
    let v = v.trim();
    let v = v.strip_prefix("<is>").unwrap_or(v).trim();
    v.eq_ignore_ascii_case("true")
}

#[derive(Debug, Deserialize)]
pub struct VolumeTypeEnvelope {
    pub volume_type: VolumeTypeDto,
}

#[derive(Debug, Deserialize)]
pub struct VolumeTypeList {
    pub volume_types: Vec<VolumeTypeDto>,
}

/// One quota with usage (`os-quota-sets/{project}?usage=true`). -1 = unlimited.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
pub struct QuotaUsage {
    pub limit: i64,
    #[serde(default)]
    pub in_use: i64,
    #[serde(default)]
    pub reserved: i64,
}

impl QuotaUsage {
    /// What is left; `None` = unlimited.
    pub fn headroom(&self) -> Option<u64> {
        (self.limit >= 0).then(|| (self.limit - self.in_use - self.reserved).max(0) as u64)
    }
}

/// The quota set: `id` plus one [`QuotaUsage`] per resource (`gigabytes`,
/// `gigabytes_<type>`, `per_volume_gigabytes`, ...).
#[derive(Debug, Deserialize)]
pub struct QuotaSetEnvelope {
    pub quota_set: BTreeMap<String, serde_json::Value>,
}

impl QuotaSetEnvelope {
    pub fn usage(&self, key: &str) -> Option<QuotaUsage> {
        serde_json::from_value(self.quota_set.get(key)?.clone()).ok()
    }
}

/// `os-availability-zone`: Cinder's availability zones (`zoneState` is not needed: an
/// unavailable zone is still the name a volume is created in).
#[derive(Debug, Deserialize)]
pub struct AvailabilityZoneList {
    #[serde(rename = "availabilityZoneInfo")]
    pub zones: Vec<AvailabilityZoneDto>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct AvailabilityZoneDto {
    #[serde(rename = "zoneName")]
    pub name: String,
}

/// A Cinder user message (why a volume went to `error`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct MessageDto {
    #[serde(default)]
    pub user_message: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct MessageList {
    pub messages: Vec<MessageDto>,
}
