//! `--node-id` and `--node-az` over the lookup. The node id flag replaces only the instance id:
//! the zone still comes from the config drive or metadata service when one answers, and from
//! `--node-az` when none does (or its answer has no zone). Without `--node-id` a failed lookup
//! stays an error (there is no node id to report).

use std::sync::Arc;

use async_trait::async_trait;

use super::port::{InstanceMetadata, Metadata, MetadataError};

pub struct Overrides {
    /// `--node-id`: the node id whatever the lookup says.
    pub node_id: Option<String>,
    /// `--node-az`: the zone when the lookup has none.
    pub node_az: Option<String>,
    /// The search order's sources (`None`: an empty search order with `--node-id`).
    pub lookup: Option<Arc<dyn Metadata>>,
}

#[async_trait]
impl Metadata for Overrides {
    async fn instance(&self) -> Result<InstanceMetadata, MetadataError> {
        let found = match &self.lookup {
            Some(lookup) => lookup.instance().await,
            None => Err(MetadataError::Unavailable(
                "no metadata source configured".into(),
            )),
        };
        let (uuid, zone, zone_from) = match (found, &self.node_id) {
            (Ok(inst), node_id) => {
                if let Some(id) = node_id.as_ref().filter(|id| **id != inst.uuid) {
                    tracing::warn!(
                        node_id = %id, metadata_uuid = %inst.uuid,
                        "--node-id differs from the instance id the metadata reports; using --node-id"
                    );
                }
                let uuid = node_id.clone().unwrap_or(inst.uuid);
                match inst.availability_zone {
                    Some(az) => (uuid, Some(az), "metadata"),
                    None => (uuid, self.node_az.clone(), "--node-az"),
                }
            }
            (Err(e), Some(id)) => {
                tracing::info!(
                    error = %e,
                    "no instance metadata; the node id is --node-id and the zone --node-az"
                );
                (id.clone(), self.node_az.clone(), "--node-az")
            }
            (Err(e), None) => return Err(e),
        };
        tracing::info!(
            node_id = %uuid,
            availability_zone = zone.as_deref().unwrap_or(""),
            zone_from = if zone.is_some() { zone_from } else { "none" },
            "node identity"
        );
        Ok(InstanceMetadata {
            uuid,
            availability_zone: zone,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Fixed(Result<InstanceMetadata, MetadataError>, AtomicUsize);

    #[async_trait]
    impl Metadata for Fixed {
        async fn instance(&self) -> Result<InstanceMetadata, MetadataError> {
            self.1.fetch_add(1, Ordering::SeqCst);
            self.0.clone()
        }
    }

    fn found(az: Option<&str>) -> Arc<Fixed> {
        Arc::new(Fixed(
            Ok(InstanceMetadata {
                uuid: "md-uuid".into(),
                availability_zone: az.map(str::to_string),
            }),
            AtomicUsize::new(0),
        ))
    }

    fn missing() -> Arc<Fixed> {
        Arc::new(Fixed(
            Err(MetadataError::Unavailable("no config drive".into())),
            AtomicUsize::new(0),
        ))
    }

    async fn ask(
        node_id: Option<&str>,
        node_az: Option<&str>,
        lookup: Option<Arc<Fixed>>,
    ) -> Result<InstanceMetadata, MetadataError> {
        Overrides {
            node_id: node_id.map(str::to_string),
            node_az: node_az.map(str::to_string),
            lookup: lookup.map(|l| l as Arc<dyn Metadata>),
        }
        .instance()
        .await
    }

    fn inst(uuid: &str, az: Option<&str>) -> InstanceMetadata {
        InstanceMetadata {
            uuid: uuid.into(),
            availability_zone: az.map(str::to_string),
        }
    }

    #[tokio::test]
    async fn node_id_replaces_only_the_id() {
        let md = found(Some("az-md"));
        let got = ask(Some("flag-id"), Some("az-flag"), Some(md.clone())).await;
        assert_eq!(
            got.unwrap(),
            inst("flag-id", Some("az-md")),
            "metadata's zone wins"
        );
        assert_eq!(md.1.load(Ordering::SeqCst), 1);
        let got = ask(Some("flag-id"), None, Some(found(Some("az-md")))).await;
        assert_eq!(got.unwrap(), inst("flag-id", Some("az-md")));
        // The metadata has no zone: --node-az.
        let got = ask(Some("flag-id"), Some("az-flag"), Some(found(None))).await;
        assert_eq!(got.unwrap(), inst("flag-id", Some("az-flag")));
    }

    #[tokio::test]
    async fn without_metadata_the_zone_is_node_az_or_none() {
        let got = ask(Some("flag-id"), Some("az-flag"), Some(missing())).await;
        assert_eq!(got.unwrap(), inst("flag-id", Some("az-flag")));
        let got = ask(Some("flag-id"), None, Some(missing())).await;
        assert_eq!(got.unwrap(), inst("flag-id", None));
        let got = ask(Some("flag-id"), Some("az-flag"), None).await;
        assert_eq!(got.unwrap(), inst("flag-id", Some("az-flag")));
    }

    #[tokio::test]
    async fn without_node_id_a_failed_lookup_stays_an_error() {
        let got = ask(None, Some("az-flag"), Some(missing())).await;
        assert!(matches!(got, Err(MetadataError::Unavailable(_))), "{got:?}");
        let got = ask(None, Some("az-flag"), Some(found(None))).await;
        assert_eq!(got.unwrap(), inst("md-uuid", Some("az-flag")));
        let got = ask(None, Some("az-flag"), Some(found(Some("az-md")))).await;
        assert_eq!(got.unwrap(), inst("md-uuid", Some("az-md")));
    }
}
