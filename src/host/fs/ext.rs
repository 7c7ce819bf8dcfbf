//! ext2, ext3 and ext4: one family, one superblock, e2fsprogs. The members differ in their
//! name (and so mkfs tool) and in whether they have a journal to keep from replaying.

use std::path::Path;

use super::bytes::{at, le32};
use super::mkfs_args::{flag, MkfsFlag, Takes};
use super::ops::{FilesystemOps, FormatLimits, Signature, Tool};
use crate::host::{FormatOptions, HostError};

pub struct Ext {
    name: &'static str,
    /// mkfs first.
    tools: &'static [&'static str],
    no_replay: &'static [&'static str],
}

pub static EXT2: Ext = Ext {
    name: "ext2",
    tools: &["mkfs.ext2", "e2fsck", "resize2fs"],
    // ext2 has no journal.
    no_replay: &[],
};

pub static EXT3: Ext = Ext {
    name: "ext3",
    tools: &["mkfs.ext3", "e2fsck", "resize2fs"],
    no_replay: &["noload"],
};

pub static EXT4: Ext = Ext {
    name: "ext4",
    tools: &["mkfs.ext4", "e2fsck", "resize2fs"],
    no_replay: &["noload"],
};

/// The superblock is at 1 KiB.
const SB: usize = 1024;

/// What an ext superblock is.
enum Member {
    /// An external journal device: no filesystem to mount.
    Journal,
    /// The member named, spanning `size_bytes`.
    Fs(&'static str, u64),
}

fn member(head: &[u8]) -> Option<Member> {
    if !at(head, SB + 0x38, &[0x53, 0xef]) {
        return None;
    }
    let compat = le32(head, SB + 0x5c);
    let incompat = le32(head, SB + 0x60);
    let ro_compat = le32(head, SB + 0x64);
    const INCOMPAT_JOURNAL_DEV: u64 = 0x8;
    if incompat & INCOMPAT_JOURNAL_DEV != 0 {
        return Some(Member::Journal);
    }
    // ext3 knows FILETYPE, RECOVER and META_BG (incompat) and SPARSE_SUPER, LARGE_FILE,
    // BTREE_DIR (ro_compat); anything else (extents, 64bit, flex_bg, huge_file…) is ext4.
    let name = if incompat & !0x16 != 0 || ro_compat & !0x7 != 0 {
        "ext4"
    } else if compat & 0x4 != 0 {
        "ext3"
    } else {
        "ext2"
    };
    const INCOMPAT_64BIT: u64 = 0x80;
    let mut blocks = le32(head, SB + 0x4);
    if incompat & INCOMPAT_64BIT != 0 {
        blocks |= le32(head, SB + 0x150) << 32;
    }
    let log = le32(head, SB + 0x18).min(16);
    Some(Member::Fs(name, blocks.saturating_mul(1024 << log)))
}

impl FilesystemOps for Ext {
    fn name(&self) -> &'static str {
        self.name
    }

    fn identify(&self, head: &[u8]) -> Option<Signature> {
        match member(head)? {
            // Every member says so; the probe counts one signature once.
            Member::Journal => Some(Signature::Other("jbd")),
            Member::Fs(name, size_bytes) if name == self.name => {
                Some(Signature::This { size_bytes })
            }
            Member::Fs(..) => None,
        }
    }

