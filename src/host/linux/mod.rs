//! The Linux adapter of the host port: mount(2)/umount2(2) (nix), statx (rustix), superblock
//! probing by pread, block ioctls, and the filesystem tools as processes.

pub mod beneath;
pub mod by_path;
pub mod devices;
pub mod mount_options;
pub mod mountinfo;
pub mod mounts;
pub mod paths;
pub mod probe;
pub mod statmount;
pub mod tools;

mod adapter;
pub use adapter::*;
