//! Sparse-preserving file copy for snapshots, clones, backups and restores: a reflink
//! (FICLONE) where the filesystem shares extents (btrfs, xfs with reflink), otherwise only the
//! data ranges (SEEK_DATA/SEEK_HOLE) through copy_file_range, so holes stay holes.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::FileExt;

use nix::errno::Errno;
use nix::unistd::{lseek, Whence};

/// How a copy was made (reported in logs and checked by tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyMethod {
    Reflink,
    DataRanges,
}

// FICLONE is the only ioctl here; it takes the source fd as a plain integer.
#[allow(unsafe_code)]
mod sys {
    nix::ioctl_write_int!(ficlone, 0x94, 9);

    pub fn clone_file(dst: i32, src: i32) -> nix::Result<i32> {
        // SAFETY: both are open file descriptors; the argument is an integer, not a pointer.
        unsafe { ficlone(dst, src as nix::sys::ioctl::ioctl_param_type) }
    }
}

/// Largest chunk handed to one copy_file_range call.
const CHUNK: usize = 1 << 30;
/// Buffer for the read/write fallback (filesystems without copy_file_range).
const BUF: usize = 1 << 20;

/// Copy all of `src` into the empty file `dst` and make `dst` exactly `len` bytes long
/// (`len` ≥ the source length: restores may be larger than their source). Does not fsync.
pub fn sparse_copy(src: &File, dst: &File, len: u64) -> io::Result<CopyMethod> {
    let src_len = src.metadata()?.len();
    if len < src_len {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cannot copy {src_len} bytes into {len}"),
        ));
    }
    let method = match sys::clone_file(dst.as_raw_fd(), src.as_raw_fd()) {
        Ok(_) => CopyMethod::Reflink,
        // Not supported by this filesystem (or across filesystems): copy the data ranges.
        Err(Errno::EOPNOTSUPP | Errno::ENOTTY | Errno::EXDEV | Errno::EINVAL | Errno::ENOSYS) => {
            dst.set_len(src_len)?;
            copy_data_ranges(src, dst, src_len)?;
            CopyMethod::DataRanges
        }
        Err(e) => return Err(e.into()),
    };
    if len != src_len {
        dst.set_len(len)?;
    }
    Ok(method)
}

/// The data ranges of `src` in `[0, len)`, in order.
pub fn data_ranges(src: &File, len: u64) -> io::Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    let mut pos: u64 = 0;
    while pos < len {
        let start = match lseek(src.as_fd(), pos as i64, Whence::SeekData) {
            Ok(off) => off as u64,
            // No data after `pos`.
            Err(Errno::ENXIO) => break,
            Err(e) => return Err(e.into()),
        };
        if start >= len {
            break;
        }
        let end = match lseek(src.as_fd(), start as i64, Whence::SeekHole) {
            Ok(off) => (off as u64).min(len),
            Err(e) => return Err(e.into()),
        };
        out.push((start, end));
        pos = end;
    }
    Ok(out)
}

fn copy_data_ranges(src: &File, dst: &File, len: u64) -> io::Result<()> {
    for (start, end) in data_ranges(src, len)? {
        copy_range(src, dst, start, end)?;
    }
    Ok(())
}

fn copy_range(src: &File, dst: &File, start: u64, end: u64) -> io::Result<()> {
    let mut off_in = start as i64;
    let mut off_out = start as i64;
    while (off_in as u64) < end {
        let want = ((end - off_in as u64) as usize).min(CHUNK);
        match nix::fcntl::copy_file_range(
            src.as_fd(),
            Some(&mut off_in),
            dst.as_fd(),
            Some(&mut off_out),
            want,
        ) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "source shrank during the copy",
                ))
            }
            Ok(_) => {}
            Err(Errno::EINTR) => {}
            Err(Errno::EXDEV | Errno::EOPNOTSUPP | Errno::ENOSYS | Errno::EINVAL) => {
                return copy_by_buffer(src, dst, off_in as u64, end);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Plain read/write for filesystems that refuse copy_file_range. All-zero blocks are
/// skipped so they stay holes in the (pre-sized, sparse) destination.
fn copy_by_buffer(src: &File, dst: &File, mut pos: u64, end: u64) -> io::Result<()> {
    let mut buf = vec![0u8; BUF];
    while pos < end {
        let n = ((end - pos) as usize).min(BUF);
        src.read_exact_at(&mut buf[..n], pos)?;
        if buf[..n].iter().any(|&b| b != 0) {
            dst.write_all_at(&buf[..n], pos)?;
        }
        pos += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn keeps_holes_and_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let src_path = dir.path().join("src");
        let src = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&src_path)
            .unwrap();
        src.set_len(64 << 20).unwrap();
        src.write_all_at(b"head", 0).unwrap();
        src.write_all_at(&[7u8; 8192], 32 << 20).unwrap();
        src.write_all_at(b"tail", (64 << 20) - 4).unwrap();
        src.sync_all().unwrap();

        let dst = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.path().join("dst"))
            .unwrap();
        sparse_copy(&src, &dst, 128 << 20).unwrap();
        dst.sync_all().unwrap();
        let meta = dst.metadata().unwrap();
        assert_eq!(meta.len(), 128 << 20);
        // A few data blocks, not 64 MiB of zeroes.
        assert!(meta.blocks() * 512 < 4 << 20, "blocks: {}", meta.blocks());
        let mut b = [0u8; 4];
        dst.read_exact_at(&mut b, 0).unwrap();
        assert_eq!(&b, b"head");
        dst.read_exact_at(&mut b, (64 << 20) - 4).unwrap();
        assert_eq!(&b, b"tail");
        let mut mid = vec![0u8; 8192];
        dst.read_exact_at(&mut mid, 32 << 20).unwrap();
        assert!(mid.iter().all(|&x| x == 7));
        dst.read_exact_at(&mut b, 16 << 20).unwrap();
        assert_eq!(b, [0; 4]);
    }

    #[test]
    fn refuses_to_shrink() {
        let dir = tempfile::tempdir().unwrap();
        let src = File::create(dir.path().join("s")).unwrap();
        src.set_len(10).unwrap();
        let src = File::open(dir.path().join("s")).unwrap();
        let dst = File::create(dir.path().join("d")).unwrap();
        assert!(sparse_copy(&src, &dst, 5).is_err());
    }
}