    fn tools(&self) -> &'static [&'static str] {
        self.tools
    }

    fn package(&self) -> &'static str {
        "e2fsprogs"
    }

    fn mkfs(&self, device: &Path, o: &FormatOptions) -> Tool {
        // No -F: it would push nonsense through (a block size the kernel cannot mount
        // formats the device, then the mount fails); without it mke2fs asks, reads EOF
        // from /dev/null and stops before writing. (Its existing-filesystem check runs
        // only on a terminal, so our own probe is what guards data.) Lazy init keeps mkfs
        // ~20 ms at 100 GiB even without zero-out offload (perf-limits.md §4). nodiscard:
        // a blank volume has nothing to discard, and discarding all of it costs time in
        // proportion to its size on many backends (lazy init does not rely on it).
        // mke2fs keeps only the last -E: mkfsOptions' -E values join the driver's one (later
        // suboptions win, so `-E discard` undoes nodiscard) instead of replacing it.
        let (extended, extra) = split_extended(&o.extra, self.mkfs_flags());
        let mut e = String::from("lazy_itable_init=1,lazy_journal_init=1,nodiscard");
        for v in extended {
            e.push(',');
            e.push_str(&v);
        }
        let mut a: Vec<String> = ["-q".to_string(), "-m0".to_string(), "-E".to_string(), e].into();
        if let Some(b) = o.block_size {
            a.extend(["-b".into(), b.to_string()]);
        }
        if let Some(i) = o.inode_size {
            a.extend(["-I".into(), i.to_string()]);
        }
        if let Some(i) = o.bytes_per_inode {
            a.extend(["-i".into(), i.to_string()]);
        }
        if let Some(n) = o.number_of_inodes {
            a.extend(["-N".into(), n.to_string()]);
        }
        a.extend(extra);
        a.push(device.display().to_string());
        Tool::new(self.tools[0], a)
    }

    fn mkfs_flags(&self) -> &'static [MkfsFlag] {
        // mke2fs(8).
        const FLAGS: &[MkfsFlag] = &[
            flag('b', Takes::Value),
            flag('C', Takes::Value),
            flag('D', Takes::Nothing),
            flag('e', Takes::Value),
            flag('E', Takes::Suboptions { refused: &[] }),
            flag('g', Takes::Value),
            flag('G', Takes::Value),
            flag('i', Takes::Value),
            flag('I', Takes::Value),
            flag('j', Takes::Nothing),
            flag('J', Takes::Suboptions { refused: &["device"] }),
            flag('L', Takes::Value),
            flag('m', Takes::Value),
            flag('M', Takes::Value),
            flag('N', Takes::Value),
            flag('o', Takes::Value),
            flag('O', Takes::Value),
            flag('q', Takes::Nothing),
            flag('r', Takes::Value),
            flag('T', Takes::Value),
            flag('U', Takes::Value),
            flag('v', Takes::Nothing),
            flag('c', Takes::Refused("a bad-block scan reads (or writes) the whole disk")),
            flag('d', Takes::Refused("it copies a directory of the node into the volume")),
            flag('F', Takes::Refused("the driver formats blank disks only, and -F would override mke2fs's own checks")),
            flag('l', Takes::Refused("it reads a file of the node")),
            flag('n', Takes::Refused("it makes no filesystem")),
            flag('S', Takes::Refused("it rewrites superblocks over an existing filesystem")),
            flag('t', Takes::Refused("the filesystem type is the StorageClass's csi.storage.k8s.io/fstype")),
            flag('V', Takes::Refused("it makes no filesystem")),
            flag('z', Takes::Refused("it writes an undo file on the node")),
        ];
        FLAGS
    }

    fn format_limits(&self) -> FormatLimits {
        // mke2fs(8).
        FormatLimits {
            block_size: (1024, 65536),
            inode_size: Some((128, 65536)),
            inode_within_block: true,
            bytes_per_inode: Some((1024, 64 * 1024 * 1024)),
            number_of_inodes: true,
        }
    }

    fn check(&self, device: &Path) -> Tool {
        let dev = device.display().to_string();
        Tool::new("e2fsck", vec!["-f".into(), "-n".into(), dev])
    }

    /// Offline grow needs no CAP_SYS_RESOURCE, unlike online grow.
    fn grows_offline(&self) -> bool {
        true
    }

    fn grow_offline(&self, device: &Path) -> Vec<Tool> {
        let dev = device.display().to_string();
        // resize2fs insists on a fresh check; -p repairs only what is safe without a human.
        // 0: clean, 1: errors corrected. Anything else needs an operator.
        let check = Tool {
            ok: &[0, 1],
            ..Tool::new("e2fsck", vec!["-f".into(), "-p".into(), dev.clone()])
        };
        vec![check, Tool::new("resize2fs", vec![dev])]
    }

    fn grow_online(&self, device: &Path, _mount_point: &Path) -> Tool {
        Tool::new("resize2fs", vec![device.display().to_string()])
    }

    fn grow_refused(&self, mount_point: &Path, stderr: &str) -> Option<HostError> {
        if !(stderr.contains("Permission denied") || stderr.contains("not permitted")) {
            return None;
        }
        Some(HostError::NotPermitted {
            op: "resize2fs (online grow)",
            path: mount_point.to_path_buf(),
            detail: format!(
                "the kernel refused to grow {} while mounted (EPERM): the node plugin needs \
                 CAP_SYS_RESOURCE for that (run it privileged); resize2fs said: {stderr}",
                self.name
            ),
        })
    }

    fn mount_options(&self) -> &'static [&'static str] {
        OPTIONS
    }

    /// A plain read-only mount still replays an ext3/ext4 journal left by an unclean
    /// shutdown.
    fn no_replay_options(&self) -> &'static [&'static str] {
        self.no_replay
    }
}

