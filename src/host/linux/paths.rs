//! Path-local checks and changes below the kubelet dir, with one statx each and never through
//! a symlink: what a path is, mkdir, create a file, remove.

use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags, StatxAttributes, StatxFlags, CWD};
use rustix::io::Errno as RErrno;

use super::beneath::Beneath;
use crate::host::{libc_errno, DevId, FileKind, HostError, HostResult, PathInfo, PathState};

/// Mode of directories the driver creates (staging and target dirs, block target parents).
const DIR_MODE: u32 = 0o750;

/// One statx of `path`, not following a final symlink; below the kubelet dir, of the
/// descriptor `openat2` gave (a symlink anywhere there is [`HostError::UnsafePath`]).
pub fn inspect(b: &Beneath, path: &Path) -> HostResult<PathState> {
    let want = StatxFlags::TYPE | StatxFlags::INO;
    let res = match b.relative(path) {
        None => rustix::fs::statx(CWD, path, AtFlags::SYMLINK_NOFOLLOW, want),
        Some(_) => b
            .open_raw(path, OFlags::PATH)
            .and_then(|fd| rustix::fs::statx(&fd, "", AtFlags::EMPTY_PATH, want)),
    };
    match res {
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
                _ => Err(b.error("statx", path, e)),
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

pub fn create_dir(b: &Beneath, path: &Path) -> HostResult<()> {
    b.create_dirs(path, DIR_MODE).map(drop)
}

/// Create an empty file (parents first), never through a symlink (`O_NOFOLLOW` on the last
/// component, the parents made beneath the kubelet dir).
pub fn create_file(b: &Beneath, path: &Path) -> HostResult<()> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(HostError::UnsafePath {
            path: path.to_path_buf(),
            reason: "it names no file".into(),
        });
    };
    let dir = b.create_dirs(parent, DIR_MODE)?;
    rustix::fs::openat(
        &dir,
        name,
        OFlags::CREATE | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o640),
    )
    .map(drop)
    .map_err(|e| b.error("create", path, e))
}

/// Remove a file or an empty directory, relative to its parent's descriptor and never
/// following the last component: a symlink there is refused, not removed or followed.
pub fn remove(b: &Beneath, path: &Path) -> HostResult<()> {
    let (dir, name) = match b.parent(path) {
        Ok(p) => p,
        Err(HostError::NotFound { .. }) => return Ok(()),
        Err(e) => return Err(e),
    };
    let st = match rustix::fs::statx(&dir, name, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::TYPE) {
        Ok(st) => st,
        Err(RErrno::NOENT) => return Ok(()),
        Err(e) => return Err(b.error("stat", path, e)),
    };
    let (op, flags) = match u32::from(st.stx_mode) & 0o170000 {
        0o120000 if b.relative(path).is_some() => {
            return Err(HostError::UnsafePath {
                path: path.to_path_buf(),
                reason: "it is a symlink; nothing was removed".into(),
            })
        }
        // rmdir, never a recursive delete: a directory with anything mounted below it is
        // not empty, so it cannot be removed by accident.
        0o040000 => ("rmdir", AtFlags::REMOVEDIR),
        _ => ("unlink", AtFlags::empty()),
    };
    match rustix::fs::unlinkat(&dir, name, flags) {
        Ok(()) | Err(RErrno::NOENT) => Ok(()),
        Err(e) => Err(b.error(op, path, e)),
    }
}
