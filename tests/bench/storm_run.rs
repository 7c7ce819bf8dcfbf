//! One driver's storm: start it, run the four phases over gRPC, wait out what it leaves
//! pending (a CreateVolume that returns before `available`, a DeleteVolume before gone), and
//! read what the relay counted. Volumes left behind by a failure are removed as admin.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use cinder_csi::server::csi::pb;
use cinder_csi::server::csi::pb::controller_client::ControllerClient;
use tokio::time::Instant;
use tonic::transport::{Channel, Endpoint, Uri};

use super::direct::Direct;
use super::openstack_support::requests::mount_cap;
use super::openstack_support::Cloud;
use super::proxy::{self, Relay, Seen};

/// The sidecars' RPC timeout (upstream manifests: --timeout=3m).
const RPC_TIMEOUT: Duration = Duration::from_secs(180);
const GIB: i64 = 1 << 30;
pub const PHASES: [&str; 4] = [
    "CreateVolume",
    "ControllerPublishVolume",
    "ControllerUnpublishVolume",
    "DeleteVolume",
];

pub struct Phase {
    /// Until the last RPC answered.
    pub call: Duration,
    /// Then until the cloud showed every volume `available` (create) or gone (delete).
    pub wait: Duration,
    pub latencies: Vec<Duration>,
    pub seen: BTreeMap<&'static str, Seen>,
}

impl Phase {
    pub fn wall(&self) -> f64 {
        (self.call + self.wait).as_secs_f64()
    }

    pub fn pct(&self, p: f64) -> f64 {
        percentile(&self.latencies, p)
    }

    pub fn requests(&self) -> u64 {
        self.seen.values().map(Seen::total).sum()
    }
}

/// Nearest-rank percentile `p` (0..=1) of sorted `samples`, in seconds; 0 when empty.
pub fn percentile(samples: &[Duration], p: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let i = ((samples.len() as f64 * p).ceil() as usize).clamp(1, samples.len()) - 1;
    samples[i].as_secs_f64()
}

pub struct Outcome {
    pub label: String,
    pub phases: Vec<Phase>,
    pub tokens: u64,
    pub peak_rss_kib: u64,
    pub error: Option<String>,
    /// UTC start and end of the storm, with the CPU pressure (PSI some avg10) at each.
    pub when: String,
}

/// "HH:MM:SS UTC (PSI n %)": when a storm started or ended and how busy the CPUs were.
pub fn now_and_load() -> String {
    let psi = std::fs::read_to_string("/proc/pressure/cpu").unwrap_or_default();
    let avg10 = psi
        .split_whitespace()
        .find_map(|w| w.strip_prefix("avg10="))
        .unwrap_or("?")
        .to_string();
    format!(
        "{} UTC (PSI {avg10} %)",
        chrono::Utc::now().format("%H:%M:%S")
    )
}

/// A driver process; stopped (its log shown on failure) when dropped.
struct Driver {
    child: Child,
    log: PathBuf,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
        // STORM_KEEP_LOGS=DIR keeps each driver's log (e.g. run with --log-level=debug: every
        // request with its latency) as DIR/<pid>.log; the temp dir goes with the driver.
        if let Some(dir) = std::env::var_os("STORM_KEEP_LOGS") {
            let to = std::path::Path::new(&dir).join(format!("{}.log", self.child.id()));
            if std::fs::create_dir_all(&dir)
                .and_then(|_| std::fs::copy(&self.log, &to))
                .is_ok()
            {
                println!("driver log kept: {}", to.display());
            }
        }
    }
}

/// A driver started fresh on its own socket, with the relayed cloud.conf, answering.
pub struct Launched {
    pub label: String,
    pub client: ControllerClient<Channel>,
    driver: Driver,
    _dir: tempfile::TempDir,
}

impl Launched {
    /// Start `cmd` (plus `--endpoint` and `--cloud-config`) and wait until it answers
    /// ListVolumes. `Err((label, why))` when it does not.
    pub async fn start(label: &str, cmd: &[String], conf: &Path) -> Result<Self, (String, String)> {
        let label = format!(
            "{label} ({})",
            Path::new(&cmd[0]).file_name().unwrap().to_string_lossy()
        );
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("csi.sock");
        let log = dir.path().join("driver.log");
        let driver = Driver {
            child: Command::new(&cmd[0])
                .args(&cmd[1..])
                .arg(format!("--endpoint=unix://{}", socket.display()))
                .arg(format!("--cloud-config={}", conf.display()))
                .stdin(Stdio::null())
                .stdout(std::fs::File::create(&log).unwrap())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap_or_else(|e| panic!("start {}: {e}", cmd[0])),
            log,
        };
        let client = match connect(&socket).await {
            Ok(ch) => ControllerClient::new(ch),
            Err(e) => return Err((label, e)),
        };
        let me = Self {
            label,
            client,
            driver,
            _dir: dir,
        };
        match ready(&me.client).await {
            Ok(()) => Ok(me),
            Err(e) => Err((
                me.label.clone(),
                format!("{e}\n--- driver log:\n{}", me.tail()),
            )),
        }
    }

