//! What the node core's requests and results are, without protobuf (`csi::node` converts to
//! and from the wire types), and the options it runs with.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::config::BlockStorageConfig;
use crate::driver::types::{CapacityRange, Topology, VolumeCapability};

/// How long stage and expand wait for a volume's disk to appear under the by-id directory
/// (less when the RPC deadline is nearer); then the answer is NotFound, saying to check the
/// attachment. ControllerPublishVolume returns only once Cinder shows the volume attached, by
/// when the guest has normally seen the disk within a second; 10 s covers a busy udev
/// without holding the volume's guard (and kubelet's operation) for the whole RPC deadline.
pub const DEVICE_WAIT: Duration = Duration::from_secs(10);

/// The deadline of a wait for a disk: [`DEVICE_WAIT`] from now, or the RPC's if nearer.
pub fn device_deadline(rpc_deadline: std::time::Instant) -> std::time::Instant {
    rpc_deadline.min(std::time::Instant::now() + DEVICE_WAIT)
}

/// Node options from flags and cloud.conf.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// Staging and target paths must lie inside this directory (`--kubelet-dir`).
    pub kubelet_dir: PathBuf,
    /// `kubelet_dir` with symlinks resolved (at startup), when that differs: the kernel's
    /// mount table shows resolved paths, so "is it still mounted under the kubelet dir"
    /// must look for both forms.
    pub kubelet_dir_resolved: Option<PathBuf>,
    /// `[BlockStorage]` as parsed; the node reports `node-volume-attach-limit` as
    /// `max_volumes_per_node`.
    pub block_storage: BlockStorageConfig,
    /// Report the zone topology segment (`--with-topology`).
    pub with_topology: bool,
    /// `--additional-topology` segments.
    pub additional_topology: Vec<(String, String)>,
}

/// What NodeGetCapabilities advertises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeCapability {
    StageUnstageVolume,
    ExpandVolume,
    GetVolumeStats,
    VolumeCondition,
    SingleNodeMultiWriter,
}

pub const CAPABILITIES: &[NodeCapability] = &[
    NodeCapability::StageUnstageVolume,
    NodeCapability::ExpandVolume,
    NodeCapability::GetVolumeStats,
    NodeCapability::VolumeCondition,
    NodeCapability::SingleNodeMultiWriter,
];

pub struct StageRequest {
    pub volume_id: String,
    pub staging_path: String,
    pub capability: VolumeCapability,
    pub volume_context: HashMap<String, String>,
}

pub struct UnstageRequest {
    pub volume_id: String,
    pub staging_path: String,
}

pub struct PublishRequest {
    pub volume_id: String,
    /// Empty when the CO sent none (FailedPrecondition: this plugin stages every volume).
    pub staging_path: String,
    pub target_path: String,
    pub capability: VolumeCapability,
    pub read_only: bool,
}

pub struct UnpublishRequest {
    pub volume_id: String,
    pub target_path: String,
}

pub struct StatsRequest {
    pub volume_id: String,
    pub volume_path: String,
}

pub struct ExpandRequest {
    pub volume_id: String,
    pub volume_path: String,
    /// Empty when the CO sent none; grown there in preference to `volume_path` when given.
    pub staging_path: String,
    pub capacity: CapacityRange,
    /// Block or mount, when the CO says (it may not).
    pub capability: Option<VolumeCapability>,
}

/// CSI VolumeCondition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub abnormal: bool,
    pub message: String,
}

impl Condition {
    pub fn ok() -> Self {
        Self {
            abnormal: false,
            message: "volume is healthy".into(),
        }
    }
    pub fn abnormal(message: String) -> Self {
        Self {
            abnormal: true,
            message,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VolumeUsage {
    /// Filesystem: bytes and inodes from statvfs.
    Filesystem(crate::host::Usage),
    /// Raw block device: its size.
    Block { total_bytes: u64 },
    /// Nothing could be measured (the condition says why).
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeStats {
    pub usage: VolumeUsage,
    pub condition: Condition,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    pub node_id: String,
    pub max_volumes_per_node: i64,
    pub topology: Option<Topology>,
}
