//! NodePublishVolume / NodeUnpublishVolume: the hot path. A publish is 2 statx + mkdir + one
//! bind (+ one remount for read-only); an unpublish is statx + umount2 + statx + rmdir.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::params::{self, Access};
use super::stage::{block_device, unmount_broken, MAX_STACKED_MOUNTS};
use super::{NodeOptions, PublishRequest};
use crate::driver::{Error, Result};
use crate::host::{FileKind, Host, PathState};

pub struct PublishPlan {
    pub volume_id: String,
    pub staging: Option<PathBuf>,
    pub target: PathBuf,
    pub access: Access,
    pub read_only: bool,
}

impl PublishPlan {
    pub fn new(req: PublishRequest, opts: &NodeOptions) -> Result<Self> {
        let volume_id = params::volume_id(&req.volume_id)?;
        let target = params::kubelet_path("target_path", &req.target_path, &opts.kubelet_dir)?;
        let access = params::access(&req.capability)?;
        let staging = match (&access, req.staging_path.is_empty()) {
            (Access::Mount { .. }, true) => {
                return Err(Error::invalid(
                    "staging_target_path is required: this plugin stages filesystem volumes \
                     (STAGE_UNSTAGE_VOLUME)",
                ))
            }
            (_, true) => None,
            (_, false) => Some(params::kubelet_path(
                "staging_target_path",
                &req.staging_path,
                &opts.kubelet_dir,
            )?),
        };
        if staging.as_ref() == Some(&target) {
            return Err(Error::invalid(
                "target_path and staging_target_path must differ",
            ));
        }
        Ok(Self {
            volume_id,
            staging,
            target,
            read_only: req.read_only || req.capability.access_mode.is_read_only(),
            access,
        })
    }
}

pub fn publish(host: &Host, p: &PublishPlan, deadline: Instant) -> Result<()> {
    match &p.access {
        Access::Mount { .. } => publish_mount(host, p),
        Access::Block => publish_block(host, p, deadline),
    }
}

fn publish_mount(host: &Host, p: &PublishPlan) -> Result<()> {
    let staging = p.staging.as_deref().unwrap_or(Path::new(""));
    let staged = match host.mounter.inspect(staging)? {
        PathState::Present(info) if info.mount_root && info.kind == FileKind::Dir => info,
        _ => {
            return Err(Error::precondition(format!(
                "volume {} is not staged at {}; call NodeStageVolume first",
                p.volume_id,
                staging.display()
            )))
        }
    };
    let target = &p.target;
    match host.mounter.inspect(target)? {
        PathState::Missing => host.mounter.create_dir(target)?,
        PathState::Broken { errno } => return Err(broken(target, errno)),
        PathState::Present(t) if t.mount_root => {
            if t.dev != staged.dev || t.ino != staged.ino {
                return Err(Error::precondition(format!(
                    "target path {} already holds another mount; unpublish it first",
                    target.display()
                )));
            }
            // Published before: same volume, check the read-only flag matches.
            let ro = host.filesystems.usage(target)?.read_only;
            if ro != p.read_only {
                return Err(Error::AlreadyExists(format!(
                    "volume {} is already published at {} {}; unpublish it before publishing \
                     it {}",
                    p.volume_id,
                    target.display(),
                    rw(ro),
                    rw(p.read_only)
                )));
            }
            return Ok(());
        }
        PathState::Present(t) if t.kind != FileKind::Dir => {
            return Err(Error::precondition(format!(
                "target path {} exists and is not a directory",
                target.display()
            )))
        }
        PathState::Present(_) => {}
    }
    host.mounter.bind(staging, target, p.read_only)?;
    Ok(())
}

fn rw(read_only: bool) -> &'static str {
    if read_only {
        "read-only"
    } else {
        "read-write"
    }
}

fn broken(path: &Path, errno: i32) -> Error {
    Error::precondition(format!(
        "{} is a broken mount ({}); call NodeUnpublishVolume to clean it up",
        path.display(),
        std::io::Error::from_raw_os_error(errno)
    ))
}

fn publish_block(host: &Host, p: &PublishPlan, deadline: Instant) -> Result<()> {
    let device = host.devices.find(&p.volume_id, deadline)?;
    let dev = block_device(host, &device)?;
    let target = &p.target;
    match host.mounter.inspect(target)? {
        PathState::Missing => host.mounter.create_file(target)?,
        PathState::Broken { errno } => return Err(broken(target, errno)),
        PathState::Present(t) if t.mount_root => {
            return if t.kind == FileKind::Block && t.rdev == dev.rdev {
                Ok(())
            } else {
                Err(Error::precondition(format!(
                    "target path {} already holds another mount; unpublish it first",
                    target.display()
                )))
            };
        }
        PathState::Present(t) if t.kind != FileKind::File => {
            return Err(Error::precondition(format!(
                "target path {} exists and is not a regular file",
                target.display()
            )))
        }
        PathState::Present(_) => {}
    }
    if let Err(e) = host.mounter.bind(&device, target, p.read_only) {
        // Leave nothing half-done behind: the file we may have created goes again.
        let _ = host.mounter.remove(target);
        return Err(e.into());
    }
    Ok(())
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
    Err(Error::precondition(format!(
        "more than {MAX_STACKED_MOUNTS} mounts are stacked at {}; clean them up by hand",
        target.display()
    )))
}
