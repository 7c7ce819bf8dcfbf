//! The fake's mount table and path operations.

use std::path::{Path, PathBuf};

use super::control::FakeHost;
use super::state::{err, Mounted};
use crate::host::{
    libc_errno, Content, DevId, FileKind, HostResult, MountSpec, Mounter, PathState,
};

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
