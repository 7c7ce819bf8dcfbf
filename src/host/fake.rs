//! In-memory fake of the host port for fast unit tests of the node core: a tree of paths with
//! stacked mounts, block devices with content, one-shot error injection and a call log.
//! Formatting a device that is not blank panics: that is the invariant the core must keep.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::{
    libc_errno, Content, DevId, Devices, FileKind, Filesystems, FormatOptions, FsKind, Host,
    HostError, HostResult, MountSpec, Mounter, PathInfo, PathState, Usage,
};

const ROOT_DEV: DevId = DevId { major: 0, minor: 1 };
const DEVTMPFS: DevId = DevId { major: 0, minor: 6 };

#[derive(Debug, Clone)]
struct Mounted {
    kind: FileKind,
    dev: DevId,
    rdev: DevId,
    ino: u64,
    read_only: bool,
    device: Option<PathBuf>,
}

#[derive(Debug, Clone)]
struct Entry {
    kind: FileKind,
    ino: u64,
    mounts: Vec<Mounted>,
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
    entries: BTreeMap<PathBuf, Entry>,
    pub devices: BTreeMap<String, FakeDevice>,
    failures: HashMap<&'static str, i32>,
    broken: HashMap<PathBuf, i32>,
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

#[derive(Clone, Default)]
pub struct FakeHost {
    state: Arc<Mutex<State>>,
}

fn err(op: &'static str, path: &Path, errno: i32) -> HostError {
    HostError::io(op, path, std::io::Error::from_raw_os_error(errno))
}

impl FakeHost {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn host(&self) -> Host {
        Host {
            mounter: Arc::new(self.clone()),
            devices: Arc::new(self.clone()),
            filesystems: Arc::new(self.clone()),
        }
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Attach a device for `volume_id` holding `content`; returns its path.
    pub fn attach(&self, volume_id: &str, size: u64, content: Content) -> PathBuf {
        let mut s = self.state();
        let n = s.devices.len() as u32;
        let path = PathBuf::from(format!("/dev/fake{n}"));
        s.devices.insert(
            volume_id.to_string(),
            FakeDevice {
                path: path.clone(),
                id: DevId { major: 7, minor: n },
                size,
                pending_size: None,
                content,
            },
        );
        path
    }

    pub fn detach(&self, volume_id: &str) {
        self.state().devices.remove(volume_id);
    }

    /// The next call of `op` (a trait method name) fails with `errno`.
    pub fn fail_next(&self, op: &'static str, errno: i32) {
        self.state().failures.insert(op, errno);
    }

    /// `path` answers every look with `errno` until it is unmounted.
    pub fn break_mount(&self, path: &Path, errno: i32) {
        self.state().broken.insert(path.to_path_buf(), errno);
    }

    pub fn calls(&self) -> Vec<String> {
        self.state().calls.clone()
    }

    pub fn content(&self, volume_id: &str) -> Content {
        self.state().devices[volume_id].content.clone()
    }

    pub fn mount_depth(&self, path: &Path) -> usize {
        self.state().entries.get(path).map_or(0, |e| e.mounts.len())
    }

    pub fn exists(&self, path: &Path) -> bool {
        self.state().entries.contains_key(path)
    }

    /// Whether the top mount at `path` is read-only.
    pub fn is_read_only(&self, path: &Path) -> bool {
        self.state()
            .entries
            .get(path)
            .and_then(|e| e.mounts.last())
            .is_some_and(|m| m.read_only)
    }
}

impl State {
    fn injected(&mut self, op: &'static str, path: &Path) -> HostResult<()> {
        match self.failures.remove(op) {
            Some(errno) => Err(err(op, path, errno)),
            None => Ok(()),
        }
    }

    fn device_by_path(&self, path: &Path) -> Option<&FakeDevice> {
        self.devices.values().find(|d| d.path == path)
    }

