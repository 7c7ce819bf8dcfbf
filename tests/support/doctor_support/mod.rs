//! Shared by tests/cli/doctor.rs and tests/cloud/openstack_doctor.rs: the real binary's `doctor`, and a
//! directory bind-mounted onto itself with shared propagation (what kubelet's dir is on a
//! node), unmounted on drop.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use nix::mount::{mount, umount2, MntFlags, MsFlags};

/// `cinder-csi doctor ARGS`: exit status and stdout + stderr.
pub fn doctor(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cinder-csi"))
        .arg("doctor")
        .args(args)
        .env_remove("CLOUD_CONFIG")
        .env_remove("CSI_ENDPOINT")
        .output()
        .expect("run cinder-csi doctor");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// The report line of check `name` (`STATUS  name  detail`).
pub fn line<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find(|l| {
            l.get(6..)
                .is_some_and(|rest| rest.starts_with(name) && rest[name.len()..].starts_with("  "))
        })
        .unwrap_or_else(|| panic!("no line for {name:?} in:\n{out}"))
}

/// Status of check `name`.
pub fn status<'a>(out: &'a str, name: &str) -> &'a str {
    line(out, name).split_whitespace().next().unwrap_or("")
}

/// A directory that is its own mount point, with shared propagation.
pub struct SharedDir {
    pub path: PathBuf,
    _dir: tempfile::TempDir,
}

impl SharedDir {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kubelet");
        std::fs::create_dir(&path).unwrap();
        mount(
            Some(&path),
            &path,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
        .expect("bind");
        let guard = SharedDir { path, _dir: dir };
        mount(
            None::<&str>,
            &guard.path,
            None::<&str>,
            MsFlags::MS_SHARED,
            None::<&str>,
        )
        .expect("make shared");
        guard
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SharedDir {
    fn drop(&mut self) {
        let _ = umount2(&self.path, MntFlags::MNT_DETACH);
    }
}
