//! Upstream's fallback when no by-id link names a volume (Hyper-V, some SCSI setups): the
//! metadata service's `devices[]` gives the disk's bus and address by serial (the Cinder volume
//! id), and `/dev/disk/by-path/*-<bus>-<address>` names it; exactly one match is taken. A link
//! found so is remembered per volume, so later lookups (publish, stats, expand) find the same
//! disk without asking the metadata service again.

use std::collections::HashMap;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The `(bus, address)` the metadata service gives the disk whose serial is the volume id.
/// Called on a blocking thread (the node's host work runs on one).
pub type AddressOf = Arc<dyn Fn(&str) -> Option<(String, String)> + Send + Sync>;

/// Where udev links disks by bus path.
pub const BY_PATH_DIR: &str = "/dev/disk/by-path";

pub struct ByPath {
    dir: PathBuf,
    address_of: AddressOf,
    /// Volume id → by-path link name found for it.
    known: Mutex<HashMap<String, String>>,
}

impl ByPath {
    pub fn new(dir: impl Into<PathBuf>, address_of: AddressOf) -> Self {
        Self {
            dir: dir.into(),
            address_of,
            known: Mutex::new(HashMap::new()),
        }
    }

    /// The disk of a link found earlier for the volume, if it still names a block device.
    pub fn known(&self, volume_id: &str) -> Option<PathBuf> {
        let name = self.known.lock().ok()?.get(volume_id).cloned()?;
        block_device(&self.dir.join(name))
    }

    /// Ask the metadata service for the volume's bus address and find its one by-path link.
    pub fn resolve(&self, volume_id: &str) -> Option<PathBuf> {
        let (bus, address) = (self.address_of)(volume_id)?;
        let suffix = format!("-{bus}-{address}");
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .ok()?
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(&suffix))
            .collect();
        if names.len() != 1 {
            tracing::warn!(
                volume_id, bus, address, found = ?names,
                "the metadata's bus address names no single disk under {}", self.dir.display()
            );
            return None;
        }
        let name = names.remove(0);
        let dev = block_device(&self.dir.join(&name))?;
        tracing::info!(volume_id, link = %name, device = %dev.display(), "disk found by its bus address (metadata devices[])");
        if let Ok(mut known) = self.known.lock() {
            known.insert(volume_id.to_string(), name);
        }
        Some(dev)
    }
}

fn block_device(link: &Path) -> Option<PathBuf> {
    let dev = std::fs::canonicalize(link).ok()?;
    std::fs::metadata(&dev)
        .ok()?
        .file_type()
        .is_block_device()
        .then_some(dev)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// Any block device of this machine (the links only need to resolve to one).
    fn some_block_device() -> PathBuf {
        std::fs::read_dir("/sys/block")
            .unwrap()
            .flatten()
            .map(|e| Path::new("/dev").join(e.file_name()))
            .find(|p| block_device(p).is_some())
            .expect("a block device in /dev")
    }

    fn by_path(dir: &Path, answer: Option<(&str, &str)>) -> ByPath {
        let answer = answer.map(|(b, a)| (b.to_string(), a.to_string()));
        ByPath::new(dir, Arc::new(move |_: &str| answer.clone()))
    }

    #[test]
    fn one_link_with_the_address_is_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let dev = some_block_device();
        symlink(&dev, dir.path().join("pci-0000:00:04.0-scsi-0:0:0:1")).unwrap();
        symlink(&dev, dir.path().join("pci-0000:00:04.0-scsi-0:0:0:2")).unwrap();
        let b = by_path(dir.path(), Some(("scsi", "0:0:0:1")));
        assert_eq!(b.known("vol"), None);
        assert_eq!(b.resolve("vol"), Some(std::fs::canonicalize(&dev).unwrap()));
        assert_eq!(b.known("vol"), Some(std::fs::canonicalize(&dev).unwrap()));
        assert_eq!(b.known("other"), None);
    }

    #[test]
    fn no_answer_no_link_or_several_links_find_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let dev = some_block_device();
        assert_eq!(by_path(dir.path(), None).resolve("vol"), None);
        assert_eq!(
            by_path(dir.path(), Some(("scsi", "0:0:0:1"))).resolve("vol"),
            None
        );
        symlink(&dev, dir.path().join("a-scsi-0:0:0:1")).unwrap();
        symlink(&dev, dir.path().join("b-scsi-0:0:0:1")).unwrap();
        assert_eq!(
            by_path(dir.path(), Some(("scsi", "0:0:0:1"))).resolve("vol"),
            None
        );
        // A link to something that is not a block device.
        std::fs::write(dir.path().join("file"), b"").unwrap();
        symlink(
            dir.path().join("file"),
            dir.path().join("c-pci-0000:00:05.0"),
        )
        .unwrap();
        assert_eq!(
            by_path(dir.path(), Some(("pci", "0000:00:05.0"))).resolve("vol"),
            None
        );
    }
}