    fn device_by_path_mut(&mut self, path: &Path) -> Option<&mut FakeDevice> {
        self.devices.values_mut().find(|d| d.path == path)
    }

    fn new_entry(&mut self, kind: FileKind) -> Entry {
        self.next_ino += 1;
        Entry {
            kind,
            ino: 1000 + self.next_ino,
            mounts: Vec::new(),
        }
    }

    fn info(&self, path: &Path) -> Option<PathInfo> {
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

    fn record(&mut self, call: String) {
        self.calls.push(call);
    }
}

impl Mounter for FakeHost {
    fn inspect(&self, path: &Path) -> HostResult<PathState> {
        let mut s = self.state();
        s.injected("inspect", path)?;
        if let Some(&errno) = s.broken.get(path) {
            return Ok(PathState::Broken { errno });
        }
        Ok(s.info(path).map_or(PathState::Missing, PathState::Present))
    }

    fn mount(&self, device: &Path, target: &Path, spec: &MountSpec) -> HostResult<()> {
        let mut s = self.state();
        s.injected("mount", target)?;
        let d = s
            .device_by_path(device)
            .cloned()
            .ok_or_else(|| err("mount", device, libc_errno::ENOENT))?;
        match d.content {
            Content::Filesystem { kind, .. } if kind == spec.fs => {}
            _ => return Err(err("mount", target, libc_errno::EINVAL)),
        }
        let Some(e) = s
            .entries
            .get_mut(target)
            .filter(|e| e.kind == FileKind::Dir)
        else {
            return Err(err("mount", target, libc_errno::ENOENT));
        };
        e.mounts.push(Mounted {
            kind: FileKind::Dir,
            dev: d.id,
            rdev: DevId { major: 0, minor: 0 },
            ino: 2,
            read_only: spec.read_only || spec.options.iter().any(|o| o == "ro"),
            device: Some(device.to_path_buf()),
        });
        let opts = spec.options.join(",");
        s.record(format!(
            "mount {} {} {} ro={} [{opts}]",
            device.display(),
            target.display(),
            spec.fs,
            spec.read_only
        ));
        Ok(())
    }

    fn bind(&self, source: &Path, target: &Path, read_only: bool) -> HostResult<()> {
        let mut s = self.state();
        s.injected("bind", target)?;
        let src = s
            .info(source)
            .ok_or_else(|| err("bind mount", source, libc_errno::ENOENT))?;
        let device = match src.kind {
            FileKind::Block => Some(source.to_path_buf()),
            _ => s
                .entries
                .get(source)
                .and_then(|e| e.mounts.last())
                .and_then(|m| m.device.clone()),
        };
        let Some(e) = s.entries.get_mut(target) else {
            return Err(err("bind mount", target, libc_errno::ENOENT));
        };
        e.mounts.push(Mounted {
            kind: src.kind,
            dev: src.dev,
            rdev: src.rdev,
            ino: src.ino,
            read_only,
            device,
        });
        s.record(format!(
            "bind {} {} ro={read_only}",
            source.display(),
            target.display()
        ));
        Ok(())
    }

    fn unmount(&self, target: &Path, lazy: bool) -> HostResult<()> {
        let mut s = self.state();
        s.injected("unmount", target)?;
        let popped = s
            .entries
            .get_mut(target)
            .and_then(|e| e.mounts.pop())
            .is_some();
        if !popped {
            return Err(err("umount", target, libc_errno::EINVAL));
        }
        s.broken.remove(target);
        s.record(format!("unmount {} lazy={lazy}", target.display()));
        Ok(())
    }

    fn mounted_device(&self, path: &Path) -> HostResult<Option<PathBuf>> {
        let mut s = self.state();
        s.injected("mounted_device", path)?;
        Ok(s.entries
            .get(path)
            .and_then(|e| e.mounts.last())
            .and_then(|m| m.device.clone()))
    }

