//! What the node's metadata lookup is configured with, and the defaults (upstream's).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Upstream's URL (`[Metadata] metadata-url`, `--metadata-url`).
pub const DEFAULT_METADATA_URL: &str = "http://169.254.169.254/openstack/latest/meta_data.json";
/// The service is link-local: a connection that takes longer is not coming.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// One request, body included (`[Metadata] request-timeout`; upstream has none).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Where udev links filesystems by label.
pub const DEFAULT_LABEL_DIR: &str = "/dev/disk/by-label";

/// One place the chain looks (`[Metadata] search-order` element).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The config drive (filesystem labelled `config-2`), read without mounting.
    ConfigDrive,
    /// The metadata service (`metadata-url`).
    MetadataService,
}

impl Source {
    /// The upstream spelling, used in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ConfigDrive => "configDrive",
            Self::MetadataService => "metadataService",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Upstream's default: the config drive needs no network, so it goes first.
pub const DEFAULT_SEARCH_ORDER: [Source; 2] = [Source::ConfigDrive, Source::MetadataService];

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
            request: REQUEST_TIMEOUT,
        }
    }
}

/// Everything `from_options` needs; `Default` is upstream's behaviour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataOptions {
    /// `--node-id`: when set, the node id without any lookup (and no availability zone).
    pub node_id: Option<String>,
    /// `[Metadata] search-order`.
    pub search_order: Vec<Source>,
    /// `--metadata-url` / `[Metadata] metadata-url`.
    pub metadata_url: String,
    /// Where the `config-2` / `CONFIG-2` label links live (`/dev/disk/by-label`).
    pub config_drive_label_dir: PathBuf,
    pub timeouts: Timeouts,
}

impl Default for MetadataOptions {
    fn default() -> Self {
        Self {
            node_id: None,
            search_order: DEFAULT_SEARCH_ORDER.to_vec(),
            metadata_url: DEFAULT_METADATA_URL.to_string(),
            config_drive_label_dir: PathBuf::from(DEFAULT_LABEL_DIR),
            timeouts: Timeouts::default(),
        }
    }
}
