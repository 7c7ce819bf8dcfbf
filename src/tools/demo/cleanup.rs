//! What the demo may leave behind, and removing it. Only things inside the demo's own work
//! directory are ever touched: mounts under it, loop devices over files in it, the directory.

use std::path::{Path, PathBuf};

use nix::mount::{umount2, MntFlags};

use crate::cloud::local::loopdev;

/// Leftovers under a directory.
#[derive(Debug, Default)]
pub struct Leftovers {
    pub mounts: Vec<PathBuf>,
    pub loop_devices: Vec<PathBuf>,
    pub files: Vec<PathBuf>,
}

impl Leftovers {
    pub fn is_empty(&self) -> bool {
        self.mounts.is_empty() && self.loop_devices.is_empty() && self.files.is_empty()
    }

    pub fn describe(&self) -> String {
        let list = |v: &[PathBuf]| {
            v.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !self.mounts.is_empty() {
            parts.push(format!("mounts: {}", list(&self.mounts)));
        }
        if !self.loop_devices.is_empty() {
            parts.push(format!("loop devices: {}", list(&self.loop_devices)));
        }
        if !self.files.is_empty() {
            parts.push(format!("volume files: {}", list(&self.files)));
        }
        parts.join("; ")
    }
}

/// Mount points under `dir`, deepest first (`/proc/self/mountinfo` field 5, octal-unescaped).
pub fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut out: Vec<PathBuf> = text
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(unescape(p)))
        .filter(|p| p.starts_with(dir))
        .collect();
    out.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    out.dedup();
    out
}

fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            if let Ok(n) = u8::from_str_radix(&s[i + 1..i + 4], 8) {
                out.push(n);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Data files of volumes, snapshots and backups under the state directory.
fn data_files(state: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in ["volumes", "snapshots", "backups"] {
        if let Ok(rd) = std::fs::read_dir(state.join(sub)) {
            out.extend(
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "img")),
            );
        }
    }
    out
}

pub fn find(dir: &Path, state: &Path) -> Leftovers {
    Leftovers {
        mounts: mounts_under(dir),
        loop_devices: loopdev::backed_below(dir)
            .unwrap_or_default()
            .iter()
            .map(loopdev::LoopDevice::path)
            .collect(),
        files: data_files(state),
    }
}

/// Unmount, unbind and remove everything under `dir`, then `dir` itself. Best effort; returns
/// what could not be removed.
pub fn force(dir: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for m in mounts_under(dir) {
        if let Err(e) = umount2(&m, MntFlags::MNT_DETACH) {
            problems.push(format!("umount {}: {e}", m.display()));
        }
    }
    for d in loopdev::backed_below(dir).unwrap_or_default() {
        if let Err(e) = d.detach() {
            problems.push(format!("detach {}: {e}", d.path().display()));
        }
    }
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => problems.push(format!("remove {}: {e}", dir.display())),
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescapes_mountinfo_paths() {
        assert_eq!(unescape(r"/a\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape(r"/end\"), r"/end\");
    }
}
