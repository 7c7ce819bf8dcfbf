//! Builds the node's metadata source from its options: the chain of sources in `[Metadata]
//! search-order`, under `--node-id` / `--node-az` when they are set.

use std::sync::Arc;

use super::chain::Chain;
use super::config_drive::ConfigDrive;
use super::options::{MetadataOptions, Source, MAX_NODE_ID_BYTES};
use super::overrides::Overrides;
use super::port::{Metadata, MetadataError};
use super::service::{MetadataService, Retry};

/// Builds the node's metadata source. No I/O happens here; errors are configuration errors
/// (an empty `--node-id` or `--node-az`, an empty search order without `--node-id`, a bad URL)
/// for the caller to exit 64 on.
pub fn from_options(opts: MetadataOptions) -> Result<Arc<dyn Metadata>, MetadataError> {
    let node_id = match &opts.node_id {
        Some(id) => {
            if uuid::Uuid::try_parse(id).is_err() {
                // Fine for the local backend; with Nova it breaks every attach (old manifests
                // set NODE_ID to the Kubernetes node name).
                tracing::warn!(
                    node_id = %id,
                    "--node-id is not a UUID; with the OpenStack backend it must be the Nova instance UUID"
                );
            }
            Some(check_node_id(id)?)
        }
        None => None,
    };
    let node_az = opts.node_az.as_deref().map(check_node_az).transpose()?;
    if opts.metadata.search_order.is_empty() && node_id.is_none() {
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
    let lookup: Option<Arc<dyn Metadata>> =
        (!sources.is_empty()).then(|| Arc::new(Chain::new(sources)) as Arc<dyn Metadata>);
    match (node_id, node_az, lookup) {
        (None, None, Some(chain)) => Ok(chain),
        (node_id, node_az, lookup) => Ok(Arc::new(Overrides {
            node_id,
            node_az,
            lookup,
        })),
    }
}

/// `--node-az` is an availability zone name, as Nova's metadata would give it.
fn check_node_az(az: &str) -> Result<String, MetadataError> {
    if az.trim().is_empty() || az.trim() != az || az.chars().any(char::is_control) {
        return Err(MetadataError::Invalid(format!(
            "--node-az {az:?} must be a non-empty availability zone name, without surrounding \
             spaces or control characters"
        )));
    }
    Ok(az.to_string())
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
    async fn node_id_without_metadata_takes_node_az() {
        let tmp = tempfile::tempdir().unwrap();
        let md = from_options(MetadataOptions {
            node_id: Some("83679162-1378-4288-a2d4-70e13ec132aa".into()),
            node_az: Some("az 2".into()),
            // Nothing listens here and no config drive: every lookup fails.
            metadata: MetadataConfig {
                metadata_url: "http://127.0.0.1:9/".into(),
                request_timeout: Duration::from_millis(200),
                ..Default::default()
            },
            config_drive_label_dir: tmp.path().to_path_buf(),
            connect_timeout: Duration::from_millis(200),
        })
        .unwrap();
        let got = md.instance().await.unwrap();
        assert_eq!(got.uuid, "83679162-1378-4288-a2d4-70e13ec132aa");
        assert_eq!(got.availability_zone.as_deref(), Some("az 2"));
        // An empty search order is fine with --node-id (nothing to ask).
        let md = from_options(MetadataOptions {
            node_id: Some("n1".into()),
            metadata: MetadataConfig {
                search_order: vec![],
                ..Default::default()
            },
            ..Default::default()
        })
        .unwrap();
        assert_eq!(md.instance().await.unwrap().availability_zone, None);
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
        for bad in ["", " ", "az1 ", "a\tz"] {
            let err = from_options(MetadataOptions {
                node_az: Some(bad.to_string()),
                ..Default::default()
            })
            .err()
            .unwrap();
            assert!(err.detail().contains("--node-az"), "{err}");
        }
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
