//! An object already exists under the request's name or at its path, but not as the request
//! asks (AlreadyExists). Data only; worded in `csi::status`.

use std::path::PathBuf;

use super::request::Unsupported;
use crate::cloud::CopyKind;
use crate::driver::types::CapacityRange;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// Volume `id` is named `name` but was not created by this driver for `cluster`; `tag`
    /// is its cluster tag (`None`: it has none).
    ForeignVolume {
        name: String,
        id: String,
        cluster: String,
        tag: Option<String>,
    },
    /// Volume `id`, created under `name`, differs from the request.
    Volume {
        name: String,
        id: String,
        diff: VolumeDiff,
    },
    /// A snapshot or backup `name` exists as `id`, of volume `of`, not of `wanted`.
    CopyOfOther {
        kind: CopyKind,
        name: String,
        id: String,
        of: String,
        wanted: String,
    },
    /// Group snapshot `name` exists as `id`, of volumes `of`, not of `wanted`.
    GroupOfOther {
        name: String,
        id: String,
        of: Vec<String>,
        wanted: Vec<String>,
    },
    /// A backup `name` is being taken of volume `of`, not of `wanted`.
    BackupOfOther {
        name: String,
        of: String,
        wanted: String,
    },
    /// Volume `id` is staged at `staging` for block access; mount access was asked.
    StagedForBlock { id: String, staging: PathBuf },
    /// Volume `id` is staged at `staging` with mount access; block access was asked.
    StagedWithMount { id: String, staging: PathBuf },
    /// Volume `id` is published at `target` with the other read-only flag than `read_only`.
    PublishedOtherwise {
        id: String,
        target: PathBuf,
        read_only: bool,
    },
}

/// How an existing volume differs from a CreateVolume request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VolumeDiff {
    Size {
        size_gib: u64,
        capacity: CapacityRange,
    },
    Source,
    Capability(Unsupported),
    Type {
        have: String,
        want: String,
    },
    /// Its `zone` (label form `topology`) is not among the `requisite` zones.
    Zone {
        zone: String,
        topology: String,
        requisite: Vec<String>,
    },
}
