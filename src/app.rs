//! Wiring: turn the command line and config into adapters, services and a running server.
//! Everything is built here and passed down as `Arc`s; nothing is global.

use std::sync::Arc;
use std::time::Duration;

use tonic::transport::Server;

use crate::cli::{Backend, ServeArgs};
use crate::cloud::Clouds;
use crate::csi::controller::ControllerService;
use crate::csi::identity::IdentityService;
use crate::csi::node::NodeService;
use crate::csi::pb::controller_server::ControllerServer;
use crate::csi::pb::identity_server::IdentityServer;
use crate::csi::pb::node_server::NodeServer;
use crate::driver::controller::{Controller, ControllerOptions};
use crate::driver::probe::{CloudReadiness, Readiness};
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
    Ok(Plan {
        endpoint,
        controller,
        node,
    })
}

/// The clouds the controller serves, from the chosen backend. This is the seam the cloud
/// adapters plug into (`cloud::openstack` from cloud.conf `[Global]`/`[Global "name"]`
/// sections, `cloud::local` from `--local-dir`); until one is built for a backend, serving a
/// controller on it is a configuration error (exit 64) that names what is missing.
pub fn build_clouds(args: &ServeArgs) -> Result<Clouds, AppError> {
    let missing = match args.backend {
        Backend::Openstack => "the OpenStack adapter (src/cloud/openstack/)",
        Backend::Local => "the local adapter (src/cloud/local/)",
    };
    Err(AppError::Config(format!(
        "--backend {}: {missing} is not part of this build yet, so the controller service \
         cannot run on it; serve the node only (--mode node)",
        match args.backend {
            Backend::Openstack => "openstack",
            Backend::Local => "local",
        }
    )))
}

/// Controller behaviour from the flags. The `[BlockStorage]` options (ignore-volume-az,
/// cascade-delete, list-cluster-volumes-only, retype-migration-policy) join here once
/// cloud.conf is loaded at startup.
pub fn controller_options(args: &ServeArgs) -> ControllerOptions {
    ControllerOptions {
        cluster: args.cluster.clone(),
        with_topology: args.with_topology,
        ..ControllerOptions::default()
    }
}

pub async fn run(args: ServeArgs) -> Result<(), AppError> {
    let plan = plan(&args)?;
    let mut readiness: Vec<Arc<dyn Readiness>> = Vec::new();
    // Built before anything binds: a bad backend or config exits 64 first.
    let controller = if plan.controller {
        let clouds = build_clouds(&args)?;
        readiness.push(CloudReadiness::new(clouds.clone()));
        let core = Controller::new(clouds, controller_options(&args));
        Some(ControllerServer::new(ControllerService::new(Arc::new(
            core,
        ))))
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
        .add_optional_service(controller)
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> ServeArgs {
        let mut v = vec!["cinder-csi"];
        v.extend_from_slice(extra);
        crate::cli::Cli::try_parse_from(v).unwrap().serve
    }

    #[test]
    fn controller_without_an_adapter_is_a_config_error_naming_it() {
        for (backend, name) in [
            ("openstack", "OpenStack adapter"),
            ("local", "local adapter"),
        ] {
            let a = args(&["--backend", backend, "--local-dir", "/tmp/x"]);
            let err = build_clouds(&a).err().expect("no adapter yet");
            assert_eq!(err.exit_code(), 64);
            assert!(err.to_string().contains(name), "{err}");
        }
    }

    #[test]
    fn options_from_flags() {
        let a = args(&["--cluster", "c1", "--with-topology=false"]);
        let o = controller_options(&a);
        assert_eq!(o.cluster, "c1");
        assert!(!o.with_topology);
    }
}
