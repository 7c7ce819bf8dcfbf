//! The node path's port, shaped around what the node core decides: each step of stage,
//! unstage and publish is one look (every fact the core decides on, read without changing
//! anything) and one act (what the core decided, carried out), instead of a question per
//! fact. The core keeps every decision (format only a device it found blank, refuse anything
//! else, which mounts to undo and how); an adapter may answer a look and carry out an act in
//! fewer syscalls than the fine-grained roles would. The provided methods compose the roles,
//! so an adapter that overrides nothing behaves as the roles do.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{
    Content, Devices, FileKind, Filesystems, FormatOptions, FsKind, HostResult, MountSpec, Mounter,
    PathInfo, PathState,
};

/// The paths of one volume's staging: the CO's directory, the file a block device is bound
/// onto inside it, and the marker of a format in progress beside it (the core names them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagePaths {
    pub staging: PathBuf,
    pub block_file: PathBuf,
    pub marker: PathBuf,
}

/// What stage decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageLook {
    /// The volume's device node. The rest is looked at only when it is a block device (else
    /// it is left `Missing`/`None`/`false`).
    pub device: PathState,
    pub staging: PathState,
    /// When the staging path is a mount root: whether that mount is the filesystem on the
    /// device (st_dev; the mount table for an anonymous device such as btrfs's).
    pub same_device: Option<bool>,
    /// When the staging path is missing or a directory nothing is mounted on: what
    /// `block_file` is.
    pub block_file: Option<PathState>,
    /// When, besides, no device is bound at `block_file`: what the device holds.
    pub content: Option<Content>,
    /// Whether the marker of an interrupted format is there (looked at with `content`, or
    /// when the volume is staged already).
    pub marker: bool,
}

impl StageLook {
    /// A look that has seen the device only (the rest is looked at when it is a block device).
    fn of_device(device: PathState) -> Self {
        StageLook {
            device,
            staging: PathState::Missing,
            same_device: None,
            block_file: None,
            content: None,
            marker: false,
        }
    }

    /// The device, when it is a block device.
    pub fn block_device(&self) -> Option<PathInfo> {
        match &self.device {
            PathState::Present(d) if d.kind == FileKind::Block => Some(*d),
            _ => None,
        }
    }
}

/// A filesystem stage the core decided on, carried out in this order.
#[derive(Debug, Clone, Copy)]
pub struct StageWork<'a> {
    /// The staging path was missing.
    pub create_dir: bool,
    /// The device was found blank: format it (the marker is created first and removed once
    /// the volume is mounted).
    pub format: Option<(FsKind, &'a FormatOptions)>,
    /// Grow the filesystem before mounting it.
    pub grow_offline: Option<FsKind>,
    pub mount: &'a MountSpec,
}

/// What unstage decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnstageLook {
    pub staging: PathState,
    /// Other mount points of what is mounted at the staging path (its filesystem, or the
    /// device bound at `block_file` when the directory itself is not a mount).
    pub sharing: Vec<PathBuf>,
}

/// What unmounting the filesystem at a staging path did.
#[derive(Debug)]
pub struct Unmounted {
    /// The device the filesystem was on, when it could be named.
    pub device: Option<PathBuf>,
    /// The flush of that device after the unmount (the core judges a failure).
    pub flushed: HostResult<()>,
    /// The staging path afterwards (another mount may have been stacked below).
    pub after: PathState,
}

/// What a block publish decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishBlockLook {
    /// The volume's device node.
    pub device: PathState,
    /// When the device is a block device: what the staging path's block file is.
    pub staged: Option<PathState>,
    /// When a block device is bound at the block file: the target path.
    pub target: Option<PathState>,
    /// When asked for and the target holds no mount yet: the other mount points of the
    /// device bound at the block file.
    pub sharing: Option<Vec<PathBuf>>,
}

/// What publish decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishLook {
    pub staging: PathState,
    /// Looked at only when the staging path is a mounted directory.
    pub target: Option<PathState>,
}

