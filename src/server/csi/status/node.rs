//! The words for a node path, mount or device that refuses the request (FailedPrecondition),
//! and for a volume that is not at a path (NotFound).

use std::fmt::{self, Display, Formatter};

use super::words::{errno, joined, paths};
use crate::driver::{NodeRefusal, NotAtPath, PathRole};
use crate::host::Content;

impl Display for PathRole {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Staging => "staging path",
            Self::Target => "target path",
        })
    }
}

/// What a device holds, in a refusal to format or mount it.
fn holds(content: &Content) -> String {
    match content {
        Content::Blank => "no signature".into(),
        Content::Filesystem { kind, .. } => format!("a {kind} filesystem"),
        Content::PartitionTable(t) => format!("a {t} partition table"),
        Content::Other(sig) => format!("{sig} data"),
        Content::Several(found) => format!(
            "more than one signature ({}), so which is current cannot be told",
            joined(found)
        ),
        Content::Unrecognised => "data without a filesystem signature this driver knows".into(),
    }
}

impl Display for NodeRefusal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotBlockDevice { path } => {
                write!(f, "{} is not a block device", path.display())
            }
            Self::StagingHoldsDevice {
                staging,
                device,
                id,
            } => write!(
                f,
                "staging path {} already holds device {device} for block access; volume {id} \
                 was not staged",
                staging.display()
            ),
            Self::StagingHoldsOther {
                staging,
                id,
                device,
            } => {
                let device = device
                    .as_ref()
                    .map(|d| format!(" ({})", d.display()))
                    .unwrap_or_default();
                write!(
                    f,
                    "staging path {} already holds another device; volume {id}{device} was not \
                     staged",
                    staging.display()
                )
            }
            Self::StagingHoldsOtherAt {
                staging,
                device,
                file,
                id,
            } => write!(
                f,
                "staging path {} already holds another device ({device} at {}); volume {id} was \
                 not staged",
                staging.display(),
                file.display()
            ),
            Self::NotDirectory { role, path } => {
                write!(f, "{role} {} exists and is not a directory", path.display())
            }
            Self::NotRegularFile { path } => write!(
                f,
                "target path {} exists and is not a regular file",
                path.display()
            ),
            Self::CannotBindOnto { path } => write!(
                f,
                "{} exists and is not a file this driver can bind the device onto; remove it",
                path.display()
            ),
            Self::NotOurFile { path } => write!(
                f,
                "{} is not a file this driver created; remove it by hand",
                path.display()
            ),
            Self::TooManyMounts { path, limit } => write!(
                f,
                "more than {limit} mounts are stacked at {}; clean them up by hand",
                path.display()
            ),
            Self::StillBroken { path, errno: n } => write!(
                f,
                "{} is still a broken mount ({}) after unmounting one; several are stacked \
                 there: call NodeUnstageVolume to clean them up",
                path.display(),
                errno(*n)
            ),
            Self::BrokenMount { path, errno: n } => write!(
                f,
                "{} is a broken mount ({}); call NodeUnpublishVolume to clean it up",
                path.display(),
                errno(*n)
            ),
            Self::BlankReadOnly { id } => write!(
                f,
                "volume {id} is blank and its access mode is read-only: there is no filesystem \
                 to mount and formatting would write to it"
            ),
            Self::MissingTools { id, fs, tools } => write!(
                f,
                "cannot format volume {id} as {fs}: {} not installed on this node",
                joined(tools)
            ),
            Self::DeviceHoldsData {
                device,
                id,
                content,
            } => write!(
                f,
                "device {} of volume {id} holds {}; refusing to format or mount it (wipe it \
                 deliberately if it is really unused)",
                device.display(),
                holds(content)
            ),
            Self::BrokenAfterMount { id, errno: n } => write!(
                f,
                "the filesystem of volume {id} still fails after a fresh mount ({}); a mount of \
                 it elsewhere (a pod's bind) may hold the broken instance: unpublish it first",
                errno(*n)
            ),
            Self::StillMounted { staging, at } => write!(
                f,
                "the volume staged at {} is still mounted at {}; call NodeUnpublishVolume for \
                 it first (nothing was unmounted)",
                staging.display(),
                paths(at)
            ),
            Self::NoStagingPath => f.write_str(
                "staging_target_path is required: this plugin stages volumes \
                 (STAGE_UNSTAGE_VOLUME); call NodeStageVolume first and pass its path",
            ),
            Self::NotStaged { id, staging, block } => write!(
                f,
                "volume {id} is not staged at {}{}; call NodeStageVolume first",
                staging.display(),
                if *block { " for block access" } else { "" }
            ),
            Self::TargetHoldsOther { target } => write!(
                f,
                "target path {} already holds another mount; unpublish it first",
                target.display()
            ),
            Self::SingleWriterElsewhere { id, at, target } => write!(
                f,
                "volume {id} has access mode SINGLE_NODE_SINGLE_WRITER and is already \
                 published at {}; unpublish it there before publishing it at {}",
                paths(at),
                target.display()
            ),
            Self::StagedOtherDevice {
                staging,
                staged,
                id,
                disk,
                device,
            } => write!(
                f,
                "staging path {} holds device {staged}, not volume {id}'s disk {disk} ({})",
                staging.display(),
                device.display()
            ),
            Self::BrokenCannotGrow { path, errno: n } => write!(
                f,
                "the mount at {} does not answer ({}); it cannot be grown",
                path.display(),
                errno(*n)
            ),
            Self::NothingToGrow {
                device,
                path,
                content,
            } => write!(
                f,
                "device {} mounted at {} holds no filesystem this driver can grow ({content:?})",
                device.display(),
                path.display()
            ),
        }
    }
}

impl Display for NotAtPath {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Self::OtherDevice {
                found,
                device,
                disk,
            } => write!(
                f,
                "it holds device {found}, and the volume's disk is {} ({disk})",
                device.display()
            ),
            Self::NothingMounted => f.write_str("nothing is mounted there"),
            Self::OutsideKubelet { kubelet_dir } => write!(
                f,
                "volumes are staged and published only at absolute paths under the kubelet \
                 directory {}",
                kubelet_dir.display()
            ),
        }
    }
}
