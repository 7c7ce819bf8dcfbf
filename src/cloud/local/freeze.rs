//! Holding attached volumes still while a group snapshot copies them: each member's mounted
//! filesystem is frozen (FIFREEZE) before the first copy and thawed (FITHAW) after the last,
//! so the copies are one point in time relative to the writes to all of them (CSI's
//! write-order consistency).
//!
//! Kernel facts this relies on: FIFREEZE syncs the filesystem to its device (for a loop
//! device, into the backing file the copy reads) and then blocks every writer until FITHAW;
//! it needs CAP_SYS_ADMIN and a descriptor of a file on that filesystem (a device node would
//! freeze /dev); a second FIFREEZE of a frozen filesystem is EBUSY, FITHAW of a thawed one
//! EINVAL; a filesystem without freeze support (ext2) answers EOPNOTSUPP. A freeze outlives
//! the process that made it, so the mount points are written to `DIR/frozen.json` before the
//! first freeze and the startup reconcile thaws whatever a crash left frozen. The guard thaws
//! on drop, so every error path (and a panic) thaws too.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};

use std::path::{Path, PathBuf};

use nix::errno::Errno;
use serde::{Deserialize, Serialize};

use super::store;
use crate::cloud::Unfreezable;

// FIFREEZE/FITHAW are the only ioctls here; their int argument is unused by the kernel.
#[allow(unsafe_code)]
mod sys {
    nix::ioctl_readwrite!(fifreeze, b'X', 119, libc::c_int);
    nix::ioctl_readwrite!(fithaw, b'X', 120, libc::c_int);

    pub fn freeze(fd: i32) -> nix::Result<i32> {
        let mut unused: libc::c_int = 0;
        // SAFETY: `fd` is an open descriptor; the pointer is to a live int.
        unsafe { fifreeze(fd, &mut unused) }
    }

    pub fn thaw(fd: i32) -> nix::Result<i32> {
        let mut unused: libc::c_int = 0;
        // SAFETY: as above.
        unsafe { fithaw(fd, &mut unused) }
    }
}

/// One mount of a filesystem, from /proc/self/mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The mount's id (statx's `stx_mnt_id` of any file on it).
    pub id: u64,
    pub dev: (u32, u32),
    pub mount_point: PathBuf,
    pub fs_type: String,
    pub source: String,
}

/// Undo mountinfo's octal escapes (`\040` for a space, ...).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            let n = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(n);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mounts of a mountinfo text.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (head, tail) = line.split_once(" - ")?;
            let f: Vec<&str> = head.split(' ').collect();
            let (maj, min) = f.get(2)?.split_once(':')?;
            let t: Vec<&str> = tail.split(' ').collect();
            Some(Mount {
                id: f.first()?.parse().ok()?,
                dev: (maj.parse().ok()?, min.parse().ok()?),
                mount_point: PathBuf::from(unescape(f.get(4)?)),
                fs_type: t.first()?.to_string(),
                source: unescape(t.get(1).unwrap_or(&"")),
            })
        })
        .collect()
}

/// Where the filesystem on `device` is mounted in this process's mount namespace: mounts
/// whose device number is the device's (btrfs shows an anonymous one: then the mount's
/// source names the device).
pub fn mounts_of(device: &Path, mounts: &[Mount]) -> io::Result<Vec<Mount>> {
    let meta = std::fs::metadata(device)?;
    if !meta.file_type().is_block_device() {
        return Err(io::Error::other(format!(
            "{} is not a block device",
            device.display()
        )));
    }
    let rdev = meta.rdev();
    let dev = (libc::major(rdev), libc::minor(rdev));
    let canonical = std::fs::canonicalize(device)?;
    Ok(mounts
        .iter()
        .filter(|m| {
            m.dev == dev
                || (m.source.starts_with('/')
                    && std::fs::canonicalize(&m.source).is_ok_and(|s| s == canonical))
        })
        .cloned()
        .collect())
}

/// The id of the mount `f` is on (btrfs's st_dev is a subvolume's, not the mount's, so the
/// mount id is what identifies the mount).
pub fn mount_id(f: &impl std::os::fd::AsFd) -> io::Result<u64> {
    use rustix::fs::{statx, AtFlags, StatxFlags};
    let st = statx(f, "", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID)?;
    if st.stx_mask & StatxFlags::MNT_ID.bits() == 0 {
        return Err(io::Error::other(
            "statx gave no mount id (Linux 5.8+ needed)",
        ));
    }
    Ok(st.stx_mnt_id)
}

/// What `DIR/frozen.json` holds while filesystems are frozen.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct FrozenRecord {
    pub mount_points: Vec<PathBuf>,
}

