//! Configuration (flags and cloud.conf) turned into each adapter's and core's options.

use crate::cli::ServeArgs;
use crate::cloud::openstack::{self, OpenStackOptions};
use crate::cloud::MigrationPolicy;
use crate::config::{self, BlockStorageConfig, GlobalConfig};
use crate::driver::controller::ControllerOptions;
use crate::metadata::{self};

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

/// Where the node looks up disks: `--by-id-dir`, or `<local-dir>/by-id` for the local
/// backend (its attach makes `virtio-<id[:20]>` links there).
pub fn by_id_dir(args: &ServeArgs) -> std::path::PathBuf {
    match (args.backend, &args.local_dir) {
        (crate::cli::Backend::Local, Some(dir)) => dir.join("by-id"),
        _ => args.by_id_dir.clone(),
    }
}
