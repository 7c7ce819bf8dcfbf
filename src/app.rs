//! Wiring: turn the command line and config into adapters, services and a running server.
//! Everything is built here and passed down as `Arc`s; nothing is global.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tonic::transport::Server;

use crate::cli::ServeArgs;
use crate::config::{self, CloudConfig, GlobalConfig};
use crate::csi::controller::ControllerService;
use crate::csi::identity::IdentityService;
use crate::csi::node::NodeService;
use crate::csi::pb::controller_server::ControllerServer;
use crate::csi::pb::identity_server::IdentityServer;
use crate::csi::pb::node_server::NodeServer;
use crate::driver::probe::Readiness;
use crate::metadata::{self, Metadata};
use crate::metrics::Metrics;
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
    /// Everything read from `--cloud-config`.
    pub config: CloudConfig,
    /// The `[Global]` sections the controller serves (OpenStack backend only), validated.
    pub clouds: BTreeMap<String, GlobalConfig>,
    /// Node mode: who this node is (`--node-id`, else `[Metadata] search-order`); for the node
    /// service. Built without I/O; the first lookup happens at NodeGetInfo.
    pub metadata: Option<Arc<dyn Metadata>>,
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
    let openstack_controller = controller && args.backend == crate::cli::Backend::Openstack;
    // The controller needs credentials, so every file must exist; a node tolerates a
    // missing file (it needs only [BlockStorage] and [Metadata]), as upstream does.
    let config = if openstack_controller {
        if args.cloud_config.is_empty() {
            return Err(AppError::Config(
                "the OpenStack controller needs --cloud-config PATH (cloud.conf with [Global] credentials)"
                    .into(),
            ));
        }
        config::load(&args.cloud_config)
    } else {
        config::load_optional(&args.cloud_config)
    }
    .map_err(|e| AppError::Config(e.to_string()))?;
    let clouds = if openstack_controller {
        config
            .resolve_clouds(&args.cloud_name, &config::ProcessEnv)
            .map_err(|e| AppError::Config(e.to_string()))?
    } else {
        BTreeMap::new()
    };
    let metadata = if node {
        let options = metadata_options(args, &config.metadata);
        Some(metadata::from_options(options).map_err(|e| AppError::Config(e.detail().into()))?)
    } else {
        None
    };
    Ok(Plan {
        endpoint,
        controller,
        node,
        config,
        clouds,
        metadata,
    })
}

/// Flags win over `[Metadata]`: `--node-id` skips the lookup, `--metadata-url` replaces the URL.
pub fn metadata_options(
    args: &ServeArgs,
    cfg: &config::MetadataConfig,
) -> metadata::MetadataOptions {
    let search_order = cfg
        .search_order
        .iter()
        .map(|s| match s {
            config::MetadataSource::ConfigDrive => metadata::Source::ConfigDrive,
            config::MetadataSource::MetadataService => metadata::Source::MetadataService,
        })
        .collect();
    metadata::MetadataOptions {
        node_id: args.node_id.clone(),
        search_order,
        metadata_url: args
            .metadata_url
            .clone()
            .unwrap_or_else(|| cfg.metadata_url.clone()),
        timeouts: metadata::Timeouts {
            request: cfg.request_timeout,
            ..Default::default()
        },
        ..Default::default()
    }
}

pub async fn run(args: ServeArgs) -> Result<(), AppError> {
    let plan = plan(&args)?;
    let http_addr = args
        .http_endpoint
        .as_deref()
        .map(crate::http_endpoint::parse_addr)
        .transpose()
        .map_err(AppError::Config)?;
    let metrics = Metrics::new();
    let readiness: Vec<Arc<dyn Readiness>> = Vec::new();

    let identity = IdentityService {
        driver_name: args.driver_name.clone(),
        vendor_version: crate::version::vendor_version(),
        controller: plan.controller,
        topology: args.with_topology,
        readiness: readiness.clone(),
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
    if let Some(addr) = http_addr {
        let state = Arc::new(crate::http_endpoint::HttpState {
            metrics: metrics.clone(),
            readiness,
        });
        let bound = crate::http_endpoint::spawn(addr, state)
            .await
            .map_err(AppError::Runtime)?;
        tracing::info!(address = %bound, "serving /metrics and /healthz");
    }
    let router = Server::builder()
        .layer(RpcSpanLayer::new(metrics))
        .add_service(IdentityServer::new(identity))
        .add_optional_service(
            plan.controller
                .then(|| ControllerServer::new(ControllerService)),
        )
        .add_optional_service(plan.node.then(|| NodeServer::new(NodeService)));
    server::serve(
        router,
        listener,
        server::shutdown_signal(),
        Duration::from_secs(args.shutdown_grace),
    )
    .await
    .map_err(AppError::Runtime)
}
