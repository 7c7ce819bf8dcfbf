//! Typed cloud.conf sections, their defaults and documented keys.
//! How INI entries set these fields is in `assign.rs`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::error::{Location, Warning};
use super::secret::Secret;
use super::values::{EndpointType, MetadataSource, RetypeMigrationPolicy, DEFAULT_SEARCH_ORDER};

/// `[BlockStorage] node-volume-attach-limit` when unset or out of range.
pub const DEFAULT_NODE_VOLUME_ATTACH_LIMIT: u32 = 256;
/// Largest accepted `node-volume-attach-limit` (upstream's cap).
pub const MAX_NODE_VOLUME_ATTACH_LIMIT: u32 = 256;
/// Largest accepted `[BlockStorage] api-concurrency`.
pub const MAX_API_CONCURRENCY: usize = 64;
/// `[Metadata] metadata-url` when unset.
pub const DEFAULT_METADATA_URL: &str = "http://169.254.169.254/openstack/latest/meta_data.json";
/// `[Metadata] request-timeout` when unset (upstream: no timeout at all).
pub const DEFAULT_METADATA_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// One `[Global]` (key `""`) or `[Global "name"]` section: how to reach and
/// authenticate to one OpenStack cloud. The key set is upstream's `AuthOpts`
/// (kubernetes/cloud-provider-openstack `pkg/client/client.go`) plus `token`.
/// `None` means "not set"; an empty value (`key =`) also unsets a key, so a
/// later `--cloud-config` file can clear what an earlier one set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GlobalConfig {
    /// `auth-url`: Keystone URL. Required by the controller.
    pub auth_url: Option<String>,
    /// `username` (needs a user domain) or `user-id`.
    pub username: Option<String>,
    pub user_id: Option<String>,
    pub password: Option<Secret>,
    /// `token`: a pre-issued Keystone token.
    pub token: Option<Secret>,
    /// `tenant-id` / `tenant-name`: the project (clouds.yaml `project_*`).
    pub tenant_id: Option<String>,
    pub tenant_name: Option<String>,
    pub tenant_domain_id: Option<String>,
    pub tenant_domain_name: Option<String>,
    /// `domain-id` / `domain-name`: default for both user and project domain.
    pub domain_id: Option<String>,
    pub domain_name: Option<String>,
    pub user_domain_id: Option<String>,
    pub user_domain_name: Option<String>,
    pub application_credential_id: Option<String>,
    pub application_credential_name: Option<String>,
    pub application_credential_secret: Option<Secret>,
    /// `trust-id`, authenticated as `trustee-id`/`trustee-password`
    /// (falling back to `user-id`/`password`).
    pub trust_id: Option<String>,
    pub trustee_id: Option<String>,
    pub trustee_password: Option<Secret>,
    pub region: Option<String>,
    /// `os-endpoint-type`; see [`GlobalConfig::endpoint_type`].
    pub endpoint_type: Option<EndpointType>,
    pub ca_file: Option<PathBuf>,
    /// `cert-file` + `key-file`: TLS client certificate (both or neither).
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// `tls-insecure`: only `true`/`false` (upstream compares with "true").
    pub tls_insecure: Option<bool>,
    /// `use-clouds`: fill unset keys from clouds.yaml.
    pub use_clouds: bool,
    /// `clouds-file`: the clouds.yaml to read (else the standard search path).
    pub clouds_file: Option<PathBuf>,
    /// `cloud`: the clouds.yaml entry (else `OS_CLOUD`, else the only one).
    pub cloud: Option<String>,
    /// The first header that defined this section.
    pub defined_at: Option<Location>,
    /// Where each key was last set (cloud.conf line or clouds.yaml file).
    pub(in crate::config) origins: BTreeMap<String, Location>,
}

impl GlobalConfig {
    /// The catalog interface to use: `os-endpoint-type`, default `public`.
    pub fn endpoint_type(&self) -> EndpointType {
        self.endpoint_type.unwrap_or_default()
    }

    /// Whether TLS verification is off (`tls-insecure`, default false).
    pub fn insecure(&self) -> bool {
        self.tls_insecure.unwrap_or(false)
    }

    /// Where `key` (cloud.conf spelling) got its value, if it is set.
    pub fn origin(&self, key: &str) -> Option<&Location> {
        self.origins.get(key)
    }
}

/// `[BlockStorage]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockStorageConfig {
    /// `node-volume-attach-limit`: NodeGetInfo `max_volumes_per_node`.
    /// Unset → 256. 1..=256 is used as is. 0, negative or above 256 → 256
    /// with a warning (upstream: 0 meant "no limit", the rest became 256).
    pub node_volume_attach_limit: u32,
    /// `rescan-on-resize`: node rescans the device before growing the fs.
    pub rescan_on_resize: bool,
    /// `ignore-volume-az`: report the requested topology, not the volume AZ.
    pub ignore_volume_az: bool,
    /// `ignore-volume-microversion`: skip Cinder microversions 3.34/3.51.
    pub ignore_volume_microversion: bool,
    /// `cascade-delete` (cinder-csi): delete a volume's snapshots with it.
    pub cascade_delete: bool,
    /// `list-cluster-volumes-only` (cinder-csi): ListVolumes returns only
    /// volumes tagged with this cluster's `--cluster` id.
    pub list_cluster_volumes_only: bool,
    /// `retype-migration-policy` (cinder-csi): `never` (default) or `on-demand`.
    pub retype_migration_policy: RetypeMigrationPolicy,
    /// `api-concurrency` (cinder-csi): requests in flight per API endpoint; unset → the
    /// adapter's default (4).
    pub api_concurrency: Option<usize>,
}

impl Default for BlockStorageConfig {
    fn default() -> Self {
        Self {
            node_volume_attach_limit: DEFAULT_NODE_VOLUME_ATTACH_LIMIT,
            rescan_on_resize: false,
            ignore_volume_az: false,
            ignore_volume_microversion: false,
            cascade_delete: false,
            list_cluster_volumes_only: false,
            retype_migration_policy: RetypeMigrationPolicy::Never,
            api_concurrency: None,
        }
    }
}

/// `[Metadata]`: how the node finds its instance id and availability zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataConfig {
    /// `search-order`: sources to try in order; default config drive first.
    pub search_order: Vec<MetadataSource>,
    /// `request-timeout`: bound on one metadata-service request or config
    /// drive read. Default 10 s; `0` (upstream: no timeout) → default + warning.
    pub request_timeout: Duration,
    /// `metadata-url` (cinder-csi): the metadata service document URL.
    pub metadata_url: String,
}

impl Default for MetadataConfig {
    fn default() -> Self {
        Self {
            search_order: DEFAULT_SEARCH_ORDER.to_vec(),
            request_timeout: DEFAULT_METADATA_REQUEST_TIMEOUT,
            metadata_url: DEFAULT_METADATA_URL.to_string(),
        }
    }
}

/// Everything read from the `--cloud-config` files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CloudConfig {
    /// `[Global]` under `""`, `[Global "name"]` under `"name"`.
    pub globals: BTreeMap<String, GlobalConfig>,
    pub block_storage: BlockStorageConfig,
    pub metadata: MetadataConfig,
    /// Unknown sections/keys and adjusted values, in file order.
    pub warnings: Vec<Warning>,
    /// The files merged, in order.
    pub files: Vec<PathBuf>,
}
