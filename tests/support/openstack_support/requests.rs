//! CSI requests the `openstack_*` tests send as the provisioner would.

use std::collections::HashMap;

use cinder_csi::server::csi::pb;

pub const GIB: i64 = 1 << 30;

/// A single-writer ext4 mount capability.
pub fn mount_cap() -> pb::VolumeCapability {
    pb::VolumeCapability {
        access_type: Some(pb::volume_capability::AccessType::Mount(
            pb::volume_capability::MountVolume {
                fs_type: "ext4".into(),
                ..Default::default()
            },
        )),
        access_mode: Some(pb::volume_capability::AccessMode {
            mode: pb::volume_capability::access_mode::Mode::SingleNodeWriter as i32,
        }),
    }
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
