//! The leftover checks against real mounts (tmpfs), as root: a mount left at the target or in
//! the staging directory is reported, and a mounted directory is never deleted.

use std::path::{Path, PathBuf};
use std::process::Command;

use cinder_csi_sanity::paths;

fn require_root() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let uid = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap();
    assert_eq!(uid, "0", "this test mounts tmpfs and must run as root");
}

/// A tmpfs mounted for the test, unmounted on drop (even when the test fails).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, options: &str) -> Self {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "sanity-test"])
            .arg(at)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount tmpfs at {}", at.display());
        Tmpfs(at.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_mount_left_at_the_target_is_reported_and_never_deleted() {
    require_root();
    let root = tempfile::tempdir().unwrap();
    let mount_dir = root.path().join("mount");
    paths::create(&mount_dir).unwrap();
    let target = mount_dir.join("target");
    std::fs::create_dir(&target).unwrap();
    let m = Tmpfs::mount(&target, "size=1m");
    std::fs::write(target.join("data"), b"precious").unwrap();

    assert_eq!(paths::mount_state(&target).unwrap(), Some(false));
    assert!(paths::check_removed(&target)
        .unwrap_err()
        .contains("still a mount point"));
    let e = paths::remove(&mount_dir).unwrap_err();
    assert!(
        e.contains("left mounts behind") && e.contains("tmpfs"),
        "{e}"
    );
    assert_eq!(
        std::fs::read(target.join("data")).unwrap(),
        b"precious",
        "data on a mount is never deleted"
    );

    drop(m);
    std::fs::remove_dir(&target).unwrap();
    paths::remove(&mount_dir).unwrap();
}

#[test]
fn a_read_only_mount_and_a_mounted_staging_directory_are_seen() {
    require_root();
    let root = tempfile::tempdir().unwrap();
    let staging = root.path().join("staging");
    paths::create(&staging).unwrap();
    {
        let _m = Tmpfs::mount(&staging, "size=1m,ro");
        assert_eq!(paths::mount_state(&staging).unwrap(), Some(true));
        assert!(paths::check_unstaged(&staging)
            .unwrap_err()
            .contains("still mounted"));
    }
    paths::check_unstaged(&staging).unwrap();
    paths::remove(&staging).unwrap();
}
