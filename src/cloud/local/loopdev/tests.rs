use super::*;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[test]
fn a_device_that_is_not_there_or_not_live_is_bound_to_nothing() {
    assert!(no_device(&io::Error::from_raw_os_error(libc::ENOENT)));
    assert!(no_device(&io::Error::from_raw_os_error(libc::ENXIO)));
    assert!(!no_device(&io::Error::from_raw_os_error(libc::EACCES)));
    assert!(!no_device(&io::Error::from_raw_os_error(libc::EIO)));
}

#[test]
fn struct_sizes_match_the_kernel_abi() {
    assert_eq!(std::mem::size_of::<LoopInfo64>(), 232);
    assert_eq!(std::mem::size_of::<LoopConfig>(), 304);
}

#[test]
fn parses_device_paths() {
    assert_eq!(
        LoopDevice::from_path(Path::new("/dev/loop12")),
        Some(LoopDevice(12))
    );
    assert_eq!(LoopDevice::from_path(Path::new("/dev/loop-control")), None);
    assert_eq!(LoopDevice::from_path(Path::new("/dev/sda")), None);
    assert_eq!(LoopDevice(3).path(), PathBuf::from("/dev/loop3"));
}

/// A sparse file bound to a loop device, on real loop devices (root only: `None` otherwise).
/// On drop, whatever still serves the file is unbound and the file removed, a failed test too.
/// Holders are declared after it, so they are closed first.
struct Fixture {
    /// Removed (with the file) when dropped, after the devices are unbound.
    _dir: tempfile::TempDir,
    file: PathBuf,
    device: LoopDevice,
}

impl Fixture {
    fn new() -> Option<Self> {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: needs root (loop devices)");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("cinder-csi-loopdev-")
            .tempdir_in("/var/tmp")
            .unwrap();
        // Canonical: the name sysfs gives the file is compared to it.
        let file = dir.path().canonicalize().unwrap().join("v.img");
        File::create(&file).unwrap().set_len(16 << 20).unwrap();
        let device = LoopDevice::attach(&file).unwrap();
        Some(Self {
            _dir: dir,
            file,
            device,
        })
    }

    /// Whether sysfs shows the device bound to our file (the kernel may hand the device to
    /// another process at once once it is free: any other file is "unbound" for us).
    fn bound(&self) -> bool {
        self.device.backing_file().as_deref() == Some(self.file.as_path())
    }

    /// Open the device as another opener would (a probe, a mount elsewhere).
    fn hold(&self) -> File {
        File::open(self.device.path()).unwrap()
    }

    fn autoclear(&self) -> bool {
        self.device.status().unwrap().unwrap().autoclear
    }
}

impl Drop for Fixture {
    // Never panics: a panic while a test unwinds would abort.
    fn drop(&mut self) {
        for d in bound_to(&self.file).unwrap_or_default() {
            if let Err(e) = d.detach() {
                eprintln!("cleanup: detach {}: {e}", d.path().display());
            }
        }
    }
}

#[test]
fn releasing_an_unheld_device_unbinds_it_at_once() {
    let Some(b) = Fixture::new() else { return };
    assert!(b.bound());
    assert_eq!(release::serving(&b.file).unwrap(), vec![b.device]);
    let started = Instant::now();
    assert!(b.device.release(&b.file, Duration::from_secs(2)).unwrap());
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(!b.bound(), "sysfs shows the device unbound");
    assert!(release::serving(&b.file).unwrap().is_empty());
    // Again: nothing to do.
    assert!(b.device.release(&b.file, Duration::from_secs(2)).unwrap());
}

#[test]
fn a_holder_that_closes_soon_is_waited_out() {
    let Some(b) = Fixture::new() else { return };
    let holder = b.hold();
    let closer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        drop(holder);
    });
    let started = Instant::now();
    let released = b.device.release(&b.file, Duration::from_secs(3));
    // Measured and looked at before the join: the release itself must have waited.
    let took = started.elapsed();
    let unbound = !b.bound();
    closer.join().unwrap();
    assert!(released.unwrap());
    assert!(
        took >= Duration::from_millis(150),
        "returned before the holder closed: {took:?}"
    );
    assert!(unbound, "the kernel unbound it at the holder's close");
}

#[test]
fn a_holder_that_stays_is_reported_and_the_device_kept_bound() {
    let Some(b) = Fixture::new() else { return };
    let holder = b.hold();
    assert!(!b
        .device
        .release(&b.file, Duration::from_millis(100))
        .unwrap());
    assert!(b.bound(), "still bound while held");
    assert!(
        b.autoclear(),
        "the kernel deferred the unbind to the last close"
    );
    assert!(b.device.keep_for(&b.file).unwrap());
    assert!(!b.autoclear(), "keep_for cleared autoclear");
    drop(holder);
    std::thread::sleep(Duration::from_millis(100));
    assert!(b.bound(), "still bound after the holder closed");
    // Not ours any more: keep_for for another file touches nothing.
    let other = b.file.with_file_name("other.img");
    File::create(&other).unwrap();
    assert!(!b.device.keep_for(&other).unwrap());
    assert!(b
        .device
        .release(&other, Duration::from_millis(100))
        .unwrap());
    assert!(b.bound(), "a release for another file leaves it alone");
    // Unheld now: the release completes.
    assert!(b.device.release(&b.file, Duration::from_secs(2)).unwrap());
    assert!(!b.bound());
}
