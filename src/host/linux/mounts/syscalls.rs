//! mount(2), bind, read-only, umount2(2), and what is mounted where.

use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::mount::{MntFlags, MsFlags};
use nix::sys::statvfs::FsFlags;
use rustix::fs::OFlags;
use rustix::mount::{MoveMountFlags, OpenTreeFlags};

use super::super::beneath::{proc_fd, Beneath};
use super::super::mount_options::{mount_args, old_names, parse_options};
use super::super::mountinfo;
use super::super::paths::inspect;
use super::super::statmount;
use crate::host::{DevId, HostError, HostResult, MountSpec, PathState};

pub(super) fn nix_err(op: &'static str, path: &Path, e: Errno) -> HostError {
    HostError::io(op, path, std::io::Error::from_raw_os_error(e as i32))
}

/// Mount onto `/proc/self/fd/N` of the target's descriptor: the kernel mounts on exactly the
/// directory that was checked, whatever its path has become.
pub fn mount(b: &Beneath, device: &Path, target: &Path, spec: &MountSpec) -> HostResult<()> {
    let dir = b.open(target, OFlags::PATH | OFlags::DIRECTORY)?;
    let at = proc_fd(&dir);
    let (flags, data) = mount_args(spec);
    let sys_mount = |data: &[&str]| {
        let data = data.join(",");
        nix::mount::mount(
            Some(device),
            &at,
            Some(spec.fs.as_str()),
            flags,
            (!data.is_empty()).then_some(data.as_str()),
        )
    };
    match sys_mount(&data) {
        // Older kernels know some options by their old names (btrfs `nologreplay`).
        Err(Errno::EINVAL) => match old_names(spec, &data) {
            Some(old) => sys_mount(&old),
            None => Err(Errno::EINVAL),
        },
        other => other,
    }
    .map_err(|e| {
        let given = parse_options(&spec.options).1;
        if e == Errno::EINVAL && !given.is_empty() {
            // The caller's filesystem options are the likely cause (an unknown value, an
            // option of another filesystem): theirs to fix, not an internal error.
            HostError::InvalidInput {
                op: "mount",
                path: target.to_path_buf(),
                detail: format!(
                    "the kernel refused to mount {} as {} with the options {:?} (EINVAL); \
                     check the volume capability's mount flags against the {} mount options",
                    device.display(),
                    spec.fs,
                    given.join(","),
                    spec.fs
                ),
            }
        } else {
            nix_err("mount", target, e)
        }
    })
}

/// A bind made between descriptors: `open_tree(OPEN_TREE_CLONE)` of the source, then
/// `move_mount` onto the target's descriptor, so neither can be swapped for a symlink between
/// the check and the bind. A read-only bind is made read-only while still detached
/// (`mount_setattr`), so the copies mount propagation makes on attach are read-only too: the
/// kubelet's namespace sees the plugin's bind through propagation, and a remount after the
/// attach changes only this namespace's copy. Kernels without `mount_setattr` (before 5.12)
/// get that remount, through the new mount's own descriptor (never through the path again).
pub fn bind(b: &Beneath, source: &Path, target: &Path, read_only: bool) -> HostResult<()> {
    let src = b.open(source, OFlags::PATH)?;
    let tree = rustix::mount::open_tree(
        &src,
        "",
        OpenTreeFlags::OPEN_TREE_CLONE
            | OpenTreeFlags::OPEN_TREE_CLOEXEC
            | OpenTreeFlags::AT_EMPTY_PATH,
    )
    .map_err(|e| b.error("bind mount", source, e))?;
    let remount_read_only = match read_only.then(|| set_read_only(&tree)) {
        None | Some(Ok(())) => false,
        // Before Linux 5.12, or a seccomp profile that does not know it: the remount.
        Some(Err(Errno::ENOSYS | Errno::EPERM)) => true,
        Some(Err(e)) => return Err(nix_err("bind mount read-only", target, e)),
    };
    let dst = b.open(target, OFlags::PATH)?;
    rustix::mount::move_mount(
        &tree,
        "",
        &dst,
        "",
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH | MoveMountFlags::MOVE_MOUNT_T_EMPTY_PATH,
    )
    .map_err(|e| b.error("bind mount", target, e))?;
    if remount_read_only {
        // The kernel ignores MS_RDONLY on the first MS_BIND: only the remount makes the bind
        // read-only. A bind remount sets all per-mount flags at once, so the bind's own
        // (nosuid, nodev, noexec, atime, inherited from the source mount) are carried over.
        // If it fails, undo the bind rather than leave a writable mount behind (detached:
        // our own descriptor still holds it).
        let at = proc_fd(&tree);
        let remount = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY;
        let res = nix::sys::statvfs::fstatvfs(&tree).and_then(|st| {
            let flags = remount | per_mount_flags(st.flags());
            nix::mount::mount(None::<&str>, &at, None::<&str>, flags, None::<&str>)
        });
        if let Err(e) = res {
            let _ = nix::mount::umount2(&at, MntFlags::MNT_DETACH);
            return Err(nix_err("remount read-only", target, e));
        }
    }
    Ok(())
}

