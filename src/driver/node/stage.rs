//! NodeStageVolume / NodeUnstageVolume. Formatting happens only on a provably blank device;
//! anything else that is not our filesystem is refused, never overwritten.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::checks::{looked_device, still_broken, unmount_broken, MAX_STACKED_MOUNTS};
use super::model::NodeOptions;
use super::params::Access;
use super::plan::StagePlan;
use super::{block, mkfs_marker};
use crate::driver::{Error, Invalid, NodeRefusal, ParamClass, PathRole, Result};
use crate::host::{
    Content, FileKind, FsKind, Host, HostError, MountSpec, PathState, StagePaths, StageWork,
};

/// A filesystem this much smaller than its device is grown (Cinder sizes are whole GiB;
/// filesystems round their size down to a block or allocation group).
pub const GROW_THRESHOLD: u64 = 1 << 20;

/// `device_deadline` bounds the wait for the disk (see [`super::model::DEVICE_WAIT`]).
/// A stage of a formatted disk, or for block access, crosses the host port three times: find
/// the disk, look, stage.
pub fn stage(host: &Host, p: &StagePlan, device_deadline: Instant) -> Result<()> {
    let device = host.devices.find(&p.volume_id, device_deadline)?;
    match &p.access {
        Access::Block => block::stage(host, p, &stage_paths(&p.staging), &device),
        Access::Mount { fs, flags } => stage_mount(host, p, *fs, flags, &device),
    }
}

fn stage_mount(
    host: &Host,
    p: &StagePlan,
    requested: FsKind,
    flags: &[String],
    device: &Path,
) -> Result<()> {
    let paths = stage_paths(&p.staging);
    let staging = &p.staging;
    let mut look = host.node.look_stage(device, &paths)?;
    let mut dev = looked_device(&look, device)?;
    if let PathState::Broken { errno } = look.staging {
        // Stage must clean this itself: it answered the broken mount with a final error
        // before, and kubelet does not unstage a volume whose stage failed.
        unmount_broken(host, staging, errno)?;
        look = host.node.look_stage(device, &paths)?;
        dev = looked_device(&look, device)?;
    }
    let create_dir = match &look.staging {
        PathState::Missing => true,
        PathState::Broken { errno } => return Err(still_broken(staging, *errno)),
        PathState::Present(info) if info.mount_root => {
            if look.same_device != Some(true) {
                return Err(NodeRefusal::StagingHoldsOther {
                    staging: staging.clone(),
                    id: p.volume_id.clone(),
                    device: Some(device.to_path_buf()),
                }
                .into());
            }
            // Staged before (CSI: repeated stage of the same volume succeeds). The mount stays
            // if the grow fails: pods may use it. The error is one kubelet treats as
            // uncertain, so it keeps the volume staged in its books and still unstages it
            // (a final code after a kubelet restart would make it forget the mount).
            // A kill between the mount and the marker's removal left it behind.
            if look.marker {
                host.mounter.remove(&paths.marker)?;
            }
            if p.context.resize_required && !p.read_only {
                grow_mounted(host, device, staging).map_err(|e| Error::GrowFailed {
                    id: p.volume_id.clone(),
                    staging: staging.clone(),
                    source: Box::new(e),
                })?;
            }
            return Ok(());
        }
        PathState::Present(info) if info.kind != FileKind::Dir => {
            return Err(NodeRefusal::NotDirectory {
                role: PathRole::Staging,
                path: staging.clone(),
            }
            .into())
        }
        PathState::Present(_) => {
            if let Some(PathState::Present(f)) = &look.block_file {
                block::refuse_staged(p, f, &dev)?;
            }
            false
        }
    };

    let Some(mut content) = look.content.clone() else {
        // Only a device bound at `<staging>/block` leaves the device unprobed, and that was
        // refused above.
        return Err(NodeRefusal::NotBlockDevice {
            path: device.to_path_buf(),
        }
        .into());
    };
    let mut format = p.context.format.clone();
    if look.marker {
        content = mkfs_marker::after_interrupted_format(host, p, requested, device, content)?;
        format.overwrite_interrupted = true;
    }
    let (mut format_as, mut grow_offline) = (None, None);
    let fs = match content {
        Content::Blank => {
            if let Some(why) = &p.context.mkfs_refused {
                return Err(Invalid::MkfsOptions {
                    class: ParamClass::VolumeContext,
                    why: why.clone(),
                }
                .into());
            }
            if p.read_only {
                return Err(NodeRefusal::BlankReadOnly {
                    id: p.volume_id.clone(),
                }
                .into());
            }
            let missing = host.filesystems.missing_tools(requested);
            if !missing.is_empty() {
                return Err(NodeRefusal::MissingTools {
                    id: p.volume_id.clone(),
                    fs: requested,
                    tools: missing,
                }
                .into());
            }
            tracing::info!(device = %device.display(), fs = %requested, "formatting blank device");
            format_as = Some((requested, &format));
            requested
        }
        Content::Filesystem { kind, size_bytes } => {
            if kind != requested {
                tracing::warn!(
                    device = %device.display(), found = %kind, requested = %requested,
                    "device already holds a different filesystem; mounting it as it is, never reformatting"
                );
            }
            if p.context.resize_required && !p.read_only && kind.ops().grows_offline() {
                // ext* grows offline here: online grow needs CAP_SYS_RESOURCE.
                let size = host.devices.size(device)?;
                if size_bytes + GROW_THRESHOLD <= size {
                    tracing::info!(device = %device.display(), from = size_bytes, to = size, "growing filesystem before mounting");
                    grow_offline = Some(kind);
                }
            }
            kind
        }
        // Not ours to format or mount; a person must decide.
        other @ (Content::PartitionTable(_)
        | Content::Other(_)
        | Content::Several(_)
        | Content::Unrecognised) => {
            return Err(NodeRefusal::DeviceHoldsData {
                device: device.to_path_buf(),
                id: p.volume_id.clone(),
                content: other,
            }
            .into());
        }
    };
    let work = StageWork {
        create_dir,
        format: format_as,
        grow_offline,
        mount: &MountSpec {
            fs,
            options: flags.to_vec(),
            read_only: p.read_only,
        },
    };
    // A filesystem another mount still holds broken (a bind left from before a crash)
    // comes back broken: say so instead of reporting a staged volume that does not answer.
    if let PathState::Broken { errno } = host.node.stage(device, &paths, &work)? {
        undo_mount(host, staging);
        return Err(NodeRefusal::BrokenAfterMount {
            id: p.volume_id.clone(),
            errno,
        }
        .into());
    }
    if p.context.resize_required && !p.read_only && !fs.ops().grows_offline() {
        // Undo the mount on failure: kubelet treats the error as final and forgets this
        // stage, so a mount left behind would never be unstaged. A retry starts clean.
        if let Err(e) = grow_mounted(host, device, staging) {
            undo_mount(host, staging);
            return Err(e);
        }
    }
    Ok(())
}

