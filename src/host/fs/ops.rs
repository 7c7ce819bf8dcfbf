//! What one filesystem is to the driver, as a trait each filesystem's file implements. The
//! methods are facts and tool runs as data: the Linux adapter executes them, the fake host
//! does not need to, and nothing outside the filesystem's file matches on its kind.

use std::path::Path;

use super::mkfs_args::MkfsFlag;
use crate::host::{FormatOptions, HostError};

pub trait FilesystemOps: Sync {
    /// The fsType, the type given to mount(2), and the suffix of its `mkfs.` tool.
    fn name(&self) -> &'static str;

    /// What this filesystem's signature in `head` (the device's first 128 KiB) says, if it
    /// is there. Members of one family (ext2/3/4) each claim only their own kind.
    fn identify(&self, head: &[u8]) -> Option<Signature>;

    /// Tools this filesystem needs on the node (format, check, grow).
    fn tools(&self) -> &'static [&'static str];

    /// The Debian package that ships [`FilesystemOps::tools`].
    fn package(&self) -> &'static str;

    /// mkfs of a blank `device`.
    fn mkfs(&self, device: &Path, opts: &FormatOptions) -> Tool;

    /// Which mkfs options it takes, within which bounds (checked by the node core).
    fn format_limits(&self) -> FormatLimits;

    /// Its mkfs's single-letter options, for StorageClass `mkfsOptions` (see
    /// [`super::mkfs_args`]): what each takes, and which are refused.
    fn mkfs_flags(&self) -> &'static [MkfsFlag];

    /// A read-only check of the unmounted filesystem: exit 0 means whole and consistent.
    fn check(&self, device: &Path) -> Tool;

    /// Whether it grows while unmounted (before the mount), rather than once mounted.
    fn grows_offline(&self) -> bool {
        false
    }

    /// The steps of an offline grow, run in order (only when [`Self::grows_offline`]).
    fn grow_offline(&self, _device: &Path) -> Vec<Tool> {
        Vec::new()
    }

    /// Grow the filesystem mounted at `mount_point` to fill `device`.
    fn grow_online(&self, device: &Path, mount_point: &Path) -> Tool;

    /// The error for an online grow that failed with `stderr`, when it says more than the
    /// tool's failure (the kernel refusing for lack of a capability); `None` otherwise.
    fn grow_refused(&self, _mount_point: &Path, _stderr: &str) -> Option<HostError> {
        None
    }

    /// Keys (without `=value`) of its own mount options, from its manual page.
    fn mount_options(&self) -> &'static [&'static str];

    /// Options added to every mount of it.
    fn always_options(&self) -> &'static [&'static str] {
        &[]
    }

    /// Options that keep a read-only mount from writing to the device (no journal or log
    /// replay).
    fn no_replay_options(&self) -> &'static [&'static str];

    /// Options older kernels know by another name: (current, old), retried with the old
    /// name when the kernel answers EINVAL.
    fn renamed_options(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
}

/// What a filesystem's [`FilesystemOps::identify`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signature {
    /// This filesystem, spanning `size_bytes` according to its superblock.
    This { size_bytes: u64 },
    /// A relative of it the driver does not mount (an ext journal device).
    Other(&'static str),
}

/// One run of a tool: the program, its arguments and the exit statuses that mean success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    pub program: &'static str,
    pub args: Vec<String>,
    pub ok: &'static [i32],
}

impl Tool {
    /// A run that succeeds with exit status 0.
    pub fn new(program: &'static str, args: Vec<String>) -> Self {
        Self {
            program,
            args,
            ok: &[0],
        }
    }
}

/// The mkfs options a filesystem takes. Sizes are powers of two within (low, high).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatLimits {
    pub block_size: (u64, u64),
    /// `None`: no inode size option.
    pub inode_size: Option<(u64, u64)>,
    /// The inode size may not exceed a given block size (ext).
    pub inode_within_block: bool,
    /// `None`: no bytes-per-inode option (any whole number within the bounds otherwise).
    pub bytes_per_inode: Option<(u64, u64)>,
    pub number_of_inodes: bool,
}