/// `mount_setattr(2)` MOUNT_ATTR_RDONLY on the mount `tree` is a descriptor of (no rustix
/// or nix wrapper yet).
#[allow(unsafe_code)]
pub(super) fn set_read_only(tree: &std::os::fd::OwnedFd) -> Result<(), Errno> {
    use std::os::fd::AsRawFd;
    let attr = libc::mount_attr {
        attr_set: libc::MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a live descriptor, a NUL-terminated empty path with AT_EMPTY_PATH, and `attr`
    // with its exact size; the kernel only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            &attr as *const libc::mount_attr,
            std::mem::size_of::<libc::mount_attr>(),
        )
    };
    Errno::result(rc).map(drop)
}

/// The MS_* per-mount flags that statvfs reports for a mount.
pub(super) fn per_mount_flags(st: FsFlags) -> MsFlags {
    let map = [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ];
    map.iter()
        .filter(|(st_flag, _)| st.contains(*st_flag))
        .fold(MsFlags::empty(), |acc, (_, ms)| acc | *ms)
}

/// Tries of an unmount the kernel refuses as busy, and the pause between them. A mount can
/// be held for a moment by what is not a user of it: a tool this process spawns for another
/// volume holds copies of our descriptors until it execs, one of them perhaps the O_PATH
/// descriptor `inspect` had open on this mount (seen 3 times in 2.3 million RPCs of the local
/// soak). Still busy after that, it is in use, and the caller says so (retryable).
pub(super) const BUSY_TRIES: u32 = 5;
pub(super) const BUSY_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

/// umount2 of the topmost mount at `target`. Below the kubelet dir the last component is
/// named relative to its parent's descriptor (`/proc/self/fd/N/name`) and not followed
/// (`UMOUNT_NOFOLLOW`): a target that is, or has become, a symlink is never unmounted
/// through. (A descriptor of the mount itself would hold it busy.)
pub fn unmount(b: &Beneath, target: &Path, lazy: bool) -> HostResult<()> {
    let mut flags = MntFlags::UMOUNT_NOFOLLOW;
    if lazy {
        flags.insert(MntFlags::MNT_DETACH);
    }
    let once = || -> HostResult<()> {
        match b.relative(target) {
            None => nix::mount::umount2(target, flags),
            Some(_) => {
                let (dir, name) = b.parent(target)?;
                nix::mount::umount2(&proc_fd(&dir).join(name), flags)
            }
        }
        .map_err(|e| nix_err("umount", target, e))
    };
    let mut tries = 1;
    loop {
        match once() {
            Err(HostError::Busy { .. }) if tries < BUSY_TRIES => {
                tries += 1;
                std::thread::sleep(BUSY_PAUSE);
            }
            other => return other,
        }
    }
}

pub fn mounted_device(b: &Beneath, path: &Path) -> HostResult<Option<PathBuf>> {
    let info = match inspect(b, path)? {
        PathState::Present(info) if info.mount_root => info,
        _ => return Ok(None),
    };
    if info.dev.major != 0 {
        if let Some(dev) = devnode_of(info.dev) {
            return Ok(Some(dev));
        }
    }
    // Anonymous device (btrfs, or a bind of a non-block fs): only the mount table knows.
    let entry = mountinfo::find(&b.real(path))?;
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

pub fn sharing(b: &Beneath, path: &Path) -> HostResult<Vec<PathBuf>> {
    let real = b.real(path);
    // Asked by mount id where the kernel answers (no mount's options formatted); the mount
    // table otherwise.
    if let Ok(fd) = b.open(path, OFlags::PATH) {
        if let Some(found) = statmount::sharing(&fd, &real) {
            return Ok(found.into_iter().map(PathBuf::from).collect());
        }
    }
    Ok(mountinfo::sharing(&real)?
        .into_iter()
        .map(PathBuf::from)
        .collect())
}

pub fn read_only_after_errors(b: &Beneath, path: &Path) -> HostResult<bool> {
    Ok(mountinfo::find(&b.real(path))?
        .is_some_and(|e| stopped_after_errors(&e.mount_options, &e.super_options)))
}

/// A read-write mount whose filesystem the kernel stopped writing after errors: its
/// superblock remounted read-only, or (recent ext4, seen on Linux 6.18: `errors=remount-ro`
/// no longer remounts) flagged `emergency_ro`, while both lists still say `rw` and statvfs
/// does not say read-only either.
pub(super) fn stopped_after_errors(mount_options: &str, super_options: &str) -> bool {
    let has = |opts: &str, o: &str| opts.split(',').any(|x| x == o);
    has(mount_options, "rw") && (has(super_options, "ro") || has(super_options, "emergency_ro"))
}