    fn mounts_sharing(&self, path: &Path) -> HostResult<Vec<PathBuf>> {
        let s = self.state();
        let device = |p: &Path| {
            s.entries
                .get(p)
                .and_then(|e| e.mounts.last())
                .and_then(|m| m.device.clone())
        };
        let Some(mine) = device(path) else {
            return Ok(Vec::new());
        };
        Ok(s.entries
            .keys()
            .filter(|p| p.as_path() != path && device(p).as_ref() == Some(&mine))
            .cloned()
            .collect())
    }

    fn read_only_after_errors(&self, path: &Path) -> HostResult<bool> {
        Ok(self.state().read_only_after_errors.contains(path))
    }

    fn create_dir(&self, path: &Path) -> HostResult<()> {
        let mut s = self.state();
        s.injected("create_dir", path)?;
        for p in path.ancestors().collect::<Vec<_>>().into_iter().rev() {
            match s.entries.get(p) {
                Some(e) if e.kind != FileKind::Dir => {
                    return Err(err("mkdir", p, 17 /* EEXIST */));
                }
                Some(_) => {}
                None => {
                    let e = s.new_entry(FileKind::Dir);
                    s.entries.insert(p.to_path_buf(), e);
                }
            }
        }
        Ok(())
    }

    fn create_file(&self, path: &Path) -> HostResult<()> {
        if let Some(parent) = path.parent() {
            self.create_dir(parent)?;
        }
        let mut s = self.state();
        s.injected("create_file", path)?;
        if !s.entries.contains_key(path) {
            let e = s.new_entry(FileKind::File);
            s.entries.insert(path.to_path_buf(), e);
        }
        Ok(())
    }

    fn remove(&self, path: &Path) -> HostResult<()> {
        let mut s = self.state();
        s.injected("remove", path)?;
        let Some(e) = s.entries.get(path) else {
            return Ok(());
        };
        if !e.mounts.is_empty() {
            return Err(err("rmdir", path, libc_errno::EBUSY));
        }
        let has_children = s.entries.keys().any(|k| k != path && k.starts_with(path));
        if has_children {
            return Err(err("rmdir", path, libc_errno::ENOTEMPTY));
        }
        s.entries.remove(path);
        s.record(format!("remove {}", path.display()));
        Ok(())
    }
}

impl Devices for FakeHost {
    fn find(&self, volume_id: &str, _deadline: Instant) -> HostResult<PathBuf> {
        let mut s = self.state();
        s.injected("find", Path::new(volume_id))?;
        s.devices
            .get(volume_id)
            .map(|d| d.path.clone())
            .ok_or_else(|| HostError::DeviceNotFound {
                volume_id: volume_id.to_string(),
                dir: PathBuf::from("/fake/by-id"),
                waited: std::time::Duration::ZERO,
            })
    }

    fn lookup(&self, volume_id: &str) -> Option<PathBuf> {
        self.state().devices.get(volume_id).map(|d| d.path.clone())
    }

    fn size(&self, device: &Path) -> HostResult<u64> {
        let mut s = self.state();
        s.injected("size", device)?;
        // A block target bind-mounted from a device opens that device.
        let bound = s
            .entries
            .get(device)
            .and_then(|e| e.mounts.last())
            .and_then(|m| m.device.clone());
        s.device_by_path(bound.as_deref().unwrap_or(device))
            .map(|d| d.size)
            .ok_or_else(|| err("open", device, libc_errno::ENOENT))
    }

    fn rescan(&self, device: &Path, _deadline: Instant) -> HostResult<()> {
        let mut s = self.state();
        s.injected("rescan", device)?;
        if let Some(d) = s.device_by_path_mut(device) {
            if let Some(n) = d.pending_size.take() {
                d.size = n;
            }
        }
        s.record(format!("rescan {}", device.display()));
        Ok(())
    }

    fn flush(&self, device: &Path) -> HostResult<()> {
        let mut s = self.state();
        s.injected("flush", device)?;
        s.record(format!("flush {}", device.display()));
        Ok(())
    }

