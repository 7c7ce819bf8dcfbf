//! The fake's filesystems: formatting only a blank device (else it panics), growth to the
//! device's size, usage from the device.

use std::path::Path;

use super::control::FakeHost;
use super::state::{err, State};
use crate::host::{
    libc_errno, Content, Filesystems, FormatOptions, FsKind, HostError, HostResult, Usage,
};

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
