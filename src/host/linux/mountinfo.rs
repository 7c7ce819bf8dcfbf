//! /proc/self/mountinfo, read only where the mounted source or the superblock options must be
//! known (unstage of btrfs, the read-only-after-errors check). Costs ~4 µs per mount line, so
//! it is never on the publish/unpublish path.

use std::path::Path;

use crate::host::{HostError, HostResult};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `major:minor` of the mounted filesystem (st_dev), as mountinfo prints it.
    pub dev: String,
    /// The directory (or file) of that filesystem mounted here: `/` for a whole-filesystem
    /// mount, the bound path for a bind of a subtree or of a single file.
    pub root: String,
    pub mount_point: String,
    pub mount_options: String,
    pub fs_type: String,
    pub source: String,
    pub super_options: String,
}

const MOUNTINFO: &str = "/proc/self/mountinfo";

/// The whole table, read into one buffer sized for a busy node (a `read_to_string` from
/// empty would start with 32-byte reads: ten syscalls for a short table).
fn read() -> HostResult<String> {
    use std::io::Read;
    let mut text = String::with_capacity(64 * 1024);
    std::fs::File::open(MOUNTINFO)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| HostError::io("read", Path::new(MOUNTINFO), e))?;
    Ok(text)
}

/// The topmost mount at `real` (the last matching line: later mounts stack on earlier ones).
/// mountinfo shows resolved paths: `real` must be one (see `Beneath::real`).
pub fn find(real: &Path) -> HostResult<Option<Entry>> {
    let text = read()?;
    let want = real.to_string_lossy();
    Ok(text
        .lines()
        .rev()
        .filter_map(parse_line)
        .find(|e| e.mount_point == want))
}

/// Mount points other than `real` that show the same thing as the topmost mount there:
/// the same filesystem (same `major:minor`; for a filesystem mounted whole, any subtree of
/// it), or for a bound file such as a device node, binds of that same file. Empty when
/// nothing is mounted at `real` (a resolved path, as for [`find`]).
pub fn sharing(real: &Path) -> HostResult<Vec<String>> {
    Ok(sharing_in(&read()?, &real.to_string_lossy()))
}

fn sharing_in(text: &str, want: &str) -> Vec<String> {
    let entries: Vec<Entry> = text.lines().filter_map(parse_line).collect();
    let Some(me) = entries.iter().rev().find(|e| e.mount_point == want) else {
        return Vec::new();
    };
    let inside = |root: &str| {
        me.root == "/"
            || root == me.root
            || root
                .strip_prefix(me.root.as_str())
                .is_some_and(|r| r.starts_with('/'))
    };
    let mut out: Vec<String> = entries
        .iter()
        .filter(|e| e.mount_point != want && e.dev == me.dev && inside(&e.root))
        .map(|e| e.mount_point.clone())
        .collect();
    out.dedup();
    out
}

/// One line: `id parent maj:min root mount_point mount_opts [optional…] - fstype source super_opts`.
pub fn parse_line(line: &str) -> Option<Entry> {
    let (left, right) = line.split_once(" - ")?;
    let mut l = left.split(' ');
    let dev = l.nth(2)?.to_string();
    let root = unescape(l.next()?);
    let mount_point = unescape(l.next()?);
    let mount_options = l.next()?.to_string();
    let mut r = right.split(' ');
    let fs_type = r.next()?.to_string();
    let source = unescape(r.next()?);
    let super_options = r.next().unwrap_or("").to_string();
    Some(Entry {
        dev,
        root,
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
        let e = parse_line("36 35 0:5 /loop3 /k/block rw - devtmpfs udev rw").unwrap();
        assert_eq!((e.dev.as_str(), e.root.as_str()), ("0:5", "/loop3"));
    }

    #[test]
    fn finds_other_mounts_of_the_same_thing() {
        let text = "\
1 0 8:1 / / rw - ext4 /dev/sda1 rw
2 1 7:3 / /k/stage rw - ext4 /dev/loop3 rw
3 1 7:3 / /k/pod1 rw - ext4 /dev/loop3 rw
4 1 7:3 /sub/dir /k/pod2 rw - ext4 /dev/loop3 rw
5 1 7:4 / /k/other rw - ext4 /dev/loop4 rw
6 1 0:5 /loop5 /k/blockstage/block rw - devtmpfs udev rw
7 1 0:5 /loop5 /k/blockpod rw - devtmpfs udev rw
8 1 0:5 /loop6 /k/otherpod rw - devtmpfs udev rw
9 1 0:5 / /dev rw - devtmpfs udev rw";
        assert_eq!(sharing_in(text, "/k/stage"), ["/k/pod1", "/k/pod2"]);
        assert_eq!(sharing_in(text, "/k/other"), Vec::<String>::new());
        assert_eq!(sharing_in(text, "/k/blockstage/block"), ["/k/blockpod"]);
        assert_eq!(sharing_in(text, "/k/nothing"), Vec::<String>::new());
    }
}
