//! Paths the CO sends, resolved beneath the kubelet dir and never through a symlink.
//!
//! The kubelet dir is resolved once (at startup; it may itself be a symlink, e.g. to a data
//! disk) and opened as an `O_PATH` descriptor. Every path below it is then opened with
//! `openat2(root, rest, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`: a symlink anywhere in `rest`
//! (the last component included) is `ELOOP`, which becomes [`HostError::UnsafePath`]
//! (InvalidArgument), before anything is changed. What the adapter then does happens on the
//! descriptors it got, not on the path text, so a directory swapped for a symlink between the
//! check and the mount cannot redirect the mount: mounts go onto `/proc/self/fd/N` of the
//! target's descriptor, binds are `open_tree` + `move_mount` between descriptors, unmounts
//! and removals name the last component relative to the parent's descriptor without following
//! it. Paths outside the kubelet dir (device nodes, by-id links the driver looked up itself)
//! are resolved as usual.

use std::ffi::OsStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use rustix::fs::{Mode, OFlags, ResolveFlags, CWD};
use rustix::io::Errno;

use crate::host::{HostError, HostResult};

/// The kubelet dir as given (`--kubelet-dir`) and as resolved once.
pub struct Beneath {
    given: PathBuf,
    resolved: OnceLock<PathBuf>,
    root: OnceLock<OwnedFd>,
}

/// Flags of every resolution below the kubelet dir.
const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

impl Beneath {
    /// `kubelet_dir` is resolved (symlinks followed) here when it exists, else at first use.
    pub fn new(kubelet_dir: &Path) -> Self {
        let b = Self {
            given: kubelet_dir.to_path_buf(),
            resolved: OnceLock::new(),
            root: OnceLock::new(),
        };
        let _ = b.root();
        b
    }

    /// No confinement (adapter unit tests of device-only code).
    pub fn none() -> Self {
        Self::new(Path::new(""))
    }

    /// The part of `path` below the kubelet dir (in its given or resolved form), if it lies
    /// there.
    pub fn relative<'a>(&self, path: &'a Path) -> Option<&'a Path> {
        if self.given.as_os_str().is_empty() {
            return None;
        }
        let rest = path
            .strip_prefix(&self.given)
            .ok()
            .or_else(|| path.strip_prefix(self.resolved.get()?).ok())?;
        (!rest.as_os_str().is_empty()).then_some(rest)
    }

    /// `path` as the kernel's mount table shows it. Below the kubelet dir: the dir's resolved
    /// form joined with the rest, which no resolution here lets hold a symlink (a path with
    /// one is refused before the table is read), so no component needs a readlink.
    /// Elsewhere (or before the kubelet dir exists): canonicalized.
    pub fn real(&self, path: &Path) -> PathBuf {
        if let Some(rest) = self.relative(path) {
            if self.root().is_ok() {
                if let Some(resolved) = self.resolved.get() {
                    return resolved.join(rest);
                }
            }
        }
        std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
    }

    /// The kubelet dir's descriptor, opened on first use (kubelet may create the dir after
    /// the driver starts).
    fn root(&self) -> HostResult<BorrowedFd<'_>> {
        if let Some(fd) = self.root.get() {
            return Ok(fd.as_fd());
        }
        let resolved = std::fs::canonicalize(&self.given)
            .map_err(|e| HostError::io("resolve the kubelet dir", &self.given, e))?;
        let fd = rustix::fs::open(
            &resolved,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| HostError::io("open the kubelet dir", &resolved, e.into()))?;
        let _ = self.resolved.set(resolved);
        Ok(self.root.get_or_init(|| fd).as_fd())
    }

    /// Open `path` with `flags` (`O_CLOEXEC` added): beneath the kubelet dir without
    /// following any symlink when it lies there, else as usual.
    pub fn open(&self, path: &Path, flags: OFlags) -> HostResult<OwnedFd> {
        self.open_raw(path, flags)
            .map_err(|e| self.error("open", path, e))
    }

    /// [`Beneath::open`] with the errno left as it is (ENOENT, EIO, … to be interpreted by
    /// the caller). Symlinks and escapes are still refused (ELOOP/EXDEV).
    pub fn open_raw(&self, path: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
        let flags = flags | OFlags::CLOEXEC;
        match self.relative(path) {
            Some(rest) => {
                let root = self.root().map_err(|_| Errno::NOENT)?;
                rustix::fs::openat2(root, rest, flags, Mode::empty(), RESOLVE)
            }
            None => rustix::fs::openat(CWD, path, flags, Mode::empty()),
        }
    }

    /// The parent directory of `path` (opened `O_PATH`) and its last component.
    pub fn parent<'a>(&self, path: &'a Path) -> HostResult<(OwnedFd, &'a OsStr)> {
        let (Some(parent), Some(Component::Normal(name))) =
            (path.parent(), path.components().next_back())
        else {
            return Err(HostError::UnsafePath {
                path: path.to_path_buf(),
                reason: "it has no last component to act on".into(),
            });
        };
        let fd = self.open(parent, OFlags::PATH | OFlags::DIRECTORY)?;
        Ok((fd, name))
    }

    /// `mkdir -p` beneath the kubelet dir: one directory at a time, each created relative to
    /// its parent's descriptor and opened again without following a symlink, so no
    /// component can lead out. Returns the last directory's descriptor.
    pub fn create_dirs(&self, path: &Path, mode: u32) -> HostResult<OwnedFd> {
        let Some(rest) = self.relative(path) else {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(mode)
                .create(path)
                .map_err(|e| HostError::io("mkdir", path, e))?;
            return self.open(path, OFlags::PATH | OFlags::DIRECTORY);
        };
        let root = self.root()?;
        let mut dir: Option<OwnedFd> = None;
        for c in rest.components() {
            let Component::Normal(name) = c else {
                return Err(HostError::UnsafePath {
                    path: path.to_path_buf(),
                    reason: "it has a `.` or `..` component".into(),
                });
            };
            let at = dir.as_ref().map_or(root, |d| d.as_fd());
            match rustix::fs::mkdirat(at, name, Mode::from_raw_mode(mode)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(self.error("mkdir", path, e)),
            }
            let next = rustix::fs::openat2(
                at,
                name,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
                RESOLVE,
            )
            .map_err(|e| self.error("mkdir", path, e))?;
            dir = Some(next);
        }
        dir.ok_or_else(|| HostError::UnsafePath {
            path: path.to_path_buf(),
            reason: "it is the kubelet dir itself".into(),
        })
    }

    /// The host error of a failed resolution: a symlink or an escape is the caller's doing
    /// (UnsafePath); anything else is what the errno says.
    pub fn error(&self, op: &'static str, path: &Path, e: Errno) -> HostError {
        match (self.relative(path), e) {
            (Some(_), Errno::LOOP) => HostError::UnsafePath {
                path: path.to_path_buf(),
                reason: format!(
                    "a component of it is a symlink; paths below the kubelet dir {} are \
                     resolved without following symlinks",
                    self.given.display()
                ),
            },
            (Some(_), Errno::XDEV) => HostError::UnsafePath {
                path: path.to_path_buf(),
                reason: format!(
                    "it resolves outside the kubelet dir {}",
                    self.given.display()
                ),
            },
            _ => HostError::io(op, path, e.into()),
        }
    }
}

