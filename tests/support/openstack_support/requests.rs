//! CSI requests the `openstack_*` tests send as the provisioner would.

use std::collections::HashMap;

use cinder_csi::server::csi::pb;

pub const GIB: i64 = 1 << 30;

/// A single-writer ext4 mount capability.
pub fn mount_cap() -> pb::VolumeCapability {
    crate::support::caps::mount_cap("ext4")
}

/// CreateVolume of 1 GiB with `mount_cap` and these StorageClass parameters.
pub fn create_req(name: &str, params: &[(&str, &str)]) -> pb::CreateVolumeRequest {
    pb::CreateVolumeRequest {
        name: name.into(),
        capacity_range: Some(pb::CapacityRange {
            required_bytes: GIB,
            limit_bytes: 0,
        }),
        volume_capabilities: vec![mount_cap()],
        parameters: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<HashMap<_, _>>(),
        ..Default::default()
    }
}
