//! xfs: xfsprogs, grown online only, a log to keep from replaying, and `nouuid` on every
//! mount.

use std::path::Path;

use super::bytes::{at, be32, be64};
use super::mkfs_args::{flag, MkfsFlag, Takes};
use super::ops::{FilesystemOps, FormatLimits, Signature, Tool};
use crate::host::FormatOptions;

pub struct Xfs;

pub static XFS: Xfs = Xfs;

impl FilesystemOps for Xfs {
    fn name(&self) -> &'static str {
        "xfs"
    }

    fn identify(&self, head: &[u8]) -> Option<Signature> {
        // Block size times data blocks, big-endian, right after the magic.
        at(head, 0, b"XFSB").then(|| Signature::This {
            size_bytes: be32(head, 4).saturating_mul(be64(head, 8)),
        })
    }

    fn tools(&self) -> &'static [&'static str] {
        &["mkfs.xfs", "xfs_repair", "xfs_growfs"]
    }

    fn package(&self) -> &'static str {
        "xfsprogs"
    }

    fn mkfs(&self, device: &Path, o: &FormatOptions) -> Tool {
        // No -f: mkfs.xfs refuses on its own if it sees a signature we missed. -K: no
        // discard of a blank device (nothing to discard, and it costs time by size).
        let mut a: Vec<String> = ["-q", "-K"].map(String::from).into();
        if o.overwrite_interrupted {
            a.push("-f".into());
        }
        if let Some(b) = o.block_size {
            a.extend(["-b".into(), format!("size={b}")]);
        }
        if let Some(i) = o.inode_size {
            a.extend(["-i".into(), format!("size={i}")]);
        }
        a.extend(o.extra.iter().cloned());
        a.push(device.display().to_string());
        Tool::new("mkfs.xfs", a)
    }

    fn mkfs_flags(&self) -> &'static [MkfsFlag] {
        // mkfs.xfs(8). Suboptions that name a device or file are refused.
        const FILES: &[&str] = &["name", "file", "logdev", "rtdev"];
        const FLAGS: &[MkfsFlag] = &[
            flag('b', Takes::Suboptions { refused: FILES }),
            flag('d', Takes::Suboptions { refused: FILES }),
            flag('i', Takes::Suboptions { refused: FILES }),
            flag('l', Takes::Suboptions { refused: FILES }),
            flag('m', Takes::Suboptions { refused: FILES }),
            flag('n', Takes::Suboptions { refused: FILES }),
            flag('r', Takes::Suboptions { refused: FILES }),
            flag('s', Takes::Suboptions { refused: FILES }),
            flag('L', Takes::Value),
            flag('K', Takes::Nothing),
            flag('q', Takes::Nothing),
            flag('c', Takes::Refused("it reads a configuration file of the node")),
            flag('f', Takes::Refused("the driver formats blank disks only, and -f would override mkfs.xfs's own check for a filesystem")),
            flag('N', Takes::Refused("it makes no filesystem")),
            flag('p', Takes::Refused("it reads a prototype file of the node")),
            flag('V', Takes::Refused("it makes no filesystem")),
        ];
        FLAGS
    }

    fn format_limits(&self) -> FormatLimits {
        // mkfs.xfs(8).
        FormatLimits {
            block_size: (512, 65536),
            inode_size: Some((256, 2048)),
            inode_within_block: false,
            bytes_per_inode: None,
            number_of_inodes: false,
        }
    }

    fn check(&self, device: &Path) -> Tool {
        Tool::new(
            "xfs_repair",
            vec!["-n".into(), device.display().to_string()],
        )
    }

    fn grow_online(&self, _device: &Path, mount_point: &Path) -> Tool {
        let mp = mount_point.display().to_string();
        Tool::new("xfs_growfs", vec!["-d".into(), mp])
    }

    fn mount_options(&self) -> &'static [&'static str] {
        OPTIONS
    }

    /// Clones and snapshots of one xfs volume share its UUID; without nouuid the second
    /// mount on a node fails.
    fn always_options(&self) -> &'static [&'static str] {
        &["nouuid"]
    }

    /// A plain read-only mount still replays the log left by an unclean shutdown.
    fn no_replay_options(&self) -> &'static [&'static str] {
        &["norecovery"]
    }
}

/// xfs(5).
const OPTIONS: &[&str] = &[
    "allocsize",
    "attr2",
    "barrier",
    "bsdgroups",
    "dax",
    "discard",
    "filestreams",
    "gqnoenforce",
    "gquota",
    "grpid",
    "grpquota",
    "ikeep",
    "inode32",
    "inode64",
    "largeio",
    "logbsize",
    "logbufs",
    "logdev",
    "noalign",
    "noattr2",
    "nobarrier",
    "nodiscard",
    "nogrpid",
    "noikeep",
    "nolargeio",
    "noquota",
    "norecovery",
    "nouuid",
    "pqnoenforce",
    "pquota",
    "prjquota",
    "qnoenforce",
    "quota",
    "rtdev",
    "sunit",
    "swalloc",
    "swidth",
    "sysvgroups",
    "uqnoenforce",
    "uquota",
    "usrquota",
    "wsync",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn superblock_size() {
        let mut b = vec![0; 128 * 1024];
        assert_eq!(XFS.identify(&b), None);
        b[0..4].copy_from_slice(b"XFSB");
        b[4..8].copy_from_slice(&4096u32.to_be_bytes());
        b[8..16].copy_from_slice(&1000u64.to_be_bytes());
        let size_bytes = 4096 * 1000;
        assert_eq!(XFS.identify(&b), Some(Signature::This { size_bytes }));
    }

    #[test]
    fn mkfs_argv() {
        let dev = Path::new("/dev/vdb");
        let t = XFS.mkfs(dev, &FormatOptions::default());
        assert_eq!(t.program, "mkfs.xfs");
        assert_eq!(t.args, ["-q", "-K", "/dev/vdb"]);
        let o = FormatOptions {
            block_size: Some(4096),
            inode_size: Some(512),
            overwrite_interrupted: true,
            ..FormatOptions::default()
        };
        assert_eq!(
            XFS.mkfs(dev, &o).args,
            [
                "-q",
                "-K",
                "-f",
                "-b",
                "size=4096",
                "-i",
                "size=512",
                "/dev/vdb"
            ]
        );
    }

    #[test]
    fn mounts_and_grows() {
        assert_eq!(XFS.no_replay_options(), ["norecovery"]);
        assert_eq!(XFS.always_options(), ["nouuid"]);
        assert!(!XFS.grows_offline());
        let t = XFS.grow_online(Path::new("/dev/vdb"), Path::new("/mnt"));
        assert_eq!(t.program, "xfs_growfs");
        assert_eq!(t.args, ["-d", "/mnt"]);
    }
}
