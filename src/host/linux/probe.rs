//! What is on the device? Superblock magic read with one pread of the head (~50 µs instead of
//! ~3 ms for an exec of blkid). Only when no signature is found do we look further: a device
//! is blank only if its first and last MiB and 64 samples spread over it read as zeroes. So
//! an unknown filesystem, or raw data written through a block volume, is never formatted
//! over; the extra reads happen only before a format, which costs milliseconds anyway.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::host::fs::bytes::{at, le32};
use crate::host::fs::Signature;
use crate::host::{Content, FsKind, HostError, HostResult};

/// Bytes read from the start for signatures: covers MBR/GPT, LUKS, LVM2, swap, iso9660 and
/// every filesystem's superblock (`host/fs`; btrfs's at 64 KiB is the farthest).
pub const HEAD: usize = 128 * 1024;
/// Bytes at each end that must be zero for a blank device (md 0.90/1.0, DDF and the backup
/// GPT live at the end).
pub const EDGE: u64 = 1024 * 1024;
/// 4 KiB samples spread over the rest of the device.
pub const SAMPLES: u64 = 64;
const SAMPLE: usize = 4096;

pub fn probe(device: &Path, size: u64) -> HostResult<Content> {
    let file = File::open(device).map_err(|e| HostError::io("open", device, e))?;
    let read = |buf: &mut [u8], off: u64| {
        file.read_exact_at(buf, off)
            .map_err(|e| HostError::io("read", device, e))
    };
    let head_len = HEAD.min(size as usize);
    let mut buf = vec![0u8; head_len];
    read(&mut buf, 0)?;
    if let Some(found) = identify(&buf) {
        return Ok(found);
    }
    let zero = |b: &[u8]| b.iter().all(|&x| x == 0);
    if !zero(&buf) {
        return Ok(Content::Unrecognised);
    }
    // Regions still to check: the rest of the first MiB, the last MiB, and the samples.
    let mut regions: Vec<(u64, u64)> = vec![
        (head_len as u64, EDGE.min(size)),
        (size.saturating_sub(EDGE).max(head_len as u64), size),
    ];
    let step = size / SAMPLES;
    if step >= SAMPLE as u64 {
        regions.extend((1..SAMPLES).map(|i| (i * step, i * step + SAMPLE as u64)));
    }
    for (mut off, end) in regions {
        while off < end {
            let n = ((end - off) as usize).min(buf.len());
            read(&mut buf[..n], off)?;
            if !zero(&buf[..n]) {
                return Ok(Content::Unrecognised);
            }
            off += n as u64;
        }
    }
    Ok(Content::Blank)
}

/// What the signatures in `head` say. All are looked for: one filesystem signature alone is
/// that filesystem; a partition table, or more than one signature (a stale whole-disk
/// superblock under a new partition table, say), is never mounted whole nor formatted.
pub fn identify(head: &[u8]) -> Option<Content> {
    let mut found = signatures(head);
    match found.len() {
        0 => None,
        1 => found.pop(),
        _ => Some(Content::Several(found.iter().map(describe).collect())),
    }
}

fn describe(c: &Content) -> String {
    match c {
        Content::Filesystem { kind, .. } => format!("{kind} filesystem"),
        Content::PartitionTable(t) => format!("{t} partition table"),
        Content::Other(sig) => format!("{sig} data"),
        other => format!("{other:?}"),
    }
}

/// Every known signature in `head`.
pub fn signatures(head: &[u8]) -> Vec<Content> {
    let mut found = Vec::new();
    for kind in FsKind::ALL {
        let c = match kind.ops().identify(head) {
            Some(Signature::This { size_bytes }) => Content::Filesystem { kind, size_bytes },
            Some(Signature::Other(sig)) => Content::Other(sig),
            None => continue,
        };
        // One superblock can speak for several members of a family (an ext journal device).
        if !found.contains(&c) {
            found.push(c);
        }
    }
    if at(head, 0, b"LUKS\xba\xbe") || at(head, 0, b"SKUL\xba\xbe") {
        found.push(Content::Other("crypto_LUKS"));
    }
    if [4096usize, 8192, 16384, 65536]
        .iter()
        .any(|&page| at(head, page - 10, b"SWAPSPACE2") || at(head, page - 10, b"SWAP-SPACE"))
    {
        found.push(Content::Other("swap"));
    }
    if (0..4).any(|s| at(head, s * 512, b"LABELONE")) {
        found.push(Content::Other("LVM2_member"));
    }
    if at(head, 0, &0xa92b_4efc_u32.to_le_bytes()) || at(head, 4096, &0xa92b_4efc_u32.to_le_bytes())
    {
        found.push(Content::Other("linux_raid_member"));
    }
    if at(head, 32769, b"CD001") {
        found.push(Content::Other("iso9660"));
    }
    // FAT and NTFS boot sectors end in 0x55aa too, with boot code where MBR entries live.
    let mut boot_sector = false;
    if at(head, 3, b"NTFS    ") {
        found.push(Content::Other("ntfs"));
        boot_sector = true;
    }
    if at(head, 54, b"FAT1") || at(head, 82, b"FAT32   ") {
        found.push(Content::Other("vfat"));
        boot_sector = true;
    }
    if at(head, 512, b"EFI PART") || at(head, 4096, b"EFI PART") {
        found.push(Content::PartitionTable("gpt"));
    } else if !boot_sector && mbr_has_partitions(head) {
        found.push(Content::PartitionTable("dos"));
    }
    found
}

