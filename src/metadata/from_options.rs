//! Builds the node's metadata source from its options: `--node-id`, or the chain of sources
//! in `[Metadata] search-order`.

use std::sync::Arc;

use super::chain::Chain;
use super::config_drive::ConfigDrive;
use super::options::{MetadataOptions, Source, MAX_NODE_ID_BYTES};
use super::port::{InstanceMetadata, Metadata, MetadataError, StaticMetadata};
use super::service::{MetadataService, Retry};

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
    if opts.metadata.search_order.is_empty() {
        return Err(MetadataError::Invalid(
            "[Metadata] search-order is empty and no --node-id is set: \
             list configDrive and/or metadataService"
                .into(),
        ));
    }
    let timeouts = opts.timeouts();
    let mut sources: Vec<(Source, Arc<dyn Metadata>)> = Vec::new();
    for source in opts.metadata.search_order {
        if sources.iter().any(|(s, _)| *s == source) {
            continue;
        }
        let adapter: Arc<dyn Metadata> = match source {
            Source::ConfigDrive => Arc::new(ConfigDrive::new(
                opts.config_drive_label_dir.clone(),
                timeouts.request,
            )),
            Source::MetadataService => Arc::new(MetadataService::new(
                &opts.metadata.metadata_url,
                timeouts,
                Retry::default(),
            )?),
        };
        sources.push((source, adapter));
    }
    Ok(Arc::new(Chain::new(sources)))
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
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::config::MetadataConfig;

    #[tokio::test]
    async fn node_id_wins_without_lookup() {
        let md = from_options(MetadataOptions {
            node_id: Some("83679162-1378-4288-a2d4-70e13ec132aa".into()),
            // Nothing listens here: any lookup would fail.
            metadata: MetadataConfig {
                metadata_url: "http://127.0.0.1:9/".into(),
                ..Default::default()
            },
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
            metadata: MetadataConfig {
                search_order: vec![],
                ..Default::default()
            },
            ..Default::default()
        })
        .err()
        .unwrap();
        assert!(err.detail().contains("search-order"), "{err}");
        let err = from_options(MetadataOptions {
            metadata: MetadataConfig {
                metadata_url: "ftp://x/".into(),
                ..Default::default()
            },
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
            o.metadata.search_order,
            vec![Source::ConfigDrive, Source::MetadataService]
        );
        assert_eq!(o.metadata.request_timeout, Duration::from_secs(10));
        assert_eq!(
            o.metadata.metadata_url,
            "http://169.254.169.254/openstack/latest/meta_data.json"
        );
        assert_eq!(
            o.config_drive_label_dir,
            PathBuf::from("/dev/disk/by-label")
        );
        assert!(from_options(o).is_ok());
    }
}