/// ext4(5), Documentation/admin-guide/ext4.rst, keys without `=value`.
const OPTIONS: &[&str] = &[
    "abort",
    "acl",
    "auto_da_alloc",
    "barrier",
    "bh",
    "block_validity",
    "bsddf",
    "bsdgroups",
    "check",
    "commit",
    "data",
    "data_err",
    "dax",
    "debug",
    "debug_want_extra_isize",
    "delalloc",
    "dioread_lock",
    "dioread_nolock",
    "discard",
    "errors",
    "grpid",
    "grpjquota",
    "grpquota",
    "i_version",
    "init_itable",
    "inlinecrypt",
    "inode_readahead_blks",
    "jqfmt",
    "journal",
    "journal_async_commit",
    "journal_checksum",
    "journal_dev",
    "journal_ioprio",
    "journal_path",
    "max_batch_time",
    "max_dir_size_kb",
    "mb_optimize_scan",
    "min_batch_time",
    "minixdf",
    "no_mbcache",
    "no_prefetch_block_bitmaps",
    "noacl",
    "noauto_da_alloc",
    "nobarrier",
    "nobh",
    "noblock_validity",
    "nocheck",
    "nodelalloc",
    "nodiscard",
    "nogrpid",
    "noinit_itable",
    "nojournal_checksum",
    "noload",
    "nombcache",
    "noquota",
    "norecovery",
    "nouid32",
    "nouser_xattr",
    "oldalloc",
    "orlov",
    "prefetch_block_bitmaps",
    "prjquota",
    "quota",
    "resgid",
    "resuid",
    "sb",
    "stripe",
    "sysvgroups",
    "test_dummy_encryption",
    "user_xattr",
    "usrjquota",
    "usrquota",
];