    fn exists(&self, id: DevId) -> bool {
        self.state().devices.values().any(|d| d.id == id)
    }

    fn by_id_dir(&self) -> &Path {
        Path::new("/fake/by-id")
    }
}

impl Filesystems for FakeHost {
    fn probe(&self, device: &Path) -> HostResult<Content> {
        let mut s = self.state();
        s.injected("probe", device)?;
        s.device_by_path(device)
            .map(|d| d.content.clone())
            .ok_or_else(|| err("open", device, libc_errno::ENOENT))
    }

    fn format(&self, device: &Path, fs: FsKind, opts: &FormatOptions) -> HostResult<()> {
        let mut s = self.state();
        s.injected("format", device)?;
        let d = s
            .device_by_path_mut(device)
            .ok_or_else(|| err("open", device, libc_errno::ENOENT))?;
        if !opts.overwrite_interrupted {
            assert_eq!(
                d.content,
                Content::Blank,
                "the core formatted a device that is not blank: {}",
                device.display()
            );
        }
        d.content = Content::Filesystem {
            kind: fs,
            size_bytes: d.size,
        };
        s.record(format!("format {} {fs} {opts:?}", device.display()));
        Ok(())
    }

    fn grow_offline(&self, device: &Path, fs: FsKind) -> HostResult<()> {
        let mut s = self.state();
        s.injected("grow_offline", device)?;
        grow(&mut s, device)?;
        s.record(format!("grow_offline {} {fs}", device.display()));
        Ok(())
    }

    fn grow_online(&self, device: &Path, mount_point: &Path, fs: FsKind) -> HostResult<()> {
        let mut s = self.state();
        s.injected("grow_online", device)?;
        // ext*, the filesystems that grow offline: online they need CAP_SYS_RESOURCE.
        if fs.ops().grows_offline() && s.deny_online_ext_grow {
            return Err(HostError::NotPermitted {
                op: "resize2fs (online grow)",
                path: mount_point.to_path_buf(),
                detail: "needs CAP_SYS_RESOURCE".into(),
            });
        }
        grow(&mut s, device)?;
        s.record(format!(
            "grow_online {} {} {fs}",
            device.display(),
            mount_point.display()
        ));
        Ok(())
    }

    fn usage(&self, path: &Path) -> HostResult<Usage> {
        let mut s = self.state();
        s.injected("usage", path)?;
        let top = s.entries.get(path).and_then(|e| e.mounts.last()).cloned();
        let Some(m) = top else {
            return Ok(Usage::default());
        };
        let size = m
            .device
            .as_deref()
            .and_then(|d| s.device_by_path(d))
            .map_or(0, |d| match d.content {
                Content::Filesystem { size_bytes, .. } => size_bytes,
                _ => d.size,
            });
        Ok(Usage {
            total_bytes: size,
            available_bytes: size / 2,
            used_bytes: size / 2,
            total_inodes: 1000,
            free_inodes: 900,
            used_inodes: 100,
            read_only: m.read_only || s.read_only_after_errors.contains(path),
        })
    }

    fn is_consistent(&self, device: &Path, _fs: FsKind) -> HostResult<bool> {
        let mut s = self.state();
        s.injected("is_consistent", device)?;
        s.record(format!("is_consistent {}", device.display()));
        Ok(!s.inconsistent.contains(device))
    }

    fn missing_tools(&self, fs: FsKind) -> Vec<String> {
        let s = self.state();
        s.missing_tools
            .iter()
            .filter(|t| t.contains(fs.as_str()))
            .cloned()
            .collect()
    }
}

fn grow(s: &mut State, device: &Path) -> HostResult<()> {
    let d = s
        .device_by_path_mut(device)
        .ok_or_else(|| err("open", device, libc_errno::ENOENT))?;
    if let Content::Filesystem { size_bytes, .. } = &mut d.content {
        *size_bytes = d.size;
    }
    Ok(())
}
