//! VFAT config drives, through `fatfs` (long file names come with its `alloc` feature; names
//! compare without case, long or 8.3). The device is wrapped so that any write fatfs might
//! attempt fails: a config drive is never modified.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::panic::AssertUnwindSafe;

use super::found::{too_large, Found, META_DATA_PATH};
use crate::host::metadata::document::MAX_DOCUMENT_BYTES;

/// A damaged FAT can chain a directory into a cycle; stop listing long before that matters.
/// A config drive directory holds a handful of entries.
const MAX_DIR_ENTRIES: usize = 4096;

type Fs = fatfs::FileSystem<ReadOnly<BufReader<File>>>;
type Dir<'a> = fatfs::Dir<'a, ReadOnly<BufReader<File>>>;
type Entry<'a> = fatfs::DirEntry<'a, ReadOnly<BufReader<File>>>;

/// Errors are messages about a damaged file system.
pub(super) fn read(file: File) -> Result<Found, String> {
    // fatfs 0.3 computes with cluster numbers read from the image unchecked, so a damaged
    // image can make it panic (found by fuzzing): that is a damaged drive for every caller,
    // not a panic, also outside the node's spawn_blocking.
    std::panic::catch_unwind(AssertUnwindSafe(|| read_fs(file))).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(format!(
            "FAT file system is damaged: the FAT reader gave up ({why})"
        ))
    })
}

fn read_fs(mut file: File) -> Result<Found, String> {
    let damaged = |what: &str, e: io::Error| format!("FAT file system is damaged: {what}: {e}");
    let mut sector = [0u8; 512];
    file.read_exact(&mut sector)
        .map_err(|e| damaged("boot sector", e))?;
    check_layout(&sector).map_err(|e| format!("FAT file system is damaged: boot sector: {e}"))?;
    file.rewind().map_err(|e| damaged("boot sector", e))?;
    let fs: Fs = fatfs::FileSystem::new(ReadOnly(BufReader::new(file)), fatfs::FsOptions::new())
        .map_err(|e| damaged("boot sector", e))?;
    // blkid reports the root directory's label entry when there is one, else the boot sector's.
    let label = match fs.read_volume_label_from_root_dir() {
        Ok(Some(label)) => label,
        Ok(None) => fs.volume_label(),
        Err(e) => return Err(damaged("root directory", e)),
    };
    let found = |contents| Found {
        format: "FAT",
        label: label.clone(),
        searched: "long and 8.3 names".into(),
        contents,
    };

    let (file_name, dirs) = META_DATA_PATH.split_last().expect("path is not empty");
    let mut dir = fs.root_dir();
    for name in dirs {
        match lookup(&dir, name, true).map_err(|e| damaged(name, e))? {
            Some(entry) => dir = entry.to_dir(),
            None => return Ok(found(None)),
        }
    }
    let Some(entry) = lookup(&dir, file_name, false).map_err(|e| damaged("latest", e))? else {
        return Ok(found(None));
    };
    if entry.len() > MAX_DOCUMENT_BYTES {
        return Ok(found(Some(Err(too_large(entry.len())))));
    }
    let mut bytes = Vec::with_capacity(entry.len() as usize);
    // `take` also bounds a cluster chain that loops.
    let contents = entry
        .to_file()
        .take(entry.len())
        .read_to_end(&mut bytes)
        .map(|_| bytes)
        .map_err(|e| format!("cannot read {}: {e}", META_DATA_PATH.join("/")));
    Ok(found(Some(contents)))
}

/// fatfs 0.3 adds and multiplies the boot sector's counts in u32 unchecked, so a damaged boot
/// sector overflows them (found by fuzzing). Refuses the layouts that would, before fatfs reads it.
fn check_layout(sector: &[u8; 512]) -> Result<(), String> {
    let u16_at = |i: usize| u64::from(u16::from_le_bytes([sector[i], sector[i + 1]]));
    let u32_at = |i: usize| u64::from(u32::from_le_bytes(sector[i..i + 4].try_into().unwrap()));
    let bytes_per_sector = u16_at(11);
    if !bytes_per_sector.is_power_of_two() {
        return Err(format!("{bytes_per_sector} bytes per sector"));
    }
    let sectors_per_fat = match u16_at(22) {
        0 => u32_at(36), // FAT32 keeps the count in its extended block
        n => n,
    };
    // fatfs counts the FAT's entries as its size in bits: that must fit in 32 bits.
    if sectors_per_fat * bytes_per_sector * 8 > u64::from(u32::MAX) {
        return Err(format!("a FAT of {sectors_per_fat} sectors"));
    }
    let fats = u64::from(sector[16]);
    let root_dir_sectors = (u16_at(17) * 32).div_ceil(bytes_per_sector);
    let first_data_sector = u16_at(14) + fats * sectors_per_fat + root_dir_sectors;
    if first_data_sector > u64::from(u32::MAX) {
        return Err(format!(
            "{fats} FATs of {sectors_per_fat} sectors end past the last possible sector"
        ));
    }
    Ok(())
}

fn lookup<'a>(dir: &Dir<'a>, name: &str, want_dir: bool) -> io::Result<Option<Entry<'a>>> {
    for entry in dir.iter().take(MAX_DIR_ENTRIES) {
        let entry = entry?;
        let matches = entry.file_name().eq_ignore_ascii_case(name)
            || entry.short_file_name().eq_ignore_ascii_case(name);
        if matches && entry.is_dir() == want_dir {
            return Ok(Some(entry));
        }
    }
    Ok(None)
}

/// Passes reads and seeks through; refuses writes.
pub(super) struct ReadOnly<T>(T);

impl<T: Read> Read for ReadOnly<T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl<T: Seek> Seek for ReadOnly<T> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.0.seek(pos)
    }
}

impl<T> Write for ReadOnly<T> {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the config drive is read-only to cinder-csi",
        ))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
