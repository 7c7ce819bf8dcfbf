//! The one way the tests start the real `cinder-csi` as a server. [`Launch`] says how: its
//! arguments and environment, a wrapper command, where its output goes; [`Running`] is the
//! process: wait until its socket accepts or it answers Probe, its pid, kill -9, SIGTERM with
//! the exit status, its log. A `Running` not yet reaped is killed on drop, also on panic.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use cinder_csi::server::csi::pb;
use cinder_csi::tools::ctl::Client;
use nix::sys::signal::Signal;

use super::die_with_parent::DieWithParent;

pub const BIN: &str = env!("CARGO_BIN_EXE_cinder-csi");
/// What the driver logs unless a test says otherwise: its own debug lines, others' info.
pub const LOG_LEVEL: &str = "cinder_csi=debug,info";

enum Output {
    Inherit,
    Null,
    /// Both streams on one open file: two opens would each write from offset 0 over the other.
    File {
        path: PathBuf,
        append: bool,
    },
}

/// How to start the driver; [`Launch::spawn`] starts it.
pub struct Launch {
    wrapper: Vec<String>,
    args: Vec<OsString>,
    envs: Vec<(OsString, Option<OsString>)>,
    log_level: bool,
    output: Output,
    socket: Option<PathBuf>,
}

impl Default for Launch {
    fn default() -> Self {
        Self::new()
    }
}

impl Launch {
    pub fn new() -> Launch {
        Launch {
            wrapper: Vec::new(),
            args: Vec::new(),
            envs: Vec::new(),
            log_level: true,
            output: Output::Inherit,
            socket: None,
        }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, args: I) -> Self {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// `--endpoint unix://<socket>`, and the socket the waits below look at.
    pub fn endpoint(self, socket: &Path) -> Self {
        let endpoint = format!("unix://{}", socket.display());
        self.args(["--endpoint", &endpoint]).socket(socket)
    }

    /// The socket the driver will listen on, when the arguments or environment already name it.
    pub fn socket(mut self, socket: &Path) -> Self {
        self.socket = Some(socket.to_path_buf());
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        let value = Some(value.as_ref().to_owned());
        self.envs.push((key.as_ref().to_owned(), value));
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.envs.push((key.as_ref().to_owned(), None));
        self
    }

    /// Leave `CINDER_CSI_LOG_LEVEL` as the test process has it (not [`LOG_LEVEL`]).
    pub fn inherit_log_level(mut self) -> Self {
        self.log_level = false;
        self
    }

    /// Run the driver under `command` (whitespace-separated words, e.g. `heaptrack -o x`);
    /// empty: none. [`Running::pid`] then names the driver, not the wrapper.
    pub fn wrapper(mut self, command: &str) -> Self {
        self.wrapper = command.split_whitespace().map(str::to_owned).collect();
        self
    }

    /// Both output streams to `path`, truncated first.
    pub fn log(mut self, path: &Path) -> Self {
        let path = path.to_path_buf();
        self.output = Output::File {
            path,
            append: false,
        };
        self
    }

    /// Both output streams appended to `path` (a restarted driver goes on in the same log).
    pub fn log_appending(mut self, path: &Path) -> Self {
        let path = path.to_path_buf();
        self.output = Output::File { path, append: true };
        self
    }

    /// Both output streams to /dev/null.
    pub fn quiet(mut self) -> Self {
        self.output = Output::Null;
        self
    }

    /// Start it (stdin null, dying with the test process); it may not listen yet.
    pub fn spawn(self) -> Running {
        let mut cmd = match self.wrapper.split_first() {
            Some((program, words)) => {
                let mut c = Command::new(program);
                c.args(words).arg(BIN);
                c
            }
            None => Command::new(BIN),
        };
        cmd.args(&self.args);
        if self.log_level {
            cmd.env("CINDER_CSI_LOG_LEVEL", LOG_LEVEL);
        }
        for (k, v) in &self.envs {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let log = match &self.output {
            Output::Inherit => None,
            Output::Null => {
                cmd.stdout(Stdio::null()).stderr(Stdio::null());
                None
            }
            Output::File { path, append } => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .write(true)
                    .append(*append)
                    .truncate(!*append)
                    .open(path)
                    .unwrap_or_else(|e| panic!("driver log {}: {e}", path.display()));
                cmd.stdout(file.try_clone().expect("driver log"))
                    .stderr(file);
                Some(path.clone())
            }
        };
        let child = cmd
            .stdin(Stdio::null())
            .die_with_parent()
            .spawn()
            .expect("spawn cinder-csi");
        Running {
            child,
            exited: None,
            wrapped: !self.wrapper.is_empty(),
            socket: self.socket,
            log,
        }
    }
}

/// A started driver; killed (SIGKILL) on drop unless already reaped.
pub struct Running {
    child: Child,
    exited: Option<ExitStatus>,
    wrapped: bool,
    socket: Option<PathBuf>,
    log: Option<PathBuf>,
}

impl Running {
    /// The driver's pid (under a wrapper: the descendant running the driver, once it runs).
    pub fn pid(&self) -> u32 {
        let top = self.child.id();
        if !self.wrapped {
            return top;
        }
        let exe = std::fs::canonicalize(BIN).ok();
        let mut todo = vec![top];
        while let Some(pid) = todo.pop() {
            if std::fs::read_link(format!("/proc/{pid}/exe")).ok() == exe {
                return pid;
            }
            let kids = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .unwrap_or_default();
            todo.extend(
                kids.split_whitespace()
                    .filter_map(|k| k.parse::<u32>().ok()),
            );
        }
        top
    }

