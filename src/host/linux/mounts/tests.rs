use super::*;
use std::path::Path;

use nix::mount::{MntFlags, MsFlags};

use super::super::beneath::Beneath;
use super::super::mountinfo;
use crate::host::HostError;

/// A tmpfs mounted on a fresh directory, detached when dropped (a failed test too).
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    /// Root only: `None` otherwise.
    fn new() -> Option<Self> {
        if !nix::unistd::geteuid().is_root() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let none: Option<&str> = None;
        nix::mount::mount(
            Some("tmpfs"),
            dir.path(),
            Some("tmpfs"),
            MsFlags::empty(),
            none,
        )
        .unwrap();
        Some(Self(dir))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(self.0.path(), MntFlags::MNT_DETACH);
    }
}

#[test]
fn a_mount_held_for_a_moment_is_unmounted() {
    let Some(dir) = Tmpfs::new() else { return };
    let file = std::fs::File::create(dir.path().join("held")).unwrap();
    // Released while unmount retries, as a spawned tool's copy of a descriptor is at its exec.
    let release = std::thread::spawn(move || {
        std::thread::sleep(BUSY_PAUSE * 2);
        drop(file);
    });
    let r = unmount(&Beneath::none(), dir.path(), false);
    release.join().unwrap();
    r.unwrap();
    assert!(mountinfo::find(dir.path()).unwrap().is_none());
}

#[test]
fn a_mount_in_use_is_busy_and_stays_mounted() {
    let Some(dir) = Tmpfs::new() else { return };
    let file = std::fs::File::create(dir.path().join("held")).unwrap();
    let r = unmount(&Beneath::none(), dir.path(), false);
    assert!(matches!(r, Err(HostError::Busy { .. })), "{r:?}");
    assert!(mountinfo::find(dir.path()).unwrap().is_some());
    drop(file);
    unmount(&Beneath::none(), dir.path(), false).unwrap();
}

#[test]
fn read_only_after_errors_in_both_forms() {
    // Seen on Linux 6.18 after a journal write failed (tests/node/failures.rs).
    assert!(stopped_after_errors(
        "rw,relatime",
        "rw,errors=remount-ro,emergency_ro"
    ));
    assert!(stopped_after_errors("rw,relatime", "ro,errors=remount-ro"));
    assert!(!stopped_after_errors("rw,relatime", "rw,errors=remount-ro"));
    // Mounted read-only on purpose.
    assert!(!stopped_after_errors("ro,relatime", "ro"));
}
