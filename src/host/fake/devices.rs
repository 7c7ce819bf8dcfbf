//! The fake's block devices: found by volume id at once, resized by rescan.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::control::FakeHost;
use super::state::err;
use crate::host::{libc_errno, DevId, Devices, HostError, HostResult};

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
