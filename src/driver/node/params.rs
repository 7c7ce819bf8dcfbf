//! Typed parameters at the edge of the node core: paths inside the kubelet dir, the
//! filesystem to use, mkfs options and flags from volume_context. Everything past here is
//! validated; bad input is InvalidArgument naming the field and how to fix it.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use crate::driver::types::{AccessMode, AccessType, VolumeCapability};
use crate::driver::{Error, Invalid, NotAtPath, ParamClass, Result};
use crate::host::fs::mkfs_args::{self, MkfsArgError};
use crate::host::fs::FormatLimits;
use crate::host::options::{self, OptionKind};
use crate::host::{FormatOptions, FsKind};

/// volume_context key set by the controller when a volume restored from a smaller snapshot
/// or source must have its filesystem grown at stage time.
pub const RESIZE_REQUIRED: &str = "cinder.csi.openstack.org/resizeRequired";
pub const BLOCK_SIZE: &str = "blockSize";
pub const INODE_SIZE: &str = "inodeSize";
pub const BYTES_PER_INODE: &str = "bytesPerInode";
pub const NUMBER_OF_INODES: &str = "numberOfInodes";
/// StorageClass `mkfsOptions` (upstream PR #3084), in the volume context under the same key
/// as upstream's, so volumes upstream provisioned stage here too.
pub const MKFS_OPTIONS: &str = "mkfsOptions";

pub const DEFAULT_FS: FsKind = FsKind::Ext4;

/// Linux's limits: PATH_MAX (with its NUL) and NAME_MAX.
pub const PATH_MAX: usize = 4095;
pub const NAME_MAX: usize = 255;

/// A path the CO gave us: absolute, inside the kubelet dir, with no `.`/`..` components,
/// within Linux's length limits. (That it leads through no symlink is checked where it is
/// used: the host resolves it beneath the kubelet dir.)
pub fn kubelet_path(field: &'static str, raw: &str, kubelet_dir: &Path) -> Result<PathBuf> {
    if raw.is_empty() {
        return Err(Invalid::Required { field }.into());
    }
    let longest = raw.split('/').map(str::len).max().unwrap_or(0);
    if raw.len() > PATH_MAX || longest > NAME_MAX {
        return Err(Invalid::PathTooLong {
            field,
            len: raw.len(),
            longest,
        }
        .into());
    }
    let path = PathBuf::from(raw);
    if !path.is_absolute() {
        return Err(Invalid::PathNotAbsolute { field, path }.into());
    }
    if raw.contains('\0')
        || path
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        return Err(Invalid::PathDots { field, path }.into());
    }
    if !path.starts_with(kubelet_dir) || path == kubelet_dir {
        return Err(Invalid::PathOutsideKubelet {
            field,
            path,
            kubelet_dir: kubelet_dir.to_path_buf(),
        }
        .into());
    }
    Ok(path)
}

/// The volume_path of NodeGetVolumeStats / NodeExpandVolume. A path where no volume of this
/// driver can be (relative, or outside the kubelet dir) is NotFound, the spec's code for "the
/// volume does not exist on volume_path" (csi-sanity sends `some/path`); a malformed one is
/// still InvalidArgument.
pub fn volume_path(
    volume_id: &str,
    field: &'static str,
    raw: &str,
    kubelet_dir: &Path,
) -> Result<PathBuf> {
    let path = Path::new(raw);
    if !raw.is_empty() && (!path.is_absolute() || !path.starts_with(kubelet_dir)) {
        return Err(Error::VolumeNotAtPath {
            id: volume_id.to_string(),
            path: path.to_path_buf(),
            why: NotAtPath::OutsideKubelet {
                kubelet_dir: kubelet_dir.to_path_buf(),
            },
        });
    }
    kubelet_path(field, raw, kubelet_dir)
}

