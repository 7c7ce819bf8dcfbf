//! Shared by the `openstack_*` integration tests: the test cloud's env file, the `ostack api`
//! REST helper, the real `cinder-csi` binary as a child process, a CSI client over its Unix
//! socket, and guards that undo everything a test made (mounts, driver process, cloud objects)
//! even when it fails.
//!
//! The tests run only when `CINDER_CSI_OSTACK_ENV` names the env file `tests/harness/openstack/ostack up`
//! wrote; otherwise they print "skipped: ..." and pass, so `cargo test` needs no cloud.
#![allow(dead_code)] // each test file uses a different part

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use cinder_csi::server::csi::pb;
use serde_json::Value;
use tonic::transport::{Channel, Endpoint, Uri};

use super::launch::{Launch, Running, LOG_LEVEL};
pub mod requests;

pub const ENV_VAR: &str = "CINDER_CSI_OSTACK_ENV";
/// Bound on any one CSI call or wait against the cloud (generous: a 2-core CI machine).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The running test cloud, as described by `$STATE/env.sh`.
pub struct Cloud {
    pub vars: BTreeMap<String, String>,
}

impl Cloud {
    /// `None` (after printing why) when the cloud tests are not enabled.
    pub fn from_env(test: &str) -> Option<Cloud> {
        let Some(path) = std::env::var_os(ENV_VAR) else {
            println!(
                "skipped: {test} needs the real OpenStack test cloud; run \
                 `tests/harness/openstack/ostack up` and set {ENV_VAR}=<state>/env.sh"
            );
            return None;
        };
        assert!(
            nix::unistd::geteuid().is_root(),
            "{test} needs root (loop devices, mkfs, mount)"
        );
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{ENV_VAR}={}: {e}", Path::new(&path).display()));
        Some(Cloud {
            vars: parse_env_file(&text),
        })
    }

    pub fn var(&self, key: &str) -> &str {
        self.vars
            .get(key)
            .unwrap_or_else(|| panic!("{key} missing from the env file"))
    }

    /// `node` is 1-based, as in the env file (`OSTACK_NODE_1_ID`, ...).
    pub fn node(&self, node: usize, what: &str) -> &str {
        self.var(&format!("OSTACK_NODE_{node}_{what}"))
    }

    /// One REST call through `ostack api`; `None` on 404.
    pub fn api(&self, admin: bool, service: &str, method: &str, path: &str) -> Option<Value> {
        self.api_body(admin, service, method, path, None)
    }

