//! Checks of caller input that Cinder or the node would otherwise refuse later, or worse,
//! accept: names Cinder cannot store, filesystems no node can make, sizes beyond Cinder's
//! column. Each runs before any cloud call, so a refused request changes nothing, and its
//! message says what to send instead.

use std::collections::BTreeSet;

use super::params::{VolumeParams, MKFS_OPTIONS_KEY};
use crate::cloud::Resource;
use crate::driver::node::params::DEFAULT_FS;
use crate::driver::types::{AccessType, VolumeCapability};
use crate::driver::{Invalid, ParamClass, Range, Result, Unsupported};
use crate::host::fs::mkfs_args;
use crate::host::FsKind;

/// Cinder's `name` columns (volumes, snapshots, backups) are `String(255)`.
pub const MAX_NAME_BYTES: usize = 255;

/// Cinder's largest size: its API schema caps `size` at the database's `DB_MAX_INT`
/// (2³¹−1 GiB, about 2 EiB).
pub const MAX_VOLUME_GIB: u64 = i32::MAX as u64;

/// A CSI `name` (CreateVolume, CreateSnapshot) Cinder can store and show: at most 255 bytes,
/// none of the control characters the CSI spec bans in strings (U+0000–U+0008, U+000B,
/// U+000C, U+000E–U+001F, U+007F–U+009F); tab, LF and CR are allowed, as the spec says.
pub fn name(what: Resource, raw: &str) -> Result<()> {
    if raw.len() > MAX_NAME_BYTES {
        return Err(Invalid::NameTooLong {
            what,
            len: raw.len(),
            max: MAX_NAME_BYTES,
        }
        .into());
    }
    if let Some(c) = raw.chars().find(|c| banned_in_names(*c)) {
        return Err(Invalid::NameControlChar {
            what,
            name: raw.to_string(),
            found: c,
        }
        .into());
    }
    Ok(())
}

/// CSI: names "SHALL NOT contain" U+0000–U+0008, U+000B, U+000C, U+000E–U+001F and
/// U+007F–U+009F; the other control characters (TAB, LF, CR) are allowed.
fn banned_in_names(c: char) -> bool {
    c.is_control() && !matches!(c, '\t' | '\n' | '\r')
}

/// Why a capability's `fs_type` cannot be served (no node can make that filesystem), or
/// `None`. Spelled as the node reads it: case-insensitive, surrounding blanks ignored.
pub fn unsupported_fs_type(cap: &VolumeCapability) -> Option<Unsupported> {
    let AccessType::Mount {
        fs_type: Some(fs), ..
    } = &cap.access_type
    else {
        return None;
    };
    if FsKind::parse(&fs.trim().to_ascii_lowercase()).is_some() {
        return None;
    }
    Some(Unsupported::FsType {
        fs_type: fs.clone(),
    })
}

/// Every capability's `fs_type` is supported (CreateVolume: InvalidArgument otherwise).
pub fn fs_types(caps: &[VolumeCapability]) -> Result<()> {
    match caps.iter().find_map(unsupported_fs_type) {
        Some(why) => Err(Invalid::Capability(why).into()),
        None => Ok(()),
    }
}

/// StorageClass `mkfsOptions`, split as upstream splits them and checked against the mkfs of
/// each filesystem the capabilities ask for (the node's default when they name none), so a
/// bad one is InvalidArgument before anything is created. Block capabilities format nothing.
pub fn mkfs_options(params: &VolumeParams, caps: &[VolumeCapability]) -> Result<()> {
    let Some(raw) = params.format.get(MKFS_OPTIONS_KEY) else {
        return Ok(());
    };
    let args = mkfs_args::split(raw);
    for cap in caps {
        let AccessType::Mount { fs_type, .. } = &cap.access_type else {
            continue;
        };
        let fs = match fs_type.as_deref().map(|f| f.trim().to_ascii_lowercase()) {
            Some(f) if !f.is_empty() => FsKind::parse(&f).unwrap_or(DEFAULT_FS),
            _ => DEFAULT_FS,
        };
        mkfs_args::check(fs, &args).map_err(|why| Invalid::MkfsOptions {
            class: ParamClass::StorageClass,
            why,
        })?;
    }
    Ok(())
}