/// A volume id usable in device names: non-empty, no `/`, no control characters.
pub fn volume_id(raw: &str) -> Result<String> {
    if raw.is_empty() {
        return Err(Invalid::Required { field: "volume_id" }.into());
    }
    if raw.len() > 255 || raw.chars().any(|c| c == '/' || c.is_control()) {
        return Err(Invalid::BadVolumeId {
            id: raw.to_string(),
        }
        .into());
    }
    Ok(raw.to_string())
}

/// How the volume is used on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    Block,
    Mount { fs: FsKind, flags: Vec<String> },
}

/// The access type, refusing what a single-node filesystem cannot do.
pub fn access(cap: &VolumeCapability) -> Result<Access> {
    match &cap.access_type {
        AccessType::Block => Ok(Access::Block),
        AccessType::Mount {
            fs_type,
            mount_flags,
            ..
        } => {
            if matches!(
                cap.access_mode,
                AccessMode::MultiNodeMultiWriter | AccessMode::MultiNodeSingleWriter
            ) {
                return Err(Invalid::MountMultiWriter {
                    mode: cap.access_mode,
                }
                .into());
            }
            let fs = fs_type_of(fs_type.as_deref())?;
            check_mount_flags(fs, mount_flags)?;
            Ok(Access::Mount {
                fs,
                flags: mount_flags.clone(),
            })
        }
    }
}

/// Every mount flag must be one the driver knows for `fs` (see [`crate::host::options`]),
/// at stage and at publish alike: publish's bind cannot pass filesystem options on, so an
/// unknown one would otherwise be silently ignored there.
pub fn check_mount_flags(fs: FsKind, flags: &[String]) -> Result<()> {
    for f in flags.iter().flat_map(|f| options::split_options(f)) {
        if f.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(Invalid::MountFlagChars {
                flag: f.to_string(),
            }
            .into());
        }
        match options::classify(fs, f) {
            OptionKind::Generic
            | OptionKind::Userspace
            | OptionKind::Security
            | OptionKind::Filesystem => {}
            OptionKind::NotAllowed => {
                return Err(Invalid::MountFlagNotAllowed {
                    flag: f.to_string(),
                }
                .into())
            }
            OptionKind::Unknown => {
                return Err(Invalid::MountFlagUnknown {
                    flag: f.to_string(),
                    fs,
                }
                .into())
            }
        }
    }
    Ok(())
}

/// Whether the capability's mount flags ask for a read-only mount (`ro`, unless a later `rw`
/// undoes it, as mount(8) reads them). Such a volume is treated exactly like one with a
/// read-only access mode: no grow, no journal replay, read-only publish.
pub fn read_only_flag(access: &Access) -> bool {
    let Access::Mount { flags, .. } = access else {
        return false;
    };
    flags
        .iter()
        .rev()
        .flat_map(|f| f.rsplit(','))
        .map(str::trim)
        .find(|f| matches!(*f, "ro" | "rw"))
        == Some("ro")
}

pub fn fs_type_of(fs_type: Option<&str>) -> Result<FsKind> {
    match fs_type {
        None => Ok(DEFAULT_FS),
        Some(s) => FsKind::parse(&s.to_ascii_lowercase()).ok_or_else(|| {
            Invalid::UnsupportedFsType {
                fs_type: s.to_string(),
            }
            .into()
        }),
    }
}

/// What volume_context asks of NodeStage.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StageContext {
    pub resize_required: bool,
    /// Why `mkfsOptions` cannot be given to mkfs, if so: refused only when the disk is blank
    /// and would be formatted, so a volume that already holds a filesystem (e.g. one upstream
    /// formatted with options this driver refuses) still stages.
    pub mkfs_refused: Option<MkfsArgError>,
    pub format: FormatOptions,
}

