//! Domain types of the host port.

use std::fmt;

use super::fs::FsKind;

/// A device number (major:minor), as in `st_dev` / `st_rdev`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DevId {
    pub major: u32,
    pub minor: u32,
}

impl fmt::Display for DevId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Dir,
    File,
    Block,
    Other,
}

/// What one `statx` says about an existing path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathInfo {
    pub kind: FileKind,
    /// The path is the root of a mount (`STATX_ATTR_MOUNT_ROOT`).
    pub mount_root: bool,
    /// Device of the filesystem holding the path.
    pub dev: DevId,
    /// For device nodes: the device they stand for.
    pub rdev: DevId,
    pub ino: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathState {
    Missing,
    Present(PathInfo),
    /// The path exists but its filesystem does not answer (EIO, ENOTCONN, ESTALE): a
    /// corrupted or disconnected mount. `errno` is the error seen.
    Broken {
        errno: i32,
    },
}

/// What a probe found on a block device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// No signature and only zeroes where signatures live: safe to format.
    Blank,
    Filesystem {
        kind: FsKind,
        /// Size the filesystem spans, from its superblock.
        size_bytes: u64,
    },
    /// A partition table ("dos", "gpt"): never formatted, never mounted whole.
    PartitionTable(&'static str),
    /// A known signature we do not mount (swap, LUKS, LVM2, iso9660, …).
    Other(&'static str),
    /// More than one signature, each described ("ext4 filesystem", "dos partition
    /// table"): which one is current cannot be told, so it is never formatted nor mounted.
    Several(Vec<String>),
    /// Data without a signature we know: treated as not blank.
    Unrecognised,
}

/// Optional mkfs parameters (validated by the core).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FormatOptions {
    pub block_size: Option<u32>,
    pub inode_size: Option<u32>,
    pub bytes_per_inode: Option<u64>,
    pub number_of_inodes: Option<u64>,
    /// The device holds only a format of ours that was interrupted (see the node core's
    /// mkfs marker): mkfs may write over its partial signature (`-f`).
    pub overwrite_interrupted: bool,
    /// StorageClass `mkfsOptions`, split and checked ([`crate::host::fs::mkfs_args`]):
    /// passed after the driver's own arguments (so they win where mkfs takes the last one)
    /// and before the device.
    pub extra: Vec<String>,
}

/// How to mount a filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountSpec {
    pub fs: FsKind,
    /// Options as given in the capability (`noatime`, `discard`, …); flags become MS_* bits,
    /// the rest goes to the filesystem as data.
    pub options: Vec<String>,
    pub read_only: bool,
}

/// statvfs, in bytes and inodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub total_bytes: u64,
    pub available_bytes: u64,
    pub used_bytes: u64,
    pub total_inodes: u64,
    pub free_inodes: u64,
    pub used_inodes: u64,
    pub read_only: bool,
}
