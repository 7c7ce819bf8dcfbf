//! What is wrong with a request (InvalidArgument, OutOfRange), as data: the field, key, value
//! or path at fault. Worded in `csi::status`.

use std::path::PathBuf;

use crate::cloud::Resource;
use crate::driver::types::{AccessMode, CapacityRange};
use crate::host::fs::mkfs_args::MkfsArgError;
use crate::host::FsKind;

/// Where a parameter comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamClass {
    StorageClass,
    VolumeSnapshotClass,
    VolumeAttributesClass,
    VolumeGroupSnapshotClass,
    /// A volume's `volume_context` (written by the controller, read by the node).
    VolumeContext,
}

/// A malformed request: the status says which field and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// A required field is empty or absent.
    Required {
        field: &'static str,
    },
    NoAccessType,
    NoAccessMode,
    UnknownAccessMode {
        mode: i32,
    },
    NoCapabilities,
    NegativeCapacity,
    /// ControllerExpandVolume without `capacity_range.required_bytes`.
    NoExpandSize,
    /// `volume_content_source` names neither a snapshot nor a volume.
    EmptyContentSource,
    NegativeMaxEntries {
        n: i32,
    },
    /// No `cloud` secret and no default cloud; `known` the configured names.
    NoDefaultCloud {
        known: Vec<String>,
    },
    UnknownCloud {
        name: String,
        known: Vec<String>,
    },
    /// A CSI name Cinder cannot store: longer than `max` bytes …
    NameTooLong {
        what: Resource,
        len: usize,
        max: usize,
    },
    /// … or holding a control character.
    NameControlChar {
        what: Resource,
        name: String,
        found: char,
    },
    /// A capability no volume can serve (CreateVolume).
    Capability(Unsupported),
    /// A capability existing volume `id` cannot serve (publish, expand).
    VolumeCapability {
        id: String,
        why: Unsupported,
    },
    /// Volume type `name` (a `type` parameter) does not exist in Cinder.
    UnknownVolumeType {
        name: String,
    },
    /// Cinder refused to create a volume of the `type` from `class`: no such type.
    TypeParamUnknown {
        class: ParamClass,
        name: String,
    },
    /// ControllerPublishVolume with `readonly` (no PUBLISH_READONLY capability).
    ReadOnlyPublish,
    UnknownParameters {
        class: ParamClass,
        keys: Vec<String>,
        accepted: &'static str,
    },
    /// `appendVolumeMetadata` (of a StorageClass or a VolumeAttributesClass) is not a JSON
    /// object of string pairs Cinder takes; `key` the pair at fault, if one is.
    AppendVolumeMetadata {
        class: ParamClass,
        key: Option<String>,
        problem: String,
    },
    /// Two spellings (keys are case-insensitive) of one parameter.
    ParameterTwice {
        key: String,
    },
    /// Two spellings of one format option; `key` its canonical name.
    FormatOptionTwice {
        key: &'static str,
    },
    NotPositive {
        class: ParamClass,
        key: String,
        value: String,
    },
    /// The in-tree `fstype` StorageClass parameter, which CSI drivers never see.
    FsTypeParameter {
        key: String,
    },
    EmptyMutableType,
    NotBoolean {
        key: String,
        value: String,
    },
    UnknownSnapshotType {
        value: String,
    },
    NotSeconds {
        key: String,
        value: String,
    },
    /// A path longer than PATH_MAX, or holding a name longer than NAME_MAX.
    PathTooLong {
        field: &'static str,
        len: usize,
        longest: usize,
    },
    PathNotAbsolute {
        field: &'static str,
        path: PathBuf,
    },
    /// A path with `.` or `..` components (or a NUL).
    PathDots {
        field: &'static str,
        path: PathBuf,
    },
    PathOutsideKubelet {
        field: &'static str,
        path: PathBuf,
        kubelet_dir: PathBuf,
    },
    BadVolumeId {
        id: String,
    },
    /// A multi-node writer mode with a mounted filesystem (the node's own check).
    MountMultiWriter {
        mode: AccessMode,
    },
    MountFlagChars {
        flag: String,
    },
    /// A flag the driver sets itself (bind, remount, propagation, loop).
    MountFlagNotAllowed {
        flag: String,
    },
    MountFlagUnknown {
        flag: String,
        fs: FsKind,
    },
    UnsupportedFsType {
        fs_type: String,
    },
    NotTrueOrFalse {
        key: String,
        value: String,
    },
    /// A format option that must be a power of two within `range`.
    NotPowerOfTwo {
        key: &'static str,
        value: u64,
        range: (u64, u64),
        fs: FsKind,
    },
    FormatOptionNotFor {
        key: &'static str,
        fs: FsKind,
        applies_to: Vec<FsKind>,
    },
    /// `mkfsOptions` holds an argument the filesystem's mkfs must not get.
    MkfsOptions {
        class: ParamClass,
        why: MkfsArgError,
    },
    FormatOptionRange {
        key: &'static str,
        value: u64,
        range: (u64, u64),
    },
    /// NodePublishVolume with target_path equal to staging_target_path.
    SamePaths,
    /// CreateVolumeGroupSnapshot naming volume `id` twice.
    DuplicateSourceVolume {
        id: String,
    },
    /// Group type `name` (VolumeGroupSnapshotClass `group-type` or `[BlockStorage]
    /// group-type`) does not exist in the cloud.
    UnknownGroupType {
        name: String,
    },
    /// The `snapshot_ids` of a group snapshot request are not its members: `not_members`
    /// exist but belong elsewhere, `missing` are members not named.
    GroupMembersMismatch {
        group_snapshot_id: String,
        not_members: Vec<String>,
        missing: Vec<String>,
    },
    /// PVC `claim`'s `annotation` names `entry`, which is not exactly one Cinder volume
    /// (`matches`: the ids of the several it names).
    AffinityVolume {
        claim: String,
        annotation: &'static str,
        entry: String,
        matches: Vec<String>,
    },
}

/// Why a volume capability cannot be served; also ValidateVolumeCapabilities' message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsupported {
    /// No node can make this filesystem.
    FsType { fs_type: String },
    /// A multi-node writer mode needs raw block.
    MultiWriterMount { mode: AccessMode },
    /// A multi-node mode needs a multiattach volume type.
    NoMultiattach { mode: AccessMode },
}

/// A size that cannot be served (OutOfRange).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Range {
    /// Larger than Cinder's largest volume.
    TooLarge { gib: u64 },
    /// The content source alone is `gib`, more than `limit_bytes`.
    SourceOverLimit { gib: u64, limit_bytes: u64 },
    /// Rounded up to whole GiB the size exceeds `limit_bytes`.
    OverLimit { gib: u64, limit_bytes: u64 },
    /// `required_bytes` above `limit_bytes`.
    RequiredOverLimit(CapacityRange),
}