/// Parse volume_context. Known keys are validated strictly; other keys are ignored, because
/// the context is written by a controller (possibly another version of this driver, or the
/// provisioner's `storage.kubernetes.io/` keys), never typed by a user, and a node must stay
/// able to mount every volume it is given.
pub fn stage_context(ctx: &HashMap<String, String>, fs: Option<FsKind>) -> Result<StageContext> {
    let mut out = StageContext::default();
    for (key, value) in ctx {
        let v = value.trim();
        match key.as_str() {
            RESIZE_REQUIRED | "resizeRequired" => {
                out.resize_required = match v.to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" | "" => false,
                    _ => {
                        return Err(Invalid::NotTrueOrFalse {
                            key: key.clone(),
                            value: value.clone(),
                        }
                        .into())
                    }
                }
            }
            k if k.eq_ignore_ascii_case(BLOCK_SIZE) => {
                out.format.block_size = Some(number(key, v)? as u32);
            }
            k if k.eq_ignore_ascii_case(INODE_SIZE) => {
                out.format.inode_size = Some(number(key, v)? as u32);
            }
            k if k.eq_ignore_ascii_case(BYTES_PER_INODE) => {
                out.format.bytes_per_inode = Some(number(key, v)?);
            }
            k if k.eq_ignore_ascii_case(NUMBER_OF_INODES) => {
                out.format.number_of_inodes = Some(number(key, v)?);
            }
            k if k.eq_ignore_ascii_case(MKFS_OPTIONS) => {
                out.format.extra = mkfs_args::split(v);
            }
            _ => tracing::debug!(key = %key, "volume_context key not used by the node"),
        }
    }
    if let Some(fs) = fs {
        check_format(&out.format, fs)?;
        out.mkfs_refused = mkfs_args::check(fs, &out.format.extra).err();
    }
    Ok(out)
}

fn number(key: &str, v: &str) -> Result<u64> {
    v.parse::<u64>()
        .ok()
        .filter(|&n| n > 0 && n <= u64::from(u32::MAX))
        .ok_or_else(|| {
            Invalid::NotPositive {
                class: ParamClass::VolumeContext,
                key: key.to_string(),
                value: v.to_string(),
            }
            .into()
        })
}

fn pow2_in(key: &'static str, v: u64, lo: u64, hi: u64, fs: FsKind) -> Result<()> {
    if v.is_power_of_two() && (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(Invalid::NotPowerOfTwo {
            key,
            value: v,
            range: (lo, hi),
            fs,
        }
        .into())
    }
}

/// `key` refused for `fs`, naming the filesystems whose limits (`takes`) accept it.
fn not_for(key: &'static str, fs: FsKind, takes: fn(&FormatLimits) -> bool) -> Error {
    Invalid::FormatOptionNotFor {
        key,
        fs,
        applies_to: FsKind::ALL
            .into_iter()
            .filter(|k| takes(&k.ops().format_limits()))
            .collect(),
    }
    .into()
}

/// mkfs options valid for `fs` (its limits come from its mkfs manual page).
pub fn check_format(o: &FormatOptions, fs: FsKind) -> Result<()> {
    let l = fs.ops().format_limits();
    let block = o.block_size.map(u64::from);
    if let Some(b) = block {
        pow2_in(BLOCK_SIZE, b, l.block_size.0, l.block_size.1, fs)?;
    }
    if let Some(i) = o.inode_size.map(u64::from) {
        let Some((lo, hi)) = l.inode_size else {
            return Err(not_for(INODE_SIZE, fs, |l| l.inode_size.is_some()));
        };
        let hi = if l.inode_within_block {
            block.unwrap_or(hi)
        } else {
            hi
        };
        pow2_in(INODE_SIZE, i, lo, hi, fs)?;
    }
    if let Some(n) = o.bytes_per_inode {
        let Some((lo, hi)) = l.bytes_per_inode else {
            return Err(not_for(BYTES_PER_INODE, fs, |l| {
                l.bytes_per_inode.is_some()
            }));
        };
        if !(lo..=hi).contains(&n) {
            return Err(Invalid::FormatOptionRange {
                key: BYTES_PER_INODE,
                value: n,
                range: (lo, hi),
            }
            .into());
        }
    }
    if o.number_of_inodes.is_some() && !l.number_of_inodes {
        return Err(not_for(NUMBER_OF_INODES, fs, |l| l.number_of_inodes));
    }
    Ok(())
}
