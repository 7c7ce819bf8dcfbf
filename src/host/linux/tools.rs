//! Filesystem tools run as processes: mkfs.*, e2fsck/resize2fs, xfs_growfs, btrfs. (Only
//! mounting must be syscalls; these tools do far more work than a spawn costs.)

use std::path::Path;
use std::process::{Command, Stdio};

use crate::host::{FormatOptions, FsKind, HostError, HostResult};

/// Directories searched for tools besides $PATH (sbin is often missing from a container's PATH).
const EXTRA_DIRS: &[&str] = &["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"];

/// Whether `tool` can be run.
pub fn present(tool: &str) -> bool {
    resolve(tool).is_some()
}

fn resolve(tool: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(EXTRA_DIRS.iter().map(Into::into))
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// Tools each filesystem needs (format, check, grow).
pub fn needed(fs: FsKind) -> &'static [&'static str] {
    match fs {
        FsKind::Ext2 => &["mkfs.ext2", "e2fsck", "resize2fs"],
        FsKind::Ext3 => &["mkfs.ext3", "e2fsck", "resize2fs"],
        FsKind::Ext4 => &["mkfs.ext4", "e2fsck", "resize2fs"],
        FsKind::Xfs => &["mkfs.xfs", "xfs_growfs"],
        FsKind::Btrfs => &["mkfs.btrfs", "btrfs"],
    }
}

pub fn missing(fs: FsKind) -> Vec<String> {
    needed(fs)
        .iter()
        .filter(|t| !present(t))
        .map(|t| t.to_string())
        .collect()
}

pub struct Output {
    pub status: Option<i32>,
    pub stderr: String,
}

/// Run `tool args…` with a C locale; stdout is discarded, stderr kept for the error.
pub fn run(tool: &str, args: &[String]) -> HostResult<Output> {
    let program = resolve(tool).unwrap_or_else(|| tool.into());
    let out = Command::new(&program)
        .args(args)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| HostError::io("exec", &program, e))?;
    // One line for the gRPC message; e2fsprogs' version banner says nothing about the error.
    let stderr = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with(&format!("{tool} 1.")))
        .collect::<Vec<_>>()
        .join("; ");
    Ok(Output {
        status: out.status.code(),
        stderr,
    })
}

fn command_error(tool: &str, args: &[String], out: Output) -> HostError {
    HostError::Command {
        command: format!("{tool} {}", args.join(" ")),
        status: out.status,
        stderr: out.stderr,
    }
}

/// Run and require exit status 0.
pub fn run_ok(tool: &str, args: &[String]) -> HostResult<()> {
    let out = run(tool, args)?;
    if out.status == Some(0) {
        Ok(())
    } else {
        Err(command_error(tool, args, out))
    }
}

pub fn mkfs_args(device: &Path, fs: FsKind, o: &FormatOptions) -> (String, Vec<String>) {
    let mut a: Vec<String> = Vec::new();
    match fs {
        FsKind::Ext2 | FsKind::Ext3 | FsKind::Ext4 => {
            // No -F: it would push nonsense through (a block size the kernel cannot mount
            // formats the device, then the mount fails); without it mke2fs asks, reads EOF
            // from /dev/null and stops before writing. (Its existing-filesystem check runs
            // only on a terminal, so our own probe is what guards data.) Lazy init keeps mkfs
            // ~20 ms at 100 GiB even without zero-out offload (perf-limits.md §4). nodiscard:
            // a blank volume has nothing to discard, and discarding all of it costs time in
            // proportion to its size on many backends (lazy init does not rely on it).
            a.extend(
                [
                    "-q",
                    "-m0",
                    "-E",
                    "lazy_itable_init=1,lazy_journal_init=1,nodiscard",
                ]
                .map(String::from),
            );
            if let Some(b) = o.block_size {
                a.extend(["-b".into(), b.to_string()]);
            }
            if let Some(i) = o.inode_size {
                a.extend(["-I".into(), i.to_string()]);
            }
            if let Some(i) = o.bytes_per_inode {
                a.extend(["-i".into(), i.to_string()]);
            }
            if let Some(n) = o.number_of_inodes {
                a.extend(["-N".into(), n.to_string()]);
            }
        }
        FsKind::Xfs => {
            // No -f: mkfs.xfs refuses on its own if it sees a signature we missed. -K: no
            // discard of a blank device (see ext above).
            a.extend(["-q", "-K"].map(String::from));
            if o.overwrite_interrupted {
                a.push("-f".into());
            }
            if let Some(b) = o.block_size {
                a.extend(["-b".into(), format!("size={b}")]);
            }
            if let Some(i) = o.inode_size {
                a.extend(["-i".into(), format!("size={i}")]);
            }
        }
        FsKind::Btrfs => {
            // No -f, for the same reason; -K: no discard.
            a.extend(["-q", "-K"].map(String::from));
            if o.overwrite_interrupted {
                a.push("-f".into());
            }
            if let Some(b) = o.block_size {
                a.extend(["-s".into(), b.to_string()]);
            }
        }
    }
    a.push(device.display().to_string());
    (format!("mkfs.{fs}"), a)
}

