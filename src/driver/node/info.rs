//! NodeGetInfo and the node's readiness for Probe.

use std::sync::Arc;

use async_trait::async_trait;

use super::params::DEFAULT_FS;
use super::{NodeCore, NodeInfo, NodeOptions};
use crate::driver::probe::{NotReady, Readiness};
use crate::driver::types::{topology_value, Topology, ZONE_TOPOLOGY_KEY};
use crate::metadata::{InstanceMetadata, MetadataError};

pub fn node_info(inst: &InstanceMetadata, opts: &NodeOptions) -> NodeInfo {
    let topology = opts.with_topology.then(|| {
        let mut t = Topology::new();
        if let Some(zone) = inst
            .availability_zone
            .as_deref()
            .map(topology_value)
            .filter(|z| !z.is_empty())
        {
            t.insert(ZONE_TOPOLOGY_KEY.to_string(), zone);
        }
        for (k, v) in &opts.additional_topology {
            t.insert(k.clone(), v.clone());
        }
        t
    });
    NodeInfo {
        node_id: inst.uuid.clone(),
        max_volumes_per_node: opts.max_volumes_per_node,
        topology,
    }
}

/// The node is ready when its identity resolves and the tools for the default filesystem are
/// installed. Other filesystems' tools are checked when a volume needs them.
pub struct NodeReadiness {
    pub core: Arc<NodeCore>,
}

#[async_trait]
impl Readiness for NodeReadiness {
    async fn check(&self) -> Result<(), NotReady> {
        if let Err(e) = self.core.info().await {
            let transient = !matches!(e, crate::driver::Error::Metadata(MetadataError::Invalid(_)));
            return Err(NotReady {
                reason: format!("node identity unknown: {e}"),
                transient,
            });
        }
        let host = self.core.host().clone();
        let missing =
            tokio::task::spawn_blocking(move || host.filesystems.missing_tools(DEFAULT_FS))
                .await
                .unwrap_or_default();
        if !missing.is_empty() {
            return Err(NotReady {
                reason: format!(
                    "{} not installed on this node (needed to format and grow {DEFAULT_FS})",
                    missing.join(", ")
                ),
                transient: false,
            });
        }
        Ok(())
    }
}
