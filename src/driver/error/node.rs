//! What is at the node's paths and devices does not allow a valid request
//! (FailedPrecondition), and why a volume is not at a path (NotFound). Data only; worded in
//! `csi::status`. Errnos are kept as numbers and worded there too.

use std::path::PathBuf;

use crate::host::{Content, DevId, FsKind};

/// Which of a request's paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathRole {
    Staging,
    Target,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeRefusal {
    NotBlockDevice {
        path: PathBuf,
    },
    /// Another `device` is staged at `staging` for block access.
    StagingHoldsDevice {
        staging: PathBuf,
        device: DevId,
        id: String,
    },
    /// Another device's filesystem is mounted at `staging`; `device` the volume's own, when
    /// the message should name it.
    StagingHoldsOther {
        staging: PathBuf,
        id: String,
        device: Option<PathBuf>,
    },
    /// Another `device` is bound onto `file` inside `staging`.
    StagingHoldsOtherAt {
        staging: PathBuf,
        device: DevId,
        file: PathBuf,
        id: String,
    },
    NotDirectory {
        role: PathRole,
        path: PathBuf,
    },
    NotRegularFile {
        path: PathBuf,
    },
    /// Something at `<staging>/block` the device cannot be bound onto.
    CannotBindOnto {
        path: PathBuf,
    },
    /// Something at `<staging>/block` this driver did not create.
    NotOurFile {
        path: PathBuf,
    },
    TooManyMounts {
        path: PathBuf,
        limit: usize,
    },
    /// Still a broken mount (`errno`) after one was unmounted.
    StillBroken {
        path: PathBuf,
        errno: i32,
    },
    /// A broken mount (`errno`) at a target; unpublish cleans it.
    BrokenMount {
        path: PathBuf,
        errno: i32,
    },
    /// A blank volume and a read-only access mode: nothing to mount, no format allowed.
    BlankReadOnly {
        id: String,
    },
    MissingTools {
        id: String,
        fs: FsKind,
        tools: Vec<String>,
    },
    /// The device holds `content` that is not ours to format or mount.
    DeviceHoldsData {
        device: PathBuf,
        id: String,
        content: Content,
    },
    /// The filesystem still fails (`errno`) after a fresh mount.
    BrokenAfterMount {
        id: String,
        errno: i32,
    },
    /// Unstage while the staged volume is still mounted at the paths `at`.
    StillMounted {
        staging: PathBuf,
        at: Vec<PathBuf>,
    },
    /// NodePublishVolume without staging_target_path (the plugin stages volumes).
    NoStagingPath,
    NotStaged {
        id: String,
        staging: PathBuf,
        block: bool,
    },
    TargetHoldsOther {
        target: PathBuf,
    },
    /// SINGLE_NODE_SINGLE_WRITER already published at the paths `at`.
    SingleWriterElsewhere {
        id: String,
        at: Vec<PathBuf>,
        target: PathBuf,
    },
    /// `staging` holds device `staged`, not the volume's `disk` (`device`).
    StagedOtherDevice {
        staging: PathBuf,
        staged: DevId,
        id: String,
        disk: DevId,
        device: PathBuf,
    },
    BrokenCannotGrow {
        path: PathBuf,
        errno: i32,
    },
    /// The device mounted at `path` holds `content`, no filesystem that can grow.
    NothingToGrow {
        device: PathBuf,
        path: PathBuf,
        content: Content,
    },
}

/// Why volume `id` is not at a path (NodeGetVolumeStats, NodeExpandVolume: NotFound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotAtPath {
    /// The mount there is `found`; the volume's disk is `device` (`disk`).
    OtherDevice {
        found: DevId,
        device: PathBuf,
        disk: DevId,
    },
    NothingMounted,
    /// Volumes are only under the kubelet dir.
    OutsideKubelet {
        kubelet_dir: PathBuf,
    },
}
