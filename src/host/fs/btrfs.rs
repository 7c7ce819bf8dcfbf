//! btrfs: btrfs-progs, superblock at 64 KiB, grown online only, a log tree to keep from
//! replaying.

use std::path::Path;

use super::bytes::{at, le64};
use super::mkfs_args::{flag, MkfsFlag, Takes};
use super::ops::{FilesystemOps, FormatLimits, Signature, Tool};
use crate::host::FormatOptions;

pub struct Btrfs;

pub static BTRFS: Btrfs = Btrfs;

/// The primary superblock's offset.
const SB: usize = 64 * 1024;

impl FilesystemOps for Btrfs {
    fn name(&self) -> &'static str {
        "btrfs"
    }

    fn identify(&self, head: &[u8]) -> Option<Signature> {
        at(head, SB + 0x40, b"_BHRfS_M").then(|| Signature::This {
            size_bytes: le64(head, SB + 0x70),
        })
    }

    fn tools(&self) -> &'static [&'static str] {
        &["mkfs.btrfs", "btrfs"]
    }

    fn package(&self) -> &'static str {
        "btrfs-progs"
    }

    fn mkfs(&self, device: &Path, o: &FormatOptions) -> Tool {
        // No -f: mkfs.btrfs refuses on its own if it sees a signature we missed. -K: no
        // discard of a blank device.
        let mut a: Vec<String> = ["-q", "-K"].map(String::from).into();
        if o.overwrite_interrupted {
            a.push("-f".into());
        }
        if let Some(b) = o.block_size {
            a.extend(["-s".into(), b.to_string()]);
        }
        a.extend(o.extra.iter().cloned());
        a.push(device.display().to_string());
        Tool::new("mkfs.btrfs", a)
    }

    fn mkfs_flags(&self) -> &'static [MkfsFlag] {
        // mkfs.btrfs(8).
        const FLAGS: &[MkfsFlag] = &[
            flag('b', Takes::Value),
            flag('d', Takes::Value),
            flag('m', Takes::Value),
            flag('M', Takes::Nothing),
            flag('n', Takes::Value),
            flag('s', Takes::Value),
            flag('L', Takes::Value),
            flag('O', Takes::Value),
            flag('R', Takes::Value),
            flag('U', Takes::Value),
            flag('K', Takes::Nothing),
            flag('q', Takes::Nothing),
            flag('f', Takes::Refused("the driver formats blank disks only, and -f would override mkfs.btrfs's own check for a filesystem")),
            flag('r', Takes::Refused("it copies a directory of the node into the volume")),
            flag('V', Takes::Refused("it makes no filesystem")),
        ];
        FLAGS
    }

    fn format_limits(&self) -> FormatLimits {
        // mkfs.btrfs(8): the sector size; no inode options.
        FormatLimits {
            block_size: (4096, 65536),
            inode_size: None,
            inode_within_block: false,
            bytes_per_inode: None,
            number_of_inodes: false,
        }
    }

    fn check(&self, device: &Path) -> Tool {
        let dev = device.display().to_string();
        Tool::new("btrfs", vec!["check".into(), "--readonly".into(), dev])
    }

    fn grow_online(&self, _device: &Path, mount_point: &Path) -> Tool {
        let mp = mount_point.display().to_string();
        let args = vec!["filesystem".into(), "resize".into(), "max".into(), mp];
        Tool::new("btrfs", args)
    }

    fn mount_options(&self) -> &'static [&'static str] {
        OPTIONS
    }

    /// A plain read-only mount still replays the log tree left by an unclean shutdown.
    /// `rescue=` since Linux 5.9; newer kernels refuse the old bare `nologreplay`.
    fn no_replay_options(&self) -> &'static [&'static str] {
        &["rescue=nologreplay"]
    }

    /// Kernels before 5.9 know only the bare `nologreplay`.
    fn renamed_options(&self) -> &'static [(&'static str, &'static str)] {
        &[("rescue=nologreplay", "nologreplay")]
    }
}

/// btrfs(5).
const OPTIONS: &[&str] = &[
    "acl",
    "alloc_start",
    "autodefrag",
    "barrier",
    "check_int",
    "check_int_data",
    "check_int_print_mask",
    "clear_cache",
    "commit",
    "compress",
    "compress-force",
    "datacow",
    "datasum",
    "degraded",
    "device",
    "discard",
    "enospc_debug",
    "fatal_errors",
    "flushoncommit",
    "fragment",
    "inode_cache",
    "max_inline",
    "metadata_ratio",
    "noacl",
    "noautodefrag",
    "nobarrier",
    "nodatacow",
    "nodatasum",
    "nodiscard",
    "noenospc_debug",
    "noflushoncommit",
    "noinode_cache",
    "nologreplay",
    "norecovery",
    "nospace_cache",
    "nossd",
    "nossd_spread",
    "notreelog",
    "recovery",
    "rescan_uuid_tree",
    "rescue",
    "skip_balance",
    "space_cache",
    "ssd",
    "ssd_spread",
    "subvol",
    "subvolid",
    "subvolrootid",
    "thread_pool",
    "treelog",
    "usebackuproot",
    "user_subvol_rm_allowed",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn superblock_at_64k() {
        let mut b = vec![0; 128 * 1024];
        assert_eq!(BTRFS.identify(&b), None);
        b[SB + 0x40..SB + 0x48].copy_from_slice(b"_BHRfS_M");
        b[SB + 0x70..SB + 0x78].copy_from_slice(&(1u64 << 30).to_le_bytes());
        let size_bytes = 1 << 30;
        assert_eq!(BTRFS.identify(&b), Some(Signature::This { size_bytes }));
        // A head too short to hold it is no match, not a panic.
        assert_eq!(BTRFS.identify(&b[..SB]), None);
    }

    #[test]
    fn mkfs_argv() {
        let dev = Path::new("/dev/vdb");
        let t = BTRFS.mkfs(dev, &FormatOptions::default());
        assert_eq!(t.program, "mkfs.btrfs");
        assert_eq!(t.args, ["-q", "-K", "/dev/vdb"]);
        let o = FormatOptions {
            block_size: Some(4096),
            overwrite_interrupted: true,
            ..FormatOptions::default()
        };
        assert_eq!(
            BTRFS.mkfs(dev, &o).args,
            ["-q", "-K", "-f", "-s", "4096", "/dev/vdb"]
        );
    }

    #[test]
    fn mounts_and_grows() {
        assert_eq!(BTRFS.no_replay_options(), ["rescue=nologreplay"]);
        assert_eq!(
            BTRFS.renamed_options(),
            [("rescue=nologreplay", "nologreplay")]
        );
        assert!(!BTRFS.grows_offline());
        let t = BTRFS.grow_online(Path::new("/dev/vdb"), Path::new("/mnt"));
        assert_eq!(t.args, ["filesystem", "resize", "max", "/mnt"]);
    }
}
