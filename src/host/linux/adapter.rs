//! LinuxHost: the host port's Linux adapter, the state it keeps.

use super::*;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use beneath::Beneath;
use by_path::ByPath;

use super::super::{
    Content, DevId, Devices, Filesystems, FormatOptions, FsKind, Host, HostError, HostResult,
    MountSpec, Mounter, NodePath, PathState, Usage,
};

/// The real machine. `by_id_dir` is where disks appear by serial (`/dev/disk/by-id`; the
/// local backend and tests use their own directory). Every path below `kubelet_dir` is
/// resolved beneath it without following a symlink ([`beneath`]).
pub struct LinuxHost {
    pub(super) by_id_dir: PathBuf,
    pub(super) beneath: Beneath,
    /// Upstream's fallback to the metadata's `devices[]` when no by-id link names a disk.
    pub(super) by_path: Option<ByPath>,
}

impl LinuxHost {
    pub fn new(by_id_dir: impl Into<PathBuf>, kubelet_dir: &Path) -> Self {
        Self {
            by_id_dir: by_id_dir.into(),
            beneath: Beneath::new(kubelet_dir),
            by_path: None,
        }
    }

    /// The node path and the three roles backed by one `LinuxHost`.
    pub fn host(by_id_dir: impl Into<PathBuf>, kubelet_dir: &Path) -> Host {
        Self::host_with(Self::new(by_id_dir, kubelet_dir))
    }

    /// With the metadata `devices[]` fallback of the disk lookup.
    pub fn with_by_path(mut self, by_path: ByPath) -> Self {
        self.by_path = Some(by_path);
        self
    }

    /// The node path and the three roles backed by `self`.
    pub fn host_with(self) -> Host {
        Host::of(Arc::new(self))
    }
}

impl NodePath for LinuxHost {}

impl Mounter for LinuxHost {
    fn inspect(&self, path: &Path) -> HostResult<PathState> {
        paths::inspect(&self.beneath, path)
    }
    fn mount(&self, device: &Path, target: &Path, spec: &MountSpec) -> HostResult<()> {
        mounts::mount(&self.beneath, device, target, spec)
    }
    fn bind(&self, source: &Path, target: &Path, read_only: bool) -> HostResult<()> {
        mounts::bind(&self.beneath, source, target, read_only)
    }
    fn unmount(&self, target: &Path, lazy: bool) -> HostResult<()> {
        mounts::unmount(&self.beneath, target, lazy)
    }
    fn mounted_device(&self, path: &Path) -> HostResult<Option<PathBuf>> {
        mounts::mounted_device(&self.beneath, path)
    }
    fn mounts_sharing(&self, path: &Path) -> HostResult<Vec<PathBuf>> {
        mounts::sharing(&self.beneath, path)
    }
    fn read_only_after_errors(&self, path: &Path) -> HostResult<bool> {
        mounts::read_only_after_errors(&self.beneath, path)
    }
    fn create_dir(&self, path: &Path) -> HostResult<()> {
        paths::create_dir(&self.beneath, path)
    }
    fn create_file(&self, path: &Path) -> HostResult<()> {
        paths::create_file(&self.beneath, path)
    }
    fn remove(&self, path: &Path) -> HostResult<()> {
        paths::remove(&self.beneath, path)
    }
}

impl Devices for LinuxHost {
    fn find(&self, volume_id: &str, deadline: Instant) -> HostResult<PathBuf> {
        let Some(by_path) = &self.by_path else {
            return devices::find(&self.by_id_dir, volume_id, deadline);
        };
        if let Some(dev) = self.lookup(volume_id) {
            return Ok(dev);
        }
        match devices::find(&self.by_id_dir, volume_id, deadline) {
            Err(e @ HostError::DeviceNotFound { .. }) => by_path.resolve(volume_id).ok_or(e),
            other => other,
        }
    }
    fn lookup(&self, volume_id: &str) -> Option<PathBuf> {
        devices::lookup(&self.by_id_dir, volume_id)
            .or_else(|| self.by_path.as_ref()?.known(volume_id))
    }
    fn size(&self, device: &Path) -> HostResult<u64> {
        devices::size(device)
    }
    fn rescan(&self, device: &Path, deadline: Instant) -> HostResult<()> {
        devices::rescan(device, deadline)
    }
    fn flush(&self, device: &Path) -> HostResult<()> {
        devices::flush(device)
    }
    fn exists(&self, id: DevId) -> bool {
        devices::exists(id)
    }
    fn by_id_dir(&self) -> &Path {
        &self.by_id_dir
    }
}

impl Filesystems for LinuxHost {
    fn probe(&self, device: &Path) -> HostResult<Content> {
        probe::probe(device, devices::size(device)?)
    }
    fn format(&self, device: &Path, fs: FsKind, opts: &FormatOptions) -> HostResult<()> {
        tools::format(device, fs, opts)
    }
    fn grow_offline(&self, device: &Path, fs: FsKind) -> HostResult<()> {
        tools::grow_offline(device, fs)
    }
    fn grow_online(&self, device: &Path, mount_point: &Path, fs: FsKind) -> HostResult<()> {
        tools::grow_online(device, mount_point, fs)
    }
    fn usage(&self, path: &Path) -> HostResult<Usage> {
        // Of the descriptor resolved beneath the kubelet dir (never through a symlink).
        let fd = self.beneath.open(path, rustix::fs::OFlags::PATH)?;
        let s = nix::sys::statvfs::fstatvfs(&fd).map_err(|e| {
            HostError::io("statvfs", path, std::io::Error::from_raw_os_error(e as i32))
        })?;
        let frsize = s.fragment_size();
        let total = s.blocks().saturating_mul(frsize);
        let free = s.blocks_free().saturating_mul(frsize);
        Ok(Usage {
            total_bytes: total,
            available_bytes: s.blocks_available().saturating_mul(frsize),
            used_bytes: total.saturating_sub(free),
            total_inodes: s.files(),
            free_inodes: s.files_free(),
            used_inodes: s.files().saturating_sub(s.files_free()),
            read_only: s.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY),
        })
    }
    fn missing_tools(&self, fs: FsKind) -> Vec<String> {
        tools::missing(fs)
    }
    fn is_consistent(&self, device: &Path, fs: FsKind) -> HostResult<bool> {
        tools::is_consistent(device, fs)
    }
}
