//! The node core: each RPC validates its input, takes the volume's in-flight guard, and runs
//! all of its host work inside ONE `spawn_blocking` (the host traits are sync).

use std::sync::Arc;

use tokio::sync::OnceCell;
use tokio::time::Instant;

use super::model::{
    device_deadline, ExpandRequest, NodeInfo, NodeOptions, PublishRequest, StageRequest,
    StatsRequest, UnpublishRequest, UnstageRequest, VolumeStats,
};
use super::plan::StagePlan;
use super::{info, params, publish, stage, stats};
use crate::driver::{Error, InFlight, Result, Task};
use crate::host::metadata::{InstanceMetadata, Metadata};
use crate::host::Host;

/// The stats guard's key: a volume at one path.
pub(super) fn stats_key(volume_id: &str, path: &std::path::Path) -> String {
    format!("{volume_id} at {}", path.display())
}

pub struct NodeCore {
    host: Host,
    metadata: Arc<dyn Metadata>,
    opts: Arc<NodeOptions>,
    pub(super) inflight: InFlight,
    /// Per-volume guard of NodeGetVolumeStats (see [`NodeCore::stats`]).
    pub(super) stats_inflight: InFlight,
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
        .map_err(|source| Error::TaskFailed {
            task: Task::Operation,
            source,
        })?
    }

    pub async fn stage(&self, req: StageRequest, deadline: Instant) -> Result<()> {
        let plan = StagePlan::new(req, &self.opts)?;
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
        .map_err(|source| Error::TaskFailed {
            task: Task::Stats,
            source,
        })?
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
            .get_or_try_init(|| async {
                let inst = self.metadata.instance().await?;
                // Once per process: what every NodeGetInfo will report.
                let info = info::node_info(&inst, &self.opts);
                tracing::info!(
                    node_id = %info.node_id,
                    topology = ?info.topology,
                    max_volumes_per_node = info.max_volumes_per_node,
                    "NodeGetInfo reports"
                );
                Ok::<_, crate::host::metadata::MetadataError>(inst)
            })
            .await?;
        Ok(info::node_info(inst, &self.opts))
    }
}
