//! Letting go of a volume's file: LOOP_CLR_FD is only a request. While anything else has the
//! device open the kernel just marks it (autoclear) and unbinds at the last close: a probe
//! (blkid, a scan of the loop devices, a tool forked at that moment holding a copy of our
//! descriptor until it execs) closes within milliseconds; a mount of the device in another
//! mount namespace (one copied from ours while the volume was staged) holds it until that
//! namespace lets go. So the unbind is waited for, and seen through sysfs only: opening the
//! device to look would make the look an opener itself.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{errno, sys, LoopDevice, LoopInfo64, LO_FLAGS_AUTOCLEAR};

/// How often to look again while the kernel has not unbound the device.
const LOOK_EVERY: Duration = Duration::from_millis(10);

/// `file` as sysfs prints a device's backing file once the file was unlinked.
fn deleted(file: &Path) -> PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push(" (deleted)");
    PathBuf::from(s)
}

impl LoopDevice {
    /// Unbind the device from `file` and wait, at most `within`, until the kernel has.
    /// Returns whether it did (also when the device was not bound to `file`: a device bound to
    /// another file is left alone); `false`: something else still holds the device open, and
    /// the kernel will unbind it at that holder's last close (autoclear) unless
    /// [`keep_for`](LoopDevice::keep_for) undoes that.
    pub fn release(&self, file: &Path, within: Duration) -> io::Result<bool> {
        let Some((node, info)) = self.open_bound(false)? else {
            return Ok(true);
        };
        if !self.serves(&info, file)? {
            return Ok(true);
        }
        // Read while our descriptor keeps this binding alive: the name the kernel gives our
        // file, watched below (it gains " (deleted)" if the file is unlinked meanwhile).
        let Some(name) = self.backing_file() else {
            return Err(io::Error::other(format!(
                "{} is bound to {} but sysfs does not show it",
                self.path().display(),
                file.display()
            )));
        };
        match sys::clr_fd(node.as_raw_fd()) {
            Ok(_) | Err(nix::Error::ENXIO) => {}
            Err(e) => return Err(errno("LOOP_CLR_FD", &self.path(), e)),
        }
        // Our own descriptor is an opener too: the unbind can only come after it is closed.
        drop(node);
        let until = Instant::now() + within;
        loop {
            if !self.named(&name) {
                return Ok(true);
            }
            if Instant::now() >= until {
                return Ok(false);
            }
            std::thread::sleep(LOOK_EVERY);
        }
    }

    /// Whether the binding `info` describes is to `file` (same device and inode); once `file`
    /// was unlinked, whether sysfs still names it.
    fn serves(&self, info: &LoopInfo64, file: &Path) -> io::Result<bool> {
        match std::fs::metadata(file) {
            Ok(m) => Ok((info.lo_device, info.lo_inode) == (m.dev(), m.ino())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(self.named(file)),
            Err(e) => Err(e),
        }
    }

    /// The device opened (for writing when `write`) with its status, or `None` when it is
    /// bound to nothing (no device, or unbound).
    fn open_bound(&self, write: bool) -> io::Result<Option<(std::fs::File, LoopInfo64)>> {
        let node = match self.open(write) {
            Ok(f) => f,
            Err(e) if super::no_device(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut info = LoopInfo64::default();
        match sys::get_status(node.as_raw_fd(), &mut info) {
            Ok(_) => Ok(Some((node, info))),
            Err(nix::Error::ENXIO) => Ok(None),
            Err(e) => Err(errno("LOOP_GET_STATUS64", &self.path(), e)),
        }
    }

    /// Whether sysfs shows the device bound to the file it called `name`.
    fn named(&self, name: &Path) -> bool {
        self.backing_file()
            .is_some_and(|b| b == name || b == deleted(name))
    }

    /// Keep the device bound to `file` after a [`release`](LoopDevice::release) that did not
    /// complete: clear autoclear, so it does not vanish under a volume still recorded as
    /// attached when its holder lets go. Returns `false` when the device no longer serves
    /// `file` (unbound meanwhile, maybe bound to another file since: then it is not ours to
    /// touch). The check and the change are made through one open descriptor, which itself
    /// keeps the kernel from unbinding the device in between.
    pub fn keep_for(&self, file: &Path) -> io::Result<bool> {
        let Some((node, mut info)) = self.open_bound(true)? else {
            return Ok(false);
        };
        if !self.serves(&info, file)? {
            return Ok(false);
        }
        if info.lo_flags & LO_FLAGS_AUTOCLEAR != 0 {
            info.lo_flags &= !LO_FLAGS_AUTOCLEAR;
            sys::set_status(node.as_raw_fd(), &info)
                .map_err(|e| errno("LOOP_SET_STATUS64", &self.path(), e))?;
        }
        Ok(true)
    }
}

/// The loop devices bound to `file` (an absolute, canonical path: the name sysfs gives it,
/// as the file was opened through it), from sysfs alone.
pub fn serving(file: &Path) -> io::Result<Vec<LoopDevice>> {
    Ok(super::in_sysfs()?
        .into_iter()
        .filter(|d| d.named(file))
        .collect())
}
