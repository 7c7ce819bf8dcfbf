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

/// The topology key this driver (and the in-tree migration) uses for availability zones.
pub const ZONE_TOPOLOGY_KEY: &str = "topology.cinder.csi.openstack.org/zone";

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
}
