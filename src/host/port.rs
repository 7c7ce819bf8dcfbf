//! The host port: its error and the fine-grained roles, the Mounter, Devices and Filesystems
//! traits (the node path's steps and Host are in `node_port`).

use super::*;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{} does not exist", path.display())]
    NotFound { path: PathBuf },
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The mount or file is still in use (EBUSY, ENOTEMPTY); retrying later may succeed.
    #[error("{op} {}: still in use ({source})", path.display())]
    Busy {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The kernel refused for lack of privilege (EPERM/EACCES), e.g. ext4 online grow
    /// without CAP_SYS_RESOURCE. Retrying does not help; the message says what is missing.
    #[error("{op} {}: not permitted: {detail}", path.display())]
    NotPermitted {
        op: &'static str,
        path: PathBuf,
        detail: String,
    },
    #[error("`{command}` failed (exit status {status:?}): {stderr}")]
    Command {
        command: String,
        status: Option<i32>,
        stderr: String,
    },
    /// No disk for the volume under the by-id directory, after waiting `waited` (zero for a
    /// look without waiting).
    #[error("{}", device_not_found(.volume_id, .dir, *.waited))]
    DeviceNotFound {
        volume_id: String,
        dir: PathBuf,
        waited: Duration,
    },
    #[error("{0}")]
    Unsupported(String),
    /// A path below the kubelet dir that leads through a symlink or out of it: the caller's
    /// input, refused before anything was changed.
    #[error("{} cannot be used: {reason}", path.display())]
    UnsafePath { path: PathBuf, reason: String },
    /// The kernel refused what the caller asked for (a name too long, mount options it does
    /// not accept): fixing the request is what helps.
    #[error("{op} {}: {detail}", path.display())]
    InvalidInput {
        op: &'static str,
        path: PathBuf,
        detail: String,
    },
    /// A call into the kernel that talks to the device (a SCSI rescan) did not return within
    /// the RPC's deadline: the device may be hung. It goes on in the background.
    #[error("{op} {} did not finish within {:.1} s; the device may be hung; retry later", path.display(), waited.as_secs_f64())]
    TimedOut {
        op: &'static str,
        path: PathBuf,
        waited: Duration,
    },
}

pub type HostResult<T> = Result<T, HostError>;

/// What to check when a volume's disk is not there: Nova gives virtio disks the first 20
/// characters of the volume id as serial, which is what udev names them by.
pub(super) fn device_not_found(volume_id: &str, dir: &Path, waited: Duration) -> String {
    let serial: String = volume_id.chars().take(20).collect();
    let waited = if waited.is_zero() {
        String::new()
    } else {
        format!(" after waiting {:.1} s", waited.as_secs_f64())
    };
    format!(
        "no disk with serial {serial} under {}{waited}: is volume {volume_id} attached to this \
         node?",
        dir.display()
    )
}

impl HostError {
    pub fn io(op: &'static str, path: &Path, source: std::io::Error) -> Self {
        match source.raw_os_error() {
            Some(libc_errno::ENOENT) => Self::NotFound {
                path: path.to_path_buf(),
            },
            Some(libc_errno::ENAMETOOLONG) => Self::InvalidInput {
                op,
                path: path.to_path_buf(),
                detail: format!(
                    "{source}: Linux paths are at most 4095 bytes and each name in them at \
                     most 255; use a shorter path"
                ),
            },
            Some(libc_errno::EBUSY | libc_errno::ENOTEMPTY) => Self::Busy {
                op,
                path: path.to_path_buf(),
                source,
            },
            _ => Self::Io {
                op,
                path: path.to_path_buf(),
                source,
            },
        }
    }
}

/// The few errno values the port interprets (Linux numbering; kept here so the port does
/// not depend on libc).
pub mod libc_errno {
    pub const EPERM: i32 = 1;
    pub const ENOENT: i32 = 2;
    pub const EIO: i32 = 5;
    pub const EBUSY: i32 = 16;
    pub const EINVAL: i32 = 22;
    pub const EROFS: i32 = 30;
    pub const ENAMETOOLONG: i32 = 36;
    pub const ENOTEMPTY: i32 = 39;
    pub const ELOOP: i32 = 40;
    pub const ENOTCONN: i32 = 107;
    pub const ESTALE: i32 = 116;
}

