//! Wiring: turn the command line and config into adapters, services and a running server.
//! Everything is built here and passed down as `Arc`s; nothing is global.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tonic::transport::Server;

use crate::cli::{Backend, ServeArgs};
use crate::cloud::local::{LocalCloud, LocalOptions};
use crate::cloud::openstack::{self, ApiMetrics, ApiObserver, OpenStack, OpenStackOptions};
use crate::cloud::{Cloud, Clouds, MigrationPolicy};
use crate::config::{self, BlockStorageConfig, CloudConfig, GlobalConfig};
use crate::csi::controller::ControllerService;
use crate::csi::identity::IdentityService;
use crate::csi::node::NodeService;
use crate::csi::pb::controller_server::ControllerServer;
use crate::csi::pb::identity_server::IdentityServer;
use crate::csi::pb::node_server::NodeServer;
use crate::driver::controller::{Controller, ControllerOptions};
use crate::driver::node::{NodeCore, NodeHealth, NodeOptions, NodeReadiness, NODE_TOOLS_REFRESH};
use crate::driver::probe::{CloudHealthObserver, CloudMonitor, Readiness};
use crate::host::linux::LinuxHost;
use crate::metadata::{self, Metadata};
use crate::metrics::Metrics;
use crate::server::{self, Endpoint, Listener, RpcSpanLayer, RpcTracker};

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
    let metadata = if node && args.backend == Backend::Local {
        // The local backend's node is this machine, in the backend's only zone.
        let id = local_node_id(args);
        Some(Arc::new(metadata::StaticMetadata {
            instance: metadata::InstanceMetadata {
                uuid: id,
                availability_zone: Some(crate::cloud::local::ZONE.to_string()),
            },
        }) as Arc<dyn Metadata>)
    } else if node {
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

/// Node id of a local-backend process: `--node-id`, else the host name.
pub fn local_node_id(args: &ServeArgs) -> String {
    args.node_id.clone().unwrap_or_else(|| {
        nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_string())
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

/// One `[Global]` section (validated, clouds.yaml applied) as adapter options.
pub fn openstack_options(g: &GlobalConfig, bs: &BlockStorageConfig) -> OpenStackOptions {
    let auth = openstack::AuthOptions {
        user_id: g.user_id.clone(),
        username: g.username.clone(),
        password: g.password.clone(),
        token: g.token.clone(),
        project_id: g.tenant_id.clone(),
        project_name: g.tenant_name.clone(),
        project_domain_id: g.tenant_domain_id.clone(),
        project_domain_name: g.tenant_domain_name.clone(),
        domain_id: g.domain_id.clone(),
        domain_name: g.domain_name.clone(),
        user_domain_id: g.user_domain_id.clone(),
        user_domain_name: g.user_domain_name.clone(),
        application_credential_id: g.application_credential_id.clone(),
        application_credential_name: g.application_credential_name.clone(),
        application_credential_secret: g.application_credential_secret.clone(),
        trust_id: g.trust_id.clone(),
        trustee_id: g.trustee_id.clone(),
        trustee_password: g.trustee_password.clone(),
    };
    let mut o = OpenStackOptions::new(g.auth_url.clone().unwrap_or_default(), auth);
    o.region = g.region.clone();
    o.interface = g.endpoint_type();
    o.tls = openstack::TlsOptions {
        ca_file: g.ca_file.clone(),
        cert_file: g.cert_file.clone(),
        key_file: g.key_file.clone(),
        insecure: g.insecure(),
    };
    o.ignore_volume_microversion = bs.ignore_volume_microversion;
    if let Some(n) = bs.api_concurrency {
        o.api_concurrency = n;
    }
    o
}

/// Reports every OpenStack request to the Prometheus registry.
struct ApiToPrometheus(Arc<Metrics>);

impl ApiObserver for ApiToPrometheus {
    fn observe(&self, op: openstack::Op, latency: Duration, failed: bool) {
        self.0
            .observe_api_request(op.name(), latency.as_secs_f64(), failed);
    }
}

/// The OpenStack clouds the controller serves: one adapter per resolved `[Global]` section,
/// all counting into one [`ApiMetrics`]. No request is made here; a bad section is a
/// configuration error (exit 64).
async fn openstack_clouds(
    plan: &Plan,
    metrics: &Arc<Metrics>,
) -> Result<(Clouds, Arc<ApiMetrics>), AppError> {
    let api_metrics = Arc::new(ApiMetrics::with_observer(ApiToPrometheus(metrics.clone())));
    let mut clouds = Vec::new();
    for (name, global) in &plan.clouds {
        let os = openstack_cloud(name, global, &plan.config.block_storage, &api_metrics).await?;
        clouds.push(os.into_cloud());
    }
    Ok((Clouds::new(clouds), api_metrics))
}

/// The adapter of one validated `[Global]` section, as the controller builds it (no request
/// is made).
pub async fn openstack_cloud(
    name: &str,
    global: &GlobalConfig,
    bs: &BlockStorageConfig,
    api_metrics: &Arc<ApiMetrics>,
) -> Result<OpenStack, AppError> {
    let mut opts = openstack_options(global, bs);
    // Upstream's Go transport honours HTTP(S)_PROXY / NO_PROXY; so do we.
    opts.proxy = openstack::ProxyOptions::from_env(|k| std::env::var(k).ok());
    OpenStack::new(name, &opts, api_metrics.clone())
        .await
        .map_err(AppError::Config)
}

/// The clouds the controller serves, from the chosen backend and the validated `[Global]`
/// sections in `plan.clouds`: `cloud::openstack` builds one `Cloud` per section (its requests
/// reported to `metrics`), `cloud::local` one from `--local-dir`.
pub async fn build_clouds(
    args: &ServeArgs,
    plan: &Plan,
    metrics: &Arc<Metrics>,
) -> Result<Clouds, AppError> {
    match args.backend {
        Backend::Local => {
            let dir = args
                .local_dir
                .clone()
                .ok_or_else(|| AppError::Config("--backend local needs --local-dir DIR".into()))?;
            // Opening reconciles loop devices and links with the records (blocking pool).
            let local = Arc::new(
                LocalCloud::open(LocalOptions {
                    dir,
                    nodes: vec![local_node_id(args)],
                })
                .await
                .map_err(|e| AppError::Runtime(format!("local backend: {e}")))?,
            );
            Ok(Clouds::new([Cloud {
                name: String::new(),
                storage: local.clone(),
                compute: local,
            }]))
        }
        Backend::Openstack => Ok(openstack_clouds(plan, metrics).await?.0),
    }
}

/// Sets `cinder_csi_cloud_up` from the background cloud checks.
struct CloudUpGauge(Arc<Metrics>);

impl CloudHealthObserver for CloudUpGauge {
    fn observe(&self, cloud: &str, up: bool) {
        self.0.set_cloud_up(cloud, up);
    }
}

/// Controller behaviour from the flags and cloud.conf `[BlockStorage]`.
pub fn controller_options(args: &ServeArgs, bs: &config::BlockStorageConfig) -> ControllerOptions {
    ControllerOptions {
        cluster: args.cluster.clone(),
        with_topology: args.with_topology,
        ignore_volume_az: bs.ignore_volume_az,
        cascade_delete: bs.cascade_delete,
        list_cluster_volumes_only: bs.list_cluster_volumes_only,
        retype_policy: match bs.retype_migration_policy {
            config::RetypeMigrationPolicy::Never => MigrationPolicy::Never,
            config::RetypeMigrationPolicy::OnDemand => MigrationPolicy::OnDemand,
        },
    }
}

pub async fn run(args: ServeArgs) -> Result<(), AppError> {
    let plan = plan(&args)?;
    let ignored = args.upstream.ignored();
    if !ignored.is_empty() {
        tracing::warn!(
            flags = %ignored.join(" "),
            "upstream cinder-csi-plugin flags accepted and ignored: this driver has no use for them"
        );
    }
    for warning in args.upstream.warnings() {
        tracing::warn!("{warning}");
    }
    if let Some(value) = std::env::var_os("NODE_ID") {
        tracing::warn!(NODE_ID = ?value, "{}", crate::cli::NODE_ID_ENV_WARNING);
    }
    let http_addr = args
        .http_endpoint
        .as_deref()
        .map(crate::http_endpoint::parse_addr)
        .transpose()
        .map_err(AppError::Config)?;
    let metrics = Metrics::new();
    // Probe and /healthz: the plugin's own health, local and fast. /readyz adds `readiness`.
    let mut health: Vec<Arc<dyn Readiness>> = Vec::new();
    let mut readiness: Vec<Arc<dyn Readiness>> = Vec::new();
    // Built before anything binds: a bad backend or config exits 64 first.
    let controller = if plan.controller {
        let clouds = build_clouds(&args, &plan, &metrics).await?;
        // Cloud reachability is watched in the background, never asked by Probe.
        let monitor = CloudMonitor::new(
            clouds.clone(),
            Some(Arc::new(CloudUpGauge(metrics.clone()))),
        );
        monitor.spawn();
        readiness.push(monitor);
        let core = Controller::new(
            clouds,
            controller_options(&args, &plan.config.block_storage),
        );
        Some(ControllerServer::new(ControllerService::new(Arc::new(
            core,
        ))))
    } else {
        None
    };
    if args.backend == Backend::Local && plan.node {
        // A controller process sharing DIR learns this node from the registration.
        let dir = args.local_dir.clone().unwrap_or_default();
        let id = local_node_id(&args);
        tokio::task::spawn_blocking(move || crate::cloud::local::register_node(&dir, &id))
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
        vendor_version: crate::version::vendor_version(),
        controller: plan.controller,
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
        version = %crate::version::vendor_version(),
        "serving CSI"
    );
    if let Some(addr) = http_addr {
        let state = Arc::new(crate::http_endpoint::HttpState {
            metrics: metrics.clone(),
            health,
            readiness,
        });
        let bound = crate::http_endpoint::spawn(addr, state)
            .await
            .map_err(AppError::Runtime)?;
        tracing::info!(address = %bound, "serving /metrics, /healthz and /readyz");
    }
    let rpcs = RpcTracker::new();
    let router = Server::builder()
        .layer(RpcSpanLayer::new(metrics, rpcs.clone()))
        .add_service(IdentityServer::new(identity))
        .add_optional_service(controller)
        .add_optional_service(node_service);
    server::serve(
        router,
        listener,
        server::shutdown_signal(),
        Duration::from_secs(args.shutdown_grace),
        rpcs,
    )
    .await
    .map_err(AppError::Runtime)
}

/// Where the node looks up disks: `--by-id-dir`, or `<local-dir>/by-id` for the local
/// backend (its attach makes `virtio-<id[:20]>` links there).
pub fn by_id_dir(args: &ServeArgs) -> std::path::PathBuf {
    match (args.backend, &args.local_dir) {
        (crate::cli::Backend::Local, Some(dir)) => dir.join("by-id"),
        _ => args.by_id_dir.clone(),
    }
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
        max_volumes_per_node: i64::from(config.block_storage.node_volume_attach_limit),
        with_topology: args.with_topology,
        additional_topology: args.additional_topology.clone(),
    };
    NodeCore::new(LinuxHost::host(by_id, &args.kubelet_dir), metadata, opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::path::Path;

    fn args(extra: &[&str]) -> ServeArgs {
        let mut v = vec!["cinder-csi"];
        v.extend_from_slice(extra);
        crate::cli::Cli::try_parse_from(v).unwrap().serve
    }

    fn controller_plan() -> Plan {
        Plan {
            endpoint: Endpoint::parse("unix:///tmp/csi.sock").unwrap(),
            controller: true,
            node: false,
            config: CloudConfig::default(),
            clouds: BTreeMap::new(),
            metadata: None,
        }
    }

    #[tokio::test]
    async fn local_backend_builds_one_default_cloud() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display().to_string();
        let a = args(&["--backend", "local", "--local-dir", &d, "--node-id", "n1"]);
        let clouds = build_clouds(&a, &controller_plan(), &Metrics::new())
            .await
            .unwrap();
        let cloud = clouds.get("").expect("the default cloud");
        assert_eq!(clouds.len(), 1);
        assert_eq!(cloud.compute.get_server("n1").await.unwrap().id, "n1");
        assert!(cloud
            .compute
            .get_server("n2")
            .await
            .unwrap_err()
            .is_not_found());
    }

    #[test]
    fn options_from_flags() {
        let a = args(&["--cluster", "c1", "--with-topology=false"]);
        let bs = config::BlockStorageConfig {
            ignore_volume_az: true,
            cascade_delete: true,
            list_cluster_volumes_only: true,
            retype_migration_policy: config::RetypeMigrationPolicy::OnDemand,
            ..Default::default()
        };
        let o = controller_options(&a, &bs);
        assert_eq!(o.cluster, "c1");
        assert!(!o.with_topology);
        assert!(o.ignore_volume_az && o.cascade_delete && o.list_cluster_volumes_only);
        assert_eq!(o.retype_policy, MigrationPolicy::OnDemand);
        let o = controller_options(&a, &config::BlockStorageConfig::default());
        assert_eq!(o.retype_policy, MigrationPolicy::Never);
        assert!(!o.cascade_delete);
    }

    #[test]
    fn cloud_conf_sections_become_adapter_options() {
        let text = "[Global]\nauth-url = https://keystone.example/v3\nusername = demo\n\
                    password = s3cret\nuser-domain-name = Default\ntenant-name = demo\n\
                    tenant-domain-id = default\nregion = RegionTwo\nos-endpoint-type = internal\n\
                    ca-file = /etc/ssl/ca.pem\n\
                    [Global \"east\"]\nauth-url = http://k:5000\napplication-credential-id = ac\n\
                    application-credential-secret = appsecret\n\
                    [BlockStorage]\nignore-volume-microversion = true\n";
        let cfg = config::parse_str(Path::new("cloud.conf"), text).unwrap();
        let clouds = cfg
            .resolve_clouds(
                &["".to_string(), "east".to_string()],
                &config::FixedEnv::default(),
            )
            .unwrap();
        let o = openstack_options(&clouds[""], &cfg.block_storage);
        assert_eq!(o.auth_url, "https://keystone.example/v3");
        assert_eq!(o.auth.username.as_deref(), Some("demo"));
        assert_eq!(o.auth.password.as_ref().map(|p| p.expose()), Some("s3cret"));
        assert_eq!(o.auth.project_name.as_deref(), Some("demo"));
        assert_eq!(o.auth.project_domain_id.as_deref(), Some("default"));
        assert_eq!(o.region.as_deref(), Some("RegionTwo"));
        assert_eq!(o.interface, openstack::Interface::Internal);
        assert_eq!(o.tls.ca_file.as_deref(), Some(Path::new("/etc/ssl/ca.pem")));
        assert!(!o.tls.insecure);
        assert!(o.ignore_volume_microversion);
        assert!(!format!("{o:?}").contains("s3cret"));
        let east = openstack_options(&clouds["east"], &cfg.block_storage);
        assert_eq!(east.auth.application_credential_id.as_deref(), Some("ac"));
    }

    #[tokio::test]
    async fn every_section_becomes_a_cloud_without_a_request() {
        let text = "[Global]\nauth-url = http://127.0.0.1:9/v3\nuser-id = u\npassword = p\n\
                    tenant-id = t\n[Global \"b\"]\nauth-url = http://127.0.0.1:9/v3\n\
                    token = tok\ntenant-id = t\n";
        let config = config::parse_str(Path::new("cloud.conf"), text).unwrap();
        let clouds = config
            .resolve_clouds(&["".into(), "b".into()], &config::FixedEnv::default())
            .unwrap();
        let plan = Plan {
            endpoint: Endpoint::parse("unix:///tmp/x.sock").unwrap(),
            controller: true,
            node: false,
            config,
            clouds,
            metadata: None,
        };
        let (clouds, api) = openstack_clouds(&plan, &Metrics::new()).await.unwrap();
        assert_eq!(clouds.names().collect::<Vec<_>>(), vec!["", "b"]);
        assert_eq!(api.snapshot().requests(openstack::Service::Keystone), 0);
    }
}
