//! Config drive adapter: reads `openstack/latest/meta_data.json` straight from the block device
//! labelled `config-2`, without mounting it. A mount needs privileges and a temporary directory,
//! and some kernels (this CI's included) have neither iso9660 nor vfat built in. Nova writes the
//! drive as ISO 9660 with Rock Ridge and Joliet (`genisoimage -r -J -V config-2`), or as VFAT
//! (`mkfs.vfat -n config-2`) where the hypervisor needs a disk instead of a CD-ROM.

mod found;
mod iso;
mod vfat;
pub use found::META_DATA_PATH;

mod drive;
pub use drive::*;
