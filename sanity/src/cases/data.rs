//! Data through the published target: a file in the mounted directory, or the first bytes of
//! the block device. All file I/O runs on the blocking pool.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use crate::check::Stop;
use crate::config::AccessType;
use crate::context::Ctx;
use crate::fail;

const DATA_FILE: &str = "sanity-data";

/// Write `payload` through the published target: a file in the mounted directory, or the
/// first bytes of the block device. Flushed to stable storage before returning.
pub async fn write_data(ctx: &Ctx<'_>, payload: Vec<u8>) -> Result<(), Stop> {
    let (target, access) = (ctx.cfg.target_path(), ctx.cfg.access_type);
    blocking(move || {
        let mut f = match access {
            AccessType::Mount => std::fs::File::create(target.join(DATA_FILE))?,
            AccessType::Block => std::fs::OpenOptions::new().write(true).open(&target)?,
        };
        f.write_all(&payload)?;
        f.sync_all()
    })
    .await
    .map_err(|e| {
        fail!(
            "cannot write data through {}: {e}",
            ctx.cfg.target_path().display()
        )
    })
}

/// Read back `len` bytes written by [`write_data`].
pub async fn read_data(ctx: &Ctx<'_>, len: usize) -> Result<Vec<u8>, Stop> {
    let (target, access) = (ctx.cfg.target_path(), ctx.cfg.access_type);
    blocking(move || {
        let mut f = match access {
            AccessType::Mount => std::fs::File::open(target.join(DATA_FILE))?,
            AccessType::Block => std::fs::File::open(&target)?,
        };
        f.seek(SeekFrom::Start(0))?;
        let mut buf = vec![0u8; len];
        f.read_exact(&mut buf)?;
        Ok(buf)
    })
    .await
    .map_err(|e| {
        fail!(
            "cannot read data back through {}: {e}",
            ctx.cfg.target_path().display()
        )
    })
}

/// Try to write through the target; `Ok(true)` when the kernel refused with EROFS.
pub async fn write_refused_read_only(target: PathBuf, access: AccessType) -> Result<bool, String> {
    let res = blocking(move || match access {
        AccessType::Mount => std::fs::File::create(target.join("sanity-ro-probe")).map(|_| ()),
        AccessType::Block => std::fs::OpenOptions::new()
            .write(true)
            .open(&target)
            .map(|_| ()),
    })
    .await;
    match res {
        Ok(()) => Ok(false),
        Err(e) if e.kind() == std::io::ErrorKind::ReadOnlyFilesystem => Ok(true),
        Err(e) => Err(e.to_string()),
    }
}

/// A payload that identifies the volume and the moment it was written.
pub fn payload(tag: &str) -> Vec<u8> {
    let mut p = format!("cinder-csi-sanity {tag} {}\n", uuid::Uuid::new_v4()).into_bytes();
    p.resize(512, b'.');
    p
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(format!("I/O task failed: {e}"))))
}