/// The paths the node path's steps take for the volume staged at `staging`.
pub fn stage_paths(staging: &Path) -> StagePaths {
    StagePaths {
        staging: staging.to_path_buf(),
        block_file: block::staged_file(staging),
        marker: mkfs_marker::path(staging),
    }
}

fn undo_mount(host: &Host, staging: &Path) {
    if let Err(e) = host.mounter.unmount(staging, false) {
        tracing::warn!(path = %staging.display(), error = %e, "could not undo the mount of a failed stage");
    }
}

/// Grow the mounted filesystem on `device` when it is smaller than the device.
pub fn grow_mounted(host: &Host, device: &Path, mount_point: &Path) -> Result<()> {
    let size = host.devices.size(device)?;
    if let Content::Filesystem { kind, size_bytes } = host.filesystems.probe(device)? {
        if size_bytes + GROW_THRESHOLD <= size {
            host.filesystems.grow_online(device, mount_point, kind)?;
        }
    }
    Ok(())
}

/// Unmount everything at `staging` and flush the device; for block access undo the bind
/// inside it. The directory stays: the CO created it and removes it ("The CO SHALL be
/// responsible for creating the directory"; kubelet deletes it after NodeUnstageVolume).
/// Idempotent. Refused, changing nothing, while the volume is still mounted at another path
/// under `kubelet_dir` (a pod's bind: kubelet must unpublish first).
pub fn unstage(host: &Host, staging: &Path, kubelet: &KubeletDir) -> Result<()> {
    let paths = stage_paths(staging);
    let look = host.node.look_unstage(&paths)?;
    refuse_if_in_use(staging, kubelet, look.sharing)?;
    let mut state = look.staging;
    for _ in 0..MAX_STACKED_MOUNTS {
        match state {
            PathState::Missing => return Ok(()),
            PathState::Broken { errno } => {
                unmount_broken(host, staging, errno)?;
                state = host.mounter.inspect(staging)?;
            }
            PathState::Present(info) if info.mount_root => {
                // umount syncs the filesystem; then the device's own buffers are pushed out
                // and its cache dropped before the controller detaches it.
                let done = host.node.unmount_staged(&paths)?;
                if let (Some(device), Err(e)) = (&done.device, done.flushed) {
                    match e {
                        HostError::NotFound { .. } => {}
                        // The disk went away under the mount (detached, its loop device
                        // cleared): nothing is left to flush it to, and the unmount is done.
                        e if gone(host, device) => {
                            tracing::warn!(device = %device.display(), error = %e, "the unstaged volume's device is gone; not flushed");
                        }
                        e => return Err(e.into()),
                    }
                }
                state = done.after;
            }
            // Only once no filesystem is mounted on it is this the CO's directory, so only
            // now can `<staging>/block` be ours rather than a file inside the volume.
            PathState::Present(info) if info.kind == FileKind::Dir => {
                return block::unstage(host, staging)
            }
            // Not a directory: nothing this driver stages looks like that; leave it alone.
            PathState::Present(_) => return Ok(()),
        }
    }
    Err(NodeRefusal::TooManyMounts {
        path: staging.to_path_buf(),
        limit: MAX_STACKED_MOUNTS,
    }
    .into())
}