    pub fn tail(&self) -> String {
        let text = std::fs::read_to_string(&self.driver.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    pub fn pid(&self) -> u32 {
        self.driver.child.id()
    }

    /// Peak resident set (VmHWM) in KiB, from /proc.
    pub fn peak_rss_kib(&self) -> u64 {
        super::proc_sample::sample(self.pid()).hwm_kib
    }
}

pub async fn storm(
    cloud: &Cloud,
    relay: &Relay,
    label: &str,
    cmd: &[String],
    conf: &Path,
    n: usize,
) -> Outcome {
    let start = relay.take();
    let began = now_and_load();
    let run = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let mut phases = Vec::new();
    let (label, result, peak_rss_kib) = match Launched::start(label, cmd, conf).await {
        Err((label, e)) => (label, Err(e), 0),
        Ok(driver) => {
            let r = phases_of(cloud, relay, &driver.client, n, &run, &mut phases)
                .await
                .map_err(|e| format!("{e}\n--- driver log:\n{}", driver.tail()));
            (driver.label.clone(), r, driver.peak_rss_kib())
        }
    };
    let when = format!("{began} to {}", now_and_load());
    let all = proxy::since(&start, &relay.take());
    let tokens = all.get("Keystone").map_or(0, |s| {
        s.requests.get("POST /v3/auth/tokens").copied().unwrap_or(0)
    });
    leftovers(cloud, &run);
    Outcome {
        label,
        phases,
        tokens,
        peak_rss_kib,
        error: result.err(),
        when,
    }
}

/// The four phases of one storm of `n` volumes named `storm-<run>-<i>`, through `client`.
pub async fn phases_of(
    cloud: &Cloud,
    relay: &Relay,
    client: &ControllerClient<Channel>,
    n: usize,
    run: &str,
    phases: &mut Vec<Phase>,
) -> Result<(), String> {
    let watch = Direct::new(cloud).await?;
    let _warm = watch.keep_warm();
    let server = cloud.node(1, "ID").to_string();
    let ids = phase(phases, relay, n, |i| {
        let mut c = client.clone();
        let name = format!("storm-{run}-{i}");
        async move {
            let r = c
                .create_volume(rpc(pb::CreateVolumeRequest {
                    name,
                    capacity_range: Some(pb::CapacityRange {
                        required_bytes: GIB,
                        limit_bytes: 0,
                    }),
                    volume_capabilities: vec![mount_cap()],
                    ..Default::default()
                }))
                .await?;
            Ok(r.into_inner()
                .volume
                .map(|v| v.volume_id)
                .unwrap_or_default())
        }
    })
    .await?;
    // Charge the wait until all are available (upstream returns right after the POST).
    let last = phases.last_mut().unwrap();
    last.wait = watch
        .until(&ids, |s| s == Some("available"), RPC_TIMEOUT)
        .await?;
    let ids = &ids;
    phase(phases, relay, n, |i| {
        let mut c = client.clone();
        let (id, node) = (ids[i].clone(), server.clone());
        async move {
            c.controller_publish_volume(rpc(pb::ControllerPublishVolumeRequest {
                volume_id: id.clone(),
                node_id: node,
                volume_capability: Some(mount_cap()),
                ..Default::default()
            }))
            .await?;
            Ok(id)
        }
    })
    .await?;
    phase(phases, relay, n, |i| {
        let mut c = client.clone();
        let (id, node) = (ids[i].clone(), server.clone());
        async move {
            c.controller_unpublish_volume(rpc(pb::ControllerUnpublishVolumeRequest {
                volume_id: id.clone(),
                node_id: node,
                ..Default::default()
            }))
            .await?;
            Ok(id)
        }
    })
    .await?;
    phase(phases, relay, n, |i| {
        let mut c = client.clone();
        let id = ids[i].clone();
        async move {
            c.delete_volume(rpc(pb::DeleteVolumeRequest {
                volume_id: id.clone(),
                ..Default::default()
            }))
            .await?;
            Ok(id)
        }
    })
    .await?;
    let last = phases.last_mut().unwrap();
    last.wait = watch.until(ids, |s| s.is_none(), RPC_TIMEOUT).await?;
    Ok(())
}

/// Untimed, before the first phase: one ListVolumes (max 1 entry) answered, so each driver has
/// its Keystone token and Cinder has validated it before the clock starts. Upstream
/// authenticates before it binds its socket and cinder-csi right after (in the background),
/// so without this the first phase charged cinder-csi alone for its token request and for
/// cinder-api's first validation of it (Keystone took 1-2 s per token request at 13:03 UTC).
async fn ready(client: &ControllerClient<Channel>) -> Result<(), String> {
    let deadline = Instant::now() + RPC_TIMEOUT;
    loop {
        let mut c = client.clone();
        match c
            .list_volumes(rpc(pb::ListVolumesRequest {
                max_entries: 1,
                ..Default::default()
            }))
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() > deadline => return Err(format!("ListVolumes: {e}")),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

pub fn rpc<T>(msg: T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.set_timeout(RPC_TIMEOUT);
    r
}

/// Run `n` copies of one RPC at once; record the time, latencies and requests on the wire.
async fn phase<F, Fut>(
    phases: &mut Vec<Phase>,
    relay: &Relay,
    n: usize,
    call: F,
) -> Result<Vec<String>, String>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<String, tonic::Status>> + Send + 'static,
{
    let before = relay.take();
    let started = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let fut = call(i);
            tokio::spawn(async move {
                let t = Instant::now();
                (fut.await, t.elapsed())
            })
        })
        .collect();
    let mut ids = Vec::with_capacity(n);
    let mut latencies = Vec::with_capacity(n);
    let mut failed = Vec::new();
    for t in tasks {
        let (r, took) = t.await.map_err(|e| e.to_string())?;
        latencies.push(took);
        match r {
            Ok(id) => ids.push(id),
            Err(s) => failed.push(format!("{:?}: {}", s.code(), s.message())),
        }
    }
    let call = started.elapsed();
    latencies.sort();
    phases.push(Phase {
        call,
        wait: Duration::ZERO,
        latencies,
        seen: proxy::since(&before, &relay.take()),
    });
    if failed.is_empty() {
        Ok(ids)
    } else {
        Err(format!(
            "{}: {} of {n} failed: {}",
            PHASES[phases.len() - 1],
            failed.len(),
            failed.join("; ")
        ))
    }
}

async fn connect(socket: &Path) -> Result<Channel, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::net::UnixStream::connect(socket).await.is_err() {
        if Instant::now() > deadline {
            return Err("the driver did not bind its socket".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let path = socket.to_path_buf();
    Endpoint::try_from("http://csi.invalid")
        .map_err(|e| e.to_string())?
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move {
                let s = tokio::net::UnixStream::connect(path).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(s))
            }
        }))
        .await
        .map_err(|e| e.to_string())
}

