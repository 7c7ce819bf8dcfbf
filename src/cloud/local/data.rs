//! Data files: a blank sparse file, or a sparse copy of another object's file, written under
//! a temp name, fsynced and renamed into place, so `<id>.img` exists only when complete.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::copy::sparse_copy;
use super::store::{self, Kind, Layout};
use crate::cloud::GIB;

/// What to fill a new data file with.
pub struct Source<'a> {
    pub file: &'a Path,
    /// An attached volume's loop device, flushed first so raw-block writes still in its
    /// page cache reach the file.
    pub device: Option<&'a Path>,
}

/// Create `<kind>/<id>.img` of at least `min_len` bytes (a copy is as long as its source
/// if that is longer). Returns the final length.
pub fn create(
    layout: &Layout,
    kind: Kind,
    id: &str,
    source: Option<Source<'_>>,
    min_len: u64,
) -> io::Result<u64> {
    let tmp = layout.data_tmp(kind, id);
    let result = fill(&tmp, source, min_len);
    let len = match result {
        Ok(len) => len,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    let dst = layout.data(kind, id);
    std::fs::rename(&tmp, &dst)?;
    store::sync_dir(&layout.dir(kind))?;
    Ok(len)
}

fn fill(tmp: &Path, source: Option<Source<'_>>, min_len: u64) -> io::Result<u64> {
    let dst = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(tmp)?;
    let len = match source {
        None => {
            dst.set_len(min_len)?;
            min_len
        }
        Some(src) => {
            if let Some(dev) = src.device {
                flush_device(dev);
            }
            let file = File::open(src.file)?;
            let len = file.metadata()?.len().max(min_len);
            let method = sparse_copy(&file, &dst, len)?;
            tracing::debug!(from = %src.file.display(), to = %tmp.display(), ?method, "copied");
            len
        }
    };
    dst.sync_all()?;
    Ok(len)
}

/// Best effort: a device that cannot be flushed still has a crash-consistent file.
fn flush_device(dev: &Path) {
    match File::open(dev).and_then(|f| f.sync_all()) {
        Ok(()) => {}
        Err(e) => tracing::warn!(device = %dev.display(), error = %e, "cannot flush before copy"),
    }
}

/// Whole GiB covering `len` bytes.
pub fn gib_of(len: u64) -> u64 {
    len.div_ceil(GIB)
}
