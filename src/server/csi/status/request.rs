//! The words for a malformed request (InvalidArgument) and a size out of range: each names
//! the field, key or path at fault and says what to send instead.

use std::fmt::{self, Display, Formatter};

use super::words::{joined, plural, quoted, quoted_path};
use crate::cloud::GIB;
use crate::driver::controller::params::SIDECAR_PREFIX;
use crate::driver::controller::validate::MAX_VOLUME_GIB;
use crate::driver::node::params::{DEFAULT_FS, NAME_MAX, PATH_MAX};
use crate::driver::{Invalid, ParamClass, Range, Unsupported};
use crate::host::FsKind;

impl Display for ParamClass {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::StorageClass => "StorageClass",
            Self::VolumeSnapshotClass => "VolumeSnapshotClass",
            Self::VolumeAttributesClass => "VolumeAttributesClass",
            Self::VolumeGroupSnapshotClass => "VolumeGroupSnapshotClass",
            Self::VolumeContext => "volume_context",
        })
    }
}

/// "ext4 (default), ext2, ext3, xfs or btrfs": what the node formats, the default first.
fn node_filesystems() -> String {
    let others: Vec<&str> = FsKind::ALL
        .into_iter()
        .filter(|&k| k != DEFAULT_FS)
        .map(FsKind::as_str)
        .collect();
    match others.split_last() {
        Some((last, rest)) if !rest.is_empty() => {
            format!("{DEFAULT_FS} (default), {} or {last}", rest.join(", "))
        }
        Some((last, _)) => format!("{DEFAULT_FS} (default) or {last}"),
        None => format!("{DEFAULT_FS}"),
    }
}

