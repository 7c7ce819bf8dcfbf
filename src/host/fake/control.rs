//! `FakeHost`: the handle tests hold, and what they set up (devices, failures, broken mounts)
//! and look at (calls, content, mounts) with.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::state::{FakeDevice, State};
use crate::host::{Content, DevId, Host, NodePath};

#[derive(Clone, Default)]
pub struct FakeHost {
    state: Arc<Mutex<State>>,
}

/// The node path's steps as the provided methods compose the fake's roles.
impl NodePath for FakeHost {}

impl FakeHost {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn host(&self) -> Host {
        Host::of(Arc::new(self.clone()))
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
