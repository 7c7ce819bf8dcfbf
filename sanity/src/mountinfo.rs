//! `/proc/self/mountinfo`: which paths are mount points, so node cases can check that the driver
//! unmounted what it mounted (a directory that merely exists is not enough).

use std::path::{Path, PathBuf};

/// One line of mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub mount_point: PathBuf,
    /// Per-mount options (`rw`, `ro`, `nosuid`, ...).
    pub options: Vec<String>,
    pub fstype: String,
    pub source: String,
    /// Per-superblock options.
    pub super_options: Vec<String>,
}

impl Mount {
    pub fn read_only(&self) -> bool {
        self.options.iter().any(|o| o == "ro") || self.super_options.iter().any(|o| o == "ro")
    }
}

/// Undo the kernel's octal escapes (`\040` for space, `\011`, `\012`, `\134`).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parse mountinfo text; malformed lines are ignored.
pub fn parse(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let l: Vec<&str> = left.split(' ').collect();
            let r: Vec<&str> = right.split(' ').collect();
            if l.len() < 6 || r.len() < 3 {
                return None;
            }
            Some(Mount {
                mount_point: PathBuf::from(unescape(l[4])),
                options: l[5].split(',').map(str::to_string).collect(),
                fstype: r[0].to_string(),
                source: unescape(r[1]),
                super_options: r[2].split(',').map(str::to_string).collect(),
            })
        })
        .collect()
}

/// The mounts of this process's mount namespace.
pub fn read() -> Result<Vec<Mount>, String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| parse(&t))
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))
}

/// `p` with its longest existing ancestor resolved, so it compares equal to what the kernel
/// reports even when part of it is a symlink or does not exist (any more).
pub fn canonical(p: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut cur = p.to_path_buf();
    loop {
        if let Ok(c) = std::fs::canonicalize(&cur) {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (cur.file_name().map(|f| f.to_os_string()), cur.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                cur = parent.to_path_buf();
            }
            _ => return p.to_path_buf(),
        }
    }
}

/// Mounts whose mount point is `p` (stacked mounts give several).
pub fn mounts_at(mounts: &[Mount], p: &Path) -> Vec<Mount> {
    let p = canonical(p);
    mounts
        .iter()
        .filter(|m| m.mount_point == p)
        .cloned()
        .collect()
}

/// Mounts at `p` or anywhere below it.
pub fn mounts_under(mounts: &[Mount], p: &Path) -> Vec<Mount> {
    let p = canonical(p);
    mounts
        .iter()
        .filter(|m| m.mount_point.starts_with(&p))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
300 22 7:3 / /var/lib/kubelet/plugins/x/staging rw,relatime shared:200 - ext4 /dev/loop3 rw
301 22 7:3 / /var/lib/kubelet/pods/a\\040b/target ro,relatime shared:200 - ext4 /dev/loop3 rw
bad line
";

    #[test]
    fn parses_mount_points_options_and_escapes() {
        let m = parse(SAMPLE);
        assert_eq!(m.len(), 3);
        assert_eq!(
            m[2].mount_point,
            PathBuf::from("/var/lib/kubelet/pods/a b/target")
        );
        assert!(m[2].read_only());
        assert!(!m[1].read_only());
        assert_eq!(m[1].fstype, "ext4");
        assert_eq!(m[1].source, "/dev/loop3");
    }

    #[test]
    fn finds_mounts_at_and_under_a_path() {
        let m = parse(SAMPLE);
        assert_eq!(
            mounts_at(&m, Path::new("/var/lib/kubelet/plugins/x/staging")).len(),
            1
        );
        assert_eq!(
            mounts_under(&m, Path::new("/var/lib/kubelet/pods")).len(),
            1
        );
        assert!(mounts_at(&m, Path::new("/var/lib/kubelet/pods")).is_empty());
    }

    #[test]
    fn this_process_has_a_root_mount() {
        let m = read().unwrap();
        assert!(!mounts_at(&m, Path::new("/")).is_empty());
    }
}