    pub fn socket(&self) -> &Path {
        self.socket.as_deref().expect("no socket given to Launch")
    }

    /// The exit status, once it exited (reaped here, so its pid is never signalled again).
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait()?;
        }
        Ok(self.exited)
    }

    pub fn wait(&mut self) -> std::io::Result<ExitStatus> {
        if self.exited.is_none() {
            self.exited = Some(self.child.wait()?);
        }
        Ok(self.exited.unwrap())
    }

    pub fn signal(&self, sig: Signal) {
        self.send(sig).expect("signal the driver");
    }

    fn send(&self, sig: Signal) -> nix::Result<()> {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid() as i32), sig)
    }

    /// SIGTERM, then wait for the exit.
    pub fn stop(&mut self) -> ExitStatus {
        self.signal(Signal::SIGTERM);
        self.wait().expect("wait for the driver")
    }

    /// SIGTERM, then wait at most `timeout`; `None` if it still runs. Never panics (for a
    /// `Drop`).
    pub fn stop_within(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let _ = self.send(Signal::SIGTERM);
        let until = Instant::now() + timeout;
        while Instant::now() < until {
            if let Ok(Some(status)) = self.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// kill -9: no shutdown code runs (what an OOM kill or a node failure does to the pod).
    pub fn kill9(&mut self) {
        if self.exited.is_some() {
            return;
        }
        let _ = self.send(Signal::SIGKILL);
        let _ = self.child.kill();
        let _ = self.wait();
    }

    /// Its whole log (empty without a log file).
    pub fn log(&self) -> String {
        self.log
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default()
    }

    /// The last `n` lines of its log.
    pub fn log_tail(&self, n: usize) -> String {
        let text = self.log();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    fn exited_early(&self, status: ExitStatus) -> ! {
        let socket = self.socket().display();
        panic!(
            "cinder-csi on {socket} exited ({status}):\n{}",
            self.log_tail(40)
        );
    }

    /// One look at the socket: true once it accepts; panics (with the log tail) when the
    /// driver has exited or `until` has passed.
    fn socket_ready(&mut self, until: Instant) -> bool {
        if let Some(status) = self.try_wait().expect("wait for the driver") {
            self.exited_early(status);
        }
        let socket = self.socket().to_path_buf();
        if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
            return true;
        }
        assert!(
            Instant::now() < until,
            "cinder-csi did not listen on {} within the bound:\n{}",
            socket.display(),
            self.log_tail(40)
        );
        false
    }

    /// Block until the socket accepts connections.
    pub fn wait_for_socket(&mut self, timeout: Duration) {
        let until = Instant::now() + timeout;
        while !self.socket_ready(until) {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// [`Running::wait_for_socket`] for async tests: the runtime's other tasks go on meanwhile.
    pub async fn wait_for_socket_async(&mut self, timeout: Duration) {
        let until = Instant::now() + timeout;
        while !self.socket_ready(until) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Wait until it answers Probe (Identity answers on a standby too); a client to it.
    pub async fn wait_for_probe(&mut self, timeout: Duration) -> Client {
        let endpoint = format!("unix://{}", self.socket().display());
        let until = Instant::now() + timeout;
        loop {
            if let Ok(c) = Client::connect(&endpoint, Duration::from_secs(60)).await {
                if c.identity().probe(c.req(pb::ProbeRequest {})).await.is_ok() {
                    return c;
                }
            }
            if let Some(status) = self.try_wait().expect("wait for the driver") {
                self.exited_early(status);
            }
            assert!(
                Instant::now() < until,
                "cinder-csi on {} not serving:\n{}",
                self.socket().display(),
                self.log_tail(40)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kill9();
    }
}
