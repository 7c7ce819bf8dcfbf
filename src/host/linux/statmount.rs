//! Other mounts of what is mounted at a path, asked of the kernel by mount id (Linux ≥ 6.8:
//! `statx(STATX_MNT_ID_UNIQUE)`, `listmount(2)`, `statmount(2)`) instead of reading
//! /proc/self/mountinfo, which formats every mount's options (overlay mounts' are long: ~270 µs
//! for 71 mounts on a busy node). Same answer as [`super::mountinfo::sharing`], which stays the
//! fallback: `None` here means "not answered" (an older kernel, a seccomp filter, anything
//! unexpected), never "nothing shares it".

use std::os::fd::AsFd;
use std::path::Path;

use rustix::fs::{AtFlags, StatxFlags};

/// `STATX_MNT_ID_UNIQUE` (Linux 6.8): the 64-bit mount id that listmount/statmount take.
const STATX_MNT_ID_UNIQUE: u32 = 0x4000;
const SYS_STATMOUNT: libc::c_long = 457;
const SYS_LISTMOUNT: libc::c_long = 458;
const LSMT_ROOT: u64 = u64::MAX;
const STATMOUNT_SB_BASIC: u64 = 0x1;
const STATMOUNT_MNT_ROOT: u64 = 0x8;
const STATMOUNT_MNT_POINT: u64 = 0x10;
/// Mounts listed per listmount call.
const BATCH: usize = 512;

/// `struct mnt_id_req`, version 0 (24 bytes, Linux 6.8).
#[repr(C)]
struct MntIdReq {
    size: u32,
    spare: u32,
    mnt_id: u64,
    param: u64,
}

/// `struct statmount`: the fixed head is 512 bytes (Linux 6.8; later kernels add fields in
/// its spare words), the strings follow, their offsets counted from there.
const HEAD: usize = 512;
const OFF_SIZE: usize = 0;
const OFF_MASK: usize = 8;
const OFF_DEV_MAJOR: usize = 16;
const OFF_DEV_MINOR: usize = 20;
const OFF_PARENT: usize = 48;
const OFF_ROOT: usize = 104;
const OFF_POINT: usize = 108;
const STATMOUNT_MNT_BASIC: u64 = 0x2;
/// EOVERFLOW: statmount's strings did not fit the buffer.
const EOVERFLOW: i32 = 75;

/// What statmount said of one mount.
struct Mount {
    dev: (u32, u32),
    parent: u64,
    root: Option<String>,
    point: Option<String>,
}

#[allow(unsafe_code)]
mod sys {
    use super::*;

    /// listmount(2): ids of the mounts below `parent`, from after `last` on.
    pub fn listmount(parent: u64, last: u64, out: &mut [u64]) -> Option<usize> {
        let req = MntIdReq {
            size: std::mem::size_of::<MntIdReq>() as u32,
            spare: 0,
            mnt_id: parent,
            param: last,
        };
        // SAFETY: `req` is a valid mnt_id_req of the size it declares, and `out` is a
        // writable buffer of `out.len()` u64s, which is the count passed.
        let n = unsafe {
            libc::syscall(
                SYS_LISTMOUNT,
                &req as *const MntIdReq,
                out.as_mut_ptr(),
                out.len(),
                0u32,
            )
        };
        usize::try_from(n).ok()
    }

    /// statmount(2) of mount `id` asking for `param`, into `buf` (8-byte aligned).
    pub fn statmount(id: u64, param: u64, buf: &mut [u64]) -> Option<usize> {
        let req = MntIdReq {
            size: std::mem::size_of::<MntIdReq>() as u32,
            spare: 0,
            mnt_id: id,
            param,
        };
        // SAFETY: `req` is a valid mnt_id_req; `buf` is writable for its length in bytes,
        // which is the size passed; the kernel writes at most that many bytes.
        let n = unsafe {
            libc::syscall(
                SYS_STATMOUNT,
                &req as *const MntIdReq,
                buf.as_mut_ptr(),
                std::mem::size_of_val(buf),
                0u32,
            )
        };
        (n == 0).then_some(std::mem::size_of_val(buf))
    }
}