/// `/proc/self/fd/N`: the magic link the kernel resolves to exactly the descriptor's file,
/// whatever its path has become since (what mount(2) and umount2(2) are given instead of the
/// CO's path text).
pub fn proc_fd(fd: &impl AsRawFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_to_the_given_and_the_resolved_form() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let link = dir.path().join("kubelet");
        std::os::unix::fs::symlink(&data, &link).unwrap();
        let b = Beneath::new(&link);
        assert_eq!(b.relative(&link.join("pods/x")), Some(Path::new("pods/x")));
        let real = std::fs::canonicalize(&data).unwrap();
        assert_eq!(b.relative(&real.join("pods/x")), Some(Path::new("pods/x")));
        assert_eq!(b.relative(&link), None);
        assert_eq!(b.relative(Path::new("/dev/loop0")), None);
        assert_eq!(Beneath::none().relative(Path::new("/x")), None);
    }

    #[test]
    fn symlinks_below_the_kubelet_dir_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let kubelet = dir.path().join("kubelet");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(kubelet.join("pods")).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, kubelet.join("pods/link")).unwrap();
        let b = Beneath::new(&kubelet);
        for p in ["pods/link", "pods/link/mount"] {
            let err = b.open(&kubelet.join(p), OFlags::PATH).unwrap_err();
            assert!(matches!(err, HostError::UnsafePath { .. }), "{p}: {err}");
        }
        let err = b
            .create_dirs(&kubelet.join("pods/link/a/b"), 0o750)
            .unwrap_err();
        assert!(matches!(err, HostError::UnsafePath { .. }), "{err}");
        assert!(
            !outside.join("a").exists(),
            "mkdir went through the symlink"
        );
        b.create_dirs(&kubelet.join("pods/real/a"), 0o750).unwrap();
        assert!(kubelet.join("pods/real/a").is_dir());
        // Outside the kubelet dir, symlinks resolve as usual.
        b.open(&kubelet.join("pods"), OFlags::PATH).unwrap();
    }
}
