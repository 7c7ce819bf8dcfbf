//! Block devices: find a volume's disk by serial under the by-id directory (bounded wait with
//! backoff, targeted SCSI rescan and `udevadm settle` on a miss), size, rescan and flush.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::host::{DevId, HostError, HostResult};

/// First pause after a miss; grows by [`BACKOFF_FACTOR`] up to [`BACKOFF_MAX`].
pub const BACKOFF_START: Duration = Duration::from_millis(20);
pub const BACKOFF_FACTOR: f64 = 1.6;
pub const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// Stop waiting this long before the RPC deadline so the answer still reaches the caller.
pub const DEADLINE_MARGIN: Duration = Duration::from_millis(100);
/// Upper bound of one `udevadm settle`.
pub const SETTLE_MAX: Duration = Duration::from_secs(5);

/// ioctls on block and loop devices (the only unsafe code of the adapter).
#[allow(unsafe_code)]
mod ioctl {
    // BLKGETSIZE64 = _IOR(0x12, 114, size_t), BLKFLSBUF = _IO(0x12, 97).
    nix::ioctl_read!(blkgetsize64, 0x12, 114, u64);
    nix::ioctl_none!(blkflsbuf, 0x12, 97);
    // LOOP_SET_CAPACITY = 0x4C07, no argument.
    nix::ioctl_none_bad!(loop_set_capacity_raw, 0x4C07);

    pub fn size(fd: i32) -> nix::Result<u64> {
        let mut size = 0u64;
        // SAFETY: fd is an open block device; the kernel writes one u64 into `size`.
        unsafe { blkgetsize64(fd, &mut size) }?;
        Ok(size)
    }

    pub fn flush_buffers(fd: i32) -> nix::Result<()> {
        // SAFETY: fd is an open block device; BLKFLSBUF takes no argument.
        unsafe { blkflsbuf(fd) }.map(drop)
    }

    pub fn loop_set_capacity(fd: i32) -> nix::Result<()> {
        // SAFETY: fd is an open loop device; LOOP_SET_CAPACITY takes no argument.
        unsafe { loop_set_capacity_raw(fd) }.map(drop)
    }
}

/// by-id names under which a volume's disk shows up (Nova virtio uses the first 20
/// characters of the id as serial; SCSI/QEMU and ESXi name it differently).
pub fn candidates(volume_id: &str) -> Vec<String> {
    let short: String = volume_id.chars().take(20).collect();
    let mut names = vec![
        format!("virtio-{short}"),
        format!("virtio-{volume_id}"),
        format!("scsi-0QEMU_QEMU_HARDDISK_{short}"),
        format!("scsi-0QEMU_QEMU_HARDDISK_{volume_id}"),
        format!("wwn-0x{}", volume_id.replace('-', "")),
    ];
    names.dedup();
    names
}

/// Whether `volume_id` can be part of a file name under the by-id directory.
fn nameable(volume_id: &str) -> bool {
    !volume_id.is_empty() && !volume_id.contains(['/', '\0'])
}

/// One look at the candidates: the resolved block device, if any.
pub fn lookup(dir: &Path, volume_id: &str) -> Option<PathBuf> {
    if !nameable(volume_id) {
        return None;
    }
    candidates(volume_id).into_iter().find_map(|name| {
        let dev = std::fs::canonicalize(dir.join(name)).ok()?;
        let meta = std::fs::metadata(&dev).ok()?;
        meta.file_type().is_block_device().then_some(dev)
    })
}

pub fn find(dir: &Path, volume_id: &str, deadline: Instant) -> HostResult<PathBuf> {
    if !nameable(volume_id) {
        return Err(HostError::Unsupported(format!(
            "volume id {volume_id:?} cannot name a device"
        )));
    }
    if let Some(dev) = lookup(dir, volume_id) {
        return Ok(dev);
    }
    let started = Instant::now();
    let mut pause = BACKOFF_START;
    let mut rescanned = false;
    loop {
        if !rescanned {
            // Once per call: ask the SCSI hosts (only those) to scan, then let udev catch up.
            // A scan is synchronous and can take long on a busy or hung host; nothing here
            // needs its end (the loop polls for the disk), so it runs on its own thread and
            // the wait stays bounded by the deadline.
            let _ = std::thread::Builder::new()
                .name("scsi-scan".into())
                .spawn(rescan_scsi_hosts);
            rescanned = true;
        }
        settle(deadline);
        if let Some(dev) = lookup(dir, volume_id) {
            return Ok(dev);
        }
        let now = Instant::now();
        let Some(left) = deadline
            .checked_duration_since(now)
            .and_then(|d| d.checked_sub(DEADLINE_MARGIN))
        else {
            break;
        };
        std::thread::sleep(pause.min(left));
        if let Some(dev) = lookup(dir, volume_id) {
            return Ok(dev);
        }
        pause = pause.mul_f64(BACKOFF_FACTOR).min(BACKOFF_MAX);
        if Instant::now() + DEADLINE_MARGIN >= deadline {
            break;
        }
    }
    Err(HostError::DeviceNotFound {
        volume_id: volume_id.to_string(),
        dir: dir.to_path_buf(),
        waited: started.elapsed(),
    })
}

