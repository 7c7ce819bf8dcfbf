//! Shared helpers for integration tests: run the real `cinder-csi` binary on a temp socket
//! and talk to it over gRPC. Everything started here is stopped on drop, also on panic.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tonic::transport::Channel;

pub use super::die_with_parent::DieWithParent;

/// A running driver process; killed (SIGKILL) on drop unless already stopped.
pub struct Driver {
    pub child: Option<Child>,
    pub socket: PathBuf,
    pub dir: tempfile::TempDir,
}

impl Driver {
    /// Start the binary with `args` plus `--endpoint unix://<tmp>/csi.sock`, and wait until
    /// the socket accepts connections.
    pub fn start(args: &[&str]) -> Driver {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("csi.sock");
        Self::start_at(dir, socket, args)
    }

    pub fn start_at(dir: tempfile::TempDir, socket: PathBuf, args: &[&str]) -> Driver {
        Self::start_with_env(dir, socket, args, &[])
    }

    /// As [`Driver::start_at`], with extra environment variables (e.g. a PATH that puts
    /// test shims of the filesystem tools first).
    pub fn start_with_env(
        dir: tempfile::TempDir,
        socket: PathBuf,
        args: &[&str],
        envs: &[(&str, &std::ffi::OsStr)],
    ) -> Driver {
        let child = Command::new(env!("CARGO_BIN_EXE_cinder-csi"))
            .args(args)
            .envs(envs.iter().copied())
            .arg("--endpoint")
            .arg(format!("unix://{}", socket.display()))
            .env("CINDER_CSI_LOG_LEVEL", "cinder_csi=debug,info")
            .stdin(Stdio::null())
            .die_with_parent()
            .spawn()
            .expect("spawn cinder-csi");
        let driver = Driver {
            child: Some(child),
            socket,
            dir,
        };
        driver.wait_for_socket(Duration::from_secs(10));
        driver
    }

    pub fn wait_for_socket(&self, timeout: Duration) {
        let until = Instant::now() + timeout;
        while Instant::now() < until {
            if std::os::unix::net::UnixStream::connect(&self.socket).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        panic!(
            "driver did not listen on {} within {timeout:?}",
            self.socket.display()
        );
    }

    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    pub async fn channel(&self) -> Channel {
        cinder_csi::server::csi::client::connect_unix(self.socket.clone())
            .await
            .expect("connect")
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("running").id() as i32
    }

    /// Send a signal and wait for the process to exit; returns its exit status.
    pub fn signal_and_wait(&mut self, sig: nix::sys::signal::Signal) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
        child.wait().expect("wait")
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A plain HTTP GET of `path` on 127.0.0.1:`port`: (status code, body).
pub fn http_get(port: u16, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let code = text[9..12].parse().unwrap();
    let body = text
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    (code, body)
}
