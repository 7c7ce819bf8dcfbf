//! The fake host's state: a tree of paths with stacked mounts, the attached devices with their
//! content, injected failures and the call log, with the lookups the three roles share.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::host::{Content, DevId, FileKind, HostError, HostResult, PathInfo};

const ROOT_DEV: DevId = DevId { major: 0, minor: 1 };
const DEVTMPFS: DevId = DevId { major: 0, minor: 6 };

#[derive(Debug, Clone)]
pub(super) struct Mounted {
    pub(super) kind: FileKind,
    pub(super) dev: DevId,
    pub(super) rdev: DevId,
    pub(super) ino: u64,
    pub(super) read_only: bool,
    pub(super) device: Option<PathBuf>,
}

#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) kind: FileKind,
    pub(super) ino: u64,
    pub(super) mounts: Vec<Mounted>,
}

#[derive(Debug, Clone)]
pub struct FakeDevice {
    pub path: PathBuf,
    pub id: DevId,
    pub size: u64,
    /// Size the device will report after the next rescan.
    pub pending_size: Option<u64>,
    pub content: Content,
}

#[derive(Default)]
pub struct State {
    pub(super) entries: BTreeMap<PathBuf, Entry>,
    pub devices: BTreeMap<String, FakeDevice>,
    pub(super) failures: HashMap<&'static str, i32>,
    pub(super) broken: HashMap<PathBuf, i32>,
    pub read_only_after_errors: BTreeSet<PathBuf>,
    /// Devices whose filesystem a read-only check finds broken (a format killed half-way).
    pub inconsistent: BTreeSet<PathBuf>,
    pub missing_tools: Vec<String>,
    /// Refuse online grow of ext* like a kernel without CAP_SYS_RESOURCE.
    pub deny_online_ext_grow: bool,
    /// Every mutating call, e.g. `format /dev/fake0 ext4`, in order.
    pub calls: Vec<String>,
    next_ino: u64,
}

pub(super) fn err(op: &'static str, path: &Path, errno: i32) -> HostError {
    HostError::io(op, path, std::io::Error::from_raw_os_error(errno))
}

impl State {
    pub(super) fn injected(&mut self, op: &'static str, path: &Path) -> HostResult<()> {
        match self.failures.remove(op) {
            Some(errno) => Err(err(op, path, errno)),
            None => Ok(()),
        }
    }

    pub(super) fn device_by_path(&self, path: &Path) -> Option<&FakeDevice> {
        self.devices.values().find(|d| d.path == path)
    }

    pub(super) fn device_by_path_mut(&mut self, path: &Path) -> Option<&mut FakeDevice> {
        self.devices.values_mut().find(|d| d.path == path)
    }

    pub(super) fn new_entry(&mut self, kind: FileKind) -> Entry {
        self.next_ino += 1;
        Entry {
            kind,
            ino: 1000 + self.next_ino,
            mounts: Vec::new(),
        }
    }

    pub(super) fn info(&self, path: &Path) -> Option<PathInfo> {
        if let Some(d) = self.device_by_path(path) {
            return Some(PathInfo {
                kind: FileKind::Block,
                mount_root: false,
                dev: DEVTMPFS,
                rdev: d.id,
                ino: 10 + u64::from(d.id.minor),
            });
        }
        let e = self.entries.get(path)?;
        Some(match e.mounts.last() {
            Some(m) => PathInfo {
                kind: m.kind,
                mount_root: true,
                dev: m.dev,
                rdev: m.rdev,
                ino: m.ino,
            },
            None => PathInfo {
                kind: e.kind,
                mount_root: false,
                dev: ROOT_DEV,
                rdev: DevId { major: 0, minor: 0 },
                ino: e.ino,
            },
        })
    }

    pub(super) fn record(&mut self, call: String) {
        self.calls.push(call);
    }
}
