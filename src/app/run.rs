//! Serving: the services for the plan's modes on one endpoint, until a signal.

use std::sync::Arc;
use std::time::Duration;

use tonic::transport::Server;

use super::clouds::{controller_clouds, CloudUpGauge};
use super::error::AppError;
use super::local_node::{local_node_id, local_node_zone};
use super::options::{by_id_dir, controller_options};
use super::plan::plan;
use crate::app::cli::{Backend, ServeArgs};
use crate::config::CloudConfig;
use crate::driver::controller::Controller;
use crate::driver::node::{NodeCore, NodeHealth, NodeOptions, NodeReadiness, NODE_TOOLS_REFRESH};
use crate::driver::probe::{CloudMonitor, Readiness};
use crate::host::linux::LinuxHost;
use crate::host::metadata::Metadata;
use crate::server::csi::controller::ControllerService;
use crate::server::csi::group_controller::GroupControllerService;
use crate::server::csi::identity::IdentityService;
use crate::server::csi::node::NodeService;
use crate::server::csi::pb::controller_server::ControllerServer;
use crate::server::csi::pb::group_controller_server::GroupControllerServer;
use crate::server::csi::pb::identity_server::IdentityServer;
use crate::server::csi::pb::node_server::NodeServer;
use crate::server::metrics::Metrics;
use crate::server::{self, Listener, RpcSpanLayer, RpcTracker};

