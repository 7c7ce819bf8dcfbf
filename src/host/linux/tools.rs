//! Filesystem tools run as processes: the mkfs, check and grow runs each filesystem's ops
//! (`host/fs`) describe. (Only mounting must be syscalls; these tools do far more work than
//! a spawn costs.)

use std::path::Path;
use std::process::{Command, Stdio};

use crate::host::fs::Tool;
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
    fs.ops().tools()
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

/// Run `t`, requiring one of its success statuses.
fn run_tool(t: &Tool) -> HostResult<()> {
    let out = run(t.program, &t.args)?;
    match out.status {
        Some(s) if t.ok.contains(&s) => Ok(()),
        _ => Err(command_error(t.program, &t.args, out)),
    }
}

pub fn format(device: &Path, fs: FsKind, o: &FormatOptions) -> HostResult<()> {
    let t = fs.ops().mkfs(device, o);
    // The argv, once per format (rare): what a StorageClass's options made of it.
    tracing::info!(device = %device.display(), program = t.program, args = ?t.args, "formatting a blank disk");
    run_tool(&t)
}

/// A read-only check of the unmounted filesystem on `device`: exit 0 means whole and
/// consistent (a format killed half-way is neither).
pub fn is_consistent(device: &Path, fs: FsKind) -> HostResult<bool> {
    let t = fs.ops().check(device);
    Ok(run(t.program, &t.args)?.status == Some(0))
}

/// Check then grow while unmounted, for the filesystems that grow so (ext*).
pub fn grow_offline(device: &Path, fs: FsKind) -> HostResult<()> {
    if !fs.ops().grows_offline() {
        return Err(HostError::Unsupported(format!(
            "{fs} grows online only; mount it first"
        )));
    }
    fs.ops().grow_offline(device).iter().try_for_each(run_tool)
}

pub fn grow_online(device: &Path, mount_point: &Path, fs: FsKind) -> HostResult<()> {
    let t = fs.ops().grow_online(device, mount_point);
    let out = run(t.program, &t.args)?;
    if out.status.is_some_and(|s| t.ok.contains(&s)) {
        return Ok(());
    }
    match fs.ops().grow_refused(mount_point, &out.stderr) {
        Some(e) => Err(e),
        None => Err(command_error(t.program, &t.args, out)),
    }
}
