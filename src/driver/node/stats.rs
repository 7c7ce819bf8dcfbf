//! NodeGetVolumeStats (usage + VolumeCondition) and NodeExpandVolume.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::block;
use super::checks::{block_device, same_device};
use super::model::{Condition, VolumeStats, VolumeUsage};
use crate::driver::{Error, NodeRefusal, NotAtPath, Result};
use crate::host::{Content, FileKind, Host, HostError, PathInfo, PathState};

/// What is at a volume path.
enum Found {
    Missing,
    /// The mount there does not answer (errno).
    Broken(i32),
    /// A mount root: the path itself, or for the staging directory of a block volume the
    /// file inside it that the device is bound onto.
    Mounted(PathBuf, PathInfo),
    /// A file or directory with nothing mounted on it.
    NotMounted,
}

fn look(host: &Host, path: &Path) -> Result<Found> {
    Ok(match host.mounter.inspect(path)? {
        PathState::Missing => Found::Missing,
        PathState::Broken { errno } => Found::Broken(errno),
        PathState::Present(info) if info.mount_root => Found::Mounted(path.to_path_buf(), info),
        PathState::Present(info) if info.kind == FileKind::Dir => {
            match block::staged(host, path)? {
                Some(f) => Found::Mounted(block::staged_file(path), f),
                None => Found::NotMounted,
            }
        }
        PathState::Present(_) => Found::NotMounted,
    })
}

/// CSI NodeGetVolumeStats: NOT_FOUND when the volume is not at the path. The mount's device
/// (st_dev of a filesystem, st_rdev of a bound device node) must be the volume's disk, looked
/// up without waiting; btrfs's anonymous st_dev falls back to the mount table.
fn check_owner(host: &Host, volume_id: &str, path: &Path, info: &PathInfo) -> Result<()> {
    let device = host
        .devices
        .lookup(volume_id)
        .ok_or_else(|| HostError::DeviceNotFound {
            volume_id: volume_id.to_string(),
            dir: host.devices.by_id_dir().to_path_buf(),
            waited: Duration::ZERO,
        })?;
    let dev = block_device(host, &device)?;
    let (same, found) = match info.kind {
        FileKind::Block => (info.rdev == dev.rdev, info.rdev),
        _ => (same_device(host, path, info, &device, &dev)?, info.dev),
    };
    if same {
        return Ok(());
    }
    Err(Error::VolumeNotAtPath {
        id: volume_id.to_string(),
        path: path.to_path_buf(),
        why: NotAtPath::OtherDevice {
            found,
            device,
            disk: dev.rdev,
        },
    })
}

pub fn stats(host: &Host, volume_id: &str, path: &Path) -> Result<VolumeStats> {
    let (mounted, info) = match look(host, path)? {
        Found::Missing => {
            return Err(Error::PathNotFound {
                path: path.to_path_buf(),
            })
        }
        Found::Broken(errno) => {
            return Ok(VolumeStats {
                usage: VolumeUsage::Unknown,
                condition: Condition::abnormal(format!(
                    "the mount at {} does not answer: {}",
                    path.display(),
                    std::io::Error::from_raw_os_error(errno)
                )),
            })
        }
        Found::NotMounted => {
            return Err(Error::VolumeNotAtPath {
                id: volume_id.to_string(),
                path: path.to_path_buf(),
                why: NotAtPath::NothingMounted,
            })
        }
        Found::Mounted(p, info) => (p, info),
    };
    let path = mounted.as_path();
    let unknown = |msg: String| {
        Ok(VolumeStats {
            usage: VolumeUsage::Unknown,
            condition: Condition::abnormal(msg),
        })
    };
    match info.kind {
        FileKind::Block => {
            if !host.devices.exists(info.rdev) {
                return unknown(format!(
                    "block device {} published at {} has vanished",
                    info.rdev,
                    path.display()
                ));
            }
            check_owner(host, volume_id, path, &info)?;
            let total_bytes = host.devices.size(path)?;
            Ok(VolumeStats {
                usage: VolumeUsage::Block { total_bytes },
                condition: Condition::ok(),
            })
        }
        FileKind::Dir => {
            let vanished = info.dev.major != 0 && !host.devices.exists(info.dev);
            if !vanished {
                check_owner(host, volume_id, path, &info)?;
            }
            let usage = host.filesystems.usage(path)?;
            let condition = if vanished {
                Condition::abnormal(format!(
                    "block device {} under the filesystem at {} has vanished",
                    info.dev,
                    path.display()
                ))
            } else if host.mounter.read_only_after_errors(path)? {
                // Asked even when statvfs says read-write: ext4's emergency_ro does not show
                // there.
                Condition::abnormal(format!(
                    "the filesystem at {} was mounted read-write but is now read-only, \
                     usually after I/O or consistency errors; check the kernel log",
                    path.display()
                ))
            } else {
                Condition::ok()
            };
            Ok(VolumeStats {
                usage: VolumeUsage::Filesystem(usage),
                condition,
            })
        }
        FileKind::File | FileKind::Other => unknown(format!(
            "{} is a mount of something that is neither a directory nor a block device",
            path.display()
        )),
    }
}

/// Re-read the device size, grow the filesystem online, return the device size. `path` is
/// the staging path when the CO gave one, else the published path. NotFound when the volume
/// is not there (CSI reserves FAILED_PRECONDITION for a volume in use, and kubelet gives up
/// on it); the mounted device must be the volume's disk before anything is grown.
pub fn expand(
    host: &Host,
    volume_id: &str,
    path: &Path,
    block_hint: Option<bool>,
    required: u64,
    deadline: Instant,
) -> Result<u64> {
    let (mounted, info) = match look(host, path)? {
        Found::Missing => {
            return Err(Error::PathNotFound {
                path: path.to_path_buf(),
            })
        }
        Found::Broken(errno) => {
            return Err(NodeRefusal::BrokenCannotGrow {
                path: path.to_path_buf(),
                errno,
            }
            .into())
        }
        Found::NotMounted => {
            return Err(Error::VolumeNotAtPath {
                id: volume_id.to_string(),
                path: path.to_path_buf(),
                why: NotAtPath::NothingMounted,
            })
        }
        Found::Mounted(p, info) => (p, info),
    };
    let path = mounted.as_path();
    check_owner(host, volume_id, path, &info)?;
    let block = block_hint.unwrap_or(info.kind == FileKind::Block) || info.kind == FileKind::Block;
    // check_owner found the disk under by-id; find() returns it without waiting.
    let device = host.devices.find(volume_id, deadline)?;
    host.devices.rescan(&device, deadline)?;
    let size = host.devices.size(&device)?;
    if size < required {
        return Err(Error::ResizePending {
            id: volume_id.to_string(),
            device,
            size,
            required,
        });
    }
    if block {
        return Ok(size);
    }
    match host.filesystems.probe(&device)? {
        // Always ask: the tools are no-ops when the filesystem already fills the device.
        Content::Filesystem { kind, .. } => host.filesystems.grow_online(&device, path, kind)?,
        content => {
            return Err(NodeRefusal::NothingToGrow {
                device,
                path: path.to_path_buf(),
                content,
            }
            .into())
        }
    }
    Ok(size)
}