/// A device node that no longer leads to a disk: missing, or of size 0 (a detached loop
/// device, a removed disk whose node is still there).
fn gone(host: &Host, device: &Path) -> bool {
    !matches!(host.devices.size(device), Ok(n) if n > 0)
}

/// The kubelet dir as given and as the mount table shows it (symlinks resolved).
pub struct KubeletDir {
    given: PathBuf,
    resolved: Option<PathBuf>,
}

impl KubeletDir {
    pub fn of(opts: &NodeOptions) -> Self {
        Self {
            given: opts.kubelet_dir.clone(),
            resolved: opts.kubelet_dir_resolved.clone(),
        }
    }

    /// `path` (given or resolved form) lies inside the kubelet dir.
    pub fn holds(&self, path: &Path) -> bool {
        path.starts_with(&self.given) || self.resolved.as_ref().is_some_and(|r| path.starts_with(r))
    }

    /// `m` is `path` or below it, `path` being a path under the given kubelet dir and `m`
    /// in either form.
    pub fn same_or_below(&self, m: &Path, path: &Path) -> bool {
        let resolved = self
            .resolved
            .as_ref()
            .and_then(|r| path.strip_prefix(&self.given).ok().map(|rest| r.join(rest)));
        m.starts_with(path) || resolved.is_some_and(|p| m.starts_with(p))
    }
}

/// FailedPrecondition when what is staged at `staging` (the filesystem, or the device bound
/// onto `<staging>/block`) is also mounted at another path under `kubelet_dir` (`sharing`:
/// the other mount points the look found). A broken staging mount is not checked: nothing
/// can be learnt through it, and cleaning it is safe.
fn refuse_if_in_use(staging: &Path, kubelet: &KubeletDir, sharing: Vec<PathBuf>) -> Result<()> {
    let users: Vec<PathBuf> = sharing
        .into_iter()
        .filter(|m| kubelet.holds(m) && !kubelet.same_or_below(m, staging))
        .collect();
    if users.is_empty() {
        return Ok(());
    }
    Err(NodeRefusal::StillMounted {
        staging: staging.to_path_buf(),
        at: users,
    }
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_of_a_symlinked_kubelet_dir_count() {
        let k = KubeletDir {
            given: "/var/lib/kubelet".into(),
            resolved: Some("/data/kubelet".into()),
        };
        let staging = Path::new("/var/lib/kubelet/plugins/x/globalmount");
        assert!(k.holds(Path::new("/var/lib/kubelet/pods/p/mount")));
        assert!(k.holds(Path::new("/data/kubelet/pods/p/mount")));
        assert!(!k.holds(Path::new("/mnt/elsewhere")));
        assert!(k.same_or_below(Path::new("/data/kubelet/plugins/x/globalmount"), staging));
        assert!(k.same_or_below(
            Path::new("/var/lib/kubelet/plugins/x/globalmount/block"),
            staging
        ));
        assert!(!k.same_or_below(Path::new("/data/kubelet/pods/p/mount"), staging));
        let plain = KubeletDir {
            given: "/var/lib/kubelet".into(),
            resolved: None,
        };
        assert!(!plain.holds(Path::new("/data/kubelet/pods/p/mount")));
    }
}