impl Display for Invalid {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Self::Required { field } => write!(f, "{field} is required"),
            Self::NoAccessType => {
                f.write_str("volume capability access_type is missing; set block or mount")
            }
            Self::NoAccessMode => f.write_str("volume capability access_mode is missing"),
            Self::UnknownAccessMode { mode } => write!(
                f,
                "volume capability access_mode {mode} is unknown; set one of the CSI access modes"
            ),
            Self::NoCapabilities => {
                f.write_str("volume_capabilities is empty; at least one is required")
            }
            Self::NegativeCapacity => f.write_str("capacity_range bytes must not be negative"),
            Self::NoExpandSize => {
                f.write_str("capacity_range.required_bytes is required: the size to expand to")
            }
            Self::EmptyContentSource => f.write_str(
                "volume_content_source is set but names neither a snapshot nor a volume",
            ),
            Self::NegativeMaxEntries { n } => write!(
                f,
                "max_entries {n} is negative; use 0 for no limit or a positive page size"
            ),
            Self::NoDefaultCloud { known } => write!(
                f,
                "the request has no \"cloud\" secret and no default cloud ([Global]) is \
                 configured; set the secret to one of {}",
                quoted(known)
            ),
            Self::UnknownCloud { name, known } => write!(
                f,
                "secret \"cloud\" = {name:?} names no configured cloud; configured: {}",
                quoted(known)
            ),
            Self::NameTooLong { what, len, max } => write!(
                f,
                "{what} name is {len} bytes long; Cinder stores at most {max}: use a shorter name"
            ),
            Self::NameControlChar { what, name, found } => write!(
                f,
                "{what} name {name:?} contains the control character {found:?}, which CSI bans \
                 in names; use printable characters (tab, LF and CR are allowed)"
            ),
            Self::Capability(why) => write!(f, "{why}"),
            Self::VolumeCapability { id, why } => write!(f, "volume {id}: {why}"),
            Self::UnknownVolumeType { name } => write!(
                f,
                "volume type {name:?} does not exist in Cinder; fix the \"type\" parameter"
            ),
            Self::TypeParamUnknown { class, name } => write!(
                f,
                "{class} parameter \"type\" names volume type {name:?}, which does not exist"
            ),
            Self::ReadOnlyPublish => f.write_str(
                "readonly publish is not supported (no PUBLISH_READONLY capability): Nova \
                 attachments are read-write; the node mounts read-only from \
                 NodePublishVolume's readonly flag",
            ),
            Self::UnknownParameters {
                class,
                keys,
                accepted,
            } => write!(
                f,
                "unknown {class} parameter{} {}; accepted keys: {accepted} (and any under \
                 {SIDECAR_PREFIX})",
                plural(keys.len()),
                quoted(keys)
            ),
            Self::AppendVolumeMetadata {
                class,
                key: Some(key),
                problem,
            } => write!(f, "{class} appendVolumeMetadata: key {key:?} {problem}"),
            Self::AppendVolumeMetadata {
                class,
                key: None,
                problem,
            } => write!(f, "{class} appendVolumeMetadata {problem}"),
            Self::ParameterTwice { key } => write!(
                f,
                "parameter {key:?} is given twice (keys are case-insensitive); keep one"
            ),
            Self::FormatOptionTwice { key } => {
                write!(f, "StorageClass parameter {key} is given twice")
            }
            Self::NotPositive { class, key, value } => {
                let what = match class {
                    ParamClass::VolumeContext => "",
                    _ => " parameter",
                };
                write!(
                    f,
                    "{class}{what} {key}={value:?} must be a positive whole number"
                )
            }
            Self::FsTypeParameter { key } => write!(
                f,
                "StorageClass parameter {key:?} is not read by CSI drivers; use \
                 csi.storage.k8s.io/fstype (in-tree migration rewrites it that way)"
            ),
            Self::EmptyMutableType => {
                f.write_str("mutable parameter \"type\" is empty; name a Cinder volume type")
            }
            Self::NotBoolean { key, value } => write!(
                f,
                "parameter {key:?} = {value:?} is not a boolean; use true or false"
            ),
            Self::UnknownSnapshotType { value } => write!(
                f,
                "VolumeSnapshotClass parameter \"type\" = {value:?} is not supported; use \
                 \"snapshot\" or \"backup\""
            ),
            Self::NotSeconds { key, value } => write!(
                f,
                "parameter {key:?} = {value:?} is not a whole number of seconds"
            ),
            Self::PathTooLong {
                field,
                len,
                longest,
            } => write!(
                f,
                "{field} is {len} bytes long with a name of {longest} bytes: Linux paths are at \
                 most {PATH_MAX} bytes and each name in them at most {NAME_MAX}; use a shorter \
                 path"
            ),
            Self::PathNotAbsolute { field, path } => {
                write!(f, "{field} {} must be an absolute path", quoted_path(path))
            }
            Self::PathDots { field, path } => write!(
                f,
                "{field} {} must not contain `.` or `..` components",
                quoted_path(path)
            ),
            Self::PathOutsideKubelet {
                field,
                path,
                kubelet_dir,
            } => write!(
                f,
                "{field} {} is outside the kubelet directory {}; set --kubelet-dir if kubelet \
                 runs with a different root",
                quoted_path(path),
                kubelet_dir.display()
            ),
            Self::BadVolumeId { id } => write!(
                f,
                "volume_id {id:?} is not a valid Cinder volume id (no `/` or control \
                 characters, at most 255 bytes)"
            ),
            Self::MountMultiWriter { mode } => write!(
                f,
                "access mode {} cannot be used with a mounted filesystem: ext4/xfs/btrfs must \
                 be written by one node only; use block access for multi-attach",
                mode.as_str()
            ),
            Self::MountFlagChars { flag } => write!(
                f,
                "mount flag {flag:?} in volume_capability.mount.mount_flags contains \
                 whitespace or control characters; give each option as key or key=value"
            ),
            Self::MountFlagNotAllowed { flag } => write!(
                f,
                "mount flag {flag:?} is not allowed in volume_capability.mount.mount_flags: \
                 binds, moves, remounts, propagation and loop setup are done by the driver \
                 itself; remove it from the StorageClass or PV mountOptions"
            ),
            Self::MountFlagUnknown { flag, fs } => write!(
                f,
                "mount flag {flag:?} in volume_capability.mount.mount_flags is not a mount \
                 option of {fs} (see mount(8) and {fs}'s own options) nor an SELinux context \
                 option; fix or remove it in the StorageClass or PV mountOptions"
            ),
            Self::UnsupportedFsType { fs_type } => write!(
                f,
                "fsType {fs_type:?} is not supported; use {}",
                node_filesystems()
            ),
            Self::NotTrueOrFalse { key, value } => write!(
                f,
                "volume_context {key}={value:?} must be \"true\" or \"false\""
            ),
            Self::NotPowerOfTwo {
                key,
                value,
                range: (lo, hi),
                fs,
            } => write!(
                f,
                "volume_context {key}={value} is invalid for {fs}: use a power of two from {lo} \
                 to {hi}"
            ),
            Self::MkfsOptions { class, why } => write!(f, "{class} {why}"),
            Self::FormatOptionNotFor {
                key,
                fs,
                applies_to,
            } => {
                let names: Vec<&str> = applies_to.iter().map(|k| k.as_str()).collect();
                write!(
                    f,
                    "volume_context {key} is not supported for {fs}; it applies to {} only",
                    names.join("/")
                )
            }
            Self::FormatOptionRange {
                key,
                value,
                range: (lo, hi),
            } => write!(
                f,
                "volume_context {key}={value} is invalid: use {lo} to {hi}"
            ),
            Self::SamePaths => f.write_str("target_path and staging_target_path must differ"),
            Self::DuplicateSourceVolume { id } => write!(
                f,
                "source_volume_ids names volume {id} more than once; name each volume once"
            ),
            Self::UnknownGroupType { name } => write!(
                f,
                "group type {name:?} does not exist in Cinder; fix the VolumeGroupSnapshotClass \
                 parameter \"group-type\" (or [BlockStorage] group-type)"
            ),
            Self::GroupMembersMismatch {
                group_snapshot_id,
                not_members,
                missing,
            } => {
                write!(
                    f,
                    "snapshot_ids do not match the members of group snapshot {group_snapshot_id}"
                )?;
                if !not_members.is_empty() {
                    write!(f, "; not members: {}", joined(not_members))?;
                }
                if !missing.is_empty() {
                    write!(f, "; members not named: {}", joined(missing))?;
                }
                Ok(())
            }
            Self::AffinityVolume {
                claim,
                annotation,
                entry,
                matches,
            } if matches.is_empty() => write!(
                f,
                "PVC {claim} annotation {annotation} names {entry:?}, which is no Cinder volume \
                 (neither a volume UUID nor a volume name); list existing volumes by name or \
                 UUID, comma-separated"
            ),
            Self::AffinityVolume {
                claim,
                annotation,
                entry,
                matches,
            } => write!(
                f,
                "PVC {claim} annotation {annotation} names {entry:?}, which is the name of {} \
                 Cinder volumes ({}); name the one meant by its UUID",
                matches.len(),
                joined(matches)
            ),
        }
    }
}

