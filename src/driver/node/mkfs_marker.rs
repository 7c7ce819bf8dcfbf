//! A format interrupted by a kill -9 of the node plugin (its container killed, mkfs with it)
//! leaves a half-made filesystem: no signature at all but non-zero blocks (ext4 writes its
//! superblock last), or an xfs superblock the kernel refuses to mount (EUCLEAN). Stage never
//! formats a device that is not blank, so without more the volume could never be staged again.
//! Before mkfs, stage leaves a marker file beside the staging directory; it is removed once
//! the volume is mounted (before any pod can write to it), and by an unstage that unmounts
//! it. A stage that finds it knows the device was blank before the format it started and
//! has held no data since: whatever is there is that mkfs's output.

use std::path::{Path, PathBuf};

use super::plan::StagePlan;
use crate::driver::Result;
use crate::host::{Content, FsKind, Host};

/// `<staging>.cinder-csi-mkfs`, in the CO's per-volume directory (kubelet's
/// `.../<volume>/globalmount` → `.../<volume>/globalmount.cinder-csi-mkfs`).
pub fn path(staging: &Path) -> PathBuf {
    let mut p = staging.as_os_str().to_owned();
    p.push(".cinder-csi-mkfs");
    PathBuf::from(p)
}

/// What to do with the device's `content` when an interrupted format of ours is on record:
/// Blank (format again) for a device with no signature, or with a filesystem of the requested
/// kind that a read-only check finds incomplete; the content unchanged otherwise (a whole
/// filesystem, mkfs having finished just before the kill, is mounted as usual; anything else
/// is not mkfs output and is still refused).
pub fn after_interrupted_format(
    host: &Host,
    p: &StagePlan,
    requested: FsKind,
    device: &Path,
    content: Content,
) -> Result<Content> {
    let again = match &content {
        Content::Blank | Content::Unrecognised => true,
        Content::Filesystem { kind, .. } if *kind == requested => {
            !host.filesystems.is_consistent(device, *kind)?
        }
        _ => false,
    };
    if !again {
        return Ok(content);
    }
    tracing::warn!(
        volume_id = %p.volume_id, device = %device.display(), found = ?content,
        "a format of this blank volume was interrupted (plugin killed during mkfs); formatting it again"
    );
    Ok(Content::Blank)
}
