//! The driver under demonstration: a child `cinder-csi serve --mode all --backend local`
//! process on a socket in the work directory, its log in a file there.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use crate::server::csi::pb;
use crate::tools::ctl::Client;

/// How long the driver gets to answer Probe after it was started.
const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// How long it gets to exit after SIGTERM before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);
const POLL: Duration = Duration::from_millis(10);
/// Deadline of each demo RPC.
pub const RPC_TIMEOUT: Duration = Duration::from_secs(120);

/// Paths the driver is started with.
pub struct DriverPaths {
    pub socket: PathBuf,
    pub state: PathBuf,
    pub kubelet: PathBuf,
    pub log: PathBuf,
}

pub struct Driver {
    child: Child,
    pub endpoint: String,
    log: PathBuf,
}

impl Driver {
    pub fn start(binary: &Path, paths: &DriverPaths, node_id: &str) -> Result<Self, String> {
        let endpoint = format!("unix://{}", paths.socket.display());
        let log = std::fs::File::create(&paths.log)
            .map_err(|e| format!("cannot create {}: {e}", paths.log.display()))?;
        let log2 = log
            .try_clone()
            .map_err(|e| format!("cannot open {}: {e}", paths.log.display()))?;
        let child = Command::new(binary)
            .arg("serve")
            .args(["--mode", "all", "--backend", "local"])
            .arg("--local-dir")
            .arg(&paths.state)
            .args(["--endpoint", &endpoint])
            .args(["--node-id", node_id])
            .arg("--kubelet-dir")
            .arg(&paths.kubelet)
            .args(["--log-level", "info", "--shutdown-grace", "10"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        Ok(Self {
            child,
            endpoint,
            log: paths.log.clone(),
        })
    }

    /// Connect and wait until Probe says ready (or the driver exits, or time runs out).
    pub async fn ready(&mut self) -> Result<Client, String> {
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("the driver exited ({status}) before it was ready"));
            }
            let last = match Client::connect(&self.endpoint, RPC_TIMEOUT).await {
                Ok(c) => match c.identity().probe(c.req(pb::ProbeRequest {})).await {
                    Ok(r) if r.get_ref().ready != Some(false) => return Ok(c),
                    Ok(_) => "Probe answered not ready".to_string(),
                    Err(s) => format!("Probe: {:?}: {}", s.code(), s.message()),
                },
                Err(e) => e,
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "not ready after {}s: {last}",
                    READY_TIMEOUT.as_secs()
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// SIGTERM, then SIGKILL if it does not exit in time. Returns how it ended.
    pub async fn stop(&mut self) -> Result<String, String> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Err(format!("the driver had already exited ({status})"));
        }
        if let Some(pid) = self.child.id() {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
        }
        match tokio::time::timeout(STOP_TIMEOUT, self.child.wait()).await {
            Ok(Ok(status)) if status.success() => Ok("exited cleanly after SIGTERM".into()),
            Ok(Ok(status)) => Err(format!("exited with {status} after SIGTERM")),
            Ok(Err(e)) => Err(format!("cannot wait for the driver: {e}")),
            Err(_) => {
                let _ = self.child.kill().await;
                Err(format!(
                    "did not exit within {}s of SIGTERM; killed",
                    STOP_TIMEOUT.as_secs()
                ))
            }
        }
    }

    /// The last lines of the driver's log (shown when something failed).
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}
