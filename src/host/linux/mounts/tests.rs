use super::*;
use std::path::Path;

use nix::mount::{MntFlags, MsFlags};

use super::super::beneath::Beneath;
use super::super::mountinfo;
use super::super::statmount;
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

/// statmount(2)'s answer is the mount table's: binds of the whole filesystem and of a
/// subtree share it, a bind of another filesystem does not. On Linux >= 6.10 it must answer
/// (this machine runs 6.18); before, `None` sends the caller to the table.
#[test]
fn statmount_and_the_mount_table_agree_on_what_shares_a_mount() {
    let (Some(a), Some(other)) = (Tmpfs::new(), Tmpfs::new()) else {
        return;
    };
    std::fs::create_dir(a.path().join("sub")).unwrap();
    let binds = tempfile::tempdir().unwrap();
    let to = |n: &str| {
        let d = binds.path().join(n);
        std::fs::create_dir(&d).unwrap();
        d
    };
    let (whole, sub, foreign) = (to("whole"), to("sub"), to("foreign"));
    let none: Option<&str> = None;
    for (from, onto) in [
        (a.path().to_path_buf(), &whole),
        (a.path().join("sub"), &sub),
        (other.path().to_path_buf(), &foreign),
    ] {
        nix::mount::mount(Some(&from), onto, none, MsFlags::MS_BIND, none).unwrap();
    }
    let real = std::fs::canonicalize(a.path()).unwrap();
    let fd = rustix::fs::open(&real, rustix::fs::OFlags::PATH, rustix::fs::Mode::empty()).unwrap();
    let mut table = mountinfo::sharing(&real).unwrap();
    let by_id = statmount::sharing(&fd, &real);
    for d in [&foreign, &sub, &whole] {
        let _ = nix::mount::umount2(d, MntFlags::MNT_DETACH);
    }
    table.sort();
    let real_of = |p: &Path| std::fs::canonicalize(p).unwrap().display().to_string();
    assert_eq!(table, {
        let mut v = vec![real_of(&whole), real_of(&sub)];
        v.sort();
        v
    });
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut nums = release
        .split(['.', '-'])
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let new_kernel = (nums.next().unwrap_or(0), nums.next().unwrap_or(0)) >= (6, 10);
    match by_id {
        Some(mut by_id) => {
            by_id.sort();
            assert_eq!(by_id, table);
        }
        None => assert!(
            !new_kernel,
            "Linux {} has statmount but it did not answer",
            release.trim()
        ),
    }
}
