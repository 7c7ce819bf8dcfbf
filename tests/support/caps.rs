//! The one set of VolumeCapability builders every test binary uses.

use cinder_csi::server::csi::pb::volume_capability::access_mode::Mode;
use cinder_csi::server::csi::pb::volume_capability::{
    AccessMode, AccessType, BlockVolume, MountVolume,
};
use cinder_csi::server::csi::pb::VolumeCapability;

/// A SINGLE_NODE_WRITER mount capability of `fs` ("" is the driver's default), no mount flags.
pub fn mount_cap(fs: &str) -> VolumeCapability {
    mount_cap_flags(fs, Mode::SingleNodeWriter, &[])
}

/// A mount capability of `fs` with `mode`, no mount flags.
pub fn mount_cap_as(fs: &str, mode: Mode) -> VolumeCapability {
    mount_cap_flags(fs, mode, &[])
}

/// A mount capability of `fs` with `mode` and these mount flags.
pub fn mount_cap_flags(fs: &str, mode: Mode, flags: &[&str]) -> VolumeCapability {
    VolumeCapability {
        access_type: Some(AccessType::Mount(MountVolume {
            fs_type: fs.into(),
            mount_flags: flags.iter().map(|f| f.to_string()).collect(),
            volume_mount_group: String::new(),
        })),
        access_mode: Some(AccessMode { mode: mode as i32 }),
    }
}

/// A raw block capability with `mode`.
pub fn block_cap(mode: Mode) -> VolumeCapability {
    VolumeCapability {
        access_type: Some(AccessType::Block(BlockVolume {})),
        access_mode: Some(AccessMode { mode: mode as i32 }),
    }
}