/// A size Cinder can hold (CSI: an unsupported capacity is OUT_OF_RANGE).
pub fn size_gib(gib: u64) -> Result<()> {
    if gib > MAX_VOLUME_GIB {
        return Err(Range::TooLarge { gib }.into());
    }
    Ok(())
}

/// The source volumes, each once, in ascending order (the cloud's group is of a set);
/// checked before any guard is taken, so a volume named twice is InvalidArgument, not Busy.
pub fn source_volumes(ids: &[String]) -> Result<Vec<String>> {
    if ids.is_empty() {
        return Err(Invalid::Required {
            field: "source_volume_ids",
        }
        .into());
    }
    let mut seen = BTreeSet::new();
    for id in ids {
        if id.is_empty() {
            return Err(Invalid::Required {
                field: "source_volume_ids",
            }
            .into());
        }
        if !seen.insert(id.clone()) {
            return Err(Invalid::DuplicateSourceVolume { id: id.clone() }.into());
        }
    }
    Ok(seen.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::types::AccessMode;
    use crate::driver::Error;

    fn mount(fs: Option<&str>) -> VolumeCapability {
        VolumeCapability {
            access_type: AccessType::Mount {
                fs_type: fs.map(str::to_string),
                mount_flags: vec![],
                volume_mount_group: None,
            },
            access_mode: AccessMode::SingleNodeWriter,
        }
    }

    #[test]
    fn names_cinder_can_store() {
        assert!(name(Resource::Volume, "pvc-0d1e").is_ok());
        assert!(name(Resource::Volume, &"a".repeat(255)).is_ok());
        // CSI allows TAB, LF and CR in names.
        for ok in ["tab\there", "line\nbreak", "cr\rlf\n", "nbsp\u{a0}"] {
            assert!(name(Resource::Volume, ok).is_ok(), "{ok:?}");
        }
        // 255 bytes, not characters: "é" is two.
        assert!(name(Resource::Volume, &"é".repeat(128)).is_err());
        for bad in [
            "a".repeat(256),
            "a".repeat(10 * 1024),
            "a\0b".into(),
            "bs\u{8}".into(),
            "vt\u{b}".into(),
            "ff\u{c}".into(),
            "so\u{e}".into(),
            "us\u{1f}".into(),
            "del\u{7f}".into(),
            "apc\u{9f}".into(),
        ] {
            let e = name(Resource::Snapshot, &bad).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::Invalid(Invalid::NameTooLong { .. } | Invalid::NameControlChar { .. })
                ),
                "{bad:?}"
            );
            assert!(e.to_string().starts_with("snapshot name"), "{e}");
        }
    }

    #[test]
    fn filesystems_the_node_supports() {
        for ok in [
            None,
            Some("ext4"),
            Some("XFS"),
            Some(" btrfs "),
            Some("ext2"),
        ] {
            assert_eq!(unsupported_fs_type(&mount(ok)), None, "{ok:?}");
        }
        for bad in ["notafs", "../../bin/sh", "ext4; touch X", "vfat", "ext4 "] {
            let cap = mount(Some(bad));
            if bad.trim() == "ext4" {
                assert_eq!(unsupported_fs_type(&cap), None);
                continue;
            }
            let why = unsupported_fs_type(&cap).expect(bad);
            assert_eq!(
                why,
                Unsupported::FsType {
                    fs_type: bad.into()
                }
            );
            assert!(why.to_string().contains("ext4, xfs, btrfs"), "{why}");
            assert!(matches!(
                fs_types(&[mount(None), cap]),
                Err(Error::Invalid(Invalid::Capability(_)))
            ));
        }
        let block = VolumeCapability {
            access_type: AccessType::Block,
            access_mode: AccessMode::SingleNodeWriter,
        };
        assert_eq!(unsupported_fs_type(&block), None);
    }

    #[test]
    fn sizes_beyond_cinder_are_out_of_range() {
        assert!(size_gib(1).is_ok());
        assert!(size_gib(MAX_VOLUME_GIB).is_ok());
        assert!(matches!(
            size_gib(MAX_VOLUME_GIB + 1),
            Err(Error::OutOfRange(_))
        ));
        // 4 EiB.
        assert!(matches!(size_gib(4 << 30), Err(Error::OutOfRange(_))));
    }
}
