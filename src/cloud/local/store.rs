//! The state directory: where each object's data file and JSON record live, and durable
//! record writes (temp file + fsync + rename + fsync of the directory), so a crash leaves
//! either the old or the new record, never a torn one.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::cloud::CopyKind;

/// Object kinds with a directory of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Volume,
    Snapshot,
    Backup,
    /// Records only: a group snapshot's data are its member snapshots.
    GroupSnapshot,
}

impl From<CopyKind> for Kind {
    fn from(k: CopyKind) -> Self {
        match k {
            CopyKind::Snapshot => Self::Snapshot,
            CopyKind::Backup => Self::Backup,
        }
    }
}

impl Kind {
    fn dir_name(self) -> &'static str {
        match self {
            Self::Volume => "volumes",
            Self::Snapshot => "snapshots",
            Self::Backup => "backups",
            Self::GroupSnapshot => "group-snapshots",
        }
    }
}

/// Suffix of files being written; a crash can leave them behind, startup removes them.
pub const TMP_SUFFIX: &str = ".tmp";

/// Paths inside DIR:
/// `volumes/<id>.{json,img}`, `snapshots/<id>.{json,img}`, `backups/<id>.{json,img}`,
/// `group-snapshots/<id>.json`, `by-id/<server>/virtio-<id[:20]>` → `/dev/loopN` (one directory
/// per server, so a node sees only the disks attached to it), `nodes/<node id>`,
/// `frozen.json` (while a group snapshot holds filesystems frozen), `.lock`.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// `root` must be absolute and canonical (loop device backing paths are compared to it).
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn dir(&self, kind: Kind) -> PathBuf {
        self.root.join(kind.dir_name())
    }

    pub fn record(&self, kind: Kind, id: &str) -> PathBuf {
        self.dir(kind).join(format!("{id}.json"))
    }

    pub fn data(&self, kind: Kind, id: &str) -> PathBuf {
        self.dir(kind).join(format!("{id}.img"))
    }

    /// Where a copy is written before it is renamed into place.
    pub fn data_tmp(&self, kind: Kind, id: &str) -> PathBuf {
        self.dir(kind).join(format!("{id}.img{TMP_SUFFIX}"))
    }

    /// Holds one directory per server.
    pub fn by_id_root(&self) -> PathBuf {
        self.root.join("by-id")
    }

    /// The disks attached to `server`, as its /dev/disk/by-id. `server` must be a valid node
    /// id (no `/`, not `.` or `..`): callers check it before anything is written.
    pub fn by_id_dir(&self, server: &str) -> PathBuf {
        self.by_id_root().join(server)
    }

    /// The link the node side looks for: `virtio-` + the first 20 characters of the id, as a
    /// virtio disk's serial appears under /dev/disk/by-id.
    pub fn by_id_link(&self, server: &str, volume_id: &str) -> PathBuf {
        self.by_id_dir(server).join(link_name(volume_id))
    }

    pub fn nodes_dir(&self) -> PathBuf {
        self.root.join("nodes")
    }

    pub fn lock_file(&self) -> PathBuf {
        self.root.join(".lock")
    }

    /// The filesystems a group snapshot holds frozen, while it does (see freeze.rs).
    pub fn frozen_record(&self) -> PathBuf {
        self.root.join("frozen.json")
    }

    /// Create every directory (idempotent).
    pub fn create_dirs(&self) -> io::Result<()> {
        for d in [
            self.dir(Kind::Volume),
            self.dir(Kind::Snapshot),
            self.dir(Kind::Backup),
            self.dir(Kind::GroupSnapshot),
            self.by_id_root(),
            self.nodes_dir(),
        ] {
            std::fs::create_dir_all(&d)?;
        }
        Ok(())
    }
}

pub fn link_name(volume_id: &str) -> String {
    let short: String = volume_id.chars().take(20).collect();
    format!("virtio-{short}")
}

/// fsync a directory so a rename or unlink in it survives a crash.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Write `bytes` to `path` atomically and durably.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no parent"))?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(TMP_SUFFIX);
    let tmp = PathBuf::from(tmp);
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    sync_dir(dir)
}

pub fn write_record<T: Serialize>(path: &Path, record: &T) -> io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Remove a file durably; a missing file is fine.
pub fn remove_durable(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    match path.parent() {
        Some(dir) => sync_dir(dir),
        None => Ok(()),
    }
}

/// Every record in `dir`. Leftover temp files are removed; a record that does not parse is
/// an error naming the file (it was not written by us: never guess and drop data).
pub fn load_records<T: DeserializeOwned>(dir: &Path) -> io::Result<Vec<T>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.ends_with(TMP_SUFFIX) {
            tracing::info!(path = %path.display(), "removing a temp file left by an interrupted write");
            std::fs::remove_file(&path)?;
            continue;
        }
        if !name.ends_with(".json") {
            continue;
        }
        let bytes = std::fs::read(&path)?;
        let record = serde_json::from_slice(&bytes).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not a valid record: {e}", path.display()),
            )
        })?;
        out.push(record);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_cleans_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        write_atomic(&p, b"{\"x\":1}").unwrap();
        write_atomic(&p, b"{\"x\":2}").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{\"x\":2}");
        assert!(!dir.path().join("a.json.tmp").exists());
    }

    #[test]
    fn load_skips_temp_files_and_rejects_garbage() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.json"), b"{\"x\":1}").unwrap();
        std::fs::write(dir.path().join("b.json.tmp"), b"{\"x\":").unwrap();
        std::fs::write(dir.path().join("a.img"), b"").unwrap();
        #[derive(serde::Deserialize)]
        struct X {
            x: u32,
        }
        let v: Vec<X> = load_records(dir.path()).unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].x, 1);
        assert!(!dir.path().join("b.json.tmp").exists());
        std::fs::write(dir.path().join("c.json"), b"nope").unwrap();
        let err = load_records::<X>(dir.path()).err().unwrap();
        assert!(err.to_string().contains("c.json"), "{err}");
    }

    #[test]
    fn link_names_use_twenty_characters() {
        assert_eq!(
            link_name("0123456789abcdefghij-rest"),
            "virtio-0123456789abcdefghij"
        );
        assert_eq!(link_name("short"), "virtio-short");
    }
}