/// The node path in steps (see the module's comment).
pub trait NodePath: Mounter + Devices + Filesystems {
    /// The look of NodeStageVolume (filesystem or block) for `device`.
    fn look_stage(&self, device: &Path, paths: &StagePaths) -> HostResult<StageLook> {
        let mut look = StageLook::of_device(self.inspect(device)?);
        let Some(dev) = look.block_device() else {
            return Ok(look);
        };
        let staging = self.inspect(&paths.staging)?;
        look.staging = staging.clone();
        let plain = match &staging {
            PathState::Present(info) if info.mount_root => {
                look.same_device = Some(self.mounts_device(&paths.staging, info, device, &dev)?);
                look.marker = self.inspect(&paths.marker)? != PathState::Missing;
                false
            }
            PathState::Present(info) => info.kind == FileKind::Dir,
            PathState::Missing => true,
            PathState::Broken { .. } => false,
        };
        if plain {
            let file = self.inspect(&paths.block_file)?;
            let bound =
                matches!(&file, PathState::Present(f) if f.mount_root && f.kind == FileKind::Block);
            look.block_file = Some(file);
            if !bound {
                look.content = Some(self.probe(device)?);
                look.marker = self.inspect(&paths.marker)? != PathState::Missing;
            }
        }
        Ok(look)
    }

    /// The look of a block NodeStageVolume: `device`, then (a block device) the staging
    /// path, whether a mount there is `device`, and the block file inside a plain directory.
    /// A raw block volume is never probed, so `content` stays `None` and `marker` false.
    fn look_stage_block(&self, device: &Path, paths: &StagePaths) -> HostResult<StageLook> {
        let mut look = StageLook::of_device(self.inspect(device)?);
        let Some(dev) = look.block_device() else {
            return Ok(look);
        };
        look.staging = self.inspect(&paths.staging)?;
        match &look.staging {
            PathState::Present(info) if info.mount_root => {
                look.same_device = Some(self.mounts_device(&paths.staging, info, device, &dev)?);
            }
            PathState::Present(info) if info.kind != FileKind::Dir => {}
            PathState::Present(_) | PathState::Missing => {
                look.block_file = Some(self.inspect(&paths.block_file)?);
            }
            PathState::Broken { .. } => {}
        }
        Ok(look)
    }

    /// Carry out a block stage: bind `device` onto the block file, first creating the
    /// staging directory and the file where the core found them missing. When the bind
    /// fails the file is removed again (nothing half-done is left behind).
    fn stage_block(
        &self,
        device: &Path,
        paths: &StagePaths,
        create_dir: bool,
        create_file: bool,
        read_only: bool,
    ) -> HostResult<()> {
        if create_dir {
            self.create_dir(&paths.staging)?;
        }
        if create_file {
            self.create_file(&paths.block_file)?;
        }
        if let Err(e) = self.bind(device, &paths.block_file, read_only) {
            let _ = self.remove(&paths.block_file);
            return Err(e);
        }
        Ok(())
    }

    /// Whether the mount at `path` (`info` from its statx) is the filesystem on `device`
    /// (`dev` from its statx). ext4/xfs report the block device as st_dev, so one comparison
    /// answers; btrfs uses an anonymous device (major 0), so only then is the mount table
    /// asked.
    fn mounts_device(
        &self,
        path: &Path,
        info: &PathInfo,
        device: &Path,
        dev: &PathInfo,
    ) -> HostResult<bool> {
        if info.dev == dev.rdev {
            return Ok(true);
        }
        if info.dev.major != 0 {
            return Ok(false);
        }
        match self.mounted_device(path)? {
            Some(src) if src == device => Ok(true),
            Some(src) => Ok(matches!(
                self.inspect(&src)?,
                PathState::Present(s) if s.kind == FileKind::Block && s.rdev == dev.rdev
            )),
            None => Ok(false),
        }
    }

    /// Carry out a filesystem stage; returns the staging path as it is after the mount.
    fn stage(&self, device: &Path, paths: &StagePaths, work: &StageWork) -> HostResult<PathState> {
        if work.create_dir {
            self.create_dir(&paths.staging)?;
        }
        if let Some((fs, opts)) = work.format {
            // Kept until the volume is mounted: a kill -9 in between is told apart from data.
            self.create_file(&paths.marker)?;
            self.format(device, fs, opts)?;
        }
        if let Some(fs) = work.grow_offline {
            self.grow_offline(device, fs)?;
        }
        self.mount(device, &paths.staging, work.mount)?;
        self.remove(&paths.marker)?;
        self.inspect(&paths.staging)
    }