/// An MBR (0x55aa at 510) with at least one plausible entry: boot flag 0x00 or 0x80, a
/// partition type, a start and a length. A bare 0x55aa is not enough: it says nothing about
/// what lies beyond the first sector.
fn mbr_has_partitions(head: &[u8]) -> bool {
    if !at(head, 510, &[0x55, 0xaa]) {
        return false;
    }
    (0..4).any(|i| {
        let e = 446 + i * 16;
        matches!(head.get(e), Some(0x00 | 0x80))
            && head.get(e + 4).is_some_and(|&t| t != 0)
            && le32(head, e + 8) != 0
            && le32(head, e + 12) != 0
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
        // A boot signature without entries is no partition table.
        assert_eq!(identify(&b), None);
        b[446..462].copy_from_slice(&mbr_entry(0x83, 2048, 65536));
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

    fn mbr_entry(kind: u8, start: u32, len: u32) -> [u8; 16] {
        let mut e = [0u8; 16];
        e[4] = kind;
        e[8..12].copy_from_slice(&start.to_le_bytes());
        e[12..16].copy_from_slice(&len.to_le_bytes());
        e
    }

    fn ext4_head() -> Vec<u8> {
        let mut b = blank();
        b[1024 + 0x38] = 0x53;
        b[1024 + 0x39] = 0xef;
        b[1024 + 4..1024 + 8].copy_from_slice(&1000u32.to_le_bytes());
        b[1024 + 0x5c] = 0x4;
        b[1024 + 0x60] = 0x40;
        b
    }

    #[test]
    fn stale_filesystem_under_a_partition_table_is_several() {
        // sfdisk over a whole-disk ext4: the superblock at 1 KiB survives the new MBR.
        let mut b = ext4_head();
        b[446..462].copy_from_slice(&mbr_entry(0x83, 2048, 65536));
        b[510] = 0x55;
        b[511] = 0xaa;
        match identify(&b) {
            Some(Content::Several(v)) => {
                assert_eq!(v, ["ext4 filesystem", "dos partition table"])
            }
            other => panic!("{other:?}"),
        }
        // parted mklabel gpt over xfs keeps the boot code area, and with it "XFSB".
        let mut b = blank();
        b[0..4].copy_from_slice(b"XFSB");
        b[446..462].copy_from_slice(&mbr_entry(0xee, 1, 0xffff_ffff));
        b[510] = 0x55;
        b[511] = 0xaa;
        b[512..520].copy_from_slice(b"EFI PART");
        assert!(matches!(identify(&b), Some(Content::Several(v)) if v.len() == 2));
        // A btrfs superblock beside swap.
        let mut b = blank();
        b[65536 + 0x40..65536 + 0x48].copy_from_slice(b"_BHRfS_M");
        b[4086..4096].copy_from_slice(b"SWAPSPACE2");
        assert!(matches!(identify(&b), Some(Content::Several(v)) if v.len() == 2));
        // A FAT boot sector's 0x55aa and boot code are not an MBR.
        let mut b = blank();
        b[82..90].copy_from_slice(b"FAT32   ");
        b[446..462].copy_from_slice(&mbr_entry(0x83, 2048, 65536));
        b[510] = 0x55;
        b[511] = 0xaa;
        assert_eq!(identify(&b), Some(Content::Other("vfat")));
    }

    #[test]
    fn blank_only_when_every_checked_region_is_zero() {
        let dir = tempfile::tempdir().unwrap();
        let size = 8 << 20;
        let img = |at: Option<u64>| {
            let p = dir.path().join(format!("img{}", at.unwrap_or(0)));
            let f = File::create(&p).unwrap();
            f.set_len(size).unwrap();
            if let Some(off) = at {
                f.write_all_at(b"x", off).unwrap();
            }
            probe(&p, size).unwrap()
        };
        assert_eq!(img(None), Content::Blank);
        // Inside the head, the first MiB, a sample, the last MiB.
        for off in [100, 600 << 10, 5 << 20, size - 10] {
            assert_eq!(img(Some(off)), Content::Unrecognised, "byte at {off}");
        }
    }

    #[test]
    fn an_ext_journal_device_is_one_signature() {
        let mut b = ext4_head();
        b[1024 + 0x60] = 0x8; // journal_dev
        assert_eq!(identify(&b), Some(Content::Other("jbd")));
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
