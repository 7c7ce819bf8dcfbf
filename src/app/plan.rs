//! Everything about the flags and config that can be checked before anything binds: the
//! startup plan.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::error::AppError;
use super::local_node::{local_node_id, local_node_zone};
use super::options::metadata_options;
use crate::app::cli::{Backend, ServeArgs};
use crate::config::{self, CloudConfig, GlobalConfig};
use crate::host::metadata::{self, Metadata};
use crate::server::Endpoint;

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
    let controller = matches!(
        mode,
        crate::app::cli::Mode::Controller | crate::app::cli::Mode::All
    );
    let node = matches!(
        mode,
        crate::app::cli::Mode::Node | crate::app::cli::Mode::All
    );
    if args.backend == crate::app::cli::Backend::Local && args.local_dir.is_none() {
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
    let openstack_controller = controller && args.backend == crate::app::cli::Backend::Openstack;
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
    if args.backend == Backend::Local {
        check_local_zones(args)?;
    }
    let metadata = if node && args.backend == Backend::Local {
        // The local backend's node is this machine, in its --node-az.
        let id = local_node_id(args);
        Some(Arc::new(metadata::StaticMetadata {
            instance: metadata::InstanceMetadata {
                uuid: id,
                availability_zone: Some(local_node_zone(args).to_string()),
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

/// `--local-zones` (and a local node's `--node-az`): zone names as Nova's metadata would give
/// them, each once.
fn check_local_zones(args: &ServeArgs) -> Result<(), AppError> {
    let bad = |z: &str| z.is_empty() || z.trim() != z || z.chars().any(char::is_control);
    let zones = &args.local_zones;
    if zones.is_empty() {
        return Err(AppError::Config(
            "--local-zones must name at least one zone".into(),
        ));
    }
    for (i, z) in zones.iter().enumerate() {
        if bad(z) {
            return Err(AppError::Config(format!(
                "--local-zones: {z:?} must be a non-empty zone name, without surrounding spaces \
                 or control characters"
            )));
        }
        if zones[..i].contains(z) {
            return Err(AppError::Config(format!(
                "--local-zones: {z:?} is given twice"
            )));
        }
    }
    match args.node_az.as_deref() {
        Some(az) if !az.is_empty() && bad(az) => Err(AppError::Config(format!(
            "--node-az {az:?} must be a zone name, without surrounding spaces or control \
             characters"
        ))),
        _ => Ok(()),
    }
}
