//! NodeGetInfo: the node's id, volume limit and topology.

use super::model::{NodeInfo, NodeOptions};
use crate::driver::types::{topology_value, Topology, ZONE_TOPOLOGY_KEY};
use crate::host::metadata::InstanceMetadata;

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
    // A topology without segments is no topology: CSI's accessible_topology is then unset, not
    // an empty message (a CO passes it back as a requisite term that names nothing).
    let topology = topology.filter(|t| !t.is_empty());
    NodeInfo {
        node_id: inst.uuid.clone(),
        max_volumes_per_node: i64::from(opts.block_storage.node_volume_attach_limit),
        topology,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(with_topology: bool, additional: &[(&str, &str)]) -> NodeOptions {
        NodeOptions {
            kubelet_dir: "/var/lib/kubelet".into(),
            kubelet_dir_resolved: None,
            block_storage: Default::default(),
            with_topology,
            additional_topology: additional
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn inst(zone: Option<&str>) -> InstanceMetadata {
        InstanceMetadata {
            uuid: "node-uuid".into(),
            availability_zone: zone.map(str::to_string),
        }
    }

    #[test]
    fn no_segments_leave_the_topology_unset() {
        // A node without a zone and without --additional-topology (e.g. --node-id on a machine
        // without metadata) has no topology: unset, never an empty message.
        assert_eq!(node_info(&inst(None), &opts(true, &[])).topology, None);
        // A zone with no label form is no zone either.
        assert_eq!(
            node_info(&inst(Some("::")), &opts(true, &[])).topology,
            None
        );
        assert_eq!(
            node_info(&inst(Some("nova")), &opts(false, &[])).topology,
            None
        );
        let t = node_info(&inst(None), &opts(true, &[("example.com/rack", "r1")]))
            .topology
            .unwrap();
        assert_eq!(t.len(), 1);
        assert!(!t.contains_key(ZONE_TOPOLOGY_KEY));
        let t = node_info(&inst(Some("nova")), &opts(true, &[]))
            .topology
            .unwrap();
        assert_eq!(t.get(ZONE_TOPOLOGY_KEY).map(String::as_str), Some("nova"));
    }
}