pub async fn run(args: ServeArgs) -> Result<(), AppError> {
    let plan = plan(&args)?;
    let ignored = args.upstream.ignored();
    if !ignored.is_empty() {
        tracing::warn!(
            flags = %ignored.join(" "),
            "upstream cinder-csi-plugin flags accepted and ignored: this driver has no use for them"
        );
    }
    if let Some(value) = std::env::var_os("NODE_ID") {
        tracing::warn!(NODE_ID = ?value, "{}", crate::app::cli::NODE_ID_ENV_WARNING);
    }
    let http_addr = args
        .http_endpoint
        .as_deref()
        .map(crate::server::http_endpoint::parse_addr)
        .transpose()
        .map_err(AppError::Config)?;
    let metrics = Metrics::new();
    // Probe and /healthz: the plugin's own health, local and fast. /readyz adds `readiness`.
    let mut health: Vec<Arc<dyn Readiness>> = Vec::new();
    let mut readiness: Vec<Arc<dyn Readiness>> = Vec::new();
    // Built before anything binds: a bad backend or config exits 64 first.
    let mut local = None;
    let controller = if plan.controller {
        let (clouds, adapters, standby) = controller_clouds(&args, &plan, &metrics).await?;
        local = standby;
        // Rotated credentials (the Secret updated in place) are taken without a restart.
        super::reload::Reloader::new(args.cloud_config.clone(), args.cloud_name.clone(), adapters)
            .spawn();
        // Cloud reachability is watched in the background, never asked by Probe.
        let monitor = CloudMonitor::new(
            clouds.clone(),
            Some(Arc::new(CloudUpGauge(metrics.clone()))),
        );
        monitor.spawn();
        readiness.push(monitor);
        let mut core = Controller::new(
            clouds,
            controller_options(&args, &plan.config.block_storage),
        );
        if args.upstream.pvc_annotations() {
            core = core.with_claims(super::claims::claim_reader(&args).await?);
        }
        Some(Arc::new(core))
    } else {
        None
    };
    // Group snapshots on either backend: the local one freezes its members, Cinder takes them
    // through a consistent group type (each refuses what it cannot make consistent).
    let group_controller = controller
        .as_ref()
        .map(|core| GroupControllerServer::new(GroupControllerService::new(core.clone())));
    let controller = controller.map(|core| ControllerServer::new(ControllerService::new(core)));
    if args.backend == Backend::Local && plan.node {
        // A controller process sharing DIR learns this node from the registration.
        let dir = args.local_dir.clone().unwrap_or_default();
        let (id, zone) = (local_node_id(&args), local_node_zone(&args).to_string());
        tokio::task::spawn_blocking(move || crate::cloud::local::register_node(&dir, &id, &zone))
            .await
            .map_err(|e| AppError::Runtime(e.to_string()))?
            .map_err(|e| AppError::Runtime(format!("local backend: {e}")))?;
    }

    let node_service = match (&plan.metadata, plan.node) {
        (Some(metadata), true) => {
            let core = node_core(&args, &plan.config, metadata.clone());
            let node_health = NodeHealth::new(core.clone(), NODE_TOOLS_REFRESH);
            // The first lookup at startup, so no Probe waits for it.
            let first = node_health.clone();
            tokio::spawn(async move { first.refresh().await });
            health.push(Arc::new(node_health));
            readiness.push(Arc::new(NodeReadiness { core: core.clone() }));
            Some(NodeServer::new(NodeService::new(core)))
        }
        _ => None,
    };

    let identity = IdentityService {
        driver_name: args.driver_name.clone(),
        vendor_version: crate::config::version::vendor_version(),
        controller: plan.controller,
        group_controller: group_controller.is_some(),
        topology: args.with_topology,
        health: health.clone(),
    };

    let listener = Listener::bind(&plan.endpoint)
        .await
        .map_err(AppError::Runtime)?;
    tracing::info!(
        endpoint = %args.endpoint,
        controller = plan.controller,
        node = plan.node,
        backend = ?args.backend,
        version = %crate::config::version::vendor_version(),
        "serving CSI"
    );
    if let Some(addr) = http_addr {
        let state = Arc::new(crate::server::http_endpoint::HttpState {
            metrics: metrics.clone(),
            health,
            readiness,
        });
        let bound = crate::server::http_endpoint::spawn(addr, state)
            .await
            .map_err(AppError::Runtime)?;
        tracing::info!(address = %bound, "serving /metrics, /healthz and /readyz");
    }
    let rpcs = RpcTracker::new();
    // Free pages go back to the kernel after activity (see crate::app::memory).
    crate::app::memory::spawn_trimmer({
        let rpcs = rpcs.clone();
        move || rpcs.served()
    });
    let mut router = Server::builder()
        .layer(RpcSpanLayer::new(metrics, rpcs.clone()))
        .add_service(IdentityServer::new(identity));
    // Two controllers on one local DIR: a standby's calls go to the holder (app/standby.rs).
    let mut standby = None;
    router = match (&local, controller, group_controller) {
        (Some(l), Some(c), Some(g)) => {
            standby = Some((c.clone(), g.clone()));
            router.add_service(l.route(c)).add_service(l.route(g))
        }
        (_, c, g) => router.add_optional_service(c).add_optional_service(g),
    };
    let router = router.add_optional_service(node_service);
    let failed = Arc::new(std::sync::Mutex::new(None));
    // The lock holder serves its standbys on a task of its own, through the drain too (it
    // holds DIR until it exits): their socket closes last, once the drain is over.
    let (holder_tx, holder_rx) = tokio::sync::oneshot::channel();
    let holder = match (local, standby) {
        (Some(l), Some((c, g))) => Some(tokio::spawn(async move {
            let _ = holder_tx.send(l.serve_standbys(c, g).await);
        })),
        _ => None,
    };
    let shutdown = {
        let failed = failed.clone();
        async move {
            tokio::select! {
                () = server::shutdown_signal() => {}
                Ok(e) = holder_rx => *failed.lock().unwrap() = Some(e),
            }
        }
    };
    let served = server::serve(
        router,
        listener,
        shutdown,
        Duration::from_secs(args.shutdown_grace),
        rpcs,
    )
    .await;
    if let Some(h) = holder {
        h.abort();
    }
    served.map_err(AppError::Runtime)?;
    let failure = failed.lock().unwrap().take();
    failure.map_or(Ok(()), |e| Err(AppError::Runtime(e)))
}

/// The node core on the Linux host, disks looked up under [`by_id_dir`].
pub fn node_core(
    args: &ServeArgs,
    config: &CloudConfig,
    metadata: Arc<dyn Metadata>,
) -> Arc<NodeCore> {
    let by_id = by_id_dir(args);
    let opts = NodeOptions {
        kubelet_dir: args.kubelet_dir.clone(),
        // Resolved once: a kubelet dir behind a symlink (e.g. to a data disk) appears
        // resolved in the mount table.
        kubelet_dir_resolved: std::fs::canonicalize(&args.kubelet_dir)
            .ok()
            .filter(|r| *r != args.kubelet_dir),
        block_storage: config.block_storage.clone(),
        with_topology: args.with_topology,
        additional_topology: args.additional_topology.clone(),
    };
    let mut host = LinuxHost::new(by_id, &args.kubelet_dir);
    if let Some(by_path) = super::device_addresses::by_path(args, config) {
        host = host.with_by_path(by_path);
    }
    NodeCore::new(host.host_with(), metadata, opts)
}
