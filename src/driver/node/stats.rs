//! NodeGetVolumeStats (usage + VolumeCondition) and NodeExpandVolume.

use std::path::Path;
use std::time::Instant;

use super::{Condition, VolumeStats, VolumeUsage};
use crate::driver::{Error, Result};
use crate::host::{Content, FileKind, Host, PathState};

pub fn stats(host: &Host, path: &Path) -> Result<VolumeStats> {
    let info = match host.mounter.inspect(path)? {
        PathState::Missing => {
            return Err(Error::PathNotFound {
                path: path.to_path_buf(),
            })
        }
        PathState::Broken { errno } => {
            return Ok(VolumeStats {
                usage: VolumeUsage::Unknown,
                condition: Condition::abnormal(format!(
                    "the mount at {} does not answer: {}",
                    path.display(),
                    std::io::Error::from_raw_os_error(errno)
                )),
            })
        }
        PathState::Present(info) => info,
    };
    let unknown = |msg: String| {
        Ok(VolumeStats {
            usage: VolumeUsage::Unknown,
            condition: Condition::abnormal(msg),
        })
    };
    if !info.mount_root {
        return unknown(format!(
            "nothing is mounted at {}: the volume's mount is gone",
            path.display()
        ));
    }
    match info.kind {
        FileKind::Block => {
            if !host.devices.exists(info.rdev) {
                return unknown(format!(
                    "block device {} published at {} has vanished",
                    info.rdev,
                    path.display()
                ));
            }
            let total_bytes = host.devices.size(path)?;
            Ok(VolumeStats {
                usage: VolumeUsage::Block { total_bytes },
                condition: Condition::ok(),
            })
        }
        FileKind::Dir => {
            let usage = host.filesystems.usage(path)?;
            let condition = if info.dev.major != 0 && !host.devices.exists(info.dev) {
                Condition::abnormal(format!(
                    "block device {} under the filesystem at {} has vanished",
                    info.dev,
                    path.display()
                ))
            } else if usage.read_only && host.mounter.read_only_after_errors(path)? {
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

/// Re-read the device size, grow the filesystem online, return the device size.
pub fn expand(
    host: &Host,
    volume_id: &str,
    path: &Path,
    block_hint: Option<bool>,
    required: u64,
    deadline: Instant,
) -> Result<u64> {
    let info = match host.mounter.inspect(path)? {
        PathState::Missing => {
            return Err(Error::PathNotFound {
                path: path.to_path_buf(),
            })
        }
        PathState::Broken { errno } => {
            return Err(Error::precondition(format!(
                "the mount at {} does not answer ({}); it cannot be grown",
                path.display(),
                std::io::Error::from_raw_os_error(errno)
            )))
        }
        PathState::Present(info) => info,
    };
    let block = block_hint.unwrap_or(info.kind == FileKind::Block) || info.kind == FileKind::Block;
    if !info.mount_root {
        return Err(Error::precondition(format!(
            "volume {volume_id} is not published or staged at {}",
            path.display()
        )));
    }
    let device = if block {
        host.devices.find(volume_id, deadline)?
    } else {
        match host.mounter.mounted_device(path)? {
            Some(d) => d,
            None => host.devices.find(volume_id, deadline)?,
        }
    };
    host.devices.rescan(&device)?;
    let size = host.devices.size(&device)?;
    if size < required {
        return Err(Error::Unavailable(format!(
            "device {} of volume {volume_id} is {size} bytes, less than the {required} bytes \
             requested: the resize has not reached this node yet; retry",
            device.display()
        )));
    }
    if block {
        return Ok(size);
    }
    match host.filesystems.probe(&device)? {
        // Always ask: the tools are no-ops when the filesystem already fills the device.
        Content::Filesystem { kind, .. } => host.filesystems.grow_online(&device, path, kind)?,
        other => {
            return Err(Error::precondition(format!(
                "device {} mounted at {} holds no filesystem this driver can grow ({other:?})",
                device.display(),
                path.display()
            )))
        }
    }
    Ok(size)
}
