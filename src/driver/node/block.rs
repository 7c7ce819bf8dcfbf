//! Raw block volumes at the staging path: NodeStageVolume bind-mounts the device node onto a
//! file inside the (CO-owned) staging directory, so the staging path shows what is staged.
//! That lets a second stage with the other access type be refused instead of formatting a
//! device that pods use raw, lets NodeGetVolumeStats answer at the staging path, and lets
//! publish check that it binds the device that was staged.

use std::path::{Path, PathBuf};

use super::checks::{looked_device, still_broken, unmount_broken, MAX_STACKED_MOUNTS};
use super::plan::StagePlan;
use crate::driver::{Mismatch, NodeRefusal, PathRole, Result};
use crate::host::{FileKind, Host, PathInfo, PathState, StagePaths};

/// The file inside the staging directory that the device node is bound onto.
pub const STAGED_DEVICE: &str = "block";

pub fn staged_file(staging: &Path) -> PathBuf {
    staging.join(STAGED_DEVICE)
}

/// The device staged for block access in `staging` (a plain directory), if any: one statx.
pub fn staged(host: &Host, staging: &Path) -> Result<Option<PathInfo>> {
    Ok(match host.mounter.inspect(&staged_file(staging))? {
        PathState::Present(f) if f.mount_root && f.kind == FileKind::Block => Some(f),
        _ => None,
    })
}

/// Refuse to stage a filesystem in `staging` when a device is staged there for block access
/// (CSI: staged with an incompatible capability → ALREADY_EXISTS). Mounting over it would
/// hide the bind, and probing could end in formatting a device that pods use raw. `file` is
/// what `<staging>/block` is, `dev` the volume's device.
pub fn refuse_staged(p: &StagePlan, file: &PathInfo, dev: &PathInfo) -> Result<()> {
    if !(file.mount_root && file.kind == FileKind::Block) {
        return Ok(());
    }
    if file.rdev == dev.rdev {
        return Err(Mismatch::StagedForBlock {
            id: p.volume_id.clone(),
            staging: p.staging.clone(),
        }
        .into());
    }
    Err(NodeRefusal::StagingHoldsDevice {
        staging: p.staging.clone(),
        device: file.rdev,
        id: p.volume_id.clone(),
    }
    .into())
}

/// Stage for block access: bind `device` onto `<staging>/block`. Idempotent. After the disk
/// is found this crosses the host port twice (look, bind). A broken mount (EIO/ENOTCONN/
/// ESTALE) at the staging path or its block file is cleaned up and looked at again: stage
/// must do this itself, as kubelet does not unstage a volume whose stage failed.
pub fn stage(host: &Host, p: &StagePlan, paths: &StagePaths, device: &Path) -> Result<()> {
    let staging = &p.staging;
    let mut look = host.node.look_stage_block(device, paths)?;
    if let PathState::Broken { errno } = look.staging {
        unmount_broken(host, staging, errno)?;
        look = host.node.look_stage_block(device, paths)?;
    }
    if let Some(PathState::Broken { errno }) = look.block_file {
        unmount_broken(host, &paths.block_file, errno)?;
        look = host.node.look_stage_block(device, paths)?;
    }
    let dev = looked_device(&look, device)?;
    let create_dir = match &look.staging {
        PathState::Missing => true,
        PathState::Broken { errno } => return Err(still_broken(staging, *errno)),
        PathState::Present(info) if info.mount_root => {
            return Err(if look.same_device == Some(true) {
                Mismatch::StagedWithMount {
                    id: p.volume_id.clone(),
                    staging: staging.clone(),
                }
                .into()
            } else {
                NodeRefusal::StagingHoldsOther {
                    staging: staging.clone(),
                    id: p.volume_id.clone(),
                    device: None,
                }
                .into()
            });
        }
        PathState::Present(info) if info.kind != FileKind::Dir => {
            return Err(NodeRefusal::NotDirectory {
                role: PathRole::Staging,
                path: staging.clone(),
            }
            .into())
        }
        PathState::Present(_) => false,
    };
    let file = &paths.block_file;
    let create_file = match look.block_file.unwrap_or(PathState::Missing) {
        PathState::Missing => true,
        PathState::Present(f) if f.mount_root => {
            // Staged before (CSI: repeated stage of the same volume succeeds).
            return if f.kind == FileKind::Block && f.rdev == dev.rdev {
                Ok(())
            } else {
                Err(NodeRefusal::StagingHoldsOtherAt {
                    staging: staging.clone(),
                    device: f.rdev,
                    file: file.clone(),
                    id: p.volume_id.clone(),
                }
                .into())
            };
        }
        PathState::Present(f) if f.kind == FileKind::File => false, // left by an interrupted stage
        PathState::Present(_) | PathState::Broken { .. } => {
            return Err(NodeRefusal::CannotBindOnto { path: file.clone() }.into())
        }
    };
    host.node
        .stage_block(device, paths, create_dir, create_file, p.read_only)
        .map_err(Into::into)
}

/// Undo [`stage`] in the plain directory `staging`: flush the device, unmount the bind, remove
/// the file. The directory itself stays (it belongs to the CO). Idempotent.
pub fn unstage(host: &Host, staging: &Path) -> Result<()> {
    let file = staged_file(staging);
    for _ in 0..MAX_STACKED_MOUNTS {
        match host.mounter.inspect(&file)? {
            PathState::Missing => return Ok(()),
            PathState::Broken { errno } => unmount_broken(host, &file, errno)?,
            PathState::Present(f) if f.mount_root => {
                // Pods wrote through the device's page cache: push it out before the
                // controller detaches the disk. A device that is gone has nothing to flush.
                if f.kind == FileKind::Block && host.devices.exists(f.rdev) {
                    host.devices.flush(&file)?;
                }
                host.mounter.unmount(&file, false)?;
            }
            PathState::Present(f) if f.kind == FileKind::File => {
                host.mounter.remove(&file)?;
                return Ok(());
            }
            PathState::Present(_) => return Err(NodeRefusal::NotOurFile { path: file }.into()),
        }
    }
    Err(NodeRefusal::TooManyMounts {
        path: file,
        limit: MAX_STACKED_MOUNTS,
    }
    .into())
}
