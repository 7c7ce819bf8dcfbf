//! Requests and results of the controller core: what a CSI controller request means, without
//! protobuf. `csi::controller` converts to and from the wire types.

use std::collections::BTreeMap;
use std::time::SystemTime;

use tokio::time::Instant;

use super::group_params::GroupSnapshotParams;
use super::params::{MutableParams, SnapshotParams, VolumeParams};
use crate::driver::types::{CapacityRange, Topology, TopologyRequirement, VolumeCapability};
use crate::driver::Unsupported;

/// CSI `VolumeContentSource`. A Cinder backup is addressed as a snapshot (its id is what
/// CreateSnapshot returned for `type: backup`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentSource {
    Snapshot(String),
    Volume(String),
}

#[derive(Debug, Clone)]
pub struct CreateVolume {
    pub name: String,
    pub capacity: CapacityRange,
    pub capabilities: Vec<VolumeCapability>,
    pub params: VolumeParams,
    pub mutable: MutableParams,
    /// Cloud from the `cloud` secret; `""` = default.
    pub cloud: String,
    pub source: Option<ContentSource>,
    pub topology: TopologyRequirement,
    pub deadline: Instant,
}

/// CSI `Volume`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeInfo {
    pub id: String,
    pub capacity_bytes: u64,
    pub context: BTreeMap<String, String>,
    pub source: Option<ContentSource>,
    pub topology: Vec<Topology>,
}

#[derive(Debug, Clone)]
pub struct DeleteVolume {
    pub volume_id: String,
    pub cloud: String,
    pub deadline: Instant,
}

#[derive(Debug, Clone)]
pub struct Publish {
    pub volume_id: String,
    pub node_id: String,
    pub capability: VolumeCapability,
    pub readonly: bool,
    pub cloud: String,
    pub deadline: Instant,
}

#[derive(Debug, Clone)]
pub struct Unpublish {
    pub volume_id: String,
    /// `None` = from every node (CSI: "If the value is unset, the SP MUST unpublish the
    /// volume from all nodes it is published to").
    pub node_id: Option<String>,
    pub cloud: String,
    pub deadline: Instant,
}

/// CSI `VolumeCondition`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub abnormal: bool,
    pub message: String,
}

/// ListVolumes / ControllerGetVolume entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeEntry {
    pub volume: VolumeInfo,
    pub published_node_ids: Vec<String>,
    pub condition: Condition,
}

#[derive(Debug, Clone, Default)]
pub struct ListVolumes {
    /// 0 = no limit.
    pub max_entries: u32,
    pub starting_token: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VolumesPage {
    pub entries: Vec<VolumeEntry>,
    pub next_token: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ValidateCapabilities {
    pub volume_id: String,
    pub capabilities: Vec<VolumeCapability>,
    pub params: VolumeParams,
    pub mutable: MutableParams,
    pub cloud: String,
}

/// `Ok(())` = confirmed; `Err(why)` = not confirmed, and why (the response's message).
pub type Validation = std::result::Result<(), Unsupported>;

#[derive(Debug, Clone)]
pub struct GetCapacity {
    pub capabilities: Vec<VolumeCapability>,
    pub params: VolumeParams,
    /// Zone from `accessible_topology`.
    pub zone: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapacityInfo {
    pub available_bytes: u64,
    pub maximum_volume_bytes: Option<u64>,
    pub minimum_volume_bytes: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct CreateSnapshot {
    pub name: String,
    pub source_volume_id: String,
    pub params: SnapshotParams,
    pub cloud: String,
    pub deadline: Instant,
}

/// CSI `Snapshot`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotInfo {
    pub id: String,
    pub source_volume_id: String,
    pub size_bytes: u64,
    pub created_at: SystemTime,
    pub ready_to_use: bool,
    /// The group snapshot it is a member of.
    pub group_snapshot_id: Option<String>,
}

#[derive(Debug, Clone)]
pub struct DeleteSnapshot {
    pub snapshot_id: String,
    pub cloud: String,
    pub deadline: Instant,
}

#[derive(Debug, Clone, Default)]
pub struct ListSnapshots {
    pub max_entries: u32,
    pub starting_token: Option<String>,
    pub source_volume_id: Option<String>,
    pub snapshot_id: Option<String>,
    /// The `cloud` secret when given; otherwise every cloud is listed.
    pub cloud: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotsPage {
    pub entries: Vec<SnapshotInfo>,
    pub next_token: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ExpandVolume {
    pub volume_id: String,
    pub capacity: CapacityRange,
    pub capability: Option<VolumeCapability>,
    pub cloud: String,
    pub deadline: Instant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expanded {
    pub capacity_bytes: u64,
    pub node_expansion_required: bool,
}

#[derive(Debug, Clone)]
pub struct ModifyVolume {
    pub volume_id: String,
    pub mutable: MutableParams,
    pub cloud: String,
    pub deadline: Instant,
}

#[derive(Debug, Clone)]
pub struct CreateGroupSnapshot {
    pub name: String,
    pub source_volume_ids: Vec<String>,
    pub params: GroupSnapshotParams,
    pub cloud: String,
    pub deadline: Instant,
}

/// CSI `VolumeGroupSnapshot`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSnapshotInfo {
    pub id: String,
    /// One per source volume, in the order of their volume ids.
    pub snapshots: Vec<SnapshotInfo>,
    pub created_at: SystemTime,
    /// Every member is ready.
    pub ready_to_use: bool,
}

/// GetVolumeGroupSnapshot / DeleteVolumeGroupSnapshot: the group snapshot and the member ids
/// the CO knows (empty: not given, nothing to compare).
#[derive(Debug, Clone)]
pub struct GroupSnapshotRef {
    pub group_snapshot_id: String,
    pub snapshot_ids: Vec<String>,
    /// The `cloud` secret when given; otherwise every cloud is asked.
    pub cloud: Option<String>,
    pub deadline: Instant,
}
