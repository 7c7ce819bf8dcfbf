//! Is the device blank? Superblock magic read with two preads (head and tail of the device),
//! ~50 µs instead of ~3 ms for an exec of blkid. Anything that is not provably blank (known
//! signature, or any non-zero byte where signatures live) is reported as not blank, so an
//! unknown filesystem is never formatted over.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::host::{Content, FsKind, HostError, HostResult};

/// Bytes read from the start: covers MBR/GPT, LUKS, LVM2, swap, ext*, xfs, iso9660 and the
/// btrfs superblock at 64 KiB.
pub const HEAD: usize = 128 * 1024;
/// Bytes read from the end: md 0.90/1.0, DDF and the backup GPT live there.
pub const TAIL: usize = 128 * 1024;

pub fn probe(device: &Path, size: u64) -> HostResult<Content> {
    let file = File::open(device).map_err(|e| HostError::io("open", device, e))?;
    let head_len = HEAD.min(size as usize);
    let mut head = vec![0u8; head_len];
    file.read_exact_at(&mut head, 0)
        .map_err(|e| HostError::io("read", device, e))?;
    if let Some(found) = identify(&head) {
        return Ok(found);
    }
    if head.iter().any(|&b| b != 0) {
        return Ok(Content::Unrecognised);
    }
    let tail_start = size.saturating_sub(TAIL as u64).max(head_len as u64);
    let tail_len = (size - tail_start) as usize;
    if tail_len > 0 {
        let mut tail = head;
        tail.truncate(tail_len);
        file.read_exact_at(&mut tail, tail_start)
            .map_err(|e| HostError::io("read", device, e))?;
        if tail.iter().any(|&b| b != 0) {
            return Ok(Content::Unrecognised);
        }
    }
    Ok(Content::Blank)
}

fn at(buf: &[u8], off: usize, magic: &[u8]) -> bool {
    buf.get(off..off + magic.len()) == Some(magic)
}

fn le32(buf: &[u8], off: usize) -> u64 {
    buf.get(off..off + 4).map_or(0, |b| {
        u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    })
}

fn le64(buf: &[u8], off: usize) -> u64 {
    buf.get(off..off + 8)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
}

fn be32(buf: &[u8], off: usize) -> u64 {
    buf.get(off..off + 4).map_or(0, |b| {
        u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    })
}

fn be64(buf: &[u8], off: usize) -> u64 {
    buf.get(off..off + 8)
        .map_or(0, |b| u64::from_be_bytes(b.try_into().unwrap_or([0; 8])))
}

/// The first known signature in `head`. Filesystems are checked before the MBR boot
/// signature, which boot sectors of some filesystems also carry.
pub fn identify(head: &[u8]) -> Option<Content> {
    if let Some(ext) = ext(head) {
        return Some(ext);
    }
    if at(head, 0, b"XFSB") {
        let size = be32(head, 4).saturating_mul(be64(head, 8));
        return Some(Content::Filesystem {
            kind: FsKind::Xfs,
            size_bytes: size,
        });
    }
    const BTRFS: usize = 64 * 1024;
    if at(head, BTRFS + 0x40, b"_BHRfS_M") {
        return Some(Content::Filesystem {
            kind: FsKind::Btrfs,
            size_bytes: le64(head, BTRFS + 0x70),
        });
    }
    if at(head, 0, b"LUKS\xba\xbe") || at(head, 0, b"SKUL\xba\xbe") {
        return Some(Content::Other("crypto_LUKS"));
    }
    for page in [4096usize, 8192, 16384, 65536] {
        if at(head, page - 10, b"SWAPSPACE2") || at(head, page - 10, b"SWAP-SPACE") {
            return Some(Content::Other("swap"));
        }
    }
    if (0..4).any(|s| at(head, s * 512, b"LABELONE")) {
        return Some(Content::Other("LVM2_member"));
    }
    if at(head, 0, &0xa92b_4efc_u32.to_le_bytes()) || at(head, 4096, &0xa92b_4efc_u32.to_le_bytes())
    {
        return Some(Content::Other("linux_raid_member"));
    }
    if at(head, 32769, b"CD001") {
        return Some(Content::Other("iso9660"));
    }
    if at(head, 3, b"NTFS    ") {
        return Some(Content::Other("ntfs"));
    }
    if at(head, 54, b"FAT1") || at(head, 82, b"FAT32   ") {
        return Some(Content::Other("vfat"));
    }
    if at(head, 512, b"EFI PART") || at(head, 4096, b"EFI PART") {
        return Some(Content::PartitionTable("gpt"));
    }
    if at(head, 510, &[0x55, 0xaa]) {
        return Some(Content::PartitionTable("dos"));
    }
    None
}

