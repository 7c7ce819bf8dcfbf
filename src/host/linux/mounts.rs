//! Mounts with mount(2)/umount2(2) and path-local checks with one statx each; never a
//! process, and /proc/self/mountinfo only where the mounted source must be known.

use std::fs::OpenOptions;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::mount::{MntFlags, MsFlags};
use rustix::fs::{AtFlags, StatxAttributes, StatxFlags, CWD};

use super::mountinfo;
use crate::host::{
    libc_errno, DevId, FileKind, FsKind, HostError, HostResult, MountSpec, PathInfo, PathState,
};

/// Mode of directories the driver creates (staging and target dirs, block target parents).
const DIR_MODE: u32 = 0o750;

fn nix_err(op: &'static str, path: &Path, e: Errno) -> HostError {
    HostError::io(op, path, std::io::Error::from_raw_os_error(e as i32))
}

pub fn inspect(path: &Path) -> HostResult<PathState> {
    let want = StatxFlags::TYPE | StatxFlags::INO;
    match rustix::fs::statx(CWD, path, AtFlags::SYMLINK_NOFOLLOW, want) {
        Ok(st) => {
            let kind = match u32::from(st.stx_mode) & 0o170000 {
                0o040000 => FileKind::Dir,
                0o100000 => FileKind::File,
                0o060000 => FileKind::Block,
                _ => FileKind::Other,
            };
            let mount_root = if st.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT) {
                st.stx_attributes.contains(StatxAttributes::MOUNT_ROOT)
            } else {
                // Kernels before 5.8: compare with the parent's device (misses same-fs binds).
                parent_dev_differs(path, st.stx_dev_major, st.stx_dev_minor)
            };
            Ok(PathState::Present(PathInfo {
                kind,
                mount_root,
                dev: DevId {
                    major: st.stx_dev_major,
                    minor: st.stx_dev_minor,
                },
                rdev: DevId {
                    major: st.stx_rdev_major,
                    minor: st.stx_rdev_minor,
                },
                ino: st.stx_ino,
            }))
        }
        Err(e) => {
            let errno = e.raw_os_error();
            match errno {
                libc_errno::ENOENT => Ok(PathState::Missing),
                libc_errno::EIO | libc_errno::ENOTCONN | libc_errno::ESTALE => {
                    Ok(PathState::Broken { errno })
                }
                _ => Err(HostError::io("statx", path, e.into())),
            }
        }
    }
}

fn parent_dev_differs(path: &Path, major: u32, minor: u32) -> bool {
    let Some(parent) = path.parent() else {
        return true;
    };
    match rustix::fs::statx(CWD, parent, AtFlags::empty(), StatxFlags::TYPE) {
        Ok(p) => p.stx_dev_major != major || p.stx_dev_minor != minor,
        Err(_) => false,
    }
}

/// Split capability mount options into MS_* flags and filesystem data.
pub fn parse_options(options: &[String]) -> (MsFlags, Vec<&str>) {
    let mut flags = MsFlags::empty();
    let mut data = Vec::new();
    for opt in options.iter().flat_map(|o| o.split(',')) {
        let opt = opt.trim();
        let (set, clear) = match opt {
            "" | "defaults" | "rw" | "async" | "suid" | "dev" | "exec" | "atime" | "diratime"
            | "nostrictatime" | "nolazytime" => (MsFlags::empty(), MsFlags::empty()),
            "ro" => (MsFlags::MS_RDONLY, MsFlags::empty()),
            "nosuid" => (MsFlags::MS_NOSUID, MsFlags::empty()),
            "nodev" => (MsFlags::MS_NODEV, MsFlags::empty()),
            "noexec" => (MsFlags::MS_NOEXEC, MsFlags::empty()),
            "sync" => (MsFlags::MS_SYNCHRONOUS, MsFlags::empty()),
            "dirsync" => (MsFlags::MS_DIRSYNC, MsFlags::empty()),
            "noatime" => (MsFlags::MS_NOATIME, MsFlags::empty()),
            "nodiratime" => (MsFlags::MS_NODIRATIME, MsFlags::empty()),
            "relatime" => (MsFlags::MS_RELATIME, MsFlags::empty()),
            "norelatime" => (MsFlags::empty(), MsFlags::MS_RELATIME),
            "strictatime" => (MsFlags::MS_STRICTATIME, MsFlags::empty()),
            "lazytime" => (MsFlags::MS_LAZYTIME, MsFlags::empty()),
            "silent" => (MsFlags::MS_SILENT, MsFlags::empty()),
            other => {
                data.push(other);
                continue;
            }
        };
        flags.insert(set);
        flags.remove(clear);
    }
    (flags, data)
}