/// `-E` values of checked mkfs arguments (attached or following), and the other arguments in
/// order. `flags` says which options take a value, so a value that looks like `-E` is kept.
fn split_extended(args: &[String], flags: &[MkfsFlag]) -> (Vec<String>, Vec<String>) {
    let takes_value = |letter: char| {
        flags.iter().any(|f| {
            f.letter == letter && matches!(f.takes, Takes::Value | Takes::Suboptions { .. })
        })
    };
    let (mut extended, mut rest) = (Vec::new(), Vec::new());
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let letter = arg.strip_prefix('-').and_then(|r| r.chars().next());
        match letter {
            Some('E') if arg.len() > 2 => extended.push(arg[2..].to_string()),
            Some('E') => extended.extend(it.next().cloned()),
            Some(l) if arg.len() == 2 && takes_value(l) => {
                rest.push(arg.clone());
                rest.extend(it.next().cloned());
            }
            _ => rest.push(arg.clone()),
        }
    }
    (extended, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(compat: u8, incompat: u8) -> Vec<u8> {
        let mut b = vec![0; 128 * 1024];
        b[SB + 0x38] = 0x53;
        b[SB + 0x39] = 0xef;
        b[SB + 4..SB + 8].copy_from_slice(&262144u32.to_le_bytes());
        b[SB + 0x18] = 2; // 4 KiB blocks
        b[SB + 0x5c] = compat;
        b[SB + 0x60] = incompat;
        b
    }

    #[test]
    fn each_member_claims_its_own_superblock() {
        let this = Some(Signature::This {
            size_bytes: 1 << 30,
        });
        let claims = |h: &[u8]| [&EXT2, &EXT3, &EXT4].map(|e| e.identify(h));
        assert_eq!(claims(&head(0, 0)), [this, None, None]);
        assert_eq!(claims(&head(0x4, 0)), [None, this, None]); // has_journal
        assert_eq!(claims(&head(0x4, 0x40)), [None, None, this]); // extents
        assert_eq!(claims(&head(0, 0x8)), [Some(Signature::Other("jbd")); 3]);
        assert_eq!(claims(&vec![0; 4096]), [None; 3]);
    }

    #[test]
    fn mkfs_argv() {
        let dev = Path::new("/dev/vdb");
        let t = EXT4.mkfs(dev, &FormatOptions::default());
        assert_eq!(t.program, "mkfs.ext4");
        assert_eq!(
            t.args,
            [
                "-q",
                "-m0",
                "-E",
                "lazy_itable_init=1,lazy_journal_init=1,nodiscard",
                "/dev/vdb"
            ]
        );
        let o = FormatOptions {
            block_size: Some(4096),
            inode_size: Some(256),
            bytes_per_inode: Some(16384),
            number_of_inodes: Some(1000),
            overwrite_interrupted: true,
            extra: vec!["-O".into(), "^metadata_csum".into()],
        };
        let t = EXT2.mkfs(dev, &o);
        assert_eq!(t.program, "mkfs.ext2");
        // Never -F, also over an interrupted format of ours; mkfsOptions last, before the
        // device.
        assert_eq!(
            t.args[4..],
            [
                "-b",
                "4096",
                "-I",
                "256",
                "-i",
                "16384",
                "-N",
                "1000",
                "-O",
                "^metadata_csum",
                "/dev/vdb"
            ]
        );
    }

    #[test]
    fn mkfs_options_extended_values_join_the_drivers() {
        let o = FormatOptions {
            extra: [
                "-E",
                "discard",
                "-L",
                "-E",
                "-Estride=8",
                "-O",
                "^has_journal",
            ]
            .map(String::from)
            .into(),
            ..Default::default()
        };
        let t = EXT4.mkfs(Path::new("/dev/vdb"), &o);
        assert_eq!(
            t.args,
            [
                "-q",
                "-m0",
                "-E",
                "lazy_itable_init=1,lazy_journal_init=1,nodiscard,discard,stride=8",
                "-L",
                "-E",
                "-O",
                "^has_journal",
                "/dev/vdb"
            ],
            "one -E; a label that reads -E stays a label"
        );
    }

    #[test]
    fn journal_members_never_replay_read_only_and_grow_offline() {
        assert_eq!(EXT2.no_replay_options(), &[] as &[&str]);
        assert_eq!(EXT3.no_replay_options(), ["noload"]);
        assert_eq!(EXT4.no_replay_options(), ["noload"]);
        let steps = EXT4.grow_offline(Path::new("/dev/vdb"));
        assert_eq!(steps[0].args, ["-f", "-p", "/dev/vdb"]);
        assert_eq!(steps[0].ok, [0, 1]);
        assert_eq!((steps[1].program, steps[1].ok), ("resize2fs", &[0][..]));
        let refused = EXT4.grow_refused(Path::new("/mnt"), "Permission denied");
        assert!(matches!(refused, Some(HostError::NotPermitted { .. })));
        assert!(EXT4.grow_refused(Path::new("/mnt"), "No space").is_none());
    }
}