/// statmount of `id`; the strings only when `strings`.
fn stat(id: u64, strings: bool, buf: &mut Vec<u64>) -> Option<Mount> {
    let mut param = STATMOUNT_SB_BASIC | STATMOUNT_MNT_BASIC;
    if strings {
        param |= STATMOUNT_MNT_ROOT | STATMOUNT_MNT_POINT;
    }
    if buf.len() < (HEAD + 4096) / 8 {
        buf.resize((HEAD + 4096) / 8, 0);
    }
    let mut tries = 0;
    let len = loop {
        match sys::statmount(id, param, buf) {
            Some(n) => break n,
            None if tries < 3
                && std::io::Error::last_os_error().raw_os_error() == Some(EOVERFLOW) =>
            {
                tries += 1;
                let n = buf.len() * 2;
                buf.resize(n, 0);
            }
            None => return None,
        }
    };
    let bytes = as_bytes(&buf[..len / 8]);
    let u32_at = |o: usize| Some(u32::from_ne_bytes(bytes.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_ne_bytes(bytes.get(o..o + 8)?.try_into().ok()?));
    if u64_at(OFF_MASK)? & param != param {
        return None;
    }
    let size = (u32_at(OFF_SIZE)? as usize).min(bytes.len());
    let text = |off: u32| -> Option<String> {
        let rest = bytes.get(HEAD + off as usize..size)?;
        let end = rest.iter().position(|&b| b == 0)?;
        String::from_utf8(rest[..end].to_vec()).ok()
    };
    let (root, point) = if strings {
        (
            Some(text(u32_at(OFF_ROOT)?)?),
            Some(text(u32_at(OFF_POINT)?)?),
        )
    } else {
        (None, None)
    };
    Some(Mount {
        dev: (u32_at(OFF_DEV_MAJOR)?, u32_at(OFF_DEV_MINOR)?),
        parent: u64_at(OFF_PARENT)?,
        root,
        point,
    })
}

/// The u64 buffer as bytes (native endian, as the kernel wrote it).
#[allow(unsafe_code)]
fn as_bytes(words: &[u64]) -> &[u8] {
    // SAFETY: u8 has no alignment or validity requirement, and the length is the words' size
    // in bytes, within the same allocation.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), std::mem::size_of_val(words)) }
}

/// Every mount id of this namespace below its root, with what statmount says of each (no
/// strings). `None` unless listmount(LSMT_ROOT) listed the whole tree: it did so from some
/// kernel after 6.8 on, while 6.8 listed the root's children only; a mount whose parent is in
/// the list shows the whole tree was listed (every node has nested mounts: /dev/pts,
/// /sys/fs/cgroup), else the caller falls back to the mount table.
fn all_mounts(buf: &mut Vec<u64>) -> Option<Vec<(u64, Mount)>> {
    let mut ids = Vec::new();
    let mut batch = vec![0u64; BATCH];
    let mut last = 0;
    loop {
        let n = sys::listmount(LSMT_ROOT, last, &mut batch)?;
        ids.extend_from_slice(&batch[..n]);
        if n < BATCH {
            break;
        }
        last = batch[n - 1];
    }
    let mut out = Vec::with_capacity(ids.len());
    for &id in &ids {
        out.push((id, stat(id, false, buf)?));
    }
    let whole_tree = out.iter().any(|(_, m)| ids.contains(&m.parent));
    whole_tree.then_some(out)
}

/// Mount points other than `real`'s that show the same thing as the mount at `real` (`fd`,
/// opened on it; `real` as the mount table names it): the same filesystem (same device; for
/// a whole-filesystem mount any subtree of it), or for a bound file, binds of that same
/// file. `None`: not answered (fall back to the mount table).
pub fn sharing(fd: impl AsFd, real: &Path) -> Option<Vec<String>> {
    let st = rustix::fs::statx(
        fd,
        "",
        AtFlags::EMPTY_PATH,
        StatxFlags::from_bits_retain(STATX_MNT_ID_UNIQUE),
    )
    .ok()?;
    if st.stx_mask & STATX_MNT_ID_UNIQUE == 0 {
        return None;
    }
    let mut buf = Vec::new();
    let me = stat(st.stx_mnt_id, true, &mut buf)?;
    let (my_root, my_point) = (me.root?, me.point?);
    // The descriptor must be on the mount root at `real` (else this is not the mount asked
    // about: nothing mounted there, or the path moved).
    if Path::new(&my_point) != real {
        return None;
    }
    let inside = |root: &str| {
        my_root == "/"
            || root == my_root
            || root
                .strip_prefix(my_root.as_str())
                .is_some_and(|r| r.starts_with('/'))
    };
    let mut out = Vec::new();
    for (id, m) in all_mounts(&mut buf)? {
        if id == st.stx_mnt_id || m.dev != me.dev {
            continue;
        }
        let m = stat(id, true, &mut buf)?;
        let (root, point) = (m.root?, m.point?);
        if point != my_point && inside(&root) {
            out.push(point);
        }
    }
    out.dedup();
    Some(out)
}