fn ext(head: &[u8]) -> Option<Content> {
    const SB: usize = 1024;
    if !at(head, SB + 0x38, &[0x53, 0xef]) {
        return None;
    }
    let compat = le32(head, SB + 0x5c);
    let incompat = le32(head, SB + 0x60);
    let ro_compat = le32(head, SB + 0x64);
    const INCOMPAT_JOURNAL_DEV: u64 = 0x8;
    if incompat & INCOMPAT_JOURNAL_DEV != 0 {
        return Some(Content::Other("jbd"));
    }
    // ext3 knows FILETYPE, RECOVER and META_BG (incompat) and SPARSE_SUPER, LARGE_FILE,
    // BTREE_DIR (ro_compat); anything else (extents, 64bit, flex_bg, huge_file…) is ext4.
    let kind = if incompat & !0x16 != 0 || ro_compat & !0x7 != 0 {
        FsKind::Ext4
    } else if compat & 0x4 != 0 {
        FsKind::Ext3
    } else {
        FsKind::Ext2
    };
    const INCOMPAT_64BIT: u64 = 0x80;
    let mut blocks = le32(head, SB + 0x4);
    if incompat & INCOMPAT_64BIT != 0 {
        blocks |= le32(head, SB + 0x150) << 32;
    }
    let log = le32(head, SB + 0x18).min(16);
    Some(Content::Filesystem {
        kind,
        size_bytes: blocks.saturating_mul(1024 << log),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blank() -> Vec<u8> {
        vec![0; HEAD]
    }

    #[test]
    fn identifies_signatures() {
        assert_eq!(identify(&blank()), None);
        let mut b = blank();
        b[510] = 0x55;
        b[511] = 0xaa;
        assert_eq!(identify(&b), Some(Content::PartitionTable("dos")));
        b[512..520].copy_from_slice(b"EFI PART");
        assert_eq!(identify(&b), Some(Content::PartitionTable("gpt")));

        let mut b = blank();
        b[0..4].copy_from_slice(b"XFSB");
        b[4..8].copy_from_slice(&4096u32.to_be_bytes());
        b[8..16].copy_from_slice(&1000u64.to_be_bytes());
        assert_eq!(
            identify(&b),
            Some(Content::Filesystem {
                kind: FsKind::Xfs,
                size_bytes: 4096 * 1000
            })
        );

        let mut b = blank();
        b[4086..4096].copy_from_slice(b"SWAPSPACE2");
        assert_eq!(identify(&b), Some(Content::Other("swap")));

        let mut b = blank();
        b[0..6].copy_from_slice(b"LUKS\xba\xbe");
        assert_eq!(identify(&b), Some(Content::Other("crypto_LUKS")));
    }

    #[test]
    fn ext_flavours_and_size() {
        let mut b = blank();
        b[1024 + 0x38] = 0x53;
        b[1024 + 0x39] = 0xef;
        b[1024 + 4..1024 + 8].copy_from_slice(&262144u32.to_le_bytes());
        b[1024 + 0x18] = 2; // 4 KiB blocks
        assert_eq!(
            identify(&b),
            Some(Content::Filesystem {
                kind: FsKind::Ext2,
                size_bytes: 1 << 30
            })
        );
        b[1024 + 0x5c] = 0x4; // has_journal
        assert!(matches!(
            identify(&b),
            Some(Content::Filesystem {
                kind: FsKind::Ext3,
                ..
            })
        ));
        b[1024 + 0x60] = 0x40; // extents
        assert!(matches!(
            identify(&b),
            Some(Content::Filesystem {
                kind: FsKind::Ext4,
                ..
            })
        ));
    }
}
