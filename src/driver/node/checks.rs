//! What a path or device is, and cleaning up broken mounts: shared by stage, block, publish
//! and stats.

use std::path::Path;

use crate::driver::{Error, NodeRefusal, Result};
use crate::host::{FileKind, Host, PathInfo, PathState, StageLook};

/// Upper bound on stacked mounts removed by one unstage/unpublish.
pub const MAX_STACKED_MOUNTS: usize = 8;

/// The device must be a block device node.
pub fn block_device(host: &Host, device: &Path) -> Result<PathInfo> {
    match host.mounter.inspect(device)? {
        PathState::Present(info) if info.kind == FileKind::Block => Ok(info),
        _ => Err(NodeRefusal::NotBlockDevice {
            path: device.to_path_buf(),
        }
        .into()),
    }
}

/// The device a stage look saw, which must be a block device node.
pub fn looked_device(look: &StageLook, device: &Path) -> Result<PathInfo> {
    look.block_device().ok_or_else(|| {
        NodeRefusal::NotBlockDevice {
            path: device.to_path_buf(),
        }
        .into()
    })
}

/// Still broken after one mount was removed: several are stacked there.
pub fn still_broken(path: &Path, errno: i32) -> Error {
    NodeRefusal::StillBroken {
        path: path.to_path_buf(),
        errno,
    }
    .into()
}

/// Whether the mount at `path` (info from statx) is the filesystem on `device` (see
/// [`crate::host::NodePath::mounts_device`]).
pub fn same_device(
    host: &Host,
    path: &Path,
    info: &PathInfo,
    device: &Path,
    dev: &PathInfo,
) -> Result<bool> {
    Ok(host.node.mounts_device(path, info, device, dev)?)
}

/// A mount whose filesystem no longer answers (EIO/ENOTCONN/ESTALE): try a normal unmount;
/// if the kernel refuses, detach it lazily. This is the only place a lazy unmount is used:
/// nothing can be flushed through a dead filesystem, and detaching is the only way to free
/// the path. Its device is not flushed (it cannot be found through the dead mount).
pub fn unmount_broken(host: &Host, path: &Path, errno: i32) -> Result<()> {
    tracing::warn!(path = %path.display(), error = %std::io::Error::from_raw_os_error(errno), "cleaning up a broken mount");
    match host.mounter.unmount(path, false) {
        Ok(()) => Ok(()),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "unmount of broken mount failed; detaching it lazily");
            host.mounter.unmount(path, true).map_err(Into::into)
        }
    }
}
