//! /proc/self/mountinfo, read only where the mounted source or the superblock options must be
//! known (unstage of btrfs, the read-only-after-errors check). Costs ~4 µs per mount line, so
//! it is never on the publish/unpublish path.

use std::path::Path;

use crate::host::{HostError, HostResult};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub mount_point: String,
    pub mount_options: String,
    pub fs_type: String,
    pub source: String,
    pub super_options: String,
}

const MOUNTINFO: &str = "/proc/self/mountinfo";

/// The topmost mount at `path` (the last matching line: later mounts stack on earlier ones).
pub fn find(path: &Path) -> HostResult<Option<Entry>> {
    // mountinfo shows resolved paths; resolve ours the same way.
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let text = std::fs::read_to_string(MOUNTINFO)
        .map_err(|e| HostError::io("read", Path::new(MOUNTINFO), e))?;
    let want = real.to_string_lossy();
    Ok(text
        .lines()
        .rev()
        .filter_map(parse_line)
        .find(|e| e.mount_point == want))
}

/// One line: `id parent maj:min root mount_point mount_opts [optional…] - fstype source super_opts`.
pub fn parse_line(line: &str) -> Option<Entry> {
    let (left, right) = line.split_once(" - ")?;
    let mut l = left.split(' ');
    let mount_point = unescape(l.nth(4)?);
    let mount_options = l.next()?.to_string();
    let mut r = right.split(' ');
    let fs_type = r.next()?.to_string();
    let source = unescape(r.next()?);
    let super_options = r.next().unwrap_or("").to_string();
    Some(Entry {
        mount_point,
        mount_options,
        fs_type,
        source,
        super_options,
    })
}

/// The kernel escapes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = |c: &u8| (b'0'..=b'7').contains(c);
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(octal) {
            let v = b[i + 1..i + 4]
                .iter()
                .fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines() {
        let e = parse_line(
            "36 35 98:0 / /mnt/with\\040space rw,noatime master:1 - ext4 /dev/loop3 ro,errors=continue",
        )
        .unwrap();
        assert_eq!(e.mount_point, "/mnt/with space");
        assert_eq!(e.mount_options, "rw,noatime");
        assert_eq!(e.fs_type, "ext4");
        assert_eq!(e.source, "/dev/loop3");
        assert_eq!(e.super_options, "ro,errors=continue");
        let e = parse_line("1 0 0:5 / / rw - btrfs /dev/vdb rw,subvol=/").unwrap();
        assert_eq!(e.mount_point, "/");
        assert!(parse_line("garbage").is_none());
    }
}
