//! The one leak check of what a test leaves on this machine below its own directory (mounts
//! and loop devices; what it leaves in the test cloud: `faults_cloud::leaks`), and the one
//! cleanup that rigs run on drop. Only paths below the directory given are looked at: tests
//! run beside each other.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cinder_csi::cloud::local::loopdev;

/// Mount points at or below `root`, in mount order. Never panics (drops call it).
pub fn mounts_below(root: &Path) -> Vec<PathBuf> {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(p.replace("\\040", " ")))
        .filter(|p| p.starts_with(&root))
        .collect()
}

/// Loop devices bound to files below `root` (deleted files included). Never panics.
pub fn loops_below(root: &Path) -> Vec<loopdev::LoopDevice> {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    loopdev::backed_below(&root).unwrap_or_default()
}

/// `list()` once it is empty, or as it still is after 5 s. The kernel frees a loop device
/// marked autoclear (a `losetup -d` of a busy device, or our mounts') at its last close, and
/// that close can be another process's, a moment after ours. Listing with `losetup -a` (which
/// opens every device) from tests running beside each other made exactly that happen.
pub fn settled<T>(list: impl Fn() -> Vec<T>) -> Vec<T> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = list();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Nothing mounted and no loop device left below `root`.
#[track_caller]
pub fn assert_none_below(root: &Path) {
    let mounts = mounts_below(root);
    assert!(mounts.is_empty(), "mounts left: {mounts:?}");
    let left: Vec<PathBuf> = settled(|| loops_below(root))
        .iter()
        .map(loopdev::LoopDevice::path)
        .collect();
    assert!(left.is_empty(), "loop devices left: {left:?}");
}

/// Unmount everything below `root`, deepest first (lazily only when a plain unmount fails:
/// the test may have broken it), then detach the loop devices over its files. Never panics.
pub fn clean_below(root: &Path) {
    for m in mounts_below(root).into_iter().rev() {
        if nix::mount::umount2(&m, nix::mount::MntFlags::empty()).is_err() {
            let _ = nix::mount::umount2(&m, nix::mount::MntFlags::MNT_DETACH);
        }
    }
    for d in loops_below(root) {
        let _ = d.detach();
    }
}