/// A member to hold still: its volume id, device and the mount to freeze it through.
#[derive(Debug, Clone)]
pub struct Target {
    pub volume_id: String,
    pub mount: Mount,
}

/// Why freezing failed.
#[derive(Debug)]
pub enum FreezeError {
    /// The member cannot be frozen at all (a refusal, nothing changed).
    Unfreezable {
        volume_id: String,
        why: Unfreezable,
    },
    Io(io::Error),
}

/// Frozen filesystems; thawed on drop, then the record is removed.
pub struct Frozen {
    record: PathBuf,
    frozen: Vec<(File, PathBuf)>,
}

impl Frozen {
    /// Freeze every target's filesystem (in order), recording them in `record` first.
    pub fn freeze(record: &Path, targets: &[Target]) -> Result<Self, FreezeError> {
        // Descriptors first: nothing is opened on a filesystem once any is frozen.
        let mut open = Vec::new();
        for t in targets {
            let f = File::open(&t.mount.mount_point).map_err(FreezeError::Io)?;
            // Still that mount: a freeze through anything else would stop another filesystem.
            if mount_id(&f).map_err(FreezeError::Io)? != t.mount.id {
                return Err(FreezeError::Unfreezable {
                    volume_id: t.volume_id.clone(),
                    why: Unfreezable::NoVisibleMount {
                        device: t.mount.source.clone(),
                    },
                });
            }
            open.push((t, f));
        }
        let rec = FrozenRecord {
            mount_points: targets
                .iter()
                .map(|t| t.mount.mount_point.clone())
                .collect(),
        };
        let text = serde_json::to_vec_pretty(&rec).map_err(|e| FreezeError::Io(e.into()))?;
        store::write_atomic(record, &text).map_err(FreezeError::Io)?;
        let mut guard = Frozen {
            record: record.to_path_buf(),
            frozen: Vec::new(),
        };
        for (t, f) in open {
            match sys::freeze(f.as_raw_fd()) {
                Ok(_) => guard.frozen.push((f, t.mount.mount_point.clone())),
                Err(Errno::EOPNOTSUPP) => {
                    return Err(FreezeError::Unfreezable {
                        volume_id: t.volume_id.clone(),
                        why: Unfreezable::NoFreeze {
                            fs_type: t.mount.fs_type.clone(),
                            mount: t.mount.mount_point.display().to_string(),
                        },
                    })
                }
                Err(e) => {
                    return Err(FreezeError::Io(io::Error::new(
                        io::Error::from(e).kind(),
                        format!(
                            "freeze {} (volume {}): {}",
                            t.mount.mount_point.display(),
                            t.volume_id,
                            e.desc()
                        ),
                    )))
                }
            }
        }
        Ok(guard)
    }

    /// How many filesystems are frozen.
    pub fn len(&self) -> usize {
        self.frozen.len()
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        for (f, path) in self.frozen.drain(..) {
            if let Err(e) = sys::thaw(f.as_raw_fd()) {
                tracing::error!(mount = %path.display(), error = %e, "cannot thaw a frozen filesystem");
            }
        }
        if let Err(e) = store::remove_durable(&self.record) {
            tracing::warn!(record = %self.record.display(), error = %e, "cannot remove the freeze record");
        }
    }
}

/// Thaw what `record` says a crash left frozen, and remove it. Returns how many were thawed.
pub fn thaw_leftovers(record: &Path) -> io::Result<usize> {
    let text = match std::fs::read(record) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let rec: FrozenRecord = serde_json::from_slice(&text).unwrap_or_default();
    let mut thawed = 0;
    for p in &rec.mount_points {
        // Not frozen (EINVAL), or gone: nothing to undo.
        if let Ok(Ok(_)) = File::open(p).map(|f| sys::thaw(f.as_raw_fd())) {
            tracing::warn!(mount = %p.display(), "thawed a filesystem a crash left frozen");
            thawed += 1;
        }
    }
    store::remove_durable(record)?;
    Ok(thawed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines() {
        let text = "36 35 7:5 / /var/lib/kubelet/plugins/x/globalmount rw,relatime shared:1 - xfs /dev/loop5 rw,attr2\n\
                    37 35 0:51 / /mnt/with\\040space rw - btrfs /dev/loop6 rw\n\
                    garbage line\n";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].id, 36);
        assert_eq!(m[0].dev, (7, 5));
        assert_eq!(
            m[0].mount_point,
            PathBuf::from("/var/lib/kubelet/plugins/x/globalmount")
        );
        assert_eq!(m[0].fs_type, "xfs");
        assert_eq!(m[0].source, "/dev/loop5");
        assert_eq!(m[1].mount_point, PathBuf::from("/mnt/with space"));
        assert_eq!(m[1].dev, (0, 51));
    }
}
