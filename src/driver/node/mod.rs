//! The node core: stage, publish, unpublish, unstage, stats, expand and info on top of the
//! host and metadata ports. Each RPC validates its input, takes the volume's in-flight guard,
//! and runs all of its host work inside ONE `spawn_blocking` (the host traits are sync).

mod block;
mod info;
mod mkfs_marker;
pub mod params;
mod publish;
mod stage;
mod stats;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_recovery;
#[cfg(test)]
mod tests_validation;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OnceCell;
use tokio::time::Instant;

use crate::driver::types::{CapacityRange, Topology, VolumeCapability};
use crate::driver::{Error, InFlight, Result};
use crate::host::Host;
use crate::metadata::{InstanceMetadata, Metadata};

pub use block::STAGED_DEVICE;
pub use info::NodeReadiness;
pub use params::Access;

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

/// The stats guard's key: a volume at one path.
fn stats_key(volume_id: &str, path: &std::path::Path) -> String {
    format!("{volume_id} at {}", path.display())
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
    /// `[BlockStorage] node-volume-attach-limit` (the config's default is 256); reported as
    /// `max_volumes_per_node`.
    pub max_volumes_per_node: i64,
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

pub struct NodeCore {
    host: Host,
    metadata: Arc<dyn Metadata>,
    opts: Arc<NodeOptions>,
    inflight: InFlight,
    /// Per-volume guard of NodeGetVolumeStats (see [`NodeCore::stats`]).
    stats_inflight: InFlight,
    instance: OnceCell<InstanceMetadata>,
}

impl NodeCore {
    pub fn new(host: Host, metadata: Arc<dyn Metadata>, opts: NodeOptions) -> Arc<Self> {
        Arc::new(Self {
            host,
            metadata,
            opts: Arc::new(opts),
            inflight: InFlight::new(),
            stats_inflight: InFlight::new(),
            instance: OnceCell::new(),
        })
    }

    pub fn options(&self) -> &NodeOptions {
        &self.opts
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Run `work` with the volume's guard held on the blocking pool. The guard moves into the
    /// closure, so it is released only when the host work has ended, also when the RPC was
    /// cancelled meanwhile.
    async fn run<T, F>(&self, volume_id: &str, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Host) -> Result<T> + Send + 'static,
    {
        let guard = self.inflight.try_lock(volume_id)?;
        let host = self.host.clone();
        tokio::task::spawn_blocking(move || {
            let _guard = guard;
            work(&host)
        })
        .await
        .map_err(|e| Error::internal(format!("node operation task failed: {e}")))?
    }

    pub async fn stage(&self, req: StageRequest, deadline: Instant) -> Result<()> {
        let plan = stage::StagePlan::new(req, &self.opts)?;
        let id = plan.volume_id.clone();
        let deadline = device_deadline(deadline.into_std());
        self.run(&id, move |h| stage::stage(h, &plan, deadline))
            .await
    }

    pub async fn unstage(&self, req: UnstageRequest) -> Result<()> {
        let id = params::volume_id(&req.volume_id)?;
        let path = params::kubelet_path(
            "staging_target_path",
            &req.staging_path,
            &self.opts.kubelet_dir,
        )?;
        let kubelet = stage::KubeletDir::of(&self.opts);
        self.run(&id, move |h| stage::unstage(h, &path, &kubelet))
            .await
    }

    /// Publish never waits for a device (a staged volume's disk is there), so it takes no
    /// deadline.
    pub async fn publish(&self, req: PublishRequest) -> Result<()> {
        let plan = publish::PublishPlan::new(req, &self.opts)?;
        let id = plan.volume_id.clone();
        self.run(&id, move |h| publish::publish(h, &plan)).await
    }

    pub async fn unpublish(&self, req: UnpublishRequest) -> Result<()> {
        let id = params::volume_id(&req.volume_id)?;
        let path = params::kubelet_path("target_path", &req.target_path, &self.opts.kubelet_dir)?;
        self.run(&id, move |h| publish::unpublish(h, &path)).await
    }

    /// Stats do not take the volume's guard: they only read, and kubelet polls them while
    /// other operations may run. They take their own per-volume guard instead: a statvfs on
    /// a hung device blocks its thread for as long as the device hangs, and kubelet polls
    /// again every minute; without the guard each poll would strand one more blocking thread.
    /// With it, one call per volume and path runs and the others are Aborted at once. (Per
    /// path, not per volume: pods sharing a volume are polled on their own timers, and one
    /// must not fail the other's poll; hung threads stay bounded by the volume's paths.)
    pub async fn stats(&self, req: StatsRequest) -> Result<VolumeStats> {
        let id = params::volume_id(&req.volume_id)?;
        let path =
            params::volume_path(&id, "volume_path", &req.volume_path, &self.opts.kubelet_dir)?;
        let guard = self.stats_inflight.try_lock(stats_key(&id, &path))?;
        let host = self.host.clone();
        tokio::task::spawn_blocking(move || {
            let _guard = guard;
            stats::stats(&host, &id, &path)
        })
        .await
        .map_err(|e| Error::internal(format!("node stats task failed: {e}")))?
    }

    /// Returns the device's size in bytes after the grow.
    pub async fn expand(&self, req: ExpandRequest, deadline: Instant) -> Result<u64> {
        let id = params::volume_id(&req.volume_id)?;
        let mut path =
            params::volume_path(&id, "volume_path", &req.volume_path, &self.opts.kubelet_dir)?;
        if !req.staging_path.is_empty() {
            path = params::volume_path(
                &id,
                "staging_target_path",
                &req.staging_path,
                &self.opts.kubelet_dir,
            )?;
        }
        let block = req.capability.as_ref().map(|c| c.access_type.is_block());
        let required = req.capacity.required_bytes;
        let deadline = device_deadline(deadline.into_std());
        let vid = id.clone();
        self.run(&id, move |h| {
            stats::expand(h, &vid, &path, block, required, deadline)
        })
        .await
    }

    pub async fn info(&self) -> Result<NodeInfo> {
        let inst = self
            .instance
            .get_or_try_init(|| self.metadata.instance())
            .await?;
        Ok(info::node_info(inst, &self.opts))
    }
}
