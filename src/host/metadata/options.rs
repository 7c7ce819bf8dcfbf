//! What the node's metadata lookup is configured with: the `[Metadata]` section as `config`
//! parsed it (its defaults are upstream's), plus what is not in cloud.conf.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::{MetadataConfig, DEFAULT_METADATA_REQUEST_TIMEOUT};

/// One place the chain looks (a `[Metadata] search-order` element).
pub use crate::config::MetadataSource as Source;

/// The service is link-local: a connection that takes longer is not coming.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Where udev links filesystems by label.
pub const DEFAULT_LABEL_DIR: &str = "/dev/disk/by-label";

/// CSI caps `node_id` at 256 bytes (NodeGetInfoResponse).
pub const MAX_NODE_ID_BYTES: usize = 256;

/// Bounds on one lookup. `request` bounds one metadata-service request and one config-drive read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    pub request: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: CONNECT_TIMEOUT,
            request: DEFAULT_METADATA_REQUEST_TIMEOUT,
        }
    }
}

/// Everything `from_options` needs; `Default` is upstream's behaviour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataOptions {
    /// `--node-id`: when set, the node id whatever the lookup says; the zone is still looked
    /// up, and a failed lookup is no error.
    pub node_id: Option<String>,
    /// `--node-az`: the availability zone when the lookup has none (or there is no lookup).
    pub node_az: Option<String>,
    /// `[Metadata]`: `search-order`, `request-timeout` and `metadata-url` (which
    /// `--metadata-url` replaces).
    pub metadata: MetadataConfig,
    /// Where the `config-2` / `CONFIG-2` label links live (`/dev/disk/by-label`).
    pub config_drive_label_dir: PathBuf,
    /// Connecting to the metadata service.
    pub connect_timeout: Duration,
}

impl MetadataOptions {
    /// The bounds on one lookup.
    pub fn timeouts(&self) -> Timeouts {
        Timeouts {
            connect: self.connect_timeout,
            request: self.metadata.request_timeout,
        }
    }
}

impl Default for MetadataOptions {
    fn default() -> Self {
        Self {
            node_id: None,
            node_az: None,
            metadata: MetadataConfig::default(),
            config_drive_label_dir: PathBuf::from(DEFAULT_LABEL_DIR),
            connect_timeout: CONNECT_TIMEOUT,
        }
    }
}
