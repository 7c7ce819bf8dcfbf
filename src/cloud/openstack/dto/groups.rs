//! Cinder's group types, groups and group snapshots (microversions 3.11, 3.13, 3.14). The
//! adapter keeps them to itself: the port sees a group snapshot with its members
//! (`GroupSnapshot`), never a group.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::Deserialize;

use super::lenient::{null_as_default, system_time};
use crate::cloud::CopyStatus;

/// `group_specs` is there only for callers policy lets see it (`group:access_group_types_specs`,
/// admin by default): `None` means hidden, not empty.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct GroupTypeDto {
    pub id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    #[serde(default)]
    pub group_specs: Option<BTreeMap<String, serde_json::Value>>,
}

/// Cinder's test for a consistent group type (`volume_utils.is_group_a_cg_snapshot_type`).
pub const CONSISTENT_SPEC: &str = "consistent_group_snapshot_enabled";
pub const CONSISTENT_VALUE: &str = "<is> True";

impl GroupTypeDto {
    /// `Some(true)` when its snapshots are consistent, `None` when the specs are hidden.
    pub fn consistent(&self) -> Option<bool> {
        self.group_specs.as_ref().map(|s| {
            s.get(CONSISTENT_SPEC)
                .and_then(|v| v.as_str())
                .is_some_and(|v| v == CONSISTENT_VALUE)
        })
    }
}

#[derive(Debug, Deserialize)]
pub struct GroupTypeEnvelope {
    pub group_type: GroupTypeDto,
}

#[derive(Debug, Deserialize)]
pub struct GroupTypeList {
    pub group_types: Vec<GroupTypeDto>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct GroupDto {
    pub id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    pub status: String,
    #[serde(default)]
    pub availability_zone: Option<String>,
    /// The group type's id.
    #[serde(default)]
    pub group_type: Option<String>,
    /// Volume type ids.
    #[serde(default, deserialize_with = "null_as_default")]
    pub volume_types: Vec<String>,
    /// Member volume ids (3.25+, with `list_volume=True`).
    #[serde(default)]
    pub volumes: Option<Vec<String>>,
    #[serde(default)]
    pub created_at: Option<String>,
}

impl GroupDto {
    pub fn created_at(&self) -> Option<SystemTime> {
        system_time(&self.created_at)
    }
}

#[derive(Debug, Deserialize)]
pub struct GroupEnvelope {
    pub group: GroupDto,
}

#[derive(Debug, Deserialize)]
pub struct GroupList {
    pub groups: Vec<GroupDto>,
}

/// A create answers `{"group": {"id", "name"}}`.
#[derive(Debug, Deserialize)]
pub struct GroupCreated {
    pub group: super::IdOnly,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct GroupSnapshotDto {
    pub id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    pub status: String,
    #[serde(default)]
    pub group_id: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
}

impl GroupSnapshotDto {
    pub fn status(&self) -> CopyStatus {
        CopyStatus::parse(&self.status)
    }

    pub fn created_at(&self) -> Option<SystemTime> {
        system_time(&self.created_at)
    }
}

#[derive(Debug, Deserialize)]
pub struct GroupSnapshotEnvelope {
    pub group_snapshot: GroupSnapshotDto,
}

#[derive(Debug, Deserialize)]
pub struct GroupSnapshotList {
    pub group_snapshots: Vec<GroupSnapshotDto>,
}