/// Mount table and path operations on the node's filesystem tree.
pub trait Mounter: Send + Sync {
    /// What is at `path`, without following a final symlink and without spawning anything
    /// (one `statx`). A path whose filesystem is broken (EIO, ENOTCONN, ESTALE) is
    /// [`PathState::Broken`], not an error.
    fn inspect(&self, path: &Path) -> HostResult<PathState>;
    /// Mount the filesystem on `device` at `target`. A read-only mount (`read_only`, or `ro`
    /// among the options) replays no journal or log: it never writes to the device.
    fn mount(&self, device: &Path, target: &Path, opts: &MountSpec) -> HostResult<()>;
    /// Bind-mount `source` onto `target`; read-only binds are remounted read-only.
    fn bind(&self, source: &Path, target: &Path, read_only: bool) -> HostResult<()>;
    /// Unmount `target`; `lazy` detaches it even when busy (last resort).
    fn unmount(&self, target: &Path, lazy: bool) -> HostResult<()>;
    /// The block device whose filesystem is mounted at the mount root `path` (sysfs for real
    /// devices, /proc/self/mountinfo only for anonymous devices such as btrfs).
    fn mounted_device(&self, path: &Path) -> HostResult<Option<PathBuf>>;
    /// Other mount points showing what is mounted at `path`: mounts of the same filesystem,
    /// or binds of the same bound file (reads /proc/self/mountinfo).
    fn mounts_sharing(&self, path: &Path) -> HostResult<Vec<PathBuf>>;
    /// Whether the filesystem at `path` is read-only because of errors: the superblock is
    /// read-only (or ext4's `emergency_ro`) while the mount itself is not (reads
    /// /proc/self/mountinfo).
    fn read_only_after_errors(&self, path: &Path) -> HostResult<bool>;
    /// `mkdir -p`, mode 0750 for the directories created.
    fn create_dir(&self, path: &Path) -> HostResult<()>;
    /// Create an empty file (and its parent directories); an existing file is fine.
    fn create_file(&self, path: &Path) -> HostResult<()>;
    /// Remove a file or an empty directory (never recursive, so nothing mounted below it can
    /// be removed). A missing path is fine.
    fn remove(&self, path: &Path) -> HostResult<()>;
}

/// Block devices: discovery by volume id, size, rescan and flush.
pub trait Devices: Send + Sync {
    /// The block device of `volume_id`, waiting with backoff until `deadline`.
    fn find(&self, volume_id: &str, deadline: Instant) -> HostResult<PathBuf>;
    /// The block device of `volume_id` if it is there now: one look, no wait, no rescan.
    fn lookup(&self, volume_id: &str) -> Option<PathBuf>;
    /// Size in bytes (BLKGETSIZE64).
    fn size(&self, device: &Path) -> HostResult<u64>;
    /// Ask the kernel to re-read the device's size, waiting for it at most until `deadline`.
    fn rescan(&self, device: &Path, deadline: Instant) -> HostResult<()>;
    /// fsync the device, then drop its buffer cache (BLKFLSBUF).
    fn flush(&self, device: &Path) -> HostResult<()>;
    /// Whether the block device `id` still exists.
    fn exists(&self, id: DevId) -> bool;
    /// Directory searched by [`Devices::find`].
    fn by_id_dir(&self) -> &Path;
}

/// Filesystems on block devices: probe, format, grow, usage.
pub trait Filesystems: Send + Sync {
    /// What the device holds. Anything not recognised as blank is reported as not blank.
    fn probe(&self, device: &Path) -> HostResult<Content>;
    /// Make a filesystem on a blank device.
    fn format(&self, device: &Path, fs: FsKind, opts: &FormatOptions) -> HostResult<()>;
    /// Grow an unmounted filesystem to fill its device (ext* only; others grow online).
    fn grow_offline(&self, device: &Path, fs: FsKind) -> HostResult<()>;
    /// Grow the filesystem mounted at `mount_point` to fill `device`.
    fn grow_online(&self, device: &Path, mount_point: &Path, fs: FsKind) -> HostResult<()>;
    /// statvfs of a path.
    fn usage(&self, path: &Path) -> HostResult<Usage>;
    /// Tools missing on this host for `fs` (empty when all are there).
    fn missing_tools(&self, fs: FsKind) -> Vec<String>;
    /// Whether the unmounted filesystem on `device` is whole and consistent, checked without
    /// writing to it (`e2fsck -fn`, `xfs_repair -n`, `btrfs check --readonly`).
    fn is_consistent(&self, device: &Path, fs: FsKind) -> HostResult<bool>;
}