impl Display for Unsupported {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Self::FsType { fs_type } => write!(
                f,
                "volume capability fs_type {fs_type:?} is not a filesystem this driver \
                 supports; use one of {} (empty means ext4)",
                joined(&FsKind::ALL)
            ),
            Self::MultiWriterMount { mode } => write!(
                f,
                "access mode {} needs volumeMode: Block; a filesystem mounted on several nodes \
                 while one writes is corrupted (use ReadWriteOnce for a filesystem, or \
                 ReadOnlyMany to share it read-only)",
                mode.as_str()
            ),
            Self::NoMultiattach { mode } => write!(
                f,
                "access mode {} needs a Cinder volume type with multiattach (extra spec \
                 multiattach=\"<is> True\"); set the StorageClass parameter \"type\" to such a \
                 type",
                mode.as_str()
            ),
        }
    }
}

impl Display for Range {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { gib } => write!(
                f,
                "{gib} GiB is larger than Cinder's largest volume ({MAX_VOLUME_GIB} GiB, {} \
                 bytes); ask for less",
                MAX_VOLUME_GIB * GIB
            ),
            Self::SourceOverLimit { gib, limit_bytes } => write!(
                f,
                "the source is {gib} GiB, larger than capacity_range limit_bytes {limit_bytes}"
            ),
            Self::OverLimit { gib, limit_bytes } => write!(
                f,
                "Cinder sizes are whole GiB: {gib} GiB exceeds capacity_range limit_bytes \
                 {limit_bytes}; raise the limit to at least {}",
                gib.saturating_mul(GIB)
            ),
            Self::RequiredOverLimit(r) => write!(
                f,
                "capacity_range required_bytes {} exceeds limit_bytes {}",
                r.required_bytes, r.limit_bytes
            ),
        }
    }
}
