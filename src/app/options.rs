//! The flags that complete a cloud.conf section into an adapter's or the core's options.
//! Sections are handed over whole (their keys are declared once, in `config`); only flags
//! are added here.

use crate::app::cli::ServeArgs;
use crate::config;
use crate::driver::controller::ControllerOptions;
use crate::host::metadata;

/// Flags over `[Metadata]`: `--node-id` replaces the looked-up instance id, `--node-az` gives
/// the zone the lookup does not, `--metadata-url` replaces the URL.
pub fn metadata_options(
    args: &ServeArgs,
    cfg: &config::MetadataConfig,
) -> metadata::MetadataOptions {
    let mut section = cfg.clone();
    if let Some(url) = &args.metadata_url {
        section.metadata_url = url.clone();
    }
    metadata::MetadataOptions {
        node_id: args.node_id.clone(),
        node_az: args.node_az.clone(),
        metadata: section,
        ..Default::default()
    }
}

/// Controller behaviour: `--cluster`, `--with-topology` and cloud.conf `[BlockStorage]`.
pub fn controller_options(args: &ServeArgs, bs: &config::BlockStorageConfig) -> ControllerOptions {
    ControllerOptions {
        cluster: args.cluster.clone(),
        with_topology: args.with_topology,
        block_storage: bs.clone(),
    }
}

/// Where the node looks up disks: `--by-id-dir`, or `<local-dir>/by-id/<node id>` for the
/// local backend (its attach to this node makes `virtio-<id[:20]>` links there).
pub fn by_id_dir(args: &ServeArgs) -> std::path::PathBuf {
    match (args.backend, &args.local_dir) {
        (crate::app::cli::Backend::Local, Some(dir)) => dir
            .join("by-id")
            .join(super::local_node::local_node_id(args)),
        _ => args.by_id_dir.clone(),
    }
}
