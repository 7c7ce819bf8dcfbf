//! Domain types shared by the controller and node cores: what a CSI request means, without
//! protobuf.

use std::collections::BTreeMap;

pub use crate::cloud::GIB;

/// How many volumes may be published and who may write (CSI `AccessMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccessMode {
    SingleNodeWriter,
    SingleNodeReaderOnly,
    MultiNodeReaderOnly,
    MultiNodeSingleWriter,
    MultiNodeMultiWriter,
    SingleNodeSingleWriter,
    SingleNodeMultiWriter,
}

impl AccessMode {
    /// Every mode, in the CSI spec's order.
    pub const ALL: [Self; 7] = [
        Self::SingleNodeWriter,
        Self::SingleNodeReaderOnly,
        Self::MultiNodeReaderOnly,
        Self::MultiNodeSingleWriter,
        Self::MultiNodeMultiWriter,
        Self::SingleNodeSingleWriter,
        Self::SingleNodeMultiWriter,
    ];

    /// Published to more than one node at once.
    pub fn is_multi_node(self) -> bool {
        matches!(
            self,
            Self::MultiNodeReaderOnly | Self::MultiNodeSingleWriter | Self::MultiNodeMultiWriter
        )
    }

    pub fn is_read_only(self) -> bool {
        matches!(self, Self::SingleNodeReaderOnly | Self::MultiNodeReaderOnly)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::SingleNodeWriter => "SINGLE_NODE_WRITER",
            Self::SingleNodeReaderOnly => "SINGLE_NODE_READER_ONLY",
            Self::MultiNodeReaderOnly => "MULTI_NODE_READER_ONLY",
            Self::MultiNodeSingleWriter => "MULTI_NODE_SINGLE_WRITER",
            Self::MultiNodeMultiWriter => "MULTI_NODE_MULTI_WRITER",
            Self::SingleNodeSingleWriter => "SINGLE_NODE_SINGLE_WRITER",
            Self::SingleNodeMultiWriter => "SINGLE_NODE_MULTI_WRITER",
        }
    }
}

/// Mounted filesystem or raw block device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessType {
    Mount {
        /// Empty means the default (ext4).
        fs_type: Option<String>,
        mount_flags: Vec<String>,
        volume_mount_group: Option<String>,
    },
    Block,
}

impl AccessType {
    pub fn is_block(&self) -> bool {
        matches!(self, Self::Block)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeCapability {
    pub access_type: AccessType,
    pub access_mode: AccessMode,
}

/// CSI `CapacityRange`; 0 means unset, as on the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CapacityRange {
    pub required_bytes: u64,
    pub limit_bytes: u64,
}

/// Round bytes up to whole GiB (Cinder sizes), at least 1 GiB.
pub fn round_up_gib(bytes: u64) -> u64 {
    bytes.div_ceil(GIB).max(1)
}

/// One topology segment set, e.g. `{topology.cinder.csi.openstack.org/zone: nova}`.
pub type Topology = BTreeMap<String, String>;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopologyRequirement {
    pub requisite: Vec<Topology>,
    pub preferred: Vec<Topology>,
}

impl TopologyRequirement {
    /// The zones the requisite confines the volume to, or `None` when it leaves the zone free.
    /// CSI: the volume "MUST be accessible from at least one of the requisite topologies", and
    /// a term that does not name [`ZONE_TOPOLOGY_KEY`] (csi-sanity and Nomad pass the node's
    /// topology back, which may have no zone or only other keys) is met in any zone. So the
    /// zone is constrained only when the requisite is set and every term names one.
    pub fn requisite_zones(&self) -> Option<Vec<&str>> {
        if self.requisite.is_empty() {
            return None;
        }
        self.requisite
            .iter()
            .map(|t| t.get(ZONE_TOPOLOGY_KEY).map(String::as_str))
            .collect()
    }
}

/// The topology key this driver (and the in-tree migration) uses for availability zones.
pub const ZONE_TOPOLOGY_KEY: &str = "topology.cinder.csi.openstack.org/zone";

/// How an availability zone appears in topology. Segment values become node labels, so they
/// must be Kubernetes label values: at most 63 characters of `[A-Za-z0-9._-]`, starting and
/// ending alphanumeric. Other characters become `-`. Nova and Cinder AZ names are free text
/// ("zone 1", "dc1:rack2"), so the node and the controller both report this form; the
/// controller maps it back to the Cinder name before it calls Cinder.
pub fn topology_value(zone: &str) -> String {
    let mapped: String = zone
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed = mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let mut out: String = trimmed.chars().take(63).collect();
    while out.ends_with(|c: char| !c.is_ascii_alphanumeric()) {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_up_to_gib() {
        assert_eq!(round_up_gib(0), 1);
        assert_eq!(round_up_gib(1), 1);
        assert_eq!(round_up_gib(GIB), 1);
        assert_eq!(round_up_gib(GIB + 1), 2);
        assert_eq!(round_up_gib(10 * GIB), 10);
    }

    #[test]
    fn zones_become_label_values() {
        assert_eq!(topology_value("nova"), "nova");
        assert_eq!(topology_value("-az_1.-"), "az_1");
        assert_eq!(topology_value("a b"), "a-b");
        assert_eq!(topology_value("zone 1"), "zone-1");
        assert_eq!(topology_value("dc1:rack2"), "dc1-rack2");
        assert_eq!(topology_value("zone-ü"), "zone");
        assert_eq!(topology_value(&"x".repeat(80)).len(), 63);
        assert_eq!(topology_value("___"), "");
        let long = format!("{}-{}", "a".repeat(62), "b");
        assert_eq!(topology_value(&long), "a".repeat(62));
    }
}