    /// The look of NodeUnstageVolume.
    fn look_unstage(&self, paths: &StagePaths) -> HostResult<UnstageLook> {
        let staging = self.inspect(&paths.staging)?;
        let mounted = match &staging {
            PathState::Present(info) if info.mount_root => Some(paths.staging.as_path()),
            PathState::Present(info) if info.kind == FileKind::Dir => {
                match self.inspect(&paths.block_file)? {
                    PathState::Present(f) if f.mount_root => Some(paths.block_file.as_path()),
                    _ => None,
                }
            }
            _ => None,
        };
        let sharing = match mounted {
            Some(m) => self.mounts_sharing(m)?,
            None => Vec::new(),
        };
        Ok(UnstageLook { staging, sharing })
    }

    /// Unmount the filesystem mounted at the staging path (never lazily), remove the
    /// marker (no format of ours is pending once it was mounted), then flush its device.
    fn unmount_staged(&self, paths: &StagePaths) -> HostResult<Unmounted> {
        let device = self.mounted_device(&paths.staging)?;
        self.unmount(&paths.staging, false)?;
        self.remove(&paths.marker)?;
        let flushed = match &device {
            Some(d) => self.flush(d),
            None => Ok(()),
        };
        let after = self.inspect(&paths.staging)?;
        Ok(Unmounted {
            device,
            flushed,
            after,
        })
    }

    /// The look of a filesystem NodePublishVolume.
    fn look_publish(&self, staging: &Path, target: &Path) -> HostResult<PublishLook> {
        let staging = self.inspect(staging)?;
        let target = match &staging {
            PathState::Present(s) if s.mount_root && s.kind == FileKind::Dir => {
                Some(self.inspect(target)?)
            }
            _ => None,
        };
        Ok(PublishLook { staging, target })
    }

    /// The look of a block NodePublishVolume: `device`, then (a block device) the block file
    /// in the staging directory, then (a device bound there) the target, and with `sharing`
    /// the bound device's other mount points when the target holds no mount yet (a missing
    /// path or a plain file).
    fn look_publish_block(
        &self,
        device: &Path,
        staged_file: &Path,
        target: &Path,
        sharing: bool,
    ) -> HostResult<PublishBlockLook> {
        let mut look = PublishBlockLook {
            device: self.inspect(device)?,
            staged: None,
            target: None,
            sharing: None,
        };
        if !matches!(&look.device, PathState::Present(d) if d.kind == FileKind::Block) {
            return Ok(look);
        }
        let staged = self.inspect(staged_file)?;
        let bound =
            matches!(&staged, PathState::Present(s) if s.mount_root && s.kind == FileKind::Block);
        look.staged = Some(staged);
        if !bound {
            return Ok(look);
        }
        let t = self.inspect(target)?;
        let unmounted = match &t {
            PathState::Missing => true,
            PathState::Present(t) => !t.mount_root && t.kind == FileKind::File,
            PathState::Broken { .. } => false,
        };
        if sharing && unmounted {
            look.sharing = Some(self.mounts_sharing(staged_file)?);
        }
        look.target = Some(t);
        Ok(look)
    }

    /// Bind `device` onto `target` (creating the file first when it was missing); when the
    /// bind fails the file is removed again.
    fn publish_block(
        &self,
        device: &Path,
        target: &Path,
        create_file: bool,
        read_only: bool,
    ) -> HostResult<()> {
        if create_file {
            self.create_file(target)?;
        }
        if let Err(e) = self.bind(device, target, read_only) {
            let _ = self.remove(target);
            return Err(e);
        }
        Ok(())
    }

    /// Bind the staging mount onto `target`, creating the directory first when it was
    /// missing.
    fn publish(
        &self,
        staging: &Path,
        target: &Path,
        create_dir: bool,
        read_only: bool,
    ) -> HostResult<()> {
        if create_dir {
            self.create_dir(target)?;
        }
        self.bind(staging, target, read_only)
    }
}

/// The host as the node core holds it: the node path's steps, and the roles for what is not
/// a step of it (stats, expand, block staging, readiness).
#[derive(Clone)]
pub struct Host {
    pub node: Arc<dyn NodePath>,
    pub mounter: Arc<dyn Mounter>,
    pub devices: Arc<dyn Devices>,
    pub filesystems: Arc<dyn Filesystems>,
}

impl Host {
    /// All four from one adapter.
    pub fn of<T: NodePath + 'static>(adapter: Arc<T>) -> Self {
        Self {
            node: adapter.clone(),
            mounter: adapter.clone(),
            devices: adapter.clone(),
            filesystems: adapter,
        }
    }
}
