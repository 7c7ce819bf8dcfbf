//! NodePublishVolume / NodeUnpublishVolume: the hot path. A publish is 2 statx + mkdir + one
//! bind (+ one remount for read-only); a block publish adds the by-id lookup and a statx of
//! the staged device; an unpublish is statx + umount2 + statx + rmdir. Nothing waits.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::block;
use super::checks::{unmount_broken, MAX_STACKED_MOUNTS};
use super::model::{NodeOptions, PublishRequest};
use super::params::{self, Access};
use super::stage::KubeletDir;
use crate::driver::types::AccessMode;
use crate::driver::{Error, Invalid, Mismatch, NodeRefusal, PathRole, Result};
use crate::host::{FileKind, Host, HostError, PathState};

pub struct PublishPlan {
    pub volume_id: String,
    pub staging: PathBuf,
    pub target: PathBuf,
    pub access: Access,
    pub read_only: bool,
    /// SINGLE_NODE_SINGLE_WRITER: one target path at a time.
    pub single_writer: bool,
    pub kubelet: KubeletDir,
}

impl PublishPlan {
    pub fn new(req: PublishRequest, opts: &NodeOptions) -> Result<Self> {
        let volume_id = params::volume_id(&req.volume_id)?;
        let target = params::kubelet_path("target_path", &req.target_path, &opts.kubelet_dir)?;
        let access = params::access(&req.capability)?;
        if req.staging_path.is_empty() {
            // CSI error table: STAGE_UNSTAGE_VOLUME is advertised but no staging_target_path
            // was set → FAILED_PRECONDITION.
            return Err(NodeRefusal::NoStagingPath.into());
        }
        let staging =
            params::kubelet_path("staging_target_path", &req.staging_path, &opts.kubelet_dir)?;
        if staging == target {
            return Err(Invalid::SamePaths.into());
        }
        // `ro` among the mount flags made the stage read-only; a bind of it reads as
        // read-only too, so it must be published read-only (else every repeat publish would
        // see a mismatch).
        let read_only = req.read_only
            || req.capability.access_mode.is_read_only()
            || params::read_only_flag(&access);
        Ok(Self {
            volume_id,
            staging,
            target,
            read_only,
            access,
            single_writer: req.capability.access_mode == AccessMode::SingleNodeSingleWriter,
            kubelet: KubeletDir::of(opts),
        })
    }
}

pub fn publish(host: &Host, p: &PublishPlan) -> Result<()> {
    match &p.access {
        Access::Mount { .. } => publish_mount(host, p),
        Access::Block => publish_block(host, p),
    }
}

/// Crosses the host port twice (look, publish); once more for SINGLE_NODE_SINGLE_WRITER
/// (the mount table) or when the volume is published there already (its read-only flag).
fn publish_mount(host: &Host, p: &PublishPlan) -> Result<()> {
    let staging = p.staging.as_path();
    let look = host.node.look_publish(staging, &p.target)?;
    let (staged, target_state) = match (look.staging, look.target) {
        (PathState::Present(info), Some(t)) if info.mount_root && info.kind == FileKind::Dir => {
            (info, t)
        }
        _ => {
            return Err(NodeRefusal::NotStaged {
                id: p.volume_id.clone(),
                staging: staging.to_path_buf(),
                block: false,
            }
            .into())
        }
    };
    let target = &p.target;
    let create_dir = match target_state {
        PathState::Missing => {
            refuse_second_target(host, p, staging)?;
            true
        }
        PathState::Broken { errno } => return Err(broken(target, errno)),
        PathState::Present(t) if t.mount_root => {
            if t.dev != staged.dev || t.ino != staged.ino {
                return Err(NodeRefusal::TargetHoldsOther {
                    target: target.clone(),
                }
                .into());
            }
            return same_read_only(host, p);
        }
        PathState::Present(t) if t.kind != FileKind::Dir => {
            return Err(NodeRefusal::NotDirectory {
                role: PathRole::Target,
                path: target.clone(),
            }
            .into())
        }
        PathState::Present(_) => {
            refuse_second_target(host, p, staging)?;
            false
        }
    };
    host.node
        .publish(staging, target, create_dir, p.read_only)
        .map_err(Into::into)
}

/// CSI (NodePublishVolume, second publish on one node): SINGLE_NODE_SINGLE_WRITER at another
/// target path → FAILED_PRECONDITION. `staged` is what publish binds (the staging mount, or
/// the device bound at `<staging>/block`); another mount of it under the kubelet dir, outside
/// the staging path, is a publish at another target. Only this mode reads the mount table.
/// (SINGLE_NODE_WRITER is not refused: kubelets that predate SINGLE_NODE_MULTI_WRITER send
/// it for every ReadWriteOnce volume, which pods on one node may share.)
fn refuse_second_target(host: &Host, p: &PublishPlan, staged: &Path) -> Result<()> {
    if !p.single_writer {
        return Ok(());
    }
    refuse_other_targets(p, host.mounter.mounts_sharing(staged)?)
}