fn rescan_scsi_hosts() {
    let Ok(hosts) = std::fs::read_dir("/sys/class/scsi_host") else {
        return;
    };
    for h in hosts.flatten() {
        // "- - -": every channel, target and LUN of this host.
        if let Err(e) = std::fs::write(h.path().join("scan"), "- - -") {
            tracing::debug!(host = %h.path().display(), error = %e, "SCSI host scan failed");
        }
    }
}

/// `udevadm settle`, bounded by the deadline; skipped where udevadm is absent.
fn settle(deadline: Instant) {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .saturating_sub(DEADLINE_MARGIN)
        .min(SETTLE_MAX);
    if left < Duration::from_millis(100) || !super::tools::present("udevadm") {
        return;
    }
    let _ = Command::new("udevadm")
        .arg("settle")
        .arg(format!("--timeout={}", left.as_secs().max(1)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn open(device: &Path) -> HostResult<File> {
    File::open(device).map_err(|e| HostError::io("open", device, e))
}

fn errno(op: &'static str, device: &Path, e: nix::Error) -> HostError {
    HostError::io(op, device, std::io::Error::from_raw_os_error(e as i32))
}

pub fn size(device: &Path) -> HostResult<u64> {
    let f = open(device)?;
    ioctl::size(f.as_raw_fd()).map_err(|e| errno("BLKGETSIZE64", device, e))
}

/// Ask the kernel to re-read the device's size, waiting at most until `deadline`: a SCSI
/// rescan talks to the device and blocks as long as it does not answer, and the caller holds
/// the volume's guard. On time-out the write finishes (or hangs) on its own thread.
pub fn rescan(device: &Path, deadline: Instant) -> HostResult<()> {
    let device = device.to_path_buf();
    let path = device.clone();
    bounded("rescan", &path, deadline, move || rescan_now(&device))
}

fn rescan_now(device: &Path) -> HostResult<()> {
    let name = device
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let sysfs = Path::new("/sys/block").join(name).join("device/rescan");
    if sysfs.exists() {
        return std::fs::write(&sysfs, "1").map_err(|e| HostError::io("write", &sysfs, e));
    }
    if name.starts_with("loop") {
        // Loop devices re-read their backing file's size on LOOP_SET_CAPACITY.
        let f = open(device)?;
        return ioctl::loop_set_capacity(f.as_raw_fd())
            .map_err(|e| errno("LOOP_SET_CAPACITY", device, e));
    }
    // virtio-blk learns a new size from the host by itself.
    Ok(())
}

/// Run `work` on its own thread and wait for its answer until `deadline` (less the margin
/// the answer needs to reach the caller); after that, [`HostError::TimedOut`].
pub fn bounded<T: Send + 'static>(
    op: &'static str,
    path: &Path,
    deadline: Instant,
    work: impl FnOnce() -> HostResult<T> + Send + 'static,
) -> HostResult<T> {
    let started = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name(op.into())
        .spawn(move || {
            let _ = tx.send(work());
        })
        .map_err(|e| HostError::io("spawn thread", path, e))?;
    let wait = deadline
        .saturating_duration_since(started)
        .saturating_sub(DEADLINE_MARGIN);
    rx.recv_timeout(wait).unwrap_or_else(|_| {
        Err(HostError::TimedOut {
            op,
            path: path.to_path_buf(),
            waited: started.elapsed(),
        })
    })
}

pub fn flush(device: &Path) -> HostResult<()> {
    let f = open(device)?;
    f.sync_all()
        .map_err(|e| HostError::io("fsync", device, e))?;
    ioctl::flush_buffers(f.as_raw_fd()).map_err(|e| errno("BLKFLSBUF", device, e))
}

pub fn exists(id: DevId) -> bool {
    Path::new(&format!("/sys/dev/block/{id}")).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_names() {
        let c = candidates("0123456789abcdef0123456789");
        assert_eq!(
            c,
            vec![
                "virtio-0123456789abcdef0123",
                "virtio-0123456789abcdef0123456789",
                "scsi-0QEMU_QEMU_HARDDISK_0123456789abcdef0123",
                "scsi-0QEMU_QEMU_HARDDISK_0123456789abcdef0123456789",
                "wwn-0x0123456789abcdef0123456789",
            ]
        );
        let c = candidates("a-b");
        assert_eq!(c.len(), 3, "short ids do not repeat names: {c:?}");
    }

    #[test]
    fn bounded_work_gives_up_at_the_deadline() {
        let dev = Path::new("/dev/hung");
        let t = Instant::now();
        let err = bounded("rescan", dev, t + Duration::from_millis(300), || {
            std::thread::sleep(Duration::from_secs(3));
            Ok(())
        })
        .unwrap_err();
        assert!(matches!(err, HostError::TimedOut { .. }), "{err}");
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        let v = bounded("x", dev, Instant::now() + Duration::from_secs(5), || Ok(7)).unwrap();
        assert_eq!(v, 7);
    }

    #[test]
    fn find_gives_up_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let err = find(
            dir.path(),
            "nope",
            Instant::now() + Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(matches!(err, HostError::DeviceNotFound { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("no disk with serial nope under")
                && msg.contains("after waiting")
                && msg.contains("is volume nope attached to this node?"),
            "{msg}"
        );
        assert_eq!(lookup(dir.path(), "nope"), None);
        assert_eq!(lookup(dir.path(), "../x"), None);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the deadline was not honoured"
        );
        assert!(matches!(
            find(dir.path(), "../x/y", Instant::now()),
            Err(HostError::Unsupported(_))
        ));
    }
}