pub fn format(device: &Path, fs: FsKind, o: &FormatOptions) -> HostResult<()> {
    let (tool, args) = mkfs_args(device, fs, o);
    run_ok(&tool, &args)
}

/// A read-only check of the unmounted filesystem on `device`: exit 0 means whole and
/// consistent (a format killed half-way is neither).
pub fn is_consistent(device: &Path, fs: FsKind) -> HostResult<bool> {
    let dev = device.display().to_string();
    let (tool, args): (&str, Vec<String>) = match fs {
        FsKind::Ext2 | FsKind::Ext3 | FsKind::Ext4 => {
            ("e2fsck", vec!["-f".into(), "-n".into(), dev])
        }
        FsKind::Xfs => ("xfs_repair", vec!["-n".into(), dev]),
        FsKind::Btrfs => ("btrfs", vec!["check".into(), "--readonly".into(), dev]),
    };
    Ok(run(tool, &args)?.status == Some(0))
}

/// ext*: check then grow while unmounted (needs no CAP_SYS_RESOURCE, unlike online grow).
pub fn grow_offline(device: &Path, fs: FsKind) -> HostResult<()> {
    if !fs.is_ext() {
        return Err(HostError::Unsupported(format!(
            "{fs} grows online only; mount it first"
        )));
    }
    let dev = device.display().to_string();
    // resize2fs insists on a fresh check; -p repairs only what is safe without a human.
    let args = vec!["-f".to_string(), "-p".to_string(), dev.clone()];
    let out = run("e2fsck", &args)?;
    // 0: clean, 1: errors corrected. Anything else needs an operator.
    if !matches!(out.status, Some(0 | 1)) {
        return Err(command_error("e2fsck", &args, out));
    }
    run_ok("resize2fs", &[dev])
}

pub fn grow_online(device: &Path, mount_point: &Path, fs: FsKind) -> HostResult<()> {
    let mp = mount_point.display().to_string();
    match fs {
        FsKind::Ext2 | FsKind::Ext3 | FsKind::Ext4 => {
            let args = vec![device.display().to_string()];
            let out = run("resize2fs", &args)?;
            if out.status == Some(0) {
                return Ok(());
            }
            if out.stderr.contains("Permission denied") || out.stderr.contains("not permitted") {
                return Err(HostError::NotPermitted {
                    op: "resize2fs (online grow)",
                    path: mount_point.to_path_buf(),
                    detail: format!(
                        "the kernel refused to grow {fs} while mounted (EPERM): the node \
                         plugin needs CAP_SYS_RESOURCE for that (run it privileged); \
                         resize2fs said: {}",
                        out.stderr
                    ),
                });
            }
            Err(command_error("resize2fs", &args, out))
        }
        FsKind::Xfs => run_ok("xfs_growfs", &["-d".into(), mp]),
        FsKind::Btrfs => run_ok(
            "btrfs",
            &["filesystem".into(), "resize".into(), "max".into(), mp],
        ),
    }
}