/// [`refuse_second_target`] given the mount points `sharing` what publish binds.
fn refuse_other_targets(p: &PublishPlan, sharing: Vec<PathBuf>) -> Result<()> {
    let others: Vec<PathBuf> = sharing
        .into_iter()
        .filter(|m| p.kubelet.holds(m) && !p.kubelet.same_or_below(m, &p.staging))
        .filter(|m| !p.kubelet.same_or_below(m, &p.target))
        .collect();
    if others.is_empty() {
        return Ok(());
    }
    Err(NodeRefusal::SingleWriterElsewhere {
        id: p.volume_id.clone(),
        at: others,
        target: p.target.clone(),
    }
    .into())
}

/// Published before: same volume, so the read-only flag must match (statvfs ST_RDONLY of the
/// target, one syscall). CSI: published but incompatible → ALREADY_EXISTS.
fn same_read_only(host: &Host, p: &PublishPlan) -> Result<()> {
    let ro = host.filesystems.usage(&p.target)?.read_only;
    if ro != p.read_only {
        return Err(Mismatch::PublishedOtherwise {
            id: p.volume_id.clone(),
            target: p.target.clone(),
            read_only: p.read_only,
        }
        .into());
    }
    Ok(())
}

fn broken(path: &Path, errno: i32) -> Error {
    NodeRefusal::BrokenMount {
        path: path.to_path_buf(),
        errno,
    }
    .into()
}

/// Crosses the host port three times: the disk's by-id link (no waiting: a staged volume's
/// disk is there), look, bind; the read-only flag instead of the bind when the volume is
/// published there already.
fn publish_block(host: &Host, p: &PublishPlan) -> Result<()> {
    let device = host
        .devices
        .lookup(&p.volume_id)
        .ok_or_else(|| HostError::DeviceNotFound {
            volume_id: p.volume_id.clone(),
            dir: host.devices.by_id_dir().to_path_buf(),
            waited: Duration::ZERO,
        })?;
    let staged_file = block::staged_file(&p.staging);
    let look = host
        .node
        .look_publish_block(&device, &staged_file, &p.target, p.single_writer)?;
    let dev = match &look.device {
        PathState::Present(d) if d.kind == FileKind::Block => *d,
        _ => return Err(NodeRefusal::NotBlockDevice { path: device }.into()),
    };
    let target_state = match (look.staged, look.target) {
        (Some(PathState::Present(s)), Some(t)) if s.mount_root && s.kind == FileKind::Block => {
            if s.rdev != dev.rdev {
                return Err(NodeRefusal::StagedOtherDevice {
                    staging: p.staging.clone(),
                    staged: s.rdev,
                    id: p.volume_id.clone(),
                    disk: dev.rdev,
                    device,
                }
                .into());
            }
            t
        }
        _ => {
            return Err(NodeRefusal::NotStaged {
                id: p.volume_id.clone(),
                staging: p.staging.clone(),
                block: true,
            }
            .into())
        }
    };
    let target = &p.target;
    let create_file = match target_state {
        PathState::Missing => true,
        PathState::Broken { errno } => return Err(broken(target, errno)),
        PathState::Present(t) if t.mount_root => {
            return if t.kind == FileKind::Block && t.rdev == dev.rdev {
                same_read_only(host, p)
            } else {
                Err(NodeRefusal::TargetHoldsOther {
                    target: target.clone(),
                }
                .into())
            };
        }
        PathState::Present(t) if t.kind != FileKind::File => {
            return Err(NodeRefusal::NotRegularFile {
                path: target.clone(),
            }
            .into())
        }
        PathState::Present(_) => false,
    };
    if let Some(sharing) = look.sharing {
        refuse_other_targets(p, sharing)?;
    }
    host.node
        .publish_block(&device, target, create_file, p.read_only)
        .map_err(Into::into)
}

/// Unmount everything at `target` and remove it (file or empty directory). Idempotent: a
/// missing target is success (CSI: NodeUnpublishVolume of an unpublished volume is OK).
pub fn unpublish(host: &Host, target: &Path) -> Result<()> {
    for _ in 0..MAX_STACKED_MOUNTS {
        match host.mounter.inspect(target)? {
            PathState::Missing => return Ok(()),
            PathState::Broken { errno } => unmount_broken(host, target, errno)?,
            PathState::Present(t) if t.mount_root => host.mounter.unmount(target, false)?,
            PathState::Present(_) => {
                host.mounter.remove(target)?;
                return Ok(());
            }
        }
    }
    Err(NodeRefusal::TooManyMounts {
        path: target.to_path_buf(),
        limit: MAX_STACKED_MOUNTS,
    }
    .into())
}