    /// [`Cloud::api`] with a JSON request body.
    pub fn api_body(
        &self,
        admin: bool,
        service: &str,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Option<Value> {
        self.try_api_body(admin, service, method, path, body)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Cloud::api_body`] that never panics (for guards' `Drop`): `Err` says what failed.
    pub fn try_api_body(
        &self,
        admin: bool,
        service: &str,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Option<Value>, String> {
        let var = |k: &str| {
            self.vars
                .get(k)
                .ok_or_else(|| format!("{k} missing from the env file"))
        };
        let mut cmd = Command::new("python3");
        cmd.arg(var("OSTACK_BIN")?).arg("api");
        if admin {
            cmd.arg("--admin");
        }
        cmd.args([service, method, path]);
        if let Some(b) = body {
            cmd.arg(b.to_string());
        }
        let out = cmd
            .env("OSTACK_STATE", var("OSTACK_STATE")?)
            .output()
            .map_err(|e| format!("run tests/harness/openstack/ostack api: {e}"))?;
        match out.status.code() {
            Some(0) => Ok(Some(
                serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
            )),
            Some(4) => Ok(None),
            _ => Err(format!(
                "ostack api {service} {method} {path}: {}{}",
                String::from_utf8_lossy(&out.stderr),
                String::from_utf8_lossy(&out.stdout)
            )),
        }
    }

    /// The Cinder volume as the member sees it; `None` once it is deleted.
    pub fn volume(&self, id: &str) -> Option<Value> {
        self.api(false, "block-storage", "GET", &format!("/volumes/{id}"))
            .map(|v| v["volume"].clone())
    }

    pub fn volume_status(&self, id: &str) -> String {
        self.try_volume_status(id).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Cloud::volume_status`] that never panics.
    pub fn try_volume_status(&self, id: &str) -> Result<String, String> {
        Ok(self
            .try_api_body(
                false,
                "block-storage",
                "GET",
                &format!("/volumes/{id}"),
                None,
            )?
            .map(|v| {
                v["volume"]["status"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .unwrap_or_else(|| "deleted".into()))
    }

    /// Poll until `check` holds (the cloud is eventually consistent by nature).
    pub fn wait_for(&self, what: &str, mut check: impl FnMut() -> bool) {
        let deadline = Instant::now() + CALL_TIMEOUT;
        while !check() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The by-id link the test hypervisor makes for `volume` on `node`.
    pub fn disk_link(&self, node: usize, volume: &str) -> PathBuf {
        let serial: String = volume.chars().take(20).collect();
        Path::new(self.node(node, "BY_ID_DIR")).join(format!("virtio-{serial}"))
    }
}

/// `export KEY=VALUE` lines, VALUE as written by Python's shlex.quote.
pub fn parse_env_file(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("export ") else {
            continue;
        };
        let Some((k, v)) = rest.split_once('=') else {
            continue;
        };
        // shlex.quote: bare, or '...' with embedded quotes written as '"'"'.
        let value = if let Some(inner) = v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
            inner.replace("'\"'\"'", "'")
        } else {
            v.to_string()
        };
        out.insert(k.to_string(), value);
    }
    out
}

/// The real `cinder-csi` binary serving against the cloud as one node; killed on drop.
pub struct Driver {
    child: Running,
    pub socket: PathBuf,
    pub log: PathBuf,
}

impl Driver {
    pub fn start(cloud: &Cloud, node: usize, dir: &Path, kubelet: &Path) -> Driver {
        let conf = PathBuf::from(cloud.var("OSTACK_CLOUD_CONF"));
        Self::start_with_conf(cloud, node, dir, kubelet, &conf)
    }

    /// [`Driver::start`] with another cloud.conf (e.g. one whose auth-url is a fault proxy).
    pub fn start_with_conf(
        cloud: &Cloud,
        node: usize,
        dir: &Path,
        kubelet: &Path,
        conf: &Path,
    ) -> Driver {
        Self::start_with_args(cloud, node, dir, kubelet, conf, &[])
    }

    /// [`Driver::start_with_conf`] with more flags (e.g. `--pvc-annotations`).
    pub fn start_with_args(
        cloud: &Cloud,
        node: usize,
        dir: &Path,
        kubelet: &Path,
        conf: &Path,
        extra: &[&str],
    ) -> Driver {
        let socket = dir.join("csi.sock");
        let log = dir.join("cinder-csi.log");
        let child = Launch::new()
            .args([
                "--mode",
                "all",
                "--backend",
                "openstack",
                "--cluster",
                "ostack-test",
            ])
            .endpoint(&socket)
            .arg("--cloud-config")
            .arg(conf)
            .arg("--by-id-dir")
            .arg(cloud.node(node, "BY_ID_DIR"))
            .arg("--metadata-url")
            .arg(cloud.node(node, "METADATA_URL"))
            .arg("--kubelet-dir")
            .arg(kubelet)
            .args(["--log-level", LOG_LEVEL])
            .args(extra)
            .inherit_log_level()
            .log(&log)
            .spawn();
        Driver { child, socket, log }
    }

    /// A CSI client on the driver's socket, once the socket accepts connections.
    pub async fn connect(&mut self) -> Channel {
        self.child
            .wait_for_socket_async(Duration::from_secs(30))
            .await;
        let path = self.socket.clone();
        Endpoint::try_from("http://csi.invalid")
            .expect("endpoint")
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move {
                    let s = tokio::net::UnixStream::connect(path).await?;
                    Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(s))
                }
            }))
            .await
            .expect("connect to cinder-csi")
    }

    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// kill -9: no shutdown code runs (what an OOM kill or a node failure does to the pod).
    pub fn kill9(&mut self) {
        self.child.kill9();
    }

    pub fn log_tail(&self) -> String {
        self.child.log_tail(40)
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // Not when already reaped (kill9): its pid may belong to someone else by now. Still
        // running after 10 s: `Running`'s own drop kills it.
        if matches!(self.child.try_wait(), Ok(None)) {
            self.child.stop_within(Duration::from_secs(10));
        }
        if std::thread::panicking() {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "--- cinder-csi log (last lines):\n{}",
                self.log_tail()
            );
        }
    }
}

