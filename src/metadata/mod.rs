//! The metadata port: who this node is (Nova instance UUID) and where it is (AZ).
//! Adapters: config drive, metadata service, static (`--node-id`), and the chain that tries the
//! first two in `[Metadata] search-order` and caches the answer.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

pub mod chain;
pub mod config_drive;
pub mod document;
pub mod service;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceMetadata {
    /// Nova instance UUID: the CSI node id.
    pub uuid: String,
    pub availability_zone: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    /// No source answered; retrying may help (metadata service down, config drive missing).
    #[error("instance metadata unavailable: {0}")]
    Unavailable(String),
    /// A source answered with something unusable.
    #[error("instance metadata invalid: {0}")]
    Invalid(String),
}

impl MetadataError {
    /// The message without the kind prefix, for aggregating several errors into one.
    pub fn detail(&self) -> &str {
        match self {
            Self::Unavailable(m) | Self::Invalid(m) => m,
        }
    }
}

#[async_trait]
pub trait Metadata: Send + Sync {
    async fn instance(&self) -> Result<InstanceMetadata, MetadataError>;
}

/// Node identity given on the command line; never fails.
pub struct StaticMetadata {
    pub instance: InstanceMetadata,
}

#[async_trait]
impl Metadata for StaticMetadata {
    async fn instance(&self) -> Result<InstanceMetadata, MetadataError> {
        Ok(self.instance.clone())
    }
}

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
            connect: service::CONNECT_TIMEOUT,
            request: service::REQUEST_TIMEOUT,
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
            metadata_url: service::DEFAULT_METADATA_URL.to_string(),
            config_drive_label_dir: PathBuf::from(config_drive::DEFAULT_LABEL_DIR),
            timeouts: Timeouts::default(),
        }
    }
}

/// Builds the node's metadata source. No I/O happens here; errors are configuration errors
/// (an empty `--node-id`, an empty search order, a bad URL) for the caller to exit 64 on.
pub fn from_options(opts: MetadataOptions) -> Result<Arc<dyn Metadata>, MetadataError> {
    if let Some(id) = opts.node_id {
        if uuid::Uuid::try_parse(&id).is_err() {
            // Fine for the local backend; with Nova it breaks every attach (old manifests set
            // NODE_ID to the Kubernetes node name).
            tracing::warn!(
                node_id = %id,
                "--node-id is not a UUID; with the OpenStack backend it must be the Nova instance UUID"
            );
        }
        return Ok(Arc::new(StaticMetadata {
            instance: InstanceMetadata {
                uuid: check_node_id(&id)?,
                // An operator who sets --node-id usually has no metadata to ask; a zone can
                // still be given with --additional-topology topology.cinder.csi.openstack.org/zone=AZ.
                availability_zone: None,
            },
        }));
    }
    if opts.search_order.is_empty() {
        return Err(MetadataError::Invalid(
            "[Metadata] search-order is empty and no --node-id is set: \
             list configDrive and/or metadataService"
                .into(),
        ));
    }
    let mut sources: Vec<(Source, Arc<dyn Metadata>)> = Vec::new();
    for source in opts.search_order {
        if sources.iter().any(|(s, _)| *s == source) {
            continue;
        }
        let adapter: Arc<dyn Metadata> = match source {
            Source::ConfigDrive => Arc::new(config_drive::ConfigDrive::new(
                opts.config_drive_label_dir.clone(),
                opts.timeouts.request,
            )),
            Source::MetadataService => Arc::new(service::MetadataService::new(
                &opts.metadata_url,
                opts.timeouts,
                service::Retry::default(),
            )?),
        };
        sources.push((source, adapter));
    }
    Ok(Arc::new(chain::Chain::new(sources)))
}

/// `--node-id` must be usable as a CSI node id as given: no silent trimming.
fn check_node_id(id: &str) -> Result<String, MetadataError> {
    if id.is_empty() || id.trim() != id || id.chars().any(char::is_control) {
        return Err(MetadataError::Invalid(format!(
            "--node-id {id:?} must be non-empty, without surrounding spaces or control characters \
             (it is the Nova instance UUID)"
        )));
    }
    if id.len() > MAX_NODE_ID_BYTES {
        return Err(MetadataError::Invalid(format!(
            "--node-id is {} bytes; CSI allows at most {MAX_NODE_ID_BYTES}",
            id.len()
        )));
    }
    Ok(id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn node_id_wins_without_lookup() {
        let md = from_options(MetadataOptions {
            node_id: Some("83679162-1378-4288-a2d4-70e13ec132aa".into()),
            // Nothing listens here: any lookup would fail.
            metadata_url: "http://127.0.0.1:9/".into(),
            config_drive_label_dir: "/nonexistent".into(),
            ..Default::default()
        })
        .unwrap();
        let got = md.instance().await.unwrap();
        assert_eq!(got.uuid, "83679162-1378-4288-a2d4-70e13ec132aa");
        assert_eq!(got.availability_zone, None);
    }

    #[test]
    fn bad_node_ids_and_options_are_rejected() {
        for bad in ["", " x", "x\n", &"a".repeat(257)] {
            let err = from_options(MetadataOptions {
                node_id: Some(bad.to_string()),
                ..Default::default()
            })
            .err()
            .unwrap();
            assert!(err.detail().contains("--node-id"), "{err}");
        }
        let err = from_options(MetadataOptions {
            search_order: vec![],
            ..Default::default()
        })
        .err()
        .unwrap();
        assert!(err.detail().contains("search-order"), "{err}");
        let err = from_options(MetadataOptions {
            metadata_url: "ftp://x/".into(),
            ..Default::default()
        })
        .err()
        .unwrap();
        assert!(err.detail().contains("ftp://x/"), "{err}");
    }

    #[test]
    fn defaults_match_upstream() {
        let o = MetadataOptions::default();
        assert_eq!(
            o.search_order,
            vec![Source::ConfigDrive, Source::MetadataService]
        );
        assert_eq!(
            o.metadata_url,
            "http://169.254.169.254/openstack/latest/meta_data.json"
        );
        assert_eq!(
            o.config_drive_label_dir,
            PathBuf::from("/dev/disk/by-label")
        );
        assert!(from_options(o).is_ok());
    }
}