/// One volume created, attached to the storm's server, detached and deleted by the bench
/// itself (not through a driver, not counted) before a driver's storm. The first attach after
/// the cloud sat idle pays the cloud's own cold path: nova-api, nova-conductor, nova-compute
/// and cinder-api each fetch a fresh service token from Keystone (tokens expire) and reconnect,
/// 12 s on the 2026-12-01 11:33 run (docs/PERFORMANCE.md). Whichever driver ran first was
/// charged for it; warming up before each driver charges neither. Returns how long it took.
pub fn warm_up(cloud: &Cloud) -> Duration {
    let t = std::time::Instant::now();
    let name = format!(
        "storm-warmup-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let body = serde_json::json!({"volume": {"size": 1, "name": name}});
    let v = cloud
        .api_body(false, "block-storage", "POST", "/volumes", Some(&body))
        .expect("warm-up volume");
    let id = v["volume"]["id"].as_str().unwrap_or_default().to_string();
    let id = id.as_str();
    let status = |want: &'static str| move || cloud.volume_status(id) == want;
    cloud.wait_for("warm-up volume available", status("available"));
    let server = cloud.node(1, "ID");
    let attach = serde_json::json!({"volumeAttachment": {"volumeId": id}});
    let path = format!("/servers/{server}/os-volume_attachments");
    cloud.api_body(false, "compute", "POST", &path, Some(&attach));
    cloud.wait_for("warm-up volume in-use", status("in-use"));
    cloud.api(false, "compute", "DELETE", &format!("{path}/{id}"));
    cloud.wait_for("warm-up volume detached", status("available"));
    cloud.api(false, "block-storage", "DELETE", &format!("/volumes/{id}"));
    cloud.wait_for("warm-up volume deleted", status("deleted"));
    t.elapsed()
}

/// Volumes of run `run` in the cloud (any project, as admin), as Cinder shows them; `None`
/// when Cinder did not answer the list.
pub fn remaining(cloud: &Cloud, run: &str) -> Option<Vec<serde_json::Value>> {
    let list = cloud.api(
        true,
        "block-storage",
        "GET",
        "/volumes/detail?all_tenants=1",
    )?;
    let prefix = format!("storm-{run}-");
    let volumes = list["volumes"].as_array().cloned().unwrap_or_default();
    Some(
        volumes
            .into_iter()
            .filter(|v| v["name"].as_str().unwrap_or_default().starts_with(&prefix))
            .collect(),
    )
}

/// Volumes of this run still in the cloud after a failure: detach and delete as admin.
pub fn leftovers(cloud: &Cloud, run: &str) {
    for v in remaining(cloud, run).unwrap_or_default() {
        let id = v["id"].as_str().unwrap_or_default().to_string();
        for a in v["attachments"].as_array().cloned().unwrap_or_default() {
            let server = a["server_id"].as_str().unwrap_or_default();
            cloud.api(
                true,
                "compute",
                "DELETE",
                &format!("/servers/{server}/os-volume_attachments/{id}"),
            );
        }
        cloud.wait_for(&format!("volume {id} detached"), || {
            !matches!(
                cloud.volume_status(&id).as_str(),
                "in-use" | "detaching" | "attaching" | "reserved" | "creating"
            )
        });
        cloud.api(true, "block-storage", "DELETE", &format!("/volumes/{id}"));
    }
}
