//! NodeGetInfo: the node's id, volume limit and topology.

use super::model::{NodeInfo, NodeOptions};
use crate::driver::types::{topology_value, Topology, ZONE_TOPOLOGY_KEY};
use crate::metadata::InstanceMetadata;

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
        max_volumes_per_node: i64::from(opts.block_storage.node_volume_attach_limit),
        topology,
    }
}
