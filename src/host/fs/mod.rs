//! The filesystems the driver can format, mount and grow: one file each (the ext family
//! shares one), implementing [`FilesystemOps`], and the registry (`FsKind`, kept here beside the `mod` lines so a new filesystem touches two files).
//!
//! Adding a filesystem: write `<name>.rs` with its `FilesystemOps` (signature, mkfs, check,
//! grow, mount options, tools), then register it here: its `mod` line, its [`FsKind`]
//! variant, its place in [`FsKind::ALL`] and its arm in [`FsKind::ops`].

pub mod bytes;
pub mod mkfs_args;
mod ops;

mod btrfs;
mod ext;
mod xfs;

use std::fmt;

pub use ops::{FilesystemOps, FormatLimits, Signature, Tool};

/// Names a registered filesystem (fsType, probe results, mount specs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FsKind {
    Ext2,
    Ext3,
    Ext4,
    Xfs,
    Btrfs,
}

impl FsKind {
    /// Every filesystem, in declaration order (messages and doctor list them so).
    pub const ALL: [FsKind; 5] = [Self::Ext2, Self::Ext3, Self::Ext4, Self::Xfs, Self::Btrfs];

    /// Its implementation.
    pub fn ops(self) -> &'static dyn FilesystemOps {
        match self {
            Self::Ext2 => &ext::EXT2,
            Self::Ext3 => &ext::EXT3,
            Self::Ext4 => &ext::EXT4,
            Self::Xfs => &xfs::XFS,
            Self::Btrfs => &btrfs::BTRFS,
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        self.ops().name()
    }
}

impl fmt::Display for FsKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_covers_every_kind_exactly_once() {
        for (i, kind) in FsKind::ALL.into_iter().enumerate() {
            // In declaration order without gaps: a variant left out of ALL shows here.
            assert_eq!(kind as usize, i, "{kind:?}");
            assert_eq!(FsKind::parse(kind.as_str()), Some(kind));
        }
        let mut names: Vec<&str> = FsKind::ALL.iter().map(|k| k.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FsKind::ALL.len(), "two kinds share a name");
        // Each kind has its own implementation (the ext members are distinct statics).
        let ops: Vec<*const u8> = FsKind::ALL
            .iter()
            .map(|k| k.ops() as *const dyn FilesystemOps as *const u8)
            .collect();
        for (i, a) in ops.iter().enumerate() {
            assert!(
                !ops[i + 1..].contains(a),
                "{:?} shares its ops",
                FsKind::ALL[i]
            );
        }
        assert_eq!(
            names,
            ["btrfs", "ext2", "ext3", "ext4", "xfs"],
            "the fsTypes users know must not change"
        );
    }

    #[test]
    fn every_kind_needs_its_mkfs_and_a_package() {
        for kind in FsKind::ALL {
            let f = kind.ops();
            assert!(
                f.tools().contains(&format!("mkfs.{kind}").as_str()),
                "{kind}"
            );
            assert!(!f.package().is_empty());
            let t = f.mkfs(std::path::Path::new("/dev/x"), &Default::default());
            assert_eq!(t.program, format!("mkfs.{kind}"));
            assert_eq!(t.args.last().map(String::as_str), Some("/dev/x"));
        }
    }

    /// `tools()` is what readiness, doctor and the image check look for: a tool spawned but
    /// not listed would be missing only when a volume needs it.
    #[test]
    fn every_tool_spawned_is_listed() {
        let (dev, mp) = (std::path::Path::new("/dev/x"), std::path::Path::new("/m"));
        for kind in FsKind::ALL {
            let f = kind.ops();
            let mut spawned = vec![f.mkfs(dev, &Default::default()), f.check(dev)];
            spawned.push(f.grow_online(dev, mp));
            spawned.extend(f.grow_offline(dev));
            for t in spawned {
                assert!(
                    f.tools().contains(&t.program),
                    "{kind}: {} not in tools()",
                    t.program
                );
            }
        }
    }
}