/// Unmounts everything below `root` on drop (deepest first), whatever the test got to.
pub struct MountGuard(pub PathBuf);

pub fn mounts_under(root: &Path) -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut out: Vec<PathBuf> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(p.replace("\\040", " ")))
        .filter(|p| p.starts_with(root))
        .collect();
    out.sort_by_key(|p| std::cmp::Reverse(p.as_os_str().len()));
    out
}

impl Drop for MountGuard {
    fn drop(&mut self) {
        for m in mounts_under(&self.0) {
            let _ = nix::mount::umount2(&m, nix::mount::MntFlags::MNT_DETACH);
        }
    }
}

/// Deletes the cloud objects a test made on drop: detaches its volumes from the test servers,
/// then deletes its snapshots and volumes (as admin, best effort, bounded).
pub struct CloudObjects<'a> {
    pub cloud: &'a Cloud,
    pub volumes: Vec<String>,
    pub snapshots: Vec<String>,
}

impl<'a> CloudObjects<'a> {
    pub fn new(cloud: &'a Cloud) -> Self {
        Self {
            cloud,
            volumes: vec![],
            snapshots: vec![],
        }
    }
}

impl Drop for CloudObjects<'_> {
    // Never panics (a panic here while the test unwinds would abort the process and skip the
    // other guards): every failure is logged and the cleanup goes on.
    fn drop(&mut self) {
        let c = self.cloud;
        let quiet = |m: &str, p: &str, svc: &str| {
            if let Err(e) = c.try_api_body(true, svc, m, p, None) {
                log_cleanup(&format!("{m} {p}: {e}"));
            }
        };
        for v in &self.volumes {
            let path = format!("/volumes/{v}");
            match c.try_api_body(false, "block-storage", "GET", &path, None) {
                Ok(Some(vol)) => {
                    for a in vol["volume"]["attachments"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                    {
                        let server = a["server_id"].as_str().unwrap_or_default();
                        quiet(
                            "DELETE",
                            &format!("/servers/{server}/os-volume_attachments/{v}"),
                            "compute",
                        );
                    }
                }
                Ok(None) => {}
                Err(e) => log_cleanup(&format!("GET {path}: {e}")),
            }
        }
        for s in &self.snapshots {
            quiet("DELETE", &format!("/snapshots/{s}"), "block-storage");
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        for s in &self.snapshots {
            let path = format!("/snapshots/{s}");
            while Instant::now() < deadline
                && !matches!(
                    c.try_api_body(true, "block-storage", "GET", &path, None),
                    Ok(None)
                )
            {
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        for v in &self.volumes {
            while Instant::now() < deadline
                && !matches!(
                    c.try_volume_status(v).as_deref(),
                    Ok("available" | "error" | "deleted")
                )
            {
                std::thread::sleep(Duration::from_millis(200));
            }
            quiet("DELETE", &format!("/volumes/{v}"), "block-storage");
        }
    }
}

/// A cleanup step that failed: said on stderr (write errors ignored: `eprintln!` panics).
pub fn log_cleanup(what: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "cleanup: {what}");
}

pub type Identity = pb::identity_client::IdentityClient<Channel>;
pub type Controller = pb::controller_client::ControllerClient<Channel>;
pub type Node = pb::node_client::NodeClient<Channel>;

/// Await a CSI call with the test's bound; panics with the gRPC status on error.
pub async fn call<T>(
    what: &str,
    fut: impl std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> T {
    match tokio::time::timeout(CALL_TIMEOUT, fut).await {
        Ok(Ok(r)) => r.into_inner(),
        Ok(Err(status)) => panic!("{what}: {:?}: {}", status.code(), status.message()),
        Err(_) => panic!("{what}: no answer within {CALL_TIMEOUT:?}"),
    }
}
