//! Wiring: turn the command line and config into adapters, services and a running server.
//! Everything is built here and passed down as `Arc`s; nothing is global.

use std::sync::Arc;
use std::time::Duration;

use tonic::transport::Server;

use crate::cli::ServeArgs;
use crate::csi::controller::ControllerService;
use crate::csi::identity::IdentityService;
use crate::csi::node::NodeService;
use crate::csi::pb::controller_server::ControllerServer;
use crate::csi::pb::identity_server::IdentityServer;
use crate::csi::pb::node_server::NodeServer;
use crate::driver::node::{NodeCore, NodeOptions, NodeReadiness, DEFAULT_MAX_VOLUMES_PER_NODE};
use crate::driver::probe::Readiness;
use crate::host::linux::LinuxHost;
use crate::metadata::{InstanceMetadata, Metadata, StaticMetadata};
use crate::server::{self, Endpoint, Listener, RpcSpanLayer};

/// Startup failures. `Config` exits with status 64 (EX_USAGE) before anything binds.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Runtime(String),
}

impl AppError {
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Config(_) => 64,
            Self::Runtime(_) => 1,
        }
    }
}

/// Validated startup configuration derived from the flags.
pub struct Plan {
    pub endpoint: Endpoint,
    pub controller: bool,
    pub node: bool,
}

/// Check everything that can be checked without side effects.
pub fn plan(args: &ServeArgs) -> Result<Plan, AppError> {
    let mode = args.effective_mode().map_err(AppError::Config)?;
    let endpoint = Endpoint::parse(&args.endpoint).map_err(AppError::Config)?;
    let controller = matches!(mode, crate::cli::Mode::Controller | crate::cli::Mode::All);
    let node = matches!(mode, crate::cli::Mode::Node | crate::cli::Mode::All);
    if args.backend == crate::cli::Backend::Local && args.local_dir.is_none() {
        return Err(AppError::Config(
            "--backend local needs --local-dir DIR (where volumes and their records live)".into(),
        ));
    }
    if args.driver_name.is_empty() {
        return Err(AppError::Config("--driver-name must not be empty".into()));
    }
    if !args.kubelet_dir.is_absolute() {
        return Err(AppError::Config(format!(
            "--kubelet-dir {} must be an absolute path",
            args.kubelet_dir.display()
        )));
    }
    // METADATA ADAPTERS PLUG IN HERE: until the config-drive / metadata-service lookup lands,
    // a node needs its identity on the command line.
    if node && args.node_id.as_deref().is_none_or(str::is_empty) {
        return Err(AppError::Config(
            "node mode needs --node-id until metadata lookup lands".into(),
        ));
    }
    Ok(Plan {
        endpoint,
        controller,
        node,
    })
}

pub async fn run(args: ServeArgs) -> Result<(), AppError> {
    let plan = plan(&args)?;
    let mut readiness: Vec<Arc<dyn Readiness>> = Vec::new();
    let node_service = if plan.node {
        let core = node_core(&args);
        readiness.push(Arc::new(NodeReadiness { core: core.clone() }));
        Some(NodeServer::new(NodeService::new(core)))
    } else {
        None
    };

    let identity = IdentityService {
        driver_name: args.driver_name.clone(),
        vendor_version: crate::version::vendor_version(),
        controller: plan.controller,
        topology: args.with_topology,
        readiness,
    };

    let listener = Listener::bind(&plan.endpoint)
        .await
        .map_err(AppError::Runtime)?;
    tracing::info!(
        endpoint = %args.endpoint,
        controller = plan.controller,
        node = plan.node,
        backend = ?args.backend,
        version = %crate::version::vendor_version(),
        "serving CSI"
    );
    let router = Server::builder()
        .layer(RpcSpanLayer)
        .add_service(IdentityServer::new(identity))
        .add_optional_service(
            plan.controller
                .then(|| ControllerServer::new(ControllerService)),
        )
        .add_optional_service(node_service);
    server::serve(
        router,
        listener,
        server::shutdown_signal(),
        Duration::from_secs(args.shutdown_grace),
    )
    .await
    .map_err(AppError::Runtime)
}

/// The node core with the Linux host. Disks are looked up under `--by-id-dir`, or under
/// `<local-dir>/by-id` for the local backend (its attach makes `virtio-<id[:20]>` links there).
fn node_core(args: &ServeArgs) -> Arc<NodeCore> {
    let by_id = match (args.backend, &args.local_dir) {
        (crate::cli::Backend::Local, Some(dir)) => dir.join("by-id"),
        _ => args.by_id_dir.clone(),
    };
    // METADATA ADAPTERS PLUG IN HERE: `plan` guarantees --node-id for now.
    let metadata: Arc<dyn Metadata> = Arc::new(StaticMetadata {
        instance: InstanceMetadata {
            uuid: args.node_id.clone().unwrap_or_default(),
            availability_zone: None,
        },
    });
    let opts = NodeOptions {
        kubelet_dir: args.kubelet_dir.clone(),
        // CLOUD.CONF PLUGS IN HERE: [BlockStorage] node-volume-attach-limit.
        max_volumes_per_node: DEFAULT_MAX_VOLUMES_PER_NODE,
        with_topology: args.with_topology,
        additional_topology: args.additional_topology.clone(),
    };
    NodeCore::new(LinuxHost::host(by_id), metadata, opts)
}
