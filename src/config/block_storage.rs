//! `[BlockStorage]`: each key's field, default and value check. The controller core
//! (`driver::controller::ControllerOptions`) and the OpenStack adapter take the section
//! itself; the node reads `node-volume-attach-limit` from it.

use std::fmt;
use std::str::FromStr;

use super::error::{quote, ConfigError, Warning, WarningKind};
use super::key::Cx;

/// `node-volume-attach-limit` when unset or out of range.
pub const DEFAULT_NODE_VOLUME_ATTACH_LIMIT: u32 = 256;
/// Largest accepted `node-volume-attach-limit` (upstream's cap).
pub const MAX_NODE_VOLUME_ATTACH_LIMIT: u32 = 256;
/// Largest accepted `api-concurrency`.
pub const MAX_API_CONCURRENCY: usize = 64;

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
    /// `ignore-volume-microversion`: talk Cinder 3.0 only (for clouds whose microversion
    /// handling is broken); online extend and restore from backup then fail as Unsupported.
    pub ignore_volume_microversion: bool,
    /// `cascade-delete` (cinder-csi): DeleteVolume also deletes the volume's snapshots.
    pub cascade_delete: bool,
    /// `list-cluster-volumes-only` (cinder-csi): ListVolumes returns only
    /// volumes tagged with this cluster's `--cluster` id.
    pub list_cluster_volumes_only: bool,
    /// `retype-migration-policy` (cinder-csi): may a ControllerModifyVolume retype move data.
    pub retype_migration_policy: RetypeMigrationPolicy,
    /// `api-concurrency` (cinder-csi): requests in flight per API endpoint (Keystone,
    /// Cinder, Nova each); idle connections kept per endpoint are bounded by it too. Unset →
    /// the adapter's default (4, `cloud/openstack/http/limit.rs`, which says why).
    pub api_concurrency: Option<usize>,
    /// `group-type` (cinder-csi): the Cinder group type (name or id) of group snapshots whose
    /// VolumeGroupSnapshotClass names none. Unset → Cinder's default group type.
    pub group_type: Option<String>,
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
            group_type: None,
        }
    }
}

impl BlockStorageConfig {
    /// Sets one key; `Ok(false)` when the key is unknown.
    pub(crate) fn set(
        &mut self,
        v: Option<&str>,
        cx: &Cx<'_>,
        warnings: &mut Vec<Warning>,
    ) -> Result<bool, ConfigError> {
        match cx.key {
            "node-volume-attach-limit" => {
                let n = cx.integer(v)?;
                self.node_volume_attach_limit = match u32::try_from(n) {
                    Ok(n) if (1..=MAX_NODE_VOLUME_ATTACH_LIMIT).contains(&n) => n,
                    _ => {
                        let message = format!(
                            "{n} is not between 1 and {MAX_NODE_VOLUME_ATTACH_LIMIT}; \
                             using {DEFAULT_NODE_VOLUME_ATTACH_LIMIT}"
                        );
                        cx.warn(warnings, WarningKind::ValueAdjusted, message);
                        DEFAULT_NODE_VOLUME_ATTACH_LIMIT
                    }
                };
            }
            "rescan-on-resize" => self.rescan_on_resize = cx.boolean(v)?,
            "ignore-volume-az" => self.ignore_volume_az = cx.boolean(v)?,
            "ignore-volume-microversion" => self.ignore_volume_microversion = cx.boolean(v)?,
            "cascade-delete" => self.cascade_delete = cx.boolean(v)?,
            "list-cluster-volumes-only" => self.list_cluster_volumes_only = cx.boolean(v)?,
            "api-concurrency" => {
                let n = cx.integer(v)?;
                self.api_concurrency = match usize::try_from(n) {
                    Ok(n) if (1..=MAX_API_CONCURRENCY).contains(&n) => Some(n),
                    _ => {
                        return Err(cx.err(format!(
                            "{n} is not between 1 and {MAX_API_CONCURRENCY} \
                             (requests in flight per API endpoint)"
                        )))
                    }
                };
            }
            "group-type" => self.group_type = cx.text(v)?,
            "retype-migration-policy" => {
                self.retype_migration_policy = cx.parsed(v)?.unwrap_or_default();
            }
            "bs-version" => {
                let message = "accepted for compatibility and ignored \
                               (cinder-csi always uses the Block Storage v3 API)"
                    .to_string();
                cx.warn(warnings, WarningKind::IgnoredKey, message);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// `retype-migration-policy`: whether a volume type change (ControllerModifyVolume) may let
/// Cinder migrate the data to another backend. The cloud port takes it as is
/// (`cloud::MigrationPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RetypeMigrationPolicy {
    /// Retype only where no migration is needed (Cinder `never`).
    #[default]
    Never,
    /// Allow Cinder to migrate the volume (Cinder `on-demand`).
    OnDemand,
}

impl RetypeMigrationPolicy {
    /// The value Cinder's `os-retype` action takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Never => "never",
            Self::OnDemand => "on-demand",
        }
    }
}

impl fmt::Display for RetypeMigrationPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RetypeMigrationPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "never" => Ok(Self::Never),
            "on-demand" => Ok(Self::OnDemand),
            _ => Err(format!(
                "{} is not a retype migration policy (use never or on-demand)",
                quote(s)
            )),
        }
    }
}
