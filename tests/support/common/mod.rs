//! Shared helpers for integration tests: run the real `cinder-csi` binary on a temp socket
//! and talk to it over gRPC. Everything started here is stopped on drop, also on panic.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use tonic::transport::Channel;

use super::launch::{Launch, Running};

/// A running driver process; killed (SIGKILL) on drop unless already stopped.
pub struct Driver {
    pub child: Option<Running>,
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
        let launch = envs
            .iter()
            .fold(Launch::new().args(args), |l, (k, v)| l.env(k, v));
        Self::launch(dir, launch.endpoint(&socket))
    }

    /// Spawn `launch` (whose socket is in `dir`) and wait until its socket accepts.
    pub fn launch(dir: tempfile::TempDir, launch: Launch) -> Driver {
        let mut running = launch.spawn();
        running.wait_for_socket(Duration::from_secs(10));
        Driver {
            socket: running.socket().to_path_buf(),
            child: Some(running),
            dir,
        }
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
        self.child.as_ref().expect("running").pid() as i32
    }

    /// Send a signal and wait for the process to exit; returns its exit status.
    pub fn signal_and_wait(&mut self, sig: nix::sys::signal::Signal) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        child.signal(sig);
        child.wait().expect("wait")
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
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