pub fn mount(device: &Path, target: &Path, spec: &MountSpec) -> HostResult<()> {
    let (mut flags, mut data) = parse_options(&spec.options);
    if spec.read_only {
        flags.insert(MsFlags::MS_RDONLY);
    }
    // Clones and snapshots of one xfs volume share its UUID; without nouuid the second
    // mount on a node fails.
    if spec.fs == FsKind::Xfs && !data.contains(&"nouuid") {
        data.push("nouuid");
    }
    let data = data.join(",");
    nix::mount::mount(
        Some(device),
        target,
        Some(spec.fs.as_str()),
        flags,
        (!data.is_empty()).then_some(data.as_str()),
    )
    .map_err(|e| nix_err("mount", target, e))
}

pub fn bind(source: &Path, target: &Path, read_only: bool) -> HostResult<()> {
    nix::mount::mount(
        Some(source),
        target,
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    )
    .map_err(|e| nix_err("bind mount", target, e))?;
    if read_only {
        // The kernel ignores MS_RDONLY on the first MS_BIND: only the remount makes the bind
        // read-only. If it fails, undo the bind rather than leave a writable mount behind.
        let remount = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY;
        if let Err(e) = nix::mount::mount(None::<&str>, target, None::<&str>, remount, None::<&str>)
        {
            let _ = nix::mount::umount2(target, MntFlags::UMOUNT_NOFOLLOW);
            return Err(nix_err("remount read-only", target, e));
        }
    }
    Ok(())
}

pub fn unmount(target: &Path, lazy: bool) -> HostResult<()> {
    let mut flags = MntFlags::UMOUNT_NOFOLLOW;
    if lazy {
        flags.insert(MntFlags::MNT_DETACH);
    }
    nix::mount::umount2(target, flags).map_err(|e| nix_err("umount", target, e))
}

pub fn mounted_device(path: &Path) -> HostResult<Option<PathBuf>> {
    let info = match inspect(path)? {
        PathState::Present(info) if info.mount_root => info,
        _ => return Ok(None),
    };
    if info.dev.major != 0 {
        if let Some(dev) = devnode_of(info.dev) {
            return Ok(Some(dev));
        }
    }
    // Anonymous device (btrfs, or a bind of a non-block fs): only the mount table knows.
    let entry = mountinfo::find(path)?;
    Ok(entry
        .map(|e| PathBuf::from(e.source))
        .filter(|p| p.is_absolute()))
}

/// `/dev/<DEVNAME>` of a block device number, from sysfs.
pub fn devnode_of(dev: DevId) -> Option<PathBuf> {
    let uevent = std::fs::read_to_string(format!("/sys/dev/block/{dev}/uevent")).ok()?;
    uevent
        .lines()
        .find_map(|l| l.strip_prefix("DEVNAME="))
        .map(|name| Path::new("/dev").join(name))
}

pub fn read_only_after_errors(path: &Path) -> HostResult<bool> {
    Ok(mountinfo::find(path)?.is_some_and(|e| {
        let has = |opts: &str, o: &str| opts.split(',').any(|x| x == o);
        has(&e.mount_options, "rw") && has(&e.super_options, "ro")
    }))
}

pub fn create_dir(path: &Path) -> HostResult<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
        .map_err(|e| HostError::io("mkdir", path, e))
}

pub fn create_file(path: &Path) -> HostResult<()> {
    if let Some(parent) = path.parent() {
        create_dir(parent)?;
    }
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o640)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)
        .map(drop)
        .map_err(|e| HostError::io("create", path, e))
}

pub fn remove(path: &Path) -> HostResult<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(HostError::io("stat", path, e)),
    };
    // rmdir, never a recursive delete: a directory with anything mounted below it is not
    // empty, so it cannot be removed by accident.
    let res = if meta.is_dir() {
        std::fs::remove_dir(path).map_err(|e| HostError::io("rmdir", path, e))
    } else {
        std::fs::remove_file(path).map_err(|e| HostError::io("unlink", path, e))
    };
    match res {
        Err(HostError::NotFound { .. }) => Ok(()),
        other => other,
    }
}
